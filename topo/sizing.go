package topo

import (
	"encoding/json"
	"math"
	"math/bits"

	"github.com/lockstepsim/lockstep/sim"
)

// SizingPacketBytes is the packet size used for the serialisation part of
// Sizing.WorstCaseLatency: 4 KiB.
const SizingPacketBytes = 4096

// OpticsModuleRate is the transceiver module that Sizing.OpticsModules counts in: 800 Gb/s
// (OSFP, 8 x 100G lanes). Slower ports are broken out of one module (8 x 100G, 4 x 200G,
// 2 x 400G), so a radix-512 x 100G switch and a radix-64 x 800G switch both take 64 modules
// and an 8-plane NIC of 100G ports takes one.
const OpticsModuleRate = 800 * sim.Gbps

// Sizing is the bill of materials and headline capacity of a topology. Rates are bits/s and
// saturate at the largest sim.Rate rather than overflow; the Gbps figures are exact.
//
// Definitions shared by every kind:
//   - Hop counts are fabric hops: links between switches (or between the routers of
//     switchless chips), host links excluded, on a minimal path. DiameterHops is the largest
//     over host pairs the fabric connects; MeanHops the mean over all ordered pairs of hosts
//     the fabric connects, a host with itself included (0 hops): a 16x20x28 torus has
//     diameter 32 and mean 16 = 16/4 + 20/4 + 28/4. MaxSwitchHops = DiameterHops + 1 counts
//     the switches (routers) traversed.
//   - Optical links: NIC-switch and switch-switch links of a switched fabric; in a torus with
//     OCS only the links leaving a cube through its faces (in-cube links are electrical,
//     passive copper); a torus without OCS and a full mesh have none. Optics counts
//     transceivers, one per end of each optical link; OpticsModules counts them in 800G
//     modules with breakout (see OpticsModuleRate).
//   - Bisection bandwidth is the capacity, one direction, across the cut that halves the
//     hosts: half the hosts sending to the other half at once can use at most this much.
type Sizing struct {
	// Kind is the topology kind: "clos", "fat_tree", "rail", "torus", "mesh".
	Kind  string `json:"kind"`
	Hosts int    `json:"hosts"` // hosts (NICs), nodes 0..Hosts-1
	// GPUs is the number of accelerators: one per host (a torus or mesh node is one chip).
	GPUs int `json:"gpus"`
	// Planes is the number of NIC ports per host, each in its own plane.
	Planes int `json:"planes"`
	// SwitchesPerPlaneByTier counts the switches of one plane, index = tier (T0, T1[, T2]);
	// empty for switchless kinds.
	SwitchesPerPlaneByTier []int `json:"switches_per_plane_by_tier"`
	SwitchesPerPlane       int   `json:"switches_per_plane"` // their sum
	Switches               int   `json:"switches"`           // all planes
	// Routers counts the chip-internal routers of a torus or mesh: lockstep models each as a
	// switch next to its chip, but they are not switches to buy (see the package doc).
	Routers int `json:"routers"`
	// LinksByLevel counts physical links in all planes by level, named by LevelNames: a Clos
	// has host-T0, T0-T1[, T1-T2] (parallel links included); a torus its chip-to-chip links
	// (electrical, then optical with OCS). A chip's link to its own router is not counted.
	LinksByLevel []int    `json:"links_by_level"`
	LevelNames   []string `json:"level_names"` // "host-T0", "T0-T1", ...
	Links        int      `json:"links"`       // all levels
	// OpticalLinks counts the links with a transceiver at each end (see above).
	OpticalLinks int `json:"optical_links"`
	// Optics is the number of transceivers: two per optical link.
	Optics int `json:"optics"`
	// OpticsModules is the number of 800G transceiver modules, per device: the optical
	// bandwidth of each NIC or switch divided by OpticsModuleRate, rounded up.
	OpticsModules int `json:"optics_800g_modules"`
	// NICBandwidth is one host's bandwidth over all planes: Planes x HostLink.
	NICBandwidth sim.Rate `json:"nic_bandwidth_bps"`
	// BisectionBandwidth is the bisection capacity, one direction (see above). For a Clos it
	// is half the smallest aggregate capacity, over all planes, of the levels that traffic
	// between hosts crosses in the built fabric: host links, T0 uplinks (when there is more
	// than one T0), T1 uplinks (when there is more than one pod); exact for the symmetric,
	// full builds it is meant for. For a torus and a mesh it is BisectionLinks x link rate.
	BisectionBandwidth sim.Rate `json:"-"`
	// BisectionGbps is BisectionBandwidth in Gb/s as a float64, exact where the bit/s figure
	// saturates; JSON carries this one.
	BisectionGbps float64 `json:"bisection_bandwidth_gbps"`
	// BisectionLinks is the number of links the bisection cuts (torus and mesh; 0 for
	// switched fabrics, where the figure is not a link count).
	BisectionLinks int `json:"bisection_links,omitempty"`
	// DiameterHops and MeanHops are fabric hops (see above).
	DiameterHops int     `json:"diameter_hops"`
	MeanHops     float64 `json:"mean_hops"` // self pairs included
	// MaxSwitchHops is the diameter in switches (routers) traversed: 3 for a 2-tier Clos, 5
	// for a 3-tier one (fewer when a partial build has one T0, or one pod).
	MaxSwitchHops int `json:"max_switch_hops"`
	// WorstCaseLatency is the unloaded one-way latency of one SizingPacketBytes packet on the
	// longest minimal path, store-and-forward: every link's latency plus the packet's
	// serialisation on each link (two host links, the rest fabric links), in ps.
	WorstCaseLatency sim.Time `json:"worst_case_latency_ps"`
	// ScaleUp describes the scale-up (NVLink) domains, nil when there are none.
	ScaleUp *ScaleUpSizing `json:"scale_up,omitempty"`
	// OCS describes a torus's optical circuit switches, nil without OCS.
	OCS *OCSSizing `json:"ocs,omitempty"`
	// Notes are caveats the numbers alone do not carry (e.g. a rail-only fabric's bisection
	// is 0 because cross-rail traffic takes the scale-up domain).
	Notes []string `json:"notes,omitempty"`
}

