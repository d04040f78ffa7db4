package collective

import (
	"fmt"
	"math/bits"
	"strings"
)

// Collective names an operation: what the ranks compute, independent of how (Algorithm).
// Semantics follow NCCL (docs.nvidia.com/deeplearning/nccl, "Collective Operations").
type Collective uint8

// Collectives. The size S (Spec.Bytes) means, per operation (nccl-tests convention,
// doc/PERFORMANCE.md):
//   - AllReduce: the buffer every rank holds, S bytes in and S bytes out.
//   - ReduceScatter: the total input buffer; each rank ends with its S/n segment reduced.
//   - AllGather: the total output buffer; each rank contributes its S/n segment.
//   - Broadcast, Reduce: the root's buffer.
//   - AllToAll: the bytes each rank sends, its own share included (S/n to every rank); with a
//     Matrix, the largest row sum.
//   - SendRecv: the message from Root to Peer; with Peer == ShiftPeer, the message every
//     rank sends to the next (rank r to r+1 mod n, receiving from r-1), as nccl-tests'
//     sendrecv_perf posts it (src/sendrecv.cu: sendPeer = (rank+1)%nranks).
const (
	AllReduce Collective = iota
	ReduceScatter
	AllGather
	Broadcast
	Reduce
	AllToAll
	SendRecv
	numCollectives
)

var collectiveNames = [numCollectives]string{
	"all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce", "all_to_all", "send_recv",
}

// String returns the snake_case name used in reports and scenarios ("all_reduce").
func (c Collective) String() string {
	if c < numCollectives {
		return collectiveNames[c]
	}
	return fmt.Sprintf("collective(%d)", c)
}

// Reduces reports whether the operation combines data (and so pays Exec's reduce cost and has
// a reduction operator, "sum", in reports).
func (c Collective) Reduces() bool { return c == AllReduce || c == ReduceScatter || c == Reduce }

// ParseCollective parses a name as String prints it; "allreduce" and "all-reduce" are accepted
// too. Errors name the input and list the valid names.
func ParseCollective(s string) (Collective, error) {
	k := normName(s)
	for i, n := range collectiveNames {
		if k == strings.ReplaceAll(n, "_", "") {
			return Collective(i), nil
		}
	}
	return 0, fmt.Errorf("collective: unknown operation %q; want one of %s", s, strings.Join(collectiveNames[:], ", "))
}

// Algorithm names how a collective is expanded into point-to-point steps.
type Algorithm uint8

// Algorithms. Which operation each supports is listed in the package documentation.
const (
	// Auto picks an algorithm from the operation, size and rank count by the rule in the package
	// documentation (AutoAlgorithm).
	Auto Algorithm = iota
	// Ring: NCCL's ring, chunked and pipelined, over Channels independent rings.
	Ring
	// Tree: NCCL's double binary tree (two complementary trees, each carrying half the data;
	// Sanders, Speck, Träff 2009), reduce up then broadcast down, pipelined by chunks.
	Tree
	// HalvingDoubling: Rabenseifner's all-reduce (recursive-halving reduce-scatter, then
	// recursive-doubling all-gather; Rabenseifner 2004, Thakur et al. 2005 §4.4).
	HalvingDoubling
	// RecursiveDoubling: log2 n steps each exchanging the whole buffer (Thakur et al. 2005 §4.4),
	// for small all-reduces.
	RecursiveDoubling
	// Pairwise: all-to-all in n-1 steps; at step k rank i sends to i+k and receives from i-k
	// (Thakur et al. 2005 §3.4).
	Pairwise
	// Hierarchical: 2-D ring of rings (layout Spec.Inner x Spec.Outer): for all-reduce,
	// reduce-scatter in inner groups, all-reduce across them, all-gather in inner groups; for
	// reduce-scatter the first two phases (with a reduce-scatter across); for all-gather the
	// last two (with an all-gather across).
	Hierarchical
	// Direct: one message (pipelined by chunks) from Root to Peer; the SendRecv algorithm.
	Direct
	// Grouped: all-to-all as NCCL runs it, one group of sends and receives
	// (ncclGroupStart, ncclSend/ncclRecv to every peer, ncclGroupEnd): every pair's chunks are
	// posted at once and progress independently, the chunks to one peer in order (NCCL User
	// Guide, "Point-to-point communication": calls within a group "can be seen as progressing
	// independently", calls to the same peer "are executed in order"). The all-to-all default.
	Grouped
	numAlgorithms
)

