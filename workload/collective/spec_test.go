package collective

import (
	"strings"
	"testing"
)

// TestSpecErrors: bad input is an error naming the field, the value and what is allowed, never
// a panic (docs/architecture.md, Conventions, "Errors").
func TestSpecErrors(t *testing.T) {
	ok := NewSpec(AllReduce, 8, 1<<20)
	mod := func(f func(*Spec)) Spec { s := ok; f(&s); return s }
	cases := []struct {
		name string
		sp   Spec
		want string
	}{
		{"no ranks", mod(func(s *Spec) { s.Ranks = 0 }), "ranks = 0: must be >= 1"},
		{"negative bytes", mod(func(s *Spec) { s.Bytes = -1 }), "bytes = -1: must be >= 0"},
		{"zero chunk", mod(func(s *Spec) { s.ChunkBytes = 0 }), "chunk_bytes = 0: must be > 0"},
		{"negative chunk", mod(func(s *Spec) { s.ChunkBytes = -4 }), "chunk_bytes = -4"},
		{"no channels", mod(func(s *Spec) { s.Channels = 0 }), "channels = 0: must be in [1, 1024]"},
		{"unknown op", mod(func(s *Spec) { s.Op = 99 }), "op = collective(99)"},
		{"unsupported algorithm", mod(func(s *Spec) { s.Op = Broadcast; s.Algo = Tree }), "algorithm = tree: broadcast supports auto, ring"},
		{"root out of range", mod(func(s *Spec) { s.Op = Broadcast; s.Root = 8 }), "root = 8: must be a rank in [0, 8)"},
		{"negative root", mod(func(s *Spec) { s.Op = Reduce; s.Root = -1 }), "root = -1"},
		{"peer is root", mod(func(s *Spec) { s.Op = SendRecv; s.Root = 2; s.Peer = 2 }), "peer = 2: the receiver must be a rank in [0, 8) other than root 2"},
		{"send_recv on one rank", mod(func(s *Spec) { s.Op = SendRecv; s.Ranks = 1 }), "send_recv needs >= 2 ranks"},
		{"HD reduce-scatter on 6", mod(func(s *Spec) { s.Op = ReduceScatter; s.Algo = HalvingDoubling; s.Ranks = 6 }), "ranks = 6: halving_doubling reduce_scatter needs a power-of-two rank count"},
		{"hierarchical layout", mod(func(s *Spec) { s.Algo = Hierarchical; s.Inner, s.Outer = 3, 2 }), "inner x outer = 3x2: must be >= 1 each with inner*outer = ranks = 8"},
		{"matrix rows", mod(func(s *Spec) { s.Op = AllToAll; s.Bytes = 0; s.Matrix = make([][]int64, 3) }), "matrix = 3 rows: want shape [8][8]"},
		{"matrix columns", mod(func(s *Spec) {
			s.Op, s.Bytes, s.Ranks = AllToAll, 0, 2
			s.Matrix = [][]int64{{0, 1}, {1}}
		}), "matrix[1] = 1 columns: want shape [2][2]"},
		{"matrix negative", mod(func(s *Spec) {
			s.Op, s.Bytes, s.Ranks = AllToAll, 0, 2
			s.Matrix = [][]int64{{0, 1}, {-5, 0}}
		}), "matrix[1][0] = -5: must be >= 0"},
		{"matrix with bytes", mod(func(s *Spec) {
			s.Op, s.Ranks = AllToAll, 2
			s.Matrix = [][]int64{{0, 1}, {1, 0}}
		}), "bytes = 1048576: must be 0 or the largest matrix row sum (1) when matrix is set"},
		{"matrix on all-reduce", mod(func(s *Spec) { s.Bytes = 0; s.Matrix = [][]int64{} }), "only all_to_all takes a matrix"},
		{"too many ops", mod(func(s *Spec) { s.Ranks = 1 << 16; s.Bytes = 1 << 40; s.ChunkBytes = 1 }), "raise chunk_bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.sp)
			if err == nil {
				t.Fatalf("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q; want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestCommErrors: communicators reject empty, negative and duplicate host lists.
func TestCommErrors(t *testing.T) {
	for _, tc := range []struct {
		hosts []int
		want  string
	}{
		{nil, "comm.hosts = []: a communicator needs >= 1 rank"},
		{[]int{0, -3}, "comm.hosts[1] = -3: must be a host index >= 0"},
		{[]int{4, 5, 4}, "comm.hosts[2] = 4: host already holds rank 0"},
	} {
		if _, err := NewComm(tc.hosts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewComm(%v) = %v; want %q", tc.hosts, err, tc.want)
		}
	}
	if _, err := RangeComm(0, 0, 1); err == nil {
		t.Errorf("RangeComm with 0 ranks accepted")
	}
	c, err := RangeComm(3, 4, 8)
	if err != nil || c.Size() != 4 || c.Host(3) != 27 {
		t.Errorf("RangeComm(3, 4, 8) = %v, %v", c.Hosts(), err)
	}
}

// TestAuto pins the documented Auto rule.
func TestAuto(t *testing.T) {
	for _, tc := range []struct {
		op    Collective
		n     int
		bytes int64
		want  Algorithm
	}{
		{AllReduce, 1, 1 << 30, Ring},
		{AllReduce, 64, 64 << 10, RecursiveDoubling},
		{AllReduce, 64, 64<<10 + 1, HalvingDoubling},
		{AllReduce, 64, 32<<20 - 1, HalvingDoubling},
		{AllReduce, 48, 64<<10 + 1, Tree},
		{AllReduce, 48, 24<<20 - 1, Tree},
		{AllReduce, 48, 24 << 20, Ring},
		{AllReduce, 64, 32 << 20, Ring},
		{ReduceScatter, 64, 1 << 10, Ring},
		{AllGather, 8, 1 << 30, Ring},
		{Broadcast, 8, 1, Ring},
		{AllToAll, 8, 1, Grouped},
		{SendRecv, 2, 1, Direct},
	} {
		if got := AutoAlgorithm(tc.op, tc.n, tc.bytes); got != tc.want {
			t.Errorf("AutoAlgorithm(%s, %d, %d) = %s, want %s", tc.op, tc.n, tc.bytes, got, tc.want)
		}
	}
	sp := NewSpec(AllReduce, 16, 1<<30)
	s, err := Build(sp)
	if err != nil || s.Spec().Algo != Ring {
		t.Errorf("Build resolved auto to %v (%v)", s.Spec().Algo, err)
	}
}

// TestNames: names round-trip and unknown names are errors listing the valid ones.
func TestNames(t *testing.T) {
	for c := Collective(0); c < numCollectives; c++ {
		if got, err := ParseCollective(c.String()); err != nil || got != c {
			t.Errorf("ParseCollective(%q) = %v, %v", c, got, err)
		}
	}
	for a := Algorithm(0); a < numAlgorithms; a++ {
		if got, err := ParseAlgorithm(a.String()); err != nil || got != a {
			t.Errorf("ParseAlgorithm(%q) = %v, %v", a, got, err)
		}
	}
	if got, _ := ParseCollective("AllReduce"); got != AllReduce {
		t.Errorf("ParseCollective(AllReduce) = %v", got)
	}
	if got, _ := ParseAlgorithm("halving-doubling"); got != HalvingDoubling {
		t.Errorf("ParseAlgorithm(halving-doubling) = %v", got)
	}
	if _, err := ParseAlgorithm("butterfly"); err == nil || !strings.Contains(err.Error(), "want one of auto, ring") {
		t.Errorf("ParseAlgorithm(butterfly) = %v", err)
	}
	for d := DType(0); d < numDTypes; d++ {
		if got, err := ParseDType(d.String()); err != nil || got != d {
			t.Errorf("ParseDType(%q) = %v, %v", d, got, err)
		}
	}
}

// TestDoubleTree checks NCCL's trees: each is a tree over all ranks (one root, everyone
// reaches it), no rank has more than two children, the height is about log2 n, and for even
// n no rank is interior in both trees (the property that balances the double tree).
func TestDoubleTree(t *testing.T) {
	for n := 2; n <= 300; n++ {
		ts := doubleTree(n)
		interior := make([]int, n)
		for k, tr := range ts {
			roots := 0
			for r := 0; r < n; r++ {
				if tr.parent[r] < 0 {
					roots++
				}
				if len(tr.kids[r]) > 2 {
					t.Fatalf("n=%d tree %d: rank %d has %d children", n, k, r, len(tr.kids[r]))
				}
				if len(tr.kids[r]) > 0 {
					interior[r]++
				}
			}
			reached := 0
			for _, r := range tr.down {
				if r == tr.root || tr.depth[r] > 0 {
					reached++
				}
			}
			if roots != 1 || reached != n {
				t.Fatalf("n=%d tree %d: %d roots, %d ranks reached", n, k, roots, reached)
			}
			if lg := log2Floor(n); int(tr.height) > lg+1 {
				t.Errorf("n=%d tree %d: height %d > log2 n + 1", n, k, tr.height)
			}
		}
		if n%2 == 0 {
			for r, c := range interior {
				if c == 2 {
					t.Errorf("n=%d: rank %d is interior in both trees", n, r)
				}
			}
		}
	}
	if d := TreeDepth(64); d != 6 {
		t.Errorf("TreeDepth(64) = %d, want 6", d)
	}
}
