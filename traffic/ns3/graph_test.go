package ns3

import (
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
)

// TestFatTreeGraph builds the k=4 fat-tree given in ns-3 format and checks its tiers and the
// number of minimal paths against the fat-tree's closed form: 1 under one edge switch, k/2
// within a pod, (k/2)^2 across pods.
func TestFatTreeGraph(t *testing.T) {
	tp, err := ReadTopology(open(t, "testdata/fattree4.txt"), "fattree4.txt")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := tp.GraphSpec()
	if err != nil {
		t.Fatal(err)
	}
	g, err := topo.NewGraph(spec)
	if err != nil {
		t.Fatal(err)
	}
	if g.NumHosts() != 16 || g.NumNodes() != 36 || g.NumLinks() != 48 {
		t.Fatalf("%d hosts, %d nodes, %d links", g.NumHosts(), g.NumNodes(), g.NumLinks())
	}
	tiers := map[int]int{}
	for _, n := range g.Nodes()[16:] {
		tiers[n.Tier]++
	}
	if tiers[0] != 8 || tiers[1] != 8 || tiers[2] != 4 {
		t.Fatalf("switches per tier %v, want 8 edge, 8 aggregation, 4 core", tiers)
	}
	for _, c := range []struct{ src, dst, paths int }{{0, 1, 1}, {0, 2, 2}, {0, 5, 4}, {3, 14, 4}} {
		if n := g.NumPaths(c.src, c.dst); n != c.paths {
			t.Errorf("NumPaths(%d, %d) = %d, want %d", c.src, c.dst, n, c.paths)
		}
	}
	p := g.Params()
	if p.Kind != "graph" || p.HostLink != 100*sim.Gbps || p.FabricLink != 100*sim.Gbps || p.HopLatency != sim.Microsecond {
		t.Fatalf("params %+v", p)
	}
	if name := g.PortName(0, 0); name != "h0.p0" {
		t.Errorf("host port %q", name)
	}
	if name := g.NodeName(16); name != "sw16" {
		t.Errorf("switch name %q", name)
	}
	if len(tp.LossLinks(spec)) != 0 {
		t.Errorf("loss links in a lossless file")
	}
	sm, _ := ReadTopology(open(t, "testdata/small.txt"), "small.txt")
	ss, err := sm.GraphSpec()
	if err != nil {
		t.Fatal(err)
	}
	if ll := sm.LossLinks(ss); len(ll) != 1 || ll[0].Port != "h1.p0" || ll[0].Loss != 0.001 {
		t.Errorf("loss links %+v", ll)
	}
}

// TestGraphErrors: the shapes lockstep's graph kind cannot take.
func TestGraphErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"3 1 2\n0\n0 1 1Gbps 1us 0\n0 2 1Gbps 1us 0\n", "switch id 0 is below host id 1"},
		{"3 1 2\n0\n0 1 1Gbps 1us 0\n0 2 1Gbps 1us 0\n", "t.txt:2:1: switch id 0 is below"},
		{"4 1 2\n3\n0 3 1Gbps 1us 0\n  1 2 1Gbps 1us 0\n", "t.txt:4:3: link 1-2 joins two hosts"},
		{"4 1 2\n3\n0 3 1Gbps 1us 0\n1 3 1Gbps 1us 0\n", "t.txt: host 2 has no link"},
		{"3 1 3\n2\n0 2 1Gbps 1us 0\n1 2 1Gbps 1us 0\n2 0 1Gbps 1us 0\n", "t.txt:5:1: host 0 has a second link (the first is on line 3)"},
		{"4 2 2\n2 3\n0 2 1Gbps 1us 0\n1 2 1Gbps 1us 0\n", "t.txt:2:3: switch 3 has no link"},
		{"5 3 3\n2 3 4\n0 2 1Gbps 1us 0\n1 2 1Gbps 1us 0\n 3 4 1Gbps 1us 0\n", "t.txt:5:2: switch 3 is not connected to any host"},
		// lockstep sizes runs, base RTTs and timeouts from one NIC rate
		{"3 1 2\n2\n0 2 1Gbps 1us 0\n1 2 100Gbps 1us 0\n", "t.txt:4:1: host links have different rates (h0 1Gbps, h1 100Gbps); lockstep's transports assume one NIC rate per fabric: give every host link the same rate"},
	} {
		tp, err := ReadTopology(strings.NewReader(c.in), "t.txt")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tp.GraphSpec(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %s", c.in, err, c.want)
		}
	}
}
