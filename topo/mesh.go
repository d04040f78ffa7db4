package topo

import (
	"errors"
	"strconv"

	"github.com/lockstepsim/lockstep/sim"
)

// MaxMeshNodes bounds Mesh.Nodes: a full mesh has Nodes x (Nodes-1) / 2 links.
const MaxMeshNodes = 1024

// Mesh configures a switchless full mesh: every node linked directly to every other (one
// tier, e.g. the 8 GPUs of an AMD MI300X platform joined by Infinity Fabric). Like a torus
// chip, each node is a host with one NIC port joined by an internal link (HostLink, latency
// 0) to its own router, which carries the mesh links (see the package documentation).
type Mesh struct {
	// Nodes is the number of nodes, 2 to MaxMeshNodes. Required.
	Nodes int `yaml:"nodes" json:"nodes"`
	// LinkRate is each mesh link's rate, bits/s each direction. Required.
	LinkRate sim.Rate `yaml:"link_rate" json:"link_rate"`
	// HostLink is the internal link's rate. 0 means the sum of the node's mesh links,
	// PortsPerNode x LinkRate.
	HostLink sim.Rate `yaml:"host_link" json:"host_link"`
	// HopLatency is each mesh link's latency. 0 means DefaultHopLatency.
	HopLatency sim.Time `yaml:"hop_latency" json:"hop_latency"`
	// PortsPerNode is each node's number of mesh ports, a multiple of Nodes-1: it gives
	// PortsPerNode/(Nodes-1) parallel links between every pair. 0 means Nodes-1.
	PortsPerNode int `yaml:"ports_per_node" json:"ports_per_node"`
}

// Kind returns "mesh".
func (m Mesh) Kind() string { return "mesh" }

// WithDefaults returns a copy of m with PortsPerNode, HostLink and HopLatency written out.
func (m Mesh) WithDefaults() Mesh {
	if m.PortsPerNode == 0 && m.Nodes > 1 {
		m.PortsPerNode = m.Nodes - 1
	}
	if m.HostLink == 0 {
		m.HostLink = rateMul(m.LinkRate, max(m.PortsPerNode, 0))
	}
	if m.HopLatency == 0 {
		m.HopLatency = DefaultHopLatency
	}
	return m
}

// Validate reports whether m describes a buildable mesh: nil, or one *FieldError per problem
// joined with errors.Join.
func (m Mesh) Validate() error { return errors.Join(m.WithDefaults().check()...) }

func (m Mesh) check() []error {
	var errs []error
	if m.Nodes < 2 || m.Nodes > MaxMeshNodes {
		errs = append(errs, fieldErr("nodes", "%d is out of range; want 2 to %d", m.Nodes, MaxMeshNodes))
	} else if m.PortsPerNode < m.Nodes-1 || m.PortsPerNode%(m.Nodes-1) != 0 || m.PortsPerNode > MaxRadix {
		errs = append(errs, fieldErr("ports_per_node", "%d is not a multiple of nodes-1 = %d up to %d; want 0 (one link per pair) or k x %d for k parallel links", m.PortsPerNode, m.Nodes-1, MaxRadix, m.Nodes-1))
	}
	if m.LinkRate <= 0 {
		errs = append(errs, fieldErr("link_rate", "%v is not positive; want each mesh link's rate, e.g. \"400Gbps\"", m.LinkRate))
	}
	if m.HostLink < 0 {
		errs = append(errs, fieldErr("host_link", "%v is negative; want a positive rate, or 0 for ports_per_node x link_rate", m.HostLink))
	}
	if m.HopLatency < 0 || m.HopLatency > MaxHopLatency {
		errs = append(errs, fieldErr("hop_latency", "%v is out of range; want 0 (default %v) to %v", m.HopLatency, DefaultHopLatency, MaxHopLatency))
	}
	return errs
}

// Topology validates m and returns its Graph (see Mesh.Graph).
func (m Mesh) Topology() (Topology, error) { return asTopology(m.Graph()) }

