package collective

import (
	"fmt"
	"math"
)

// OpKind is what one schedule operation does.
type OpKind uint8

// Operation kinds.
const (
	// OpSend sends Bytes of blocks [Block, Block+NBlk) to rank Peer. It may start when its
	// dependencies are done, and is done when the transport reports the bytes delivered.
	OpSend OpKind = iota
	// OpRecv receives the matching send (Match) from rank Peer. It is done when the bytes have
	// arrived and its own dependencies (usually none) are done.
	OpRecv
	// OpReduce folds the data of the receive Match into blocks [Block, Block+NBlk): it costs
	// Bytes/ExecConfig.ReduceBytesPerSec on the rank's GPU once its dependencies are done.
	OpReduce
)

var opKindNames = [...]string{"send", "recv", "reduce"}

// String returns "send", "recv" or "reduce".
func (k OpKind) String() string {
	if int(k) < len(opKindNames) {
		return opKindNames[k]
	}
	return fmt.Sprintf("opkind(%d)", k)
}

// FlagScratch marks a receive that lands in a scratch buffer for an OpReduce to fold in; a
// receive without it overwrites its blocks (a copy).
const FlagScratch uint8 = 1

// Op is one point-to-point step of a schedule, 28 bytes. Rank and Peer are positions in the
// communicator; Block/NBlk name the data it moves (see Schedule.BlockBytes); Step is the
// algorithm step, which also serves as the message tag (a send and its receive carry the same
// Step). Indices are int32: a schedule holds at most 2^31-1 operations.
type Op struct {
	Kind  OpKind // send, recv or reduce
	Flags uint8  // FlagScratch on receives that feed a reduce
	Rank  int32  // rank executing the op
	Peer  int32  // Send: destination rank; Recv: source rank; Reduce: -1
	Match int32  // Send: its Recv; Recv: its Send; Reduce: the Recv whose data it folds in
	Block int32  // first block the op reads (Send) or writes (Recv, Reduce)
	NBlk  int32  // number of consecutive blocks
	Step  int32  // algorithm step, 0-based; the tag matching a send to its receive
}

// Schedule is a collective expanded into per-rank point-to-point operations with
// dependencies (a DAG): op i may start once every op in Deps(i) is done. Each rank's ops appear
// in its program order. A Schedule is immutable once built and may be launched any number of
// times, on any communicator of Ranks() ranks, concurrently.
//
// Data is tracked in blocks: the buffers are cut into Blocks() logical pieces, each with a byte
// size, the chunk and channel it belongs to, and (for reduce-scatter, all-gather, broadcast,
// reduce, all-to-all and send/recv) the rank that owns it and where it must end up. Tests use
// them to check a schedule symbolically; Executor uses them for byte counts and diagnostics.
//
// Storage is compact: ops in one slice, dependencies and successors in CSR form (int32
// offsets), block tables as slices; no maps and no per-op allocation.
type Schedule struct {
	spec  Spec
	ops   []Op
	steps int32

	depOff, deps  []int32 // deps of op i: deps[depOff[i]:depOff[i+1]]
	succOff, succ []int32 // ops that depend on op i: succ[succOff[i]:succOff[i+1]]
	roots         []int32 // ops without dependencies, in index order

	blkOff   []int64 // block b covers bytes blkOff[b]..blkOff[b+1] of the logical layout
	blkChunk []int32 // chunk (pipeline piece) index of block b within its channel
	blkChan  []int32 // channel of block b
	blkOwner []int32 // owner rank of block b, or -1 (all-reduce: every rank)
	blkDest  []int32 // destination rank (all-to-all, send/recv), or -1
}

// Spec returns the spec the schedule was built from, with Auto resolved (and, for an
// all-to-all matrix, Bytes set to the largest row sum).
func (s *Schedule) Spec() Spec { return s.spec }

// Ranks returns the number of ranks.
func (s *Schedule) Ranks() int { return s.spec.Ranks }

// Len returns the number of operations.
func (s *Schedule) Len() int { return len(s.ops) }

// Ops returns the operations; index i is op i. The slice is shared: do not modify it.
func (s *Schedule) Ops() []Op { return s.ops }

// Deps returns the ops op i waits for. The slice is shared: do not modify it.
func (s *Schedule) Deps(i int) []int32 { return s.deps[s.depOff[i]:s.depOff[i+1]] }

// Succs returns the ops that wait for op i. The slice is shared: do not modify it.
func (s *Schedule) Succs(i int) []int32 { return s.succ[s.succOff[i]:s.succOff[i+1]] }

// Steps returns the number of algorithm steps (the largest Op.Step + 1; 0 with no ops).
func (s *Schedule) Steps() int { return int(s.steps) }

