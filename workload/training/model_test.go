package training

import (
	"math"
	"strings"
	"testing"
)

// TestPresetParams checks parameter counts against the published totals.
func TestPresetParams(t *testing.T) {
	cases := []struct {
		name          string
		total, active float64 // billions
	}{
		{"llama3-8b", 8.03, 8.03},    // Llama 3 paper Table 3; HF card: 8.03B
		{"llama3-70b", 70.55, 70.55}, // HF card: 70.6B
		{"llama3-405b", 405.8, 405.8},
		{"deepseek-v3", 671, 37}, // DeepSeek-V3 report: 671B total, 37B activated (without the 14B MTP module)
	}
	for _, c := range cases {
		p := mustModel(t, c.name).Params()
		tot, act := float64(p.Total)/1e9, float64(p.Active)/1e9
		if math.Abs(tot-c.total)/c.total > 0.01 || math.Abs(act-c.active)/c.active > 0.02 {
			t.Errorf("%s: %.2fB params (%.2fB active), want %.2fB (%.2fB)", c.name, tot, act, c.total, c.active)
		}
	}
}

// TestStepFLOPsRuleOfThumb: the weight-matmul FLOPs of a dense step are within 0.5% of
// 6 x params x tokens counting every weight but the input embedding (which has no FLOPs; the
// rule as Kaplan et al. 2020 state it, C = 6 N T), and within a few percent of 6 x all params
// x tokens for the large models (the embedding is 1.5% of Llama-3-70B, 0.5% of 405B, but
// 6.5% of 8B); the attention term is 6 s a (2d) l per token (Narayanan et al., SC'21,
// Appendix).
func TestStepFLOPsRuleOfThumb(t *testing.T) {
	for _, c := range []struct {
		name string
		tol  float64 // against 6 x all params x tokens
	}{{"llama3-8b", 0.07}, {"llama3-70b", 0.02}, {"llama3-405b", 0.01}} {
		name := c.name
		m := mustModel(t, name)
		f := m.StepFLOPs()
		p := m.Params()
		rule := 6 * float64(p.Total) * float64(m.Tokens())
		if d := math.Abs(f.Matmul-rule) / rule; d > c.tol {
			t.Errorf("%s: matmul FLOPs %.4g, 6NT %.4g: off by %.1f%%", name, f.Matmul, rule, 100*d)
		}
		ne := 6 * float64(p.Total-p.Embedding) * float64(m.Tokens())
		if d := math.Abs(f.Matmul-ne) / ne; d > 0.005 {
			t.Errorf("%s: matmul FLOPs %.4g, 6 (N - embedding) T %.4g: off by %.2f%%", name, f.Matmul, ne, 100*d)
		}
		att := 6 * float64(m.SeqLen) * float64(m.Heads) * 2 * float64(m.HeadDim) * float64(m.Layers) * float64(m.Tokens())
		if math.Abs(f.Attention-att)/att > 1e-12 {
			t.Errorf("%s: attention FLOPs %.6g, want %.6g", name, f.Attention, att)
		}
		t.Logf("%s: %.4g FLOPs per step (6NT %.4g; attention adds %.1f%%)", name, f.Total(), rule, 100*f.Attention/f.Matmul)
	}
	// Active-parameter rule for the MoE model.
	ds := mustModel(t, "deepseek-v3")
	f := ds.StepFLOPs()
	rule := 6 * float64(ds.Params().Active) * float64(ds.Tokens())
	if d := math.Abs(f.Matmul-rule) / rule; d > 0.04 {
		t.Errorf("deepseek-v3: matmul FLOPs %.4g, 6 N_active T %.4g: off by %.1f%%", f.Matmul, rule, 100*d)
	}
}

// TestNarayananFormula: for GPT shapes (multi-head attention, a 4h GELU MLP, untied LM head)
// the step FLOPs equal Narayanan et al.'s 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) exactly
// (SC'21, Appendix; their 96 includes activation recomputation). GPT-3 175B shapes.
func TestNarayananFormula(t *testing.T) {
	m := Model{Name: "gpt3-175b", Layers: 96, Hidden: 12288, Heads: 96, FFN: 4 * 12288, MLP: "gelu", Vocab: 51200, SeqLen: 2048, GlobalBatch: 1536}
	m, err := m.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	B, s, l, h, V := float64(m.GlobalBatch), float64(m.SeqLen), float64(m.Layers), float64(m.Hidden), float64(m.Vocab)
	want := 72 * B * s * l * h * h * (1 + s/(6*h) + V/(12*l*h))
	if got := m.StepFLOPs().Total(); math.Abs(got-want)/want > 1e-9 {
		t.Errorf("GPT-3 step FLOPs %.6g, Narayanan's formula %.6g", got, want)
	}
}

