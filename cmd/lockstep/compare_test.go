package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/runner"
)

// compare on results folders shows each run's state in the outcome column: an interrupted
// run ("complete": false) is "interrupted (SIGTERM)", not ok; a failed one "failed:" and
// its reason's first clause; and a summary.json that is not a run's (no scenario, no
// complete field) is refused, naming the file (exit 2).
func TestCompareFolderOutcomes(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	mustRun(t, "sweep", sweep4(t), "--out", "res", "-j", "1", "--quiet")
	edit := func(name, from, to string) {
		p := filepath.Join("res", name, "summary.json")
		b := readFile(t, p)
		if !bytes.Contains(b, []byte(from)) {
			t.Fatalf("%s lacks %q", p, from)
		}
		if err := os.WriteFile(p, bytes.Replace(b, []byte(from), []byte(to), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("sw-roce-256KiB", `"complete": true`, `"complete": false, "interrupted": "SIGTERM"`)
	edit("sw-roce-1MiB", `"complete": true`, `"complete": true, "failed": true, "failure_reason": "2 of 32 roce transfers not finished when the run stopped at 5.0 us (run.duration 5us); more"`)
	code, stdout, stderr := cli(t, "compare", "res/sw-mrc-256KiB", "res/sw-roce-256KiB", "res/sw-roce-1MiB", "--out", "cmp")
	if code != 1 {
		t.Errorf("exit %d (stderr %q); want 1 for the failed run", code, stderr)
	}
	var outcome string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "outcome") {
			outcome = strings.Join(strings.Fields(l), " ")
		}
	}
	if want := "outcome ok interrupted (SIGTERM) failed: 2 of 32 roce transfers not finished w..."; outcome != want {
		t.Errorf("outcome row %q; want %q\n%s", outcome, want, stdout)
	}
	for _, tc := range []struct{ js, why string }{
		{`{}`, "(no scenario)"},
		{`{"scenario": ""}`, "(no scenario)"},
		{`{"scenario": "x", "duration_us": 3}`, "(no complete field)"},
	} {
		bad := filepath.Join(dir, "bad")
		if err := os.MkdirAll(bad, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bad, "summary.json"), []byte(tc.js), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := cli(t, "compare", "res/sw-mrc-256KiB", bad, "--out", "cmp")
		if want := filepath.Join(bad, "summary.json") + " is not a lockstep summary " + tc.why; code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("summary.json %s: exit %d, stderr %q; want exit 2 and %q", tc.js, code, stderr, want)
		}
	}
}

// outcomeCell's cases, the reason cut at its first clause and at outcomeReasonMax.
func TestCompareOutcomeCell(t *testing.T) {
	long := strings.Repeat("x", 60)
	for _, tc := range []struct {
		s    runner.Summary
		want string
	}{
		{runner.Summary{Complete: true}, "ok"},
		{runner.Summary{Complete: true, QPErrorsAllowed: true}, "ok (QP errors allowed)"},
		{runner.Summary{Interrupted: "SIGINT"}, "interrupted (SIGINT)"},
		{runner.Summary{}, "interrupted"},
		{runner.Summary{Complete: true, Failed: true, FailureReason: "1 mrc QP(s) errored, the first: a (run.allow_qp_errors: true accepts)"}, "failed: 1 mrc QP(s) errored, the first: a"},
		{runner.Summary{Complete: true, Failed: true, FailureReason: long}, "failed: " + long[:outcomeReasonMax-3] + "..."},
		{runner.Summary{Complete: true, Failed: true}, "failed"},
	} {
		if got := outcomeCell(&tc.s); got != tc.want {
			t.Errorf("%+v: %q; want %q", tc.s, got, tc.want)
		}
	}
}
