// Package ns3 reads and writes the inputs of the ns-3 HPCC simulation (the "mix" folder of
// alibaba-edu/High-Precision-Congestion-Control, read by simulation/scratch/third.cc, which
// later ns-3 RDMA simulators such as ConWeave and ns-3-datacenter share): flow.txt and
// topology.txt.
//
// Both files are read as third.cc reads them, with C++ stream extraction (`>>`): a sequence
// of whitespace-separated values, line breaks carrying no meaning.
//
// flow.txt is the flow count, then per flow "src dst pg dport size start": the source and
// destination node ids, the priority group and destination port (integers, kept but not
// used by lockstep), the flow's bytes (HPCC's maxPacketCount is read as bytes) and its start
// in seconds (a decimal).
//
// topology.txt is "node_num switch_num link_num", then the switch_num node ids that are
// switches (every other id below node_num is a host), then per link "src dst rate delay
// error_rate": node ids, an ns-3 DataRate string ("100Gbps", "400Gb/s"), an ns-3 Time string
// ("0.001ms", "1us"; a bare number is seconds) and the per-packet error rate in [0, 1].
//
// Errors are *Error naming the file, line and column of the bad value, the value and what
// is allowed.
package ns3

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
)

// Bounds checked while reading, so no input allocates without limit.
const (
	// MaxFlows bounds flow.txt's count; it equals scenario.MaxGeneratedFlows.
	MaxFlows = 1 << 20
	// MaxNodes bounds topology.txt's node_num.
	MaxNodes = 1 << 20
	// MaxLinks bounds topology.txt's link_num.
	MaxLinks = 1 << 22
	// MaxSize bounds a flow's bytes: 1 PiB, scenario.MaxTransferBytes.
	MaxSize = 1 << 50
	// MaxToken bounds one value's length in bytes.
	MaxToken = 256
	// MaxPorts bounds the links of one node: topo.NewGraph's 65,536 ports per node.
	MaxPorts = 1 << 16
)

// Error is a parse error at a position of a file.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

// Error returns "file:line:col: msg".
func (e *Error) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

// scanner yields whitespace-separated values with their positions.
type scanner struct {
	file      string
	r         *bufio.Reader
	line, col int // position of the next byte
	tl, tc    int // position of the last value (or of the end)
}

func newScanner(r io.Reader, file string) *scanner {
	return &scanner{file: file, r: bufio.NewReader(r), line: 1, col: 1}
}

func (s *scanner) errf(format string, a ...any) error {
	return &Error{File: s.file, Line: s.tl, Col: s.tc, Msg: fmt.Sprintf(format, a...)}
}

// errEOF marks the end of input in next; the error returned wraps it.
var errEOF = errors.New("end of input")

// next returns the next value; what names it in the error at the end of input.
func (s *scanner) next(what string) (string, error) {
	var b strings.Builder
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			if b.Len() > 0 {
				return b.String(), nil
			}
			s.tl, s.tc = s.line, s.col
			if errors.Is(err, io.EOF) {
				return "", &eofError{s.errf("the file ends where %s is expected", what)}
			}
			return "", fmt.Errorf("%s: %w", s.file, err)
		}
		space := c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
		if space && b.Len() > 0 {
			s.advance(c)
			return b.String(), nil
		}
		if !space {
			if b.Len() == 0 {
				s.tl, s.tc = s.line, s.col
			}
			if b.Len() >= MaxToken {
				return "", s.errf("%s is longer than %d bytes", what, MaxToken)
			}
			b.WriteByte(c)
		}
		s.advance(c)
	}
}

func (s *scanner) advance(c byte) {
	if c == '\n' {
		s.line, s.col = s.line+1, 1
	} else {
		s.col++
	}
}

// eofError is the error of next at the end of input: an *Error (errors.As finds it).
type eofError struct{ err error }

func (e *eofError) Error() string { return e.err.Error() }
func (e *eofError) Unwrap() error { return e.err }

// end reports an error if anything but whitespace follows, a value too long to quote
// included.
func (s *scanner) end(what string) error {
	v, err := s.next("a value")
	if err != nil {
		var eof *eofError
		if errors.As(err, &eof) {
			return nil
		}
		var pe *Error
		if errors.As(err, &pe) {
			return s.errf("a value longer than %d bytes after the last %s; the file's count says there are no more", MaxToken, what)
		}
		return err
	}
	return s.errf("%q after the last %s; the file's count says there are no more", v, what)
}

