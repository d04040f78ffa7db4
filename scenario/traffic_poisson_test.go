package scenario

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/traffic/cdf"
)

// arrivalsScenario resolves valYAML (16 hosts at 8 x 100G) under MRC with one generated group.
func arrivalsScenario(t *testing.T, traffic string) *Scenario {
	t.Helper()
	sc, err := valScenario("", "{kind: mrc}", traffic, "")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// Poisson arrivals: the count over the window is the rate x duration within 4 standard
// deviations (sqrt of the mean), the gaps are exponential (coefficient of variation 1), the
// offered bytes are the load within 4 standard errors of the sizes' own spread, sources and
// destinations come from their sets and differ, and every start is in the window.
func TestPoissonArrivals(t *testing.T) {
	const hostRate = 800e9 // valYAML: 8 planes of 100G
	for _, c := range []struct {
		name, arrivals string
		sizes          string
		load, rate     float64 // one of them
		window         sim.Time
		start          sim.Time
		src, dst       []int
	}{
		{name: "websearch load", arrivals: "{load: 0.6, sizes: websearch, duration: 1ms}", sizes: "websearch", load: 0.6, window: sim.Millisecond},
		{name: "hadoop load late start", arrivals: "{load: 0.3, sizes: hadoop, duration: 200us}", sizes: "hadoop", load: 0.3, window: 200 * sim.Microsecond, start: 100 * sim.Microsecond},
		{name: "rate, sets", arrivals: "{rate: 2e7, sizes: fixed 4KiB, duration: 100us, src: [0, 1, 2], dst: [2, 3]}", rate: 2e7, window: 100 * sim.Microsecond, src: []int{0, 1, 2}, dst: []int{2, 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := arrivalsScenario(t, fmt.Sprintf("[{pattern: poisson, start: %v, arrivals: %s}]", c.start, c.arrivals))
			flows := sc.Traffic[0].FlowList()
			nsrc := 16
			if c.src != nil {
				nsrc = len(c.src)
			}
			var mean float64
			if c.sizes != "" {
				d, _ := cdf.Named(c.sizes)
				mean = d.Mean()
			}
			want := c.rate * c.window.Seconds()
			if c.load > 0 {
				want = c.load * hostRate / (8 * mean) * float64(nsrc) * c.window.Seconds()
			}
			n := float64(len(flows))
			if math.Abs(n-want) > 4*math.Sqrt(want) {
				t.Errorf("%d flows, want %.0f +- %.0f", len(flows), want, 4*math.Sqrt(want))
			}
			var bytes, sq, gaps, gaps2 float64
			prev := c.start
			for j, f := range flows {
				if f.Start < prev || f.Start >= c.start+c.window {
					t.Fatalf("flow %d starts at %v after %v, window [%v, %v)", j, f.Start, prev, c.start, c.start+c.window)
				}
				g := float64(f.Start - prev)
				gaps += g
				gaps2 += g * g
				prev = f.Start
				if *f.Src == *f.Dst || c.src != nil && !containsInt(c.src, *f.Src) || c.dst != nil && !containsInt(c.dst, *f.Dst) {
					t.Fatalf("flow %d: %d -> %d outside src %v dst %v", j, *f.Src, *f.Dst, c.src, c.dst)
				}
				b := float64(f.Bytes)
				bytes += b
				sq += b * b
			}
			gm := gaps / n
			cv2 := gaps2/n/(gm*gm) - 1
			t.Logf("%d flows (want %.0f), gaps' CV^2 %.3f, mean size %.0f B", len(flows), want, cv2, bytes/n)
			if math.Abs(cv2-1) > 0.15 {
				t.Errorf("gaps' squared coefficient of variation %.3f, want 1 (exponential)", cv2)
			}
			if c.load > 0 {
				m := bytes / n
				se := math.Sqrt((sq/n - m*m) / n)
				if math.Abs(m-mean) > 4*se {
					t.Errorf("mean size %.0f B, table's %.0f +- %.0f", m, mean, 4*se)
				}
			}
			if c.sizes == "" {
				for _, f := range flows {
					if f.Bytes != 4096 {
						t.Fatalf("fixed 4KiB made a %v flow", f.Bytes)
					}
				}
			}
		})
	}
}

// On-off arrivals keep the mean rate of Poisson arrivals at the same load but are burstier:
// the gaps' squared coefficient of variation is well above Poisson's 1 (here about 4: gaps of
// 41 ns inside ON periods of 200 ns, about one in five an OFF period of 600 ns), and arrivals
// stop at count. Over 1 ms the source has about 1,250 cycles, so the count's relative standard
// deviation is about 4%; the tolerance is 15%.
func TestOnOffArrivals(t *testing.T) {
	sc := arrivalsScenario(t, "[{pattern: onoff, arrivals: {load: 0.5, sizes: fixed 8KiB, duration: 1ms, src: [0], dst: [1], on: 200ns, off: 600ns}}]")
	flows := sc.Traffic[0].FlowList()
	// per host: 0.5 x 800e9 / (8 x 8192) flows/s over 1 ms
	want := 0.5 * 800e9 / (8 * 8192) * 1e-3
	if n := float64(len(flows)); math.Abs(n/want-1) > 0.15 {
		t.Errorf("%d flows, want about %.0f (the mean load)", len(flows), want)
	}
	var gaps, gaps2 float64
	for j := 1; j < len(flows); j++ {
		g := float64(flows[j].Start - flows[j-1].Start)
		gaps += g
		gaps2 += g * g
	}
	n := float64(len(flows) - 1)
	cv2 := gaps2/n/((gaps/n)*(gaps/n)) - 1
	t.Logf("onoff: %d flows (mean-load figure %.0f), gaps' CV^2 %.2f", len(flows), want, cv2)
	if cv2 < 2 {
		t.Errorf("on-off gaps' squared coefficient of variation %.2f; want bursts (> 2)", cv2)
	}
	sc = arrivalsScenario(t, "[{pattern: onoff, arrivals: {rate: 1e7, sizes: hadoop, count: 500, on: 5us, off: 5us}}]")
	if n := len(sc.Traffic[0].FlowList()); n != 500 {
		t.Errorf("count 500 made %d flows", n)
	}
	sc = arrivalsScenario(t, "[{pattern: poisson, arrivals: {rate: 1e7, sizes: hadoop, count: 321}}]")
	if n := len(sc.Traffic[0].FlowList()); n != 321 {
		t.Errorf("count 321 made %d flows", n)
	}
}

// The same scenario makes the same flows; another seed others; the resolved scenario keeps
// the settings, and re-resolving it makes the same flows again.
func TestArrivalsDeterministic(t *testing.T) {
	const tr = "[{pattern: poisson, arrivals: {load: 0.5, sizes: hadoop, duration: 100us}}]"
	a := arrivalsScenario(t, tr).Traffic[0].FlowList()
	b := arrivalsScenario(t, tr).Traffic[0].FlowList()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two resolutions made different flows")
	}
	sc := arrivalsScenario(t, tr)
	out, err := Encode(sc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "sizes: hadoop") || strings.Contains(string(out), "flows:") {
		t.Errorf("resolved scenario:\n%s", out)
	}
	again, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Traffic[0].FlowList(), a) {
		t.Error("the written scenario makes other flows")
	}
	sc.Run.Seed++
	other, err := Parse([]byte(strings.Replace(string(out), fmt.Sprintf("seed: %d", sc.Run.Seed-1), fmt.Sprintf("seed: %d", sc.Run.Seed), 1)))
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(other.Traffic[0].FlowList(), a) {
		t.Error("another seed made the same flows")
	}
}

