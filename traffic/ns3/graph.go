package ns3

import (
	"fmt"
	"slices"
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
// Errors name t.File and, where one exists, the line and column of the offending link
// (*Error): a host id not below every switch id (lockstep numbers hosts first, so hosts must
// be ns-3 nodes 0..H-1, as in HPCC's topologies), a host without exactly one link, a link
// between two hosts, host links of different rates (lockstep's transports size runs, base
// RTTs and timeouts from one NIC rate per fabric), a switch with no link or a node no host
// can reach.
func (t *Topology) GraphSpec() (topo.GraphSpec, error) {
	var spec topo.GraphSpec
	at := func(line, col int, format string, a ...any) error {
		return &Error{File: t.File, Line: line, Col: col, Msg: fmt.Sprintf(format, a...)}
	}
	hosts := t.Nodes - len(t.Switches)
	if hosts < 1 {
		return spec, fmt.Errorf("%s: topology has no host: all %d nodes are switches", t.File, t.Nodes)
	}
	for i, id := range t.Switches {
		if id < hosts {
			ln, cl := t.switchPos(i)
			return spec, at(ln, cl, "switch id %d is below host id %d; lockstep numbers hosts first, so ns-3 hosts must be nodes 0 to %d and switches %d to %d (as in HPCC's topologies)", id, hosts-1, hosts-1, hosts, t.Nodes-1)
		}
	}
	deg := make([]int, t.Nodes)
	adj := make([][]int, t.Nodes)
	first := make([]int, t.Nodes) // each node's first link + 1
	for i, l := range t.Links {
		if l.A < hosts && l.B < hosts {
			return spec, at(l.Line, l.Col, "link %d-%d joins two hosts; a host links to a switch", l.A, l.B)
		}
		for _, n := range []int{l.A, l.B} {
			deg[n]++
			if n < hosts && deg[n] > 1 {
				f := t.Links[first[n]-1]
				return spec, at(l.Line, l.Col, "host %d has a second link (the first is on line %d); a host has one NIC port (one link to a switch)", n, f.Line)
			}
			if first[n] == 0 {
				first[n] = i + 1
			}
		}
		adj[l.A] = append(adj[l.A], l.B)
		adj[l.B] = append(adj[l.B], l.A)
	}
	for h := range hosts {
		if deg[h] == 0 {
			return spec, fmt.Errorf("%s: host %d has no link; a host has one NIC port (one link to a switch)", t.File, h)
		}
	}
	h0 := t.Links[first[0]-1]
	for h := 1; h < hosts; h++ {
		if l := t.Links[first[h]-1]; l.Rate != h0.Rate {
			return spec, at(l.Line, l.Col, "host links have different rates (h0 %s, h%d %s); lockstep's transports assume one NIC rate per fabric: give every host link the same rate", h0.RateText, h, l.RateText)
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
		if tier[id] >= 0 {
			continue
		}
		if first[id] == 0 {
			ln, cl := t.switchPos(slices.Index(t.Switches, id))
			return spec, at(ln, cl, "switch %d has no link; connect it or leave it out", id)
		}
		l := t.Links[first[id]-1]
		return spec, at(l.Line, l.Col, "switch %d is not connected to any host (its first link is here)", id)
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

// Components returns each node's connected component: comp[a] == comp[b] when some path of
// links joins nodes a and b. Components are numbered 0, 1, ... by their lowest node id.
func (t *Topology) Components() []int {
	adj := make([][]int, t.Nodes)
	for _, l := range t.Links {
		adj[l.A] = append(adj[l.A], l.B)
		adj[l.B] = append(adj[l.B], l.A)
	}
	comp := make([]int, t.Nodes)
	for i := range comp {
		comp[i] = -1
	}
	n := 0
	var stack []int
	for s := range t.Nodes {
		if comp[s] >= 0 {
			continue
		}
		comp[s] = n
		stack = append(stack[:0], s)
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, w := range adj[v] {
				if comp[w] < 0 {
					comp[w] = n
					stack = append(stack, w)
				}
			}
		}
		n++
	}
	return comp
}

// switchPos returns the position of the i-th switch id (1, 1 for one made in code).
func (t *Topology) switchPos(i int) (int, int) {
	if i < 0 || i >= len(t.SwitchLine) {
		return 1, 1
	}
	return t.SwitchLine[i], t.SwitchCol[i]
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
