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

// Headroom too small for the link: what arrives while the pause travels does not fit, the
// ingress drops it (pfc_headroom), and PFCStats says the configuration could not be lossless.
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
	if !exceeded || h.n.C.Dropped[fabric.DropHeadroom] == 0 {
		t.Errorf("4 KiB of headroom on a 10 us 800G link: flagged %v, %d dropped; want drops, flagged", exceeded, h.n.C.Dropped[fabric.DropHeadroom])
	}
	if w := h.n.PFCLosslessCheck(5); len(w) == 0 || !strings.Contains(w[0], "headroom") {
		t.Errorf("lossless check before the run: %q; want the headroom named", w)
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
		// The watchdog gives up losslessness: what it lets in past the headroom is dropped.
		if lost := h.n.C.Dropped[fabric.DropHeadroom]; cycle != "" || int64(len(h.got))+lost != 3*per || h.n.InFlight() != 0 {
			t.Errorf("watchdog on: cycle %q, %d of %d delivered, %d dropped past the headroom; want the deadlock broken", cycle, len(h.got), 3*per, lost)
		}
	}
}

// incastPeak runs n line-rate senders of per packets into one egress under cfg and returns the
// largest ingress occupancy, the pauses received, the PAUSE frames sent and the drops.
func incastPeak(t *testing.T, n, per int, cfg fabric.PFCConfig) (peak, pauses, frames, drops int64) {
	t.Helper()
	h := newStar(t, 1, n, rate800, testDelay, fabric.QueueConfig{Limit: bigLimit}, fabric.QueueConfig{Limit: 16 << 20})
	if err := h.n.SetPFC(cfg); err != nil {
		t.Fatal(err)
	}
	for src := range int32(n) {
		h.sendN(0, per, pkt{src: src, dst: int32(n), route: []uint16{uint16(n)}, class: 1})
	}
	h.run(sim.MaxTime)
	h.audit()
	for i := range h.n.Ports {
		st := h.n.PFCStats(fabric.PortID(i), h.s.Now())
		peak = max(peak, st.PeakIngressBytes)
		pauses += st.PausesReceived
		frames += st.PauseFramesSent
	}
	if len(h.got) != n*per {
		t.Errorf("%d of %d delivered", len(h.got), n*per)
	}
	return peak, pauses, frames, h.n.C.DroppedTotal()
}

// Dynamic thresholds [Choudhury & Hahne 1998]: an ingress pauses when its share of the
// switch's shared buffer reaches Alpha x the free shared buffer, so with alpha 1 and 1 MiB
// shared, 2 busy ingresses each reach about 1/3 MiB before pausing and 8 about 1/9 MiB: the
// per-ingress peak falls as more ingresses share the buffer, and nothing is dropped.
func TestPFCDynamicThreshold(t *testing.T) {
	cfg := fabric.PFCConfig{Enabled: true, Alpha: 1, SharedBuffer: 1 << 20}
	peak2, p2, _, d2 := incastPeak(t, 2, 600, cfg)
	peak8, p8, _, d8 := incastPeak(t, 8, 300, cfg)
	t.Logf("alpha 1, 1 MiB shared: 2 senders peak %d B per ingress (%d pauses), 8 senders %d B (%d pauses)", peak2, p2, peak8, p8)
	if d2+d8 != 0 || p2 == 0 || p8 == 0 {
		t.Fatalf("drops %d/%d, pauses %d/%d; want lossless with pauses", d2, d8, p2, p8)
	}
	// Thresholds (1 MiB - reserved share)/3 and /9 plus the headroom in flight.
	if peak2 < 2*peak8 {
		t.Errorf("2 ingresses peaked at %d B, 8 at %d B; want the dynamic threshold to fall with load (about 3x)", peak2, peak8)
	}
	if peak2 < 300<<10 || peak8 > 200<<10 {
		t.Errorf("peaks %d and %d B; want about 1/3 MiB and 1/9 MiB plus headroom", peak2, peak8)
	}
}

// PAUSE quanta [IEEE 802.1Qbb]: each frame pauses the upstream for its quanta only, so a
// pause longer than that is held by refresh frames every half pause time. With a tiny quanta
// (64 x 512 bits, 41 ns at 800G) the incast stays lossless, and the ingresses send many more
// frames than pauses start.
func TestPFCQuantaRefresh(t *testing.T) {
	_, pauses, frames, drops := incastPeak(t, 8, 300, fabric.PFCConfig{Enabled: true, XOFF: 64 << 10, Quanta: 64})
	t.Logf("quanta 64: %d pauses, %d PAUSE frames, %d drops", pauses, frames, drops)
	if drops != 0 || pauses == 0 {
		t.Fatalf("%d drops, %d pauses; want lossless with pauses", drops, pauses)
	}
	if frames < 4*pauses {
		t.Errorf("%d frames for %d pauses; want refreshes to hold the pauses", frames, pauses)
	}
	if err := (fabric.PFCConfig{Quanta: 70000}).WithDefaults().Validate("fabric.pfc"); err == nil || !strings.Contains(err.Error(), "quanta") {
		t.Errorf("quanta 70000: %v; want an error naming quanta", err)
	}
	if err := (fabric.PFCConfig{Alpha: -1}).WithDefaults().Validate("fabric.pfc"); err == nil || !strings.Contains(err.Error(), "alpha") {
		t.Errorf("alpha -1: %v; want an error naming alpha", err)
	}
}
