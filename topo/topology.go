package topo

import (
	"fmt"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// Topology is what the simulator needs from any fabric description: the nodes and links to
// instantiate, each switch's forwarding table, and the minimal source routes between hosts.
// *Layout (multi-plane Clos, and the k-ary fat-tree built on it) implements it; the other kinds
// (rail-optimised, torus, full mesh, or any explicit node and link lists) are a *Graph.
//
// Conventions every implementation keeps:
//   - Node indices: hosts first (host h is node h, 0 <= h < NumHosts), then switches.
//   - A host's local ports 0..Planes-1 are its NIC ports, port p in plane p.
//   - Links() lists each link once, A the lower end (the host end of a host link, Level 0).
//   - Path(src, dst, i) for i in [0, NumPaths(src, dst)): i % Planes is the plane (the
//     source NIC port); routes hold at most MaxHops switches, and a topology whose minimal
//     paths are longer reports NumPaths 0 for that pair (table routing still works).
type Topology interface {
	// Params returns the headline parameters every layer uses (kind, planes, link rates,
	// per-hop latency).
	Params() Params
	// NumHosts returns the number of hosts; they are nodes 0..NumHosts()-1.
	NumHosts() int
	// NumNodes returns the number of nodes, hosts and switches.
	NumNodes() int
	// NumLinks returns the number of full-duplex links.
	NumLinks() int
	// Node returns node n, or false when n is out of range.
	Node(n int) (Node, bool)
	// Nodes returns every node in index order (allocated per call).
	Nodes() []Node
	// NodeName returns node n's stable name ("h17", "p3.t0-17", "x2y0z1").
	NodeName(n int) string
	// PortName returns the stable name of local port p of node n ("h17.p3").
	PortName(n, p int) string
	// Links returns every link (allocated per call).
	Links() []Link
	// Peer returns the far end of local port p of node n, or false when the port is
	// unconnected or out of range.
	Peer(n, p int) (Endpoint, bool)
	// LinkOf returns the index in Links of the link at local port p of node n.
	LinkOf(n, p int) (int, bool)
	// Routes returns switch (or host) n's forwarding table: minimal paths, ECMP groups of
	// equal-cost egress ports. Errors: n out of range.
	Routes(n int) (RouteTable, error)
	// NumPaths returns the number of minimal source routes from host src to host dst over
	// all planes (0 when src == dst, a host is out of range, or the paths exceed MaxHops).
	NumPaths(src, dst int) int
	// Path returns minimal source route i of NumPaths(src, dst). Errors: i out of range,
	// bad hosts.
	Path(src, dst, i int) (Route, error)
	// LinkPath appends to buf[:0] the directed links of minimal path i from host src to host
	// dst and returns them with the path's one-way unloaded latency (the sum of the links'
	// delays, no serialisation). Directed link id 2k is link k of Links() from A to B, 2k+1
	// from B to A. There is no MaxHops limit: the flow-level engine follows paths of any
	// length. i is taken modulo the number of minimal paths (NumPaths when that is not 0), so
	// an entropy value can be passed as is; i % Planes is still the plane. Errors: src == dst,
	// a host out of range, i < 0, or no path between the hosts (a rail-only fabric across
	// rails).
	LinkPath(src, dst, i int, buf []int32) ([]int32, sim.Time, error)
	// Sizing returns the bill of materials and headline capacity.
	Sizing() Sizing
	// BlastRadius returns, for one failure of each kind of element (NIC port, link of each
	// level, switch of each tier, torus chip, OCS, scale-up link), the share of a host's or a
	// switch's bandwidth that it takes away and how many hosts or switches lose that share.
	BlastRadius() []Blast
}

// Params are the parameters of a topology that the transports and reports need, whatever its
// kind.
type Params struct {
	// Kind names the topology: "clos", "fat_tree", "rail", "torus", "mesh".
	Kind string
	// Planes is the number of NIC ports per host, each in its own plane (1..8).
	Planes int
	// HostLink is the rate of each host (NIC port) link, bits/s each direction.
	HostLink sim.Rate
	// FabricLink is the rate of the switch-switch links, bits/s (the slowest when they
	// differ; HostLink when there are none).
	FabricLink sim.Rate
	// HopLatency is the latency of one link, propagation plus forwarding at the receiving
	// node, in ps (the largest when links differ).
	HopLatency sim.Time

	// ScaleUpGPUs is the size of a scale-up (NVLink) domain: hosts h and h' share one when
	// h/ScaleUpGPUs == h'/ScaleUpGPUs. 0 means no scale-up domain. Scale-up traffic is not
	// in the packet fabric: the runner carries it on its own model at ScaleUpRate.
	ScaleUpGPUs int
	// ScaleUpRate is each GPU's scale-up bandwidth, bits/s per direction (NVLink4 on H100:
	// 450 GB/s = 3.6 Tb/s; NVLink5: 900 GB/s = 7.2 Tb/s). 0 when ScaleUpGPUs is 0.
	ScaleUpRate sim.Rate
	// ScaleUpLatency is the one-way latency of a scale-up transfer between two GPUs of a
	// domain, in ps. 0 when ScaleUpGPUs is 0.
	ScaleUpLatency sim.Time
}

// RoundTrip is the unloaded round trip over a path through hops switches: a dataWire-byte
// packet out over hops+1 links (the first and last at HostLink, the rest at FabricLink),
// store-and-forward, and an ackWire-byte answer back, each link adding HopLatency each way.
// It is the transports' base RTT [docs/protocols.md, "NSCC": base RTT = unloaded RTT of the
// longest path].
func (p Params) RoundTrip(hops, dataWire, ackWire int) sim.Time {
	links := hops + 1
	var rtt sim.Time
	for i := 0; i < links; i++ {
		r := p.FabricLink
		if i == 0 || i == links-1 {
			r = p.HostLink
		}
		rtt += 2*p.HopLatency + r.TxTime(int64(dataWire)) + r.TxTime(int64(ackWire))
	}
	return rtt
}

// Params returns the Clos's kind ("clos", or "fat_tree" for a FatTree), planes, link rates,
// hop latency and scale-up domain.
func (l *Layout) Params() Params {
	p := Params{Kind: l.kind(), Planes: l.cfg.Planes, HostLink: l.cfg.HostLink, FabricLink: l.cfg.FabricLink, HopLatency: l.cfg.HopLatency}
	l.cfg.ScaleUp.params(&p)
	return p
}

var _ Topology = (*Layout)(nil)

// BuildTopology instantiates t into net, which must be empty: every node in order (so fabric
// NodeID = topology node index and host h = node h), every link with its stable name at both
// ends and the topology's local port numbers, and every switch's forwarding table from
// Routes. Host links (Level 0) get opt.NICQueue at the host end and opt.LastHopQueue (or
// SwitchQueue) at the switch end; every other port gets SwitchQueue. Errors: a non-empty
// network, or a fabric error.
func BuildTopology(net *fabric.Network, t Topology, opt BuildOptions) error {
	if len(net.Nodes) != 0 {
		return fmt.Errorf("topo: build into a network that already has %d nodes", len(net.Nodes))
	}
	net.Reserve(t.NumNodes(), 2*t.NumLinks())
	for _, n := range t.Nodes() {
		kind := fabric.Switch
		if n.Kind == KindHost {
			kind = fabric.Host
		}
		if _, err := net.AddNode(n.Name, kind, n.Plane, n.Tier); err != nil {
			return err
		}
	}
	for _, k := range t.Links() {
		qa, qb := opt.SwitchQueue, opt.SwitchQueue
		if k.Level == 0 {
			qa = opt.NICQueue // A is the host end of a host link, B the switch's last-hop port
			if opt.LastHopQueue != nil {
				qb = *opt.LastHopQueue
			}
		}
		a := fabric.PortEnd{Node: fabric.NodeID(k.A.Node), Local: k.A.Port, Name: k.Name, Queue: qa}
		b := fabric.PortEnd{Node: fabric.NodeID(k.B.Node), Local: k.B.Port, Name: t.PortName(k.B.Node, k.B.Port), Queue: qb}
		if _, _, err := net.Connect(a, b, k.Rate, k.Delay); err != nil {
			return err
		}
	}
	for n := t.NumHosts(); n < t.NumNodes(); n++ {
		rt, err := t.Routes(n)
		if err != nil {
			return err
		}
		net.Nodes[n].Routes = rt
	}
	return nil
}
