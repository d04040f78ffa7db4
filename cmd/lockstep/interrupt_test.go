package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
)

// buildCLI builds the lockstep binary into a temporary folder, for tests that send it signals.
func buildCLI(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to build the binary with")
	}
	bin := filepath.Join(t.TempDir(), "lockstep")
	if out, err := exec.Command(goBin, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// listDir returns the names in dir, sorted.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// The binary on perm-8192 (8,192 hosts, seconds to minutes of simulation), signalled once the
// run has started (its results folder exists, created just before the simulation, after the
// signal handler): it exits 130 (SIGINT) or 143 (SIGTERM), says where the results are, and
// leaves summary.json with "complete": false and the reason, flows.csv with every transfer,
// links.csv, scenario.yaml and report.html, and no temporary file. A rerun of another
// scenario into the same folder leaves exactly that scenario's files: nothing stale. Two
// signals exit at once with the same code.
func TestInterruptBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts perm-8192")
	}
	bin := buildCLI(t)
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		twice bool
		code  int
	}{
		{"SIGINT", syscall.SIGINT, false, 130},
		{"SIGTERM", syscall.SIGTERM, false, 143},
		{"SIGINT twice", syscall.SIGINT, true, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "res")
			cmd := exec.Command(bin, "run", "perm-8192", "--out", dir)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			// Wait for the results folder (not a timed assertion: the deadline only keeps a
			// broken binary from hanging the test).
			deadline := time.Now().Add(2 * time.Minute)
			for {
				if _, err := os.Stat(dir); err == nil {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("no results folder after 2 minutes; stderr %q", stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			// Let the simulation get going (what it reaches is logged, not asserted: the
			// interrupt is honoured wherever it lands, even before the first event).
			time.Sleep(2 * time.Second)
			cmd.Process.Signal(tc.sig)
			if tc.twice {
				cmd.Process.Signal(tc.sig)
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(5 * time.Minute):
				cmd.Process.Kill()
				t.Fatalf("still running 5 minutes after %v; stderr %q", tc.sig, stderr.String())
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Fatalf("exit %v; want %d (stderr %q)", err, tc.code, stderr.String())
			}
			if tc.twice {
				// Exited at once: whatever it wrote is whole (summary.json, if there, parses).
				if b, err := os.ReadFile(filepath.Join(dir, "summary.json")); err == nil && !json.Valid(b) {
					t.Errorf("summary.json is truncated: %d bytes", len(b))
				}
				return
			}
			if !strings.Contains(stderr.String(), "interrupted ("+tc.name+")") || !strings.Contains(stderr.String(), dir) {
				t.Errorf("stderr does not say the run was interrupted and where the results are: %q", stderr.String())
			}
			var s runner.Summary
			if err := json.Unmarshal(readFile(t, filepath.Join(dir, "summary.json")), &s); err != nil {
				t.Fatal(err)
			}
			if s.Complete || s.Interrupted != tc.name || s.InterruptedAtUs == nil || *s.InterruptedAtUs < 0 {
				t.Errorf("summary.json: complete %v, interrupted %q at %v us; want false, %s, a time", s.Complete, s.Interrupted, s.InterruptedAtUs, tc.name)
			}
			t.Logf("%s at %v us of simulated time, %d events", tc.name, *s.InterruptedAtUs, s.Events)
			got := strings.Join(listDir(t, dir), " ")
			if want := "ev_states.csv flows.csv links.csv report.html scenario.yaml summary.json topology.json"; got != want {
				t.Errorf("files %q; want %q", got, want)
			}
			if rows := bytes.Count(readFile(t, filepath.Join(dir, "flows.csv")), []byte("\n")); rows != s.Flows+1 {
				t.Errorf("flows.csv has %d lines; want a header and %d transfers", rows, s.Flows)
			}
			// A rerun into the same folder: exactly a fresh run's files.
			small := filepath.Join("testdata", "permutation-ecmp.yaml")
			mustRun(t, "run", small, "--out", dir)
			fresh, _ := runTo(t, small)
			if a, b := listDir(t, dir), listDir(t, fresh); strings.Join(a, " ") != strings.Join(b, " ") {
				t.Errorf("rerun into the interrupted folder holds %v; a fresh run %v", a, b)
			}
			if !bytes.Equal(readFile(t, filepath.Join(dir, "summary.json")), readFile(t, filepath.Join(fresh, "summary.json"))) {
				t.Errorf("rerun's summary.json differs from a fresh run's")
			}
		})
	}
}

