package mrc

import (
	"math"

	"github.com/lockstepsim/lockstep/sim"
)

// ReceiverStats counts what a Receiver did.
type ReceiverStats struct {
	DataPackets   int64 // data packets received whole (duplicates included)
	Duplicates    int64 // whole data packets for PSNs already placed
	Trimmed       int64 // trimmed data headers received (each NACKed)
	OutOfWindow   int64 // data packets beyond the receive window (each NACKed)
	SACKs, NACKs  int64 // answers sent
	Probes        int64 // probes answered
	PlacedBytes   int64 // payload bytes placed (each byte once)
	CEPackets     int64 // data packets that arrived with CE
	LastHopTrims  int64 // of Trimmed, trimmed at the last hop
	ReorderedPkts int64 // data packets that arrived above the cumulative PSN (out of order)
}

// Receiver is the responder side of one MRC connection: it places packets by address in any
// order, acknowledges with SACKs, NACKs trimmed and out-of-window packets, answers probes, and
// completes transfers in order when every byte is placed [MRC §2.1; API].
type Receiver struct {
	cfg     Config
	qp      uint32
	cum     uint32 // every PSN below cum is placed
	wnd     uint32
	got     []uint64 // bitset over PSN & (len*64-1) for PSNs in [cum, cum+wnd)
	mask    uint32
	pending int // data packets not yet acknowledged
	// pendingSince is when the oldest unacknowledged packet arrived; the delayed SACK is due
	// AckDelay later.
	pendingSince sim.Time
	// pendLo, pendHi bound the PSNs placed since the last answer; the answer's bitmap must
	// cover them.
	pendLo, pendHi uint32
	lastData       Header // the latest data packet's header, echoed by a delayed SACK
	lastCE         bool

	lastPSN []uint32 // per transfer: LastPSN+1, 0 while unknown
	bytes   []int64  // per transfer: payload bytes placed
	posted  []sim.Time
	first   []sim.Time // per transfer: first packet seen
	doneMsg int

	out  []Header
	done []Completion

	host *HostRx // the receiving host's NIC share, nil for none
	busy bool    // counted in host.active: a transfer is under way
	// The sender's latest report (Header.InFlight, Held), counted in host's sums while busy.
	repInFlight int64
	repHeld     bool
	slot        int // index in host.members while busy

	Stats ReceiverStats
}

// HostRx is the receive side of one host's NIC, shared by the Receivers of every QP that ends
// there: it counts the QPs with a transfer under way toward the host and shares a byte budget
// among them, equally (the default) or max-min over what their senders report using
// (SetMaxMin, shareOf), which their answers carry to the senders as Header.RcvWnd
// (receiver back-pressure; lockstep's reading of MRC's receiver congestion-window penalty and
// of UEC's receiver-credit congestion control, RCCC [UEC §3.6]: the receiver knows how many
// senders converge on it, which no sender does). A share below one packet makes senders pace
// (Sender.Window).
//
// A QP alone toward the host gets no share (RcvWnd 0): its window is its own congestion
// control's business, and a cap near one BDP would cost a lone sprayed flow the queueing
// spraying adds to its RTT. Among two or more, the budget moves between 9/8 BDP (the host's
// NIC rate x the base RTT, with an eighth for jitter: less leaves its link idle; or Max if
// that is lower) and Max (rcv_window_bdp BDPs, default 1.4): each packet trimmed at the host's own last hop
// (TRIMMED_LASTHOP) means the budget overfills the queue in front of the host, so it is cut
// by 1/8, at most once per base RTT; packets placed whole grow it by 1/8 BDP per budget's
// worth of bytes (about an eighth of a BDP per round trip). With the MRC profile's last-hop
// trim threshold of 1.5 BDP the budget stays at its maximum; with switch queues of a few
// packets it settles lower. Without any of this an incast of N starts every round trip at N
// windows of up to 1.5 BDP and trims for many of them. docs/protocols.md gives the
// measurements. Not safe for concurrent use.
type HostRx struct {
	budget, minB, maxB float64 // bytes
	rtt                sim.Time
	nextCut            sim.Time
	active             int // QPs with a transfer under way here
	// The active QPs' receivers (their senders' reports give what each uses), the level of
	// shareOf, and whether a report, the budget or the membership changed since it was
	// worked out.
	members []*Receiver
	level   int64 // heldLevel, while not dirty
	dirty   bool
	maxMin  bool // SetMaxMin: shareOf shares max-min, not equally
	// MaxActive is the most QPs that were under way at once, and Cuts the budget cuts, for
	// reports.
	MaxActive int
	Cuts      int64
}

// MinRcvWnd is the smallest share HostRx hands out, in bytes: one trimmed header.
const MinRcvWnd = 64

