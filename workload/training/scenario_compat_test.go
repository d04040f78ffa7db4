package training_test

import (
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/workload/training"
)

// TestScenarioDecode: the Config decodes with the scenario package's strict decoder (the way
// the runner will read `workload: training:`), durations, sizes and rates included.
func TestScenarioDecode(t *testing.T) {
	src := []byte(`
model: {preset: llama3-70b, seq_len: 4096}
gpu: {preset: h100, efficiency: 0.45, scale_up_rate: 3.6Tbps}
gpus: 1024
plan: {tp: 8, pp: 4, zero: true, stage_layers: [20, 20, 20, 20]}
steps: 10
overlap: false
bucket_bytes: 64MiB
power: {interval: 50us}
goodput: {gpu_mtbf: 20000h, link_failure_restarts: 1, checkpoint_interval: 30min, seed: 7}
`)
	var c training.Config
	if err := scenario.Decode(src, &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Model.SeqLen != 4096 || c.GPU.Efficiency != 0.45 || c.Plan.ZeRO != 1 || *c.Overlap || c.BucketBytes != 64<<20 ||
		c.Power.Interval.Micros() != 50 || c.Goodput.GPUMTBF != 72e6 || *c.Goodput.LinkFailureRestarts != 1 || c.Goodput.CheckpointInterval != 1800 {
		t.Errorf("decoded %+v", c)
	}
	if _, err := c.Job(1024); err != nil {
		t.Fatal(err)
	}
	var bad training.Config
	if err := scenario.Decode([]byte("plan: {tp: 8, pipeline: 4}"), &bad); err == nil {
		t.Error("unknown key accepted")
	}
}
