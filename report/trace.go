package report

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
)

// Scope is how far an instant event reaches in a trace viewer: its thread, its process, or
// the whole trace (a line across every track, as for a failure that affects everything).
type Scope byte

// The scopes of the trace-event format's "s" field.
const (
	ScopeThread  Scope = 't'
	ScopeProcess Scope = 'p'
	ScopeGlobal  Scope = 'g'
)

// Trace collects events in the Chrome trace-event format (see the package documentation) and
// writes them as one JSON object: {"displayTimeUnit":"ns","traceEvents":[...]}. Times are
// given in simulator picoseconds (int64, as sim.Time counts) and written in microseconds with
// exact decimals ("ts":12.345678). A pid is a process track (for example a rank or a host), a
// tid a thread track within it (for example a QP or a stream). Pids start at 1: Perfetto
// files pid 0 under the kernel's idle process (swapper), so an event or name with a pid below
// 1 is not recorded and is reported like any invalid event.
//
// The output is deterministic: metadata events first within each (pid, tid), then events by
// time, flow events after the other events of their instant (so the span a flow binds to is
// open when a viewer reads it), then by name, longest first (so a span encloses the spans it
// starts with), category, and the order they were added. An invalid event (a negative time or
// duration, a pid below 1, a flow that ends before it starts) is not recorded; the first one
// is reported by WriteTo and WriteFile. A Trace is not safe for concurrent use; its memory
// grows with the events (about 150 bytes each plus their args).
type Trace struct {
	events  []traceEvent
	process map[int]string
	thread  map[[2]int]string
	flows   uint64 // flow ids given out
	err     error
}

// traceEvent is one recorded event; ts and dur are picoseconds.
type traceEvent struct {
	ph        byte // 'X' complete, 'i' instant, 'C' counter, 's' flow start, 'f' flow end
	pid, tid  int
	ts, dur   int64
	name, cat string
	scope     Scope
	id        uint64 // flow events: the flow's id
	args      map[string]any
	seq       int
}

// NewTrace returns an empty trace.
func NewTrace() *Trace {
	return &Trace{process: map[int]string{}, thread: map[[2]int]string{}}
}

// Process names the process track pid (a "process_name" metadata event); naming it again
// replaces the name. A pid below 1 is not recorded and is reported by WriteTo.
func (t *Trace) Process(pid int, name string) {
	if t.badPid("process", name, pid) {
		return
	}
	t.process[pid] = name
}

// Thread names the thread track tid of process pid (a "thread_name" metadata event); naming it
// again replaces the name. A pid below 1 is not recorded and is reported by WriteTo.
func (t *Trace) Thread(pid, tid int, name string) {
	if t.badPid("thread", name, pid) {
		return
	}
	t.thread[[2]int{pid, tid}] = name
}

// badPid records an error and reports true when pid is below 1 (what says so names the kind
// of event and its name).
func (t *Trace) badPid(kind, name string, pid int) bool {
	if pid >= 1 {
		return false
	}
	t.fail(fmt.Errorf("report: trace: %s %q: pid %d: want a pid >= 1 (Perfetto files pid 0 under the kernel's idle process)", kind, name, pid))
	return true
}

// Span records a complete event ("X"): name in category cat (comma-separated categories are
// allowed; "" for none) on track (pid, tid) from startPs for durPs picoseconds, with optional
// args shown when the span is selected (values must marshal to JSON; nil for none). A negative
// start or duration is not recorded and is reported by WriteTo.
func (t *Trace) Span(pid, tid int, name, cat string, startPs, durPs int64, args map[string]any) {
	if t.badPid("span", name, pid) {
		return
	}
	if startPs < 0 || durPs < 0 {
		t.fail(fmt.Errorf("report: trace: span %q (pid %d, tid %d) at %d ps for %d ps: negative time or duration", name, pid, tid, startPs, durPs))
		return
	}
	t.add(traceEvent{ph: 'X', pid: pid, tid: tid, ts: startPs, dur: durPs, name: name, cat: cat, args: args})
}

