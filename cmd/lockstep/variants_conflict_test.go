package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const conflictBase = `name: c
topology:
  clos: {tiers: 2, planes: 1, radix: 16, hosts: 32, host_link: 100G}
transport: {kind: mrc}
traffic:
  - {pattern: permutation, bytes: 1KiB}
variants:
`

// --seed on a file whose variants set run.seed would run every variant at that seed while
// sweep.csv shows the file's seeds: bad input for run and sweep in every mode (--list,
// --variant, --slurm, --collect), naming the flag and the key; nothing is run or written.
func TestSweepSeedFlagContradictsVariants(t *testing.T) {
	dir := t.TempDir()
	write := func(name, variants string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(conflictBase+variants), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	seeds := write("seeds.yaml", "  seeds: 1..3\n")
	runSeed := write("runseed.yaml", "  run.seed: [4, 5]\n")
	runMap := write("runmap.yaml", "  run: [{seed: 4}, {seed: 5}]\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", seeds, "--seed", "7"}, "--seed 7 contradicts the file's seeds: axis; leave one out"},
		{[]string{"run", seeds, "--seed", "7"}, "--seed 7 contradicts the file's seeds: axis; leave one out"},
		{[]string{"sweep", seeds, "--seed", "7", "--list"}, "--seed 7 contradicts the file's seeds: axis"},
		{[]string{"sweep", seeds, "--seed", "7", "--variant", "0"}, "--seed 7 contradicts the file's seeds: axis"},
		{[]string{"sweep", seeds, "--seed", "7", "--slurm"}, "--seed 7 contradicts the file's seeds: axis"},
		{[]string{"sweep", seeds, "--seed", "7", "--collect"}, "--seed 7 contradicts the file's seeds: axis"},
		{[]string{"sweep", runSeed, "--seed", "2"}, "--seed 2 contradicts the file's variants key run.seed; leave one out"},
		{[]string{"run", runMap, "--seed", "2"}, "--seed 2 contradicts the file's variants key run; leave one out"},
		{[]string{"compare", seeds, "--seed", "7"}, "--seed 7 contradicts the file's seeds: axis; leave one out"},
	} {
		out := filepath.Join(dir, "out")
		code, _, stderr := cli(t, append(c.args, "--out", out, "--quiet")...)
		if code != 2 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, c.args[1]) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q naming the file", c.args, code, stderr, c.want)
		}
		checkOneLine(t, stderr)
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v wrote %s", c.args, out)
		}
	}
	// Without a seed axis --seed stays allowed.
	if code, _, stderr := cli(t, "sweep", filepath.Join("testdata", "variants", "sweep4.yaml"), "--seed", "7", "--list"); code != 0 {
		t.Errorf("--seed on a sweep without a seed axis: exit %d, %q", code, stderr)
	}
}

// Variants keys that override one another are bad input (exit 2) naming both keys.
func TestSweepConflictingVariantKeys(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ variants, want1, want2 string }{
		{"  transport.kind: [mrc, roce]\n  transport: [mrc]\n", "variants.transport (line 9", "variants.transport.kind (line 8)"},
		{"  traffic.0.bytes: [64KiB]\n  traffic: [[{pattern: permutation, bytes: 1KiB}]]\n", "variants.traffic (line 9)", "variants.traffic.0.bytes (line 8)"},
		{"  traffic.0.bytes: [64KiB, 256KiB]\n  traffic.0.bytes: [128KiB]\n", "variants.traffic.0.bytes (line 9)", "line 8"},
		{"  seeds: 1..3\n  run.seed: [4, 5]\n", "variants.run.seed (line 9)", "variants.seeds (line 8"},
		{"  seeds: [1, 1, 2]\n", "variants.seeds (line 8)", "seed 1 is given twice"},
		{"  run.out: [a, b]\n", "variants.run.out (line 8)", "cannot vary run.out"},
	} {
		f := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(f, []byte(conflictBase+c.variants), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"sweep", "run"} {
			code, _, stderr := cli(t, cmd, f, "--list", "--out", filepath.Join(dir, "out"))
			if cmd == "run" {
				code, _, stderr = cli(t, cmd, f, "--out", filepath.Join(dir, "out"), "--quiet")
			}
			if code != 2 || !strings.Contains(stderr, c.want1) || !strings.Contains(stderr, c.want2) {
				t.Errorf("%s %q: exit %d, stderr %q; want 2 naming %q and %q", cmd, c.variants, code, stderr, c.want1, c.want2)
			}
			checkOneLine(t, stderr)
		}
	}
}

// compare --engines runs the one scenario at packet and at flow level (variants run.engine),
// prints both columns with the flow level's ratio, leaves no temporary copy behind, and
// refuses what it cannot cross-check, naming why.
func TestCompareEngines(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "eng.yaml")
	os.WriteFile(file, []byte("name: eng\ntopology:\n  clos: {tiers: 2, planes: 1, radix: 8, hosts: 8, host_link: 100G}\ntransport: {kind: mrc}\nworkload:\n  collectives:\n    - {op: all_reduce, bytes: 1MiB}\n"), 0o644)
	code, stdout, stderr := cli(t, "compare", file, "--engines", "--out", filepath.Join(dir, "res"), "--quiet")
	if code != 0 || !strings.Contains(stdout, "eng-packet") || !strings.Contains(stdout, "eng-flow") || !strings.Contains(stdout, "busbw") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want both engines' columns", code, stdout, stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".lockstep-engines-*")); len(m) != 0 {
		t.Errorf("temporary copies left: %v", m)
	}
	withEngine := filepath.Join(dir, "set.yaml")
	os.WriteFile(withEngine, []byte("name: set\ntopology:\n  clos: {tiers: 2, planes: 1, radix: 8, hosts: 8, host_link: 100G}\nworkload:\n  collectives:\n    - {op: all_reduce, bytes: 1MiB}\nrun: {engine: flow}\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", file, file, "--engines"}, "--engines takes one scenario"},
		{[]string{"compare", withEngine, "--engines"}, "sets run.engine; leave it out"},
		{[]string{"compare", filepath.Join("testdata", "variants", "sweep4.yaml"), "--engines"}, "has a variants section; add run.engine: [packet, flow] to it"},
		{[]string{"compare", dir, "--engines"}, "is a results folder"},
	} {
		code, _, stderr := cli(t, append(c.args, "--out", filepath.Join(dir, "bad"))...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
