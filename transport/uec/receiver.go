package uec

import (
	"slices"

	"github.com/lockstepsim/lockstep/sim"
)

// ReceiverStats counts a receiver's work.
type ReceiverStats struct {
	PlacedBytes     int64 // payload placed (each PSN once)
	Packets         int64 // data packets received whole, duplicates included
	Duplicates      int64 // whole data packets already placed
	Trimmed         int64 // trimmed headers received, each answered by a NACK
	TrimmedLastHop  int64 // of which trimmed at the last hop
	OutOfOrderDrops int64 // ROD: whole packets ahead of the next PSN, discarded
	OutOfWindow     int64 // packets beyond the PSN window, discarded
	ACKs, NACKs     int64 // sent
}

// RxCompletion is a message whose every byte was placed, in posting order.
type RxCompletion struct {
	Done  sim.Time
	Bytes int64
}

// Receiver is one connection's receiving side [UEC §3.5 PDS]. Under RUD it places every new
// packet at once, whatever its order, and answers each with a SACK: Cum (every PSN below it
// placed) and a bitmap of the 64 PSNs after Cum; a trimmed header gets a NACK naming the PSN
// (reason trimmed, or trimmed at the last hop). Under ROD only the next PSN is placed; a
// packet ahead of it is discarded and answered, once per gap, by a NACK out-of-order naming
// the PSN the receiver waits for. A message completes when Cum passes its last PSN, so
// completions come in posting order.
//
// Invariants: the ring holds the PSNs cum..cum+window-1 only; bit cum is clear.
type Receiver struct {
	rod     bool
	window  uint64
	ring    []uint64 // bit (psn mod window): placed, for cum <= psn < cum+window
	cum     uint64
	lens    map[uint64]int64 // pending message ends -> their bytes placed so far
	ends    []uint64         // pending message ends, ascending
	nackGap uint64           // ROD: cum+1 when an out-of-order NACK was sent for cum
	out     []Header
	comps   []RxCompletion
	// ACK coalescing: every ackEvery in-order packets, or ackDelay after the first pending.
	ackEvery            int
	ackDelay            sim.Time
	pending             int
	pendHdr             Header
	pendCE              bool
	pendSince, deadline sim.Time
	// Stats counts the receiver's work; the caller may read it.
	Stats ReceiverStats
}

// NewReceiver returns the receiving side for cfg (defaults filled here).
func NewReceiver(cfg Config) *Receiver {
	cfg = cfg.WithDefaults()
	w := uint64(cfg.WindowPSNs)
	return &Receiver{rod: cfg.Delivery == DeliveryROD, window: w, ring: make([]uint64, w/64), lens: map[uint64]int64{},
		ackEvery: cfg.AckEvery, ackDelay: cfg.AckDelay, deadline: sim.MaxTime}
}

// SetAckDelay sets the longest a coalesced SACK waits (the adapter's automatic value when
// Config.AckDelay is 0).
func (r *Receiver) SetAckDelay(d sim.Time) { r.ackDelay = max(d, 0) }

// Deadline returns when OnTimer must next be called to send a coalesced SACK (sim.MaxTime:
// nothing pending).
func (r *Receiver) Deadline() sim.Time { return r.deadline }

// OnTimer sends the coalesced SACK pending since at least the ACK delay.
func (r *Receiver) OnTimer(now sim.Time) {
	if r.pending > 0 && now >= r.deadline {
		r.flush()
	}
}

// flush sends the pending coalesced SACK: for the last packet, CE if any pending one had it.
func (r *Receiver) flush() {
	if r.pending == 0 {
		return
	}
	h, ce := r.pendHdr, r.pendCE
	r.pending, r.pendCE, r.deadline = 0, false, sim.MaxTime
	r.sack(&h, ce)
}

func (r *Receiver) has(psn uint64) bool {
	i := psn % r.window
	return r.ring[i/64]&(1<<(i%64)) != 0
}

func (r *Receiver) set(psn uint64, on bool) {
	i := psn % r.window
	if on {
		r.ring[i/64] |= 1 << (i % 64)
	} else {
		r.ring[i/64] &^= 1 << (i % 64)
	}
}

