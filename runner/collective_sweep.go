package runner

import (
	"errors"
	"fmt"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// collEngine is what sweepCollectives needs of the engine that carries the collectives: the
// packet-level executor (packetColl) or the flow-level engine (flowColl).
type collEngine interface {
	// prepare resolves collective g's spec sp at one step of the sweep (sp.Bytes the step's
	// size) for the collectives launched next.
	prepare(g int, sp collective.Spec) error
	// spec returns collective g's spec as prepared (resolved).
	spec(g int) collective.Spec
	// launch starts collective g now under name; when it completes the engine calls
	// sweepState.finished.
	launch(g int, name string) error
	// settle returns the error that stops the run after the clock was drained to the limit:
	// drainErr from sim.Drain, or running collectives not done by then; nil when all are.
	settle(drainErr error, running int, limit sim.Time) error
	// result returns the result of collective g's last launch.
	result(g int) (collective.Result, error)
	// sent returns the most payload one rank of collective g sends at its prepared spec.
	sent(g int) (int64, error)
	// split returns where collective g's ranks send their bytes at its prepared spec, in
	// scale-up domains of domain hosts: inside a domain or over the fabric.
	split(g, domain int) (collective.DomainSplit, error)
}

// sweepState is the state of one sweepCollectives run the engines share: the number of
// collectives still running in the current iteration.
type sweepState struct {
	s       *sim.Sim
	running int
	meter   *meter // the run's progress state (nil: none)
}

// finished records that a collective of the current iteration completed, pausing the clock
// when it was the last.
func (w *sweepState) finished() {
	if w.running--; w.running == 0 {
		w.s.Pause()
	}
}

// sweepCollectives drives the scenario's collectives through their size sweeps on engine e:
// at step k every collective is prepared at its k-th size, then launched together iterations
// times back to back (each only for its own iterations), the clock drained to run.duration
// after each launch. Every completed launch is appended to run.Instances, and each
// collective records one row per size (the mean time over its iterations), returned in
// order. The first error (a spec that does not build, a failed launch, a collective not done)
// stops the sweep; on a *stallError (collectives not done) the rows of the sizes finished
// before it are returned with it.
func sweepCollectives(sc *scenario.Scenario, w *sweepState, run *CollectiveRun, groups []collGroup, iters int, e collEngine) ([]CollectiveRow, error) {
	s := w.s
	if w.meter != nil {
		// Progress: launches done of the sweep's launches (sizes x each collective's iterations).
		total := 0
		for g := range groups {
			total += len(groups[0].sizes) * sc.Workload.Collectives[g].Iterations
		}
		w.meter.unit = "of the collective launches done"
		w.meter.done = func() (float64, float64) { return float64(len(run.Instances)), float64(total) }
	}
	limit := sc.Run.Duration
	var rowsOut []CollectiveRow
	active := make([]bool, len(groups))
	totals := make([]sim.Time, len(groups))
	for step := range groups[0].sizes {
		for g := range groups {
			sp := groups[g].base
			if sz := groups[g].sizes[step]; sz > 0 {
				sp.Bytes = sz
			}
			if err := e.prepare(g, sp); err != nil {
				return nil, &InputError{Err: fmt.Errorf("workload.collectives[%d] at %d B: %w", g, sp.Bytes, err)}
			}
			totals[g] = 0
		}
		for it := 0; it < iters; it++ {
			w.running = 0
			for g := range groups {
				active[g] = it < sc.Workload.Collectives[g].Iterations
				if !active[g] {
					continue
				}
				name := fmt.Sprintf("%s/%dB/%d", groups[g].name, e.spec(g).Bytes, it)
				if err := e.launch(g, name); err != nil {
					return nil, err
				}
				w.running++
			}
			// Drain, not Run: on a stall the clock stays at the last event, not at the limit.
			if err := e.settle(s.Drain(limit), w.running, limit); err != nil {
				var stall *stallError
				if errors.As(err, &stall) {
					return rowsOut, err // the sizes done so far keep their rows
				}
				return nil, err
			}
			for g := range groups {
				if !active[g] {
					continue
				}
				r, err := e.result(g)
				if err != nil {
					return nil, err
				}
				totals[g] += r.Time()
				run.Instances = append(run.Instances, r)
			}
		}
		for g := range groups {
			n := sc.Workload.Collectives[g].Iterations
			sent, err := e.sent(g)
			if err != nil {
				return nil, &InputError{Err: fmt.Errorf("workload.collectives[%d]: %w", g, err)}
			}
			var split *collective.DomainSplit
			if run.Domain > 1 {
				d, err := e.split(g, run.Domain)
				if err != nil {
					return nil, &InputError{Err: fmt.Errorf("workload.collectives[%d]: %w", g, err)}
				}
				split = &d
			}
			rowsOut = append(rowsOut, run.addRow(groups[g], e.spec(g), totals[g]/sim.Time(n), n, sent, split))
		}
	}
	return rowsOut, nil
}
