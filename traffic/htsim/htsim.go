// Package htsim reads and writes htsim connection matrices (".cm" files), the traffic input
// of the htsim packet simulator's datacenter experiments.
//
// The format, as htsim's ConnectionMatrix::load reads it (Broadcom/csg-htsim,
// sim/datacenter/connection_matrix.cpp; trigger semantics in sim/trigger.cpp), is line
// oriented with space-separated tokens:
//
//	# a comment
//	Nodes 16                        header: the number of hosts
//	Connections 3                   header: how many connection lines follow
//	Triggers 1                      header (optional): how many trigger lines
//	Failures 1                      header (optional): how many failure lines
//	0->1 id 1 start 0 size 2000000 send_done_trigger 7
//	2->3 id 2 trigger 7 size 1000000 recv_done_trigger 8 prio 1
//	trigger id 7 oneshot
//	trigger id 8 barrier count 2
//	failure switch_type AGG switch_id 3 link_id 1
//
// A connection is "src->dst" followed by key-value pairs in any order: id (the flow id, not
// 0), start (microseconds, as htsim's main programs read it with timeFromUs), size (bytes; 0
// is an unbounded flow), trigger (the flow starts when that trigger fires, instead of at
// start), send_done_trigger and recv_done_trigger (the trigger the flow activates when its
// sender has sent every byte or its receiver has received every byte), prio (a priority) and
// the flag addon. A flow has exactly one of start and trigger. A trigger is "trigger id K"
// with one type: oneshot (fires once, on its first activation, starting every flow waiting on
// it), multishot (each activation starts the next waiting flow, in file order) or barrier
// with count N (fires after N activations). A failure names a fat-tree switch by
// switch_type (TOR, AGG or CORE) and switch_id, and optionally one of its links by link_id.
// Header counts must match the lines given, and every trigger a connection names must be
// declared, once; a flow id names one connection. The header lines may come in any order
// before the first body line, as htsim's loader reads them. Errors name the file, line and
// column (File:Line:Col), the bad value (at most 80 bytes of it, "..." marking the cut) and
// what is allowed.
package htsim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
)

// Bounds on a connection matrix, checked while reading so no input allocates without limit.
const (
	// MaxNodes bounds the Nodes header (16M hosts, beyond any fabric lockstep builds).
	MaxNodes = 1 << 24
	// MaxConnections bounds the connections of one file; it equals
	// scenario.MaxGeneratedFlows, the flows one traffic group may expand to.
	MaxConnections = 1 << 20
	// MaxTriggers and MaxFailures bound the trigger and failure lines.
	MaxTriggers = 1 << 20
	MaxFailures = 1 << 16
	// MaxSize bounds a connection's size: 1 PiB, scenario.MaxTransferBytes.
	MaxSize = 1 << 50
	// MaxLine bounds one line's length in bytes.
	MaxLine = 64 << 10
)

// Conn is one connection line.
type Conn struct {
	Src, Dst int
	// ID is the flow id (0 when the line gives none).
	ID uint32
	// Start is when the flow starts (ps), meaningful when Trigger is 0.
	Start sim.Time
	// Size is the flow's bytes; 0 is an unbounded flow.
	Size int64
	// Trigger, when not 0, is the trigger whose firing starts the flow.
	Trigger uint32
	// SendDone and RecvDone, when not 0, are the triggers the flow activates when its sender
	// has sent, or its receiver received, every byte.
	SendDone, RecvDone uint32
	// Prio is the line's prio value, HasPrio whether it gave one.
	Prio    int64
	HasPrio bool
	// AddOn is the addon flag.
	AddOn bool
	// Line is the line number the connection was read from (0 for one made in code), Col
	// the column of its src->dst and SizeCol that of its size value.
	Line, Col, SizeCol int
}

// TriggerKind is a trigger's type.
type TriggerKind uint8

// Trigger types (sim/trigger.cpp): SingleShotTrigger, MultiShotTrigger, BarrierTrigger.
const (
	Oneshot TriggerKind = iota + 1
	Multishot
	Barrier
)

