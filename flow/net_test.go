package flow

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

func newNet(t *testing.T, caps []float64, cfg Config) (*sim.Sim, *Net) {
	t.Helper()
	s := sim.New(1)
	n, err := New(s, caps, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, n
}

// add adds a flow over one path and records its delivery time in *at.
func add(t *testing.T, n *Net, start sim.Time, links []int32, bytes int64, lat sim.Time, at *sim.Time) {
	t.Helper()
	*at = -1
	_, err := n.AddFlow(start, Flow{Src: 0, Dst: 1, Bytes: bytes, Latency: lat,
		Paths: []Path{{Links: links, Weight: 1}}, Done: func(now sim.Time) { *at = now }})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSingleFlowFCT: an uncontended flow is delivered at start + bytes x 8 / rate, rounded up
// to a picosecond (sim.Rate.TxTime), + latency, exactly.
func TestSingleFlowFCT(t *testing.T) {
	cases := []struct {
		rate  sim.Rate
		bytes int64
		lat   sim.Time
		start sim.Time
	}{
		{100 * sim.Gbps, 1 << 20, sim.Microsecond, 0},
		{800 * sim.Gbps, 4096, 0, 0},
		{400 * sim.Gbps, 1e9, 2 * sim.Microsecond, 5 * sim.Microsecond},
		{3 * sim.Gbps, 1, 0, 0}, // 2666.67 ps -> 2667
		{3 * sim.Gbps, 7, 17, 3},
		{25 * sim.Gbps, 123456789, 1500 * sim.Nanosecond, sim.Millisecond},
		{1 * sim.Gbps, 0, sim.Microsecond, 0}, // 0 bytes: latency only
		{1600 * sim.Gbps, 1 << 40, 0, 0},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v_%dB", tc.rate, tc.bytes), func(t *testing.T) {
			s, n := newNet(t, []float64{float64(tc.rate), float64(tc.rate)}, Config{})
			var at sim.Time
			add(t, n, tc.start, []int32{0, 1}, tc.bytes, tc.lat, &at)
			if err := s.Drain(sim.MaxTime); err != nil {
				t.Fatal(err)
			}
			want := tc.start + tc.rate.TxTime(tc.bytes) + tc.lat
			if at != want {
				t.Errorf("delivered at %v (%d ps), want %v (%d ps)", at, at, want, want)
			}
			st := n.Stats()
			if st.FlowsCompleted != 1 || st.FlowsDelivered != 1 || n.InFlight() != 0 {
				t.Errorf("stats %+v, in flight %d", st, n.InFlight())
			}
			lb := n.LinkBytes(nil)
			for l, b := range lb {
				if math.Abs(b-float64(tc.bytes)) > 1e-6*float64(tc.bytes)+1 {
					t.Errorf("link %d carried %v bytes, want %d", l, b, tc.bytes)
				}
			}
		})
	}
}

// TestTwoFlowsStaggered: flow A (X bytes) starts at 0, flow B (Y bytes) at t1 on the same
// link of rate R. A runs alone at R until t1, then both at R/2; whichever ends first leaves
// the other at R again. Closed form, to the picosecond.
func TestTwoFlowsStaggered(t *testing.T) {
	const R = 100e9
	ps := func(bytes float64, rate float64) float64 { return bytes * 8 / rate * 1e12 }
	cases := []struct {
		X, Y int64
		t1   sim.Time
	}{
		{1 << 20, 1 << 20, 20 * sim.Microsecond}, // A ends first
		{1 << 20, 1 << 16, 20 * sim.Microsecond}, // B ends first
		{1 << 20, 1 << 20, 100 * sim.Microsecond},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d_%d_%v", tc.X, tc.Y, tc.t1), func(t *testing.T) {
			s, n := newNet(t, []float64{R}, Config{})
			var a, b sim.Time
			add(t, n, 0, []int32{0}, tc.X, 0, &a)
			add(t, n, tc.t1, []int32{0}, tc.Y, 0, &b)
			if err := s.Drain(sim.MaxTime); err != nil {
				t.Fatal(err)
			}
			X, Y, t1 := float64(tc.X), float64(tc.Y), float64(tc.t1)
			var wa, wb float64
			remA := X - R*t1/8e12
			switch {
			case remA <= 0: // A ended before B started
				wa = ps(X, R)
				wb = t1 + ps(Y, R)
			case remA <= Y:
				wa = t1 + ps(remA, R/2)
				wb = wa + ps(Y-remA, R)
			default:
				wb = t1 + ps(Y, R/2)
				wa = wb + ps(remA-Y, R)
			}
			if math.Abs(float64(a)-wa) > 2 || math.Abs(float64(b)-wb) > 2 {
				t.Errorf("A at %d ps, B at %d ps; want %.1f, %.1f", a, b, wa, wb)
			}
		})
	}
}

