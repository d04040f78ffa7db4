package training

import (
	"fmt"
	"strings"
)

// Dim is a parallelism dimension of the rank grid.
type Dim uint8

// Dimensions. Expert parallelism is not a grid dimension: it subdivides DP (see Plan).
const (
	DimTP Dim = iota // tensor parallel
	DimDP            // data parallel
	DimPP            // pipeline parallel
	DimCP            // context parallel (sequence split over CP ranks)
	// NumDims is the number of grid dimensions (4).
	NumDims
)

var dimNames = [NumDims]string{"tp", "dp", "pp", "cp"}

// String returns "tp", "dp", "pp" or "cp".
func (d Dim) String() string {
	if d < NumDims {
		return dimNames[d]
	}
	return fmt.Sprintf("dim(%d)", d)
}

// DefaultOrder is the placement order used when a plan gives none: TP innermost (consecutive
// GPUs, inside one NVLink domain), then DP, then PP outermost (Megatron-LM's default
// tp-dp-pp rank order). With context parallelism (cp > 1) an order that does not name cp
// places it right after tp ("tp,cp,dp,pp"; Llama 3 orders its groups [TP, CP, PP, DP],
// Dubey et al. 2024, §3.3.2).
const DefaultOrder = "tp,dp,pp"

// Pipeline schedules (Plan.Schedule).
const (
	// Schedule1F1B is Megatron-LM's non-interleaved one-forward-one-backward schedule
	// (PipeDream-Flush; Narayanan et al., SC'21 §2.2.1): bubble (p-1)/m of the ideal time.
	Schedule1F1B = "1f1b"
	// ScheduleInterleaved is the interleaved 1F1B schedule with V model chunks (virtual
	// stages) per rank (Narayanan et al., SC'21 §2.2.2): bubble (p-1)/(V m), V times the
	// pipeline sends.
	ScheduleInterleaved = "interleaved"
	// ScheduleZBH1 is zero-bubble ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism",
	// ICLR 2024, §3): the backward split into B (input gradient) and W (weight gradient), W
	// deferred into the bubbles; bubble (p-1)(T_F + T_B - T_W), about a third of 1F1B's
	// when T_F = T_B = T_W, at 1F1B's activation memory.
	ScheduleZBH1 = "zb-h1"
)

// MaxDefaultVirtualStages caps the default number of virtual stages: past about 8 chunks per
// rank the bubble gained ((p-1)/(V m)) is small next to the V-fold pipeline traffic.
// Megatron-Core and NeMo recipes use 5 to 12 (Llama-3-70B VP 5 on PP 4, GPT-3 175B VP 12 on
// PP 8); Llama 3 405B ran V = 8 on PP 16 (Dubey et al. 2024, §3.3.2: its first chunk on the
// first stage holds only the embedding and its last chunk on the last stage only the output
// head, which with 126 layers on 16 x V chunks means V = 8, one layer per chunk).
const MaxDefaultVirtualStages = 8

// ZeROStage is how much of the training state is sharded over the data-parallel group
// (Rajbhandari et al., "ZeRO", SC'20): 0 none (gradients all-reduced), 1 the optimizer state
// (reduce-scatter + parameter all-gather: Megatron's distributed optimizer), 2 also the
// gradients (each microbatch's backward reduce-scatters its gradients into the shard), 3
// also the parameters (ZeRO-3 / FSDP: each layer's parameters all-gathered before its
// forward and again before its backward, every microbatch). In YAML an integer 0 to 3, or a
// boolean (true = 1, as the field was a boolean before the stages).
type ZeROStage int

// UnmarshalText reads "0" to "3", "true" (1) or "false" (0).
func (z *ZeROStage) UnmarshalText(b []byte) error {
	switch v := strings.ToLower(strings.TrimSpace(string(b))); v {
	case "true":
		*z = 1
	case "false", "":
		*z = 0
	case "0", "1", "2", "3":
		*z = ZeROStage(v[0] - '0')
	default:
		return fmt.Errorf("want 0, 1, 2 or 3 (ZeRO stage; true means 1)") // the decoder names the value
	}
	return nil
}

