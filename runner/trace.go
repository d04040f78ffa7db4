package runner

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/report"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
	"github.com/lockstepsim/lockstep/workload/training"
)

// MaxTraceSpans bounds the spans and flow arrows a trace holds together (a span is about 150
// bytes in trace.json, an arrow about 200): a run with more collectives x ranks or transfers
// keeps the first ones it meets (training phases, then collectives or transfers, each in
// time order) and says how many it left out in a final instant event.
const MaxTraceSpans = 500_000

// traceSpanLimit is MaxTraceSpans, lowered by tests.
var traceSpanLimit = MaxTraceSpans

// Counter tracks are bounded too, so a large run's trace stays small: the busiest
// traceLinkTracks links, and at most traceCounterPoints samples per track (adjacent
// intervals merged: utilisation and power averaged, queue depth the deepest).
const (
	traceLinkTracks    = 8
	traceCounterPoints = 2000
)

// Trace threads (tid) within each host's process. A host whose spans of one kind overlap in
// time (a host sending several transfers at once, a rank in two concurrent collectives)
// gets more threads of that kind, lane k at tid + k x traceLaneStride ("flows #2"), so the
// spans on every thread nest as the format requires.
const (
	traceTidCollectives = 1 // a rank's part of each collective: launch to its last op
	traceTidFlows       = 2 // traffic sent by the host: a transfer's post to its last byte acknowledged (raw: start to stop)
	traceTidPhases      = 3 // a training rank's phases: compute, waits on PP/DP/EP/CP, bubble, sync, barrier
	traceTidTP          = 4 // a training rank's exposed tensor-parallel communication (training.CatTP)
	traceTidReceived    = 5 // traffic received by the host: each transfer it is the destination of
	traceTidSteps       = 6 // a rank's algorithm steps of each collective (packet level with run.trace: Result.StepEnd)
	traceLaneStride     = 10
)

var traceThreadNames = map[int]string{traceTidCollectives: "collectives", traceTidFlows: "flows", traceTidPhases: "phases",
	traceTidTP: "tp", traceTidReceived: "received", traceTidSteps: "collective steps"}

// BuildTrace returns the run's Chrome/Perfetto trace (package report). Each host is a process
// with pid = host index + 1 (Perfetto files pid 0 under the kernel), named "host N", or
// "rank N (host H)" under a training workload; the run-wide tracks are a process "cluster"
// (pid = hosts + 1). Threads:
//
//   - training: "phases" (each span a phase of the rank: compute, waiting on PP, DP, EP or CP
//     communication, the bubble, sync, the barrier at the step's end) and "tp" (its exposed
//     tensor-parallel communication, training.CatTP, on a track of its own);
//   - collectives: "collectives", one span per rank and collective from the launch to the
//     rank's last op, and a flow arrow per collective from rank 0's span to the span of the
//     rank that finished last (the executor keeps no per-step times);
//   - traffic: "flows", each transfer the host sends (post to the acknowledgement of its
//     last byte; raw: start to stop), "received", the same transfer on its destination, and a
//     flow arrow from the send to the receive.
//
// Counter tracks on "cluster": the utilisation (percent of line rate) of the traceLinkTracks
// links with the highest peak in links.csv's series (ties: the highest mean, then the first
// port), the deepest switch egress queue over time (bytes), and a training run's cluster
// power (MW, power.csv's series), each at most traceCounterPoints points. Failures are global
// instant events. Times are simulated picoseconds. docs/outputs.md ("trace.json") describes
// the file. nil when the run has nothing to trace.
func BuildTrace(res *Result) *report.Trace {
	b := &traceBuilder{t: report.NewTrace(), res: res, named: map[int]bool{}, lanes: map[[2]int][]sim.Time{}, ranks: map[int]int{}}
	b.cluster = res.Summary.Hosts + 1
	if tr := res.Training; tr != nil && tr.Result != nil && tr.Result.Trace() != nil {
		b.training(tr)
	}
	if c := res.Collective; c != nil {
		b.collectives(c)
	} else {
		b.transfers()
	}
	b.counters()
	for _, f := range res.Faults {
		if f.applied {
			b.clusterProcess()
			b.t.Instant(b.cluster, 0, f.Action+" "+f.Name, "fault", int64(f.At), report.ScopeGlobal, map[string]any{"entry": f.Entry})
		}
	}
	if b.dropped > 0 {
		b.clusterProcess()
		b.t.Instant(b.cluster, 0, fmt.Sprintf("trace truncated: %d spans and arrows left out (MaxTraceSpans %d)", b.dropped, traceSpanLimit), "lockstep",
			int64(res.Sim.Now()), report.ScopeGlobal, nil)
	}
	if b.t.Len() == 0 {
		return nil
	}
	return b.t
}