// TestSetCapacity: halving a link's capacity half-way through halves the rest's rate.
func TestSetCapacity(t *testing.T) {
	const R = 100e9
	s, n := newNet(t, []float64{R}, Config{})
	var at sim.Time
	add(t, n, 0, []int32{0}, 1e6, 0, &at) // 80 us alone
	k := s.Register("degrade", func(sim.Time, int32, uint64) {
		if err := n.SetCapacity(0, R/2); err != nil {
			t.Error(err)
		}
	})
	s.At(40*sim.Microsecond, k, 0, 0)
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	if want := 120 * sim.Microsecond; at != want {
		t.Errorf("delivered at %v, want %v", at, want)
	}
	if err := n.SetCapacity(1, 1); err == nil {
		t.Error("SetCapacity out of range: no error")
	}
	if err := n.SetCapacity(0, math.NaN()); err == nil {
		t.Error("SetCapacity NaN: no error")
	}
}

// TestStallReported: a flow through a link of capacity 0 gets rate 0; the stall hook names
// the flow's hosts and the dead link; restoring the link lets it finish.
func TestStallReported(t *testing.T) {
	const R = 100e9
	var hooked []error
	s, n := newNet(t, []float64{R, 0, R}, Config{OnStall: func(_ sim.Time, err error) { hooked = append(hooked, err) }})
	var ok, stuck sim.Time
	add(t, n, 0, []int32{0}, 1e6, 0, &ok)
	_, err := n.AddFlow(0, Flow{Src: 7, Dst: 9, Bytes: 1e6, Paths: []Path{{Links: []int32{2, 1}, Weight: 1}},
		Done: func(now sim.Time) { stuck = now }})
	if err != nil {
		t.Fatal(err)
	}
	stuck = -1
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	if ok != 80*sim.Microsecond || stuck != -1 {
		t.Fatalf("healthy flow at %v (want 80us), stuck flow at %v (want never)", ok, stuck)
	}
	if len(hooked) != 1 {
		t.Fatalf("stall hook called %d times, want 1", len(hooked))
	}
	var se *StallError
	if !errors.As(n.Err(), &se) || se.Src != 7 || se.Dst != 9 || se.Link != 1 || se.Stalled != 1 {
		t.Fatalf("Err() = %v, want a stall of 7 -> 9 at link 1", n.Err())
	}
	if msg := n.Err().Error(); !strings.Contains(msg, "link 1") || !strings.Contains(msg, "host 7 -> host 9") {
		t.Errorf("message %q does not name the link and hosts", msg)
	}
	// Restore at 1 ms: the stuck flow runs alone on links 2 and 1.
	k := s.Register("repair", func(sim.Time, int32, uint64) { _ = n.SetCapacity(1, R) })
	s.At(sim.Millisecond, k, 0, 0)
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	if want := sim.Millisecond + 80*sim.Microsecond; stuck != want {
		t.Errorf("repaired flow delivered at %v, want %v", stuck, want)
	}
	if n.Err() != nil {
		t.Errorf("Err() = %v after repair", n.Err())
	}
}

// TestBatchedRecompute: many flows added by separate events at one instant, and symmetric
// flows completing together, cost one recomputation each.
func TestBatchedRecompute(t *testing.T) {
	const flows = 200
	caps := make([]float64, flows)
	for i := range caps {
		caps[i] = 100e9
	}
	s, n := newNet(t, caps, Config{})
	k := s.Register("start", func(now sim.Time, obj int32, _ uint64) {
		if _, err := n.AddFlow(now, Flow{Bytes: 1e6, Paths: []Path{{Links: []int32{obj}, Weight: 1}}}); err != nil {
			t.Error(err)
		}
	})
	for i := range flows {
		s.At(sim.Microsecond, k, int32(i), 0)
	}
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	st := n.Stats()
	if st.FlowsCompleted != flows || st.Recomputes > 4 {
		t.Errorf("stats %+v: want %d flows in at most 4 recomputations", st, flows)
	}
	if s.Now() != 81*sim.Microsecond {
		t.Errorf("ended at %v, want 81us", s.Now())
	}
}

