package roce

import (
	"errors"
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
)

// ErrRetryExceeded is wrapped by the error a Sender reports when its retry count runs out (the
// IBTA completion status "transport retry counter exceeded", IBV_WC_RETRY_EXC_ERR). The QP is
// in the error state and sends nothing more.
var ErrRetryExceeded = errors.New("transport retry counter exceeded")

// MaxOutstandingPSNs is how many PSNs may be sent and unacknowledged at once: half the 24-bit
// PSN space [IBTA §9.7: outstanding PSNs stay within half the 24-bit PSN space, 2^23].
const MaxOutstandingPSNs = 1 << 23

// Conn identifies one QP and the NIC port it runs on; the same value makes both ends.
type Conn struct {
	// QP is the connection number, the same at both ends; it rides in every Header.
	QP uint32
	// LineRate is the NIC port rate (bits/s, > 0): the sender never paces faster, and DCQCN
	// starts and recovers to it. Only the Sender uses it.
	LineRate sim.Rate
	// SrcPort is the QP's UDP source port, the field the fabric's ECMP hashes; 0 means
	// UDPSourcePort(0, QP). Runners should pass UDPSourcePort(seed, QP) so ports vary by
	// scenario seed.
	SrcPort uint16
}

func (c Conn) srcPort() uint16 {
	if c.SrcPort != 0 {
		return c.SrcPort
	}
	return UDPSourcePort(0, c.QP)
}

// Completion reports a finished transfer: Bytes of payload posted at Posted, done at Done. On
// a Sender, Done is when the last PSN was acknowledged (the requester's completion); on a
// Receiver, when the last byte was placed, and Posted is when its first packet arrived.
type Completion struct {
	Msg    uint32
	Bytes  int64
	Posted sim.Time
	Done   sim.Time
}

// SenderStats counts what a Sender did. Bytes are wire bytes, headers included.
type SenderStats struct {
	DataPackets, DataBytes int64 // data packets sent, retransmissions included
	RetxPackets, RetxBytes int64 // of those, packets sent again (go-back-N resends)
	ACKs                   int64 // ACKs received
	DupACKs                int64 // of those, ACKs that acknowledged nothing new
	NAKs                   int64 // sequence-error NAKs received
	StaleNAKs              int64 // of those, NAKs for PSNs already acknowledged or never sent
	GoBackN                int64 // rewinds a NAK caused (resend from its PSN)
	Timeouts               int64 // local ACK timeout expiries (each a rewind to the oldest unacknowledged PSN, or the QP error)
	CNPs                   int64 // CNPs received
	WindowStalls           int64 // times sending waited for the window
}

// message is one posted transfer's extent in PSNs and wire bytes.
type message struct {
	bytes   int64
	posted  sim.Time
	first   uint32 // first PSN
	last    uint32 // last PSN
	cumWire int64  // wire bytes of every PSN posted before first
}

// Sender is the requester side of one RC QP [IBTA §9.7]: it cuts posted RDMA Write transfers
// into PSN-numbered packets, paces them at the DCQCN rate, and recovers losses by go-back-N:
// on a sequence-error NAK it resends everything from the NAK's PSN, on a local ACK timeout
// everything from the oldest unacknowledged PSN [IBTA §9.7, requester: NAK-sequence error,
// transport timer; docs/protocols.md, "RoCEv2: go-back-N"]. After RetryCount retries without
// progress the QP errors (Err). Not safe for concurrent use.
//
// Invariants: una <= next <= high <= end (modulo 2^32): every PSN below una is acknowledged,
// next is the next PSN to send (new or again), high is one past the highest PSN ever sent, end
// is one past the last PSN posted. PSNs in [next, high) were sent and will be sent again.
type Sender struct {
	cfg     Config
	qp      uint32
	srcPort uint16
	cc      *DCQCN
	ext     RateControl // Config.WithRateControl's reaction point; nil: cc (DCQCN)

	msgs    []message // posted transfers not yet acknowledged completely, from msgBase on
	msgBase uint32    // transfer number of msgs[0]
	doneIdx int       // index in msgs of the first incomplete transfer (holds una)
	sendIdx int       // index in msgs of the transfer holding next (len(msgs) when next == end)
	endWire int64     // wire bytes of every PSN posted

	una, next, high, end uint32

	lastSend sim.Time // when the latest packet was sent (before the first: the first Post)
	lastWire int64    // its wire bytes; 0 before the first packet
	rtoAt    sim.Time // local ACK timeout deadline while PSNs are outstanding (una != high)
	retries  int      // retries since the last progress

	out  []Header
	done []Completion
	err  error

	gate  func() bool // SetNICGate: whether the NIC port has room for a packet; nil = always
	gated bool        // the last Pump stopped with a packet due because the NIC had no room

	// Stats counts what the sender did.
	Stats SenderStats
}