// traceBuilder carries BuildTrace's state.
type traceBuilder struct {
	t              *report.Trace
	res            *Result
	spans, dropped int                   // spans and arrows recorded and left out
	named          map[int]bool          // hosts whose process is named
	ranks          map[int]int           // host -> training rank on it
	lanes          map[[2]int][]sim.Time // (host, thread kind) -> each lane's last end
	cluster        int                   // pid of the run-wide process
	clusterNamed   bool
}

// tracePid is host h's process id: h + 1, as Perfetto files pid 0 under the kernel.
func tracePid(h int) int { return h + 1 }

// clusterProcess names the run-wide process the first time something is put on it.
func (b *traceBuilder) clusterProcess() {
	if !b.clusterNamed {
		b.clusterNamed = true
		b.t.Process(b.cluster, "cluster")
	}
}

// room reports whether one more span or arrow fits, counting the one left out if not.
func (b *traceBuilder) room() bool {
	if b.spans >= traceSpanLimit {
		b.dropped++
		return false
	}
	b.spans++
	return true
}

// span records a span on host h's thread of the given kind, in the first lane free at
// start, and returns its tid; ok is false when MaxTraceSpans left it out.
func (b *traceBuilder) span(h, kind int, name, cat string, start, end sim.Time, args map[string]any) (tid int, ok bool) {
	if !b.room() {
		return 0, false
	}
	if !b.named[h] {
		b.named[h] = true
		if r, ok := b.ranks[h]; ok {
			b.t.Process(tracePid(h), fmt.Sprintf("rank %d (host %d)", r, h))
		} else {
			b.t.Process(tracePid(h), fmt.Sprintf("host %d", h))
		}
	}
	key := [2]int{h, kind}
	ends := b.lanes[key]
	lane := slices.IndexFunc(ends, func(e sim.Time) bool { return e <= start })
	if lane < 0 {
		lane = len(ends)
		ends = append(ends, 0)
		thread := traceThreadNames[kind]
		if lane > 0 {
			thread = fmt.Sprintf("%s #%d", thread, lane+1)
		}
		b.t.Thread(tracePid(h), kind+lane*traceLaneStride, thread)
	}
	ends[lane] = max(ends[lane], end)
	b.lanes[key] = ends
	tid = kind + lane*traceLaneStride
	b.t.Span(tracePid(h), tid, name, cat, int64(start), int64(end-start), args)
	return tid, true
}

// arrow records a flow arrow from the span on (src host, srcTid) starting at from to the span
// on (dst host, dstTid) starting at to, within MaxTraceSpans. cat is the spans' category:
// Chrome DevTools binds a flow event to the span with its pid, tid, ts and cat.
func (b *traceBuilder) arrow(src, srcTid int, from sim.Time, dst, dstTid int, to sim.Time, name, cat string) {
	if b.room() {
		b.t.Flow(tracePid(src), srcTid, int64(from), tracePid(dst), dstTid, int64(to), name, cat, nil)
	}
}

// training adds each rank's phases in every simulated step: TP on its own thread, the rest
// (and the barrier wait at the step's end) on "phases".
func (b *traceBuilder) training(tr *TrainingRun) {
	t2 := tr.Result.Trace()
	pl := t2.Job.Placement
	for rank := range pl.World {
		b.ranks[pl.Host(rank)] = rank
		b.cluster = max(b.cluster, pl.Host(rank)+2)
	}
	for _, st := range t2.Steps {
		for rank := range pl.World {
			h := pl.Host(rank)
			last := st.Start
			st.Spans(rank, func(a, e sim.Time, c training.Category) {
				kind := traceTidPhases
				if c == training.CatTP {
					kind = traceTidTP
				}
				b.span(h, kind, c.String(), "training", a, e, map[string]any{"rank": rank, "step": st.Index})
				last = max(last, e)
			})
			if end := st.Start + st.Time; end > last { // waiting at the step's end for the slowest rank
				b.span(h, traceTidPhases, "barrier", "training", last, end, map[string]any{"rank": rank, "step": st.Index})
			}
		}
	}
}

