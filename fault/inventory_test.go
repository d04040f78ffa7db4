package fault

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
)

// smallClos is the fabric most tests use: 2 planes of a 2-tier radix-8 Clos with 16 hosts, so
// 4 T0s and 4 T1s per plane; each T1 has 8 down ports of which only down0..down3 are
// connected (a partial build).
var smallClos = topo.Clos{Tiers: 2, Planes: 2, Radix: 8, Hosts: 16, HostLink: 100 * sim.Gbps}

func inventory(t testing.TB, c topo.Clos) *Inventory {
	t.Helper()
	l, err := c.Layout()
	if err != nil {
		t.Fatal(err)
	}
	return FromLayout(l)
}

// TestInventoryMatchesNetwork: the inventory of a layout (load time) equals that of the
// network topo.Build makes from it (run time), so both resolve targets to the same IDs.
func TestInventoryMatchesNetwork(t *testing.T) {
	for _, c := range []topo.Clos{
		smallClos,
		{Tiers: 2, Planes: 1, Radix: 8, HostLink: 100 * sim.Gbps},
		{Tiers: 3, Planes: 2, Radix: 8, Hosts: 40, HostLink: 100 * sim.Gbps},
		{Tiers: 2, Planes: 1, Radix: 16, Hosts: 20, HostLink: 100 * sim.Gbps, Oversubscription: []float64{3}},
		{Tiers: 2, Planes: 1, Radix: 8, HostLink: 100 * sim.Gbps, ParallelLinks: []int{2}},
	} {
		net := fabric.New(sim.New(1))
		l, err := topo.Build(net, c, topo.BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a, b := FromLayout(l), FromNetwork(net)
		if !reflect.DeepEqual(a, b) {
			for i := range a.Ports {
				if i >= len(b.Ports) || a.Ports[i] != b.Ports[i] {
					t.Errorf("%+v: port %d: layout %+v, network %+v", c, i, a.Ports[i], b.Ports[min(i, len(b.Ports)-1)])
					break
				}
			}
			for i := range a.Nodes {
				if i >= len(b.Nodes) || !reflect.DeepEqual(a.Nodes[i], b.Nodes[i]) {
					t.Errorf("%+v: node %d: layout %+v, network %+v", c, i, a.Nodes[i], b.Nodes[min(i, len(b.Nodes)-1)])
					break
				}
			}
			t.Fatalf("%+v: inventories differ (%v vs %v)", c, a, b)
		}
	}
}

// TestMatch resolves targets of each kind, by name and by glob, on smallClos.
func TestMatch(t *testing.T) {
	inv := inventory(t, smallClos)
	ports := func(tg target) []string {
		var out []string
		for _, p := range tg.ports {
			out = append(out, inv.Ports[p].Name)
		}
		return out
	}
	cases := []struct {
		kind, pattern string
		breakout      int
		n             int      // elements matched
		first         string   // name of the first
		firstPorts    []string // its ports (nil: not checked)
	}{
		{KindLink, "h3.p1", 0, 1, "h3.p1", []string{"h3.p1"}},
		{KindLink, "p0.t0-*.up*", 0, 16, "p0.t0-0.up0", nil},
		{KindLink, "p0.t1-0.down*", 0, 4, "p0.t1-0.down0", nil}, // down4..7 unconnected
		{KindLink, "p0.t1-0.down5", 0, 0, "", nil},
		{KindLink, "*", 0, 128, "h0.p0", nil},
		{KindLink, "p1.t0-[12].up?", 0, 8, "p1.t0-1.up0", nil},
		{KindSwitch, "p1.t1-*", 0, 4, "p1.t1-0", []string{"p1.t1-0.down0", "p1.t1-0.down1", "p1.t1-0.down2", "p1.t1-0.down3"}},
		{KindSwitch, "p*.t0-0", 0, 2, "p0.t0-0", nil},
		{KindSwitch, "h1", 0, 0, "", nil},
		{KindSwitch, "*", 0, 16, "p0.t0-0", nil},
		{KindNIC, "h*.p0", 0, 16, "h0.p0", nil},
		{KindNIC, "h3.*", 0, 2, "h3.p0", nil},
		{KindNIC, "*", 0, 32, "h0.p0", nil},
		{KindNIC, "p0.t0-0.down0", 0, 0, "", nil},
		{KindTransceiver, "h3.x0", 2, 1, "h3.x0", []string{"h3.p0", "h3.p1"}},
		{KindTransceiver, "h3.x1", 2, 0, "", nil},
		{KindTransceiver, "h3.x0", 4, 1, "h3.x0", []string{"h3.p0", "h3.p1"}}, // 2 planes: a partial group
		{KindTransceiver, "h3.x*", 1, 2, "h3.x0", []string{"h3.p0"}},
		{KindTransceiver, "p0.t0-0.xd*", 2, 2, "p0.t0-0.xd0", []string{"p0.t0-0.down0", "p0.t0-0.down1"}},
		{KindTransceiver, "p0.t0-0.xu1", 2, 1, "p0.t0-0.xu1", []string{"p0.t0-0.up2", "p0.t0-0.up3"}},
		{KindTransceiver, "p0.t1-0.xd1", 2, 1, "p0.t1-0.xd1", []string{"p0.t1-0.down2", "p0.t1-0.down3"}},
		{KindTransceiver, "p0.t1-0.xd2", 2, 0, "", nil},           // down4, down5 unconnected
		{KindTransceiver, "*", 4, 16 + 2*(4*2+4*1), "h0.x0", nil}, // hosts x0; per plane T0 xd0, xu0 and T1 xd0
	}
	for _, c := range cases {
		got := inv.match(c.kind, c.pattern, max(c.breakout, 1))
		if len(got) != c.n {
			var names []string
			for _, g := range got {
				names = append(names, g.name)
			}
			t.Errorf("%s %q (breakout %d): %d matches %v; want %d", c.kind, c.pattern, c.breakout, len(got), names, c.n)
			continue
		}
		if c.n == 0 {
			continue
		}
		if got[0].name != c.first {
			t.Errorf("%s %q: first match %q; want %q", c.kind, c.pattern, got[0].name, c.first)
		}
		if c.firstPorts != nil && !slices.Equal(ports(got[0]), c.firstPorts) {
			t.Errorf("%s %q: first match's ports %v; want %v", c.kind, c.pattern, ports(got[0]), c.firstPorts)
		}
	}
}

// TestNoMatch: a target matching nothing is an error naming the field path and the pattern,
// with real names of this fabric as examples.
func TestNoMatch(t *testing.T) {
	inv := inventory(t, smallClos)
	cases := []struct {
		spec Spec
		want []string
	}{
		{Spec{Link: "p9.t0-*", Action: ActionDown}, []string{"faults[0].link", `"p9.t0-*" matches no port`, `"h0.p0"`, `"p0.t0-0.up0"`, `"p0.t1-0.down0"`}},
		{Spec{Switch: "h3", Action: ActionDown}, []string{"faults[0].switch", `"h3" matches no switch`, `"p0.t0-0"`, `"p0.t1-0"`, "nic"}},
		{Spec{NIC: "p0.t0-0.down0", Action: ActionDown}, []string{"faults[0].nic", "matches no NIC port", `"h0.p0"`, `"h15.p1"`}},
		{Spec{Transceiver: "h3.x1", Breakout: 2, Action: ActionDown}, []string{"faults[0].transceiver", `"h3.x1" matches no transceiver`, "breakout 2", `"h0.x0"`, `"p0.t0-0.xd0"`, `"p0.t0-0.xu0"`}},
	}
	for _, c := range cases {
		_, err := Expand([]Spec{c.spec}, inv, Options{Duration: sim.Millisecond})
		if err == nil {
			t.Errorf("%+v: no error", c.spec)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %q does not contain %q", c.spec, err, w)
			}
		}
	}
}

func TestSide(t *testing.T) {
	for _, c := range []struct {
		name string
		side byte
		k    int
	}{
		{"h3.p2", 'p', 2}, {"p0.t0-1.up13", 'u', 13}, {"p0.t1-2.down5", 'd', 5},
		{"p0.t1-2", 0, 0}, {"h3", 0, 0}, {"x.p", 0, 0}, {"x.p-1", 0, 0}, {"x.up+1", 0, 0}, {"x.downx", 0, 0},
	} {
		s, k := side(c.name)
		if s != c.side || k != c.k {
			t.Errorf("side(%q) = %q, %d; want %q, %d", c.name, s, k, c.side, c.k)
		}
	}
}
