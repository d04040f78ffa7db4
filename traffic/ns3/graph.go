package ns3

import (
	"fmt"
	"strconv"

	"github.com/lockstepsim/lockstep/topo"
)

// GraphSpec converts t into the node and link lists of a topo.Graph (topo.NewGraph), the
// lockstep topology kind "graph": hosts first, host h being ns-3 node h, then the switches in
// ascending id order, named "sw<id>". Each host has one NIC port (one plane), "h<h>.p0"; a
// switch's ports are numbered in the order of its links in the file and named
// "sw<id>.port<p>". A switch's tier is its distance in switch hops from the nearest host
// (0 for a switch with hosts under it, as a ToR); a link's level is 0 for a host link and 1 +
// the lower tier of its two switches otherwise, and its A end is the lower-tier end (the
// earlier in the file on a tie). Link rates and delays are used as given; error rates are not
// part of the graph (see LossLinks). Params: HostLink the fastest host link, FabricLink the
// slowest switch-switch link (HostLink when there is none), HopLatency the largest delay.
//
// Errors: a host id not below every switch id (lockstep numbers hosts first, so hosts must
// be ns-3 nodes 0..H-1, as in HPCC's topologies), a host without exactly one link, a link
// between two hosts, a switch with no link or a node no host can reach.
func (t *Topology) GraphSpec() (topo.GraphSpec, error) {
	var spec topo.GraphSpec
	hosts := t.Nodes - len(t.Switches)
	if hosts < 1 {
		return spec, fmt.Errorf("topology has no host: all %d nodes are switches", t.Nodes)
	}
	for _, id := range t.Switches {
		if id < hosts {
			return spec, fmt.Errorf("switch id %d is below host id %d; lockstep numbers hosts first, so ns-3 hosts must be nodes 0 to %d and switches %d to %d (as in HPCC's topologies)", id, hosts-1, hosts-1, hosts, t.Nodes-1)
		}
	}
	deg := make([]int, t.Nodes)
	adj := make([][]int, t.Nodes)
	for _, l := range t.Links {
		if l.A < hosts && l.B < hosts {
			return spec, fmt.Errorf("line %d: link %d-%d joins two hosts; a host links to a switch", l.Line, l.A, l.B)
		}
		deg[l.A]++
		deg[l.B]++
		adj[l.A] = append(adj[l.A], l.B)
		adj[l.B] = append(adj[l.B], l.A)
	}
	for h := range hosts {
		if deg[h] != 1 {
			return spec, fmt.Errorf("host %d has %d links; a host has one NIC port (one link to a switch)", h, deg[h])
		}
	}
	// Switch tiers: breadth-first from the hosts' switches.
	tier := make([]int, t.Nodes)
	for i := range tier {
		tier[i] = -1
	}
	var queue []int
	for h := range hosts {
		if s := adj[h][0]; tier[s] < 0 {
			tier[s] = 0
			queue = append(queue, s)
		}
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, m := range adj[n] {
			if m >= hosts && tier[m] < 0 {
				tier[m] = tier[n] + 1
				queue = append(queue, m)
			}
		}
	}
	for id := hosts; id < t.Nodes; id++ {
		if tier[id] < 0 {
			return spec, fmt.Errorf("switch %d is not connected to any host", id)
		}
	}
	spec.Nodes = make([]topo.Node, 0, t.Nodes)
	for h := range hosts {
		spec.Nodes = append(spec.Nodes, topo.Node{Name: "h" + strconv.Itoa(h), Kind: topo.KindHost, Plane: -1, Tier: -1, Index: h, NumPorts: 1})
	}
	index := map[int]int{} // switches per tier so far
	for id := hosts; id < t.Nodes; id++ {
		spec.Nodes = append(spec.Nodes, topo.Node{Name: "sw" + strconv.Itoa(id), Kind: topo.KindSwitch, Plane: 0, Tier: tier[id], Index: index[tier[id]], NumPorts: deg[id]})
		index[tier[id]]++
	}
	next := make([]int, t.Nodes) // next free port per node
	spec.Links = make([]topo.Link, 0, len(t.Links))
	spec.PortNames = make([]string, 0, len(t.Links))
	p := topo.Params{Kind: "graph", Planes: 1}
	for _, l := range t.Links {
		a, b := l.A, l.B
		if b < hosts || (a >= hosts && tier[b] < tier[a]) {
			a, b = b, a
		}
		pa, pb := next[a], next[b]
		next[a]++
		next[b]++
		level, name := 0, spec.Nodes[a].Name+".p0"
		if a >= hosts {
			level, name = 1+tier[a], spec.Nodes[a].Name+".port"+strconv.Itoa(pa)
			if p.FabricLink == 0 || l.Rate < p.FabricLink {
				p.FabricLink = l.Rate
			}
		} else if l.Rate > p.HostLink {
			p.HostLink = l.Rate
		}
		p.HopLatency = max(p.HopLatency, l.Delay)
		spec.Links = append(spec.Links, topo.Link{Name: name, A: topo.Endpoint{Node: a, Port: pa}, B: topo.Endpoint{Node: b, Port: pb}, Level: level, Rate: l.Rate, Delay: l.Delay})
		spec.PortNames = append(spec.PortNames, spec.Nodes[b].Name+".port"+strconv.Itoa(pb))
	}
	if p.FabricLink == 0 {
		p.FabricLink = p.HostLink
	}
	spec.Params = p
	return spec, nil
}

// LossLink is a link with a non-zero error rate: the port name of its A end in the graph
// (GraphSpec) and the per-packet loss probability.
type LossLink struct {
	Port string
	Loss float64
	Line int
}

// LossLinks returns the links of t whose error_rate is not 0, named as GraphSpec names them
// (spec must be GraphSpec's result for t).
func (t *Topology) LossLinks(spec topo.GraphSpec) []LossLink {
	var out []LossLink
	for i, l := range t.Links {
		if l.ErrorRate != 0 {
			out = append(out, LossLink{Port: spec.Links[i].Name, Loss: l.ErrorRate, Line: l.Line})
		}
	}
	return out
}
