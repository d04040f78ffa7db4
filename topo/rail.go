package topo

import (
	"errors"
	"strconv"

	"github.com/lockstepsim/lockstep/sim"
)

// DefaultGPUsPerServer is Rail.GPUsPerServer when zero: an HGX server's 8 GPUs.
const DefaultGPUsPerServer = 8

// Rail configures a rail-optimised fabric: GPU g of every server is on rail g, served by
// rail g's own T0 switches (up to Radix/2 servers each), so traffic between same-index GPUs
// of different servers crosses one T0; a spine tier (T1) joins the T0s of every rail. With
// RailOnly there is no spine: each rail is its own fabric (one T0 when it has at most Radix
// servers, else a leaf-spine of its own), and traffic between GPUs of different indices must
// first cross the scale-up domain (NVLink) to the right rail [Wang et al., "Rail-only",
// HotI 2024]: NumPaths and LinkPath report no path between rails, and the fabric's bisection
// is 0.
//
// Host h is GPU h % GPUsPerServer of server h / GPUsPerServer. Each GPU's NIC has Planes
// ports, one per plane; every plane is an independent copy of the fabric (Planes 2: HPN-style
// dual-plane, each NIC's two ports on two T0s of independent planes [Qian et al., "Alibaba
// HPN", SIGCOMM 2024]). T0s split their radix evenly, Radix/2 down and Radix/2 up (one link to
// each T1); a spine has Radix/2 T1s, each with one port per T0 of the plane, so a plane has at
// most Radix T0s.
type Rail struct {
	// Servers is the number of servers. Required.
	Servers int `yaml:"servers" json:"servers"`
	// GPUsPerServer is the number of GPUs (rails) per server: 8 (HGX), 4 (GB200 tray); 0
	// means DefaultGPUsPerServer. 1 to 64.
	GPUsPerServer int `yaml:"gpus_per_server" json:"gpus_per_server"`
	// Planes is the number of NIC ports per GPU, each in its own plane: 1, or 2 for
	// dual-plane; 0 means 1. At most MaxPlanes.
	Planes int `yaml:"planes" json:"planes"`
	// Radix is the ports per switch: even, 4 to MaxRadix.
	Radix int `yaml:"radix" json:"radix"`
	// HostLink is the rate of each NIC port's link, bits/s. Required.
	HostLink sim.Rate `yaml:"host_link" json:"host_link"`
	// FabricLink is the rate of each T0-T1 link. 0 means HostLink.
	FabricLink sim.Rate `yaml:"fabric_link" json:"fabric_link"`
	// HopLatency is each link's latency, propagation plus forwarding at the next switch. 0
	// means DefaultHopLatency.
	HopLatency sim.Time `yaml:"hop_latency" json:"hop_latency"`
	// RailOnly leaves out the spine that joins rails (see Rail).
	RailOnly bool `yaml:"rail_only" json:"rail_only"`
	// ScaleUp groups GPUs into scale-up domains of whole servers (ScaleUp.GPUs a multiple of
	// GPUsPerServer).
	ScaleUp *ScaleUp `yaml:"scale_up,omitempty" json:"scale_up,omitempty"`
}

// Kind returns "rail".
func (r Rail) Kind() string { return "rail" }

// WithDefaults returns a copy of r with GPUsPerServer, Planes, FabricLink, HopLatency and the
// ScaleUp defaults written out.
func (r Rail) WithDefaults() Rail {
	if r.GPUsPerServer == 0 {
		r.GPUsPerServer = DefaultGPUsPerServer
	}
	if r.Planes == 0 {
		r.Planes = 1
	}
	if r.FabricLink == 0 {
		r.FabricLink = r.HostLink
	}
	if r.HopLatency == 0 {
		r.HopLatency = DefaultHopLatency
	}
	r.ScaleUp = r.ScaleUp.withDefaults()
	return r
}