// NewSender makes the requester side of QP c.QP. cfg's zero fields take their defaults.
// Errors: an invalid configuration (named by its YAML path under ConfigPath), a non-positive
// line rate, or a DCQCN min rate above it.
func NewSender(cfg Config, c Conn) (*Sender, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(ConfigPath); err != nil {
		return nil, err
	}
	if c.LineRate <= 0 {
		return nil, fmt.Errorf("roce: qp %d: line rate %v must be positive", c.QP, c.LineRate)
	}
	cc, err := NewDCQCN(cfg.DCQCN, c.LineRate)
	if err != nil {
		return nil, fmt.Errorf("roce: qp %d: %w", c.QP, err)
	}
	s := &Sender{cfg: cfg, qp: c.QP, srcPort: c.srcPort(), cc: cc, rtoAt: sim.MaxTime}
	if cfg.rateControl != nil {
		s.ext = cfg.rateControl.NewRateControl(c.LineRate)
	}
	return s, nil
}

// Config returns the effective configuration.
func (s *Sender) Config() Config { return s.cfg }

// QP returns the connection number.
func (s *Sender) QP() uint32 { return s.qp }

// SrcPort returns the QP's UDP source port (the fabric's ECMP entropy); every packet of the QP,
// data and answers alike, carries it. The destination port is UDPPort.
func (s *Sender) SrcPort() uint16 { return s.srcPort }

// DCQCN returns the reaction point, for reports (its values are as of the last call that took
// a time; Rate and Alpha bring them up to a given time).
func (s *Sender) DCQCN() *DCQCN { return s.cc }

// Rate returns the current pacing rate at now, bits/s: DCQCN's Rc (the line rate when DCQCN is
// off), or the WithRateControl reaction point's.
func (s *Sender) Rate(now sim.Time) sim.Rate {
	s.advance(now)
	return s.rate()
}

// RateControl returns the reaction point Config.WithRateControl made, nil under DCQCN.
func (s *Sender) RateControl() RateControl { return s.ext }

// advance brings the reaction point to now.
func (s *Sender) advance(now sim.Time) {
	if s.ext != nil {
		s.ext.Advance(now)
		return
	}
	s.cc.Advance(now)
}

// rate is the reaction point's current rate.
func (s *Sender) rate() sim.Rate {
	if s.ext != nil {
		return s.ext.Rate()
	}
	return s.cc.Rate()
}

// Alpha returns DCQCN's alpha at now.
func (s *Sender) Alpha(now sim.Time) float64 {
	s.cc.Advance(now)
	return s.cc.Alpha()
}

// Err returns the QP error that stopped the sender (wrapping ErrRetryExceeded), or nil.
func (s *Sender) Err() error { return s.err }

// Idle reports whether every posted transfer has been acknowledged.
func (s *Sender) Idle() bool { return s.doneIdx == len(s.msgs) }

// InFlight returns the wire bytes sent and neither acknowledged nor due to be sent again.
func (s *Sender) InFlight() int64 {
	return s.wireBelow(s.next, s.sendIdx) - s.wireBelow(s.una, s.doneIdx)
}

// Outstanding describes what the sender still waits for, for stall reports.
func (s *Sender) Outstanding() string {
	state := "ok"
	if s.err != nil {
		state = "error"
	}
	return fmt.Sprintf("qp %d (%s): una %d, next %d, high %d, end %d, in flight %d B, rate %v, alpha %.4f, retries %d of %d, RTO at %v, transfers done %d of %d",
		s.qp, state, s.una, s.next, s.high, s.end, s.InFlight(), s.rate(), s.cc.Alpha(), s.retries, s.cfg.RetryCount,
		s.rtoAt, s.msgBase+uint32(s.doneIdx), s.msgBase+uint32(len(s.msgs)))
}

// Out returns the headers to send, in order; the caller sends them and calls ClearOut.
func (s *Sender) Out() []Header { return s.out }

// ClearOut empties the outbox, keeping its memory.
func (s *Sender) ClearOut() { s.out = s.out[:0] }

// Completions returns transfers acknowledged completely since the last ClearCompletions, in
// posting order.
func (s *Sender) Completions() []Completion { return s.done }

