package main

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstepsim/lockstep/scenario"
)

// statsOf: the mean and Student's t 95% half-width, against hand-computed values.
func TestStatsOf(t *testing.T) {
	cases := []struct {
		xs         []float64
		mean, ci95 float64
	}{
		{[]float64{7}, 7, 0},
		{[]float64{1, 3}, 2, 12.706205 * math.Sqrt2 / math.Sqrt2},               // sd sqrt2, t(0.975,1) = 12.7062
		{[]float64{1, 2, 3, 4, 5}, 3, 2.776445 * math.Sqrt(2.5) / math.Sqrt(5)}, // t(0.975,4) = 2.7764
		{[]float64{5, 5, 5}, 5, 0},
	}
	for _, c := range cases {
		st := statsOf(c.xs)
		if st.n != len(c.xs) || math.Abs(st.mean-c.mean) > 1e-9 || math.Abs(st.ci95-c.ci95) > 1e-4 {
			t.Errorf("statsOf(%v) = %+v, want mean %v ci95 %v", c.xs, st, c.mean, c.ci95)
		}
	}
}

// A sweep with seeds: 1..N prints and writes per-setting statistics whose interval holds every
// seed's figure spread sensibly (the mean between the extremes, the half-width shrinking
// with more seeds is not asserted: seeds differ), and a sweep without seeds writes none.
func TestSweepSeedStats(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "sd.yaml")
	os.WriteFile(file, []byte(`name: sd
topology:
  clos: {tiers: 2, planes: 1, radix: 16, hosts: 32, host_link: 100G}
transport: {kind: roce}
traffic:
  - {pattern: permutation, bytes: 256KiB}
variants:
  traffic.0.bytes: [256KiB, 512KiB]
  seeds: 1..4
`), 0o644)
	out := mustRun(t, "sweep", file, "--out", filepath.Join(dir, "res"), "--quiet")
	for _, want := range []string{"over seeds (mean ± 95% confidence interval", "traffic.0.bytes=256KiB  4 of 4", "traffic.0.bytes=512KiB  4 of 4"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// sweep.html: the figure against the one non-seed parameter (seeds averaged), then the
	// comparison of every run.
	page := string(readFile(t, filepath.Join(dir, "res", "sweep.html")))
	for _, want := range []string{`id="sweep-0"`, "jct_us against traffic.0.bytes", "mean over the seeds, with its 95% confidence interval", "sd-512KiB-s4/report.html"} {
		if !strings.Contains(page, want) {
			t.Errorf("sweep.html lacks %q", want)
		}
	}
	if strings.Contains(page, `id="sweep-1"`) {
		t.Errorf("sweep.html plots against the seed axis")
	}
	f, err := os.Open(filepath.Join(dir, "res", "sweep_stats.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 3 {
		t.Fatalf("sweep_stats.csv: %v, %d rows", err, len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	sweep, _ := os.ReadFile(filepath.Join(dir, "res", "sweep.csv"))
	srows, _ := csv.NewReader(strings.NewReader(string(sweep))).ReadAll()
	scol := map[string]int{}
	for i, h := range srows[0] {
		scol[h] = i
	}
	for g, bytes := range []string{"256KiB", "512KiB"} {
		r := rows[g+1]
		if r[col["traffic.0.bytes"]] != bytes || r[col["seeds"]] != "4" || r[col["jct_us_n"]] != "4" {
			t.Errorf("group %d row %v", g, r)
		}
		mean, _ := strconv.ParseFloat(r[col["jct_us_mean"]], 64)
		lo, hi := math.Inf(1), math.Inf(-1)
		var sum float64
		for _, sr := range srows[1:] {
			if sr[scol["traffic.0.bytes"]] == bytes {
				x, _ := strconv.ParseFloat(sr[scol["jct_us"]], 64)
				lo, hi, sum = min(lo, x), max(hi, x), sum+x
			}
		}
		if math.Abs(mean-sum/4) > 1e-6*mean || mean < lo || mean > hi {
			t.Errorf("%s: mean %v; seeds' JCTs %v..%v sum %v", bytes, mean, lo, hi, sum)
		}
	}
	// Without a seed axis: no statistics, and a stale sweep_stats.csv is removed.
	os.WriteFile(file, []byte(strings.Replace(string(readFile(t, file)), "  seeds: 1..4\n", "", 1)), 0o644)
	_, out, _ = cli(t, "sweep", file, "--out", filepath.Join(dir, "res"), "--quiet")
	if strings.Contains(out, "over seeds") {
		t.Errorf("statistics without seeds:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "res", "sweep_stats.csv")); !os.IsNotExist(err) {
		t.Errorf("sweep_stats.csv left: %v", err)
	}
}

// More than 64 variants need --max; the error names the count and the flag, --list prints an
// estimate of the whole sweep, and a sweep past 64 prints it before running.
func TestSweepMax(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "many.yaml")
	os.WriteFile(file, []byte(`name: many
topology:
  clos: {tiers: 2, planes: 1, radix: 8, hosts: 8, host_link: 100G}
transport: {kind: mrc}
traffic:
  - {pattern: permutation, bytes: 16KiB}
variants:
  seeds: 1..70
`), 0o644)
	code, _, stderr := cli(t, "sweep", file, "--out", filepath.Join(dir, "res"), "--quiet")
	if code != 2 || !strings.Contains(stderr, "expands to 70 scenarios, beyond the 64 allowed; pass --max 70") {
		t.Errorf("without --max: exit %d, %s", code, stderr)
	}
	if code, _, vstderr := cli(t, "validate", file, "--no-setup"); code != 2 || !strings.Contains(vstderr, "pass --max 70") {
		t.Errorf("validate without --max: exit %d, %s", code, vstderr)
	}
	if code, vout, vstderr := cli(t, "validate", file, "--no-setup", "--max", "70"); code != 0 || strings.Count(vout, ": valid;") != 70 || !strings.Contains(vout, "estimate for 70 variants:") {
		t.Errorf("validate --max 70: exit %d, %s\n%s", code, vout, vstderr)
	}
	_, _, out := cli(t, "sweep", file, "--list", "--max", "70")
	if !strings.Contains(out, "estimate for 70 variants:") || !strings.Contains(out, "packets in all, peak memory per worker about") {
		t.Errorf("--list lacks the estimate:\n%s", out)
	}
	code, _, stderr = cli(t, "sweep", file, "--out", filepath.Join(dir, "res"), "--quiet", "--max", "70", "-j", "2")
	if code != 0 || !strings.Contains(stderr, "estimate for 70 variants:") {
		t.Errorf("with --max: exit %d, %s", code, stderr)
	}
	if n := len(listDir(t, filepath.Join(dir, "res"))); n != 70+4 {
		t.Errorf("%d entries in the sweep folder; want 70 variants + compare.html, sweep.csv, sweep.html, sweep_stats.csv", n)
	}
}

// The sweep's wall-time estimate counts each variant's fixed cost besides its simulation
// (variantFixedCost: 20 ms plus 0.75 ms per link, measured): for n variants of one
// scenario on j workers, exactly n x (simulation + fixed) / j at both ends of the range.
// So 100,000 seeds of a tiny run on 32 hosts (64 links) take hours at -j 1 (n x 68 ms =
// 1.9 h), where the simulation alone said seconds.
func TestSweepEstimateFixedCost(t *testing.T) {
	if got, want := variantFixedCost(64), 20*time.Millisecond+64*750*time.Microsecond; got != want {
		t.Fatalf("variantFixedCost(64) = %v; want %v", got, want)
	}
	for _, n := range []int{1, 80} {
		y := fmt.Sprintf("name: m\ntopology:\n  clos: {tiers: 2, planes: 1, radix: 16, hosts: 32, host_link: 100G}\ntransport: {kind: mrc}\ntraffic:\n  - {pattern: permutation, bytes: 4KiB}\nvariants:\n  seeds: 1..%d\n", n)
		vs, err := scenario.ParseVariantsIn([]byte(y), ".", 100)
		if err != nil {
			t.Fatal(err)
		}
		e, err := vs[0].Scenario.Estimate()
		if err != nil || e.Links != 64 {
			t.Fatalf("estimate %+v, %v; want 64 links", e, err)
		}
		for _, j := range []int{1, 2} {
			_, _, wmin, wmax, _ := sweepCosts(vs, j)
			jobs := time.Duration(min(j, n))
			fixed := variantFixedCost(e.Links)
			if want := time.Duration(n) * (e.WallMin + fixed) / jobs; wmin != want {
				t.Errorf("%d variants at -j %d: wall from %v; want %v", n, j, wmin, want)
			}
			if want := time.Duration(n) * (e.WallMax + fixed) / jobs; wmax != want {
				t.Errorf("%d variants at -j %d: wall to %v; want %v", n, j, wmax, want)
			}
			if wmin < time.Duration(n)*fixed/jobs {
				t.Errorf("%d variants at -j %d: %v is below the fixed cost alone", n, j, wmin)
			}
		}
	}
}
