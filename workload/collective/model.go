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
//	pairwise all-to-all       sum over steps k=1..n-1 of (a + max_i M[i][i+k] b)  [Thakur §3.4]
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
		t = 2*(I-1)*a + 2*(I-1)/I*S*b + (I-1)/I*S*g
		if O > 1 {
			t += 2*(O-1)*a + 2*(O-1)/O*(S/I)*b + (O-1)/O*(S/I)*g
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
	case Direct:
		t = a + S*b
	default:
		return 0, fieldError("algorithm", sp.Algo, "no closed form")
	}
	return sim.FromSeconds(t), nil
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
// reduce-scatter and all-gather, ring (chain) broadcast and reduce, pairwise all-to-all and
// send/recv. Let K be the sequential steps a chunk takes (ring AR 2(n-1), RS and AG n-1,
// chain n-1, pairwise n-1, send/recv 1), P the chunks each rank sends per step (loops summed
// over channels; for pairwise, chunks per pair), c the largest message and W the bytes each
// rank sends in total. Then
//
//	T = max( K(a + c b) + (P-1) c b ,  W b + a )
//
// The first term is the latency-bound pipeline (a chunk crosses K hops, each paying a plus its
// own serialisation, and the last of P chunks trails by (P-1) c b); the second is the
// bandwidth-bound case (the NIC never idles; the last message then needs a more). On Ideal it
// is exact in both regimes when every chunk has the same size and steps do not contend at a
// receiver (rings, chains, send/recv); for pairwise it is approximate. For P = 1 it reduces to
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
	case sp.Algo == Pairwise:
		K = n - 1
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
	default:
		return 0, fieldError("algorithm", sp.Algo, fmt.Sprintf("no pipelined closed form for %s; use AlphaBeta", sp.Op))
	}
	cb := float64(c) * b
	lat := float64(K)*(a+cb) + float64(P-1)*cb
	bw := float64(W)*b + a
	return sim.FromSeconds(math.Max(lat, bw)), nil
}
