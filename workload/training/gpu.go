package training

import (
	"math"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
)

// GPU describes an accelerator: its compute, memory bandwidth, power in each phase and its
// scale-up (NVLink) domain. It decodes from YAML; Preset names an embedded preset (h100, b200,
// gb200; shapes and sources in presets.yaml) whose fields the non-zero fields here override.
//
// Compute is costed per kind of operation (peak is PeakTFLOPS for bf16/fp16, PeakFP8TFLOPS
// for fp8; dense, not 2:4-sparse, peaks):
//
//   - weight matmuls (projections, MLP, experts, LM head; forward, input- and
//     weight-gradient GEMMs): F / (peak x GEMMEfficiency);
//   - the attention core (FlashAttention: QK^T, softmax, attention x V): the FLOPs the kernel
//     executes, half of the full score matrix under the causal mask (FlashAttention's own
//     FLOP count for causal attention), and 2.5 times the forward's in the backward (five
//     matmuls to the forward's two: it recomputes QK^T, Dao 2023 §3.1), at peak x
//     AttentionEfficiency;
//   - memory-bound operations (RMSNorm, rotary embedding, SwiGLU, residual adds, the loss'
//     softmax; the optimizer step): bytes / (HBMGBPerSec x MemoryEfficiency), the bytes
//     counted per element read and written (see Job).
//
// Efficiency, when set (> 0), overrides all three with one flat fraction of peak for matmuls
// and attention alike, counts attention FLOPs in full (no causal halving, backward twice the
// forward) and charges no memory-bound operations but the optimizer at the full HBM rate:
// the model before per-operation efficiencies, which scenarios that set gpu.efficiency keep.
//
// Per-operation defaults (DefaultGEMMEfficiency, DefaultAttentionEfficiency,
// DefaultMemoryEfficiency) and the presets' values cite their sources in presets.yaml.
//
// Power (watts per GPU, board level): BusyW while computing (about the TDP: training holds
// the board near its limit), CommW while the GPU waits on communication (tensor-parallel
// NVLink collectives, pipeline transfers, exposed gradient reductions: NCCL kernels spin on
// a few SMs; lockstep's estimate is ~35-40% of busy), IdleW when it waits for other ranks
// (pipeline bubbles, stragglers; ~100-150 W with clocks up, as nvidia-smi reports for an
// idle SXM board).
//
// ScaleUpGPUs (G) GPUs share one NVLink domain (8 on an HGX board, 72 in an NVL72 rack);
// ScaleUpRate is each GPU's NVLink bandwidth per direction in bits/s (H100 NVLink 4: 450
// GB/s = 3.6 Tbps; NVLink 5: 900 GB/s = 7.2 Tbps) and ScaleUpLatency its per-message latency.
//
// Presets (dense peaks; sources in presets.yaml):
//
//	h100   989 TFLOP/s bf16, 1979 fp8, 3.35 TB/s, 700 W busy, 260 W comm, 100 W idle, 8 x NVLink 4   NVIDIA H100 datasheet
//	b200   2250 bf16, 4500 fp8, 8 TB/s, 1000 W, 380 W, 140 W, 8 x NVLink 5                         HGX/DGX B200 datasheets
//	gb200  2500 bf16, 5000 fp8, 8 TB/s, 1200 W, 450 W, 150 W, 72 x NVLink 5 (NVL72)                GB200 NVL72 product page
//
// The datasheets quote sparse peaks (2:4 structured sparsity); the dense figures are half.
// Communicating and idle power are lockstep estimates, as above.
type GPU struct {
	Preset              string   `yaml:"preset,omitempty"`               // embedded preset to start from (GPUPresets); "" for none
	Name                string   `yaml:"name,omitempty"`                 // label in reports; default the preset name
	PeakTFLOPS          float64  `yaml:"peak_tflops,omitempty"`          // dense bf16/fp16 TFLOP/s (1e12 FLOP/s), > 0
	PeakFP8TFLOPS       float64  `yaml:"peak_fp8_tflops,omitempty"`      // dense fp8 TFLOP/s; needed only for dtype fp8
	HBMGBPerSec         float64  `yaml:"hbm_gb_per_s,omitempty"`         // memory bandwidth, GB/s (1e9 B/s), > 0
	Efficiency          float64  `yaml:"efficiency,omitempty"`           // flat fraction of peak for all compute, (0, 1]; 0: per operation
	GEMMEfficiency      float64  `yaml:"gemm_efficiency,omitempty"`      // matmuls' fraction of peak, (0, 1]
	AttentionEfficiency float64  `yaml:"attention_efficiency,omitempty"` // flash-attention core's fraction of peak, (0, 1]
	MemoryEfficiency    float64  `yaml:"memory_efficiency,omitempty"`    // memory-bound kernels' fraction of HBM bandwidth, (0, 1]
	BusyW               float64  `yaml:"busy_w,omitempty"`               // watts while computing, > 0
	CommW               float64  `yaml:"comm_w,omitempty"`               // watts while waiting on communication, in [idle_w, busy_w]
	IdleW               float64  `yaml:"idle_w,omitempty"`               // watts while idle, in [0, comm_w]
	ScaleUpGPUs         int      `yaml:"scale_up_gpus,omitempty"`        // G: GPUs per NVLink domain, >= 1
	ScaleUpRate         sim.Rate `yaml:"scale_up_rate,omitempty"`        // NVLink bits/s per GPU per direction, > 0
	ScaleUpLatency      sim.Time `yaml:"scale_up_latency,omitempty"`     // NVLink per-message latency, >= 0
}