// sizes: file reads a CDF relative to the scenario's folder; its errors carry file:line:col.
func TestArrivalsSizesFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.cdf"), []byte("# two sizes\n1000 0.5\n3000 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.cdf"), []byte("1000 0.5\n900 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := func(file string) []byte {
		return []byte(fmt.Sprintf(valYAML, "", "{kind: mrc}", "[{pattern: poisson, arrivals: {rate: 1e7, sizes: file "+file+", count: 400}}]", ""))
	}
	sc, err := ParseIn(yaml("s.cdf"), dir)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range sc.Traffic[0].FlowList() {
		if f.Bytes < 1000 || f.Bytes > 3000 {
			t.Fatalf("size %v outside the file's [1000, 3000]", f.Bytes)
		}
		sum += float64(f.Bytes)
	}
	// mean 0.5 x 1000 + 0.5 x 2000 = 1500; standard deviation of the uniform half 577/sqrt(2)
	if m := sum / 400; math.Abs(m-1500) > 100 {
		t.Errorf("mean size %.0f, want 1500", m)
	}
	_, err = ParseIn(yaml("bad.cdf"), dir)
	wantErr(t, err, []string{"traffic[0].arrivals.sizes:", "bad.cdf:2:1: size 900 is not above the previous 1000"})
	_, err = ParseIn(yaml("none.cdf"), dir)
	wantErr(t, err, []string{"traffic[0].arrivals.sizes:", "none.cdf", "no such file"})
	_, err = ParseIn(yaml("."), dir)
	wantErr(t, err, []string{"traffic[0].arrivals.sizes:", "is not a regular file"})
}

