package collective

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// The reference network of the timing tests: 400 Gb/s NICs (B = 50 GB/s), a = 5 us.
var refModel = Model{Latency: 5 * sim.Microsecond, Rate: 400 * sim.Gbps}

func run(t *testing.T, sp Spec, m Model) Result {
	t.Helper()
	r, err := RunIdeal(sp, m, 1)
	if err != nil {
		t.Fatalf("%s/%s n=%d S=%d: %v", sp.Op, sp.Algo, sp.Ranks, sp.Bytes, err)
	}
	return r
}

func relErr(got, want sim.Time) float64 {
	return math.Abs(float64(got)-float64(want)) / float64(want)
}

func spec(op Collective, algo Algorithm, n int, bytes int64) Spec {
	sp := NewSpec(op, n, bytes)
	sp.Algo = algo
	return sp
}

// TestLargeAllReduceMatchesClosedForms: n = 64, S = 1 GiB, B = 400 Gb/s, a = 5 us.
//
// The textbook form for the ring, 2(n-1)a + 2(n-1)/n S/B = 42.91 ms [Thakur et al. 2005 §4.4],
// charges one latency per step; the chunked ring overlaps them: with 32 loops of 64 chunks of
// 512 KiB the NIC never idles, so the honest form is Pipelined's max(K(a+c/B) + (P-1)c/B,
// W/B + a) = 2(n-1)/n S/B + a = 42.28 ms, which the simulation must match to 0.01%, while
// staying within 2% of the textbook form. Halving-doubling is checked against
// 2 lg(n) a + 2(n-1)/n S/B [Rabenseifner 2004]; busbw (nccl-tests PERFORMANCE.md) against B.
func TestLargeAllReduceMatchesClosedForms(t *testing.T) {
	const n, S = 64, 1 << 30
	B := float64(refModel.Rate) / 8 / 1e9 // GB/s
	for _, tc := range []struct {
		algo      Algorithm
		pipelined bool
	}{{Ring, true}, {HalvingDoubling, false}} {
		t.Run(tc.algo.String(), func(t *testing.T) {
			sp := spec(AllReduce, tc.algo, n, S)
			r := run(t, sp, refModel)
			ab, err := AlphaBeta(sp, refModel)
			if err != nil {
				t.Fatal(err)
			}
			row := NewRow(r.Spec, r.Time(), Float32)
			t.Logf("simulated %v, alpha-beta %v (%.2f%%), busbw %.2f GB/s of %.0f", r.Time(), ab, 100*relErr(r.Time(), ab), row.BusBW, B)
			if e := relErr(r.Time(), ab); e > 0.02 {
				t.Errorf("time %v is %.2f%% from the alpha-beta form %v; want within 2%%", r.Time(), 100*e, ab)
			}
			if math.Abs(row.BusBW-B)/B > 0.02 {
				t.Errorf("busbw %.2f GB/s; want within 2%% of %.0f", row.BusBW, B)
			}
			if tc.pipelined {
				pp, err := Pipelined(sp, refModel)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("pipelined closed form %v", pp)
				if e := relErr(r.Time(), pp); e > 1e-4 {
					t.Errorf("time %v is %.4f%% from the pipelined form %v; want within 0.01%%", r.Time(), 100*e, pp)
				}
			}
		})
	}
}

// TestTreeLargeSize pins the double binary tree's large-message efficiency on Ideal: busbw
// between 70% and 100% of the NIC rate (it is about 75%: see AlphaBeta), not far from the ring.
func TestTreeLargeSize(t *testing.T) {
	r := run(t, spec(AllReduce, Tree, 16, 256<<20), refModel)
	bus := NewRow(r.Spec, r.Time(), Float32).BusBW
	t.Logf("tree 256 MiB on 16 ranks: %v, busbw %.2f GB/s", r.Time(), bus)
	if bus < 35 || bus > 50 {
		t.Errorf("tree busbw %.2f GB/s; want 35-50 (70-100%% of 50)", bus)
	}
}

