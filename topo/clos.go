package topo

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
)

// Limits on a Clos configuration.
const (
	// MaxPlanes is the largest number of planes (NIC ports per host) [MRC §2.2].
	MaxPlanes = 8
	// MaxRadix is the largest switch radix accepted. It is well beyond any switch ASIC shipping
	// today (Tomahawk 6: 1,024 x 100G) and keeps every count and path index inside an int64 and
	// every local port inside a uint16.
	MaxRadix = 4096
	// MaxHostCount is the largest number of hosts: host IDs are int32 in route tables and
	// packets.
	MaxHostCount = math.MaxInt32
	// DefaultHopLatency is the per-link latency (propagation plus switch forwarding) used when
	// Clos.HopLatency is zero.
	DefaultHopLatency = 500 * sim.Nanosecond
	// MaxHopLatency bounds HopLatency: 1 ms is 200 km of fibre, far beyond any one fabric.
	MaxHopLatency = sim.Millisecond
)

// Clos configures a multi-plane, 2- or 3-tier Clos (leaf-spine or k-ary fat-tree) fabric. The
// zero value of an optional field means its default; WithDefaults fills them in, and Layout
// resolves Hosts. See the package documentation for the derived structure.
type Clos struct {
	// Tiers is the number of switch tiers: 2 (T0 leaf, T1 spine) or 3 (T0, T1, T2 core).
	Tiers int `yaml:"tiers"`
	// Planes is the number of independent, identical switch planes, 1 to 8. Every host has
	// one NIC port per plane [MRC §2.2].
	Planes int `yaml:"planes"`
	// Radix is the number of ports per switch: even, 4 to 4096.
	Radix int `yaml:"radix"`
	// Hosts is the number of hosts (GPUs/NICs) to build. 0 means the most the radix allows;
	// otherwise at most that, and only as many T0s (and pods) as needed are built, the last
	// one possibly partly filled.
	Hosts int `yaml:"hosts"`
	// HostLink is the rate of each host-T0 link in bits/s: one NIC port, one plane. Required.
	HostLink sim.Rate `yaml:"host_link"`
	// FabricLink is the rate of each switch-switch link in bits/s. 0 means HostLink.
	FabricLink sim.Rate `yaml:"fabric_link"`
	// HopLatency is the latency of each link in picoseconds: propagation plus the forwarding
	// latency of the switch it leads to. 0 means DefaultHopLatency (500ns).
	HopLatency sim.Time `yaml:"hop_latency"`
	// Oversubscription is the downlink:uplink bandwidth ratio per tier below the top: index 0
	// for T0 (host bandwidth : uplink bandwidth, rates included), index 1 for T1 in a 3-tier
	// Clos (down ports : up ports). Missing entries are 1 (non-oversubscribed). Each ratio must
	// split the radix into whole numbers of ports.
	Oversubscription []float64 `yaml:"oversubscription"`
	// ParallelLinks is the number of parallel links between each connected pair of switches:
	// index 0 for T0-T1 pairs, index 1 for T1-T2 pairs. Missing entries are 1. Each must divide
	// the uplink count of the lower tier.
	ParallelLinks []int `yaml:"parallel_links"`
	// ScaleUp, when set, groups hosts into scale-up (NVLink) domains of ScaleUp.GPUs
	// consecutive hosts, carried outside the packet fabric (see ScaleUp).
	ScaleUp *ScaleUp `yaml:"scale_up,omitempty"`
}

// FieldError is a configuration error about one field, named by its YAML key (with an index
// for list fields, e.g. "oversubscription[1]"). Callers embedding Clos in a larger document can
// prefix Field with their own path.
type FieldError struct {
	Field string // YAML key, e.g. "radix" or "parallel_links[0]"
	Msg   string // the bad value and what is allowed
}

// Error returns "field: message", e.g. "radix: 63 is odd; want an even number of ports from 4
// to 4096".
func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// WithDefaults returns a copy of c with the defaults written out: FabricLink = HostLink when
// zero, HopLatency = DefaultHopLatency when zero, and (for 2 or 3 tiers) Oversubscription and
// ParallelLinks padded with 1s to one entry per level below the top; a ScaleUp gets its
// Latency and LinksPerGPU defaults. Hosts = 0 is resolved by Layout (Layout.Config). Slices
// and ScaleUp are copied, never shared with c.
func (c Clos) WithDefaults() Clos {
	if c.FabricLink == 0 {
		c.FabricLink = c.HostLink
	}
	if c.HopLatency == 0 {
		c.HopLatency = DefaultHopLatency
	}
	c.Oversubscription = append([]float64(nil), c.Oversubscription...)
	c.ParallelLinks = append([]int(nil), c.ParallelLinks...)
	c.ScaleUp = c.ScaleUp.withDefaults()
	if c.Tiers == 2 || c.Tiers == 3 {
		for len(c.Oversubscription) < c.Tiers-1 {
			c.Oversubscription = append(c.Oversubscription, 1)
		}
		for len(c.ParallelLinks) < c.Tiers-1 {
			c.ParallelLinks = append(c.ParallelLinks, 1)
		}
	}
	return c
}