// collectives adds each rank's span of each collective and one arrow per collective from
// rank 0 to the rank that finished last (ties, as at flow level where every rank ends with
// the collective: the highest rank). A collective that never finished spans to the run's
// end, named so.
func (b *traceBuilder) collectives(c *CollectiveRun) {
	now := b.res.Sim.Now()
	for _, r := range c.Instances {
		name := r.Name
		if !r.Done {
			name += " (unfinished)"
		}
		ends := make([]sim.Time, len(r.Hosts))
		lastRank := -1 // the arrow's end: the last rank done (ties: the highest), among spans of positive duration
		for rank := range r.Hosts {
			end := r.End
			if rank < len(r.RankEnd) && r.RankEnd[rank] > 0 {
				end = r.RankEnd[rank]
			}
			ends[rank] = max(min(end, now), r.Start)
			if ends[rank] > r.Start && (lastRank < 0 || ends[rank] >= ends[lastRank]) {
				lastRank = rank
			}
		}
		wantArrow := lastRank > 0 && ends[0] > r.Start
		tids := make([]int, len(r.Hosts))
		for rank, h := range r.Hosts {
			tid, ok := b.span(h, traceTidCollectives, name, r.Spec.Op.String(), r.Start, ends[rank],
				map[string]any{"rank": rank, "bytes": r.Spec.Bytes, "algorithm": r.Spec.Algo.String(), "ranks": r.Spec.Ranks})
			if !ok {
				tid = -1
			}
			tids[rank] = tid
		}
		switch {
		case !wantArrow:
		case tids[0] >= 0 && tids[lastRank] >= 0:
			b.arrow(r.Hosts[0], tids[0], r.Start, r.Hosts[lastRank], tids[lastRank], r.Start, r.Name, r.Spec.Op.String())
		default:
			b.dropped++ // its spans were left out
		}
		b.collectiveSteps(r, now)
	}
}

// collectiveSteps adds, when the executor recorded them (Result.StepEnd), one span per rank
// and algorithm step: from the rank's previous step's end (or the launch) to the end of its
// last op in the step, so a ring all-reduce shows its 2(n-1) steps and where a rank waited.
func (b *traceBuilder) collectiveSteps(r collective.Result, now sim.Time) {
	for rank, ends := range r.StepEnd {
		if rank >= len(r.Hosts) {
			break
		}
		prev := r.Start
		for step, end := range ends {
			if end <= 0 {
				continue // no op of this rank in the step
			}
			end = min(end, now)
			if end > prev {
				b.span(r.Hosts[rank], traceTidSteps, fmt.Sprintf("%s step %d", r.Name, step), r.Spec.Op.String(), prev, end,
					map[string]any{"rank": rank, "step": step})
			}
			prev = max(prev, end)
		}
	}
}

// traceXfer is one traffic transfer for the trace.
type traceXfer struct {
	i           int
	src, dst    int
	start, done sim.Time // done 0: never finished
	name        string   // of the send span
	cat         string
	args        map[string]any
}

// transfers adds each traffic transfer (transports: flows.csv's records; raw: the paced
// flows) as a span on its source, a span on its destination and an arrow from one to the
// other, in order of start time. A transfer that never finished spans to the run's end,
// named so.
func (b *traceBuilder) transfers() {
	var xs []traceXfer
	switch res := b.res; {
	case res.Endpoint != nil:
		kind := res.Summary.Transport.Kind
		for i, f := range res.Endpoint.Flows() {
			args := map[string]any{}
			for k, v := range f.Extra {
				args[k] = v
			}
			args["flow"], args["dst"], args["bytes"] = i, f.Dst, f.Bytes
			xs = append(xs, traceXfer{i: i, src: f.Src, dst: f.Dst, start: f.Start, done: f.Done, name: fmt.Sprintf("flow %d -> h%d", i, f.Dst), cat: kind, args: args})
		}
	case res.Raw != nil:
		for i, f := range res.Raw.Flows {
			stop := min(f.Stop, res.Sim.Now())
			xs = append(xs, traceXfer{i: i, src: int(f.Src), dst: int(f.Dst), start: f.Start, done: stop,
				name: fmt.Sprintf("raw flow %d -> h%d (plane %d)", i, f.Dst, f.Plane), cat: "raw",
				args: map[string]any{"flow": i, "dst": int(f.Dst), "plane": f.Plane, "sent_bytes": res.Raw.Stats[i].SentBytes}})
		}
	}
	slices.SortStableFunc(xs, func(a, c traceXfer) int { return cmp.Compare(a.start, c.start) })
	end := b.res.Sim.Now()
	for _, x := range xs {
		name, done := x.name, x.done
		if done == 0 {
			name, done = name+" (unfinished)", max(end, x.start)
		}
		done = max(done, x.start)
		stid, ok1 := b.span(x.src, traceTidFlows, name, x.cat, x.start, done, x.args)
		rname := fmt.Sprintf("flow %d from h%d", x.i, x.src)
		if x.done == 0 {
			rname += " (unfinished)"
		}
		rtid, ok2 := b.span(x.dst, traceTidReceived, rname, x.cat, x.start, done, map[string]any{"flow": x.i, "src": x.src})
		switch {
		case done == x.start: // no span an arrow could bind to
		case ok1 && ok2:
			b.arrow(x.src, stid, x.start, x.dst, rtid, x.start, fmt.Sprintf("flow %d", x.i), x.cat)
		default:
			b.dropped++ // its spans were left out
		}
	}
}

