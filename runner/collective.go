package runner

import (
	"fmt"
	"strings"

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
	Name          string  `json:"name"`
	Op            string  `json:"op"`
	Root          int     `json:"root"`  // -1 when the operation has no root
	RedOp         string  `json:"redop"` // sum or none
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
	Rows  []collective.Row
	Names []string // Rows[i] belongs to collective Names[i]
	// Model: the ideal transport's latency and NIC rate; under MRC, alpha = half the base RTT
	// and B = the NIC rate x payload / wire bytes of a full packet (the payload rate).
	Model collective.Model
	// Instances are every launched collective's result (each iteration and size), in launch
	// order: per-rank end times for traces.
	Instances []collective.Result
}

// collGroup is one collective of the workload, ready to launch.
type collGroup struct {
	name  string
	base  collective.Spec
	sizes []int64
	comm  collective.Comm
	dt    collective.DType
}

// runCollective runs the scenario's collectives step by step through their size sweeps: at
// step k every collective is launched at its k-th size together, iterations times back to
// back, on the MRC fabric or the ideal network, and each records one row per size. A step that
// does not finish by run.duration, or that leaves nothing to wait for, stops the run with the
// executor's report of which ranks wait on what.
func runCollective(sc *scenario.Scenario, layout topo.Topology, res *Result) error {
	var groups []collGroup
	iters := 1
	for i := range sc.Workload.Collectives {
		wc := &sc.Workload.Collectives[i]
		path := fmt.Sprintf("workload.collectives[%d]", i)
		base, sizes, err := wc.CollectiveSpec()
		if err != nil {
			return &InputError{Err: fmt.Errorf("%s: %w", path, err)}
		}
		var comm collective.Comm
		if len(wc.Hosts) > 0 {
			comm, err = collective.NewComm(wc.Hosts)
		} else {
			comm, err = collective.RangeComm(0, wc.Ranks, 1)
		}
		if err != nil {
			return &InputError{Err: fmt.Errorf("%s: %w", path, err)}
		}
		dt, err := collective.ParseDType(wc.DType)
		if err != nil {
			return &InputError{Err: fmt.Errorf("%s.dtype: %w", path, err)}
		}
		groups = append(groups, collGroup{name: wc.Name, base: base, sizes: sizes, comm: comm, dt: dt})
		iters = max(iters, wc.Iterations)
	}
	s, net := res.Sim, res.Net
	c := layout.Params()
	nicRate := c.HostLink * sim.Rate(c.Planes)
	// Reductions share one engine per host across collectives: the first collective's rate.
	model := collective.Model{ReduceBytesPerSec: float64(sc.Workload.Collectives[0].ReduceRate) / 8}
	var (
		tr    collective.Transport
		ideal *collective.Ideal
		m     *mrcNet
		rn    *roceNet
		err   error
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
	case scenario.TransportRoCE:
		rn = newRoCENet(s, net, layout, *sc.Transport.RoCE)
		rn.seed = sc.Run.Seed
		tr = rn
		cfg := rn.cfg
		model.Latency = rn.baseRTT / 2
		model.Rate = sim.Rate(float64(nicRate) * float64(cfg.PayloadBytes) / float64(cfg.HeaderBytes+cfg.PayloadBytes))
	default:
		return &InputError{Err: fmt.Errorf("transport.kind: %q cannot carry a collective", sc.Transport.Kind)}
	}
	// Each collective keeps its own connections, as NCCL opens QPs per communicator: the
	// transports key QPs by (src, dst, group), the group found from the message's instance.
	instGroup := map[int]int{}
	group := func(instance int) int { return instGroup[instance] }
	if m != nil {
		m.group = group
	}
	if rn != nil {
		rn.group = group
	}
	running := 0
	ex, err := collective.NewExecutor(s, tr, collective.ExecConfig{
		Hosts:             net.NumHosts(),
		ReduceBytesPerSec: model.ReduceBytesPerSec,
		OnDone: func(now sim.Time, id int) {
			if running--; running == 0 {
				s.Pause()
			}
		},
	})
	if err != nil {
		return &InputError{Err: err}
	}
	switch {
	case ideal != nil:
		ideal.SetSink(ex.Delivered)
	case m != nil:
		m.delivered = ex.Delivered
	default:
		rn.delivered = ex.Delivered
	}
	run := &CollectiveRun{Model: model}
	res.Collective = run
	var smp *sampler
	if m != nil || rn != nil {
		if m != nil {
			res.MRC = &MRCRun{m: m, DoneAt: sim.MaxTime}
		} else {
			res.RoCE = &RoCERun{r: rn, DoneAt: sim.MaxTime}
		}
		smp = newSampler(s, net, c.Planes, sc.Run.SampleInterval, sc.Run.Duration)
		res.Links = smp.links
		if m != nil {
			smp.placed = m.placedBytes
		} else {
			smp.placed = rn.placedBytes
		}
		smp.start()
	}
	limit := sc.Run.Duration
	var rowsOut []CollectiveRow
	scheds := make([]*collective.Schedule, len(groups))
	ids := make([]int, len(groups))
	totals := make([]sim.Time, len(groups))
	for step := range groups[0].sizes {
		for g := range groups {
			sp := groups[g].base
			if sz := groups[g].sizes[step]; sz > 0 {
				sp.Bytes = sz
			}
			if scheds[g], err = collective.Build(sp); err != nil {
				return &InputError{Err: fmt.Errorf("workload.collectives[%d] at %d B: %w", g, sp.Bytes, err)}
			}
			totals[g] = 0
		}
		for it := 0; it < iters; it++ {
			running = 0
			for g := range groups {
				if it >= sc.Workload.Collectives[g].Iterations {
					ids[g] = -1
					continue
				}
				name := fmt.Sprintf("%s/%dB/%d", groups[g].name, scheds[g].Spec().Bytes, it)
				if ids[g], err = ex.Launch(s.Now(), scheds[g], groups[g].comm, name); err != nil {
					return &InputError{Err: err}
				}
				instGroup[ids[g]] = g
				running++
			}
			// Drain, not Run: on a stall the clock stays at the last event, not at the limit.
			if err := s.Drain(limit); err != nil {
				return fmt.Errorf("run stopped at %v: %w", s.Now(), err)
			}
			if err := ex.Err(); err != nil {
				return fmt.Errorf("collective stopped at %v: %w", s.Now(), err)
			}
			if running > 0 {
				why := fmt.Sprintf("run.duration (%v) reached; raise it if they were still progressing", limit)
				if s.NextAt() == sim.MaxTime {
					why = "nothing left to happen"
				}
				if errs := transportErrs(m, rn); len(errs) > 0 {
					why = fmt.Sprintf("%d QP(s) gave up, the first: %v", len(errs), errs[0])
				}
				return fmt.Errorf("%d collective(s) not done at %v (%s); waiting: %s", running, s.Now(), why,
					strings.ReplaceAll(ex.Stuck(12), "\n", "; "))
			}
			for g := range groups {
				if ids[g] < 0 {
					continue
				}
				r, err := ex.Result(ids[g])
				if err != nil {
					return err
				}
				totals[g] += r.Time()
				run.Instances = append(run.Instances, r)
			}
		}
		for g := range groups {
			n := sc.Workload.Collectives[g].Iterations
			row := collective.NewRow(scheds[g].Spec(), totals[g]/sim.Time(n), groups[g].dt)
			row.Name = groups[g].name
			if t, err := collective.Pipelined(scheds[g].Spec(), model); err == nil {
				row.Model = t
			} else if model.ReduceBytesPerSec == 0 {
				// The textbook form ignores pipelining; with a reduction cost it would also
				// charge every reduction in series, which the executor overlaps: no model then.
				if t, err := collective.AlphaBeta(scheds[g].Spec(), model); err == nil {
					row.Model = t
				}
			}
			run.Rows = append(run.Rows, row)
			run.Names = append(run.Names, groups[g].name)
			rowsOut = append(rowsOut, collectiveRow(groups[g].name, row, n, scheds[g]))
		}
	}
	end := s.Now()
	if m != nil || rn != nil {
		smp.until = end
		snap := snapshot(net)
		smp.links.finish(net.Sim().Now())
		flows := 0
		if m != nil {
			res.MRC.DoneAt = end
			m.quiesce()
			flows = len(m.flows)
		} else {
			res.RoCE.DoneAt = end
			rn.quiesce()
			flows = len(rn.qps)
		}
		if err := s.Drain(end + sc.Run.Drain); err != nil {
			return fmt.Errorf("run stopped during drain at %v: %w", s.Now(), err)
		}
		if err := net.Audit(); err != nil {
			return err
		}
		if left := net.InFlight(); left > 0 {
			return notDrained(net, left, sc.Run.Drain)
		}
		res.Summary = summarise(sc, net, flows, smp, snap, end)
		res.progress, res.trafficEnd = smp.progress, end
		if m != nil {
			res.Summary.MRC = m.summary(end, res.Faults)
			res.lossAt, res.errAt = m.lossAt, m.errAt
			mrcGoodput(&res.Summary, m, end)
		} else {
			res.Summary.RoCE = rn.summary(end, res.Faults)
			res.Summary.PFC = pfcSummary(sc, net, end)
			res.lossAt, res.errAt = rn.lossAt, rn.errAt
			roceGoodput(&res.Summary, rn, end)
		}
	} else {
		res.Summary = Summary{Scenario: sc.Name, Seed: sc.Run.Seed, Hosts: net.NumHosts(), Planes: c.Planes,
			DurationUs: us(end), EndUs: us(end), Events: s.Events()}
	}
	res.Summary.Collectives = rowsOut
	return nil
}

// transportErrs returns the QP errors of whichever packet transport ran.
func transportErrs(m *mrcNet, rn *roceNet) []error {
	switch {
	case m != nil:
		return m.errs
	case rn != nil:
		return rn.errs
	}
	return nil
}

// collectiveRow turns a report row into its summary form.
func collectiveRow(name string, r collective.Row, iters int, sched *collective.Schedule) CollectiveRow {
	out := CollectiveRow{
		Name: name, Op: r.Op.String(), Root: r.Root, RedOp: r.RedOp(), Algorithm: r.Algo.String(), Ranks: r.Ranks, SizeBytes: r.Bytes, Count: r.Count,
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
