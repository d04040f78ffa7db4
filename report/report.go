package report

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// The files of a results folder the report reads (docs/outputs.md; a training run's power.csv
// and steps.csv are in training.go), and the one it writes.
const (
	fileSummary     = "summary.json"
	fileFlows       = "flows.csv"
	fileLinks       = "links.csv"
	fileEV          = "ev_states.csv"
	filePauses      = "pauses.csv"
	fileFaults      = "faults.csv"
	fileCollectives = "collectives.csv"

	// ReportFile is the name Write gives the page inside the results folder.
	ReportFile = "report.html"
)

// runData is one results folder as the report sees it; a nil field is a file the run did not
// write.
type runData struct {
	name    string
	dir     string // the results folder, as given
	summary *summaryData
	flows   *flowsData
	links   *linksData
	pauses  *pausesData
	credits *creditsData // InfiniBand's credits.csv (credits.go)
	ev      *evData
	faults  *faultsData
	colls   *rawTable
	sweep   *collData // collectives.csv in full, for the busbw plot
	power   *powerData
	steps   *stepsData
	phases  *phasesData
	files   []fileStatus
}

// fileStatus says whether a file of the folder was read, for the page's list of sources.
type fileStatus struct {
	Name  string
	Found bool
	Size  int64 // bytes
}

