package runner

import (
	"fmt"

	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/workload/training"
)

// OCSEvent is one chip failure on a torus with optical circuit switches, and what the job
// did about it: the OCSes swap the failed chip's cube for a spare cube, the job pauses for the
// switching time and continues on the remapped shape [TPU v4, Jouppi et al., ISCA 2023 §2].
type OCSEvent struct {
	AtUs          float64 `json:"at_us"`              // when the chip failed (the scenario's fault time)
	Chip          string  `json:"chip"`               // the failed chip (host name)
	Cube          int     `json:"cube"`               // the job's cube that moved
	FailedCube    int     `json:"failed_cube"`        // the physical cube it left
	SpareCube     int     `json:"spare_cube"`         // the spare cube it moved to
	MovedHosts    int     `json:"moved_hosts"`        // ranks now on other chips (the cube's)
	PauseUs       float64 `json:"pause_us"`           // the OCS switching time the job stood still
	StepBeforeUs  float64 `json:"step_before_us"`     // step time on the shape before
	StepAfterUs   float64 `json:"step_after_us"`      // step time on the remapped shape
	StepWithPause float64 `json:"step_with_pause_us"` // the step the failure fell in: its time plus the pause
}

// ocsChips returns the torus chips a training scenario's faults fail (switch: <chip>.r or
// <chip>, action: down; the scenario admits no other on a torus with OCS), in fault order.
func ocsChips(sc *scenario.Scenario, layout topo.Topology) ([]int, []sim.Time, error) {
	var chips []int
	var at []sim.Time
	for i, f := range sc.Faults {
		if f.Switch == "" {
			continue
		}
		chip := -1
		for h := range layout.NumHosts() {
			if n := layout.NodeName(h); n == f.Switch || n+".r" == f.Switch {
				chip = h
				break
			}
		}
		if chip < 0 {
			return nil, nil, fmt.Errorf("faults[%d].switch: %q is not a torus chip or its router (names like x0y1z2 or x0y1z2.r)", i, f.Switch)
		}
		chips, at = append(chips, chip), append(at, f.At)
	}
	return chips, at, nil
}

// ocsRemaps runs the job again on the torus after each chip failure's remap (flow level or
// closed forms, the run's engine) and reports the pause and the new step time.
func ocsRemaps(sc *scenario.Scenario, layout topo.Topology, before *training.Result) ([]OCSEvent, error) {
	chips, at, err := ocsChips(sc, layout)
	if err != nil || len(chips) == 0 {
		return nil, err
	}
	if sc.Topology.Torus == nil || !sc.Topology.Torus.OCS {
		return nil, fmt.Errorf("faults: a failed chip is remapped only on topology.torus with ocs: true")
	}
	t := *sc.Topology.Torus
	var out []OCSEvent
	for k, chip := range chips {
		r, err := t.Remap(chip)
		if err != nil {
			return nil, fmt.Errorf("faults[%d]: %w", k, err)
		}
		after, err := trainingOn(sc, r.Topology)
		if err != nil {
			return nil, fmt.Errorf("the job on the remapped torus: %w", err)
		}
		out = append(out, OCSEvent{AtUs: us(at[k]), Chip: layout.NodeName(chip), Cube: r.Cube, FailedCube: r.FailedCube, SpareCube: r.SpareCube,
			MovedHosts: len(r.Moved), PauseUs: us(r.SwitchTime), StepBeforeUs: round3(before.StepTimeUs), StepAfterUs: round3(after.StepTimeUs),
			StepWithPause: round3(before.StepTimeUs + us(r.SwitchTime))})
		t, before = r.Torus, after
	}
	return out, nil
}

// trainingOn runs the scenario's training job once on topology l in a fresh simulation at
// flow level (or with the closed forms under transport ideal) and returns its result.
func trainingOn(sc *scenario.Scenario, l topo.Topology) (*training.Result, error) {
	cfg := sc.Workload.Training
	s := sim.New(sc.Run.Seed)
	job, err := cfg.Job(l.NumHosts())
	if err != nil {
		return nil, err
	}
	var b training.Backend
	if sc.Transport.Kind == scenario.TransportIdeal {
		p := l.Params()
		b, err = training.NewAnalyticBackend(s, idealModel(sc, p))
	} else {
		g := job.GPU
		base, caps, rerr := scenarioFlowRouter(sc, l, job.Placement.Domain, g.ScaleUpRate, g.ScaleUpLatency)
		if rerr != nil {
			return nil, rerr
		}
		router := &collRouter{flowRouter: base} // any path length (tori)
		stop := func(now sim.Time, err error) { s.Stop(err) }
		var fnet *flow.Net
		if fnet, err = flow.New(s, caps, flow.Config{OnStall: stop}); err == nil {
			b, err = flow.NewCollectives(fnet, router, flow.CollConfig{OnError: stop})
		}
	}
	if err != nil {
		return nil, err
	}
	return cfg.Run(job, s, b, training.Env{NICs: l.NumHosts() * l.Params().Planes, Links: l.NumLinks()})
}