// A variants run into a folder a previous variants run used removes the previous run's
// variant folders it does not write (and its compare.html is rewritten), and keeps anything
// that is not a results folder or holds other files.
func TestVariantsRemoveStaleFolders(t *testing.T) {
	file := filepath.Join("testdata", "variants", "perm-transports.yaml")
	dir := t.TempDir()
	mustRun(t, "run", file, "--out", dir, "--quiet")
	// A previous run's variant with other variants, a folder of the user's, a results folder
	// with a file of the user's in it.
	os.Rename(filepath.Join(dir, "perm-roce"), filepath.Join(dir, "perm-old"))
	os.MkdirAll(filepath.Join(dir, "notes"), 0o755)
	os.WriteFile(filepath.Join(dir, "notes", "todo.txt"), []byte("mine"), 0o644)
	os.MkdirAll(filepath.Join(dir, "mixed"), 0o755)
	os.WriteFile(filepath.Join(dir, "mixed", "summary.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(dir, "mixed", "mine.txt"), []byte("mine"), 0o644)
	os.WriteFile(filepath.Join(dir, "readme.txt"), []byte("mine"), 0o644)
	code, _, stderr := cli(t, "run", file, "--out", dir, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got, want := strings.Join(listDir(t, dir), " "), "compare.html mixed notes perm-mrc perm-roce readme.txt sweep.csv sweep.html"; got != want {
		t.Errorf("folder holds %q; want %q", got, want)
	}
	if !strings.Contains(stderr, "removed "+filepath.Join(dir, "perm-old")) || !strings.Contains(stderr, "mixed looks like a previous run's results folder but also holds mine.txt") {
		t.Errorf("stderr does not say what was removed and what kept: %q", stderr)
	}
	if got := strings.Join(listDir(t, filepath.Join(dir, "mixed")), " "); got != "mine.txt summary.json" {
		t.Errorf("mixed holds %q; want it untouched", got)
	}
	// compare into the same folder: its folders are named after the scenarios.
	a := filepath.Join("testdata", "permutation-ecmp.yaml")
	b := filepath.Join("testdata", "permutation-spread.yaml")
	if code, _, stderr := cli(t, "compare", a, b, "--out", dir, "--quiet"); code != 0 {
		t.Fatalf("compare: exit %d: %s", code, stderr)
	}
	got := strings.Join(listDir(t, dir), " ")
	if strings.Contains(got, "perm-mrc") || strings.Contains(got, "perm-roce") || !strings.Contains(got, "notes") {
		t.Errorf("after compare the folder holds %q; want the variant folders gone, notes kept", got)
	}
}

// makeDir's undo removes the folders it created, deepest first, while they are empty, and
// nothing that existed before.
func TestMakeDirUndo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rel    string // the results folder, under a temporary root
		fill   string // a file put inside before undo ("" none)
		remain string // what is left under the root after undo
	}{
		{"new, one level", "a", "", ""},
		{"new, three levels", "a/b/c", "", ""},
		{"new folder with a file kept", "a/b", "a/b/x", "a"},
		{"file in a parent", "a/b/c", "a/y", "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			undo, err := makeDir(filepath.Join(root, tc.rel))
			if err != nil {
				t.Fatal(err)
			}
			if tc.fill != "" {
				os.WriteFile(filepath.Join(root, tc.fill), nil, 0o644)
			}
			undo()
			if got := strings.Join(listDir(t, root), " "); got != tc.remain {
				t.Errorf("root holds %q after undo; want %q", got, tc.remain)
			}
			if tmps, _ := filepath.Glob(filepath.Join(root, tc.rel, ".lockstep-*")); len(tmps) > 0 {
				t.Errorf("write check left %v", tmps)
			}
		})
	}
}

