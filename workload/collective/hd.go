package collective

// Halving-doubling and recursive doubling (Rabenseifner, "Optimization of collective
// reduction operations", ICCS 2004; Thakur, Rabenseifner and Gropp, "Optimization of
// collective communication operations in MPICH", IJHPCA 19(1), 2005, §4.4).
//
// Both run one independent instance per piece of each channel, so pieces pipeline. For
// halving-doubling a piece (a loop) is at most p x ChunkBytes, cut into p blocks, as a ring loop
// is cut into n: the smallest messages carry one block, the first halving step p/2 of them.
// For recursive doubling a piece is one chunk, and every message carries it whole. A rank count n that is not a power of two is folded as in MPICH: with p the
// largest power of two below n and rem = n-p, each even rank 2i < 2rem first sends its whole
// piece to 2i+1, which reduces it; the p remaining ranks (virtual rank v is real rank 2v+1 for
// v < rem, else v+rem) run the power-of-two algorithm; then 2i+1 sends the result back to 2i.
// This costs two extra steps and 2S more bytes on the folded pairs. Reduce-scatter and
// all-gather by halving-doubling are defined only for a power of two (there is no fold that
// leaves every rank owning its segment); Validate rejects other counts.

// foldMap returns the power of two p, rem = n-p and the virtual-to-real rank map.
func foldMap(n int) (p, rem int, real []int32) {
	p = 1 << log2Floor(n)
	rem = n - p
	real = make([]int32, p)
	for v := range real {
		if v < rem {
			real[v] = int32(2*v + 1)
		} else {
			real[v] = int32(v + rem)
		}
	}
	return p, rem, real
}

// buildHalvingDoubling expands Rabenseifner's all-reduce, or its reduce-scatter (recursive
// halving) or all-gather (recursive doubling) half. Per piece, the piece is cut into p blocks;
// after the recursive halving, virtual rank v holds block v reduced over all ranks.
func buildHalvingDoubling(b *builder) {
	sp := b.s.spec
	p, rem, real := foldMap(sp.Ranks)
	owner := func(i int) int32 { return real[i] }
	if sp.Op == AllReduce {
		owner = noOwner
	}
	lo := make([]int32, p)
	ln := make([]int32, p)
	sendLo := make([]int32, p)
	recvs := make([]int32, p)
	forLoops(sp.Bytes, sp.Channels, int64(p)*sp.ChunkBytes, func(c, j int, bytes int64) {
		b.ch = int32(c)
		base := b.addSplit(bytes, p, int32(j), owner)
		b.unit(base, int32(p))
		st := int32(0)
		if sp.Ranks == 1 {
			return
		}
		if rem > 0 {
			st = b.fold(rem, base, int32(p), st)
		}
		if sp.Op != AllGather {
			// Recursive halving: distance p/2 first; the lower rank of a pair keeps the lower half.
			for v := range lo {
				lo[v], ln[v] = 0, int32(p)
			}
			for d := p / 2; d >= 1; d /= 2 {
				for v := 0; v < p; v++ {
					half := ln[v] / 2
					if v&d == 0 {
						sendLo[v] = lo[v] + half
					} else {
						sendLo[v] = lo[v]
						lo[v] += half
					}
					ln[v] = half
					recvs[v] = b.xfer(real[v], real[v^d], base+sendLo[v], half, st, true)
				}
				for v := 0; v < p; v++ {
					b.reduce(real[v^d], recvs[v], base+sendLo[v], ln[v], st)
				}
				st++
			}
		}
		if sp.Op != ReduceScatter {
			// Recursive doubling: at distance d, v holds the aligned d blocks around v.
			for d := 1; d < p; d *= 2 {
				for v := 0; v < p; v++ {
					b.xfer(real[v], real[v^d], base+int32(v&^(d-1)), int32(d), st, false)
				}
				st++
			}
		}
		if rem > 0 {
			b.unfold(rem, base, int32(p), st)
		}
	})
}

// fold emits the pre-step for a non-power-of-two count: 2i -> 2i+1 with a reduce, i < rem.
func (b *builder) fold(rem int, blk, k, st int32) int32 {
	for i := 0; i < rem; i++ {
		r := b.xfer(int32(2*i), int32(2*i+1), blk, k, st, true)
		b.reduce(int32(2*i+1), r, blk, k, st)
	}
	return st + 1
}

// unfold emits the post-step: 2i+1 -> 2i, a copy of the result.
func (b *builder) unfold(rem int, blk, k, st int32) {
	for i := 0; i < rem; i++ {
		b.xfer(int32(2*i+1), int32(2*i), blk, k, st, false)
	}
}

// buildRecursiveDoubling expands the recursive-doubling all-reduce: per piece (one block),
// log2 p steps at distances 1, 2, 4, ...; partners exchange the whole piece and both reduce.
func buildRecursiveDoubling(b *builder) {
	sp := b.s.spec
	p, rem, real := foldMap(sp.Ranks)
	recvs := make([]int32, p)
	forLoops(sp.Bytes, sp.Channels, sp.ChunkBytes, func(c, j int, bytes int64) {
		b.ch = int32(c)
		blk := b.addBlock(bytes, int32(j), -1, -1)
		b.unit(blk, 1)
		if sp.Ranks == 1 {
			return
		}
		st := int32(0)
		if rem > 0 {
			st = b.fold(rem, blk, 1, st)
		}
		for d := 1; d < p; d *= 2 {
			for v := 0; v < p; v++ {
				recvs[v] = b.xfer(real[v], real[v^d], blk, 1, st, true)
			}
			for v := 0; v < p; v++ {
				b.reduce(real[v^d], recvs[v], blk, 1, st)
			}
			st++
		}
		if rem > 0 {
			b.unfold(rem, blk, 1, st)
		}
	})
}
