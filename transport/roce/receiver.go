package roce

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
)

// ReceiverStats counts what a Receiver did.
type ReceiverStats struct {
	DataPackets    int64 // data packets received (duplicates and out-of-order ones included)
	PlacedBytes    int64 // payload bytes placed (each byte once)
	Duplicates     int64 // data packets below the expected PSN (each re-ACKed)
	OutOfOrder     int64 // data packets above the expected PSN dropped (in order, or past the window; first of a gap NAKed)
	Malformed      int64 // packets dropped as inconsistent (wrong kind, a segment out of place)
	ACKs, NAKs     int64 // answers sent
	CEPackets      int64 // data packets that arrived with a CE mark
	CNPs           int64 // CNPs sent
	CNPsSuppressed int64 // CE marks that found a CNP sent less than CNPInterval before
	// Out-of-order placement (Config.WithReorder): packets accepted above the expected PSN,
	// and NAKs sent because a packet fell beyond the window or a hole outlived the hold time.
	Reordered            int64
	WindowNAKs, HoleNAKs int64
}

// Receiver is the responder side of one RC QP [IBTA §9.7, responder] and DCQCN's notification point
// [DCQCN §3.1]. It accepts data packets in PSN order only:
//
//   - the expected PSN: placed; acknowledged every AckEvery packets, and at once when the
//     packet asks (AckReq) [IBTA §9.7, responder: duplicate requests];
//   - a PSN below it (a duplicate): dropped and acknowledged again at once, so a sender whose
//     ACK was lost learns where the responder is [IBTA §9.7, responder: duplicate requests];
//   - a PSN above it (a gap): dropped; the first such packet since the expected PSN last
//     arrived gets a sequence-error NAK carrying the expected PSN, later ones nothing, so one
//     loss costs one NAK [IBTA §9.7, responder: out-of-sequence requests];
//   - any of these with a CE mark: a CNP back to the sender, at most one per CNPInterval
//     [DCQCN §3.1: the NP sends a CNP at once if none went out in the last N = 50 us].
//
// A transfer completes when its Last (or Only) packet is placed. Every answer is triggered by
// an arrival, so a Receiver keeps no timer and has no Deadline. Not safe for concurrent use.
type Receiver struct {
	cfg     Config
	qp      uint32
	srcPort uint16

	epsn    uint32 // expected PSN: every PSN below it was placed
	nakSent bool   // a NAK for epsn went out; no other until epsn arrives
	pending int    // in-order packets placed since the last answer

	open    bool     // a transfer is being placed
	msgLen  int64    // its RETH DMA length
	placed  int64    // its payload bytes placed so far
	firstAt sim.Time // when its first packet arrived
	msgs    uint32   // transfers completed

	cnpSent bool     // a CNP has been sent
	lastCNP sim.Time // when the latest CNP was sent

	out  []Header
	done []Completion

	// Out-of-order placement (Config.WithReorder; nil ring when off): ring[psn % len] holds
	// the header of an accepted packet above epsn until epsn reaches it; holeAt is when the
	// current hole opened (the first packet above epsn arrived).
	ring   []Header
	have   []bool
	held   int
	holeAt sim.Time
	// fan is the responder NIC port's count of sources with data outstanding (ShareFanIn;
	// nil: not shared), fanSrc this QP's source host, active whether this QP is in it.
	fan    *FanIn
	fanSrc int32
	active bool

	// Stats counts what the receiver did.
	Stats ReceiverStats
}

// NewReceiver makes the responder side of QP c.QP (c.LineRate is not used). cfg's zero fields
// take their defaults. Errors: an invalid configuration, named by its YAML path under
// ConfigPath.
func NewReceiver(cfg Config, c Conn) (*Receiver, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(ConfigPath); err != nil {
		return nil, err
	}
	return &Receiver{cfg: cfg, qp: c.QP, srcPort: c.srcPort()}, nil
}

// FanIn counts the requesters (source hosts) with data outstanding into one responder NIC
// port: a QP of theirs has a transfer open (its first packet arrived, its last not yet
// placed) or packets held behind a hole. Several QPs of one source count once: they share
// that source's link, so they add no fan-in at the bottleneck. The receivers of one port share
// one (Receiver.ShareFanIn); under Config.WithReorderFanIn their hold grows with it. The zero
// value counts none.
type FanIn struct {
	n     int
	bySrc map[int32]int // active QPs by source host
}

// Sources returns how many source hosts have data outstanding into the port.
func (f *FanIn) Sources() int { return f.n }

