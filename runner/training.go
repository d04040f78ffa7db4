package runner

import (
	"errors"
	"fmt"
	"io"

	"github.com/lockstepsim/lockstep/fault"
	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/collective"
	"github.com/lockstepsim/lockstep/workload/training"
)

// TrainingRun is a training workload's outcome (workload.training).
type TrainingRun struct {
	Result *training.Result
	// Job describes the job: model, plan, stages, placement (for the terminal).
	Job string
	// Engine says how the network collectives ran: "analytic" (transport ideal: closed
	// forms), "flow" (the flow-level engine over the topology) or "packet".
	Engine string
	// Flow holds the flow-level engine's counters (engine flow).
	Flow *flow.Stats
	// OCS lists the chip failures a torus with optical circuit switches routed around.
	OCS []OCSEvent
	// Faults is what the scenario's faults did to the job (nil without faults): the events
	// by step, restarts and their charge, per-step slowest link.
	Faults *TrainingFaults
	// Fold is the number of symmetric replicas the flow engine simulated as one (the order
	// of the fold's group, flowfold.go; 1: every rank simulated), FoldNote why the larger
	// candidate groups were not used.
	Fold     int
	FoldNote string
}

// domainAnalytic is transport ideal's closed forms for a training job: a collective whose
// ranks all sit in one scale-up domain runs at the domain's (NVLink) rate and latency, any
// other at the NIC rate, so the ideal network is a lower bound on every engine.
type domainAnalytic struct {
	nic, nvl *training.AnalyticBackend
	domain   int
}

func newDomainAnalytic(s *sim.Sim, nic collective.Model, job *training.Job) (training.Backend, error) {
	b, err := training.NewAnalyticBackend(s, nic)
	if err != nil {
		return nil, err
	}
	d := job.Placement.Domain
	if d <= 1 || job.GPU.ScaleUpRate <= 0 {
		return b, nil
	}
	up := collective.Model{Rate: job.GPU.ScaleUpRate, Latency: job.GPU.ScaleUpLatency}
	nvl, err := training.NewAnalyticBackend(s, up)
	if err != nil {
		return nil, err
	}
	if err := b.SetScaleUp(up); err != nil { // hierarchical collectives' inner phases
		return nil, err
	}
	return &domainAnalytic{nic: b, nvl: nvl, domain: d}, nil
}

// Launch implements training.Backend.
func (a *domainAnalytic) Launch(at sim.Time, spec collective.Spec, comm collective.Comm, name string, done func(now sim.Time)) error {
	first := comm.Host(0) / a.domain
	for r := 1; r < comm.Size(); r++ {
		if comm.Host(r)/a.domain != first {
			return a.nic.Launch(at, spec, comm, name, done)
		}
	}
	return a.nvl.Launch(at, spec, comm, name, done)
}

// packetEstimate is a rough count of the packets one step of job moves over the fabric: the
// DP gradient all-reduce (twice the gradient bytes each rank holds) and the PP activations (two
// per microbatch per stage boundary, forward and backward), at 4 KiB per packet.
func packetEstimate(job *training.Job, sc *scenario.Scenario) float64 {
	var bytes float64
	for _, st := range job.Stages() {
		bytes += 2 * float64(st.GradBytes+st.ExpertGradBytes) * float64(job.Plan.TP*job.Plan.DP)
	}
	bytes += 4 * float64(job.Microbatches()) * float64(job.Model.ActivationBytes()) * float64(job.Plan.DP*job.Plan.TP) * float64(max(job.Plan.PP-1, 0))
	return bytes / 4096
}

// selectorModel is the per-GPU network the training job's collective selector assumes: the
// NIC rate (host link x planes) and per message the ideal transport's latency, or on a
// fabric four hop latencies (a two-tier Clos path up and down).
func selectorModel(sc *scenario.Scenario, p topo.Params) collective.Model {
	if sc.Transport.Kind == scenario.TransportIdeal {
		return idealModel(sc, p)
	}
	return collective.Model{Latency: 4 * p.HopLatency, Rate: p.HostLink * sim.Rate(p.Planes)}
}

