package training

import (
	"errors"
	"strings"
	"testing"
)

// TestPlanArithmetic checks the group arithmetic: derived DP, and rejections that show the
// arithmetic, naming the field and the value.
func TestPlanArithmetic(t *testing.T) {
	l8 := mustModel(t, "llama3-8b")     // 32 layers, 32 heads, 8 kv heads, 512 sequences
	l70 := mustModel(t, "llama3-70b")   // 80 layers, 64 heads, 8 kv heads
	l405 := mustModel(t, "llama3-405b") // 126 layers
	ds := mustModel(t, "deepseek-v3")   // 61 layers, 256 experts, 15360 sequences
	cases := []struct {
		name  string
		m     Model
		world int
		plan  Plan
		want  Plan   // checked when err == ""
		err   string // substring of the error, with its path
	}{
		{"acceptance: 32 GPUs tp 4 pp 2 derive dp 4", l8, 32, Plan{TP: 4, PP: 2}, Plan{TP: 4, PP: 2, DP: 4, EP: 1}, ""},
		{"acceptance: tp 3 on 32 GPUs", l8, 32, Plan{TP: 3, PP: 2},
			Plan{}, "plan.tp: tp=3 does not divide world size 32 (32 = tp x pp x dp needs 32 % (3x2) == 0)"},
		{"1024 GPUs 70B tp 8 pp 4", l70, 1024, Plan{TP: 8, PP: 4}, Plan{TP: 8, PP: 4, DP: 32, EP: 1}, ""},
		{"defaults", l8, 8, Plan{}, Plan{TP: 1, PP: 1, DP: 8, EP: 1}, ""},
		{"pp does not divide", l8, 32, Plan{TP: 4, PP: 3}, Plan{}, "plan.pp: pp=3 does not divide world size 32 / tp 4 = 8 (32 = tp x pp x dp needs 32 % (4x3) == 0)"},
		{"dp mismatch", l8, 32, Plan{TP: 4, PP: 2, DP: 8}, Plan{}, "plan.dp: dp=8 gives tp x pp x dp = 4x2x8 = 64, want the world size 32 (give dp 0 to derive 32 / (4x2) = 4)"},
		{"tp beyond heads' divisors", l8, 48, Plan{TP: 3, PP: 1}, Plan{}, "plan.tp: tp=3 does not divide heads 32 of Llama-3-8B"},
		{"tp beyond kv heads", l70, 64, Plan{TP: 16}, Plan{}, "plan.tp: tp=16 does not divide kv_heads 8 of Llama-3-70B (8 % 16 = 8; Megatron-LM needs num_query_groups % tp == 0)"},
		{"layers per stage", l405, 40, Plan{TP: 8, PP: 5}, Plan{}, "plan.pp: pp=5 does not divide layers 126 of Llama-3-405B (126 % 5 = 1); give plan.stage_layers with 5 entries summing to 126, e.g. [26, 25, 25, 25, 25]"},
		{"stage layers given", l405, 40, Plan{TP: 8, PP: 5, StageLayers: []int{26, 25, 25, 25, 25}}, Plan{TP: 8, PP: 5, DP: 1, EP: 1}, ""},
		{"stage layers wrong sum", l405, 40, Plan{TP: 8, PP: 5, StageLayers: []int{25, 25, 25, 25, 25}}, Plan{}, "plan.stage_layers: [25 25 25 25 25] sums to 125; want the model's 126 layers"},
		{"stage layers wrong count", l405, 40, Plan{TP: 8, PP: 5, StageLayers: []int{63, 63}}, Plan{}, "plan.stage_layers: 2 entries; want one per pipeline stage, pp=5"},
		{"ep on a dense model", l8, 32, Plan{EP: 4}, Plan{}, "plan.ep: ep=4 but Llama-3-8B is dense (experts 0)"},
		{"ep divides dp", ds, 96, Plan{PP: 16, EP: 4, StageLayers: dsStages}, Plan{}, "plan.ep: ep=4 does not divide dp=6 (6 % 4 = 2; an expert-parallel group is ep consecutive data-parallel ranks, so dp % ep == 0)"},
		{"ep divides experts", ds, 48, Plan{EP: 48, StageLayers: []int{61}}, Plan{}, "plan.ep: ep=48 does not divide the 256 routed experts of DeepSeek-V3 (256 % 48 = 16)"},
		{"deepseek-v3 pp 16 ep 64", ds, 2048, Plan{PP: 16, EP: 64, StageLayers: dsStages}, Plan{TP: 1, PP: 16, DP: 128, EP: 64}, ""},
		{"batch over dp", l8, 384, Plan{}, Plan{}, "plan.dp: dp=384 does not divide the global batch of 512 sequences (512 % 384 = 128; each data-parallel rank takes global_batch / dp)"},
		{"micro batch", func() Model { m := l8; m.MicroBatch = 3; return m }(), 32, Plan{}, Plan{}, "model.micro_batch: micro_batch=3 does not divide the per-data-parallel batch of 16 sequences (global_batch 512 / dp 32; 16 % 3 = 1)"},
		{"order", l8, 32, Plan{Order: "tp,pp"}, Plan{}, `plan.order: "tp,pp": want tp, dp and pp each once, innermost first, e.g. "tp,dp,pp"`},
		{"order repeated", l8, 32, Plan{Order: "tp,tp,pp"}, Plan{}, "plan.order"},
		{"tp beyond world", l8, 4, Plan{TP: 8}, Plan{}, "plan.tp: 8: want 1 to the world size 4"},
		{"negative dp", l8, 4, Plan{DP: -1}, Plan{}, "plan.dp: -1: want 0 (derived) or 1 to the world size 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.plan.Resolve(c.world, c.m)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Path == "" {
					t.Errorf("error %v is not a *FieldError with a path", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.TP != c.want.TP || got.PP != c.want.PP || got.DP != c.want.DP || got.EP != c.want.EP {
				t.Errorf("resolved tp %d pp %d dp %d ep %d, want tp %d pp %d dp %d ep %d", got.TP, got.PP, got.DP, got.EP, c.want.TP, c.want.PP, c.want.DP, c.want.EP)
			}
			if got.TP*got.PP*got.DP != c.world {
				t.Errorf("tp x pp x dp = %d, want %d", got.TP*got.PP*got.DP, c.world)
			}
			sum := 0
			for _, n := range got.StageLayers {
				sum += n
			}
			if len(got.StageLayers) != got.PP || sum != c.m.Layers {
				t.Errorf("stage layers %v for pp %d and %d layers", got.StageLayers, got.PP, c.m.Layers)
			}
		})
	}
}

// dsStages splits DeepSeek-V3's 61 layers over 16 stages.
var dsStages = []int{3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2}

// TestMicrobatches: m = global batch / (dp x micro batch).
func TestMicrobatches(t *testing.T) {
	m := mustModel(t, "llama3-70b")
	p, err := Plan{TP: 8, PP: 4}.Resolve(1024, m)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Microbatches(m); got != 16 {
		t.Errorf("microbatches %d, want 512 / 32 = 16", got)
	}
}