// intIn reads an integer in [min, max].
func (s *scanner) intIn(what string, min, max int64) (int64, error) {
	v, err := s.next(what)
	if err != nil {
		return 0, err
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil || n < min || n > max {
		return 0, s.errf("%s %q is not an integer in [%d, %d]", what, v, min, max)
	}
	return n, nil
}

// Flow is one flow.txt entry.
type Flow struct {
	Src, Dst int
	// PG is the priority group and DPort the destination port, as given.
	PG, DPort int64
	// Size is the flow's bytes (> 0).
	Size int64
	// Start is when the flow starts (ps).
	Start sim.Time
	// Line and Col are the position of the flow's first value.
	Line, Col int
}

// ReadFlows parses flow.txt from r; file names it in errors. Node ids must be below nodes
// (MaxNodes when 0: not yet known).
func ReadFlows(r io.Reader, file string, nodes int) ([]Flow, error) {
	if nodes <= 0 {
		nodes = MaxNodes
	}
	s := newScanner(r, file)
	n, err := s.intIn("the flow count", 0, MaxFlows)
	if err != nil {
		return nil, err
	}
	flows := make([]Flow, 0, min(n, 4096))
	for i := int64(0); i < n; i++ {
		var f Flow
		src, err := s.intIn(fmt.Sprintf("flow %d's src", i), 0, int64(nodes-1))
		if err != nil {
			return nil, err
		}
		f.Line, f.Col = s.tl, s.tc
		dst, err := s.intIn(fmt.Sprintf("flow %d's dst", i), 0, int64(nodes-1))
		if err != nil {
			return nil, err
		}
		if src == dst {
			return nil, s.errf("flow %d sends from node %d to itself; src and dst must differ", i, src)
		}
		f.Src, f.Dst = int(src), int(dst)
		if f.PG, err = s.intIn(fmt.Sprintf("flow %d's pg", i), 0, math.MaxInt32); err != nil {
			return nil, err
		}
		if f.DPort, err = s.intIn(fmt.Sprintf("flow %d's dport", i), 0, 65535); err != nil {
			return nil, err
		}
		if f.Size, err = s.intIn(fmt.Sprintf("flow %d's size (bytes)", i), 1, MaxSize); err != nil {
			return nil, err
		}
		v, err := s.next(fmt.Sprintf("flow %d's start (seconds)", i))
		if err != nil {
			return nil, err
		}
		if f.Start, err = parseSeconds(v); err != nil {
			return nil, s.errf("flow %d's start %q %v", i, v, err)
		}
		flows = append(flows, f)
	}
	return flows, s.end("flow")
}

// parseSeconds parses a non-negative decimal number of seconds (as a C++ double) into ps.
func parseSeconds(v string) (sim.Time, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > sim.MaxTime.Seconds() || strings.ContainsAny(v, "xXpPinIN_") {
		return 0, fmt.Errorf("is not a time; allowed a decimal number of seconds from 0 to %g", sim.MaxTime.Seconds())
	}
	return sim.Time(math.Round(f * float64(sim.Second))), nil
}

// WriteFlows writes flows in flow.txt's format; ReadFlows reads them back (Line and Col aside;
// starts exact to the picosecond).
func WriteFlows(w io.Writer, flows []Flow) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%d\n", len(flows))
	for _, f := range flows {
		fmt.Fprintf(bw, "%d %d %d %d %d %s\n", f.Src, f.Dst, f.PG, f.DPort, f.Size, formatSeconds(f.Start))
	}
	return bw.Flush()
}

// formatSeconds writes t as decimal seconds, exact to the picosecond.
func formatSeconds(t sim.Time) string {
	s, ps := int64(t/sim.Second), int64(t%sim.Second)
	if ps == 0 {
		return strconv.FormatInt(s, 10)
	}
	return strings.TrimRight(fmt.Sprintf("%d.%012d", s, ps), "0")
}

