package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/lockstepsim/lockstep/transport/mrc"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
)

// Regular expressions written against nccl-tests' documented output (README.md and
// src/util.cu: writeDeviceReport, writeResultHeader, writeBenchmarkLine*, writeResultFooter),
// as a script parsing nccl-tests would use them.
var (
	ncclHeaderRe = regexp.MustCompile(`^# nThread (\d+) nGpus (\d+) minBytes (\d+) maxBytes (\d+) step: (\d+)\((factor|bytes)\) warmup iters: (\d+) iters: (\d+) agg iters: (\d+) validation: (\d+) graph: (\d+)`)
	ncclDeviceRe = regexp.MustCompile(`^#\s+Rank\s+(\d+) Group\s+(\d+) Pid\s+(\d+) on\s+(\S+) device\s+(\d+) \[([0-9a-fA-F:x]+)\] (.+)$`)
	ncclColsRe   = regexp.MustCompile(`^#\s+size\s+count\s+type\s+redop\s+root\s+time\s+algbw\s+busbw\s+#wrong\s+time\s+algbw\s+busbw\s+#wrong\s*$`)
	ncclUnitsRe  = regexp.MustCompile(`^#\s+\(B\)\s+\(elements\)\s+\(us\)\s+\(GB/s\)\s+\(GB/s\)\s+\(us\)\s+\(GB/s\)\s+\(GB/s\)\s*$`)
	num          = `([0-9.]+(?:e[+-]\d+)?)`
	ncclRowRe    = regexp.MustCompile(`^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)\s+` + num + `\s+` + num + `\s+` + num + `\s+(\d+|N/A)\s+` + num + `\s+` + num + `\s+` + num + `\s+(\d+|N/A)\s*$`)
	ncclOOBRe    = regexp.MustCompile(`^# Out of bounds values : (\d+) (OK|FAILED)$`)
	ncclAvgRe    = regexp.MustCompile(`^# Avg bus bandwidth\s+: ` + num)
)

// ncclParsed is nccl-tests output as a parser reads it.
type ncclParsed struct {
	header  []string // ncclHeaderRe's groups
	devices int
	cols    bool // both column-header lines seen
	rows    []ncclParsedRow
	oob     int
	avg     float64
	avgSeen bool
}

type ncclParsedRow struct {
	size, count        int64
	typ, redop         string
	root               int
	time, algbw, busbw [2]float64 // out-of-place, in-place
	wrong              [2]string
}

func parseNCCLOutput(t *testing.T, out string) ncclParsed {
	t.Helper()
	var p ncclParsed
	colLines := 0
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		switch {
		case ncclHeaderRe.MatchString(l):
			p.header = ncclHeaderRe.FindStringSubmatch(l)
		case ncclDeviceRe.MatchString(l):
			p.devices++
		case ncclColsRe.MatchString(l), ncclUnitsRe.MatchString(l):
			colLines++
		case ncclOOBRe.MatchString(l):
			p.oob, _ = strconv.Atoi(ncclOOBRe.FindStringSubmatch(l)[1])
		case ncclAvgRe.MatchString(l):
			p.avg, _ = strconv.ParseFloat(ncclAvgRe.FindStringSubmatch(l)[1], 64)
			p.avgSeen = true
		case strings.HasPrefix(l, "#"):
		default:
			m := ncclRowRe.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("line %q is neither a comment nor a row of nccl-tests' table", l)
			}
			var r ncclParsedRow
			r.size, _ = strconv.ParseInt(m[1], 10, 64)
			r.count, _ = strconv.ParseInt(m[2], 10, 64)
			r.typ, r.redop = m[3], m[4]
			r.root, _ = strconv.Atoi(m[5])
			for k := 0; k < 2; k++ {
				r.time[k], _ = strconv.ParseFloat(m[6+4*k], 64)
				r.algbw[k], _ = strconv.ParseFloat(m[7+4*k], 64)
				r.busbw[k], _ = strconv.ParseFloat(m[8+4*k], 64)
				r.wrong[k] = m[9+4*k]
			}
			p.rows = append(p.rows, r)
		}
	}
	p.cols = colLines == 2
	return p
}

// near reports whether a printed figure matches want to its printed precision (2 decimals, or
// fewer for large values: within 0.006 or 0.1%).
func near(got, want float64) bool { return math.Abs(got-want) <= 0.006+1e-3*math.Abs(want) }