func TestArrivalsErrors(t *testing.T) {
	for _, c := range []struct{ name, tr, traffic, err string }{
		{"missing", "{kind: mrc}", "[{pattern: poisson}]", "traffic[0].arrivals: missing; pattern poisson needs arrivals"},
		{"raw", "{kind: raw}", "[{pattern: poisson, arrivals: {load: 0.5, sizes: hadoop, duration: 1us}}]", "traffic[0].pattern: poisson makes transfers, which need a transport"},
		{"no sizes", "{kind: mrc}", "[{pattern: poisson, arrivals: {load: 0.5, duration: 1us}}]", "traffic[0].arrivals.sizes: missing; allowed websearch, hadoop, fixed <size>, file <path>"},
		{"bad sizes", "{kind: mrc}", "[{pattern: poisson, arrivals: {load: 0.5, sizes: datamining, duration: 1us}}]", `traffic[0].arrivals.sizes: "datamining" is not a size distribution; allowed websearch, hadoop`},
		{"bad fixed", "{kind: mrc}", "[{pattern: poisson, arrivals: {load: 0.5, sizes: fixed -3, duration: 1us}}]", `traffic[0].arrivals.sizes: "fixed -3": fixed needs a positive size`},
		{"no file", "{kind: mrc}", "[{pattern: poisson, arrivals: {load: 0.5, sizes: file, duration: 1us}}]", `traffic[0].arrivals.sizes: "file": file needs a path`},
		{"no load", "{kind: mrc}", "[{pattern: poisson, arrivals: {sizes: hadoop, duration: 1us}}]", "traffic[0].arrivals.load: missing; give load"},
		{"load range", "{kind: mrc}", "[{pattern: poisson, arrivals: {load: 1.5, sizes: hadoop, duration: 1us}}]", "traffic[0].arrivals.load: 1.5 is out of range; allowed 0 < load <= 1"},
		{"both", "{kind: mrc}", "[{pattern: poisson, arrivals: {load: 0.5, rate: 10, sizes: hadoop, duration: 1us}}]", "traffic[0].arrivals: load 0.5 and rate 10 both set; give one"},
		{"rate range", "{kind: mrc}", "[{pattern: poisson, arrivals: {rate: -1, sizes: hadoop, duration: 1us}}]", "traffic[0].arrivals.rate: -1 is out of range"},
		{"no bound", "{kind: mrc}", "[{pattern: poisson, arrivals: {load: 0.5, sizes: hadoop}}]", "traffic[0].arrivals.duration: missing; give how long flows arrive"},
		{"two bounds", "{kind: mrc}", "[{pattern: poisson, arrivals: {load: 0.5, sizes: hadoop, duration: 1us, count: 5}}]", "traffic[0].arrivals: duration 1us and count 5 both set; give one"},
		{"past the run", "{kind: mrc}", "[{pattern: poisson, start: 500us, arrivals: {load: 0.5, sizes: hadoop, duration: 600us}}]", "traffic[0].arrivals.duration: 600us from the group's start 500us ends after run.duration (1ms)"},
		{"count too long", "{kind: mrc}", "[{pattern: poisson, arrivals: {rate: 1000, sizes: hadoop, count: 5}}]", "traffic[0].arrivals.count: 5 flows at 1000 flows/s take about 5ms, past run.duration (1ms)"},
		{"count range", "{kind: mrc}", "[{pattern: poisson, arrivals: {rate: 1000, sizes: hadoop, count: 2000000}}]", "traffic[0].arrivals.count: 2000000 is out of range; allowed 1..1048576"},
		{"too many flows", "{kind: mrc}", "[{pattern: poisson, arrivals: {rate: 1e12, sizes: hadoop, duration: 10us}}]", "traffic[0].arrivals.duration: 10us at 1e+12 flows/s is about 1e+07 flows, beyond the limit of 1048576 per group"},
		{"host range", "{kind: mrc}", "[{pattern: poisson, arrivals: {load: 0.5, sizes: hadoop, duration: 1us, src: [3, 16]}}]", "traffic[0].arrivals.src[1]: host 16 does not exist; allowed 0..15"},
		{"host twice", "{kind: mrc}", "[{pattern: poisson, arrivals: {load: 0.5, sizes: hadoop, duration: 1us, dst: [2, 2]}}]", "traffic[0].arrivals.dst[1]: host 2 is listed twice"},
		{"only self", "{kind: mrc}", "[{pattern: poisson, arrivals: {load: 0.5, sizes: hadoop, duration: 1us, src: [1, 2], dst: [2]}}]", "traffic[0].arrivals.dst: host 2 is the only destination and also a source"},
		{"bytes", "{kind: mrc}", "[{pattern: poisson, bytes: 1MiB, arrivals: {load: 0.5, sizes: hadoop, duration: 1us}}]", "traffic[0].bytes: 1MiB is set, but pattern poisson draws each flow's size from arrivals.sizes; for one size use sizes: fixed 1MiB"},
		{"onoff periods", "{kind: mrc}", "[{pattern: onoff, arrivals: {load: 0.5, sizes: hadoop, duration: 1us, on: 1us}}]", "traffic[0].arrivals.on: on 1us, off 0s; pattern onoff needs both mean periods above 0"},
		{"poisson periods", "{kind: mrc}", "[{pattern: poisson, arrivals: {load: 0.5, sizes: hadoop, duration: 1us, off: 1us}}]", "traffic[0].arrivals.on: on 0s, off 1us are set, but pattern poisson has no periods; use pattern onoff"},
		{"arrivals unused", "{kind: mrc}", "[{pattern: permutation, bytes: 1MiB, arrivals: {load: 0.5}}]", "traffic[0].arrivals: is set, but pattern permutation does not use it"},
		{"unknown key", "{kind: mrc}", "[{pattern: poisson, arrivals: {lod: 0.5}}]", "lod"},
		{"process transport", "{kind: mrc}", "[{pattern: permutation, bytes: 1MiB, process: poisson}]", "traffic[0].process: applies to transport raw only"},
		{"process value", "{kind: raw}", "[{pattern: permutation, process: bursty}]", `traffic[0].process: "bursty" is not a packet process; allowed paced, poisson`},
		{"process ok", "{kind: raw}", "[{pattern: permutation, load: 0.5, process: poisson}]", ""},
		{"no flows", "{kind: mrc}", "[{pattern: poisson, arrivals: {rate: 1, sizes: hadoop, duration: 1ns}}]", "traffic[0].pattern: poisson made no flows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := valScenario("", c.tr, c.traffic, "")
			var want []string
			if c.err != "" {
				want = []string{c.err}
			}
			wantErr(t, err, want)
		})
	}
}

// count at the edge of the run: count / rate is just under run.duration, so about half of the
// seeds fall short, with an error naming how many arrived, and the others make exactly count.
func TestArrivalsCountShort(t *testing.T) {
	short, full := 0, 0
	for seed := 1; seed <= 20; seed++ {
		y := strings.Replace(fmt.Sprintf(valYAML, "", "{kind: mrc}", "[{pattern: poisson, arrivals: {rate: 1.001e6, sizes: fixed 1KiB, count: 1000}}]", ""),
			"run: {duration: 1ms}", fmt.Sprintf("run: {duration: 1ms, seed: %d}", seed), 1)
		sc, err := Parse([]byte(y))
		switch {
		case err == nil && len(sc.Traffic[0].FlowList()) == 1000:
			full++
		case err != nil && strings.Contains(err.Error(), "traffic[0].arrivals.count: 1000, but only") && strings.Contains(err.Error(), "flows arrived before run.duration (1ms)"):
			short++
		default:
			t.Fatalf("seed %d: err %v", seed, err)
		}
	}
	if short == 0 || full == 0 {
		t.Errorf("%d seeds short, %d full; want both", short, full)
	}
}
