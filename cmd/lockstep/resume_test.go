package main

import (
	"bytes"
	"errors"
	"github.com/lockstepsim/lockstep/scenario"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstepsim/lockstep/runner"
)

// A sweep killed midway and run again runs only the variants that did not finish (the one
// interrupted, those never started) and ends with the same folders, sweep.csv and table as
// a sweep run once; a folder of another scenario (a changed value) is rerun, and --force
// reruns everything.
func TestSweepResume(t *testing.T) {
	file := filepath.Join(t.TempDir(), "res.yaml")
	body := `name: res
topology:
  clos: {tiers: 2, planes: 1, radix: 16, hosts: 64, host_link: 100G}
transport: {kind: mrc}
traffic:
  - {pattern: permutation, bytes: 8MiB}
variants:
  transport: [mrc, roce]
  run.seed: [1, 2]
`
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	vs, err := loadVariantsArg(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	intr := &runner.Interrupt{}
	var out, errb bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- runVariants(&out, vs, dir, false, runOpts{quiet: true, stderr: &errb, intr: intr, jobs: 1})
	}()
	// Interrupt while the second variant runs (its folder exists; the first is done).
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(filepath.Join(dir, "res-mrc-2")); err == nil {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	intr.Request("SIGINT")
	var ee *exitError
	if err := <-done; !errors.As(err, &ee) || ee.code != 130 {
		t.Fatalf("interrupted sweep: %v; want exit 130", err)
	}
	first := readFile(t, filepath.Join(dir, "res-mrc-1", "summary.json"))

	// The rerun: only the missing variants run.
	code, stdout, stderr := cli(t, "sweep", file, "--out", dir, "-j", "1", "--quiet")
	if code != 0 {
		t.Fatalf("rerun exit %d: %s", code, stderr)
	}
	for _, want := range []string{"resuming: 1 of 4 variants are complete", "running 3", "variant res-mrc-2: rerunning: it was interrupted"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("rerun stderr lacks %q:\n%s", want, stderr)
		}
	}
	if got := readFile(t, filepath.Join(dir, "res-mrc-1", "summary.json")); !bytes.Equal(got, first) {
		t.Errorf("the complete variant's summary.json was rewritten")
	}
	// The same as one uninterrupted sweep.
	fresh := filepath.Join(t.TempDir(), "out")
	_, freshOut, _ := cli(t, "sweep", file, "--out", fresh, "-j", "1", "--quiet")
	norm := func(s, d string) string { return strings.ReplaceAll(s, d, "OUT") }
	if norm(stdout, dir) != norm(freshOut, fresh) {
		t.Errorf("resumed sweep printed\n%s\nwant (one sweep)\n%s", stdout, freshOut)
	}
	for _, f := range []string{"sweep.csv", "res-mrc-1/summary.json", "res-mrc-2/summary.json", "res-roce-1/flows.csv", "res-roce-2/summary.json"} {
		if !bytes.Equal(readFile(t, filepath.Join(dir, f)), readFile(t, filepath.Join(fresh, f))) {
			t.Errorf("%s differs from one uninterrupted sweep's", f)
		}
	}

	// A third run does nothing; a changed value reruns only what it changes; --force all.
	_, _, stderr = cli(t, "sweep", file, "--out", dir, "-j", "2", "--quiet")
	if !strings.Contains(stderr, "resuming: 4 of 4") || !strings.Contains(stderr, "running 0") {
		t.Errorf("third run stderr:\n%s", stderr)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(body, "run.seed: [1, 2]", "run.seed: [1, 3]", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, stderr = cli(t, "sweep", file, "--out", dir, "-j", "2", "--quiet")
	if !strings.Contains(stderr, "resuming: 2 of 4") {
		t.Errorf("changed-seed run stderr:\n%s", stderr)
	}
	_, _, stderr = cli(t, "sweep", file, "--out", dir, "--force", "--quiet")
	if strings.Contains(stderr, "resuming") {
		t.Errorf("--force resumed:\n%s", stderr)
	}
	// --variant of a complete variant (an array task run twice) does not run it again.
	_, stdout, _ = cli(t, "sweep", file, "--out", dir, "--variant", "0", "--quiet")
	if !strings.Contains(stdout, "complete from an earlier run") {
		t.Errorf("--variant on a complete folder printed:\n%s", stdout)
	}
}

// The sweep's progress line counts done, failed, running and waiting variants and gives an
// ETA from the mean time per variant done.
func TestSweepLine(t *testing.T) {
	cases := []struct {
		st      poolStatus
		elapsed time.Duration
		want    string
	}{
		{poolStatus{total: 16}, 0, "sweep: 0 of 16 variants done, 0 running, 16 waiting; 0s elapsed"},
		{poolStatus{total: 16, running: 2, done: 4}, 20 * time.Second, "sweep: 4 of 16 variants done, 2 running, 10 waiting; 20s elapsed, ETA 1m0s"},
		{poolStatus{total: 4, running: 1, done: 3, failed: 1}, 9 * time.Second, "sweep: 3 of 4 variants done (1 failed), 1 running, 0 waiting; 9s elapsed, ETA 3s"},
		{poolStatus{total: 4, done: 4}, 9 * time.Second, "sweep: 4 of 4 variants done, 0 running, 0 waiting; 9s elapsed"},
	}
	for _, c := range cases {
		if got := sweepLine(c.st, c.elapsed); got != c.want {
			t.Errorf("sweepLine(%+v, %v) = %q, want %q", c.st, c.elapsed, got, c.want)
		}
	}
}

// The resume hash ignores run.out and run.max_memory (its default is a share of the
// machine's memory, so a Slurm task and --collect on another machine must agree) and sees
// every other change.
func TestScenarioHashIgnoresMachine(t *testing.T) {
	sc, err := scenario.Parse([]byte("name: h\ntopology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 8, host_link: 100G}}\ntransport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 64KiB}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := scenarioHash(sc)
	c := *sc
	c.Run.Out, c.Run.MaxMemory = "elsewhere", c.Run.MaxMemory/2
	if scenarioHash(&c) != h {
		t.Errorf("run.out or run.max_memory changed the hash")
	}
	c.Run.Seed++
	if scenarioHash(&c) == h {
		t.Errorf("run.seed did not change the hash")
	}
}
