package runner

import (
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/transport"
)

// TestMarkOutcome: a transport run fails on QP errors unless run.allow_qp_errors, and on
// unfinished transfers beyond one per errored QP even when QP errors are allowed (a sender
// stuck without ever erroring is a failure, not part of the failure study).
func TestMarkOutcome(t *testing.T) {
	for _, c := range []struct {
		name                string
		flows, done, errs   int
		allow, fail         bool
		reason, notInReason string
	}{
		{"clean", 4, 4, 0, false, false, "", ""},
		{"unfinished", 4, 3, 0, false, true, "1 of 4", ""},
		{"qp error", 4, 3, 1, false, true, "QP(s) errored", ""},
		{"qp error allowed strands its own", 4, 3, 1, true, false, "", ""},
		{"allowed, one more stuck without an error", 4, 2, 1, true, true, "1 of 4", "errored"},
		{"allowed, two errored two unfinished", 4, 2, 2, true, false, "", ""},
		{"allowed, more errors than unfinished", 8, 7, 3, true, false, "", ""},
	} {
		sc := &scenario.Scenario{}
		sc.Run.AllowQPErrors = c.allow
		s := &Summary{Transport: &transport.Summary{Kind: "uec", Name: "UEC", Flows: c.flows, FlowsCompleted: c.done, QPErrors: c.errs}}
		markOutcome(sc, s)
		if s.Failed != c.fail || !strings.Contains(s.FailureReason, c.reason) || c.notInReason != "" && strings.Contains(s.FailureReason, c.notInReason) {
			t.Errorf("%s: failed %v, reason %q; want failed %v with %q", c.name, s.Failed, s.FailureReason, c.fail, c.reason)
		}
	}
}
