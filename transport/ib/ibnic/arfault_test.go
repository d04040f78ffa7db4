package ibnic_test

import (
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/sim"
)

// linkDownYAML is the 2-tier permutation of the sweep with T0-T1 link p0.t0-0.up0 failing at
// 50 us and staying down.
func linkDownYAML(ar bool) string {
	return permYAML(fabricCase{2, 1, 16, "2MB"}, "kind: ib", ar, 1, "faults: [{at: 50us, link: p0.t0-0.up0, action: down}]\n")
}

// stoppedAt runs y and stops it at the first interrupt check at or after at (the kernel
// checks every few thousand events: well under 1 us here).
func stoppedAt(t *testing.T, y string, at sim.Time) *runner.Result {
	t.Helper()
	intr := &runner.Interrupt{}
	return parseRun(t, y, runner.Options{Interrupt: intr, ProgressEvents: 256, Progress: func(p runner.Progress) {
		if p.Phase == "run" && p.Now >= at {
			intr.Request("test")
		}
	}})
}

// deadLinkDrops counts the packets lost toward the failed link: dropped at either end's
// egress (queued, on the wire, or offered while it is down) and, with adaptive routing,
// dropped at a switch whose every port toward the destination was down (a dead end).
func deadLinkDrops(r *runner.Result) (atPorts, deadEnds int64) {
	for i := range r.Net.Ports {
		if n := r.Net.Ports[i].Name; n == "p0.t0-0.up0" || n == "p0.t1-0.down0" {
			atPorts += r.Net.Ports[i].Totals().Drops[fabric.DropLinkDown]
		}
	}
	for i := range r.Net.Nodes {
		deadEnds += r.Net.Nodes[i].Drops[fabric.DropLinkDown]
	}
	return
}

