package topo_test

import (
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
)

// TestSpreadPaths: fabric.Network.SpreadPaths on built Clos fabrics (2 and 3 tiers, 1 and 2
// planes) gives, for every host pair, as many routes per plane as the topology's minimal
// paths (Topology.NumPaths / planes), each starting at the source's port on that plane, of
// equal share when every switch spreads evenly (a Clos is symmetric), the shares summing to
// 1; a bound below the route count is an error naming it.
func TestSpreadPaths(t *testing.T) {
	for _, c := range []topo.Clos{
		{Tiers: 2, Planes: 1, Radix: 8, Hosts: 32, HostLink: 100 * sim.Gbps},
		{Tiers: 2, Planes: 2, Radix: 8, Hosts: 16, HostLink: 100 * sim.Gbps},
		{Tiers: 3, Planes: 1, Radix: 8, Hosts: 128, HostLink: 100 * sim.Gbps},
	} {
		l, err := c.Topology()
		if err != nil {
			t.Fatal(err)
		}
		net := fabric.New(sim.New(1))
		if err := topo.BuildTopology(net, l, topo.BuildOptions{}); err != nil {
			t.Fatal(err)
		}
		hosts := l.NumHosts()
		most := 0
		for src := 0; src < hosts; src += 3 {
			for dst := 0; dst < hosts; dst += 5 {
				if src == dst {
					continue
				}
				want := l.NumPaths(src, dst) / c.Planes
				for plane := range c.Planes {
					ps, err := net.SpreadPaths(int32(src), plane, int32(dst), 0)
					if err != nil {
						t.Fatalf("%d tiers, h%d -> h%d plane %d: %v", c.Tiers, src, dst, plane, err)
					}
					sum := 0.0
					for _, p := range ps {
						sum += p.Share
						if math.Abs(p.Share-1/float64(want)) > 1e-12 || len(p.Ports) == 0 || p.Ports[0] != net.Nodes[src].Ports[plane] {
							t.Fatalf("%d tiers, h%d -> h%d plane %d: path %v share %v; want share 1/%d from the source's port", c.Tiers, src, dst, plane, p.Ports, p.Share, want)
						}
					}
					if len(ps) != want || math.Abs(sum-1) > 1e-12 {
						t.Errorf("%d tiers, h%d -> h%d plane %d: %d routes, shares sum %v; want %d, 1", c.Tiers, src, dst, plane, len(ps), sum, want)
					}
					most = max(most, len(ps))
				}
			}
		}
		if most > 1 {
			if _, err := net.SpreadPaths(0, 0, int32(hosts-1), 1); err == nil || !strings.Contains(err.Error(), "more than 1 routes") {
				t.Errorf("%d tiers: bound 1: err %v; want more than 1 routes", c.Tiers, err)
			}
		}
	}
}
