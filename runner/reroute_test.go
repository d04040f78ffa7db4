package runner

import (
	"slices"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
)

// reconverge on an intact 2-tier plane gives the same forwarding as the builder's up/down
// tables; after a T0-T1 link fails, the T0 stops using that uplink for every remote host, and
// the other T0s stop sending hosts below the cut T0 through the T1 that lost its link to it.
func TestReconverge(t *testing.T) {
	s := sim.New(1)
	net := fabric.New(s)
	l, err := topo.Build(net, topo.Clos{Tiers: 2, Planes: 1, Radix: 8, HostLink: 100 * sim.Gbps}, topo.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hosts := l.NumHosts()
	before := make([][][]uint16, len(net.Nodes))
	for n := hosts; n < len(net.Nodes); n++ {
		for h := 0; h < hosts; h++ {
			before[n] = append(before[n], slices.Clone(net.Nodes[n].Routes.Lookup(int32(h))))
		}
	}
	reconverge(net)
	for n := hosts; n < len(net.Nodes); n++ {
		for h := 0; h < hosts; h++ {
			got := net.Nodes[n].Routes.Lookup(int32(h))
			if !slices.Equal(got, before[n][h]) {
				t.Fatalf("intact fabric: %s -> h%d: %v, builder had %v", net.Nodes[n].Name, h, got, before[n][h])
			}
		}
	}
	up, ok := net.PortByName("p0.t0-0.up0")
	if !ok {
		t.Fatal("no port p0.t0-0.up0")
	}
	if err := net.SetLinkDown(0, up, true); err != nil {
		t.Fatal(err)
	}
	reconverge(net)
	t0 := net.Ports[up].Node
	t1 := net.Ports[net.Ports[up].Peer].Node
	local := net.Ports[up].Local
	for h := 0; h < hosts; h++ {
		if slices.Contains(net.Nodes[t0].Routes.Lookup(int32(h)), local) {
			t.Errorf("%s still routes h%d over its dead uplink", net.Nodes[t0].Name, h)
		}
	}
	// Hosts below t0 are 0..3 (radix 8: 4 down, 4 up); from another T0, none of their routes
	// may lead to t1.
	other := t0 + 1
	for h := 0; h < 4; h++ {
		for _, lp := range net.Nodes[other].Routes.Lookup(int32(h)) {
			pid := net.Nodes[other].Ports[lp]
			if net.Ports[net.Ports[pid].Peer].Node == t1 {
				t.Errorf("%s routes h%d via %s, which lost its link to %s", net.Nodes[other].Name, h, net.Nodes[t1].Name, net.Nodes[t0].Name)
			}
		}
		if len(net.Nodes[other].Routes.Lookup(int32(h))) != 3 {
			t.Errorf("%s has %d paths to h%d; want the 3 T1s that still reach it", net.Nodes[other].Name, len(net.Nodes[other].Routes.Lookup(int32(h))), h)
		}
	}
}
