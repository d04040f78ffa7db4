package training

import (
	"bytes"
	"encoding/csv"
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

const exampleYAML = `
model: {preset: llama3-70b}
gpu: {preset: h100}
plan: {tp: 8, pp: 4, order: "tp,dp,pp"}
steps: 1000
overlap: true
power: {interval: 100us}
goodput: {checkpoint_write: 60s, restart: 10min, gpu_mtbf: 5000h, trials: 100}
`

func decodeConfig(t *testing.T, src string) Config {
	t.Helper()
	var c Config
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestConfigRun decodes a scenario section, builds the job for a 1,024-host fabric, runs it
// on the analytic backend and writes the CSVs.
func TestConfigRun(t *testing.T) {
	c := decodeConfig(t, exampleYAML)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	j, err := c.Job(1024)
	if err != nil {
		t.Fatal(err)
	}
	s := sim.New(1)
	b, err := NewAnalyticBackend(s, collective.Model{Latency: 5 * sim.Microsecond, Rate: 400 * sim.Gbps})
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Run(j, s, b, Env{Links: 4096, NICs: 1024, LinkFailureRestarts: 0})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r.Summary())
	if r.Steps != 1000 || r.SimulatedSteps != 1 || r.DP != 32 || r.Microbatches != 16 || r.SimulatedMicrobatches != 16 { // interleaved (the default) with 16 = 4 pp microbatches: no steady window to repeat
		t.Errorf("shape: %+v", r)
	}
	if !(r.StepTimeUs > r.IdealStepUs && r.MFU > 0.2 && r.MFU < 0.5 && r.PowerSwingMW > 0 && r.GoodputFrac > 0.8 && r.CkptIntervalS > 0) {
		t.Errorf("figures: step %.0f us (ideal %.0f), MFU %.3f, swing %.3f MW, goodput %.3f, ckpt %.0f s", r.StepTimeUs, r.IdealStepUs, r.MFU, r.PowerSwingMW, r.GoodputFrac, r.CkptIntervalS)
	}
	sum := r.ComputeUs + r.ExposedCommUs + r.BubbleUs + r.SyncUs
	if d := sum - r.StepTimeUs; d > 1e-3 || d < -1e-3 {
		t.Errorf("mean categories sum to %.3f us, step %.3f us", sum, r.StepTimeUs)
	}
	var pw, steps bytes.Buffer
	if err := r.WritePowerCSV(&pw); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteStepsCSV(&steps); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&pw).ReadAll()
	if err != nil || strings.Join(rows[0], ",") != "time_us,power_mw" || len(rows) != len(r.Power().MW)+1 {
		t.Errorf("power csv: %d rows, header %v, %v", len(rows), rows[0], err)
	}
	rows, err = csv.NewReader(&steps).ReadAll()
	// One simulated step standing for all 1,000 iterations.
	if err != nil || len(rows) != 2 || rows[0][2] != "step_time_us" || rows[0][17] != "iterations" || rows[1][17] != "1000" {
		t.Errorf("steps csv: %d rows, %v, %v", len(rows), rows[:2], err)
	}
}

// TestConfigErrors: errors name the YAML path under workload.training, the value and what
// is allowed.
func TestConfigErrors(t *testing.T) {
	cases := []struct {
		yaml  string
		hosts int
		want  string
	}{
		{"model: {preset: llama3-8b}\ngpu: {preset: h100}\ngpus: 32\nplan: {tp: 3, pp: 2}", 32,
			"workload.training.plan.tp: tp=3 does not divide world size 32 (32 = tp x pp x dp needs 32 % (3x2) == 0)"},
		{"model: {preset: llama3-8b, kv_heads: 3}\ngpu: {preset: h100}", 8, "workload.training.model.kv_heads: 3: want a divisor of heads (32) between 1 and 32"},
		{"model: {preset: gpt5}\ngpu: {preset: h100}", 8, `workload.training.model.preset: "gpt5" is not a model preset; want one of deepseek-v3, llama3-405b, llama3-70b, llama3-8b`},
		{"model: {preset: llama3-8b}\ngpu: {preset: h100, busy_w: -5}", 8, "workload.training.gpu.busy_w: -5: want watts while computing, > 0 and <= 100000"},
		{"model: {preset: llama3-8b}\ngpu: {preset: tpu}", 8, `workload.training.gpu.preset: "tpu" is not a GPU preset; want one of b200, gb200, h100`},
		{"model: {preset: llama3-8b}\ngpu: {preset: h100}\nsteps: -1", 8, "workload.training.steps: -1: want 0 (1) to 100000000 iterations"},
		{"model: {preset: llama3-8b}\ngpu: {preset: h100}\ngoodput: {link_failure_restarts: 2}", 8, "workload.training.goodput.link_failure_restarts: 2: want a fraction in [0, 1]"},
		{"model: {preset: llama3-8b}\ngpu: {preset: h100}\ngpus: 2048", 1024, "workload.training.gpus: 2048 is more than the fabric's 1024 hosts"},
		{"model: {preset: llama3-8b}\ngpu: {preset: h100}\nplan: {ep: 2}", 8, "workload.training.plan.ep: ep=2 but Llama-3-8B is dense"},
		{"model: {preset: llama3-8b, dtype: fp8}\ngpu: {preset: h100, peak_fp8_tflops: 0}", 8, ""}, // preset's fp8 peak stays (0 does not override)
	}
	for _, c := range cases {
		cfg := decodeConfig(t, c.yaml)
		_, err := cfg.Job(c.hosts)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.yaml, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\nerror %v\nwant  %q", c.yaml, err, c.want)
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || !strings.HasPrefix(fe.Path, ConfigPath+".") {
			t.Errorf("%v: not a *FieldError under %s", err, ConfigPath)
		}
	}
	// Validate without a world checks what it can and leaves the plan to Job.
	cfg := decodeConfig(t, "model: {preset: llama3-8b}\ngpu: {preset: h100}\nplan: {tp: 3}")
	if err := cfg.Validate(); err != nil {
		t.Errorf("validate without gpus: %v", err)
	}
	cfg.GPUs = 32
	if err := cfg.Validate(); err == nil || !strings.HasPrefix(err.Error(), "workload.training.plan.tp: tp=3 does not divide world size 32") {
		t.Errorf("validate with gpus: %v", err)
	}
}
