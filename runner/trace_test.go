package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/report"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// traceDoc is trace.json as the schema test reads it back.
type traceDoc struct {
	TraceEvents []traceDocEvent `json:"traceEvents"`
}

type traceDocEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   uint64         `json:"id"`
	Args map[string]any `json:"args"`
}

// checkTrace validates trace.json bytes: first against the trace-event format's per-event
// rules (report/testdata/trace-event.schema.json: the required fields of each phase, dur on
// X, id and cat on flow events and bp on their ends, numeric counter args, args objects,
// pid >= 1), then the rules between events no schema can state: every pid with events is
// named by a process_name event and none is 0; the spans of each thread nest (a span that
// starts inside another ends inside it); each flow id is one "s" and one "f" with the same
// name and cat, each at the start of a span of positive duration and the same cat on its
// thread, the end not before the start. It returns the events.
func checkTrace(t *testing.T, raw []byte) []traceDocEvent {
	t.Helper()
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "report", "testdata", "trace-event.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("trace.json is not JSON: %v", err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("trace.json fails the trace-event schema: %v", err)
	}
	var doc traceDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	named := map[int]bool{}
	type track struct{ pid, tid int }
	spans := map[track][][2]float64{}
	for _, e := range doc.TraceEvents {
		if e.Pid == 0 {
			t.Fatalf("event %+v has pid 0", e)
		}
		switch e.Ph {
		case "M":
			if e.Name == "process_name" {
				named[e.Pid] = true
			}
		case "X":
			spans[track{e.Pid, e.Tid}] = append(spans[track{e.Pid, e.Tid}], [2]float64{e.Ts, e.Ts + e.Dur})
		}
	}
	const eps = 1e-9 // us: sums of exact decimals read as floats
	for k, ss := range spans {
		// Events come sorted by time, longest first at one instant: a stack of open spans.
		var open [][2]float64
		for _, s := range ss {
			for len(open) > 0 && open[len(open)-1][1] <= s[0]+eps {
				open = open[:len(open)-1]
			}
			if n := len(open); n > 0 && s[1] > open[n-1][1]+eps {
				t.Fatalf("pid %d tid %d: span %v overlaps span %v without nesting in it", k.pid, k.tid, s, open[n-1])
			}
			open = append(open, s)
		}
	}
	// A flow event binds in every viewer when it lies at the start of a span of positive
	// duration with its category on its thread (Perfetto: the enclosing slice; Chrome
	// DevTools: the slice with the same pid, tid, ts and cat).
	starts := map[[3]any]bool{}
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" && e.Dur > 0 {
			starts[[3]any{track{e.Pid, e.Tid}, e.Ts, e.Cat}] = true
		}
	}
	inSpan := func(e traceDocEvent) bool { return starts[[3]any{track{e.Pid, e.Tid}, e.Ts, e.Cat}] }
	flows := map[uint64][]traceDocEvent{}
	for _, e := range doc.TraceEvents {
		if e.Ph != "M" && !named[e.Pid] {
			t.Fatalf("pid %d has events but no process_name: %+v", e.Pid, e)
		}
		if e.Ph == "s" || e.Ph == "f" {
			flows[e.ID] = append(flows[e.ID], e)
			if !inSpan(e) {
				t.Fatalf("flow event %+v starts no span of its thread and category", e)
			}
		}
	}
	for id, fs := range flows {
		if len(fs) != 2 || fs[0].Name != fs[1].Name || fs[0].Cat != fs[1].Cat {
			t.Fatalf("flow id %d: %+v; want one s and one f with the same name and cat", id, fs)
		}
		s, f := fs[0], fs[1]
		if s.Ph == "f" {
			s, f = f, s
		}
		if s.Ph != "s" || f.Ph != "f" || f.Ts < s.Ts {
			t.Fatalf("flow id %d: %+v; want a start, then an end no earlier", id, fs)
		}
	}
	return doc.TraceEvents
}