var algorithmNames = [numAlgorithms]string{
	"auto", "ring", "tree", "halving_doubling", "recursive_doubling", "pairwise", "hierarchical", "direct", "grouped",
}

// AlgorithmNames returns every algorithm's name as scenarios and reports spell it, "auto"
// first: the one list CLI flags, completions, errors and the schema take them from.
func AlgorithmNames() []string { return append([]string(nil), algorithmNames[:]...) }

// String returns the snake_case name used in reports and scenarios ("halving_doubling").
func (a Algorithm) String() string {
	if a < numAlgorithms {
		return algorithmNames[a]
	}
	return fmt.Sprintf("algorithm(%d)", a)
}

// ParseAlgorithm parses a name as String prints it ("halving-doubling" and "halvingdoubling"
// are accepted too).
func ParseAlgorithm(s string) (Algorithm, error) {
	k := normName(s)
	for i, n := range algorithmNames {
		if k == strings.ReplaceAll(n, "_", "") {
			return Algorithm(i), nil
		}
	}
	return 0, fmt.Errorf("collective: unknown algorithm %q; want one of %s", s, strings.Join(algorithmNames[:], ", "))
}

func normName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.NewReplacer("_", "", "-", "", " ", "").Replace(s)
}

// DefaultChunkBytes is the chunk size NewSpec fills in: 512 KiB, NCCL's default ring step
// (NCCL_BUFFSIZE 4 MiB / NCCL_STEPS 8).
const DefaultChunkBytes = 512 << 10

// Spec describes one collective to expand. Build validates it; NewSpec fills the defaults.
//
// Ranks are positions 0..Ranks-1 in a communicator (Comm maps them to fabric hosts), so one
// Schedule can run on any communicator of the same size.
type Spec struct {
	Op    Collective // what to compute
	Algo  Algorithm  // how; Auto picks by AutoAlgorithm
	Ranks int        // n >= 1
	Bytes int64      // S in bytes, >= 0; its meaning per operation is documented on Collective

	// Matrix, for AllToAll only (optional): Matrix[i][j] is the bytes rank i sends to rank j,
	// shape [Ranks][Ranks], entries >= 0; the diagonal is a local copy and costs nothing. When
	// set, Bytes must be 0 or the largest row sum; Build reports the largest row sum as Bytes.
	Matrix [][]int64

	Root int // Broadcast and Reduce: the root rank; SendRecv: the sender. In [0, Ranks).
	Peer int // SendRecv: the receiver, in [0, Ranks), != Root; or ShiftPeer (every rank sends to the next).

	// ChunkBytes (> 0) is the pipelining unit. Ring: loops of Ranks chunks, one chunk per
	// message. Tree, chain (broadcast, reduce), recursive doubling, pairwise, direct: one chunk
	// per piece and message. Halving-doubling: loops of p chunks (p the largest power of two
	// <= Ranks), messages of 1 to p/2 chunks. Hierarchical: loops of Inner chunks. Pieces of a
	// buffer are independent and pipeline. NCCL's ring step is 512 KiB (DefaultChunkBytes).
	ChunkBytes int64
	// Channels (>= 1) splits the data into that many independent instances of the algorithm
	// (NCCL channels; e.g. one per plane or NIC); Message.Channel tells the transport which.
	// The tree uses 2 x Channels logical channels (tree t of channel c is 2c+t). All share
	// each host's NIC on Ideal.
	Channels int

	// Inner x Outer is the Hierarchical layout: rank r is member r%Inner of inner group
	// r/Inner. Inner*Outer must equal Ranks; both 0 with Domain > 1 means Domain x
	// Ranks/Domain. Ignored by other algorithms.
	Inner, Outer int

	// Domain, when > 1, says the ranks are laid out in whole scale-up (NVLink) domains of
	// Domain ranks: ranks b*Domain..b*Domain+Domain-1 share one domain (see WholeDomains),
	// and Ranks is a multiple of Domain. Auto then picks Hierarchical with Inner = Domain for
	// large enough all-reduces (AutoAlgorithmDomain), and Hierarchical without Inner and Outer
	// takes Inner = Domain. 0 or 1: no domains.
	Domain int
}

