package fabric

import (
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"github.com/lockstepsim/lockstep/sim"
)

// MaxClasses is the largest number of strict-priority data classes a queue may have.
const MaxClasses = 8

// DropReason says why a queue or switch discarded a packet.
type DropReason uint8

// Drop reasons. Every dropped packet is counted under exactly one.
const (
	DropQueueFull      DropReason = iota // drop-tail: the class queue had no room
	DropHeaderOverflow                   // trimmed header found the header queue full
	DropLinkDown                         // offered to, queued at or on the wire of a failed link
	DropNoRoute                          // no usable route: bad source route or no ECMP entry
	DropLoss                             // lost on the link: SetLoss, SetBER or SetEntropyLoss
	DropBlackhole                        // received by a switch that forwards nothing (SetBlackhole)
	DropHeadroom                         // PFC: a lossless ingress past XOFF + headroom (the pause came too late)
	NumDropReasons
)

var dropNames = [NumDropReasons]string{"queue_full", "header_overflow", "link_down", "no_route", "loss", "blackhole", "pfc_headroom"}

// String returns the reason's snake_case name, as used in summary.json keys.
func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropNames[r]
	}
	return fmt.Sprintf("drop(%d)", r)
}

// ECNConfig is RED-style ECN marking on one queue (RFC 3168; the DCQCN profile of Zhu et al.,
// SIGCOMM 2015 §4): an ECN-capable packet arriving to a class queue holding q bytes is marked CE
// with probability 0 below Kmin, Pmax x (q-Kmin)/(Kmax-Kmin) between, and 1 at or above Kmax.
// Packets without ECT are never marked.
type ECNConfig struct {
	Enabled bool     `yaml:"enabled"`
	Kmin    sim.Size `yaml:"kmin"` // bytes of queue where marking starts
	Kmax    sim.Size `yaml:"kmax"` // bytes of queue where marking reaches probability 1
	Pmax    float64  `yaml:"pmax"` // marking probability just below Kmax, in [0, 1]
}

// TrimConfig is packet trimming (UEC §4.1, NDP): a Trimmable data packet that would push its
// class queue above Threshold bytes (or above the queue limit) is cut to HeaderBytes and queued
// in the port's header queue, which the scheduler serves by weighted deficit round robin
// against the data classes with a bounded share, so headers overtake data without starving it.
type TrimConfig struct {
	Enabled bool `yaml:"enabled"`
	// Threshold is the class queue depth in bytes above which packets are trimmed rather than
	// queued; 0 means the queue limit.
	Threshold sim.Size `yaml:"threshold"`
	// HeaderLimit bounds the header queue in bytes; lockstep default 1 MiB (16,384 headers).
	// Trimming turns a burst into headers, one per packet, so the header queue must hold one
	// header for every packet of the largest burst a port takes: the first windows of an
	// incast (255 senders of 100 KB each give about 6,000 headers at the receiver's T0). A
	// header the queue cannot hold is a silent loss that only a timeout recovers; with 64 KiB
	// (1,024 headers) the 255 -> 1 incast lost 2,300 headers and waited out 230 ACK timeouts.
	// 1 MiB is a few percent of a current switch ASIC's shared buffer (tens of MiB and more),
	// which the header queue draws on.
	HeaderLimit sim.Size `yaml:"header_limit"`
	// HeaderShare is the share of the link the header queue gets by WDRR when data is also
	// waiting, in (0, 1); lockstep default 0.5. Headers being 64 B, this still lets every
	// header pass within one data packet's time.
	HeaderShare float64 `yaml:"header_share"`
}

// QueueConfig configures one egress port's queues.
type QueueConfig struct {
	// Classes is the number of strict-priority data classes (class 0 first); 1..MaxClasses,
	// default 2 (0: control such as ACKs and NACKs, 1: data).
	Classes int `yaml:"classes"`
	// Limit is the drop-tail limit of each class queue in bytes (default 1 MiB).
	Limit sim.Size   `yaml:"limit"`
	ECN   ECNConfig  `yaml:"ecn"`
	Trim  TrimConfig `yaml:"trim"`
}