// idealModel is the closed-form network of transport ideal: its latency, the NIC rate.
func idealModel(sc *scenario.Scenario, p topo.Params) collective.Model {
	return collective.Model{Latency: sc.Transport.Ideal.Latency, Rate: p.HostLink * sim.Rate(p.Planes)}
}

// WritePowerCSV writes power.csv (time_us, power_mw: the cluster's GPU power per sample).
func (t *TrainingRun) WritePowerCSV(w io.Writer) error { return t.Result.WritePowerCSV(w) }

// WriteStepsCSV writes steps.csv (one row per simulated step; with faults its slowest_link
// and events columns come from Faults.Steps).
func (t *TrainingRun) WriteStepsCSV(w io.Writer) error { return t.Result.WriteStepsCSV(w) }

// flapProcesses turns a training scenario's flapping links (faults with action flap; the
// scenario admits no other) into failure processes for the goodput model: each matched link
// fails once per period. fm is the transport's flow model (nil: none, no flap restarts).
// A transport whose endpoints reroute (MRC) absorbs every flap (spraying moves off the
// failed paths within microseconds), but for a host link on one plane: see below. Under one
// that relies on routing (RoCE) a flap restarts the job when its down time outlasts the QPs'
// retry budget (GiveUp; RoCE's RTO x (retry_count + 1)) before routing reconverges (then the
// QPs hashed onto the link break); a shorter one stalls them, and they resume.
func flapProcesses(sc *scenario.Scenario, layout topo.Topology, fm *transport.FlowModel) ([]training.FailureProcess, error) {
	var out []training.FailureProcess
	var inv *fault.Inventory
	for i, f := range sc.Faults {
		if f.Action != scenario.FaultFlap || f.Period <= 0 || f.Random != nil {
			continue // not a recurring flap (the simulated steps apply every fault)
		}
		if inv == nil {
			inv = fault.FromLayout(layout) // every element's name: seconds at 131,072 hosts
		}
		one := f
		one.Action, one.At, one.DownFor, one.Period, one.Count, one.For = scenario.FaultDown, 0, 0, 0, 0, 0
		sch, err := fault.Expand([]fault.Spec{one}, inv, fault.Options{Seed: sc.Run.Seed, Duration: sc.Run.Duration, Path: fmt.Sprintf("faults[%d]", i)})
		if err != nil {
			return nil, err
		}
		links := len(sch.Events)
		restarts := 0.0
		if fm != nil && fm.EndpointReroute && layout.Params().Planes == 1 && f.DownFor > 100*sim.Millisecond {
			// One plane: a host link is the GPU's only way out; the transport has no other
			// path to reroute onto, so an outage longer than its retries (MRC's ACK
			// timeouts: 7 fixed plus exponential ones, tens of ms at the defaults; 100 ms is
			// the bound taken for them) errors the QPs: a restart.
			all := layout.Links()
			for _, e := range sch.Events {
				if k := int(e.Port) / 2; k < len(all) && all[k].Level == 0 {
					restarts = 1
				}
			}
		}
		if fm != nil && !fm.EndpointReroute {
			if budget := fm.GiveUp; f.DownFor > budget && sc.Fabric.Reconvergence > budget {
				restarts = 1
			}
		}
		_, target := f.Target()
		out = append(out, training.FailureProcess{Name: fmt.Sprintf("faults[%d]: %s flaps", i, target),
			Rate: float64(links) / f.Period.Seconds(), Restarts: restarts})
	}
	return out, nil
}

