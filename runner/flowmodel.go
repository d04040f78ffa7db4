package runner

import (
	"fmt"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	_ "github.com/lockstepsim/lockstep/transport/all" // registers every transport (transport.Lookup)
)

// flowModelOf returns the flow-level model of sc's transport on topology t (its plugin's
// Flow over the resolved block: transport.FlowModel) and the plugin's Name for messages.
// A transport with no flow-level model is an *InputError naming it; a model the flow level
// cannot run (a plugin's bug) is an error naming the transport.
func flowModelOf(sc *scenario.Scenario, t topo.Topology) (transport.FlowModel, string, error) {
	m, name, ok, err := lookupFlowModel(sc, t)
	if err == nil && !ok {
		why := ""
		if sc.Workload.Training != nil {
			why = " (run.engine defaults to flow for workload.training)"
		}
		err = &InputError{Err: fmt.Errorf("transport.kind: %s has no flow-level model; use run.engine: packet%s", sc.Transport.Kind, why)}
	}
	return m, name, err
}

// lookupFlowModel is flowModelOf for a caller that can do without a model (the goodput
// model's failure charges, at any engine): ok is false, with no error, when the kind has no
// plugin or its plugin no Flow. name is the plugin's Name, else the kind.
func lookupFlowModel(sc *scenario.Scenario, t topo.Topology) (m transport.FlowModel, name string, ok bool, err error) {
	kind := sc.Transport.Kind
	p, found := transport.Lookup(kind)
	if !found || p.Flow == nil {
		if found {
			return m, p.Name, false, nil
		}
		return m, kind, false, nil
	}
	if m, err = p.Flow(sc.Transport.Block(), t); err != nil {
		return m, p.Name, false, fmt.Errorf("transport %s: flow-level model: %w", kind, err)
	}
	m = adaptiveFlowModel(sc, t, m)
	if err = checkFlowModel(m); err != nil {
		return m, p.Name, false, fmt.Errorf("transport %s: flow-level model: %w", kind, err)
	}
	return m, p.Name, true, nil
}

// checkFlowModel rejects a model the flow level cannot run: negative paths, packet sizes
// that are not positive, a give-up time that is not, or a transport that neither reroutes
// at its endpoints nor retries on a timer (its stalled QPs would never move).
func checkFlowModel(m transport.FlowModel) error {
	switch {
	case m.Paths < 0:
		return fmt.Errorf("Paths %d is negative; want 0 (the default) or more", m.Paths)
	case m.WireBytes <= 0 || m.AckBytes <= 0 || m.HeaderBytes < 0:
		return fmt.Errorf("packet sizes wire %d, ack %d, header %d bytes; want wire and ack > 0, header >= 0", m.WireBytes, m.AckBytes, m.HeaderBytes)
	case m.GiveUp <= 0:
		return fmt.Errorf("GiveUp %v; want > 0 (sim.MaxTime: never)", m.GiveUp)
	case !m.EndpointReroute && m.RTO <= 0:
		return fmt.Errorf("RTO %v without EndpointReroute; want RTO > 0 (a stalled QP retries on its timer) or EndpointReroute", m.RTO)
	case m.EndpointReroute && m.RerouteAfter < 0:
		return fmt.Errorf("RerouteAfter %v; want >= 0", m.RerouteAfter)
	}
	return nil
}
