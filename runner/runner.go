// Package runner turns a resolved scenario into a simulation: it builds the fabric from the
// topology, expands traffic patterns into flows, samples queues, runs the kernel, drains the
// fabric, audits packet conservation and summarises the result.
//
// Timeline of a run: traffic is offered over [0, run.duration]; utilisation and offered load
// are measured over that interval (port counters are snapshotted at its end); the run then
// continues for at most run.drain so packets in flight land, stopping as soon as no event is
// pending. Packets still inside the fabric after the drain are reported, not hidden.
package runner

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/traffic"
	"github.com/lockstepsim/lockstep/transport"
)

// Result is a finished run: the summary plus the live objects for callers that want more
// (tests, later reports).
type Result struct {
	Summary Summary
	Sim     *sim.Sim
	Net     *fabric.Network
	Raw     *traffic.Raw
	// Endpoint is the transport's NIC adapter carrying traffic transfers: the packet-level
	// one, or at flow level the fluid model's (flowTraffic); nil for raw traffic, transport
	// ideal and workloads at flow level. Endpoint.Run gives its typed run (*mrcnic.Run,
	// *rocenic.Run).
	Endpoint transport.Endpoint
	// DoneAt is when the transport's last transfer was acknowledged (MaxTime if some never
	// were); 0 without an Endpoint.
	DoneAt sim.Time
	// Collective holds the report rows of a collective workload (workload.collectives).
	Collective *CollectiveRun
	// Training holds a training workload's result (workload.training).
	Training *TrainingRun
	// Chakra holds a Chakra trace's node times (workload.chakra).
	Chakra *ChakraRun
	Faults []FaultEvent
	// Links is every port's traffic per interval (links.csv); nil under transport ideal.
	Links *LinkSeries
	// Reconverge lists when the ECMP tables were due to be recomputed after link faults
	// (fabric.reconvergence after each); those past the run's end never happened.
	Reconverge []sim.Time
	// progress is the goodput series (payload delivered at each queue sample) and
	// trafficEnd when the traffic or workload ended: a twin run's are the baseline of fault
	// costs.
	progress   []progressSample
	trafficEnd sim.Time
	lossAt     []sim.Time // loss-driven retransmission times (transports)
	errAt      []sim.Time // QP error times (transports)
	warnings   []string   // the transport's pre-run warnings (Plugin.Check)
	// stepFaults schedules the fault events of at_step entries when a training step starts
	// (packet level; nil without such entries).
	stepFaults func(now sim.Time, step int)
	// Wall is the wall-clock time the simulation took. It is not part of Summary, which must be
	// byte-identical across runs.
	Wall time.Duration
	// meter is what the progress reports and the interrupt check share with the runners.
	meter *meter
	// partial: the run was interrupted where its figures cannot be gathered (a collective or
	// training workload, the fault baseline): Summary holds the common figures only and Files
	// lists none.
	partial bool
	// fluidFaults are the fault entries a flow-level traffic run applies itself
	// (flowTraffic, through flowFaults); nil in the fault baseline twin.
	fluidFaults []scenario.Fault
	// stall, when a workload stopped with collectives not done (a stallError), is why: the
	// run keeps the figures gathered up to then and fails with it (markOutcome's peer).
	stall string
	// undrained, when the fabric still held packets after run.drain, is what it held: the
	// run completes as failed (markNotDrained).
	undrained *NotDrained
}

// stallError is a workload that stopped before its collectives were done (run.duration
// reached, nothing left to happen, a QP that gave up): not bad input nor a broken run, but
// a failed one, whose results folder is still written with "failed": true and the reason,
// so a user sees what finished and what was stuck.
type stallError struct{ err error }

func (e *stallError) Error() string { return e.err.Error() }
func (e *stallError) Unwrap() error { return e.err }

// meter is a run's progress state: the interrupt reason once one was honoured, and what the
// runner knows of where the run is going (Progress.Target, Done, Total).
type meter struct {
	stopped    string   // the Interrupt's reason once the kernel was stopped for it
	target     sim.Time // Progress.Target
	targetWhat string   // Progress.TargetWhat
	unit       string   // Progress.Unit
	done       func() (done, total float64)
}

// interrupted reports whether the run was stopped by an Interrupt: the runners then skip the
// drain and the conservation audit (packets are still inside the fabric) and summarise what
// happened up to then.
func (res *Result) interrupted() bool { return res.meter != nil && res.meter.stopped != "" }