// TestNCCLTable runs every benchmark on a small fabric (2 nodes x 4 GPUs, flow level) and
// reads the output with the regexes above: the header echoes the flags, one device line per
// rank, sizes and counts as nccl-tests rounds them, algbw = size / time, busbw = algbw x the
// op's factor (nccl-tests doc/PERFORMANCE.md), in-place equal to out-of-place, times growing
// with size, and the footer's average the mean of the busbw column.
func TestNCCLTable(t *testing.T) {
	const n = 8
	cases := []struct {
		op      string
		factor  float64 // busbw / algbw on n ranks
		redop   string
		root    int
		perRank bool
	}{
		{"all_reduce", 2.0 * (n - 1) / n, "sum", -1, false},
		{"all_gather_perf", float64(n-1) / n, "none", -1, true},
		{"reduce_scatter", float64(n-1) / n, "sum", -1, true},
		{"alltoall", float64(n-1) / n, "none", -1, true},
		{"broadcast", 1, "none", 3, false},
		{"reduce", 1, "sum", 3, false},
		{"sendrecv", 1, "none", -1, false},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			out := mustRun(t, "nccl", c.op, "-b", "1K", "-e", "16M", "-f", "4", "-g", "4", "--nodes", "2", "-r", "3")
			p := parseNCCLOutput(t, out)
			if p.header == nil {
				t.Fatalf("no nThread header line in\n%s", out)
			}
			if want := []string{"1", "4", "1024", "16777216", "4", "factor", "1", "20", "1", "1", "0"}; strings.Join(p.header[1:], " ") != strings.Join(want, " ") {
				t.Errorf("header %q; want nThread 1 nGpus 4 minBytes 1024 maxBytes 16777216 step: 4(factor) warmup 1 iters 20 agg 1 validation 1 graph 0", p.header[0])
			}
			if p.devices != n || !p.cols || p.oob != 0 || !p.avgSeen {
				t.Errorf("devices %d (want %d), column headers %v, out of bounds %d, avg line %v", p.devices, n, p.cols, p.oob, p.avgSeen)
			}
			if len(p.rows) != 8 { // 1K, 4K, ..., 16M
				t.Fatalf("%d rows; want 8 (1K to 16M by 4)", len(p.rows))
			}
			var sum float64
			for i, r := range p.rows {
				size := int64(1024) << (2 * i)
				count := size / 4
				if c.perRank {
					count = size / 4 / n // 16-byte aligned already: powers of two
				}
				if r.size != size || r.count != count || r.typ != "float" || r.redop != c.redop || r.root != c.root {
					t.Errorf("row %d: %d %d %s %s %d; want %d %d float %s %d", i, r.size, r.count, r.typ, r.redop, r.root, size, count, c.redop, c.root)
				}
				if r.time != [2]float64{r.time[0], r.time[0]} || r.algbw[0] != r.algbw[1] || r.busbw[0] != r.busbw[1] || r.wrong != [2]string{"0", "0"} {
					t.Errorf("row %d: in-place %v/%v/%v differs from out-of-place or #wrong %v", i, r.time, r.algbw, r.busbw, r.wrong)
				}
				// The time is printed to 0.01 us (or 0.1 us past 10 ms), hence the tolerance.
				if want := float64(r.size) / r.time[0] / 1e3; math.Abs(r.algbw[0]-want) > 0.006+want*(0.05/r.time[0]+1e-3) {
					t.Errorf("row %d: algbw %.2f; want size/time = %.4f", i, r.algbw[0], want)
				}
				if want := r.algbw[0] * c.factor; !near(r.busbw[0], want) && math.Abs(r.busbw[0]-want) > 0.006*c.factor+0.006 {
					t.Errorf("row %d: busbw %.2f; want algbw %.2f x %.4f = %.4f", i, r.busbw[0], r.algbw[0], c.factor, want)
				}
				if i > 0 && r.time[0] <= p.rows[i-1].time[0] {
					t.Errorf("row %d: %d B took %.2f us, not more than %d B's %.2f us", i, r.size, r.time[0], p.rows[i-1].size, p.rows[i-1].time[0])
				}
				sum += r.busbw[0]
			}
			if avg := sum / float64(len(p.rows)); math.Abs(p.avg-avg) > 0.01 {
				t.Errorf("Avg bus bandwidth %g; want the busbw column's mean %.4f", p.avg, avg)
			}
			if again := mustRun(t, "nccl", c.op, "-b", "1K", "-e", "16M", "-f", "4", "-g", "4", "--nodes", "2", "-r", "3"); again != out {
				t.Errorf("a second run printed different output")
			}
		})
	}
}

// TestNCCLRounding: sizes round as nccl-tests rounds them (all_gather on 12 ranks: the
// per-rank count down to 16 bytes; sizes too small for one 16-byte chunk per rank are rows of
// zeros), -i gives fixed steps, -d sets the element size and -c 0 prints N/A.
func TestNCCLRounding(t *testing.T) {
	out := mustRun(t, "nccl", "all_gather", "-b", "64", "-e", "1000", "-i", "312", "-g", "4", "--nodes", "3", "-d", "half", "-c", "0")
	p := parseNCCLOutput(t, out)
	if p.header == nil || p.header[5] != "312" || p.header[6] != "bytes" {
		t.Fatalf("header %v; want step: 312(bytes)", p.header)
	}
	// 64, 376, 688, 1000 B of half on 12 ranks: per-rank counts 64/2/12 = 2 -> 0, 15 -> 8,
	// 28 -> 24, 41 -> 40 (multiples of 8 halves = 16 B).
	want := [][2]int64{{0, 0}, {192, 8}, {576, 24}, {960, 40}}
	if len(p.rows) != len(want) {
		t.Fatalf("%d rows; want %d:\n%s", len(p.rows), len(want), out)
	}
	for i, r := range p.rows {
		if r.size != want[i][0] || r.count != want[i][1] || r.typ != "half" || r.wrong[0] != "N/A" {
			t.Errorf("row %d: size %d count %d type %s #wrong %s; want %d %d half N/A", i, r.size, r.count, r.typ, r.wrong[0], want[i][0], want[i][1])
		}
		if (r.size == 0) != (r.time[0] == 0) {
			t.Errorf("row %d: size %d took %.2f us; a zero-byte row has time 0 and only it", i, r.size, r.time[0])
		}
	}
}

