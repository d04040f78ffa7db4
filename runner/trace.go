package runner

import (
	"fmt"

	"github.com/lockstepsim/lockstep/report"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/training"
)

// MaxTraceSpans bounds the spans a trace holds (about 150 bytes each in trace.json): a run with
// more collectives x ranks or flows keeps the first ones in time and says how many it left
// out in a final instant event.
const MaxTraceSpans = 500_000

// Trace threads (tid) within each host's process.
const (
	traceTidCollectives = 1 // a rank's part of each collective: launch to its last op
	traceTidFlows       = 2 // traffic sent by the host: a transfer's post to its last byte acknowledged (raw: start to stop)
	traceTidPhases      = 3 // a training rank's phases: compute, waits on TP/PP/DP/EP, bubble
)

// BuildTrace returns the run's Chrome/Perfetto trace (package report): one process per host
// (pid = host index) with, for a training workload, a "phases" thread (each span a phase of
// its rank: compute, or waiting on TP, PP, DP or EP communication, the bubble), a "collectives" thread holding, for each collective it takes part
// in, a span from the launch to the rank's last op, and a "flows" thread with each traffic
// transfer it sends (post to the acknowledgement of its last byte); failures are global
// instant events. Times are simulated picoseconds. nil when the run has nothing to trace.
func BuildTrace(res *Result) *report.Trace {
	t := report.NewTrace()
	spans, dropped := 0, 0
	named := map[int]bool{}
	host := func(h int, tid int, thread string) {
		if !named[h] {
			named[h] = true
			t.Process(h, fmt.Sprintf("h%d", h))
		}
		t.Thread(h, tid, thread)
	}
	span := func(h, tid int, thread, name, cat string, start, end sim.Time, args map[string]any) {
		if spans >= MaxTraceSpans {
			dropped++
			return
		}
		spans++
		host(h, tid, thread)
		t.Span(h, tid, name, cat, int64(start), int64(end-start), args)
	}
	if tr := res.Training; tr != nil && tr.Result != nil && tr.Result.Trace() != nil {
		// Per rank (one process per GPU host): its phases in every simulated step.
		t2 := tr.Result.Trace()
		pl := t2.Job.Placement
		for _, st := range t2.Steps {
			for rank := range pl.World {
				h := pl.Host(rank)
				last := st.Start
				st.Spans(rank, func(a, b sim.Time, c training.Category) {
					span(h, traceTidPhases, "phases", c.String(), "training", a, b, map[string]any{"rank": rank, "step": st.Index})
					last = max(last, b)
				})
				if end := st.Start + st.Time; end > last { // waiting at the step's end for the slowest rank
					span(h, traceTidPhases, "phases", "barrier", "training", last, end, map[string]any{"rank": rank, "step": st.Index})
				}
			}
		}
	}
	if c := res.Collective; c != nil {
		for _, r := range c.Instances {
			for rank, h := range r.Hosts {
				end := r.End
				if rank < len(r.RankEnd) && r.RankEnd[rank] > 0 {
					end = r.RankEnd[rank]
				}
				span(h, traceTidCollectives, "collectives", r.Name, r.Spec.Op.String(), r.Start, end,
					map[string]any{"rank": rank, "bytes": r.Spec.Bytes, "algorithm": r.Spec.Algo.String(), "ranks": r.Spec.Ranks})
			}
		}
	} else {
		end := res.Sim.Now()
		// A transfer that never finished spans to the run's end, named so.
		flowSpan := func(i int, src, dst int32, bytes int64, start, done sim.Time, cat string, args map[string]any) {
			name := fmt.Sprintf("flow %d -> h%d", i, dst)
			if done == 0 {
				name, done = name+" (unfinished)", end
			}
			args["flow"], args["dst"], args["bytes"] = i, int(dst), bytes
			span(int(src), traceTidFlows, "flows", name, cat, start, done, args)
		}
		switch {
		case res.Endpoint != nil:
			kind := res.Summary.Transport.Kind
			for i, f := range res.Endpoint.Flows() {
				args := map[string]any{}
				for k, v := range f.Extra {
					args[k] = v
				}
				flowSpan(i, int32(f.Src), int32(f.Dst), f.Bytes, f.Start, f.Done, kind, args)
			}
		case res.Raw != nil:
			for i, f := range res.Raw.Flows {
				stop := min(f.Stop, end)
				span(int(f.Src), traceTidFlows, "flows", fmt.Sprintf("raw flow %d -> h%d (plane %d)", i, f.Dst, f.Plane), "raw", f.Start, stop,
					map[string]any{"flow": i, "dst": int(f.Dst), "plane": f.Plane, "sent_bytes": res.Raw.Stats[i].SentBytes})
			}
		}
	}
	for _, f := range res.Faults {
		if f.applied {
			t.Instant(0, 0, f.Action+" "+f.Name, "fault", int64(f.At), report.ScopeGlobal, map[string]any{"entry": f.Entry})
		}
	}
	if dropped > 0 {
		t.Instant(0, 0, fmt.Sprintf("trace truncated: %d spans left out (MaxTraceSpans %d)", dropped, MaxTraceSpans), "lockstep",
			int64(res.Sim.Now()), report.ScopeGlobal, nil)
	}
	if t.Len() == 0 {
		return nil
	}
	return t
}