// Lockstep defaults for QueueConfig fields left zero.
const (
	DefaultClasses     = 2
	DefaultQueueLimit  = 1 << 20
	DefaultHeaderLimit = 1 << 20
	DefaultHeaderShare = 0.5
	// MaxQueueLimit bounds a queue's limit: 1 GiB is beyond any switch buffer (tens to hundreds
	// of MiB per ASIC) and keeps a runaway incast from exhausting memory.
	MaxQueueLimit = 1 << 30
)

// WithDefaults returns c with zero fields replaced by the lockstep defaults.
func (c QueueConfig) WithDefaults() QueueConfig {
	if c.Classes == 0 {
		c.Classes = DefaultClasses
	}
	if c.Limit == 0 {
		c.Limit = DefaultQueueLimit
	}
	if c.Trim.HeaderLimit == 0 {
		c.Trim.HeaderLimit = DefaultHeaderLimit
	}
	if c.Trim.HeaderShare == 0 {
		c.Trim.HeaderShare = DefaultHeaderShare
	}
	return c
}

// Validate reports the first invalid field, naming it as in YAML (prefix is the path of the
// config, e.g. "switch.queue").
func (c QueueConfig) Validate(prefix string) error {
	if c.Classes < 1 || c.Classes > MaxClasses {
		return fmt.Errorf("%s.classes: %d is out of range; allowed 1..%d", prefix, c.Classes, MaxClasses)
	}
	if c.Limit <= 0 || c.Limit > MaxQueueLimit {
		return fmt.Errorf("%s.limit: %v is out of range; allowed 1B..%v", prefix, c.Limit, sim.Size(MaxQueueLimit))
	}
	if c.ECN.Enabled {
		if !(c.ECN.Pmax >= 0 && c.ECN.Pmax <= 1) {
			return fmt.Errorf("%s.ecn.pmax: %v is out of range; allowed 0..1", prefix, c.ECN.Pmax)
		}
		if c.ECN.Kmin < 0 || c.ECN.Kmax <= c.ECN.Kmin {
			return fmt.Errorf("%s.ecn: kmin %v, kmax %v; want 0 <= kmin < kmax, both given (an ECN block written in a scenario is taken whole; a transport profile fills only one left out)", prefix, c.ECN.Kmin, c.ECN.Kmax)
		}
	}
	if c.Trim.Enabled {
		if c.Trim.Threshold < 0 {
			return fmt.Errorf("%s.trim.threshold: %v must be >= 0", prefix, c.Trim.Threshold)
		}
		if c.Trim.HeaderLimit < HeaderBytes || c.Trim.HeaderLimit > MaxQueueLimit {
			return fmt.Errorf("%s.trim.header_limit: %v is out of range; allowed %dB (one header)..%v", prefix, c.Trim.HeaderLimit, HeaderBytes, sim.Size(MaxQueueLimit))
		}
		if !(c.Trim.HeaderShare > 0 && c.Trim.HeaderShare < 1) {
			return fmt.Errorf("%s.trim.header_share: %v is out of range; allowed strictly between 0 and 1", prefix, c.Trim.HeaderShare)
		}
	}
	return nil
}

// QueueStats counts what one queue (a data class or the header queue) did. Bytes are wire
// bytes; depth is bytes queued, excluding the packet being serialised. Every packet accepted
// leaves by being sent or flushed: EnqPackets = TxPackets + Flushed + packets queued. Drops
// counts packets refused on arrival (queue_full, header_overflow, link_down on a down port),
// flushed (also link_down), and sent but lost on the link (link_down, loss).
type QueueStats struct {
	EnqPackets, EnqBytes int64                 // accepted into the queue (after any trim)
	TxPackets, TxBytes   int64                 // sent onto the link
	Drops                [NumDropReasons]int64 // packets discarded, by reason
	DropBytes            int64                 // bytes of the packets discarded
	Flushed              int64                 // queued, then discarded unsent: the link went down
	Trims                int64                 // packets cut to a header on arrival here
	CEMarks              int64                 // packets marked CE on arrival here
	Depth                int64                 // bytes queued now
	MaxDepth             int64                 // largest Depth seen
	depthArea            float64               // integral of Depth over time, byte-picoseconds
	lastChange           sim.Time
}

