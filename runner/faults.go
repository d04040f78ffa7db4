package runner

import (
	"errors"
	"fmt"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/fault"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
)

// FaultEvent is one primitive fault action on one element of the fabric, as scheduled and
// applied at At (a run that ends earlier never reaches the later ones). A scenario entry
// expands to one event per element and instant: a switch failing is one down per link, a flap
// a down and an up per cycle, a random process one event per failure and repair.
type FaultEvent struct {
	At sim.Time
	// Port is the port acted on: the named end of the link for down, up, degrade and
	// undegrade (which act on both directions), the port whose outgoing packets are lost for
	// loss and ber; -1 for a switch's blackhole and unblackhole.
	Port fabric.PortID
	// Node is the switch of blackhole and unblackhole, -1 otherwise.
	Node fabric.NodeID
	// Name is the port's or the switch's name.
	Name string
	// Action is what happened: "down" and "up" change link state (so ECMP reconverges after
	// them, see scheduleReconvergence); "degrade" and "undegrade" set both directions' rate to
	// Rate; "loss" sets Loss (on one entropy value when HasEntropy; 0 clears); "ber" sets BER
	// (0 clears); "blackhole" and "unblackhole" switch a blackhole on and off, with the links
	// left up (no reconvergence).
	Action string
	// Loss is the per-packet loss probability of a loss action.
	Loss float64
	// Entropy limits a loss to one entropy value when HasEntropy.
	Entropy    uint32
	HasEntropy bool
	// BER is the bit error rate of a ber action.
	BER float64
	// Rate is the link's rate after a degrade or undegrade, bits/s.
	Rate sim.Rate

	// Entry is the index of the scenario's fault entry (faults[Entry]) this comes from,
	// Cause its action ("flap", "heal", "down", ...), Target the element it named (a port,
	// switch, NIC port or transceiver name).
	Entry  int
	Cause  string
	Target string
	// Cycle is the flap cycle, 0 for other actions.
	Cycle int
	// Restore marks the end of a failure the same entry started (after for, a flap cycle or
	// a random repair); Random marks events drawn by a random process.
	Restore, Random bool
	// Step is the training step whose simulated start At counted from (the entry's
	// at_step), -1 for times from the run's start. Once the step starts At is made
	// absolute.
	Step int

	applied     bool  // the run reached it
	fromStep    int   // an at_step entry's step plus one, once At was made absolute; 0 otherwise
	dropsBefore int64 // faultDrops just before it was applied
}

// faultDrops counts the drops a failure can cause, fabric-wide: link_down, loss, blackhole
// and no_route (a dead group after reconvergence).
func faultDrops(net *fabric.Network) int64 {
	c := &net.C.Dropped
	return c[fabric.DropLinkDown] + c[fabric.DropLoss] + c[fabric.DropBlackhole] + c[fabric.DropNoRoute]
}

// scheduleFaults expands the scenario's fault entries against the built network
// (fault.Expand with run.seed, the simulation's seed, so the random processes draw exactly
// what the resolved scenario shows) and schedules one event per primitive action. An entry
// the expansion rejects (a target that matches nothing, a contradiction) is returned as an
// error naming it; scenario.Resolve has already rejected them for a resolved scenario.
//
// Each action is a fabric call at its time: down and up SetLinkDown (both directions);
// degrade and undegrade assign Port.Rate at both ends (serialisation reads it per packet, so
// the packet being sent finishes at the old rate); loss SetLoss or SetEntropyLoss; ber
// SetBER; blackhole SetBlackhole. A fabric error stops the run naming the event.
//
// Events of at_step entries (Step >= 0) wait for their step (stepFaults, with the kind
// returned). With dry set, the events are scheduled but do nothing: the faultless twin of a run with
// faults (run.fault_baseline twin) draws the same event keys and so stays identical to the
// run until its first failure, which makes their difference the failures' cost and nothing
// else.
func scheduleFaults(s *sim.Sim, net *fabric.Network, faults []scenario.Fault, dry bool) ([]FaultEvent, sim.Kind, error) {
	if len(faults) == 0 {
		return nil, 0, nil
	}
	sch, err := fault.Expand(faults, fault.FromNetwork(net), fault.Options{Seed: s.Seed(), Path: "faults"})
	if err != nil {
		var fe *fault.Error
		if errors.As(err, &fe) {
			return nil, 0, scenario.Errorf(fe.Path, "%s", fe.Msg)
		}
		return nil, 0, err
	}
	if len(sch.Events) == 0 {
		return nil, 0, nil
	}
	evs := make([]FaultEvent, len(sch.Events))
	for i, e := range sch.Events {
		evs[i] = faultEvent(e)
	}
	kind := s.Register("runner.fault", func(now sim.Time, obj int32, _ uint64) {
		e := &evs[obj]
		if dry {
			return
		}
		e.dropsBefore = faultDrops(net)
		e.applied = true
		if err := applyFault(now, net, e); err != nil {
			s.Stop(fmt.Errorf("fault at %v on %s (faults[%d]): %w", now, e.Name, e.Entry, err))
		}
	})
	for i := range evs {
		if evs[i].Step < 0 { // at_step entries: scheduled when their step starts (stepFaults)
			s.AtOwnKey(evs[i].At, kind, int32(i), 0) // the run is the faultless one until the first fault
		}
	}
	return evs, kind, nil
}