// runTraining runs workload.training: the job's per-rank programs in lockstep, its network
// collectives carried by the transport's model. Transport ideal uses the closed forms
// (collective.Pipelined at the NIC rate); run.engine flow the flow-level engine over the
// topology, MRC spraying every flow over its minimal paths and RoCE hashing each onto one
// path per plane; run.engine packet the packet-level transport, with NVLink traffic inside a
// scale-up domain on an ideal link of the GPU's scale-up rate.
func runTraining(sc *scenario.Scenario, layout topo.Topology, res *Result) error {
	cfg := sc.Workload.Training
	hosts := layout.NumHosts() // res.Net is empty at flow level (fluid)
	p := layout.Params()
	// Every backend below carries the scale-up domain on its own model, so the job may
	// choose hierarchical collectives and run TP on NVLink.
	job, err := cfg.JobOn(hosts, true, selectorModel(sc, p))
	if err != nil {
		return &InputError{Err: err}
	}
	env, err := trainingEnv(sc, layout)
	if err != nil {
		return err
	}
	run := &TrainingRun{Job: job.Summary() + "\nplacement: " + job.Placement.String()}
	b, err := newTrainBackend(sc, layout, res, job)
	if err != nil {
		return err
	}
	run.Engine = b.engine
	out, err := runTrainingJob(sc, layout, res, job, b)
	if err != nil {
		return err
	}
	return finishTraining(sc, layout, res, job, env, run, b, out)
}

// trainingEnv returns the cluster the goodput model charges failures on: the NICs and
// links, the share of link failures that restart the job (every one under a transport
// without endpoint reroute, RoCE; otherwise, on a one-plane Clos, the host links'), and the
// scenario's flapping links as failure processes (flapProcesses). The transport's flow model
// (lookupFlowModel) says which; a transport without one (transport ideal) is charged as one
// that reroutes.
func trainingEnv(sc *scenario.Scenario, layout topo.Topology) (training.Env, error) {
	hosts, p := layout.NumHosts(), layout.Params()
	env := training.Env{NICs: hosts * p.Planes, Links: layout.NumLinks()}
	m, _, ok, err := lookupFlowModel(sc, layout)
	if err != nil {
		return env, err
	}
	var fm *transport.FlowModel
	if ok {
		fm = &m
	}
	if fm != nil && !fm.EndpointReroute {
		env.LinkFailureRestarts = 1
	} else if _, clos := layout.(*topo.Layout); clos && p.Planes == 1 && layout.NumLinks() > 0 {
		// One plane: a host's only link is its only way out, so the transport cannot
		// reroute around its failure; the host links' share of the links restarts the job.
		env.LinkFailureRestarts = float64(hosts) / float64(layout.NumLinks())
	}
	if env.Extra, err = flapProcesses(sc, layout, fm); err != nil {
		return env, &InputError{Err: err}
	}
	return env, nil
}

// trainBackend is the engine a training job's network collectives run on (newTrainBackend):
// the backend the job drives and the parts of it the run reports on; the fields of the
// other engines are nil.
type trainBackend struct {
	engine  string // TrainingRun.Engine: "analytic", "flow" or "packet"
	backend training.Backend
	// Flow level: the network, its collectives, the router, and with faults their
	// schedule on the network and the backend that records their effect on messages.
	fnet   *flow.Net
	fc     *flow.Collectives
	router *flowRouter
	ff     *flowFaults
	rb     *recBackend
	links  *flowLinkFeed // links.csv's series, read as the fluid state advances
	// Packet level: the transport, the executor and the queue sampler.
	ep  transport.Endpoint
	eb  *training.ExecutorBackend
	smp *sampler
}

// newTrainBackend builds the engine job's collectives run on: the closed forms under
// transport ideal (domainAnalytic), else the flow-level engine under run.engine flow
// (newFlowTrainBackend) or the packet-level transport (newPacketTrainBackend).
func newTrainBackend(sc *scenario.Scenario, layout topo.Topology, res *Result, job *training.Job) (*trainBackend, error) {
	switch {
	case sc.Transport.Kind == scenario.TransportIdeal:
		backend, err := newDomainAnalytic(res.Sim, idealModel(sc, layout.Params()), job)
		if err != nil {
			return nil, &InputError{Err: err}
		}
		return &trainBackend{engine: "analytic", backend: backend}, nil
	case sc.Run.Engine == scenario.EngineFlow:
		return newFlowTrainBackend(sc, layout, res, job)
	}
	return newPacketTrainBackend(sc, layout, res, job)
}