// ShiftPeer as Spec.Peer makes a SendRecv a ring shift: every rank r sends Bytes to rank
// (r+1) mod Ranks at once (Root is then ignored and must be 0), which is what nccl-tests'
// sendrecv_perf measures; busbw = algbw as for one pair.
const ShiftPeer = -1

// NewSpec returns a Spec for op over n ranks of S bytes with the defaults: Algo Auto,
// ChunkBytes DefaultChunkBytes, one channel, root 0.
func NewSpec(op Collective, n int, bytes int64) Spec {
	return Spec{Op: op, Algo: Auto, Ranks: n, Bytes: bytes, ChunkBytes: DefaultChunkBytes, Channels: 1}
}

// fieldError is a validation error naming the field, the value and what is allowed.
func fieldError(field string, val any, allowed string) error {
	return fmt.Errorf("collective: %s = %v: %s", field, val, allowed)
}

// isPow2 reports whether n is a power of two (n >= 1).
func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// log2Floor returns floor(log2 n) for n >= 1.
func log2Floor(n int) int { return bits.Len(uint(n)) - 1 }

// supported lists the algorithms each operation accepts (Auto aside).
var supported = [numCollectives][]Algorithm{
	AllReduce:     {Ring, Tree, HalvingDoubling, RecursiveDoubling, Hierarchical},
	ReduceScatter: {Ring, HalvingDoubling, Hierarchical},
	AllGather:     {Ring, HalvingDoubling, Hierarchical},
	Broadcast:     {Ring},
	Reduce:        {Ring},
	AllToAll:      {Grouped, Pairwise},
	SendRecv:      {Direct},
}

