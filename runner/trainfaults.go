package runner

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/collective"
	"github.com/lockstepsim/lockstep/workload/training"
)

// TrainingFaults is what a training job's faults did to it (summary.json "training_faults",
// present when the scenario has faults): the fault events by step, the job restarts with
// what each was charged, and per simulated step the link that held the slowest rank up and
// the events in it. Times are simulated time from the job's start.
type TrainingFaults struct {
	Engine string `json:"engine"` // flow or packet
	// Events are the fault events, the first maxSummaryEvents (500) of EventsTotal (a random
	// process can draw hundreds of thousands); EventsApplied of all of them fell in the
	// simulated steps.
	Events        []TrainingFaultEvent `json:"events"`
	EventsTotal   int                  `json:"events_total"`
	EventsApplied int                  `json:"events_applied"`
	// Restarts are the times the transport could not continue (QPs gave up) and the job
	// restarted from its last checkpoint.
	Restarts []TrainingRestart `json:"restarts,omitempty"`
	// RestartsChargedS is the restart time plus the lost work the restarts cost, summed;
	// RunTimeWithRestartsS the job's run time (training.run_time_s) with them.
	RestartsChargedS     float64 `json:"restarts_charged_s"`
	RunTimeWithRestartsS float64 `json:"run_time_with_restarts_s"`
	// Steps has one note per simulated step (steps.csv's slowest_link and events columns).
	Steps []StepNote `json:"steps"`
	Notes []string   `json:"notes,omitempty"`
	// FaultFreeStepUs is the time of the last simulated step before the first applied fault
	// event (0: the faults began in step 0, no fault-free step to compare with), and
	// ExtraTimeUs what the steps from the first fault took beyond that many fault-free
	// steps (0 without a baseline): what the faults cost the job, restarts aside.
	FaultFreeStepUs float64 `json:"fault_free_step_us,omitempty"`
	ExtraTimeUs     float64 `json:"extra_time_us,omitempty"`
	// FaultFreeRerun says FaultFreeStepUs comes from one step of the job simulated again
	// without its faults (the faults began in step 0; run.fault_baseline: none skips it).
	FaultFreeRerun bool `json:"fault_free_rerun,omitempty"`
	faultedSteps   int  // the steps from the first fault on
}

// rerunBaseline sets tf's fault-free step, when the faults began in step 0, from one step of
// sc's job simulated again without its faults (one more run of a step: only runs with faults
// from the start pay it), and what the faults cost against it.
func (tf *TrainingFaults) rerunBaseline(sc *scenario.Scenario) error {
	if tf.FaultFreeStepUs > 0 || tf.faultedSteps == 0 || sc.Run.FaultBaseline == scenario.FaultBaselineNone {
		return nil
	}
	tsc := *sc
	tc := *sc.Workload.Training
	tsc.Faults, tc.SimSteps = nil, 1
	tsc.Workload.Training = &tc
	twin, err := run(&tsc, false, Options{})
	if err != nil {
		return fmt.Errorf("fault baseline (one step of the job without its faults): %w", err)
	}
	base := twin.Summary.Training.StepTimeUs
	tf.FaultFreeStepUs, tf.FaultFreeRerun, tf.ExtraTimeUs = base, true, 0
	for _, st := range tf.Steps {
		tf.ExtraTimeUs += st.StepTimeUs - base
	}
	tf.ExtraTimeUs = max(tf.ExtraTimeUs, 0)
	return nil
}

// faultCost sets tf's FaultFreeStepUs and ExtraTimeUs from its steps and events, counts the
// events and caps the list at maxSummaryEvents.
func (tf *TrainingFaults) faultCost() {
	defer func() {
		tf.EventsTotal, tf.EventsApplied = len(tf.Events), 0
		for _, e := range tf.Events {
			if e.Applied {
				tf.EventsApplied++
			}
		}
		if len(tf.Events) > maxSummaryEvents {
			tf.Events = tf.Events[:maxSummaryEvents]
		}
	}()
	first := -1
	for _, e := range tf.Events {
		if e.Applied && e.Step >= 0 && (first < 0 || e.Step < first) {
			first = e.Step
		}
	}
	tf.FaultFreeStepUs, tf.ExtraTimeUs, tf.faultedSteps = 0, 0, 0
	if first < 0 {
		return
	}
	tf.faultedSteps = len(tf.Steps) - first
	if first == 0 {
		return
	}
	base := tf.Steps[first-1].StepTimeUs
	tf.FaultFreeStepUs = base
	for _, st := range tf.Steps[first:] {
		tf.ExtraTimeUs += st.StepTimeUs - base
	}
	tf.ExtraTimeUs = max(tf.ExtraTimeUs, 0)
}

