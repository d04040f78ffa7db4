package training

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// uniformModel is a small dense model of layers layers whose LM head is negligible (vocab 8),
// so that every pipeline stage and chunk does the same work.
func uniformModel(layers, batch int) Model {
	return Model{Name: "uniform", Layers: layers, Hidden: 256, Heads: 4, KVHeads: 4, FFN: 1024, Vocab: 8, SeqLen: 256, GlobalBatch: batch}
}

// runFast runs one step of j on the analytic backend with a network too fast to matter.
func runFast(t testing.TB, j *Job, opts RunOptions) *Trace {
	t.Helper()
	s := sim.New(1)
	b, err := NewAnalyticBackend(s, collective.Model{Rate: 1000 * sim.Pbps})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := j.Run(s, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestScheduleBubbles: with uniform stages and a free network, every rank idles for the
// closed form of its schedule:
//
//	1f1b         (p-1)(t_f + t_b)                 Narayanan et al., SC'21 §2.2.1
//	interleaved  (p-1)(t_f + t_b) / v             Narayanan et al., SC'21 §2.2.2 (m a multiple of p)
//	zb-h1        (p-1)(T_F + T_B - T_W)           Qi et al., ICLR 2024 §3.1 (m >= p)
//
// t_f, t_b, T_F, T_B, T_W per microbatch over the whole stage (T_B the input gradient, T_W
// the weight gradient), for p in {2, 4, 8, 16}, m in {p, 2p, 4p}, v in {1, 2, 4}, within 2%
// (the last stage's LM head, tiny here, still makes it a little slower than the others,
// which then wait for it at the barrier: up to 1.3% more bubble on small pipelines).
func TestScheduleBubbles(t *testing.T) {
	g := mustGPU(t, "h100")
	for _, p := range []int{2, 4, 8, 16} {
		for _, mult := range []int{1, 2, 4} {
			m := mult * p
			for _, sc := range []struct {
				name string
				v    int
			}{{Schedule1F1B, 1}, {ScheduleInterleaved, 2}, {ScheduleInterleaved, 4}, {ScheduleZBH1, 1}} {
				name := fmt.Sprintf("p%d m%d %s v%d", p, m, sc.name, sc.v)
				t.Run(name, func(t *testing.T) {
					j := newJob(t, uniformModel(4*p, m), g, Plan{PP: p, Schedule: sc.name, VirtualStages: sc.v}, p, Options{Overlap: true})
					st := runFast(t, j, RunOptions{Exact: true}).Steps[0]
					in := j.Stages()[p/2]
					var want sim.Time
					switch sc.name {
					case Schedule1F1B:
						want = sim.Time(p-1) * (in.Forward + in.Backward)
					case ScheduleInterleaved:
						want = sim.Time(p-1) * (in.Forward + in.Backward) / sim.Time(sc.v)
					case ScheduleZBH1:
						tb := in.Backward - in.WeightGrad
						want = sim.Time(p-1) * (in.Forward + tb - in.WeightGrad)
					}
					for r, b := range st.Ranks {
						if d := math.Abs(float64(b[CatBubble]-want)) / float64(want); d > 0.02 {
							t.Errorf("rank %d: bubble %v, want %v (%.1f%% off)", r, b[CatBubble], want, 100*d)
						}
					}
					ideal := sim.Time(m) * (in.Forward + in.Backward)
					frac := float64(st.Mean[CatBubble]) / float64(ideal)
					t.Logf("bubble %v = %.3f of the ideal %v", st.Mean[CatBubble], frac, ideal)
				})
			}
		}
	}
}

// TestExtrapolationSchedules: reusing steady windows gives exactly the step the exact
// simulation gives, for each schedule, on pipelines with an LM head and TP and DP traffic
// (the analytic backend: no seeded contention), and the simulated microbatches are fewer.
func TestExtrapolationSchedules(t *testing.T) {
	g := mustGPU(t, "h100")
	cases := []struct {
		sched      string
		p, v, m    int
		simulated  int
		tp, layers int
	}{
		{Schedule1F1B, 4, 1, 24, 10, 2, 8},
		{ScheduleZBH1, 4, 1, 24, 20, 2, 8},
		{ScheduleZBH1, 8, 1, 48, 40, 1, 16},
		{ScheduleInterleaved, 4, 2, 40, 24, 2, 8},
		{ScheduleInterleaved, 2, 4, 30, 10, 1, 8},
		{ScheduleInterleaved, 4, 2, 44, 24, 2, 16},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s p%d v%d m%d", c.sched, c.p, c.v, c.m), func(t *testing.T) {
			m := uniformModel(c.layers, 2*c.m)
			m.Vocab = 32000
			j := newJob(t, m, g, Plan{TP: c.tp, PP: c.p, Schedule: c.sched, VirtualStages: c.v}, 2*c.tp*c.p, Options{Overlap: true})
			fast := runAnalytic(t, j, 100*sim.Gbps, RunOptions{})
			exact := runAnalytic(t, j, 100*sim.Gbps, RunOptions{Exact: true})
			if fast.SimulatedMicrobatches != c.simulated || exact.SimulatedMicrobatches != c.m {
				t.Fatalf("simulated %d and %d microbatches, want %d and %d", fast.SimulatedMicrobatches, exact.SimulatedMicrobatches, c.simulated, c.m)
			}
			if !fast.Periodic {
				t.Errorf("windows not periodic: %v", fast.Notes)
			}
			a, b := fast.Steps[0], exact.Steps[0]
			if a.Time != b.Time || a.Mean != b.Mean {
				t.Errorf("extrapolated step %v %v, exact %v %v", a.Time, a.Mean, b.Time, b.Mean)
			}
			checkSums(t, fast)
		})
	}
}

