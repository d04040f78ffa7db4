package htsim

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
)

// FuzzRead checks that no input panics, that a parsed matrix is in range, and that writing
// it reads back to the same matrix (docs/style.md §11). Inputs are capped at 4 KiB so each
// execution takes well under a millisecond.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"testdata/dag.cm", "testdata/perm16.cm"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("Nodes 2\nConnections 1\n0->1 start .5 size 0\n"))
	f.Add([]byte("Nodes 3\nConnections 2\nTriggers 1\n0->1 start 0 size 1 send_done_trigger 4\n1->2 trigger 4 size 1\ntrigger id 4 barrier count 1\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 4096 {
			return
		}
		m, err := Read(bytes.NewReader(in), "f.cm")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.cm:") {
				t.Fatalf("error without position: %v", err)
			}
			return
		}
		if m.Nodes < 1 || m.Nodes > MaxNodes || len(m.Conns) > MaxConnections {
			t.Fatalf("out of range: %d nodes, %d conns", m.Nodes, len(m.Conns))
		}
		for _, c := range m.Conns {
			if c.Src < 0 || c.Src >= m.Nodes || c.Dst < 0 || c.Dst >= m.Nodes || c.Src == c.Dst || c.Size < 0 || c.Size > MaxSize || c.Start < 0 {
				t.Fatalf("bad connection %+v", c)
			}
		}
		var b bytes.Buffer
		if err := Write(&b, m); err != nil {
			t.Fatal(err)
		}
		m2, err := Read(&b, "w.cm")
		if err != nil {
			t.Fatalf("rereading: %v\n%s", err, b.String())
		}
		clearLines(m)
		clearLines(m2)
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip differs:\n%+v\n%+v", m, m2)
		}
	})
}