// TestPipelinedFormExact checks Pipelined against the simulation across regimes: one chunk
// per rank (P = 1, where it equals the textbook alpha-beta form), latency-bound pipelines and
// bandwidth-bound ones, for ring all-reduce, reduce-scatter, all-gather, the broadcast and
// reduce chains and send/recv.
func TestPipelinedFormExact(t *testing.T) {
	cases := []struct {
		name  string
		sp    Spec
		chunk int64
		ch    int
	}{
		{"ring AR P=1", spec(AllReduce, Ring, 8, 8<<20), 1 << 20, 1},
		{"ring AR latency-bound", spec(AllReduce, Ring, 16, 1<<20), 4 << 10, 1},
		{"ring AR 4 channels", spec(AllReduce, Ring, 16, 256<<20), 512 << 10, 4},
		{"ring RS", spec(ReduceScatter, Ring, 12, 96<<20), 512 << 10, 1},
		{"ring AG", spec(AllGather, Ring, 12, 96<<20), 512 << 10, 2},
		{"broadcast chain", spec(Broadcast, Ring, 10, 64<<20), 512 << 10, 1},
		{"reduce chain", spec(Reduce, Ring, 10, 64<<20), 1 << 20, 1},
		{"send/recv", spec(SendRecv, Direct, 2, 64<<20), 512 << 10, 1},
		{"send/recv shift 2", spec(SendRecv, Direct, 2, 64<<20), 512 << 10, 1},
		{"send/recv shift 16", spec(SendRecv, Direct, 16, 64<<20), 512 << 10, 2},
		{"send/recv shift 7 latency-bound", spec(SendRecv, Direct, 7, 4<<10), 1 << 10, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp := tc.sp
			sp.ChunkBytes, sp.Channels = tc.chunk, tc.ch
			if sp.Op == SendRecv {
				sp.Root, sp.Peer = 0, 1
				if strings.Contains(tc.name, "shift") {
					// Every NIC sends and receives S at once (full duplex): the one pair's time.
					sp.Peer = ShiftPeer
				}
			}
			if sp.Op == Broadcast || sp.Op == Reduce {
				sp.Root = 3
			}
			r := run(t, sp, refModel)
			pp, err := Pipelined(sp, refModel)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("simulated %v, pipelined form %v", r.Time(), pp)
			if d := r.Time() - pp; d < -sim.Nanosecond || d > sim.Nanosecond {
				t.Errorf("simulated %v, closed form %v: off by %v", r.Time(), pp, d)
			}
			if sp.ChunkBytes*int64(sp.Ranks) >= sp.Bytes && sp.Op == AllReduce {
				ab, _ := AlphaBeta(sp, refModel)
				if d := r.Time() - ab; d < -sim.Nanosecond || d > sim.Nanosecond {
					t.Errorf("unpipelined: simulated %v, alpha-beta %v", r.Time(), ab)
				}
			}
		})
	}
}

// TestReduceCost: with a reduction throughput R, the unpipelined ring all-reduce costs
// Thakur's 2(n-1)a + 2(n-1)/n S/B + (n-1)/n S/R exactly (one reduction of S/n per
// reduce-scatter step on the critical path).
func TestReduceCost(t *testing.T) {
	m := refModel
	m.ReduceBytesPerSec = 100e9
	sp := spec(AllReduce, Ring, 4, 4<<20)
	sp.ChunkBytes = 1 << 20
	r := run(t, sp, m)
	ab, _ := AlphaBeta(sp, m)
	free := run(t, sp, refModel)
	if d := r.Time() - ab; d < -sim.Nanosecond || d > sim.Nanosecond {
		t.Errorf("with reductions: simulated %v, alpha-beta-gamma %v", r.Time(), ab)
	}
	if want := free.Time() + 3*sim.FromSeconds(float64(1<<20)/100e9); r.Time()-want > sim.Nanosecond || want-r.Time() > sim.Nanosecond {
		t.Errorf("reductions added %v, want 3 x 1 MiB / 100 GB/s", r.Time()-free.Time())
	}
}

