package fabric

import (
	"fmt"

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
	NumDropReasons
)

var dropNames = [NumDropReasons]string{"queue_full", "header_overflow", "link_down", "no_route", "loss", "blackhole"}

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
	// HeaderLimit bounds the header queue in bytes; lockstep default 64 KiB (1,024 headers).
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
	DefaultHeaderLimit = 64 << 10
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
		if c.ECN.Kmin < 0 || c.ECN.Kmax <= c.ECN.Kmin {
			return fmt.Errorf("%s.ecn: kmin %v, kmax %v; want 0 <= kmin < kmax", prefix, c.ECN.Kmin, c.ECN.Kmax)
		}
		if !(c.ECN.Pmax >= 0 && c.ECN.Pmax <= 1) {
			return fmt.Errorf("%s.ecn.pmax: %v is out of range; allowed 0..1", prefix, c.ECN.Pmax)
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
	area := q.depthArea + float64(q.Depth)*float64(now-q.lastChange)
	return area / float64(now)
}

func (q *QueueStats) setDepth(now sim.Time, d int64) {
	q.depthArea += float64(q.Depth) * float64(now-q.lastChange)
	q.lastChange = now
	q.Depth = d
	if d > q.MaxDepth {
		q.MaxDepth = d
	}
}

// portQueue is one egress port's queues: strict-priority data classes plus the header queue.
type portQueue struct {
	cfg     QueueConfig
	classes []fifo // one per class, cfg.Classes long
	hdr     fifo
	// Stats per data class; HdrStats for the header queue.
	stats    []QueueStats // one per class
	hdrStats QueueStats
	// WDRR between the header queue and the data block, in bytes.
	hdrQuantum, dataQuantum int64
	hdrDeficit, dataDeficit int64
	servingHdr              bool
	trimAt                  int64 // effective trim threshold in bytes
	// rng is this port's ECN marking stream (splitmix64 state): per port, so traffic on one
	// port never shifts the marking draws of another and variants stay comparable.
	rng uint64
}

// drrRound is the bytes both WDRR queues get per round together: two 4 KiB MTUs, so a data
// packet fits its quantum at any share >= 0.5 and in a few rounds below it.
const drrRound = 8192

func (q *portQueue) init(cfg QueueConfig) {
	q.cfg = cfg
	// Sized to the classes in use, not MaxClasses: a port is touched on every packet, and a
	// small one keeps a large fabric's ports in cache.
	q.classes = make([]fifo, cfg.Classes)
	q.stats = make([]QueueStats, cfg.Classes)
	q.hdrQuantum = int64(float64(drrRound) * cfg.Trim.HeaderShare)
	if q.hdrQuantum < HeaderBytes {
		q.hdrQuantum = HeaderBytes
	}
	q.dataQuantum = drrRound - q.hdrQuantum
	if q.dataQuantum < HeaderBytes {
		q.dataQuantum = HeaderBytes
	}
	q.trimAt = int64(cfg.Trim.Threshold)
	if q.trimAt == 0 || q.trimAt > int64(cfg.Limit) {
		q.trimAt = int64(cfg.Limit)
	}
	q.resetDRR()
}

// resetDRR starts a new WDRR round with the header queue's turn, its quantum granted: used
// while at most one side is backlogged, so that when both are, headers go first.
func (q *portQueue) resetDRR() {
	q.servingHdr = true
	q.hdrDeficit, q.dataDeficit = q.hdrQuantum, 0
}

// class returns the data class p is queued in here: its Class, clamped to the port's last
// class. The packet keeps its own Class for the hops after this one.
func (q *portQueue) class(p *Packet) int {
	if c := int(p.Class); c < q.cfg.Classes {
		return c
	}
	return q.cfg.Classes - 1
}

// inHdr reports whether p belongs in the header queue here: it is a trimmed header and the
// port trims (NDP, Handley et al. SIGCOMM 2017: trimmed headers take the priority queue at
// every switch, not only where they were cut).
func (q *portQueue) inHdr(p *Packet) bool {
	return q.cfg.Trim.Enabled && p.Flags&Trimmed != 0
}

// statsFor returns the statistics of the queue p was (or would be) queued in here.
func (q *portQueue) statsFor(p *Packet) *QueueStats {
	if q.inHdr(p) {
		return &q.hdrStats
	}
	return &q.stats[q.class(p)]
}

// empty reports whether nothing waits in any queue.
func (q *portQueue) empty() bool {
	if q.hdr.n > 0 {
		return false
	}
	for c := 0; c < q.cfg.Classes; c++ {
		if q.classes[c].n > 0 {
			return false
		}
	}
	return true
}

// dataHead returns the highest-priority non-empty data class, or -1.
func (q *portQueue) dataHead() int {
	for c := 0; c < q.cfg.Classes; c++ {
		if q.classes[c].n > 0 {
			return c
		}
	}
	return -1
}