// Link is one topology.txt link.
type Link struct {
	// A and B are the node ids of its ends, as given.
	A, B int
	// Rate is the link's rate (bits/s, > 0) and Delay its propagation delay (ps, >= 0).
	Rate  sim.Rate
	Delay sim.Time
	// ErrorRate is the per-packet loss probability, in [0, 1].
	ErrorRate float64
	// Line and Col are the position of the link's first value.
	Line, Col int
	// RateText, DelayText and ErrorText are the values as written, for the writer.
	RateText, DelayText, ErrorText string
}

// Topology is a parsed topology.txt.
type Topology struct {
	// Nodes is node_num: node ids 0..Nodes-1.
	Nodes int
	// Switches lists the switch ids in file order; IsSwitch[id] marks them.
	Switches []int
	IsSwitch []bool
	Links    []Link
	// File is the name ReadTopology was given, for GraphSpec's errors.
	File string
	// SwitchLine and SwitchCol are the positions of the switch ids, in file order.
	SwitchLine, SwitchCol []int
}

// Hosts returns the host node ids in ascending order.
func (t *Topology) Hosts() []int {
	var h []int
	for id, sw := range t.IsSwitch {
		if !sw {
			h = append(h, id)
		}
	}
	return h
}

// ReadTopology parses topology.txt from r; file names it in errors. Errors: counts out of
// range, a switch id out of range or given twice, a link naming a node out of range or
// itself, a node with more than MaxPorts links (at the link that goes past it), a bad rate,
// delay or error rate, no host.
func ReadTopology(r io.Reader, file string) (*Topology, error) {
	s := newScanner(r, file)
	nodes, err := s.intIn("node_num", 2, MaxNodes)
	if err != nil {
		return nil, err
	}
	nsw, err := s.intIn("switch_num", 0, nodes-1)
	if err != nil {
		return nil, err
	}
	nl, err := s.intIn("link_num", 1, MaxLinks)
	if err != nil {
		return nil, err
	}
	t := &Topology{Nodes: int(nodes), IsSwitch: make([]bool, nodes), Switches: make([]int, 0, nsw), File: file}
	for i := int64(0); i < nsw; i++ {
		id, err := s.intIn(fmt.Sprintf("switch id %d", i), 0, nodes-1)
		if err != nil {
			return nil, err
		}
		if t.IsSwitch[id] {
			return nil, s.errf("switch id %d is given twice", id)
		}
		t.IsSwitch[id] = true
		t.Switches = append(t.Switches, int(id))
		t.SwitchLine, t.SwitchCol = append(t.SwitchLine, s.tl), append(t.SwitchCol, s.tc)
	}
	t.Links = make([]Link, 0, min(nl, 1<<16))
	deg := make([]int32, nodes)
	for i := int64(0); i < nl; i++ {
		l, err := readLink(s, i, nodes)
		if err != nil {
			return nil, err
		}
		for _, n := range []int{l.A, l.B} {
			if deg[n]++; deg[n] > MaxPorts {
				return nil, &Error{File: file, Line: l.Line, Col: l.Col, Msg: fmt.Sprintf("link %d gives node %d its link %d; a node has at most %d ports (links)", i, n, deg[n], MaxPorts)}
			}
		}
		t.Links = append(t.Links, l)
	}
	return t, s.end("link")
}

func readLink(s *scanner, i, nodes int64) (Link, error) {
	var l Link
	a, err := s.intIn(fmt.Sprintf("link %d's src", i), 0, nodes-1)
	if err != nil {
		return l, err
	}
	l.Line, l.Col = s.tl, s.tc
	b, err := s.intIn(fmt.Sprintf("link %d's dst", i), 0, nodes-1)
	if err != nil {
		return l, err
	}
	if a == b {
		return l, s.errf("link %d joins node %d to itself", i, a)
	}
	l.A, l.B = int(a), int(b)
	if l.RateText, err = s.next(fmt.Sprintf("link %d's rate", i)); err != nil {
		return l, err
	}
	if l.Rate, err = ParseDataRate(l.RateText); err != nil {
		return l, s.errf("link %d's rate %q %v", i, l.RateText, err)
	}
	if l.DelayText, err = s.next(fmt.Sprintf("link %d's delay", i)); err != nil {
		return l, err
	}
	if l.Delay, err = ParseTime(l.DelayText); err != nil {
		return l, s.errf("link %d's delay %q %v", i, l.DelayText, err)
	}
	if l.ErrorText, err = s.next(fmt.Sprintf("link %d's error_rate", i)); err != nil {
		return l, err
	}
	e, perr := strconv.ParseFloat(l.ErrorText, 64)
	if perr != nil || !(e >= 0 && e <= 1) {
		return l, s.errf("link %d's error_rate %q is not a probability; allowed a number in [0, 1]", i, l.ErrorText)
	}
	l.ErrorRate = e
	return l, nil
}