// TestNCCLDefaults: nccl-tests' defaults (one 32 MiB size, step 1M bytes, 20 iterations, 1
// warmup) and a typical script's extra flags (-z 0 -a 1 -p 0 -c 5) are accepted.
func TestNCCLDefaults(t *testing.T) {
	p := parseNCCLOutput(t, mustRun(t, "nccl", "all_reduce_perf", "-g", "2", "-z", "0", "-a", "1", "-p", "0", "-c", "5"))
	if p.header == nil || strings.Join(p.header[1:], " ") != "1 2 33554432 33554432 1048576 bytes 1 20 1 5 0" {
		t.Errorf("header %v; want nThread 1 nGpus 2 minBytes 33554432 maxBytes 33554432 step: 1048576(bytes) warmup iters: 1 iters: 20 agg iters: 1 validation: 5 graph: 0", p.header)
	}
	if len(p.rows) != 1 || p.rows[0].size != 32<<20 || p.rows[0].wrong[0] != "0" || p.devices != 2 {
		t.Errorf("rows %+v, devices %d; want one 32 MiB row with #wrong 0 on 2 devices", p.rows, p.devices)
	}
}

// TestNCCLScenarioEquivalent: lockstep run of the scenario --print-scenario shows gives the
// times lockstep nccl printed, for one sweep (a geometric sweep) and for per-size scenarios.
func TestNCCLScenarioEquivalent(t *testing.T) {
	for _, args := range [][]string{
		{"nccl", "all_reduce", "-b", "64K", "-e", "4M", "-f", "4", "-g", "4", "--nodes", "2"},
		{"nccl", "all_gather", "-b", "4K", "-e", "12K", "-i", "4K", "-g", "3", "--nodes", "2", "--engine", "packet"},
	} {
		t.Run(args[1], func(t *testing.T) {
			p := parseNCCLOutput(t, mustRun(t, args...))
			docs := strings.Split(mustRun(t, append(args, "--print-scenario")...), "\n---\n")
			var times []float64
			for i, d := range docs {
				path := filepath.Join(t.TempDir(), "s.yaml")
				if err := os.WriteFile(path, []byte(d), 0o644); err != nil {
					t.Fatal(err)
				}
				_, sum := runTo(t, path)
				var s struct {
					Collectives []struct {
						SizeBytes int64   `json:"size_bytes"`
						TimeUs    float64 `json:"time_us"`
					} `json:"collectives"`
				}
				if err := json.Unmarshal(sum, &s); err != nil {
					t.Fatal(err)
				}
				if len(s.Collectives) == 0 {
					t.Fatalf("scenario %d ran no collective", i)
				}
				for _, c := range s.Collectives {
					times = append(times, c.TimeUs)
				}
			}
			if len(times) != len(p.rows) {
				t.Fatalf("the scenarios ran %d sizes; lockstep nccl printed %d rows", len(times), len(p.rows))
			}
			for i, r := range p.rows {
				if !near(r.time[0], times[i]) {
					t.Errorf("size %d: lockstep nccl %.2f us, lockstep run of its scenario %.3f us", r.size, r.time[0], times[i])
				}
			}
		})
	}
}