// TrainingFaultEvent is one failure or repair applied to the job's network: one entry's
// action at one instant over every element it names (a switch's links, a glob's ports).
type TrainingFaultEvent struct {
	AtUs     float64 `json:"at_us"`
	Step     int     `json:"step"` // the simulated step it fell in; -1: after the last one ended (not applied)
	Entry    int     `json:"entry"`
	Cycle    int     `json:"cycle,omitempty"`
	Action   string  `json:"action"` // down, up, degrade, undegrade, loss, ber, blackhole, unblackhole
	Cause    string  `json:"cause"`  // the entry's action (flap, heal, down, ...)
	Target   string  `json:"target"` // the element the entry named
	Elements int     `json:"elements"`
	Applied  bool    `json:"applied"`
}

// TrainingRestart is one job restart: the QPs of a flow stalled longer than their retry
// budget gave up. The job is charged the goodput model's restart time and, as lost work, the
// expected time since the last checkpoint: half a checkpoint period (interval + write), the
// mean of a failure's loss in Daly's model.
type TrainingRestart struct {
	AtUs      float64 `json:"at_us"`
	Step      int     `json:"step"`
	Cause     string  `json:"cause"`
	QPFlows   int     `json:"qp_flows"` // flows whose QPs gave up for this failure
	RestartS  float64 `json:"restart_s"`
	LostWorkS float64 `json:"lost_work_s"`
	ChargedS  float64 `json:"charged_s"`
}

// StepNote annotates one simulated step.
type StepNote struct {
	Step       int     `json:"step"`
	StartUs    float64 `json:"start_us"` // simulated start (the trace's steps may be extended)
	EndUs      float64 `json:"end_us"`
	StepTimeUs float64 `json:"step_time_us"`
	// SlowestLink is the link that held up the slowest rank's collectives longest in the
	// step (flow level: the bottleneck of each phase's last flow; packet level: a faulted
	// port that carried traffic, else the deepest queue), with its fault state.
	SlowestLink string `json:"slowest_link,omitempty"`
	// Events lists the fault events, reconvergences and restarts in the step.
	Events string `json:"events,omitempty"`
}

// stepSpan is a simulated step's interval [start, end).
type stepSpan struct{ start, end sim.Time }

// stepSpans returns each simulated step's interval: steps run back to back from the job's
// start at 0, each as long as its simulated time.
func stepSpans(tr *training.Trace) []stepSpan {
	out := make([]stepSpan, len(tr.Steps))
	var t sim.Time
	for i, st := range tr.Steps {
		out[i] = stepSpan{start: t, end: t + st.SimTime}
		t += st.SimTime
	}
	return out
}

// stepOf returns the step whose span holds t, -1 past the last.
func stepOf(spans []stepSpan, t sim.Time) int {
	for i, s := range spans {
		if t < s.end || (i == len(spans)-1 && t == s.end) {
			return i
		}
	}
	return -1
}

// Caps on what a run with many fault events (a random failure process) prints: the events
// listed per step (steps.csv's events column, the terminal), the steps and the restarts the
// terminal shows, and the events summary.json lists (training_faults.events; the counts
// events_total and events_applied cover all of them).
const (
	maxStepEvents    = 6
	maxTerminalSteps = 12
	maxTerminalLines = 8
	maxSummaryEvents = 500
)

// timedNote is a dated line for a step's events.
type timedNote struct {
	at   sim.Time
	text string
}