// ClearCompletions empties the completion list.
func (s *Sender) ClearCompletions() { s.done = s.done[:0] }

// MaxPostedPSNs bounds the PSNs posted and not yet acknowledged on one QP (2^31 - 1), so that
// every PSN comparison modulo 2^32 stays exact: 8 TiB of backlog with 4 KiB packets.
const MaxPostedPSNs = 1<<31 - 1

// Post queues an RDMA Write of bytes (0..MaxMsgBytes; 0 sends one empty packet, as IBTA
// allows) posted at now, and returns its transfer number, counting from 0. Call Pump after.
// Errors: a length out of range, a backlog beyond MaxPostedPSNs packets, or the QP in the
// error state.
func (s *Sender) Post(now sim.Time, bytes int64) (uint32, error) {
	if s.err != nil {
		return 0, s.err
	}
	if bytes < 0 || bytes > MaxMsgBytes {
		return 0, fmt.Errorf("roce: qp %d: transfer of %d B is out of range; allowed 0..%d", s.qp, bytes, MaxMsgBytes)
	}
	pay := int64(s.cfg.PayloadBytes)
	npkts := max((bytes+pay-1)/pay, 1)
	if backlog := int64(s.end - s.una); npkts > MaxPostedPSNs-backlog {
		return 0, fmt.Errorf("roce: qp %d: transfer of %d B needs %d packets; with %d posted and unacknowledged that exceeds %d (post it in parts)",
			s.qp, bytes, npkts, backlog, MaxPostedPSNs)
	}
	if s.lastWire == 0 && s.end == 0 {
		s.lastSend = now // the pacer may start when the first transfer is posted
	}
	s.compact()
	m := message{bytes: bytes, posted: now, first: s.end, last: s.end + uint32(npkts) - 1, cumWire: s.endWire}
	s.msgs = append(s.msgs, m)
	s.end = m.last + 1
	s.endWire += bytes + npkts*int64(s.cfg.HeaderBytes) + RETHBytes
	return s.msgBase + uint32(len(s.msgs)-1), nil
}

// compact drops acknowledged transfers from the front of msgs once they are the larger half,
// so a long-lived QP's memory follows its backlog, not its history (amortised O(1), no
// allocation).
func (s *Sender) compact() {
	if s.doneIdx < 64 || 2*s.doneIdx < len(s.msgs) {
		return
	}
	n := copy(s.msgs, s.msgs[s.doneIdx:])
	s.msgs = s.msgs[:n]
	s.msgBase += uint32(s.doneIdx)
	s.sendIdx -= s.doneIdx
	s.doneIdx = 0
}

// payloadOf returns the payload bytes of psn in m.
func (s *Sender) payloadOf(m *message, psn uint32) int64 {
	pay := int64(s.cfg.PayloadBytes)
	if psn == m.last {
		return m.bytes - int64(m.last-m.first)*pay
	}
	return pay
}

// wireBelow returns the wire bytes of every PSN below psn; idx is the index of the transfer
// holding psn (len(msgs) when psn == end).
func (s *Sender) wireBelow(psn uint32, idx int) int64 {
	if idx >= len(s.msgs) {
		return s.endWire
	}
	m := &s.msgs[idx]
	k := int64(psn - m.first)
	if k == 0 {
		return m.cumWire
	}
	return m.cumWire + RETHBytes + k*int64(s.cfg.PayloadBytes+s.cfg.HeaderBytes)
}

// seekSend points sendIdx at the transfer holding next, moving from where it is.
func (s *Sender) seekSend() {
	for s.sendIdx > s.doneIdx && s.sendIdx > 0 && (s.sendIdx == len(s.msgs) || before(s.next, s.msgs[s.sendIdx].first)) {
		s.sendIdx--
	}
	for s.sendIdx < len(s.msgs) && after(s.next, s.msgs[s.sendIdx].last) {
		s.sendIdx++
	}
}

// NextSendAt returns when the pacer lets the next packet go: the last packet's send time plus
// its serialisation at the current DCQCN rate (so a rate change applies to the gap in
// progress). Before the first packet, the time of the first Post.
func (s *Sender) NextSendAt() sim.Time {
	if s.lastWire == 0 {
		return s.lastSend
	}
	return s.lastSend + s.rate().TxTime(s.lastWire)
}

