package topo

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// smallKinds are the small topologies of every Graph kind the structural tests walk.
func smallKinds(t testing.TB) []struct {
	name string
	topo Topology
} {
	t.Helper()
	g := 100 * sim.Gbps
	specs := []struct {
		name string
		spec Spec
	}{
		{"rail 8x4 r8 2 planes", Rail{Servers: 8, GPUsPerServer: 4, Planes: 2, Radix: 8, HostLink: g}},
		{"rail 5x2 r6 partial", Rail{Servers: 5, GPUsPerServer: 2, Radix: 6, HostLink: g, FabricLink: 2 * g}},
		{"rail-only 6x2 r4 leaf-spine", Rail{Servers: 6, GPUsPerServer: 2, Radix: 4, HostLink: g, RailOnly: true}},
		{"rail-only 4x2 r8 one switch", Rail{Servers: 4, GPUsPerServer: 2, Radix: 8, HostLink: g, RailOnly: true}},
		{"mesh 5", Mesh{Nodes: 5, LinkRate: g}},
		{"mesh 4 x2 parallel", Mesh{Nodes: 4, LinkRate: g, PortsPerNode: 6}},
		{"torus 3x4x5", Torus{Dims: TorusDims{3, 4, 5}, LinkRate: g}},
		{"torus 4x4x4 dor", Torus{Dims: TorusDims{4, 4, 4}, LinkRate: g, Routing: "dor"}},
		{"torus 2x2x3", Torus{Dims: TorusDims{2, 2, 3}, LinkRate: g}},
		{"twisted 4x4x8", Torus{Dims: TorusDims{4, 4, 8}, LinkRate: g, Twisted: true}},
		{"twisted 2x4x4 dor", Torus{Dims: TorusDims{2, 4, 4}, LinkRate: g, Twisted: true, Routing: "dor"}},
		{"torus 4x4x8 ocs", Torus{Dims: TorusDims{4, 4, 8}, LinkRate: g, OCS: true, SpareCubes: 1}},
		{"fat-tree k=4", FatTree{K: 4, Planes: 2, HostLink: g}},
	}
	var out []struct {
		name string
		topo Topology
	}
	for _, s := range specs {
		tp, err := s.spec.Topology()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		out = append(out, struct {
			name string
			topo Topology
		}{s.name, tp})
	}
	out = append(out, struct {
		name string
		topo Topology
	}{"generic ring", ringGraph(t)})
	return out
}

// ringGraph is a hand-made GraphSpec: 4 switches in a ring, 2 single-plane hosts on each.
func ringGraph(t testing.TB) *Graph {
	t.Helper()
	spec := GraphSpec{Params: Params{Kind: "ring", Planes: 1, HostLink: 100 * sim.Gbps, FabricLink: 100 * sim.Gbps, HopLatency: sim.Microsecond}}
	for h := range 8 {
		spec.Nodes = append(spec.Nodes, Node{Name: hostName(h), Kind: KindHost, Plane: -1, Tier: -1, Index: h, NumPorts: 1})
	}
	for s := range 4 {
		spec.Nodes = append(spec.Nodes, Node{Name: fmt.Sprintf("s%d", s), Kind: KindSwitch, Tier: 0, Index: s, NumPorts: 4})
	}
	for h := range 8 {
		spec.Links = append(spec.Links, Link{Name: hostName(h) + ".p0", A: Endpoint{h, 0}, B: Endpoint{8 + h/2, h % 2}, Rate: 100 * sim.Gbps, Delay: sim.Microsecond})
	}
	for s := range 4 {
		spec.Links = append(spec.Links, Link{Name: fmt.Sprintf("s%d.cw", s), A: Endpoint{8 + s, 2}, B: Endpoint{8 + (s+1)%4, 3}, Level: 1, Rate: 100 * sim.Gbps, Delay: sim.Microsecond})
	}
	g, err := NewGraph(spec)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// naive is the plain reference the path tests compare against: the wiring as a map built
// from Links alone, and distances by breadth-first search over it.
type naive struct {
	t     Topology
	wires map[Endpoint]Endpoint
	ports [][]int // connected local ports per node
}

func newNaive(t Topology) *naive {
	n := &naive{t: t, wires: map[Endpoint]Endpoint{}, ports: make([][]int, t.NumNodes())}
	for _, k := range t.Links() {
		n.wires[k.A], n.wires[k.B] = k.B, k.A
		n.ports[k.A.Node] = append(n.ports[k.A.Node], k.A.Port)
		n.ports[k.B.Node] = append(n.ports[k.B.Node], k.B.Port)
	}
	return n
}

// dist returns every node's distance to host dst, not passing through other hosts.
func (n *naive) dist(dst int) map[int]int {
	d := map[int]int{dst: 0}
	q := []int{dst}
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		if x < n.t.NumHosts() && x != dst {
			continue
		}
		for _, p := range n.ports[x] {
			y := n.wires[Endpoint{x, p}].Node
			if _, ok := d[y]; !ok {
				d[y] = d[x] + 1
				q = append(q, y)
			}
		}
	}
	return d
}