// Bytes returns the payload bytes op i moves (Send, Recv) or reduces (Reduce).
func (s *Schedule) Bytes(i int) int64 {
	o := &s.ops[i]
	return s.blkOff[o.Block+o.NBlk] - s.blkOff[o.Block]
}

// Blocks returns the number of data blocks.
func (s *Schedule) Blocks() int { return len(s.blkChunk) }

// BlockBytes returns the size of block b in bytes.
func (s *Schedule) BlockBytes(b int) int64 { return s.blkOff[b+1] - s.blkOff[b] }

// BlockChunk returns the chunk (pipeline piece) index of block b within its channel.
func (s *Schedule) BlockChunk(b int) int { return int(s.blkChunk[b]) }

// BlockChannel returns the channel of block b.
func (s *Schedule) BlockChannel(b int) int { return int(s.blkChan[b]) }

// BlockOwner returns the rank that owns block b: reduce-scatter: the rank that must end with
// it reduced; all-gather: the rank that contributes it; broadcast and reduce: the root;
// all-to-all and send/recv: the sender. -1 for all-reduce (every rank holds every block).
func (s *Schedule) BlockOwner(b int) int { return int(s.blkOwner[b]) }

// BlockDest returns the rank block b must reach in all-to-all and send/recv, else -1.
func (s *Schedule) BlockDest(b int) int {
	if s.blkDest == nil {
		return -1
	}
	return int(s.blkDest[b])
}

// SentBytes returns the bytes rank r sends in the whole schedule.
func (s *Schedule) SentBytes(r int) int64 {
	var t int64
	for i := range s.ops {
		if s.ops[i].Kind == OpSend && int(s.ops[i].Rank) == r {
			t += s.Bytes(i)
		}
	}
	return t
}

// DomainSplit is what a schedule's ranks send inside their scale-up domain and across the
// fabric (payload bytes): the most one rank sends each way (the two may be different ranks)
// and the totals over every rank.
type DomainSplit struct {
	ScaleUpMax, FabricMax     int64 // the most one rank sends to its own domain, to other domains
	ScaleUpTotal, FabricTotal int64 // summed over the ranks
}

// ScaleUpFraction returns ScaleUpTotal over all bytes sent, 0 when nothing is sent.
func (d DomainSplit) ScaleUpFraction() float64 {
	if all := d.ScaleUpTotal + d.FabricTotal; all > 0 {
		return float64(d.ScaleUpTotal) / float64(all)
	}
	return 0
}

// DomainBytes splits every send of the schedule by where it travels when rank r runs on host
// comm.Host(r) and hosts h and g share a scale-up domain when h/domain == g/domain (the split
// training.SplitTransport makes): inside the domain or over the fabric. Errors: domain < 1, a
// communicator smaller than the schedule.
func (s *Schedule) DomainBytes(comm Comm, domain int) (DomainSplit, error) {
	var d DomainSplit
	if domain < 1 {
		return d, fieldError("domain", domain, "must be >= 1 host per scale-up domain")
	}
	n := s.spec.Ranks
	if comm.Size() < n {
		return d, fieldError("comm", comm.Size(), fmt.Sprintf("must hold the schedule's %d ranks", n))
	}
	up, fab := make([]int64, n), make([]int64, n)
	for i := range s.ops {
		o := &s.ops[i]
		if o.Kind != OpSend {
			continue
		}
		b := s.Bytes(i)
		if comm.Host(int(o.Rank))/domain == comm.Host(int(o.Peer))/domain {
			up[o.Rank] += b
		} else {
			fab[o.Rank] += b
		}
	}
	for r := range n {
		d.ScaleUpMax, d.FabricMax = max(d.ScaleUpMax, up[r]), max(d.FabricMax, fab[r])
		d.ScaleUpTotal += up[r]
		d.FabricTotal += fab[r]
	}
	return d, nil
}

// Describe returns a one-line description of op i for diagnostics:
// "send to rank 4, chunk 3 step 7 (524288 B)".
func (s *Schedule) Describe(i int) string { return s.describe(i, nil) }

// describe is Describe, naming the peer's host when comm is given.
func (s *Schedule) describe(i int, comm *Comm) string {
	o := &s.ops[i]
	ch := ""
	if s.spec.Channels > 1 || s.spec.Algo == Tree {
		ch = fmt.Sprintf(" channel %d,", s.blkChan[o.Block])
	}
	peer := fmt.Sprintf("rank %d", o.Peer)
	if comm != nil && o.Peer >= 0 {
		peer += fmt.Sprintf(" (host %d)", comm.Host(int(o.Peer)))
	}
	switch o.Kind {
	case OpSend:
		return fmt.Sprintf("send to %s,%s chunk %d step %d (%d B)", peer, ch, s.blkChunk[o.Block], o.Step, s.Bytes(i))
	case OpRecv:
		return fmt.Sprintf("recv from %s,%s chunk %d step %d (%d B)", peer, ch, s.blkChunk[o.Block], o.Step, s.Bytes(i))
	default:
		return fmt.Sprintf("reduce,%s chunk %d step %d (%d B)", ch, s.blkChunk[o.Block], o.Step, s.Bytes(i))
	}
}