// add counts one QP of src in (d 1) or out (d -1).
func (f *FanIn) add(src int32, d int) {
	if f.bySrc == nil {
		f.bySrc = map[int32]int{}
	}
	was := f.bySrc[src]
	f.bySrc[src] = was + d
	switch {
	case was == 0 && d > 0:
		f.n++
	case was+d == 0:
		f.n--
		delete(f.bySrc, src)
	}
}

// ShareFanIn makes the receiver, whose requester is source host src, count itself in f while
// it has data outstanding, and take f's count as its NIC port's fan-in (Config.
// WithReorderFanIn). Call it before the first packet.
func (r *Receiver) ShareFanIn(f *FanIn, src int32) { r.fan, r.fanSrc = f, src }

// countFanIn updates the receiver's place in its NIC's fan-in after a packet or a timer.
func (r *Receiver) countFanIn() {
	if r.fan == nil {
		return
	}
	if a := r.open || r.held > 0; a != r.active {
		r.active = a
		if a {
			r.fan.add(r.fanSrc, 1)
		} else {
			r.fan.add(r.fanSrc, -1)
		}
	}
}

// hold is the hole hold in force: Config.WithReorder's, grown by WithReorderFanIn's term for
// each source beyond the first with data outstanding at the NIC port (up to its cap), at
// most MaxReorderHold.
func (r *Receiver) hold() sim.Time {
	h := r.cfg.reorderTime
	if r.fan == nil || r.cfg.reorderFanIn <= 0 || r.fan.n <= 1 || h <= 0 {
		return h
	}
	n := r.fan.n
	if m := r.cfg.reorderFanInMax; m > 0 {
		n = min(n, m)
	}
	return min(h+sim.Time(n-1)*r.cfg.reorderFanIn, max(MaxReorderHold, h))
}

// QP returns the connection number.
func (r *Receiver) QP() uint32 { return r.qp }

// SrcPort returns the UDP source port the responder's answers carry: the QP's, as Linux's
// symmetric flow label gives both ends the same port.
func (r *Receiver) SrcPort() uint16 { return r.srcPort }

// ExpectedPSN returns the PSN the responder waits for: every PSN below it was placed.
func (r *Receiver) ExpectedPSN() uint32 { return r.epsn }

// Out returns the answers (ACKs, NAKs, CNPs) to send, in order; the caller sends them and calls
// ClearOut.
func (r *Receiver) Out() []Header { return r.out }

// ClearOut empties the outbox, keeping its memory.
func (r *Receiver) ClearOut() { r.out = r.out[:0] }

// Completions returns transfers placed completely since the last ClearCompletions, in order.
func (r *Receiver) Completions() []Completion { return r.done }

// ClearCompletions empties the completion list.
func (r *Receiver) ClearCompletions() { r.done = r.done[:0] }

// Outstanding describes the responder's state, for stall reports.
func (r *Receiver) Outstanding() string {
	return fmt.Sprintf("qp %d responder: expected PSN %d, NAK outstanding %v, transfer open %v (%d of %d B), transfers done %d",
		r.qp, r.epsn, r.nakSent, r.open, r.placed, r.msgLen, r.msgs)
}

// OnData takes a data packet that arrived at now; ce says it carried a CE mark.
func (r *Receiver) OnData(now sim.Time, h *Header, ce bool) {
	r.onData(now, h, ce)
	r.countFanIn()
}

// onData is OnData but for the NIC's fan-in count.
func (r *Receiver) onData(now sim.Time, h *Header, ce bool) {
	if h.Kind != Data {
		r.Stats.Malformed++
		return
	}
	r.Stats.DataPackets++
	if ce {
		r.Stats.CEPackets++
		if !r.cnpSent || now-r.lastCNP >= r.cfg.CNPInterval {
			r.cnpSent, r.lastCNP = true, now
			r.Stats.CNPs++
			r.out = append(r.out, Header{Kind: CNP, QP: r.qp, Wire: int32(r.cfg.CNPWire())})
		} else {
			r.Stats.CNPsSuppressed++
		}
	}
	switch {
	case before(h.PSN, r.epsn):
		r.Stats.Duplicates++
		r.answer(Ack)
		return
	case after(h.PSN, r.epsn) && r.cfg.reorder > 0:
		r.reorderData(now, h)
		return
	case after(h.PSN, r.epsn):
		r.Stats.OutOfOrder++
		if !r.nakSent {
			r.nakSent = true
			r.answer(Nak)
		}
		return
	}
	// The expected PSN: place it, then whatever it unblocks.
	r.place(now, h, true)
	drained := false
	for r.held > 0 {
		k := int(r.epsn % uint32(len(r.ring)))
		if !r.have[k] {
			r.holeAt = now // a new hole opens behind the packets still held
			break
		}
		r.have[k] = false
		r.held--
		hh := r.ring[k]
		r.place(now, &hh, false)
		drained = true
	}
	if drained && r.pending > 0 {
		r.answer(Ack) // one cumulative ACK for the packets the hole was holding back
	}
}