// MarshalText writes the stage as a digit.
func (z ZeROStage) MarshalText() ([]byte, error) { return []byte(fmt.Sprint(int(z))), nil }

// RecomputeMode is the activation recomputation of the backward (Korthikanti et al.,
// "Reducing Activation Recomputation in Large Transformer Models", MLSys 2023): none,
// selective (recompute the attention core, QK^T, softmax and attention over V, before its
// backward: the cheap-to-recompute, memory-heavy part, §5) or full (recompute the layer's
// whole forward, with its tensor-parallel communication). In YAML one of those names, or a
// boolean (true = full, as the field was a boolean before the modes).
type RecomputeMode string

// Recomputation modes.
const (
	RecomputeNone      RecomputeMode = "none"
	RecomputeSelective RecomputeMode = "selective"
	RecomputeFull      RecomputeMode = "full"
)

// UnmarshalText reads none, selective, full, true (full) or false (none).
func (r *RecomputeMode) UnmarshalText(b []byte) error {
	switch v := strings.ToLower(strings.TrimSpace(string(b))); v {
	case "true", "full":
		*r = RecomputeFull
	case "false", "none":
		*r = RecomputeNone
	case "selective":
		*r = RecomputeSelective
	case "":
		*r = ""
	default:
		return fmt.Errorf("want none, selective or full (true means full)") // the decoder names the value
	}
	return nil
}

// MarshalText writes the mode's name.
func (r RecomputeMode) MarshalText() ([]byte, error) { return []byte(r), nil }

// Plan is a parallelism plan: how the model is split over the world's GPUs. It decodes from
// YAML.
//
// The rules (Resolve checks each and shows the arithmetic when one fails):
//   - TP x PP x DP = world size; DP 0 is derived as world / (TP x PP).
//   - TP divides heads, kv_heads (Megatron-LM needs num_query_groups % tp == 0), the dense
//     FFN size and the expert FFN size.
//   - PP divides layers, unless StageLayers lists each stage's layer count (len PP, >= 1 each,
//     summing to layers).
//   - EP (expert parallelism, MoE models only) divides DP and the number of routed experts:
//     an expert-parallel group is EP consecutive data-parallel ranks with the same TP and PP
//     coordinates (Megatron-Core's expert_model_parallel_size within the data-parallel group;
//     the expert weights' gradients are then reduced over the DP/EP ranks holding the same
//     experts).
//   - DP divides the global batch (in sequences), and the model's micro-batch divides the
//     per-DP batch; microbatches per step m = global_batch / (DP x micro_batch).
//
// CP (context parallelism) splits every sequence over CP ranks: each computes the layers for
// s/CP tokens and all-gathers the keys and values of the others before its attention (see
// Job). The world is TP x CP x PP x DP.
//
// Order lists the grid dimensions innermost first ("tp,dp,pp" = DefaultOrder; "tp,cp,dp,pp"
// with context parallelism; an order without cp places it right after tp): rank r has
// coordinate r mod size(first) in the first dimension, and so on, and runs on fabric host r
// (host index = GPU index). Domain overrides the GPU's scale-up domain size G (0: the GPU's
// ScaleUpGPUs).
//
// Schedule picks the pipeline schedule (Schedule1F1B, ScheduleInterleaved, ScheduleZBH1;
// default: interleaved when the stages can be cut into virtual stages, else 1f1b) and
// VirtualStages V the model chunks per rank of the interleaved schedule (Megatron's
// virtual_pipeline_model_parallel_size); see Resolve for the defaults. ZeRO is the ZeRO stage
// (ZeROStage) and Recompute the activation recomputation (RecomputeMode).
type Plan struct {
	TP            int           `yaml:"tp,omitempty"`             // tensor-parallel group size; default 1
	CP            int           `yaml:"cp,omitempty"`             // context-parallel group size; default 1
	PP            int           `yaml:"pp,omitempty"`             // pipeline stages; default 1
	DP            int           `yaml:"dp,omitempty"`             // data-parallel replicas; 0 derives world / (tp x cp x pp)
	EP            int           `yaml:"ep,omitempty"`             // expert-parallel group size, dividing dp; default 1
	Order         string        `yaml:"order,omitempty"`          // placement order, innermost first; default "tp,dp,pp"
	StageLayers   []int         `yaml:"stage_layers,omitempty"`   // layers per stage (len pp, summing to layers); default even
	Schedule      string        `yaml:"schedule,omitempty"`       // 1f1b, interleaved or zb-h1; default see Resolve
	VirtualStages int           `yaml:"virtual_stages,omitempty"` // interleaved: model chunks per rank; 0 default
	ZeRO          ZeROStage     `yaml:"zero,omitempty"`           // ZeRO stage 0-3 (true = 1)
	Recompute     RecomputeMode `yaml:"recompute,omitempty"`      // none, selective or full (true = full)
	Domain        int           `yaml:"domain,omitempty"`         // GPUs per scale-up domain; 0: the GPU's scale_up_gpus

	note     string // set by Resolve: why the schedule was changed (see Note)
	resolved bool   // set by Resolve: Schedule and VirtualStages are resolved values, not input
}

