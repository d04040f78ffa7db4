package training

import (
	"fmt"
	"math"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// postedBytes sums the bytes of the collectives stage s's program posts on each role in one
// step of m microbatches.
func postedBytes(j *Job, s, m int) [numRoles]int64 {
	var out [numRoles]int64
	for _, o := range j.program(s, m) {
		if o.kind == opPost {
			out[o.role] += j.specs[o.arg].Bytes
		}
	}
	return out
}

// TestZeROTraffic: the data-parallel bytes a rank posts per step follow Rajbhandari et al.,
// SC'20 §7 (G the rank's gradient bytes, P its parameters in dtype bytes, m microbatches):
//
//	zero 0: all-reduce G                      (2G on the wire, a ring's 2(n-1)/n)
//	zero 1: reduce-scatter G, all-gather P    (the same 2G-equivalent, optimizer on 1/DP)
//	zero 2: reduce-scatter G every microbatch (m G), all-gather P
//	zero 3: reduce-scatter G every microbatch, all-gather P before every forward and every
//	        backward (2 m P): 3 m x what one microbatch of DP moves
//
// across zero 0-3, dp 2 and 4, pp 1 and 2, m 1 and 4; every job runs to the barrier.
func TestZeROTraffic(t *testing.T) {
	g := mustGPU(t, "h100")
	for _, zero := range []ZeROStage{0, 1, 2, 3} {
		for _, dp := range []int{2, 4} {
			for _, pp := range []int{1, 2} {
				for _, m := range []int{1, 4} {
					t.Run(fmt.Sprintf("zero%d dp%d pp%d m%d", zero, dp, pp, m), func(t *testing.T) {
						mod := tinyModel()
						mod.GlobalBatch = dp * m
						j := newJob(t, mod, g, Plan{PP: pp, ZeRO: zero}, dp*pp, Options{Overlap: true})
						for s, in := range j.Stages() {
							got := postedBytes(j, s, m)
							G := in.GradBytes
							P := in.ParamsPerRank * j.Model.bytesPerElem()
							var wantDP, wantAG int64
							switch zero {
							case 0:
								wantDP = G
							case 1:
								wantDP, wantAG = G, P
							case 2:
								wantDP, wantAG = int64(m)*G, P
							case 3:
								wantDP, wantAG = int64(m)*G, 2*int64(m)*P
							}
							// ZeRO 1-2 all-gather on the DP stream after the optimizer, ZeRO 3 on its own.
							gotDP, gotAG := got[roleDP], got[roleDPAG]
							if zero == 1 || zero == 2 {
								gotDP -= wantAG
								gotAG = got[roleDP] - gotDP
							}
							if gotDP != wantDP || gotAG != wantAG {
								t.Errorf("stage %d: reduction %d bytes, gather %d; want %d and %d (G %d, P %d)", s, gotDP, gotAG, wantDP, wantAG, G, P)
							}
							plain := newJob(t, mod, g, Plan{PP: pp}, dp*pp, Options{Overlap: true}).Stages()[s].Optimizer
							if want := plain / sim.Time(dp); zero >= 1 && absTime(in.Optimizer-want) > sim.Nanosecond {
								t.Errorf("stage %d: optimizer %v, want 1/%d of %v", s, in.Optimizer, dp, plain)
							}
						}
						checkSums(t, runAnalytic(t, j, 100*sim.Gbps, RunOptions{}))
					})
				}
			}
		}
	}
}

// TestCPTraffic: with context parallelism each layer all-gathers the other CP ranks' keys and
// values before its attention (Llama 3, Dubey et al. 2024 §3.3.2), again before its backward,
// and reduce-scatters their gradients: 3 x b s 2 kv d / tp bytes per layer and microbatch
// (the all-gathers' output; Spec.Bytes). The compute of a microbatch scales as 1/cp.
func TestCPTraffic(t *testing.T) {
	g := mustGPU(t, "h100")
	for _, cp := range []int{2, 4} {
		for _, tp := range []int{1, 2} {
			for _, rec := range []RecomputeMode{RecomputeNone, RecomputeFull} {
				t.Run(fmt.Sprintf("cp%d tp%d %s", cp, tp, rec), func(t *testing.T) {
					m := tinyModel()
					m.Vocab = 8
					m.GlobalBatch = 4
					// Domains of one GPU: every CP group crosses the network (TP stays in a
					// domain of tp GPUs only when tp is 1; tp 2 then goes over the network too).
					base := newJob(t, m, g, Plan{TP: tp, PP: 2, Domain: 1, Recompute: rec, Schedule: Schedule1F1B}, 2*tp, Options{Overlap: true})
					j := newJob(t, m, g, Plan{TP: tp, CP: cp, PP: 2, Domain: 1, Recompute: rec, Schedule: Schedule1F1B}, 2*tp*cp, Options{Overlap: true})
					rm := j.Model // resolved: micro_batch 1
					kv := int64(rm.MicroBatch) * int64(rm.SeqLen) * 2 * int64(rm.KVHeads) * int64(rm.HeadDim) / int64(tp) * 2
					for s, in := range j.Stages() {
						got := postedBytes(j, s, j.Microbatches())[roleCP]
						want := 3 * int64(in.Layers) * int64(j.Microbatches()) * kv
						if got != want {
							t.Errorf("stage %d: cp bytes %d, want 3 x %d layers x %d microbatches x %d = %d", s, got, in.Layers, j.Microbatches(), kv, want)
						}
						f0, f := base.Stages()[s].Forward, in.Forward
						if d := math.Abs(float64(f)*float64(cp)/float64(f0) - 1); d > 0.01 {
							t.Errorf("stage %d: forward %v with cp %d, %v without: not 1/cp (%.2f%% off)", s, f, cp, f0, 100*d)
						}
					}
					checkSums(t, runAnalytic(t, j, 100*sim.Gbps, RunOptions{}))
				})
			}
		}
	}
}

// TestRecompute: full recomputation adds the layers' forward to the backward; selective
// (Korthikanti et al. 2023 §5) only the attention core's forward: with per-operation costs
// the executed causal FLOPs, 2 s a (d_qk + d_v) / 2 per token per layer, at the attention
// efficiency. Model FLOPs (MFU's numerator) do not change.
func TestRecompute(t *testing.T) {
	g := mustGPU(t, "h100")
	for _, seq := range []int{1024, 4096, 16384} {
		for _, tp := range []int{1, 4} {
			t.Run(fmt.Sprintf("seq%d tp%d", seq, tp), func(t *testing.T) {
				m := tinyModel()
				m.Vocab, m.SeqLen, m.GlobalBatch = 8, seq, 2
				job := func(r RecomputeMode) StageInfo {
					return newJob(t, m, g, Plan{TP: tp, Recompute: r}, tp*2, Options{Overlap: true}).Stages()[0]
				}
				none, sel, full := job(RecomputeNone), job(RecomputeSelective), job(RecomputeFull)
				rm, _ := m.Resolve()
				core := sim.FromSeconds(float64(rm.Layers) * rm.layerForward(0).Attention / 2 * float64(rm.MicroBatch*rm.SeqLen) / float64(tp) / g.attnFLOPS(2))
				if d := absTime(sel.Backward - none.Backward - core); d > sim.Time(rm.Layers)*sim.Nanosecond {
					t.Errorf("selective adds %v, want the attention core's forward %v", sel.Backward-none.Backward, core)
				}
				// The LM head (vocab 8) is not recomputed; its forward is a few ns.
				if d := math.Abs(float64(full.Backward-none.Backward-none.Forward)) / float64(none.Forward); d > 0.005 {
					t.Errorf("full adds %v, want the forward %v", full.Backward-none.Backward, none.Forward)
				}
			})
		}
	}
}

// TestFlatEfficiency: gpu.efficiency set keeps the flat model of earlier versions: every
// FLOP, attention counted in full, at peak x efficiency, the backward twice the forward, no
// memory-bound time; the per-operation model charges more (eager elementwise kernels) at
// the preset's efficiencies, for efficiencies 0.3 to 0.7 and sequences 1K to 8K.
func TestFlatEfficiency(t *testing.T) {
	for _, eff := range []float64{0.3, 0.5, 0.7} {
		for _, seq := range []int{1024, 8192} {
			t.Run(fmt.Sprintf("eff%.1f seq%d", eff, seq), func(t *testing.T) {
				g := mustGPU(t, "h100")
				g.Efficiency = eff
				m := tinyModel()
				m.SeqLen, m.GlobalBatch = seq, 2
				j := newJob(t, m, g, Plan{}, 2, Options{Overlap: true})
				in := j.Stages()[0]
				rm := j.Model
				var flops float64
				for i := 0; i < rm.Layers; i++ {
					flops += rm.layerForward(i).Total()
				}
				flops += rm.headForward()
				want := flops * float64(rm.SeqLen) / (989e12 * eff)
				if d := math.Abs(in.Forward.Seconds()/want - 1); d > 1e-6 {
					t.Errorf("forward %v, want %.9f s", in.Forward, want)
				}
				if d := math.Abs(in.Backward.Seconds()/(2*want) - 1); d > 1e-6 {
					t.Errorf("backward %v, want twice the forward", in.Backward)
				}
				per := newJob(t, m, mustGPU(t, "h100"), Plan{}, 2, Options{Overlap: true}).Stages()[0]
				if per.Forward <= in.Forward && eff >= 0.6 {
					t.Errorf("per-operation forward %v not above the flat %v at efficiency %.1f", per.Forward, in.Forward, eff)
				}
			})
		}
	}
}
