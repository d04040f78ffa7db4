package fabric_test

import (
	"fmt"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// rate50 is the dead link's rate in TestAdaptiveDetour: half of t1's uplinks, so T1 a's
// egress toward t0 queues.
const rate50 = 50 * sim.Gbps

// twoTier builds the smallest fat tree with a detour: hosts h0 on T0 t0 and h1 on T0 t1, both
// T0s linked to T1s a and b. Host links 800G, switch links 100G (so t1's uplinks and the T1s'
// downlinks queue), every link 1 us, adaptive routing on (detour as given: nil is the
// default), credits on when credits. Ports: t0.p0-h0, t0.p1-a.p0, t0.p2-b.p0, t1.p0-h1,
// t1.p1-a.p1, t1.p2-b.p1.
func twoTier(t *testing.T, credits bool, detour *bool) *harness {
	h := newHarness(t, 5)
	node := func(name string, kind fabric.NodeKind, tier int) fabric.NodeID {
		id, err := h.n.AddNode(name, kind, 0, tier)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	h0, h1 := node("h0", fabric.Host, -1), node("h1", fabric.Host, -1)
	t0, t1 := node("t0", fabric.Switch, 0), node("t1", fabric.Switch, 0)
	a, b := node("a", fabric.Switch, 1), node("b", fabric.Switch, 1)
	const d = sim.Microsecond
	h.link(t0, h0, rate800, d, bigQ, bigQ)
	h.link(t0, a, rate50, d, bigQ, bigQ)
	h.link(t0, b, rate50, d, bigQ, bigQ)
	h.link(t1, h1, rate800, d, bigQ, bigQ)
	h.link(t1, a, rate100, d, bigQ, bigQ)
	h.link(t1, b, rate100, d, bigQ, bigQ)
	to := func(host int32, p ...uint16) fabric.RouteEntry {
		return fabric.RouteEntry{HostLo: host, HostHi: host + 1, Ports: p}
	}
	h.n.Nodes[t0].Routes = fabric.RouteTable{Entries: []fabric.RouteEntry{to(0, 0)}, Up: []uint16{1, 2}}
	h.n.Nodes[t1].Routes = fabric.RouteTable{Entries: []fabric.RouteEntry{to(1, 0)}, Up: []uint16{1, 2}}
	for _, s := range []fabric.NodeID{a, b} {
		h.n.Nodes[s].Routes = fabric.RouteTable{Entries: []fabric.RouteEntry{to(0, 0), to(1, 1)}}
	}
	if err := h.n.SetAdaptive(fabric.AdaptiveConfig{Enabled: true, Detour: detour}); err != nil {
		t.Fatal(err)
	}
	if credits {
		if err := h.n.SetCredits(fabric.CreditConfig{Enabled: true, BufferPerVL: 32 << 10}); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// TestAdaptiveDetour: h1 sends 300 packets to h0; at 4 us T1 a's link to t0 fails. a has no
// minimal port toward h0 left: what it holds in its dead egress and what reaches it before
// its fault notification takes effect at t1 detours down to t1, which sends it up to b on
// the escape VL, and b down to t0. So the only drops are the packets on the dead wire (at
// most its bandwidth-delay product plus the one being serialised); every other packet is
// delivered; the detours equal the turns; with credits every live port ends with its
// initial credits back (the turn frees the blocks in the VL the packet arrived in) and no
// VL is left blocked. With detour: false the same failure drops packets at a (dead ends).
func TestAdaptiveDetour(t *testing.T) {
	off := false
	for _, c := range []struct {
		credits bool
		detour  *bool
	}{{false, nil}, {true, nil}, {true, &off}} {
		t.Run(fmt.Sprintf("credits=%v/detour=%v", c.credits, c.detour == nil), func(t *testing.T) {
			h := twoTier(t, c.credits, c.detour)
			const n = 300
			start := make([][fabric.MaxClasses]int64, len(h.n.Ports))
			for i := range start {
				start[i] = fabric.CreditsLeftByVL(h.n, fabric.PortID(i))
			}
			h.sendN(0, n, pkt{src: 1, dst: 0})
			var queued int64
			h.at(4*sim.Microsecond, func(now sim.Time) {
				queued = h.port("a", 0).QueueBytes() / mtu
				if err := h.n.SetLinkDown(now, portID(h, "a.p0"), true); err != nil {
					t.Fatal(err)
				}
			})
			h.run(sim.MaxTime)
			h.audit()
			st := h.n.AdaptiveStats()
			bdp := int64((sim.Microsecond+2*tx100)/(2*tx100)) + 1 // the dead link runs at 50G
			d := h.n.C.DroppedTotal()
			t.Logf("queued at a's dead egress %d; drops %d (in flight %d, bound %d; dead ends %d); detours %d, turns %d, rescued %d; delivered %d of %d; %+v",
				queued, d, st.LostInFlight, bdp, st.DeadEnds, st.Detours, st.Turns, st.Rescued, len(h.got), n, st)
			if int64(len(h.got))+d != n {
				t.Errorf("delivered %d + dropped %d != sent %d", len(h.got), d, n)
			}
			if c.detour != nil {
				if st.DeadEnds == 0 || st.Detours != 0 {
					t.Errorf("detour off: dead ends %d, detours %d; want dead ends, no detour", st.DeadEnds, st.Detours)
				}
				return
			}
			if d != st.LostInFlight || d > 2*bdp || st.DeadEnds != 0 {
				t.Errorf("drops %d (%v): want only the wire's (%d, bound %d), no dead end (%d)", d, h.n.C.Dropped, st.LostInFlight, 2*bdp, st.DeadEnds)
			}
			if st.Detours == 0 || st.Turns != st.Detours || queued == 0 {
				t.Errorf("detours %d, turns %d, queued at the failure %d: want detours, each turned", st.Detours, st.Turns, queued)
			}
			if c.credits {
				for i := range h.n.Ports {
					p := &h.n.Ports[i]
					if p.Down {
						continue
					}
					if left := fabric.CreditsLeftByVL(h.n, fabric.PortID(i)); left != start[i] {
						t.Errorf("%s: credits by VL %v blocks at the end, %v at the start", p.Name, left, start[i])
					}
				}
			}
		})
	}
}

// TestAdaptiveDetourEscapeClass: SetAdaptive gives the switch-to-switch ports one class more
// (the escape VL) and leaves host-facing ports as they were; with detour off nothing changes.
func TestAdaptiveDetourEscapeClass(t *testing.T) {
	off := false
	for _, c := range []struct {
		detour *bool
		inner  int
	}{{nil, fabric.DefaultClasses + 1}, {&off, fabric.DefaultClasses}} {
		h := twoTier(t, false, c.detour)
		inner, _ := h.port("t1", 1).Stats()
		host, _ := h.port("t1", 0).Stats()
		nic, _ := h.port("h1", 0).Stats()
		if len(inner) != c.inner || len(host) != fabric.DefaultClasses || len(nic) != fabric.DefaultClasses {
			t.Errorf("detour %v: classes inner %d (want %d), host-facing %d, NIC %d (want %d)", c.detour == nil, len(inner), c.inner, len(host), len(nic), fabric.DefaultClasses)
		}
	}
}