// groupFaultEvents groups evs into one record per failure step: an entry's action at one
// instant (one flap cycle) over every element it names, named by the entry's target as
// written (labels[entry]: a name or a glob); a random process's events stay one per element.
func groupFaultEvents(evs []FaultEvent, spans []stepSpan, labels []string) []TrainingFaultEvent {
	var out []TrainingFaultEvent
	idx := map[string]int{}
	for _, e := range evs {
		target := e.Target
		if !e.Random && e.Entry >= 0 && e.Entry < len(labels) {
			target = labels[e.Entry]
		}
		key := fmt.Sprintf("%d/%d/%d/%s/%s/%v", e.Entry, e.Cycle, e.At, e.Action, target, e.Random)
		if i, ok := idx[key]; ok {
			out[i].Elements++
			out[i].Applied = out[i].Applied || e.applied
			continue
		}
		idx[key] = len(out)
		step := -1
		if e.applied {
			step = stepOf(spans, e.At)
		}
		out = append(out, TrainingFaultEvent{AtUs: us(e.At), Step: step, Entry: e.Entry, Cycle: e.Cycle, Action: e.Action,
			Cause: e.Cause, Target: target, Elements: 1, Applied: e.applied})
	}
	slices.SortStableFunc(out, func(a, b TrainingFaultEvent) int {
		switch {
		case a.AtUs < b.AtUs:
			return -1
		case a.AtUs > b.AtUs:
			return 1
		}
		return 0
	})
	return out
}

// annotateSteps returns one note per simulated step of tr: the fault events (grouped, from
// evs, named by labels: groupFaultEvents), the dated extra notes (reconvergences, restarts) in the step, and slowest(k), the
// link that bottlenecked the slowest rank's collectives in step k ("" for none).
func annotateSteps(tr *training.Trace, evs []FaultEvent, labels []string, extra []timedNote, slowest func(k int) string) []StepNote {
	spans := stepSpans(tr)
	notes := make([]StepNote, len(spans))
	lines := make([][]timedNote, len(spans))
	for _, g := range groupFaultEvents(evs, spans, labels) {
		if g.Step < 0 {
			continue
		}
		what := g.Target
		if g.Elements > 1 {
			what += fmt.Sprintf(" (%d elements)", g.Elements)
		}
		cause := g.Action
		if g.Cause != g.Action {
			cause = g.Cause + ": " + g.Action
		}
		lines[g.Step] = append(lines[g.Step], timedNote{at: sim.Time(g.AtUs * 1e6), text: fmt.Sprintf("faults[%d] %s %s", g.Entry, cause, what)})
	}
	for _, x := range extra {
		if k := stepOf(spans, x.at); k >= 0 {
			lines[k] = append(lines[k], x)
		}
	}
	for k, sp := range spans {
		notes[k] = StepNote{Step: k, StartUs: us(sp.start), EndUs: us(sp.end), StepTimeUs: us(tr.Steps[k].Time)}
		if slowest != nil {
			notes[k].SlowestLink = slowest(k)
		}
		slices.SortStableFunc(lines[k], func(a, b timedNote) int {
			switch {
			case a.at < b.at:
				return -1
			case a.at > b.at:
				return 1
			}
			return 0
		})
		var parts []string
		for i, l := range lines[k] {
			if i == maxStepEvents && len(lines[k]) > maxStepEvents+1 {
				parts = append(parts, fmt.Sprintf("... and %d more", len(lines[k])-maxStepEvents))
				break
			}
			parts = append(parts, fmt.Sprintf("%.3f ms %s", (l.at-sp.start).Micros()/1e3, l.text))
		}
		notes[k].Events = strings.Join(parts, "; ")
	}
	return notes
}

// recBackend is a training backend that remembers each launched collective's communicator,
// in launch order (the order of flow.Collectives.Results), for the per-step bottleneck.
type recBackend struct {
	training.Backend
	comms []collective.Comm
}

// Launch implements training.Backend.
func (b *recBackend) Launch(at sim.Time, spec collective.Spec, comm collective.Comm, name string, done func(now sim.Time)) error {
	if err := b.Backend.Launch(at, spec, comm, name, done); err != nil {
		return err
	}
	b.comms = append(b.comms, comm)
	return nil
}