// maxOps bounds a schedule so int32 indices cannot overflow.
const maxOps = math.MaxInt32 - 4

// builder accumulates a Schedule. Algorithms describe each rank's program in order through
// xfer and reduce; the builder derives the dependencies from the data they touch, per unit (a
// set of blocks processed independently of all others, e.g. one chunk of one channel):
//   - a send depends on the last op that wrote any of its blocks on its rank (read after write);
//   - a copy receive depends on the last writer (write after write) and on every send still
//     reading those blocks (write after read: the buffer must not change under a send);
//   - a reduce depends on its receive, the last writer and the pending readers.
//
// Scratch receives land in a per-message buffer and depend on nothing.
type builder struct {
	s  *Schedule
	n  int32
	ch int32 // channel of blocks being added

	// Dependency tracker for the current unit: blocks [base, base+nb), indexed r*nb + (b-base).
	base, nb int32
	wr       []int32 // last writer op, -1 for the rank's input
	rdHead   []int32 // head of the list of sends reading the block since its last write, -1
	rdPool   []rdNode
	dbuf     []int32 // dependency scratch
}

type rdNode struct{ op, next int32 }

func newBuilder(spec Spec, estOps int) *builder {
	s := &Schedule{spec: spec}
	if estOps > 0 {
		s.ops = make([]Op, 0, estOps)
		s.depOff = make([]int32, 1, estOps+1)
		s.deps = make([]int32, 0, estOps+estOps/2)
	} else {
		s.depOff = []int32{0}
	}
	s.blkOff = []int64{0}
	return &builder{s: s, n: int32(spec.Ranks)}
}

// addBlock appends a block of bytes and returns its index.
func (b *builder) addBlock(bytes int64, chunk, owner, dest int32) int32 {
	s := b.s
	id := int32(len(s.blkChunk))
	s.blkOff = append(s.blkOff, s.blkOff[len(s.blkOff)-1]+bytes)
	s.blkChunk = append(s.blkChunk, chunk)
	s.blkChan = append(s.blkChan, b.ch)
	s.blkOwner = append(s.blkOwner, owner)
	if dest >= 0 || s.blkDest != nil {
		if s.blkDest == nil {
			s.blkDest = make([]int32, id, cap(s.blkChunk))
			for i := range s.blkDest {
				s.blkDest[i] = -1
			}
		}
		s.blkDest = append(s.blkDest, dest)
	}
	return id
}

// addSplit appends k blocks splitting total bytes as evenly as possible (the first total%k
// get one byte more) and returns the first index. owner(i) gives block i's owner.
func (b *builder) addSplit(total int64, k int, chunk int32, owner func(i int) int32) int32 {
	first := int32(len(b.s.blkChunk))
	for i := 0; i < k; i++ {
		b.addBlock(split(total, k, i), chunk, owner(i), -1)
	}
	return first
}

// split returns part i of total bytes cut into k near-equal parts.
func split(total int64, k, i int) int64 {
	q, r := total/int64(k), total%int64(k)
	if int64(i) < r {
		return q + 1
	}
	return q
}

// ceilDiv returns ceil(a/b) for a >= 0, b > 0, at least 1.
func ceilDiv(a, b int64) int {
	if a <= 0 {
		return 1
	}
	return int((a-1)/b + 1)
}

func noOwner(int) int32 { return -1 }

// unit starts dependency tracking for blocks [base, base+nb): every rank holds its input.
func (b *builder) unit(base, nb int32) {
	b.base, b.nb = base, nb
	m := int(b.n) * int(nb)
	if cap(b.wr) < m {
		b.wr = make([]int32, m)
		b.rdHead = make([]int32, m)
	}
	b.wr, b.rdHead = b.wr[:m], b.rdHead[:m]
	for i := range b.wr {
		b.wr[i] = -1
		b.rdHead[i] = -1
	}
	b.rdPool = b.rdPool[:0]
}

// addDep appends d to dbuf unless present.
func (b *builder) addDep(d int32) {
	if d < 0 {
		return
	}
	for _, x := range b.dbuf {
		if x == d {
			return
		}
	}
	b.dbuf = append(b.dbuf, d)
}

// push appends op with the dependencies in dbuf and returns its index.
func (b *builder) push(o Op) int32 {
	s := b.s
	id := int32(len(s.ops))
	s.ops = append(s.ops, o)
	s.deps = append(s.deps, b.dbuf...)
	s.depOff = append(s.depOff, int32(len(s.deps)))
	if o.Step >= s.steps {
		s.steps = o.Step + 1
	}
	b.dbuf = b.dbuf[:0]
	return id
}