// TestLinkDownAdaptive [issue 19: "with one T0-T1 link down, traffic moves within 10 us and
// no packet is lost"]: a T0-T1 link of the 2-tier permutation fails at 50 us. With adaptive
// routing and SHIELD-style fast recovery:
//   - nothing is dropped after 60 us (nor after the failure + notify_delay + one hop): the T0
//     moves at once, the T1's upstream switches stop after the fault notification and move
//     what they had queued for the dead end elsewhere;
//   - no packet is lost from a queue that had another minimal port: the dead T0 egress's queue
//     is forwarded over the T0's other uplinks (queue_rescued_packets > 0, lost_queued 0);
//   - the packets lost on the wire are at most the link's bandwidth-delay product (both
//     directions, plus the packet being serialised in each);
//   - the only other losses would be the far T1's dead ends before its notification took
//     effect (its queue toward the T0 and what arrived in the notify_delay); with detours on
//     an escape VL (fabric/adaptive_detour.go, the default) there are none
//     (TestLinkDownLossless);
//
// credits keep everything else lossless (no drop of another reason), every transfer completes
// with no QP error, and summary.json's adaptive_routing block carries the same counts. With
// static routing the T0 keeps hashing flows onto the dead link until the subnet manager's
// sweep (fabric.reconvergence, 1 s): its drops grow after 60 us.
func TestLinkDownAdaptive(t *testing.T) {
	const fail, within = 50 * sim.Microsecond, 10 * sim.Microsecond
	y := linkDownYAML(true)
	full := run(t, y)
	cut := stoppedAt(t, y, fail+within)
	settle := fail + fabric.DefaultNotifyDelay + 2*sim.Microsecond // notify + one hop (1 us + a packet's serialisation)
	early := stoppedAt(t, y, settle)
	tr := full.Summary.Transport
	cp, cd := deadLinkDrops(cut)
	fp, fd := deadLinkDrops(full)
	st := full.Net.AdaptiveStats()
	// The link's bandwidth-delay product, both directions, plus one packet being serialised
	// in each: the most that can be on it when it fails.
	pid, _ := full.Net.PortByName("p0.t0-0.up0")
	lk := &full.Net.Ports[pid]
	const mtuWire = 4096 + 64 // IB MTU plus headers, an upper bound of a data packet
	bdpBytes := 2 * (lk.Rate.BytesIn(lk.Delay) + mtuWire)
	bdpPackets := 2 * (lk.Rate.BytesIn(lk.Delay)/mtuWire + 2)
	var flushed int64
	for _, nm := range []string{"p0.t0-0.up0", "p0.t1-0.down0"} {
		id, _ := full.Net.PortByName(nm)
		flushed += full.Net.Ports[id].Totals().Flushed
	}
	t.Logf("AR: drops by %.1f us %d, by %.1f us %d, whole run %d (%d at the dead link's egresses, %d dead ends; %v); lost in flight %d (%d B; BDP %d B, %d full packets), queued-and-lost %d, dead ends %d (%d from the T1's queue), rescued %d of %d taken off the dead queues; done %d of 128, retx %d, QP errors %d, JCT %.1f us; AR %+v",
		float64(early.Sim.Now())/1e6, early.Net.C.DroppedTotal(), float64(cut.Sim.Now())/1e6, cut.Net.C.DroppedTotal(), full.Net.C.DroppedTotal(),
		fp, fd, full.Summary.Drops, st.LostInFlight, st.LostInFlightB, bdpBytes, bdpPackets, st.LostQueued, st.DeadEnds, st.QueuedDeadEnds,
		st.Rescued, flushed, tr.FlowsCompleted, tr.RetxPackets, tr.QPErrors, tr.JCTUs, st)
	if cut.Sim.Now() < fail+within || cut.Sim.Now() > fail+within+sim.Microsecond {
		t.Fatalf("stopped at %v; want just after %v", cut.Sim.Now(), fail+within)
	}
	if d := full.Net.C.DroppedTotal() - cut.Net.C.DroppedTotal(); d != 0 || fp != cp || fd != cd {
		t.Errorf("%d packets dropped after %v (%d at the dead link, %d dead ends)", d, fail+within, fp-cp, fd-cd)
	}
	if d := full.Net.C.DroppedTotal() - early.Net.C.DroppedTotal(); d != 0 {
		t.Errorf("%d packets dropped after the failure + notify_delay + one hop (%v)", d, early.Sim.Now())
	}
	if d := full.Summary.DroppedPackets; d != fp+fd || full.Net.C.Dropped[fabric.DropLinkDown] != d || d != st.LostInFlight+st.LostQueued+st.DeadEnds {
		t.Errorf("drops %d (%v); want only the dead link's %d + %d dead ends = in flight %d + queued %d + no route %d", d, full.Summary.Drops, fp, fd, st.LostInFlight, st.LostQueued, st.DeadEnds)
	}
	if st.LostQueued != 0 || st.Rescued == 0 || st.Rescued+st.QueuedDeadEnds < flushed {
		t.Errorf("queued at the dead egresses: %d taken off, %d rescued, %d dead ends, %d lost; want the T0's queue rescued, none lost", flushed, st.Rescued, st.QueuedDeadEnds, st.LostQueued)
	}
	if st.LostInFlight == 0 || st.LostInFlightB > bdpBytes || st.LostInFlight > bdpPackets+int64(bdpBytes/64) {
		t.Errorf("lost in flight %d packets, %d B; want 1.. the link's BDP, %d B", st.LostInFlight, st.LostInFlightB, bdpBytes)
	}
	if tr.FlowsCompleted != 128 || tr.QPErrors != 0 {
		t.Errorf("completed %d of 128, QP errors %d", tr.FlowsCompleted, tr.QPErrors)
	}
	if st.Rerouted == 0 || st.Notices == 0 || st.NotifySent < st.Notices {
		t.Errorf("AR stats %+v: want reroutes and fault notifications", st)
	}
	if a := full.Summary.Adaptive; a == nil || a.QueueRescued != st.Rescued || a.LostInFlight != st.LostInFlight || a.NoRoute != st.DeadEnds || a.NotificationsSent != st.NotifySent {
		t.Errorf("summary adaptive_routing %+v; want the fabric's %+v", a, st)
	}
	// Static routing, for contrast: the hashed flows keep going to the dead link.
	s := linkDownYAML(false)
	a, b := stoppedAt(t, s, fail+within), stoppedAt(t, s, fail+4*within)
	ap, _ := deadLinkDrops(a)
	bp, _ := deadLinkDrops(b)
	t.Logf("static: %d dropped at the dead link's egresses by %.1f us, %d by %.1f us", ap, float64(a.Sim.Now())/1e6, bp, float64(b.Sim.Now())/1e6)
	if bp <= ap {
		t.Errorf("static routing: drops at the dead link %d then %d; want them to grow (ECMP keeps using it)", ap, bp)
	}
}

