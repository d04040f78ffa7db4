package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/report"
	"github.com/lockstepsim/lockstep/scenario"
)

// interruptYAML is a 32-host, 2-plane Clos; %s is the rest of the scenario.
const interruptYAML = `
name: intr
topology: {clos: {tiers: 2, planes: 2, radix: 16, hosts: 32, host_link: 100G}}
%s`

// interruptCases are runs of every kind long enough that an interrupt requested before they
// start is honoured midway (at the first check, interruptEvery events in); partial says the
// runner can report only the common figures (a workload, or the fault baseline).
var interruptCases = []struct {
	name, rest string
	partial    bool
}{
	{"raw", "traffic: [{pattern: permutation, load: 0.9}]\nrun: {duration: 2ms}", false},
	{"mrc", "transport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 16MiB}]", false},
	{"mrc with trace", "transport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 16MiB}]\nrun: {trace: true}", false},
	{"collective mrc with trace", "transport: {kind: mrc}\nworkload: {collectives: [{op: all_reduce, algorithm: ring, bytes: 64MiB}]}\nrun: {trace: true}", true},
	{"roce", "transport: {kind: roce}\ntraffic: [{pattern: permutation, bytes: 16MiB}]", false},
	{"mrc with faults (the twin is interrupted)", "transport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 16MiB}]\nfaults: [{at: 50us, link: h3.p1, action: down}]", true},
	{"mrc with faults, no twin", "transport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 16MiB}]\nfaults: [{at: 50us, link: h3.p1, action: down}]\nrun: {fault_baseline: none}", false},
	{"collective mrc", "transport: {kind: mrc}\nworkload: {collectives: [{op: all_reduce, algorithm: ring, bytes: 64MiB}]}", true},
	{"collective flow", "transport: {kind: mrc}\nworkload: {collectives: [{op: all_reduce, algorithm: ring, bytes: 1MiB, max_bytes: 64MiB, iterations: 3}]}\nrun: {engine: flow}", true},
	{"training flow", "transport: {kind: mrc}\nworkload: {training: {model: {name: tiny, layers: 4, hidden: 1024, heads: 8, kv_heads: 8, ffn: 4096, vocab: 32000, seq_len: 1024, global_batch: 16, micro_batch: 1}, gpu: {preset: h100}, plan: {tp: 8, pp: 2}, exact: true}}\nrun: {engine: flow, duration: 100ms}", true},
	{"training packet", "transport: {kind: mrc}\nworkload: {training: {model: {name: tiny, layers: 4, hidden: 1024, heads: 8, kv_heads: 8, ffn: 4096, vocab: 32000, seq_len: 1024, global_batch: 16, micro_batch: 1}, gpu: {preset: h100}, plan: {tp: 8, pp: 2}, exact: true}}\nrun: {engine: packet, duration: 100ms}", true},
}

// An interrupted run of every kind returns a Result, not an error: complete false, the reason,
// the simulated time reached (before run.duration), and files that write and make a report;
// the same interrupt point gives byte-identical summaries.
func TestInterruptedRuns(t *testing.T) {
	for _, tc := range interruptCases {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scenario.Parse([]byte(fmt.Sprintf(interruptYAML, tc.rest)))
			if err != nil {
				t.Fatal(err)
			}
			run := func() (*Result, []byte) {
				intr := &Interrupt{}
				intr.Request("SIGINT")
				intr.Request("SIGTERM") // the first reason wins
				res, err := RunWith(sc, Options{Interrupt: intr})
				if err != nil {
					t.Fatalf("interrupted run: %v", err)
				}
				js, _ := json.MarshalIndent(res.Summary, "", "  ")
				return res, js
			}
			res, js := run()
			if _, js2 := run(); !bytes.Equal(js, js2) {
				t.Errorf("two runs interrupted at the same event gave different summaries")
			}
			s := &res.Summary
			if s.Complete || s.Interrupted != "SIGINT" || s.InterruptedNote == "" {
				t.Fatalf("complete %v, interrupted %q, note %q; want false, SIGINT, a note", s.Complete, s.Interrupted, s.InterruptedNote)
			}
			if at := s.InterruptedAtUs; at == nil || *at <= 0 || *at >= sc.Run.Duration.Micros() {
				t.Errorf("interrupted_at_us %v; want in (0, run.duration %v)", at, sc.Run.Duration)
			}
			if s.Failed {
				t.Errorf("an interrupted run is not failed: %s", s.FailureReason)
			}
			if res.partial != tc.partial {
				t.Errorf("partial %v; want %v", res.partial, tc.partial)
			}
			names := map[string]bool{}
			for _, f := range res.Files(sc) {
				names[f.Name] = true
			}
			if want := !tc.partial; names["flows.csv"] != want || names["links.csv"] != want {
				t.Errorf("files %v; want flows.csv and links.csv: %v", names, want)
			}
			sc.Run.Out = t.TempDir()
			if err := WriteResults(sc, append(js, '\n'), res); err != nil {
				t.Fatalf("WriteResults: %v", err)
			}
			for _, f := range []string{"summary.json", "scenario.yaml", "report.html"} {
				if _, err := os.Stat(filepath.Join(sc.Run.Out, f)); err != nil {
					t.Errorf("%s not written: %v", f, err)
				}
			}
		})
	}
}

