package ibnic_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/ib"
	"github.com/lockstepsim/lockstep/transport/ib/ibnic"
)

// TestLinkDownLossless [issue 19: "with one T0-T1 link down, traffic moves within 10 us and
// no packet is lost"], table-driven over a 2-tier tree, a 2-plane one and a 3-tier one (a
// T0-T1 and a T1-T2 link): the permutation of the adaptive routing sweep under InfiniBand
// with adaptive routing, the link failing at 50 us and staying down. With the detours on the
// escape VL (fabric/adaptive_detour.go) and the queue rescue:
//   - the switches drop nothing (summary adaptive_routing.dropped_by_switches_packets 0, no
//     dead end): the only packets lost are those on the failed wire (or being serialised
//     onto it), at most its bandwidth-delay product both ways plus one packet each way;
//   - nothing is dropped after failure + 10 us, and no packet meets a switch without a
//     usable minimal port after it (AdaptiveStats.LastDeadEnd): the traffic is off the dead
//     link and the dead-end switch by then (a dead port leaves the adaptive choice at once,
//     the notifications take notify_delay per tier). In the 3-tier T0-T1 case the last
//     such packet reaches the dead-end T1 at 62.9 us (61.2 us before the notifications took
//     their own tiebreak key, f8: which packets sit in those queues at the notification
//     depends on the order of that instant's events): the T2s above it have no other way
//     into the pod, so what they had queued toward it before the notification drains
//     through it (and is detoured there, not dropped); the bound is 14 us there;
//   - every transfer completes with no QP error, the wire's losses recovered by the
//     transport (out-of-order placement's hole timer NAKs them).
func TestLinkDownLossless(t *testing.T) {
	const fail, within = 50 * sim.Microsecond, 10 * sim.Microsecond
	for _, c := range []struct {
		name string
		f    fabricCase
		link string
		long bool
		// deadEnds bounds AdaptiveStats.LastDeadEnd after the failure (see the doc).
		deadEnds sim.Time
	}{
		{"2-tier", fabricCase{2, 1, 16, "2MB"}, "p0.t0-0.up0", false, within},
		{"2-tier/2-plane", fabricCase{2, 2, 16, "4MB"}, "p0.t0-0.up0", false, within},
		{"3-tier/T0-T1", fabricCase{3, 1, 8, "4MB"}, "p0.t0-0.up0", true, 14 * sim.Microsecond},
		{"3-tier/T1-T2", fabricCase{3, 1, 8, "4MB"}, "p0.t1-0.up0", true, within},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.long && testing.Short() {
				t.Skip("long")
			}
			y := permYAML(c.f, "kind: ib", true, 1, "faults: [{at: 50us, link: "+c.link+", action: down}]\n")
			full := run(t, y)
			cut := stoppedAt(t, y, fail+within)
			st, tr, a := full.Net.AdaptiveStats(), full.Summary.Transport, full.Summary.Adaptive
			pid, _ := full.Net.PortByName(c.link)
			lk := &full.Net.Ports[pid]
			const mtuWire = 4096 + 64
			bdpBytes := 2 * (lk.Rate.BytesIn(lk.Delay) + mtuWire)
			d, dc := full.Net.C.DroppedTotal(), cut.Net.C.DroppedTotal()
			t.Logf("drops %d (%d by %.1f us): dropped by switches %d, lost on the wire %d (%d B, bound %d B); detours %d (escape VL %d), rescued %d, dead ends %d, last at %v; notifications %d; done %d of 128, retx %d, QP errors %d, JCT %.1f us",
				d, dc, float64(cut.Sim.Now())/1e6, a.DroppedBySwitches, st.LostInFlight, st.LostInFlightB, bdpBytes, st.Detours, st.Turns, st.Rescued, st.DeadEnds, st.LastDeadEnd, st.Notices, tr.FlowsCompleted, tr.RetxPackets, tr.QPErrors, tr.JCTUs)
			if a == nil || a.DroppedBySwitches != 0 || st.DeadEnds != 0 || st.LostQueued != 0 {
				t.Errorf("switch drops: summary %+v, dead ends %d, lost queued %d; want none", a, st.DeadEnds, st.LostQueued)
			}
			if d != st.LostInFlight || st.LostInFlightB > bdpBytes || full.Net.C.Dropped[fabric.DropLinkDown] != d {
				t.Errorf("drops %d (%v); want only the wire's: %d packets, %d B (bound %d B)", d, full.Summary.Drops, st.LostInFlight, st.LostInFlightB, bdpBytes)
			}
			if d != dc {
				t.Errorf("%d packets dropped after %v", d-dc, fail+within)
			}
			if st.LastDeadEnd > fail+c.deadEnds {
				t.Errorf("a packet met a dead-end switch at %v, after %v", st.LastDeadEnd, fail+c.deadEnds)
			}
			if tr.FlowsCompleted != 128 || tr.QPErrors != 0 {
				t.Errorf("completed %d of 128, QP errors %d", tr.FlowsCompleted, tr.QPErrors)
			}
		})
	}
	// Contrast: without detours (SHIELD as NVIDIA documents it) the dead-end switch drops
	// what reaches it before its notification takes effect.
	y := strings.Replace(permYAML(fabricCase{2, 1, 16, "2MB"}, "kind: ib", true, 1, "faults: [{at: 50us, link: p0.t0-0.up0, action: down}]\n"),
		"adaptive_routing: {enabled: true}", "adaptive_routing: {enabled: true, detour: false}", 1)
	off := run(t, y)
	t.Logf("detour off: dropped by switches %d, lost on the wire %d", off.Summary.Adaptive.DroppedBySwitches, off.Net.AdaptiveStats().LostInFlight)
	if off.Summary.Adaptive.DroppedBySwitches == 0 || off.Net.AdaptiveStats().Detours != 0 {
		t.Errorf("detour off: %+v; want switch drops and no detour", off.Summary.Adaptive)
	}
}

