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

// Sizing is the bill of materials and headline capacity of a built Clos. Rates are bits/s
// and saturate at the largest sim.Rate rather than overflow.
type Sizing struct {
	Hosts int `json:"hosts"`
	// SwitchesPerPlaneByTier counts the switches of one plane, index = tier (T0, T1[, T2]).
	SwitchesPerPlaneByTier []int `json:"switches_per_plane_by_tier"`
	SwitchesPerPlane       int   `json:"switches_per_plane"`
	Switches               int   `json:"switches"` // all planes
	// LinksByLevel counts links in all planes, parallel links included: index 0 host-T0,
	// 1 T0-T1, 2 T1-T2 (3-tier).
	LinksByLevel []int `json:"links_by_level"`
	Links        int   `json:"links"`
	// Optics is the number of transceivers: two per link, every link counted.
	Optics int `json:"optics"`
	// NICBandwidth is one host's bandwidth over all planes: Planes x HostLink.
	NICBandwidth sim.Rate `json:"nic_bandwidth_bps"`
	// BisectionBandwidth is half the smallest aggregate capacity, over all planes, of the
	// levels that traffic between hosts crosses in the built fabric: host links, T0 uplinks
	// (when there is more than one T0), T1 uplinks (when there is more than one pod). It is
	// the cut-based estimate: exact for the symmetric, full builds it is meant for.
	BisectionBandwidth sim.Rate `json:"-"`
	// BisectionGbps is BisectionBandwidth in Gb/s as a float64, exact where the bit/s figure
	// saturates; JSON carries this one.
	BisectionGbps float64 `json:"bisection_bandwidth_gbps"`
	// MaxSwitchHops is the diameter of the built fabric in switches: 3 for a 2-tier Clos, 5
	// for a 3-tier one (fewer when a partial build has one T0, or one pod).
	MaxSwitchHops int `json:"max_switch_hops"`
	// WorstCaseLatency is the unloaded one-way latency of one SizingPacketBytes packet on the
	// longest minimal path, store-and-forward: (MaxSwitchHops+1) links x HopLatency plus the
	// packet's serialisation on each link (two host links, the rest fabric links), in ps.
	WorstCaseLatency sim.Time `json:"worst_case_latency_ps"`
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
	s := Sizing{Hosts: d.Hosts}
	s.SwitchesPerPlaneByTier = []int{d.T0s, d.T1s}
	s.LinksByLevel = []int{d.Hosts * d.Planes, d.T0s * d.T0Up * d.Planes}
	if d.Tiers == 3 {
		s.SwitchesPerPlaneByTier = append(s.SwitchesPerPlaneByTier, d.T2s)
		s.LinksByLevel = append(s.LinksByLevel, d.T1s*d.T1Up*d.Planes)
	}
	s.SwitchesPerPlane = l.perPlane
	s.Switches = l.perPlane * d.Planes
	for _, n := range s.LinksByLevel {
		s.Links += n
	}
	s.Optics = 2 * s.Links
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
	return s
}

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
