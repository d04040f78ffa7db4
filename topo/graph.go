package topo

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
)

// GraphSpec describes a topology by explicit node and link lists, for NewGraph.
type GraphSpec struct {
	// Params are the headline parameters reported by Graph.Params. Planes is the number of
	// NIC ports of every host (1 to MaxPlanes).
	Params Params
	// Nodes lists hosts first: Nodes[h] for h < the number of hosts has Kind KindHost and
	// NumPorts == Params.Planes (port p is the NIC port in plane p); then the switches. A
	// node's local ports are 0..NumPorts-1 (at most 65,536); ports no link uses stay
	// unconnected. Names must be unique and non-empty.
	Nodes []Node
	// Links lists every full-duplex link once, A the lower end (the host end of a host link).
	// Name names A's port; Level, Rate (bits/s, > 0) and Delay (ps, >= 0) are used as given.
	Links []Link
	// PortNames, when not nil, names each link's B port, in the order of Links; a missing or
	// empty name gives "<node name>.port<p>".
	PortNames []string
	// SinglePath makes routing deterministic: each switch forwards a destination over its
	// lowest-numbered minimal egress port only, and every host pair has one path per plane.
	// With ports numbered by dimension (x+, x-, y+, ...) this is dimension-order routing.
	// False (the default) is minimal adaptive: every minimal egress in the ECMP group.
	SinglePath bool
	// Sizing and Blast, when set, are returned by Graph.Sizing and Graph.BlastRadius as they
	// are; otherwise the graph computes generic ones (see Graph.Sizing).
	Sizing *Sizing
	Blast  []Blast // see Sizing
}

// MaxPathsPerPair caps the number of minimal paths a Graph enumerates per host pair
// (NumPaths): path counts saturate there, and indices below it still decode to distinct
// minimal paths. 65,536 is the EV space of a 16-bit entropy field.
const MaxPathsPerPair = 65536

// Graph is a Topology built from explicit nodes and links: the rail-optimised, torus and
// full-mesh kinds, or any GraphSpec. It computes minimal-path ECMP forwarding tables and
// enumerates minimal paths by counting them in the shortest-path DAG toward the destination.
//
// Kinds build their node and link lists on first use, so Params, NumHosts, NumNodes,
// NumLinks, Sizing and BlastRadius of a large fabric cost nothing. Forwarding tables are
// computed for every switch on the first Routes call (one breadth-first search per
// destination host: O(hosts x (nodes + links)) time, the tables' own size in memory); paths
// from a per-destination search kept in a small cache. A Graph is safe for concurrent use.
type Graph struct {
	params            Params
	hosts, nodes, lks int
	singlePath        bool
	sizing            Sizing
	sizingFn          func(*Graph) Sizing // computes sizing on first use when not given
	sizingOnce        sync.Once
	blast             []Blast

	buildOnce sync.Once
	build     func() GraphSpec // produces the lists; nil once built
	st        *graphStruct

	tablesOnce sync.Once
	tables     []RouteTable // per node; hosts' entries unused

	mu    sync.Mutex
	cache map[string]*dstPaths // by destination attachment (see paths)
	fifo  []string             // cache keys in insertion order
	tor   *torusPaths          // closed-form paths of a regular torus, nil otherwise
}

// graphStruct is a Graph's node and link lists with a flat port index: node n's local port p
// is flat port portBase[n]+p.
type graphStruct struct {
	nodes    []Node
	links    []Link
	portBase []int32  // len nodes+1
	portNode []int32  // flat port -> its node
	peer     []int32  // flat port -> far flat port, -1 unconnected
	nbr      []int32  // flat port -> far node, -1 unconnected
	swBase   []int32  // node n's ports toward switches are swPort[swBase[n]:swBase[n+1]]
	swPort   []int32  // flat ports whose far node is a switch, node by node
	linkOf   []int32  // flat port -> link index, -1 unconnected
	dir      []uint8  // flat port -> 0 at the link's A end, 1 at its B end
	names    []string // flat port -> name
}

// NewGraph validates spec and returns its Graph. Errors: no hosts, planes out of range, a
// host after a switch or with NumPorts != Planes, a duplicate or empty node name, a link
// naming a node or port that does not exist or a port already connected, a non-positive rate
// or negative delay.
func NewGraph(spec GraphSpec) (*Graph, error) {
	hosts := 0
	for hosts < len(spec.Nodes) && spec.Nodes[hosts].Kind == KindHost {
		hosts++
	}
	g := &Graph{params: spec.Params, hosts: hosts, nodes: len(spec.Nodes), lks: len(spec.Links), singlePath: spec.SinglePath}
	st, err := indexSpec(spec, hosts)
	if err != nil {
		return nil, err
	}
	g.st = st
	g.buildOnce.Do(func() {})
	if spec.Sizing != nil {
		g.sizing = *spec.Sizing
		g.sizingOnce.Do(func() {})
	} else {
		g.sizingFn = genericSizing
	}
	g.blast = spec.Blast
	if g.blast == nil {
		g.blast = genericBlast(g)
	}
	return g, nil
}

