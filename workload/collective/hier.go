package collective

// buildHierarchical expands the 2-D ring-of-rings all-reduce on an Inner x Outer layout
// (rank r = g*Inner + i is member i of inner group g; Inner groups are typically the GPUs of
// one server): (1) ring reduce-scatter inside each inner group, after which member i holds
// segment i reduced over its group; (2) ring all-reduce of segment i among the Outer ranks
// with the same member index; (3) ring all-gather inside each inner group. Each loop of at
// most Inner x ChunkBytes bytes is cut into Inner x Outer blocks (segment i = blocks
// i*Outer..i*Outer+Outer-1), so phase-1 and phase-3 messages carry at most one chunk and
// phase-2 messages 1/Outer of it. Phases of different loops pipeline.
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
	recvs := make([]int32, max(in, out))
	forLoops(sp.Bytes, sp.Channels, int64(in)*sp.ChunkBytes, func(c, j int, bytes int64) {
		b.ch = int32(c)
		base := b.addSplit(bytes, in*out, int32(j), noOwner)
		b.unit(base, int32(in*out))
		segment := func(i int) (int32, int32) { return base + int32(i*out), int32(out) }
		st1 := int32(in - 1)
		for g := 0; g < out; g++ {
			b.ringReduceScatter(inner[g], segment, 0, recvs)
		}
		st2 := st1 + 2*int32(out-1)
		for i := 0; i < in; i++ {
			sub := func(o int) (int32, int32) { return base + int32(i*out+o), 1 }
			s := b.ringReduceScatter(outer[i], sub, st1, recvs)
			b.ringAllGather(outer[i], sub, s)
		}
		for g := 0; g < out; g++ {
			b.ringAllGather(inner[g], segment, st2)
		}
	})
}