// TestAddFlowErrors: invalid flows are refused with an error and leave nothing behind.
func TestAddFlowErrors(t *testing.T) {
	s, n := newNet(t, []float64{1, 1}, Config{})
	k := s.Register("noop", func(sim.Time, int32, uint64) {})
	s.At(10, k, 0, 0)
	if err := s.Run(10); err != nil {
		t.Fatal(err)
	}
	bad := map[string]Flow{
		"negative bytes":  {Bytes: -1},
		"negative lat":    {Latency: -1},
		"nan cap":         {Cap: math.NaN()},
		"link range":      {Paths: []Path{{Links: []int32{2}, Weight: 1}}},
		"negative weight": {Paths: []Path{{Links: []int32{0}, Weight: -1}}},
		"zero weights":    {Paths: []Path{{Links: []int32{0}, Weight: 0}}},
	}
	for name, f := range bad {
		if _, err := n.AddFlow(10, f); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := n.AddFlow(5, Flow{}); err == nil {
		t.Error("start in the past: no error")
	}
	if n.InFlight() != 0 {
		t.Errorf("%d flows in flight after errors", n.InFlight())
	}
	if _, err := New(s, []float64{-1}, Config{}); err == nil {
		t.Error("negative capacity: no error")
	}
}

// randomRun runs a random workload (flows over random multi-link paths, random starts, a
// capacity change) and returns every delivery as "id@time" and the links' carried bytes.
func randomRun(t *testing.T, seed uint64) ([]string, []float64, Stats) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	const links = 40
	caps := make([]float64, links)
	for i := range caps {
		caps[i] = float64(1+rng.IntN(4)) * 100e9
	}
	s, n := newNet(t, caps, Config{})
	var out []string
	for i := range 400 {
		var paths []Path
		for range 1 + rng.IntN(3) {
			var p []int32
			for range 1 + rng.IntN(4) {
				p = append(p, int32(rng.IntN(links)))
			}
			paths = append(paths, Path{Links: p, Weight: 1})
		}
		f := Flow{Src: i, Dst: i + 1, Bytes: rng.Int64N(1 << 22), Paths: paths,
			Latency: sim.Time(rng.IntN(3000)) * sim.Nanosecond}
		f.Done = func(now sim.Time) { out = append(out, fmt.Sprintf("%d@%d", i, now)) }
		if _, err := n.AddFlow(sim.Time(rng.IntN(500))*sim.Microsecond, f); err != nil {
			t.Fatal(err)
		}
	}
	k := s.Register("fail", func(sim.Time, int32, uint64) { _ = n.SetCapacity(3, 10e9) })
	s.At(100*sim.Microsecond, k, 0, 0)
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	st := n.Stats()
	st.RecomputeWall = 0
	return out, n.LinkBytes(nil), st
}

// TestDeterminism: two runs of the same inputs give identical deliveries (times and order),
// link bytes and counters.
func TestDeterminism(t *testing.T) {
	a, ab, as := randomRun(t, 42)
	b, bb, bs := randomRun(t, 42)
	if !slices.Equal(a, b) || !slices.Equal(ab, bb) || as != bs {
		t.Fatalf("runs differ:\n%v\n%v\n%+v\n%+v", a[:10], b[:10], as, bs)
	}
	if len(a) != 400 {
		t.Fatalf("%d deliveries, want 400", len(a))
	}
}