// newLazyGraph returns a Graph of a validated kind whose lists build produces on first use.
func newLazyGraph(p Params, hosts, nodes, links int, single bool, sz Sizing, blast []Blast, build func() GraphSpec) *Graph {
	g := &Graph{params: p, hosts: hosts, nodes: nodes, lks: links, singlePath: single, sizing: sz, blast: blast, build: build}
	g.sizingOnce.Do(func() {})
	return g
}

// s returns the built structure, building it on first use.
func (g *Graph) s() *graphStruct {
	g.buildOnce.Do(func() {
		spec := g.build()
		st, err := indexSpec(spec, g.hosts)
		if err != nil { // a kind built an inconsistent list: a bug, never bad input
			panic("topo: " + g.params.Kind + ": " + err.Error())
		}
		g.st, g.build = st, nil
	})
	return g.st
}

// indexSpec validates spec and builds the flat port index.
func indexSpec(spec GraphSpec, hosts int) (*graphStruct, error) {
	p := spec.Params
	if hosts == 0 {
		return nil, errors.New("topo: graph: no hosts; list the hosts first in Nodes")
	}
	if p.Planes < 1 || p.Planes > MaxPlanes {
		return nil, fmt.Errorf("topo: graph: planes %d out of range; want 1 to %d", p.Planes, MaxPlanes)
	}
	if len(spec.Nodes) > math.MaxInt32/2 {
		return nil, fmt.Errorf("topo: graph: %d nodes; at most %d", len(spec.Nodes), math.MaxInt32/2)
	}
	st := &graphStruct{nodes: spec.Nodes, links: spec.Links, portBase: make([]int32, len(spec.Nodes)+1)}
	seen := make(map[string]int, len(spec.Nodes))
	total := 0
	for i, n := range spec.Nodes {
		switch {
		case i >= hosts && n.Kind == KindHost:
			return nil, fmt.Errorf("topo: graph: node %d (%q) is a host after a switch; list every host first", i, n.Name)
		case n.Kind == KindHost && n.NumPorts != p.Planes:
			return nil, fmt.Errorf("topo: graph: host %d (%q) has %d ports; every host has one per plane (%d)", i, n.Name, n.NumPorts, p.Planes)
		case n.NumPorts < 0 || n.NumPorts > maxPorts:
			return nil, fmt.Errorf("topo: graph: node %d (%q) has %d ports; allowed 0 to %d", i, n.Name, n.NumPorts, maxPorts)
		case n.Name == "":
			return nil, fmt.Errorf("topo: graph: node %d has no name", i)
		}
		if j, dup := seen[n.Name]; dup {
			return nil, fmt.Errorf("topo: graph: nodes %d and %d are both named %q", j, i, n.Name)
		}
		seen[n.Name] = i
		total += n.NumPorts
		if total > math.MaxInt32 {
			return nil, errors.New("topo: graph: more than 2^31 ports")
		}
		st.portBase[i+1] = int32(total)
	}
	st.portNode = make([]int32, total)
	st.peer = make([]int32, total)
	st.linkOf = make([]int32, total)
	st.dir = make([]uint8, total)
	st.names = make([]string, total)
	for n := range spec.Nodes {
		for fp := st.portBase[n]; fp < st.portBase[n+1]; fp++ {
			st.portNode[fp] = int32(n)
		}
	}
	for i := range st.peer {
		st.peer[i], st.linkOf[i] = -1, -1
	}
	for i, k := range spec.Links {
		if k.Rate <= 0 || k.Delay < 0 {
			return nil, fmt.Errorf("topo: graph: link %d (%q): rate %v, delay %v; want a positive rate and a delay >= 0", i, k.Name, k.Rate, k.Delay)
		}
		var fps [2]int32
		for e, end := range [2]Endpoint{k.A, k.B} {
			if end.Node < 0 || end.Node >= len(spec.Nodes) || end.Port < 0 || end.Port >= spec.Nodes[end.Node].NumPorts {
				return nil, fmt.Errorf("topo: graph: link %d (%q): end %+v is not a port of any node", i, k.Name, end)
			}
			fp := st.portBase[end.Node] + int32(end.Port)
			if st.linkOf[fp] >= 0 {
				return nil, fmt.Errorf("topo: graph: link %d (%q): port %d of %q is already connected by link %d", i, k.Name, end.Port, spec.Nodes[end.Node].Name, st.linkOf[fp])
			}
			st.linkOf[fp], st.dir[fp] = int32(i), uint8(e)
			fps[e] = fp
		}
		if k.A.Node == k.B.Node {
			return nil, fmt.Errorf("topo: graph: link %d (%q) joins node %q to itself", i, k.Name, spec.Nodes[k.A.Node].Name)
		}
		st.peer[fps[0]], st.peer[fps[1]] = fps[1], fps[0]
		st.names[fps[0]] = k.Name
		if i < len(spec.PortNames) {
			st.names[fps[1]] = spec.PortNames[i]
		}
	}
	st.nbr = make([]int32, total)
	for fp, far := range st.peer {
		st.nbr[fp] = -1
		if far >= 0 {
			st.nbr[fp] = st.portNode[far]
		}
	}
	st.swBase = make([]int32, len(spec.Nodes)+1)
	for n := range spec.Nodes {
		for fp := st.portBase[n]; fp < st.portBase[n+1]; fp++ {
			if st.nbr[fp] >= int32(hosts) {
				st.swPort = append(st.swPort, fp)
			}
		}
		st.swBase[n+1] = int32(len(st.swPort))
	}
	for fp, name := range st.names {
		if name == "" {
			n := st.portNode[fp]
			st.names[fp] = spec.Nodes[n].Name + ".port" + strconv.Itoa(fp-int(st.portBase[n]))
		}
	}
	return st, nil
}

