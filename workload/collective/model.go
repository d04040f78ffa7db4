package collective

import (
	"fmt"
	"math"

	"github.com/lockstepsim/lockstep/sim"
)

// Model is the alpha-beta(-gamma) cost model of Hockney, as used by Thakur, Rabenseifner and
// Gropp, "Optimization of collective communication operations in MPICH" (IJHPCA 2005): a
// message of b bytes costs alpha + b*beta, reducing b bytes costs b*gamma. It also describes
// an Ideal network (RunIdeal).
type Model struct {
	Latency           sim.Time // alpha: per-message latency, >= 0
	Rate              sim.Rate // B: per-rank NIC bandwidth, bits per second, > 0 (beta = 8/B s per byte)
	ReduceBytesPerSec float64  // 1/gamma: reduction throughput per GPU, bytes per second; 0 = free
}

func (m Model) check() error {
	if m.Latency < 0 {
		return fieldError("model.latency", m.Latency, "must be >= 0")
	}
	if m.Rate <= 0 {
		return fieldError("model.rate", m.Rate, "must be > 0 bits per second")
	}
	if !(m.ReduceBytesPerSec >= 0) || math.IsInf(m.ReduceBytesPerSec, 0) {
		return fieldError("model.reduce_bps", m.ReduceBytesPerSec, "must be a finite number >= 0")
	}
	return nil
}

func (m Model) abg() (a, b, g float64) {
	a = m.Latency.Seconds()
	b = 8 / float64(m.Rate)
	if m.ReduceBytesPerSec > 0 {
		g = 1 / m.ReduceBytesPerSec
	}
	return
}

