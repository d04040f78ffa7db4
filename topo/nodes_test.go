package topo

import (
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// small are the configurations the structural tests run on: 2 and 3 tiers, parallel links,
// oversubscription, mixed rates, partial builds.
var small = []struct {
	name string
	c    Clos
}{
	{"2t r8 2 planes", Clos{Tiers: 2, Planes: 2, Radix: 8, HostLink: 100 * sim.Gbps}},
	{"2t r8 p2", Clos{Tiers: 2, Planes: 1, Radix: 8, HostLink: 100 * sim.Gbps, ParallelLinks: []int{2}}},
	{"2t r12 2:1 partial", Clos{Tiers: 2, Planes: 2, Radix: 12, Hosts: 21, HostLink: 100 * sim.Gbps, Oversubscription: []float64{2}}},
	{"2t mixed rates", Clos{Tiers: 2, Planes: 1, Radix: 10, HostLink: 100 * sim.Gbps, FabricLink: 400 * sim.Gbps}},
	{"3t fat-tree k=4", Clos{Tiers: 3, Planes: 1, Radix: 4, HostLink: 100 * sim.Gbps}},
	{"3t r8 2 planes", Clos{Tiers: 3, Planes: 2, Radix: 8, HostLink: 100 * sim.Gbps}},
	{"3t r8 p2 p2", Clos{Tiers: 3, Planes: 1, Radix: 8, HostLink: 100 * sim.Gbps, ParallelLinks: []int{2, 2}}},
	{"3t r8 partial", Clos{Tiers: 3, Planes: 2, Radix: 8, Hosts: 37, HostLink: 100 * sim.Gbps}},
	{"3t r8 T1 3:1", Clos{Tiers: 3, Planes: 1, Radix: 8, HostLink: 100 * sim.Gbps, Oversubscription: []float64{1, 3}}},
	{"3t r12 p2 p3 partial", Clos{Tiers: 3, Planes: 3, Radix: 12, Hosts: 50, HostLink: 100 * sim.Gbps, ParallelLinks: []int{2, 3}}},
}

func mustLayout(t testing.TB, c Clos) *Layout {
	t.Helper()
	l, err := c.Layout()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestNames pins node, port and link names and the wiring between named ports.
func TestNames(t *testing.T) {
	// Fat-tree k=4: d0 = u0 = d1 = u1 = 2; 2 T0s and 2 T1s per pod; 4 pods; 4 T2s in 2 groups.
	ft := mustLayout(t, Clos{Tiers: 3, Planes: 2, Radix: 4, HostLink: 100 * sim.Gbps})
	// 2-tier radix 8, p0 = 2: d0 = u0 = 4, 2 T1s, 4 T0s.
	lp := mustLayout(t, Clos{Tiers: 2, Planes: 1, Radix: 8, HostLink: 100 * sim.Gbps, ParallelLinks: []int{2}})
	tests := []struct {
		l        *Layout
		node     int
		port     int
		name     string // port name
		peer     string // peer port name
		nodeName string
	}{
		{ft, 5, 1, "h5.p1", "p1.t0-2.down1", "h5"},
		{ft, ft.SwitchNode(1, 0, 2), 1, "p1.t0-2.down1", "h5.p1", "p1.t0-2"},
		// T0 5 = pod 2, local 1; up port 1 (local 3) -> T1 1 of pod 2 (T1 5), down port 1.
		{ft, ft.SwitchNode(0, 0, 5), 3, "p0.t0-5.up1", "p0.t1-5.down1", "p0.t0-5"},
		// T1 5 = pod 2, j 1; up port 1 (local 3) -> T2 1 of group 1 (T2 3), down port 2 (pod 2).
		{ft, ft.SwitchNode(0, 1, 5), 3, "p0.t1-5.up1", "p0.t2-3.down2", "p0.t1-5"},
		{ft, ft.SwitchNode(1, 2, 3), 3, "p1.t2-3.down3", "p1.t1-7.up1", "p1.t2-3"},
		// T0 3, up port 3 (local 7) -> T1 3/2 = 1, parallel 1: down port 3*2+1 = 7.
		{lp, lp.SwitchNode(0, 0, 3), 7, "p0.t0-3.up3", "p0.t1-1.down7", "p0.t0-3"},
		{lp, lp.SwitchNode(0, 1, 0), 4, "p0.t1-0.down4", "p0.t0-2.up0", "p0.t1-0"},
	}
	for _, tt := range tests {
		if got := tt.l.PortName(tt.node, tt.port); got != tt.name {
			t.Errorf("PortName(%d, %d) = %q, want %q", tt.node, tt.port, got, tt.name)
		}
		if got := tt.l.NodeName(tt.node); got != tt.nodeName {
			t.Errorf("NodeName(%d) = %q, want %q", tt.node, got, tt.nodeName)
		}
		far, ok := tt.l.Peer(tt.node, tt.port)
		if got := tt.l.PortName(far.Node, far.Port); !ok || got != tt.peer {
			t.Errorf("peer of %s = %q (ok %v), want %q", tt.name, got, ok, tt.peer)
		}
		li, ok := tt.l.LinkOf(tt.node, tt.port)
		if !ok {
			t.Errorf("LinkOf(%s) not found", tt.name)
			continue
		}
		lower := tt.name
		if a, _ := tt.l.Node(tt.node); a.Kind == KindSwitch {
			if b, _ := tt.l.Node(far.Node); b.Kind == KindHost || b.Tier < a.Tier {
				lower = tt.peer
			}
		}
		if got := tt.l.Links()[li].Name; got != lower {
			t.Errorf("link at %s is %q, want %q", tt.name, got, lower)
		}
	}
}

// TestWiring checks Links against Peer, LinkOf, Node and PortName on every small layout:
// each port in at most one link, links symmetric and named after their lower end, names
// unique, and Links visiting each node's ports in increasing order.
func TestWiring(t *testing.T) {
	for _, tt := range small {
		t.Run(tt.name, func(t *testing.T) {
			l := mustLayout(t, tt.c)
			d := l.Dims()
			nodes := l.Nodes()
			names := map[string]bool{}
			for i, n := range nodes {
				if names[n.Name] {
					t.Errorf("duplicate node name %q", n.Name)
				}
				names[n.Name] = true
				if (i < d.Hosts) != (n.Kind == KindHost) {
					t.Errorf("node %d %q: hosts must come first", i, n.Name)
				}
				if n.Kind == KindSwitch && l.SwitchNode(n.Plane, n.Tier, n.Index) != i {
					t.Errorf("SwitchNode(%d, %d, %d) != %d", n.Plane, n.Tier, n.Index, i)
				}
				for p := 0; p < n.NumPorts; p++ {
					pn := l.PortName(i, p)
					if pn == "" || names[pn] {
						t.Errorf("port %d of %s: name %q empty or duplicate", p, n.Name, pn)
					}
					names[pn] = true
				}
			}
			used := map[Endpoint]int{}
			last := make([]int, len(nodes)) // last port seen per node + 1
			for i, lk := range l.Links() {
				for _, e := range []Endpoint{lk.A, lk.B} {
					if e.Node < 0 || e.Node >= len(nodes) || e.Port < 0 || e.Port >= nodes[e.Node].NumPorts {
						t.Fatalf("link %s: bad endpoint %+v", lk.Name, e)
					}
					if j, dup := used[e]; dup {
						t.Errorf("port %s in links %d and %d", l.PortName(e.Node, e.Port), j, i)
					}
					used[e] = i
					if e.Port < last[e.Node] {
						t.Errorf("link %d %s: port %d of %s after port %d", i, lk.Name, e.Port, nodes[e.Node].Name, last[e.Node]-1)
					}
					last[e.Node] = e.Port + 1
					if j, ok := l.LinkOf(e.Node, e.Port); !ok || j != i {
						t.Errorf("LinkOf(%s) = %d, %v; want %d", l.PortName(e.Node, e.Port), j, ok, i)
					}
				}
				if far, ok := l.Peer(lk.A.Node, lk.A.Port); !ok || far != lk.B {
					t.Errorf("Peer(A of %s) = %+v, want %+v", lk.Name, far, lk.B)
				}
				if far, ok := l.Peer(lk.B.Node, lk.B.Port); !ok || far != lk.A {
					t.Errorf("Peer(B of %s) = %+v, want %+v", lk.Name, far, lk.A)
				}
				a, b := nodes[lk.A.Node], nodes[lk.B.Node]
				if lk.Name != l.PortName(lk.A.Node, lk.A.Port) || b.Tier != a.Tier+1 || lk.Level != b.Tier ||
					b.Plane != lk.Plane || (a.Kind == KindSwitch && a.Plane != lk.Plane) {
					t.Errorf("link %d %+v between %+v and %+v", i, lk, a, b)
				}
				if want := l.Config().FabricLink; lk.Level == 0 {
					if lk.Rate != tt.c.HostLink {
						t.Errorf("host link %s rate %v", lk.Name, lk.Rate)
					}
				} else if lk.Rate != want {
					t.Errorf("fabric link %s rate %v, want %v", lk.Name, lk.Rate, want)
				}
			}
			// Every port Peer calls connected is in a link, and no other.
			full := d.Hosts == d.MaxHosts
			for i, n := range nodes {
				for p := 0; p < n.NumPorts; p++ {
					_, ok := l.Peer(i, p)
					if _, in := used[Endpoint{i, p}]; ok != in {
						t.Errorf("port %s: Peer ok %v, in Links %v", l.PortName(i, p), ok, in)
					}
					leftover := (d.Tiers == 2 && n.Tier == 1 && d.Radix%d.T0Parallel != 0) || (n.Tier == 2 && d.Radix%d.T1Parallel != 0)
					if full && !ok && n.Kind == KindSwitch && !leftover {
						t.Errorf("full build leaves %s unconnected", l.PortName(i, p))
					}
				}
			}
		})
	}
}