// readIn opens dir/name and parses it with read. found is false when the file does not exist;
// any other failure is an error naming the file.
func readIn[T any](dir, name string, read func(string, io.Reader) (T, error)) (v T, st fileStatus, err error) {
	st.Name = name
	f, err := os.Open(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return v, st, nil
	}
	if err != nil {
		return v, st, &FileError{File: name, Err: err}
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil {
		st.Size = fi.Size()
	}
	st.Found = true
	v, err = read(name, f)
	return v, st, err
}

// loadRun reads every file of the results folder dir that the report uses. name labels the run
// (compare pages); it defaults to the scenario name in summary.json, then to the folder's name.
func loadRun(dir, name string) (*runData, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("report: results folder: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("report: results folder %s is not a directory", dir)
	}
	r := &runData{name: name, dir: dir}
	var st fileStatus
	readColls := func(file string, rd io.Reader) (*rawTable, error) { return readRawTable(file, rd, maxTableRows) }
	for _, read := range []func() error{
		func() (err error) { r.summary, st, err = readIn(dir, fileSummary, readSummary); return err },
		func() (err error) { r.flows, st, err = readIn(dir, fileFlows, readFlows); return err },
		func() (err error) { r.links, st, err = readIn(dir, fileLinks, readLinks); return err },
		func() (err error) { r.pauses, st, err = readIn(dir, filePauses, readPauses); return err },
		func() (err error) { r.credits, st, err = readIn(dir, fileCredits, readCredits); return err },
		func() (err error) { r.ev, st, err = readIn(dir, fileEV, readEVStates); return err },
		func() (err error) { r.faults, st, err = readIn(dir, fileFaults, readFaults); return err },
		func() (err error) {
			if r.colls, st, err = readIn(dir, fileCollectives, readColls); err == nil && st.Found {
				r.sweep, _, err = readIn(dir, fileCollectives, readCollectives)
			}
			return err
		},
		func() (err error) { r.power, st, err = readIn(dir, filePower, readPower); return err },
		func() (err error) { r.steps, st, err = readIn(dir, fileSteps, readSteps); return err },
		func() (err error) { r.phases, st, err = readIn(dir, filePhases, readPhases); return err },
	} {
		if err := read(); err != nil {
			return nil, fmt.Errorf("report: %s: %w", dir, err)
		}
		r.files = append(r.files, st)
	}
	if r.name == "" {
		if f, ok := r.summary.get("scenario"); ok && f.value != "" {
			r.name = f.value
		} else {
			r.name = filepath.Base(filepath.Clean(dir))
		}
	}
	return r, nil
}

// tMax is the end of the run's time axis (us): the latest time any of its files mentions.
func (r *runData) tMax() float64 {
	t, _ := r.summary.number("end_us")
	if r.links != nil && len(r.links.intervals) > 0 {
		t = max(t, r.links.intervals[len(r.links.intervals)-1].end)
	}
	if r.ev != nil && len(r.ev.times) > 0 {
		t = max(t, r.ev.times[len(r.ev.times)-1])
	}
	if r.pauses != nil && len(r.pauses.times) > 0 {
		t = max(t, r.pauses.times[len(r.pauses.times)-1]+minGap(r.pauses.times, 0))
	}
	for _, s := range r.faultSpans() {
		t = max(t, s.at)
		if !math.IsNaN(s.end) {
			t = max(t, s.end)
		}
	}
	return t
}

// interval is the length of links.csv's intervals (us), which pauses.csv shares; 0 without
// links.csv.
func (r *runData) interval() float64 {
	if r.links == nil {
		return 0
	}
	return r.links.step
}

// isTraining reports whether the run is a training workload's: summary.json has a training
// block, or the folder has power.csv or steps.csv.
func (r *runData) isTraining() bool {
	return r.summary.isTraining() || r.power != nil || r.steps != nil
}

// faultSpans is the run's failures, or none.
func (r *runData) faultSpans() []faultSpan {
	if r.faults == nil {
		return nil
	}
	return r.faults.spans
}

// Write reads the results folder dir written by `lockstep run` and writes dir/report.html: one
// self-contained page (inline CSS and SVG plots, no script, nothing fetched) with the headline
// figures of summary.json, busbw and algbw against message size (collectives.csv), the FCT
// CDF (flows.csv; raw traffic: the CDF of per-flow goodput), utilisation per tier and plane as
// small multiples with the hottest links, and a queue-depth heatmap over links x time
// (links.csv, its silent intervals as zero), PFC pauses (pauses.csv), MRC EV states
// (ev_states.csv), a fault timeline whose spans also shade every time plot (faults.csv), and
// the tables of faults.csv and collectives.csv. The time plots end at the traffic's end
// (summary.json duration_us), not the drain's. A training run (summary.json's training block) gets its training figures
// instead of the packet counters it did not use, the cluster's power over time (power.csv) with
// the steps marked and each step's time by category (steps.csv); the network's plots follow
// when it sent packets.
//
// Every file may be absent: its plot is then replaced by a note "no data: <file> not written
// by this run (why)". A file that is present but malformed is an error (a *FileError in the
// chain, naming the file, line and column); so is a folder that cannot be read or a page that
// cannot be written. The same folder gives a byte-identical page. Large inputs are reduced
// (curves downsampled, the heatmap limited to each tier's row and its deepest ports), so the
// page stays small (under 100 KB for 4,096 ports x 130 intervals of links.csv).
func Write(dir string) error {
	r, err := loadRun(dir, "")
	if err != nil {
		return err
	}
	pg, err := runPage(r)
	if err != nil {
		return fmt.Errorf("report: %s: %w", dir, err)
	}
	return writePage(filepath.Join(dir, ReportFile), pg)
}

// writePage renders pg into the file out.
func writePage(out string, pg *page) error {
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, pg); err != nil {
		return fmt.Errorf("report: rendering %s: %w", out, err)
	}
	if err := WriteFileAtomic(out, func(w io.Writer) error { _, err := w.Write(buf.Bytes()); return err }); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// TempPrefix starts the name of every temporary file WriteFileAtomic creates (".lockstep-tmp-"),
// so a tool clearing a results folder can recognise the ones a killed process left.
const TempPrefix = ".lockstep-tmp-"

// WriteFileAtomic writes the file path (mode 0644) with write: into a temporary file of the same
// folder (TempPrefix + the name + a random suffix), synced and then renamed over path, so path
// is either the previous file or the whole new one, never a truncated one. On any error
// (write's, the file system's: a full disk) the temporary file is removed and path is left
// as it was. Errors name the file.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, TempPrefix+name+"-*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := write(bw); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// fmtNum formats v rounded to three decimals, without trailing zeros ("186.879", "12", "0.5").
func fmtNum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}
