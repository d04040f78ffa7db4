package collective

// buildPairwise expands the pairwise-exchange all-to-all (Thakur et al. 2005 §3.4): n-1 steps;
// at step k rank i sends its block for rank i+k and receives rank (i-k)'s block for it. Each
// pair's bytes are split over the channels and cut into chunks (one block each, owner the
// sender, dest the receiver). Chunk q of a rank's step-k send waits for chunk q (or the last
// chunk, if fewer) of its own previous step's send and receive, so steps follow each other
// as in MPI's blocking sendrecv while chunks pipeline. Zero-byte pairs send nothing. The
// diagonal (a rank's share for itself) is a local copy and costs nothing.
func buildPairwise(b *builder) {
	sp := b.s.spec
	n := sp.Ranks
	pair := func(i, j int) int64 {
		if sp.Matrix != nil {
			return sp.Matrix[i][j]
		}
		return split(sp.Bytes, n, j)
	}
	C := sp.Channels
	// prevS/prevR[c][i]: rank i's sends/receives of its last step with any, per chunk.
	prevS := make([][][]int32, C)
	prevR := make([][][]int32, C)
	for c := range prevS {
		prevS[c] = make([][]int32, n)
		prevR[c] = make([][]int32, n)
	}
	curR := make([][]int32, n)
	for k := 1; k < n; k++ {
		for c := 0; c < C; c++ {
			b.ch = int32(c)
			for i := range curR {
				curR[i] = curR[i][:0]
			}
			for i := 0; i < n; i++ {
				j := (i + k) % n
				bytes := split(pair(i, j), C, c)
				if bytes == 0 {
					continue
				}
				pieces := ceilDiv(bytes, sp.ChunkBytes)
				ps, pr := prevS[c][i], prevR[c][i]
				var sends []int32
				for q := 0; q < pieces; q++ {
					blk := b.addBlock(split(bytes, pieces, q), int32(q), int32(i), int32(j))
					var deps [2]int32
					nd := 0
					if len(ps) > 0 {
						deps[nd] = ps[min(q, len(ps)-1)]
						nd++
					}
					if len(pr) > 0 {
						deps[nd] = pr[min(q, len(pr)-1)]
						nd++
					}
					s := b.rawXfer(int32(i), int32(j), blk, int32(k-1), deps[:nd]...)
					sends = append(sends, s)
					curR[j] = append(curR[j], s+1)
				}
				prevS[c][i] = sends
			}
			for i := 0; i < n; i++ {
				if len(curR[i]) > 0 {
					prevR[c][i] = append([]int32(nil), curR[i]...)
				}
			}
		}
	}
}

// buildDirect expands a send/recv: Root sends Bytes to Peer (with Peer == ShiftPeer, every
// rank to the next), split over the channels and cut into chunks that go back to back.
func buildDirect(b *builder) {
	sp := b.s.spec
	src, dst := []int32{int32(sp.Root)}, []int32{int32(sp.Peer)}
	if sp.Peer == ShiftPeer {
		src, dst = make([]int32, sp.Ranks), make([]int32, sp.Ranks)
		for r := range src {
			src[r], dst[r] = int32(r), int32((r+1)%sp.Ranks)
		}
	}
	forLoops(sp.Bytes, sp.Channels, sp.ChunkBytes, func(c, j int, bytes int64) {
		b.ch = int32(c)
		for i := range src {
			blk := b.addBlock(bytes, int32(j), src[i], dst[i])
			b.rawXfer(src[i], dst[i], blk, 0)
		}
	})
}

// buildGrouped expands the all-to-all as NCCL's grouped sends and receives (Grouped): every
// pair's bytes are split over the channels and cut into chunks (one block each, owner the
// sender, dest the receiver), all posted at once with no dependencies, so pairs progress
// independently and the chunks to one peer go in order on the pair's connection. Peers are
// posted in NCCL's p2p order, by distance k = 1..n-1 (send to i+k, receive from i-k); step
// k-1 labels them. Zero-byte pairs send nothing; the diagonal is a local copy.
func buildGrouped(b *builder) {
	sp := b.s.spec
	n := sp.Ranks
	for k := 1; k < n; k++ {
		for c := 0; c < sp.Channels; c++ {
			b.ch = int32(c)
			for i := 0; i < n; i++ {
				j := (i + k) % n
				bytes := split(pairBytes(sp, i, j), sp.Channels, c)
				if bytes == 0 {
					continue
				}
				pieces := ceilDiv(bytes, sp.ChunkBytes)
				for q := 0; q < pieces; q++ {
					blk := b.addBlock(split(bytes, pieces, q), int32(q), int32(i), int32(j))
					b.rawXfer(int32(i), int32(j), blk, int32(k-1))
				}
			}
		}
	}
}