// The progress line gives the simulated time as a percentage of the target, the work done,
// an ETA from the rate so far, and one clock.
func TestProgressLine(t *testing.T) {
	us := sim.Microsecond
	for _, tc := range []struct {
		name string
		p    runner.Progress
		want []string
		not  []string
	}{
		{"transfers", runner.Progress{Phase: "run", Now: 40 * us, Target: 100 * us, TargetWhat: "ideal completion", Done: 25, Total: 100, Unit: "of the payload placed", Events: 4e6, Wall: 2 * time.Second},
			[]string{"run: simulated 40.0us", "40% of the ideal completion (100.0us)", "25% of the payload placed", "ETA 6s", "3s elapsed", "2.00M events/s"}, []string{"wall", "at most"}},
		{"raw", runner.Progress{Phase: "run", Now: 500 * us, Target: 1000 * us, TargetWhat: "run.duration", Events: 1e6, Wall: 10 * time.Second},
			[]string{"50% of run.duration (1.000ms)", "ETA 10s"}, nil},
		{"past the ideal, no operations", runner.Progress{Phase: "baseline", Now: 300 * us, Target: 100 * us, TargetWhat: "ideal completion", Events: 1e6, Wall: time.Second},
			[]string{"baseline (the run without its faults)", "300% of the ideal completion", "no ETA"}, []string{"ETA 0"}},
		{"no target", runner.Progress{Phase: "run", Now: 3 * sim.Millisecond, Events: 1e6, Wall: time.Second},
			[]string{"simulated 3.000ms;"}, []string{"%", "ETA"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := progressLine(tc.p, 3*time.Second)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("%q contains %q", got, n)
				}
			}
		})
	}
}

// The one-line description names the hosts, the topology kind, the transport and the
// traffic or workload.
func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		preset string
		want   []string
	}{
		{"perm-8192", []string{"scenario perm-8192:", "8192 hosts on a clos (100Gbps host links)", "transport mrc", "traffic: permutation of 2000000B transfers"}},
		{"raw-ecmp", []string{"hosts on a clos of 4 planes", "transport raw", "traffic: permutation at load"}},
	} {
		sc, err := scenario.Preset(tc.preset)
		if err != nil {
			t.Fatal(err)
		}
		got := describe(sc)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.preset, got, w)
			}
		}
		if strings.Contains(got, "\n") {
			t.Errorf("%s: not one line: %q", tc.preset, got)
		}
	}
	for _, f := range []string{"coll-mrc.yaml", "train-llama8b.yaml"} {
		sc, err := scenario.Load(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if got := describe(sc); !strings.Contains(got, "workload: ") {
			t.Errorf("%s: %q does not name the workload", f, got)
		}
	}
}

// A variants run interrupted in its first variant stops there: exit 130, that variant's
// folder with complete: false, no later variant and no compare.html; and compare likewise.
func TestVariantsInterrupted(t *testing.T) {
	file := filepath.Join("testdata", "variants", "perm-transports.yaml")
	vs, err := loadVariantsArg(file)
	if err != nil || len(vs) != 2 {
		t.Fatalf("variants: %v, %d", err, len(vs))
	}
	dir := t.TempDir()
	intr := &runner.Interrupt{}
	intr.Request("SIGINT")
	var out, errb bytes.Buffer
	err = runVariants(&out, vs, dir, false, runOpts{quiet: true, stderr: &errb, intr: intr})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 130 || !strings.Contains(err.Error(), filepath.Join(dir, "perm-mrc")) {
		t.Fatalf("error %v; want exit 130 naming the interrupted variant's folder", err)
	}
	if got := strings.Join(listDir(t, dir), " "); got != "perm-mrc" {
		t.Errorf("folder holds %q; want only the interrupted variant", got)
	}
	var s runner.Summary
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "perm-mrc", "summary.json")), &s); err != nil || s.Complete || s.Interrupted != "SIGINT" {
		t.Errorf("summary: %v, complete %v, interrupted %q", err, s.Complete, s.Interrupted)
	}
	// A rerun without the signal: both variants (the interrupted one rerun, saying so),
	// compare.html, sweep.csv, nothing stale.
	if code, _, stderr := cli(t, "run", file, "--out", dir, "--quiet"); code != 0 || stderr != "lockstep: variant perm-mrc: rerunning: it was interrupted\n" {
		t.Errorf("rerun: exit %d, stderr %q", code, stderr)
	}
	if got := strings.Join(listDir(t, dir), " "); got != "compare.html perm-mrc perm-roce sweep.csv sweep.html" {
		t.Errorf("after the rerun the folder holds %q", got)
	}
	var s2 runner.Summary
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "perm-mrc", "summary.json")), &s2); err != nil || !s2.Complete || s2.Interrupted != "" {
		t.Errorf("rerun summary: %v, complete %v, interrupted %q", err, s2.Complete, s2.Interrupted)
	}
}