// NewHostRx returns the shared receive state of a host whose NIC moves bdp bytes per base RTT
// rtt, with a budget of at most factor BDPs (and at least 9/8 of one, unless factor is lower).
func NewHostRx(bdp int64, factor float64, rtt sim.Time) *HostRx {
	b := float64(max(bdp, MinRcvWnd))
	hi := max(factor*b, MinRcvWnd)
	lo := min(b*9/8, hi)
	return &HostRx{budget: hi, minB: lo, maxB: hi, rtt: rtt}
}

// Active returns the number of QPs with a transfer under way toward the host.
func (h *HostRx) Active() int { return h.active }

// Budget returns the bytes in flight toward the host that the QPs under way share now.
func (h *HostRx) Budget() int64 { return int64(h.budget) }

// Share returns the equal share of the budget in bytes, budget / active QPs, at least
// MinRcvWnd; 0 (no share) while at most one QP is under way. What each QP is handed is
// shareOf's.
func (h *HostRx) Share() int64 {
	if h.active <= 1 {
		return 0 // one QP alone: its own congestion control's business
	}
	return max(int64(h.budget)/int64(h.active), MinRcvWnd)
}

// shareOf returns the share handed to QP r, an active QP, in bytes, from its senders'
// reports (Header.InFlight, Held): a QP its sender reports held by the share wants more, one
// not held is held back by something else (its own NIC, window or backlog) and uses what it
// has in flight. A QP not held is handed the equal share (Share). A QP held is handed an
// equal part of the budget the QPs not held leave, each of those counted at what it uses up
// to the equal share, and at least the equal share: the first round of max-min water-filling
// (Bertsekas and Gallager, Data Networks, 2nd ed., §6.5.2: the QPs whose demand is below the
// equal share are satisfied, the rest split what they leave). UEC's receiver credit grants
// only connections that still request credit [UEC §3.6, RCCC; docs/protocols.md "RCCC"], so
// a sender held elsewhere does not keep budget the others could use; with the equal split
// alone, a receiver of two QPs, one held by its NIC at a third of the budget, held the other
// to half of it. With every QP held, or none, each gets the equal share, as before. A QP not
// held is not handed the exact water level (which it could grow into past what the level was
// worked out for): on 16 hosts that gave grouped all-to-all on 8 oversubscribed planes 396.2
// us against this rule's 400.8, but pairwise 470.6 against 463.2 (three seeds each;
// docs/protocols.md, "The receiver's share"). 0 while at most one QP is under way.
//
// Only with SetMaxMin(true) (transport.mrc.rcv_share: max_min); otherwise every QP gets the
// equal share.
func (h *HostRx) shareOf(r *Receiver) int64 {
	eq := h.Share()
	if eq == 0 || !h.maxMin || !r.repHeld {
		return eq
	}
	if h.dirty {
		h.level = h.heldLevel(eq)
		h.dirty = false
	}
	return max(eq, h.level)
}

// SetMaxMin makes shareOf share the budget max-min over what the QPs use (on) or equally
// (off, the default; Config.RcvShare).
func (h *HostRx) SetMaxMin(on bool) {
	h.maxMin = on
	h.dirty = true
}

// heldLevel is what each held QP is handed before the equal-share floor: the budget less what
// the QPs not held use (each at most eq), over the held QPs.
func (h *HostRx) heldLevel(eq int64) int64 {
	rem, held := int64(h.budget), int64(0)
	for _, m := range h.members {
		if m.repHeld {
			held++
		} else {
			rem -= min(m.repInFlight, eq)
		}
	}
	if held == 0 {
		return eq
	}
	return rem / held
}

// join and leave add r to and remove it from the active QPs' receivers.
func (h *HostRx) join(r *Receiver) {
	r.slot = len(h.members)
	h.members = append(h.members, r)
	h.dirty = true
}

func (h *HostRx) leave(r *Receiver) {
	last := h.members[len(h.members)-1]
	h.members[r.slot], last.slot = last, r.slot
	h.members = h.members[:len(h.members)-1]
	h.dirty = true
}

// report records the sender's latest InFlight and Held, from a data packet (whole or trimmed).
func (r *Receiver) report(h *Header) {
	if in := int64(h.InFlight); in != r.repInFlight || h.Held != r.repHeld {
		r.repInFlight, r.repHeld = in, h.Held
		if r.host != nil && r.busy {
			r.host.dirty = true
		}
	}
}

// onLastHopTrim cuts the budget for a packet trimmed at the host's last hop at now.
func (h *HostRx) onLastHopTrim(now sim.Time) {
	if now < h.nextCut {
		return
	}
	h.nextCut = now + h.rtt
	h.budget = max(h.minB, h.budget*7/8)
	h.Cuts++
	h.dirty = true
}