// railDims are a Rail's derived dimensions, per plane.
type railDims struct {
	g, s, planes, radix, hosts int
	d0, u0                     int // T0 down (servers) and up ports
	t0PerRail, t0s             int
	t1s, t1PerRail             int // t1PerRail > 0 only for a rail-only leaf-spine
	perPlane                   int
}

// dims derives r's structure (defaults applied, fields valid).
func (r Rail) dims() railDims {
	d := railDims{g: r.GPUsPerServer, s: r.Servers, planes: r.Planes, radix: r.Radix, hosts: r.Servers * r.GPUsPerServer}
	switch {
	case r.RailOnly && r.Servers <= r.Radix:
		d.d0, d.t0PerRail = r.Radix, 1
	case r.RailOnly:
		d.d0, d.u0 = r.Radix/2, r.Radix/2
		d.t0PerRail = ceilDiv(r.Servers, d.d0)
		d.t1PerRail, d.t1s = d.u0, r.GPUsPerServer*d.u0
	default:
		d.d0, d.u0 = r.Radix/2, r.Radix/2
		d.t0PerRail = ceilDiv(r.Servers, d.d0)
		d.t1s = d.u0
	}
	d.t0s = d.g * d.t0PerRail
	d.perPlane = d.t0s + d.t1s
	return d
}

// Validate reports whether r describes a buildable rail fabric: nil, or one *FieldError per
// problem joined with errors.Join, each naming the field, the bad value and what is allowed.
func (r Rail) Validate() error { return errors.Join(r.WithDefaults().check()...) }

// check validates r (defaults applied).
func (r Rail) check() []error {
	var errs []error
	if r.GPUsPerServer < 1 || r.GPUsPerServer > 64 {
		errs = append(errs, fieldErr("gpus_per_server", "%d is out of range; want 1 to 64 (8 for HGX, 4 for a GB200 tray)", r.GPUsPerServer))
	}
	if r.Planes < 1 || r.Planes > MaxPlanes {
		errs = append(errs, fieldErr("planes", "%d is out of range; want 1 to %d (2 for dual-plane)", r.Planes, MaxPlanes))
	}
	radixOK := r.Radix >= 4 && r.Radix <= MaxRadix && r.Radix%2 == 0
	if !radixOK {
		errs = append(errs, fieldErr("radix", "%d is not allowed; want an even number of ports from 4 to %d", r.Radix, MaxRadix))
	}
	if r.HostLink <= 0 {
		errs = append(errs, fieldErr("host_link", "%v is not positive; want each NIC port's rate, e.g. \"400Gbps\"", r.HostLink))
	}
	if r.FabricLink < 0 {
		errs = append(errs, fieldErr("fabric_link", "%v is negative; want a positive rate, or 0 for host_link", r.FabricLink))
	}
	if r.HopLatency < 0 || r.HopLatency > MaxHopLatency {
		errs = append(errs, fieldErr("hop_latency", "%v is out of range; want 0 (default %v) to %v", r.HopLatency, DefaultHopLatency, MaxHopLatency))
	}
	errs = append(errs, r.ScaleUp.check()...)
	if r.ScaleUp != nil && r.GPUsPerServer >= 1 && r.ScaleUp.GPUs%r.GPUsPerServer != 0 {
		errs = append(errs, fieldErr("scale_up.gpus", "%d is not a multiple of gpus_per_server %d; a scale-up domain holds whole servers", r.ScaleUp.GPUs, r.GPUsPerServer))
	}
	if r.Servers < 1 {
		return append(errs, fieldErr("servers", "%d; want the number of servers, at least 1", r.Servers))
	}
	if len(errs) > 0 {
		return errs
	}
	g, half := r.GPUsPerServer, r.Radix/2
	switch {
	case r.RailOnly && r.Servers > r.Radix*half:
		errs = append(errs, fieldErr("servers", "%d is more than a rail-only fabric of radix %d allows; want at most %d (radix x radix/2 per rail)", r.Servers, r.Radix, r.Radix*half))
	case !r.RailOnly && g > r.Radix:
		errs = append(errs, fieldErr("gpus_per_server", "%d rails need more T0s than a T1 of radix %d has ports; want at most %d", g, r.Radix, r.Radix))
	case !r.RailOnly && r.Servers > r.Radix/g*half:
		errs = append(errs, fieldErr("servers", "%d servers of %d GPUs need %d T0s per plane, more than the %d ports of a T1; want at most %d (radix/gpus_per_server x radix/2)",
			r.Servers, g, g*ceilDiv(r.Servers, half), r.Radix, r.Radix/g*half))
	case int64(r.Servers)*int64(g)*int64(1+r.Planes) > MaxHostCount/2:
		errs = append(errs, fieldErr("servers", "%d servers of %d GPUs are beyond the %d hosts lockstep supports", r.Servers, g, MaxHostCount/2/(1+r.Planes)))
	}
	return errs
}

