package training

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// smallMoE is a small DeepSeek-like mixture of experts: 4 layers (the first dense), 16
// routed experts + 1 shared, top-2.
func smallMoE() Model {
	return Model{Name: "moe", Layers: 4, Hidden: 1024, Heads: 8, FFN: 4096, Experts: 16, SharedExperts: 1, TopK: 2, ExpertFFN: 512,
		DenseLayers: 1, Vocab: 32000, SeqLen: 1024, GlobalBatch: 64}
}

func newJob(t testing.TB, m Model, g GPU, p Plan, world int, o Options) *Job {
	t.Helper()
	rm, err := m.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	rp, err := p.Resolve(world, rm)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := NewPlacement(rp, g.ScaleUpGPUs)
	if err != nil {
		t.Fatal(err)
	}
	j, err := NewJob(rm, g, rp, pl, o)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// checkSums asserts every rank's categories sum exactly to the step time.
func checkSums(t *testing.T, tr *Trace) {
	t.Helper()
	for _, st := range tr.Steps {
		for r, b := range st.Ranks {
			if b.Total() != st.Time {
				t.Fatalf("step %d rank %d: categories %v sum to %v, step time %v", st.Index, r, b, b.Total(), st.Time)
			}
		}
		if st.Ranks[st.Slowest][CatBubble] < 0 {
			t.Fatalf("negative bubble")
		}
	}
}

// TestCategoriesSumToStepTime: on every rank, compute + exposed comm + bubble + sync is the
// step time, for dense, pipelined, MoE, cross-domain TP, ZeRO and recompute jobs, on both
// backends.
func TestCategoriesSumToStepTime(t *testing.T) {
	h100 := mustGPU(t, "h100")
	cases := []struct {
		name  string
		m     Model
		p     Plan
		world int
		o     Options
	}{
		{"dp only", tinyModel(), Plan{}, 8, Options{Overlap: true}},
		{"tp pp dp", tinyModel(), Plan{TP: 2, PP: 4}, 16, Options{Overlap: true}},
		{"pp 4 long, extrapolated", func() Model { m := tinyModel(); m.GlobalBatch = 64; return m }(), Plan{PP: 4}, 8, Options{Overlap: true}},
		{"moe ep", smallMoE(), Plan{PP: 2, EP: 4}, 16, Options{Overlap: true}},
		{"tp across domains", tinyModel(), Plan{TP: 4, Order: "dp,tp,pp"}, 16, Options{Overlap: true}},
		{"zero recompute no overlap", tinyModel(), Plan{TP: 2, PP: 2, ZeRO: 1, Recompute: RecomputeFull}, 8, Options{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := newJob(t, c.m, h100, c.p, c.world, c.o)
			checkSums(t, runAnalytic(t, j, 100*sim.Gbps, RunOptions{Steps: 2}))
			checkSums(t, runIdeal(t, j, 100*sim.Gbps, RunOptions{}))
		})
	}
}

// TestExtrapolationMatchesExact: reusing the steady 1F1B round gives the same step as
// simulating every microbatch: exactly on the analytic backend. On Ideal the end of a step
// (the last stage's gradient all-reduce queued in the same NIC FIFOs as its last pipeline
// sends) depends on the seeded order of simultaneous events, so symmetric pipelines finish a
// few percent apart from seed to seed, extrapolated or not (this job: 23.9 to 25.9 ms); the
// means over seeds agree within 3%.
func TestExtrapolationMatchesExact(t *testing.T) {
	m := tinyModel()
	m.GlobalBatch = 96 // 24 microbatches per pipeline at dp 4
	j := newJob(t, m, mustGPU(t, "h100"), Plan{TP: 2, PP: 4, Schedule: Schedule1F1B}, 32, Options{Overlap: true})
	fast := runAnalytic(t, j, 100*sim.Gbps, RunOptions{})
	exact := runAnalytic(t, j, 100*sim.Gbps, RunOptions{Exact: true})
	if fast.SimulatedMicrobatches != 10 || exact.SimulatedMicrobatches != 24 {
		t.Fatalf("simulated %d and %d microbatches, want 10 and 24", fast.SimulatedMicrobatches, exact.SimulatedMicrobatches)
	}
	if !fast.Periodic {
		t.Errorf("rounds not periodic: %v", fast.Notes)
	}
	a, b := fast.Steps[0], exact.Steps[0]
	if a.Time != b.Time || a.Mean != b.Mean {
		t.Errorf("extrapolated step %v %v, exact %v %v", a.Time, a.Mean, b.Time, b.Mean)
	}
	var sf, se sim.Time
	const seeds = 4
	for seed := uint64(1); seed <= seeds; seed++ {
		for _, exact := range []bool{false, true} {
			s := sim.New(seed)
			net, _ := collective.NewIdeal(s, collective.IdealConfig{Hosts: 32, Rate: 100 * sim.Gbps, Latency: 5 * sim.Microsecond})
			be, _ := NewExecutorBackend(s, net, 32, 0)
			net.SetSink(be.Delivered)
			tr, err := j.Run(s, be, RunOptions{Exact: exact})
			if err != nil {
				t.Fatal(err)
			}
			if !tr.Periodic {
				t.Errorf("ideal seed %d: %v", seed, tr.Notes)
			}
			if exact {
				se += tr.Steps[0].Time
			} else {
				sf += tr.Steps[0].Time
			}
		}
	}
	if d := math.Abs(float64(sf-se)) / float64(se); d > 0.03 {
		t.Errorf("ideal: mean extrapolated step %v, mean exact %v", sf/seeds, se/seeds)
	}
	t.Logf("analytic: step %v (exact identical); ideal: mean over %d seeds %v extrapolated, %v exact", a.Time, seeds, sf/seeds, se/seeds)
}

// job70B is the 1,024-GPU Llama-3-70B job (TP 8, PP 4, DP 32, 16 microbatches, 1F1B, bf16
// gradients).
func job70B(t testing.TB, overlap bool) *Job {
	m := mustModel(t, "llama3-70b")
	m.GradDType = "bf16"
	return newJob(t, m, mustGPU(t, "h100"), Plan{TP: 8, PP: 4, Schedule: Schedule1F1B}, 1024, Options{Overlap: overlap})
}

// TestOverlapAndRate: overlapping the gradient all-reduce with the last backward lowers the
// exposed DP time and the step time; halving the network rate raises the exposed
// communication.
func TestOverlapAndRate(t *testing.T) {
	on := runAnalytic(t, job70B(t, true), 400*sim.Gbps, RunOptions{}).Steps[0]
	off := runAnalytic(t, job70B(t, false), 400*sim.Gbps, RunOptions{}).Steps[0]
	half := runAnalytic(t, job70B(t, true), 200*sim.Gbps, RunOptions{}).Steps[0]
	t.Logf("overlap on: step %v, dp exposed %v, exposed %v", on.Time, on.Mean[CatDP], on.Mean.Exposed())
	t.Logf("overlap off: step %v, dp exposed %v, exposed %v", off.Time, off.Mean[CatDP], off.Mean.Exposed())
	t.Logf("half rate: step %v, dp exposed %v, pp %v, exposed %v", half.Time, half.Mean[CatDP], half.Mean[CatPP], half.Mean.Exposed())
	if !(on.Mean[CatDP] < off.Mean[CatDP]/4 && on.Time < off.Time) {
		t.Errorf("overlap: dp exposed %v (off %v), step %v (off %v)", on.Mean[CatDP], off.Mean[CatDP], on.Time, off.Time)
	}
	if !(half.Mean.Exposed() > on.Mean.Exposed() && half.Mean[CatPP] > on.Mean[CatPP] && half.Time > on.Time) {
		t.Errorf("half rate: exposed %v (full %v), pp %v (full %v)", half.Mean.Exposed(), on.Mean.Exposed(), half.Mean[CatPP], on.Mean[CatPP])
	}
	// The same on the packet-free network through the executor, for a small job.
	j := newJob(t, tinyModel(), mustGPU(t, "h100"), Plan{TP: 2, PP: 2}, 16, Options{Overlap: true})
	a := runIdeal(t, j, 200*sim.Gbps, RunOptions{}).Steps[0]
	b := runIdeal(t, j, 100*sim.Gbps, RunOptions{}).Steps[0]
	if !(b.Mean.Exposed() > a.Mean.Exposed()) {
		t.Errorf("ideal: exposed %v at half rate, %v at full", b.Mean.Exposed(), a.Mean.Exposed())
	}
}

// TestBubble: with a network too fast to matter and uniform stages, 1F1B idles each rank
// for (PP-1)(t_f + t_b) per step (Narayanan et al., SC'21 §2.2.1: bubble fraction
// (p-1)/m of the ideal time).
func TestBubble(t *testing.T) {
	m := tinyModel()
	m.Vocab = 8 // make the LM head negligible so the stages are uniform
	m.GlobalBatch = 8
	j := newJob(t, m, mustGPU(t, "h100"), Plan{PP: 4, Schedule: Schedule1F1B}, 4, Options{Overlap: true})
	s := sim.New(1)
	b, err := NewAnalyticBackend(s, collective.Model{Rate: 1000 * sim.Pbps})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := j.Run(s, b, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := tr.Steps[0]
	in := j.Stages()[1]
	want := 3 * (in.Forward + in.Backward)
	for r, b := range st.Ranks {
		if d := math.Abs(float64(b[CatBubble]-want)) / float64(want); d > 0.02 {
			t.Errorf("rank %d: bubble %v, want (p-1)(tf+tb) = %v", r, b[CatBubble], want)
		}
	}
	frac := float64(st.Mean[CatBubble]) / float64(st.Mean[CatCompute])
	t.Logf("bubble %v per rank, %.3f of compute (3/8 of the forward and backward compute; the optimizer step adds to the compute)", st.Mean[CatBubble], frac)
}

// blackhole is a backend that accepts collectives and never finishes them.
type blackhole struct{ n int }

func (b *blackhole) Launch(at sim.Time, spec collective.Spec, comm collective.Comm, name string, done func(now sim.Time)) error {
	b.n++
	return nil
}

// refuser fails every launch.
type refuser struct{}

func (refuser) Launch(at sim.Time, spec collective.Spec, comm collective.Comm, name string, done func(now sim.Time)) error {
	return fmt.Errorf("no route for %s", name)
}

// TestWatchdog: a run whose collectives never complete stops with the stuck ranks and what
// they wait on; a backend error stops the run with it.
func TestWatchdog(t *testing.T) {
	j := newJob(t, tinyModel(), mustGPU(t, "h100"), Plan{PP: 2, Schedule: Schedule1F1B}, 4, Options{Overlap: true})
	_, err := j.Run(sim.New(1), &blackhole{}, RunOptions{})
	if err == nil {
		t.Fatal("no error from a run that cannot finish")
	}
	for _, want := range []string{
		"training: step 0 did not finish",
		"4 of 4 ranks have not reached the step barrier",
		"rank 0 (tp=0 dp=0 pp=0, host 0): waits for pp.fwd[tp=0 dp=0 0->1] call #0 activations (send_recv 2MiB), launched at 484.576184us, not done",
		"rank 2 (tp=0 dp=0 pp=1, host 2): waits for pp.fwd[tp=0 dp=0 0->1] call #0",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("watchdog report lacks %q:\n%v", want, err)
		}
	}
	_, err = j.Run(sim.New(1), refuser{}, RunOptions{})
	if err == nil || !strings.Contains(err.Error(), "no route for pp.fwd[tp=0 dp=0 0->1] activations #0 step 0") {
		t.Errorf("backend error: %v", err)
	}
}

// TestMoE: expert parallelism puts all-to-alls on the critical path and reduces expert
// gradients over the expert-DP group.
func TestMoE(t *testing.T) {
	j := newJob(t, smallMoE(), mustGPU(t, "h100"), Plan{PP: 2, EP: 4}, 16, Options{Overlap: true})
	in := j.Stages()
	if in[0].ForwardCollectives != 2 || in[1].ForwardCollectives != 4 || in[0].ExpertBuckets == 0 {
		t.Errorf("stages: %+v", in)
	}
	for _, run := range []func(testing.TB, *Job, sim.Rate, RunOptions) *Trace{runAnalytic, runIdeal} {
		st := run(t, j, 100*sim.Gbps, RunOptions{}).Steps[0]
		if st.Mean[CatEP] <= 0 {
			t.Errorf("no exposed EP time: %v", st.Mean)
		}
		t.Logf("moe: step %v mean %v", st.Time, st.Mean)
	}
}

// TestTPAcrossDomains: TP groups that leave the NVLink domain go through the backend.
func TestTPAcrossDomains(t *testing.T) {
	g := mustGPU(t, "h100")
	in := newJob(t, tinyModel(), g, Plan{TP: 8}, 16, Options{Overlap: true})
	out := newJob(t, tinyModel(), g, Plan{TP: 8, Order: "dp,tp,pp"}, 16, Options{Overlap: true})
	if !in.TPInDomain() || out.TPInDomain() {
		t.Fatalf("tp in domain: %v and %v, want true and false", in.TPInDomain(), out.TPInDomain())
	}
	a := runAnalytic(t, in, 400*sim.Gbps, RunOptions{}).Steps[0]
	b := runAnalytic(t, out, 400*sim.Gbps, RunOptions{}).Steps[0]
	if !(b.Mean[CatTP] > a.Mean[CatTP]) {
		t.Errorf("tp over the network %v, over NVLink %v", b.Mean[CatTP], a.Mean[CatTP])
	}
	t.Logf("tp exposed: NVLink %v, network %v", a.Mean[CatTP], b.Mean[CatTP])
}

// TestZeRO: the distributed optimizer reduce-scatters gradients, shards the optimizer step
// and all-gathers parameters.
func TestZeRO(t *testing.T) {
	g := mustGPU(t, "h100")
	plain := newJob(t, tinyModel(), g, Plan{}, 8, Options{Overlap: true})
	zero := newJob(t, tinyModel(), g, Plan{ZeRO: 1}, 8, Options{Overlap: true})
	if got, want := zero.Stages()[0].Optimizer, plain.Stages()[0].Optimizer/8; absTime(got-want) > sim.Nanosecond {
		t.Errorf("zero optimizer %v, want 1/8 of %v", got, plain.Stages()[0].Optimizer)
	}
	ops := map[collective.Collective]int{}
	for _, sp := range zero.specs {
		ops[sp.Op]++
	}
	if ops[collective.ReduceScatter] == 0 || ops[collective.AllGather] == 0 || ops[collective.AllReduce] != 0 {
		t.Errorf("zero collectives: %v", ops)
	}
	checkSums(t, runAnalytic(t, zero, 100*sim.Gbps, RunOptions{}))
}

// TestAnalyticMatchesIdeal: the closed-form backend and the executor on Ideal agree when
// collectives do not share NICs (TP on NVLink, one DP stream per rank: the ring closed form
// is exact on Ideal), and Ideal is slower when they do (pipeline sends queue behind gradient
// all-reduces in the NIC FIFOs at the end of the step).
func TestAnalyticMatchesIdeal(t *testing.T) {
	g := mustGPU(t, "h100")
	j := newJob(t, tinyModel(), g, Plan{TP: 2}, 16, Options{Overlap: true})
	a := runAnalytic(t, j, 100*sim.Gbps, RunOptions{}).Steps[0]
	b := runIdeal(t, j, 100*sim.Gbps, RunOptions{}).Steps[0]
	if d := math.Abs(float64(a.Time-b.Time)) / float64(b.Time); d > 1e-3 {
		t.Errorf("no contention: analytic %v, ideal %v", a.Time, b.Time)
	}
	j = newJob(t, tinyModel(), g, Plan{TP: 2, PP: 2}, 16, Options{Overlap: true})
	a = runAnalytic(t, j, 100*sim.Gbps, RunOptions{}).Steps[0]
	b = runIdeal(t, j, 100*sim.Gbps, RunOptions{}).Steps[0]
	if b.Time < a.Time {
		t.Errorf("contention: ideal %v faster than the uncontended closed form %v", b.Time, a.Time)
	}
	t.Logf("pp 2: analytic %v, ideal %v", a.Time, b.Time)
}

// TestSlowestRank: the slowest rank reaches the barrier last (no barrier wait) and its
// reason is its largest waiting category.
func TestSlowestRank(t *testing.T) {
	st := runAnalytic(t, job70B(t, false), 400*sim.Gbps, RunOptions{}).Steps[0]
	s := st.Ranks[st.Slowest]
	for c := CatTP; c < NumCategories; c++ {
		if s[c] > s[st.SlowestWait] {
			t.Errorf("slowest rank %d waits longest on %v, reported %v", st.Slowest, c, st.SlowestWait)
		}
	}
	t.Logf("slowest rank %d: %v (%v)", st.Slowest, st.SlowestWait, s)
}

// TestSlowestWaitOnTie: in a symmetric job every rank ties (data parallel only, overlap off),
// so the slowest rank is late in no category; its reason is then its largest wait (dp here),
// not a category it never waited on.
func TestSlowestWaitOnTie(t *testing.T) {
	j := newJob(t, tinyModel(), mustGPU(t, "h100"), Plan{TP: 1, PP: 1}, 16, Options{Overlap: false})
	st := runAnalytic(t, j, 100*sim.Gbps, RunOptions{}).Steps[0]
	s := st.Ranks[st.Slowest]
	if st.SlowestWait != CatDP || s[CatDP] == 0 {
		t.Errorf("slowest rank %d waits %v; reported %v (%v); want dp", st.Slowest, s, st.SlowestWait, s[st.SlowestWait])
	}
}

// nameLog is an AnalyticBackend that records each launch's name; lazy, it takes them through
// LaunchNamed and builds every name only after the run.
type nameLog struct {
	*AnalyticBackend
	names []string
	lazy  []func() string
}

func (b *nameLog) Launch(at sim.Time, sp collective.Spec, comm collective.Comm, name string, done func(sim.Time)) error {
	b.names = append(b.names, name)
	return b.AnalyticBackend.Launch(at, sp, comm, name, done)
}

type lazyNameLog struct{ *nameLog }

func (b lazyNameLog) LaunchNamed(at sim.Time, sp collective.Spec, comm collective.Comm, name func() string, done func(sim.Time)) error {
	b.lazy = append(b.lazy, name)
	return b.AnalyticBackend.Launch(at, sp, comm, "", done)
}

// TestLazyNames: a backend taking lazy names (NamedBackend) gets, when it builds them after
// the run, the names an eager backend is given, and the same trace.
func TestLazyNames(t *testing.T) {
	j := newJob(t, smallMoE(), mustGPU(t, "h100"), Plan{PP: 2, EP: 4}, 16, Options{Overlap: true})
	run := func(lazy bool) (*Trace, []string) {
		s := sim.New(1)
		ab, err := NewAnalyticBackend(s, collective.Model{Latency: 5 * sim.Microsecond, Rate: 100 * sim.Gbps})
		if err != nil {
			t.Fatal(err)
		}
		nl := &nameLog{AnalyticBackend: ab}
		var b Backend = nl
		if lazy {
			b = lazyNameLog{nl}
		}
		tr, err := j.Run(s, b, RunOptions{Steps: 2})
		if err != nil {
			t.Fatal(err)
		}
		if lazy && len(nl.names) != 0 {
			t.Fatalf("a NamedBackend was given %d eager names", len(nl.names))
		}
		for _, f := range nl.lazy {
			nl.names = append(nl.names, f())
		}
		return tr, nl.names
	}
	te, ne := run(false)
	tl, nl := run(true)
	if len(ne) == 0 || strings.Join(ne, "\n") != strings.Join(nl, "\n") {
		t.Fatalf("lazy names differ from eager ones (%d vs %d)", len(nl), len(ne))
	}
	if fmt.Sprint(te.Steps) != fmt.Sprint(tl.Steps) {
		t.Fatal("lazy names changed the trace")
	}
}
