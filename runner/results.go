package runner

import (
	"errors"
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
	"faults.csv", "collectives.csv", "power.csv", "steps.csv", "phases.csv", "chakra_nodes.csv", "topology.json", "trace.json", "report.html"}

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
// (training), the transport's own files (Endpoint.Files: MRC's ev_states.csv), topology.json
// (every run: WriteTopologyJSON), and trace.json when run.trace is on. docs/outputs.md
// documents every column.
//
// A run interrupted where its own figures cannot be gathered (a collective or training
// workload, or the fault baseline, stopped midway) lists none: its folder holds summary.json
// and scenario.yaml (and report.html). An interrupted traffic run lists what it gathered up
// to then.
func (res *Result) Files(sc *scenario.Scenario) []File {
	if res.partial {
		return nil
	}
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
	if res.Chakra != nil {
		files = append(files, File{"chakra_nodes.csv", res.Chakra.WriteNodesCSV})
	}
	if res.Endpoint != nil {
		for _, f := range res.Endpoint.Files() {
			files = append(files, File{f.Name, f.Write})
		}
	}
	files = append(files, File{"topology.json", func(w io.Writer) error { return WriteTopologyJSON(w, sc) }})
	if sc.Run.Trace {
		if t := BuildTrace(res); t != nil {
			files = append(files, File{"trace.json", func(w io.Writer) error { _, err := t.WriteTo(w); return err }})
		}
	}
	return files
}

// WriteResults fills the results folder sc.Run.Out: the resolved scenario.yaml, res.Files,
// summary.json (summary, already marshalled) and last report.html, which reads them. Files a
// previous run left there (and temporary files of a write that was killed) are removed
// first. Each file is written under a temporary name and renamed into place when whole
// (report.WriteFileAtomic), and summary.json only after every data file, so a folder never
// holds a truncated file under its final name nor a summary.json beside missing data. On an
// error (the file system's: a full disk; an output's writer; the report's) the files this
// call wrote are removed again, so the folder holds no part of this run. Errors name the file.
func WriteResults(sc *scenario.Scenario, summary []byte, res *Result) error {
	return writeResults(sc, summary, res.Files(sc))
}

// writeResults is WriteResults with the data files given.
func writeResults(sc *scenario.Scenario, summary []byte, files []File) (err error) {
	dir := sc.Run.Out
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results folder: %w", err)
	}
	if err := clearResults(dir); err != nil {
		return err
	}
	var written []string
	defer func() {
		var re *ReportError
		if err != nil && !errors.As(err, &re) {
			for _, f := range written {
				os.Remove(filepath.Join(dir, f))
			}
		}
	}()
	put := func(name string, write func(io.Writer) error) error {
		if err := report.WriteFileAtomic(filepath.Join(dir, name), write); err != nil {
			return err
		}
		written = append(written, name)
		return nil
	}
	bytesOf := func(b []byte) func(io.Writer) error {
		return func(w io.Writer) error { _, err := w.Write(b); return err }
	}
	y, err := scenario.Encode(sc)
	if err != nil {
		return fmt.Errorf("scenario.yaml: %w", err)
	}
	if err := put("scenario.yaml", bytesOf(y)); err != nil {
		return err
	}
	for _, f := range files {
		if err := put(f.Name, f.Write); err != nil {
			return err
		}
	}
	if err := put("summary.json", bytesOf(summary)); err != nil {
		return err
	}
	// The report reads the files above; written last so it shows all of them. A report that
	// cannot be drawn keeps the data: the run's files stand, the caller warns.
	if err := report.Write(dir); err != nil {
		return &ReportError{Err: fmt.Errorf("report.html: %w", err)}
	}
	return nil
}

// ReportError is WriteResults' error when every data file was written but report.html could
// not be drawn from them: the results folder holds the run's files, without the report.
type ReportError struct{ Err error }

// Error returns the wrapped error's message.
func (e *ReportError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *ReportError) Unwrap() error { return e.Err }

// clearResults removes from dir every file a results folder may hold (ResultFiles) and the
// temporary files a killed write left (report.TempPrefix); nothing else.
func clearResults(dir string) error {
	for _, f := range ResultFiles() {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("results folder: cannot replace the previous run's %s: %w", f, err)
		}
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, report.TempPrefix+"*"))
	for _, t := range tmps {
		if err := os.Remove(t); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("results folder: cannot remove the left-over temporary file %s: %w", t, err)
		}
	}
	return nil
}
