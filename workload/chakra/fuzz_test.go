package chakra

import (
	"bytes"
	"testing"

	"github.com/lockstepsim/lockstep/workload/chakra/etpb"
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

// FuzzMatch: no pair of rank streams makes Match panic, and a plan it returns refers every
// communication node of both ranks to a collective or message whose nodes are that kind.
func FuzzMatch(f *testing.F) {
	join := func(a, b []byte) []byte {
		return append(append([]byte{byte(len(a) >> 8), byte(len(a))}, a...), b...)
	}
	pp := Pipeline{Stages: 2, Microbatches: 2, ActivationBytes: 100, Forward: 1, Backward: 1}.Nodes()
	f.Add(join(encode(f, pp[0]), encode(f, pp[1])))
	dp := DataParallel{Ranks: 2, Buckets: 2, BucketBytes: 10}.Nodes()
	f.Add(join(encode(f, dp[0]), encode(f, dp[1])))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		cut := min(int(data[0])<<8|int(data[1]), len(data)-2)
		var ranks []*Rank
		for i, part := range [][]byte{data[2 : 2+cut], data[2+cut:]} {
			rk, err := ReadRank(bytes.NewReader(part), "r"+string(rune('0'+i)))
			if err != nil {
				return
			}
			ranks = append(ranks, rk)
		}
		plan, err := (&Trace{Ranks: ranks}).Match()
		if err != nil {
			return
		}
		for r, rk := range ranks {
			for i := range rk.Nodes {
				nd, ref := &rk.Nodes[i], plan.Refs[r][i]
				switch {
				case nd.Type == etpb.NodeType_COMM_COLL_NODE:
					g := plan.Groups[ref.Group]
					if g.Colls[ref.Seq].Op != nd.Comm || g.Colls[ref.Seq].Bytes != nd.Bytes {
						t.Fatalf("rank %d node %d: collective %+v", r, i, g.Colls[ref.Seq])
					}
				case nd.IsComm():
					m := plan.P2Ps[ref.P2P]
					if m.Bytes != nd.Bytes || (m.Src != r && m.Dst != r) {
						t.Fatalf("rank %d node %d: message %+v", r, i, m)
					}
				}
			}
		}
	})
}