// flowStepLinks names, as each simulated step ends, the Net link that held the slowest rank's
// collectives up longest in it (each collective's phases charged to the link that stalled or
// bottlenecked them, flow.CollResult.Bottleneck), with the links' fault state then.
type flowStepLinks struct {
	fc    *flow.Collectives
	rb    *recBackend
	job   *training.Job
	name  func(int) string
	ff    *flowFaults // its per-step fault states are cleared as a step closes
	from  int         // the first collective of the step under way
	start sim.Time    // its simulated start
	names []string    // per step closed
}

// close names step k, which ran over [f.start, end) and whose slowest rank was slowest.
func (f *flowStepLinks) close(k int, end sim.Time, slowest int) {
	host := f.job.Placement.Host(slowest)
	res := f.fc.ResultsFrom(f.from)
	charged := map[int]sim.Time{}
	for i := range res {
		r := &res[i]
		c := f.from + i
		if c >= len(f.rb.comms) || r.Start < f.start || r.Start >= end || r.Bottleneck < 0 {
			continue
		}
		comm := f.rb.comms[c]
		for x := 0; x < comm.Size(); x++ {
			if comm.Host(x) == host {
				charged[r.Bottleneck] += r.BottleneckTime
				break
			}
		}
	}
	best, bt := -1, sim.Time(0)
	for l, t := range charged {
		if t > bt || (t == bt && l < best) {
			best, bt = l, t
		}
	}
	for len(f.names) <= k {
		f.names = append(f.names, "")
	}
	if best >= 0 {
		f.names[k] = f.name(best)
	}
	f.from, f.start = f.from+len(res), end
	if ff := f.ff; ff != nil {
		clear(ff.during)
	}
}

// flowLinkNamer names the Net links of a flow-level run: a topology link by the port that
// transmits on it and the node it reaches ("h3.p2 -> p2.t0-0": host 3's NIC toward its T0;
// "p2.t0-0.down3 -> h3": the T0 toward host 3), a scale-up link by its host, a bundle by what
// it groups; with ff, a link in a fault state says so ("h3.p2 -> p2.t0-0 (degraded to
// 25Gbps)"; a bundle lists its faulted members by link name: "h3 NIC ports, tx (all
// planes): h3.p2 degraded to 25Gbps").
func flowLinkNamer(l topo.Topology, r *flowRouter, ff *flowFaults) func(int) string {
	links := r.links
	hosts := l.NumHosts()
	state := func(d int) string {
		if ff == nil || d < 0 || d >= ff.nDir {
			return ""
		}
		if st := ff.state(d); st != "" {
			return st
		}
		if st := ff.during[int32(d)]; st != "" {
			return st + " during the step"
		}
		return ""
	}
	port := func(d int) string {
		k := d / 2
		if d%2 == 0 {
			return links[k].Name + " -> " + l.NodeName(links[k].B.Node)
		}
		return l.PortName(links[k].B.Node, links[k].B.Port) + " -> " + l.NodeName(links[k].A.Node)
	}
	return func(d int) string {
		switch {
		case d < 0:
			return ""
		case d < 2*len(links):
			if s := state(d); s != "" {
				return port(d) + " (" + s + ")"
			}
			return port(d)
		case d < r.nvl+2*hosts && d >= r.nvl:
			dir := "tx"
			if (d-r.nvl)%2 == 1 {
				dir = "rx"
			}
			return fmt.Sprintf("h%d scale-up %s", (d-r.nvl)/2, dir)
		}
		if s, ok := r.planeBundleName(d); ok {
			return s
		}
		if r.bt == nil || len(r.bt.hostB) == 0 {
			return fmt.Sprintf("link %d", d)
		}
		bt := r.bt
		off := d - int(bt.hostB[0])
		var what string
		h2, t2 := 2*bt.d.Hosts, 2*bt.d.T0s
		lay, _ := l.(*topo.Layout)
		t0name := func(i int) string {
			if lay != nil {
				if n := lay.SwitchNode(0, 0, i); n >= 0 {
					return "p*" + strings.TrimPrefix(l.NodeName(n), "p0")
				}
			}
			return fmt.Sprintf("T0 %d", i)
		}
		switch {
		case off < h2:
			what = fmt.Sprintf("h%d NIC ports, %s (all planes)", off/2, map[bool]string{true: "tx", false: "rx"}[off%2 == 0])
		case off < h2+t2:
			if (off-h2)%2 == 0 {
				what = t0name((off-h2)/2) + " uplinks (all planes)"
			} else {
				what = "links down into " + t0name((off-h2)/2) + " (all planes)"
			}
		default:
			p := off - h2 - t2
			if p%2 == 0 {
				what = fmt.Sprintf("pod %d T1-T2 uplinks (all planes)", p/2)
			} else {
				what = fmt.Sprintf("T2 links down into pod %d (all planes)", p/2)
			}
		}
		if ff != nil && ff.members != nil && d-ff.firstB >= 0 && d-ff.firstB < len(ff.members) {
			var bad []string
			for _, m := range ff.members[d-ff.firstB] {
				if s := state(int(m)); s != "" {
					bad = append(bad, links[m/2].Name+" "+s)
				}
			}
			if len(bad) > 2 {
				bad = append(bad[:2], fmt.Sprintf("%d more", len(bad)-2))
			}
			if len(bad) > 0 {
				what += ": " + strings.Join(bad, "; ")
			}
		}
		return what
	}
}