// MeanDepth returns the time-averaged depth in bytes over [0, now]; now must not be before the
// last depth change (ask during or at the end of a run). A value receiver, so it also works on
// Port.Totals().
func (q QueueStats) MeanDepth(now sim.Time) float64 {
	if now <= 0 {
		return 0
	}
	return q.DepthArea(now) / float64(now)
}

// DepthArea returns the integral of the depth over [0, now] in byte-picoseconds (MeanDepth x
// now, exactly as accumulated: it is unchanged between two times the queue stayed empty); now
// must not be before the last depth change.
func (q QueueStats) DepthArea(now sim.Time) float64 {
	return q.depthArea + float64(q.Depth)*float64(now-q.lastChange)
}

func (q *QueueStats) setDepth(now sim.Time, d int64) {
	q.depthArea += float64(q.Depth) * float64(now-q.lastChange)
	q.lastChange = now
	q.Depth = d
	if d > q.MaxDepth {
		q.MaxDepth = d
	}
}

// queueParams is a QueueConfig with the values the hot path derives from it. Ports built with
// the same configuration share one (Network keeps them by config), so a port carries a pointer
// rather than a copy and the few distinct configurations of a fabric stay in the cache.
type queueParams struct {
	cfg      QueueConfig
	classes  int
	limit    int64 // per class, bytes
	trimAt   int64 // effective trim threshold in bytes
	hdrLimit int64
	// WDRR quanta of the header queue and the data block, in bytes.
	hdrQuantum, dataQuantum int64
	ecn, trim               bool
}

// drrRound is the bytes both WDRR queues get per round together: two 4 KiB MTUs, so a data
// packet fits its quantum at any share >= 0.5 and in a few rounds below it.
const drrRound = 8192

func newQueueParams(cfg QueueConfig) *queueParams {
	qp := &queueParams{cfg: cfg, classes: cfg.Classes, limit: int64(cfg.Limit), hdrLimit: int64(cfg.Trim.HeaderLimit),
		ecn: cfg.ECN.Enabled, trim: cfg.Trim.Enabled}
	qp.hdrQuantum = int64(float64(drrRound) * cfg.Trim.HeaderShare)
	if qp.hdrQuantum < HeaderBytes {
		qp.hdrQuantum = HeaderBytes
	}
	qp.dataQuantum = drrRound - qp.hdrQuantum
	if qp.dataQuantum < HeaderBytes {
		qp.dataQuantum = HeaderBytes
	}
	qp.trimAt = int64(cfg.Trim.Threshold)
	if qp.trimAt == 0 || qp.trimAt > int64(cfg.Limit) {
		qp.trimAt = int64(cfg.Limit)
	}
	return qp
}

// queueLine is what every packet through one queue (a data class or the header queue) reads
// and writes, in one 64-byte cache line: the FIFO (a list of the port's slots), the depth and
// the counters that change per packet. The rest of the queue's statistics, which change only
// on a drop, a trim or a mark, are in its queueCold. Sent packets and bytes are derived
// (QueueStats): every packet accepted leaves by being sent or flushed.
type queueLine struct {
	head, tail int32 // slots of the first and last packet; -1 when empty
	n          int32 // packets queued
	depth      int32 // bytes queued now; <= the queue's limit (at most MaxQueueLimit)
	maxDepth   int32 // largest depth seen
	depthArea  float64
	lastChange sim.Time
	enqPackets int64
	enqBytes   int64
	ceMarks    int64 // packets marked CE on arrival here
}

