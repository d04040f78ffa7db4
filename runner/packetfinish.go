package runner

import (
	"fmt"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
)

// finishTransport ends a workload that ran over a packet-level transport (m or rn, the other
// nil) at end: it stops the sampler and the engines, drains the fabric for run.drain, checks
// packet conservation, and fills res.Summary with the fabric and transport figures. Errors: a
// failed drain or audit.
func finishTransport(sc *scenario.Scenario, res *Result, m *mrcNet, rn *roceNet, smp *sampler, end sim.Time) error {
	s, net := res.Sim, res.Net
	smp.until = end
	snap := snapshot(net)
	smp.links.finish(s.Now())
	flows := 0
	if m != nil {
		res.MRC.DoneAt = end
		m.quiesce()
		flows = len(m.flows)
	} else {
		res.RoCE.DoneAt = end
		rn.quiesce()
		flows = len(rn.qps)
	}
	if err := s.Drain(end + sc.Run.Drain); err != nil {
		return fmt.Errorf("run stopped during drain at %v: %w", s.Now(), err)
	}
	if err := net.Audit(); err != nil {
		return err
	}
	if left := net.InFlight(); left > 0 {
		return notDrained(net, left, sc.Run.Drain)
	}
	res.Summary = summarise(sc, net, flows, smp, snap, end)
	res.progress, res.trafficEnd = smp.progress, end
	if m != nil {
		res.Summary.MRC = m.summary(end, res.Faults)
		res.lossAt, res.errAt = m.lossAt, m.errAt
		mrcGoodput(&res.Summary, m, end)
	} else {
		res.Summary.RoCE = rn.summary(end, res.Faults)
		res.Summary.PFC = pfcSummary(sc, net, end)
		res.lossAt, res.errAt = rn.lossAt, rn.errAt
		roceGoodput(&res.Summary, rn, end)
	}
	return nil
}
