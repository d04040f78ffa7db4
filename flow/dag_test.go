package flow

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// dagRun launches each spec at 0 on hosts 0..Ranks-1 of router r's Net (capacities caps)
// with the schedule model on, and returns the results and the Net.
func dagRun(t *testing.T, r Router, caps []float64, specs []collective.Spec, cfg CollConfig) ([]CollResult, *Net, *Collectives) {
	t.Helper()
	s := sim.New(1)
	n, err := New(s, caps, Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCollectives(n, r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.SetSchedules(1e9)
	for _, sp := range specs {
		comm, err := collective.RangeComm(0, sp.Ranks, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Launch(0, sp, comm, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	if err := c.Incomplete(); err != nil {
		t.Fatal(err)
	}
	return c.Results(), n, c
}

// dagCrossbar is dagRun on an ideal crossbar of hosts hosts (testRate, testLat).
func dagCrossbar(t *testing.T, hosts int, specs ...collective.Spec) []CollResult {
	t.Helper()
	x, err := NewCrossbar(hosts, testLat)
	if err != nil {
		t.Fatal(err)
	}
	res, _, _ := dagRun(t, x, x.Capacities(float64(testRate)), specs, CollConfig{})
	return res
}

// TestScheduleModelEqualsIdeal: where the schedule has every rank send one message and
// receive one at a time (power-of-two halving-doubling and recursive doubling of one loop,
// pairwise of one chunk per pair, and any schedule on two ranks, whose chunks queue on one
// connection; recursive doubling's fold on 6 ranks too), the
// flow level's run of the schedule on a crossbar is the schedule's run on collective.Ideal
// (one NIC of rate B per host, latency a) to the picosecond's rounding per message, and for
// the exchanges also the alpha-beta form (Thakur et al. 2005 §4.4, §3.4).
func TestScheduleModelEqualsIdeal(t *testing.T) {
	const chunk = 1 << 20
	hd := func(op collective.Collective, n int, S int64) collective.Spec {
		sp := spec(op, collective.HalvingDoubling, n, S)
		sp.ChunkBytes = chunk
		return sp
	}
	rd := spec(collective.AllReduce, collective.RecursiveDoubling, 8, 1<<20)
	rd.ChunkBytes = chunk
	rd6 := rd
	rd6.Ranks = 6
	pw := spec(collective.AllToAll, collective.Pairwise, 16, 16<<20)
	pw.ChunkBytes = chunk
	pw5 := spec(collective.AllToAll, collective.Pairwise, 5, 5*1000003)
	pw5.ChunkBytes = 1 << 21
	two := spec(collective.AllReduce, collective.HalvingDoubling, 2, 64<<20)
	two.ChunkBytes = 1 << 19 // 64 loops queued on one connection each way
	tree2 := spec(collective.AllReduce, collective.Tree, 2, 32<<20)
	cases := []struct {
		sp collective.Spec
		ab bool // also AlphaBeta's form
	}{
		{hd(collective.AllReduce, 16, 16*chunk), true},
		{hd(collective.AllReduce, 8, 8*chunk), true},
		{hd(collective.ReduceScatter, 8, 8*chunk), true},
		{hd(collective.AllGather, 8, 8*chunk), true},
		{rd, true},
		{rd6, false}, // the fold's pairs overlap their next steps: AlphaBeta charges them apart
		{pw, true},
		{pw5, true},
		{two, false}, // loops pipeline: one latency of AlphaBeta's 2 lg p a is hidden
		{tree2, false},
	}
	for _, tc := range cases {
		sp := tc.sp
		t.Run(fmt.Sprintf("%v_%v_%d_%d", sp.Op, sp.Algo, sp.Ranks, sp.Bytes), func(t *testing.T) {
			res := dagCrossbar(t, sp.Ranks, sp)
			got := res[0].Time()
			ideal, err := collective.RunIdeal(sp, model(), 1)
			if err != nil {
				t.Fatal(err)
			}
			sch, err := collective.Build(sp)
			if err != nil {
				t.Fatal(err)
			}
			msgs := int64(sch.Len()) // a picosecond of rounding per message at most
			if d := int64(got - ideal.Time()); d > msgs || d < -msgs {
				t.Errorf("flow level %v, Ideal %v (%d ps apart, %d ops)", got, ideal.Time(), d, msgs)
			}
			if tc.ab {
				ab, err := collective.AlphaBeta(sp, model())
				if err != nil {
					t.Fatal(err)
				}
				if d := int64(got - ab); d > msgs || d < -msgs {
					t.Errorf("flow level %v, AlphaBeta %v", got, ab)
				}
			}
			if res[0].Flows == 0 || res[0].Phases != 1 {
				t.Errorf("%d flows, %d phases; want one flow per message in one DAG", res[0].Flows, res[0].Phases)
			}
		})
	}
}

// TestScheduleModelPipelines: with several loops in flight the schedule model lets a rank
// start a loop's next step as soon as its own previous step is done, so halving-doubling on
// a crossbar beats the phase model's 2 lg p a + 2(p-1)/p S b (AlphaBeta: a barrier per step)
// by hiding latencies, and never beats the NIC bound 2(p-1)/p S b + a; the tree and pairwise
// likewise stay between the NIC bound and the phase model plus their pipeline fill.
func TestScheduleModelPipelines(t *testing.T) {
	hd := spec(collective.AllReduce, collective.HalvingDoubling, 16, 64<<20) // 8 loops
	res := dagCrossbar(t, 16, hd)
	ab, _ := collective.AlphaBeta(hd, model())
	nic := testRate.TxTime(hd.Bytes*2*15/16) + testLat
	if got := res[0].Time(); got >= ab || got < nic {
		t.Errorf("halving-doubling: %v, want in [NIC bound %v, AlphaBeta %v)", got, nic, ab)
	}
	pw := spec(collective.AllToAll, collective.Pairwise, 8, 64<<20) // 16 chunks per pair
	res = dagCrossbar(t, 8, pw)
	steps := sim.Time(7) * (testRate.TxTime(8<<20) + testLat)
	nic = testRate.TxTime(56<<20) + testLat
	if got := res[0].Time(); got >= steps || got < nic {
		t.Errorf("pairwise: %v, want in [NIC bound %v, step barriers %v)", got, nic, steps)
	}
	tr := spec(collective.AllReduce, collective.Tree, 16, 64<<20)
	res = dagCrossbar(t, 16, tr)
	ideal, err := collective.RunIdeal(tr, model(), 1)
	if err != nil {
		t.Fatal(err)
	}
	lo := testRate.TxTime(2 * tr.Bytes) // an interior rank sends and receives about 2S
	if got := res[0].Time(); got < lo*9/10 || got > ideal.Time()*11/10 {
		t.Errorf("tree: %v, want about the NIC bound %v to Ideal's run %v", got, lo, ideal.Time())
	}
}

// qpRouter is a QPRouter over two hosts joined by q parallel links each way, one per QP, of
// rate testRate / q: a message on QP k (key base + k) crosses link 2k (0 -> 1) or 2k+1.
type qpRouter struct {
	q    int
	base uint64
	l    [1]int32
}

func (r *qpRouter) QPs(src, dst int) int { return r.q }

func (r *qpRouter) Paths(src, dst int, key uint64, buf []Path) ([]Path, sim.Time, error) {
	k := key - r.base
	if k >= uint64(r.q) {
		return buf, 0, fmt.Errorf("key %d is no QP of %d", k, r.q)
	}
	r.l[0] = int32(2*k) + int32(src)
	return append(buf[:0], Path{Links: r.l[:], Weight: 1}), testLat, nil
}

// TestScheduleModelQPsRoundRobin: a QPRouter's Q connections are taken message by message,
// as RoCE takes a pair's QPs (rocenic.Endpoint.Send): a two-rank exchange of 8 chunks each
// way over Q parallel links of B/Q finishes in S/2 b (Q links together at B) + a for Q = 1,
// 2 and 4, where messages all on one link would take Q times as long.
func TestScheduleModelQPsRoundRobin(t *testing.T) {
	for _, q := range []int{1, 2, 4} {
		comm, _ := collective.RangeComm(0, 2, 1)
		r := &qpRouter{q: q, base: sim.Mix64(comm.Hash())}
		caps := make([]float64, 2*q)
		for i := range caps {
			caps[i] = float64(testRate) / float64(q)
		}
		sp := spec(collective.AllToAll, collective.Pairwise, 2, 16<<20) // 8 MiB each way, 8 chunks
		sp.ChunkBytes = 1 << 20
		res, n, _ := dagRun(t, r, caps, []collective.Spec{sp}, CollConfig{})
		want := testRate.TxTime(8<<20) + testLat
		if got := res[0].Time(); !within(got, want, 1e-6) {
			t.Errorf("Q=%d: %v, want %v", q, got, want)
		}
		lb := n.LinkBytes(nil)
		for i, b := range lb {
			if want := float64(8<<20) / float64(q); b < want-1 || b > want+1 {
				t.Errorf("Q=%d: link %d carried %.0f B, want %.0f (messages round robin)", q, i, b, want)
			}
		}
	}
}

// TestScheduleModelDeterministic: the same launches give the same times and link bytes, and
// the phase model stays what SetSchedules(false) runs.
func TestScheduleModelDeterministic(t *testing.T) {
	specs := []collective.Spec{spec(collective.AllReduce, collective.Tree, 12, 8<<20), spec(collective.AllToAll, collective.Pairwise, 12, 12<<20)}
	x, _ := NewCrossbar(12, testLat)
	a, na, _ := dagRun(t, x, x.Capacities(float64(testRate)), specs, CollConfig{})
	b, nb, _ := dagRun(t, x, x.Capacities(float64(testRate)), specs, CollConfig{})
	for i := range a {
		if a[i].Time() != b[i].Time() || a[i].Flows != b[i].Flows {
			t.Errorf("#%d: %v (%d flows) then %v (%d flows)", i, a[i].Time(), a[i].Flows, b[i].Time(), b[i].Flows)
		}
	}
	if !slices.Equal(na.LinkBytes(nil), nb.LinkBytes(nil)) {
		t.Error("link bytes differ between identical runs")
	}
	phase, _ := crossbarRun(t, 12, specs[1:], false)
	want := sim.Time(11) * (testRate.TxTime(1<<20) + testLat)
	if got := phase[0].Time(); !within(got, want, 1e-8) {
		t.Errorf("phase model pairwise: %v, want %v", got, want)
	}
}

// TestScheduleModelReroute: the schedule model's messages are reroutable (CollConfig.Reroutable)
// and Forget releases its collectives like the phase model's.
func TestScheduleModelReroute(t *testing.T) {
	s := sim.New(1)
	x, _ := NewCrossbar(8, testLat)
	n, err := New(s, x.Capacities(float64(testRate)), Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCollectives(n, x, CollConfig{Reroutable: true, Forget: true})
	if err != nil {
		t.Fatal(err)
	}
	c.SetSchedules(1e9)
	comm, _ := collective.RangeComm(0, 8, 1)
	sp := spec(collective.AllReduce, collective.HalvingDoubling, 8, 32<<20)
	done := 0
	var next func(now sim.Time)
	next = func(now sim.Time) {
		if done++; done < 3 {
			if err := c.Launch(now, sp, comm, "", next); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.Launch(0, sp, comm, "", next); err != nil {
		t.Fatal(err)
	}
	rerouted := 0
	k := s.Register("test.reroute", func(now sim.Time, _ int32, _ uint64) {
		m, err := c.Reroute(nil)
		if err != nil {
			t.Error(err)
		}
		rerouted = m
	})
	s.At(100*sim.Microsecond, k, 0, 0)
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	if err := c.Incomplete(); err != nil {
		t.Fatal(err)
	}
	if done != 3 || rerouted == 0 {
		t.Errorf("%d done (want 3), %d flows rerouted (want > 0)", done, rerouted)
	}
	if len(c.Results()) != 0 {
		t.Errorf("%d results kept with Forget", len(c.Results()))
	}
}

// TestScheduleModelRingOneLoop: a ring all-reduce, reduce-scatter or all-gather whose
// channels are one loop each (S/C <= n x chunk) takes on a crossbar, message by message,
// exactly the phase model's time, AlphaBeta's 2(n-1)/n S b + 2(n-1) a (or half of both):
// every step moves S/n per rank in lockstep. With several loops the schedule hides latencies
// the phase model charges and stays above the NIC bound.
func TestScheduleModelRingOneLoop(t *testing.T) {
	for _, op := range []collective.Collective{collective.AllReduce, collective.ReduceScatter, collective.AllGather} {
		sp := spec(op, collective.Ring, 16, 16<<20) // 1 MiB segments
		sp.ChunkBytes = 1 << 20
		res := dagCrossbar(t, 16, sp)
		phase, _ := crossbarRun(t, 16, []collective.Spec{sp}, false)
		ab, _ := collective.AlphaBeta(sp, model())
		sch, _ := collective.Build(sp)
		msgs := int64(sch.Len())
		if d := int64(res[0].Time() - phase[0].Time()); d > msgs || d < -msgs {
			t.Errorf("%v one loop: schedule %v, phases %v", op, res[0].Time(), phase[0].Time())
		}
		if d := int64(res[0].Time() - ab); d > msgs || d < -msgs {
			t.Errorf("%v one loop: schedule %v, AlphaBeta %v", op, res[0].Time(), ab)
		}
	}
	sp := spec(collective.AllReduce, collective.Ring, 16, 64<<20) // 8 loops of 16 x 512 KiB
	res := dagCrossbar(t, 16, sp)
	ab, _ := collective.AlphaBeta(sp, model())
	nic := testRate.TxTime(sp.Bytes*2*15/16) + testLat
	if got := res[0].Time(); got >= ab || got < nic {
		t.Errorf("ring 8 loops: %v, want in [NIC bound %v, AlphaBeta %v)", got, nic, ab)
	}
}

// TestSchedulesBound: SetSchedules runs the schedule model for schedules of at most maxOps
// operations of algorithms with dependencies, never for direct and grouped, and not at all
// when off.
func TestSchedulesBound(t *testing.T) {
	_, _, c := crossbarColls(t, 16, 1, CollConfig{})
	ring := spec(collective.AllReduce, collective.Ring, 16, 32<<20)
	if c.Schedules(ring) {
		t.Error("schedule model on by default")
	}
	ops, _ := collective.EstimateOps(ring)
	c.SetSchedules(ops)
	if !c.Schedules(ring) {
		t.Errorf("ring of %v ops with bound %v: phases", ops, ops)
	}
	c.SetSchedules(ops - 1)
	if c.Schedules(ring) {
		t.Errorf("ring of %v ops with bound %v: schedule model", ops, ops-1)
	}
	c.SetSchedules(1e12)
	for _, a := range []collective.Algorithm{collective.Grouped} {
		if sp := spec(collective.AllToAll, a, 16, 16<<20); c.Schedules(sp) {
			t.Errorf("%v: schedule model", a)
		}
	}
	sr := spec(collective.SendRecv, collective.Direct, 2, 1<<20)
	sr.Root, sr.Peer = 0, 1
	if c.Schedules(sr) {
		t.Error("direct: schedule model")
	}
	c.SetSchedules(0)
	if c.Schedules(ring) {
		t.Error("schedule model after SetSchedules(0)")
	}
}

// TestScheduleModelTailLoss: with CollConfig.TailLoss every message draws its own tail loss
// (RoCE's go-back-N waits TailRTO for a lost last packet): at probability 1 each of a 2-rank
// exchange's two messages (one each way, at once) waits one TailRTO, at 0 none does.
func TestScheduleModelTailLoss(t *testing.T) {
	for _, p := range []float64{0, 1} {
		x, _ := NewCrossbar(2, testLat)
		cfg := CollConfig{TailLoss: func([]int32) float64 { return p }, TailRTO: 100 * sim.Microsecond, TailSeed: 3}
		sp := spec(collective.AllToAll, collective.Pairwise, 2, 2<<20) // 1 MiB each way, one chunk
		sp.ChunkBytes = 1 << 20
		res, _, c := dagRun(t, x, x.Capacities(float64(testRate)), []collective.Spec{sp}, cfg)
		want := testRate.TxTime(1<<20) + testLat
		waits := int64(0)
		if p == 1 {
			want += cfg.TailRTO
			waits = 2
		}
		if got := res[0].Time(); !within(got, want, 1e-9) || c.TailWaits != waits {
			t.Errorf("p=%v: %v with %d waits, want %v with %d", p, got, c.TailWaits, want, waits)
		}
	}
}
