package chakra

import (
	"bytes"
	"testing"
)

// FuzzReadRank: no stream makes the reader panic or allocate beyond its bounds, and a stream
// it accepts writes back (through the writer) to one it reads as the same nodes
// (docs/style.md §11).
func FuzzReadRank(f *testing.F) {
	f.Add(encode(f, TestDataParallel.Nodes()[0]))
	for _, nodes := range TestPipeline.Nodes() {
		f.Add(encode(f, nodes))
	}
	f.Add([]byte{})
	f.Add([]byte{0x02, 0x0a, 0x00, 0x04, 0x08, 0x01, 0x18, 0x04})
	f.Fuzz(func(t *testing.T, data []byte) {
		rk, err := ReadRank(bytes.NewReader(data), "fuzz.et")
		if err != nil {
			return
		}
		if len(rk.Nodes) > MaxNodes {
			t.Fatalf("%d nodes", len(rk.Nodes))
		}
		for i := range rk.Nodes {
			n := &rk.Nodes[i]
			if n.Bytes < 0 || n.Bytes > MaxCommBytes || n.Duration < 0 || rk.Index(n.ID) != i {
				t.Fatalf("node %+v out of range", n)
			}
		}
		var b bytes.Buffer
		w := NewWriter(&b)
		for i := range rk.Nodes {
			if err := w.Node(&rk.Nodes[i]); err != nil {
				return // a tag beyond int32 or an op the writer cannot name
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		back, err := ReadRank(&b, "back.et")
		if err != nil {
			t.Fatalf("written back: %v", err)
		}
		if len(back.Nodes) != len(rk.Nodes) {
			t.Fatalf("%d nodes back, want %d", len(back.Nodes), len(rk.Nodes))
		}
	})
}