// A run without an interrupt request is complete, and an Interrupt that is never requested
// changes nothing.
func TestUninterruptedRunIsComplete(t *testing.T) {
	sc, err := scenario.Parse([]byte(fmt.Sprintf(interruptYAML, "transport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 16MiB}]")))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	b, err := RunWith(sc, Options{Interrupt: &Interrupt{}, ProgressEvents: 1000, Progress: func(Progress) {}})
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a.Summary)
	jb, _ := json.Marshal(b.Summary)
	if !bytes.Equal(ja, jb) {
		t.Errorf("an unrequested Interrupt and a progress callback changed the summary")
	}
	if !a.Summary.Complete || a.Summary.Interrupted != "" {
		t.Errorf("complete %v, interrupted %q; want true, none", a.Summary.Complete, a.Summary.Interrupted)
	}
}

// Progress reports carry a target to measure the simulated time against and, for transfers,
// the payload placed of the payload posted, rising to the whole of it.
func TestProgressTargets(t *testing.T) {
	for _, tc := range []struct {
		name, rest, what string
		ops              bool
	}{
		{"raw", "traffic: [{pattern: permutation, load: 0.9}]\nrun: {duration: 2ms}", "run.duration", false},
		{"mrc", "transport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 16MiB}]", "ideal completion", true},
		{"roce", "transport: {kind: roce}\ntraffic: [{pattern: permutation, bytes: 16MiB}]", "ideal completion", true},
		{"mrc bounded by run.duration", "transport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 16MiB}]\nrun: {duration: 100us}", "run.duration", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scenario.Parse([]byte(fmt.Sprintf(interruptYAML, tc.rest)))
			if err != nil {
				t.Fatal(err)
			}
			var ps []Progress
			if _, err := RunWith(sc, Options{ProgressEvents: 1 << 14, Progress: func(p Progress) { ps = append(ps, p) }}); err != nil {
				t.Fatal(err)
			}
			if len(ps) < 2 {
				t.Fatalf("%d progress reports", len(ps))
			}
			for i, p := range ps {
				if p.Target <= 0 || p.Target > sc.Run.Duration || p.TargetWhat != tc.what {
					t.Fatalf("report %d: target %v (%q); want in (0, %v], %q", i, p.Target, p.TargetWhat, sc.Run.Duration, tc.what)
				}
				if (p.Total > 0) != tc.ops || p.Done > p.Total || (i > 0 && p.Done < ps[i-1].Done) {
					t.Fatalf("report %d: done %v of %v after %v; want operations %v, rising", i, p.Done, p.Total, ps[max(i-1, 0)].Done, tc.ops)
				}
			}
		})
	}
}

// failAfter writes n bytes of x, then fails: a disk that fills up halfway.
type failAfter struct{ n int }

func (f failAfter) write(w io.Writer) error {
	if _, err := w.Write(bytes.Repeat([]byte("x"), f.n)); err != nil {
		return err
	}
	return errors.New("no space left on device")
}