// newFlowTrainBackend builds the flow-level engine for job over the topology, routed as the
// transport routes (scenarioFlowRouter) with the scale-up domains on the GPU's scale-up
// links. With faults in the run, they act on the flow network at their times (flowFaults)
// and the backend records their effect on each message (recBackend).
func newFlowTrainBackend(sc *scenario.Scenario, layout topo.Topology, res *Result, job *training.Job) (*trainBackend, error) {
	s := res.Sim
	b := &trainBackend{engine: "flow"}
	g := job.GPU
	base, caps, err := scenarioFlowRouter(sc, layout, job.Placement.Domain, g.ScaleUpRate, g.ScaleUpLatency)
	if err != nil {
		return nil, err
	}
	b.router = base
	stop := func(now sim.Time, err error) { s.Stop(err) }
	ncfg, ccfg := flow.Config{OnStall: stop}, flow.CollConfig{OnError: stop}
	// links.csv: the links' bytes at the series' boundaries, read as the fluid state advances.
	ncfg.OnAdvance = func(now sim.Time) {
		if b.links != nil {
			b.links.observe(now)
		}
	}
	if specs, idx := trainingFaultSpecs(sc); len(specs) > 0 {
		evs, err := expandFaults(specs, idx, fault.FromLayout(layout), sc.Run.Seed)
		if err != nil {
			return nil, &InputError{Err: err}
		}
		if len(evs) > 0 {
			// Faults act on the flow network at their times (flowFaults): stalls are
			// expected, and a flow stalled past its QPs' retry budget is a job restart,
			// not the end of the run.
			ff := newFlowFaults(sc, layout, s, base, caps, evs)
			b.ff = ff
			ncfg.OnStall = ff.onStall
			ccfg.OnError = func(now sim.Time, err error) {
				var se *flow.StallError
				if !errors.As(err, &se) {
					s.Stop(err)
				}
			}
			ccfg.Reroutable = true
			if m := base.model; m.RTO > 0 && !m.EndpointReroute {
				// A message whose last packet is lost waits the RTO (no tail-loss probe).
				ccfg.TailLoss, ccfg.TailRTO, ccfg.TailSeed = ff.tailLoss, ff.rto, sc.Run.Seed
			}
		}
	}
	if b.ff == nil {
		// The host ports are not bundled (bundleHostPorts): a bundle is exact only when every
		// flow stripes over every plane's QPs, and a collective's messages ride one QP each
		// (trainFlowBackend.record, msgPlanes), as at packet level.
		// Nothing reads a finished collective back without faults (flowStepLinks does
		// with them): release each one, as a 131,072-GPU step launches millions.
		ccfg.Forget = true
	}
	if b.fnet, err = flow.New(s, caps, ncfg); err != nil {
		return nil, err
	}
	b.links = newFlowLinkSeries(layout, base, b.fnet, sc.Run.SampleInterval)
	router := newMsgRouter(base)
	ceil, err := newFlowCeiling(s, b.fnet, router, base, layout.Params().HostLink, b.ff != nil)
	if err != nil {
		return nil, err
	}
	if b.fc, err = flow.NewCollectives(b.fnet, ceilRouter(router, ceil), ccfg); err != nil {
		return nil, &InputError{Err: err}
	}
	if b.ff != nil {
		b.ff.ceil = ceil
	}
	// Collectives of up to flowScheduleMaxOps operations (and in a job of more than
	// trainScheduleAllRanks GPUs trainScheduleMaxLoops chunk loops) run their packet-level schedule message by message (flow/dag.go), as at packet
	// level; direct, grouped and larger ones their phases (flow/expand.go).
	b.fc.SetSchedules(flowScheduleMaxOps)
	b.fc.SetScheduleFilter(trainScheduleFilter(job.Placement.World))
	tb := newTrainFlowBackend(b.fc, router)
	b.backend = tb
	if b.ff != nil {
		b.ff.start(b.fnet, b.fc)
		b.rb = &recBackend{Backend: tb}
		b.backend = b.rb
	}
	return b, nil
}