// traceOf builds and writes res's trace, twice, and checks both writes are the same bytes.
func traceOf(t *testing.T, res *Result) []byte {
	t.Helper()
	tr := BuildTrace(res)
	if tr == nil {
		t.Fatal("no trace")
	}
	var a, b bytes.Buffer
	if _, err := tr.WriteTo(&a); err != nil {
		t.Fatal(err)
	}
	if _, err := BuildTrace(res).WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two traces of one run differ")
	}
	return a.Bytes()
}

// traceCount tallies a trace's events: by phase, by thread name, processes by name prefix,
// counter tracks and spans by name.
type traceCount struct {
	phase, thread, process, counter, span map[string]int
}

func countTrace(evs []traceDocEvent) traceCount {
	c := traceCount{map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}}
	seen := map[string]bool{}
	for _, e := range evs {
		c.phase[e.Ph]++
		switch {
		case e.Ph == "M" && e.Name == "thread_name":
			c.thread[strings.SplitN(e.Args["name"].(string), " #", 2)[0]]++
		case e.Ph == "M" && e.Name == "process_name":
			c.process[strings.SplitN(e.Args["name"].(string), " ", 2)[0]]++
		case e.Ph == "C" && !seen[e.Name]:
			seen[e.Name] = true
			c.counter[strings.SplitN(e.Name, " ", 2)[0]]++
		case e.Ph == "X":
			c.span[e.Name]++
		}
	}
	return c
}

// The schema test (issue 23): trace.json of a training run at each engine, of collectives
// (packet and flow level, with a failure) and of traffic (MRC incast with a failure, RoCE,
// raw) passes the trace-event schema and the cross-event rules, never uses pid 0, and has
// what each run should draw: rank processes with TP on its own thread, counter tracks,
// one flow arrow per transfer or collective.
func TestTraceSchema(t *testing.T) {
	// TP 8 over the network (no NVLink domain), so its waits are spans of their own; with
	// NVLink domains TP is folded into the compute spans (training exposes no finer split).
	small := tfCase{radix: 16, hosts: 16, transport: "{kind: mrc}", plan: "{tp: 8, pp: 2}", gpu: ", scale_up_gpus: 1"}
	pk := small
	pk.engine = "packet"
	pk.faults = "  - {at: 0s, link: h0.p0, action: degrade, factor: 0.25}\n"
	ideal := small
	ideal.transport = "{kind: ideal}"
	nvl := small
	nvl.gpu = ""
	for _, tc := range []struct {
		name string
		yaml string
		// want
		procs     string // process name prefix: host or rank
		threads   []string
		counters  []string // counter track name prefixes
		arrows    int      // flow pairs; -1: at least one
		instants  int      // fault instants at least
		noThreads []string
	}{
		{"training packet", pk.yaml(), "rank", []string{"phases", "tp", "flows", "received"}, []string{"util", "deepest", "cluster"}, -1, 1, nil},
		{"training flow", small.yaml(), "rank", []string{"phases", "tp"}, []string{"cluster"}, 0, 0, []string{"flows"}},
		{"training analytic", ideal.yaml(), "rank", []string{"phases", "tp"}, []string{"cluster"}, 0, 0, nil},
		{"training nvlink", nvl.yaml(), "rank", []string{"phases"}, []string{"cluster"}, 0, 0, []string{"tp"}},
		{"collectives mrc", collMRCTrace, "host", []string{"collectives", "collective steps"}, []string{"util"}, 2, 1, []string{"flows"}},
		{"collectives flow", collSweep, "host", []string{"collectives"}, nil, 9, 0, nil},
		{"incast mrc", fmt.Sprintf(mrcYAML, 16, "  - {pattern: incast, senders: [8, 9, 10, 11], receiver: 0, bytes: 256KiB}",
			"faults:\n  - {at: 5us, link: h8.p5, action: down}"), "host", []string{"flows", "received"}, []string{"util", "deepest"}, 4, 1, nil},
		{"permutation roce", traceRoCE, "host", []string{"flows", "received"}, []string{"util", "deepest"}, 8, 0, nil},
		{"permutation raw", permutation(2, 2, 8, "ecmp", 0.5, 1, "20us"), "host", []string{"flows", "received"}, []string{"util"}, -1, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustRun(t, tc.yaml)
			evs := checkTrace(t, traceOf(t, res))
			c := countTrace(evs)
			t.Logf("%d events: phases %v, threads %v, processes %v, counters %v", len(evs), c.phase, c.thread, c.process, c.counter)
			if c.process[tc.procs] == 0 || (tc.procs == "rank" && c.process["host"] > 0) {
				t.Errorf("processes %v; want %q ones", c.process, tc.procs)
			}
			for _, th := range tc.threads {
				if c.thread[th] == 0 {
					t.Errorf("no %q thread: %v", th, c.thread)
				}
			}
			for _, th := range tc.noThreads {
				if c.thread[th] != 0 {
					t.Errorf("a %q thread: %v", th, c.thread)
				}
			}
			for _, k := range tc.counters {
				if c.counter[k] == 0 {
					t.Errorf("no %q counter track: %v", k, c.counter)
				}
			}
			if c.counter["util"] > traceLinkTracks {
				t.Errorf("%d link counter tracks; want at most %d", c.counter["util"], traceLinkTracks)
			}
			if got := c.phase["s"]; (tc.arrows >= 0 && got != tc.arrows) || (tc.arrows < 0 && got == 0) || c.phase["f"] != got {
				t.Errorf("%d flow starts, %d ends; want %d (-1: some)", got, c.phase["f"], tc.arrows)
			}
			if c.phase["i"] < tc.instants {
				t.Errorf("%d instants; want at least %d (the faults)", c.phase["i"], tc.instants)
			}
			if tc.procs == "rank" && (c.span["tp"] > 0) != (c.thread["tp"] > 0) {
				t.Errorf("%d tp spans, %d tp threads", c.span["tp"], c.thread["tp"])
			}
			perTrack := map[string]int{}
			for _, e := range evs {
				if e.Ph == "C" {
					perTrack[e.Name]++
				}
			}
			for name, n := range perTrack {
				if n > traceCounterPoints {
					t.Errorf("counter %q: %d points; want at most %d", name, n, traceCounterPoints)
				}
			}
		})
	}
}