// Interrupt is a request to stop a run early, made from another goroutine (a signal
// handler). The run honours it at the next event boundary (checked every few thousand
// events): the kernel stops there, the drain and the audit are skipped, and the Result
// describes the run up to that simulated time with Summary.Complete false. The zero value is
// ready to use.
type Interrupt struct{ reason atomic.Pointer[string] }

// Request asks the run to stop; reason ("SIGINT") is recorded in summary.json's
// "interrupted". The first request's reason wins; later ones change nothing.
func (i *Interrupt) Request(reason string) { i.reason.CompareAndSwap(nil, &reason) }

// Reason returns the first request's reason, "" while none was made (and for a nil
// Interrupt).
func (i *Interrupt) Reason() string {
	if i == nil {
		return ""
	}
	if r := i.reason.Load(); r != nil {
		return *r
	}
	return ""
}

// interruptEvery is how many events pass between two checks of an Interrupt (flow level:
// interruptEveryFluid, each event there being a whole rate recompute).
const (
	interruptEvery      = 1 << 12
	interruptEveryFluid = 1 << 2
)

// Run executes sc, which must be resolved (scenario.Parse or Resolve). Errors: a scenario the
// builders reject (bad input, exit code 2 in the CLI) are returned as *InputError; a run that
// fails its conservation audit or stops with a kernel error returns a plain error (exit 1).
func Run(sc *scenario.Scenario) (*Result, error) { return RunWith(sc, Options{}) }

// Options adjusts how Run executes, never what it computes.
type Options struct {
	// Progress, when set, is called every ProgressEvents dispatched events (default 1<<20)
	// from inside the run: for progress bars. It must not keep the Progress past the call.
	Progress       func(Progress)
	ProgressEvents uint64
	// Interrupt, when set, stops the run early when requested (see Interrupt); nil: never.
	Interrupt *Interrupt
	// Warn, when set, receives warnings found before the simulation starts (a PFC
	// configuration that cannot be lossless), one line each; they are in the summary too.
	Warn func(string)
}

// Progress is a running simulation's state, for progress reports.
type Progress struct {
	// Phase is "baseline" while the faultless twin of a run with faults runs, else "run".
	Phase  string
	Now    sim.Time // simulated time
	Bound  sim.Time // run.duration: traffic stops, or a workload must be done, by then
	Events uint64   // events dispatched so far in this phase
	Wall   time.Duration
	// Target is the simulated time the run is expected to reach, for a percentage: raw
	// traffic's run.duration, or the ideal completion (alone on an idle fabric) of the
	// transfer that ends last, which congestion makes a lower bound; 0 when none is known
	// (workloads). TargetWhat says which ("run.duration", "ideal completion").
	Target     sim.Time
	TargetWhat string
	// Done of Total units of work are finished (Unit, e.g. "of the payload placed"): the
	// measure an ETA extrapolates; Total 0 when the runner cannot say cheaply.
	Done, Total float64
	Unit        string
}

// RunWith is Run with options.
func RunWith(sc *scenario.Scenario, opt Options) (*Result, error) {
	res, err := run(sc, false, opt)
	if res != nil {
		res.Summary.Notes = engineNotes(sc)
	}
	return res, err
}

// engineNotes is what the engine running sc leaves out of it (Summary.Notes): at flow level,
// the notes of the transport block's transport.FlowLevelNoter; nil at packet level, under
// the ideal transport, and for a block with nothing to say.
func engineNotes(sc *scenario.Scenario) []string {
	if sc.Run.Engine != scenario.EngineFlow || !sc.Fluid() {
		return nil
	}
	var out []string
	if n, ok := sc.Transport.Block().(transport.FlowLevelNoter); ok {
		out = n.FlowLevelNotes()
	}
	if n := creditLimitedNote(sc); n != "" {
		out = append(out, n)
	}
	return out
}

