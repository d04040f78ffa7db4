package main

import (
	"strings"
	"testing"
)

// bench --list names the embedded presets; an unknown preset is bad input naming the ones
// there are. (Running a preset is a speed measurement, not a test.)
func TestBenchListAndUnknown(t *testing.T) {
	out := mustRun(t, "bench", "--list")
	for _, p := range []string{"perm-1024", "perm-8192", "mrc-fail"} {
		if !strings.Contains(out, p) {
			t.Errorf("bench --list: %q missing from %q", p, out)
		}
	}
	code, _, stderr := cli(t, "bench", "perm-9")
	if code != 2 || !strings.Contains(stderr, "perm-1024") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("bench perm-9: exit %d, stderr %q; want 2 and one line listing the presets", code, stderr)
	}
}

// run accepts a preset name where a file is expected, and every preset parses.
func TestRunPresetNames(t *testing.T) {
	for _, p := range []string{"perm-1024", "perm-8192", "mrc-fail", "train-405b-131k", "train-405b-131k-roce", "train-dsv3-2k", "train-dsv3-2k-roce"} {
		if _, err := loadScenarioArg(p); err != nil {
			t.Errorf("preset %s: %v", p, err)
		}
	}
	code, _, stderr := cli(t, "run", "no-such-preset")
	if code != 2 || !strings.Contains(stderr, "no-such-preset") {
		t.Errorf("run no-such-preset: exit %d, stderr %q", code, stderr)
	}
}
