package runner

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/topo"
)

// MaxTopologyListLinks bounds the links topology.json lists one by one: 131,072 links (about
// 140 bytes each with the nodes, so at most about 18 MB; the 8,192-GPU, 8-plane fabric of
// train-405b-8k is listed). A larger fabric (only the flow level and the closed forms run one)
// gets the counts and the per-tier summary only, with "listed": false; the report then draws it
// from the summary.
const MaxTopologyListLinks = 1 << 17

// topologyJSON is topology.json's top level (docs/outputs.md, "topology.json").
type topologyJSON struct {
	Kind     string         `json:"kind"`
	Planes   int            `json:"planes"`
	Hosts    int            `json:"hosts"`
	Switches int            `json:"switches"`
	NumNodes int            `json:"num_nodes"`
	NumLinks int            `json:"num_links"`
	Dims     []int          `json:"dims,omitempty"` // torus: k1, k2, k3
	Listed   bool           `json:"listed"`
	Tiers    []topologyTier `json:"tiers"`
	Levels   []topologyLvl  `json:"levels"`
	Nodes    []topologyNode `json:"nodes,omitempty"`
	Links    []topologyLink `json:"links,omitempty"`
}

// topologyTier counts the switches of one tier in one plane.
type topologyTier struct {
	Tier     int `json:"tier"`
	Plane    int `json:"plane"`
	Switches int `json:"switches"`
}

// topologyLvl counts the links of one level in one plane, with their rate.
type topologyLvl struct {
	Level    int     `json:"level"`
	Plane    int     `json:"plane"`
	Links    int     `json:"links"`
	RateGbps float64 `json:"rate_gbps"`
}

// topologyNode is one node of topology.json.
type topologyNode struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Tier   int    `json:"tier"`
	Plane  int    `json:"plane"`
	Coords []int  `json:"coords,omitempty"`
}

// topologyLink is one link of topology.json.
type topologyLink struct {
	Name     string  `json:"name"`
	A        string  `json:"a"`
	B        string  `json:"b"`
	BPort    string  `json:"b_port"`
	RateGbps float64 `json:"rate_gbps"`
	Level    int     `json:"level"`
	Plane    int     `json:"plane"`
}

// WriteTopologyJSON writes topology.json for the topology of sc (docs/outputs.md): its kind,
// planes, host, switch, node and link counts, a torus's dimensions, the switches per tier and
// plane and the links per level and plane, then, when the fabric has at most
// MaxTopologyListLinks links, every node (name, kind host or switch, tier, plane, a torus
// node's x, y, z) and every link (name, the two nodes, the upper end's port name, rate in
// Gb/s, level, plane) in the topology's order, one a line. Errors: the topology's (an
// unresolved scenario) or the writer's.
func WriteTopologyJSON(w io.Writer, sc *scenario.Scenario) error {
	t, err := sc.Topology.Describe()
	if err != nil {
		return err
	}
	var dims []int
	if sc.Topology.Torus != nil {
		d := sc.Topology.Torus.Dims
		dims = []int{d[0], d[1], d[2]}
	}
	return writeTopology(w, t, dims)
}

// writeTopology writes t as topology.json; dims are a torus's dimensions (nil otherwise),
// which give its nodes' coordinates.
func writeTopology(w io.Writer, t topo.Topology, dims []int) error {
	p := t.Params()
	out := topologyJSON{Kind: p.Kind, Planes: p.Planes, Hosts: t.NumHosts(), NumNodes: t.NumNodes(), NumLinks: t.NumLinks(), Dims: dims,
		Listed: t.NumLinks() <= MaxTopologyListLinks}
	out.Switches = out.NumNodes - out.Hosts
	sz := t.Sizing()
	for tier, n := range sz.SwitchesPerPlaneByTier {
		for pl := 0; pl < max(p.Planes, 1); pl++ {
			out.Tiers = append(out.Tiers, topologyTier{Tier: tier, Plane: pl, Switches: n})
		}
	}
	if len(sz.SwitchesPerPlaneByTier) == 0 && out.Switches > 0 { // torus and mesh routers
		out.Tiers = append(out.Tiers, topologyTier{Tier: 0, Plane: 0, Switches: out.Switches})
	}
	if out.Listed {
		nodes := t.Nodes()
		out.Nodes = make([]topologyNode, len(nodes))
		for i, n := range nodes {
			tn := topologyNode{Name: n.Name, Kind: n.Kind.String(), Tier: n.Tier, Plane: n.Plane}
			if len(dims) == 3 {
				c := i
				if c >= out.Hosts {
					c -= out.Hosts // router of chip c is node N + c
				}
				tn.Coords = []int{c % dims[0], c / dims[0] % dims[1], c / (dims[0] * dims[1])}
			}
			out.Nodes[i] = tn
		}
		links := t.Links()
		out.Links = make([]topologyLink, len(links))
		lv := map[[2]int]int{}
		for i, k := range links {
			out.Links[i] = topologyLink{Name: k.Name, A: nodes[k.A.Node].Name, B: nodes[k.B.Node].Name, BPort: t.PortName(k.B.Node, k.B.Port),
				RateGbps: k.Rate.Gbps(), Level: k.Level, Plane: k.Plane}
			key := [2]int{k.Level, k.Plane}
			j, ok := lv[key]
			if !ok {
				j = len(out.Levels)
				lv[key] = j
				out.Levels = append(out.Levels, topologyLvl{Level: k.Level, Plane: k.Plane, RateGbps: k.Rate.Gbps()})
			}
			out.Levels[j].Links++
		}
	} else {
		// Too many links to list: the sizing's counts per level, spread evenly over the planes.
		planes := max(p.Planes, 1)
		for lvl, n := range sz.LinksByLevel {
			rate := p.FabricLink
			if lvl == 0 {
				rate = p.HostLink
			}
			for pl := 0; pl < planes; pl++ {
				out.Levels = append(out.Levels, topologyLvl{Level: lvl, Plane: pl, Links: n / planes, RateGbps: rate.Gbps()})
			}
		}
	}
	return encodeTopology(w, &out)
}

// encodeTopology writes out as JSON with one node or link a line, so the file stays readable
// and diffable however large it is.
func encodeTopology(w io.Writer, out *topologyJSON) error {
	bw := bufio.NewWriter(w)
	nodes, links := out.Nodes, out.Links
	head := *out
	head.Nodes, head.Links = nil, nil
	b, err := json.Marshal(head)
	if err != nil {
		return err
	}
	bw.Write(b[:len(b)-1]) // without the closing brace
	for _, part := range []struct {
		key string
		n   int
		at  func(int) any
	}{
		{"nodes", len(nodes), func(i int) any { return &nodes[i] }},
		{"links", len(links), func(i int) any { return &links[i] }},
	} {
		if !out.Listed {
			break
		}
		fmt.Fprintf(bw, ",\n%q: [", part.key)
		for i := range part.n {
			b, err := json.Marshal(part.at(i))
			if err != nil {
				return err
			}
			if i > 0 {
				bw.WriteByte(',')
			}
			bw.WriteString("\n  ")
			bw.Write(b)
		}
		bw.WriteString("\n]")
	}
	bw.WriteString("}\n")
	return bw.Flush()
}