// maxPorts is the most local ports a node may have: they travel as uint16 in source routes.
const maxPorts = 1 << 16

// Params returns the headline parameters.
func (g *Graph) Params() Params { return g.params }

// NumHosts returns the number of hosts; they are nodes 0..NumHosts()-1.
func (g *Graph) NumHosts() int { return g.hosts }

// NumNodes returns the number of nodes, hosts and switches (chip routers included).
func (g *Graph) NumNodes() int { return g.nodes }

// NumLinks returns the number of links, including a torus or mesh chip's link to its router.
func (g *Graph) NumLinks() int { return g.lks }

// Node returns node n, or false when n is out of range.
func (g *Graph) Node(n int) (Node, bool) {
	if n < 0 || n >= g.nodes {
		return Node{}, false
	}
	return g.s().nodes[n], true
}

// Nodes returns every node in index order (a copy).
func (g *Graph) Nodes() []Node { return append([]Node(nil), g.s().nodes...) }

// NodeName returns node n's name, or "" when n is out of range.
func (g *Graph) NodeName(n int) string {
	if n < 0 || n >= g.nodes {
		return ""
	}
	return g.s().nodes[n].Name
}

// PortName returns the name of local port p of node n, or "" when there is no such port.
func (g *Graph) PortName(n, p int) string {
	fp, ok := g.flat(n, p)
	if !ok {
		return ""
	}
	return g.st.names[fp]
}

// flat returns the flat index of local port p of node n.
func (g *Graph) flat(n, p int) (int32, bool) {
	if n < 0 || n >= g.nodes || p < 0 {
		return 0, false
	}
	st := g.s()
	fp := st.portBase[n] + int32(p)
	if p >= maxPorts || fp >= st.portBase[n+1] {
		return 0, false
	}
	return fp, true
}

// Links returns every link (a copy).
func (g *Graph) Links() []Link { return append([]Link(nil), g.s().links...) }

// Peer returns the far end of local port p of node n, or false when the port is unconnected
// or does not exist.
func (g *Graph) Peer(n, p int) (Endpoint, bool) {
	fp, ok := g.flat(n, p)
	if !ok || g.st.peer[fp] < 0 {
		return Endpoint{}, false
	}
	far := g.st.peer[fp]
	node := g.st.portNode[far]
	return Endpoint{int(node), int(far - g.st.portBase[node])}, true
}

// LinkOf returns the index in Links of the link at local port p of node n.
func (g *Graph) LinkOf(n, p int) (int, bool) {
	fp, ok := g.flat(n, p)
	if !ok || g.st.linkOf[fp] < 0 {
		return 0, false
	}
	return int(g.st.linkOf[fp]), true
}

// Sizing returns the bill of materials and headline capacity: the kind's own figures, or for
// a GraphSpec without Sizing generic ones: switches by Node.Tier (per plane: those of plane 0),
// links by Link.Level, every link optical, diameter and mean hops by a breadth-first search
// from every host, worst-case latency from Params, no bisection (0, with a note).
func (g *Graph) Sizing() Sizing {
	g.sizingOnce.Do(func() { g.sizing = g.sizingFn(g) })
	s := g.sizing
	s.SwitchesPerPlaneByTier = slices.Clone(s.SwitchesPerPlaneByTier)
	s.LinksByLevel = slices.Clone(s.LinksByLevel)
	s.LevelNames = slices.Clone(s.LevelNames)
	s.Notes = slices.Clone(s.Notes)
	if s.ScaleUp != nil {
		su := *s.ScaleUp
		s.ScaleUp = &su
	}
	if s.OCS != nil {
		o := *s.OCS
		s.OCS = &o
	}
	return s
}

// BlastRadius returns the blast-radius table of the kind (see each kind's BlastRadius), or for
// a generic GraphSpec one row per NIC port and per link level.
func (g *Graph) BlastRadius() []Blast { return append([]Blast(nil), g.blast...) }

var _ Topology = (*Graph)(nil)
