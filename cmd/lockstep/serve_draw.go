package main

import (
	"fmt"
	"strings"

	"github.com/lockstepsim/lockstep/topo"
)

// Drawing limits: a tier of more switches (or hosts) than maxShown is drawn as maxShown of
// them, evenly spread over its indices, and labelled with its count; a torus as its z = 0
// face, at most maxFace x maxFace chips; a mesh as its first maxMesh nodes.
const (
	maxShown = 16
	maxFace  = 8
	maxMesh  = 24
)

// drawing is the compact model the page draws a fabric from: a few real elements of it, with
// the names the scenario language gives them (faults: link, switch, nic), and the counts of
// what is left out.
type drawing struct {
	// Style is how to draw it: "tiers" (hosts and switch tiers of plane 0, bottom up),
	// "torus" (one face of chips on a grid), "mesh" (nodes on a circle).
	Style  string     `json:"style"`
	Planes int        `json:"planes"` // planes in the fabric; the drawing shows plane 0
	Rows   []drawRow  `json:"rows"`   // tiers: hosts, T0, T1[, T2]
	Nodes  []drawNode `json:"nodes"`
	Links  []drawLink `json:"links"`
	// DomainGPUs is the scale-up domain size (hosts h and h' share one when h/DomainGPUs ==
	// h'/DomainGPUs), 0 when there are none; Domains how many.
	DomainGPUs int `json:"domain_gpus,omitempty"`
	Domains    int `json:"domains,omitempty"`
	// Dims, Twisted and OCS describe a torus; CubeSize its OCS cubes' edge (0 without OCS).
	Dims     [3]int `json:"dims,omitempty"`
	Twisted  bool   `json:"twisted,omitempty"`
	CubeSize int    `json:"cube_size,omitempty"`
	// Note says what the drawing leaves out.
	Note string `json:"note"`
}

// drawRow is one tier: its name ("hosts", "T0", ...), its size per plane, and how many of it
// are drawn.
type drawRow struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	Shown int    `json:"shown"`
}

// drawNode is one drawn element: its row and position (tiers), or grid position (torus:
// x, y; mesh: position on the circle in X), its index within its tier, and its names: the
// node's (switch: and hosts), and for a host its plane-0 NIC port (nic:).
type drawNode struct {
	Row   int    `json:"row"`
	Pos   int    `json:"pos"`
	X     int    `json:"x"`
	Y     int    `json:"y"`
	Index int    `json:"index"`
	Name  string `json:"name"`
	Port  string `json:"port,omitempty"`
	Host  bool   `json:"host"`
}

// drawLink joins two drawn nodes (indices into Nodes): Count parallel links, the first named
// Name (the lower end's port: "p0.t0-1.up3", "h17.p0", "x3y0z1.r.x+"); Wrap marks a torus
// wrap-around link.
type drawLink struct {
	A     int    `json:"a"`
	B     int    `json:"b"`
	Name  string `json:"name"`
	Count int    `json:"count"`
	Wrap  bool   `json:"wrap,omitempty"`
}

// spread returns n of the indices 0..count-1 evenly spread (all of them when count <= n).
func spread(count, n int) map[int]bool {
	out := map[int]bool{}
	if count <= n {
		for i := range count {
			out[i] = true
		}
		return out
	}
	for i := range n {
		out[i*count/n] = true
	}
	return out
}

// drawFabric builds the drawing of f (s is its sizing).
func drawFabric(f fabric, s topo.Sizing) *drawing {
	t := f.topo
	d := &drawing{Planes: s.Planes}
	if su := s.ScaleUp; su != nil {
		d.DomainGPUs, d.Domains = su.GPUsPerDomain, su.Domains
	}
	switch s.Kind {
	case "torus":
		drawTorus(d, t, s)
	case "mesh":
		drawMesh(d, t)
	default:
		g := 0
		if r, ok := f.config.(topo.Rail); ok {
			g = r.GPUsPerServer
		}
		drawTiers(d, t, s, g)
	}
	return d
}

// drawTiers draws plane 0 of a switched fabric: up to maxShown hosts and switches per tier,
// and the links between drawn ones.
// With railGPUs > 1 (a rail fabric's GPUs per server) hosts are drawn as whole servers.
func drawTiers(d *drawing, t topo.Topology, s topo.Sizing, railGPUs int) {
	d.Style = "tiers"
	counts := append([]int{s.Hosts}, s.SwitchesPerPlaneByTier...)
	shown := make([]map[int]bool, len(counts))
	for i, c := range counts {
		name := "hosts"
		if i > 0 {
			name = fmt.Sprintf("T%d", i-1)
		}
		shown[i] = spread(c, maxShown)
		if g := railGPUs; i == 0 && g > 1 && c > maxShown {
			// Whole servers, evenly spread: a server's hosts are one per rail.
			shown[i] = map[int]bool{}
			for srv := range spread(c/g, max(1, maxShown/g)) {
				for k := range g {
					shown[i][srv*g+k] = true
				}
			}
		}
		d.Rows = append(d.Rows, drawRow{Name: name, Count: c, Shown: len(shown[i])})
	}
	at := map[int]int{} // node index -> index in d.Nodes
	pos := make([]int, len(counts))
	for n := range t.NumNodes() {
		nd, _ := t.Node(n)
		row := nd.Tier + 1
		if row < 0 || row >= len(counts) || (nd.Kind == topo.KindSwitch && nd.Plane != 0) || !shown[row][nd.Index] {
			continue
		}
		dn := drawNode{Row: row, Pos: pos[row], Index: nd.Index, Name: t.NodeName(n), Host: nd.Kind == topo.KindHost}
		if dn.Host {
			dn.Port = t.PortName(n, 0)
		}
		pos[row]++
		at[n] = len(d.Nodes)
		d.Nodes = append(d.Nodes, dn)
	}
	linkBetween(d, t, at, func(a, b int) bool { return d.Nodes[a].Row < d.Nodes[b].Row })
	var left []string
	for _, r := range d.Rows {
		if r.Count > r.Shown {
			left = append(left, fmt.Sprintf("%d of %s %s", r.Shown, commas(r.Count), r.Name))
		}
	}
	d.Note = "plane 0"
	if s.Planes > 1 {
		d.Note = fmt.Sprintf("plane 0 of %d (each plane alike; host h has NIC port h.pP in plane P)", s.Planes)
	}
	if len(left) > 0 {
		d.Note += "; drawn: " + strings.Join(left, ", ") + ", evenly spread; links among drawn elements only"
	}
}

