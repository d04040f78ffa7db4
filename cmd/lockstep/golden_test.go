package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.json from the current code (review the diff before committing)")

// TestGolden runs every scenario testdata/<name>.yaml and compares the summary.json it writes
// with testdata/golden/<name>.json; running the resolved scenario.yaml it recorded must give the
// same summary. After an intended change of behaviour, regenerate with
//
//	go test ./cmd/lockstep -run Golden -update
//
// and review the diff of testdata/golden like any other change.
func TestGolden(t *testing.T) {
	scenarios, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) == 0 {
		t.Fatal("no testdata/*.yaml scenarios")
	}
	want := map[string]bool{}
	for _, path := range scenarios {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		golden := filepath.Join("testdata", "golden", name+".json")
		want[filepath.Base(golden)] = true
		t.Run(name, func(t *testing.T) {
			dir, got := runTo(t, path)
			// The resolved scenario the run recorded must run to the same summary.
			if _, again := runTo(t, filepath.Join(dir, "scenario.yaml")); !bytes.Equal(got, again) {
				t.Errorf("%s/scenario.yaml does not reproduce summary.json:\n%s", dir, lineDiff(string(got), string(again)))
			}
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			exp, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (create it with -update)", err)
			}
			if !bytes.Equal(got, exp) {
				t.Errorf("summary.json of %s differs from %s (rerun with -update and review the diff):\n%s",
					path, golden, lineDiff(string(exp), string(got)))
			}
		})
	}
	// A golden file whose scenario is gone would never be checked again.
	goldens, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	for _, g := range goldens {
		if !want[filepath.Base(g)] {
			if *update {
				if err := os.Remove(g); err != nil {
					t.Error(err)
				}
				continue
			}
			t.Errorf("%s has no scenario testdata/%s.yaml; remove it or rerun with -update", g, strings.TrimSuffix(filepath.Base(g), ".json"))
		}
	}
}

// lineDiff lists the lines that differ between want and got, position by position: enough for
// summary.json, whose keys are in a fixed order.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			b.WriteString("line " + strconv.Itoa(i+1) + ":\n  want " + wl + "\n  got  " + gl + "\n")
		}
	}
	return b.String()
}