// TestConservation: the bytes the links carried equal the sum over flows of bytes x the
// number of links on their path (single-path flows here).
func TestConservation(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	caps := []float64{100e9, 200e9, 50e9, 400e9}
	s, n := newNet(t, caps, Config{})
	want := make([]float64, len(caps))
	for range 100 {
		l1, l2 := int32(rng.IntN(4)), int32(rng.IntN(4))
		b := rng.Int64N(1 << 20)
		want[l1] += float64(b)
		want[l2] += float64(b)
		if _, err := n.AddFlow(sim.Time(rng.IntN(100))*sim.Microsecond, Flow{Bytes: b, Paths: []Path{{Links: []int32{l1, l2}, Weight: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	got := n.LinkBytes(nil)
	for l := range want {
		if math.Abs(got[l]-want[l]) > 1e-6*want[l]+200 {
			t.Errorf("link %d carried %.1f bytes, want %.0f", l, got[l], want[l])
		}
	}
}

// TestCascadeOneRecompute: at one instant, events that add flows schedule further events at
// the same instant that add more, and flows completing together start new flows from their
// Done callbacks: the rates are recomputed once per instant, after all of it
// (sim.AtEndOfInstant), not once per wave of the cascade.
func TestCascadeOneRecompute(t *testing.T) {
	const n0 = 200
	caps := make([]float64, 2*n0)
	for i := range caps {
		caps[i] = 100e9
	}
	s, n := newNet(t, caps, Config{})
	add := func(now sim.Time, link int32, done func(sim.Time)) {
		if _, err := n.AddFlow(now, Flow{Bytes: 1e6, Paths: []Path{{Links: []int32{link}, Weight: 1}}, Done: done}); err != nil {
			t.Error(err)
		}
	}
	var second sim.Kind
	first := s.Register("first", func(now sim.Time, obj int32, _ uint64) {
		add(now, obj, func(at sim.Time) { add(at, obj, nil) }) // on completion, another flow
		s.At(now, second, obj+n0, 0)
	})
	second = s.Register("second", func(now sim.Time, obj int32, _ uint64) { add(now, obj, nil) })
	for i := range n0 {
		s.At(sim.Microsecond, first, int32(i), 0)
	}
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	st := n.Stats()
	// Instants: the start (400 flows), the completion of all 400 (200 new flows), the last
	// completion; deliveries need no recomputation.
	if st.FlowsCompleted != 3*n0 || st.Recomputes > 3 {
		t.Errorf("stats %+v: want %d flows in at most 3 recomputations", st, 3*n0)
	}
}

// A flow's (link, coefficient) entries are its paths' weights summed per link in path order,
// normalised, sorted by internal link: the same whether the flow crosses few links (kept
// beside the links while built) or many (spilled to the per-link array), across the switch
// at smallFlow, with links repeated within and across paths, and in a reused slot.
func TestEntriesSmallAndSpilled(t *testing.T) {
	const links = 400
	caps := make([]float64, links)
	for i := range caps {
		caps[i] = 100e9
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, distinct := range []int{1, 2, 5, smallFlow - 1, smallFlow, smallFlow + 1, 2 * smallFlow, 300} {
		for trial := 0; trial < 20; trial++ {
			s := sim.New(1)
			n, err := New(s, caps, Config{})
			if err != nil {
				t.Fatal(err)
			}
			// A first flow interns links in a random order, so internal and caller numbers differ.
			pre := make([]int32, 0, links)
			for _, l := range rng.Perm(links) {
				pre = append(pre, int32(l))
			}
			if _, err := n.AddFlow(0, Flow{Src: -1, Dst: -1, Bytes: 1, Paths: []Path{{Links: pre, Weight: 1}}}); err != nil {
				t.Fatal(err)
			}
			pool := rng.Perm(links)[:distinct]
			var paths []Path
			want := map[int32]float64{}
			var order []int32
			total := 0.0
			for p := 0; p < 1+rng.IntN(4); p++ {
				w := 0.25 + rng.Float64()
				total += w
				var ls []int32
				for k := 0; k < 1+rng.IntN(2*distinct); k++ {
					l := int32(pool[rng.IntN(distinct)])
					ls = append(ls, l)
				}
				paths = append(paths, Path{Links: ls, Weight: w})
			}
			for _, p := range paths {
				for _, x := range p.Links {
					l := n.ext2int[x]
					if _, ok := want[l]; !ok {
						order = append(order, l)
					}
					want[l] += p.Weight
				}
			}
			id, err := n.AddFlow(0, Flow{Src: -1, Dst: -1, Bytes: 1, Paths: paths})
			if err != nil {
				t.Fatal(err)
			}
			f := &n.flows[id]
			slices.Sort(order)
			if len(f.ents) != len(order) {
				t.Fatalf("distinct %d trial %d: %d entries, want %d", distinct, trial, len(f.ents), len(order))
			}
			for i, l := range order {
				if e := f.ents[i]; e.link != l || e.coef != want[l]*(1/total) {
					t.Fatalf("distinct %d trial %d: entry %d = (%d, %v), want (%d, %v)", distinct, trial, i, e.link, e.coef, l, want[l]*(1/total))
				}
			}
			for l, a := range n.fs.acc {
				if a != 0 {
					t.Fatalf("distinct %d trial %d: scratch weight %v left on link %d", distinct, trial, a, l)
				}
			}
		}
	}
}