// Size validates c and returns its Sizing; a shorthand for Layout then Sizing.
func (c Clos) Size() (Sizing, error) {
	l, err := c.Layout()
	if err != nil {
		return Sizing{}, err
	}
	return l.Sizing(), nil
}

// Sizing returns the bill of materials and headline capacity (see Sizing). Per plane, with
// d0, u0, d1, u1 and p0, p1 as in the package documentation:
//
//	2-tier: T1s = u0/p0, T0s = ceil(hosts/d0) <= Radix/p0
//	3-tier: T1s = pods x u0/p0, T2s = (u0/p0) x (u1/p1), T0s = ceil(hosts/d0) <= pods x d1/p0
func (l *Layout) Sizing() Sizing {
	d := &l.d
	c := &l.cfg
	s := Sizing{Kind: l.kind(), Hosts: d.Hosts, GPUs: d.Hosts, Planes: d.Planes}
	s.SwitchesPerPlaneByTier = []int{d.T0s, d.T1s}
	s.LinksByLevel = []int{d.Hosts * d.Planes, d.T0s * d.T0Up * d.Planes}
	s.LevelNames = []string{"host-T0", "T0-T1"}
	if d.Tiers == 3 {
		s.SwitchesPerPlaneByTier = append(s.SwitchesPerPlaneByTier, d.T2s)
		s.LinksByLevel = append(s.LinksByLevel, d.T1s*d.T1Up*d.Planes)
		s.LevelNames = append(s.LevelNames, "T1-T2")
	}
	s.SwitchesPerPlane = l.perPlane
	s.Switches = l.perPlane * d.Planes
	for _, n := range s.LinksByLevel {
		s.Links += n
	}
	s.OpticalLinks = s.Links
	s.Optics = 2 * s.Links
	s.OpticsModules = l.opticsModules()
	s.NICBandwidth = rateMul(c.HostLink, d.Planes)

	bis := rateMul(s.NICBandwidth, d.Hosts)
	s.MaxSwitchHops = 1
	if d.T0s > 1 {
		bis = min(bis, rateMul(rateMul(c.FabricLink, d.T0Up*d.Planes), d.T0s))
		s.MaxSwitchHops = 3
	}
	if d.Tiers == 3 && d.Pods > 1 {
		bis = min(bis, rateMul(rateMul(c.FabricLink, d.T1Up*d.Planes), d.T1s))
		s.MaxSwitchHops = 5
	}
	s.BisectionBandwidth = bis / 2
	// The same in floating point, which does not saturate: 8-plane 3-tier fabrics of 800G
	// links exceed the int64 bit/s range (9.2 Eb/s).
	fb := float64(c.HostLink) * float64(d.Planes) * float64(d.Hosts)
	if d.T0s > 1 {
		fb = min(fb, float64(c.FabricLink)*float64(d.T0Up*d.Planes)*float64(d.T0s))
	}
	if d.Tiers == 3 && d.Pods > 1 {
		fb = min(fb, float64(c.FabricLink)*float64(d.T1Up*d.Planes)*float64(d.T1s))
	}
	s.BisectionGbps = fb / 2 / 1e9

	hopLinks := s.MaxSwitchHops + 1
	lat := timeMul(c.HopLatency, hopLinks)
	lat = timeAdd(lat, timeMul(c.HostLink.TxTime(SizingPacketBytes), 2))
	lat = timeAdd(lat, timeMul(c.FabricLink.TxTime(SizingPacketBytes), hopLinks-2))
	s.WorstCaseLatency = lat
	s.DiameterHops = s.MaxSwitchHops - 1
	s.MeanHops = l.meanHops()
	s.ScaleUp = c.ScaleUp.sizing(d.Hosts)
	return s
}