// Graph validates m and returns the mesh as a Graph. Node order: hosts "h0".."h<N-1>", then
// their routers "h0.r".. (router of node i is node N+i). Router ports: 0 "h3.r.host", then
// for each other node j in order, parallel link q: port 1 + rank(j) x par + q named
// "h3.r.h7" (q > 0: "h3.r.h7.q"), rank(j) = j for j < i, else j-1. Links: host links first
// (link i), then for i < j each parallel link once, A at node i.
func (m Mesh) Graph() (*Graph, error) {
	m = m.WithDefaults()
	if errs := m.check(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	n, par := m.Nodes, m.PortsPerNode/(m.Nodes-1)
	p := Params{Kind: "mesh", Planes: 1, HostLink: m.HostLink, FabricLink: m.LinkRate, HopLatency: m.HopLatency}
	meshLinks := n * (n - 1) / 2 * par
	port := func(i, j, q int) int {
		rank := j
		if j > i {
			rank = j - 1
		}
		return 1 + rank*par + q
	}
	portName := func(i, j, q int) string {
		s := hostName(i) + ".r." + hostName(j)
		if q > 0 {
			s += "." + strconv.Itoa(q)
		}
		return s
	}
	build := func() GraphSpec {
		spec := GraphSpec{Params: p, Nodes: make([]Node, 0, 2*n), Links: make([]Link, 0, n+meshLinks), PortNames: make([]string, 0, n+meshLinks)}
		for i := range n {
			spec.Nodes = append(spec.Nodes, Node{Name: hostName(i), Kind: KindHost, Plane: -1, Tier: -1, Index: i, NumPorts: 1})
		}
		for i := range n {
			spec.Nodes = append(spec.Nodes, Node{Name: hostName(i) + ".r", Kind: KindSwitch, Plane: 0, Tier: 0, Index: i, NumPorts: 1 + m.PortsPerNode})
		}
		for i := range n {
			spec.Links = append(spec.Links, Link{Name: hostName(i) + ".p0", A: Endpoint{i, 0}, B: Endpoint{n + i, 0}, Level: 0, Rate: m.HostLink})
			spec.PortNames = append(spec.PortNames, hostName(i)+".r.host")
		}
		for i := range n {
			for j := i + 1; j < n; j++ {
				for q := range par {
					spec.Links = append(spec.Links, Link{Name: portName(i, j, q), A: Endpoint{n + i, port(i, j, q)}, B: Endpoint{n + j, port(j, i, q)},
						Level: 1, Rate: m.LinkRate, Delay: m.HopLatency})
					spec.PortNames = append(spec.PortNames, portName(j, i, q))
				}
			}
		}
		return spec
	}
	s := Sizing{Kind: "mesh", Hosts: n, GPUs: n, Planes: 1, SwitchesPerPlaneByTier: []int{}, Routers: n,
		LinksByLevel: []int{meshLinks}, LevelNames: []string{"node-node"}, Links: meshLinks, NICBandwidth: m.HostLink,
		DiameterHops: 1, MeanHops: float64(n-1) / float64(n), MaxSwitchHops: 2}
	s.BisectionLinks = n / 2 * (n - n/2) * par
	s.BisectionBandwidth = rateMul(m.LinkRate, s.BisectionLinks)
	s.BisectionGbps = float64(s.BisectionLinks) * m.LinkRate.Gbps()
	s.WorstCaseLatency = timeAdd(timeAdd(m.HopLatency, m.LinkRate.TxTime(SizingPacketBytes)), timeMul(m.HostLink.TxTime(SizingPacketBytes), 2))
	s.Notes = []string{"mesh links are counted electrical (no optics)"}
	blast := []Blast{
		{Element: BlastMeshLink, Lost: "node mesh bandwidth", Share: 1 / float64(m.PortsPerNode), Affected: 2, AffectedKind: "nodes"},
		{Element: BlastMeshNode, Lost: "node mesh bandwidth", Share: float64(par) / float64(m.PortsPerNode), Affected: n - 1, AffectedKind: "nodes",
			Note: "every other node loses its direct link(s) to it; two-hop detours are not minimal paths"},
	}
	return newLazyGraph(p, n, 2*n, n+meshLinks, false, s, blast, build), nil
}

// Size validates m and returns its Sizing.
func (m Mesh) Size() (Sizing, error) {
	g, err := m.Graph()
	if err != nil {
		return Sizing{}, err
	}
	return g.Sizing(), nil
}
