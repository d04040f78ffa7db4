package flow

import (
	"math"
	"math/bits"
	"slices"

	"github.com/lockstepsim/lockstep/workload/collective"
)

// The flow-level expansion of each collective into phases: the model Collectives runs for
// every algorithm unless the schedule model is on (SetSchedules, dag.go: the runner turns it
// on), which runs the tree, halving-doubling, recursive doubling and pairwise message by
// message through their packet-level schedule instead; the rows below for those four are
// then the phase model only (the ring, hierarchical, chain, direct and grouped rows hold
// either way). With n ranks, S
// bytes (Spec.Bytes, nccl-tests meaning), a = a flow's one-way latency from the Router:
//
//	ring all-reduce        1 phase: n flows r -> r+1, 2(n-1)/n S each; latency 2(n-1) x mean(a over the ring's edges)
//	ring reduce-scatter    1 phase: n flows r -> r+1, (n-1)/n S each; latency (n-1) x mean a
//	ring all-gather        as reduce-scatter
//	broadcast (chain)      1 phase: n-1 flows root+i -> root+i+1, S each; latency (n-1) x mean a
//	reduce (chain)         1 phase: n-1 flows root+i+1 -> root+i, S each; latency (n-1) x mean a
//	send/recv              1 phase: one flow root -> peer, S; latency a (peer ShiftPeer: n flows r -> r+1, S each; latency a each)
//	grouped all-to-all     1 phase: n(n-1) flows i -> j of S/n (split as the schedule does) or Matrix[i][j], zero-byte pairs omitted; latency a each
//	pairwise all-to-all    n-1 phases: at step k = 1..n-1, n flows i -> i+k of that pair's bytes (zero-byte pairs omitted); latency a each
//	double binary tree AR  1 phase: for both trees t and every non-root rank r, r -> parent and parent -> r, split(S,2,t) each, same-pair flows merged; latency 2 D x mean a (D = collective.TreeDepth(n))
//	halving-doubling AR    lg p phases of recursive halving (partner v^d, d = p/2..1, S d/p each way), lg p of recursive doubling (d = 1..p/2, S d/p), plus a fold phase before and after when n is not a power of two (p the largest power of two <= n; 2i -> 2i+1 for i < n-p, S, and back); latency a each
//	halving-doubling RS/AG the halving (RS) or doubling (AG) phases alone (n a power of two)
//	recursive doubling AR  fold, lg p phases (d = 1..p/2, S each way), fold; latency a each
//	hierarchical AR (IxO)  3 phases: ring reduce-scatter in every inner group ((I-1)/I S, latency (I-1) x mean a); ring all-reduce among the O ranks of equal member index i (2(O-1)/O of split(S, I, i), latency 2(O-1) x mean a); ring all-gather in every inner group ((I-1)/I S, latency (I-1) x mean a)
//	hierarchical RS (IxO)  2 phases: the all-reduce's first, then a ring reduce-scatter among the O ranks of equal member index i ((O-1)/O of split(S, I, i), latency (O-1) x mean a)
//	hierarchical AG (IxO)  2 phases: a ring all-gather among the O ranks of equal member index i ((O-1)/O of split(S, I, i), latency (O-1) x mean a), then the all-reduce's last
//
// A phase's flows all start together and the phase ends when the last of them is delivered
// (a barrier across the whole communicator); phases run one after another. "mean a" is the
// mean of the Router latencies of the ring's (chain's, tree's) flows, each ring of a phase on
// its own, so a flow is delivered K x mean a after its last byte: the ring's steady state, in
// which every edge is busy at the ring's bottleneck rate and a chunk crosses K edges, so that
// on an ideal crossbar the ring all-reduce takes 2(n-1)/n S x 8 / B + 2(n-1) a, the
// collective.AlphaBeta form. Step algorithms (halving-doubling, recursive doubling) keep
// their steps: log2 n phases, each a full exchange, giving AlphaBeta's 2 lg p a + 2(p-1)/p S b
// on a crossbar; their pipelining of pieces across steps is not modelled (a step barrier
// stands in for it). The tree is modelled in its pipelined steady state (all tree edges busy
// at once, each rank sending and receiving about 2S), which is AlphaBeta's tree form on a
// crossbar; its pipeline fill is in the latency term. The grouped all-to-all (NCCL's, the
// default) is one group of concurrent sends and receives: every pair at once, one latency,
// as the packet level posts every pair's chunks at once; the pairwise all-to-all keeps its
// n-1 steps as phases, as the packet level runs them (its overlap of consecutive steps'
// chunks stands in for nothing here: a step barrier).
//
// Channels: Spec.Channels = C splits every flow's bytes over C connections, Router keys
// key0 + c (tree: 2c + t, NCCL's logical channel of tree t), each taking 1/C of the flow (its
// paths weighted 1/C); the flow stays one flow with the union of the paths. key0 is a hash of
// the communicator's hosts, so one communicator gets the same keys (the same ECMP paths) on
// every launch, as NCCL keeps its connections per communicator. Reductions are free (no
// gamma term); chunking (Spec.ChunkBytes) does not change the fluid model.