// Cum returns the cumulative PSN: every PSN below it is placed.
func (r *Receiver) Cum() uint64 { return r.cum }

// OnData takes a data packet at now: trimmed says a queue cut it to its header (lastHop: at
// the port facing this host), ce that it arrived CE-marked. The answer is queued in Out.
func (r *Receiver) OnData(now sim.Time, h *Header, trimmed, lastHop, ce bool) {
	if h.PSN >= r.cum+r.window {
		r.Stats.OutOfWindow++
		return
	}
	if trimmed {
		r.Stats.Trimmed++
		reason := NackTrimmed
		if lastHop {
			r.Stats.TrimmedLastHop++
			reason = NackTrimmedLastHop
		}
		r.nack(h, reason, h.PSN)
		return
	}
	r.Stats.Packets++
	if h.PSN < r.cum || r.has(h.PSN) {
		r.Stats.Duplicates++
		r.flushInto(h, ce)
		return
	}
	if r.rod && h.PSN != r.cum {
		r.Stats.OutOfOrderDrops++
		if r.nackGap != r.cum+1 {
			r.nackGap = r.cum + 1
			r.nack(h, NackOutOfOrder, r.cum)
			return
		}
		r.flushInto(h, ce)
		return
	}
	r.place(now, h)
	if r.ackEvery <= 1 {
		r.flushInto(h, ce)
		return
	}
	// Coalesce: the SACK is cumulative and its bitmap names the holes.
	if r.pending == 0 {
		r.pendSince = now
		r.deadline = now + r.ackDelay
	}
	r.pending++
	r.pendHdr, r.pendCE = *h, r.pendCE || ce
	if r.pending >= r.ackEvery {
		r.flush()
	}
}

// flushInto answers h at once, folding any pending coalesced SACK into it (a SACK is
// cumulative; a pending CE mark rides along).
func (r *Receiver) flushInto(h *Header, ce bool) {
	ce = ce || r.pendCE
	r.pending, r.pendCE, r.deadline = 0, false, sim.MaxTime
	r.sack(h, ce)
}

// place records a new packet, advances cum and completes messages it passed.
func (r *Receiver) place(now sim.Time, h *Header) {
	r.Stats.PlacedBytes += int64(h.Len)
	if _, ok := r.lens[h.MsgEnd]; !ok && h.MsgEnd > r.cum {
		i, _ := slices.BinarySearch(r.ends, h.MsgEnd)
		r.ends = slices.Insert(r.ends, i, h.MsgEnd)
	}
	r.lens[h.MsgEnd] += int64(h.Len)
	r.set(h.PSN, true)
	for r.has(r.cum) {
		r.set(r.cum, false)
		r.cum++
	}
	for len(r.ends) > 0 && r.ends[0] <= r.cum {
		e := r.ends[0]
		r.comps = append(r.comps, RxCompletion{Done: now, Bytes: r.lens[e]})
		delete(r.lens, e)
		r.ends = r.ends[1:]
	}
}

func (r *Receiver) sack(h *Header, ce bool) {
	var bm uint64
	if !r.rod {
		for i := uint64(0); i < BitmapBits && r.cum+1+i < r.cum+r.window; i++ {
			if r.has(r.cum + 1 + i) {
				bm |= 1 << i
			}
		}
	}
	r.Stats.ACKs++
	r.out = append(r.out, Header{Kind: ACK, EV: h.EV, PSN: h.PSN, Cum: r.cum, Bitmap: bm, Echo: h.TS, ECE: ce})
}

func (r *Receiver) nack(h *Header, reason NackReason, psn uint64) {
	r.Stats.NACKs++
	r.out = append(r.out, Header{Kind: NACK, EV: h.EV, PSN: psn, Cum: r.cum, Echo: h.TS, Reason: reason})
}

// Out returns the answers queued since the last ClearOut.
func (r *Receiver) Out() []Header { return r.out }

// ClearOut empties the answer queue.
func (r *Receiver) ClearOut() { r.out = r.out[:0] }

// Completions returns the messages placed in full since the last ClearCompletions.
func (r *Receiver) Completions() []RxCompletion { return r.comps }

// ClearCompletions empties the completion list.
func (r *Receiver) ClearCompletions() { r.comps = r.comps[:0] }