// queueCold is the rest of one queue's statistics.
type queueCold struct {
	Drops        [NumDropReasons]int64
	dropBytes    int64
	flushed      int64
	flushedBytes int64
	trims        int64
}

func (l *queueLine) setDepth(now sim.Time, d int64) {
	l.depthArea += float64(l.depth) * float64(now-l.lastChange)
	l.lastChange = now
	l.depth = int32(d)
	if int32(d) > l.maxDepth {
		l.maxDepth = int32(d)
	}
}

// queueStats assembles the public statistics of a queue from its line and cold part.
func queueStats(l *queueLine, c *queueCold) QueueStats {
	return QueueStats{
		EnqPackets: l.enqPackets, EnqBytes: l.enqBytes,
		TxPackets: l.enqPackets - c.flushed - int64(l.n), TxBytes: l.enqBytes - c.flushedBytes - int64(l.depth),
		Drops: c.Drops, DropBytes: c.dropBytes, Flushed: c.flushed, Trims: c.trims, CEMarks: l.ceMarks,
		Depth: int64(l.depth), MaxDepth: int64(l.maxDepth), depthArea: l.depthArea, lastChange: l.lastChange,
	}
}

// portQueue is one egress port's queues: strict-priority data classes plus the header queue.
// lines[c] is data class c and lines[classes] the header queue; busy has bit i set while queue
// i holds packets, so finding the next queue to serve reads no queue's line. The statistics
// that change only on drops and trims are in aux.
//
// It also owns the port's slab of slots, s: every packet the port holds, queued or on its
// link (Port.flHead), has one, and the free ones form a list from free. The slab doubles when
// full and keeps its peak size; slots are reused last-freed-first, so it stays small and warm.
//
// The fields up to aux are the port's hot ones (Port). The hot path reaches the queue lines
// through the network (Network.lineBlock), whose address does not depend on the port, so the
// processor can load a queue's line while the port's are still on their way; lines is the
// same memory for everything else.
type portQueue struct {
	p     *queueParams
	s     []slot
	bytes int64  // bytes waiting in all the queues
	free  int32  // first free slot, or -1
	busy  uint16 // bit i: lines[i] is not empty
	// inRound: a WDRR round between the header queue and the data block is under way, so
	// the deficits and turn may differ from a fresh round's (resetDRR).
	inRound bool
	// WDRR between the header queue and the data block: whose turn it is, and the deficits in
	// bytes.
	servingHdr              bool
	hdrDeficit, dataDeficit int64
	// rng is this port's ECN marking stream (splitmix64 state): per port, so traffic on one
	// port never shifts the marking draws of another and variants stay comparable.
	rng   uint64
	aux   *queueAux
	lines []queueLine // classes+1 of them, 64-byte aligned
	arena *slotArena  // where growSlab takes slabs from; nil: the heap
}

// slotArena hands out the ports' slabs from large chunks, so that the slots of a big fabric
// sit together (on huge pages where the kernel allows) rather than scattered over the heap. A
// slab that grows leaves its old space unused, so a port's slabs take at most four times its
// peak number of packets held (a slab is less than twice that peak, its outgrown
// predecessors together smaller than it), plus the unused end of the current chunk.
type slotArena struct {
	chunk []slot // the unused rest of the current chunk
	size  int    // the size of the current chunk
}

// Arena chunks double from 512 slots up to maxSlotChunk slots (6 MiB), so a small fabric takes
// little.
const maxSlotChunk = 1 << 18

// take returns n zeroed slots.
func (a *slotArena) take(n int) []slot {
	if n > len(a.chunk) {
		a.size = min(max(2*a.size, 512), maxSlotChunk)
		size := max(n, a.size)
		a.chunk = make([]slot, size)
		adviseHuge(unsafe.Pointer(&a.chunk[0]), uintptr(size)*unsafe.Sizeof(slot{}))
	}
	s := a.chunk[:n:n]
	a.chunk = a.chunk[n:]
	return s
}