// onPlaced grows the budget for bytes placed whole.
func (h *HostRx) onPlaced(bytes int64) {
	if h.budget < h.maxB {
		h.budget = min(h.maxB, h.budget+h.minB/8*float64(bytes)/h.budget)
		h.dirty = true
	}
}

// SetHost makes the receiver count itself in h while a transfer is under way and put h's
// share in its answers (Header.RcvWnd). nil turns the share off.
func (r *Receiver) SetHost(h *HostRx) { r.host = h }

// touch counts the receiver as busy when a packet of transfer msg arrives and msg is not yet
// complete.
func (r *Receiver) touch(msg uint32) {
	if r.host != nil && !r.busy && int(msg) >= r.doneMsg {
		r.busy = true
		r.host.active++
		r.host.join(r)
		r.host.MaxActive = max(r.host.MaxActive, r.host.active)
	}
}

// NewReceiver makes the responder side of connection qp. cfg must be valid (the sender's
// config).
func NewReceiver(cfg Config, qp uint32) *Receiver {
	cfg = cfg.WithDefaults()
	wnd := uint32(cfg.WindowMPR * 128)
	n := uint32(64)
	for n < 2*wnd {
		n <<= 1
	}
	return &Receiver{cfg: cfg, qp: qp, wnd: wnd, got: make([]uint64, n/64), mask: n - 1}
}

// Out returns the answers to send; the caller sends them and calls ClearOut.
func (r *Receiver) Out() []Header { return r.out }

// ClearOut empties the outbox, keeping its memory.
func (r *Receiver) ClearOut() { r.out = r.out[:0] }

// Completions returns transfers fully placed since the last ClearCompletions, in order. Posted
// is when the first packet of the transfer arrived (the receiver does not see posting).
func (r *Receiver) Completions() []Completion { return r.done }

// ClearCompletions empties the completion list.
func (r *Receiver) ClearCompletions() { r.done = r.done[:0] }

// CumPSN returns the cumulative PSN: every PSN below it is placed.
func (r *Receiver) CumPSN() uint32 { return r.cum }

func (r *Receiver) has(psn uint32) bool {
	i := psn & r.mask
	return r.got[i>>6]&(1<<(i&63)) != 0
}

func (r *Receiver) set(psn uint32, v bool) {
	i := psn & r.mask
	if v {
		r.got[i>>6] |= 1 << (i & 63)
	} else {
		r.got[i>>6] &^= 1 << (i & 63)
	}
}

// OnData takes a data packet. trimmed says it arrived cut to its header (lastHop: cut at the
// port facing this host); ce says it carried a CE mark.
func (r *Receiver) OnData(now sim.Time, h *Header, trimmed, lastHop, ce bool) {
	r.touch(h.Msg)
	r.report(h)
	if trimmed {
		r.Stats.Trimmed++
		reason := NackTrimmed
		if lastHop {
			reason = NackTrimmedLastHop
			r.Stats.LastHopTrims++
			if r.host != nil {
				r.host.onLastHopTrim(now)
			}
		}
		r.nack(h, reason, ce)
		return
	}
	r.Stats.DataPackets++
	if ce {
		r.Stats.CEPackets++
	}
	psn := h.PSN
	switch {
	case int32(psn-r.cum) < 0 || r.has(psn):
		r.Stats.Duplicates++
		r.sack(h, ce) // the sender missed our answer: tell it again at once
		return
	case psn-r.cum >= r.wnd:
		r.Stats.OutOfWindow++
		r.nack(h, NackOutOfWindow, ce)
		return
	}
	// Place the payload and learn the transfer's extent.
	m := int(h.Msg)
	for len(r.lastPSN) <= m {
		r.lastPSN = append(r.lastPSN, 0)
		r.bytes = append(r.bytes, 0)
		r.first = append(r.first, 0)
	}
	if r.lastPSN[m] == 0 {
		r.lastPSN[m] = h.LastPSN + 1
		r.first[m] = now
	}
	r.bytes[m] += int64(h.Len)
	r.Stats.PlacedBytes += int64(h.Len)
	if r.host != nil {
		r.host.onPlaced(int64(h.Len))
	}
	outOfOrder := psn != r.cum
	if outOfOrder {
		r.Stats.ReorderedPkts++
	}
	// One SACK's bitmap spans 64 PSNs: if this packet and the ones waiting for an answer no
	// longer fit one span above the cumulative PSN, answer those first.
	if r.pending > 0 {
		lo, hi := r.pendLo, r.pendHi
		if int32(psn-lo) < 0 {
			lo = psn
		}
		if int32(psn-hi) > 0 {
			hi = psn
		}
		if int32(hi-r.cum) > BitmapPSNs && int32(hi-lo) >= BitmapPSNs {
			r.sack(&r.lastData, r.lastCE)
		}
	}
	r.set(psn, true)
	before := r.cum
	for r.has(r.cum) {
		r.set(r.cum, false)
		r.cum++
	}
	completed := r.complete(now)
	if r.pending == 0 {
		r.pendingSince = now
		r.pendLo, r.pendHi = psn, psn
	}
	if int32(psn-r.pendLo) < 0 {
		r.pendLo = psn
	}
	if int32(psn-r.pendHi) > 0 {
		r.pendHi = psn
	}
	r.pending++
	r.lastData, r.lastCE = *h, ce
	// Answer at once on a CE mark (the sender must hear about that EV [MRC §2.1]), a completed
	// transfer or a hole just filled; otherwise every AckEvery packets (and AckDelay at most).
	// Lockstep reading of "at once on gaps": with spraying, packets arrive out of order all
	// the time, and answering each at once would multiply SACKs by AckEvery for no gain, since
	// losses are found by time (RACK), not by the first gap.
	if ce || completed || r.cum-before > 1 || r.pending >= r.cfg.AckEvery {
		r.sack(h, ce)
	}
}