// Validate reports whether c describes a buildable Clos. It returns nil or one *FieldError per
// problem (joined with errors.Join), each naming the YAML field, the bad value and what is
// allowed.
func (c Clos) Validate() error {
	_, err := c.Layout()
	return err
}

// checkFields validates each field on its own (c has defaults applied).
func (c Clos) checkFields() []error {
	var errs []error
	tiersOK := c.Tiers == 2 || c.Tiers == 3
	if !tiersOK {
		errs = append(errs, fieldErr("tiers", "%d is not supported; want 2 or 3", c.Tiers))
	}
	if c.Planes < 1 || c.Planes > MaxPlanes {
		errs = append(errs, fieldErr("planes", "%d is out of range; want 1 to %d", c.Planes, MaxPlanes))
	}
	switch {
	case c.Radix < 4 || c.Radix > MaxRadix:
		errs = append(errs, fieldErr("radix", "%d is out of range; want an even number of ports from 4 to %d", c.Radix, MaxRadix))
	case c.Radix%2 != 0:
		errs = append(errs, fieldErr("radix", "%d is odd; want an even number of ports from 4 to %d", c.Radix, MaxRadix))
	}
	if c.Hosts < 0 {
		errs = append(errs, fieldErr("hosts", "%d is negative; want 0 (the most the radix allows) or a positive count", c.Hosts))
	}
	switch {
	case c.HostLink == 0:
		errs = append(errs, fieldErr("host_link", "missing; want a positive rate such as \"400Gbps\""))
	case c.HostLink < 0:
		errs = append(errs, fieldErr("host_link", "%v is negative; want a positive rate such as \"400Gbps\"", c.HostLink))
	}
	if c.FabricLink < 0 {
		errs = append(errs, fieldErr("fabric_link", "%v is negative; want a positive rate, or 0 for host_link", c.FabricLink))
	}
	if c.HopLatency < 0 {
		errs = append(errs, fieldErr("hop_latency", "%v is negative; want a duration >= 0 such as \"500ns\"", c.HopLatency))
	} else if c.HopLatency > MaxHopLatency {
		errs = append(errs, fieldErr("hop_latency", "%v is beyond %v; a link plus a switch takes nanoseconds to microseconds (500ns is typical)", c.HopLatency, MaxHopLatency))
	}
	if tiersOK && len(c.Oversubscription) > c.Tiers-1 {
		errs = append(errs, fieldErr("oversubscription", "%d entries; a %d-tier Clos takes at most %d (%s)", len(c.Oversubscription), c.Tiers, c.Tiers-1, levelNames(c.Tiers)))
	}
	for i, r := range c.Oversubscription {
		if math.IsNaN(r) || math.IsInf(r, 0) || r <= 0 {
			errs = append(errs, fieldErr(fmt.Sprintf("oversubscription[%d]", i), "%v is not a positive ratio; want e.g. 1 (non-blocking) or 3 (3:1)", r))
		}
	}
	if tiersOK && len(c.ParallelLinks) > c.Tiers-1 {
		errs = append(errs, fieldErr("parallel_links", "%d entries; a %d-tier Clos takes at most %d (%s)", len(c.ParallelLinks), c.Tiers, c.Tiers-1, levelNames(c.Tiers)))
	}
	for i, p := range c.ParallelLinks {
		if p < 1 || p > MaxRadix {
			errs = append(errs, fieldErr(fmt.Sprintf("parallel_links[%d]", i), "%d is out of range; want a count >= 1 that divides the uplinks", p))
		}
	}
	return append(errs, c.ScaleUp.check()...)
}

func levelNames(tiers int) string {
	if tiers == 2 {
		return "T0"
	}
	return "T0, T1"
}