// queueAux is the part of a port's queues that only drops and trims touch.
type queueAux struct {
	cold []queueCold // by queue, as lines
}

// init sets the queues up with parameters p in lines, which must hold at least p.classes+1
// zero queueLines (the port's block of the network's lines, or its own).
func (q *portQueue) init(p *queueParams, lines []queueLine) {
	q.p = p
	q.lines = lines[: p.classes+1 : p.classes+1]
	for i := range q.lines {
		q.lines[i].head, q.lines[i].tail = -1, -1
	}
	q.free = -1
	q.aux = &queueAux{cold: make([]queueCold, p.classes+1)}
	q.inRound = true
	q.resetDRR()
}

// alloc takes a free slot for p with value v (see slot) and returns its index.
func (q *portQueue) alloc(p *Packet, v int64) int32 {
	if q.free < 0 {
		q.growSlab()
	}
	i := q.free
	sl := &q.s[i]
	q.free = sl.next
	*sl = slot{p: p, v: v, next: -1}
	if h := int(p.Hop); h < int(p.RouteLen) && h < MaxHops && p.Route[h] < math.MaxUint16 {
		sl.hop = p.Route[h] + 1
	}
	return i
}

// release returns slot i to the free list.
func (q *portQueue) release(i int32) {
	q.s[i] = slot{next: q.free}
	q.free = i
}

// growSlab doubles the slab (the free list is empty).
func (q *portQueue) growSlab() {
	n := len(q.s)
	var s []slot
	if q.arena != nil {
		s = q.arena.take(max(8, 2*n))
	} else {
		s = make([]slot, max(8, 2*n))
	}
	copy(s, q.s)
	for i := n; i < len(s); i++ {
		s[i].next = int32(i + 1)
	}
	s[len(s)-1].next = -1
	q.s, q.free = s, int32(n)
}

// hdr returns the header queue's line.
func (q *portQueue) hdr() *queueLine { return &q.lines[q.p.classes] }

// resetDRR starts a new WDRR round with the header queue's turn, its quantum granted: used
// while at most one side is backlogged, so that when both are, headers go first.
func (q *portQueue) resetDRR() {
	if !q.inRound {
		return // already a fresh round
	}
	q.servingHdr = true
	q.hdrDeficit, q.dataDeficit = q.p.hdrQuantum, 0
	q.inRound = false
}

// class returns the data class p is queued in here: its Class, clamped to the port's last
// class. The packet keeps its own Class for the hops after this one.
func (q *portQueue) class(p *Packet) int {
	if c := int(p.Class); c < q.p.classes {
		return c
	}
	return q.p.classes - 1
}

// inHdr reports whether p belongs in the header queue here: it is a trimmed header and the
// port trims (NDP, Handley et al. SIGCOMM 2017: trimmed headers take the priority queue at
// every switch, not only where they were cut).
func (q *portQueue) inHdr(p *Packet) bool {
	return q.p.trim && p.Flags&Trimmed != 0
}

// queueOf returns the index of the queue p was (or would be) queued in here.
func (q *portQueue) queueOf(p *Packet) int {
	if q.inHdr(p) {
		return q.p.classes
	}
	return q.class(p)
}

// coldFor returns the cold statistics of the queue p was (or would be) queued in here.
func (q *portQueue) coldFor(p *Packet) *queueCold { return &q.aux.cold[q.queueOf(p)] }

// empty reports whether nothing waits in any queue.
func (q *portQueue) empty() bool { return q.busy == 0 }

// sendable reports whether a queue not paused (PFC: bit c of paused stops class c; the header
// queue is never paused) holds a packet.
func (q *portQueue) sendable(paused uint16) bool {
	return q.busy&^(paused&(1<<q.p.classes-1)) != 0
}