// meanHops returns the mean fabric hops over all ordered host pairs, self included: 0 on one
// T0, 2 within a pod (or a 2-tier Clos), 4 across pods.
func (l *Layout) meanHops() float64 {
	d := &l.d
	h := float64(d.Hosts)
	// sumSquares returns the sum of the squared sizes of groups of size g covering n hosts,
	// the last one partial: the ordered pairs within a group.
	sumSquares := func(n, g int) float64 {
		full, last := n/g, n%g
		return float64(full)*float64(g)*float64(g) + float64(last)*float64(last)
	}
	sameT0 := sumSquares(d.Hosts, d.T0Down)
	samePod := h * h
	if d.Tiers == 3 {
		samePod = sumSquares(d.Hosts, d.T0PerPod*d.T0Down)
	}
	return (2*(samePod-sameT0) + 4*(h*h-samePod)) / (h * h)
}

// opticsModules counts 800G modules device by device (see OpticsModuleRate): each host's
// Planes NIC ports; each T0's connected host ports and uplinks; each T1's links to the T0s of
// its pod and its uplinks; each T2's links to the built pods.
func (l *Layout) opticsModules() int {
	d := &l.d
	c := &l.cfg
	h, f := float64(c.HostLink), float64(c.FabricLink)
	n := d.Hosts * modulesFor(float64(d.Planes)*h)
	perPlane := 0
	for t := 0; t < d.T0s; t++ {
		hosts := min(d.T0Down, d.Hosts-t*d.T0Down)
		perPlane += modulesFor(float64(hosts)*h + float64(d.T0Up)*f)
	}
	for pod := 0; pod < d.Pods; pod++ {
		t0s := min(d.T0PerPod, d.T0s-pod*d.T0PerPod) // 2-tier: one pod of every T0
		perPlane += d.T1PerPod * modulesFor(float64(t0s*d.T0Parallel+d.T1Up)*f)
	}
	if d.Tiers == 3 {
		perPlane += d.T2s * modulesFor(float64(d.Pods*d.T1Parallel)*f)
	}
	return n + d.Planes*perPlane
}

// modulesFor returns the number of OpticsModuleRate modules carrying bps of optical
// bandwidth: ceil(bps / 800G).
func modulesFor(bps float64) int { return int(math.Ceil(bps / float64(OpticsModuleRate))) }

// rateMul returns r x n, saturating at the largest Rate (r, n >= 0).
func rateMul(r sim.Rate, n int) sim.Rate {
	hi, lo := bits.Mul64(uint64(r), uint64(n))
	if hi != 0 || lo > math.MaxInt64 {
		return sim.Rate(math.MaxInt64)
	}
	return sim.Rate(lo)
}

// timeMul returns t x n, saturating at sim.MaxTime (t, n >= 0).
func timeMul(t sim.Time, n int) sim.Time { return sim.Time(rateMul(sim.Rate(t), n)) }

// timeAdd returns a + b, saturating at sim.MaxTime (a, b >= 0).
func timeAdd(a, b sim.Time) sim.Time {
	if a > sim.MaxTime-b {
		return sim.MaxTime
	}
	return a + b
}

// MarshalJSON writes the scale-up sizing with plain numbers (ps), as Sizing does.
func (s ScaleUpSizing) MarshalJSON() ([]byte, error) {
	type plain ScaleUpSizing
	return json.Marshal(struct {
		plain
		Latency int64 `json:"latency_ps"`
	}{plain(s), int64(s.Latency)})
}

// MarshalJSON writes Sizing with plain numbers in the units its keys name (bits/s, ps), not
// the unit strings sim.Rate and sim.Time marshal to, so scripts can compute with them.
func (s Sizing) MarshalJSON() ([]byte, error) {
	type plain Sizing // same fields, no methods
	return json.Marshal(struct {
		plain
		NICBandwidth     int64 `json:"nic_bandwidth_bps"`
		WorstCaseLatency int64 `json:"worst_case_latency_ps"`
	}{plain(s), int64(s.NICBandwidth), int64(s.WorstCaseLatency)})
}
