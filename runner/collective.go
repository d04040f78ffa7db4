package runner

import (
	"fmt"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// CollectiveRow is one size of a collective workload, nccl-tests style (units in the keys):
// time is the mean over iterations of launch to the last rank's completion; algbw = size /
// time and busbw = algbw x nccl-tests' bus factor, in GB/s (1e9 B/s). ModelUs is the closed
// form for the same size on the transport's alpha-beta model (see CollectiveRun.Model), 0
// when there is none; TimeOverModel is time / model.
type CollectiveRow struct {
	Op            string  `json:"op"`
	Algorithm     string  `json:"algorithm"`
	Ranks         int     `json:"ranks"`
	SizeBytes     int64   `json:"size_bytes"`
	Count         int64   `json:"count"`
	DType         string  `json:"dtype"`
	Iterations    int     `json:"iterations"`
	TimeUs        float64 `json:"time_us"`
	AlgBWGBps     float64 `json:"algbw_GBps"`
	BusBWGBps     float64 `json:"busbw_GBps"`
	ModelUs       float64 `json:"model_us,omitempty"`
	TimeOverModel float64 `json:"time_over_model,omitempty"`
	// SentBytesPerRankMax is the most payload one rank sends (e.g. a MoE dispatch's
	// (T/P) k H d (P-1)/P).
	SentBytesPerRankMax int64 `json:"sent_bytes_per_rank_max"`
}

// CollectiveRun is what a collective workload leaves beyond the summary: one nccl-tests row per
// size, and the alpha-beta model the rows' model column uses.
type CollectiveRun struct {
	Rows []collective.Row
	// Model: the ideal transport's latency and NIC rate; under MRC, alpha = half the base RTT
	// and B = the NIC rate x payload / wire bytes of a full packet (the payload rate).
	Model collective.Model
}

// runCollective runs the scenario's collective at each size of its sweep, iterations times
// back to back, on the MRC fabric or the ideal network, and records one row per size. A
// collective that does not finish by run.duration, or that leaves nothing to wait for, stops
// the run with the executor's report of which ranks wait on what.
func runCollective(sc *scenario.Scenario, layout *topo.Layout, res *Result) error {
	wc := sc.Workload.Collective
	base, sizes, err := wc.CollectiveSpec()
	if err != nil {
		return &InputError{Err: fmt.Errorf("workload.collective: %w", err)}
	}
	var comm collective.Comm
	if len(wc.Hosts) > 0 {
		comm, err = collective.NewComm(wc.Hosts)
	} else {
		comm, err = collective.RangeComm(0, wc.Ranks, 1)
	}
	if err != nil {
		return &InputError{Err: fmt.Errorf("workload.collective: %w", err)}
	}
	dt, err := collective.ParseDType(wc.DType)
	if err != nil {
		return &InputError{Err: fmt.Errorf("workload.collective.dtype: %w", err)}
	}
	s, net := res.Sim, res.Net
	c := layout.Config()
	nicRate := c.HostLink * sim.Rate(c.Planes)
	model := collective.Model{ReduceBytesPerSec: float64(wc.ReduceRate) / 8}
	var (
		tr    collective.Transport
		ideal *collective.Ideal
		m     *mrcNet
	)
	switch sc.Transport.Kind {
	case scenario.TransportIdeal:
		lat := sc.Transport.Ideal.Latency
		ideal, err = collective.NewIdeal(s, collective.IdealConfig{Hosts: net.NumHosts(), Rate: nicRate, Latency: lat})
		if err != nil {
			return &InputError{Err: err}
		}
		tr = ideal
		model.Latency, model.Rate = lat, nicRate
	case scenario.TransportMRC:
		m = newMRCNet(s, net, layout, *sc.Transport.MRC, sc.Fabric)
		m.seed = sc.Run.Seed
		tr = m
		cfg := m.cfg
		model.Latency = m.baseRTT / 2
		model.Rate = sim.Rate(float64(nicRate) * float64(cfg.PayloadBytes) / float64(cfg.WireBytes(cfg.PayloadBytes)))
	default:
		return &InputError{Err: fmt.Errorf("transport.kind: %q cannot carry a collective", sc.Transport.Kind)}
	}
	done := -1
	ex, err := collective.NewExecutor(s, tr, collective.ExecConfig{
		Hosts:             net.NumHosts(),
		ReduceBytesPerSec: model.ReduceBytesPerSec,
		OnDone: func(now sim.Time, id int) {
			done = id
			s.Pause()
		},
	})
	if err != nil {
		return &InputError{Err: err}
	}
	if ideal != nil {
		ideal.SetSink(ex.Delivered)
	} else {
		m.delivered = ex.Delivered
	}
	run := &CollectiveRun{Model: model}
	res.Collective = run
	var smp *sampler
	if m != nil {
		res.MRC = &MRCRun{m: m, DoneAt: sim.MaxTime}
		smp = newSampler(s, net, c.Planes, sc.Run.SampleInterval, sc.Run.Duration)
		smp.start()
	}
	limit := sc.Run.Duration
	var rowsOut []CollectiveRow
	for _, size := range sizes {
		sp := base
		if size > 0 {
			sp.Bytes = size
		}
		sched, err := collective.Build(sp)
		if err != nil {
			return &InputError{Err: fmt.Errorf("workload.collective at %d B: %w", size, err)}
		}
		var total sim.Time
		for it := 0; it < wc.Iterations; it++ {
			id, err := ex.Launch(s.Now(), sched, comm, fmt.Sprintf("%s-%dB-%d", sp.Op, sp.Bytes, it))
			if err != nil {
				return &InputError{Err: err}
			}
			if err := s.Run(limit); err != nil {
				return fmt.Errorf("run stopped at %v: %w", s.Now(), err)
			}
			if err := ex.Err(); err != nil {
				return fmt.Errorf("collective stopped at %v: %w", s.Now(), err)
			}
			if done != id {
				why := "run.duration reached"
				if s.NextAt() == sim.MaxTime {
					why = "no event pending"
				}
				return fmt.Errorf("collective %s not done at %v (%s): %s", sched.Spec().Op, s.Now(), why, ex.Stuck(10))
			}
			r, err := ex.Result(id)
			if err != nil {
				return err
			}
			total += r.Time()
		}
		row := collective.NewRow(sched.Spec(), total/sim.Time(wc.Iterations), dt)
		if t, err := collective.Pipelined(sched.Spec(), model); err == nil {
			row.Model = t
		} else if t, err := collective.AlphaBeta(sched.Spec(), model); err == nil {
			row.Model = t
		}
		run.Rows = append(run.Rows, row)
		rowsOut = append(rowsOut, collectiveRow(row, wc.Iterations, sched))
	}
	end := s.Now()
	if m != nil {
		res.MRC.DoneAt = end
		smp.until = end
		snap := snapshot(net)
		m.quiesce()
		if err := s.Drain(end + sc.Run.Drain); err != nil {
			return fmt.Errorf("run stopped during drain at %v: %w", s.Now(), err)
		}
		if err := net.Audit(); err != nil {
			return err
		}
		if left := net.InFlight(); left > 0 {
			return notDrained(net, left, sc.Run.Drain)
		}
		res.Summary = summarise(sc, net, len(m.flows), smp, snap, end)
		res.Summary.MRC = m.summary(end, res.Faults)
		mrcGoodput(&res.Summary, m, end)
	} else {
		res.Summary = Summary{Scenario: sc.Name, Seed: sc.Run.Seed, Hosts: net.NumHosts(), Planes: c.Planes,
			DurationUs: us(end), EndUs: us(end), Events: s.Events()}
	}
	res.Summary.Collectives = rowsOut
	return nil
}

// collectiveRow turns a report row into its summary form.
func collectiveRow(r collective.Row, iters int, sched *collective.Schedule) CollectiveRow {
	out := CollectiveRow{
		Op: r.Op.String(), Algorithm: r.Algo.String(), Ranks: r.Ranks, SizeBytes: r.Bytes, Count: r.Count,
		DType: r.Type.String(), Iterations: iters, TimeUs: us(r.Time),
		AlgBWGBps: round3(r.AlgBW), BusBWGBps: round3(r.BusBW),
	}
	if r.Model > 0 {
		out.ModelUs = us(r.Model)
		out.TimeOverModel = round3(float64(r.Time) / float64(r.Model))
	}
	for rank := 0; rank < sched.Ranks(); rank++ {
		out.SentBytesPerRankMax = max(out.SentBytesPerRankMax, sched.SentBytes(rank))
	}
	return out
}