// TestDoublingSize: doubling S in the bandwidth-bound regime doubles the time (ratio in
// [1.9, 2.1]) and keeps busbw within 5%.
func TestDoublingSize(t *testing.T) {
	for _, algo := range []Algorithm{Ring, HalvingDoubling, Tree, Hierarchical} {
		t.Run(algo.String(), func(t *testing.T) {
			a := spec(AllReduce, algo, 16, 256<<20)
			a.Inner, a.Outer = 4, 4
			b := a
			b.Bytes *= 2
			ra, rb := run(t, a, refModel), run(t, b, refModel)
			ratio := float64(rb.Time()) / float64(ra.Time())
			ba, bb := NewRow(ra.Spec, ra.Time(), Float32).BusBW, NewRow(rb.Spec, rb.Time(), Float32).BusBW
			t.Logf("%v -> %v (x%.3f), busbw %.2f -> %.2f GB/s", ra.Time(), rb.Time(), ratio, ba, bb)
			if ratio < 1.9 || ratio > 2.1 {
				t.Errorf("time ratio %.3f; want 1.9-2.1", ratio)
			}
			if math.Abs(bb-ba)/ba > 0.05 {
				t.Errorf("busbw moved from %.2f to %.2f GB/s; want within 5%%", ba, bb)
			}
		})
	}
}

// TestSmallSizeScaling: at a latency-bound size the double binary tree's time grows like
// log2 n (2 x depth sequential hops) and the ring's like n (2(n-1) hops), checked at
// n = 8, 16, 32, 64 against the step counts.
func TestSmallSizeScaling(t *testing.T) {
	const S = 32 << 10
	ns := []int{8, 16, 32, 64}
	var tree, ring []sim.Time
	for _, n := range ns {
		tree = append(tree, run(t, spec(AllReduce, Tree, n, S), refModel).Time())
		ring = append(ring, run(t, spec(AllReduce, Ring, n, S), refModel).Time())
	}
	for i, n := range ns {
		perHopTree := float64(tree[i]) / float64(2*TreeDepth(n))
		perHopRing := float64(ring[i]) / float64(2*(n-1))
		t.Logf("n=%2d tree %v (depth %d, %.2fus/hop)  ring %v (%.2fus/hop)", n, tree[i], TreeDepth(n), perHopTree/1e6, ring[i], perHopRing/1e6)
		// Both are latency-bound: each sequential hop costs about a (5 us) plus a little
		// serialisation, so time / hops must stay near a.
		if perHopTree < 5e6 || perHopTree > 7.5e6 {
			t.Errorf("n=%d: tree takes %.2f us per level hop; want a..1.5a", n, perHopTree/1e6)
		}
		if perHopRing < 5e6 || perHopRing > 6e6 {
			t.Errorf("n=%d: ring takes %.2f us per step; want a..1.2a", n, perHopRing/1e6)
		}
	}
	tr := float64(tree[3]) / float64(tree[0])
	rr := float64(ring[3]) / float64(ring[0])
	t.Logf("n 8 -> 64: tree x%.2f (log ratio %.2f), ring x%.2f (linear ratio %.2f)", tr, 6.0/3, rr, 63.0/7)
	if tr > 2.6 {
		t.Errorf("tree time grew x%.2f from 8 to 64 ranks; want about x2 (log n)", tr)
	}
	if rr < 7 {
		t.Errorf("ring time grew x%.2f from 8 to 64 ranks; want about x9 (n)", rr)
	}
}

// TestHierarchicalLayouts: the 2-D ring of rings on 16 ranks as 2x8 and 8x2 moves the same
// bytes per rank (2(I-1)/I S + 2(O-1)/O S/I = 1.875 S either way) in the same number of
// steps, so on identical links the two layouts finish within 3% of each other and of the
// alpha-beta form.
func TestHierarchicalLayouts(t *testing.T) {
	var times []sim.Time
	for _, l := range [][2]int{{2, 8}, {8, 2}} {
		sp := spec(AllReduce, Hierarchical, 16, 512<<20)
		sp.Inner, sp.Outer = l[0], l[1]
		r := run(t, sp, refModel)
		ab, _ := AlphaBeta(sp, refModel)
		t.Logf("%dx%d: %v (alpha-beta %v)", l[0], l[1], r.Time(), ab)
		if e := relErr(r.Time(), ab); e > 0.03 {
			t.Errorf("%dx%d: %v is %.2f%% from the alpha-beta form %v", l[0], l[1], r.Time(), 100*e, ab)
		}
		times = append(times, r.Time())
	}
	if e := relErr(times[0], times[1]); e > 0.03 {
		t.Errorf("2x8 took %v, 8x2 %v: %.2f%% apart; want within 3%%", times[0], times[1], 100*e)
	}
}