// split finds the number of down ports d in [1, radix-1] for which
// d x down / ((radix-d) x up) equals ratio (relative tolerance 1e-9). When there is none it
// returns an explanation naming the nearest possible ratios.
func split(radix int, ratio float64, down, up sim.Rate) (int, string) {
	r := func(d int) float64 { return float64(d) * float64(down) / (float64(radix-d) * float64(up)) }
	below, above := 0, 0
	for d := 1; d < radix; d++ {
		v := r(d)
		if math.Abs(v-ratio) <= 1e-9*ratio {
			return d, ""
		}
		if v < ratio {
			below = d
		} else if above == 0 {
			above = d
		}
	}
	var near []string
	for _, d := range []int{below, above} {
		if d > 0 {
			near = append(near, fmt.Sprintf("%s (%d down : %d up)", strconv.FormatFloat(r(d), 'g', 6, 64), d, radix-d))
		}
	}
	return 0, "the nearest possible are " + strings.Join(near, " and ")
}

func divisors(n int) string {
	var ds []string
	for d := 1; d <= n; d++ {
		if n%d == 0 {
			ds = append(ds, strconv.Itoa(d))
		}
	}
	return strings.Join(ds, ", ")
}

// Layout validates c and derives its structure: port splits, switch counts, node and link
// numbering. All other queries (Nodes, Links, Routes, Path, SpreadRoutes, Sizing) are methods
// of the returned Layout, which is immutable and safe for concurrent use.
//
// Errors: one *FieldError per problem, joined with errors.Join (see Validate).
func (c Clos) Layout() (*Layout, error) {
	c = c.WithDefaults()
	if errs := c.checkFields(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	R := c.Radix
	d := Dims{Tiers: c.Tiers, Planes: c.Planes, Radix: R}
	var errs []error

	// T0: d0 down, u0 up, d0 x HostLink : u0 x FabricLink = oversubscription[0].
	d0, why := split(R, c.Oversubscription[0], c.HostLink, c.FabricLink)
	if d0 == 0 {
		return nil, fieldErr("oversubscription[0]", "%v gives no whole split of radix %d into T0 down:up ports at host_link %v and fabric_link %v; %s",
			c.Oversubscription[0], R, c.HostLink, c.FabricLink, why)
	}
	d.T0Down, d.T0Up = d0, R-d0
	p0 := c.ParallelLinks[0]
	d.T0Parallel = p0
	if d.T0Up%p0 != 0 {
		errs = append(errs, fieldErr("parallel_links[0]", "%d does not divide the %d T0 uplinks; want one of %s", p0, d.T0Up, divisors(d.T0Up)))
	}
	if c.Tiers == 3 {
		d1, why := split(R, c.Oversubscription[1], 1, 1)
		if d1 == 0 {
			errs = append(errs, fieldErr("oversubscription[1]", "%v gives no whole split of radix %d into T1 down:up ports; %s", c.Oversubscription[1], R, why))
		} else {
			d.T1Down, d.T1Up = d1, R-d1
			p1 := c.ParallelLinks[1]
			d.T1Parallel = p1
			if d.T1Up%p1 != 0 {
				errs = append(errs, fieldErr("parallel_links[1]", "%d does not divide the %d T1 uplinks; want one of %s", p1, d.T1Up, divisors(d.T1Up)))
			}
			if d.T1Down%p0 != 0 {
				errs = append(errs, fieldErr("parallel_links[0]", "%d does not divide the %d T1 down ports; want one of %s", p0, d.T1Down, divisors(d.T1Down)))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	// Per-plane structure at full size.
	if c.Tiers == 2 {
		d.T1Down = R
		d.Pods = 1
		d.T0PerPod = R / p0
		d.T1PerPod = d.T0Up / p0
		d.MaxHosts = d.T0PerPod * d0
	} else {
		p1 := d.T1Parallel
		d.T1PerPod = d.T0Up / p0
		d.T0PerPod = d.T1Down / p0
		d.CoreGroup = d.T1Up / p1
		d.Pods = R / p1
		d.MaxHosts = d.Pods * d.T0PerPod * d0 // <= 4096^3, no overflow
		d.T2s = d.T1PerPod * d.CoreGroup
	}
	if d.MaxHosts > MaxHostCount && c.Hosts == 0 {
		return nil, fieldErr("hosts", "0 means the most radix %d allows with %d tiers, %d, beyond the %d lockstep supports; set hosts explicitly",
			R, c.Tiers, d.MaxHosts, MaxHostCount)
	}
	switch {
	case c.Hosts == 0:
		c.Hosts = d.MaxHosts
	case c.Hosts > d.MaxHosts:
		return nil, fieldErr("hosts", "%d is more than this Clos allows; want at most %d (%s)", c.Hosts, d.MaxHosts, d.maxHostsFormula())
	case c.Hosts > MaxHostCount:
		return nil, fieldErr("hosts", "%d is beyond the %d lockstep supports", c.Hosts, MaxHostCount)
	}
	d.Hosts = c.Hosts

	// Built size: only as many T0s and pods as the hosts need.
	d.T0s = ceilDiv(d.Hosts, d0)
	if c.Tiers == 3 {
		d.Pods = ceilDiv(d.T0s, d.T0PerPod)
		d.T1s = d.Pods * d.T1PerPod
	} else {
		d.T1s = d.T1PerPod
	}
	l := &Layout{cfg: c, d: d}
	l.perPlane = d.T0s + d.T1s + d.T2s
	if int64(d.Hosts)+int64(c.Planes)*int64(l.perPlane) > math.MaxInt32 {
		return nil, fieldErr("hosts", "%d hosts need %d nodes, beyond the %d lockstep supports", d.Hosts, int64(d.Hosts)+int64(c.Planes)*int64(l.perPlane), math.MaxInt32)
	}
	l.linksPerPlane = d.Hosts + d.T0s*d.T0Up + d.T1s*d.T1Up
	return l, nil
}

func (d Dims) maxHostsFormula() string {
	if d.Tiers == 2 {
		return fmt.Sprintf("%d T0s x %d hosts", d.T0PerPod, d.T0Down)
	}
	return fmt.Sprintf("%d pods x %d T0s x %d hosts", d.Pods, d.T0PerPod, d.T0Down)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Dims are the derived dimensions of a Clos, per plane (every plane is identical). Port
// counts are per switch.
type Dims struct {
	// Tiers, Planes and Radix are copied from the configuration.
	Tiers, Planes, Radix int
	// Hosts is the number of hosts built; MaxHosts the most the configuration allows.
	Hosts, MaxHosts int

	// T0Down (d0) ports face hosts; T0Up (u0) face T1s; d0 + u0 = Radix. T0Parallel (p0) is the
	// number of parallel links from a T0 to each T1 it reaches.
	T0Down, T0Up, T0Parallel int
	// T1Down (d1) ports face T0s; T1Up (u1) face T2s; T1Parallel (p1) links go from a T1 to
	// each T2 it reaches. In a 2-tier Clos T1Down = Radix and T1Up = T1Parallel = 0.
	T1Down, T1Up, T1Parallel int

	// Pods is the number of pods built (1 in a 2-tier Clos, which is one pod). A pod holds up
	// to T0PerPod T0s (d1/p0; 2-tier: Radix/p0) and T1PerPod T1s (u0/p0).
	Pods, T0PerPod, T1PerPod int
	// CoreGroup is the number of T2s in each core group (u1/p1; 3-tier only). T1 j of every pod
	// connects to every T2 in core group j.
	CoreGroup int

	// T0s, T1s and T2s are the numbers of switches built per plane in each tier.
	T0s, T1s, T2s int
}

// Layout is a validated Clos with its derived numbering. Get one from Clos.Layout. It holds
// no per-node state, so it is cheap for any size; Nodes and Links allocate what they return.
type Layout struct {
	cfg           Clos   // effective configuration, defaults applied and Hosts resolved
	kindName      string // "" for "clos"; "fat_tree" when built by FatTree
	d             Dims
	perPlane      int // switches per plane
	linksPerPlane int
}

// Config returns the effective configuration: c.WithDefaults() with Hosts resolved. Print it
// with the results so every default is visible.
func (l *Layout) Config() Clos {
	c := l.cfg
	c.Oversubscription = append([]float64(nil), c.Oversubscription...)
	c.ParallelLinks = append([]int(nil), c.ParallelLinks...)
	c.ScaleUp = copyScaleUp(c.ScaleUp)
	return c
}

// kind returns the Params.Kind of the layout: "clos", or "fat_tree" for a FatTree.
func (l *Layout) kind() string {
	if l.kindName == "" {
		return "clos"
	}
	return l.kindName
}

// Dims returns the derived dimensions.
func (l *Layout) Dims() Dims { return l.d }

// NumHosts returns the number of hosts; they are nodes 0..NumHosts()-1.
func (l *Layout) NumHosts() int { return l.d.Hosts }

// NumNodes returns the number of nodes: hosts plus Planes x switches per plane.
func (l *Layout) NumNodes() int { return l.d.Hosts + l.d.Planes*l.perPlane }

// NumLinks returns the number of links in all planes.
func (l *Layout) NumLinks() int { return l.d.Planes * l.linksPerPlane }