// demand is one flow of a phase before routing: ranks, bytes per tree (b[1] is used by the
// tree only), the trees it carries (bit t; 1 for non-tree phases) and its latency group.
type demand struct {
	src, dst int32
	b        [2]int64
	trees    uint8
	group    int32
}

// phase says how a phase's flows get their latency and keys.
type phase struct {
	k    int64 // latency multiplier
	mean bool  // latency = k x the mean over the flow's group, else k x its own
	tree bool  // demands carry per-tree bytes and keys 2c + t
}

// numPhases returns the phases of sp's expansion (sp resolved).
func numPhases(sp collective.Spec) int {
	n := sp.Ranks
	if n <= 1 {
		return 0
	}
	p := 1 << (bits.Len(uint(n)) - 1)
	lg := bits.Len(uint(p)) - 1
	fold := 0
	if p < n {
		fold = 2
	}
	switch sp.Algo {
	case collective.HalvingDoubling:
		if sp.Op == collective.AllReduce {
			return 2*lg + fold
		}
		return lg
	case collective.RecursiveDoubling:
		return lg + fold
	case collective.Hierarchical:
		if sp.Op == collective.AllReduce {
			return 3
		}
		return 2
	case collective.Pairwise:
		return n - 1
	}
	return 1
}

// pairBytes returns the bytes rank i sends to rank j in the all-to-all sp: Matrix[i][j], or
// j's share of Bytes split as the schedule splits it.
func pairBytes(sp *collective.Spec, i, j int) int64 {
	if sp.Matrix != nil {
		return sp.Matrix[i][j]
	}
	return split(sp.Bytes, sp.Ranks, j)
}

// expand fills c.dem with the demands of phase ph of in and returns how to time them.
func (c *Collectives) expand(in *coll, ph int) phase {
	c.dem = c.dem[:0]
	sp := &in.spec
	n, S := sp.Ranks, sp.Bytes
	switch sp.Algo {
	case collective.Ring:
		switch sp.Op {
		case collective.AllReduce:
			c.ring(n, 1, 0, mulDiv(S, 2*int64(n-1), int64(n)), 0)
			return phase{k: 2 * int64(n-1), mean: true}
		case collective.ReduceScatter, collective.AllGather:
			c.ring(n, 1, 0, mulDiv(S, int64(n-1), int64(n)), 0)
			return phase{k: int64(n - 1), mean: true}
		case collective.Broadcast, collective.Reduce:
			for i := 0; i < n-1; i++ {
				a, b := int32((sp.Root+i)%n), int32((sp.Root+i+1)%n)
				if sp.Op == collective.Reduce {
					a, b = b, a
				}
				c.dem = append(c.dem, demand{src: a, dst: b, b: [2]int64{S}, trees: 1})
			}
			return phase{k: int64(n - 1), mean: true}
		}
	case collective.Direct:
		if sp.Peer == collective.ShiftPeer {
			for i := 0; i < n; i++ {
				c.dem = append(c.dem, demand{src: int32(i), dst: int32((i + 1) % n), b: [2]int64{S}, trees: 1})
			}
			return phase{k: 1}
		}
		c.dem = append(c.dem, demand{src: int32(sp.Root), dst: int32(sp.Peer), b: [2]int64{S}, trees: 1})
		return phase{k: 1}
	case collective.Grouped:
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if b := pairBytes(sp, i, j); i != j && b > 0 {
					c.dem = append(c.dem, demand{src: int32(i), dst: int32(j), b: [2]int64{b}, trees: 1})
				}
			}
		}
		return phase{k: 1}
	case collective.Pairwise:
		k := ph + 1 // step k: rank i sends to i+k
		for i := 0; i < n; i++ {
			j := (i + k) % n
			if b := pairBytes(sp, i, j); b > 0 {
				c.dem = append(c.dem, demand{src: int32(i), dst: int32(j), b: [2]int64{b}, trees: 1})
			}
		}
		return phase{k: 1}
	case collective.Tree:
		for t := 0; t < 2; t++ {
			half := split(S, 2, t)
			var b [2]int64
			b[t] = half
			for r, p := range collective.TreeParents(n, t) {
				if p < 0 {
					continue
				}
				c.dem = append(c.dem,
					demand{src: int32(r), dst: p, b: b, trees: 1 << t},
					demand{src: p, dst: int32(r), b: b, trees: 1 << t})
			}
		}
		return phase{k: 2 * int64(collective.TreeDepth(n)), mean: true, tree: true}
	case collective.Hierarchical:
		I, O := sp.Inner, sp.Outer
		if sp.Op != collective.AllReduce {
			// Reduce-scatter: inner then outer; all-gather: outer then inner.
			if (ph == 0) == (sp.Op == collective.ReduceScatter) {
				for g := 0; g < O; g++ {
					c.ring(I, 1, g*I, mulDiv(S, int64(I-1), int64(I)), int32(g))
				}
				return phase{k: int64(I - 1), mean: true}
			}
			for i := 0; i < I; i++ {
				c.ring(O, I, i, mulDiv(split(S, I, i), int64(O-1), int64(O)), int32(i))
			}
			return phase{k: int64(O - 1), mean: true}
		}
		switch ph {
		case 0, 2:
			for g := 0; g < O; g++ {
				c.ring(I, 1, g*I, mulDiv(S, int64(I-1), int64(I)), int32(g))
			}
			return phase{k: int64(I - 1), mean: true}
		default:
			for i := 0; i < I; i++ {
				c.ring(O, I, i, mulDiv(split(S, I, i), 2*int64(O-1), int64(O)), int32(i))
			}
			return phase{k: 2 * int64(O-1), mean: true}
		}
	case collective.HalvingDoubling, collective.RecursiveDoubling:
		c.steps(sp, ph)
		return phase{k: 1}
	}
	return phase{k: 1}
}

