package training

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
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

// TestPlanSchedules: the default schedule and virtual stages, the chunks' layers, and every
// rejection naming its field, across pipelines of the Llama presets.
func TestPlanSchedules(t *testing.T) {
	l8 := mustModel(t, "llama3-8b")     // 32 layers
	l70 := mustModel(t, "llama3-70b")   // 80 layers
	l405 := mustModel(t, "llama3-405b") // 126 layers
	cases := []struct {
		name    string
		m       Model
		world   int
		plan    Plan
		sched   string
		v       int
		chunks0 []int // stage 0's chunk layers
		err     string
	}{
		{"405B pp 16 lead's layout: interleaved v 8 (Llama 3)", l405, 128, Plan{TP: 8, PP: 16, StageLayers: l405Stages}, ScheduleInterleaved, 8, []int{1, 1, 1, 1, 1, 1, 1, 1}, ""},
		{"405B Llama 3's layout [7, 8 x 14, 7]: embedding-only first chunk", l405, 128, Plan{TP: 8, PP: 16, StageLayers: []int{7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7}}, ScheduleInterleaved, 8, []int{0, 1, 1, 1, 1, 1, 1, 1}, ""},
		{"70B pp 4: v 5 divides 20 (NeMo's VP 5)", l70, 32, Plan{TP: 8, PP: 4}, ScheduleInterleaved, 5, []int{4, 4, 4, 4, 4}, ""},
		{"8B pp 2: v 8", l8, 16, Plan{TP: 8, PP: 2}, ScheduleInterleaved, 8, []int{2, 2, 2, 2, 2, 2, 2, 2}, ""},
		{"8B pp 32: one layer a stage, 1f1b", l8, 32, Plan{PP: 32}, Schedule1F1B, 1, []int{1}, ""},
		{"pp 1: 1f1b", l8, 8, Plan{}, Schedule1F1B, 1, []int{32}, ""},
		{"explicit 1f1b", l70, 32, Plan{TP: 8, PP: 4, Schedule: "1F1B"}, Schedule1F1B, 1, []int{20}, ""},
		{"zb-h1", l70, 32, Plan{TP: 8, PP: 4, Schedule: "zb-h1"}, ScheduleZBH1, 1, []int{20}, ""},
		{"explicit v 2", l70, 32, Plan{TP: 8, PP: 4, VirtualStages: 2}, ScheduleInterleaved, 2, []int{10, 10}, ""},
		{"uneven v 3 on 20", l70, 32, Plan{TP: 8, PP: 4, VirtualStages: 3}, ScheduleInterleaved, 3, []int{6, 7, 7}, ""},
		{"bad schedule", l70, 32, Plan{TP: 8, PP: 4, Schedule: "gpipe"}, "", 0, nil, `plan.schedule: "gpipe": want 1f1b, interleaved or zb-h1`},
		{"v with 1f1b", l70, 32, Plan{TP: 8, PP: 4, Schedule: "1f1b", VirtualStages: 2}, "", 0, nil, "plan.virtual_stages: 2 with schedule 1f1b: virtual stages need schedule interleaved"},
		{"v with pp 1", l8, 8, Plan{VirtualStages: 2}, "", 0, nil, "plan.virtual_stages: 2 but pp=1"},
		{"v beyond a stage", l70, 32, Plan{TP: 8, PP: 4, VirtualStages: 21}, "", 0, nil, "plan.virtual_stages: 21: want 0 (default) or 1 to 20"},
		{"v that cannot cut the stages evenly", l405, 128, Plan{TP: 8, PP: 16, StageLayers: []int{18, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 4, 4, 4}, VirtualStages: 4}, "", 0, nil, "plan.virtual_stages: 4 cannot cut stage_layers"},
		{"v leaving a chunk empty", l405, 128, Plan{TP: 8, PP: 16, StageLayers: []int{8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7, 7}, VirtualStages: 8}, "", 0, nil, "plan.virtual_stages: 8 but stage 14 has 7 layers"},
		{"interleaved without room", l8, 32, Plan{PP: 32, Schedule: "interleaved"}, "", 0, nil, "plan.schedule: interleaved needs at least 2 virtual stages"},
		{"zero 4", l8, 8, Plan{ZeRO: 4}, "", 0, nil, "plan.zero: 4: want a ZeRO stage 0, 1, 2 or 3"},
		{"recompute", l8, 8, Plan{Recompute: "partial"}, "", 0, nil, `plan.recompute: "partial": want none, selective or full`},
		{"cp divides", l8, 24, Plan{TP: 4, CP: 4}, "", 0, nil, "plan.cp: cp=4 does not divide world size 24 / tp 4 = 6"},
		{"cp splits the sequence", func() Model { m := l8; m.SeqLen = 8190; return m }(), 16, Plan{CP: 4}, "", 0, nil, "plan.cp: cp=4 needs seq_len 8190 to split into 2 x cp = 8 equal chunks"},
		{"cp dp arithmetic", l8, 64, Plan{TP: 8, CP: 2, DP: 3}, "", 0, nil, "plan.dp: dp=3 gives tp x cp x pp x dp = 8x2x1x3 = 48, want the world size 64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.plan.Resolve(c.world, c.m)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Schedule != c.sched || got.VirtualStages != c.v {
				t.Errorf("schedule %s v %d, want %s v %d", got.Schedule, got.VirtualStages, c.sched, c.v)
			}
			if ch := got.ChunkLayers(0); fmt.Sprint(ch) != fmt.Sprint(c.chunks0) {
				t.Errorf("stage 0 chunks %v, want %v", ch, c.chunks0)
			}
			for s := range got.StageLayers {
				sum := 0
				for _, n := range got.ChunkLayers(s) {
					sum += n
				}
				if sum != got.StageLayers[s] {
					t.Errorf("stage %d chunks %v sum to %d, want %d", s, got.ChunkLayers(s), sum, got.StageLayers[s])
				}
			}
		})
	}
}

// TestPlanYAMLCompat: zero and recompute keep their old boolean YAML (true = ZeRO 1 and full
// recomputation) beside the stages and modes; orders may name cp.
func TestPlanYAMLCompat(t *testing.T) {
	cases := []struct {
		src  string
		zero ZeROStage
		rec  RecomputeMode
		err  string
	}{
		{"{zero: true, recompute: true}", 1, RecomputeFull, ""},
		{"{zero: false, recompute: false}", 0, RecomputeNone, ""},
		{"{zero: 3, recompute: selective}", 3, RecomputeSelective, ""},
		{"{zero: 2, recompute: none}", 2, RecomputeNone, ""},
		{"{zero: 5}", 0, "", "want 0, 1, 2 or 3"},
		{"{recompute: some}", 0, "", "want none, selective or full"},
	}
	for _, c := range cases {
		var p Plan
		err := yaml.Unmarshal([]byte(c.src), &p)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.src, err, c.err)
			}
			continue
		}
		if err != nil || p.ZeRO != c.zero || p.Recompute != c.rec {
			t.Errorf("%s: zero %d recompute %q (%v), want %d %q", c.src, p.ZeRO, p.Recompute, err, c.zero, c.rec)
		}
	}
	for _, o := range []string{"tp,dp,pp", "tp,cp,dp,pp", "cp,tp,pp,dp", "dp, TP ,pp"} {
		if _, err := ParseOrder(o); err != nil {
			t.Errorf("order %q: %v", o, err)
		}
	}
	for _, o := range []string{"tp,cp,pp", "tp,dp,pp,cp,cp", "tp,dp,ep"} {
		if _, err := ParseOrder(o); err == nil {
			t.Errorf("order %q accepted", o)
		}
	}
}