// Instant records an instant event ("i") at atPs on track (pid, tid) reaching as far as scope
// (ScopeGlobal for a failure that concerns every track). A negative time is not recorded and
// is reported by WriteTo.
func (t *Trace) Instant(pid, tid int, name, cat string, atPs int64, scope Scope, args map[string]any) {
	if t.badPid("instant", name, pid) {
		return
	}
	if atPs < 0 {
		t.fail(fmt.Errorf("report: trace: instant %q (pid %d, tid %d) at %d ps: negative time", name, pid, tid, atPs))
		return
	}
	if scope != ScopeProcess && scope != ScopeGlobal {
		scope = ScopeThread
	}
	t.add(traceEvent{ph: 'i', pid: pid, tid: tid, ts: atPs, name: name, cat: cat, scope: scope, args: args})
}

// Counter records a counter event ("C") of process pid at atPs: a track named name plotting
// each of values (for example queue depth in bytes, or EVs per state) from atPs until the
// track's next event (Perfetto names each series "<name> <key>"). A negative time is not
// recorded and is reported by WriteTo; so is a value that is not a finite number (when the
// trace is written: JSON has no NaN or infinity).
func (t *Trace) Counter(pid int, name string, atPs int64, values map[string]float64) {
	if t.badPid("counter", name, pid) {
		return
	}
	if atPs < 0 {
		t.fail(fmt.Errorf("report: trace: counter %q (pid %d) at %d ps: negative time", name, pid, atPs))
		return
	}
	args := make(map[string]any, len(values))
	for k, v := range values {
		args[k] = v
	}
	t.add(traceEvent{ph: 'C', pid: pid, ts: atPs, name: name, args: args})
}

// Flow records a flow event pair: an arrow named name in category cat from the span on track
// (fromPid, fromTid) that encloses fromPs to the span on track (toPid, toTid) that encloses
// toPs, for example from a transfer's send to its receive. It is written as the trace-event
// format's flow events ("Trace Event Format", section "Flow Events"): a flow start ("s") and a
// flow end ("f") sharing a fresh "id" (1, 2, ... in the order of the calls), cat and name,
// the end with binding point "bp":"e" (the enclosing slice, as the start always binds). Each
// is written on its track after the other events of its instant, so a span starting at that
// instant encloses it: Perfetto's JSON importer binds a flow event to the slice open on its
// thread when it reads it, and reads the complete events of one timestamp before its other
// events (whatever the file order, when the span lasts longer than zero); chrome://tracing
// and Chrome DevTools bind to the slice with the same pid, tid and ts. Give it times inside
// spans of positive duration: a viewer drops an arrow with no enclosing span. args are shown with the start (nil for none). A negative time, an
// end before the start or a pid below 1 is not recorded and is reported by WriteTo. It
// returns the flow's id, 0 when not recorded.
func (t *Trace) Flow(fromPid, fromTid int, fromPs int64, toPid, toTid int, toPs int64, name, cat string, args map[string]any) uint64 {
	if t.badPid("flow", name, fromPid) || t.badPid("flow", name, toPid) {
		return 0
	}
	if fromPs < 0 || toPs < fromPs {
		t.fail(fmt.Errorf("report: trace: flow %q from pid %d tid %d at %d ps to pid %d tid %d at %d ps: want 0 <= start <= end", name, fromPid, fromTid, fromPs, toPid, toTid, toPs))
		return 0
	}
	t.flows++
	t.add(traceEvent{ph: 's', pid: fromPid, tid: fromTid, ts: fromPs, name: name, cat: cat, id: t.flows, args: args})
	t.add(traceEvent{ph: 'f', pid: toPid, tid: toTid, ts: toPs, name: name, cat: cat, id: t.flows})
	return t.flows
}

// Len is the number of events recorded, metadata included.
func (t *Trace) Len() int { return len(t.events) + len(t.process) + len(t.thread) }

