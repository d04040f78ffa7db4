package topo

import (
	"strconv"

	"github.com/lockstepsim/lockstep/sim"
)

// Kind says whether a node is a host or a switch.
type Kind uint8

// Node kinds.
const (
	KindHost Kind = iota
	KindSwitch
)

// String returns "host" or "switch".
func (k Kind) String() string {
	if k == KindHost {
		return "host"
	}
	return "switch"
}

// Node is one host or switch of a Layout. Its position in Layout.Nodes is its node index:
// hosts first (host h is node h), then for each plane its T0s, T1s and T2s in index order.
type Node struct {
	Name  string // "h17", "p3.t0-17", "p3.t1-5", "p3.t2-2"
	Kind  Kind   // host or switch
	Plane int    // switch plane; -1 for hosts, which have a port in every plane
	Tier  int    // 0 (T0), 1 (T1) or 2 (T2); -1 for hosts
	// Index is the host ID, or the switch's index within its tier and plane.
	Index int
	// NumPorts is the number of local ports: Planes for a host, Radix for a switch. In a
	// partial build some switch ports are unconnected (see Peer).
	NumPorts int
}

// Endpoint is one end of a link: a node index and a local port number on it.
type Endpoint struct {
	Node, Port int // node index, local port number
}

// Link is a full-duplex link. A is the lower end (host, or the lower-tier switch), B the
// upper end; the link is named after A's port.
type Link struct {
	Name  string   // A's port name: "h17.p3", "p3.t0-17.up5", "p3.t1-5.up2"
	A, B  Endpoint // lower end, upper end
	Plane int      // the plane, 0 for a link of a switchless chip
	// Level is 0 for host-T0 links, 1 for T0-T1, 2 for T1-T2.
	Level int
	Rate  sim.Rate // bits/s, each direction
	Delay sim.Time // HopLatency: propagation plus forwarding at the receiving switch
}

// SwitchNode returns the node index of switch (plane, tier, index), or -1 if there is no such
// switch.
func (l *Layout) SwitchNode(plane, tier, index int) int {
	d := &l.d
	if plane < 0 || plane >= d.Planes || index < 0 {
		return -1
	}
	base := d.Hosts + plane*l.perPlane
	switch tier {
	case 0:
		if index < d.T0s {
			return base + index
		}
	case 1:
		if index < d.T1s {
			return base + d.T0s + index
		}
	case 2:
		if index < d.T2s {
			return base + d.T0s + d.T1s + index
		}
	}
	return -1
}

// locate returns the plane, tier and index of node n, tier -1 for hosts; ok is false when n is
// out of range.
func (l *Layout) locate(n int) (plane, tier, index int, ok bool) {
	d := &l.d
	if n < 0 || n >= l.NumNodes() {
		return 0, 0, 0, false
	}
	if n < d.Hosts {
		return -1, -1, n, true
	}
	n -= d.Hosts
	plane, n = n/l.perPlane, n%l.perPlane
	switch {
	case n < d.T0s:
		return plane, 0, n, true
	case n < d.T0s+d.T1s:
		return plane, 1, n - d.T0s, true
	default:
		return plane, 2, n - d.T0s - d.T1s, true
	}
}

// Locate returns the plane, tier and index within its tier and plane of node n (tier and plane
// -1 and index the host ID for a host) without building the Node; ok is false when n is out of
// range.
func (l *Layout) Locate(n int) (plane, tier, index int, ok bool) { return l.locate(n) }

// Node returns node n; ok is false when n is out of range.
func (l *Layout) Node(n int) (Node, bool) {
	plane, tier, index, ok := l.locate(n)
	if !ok {
		return Node{}, false
	}
	if tier < 0 {
		return Node{Name: hostName(index), Kind: KindHost, Plane: -1, Tier: -1, Index: index, NumPorts: l.d.Planes}, true
	}
	return Node{Name: switchName(plane, tier, index), Kind: KindSwitch, Plane: plane, Tier: tier, Index: index, NumPorts: l.d.Radix}, true
}

// Nodes returns every node in node-index order (see Node).
func (l *Layout) Nodes() []Node {
	out := make([]Node, l.NumNodes())
	for i := range out {
		out[i], _ = l.Node(i)
	}
	return out
}

func hostName(h int) string { return "h" + strconv.Itoa(h) }

func switchName(plane, tier, index int) string {
	return "p" + strconv.Itoa(plane) + ".t" + strconv.Itoa(tier) + "-" + strconv.Itoa(index)
}

// NodeName returns the name of node n ("h17", "p3.t0-17"), or "" if n is out of range.
func (l *Layout) NodeName(n int) string {
	plane, tier, index, ok := l.locate(n)
	switch {
	case !ok:
		return ""
	case tier < 0:
		return hostName(index)
	}
	return switchName(plane, tier, index)
}

// PortName returns the name of local port p of node n: "h17.p3" (host NIC port for plane 3),
// "p3.t0-17.down5" or "p3.t0-17.up5" (up ports numbered from 0 after the down ports). It
// returns "" for a port that does not exist; unconnected ports of a partial build have names.
func (l *Layout) PortName(n, p int) string {
	plane, tier, index, ok := l.locate(n)
	if !ok || p < 0 {
		return ""
	}
	if tier < 0 {
		if p >= l.d.Planes {
			return ""
		}
		return hostName(index) + ".p" + strconv.Itoa(p)
	}
	if p >= l.d.Radix {
		return ""
	}
	down := l.downPorts(tier)
	if p < down {
		return switchName(plane, tier, index) + ".down" + strconv.Itoa(p)
	}
	return switchName(plane, tier, index) + ".up" + strconv.Itoa(p-down)
}