// WriteTopology writes t in topology.txt's format; ReadTopology reads it back (Line aside).
func WriteTopology(w io.Writer, t *Topology) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%d %d %d\n", t.Nodes, len(t.Switches), len(t.Links))
	for i, id := range t.Switches {
		if i > 0 {
			bw.WriteByte(' ')
		}
		fmt.Fprintf(bw, "%d", id)
	}
	bw.WriteByte('\n')
	for _, l := range t.Links {
		rt, dt, et := l.RateText, l.DelayText, l.ErrorText
		if rt == "" {
			rt = fmt.Sprintf("%dbps", int64(l.Rate))
		}
		if dt == "" {
			dt = fmt.Sprintf("%dps", int64(l.Delay))
		}
		if et == "" {
			et = strconv.FormatFloat(l.ErrorRate, 'g', -1, 64)
		}
		fmt.Fprintf(bw, "%d %d %s %s %s\n", l.A, l.B, rt, dt, et)
	}
	return bw.Flush()
}

// rateUnits are ns-3 DataRate's suffixes (src/network/utils/data-rate.cc): bits per second
// with SI (k, K, M, G) or binary (Ki, Mi, Gi) prefixes, written "bps" or "b/s"; "Bps" and
// "B/s" are bytes per second. T is added for the links of today's fabrics.
var rateUnits = func() map[string]float64 {
	m := map[string]float64{}
	prefix := map[string]float64{"": 1, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
		"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}
	for p, f := range prefix {
		m[p+"bps"], m[p+"b/s"] = f, f
		m[p+"Bps"], m[p+"B/s"] = 8*f, 8*f
	}
	return m
}()

// ParseDataRate parses an ns-3 DataRate string ("100Gbps", "25Gb/s", "1.5Mbps") into bits/s.
// Errors: no known unit, a bad or non-positive number, beyond 100 Tb/s.
func ParseDataRate(v string) (sim.Rate, error) {
	i := strings.IndexFunc(v, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
	if i <= 0 {
		return 0, errors.New("is not a data rate; allowed a number and a unit such as 100Gbps, 400Gb/s, 12.5GBps")
	}
	unit, ok := rateUnits[v[i:]]
	f, err := strconv.ParseFloat(v[:i], 64)
	if !ok || err != nil || !(f > 0) || f*unit > 1e14 {
		return 0, errors.New("is not a data rate; allowed a number and a unit such as 100Gbps, 400Gb/s, 12.5GBps, above 0 and up to 100Tbps")
	}
	r := sim.Rate(math.Round(f * unit))
	if r < 1 {
		return 0, errors.New("is below 1 bit/s")
	}
	return r, nil
}

// timeUnits are ns-3 Time's suffixes (src/core/model/time.cc): a bare number is seconds.
var timeUnits = map[string]float64{"": 1e12, "s": 1e12, "ms": 1e9, "us": 1e6, "ns": 1e3, "ps": 1,
	"min": 60e12, "h": 3600e12}

// ParseTime parses an ns-3 Time string ("0.001ms", "1us", "2e-6") into ps. Errors: an unknown
// unit, a negative or non-finite number, beyond 1 s (a link delay).
func ParseTime(v string) (sim.Time, error) {
	i := strings.LastIndexFunc(v, func(r rune) bool { return r >= '0' && r <= '9' || r == '.' }) + 1
	unit, ok := timeUnits[v[i:]]
	f, err := strconv.ParseFloat(v[:i], 64)
	if i == 0 || !ok || err != nil || !(f >= 0) || f*unit > 1e12 {
		return 0, errors.New("is not a delay; allowed a number and a unit such as 1us, 0.001ms, 500ns (a bare number is seconds), from 0 to 1s")
	}
	return sim.Time(math.Round(f * unit)), nil
}