// DefaultEfficiency was the flat efficiency of a GPU that gave none, before per-operation
// efficiencies; it remains a common value to pass as Efficiency.
const DefaultEfficiency = 0.5

// Per-operation defaults, for a GPU (without a preset) that gives neither Efficiency nor the
// per-operation field: the H100 preset's values (sources in presets.yaml).
const (
	DefaultGEMMEfficiency      = 0.60
	DefaultAttentionEfficiency = 0.35
	DefaultMemoryEfficiency    = 0.90
)

// GPUPresets returns the names of the embedded GPU presets, sorted: b200, gb200, h100.
func GPUPresets() []string {
	pf, err := presets()
	if err != nil {
		return nil
	}
	return sortedKeys(pf.GPUs)
}

// GPUPreset returns the preset named name, resolved. Errors: an unknown name (listing the
// known ones).
func GPUPreset(name string) (GPU, error) {
	pf, err := presets()
	if err != nil {
		return GPU{}, err
	}
	key := strings.ToLower(strings.TrimSpace(name))
	g, ok := pf.GPUs[key]
	if !ok {
		return GPU{}, errorf("preset", "%q is not a GPU preset; want one of %s", name, strings.Join(sortedKeys(pf.GPUs), ", "))
	}
	g.Preset = key
	return g.fill()
}

// Resolve returns g with its preset applied (g's non-zero fields override it) and the
// per-operation efficiencies defaulted, validated. Errors (*FieldError, paths relative to the GPU: "busy_w"): a field out
// of range, with its value and the allowed range.
func (g GPU) Resolve() (GPU, error) {
	r := g
	if p := strings.TrimSpace(g.Preset); p != "" {
		pf, err := presets()
		if err != nil {
			return GPU{}, err
		}
		base, ok := pf.GPUs[strings.ToLower(p)]
		if !ok {
			return GPU{}, errorf("preset", "%q is not a GPU preset; want one of %s", p, strings.Join(sortedKeys(pf.GPUs), ", "))
		}
		overlay(&base, &g)
		r = base
		r.Preset = strings.ToLower(p)
	}
	return r.fill()
}

