package runner

import (
	"errors"
	"fmt"

	"github.com/lockstepsim/lockstep/fault"
	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
)

// runFlowFaults builds the fault model of a flow-level traffic or collective run from
// res.fluidFaults (nil in the fault baseline twin, and then so is the result) over router r
// and capacities caps, and sets up ncfg and ccfg for it: stalls are expected (a flow on a
// dead path waits for its transport to move it), a flow stalled past its QPs' retry budget
// calls onQPError (flowFaults.onQPError: the failure is final, no job restart), collectives
// are reroutable, and a transport without endpoint reroute waits its RTO for a lost tail.
// res.Faults gets the expanded events (the fault table's). The caller starts the model
// (flowFaults.start) once the Net and the Collectives exist. Errors: the entries do not
// expand against the topology (an *InputError).
func runFlowFaults(sc *scenario.Scenario, layout topo.Topology, res *Result, r *flowRouter, caps []float64, ncfg *flow.Config, ccfg *flow.CollConfig,
	onQPError func(at sim.Time, st flow.StallInfo, ev int)) (*flowFaults, error) {
	specs := res.fluidFaults
	if len(specs) == 0 {
		return nil, nil
	}
	idx := make([]int, len(specs))
	for i := range idx {
		idx[i] = i
	}
	evs, err := expandFaults(specs, idx, fault.FromLayout(layout), sc.Run.Seed)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	if len(evs) == 0 {
		return nil, nil
	}
	s := res.Sim
	ff := newFlowFaults(sc, layout, s, r, caps, evs)
	ff.onQPError = onQPError
	res.Faults = evs
	ncfg.OnStall = ff.onStall
	prev := ccfg.OnError
	ccfg.OnError = func(now sim.Time, err error) {
		var se *flow.StallError
		if !errors.As(err, &se) && prev != nil {
			prev(now, err)
		}
	}
	ccfg.Reroutable = true
	if m := r.model; m.RTO > 0 && !m.EndpointReroute {
		// A message whose last packet is lost waits the RTO (no tail-loss probe).
		ccfg.TailLoss, ccfg.TailRTO, ccfg.TailSeed = ff.tailLoss, ff.rto, sc.Run.Seed
	}
	return ff, nil
}

// stopOnQPError is the onQPError of a flow-level workload (collectives, a Chakra trace):
// a QP that gave up leaves its collective unable to finish, so the run stops there as a
// failed one (a stallError: its results folder is still written), naming the collective,
// the hosts, the dead link and the fault behind it.
func stopOnQPError(s *sim.Sim, ff **flowFaults, fc **flow.Collectives, linkName func(int) string) func(at sim.Time, st flow.StallInfo, ev int) {
	return func(at sim.Time, st flow.StallInfo, ev int) {
		name := "a collective"
		if k := (*fc).Owner(st.ID); k >= 0 {
			name = "collective " + (*fc).ResultsFrom(k)[0].Name
		}
		if st.Src == 0 && st.Dst == 0 {
			st.Src, st.Dst = (*ff).hosts(st.ID)
		}
		cause := ""
		if ev >= 0 {
			e := &(*ff).evs[ev]
			cause = fmt.Sprintf(" (faults[%d]: %s %s at %v)", e.Entry, e.Action, e.Target, e.At)
		}
		s.Stop(&stallError{fmt.Errorf("%s cannot finish: its %s QP h%d -> h%d gave up at %v, no progress since %v on %s%s",
			name, (*ff).name, st.Src, st.Dst, at, st.Since, linkName(st.Link), cause)})
	}
}

// flowLinkName names flow link l of router r over topology t: a directed topology link as
// "A -> B" (its nodes as the scenario names them), else its index (a bundle or a scale-up
// link).
func flowLinkName(t topo.Topology, r *flowRouter, l int) string {
	if l >= 0 && l < 2*len(r.links) {
		lk := r.links[l/2]
		a, b := t.NodeName(lk.A.Node), t.NodeName(lk.B.Node)
		if l%2 == 1 {
			a, b = b, a
		}
		return a + " -> " + b
	}
	if r.bundle != nil {
		// A bundle: its members' common ends ("p0.t0-0 -> p0.t1-*"), and how many are up.
		var first = -1
		n := 0
		for d, b := range r.bundle {
			if int(b) == l {
				if first < 0 {
					first = d
				}
				n++
			}
		}
		if first >= 0 {
			return fmt.Sprintf("the bundle of %d links from %s", n, flowLinkName(t, &flowRouter{links: r.links}, first))
		}
	}
	if l >= 2*len(r.links) && l < r.nvl+2*t.NumHosts() && l >= r.nvl && r.domain > 1 {
		h := (l - r.nvl) / 2
		if (l-r.nvl)%2 == 0 {
			return fmt.Sprintf("h%d's scale-up link out", h)
		}
		return fmt.Sprintf("h%d's scale-up link in", h)
	}
	return fmt.Sprintf("flow link %d", l)
}
