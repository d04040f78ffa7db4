package runner

import (
	"fmt"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// A failure that dropped no packet is credited with loss-driven retransmissions (detect,
// last retx, loss_retx_events) only until LosslessReactionWindow past its end: a hole NAKed
// milliseconds later is not its detection (/tmp/s39/f8/coll3.yaml: a 20 us outage on IB with
// 8 KiB credit buffers read "detect 5241.5 us" for a spurious hole-timer NAK 5.2 ms later).
// A failure that dropped packets keeps every retransmission until the next failure or the
// end (a tail loss waits the RTO), and QP errors always count to the next failure or the end.
func TestFaultCostLosslessDetectWindow(t *testing.T) {
	us := func(x float64) sim.Time { return sim.Time(x * float64(sim.Microsecond)) }
	w := float64(LosslessReactionWindow) / float64(sim.Microsecond)
	for _, c := range []struct {
		name          string
		forUs         float64 // the outage
		drops         int64   // failure drops from its start to the end of the traffic
		retxUs        []float64
		errUs         []float64
		detect, lastR float64 // -1: absent
		events, qpErr int
	}{
		{"lossless, retx long after", 20, 0, []float64{5271.5}, nil, -1, -1, 0, 0},
		{"lossless, retx while down", 20, 0, []float64{40, 5271.5}, nil, 10, 10, 1, 0},
		{"lossless, retx inside the window", 20, 0, []float64{50 + w - 1}, nil, 20 + w - 1, 20 + w - 1, 1, 0},
		{"lossless, retx at the window's end", 20, 0, []float64{50 + w}, nil, -1, -1, 0, 0},
		{"lossless, 1 ns outage, retx 5 ms later", 0.001, 0, []float64{5030}, nil, -1, -1, 0, 0},
		{"lossless, QP error late still counts", 20, 0, []float64{5271.5}, []float64{6000}, -1, -1, 0, 1},
		{"dropped, retx long after", 20, 3, []float64{5271.5}, nil, 5241.5, 5241.5, 1, 0},
		{"dropped, retx while down and long after", 200, 1, []float64{60, 1200}, nil, 30, 1170, 2, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			evs := []FaultEvent{
				{At: us(30), Action: "down", Cause: "down", Target: "p1.t0-0.up1", applied: true},
				{At: us(30 + c.forUs), Action: "up", Cause: "down", Target: "p1.t0-0.up1", Restore: true, applied: true},
			}
			net := &fabric.Network{}
			net.C.Dropped[fabric.DropLinkDown] = c.drops
			var loss, errs []sim.Time
			for _, x := range c.retxUs {
				loss = append(loss, us(x))
			}
			for _, x := range c.errUs {
				errs = append(errs, us(x))
			}
			rows := faultCosts(net, evs, []string{"p1.t0-0.up1"}, nil, nil, loss, errs, us(7703.2), 0)
			if len(rows) != 1 {
				t.Fatalf("%d rows; want 1", len(rows))
			}
			f := rows[0]
			got := func(p *float64) float64 {
				if p == nil {
					return -1
				}
				return *p
			}
			near := func(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }
			if !near(got(f.DetectUs), c.detect) || !near(got(f.LastRetxUs), c.lastR) || f.LossRetxEvents != c.events || f.QPErrors != c.qpErr {
				t.Errorf("detect %v, last retx %v, %d retx events, %d QP errors; want %v, %v, %d, %d",
					got(f.DetectUs), got(f.LastRetxUs), f.LossRetxEvents, f.QPErrors, c.detect, c.lastR, c.events, c.qpErr)
			}
		})
	}
}

// TestFaultOnIdlePlaneCostsNothing: a link of plane 1 that carries no packet fails and comes
// back (1 ns to 100 us) while an all-to-all runs on plane 0, InfiniBand with 8 KiB credit
// buffers and adaptive routing: nothing is dropped or resent, and the run is its faultless
// twin to the picosecond (fault_slowdown_us 0, recover 0, goodput fraction 1). On main the
// AR fault notifications drew their tiebreak keys from the shared sequence, shifting every
// later event's key, and the "slowdown" was -8.0, +9.7 and +1.3 us for seeds 1..3 (at
// 4 MiB, /tmp/s39/f8/coll3.yaml, +1968.8 us).
func TestFaultOnIdlePlaneCostsNothing(t *testing.T) {
	const y = `
name: idle-plane
topology: {clos: {tiers: 2, planes: 2, radix: 8, hosts: 16, host_link: 100G}}
fabric: {adaptive_routing: {enabled: true}}
transport: {kind: ib, ib: {cc: {enabled: false}, credits: {buffer_per_vl: 8KiB}}}
workload:
  collectives:
    - {op: all_to_all, bytes: 256KiB, name: a2a}
faults:
  - {at: 30us, link: p1.t0-0.up1, action: down, for: %s}
run: {seed: %d}
`
	for _, outage := range []string{"1ns", "5us", "20us", "100us"} {
		for seed := 1; seed <= 3; seed++ {
			res := mustRun(t, fmt.Sprintf(y, outage, seed))
			s := res.Summary
			if len(s.Faults) != 1 {
				t.Fatalf("outage %s seed %d: %d fault rows; want 1", outage, seed, len(s.Faults))
			}
			f := s.Faults[0]
			if s.DroppedPackets != 0 || f.LossRetxEvents != 0 {
				t.Fatalf("outage %s seed %d: %d dropped, %d retransmissions: the fault touched traffic, the test proves nothing", outage, seed, s.DroppedPackets, f.LossRetxEvents)
			}
			if s.FaultBaselineEndUs <= 0 || s.FaultSlowdownUs != 0 || f.RecoverUs == nil || *f.RecoverUs != 0 {
				t.Errorf("outage %s seed %d: slowdown %.3f us (twin %.3f us), recover %v; want the twin exactly (0, 0)",
					outage, seed, s.FaultSlowdownUs, s.FaultBaselineEndUs, f.RecoverUs)
			}
		}
	}
}