// canSend reports whether a packet is waiting for nothing but the pacer: there is one, and the
// window and the PSN space have room for it.
func (s *Sender) canSend() bool {
	if s.next == s.end || s.next-s.una >= MaxOutstandingPSNs {
		return false
	}
	if s.cfg.Window == 0 || s.next == s.una {
		return true
	}
	return s.InFlight()+s.nextWire() <= int64(s.cfg.Window)
}

// nextWire returns the wire bytes of PSN next (next != end).
func (s *Sender) nextWire() int64 {
	m := &s.msgs[s.sendIdx]
	return s.cfg.dataWire(s.payloadOf(m, s.next), s.next == m.first)
}

// SetNICGate makes the sender pull-driven, like a NIC's transmit scheduler arbitrating among
// QPs on one port: Pump sends a due packet only while room() reports the NIC port has room,
// and otherwise stops with Gated true; Deadline then leaves the pacer out (the caller pumps
// again when the port drains). nil removes the gate. Without it, QPs sharing a port each pace
// at up to the line rate and together overfill the port's queue.
func (s *Sender) SetNICGate(room func() bool) { s.gate = room }

// Gated reports whether the last Pump stopped with a packet due because the NIC had no room.
func (s *Sender) Gated() bool { return s.gated }

// Pump sends what the pacer, the window and the posted data allow at now: at most one packet,
// since the pacer spaces packets by their serialisation at the current rate. Call it after
// Post; the On* methods and OnTimer call it themselves.
func (s *Sender) Pump(now sim.Time) {
	s.gated = false
	if s.err != nil {
		return
	}
	s.advance(now)
	for s.next != s.end && now >= s.NextSendAt() {
		if s.gate != nil && s.canSend() && !s.gate() {
			s.gated = true
			return
		}
		if !s.canSend() {
			if s.next-s.una < MaxOutstandingPSNs {
				s.Stats.WindowStalls++
			}
			return
		}
		s.send(now)
	}
}

// send emits PSN next.
func (s *Sender) send(now sim.Time) {
	psn := s.next
	m := &s.msgs[s.sendIdx]
	k := psn - m.first
	n := s.payloadOf(m, psn)
	h := Header{Kind: Data, QP: s.qp, PSN: psn, Len: int32(n)}
	switch {
	case m.first == m.last:
		h.Seg = SegOnly
	case k == 0:
		h.Seg = SegFirst
	case psn == m.last:
		h.Seg = SegLast
	default:
		h.Seg = SegMiddle
	}
	if h.Seg.opens() {
		h.MsgBytes = m.bytes
	}
	wire := s.cfg.dataWire(n, h.Seg.opens())
	h.Wire = int32(wire)
	// Ask for an ACK at once where waiting for the responder's coalescing would stall: the end
	// of a transfer (its completion), and a packet after which the window is full [IBTA §9.2.3:
	// the requester sets AckReq when it needs a response].
	if h.Seg.closes() {
		h.AckReq = true
	} else if s.cfg.Window != 0 && s.InFlight()+wire+int64(s.cfg.PayloadBytes+s.cfg.HeaderBytes) > int64(s.cfg.Window) {
		h.AckReq = true
	}
	s.Stats.DataPackets++
	s.Stats.DataBytes += wire
	if before(psn, s.high) {
		s.Stats.RetxPackets++
		s.Stats.RetxBytes += wire
	}
	s.out = append(s.out, h)
	s.next++
	if after(s.next, s.high) {
		s.high = s.next
	}
	if s.next == m.last+1 {
		s.sendIdx++
	}
	s.lastSend, s.lastWire = now, wire
	if s.rtoAt == sim.MaxTime {
		s.rtoAt = now + s.cfg.RTO
	}
	if s.ext != nil {
		s.ext.OnSent(now, wire)
		return
	}
	s.cc.OnSent(now, wire)
}

// acknowledge moves una up to e (una < e <= high): everything below e was received. It is
// progress, so the retry count resets and the local ACK timer restarts (or stops, with nothing
// outstanding) [IBTA §9.7, requester: transport timer].
func (s *Sender) acknowledge(now sim.Time, e uint32) {
	s.una = e
	if before(s.next, e) {
		s.next = e // acknowledged while waiting to be resent: skip them
	}
	s.retries = 0
	for s.doneIdx < len(s.msgs) && !after(s.msgs[s.doneIdx].last+1, s.una) {
		m := &s.msgs[s.doneIdx]
		s.done = append(s.done, Completion{Msg: s.msgBase + uint32(s.doneIdx), Bytes: m.bytes, Posted: m.posted, Done: now})
		s.doneIdx++
	}
	s.seekSend()
	if s.una == s.high {
		s.rtoAt = sim.MaxTime
	} else {
		s.rtoAt = now + s.cfg.RTO
	}
}