func (t *Trace) add(e traceEvent) {
	e.seq = len(t.events)
	t.events = append(t.events, e)
}

func (t *Trace) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

// jsonEvent is one event as the format writes it.
type jsonEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   json.Number    `json:"ts"`
	Dur  json.Number    `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	S    string         `json:"s,omitempty"`
	ID   uint64         `json:"id,omitempty"`
	BP   string         `json:"bp,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// sorted returns every event, metadata included, in output order.
func (t *Trace) sorted() []traceEvent {
	all := make([]traceEvent, 0, t.Len())
	for _, pid := range sortedKeys(t.process) {
		all = append(all, traceEvent{ph: 'M', pid: pid, name: "process_name", args: map[string]any{"name": t.process[pid]}})
	}
	keys := make([][2]int, 0, len(t.thread))
	for k := range t.thread {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, k := range keys {
		all = append(all, traceEvent{ph: 'M', pid: k[0], tid: k[1], name: "thread_name", args: map[string]any{"name": t.thread[k]}})
	}
	all = append(all, t.events...)
	meta := func(e traceEvent) int {
		if e.ph == 'M' {
			return 0
		}
		return 1
	}
	flow := func(e traceEvent) int { // flow events after the spans they bind to
		if e.ph == 's' || e.ph == 'f' {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(all, func(a, b traceEvent) int {
		return cmp.Or(cmp.Compare(a.pid, b.pid), cmp.Compare(a.tid, b.tid), cmp.Compare(meta(a), meta(b)),
			cmp.Compare(a.ts, b.ts), cmp.Compare(flow(a), flow(b)), cmp.Compare(a.name, b.name), cmp.Compare(b.dur, a.dur),
			cmp.Compare(a.cat, b.cat), cmp.Compare(a.ph, b.ph), cmp.Compare(a.id, b.id), cmp.Compare(a.seq, b.seq))
	})
	return all
}

// WriteTo writes the trace as JSON, one event per line, to w. Errors: the first invalid event
// recorded, args that do not marshal to JSON (naming the event), or the writer's.
func (t *Trace) WriteTo(w io.Writer) (int64, error) {
	if t.err != nil {
		return 0, t.err
	}
	cw := &countWriter{w: w}
	bw := bufio.NewWriter(cw)
	bw.WriteString("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i, e := range t.sorted() {
		je := jsonEvent{Name: e.name, Cat: e.cat, Ph: string(e.ph), Ts: json.Number(psToUs(e.ts)), Pid: e.pid, Tid: e.tid, Args: e.args}
		if e.ph == 'X' {
			je.Dur = json.Number(psToUs(e.dur))
		}
		if e.ph == 'i' {
			je.S = string(e.scope)
		}
		if e.ph == 's' || e.ph == 'f' {
			je.ID = e.id
		}
		if e.ph == 'f' {
			je.BP = "e"
		}
		buf.Reset()
		if err := enc.Encode(je); err != nil {
			return cw.n, fmt.Errorf("report: trace: event %q (pid %d, tid %d) at %d ps: %w", e.name, e.pid, e.tid, e.ts, err)
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteByte('\n')
		bw.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	bw.WriteString("\n]}\n")
	err := bw.Flush()
	return cw.n, err
}

// WriteFile writes the trace to the file path (see WriteTo), replacing it.
func (t *Trace) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: trace: %w", err)
	}
	if _, err := t.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// psToUs formats a non-negative count of picoseconds as exact decimal microseconds:
// 1500000 -> "1.5", 7 -> "0.000007", 0 -> "0".
func psToUs(ps int64) string {
	s := strconv.FormatInt(ps/1e6, 10)
	frac := ps % 1e6
	if frac == 0 {
		return s
	}
	f := strconv.FormatInt(frac+1e6, 10)[1:] // six digits, zero-padded
	for f[len(f)-1] == '0' {
		f = f[:len(f)-1]
	}
	return s + "." + f
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