// TestLinkDownRecoveryTime measures how long the transport takes to resend what the failed
// wire lost (summary fault_to_last_loss_retx_us: from the failure to the last resend of a
// lost packet) on the 2-tier case of TestLinkDownLossless, with out-of-order placement (the
// default under adaptive routing) at its automatic hold (base RTT + one credit buffer drain
// per switch hop: 40.8 us here, ib.Config.AutoReorderHold; a permutation has one source per
// responder, so the fan-in term adds nothing), at the old fixed default of
// 100 us and at 20 us. IB's link layer has no retransmission on another path (a packet that
// fails its link CRC is discarded [IBTA vol 1, ch. 7, link layer]; NVIDIA's Physical Layer
// Retransmission resends over the same link after bit errors [NVIDIA Quantum firmware
// release notes, "Physical Layer Retransmission (PLR)"], which a dead link does not have;
// lossless means no drop for want of buffer), so the RC transport's NAK after the hole timer
// is what recovers it: the recovery ends about one hold after the failure (a hole opens at
// the loss; it is NAKed when the hold runs out; the NAK crosses the fabric and the requester
// goes back to the hole, resending everything after it, so the last lost packet's resend
// waits behind the resends before it): measured 89.0 us at the automatic hold (JCT 224.5
// us against 193.5 without the fault), 154.4 us at 100 us (JCT 234.5 us), 60.9 us at 20 us
// (JCT 223.2 us), no timeout. The automatic hold must recover faster than the 100 us one.
func TestLinkDownRecoveryTime(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	base := run(t, permYAML(fabricCase{2, 1, 16, "2MB"}, "kind: ib", true, 1, "")).Summary.Transport
	rec := map[string]float64{}
	for _, c := range []struct {
		name string
		ib   string
	}{
		{"automatic", "kind: ib"},
		{"hold=100us", "kind: ib, ib: {out_of_order: {hold: 100us}}"},
		{"hold=20us", "kind: ib, ib: {out_of_order: {hold: 20us}}"},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := permYAML(fabricCase{2, 1, 16, "2MB"}, c.ib, true, 1, "faults: [{at: 50us, link: p0.t0-0.up0, action: down}]\n")
			r := run(t, y)
			tr := r.Summary.Transport
			blk := resolvedIB(t, y)
			if blk == nil || blk.OutOfOrder.Hold == 0 {
				t.Fatalf("resolved block %+v: want the hold in force", blk)
			}
			hold := float64(blk.OutOfOrder.Hold) / float64(sim.Microsecond)
			t.Logf("%s: hold %.1f us; lost on the wire %d, dropped by switches %d; fault -> last loss resend %.1f us; retx %d (%v), timeouts %d; JCT %.1f us (%.1f without the fault)",
				c.name, hold, r.Net.AdaptiveStats().LostInFlight, r.Summary.Adaptive.DroppedBySwitches, tr.FaultToLastLossRetxUs, tr.RetxPackets, tr.RetxPacketsByCause, tr.Timeouts, tr.JCTUs, base.JCTUs)
			if tr.FlowsCompleted != 128 || tr.Timeouts != 0 {
				t.Fatalf("completed %d of 128, timeouts %d", tr.FlowsCompleted, tr.Timeouts)
			}
			if got := tr.FaultToLastLossRetxUs; got < hold || got > hold+60 {
				t.Errorf("recovery %.1f us after the failure; want about one hold (%.1f us) plus at most 60 us", got, hold)
			}
			rec[c.name] = tr.FaultToLastLossRetxUs
		})
	}
	if rec["automatic"] >= rec["hold=100us"] {
		t.Errorf("recovery %.1f us at the automatic hold, %.1f us at 100 us: want the automatic one faster", rec["automatic"], rec["hold=100us"])
	}
}

