package scenario

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lockstepsim/lockstep/fault"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
)

// faults resolves the faults section (resolveFaults) and rejects a failed chip on a torus
// with OCS outside training; it relies on the topology, the run (seed, duration) and the
// transport.
func (r *resolver) faults() error {
	sc := r.sc
	if err := sc.resolveFaults(r.l); err != nil {
		return err
	}
	if t := sc.Topology.Torus; t != nil && t.OCS && sc.Workload.Training == nil {
		for i, f := range sc.Faults {
			if f.Switch != "" && f.Action == FaultDown {
				return Errorf(fmt.Sprintf("faults[%d]", i), "a failed chip on a torus with OCS is remapped onto a spare cube (the job pauses, then continues) only under workload.training; traffic and collectives would just lose the router: set topology.torus.ocs: false to fail it as a dead router")
			}
		}
	}
	return nil
}

// resolveFaults fills each fault's defaults in place (so the resolved scenario shows them)
// and expands the list against the topology l with the run's seed and duration, which checks
// every field, target and contradiction. Errors are *FieldError naming faults[i].<field>.
func (sc *Scenario) resolveFaults(l topo.Topology) error {
	if len(sc.Faults) == 0 {
		return nil
	}
	for i := range sc.Faults {
		sc.Faults[i] = sc.Faults[i].WithDefaults(sc.Run.Duration)
		if sc.Faults[i].AtStep != nil && sc.Workload.Training == nil {
			return Errorf(fmt.Sprintf("faults[%d].at_step", i), "counts from a training step's start, so it needs workload.training; use at (time from the run's start)")
		}
	}
	inv := fault.FromLayout(l)
	if _, err := fault.Expand(sc.Faults, inv, sc.faultOptions()); err != nil {
		var fe *fault.Error
		if sc.Workload.Training != nil && errors.As(err, &fe) && strings.HasSuffix(fe.Path, ".at") {
			// A training run is not bounded by run.duration, but its fault schedule is.
			return Errorf(fe.Path, "%s; under workload.training run.duration (%v) bounds the fault schedule (simulated time from the job's start): raise run.duration, or give at_step (a step) with at an offset into it", fe.Msg, sc.Run.Duration)
		}
		return faultError(err)
	}
	return sc.checkFaultEntropy(l, inv)
}

// checkFaultEntropy checks faults' entropy values against the transport, since a filter on a
// value no packet carries silently drops nothing: the transport's plugin says which values its
// packets carry where (transport.Plugin.Entropy; MRC: EV numbers by plane, RoCE: none). Raw
// traffic's entropy is a sprayed packet's path index, left unchecked; under a transport
// whose plugin has no Entropy hook an entropy filter is an error (it could drop nothing).
func (sc *Scenario) checkFaultEntropy(l topo.Topology, inv *fault.Inventory) error {
	p, ok := transport.Lookup(sc.Transport.Kind)
	if !ok {
		return nil
	}
	var links []topo.Link // read once, when needed
	for i := range sc.Faults {
		f := &sc.Faults[i]
		if f.Entropy == nil {
			continue
		}
		if p.Entropy == nil {
			return Errorf(fmt.Sprintf("faults[%d].entropy", i), "%d under transport %s, which does not say what entropy values its packets carry, so the filter could drop nothing; entropy applies to raw traffic with path: spray (a path index) and to transports that define it", *f.Entropy, sc.Transport.Kind)
		}
		// The ports the entry acts on: expand it alone, once, at its start (a random
		// process's draws would name only some of them).
		one := *f
		one.Random, one.For = nil, 0
		s, err := fault.Expand([]fault.Spec{one}, inv, fault.Options{Seed: sc.Run.Seed, Duration: sc.Run.Duration, Path: "faults"})
		if err != nil || len(s.Events) == 0 {
			continue
		}
		if links == nil {
			links = l.Links()
		}
		kind, _ := f.Target()
		first := s.Events[0]
		onPlane := func(pl int) bool {
			for _, x := range s.Events {
				if x.Port >= 0 && links[x.Port/2].Plane == pl {
					return true
				}
			}
			return false
		}
		// ports come two per link (fault.FromLayout)
		err = p.Entropy(sc.Transport.Block(), int64(*f.Entropy), l.Params().Planes, onPlane, kind+" "+first.Name, links[first.Port/2].Plane)
		if err != nil {
			return Errorf(fmt.Sprintf("faults[%d].entropy", i), "%v", err)
		}
	}
	return nil
}
