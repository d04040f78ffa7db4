package scenario

import (
	"errors"

	"github.com/lockstepsim/lockstep/fault"
)

// Fault is one entry of the scenario's faults: list: an action on named links, switches, NIC
// ports or transceivers at a time, as a flap train, or drawn by a random failure process. The
// type, its fields, defaults and checks live in package fault (fault.Spec); a scenario
// resolves every entry against its topology at load time, so a target that matches nothing,
// a bad field or two contradictory entries are input errors before any run starts.
type Fault = fault.Spec

// Fault actions (Fault.Action); see package fault for what each does.
const (
	FaultDown      = fault.ActionDown      // the link fails in both directions
	FaultUp        = fault.ActionUp        // the link is repaired
	FaultFlap      = fault.ActionFlap      // down for down_for, count times, every period
	FaultDegrade   = fault.ActionDegrade   // the link runs at rate (or factor x its rate)
	FaultUndegrade = fault.ActionUndegrade // the link is back at its built rate
	FaultLoss      = fault.ActionLoss      // each packet is dropped with probability loss, in direction
	FaultBER       = fault.ActionBER       // each bit is corrupted with probability ber, in direction
	FaultBlackhole = fault.ActionBlackhole // the switch forwards nothing, its links stay up
	FaultHeal      = fault.ActionHeal      // every fault active on the target ends
)

// faultOptions is how the scenario's faults expand: its seed and duration, paths "faults".
func (sc *Scenario) faultOptions() fault.Options {
	return fault.Options{Seed: sc.Run.Seed, Duration: sc.Run.Duration, Path: "faults"}
}

// FaultSchedule returns the resolved scenario's faults expanded into their timed events (flap
// trains, restores after for, random failures drawn from run.seed), as a run applies them.
// It builds only the topology's names, not the fabric, so it is cheap; call it on a scenario
// that Parse or Resolve returned. Errors are *FieldError, as from Resolve.
func (sc *Scenario) FaultSchedule() (*fault.Schedule, error) {
	l, err := sc.Topology.Describe()
	if err != nil {
		return nil, err
	}
	s, err := fault.Expand(sc.Faults, fault.FromLayout(l), sc.faultOptions())
	return s, faultError(err)
}

// faultError turns a *fault.Error into a *FieldError with the same path and message.
func faultError(err error) error {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return Errorf(fe.Path, "%s", fe.Msg)
	}
	return err
}