// ParseOrder parses a placement order: the dimensions tp, dp and pp, each once, and
// optionally cp, separated by commas, innermost first ("tp,dp,pp", "tp,cp,dp,pp"). Without
// cp, cp is placed right after tp. Errors list what is allowed.
func ParseOrder(s string) ([NumDims]Dim, error) {
	var out [NumDims]Dim
	bad := fmt.Errorf("%q: want tp, dp and pp each once, innermost first, e.g. %q (and optionally cp, e.g. \"tp,cp,dp,pp\")", s, DefaultOrder)
	parts := strings.Split(s, ",")
	if len(parts) != int(NumDims) && len(parts) != int(NumDims)-1 {
		return out, bad
	}
	seen := [NumDims]bool{}
	var got []Dim
	for _, p := range parts {
		p = strings.ToLower(strings.TrimSpace(p))
		found := false
		for d, n := range dimNames {
			if p == n && !seen[d] {
				got, seen[d], found = append(got, Dim(d)), true, true
			}
		}
		if !found {
			return out, bad
		}
	}
	if !seen[DimTP] || !seen[DimDP] || !seen[DimPP] {
		return out, bad
	}
	if !seen[DimCP] {
		for i, d := range got {
			if d == DimTP {
				got = append(got[:i+1], append([]Dim{DimCP}, got[i+1:]...)...)
				break
			}
		}
	}
	copy(out[:], got)
	return out, nil
}