// TestSchedulesAnyMicrobatches: 1f1b and zb-h1 finish for microbatch counts that are not
// multiples of pp, or fewer than pp, and their categories sum to the step time; interleaved
// with such a count is an error naming plan.schedule, the count, pp and the fixes.
func TestSchedulesAnyMicrobatches(t *testing.T) {
	g := mustGPU(t, "h100")
	for _, p := range []int{2, 4, 8} {
		for _, m := range []int{1, p - 1, p + 1, 2*p + 3, 3*p - 1} {
			if m < 1 {
				continue
			}
			for _, sc := range []struct {
				name string
				v    int
			}{{Schedule1F1B, 1}, {ScheduleInterleaved, 2}, {ScheduleInterleaved, 4}, {ScheduleZBH1, 1}} {
				t.Run(fmt.Sprintf("p%d m%d %s v%d", p, m, sc.name, sc.v), func(t *testing.T) {
					if sc.name == ScheduleInterleaved && m%p != 0 {
						rm, _ := uniformModel(4*p, 2*m).Resolve()
						_, err := Plan{PP: p, Schedule: sc.name, VirtualStages: sc.v}.Resolve(2*p, rm)
						want := fmt.Sprintf("plan.schedule: interleaved needs the microbatches per step to be a multiple of pp (Megatron-LM's requirement), but %d microbatches %% pp %d = %d; give a global_batch that is a multiple of pp x dp x micro_batch = %d", m, p, m%p, 2*p)
						if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "1f1b or zb-h1") {
							t.Fatalf("error %v, want one containing %q", err, want)
						}
						return
					}
					j := newJob(t, uniformModel(4*p, 2*m), g, Plan{PP: p, Schedule: sc.name, VirtualStages: sc.v}, 2*p, Options{Overlap: true})
					tr := runAnalytic(t, j, 400*sim.Gbps, RunOptions{})
					checkSums(t, tr)
					in := j.Stages()[0]
					st := tr.Steps[0]
					if ideal := sim.Time(m) * (in.Forward + in.Backward); st.Time < ideal {
						t.Errorf("step %v shorter than the bubble-free %v", st.Time, ideal)
					}
				})
			}
		}
	}
}