// newPacketTrainBackend builds the packet-level engine for job: the transport's engines
// over the fabric (res.Endpoint set), and the scale-up domain's traffic on an ideal
// link at the GPU's scale-up rate (NVLink is not in the fabric), with the queue sampler
// started. A job whose step moves more than run.max_packets packets is refused.
func newPacketTrainBackend(sc *scenario.Scenario, layout topo.Topology, res *Result, job *training.Job) (*trainBackend, error) {
	s := res.Sim
	hosts := layout.NumHosts()
	b := &trainBackend{engine: "packet"}
	ep, err := newEndpoint(sc, layout, res)
	if err != nil {
		return nil, err
	}
	b.ep = ep
	var fabricT collective.Transport = ep
	tr := fabricT
	var nvl *collective.Ideal
	if d := job.Placement.Domain; d > 1 {
		if nvl, err = collective.NewIdeal(s, collective.IdealConfig{Hosts: hosts, Rate: job.GPU.ScaleUpRate, Latency: job.GPU.ScaleUpLatency}); err != nil {
			return nil, &InputError{Err: err}
		}
		if tr, err = training.NewSplitTransport(d, nvl, fabricT); err != nil {
			return nil, &InputError{Err: err}
		}
	}
	if est := packetEstimate(job, sc); est > float64(sc.Run.MaxPackets) {
		return nil, &InputError{Err: fmt.Errorf("run.engine: packet: a step of this job moves about %.3g packets, beyond run.max_packets (%d, minutes of wall time); use run.engine: flow (the default), a smaller job, or raise run.max_packets", est, sc.Run.MaxPackets)}
	}
	if b.eb, err = training.NewExecutorBackend(s, tr, hosts, 0); err != nil {
		return nil, &InputError{Err: err}
	}
	if nvl != nil {
		nvl.SetSink(b.eb.Delivered)
	}
	ep.SetHooks(transport.Hooks{Delivered: b.eb.Delivered, Group: b.eb.Group})
	b.smp = newEndpointSampler(sc, res, layout.Params().Planes, ep)
	b.smp.start()
	b.backend = b.eb
	return b, nil
}

// trainOutcome is what runTrainingJob leaves: the trace of the steps the job ran, and how
// a run that could not finish them ended.
type trainOutcome struct {
	trace *training.Trace
	// links names each step's slowest link with the links' fault state then (flow level
	// with faults, else nil).
	links *flowStepLinks
	// qpErrAt is when the packet-level transport gave up (a restart), -1 when it did not.
	qpErrAt sim.Time
	// failure is why the flow-level job could not go on after its completed steps, "" when
	// it did.
	failure string
	// fold and foldNote are the run's fold (TrainingRun.Fold, FoldNote).
	fold     int
	foldNote string
}