// AlphaBeta returns the textbook closed form of spec's (resolved) algorithm: one message per
// step carrying the whole step's data, no pipelining. With n ranks, S = Bytes, a = alpha,
// b = beta, g = gamma, lg = log2:
//
//	ring all-reduce           2(n-1)a + 2(n-1)/n S b + (n-1)/n S g          [Thakur §4.4; Patarasuk & Yuan 2009]
//	ring reduce-scatter       (n-1)a + (n-1)/n S b + (n-1)/n S g             [Thakur §4.3]
//	ring all-gather           (n-1)a + (n-1)/n S b                           [Thakur §3.1]
//	ring broadcast (chain)    (n-1)(a + S b)
//	ring reduce (chain)       (n-1)(a + S b + S g)
//	halving-doubling AR       2 lg(p) a + 2(p-1)/p S b + (p-1)/p S g         [Rabenseifner 2004; Thakur §4.4]
//	halving-doubling RS / AG  lg(n) a + (n-1)/n S b (+ (n-1)/n S g for RS)
//	recursive doubling AR     lg(p) (a + S b + S g)                          [Thakur §4.4]
//	double binary tree AR     2 D a + 2 S b + S g                            [Sanders et al. 2009; NCCL]
//	hierarchical AR (I x O)   2(I-1)a + 2(I-1)/I S b + (I-1)/I S g + 2(O-1)a + 2(O-1)/O (S/I) b + (O-1)/O (S/I) g
//	hierarchical RS (I x O)   (I-1)a + (I-1)/I S (b+g) + (O-1)a + (O-1)/O (S/I)(b+g)
//	hierarchical AG (I x O)   (O-1)a + (O-1)/O (S/I) b + (I-1)a + (I-1)/I S b
//	pairwise all-to-all       sum over steps k=1..n-1 of (a + max_i M[i][i+k] b)  [Thakur §3.4]
//	grouped all-to-all        a + max over ranks of max(sum_j M[i][j], sum_j M[j][i]) b (every pair at once: the busiest NIC direction)
//	send/recv                 a + S b
//
// p is the largest power of two <= n; when p < n the fold adds 2a + 2 S b + S g. D is
// TreeDepth(n). The tree form is the pipelined large-message limit (each rank sends and
// receives 2S in total) plus the latency of the 2D sequential levels; it is approximate for
// messages of one chunk, and on Ideal's FIFO NICs the tree reaches only about 75-80% of its
// bandwidth term at large sizes, because every rank that is interior in one tree has both its
// transmitter and its receiver loaded to 2S, so any idle moment on either is lost (the ring
// loads each to 2(n-1)/n S with a regular pattern). Errors: an invalid spec or model.
func AlphaBeta(spec Spec, m Model) (sim.Time, error) {
	sp, err := spec.Resolve()
	if err != nil {
		return 0, err
	}
	if err := m.check(); err != nil {
		return 0, err
	}
	a, b, g := m.abg()
	n := float64(sp.Ranks)
	S := float64(sp.Bytes)
	if sp.Ranks == 1 {
		return 0, nil
	}
	fr := (n - 1) / n
	var t float64
	switch sp.Algo {
	case Ring:
		switch sp.Op {
		case AllReduce:
			t = 2*(n-1)*a + 2*fr*S*b + fr*S*g
		case ReduceScatter:
			t = (n-1)*a + fr*S*b + fr*S*g
		case AllGather:
			t = (n-1)*a + fr*S*b
		case Broadcast:
			t = (n - 1) * (a + S*b)
		case Reduce:
			t = (n - 1) * (a + S*b + S*g)
		}
	case HalvingDoubling:
		if sp.Op == AllReduce {
			p := float64(int(1) << log2Floor(sp.Ranks))
			t = 2*math.Log2(p)*a + 2*(p-1)/p*S*b + (p-1)/p*S*g
			if p < n {
				t += 2*a + 2*S*b + S*g
			}
		} else {
			t = math.Log2(n)*a + fr*S*b
			if sp.Op == ReduceScatter {
				t += fr * S * g
			}
		}
	case RecursiveDoubling:
		p := float64(int(1) << log2Floor(sp.Ranks))
		t = math.Log2(p) * (a + S*b + S*g)
		if p < n {
			t += 2*a + 2*S*b + S*g
		}
	case Tree:
		t = 2*float64(TreeDepth(sp.Ranks))*a + 2*S*b + S*g
	case Hierarchical:
		I, O := float64(sp.Inner), float64(sp.Outer)
		switch sp.Op {
		case AllReduce:
			t = 2*(I-1)*a + 2*(I-1)/I*S*b + (I-1)/I*S*g
			if O > 1 {
				t += 2*(O-1)*a + 2*(O-1)/O*(S/I)*b + (O-1)/O*(S/I)*g
			}
		case ReduceScatter:
			t = (I-1)*a + (I-1)/I*S*(b+g) + (O-1)*a + (O-1)/O*(S/I)*(b+g)
		default: // AllGather
			t = (O-1)*a + (O-1)/O*(S/I)*b + (I-1)*a + (I-1)/I*S*b
		}
	case Pairwise:
		for k := 1; k < sp.Ranks; k++ {
			var most int64
			for i := 0; i < sp.Ranks; i++ {
				most = max(most, pairBytes(sp, i, (i+k)%sp.Ranks))
			}
			if most > 0 {
				t += a + float64(most)*b
			}
		}
	case Grouped:
		t = a + float64(groupedBytes(sp))*b
	case Direct:
		t = a + S*b
	default:
		return 0, fieldError("algorithm", sp.Algo, "no closed form")
	}
	return sim.FromSeconds(t), nil
}

// groupedBytes returns the most bytes one rank sends or receives in the all-to-all sp
// (the diagonal excluded): what its NIC carries in one direction when every pair runs at
// once.
func groupedBytes(sp Spec) int64 {
	n := sp.Ranks
	var most int64
	for i := 0; i < n; i++ {
		var out, in int64
		for j := 0; j < n; j++ {
			if j != i {
				out += pairBytes(sp, i, j)
				in += pairBytes(sp, j, i)
			}
		}
		most = max(most, out, in)
	}
	return most
}

// pairBytes returns the bytes rank i sends to rank j in an all-to-all.
func pairBytes(sp Spec, i, j int) int64 {
	if sp.Matrix != nil {
		return sp.Matrix[i][j]
	}
	return split(sp.Bytes, sp.Ranks, j)
}

