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
	// NumDims is the number of grid dimensions (3).
	NumDims
)

var dimNames = [NumDims]string{"tp", "dp", "pp"}

// String returns "tp", "dp" or "pp".
func (d Dim) String() string {
	if d < NumDims {
		return dimNames[d]
	}
	return fmt.Sprintf("dim(%d)", d)
}

// DefaultOrder is the placement order used when a plan gives none: TP innermost (consecutive
// GPUs, inside one NVLink domain), then DP, then PP outermost (Megatron-LM's default
// tp-dp-pp rank order).
const DefaultOrder = "tp,dp,pp"

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
// Order lists the three grid dimensions innermost first ("tp,dp,pp" = DefaultOrder): rank r
// has coordinate r mod size(first) in the first dimension, and so on, and runs on fabric host
// r (host index = GPU index). Domain overrides the GPU's scale-up domain size G (0: the GPU's
// ScaleUpGPUs). ZeRO shards the optimizer state over DP (ZeRO-1/2, Megatron's distributed
// optimizer; FSDP without per-layer resharding communicates the same): gradients are
// reduce-scattered instead of all-reduced, and updated parameters all-gathered after the
// optimizer step. Recompute recomputes each microbatch's forward during its backward (full
// activation recomputation: backward costs 3x forward instead of 2x, with its TP traffic).
type Plan struct {
	TP          int    `yaml:"tp,omitempty"`           // tensor-parallel group size; default 1
	PP          int    `yaml:"pp,omitempty"`           // pipeline stages; default 1
	DP          int    `yaml:"dp,omitempty"`           // data-parallel replicas; 0 derives world / (tp x pp)
	EP          int    `yaml:"ep,omitempty"`           // expert-parallel group size, dividing dp; default 1
	Order       string `yaml:"order,omitempty"`        // placement order, innermost first; default "tp,dp,pp"
	StageLayers []int  `yaml:"stage_layers,omitempty"` // layers per stage (len pp, summing to layers); default even
	ZeRO        bool   `yaml:"zero,omitempty"`         // shard optimizer state over DP (reduce-scatter + all-gather)
	Recompute   bool   `yaml:"recompute,omitempty"`    // full activation recomputation in the backward
	Domain      int    `yaml:"domain,omitempty"`       // GPUs per scale-up domain; 0: the GPU's scale_up_gpus
}

// ParseOrder parses a placement order: the three dimensions tp, dp and pp, each once,
// separated by commas, innermost first ("tp,dp,pp"). Errors list what is allowed.
func ParseOrder(s string) ([NumDims]Dim, error) {
	var out [NumDims]Dim
	parts := strings.Split(s, ",")
	if len(parts) != int(NumDims) {
		return out, fmt.Errorf("%q: want tp, dp and pp each once, innermost first, e.g. %q", s, DefaultOrder)
	}
	seen := [NumDims]bool{}
	for i, p := range parts {
		p = strings.ToLower(strings.TrimSpace(p))
		found := false
		for d, n := range dimNames {
			if p == n && !seen[d] {
				out[i], seen[d], found = Dim(d), true, true
			}
		}
		if !found {
			return out, fmt.Errorf("%q: want tp, dp and pp each once, innermost first, e.g. %q", s, DefaultOrder)
		}
	}
	return out, nil
}

// Resolve checks p against a world of world GPUs and model m (resolved), and returns it with
// its defaults filled in (TP, PP, EP 1; DP derived; Order DefaultOrder; StageLayers the even
// split). Errors are *FieldError values whose paths are relative to a training
// configuration ("plan.tp", "model.micro_batch") and whose messages show the arithmetic:
//
//	plan.tp: tp=3 does not divide world size 32 (32 = tp x pp x dp needs 32 % (3x2) == 0)
func (p Plan) Resolve(world int, m Model) (Plan, error) {
	r := p
	if world < 1 || world > 1<<24 {
		return Plan{}, errorf("gpus", "%d: want a world size of 1 to %d GPUs", world, 1<<24)
	}
	if r.TP == 0 {
		r.TP = 1
	}
	if r.PP == 0 {
		r.PP = 1
	}
	if r.EP == 0 {
		r.EP = 1
	}
	if r.Order == "" {
		r.Order = DefaultOrder
	}
	if _, err := ParseOrder(r.Order); err != nil {
		return Plan{}, errorf("plan.order", "%s", err)
	}
	for _, c := range []struct {
		path string
		v    int
	}{{"plan.tp", r.TP}, {"plan.pp", r.PP}, {"plan.ep", r.EP}} {
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
	if world%r.TP != 0 {
		return Plan{}, errorf("plan.tp", "tp=%d does not divide world size %d (%d = tp x pp x dp needs %d %% (%dx%d) == 0)", r.TP, world, world, world, r.TP, r.PP)
	}
	if world%(r.TP*r.PP) != 0 {
		return Plan{}, errorf("plan.pp", "pp=%d does not divide world size %d / tp %d = %d (%d = tp x pp x dp needs %d %% (%dx%d) == 0)", r.PP, world, r.TP, world/r.TP, world, world, r.TP, r.PP)
	}
	if r.DP == 0 {
		r.DP = world / (r.TP * r.PP)
	} else if r.TP*r.PP*r.DP != world {
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
	}
	if m.GlobalBatch%r.DP != 0 {
		return Plan{}, errorf("plan.dp", "dp=%d does not divide the global batch of %d sequences (%d %% %d = %d; each data-parallel rank takes global_batch / dp)", r.DP, m.GlobalBatch, m.GlobalBatch, r.DP, m.GlobalBatch%r.DP)
	}
	if per := m.GlobalBatch / r.DP; per%m.MicroBatch != 0 {
		return Plan{}, errorf("model.micro_batch", "micro_batch=%d does not divide the per-data-parallel batch of %d sequences (global_batch %d / dp %d; %d %% %d = %d)", m.MicroBatch, per, m.GlobalBatch, r.DP, per, m.MicroBatch, per%m.MicroBatch)
	}
	return r, nil
}

// Microbatches returns the microbatches each pipeline runs per step, global_batch / (DP x
// micro_batch), for a resolved plan and model.
func (p Plan) Microbatches(m Model) int { return m.GlobalBatch / (p.DP * m.MicroBatch) }