// OnAck takes an ACK: every PSN below h.PSN was received. An ACK for nothing new counts as a
// duplicate; one beyond what was sent is ignored (stale or foreign). Then pumps.
func (s *Sender) OnAck(now sim.Time, h *Header) {
	s.Stats.ACKs++
	if s.err != nil {
		return
	}
	switch e := h.PSN; {
	case !after(e, s.una) || after(e, s.high):
		s.Stats.DupACKs++
	default:
		s.acknowledge(now, e)
	}
	s.Pump(now)
}

// OnNak takes a sequence-error NAK: the responder expects h.PSN, having received everything
// below it, and drops what comes after until h.PSN arrives. Everything below h.PSN is
// acknowledged, and sending goes back to h.PSN: go-back-N [IBTA §9.7, requester: NAK-sequence
// error; docs/protocols.md, "RoCEv2: go-back-N"]. A NAK that acknowledges nothing new is a retry
// without progress and counts against RetryCount, as a timeout does. A NAK for a PSN already
// acknowledged, or beyond one past the highest PSN sent, or with nothing outstanding, is stale and
// ignored. Then pumps.
func (s *Sender) OnNak(now sim.Time, h *Header) {
	s.Stats.NAKs++
	if s.err != nil {
		return
	}
	e := h.PSN
	if before(e, s.una) || after(e, s.high) || s.una == s.high {
		s.Stats.StaleNAKs++
		s.Pump(now)
		return
	}
	if after(e, s.una) {
		s.acknowledge(now, e)
	} else if !s.retry(now) {
		return
	}
	if after(s.next, e) {
		s.next = e
		s.seekSend()
		s.Stats.GoBackN++
	}
	if s.una != s.high {
		s.rtoAt = now + s.cfg.RTO // the responder is alive: give the resend a full timeout
	}
	s.Pump(now)
}

// OnCNP takes a congestion notification: DCQCN cuts the rate [DCQCN §3.1]. The new rate
// stretches the gap after the packet in flight; no packet is sent here.
func (s *Sender) OnCNP(now sim.Time, h *Header) {
	s.Stats.CNPs++
	if s.err != nil {
		return
	}
	if s.ext != nil {
		s.ext.OnCNP(now)
		return
	}
	s.cc.OnCNP(now)
}

// retry counts one retry without progress; past RetryCount the QP errors and retry returns
// false [IBTA §9.7, requester: retry counter; ibv_modify_qp(3): retry_cnt].
func (s *Sender) retry(now sim.Time) bool {
	if s.retries >= s.cfg.RetryCount {
		s.err = fmt.Errorf("roce: qp %d at %v: %w: %d retries without progress (%s)",
			s.qp, now, ErrRetryExceeded, s.retries, s.Outstanding())
		s.rtoAt = sim.MaxTime
		return false
	}
	s.retries++
	return true
}

// Deadline returns when OnTimer must next be called: the earliest of the local ACK timeout
// (while PSNs are outstanding), the pacer's next send (while a packet waits for nothing else)
// and, during that wait, DCQCN's next rate increase (which may bring the send forward).
// MaxTime if none, and always once the QP has errored. The time may be in the past (call
// OnTimer at once).
func (s *Sender) Deadline() sim.Time {
	if s.err != nil {
		return sim.MaxTime
	}
	d := sim.MaxTime
	if s.una != s.high {
		d = s.rtoAt
	}
	if s.canSend() && !s.gated {
		at := s.NextSendAt()
		inc := s.cc.NextEvent()
		if s.ext != nil {
			inc = s.ext.NextEvent()
		}
		if inc < at {
			at = inc
		}
		d = min(d, at)
	}
	return d
}

// OnTimer handles whatever is due at now: DCQCN's timers, the local ACK timeout (count a
// retry, or error the QP once RetryCount retries brought no progress; otherwise resend from the
// oldest unacknowledged PSN [IBTA §9.7, requester: transport timer]) and the pacer.
func (s *Sender) OnTimer(now sim.Time) {
	if s.err != nil {
		return
	}
	s.advance(now)
	if s.una != s.high && now >= s.rtoAt {
		s.Stats.Timeouts++
		if !s.retry(now) {
			return
		}
		s.next = s.una
		s.seekSend()
		s.rtoAt = now + s.cfg.RTO
	}
	s.Pump(now)
}