// countPaths counts, by depth-first enumeration, the paths from node x to host dst that get
// one hop closer at every step and pass only through switches.
func (n *naive) countPaths(x, dst int, d map[int]int) int {
	if x == dst {
		return 1
	}
	c := 0
	for _, p := range n.ports[x] {
		y := n.wires[Endpoint{x, p}].Node
		if dy, ok := d[y]; ok && dy == d[x]-1 && (y >= n.t.NumHosts() || y == dst) {
			c += n.countPaths(y, dst, d)
		}
	}
	return c
}

// pairsOf returns every ordered pair of distinct hosts when there are few, else n random ones.
func pairsOf(hosts int, rng *rand.Rand, n int) [][2]int {
	var out [][2]int
	if hosts*(hosts-1) <= n {
		for s := range hosts {
			for d := range hosts {
				if s != d {
					out = append(out, [2]int{s, d})
				}
			}
		}
		return out
	}
	for len(out) < n {
		if s, d := rng.IntN(hosts), rng.IntN(hosts); s != d {
			out = append(out, [2]int{s, d})
		}
	}
	return out
}

// TestGraphPaths checks path enumeration against the naive reference on every small kind:
// NumPaths = Planes x the brute-force count of minimal paths (the smallest over planes); every
// path is distinct, minimal, in its plane, and following Peer over its ports from src reaches
// dst; LinkPath gives the same links, each in the direction travelled, and their delays.
func TestGraphPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range smallKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			tp, nv := k.topo, newNaive(k.topo)
			planes := tp.Params().Planes
			links := tp.Links()
			dists := map[int]map[int]int{}
			for _, pr := range pairsOf(tp.NumHosts(), rng, 400) {
				src, dst := pr[0], pr[1]
				d, ok := dists[dst]
				if !ok {
					d = nv.dist(dst)
					dists[dst] = d
				}
				want, longest := -1, 0
				for p := range planes {
					first := nv.wires[Endpoint{src, p}].Node
					c := 0
					if _, ok := d[first]; ok {
						c = nv.countPaths(first, dst, d)
						longest = max(longest, d[first])
					}
					if want < 0 || c < want {
						want = c
					}
				}
				if strings.Contains(k.name, "dor") {
					want = min(want, 1)
				}
				count := planes * want
				got := tp.NumPaths(src, dst)
				if longest > MaxHops && got != 0 || longest <= MaxHops && got != count {
					t.Fatalf("NumPaths(%d, %d) = %d; brute force %d x %d planes, %d switches", src, dst, got, want, planes, longest)
				}
				seen := map[string]bool{}
				for i := range count {
					lp, llat, err := tp.LinkPath(src, dst, i+count*7, nil) // modulo the count
					if err != nil {
						t.Fatal(err)
					}
					if len(lp) != d[src] {
						t.Fatalf("LinkPath(%d, %d, %d) has %d links; the distance is %d", src, dst, i, len(lp), d[src])
					}
					if got == 0 {
						continue
					}
					r, err := tp.Path(src, dst, i)
					if err != nil {
						t.Fatal(err)
					}
					if int(r.Plane) != i%planes {
						t.Fatalf("path %d: plane %d", i, r.Plane)
					}
					key := fmt.Sprint(r.Plane, r.Ports())
					if seen[key] {
						t.Fatalf("path %d of %d -> %d repeats %s", i, src, dst, key)
					}
					seen[key] = true
					at := Endpoint{src, int(r.Plane)}
					var walked []int32
					var lat sim.Time
					for h := 0; ; h++ {
						far, ok := tp.Peer(at.Node, at.Port)
						if !ok {
							t.Fatalf("path %d: hop %d: port %+v unconnected", i, h, at)
						}
						li, _ := tp.LinkOf(at.Node, at.Port)
						dir := int32(0)
						if links[li].A != at {
							dir = 1
						}
						walked = append(walked, 2*int32(li)+dir)
						lat += links[li].Delay
						if h == int(r.Len) {
							if far.Node != dst {
								t.Fatalf("path %d of %d -> %d ends at %d", i, src, dst, far.Node)
							}
							break
						}
						if d[far.Node] != int(r.Len)-h {
							t.Fatalf("path %d of %d -> %d: hop %d at node %d, %d from dst; not minimal", i, src, dst, h, far.Node, d[far.Node])
						}
						at = Endpoint{far.Node, int(r.Hops[h])}
					}
					if fmt.Sprint(lp) != fmt.Sprint(walked) || llat != lat {
						t.Fatalf("LinkPath(%d, %d, %d) = %v, %v; walked %v, %v", src, dst, i, lp, llat, walked, lat)
					}
				}
				if count == 0 {
					if _, _, err := tp.LinkPath(src, dst, 0, nil); err == nil {
						t.Errorf("LinkPath(%d, %d) with no path: no error", src, dst)
					}
				}
			}
		})
	}
}

