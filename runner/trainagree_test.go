package runner

import (
	"fmt"
	"testing"
)

// trainAgreeYAML is a 4-layer model (global batch 16, every microbatch simulated) on a
// two-tier Clos of 100 Gb/s links: %s the fabric's planes, radix, hosts and
// oversubscription, %s the transport, %s the GPU's scale-up domain, %d and %d TP and PP
// (1F1B), %s the engine.
const trainAgreeYAML = `
topology: {clos: {tiers: 2, planes: %d, radix: %d, hosts: %d, host_link: 100G%s}}
transport: {kind: %s}
workload:
  training:
    model: {name: tiny, layers: 4, hidden: 1024, heads: 8, kv_heads: 8, ffn: 4096, vocab: 32000, seq_len: 1024, global_batch: 16, micro_batch: 1}
    gpu: {preset: h100%s}
    plan: {tp: %d, pp: %d, schedule: 1f1b}
    exact: true
run: {engine: %s, duration: 100ms}
`

// TestTrainingAgreement: a training step at packet and at flow level, on 16 to 64 GPUs with
// TP inside scale-up domains of 8, 4, 2 and 1 GPUs (TP 1: the data-parallel ring on the
// fabric), PP 2 and DP 2 to 8, on 2 and 4 planes, one fabric oversubscribed 2:1, under MRC
// and RoCE: the step times agree within 10% (MRC) and 15% (RoCE), the targets. Both
// levels run the same collectives with the same dependencies (the flow level runs each
// collective's packet-level schedule, flow/dag.go; RoCE messages on their QPs' hashed
// paths); the residuals are in how the network is modelled (docs/flow-agreement.md,
// "Training at both levels").
func TestTrainingAgreement(t *testing.T) {
	type shape struct {
		name                 string
		planes, radix, hosts int
		oversub, scaleUp     string
		tp, pp               int
	}
	shapes := []shape{
		{"tp8 pp2 dp2", 2, 16, 32, "", "", 8, 2},
		{"tp1 pp2 dp8", 2, 16, 16, "", ", scale_up_gpus: 1", 1, 2},
		{"tp2 pp2 dp8", 4, 16, 32, "", ", scale_up_gpus: 2", 2, 2},
		{"tp4 pp2 dp8 o2", 4, 12, 64, ", oversubscription: [2]", ", scale_up_gpus: 4", 4, 2},
	}
	if testing.Short() {
		shapes = shapes[:2]
	}
	for _, sh := range shapes {
		for _, kind := range []string{"mrc", "roce"} {
			t.Run(sh.name+" "+kind, func(t *testing.T) {
				y := func(engine string) string {
					return fmt.Sprintf(trainAgreeYAML, sh.planes, sh.radix, sh.hosts, sh.oversub, kind, sh.scaleUp, sh.tp, sh.pp, engine)
				}
				pk := mustRun(t, y("packet")).Summary
				fl := mustRun(t, y("flow")).Summary
				if pk.Engine != "packet" || fl.Engine != "flow" || pk.Training == nil || fl.Training == nil {
					t.Fatalf("engines %q/%q, training results %v/%v", pk.Engine, fl.Engine, pk.Training != nil, fl.Training != nil)
				}
				p, f := pk.Training.StepTimeUs, fl.Training.StepTimeUs
				ratio := f / p
				tol := map[string]float64{"mrc": 0.10, "roce": 0.15}[kind]
				t.Logf("| %s | %s | %.1f | %.1f | %.3f |", sh.name, kind, p, f, ratio)
				if ratio < 1-tol || ratio > 1+tol {
					t.Errorf("step %.1f us at packet level, %.1f us at flow level: flow/packet %.3f; want within %.0f%%", p, f, ratio, 100*tol)
				}
			})
		}
	}
}