// runTrainingJob runs job on backend b to the end (training.Job.Run, driven here so that a
// packet-level run whose QPs gave up keeps the steps it finished: Run.Completed) and returns
// its trace. A run that stopped early is a restart (packet level: the QPs gave up after a
// step finished) or a failed run (flow level: faults left it unable to go on after a step
// finished), reported in the outcome; any other stop is the error returned, with what the
// engine was waiting for.
func runTrainingJob(sc *scenario.Scenario, layout topo.Topology, res *Result, job *training.Job, b *trainBackend) (trainOutcome, error) {
	s, cfg := res.Sim, sc.Workload.Training
	ff, fc, eb, ep := b.ff, b.fc, b.eb, b.ep
	out := trainOutcome{qpErrAt: -1}
	simSteps := min(max(cfg.SimSteps, 1), max(cfg.Steps, 1))
	opts := training.RunOptions{Steps: simSteps, Exact: cfg.Exact, Stragglers: cfg.Stragglers, OnStep: res.stepFaults}
	opts.Folds = trainFold(sc, layout, job, b) // symmetric replicas simulated once (flowfold.go)
	var jr *training.Run
	if ff != nil {
		// Each step's slowest link is named as it ends, with the links' fault state then.
		links := &flowStepLinks{fc: fc, rb: b.rb, job: job, name: flowLinkNamer(layout, b.router, ff), ff: ff}
		out.links = links
		opts.OnStep = func(now sim.Time, step int) {
			if done := jr.Completed(); step > 0 && done != nil && len(done.Steps) >= step {
				links.close(step-1, now, done.Steps[step-1].Slowest)
			}
			ff.stepStart(now, step)
		}
	}
	jr, err := job.Start(s, b.backend, opts)
	if jr != nil {
		out.fold, out.foldNote = jr.FoldOrder(), jr.FoldReason
	}
	if err != nil {
		return out, &InputError{Err: err}
	}
	if m := res.meter; m != nil {
		m.unit = "of the simulated steps done"
		m.done = func() (float64, float64) {
			n := 0
			if c := jr.Completed(); c != nil {
				n = len(c.Steps)
			}
			return float64(n), float64(simSteps)
		}
	}
	derr := s.Drain(sim.MaxTime)
	if done := jr.Completed(); out.links != nil && done != nil && len(done.Steps) > len(out.links.names) {
		k := len(done.Steps) - 1
		out.links.close(k, s.Now(), done.Steps[k].Slowest)
	}
	out.trace, err = jr.Trace()
	if err != nil && derr != nil {
		err = derr
	}
	if err == nil {
		return out, nil
	}
	errs := endpointErrs(ep)
	switch {
	case eb != nil && len(errs) > 0 && jr.Completed() != nil:
		// The job restarts; the packet engine does not simulate past it (its QPs are
		// dead): the steps done stand, the restart is charged and the run says so.
		out.trace = jr.Completed()
		_, errAt := ep.Log()
		out.qpErrAt = firstTime(errAt)
	case eb != nil && len(errs) > 0:
		return out, &JobStoppedError{Err: fmt.Errorf("training stopped at %v: %w (%d QP(s) gave up, the first: %v; the job would restart, but no step finished before it, so there is nothing to report: run.engine: flow goes on through restarts; waiting: %s)", s.Now(), err, len(errs), errs[0], eb.Stuck(8))}
	case eb != nil:
		return out, &JobStoppedError{Err: fmt.Errorf("training stopped at %v: %w (waiting: %s)", s.Now(), err, eb.Stuck(8))}
	case ff != nil && b.fnet.Err() != nil && jr.Completed() != nil:
		// A failed run, with the steps that finished reported (summary.json failed,
		// steps.csv, the RUN FAILED headline).
		out.trace = jr.Completed()
		out.failure = fmt.Sprintf("training could not continue at %v, in step %d: %s", s.Now(), len(out.trace.Steps), ff.stuck(flowLinkNamer(layout, b.router, ff)))
	case ff != nil && b.fnet.Err() != nil:
		return out, &JobStoppedError{Err: fmt.Errorf("training could not continue at %v: %s (%w)", s.Now(), ff.stuck(flowLinkNamer(layout, b.router, ff)), err)}
	case fc != nil && fc.Incomplete() != nil:
		return out, &JobStoppedError{Err: fmt.Errorf("training stopped at %v: %w (%v)", s.Now(), err, fc.Incomplete())}
	default:
		return out, &JobStoppedError{Err: fmt.Errorf("training stopped at %v: %w", s.Now(), err)}
	}
	return out, nil
}