// stepFaults returns the training engine's step hook for the events of at_step entries:
// when step k starts at now, every event of step k is scheduled at now plus its offset (At
// then becomes absolute) as event kind (which applies it), and a link-state event has
// reconvergeAt (when not nil) schedule routing's reconvergence after it. nil when no event
// has a step.
func stepFaults(s *sim.Sim, evs []FaultEvent, kind sim.Kind, reconvergeAt func(at sim.Time)) func(now sim.Time, step int) {
	has := false
	for i := range evs {
		has = has || evs[i].Step >= 0
	}
	if !has {
		return nil
	}
	return func(now sim.Time, step int) {
		for i := range evs {
			e := &evs[i]
			if e.Step != step {
				continue
			}
			e.At += now
			e.Step, e.fromStep = -1, step+1
			s.AtOwnKey(e.At, kind, int32(i), 0)
			if reconvergeAt != nil && (e.Action == scenario.FaultDown || e.Action == scenario.FaultUp) {
				reconvergeAt(e.At)
			}
		}
	}
}

// faultEvent converts a schedule's event to the record a run keeps.
func faultEvent(e fault.Event) FaultEvent {
	f := FaultEvent{
		At: e.At, Port: fabric.PortID(e.Port), Node: fabric.NodeID(e.Node), Name: e.Name, Action: e.Op.String(),
		Rate: e.Rate, Entropy: e.Entropy, HasEntropy: e.HasEntropy,
		Entry: e.Entry, Cause: e.Action, Target: e.Target, Cycle: e.Cycle, Restore: e.Restore, Random: e.Random, Step: e.Step,
	}
	switch e.Op {
	case fault.OpLoss:
		f.Loss = e.Prob
	case fault.OpBER:
		f.BER = e.Prob
	}
	return f
}

// switchTarget returns the switch a link event e of a switch fault (fault kind switch: its
// target is a switch, each of whose ports the event names in turn) acts on; false for a link,
// NIC or transceiver target, whose name is a port's rather than its node's.
func switchTarget(net *fabric.Network, e *FaultEvent) (fabric.NodeID, bool) {
	if e.Port < 0 || int(e.Port) >= len(net.Ports) {
		return -1, false
	}
	id := net.Ports[e.Port].Node
	nd := &net.Nodes[id]
	return id, nd.Kind == fabric.Switch && nd.Name == e.Target
}

// applyFault makes the fabric call for e at now: down and up of a switch fault also mark the
// switch failed or repaired (fabric.Network.SetSwitchFailed), which labels its drops.
func applyFault(now sim.Time, net *fabric.Network, e *FaultEvent) error {
	switch e.Action {
	case fault.OpDown.String(), fault.OpUp.String():
		down := e.Action == fault.OpDown.String()
		if sw, ok := switchTarget(net, e); ok {
			// A switch fault: the switch failed as a whole, so its drops are labelled so.
			if err := net.SetSwitchFailed(sw, down); err != nil {
				return err
			}
		}
		return net.SetLinkDown(now, e.Port, down)
	case fault.OpDegrade.String(), fault.OpUndegrade.String():
		if e.Port < 0 || int(e.Port) >= len(net.Ports) || e.Rate <= 0 {
			return fmt.Errorf("degrade: port %d rate %v", e.Port, e.Rate)
		}
		p := &net.Ports[e.Port]
		p.Rate = e.Rate
		net.Ports[p.Peer].Rate = e.Rate
		return nil
	case fault.OpLoss.String():
		if e.HasEntropy {
			return net.SetEntropyLoss(e.Port, e.Entropy, e.Loss)
		}
		return net.SetLoss(e.Port, e.Loss)
	case fault.OpBER.String():
		return net.SetBER(e.Port, e.BER)
	case fault.OpBlackhole.String():
		return net.SetBlackhole(e.Node, true)
	case fault.OpUnblackhole.String():
		return net.SetBlackhole(e.Node, false)
	}
	return fmt.Errorf("unknown fault action %q", e.Action)
}
