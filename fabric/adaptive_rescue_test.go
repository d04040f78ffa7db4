package fabric_test

import (
	"fmt"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// diamond builds h0 - s0 < a, b > s2 - h1: host links at 800G, the four switch links at 100G
// (so s0's two uplinks queue), every link 1 us, adaptive routing on, credits on when
// credits. Ports: s0.p1-a.p0, s0.p2-b.p0, a.p1-s2.p0, b.p1-s2.p1, s2.p2-h1.p0.
func diamond(t *testing.T, credits bool) *harness {
	h := newHarness(t, 3)
	h0, h1 := h.node("h0", fabric.Host), h.node("h1", fabric.Host)
	s0, a, b, s2 := h.node("s0", fabric.Switch), h.node("a", fabric.Switch), h.node("b", fabric.Switch), h.node("s2", fabric.Switch)
	const d = sim.Microsecond
	h.link(h0, s0, rate800, d, bigQ, bigQ)
	h.link(s0, a, rate100, d, bigQ, bigQ)
	h.link(s0, b, rate100, d, bigQ, bigQ)
	h.link(a, s2, rate100, d, bigQ, bigQ)
	h.link(b, s2, rate100, d, bigQ, bigQ)
	h.link(s2, h1, rate800, d, bigQ, bigQ)
	to1 := func(p ...uint16) fabric.RouteEntry { return fabric.RouteEntry{HostLo: 1, HostHi: 2, Ports: p} }
	to0 := func(p ...uint16) fabric.RouteEntry { return fabric.RouteEntry{HostLo: 0, HostHi: 1, Ports: p} }
	h.n.Nodes[s0].Routes = fabric.RouteTable{Entries: []fabric.RouteEntry{to0(0), to1(1, 2)}}
	h.n.Nodes[a].Routes = fabric.RouteTable{Entries: []fabric.RouteEntry{to0(0), to1(1)}}
	h.n.Nodes[b].Routes = fabric.RouteTable{Entries: []fabric.RouteEntry{to0(0), to1(1)}}
	h.n.Nodes[s2].Routes = fabric.RouteTable{Entries: []fabric.RouteEntry{to0(0, 1), to1(2)}}
	if credits {
		if err := h.n.SetCredits(fabric.CreditConfig{Enabled: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.n.SetAdaptive(fabric.AdaptiveConfig{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestAdaptiveRescueQueue: with adaptive routing, when s0's uplink to a fails with packets
// queued at it, the queue moves to the uplink to b and only the packets on the wire (at most
// the link's bandwidth-delay product plus the one being serialised) are lost; the books
// balance, and with credits every live link ends with its full credit limit back (the
// rescued packets kept, then freed, their ingress buffer).
func TestAdaptiveRescueQueue(t *testing.T) {
	for _, credits := range []bool{false, true} {
		t.Run(fmt.Sprintf("credits=%v", credits), func(t *testing.T) {
			h := diamond(t, credits)
			const n = 200
			start := make([]int64, len(h.n.Ports))
			for i := range start {
				start[i] = h.n.CreditStats(fabric.PortID(i), 0).CreditsInFlight
			}
			h.sendN(0, n, pkt{src: 0, dst: 1})
			var queued int64
			h.at(3*sim.Microsecond, func(now sim.Time) {
				queued = h.port("s0", 1).QueueBytes() / mtu
				if err := h.n.SetLinkDown(now, portID(h, "s0.p1"), true); err != nil {
					t.Fatal(err)
				}
			})
			h.run(sim.MaxTime)
			h.audit()
			st := h.n.AdaptiveStats()
			bdp := int64((sim.Microsecond+tx100)/tx100) + 1 // on the wire + being serialised
			t.Logf("queued at the dead egress %d, rescued %d, lost in flight %d (bound %d), delivered %d of %d; %+v",
				queued, st.Rescued, st.LostInFlight, bdp, len(h.got), n, st)
			if queued == 0 || st.Rescued < queued {
				t.Errorf("queued %d at the failure, rescued %d", queued, st.Rescued)
			}
			if d := h.n.C.DroppedTotal(); d != st.LostInFlight || d > bdp || d == 0 {
				t.Errorf("drops %d (%v), lost in flight %d; want only the wire's, 1..%d", d, h.n.C.Dropped, st.LostInFlight, bdp)
			}
			if int64(len(h.got))+st.LostInFlight != n {
				t.Errorf("delivered %d + lost %d != sent %d", len(h.got), st.LostInFlight, n)
			}
			if credits {
				for i := range h.n.Ports {
					p := &h.n.Ports[i]
					if p.Down {
						continue
					}
					if cs := h.n.CreditStats(fabric.PortID(i), h.s.Now()); cs.CreditsInFlight != start[i] {
						t.Errorf("%s: credits left %d blocks at the end, %d at the start", p.Name, cs.CreditsInFlight, start[i])
					}
				}
			}
		})
	}
}

// TestAdaptiveRescueNotified: when a's link to s2 fails, a has no port left toward h1: it
// drops what it holds and receives for h1 (dead ends) and notifies s0, which after
// NotifyDelay moves the packets for h1 queued at its uplink to a over to b. Nothing is
// dropped after the failure + NotifyDelay + one hop (the packets already on s0's link to a),
// and every packet is delivered or counted in one loss class.
func TestAdaptiveRescueNotified(t *testing.T) {
	for _, credits := range []bool{false, true} {
		t.Run(fmt.Sprintf("credits=%v", credits), func(t *testing.T) {
			h := diamond(t, credits)
			const n = 200
			fail := 3 * sim.Microsecond
			h.sendN(0, n, pkt{src: 0, dst: 1})
			h.at(fail, func(now sim.Time) {
				if err := h.n.SetLinkDown(now, portID(h, "a.p1"), true); err != nil {
					t.Fatal(err)
				}
			})
			settle := fail + fabric.DefaultNotifyDelay + sim.Microsecond + tx100 + 1
			h.run(settle)
			early := h.n.C.DroppedTotal()
			h.run(sim.MaxTime)
			h.audit()
			st := h.n.AdaptiveStats()
			d := h.n.C.DroppedTotal()
			t.Logf("drops by failure + notify + hop %d, whole run %d; delivered %d of %d; %+v", early, d, len(h.got), n, st)
			if d != early {
				t.Errorf("%d drops after %v", d-early, settle)
			}
			if d != st.LostInFlight+st.DeadEnds+st.LostQueued || int64(len(h.got))+d != n {
				t.Errorf("drops %d != in flight %d + dead ends %d + queued %d; delivered %d of %d", d, st.LostInFlight, st.DeadEnds, st.LostQueued, len(h.got), n)
			}
			if st.Rescued == 0 || st.Notices == 0 || st.NotifySent == 0 || st.DeadEnds == 0 {
				t.Errorf("want rescues at the notification, notices and dead ends: %+v", st)
			}
		})
	}
}

// TestAdaptiveRescueSourceRouted: source-routed packets (MRC's) are never rerouted: those
// queued at the dead egress are dropped as before, counted as LostQueued, none rescued.
func TestAdaptiveRescueSourceRouted(t *testing.T) {
	h := diamond(t, false)
	const n = 100
	h.sendN(0, n, pkt{src: 0, dst: 1, route: []uint16{1, 1, 2}})
	var queued int64
	h.at(3*sim.Microsecond, func(now sim.Time) {
		queued = h.port("s0", 1).QueueBytes() / mtu
		if err := h.n.SetLinkDown(now, portID(h, "s0.p1"), true); err != nil {
			t.Fatal(err)
		}
	})
	h.run(sim.MaxTime)
	h.audit()
	st := h.n.AdaptiveStats()
	t.Logf("queued %d, %+v, delivered %d", queued, st, len(h.got))
	if queued == 0 || st.LostQueued != queued || st.Rescued != 0 {
		t.Errorf("queued %d at the failure: lost queued %d, rescued %d; want all lost, none rescued", queued, st.LostQueued, st.Rescued)
	}
	if d := h.n.C.DroppedTotal(); d < st.LostQueued+st.LostInFlight || int64(len(h.got))+d != n {
		t.Errorf("drops %d (%v), delivered %d of %d", d, h.n.C.Dropped, len(h.got), n)
	}
}

// TestAdaptiveNotifyStaleAfterLinkUp: a link that comes back up before its fault
// notification reaches the upstream switch (down for less than NotifyDelay) leaves no
// notification in force: the notification is dropped on arrival (NotifyStale), and adaptive
// routing keeps using both of s0's uplinks toward h1 afterwards. On main the late
// notification stood forever and s0 sent everything by b, although arLinkChange clears the
// notifications at link-up (0 of 200 via a). Outages from
// 1 ns to NotifyDelay/2 (stale) and, for comparison, past NotifyDelay (delivered, cleared
// at link-up).
func TestAdaptiveNotifyStaleAfterLinkUp(t *testing.T) {
	for _, c := range []struct {
		outage sim.Time
		stale  bool
	}{
		{1, true},
		{100 * sim.Nanosecond, true},
		{fabric.DefaultNotifyDelay / 2, true},
		{fabric.DefaultNotifyDelay - 1, true},
		{fabric.DefaultNotifyDelay + sim.Microsecond, false},
		{20 * sim.Microsecond, false},
	} {
		for _, credits := range []bool{false, true} {
			t.Run(fmt.Sprintf("outage=%v/credits=%v", c.outage, credits), func(t *testing.T) {
				h := diamond(t, credits)
				fail := 3 * sim.Microsecond
				h.at(fail, func(now sim.Time) {
					if err := h.n.SetLinkDown(now, portID(h, "a.p1"), true); err != nil {
						t.Fatal(err)
					}
				})
				h.at(fail+c.outage, func(now sim.Time) {
					if err := h.n.SetLinkDown(now, portID(h, "a.p1"), false); err != nil {
						t.Fatal(err)
					}
				})
				// Traffic only once the failure and its notification are long over.
				const n = 200
				later := fail + c.outage + 10*fabric.DefaultNotifyDelay
				h.sendN(later, n, pkt{src: 0, dst: 1})
				var viaA0 int64
				h.at(later, func(sim.Time) { viaA0 = h.port("s0", 1).Totals().TxPackets })
				h.run(sim.MaxTime)
				h.audit()
				st := h.n.AdaptiveStats()
				viaA := h.port("s0", 1).Totals().TxPackets - viaA0
				t.Logf("notifications sent %d, delivered %d, stale %d; after: %d of %d via a", st.NotifySent, st.Notices, st.NotifyStale, viaA, len(h.got))
				if st.NotifySent == 0 {
					t.Fatalf("no notification sent: %+v", st)
				}
				if c.stale && (st.NotifyStale != st.NotifySent || st.Notices != 0) || !c.stale && st.NotifyStale != 0 {
					t.Errorf("sent %d, delivered %d, stale %d; want stale %v", st.NotifySent, st.Notices, st.NotifyStale, c.stale)
				}
				if len(h.got) != n || viaA < n/4 {
					t.Errorf("delivered %d of %d, %d via a; want all, at least %d via a (its link is up)", len(h.got), n, viaA, n/4)
				}
			})
		}
	}
}