// counters adds the cluster's counter tracks: the busiest links' utilisation and the deepest
// switch queue (packet level, from links.csv's series) and the training power series.
func (b *traceBuilder) counters() {
	if ls := b.res.Links; ls != nil && ls.net != nil && len(ls.starts) > 0 {
		b.linkCounters(ls)
	}
	if tr := b.res.Training; tr != nil && tr.Result != nil {
		if ps := tr.Result.Power(); ps != nil && len(ps.MW) > 0 && ps.Interval > 0 {
			b.clusterProcess()
			n := len(ps.MW)
			g := traceGroup(n)
			for j := 0; j < n; j += g {
				var sum float64
				k := min(j+g, n)
				for _, v := range ps.MW[j:k] {
					sum += v
				}
				b.t.Counter(b.cluster, "cluster power", int64(sim.Time(j)*ps.Interval), map[string]float64{"MW": sum / float64(k-j)})
			}
		}
	}
}

// traceGroup is how many adjacent samples of n make one counter point.
func traceGroup(n int) int { return max(1, (n+traceCounterPoints-1)/traceCounterPoints) }

func (b *traceBuilder) linkCounters(ls *LinkSeries) {
	n, ports := len(ls.starts), ls.ports
	util := func(i, k0, k1 int) float64 { // percent of line rate over intervals [k0, k1)
		r := ls.net.Ports[i].Rate
		if r <= 0 {
			return 0
		}
		var tx int64
		for k := k0; k < k1; k++ {
			tx += ls.tx[k*ports+i]
		}
		return float64(tx) * 8 / (float64(r) * (sim.Time(k1-k0) * ls.interval).Seconds()) * 100
	}
	type peak struct {
		port int
		pct  float64 // the highest interval's utilisation
		mean float64 // over the series: breaks ties between links that peak alike (at line rate)
	}
	var peaks []peak
	for i := range ports {
		var p float64
		for k := range n {
			p = max(p, util(i, k, k+1))
		}
		if p > 0 {
			peaks = append(peaks, peak{i, p, util(i, 0, n)})
		}
	}
	slices.SortStableFunc(peaks, func(a, c peak) int {
		return cmp.Or(cmp.Compare(c.pct, a.pct), cmp.Compare(c.mean, a.mean), cmp.Compare(a.port, c.port))
	})
	g := traceGroup(n)
	for _, p := range peaks[:min(len(peaks), traceLinkTracks)] {
		b.clusterProcess()
		name := "util " + ls.net.Ports[p.port].Name
		for j := 0; j < n; j += g {
			b.t.Counter(b.cluster, name, int64(ls.starts[j]), map[string]float64{"pct": round3(util(p.port, j, min(j+g, n)))})
		}
	}
	var found bool
	deep := make([]int64, n)
	for k := range n {
		for i := range ports {
			if ls.net.Nodes[ls.net.Ports[i].Node].Kind == fabric.Host {
				continue
			}
			if q := ls.qmax[k*ports+i]; q > deep[k] {
				deep[k], found = q, true
			}
		}
	}
	if !found {
		return
	}
	b.clusterProcess()
	for j := 0; j < n; j += g {
		b.t.Counter(b.cluster, "deepest switch queue", int64(ls.starts[j]), map[string]float64{"bytes": float64(slices.Max(deep[j:min(j+g, n)]))})
	}
}
