package ibnic_test

import (
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// TestLinkDownLossless [issue 19: "with one T0-T1 link down, traffic moves within 10 us and
// no packet is lost"], table-driven over a 2-tier tree, a 2-plane one and a 3-tier one (a
// T0-T1 and a T1-T2 link): the permutation of the adaptive routing sweep under InfiniBand
// with adaptive routing, the link failing at 50 us and staying down. With the detours on the
// escape VL (fabric/adaptive_detour.go) and the queue rescue:
//   - the switches drop nothing (summary adaptive_routing.dropped_by_switches_packets 0, no
//     dead end): the only packets lost are those on the failed wire (or being serialised
//     onto it), at most its bandwidth-delay product both ways plus one packet each way;
//   - nothing is dropped after failure + 10 us (the traffic is off the dead link by then:
//     a dead port leaves the adaptive choice at once);
//   - every transfer completes with no QP error, the wire's losses recovered by the
//     transport (out-of-order placement's hole timer NAKs them).
func TestLinkDownLossless(t *testing.T) {
	const fail, within = 50 * sim.Microsecond, 10 * sim.Microsecond
	for _, c := range []struct {
		name string
		f    fabricCase
		link string
		long bool
	}{
		{"2-tier", fabricCase{2, 1, 16, "2MB"}, "p0.t0-0.up0", false},
		{"2-tier/2-plane", fabricCase{2, 2, 16, "4MB"}, "p0.t0-0.up0", false},
		{"3-tier/T0-T1", fabricCase{3, 1, 8, "4MB"}, "p0.t0-0.up0", true},
		{"3-tier/T1-T2", fabricCase{3, 1, 8, "4MB"}, "p0.t1-0.up0", true},
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
			t.Logf("drops %d (%d by %.1f us): dropped by switches %d, lost on the wire %d (%d B, bound %d B); detours %d (escape VL %d), rescued %d, dead ends %d; notifications %d; done %d of 128, retx %d, QP errors %d, JCT %.1f us",
				d, dc, float64(cut.Sim.Now())/1e6, a.DroppedBySwitches, st.LostInFlight, st.LostInFlightB, bdpBytes, st.Detours, st.Turns, st.Rescued, st.DeadEnds, st.Notices, tr.FlowsCompleted, tr.RetxPackets, tr.QPErrors, tr.JCTUs)
			if a == nil || a.DroppedBySwitches != 0 || st.DeadEnds != 0 || st.LostQueued != 0 {
				t.Errorf("switch drops: summary %+v, dead ends %d, lost queued %d; want none", a, st.DeadEnds, st.LostQueued)
			}
			if d != st.LostInFlight || st.LostInFlightB > bdpBytes || full.Net.C.Dropped[fabric.DropLinkDown] != d {
				t.Errorf("drops %d (%v); want only the wire's: %d packets, %d B (bound %d B)", d, full.Summary.Drops, st.LostInFlight, st.LostInFlightB, bdpBytes)
			}
			if d != dc {
				t.Errorf("%d packets dropped after %v", d-dc, fail+within)
			}
			if tr.FlowsCompleted != 128 || tr.QPErrors != 0 {
				t.Errorf("completed %d of 128, QP errors %d", tr.FlowsCompleted, tr.QPErrors)
			}
		})
	}
}