// TestLinkDownAdaptive3Tier: the same acceptance over the 3-tier radix-8 permutation (4 MB),
// for a T0-T1 and a T1-T2 link failing at 50 us. Three tiers need the notification to climb:
// the T2s whose only way down to the pod was the dead T1 pass it on to their own upstream
// (fabric arCascade). Nothing is dropped after 60 us, nothing queued is lost, every transfer
// completes.
func TestLinkDownAdaptive3Tier(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	const fail, within = 50 * sim.Microsecond, 10 * sim.Microsecond
	for _, link := range []string{"p0.t0-0.up0", "p0.t1-0.up0"} {
		t.Run(link, func(t *testing.T) {
			y := permYAML(fabricCase{3, 1, 8, "4MB"}, "kind: ib", true, 1, "faults: [{at: 50us, link: "+link+", action: down}]\n")
			full := run(t, y)
			cut := stoppedAt(t, y, fail+within)
			st, tr := full.Net.AdaptiveStats(), full.Summary.Transport
			d, dc := full.Net.C.DroppedTotal(), cut.Net.C.DroppedTotal()
			t.Logf("drops by %.1f us %d, whole run %d: in flight %d (%d B), queued %d, no route %d (%d from a queue); rescued %d; notifications %d; done %d of 128, retx %d, JCT %.1f us",
				float64(cut.Sim.Now())/1e6, dc, d, st.LostInFlight, st.LostInFlightB, st.LostQueued, st.DeadEnds, st.QueuedDeadEnds, st.Rescued, st.Notices, tr.FlowsCompleted, tr.RetxPackets, tr.JCTUs)
			if d != dc {
				t.Errorf("%d packets dropped after %v", d-dc, fail+within)
			}
			if d != st.LostInFlight+st.LostQueued+st.DeadEnds || st.LostQueued != 0 {
				t.Errorf("drops %d (%v); want in flight %d + no route %d, none queued (%d)", d, full.Summary.Drops, st.LostInFlight, st.DeadEnds, st.LostQueued)
			}
			if tr.FlowsCompleted != 128 || tr.QPErrors != 0 {
				t.Errorf("completed %d of 128, QP errors %d", tr.FlowsCompleted, tr.QPErrors)
			}
		})
	}
}

// TestFlowLevelARFastRecovery [issue 19: fast link fault recovery, at flow level]: under
// fabric.adaptive_routing the switches move traffic off a dead T0-T1 link within
// notify_delay (SHIELD; 2 us by default), not after the subnet manager's sweep
// (fabric.reconvergence, 1 s). At run.engine flow a QP kept on one hashed path (IB with
// out_of_order off, so no per-plane spreading) that crossed p0.t0-0.up0 when it failed at 50
// us moves 2 us later: all 128 transfers finish and the fault row's reaction is 2.0 us. It
// used to wait out fabric.reconvergence plus its local ACK timeout (about 1.07 s), beyond the
// automatic run.duration: 127 of 128 done. Without adaptive routing it still waits (the
// static case is unchanged).
func TestFlowLevelARFastRecovery(t *testing.T) {
	y := func(ar bool) string {
		return strings.Replace(permYAML(fabricCase{2, 1, 16, "2MB"}, "kind: ib, ib: {out_of_order: {enabled: false}}", ar, 1,
			"faults: [{at: 50us, link: p0.t0-0.up0, action: down}]\n"), "run: {seed: 1}", "run: {seed: 1, engine: flow}", 1)
	}
	res := run(t, y(true))
	tr := res.Summary.Transport
	if tr.FlowsCompleted != 128 || len(res.Summary.Faults) != 1 {
		t.Fatalf("AR: %d of 128 done, %d fault rows; want 128 and 1", tr.FlowsCompleted, len(res.Summary.Faults))
	}
	f := res.Summary.Faults[0]
	if f.DetectUs == nil || math.Abs(*f.DetectUs-2) > 1e-6 {
		t.Errorf("AR: reaction %v us after the failure; want notify_delay, 2 us", f.DetectUs)
	}
	t.Logf("AR: JCT %.1f us, reaction %.1f us", tr.JCTUs, *f.DetectUs)
	static := run(t, y(false)).Summary
	if st := static.Transport; !static.Failed || st.FlowsCompleted != 127 {
		t.Errorf("static routing: failed %v, %d of 128 done; want the stalled QP to wait for reconvergence (127 done)", static.Failed, st.FlowsCompleted)
	}
}