// creditLimitedNote says, at flow level, when the transport's link-level flow control
// (transport.HopRateLimiter: InfiniBand credits) caps links below their rate: the flow level
// runs each such link at its cap and shares it max-min (flowRouter.wireRate), while at packet
// level a credit-starved link also holds the packets behind it (head-of-line blocking between
// the flows that cross it, worse when adaptive routing spreads every flow over several
// starved links), which the fluid does not contain. Measured (docs/protocols.md, "Flow level
// under credit-limited links"): a 32-host 2 MiB permutation with buffer_per_vl 8KiB, 16KiB,
// 64KiB gives flow/packet 0.900, 0.912, 0.916 under static routing and 0.577, 0.758, 0.921
// under adaptive routing. "" when no link is capped or the topology cannot be described.
func creditLimitedNote(sc *scenario.Scenario) string {
	h, ok := sc.Transport.Block().(transport.HopRateLimiter)
	if !ok {
		return ""
	}
	t, err := sc.Topology.Describe()
	if err != nil {
		return ""
	}
	capped, total, least := 0, 0, 1.0
	links := t.Links()
	hosts := t.NumHosts()
	for i := range links {
		l := &links[i]
		for _, to := range []int{l.B.Node, l.A.Node} {
			if l.Rate <= 0 {
				continue
			}
			total++
			r := h.HopRate(l.Rate, l.Delay, to >= 0 && to < hosts)
			if f := float64(r) / float64(l.Rate); r > 0 && f < 1-1e-9 {
				capped++
				least = min(least, f)
			}
		}
	}
	if capped == 0 {
		return ""
	}
	return fmt.Sprintf("transport.%s: %d of %d directed links are limited by its link-level flow control (credits below the credit round trip), down to %.3f of their rate: the flow level runs each at that limit and shares it max-min, without the head-of-line blocking a credit-starved link adds at packet level (flow/packet 0.90-0.92 on a 32-host permutation at 8-64 KiB per VL, 0.58-0.92 under adaptive routing; docs/protocols.md); run.engine packet runs it",
		sc.Transport.Kind, capped, total, least)
}

