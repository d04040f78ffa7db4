package runner

import (
	"fmt"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
)

// finishTransport ends a workload that ran over the packet-level transport ep at end: it
// stops the sampler and the engines, drains the fabric for run.drain, checks packet
// conservation, and fills res.Summary with the fabric and transport figures; a fabric left
// with packets inside is recorded in res (a failed run). Errors: a failed drain or audit.
func finishTransport(sc *scenario.Scenario, res *Result, ep transport.Endpoint, smp *sampler, end sim.Time) error {
	s, net := res.Sim, res.Net
	smp.until = end
	snap := snapshot(net)
	smp.links.finish(s.Now())
	res.DoneAt = end
	ep.Quiesce()
	if err := s.Drain(end + sc.Run.Drain); err != nil {
		return fmt.Errorf("run stopped during drain at %v: %w", s.Now(), err)
	}
	if err := net.Audit(); err != nil {
		return err
	}
	if left := net.InFlight(); left > 0 {
		res.undrained = notDrained(net, left, sc.Run.Drain) // a failed run (markNotDrained)
	}
	endpointSummary(sc, res, ep, smp, snap, end)
	res.progress, res.trafficEnd = smp.progress, end
	return nil
}
