package runner

import (
	"fmt"
	"strings"

	"github.com/lockstepsim/lockstep/scenario"
)

// markOutcome decides whether a finished run failed and why, into s.Failed and
// s.FailureReason: a transport run fails when a QP errored (unless run.allow_qp_errors) or a
// transfer never finished (with QP errors allowed, beyond one per errored QP: an errored QP
// strands its own transfer, and the others are stuck for some other reason). A collective not done when the run ends (Result.stall) fails it
// too, in run, with the waiting ranks first in the reason. The CLI prints the reason in the
// headline and exits 1.
func markOutcome(sc *scenario.Scenario, s *Summary) {
	c := s.Transport
	if c == nil {
		return
	}
	kind, flows, done, errs, list := c.Name, c.Flows, c.FlowsCompleted, c.QPErrors, c.QPErrorList
	allow := sc.Run.AllowQPErrors
	s.QPErrorsAllowed = allow && errs > 0
	s.UnboundedFlows = unboundedFlows(sc)
	var why []string
	if errs > 0 && !allow {
		first := ""
		if len(list) > 0 {
			first = ", the first: " + list[0]
		}
		why = append(why, fmt.Sprintf("%d %s QP(s) errored%s (run.allow_qp_errors: true accepts QP errors for failure studies)", errs, kind, first))
	}
	left := flows - done - s.UnboundedFlows
	if allow {
		// An errored QP strands at most its own transfer: the unfinished beyond one per
		// errored QP are stuck for another reason (a sender that never errored).
		left -= min(left, errs)
	}
	if left > 0 {
		what := "transfers"
		if len(s.Collectives) > 0 {
			what = "QPs with messages"
		}
		r := fmt.Sprintf("%d of %d %s %s not finished when the run stopped at %.1f us (run.duration %v, run.drain %v)",
			left, flows, kind, what, s.EndUs, sc.Run.Duration, sc.Run.Drain)
		if tw := c.TimeoutWait; tw != nil {
			r += ": " + tw.Text()
		}
		why = append(why, r)
	}
	if len(why) > 0 {
		s.Failed, s.FailureReason = true, strings.Join(why, "; ")
	}
}

// unboundedFlows counts sc's unbounded flows (scenario.FlowSpec.Unbounded), which never
// finish by design.
func unboundedFlows(sc *scenario.Scenario) int {
	n := 0
	for i := range sc.Traffic {
		for _, f := range sc.Traffic[i].FlowList() {
			if f.Unbounded() {
				n++
			}
		}
	}
	return n
}
