package report

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// TestCDFPointsNaive checks cdfPoints against the definition F(x) = #{v <= x} / n: every point
// lies on the empirical CDF (between F just below x and F(x)), exact or downsampled.
func TestCDFPointsNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 5, 100, 1000, 5000} {
		for _, maxPts := range []int{2, 16, 600} {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = float64(rng.IntN(50)) // ties on purpose
			}
			slices.Sort(xs)
			below := func(x float64, strict bool) float64 {
				c := 0
				for _, v := range xs {
					if v < x || (!strict && v == x) {
						c++
					}
				}
				return float64(c) / float64(n)
			}
			pts := cdfPoints(xs, maxPts)
			if n <= maxPts && len(pts) != 2*n {
				t.Errorf("n=%d max=%d: %d points, want every step (%d)", n, maxPts, len(pts), 2*n)
			}
			if n > maxPts && len(pts) > maxPts+1 {
				t.Errorf("n=%d max=%d: %d points, over the bound", n, maxPts, len(pts))
			}
			for _, p := range pts {
				if p.Y < below(p.X, true)-1e-12 || p.Y > below(p.X, false)+1e-12 {
					t.Fatalf("n=%d max=%d: point %v off the CDF [%v, %v]", n, maxPts, p, below(p.X, true), below(p.X, false))
				}
			}
			if last := pts[len(pts)-1]; last.Y != 1 || last.X != xs[n-1] {
				t.Errorf("n=%d max=%d: the curve ends at %v, want (%v, 1)", n, maxPts, last, xs[n-1])
			}
		}
	}
	if cdfPoints(nil, 10) != nil {
		t.Error("CDF of nothing is not empty")
	}
}

func TestColGroups(t *testing.T) {
	for _, tc := range []struct{ n, max, groups int }{
		{0, 10, 0}, {1, 10, 1}, {10, 10, 10}, {11, 10, 6}, {130, 200, 130}, {1000, 200, 200}, {1001, 200, 167},
	} {
		g := colGroups(tc.n, tc.max)
		if len(g) != tc.groups {
			t.Errorf("colGroups(%d, %d): %d groups, want %d", tc.n, tc.max, len(g), tc.groups)
		}
		next := 0
		for _, r := range g {
			if r[0] != next || r[1] <= r[0] {
				t.Fatalf("colGroups(%d, %d) = %v: not a partition", tc.n, tc.max, g)
			}
			next = r[1]
		}
		if next != tc.n {
			t.Errorf("colGroups(%d, %d) covers %d columns", tc.n, tc.max, next)
		}
	}
}

func TestNodeTier(t *testing.T) {
	for _, tc := range []struct {
		node string
		tier int
	}{
		{"h3", -1}, {"h120", -1}, {"p0.t0-17", 0}, {"p3.t1-0", 1}, {"p1.t2-5", 2},
		{"hx", otherTier}, {"", otherTier}, {"p0.tx-1", otherTier}, {"p0.t-1-2", otherTier}, {"spine", otherTier},
	} {
		if got := nodeTier(tc.node); got != tc.tier {
			t.Errorf("nodeTier(%q) = %d, want %d", tc.node, got, tc.tier)
		}
	}
}

