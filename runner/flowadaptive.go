package runner

import (
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/transport"
)

// adaptiveFlowModel is m under sc's fabric.adaptive_routing at flow level [issue 19: "flow
// level gets an IB model (AR as per-packet spreading within minimal paths)"]: a transport
// whose receivers place reordered packets (FlowModel.AdaptiveSpray) has its flows sprayed
// over the minimal paths (Spray, up to DefaultFlowPaths of them: link bundles on a Clos or
// fat tree), as the switches' per-packet least-loaded choice spreads them at packet level;
// other transports, and every transport without adaptive routing, keep m (one ECMP-hashed
// path per QP). The fast fault recovery is not modelled here: links that fail move flows
// after fabric.reconvergence, as without AR.
func adaptiveFlowModel(sc *scenario.Scenario, m transport.FlowModel) transport.FlowModel {
	if a := sc.Fabric.AdaptiveRouting; a == nil || !a.Enabled || !m.AdaptiveSpray || m.Spray {
		return m
	}
	m.Spray, m.Paths = true, 0
	return m
}