// run executes sc; with dryFaults its faults are scheduled but not applied (the faultless
// twin of a run with faults).
func run(sc *scenario.Scenario, dryFaults bool, opt Options) (*Result, error) {
	wallStart := time.Now()
	var twin *Result
	// A training job's faults act on its network at their times (at flow level in
	// runTraining, flowFaults; at packet level scheduled here, as for traffic); its steps
	// before the first fault are the baseline, so no twin runs. Recurring flaps are also
	// failure processes of its goodput (flapProcesses).
	training := sc.Workload.Training != nil
	if !dryFaults && !training && len(sc.Faults) > 0 && sc.Run.FaultBaseline != scenario.FaultBaselineNone {
		// The same run with its faults inert: the baseline each failure's cost is measured on.
		tsc := *sc
		var err error
		if twin, err = run(&tsc, true, opt); err != nil {
			return nil, fmt.Errorf("fault baseline (the scenario without its faults): %w", err)
		}
	}
	s := sim.New(sc.Run.Seed)
	m := &meter{}
	if twin != nil && twin.interrupted() {
		// Stopped in the faultless twin: this run never started.
		m.stopped = twin.meter.stopped
		return interruptedResult(sc, twin.Sim, twin.Net, m, "the fault baseline (the scenario run without its faults, to measure what they cost)", wallStart), nil
	}
	watch(sc, s, m, dryFaults, opt)
	net := fabric.New(s)
	layout, err := sc.Topology.Describe()
	if err != nil {
		return nil, &InputError{Err: err}
	}
	// fabric.profile is applied by scenario.Resolve (resolve_profile.go): sc is what runs.
	if err := checkPFCBuffer(sc, layout); err != nil {
		return nil, &InputError{Err: err}
	}
	// Flow level and closed forms use the topology only: no packet fabric to build, so any
	// size runs (131k GPUs).
	if !sc.Fluid() {
		if err := topo.BuildTopology(net, layout, topo.BuildOptions{SwitchQueue: sc.Fabric.SwitchQueue, LastHopQueue: sc.Fabric.LastHopQueue, NICQueue: sc.Fabric.NICQueue}); err != nil {
			return nil, &InputError{Err: err}
		}
	}
	if sc.Fabric.ECMPSeed == "shared" {
		net.SetECMPSharedSeed(true)
	}
	if a := sc.Fabric.AdaptiveRouting; a != nil && !sc.Fluid() {
		if err := net.SetAdaptive(*a); err != nil {
			return nil, &InputError{Err: err}
		}
	}
	if pfc := sc.Fabric.PFC.Config(); pfc.Enabled {
		if err := net.SetPFC(pfc); err != nil {
			return nil, &InputError{Err: fmt.Errorf("fabric.pfc: %w", err)}
		}
		if opt.Warn != nil && !dryFaults {
			for _, w := range pfcProblems(net) {
				opt.Warn("fabric.pfc: cannot be lossless: " + w)
			}
			if layout.Params().Kind == "torus" {
				opt.Warn("fabric.pfc: on a torus, routes around the wrap-around rings form cyclic buffer dependencies (no virtual channels are modelled), so PFC can deadlock under load; the run stops and names the cycle if it does (fabric.pfc.watchdog breaks it)")
			}
		}
	}
	res := &Result{Sim: s, Net: net, meter: m}
	if res.warnings, err = preRunChecks(sc, layout, res); err != nil {
		return nil, err
	}
	if opt.Warn != nil && !dryFaults {
		for _, w := range res.warnings {
			opt.Warn(w)
		}
	}
	if err := applySwitchModel(sc, net); err != nil {
		return nil, err
	}
	specs := sc.Faults
	if sc.Fluid() {
		specs = nil // the flow level applies them (flowFaults)
		if !training && !dryFaults {
			res.fluidFaults = sc.Faults // flowTraffic's
		}
	}
	faults, faultKind, err := scheduleFaults(s, net, specs, dryFaults)
	if err != nil {
		return nil, &InputError{Err: err}
	}
	res.Faults = faults // a flow-level traffic run sets its own (newFlowTraffic)
	var reconvergeAt func(sim.Time)
	res.Reconverge, reconvergeAt = scheduleReconvergence(s, net, faults, sc.Fabric.Reconvergence, dryFaults)
	res.stepFaults = stepFaults(s, faults, faultKind, func(at sim.Time) {
		if n := len(res.Reconverge); reconvergeAt != nil && (n == 0 || res.Reconverge[n-1] != at+sc.Fabric.Reconvergence) {
			reconvergeAt(at)
			res.Reconverge = append(res.Reconverge, at+sc.Fabric.Reconvergence)
		}
	})
	switch {
	case sc.Workload.Chakra != nil:
		err = runChakra(sc, layout, res)
	case sc.Workload.Training != nil:
		err = runTraining(sc, layout, res)
	case len(sc.Workload.Collectives) > 0:
		err = runCollective(sc, layout, res)
	case sc.Transport.Kind == scenario.TransportRaw:
		err = runRaw(sc, layout, res)
	default:
		err = runTransport(sc, layout, res)
	}
	if res.interrupted() {
		if err != nil || res.Summary.Scenario == "" || res.stall != "" {
			// A workload stopped midway reports no figures of its own (its engines fail
			// on work left undone): the common ones only.
			return interruptedResult(sc, s, net, m, "", wallStart), nil
		}
		markInterrupted(sc, res, "")
		res.Wall = time.Since(wallStart)
		return res, nil
	}
	if st := (*JobStoppedError)(nil); errors.As(err, &st) && !dryFaults {
		return stoppedResult(sc, s, net, m, st.Error(), wallStart), nil
	}
	if err != nil {
		return nil, err
	}
	res.Summary.Complete = true
	res.Summary.Switch = switchSummary(sc, net)
	res.Summary.Adaptive = adaptiveSummary(net)
	markRunOutcome(sc, res)
	if faults := res.Faults; len(faults) > 0 && !dryFaults {
		var base []progressSample
		if twin != nil {
			base = twin.progress
			res.Summary.FaultBaselineEndUs = us(twin.trafficEnd)
			res.Summary.FaultSlowdownUs = us(res.trafficEnd - twin.trafficEnd)
		}
		unfinished := 0
		if t := res.Summary.Transport; t != nil {
			unfinished = t.Flows - t.FlowsCompleted - res.Summary.UnboundedFlows
		}
		res.Summary.Faults = faultCosts(net, faults, labels(sc), res.progress, base, res.lossAt, res.errAt, res.trafficEnd, unfinished)
	}
	res.Wall = time.Since(wallStart)
	return res, nil
}

// markRunOutcome decides whether a completed run failed and why (Summary.Failed and
// FailureReason): the transfers and QPs (markOutcome), then a workload that stalled
// (Result.stall) and a fabric that did not drain (markNotDrained), each put first in the
// reason, then the training job's outcome (markTrainingOutcome).
func markRunOutcome(sc *scenario.Scenario, res *Result) {
	markOutcome(sc, &res.Summary)
	if res.stall != "" {
		sm := &res.Summary
		why := res.stall
		if sm.FailureReason != "" {
			why += "; " + sm.FailureReason
		}
		sm.Failed, sm.FailureReason = true, why
	}
	markNotDrained(sc, &res.Summary, res.undrained)
	markTrainingOutcome(sc, &res.Summary)
}

