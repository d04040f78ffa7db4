package fabric_test

import (
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// PFC makes an incast lossless: 8 senders at line rate into one egress of a switch whose queue
// holds less than what they send. Without PFC the queue drops; with PFC each ingress pauses its
// sender at XOFF, nothing is dropped, every packet arrives, the senders' NIC ports record
// pauses and paused time, and no ingress goes past XOFF + headroom. [IEEE 802.1Qbb]
func TestPFCIncastLossless(t *testing.T) {
	const n, per = 8, 200
	for _, pfc := range []bool{false, true} {
		nic := fabric.QueueConfig{Limit: bigLimit}
		h := newStar(t, 1, n, rate800, testDelay, nic, fabric.QueueConfig{Limit: 2 << 20})
		if pfc {
			if err := h.n.SetPFC(fabric.PFCConfig{Enabled: true, XOFF: 64 << 10}); err != nil {
				t.Fatal(err)
			}
		}
		for src := range int32(n) {
			h.sendN(0, per, pkt{src: src, dst: n, route: []uint16{uint16(n)}, class: 1})
		}
		h.run(sim.MaxTime)
		h.audit()
		drops := h.n.C.DroppedTotal()
		var pauses int64
		var paused sim.Time
		exceeded := false
		for i := range h.n.Ports {
			st := h.n.PFCStats(fabric.PortID(i), h.s.Now())
			pauses += st.PausesReceived
			paused += st.PausedTime
			exceeded = exceeded || st.HeadroomExceeded
		}
		t.Logf("pfc %v: drops %d, delivered %d of %d, pauses %d, paused %v", pfc, drops, len(h.got), n*per, pauses, paused)
		if !pfc {
			if drops == 0 {
				t.Fatalf("without PFC the 2 MiB queue took %d packets of 4 KiB from 8 line-rate senders without a drop", n*per)
			}
			continue
		}
		if drops != 0 || len(h.got) != n*per {
			t.Errorf("PFC: %d drops, %d of %d delivered; want lossless", drops, len(h.got), n*per)
		}
		if pauses == 0 || paused <= 0 {
			t.Errorf("PFC: %d pauses, paused %v; want the senders paused", pauses, paused)
		}
		if exceeded {
			t.Errorf("an ingress went past XOFF + headroom with the default headroom")
		}
	}
}

// Headroom too small for the link: the ingress holds more than XOFF + headroom (what arrives
// while the pause travels), and PFCStats says the configuration could not be lossless.
func TestPFCHeadroomFlagged(t *testing.T) {
	nic := fabric.QueueConfig{Limit: bigLimit}
	h := newStar(t, 1, 4, rate800, 10*sim.Microsecond, nic, fabric.QueueConfig{Limit: 8 << 20})
	if err := h.n.SetPFC(fabric.PFCConfig{Enabled: true, XOFF: 32 << 10, Headroom: 4 << 10}); err != nil {
		t.Fatal(err)
	}
	for src := range int32(4) {
		h.sendN(0, 400, pkt{src: src, dst: 4, route: []uint16{4}, class: 1})
	}
	h.run(sim.MaxTime)
	h.audit()
	exceeded := false
	for i := range h.n.Ports {
		exceeded = exceeded || h.n.PFCStats(fabric.PortID(i), h.s.Now()).HeadroomExceeded
	}
	if !exceeded {
		t.Errorf("4 KiB of headroom on a 10 us 800G link was not flagged")
	}
}

func TestPFCConfigErrors(t *testing.T) {
	for _, c := range []fabric.PFCConfig{
		{XOFF: 64 << 10, XON: 64 << 10},
		{XOFF: -1},
		{Classes: []int{9}},
		{XOFF: 64 << 10, Headroom: -1},
	} {
		if err := c.WithDefaults().Validate("fabric.pfc"); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

// A cyclic buffer dependency deadlocks under PFC and PFCCheck names the cycle: three switches
// in a ring, each with a host, and three flows that each cross two ring links, so every ring
// egress carries two line-rate flows, fills, and is paused by the next switch, whose own ring
// egress is paused in turn. The watchdog variant breaks the deadlock: everything arrives.
func TestPFCDeadlock(t *testing.T) {
	for _, wd := range []sim.Time{0, 20 * sim.Microsecond} {
		h := newHarness(t, 1)
		hs := []fabric.NodeID{h.node("h0", fabric.Host), h.node("h1", fabric.Host), h.node("h2", fabric.Host)}
		ss := []fabric.NodeID{h.node("s0", fabric.Switch), h.node("s1", fabric.Switch), h.node("s2", fabric.Switch)}
		big := fabric.QueueConfig{Limit: bigLimit}
		for i := range 3 {
			h.link(ss[i], hs[i], rate800, testDelay, big, big) // s<i>.p0 - h<i>
		}
		for i := range 3 {
			h.link(ss[i], ss[(i+1)%3], rate800, testDelay, big, big)
		}
		// Ports toward the next switch of the ring: s0.p1 (-> s1), s1.p2 (-> s2), s2.p2 (-> s0).
		nextPort := []uint16{1, 2, 2}
		if err := h.n.SetPFC(fabric.PFCConfig{Enabled: true, XOFF: 32 << 10, Watchdog: wd}); err != nil {
			t.Fatal(err)
		}
		// Flow i: h<i> -> s<i> -> s<i+1> -> s<i+2> -> h<i+2>.
		const per = 400
		for i := range 3 {
			route := []uint16{nextPort[i], nextPort[(i+1)%3], 0}
			h.sendN(0, per, pkt{src: int32(i), dst: int32((i + 2) % 3), route: route, class: 1})
		}
		cycle := ""
		for t0 := sim.Time(0); t0 < 5*sim.Millisecond && cycle == ""; t0 += 50 * sim.Microsecond {
			h.run(t0 + 50*sim.Microsecond)
			cycle = h.n.PFCCheck(h.s.Now())
		}
		t.Logf("watchdog %v: delivered %d of %d; deadlock: %q", wd, len(h.got), 3*per, cycle)
		if wd == 0 {
			if cycle == "" || len(h.got) == 3*per {
				t.Fatalf("no deadlock reported (%d of %d delivered)", len(h.got), 3*per)
			}
			for _, sw := range []string{"s0", "s1", "s2"} {
				if !strings.Contains(cycle, sw) {
					t.Errorf("cycle %q does not name %s", cycle, sw)
				}
			}
			continue
		}
		h.run(sim.MaxTime)
		if cycle != "" || len(h.got) != 3*per {
			t.Errorf("watchdog on: cycle %q, %d of %d delivered; want the deadlock broken", cycle, len(h.got), 3*per)
		}
	}
}