// packetSlowest returns, per step of a packet-level run, the port that most plausibly held
// the step up: a port under a fault during the step that carried or dropped traffic in it
// (or its link's other end did), else the port with the deepest queue seen in the step.
func packetSlowest(tr *training.Trace, ls *LinkSeries, net *fabric.Network, evs []FaultEvent) func(k int) string {
	spans := stepSpans(tr)
	return func(k int) string {
		if ls == nil || len(ls.starts) == 0 {
			return ""
		}
		sp := spans[k]
		n := ls.ports
		tx := make([]int64, n) // bytes sent, plus drops (a dead link's lost packets count)
		q := make([]int64, n)
		for j, st := range ls.starts {
			if st >= sp.end || st+ls.interval <= sp.start {
				continue
			}
			for i := 0; i < n; i++ {
				tx[i] += ls.tx[j*n+i] + ls.drops[j*n+i]
				q[i] = max(q[i], ls.qmax[j*n+i])
			}
		}
		// Faults active during the step: applied before its end, not restored before its
		// start (in time order: at_step events were made absolute as their step started).
		byAt := slices.Clone(evs)
		slices.SortStableFunc(byAt, func(a, b FaultEvent) int { return cmp.Compare(a.At, b.At) })
		active := map[fabric.PortID]string{}
		for _, e := range byAt {
			if !e.applied || e.At >= sp.end || e.Port < 0 {
				continue
			}
			switch e.Action {
			case "down", "degrade", "loss", "ber":
				if e.Restore || (e.Action == "loss" && e.Loss == 0) || (e.Action == "ber" && e.BER == 0) {
					delete(active, e.Port)
					continue
				}
				what := e.Action
				if e.Action == "degrade" {
					what = "degraded to " + e.Rate.String()
				}
				active[e.Port] = what
			case "up", "undegrade":
				delete(active, e.Port)
			}
		}
		best, bestTx := fabric.PortID(-1), int64(-1)
		for p := range active {
			t := tx[p]
			if peer := net.Ports[p].Peer; peer >= 0 {
				t += tx[peer]
			}
			if t > bestTx || t == bestTx && p < best {
				best, bestTx = p, t
			}
		}
		if best >= 0 && bestTx > 0 {
			return fmt.Sprintf("%s (%s)", net.Ports[best].Name, active[best])
		}
		deep := -1
		for i := range q {
			if q[i] > 0 && (deep < 0 || q[i] > q[deep]) {
				deep = i
			}
		}
		if deep < 0 {
			return ""
		}
		return fmt.Sprintf("%s (queue up to %.1f KiB)", net.Ports[deep].Name, float64(q[deep])/1024)
	}
}

func firstTime(ts []sim.Time) sim.Time {
	if len(ts) == 0 {
		return -1
	}
	return slices.Min(ts)
}

