package topo

import (
	"errors"

	"github.com/lockstepsim/lockstep/sim"
)

// Scale-up domain limits and defaults.
const (
	// MaxScaleUpGPUs bounds ScaleUp.GPUs: NVIDIA's largest announced NVLink domain is 576
	// GPUs (NVL576); 4096 leaves room without letting a typo build a nonsense domain.
	MaxScaleUpGPUs = 4096
	// DefaultScaleUpLinks is ScaleUp.LinksPerGPU when zero: 18 NVLinks per GPU on both H100
	// (NVLink4, 18 x 25 GB/s = 450 GB/s) and B200/GB200 (NVLink5, 18 x 50 GB/s = 900 GB/s).
	DefaultScaleUpLinks = 18
	// DefaultScaleUpLatency is ScaleUp.Latency when zero: a round 500ns for GPU -> NVSwitch ->
	// GPU, the same order as one packet-fabric hop. It is a modelling default, not a
	// measurement; set Latency for a specific system.
	DefaultScaleUpLatency = 500 * sim.Nanosecond
)

// ScaleUp describes scale-up (NVLink) domains: groups of GPUs joined by a switched memory
// fabric far faster than the scale-out network. Hosts h and h' share a domain when
// h/GPUs == h'/GPUs; the last domain may be partly filled. The packet fabric never carries
// scale-up traffic: Params.ScaleUp* tell the runner to model it separately.
//
// Examples: HGX H100, 8 GPUs at 450 GB/s (3.6 Tb/s) per direction; GB200 NVL72, 72 GPUs at
// 900 GB/s (7.2 Tb/s) with 18 links each, 130 TB/s of aggregate NVLink bandwidth.
type ScaleUp struct {
	// GPUs is the domain size: 8 (HGX), 72 (NVL72); 1 to MaxScaleUpGPUs.
	GPUs int `yaml:"gpus" json:"gpus"`
	// Rate is each GPU's scale-up bandwidth per direction, bits/s (YAML "3.6Tbps"). Required.
	Rate sim.Rate `yaml:"rate" json:"rate"`
	// Latency is the one-way GPU-to-GPU latency in the domain. 0 means DefaultScaleUpLatency.
	Latency sim.Time `yaml:"latency" json:"latency"`
	// LinksPerGPU is the number of NVLinks per GPU (18 on H100 and NVL72), used by the blast
	// radius of one link failure. 0 means DefaultScaleUpLinks.
	LinksPerGPU int `yaml:"links_per_gpu" json:"links_per_gpu"`
}

// withDefaults returns a copy of s with Latency and LinksPerGPU filled in; nil stays nil.
func (s *ScaleUp) withDefaults() *ScaleUp {
	if s == nil {
		return nil
	}
	c := *s
	if c.Latency == 0 {
		c.Latency = DefaultScaleUpLatency
	}
	if c.LinksPerGPU == 0 {
		c.LinksPerGPU = DefaultScaleUpLinks
	}
	return &c
}

// check validates s (defaults applied), naming fields "scale_up.<key>"; nil is valid.
func (s *ScaleUp) check() []error {
	if s == nil {
		return nil
	}
	var errs []error
	if s.GPUs < 1 || s.GPUs > MaxScaleUpGPUs {
		errs = append(errs, fieldErr("scale_up.gpus", "%d is out of range; want the domain size, 1 to %d (8 for HGX, 72 for NVL72)", s.GPUs, MaxScaleUpGPUs))
	}
	switch {
	case s.Rate == 0:
		errs = append(errs, fieldErr("scale_up.rate", "missing; want each GPU's NVLink bandwidth per direction, e.g. \"3.6Tbps\" (450 GB/s)"))
	case s.Rate < 0:
		errs = append(errs, fieldErr("scale_up.rate", "%v is not positive; want each GPU's NVLink bandwidth per direction, e.g. \"3.6Tbps\" (450 GB/s)", s.Rate))
	}
	if s.Latency < 0 || s.Latency > MaxHopLatency {
		errs = append(errs, fieldErr("scale_up.latency", "%v is out of range; want 0 (default %v) to %v", s.Latency, DefaultScaleUpLatency, MaxHopLatency))
	}
	if s.LinksPerGPU < 0 || s.LinksPerGPU > MaxRadix {
		errs = append(errs, fieldErr("scale_up.links_per_gpu", "%d is out of range; want 0 (default %d) to %d", s.LinksPerGPU, DefaultScaleUpLinks, MaxRadix))
	}
	return errs
}

// validate is check joined into one error.
func (s *ScaleUp) validate() error { return errors.Join(s.withDefaults().check()...) }

// params copies the domain into p; a nil s leaves p's scale-up fields zero.
func (s *ScaleUp) params(p *Params) {
	if s == nil {
		return
	}
	p.ScaleUpGPUs, p.ScaleUpRate, p.ScaleUpLatency = s.GPUs, s.Rate, s.Latency
}

// ScaleUpSizing is the scale-up part of a Sizing.
type ScaleUpSizing struct {
	// GPUsPerDomain is ScaleUp.GPUs; Domains = ceil(hosts / GPUsPerDomain).
	GPUsPerDomain int `json:"gpus_per_domain"` // GPUs in a full domain
	Domains       int `json:"domains"`         // domains, the last maybe partial
	// Links counts GPU-side NVLinks: hosts x LinksPerGPU.
	Links int `json:"links"`
	// GPURate is one GPU's bandwidth per direction; GPUGbps the same in Gb/s.
	GPURate sim.Rate `json:"-"`        // bits/s
	GPUGbps float64  `json:"gpu_gbps"` // Gb/s
	// DomainTBps is one full domain's aggregate bandwidth in terabytes/s, both directions
	// counted, as NVIDIA quotes it: GPUs x rate x 2 / 8 (NVL72 at 900 GB/s: 129.6 TB/s).
	DomainTBps float64 `json:"domain_tbytes_per_s"`
	// Latency is the one-way GPU-to-GPU latency, ps.
	Latency sim.Time `json:"latency_ps"`
}

// sizing returns the domain's sizing for hosts hosts, or nil when s is nil.
func (s *ScaleUp) sizing(hosts int) *ScaleUpSizing {
	if s == nil {
		return nil
	}
	return &ScaleUpSizing{
		GPUsPerDomain: s.GPUs,
		Domains:       ceilDiv(hosts, s.GPUs),
		Links:         hosts * s.LinksPerGPU,
		GPURate:       s.Rate,
		GPUGbps:       s.Rate.Gbps(),
		DomainTBps:    float64(s.GPUs) * float64(s.Rate) * 2 / 8 / 1e12,
		Latency:       s.Latency,
	}
}

// blast returns the blast-radius row of one NVLink failure, or nothing when s is nil.
func (s *ScaleUp) blast() []Blast {
	if s == nil {
		return nil
	}
	return []Blast{{Element: BlastScaleUpLink, Lost: "GPU scale-up bandwidth", Share: 1 / float64(s.LinksPerGPU), Affected: 1, AffectedKind: "GPUs"}}
}

// copyScaleUp returns a copy of s (nil stays nil), so configs never share it.
func copyScaleUp(s *ScaleUp) *ScaleUp {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}