// TestModelResolve: preset overrides, defaults, and errors that name the field, the value
// and the allowed range.
func TestModelResolve(t *testing.T) {
	m, err := Model{Preset: "llama3-70b", SeqLen: 4096, GlobalBatchTokens: 4 << 20}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	m.SeqLen = 8192
	m, err = m.Resolve() // resolving again keeps the sequences
	if err != nil {
		t.Fatal(err)
	}
	if m.SeqLen != 8192 || m.GlobalBatch != 1024 || m.Layers != 80 || m.HeadDim != 128 || m.GradDType != "fp32" { // the preset reduces gradients in fp32 (Llama 3 §3.3.2)
		t.Errorf("override: seq %d batch %d layers %d head_dim %d grad %s", m.SeqLen, m.GlobalBatch, m.Layers, m.HeadDim, m.GradDType)
	}
	bad := []struct {
		m    Model
		want string
	}{
		{Model{Preset: "llama4"}, `preset: "llama4" is not a model preset; want one of deepseek-v3, llama3-405b, llama3-70b, llama3-8b`},
		{Model{Preset: "llama3-8b", KVHeads: 5}, "kv_heads: 5: want a divisor of heads (32) between 1 and 32"},
		{Model{Preset: "llama3-8b", Layers: -1}, "layers: -1 is out of range; want 1 to 100000"},
		{Model{Preset: "llama3-8b", DType: "int4"}, `dtype: "int4": want bf16, fp16 or fp8`},
		{Model{Preset: "llama3-8b", GradDType: "fp8"}, `grad_dtype: "fp8": want bf16, fp16 or fp32`},
		{Model{Preset: "llama3-8b", MLP: "relu"}, `mlp: "relu": want swiglu (gated, 3 matrices) or gelu (2 matrices)`},
		{Model{Preset: "llama3-8b", TopK: 2}, "experts: 0 (a dense model) but top_k"},
		{Model{Preset: "deepseek-v3", TopK: 300}, "top_k: 300 is out of range; want 1 to 256 (experts per token, at most experts)"},
		{Model{Preset: "llama3-8b", GlobalBatchTokens: 1000}, "global_batch_tokens: 1000: want a positive multiple of seq_len 8192"},
		{Model{Preset: "llama3-8b", GlobalBatch: 4, GlobalBatchTokens: 8192}, "global_batch_tokens: 8192 given with global_batch 4 (= 32768 tokens); give one of them"},
		{Model{Layers: 2, Hidden: 64, Heads: 4, FFN: 256, Vocab: 100, SeqLen: 16}, "global_batch: missing"},
		{Model{Layers: 2, Hidden: 64, Heads: 4, FFN: 256, Vocab: 100, SeqLen: 16, GlobalBatch: 2, MicroBatch: 4}, "micro_batch: 4 is more than the global batch of 2 sequences"},
	}
	for _, c := range bad {
		_, err := c.m.Resolve()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.m, err, c.want)
		}
	}
}

// TestGPUPresets: presets resolve, inline fields override them, and errors name the field.
func TestGPUPresets(t *testing.T) {
	for _, name := range GPUPresets() {
		g := mustGPU(t, name)
		if g.CommW < 0.3*g.BusyW || g.CommW > 0.45*g.BusyW || g.IdleW < 100 || g.IdleW > 150 {
			t.Errorf("%s: comm %g W and idle %g W for busy %g W", name, g.CommW, g.IdleW, g.BusyW)
		}
	}
	g, err := GPU{Preset: "h100", Efficiency: 0.4}.Resolve()
	if err != nil || g.Efficiency != 0.4 || g.PeakTFLOPS != 989 {
		t.Errorf("override: %+v, %v", g, err)
	}
	if _, err := (GPU{Preset: "h100", IdleW: 800}).Resolve(); err == nil || !strings.Contains(err.Error(), "idle_w: 800: want watts in [0, busy_w = 700]") {
		t.Errorf("idle above busy: %v", err)
	}
	if _, err := (GPU{Preset: "h100", Efficiency: 1.5}).Resolve(); err == nil || !strings.Contains(err.Error(), "efficiency: 1.5: want a fraction of peak in (0, 1]") {
		t.Errorf("efficiency: %v", err)
	}
}