// watch installs the kernel's progress callback of a run: opt.Progress every
// opt.ProgressEvents events (default 1<<20, flow level 1<<8) and, with opt.Interrupt, a check
// every interruptEvery events that stops the kernel (sim.Stop, no error) once an interrupt
// was requested, recording its reason in m. Neither schedules anything, so neither changes
// what the run computes.
func watch(sc *scenario.Scenario, s *sim.Sim, m *meter, dryFaults bool, opt Options) {
	if opt.Progress == nil && opt.Interrupt == nil {
		return
	}
	phaseStart := time.Now() // this simulation's own start: events/s per phase
	every := opt.ProgressEvents
	if every == 0 {
		every = 1 << 20
		if sc.Fluid() {
			every = 1 << 8 // few events, each a whole rate recompute
		}
	}
	tick := every
	if opt.Interrupt != nil {
		tick = min(tick, interruptEvery)
		if sc.Fluid() {
			tick = min(tick, interruptEveryFluid)
		}
	}
	phase := "run"
	if dryFaults {
		phase = "baseline"
	}
	next := s.Events() + every
	s.SetProgress(tick, func(now sim.Time) {
		if opt.Interrupt != nil && m.stopped == "" {
			if r := opt.Interrupt.Reason(); r != "" {
				m.stopped = r
				s.Stop(nil) // at this event boundary; Run returns without advancing the clock
				return
			}
		}
		if opt.Progress == nil || s.Events() < next {
			return
		}
		next = s.Events() + every
		p := Progress{Phase: phase, Now: now, Bound: sc.Run.Duration, Events: s.Events(), Wall: time.Since(phaseStart),
			Target: m.target, TargetWhat: m.targetWhat, Unit: m.unit}
		if m.done != nil {
			p.Done, p.Total = m.done()
		}
		opt.Progress(p)
	})
}

// markInterrupted marks res's summary as the figures of a run interrupted at the kernel's
// current time (in names where: "" for the run itself): Complete false, the reason, the time
// reached, and a note that the drain and the audit were skipped. The outcome checks
// (markOutcome) and fault costs are not made: transfers cut short are not failures, and a
// failure's cost needs the run to its end.
func markInterrupted(sc *scenario.Scenario, res *Result, where string) {
	sm := &res.Summary
	at := res.Sim.Now()
	sm.Complete = false
	sm.Interrupted = res.meter.stopped
	atUs := round3(at.Micros())
	sm.InterruptedAtUs = &atUs
	if where == "" {
		where = "the run"
	}
	what := "the figures and files cover the run up to then, and transfers still in progress show as not finished"
	if res.partial {
		what = "only the scenario's size, the events and the time reached are reported (the workload's own figures and files need it to finish)"
	}
	sm.InterruptedNote = fmt.Sprintf("%s was interrupted (%s) at %v of simulated time (run.duration %v): the fabric was not drained and packet conservation not audited; %s",
		where, res.meter.stopped, at, sc.Run.Duration, what)
}

// interruptedResult is the Result of a run interrupted where its own figures cannot be
// gathered (see Result.partial): the scenario, seed, fabric size, events and times only.
func interruptedResult(sc *scenario.Scenario, s *sim.Sim, net *fabric.Network, m *meter, where string, wallStart time.Time) *Result {
	res := commonResult(sc, s, net, m)
	markInterrupted(sc, res, where)
	res.Wall = time.Since(wallStart)
	return res
}

// stoppedResult is the Result of a workload that stopped with nothing of its own to report
// (JobStoppedError): the common figures of interruptedResult, complete (the run went as far
// as it could) and failed with why, so the CLI writes summary.json and the report, prints
// RUN FAILED and exits 1.
func stoppedResult(sc *scenario.Scenario, s *sim.Sim, net *fabric.Network, m *meter, why string, wallStart time.Time) *Result {
	res := commonResult(sc, s, net, m)
	res.Summary.Complete = true
	res.Summary.Failed, res.Summary.FailureReason = true, why
	res.Wall = time.Since(wallStart)
	return res
}

// commonResult is a partial Result (Result.partial) with the figures every run has: the
// scenario, seed, fabric size, events and the time reached.
func commonResult(sc *scenario.Scenario, s *sim.Sim, net *fabric.Network, m *meter) *Result {
	res := &Result{Sim: s, Net: net, meter: m, partial: true}
	sm := &res.Summary
	sm.Scenario, sm.Seed = sc.Name, sc.Run.Seed
	if net != nil && net.NumHosts() > 0 {
		sm.Hosts, sm.Planes = net.NumHosts(), len(net.Nodes[0].Ports)
		sm.Switches, sm.Links = len(net.Nodes)-net.NumHosts(), len(net.Ports)/2
	}
	sm.DurationUs, sm.EndUs, sm.Events = round3(s.Now().Micros()), round3(s.Now().Micros()), s.Events()
	sm.Drops = map[string]int64{}
	return res
}