// Resolve checks p against a world of world GPUs and model m (resolved), and returns it with
// its defaults filled in (TP, CP, PP, EP 1; DP derived; Order DefaultOrder, with cp after tp
// when cp > 1; StageLayers the even split; Schedule, VirtualStages, Recompute as below).
// Errors are *FieldError values whose paths are relative to a training configuration
// ("plan.tp", "model.micro_batch") and whose messages show the arithmetic:
//
//	plan.tp: tp=3 does not divide world size 32 (32 = tp x pp x dp needs 32 % (3x2) == 0)
//
// Schedule and virtual stages. With pp 1 there is no pipeline and every schedule resolves to
// 1f1b (zb-h1's split of the weight gradients only fills pipeline bubbles; there are none),
// written so in the resolved scenario and noted in the job summary (Note).
// VirtualStages 0 takes, for the interleaved schedule, the largest V <= 8
// (MaxDefaultVirtualStages) that divides every stage's layer count, else the largest V <= 8
// that cuts every stage into chunks whose sizes all lie in {q, q+1} for one q (a chunk may
// then hold no layer, as Llama 3's embedding-only first and head-only last chunks do); V 1
// when neither exists. The default Schedule is interleaved when that V is at least 2, else
// 1f1b. Chunk c of stage s is virtual stage c x pp + s (Narayanan et al., SC'21 §2.2.2):
// the model's layers run through the virtual stages in order.
//
// The interleaved schedule needs the microbatches per step to be a multiple of pp, as
// Megatron-LM asserts for its interleaved schedule: with a remainder the last group of
// m mod pp microbatches leaves bubbles that can make interleaved slower than 1f1b (405B on
// 1024 GPUs, pp 16, 24 microbatches: 19.2 s against 13.5 s). So the default is interleaved only
// when microbatches % pp == 0, else 1f1b (Note says why); an explicit schedule interleaved
// (or virtual_stages > 1) with a remainder is an error naming the fixes. A chunk given by an
// explicit virtual_stages must hold at least one layer (V <= every stage's layers); the
// default V may leave chunks empty, as Llama 3's embedding-only first chunk.
//
// Microbatches per step above MaxMicrobatches are an error (model.global_batch).
func (p Plan) Resolve(world int, m Model) (Plan, error) {
	r := p
	if world < 1 || world > 1<<24 {
		return Plan{}, errorf("gpus", "%d: want a world size of 1 to %d GPUs", world, 1<<24)
	}
	if r.TP == 0 {
		r.TP = 1
	}
	if r.CP == 0 {
		r.CP = 1
	}
	if r.PP == 0 {
		r.PP = 1
	}
	if r.EP == 0 {
		r.EP = 1
	}
	if r.Order == "" {
		r.Order = DefaultOrder
		if r.CP > 1 {
			r.Order = "tp,cp,dp,pp"
		}
	}
	if _, err := ParseOrder(r.Order); err != nil {
		return Plan{}, errorf("plan.order", "%s", err)
	}
	for _, c := range []struct {
		path string
		v    int
	}{{"plan.tp", r.TP}, {"plan.cp", r.CP}, {"plan.pp", r.PP}, {"plan.ep", r.EP}} {
		if c.v < 1 || c.v > world {
			return Plan{}, errorf(c.path, "%d: want 1 to the world size %d", c.v, world)
		}
	}
	if r.DP < 0 || r.DP > world {
		return Plan{}, errorf("plan.dp", "%d: want 0 (derived) or 1 to the world size %d", r.DP, world)
	}
	if r.Domain < 0 || r.Domain > 1<<20 {
		return Plan{}, errorf("plan.domain", "%d: want 0 (the GPU's scale_up_gpus) or GPUs per scale-up domain, 1 to %d", r.Domain, 1<<20)
	}
	// The arithmetic, shown without cp when cp is 1 (as before context parallelism).
	grid, prod := "tp x pp x dp", func(a ...int) string {
		s := make([]string, len(a))
		for i, v := range a {
			s[i] = fmt.Sprint(v)
		}
		return strings.Join(s, "x")
	}
	if r.CP > 1 {
		grid = "tp x cp x pp x dp"
	}
	if world%r.TP != 0 {
		return Plan{}, errorf("plan.tp", "tp=%d does not divide world size %d (%d = %s needs %d %% (%s) == 0)", r.TP, world, world, grid, world, prod(r.TP, r.CP*r.PP))
	}
	if r.CP > 1 && world%(r.TP*r.CP) != 0 {
		return Plan{}, errorf("plan.cp", "cp=%d does not divide world size %d / tp %d = %d (%d = %s needs %d %% (%s) == 0)", r.CP, world, r.TP, world/r.TP, world, grid, world, prod(r.TP, r.CP))
	}
	if world%(r.TP*r.CP*r.PP) != 0 {
		if r.CP > 1 {
			return Plan{}, errorf("plan.pp", "pp=%d does not divide world size %d / (tp %d x cp %d) = %d (%d = %s needs %d %% (%s) == 0)", r.PP, world, r.TP, r.CP, world/(r.TP*r.CP), world, grid, world, prod(r.TP, r.CP, r.PP))
		}
		return Plan{}, errorf("plan.pp", "pp=%d does not divide world size %d / tp %d = %d (%d = tp x pp x dp needs %d %% (%dx%d) == 0)", r.PP, world, r.TP, world/r.TP, world, world, r.TP, r.PP)
	}
	mp := r.TP * r.CP * r.PP
	if r.DP == 0 {
		r.DP = world / mp
	} else if mp*r.DP != world {
		if r.CP > 1 {
			return Plan{}, errorf("plan.dp", "dp=%d gives %s = %s = %d, want the world size %d (give dp 0 to derive %d / (%s) = %d)", r.DP, grid, prod(r.TP, r.CP, r.PP, r.DP), mp*r.DP, world, world, prod(r.TP, r.CP, r.PP), world/mp)
		}
		return Plan{}, errorf("plan.dp", "dp=%d gives tp x pp x dp = %dx%dx%d = %d, want the world size %d (give dp 0 to derive %d / (%dx%d) = %d)", r.DP, r.TP, r.PP, r.DP, r.TP*r.PP*r.DP, world, world, r.TP, r.PP, world/(r.TP*r.PP))
	}
	name := m.Name
	if name == "" {
		name = "the model"
	}
	if m.Heads%r.TP != 0 {
		return Plan{}, errorf("plan.tp", "tp=%d does not divide heads %d of %s (%d %% %d = %d; each tensor-parallel rank holds heads/tp attention heads)", r.TP, m.Heads, name, m.Heads, r.TP, m.Heads%r.TP)
	}
	if m.KVHeads%r.TP != 0 {
		return Plan{}, errorf("plan.tp", "tp=%d does not divide kv_heads %d of %s (%d %% %d = %d; Megatron-LM needs num_query_groups %% tp == 0)", r.TP, m.KVHeads, name, m.KVHeads, r.TP, m.KVHeads%r.TP)
	}
	if m.denseLayers() > 0 && m.FFN%r.TP != 0 {
		return Plan{}, errorf("plan.tp", "tp=%d does not divide ffn %d of %s (%d %% %d = %d)", r.TP, m.FFN, name, m.FFN, r.TP, m.FFN%r.TP)
	}
	if m.IsMoE() && m.ExpertFFN%r.TP != 0 {
		return Plan{}, errorf("plan.tp", "tp=%d does not divide expert_ffn %d of %s (%d %% %d = %d)", r.TP, m.ExpertFFN, name, m.ExpertFFN, r.TP, m.ExpertFFN%r.TP)
	}
	if r.CP > 1 && m.SeqLen%(2*r.CP) != 0 {
		return Plan{}, errorf("plan.cp", "cp=%d needs seq_len %d to split into 2 x cp = %d equal chunks (%d %% %d = %d; each context-parallel rank takes two chunks, one from each end, to balance the causal mask)", r.CP, m.SeqLen, 2*r.CP, m.SeqLen, 2*r.CP, m.SeqLen%(2*r.CP))
	}
	if len(r.StageLayers) > 0 {
		if len(r.StageLayers) != r.PP {
			return Plan{}, errorf("plan.stage_layers", "%d entries; want one per pipeline stage, pp=%d", len(r.StageLayers), r.PP)
		}
		sum := 0
		for i, n := range r.StageLayers {
			if n < 1 || n > m.Layers {
				return Plan{}, errorf(fmt.Sprintf("plan.stage_layers[%d]", i), "%d: want 1 to %d layers", n, m.Layers)
			}
			sum += n
		}
		if sum != m.Layers {
			return Plan{}, errorf("plan.stage_layers", "%v sums to %d; want the model's %d layers", r.StageLayers, sum, m.Layers)
		}
		r.StageLayers = append([]int(nil), r.StageLayers...)
	} else {
		if r.PP > m.Layers {
			return Plan{}, errorf("plan.pp", "pp=%d is more than the %d layers of %s", r.PP, m.Layers, name)
		}
		if m.Layers%r.PP != 0 {
			ex := make([]string, r.PP)
			for i := range ex {
				n := m.Layers / r.PP
				if i < m.Layers%r.PP {
					n++
				}
				ex[i] = fmt.Sprint(n)
			}
			return Plan{}, errorf("plan.pp", "pp=%d does not divide layers %d of %s (%d %% %d = %d); give plan.stage_layers with %d entries summing to %d, e.g. [%s]", r.PP, m.Layers, name, m.Layers, r.PP, m.Layers%r.PP, r.PP, m.Layers, strings.Join(ex, ", "))
		}
		r.StageLayers = make([]int, r.PP)
		for i := range r.StageLayers {
			r.StageLayers[i] = m.Layers / r.PP
		}
	}
	if err := r.resolveSchedule(); err != nil {
		return Plan{}, err
	}
	if r.ZeRO < 0 || r.ZeRO > 3 {
		return Plan{}, errorf("plan.zero", "%d: want a ZeRO stage 0, 1, 2 or 3 (true means 1)", int(r.ZeRO))
	}
	switch r.Recompute {
	case "":
		r.Recompute = RecomputeNone
	case RecomputeNone, RecomputeSelective, RecomputeFull:
	default:
		return Plan{}, errorf("plan.recompute", "%q: want none, selective or full (true means full)", string(r.Recompute))
	}
	if r.EP > 1 {
		if !m.IsMoE() {
			return Plan{}, errorf("plan.ep", "ep=%d but %s is dense (experts 0); expert parallelism needs a mixture-of-experts model", r.EP, name)
		}
		if r.DP%r.EP != 0 {
			return Plan{}, errorf("plan.ep", "ep=%d does not divide dp=%d (%d %% %d = %d; an expert-parallel group is ep consecutive data-parallel ranks, so dp %% ep == 0)", r.EP, r.DP, r.DP, r.EP, r.DP%r.EP)
		}
		if m.Experts%r.EP != 0 {
			return Plan{}, errorf("plan.ep", "ep=%d does not divide the %d routed experts of %s (%d %% %d = %d)", r.EP, m.Experts, name, m.Experts, r.EP, m.Experts%r.EP)
		}
		if r.ZeRO == 3 {
			return Plan{}, errorf("plan.zero", "3 with ep=%d: per-layer gathering of sharded experts is not modelled; use zero 1 or 2 with expert parallelism", r.EP)
		}
	}
	if m.GlobalBatch%r.DP != 0 {
		return Plan{}, errorf("plan.dp", "dp=%d does not divide the global batch of %d sequences (%d %% %d = %d; each data-parallel rank takes global_batch / dp)", r.DP, m.GlobalBatch, m.GlobalBatch, r.DP, m.GlobalBatch%r.DP)
	}
	if per := m.GlobalBatch / r.DP; per%m.MicroBatch != 0 {
		return Plan{}, errorf("model.micro_batch", "micro_batch=%d does not divide the per-data-parallel batch of %d sequences (global_batch %d / dp %d; %d %% %d = %d)", m.MicroBatch, per, m.GlobalBatch, r.DP, per, m.MicroBatch, per%m.MicroBatch)
	}
	if mb := r.Microbatches(m); mb > MaxMicrobatches {
		return Plan{}, errorf("model.global_batch", "%d gives %d microbatches per pipeline per step (global_batch / (dp %d x micro_batch %d)); want at most %d: lower global_batch or raise micro_batch", m.GlobalBatch, mb, r.DP, m.MicroBatch, MaxMicrobatches)
	}
	if err := r.checkInterleavedBatch(p, m); err != nil {
		return Plan{}, err
	}
	r.resolved = true
	return r, nil
}

