package runner

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lockstepsim/lockstep/report"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// runFiles are the files of the run itself a results folder may hold (the transports add
// theirs: transport.Plugin.Outputs); WriteResults removes the ones a previous run left, so
// the folder and its report describe this run only.
var runFiles = []string{"summary.json", "scenario.yaml", "flows.csv", "links.csv", "pauses.csv",
	"faults.csv", "collectives.csv", "power.csv", "steps.csv", "phases.csv", "trace.json", "report.html"}

// ResultFiles returns every file name a results folder may hold: the run's own and each
// registered transport's (sorted by kind), for tools that clear or list a folder.
func ResultFiles() []string {
	out := append([]string(nil), runFiles...)
	for _, k := range transport.Kinds() {
		p, _ := transport.Lookup(k)
		out = append(out, p.Outputs...)
	}
	return out
}

// File is one file of a results folder: its name and how to write it.
type File struct {
	Name  string
	Write func(io.Writer) error
}

// Files lists the files res writes besides summary.json and scenario.yaml, in order:
// flows.csv, and where they apply collectives.csv (one nccl-tests row per size), faults.csv,
// links.csv (per port and interval), pauses.csv (PFC), power.csv, steps.csv and phases.csv
// (training),
// the transport's own files (Endpoint.Files: MRC's ev_states.csv), and trace.json when
// run.trace is on. docs/outputs.md documents every column.
func (res *Result) Files(sc *scenario.Scenario) []File {
	files := []File{{"flows.csv", func(w io.Writer) error { return WriteFlowsCSV(w, res) }}}
	if res.Collective != nil {
		files = append(files, File{"collectives.csv", func(w io.Writer) error { return collective.WriteCSV(w, res.Collective.Rows) }})
	}
	if len(res.Summary.Faults) > 0 {
		files = append(files, File{"faults.csv", func(w io.Writer) error { return WriteFaultsCSV(w, res.Summary.Faults) }})
	}
	if res.Links != nil {
		files = append(files, File{"links.csv", res.Links.WriteCSV})
		if res.Links.HasPauses() {
			files = append(files, File{"pauses.csv", res.Links.WritePausesCSV})
		}
	}
	if t := res.Training; t != nil {
		files = append(files, File{"power.csv", t.WritePowerCSV}, File{"steps.csv", t.WriteStepsCSV}, File{"phases.csv", t.WritePhasesCSV})
	}
	if res.Endpoint != nil {
		for _, f := range res.Endpoint.Files() {
			files = append(files, File{f.Name, f.Write})
		}
	}
	if sc.Run.Trace {
		if t := BuildTrace(res); t != nil {
			files = append(files, File{"trace.json", func(w io.Writer) error { _, err := t.WriteTo(w); return err }})
		}
	}
	return files
}

// WriteResults fills the results folder sc.Run.Out: summary.json (summary, already
// marshalled), the resolved scenario.yaml, res.Files, and last report.html, which reads
// them. Files a previous run left there are removed first. Errors: the file system's, an
// output's writer, or the report's.
func WriteResults(sc *scenario.Scenario, summary []byte, res *Result) error {
	dir := sc.Run.Out
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results folder: %w", err)
	}
	for _, f := range ResultFiles() {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("results folder: cannot replace the previous run's %s: %w", f, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), summary, 0o644); err != nil {
		return err
	}
	y, err := scenario.Encode(sc)
	if err != nil {
		return fmt.Errorf("scenario.yaml: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), y, 0o644); err != nil {
		return err
	}
	for _, f := range res.Files(sc) {
		var b bytes.Buffer
		if err := f.Write(&b); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	// The report reads the files above; written last so it shows all of them.
	if err := report.Write(dir); err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	return nil
}
