package flow

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// testFlow is a flow of a max-min example: paths as link lists with weights (nil weights:
// equal), and a cap (0: none).
type testFlow struct {
	paths   [][]int32
	weights []float64
	cap     float64
}

func (tf testFlow) spec(bytes int64) Flow {
	f := Flow{Src: -1, Dst: -1, Bytes: bytes, Cap: tf.cap}
	for i, p := range tf.paths {
		w := 1.0
		if tf.weights != nil {
			w = tf.weights[i]
		}
		f.Paths = append(f.Paths, Path{Links: p, Weight: w})
	}
	return f
}

// rates adds the flows at time 0 with a large size, runs 1 ns and returns their rates in id
// order.
func rates(t *testing.T, caps []float64, flows []testFlow) []float64 {
	t.Helper()
	s := sim.New(1)
	n, err := New(s, caps, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, tf := range flows {
		if _, err := n.AddFlow(0, tf.spec(1<<40)); err != nil {
			t.Fatalf("flow %d: %v", i, err)
		}
	}
	if err := s.Run(sim.Nanosecond); err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, fi := range n.Flows(nil) {
		out = append(out, fi.Rate)
	}
	if len(out) != len(flows) {
		t.Fatalf("%d flows active, want %d", len(out), len(flows))
	}
	return out
}

// TestMaxMinExamples checks progressive filling (Bertsekas & Gallager §6.5.2) on examples
// with known answers.
func TestMaxMinExamples(t *testing.T) {
	cases := []struct {
		name  string
		caps  []float64
		flows []testFlow
		want  []float64
	}{
		{
			// B&G §6.5.2's "parking lot": a long flow over three links and a short flow on
			// each: every link is shared by two flows, all get 1/2.
			name: "parking lot",
			caps: []float64{1, 1, 1},
			flows: []testFlow{
				{paths: [][]int32{{0, 1, 2}}},
				{paths: [][]int32{{0}}}, {paths: [][]int32{{1}}}, {paths: [][]int32{{2}}},
			},
			want: []float64{0.5, 0.5, 0.5, 0.5},
		},
		{
			// Link 1 (three flows) saturates first at 1/3; flow 0 then takes the rest of link 0.
			name: "two levels",
			caps: []float64{1, 1},
			flows: []testFlow{
				{paths: [][]int32{{0}}}, {paths: [][]int32{{0, 1}}}, {paths: [][]int32{{1}}}, {paths: [][]int32{{1}}},
			},
			want: []float64{2.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3},
		},
		{
			// Unequal capacities: link 0 (1) is shared by flows 0 and 2 at 1/2; flow 1 gets the
			// rest of link 1 (2 - 1/2).
			name: "unequal capacities",
			caps: []float64{1, 2},
			flows: []testFlow{
				{paths: [][]int32{{0, 1}}}, {paths: [][]int32{{1}}}, {paths: [][]int32{{0}}},
			},
			want: []float64{0.5, 1.5, 0.5},
		},
		{
			// Flow 0 is split 50/50 over links 0 and 1; flow 1 uses link 1. Link 1 carries
			// 0.5 r0 + r1 and saturates at level 2/3: both get 2/3 (flow 0 puts 1/3 on each link).
			name: "weighted multipath, one path shared",
			caps: []float64{1, 1},
			flows: []testFlow{
				{paths: [][]int32{{0}, {1}}}, {paths: [][]int32{{1}}},
			},
			want: []float64{2.0 / 3, 2.0 / 3},
		},
		{
			// Unequal weights: 3/4 of flow 0 on link 0, 1/4 on link 1, shared with flow 1.
			// Link 1 carries 1.25 t and saturates first, at t = 0.8 (link 0 would at 4/3):
			// both freeze at 0.8.
			name: "weights 3:1",
			caps: []float64{1, 1},
			flows: []testFlow{
				{paths: [][]int32{{0}, {1}}, weights: []float64{3, 1}}, {paths: [][]int32{{1}}},
			},
			want: []float64{0.8, 0.8},
		},
		{
			// Two paths through a common first link merge into coefficient 1 on it.
			name: "paths merged on a shared link",
			caps: []float64{1, 10, 10},
			flows: []testFlow{
				{paths: [][]int32{{0, 1}, {0, 2}}},
			},
			want: []float64{1},
		},
		{
			// A path crossing a link twice loads it twice.
			name:  "loop counts twice",
			caps:  []float64{1},
			flows: []testFlow{{paths: [][]int32{{0, 0}}}},
			want:  []float64{0.5},
		},
		{
			// A cap freezes a flow below its fair share; the other takes the rest.
			name: "cap",
			caps: []float64{10},
			flows: []testFlow{
				{paths: [][]int32{{0}}, cap: 2}, {paths: [][]int32{{0}}},
			},
			want: []float64{2, 8},
		},
		{
			// Caps above the fair share do nothing.
			name: "loose cap",
			caps: []float64{10},
			flows: []testFlow{
				{paths: [][]int32{{0}}, cap: 7}, {paths: [][]int32{{0}}, cap: 7},
			},
			want: []float64{5, 5},
		},
		{
			// A flow without links is limited by its cap only.
			name:  "no links, capped",
			caps:  []float64{1},
			flows: []testFlow{{cap: 3}, {paths: [][]int32{{0}}}},
			want:  []float64{3, 1},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := rates(t, tc.caps, tc.flows)
			for i := range tc.want {
				if math.Abs(got[i]-tc.want[i]) > 1e-12*math.Max(1, tc.want[i]) {
					t.Errorf("flow %d rate %v, want %v (all %v)", i, got[i], tc.want[i], got)
				}
			}
		})
	}
}