// MaxMicrobatches is the most microbatches per pipeline per step that Resolve accepts
// (global_batch / (dp x micro_batch)): 65,536, far above published runs (Llama 3 405B ran 16
// to 64 per pipeline, Dubey et al. 2024, Table 4) and below where building and running the
// per-step program takes minutes.
const MaxMicrobatches = 1 << 16

// checkInterleavedBatch applies Megatron-LM's requirement of the interleaved schedule,
// microbatches % pp == 0 (its interleaved schedule asserts it), to resolved r: given was the
// plan as written. An explicit interleaved schedule (or virtual_stages > 1) that breaks it is
// an error; the default falls back to 1f1b and says why in note.
func (r *Plan) checkInterleavedBatch(given Plan, m Model) error {
	if r.Schedule != ScheduleInterleaved {
		return nil
	}
	mb := r.Microbatches(m)
	if mb%r.PP == 0 {
		return nil
	}
	gb := r.PP * r.DP * m.MicroBatch // global batch step giving a multiple of pp microbatches
	eg := fmt.Sprint((m.GlobalBatch/gb + 1) * gb)
	if lo := m.GlobalBatch / gb * gb; lo > 0 {
		eg = fmt.Sprintf("%d or %s", lo, eg)
	}
	fix := fmt.Sprintf("a global_batch that is a multiple of pp x dp x micro_batch = %d (e.g. %s), or schedule 1f1b or zb-h1", gb, eg)
	explicit := !given.resolved && strings.EqualFold(strings.TrimSpace(given.Schedule), ScheduleInterleaved) || given.VirtualStages > 1
	if explicit {
		path := "plan.schedule"
		if !strings.EqualFold(strings.TrimSpace(given.Schedule), ScheduleInterleaved) {
			path = "plan.virtual_stages"
		}
		return errorf(path, "interleaved needs the microbatches per step to be a multiple of pp (Megatron-LM's requirement), but %d microbatches %% pp %d = %d; give %s", mb, r.PP, mb%r.PP, fix)
	}
	r.Schedule, r.VirtualStages = Schedule1F1B, 1
	r.note = fmt.Sprintf("schedule 1f1b (default): %d microbatches is not a multiple of pp %d, which the interleaved schedule needs; for interleaved give %s", mb, r.PP, strings.TrimSuffix(fix, ", or schedule 1f1b or zb-h1"))
	return nil
}

