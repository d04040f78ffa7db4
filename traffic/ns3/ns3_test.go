package ns3

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

func open(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestReadFlows reads the hand-made flow.txt and checks every field of two entries.
func TestReadFlows(t *testing.T) {
	flows, err := ReadFlows(open(t, "testdata/flow.txt"), "flow.txt", 16)
	if err != nil {
		t.Fatal(err)
	}
	if len(flows) != 8 {
		t.Fatalf("%d flows, want 8", len(flows))
	}
	want0 := Flow{Src: 0, Dst: 5, PG: 3, DPort: 100, Size: 200000, Start: 0, Line: 2, Col: 1}
	want6 := Flow{Src: 13, Dst: 2, PG: 3, DPort: 100, Size: 100000, Start: 3500 * sim.Nanosecond, Line: 8, Col: 1}
	if flows[0] != want0 || flows[6] != want6 {
		t.Fatalf("got %+v and %+v", flows[0], flows[6])
	}
	var b bytes.Buffer
	if err := WriteFlows(&b, flows); err != nil {
		t.Fatal(err)
	}
	again, err := ReadFlows(&b, "w.txt", 16)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, flows) {
		t.Fatalf("round trip differs:\n%+v\n%+v", again, flows)
	}
}

// TestReadTopology reads the k=4 fat-tree and the small file with every unit form.
func TestReadTopology(t *testing.T) {
	ft, err := ReadTopology(open(t, "testdata/fattree4.txt"), "fattree4.txt")
	if err != nil {
		t.Fatal(err)
	}
	if ft.Nodes != 36 || len(ft.Switches) != 20 || len(ft.Links) != 48 || len(ft.Hosts()) != 16 {
		t.Fatalf("%d nodes, %d switches, %d links, %d hosts", ft.Nodes, len(ft.Switches), len(ft.Links), len(ft.Hosts()))
	}
	if l := ft.Links[0]; l.A != 0 || l.B != 16 || l.Rate != 100*sim.Gbps || l.Delay != sim.Microsecond || l.Line != 3 {
		t.Fatalf("link 0 %+v", l)
	}
	sm, err := ReadTopology(open(t, "testdata/small.txt"), "small.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		rate  sim.Rate
		delay sim.Time
		loss  float64
	}{{100 * sim.Gbps, sim.Microsecond, 0}, {100 * sim.Gbps, 500 * sim.Nanosecond, 0.001}, {100 * sim.Gbps, sim.Microsecond, 0}}
	for i, w := range want {
		l := sm.Links[i]
		if l.Rate != w.rate || l.Delay != w.delay || l.ErrorRate != w.loss {
			t.Errorf("link %d: %v %v %v, want %v %v %v", i, l.Rate, l.Delay, l.ErrorRate, w.rate, w.delay, w.loss)
		}
	}
	for _, tp := range []*Topology{ft, sm} {
		var b bytes.Buffer
		if err := WriteTopology(&b, tp); err != nil {
			t.Fatal(err)
		}
		again, err := ReadTopology(&b, "w.txt")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(positionless(again), positionless(tp)) {
			t.Fatalf("round trip differs")
		}
	}
}