// fill applies the defaults and validates.
func (r GPU) fill() (GPU, error) {
	if r.GEMMEfficiency == 0 {
		r.GEMMEfficiency = DefaultGEMMEfficiency
	}
	if r.AttentionEfficiency == 0 {
		r.AttentionEfficiency = DefaultAttentionEfficiency
	}
	if r.MemoryEfficiency == 0 {
		r.MemoryEfficiency = DefaultMemoryEfficiency
	}
	if r.Name == "" {
		r.Name = r.Preset
	}
	fin := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case !(r.PeakTFLOPS > 0) || !fin(r.PeakTFLOPS) || r.PeakTFLOPS > 1e7:
		return GPU{}, errorf("peak_tflops", "%g: want a dense bf16 peak in TFLOP/s, > 0 and <= 1e7", r.PeakTFLOPS)
	case !(r.PeakFP8TFLOPS >= 0) || !fin(r.PeakFP8TFLOPS) || r.PeakFP8TFLOPS > 1e7:
		return GPU{}, errorf("peak_fp8_tflops", "%g: want a dense fp8 peak in TFLOP/s, >= 0 and <= 1e7", r.PeakFP8TFLOPS)
	case !(r.HBMGBPerSec > 0) || !fin(r.HBMGBPerSec) || r.HBMGBPerSec > 1e9:
		return GPU{}, errorf("hbm_gb_per_s", "%g: want a memory bandwidth in GB/s, > 0", r.HBMGBPerSec)
	case !(r.Efficiency >= 0 && r.Efficiency <= 1):
		return GPU{}, errorf("efficiency", "%g: want a fraction of peak in (0, 1], or 0 for per-operation efficiencies", r.Efficiency)
	case !(r.GEMMEfficiency > 0 && r.GEMMEfficiency <= 1):
		return GPU{}, errorf("gemm_efficiency", "%g: want a fraction of peak in (0, 1]", r.GEMMEfficiency)
	case !(r.AttentionEfficiency > 0 && r.AttentionEfficiency <= 1):
		return GPU{}, errorf("attention_efficiency", "%g: want a fraction of peak in (0, 1]", r.AttentionEfficiency)
	case !(r.MemoryEfficiency > 0 && r.MemoryEfficiency <= 1):
		return GPU{}, errorf("memory_efficiency", "%g: want a fraction of the HBM bandwidth in (0, 1]", r.MemoryEfficiency)
	case !(r.BusyW > 0) || !fin(r.BusyW) || r.BusyW > 1e5:
		return GPU{}, errorf("busy_w", "%g: want watts while computing, > 0 and <= 100000", r.BusyW)
	case !(r.IdleW >= 0) || r.IdleW > r.BusyW:
		return GPU{}, errorf("idle_w", "%g: want watts in [0, busy_w = %g]", r.IdleW, r.BusyW)
	case !(r.CommW >= r.IdleW) || r.CommW > r.BusyW:
		return GPU{}, errorf("comm_w", "%g: want watts in [idle_w = %g, busy_w = %g]", r.CommW, r.IdleW, r.BusyW)
	case r.ScaleUpGPUs < 1 || r.ScaleUpGPUs > 1<<20:
		return GPU{}, errorf("scale_up_gpus", "%d: want GPUs per NVLink domain, 1 to %d", r.ScaleUpGPUs, 1<<20)
	case r.ScaleUpRate <= 0:
		return GPU{}, errorf("scale_up_rate", "%v: want the NVLink rate per GPU per direction, > 0 (e.g. 3.6Tbps = 450 GB/s)", r.ScaleUpRate)
	case r.ScaleUpLatency < 0 || r.ScaleUpLatency > sim.Second:
		return GPU{}, errorf("scale_up_latency", "%v: want a latency in [0, 1s]", r.ScaleUpLatency)
	}
	return r, nil
}

// peakFLOPS returns the dense peak FLOP/s for a model of dtype bytes b (fp8 at 1 byte).
func (g GPU) peakFLOPS(b int64) float64 {
	if b == 1 {
		return g.PeakFP8TFLOPS * 1e12
	}
	return g.PeakTFLOPS * 1e12
}

// Flat reports whether the GPU uses one flat efficiency (Efficiency > 0) instead of the
// per-operation ones.
func (g GPU) Flat() bool { return g.Efficiency > 0 }

// gemmFLOPS returns the effective FLOP/s of matmuls: peak x GEMMEfficiency (or Efficiency).
func (g GPU) gemmFLOPS(b int64) float64 {
	if g.Flat() {
		return g.peakFLOPS(b) * g.Efficiency
	}
	return g.peakFLOPS(b) * g.GEMMEfficiency
}

// attnFLOPS returns the effective FLOP/s of the attention core.
func (g GPU) attnFLOPS(b int64) float64 {
	if g.Flat() {
		return g.peakFLOPS(b) * g.Efficiency
	}
	return g.peakFLOPS(b) * g.AttentionEfficiency
}

// memBytesPerSec returns the achieved HBM bandwidth of memory-bound kernels, bytes/s: the
// full HBMGBPerSec in the flat model, x MemoryEfficiency otherwise.
func (g GPU) memBytesPerSec() float64 {
	if g.Flat() {
		return g.HBMGBPerSec * 1e9
	}
	return g.HBMGBPerSec * 1e9 * g.MemoryEfficiency
}