// restartCharge returns what one job restart costs under cfg's goodput inputs and its
// evaluated checkpoint interval (tr.CkptIntervalS): the restart time R and the expected lost
// work, half a checkpoint period (tau + d) / 2 (a failure falls uniformly in the period of
// work plus checkpoint write it interrupts; Daly 2006 §3), but no more than the work done
// since the job started or last restarted, sinceS seconds of simulated time: a job cannot
// lose work it has not done (a restart 2 s into a job with a 3-hour checkpoint interval loses
// 2 s, not 1.5 hours).
func restartCharge(cfg *training.Config, tr *training.Result, sinceS float64) (restart, lost float64) {
	r, d := float64(cfg.Goodput.Restart), float64(cfg.Goodput.CheckpointWrite)
	if r == 0 {
		r = float64(training.DefaultRestart)
	}
	if d == 0 {
		d = float64(training.DefaultCheckpointWrite)
	}
	return r, min((tr.CkptIntervalS+d)/2, max(sinceS, 0))
}

// flowTrainingFaults is the fault report of a flow-level training run.
func flowTrainingFaults(sc *scenario.Scenario, ff *flowFaults, trace *training.Trace, tr *training.Result, links *flowStepLinks,
	layout topo.Topology, router *flowRouter) *TrainingFaults {
	spans := stepSpans(trace)
	end := spans[len(spans)-1].end
	name := flowLinkNamer(layout, router, ff)
	tf := &TrainingFaults{Engine: "flow", Events: groupFaultEvents(ff.evs, spans, labels(sc)), Notes: append(slices.Clone(ff.notes), timingNotes(ff.evs, spans)...)}
	var extra []timedNote
	for _, at := range ff.reconvAt {
		if at <= end {
			extra = append(extra, timedNote{at: at, text: "routing reconverged (fabric.reconvergence)"})
		}
	}
	var prev sim.Time // the job's start, then the last restart
	for _, r := range ff.restarts {
		if r.At > end {
			continue
		}
		R, lost := restartCharge(sc.Workload.Training, tr, (r.At - prev).Seconds())
		prev = r.At
		cause := fmt.Sprintf("%s QP h%d -> h%d stalled on %s from %.3f ms, beyond its retry budget (%v)", transportName(sc), r.Src, r.Dst, name(r.Link), r.Since.Micros()/1e3, ff.budget)
		if r.Event >= 0 {
			e := &ff.evs[r.Event]
			cause = fmt.Sprintf("faults[%d] %s %s at %.3f ms: %s", e.Entry, e.Action, e.Target, e.At.Micros()/1e3, cause)
		}
		tf.Restarts = append(tf.Restarts, TrainingRestart{AtUs: us(r.At), Step: stepOf(spans, r.At), Cause: cause, QPFlows: r.QPFlows,
			RestartS: R, LostWorkS: lost, ChargedS: R + lost})
		extra = append(extra, timedNote{at: r.At, text: fmt.Sprintf("job restart (QPs gave up): charged %.0f s restart + %s lost work", R, secs(lost))})
	}
	finishTrainingFaults(tf, tr)
	tf.Steps = annotateSteps(trace, ff.evs, labels(sc), extra, func(k int) string {
		if k < len(links.names) {
			return links.names[k]
		}
		return ""
	})
	tf.faultCost()
	return tf
}

// packetTrainingFaults is the fault report of a packet-level training run; qpErrAt is when
// the transport first gave up (-1: it did not).
func packetTrainingFaults(sc *scenario.Scenario, res *Result, trace *training.Trace, tr *training.Result, qpErrAt sim.Time, ep transport.Endpoint) *TrainingFaults {
	spans := stepSpans(trace)
	end := spans[len(spans)-1].end
	tf := &TrainingFaults{Engine: "packet", Events: groupFaultEvents(res.Faults, spans, labels(sc)), Notes: timingNotes(res.Faults, spans)}
	var extra []timedNote
	for _, at := range res.Reconverge {
		if at <= end {
			extra = append(extra, timedNote{at: at, text: "routing reconverged (fabric.reconvergence)"})
		}
	}
	if qpErrAt >= 0 {
		R, lost := restartCharge(sc.Workload.Training, tr, qpErrAt.Seconds())
		errs := endpointErrs(ep)
		cause := fmt.Sprintf("%d %s QP(s) gave up, the first: %v", len(errs), transportName(sc), errs[0])
		tf.Restarts = append(tf.Restarts, TrainingRestart{AtUs: us(qpErrAt), Step: len(trace.Steps), Cause: cause, QPFlows: len(errs),
			RestartS: R, LostWorkS: lost, ChargedS: R + lost})
		tf.Notes = append(tf.Notes, fmt.Sprintf("the job restarted in step %d (%.3f ms): the packet engine does not simulate past a restart, so steps %d to %d were not simulated; run.engine: flow goes on through restarts",
			len(trace.Steps), qpErrAt.Micros()/1e3, len(trace.Steps), max(sc.Workload.Training.SimSteps, 1)-1))
	}
	finishTrainingFaults(tf, tr)
	tf.Steps = annotateSteps(trace, res.Faults, labels(sc), extra, packetSlowest(trace, res.Links, res.Net, res.Faults))
	tf.faultCost()
	return tf
}