// resolvedIB returns scenario y's resolved transport.ib block.
func resolvedIB(t *testing.T, y string) *ib.Config {
	t.Helper()
	sc, err := scenario.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := sc.Transport.Block().(*ib.Config)
	return c
}

// TestAutoHoldResolved: a left-out out_of_order.hold resolves to the automatic hold for the
// topology (base RTT + one credit buffer drain per switch hop), which the resolved scenario
// shows; re-resolving that scenario keeps it; a written hold is kept as written.
func TestAutoHoldResolved(t *testing.T) {
	for _, c := range []struct {
		name string
		f    fabricCase
		ib   string
		want sim.Time
		// per and most: the resolved hold_per_fan_in and fan_in_max.
		per  sim.Time
		most int
	}{
		// 2-tier at 100G: RTT 9.334 us (4 links, 1 us each way, a 4,138 B packet and a
		// 30 B ACK per link) + 3 x 128 KiB at 100 Gb/s (10.486 us); per further source
		// 3 x 10.486 us, for at most 15 sources (radix 16 less one).
		{"2-tier 100G", fabricCase{2, 1, 16, "2MB"}, "kind: ib", 40791040 * sim.Picosecond, 31457280 * sim.Picosecond, 15},
		{"3-tier 100G", fabricCase{3, 1, 8, "4MB"}, "kind: ib", 66429440 * sim.Picosecond, 52428800 * sim.Picosecond, 7},
		{"written", fabricCase{2, 1, 16, "2MB"}, "kind: ib, ib: {out_of_order: {hold: 100us}}", 100 * sim.Microsecond, 0, 0},
		{"written fan-in", fabricCase{2, 1, 16, "2MB"}, "kind: ib, ib: {out_of_order: {hold_per_fan_in: 5us, fan_in_max: 4}}", 40791040 * sim.Picosecond, 5 * sim.Microsecond, 4},
		{"credits off", fabricCase{2, 1, 16, "2MB"}, "kind: ib, ib: {credits: {enabled: false}}", ib.DefaultReorderHold, 0, 15},
	} {
		y := permYAML(c.f, c.ib, true, 1, "")
		sc, err := scenario.Parse([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		o := sc.Transport.Block().(*ib.Config).OutOfOrder
		got := o.Hold
		if got != c.want || o.HoldPerFanIn != c.per || o.FanInMax != c.most {
			t.Errorf("%s: hold %v, per fan-in %v, fan-in max %d; want %v, %v, %d", c.name, got, o.HoldPerFanIn, o.FanInMax, c.want, c.per, c.most)
		}
		out, err := scenario.Encode(sc)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), "hold: "+got.String()) {
			t.Errorf("%s: resolved scenario does not show hold %v:\n%s", c.name, got, out)
		}
		again, err := scenario.Parse(out)
		if err != nil {
			t.Fatal(err)
		}
		if a := again.Transport.Block().(*ib.Config).OutOfOrder; a != o {
			t.Errorf("%s: re-resolved %+v, want %+v", c.name, a, o)
		}
	}
}

// arIncastYAML is incastYAML's k -> 1 incast (3-tier k=16, 1,024 hosts, 1 us hops) at host
// link rate rate with adaptive routing on (out-of-order placement then on, at the
// automatic hold unless ib gives one).
func arIncastYAML(k int, rate, ib string) string {
	y := strings.Replace(incastYAML(k), "host_link: 100Gbps", "host_link: "+rate, 1)
	y = strings.Replace(y, "transport: {kind: ib}", "fabric: {adaptive_routing: {enabled: true}}\ntransport: {kind: ib"+ib+"}", 1)
	return y
}