// downPorts returns the number of down ports of a switch in tier t.
func (l *Layout) downPorts(t int) int {
	switch {
	case t == 0:
		return l.d.T0Down
	case t == 1:
		return l.d.T1Down
	}
	return l.d.Radix
}

// Peer returns the far end of the link at local port p of node n. ok is false when the port
// does not exist or is unconnected (down ports of the last T0 beyond the last host, T1 down
// ports toward T0s and T2 down ports toward pods that a partial build leaves out).
func (l *Layout) Peer(n, p int) (Endpoint, bool) {
	plane, tier, index, ok := l.locate(n)
	if !ok || p < 0 {
		return Endpoint{}, false
	}
	d := &l.d
	switch tier {
	case -1: // host index, NIC port p = plane p -> T0 index/d0, down port index%d0
		if p >= d.Planes {
			break
		}
		return Endpoint{l.SwitchNode(p, 0, index/d.T0Down), index % d.T0Down}, true
	case 0:
		if p < d.T0Down { // host index*d0 + p, NIC port plane
			h := index*d.T0Down + p
			if h < d.Hosts {
				return Endpoint{h, plane}, true
			}
			break
		}
		if u := p - d.T0Down; u < d.T0Up { // T1 u/p0 of the pod, down port local*p0 + u%p0
			pod, local := index/d.T0PerPod, index%d.T0PerPod
			t1 := pod*d.T1PerPod + u/d.T0Parallel
			return Endpoint{l.SwitchNode(plane, 1, t1), local*d.T0Parallel + u%d.T0Parallel}, true
		}
	case 1:
		pod, j := index/d.T1PerPod, index%d.T1PerPod
		if p < d.T1Down { // T0 p/p0 of the pod, up port j*p0 + p%p0
			local := p / d.T0Parallel
			t0 := pod*d.T0PerPod + local
			if local < d.T0PerPod && t0 < d.T0s {
				return Endpoint{l.SwitchNode(plane, 0, t0), d.T0Down + j*d.T0Parallel + p%d.T0Parallel}, true
			}
			break
		}
		if v := p - d.T1Down; v < d.T1Up { // T2 v/p1 of core group j, down port pod*p1 + v%p1
			t2 := j*d.CoreGroup + v/d.T1Parallel
			return Endpoint{l.SwitchNode(plane, 2, t2), pod*d.T1Parallel + v%d.T1Parallel}, true
		}
	case 2:
		if p >= d.Radix {
			break
		}
		pod := p / d.T1Parallel // T1 j of pod p/p1, up port g*p1 + p%p1
		if pod < d.Pods {
			j, g := index/d.CoreGroup, index%d.CoreGroup
			return Endpoint{l.SwitchNode(plane, 1, pod*d.T1PerPod+j), d.T1Down + g*d.T1Parallel + p%d.T1Parallel}, true
		}
	}
	return Endpoint{}, false
}

// LinkOf returns the index in Links of the link at local port p of node n, or false when the
// port does not exist or is unconnected.
func (l *Layout) LinkOf(n, p int) (int, bool) {
	far, ok := l.Peer(n, p)
	if !ok {
		return 0, false
	}
	lo := Endpoint{n, p} // the lower end names the link
	_, tn, _, _ := l.locate(n)
	if _, tf, _, _ := l.locate(far.Node); tf < tn {
		lo = far
	}
	plane, tier, index, _ := l.locate(lo.Node)
	d := &l.d
	switch tier {
	case -1:
		return lo.Port*l.linksPerPlane + index, true
	case 0:
		return plane*l.linksPerPlane + d.Hosts + index*d.T0Up + lo.Port - d.T0Down, true
	default:
		return plane*l.linksPerPlane + d.Hosts + d.T0s*d.T0Up + index*d.T1Up + lo.Port - d.T1Down, true
	}
}

// Links returns every link, in this order: for each plane, host links (by host), then T0-T1
// links (by T0, then up port), then T1-T2 links (by T1, then up port). Link i of plane p is at
// index p x (links per plane) + i; LinkOf computes it from either end.
//
// Connecting the links in this order visits every node's ports in increasing local port
// order, so a builder that numbers ports by connection order reproduces the local port
// numbers, provided the node has no unconnected port below a connected one (true of every
// full build; see Peer for the gaps a partial build leaves).
func (l *Layout) Links() []Link {
	d := &l.d
	c := &l.cfg
	out := make([]Link, 0, l.NumLinks())
	for plane := 0; plane < d.Planes; plane++ {
		for h := 0; h < d.Hosts; h++ {
			far, _ := l.Peer(h, plane)
			out = append(out, Link{Name: l.PortName(h, plane), A: Endpoint{h, plane}, B: far, Plane: plane, Level: 0, Rate: c.HostLink, Delay: c.HopLatency})
		}
		for tier := 0; tier < d.Tiers-1; tier++ {
			n, down, up := d.T0s, d.T0Down, d.T0Up
			if tier == 1 {
				n, down, up = d.T1s, d.T1Down, d.T1Up
			}
			for i := 0; i < n; i++ {
				node := l.SwitchNode(plane, tier, i)
				for p := down; p < down+up; p++ {
					far, _ := l.Peer(node, p)
					out = append(out, Link{Name: l.PortName(node, p), A: Endpoint{node, p}, B: far, Plane: plane, Level: tier + 1, Rate: c.FabricLink, Delay: c.HopLatency})
				}
			}
		}
	}
	return out
}