// ring appends the m flows of a ring over ranks first, first+stride, ..., each rank sending
// bytes to the next; nothing for m < 2.
func (c *Collectives) ring(m, stride, first int, bytes int64, group int32) {
	if m < 2 {
		return
	}
	for i := 0; i < m; i++ {
		a, b := first+i*stride, first+((i+1)%m)*stride
		c.dem = append(c.dem, demand{src: int32(a), dst: int32(b), b: [2]int64{bytes}, trees: 1, group: group})
	}
}

// steps appends phase ph of a halving-doubling or recursive-doubling expansion (see the
// table above): virtual rank v < rem is real rank 2v+1, else v+rem (MPICH's fold, as in
// the collective package).
func (c *Collectives) steps(sp *collective.Spec, ph int) {
	n, S := sp.Ranks, sp.Bytes
	p := 1 << (bits.Len(uint(n)) - 1)
	lg := bits.Len(uint(p)) - 1
	rem := n - p
	phys := func(v int) int32 {
		if v < rem {
			return int32(2*v + 1)
		}
		return int32(v + rem)
	}
	if rem > 0 {
		if ph == 0 {
			for i := 0; i < rem; i++ {
				c.dem = append(c.dem, demand{src: int32(2 * i), dst: int32(2*i + 1), b: [2]int64{S}, trees: 1})
			}
			return
		}
		if ph == numPhases(*sp)-1 {
			for i := 0; i < rem; i++ {
				c.dem = append(c.dem, demand{src: int32(2*i + 1), dst: int32(2 * i), b: [2]int64{S}, trees: 1})
			}
			return
		}
		ph--
	}
	var d int
	var bytes int64
	switch {
	case sp.Algo == collective.RecursiveDoubling:
		d, bytes = 1<<ph, S
	case sp.Op == collective.AllGather:
		d = 1 << ph
		bytes = mulDiv(S, int64(d), int64(p))
	case ph < lg: // recursive halving (reduce-scatter, or the first half of the all-reduce)
		d = p >> (ph + 1)
		bytes = mulDiv(S, int64(d), int64(p))
	default: // recursive doubling of the all-reduce
		d = 1 << (ph - lg)
		bytes = mulDiv(S, int64(d), int64(p))
	}
	for v := 0; v < p; v++ {
		c.dem = append(c.dem, demand{src: phys(v), dst: phys(v ^ d), b: [2]int64{bytes}, trees: 1})
	}
}

// mergeDemands merges demands with the same (src, dst) into one (bytes per tree added, trees
// joined), in (src, dst) order.
func (c *Collectives) mergeDemands() {
	slices.SortFunc(c.dem, func(x, y demand) int {
		if x.src != y.src {
			return int(x.src) - int(y.src)
		}
		return int(x.dst) - int(y.dst)
	})
	out := c.dem[:0]
	for _, d := range c.dem {
		if k := len(out) - 1; k >= 0 && out[k].src == d.src && out[k].dst == d.dst {
			out[k].b[0] += d.b[0]
			out[k].b[1] += d.b[1]
			out[k].trees |= d.trees
			continue
		}
		out = append(out, d)
	}
	c.dem = out
}

// split returns part i of total bytes cut into k near-equal parts (the first total%k get one
// byte more), as the collective package splits blocks.
func split(total int64, k, i int) int64 {
	q, r := total/int64(k), total%int64(k)
	if int64(i) < r {
		return q + 1
	}
	return q
}

// mulDiv returns a x b / c rounded to the nearest integer (halves up) for a, b >= 0, c > 0,
// without overflow in the product; it saturates at MaxInt64.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, uint64(c))
	if r >= uint64(c)-r {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}