// complete reports transfers whose every PSN is below cum, in order.
func (r *Receiver) complete(now sim.Time) bool {
	any := false
	for r.doneMsg < len(r.lastPSN) {
		end := r.lastPSN[r.doneMsg]
		if end == 0 || int32(r.cum-end) < 0 {
			break
		}
		r.done = append(r.done, Completion{Msg: uint32(r.doneMsg), Bytes: r.bytes[r.doneMsg], Posted: r.first[r.doneMsg], Done: now})
		r.doneMsg++
		any = true
	}
	if any && r.busy && r.doneMsg == len(r.lastPSN) {
		r.busy = false // every transfer seen is placed: until another arrives
		r.host.active--
		r.host.leave(r)
	}
	return any
}

// Deadline returns when the delayed SACK for coalesced packets is due (MaxTime if none is
// pending): AckDelay after the oldest unacknowledged packet, so a sender whose last packets
// were placed hears of them even when nothing else arrives.
func (r *Receiver) Deadline() sim.Time {
	if r.pending == 0 {
		return sim.MaxTime
	}
	return r.pendingSince + r.cfg.AckDelay
}

// OnTimer sends the delayed SACK if it is due.
func (r *Receiver) OnTimer(now sim.Time) {
	if r.pending > 0 && now >= r.pendingSince+r.cfg.AckDelay {
		r.sack(&r.lastData, r.lastCE)
	}
}

// OnProbe answers a probe with a SACK that echoes its EV and timestamp [API].
func (r *Receiver) OnProbe(now sim.Time, h *Header, ce bool) {
	r.Stats.Probes++
	a := r.answer(SACK, h, ce)
	a.ForProbe = true
	r.out = append(r.out, a)
	r.Stats.SACKs++
}

func (r *Receiver) sack(h *Header, ce bool) {
	r.out = append(r.out, r.answer(SACK, h, ce))
	r.pending = 0
	r.Stats.SACKs++
}

func (r *Receiver) nack(h *Header, reason NackReason, ce bool) {
	a := r.answer(NACK, h, ce)
	r.pending = 0 // the NACK's cumulative PSN and bitmap acknowledge too
	a.Reason = reason
	a.NackPSN = h.PSN
	r.out = append(r.out, a)
	r.Stats.NACKs++
}

// answer builds a SACK or NACK for h: cumulative PSN, the bitmap of the 64 PSNs above it, and
// the echoes.
func (r *Receiver) answer(k Kind, h *Header, ce bool) Header {
	// The bitset holds only PSNs in [cum, cum+wnd) and is at least 2 x wnd >= 128 bits, so
	// any 64 bits can be read straight out of it.
	// The bitmap covers [cum+1, cum+64] unless packets waiting for this answer lie beyond;
	// then it starts at the lowest of them above cum (OnData keeps them within one span).
	base := r.cum + 1
	if r.pending > 0 && int32(r.pendHi-r.cum) > BitmapPSNs {
		if int32(r.pendLo-base) > 0 {
			base = r.pendLo
		} else {
			base = r.pendHi - (BitmapPSNs - 1)
		}
	}
	start := base & r.mask
	w, off := start>>6, start&63
	bm := r.got[w] >> off
	if off != 0 {
		bm |= r.got[(int(w)+1)%len(r.got)] << (64 - off)
	}
	a := Header{Kind: k, QP: r.qp, CumPSN: r.cum, Bitmap: bm, BitmapBase: base, EchoEV: h.EV, EchoTS: h.TS, CE: ce}
	if r.host != nil {
		a.RcvWnd = uint32(min(r.host.shareOf(r), math.MaxUint32))
	}
	return a
}