// collMRCTrace: the coll-mrc golden scenario (two concurrent collectives sharing four NICs
// over MRC) with a NIC link failing mid-run.
const collMRCTrace = `
name: coll-mrc
topology:
  clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100Gbps, hop_latency: 500ns}
transport: {kind: mrc}
workload:
  collectives:
    - {name: dp, op: all_reduce, algorithm: ring, hosts: [0, 1, 2, 3, 4, 5, 6, 7], bytes: 1MiB}
    - {name: tp, op: all_gather, hosts: [0, 2, 4, 6, 8, 10, 12, 14], bytes: 1MiB}
faults:
  - {at: 10us, link: h2.p3, action: down}
run: {trace: true}
`

// TestTraceCollectiveSteps checks the per-step spans: a ring all-reduce over 8 ranks has
// 2 x 7 steps, so each rank gets 14 step spans, in order, none before the launch.
func TestTraceCollectiveSteps(t *testing.T) {
	res := mustRun(t, `
topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 8, host_link: 100G, hop_latency: 500ns}}
transport: {kind: mrc}
workload: {collectives: [{name: ar, op: all_reduce, algorithm: ring, ranks: 8, bytes: 1MiB}]}
run: {trace: true}
`)
	evs := checkTrace(t, traceOf(t, res))
	perRank := map[int]int{}
	for _, e := range evs {
		if e.Ph == "X" && strings.HasPrefix(e.Name, "ar/") && strings.Contains(e.Name, " step ") {
			perRank[e.Pid]++
		}
	}
	if len(perRank) != 8 {
		t.Fatalf("step spans on %d hosts: %v; want 8", len(perRank), perRank)
	}
	for pid, n := range perRank {
		if n != 14 {
			t.Errorf("pid %d: %d step spans; want 14 (2 x 7 ring steps)", pid, n)
		}
	}
}