// Pipelined returns the closed form of the chunked schedule Build makes, on the Ideal
// network, for the algorithms whose pipeline has a simple shape: ring all-reduce,
// reduce-scatter and all-gather, ring (chain) broadcast and reduce, pairwise and grouped
// all-to-all and send/recv. Let K be the sequential steps a chunk takes (ring AR 2(n-1), RS
// and AG n-1, chain n-1, pairwise n-1, grouped and send/recv 1), P the chunks each rank sends
// per step (loops summed over channels; for the all-to-alls, chunks per pair), c the largest
// message and W the bytes each rank sends in total (grouped: the most a rank sends or
// receives). Then
//
//	T = max( K(a + c b) + (P-1) c b ,  W b + a )
//
// The first term is the latency-bound pipeline (a chunk crosses K hops, each paying a plus its
// own serialisation, and the last of P chunks trails by (P-1) c b); the second is the
// bandwidth-bound case (the NIC never idles; the last message then needs a more). On Ideal it
// is exact in both regimes when every chunk has the same size and steps do not contend at a
// receiver (rings, chains, send/recv); for the all-to-alls it is approximate. For P = 1 it reduces to
// the AlphaBeta form. Reductions are assumed free. Errors: an invalid spec or model, another
// algorithm, or ReduceBytesPerSec > 0 for a reducing operation.
func Pipelined(spec Spec, m Model) (sim.Time, error) {
	sp, err := spec.Resolve()
	if err != nil {
		return 0, err
	}
	if err := m.check(); err != nil {
		return 0, err
	}
	if m.ReduceBytesPerSec > 0 && sp.Op.Reduces() {
		return 0, fieldError("model.reduce_bps", m.ReduceBytesPerSec, "the pipelined closed form assumes free reductions (0)")
	}
	if sp.Ranks == 1 {
		return 0, nil
	}
	a, b, _ := m.abg()
	n := sp.Ranks
	var K, P int
	var c, W int64
	loops := func(per int64) (p int, most int64) {
		for ch := 0; ch < sp.Channels; ch++ {
			part := split(sp.Bytes, sp.Channels, ch)
			k := ceilDiv(part, per)
			p += k
			most = max(most, split(part, k, 0))
		}
		return p, most
	}
	switch {
	case sp.Algo == Ring && (sp.Op == AllReduce || sp.Op == ReduceScatter || sp.Op == AllGather):
		var most int64
		P, most = loops(int64(n) * sp.ChunkBytes)
		c = (most + int64(n) - 1) / int64(n)
		K = n - 1
		if sp.Op == AllReduce {
			K = 2 * (n - 1)
		}
		W = int64(K) * int64(P) * c
	case sp.Algo == Ring: // broadcast, reduce: a chain
		P, c = loops(sp.ChunkBytes)
		K, W = n-1, sp.Bytes
	case sp.Algo == Direct:
		P, c = loops(sp.ChunkBytes)
		K, W = 1, sp.Bytes
	case sp.Algo == Pairwise || sp.Algo == Grouped:
		K = n - 1
		if sp.Algo == Grouped {
			K = 1
		}
		for i := 0; i < n; i++ {
			var w int64
			for j := 0; j < n; j++ {
				if i == j {
					continue
				}
				pb := pairBytes(sp, i, j)
				w += pb
				for ch := 0; ch < sp.Channels; ch++ {
					part := split(pb, sp.Channels, ch)
					k := ceilDiv(part, sp.ChunkBytes)
					c = max(c, split(part, k, 0))
					P = max(P, k*sp.Channels)
				}
			}
			W = max(W, w)
		}
		if sp.Algo == Grouped {
			W = groupedBytes(sp)
		}
	default:
		return 0, fieldError("algorithm", sp.Algo, fmt.Sprintf("no pipelined closed form for %s; use AlphaBeta", sp.Op))
	}
	cb := float64(c) * b
	lat := float64(K)*(a+cb) + float64(P-1)*cb
	bw := float64(W)*b + a
	return sim.FromSeconds(math.Max(lat, bw)), nil
}

// Phase is one ring sub-collective of a hierarchical collective (HierarchicalPhases): what
// every inner group (Inner true: inside one scale-up domain) or every outer group (the
// ranks with one member index, one per inner group: across domains, over the network) runs.
type Phase struct {
	Spec  Spec // a ring collective over Inner (inner phase) or Outer (outer phase) ranks
	Inner bool // runs inside the inner groups (the scale-up domain)
}