// TestAutoHoldNoSpuriousNAK: the automatic hold never NAKs a hole that reordering alone
// opened on incasts under adaptive routing (8, 64 and 255 -> 1 at 100G and 800G): no
// retransmission, no drop, every transfer done; as on the permutations of
// TestPermutationAdaptive and TestPermutationAdaptiveRates, which assert no retransmission
// at the (automatic) default. 255 -> 1 at 100G was the exception before the hold grew with
// the responder's fan-in (docs/protocols.md, "Automatic out-of-order hold"): its congestion
// tree drains 25.5 MB through one 100G port for 2 ms, and two packets of one QP on parallel
// paths differ by up to about 250 us, more than the fixed 66.4 us base hold.
func TestAutoHoldNoSpuriousNAK(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	for _, c := range []struct {
		k      int
		rate   string
		strict bool
	}{{8, "100Gbps", true}, {64, "100Gbps", true}, {8, "800Gbps", true}, {64, "800Gbps", true}, {255, "800Gbps", true}, {255, "100Gbps", true}} {
		t.Run(fmt.Sprintf("%d->1/%s", c.k, c.rate), func(t *testing.T) {
			y := arIncastYAML(c.k, c.rate, "")
			res := run(t, y)
			tr := res.Summary.Transport
			t.Logf("hold %v: retx %d, drops %d, JCT %.1f us", resolvedIB(t, y).OutOfOrder.Hold, tr.RetxPackets, res.Summary.DroppedPackets, tr.JCTUs)
			if tr.FlowsCompleted != c.k || res.Summary.DroppedPackets != 0 || tr.QPErrors != 0 {
				t.Fatalf("completed %d of %d, drops %d, QP errors %d", tr.FlowsCompleted, c.k, res.Summary.DroppedPackets, tr.QPErrors)
			}
			if c.strict && tr.RetxPackets != 0 {
				t.Errorf("%d packets resent: the hold NAKed reordering", tr.RetxPackets)
			}
		})
	}
}

// arIncast2YAML is a k -> 1 incast of bytes each on the 2-tier radix-16 tree (128 hosts,
// 100G, 1 us hops), senders 1..k, adaptive routing on, transport.ib plus ib.
func arIncast2YAML(k int, bytes, ib string) string {
	var s []string
	for i := 1; i <= k; i++ {
		s = append(s, fmt.Sprint(i))
	}
	return fmt.Sprintf(`name: ib-ar-incast-%d
topology:
  clos: {tiers: 2, planes: 1, radix: 16, host_link: 100Gbps, hop_latency: 1us}
fabric: {adaptive_routing: {enabled: true}}
transport: {kind: ib%s}
traffic:
  - {pattern: incast, receiver: 0, bytes: %s, senders: [%s]}
run: {seed: 1}
`, k, ib, bytes, strings.Join(s, ", "))
}

// TestARIncastNoResend: a lossless incast under adaptive routing resends nothing at the
// automatic hold, which grows with the responder's fan-in (hold_per_fan_in per source up to
// fan_in_max): 16, 32, 64 and 127 -> 1 of 256 KiB on 128 hosts, no drop, no NAK, no resend,
// every transfer done, and out_of_order_received counting the packets AR reordered (placed
// out of order). The contrast is the hold fixed at the base automatic one (40.79 us, written):
// 64 -> 1, the smallest 256 KiB incast that NAKs there, goes back N on reordering alone.
func TestARIncastNoResend(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	for _, k := range []int{16, 32, 64, 127} {
		t.Run(fmt.Sprintf("%d->1", k), func(t *testing.T) {
			res := run(t, arIncast2YAML(k, "256KiB", ""))
			tr := res.Summary.Transport
			d, ok := tr.Detail.(*ibnic.Detail)
			if !ok || d.Detail == nil {
				t.Fatalf("detail %T, want *ibnic.Detail", tr.Detail)
			}
			t.Logf("retx %d, NAKs %d, drops %d, placed out of order %d, JCT %.1f us", tr.RetxPackets, d.NAKs, res.Summary.DroppedPackets, d.OutOfOrderRecv, tr.JCTUs)
			if tr.FlowsCompleted != k || res.Summary.DroppedPackets != 0 || tr.QPErrors != 0 {
				t.Fatalf("completed %d of %d, drops %d, QP errors %d", tr.FlowsCompleted, k, res.Summary.DroppedPackets, tr.QPErrors)
			}
			if tr.RetxPackets != 0 || d.NAKs != 0 {
				t.Errorf("%d packets resent after %d NAKs: the hold NAKed reordering", tr.RetxPackets, d.NAKs)
			}
			if k >= 32 && d.OutOfOrderRecv == 0 {
				t.Errorf("out_of_order_received 0: AR reordered nothing?")
			}
		})
	}
	fixed := run(t, arIncast2YAML(64, "256KiB", ", ib: {out_of_order: {hold: 40.79104us}}")).Summary.Transport
	t.Logf("fixed hold 40.79 us: retx %d", fixed.RetxPackets)
	if fixed.RetxPackets == 0 {
		t.Errorf("fixed hold: no resend; the contrast no longer shows what the fan-in term fixes")
	}
}