// dequeue picks the next packet to serialise: WDRR between the header queue and the data
// block, strict priority inside the data block. Returns nil when all are empty.
func (q *portQueue) dequeue(now sim.Time) *Packet {
	dc := q.dataHead()
	if q.hdr.n == 0 && dc < 0 {
		return nil
	}
	if q.hdr.n > 0 && dc >= 0 {
		// Both backlogged: deficit round robin, the header queue's turn first.
		for {
			if q.servingHdr {
				if h := q.hdr.head; h != nil && int64(h.Size) <= q.hdrDeficit {
					q.hdrDeficit -= int64(h.Size)
					return q.popHdr(now)
				}
				q.servingHdr = false
				q.dataDeficit += q.dataQuantum
			} else {
				if d := q.classes[dc].head; int64(d.Size) <= q.dataDeficit {
					q.dataDeficit -= int64(d.Size)
					return q.popData(now, dc)
				}
				q.servingHdr = true
				q.hdrDeficit += q.hdrQuantum
			}
		}
	}
	// Only one side is backlogged: serve it and reset the round (DRR: an idle queue keeps no
	// credit), so the header queue has the first turn when both are backlogged again.
	q.resetDRR()
	if q.hdr.n > 0 {
		return q.popHdr(now)
	}
	return q.popData(now, dc)
}

func (q *portQueue) popHdr(now sim.Time) *Packet {
	p := q.hdr.pop()
	s := &q.hdrStats
	s.setDepth(now, s.Depth-int64(p.Size))
	s.TxPackets++
	s.TxBytes += int64(p.Size)
	return p
}

// flush empties every queue without sending anything (the link went down): each packet is
// counted as Flushed and as a DropLinkDown drop of its queue and moved to the returned list,
// whose packets the caller must drop.
func (q *portQueue) flush(now sim.Time) fifo {
	var out fifo
	take := func(f *fifo, s *QueueStats) {
		for p := f.pop(); p != nil; p = f.pop() {
			s.Flushed++
			s.Drops[DropLinkDown]++
			s.DropBytes += int64(p.Size)
			out.push(p)
		}
		if s.Depth != 0 {
			s.setDepth(now, 0)
		}
	}
	for c := 0; c < q.cfg.Classes; c++ {
		take(&q.classes[c], &q.stats[c])
	}
	take(&q.hdr, &q.hdrStats)
	q.resetDRR()
	return out
}

func (q *portQueue) popData(now sim.Time, c int) *Packet {
	p := q.classes[c].pop()
	s := &q.stats[c]
	s.setDepth(now, s.Depth-int64(p.Size))
	s.TxPackets++
	s.TxBytes += int64(p.Size)
	return p
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
func (q *portQueue) enqueue(now sim.Time, p *Packet, lastHop, idle bool) (admission, DropReason) {
	if q.inHdr(p) {
		return q.pushHdr(now, p, idle)
	}
	c := q.class(p)
	s := &q.stats[c]
	size := int64(p.Size)
	over := s.Depth+size > int64(q.cfg.Limit)
	if q.cfg.Trim.Enabled && p.Flags&Trimmable != 0 && p.Flags&Trimmed == 0 &&
		(over || s.Depth+size > q.trimAt) {
		s.Trims++
		p.Size = HeaderBytes
		p.Flags |= Trimmed
		if lastHop {
			p.Flags |= TrimmedLastHop
		}
		return q.pushHdr(now, p, idle)
	}
	if over {
		s.Drops[DropQueueFull]++
		s.DropBytes += size
		return dropped, DropQueueFull
	}
	// Mark only what is queued: a dropped or trimmed packet carries no CE and is not counted.
	if q.cfg.ECN.Enabled && p.Flags&ECT != 0 && p.Flags&CE == 0 {
		if mark(&q.cfg.ECN, s.Depth, &q.rng) {
			p.Flags |= CE
			s.CEMarks++
		}
	}
	q.classes[c].push(p)
	s.EnqPackets++
	s.EnqBytes += size
	prevMax := s.MaxDepth
	s.setDepth(now, s.Depth+size)
	if idle {
		s.MaxDepth = prevMax
	}
	return admitted, 0
}

// pushHdr queues the trimmed header p in the header queue, or drops it when the queue has no
// room (DropHeaderOverflow).
func (q *portQueue) pushHdr(now sim.Time, p *Packet, idle bool) (admission, DropReason) {
	h := &q.hdrStats
	size := int64(p.Size)
	if h.Depth+size > int64(q.cfg.Trim.HeaderLimit) {
		h.Drops[DropHeaderOverflow]++
		h.DropBytes += size
		return dropped, DropHeaderOverflow
	}
	q.hdr.push(p)
	h.EnqPackets++
	h.EnqBytes += size
	prevMax := h.MaxDepth
	h.setDepth(now, h.Depth+size)
	if idle {
		h.MaxDepth = prevMax
	}
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