// traceRoCE: a RoCE permutation of 8 hosts, 256 KiB each.
const traceRoCE = `
name: roce-perm
topology: {clos: {tiers: 2, planes: 2, radix: 8, hosts: 8, host_link: 100G}}
transport: {kind: roce}
traffic:
  - {pattern: permutation, bytes: 256KiB}
run: {seed: 3}
`

// Overlapping spans of one kind on one host go to more threads (lanes), so every thread's
// spans nest: an incast receiver gets one "received" lane per concurrent sender, and a host
// sending two transfers at once two "flows" lanes.
func TestTraceLanes(t *testing.T) {
	for _, n := range []int{1, 3, 6} {
		senders := make([]string, n)
		for i := range senders {
			senders[i] = fmt.Sprint(i + 1)
		}
		y := fmt.Sprintf(mrcYAML, 8, fmt.Sprintf("  - {pattern: incast, senders: [%s], receiver: 0, bytes: 64KiB}\n  - {pattern: flows, flows: [{src: 1, dst: 7}], bytes: 64KiB}", strings.Join(senders, ", ")), "")
		evs := checkTrace(t, traceOf(t, mustRun(t, y)))
		recv, sends1 := 0, 0
		for _, e := range evs {
			if e.Ph == "M" && e.Name == "thread_name" {
				name := e.Args["name"].(string)
				if e.Pid == tracePid(0) && strings.HasPrefix(name, "received") {
					recv++
				}
				if e.Pid == tracePid(1) && strings.HasPrefix(name, "flows") {
					sends1++
				}
			}
		}
		if recv != n || sends1 != 2 {
			t.Errorf("incast of %d: host 0 has %d received threads, host 1 %d flows threads; want %d and 2", n, recv, sends1, n)
		}
	}
}

// MaxTraceSpans bounds what a trace holds; what is left out is said in a final instant.
func TestTraceBounded(t *testing.T) {
	res := mustRun(t, collSweep)
	full := countTrace(checkTrace(t, traceOf(t, res)))
	total := full.phase["X"] + full.phase["s"]
	defer func(n int) { traceSpanLimit = n }(traceSpanLimit)
	for _, limit := range []int{1, 7, total / 2, total - 1, total} {
		traceSpanLimit = limit
		evs := checkTrace(t, traceOf(t, res))
		c := countTrace(evs)
		var note string
		for _, e := range evs {
			if e.Ph == "i" && strings.HasPrefix(e.Name, "trace truncated") {
				note = e.Name
			}
		}
		kept := c.phase["X"] + c.phase["s"]
		want := ""
		if limit < total {
			want = fmt.Sprintf("trace truncated: %d spans and arrows left out (MaxTraceSpans %d)", total-limit, limit)
		}
		if kept != limit || note != want {
			t.Errorf("limit %d of %d: kept %d, note %q; want %d, %q", limit, total, kept, note, limit, want)
		}
	}
}