// TestGraphRoutesDeliver walks the forwarding tables of every small kind for every pair and
// plane, following every member of every ECMP group: each step is one hop closer to the
// destination (naive distances), and every branch ends there.
func TestGraphRoutesDeliver(t *testing.T) {
	for _, k := range smallKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			tp, nv := k.topo, newNaive(k.topo)
			hosts := tp.NumHosts()
			tables := make([]RouteTable, tp.NumNodes())
			for n := range tables {
				var err error
				if tables[n], err = tp.Routes(n); err != nil {
					t.Fatal(err)
				}
			}
			single := tp.Params().Kind == "torus" && strings.Contains(k.name, "dor")
			for dst := range hosts {
				d := nv.dist(dst)
				for src := range hosts {
					if src == dst {
						continue
					}
					for p := range tp.Params().Planes {
						first := nv.wires[Endpoint{src, p}].Node
						if _, ok := d[first]; !ok {
							if tp.NumPaths(src, dst) != 0 {
								t.Fatalf("%d -> %d: unreachable but NumPaths %d", src, dst, tp.NumPaths(src, dst))
							}
							continue
						}
						front := map[int]bool{first: true}
						for steps := 0; len(front) > 0; steps++ {
							if steps > len(d) {
								t.Fatalf("%d -> %d plane %d: tables loop", src, dst, p)
							}
							next := map[int]bool{}
							for x := range front {
								if x == dst {
									continue
								}
								grp := tables[x].Lookup(int32(dst))
								if len(grp) == 0 || single && len(grp) != 1 {
									t.Fatalf("%d -> %d: switch %s has group %v", src, dst, tp.NodeName(x), grp)
								}
								for _, port := range grp {
									y := nv.wires[Endpoint{x, int(port)}].Node
									if d[y] != d[x]-1 {
										t.Fatalf("%d -> %d: %s port %d leads to %s, %d hops away (from %d)", src, dst, tp.NodeName(x), port, tp.NodeName(y), d[y], d[x])
									}
									next[y] = true
								}
							}
							front = next
						}
					}
				}
			}
		})
	}
}

