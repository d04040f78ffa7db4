package runner

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/collective"
	"github.com/lockstepsim/lockstep/workload/training"
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
	// With scale-up domains in the topology (absent without): the most payload one rank
	// sends inside its domain (NVLink, never on the fabric) and over the fabric, the share of
	// all bytes sent that stayed in a domain, and the NIC rate (all planes) busbw compares
	// with: a busbw above it came from the scale-up links.
	ScaleUpBytesPerRankMax *int64   `json:"scale_up_bytes_per_rank_max,omitempty"`
	FabricBytesPerRankMax  *int64   `json:"fabric_bytes_per_rank_max,omitempty"`
	ScaleUpFraction        *float64 `json:"scale_up_fraction,omitempty"`
	NICGBps                *float64 `json:"nic_GBps,omitempty"`
}

// CollectiveRun is what a collective workload leaves beyond the summary: one nccl-tests row per
// size, and the alpha-beta model the rows' model column uses.
type CollectiveRun struct {
	Rows  []collective.Row
	Names []string // Rows[i] belongs to collective Names[i]
	// Model: the ideal transport's latency and NIC rate; under MRC, alpha = half the base RTT
	// and B = the NIC rate x payload / wire bytes of a full packet (the payload rate); at flow
	// level, alpha = the one-way latency of the longest minimal path and B = the NIC's payload
	// rate as under MRC (the flow level runs fabric links at their payload rate: payloadShare).
	Model collective.Model
	// ScaleUp, when the topology has scale-up domains (Params.ScaleUpGPUs > 1), is their
	// model: alpha = the scale-up latency, B = each GPU's scale-up rate. Messages between
	// hosts of one domain travel on it, not on the fabric; the model column of a hierarchical
	// all-reduce whose inner groups are the domains charges its inner phases to it.
	ScaleUp *collective.Model
	// Domain is the hosts per scale-up domain (host h in domain h / Domain) when ScaleUp is
	// set, else 0; NICRate is each host's NIC rate over all planes.
	Domain  int
	NICRate sim.Rate
	// Engine is "flow" when the flow-level engine ran the collectives (run.engine flow), else
	// "packet" (the packet-level transports or the ideal network).
	Engine string
	// Flow holds the flow-level engine's counters (engine flow).
	Flow *flow.Stats
	// Instances are every launched collective's result (each iteration and size), in launch
	// order: per-rank end times for traces (at flow level every rank ends with the collective).
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

// collGroups returns the scenario's collectives ready to launch (each spec's Domain set when
// its ranks are whole scale-up domains) and the most iterations any of them runs.
func collGroups(sc *scenario.Scenario, layout topo.Topology) ([]collGroup, int, error) {
	var groups []collGroup
	iters := 1
	for i := range sc.Workload.Collectives {
		wc := &sc.Workload.Collectives[i]
		path := fmt.Sprintf("workload.collectives[%d]", i)
		base, sizes, err := wc.CollectiveSpec()
		if err != nil {
			return nil, 0, &InputError{Err: fmt.Errorf("%s: %w", path, err)}
		}
		base.Domain = wc.Domain(layout.Params().ScaleUpGPUs)
		var comm collective.Comm
		if len(wc.Hosts) > 0 {
			comm, err = collective.NewComm(wc.Hosts)
		} else {
			comm, err = collective.RangeComm(0, wc.Ranks, 1)
		}
		if err != nil {
			return nil, 0, &InputError{Err: fmt.Errorf("%s: %w", path, err)}
		}
		dt, err := collective.ParseDType(wc.DType)
		if err != nil {
			return nil, 0, &InputError{Err: fmt.Errorf("%s.dtype: %w", path, err)}
		}
		groups = append(groups, collGroup{name: wc.Name, base: base, sizes: sizes, comm: comm, dt: dt})
		iters = max(iters, wc.Iterations)
	}
	return groups, iters, nil
}

// scaleUpModel returns the topology's scale-up domain model (its latency and per-GPU rate), or
// nil when it has no domains of more than one host.
func scaleUpModel(p topo.Params) *collective.Model {
	if p.ScaleUpGPUs <= 1 {
		return nil
	}
	return &collective.Model{Latency: p.ScaleUpLatency, Rate: p.ScaleUpRate}
}

// runCollective runs the scenario's collectives step by step through their size sweeps: at
// step k every collective is launched at its k-th size together, iterations times back to
// back, on the MRC or RoCE fabric or the ideal network (or, under run.engine flow, on the
// flow-level engine: runCollectiveFlow), and each records one row per size. Messages between
// hosts of one scale-up domain travel on an ideal network at the scale-up rate and latency,
// not on the fabric. A step that does not finish by run.duration, or that leaves nothing to
// wait for, stops the run with the executor's report of which ranks wait on what.
func runCollective(sc *scenario.Scenario, layout topo.Topology, res *Result) error {
	groups, iters, err := collGroups(sc, layout)
	if err != nil {
		return err
	}
	if sc.Run.Engine == scenario.EngineFlow && sc.Transport.Kind != scenario.TransportIdeal {
		return runCollectiveFlow(sc, layout, res, groups, iters)
	}
	s, net := res.Sim, res.Net
	c := layout.Params()
	nicRate := c.HostLink * sim.Rate(c.Planes)
	// Reductions share one engine per host across collectives: the first collective's rate.
	model := collective.Model{ReduceBytesPerSec: float64(sc.Workload.Collectives[0].ReduceRate) / 8}
	var (
		tr    collective.Transport
		ideal *collective.Ideal
		ep    transport.Endpoint
	)
	if sc.Transport.Kind == scenario.TransportIdeal {
		lat := sc.Transport.Ideal.Latency
		ideal, err = collective.NewIdeal(s, collective.IdealConfig{Hosts: net.NumHosts(), Rate: nicRate, Latency: lat})
		if err != nil {
			return &InputError{Err: err}
		}
		tr = ideal
		model.Latency, model.Rate = lat, nicRate
	} else {
		if ep, err = newEndpoint(sc, layout, res); err != nil {
			return err
		}
		tr = ep
		lat, share := ep.Link()
		model.Latency = lat
		model.Rate = sim.Rate(float64(nicRate) * share)
	}
	// Inside a scale-up domain messages bypass the fabric: an ideal network at the domain's
	// per-GPU rate and latency carries them (training.SplitTransport).
	up := scaleUpModel(c)
	var nvl *collective.Ideal
	if up != nil {
		if nvl, err = collective.NewIdeal(s, collective.IdealConfig{Hosts: net.NumHosts(), Rate: up.Rate, Latency: up.Latency}); err != nil {
			return &InputError{Err: fmt.Errorf("topology scale_up: %w", err)}
		}
		split, err := training.NewSplitTransport(c.ScaleUpGPUs, nvl, tr)
		if err != nil {
			return &InputError{Err: err}
		}
		tr = split
	}
	// Each collective keeps its own connections, as NCCL opens QPs per communicator: the
	// transports key QPs by (src, dst, group), the group found from the message's instance.
	instGroup := map[int]int{}
	group := func(instance int) int { return instGroup[instance] }
	w := &sweepState{s: s, meter: res.meter}
	ex, err := collective.NewExecutor(s, tr, collective.ExecConfig{
		RecordSteps:       sc.Run.Trace,
		Hosts:             net.NumHosts(),
		ReduceBytesPerSec: model.ReduceBytesPerSec,
		OnDone:            func(now sim.Time, id int) { w.finished() },
	})
	if err != nil {
		return &InputError{Err: err}
	}
	if ideal != nil {
		ideal.SetSink(ex.Delivered)
	} else {
		ep.SetHooks(transport.Hooks{Delivered: ex.Delivered, Group: group})
	}
	if nvl != nil {
		nvl.SetSink(ex.Delivered)
	}
	run := &CollectiveRun{Model: model, ScaleUp: up, Engine: "packet", NICRate: nicRate}
	if up != nil {
		run.Domain = c.ScaleUpGPUs
	}
	res.Collective = run
	var smp *sampler
	if ep != nil {
		smp = newEndpointSampler(sc, res, c.Planes, ep)
		smp.start()
	}
	e := &packetColl{s: s, ex: ex, ep: ep, groups: groups, instGroup: instGroup,
		scheds: make([]*collective.Schedule, len(groups)), ids: make([]int, len(groups))}
	rowsOut, err := sweepCollectives(sc, w, run, groups, iters, e)
	var stall *stallError
	if err != nil && !errors.As(err, &stall) {
		return err
	}
	if stall != nil {
		res.stall = stall.Error()
	}
	end := s.Now()
	if ep != nil {
		if err := finishTransport(sc, res, ep, smp, end); err != nil {
			return err
		}
	} else {
		res.Summary = Summary{Scenario: sc.Name, Seed: sc.Run.Seed, Hosts: net.NumHosts(), Planes: c.Planes,
			DurationUs: us(end), EndUs: us(end), Events: s.Events()}
	}
	res.Summary.Collectives = rowsOut
	return nil
}

// packetColl is the packet-level collEngine: the executor over the MRC or RoCE fabric or the
// ideal network, each step's schedules built by collective.Build.
type packetColl struct {
	s         *sim.Sim
	ex        *collective.Executor
	ep        transport.Endpoint // nil under transport ideal
	groups    []collGroup
	instGroup map[int]int
	scheds    []*collective.Schedule
	ids       []int
}

// prepare builds collective g's schedule for sp.
func (e *packetColl) prepare(g int, sp collective.Spec) (err error) {
	e.scheds[g], err = collective.Build(sp)
	return err
}

// spec returns the spec of collective g's schedule.
func (e *packetColl) spec(g int) collective.Spec { return e.scheds[g].Spec() }

// launch starts collective g's schedule on the executor, noting the instance's collective
// for the transports' per-collective QPs.
func (e *packetColl) launch(g int, name string) (err error) {
	if e.ids[g], err = e.ex.Launch(e.s.Now(), e.scheds[g], e.groups[g].comm, name); err != nil {
		return &InputError{Err: err}
	}
	e.instGroup[e.ids[g]] = g
	return nil
}

// settle reports a drain error, an executor error, or the collectives still running with the
// executor's account of which ranks wait on what (and the first QP that gave up, if any).
func (e *packetColl) settle(drainErr error, running int, limit sim.Time) error {
	s := e.s
	if drainErr != nil {
		return fmt.Errorf("run stopped at %v: %w", s.Now(), drainErr)
	}
	if err := e.ex.Err(); err != nil {
		return fmt.Errorf("collective stopped at %v: %w", s.Now(), err)
	}
	if running > 0 {
		why := fmt.Sprintf("run.duration (%v) reached; raise it if they were still progressing", limit)
		if s.NextAt() == sim.MaxTime {
			why = "nothing left to happen"
		}
		if errs := endpointErrs(e.ep); len(errs) > 0 {
			why = fmt.Sprintf("%d QP(s) gave up, the first: %v", len(errs), errs[0])
		}
		return &stallError{fmt.Errorf("%d collective(s) not done at %v (%s); waiting: %s", running, s.Now(), why,
			strings.ReplaceAll(e.ex.Stuck(12), "\n", "; "))}
	}
	return nil
}

// result returns the executor's result of collective g's last launch.
func (e *packetColl) result(g int) (collective.Result, error) { return e.ex.Result(e.ids[g]) }

// sent returns the most payload one rank sends in collective g's schedule.
func (e *packetColl) sent(g int) (int64, error) {
	var sent int64
	for rank := 0; rank < e.scheds[g].Ranks(); rank++ {
		sent = max(sent, e.scheds[g].SentBytes(rank))
	}
	return sent, nil
}

// split returns where collective g's schedule sends its bytes in scale-up domains of domain
// hosts (Schedule.DomainBytes).
func (e *packetColl) split(g, domain int) (collective.DomainSplit, error) {
	return e.scheds[g].DomainBytes(e.groups[g].comm, domain)
}

// endpointErrs returns ep's QP errors, none without an endpoint.
func endpointErrs(ep transport.Endpoint) []error {
	if ep == nil {
		return nil
	}
	return ep.Errs()
}

// addRow appends collective g's row for one size (spec resolved, t the mean time over iters
// iterations, sent the most payload one rank sends, split where its bytes went: nil without
// scale-up domains) to the run and returns its summary form.
func (run *CollectiveRun) addRow(g collGroup, spec collective.Spec, t sim.Time, iters int, sent int64, split *collective.DomainSplit) CollectiveRow {
	row := collective.NewRow(spec, t, g.dt)
	row.Name = g.name
	row.Model = modelTime(spec, run.Model, run.ScaleUp)
	row.Split = split
	run.Rows = append(run.Rows, row)
	run.Names = append(run.Names, g.name)
	out := collectiveRow(g.name, row, iters)
	out.SentBytesPerRankMax = sent
	if split != nil {
		up, fab, frac, nic := split.ScaleUpMax, split.FabricMax, round3(split.ScaleUpFraction()), round3(float64(run.NICRate)/8e9)
		out.ScaleUpBytesPerRankMax, out.FabricBytesPerRankMax, out.ScaleUpFraction, out.NICGBps = &up, &fab, &frac, &nic
	}
	return out
}

// ScaleUpNote returns, for rows (of one collective or all) whose busbw exceeds the NIC rate
// while most of their bytes stayed in scale-up domains, a one-line note saying so: the
// highest such busbw, the NIC rate and the share of bytes that went over the scale-up links.
// "" when no row does (or without scale-up domains).
func ScaleUpNote(rows []CollectiveRow) string {
	var top *CollectiveRow
	for i := range rows {
		r := &rows[i]
		if r.NICGBps == nil || r.ScaleUpFraction == nil || *r.ScaleUpFraction <= 0 || r.BusBWGBps <= *r.NICGBps {
			continue
		}
		if top == nil || r.BusBWGBps > top.BusBWGBps {
			top = r
		}
	}
	if top == nil {
		return ""
	}
	return fmt.Sprintf("busbw up to %.2f GB/s (%s at %s) exceeds the NIC's %.2f GB/s because %.0f%% of the bytes sent stayed in scale-up domains (NVLink): per rank at most %s over the scale-up links, %s over the fabric",
		top.BusBWGBps, top.Name, binaryBytes(top.SizeBytes), *top.NICGBps, 100**top.ScaleUpFraction, binaryBytes(*top.ScaleUpBytesPerRankMax), binaryBytes(*top.FabricBytesPerRankMax))
}

// binaryBytes writes b in the largest binary unit it reaches (B, KiB, MiB, GiB, TiB), to
// at most 2 decimals: "112 MiB", "1.5 KiB", "512 B".
func binaryBytes(b int64) string {
	v, u := float64(b), 0
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) + " " + units[u]
}

