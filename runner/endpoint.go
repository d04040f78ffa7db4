package runner

import (
	"fmt"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	_ "github.com/lockstepsim/lockstep/transport/all" // the shipped transports
)

// plugin returns the registered plugin of sc's transport kind, false for the kinds the
// simulator provides itself (raw, ideal).
func plugin(sc *scenario.Scenario) (*transport.Plugin, bool) {
	return transport.Lookup(sc.Transport.Kind)
}

// queues returns sc's resolved egress queues as the plugins see them: the last hop is the
// switch queue's copy when the scenario (or its profile) set none apart.
func queues(sc *scenario.Scenario) transport.Queues {
	q := transport.Queues{Switch: sc.Fabric.SwitchQueue, LastHop: sc.Fabric.SwitchQueue, NIC: sc.Fabric.NICQueue}
	if sc.Fabric.LastHopQueue != nil {
		q.LastHop, q.LastHopGiven = *sc.Fabric.LastHopQueue, true
	}
	return q
}

// newEndpoint builds the packet-level endpoint of sc's transport over res's fabric and keeps
// it in res.Endpoint. Errors: a transport that cannot carry packets (raw, ideal: the caller
// handles those) or the plugin's own, as *InputError.
func newEndpoint(sc *scenario.Scenario, layout topo.Topology, res *Result) (transport.Endpoint, error) {
	p, ok := plugin(sc)
	if !ok {
		return nil, &InputError{Err: fmt.Errorf("transport.kind: %q has no packet-level endpoint", sc.Transport.Kind)}
	}
	ep, err := p.NewEndpoint(sc.Transport.Block(), transport.EndpointEnv{
		Sim: res.Sim, Net: res.Net, Topology: layout, Queues: queues(sc), Seed: sc.Run.Seed,
	})
	if err != nil {
		return nil, &InputError{Err: fmt.Errorf("transport.%s: %w", sc.Transport.Kind, err)}
	}
	res.Endpoint, res.DoneAt = ep, sim.MaxTime
	return ep, nil
}

// runTransport posts every traffic flow's transfer on sc's transport, runs until all are
// acknowledged (or run.duration), then stops the engines and drains the fabric.
func runTransport(sc *scenario.Scenario, layout topo.Topology, res *Result) error {
	s := res.Sim
	var ep transport.Endpoint
	var err error
	if sc.Fluid() {
		ep, err = newFlowTraffic(sc, layout, res) // run.engine flow: the fluid model (flowtraffic.go)
	} else {
		ep, err = newEndpoint(sc, layout, res)
	}
	if err != nil {
		return err
	}
	xfers, err := postTransfers(sc, ep, layout.NumHosts()) // triggers.go
	if err != nil {
		return err
	}
	smp := newEndpointSampler(sc, res, layout.Params().Planes, ep)
	meterTransfers(sc, res.meter, ep)
	var onDone func(sim.Time)
	sent, placed := xfers.hooks()
	ep.SetHooks(transport.Hooks{
		OnDone: func(now sim.Time) { onDone(now) },
		Halt: func(now sim.Time) {
			smp.until = now
			s.Pause()
		},
		FlowSent: sent, FlowPlaced: placed,
	})
	var end sim.Time
	var snap []portSnap
	if ft, ok := ep.(*flowTraffic); ok {
		end, snap, err = ft.drive(sc, res, smp, &onDone, &res.DoneAt) // no packets to drain
	} else {
		end, snap, err = driveTransport(sc, res, smp, &onDone, &res.DoneAt, ep)
	}
	if err != nil {
		return err
	}
	if err := xfers.check(); err != nil {
		// Flows left waiting on triggers: a failed run, with its results, when the run
		// ended on its own terms (a QP gave up, run.duration, nothing left to happen);
		// else the transport does not report completions, a plugin's bug.
		if _, errs := ep.Outstanding(); errs == 0 && end < sc.Run.Duration && res.stall == "" && !smp.stoppedEarly {
			return err
		}
		res.stall = joinReasons(res.stall, err.Error())
	}
	endpointSummary(sc, res, ep, smp, snap, end)
	if ft, ok := ep.(*flowTraffic); ok {
		// No packet fabric was built: the sizes are the topology's, and there are no
		// packets, queues or per-plane port counters to report.
		sm, hosts := &res.Summary, layout.NumHosts()
		sm.Hosts, sm.Planes, sm.Switches, sm.Links = hosts, layout.Params().Planes, layout.NumNodes()-hosts, layout.NumLinks()
		sm.Engine, sm.PerPlane, sm.PFC = "flow", nil, nil
		if ft.ff != nil && ft.running > 0 {
			// Why the transfers left are stalled: the fault, and when its transport would go on.
			if st := ft.ff.stuck(ft.linkName); st != "" {
				res.stall = joinReasons(res.stall, st)
			}
		}
	}
	res.Summary.FCTBySize = fctBySize(sc, ep.Flows())
	res.progress, res.trafficEnd = smp.progress, end
	return nil
}

