package collective

import (
	"github.com/lockstepsim/lockstep/sim"
)

// RunIdeal builds spec and runs it alone on an Ideal network of Ranks hosts (rank r on host
// r) with the model's latency, rate and reduction throughput, and returns its result. The
// simulation is seeded with seed (same inputs, same result). Errors: an invalid spec or
// model, or a run that does not complete (with the watchdog's report).
func RunIdeal(spec Spec, m Model, seed uint64) (Result, error) {
	s, err := Build(spec)
	if err != nil {
		return Result{}, err
	}
	return RunIdealSchedule(s, m, seed)
}

// RunIdealSchedule runs a built schedule as RunIdeal does.
func RunIdealSchedule(sch *Schedule, m Model, seed uint64) (Result, error) {
	if err := m.check(); err != nil {
		return Result{}, err
	}
	n := sch.Ranks()
	s := sim.New(seed)
	net, err := NewIdeal(s, IdealConfig{Hosts: n, Rate: m.Rate, Latency: m.Latency})
	if err != nil {
		return Result{}, err
	}
	ex, err := NewExecutor(s, net, ExecConfig{Hosts: n, ReduceBytesPerSec: m.ReduceBytesPerSec})
	if err != nil {
		return Result{}, err
	}
	net.SetSink(ex.Delivered)
	comm, err := RangeComm(0, n, 1)
	if err != nil {
		return Result{}, err
	}
	id, err := ex.Launch(0, sch, comm, "")
	if err != nil {
		return Result{}, err
	}
	if err := s.Drain(sim.MaxTime); err != nil {
		return Result{}, err
	}
	if err := ex.Incomplete(20); err != nil {
		return Result{}, err
	}
	return ex.Result(id)
}
