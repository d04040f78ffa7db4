package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
)

// TestCompletion drives cobra's hidden __complete command as the shell scripts do: presets
// for scenario arguments (with file completion kept, directive 0), presets only for bench
// (4: no files), topology kinds and routings for topo's flags, nccl's ops, transport kinds,
// engines, base scenario and reduction operators.
func TestCompletion(t *testing.T) {
	var perm []string
	for _, p := range scenario.Presets() {
		if strings.HasPrefix(p, "perm") {
			perm = append(perm, p)
		}
	}
	for _, c := range []struct {
		args      []string
		want      []string
		directive string
	}{
		{[]string{"run", "perm"}, perm, ":0"},
		{[]string{"validate", "perm"}, perm, ":0"},
		{[]string{"sweep", "perm"}, perm, ":0"},
		{[]string{"compare", "mrc-fail", "perm"}, perm, ":0"},
		{[]string{"bench", "perm-1024", "train-405b-1"}, []string{"train-405b-131k", "train-405b-131k-roce", "train-405b-16k"}, ":4"},
		{[]string{"validate", ""}, scenario.Presets(), ":0"},
		{[]string{"run", "mrc-fail", ""}, nil, ":4"}, // one argument only
		{[]string{"topo", "--kind", "t"}, []string{"torus"}, ":4"},
		{[]string{"topo", "--kind", ""}, topoKinds, ":4"},
		{[]string{"topo", "--routing", ""}, []string{"minimal", "dor"}, ":4"},
		{[]string{"nccl", "all_"}, []string{"all_reduce", "all_gather"}, ":4"},
		{[]string{"nccl", "all_reduce", "--transport", ""}, []string{"ib", "mrc", "roce", "uec", "ideal"}, ":4"},
		{[]string{"nccl", "all_reduce", "--engine", "a"}, []string{"analytic"}, ":4"},
		{[]string{"nccl", "all_reduce", "--scenario", "mrc"}, []string{"mrc-fail"}, ":0"},
		{[]string{"nccl", "all_reduce", "--op", "m"}, []string{"max", "min", "mulsum"}, ":4"},
	} {
		code, out, stderr := cli(t, append([]string{"__complete"}, c.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, %s", c.args, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		got, dir := lines[:len(lines)-1], lines[len(lines)-1]
		if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) || dir != c.directive {
			t.Errorf("__complete %v: %q %s, want %q %s", c.args, got, dir, c.want, c.directive)
		}
	}
	if len(perm) < 2 {
		t.Fatalf("presets %v: the test expects perm-1024 and perm-8192", scenario.Presets())
	}
}