// t0Node returns the node index of T0 i of rail g in plane p.
func (d *railDims) t0Node(p, g, i int) int { return d.hosts + p*d.perPlane + g*d.t0PerRail + i }

// t1Node returns the node index of T1 j (of rail g when rail-only) in plane p.
func (d *railDims) t1Node(p, g, j int) int {
	return d.hosts + p*d.perPlane + d.t0s + g*d.t1PerRail + j
}

// Topology validates r and returns its Graph (see Rail.Graph).
func (r Rail) Topology() (Topology, error) { return asTopology(r.Graph()) }

// Graph validates r and returns the fabric as a Graph. Node order: hosts, then plane by plane
// the T0s (rail by rail) and the T1s. Names: host "h17" with NIC ports "h17.p0"...; T0 i of
// rail g in plane p "p0.r3.t0-1"; spine T1 "p0.t1-5" (rail-only: "p0.r3.t1-5"); switch ports
// "<switch>.down5" (local port 5) and "<switch>.up2" (local port down ports + 2). Wiring:
// host h's port p -> plane p T0 (h/G)/d0 of rail h%G, down port (h/G)%d0; T0 up port d0+j ->
// T1 j, whose down port is the T0's index in the plane (rail-only: in the rail). Links: per
// plane, host links by host, then T0-T1 links by T0 and up port.
func (r Rail) Graph() (*Graph, error) {
	r = r.WithDefaults()
	if errs := r.check(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	d := r.dims()
	p := Params{Kind: "rail", Planes: r.Planes, HostLink: r.HostLink, FabricLink: r.FabricLink, HopLatency: r.HopLatency}
	r.ScaleUp.params(&p)
	nodes := d.hosts + d.planes*d.perPlane
	links := d.planes * (d.hosts + d.t0s*d.u0)
	build := func() GraphSpec {
		spec := GraphSpec{Params: p, Nodes: make([]Node, 0, nodes), Links: make([]Link, 0, links), PortNames: make([]string, 0, links)}
		for h := range d.hosts {
			spec.Nodes = append(spec.Nodes, Node{Name: hostName(h), Kind: KindHost, Plane: -1, Tier: -1, Index: h, NumPorts: r.Planes})
		}
		t0Name := func(pl, g, i int) string {
			return "p" + strconv.Itoa(pl) + ".r" + strconv.Itoa(g) + ".t0-" + strconv.Itoa(i)
		}
		t1Name := func(pl, j int) string {
			if d.t1PerRail > 0 {
				return "p" + strconv.Itoa(pl) + ".r" + strconv.Itoa(j/d.t1PerRail) + ".t1-" + strconv.Itoa(j%d.t1PerRail)
			}
			return "p" + strconv.Itoa(pl) + ".t1-" + strconv.Itoa(j)
		}
		for pl := range d.planes {
			for t := range d.t0s {
				spec.Nodes = append(spec.Nodes, Node{Name: t0Name(pl, t/d.t0PerRail, t%d.t0PerRail), Kind: KindSwitch, Plane: pl, Tier: 0, Index: t, NumPorts: d.d0 + d.u0})
			}
			for j := range d.t1s {
				spec.Nodes = append(spec.Nodes, Node{Name: t1Name(pl, j), Kind: KindSwitch, Plane: pl, Tier: 1, Index: j, NumPorts: r.Radix})
			}
		}
		for pl := range d.planes {
			for h := range d.hosts {
				srv, g := h/d.g, h%d.g
				t0 := d.t0Node(pl, g, srv/d.d0)
				spec.Links = append(spec.Links, Link{Name: hostName(h) + ".p" + strconv.Itoa(pl), A: Endpoint{h, pl}, B: Endpoint{t0, srv % d.d0},
					Plane: pl, Level: 0, Rate: r.HostLink, Delay: r.HopLatency})
				spec.PortNames = append(spec.PortNames, spec.Nodes[t0].Name+".down"+strconv.Itoa(srv%d.d0))
			}
			for t := range d.t0s {
				g, i := t/d.t0PerRail, t%d.t0PerRail
				t0 := d.t0Node(pl, g, i)
				for j := range d.u0 {
					t1, down := d.t1Node(pl, 0, j), t
					if d.t1PerRail > 0 {
						t1, down = d.t1Node(pl, g, j), i
					}
					spec.Links = append(spec.Links, Link{Name: spec.Nodes[t0].Name + ".up" + strconv.Itoa(j), A: Endpoint{t0, d.d0 + j}, B: Endpoint{t1, down},
						Plane: pl, Level: 1, Rate: r.FabricLink, Delay: r.HopLatency})
					spec.PortNames = append(spec.PortNames, spec.Nodes[t1].Name+".down"+strconv.Itoa(down))
				}
			}
		}
		return spec
	}
	return newLazyGraph(p, d.hosts, nodes, links, false, r.sizing(&d), r.blast(&d), build), nil
}

// Size validates r and returns its Sizing without building the graph.
func (r Rail) Size() (Sizing, error) {
	g, err := r.Graph()
	if err != nil {
		return Sizing{}, err
	}
	return g.Sizing(), nil
}

// serversOn returns the number of servers on T0 i of a rail.
func (d *railDims) serversOn(i int) int { return min(d.d0, d.s-i*d.d0) }

// sizing computes r's Sizing (valid, defaults applied). Fabric hops: 0 on one T0, 2 across
// T0s (through a T1); rail-only counts only pairs on one rail, the pairs the fabric connects.
func (r Rail) sizing(d *railDims) Sizing {
	s := Sizing{Kind: "rail", Hosts: d.hosts, GPUs: d.hosts, Planes: d.planes}
	s.SwitchesPerPlaneByTier = []int{d.t0s}
	if d.t1s > 0 {
		s.SwitchesPerPlaneByTier = append(s.SwitchesPerPlaneByTier, d.t1s)
	}
	s.SwitchesPerPlane = d.perPlane
	s.Switches = d.perPlane * d.planes
	s.LinksByLevel = []int{d.hosts * d.planes}
	s.LevelNames = []string{"host-T0"}
	if d.u0 > 0 {
		s.LinksByLevel = append(s.LinksByLevel, d.t0s*d.u0*d.planes)
		s.LevelNames = append(s.LevelNames, "T0-T1")
	}
	for _, n := range s.LinksByLevel {
		s.Links += n
	}
	s.OpticalLinks, s.Optics = s.Links, 2*s.Links
	h, f := float64(r.HostLink), float64(r.FabricLink)
	mods := d.hosts * modulesFor(float64(d.planes)*h)
	for i := range d.t0PerRail {
		mods += d.g * d.planes * modulesFor(float64(d.serversOn(i))*h+float64(d.u0)*f)
	}
	if d.t1PerRail > 0 {
		mods += d.t1s * d.planes * modulesFor(float64(d.t0PerRail)*f)
	} else if d.t1s > 0 {
		mods += d.t1s * d.planes * modulesFor(float64(d.t0s)*f)
	}
	s.OpticsModules = mods
	s.NICBandwidth = rateMul(r.HostLink, d.planes)

	// Ordered pairs (self included) on one T0, and those the fabric connects.
	var sameT0 float64
	for i := range d.t0PerRail {
		n := float64(d.serversOn(i))
		sameT0 += float64(d.g) * n * n
	}
	connected := float64(d.hosts) * float64(d.hosts)
	if r.RailOnly {
		connected = float64(d.g) * float64(d.s) * float64(d.s)
	}
	s.MeanHops = 2 * (connected - sameT0) / connected
	if d.t0PerRail > 1 || !r.RailOnly && d.t0s > 1 {
		s.DiameterHops = 2
	}
	s.MaxSwitchHops = s.DiameterHops + 1
	links := s.DiameterHops + 2
	lat := timeMul(r.HopLatency, links)
	lat = timeAdd(lat, timeMul(r.HostLink.TxTime(SizingPacketBytes), 2))
	s.WorstCaseLatency = timeAdd(lat, timeMul(r.FabricLink.TxTime(SizingPacketBytes), links-2))

	// Bisection: host links, or the T0 uplinks when traffic between T0s needs them.
	nic := float64(r.HostLink) * float64(d.planes)
	switch {
	case r.RailOnly && d.g > 1:
		s.Notes = append(s.Notes, "rail-only: the packet fabric joins only same-index GPUs; traffic across rails goes over the scale-up domain, so the fabric's bisection is 0")
	case d.t0s > 1:
		s.BisectionGbps = min(nic*float64(d.hosts), f*float64(d.u0*d.planes*d.t0s)) / 2 / 1e9
	default:
		s.BisectionGbps = nic * float64(d.hosts) / 2 / 1e9
	}
	s.BisectionBandwidth = sim.Rate(min(s.BisectionGbps*1e9, float64(maxRate)))
	s.ScaleUp = r.ScaleUp.sizing(d.hosts)
	return s
}

// maxRate is the largest sim.Rate.
const maxRate = sim.Rate(1<<63 - 1)

// blast returns r's blast-radius table: a NIC port (1/Planes of its GPU), a T0-T1 link (1/u0
// of its T0's uplinks), a T0 (one plane of each GPU below it: one GPU of each of up to
// Radix/2 servers), a T1 (1/u0 of the uplinks of every T0 it serves), a scale-up link.
func (r Rail) blast(d *railDims) []Blast {
	nic := 1 / float64(d.planes)
	out := []Blast{{Element: BlastNICPort, Lost: "GPU NIC bandwidth", Share: nic, Affected: 1, AffectedKind: "GPUs"}}
	if d.u0 > 0 {
		out = append(out, Blast{Element: BlastT0T1Link, Lost: "T0 uplink bandwidth", Share: 1 / float64(d.u0), Affected: 1, AffectedKind: "T0s",
			Note: "felt by the GPUs of one rail below it"})
	}
	t0 := Blast{Element: BlastT0Switch, Lost: "GPU NIC bandwidth", Share: nic, Affected: min(d.d0, d.s), AffectedKind: "GPUs",
		Note: "one GPU (the same rail) in each of its servers"}
	if r.RailOnly && d.planes == 1 && d.t0PerRail == 1 {
		t0.Note = "the whole rail loses the packet fabric; its traffic must detour over scale-up"
	}
	out = append(out, t0)
	if d.t1s > 0 {
		served := d.t0s
		if d.t1PerRail > 0 {
			served = d.t0PerRail
		}
		out = append(out, Blast{Element: BlastT1Switch, Lost: "T0 uplink bandwidth", Share: 1 / float64(d.u0), Affected: served, AffectedKind: "T0s"})
	}
	return append(out, r.ScaleUp.blast()...)
}