// TestOtherAlgorithmsNearClosedForm keeps every algorithm honest against its alpha-beta form
// in the regime the form describes. Non-power-of-two counts fold (MPICH): the ranks outside
// the fold start at once and their later messages reach a folded rank while it still
// receives the previous step, an incast the sequential alpha-beta form does not charge; and
// at large sizes the folded ranks' NICs carry 2.75 S against 1.75 S for the others. Their
// tolerances say so.
func TestOtherAlgorithmsNearClosedForm(t *testing.T) {
	cases := []struct {
		name string
		sp   Spec
		tol  float64
	}{
		{"recursive doubling pow2 small", spec(AllReduce, RecursiveDoubling, 16, 16<<10), 0.01},
		{"recursive doubling n=12", spec(AllReduce, RecursiveDoubling, 12, 16<<10), 0.02},
		{"halving-doubling n=12", spec(AllReduce, HalvingDoubling, 12, 96<<20), 0.08},
		{"halving-doubling RS", spec(ReduceScatter, HalvingDoubling, 16, 256<<20), 0.02},
		{"halving-doubling AG", spec(AllGather, HalvingDoubling, 16, 256<<20), 0.02},
		{"pairwise all-to-all", spec(AllToAll, Pairwise, 16, 256<<20), 0.02},
		{"pairwise all-to-all small", spec(AllToAll, Pairwise, 16, 64<<10), 0.02},
		{"grouped all-to-all", spec(AllToAll, Grouped, 16, 256<<20), 0.01},
		{"grouped all-to-all small", spec(AllToAll, Grouped, 16, 64<<10), 0.02},
		{"grouped all-to-all n=2", spec(AllToAll, Grouped, 2, 64<<20), 0.01},
		{"grouped all-to-all n=33", spec(AllToAll, Grouped, 33, 256<<20), 0.01},
		{"grouped all-to-all 2 channels", func() Spec { sp := spec(AllToAll, Grouped, 12, 96<<20); sp.Channels = 2; return sp }(), 0.01},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.sp, refModel)
			ab, err := AlphaBeta(tc.sp, refModel)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("simulated %v, alpha-beta %v (%.2f%%)", r.Time(), ab, 100*relErr(r.Time(), ab))
			if e := relErr(r.Time(), ab); e > tc.tol {
				t.Errorf("simulated %v is %.2f%% from %v; want within %.0f%%", r.Time(), 100*e, ab, 100*tc.tol)
			}
		})
	}
}

// TestDeterminism: the same inputs give identical per-rank completion times, and so do
// separate executors in one process.
func TestDeterminism(t *testing.T) {
	mat := make([][]int64, 9)
	for i := range mat {
		mat[i] = make([]int64, 9)
		for j := range mat[i] {
			mat[i][j] = int64((i*7+j*13)%11) << 16
		}
	}
	a2a := spec(AllToAll, Pairwise, 9, 0)
	a2a.Matrix = mat
	g2a := a2a
	g2a.Algo = Grouped
	tree := spec(AllReduce, Tree, 13, 40<<20)
	tree.Channels = 2
	for _, sp := range []Spec{tree, a2a, g2a, spec(AllReduce, HalvingDoubling, 11, 20<<20)} {
		a, b := run(t, sp, refModel), run(t, sp, refModel)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s/%s: two runs differ: %v vs %v", sp.Op, sp.Algo, a.RankEnd, b.RankEnd)
		}
	}
}