// runRaw offers paced raw traffic over [0, run.duration], then drains the fabric.
func runRaw(sc *scenario.Scenario, layout topo.Topology, res *Result) error {
	s, net := res.Sim, res.Net
	flows, err := expandTraffic(sc, layout, net)
	if err != nil {
		return &InputError{Err: err}
	}
	raw, err := traffic.NewRaw(net, flows)
	if err != nil {
		return &InputError{Err: err}
	}
	smp := newSampler(s, net, layout.Params().Planes, sc.Run.SampleInterval, sc.Run.Duration)
	res.Links = smp.links
	res.meter.target, res.meter.targetWhat = sc.Run.Duration, "run.duration"
	raw.Start()
	smp.placed = func() int64 { return raw.Totals().RecvBytes }
	smp.start()

	if err := s.Run(sc.Run.Duration); err != nil {
		return fmt.Errorf("run stopped at %v: %w", s.Now(), err)
	}
	snap := snapshot(net)
	smp.links.finish(net.Sim().Now())
	end := sc.Run.Duration
	if res.interrupted() {
		end = s.Now() // no drain, no audit: packets are still inside
	} else {
		if err := s.Drain(sc.Run.Duration + sc.Run.Drain); err != nil {
			return fmt.Errorf("run stopped during drain at %v: %w", s.Now(), err)
		}
		if err := net.Audit(); err != nil {
			return err
		}
		if left := net.InFlight(); left > 0 {
			res.undrained = notDrained(net, left, sc.Run.Drain)
		}
	}
	res.Raw = raw
	res.Summary = summarise(sc, net, len(raw.Flows), smp, snap, end)
	res.Summary.PFC = pfcSummary(sc, net, end)
	res.progress, res.trafficEnd = smp.progress, end
	rawFigures(&res.Summary, raw, end)
	return nil
}

// InputError marks an error caused by the scenario rather than by the run.
type InputError struct{ Err error }

