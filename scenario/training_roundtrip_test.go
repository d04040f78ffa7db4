package scenario

import (
	"fmt"
	"testing"
)

// TestTrainingResolvedRoundTrip: the resolved scenario of a training job writes its model and
// GPU in full (every field a preset fills in), and reading it back resolves to the same text,
// for every model and GPU preset and an inline override.
func TestTrainingResolvedRoundTrip(t *testing.T) {
	for _, c := range []struct{ model, gpu, plan string }{
		{"{preset: llama3-8b, global_batch: 64}", "{preset: h100}", "{tp: 8, pp: 2}"},
		{"{preset: llama3-70b, global_batch: 64}", "{preset: gb200}", "{tp: 8, pp: 4, zero: 1}"},
		{"{preset: llama3-405b, global_batch: 64}", "{preset: b200}", "{tp: 8, pp: 8, schedule: zb-h1, stage_layers: [16, 16, 16, 16, 16, 16, 15, 15]}"},
		{"{preset: deepseek-v3, global_batch: 256}", "{preset: h100}", "{pp: 4, ep: 8, stage_layers: [16, 15, 15, 15]}"},
		{"{preset: llama3-8b, global_batch: 64, layers: 8, dtype: fp8}", "{preset: h100, efficiency: 0.4}", "{tp: 4, cp: 2, recompute: selective}"},
	} {
		yaml := fmt.Sprintf("topology: {clos: {tiers: 2, planes: 2, radix: 32, hosts: 512, host_link: 100G}}\nworkload:\n  training:\n    model: %s\n    gpu: %s\n    plan: %s\n", c.model, c.gpu, c.plan)
		sc, err := Parse([]byte(yaml))
		if err != nil {
			t.Errorf("%s: %v", c.model, err)
			continue
		}
		once, err := Encode(sc)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(once)
		if err != nil {
			t.Errorf("%s: the resolved scenario does not read back: %v\n%s", c.model, err, once)
			continue
		}
		twice, err := Encode(back)
		if err != nil {
			t.Fatal(err)
		}
		if string(once) != string(twice) {
			t.Errorf("%s: resolving the resolved scenario changed it:\n%s\n---\n%s", c.model, once, twice)
		}
		m := sc.Workload.Training.Model
		if m.Layers == 0 || m.Hidden == 0 || sc.Workload.Training.GPU.PeakTFLOPS == 0 {
			t.Errorf("%s: the resolved model or GPU is not written in full: %+v", c.model, sc.Workload.Training.Model)
		}
	}
}
