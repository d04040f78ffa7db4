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
// A compute phase of F FLOPs takes F / (peak x Efficiency) (PeakTFLOPS for bf16/fp16,
// PeakFP8TFLOPS for fp8; dense, not 2:4-sparse, peaks). Efficiency is the per-operation
// fraction of peak the kernels reach, MFU-like (default 0.5; Llama 3 405B reported 38-43% MFU
// for whole steps, Dubey et al. 2024, Table 4). Memory-bound phases (the optimizer) take
// bytes / HBMGBPerSec.
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
	Preset         string   `yaml:"preset,omitempty"`           // embedded preset to start from (GPUPresets); "" for none
	Name           string   `yaml:"name,omitempty"`             // label in reports; default the preset name
	PeakTFLOPS     float64  `yaml:"peak_tflops,omitempty"`      // dense bf16/fp16 TFLOP/s (1e12 FLOP/s), > 0
	PeakFP8TFLOPS  float64  `yaml:"peak_fp8_tflops,omitempty"`  // dense fp8 TFLOP/s; needed only for dtype fp8
	HBMGBPerSec    float64  `yaml:"hbm_gb_per_s,omitempty"`     // memory bandwidth, GB/s (1e9 B/s), > 0
	Efficiency     float64  `yaml:"efficiency,omitempty"`       // fraction of peak reached, (0, 1]; default 0.5
	BusyW          float64  `yaml:"busy_w,omitempty"`           // watts while computing, > 0
	CommW          float64  `yaml:"comm_w,omitempty"`           // watts while waiting on communication, in [idle_w, busy_w]
	IdleW          float64  `yaml:"idle_w,omitempty"`           // watts while idle, in [0, comm_w]
	ScaleUpGPUs    int      `yaml:"scale_up_gpus,omitempty"`    // G: GPUs per NVLink domain, >= 1
	ScaleUpRate    sim.Rate `yaml:"scale_up_rate,omitempty"`    // NVLink bits/s per GPU per direction, > 0
	ScaleUpLatency sim.Time `yaml:"scale_up_latency,omitempty"` // NVLink per-message latency, >= 0
}

// DefaultEfficiency is the per-operation efficiency used when a GPU gives none.
const DefaultEfficiency = 0.5

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

// Resolve returns g with its preset applied (g's non-zero fields override it) and Efficiency
// defaulted, validated. Errors (*FieldError, paths relative to the GPU: "busy_w"): a field out
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
	if r.Efficiency == 0 {
		r.Efficiency = DefaultEfficiency
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
	case !(r.Efficiency > 0 && r.Efficiency <= 1):
		return GPU{}, errorf("efficiency", "%g: want a fraction of peak in (0, 1]", r.Efficiency)
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

// flopsPerSec returns the effective FLOP/s for a model of dtype bytes b: peak x efficiency.
func (g GPU) flopsPerSec(b int64) float64 {
	peak := g.PeakTFLOPS
	if b == 1 {
		peak = g.PeakFP8TFLOPS
	}
	return peak * 1e12 * g.Efficiency
}