// Error returns the wrapped error's message.
func (e *InputError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error, for errors.Is and errors.As.
func (e *InputError) Unwrap() error { return e.Err }

// portSnap is one port's counters at the end of the offered-load interval.
type portSnap struct {
	txBytes, offeredBytes int64
	meanDepth             float64 // time-averaged bytes queued over [0, the snapshot]
}

func snapshot(net *fabric.Network) []portSnap {
	out := make([]portSnap, len(net.Ports))
	now := net.Sim().Now()
	for i := range net.Ports {
		t := net.Ports[i].Totals()
		out[i] = portSnap{txBytes: net.Ports[i].SentBytes(now), offeredBytes: t.EnqBytes + t.DropBytes, meanDepth: t.MeanDepth(now)}
	}
	return out
}

// sampler records every switch egress port's queue depth each interval into per-plane HDR
// histograms, giving depth percentiles over (port, time).
type sampler struct {
	s        *sim.Sim
	net      *fabric.Network
	interval sim.Time
	until    sim.Time
	kind     sim.Kind
	ports    []fabric.PortID
	plane    []int // plane of each sampled port
	hist     []*hdrhistogram.Histogram
	all      *hdrhistogram.Histogram
	maxPlane []int64 // the deepest sample per plane, exact (the histograms round up)
	maxAll   int64
	// extra, when set, runs at every sample (e.g. EV state counts).
	extra func(now sim.Time)
	// links records every port's traffic per interval (links.csv).
	links *LinkSeries
	// placed, when set, reads the payload delivered so far (all flows), recorded at every
	// sample into progress: the goodput series fault costs are measured on.
	placed   func() int64
	progress []progressSample
	// pfc: run the PFC watchdog and deadlock check at every sample; deadlock holds the cycle
	// the last check found (a cycle found twice in a row stops the run).
	pfc      bool
	deadlock string
	// stoppedEarly: driveTransport found the run stopped before run.duration with transfers
	// still outstanding (a halt: every one left was on a QP that gave up).
	stoppedEarly bool
}

// progressSample is the payload delivered by At.
type progressSample struct {
	At     sim.Time
	Placed int64
}

// maxDepthTracked bounds the depth histograms (64 GiB); deeper samples are clamped.
const maxDepthTracked = int64(64) << 30

func newSampler(s *sim.Sim, net *fabric.Network, planes int, interval, until sim.Time) *sampler {
	sm := &sampler{s: s, net: net, interval: interval, until: until, all: hdrhistogram.New(1, maxDepthTracked, 3)}
	for p := 0; p < planes; p++ {
		sm.hist = append(sm.hist, hdrhistogram.New(1, maxDepthTracked, 3))
		sm.maxPlane = append(sm.maxPlane, 0)
	}
	for i := range net.Ports {
		n := &net.Nodes[net.Ports[i].Node]
		if n.Kind == fabric.Switch {
			sm.ports = append(sm.ports, fabric.PortID(i))
			sm.plane = append(sm.plane, int(n.Plane))
		}
	}
	sm.kind = s.Register("runner.sample", sm.onSample)
	sm.links = newLinkSeries(net, interval)
	sm.pfc = net.PFCOn()
	return sm
}

// start schedules the first sample. Samples only observe, so they take their own tiebreak
// keys (sim.AtOwnKey): the sampling interval, or a run.duration that changes the default one,
// never reorders the model's same-instant events.
func (sm *sampler) start() { sm.s.AtOwnKey(sm.interval, sm.kind, 0, 0) }

func (sm *sampler) onSample(now sim.Time, _ int32, _ uint64) {
	for i, pid := range sm.ports {
		d := sm.net.Ports[pid].QueueBytes()
		if d > maxDepthTracked {
			d = maxDepthTracked
		}
		_ = sm.hist[sm.plane[i]].RecordValue(d)
		_ = sm.all.RecordValue(d)
		sm.maxAll = max(sm.maxAll, d)
		if pl := sm.plane[i]; pl < len(sm.maxPlane) {
			sm.maxPlane[pl] = max(sm.maxPlane[pl], d)
		}
	}
	if sm.extra != nil {
		sm.extra(now)
	}
	sm.links.sample(now)
	if sm.pfc {
		cycle := sm.net.PFCCheck(now)
		if cycle != "" && cycle == sm.deadlock {
			sm.s.Stop(fmt.Errorf("PFC deadlock at %v: a cyclic buffer dependency, every egress in it paused with packets waiting: %s (fabric.pfc.watchdog breaks such cycles at the cost of losslessness)", now, cycle))
			return
		}
		sm.deadlock = cycle
	}
	if sm.placed != nil {
		sm.progress = append(sm.progress, progressSample{At: now, Placed: sm.placed()})
	}
	if next := now + sm.interval; next <= sm.until {
		sm.s.AtOwnKey(next, sm.kind, 0, 0)
	}
}

// round3 rounds to 3 decimals so summaries stay short and stable.
func round3(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return math.Round(x*1000) / 1000
}

// NotDrained is summary.json's "not_drained": what a run whose fabric did not empty within
// run.drain left inside it. Such a run completes as failed (unless run.allow_not_drained):
// its figures and files cover the run, the packets still inside counted in
// in_flight_packets_at_end; FailureReason names the fullest ports (Reason).
type NotDrained struct {
	DrainUs float64 `json:"drain_us"` // run.drain, us
	Packets int64   `json:"packets"`  // packets still inside the fabric after it
	// FullestPorts are the ports holding the most packets (queued, being serialised or on
	// the link), most first, at most notDrainedPorts of them.
	FullestPorts []NotDrainedPort `json:"fullest_ports"`
	drain        sim.Time         // run.drain, for Reason
}

// NotDrainedPort is one port holding packets when the drain budget ran out.
type NotDrainedPort struct {
	Port        string `json:"port"`         // the port's name ("p0.t0-1.down3")
	Packets     int    `json:"packets"`      // queued, being serialised or on the link
	QueuedBytes int64  `json:"queued_bytes"` // bytes waiting in its queues
}

// notDrainedPorts is how many of the fullest ports NotDrained names.
const notDrainedPorts = 5

// notDrained names the ports still holding packets when the drain budget ran out: a fabric
// that cannot empty is a stuck run (a credit loop, a PFC deadlock, a link down with packets
// queued for it), reported as a failed run rather than summarised as if it had finished.
func notDrained(net *fabric.Network, left int64, drain sim.Time) *NotDrained {
	nd := &NotDrained{DrainUs: us(drain), Packets: left, FullestPorts: []NotDrainedPort{}, drain: drain}
	for _, o := range net.Occupied(notDrainedPorts) {
		nd.FullestPorts = append(nd.FullestPorts, NotDrainedPort{Port: o.Name, Packets: o.Packets, QueuedBytes: o.QueuedBytes})
	}
	return nd
}

// Reason is the failure reason of a run that did not drain: the packets left and the
// fullest ports, each with its packets and bytes queued.
func (nd *NotDrained) Reason() string {
	drain := nd.drain
	if drain == 0 { // read back from summary.json
		drain = sim.Time(math.Round(nd.DrainUs * 1e6))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fabric did not drain within run.drain (%v): %d packets still inside; fullest ports:", drain, nd.Packets)
	for _, o := range nd.FullestPorts {
		fmt.Fprintf(&b, " %s (%d packets, %d B queued);", o.Port, o.Packets, o.QueuedBytes)
	}
	return strings.TrimSuffix(b.String(), ";")
}

// markNotDrained records in s that the fabric did not drain (nd; nil: it did): a failed run
// with nd's reason first, unless run.allow_not_drained accepts it (NotDrainedAllowed).
func markNotDrained(sc *scenario.Scenario, s *Summary, nd *NotDrained) {
	if nd == nil {
		return
	}
	s.NotDrained = nd
	if sc.Run.AllowNotDrained {
		s.NotDrainedAllowed = true
		return
	}
	why := nd.Reason()
	if s.FailureReason != "" {
		why += "; " + s.FailureReason
	}
	s.Failed, s.FailureReason = true, why
}

// drain runs the kernel for run.drain after end so packets in flight land. With the default
// drain (scenario.DefaultDrain) it goes on while packets keep landing, doubling the budget each
// time up to scenario.MaxDrain, so a fabric with a very slow degraded link (a 10 Mb/s port
// takes 3.4 ms per packet) still drains and reports; a fabric that stops making progress (a
// PFC deadlock) is reported as not drained.
func drain(sc *scenario.Scenario, s *sim.Sim, net *fabric.Network, end sim.Time) error {
	at, budget := end, sc.Run.Drain
	auto := sc.Run.Drain == scenario.DefaultDrain
	prev := int64(-1)
	for {
		at += budget
		if err := s.Drain(at); err != nil {
			return fmt.Errorf("run stopped during drain at %v: %w", s.Now(), err)
		}
		left := net.InFlight()
		if left == 0 || !auto || at-end >= scenario.MaxDrain || (prev >= 0 && left >= prev) {
			return nil
		}
		prev = left
		budget = min(2*budget, scenario.MaxDrain-(at-end))
	}
}

// driveTransport runs a transport's traffic: it starts the sampler, runs until the adapter
// reports every transfer done (its onDone hook, set here, pauses the run and records doneAt)
// or run.duration, reports a run left with nothing to wait for, then stops the engines,
// drains the fabric and audits it. It returns when the traffic ended and the port counters
// then.
func driveTransport(sc *scenario.Scenario, res *Result, smp *sampler, onDone *func(sim.Time), doneAt *sim.Time, tn transport.Endpoint) (sim.Time, []portSnap, error) {
	s, net := res.Sim, res.Net
	*onDone = func(now sim.Time) {
		*doneAt = now
		smp.until = now
		s.Pause()
	}
	smp.start()
	if err := s.Run(sc.Run.Duration); err != nil {
		return 0, nil, fmt.Errorf("run stopped at %v: %w", s.Now(), err)
	}
	end := s.Now()
	if res.interrupted() {
		// No drain and no audit: packets are still inside; the summary covers up to now.
		snap := snapshot(net)
		smp.links.finish(end)
		return end, snap, nil
	}
	running, errs := tn.Outstanding()
	if *doneAt == sim.MaxTime && running > 0 && errs == 0 && s.NextAt() == sim.MaxTime {
		return 0, nil, fmt.Errorf("stuck at %v: no event pending with %d transfers outstanding: %s", end, running, tn.Stuck(5))
	}
	// Paused before run.duration with transfers left: the transport halted (exact times, not
	// the summary's rounded microseconds).
	smp.stoppedEarly = *doneAt == sim.MaxTime && running > 0 && end < sc.Run.Duration
	snap := snapshot(net)
	smp.links.finish(end)
	tn.Quiesce()
	if err := drain(sc, s, net, end); err != nil {
		return 0, nil, err
	}
	if err := net.Audit(); err != nil {
		return 0, nil, err
	}
	if left := net.InFlight(); left > 0 {
		res.undrained = notDrained(net, left, sc.Run.Drain)
	}
	return end, snap, nil
}