// A write that fails halfway leaves no file of this run under its final name, no temporary
// file, and no summary.json beside missing data, whether the folder is new or held a
// previous run (whose files are gone: the folder describes no run rather than a wrong one).
func TestWriteResultsFailingWriter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		previous bool
		failAt   int // index of the failing file
		n        int // bytes it writes first
	}{
		{"new folder, first file", false, 0, 10},
		{"new folder, second file, large", false, 1, 1 << 20},
		{"previous run, second file", true, 1, 100},
		{"previous run, third file, empty", true, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.previous {
				for _, f := range []string{"summary.json", "flows.csv", "links.csv", "report.html"} {
					os.WriteFile(filepath.Join(dir, f), []byte("old"), 0o644)
				}
			}
			ok := func(w io.Writer) error { _, err := io.WriteString(w, "a,b\n1,2\n"); return err }
			files := []File{{"flows.csv", ok}, {"links.csv", ok}, {"faults.csv", ok}}
			files[tc.failAt].Write = failAfter{tc.n}.write
			sc := &scenario.Scenario{Name: "w"}
			sc.Run.Out = dir
			err := writeResults(sc, []byte("{}\n"), files)
			if err == nil || !strings.Contains(err.Error(), files[tc.failAt].Name) || !strings.Contains(err.Error(), "no space") {
				t.Fatalf("error %v; want one naming %s and the cause", err, files[tc.failAt].Name)
			}
			left, _ := os.ReadDir(dir)
			var names []string
			for _, e := range left {
				names = append(names, e.Name())
			}
			sort.Strings(names)
			if len(names) != 0 {
				t.Errorf("folder holds %v after the failed write; want nothing", names)
			}
		})
	}
}

// WriteFileAtomic replaces a file whole or not at all: a failing writer leaves the previous
// content and no temporary file.
func TestWriteFileAtomicKeepsPrevious(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "links.csv")
	os.WriteFile(path, []byte("previous"), 0o644)
	if err := report.WriteFileAtomic(path, failAfter{4096}.write); err == nil {
		t.Fatal("no error from a failing writer")
	}
	if b, _ := os.ReadFile(path); string(b) != "previous" {
		t.Errorf("file holds %q; want the previous content", b)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, report.TempPrefix+"*")); len(tmps) > 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
	if err := report.WriteFileAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("file holds %q; want new", b)
	}
}

// TestProgressWorkloads: a collective sweep reports the launches done of its launches, a
// training run the simulated steps done of its simulated steps, rising to the total.
func TestProgressWorkloads(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, unit string
		total            float64
	}{
		{"collectives", `topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 8, host_link: 100G, hop_latency: 500ns}}
transport: {kind: mrc}
workload: {collectives: [{op: all_reduce, ranks: 8, bytes: 64KiB, max_bytes: 1MiB, iterations: 2}]}`, "of the collective launches done", 10},
		{"training", `topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 400G, hop_latency: 500ns}}
transport: {kind: mrc}
workload: {training: {model: {name: tiny, layers: 4, hidden: 512, heads: 8, ffn: 2048, vocab: 8192, seq_len: 256, global_batch: 16, micro_batch: 1}, gpu: {preset: h100}, plan: {tp: 1, pp: 2}, sim_steps: 3, steps: 3}}
run: {engine: packet}`, "of the simulated steps done", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := scenario.Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			var ps []Progress
			if _, err := RunWith(sc, Options{ProgressEvents: 1 << 10, Progress: func(p Progress) { ps = append(ps, p) }}); err != nil {
				t.Fatal(err)
			}
			if len(ps) < 2 {
				t.Fatalf("%d progress reports", len(ps))
			}
			for i, p := range ps {
				if p.Unit != tc.unit || p.Total != tc.total || p.Done > p.Total || (i > 0 && p.Done < ps[i-1].Done) {
					t.Fatalf("report %d: %v %q of %v; want %q of %v, rising", i, p.Done, p.Unit, p.Total, tc.unit, tc.total)
				}
			}
		})
	}
}