// newIdealExec wires an Ideal network and an executor over hosts hosts.
func newIdealExec(t *testing.T, hosts int, m Model) (*sim.Sim, *Ideal, *Executor) {
	t.Helper()
	s := sim.New(7)
	net, err := NewIdeal(s, IdealConfig{Hosts: hosts, Rate: m.Rate, Latency: m.Latency})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := NewExecutor(s, net, ExecConfig{Hosts: hosts, ReduceBytesPerSec: m.ReduceBytesPerSec})
	if err != nil {
		t.Fatal(err)
	}
	net.SetSink(ex.Delivered)
	return s, net, ex
}

// TestConcurrentComms: two communicators on disjoint hosts do not slow each other; two on the
// same hosts share the NICs and take about twice as long; per-rank completion times are
// recorded for each.
func TestConcurrentComms(t *testing.T) {
	sch, err := Build(spec(AllReduce, Ring, 8, 64<<20))
	if err != nil {
		t.Fatal(err)
	}
	alone := run(t, sch.Spec(), refModel).Time()

	s, _, ex := newIdealExec(t, 16, refModel)
	even, _ := RangeComm(0, 8, 2)
	odd, _ := RangeComm(1, 8, 2)
	var done []int
	ex.cfg.OnDone = func(now sim.Time, id int) { done = append(done, id) }
	a, _ := ex.Launch(0, sch, even, "dp-even")
	b, _ := ex.Launch(0, sch, odd, "dp-odd")
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{a, b} {
		r, _ := ex.Result(id)
		if !r.Done || r.Time() != alone {
			t.Errorf("%s on disjoint hosts: %v, alone %v", r.Name, r.Time(), alone)
		}
		for k, e := range r.RankEnd {
			if e <= 0 || e > r.End {
				t.Errorf("%s rank %d ended at %v, outside (0, %v]", r.Name, k, e, r.End)
			}
		}
	}
	if len(done) != 2 {
		t.Errorf("OnDone called %d times, want 2", len(done))
	}

	s2, _, ex2 := newIdealExec(t, 8, refModel)
	c, _ := RangeComm(0, 8, 1)
	rev := make([]int, 8)
	for i := range rev {
		rev[i] = 7 - i
	}
	c2, _ := NewComm(rev)
	ex2.Launch(0, sch, c, "")
	ex2.Launch(0, sch, c2, "")
	if err := s2.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	for _, r := range ex2.Results() {
		ratio := float64(r.Time()) / float64(alone)
		t.Logf("%s sharing hosts: %v (x%.2f)", r.Name, r.Time(), ratio)
		if ratio < 1.8 || ratio > 2.2 {
			t.Errorf("%s sharing hosts took x%.2f the time alone; want about x2", r.Name, ratio)
		}
	}
	if !ex2.Done() || ex2.Stuck(10) != "" {
		t.Errorf("executor not done: %q", ex2.Stuck(10))
	}
}

// TestLaunchErrors: bad launches are errors naming the problem.
func TestLaunchErrors(t *testing.T) {
	sch, _ := Build(spec(AllReduce, Ring, 4, 1<<20))
	s, _, ex := newIdealExec(t, 8, refModel)
	three, _ := RangeComm(0, 3, 1)
	far, _ := RangeComm(5, 4, 1)
	ok, _ := RangeComm(0, 4, 1)
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"size", func() error { _, err := ex.Launch(0, sch, three, ""); return err }, "schedule is for 4 ranks"},
		{"host", func() error { _, err := ex.Launch(0, sch, far, ""); return err }, "comm.hosts[3] = 8"},
		{"nil", func() error { _, err := ex.Launch(0, nil, ok, ""); return err }, "nil schedule"},
	} {
		if err := tc.err(); err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	s.Run(sim.Microsecond)
	if _, err := ex.Launch(0, sch, ok, ""); err == nil || !contains(err.Error(), "must be >= now") {
		t.Errorf("launch in the past: %v", err)
	}
	if _, err := NewExecutor(s, &Ideal{}, ExecConfig{Hosts: 0}); err == nil {
		t.Errorf("hosts 0 accepted")
	}
	if _, err := NewExecutor(s, &Ideal{}, ExecConfig{Hosts: 1, ReduceBytesPerSec: math.NaN()}); err == nil {
		t.Errorf("NaN reduce_bps accepted")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