// Note returns why a resolved plan's schedule differs from what was written or the usual
// default ("" when it does not): printed in the job summary.
func (p Plan) Note() string { return p.note }

// chunkable reports whether every stage of layers splits into v chunks whose sizes all lie in
// {q, q+1} for one q (floor and ceiling of each stage's layers / v differ by at most one
// across the pipeline).
func chunkable(layers []int, v int) bool {
	lo, hi := layers[0]/v, (layers[0]+v-1)/v
	for _, n := range layers {
		lo, hi = min(lo, n/v), max(hi, (n+v-1)/v)
	}
	return hi-lo <= 1
}

// defaultVirtualStages returns the default V for stages of layers (see Resolve).
func defaultVirtualStages(layers []int) int {
	most := 0
	for _, n := range layers {
		most = max(most, n)
	}
	for v := min(MaxDefaultVirtualStages, most); v >= 2; v-- {
		ok := true
		for _, n := range layers {
			ok = ok && n%v == 0
		}
		if ok {
			return v
		}
	}
	for v := min(MaxDefaultVirtualStages, most); v >= 2; v-- {
		if chunkable(layers, v) {
			return v
		}
	}
	return 1
}

// resolveSchedule fills in and checks Schedule and VirtualStages (StageLayers resolved).
func (r *Plan) resolveSchedule() error {
	r.Schedule = strings.ToLower(strings.TrimSpace(r.Schedule))
	switch r.Schedule {
	case "", Schedule1F1B, ScheduleInterleaved, ScheduleZBH1:
	default:
		return errorf("plan.schedule", "%q: want 1f1b, interleaved or zb-h1", r.Schedule)
	}
	most := 0
	for _, n := range r.StageLayers {
		most = max(most, n)
	}
	if r.VirtualStages < 0 || r.VirtualStages > most {
		return errorf("plan.virtual_stages", "%d: want 0 (default) or 1 to %d (the most layers a stage holds, %v)", r.VirtualStages, most, r.StageLayers)
	}
	if r.PP == 1 {
		if r.VirtualStages > 1 {
			return errorf("plan.virtual_stages", "%d but pp=1: virtual stages interleave a pipeline; give pp > 1", r.VirtualStages)
		}
		if r.Schedule != "" && r.Schedule != Schedule1F1B {
			r.note = fmt.Sprintf("schedule 1f1b: %s given, but with pp 1 there is no pipeline, so every schedule is 1f1b", r.Schedule)
		}
		r.Schedule = Schedule1F1B // no pipeline: nothing to interleave or to fill
		r.VirtualStages = 1
		return nil
	}
	switch r.Schedule {
	case Schedule1F1B, ScheduleZBH1:
		if r.VirtualStages > 1 {
			return errorf("plan.virtual_stages", "%d with schedule %s: virtual stages need schedule interleaved", r.VirtualStages, r.Schedule)
		}
		r.VirtualStages = 1
		return nil
	}
	v := r.VirtualStages
	if v == 0 {
		v = defaultVirtualStages(r.StageLayers)
	} else if !r.resolved {
		for s, n := range r.StageLayers {
			if n < v {
				return errorf("plan.virtual_stages", "%d but stage %d has %d layers (stage_layers %v): a chunk would hold no layer; want at most %d, or leave virtual_stages 0 for the default", v, s, n, r.StageLayers, n)
			}
		}
	}
	if v == 1 {
		if r.Schedule == ScheduleInterleaved {
			return errorf("plan.schedule", "interleaved needs at least 2 virtual stages, and stage_layers %v cannot be cut into 2 or more chunks of {q, q+1} layers; give plan.virtual_stages or schedule 1f1b", r.StageLayers)
		}
		r.Schedule, r.VirtualStages = Schedule1F1B, 1
		return nil
	}
	if !chunkable(r.StageLayers, v) {
		return errorf("plan.virtual_stages", "%d cannot cut stage_layers %v into chunks whose sizes differ by at most one layer (a stage of %d layers gives chunks of %d to %d); choose a V that divides the stages' layers", v, r.StageLayers, most, most/v, (most+v-1)/v)
	}
	r.Schedule, r.VirtualStages = ScheduleInterleaved, v
	return nil
}

// ChunkLayers returns the layers of each of stage s's VirtualStages chunks, for a resolved
// plan: the stage's layers split as evenly as possible, the larger chunks first, except on
// stage 0 where the smaller come first (so that a chunk without layers holds only the
// embedding there and only the output head on the last stage, as in Llama 3).
func (p Plan) ChunkLayers(s int) []int {
	v := max(p.VirtualStages, 1)
	n := p.StageLayers[s]
	out := make([]int, v)
	for c := range out {
		out[c] = n / v
		k := c
		if s == 0 {
			k = v - 1 - c
		}
		if k < n%v {
			out[c]++
		}
	}
	return out
}

// Microbatches returns the microbatches each pipeline runs per step, global_batch / (DP x
// micro_batch), for a resolved plan and model. Context parallelism does not change it: the
// CP ranks of a pipeline share each microbatch's sequences.
func (p Plan) Microbatches(m Model) int { return m.GlobalBatch / (p.DP * m.MicroBatch) }