// The link counters pick the links with the highest peak (ties: the highest mean), at most
// traceLinkTracks of them, and merge adjacent intervals into at most traceCounterPoints
// points, each the mean utilisation of its intervals; the deepest-queue track keeps the
// deepest of its intervals. A synthetic series on a real fabric: port i carries i% of its
// line rate in odd intervals (double that in even ones), switch port queues grow with time.
func TestTraceLinkCounters(t *testing.T) {
	base := mustRun(t, permutation(2, 2, 8, "ecmp", 0.5, 1, "20us")).Links
	for _, n := range []int{1, 10, traceCounterPoints, traceCounterPoints + 1, 3*traceCounterPoints + 7} {
		ls := *base
		ports := ls.ports
		ls.starts = make([]sim.Time, n)
		ls.tx, ls.qmax = make([]int64, n*ports), make([]int64, n*ports)
		sec := ls.interval.Seconds()
		for k := range n {
			ls.starts[k] = sim.Time(k) * ls.interval
			for i := range ports {
				pct := float64(i % 50)
				if k%2 == 0 {
					pct *= 2
				}
				ls.tx[k*ports+i] = int64(pct / 100 * float64(ls.net.Ports[i].Rate) * sec / 8)
				ls.qmax[k*ports+i] = int64(k + 1)
			}
		}
		b := &traceBuilder{t: report.NewTrace(), res: &Result{}, named: map[int]bool{}, lanes: map[[2]int][]sim.Time{}, ranks: map[int]int{}, cluster: 1}
		b.linkCounters(&ls)
		var buf bytes.Buffer
		if _, err := b.t.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		evs := checkTrace(t, buf.Bytes())
		points := map[string][]float64{}
		for _, e := range evs {
			if e.Ph == "C" {
				for _, v := range e.Args {
					points[e.Name] = append(points[e.Name], v.(float64))
				}
			}
		}
		g := traceGroup(n)
		wantPoints := (n + g - 1) / g
		if len(points) != traceLinkTracks+1 {
			t.Fatalf("n %d: %d tracks; want %d links and the deepest queue", n, len(points), traceLinkTracks)
		}
		chosen := map[int]bool{}
		for name, vs := range points {
			if len(vs) != wantPoints || len(vs) > traceCounterPoints {
				t.Errorf("n %d: %s has %d points; want %d (at most %d)", n, name, len(vs), wantPoints, traceCounterPoints)
			}
			if name == "deepest switch queue" {
				if vs[0] != float64(g) || vs[len(vs)-1] != float64(n) {
					t.Errorf("n %d: deepest queue starts %v, ends %v; want %d and %d", n, vs[0], vs[len(vs)-1], g, n)
				}
				continue
			}
			port := strings.TrimPrefix(name, "util ")
			i := slices.IndexFunc(ls.net.Ports, func(p fabric.Port) bool { return p.Name == port })
			chosen[i] = true
			want := float64(i%50) * 1.5 // even and odd intervals alternate
			if g == 1 || g%2 == 1 {
				want = -1 // a group of odd length does not average to 1.5x
			}
			if want >= 0 && math.Abs(vs[0]-want) > 0.01 {
				t.Errorf("n %d: %s first point %.3f%%; want the mean %.3f%%", n, name, vs[0], want)
			}
		}
		// Every chosen port is at least as busy as every other (the busiest: i % 50 == 49).
		least, most := 100, -1
		for i := range ports {
			if chosen[i] {
				least = min(least, i%50)
			} else {
				most = max(most, i%50)
			}
		}
		if least < most {
			t.Errorf("n %d: a chosen port at %d%% while another at %d%% is left out", n, least, most)
		}
	}
}

// The cluster power track follows power.csv's series, merged into at most traceCounterPoints
// points of the mean power of their samples: at the default interval one point per sample,
// at 1 us (more samples than points) fewer, with the same mean.
func TestTracePowerCounter(t *testing.T) {
	for _, interval := range []string{"", "1us"} {
		y := tfCase{radix: 16, hosts: 16, transport: "{kind: ideal}", plan: "{tp: 8, pp: 2}"}.yaml()
		if interval != "" {
			y = strings.Replace(y, "    plan:", "    power: {interval: "+interval+"}\n    plan:", 1)
		}
		res := mustRun(t, y)
		mw := res.Training.Result.Power().MW
		var pts []float64
		for _, e := range checkTrace(t, traceOf(t, res)) {
			if e.Ph == "C" && e.Name == "cluster power" {
				pts = append(pts, e.Args["MW"].(float64))
			}
		}
		g := traceGroup(len(mw))
		if len(pts) != (len(mw)+g-1)/g || len(pts) > traceCounterPoints {
			t.Fatalf("interval %q: %d samples, %d points; want %d (at most %d)", interval, len(mw), len(pts), (len(mw)+g-1)/g, traceCounterPoints)
		}
		var want, got float64
		for _, v := range mw[:len(mw)/g*g] {
			want += v
		}
		for _, v := range pts[:len(mw)/g] {
			got += v
		}
		want /= float64(len(mw) / g * g)
		got /= float64(len(mw) / g)
		t.Logf("interval %q: %d samples -> %d points, mean %.4f MW", interval, len(mw), len(pts), got)
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("interval %q: mean of the points %.6f MW; want the samples' %.6f", interval, got, want)
		}
	}
}
