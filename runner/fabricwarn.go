package runner

import (
	"fmt"
	"strings"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/topo"
)

// preRunChecks runs the transport's pre-run checks (transportChecks: an error rejects the
// scenario) and returns their warnings followed by the fabric's own (fabricWarnings).
func preRunChecks(sc *scenario.Scenario, layout topo.Topology, res *Result) ([]string, error) {
	w, err := transportChecks(sc, layout, res)
	if err != nil {
		return nil, err
	}
	return append(w, fabricWarnings(sc)...), nil
}

// fabricWarnings lists the fabric settings of the resolved scenario sc that are legal but do
// nothing, for summary.json's warnings and the terminal (as a transport's Check does for its
// own block): fabric.adaptive_routing fields other than enabled given while enabled is
// false (threshold, notify_delay, detour: adaptive routing is off, so nothing reads them);
// sm_delay, which sets fabric.reconvergence and so acts without adaptive routing, draws its
// own warning when given alone with adaptive routing off (scenario.Fabric.SMDelayWithoutAR):
// it is in force though the block it sits in is off, which a reader of the scenario would
// not expect.
func fabricWarnings(sc *scenario.Scenario) []string {
	var out []string
	if a := sc.Fabric.AdaptiveRouting; a != nil && !a.Enabled {
		var set []string
		if a.Threshold != 0 {
			set = append(set, fmt.Sprintf("threshold %v", a.Threshold))
		}
		if a.NotifyDelay != 0 && a.NotifyDelay != fabric.DefaultNotifyDelay {
			set = append(set, fmt.Sprintf("notify_delay %v", a.NotifyDelay))
		}
		if a.Detour != nil {
			set = append(set, fmt.Sprintf("detour %v", *a.Detour))
		}
		if len(set) > 0 {
			out = append(out, fmt.Sprintf("fabric.adaptive_routing: %s given with enabled false: adaptive routing is off, so they do nothing; set fabric.adaptive_routing.enabled: true or leave them out", strings.Join(set, ", ")))
		}
		if sc.Fabric.SMDelayWithoutAR() {
			out = append(out, fmt.Sprintf("fabric.adaptive_routing.sm_delay: %v given with enabled false: it is not an adaptive routing setting but the subnet manager's route recomputation after a link or switch goes down or up, the same delay as fabric.reconvergence, which static routing uses too, so it is in force (fabric.reconvergence %v); write fabric.reconvergence: %v instead, or leave it out for the default %v", a.SMDelay, sc.Fabric.Reconvergence, a.SMDelay, scenario.DefaultReconvergence))
		}
	}
	return out
}
