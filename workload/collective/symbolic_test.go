package collective

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// symCheck is the naive reference for a schedule's data semantics (docs/style.md §9: the clever
// against the naive). Every rank's buffer holds, per block, a vector of counts: how many
// times each rank's input has been summed into it (so a double-counted contribution is caught,
// which a bitset would hide), plus a junk flag for "never written". It executes the ops in a
// random order that respects only the dependencies and the send -> receive matching, with
// sends snapshotting their blocks when they start and delivering later, and it flags a write
// to a block while a send from that block is still in flight (a write-after-read hazard).
// A missing dependency therefore shows up, for some seed, as a wrong count, junk, or a hazard.
func symCheck(s *Schedule, seed uint64) error {
	sp := s.spec
	n, nb := sp.Ranks, s.Blocks()
	cnt := make([]uint8, n*nb*n) // (r*nb+b)*n + k
	junk := make([]bool, n*nb)
	readers := make([]int32, n*nb)
	idx := func(r, b int) int { return r*nb + b }
	for r := 0; r < n; r++ {
		for b := 0; b < nb; b++ {
			o := s.BlockOwner(b)
			switch sp.Op {
			case AllReduce, ReduceScatter, Reduce:
				cnt[idx(r, b)*n+r] = 1
			default: // the owner holds its block; everyone else has junk
				if o == r {
					cnt[idx(r, b)*n+r] = 1
				} else {
					junk[idx(r, b)] = true
				}
			}
		}
	}
	ops := s.ops
	left := make([]int32, len(ops))
	for i := range ops {
		left[i] = s.depOff[i+1] - s.depOff[i]
	}
	type msg struct {
		cnt  []uint8
		junk []bool
	}
	payload := make([]*msg, len(ops)) // by send op, then by recv op (scratch / arrived)
	arrived := make([]bool, len(ops))
	ready := make([]bool, len(ops))
	done := make([]bool, len(ops))
	inflight := make([]bool, len(ops))
	// actions: ("run", op) for ready ops that can run now, ("deliver", send) for sends in flight.
	type action struct {
		op      int32
		deliver bool
	}
	var pool []action
	runnable := func(i int32) bool {
		o := &ops[i]
		switch o.Kind {
		case OpRecv:
			return ready[i] && arrived[i]
		default:
			return ready[i]
		}
	}
	var complete func(i int32)
	markReady := func(i int32) {
		ready[i] = true
		if runnable(i) {
			pool = append(pool, action{op: i})
		}
	}
	complete = func(i int32) {
		done[i] = true
		for _, sx := range s.Succs(int(i)) {
			left[sx]--
			if left[sx] == 0 {
				markReady(sx)
			}
		}
	}
	write := func(r int, b int32, src *msg, k int32, reduce bool) error {
		for q := int32(0); q < k; q++ {
			x := idx(r, int(b+q))
			if readers[x] > 0 {
				return fmt.Errorf("rank %d block %d overwritten while a send from it is in flight", r, b+q)
			}
			for c := 0; c < n; c++ {
				v := src.cnt[int(q)*n+c]
				if reduce {
					v += cnt[x*n+c]
				}
				cnt[x*n+c] = v
			}
			if reduce {
				junk[x] = junk[x] || src.junk[q]
			} else {
				junk[x] = src.junk[q]
			}
		}
		return nil
	}
	for _, r := range s.roots {
		markReady(r)
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	steps := 0
	for len(pool) > 0 {
		steps++
		k := rng.IntN(len(pool))
		a := pool[k]
		pool[k] = pool[len(pool)-1]
		pool = pool[:len(pool)-1]
		i := a.op
		o := &ops[i]
		r := int(o.Rank)
		switch {
		case a.deliver:
			inflight[i] = false
			for q := int32(0); q < o.NBlk; q++ {
				readers[idx(r, int(o.Block+q))]--
			}
			rv := o.Match
			payload[rv] = payload[i]
			arrived[rv] = true
			complete(i)
			if runnable(rv) {
				pool = append(pool, action{op: rv})
			}
		case o.Kind == OpSend:
			m := &msg{cnt: make([]uint8, int(o.NBlk)*n), junk: make([]bool, o.NBlk)}
			for q := int32(0); q < o.NBlk; q++ {
				x := idx(r, int(o.Block+q))
				copy(m.cnt[int(q)*n:], cnt[x*n:x*n+n])
				m.junk[q] = junk[x]
				readers[x]++
			}
			payload[i] = m
			inflight[i] = true
			pool = append(pool, action{op: i, deliver: true})
		case o.Kind == OpRecv:
			if o.Flags&FlagScratch == 0 {
				if err := write(r, o.Block, payload[i], o.NBlk, false); err != nil {
					return fmt.Errorf("op %d (%s at rank %d): %v", i, s.Describe(int(i)), r, err)
				}
			}
			complete(i)
		case o.Kind == OpReduce:
			rv := o.Match
			if !done[rv] {
				return fmt.Errorf("op %d (%s at rank %d) ran before its receive %d", i, s.Describe(int(i)), r, rv)
			}
			if err := write(r, o.Block, payload[rv], o.NBlk, true); err != nil {
				return fmt.Errorf("op %d (%s at rank %d): %v", i, s.Describe(int(i)), r, err)
			}
			complete(i)
		}
	}
	for i := range ops {
		if !done[i] {
			return fmt.Errorf("deadlock: op %d (%s at rank %d) never ran", i, s.Describe(i), ops[i].Rank)
		}
	}
	// Final state.
	want := func(r, b int, who int) error { // who = -1: every rank exactly once; else only who
		x := idx(r, b)
		if junk[x] {
			return fmt.Errorf("rank %d block %d holds junk", r, b)
		}
		for c := 0; c < n; c++ {
			w := uint8(0)
			if who < 0 || c == who {
				w = 1
			}
			if cnt[x*n+c] != w {
				return fmt.Errorf("rank %d block %d has rank %d's input %d times, want %d", r, b, c, cnt[x*n+c], w)
			}
		}
		return nil
	}
	for b := 0; b < nb; b++ {
		o := s.BlockOwner(b)
		var err error
		switch sp.Op {
		case AllReduce:
			for r := 0; r < n && err == nil; r++ {
				err = want(r, b, -1)
			}
		case ReduceScatter, Reduce:
			err = want(o, b, -1)
		case AllGather, Broadcast:
			for r := 0; r < n && err == nil; r++ {
				err = want(r, b, o)
			}
		case AllToAll, SendRecv:
			err = want(s.BlockDest(b), b, o)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// structCheck checks the static invariants of a schedule: matched pairs, reduce sources,
// dependency indices before the op, block coverage of the buffer.
func structCheck(s *Schedule) error {
	sp := s.spec
	for i, o := range s.ops {
		if o.Rank < 0 || int(o.Rank) >= sp.Ranks {
			return fmt.Errorf("op %d: rank %d out of range", i, o.Rank)
		}
		switch o.Kind {
		case OpSend, OpRecv:
			m := s.ops[o.Match]
			if m.Match != int32(i) || m.Rank != o.Peer || m.Peer != o.Rank || m.Block != o.Block || m.NBlk != o.NBlk || m.Step != o.Step || m.Kind == o.Kind || m.Kind == OpReduce {
				return fmt.Errorf("op %d (%s) and its match %d disagree", i, s.Describe(i), o.Match)
			}
			if o.Peer == o.Rank {
				return fmt.Errorf("op %d sends to itself", i)
			}
		case OpReduce:
			m := s.ops[o.Match]
			if m.Kind != OpRecv || m.Flags&FlagScratch == 0 || m.Rank != o.Rank {
				return fmt.Errorf("reduce %d folds in op %d which is not a scratch receive at its rank", i, o.Match)
			}
		}
		for _, d := range s.Deps(i) {
			if d < 0 || int(d) >= i {
				return fmt.Errorf("op %d depends on op %d, not an earlier op", i, d)
			}
		}
	}
	var total int64
	for b := 0; b < s.Blocks(); b++ {
		total += s.BlockBytes(b)
	}
	want := sp.Bytes
	switch {
	case sp.Op == AllToAll && sp.Matrix != nil:
		want = 0
		for i, row := range sp.Matrix {
			for j, v := range row {
				if i != j {
					want += v
				}
			}
		}
	case sp.Op == AllToAll:
		want = 0
		for i := 0; i < sp.Ranks; i++ {
			want += sp.Bytes - split(sp.Bytes, sp.Ranks, i)
		}
	}
	if total != want {
		return fmt.Errorf("blocks cover %d B, want %d", total, want)
	}
	return nil
}

// randomSpecs returns the specs the property test checks for op/algo at n ranks.
func randomSpec(rng *rand.Rand, op Collective, algo Algorithm, n int) (Spec, bool) {
	sp := NewSpec(op, n, 0)
	sp.Algo = algo
	switch rng.IntN(4) {
	case 0:
		sp.Bytes = int64(rng.IntN(3)) // 0..2 bytes: empty blocks
	case 1:
		sp.Bytes = int64(rng.IntN(100))
	default:
		sp.Bytes = int64(rng.IntN(1 << 16))
	}
	sp.ChunkBytes = int64(1 + rng.IntN(4096))
	if rng.IntN(3) == 0 {
		sp.ChunkBytes = 1 << 20
	}
	sp.Channels = 1 + rng.IntN(3)
	sp.Root = rng.IntN(n)
	if op == SendRecv {
		if n < 2 {
			return sp, false
		}
		sp.Peer = (sp.Root + 1 + rng.IntN(n-1)) % n
	}
	if op == AllToAll && rng.IntN(2) == 0 {
		sp.Matrix = make([][]int64, n)
		for i := range sp.Matrix {
			sp.Matrix[i] = make([]int64, n)
			for j := range sp.Matrix[i] {
				if rng.IntN(4) > 0 {
					sp.Matrix[i][j] = int64(rng.IntN(5000))
				}
			}
		}
		sp.Bytes = 0
	}
	if algo == HalvingDoubling && op != AllReduce && !isPow2(n) {
		return sp, false
	}
	if algo == Hierarchical {
		var divs []int
		for d := 1; d <= n; d++ {
			if n%d == 0 {
				divs = append(divs, d)
			}
		}
		sp.Inner = divs[rng.IntN(len(divs))]
		sp.Outer = n / sp.Inner
	}
	return sp, true
}

// TestSymbolicCorrectness checks every algorithm of every operation, for n = 1..17 and random
// sizes, chunks and channels: after the schedule runs in random dependency-respecting orders,
// every rank holds exactly what the operation promises (NCCL semantics), no block is
// overwritten under an in-flight send, and no op is left unrun.
func TestSymbolicCorrectness(t *testing.T) {
	combos := []struct {
		op   Collective
		algo Algorithm
	}{
		{AllReduce, Ring}, {AllReduce, Tree}, {AllReduce, HalvingDoubling},
		{AllReduce, RecursiveDoubling}, {AllReduce, Hierarchical}, {AllReduce, Auto},
		{ReduceScatter, Ring}, {ReduceScatter, HalvingDoubling}, {ReduceScatter, Hierarchical},
		{AllGather, Ring}, {AllGather, HalvingDoubling}, {AllGather, Hierarchical},
		{Broadcast, Ring}, {Reduce, Ring},
		{AllToAll, Pairwise}, {AllToAll, Grouped}, {SendRecv, Direct},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range combos {
		t.Run(c.op.String()+"/"+c.algo.String(), func(t *testing.T) {
			for n := 1; n <= 17; n++ {
				for trial := 0; trial < 4; trial++ {
					sp, ok := randomSpec(rng, c.op, c.algo, n)
					if !ok {
						continue
					}
					s, err := Build(sp)
					if err != nil {
						t.Fatalf("n=%d %+v: %v", n, sp, err)
					}
					if err := structCheck(s); err != nil {
						t.Fatalf("n=%d bytes=%d chunk=%d ch=%d: %v", n, sp.Bytes, sp.ChunkBytes, sp.Channels, err)
					}
					for seed := uint64(0); seed < 3; seed++ {
						if err := symCheck(s, seed); err != nil {
							t.Fatalf("n=%d bytes=%d chunk=%d ch=%d inner=%d seed %d: %v", n, sp.Bytes, sp.ChunkBytes, sp.Channels, sp.Inner, seed, err)
						}
					}
				}
			}
		})
	}
}

// dropDep returns a copy of s with every dependency of op i removed.
func dropDep(s *Schedule, i int) *Schedule {
	c := *s
	c.deps = nil
	c.depOff = []int32{0}
	for j := range s.ops {
		if j != i {
			c.deps = append(c.deps, s.Deps(j)...)
		}
		c.depOff = append(c.depOff, int32(len(c.deps)))
	}
	c.roots = nil
	c.link()
	return &c
}

// TestSymbolicCatchesMissingDeps shows the checker can fail: dropping the dependencies of a
// send or reduce in the middle of each algorithm is caught for some seed.
func TestSymbolicCatchesMissingDeps(t *testing.T) {
	cases := []Spec{
		{Op: AllReduce, Algo: Ring, Ranks: 5, Bytes: 1000, ChunkBytes: 1 << 20, Channels: 1},
		{Op: AllReduce, Algo: Tree, Ranks: 7, Bytes: 1000, ChunkBytes: 1 << 20, Channels: 1},
		{Op: AllReduce, Algo: HalvingDoubling, Ranks: 8, Bytes: 1000, ChunkBytes: 1 << 20, Channels: 1},
		{Op: AllReduce, Algo: RecursiveDoubling, Ranks: 6, Bytes: 1000, ChunkBytes: 1 << 20, Channels: 1},
		{Op: AllReduce, Algo: Hierarchical, Ranks: 6, Inner: 3, Outer: 2, Bytes: 1000, ChunkBytes: 1 << 20, Channels: 1},
		{Op: AllGather, Algo: Ring, Ranks: 4, Bytes: 1000, ChunkBytes: 1 << 20, Channels: 1},
		{Op: ReduceScatter, Algo: Hierarchical, Ranks: 6, Inner: 3, Outer: 2, Bytes: 1000, ChunkBytes: 1 << 20, Channels: 1},
		{Op: AllGather, Algo: Hierarchical, Ranks: 6, Inner: 2, Outer: 3, Bytes: 1000, ChunkBytes: 1 << 20, Channels: 1},
		{Op: Broadcast, Algo: Ring, Ranks: 4, Bytes: 1000, ChunkBytes: 1 << 20, Channels: 1, Root: 2},
	}
	for _, sp := range cases {
		s, err := Build(sp)
		if err != nil {
			t.Fatal(err)
		}
		// The first op with dependencies at the middle of the schedule.
		victim := -1
		for i := len(s.ops) / 2; i < len(s.ops); i++ {
			if len(s.Deps(i)) > 0 && s.ops[i].Kind != OpRecv {
				victim = i
				break
			}
		}
		if victim < 0 {
			t.Fatalf("%s/%s: no op with dependencies", sp.Op, sp.Algo)
		}
		bad := dropDep(s, victim)
		caught := false
		for seed := uint64(0); seed < 200 && !caught; seed++ {
			caught = symCheck(bad, seed) != nil
		}
		if !caught {
			t.Errorf("%s/%s: dropping the dependencies of op %d (%s) went unnoticed", sp.Op, sp.Algo, victim, s.Describe(victim))
		}
	}
}
