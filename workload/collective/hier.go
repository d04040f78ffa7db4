package collective

// buildHierarchical expands the 2-D ring-of-rings collectives on an Inner x Outer layout
// (rank r = g*Inner + i is member i of inner group g; inner groups are typically the GPUs of
// one scale-up domain). Each loop of at most Inner x ChunkBytes bytes is cut into
// Inner x Outer blocks, segment i of the loop being blocks i*Outer..i*Outer+Outer-1, so
// inner-phase messages carry at most one chunk and outer-phase messages 1/Outer of it.
// Phases of different loops pipeline.
//
//   - AllReduce: (1) ring reduce-scatter inside each inner group, after which member i holds
//     segment i reduced over its group; (2) ring all-reduce of segment i among the Outer
//     ranks with member index i; (3) ring all-gather inside each inner group.
//   - ReduceScatter: (1) as above; (2) ring reduce-scatter of segment i among the Outer ranks
//     with member index i, after which rank g*Inner+i holds block i*Outer+g reduced over
//     every rank (so block k is owned by rank (k%Outer)*Inner + k/Outer: the same data per
//     rank as NCCL's layout, permuted).
//   - AllGather: the reverse: (1) ring all-gather among the Outer ranks with member index i
//     of the blocks of segment i (rank g*Inner+i contributes block i*Outer+g); (2) ring
//     all-gather of the segments inside each inner group.
//
// The network (outer) phase moves 1/Inner of what a flat ring over all ranks would, over
// Outer-1 (reduce-scatter, all-gather) or 2(Outer-1) (all-reduce) steps instead of
// Ranks-1 or 2(Ranks-1).
func buildHierarchical(b *builder) {
	sp := b.s.spec
	in, out := sp.Inner, sp.Outer
	inner := make([][]int32, out)
	for g := range inner {
		inner[g] = make([]int32, in)
		for i := range inner[g] {
			inner[g][i] = int32(g*in + i)
		}
	}
	outer := make([][]int32, in)
	for i := range outer {
		outer[i] = make([]int32, out)
		for g := range outer[i] {
			outer[i][g] = int32(g*in + i)
		}
	}
	owner := noOwner
	if sp.Op != AllReduce {
		owner = func(k int) int32 { return int32((k%out)*in + k/out) }
	}
	recvs := make([]int32, max(in, out))
	forLoops(sp.Bytes, sp.Channels, int64(in)*sp.ChunkBytes, func(c, j int, bytes int64) {
		b.ch = int32(c)
		base := b.addSplit(bytes, in*out, int32(j), owner)
		b.unit(base, int32(in*out))
		segment := func(i int) (int32, int32) { return base + int32(i*out), int32(out) }
		step := int32(0)
		if sp.Op != AllGather {
			for g := 0; g < out; g++ {
				b.ringReduceScatter(inner[g], segment, step, recvs)
			}
			step += int32(in - 1)
		}
		next := step
		for i := 0; i < in; i++ {
			sub := func(o int) (int32, int32) { return base + int32(i*out+o), 1 }
			s := step
			if sp.Op != AllGather {
				s = b.ringReduceScatter(outer[i], sub, s, recvs)
			}
			if sp.Op != ReduceScatter {
				s = b.ringAllGather(outer[i], sub, s)
			}
			next = s
		}
		if sp.Op != ReduceScatter {
			for g := 0; g < out; g++ {
				b.ringAllGather(inner[g], segment, next)
			}
		}
	})
}