// Validate checks s and returns the first problem, naming the field, the bad value and what
// is allowed. Auto is resolved by Resolve, not here.
func (s Spec) Validate() error {
	if s.Op >= numCollectives {
		return fieldError("op", s.Op, "want one of "+strings.Join(collectiveNames[:], ", "))
	}
	if s.Algo >= numAlgorithms {
		return fieldError("algorithm", s.Algo, "want one of "+strings.Join(algorithmNames[:], ", "))
	}
	if s.Ranks < 1 {
		return fieldError("ranks", s.Ranks, "must be >= 1")
	}
	if s.Ranks > 1<<24 {
		return fieldError("ranks", s.Ranks, "must be <= 16777216")
	}
	if s.Bytes < 0 {
		return fieldError("bytes", s.Bytes, "must be >= 0")
	}
	if s.ChunkBytes <= 0 {
		return fieldError("chunk_bytes", s.ChunkBytes, fmt.Sprintf("must be > 0 (NCCL's ring step is %d)", DefaultChunkBytes))
	}
	if s.Channels < 1 || s.Channels > 1024 {
		return fieldError("channels", s.Channels, "must be in [1, 1024]")
	}
	if s.Algo != Auto {
		ok := false
		for _, a := range supported[s.Op] {
			ok = ok || a == s.Algo
		}
		if !ok {
			names := make([]string, 0, len(supported[s.Op]))
			for _, a := range supported[s.Op] {
				names = append(names, a.String())
			}
			return fieldError("algorithm", s.Algo, fmt.Sprintf("%s supports auto, %s", s.Op, strings.Join(names, ", ")))
		}
	}
	switch s.Op {
	case Broadcast, Reduce:
		if s.Root < 0 || s.Root >= s.Ranks {
			return fieldError("root", s.Root, fmt.Sprintf("must be a rank in [0, %d)", s.Ranks))
		}
	case SendRecv:
		if s.Ranks < 2 {
			return fieldError("ranks", s.Ranks, "send_recv needs >= 2 ranks")
		}
		if s.Root < 0 || s.Root >= s.Ranks {
			return fieldError("root", s.Root, fmt.Sprintf("the sender must be a rank in [0, %d)", s.Ranks))
		}
		if s.Peer == ShiftPeer {
			if s.Root != 0 {
				return fieldError("root", s.Root, fmt.Sprintf("must be 0 with peer %d (every rank sends to the next)", ShiftPeer))
			}
			break
		}
		if s.Peer < 0 || s.Peer >= s.Ranks || s.Peer == s.Root {
			return fieldError("peer", s.Peer, fmt.Sprintf("the receiver must be a rank in [0, %d) other than root %d, or %d (every rank sends to the next)", s.Ranks, s.Root, ShiftPeer))
		}
	}
	if s.Matrix != nil {
		if s.Op != AllToAll {
			return fieldError("matrix", "set", "only all_to_all takes a matrix")
		}
		if len(s.Matrix) != s.Ranks {
			return fieldError("matrix", fmt.Sprintf("%d rows", len(s.Matrix)), fmt.Sprintf("want shape [%d][%d]", s.Ranks, s.Ranks))
		}
		var most int64
		for i, row := range s.Matrix {
			if len(row) != s.Ranks {
				return fieldError(fmt.Sprintf("matrix[%d]", i), fmt.Sprintf("%d columns", len(row)), fmt.Sprintf("want shape [%d][%d]", s.Ranks, s.Ranks))
			}
			var sum int64
			for j, v := range row {
				if v < 0 {
					return fieldError(fmt.Sprintf("matrix[%d][%d]", i, j), v, "must be >= 0")
				}
				if sum+v < sum {
					return fieldError(fmt.Sprintf("matrix[%d]", i), "row sum", "overflows int64")
				}
				sum += v
			}
			most = max(most, sum)
		}
		if s.Bytes != 0 && s.Bytes != most {
			return fieldError("bytes", s.Bytes, fmt.Sprintf("must be 0 or the largest matrix row sum (%d) when matrix is set", most))
		}
	}
	if s.Domain < 0 || s.Domain > 1 && s.Ranks%s.Domain != 0 {
		return fieldError("domain", s.Domain, fmt.Sprintf("must be 0 (none) or a scale-up domain size dividing ranks = %d", s.Ranks))
	}
	algo := s.Algo
	if algo == Auto {
		algo = AutoAlgorithmDomain(s.Op, s.Ranks, s.Bytes, s.Domain)
	}
	if algo == HalvingDoubling && s.Op != AllReduce && !isPow2(s.Ranks) {
		return fieldError("ranks", s.Ranks, fmt.Sprintf("halving_doubling %s needs a power-of-two rank count; use ring", s.Op))
	}
	if algo == Hierarchical {
		in, out := s.layout()
		if in < 1 || out < 1 || in > s.Ranks || out > s.Ranks || in*out != s.Ranks {
			return fieldError("inner x outer", fmt.Sprintf("%dx%d", s.Inner, s.Outer), fmt.Sprintf("must be >= 1 each with inner*outer = ranks = %d", s.Ranks))
		}
	}
	return nil
}

// layout returns the Hierarchical layout: Inner x Outer, or Domain x Ranks/Domain when both
// are 0 and Domain > 1.
func (s Spec) layout() (inner, outer int) {
	if s.Inner == 0 && s.Outer == 0 && s.Domain > 1 {
		return s.Domain, s.Ranks / s.Domain
	}
	return s.Inner, s.Outer
}

// Auto-selection thresholds (see AutoAlgorithm).
const (
	// AutoRecursiveDoublingMax is the largest all-reduce Auto runs with recursive doubling.
	AutoRecursiveDoublingMax = 64 << 10
	// AutoTreePerRankMax: Auto uses the tree for all-reduces with S/n below this (the ring's
	// per-rank block is then under one default chunk, so the ring cannot pipeline and pays
	// 2(n-1) latencies where the tree pays about 2 log2 n).
	AutoTreePerRankMax = DefaultChunkBytes
)