// linkBetween adds the links among drawn nodes (at: node index -> drawn index), each once,
// named after its lower end's port (lower(a, b): drawn node a is the lower end).
func linkBetween(d *drawing, t topo.Topology, at map[int]int, lower func(a, b int) bool) map[[2]int]int {
	seen := map[[2]int]int{} // (lower, upper) drawn -> index in d.Links
	for n, a := range at {
		nd, _ := t.Node(n)
		for p := range nd.NumPorts {
			peer, ok := t.Peer(n, p)
			if !ok {
				continue
			}
			b, drawn := at[peer.Node]
			if !drawn || !lower(a, b) {
				continue
			}
			key := [2]int{a, b}
			if i, ok := seen[key]; ok {
				d.Links[i].Count++
				continue
			}
			seen[key] = len(d.Links)
			d.Links = append(d.Links, drawLink{A: a, B: b, Name: t.PortName(n, p), Count: 1})
		}
	}
	// Map order is random: sort for a deterministic answer.
	sortLinks(d)
	return seen
}

// sortLinks orders d.Links by their ends, and each node's links by name.
func sortLinks(d *drawing) {
	ls := d.Links
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && (ls[j].A < ls[j-1].A || ls[j].A == ls[j-1].A && ls[j].B < ls[j-1].B); j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}

// drawTorus draws the z = 0 face of a torus, at most maxFace x maxFace chips, with the x and
// y links among them (wrap-around links marked).
func drawTorus(d *drawing, t topo.Topology, s topo.Sizing) {
	d.Style = "torus"
	d.Twisted = false
	if o := s.OCS; o != nil {
		d.CubeSize = o.CubeSize
	}
	at := map[int]int{}       // router node -> drawn index
	coord := map[int][3]int{} // drawn index -> x, y, z
	for c := range t.NumHosts() {
		var x, y, z int
		if _, err := fmt.Sscanf(t.NodeName(c), "x%dy%dz%d", &x, &y, &z); err != nil {
			continue
		}
		d.Dims = [3]int{max(d.Dims[0], x+1), max(d.Dims[1], y+1), max(d.Dims[2], z+1)}
		if z != 0 || x >= maxFace || y >= maxFace {
			continue
		}
		r, ok := t.Peer(c, 0)
		if !ok {
			continue
		}
		at[r.Node] = len(d.Nodes)
		coord[len(d.Nodes)] = [3]int{x, y, z}
		d.Nodes = append(d.Nodes, drawNode{X: x, Y: y, Index: c, Name: t.NodeName(c), Port: t.NodeName(r.Node), Host: true})
	}
	// The + link of each chip is named after its router's + port ("x3y0z0.r.x+").
	for rn, a := range at {
		nd, _ := t.Node(rn)
		for p := range nd.NumPorts {
			name := t.PortName(rn, p)
			if !strings.HasSuffix(name, "+") {
				continue
			}
			peer, ok := t.Peer(rn, p)
			if !ok {
				continue
			}
			b, drawn := at[peer.Node]
			if !drawn {
				continue
			}
			ca, cb := coord[a], coord[b]
			wrap := ca[0]-cb[0] > 1 || cb[0]-ca[0] > 1 || ca[1]-cb[1] > 1 || cb[1]-ca[1] > 1
			d.Links = append(d.Links, drawLink{A: a, B: b, Name: name, Count: 1, Wrap: wrap})
		}
	}
	sortLinks(d)
	d.Note = fmt.Sprintf("the z=0 face (%d of %d planes of chips along z)", 1, d.Dims[2])
	if d.Dims[0] > maxFace || d.Dims[1] > maxFace {
		d.Note += fmt.Sprintf(", its first %dx%d chips of %dx%d", min(d.Dims[0], maxFace), min(d.Dims[1], maxFace), d.Dims[0], d.Dims[1])
	}
	d.Note += "; z links not drawn; each chip's router is <chip>.r, its links <chip>.r.x+ ... .z-"
}

// drawMesh draws the first maxMesh nodes of a full mesh on a circle with the links among them.
func drawMesh(d *drawing, t topo.Topology) {
	d.Style = "mesh"
	n := t.NumHosts()
	at := map[int]int{}
	for h := range min(n, maxMesh) {
		r, ok := t.Peer(h, 0)
		if !ok {
			continue
		}
		at[r.Node] = len(d.Nodes)
		d.Nodes = append(d.Nodes, drawNode{X: h, Index: h, Name: t.NodeName(h), Port: t.NodeName(r.Node), Host: true})
	}
	linkBetween(d, t, at, func(a, b int) bool { return a < b })
	d.Note = fmt.Sprintf("%d nodes, every pair linked", n)
	if n > maxMesh {
		d.Note += fmt.Sprintf("; drawn: the first %d", maxMesh)
	}
	d.Note += "; each node's router is <node>.r, its link to node j <node>.r.hj"
}