// timingNotes says, once per fault entry, where the run put a fault other than where the
// entry seems to ask: events after the last simulated step ended (not applied: the run
// stopped simulating) and at_step events whose offset outlasted their step (they fall in a
// later step, at_step + at being simply a time from that step's start; the step time is not
// known when the scenario loads, so this is a note, not an error).
func timingNotes(evs []FaultEvent, spans []stepSpan) []string {
	if len(spans) == 0 {
		return nil
	}
	end := spans[len(spans)-1].end
	var out []string
	late, moved := map[int]bool{}, map[int]bool{}
	for _, e := range evs {
		switch {
		case !e.applied && !e.Restore && !late[e.Entry] && e.Step < 0 && e.At >= end:
			late[e.Entry] = true
			out = append(out, fmt.Sprintf("faults[%d] %s %s at %.3f ms came after the %d simulated steps ended (%.3f ms): not applied; raise workload.training.sim_steps (each step about %.3f ms) to reach it",
				e.Entry, e.Action, e.Target, e.At.Micros()/1e3, len(spans), end.Micros()/1e3, end.Micros()/1e3/float64(len(spans))))
		case e.fromStep > 0 && e.applied && !moved[e.Entry]:
			k := e.fromStep - 1
			if k >= len(spans) {
				continue
			}
			if got := stepOf(spans, e.At); got != k && got >= 0 {
				moved[e.Entry] = true
				out = append(out, fmt.Sprintf("faults[%d] at_step %d, at %.3f ms is past that step's end (it took %.3f ms): the event fell in step %d, %.3f ms into it",
					e.Entry, k, (e.At-spans[k].start).Micros()/1e3, (spans[k].end-spans[k].start).Micros()/1e3, got, (e.At-spans[got].start).Micros()/1e3))
			}
		}
	}
	return out
}

func finishTrainingFaults(tf *TrainingFaults, tr *training.Result) {
	for _, r := range tf.Restarts {
		tf.RestartsChargedS += r.ChargedS
	}
	tf.RunTimeWithRestartsS = tr.RunTimeS + tf.RestartsChargedS
}

// transportName is how messages name sc's transport: its plugin's Name ("MRC", "RoCE"),
// else its kind.
func transportName(sc *scenario.Scenario) string {
	if p, ok := transport.Lookup(sc.Transport.Kind); ok {
		return p.Name
	}
	return sc.Transport.Kind
}

// markTrainingOutcome fails a packet-level training run that stopped at a job restart
// (its QPs gave up, so the steps after it were not simulated) unless run.allow_qp_errors
// accepts QP errors; markOutcome has already named the QP errors. A flow-level restart is a
// reported event, charged to the job, not a failure: the run simulated every step.
func markTrainingOutcome(sc *scenario.Scenario, s *Summary) {
	tf := s.TrainingFaults
	if tf == nil || tf.Engine != "packet" || len(tf.Restarts) == 0 {
		return
	}
	if !s.Failed {
		return
	}
	s.FailureReason += "; " + tf.Notes[len(tf.Notes)-1]
}