// HierarchicalPhases returns the phases of a hierarchical collective (spec's algorithm,
// resolved, must be Hierarchical), in order, each as the ring collective one group runs, with
// S = spec.Bytes, I x O the layout and c = spec.ChunkBytes:
//
//	all_reduce      inner reduce-scatter of S over I; outer all-reduce of ceil(S/I) over O; inner all-gather of S over I
//	reduce_scatter  inner reduce-scatter of S over I; outer reduce-scatter of ceil(S/I) over O
//	all_gather      outer all-gather of ceil(S/I) over O; inner all-gather of S over I
//
// Inner phases keep chunk c (one chunk per message, as the schedule's loops of I c bytes);
// outer ones take ceil(c/O), so their loops are c bytes, one segment of the schedule's loop.
// Channels are kept. Errors: an invalid spec, or one that does not resolve to Hierarchical.
func HierarchicalPhases(spec Spec) ([]Phase, error) {
	sp, err := spec.Resolve()
	if err != nil {
		return nil, err
	}
	if sp.Algo != Hierarchical {
		return nil, fieldError("algorithm", sp.Algo, "hierarchical phases need algorithm hierarchical")
	}
	I, O := sp.Inner, sp.Outer
	ring := func(op Collective, n int, bytes, chunk int64, inner bool) Phase {
		r := NewSpec(op, n, bytes)
		r.Algo, r.ChunkBytes, r.Channels = Ring, max(chunk, 1), sp.Channels
		return Phase{Spec: r, Inner: inner}
	}
	seg := (sp.Bytes + int64(I) - 1) / int64(I)
	oc := (sp.ChunkBytes + int64(O) - 1) / int64(O)
	switch sp.Op {
	case AllReduce:
		return []Phase{ring(ReduceScatter, I, sp.Bytes, sp.ChunkBytes, true), ring(AllReduce, O, seg, oc, false), ring(AllGather, I, sp.Bytes, sp.ChunkBytes, true)}, nil
	case ReduceScatter:
		return []Phase{ring(ReduceScatter, I, sp.Bytes, sp.ChunkBytes, true), ring(ReduceScatter, O, seg, oc, false)}, nil
	default: // AllGather (Validate admits no other)
		return []Phase{ring(AllGather, O, seg, oc, false), ring(AllGather, I, sp.Bytes, sp.ChunkBytes, true)}, nil
	}
}

// AlphaBetaScaleUp is AlphaBeta with two networks: a hierarchical collective's inner phases
// (HierarchicalPhases) are charged on up (the scale-up domain: NVLink's per-GPU rate and
// latency) and its outer phases on net (the per-GPU NIC), one after another, each phase its
// ring's AlphaBeta form, so for an all-reduce of S over I x O
//
//	2[(I-1) a_up + (I-1)/I S b_up] + 2(O-1) a_net + 2(O-1)/O (S/I) b_net   (+ reductions at each model's gamma)
//
// This is the structure of NCCL's tuning model (src/graph/tuning.cc, ncclTopoTuneModel: time
// = latency + bytes / bandwidth, a ring's latency its intra-node steps at the intra-node
// latency plus its inter-node steps at the network's) and what the flow-level engine
// computes for an uncontended hierarchical collective (barrier-separated phases, each ring's
// K steps of latency after its last byte). The chunked schedule on an executor hides most
// per-step latencies and overlaps phases of successive loops: PipelinedScaleUp is its form.
// Any other algorithm is AlphaBeta(spec, net). Errors: an invalid spec or model.
func AlphaBetaScaleUp(spec Spec, up, net Model) (sim.Time, error) {
	return scaleUpForm(spec, up, net, AlphaBeta)
}

// PipelinedScaleUp is AlphaBetaScaleUp with each phase's Pipelined form (the chunked ring's
// max(K(a + c b) + (P-1) c b, W b + a)) instead of its AlphaBeta form: the time of the
// schedule Build makes on an Ideal network per phase, the phases one after another (the
// executor can still overlap phases of successive loops). Any other algorithm is
// Pipelined(spec, net). Errors: an invalid spec or model, reductions that are not free.
func PipelinedScaleUp(spec Spec, up, net Model) (sim.Time, error) {
	return scaleUpForm(spec, up, net, Pipelined)
}

// scaleUpForm sums form over a hierarchical spec's phases, inner ones on up and outer ones on
// net; any other algorithm is form(spec, net).
func scaleUpForm(spec Spec, up, net Model, form func(Spec, Model) (sim.Time, error)) (sim.Time, error) {
	sp, err := spec.Resolve()
	if err != nil {
		return 0, err
	}
	if sp.Algo != Hierarchical {
		return form(sp, net)
	}
	if err := up.check(); err != nil {
		return 0, err
	}
	if err := net.check(); err != nil {
		return 0, err
	}
	phases, err := HierarchicalPhases(sp)
	if err != nil {
		return 0, err
	}
	var t sim.Time
	for _, ph := range phases {
		m := net
		if ph.Inner {
			m = up
		}
		d, err := form(ph.Spec, m)
		if err != nil {
			return 0, err
		}
		t += d
	}
	return t, nil
}
