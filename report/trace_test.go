package report

import (
	"bytes"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// traceFile is a trace as encoding/json reads it back.
type traceFile struct {
	DisplayTimeUnit string `json:"displayTimeUnit"`
	TraceEvents     []struct {
		Name string         `json:"name"`
		Cat  string         `json:"cat"`
		Ph   string         `json:"ph"`
		Ts   float64        `json:"ts"`
		Dur  *float64       `json:"dur"`
		Pid  int            `json:"pid"`
		Tid  int            `json:"tid"`
		S    string         `json:"s"`
		ID   uint64         `json:"id"`
		BP   string         `json:"bp"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
}

// exampleTrace is two ranks with a compute phase and a collective each, a transfer on a QP
// thread with a flow arrow to the other rank, a failure and a counter, added out of order.
func exampleTrace() *Trace {
	tr := NewTrace()
	tr.Span(2, 0, "all_reduce", "collective", 5_000_000, 3_250_500, map[string]any{"bytes": 4194304})
	tr.Span(1, 0, "compute", "compute", 0, 5_000_000, nil)
	tr.Span(1, 0, "all_reduce", "collective", 5_000_000, 3_000_000, map[string]any{"bytes": 4194304, "algorithm": "ring"})
	tr.Span(1, 1, "send 0->1", "transfer", 5_100_000, 1_000_007, nil)
	tr.Flow(1, 1, 5_100_000, 2, 0, 5_100_000, "send 0->1", "transfer", map[string]any{"bytes": 4096})
	tr.Instant(1, 0, "down h0.p3", "fault", 6_000_000, ScopeGlobal, map[string]any{"target": "h0.p3"})
	tr.Counter(1, "queue p0.t0-0.up1", 6_000_000, map[string]float64{"bytes": 4230})
	tr.Process(2, "rank 1")
	tr.Process(1, "rank 0")
	tr.Thread(1, 0, "phases")
	tr.Thread(1, 1, "qp 0")
	tr.Span(2, 0, "compute", "compute", 0, 5_000_000, nil)
	return tr
}

func TestTraceWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	if err := exampleTrace().WriteFile(path); err != nil {
		t.Fatal(err)
	}
	raw := readFileString(t, path)
	var tf traceFile
	if err := json.Unmarshal([]byte(raw), &tf); err != nil {
		t.Fatalf("trace is not JSON: %v\n%s", err, raw)
	}
	if tf.DisplayTimeUnit != "ns" {
		t.Errorf("displayTimeUnit %q, want ns", tf.DisplayTimeUnit)
	}
	type ev struct {
		ph, name  string
		pid, tid  int
		ts, dur   float64 // us; dur -1 when absent
		scope     string
		argName   string // args["name"] of metadata
		argsCount int
	}
	want := []ev{
		{"M", "process_name", 1, 0, 0, -1, "", "rank 0", 1},
		{"M", "thread_name", 1, 0, 0, -1, "", "phases", 1},
		{"X", "compute", 1, 0, 0, 5, "", "", 0},
		{"X", "all_reduce", 1, 0, 5, 3, "", "", 2},
		{"i", "down h0.p3", 1, 0, 6, -1, "g", "", 1},
		{"C", "queue p0.t0-0.up1", 1, 0, 6, -1, "", "", 1},
		{"M", "thread_name", 1, 1, 0, -1, "", "qp 0", 1},
		{"X", "send 0->1", 1, 1, 5.1, 1.000007, "", "", 0},
		{"s", "send 0->1", 1, 1, 5.1, -1, "", "", 1},
		{"M", "process_name", 2, 0, 0, -1, "", "rank 1", 1},
		{"X", "compute", 2, 0, 0, 5, "", "", 0},
		{"X", "all_reduce", 2, 0, 5, 3.2505, "", "", 1},
		{"f", "send 0->1", 2, 0, 5.1, -1, "", "", 0},
	}
	if len(tf.TraceEvents) != len(want) {
		t.Fatalf("%d events, want %d:\n%s", len(tf.TraceEvents), len(want), raw)
	}
	for i, w := range want {
		g := tf.TraceEvents[i]
		dur := -1.0
		if g.Dur != nil {
			dur = *g.Dur
		}
		name, _ := g.Args["name"].(string)
		got := ev{g.Ph, g.Name, g.Pid, g.Tid, g.Ts, dur, g.S, name, len(g.Args)}
		if got.ph != w.ph || got.name != w.name || got.pid != w.pid || got.tid != w.tid || math.Abs(got.ts-w.ts) > 1e-12 ||
			math.Abs(got.dur-w.dur) > 1e-12 || got.scope != w.scope || got.argName != w.argName || got.argsCount != w.argsCount {
			t.Errorf("event %d = %+v, want %+v", i, got, w)
		}
	}
	// The flow pair: one id, the end bound to its enclosing span.
	for _, i := range []int{8, 12} {
		if g := tf.TraceEvents[i]; g.ID != 1 || g.Cat != "transfer" || (g.Ph == "f") != (g.BP == "e") {
			t.Errorf("flow event %d: id %d, cat %q, bp %q; want id 1, cat transfer, bp e on the end only", i, g.ID, g.Cat, g.BP)
		}
	}
	// Exact decimals, not float noise.
	if !strings.Contains(raw, `"ts":5.1,"dur":1.000007`) {
		t.Errorf("trace lacks the exact decimals of the transfer span:\n%s", raw)
	}
}

// TestTraceDeterministic: the output does not depend on the order events were added in, nor
// on map iteration.
func TestTraceDeterministic(t *testing.T) {
	var first []byte
	for range 5 {
		var buf bytes.Buffer
		if _, err := exampleTrace().WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = buf.Bytes()
		} else if !bytes.Equal(first, buf.Bytes()) {
			t.Fatal("two writes of the same trace differ")
		}
	}
	reversed := NewTrace()
	reversed.Span(2, 0, "compute", "compute", 0, 5_000_000, nil)
	reversed.Thread(1, 1, "qp 0")
	reversed.Thread(1, 0, "phases")
	reversed.Process(1, "rank 0")
	reversed.Process(2, "rank 1")
	reversed.Counter(1, "queue p0.t0-0.up1", 6_000_000, map[string]float64{"bytes": 4230})
	reversed.Instant(1, 0, "down h0.p3", "fault", 6_000_000, ScopeGlobal, map[string]any{"target": "h0.p3"})
	reversed.Flow(1, 1, 5_100_000, 2, 0, 5_100_000, "send 0->1", "transfer", map[string]any{"bytes": 4096})
	reversed.Span(1, 1, "send 0->1", "transfer", 5_100_000, 1_000_007, nil)
	reversed.Span(1, 0, "all_reduce", "collective", 5_000_000, 3_000_000, map[string]any{"algorithm": "ring", "bytes": 4194304})
	reversed.Span(1, 0, "compute", "compute", 0, 5_000_000, nil)
	reversed.Span(2, 0, "all_reduce", "collective", 5_000_000, 3_250_500, map[string]any{"bytes": 4194304})
	var buf bytes.Buffer
	if _, err := reversed.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, buf.Bytes()) {
		t.Errorf("events added in another order give another file:\n%s\nvs\n%s", first, buf.Bytes())
	}
	if got := exampleTrace().Len(); got != 13 {
		t.Errorf("Len() = %d, want 13", got)
	}
}

// TestTraceNesting: a span that starts with another and lasts longer comes first, so viewers
// nest the shorter one inside it.
func TestTraceNesting(t *testing.T) {
	tr := NewTrace()
	tr.Span(1, 0, "step", "", 0, 100, nil)
	tr.Span(1, 0, "step", "", 0, 1000, nil)
	var tf traceFile
	var buf bytes.Buffer
	if _, err := tr.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(buf.Bytes(), &tf); err != nil {
		t.Fatal(err)
	}
	if *tf.TraceEvents[0].Dur != 0.001 || *tf.TraceEvents[1].Dur != 0.0001 {
		t.Errorf("durations %v, %v: the longer span must come first", *tf.TraceEvents[0].Dur, *tf.TraceEvents[1].Dur)
	}
}

func TestTraceErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		add  func(tr *Trace)
		want string
	}{
		{"negative duration", func(tr *Trace) { tr.Span(1, 0, "x", "", 10, -1, nil) }, `span "x" (pid 1, tid 0) at 10 ps for -1 ps`},
		{"negative start", func(tr *Trace) { tr.Span(1, 0, "x", "", -5, 1, nil) }, "negative time"},
		{"negative instant", func(tr *Trace) { tr.Instant(1, 0, "f", "", -1, ScopeGlobal, nil) }, `instant "f"`},
		{"negative counter", func(tr *Trace) { tr.Counter(1, "q", -1, nil) }, `counter "q"`},
		{"args not JSON", func(tr *Trace) { tr.Span(2, 3, "y", "", 0, 1, map[string]any{"v": math.NaN()}) }, `event "y" (pid 2, tid 3) at 0 ps`},
		{"counter not finite", func(tr *Trace) { tr.Counter(2, "q", 0, map[string]float64{"v": math.Inf(1)}) }, `event "q" (pid 2, tid 0) at 0 ps`},
		{"flow backwards", func(tr *Trace) { tr.Flow(1, 0, 10, 2, 0, 9, "a", "c", nil) }, `flow "a" from pid 1 tid 0 at 10 ps to pid 2 tid 0 at 9 ps: want 0 <= start <= end`},
		{"flow negative", func(tr *Trace) { tr.Flow(1, 0, -1, 2, 0, 9, "a", "c", nil) }, `want 0 <= start`},
		{"span pid 0", func(tr *Trace) { tr.Span(0, 0, "x", "", 0, 1, nil) }, `span "x": pid 0: want a pid >= 1`},
		{"instant pid -1", func(tr *Trace) { tr.Instant(-1, 0, "f", "", 0, ScopeGlobal, nil) }, `instant "f": pid -1: want a pid >= 1`},
		{"counter pid 0", func(tr *Trace) { tr.Counter(0, "q", 0, nil) }, `counter "q": pid 0`},
		{"process pid 0", func(tr *Trace) { tr.Process(0, "host 0") }, `process "host 0": pid 0`},
		{"thread pid 0", func(tr *Trace) { tr.Thread(0, 1, "phases") }, `thread "phases": pid 0`},
		{"flow to pid 0", func(tr *Trace) { tr.Flow(1, 0, 0, 0, 0, 1, "a", "c", nil) }, `flow "a": pid 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTrace()
			tc.add(tr)
			tr.Span(1, 0, "fine", "", 0, 1, nil)
			err := tr.WriteFile(filepath.Join(t.TempDir(), "t.json"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	if err := NewTrace().WriteFile(filepath.Join(t.TempDir(), "no", "such", "dir.json")); err == nil {
		t.Error("WriteFile into a missing folder succeeded")
	}
}

func TestPsToUs(t *testing.T) {
	for _, tc := range []struct {
		ps   int64
		want string
	}{
		{0, "0"}, {1, "0.000001"}, {7, "0.000007"}, {1_000_000, "1"}, {1_500_000, "1.5"},
		{123_456_789, "123.456789"}, {10_000_000_010, "10000.00001"},
		{math.MaxInt64, "9223372036854.775807"},
	} {
		if got := psToUs(tc.ps); got != tc.want {
			t.Errorf("psToUs(%d) = %q, want %q", tc.ps, got, tc.want)
		}
	}
}

// TestPsToUsNaive checks the exact formatting against float formatting where floats are exact
// enough (below 2^53 ps).
func TestPsToUsNaive(t *testing.T) {
	for ps := int64(0); ps < 1<<40; ps = ps*3 + 7 {
		var f float64
		if err := json.Unmarshal([]byte(psToUs(ps)), &f); err != nil {
			t.Fatalf("psToUs(%d) = %q is not a JSON number", ps, psToUs(ps))
		}
		if math.Abs(f*1e6-float64(ps)) > 1e-3*max(1, float64(ps)*1e-12) {
			t.Errorf("psToUs(%d) = %q reads back as %v us", ps, psToUs(ps), f)
		}
	}
}

// traceSchema compiles testdata/trace-event.schema.json, the trace-event format's per-event
// rules as report.Trace writes them (runner/trace_test.go uses the same file).
func traceSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("testdata", "trace-event.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// TestTraceSchema: the example trace passes the schema, and the schema refuses each kind of
// malformed event (so passing it means something).
func TestTraceSchema(t *testing.T) {
	sch := traceSchema(t)
	var buf bytes.Buffer
	if _, err := exampleTrace().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Fatalf("the example trace fails the schema: %v", err)
	}
	for _, tc := range []struct{ name, event string }{
		{"pid 0", `{"name":"a","ph":"X","ts":0,"dur":1,"pid":0,"tid":0}`},
		{"no pid", `{"name":"a","ph":"X","ts":0,"dur":1,"tid":0}`},
		{"no tid", `{"name":"a","ph":"X","ts":0,"dur":1,"pid":1}`},
		{"no ts", `{"name":"a","ph":"X","dur":1,"pid":1,"tid":0}`},
		{"no name", `{"ph":"X","ts":0,"dur":1,"pid":1,"tid":0}`},
		{"X without dur", `{"name":"a","ph":"X","ts":0,"pid":1,"tid":0}`},
		{"negative dur", `{"name":"a","ph":"X","ts":0,"dur":-1,"pid":1,"tid":0}`},
		{"dur on an instant", `{"name":"a","ph":"i","s":"g","ts":0,"dur":1,"pid":1,"tid":0}`},
		{"instant without scope", `{"name":"a","ph":"i","ts":0,"pid":1,"tid":0}`},
		{"counter without args", `{"name":"a","ph":"C","ts":0,"pid":1,"tid":0}`},
		{"counter with a string", `{"name":"a","ph":"C","ts":0,"pid":1,"tid":0,"args":{"v":"1"}}`},
		{"args not an object", `{"name":"a","ph":"X","ts":0,"dur":1,"pid":1,"tid":0,"args":[1]}`},
		{"flow without id", `{"name":"a","cat":"c","ph":"s","ts":0,"pid":1,"tid":0}`},
		{"flow without cat", `{"name":"a","ph":"s","id":1,"ts":0,"pid":1,"tid":0}`},
		{"flow end without bp", `{"name":"a","cat":"c","ph":"f","id":1,"ts":0,"pid":1,"tid":0}`},
		{"unknown phase", `{"name":"a","ph":"B","ts":0,"pid":1,"tid":0}`},
		{"metadata without a name", `{"name":"process_name","ph":"M","ts":0,"pid":1,"tid":0,"args":{}}`},
	} {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"displayTimeUnit":"ns","traceEvents":[` + tc.event + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		if sch.Validate(doc) == nil {
			t.Errorf("%s: %s passes the schema", tc.name, tc.event)
		}
	}
}