// modelTime returns the model column for spec (resolved) on the network model m, 0 when
// there is none: collective.Pipelined where it has a form, else collective.AlphaBeta when
// reductions are free (the textbook form ignores pipelining; with a reduction cost it would
// also charge every reduction in series, which the executor overlaps: no model then). A
// hierarchical collective whose inner groups are the scale-up domains (Inner = Domain) with
// up set is charged its phases (collective.PipelinedScaleUp), the inner ones on up and the
// outer one on m, one after the other; for an all-reduce
//
//	2 [(I-1) a_up + (I-1)/I S b_up] + 2(O-1) a + 2(O-1)/O (S/I) b
//
// (with Pipelined's forms for the rings), the flow-level engine's barrier-separated phases;
// the packet-level schedule pipelines the phases of successive loops and can beat it.
func modelTime(spec collective.Spec, m collective.Model, up *collective.Model) sim.Time {
	form := func(sp collective.Spec, m collective.Model) sim.Time {
		if t, err := collective.Pipelined(sp, m); err == nil {
			return t
		}
		if m.ReduceBytesPerSec == 0 {
			if t, err := collective.AlphaBeta(sp, m); err == nil {
				return t
			}
		}
		return 0
	}
	// Inner groups that each sit inside one domain (Inner divides the domain size) run their
	// phases at the scale-up rate; the outer ring is charged at the NIC rate (some of its hops
	// may stay in a domain when Inner < Domain: an upper bound then).
	if up == nil || spec.Algo != collective.Hierarchical || spec.Domain <= 1 || spec.Inner < 1 || spec.Domain%spec.Inner != 0 {
		return form(spec, m)
	}
	upM := *up
	upM.ReduceBytesPerSec = m.ReduceBytesPerSec
	t, err := collective.PipelinedScaleUp(spec, upM, m)
	if err != nil {
		return 0
	}
	return t
}

// collectiveRow turns a report row into its summary form (SentBytesPerRankMax left 0).
func collectiveRow(name string, r collective.Row, iters int) CollectiveRow {
	out := CollectiveRow{
		Name: name, Op: r.Op.String(), Root: r.Root, RedOp: r.RedOp(), Algorithm: r.Algo.String(), Ranks: r.Ranks, SizeBytes: r.Bytes, Count: r.Count,
		DType: r.Type.String(), Iterations: iters, TimeUs: us(r.Time),
		AlgBWGBps: round3(r.AlgBW), BusBWGBps: round3(r.BusBW),
	}
	if r.Model > 0 {
		out.ModelUs = us(r.Model)
		out.TimeOverModel = round3(float64(r.Time) / float64(r.Model))
	}
	return out
}
