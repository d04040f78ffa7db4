package flow

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// The interface the runner declares for a collective engine; Collectives must satisfy it.
type collectiveLauncher interface {
	Launch(at sim.Time, spec collective.Spec, comm collective.Comm, name string, done func(now sim.Time)) error
}

var _ collectiveLauncher = (*Collectives)(nil)

const (
	testRate = 100 * sim.Gbps
	testLat  = 2 * sim.Microsecond
)

// crossbarColls returns a simulation seeded seed, a Net on an ideal crossbar of hosts hosts
// (testRate links, testLat latency) and Collectives on it with cfg.
func crossbarColls(t *testing.T, hosts int, seed uint64, cfg CollConfig) (*sim.Sim, *Net, *Collectives) {
	t.Helper()
	s := sim.New(seed)
	x, err := NewCrossbar(hosts, testLat)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(s, x.Capacities(float64(testRate)), Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCollectives(n, x, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, n, c
}

// crossbarRun launches each spec at 0 on hosts 0..Ranks-1 (offset by its index x Ranks when
// disjoint) of a crossbar of rate testRate and latency testLat, and returns the results.
func crossbarRun(t *testing.T, hosts int, specs []collective.Spec, disjoint bool) ([]CollResult, *Net) {
	t.Helper()
	s, n, c := crossbarColls(t, hosts, 1, CollConfig{})
	done := 0
	for i, sp := range specs {
		first := 0
		if disjoint {
			first = i * sp.Ranks
		}
		comm, err := collective.RangeComm(first, sp.Ranks, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Launch(0, sp, comm, "", func(sim.Time) { done++ }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	if err := c.Incomplete(); err != nil {
		t.Fatal(err)
	}
	if done != len(specs) || c.Running() != 0 {
		t.Fatalf("%d of %d done callbacks, %d running", done, len(specs), c.Running())
	}
	return c.Results(), n
}

func model() collective.Model { return collective.Model{Latency: testLat, Rate: testRate} }

func spec(op collective.Collective, algo collective.Algorithm, n int, bytes int64) collective.Spec {
	sp := collective.NewSpec(op, n, bytes)
	sp.Algo = algo
	return sp
}

func within(got, want sim.Time, rel float64) bool {
	return math.Abs(float64(got-want)) <= rel*float64(want)+2
}

// TestCollectivesMatchAlphaBeta: on an ideal crossbar (one uplink and one downlink of rate B
// per host) every expansion reproduces the textbook alpha-beta form (collective.AlphaBeta,
// Thakur et al. 2005) to the picosecond's rounding, and the ring ones the pipelined form
// (collective.Pipelined) within 1% at large sizes.
func TestCollectivesMatchAlphaBeta(t *testing.T) {
	hier := spec(collective.AllReduce, collective.Hierarchical, 32, 64<<20)
	hier.Inner, hier.Outer = 8, 4
	hier1 := spec(collective.AllReduce, collective.Hierarchical, 8, 64<<20)
	hier1.Inner, hier1.Outer = 1, 8
	hier8 := hier1
	hier8.Inner, hier8.Outer = 8, 1
	hierRS := hier
	hierRS.Op = collective.ReduceScatter
	hierAG := hier
	hierAG.Op, hierAG.Inner, hierAG.Outer = collective.AllGather, 4, 8
	cases := []struct {
		sp        collective.Spec
		rel       float64 // tolerance against AlphaBeta
		pipelined bool    // also within 1% of Pipelined
	}{
		{spec(collective.AllReduce, collective.Ring, 2, 1<<20), 0, true},
		{spec(collective.AllReduce, collective.Ring, 8, 64<<20), 0, true},
		{spec(collective.AllReduce, collective.Ring, 64, 1<<30), 0, true},
		{spec(collective.AllReduce, collective.Ring, 5, 1000003), 1e-6, false}, // bytes rounded to whole bytes
		{spec(collective.ReduceScatter, collective.Ring, 16, 256<<20), 0, true},
		{spec(collective.AllGather, collective.Ring, 16, 256<<20), 0, true},
		{spec(collective.AllReduce, collective.HalvingDoubling, 16, 64<<20), 0, false},
		{spec(collective.AllReduce, collective.HalvingDoubling, 12, 64<<20), 0, false},
		{spec(collective.ReduceScatter, collective.HalvingDoubling, 8, 64<<20), 0, false},
		{spec(collective.AllGather, collective.HalvingDoubling, 8, 64<<20), 0, false},
		{spec(collective.AllReduce, collective.RecursiveDoubling, 8, 1<<20), 0, false},
		{spec(collective.AllReduce, collective.RecursiveDoubling, 6, 1<<20), 0, false},
		{hier, 0, false},
		{hier1, 0, false},
		{hier8, 0, false},
		{hierRS, 0, false},
		{hierAG, 0, false},
		{spec(collective.SendRecv, collective.Direct, 2, 1<<20), 0, true},
	}
	for _, tc := range cases {
		sp := tc.sp
		t.Run(fmt.Sprintf("%v_%v_%d_%d", sp.Op, sp.Algo, sp.Ranks, sp.Bytes), func(t *testing.T) {
			if sp.Op == collective.SendRecv {
				sp.Root, sp.Peer = 0, 1
			}
			res, _ := crossbarRun(t, sp.Ranks, []collective.Spec{sp}, false)
			got := res[0].Time()
			ab, err := collective.AlphaBeta(sp, model())
			if err != nil {
				t.Fatal(err)
			}
			if !within(got, ab, tc.rel) {
				t.Errorf("flow model %v, AlphaBeta %v (%+.4f%%)", got, ab, 100*(float64(got)/float64(ab)-1))
			}
			if tc.pipelined {
				pl, err := collective.Pipelined(sp, model())
				if err != nil {
					t.Fatal(err)
				}
				if !within(got, pl, 0.01) {
					t.Errorf("flow model %v, Pipelined %v (%+.3f%%)", got, pl, 100*(float64(got)/float64(pl)-1))
				}
			}
		})
	}
}

// TestTreeBetweenBounds: the double binary tree's flows (every tree edge busy at once) cannot
// all run at the rate AlphaBeta's 2S x 8 / B assumes: max-min sharing does not minimise the
// makespan, and ranks that are interior in one tree load their uplink and downlink with 2S
// against lighter neighbours. The flow model lands between AlphaBeta and the chunk-level
// schedule on collective.Ideal (which the collective package documents at 75-80% of the
// bandwidth term).
func TestTreeBetweenBounds(t *testing.T) {
	for _, n := range []int{7, 16} {
		sp := spec(collective.AllReduce, collective.Tree, n, 64<<20)
		res, _ := crossbarRun(t, n, []collective.Spec{sp}, false)
		ab, _ := collective.AlphaBeta(sp, model())
		ideal, err := collective.RunIdeal(sp, model(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := res[0].Time(); got < ab || got > ideal.Time() {
			t.Errorf("n=%d: flow model %v, want between AlphaBeta %v and Ideal %v", n, got, ab, ideal.Time())
		}
	}
}

// TestChainCollectives: broadcast and reduce are the pipelined chain: S x 8 / B + (n-1) a,
// collective.Pipelined's large-message limit (AlphaBeta's chain form is unpipelined).
func TestChainCollectives(t *testing.T) {
	for _, op := range []collective.Collective{collective.Broadcast, collective.Reduce} {
		sp := spec(op, collective.Ring, 8, 1<<30)
		sp.Root = 3
		res, _ := crossbarRun(t, 8, []collective.Spec{sp}, false)
		want := testRate.TxTime(sp.Bytes) + 7*testLat
		if got := res[0].Time(); !within(got, want, 0) {
			t.Errorf("%v: %v, want %v", op, got, want)
		}
		pl, _ := collective.Pipelined(sp, model())
		if got := res[0].Time(); !within(got, pl, 0.01) {
			t.Errorf("%v: %v, Pipelined %v", op, got, pl)
		}
	}
}

// TestSendRecvShift: a ring shift (every rank to the next, nccl-tests' sendrecv_perf) on a
// crossbar takes one pair's time, S x 8 / B + a, at every rank count: each NIC sends and
// receives S at once.
func TestSendRecvShift(t *testing.T) {
	for _, n := range []int{2, 3, 8, 64} {
		sp := spec(collective.SendRecv, collective.Direct, n, 256<<20)
		sp.Peer = collective.ShiftPeer
		res, _ := crossbarRun(t, n, []collective.Spec{sp}, false)
		want := testRate.TxTime(sp.Bytes) + testLat
		if got := res[0].Time(); !within(got, want, 0) {
			t.Errorf("n=%d: %v, want %v", n, got, want)
		}
	}
}

// TestRingDoublingBytes: doubling S doubles the bandwidth term and keeps the latency term.
func TestRingDoublingBytes(t *testing.T) {
	const n = 16
	lat := 2 * (n - 1) * testLat
	var prev sim.Time
	for i, S := range []int64{1 << 24, 1 << 25, 1 << 26} {
		res, _ := crossbarRun(t, n, []collective.Spec{spec(collective.AllReduce, collective.Ring, n, S)}, false)
		bw := res[0].Time() - lat
		if i > 0 && math.Abs(float64(bw)-2*float64(prev)) > 4 {
			t.Errorf("S=%d: bandwidth term %v, want twice %v", S, bw, prev)
		}
		prev = bw
	}
}

// TestAllToAllCrossbar: grouped, every pair at once; each host's uplink carries (n-1)/n S,
// so the all-to-all takes (n-1)/n S x 8 / B + a. With a matrix, the busiest uplink or
// downlink decides. Pairwise runs n-1 steps, each as long as its largest pair's bytes plus a
// (collective.AlphaBeta's pairwise form, exact on a crossbar).
func TestAllToAllCrossbar(t *testing.T) {
	for _, n := range []int{2, 5, 16} {
		S := int64(n) << 20
		res, _ := crossbarRun(t, n, []collective.Spec{spec(collective.AllToAll, collective.Grouped, n, S)}, false)
		want := testRate.TxTime(S/int64(n)*int64(n-1)) + testLat
		if got := res[0].Time(); !within(got, want, 0) {
			t.Errorf("grouped n=%d: %v, want %v", n, got, want)
		}
		if res[0].Flows != n*(n-1) {
			t.Errorf("grouped n=%d: %d flows, want %d", n, res[0].Flows, n*(n-1))
		}
		res, _ = crossbarRun(t, n, []collective.Spec{spec(collective.AllToAll, collective.Pairwise, n, S)}, false)
		want = sim.Time(n-1) * (testRate.TxTime(S/int64(n)) + testLat)
		if got := res[0].Time(); !within(got, want, 1e-8) {
			t.Errorf("pairwise n=%d: %v, want %v", n, got, want)
		}
		if res[0].Flows != n*(n-1) {
			t.Errorf("pairwise n=%d: %d flows, want %d", n, res[0].Flows, n*(n-1))
		}
	}

	// Matrix: rank 0 sends 8 MiB to each other rank, the rest 1 MiB: rank 0's uplink carries
	// 3 x 8 MiB, the most of any link; pairwise, rank 0's 8 MiB sets each of the 3 steps.
	sp := spec(collective.AllToAll, collective.Grouped, 4, 0)
	sp.Matrix = [][]int64{{0, 8 << 20, 8 << 20, 8 << 20}, {1 << 20, 0, 1 << 20, 1 << 20}, {1 << 20, 1 << 20, 0, 1 << 20}, {1 << 20, 1 << 20, 1 << 20, 0}}
	res, _ := crossbarRun(t, 4, []collective.Spec{sp}, false)
	want := testRate.TxTime(24<<20) + testLat
	if got := res[0].Time(); !within(got, want, 0) {
		t.Errorf("grouped matrix: %v, want %v", got, want)
	}
	sp.Algo = collective.Pairwise
	res, _ = crossbarRun(t, 4, []collective.Spec{sp}, false)
	want = 3 * (testRate.TxTime(8<<20) + testLat)
	if got := res[0].Time(); !within(got, want, 1e-8) {
		t.Errorf("pairwise matrix: %v, want %v", got, want)
	}
}

// TestConcurrentCollectives: two ring all-reduces on disjoint hosts take as long as one; on
// the same hosts they share every link and take twice the bandwidth term.
func TestConcurrentCollectives(t *testing.T) {
	sp := spec(collective.AllReduce, collective.Ring, 8, 64<<20)
	one, _ := crossbarRun(t, 16, []collective.Spec{sp}, false)
	dis, _ := crossbarRun(t, 16, []collective.Spec{sp, sp}, true)
	for i := range dis {
		if dis[i].Time() != one[0].Time() {
			t.Errorf("disjoint #%d: %v, alone %v", i, dis[i].Time(), one[0].Time())
		}
	}
	same, _ := crossbarRun(t, 8, []collective.Spec{sp, sp}, false)
	lat := 14 * testLat
	want := 2*(one[0].Time()-lat) + lat
	for i := range same {
		if !within(same[i].Time(), want, 0) {
			t.Errorf("shared #%d: %v, want %v", i, same[i].Time(), want)
		}
	}
}

// TestChannelsSameOnCrossbar: splitting over channels changes nothing on a crossbar (every key
// takes the same path).
func TestChannelsSameOnCrossbar(t *testing.T) {
	sp := spec(collective.AllReduce, collective.Ring, 8, 64<<20)
	one, _ := crossbarRun(t, 8, []collective.Spec{sp}, false)
	sp.Channels = 4
	four, _ := crossbarRun(t, 8, []collective.Spec{sp}, false)
	if !within(four[0].Time(), one[0].Time(), 0) {
		t.Errorf("4 channels %v, 1 channel %v", four[0].Time(), one[0].Time())
	}
}

// TestCollectiveDeterminism: the same launches give identical results and link bytes.
func TestCollectiveDeterminism(t *testing.T) {
	hier := spec(collective.AllReduce, collective.Hierarchical, 16, 10<<20+7)
	hier.Inner, hier.Outer = 4, 4
	specs := []collective.Spec{
		spec(collective.AllReduce, collective.Ring, 16, 123456789),
		spec(collective.AllToAll, collective.Pairwise, 16, 1<<20+3),
		spec(collective.AllToAll, collective.Grouped, 16, 1<<20+5),
		spec(collective.AllReduce, collective.Tree, 16, 1<<24),
		hier,
	}
	a, an := crossbarRun(t, 16, specs, false)
	b, bn := crossbarRun(t, 16, specs, false)
	for i := range a {
		if a[i].Time() != b[i].Time() || a[i].Flows != b[i].Flows {
			t.Errorf("collective %d: %v vs %v", i, a[i], b[i])
		}
	}
	la, lb := an.LinkBytes(nil), bn.LinkBytes(nil)
	for l := range la {
		if la[l] != lb[l] {
			t.Fatalf("link %d: %v vs %v bytes", l, la[l], lb[l])
		}
	}
	if an.Stats().Recomputes != bn.Stats().Recomputes {
		t.Errorf("recomputes %d vs %d", an.Stats().Recomputes, bn.Stats().Recomputes)
	}
}

// failedRouter routes like a crossbar but sends traffic from host 2 through an extra link
// (index 2 x hosts), which the test sets to capacity 0, and has no path into host 5.
type failedRouter struct {
	x     *Crossbar
	hosts int
	links [3]int32
}

func (r *failedRouter) Paths(src, dst int, key uint64, buf []Path) ([]Path, sim.Time, error) {
	if dst == 5 {
		return buf, 0, fmt.Errorf("no route to host 5")
	}
	p, lat, err := r.x.Paths(src, dst, key, buf)
	if err != nil || src != 2 {
		return p, lat, err
	}
	r.links = [3]int32{p[0].Links[0], int32(2 * r.hosts), p[0].Links[1]}
	p[0].Links = r.links[:]
	return p, lat, nil
}

// TestCollectiveStall: a ring whose path crosses a dead link never completes; Incomplete and
// the error hook name the flow's hosts and the dead link. A router error is reported too.
func TestCollectiveStall(t *testing.T) {
	const hosts = 8
	s := sim.New(1)
	x, _ := NewCrossbar(hosts, testLat)
	caps := append(x.Capacities(float64(testRate)), 0)
	n, err := New(s, caps, Config{})
	if err != nil {
		t.Fatal(err)
	}
	var reported []string
	c, err := NewCollectives(n, &failedRouter{x: x, hosts: hosts}, CollConfig{OnError: func(_ sim.Time, err error) {
		reported = append(reported, err.Error())
	}})
	if err != nil {
		t.Fatal(err)
	}
	comm, _ := collective.RangeComm(0, 4, 1)
	if err := c.Launch(0, spec(collective.AllReduce, collective.Ring, 4, 1<<20), comm, "stuck", nil); err != nil {
		t.Fatal(err)
	}
	comm2, _ := collective.RangeComm(4, 4, 1)
	if err := c.Launch(0, spec(collective.AllReduce, collective.Ring, 4, 1<<20), comm2, "unroutable", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	err = c.Incomplete()
	if err == nil {
		t.Fatal("Incomplete() = nil")
	}
	msg := err.Error()
	for _, want := range []string{"stuck: phase 1 of 1", "host 2 -> host 3", fmt.Sprintf("link %d", 2*hosts), "unroutable", "no route to host 5"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Incomplete() = %q; missing %q", msg, want)
		}
	}
	if len(reported) != 2 {
		t.Errorf("hook got %d errors, want 2: %q", len(reported), reported)
	}
	if c.Err() == nil {
		t.Error("Err() = nil")
	}
}

// TestLaunchErrors: invalid launches are refused.
func TestLaunchErrors(t *testing.T) {
	s := sim.New(1)
	x, _ := NewCrossbar(4, 0)
	n, _ := New(s, x.Capacities(1e9), Config{})
	c, _ := NewCollectives(n, x, CollConfig{})
	comm, _ := collective.RangeComm(0, 4, 1)
	if err := c.Launch(0, spec(collective.AllReduce, collective.Ring, 3, 1), comm, "", nil); err == nil {
		t.Error("size mismatch: no error")
	}
	if err := c.Launch(0, spec(collective.AllReduce, collective.Ring, 4, -1), comm, "", nil); err == nil {
		t.Error("negative bytes: no error")
	}
	one, _ := collective.RangeComm(0, 1, 1)
	done := false
	if err := c.Launch(0, spec(collective.AllReduce, collective.Ring, 1, 1<<20), one, "", func(sim.Time) { done = true }); err != nil {
		t.Fatal(err)
	}
	if err := s.Drain(sim.MaxTime); err != nil || !done {
		t.Errorf("one rank: err %v, done %v", err, done)
	}
}

// TestSimultaneousLaunchesBatch: 16 collectives launched for the same instant (16 events)
// start with one or two recomputations, not 16, and a flow cap halves the rate.
func TestSimultaneousLaunchesBatch(t *testing.T) {
	const groups, size = 16, 8
	s := sim.New(1)
	x, _ := NewCrossbar(groups*size, testLat)
	n, _ := New(s, x.Capacities(float64(testRate)), Config{})
	c, _ := NewCollectives(n, x, CollConfig{FlowCap: float64(testRate) / 2})
	sp := spec(collective.AllReduce, collective.Ring, size, 64<<20)
	for g := range groups {
		comm, _ := collective.RangeComm(g*size, size, 1)
		if err := c.Launch(sim.Microsecond, sp, comm, fmt.Sprintf("dp%d", g), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	if err := c.Incomplete(); err != nil {
		t.Fatal(err)
	}
	// One recomputation when the flows start, one when they all complete together.
	if r := n.Stats().Recomputes; r > 3 {
		t.Errorf("%d recomputations, want at most 3", r)
	}
	half := collective.Model{Latency: testLat, Rate: testRate / 2}
	want, _ := collective.AlphaBeta(sp, half)
	for _, r := range c.Results() {
		if !within(r.Time(), want, 0) {
			t.Errorf("%s: %v, want %v (capped at half rate)", r.Name, r.Time(), want)
		}
	}
}

// TestCollectivesForget: with CollConfig.Forget a chain of collectives, each launched from
// the last one's done callback (as a training step launches its next call), runs exactly as
// without it (the same end times and link bytes) while holding a few collectives in memory
// instead of every one; Results lists only those not released; a Send launched into a
// reused slot keeps its own key.
func TestCollectivesForget(t *testing.T) {
	run := func(forget bool) (ends []sim.Time, held, listed int, bytes []float64) {
		s, n, c := crossbarColls(t, 8, 3, CollConfig{Forget: forget})
		var err error
		ring := spec(collective.AllReduce, collective.Ring, 4, 1<<20)
		comms := make([]collective.Comm, 2)
		for i := range comms {
			if comms[i], err = collective.RangeComm(4*i, 4, 1); err != nil {
				t.Fatal(err)
			}
		}
		var next func(chain, k int) func(now sim.Time)
		next = func(chain, k int) func(now sim.Time) {
			return func(now sim.Time) {
				ends = append(ends, now)
				if k == 50 {
					return
				}
				var err error
				if k%3 == 2 {
					err = c.Send(now, 4*chain, 4*chain+3, int64(k)<<14, uint64(k), "", next(chain, k+1))
				} else {
					err = c.Launch(now, ring, comms[chain], "", next(chain, k+1))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		for chain := range comms {
			if err := c.Launch(0, ring, comms[chain], "", next(chain, 1)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Drain(sim.MaxTime); err != nil {
			t.Fatal(err)
		}
		if err := c.Incomplete(); err != nil {
			t.Fatal(err)
		}
		return ends, len(c.insts), len(c.Results()), n.LinkBytes(nil)
	}
	endA, heldA, listedA, bytesA := run(false)
	endB, heldB, listedB, bytesB := run(true)
	if !slices.Equal(endA, endB) || !slices.Equal(bytesA, bytesB) {
		t.Errorf("Forget changed the run: ends %v vs %v", endA, endB)
	}
	if len(endA) != 100 || heldA != 100 || listedA != 100 {
		t.Errorf("without Forget: %d ends, %d held, %d listed; want 100 each", len(endA), heldA, listedA)
	}
	if heldB > 4 || listedB != 0 {
		t.Errorf("with Forget: %d collectives held, %d listed; want at most 4 held and none listed", heldB, listedB)
	}
}

// LaunchNamed builds the name only when it is read (Results, Incomplete, errors), and the
// run is the one Launch gives.
func TestLaunchNamedLazy(t *testing.T) {
	sp := spec(collective.AllReduce, collective.Ring, 4, 1<<20)
	comm, err := collective.RangeComm(0, 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	run := func(named bool) ([]CollResult, int) {
		s, _, c := crossbarColls(t, 4, 1, CollConfig{})
		calls := 0
		name := func() string { calls++; return "lazy" }
		for i := 0; i < 3; i++ {
			var err error
			switch {
			case !named:
				err = c.Launch(0, sp, comm, []string{"lazy", "", "lazy"}[i], nil)
			case i == 1:
				err = c.LaunchNamed(0, sp, comm, nil, nil) // the default name
			default:
				err = c.LaunchNamed(0, sp, comm, name, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Drain(sim.MaxTime); err != nil {
			t.Fatal(err)
		}
		if calls != 0 {
			t.Fatalf("name built %d times before anything read it", calls)
		}
		res := c.Results()
		c.Results()
		return res, calls
	}
	want, _ := run(false)
	got, calls := run(true)
	if calls != 2 {
		t.Fatalf("name built %d times for 2 named launches read twice; want once each", calls)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("LaunchNamed results %v\nLaunch results %v", got, want)
	}
	// A refused launch names the collective.
	_, _, c := crossbarColls(t, 4, 1, CollConfig{})
	bad, _ := collective.RangeComm(0, 3, 1)
	if err := c.LaunchNamed(0, sp, bad, func() string { return "mine" }, nil); err == nil || !strings.Contains(err.Error(), `"mine"`) {
		t.Fatalf("error %v; want one naming \"mine\"", err)
	}
}

// TestCollChargeMatchesScan: a collective's bottleneck times (coll.charge) are the same
// list, in the same order with the same sums, whether its links are scanned or indexed
// (past bottScan of them), for 0 to 200 distinct links charged in random order, and again
// after the collective's memory is reused (its index cleared, not dropped).
func TestCollChargeMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	in := &coll{}
	for _, links := range []int{0, 1, bottScan - 1, bottScan, bottScan + 1, 50, 200} {
		for reuse := range 2 {
			if reuse == 0 {
				in = &coll{}
			} else { // as launch reuses a released collective
				clear(in.bidx)
				*in = coll{bott: in.bott[:0], bidx: in.bidx}
			}
			var want []linkTime
			for range 5 * links {
				l, d := rng.IntN(links+1)*7, sim.Time(1+rng.IntN(1000))
				found := false
				for i := range want {
					if want[i].link == l {
						want[i].t += d
						found = true
						break
					}
				}
				if !found {
					want = append(want, linkTime{link: l, t: d})
				}
				in.charge(l, d)
			}
			if !slices.Equal(in.bott, want) {
				t.Fatalf("%d links, reuse %d: bottleneck times %v, want %v", links, reuse, in.bott, want)
			}
			if indexed := in.bidx != nil; indexed != (len(want) > bottScan) && reuse == 0 {
				t.Errorf("%d links (%d charged): indexed %v, want %v", links, len(want), indexed, len(want) > bottScan)
			}
		}
	}
}
