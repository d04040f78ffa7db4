package runner

import (
	"fmt"
	"github.com/lockstepsim/lockstep/transport"

	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// runChakraFlow runs workload.chakra on the flow-level engine (run.engine flow) over the
// scenario's topology: the trace's DAGs as at packet level (chakraExec), each collective and
// message launched on package flow's collectives (routed as the transport routes its packets,
// scale-up domains on their links; runCollectiveFlow's model: every algorithm with
// dependencies runs its packet-level schedule message by message, flow/dag.go, up to
// flowScheduleMaxOps operations, direct, grouped and larger schedules their phases;
// reductions free). It uses the topology only, never res.Net.
func runChakraFlow(sc *scenario.Scenario, layout topo.Topology, res *Result) error {
	cfg := sc.Workload.Chakra
	tr, plan := cfg.Trace()
	if tr == nil {
		return &InputError{Err: fmt.Errorf("workload.chakra: the scenario is not resolved")}
	}
	s := res.Sim
	p := layout.Params()
	hosts := layout.NumHosts()
	var upRate sim.Rate
	var upLat sim.Time
	if up := scaleUpModel(p); up != nil {
		upRate, upLat = up.Rate, up.Latency
	}
	base, caps, err := scenarioFlowRouter(sc, layout, p.ScaleUpGPUs, upRate, upLat)
	if err != nil {
		return err
	}
	fl := &chakraFlow{}
	stop := func(now sim.Time, err error) {
		if fl.stopErr == nil {
			fl.stopErr = err
		}
		s.Stop(err)
	}
	ncfg, ccfg := flow.Config{OnStall: stop}, flow.CollConfig{OnError: stop}
	var ff *flowFaults
	ff, err = runFlowFaults(sc, layout, res, base, caps, &ncfg, &ccfg,
		stopOnQPError(s, &ff, &fl.fc, func(l int) string { return flowLinkName(layout, base, l) }))
	if err != nil {
		return err
	}
	fnet, err := flow.New(s, caps, ncfg)
	if err != nil {
		return &InputError{Err: err}
	}
	fl.router = newMsgRouter(base)
	ceil, err := newFlowCeiling(s, fnet, fl.router, base, p.HostLink, ff != nil)
	if err != nil {
		return err
	}
	if fl.fc, err = flow.NewCollectives(fnet, ceilRouter(fl.router, ceil), ccfg); err != nil {
		return &InputError{Err: err}
	}
	if ff != nil {
		ff.ceil = ceil
	}
	// Collectives run their packet-level schedule message by message where the packet level
	// runs one (flow/dag.go), as workload.collectives do: up to flowScheduleMaxOps
	// operations, every algorithm but direct and grouped.
	fl.fc.SetSchedules(flowScheduleMaxOps)
	if ff != nil {
		ff.start(fnet, fl.fc)
	}
	e := newChakraExec(s, cfg, tr, plan)
	e.car = fl
	if res.meter != nil {
		total := float64(e.nodes)
		res.meter.unit = "of the trace's nodes done"
		res.meter.done = func() (float64, float64) { return total - float64(e.nodes), total }
	}
	e.start()
	drainErr := s.Drain(sc.Run.Duration)
	if err := e.settle(drainErr, sc.Run.Duration, nil); err != nil {
		if inc := fl.fc.Incomplete(); inc != nil {
			return fmt.Errorf("%w (%v)", err, inc)
		}
		return err
	}
	end := s.Now()
	st := fnet.Stats()
	res.trafficEnd = end
	res.Summary = Summary{Scenario: sc.Name, Seed: sc.Run.Seed, Hosts: hosts, Planes: p.Planes,
		Switches: layout.NumNodes() - hosts, Links: layout.NumLinks(), Flows: int(st.FlowsAdded),
		DurationUs: us(end), EndUs: us(end), Events: s.Events(), Engine: "flow"}
	res.Chakra = &ChakraRun{Trace: tr, Ready: e.ready, End: e.end}
	res.Summary.Chakra = e.summary(cfg.Path)
	return nil
}

// chakraFlow carries a trace's communication on the flow-level engine.
type chakraFlow struct {
	fc      *flow.Collectives
	router  *collRouter // its connections' planes (setMsgPlanes)
	stopErr error
}

// launch resolves sp for the flow engine (flowSpec) and launches it; group is the QP group
// the packet level keys its connections by (Hooks.Group), the owner of its hashed routes.
func (c *chakraFlow) launch(now sim.Time, sp collective.Spec, comm collective.Comm, name string, group int, done func(sim.Time)) error {
	sp, err := flowSpec(sp)
	if err != nil {
		return err
	}
	sched := c.fc.Schedules(sp)
	c.router.setConnPlanes(sp, comm, sched)
	c.router.setConnOwners(sp, comm, transport.CollectiveOwner(group), sched)
	return c.fc.Launch(now, sp, comm, name, done)
}

func (c *chakraFlow) err() error { return c.stopErr }