// AutoAlgorithm is the rule Auto follows, a simplification of NCCL's tuner (latency-bound
// sizes take the algorithm with the fewest sequential steps, bandwidth-bound sizes the ring):
//
//   - n == 1: Ring (no messages).
//   - AllReduce: S <= 64 KiB: RecursiveDoubling (log2 n steps); S/n < 512 KiB:
//     HalvingDoubling when n is a power of two (2 log2 n steps and bandwidth-optimal), else
//     Tree (about 2 log2 n steps); otherwise Ring (bandwidth-optimal, 2(n-1)/n S per rank,
//     and the gentlest on a real fabric: each rank talks to one neighbour).
//
// Halving-doubling takes the middle band because on the per-host FIFO NIC model the double
// binary tree, whose ranks send and receive 2S each, reaches only about 75% of the link rate
// (Ideal): at 64 ranks and 1 MiB it takes 291 us against halving-doubling's 101 us.
//   - ReduceScatter, AllGather, Broadcast, Reduce: Ring.
//   - AllToAll: Grouped (NCCL's all-to-all). SendRecv: Direct.
func AutoAlgorithm(op Collective, n int, bytes int64) Algorithm {
	switch {
	case op == AllToAll:
		return Grouped
	case op == SendRecv:
		return Direct
	case n <= 1 || op != AllReduce:
		return Ring
	case bytes <= AutoRecursiveDoublingMax:
		return RecursiveDoubling
	case bytes/int64(n) < AutoTreePerRankMax && isPow2(n):
		return HalvingDoubling
	case bytes/int64(n) < AutoTreePerRankMax:
		return Tree
	default:
		return Ring
	}
}

// AutoAlgorithmDomain is AutoAlgorithm for ranks laid out in whole scale-up domains of
// domain ranks (Spec.Domain): an all-reduce over O = n/domain >= 2 whole domains, above the
// recursive-doubling band, with each domain's share S/O >= 512 KiB (AutoTreePerRankMax) runs
// Hierarchical with Inner = domain: ring reduce-scatter inside each domain, ring all-reduce
// across domains among equal members, ring all-gather inside each domain (the hierarchical
// all-reduce of Jia et al., "Highly Scalable Deep Learning Training System with
// Mixed-Precision", 2018). Each GPU then sends 2(O-1)/O S/domain over the network instead of
// the ring's 2(n-1)/n S, the rest over the far faster scale-up links, and pays 2(O-1) network
// latencies instead of 2(n-1): so the band where it beats halving-doubling and the tree starts
// domain times lower than the ring's (S/O rather than S/n >= 512 KiB). Anything else, and
// domain <= 1 or n not a multiple of it, is AutoAlgorithm.
func AutoAlgorithmDomain(op Collective, n int, bytes int64, domain int) Algorithm {
	if op == AllReduce && domain > 1 && n%domain == 0 && n/domain >= 2 &&
		bytes > AutoRecursiveDoublingMax && bytes/int64(n/domain) >= AutoTreePerRankMax {
		return Hierarchical
	}
	return AutoAlgorithm(op, n, bytes)
}

// WholeDomains reports whether a communicator whose rank r runs on hosts[r] is laid out in
// whole scale-up domains of g hosts (hosts h and h' share one when h/g == h'/g), as
// Spec.Domain requires: g > 1, at least two domains, and every block of g consecutive ranks
// (b*g..b*g+g-1) on the g hosts of one domain.
func WholeDomains(hosts []int, g int) bool {
	n := len(hosts)
	if g <= 1 || n < 2*g || n%g != 0 {
		return false
	}
	for b := 0; b < n; b += g {
		d := hosts[b] / g
		for _, h := range hosts[b+1 : b+g] {
			if h/g != d {
				return false
			}
		}
	}
	return true // g distinct hosts of one domain are all of it
}

// Resolve validates s and returns it with Auto replaced by the algorithm AutoAlgorithmDomain
// picks, and a Hierarchical layout taken from Domain filled in.
func (s Spec) Resolve() (Spec, error) {
	if err := s.Validate(); err != nil {
		return s, err
	}
	if s.Algo == Auto {
		s.Algo = AutoAlgorithmDomain(s.Op, s.Ranks, s.Bytes, s.Domain)
	}
	if s.Algo == Hierarchical {
		s.Inner, s.Outer = s.layout()
	}
	return s, nil
}
