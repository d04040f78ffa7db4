package training

import (
	"bytes"
	"encoding/csv"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// slowRank is stragglers.slow with one rank at speed s.
func slowRank(r int, s float64) *Stragglers {
	return &Stragglers{Slow: []SlowGPUs{{Ranks: []RankRange{{r, r}}, Speed: s}}}
}

// within reports |got - want| <= rel x |want| + abs.
func within(got, want sim.Time, rel float64, abs sim.Time) bool {
	return math.Abs(float64(got-want)) <= rel*math.Abs(float64(want))+float64(abs)
}

// scaleT is t x f, rounded.
func scaleT(t sim.Time, f float64) sim.Time { return sim.Time(math.Round(float64(t) * f)) }

// TestStragglerPureDP: data parallelism alone, gradient reduction after the last backward
// (overlap off). Every rank computes m (F + B), posts its buckets, the reductions launch when
// the last rank posted (the straggler), each rank runs its optimizer and meets the barrier,
// so one rank at speed s < 1 lengthens the step by exactly
//
//	(m (F + B) + Opt) (1/s - 1)
//
// and a rank faster than the rest (s > 1) changes nothing. The DP launch skew is the
// straggler's lateness m (F + B) (1/s - 1); the median rank reaches the barrier
// Opt (1/s - 1) before the straggler. Swept over world size, microbatches and speed.
func TestStragglerPureDP(t *testing.T) {
	h100 := mustGPU(t, "h100")
	for _, world := range []int{2, 8, 64} {
		for _, m := range []int{1, 4} {
			mdl := tinyModel()
			mdl.GlobalBatch = world * m
			j := newJob(t, mdl, h100, Plan{}, world, Options{})
			base := runAnalytic(t, j, 400*sim.Gbps, RunOptions{}).Steps[0]
			st := j.Stages()[0]
			work := sim.Time(m)*(st.Forward+st.Backward) + st.Optimizer
			for _, s := range []float64{0.5, 0.8, 0.9, 0.95, 1.2} {
				slow := world / 2
				tr := runAnalytic(t, j, 400*sim.Gbps, RunOptions{Stragglers: slowRank(slow, s)})
				checkSums(t, tr)
				got := tr.Steps[0]
				f := max(1/s-1, 0)
				want := scaleT(work, f)
				if d := got.Time - base.Time; !within(d, want, 1e-4, 10*sim.Nanosecond) {
					t.Errorf("world %d m %d speed %v: step grew %v, closed form %v", world, m, s, d, want)
				}
				if s >= 1 {
					continue
				}
				if got.Slowest != slow || got.Busiest != slow {
					t.Errorf("world %d m %d speed %v: slowest rank %d, busiest %d; want the straggler %d", world, m, s, got.Slowest, got.Busiest, slow)
				}
				late := scaleT(sim.Time(m)*(st.Forward+st.Backward), f)
				if !within(got.DPSkew.P100, late, 1e-4, 10*sim.Nanosecond) {
					t.Errorf("world %d m %d speed %v: DP launch skew %v, want %v", world, m, s, got.DPSkew.P100, late)
				}
				// pp 1: no pipeline, so no bubble; the wait at the step barrier is sync.
				med := got.Ranks[(slow+1)%world]
				if got.Mean[CatBubble] != 0 || med[CatSync] < scaleT(st.Optimizer, f)-10*sim.Nanosecond {
					t.Errorf("world %d m %d speed %v: bubble %v, a punctual rank's sync %v; want no bubble and at least the barrier wait %v", world, m, s, got.Mean[CatBubble], med[CatSync], scaleT(st.Optimizer, f))
				}
				if got.Arrive.P100 != got.Time || !within(got.Arrive.P100-got.Arrive.P50, scaleT(st.Optimizer, f), 1e-4, 10*sim.Nanosecond) {
					t.Errorf("world %d m %d speed %v: arrivals %+v, step %v; want the median %v before the last", world, m, s, got.Arrive, got.Time, scaleT(st.Optimizer, f))
				}
			}
		}
	}
}

// ppPeriod is the steady 1F1B period in closed form: Megatron's blocking send/recv pairs make
// every stage's round F_p + B_p plus one transfer per pair it takes part in (one on the first
// and last stage, two inside), and the rounds of a pipeline run in lockstep, so the period is
// the largest over stages. tScale multiplies stage k's compute (a straggler: 1/s).
func ppPeriod(t *testing.T, j *Job, k int, tScale float64) sim.Time {
	t.Helper()
	s := sim.New(1)
	b, err := NewAnalyticBackend(s, collective.Model{Latency: 5 * sim.Microsecond, Rate: 400 * sim.Gbps})
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Time(j.specs[j.actSpec])
	if err != nil {
		t.Fatal(err)
	}
	P := j.Plan.PP
	var period sim.Time
	for p, st := range j.Stages() {
		tp := st.Forward + st.Backward
		if p == k {
			tp = st.ForwardTP + st.BackwardTP + scaleT(tp-st.ForwardTP-st.BackwardTP, tScale)
		}
		n := sim.Time(2)
		if p == 0 || p == P-1 {
			n = 1
		}
		period = max(period, tp+n*c)
	}
	return period
}

// TestStragglerPipelinePeriod: in a pipeline, a slow stage lengthens the steady 1F1B period
// to max over stages of (F_p + B_p)/s_p + n_p c (ppPeriod), so each extra microbatch costs the
// period's growth: (Δ(2m) - Δ(m)) / m, the step's growth per added microbatch, matches the
// closed form within 1% for every stage of 2- and 4-stage pipelines at speeds 0.5 to 0.95,
// including a slow end stage whose lost time fits in its slack (one transfer fewer per round
// than the inner stages): the period does not grow. Stages are balanced (a 128-token
// vocabulary: no heavy output layer).
func TestStragglerPipelinePeriod(t *testing.T) {
	h100 := mustGPU(t, "h100")
	for _, P := range []int{2, 4} {
		for k := 0; k < P; k++ {
			for _, s := range []float64{0.5, 0.8, 0.95} {
				var delta [2]sim.Time
				var jobs [2]*Job
				ms := [2]int{16, 32}
				for i, m := range ms {
					mdl := tinyModel()
					mdl.Vocab, mdl.GlobalBatch = 128, m
					j := newJob(t, mdl, h100, Plan{PP: P, Schedule: Schedule1F1B}, P, Options{Overlap: true})
					base := runAnalytic(t, j, 400*sim.Gbps, RunOptions{Exact: true}).Steps[0].Time
					tr := runAnalytic(t, j, 400*sim.Gbps, RunOptions{Stragglers: slowRank(k, s)})
					checkSums(t, tr)
					delta[i], jobs[i] = tr.Steps[0].Time-base, j
				}
				slope := (delta[1] - delta[0]) / sim.Time(ms[1]-ms[0])
				p0, p1 := ppPeriod(t, jobs[0], -1, 1), ppPeriod(t, jobs[0], k, 1/s)
				t.Logf("pp %d, stage %d at %v: +%v per microbatch; closed form period %v -> %v (+%v)", P, k, s, slope, p0, p1, p1-p0)
				if !within(slope, p1-p0, 0.01, p0/1000) {
					t.Errorf("pp %d, stage %d at %v: the step grows %v per microbatch; closed form: period %v -> %v (+%v)", P, k, s, slope, p0, p1, p1-p0)
				}
			}
		}
	}
}

// TestStraggler1024: one GPU at 0.8x in a Llama-3-8B job on 1,024 H100s (TP 8 inside the
// NVLink domain, PP 4, DP 32, 16 microbatches). The GPU's TP group computes at its pace
// (the TP all-reduces after every block synchronise it), so its pipeline's last stage (the
// heaviest: the output layer) computes 1/0.8 as long; that stage is the pipeline's bottleneck,
// so every round takes the straggler's extra compute and the step grows by
//
//	m x (1/0.8 - 1) x (F_3 + B_3 - NVLink TP time)
//
// whatever the data-parallel size (swept 4 to 32 replicas at 16 microbatches each); the 7 TP
// peers wait for it as sync, and the other 31 pipelines wait for it at the gradient
// reduction (the DP launch skew is the whole growth).
func TestStraggler1024(t *testing.T) {
	h100 := mustGPU(t, "h100")
	for _, world := range []int{128, 256, 1024} {
		mdl := mustModel(t, "llama3-8b")
		mdl.GlobalBatch = 16 * world / 32
		j := newJob(t, mdl, h100, Plan{TP: 8, PP: 4, Schedule: Schedule1F1B}, world, Options{Overlap: true})
		if j.Microbatches() != 16 {
			t.Fatalf("%d microbatches", j.Microbatches())
		}
		base := runAnalytic(t, j, 400*sim.Gbps, RunOptions{}).Steps[0]
		c := j.Placement.Coord(0)
		c.TP, c.DP, c.PP = 3, j.Plan.DP-1, 3
		rank := j.Placement.Rank(c)
		tr := runAnalytic(t, j, 400*sim.Gbps, RunOptions{Stragglers: slowRank(rank, 0.8)})
		checkSums(t, tr)
		got := tr.Steps[0]
		st := j.Stages()[3]
		want := scaleT(16*(st.Forward+st.Backward-st.ForwardTP-st.BackwardTP), 0.25)
		d := got.Time - base.Time
		t.Logf("world %d: step %v -> %v (+%v, %.2f%%); closed form +%v; arrivals p50 %v p99 %v p100 %v; DP launch skew max %v (%s)",
			world, base.Time, got.Time, d, 100*float64(d)/float64(base.Time), want, got.Arrive.P50, got.Arrive.P99, got.Arrive.P100, got.DPSkew.P100, got.DPSkewWorst)
		if !within(d, want, 0.01, 0) {
			t.Errorf("world %d: step grew %v; closed form %v", world, d, want)
		}
		if got.Busiest != rank {
			t.Errorf("world %d: busiest rank %d, want the straggler %d", world, got.Busiest, rank)
		}
		// Every pipeline waits for the straggler's at the gradient reduction: the launch skew
		// is its whole lateness (and the last rank to arrive is then any stage 0 rank).
		if !within(got.DPSkew.P100, want, 0.01, 0) {
			t.Errorf("world %d: DP launch skew %v, want the straggler's lateness %v", world, got.DPSkew.P100, want)
		}
		peer := c
		peer.TP = 0
		if s := got.Ranks[j.Placement.Rank(peer)][CatSync]; !within(s, want, 0.01, 0) {
			t.Errorf("world %d: the straggler's TP peer waited %v as sync, want %v", world, s, want)
		}
	}
}

// expMaxNormal returns E[max of n standard normals] and its standard deviation, by numerical
// integration of x n phi(x) Phi(x)^(n-1).
func expMaxNormal(n int) (mean, sd float64) {
	const h = 1e-3
	var m1, m2 float64
	for x := -8.0; x <= 8; x += h {
		phi := math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
		Phi := 0.5 * math.Erfc(-x/math.Sqrt2)
		p := float64(n) * phi * math.Pow(Phi, float64(n-1)) * h
		m1 += x * p
		m2 += x * x * p
	}
	return m1, math.Sqrt(m2 - m1*m1)
}

// TestJitterGrowsWithWorld: with lognormal jitter, a step waits at the gradient reduction for
// the slowest of N ranks, which grows with N. Pure DP, overlap off, world 8 to 1,024: per step
// (one draw per rank per step) the step grows by exactly (m (F+B) + Opt)(max_r exp(sigma Z_r)
// - 1), so ln(1 + growth / work) / sigma is the sample maximum of N standard normals: it never
// falls as N doubles (rank r draws the same in every world) and, averaged over 12 seeds, lies
// within 3 standard errors of E[max] (numerical integral). Per op the rank's total averages
// over its ops: the growth still rises with N but stays below the per-step growth.
func TestJitterGrowsWithWorld(t *testing.T) {
	h100 := mustGPU(t, "h100")
	const sigma, seeds, m = 0.02, 12, 2
	prevMax := make([]float64, seeds)
	prevOp := 0.0
	for world := 8; world <= 1024; world *= 2 {
		mdl := tinyModel()
		mdl.GlobalBatch = world * m
		j := newJob(t, mdl, h100, Plan{}, world, Options{BucketBytes: 16 << 20})
		st := j.Stages()[0]
		work := float64(sim.Time(m)*(st.Forward+st.Backward) + st.Optimizer)
		base := runAnalytic(t, j, 400*sim.Gbps, RunOptions{}).Steps[0].Time
		run := func(seed uint64, per string) sim.Time {
			s := sim.New(seed)
			b, err := NewAnalyticBackend(s, collective.Model{Latency: 5 * sim.Microsecond, Rate: 400 * sim.Gbps})
			if err != nil {
				t.Fatal(err)
			}
			tr, err := j.Run(s, b, RunOptions{Stragglers: &Stragglers{Jitter: &Jitter{Sigma: sigma, Per: per}}})
			if err != nil {
				t.Fatal(err)
			}
			checkSums(t, tr)
			return tr.Steps[0].Time - base
		}
		var sum, opSum float64
		for k := 0; k < seeds; k++ {
			zmax := math.Log(1+float64(run(uint64(k+1), "step"))/work) / sigma
			if zmax < prevMax[k]-1e-6 {
				t.Errorf("world %d seed %d: the slowest rank's draw fell from %.4f to %.4f", world, k+1, prevMax[k], zmax)
			}
			prevMax[k] = zmax
			sum += zmax
			opSum += float64(run(uint64(k+1), "op")) / work
		}
		mean, sd := expMaxNormal(world)
		got := sum / seeds
		perOp := opSum / seeds
		t.Logf("world %d: E[max Z] %.3f (sd %.3f), measured %.3f over %d seeds: step +%.3f%% per step, +%.3f%% per op", world, mean, sd, got, seeds, 100*(math.Exp(sigma*got)-1), 100*perOp)
		if math.Abs(got-mean) > 3*sd/math.Sqrt(seeds) {
			t.Errorf("world %d: mean max draw %.3f, E[max of %d normals] %.3f +- %.3f", world, got, world, mean, 3*sd/math.Sqrt(seeds))
		}
		if !(perOp > 0 && perOp < math.Exp(sigma*got)-1) || perOp < prevOp {
			t.Errorf("world %d: per-op growth %.5f (world/2: %.5f), per-step %.5f: want positive, rising, below per-step", world, perOp, prevOp, math.Exp(sigma*got)-1)
		}
		prevOp = perOp
	}
}

// TestThrottle: a throttling window slows a rank's compute only while it lasts: pure DP, a
// rank throttled to speed s for a window of length L inside its compute does L s of work in
// it instead of L and finishes the rest at full speed, so its compute, and the step (the
// gradient reduction waits for it), ends L (1 - s) later. Overlapping windows multiply. A
// window after the simulated steps changes nothing and leaves a note; one in the second
// simulated step slows that step only.
func TestThrottle(t *testing.T) {
	h100 := mustGPU(t, "h100")
	mdl := tinyModel()
	mdl.GlobalBatch = 8 * 4
	j := newJob(t, mdl, h100, Plan{}, 8, Options{})
	base := runAnalytic(t, j, 400*sim.Gbps, RunOptions{Steps: 2})
	st := j.Stages()[0]
	compute := 4 * (st.Forward + st.Backward)
	for _, c := range []struct {
		at, dur sim.Time
		s       float64
	}{{compute / 4, compute / 4, 0.5}, {0, compute / 10, 0.7}, {compute / 3, compute / 2, 0.9}} {
		sg := &Stragglers{Throttle: []Throttle{{Ranks: []RankRange{{2, 2}}, At: c.at, For: c.dur, Speed: c.s}}}
		tr := runAnalytic(t, j, 400*sim.Gbps, RunOptions{Steps: 2, Stragglers: sg})
		checkSums(t, tr)
		want := scaleT(c.dur, 1-c.s)
		if d := tr.Steps[0].Time - base.Steps[0].Time; !within(d, want, 1e-4, 10*sim.Nanosecond) {
			t.Errorf("throttle %v for %v at %v: step 0 grew %v, want %v", c.at, c.dur, c.s, d, want)
		}
		if tr.Steps[1].Time != base.Steps[1].Time {
			t.Errorf("throttle in step 0 changed step 1: %v vs %v", tr.Steps[1].Time, base.Steps[1].Time)
		}
	}
	// Overlapping windows multiply: on one rank over time, and over ranks in both ranges. The
	// work lost is the integral of 1 - speed over the windows.
	L := compute / 4
	for _, c := range []struct {
		ws   []Throttle
		want sim.Time
	}{
		{[]Throttle{{Ranks: []RankRange{{2, 2}}, At: L, For: L, Speed: 0.5}, {Ranks: []RankRange{{2, 2}}, At: L + L/2, For: L, Speed: 0.8}}, scaleT(L/2, 0.5+0.6+0.2)},
		{[]Throttle{{Ranks: []RankRange{{0, 3}}, At: L, For: L, Speed: 0.5}, {Ranks: []RankRange{{2, 5}}, At: L, For: L, Speed: 0.8}}, scaleT(L, 0.6)},
	} {
		tr := runAnalytic(t, j, 400*sim.Gbps, RunOptions{Steps: 2, Stragglers: &Stragglers{Throttle: c.ws}})
		if d := tr.Steps[0].Time - base.Steps[0].Time; !within(d, c.want, 1e-4, 10*sim.Nanosecond) {
			t.Errorf("windows %+v: step grew %v, want %v", c.ws, d, c.want)
		}
	}
	// In the second step only.
	at := base.Steps[0].Time + compute/5
	sg := &Stragglers{Throttle: []Throttle{{Ranks: []RankRange{{0, 7}}, At: at, For: compute / 5, Speed: 0.6}}}
	tr := runAnalytic(t, j, 400*sim.Gbps, RunOptions{Steps: 2, Stragglers: sg})
	if tr.Steps[0].Time != base.Steps[0].Time || !within(tr.Steps[1].Time-base.Steps[1].Time, scaleT(compute/5, 0.4), 1e-4, 10*sim.Nanosecond) {
		t.Errorf("throttle in step 1: steps %v %v, base %v %v", tr.Steps[0].Time, tr.Steps[1].Time, base.Steps[0].Time, base.Steps[1].Time)
	}
	// Past the end.
	sg = &Stragglers{Throttle: []Throttle{{Ranks: []RankRange{{1, 1}}, At: 10 * sim.Second, For: sim.Second, Speed: 0.5}}}
	tr = runAnalytic(t, j, 400*sim.Gbps, RunOptions{Steps: 2, Stragglers: sg})
	if tr.Steps[1].Time != base.Steps[1].Time || len(tr.Notes) != 1 || !strings.Contains(tr.Notes[0], "stragglers.throttle[0] starts at 10s, after the simulated steps end") {
		t.Errorf("throttle after the end: %v, notes %q", tr.Steps[1].Time, tr.Notes)
	}
}

// TestStragglerIdentity: no stragglers, an empty section and a jitter of sigma 0 give the
// trace of a run without the option (steady-round reuse included), and the same seed gives
// the same jittered trace while another seed does not.
func TestStragglerIdentity(t *testing.T) {
	mdl := tinyModel()
	mdl.GlobalBatch = 64
	j := newJob(t, mdl, mustGPU(t, "h100"), Plan{TP: 2, PP: 4}, 16, Options{Overlap: true})
	base := runAnalytic(t, j, 100*sim.Gbps, RunOptions{})
	if base.SimulatedMicrobatches == j.Microbatches() {
		t.Fatal("no round reuse to check")
	}
	for _, sg := range []*Stragglers{{}, {Jitter: &Jitter{}}, {Slow: nil, Throttle: []Throttle{}}} {
		tr := runAnalytic(t, j, 100*sim.Gbps, RunOptions{Stragglers: sg})
		if tr.SimulatedMicrobatches != base.SimulatedMicrobatches || !reflect.DeepEqual(tr.Steps, base.Steps) {
			t.Errorf("%+v: trace differs from a run without stragglers", sg)
		}
	}
	jit := &Stragglers{Jitter: &Jitter{Sigma: 0.05}}
	run := func(seed uint64) *Trace {
		s := sim.New(seed)
		b, _ := NewAnalyticBackend(s, collective.Model{Latency: 5 * sim.Microsecond, Rate: 100 * sim.Gbps})
		tr, err := j.Run(s, b, RunOptions{Stragglers: jit})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	a, b, c := run(3), run(3), run(4)
	if !reflect.DeepEqual(a.Steps, b.Steps) || a.Steps[0].Time == c.Steps[0].Time {
		t.Errorf("seeds: %v %v %v", a.Steps[0].Time, b.Steps[0].Time, c.Steps[0].Time)
	}
	if a.SimulatedMicrobatches != j.Microbatches() {
		t.Errorf("jitter simulated %d of %d microbatches; want all", a.SimulatedMicrobatches, j.Microbatches())
	}
}

// TestStragglerAccounting: with stragglers on dense, pipelined, MoE, cross-domain TP and
// ZeRO jobs, every rank's categories sum to the step time and the power series' energy equals
// the categories' time at each category's draw (the stretched compute spans are powered as
// compute).
func TestStragglerAccounting(t *testing.T) {
	h100 := mustGPU(t, "h100")
	sg := &Stragglers{Slow: []SlowGPUs{{Ranks: []RankRange{{1, 1}, {5, 6}}, Speed: 0.7}},
		Jitter: &Jitter{Sigma: 0.05}, Throttle: []Throttle{{Ranks: []RankRange{{0, 3}}, At: sim.Millisecond, For: 2 * sim.Millisecond, Speed: 0.5}}}
	for _, c := range []struct {
		name  string
		m     Model
		p     Plan
		world int
	}{
		{"dp", tinyModel(), Plan{}, 8},
		{"tp pp dp", tinyModel(), Plan{TP: 2, PP: 4}, 16},
		{"moe ep", smallMoE(), Plan{PP: 2, EP: 4}, 16},
		{"tp across domains", tinyModel(), Plan{TP: 4, Order: "dp,tp,pp"}, 16},
		{"zero", tinyModel(), Plan{TP: 2, PP: 2, ZeRO: 1}, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := newJob(t, c.m, h100, c.p, c.world, Options{Overlap: true})
			for _, run := range []func(testing.TB, *Job, sim.Rate, RunOptions) *Trace{runAnalytic, runIdeal} {
				tr := run(t, j, 100*sim.Gbps, RunOptions{Steps: 2, Stragglers: sg})
				checkSums(t, tr)
				ps, err := tr.Power(10 * sim.Microsecond)
				if err != nil {
					t.Fatal(err)
				}
				for k, st := range tr.Steps {
					var joules float64
					for _, b := range st.Ranks {
						for cat, v := range b {
							joules += j.GPU.watts(Category(cat)) * v.Seconds()
						}
					}
					if got := ps.Steps[k].EnergyMJ * 1e6; math.Abs(got-joules) > 1e-6*joules {
						t.Errorf("step %d: power series energy %.6f J, categories %.6f J", k, got, joules)
					}
				}
			}
		})
	}
}

// TestStragglerTPCoupling: inside one NVLink domain a TP group computes at its slowest
// member's pace (the members wait for it as sync); across domains the TP all-reduces are
// network collectives and the engine synchronises the members itself (their waits are sync
// too). Either way the straggler's pipeline is slower by the same compute.
func TestStragglerTPCoupling(t *testing.T) {
	h100 := mustGPU(t, "h100")
	for _, order := range []string{"tp,dp,pp", "dp,tp,pp"} {
		j := newJob(t, tinyModel(), h100, Plan{TP: 4, Order: order}, 16, Options{})
		base := runAnalytic(t, j, 400*sim.Gbps, RunOptions{})
		slow := j.Placement.Rank(Coord{TP: 2, DP: 1})
		tr := runAnalytic(t, j, 400*sim.Gbps, RunOptions{Stragglers: slowRank(slow, 0.5)})
		checkSums(t, tr)
		peer := j.Placement.Rank(Coord{TP: 0, DP: 1})
		st, b0 := tr.Steps[0], base.Steps[0]
		extra := st.Ranks[slow][CatCompute] - b0.Ranks[slow][CatCompute]
		wait := st.Ranks[peer][CatSync] + st.Ranks[peer][CatBubble] - b0.Ranks[peer][CatSync] - b0.Ranks[peer][CatBubble]
		if !within(st.Time-b0.Time, extra, 0.01, 0) || !within(wait, extra, 0.01, 0) || st.Busiest != slow {
			t.Errorf("order %s: step grew %v; straggler's extra compute %v, its TP peer's extra sync + bubble %v; busiest %d (want %d)", order, st.Time-b0.Time, extra, wait, st.Busiest, slow)
		}
		if inDomain := order == "tp,dp,pp"; inDomain && !within(st.Ranks[peer][CatSync], extra, 0.01, 0) {
			t.Errorf("in the domain the peer waits as sync: %v, want %v", st.Ranks[peer][CatSync], extra)
		}
	}
}

// TestStragglerValidation: bad straggler inputs name the field, the value and what is allowed.
func TestStragglerValidation(t *testing.T) {
	r := func(lo, hi int) []RankRange { return []RankRange{{lo, hi}} }
	for _, c := range []struct {
		sg   Stragglers
		want string
	}{
		{Stragglers{Slow: []SlowGPUs{{Ranks: r(1, 1), Speed: 0}}}, "workload.training.stragglers.slow[0].speed: missing (or 0): want a compute speed of 0.05 to 1.5"},
		{Stragglers{Slow: []SlowGPUs{{Ranks: r(1, 1), Speed: 2}}}, "stragglers.slow[0].speed: 2: want"},
		{Stragglers{Slow: []SlowGPUs{{Ranks: r(1, 1), Speed: math.NaN()}}}, "stragglers.slow[0].speed: NaN"},
		{Stragglers{Slow: []SlowGPUs{{Speed: 0.8}}}, "stragglers.slow[0].ranks: empty"},
		{Stragglers{Slow: []SlowGPUs{{Ranks: r(30, 40), Speed: 0.8}}}, "stragglers.slow[0].ranks[0]: 30-40: rank 40 is outside the job's 32 ranks (0 to 31)"},
		{Stragglers{Slow: []SlowGPUs{{Ranks: r(5, 3), Speed: 0.8}}}, "stragglers.slow[0].ranks[0]: 5-3"},
		{Stragglers{Slow: []SlowGPUs{{Ranks: r(1, 4), Speed: 0.8}, {Ranks: r(4, 4), Speed: 0.9}}}, "stragglers.slow[1].ranks: rank 4 is already in slow[0]"},
		{Stragglers{Slow: []SlowGPUs{{Ranks: r(0, 20), Speed: 0.8}, {Ranks: r(10, 12), Speed: 0.9}}}, "stragglers.slow[1].ranks: rank 10 is already in slow[0]"},
		{Stragglers{Slow: []SlowGPUs{{Ranks: []RankRange{{0, 20}, {3, 3}}, Speed: 0.8}, {Ranks: r(19, 25), Speed: 0.9}}}, "stragglers.slow[1].ranks: rank 19 is already in slow[0]"},
		{Stragglers{Slow: []SlowGPUs{{Ranks: []RankRange{{0, 20}, {3, 3}}, Speed: 0.8}, {Ranks: r(21, 25), Speed: 0.9}}}, ""},
		{Stragglers{Jitter: &Jitter{Sigma: -0.1}}, "stragglers.jitter.sigma: -0.1: want 0 to 0.5"},
		{Stragglers{Jitter: &Jitter{Sigma: 0.9}}, "stragglers.jitter.sigma: 0.9"},
		{Stragglers{Jitter: &Jitter{Sigma: 0.1, Dist: "normal"}}, `stragglers.jitter.dist: "normal": allowed lognormal`},
		{Stragglers{Jitter: &Jitter{Sigma: 0.1, Per: "layer"}}, `stragglers.jitter.per: "layer": allowed op`},
		{Stragglers{Throttle: []Throttle{{Ranks: r(0, 0), At: sim.Second, Speed: 0.5}}}, "stragglers.throttle[0].for: 0s: want a duration > 0"},
		{Stragglers{Throttle: []Throttle{{Ranks: r(0, 0), At: -1, For: 1, Speed: 0.5}}}, "stragglers.throttle[0].at"},
		{Stragglers{Throttle: []Throttle{{Ranks: r(0, 99), For: 1, Speed: 0.5}}}, "stragglers.throttle[0].ranks[0]: 0-99: rank 99 is outside"},
		{Stragglers{Throttle: []Throttle{{Ranks: r(0, 0), For: 1, Speed: 0.01}}}, "stragglers.throttle[0].speed: 0.01"},
	} {
		cfg := Config{Model: Model{Preset: "llama3-8b"}, GPU: GPU{Preset: "h100"}, Plan: Plan{TP: 8}, Stragglers: &c.sg}
		_, err := cfg.Job(32)
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.sg, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.sg, err, c.want)
		}
	}
	var rr RankRange
	for in, want := range map[string]RankRange{"17": {17, 17}, "0-7": {0, 7}, " 3 - 5 ": {3, 5}} {
		if err := rr.UnmarshalText([]byte(in)); err != nil || rr != want {
			t.Errorf("%q: %v %v", in, rr, err)
		}
		if b, _ := want.MarshalText(); rr.UnmarshalText(b) != nil || rr != want {
			t.Errorf("%v does not read back from %q", want, b)
		}
	}
	for _, in := range []string{"", "-1", "a", "7-3", "1-", "1-2-3"} {
		if err := rr.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("%q accepted as %v", in, rr)
		}
	}
}

