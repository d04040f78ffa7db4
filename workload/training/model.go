package training

import (
	"bytes"
	_ "embed"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Model describes a decoder-only transformer and its training batch. It decodes from YAML (the
// tags below); zero fields take the defaults Resolve documents, and Preset names an embedded
// preset whose fields the non-zero fields here override ("preset: llama3-70b, seq_len: 4096").
//
// Shapes: Hidden h, Heads a, KVHeads (grouped-query attention; a = multi-head), HeadDim d
// (default h/a), FFN f (the dense MLP's intermediate size), Vocab V, SeqLen s. A mixture-of-
// experts model sets Experts E routed experts per MoE layer (plus SharedExperts always-active
// ones), TopK k experts per token, ExpertFFN f_e, and DenseLayers: how many of the first
// layers are dense (DeepSeek-V3: 3). Multi-head latent attention (DeepSeek-V2/V3) is
// selected by KVLoRARank > 0, with QLoRARank, RopeHeadDim and VHeadDim. Embeddings are untied
// (an input embedding and an LM head of V x h each).
//
// Batch: GlobalBatch sequences (or GlobalBatchTokens tokens, a multiple of SeqLen) per
// optimizer step, in microbatches of MicroBatch sequences. DType is the element type of
// weights, activations and their communication (bf16, fp16 or fp8: 2, 2, 1 bytes; fp8
// computes at the GPU's FP8 peak); GradDType that of the gradients the data-parallel
// reduction carries (bf16, fp16 or fp32; default: DType, bf16 for fp8).
type Model struct {
	Preset string `yaml:"preset,omitempty"` // embedded preset to start from (ModelPresets); "" for none
	Name   string `yaml:"name,omitempty"`   // label in reports; default the preset name

	Layers  int    `yaml:"layers,omitempty"`   // transformer layers, 1 to 100000
	Hidden  int    `yaml:"hidden,omitempty"`   // h, the model width
	Heads   int    `yaml:"heads,omitempty"`    // a, attention (query) heads
	KVHeads int    `yaml:"kv_heads,omitempty"` // key/value heads (grouped-query attention), dividing heads; default heads
	HeadDim int    `yaml:"head_dim,omitempty"` // d, per-head dimension; default hidden/heads
	FFN     int    `yaml:"ffn,omitempty"`      // f, the dense MLP's intermediate size
	MLP     string `yaml:"mlp,omitempty"`      // swiglu (3 matrices, default) or gelu (2)
	Vocab   int    `yaml:"vocab,omitempty"`    // V, vocabulary size
	SeqLen  int    `yaml:"seq_len,omitempty"`  // s, tokens per sequence

	// Multi-head latent attention (DeepSeek-V2 §2.1): on when KVLoRARank > 0.
	QLoRARank   int `yaml:"q_lora_rank,omitempty"`   // query compression rank (0: uncompressed queries)
	KVLoRARank  int `yaml:"kv_lora_rank,omitempty"`  // key/value compression rank
	RopeHeadDim int `yaml:"rope_head_dim,omitempty"` // decoupled rotary query/key dimension per head
	VHeadDim    int `yaml:"v_head_dim,omitempty"`    // value dimension per head; default head_dim

	// Mixture of experts: on when Experts > 0.
	Experts       int `yaml:"experts,omitempty"`        // E, routed experts per MoE layer
	SharedExperts int `yaml:"shared_experts,omitempty"` // always-active experts per MoE layer
	TopK          int `yaml:"top_k,omitempty"`          // k, routed experts per token, 1 to E
	ExpertFFN     int `yaml:"expert_ffn,omitempty"`     // f_e, an expert MLP's intermediate size
	DenseLayers   int `yaml:"dense_layers,omitempty"`   // leading layers with a dense MLP

	DType             string `yaml:"dtype,omitempty"`               // bf16 (default), fp16 or fp8
	GradDType         string `yaml:"grad_dtype,omitempty"`          // bf16, fp16 or fp32; default dtype (bf16 for fp8)
	GlobalBatch       int    `yaml:"global_batch,omitempty"`        // sequences per optimizer step
	GlobalBatchTokens int64  `yaml:"global_batch_tokens,omitempty"` // or tokens per step, a multiple of seq_len
	MicroBatch        int    `yaml:"micro_batch,omitempty"`         // b, sequences per microbatch; default 1
}

// Limits on model fields, so that byte and FLOP arithmetic stays exact in int64 and float64.
const (
	maxLayers = 100_000
	maxDim    = 1 << 20 // hidden, ffn, heads x head_dim, vocab / 16
	maxVocab  = 1 << 24
	maxSeq    = 1 << 24
	maxBatch  = 1 << 30
)

//go:embed presets.yaml
var presetsYAML []byte

type presetFile struct {
	Models map[string]Model `yaml:"models"`
	GPUs   map[string]GPU   `yaml:"gpus"`
}

var presets = sync.OnceValues(func() (*presetFile, error) {
	var pf presetFile
	dec := yaml.NewDecoder(bytes.NewReader(presetsYAML))
	dec.KnownFields(true)
	if err := dec.Decode(&pf); err != nil {
		return nil, fmt.Errorf("training: embedded presets: %w", err)
	}
	return &pf, nil
})

// ModelPresets returns the names of the embedded model presets, sorted: deepseek-v3,
// llama3-405b, llama3-70b, llama3-8b. Their shapes and sources are in presets.yaml:
//
//	llama3-8b    32 layers, h 4096, 32 heads / 8 KV, FFN 14336, V 128256, s 8192, 512 seqs    Dubey et al. 2024, Table 3
//	llama3-70b   80 layers, h 8192, 64 / 8, FFN 28672, V 128256, s 8192, 512 seqs
//	llama3-405b  126 layers, h 16384, 128 / 8, FFN 53248, V 128256, s 8192, 2048 seqs (16M tokens, §3.4.1)
//	deepseek-v3  61 layers, h 7168, MLA 128 heads, 3 dense (FFN 18432) + 58 MoE (256 routed + 1 shared,
//	             top-8, expert FFN 2048), V 129280, s 4096, 15360 seqs                        DeepSeek-V3 report §4.2
func ModelPresets() []string {
	pf, err := presets()
	if err != nil {
		return nil
	}
	return sortedKeys(pf.Models)
}

// ModelPreset returns the preset named name, resolved. Errors: an unknown name (listing the
// known ones).
func ModelPreset(name string) (Model, error) {
	pf, err := presets()
	if err != nil {
		return Model{}, err
	}
	m, ok := pf.Models[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Model{}, errorf("preset", "%q is not a model preset; want one of %s", name, strings.Join(sortedKeys(pf.Models), ", "))
	}
	m.Preset = strings.ToLower(strings.TrimSpace(name))
	return m.fill()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// overlay copies every non-zero field of top (except Preset) onto base; both are structs of
// the same type passed by pointer.
func overlay(base, top any) {
	b, t := reflect.ValueOf(base).Elem(), reflect.ValueOf(top).Elem()
	for i := 0; i < t.NumField(); i++ {
		if t.Type().Field(i).Name == "Preset" {
			continue
		}
		if f := t.Field(i); !f.IsZero() {
			b.Field(i).Set(f)
		}
	}
}

// ParseModel decodes one YAML model description strictly (unknown keys are errors) and
// resolves it. Errors name the field ("model.kv_heads: ..."), the value and what is allowed.
func ParseModel(data []byte) (Model, error) {
	var m Model
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return Model{}, &FieldError{Path: "model", Msg: strings.ReplaceAll(err.Error(), "\n", "; ")}
	}
	r, err := m.Resolve()
	return r, under("model", err)
}

// Resolve returns m with its preset applied (m's non-zero fields override the preset's) and
// the defaults filled in, validated:
//
//   - KVHeads: Heads; HeadDim: Hidden/Heads; MLP: swiglu; VHeadDim: HeadDim (MLA);
//   - MicroBatch: 1; DType: bf16; GradDType: DType (bf16 when DType is fp8);
//   - GlobalBatch from GlobalBatchTokens / SeqLen when tokens are given (the resolved model
//     keeps GlobalBatch only, so changing SeqLen and resolving again keeps the sequences);
//     a batch given inline replaces the preset's, in either unit.
//
// Errors (*FieldError, paths relative to the model: "kv_heads"): any field out of range, with
// the value and the allowed range.
func (m Model) Resolve() (Model, error) {
	r := m
	if p := strings.TrimSpace(m.Preset); p != "" {
		pf, err := presets()
		if err != nil {
			return Model{}, err
		}
		base, ok := pf.Models[strings.ToLower(p)]
		if !ok {
			return Model{}, errorf("preset", "%q is not a model preset; want one of %s", p, strings.Join(sortedKeys(pf.Models), ", "))
		}
		overlay(&base, &m)
		// a batch given inline replaces the preset's, in whichever unit it is given
		if m.GlobalBatchTokens != 0 && m.GlobalBatch == 0 {
			base.GlobalBatch = 0
		}
		if m.GlobalBatch != 0 && m.GlobalBatchTokens == 0 {
			base.GlobalBatchTokens = 0
		}
		r = base
		r.Preset = strings.ToLower(p)
	}
	return r.fill()
}

// fill applies the defaults and validates.
func (r Model) fill() (Model, error) {
	if r.Heads > 0 {
		if r.KVHeads == 0 {
			r.KVHeads = r.Heads
		}
		if r.HeadDim == 0 && r.Hidden%r.Heads == 0 {
			r.HeadDim = r.Hidden / r.Heads
		}
	}
	if r.MLP == "" {
		r.MLP = "swiglu"
	}
	if r.KVLoRARank > 0 && r.VHeadDim == 0 {
		r.VHeadDim = r.HeadDim
	}
	if r.MicroBatch == 0 {
		r.MicroBatch = 1
	}
	if r.DType == "" {
		r.DType = "bf16"
	}
	r.DType = strings.ToLower(r.DType)
	if r.GradDType == "" {
		r.GradDType = r.DType
		if b, _ := dtypeBytes(r.DType); b == 1 {
			r.GradDType = "bf16"
		}
	}
	r.GradDType = strings.ToLower(r.GradDType)
	if r.Name == "" {
		r.Name = r.Preset
	}
	if err := r.validate(); err != nil {
		return Model{}, err
	}
	if r.GlobalBatch == 0 {
		r.GlobalBatch = int(r.GlobalBatchTokens / int64(r.SeqLen))
	}
	r.GlobalBatchTokens = 0 // converted: a resolved model counts its batch in sequences
	return r, nil
}

func checkRange(path string, v, lo, hi int, why string) error {
	if v < lo || v > hi {
		if why != "" {
			why = " (" + why + ")"
		}
		return errorf(path, "%d is out of range; want %d to %d%s", v, lo, hi, why)
	}
	return nil
}

// validate checks a model whose defaults are filled.
func (m Model) validate() error {
	checks := []struct {
		path   string
		v      int
		lo, hi int
		why    string
	}{
		{"layers", m.Layers, 1, maxLayers, ""},
		{"hidden", m.Hidden, 1, maxDim, ""},
		{"heads", m.Heads, 1, maxDim, ""},
		{"vocab", m.Vocab, 1, maxVocab, ""},
		{"seq_len", m.SeqLen, 1, maxSeq, "tokens per sequence"},
		{"micro_batch", m.MicroBatch, 1, maxBatch, "sequences per microbatch"},
	}
	for _, c := range checks {
		if err := checkRange(c.path, c.v, c.lo, c.hi, c.why); err != nil {
			return err
		}
	}
	if m.KVHeads < 1 || m.KVHeads > m.Heads || m.Heads%m.KVHeads != 0 {
		return errorf("kv_heads", "%d: want a divisor of heads (%d) between 1 and %d", m.KVHeads, m.Heads, m.Heads)
	}
	if m.HeadDim == 0 {
		return errorf("head_dim", "0 and hidden %d is not a multiple of heads %d; give head_dim", m.Hidden, m.Heads)
	}
	if err := checkRange("head_dim", m.HeadDim, 1, maxDim, ""); err != nil {
		return err
	}
	if m.Heads*m.HeadDim > maxDim {
		return errorf("head_dim", "%d x heads %d = %d is beyond %d", m.HeadDim, m.Heads, m.Heads*m.HeadDim, maxDim)
	}
	if m.MLP != "swiglu" && m.MLP != "gelu" {
		return errorf("mlp", "%q: want swiglu (gated, 3 matrices) or gelu (2 matrices)", m.MLP)
	}
	for _, c := range []struct {
		path string
		v    int
	}{{"q_lora_rank", m.QLoRARank}, {"kv_lora_rank", m.KVLoRARank}, {"rope_head_dim", m.RopeHeadDim}, {"v_head_dim", m.VHeadDim}} {
		if err := checkRange(c.path, c.v, 0, maxDim, ""); err != nil {
			return err
		}
	}
	if m.KVLoRARank == 0 && (m.QLoRARank != 0 || m.RopeHeadDim != 0 || m.VHeadDim != 0) {
		return errorf("kv_lora_rank", "0 but q_lora_rank, rope_head_dim or v_head_dim is set; multi-head latent attention needs kv_lora_rank > 0")
	}
	if m.KVLoRARank > 0 && m.VHeadDim < 1 {
		return errorf("v_head_dim", "%d: want >= 1 with multi-head latent attention", m.VHeadDim)
	}
	if m.Experts > 0 {
		if err := checkRange("experts", m.Experts, 1, 1<<16, "routed experts per MoE layer"); err != nil {
			return err
		}
		if err := checkRange("top_k", m.TopK, 1, m.Experts, "experts per token, at most experts"); err != nil {
			return err
		}
		if err := checkRange("expert_ffn", m.ExpertFFN, 1, maxDim, ""); err != nil {
			return err
		}
		if err := checkRange("shared_experts", m.SharedExperts, 0, 1<<10, ""); err != nil {
			return err
		}
		if err := checkRange("dense_layers", m.DenseLayers, 0, m.Layers, "leading dense layers, at most layers"); err != nil {
			return err
		}
	} else {
		switch {
		case m.Experts < 0:
			return errorf("experts", "%d: want 0 (dense) or a positive number of routed experts", m.Experts)
		case m.TopK != 0, m.ExpertFFN != 0, m.SharedExperts != 0, m.DenseLayers != 0:
			return errorf("experts", "0 (a dense model) but top_k, expert_ffn, shared_experts or dense_layers is set; set experts for a mixture of experts")
		}
	}
	if m.denseLayers() > 0 {
		if err := checkRange("ffn", m.FFN, 1, maxDim, "dense MLP intermediate size"); err != nil {
			return err
		}
	} else if err := checkRange("ffn", m.FFN, 0, maxDim, ""); err != nil {
		return err
	}
	if b, ok := dtypeBytes(m.DType); !ok || b == 4 {
		return errorf("dtype", "%q: want bf16, fp16 or fp8", m.DType)
	}
	if b, ok := dtypeBytes(m.GradDType); !ok || b == 1 {
		return errorf("grad_dtype", "%q: want bf16, fp16 or fp32", m.GradDType)
	}
	switch {
	case m.GlobalBatch != 0 && m.GlobalBatchTokens != 0 && m.GlobalBatchTokens != int64(m.GlobalBatch)*int64(m.SeqLen):
		return errorf("global_batch_tokens", "%d given with global_batch %d (= %d tokens); give one of them", m.GlobalBatchTokens, m.GlobalBatch, int64(m.GlobalBatch)*int64(m.SeqLen))
	case m.GlobalBatch == 0 && m.GlobalBatchTokens == 0:
		return errorf("global_batch", "missing; give global_batch (sequences per step) or global_batch_tokens")
	case m.GlobalBatch != 0:
		if err := checkRange("global_batch", m.GlobalBatch, 1, maxBatch, "sequences per step"); err != nil {
			return err
		}
	default:
		if m.GlobalBatchTokens < 0 || m.GlobalBatchTokens%int64(m.SeqLen) != 0 || m.GlobalBatchTokens/int64(m.SeqLen) > maxBatch {
			return errorf("global_batch_tokens", "%d: want a positive multiple of seq_len %d (at most %d sequences)", m.GlobalBatchTokens, m.SeqLen, maxBatch)
		}
	}
	seqs := m.GlobalBatch
	if seqs == 0 {
		seqs = int(m.GlobalBatchTokens / int64(m.SeqLen))
	}
	if m.MicroBatch > seqs {
		return errorf("micro_batch", "%d is more than the global batch of %d sequences", m.MicroBatch, seqs)
	}
	if int64(m.MicroBatch)*int64(m.SeqLen) > 1<<28 {
		return errorf("micro_batch", "%d x seq_len %d = %d tokens per microbatch; at most %d", m.MicroBatch, m.SeqLen, int64(m.MicroBatch)*int64(m.SeqLen), 1<<28)
	}
	return nil
}

// IsMoE reports whether the model has mixture-of-experts layers.
func (m Model) IsMoE() bool { return m.Experts > 0 }

// denseLayers returns how many layers have a dense MLP.
func (m Model) denseLayers() int {
	if m.Experts > 0 {
		return m.DenseLayers
	}
	return m.Layers
}

// moeLayer reports whether layer i (0-based) is a mixture-of-experts layer.
func (m Model) moeLayer(i int) bool { return m.Experts > 0 && i >= m.DenseLayers }

// bytesPerElem returns the bytes of one element of DType.
func (m Model) bytesPerElem() int64 { b, _ := dtypeBytes(m.DType); return int64(b) }

// gradBytesPerParam returns the bytes of one gradient element (GradDType).
func (m Model) gradBytesPerParam() int64 { b, _ := dtypeBytes(m.GradDType); return int64(b) }

// Tokens returns the tokens per optimizer step, GlobalBatch x SeqLen.
func (m Model) Tokens() int64 { return int64(m.GlobalBatch) * int64(m.SeqLen) }

// ActivationBytes returns the bytes of one microbatch's activations at a layer boundary,
// MicroBatch x SeqLen x Hidden x DType bytes: what a tensor-parallel all-reduce and a pipeline
// send carry (Narayanan et al., SC'21, §3.2 and §4.1).
func (m Model) ActivationBytes() int64 {
	return int64(m.MicroBatch) * int64(m.SeqLen) * int64(m.Hidden) * m.bytesPerElem()
}
