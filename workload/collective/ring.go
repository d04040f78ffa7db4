package collective

// Ring algorithms (NCCL's ring; Patarasuk and Yuan 2009 for the bandwidth optimality of the
// ring all-reduce).
//
// Layout: the buffer is cut into Channels parts; part c into m_c loops of at most
// Ranks x ChunkBytes bytes; each loop into Ranks blocks, block i being segment i (the one rank
// i owns after a reduce-scatter). Each (channel, loop) is an independent ring instance, so
// every message carries at most one chunk and the loops pipeline: step s of loop j+1 overlaps
// step s+1 of loop j. Loops are emitted loop-major, channels interleaved, so at launch each
// rank posts loop 0 of every channel first.

// ringOrder returns the ring positions 0..n-1 as ranks.
func identity(n int) []int32 {
	r := make([]int32, n)
	for i := range r {
		r[i] = int32(i)
	}
	return r
}

// segFunc gives the blocks of segment i of a ring instance.
type segFunc func(i int) (blk, k int32)

// ringReduceScatter emits k-1 steps of a ring reduce-scatter among ring (positions -> ranks):
// at step s position p sends segment (p-s-1) mod k to position p+1, which reduces it. After
// it position p holds segment p reduced over the ring. Returns the next step number.
func (b *builder) ringReduceScatter(ring []int32, seg segFunc, step0 int32, recvs []int32) int32 {
	k := len(ring)
	for s := 0; s < k-1; s++ {
		st := step0 + int32(s)
		for p := 0; p < k; p++ {
			blk, nb := seg(((p-s-1)%k + k) % k)
			recvs[p] = b.xfer(ring[p], ring[(p+1)%k], blk, nb, st, true)
		}
		for p := 0; p < k; p++ {
			blk, nb := seg(((p-s-1)%k + k) % k)
			b.reduce(ring[(p+1)%k], recvs[p], blk, nb, st)
		}
	}
	return step0 + int32(k-1)
}

// ringAllGather emits k-1 steps of a ring all-gather: at step s position p sends segment
// (p-s) mod k to position p+1, which stores it. Position p starts with segment p.
func (b *builder) ringAllGather(ring []int32, seg segFunc, step0 int32) int32 {
	k := len(ring)
	for s := 0; s < k-1; s++ {
		st := step0 + int32(s)
		for p := 0; p < k; p++ {
			blk, nb := seg(((p-s)%k + k) % k)
			b.xfer(ring[p], ring[(p+1)%k], blk, nb, st, false)
		}
	}
	return step0 + int32(k-1)
}

// forLoops calls f(channel, loop, bytes) for every (channel, loop) of a buffer of total bytes
// cut into channels parts and each part into loops of at most per bytes, loop-major with
// channels interleaved.
func forLoops(total int64, channels int, per int64, f func(c, j int, bytes int64)) {
	loops := make([]int, channels)
	most := 0
	for c := range loops {
		loops[c] = ceilDiv(split(total, channels, c), per)
		most = max(most, loops[c])
	}
	for j := 0; j < most; j++ {
		for c := 0; c < channels; c++ {
			if j < loops[c] {
				f(c, j, split(split(total, channels, c), loops[c], j))
			}
		}
	}
}

// buildRing expands ring all-reduce, reduce-scatter and all-gather.
func buildRing(b *builder) {
	sp := b.s.spec
	n := sp.Ranks
	ring := identity(n)
	recvs := make([]int32, n)
	owner := func(i int) int32 { return int32(i) }
	if sp.Op == AllReduce {
		owner = noOwner
	}
	forLoops(sp.Bytes, sp.Channels, int64(n)*sp.ChunkBytes, func(c, j int, bytes int64) {
		b.ch = int32(c)
		base := b.addSplit(bytes, n, int32(j), owner)
		b.unit(base, int32(n))
		seg := func(i int) (int32, int32) { return base + int32(i), 1 }
		st := int32(0)
		if sp.Op != AllGather {
			st = b.ringReduceScatter(ring, seg, st, recvs)
		}
		if sp.Op != ReduceScatter {
			b.ringAllGather(ring, seg, st)
		}
	})
}

// buildChain expands ring broadcast and reduce: a pipelined chain along the ring. Broadcast
// starts at the root and ends at root-1; reduce starts at root+1 and ends at the root. Each
// chunk is one block.
func buildChain(b *builder) {
	sp := b.s.spec
	n := sp.Ranks
	chain := make([]int32, n)
	for j := range chain {
		if sp.Op == Broadcast {
			chain[j] = int32((sp.Root + j) % n)
		} else {
			chain[j] = int32((sp.Root + 1 + j) % n)
		}
	}
	root := int32(sp.Root)
	forLoops(sp.Bytes, sp.Channels, sp.ChunkBytes, func(c, j int, bytes int64) {
		b.ch = int32(c)
		blk := b.addBlock(bytes, int32(j), root, -1)
		b.unit(blk, 1)
		for s := 0; s < n-1; s++ {
			if sp.Op == Broadcast {
				b.xfer(chain[s], chain[s+1], blk, 1, int32(s), false)
			} else {
				r := b.xfer(chain[s], chain[s+1], blk, 1, int32(s), true)
				b.reduce(chain[s+1], r, blk, 1, int32(s))
			}
		}
	})
}