// place places h, the expected PSN: the in-order path; ack lets it acknowledge at once.
func (r *Receiver) place(now sim.Time, h *Header, ack bool) {
	if h.Seg.opens() == r.open || h.Len < 0 || int(h.Len) > r.cfg.PayloadBytes {
		// First/Only while a transfer is open, Middle/Last while none is, or a length no
		// sender of this QP would send: not this QP's stream. Dropped, so the sender's
		// timeout, not a wrong completion, deals with it.
		r.Stats.Malformed++
		return
	}
	if h.Seg.opens() {
		r.open, r.msgLen, r.placed, r.firstAt = true, h.MsgBytes, 0, now
	}
	r.placed += int64(h.Len)
	r.Stats.PlacedBytes += int64(h.Len)
	r.epsn++
	r.nakSent = false
	r.pending++
	if h.Seg.closes() {
		r.done = append(r.done, Completion{Msg: r.msgs, Bytes: r.placed, Posted: r.firstAt, Done: now})
		r.msgs++
		r.open = false
	}
	if ack && (h.AckReq || r.pending >= r.cfg.AckEvery) {
		r.answer(Ack)
	}
}

// answer sends an ACK or NAK carrying the expected PSN; either acknowledges everything below
// it, so coalesced packets are answered too.
func (r *Receiver) answer(k Kind) {
	r.out = append(r.out, Header{Kind: k, QP: r.qp, PSN: r.epsn, Wire: int32(r.cfg.AckWire())})
	r.pending = 0
	if k == Ack {
		r.Stats.ACKs++
	} else {
		r.Stats.NAKs++
	}
}

// reorderData takes a data packet above the expected PSN under out-of-order placement: held
// for placement if within the window and new, NAKed (once per hole) if beyond the window or
// the hole has been open longer than the hold time.
func (r *Receiver) reorderData(now sim.Time, h *Header) {
	if r.ring == nil {
		r.ring, r.have = make([]Header, r.cfg.reorder), make([]bool, r.cfg.reorder)
	}
	d := h.PSN - r.epsn
	if int64(d) >= int64(len(r.ring)) {
		r.Stats.OutOfOrder++
		if !r.nakSent {
			r.nakSent = true
			r.Stats.WindowNAKs++
			r.answer(Nak)
		}
		return
	}
	k := int(h.PSN % uint32(len(r.ring)))
	if r.have[k] {
		r.Stats.Duplicates++
		return
	}
	if r.held == 0 {
		r.holeAt = now
	}
	r.ring[k], r.have[k] = *h, true
	r.held++
	r.Stats.Reordered++
	if !r.nakSent && r.cfg.reorderTime > 0 && now-r.holeAt >= r.hold() {
		r.nakSent = true
		r.Stats.HoleNAKs++
		r.answer(Nak)
	}
}

// HoleDeadline is when the current hole's hold time runs out (Config.WithReorder): the time
// the responder NAKs the hole if no packet fills it by then, whether or not another packet
// arrives (OnHoleTimer); under Config.WithReorderFanIn it moves with the NIC's fan-in, so
// call it again after other QPs' packets. sim.MaxTime when no hole is open, it was already
// NAKed, or out-of-order placement is off.
func (r *Receiver) HoleDeadline() sim.Time {
	if r.held == 0 || r.nakSent || r.cfg.reorderTime <= 0 {
		return sim.MaxTime
	}
	return r.holeAt + r.hold()
}

// OnHoleTimer is the hold timer of out-of-order placement firing at now: a hole still open
// past its hold time is NAKed once (go-back-N resends from the expected PSN), as reorderData
// does when a later packet arrives. Without it a hole at a transfer's tail (its last packets
// overtaken, or lost on a link that died, with nothing after them) waits the requester's
// local ACK timeout (1.07 s under IB's NCCL defaults).
func (r *Receiver) OnHoleTimer(now sim.Time) {
	if d := r.HoleDeadline(); d == sim.MaxTime || now < d {
		return
	}
	r.nakSent = true
	r.Stats.HoleNAKs++
	r.answer(Nak)
}