// TestStepsCSVColumns: steps.csv keeps its columns first and in order, then the barrier
// arrival percentiles, the DP launch skew, the slowest and busiest rank, and the runner's
// columns; a straggler shows in them.
func TestStepsCSVColumns(t *testing.T) {
	old := "step,start_us,step_time_us,compute_us,tp_us,pp_us,dp_us,ep_us,bubble_us,sync_us,exposed_comm_us,slowest_rank,slowest_wait,power_mean_mw,power_swing_mw,slew_mw_per_ms,battery_mwh,iterations"
	if got := strings.Join(StepsCSVHeader, ","); !strings.HasPrefix(got, old+",") {
		t.Fatalf("header %s does not start with %s", got, old)
	}
	cfg := Config{Model: Model{Preset: "llama3-8b", GlobalBatch: 64}, GPU: GPU{Preset: "h100"}, Plan: Plan{TP: 8, PP: 2}, Steps: 5, SimSteps: 2,
		Stragglers: slowRank(21, 0.8)}
	j, err := cfg.Job(64)
	if err != nil {
		t.Fatal(err)
	}
	s := sim.New(1)
	b, _ := NewAnalyticBackend(s, collective.Model{Latency: 5 * sim.Microsecond, Rate: 400 * sim.Gbps})
	res, err := cfg.Run(j, s, b, Env{Links: 100, NICs: 64})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stragglers != "rank 21 at 0.8x" || res.ArriveP100Us != res.StepTimeUs || !(res.ArriveP50Us < res.ArriveP99Us) || res.WorstStepTimeUs < res.StepTimeUs {
		t.Errorf("summary: stragglers %q, arrivals %v %v %v, step %v, worst %v", res.Stragglers, res.ArriveP50Us, res.ArriveP99Us, res.ArriveP100Us, res.StepTimeUs, res.WorstStepTimeUs)
	}
	res.StepRecords[1].SlowestLink, res.StepRecords[1].Events = "p0.t0-1", "t=1.2ms faults[0] p0.t0-1 down, then up"
	var buf bytes.Buffer
	if err := res.WriteStepsCSV(&buf); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || len(rows[1]) != len(StepsCSVHeader) {
		t.Fatalf("%d rows of %d columns", len(rows), len(rows[1]))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	r1 := rows[2]
	if r1[col["busiest_rank"]] != "21" || r1[col["slowest_link"]] != "p0.t0-1" || r1[col["events"]] != res.StepRecords[1].Events ||
		r1[col["arrive_p100_us"]] != r1[col["step_time_us"]] || r1[col["iterations"]] != "4" || r1[col["slowest_coord"]] == "" {
		t.Errorf("row %v", r1)
	}
}