// TestNCCLJSON: -J writes nccl-tests' JSON with its documented keys and the table's figures;
// the file is the same on every run, and an existing file is kept (the next goes to FILE.0).
func TestNCCLJSON(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	args := []string{"nccl", "reduce_scatter", "-b", "1M", "-e", "4M", "-f", "2", "-g", "2", "--nodes", "2", "-J", path}
	out := mustRun(t, args...)
	if !strings.HasPrefix(out, "# Writing JSON output to "+path+"\n") {
		t.Errorf("output does not start with the JSON line: %q", strings.SplitN(out, "\n", 2)[0])
	}
	p := parseNCCLOutput(t, out)
	data := readFile(t, path)
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"version", "start_time", "args", "env", "nccl_version", "config", "results", "out_of_bounds", "average_bus_bandwidth", "errors", "end_time"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("JSON has no %q", k)
		}
	}
	var d struct {
		Config struct {
			NThreads     int   `json:"nthreads"`
			NGPUs        int   `json:"ngpus"`
			MinimumBytes int64 `json:"minimum_bytes"`
			MaximumBytes int64 `json:"maximum_bytes"`
			StepFactor   int   `json:"step_factor"`
			Iterations   int   `json:"iterations"`
			WarmupIters  int   `json:"warmup_iters"`
			Devices      []struct {
				Rank     int    `json:"rank"`
				Hostname string `json:"hostname"`
			} `json:"devices"`
		} `json:"config"`
		Results []struct {
			Size       int64  `json:"size"`
			Count      int64  `json:"count"`
			Type       string `json:"type"`
			RedOp      string `json:"redop"`
			Root       string `json:"root"`
			OutOfPlace struct {
				Time   float64  `json:"time"`
				AlgBW  float64  `json:"alg_bw"`
				BusBW  float64  `json:"bus_bw"`
				NWrong *float64 `json:"nwrong"`
			} `json:"out_of_place"`
			InPlace struct {
				Time float64 `json:"time"`
			} `json:"in_place"`
		} `json:"results"`
		OutOfBounds struct {
			Count int  `json:"count"`
			Okay  bool `json:"okay"`
		} `json:"out_of_bounds"`
		Avg struct {
			Bandwidth float64 `json:"bandwidth"`
		} `json:"average_bus_bandwidth"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	c := d.Config
	if c.NThreads != 1 || c.NGPUs != 2 || c.MinimumBytes != 1<<20 || c.MaximumBytes != 4<<20 || c.StepFactor != 2 || c.Iterations != 20 || c.WarmupIters != 1 || len(c.Devices) != 4 || c.Devices[3].Hostname != "node1" {
		t.Errorf("config %+v", c)
	}
	if len(d.Results) != len(p.rows) || len(p.rows) != 3 {
		t.Fatalf("%d JSON results, %d table rows; want 3", len(d.Results), len(p.rows))
	}
	for i, r := range d.Results {
		row := p.rows[i]
		if r.Size != row.size || r.Count != row.count || r.Type != "float" || r.RedOp != "sum" || strings.TrimSpace(r.Root) != "-1" ||
			!near(row.time[0], r.OutOfPlace.Time) || !near(row.algbw[0], r.OutOfPlace.AlgBW) || !near(row.busbw[0], r.OutOfPlace.BusBW) ||
			r.InPlace.Time != r.OutOfPlace.Time || r.OutOfPlace.NWrong == nil || *r.OutOfPlace.NWrong != 0 {
			t.Errorf("result %d %+v does not match the row %+v", i, r, row)
		}
	}
	if d.OutOfBounds.Count != 0 || !d.OutOfBounds.Okay || math.Abs(d.Avg.Bandwidth-p.avg) > 1e-3*p.avg {
		t.Errorf("out_of_bounds %+v, average %g (table %g)", d.OutOfBounds, d.Avg.Bandwidth, p.avg)
	}
	mustRun(t, args...)
	if again := readFile(t, path+".0"); string(again) != string(data) {
		t.Errorf("the second run's %s.0 differs from the first's %s", path, path)
	}
}

// TestNCCLBadFlags: bad flags exit 2 with one line naming the flag, the value and what is
// allowed.
func TestNCCLBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"gather"}, []string{`"gather"`, "all_reduce", "sendrecv"}},
		{[]string{"all_reduce", "-b", "1G", "-e", "8"}, []string{"-b/--minbytes", "1073741824", "-e/--maxbytes"}},
		{[]string{"all_reduce", "-b", "8", "-e", "1M", "-f", "1"}, []string{"-f/--stepfactor", "at least 2", "-i/--stepbytes"}},
		{[]string{"all_reduce", "-f", "2", "-i", "1K"}, []string{"-f/--stepfactor", "-i/--stepbytes", "both"}},
		{[]string{"all_reduce", "-o", "xor"}, []string{"-o/--op", `"xor"`, "sum", "mulsum"}},
		{[]string{"all_reduce", "-d", "float128"}, []string{"-d/--datatype", `"float128"`, "bfloat16"}},
		{[]string{"all_reduce", "-g", "0"}, []string{"-g/--ngpus", "0", "at least 1"}},
		{[]string{"all_reduce", "-t", "-1"}, []string{"-t/--nthreads"}},
		{[]string{"all_reduce", "--nodes", "0"}, []string{"--nodes", "at least 1"}},
		{[]string{"all_reduce", "--nodes", "4611686018427387904", "-g", "4"}, []string{"--nodes", "at most 2097152 ranks"}},
		{[]string{"all_reduce", "-g", "2048"}, []string{"-g/--ngpus 2048", "at most 1024"}},
		{[]string{"all_reduce", "-n", "0"}, []string{"-n/--iters"}},
		{[]string{"all_reduce", "-c", "-1"}, []string{"-c/--check", "-1"}},
		{[]string{"all_reduce", "-z", "3"}, []string{"-z/--blocking", "0 to 2"}},
		{[]string{"all_reduce", "-C", "1"}, []string{"unknown shorthand flag", "'C'"}},
		{[]string{"all_reduce", "-b", "lots"}, []string{"-b/--minbytes", `"lots"`}},
		{[]string{"all_reduce", "-e", "2T"}, []string{"-e/--maxbytes", "1 TiB", "out of range"}},
		{[]string{"all_reduce", "-b", "1P"}, []string{"-b/--minbytes", "out of range", "1099511627776"}},
		{[]string{"all_reduce", "-e", "1E"}, []string{"-e/--maxbytes", "out of range", "1099511627776"}},
		{[]string{"all_reduce", "-b", "1", "-e", "1M", "-i", "1"}, []string{"more than 256 sizes"}},
		{[]string{"broadcast", "-g", "4", "-r", "4"}, []string{"-r/--root", "0 to 3"}},
		{[]string{"sendrecv"}, []string{"sendrecv", "at least 2 ranks"}},
		{[]string{"all_reduce", "--engine", "warp"}, []string{"--engine", `"warp"`, "packet, flow or analytic"}},
		{[]string{"all_reduce", "--engine", "analytic", "--transport", "roce"}, []string{"--engine analytic", "--transport roce"}},
		{[]string{"all_reduce", "--algorithm", "magic"}, []string{"--algorithm", `"magic"`}},
		{[]string{"all_reduce", "--sim-iters", "0"}, []string{"--sim-iters", "1 to 1000"}},
		{[]string{"all_reduce", "--scenario", "no/such.yaml"}, []string{"--scenario", "no/such.yaml"}},
		{[]string{"all_reduce", "--scenario", "testdata/coll-mrc.yaml", "--nodes", "5", "-g", "4"}, []string{"20 ranks", "16 hosts"}},
		{[]string{"all_reduce", "--seed", "0"}, []string{"--seed"}},
		{[]string{"all_reduce", "-n", "x"}, []string{"--iters", `"x"`}},
	} {
		code, stdout, stderr := cli(t, append([]string{"nccl"}, c.args...)...)
		if code != 2 || stdout != "" {
			t.Errorf("lockstep nccl %s: exit %d, stdout %q; want exit 2 and no output", strings.Join(c.args, " "), code, stdout)
			continue
		}
		checkOneLine(t, stderr)
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("lockstep nccl %s: %q does not mention %q", strings.Join(c.args, " "), stderr, w)
			}
		}
	}
}

// TestNCCLUnits checks the size parser, the sweep, nccl-tests' rounding and its number format.
func TestNCCLUnits(t *testing.T) {
	// nccl-tests' parsesize: a float times the binary multiplier, truncated to bytes.
	for in, want := range map[string]int64{"8": 8, "128K": 128 << 10, "1m": 1 << 20, "8G": 8 << 30, "1T": 1 << 40, "4KiB": 4096, "64MB": 64e6, "1500B": 1500,
		"1.5M": 1572864, "0.5M": 524288, "1.5K": 1536, "1.0001K": 1024, ".5k": 512, "1.5": 1, "1e3": 1000, "0.75G": 805306368} {
		if got, err := parseNCCLSize(in); err != nil || got != want {
			t.Errorf("parseNCCLSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"": "not a size", "x": "not a size", "-1": "negative", "-1.5K": "negative", "8X": "not a size", "1.2.3K": "not a size",
		"9223372036854775807K": "out of range", "1P": "out of range", "1E": "out of range", "2T": "out of range", "1.0001T": "out of range", "2TiB": "out of range"} {
		got, err := parseNCCLSize(in)
		if err == nil {
			t.Errorf("parseNCCLSize(%q) = %d; want an error", in, got)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("parseNCCLSize(%q): %q; want %q", in, err, want)
		}
		if want == "out of range" && !strings.Contains(err.Error(), "1099511627776") {
			t.Errorf("parseNCCLSize(%q): %q does not name the limit", in, err)
		}
		if want == "not a size" && !strings.Contains(err.Error(), "K, M, G or T") {
			t.Errorf("parseNCCLSize(%q): %q does not list the README's units (K, M, G or T)", in, err)
		}
	}
	if got, _ := ncclSizes(8, 100, 0, 2); len(got) != 4 || got[3] != 64 {
		t.Errorf("ncclSizes(8, 100, x2) = %v; want 8 16 32 64", got)
	}
	if got, _ := ncclSizes(10, 40, 10, 1); len(got) != 4 || got[3] != 40 {
		t.Errorf("ncclSizes(10, 40, +10) = %v; want 10 20 30 40", got)
	}
	if got, _ := ncclSizes(0, 64, 0, 2); len(got) != 1 {
		t.Errorf("ncclSizes(0, 64, x2) = %v; want [0] (0 x 2 is 0: nccl-tests would loop)", got)
	}
	ag, _ := parseNCCLOp("all_gather")
	ar, _ := parseNCCLOp("all_reduce_perf_mpi")
	for _, c := range []struct {
		op         ncclOp
		size       int64
		elt, n     int
		bytes, cnt int64
	}{
		{ar, 1023, 4, 8, 1020, 255},
		{ag, 1024, 4, 8, 1024, 32},
		{ag, 1000, 4, 8, 896, 28},  // 250 / 8 = 31 -> 28 (multiple of 4 floats)
		{ag, 100, 4, 8, 0, 0},      // 25 / 8 = 3 -> 0
		{ag, 1000, 8, 3, 960, 40},  // 125 / 3 = 41 -> 40 (multiple of 2 doubles)
		{ag, 1000, 1, 3, 960, 320}, // 333 -> 320 (multiple of 16 int8)
	} {
		if b, n := ncclRound(c.op, c.size, c.elt, c.n); b != c.bytes || n != c.cnt {
			t.Errorf("ncclRound(%s, %d, %d B, %d ranks) = %d B, count %d; want %d, %d", c.op.name, c.size, c.elt, c.n, b, n, c.bytes, c.cnt)
		}
	}
	for _, c := range []struct {
		v     float64
		width int
		want  string
	}{
		{2.5, 7, "   2.50"}, {9999.99, 7, "9999.99"}, {18454.7, 7, "18454.7"}, {123456, 7, " 123456"},
		{1.2e7, 7, "1.2e+07"}, {0, 6, "  0.00"}, {231.26, 6, "231.26"}, {1234.5, 6, "1234.5"}, {123456, 6, "123456"}, {1e7, 6, " 1e+07"},
	} {
		if got := ncclFloat(c.v, c.width); got != c.want {
			t.Errorf("ncclFloat(%g, %d) = %q; want %q", c.v, c.width, got, c.want)
		}
	}
}

// FuzzNCCLSize: the size parser never panics and returns no negative size.
func FuzzNCCLSize(f *testing.F) {
	for _, s := range []string{"8", "8G", "128k", "4KiB", "64MB", "-1", "", "9223372036854775807", "1.5K", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := parseNCCLSize(s); err == nil && (v < 0 || v > ncclMaxBytes) {
			t.Errorf("parseNCCLSize(%q) = %d", s, v)
		}
	})
}

// FuzzNCCLFlags: any command line either prints the scenario (--print-scenario runs nothing)
// or is bad input with one line; never a panic or another exit code.
func FuzzNCCLFlags(f *testing.F) {
	for _, s := range []string{
		"all_reduce -b 8 -e 8G -f 2 -g 8 --nodes 16", "all_gather -b 1 -e 1M -i 7 -g 3 --nodes 5 -d half",
		"alltoall -b 0 -e 0 -f 2", "broadcast -r 7 -g 8", "sendrecv -g 1", "reduce_scatter -b 1K -e 1G -f 3 -t 2 -g 3 --nodes 7",
		"all_reduce --nodes 9223372036854775807 -g 9", "all_reduce -f 0 -i 0", "all_reduce -b 1T -e 1T -d double",
		"all_reduce --scenario testdata/coll-mrc.yaml -g 4", "all_reduce --engine analytic --transport mrc",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := append(append([]string{"nccl"}, strings.Fields(line)...), "--print-scenario")
		for _, a := range args {
			if strings.HasPrefix(a, "-J") || strings.HasPrefix(a, "--output_file") || strings.HasPrefix(a, "--out") {
				return // would write files; covered by TestNCCLJSON
			}
		}
		code, _, stderr := cli(t, args...)
		switch code {
		case 0:
		case 2:
			checkOneLine(t, stderr)
		default:
			t.Errorf("lockstep %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
		}
	})
}

// TestNCCLLargeScaleUp: with scale-up domains (-g 8 --nodes 16: 16 domains of 8) the flat
// algorithms cross the 400 Gb/s NICs, and the left-out run.duration covers them: a 64 GiB
// ring all-gather or reduce-scatter takes its closed form 127/128 x 2^36 B x 8 / (400 Gb/s x
// 4,096/4,230, MRC's payload rate) = 1,408,264 us (plus latencies), where the run used to stop at 1 s "not done"; sendrecv and
// the 1 TiB ones (about 21.8 s) likewise. An all-to-all's rank sends 120/128 of its bytes
// to the other domains.
func TestNCCLLargeScaleUp(t *testing.T) {
	for _, c := range []struct {
		op, size string
		bytes    float64 // of the row
		factor   float64 // the closed form is factor x bytes x 8 / 400 Gb/s
	}{
		{"all_gather", "64G", 1 << 36, 127.0 / 128}, {"reduce_scatter", "64G", 1 << 36, 127.0 / 128}, {"sendrecv", "64G", 1 << 36, 1},
		{"all_gather", "1T", 1 << 40, 127.0 / 128}, {"alltoall", "1T", 1 << 40, 120.0 / 128}, {"sendrecv", "1T", 1 << 40, 1},
	} {
		code, stdout, stderr := cli(t, "nccl", c.op, "-b", c.size, "-e", c.size, "-g", "8", "--nodes", "16", "--quiet")
		if code != 0 {
			t.Errorf("nccl %s -b %s -g 8 --nodes 16: exit %d: %s", c.op, c.size, code, stderr)
			continue
		}
		p := parseNCCLOutput(t, stdout)
		if len(p.rows) != 1 {
			t.Fatalf("%s: %d rows", c.op, len(p.rows))
		}
		want := c.factor * c.bytes * 8 / mrcPayloadRate(400e9) * 1e6
		lo, hi := want, want*1.01
		if want >= 1e7 { // printed as 2.1e+07: two digits
			lo, hi = want*0.95, want*1.05
		}
		if got := p.rows[0].time[0]; got < lo || got > hi {
			t.Errorf("nccl %s -b %s: %.0f us; want its closed form %.0f us (%.0f to %.0f)", c.op, c.size, got, want, lo, hi)
		}
	}
}

// mrcPayloadRate is an MRC NIC's payload rate at line rate bps: headers take
// mrc.DefaultHeaderBytes of every 4,096 B packet (the flow level charges them too).
func mrcPayloadRate(bps float64) float64 {
	return bps * 4096 / (4096 + mrc.DefaultHeaderBytes)
}

// ncclStopped is the line a failed or interrupted run prints after its finished rows.
const ncclStopped = "# Collective test stopped: "

// TestNCCLFailedRunPrintsFinished: a --scenario file's run.duration of 1 s is kept, so a 1 to
// 64 GiB all-gather sweep on 16 x 8 GPUs (each size 127/128 x S x 8 / MRC's payload rate at
// 400 Gb/s: 22.0, 44.0, 88.0, 176.0, 352.0 ms, then 704 ms that would end past 1 s) exits 1 but prints the header,
// the 5 sizes that finished and the stop line; -J holds those 5 rows and the failure in
// "errors". --duration 30s lets every size finish; an interrupted run (exit 130) prints the
// header and the stop line.
func TestNCCLFailedRunPrintsFinished(t *testing.T) {
	dir := t.TempDir()
	scen := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(scen, []byte("name: mine\ntopology:\n  rail: {servers: 16, gpus_per_server: 8, radix: 64, host_link: 400Gbps, scale_up: {gpus: 8, rate: 3.6Tbps}}\nrun: {engine: flow, duration: 1s, seed: 7}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(dir, "r.json")
	args := []string{"nccl", "all_gather", "-b", "1G", "-e", "64G", "-f", "2", "-g", "8", "--scenario", scen, "--quiet"}
	code, stdout, stderr := cli(t, append(args, "-J", js)...)
	if code != 1 || !strings.Contains(stderr, "not done at 1s") {
		t.Fatalf("exit %d, stderr %q; want exit 1, not done at 1s", code, stderr)
	}
	p := parseNCCLOutput(t, stdout)
	if p.header == nil || p.devices != 128 || !p.cols || p.avgSeen {
		t.Fatalf("header %v, devices %d, columns %v, avg line %v; want the header, 128 devices, the columns and no average", p.header != nil, p.devices, p.cols, p.avgSeen)
	}
	if len(p.rows) != 5 {
		t.Fatalf("%d rows; want the 5 sizes 1 to 16 GiB that finished within 1 s:\n%s", len(p.rows), stdout)
	}
	for i, r := range p.rows {
		want := 127.0 / 128 * float64(int64(1)<<(30+i)) * 8 / mrcPayloadRate(400e9) * 1e6
		if r.size != 1<<(30+i) || r.time[0] < want || r.time[0] > want*1.01 {
			t.Errorf("row %d: %d B in %.1f us; want %d B in %.1f us", i, r.size, r.time[0], int64(1)<<(30+i), want)
		}
	}
	if !strings.Contains(stdout, ncclStopped+"all_gather_perf after 5 of 7 sizes: ") || !strings.Contains(stdout, "1 collective(s) not done at 1s") {
		t.Errorf("no stop line in\n%s", stdout)
	}
	var doc ncclJSON
	b, err := os.ReadFile(js)
	if err != nil || json.Unmarshal(b, &doc) != nil {
		t.Fatalf("-J: %v", err)
	}
	if len(doc.Results) != 5 || len(doc.Errors) != 1 || !strings.Contains(doc.Errors[0], "not done at 1s") {
		t.Errorf("-J: %d results, errors %q; want 5 and the failure", len(doc.Results), doc.Errors)
	}

	if got := mustRun(t, append(args, "--duration", "30s")...); len(parseNCCLOutput(t, got).rows) != 7 || strings.Contains(got, ncclStopped) {
		t.Errorf("--duration 30s: want 7 rows and no stop line:\n%s", got)
	}

	f := ncclFlags{minBytes: "1K", maxBytes: "4K", stepBytes: "1K", stepFactor: 1, iters: 20, warmup: 1, agg: 1, check: 1, redop: "sum", dtype: "float",
		threads: 1, gpus: 4, nodes: 2, algorithm: "auto", simIters: 1, quiet: true}
	pl, err := f.plan("all_reduce", false, false)
	if err != nil {
		t.Fatal(err)
	}
	intr := &runner.Interrupt{}
	intr.Request("SIGINT")
	var out, errb bytes.Buffer
	err = pl.run(&out, &errb, intr)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 130 {
		t.Fatalf("interrupted: %v; want exit 130", err)
	}
	if ip := parseNCCLOutput(t, out.String()); ip.header == nil || !ip.cols || !strings.Contains(out.String(), ncclStopped+"all_reduce_perf after 0 of 4 sizes: lockstep nccl interrupted (SIGINT)") {
		t.Errorf("interrupted: want the header, the columns and the stop line:\n%s", out.String())
	}
}

// TestNCCLScenarioRunKept: a --scenario file's run settings stay in the scenario the flags
// make (run.duration, run.seed, run.drain ...), --duration overrides run.duration, and a
// preset's run.duration (sized for its own traffic) is left out.
func TestNCCLScenarioRunKept(t *testing.T) {
	scen := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(scen, []byte("topology: {rail: {servers: 2, gpus_per_server: 4, radix: 64, host_link: 400Gbps}}\nrun: {engine: flow, duration: 30s, drain: 5ms, seed: 7}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"--scenario", scen}, []string{"duration: 30s", "drain: 5ms", "seed: 7"}, nil},
		{[]string{"--scenario", scen, "--duration", "2s"}, []string{"duration: 2s", "drain: 5ms", "seed: 7"}, []string{"30s"}},
		{[]string{"--duration", "250ms"}, []string{"duration: 250ms"}, nil},
		{[]string{"--scenario", "default"}, nil, []string{"duration:"}},
	} {
		out := mustRun(t, append([]string{"nccl", "all_reduce", "-g", "4", "--nodes", "2", "--print-scenario"}, c.args...)...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: the scenario lacks %q:\n%s", c.args, w, out)
			}
		}
		for _, w := range c.not {
			if strings.Contains(out, w) {
				t.Errorf("%v: the scenario has %q:\n%s", c.args, w, out)
			}
		}
	}
	code, _, stderr := cli(t, "nccl", "all_reduce", "--duration", "2x")
	if code != 2 || !strings.Contains(stderr, "--duration") || !strings.Contains(stderr, `"2x"`) {
		t.Errorf("--duration 2x: exit %d, %q; want exit 2 naming the flag and value", code, stderr)
	}
}

// TestNCCLNotes: one rank prints a note that nothing crosses the network (its rows are 0, as
// nccl-tests' with one GPU print rows), and sizes that all round to 0 bytes say nothing was
// simulated instead of an empty transport and engine.
func TestNCCLNotes(t *testing.T) {
	out := mustRun(t, "nccl", "all_reduce")
	if !strings.Contains(out, "# 1 rank: no network traffic") || len(parseNCCLOutput(t, out).rows) != 1 {
		t.Errorf("1 rank: want the note and one row:\n%s", out)
	}
	if out := mustRun(t, "nccl", "all_reduce", "-g", "2"); strings.Contains(out, "1 rank:") {
		t.Errorf("2 ranks: a 1-rank note:\n%s", out)
	}
	out = mustRun(t, "nccl", "all_reduce", "-b", "0", "-e", "0", "-g", "2")
	if strings.Contains(out, "transport ,") || strings.Contains(out, "engine ;") || !strings.Contains(out, "nothing simulated: every size rounds to 0 bytes") {
		t.Errorf("-b 0 -e 0: want no empty fields and the note:\n%s", out)
	}
}

// TestNCCLOutStale: reusing an --out folder leaves only this run's files: a per-size run after
// a sweep removes the sweep's top-level summary.json, and a sweep after it removes the
// size-<bytes> folders.
func TestNCCLOutStale(t *testing.T) {
	out := filepath.Join(t.TempDir(), "res")
	base := []string{"nccl", "all_reduce", "-g", "2", "--nodes", "2", "--quiet", "--out", out}
	exists := func(p string) bool { _, err := os.Stat(filepath.Join(out, p)); return err == nil }
	cli(t, append(base, "-b", "1K", "-e", "4K", "-f", "2")...)
	if !exists("summary.json") {
		t.Fatal("the sweep wrote no summary.json")
	}
	if code, _, stderr := cli(t, append(base, "-b", "1K", "-e", "2K", "-i", "1K")...); code != 0 {
		t.Fatalf("per size: exit %d: %s", code, stderr)
	}
	if exists("summary.json") || exists("scenario.yaml") || !exists("size-1024/summary.json") || !exists("size-2048/summary.json") {
		t.Errorf("per size after a sweep: top-level summary.json %v (want gone), size folders %v %v", exists("summary.json"), exists("size-1024"), exists("size-2048"))
	}
	if code, _, stderr := cli(t, append(base, "-b", "1K", "-e", "4K", "-f", "2")...); code != 0 {
		t.Fatalf("sweep: exit %d: %s", code, stderr)
	}
	if !exists("summary.json") || exists("size-1024") || exists("size-2048") {
		t.Errorf("sweep after per size: summary.json %v, size folders %v %v (want gone)", exists("summary.json"), exists("size-1024"), exists("size-2048"))
	}
}

// TestNCCLAnalytic: --engine analytic's ideal network is charged the fabric's worst-case
// one-way latency (topology sizing; 2.33 us on 16 x 8 GPUs), not the ideal transport's 5 us
// default, so a 64 KiB all_reduce takes 16.5 us, not 27.2 us (flow: 11.2 us, each path its
// own latency); a scenario's own transport.ideal.latency is kept; and a size whose schedule
// is too large for it names --engine flow.
func TestNCCLAnalytic(t *testing.T) {
	var base scenario.Scenario
	if err := scenario.Decode([]byte(ncclDefaultFabric(16, 8)), &base); err != nil {
		t.Fatal(err)
	}
	l, err := base.Topology.Describe()
	if err != nil {
		t.Fatal(err)
	}
	worst := l.Sizing().WorstCaseLatency
	y := mustRun(t, "nccl", "all_reduce", "-b", "64K", "-e", "64K", "-g", "8", "--nodes", "16", "--engine", "analytic", "--print-scenario")
	sc, err := scenario.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Transport.Kind != scenario.TransportIdeal || sc.Transport.Ideal == nil || sc.Transport.Ideal.Latency != worst || worst <= 0 || worst >= scenario.DefaultIdealLatency {
		t.Errorf("analytic: transport %s, ideal %+v; want ideal at the fabric's worst-case latency %v (below the default %v)", sc.Transport.Kind, sc.Transport.Ideal, worst, scenario.DefaultIdealLatency)
	}
	ana := parseNCCLOutput(t, mustRun(t, "nccl", "all_reduce", "-b", "64K", "-e", "64K", "-g", "8", "--nodes", "16", "--engine", "analytic"))
	flow := parseNCCLOutput(t, mustRun(t, "nccl", "all_reduce", "-b", "64K", "-e", "64K", "-g", "8", "--nodes", "16"))
	if len(ana.rows) != 1 || len(flow.rows) != 1 || ana.rows[0].time[0] >= 27 || ana.rows[0].time[0] < flow.rows[0].time[0] {
		t.Errorf("64 KiB: analytic %v us, flow %v us; want analytic below the 5 us-latency 27.2 us and at least flow's (worst-case latency per message)", ana.rows, flow.rows)
	}
	scen := filepath.Join(t.TempDir(), "ideal.yaml")
	if err := os.WriteFile(scen, []byte("topology: {rail: {servers: 2, gpus_per_server: 4, radix: 64, host_link: 400Gbps}}\ntransport: {kind: ideal, ideal: {latency: 7us}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if y := mustRun(t, "nccl", "all_reduce", "-g", "4", "--scenario", scen, "--engine", "analytic", "--print-scenario"); !strings.Contains(y, "latency: 7us") {
		t.Errorf("a scenario's ideal latency was replaced:\n%s", y)
	}
	code, _, stderr := cli(t, "nccl", "all_reduce", "-b", "8", "-e", "8G", "-f", "2", "-g", "8", "--nodes", "16", "--engine", "analytic")
	if code != 2 || !strings.Contains(stderr, "use --engine flow") || !strings.Contains(stderr, "schedule operations") {
		t.Errorf("analytic 8 GiB on 128 ranks: exit %d, %q; want exit 2 suggesting --engine flow", code, stderr)
	}
}