// newEndpointSampler makes the queue sampler of a run carried by ep (not yet started): links.csv,
// the goodput series from the payload placed, and the transport's own series (Sample).
func newEndpointSampler(sc *scenario.Scenario, res *Result, planes int, ep transport.Endpoint) *sampler {
	smp := newSampler(res.Sim, res.Net, planes, sc.Run.SampleInterval, sc.Run.Duration)
	res.Links = smp.links
	smp.placed = func() int64 { _, placed, _ := ep.Bytes(); return placed }
	smp.extra = ep.Sample
	return smp
}

// endpointSummary makes res.Summary for a run carried by ep that ended at end (smp and snap
// its sampler and port counters then): the fabric figures (summarise; its flows are the
// transport's QPs or transfers), the transport block, the PFC record, the rate figures, and
// the loss and QP-error times.
func endpointSummary(sc *scenario.Scenario, res *Result, ep transport.Endpoint, smp *sampler, snap []portSnap, end sim.Time) {
	faults := make([]sim.Time, 0, len(res.Faults))
	for _, f := range res.Faults {
		faults = append(faults, f.At)
	}
	ts := ep.Summary(end, faults)
	if ts == nil {
		ts = &transport.Summary{} // a plugin's bug; the run still reports its kind
	}
	if ts.Kind == "" {
		ts.Kind = sc.Transport.Kind
	}
	if p, ok := plugin(sc); ok && ts.Name == "" {
		ts.Name = p.Name
	}
	ts.Warnings = res.warnings
	res.Summary = summarise(sc, res.Net, ts.Flows, smp, snap, end)
	res.Summary.Transport = ts
	res.Summary.PFC = pfcSummary(sc, res.Net, end)
	res.lossAt, res.errAt = ep.Log()
	sent, placed, posted := ep.Bytes()
	rateFigures(&res.Summary, sent, placed, posted, end)
}

// rateFigures fills the generic rate figures of a transport run over [0, end]: data wire
// bytes sent and payload placed per second, and placed over posted payload.
func rateFigures(s *Summary, sent, placed, posted int64, end sim.Time) {
	if secs := end.Seconds(); secs > 0 {
		s.OfferedGbps = round3(float64(sent) * 8 / secs / 1e9)
		s.DeliveredGbps = round3(float64(placed) * 8 / secs / 1e9)
	}
	if posted > 0 {
		s.DeliveredFraction = round3(float64(placed) / float64(posted))
	}
}

// transportChecks runs the plugin's pre-run checks on the built fabric (nil at flow level):
// an error rejects the scenario, warnings are returned.
func transportChecks(sc *scenario.Scenario, layout topo.Topology, res *Result) ([]string, error) {
	p, ok := plugin(sc)
	if !ok || p.Check == nil {
		return nil, nil
	}
	env := transport.CheckEnv{Topology: layout, Queues: queues(sc), Profile: sc.Fabric.Profile, PFC: sc.Fabric.PFC.Config().WithDefaults(),
		Adaptive: sc.Fabric.AdaptiveRouting != nil && sc.Fabric.AdaptiveRouting.Enabled, Faults: len(sc.Faults) > 0}
	if !sc.Fluid() {
		env.Net = res.Net
	}
	w, err := p.Check(sc.Transport.Block(), env)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	return w, nil
}

func us(t sim.Time) float64 { return transport.Us(t) }

// Transfers returns the transport block of the summary, nil for a run without a packet
// transport (raw traffic, a workload on the analytic or flow-level engine).
func (s *Summary) Transfers() *transport.Summary { return s.Transport }

// meterTransfers tells the progress reports of a traffic run carried by ep where it is going:
// the ideal completion of the transfer that ends last (or run.duration, when that comes
// first and so ends the run) and the payload placed of the payload posted.
func meterTransfers(sc *scenario.Scenario, m *meter, ep transport.Endpoint) {
	var target sim.Time
	for _, f := range ep.Flows() {
		if f.Ideal > 0 {
			target = max(target, f.Start+f.Ideal)
		}
	}
	m.target, m.targetWhat = target, "ideal completion"
	if target == 0 || target > sc.Run.Duration {
		m.target, m.targetWhat = sc.Run.Duration, "run.duration"
	}
	m.unit = "of the payload placed"
	m.done = func() (float64, float64) {
		_, placed, posted := ep.Bytes()
		return float64(placed), float64(posted)
	}
}

// joinReasons joins two failure reasons with "; ", either possibly empty.
func joinReasons(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
