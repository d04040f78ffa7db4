package htsim

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

func readFile(t *testing.T, name string) *Matrix {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := Read(f, name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestReadDAG reads the hand-made file covering every line type and checks each field.
func TestReadDAG(t *testing.T) {
	m := readFile(t, "testdata/dag.cm")
	want := &Matrix{
		Nodes: 8,
		Conns: []Conn{
			{Src: 0, Dst: 1, ID: 1, Start: 0, Size: 100000, SendDone: 1, RecvDone: 3, Line: 7, Col: 1, SizeCol: 24},
			{Src: 2, Dst: 3, ID: 2, Start: 1500 * sim.Nanosecond, Size: 100000, RecvDone: 2, Line: 8, Col: 1, SizeCol: 26},
			{Src: 4, Dst: 5, ID: 3, Trigger: 1, Size: 50000, RecvDone: 2, Line: 9, Col: 1, SizeCol: 26},
			{Src: 6, Dst: 7, ID: 4, Trigger: 2, Size: 50000, SendDone: 3, Prio: 2, HasPrio: true, Line: 10, Col: 1, SizeCol: 26},
			{Src: 1, Dst: 0, ID: 5, Trigger: 3, Size: 20000, Line: 11, Col: 1, SizeCol: 26},
			{Src: 3, Dst: 2, ID: 6, Trigger: 3, Size: 20000, AddOn: true, Line: 12, Col: 1, SizeCol: 26},
		},
		Triggers: []Trigger{
			{ID: 1, Kind: Oneshot, Line: 13, Col: 1},
			{ID: 2, Kind: Barrier, Count: 2, Line: 14, Col: 1},
			{ID: 3, Kind: Multishot, Line: 15, Col: 1},
		},
		Failures: []Failure{
			{SwitchType: AGG, SwitchID: 0, LinkID: 1, Line: 16, Col: 1, SwitchIDCol: 35, LinkIDCol: 45},
			{SwitchType: CORE, SwitchID: 3, LinkID: -1, Line: 17, Col: 1, SwitchIDCol: 36},
		},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", m, want)
	}
}

// TestRoundTrip writes each test file and reads it back: the same matrix.
func TestRoundTrip(t *testing.T) {
	for _, name := range []string{"testdata/dag.cm", "testdata/perm16.cm"} {
		m := readFile(t, name)
		var b bytes.Buffer
		if err := Write(&b, m); err != nil {
			t.Fatal(err)
		}
		m2, err := Read(&b, "out.cm")
		if err != nil {
			t.Fatalf("%s: rereading: %v\n%s", name, err, b.String())
		}
		clearLines(m)
		clearLines(m2)
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("%s: round trip differs:\n%+v\n%+v", name, m, m2)
		}
	}
}

// clearLines zeroes the positions Read records, which Write does not keep.
func clearLines(m *Matrix) {
	for i := range m.Conns {
		m.Conns[i].Line, m.Conns[i].Col, m.Conns[i].SizeCol = 0, 0, 0
	}
	for i := range m.Triggers {
		m.Triggers[i].Line, m.Triggers[i].Col = 0, 0
	}
	for i := range m.Failures {
		f := &m.Failures[i]
		f.Line, f.Col, f.SwitchIDCol, f.LinkIDCol = 0, 0, 0, 0
	}
}

// TestStartUnits pins start as microseconds, exact to the picosecond.
func TestStartUnits(t *testing.T) {
	for _, c := range []struct {
		in   string
		want sim.Time
	}{
		{"0", 0}, {"1", sim.Microsecond}, {"2.5", 2500 * sim.Nanosecond}, {".000001", 1},
		{"1000000", sim.Second}, {"3.141592", 3141592},
	} {
		m, err := Read(strings.NewReader("Nodes 2\nConnections 1\n0->1 start "+c.in+" size 1\n"), "s.cm")
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := m.Conns[0].Start; got != c.want {
			t.Errorf("start %s = %d ps, want %d", c.in, got, c.want)
		}
		if f := formatStart(c.want); f != strings.TrimPrefix(c.in, "") && c.in != ".000001" {
			t.Errorf("formatStart(%d) = %s, want %s", c.want, f, c.in)
		}
	}
}

// TestErrors checks that each bad line fails at its file, line and column.
func TestErrors(t *testing.T) {
	const hdr = "Nodes 4\nConnections 1\n"
	for _, c := range []struct {
		in, want string
	}{
		{"Nodes x\n", "b.cm:1:7: Nodes \"x\" is not an integer in [1, 16777216]"},
		{"Nodes 0\n", "b.cm:1:7: Nodes \"0\""},
		{"Nodes 99999999999\n", "b.cm:1:7:"},
		{"Nodes 4 5\n", "b.cm:1:1: Nodes takes one number"},
		{"Nodes 4\nNodes 4\n", "b.cm:2:1: Nodes given twice"},
		{"Bogus 4\n", "b.cm:1:1: unknown line \"Bogus\""},
		{"Connections 1\n0->1 start 0 size 1\n", "b.cm:2:1: connection before the Nodes header"},
		{hdr + "0->9 start 0 size 1\n", "b.cm:3:4: destination host \"9\" is not an integer in [0, 3]"},
		{hdr + "x->1 start 0 size 1\n", "b.cm:3:1: source host \"x\""},
		{hdr + "1->1 start 0 size 1\n", "b.cm:3:1: connection 1->1 sends to itself"},
		{hdr + "0->1 start 0 size -1\n", "b.cm:3:19: size \"-1\" is not a byte count; allowed a whole number of bytes up to 1125899906842624 (0: an unbounded flow)"},
		{hdr + "0->1 start 0 size 1125899906842625\n", "b.cm:3:19:"},
		{hdr + "0->1 start 1e3 size 1\n", "b.cm:3:12: start \"1e3\" is not a time in microseconds"},
		{hdr + "0->1 start 0.0000001 size 1\n", "b.cm:3:12:"},
		{hdr + "0->1 start -1 size 1\n", "b.cm:3:12:"},
		{hdr + "0->1 start 99999999999999 size 1\n", "b.cm:3:12:"},
		{hdr + "0->1 start 0 size 1 colour red\n", "b.cm:3:21: unknown connection key \"colour\""},
		{hdr + "0->1 start 0 size\n", "b.cm:3:18: size has no value"},
		{hdr + "0->1 start 0 start 1 size 1\n", "b.cm:3:14: start given twice"},
		{hdr + "0->1 id 0 start 0 size 1\n", "b.cm:3:9: flow id \"0\" is not an id"},
		{hdr + "0->1 size 1\n", "b.cm:3:1: connection 0->1 has neither start nor trigger"},
		{hdr + "0->1 size 1 start 0 trigger 1\n", "b.cm:3:1: connection 0->1 has both start and trigger"},
		{hdr + "0->1 start 0\n", "b.cm:3:1: connection 0->1 has no size"},
		{hdr + "0->1 start 0 size 1 prio x\n", "b.cm:3:26: prio \"x\" is not an integer"},
		{hdr + "0->1 start 0 size 1\n0->2 start 0 size 1\n", "b.cm:4:1: connection 2 is beyond the Connections header (1)"},
		{hdr + "0->1 trigger 5 size 1\n", "b.cm:3:14: trigger 5 is used but not declared"},
		{hdr + "0->1 start 0 size 1 send_done_trigger 6\n", "b.cm:3:39: trigger 6 is used but not declared"},
		{hdr + "0->1 start 0 size 1\nNodes 4\n", "b.cm:4:1: header Nodes after the first connection"},
		{"Nodes 4\nConnections 2\n0->1 start 0 size 1\n", "b.cm:4:1: Connections header says 2, the file has 1 connection lines"},
		{"Nodes 4\n", "b.cm:2:1: no Connections header"},
		{"Connections 0\n", "b.cm:2:1: no Nodes header"},
		{"Nodes 4\nConnections 0\nTriggers 1\n", "b.cm:4:1: Triggers header says 1, the file has 0"},
		{"Nodes 4\nConnections 0\nFailures 1\n", "b.cm:4:1: Failures header says 1, the file has 0"},
		{"Nodes 4\nConnections 0\nTriggers 1\ntrigger id 1\n", "b.cm:4:1: trigger 1 has no type"},
		{"Nodes 4\nConnections 0\nTriggers 1\ntrigger oneshot\n", "b.cm:4:1: trigger with no id"},
		{"Nodes 4\nConnections 0\nTriggers 1\ntrigger id 1 oneshot barrier\n", "b.cm:4:22: trigger has two types (oneshot and barrier)"},
		{"Nodes 4\nConnections 0\nTriggers 1\ntrigger id 1 barrier\n", "b.cm:4:1: barrier trigger 1 has no count"},
		{"Nodes 4\nConnections 0\nTriggers 1\ntrigger id 1 oneshot count 2\n", "b.cm:4:1: count is given for oneshot trigger 1"},
		{"Nodes 4\nConnections 0\nTriggers 1\ntrigger id 1 barrier count 0\n", "b.cm:4:28: barrier count \"0\""},
		{"Nodes 4\nConnections 0\nTriggers 1\ntrigger id 1 sometimes\n", "b.cm:4:14: unknown trigger key \"sometimes\""},
		{"Nodes 4\nConnections 0\nTriggers 2\ntrigger id 1 oneshot\ntrigger id 1 oneshot\n", "b.cm:5:12: trigger id 1 is defined twice (lines 4 and 5)"},
		// the header count is checked after the duplicate, which is the real mistake
		{"Nodes 4\nConnections 0\nTriggers 1\ntrigger id 1 oneshot\ntrigger id 1 oneshot\n", "b.cm:5:12: trigger id 1 is defined twice (lines 4 and 5)"},
		{hdr[:len(hdr)-2] + "2\n0->1 id 7 start 0 size 1\n1->2 start 0 id 7 size 1\n", "b.cm:4:17: connection id 7 is given twice (lines 3 and 4)"},
		// a junk line is quoted up to 80 bytes
		{strings.Repeat("j", 60000) + "\n", "b.cm:1:1: unknown line \"" + strings.Repeat("j", 80) + "...\"; allowed"},
		{hdr + "0->1 start 0 size 1 " + strings.Repeat("k", 1000) + " 1\n", "b.cm:3:21: unknown connection key \"" + strings.Repeat("k", 80) + "...\"; allowed"},
		{"Nodes 4\nConnections 0\nFailures 1\nfailure switch_type SPINE switch_id 1\n", "b.cm:4:21: switch_type \"SPINE\" is not a switch tier; allowed TOR, AGG, CORE"},
		{"Nodes 4\nConnections 0\nFailures 1\nfailure switch_type TOR\n", "b.cm:4:1: failure needs switch_type"},
		{"Nodes 4\nConnections 0\nFailures 1\nfailure switch_type TOR switch_id 1 port 2\n", "b.cm:4:37: unknown failure key \"port\""},
		{"Nodes 4\nConnections 0\nFailures 1\nfailure switch_type TOR switch_id -1\n", "b.cm:4:35: switch_id \"-1\""},
		{"Nodes 4\n" + strings.Repeat("x", MaxLine+1) + "\n", "b.cm:2:1: line longer than 65536 bytes"},
	} {
		_, err := Read(strings.NewReader(c.in), "b.cm")
		var pe *Error
		if err == nil || !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s...", c.in, err, c.want)
		}
	}
}

// TestComments ignores comment and blank lines and accepts tabs and CRLF.
func TestComments(t *testing.T) {
	m, err := Read(strings.NewReader("# hi\r\n\r\nNodes\t4\r\nConnections 1\r\n  # indented\r\n0->1 start 0 size 7\r\n"), "c.cm")
	if err != nil {
		t.Fatal(err)
	}
	if m.Nodes != 4 || len(m.Conns) != 1 || m.Conns[0].Size != 7 || m.Conns[0].Line != 6 {
		t.Fatalf("%+v", m)
	}
}

// TestHeaderOrder: htsim's ConnectionMatrix::load reads the header lines in any order before
// the first body line, so Connections before Nodes is accepted.
func TestHeaderOrder(t *testing.T) {
	m, err := Read(strings.NewReader("Connections 1\nTriggers 0\nNodes 4\n0->1 start 0 size 7\n"), "o.cm")
	if err != nil {
		t.Fatal(err)
	}
	if m.Nodes != 4 || len(m.Conns) != 1 || m.Conns[0].Col != 1 || m.Conns[0].SizeCol != 19 {
		t.Fatalf("%+v", m)
	}
}
