package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstepsim/lockstep/runner"
)

// treeFiles reads every file under dir, by path relative to it.
func treeFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A sweep on a pool of workers writes the same folders, byte for byte (every file,
// report.html and compare.html included), and prints the same output as a serial one, for
// run FILE, sweep FILE and compare FILE.
func TestSweepPoolMatchesSerial(t *testing.T) {
	file, err := filepath.Abs(filepath.Join("testdata", "variants", "sweep4.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"run", "sweep", "compare"} {
		t.Run(cmd, func(t *testing.T) {
			var serialOut string
			var serial map[string][]byte
			for _, j := range []string{"1", "2", "4"} {
				// The same relative --out from a fresh folder, so scenario.yaml's run.out
				// and compare.html's paths read alike too.
				t.Chdir(t.TempDir())
				args := []string{cmd, file, "-j", j, "--out", "res"}
				if cmd != "compare" {
					args = append(args, "--quiet")
				}
				out := mustRun(t, args...)
				files := treeFiles(t, "res")
				if len(files) < 4*5 {
					t.Fatalf("-j %s wrote %d files; want every variant's results folder", j, len(files))
				}
				if serial == nil {
					serialOut, serial = out, files
					continue
				}
				if out != serialOut {
					t.Errorf("-j %s printed\n%s\nwant (-j 1)\n%s", j, out, serialOut)
				}
				for name, b := range serial {
					if got, ok := files[name]; !ok {
						t.Errorf("-j %s: %s missing", j, name)
					} else if string(got) != string(b) {
						t.Errorf("-j %s: %s differs from -j 1's", j, name)
					}
				}
				if len(files) != len(serial) {
					t.Errorf("-j %s wrote %d files, -j 1 %d", j, len(files), len(serial))
				}
			}
		})
	}
}

// summary.json names the variant and its values; a plain run's has no "variant".
func TestSweepVariantKey(t *testing.T) {
	file := filepath.Join("testdata", "variants", "sweep4.yaml")
	dir := t.TempDir()
	mustRun(t, "sweep", file, "--out", dir, "--quiet", "-j", "2")
	var s struct {
		Variant *struct {
			Name   string            `json:"name"`
			Values map[string]string `json:"values"`
		} `json:"variant"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "sw-roce-256KiB", "summary.json")), &s); err != nil {
		t.Fatal(err)
	}
	if s.Variant == nil || s.Variant.Name != "sw-roce-256KiB" || s.Variant.Values["transport.kind"] != "roce" || s.Variant.Values["traffic.0.bytes"] != "256KiB" || len(s.Variant.Values) != 2 {
		t.Errorf("variant key: %+v", s.Variant)
	}
	plain := t.TempDir()
	mustRun(t, "run", filepath.Join("testdata", "coll-ideal.yaml"), "--out", plain, "--quiet")
	if b := readFile(t, filepath.Join(plain, "summary.json")); strings.Contains(string(b), `"variant"`) {
		t.Errorf("a plain run's summary.json has a variant key")
	}
}

// --list prints every variant; --variant runs exactly one, by name or index, into the folder
// the whole sweep gives it; bad values are bad input naming what is allowed.
func TestSweepListAndVariant(t *testing.T) {
	file := filepath.Join("testdata", "variants", "sweep4.yaml")
	code, list, stderr := cli(t, "sweep", file, "--list")
	if code != 0 || !strings.HasPrefix(stderr, "estimate for 4 variants: ") {
		t.Errorf("--list: exit %d, stderr %q; want the sweep's estimate on stderr", code, stderr)
	}
	want := []string{"index name transport.kind traffic.0.bytes", "0 sw-mrc-256KiB mrc 256KiB", "1 sw-mrc-1MiB mrc 1MiB",
		"2 sw-roce-256KiB roce 256KiB", "3 sw-roce-1MiB roce 1MiB"}
	lines := strings.Split(strings.TrimSpace(list), "\n")
	for i := range lines {
		lines[i] = strings.Join(strings.Fields(lines[i]), " ")
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("--list printed\n%s\nwant\n%s", list, strings.Join(want, "\n"))
	}
	whole := t.TempDir()
	mustRun(t, "sweep", file, "--out", whole, "--quiet", "-j", "2")
	for _, tc := range []struct{ arg, name string }{{"2", "sw-roce-256KiB"}, {"sw-mrc-1MiB", "sw-mrc-1MiB"}, {"0", "sw-mrc-256KiB"}} {
		dir := t.TempDir()
		out := mustRun(t, "sweep", file, "--variant", tc.arg, "--out", dir, "--quiet")
		if !strings.Contains(out, tc.name) {
			t.Errorf("--variant %s printed\n%s", tc.arg, out)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 || entries[0].Name() != tc.name {
			t.Errorf("--variant %s wrote %v; want only %s", tc.arg, entries, tc.name)
			continue
		}
		a, b := readFile(t, filepath.Join(dir, tc.name, "summary.json")), readFile(t, filepath.Join(whole, tc.name, "summary.json"))
		if string(a) != string(b) {
			t.Errorf("--variant %s: summary.json differs from the whole sweep's", tc.arg)
		}
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--variant", "4"}, []string{"index 4 is out of range", "0..3"}},
		{[]string{"--variant", "-1"}, []string{"index -1 is out of range", "0..3"}},
		{[]string{"--variant", "nope"}, []string{`"nope"`, "0..3", "sw-mrc-256KiB", "sw-roce-1MiB"}},
		{[]string{"--variant", "1", "--list"}, []string{"--list and --variant"}},
		{[]string{"-j", "0"}, []string{"-j: 0 is not allowed"}},
	} {
		code, _, stderr := cli(t, append([]string{"sweep", file}, tc.args...)...)
		if code != 2 {
			t.Errorf("sweep %v: exit %d; want 2", tc.args, code)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("sweep %v: stderr %q lacks %q", tc.args, stderr, w)
			}
		}
		checkOneLine(t, stderr)
	}
	if code, _, stderr := cli(t, "sweep", filepath.Join("testdata", "coll-ideal.yaml"), "--list"); code != 2 || !strings.Contains(stderr, "no variants") {
		t.Errorf("sweep of a file without variants: exit %d, %q", code, stderr)
	}
}

// compare on a pool runs scenarios of every kind at once (raw traffic, MRC with a fault and
// its twin, RoCE with PFC, collectives at packet level and closed form, training) and gives
// what a serial run gives: run under -race, this checks the runner, fabric, transports,
// workloads and report keep no shared mutable state.
func TestPoolMixedKindsMatchesSerial(t *testing.T) {
	var args []string
	for _, f := range []string{"permutation-ecmp.yaml", "mrc-incast-fail.yaml", "roce-incast-victim.yaml", "coll-mrc.yaml", "coll-ideal.yaml", "train-llama8b.yaml", "flows-oversub.yaml"} {
		a, err := filepath.Abs(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, a)
	}
	var serialOut string
	var serial map[string][]byte
	for _, j := range []string{"1", "3"} {
		t.Chdir(t.TempDir())
		out := mustRun(t, append(append([]string{"compare"}, args...), "-j", j, "--out", "res")...)
		files := treeFiles(t, "res")
		if serial == nil {
			serialOut, serial = out, files
			continue
		}
		if out != serialOut {
			t.Errorf("-j %s printed\n%s\nwant (-j 1)\n%s", j, out, serialOut)
		}
		for name, b := range serial {
			if string(files[name]) != string(b) {
				t.Errorf("-j %s: %s differs from -j 1's", j, name)
			}
		}
		if len(files) != len(serial) {
			t.Errorf("-j %s wrote %d files, -j 1 %d", j, len(files), len(serial))
		}
	}
}

// A signal during a sweep on a pool stops every worker: the variants running stop at their
// next event (complete: false), no further one starts, compare.html is not written, and the
// exit code is 130.
func TestPoolInterrupted(t *testing.T) {
	file := filepath.Join(t.TempDir(), "big.yaml")
	os.WriteFile(file, []byte(`name: big
topology:
  clos: {tiers: 2, planes: 1, radix: 16, hosts: 128, host_link: 100G}
transport: {kind: mrc}
traffic:
  - {pattern: permutation, bytes: 16MiB}
variants:
  transport: [mrc, roce]
  run.seed: [1, 2, 3, 4]
`), 0o644)
	vs, err := loadVariantsArg(file)
	if err != nil || len(vs) != 8 {
		t.Fatalf("variants: %v, %d", err, len(vs))
	}
	dir := t.TempDir()
	intr := &runner.Interrupt{}
	var out, errb bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- runVariants(&out, vs, dir, false, runOpts{quiet: true, stderr: &errb, intr: intr, jobs: 2})
	}()
	// Interrupt once the first two variants have started (their folders exist).
	deadline := time.Now().Add(time.Minute)
	for len(listDir(t, dir)) < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	intr.Request("SIGINT")
	err = <-done
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 130 {
		t.Fatalf("error %v; want exit 130", err)
	}
	got := listDir(t, dir)
	if len(got) == 0 || len(got) > 2 {
		t.Fatalf("folder holds %q; want the two variants that were running, nothing else", got)
	}
	for _, name := range got {
		if name == "compare.html" {
			t.Errorf("compare.html written after an interrupt")
			continue
		}
		var s runner.Summary
		if err := json.Unmarshal(readFile(t, filepath.Join(dir, name, "summary.json")), &s); err != nil {
			t.Errorf("%s: %v", name, err)
		} else if name != "big-mrc-1" && name != "big-mrc-2" {
			t.Errorf("%s started after the signal", name)
		} else if s.Complete || s.Interrupted != "SIGINT" {
			t.Errorf("%s: complete %v, interrupted %q; want stopped by the SIGINT", name, s.Complete, s.Interrupted)
		}
	}
}

// compare takes results folders (read back from summary.json, not run again), alone or
// mixed with scenario files: folders print the same table as the files that made them.
func TestCompareFolders(t *testing.T) {
	file, err := filepath.Abs(filepath.Join("testdata", "variants", "sweep4.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	table := func(out string) string { // the comparison, without the closing results: line
		i := strings.Index(out, "\nresults: ")
		if i < 0 {
			t.Fatalf("no results: line in\n%s", out)
		}
		return out[:i]
	}
	want := table(mustRun(t, "compare", file, "--out", "res"))
	before := treeFiles(t, "res")
	var dirs []string
	for _, v := range []string{"sw-mrc-256KiB", "sw-mrc-1MiB", "sw-roce-256KiB", "sw-roce-1MiB"} {
		dirs = append(dirs, filepath.Join("res", v))
	}
	for _, out := range []string{"cmp", "res"} { // another folder, and the folders' own
		got := table(mustRun(t, append(append([]string{"compare"}, dirs...), "--out", out)...))
		if got != want {
			t.Errorf("compare of the folders (--out %s) printed\n%s\nwant (compare of the file)\n%s", out, got, want)
		}
		if _, err := os.Stat(filepath.Join(out, "compare.html")); err != nil {
			t.Errorf("compare of folders: %v", err)
		}
		after := treeFiles(t, "res")
		for name, b := range before {
			if name != "compare.html" && string(after[name]) != string(b) {
				t.Errorf("--out %s: %s changed: the folders must be read, not run again", out, name)
			}
		}
	}
	// Mixed: a folder and a scenario file.
	mixed := mustRun(t, "compare", dirs[0], filepath.Join(filepath.Dir(file), "perm-transports.yaml"), "--out", "mix")
	if !strings.Contains(mixed, "sw-mrc-256KiB") || !strings.Contains(mixed, "x first") {
		t.Errorf("compare of a folder and a file printed\n%s", mixed)
	}
	if code, _, stderr := cli(t, "compare", t.TempDir(), dirs[0]); code != 2 || !strings.Contains(stderr, "summary.json") {
		t.Errorf("compare of a folder without summary.json: exit %d, stderr %q; want 2 naming summary.json", code, stderr)
	}
}

// A sweep writes sweep.csv in its --out folder: one row per variant in variant order with its
// parameter values, seed and headline figures (empty where one does not apply), the same
// file whatever -j is.
func TestSweepCSV(t *testing.T) {
	file, err := filepath.Abs(filepath.Join("testdata", "variants", "sweep4.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	mustRun(t, "sweep", file, "-j", "1", "--out", "j1", "--quiet")
	mustRun(t, "sweep", file, "-j", "2", "--out", "j2", "--quiet", "--seed", "1")
	b1, b2 := readFile(t, filepath.Join("j1", "sweep.csv")), readFile(t, filepath.Join("j2", "sweep.csv"))
	if string(b1) != string(b2) {
		t.Errorf("sweep.csv differs between -j 1 and -j 2:\n%s\n%s", b1, b2)
	}
	lines := strings.Split(strings.TrimSuffix(string(b1), "\n"), "\n")
	head := "index,name,transport.kind,traffic.0.bytes,seed,duration_us,delivered_gbps,jct_us,fct_p50_us,fct_p99_us,fct_max_us,retx_packets,qp_errors,failed,step_time_us,mfu,busbw_GBps"
	if len(lines) != 5 || lines[0] != head {
		t.Fatalf("sweep.csv:\n%s\nwant the header\n%s\nand 4 rows", b1, head)
	}
	want := [][]string{
		{"0", "sw-mrc-256KiB", "mrc", "256KiB", "1"},
		{"1", "sw-mrc-1MiB", "mrc", "1MiB", "1"},
		{"2", "sw-roce-256KiB", "roce", "256KiB", "1"},
		{"3", "sw-roce-1MiB", "roce", "1MiB", "1"},
	}
	ncol := len(strings.Split(head, ","))
	for i, w := range want {
		cells := strings.Split(lines[i+1], ",")
		if len(cells) != ncol || strings.Join(cells[:5], ",") != strings.Join(w, ",") {
			t.Errorf("row %d: %s; want %d cells starting %s", i, lines[i+1], ncol, strings.Join(w, ","))
			continue
		}
		var sum runner.Summary
		if err := json.Unmarshal(readFile(t, filepath.Join("j1", w[1], "summary.json")), &sum); err != nil {
			t.Fatal(err)
		}
		tr := sum.Transfers()
		if tr == nil {
			t.Fatalf("%s: no transport block", w[1])
		}
		for col, v := range map[int]float64{5: sum.DurationUs, 6: sum.DeliveredGbps, 7: tr.JCTUs, 8: tr.FCTP50Us, 9: tr.FCTP99Us, 10: tr.FCTMaxUs} {
			if v <= 0 || cells[col] != strconv.FormatFloat(v, 'g', -1, 64) {
				t.Errorf("row %d: column %d is %q; want summary.json's %v", i, col, cells[col], v)
			}
		}
		if cells[11] != strconv.FormatInt(tr.RetxPackets, 10) || cells[12] != strconv.Itoa(tr.QPErrors) || cells[13] != "false" {
			t.Errorf("row %d: retx, QP errors, failed = %v; want %d, %d, false", i, cells[11:14], tr.RetxPackets, tr.QPErrors)
		}
		for _, c := range cells[14:] { // step time, MFU, busbw: no training, no collectives
			if c != "" {
				t.Errorf("row %d: %v; want the training and collective cells empty", i, cells[14:])
				break
			}
		}
	}
}
