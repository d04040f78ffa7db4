package scenario

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lockstepsim/lockstep/fault"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport/mrc"
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
// value no packet carries silently drops nothing. Under MRC a packet's entropy is its EV's
// number within its QP (runner: Packet.Entropy = EV), and EVs are numbered plane by plane
// (mrc.NewEVSet): with A active and B backup EVs over P planes, plane p's are p x (A+B)/P up
// to (p+1) x (A+B)/P - 1, its A/P active ones first. resolveEVSplit makes A and B multiples
// of P, so the blocks are the same in every QP. An entropy must then be one of those of the
// plane of some link the entry names. Under RoCE packets carry no entropy (a QP's ECMP path
// comes from its UDP source port). Raw traffic's entropy is a sprayed packet's path index,
// left unchecked.
func (sc *Scenario) checkFaultEntropy(l topo.Topology, inv *fault.Inventory) error {
	var links []topo.Link // read once, when needed
	for i := range sc.Faults {
		f := &sc.Faults[i]
		if f.Entropy == nil {
			continue
		}
		path := fmt.Sprintf("faults[%d].entropy", i)
		e := int64(*f.Entropy)
		switch sc.Transport.Kind {
		case TransportRoCE:
			return Errorf(path, "%d under transport roce, whose packets carry no entropy value (a QP's ECMP path comes from its UDP source port), so the filter would drop nothing (0: every packet); entropy applies to transport mrc (an EV number) and raw traffic with path: spray (a path index)", e)
		case TransportMRC:
		default:
			continue
		}
		ev := sc.Transport.Block().(*mrc.Config).EV
		planes := l.Params().Planes
		active, backup := ev.Active, max(ev.Backup, 0)
		if planes < 1 || active%planes != 0 || backup%planes != 0 {
			continue // resolveEVSplit rejects these first
		}
		per := (active + backup) / planes
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
		firstPlane := links[first.Port/2].Plane // ports come two per link (fault.FromLayout)
		span := func(p int) string {
			return fmt.Sprintf("%d..%d", p*per, (p+1)*per-1)
		}
		layout := fmt.Sprintf("EVs are numbered plane by plane, %d per plane: %d active then %d backup, from transport.mrc.ev active %d and backup %d over %d planes", per, active/planes, backup/planes, active, backup, planes)
		if e >= int64(active+backup) {
			return Errorf(path, "%d is beyond the %d EVs of a QP (0..%d: transport.mrc.ev active %d + backup %d), so it would drop nothing; %s %s is on plane %d: allowed %s", e, active+backup, active+backup-1, active, backup, kind, first.Name, firstPlane, span(firstPlane))
		}
		evPlane := int(e) / per
		hit := false
		for _, x := range s.Events {
			if x.Port >= 0 && links[x.Port/2].Plane == evPlane {
				hit = true
				break
			}
		}
		if !hit {
			return Errorf(path, "%d is an EV of plane %d (EVs %s), but %s %s is on plane %d, which its packets never cross; allowed %s there (%s)", e, evPlane, span(evPlane), kind, first.Name, firstPlane, span(firstPlane), layout)
		}
	}
	return nil
}