// TestBuildTopologyKinds builds every small kind into a fabric (ports numbered as the
// topology says, tables installed), sends a packet between every pair by ECMP on every
// plane, runs, and checks that all arrive (rail-only across rails: dropped as no_route) and
// the conservation audit holds.
func TestBuildTopologyKinds(t *testing.T) {
	for _, k := range smallKinds(t) {
		t.Run(k.name, func(t *testing.T) {
			tp := k.topo
			s := sim.New(1)
			net := fabric.New(s)
			if err := BuildTopology(net, tp, BuildOptions{}); err != nil {
				t.Fatal(err)
			}
			if len(net.Nodes) != tp.NumNodes() || len(net.Ports) != 2*tp.NumLinks() {
				t.Fatalf("network has %d nodes, %d ports; topology %d nodes, %d links", len(net.Nodes), len(net.Ports), tp.NumNodes(), tp.NumLinks())
			}
			for n := range net.Nodes {
				for p, id := range net.Nodes[n].Ports {
					if id >= 0 && net.Ports[id].Name != tp.PortName(n, p) {
						t.Fatalf("node %d port %d is %q; topology names it %q", n, p, net.Ports[id].Name, tp.PortName(n, p))
					}
				}
			}
			got := 0
			net.SetReceiver(fabric.ProtoRaw, func(now sim.Time, p *fabric.Packet) { got++ })
			want := 0
			hosts := tp.NumHosts()
			for src := range hosts {
				for dst := range hosts {
					for pl := range tp.Params().Planes {
						if src == dst {
							continue
						}
						if _, _, err := tp.LinkPath(src, dst, 0, nil); err == nil {
							want++
						}
						p := net.NewPacket()
						p.Size, p.Dst, p.Entropy = 1000, int32(dst), uint32(src*7+dst)
						if err := net.Send(0, int32(src), pl, p); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if err := s.Run(sim.Second); err != nil {
				t.Fatal(err)
			}
			if got != want || net.C.DeliveredWhole != int64(want) {
				t.Errorf("delivered %d (counted %d); want %d; drops %v", got, net.C.DeliveredWhole, want, net.C.Dropped)
			}
			if err := net.Audit(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestNewGraphErrors: a bad GraphSpec is an error naming the problem.
func TestNewGraphErrors(t *testing.T) {
	host := Node{Name: "h0", Kind: KindHost, NumPorts: 1}
	sw := Node{Name: "s0", Kind: KindSwitch, NumPorts: 2}
	p := Params{Kind: "x", Planes: 1}
	lk := Link{A: Endpoint{0, 0}, B: Endpoint{1, 0}, Rate: sim.Gbps}
	tests := []struct {
		name string
		spec GraphSpec
		want string
	}{
		{"no hosts", GraphSpec{Params: p, Nodes: []Node{sw}}, "no hosts"},
		{"planes", GraphSpec{Params: Params{Planes: 0}, Nodes: []Node{host}}, "planes"},
		{"host after switch", GraphSpec{Params: p, Nodes: []Node{host, sw, {Name: "h1", Kind: KindHost, NumPorts: 1}}}, "after a switch"},
		{"host ports", GraphSpec{Params: p, Nodes: []Node{{Name: "h0", Kind: KindHost, NumPorts: 2}}}, "one per plane"},
		{"duplicate name", GraphSpec{Params: p, Nodes: []Node{host, {Name: "h0", Kind: KindSwitch}}}, "both named"},
		{"bad port", GraphSpec{Params: p, Nodes: []Node{host, sw}, Links: []Link{{A: Endpoint{0, 0}, B: Endpoint{1, 5}, Rate: 1}}}, "not a port"},
		{"twice", GraphSpec{Params: p, Nodes: []Node{host, sw}, Links: []Link{lk, lk}}, "already connected"},
		{"rate", GraphSpec{Params: p, Nodes: []Node{host, sw}, Links: []Link{{A: Endpoint{0, 0}, B: Endpoint{1, 0}}}}, "positive rate"},
		{"self", GraphSpec{Params: p, Nodes: []Node{host, sw}, Links: []Link{{A: Endpoint{1, 0}, B: Endpoint{1, 1}, Rate: 1}}}, "to itself"},
	}
	for _, tt := range tests {
		if _, err := NewGraph(tt.spec); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v; want one containing %q", tt.name, err, tt.want)
		}
	}
}

// TestGraphGenericSizing: a GraphSpec without sizing gets a breadth-first one; on the ring,
// hosts two switches apart are 2 fabric hops away.
func TestGraphGenericSizing(t *testing.T) {
	g := ringGraph(t)
	s := g.Sizing()
	// From a host: 2 hosts at 0 hops (itself, its switch-mate), 4 at 1, 2 at 2: mean 8/8 = 1.
	if s.Hosts != 8 || s.Switches != 4 || s.Links != 12 || s.DiameterHops != 2 || s.MeanHops != 1 {
		t.Errorf("generic sizing %+v", s)
	}
	if b := g.BlastRadius(); len(b) != 2 || b[0].Share != 1 || b[1].Share != 1 {
		t.Errorf("generic blast %+v", b)
	}
}

// TestPathTooLong: a 16x16x16 torus has minimal paths of up to 25 routers, beyond MaxHops:
// NumPaths is 0 for them, Path names the count, and LinkPath still follows them.
func TestPathTooLong(t *testing.T) {
	g, err := Torus{Dims: TorusDims{16, 16, 16}, LinkRate: 100 * sim.Gbps}.Graph()
	if err != nil {
		t.Fatal(err)
	}
	far := 8 + 16*(8+16*8) // x8y8z8, 24 hops from chip 0
	if n := g.NumPaths(0, far); n != 0 {
		t.Errorf("NumPaths(0, x8y8z8) = %d; want 0 (25 routers > MaxHops)", n)
	}
	if _, err := g.Path(0, far, 0); err == nil || !strings.Contains(err.Error(), "crosses 25 switches") {
		t.Errorf("Path error %v; want one naming 25 switches", err)
	}
	lp, lat, err := g.LinkPath(0, far, 12345, nil)
	if err != nil || len(lp) != 26 || lat != 24*DefaultHopLatency {
		t.Errorf("LinkPath: %d links, latency %v, %v; want 26 links (24 torus + 2 internal), %v", len(lp), lat, err, 24*DefaultHopLatency)
	}
	if n := g.NumPaths(0, 1+16); n != 2 { // x1y1z0: x then y, or y then x
		t.Errorf("NumPaths(0, x1y1z0) = %d; want 2", n)
	}
}

// TestTorusPathsMatchSearch checks the translated paths of a torus (twisted too) against the
// generic search on the same nodes and links: the same counts, and the same path for every
// index, as source routes and as links.
func TestTorusPathsMatchSearch(t *testing.T) {
	for _, tr := range []Torus{
		{Dims: TorusDims{3, 4, 5}, LinkRate: sim.Gbps},
		{Dims: TorusDims{2, 4, 2}, LinkRate: sim.Gbps},
		{Dims: TorusDims{4, 4, 4}, LinkRate: sim.Gbps, Routing: "dor"},
		{Dims: TorusDims{6, 2, 4}, LinkRate: sim.Gbps, HopLatency: 7 * sim.Nanosecond},
		{Dims: TorusDims{4, 4, 8}, LinkRate: sim.Gbps, Twisted: true},
		{Dims: TorusDims{3, 6, 3}, LinkRate: sim.Gbps, Twisted: true},
		{Dims: TorusDims{4, 8, 8}, LinkRate: sim.Gbps, Twisted: true, Routing: "dor"},
		{Dims: TorusDims{2, 4, 4}, LinkRate: sim.Gbps, Twisted: true},
	} {
		fast, err := tr.Graph()
		if err != nil {
			t.Fatal(err)
		}
		if fast.tor == nil {
			t.Fatal("a torus has no translated paths")
		}
		slow, err := NewGraph(GraphSpec{Params: fast.Params(), Nodes: fast.Nodes(), Links: fast.Links(), SinglePath: tr.Routing == "dor"})
		if err != nil {
			t.Fatal(err)
		}
		for src := range fast.NumHosts() {
			for dst := range fast.NumHosts() {
				if src == dst {
					continue
				}
				n := fast.NumPaths(src, dst)
				if m := slow.NumPaths(src, dst); n != m {
					t.Fatalf("%v: NumPaths(%d, %d) = %d; search %d", tr.Dims, src, dst, n, m)
				}
				for i := range max(n, 3) {
					a, errA := fast.Path(src, dst, i)
					b, errB := slow.Path(src, dst, i)
					la, lata, _ := fast.LinkPath(src, dst, i, nil)
					lb, latb, _ := slow.LinkPath(src, dst, i, nil)
					if a != b || (errA == nil) != (errB == nil) || fmt.Sprint(la) != fmt.Sprint(lb) || lata != latb {
						t.Fatalf("%v: path %d of %d -> %d: %v %v %v %v; search %v %v %v %v", tr.Dims, i, src, dst, a.Ports(), errA, la, lata, b.Ports(), errB, lb, latb)
					}
				}
			}
		}
	}
}

// BenchmarkLinkPath measures path lookups on large fabrics, destinations spread so the
// per-destination cache rarely helps (the flow-level engine's all-to-all).
func BenchmarkLinkPath(b *testing.B) {
	for _, c := range []struct {
		name string
		spec Spec
	}{
		{"torus 32x64x64", Torus{Dims: TorusDims{32, 64, 64}, LinkRate: 400 * sim.Gbps}},
		{"twisted 16x16x32", Torus{Dims: TorusDims{16, 16, 32}, LinkRate: 400 * sim.Gbps, Twisted: true}},
		{"rail 16384x8 r512", Rail{Servers: 16384, GPUsPerServer: 8, Radix: 512, HostLink: 400 * sim.Gbps}},
		{"clos 8 planes r512", Clos{Tiers: 2, Planes: 8, Radix: 512, HostLink: 100 * sim.Gbps}},
	} {
		b.Run(c.name, func(b *testing.B) {
			tp, err := c.spec.Topology()
			if err != nil {
				b.Fatal(err)
			}
			h := tp.NumHosts()
			buf := make([]int32, 0, 256)
			tp.LinkPath(0, 1, 0, buf) // build lazily-built lists outside the timing
			b.ResetTimer()
			for i := range b.N {
				src, dst := i*7919%h, (i*104729+h/2)%h
				if src == dst {
					dst = (dst + 1) % h
				}
				if _, _, err := tp.LinkPath(src, dst, i, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestGraphConcurrent: paths, tables and sizing may be asked for from many goroutines at once
// (run with -race).
func TestGraphConcurrent(t *testing.T) {
	for _, k := range smallKinds(t) {
		tp := k.topo
		done := make(chan struct{})
		for w := range 4 {
			go func() {
				defer func() { done <- struct{}{} }()
				h := tp.NumHosts()
				for i := range 200 {
					src, dst := (i*7+w)%h, (i*13+3*w+1)%h
					if src != dst {
						_, _, _ = tp.LinkPath(src, dst, i, nil)
						_ = tp.NumPaths(src, dst)
					}
				}
				_, _ = tp.Routes(tp.NumNodes() - 1)
				_ = tp.Sizing()
			}()
		}
		for range 4 {
			<-done
		}
	}
}
