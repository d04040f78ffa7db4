package ibnic_test

import (
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
// routing no packet is offered to the dead link after 60 us (its two egresses drop nothing
// more: the T0 moves at once, the T1 side's upstream switches stop after the fault
// notification), the losses are the packets on the link and queued at its ends at the
// failure plus the T1's dead ends before its notification reached upstream, credits keep
// everything else lossless (no drop of another reason), and every transfer completes with
// no QP error (out-of-order placement NAKs the holes). With static routing the T0 keeps
// hashing flows onto the dead link until the subnet manager's sweep (fabric.reconvergence,
// 1 s): its drops grow after 60 us.
func TestLinkDownAdaptive(t *testing.T) {
	const fail, within = 50 * sim.Microsecond, 10 * sim.Microsecond
	y := linkDownYAML(true)
	full := run(t, y)
	cut := stoppedAt(t, y, fail+within)
	tr := full.Summary.Transport
	cp, cd := deadLinkDrops(cut)
	fp, fd := deadLinkDrops(full)
	t.Logf("AR: by %.1f us: %d dropped at the dead link's egresses, %d dead ends; whole run: %d and %d (drops %v); done %d of 128, retx %d, QP errors %d, JCT %.1f us; AR %+v",
		float64(cut.Sim.Now())/1e6, cp, cd, fp, fd, full.Summary.Drops, tr.FlowsCompleted, tr.RetxPackets, tr.QPErrors, tr.JCTUs, full.Net.AdaptiveStats())
	if cut.Sim.Now() < fail+within || cut.Sim.Now() > fail+within+sim.Microsecond {
		t.Fatalf("stopped at %v; want just after %v", cut.Sim.Now(), fail+within)
	}
	if fp != cp {
		t.Errorf("%d packets offered to the dead link after %v", fp-cp, fail+within)
	}
	if d := full.Summary.DroppedPackets; d != fp+fd || full.Net.C.Dropped[fabric.DropLinkDown] != d {
		t.Errorf("drops %d (%v); want only the dead link's %d + %d dead ends", d, full.Summary.Drops, fp, fd)
	}
	if tr.FlowsCompleted != 128 || tr.QPErrors != 0 {
		t.Errorf("completed %d of 128, QP errors %d", tr.FlowsCompleted, tr.QPErrors)
	}
	if st := full.Net.AdaptiveStats(); st.Rerouted == 0 || st.Notices == 0 {
		t.Errorf("AR stats %+v: want reroutes and fault notifications", st)
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
