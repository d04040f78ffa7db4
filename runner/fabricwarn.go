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
// false (threshold, notify_delay, detour: adaptive routing is off, so nothing reads them;
// sm_delay is not among them, since it sets fabric.reconvergence, which acts without
// adaptive routing).
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
	}
	return out
}