// hdrBusy reports whether the header queue holds packets.
func (q *portQueue) hdrBusy() bool { return q.busy>>q.p.classes != 0 }

// dequeue picks the next packet to serialise: WDRR between the header queue and the data
// block, strict priority inside the data block. It returns the packet's slot, which still
// holds it (the caller moves it onto the link or releases it), or -1 when all are empty. The
// packet itself is not read: its size is in the slot. block is q.lines, or the same lines
// reached through the network (see portQueue).
func (q *portQueue) dequeue(now sim.Time, block []queueLine, paused uint16) int32 {
	paused &= 1<<q.p.classes - 1 // the header queue is never paused
	if q.busy&^paused == 0 {
		return -1
	}
	data := q.busy & (1<<q.p.classes - 1) &^ paused
	dc := bits.TrailingZeros16(data) // the highest-priority non-empty class, if data != 0
	if q.hdrBusy() && data != 0 {
		// Both backlogged: deficit round robin, the header queue's turn first.
		q.inRound = true
		for {
			if q.servingHdr {
				if h := q.s[block[q.p.classes].head].v; h <= q.hdrDeficit {
					q.hdrDeficit -= h
					return q.pop(now, q.p.classes, block)
				}
				q.servingHdr = false
				q.dataDeficit += q.p.dataQuantum
			} else {
				if d := q.s[block[dc].head].v; d <= q.dataDeficit {
					q.dataDeficit -= d
					return q.pop(now, dc, block)
				}
				q.servingHdr = true
				q.hdrDeficit += q.p.hdrQuantum
			}
		}
	}
	// Only one side is backlogged: serve it and reset the round (DRR: an idle queue keeps no
	// credit), so the header queue has the first turn when both are backlogged again.
	q.resetDRR()
	if data == 0 {
		return q.pop(now, q.p.classes, block)
	}
	return q.pop(now, dc, block)
}

// pop takes the head of queue i, which must not be empty, to send it, and returns its slot.
func (q *portQueue) pop(now sim.Time, i int, block []queueLine) int32 {
	l := &block[i]
	h := l.head
	sl := &q.s[h]
	l.head = sl.next
	l.n--
	if l.n == 0 {
		l.tail = -1
		q.busy &^= 1 << i
	}
	size := sl.v
	l.setDepth(now, int64(l.depth)-size)
	q.bytes -= size
	return h
}

// flush empties every queue without sending anything (the link went down): each packet is
// counted as Flushed and as a DropLinkDown drop of its queue and moved to the returned list,
// whose packets the caller must drop.
func (q *portQueue) flush(now sim.Time) fifo {
	var out fifo
	for i := range q.lines {
		l, c := &q.lines[i], &q.aux.cold[i]
		for h := l.head; h >= 0; {
			sl := q.s[h]
			c.flushed++
			c.flushedBytes += sl.v
			c.Drops[DropLinkDown]++
			c.dropBytes += sl.v
			out.push(sl.p)
			q.release(h)
			h = sl.next
		}
		l.head, l.tail, l.n = -1, -1, 0
		if l.depth != 0 {
			l.setDepth(now, 0)
		}
	}
	q.busy, q.bytes = 0, 0
	q.resetDRR()
	return out
}

// admission is the outcome of offering a packet to a queue.
type admission uint8

const (
	admitted admission = iota
	admittedTrimmed
	dropped
)