// FaultLines describes for the terminal what the faults did to the job: restarts and their
// charge, and each step with fault events or restarts, its time and slowest link; "" without
// faults.
func (t *TrainingRun) FaultLines() string {
	tf := t.Faults
	if tf == nil {
		return ""
	}
	var b strings.Builder
	applied := tf.EventsApplied
	fmt.Fprintf(&b, "faults (%s level): %d of %d fault events applied during the simulated steps", tf.Engine, applied, tf.EventsTotal)
	base := tf.FaultFreeStepUs // the step before the first fault, the baseline of the others
	switch {
	case len(tf.Restarts) > 0:
		fmt.Fprintf(&b, "; %d job restart(s), charged %.4g s: run time %.4g s, %.4g s with them", len(tf.Restarts), tf.RestartsChargedS, tf.RunTimeWithRestartsS-tf.RestartsChargedS, tf.RunTimeWithRestartsS)
	case applied == 0:
		b.WriteString("; none reached the job (see the notes)")
	case base <= 0:
		b.WriteString("; no job restart; every simulated step had faults, so there is no fault-free step to compare with (start them at at_step: 1 for one)")
	case tf.ExtraTimeUs <= 1e-3*base && tf.FaultFreeRerun:
		fmt.Fprintf(&b, "; no job restart and no step slower than the %.3f ms step without faults (one step rerun without them): the transport absorbed them", base/1e3)
	case tf.ExtraTimeUs <= 1e-3*base:
		b.WriteString("; no job restart and no step slower: the transport absorbed them")
	case tf.FaultFreeRerun:
		fmt.Fprintf(&b, "; no job restart, but they cost %.4g ms: the %d steps took that much more than %d steps of %.3f ms without faults (one step rerun without them) (%+.1f%%)", tf.ExtraTimeUs/1e3, tf.faultedSteps, tf.faultedSteps, base/1e3, 100*tf.ExtraTimeUs/(base*float64(tf.faultedSteps)))
	default:
		fmt.Fprintf(&b, "; no job restart, but they cost %.4g ms: the %d steps from the first fault took that much more than %d fault-free steps of %.3f ms (%+.1f%%)", tf.ExtraTimeUs/1e3, tf.faultedSteps, tf.faultedSteps, base/1e3, 100*tf.ExtraTimeUs/(base*float64(tf.faultedSteps)))
	}
	b.WriteString("\n")
	slowest := -1
	for i, st := range tf.Steps {
		if slowest < 0 || st.StepTimeUs > tf.Steps[slowest].StepTimeUs {
			slowest = i
		}
	}
	shown, hidden := 0, 0
	for i, st := range tf.Steps {
		if st.Events == "" && i != slowest {
			continue
		}
		if shown >= maxTerminalSteps && i != slowest {
			hidden++
			continue
		}
		shown++
		fmt.Fprintf(&b, "  step %d: %.3f ms", st.Step, st.StepTimeUs/1e3)
		if base > 0 && st.StepTimeUs != base {
			fmt.Fprintf(&b, " (%+.1f%% vs the %.3f ms fault-free step)", 100*(st.StepTimeUs/base-1), base/1e3)
		}
		if st.SlowestLink != "" {
			fmt.Fprintf(&b, ", slowest link %s", st.SlowestLink)
		}
		if st.Events != "" {
			fmt.Fprintf(&b, "; %s", st.Events)
		}
		b.WriteString("\n")
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "  ... and %d more steps with fault events (steps.csv lists every step)\n", hidden)
	}
	for i, r := range tf.Restarts {
		if i == maxTerminalLines {
			fmt.Fprintf(&b, "  ... and %d more restarts (summary.json training_faults.restarts)\n", len(tf.Restarts)-i)
			break
		}
		fmt.Fprintf(&b, "  restart at %.3f ms (step %d): %s; charged %.0f s restart + %s lost work\n", r.AtUs/1e3, r.Step, r.Cause, r.RestartS, secs(r.LostWorkS))
	}
	for i, n := range tf.Notes {
		if i == maxTerminalLines {
			fmt.Fprintf(&b, "  ... and %d more notes (summary.json training_faults.notes)\n", len(tf.Notes)-i)
			break
		}
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// secs formats a duration in seconds with 4 significant digits ("7227 s", "0.4206 s").
func secs(s float64) string { return fmt.Sprintf("%.4g s", s) }