// finishTraining evaluates the job's trace out on the cluster env (training.Config.Evaluate)
// and writes the run up: res.Training, the summary (the transport's at packet level), the
// faults' effect on the job (with its faultless baseline when nothing restarted), a failed
// run's reason, steps.csv's fault columns, and on a torus with optical circuit switches the
// chip failures routed around.
func finishTraining(sc *scenario.Scenario, layout topo.Topology, res *Result, job *training.Job, env training.Env,
	run *TrainingRun, b *trainBackend, out trainOutcome) error {
	s, cfg := res.Sim, sc.Workload.Training
	hosts, p := layout.NumHosts(), layout.Params()
	trace, failure := out.trace, out.failure
	tr, err := cfg.Evaluate(trace, env)
	if err != nil {
		return err
	}
	run.Result = tr
	run.Fold, run.FoldNote = max(out.fold, 1), out.foldNote
	if run.Engine == "analytic" && cfg.TPModel == "simulated" && job.Plan.TP > 1 {
		// Decision: a note, not an error (the run is valid, just not what simulated promises).
		tr.Notes = append(tr.Notes, "tp_model simulated with transport ideal: the ideal transport times each NVLink TP collective in closed form without contention, so the result equals tp_model closed_form; use a transport (mrc, roce) with run.engine flow or packet to simulate NVLink sharing")
	}
	if b.fnet != nil {
		st := b.fnet.Stats()
		run.Flow = &st
	}
	res.Training = run
	end := s.Now()
	res.trafficEnd = end
	if b.links != nil {
		b.links.finish(end)
		res.Links = b.links.ls
	}
	if b.eb != nil {
		if err := finishTransport(sc, res, b.ep, b.smp, end); err != nil {
			return err
		}
	} else {
		res.Summary = Summary{Scenario: sc.Name, Seed: sc.Run.Seed, Hosts: hosts, Planes: p.Planes,
			Switches: layout.NumNodes() - hosts, Links: layout.NumLinks(),
			DurationUs: us(end), EndUs: us(end), Events: s.Events(), Drops: map[string]int64{}}
	}
	res.Summary.Training, res.Summary.Engine = tr, run.Engine
	switch {
	case b.ff != nil:
		run.Faults = flowTrainingFaults(sc, b.ff, trace, tr, out.links, layout, b.router)
	case b.eb != nil && len(res.Faults) > 0:
		run.Faults = packetTrainingFaults(sc, res, trace, tr, out.qpErrAt, b.ep)
	}
	if run.Faults != nil && len(run.Faults.Restarts) == 0 && failure == "" {
		if err := run.Faults.rerunBaseline(sc); err != nil {
			return err
		}
	}
	res.Summary.TrainingFaults = run.Faults
	if failure != "" {
		res.Summary.Failed, res.Summary.FailureReason = true, failure
		if run.Faults != nil {
			run.Faults.Notes = append(run.Faults.Notes, failure)
		}
	}
	if run.Faults != nil {
		// steps.csv's slowest_link and events columns (training.StepRecord).
		for k := range tr.StepRecords {
			if k < len(run.Faults.Steps) {
				tr.StepRecords[k].SlowestLink, tr.StepRecords[k].Events = run.Faults.Steps[k].SlowestLink, run.Faults.Steps[k].Events
			}
		}
	}
	if sc.Topology.Torus != nil && sc.Topology.Torus.OCS {
		if run.Engine == "packet" && len(sc.Faults) > 0 {
			return &InputError{Err: fmt.Errorf("faults: an OCS remap reruns the job at flow level; use run.engine: flow")}
		}
		ev, err := ocsRemaps(sc, layout, tr)
		if err != nil {
			return &InputError{Err: err}
		}
		run.OCS, res.Summary.OCS = ev, ev
	}
	return nil
}

// JobStoppedError is a training job that stopped before any step finished (a host cut off,
// a QP that gave up, a collective that cannot complete): nothing of the job's own to report.
// Run turns it into a failed run with outputs (summary.json failed, its reason, the RUN
// FAILED headline, exit 1), not an error (stoppedResult).
type JobStoppedError struct{ Err error }

func (e *JobStoppedError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *JobStoppedError) Unwrap() error { return e.Err }