// enqueue offers p to its class queue at time now: trimming or drop-tail, then RED/ECN
// marking of what is admitted to a data queue. lastHop says the port faces the destination
// host (trimmed headers are flagged TrimmedLastHop). A header trimmed upstream goes straight to
// the header queue when this port trims. rng supplies the marking draws (only when a draw is
// needed), so the queue holds no random stream of its own. On a drop, reason says why and the
// caller frees the packet. p.Class is never changed: a port with fewer classes queues it in
// its last class, and the next port sees the original class again.
//
// idle says the port's transmitter is free (so its queues are empty) and p will leave at
// once: it is counted as enqueued but does not raise MaxDepth, which reports bytes that waited.
//
// block is q.lines (or the same lines reached another way: Network passes the port's block
// of its lines, whose address does not depend on the port, so that the processor can load
// the class's line while the port's own lines are still on their way).
func (q *portQueue) enqueue(now sim.Time, p *Packet, lastHop, idle bool, block []queueLine) (admission, DropReason) {
	if q.inHdr(p) {
		return q.pushHdr(now, p, idle, block)
	}
	c := q.class(p)
	l := &block[c]
	size := int64(p.Size)
	depth := int64(l.depth)
	over := depth+size > q.p.limit
	if q.p.trim && p.Flags&Trimmable != 0 && p.Flags&Trimmed == 0 &&
		(over || depth+size > q.p.trimAt) {
		q.aux.cold[c].trims++
		p.Size = HeaderBytes
		p.Flags |= Trimmed
		if lastHop {
			p.Flags |= TrimmedLastHop
		}
		return q.pushHdr(now, p, idle, block)
	}
	if over {
		cs := &q.aux.cold[c]
		cs.Drops[DropQueueFull]++
		cs.dropBytes += size
		return dropped, DropQueueFull
	}
	// Mark only what is queued: a dropped or trimmed packet carries no CE and is not counted.
	if q.p.ecn && p.Flags&ECT != 0 && p.Flags&CE == 0 {
		if mark(&q.p.cfg.ECN, depth, &q.rng) {
			p.Flags |= CE
			l.ceMarks++
		}
	}
	q.push(now, c, l, p, size, idle)
	return admitted, 0
}

// push appends p (size bytes) to queue i, whose line is l, and counts it.
func (q *portQueue) push(now sim.Time, i int, l *queueLine, p *Packet, size int64, idle bool) {
	k := q.alloc(p, size)
	if l.tail >= 0 {
		q.s[l.tail].next = k
	} else {
		l.head = k
	}
	l.tail = k
	l.n++
	q.busy |= 1 << i
	q.bytes += size
	l.enqPackets++
	l.enqBytes += size
	prevMax := l.maxDepth
	l.setDepth(now, int64(l.depth)+size)
	if idle {
		l.maxDepth = prevMax
	}
}

// pushHdr queues the trimmed header p in the header queue, or drops it when the queue has no
// room (DropHeaderOverflow).
func (q *portQueue) pushHdr(now sim.Time, p *Packet, idle bool, block []queueLine) (admission, DropReason) {
	i := q.p.classes
	size := int64(p.Size)
	if int64(block[i].depth)+size > q.p.hdrLimit {
		cs := &q.aux.cold[i]
		cs.Drops[DropHeaderOverflow]++
		cs.dropBytes += size
		return dropped, DropHeaderOverflow
	}
	q.push(now, i, &block[i], p, size, idle)
	return admittedTrimmed, 0
}

// mark is the RED marking decision for a queue holding depth bytes; it draws from rng only
// between Kmin and Kmax.
func mark(e *ECNConfig, depth int64, rng *uint64) bool {
	switch {
	case depth < int64(e.Kmin):
		return false
	case depth >= int64(e.Kmax):
		return true
	default:
		p := e.Pmax * float64(depth-int64(e.Kmin)) / float64(int64(e.Kmax)-int64(e.Kmin))
		*rng += 0x9e3779b97f4a7c15
		return float64(sim.Mix64(*rng)>>11)*0x1p-53 < p
	}
}

// MarkProbability returns the RED marking probability for a queue of depth bytes under e, for
// tests and reports.
func (e ECNConfig) MarkProbability(depth int64) float64 {
	switch {
	case !e.Enabled || depth < int64(e.Kmin):
		return 0
	case depth >= int64(e.Kmax):
		return 1
	default:
		return e.Pmax * float64(depth-int64(e.Kmin)) / float64(int64(e.Kmax)-int64(e.Kmin))
	}
}
