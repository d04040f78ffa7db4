package ns3

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/topo"
)

func seed(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzReadFlows checks that no flow.txt panics, that parsed flows are in range, and that
// writing them reads back the same (docs/style.md §11). Inputs are capped at 4 KiB, so each
// execution takes well under a millisecond.
func FuzzReadFlows(f *testing.F) {
	seed(f, "testdata/flow.txt")
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 4096 {
			return
		}
		flows, err := ReadFlows(bytes.NewReader(in), "f.txt", 64)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.txt:") {
				t.Fatalf("error without position: %v", err)
			}
			return
		}
		for _, fl := range flows {
			if fl.Src < 0 || fl.Src >= 64 || fl.Dst < 0 || fl.Dst >= 64 || fl.Src == fl.Dst || fl.Size < 1 || fl.Size > MaxSize || fl.Start < 0 {
				t.Fatalf("bad flow %+v", fl)
			}
		}
		var b bytes.Buffer
		if err := WriteFlows(&b, flows); err != nil {
			t.Fatal(err)
		}
		again, err := ReadFlows(&b, "w.txt", 64)
		if err != nil {
			t.Fatalf("rereading: %v", err)
		}
		for i := range flows {
			flows[i].Line, again[i].Line = 0, 0
		}
		if !reflect.DeepEqual(again, flows) {
			t.Fatalf("round trip differs:\n%+v\n%+v", again, flows)
		}
	})
}

// FuzzReadTopology checks that no topology.txt panics, that a parsed one is in range, and
// that writing it reads back the same.
func FuzzReadTopology(f *testing.F) {
	seed(f, "testdata/small.txt", "testdata/fattree4.txt")
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 4096 {
			return
		}
		tp, err := ReadTopology(bytes.NewReader(in), "t.txt")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "t.txt:") {
				t.Fatalf("error without position: %v", err)
			}
			return
		}
		for _, l := range tp.Links {
			if l.A < 0 || l.A >= tp.Nodes || l.B < 0 || l.B >= tp.Nodes || l.A == l.B || l.Rate <= 0 || l.Delay < 0 || !(l.ErrorRate >= 0 && l.ErrorRate <= 1) {
				t.Fatalf("bad link %+v", l)
			}
		}
		if spec, err := tp.GraphSpec(); err == nil {
			if _, err := topo.NewGraph(spec); err != nil {
				t.Fatalf("GraphSpec made a spec NewGraph rejects: %v", err)
			}
		}
		var b bytes.Buffer
		if err := WriteTopology(&b, tp); err != nil {
			t.Fatal(err)
		}
		again, err := ReadTopology(&b, "w.txt")
		if err != nil {
			t.Fatalf("rereading: %v", err)
		}
		if !reflect.DeepEqual(positionless(again), positionless(tp)) {
			t.Fatalf("round trip differs")
		}
	})
}