// randomInstance makes a random max-min instance: links of random capacity, flows over 1-4
// random paths of 1-5 random links, some capped.
func randomInstance(rng *rand.Rand, links, flows int) ([]float64, []testFlow) {
	caps := make([]float64, links)
	for i := range caps {
		caps[i] = float64(1+rng.IntN(8)) * 1e9
	}
	fl := make([]testFlow, flows)
	for i := range fl {
		np := 1 + rng.IntN(4)
		for range np {
			var p []int32
			for range 1 + rng.IntN(5) {
				p = append(p, int32(rng.IntN(links)))
			}
			fl[i].paths = append(fl[i].paths, p)
			fl[i].weights = append(fl[i].weights, float64(1+rng.IntN(3)))
		}
		if rng.IntN(5) == 0 {
			fl[i].cap = float64(1+rng.IntN(10)) * 1e8
		}
	}
	return caps, fl
}

// coefs returns flow tf's per-link coefficients (weights normalised).
func coefs(tf testFlow) map[int32]float64 {
	var tot float64
	for i := range tf.paths {
		tot += tf.weights[i]
	}
	c := map[int32]float64{}
	for i, p := range tf.paths {
		for _, l := range p {
			c[l] += tf.weights[i] / tot
		}
	}
	return c
}

// naiveMaxMin is the plain reference: progressive filling scanning every link and flow each
// round (B&G §6.5.2, as stated), no heap, no incremental state.
func naiveMaxMin(caps []float64, fl []testFlow) []float64 {
	co := make([]map[int32]float64, len(fl))
	for i := range fl {
		co[i] = coefs(fl[i])
	}
	rate := make([]float64, len(fl))
	frozen := make([]bool, len(fl))
	left := len(fl)
	for left > 0 {
		best := math.Inf(1)
		for l := range caps {
			var load, w float64
			for i := range fl {
				c := co[i][int32(l)]
				if frozen[i] {
					load += c * rate[i]
				} else {
					w += c
				}
			}
			if w > 0 {
				best = math.Min(best, (caps[l]-load)/w)
			}
		}
		for i := range fl {
			if !frozen[i] && fl[i].cap > 0 {
				best = math.Min(best, fl[i].cap)
			}
		}
		// Freeze the flows on links saturated at this level, and flows capped at it.
		var fz []int
		for i := range fl {
			if frozen[i] {
				continue
			}
			hit := fl[i].cap > 0 && fl[i].cap <= best*(1+1e-12)
			for l, c := range co[i] {
				var load, w float64
				for j := range fl {
					cj := co[j][l]
					if frozen[j] {
						load += cj * rate[j]
					} else {
						w += cj
					}
				}
				if c > 0 && (caps[l]-load)/w <= best*(1+1e-12) {
					hit = true
				}
			}
			if hit {
				fz = append(fz, i)
			}
		}
		for _, i := range fz {
			frozen[i] = true
			rate[i] = best
			left--
		}
	}
	return rate
}

// TestMaxMinAgainstNaive compares the heap-based filling with the naive reference on random
// instances (docs/style.md §9).
func TestMaxMinAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for it := 0; it < 200; it++ {
		caps, fl := randomInstance(rng, 2+rng.IntN(12), 1+rng.IntN(15))
		got := rates(t, caps, fl)
		want := naiveMaxMin(caps, fl)
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-9*want[i] {
				t.Fatalf("instance %d flow %d: rate %v, naive %v\ncaps %v\nflows %+v", it, i, got[i], want[i], caps, fl)
			}
		}
	}
}

// TestMaxMinBottleneckProperty checks the characterisation of B&G §6.5.2 on larger random
// instances: the allocation is feasible, and every flow is at its cap or has a bottleneck
// link (saturated, and no flow crossing it has a higher rate).
func TestMaxMinBottleneckProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for it := 0; it < 20; it++ {
		caps, fl := randomInstance(rng, 50, 300)
		got := rates(t, caps, fl)
		co := make([]map[int32]float64, len(fl))
		load := make([]float64, len(caps))
		maxr := make([]float64, len(caps))
		for i := range fl {
			co[i] = coefs(fl[i])
			for l, c := range co[i] {
				load[l] += c * got[i]
				maxr[l] = math.Max(maxr[l], got[i])
			}
		}
		for l := range caps {
			if load[l] > caps[l]*(1+1e-9) {
				t.Fatalf("instance %d: link %d carries %v > capacity %v", it, l, load[l], caps[l])
			}
		}
		for i := range fl {
			if fl[i].cap > 0 && math.Abs(got[i]-fl[i].cap) <= 1e-9*fl[i].cap {
				continue
			}
			ok := false
			for l := range co[i] {
				if load[l] >= caps[l]*(1-1e-9) && got[i] >= maxr[l]*(1-1e-9) {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("instance %d: flow %d (rate %v) has no bottleneck link", it, i, got[i])
			}
		}
	}
}