// String returns the type's keyword in the file.
func (k TriggerKind) String() string {
	switch k {
	case Oneshot:
		return "oneshot"
	case Multishot:
		return "multishot"
	case Barrier:
		return "barrier"
	}
	return fmt.Sprintf("TriggerKind(%d)", uint8(k))
}

// Trigger is one trigger line.
type Trigger struct {
	// ID is the trigger's id (not 0).
	ID   uint32
	Kind TriggerKind
	// Count is the activations a barrier needs (> 0 for a barrier, 0 otherwise).
	Count int
	// Line and Col are the position of the line's "trigger" keyword.
	Line, Col int
}

// SwitchType is the tier of a failed switch.
type SwitchType uint8

// Switch tiers of htsim's fat-tree (FatTreeSwitch::TOR, AGG, CORE).
const (
	TOR SwitchType = iota + 1
	AGG
	CORE
)

// String returns the tier's keyword in the file.
func (s SwitchType) String() string {
	switch s {
	case TOR:
		return "TOR"
	case AGG:
		return "AGG"
	case CORE:
		return "CORE"
	}
	return fmt.Sprintf("SwitchType(%d)", uint8(s))
}

// Failure is one failure line: a switch, or one link of it when LinkID >= 0.
type Failure struct {
	SwitchType SwitchType
	SwitchID   int
	// LinkID is the failed link's index at the switch, -1 for the whole switch.
	LinkID int
	// Line and Col are the position of the line's "failure" keyword, SwitchIDCol and
	// LinkIDCol the columns of the switch_id and link_id values (0 when not given).
	Line, Col, SwitchIDCol, LinkIDCol int
}

// Matrix is a parsed connection matrix.
type Matrix struct {
	// Nodes is the Nodes header: hosts 0..Nodes-1.
	Nodes    int
	Conns    []Conn
	Triggers []Trigger
	Failures []Failure
}

// Error is a parse error at a position of a file.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

// Error returns "file:line:col: msg".
func (e *Error) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

// maxQuote bounds how much of an input value an error quotes, in bytes.
const maxQuote = 80

// cut returns s, or its first maxQuote bytes and "..." when it is longer, so an error
// quoting a junk line stays short.
func cut(s string) string {
	if len(s) <= maxQuote {
		return s
	}
	return s[:maxQuote] + "..."
}

// quote returns cut(s) quoted as Go quotes strings.
func quote(s string) string { return strconv.Quote(cut(s)) }

// token is one space-separated word with its 1-based column.
type token struct {
	s   string
	col int
}

func split(line string) []token {
	var out []token
	i := 0
	for i < len(line) {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
			i++
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' && line[j] != '\r' {
			j++
		}
		if j > i {
			out = append(out, token{line[i:j], i + 1})
		}
		i = j
	}
	return out
}

// parser carries the state of one Read.
type parser struct {
	file string
	line int
	m    *Matrix
	// header counts, -1 when not given
	nConns, nTrig, nFail int
	body                 bool
	trigLine             map[uint32]int // declared triggers -> their line
	trigRef              map[uint32]token
	trigRefLine          map[uint32]int
	connLine             map[uint32]int // flow ids -> their connection's line
}

func (p *parser) errf(col int, format string, a ...any) error {
	return &Error{File: p.file, Line: p.line, Col: col, Msg: fmt.Sprintf(format, a...)}
}