// TestUnits pins ns-3's DataRate and Time suffixes.
func TestUnits(t *testing.T) {
	for _, c := range []struct {
		in   string
		want sim.Rate
	}{{"100Gbps", 100 * sim.Gbps}, {"1Kibps", 1024}, {"1KiBps", 8192}, {"2.5Gb/s", 2500 * sim.Mbps}, {"8bps", 8}, {"1Tbps", 1000 * sim.Gbps}} {
		if got, err := ParseDataRate(c.in); err != nil || got != c.want {
			t.Errorf("ParseDataRate(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct {
		in   string
		want sim.Time
	}{{"1us", sim.Microsecond}, {"0.001ms", sim.Microsecond}, {"2e-6", 2 * sim.Microsecond}, {"0", 0}, {"7ps", 7}, {"1s", sim.Second}} {
		if got, err := ParseTime(c.in); err != nil || got != c.want {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "Gbps", "100", "100Gbit", "-1Gbps", "0Gbps", "1e3Gbps", "1000Tbps"} {
		if _, err := ParseDataRate(bad); err == nil {
			t.Errorf("ParseDataRate(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"", "us", "1fortnight", "-1us", "2s", "NaN", "Inf"} {
		if _, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
}

// TestErrors checks that each bad value fails at its file, line and column.
func TestErrors(t *testing.T) {
	for _, c := range []struct {
		in, want string
		topo     bool
	}{
		{"x\n", "f.txt:1:1: the flow count \"x\" is not an integer in [0, 1048576]", false},
		{"2000000\n", "f.txt:1:1: the flow count", false},
		{"1\n0 1 3 100 10\n", "f.txt:3:1: the file ends where flow 0's start (seconds) is expected", false},
		{"1\n0 16 3 100 10 0\n", "f.txt:2:3: flow 0's dst \"16\" is not an integer in [0, 15]", false},
		{"1\n4 4 3 100 10 0\n", "f.txt:2:3: flow 0 sends from node 4 to itself", false},
		{"1\n0 1 3 70000 10 0\n", "f.txt:2:7: flow 0's dport \"70000\"", false},
		{"1\n0 1 3 100 0 0\n", "f.txt:2:11: flow 0's size (bytes) \"0\" is not an integer in [1, 1125899906842624]", false},
		{"1\n0 1 3 100 10 -2\n", "f.txt:2:14: flow 0's start \"-2\" is not a time", false},
		{"1\n0 1 3 100 10 soon\n", "f.txt:2:14: flow 0's start \"soon\"", false},
		{"1\n0 1 3 100 10 0\n1 2\n", "f.txt:3:1: \"1\" after the last flow", false},
		{"1\n0 1 3 100 10 " + strings.Repeat("9", 300) + "\n", "f.txt:2:14: flow 0's start (seconds) is longer than 256 bytes", false},
		{"1 0 1\n", "f.txt:1:1: node_num \"1\" is not an integer in [2, 1048576]", true},
		{"4 4 1\n", "f.txt:1:3: switch_num \"4\" is not an integer in [0, 3]", true},
		{"4 1 0\n", "f.txt:1:5: link_num \"0\"", true},
		{"4 2 1\n3 3\n", "f.txt:2:3: switch id 3 is given twice", true},
		{"4 1 1\n9\n", "f.txt:2:1: switch id 0 \"9\" is not an integer in [0, 3]", true},
		{"4 1 1\n3\n0 0 1Gbps 1us 0\n", "f.txt:3:3: link 0 joins node 0 to itself", true},
		{"4 1 1\n3\n0 3 fast 1us 0\n", "f.txt:3:5: link 0's rate \"fast\" is not a data rate", true},
		{"4 1 1\n3\n0 3 1Gbps 1year 0\n", "f.txt:3:11: link 0's delay \"1year\" is not a delay", true},
		{"4 1 1\n3\n0 3 1Gbps 1us 2\n", "f.txt:3:15: link 0's error_rate \"2\" is not a probability", true},
		{"4 1 1\n3\n0 3 1Gbps 1us\n", "f.txt:4:1: the file ends where link 0's error_rate is expected", true},
		{"4 1 1\n3\n0 3 1Gbps 1us 0 extra\n", "f.txt:3:17: \"extra\" after the last link", true},
		// a trailing value too long to quote is still refused, at its position
		{"1\n0 1 3 100 10 0\n  " + strings.Repeat("x", 300) + "\n", "f.txt:3:3: a value longer than 256 bytes after the last flow", false},
		{"4 1 1\n3\n0 3 1Gbps 1us 0\n" + strings.Repeat("y", 257), "f.txt:4:1: a value longer than 256 bytes after the last link", true},
		// a node past MaxPorts links fails at the link that goes past it, before the rest is read
		{"3 2 70000\n1 2\n" + strings.Repeat("1 2 1Gbps 1us 0\n", 70000), "f.txt:65539:1: link 65536 gives node 1 its link 65537; a node has at most 65536 ports", true},
	} {
		var err error
		if c.topo {
			_, err = ReadTopology(strings.NewReader(c.in), "f.txt")
		} else {
			_, err = ReadFlows(strings.NewReader(c.in), "f.txt", 16)
		}
		var pe *Error
		if err == nil || !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s...", c.in, err, c.want)
		}
	}
}

// positionless returns a copy of t without the positions and file name ReadTopology records,
// for round-trip comparisons.
func positionless(t *Topology) *Topology {
	c := *t
	c.File, c.SwitchLine, c.SwitchCol = "", nil, nil
	c.Links = append([]Link(nil), t.Links...)
	for i := range c.Links {
		c.Links[i].Line, c.Links[i].Col = 0, 0
	}
	return &c
}