func TestMatchHeadline(t *testing.T) {
	for _, tc := range []struct {
		pattern, path string
		want          bool
	}{
		{"seed", "seed", true},
		{"seed", "seeds", false},
		{"mrc.retx_packets.*", "mrc.retx_packets.sack_gap", true},
		{"mrc.retx_packets.*", "mrc.retx_packets", false},
		{"mrc.retx_packets.*", "mrc.retx_packets.a.b", false},
		{"transport.retx_packets_by_cause.*", "transport.retx_packets_by_cause.trim_nack", true},
		{"transport.retx_packets_by_cause.*", "transport.retx_packets", false},
		{"collectives[*].busbw_GBps", "collectives[12].busbw_GBps", true},
		{"collectives[*].busbw_GBps", "collectives[1].algbw_GBps", false},
		{"drops_packets.*", "drops_packets[0]", false},
		{"latency_*", "latency_p90_us", true},
		{"latency_*", "latency_", false},
		{"latency_*", "latency_x.y", false},
		{"latency_*", "mrc.latency_p50_us", false},
		{"ocs[*].*", "ocs[3].pause_us", true},
	} {
		if got := matchHeadline(tc.pattern, tc.path); got != tc.want {
			t.Errorf("matchHeadline(%q, %q) = %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
}

func TestLineCol(t *testing.T) {
	data := []byte("ab\ncd\n\nx")
	for _, tc := range []struct {
		off       int64
		line, col int
	}{{0, 1, 1}, {1, 1, 2}, {3, 2, 1}, {4, 2, 2}, {6, 3, 1}, {7, 4, 1}, {8, 4, 2}, {99, 4, 2}, {-3, 1, 1}} {
		if l, c := lineCol(data, tc.off); l != tc.line || c != tc.col {
			t.Errorf("lineCol(%d) = %d:%d, want %d:%d", tc.off, l, c, tc.line, tc.col)
		}
	}
}

func TestGapFilled(t *testing.T) {
	got := gapFilled([]float64{0, 2, 8}, []float64{1, 3, 5}, 2)
	want := plotter.XYs{{X: 0, Y: 1}, {X: 2, Y: 1}, {X: 2, Y: 3}, {X: 4, Y: 3}, {X: 4, Y: 0}, {X: 8, Y: 0}, {X: 8, Y: 5}, {X: 10, Y: 5}, {X: 10, Y: 0}}
	if !slices.Equal(got, want) {
		t.Errorf("gapFilled = %v\nwant       %v", got, want)
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {0.5, 5}, {0.99, 10}, {1, 10}, {0.11, 2}} {
		if got := quantile(xs, tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

// TestDecimateNaive: decimation keeps a subsequence of at most maxPts points that holds the
// global minimum and maximum, and leaves short lines alone.
func TestDecimateNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 10, 600, 601, 5000} {
		pts := make(plotter.XYs, n)
		for i := range pts {
			pts[i] = plotter.XY{X: float64(i), Y: rng.NormFloat64()}
		}
		got := decimate(pts, 600)
		if n <= 600 && len(got) != n {
			t.Errorf("n=%d: %d points, want all", n, len(got))
		}
		if len(got) > 600 {
			t.Errorf("n=%d: %d points, over 600", n, len(got))
		}
		lo, hi := pts[0].Y, pts[0].Y
		for _, p := range pts {
			lo, hi = min(lo, p.Y), max(hi, p.Y)
		}
		glo, ghi := got[0].Y, got[0].Y
		for i, p := range got {
			glo, ghi = min(glo, p.Y), max(ghi, p.Y)
			if i > 0 && p.X <= got[i-1].X {
				t.Fatalf("n=%d: points out of order at %d", n, i)
			}
			if pts[int(p.X)] != p {
				t.Fatalf("n=%d: point %v is not one of the input's", n, p)
			}
		}
		if glo != lo || ghi != hi {
			t.Errorf("n=%d: range [%v, %v], want [%v, %v]", n, glo, ghi, lo, hi)
		}
	}
}

// TestHeadlineValue pins the headline's rounding across magnitudes: integers and strings as
// written, 4 significant digits otherwise.
func TestHeadlineValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		num  bool
		want string
	}{
		{"0.0000019926932222157823", true, "1.993e-06"},
		{"6450.6", true, "6451"},
		{"12.3456", true, "12.35"},
		{"0.80431", true, "0.8043"},
		{"1.5", true, "1.5"},
		{"0.001", true, "0.001"},
		{"-2.34567", true, "-2.346"},
		{"123456789.5", true, "123456790"},
		{"1e20", true, "1e+20"},
		{"128", true, "128"},
		{"0", true, "0"},
		{"p0.t1-7.down0", false, "p0.t1-7.down0"},
		{"true", false, "true"},
	} {
		if got := headlineValue(leaf{path: "x", value: c.in, num: c.num}); got != c.want {
			t.Errorf("headlineValue(%s) = %q; want %q", c.in, got, c.want)
		}
	}
}

// TestZeroBreakdown pins which headline rows are left out: zero entries of a breakdown whose
// total is beside them, nothing else.
func TestZeroBreakdown(t *testing.T) {
	for _, c := range []struct {
		path, value string
		num, want   bool
	}{
		{"drops_packets.queue_full", "0", true, true},
		{"drops_packets.queue_full", "3", true, false},
		{"transport.retx_packets_by_cause.timeout", "0", true, true},
		{"transport.retx_packets", "0", true, false},
		{"dropped_packets", "0", true, false},
		{"drops_packets.queue_full", "0", false, false},
	} {
		if got := zeroBreakdown(c.path, leaf{path: c.path, value: c.value, num: c.num}); got != c.want {
			t.Errorf("zeroBreakdown(%s = %s) = %v; want %v", c.path, c.value, got, c.want)
		}
	}
}

// TestTrainingClockNote: the network plots of a training run say when their clock (the
// simulated time) is shorter than the reported steps, and say nothing otherwise.
func TestTrainingClockNote(t *testing.T) {
	for _, c := range []struct {
		js   string
		want bool
	}{
		{`{"end_us": 849909.759, "training": {"step_time_us": 2634091.9, "simulated_steps": 1}}`, true},
		{`{"end_us": 2634091.9, "training": {"step_time_us": 2634091.9, "simulated_steps": 1}}`, false},
		{`{"end_us": 5000, "training": {"step_time_us": 1000, "simulated_steps": 5}}`, false},
		{`{"end_us": 5000}`, false},
	} {
		s, err := readSummary(fileSummary, strings.NewReader(c.js))
		if err != nil {
			t.Fatal(err)
		}
		if got := trainingClockNote(s) != ""; got != c.want {
			t.Errorf("%s: note %v, want %v", c.js, got, c.want)
		}
	}
}