// Read parses a connection matrix from r; file names it in errors. Errors are *Error.
func Read(r io.Reader, file string) (*Matrix, error) {
	p := &parser{file: file, m: &Matrix{}, nConns: -1, nTrig: -1, nFail: -1,
		trigLine: map[uint32]int{}, trigRef: map[uint32]token{}, trigRefLine: map[uint32]int{}, connLine: map[uint32]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLine)
	for sc.Scan() {
		p.line++
		if err := p.parseLine(sc.Text()); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		p.line++
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, p.errf(1, "line longer than %d bytes", MaxLine)
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return p.m, p.finish()
}

func (p *parser) parseLine(line string) error {
	toks := split(line)
	if len(toks) == 0 || strings.HasPrefix(toks[0].s, "#") {
		return nil
	}
	head := toks[0]
	switch {
	case strings.Contains(head.s, "->"):
		p.body = true
		return p.conn(toks)
	case head.s == "trigger":
		p.body = true
		return p.trigger(toks)
	case head.s == "failure":
		p.body = true
		return p.failure(toks)
	case head.s == "Nodes" || head.s == "Connections" || head.s == "Triggers" || head.s == "Failures":
		return p.header(toks)
	}
	return p.errf(head.col, "unknown line %s; allowed Nodes, Connections, Triggers, Failures, src->dst, trigger, failure, # comment", quote(head.s))
}

// header parses "Nodes N" and the count lines.
func (p *parser) header(toks []token) error {
	head := toks[0]
	if p.body {
		return p.errf(head.col, "header %s after the first connection, trigger or failure line; headers come first", head.s)
	}
	if len(toks) != 2 {
		return p.errf(head.col, "%s takes one number, got %d values", head.s, len(toks)-1)
	}
	limit := map[string]int{"Nodes": MaxNodes, "Connections": MaxConnections, "Triggers": MaxTriggers, "Failures": MaxFailures}[head.s]
	min := 0
	if head.s == "Nodes" {
		min = 1
	}
	n, err := p.intIn(toks[1], head.s, min, limit)
	if err != nil {
		return err
	}
	dst := map[string]*int{"Nodes": &p.m.Nodes, "Connections": &p.nConns, "Triggers": &p.nTrig, "Failures": &p.nFail}[head.s]
	if (head.s == "Nodes" && p.m.Nodes != 0) || (head.s != "Nodes" && *dst != -1) {
		return p.errf(head.col, "%s given twice", head.s)
	}
	*dst = n
	return nil
}

// intIn parses t as a decimal integer in [min, max].
func (p *parser) intIn(t token, what string, min, max int) (int, error) {
	v, err := strconv.ParseInt(t.s, 10, 64)
	if err != nil || v < int64(min) || v > int64(max) {
		return 0, p.errf(t.col, "%s %s is not an integer in [%d, %d]", what, quote(t.s), min, max)
	}
	return int(v), nil
}

// id parses a trigger or flow id: 1 to 2^32-1.
func (p *parser) id(t token, what string) (uint32, error) {
	v, err := strconv.ParseUint(t.s, 10, 32)
	if err != nil || v == 0 {
		return 0, p.errf(t.col, "%s %s is not an id; allowed 1 to %d (0 is not allowed)", what, quote(t.s), uint32(1<<32-1))
	}
	return uint32(v), nil
}

// maxStartUs is the latest start, in whole microseconds, that fits a sim.Time.
const maxStartUs = int64(sim.MaxTime / sim.Microsecond)

// parseStart parses a start in microseconds, a decimal with at most 6 fractional digits
// (picoseconds), into ps.
func (p *parser) parseStart(t token) (sim.Time, error) {
	bad := func() error {
		return p.errf(t.col, "start %s is not a time in microseconds; allowed a decimal from 0 to %d with at most 6 fractional digits", quote(t.s), maxStartUs)
	}
	whole, frac, hasDot := strings.Cut(t.s, ".")
	if whole == "" && !hasDot || len(frac) > 6 || (hasDot && whole == "" && frac == "") {
		return 0, bad()
	}
	var w int64
	if whole != "" {
		v, err := strconv.ParseUint(whole, 10, 63)
		if err != nil || int64(v) > maxStartUs || strings.HasPrefix(whole, "+") {
			return 0, bad()
		}
		w = int64(v)
	}
	var f int64
	if frac != "" {
		v, err := strconv.ParseUint(frac, 10, 32)
		if err != nil || strings.HasPrefix(frac, "+") {
			return 0, bad()
		}
		f = int64(v)
		for k := len(frac); k < 6; k++ {
			f *= 10
		}
	}
	ps := sim.Time(w)*sim.Microsecond + sim.Time(f)
	if ps < 0 || ps > sim.MaxTime {
		return 0, bad()
	}
	return ps, nil
}

// endpoints parses "src->dst".
func (p *parser) endpoints(t token) (int, int, error) {
	a, b, _ := strings.Cut(t.s, "->")
	max := MaxNodes - 1
	if p.m.Nodes > 0 {
		max = p.m.Nodes - 1
	}
	src, err := p.intIn(token{a, t.col}, "source host", 0, max)
	if err != nil {
		return 0, 0, err
	}
	dst, err := p.intIn(token{b, t.col + len(a) + 2}, "destination host", 0, max)
	if err != nil {
		return 0, 0, err
	}
	if src == dst {
		return 0, 0, p.errf(t.col, "connection %s sends to itself; source and destination must differ", cut(t.s))
	}
	return src, dst, nil
}

func (p *parser) conn(toks []token) error {
	if p.m.Nodes == 0 {
		return p.errf(toks[0].col, "connection before the Nodes header; give Nodes N first")
	}
	if len(p.m.Conns) >= MaxConnections || (p.nConns >= 0 && len(p.m.Conns) >= p.nConns) {
		return p.errf(toks[0].col, "connection %d is beyond the Connections header (%d) or the limit of %d", len(p.m.Conns)+1, p.nConns, MaxConnections)
	}
	c := Conn{Line: p.line, Col: toks[0].col}
	var err error
	if c.Src, c.Dst, err = p.endpoints(toks[0]); err != nil {
		return err
	}
	hasStart, hasSize := false, false
	seen := map[string]bool{}
	for i := 1; i < len(toks); i++ {
		k := toks[i]
		if seen[k.s] {
			return p.errf(k.col, "%s given twice", cut(k.s))
		}
		seen[k.s] = true
		if k.s == "addon" {
			c.AddOn = true
			continue
		}
		switch k.s {
		case "start", "size", "id", "trigger", "send_done_trigger", "recv_done_trigger", "prio":
		default:
			return p.errf(k.col, "unknown connection key %s; allowed id, start, size, trigger, send_done_trigger, recv_done_trigger, prio, addon", quote(k.s))
		}
		if i+1 >= len(toks) {
			return p.errf(k.col+len(k.s), "%s has no value", k.s)
		}
		i++
		v := toks[i]
		switch k.s {
		case "start":
			c.Start, err = p.parseStart(v)
			hasStart = true
		case "size":
			var n uint64
			n, err = strconv.ParseUint(v.s, 10, 64)
			if err != nil || n > MaxSize {
				err = p.errf(v.col, "size %s is not a byte count; allowed a whole number of bytes up to %d (0: an unbounded flow)", quote(v.s), int64(MaxSize))
			}
			c.Size, c.SizeCol, hasSize = int64(n), v.col, true
		case "id":
			if c.ID, err = p.id(v, "flow id"); err == nil {
				if l, dup := p.connLine[c.ID]; dup {
					err = p.errf(v.col, "connection id %d is given twice (lines %d and %d); each connection has its own id", c.ID, l, p.line)
				}
				p.connLine[c.ID] = p.line
			}
		case "trigger", "send_done_trigger", "recv_done_trigger":
			var id uint32
			if id, err = p.id(v, k.s); err == nil {
				if _, ok := p.trigRef[id]; !ok {
					p.trigRef[id], p.trigRefLine[id] = v, p.line
				}
			}
			switch k.s {
			case "trigger":
				c.Trigger = id
			case "send_done_trigger":
				c.SendDone = id
			default:
				c.RecvDone = id
			}
		case "prio":
			c.Prio, err = strconv.ParseInt(v.s, 10, 64)
			if err != nil {
				err = p.errf(v.col, "prio %s is not an integer", quote(v.s))
			}
			c.HasPrio = true
		}
		if err != nil {
			return err
		}
	}
	switch {
	case !hasStart && c.Trigger == 0:
		return p.errf(toks[0].col, "connection %s has neither start nor trigger; give one", cut(toks[0].s))
	case hasStart && c.Trigger != 0:
		return p.errf(toks[0].col, "connection %s has both start and trigger; give one", cut(toks[0].s))
	case !hasSize:
		return p.errf(toks[0].col, "connection %s has no size; give size B (bytes)", cut(toks[0].s))
	}
	p.m.Conns = append(p.m.Conns, c)
	return nil
}

func (p *parser) trigger(toks []token) error {
	t := Trigger{Line: p.line, Col: toks[0].col}
	hasCount, idCol := false, toks[0].col
	for i := 1; i < len(toks); i++ {
		k := toks[i]
		switch k.s {
		case "oneshot", "multishot", "barrier":
			if t.Kind != 0 {
				return p.errf(k.col, "trigger has two types (%s and %s); give one of oneshot, multishot, barrier", t.Kind, k.s)
			}
			t.Kind = map[string]TriggerKind{"oneshot": Oneshot, "multishot": Multishot, "barrier": Barrier}[k.s]
		case "id", "count":
			if i+1 >= len(toks) {
				return p.errf(k.col+len(k.s), "%s has no value", k.s)
			}
			i++
			var err error
			if k.s == "id" {
				if t.ID != 0 {
					return p.errf(k.col, "id given twice")
				}
				t.ID, err = p.id(toks[i], "trigger id")
				idCol = toks[i].col
			} else {
				t.Count, err = p.intIn(toks[i], "barrier count", 1, MaxConnections)
				hasCount = true
			}
			if err != nil {
				return err
			}
		default:
			return p.errf(k.col, "unknown trigger key %s; allowed id, oneshot, multishot, barrier, count", quote(k.s))
		}
	}
	switch {
	case t.ID == 0:
		return p.errf(toks[0].col, "trigger with no id; give id K")
	case t.Kind == 0:
		return p.errf(toks[0].col, "trigger %d has no type; give one of oneshot, multishot, barrier", t.ID)
	case t.Kind == Barrier && !hasCount:
		return p.errf(toks[0].col, "barrier trigger %d has no count; give count N (the activations it waits for)", t.ID)
	case t.Kind != Barrier && hasCount:
		return p.errf(toks[0].col, "count is given for %s trigger %d; only a barrier takes a count", t.Kind, t.ID)
	}
	if l, dup := p.trigLine[t.ID]; dup {
		return p.errf(idCol, "trigger id %d is defined twice (lines %d and %d)", t.ID, l, p.line)
	}
	if len(p.m.Triggers) >= MaxTriggers || (p.nTrig >= 0 && len(p.m.Triggers) >= p.nTrig) {
		return p.errf(toks[0].col, "trigger %d is beyond the Triggers header (%d) or the limit of %d", len(p.m.Triggers)+1, p.nTrig, MaxTriggers)
	}
	p.trigLine[t.ID] = p.line
	p.m.Triggers = append(p.m.Triggers, t)
	return nil
}

func (p *parser) failure(toks []token) error {
	if len(p.m.Failures) >= MaxFailures || (p.nFail >= 0 && len(p.m.Failures) >= p.nFail) {
		return p.errf(toks[0].col, "failure %d is beyond the Failures header (%d) or the limit of %d", len(p.m.Failures)+1, p.nFail, MaxFailures)
	}
	f := Failure{LinkID: -1, SwitchID: -1, Line: p.line, Col: toks[0].col}
	for i := 1; i < len(toks); i++ {
		k := toks[i]
		switch k.s {
		case "switch_type", "switch_id", "link_id":
		default:
			return p.errf(k.col, "unknown failure key %s; allowed switch_type, switch_id, link_id", quote(k.s))
		}
		if i+1 >= len(toks) {
			return p.errf(k.col+len(k.s), "%s has no value", k.s)
		}
		i++
		v := toks[i]
		var err error
		switch k.s {
		case "switch_type":
			st, ok := map[string]SwitchType{"TOR": TOR, "AGG": AGG, "CORE": CORE}[v.s]
			if !ok {
				return p.errf(v.col, "switch_type %s is not a switch tier; allowed TOR, AGG, CORE", quote(v.s))
			}
			f.SwitchType = st
		case "switch_id":
			f.SwitchID, err = p.intIn(v, "switch_id", 0, MaxNodes)
			f.SwitchIDCol = v.col
		case "link_id":
			f.LinkID, err = p.intIn(v, "link_id", 0, 1<<16)
			f.LinkIDCol = v.col
		}
		if err != nil {
			return err
		}
	}
	if f.SwitchType == 0 || f.SwitchID < 0 {
		return p.errf(toks[0].col, "failure needs switch_type (TOR, AGG or CORE) and switch_id")
	}
	p.m.Failures = append(p.m.Failures, f)
	return nil
}

// finish checks the header counts and the trigger references.
func (p *parser) finish() error {
	p.line++
	switch {
	case p.m.Nodes == 0:
		return p.errf(1, "no Nodes header; give Nodes N (the number of hosts)")
	case p.nConns < 0:
		return p.errf(1, "no Connections header; give Connections C")
	case len(p.m.Conns) != p.nConns:
		return p.errf(1, "Connections header says %d, the file has %d connection lines", p.nConns, len(p.m.Conns))
	case max(p.nTrig, 0) != len(p.m.Triggers):
		return p.errf(1, "Triggers header says %d, the file has %d trigger lines", max(p.nTrig, 0), len(p.m.Triggers))
	case max(p.nFail, 0) != len(p.m.Failures):
		return p.errf(1, "Failures header says %d, the file has %d failure lines", max(p.nFail, 0), len(p.m.Failures))
	}
	// references in file order, so the first undeclared one is reported
	for _, c := range p.m.Conns {
		for _, id := range []uint32{c.Trigger, c.SendDone, c.RecvDone} {
			if id == 0 {
				continue
			}
			if _, ok := p.trigLine[id]; !ok {
				p.line = p.trigRefLine[id]
				return p.errf(p.trigRef[id].col, "trigger %d is used but not declared; add a line trigger id %d oneshot|multishot|barrier", id, id)
			}
		}
	}
	return nil
}

// formatStart writes ps as microseconds with the fewest fractional digits that keep it exact.
func formatStart(t sim.Time) string {
	us, ps := int64(t/sim.Microsecond), int64(t%sim.Microsecond)
	if ps == 0 {
		return strconv.FormatInt(us, 10)
	}
	return strings.TrimRight(fmt.Sprintf("%d.%06d", us, ps), "0")
}

// Write writes m in the connection-matrix format Read reads: the headers (Triggers and
// Failures only when there are any), the connections, the triggers, the failures. Reading
// the output gives m back (line numbers aside).
func Write(w io.Writer, m *Matrix) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Nodes %d\nConnections %d\n", m.Nodes, len(m.Conns))
	if len(m.Triggers) > 0 {
		fmt.Fprintf(bw, "Triggers %d\n", len(m.Triggers))
	}
	if len(m.Failures) > 0 {
		fmt.Fprintf(bw, "Failures %d\n", len(m.Failures))
	}
	for _, c := range m.Conns {
		fmt.Fprintf(bw, "%d->%d", c.Src, c.Dst)
		if c.ID != 0 {
			fmt.Fprintf(bw, " id %d", c.ID)
		}
		if c.Trigger != 0 {
			fmt.Fprintf(bw, " trigger %d", c.Trigger)
		} else {
			fmt.Fprintf(bw, " start %s", formatStart(c.Start))
		}
		fmt.Fprintf(bw, " size %d", c.Size)
		if c.SendDone != 0 {
			fmt.Fprintf(bw, " send_done_trigger %d", c.SendDone)
		}
		if c.RecvDone != 0 {
			fmt.Fprintf(bw, " recv_done_trigger %d", c.RecvDone)
		}
		if c.HasPrio {
			fmt.Fprintf(bw, " prio %d", c.Prio)
		}
		if c.AddOn {
			bw.WriteString(" addon")
		}
		bw.WriteByte('\n')
	}
	for _, t := range m.Triggers {
		fmt.Fprintf(bw, "trigger id %d %s", t.ID, t.Kind)
		if t.Kind == Barrier {
			fmt.Fprintf(bw, " count %d", t.Count)
		}
		bw.WriteByte('\n')
	}
	for _, f := range m.Failures {
		fmt.Fprintf(bw, "failure switch_type %s switch_id %d", f.SwitchType, f.SwitchID)
		if f.LinkID >= 0 {
			fmt.Fprintf(bw, " link_id %d", f.LinkID)
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}