// readDeps adds the last writers of rank r's blocks [blk, blk+k) to dbuf.
func (b *builder) readDeps(r, blk, k int32) {
	i0 := int(r)*int(b.nb) + int(blk-b.base)
	for i := i0; i < i0+int(k); i++ {
		b.addDep(b.wr[i])
	}
}

// writeDeps adds writers and pending readers of rank r's blocks to dbuf.
func (b *builder) writeDeps(r, blk, k int32) {
	i0 := int(r)*int(b.nb) + int(blk-b.base)
	for i := i0; i < i0+int(k); i++ {
		b.addDep(b.wr[i])
		for p := b.rdHead[i]; p >= 0; p = b.rdPool[p].next {
			b.addDep(b.rdPool[p].op)
		}
	}
}

// wrote records op as the last writer of rank r's blocks and clears their readers.
func (b *builder) wrote(r, blk, k, op int32) {
	i0 := int(r)*int(b.nb) + int(blk-b.base)
	for i := i0; i < i0+int(k); i++ {
		b.wr[i] = op
		b.rdHead[i] = -1
	}
}

// xfer emits a send of blocks [blk, blk+k) from src to dst and its receive (into scratch when
// scratch is set, else overwriting the same blocks at dst), at step. It returns the receive.
func (b *builder) xfer(src, dst, blk, k, step int32, scratch bool) int32 {
	b.readDeps(src, blk, k)
	send := int32(len(b.s.ops))
	recv := send + 1
	b.push(Op{Kind: OpSend, Rank: src, Peer: dst, Match: recv, Block: blk, NBlk: k, Step: step})
	i0 := int(src)*int(b.nb) + int(blk-b.base)
	for i := i0; i < i0+int(k); i++ {
		b.rdPool = append(b.rdPool, rdNode{op: send, next: b.rdHead[i]})
		b.rdHead[i] = int32(len(b.rdPool) - 1)
	}
	var fl uint8
	if scratch {
		fl = FlagScratch
	} else {
		b.writeDeps(dst, blk, k)
	}
	b.push(Op{Kind: OpRecv, Flags: fl, Rank: dst, Peer: src, Match: send, Block: blk, NBlk: k, Step: step})
	if !scratch {
		b.wrote(dst, blk, k, recv)
	}
	return recv
}

// reduce emits the fold of scratch receive recv into rank r's blocks [blk, blk+k).
func (b *builder) reduce(r, recv, blk, k, step int32) int32 {
	b.addDep(recv)
	b.writeDeps(r, blk, k)
	id := b.push(Op{Kind: OpReduce, Rank: r, Peer: -1, Match: recv, Block: blk, NBlk: k, Step: step})
	b.wrote(r, blk, k, id)
	return id
}

// rawXfer emits a send/receive pair with explicit send dependencies (no tracking), for
// all-to-all and send/recv, and returns the send.
func (b *builder) rawXfer(src, dst, blk, step int32, sendDeps ...int32) int32 {
	for _, d := range sendDeps {
		b.addDep(d)
	}
	send := int32(len(b.s.ops))
	b.push(Op{Kind: OpSend, Rank: src, Peer: dst, Match: send + 1, Block: blk, NBlk: 1, Step: step})
	b.push(Op{Kind: OpRecv, Rank: dst, Peer: src, Match: send, Block: blk, NBlk: 1, Step: step})
	return send
}

// finish computes the successor lists and roots and returns the schedule.
func (b *builder) finish() *Schedule {
	b.s.link()
	b.wr, b.rdHead, b.rdPool = nil, nil, nil
	return b.s
}

// link derives the successor CSR and the roots from the dependency CSR. Successor lists are
// in ascending op order.
func (s *Schedule) link() {
	n := len(s.ops)
	// Count into succOff[d], take inclusive prefix sums (succOff[d] = end of d's list), then
	// fill from the back, walking ops in descending order: each end pointer moves down to its
	// list's start, and no scratch array is needed.
	s.succOff = make([]int32, n+1)
	for _, d := range s.deps {
		s.succOff[d]++
	}
	for i := 1; i <= n; i++ {
		s.succOff[i] += s.succOff[i-1]
	}
	s.succ = make([]int32, len(s.deps))
	for i := n - 1; i >= 0; i-- {
		ds := s.deps[s.depOff[i]:s.depOff[i+1]]
		for k := len(ds) - 1; k >= 0; k-- {
			d := ds[k]
			s.succOff[d]--
			s.succ[s.succOff[d]] = int32(i)
		}
	}
	s.roots = s.roots[:0]
	for i := 0; i < n; i++ {
		if s.depOff[i] == s.depOff[i+1] {
			s.roots = append(s.roots, int32(i))
		}
	}
}
