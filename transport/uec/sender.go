package uec

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/mrc"
)

// RetxCause says why a packet was sent again.
type RetxCause uint8

// Retransmission causes.
const (
	RetxTrim    RetxCause = iota // a trim NACK
	RetxSackGap                  // a SACK of a packet sent a reorder window later (RUD)
	RetxTimeout                  // the RTO expired
	RetxGoBack                   // ROD: sent again because an earlier PSN was (go-back-N)
	NumRetxCauses
)

// String names the cause as summary.json's retx_packets_by_cause keys do.
func (c RetxCause) String() string {
	return [...]string{"trim_nack", "sack_gap", "timeout", "go_back_n"}[c]
}

// Packet states at the sender.
const (
	stUnsent   uint8 = iota
	stInflight       // sent, not acknowledged, not deemed lost
	stLost           // deemed lost, queued to be sent again
	stAcked
)

// spkt is the sender's state of one PSN.
type spkt struct {
	sentAt sim.Time
	len    int32
	ev     uint16
	state  uint8
	cause  RetxCause // why it is queued again (stLost)
	tx     uint16    // transmissions so far
	tag    uint8     // the caller's mark of its latest transmission (SetTag: the NIC plane)
}

// txRec is one transmission in send order: the FIFO behind loss detection and the RTO.
type txRec struct {
	psn uint64
	at  sim.Time
	tx  uint16
}

// Completion is a message whose every packet was acknowledged, in posting order.
type Completion struct {
	Posted, Done sim.Time
	Bytes        int64
}

// SenderStats counts a sender's work.
type SenderStats struct {
	DataPackets int64 // data packets sent, retransmissions included
	DataBytes   int64 // their wire bytes
	Retx        [NumRetxCauses]int64
	RetxBytes   int64 // payload bytes sent again
	Timeouts    int64 // RTO expiries
	Acks, Nacks int64 // received
	Spurious    int64 // packets acknowledged after being deemed lost
	// RCCC: credit packets received, credit requests sent, wire bytes sent speculatively
	// (before or beyond credit), and last-hop trim NACKs not passed to NSCC.
	Credits, CreditRequests int64
	SpeculativeBytes        int64
	LastHopTrimsIgnored     int64
}

type msg struct {
	end    uint64 // first PSN after the message
	posted sim.Time
	bytes  int64
}

// Sender is one connection's sending side [UEC §3.5 PDS]: it cuts posted messages into
// packets, sends them as the congestion window and the PSN window allow (Next), takes ACKs
// and NACKs (OnAck), finds losses (trim NACKs; under RUD a SACK of a packet sent a reorder
// window later; the RTO), sends lost packets again before new ones, and reports completed
// messages in posting order. It never reads a clock and is not safe for concurrent use.
//
// Invariants: una <= next; every PSN below una is acknowledged; inflight is the wire bytes of
// the packets in stInflight.
type Sender struct {
	cfg      Config
	rod      bool
	qp       uint32
	nscc     *mrc.NSCC // nil under cc none
	fixedWnd int64     // cc none: the window
	ev       *EVPicker
	mtu      int64 // a full data packet's wire bytes

	pkts []spkt // by PSN - base
	base uint64 // PSN of pkts[0]
	una  uint64 // lowest unacknowledged PSN
	next uint64 // next new PSN
	end  uint64 // PSNs posted
	msgs []msg  // posted messages not yet completed, in order
	// doneEnd is the first PSN of msgs[0] (the end of the last completed message).
	doneEnd uint64
	retx    []uint64
	rtxH    int
	txq     []txRec
	txH     int

	inflight int64
	rto      sim.Time
	reorder  sim.Time
	backoff  int
	baseRTT  sim.Time
	deadline sim.Time
	comps    []Completion
	err      error

	// RCCC (rccc true): credit = specTotal + granted - consumed wire bytes; need is every
	// wire byte the connection has had to send (posted, then each packet deemed lost again),
	// and the request the destination is told is need - specTotal, cumulative.
	rccc       bool
	spec       int64 // the speculative window, wire bytes
	specTotal  int64
	granted    int64
	consumed   int64
	need       int64
	advertised int64    // the largest request sent (data packets and credit requests)
	starved    bool     // Next last stopped for want of credit
	creditAt   sim.Time // last credit request sent or credit received
	creditBack int      // credit re-requests since the connection was last idle
	lostSends  []sim.Time
	trackFail  bool     // keep failed (TrackFailures)
	failed     []uint64 // PSNs deemed lost on evidence of a bad path (Failures)
	// Stats counts the sender's work; the caller may read it.
	Stats SenderStats
}

// NewSender returns the sending side of connection qp for cfg (defaults filled here) over
// path p, drawing its EVs from rng. Errors: an invalid cfg (the field named under
// "transport.uec"), a path without base RTT or NIC rate, or an NSCC setup NSCC rejects.
func NewSender(cfg Config, qp uint32, p Path, rng *rand.Rand) (*Sender, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate("transport.uec"); err != nil {
		return nil, err
	}
	if p.BaseRTT <= 0 || p.NICRate <= 0 {
		return nil, fmt.Errorf("uec: qp %d: path needs a positive base RTT and NIC rate (got %v, %v)", qp, p.BaseRTT, p.NICRate)
	}
	s := &Sender{cfg: cfg, rod: cfg.Delivery == DeliveryROD, qp: qp, mtu: int64(cfg.WireBytes(cfg.PayloadBytes)), baseRTT: p.BaseRTT, deadline: sim.MaxTime}
	s.rto, s.reorder = cfg.Timers(p)
	lb, paths := cfg.LB, cfg.Paths
	if s.rod || lb == LBSingle {
		lb = "" // one entropy per connection [UEC §3.5 ROD]
	}
	if s.rod {
		paths = DefaultPaths // ROD's one EV, drawn from the default pool
	}
	s.ev = NewEVPicker(lb, paths, cfg.REPSBuffer, rng)
	if lb == LBREPS {
		f := cfg.REPSFreeze
		if f == 0 {
			f = DefaultREPSFreezeRTOs * s.rto
		}
		s.ev.SetFreeze(f)
	}
	n := cfg.NSCC
	if cfg.HasRCCC() {
		s.rccc = true
		s.spec = max(int64(cfg.RCCC.SpeculativeBDP*float64(p.NICRate.BytesIn(p.BaseRTT))), 1)
	}
	switch {
	case cfg.HasNSCC():
		c, err := mrc.NewNSCC(mrc.NSCCConfig{BaseRTT: p.BaseRTT, LinkRate: p.NICRate, MTU: s.mtu,
			TargetFactor: n.TargetFactor, MaxWindowFactor: n.MaxWindowFactor, Gamma: n.Gamma,
			FairIncrease: n.FairIncrease, PropIncrease: n.PropIncrease})
		if err != nil {
			return nil, fmt.Errorf("transport.uec.nscc: %w", err)
		}
		s.nscc = c
	case cfg.CC == CCRCCC:
		s.fixedWnd = math.MaxInt64 // credit alone limits what is in flight
	default:
		s.fixedWnd = max(int64(n.MaxWindowFactor*float64(p.NICRate.BytesIn(p.BaseRTT))), s.mtu)
	}
	return s, nil
}

// NSCC returns the connection's congestion controller (nil under cc none).
func (s *Sender) NSCC() *mrc.NSCC { return s.nscc }

// EVs returns the connection's EV picker.
func (s *Sender) EVs() *EVPicker { return s.ev }

// Timers returns the first RTO and the reorder window in force.
func (s *Sender) Timers() (rto, reorder sim.Time) { return s.rto, s.reorder }

// Window returns the congestion window in wire bytes.
func (s *Sender) Window() int64 {
	if s.nscc != nil {
		return s.nscc.Window()
	}
	return s.fixedWnd
}

// Post queues a message of bytes (>= 1; less counts as 1) posted at now: its packets follow
// those of earlier messages.
//
// Under RCCC a message posted to an idle connection (every packet acknowledged), or to one
// whose credit requests have all been granted, brings a new speculative window.
func (s *Sender) Post(now sim.Time, bytes int64) {
	bytes = max(bytes, 1)
	if s.rccc && (s.Done() || s.Request() <= s.granted) {
		// An idle connection, or one whose every credit request has been granted (nothing
		// waits at the destination's scheduler), starts the message speculatively.
		s.specTotal += s.spec
		s.creditBack = 0
	}
	pay := int64(s.cfg.PayloadBytes)
	for left := bytes; left > 0; left -= pay {
		s.pkts = append(s.pkts, spkt{len: int32(min(left, pay))})
		s.end++
		if s.rccc {
			s.need += int64(min(left, pay)) + int64(s.cfg.HeaderBytes)
		}
	}
	s.msgs = append(s.msgs, msg{end: s.end, posted: now, bytes: bytes})
}

func (s *Sender) pkt(psn uint64) *spkt { return &s.pkts[psn-s.base] }

func (s *Sender) wire(p *spkt) int64 { return int64(p.len) + int64(s.cfg.HeaderBytes) }

// Err returns the error that stopped the connection (retries exhausted), nil while healthy.
func (s *Sender) Err() error { return s.err }

// Done reports whether every posted packet was acknowledged.
func (s *Sender) Done() bool { return s.una == s.end }

// Next returns the next data packet to send at now, if the window allows one: packets
// deemed lost first, then new ones. It returns false when the connection has errored,
// has nothing to send, or the congestion window (wire bytes in flight) or the PSN window is
// full; an empty network always takes one packet.
func (s *Sender) Next(now sim.Time) (Header, bool) {
	if s.err != nil {
		return Header{}, false
	}
	var psn uint64
	for {
		if s.rtxH < len(s.retx) {
			psn = s.retx[s.rtxH]
			if psn < s.una || s.pkt(psn).state != stLost {
				s.rtxH++ // acknowledged since
				continue
			}
			break
		}
		s.retx, s.rtxH = s.retx[:0], 0
		if s.next >= s.end || s.next-s.una >= uint64(s.cfg.WindowPSNs) {
			return Header{}, false
		}
		psn = s.next
		break
	}
	p := s.pkt(psn)
	w := s.wire(p)
	if s.inflight > 0 && s.inflight+w > s.Window() {
		return Header{}, false
	}
	if s.rccc {
		if s.Credit() < w {
			s.starved = true
			return Header{}, false
		}
		s.starved = false
		s.Stats.SpeculativeBytes += min(max(s.specTotal-s.consumed, 0), w)
		s.consumed += w
	}
	if psn == s.next {
		s.next++
	} else {
		s.rtxH++
		s.Stats.Retx[p.cause]++
		s.Stats.RetxBytes += int64(p.len)
	}
	s.ev.Advance(now)
	p.state, p.sentAt, p.ev = stInflight, now, s.ev.Next()
	p.tx++
	s.inflight += w
	s.txq = append(s.txq, txRec{psn: psn, at: now, tx: p.tx})
	s.Stats.DataPackets++
	s.Stats.DataBytes += w
	s.arm(now)
	m := s.msgOf(psn)
	h := Header{Kind: Data, EV: p.ev, PSN: psn, Len: p.len, MsgStart: m[0], MsgEnd: m[1]}
	if s.rccc {
		h.Req = s.Request() & maxReq
		s.advertised = max(s.advertised, s.Request())
	}
	return h, true
}

// Credit returns the RCCC credit in hand, wire bytes: the speculative windows plus the
// credit granted, less what was sent (0 without RCCC).
func (s *Sender) Credit() int64 {
	if !s.rccc {
		return 0
	}
	return s.specTotal + s.granted - s.consumed
}

// Request returns the cumulative credit request, wire bytes: every byte the connection has
// had to send beyond its speculative windows (0 without RCCC). A data header carries it
// modulo 2^39 (UnwrapReq restores it); credit requests carry it whole.
func (s *Sender) Request() int64 { return max(0, s.need-s.specTotal) }

// OnCredit takes a credit packet at now carrying the cumulative credit granted (a smaller
// value than one already seen is stale and ignored).
func (s *Sender) OnCredit(now sim.Time, cum int64) {
	if !s.rccc {
		return
	}
	s.Stats.Credits++
	s.creditAt = now
	s.granted = max(s.granted, cum)
	s.arm(now)
}

// WantCredit reports whether the sender must send a credit request: RCCC, stopped for want
// of credit, and needing more than it has told the destination. The caller sends a
// CreditRequest carrying Request() and calls CreditRequested.
func (s *Sender) WantCredit() bool {
	return s.rccc && s.err == nil && s.starved && s.Request() > s.advertised && s.una < s.end
}

// CreditRequested records that a credit request for Request() left at now.
func (s *Sender) CreditRequested(now sim.Time) {
	s.Stats.CreditRequests++
	s.advertised = max(s.advertised, s.Request())
	s.creditAt = now
	s.arm(now)
}

// msgOf returns the PSN range [start, end) of the message holding psn (psn >= una).
func (s *Sender) msgOf(psn uint64) [2]uint64 {
	start := s.doneEnd
	for _, m := range s.msgs {
		if psn < m.end {
			return [2]uint64{start, m.end}
		}
		start = m.end
	}
	return [2]uint64{psn, psn + 1}
}

// lose marks an in-flight psn lost for cause and queues it to be sent again.
func (s *Sender) lose(psn uint64, cause RetxCause) {
	p := s.pkt(psn)
	if p.state != stInflight {
		return
	}
	p.state, p.cause = stLost, cause
	s.inflight -= s.wire(p)
	s.retx = append(s.retx, psn)
	if s.rccc {
		s.need += s.wire(p)
	}
}

// ack marks psn acknowledged and returns the wire bytes newly acknowledged.
func (s *Sender) ack(psn uint64) int64 {
	if psn < s.una || psn >= s.next && s.pkt(psn).state == stUnsent {
		return 0
	}
	p := s.pkt(psn)
	switch p.state {
	case stInflight:
		p.state = stAcked
		s.inflight -= s.wire(p)
		return s.wire(p)
	case stLost:
		p.state = stAcked
		s.Stats.Spurious++
		return s.wire(p)
	}
	return 0
}

// OnAck takes a SACK or NACK at now (h.Kind ACK or NACK; other kinds are ignored).
func (s *Sender) OnAck(now sim.Time, h *Header) {
	if s.err != nil || h.PSN >= s.end || h.Cum > s.end {
		return
	}
	if h.Kind == NACK {
		s.onNack(now, h)
		return
	}
	if h.Kind != ACK {
		return
	}
	s.Stats.Acks++
	var acked int64
	for p := s.una; p < h.Cum; p++ {
		acked += s.ack(p)
	}
	if !s.rod {
		for i := uint64(0); i < BitmapBits; i++ {
			if h.Bitmap&(1<<i) != 0 && h.Cum+1+i < s.end {
				acked += s.ack(h.Cum + 1 + i)
			}
		}
		acked += s.ack(h.PSN)
	}
	s.ev.Advance(now)
	s.ev.OnAck(h.EV, h.ECE)
	if acked > 0 {
		s.backoff = 0
		if s.nscc != nil {
			s.nscc.OnAck(now, acked, now-h.Echo-s.baseRTT, h.ECE)
		}
	}
	s.advance(now)
	if !s.rod {
		s.sackGap(now, h.Echo)
	}
	s.arm(now)
}

func (s *Sender) onNack(now sim.Time, h *Header) {
	s.Stats.Nacks++
	if h.PSN < s.una {
		return
	}
	p := s.pkt(h.PSN)
	// Echo is the NACKed packet's wire time (the fabric stamps it when the NIC starts
	// sending, at or after Next handed it over); one before the latest Next is stale: it
	// names an earlier transmission, or (ROD) a gap this packet was already sent again for.
	if p.state != stInflight || h.Echo < p.sentAt {
		return
	}
	switch {
	case h.Reason == NackTrimmedLastHop && s.rccc:
		// Under RCCC a trim at the last hop is the receiver's own link being oversubscribed
		// (speculative windows), which its credit pacing resolves: neither NSCC congestion
		// nor a bad path [UEC §3.6 RCCC].
		s.Stats.LastHopTrimsIgnored++
	case h.Reason != NackOutOfOrder:
		s.ev.OnLoss(p.ev)
		if s.nscc != nil {
			s.nscc.OnNack(now, s.wire(p))
		}
	}
	if s.rod {
		s.goBack(h.PSN, RetxTrim)
	} else {
		s.lose(h.PSN, RetxTrim)
	}
	if s.rccc && h.Reason != NackOutOfOrder {
		// The destination saw the trimmed header and counts its retransmission in this
		// connection's request itself (CreditScheduler.Learn): no credit request for it.
		s.advertised += s.wire(p)
	}
	s.arm(now)
}

// goBack (ROD) deems psn and every in-flight packet after it lost and queues them in PSN
// order, psn first for cause, the rest for RetxGoBack (go-back-N).
func (s *Sender) goBack(psn uint64, cause RetxCause) {
	for p := psn; p < s.next; p++ {
		c := RetxGoBack
		if p == psn {
			c = cause
		}
		s.lose(p, c)
	}
	// Rebuild the queue in PSN order: earlier entries may sit behind later ones.
	s.retx, s.rtxH = s.retx[:0], 0
	for p := s.una; p < s.next; p++ {
		if s.pkt(p).state == stLost {
			s.retx = append(s.retx, p)
		}
	}
}

// advance moves una past acknowledged packets, completes messages and trims the past.
func (s *Sender) advance(now sim.Time) {
	for s.una < s.next && s.pkt(s.una).state == stAcked {
		s.una++
	}
	for len(s.msgs) > 0 && s.msgs[0].end <= s.una {
		m := s.msgs[0]
		s.doneEnd = m.end
		s.comps = append(s.comps, Completion{Posted: m.posted, Done: now, Bytes: m.bytes})
		s.msgs = s.msgs[1:]
	}
	if d := s.una - s.base; d >= 1024 && d*2 >= uint64(len(s.pkts)) {
		s.pkts = append(s.pkts[:0], s.pkts[d:]...)
		s.base = s.una
	}
}

// sackGap (RUD) deems lost every packet still in flight that was sent more than the
// reorder window before sentAt, the transmit time of a packet just acknowledged.
func (s *Sender) sackGap(now, sentAt sim.Time) {
	cut := sentAt - s.reorder
	for s.txH < len(s.txq) {
		r := s.txq[s.txH]
		if !s.live(r) {
			s.txH++
			continue
		}
		if r.at >= cut {
			break
		}
		s.txH++
		s.noteLost(now, r)
		s.noteFailed(r.psn)
		s.lose(r.psn, RetxSackGap)
	}
	s.compactTx()
}

// noteLost hears at now that transmission r was lost without a trim (a SACK gap or the RTO):
// the EV picker hears of a failure on its EV (REPS freezes, bitmap penalises), and r's send
// time is kept (LostSends).
func (s *Sender) noteLost(now sim.Time, r txRec) {
	s.ev.OnFailure(now, s.pkt(r.psn).ev)
	if len(s.lostSends) < maxLostSends {
		s.lostSends = append(s.lostSends, r.at)
	}
}

// TrackFailures makes the sender keep the PSNs it deems lost without a trim on evidence of a
// bad path (Failures): every SACK-gap loss, and the oldest packet of each RTO expiry (the
// rest of an expiry's packets are deemed lost with it, not for their own path). The NIC
// adapter reads them to learn which of its ports' paths are dead.
func (s *Sender) TrackFailures() { s.trackFail = true }

func (s *Sender) noteFailed(psn uint64) {
	if s.trackFail {
		s.failed = append(s.failed, psn)
	}
}

// SetTag marks psn's latest transmission with tag (the NIC adapter: the plane it left on);
// psn must be in flight (just returned by Next).
func (s *Sender) SetTag(psn uint64, tag uint8) {
	if psn >= s.base && psn < s.next {
		s.pkt(psn).tag = tag
	}
}

// Tag returns psn's mark (SetTag), 0 for a PSN no longer held.
func (s *Sender) Tag(psn uint64) uint8 {
	if psn < s.base || psn >= s.next {
		return 0
	}
	return s.pkt(psn).tag
}

// Failures returns the PSNs deemed lost on evidence of a bad path since the last
// ClearFailures (empty unless TrackFailures was called).
func (s *Sender) Failures() []uint64 { return s.failed }

// ClearFailures empties the Failures list.
func (s *Sender) ClearFailures() { s.failed = s.failed[:0] }

// maxLostSends bounds the send times LostSends keeps per connection.
const maxLostSends = 1 << 16

// LostSends returns the send times of the data packets deemed lost without a trim (SACK gap
// or RTO), in the order they were deemed lost (at most the first 65,536): after a link
// failure, the packets sent onto the dead path.
func (s *Sender) LostSends() []sim.Time { return s.lostSends }

// live reports whether transmission r is still the packet's latest and in flight.
func (s *Sender) live(r txRec) bool {
	if r.psn < s.una {
		return false
	}
	p := s.pkt(r.psn)
	return p.state == stInflight && p.tx == r.tx
}

func (s *Sender) compactTx() {
	if s.txH >= 1024 && s.txH*2 >= len(s.txq) {
		s.txq = append(s.txq[:0], s.txq[s.txH:]...)
		s.txH = 0
	}
}

// arm sets the deadline: the oldest live transmission's time plus the RTO, doubled per
// expiry since the last progress; none when nothing is in flight.
func (s *Sender) arm(now sim.Time) {
	for s.txH < len(s.txq) && !s.live(s.txq[s.txH]) {
		s.txH++
	}
	s.compactTx()
	if s.txH == len(s.txq) || s.err != nil {
		s.deadline = sim.MaxTime
		if s.creditWait() {
			s.deadline = s.creditAt + s.rto<<uint(min(s.creditBack, 20))
		}
		return
	}
	s.deadline = s.txq[s.txH].at + s.rto<<uint(min(s.backoff, 30))
}

// creditWait reports whether the sender waits on credit with nothing in flight: were the
// credit it was granted lost, nothing would wake it, so it asks again one RTO after its last
// request or credit, the wait doubling per re-request until the connection is next idle
// (RCCC; a destination with many sources grants each one rarely, and every request takes
// room on its link).
func (s *Sender) creditWait() bool {
	return s.rccc && s.err == nil && s.una < s.end && s.starved && s.Request() > s.granted
}

// Deadline returns when OnTimer must next be called (sim.MaxTime: never).
func (s *Sender) Deadline() sim.Time { return s.deadline }

// OnTimer runs the RTO at now: when the oldest in-flight packet was sent at least the
// current timeout ago, it and every packet in flight are deemed lost (under ROD: from the
// oldest unacknowledged PSN, go-back-N), NSCC hears of the
// timeout, and the timeout doubles until the next progress. After MaxRetries expiries in a
// row without progress the connection errors (Err).
func (s *Sender) OnTimer(now sim.Time) {
	if s.err != nil || now < s.deadline {
		return
	}
	for s.txH < len(s.txq) && !s.live(s.txq[s.txH]) {
		s.txH++
	}
	if s.txH == len(s.txq) && s.creditWait() {
		// Nothing in flight, waiting on credit: ask again (CreditRequest), no RTO.
		s.advertised, s.starved = -1, true
		s.creditAt = now
		s.creditBack++
		s.arm(now)
		return
	}
	s.Stats.Timeouts++
	t := s.rto << uint(min(s.backoff, 30))
	first := true
	for s.txH < len(s.txq) {
		r := s.txq[s.txH]
		if !s.live(r) {
			s.txH++
			continue
		}
		// Once the oldest has expired, the rest are deemed lost with it, as TCP's RTO
		// recovery resends everything outstanding [RFC 5681 §3.1]: with the window cut to
		// what was delivered (NSCC quick adapt), packets lost on a dead path would otherwise
		// hold it closed until their own, doubled timeouts.
		if first && r.at+t > now {
			break
		}
		s.txH++
		s.noteLost(now, r)
		if first {
			s.noteFailed(r.psn)
		}
		if s.rod {
			if first {
				s.goBack(s.una, RetxTimeout)
			}
		} else {
			s.lose(r.psn, RetxTimeout)
		}
		first = false
	}
	if s.nscc != nil {
		s.nscc.OnTimeout(now)
	}
	s.backoff++
	if s.backoff > s.cfg.MaxRetries {
		s.err = fmt.Errorf("uec: qp %d: %d retransmission timeouts in a row without progress (transport.uec.max_retries %d, first timeout %v): PSN %d of %d unacknowledged",
			s.qp, s.backoff, s.cfg.MaxRetries, s.rto, s.una, s.end)
		s.deadline = sim.MaxTime
		return
	}
	s.arm(now)
	if s.deadline <= now || s.deadline == sim.MaxTime && s.una < s.end {
		// Everything in flight was deemed lost: wait for the retransmissions, one (doubled)
		// timeout from now, so a connection whose packets cannot leave at all (its NIC port
		// down) still backs off and errors after MaxRetries.
		s.deadline = now + s.rto<<uint(min(s.backoff, 30))
	}
}

// Completions returns the messages completed since the last ClearCompletions.
func (s *Sender) Completions() []Completion { return s.comps }

// ClearCompletions empties the completion list.
func (s *Sender) ClearCompletions() { s.comps = s.comps[:0] }

// Outstanding describes what the sender waits for, for a stuck run's report.
func (s *Sender) Outstanding() string {
	out := fmt.Sprintf("PSN %d..%d of %d sent, %d B in flight, window %d B, %d queued again, %d timeouts in a row",
		s.una, s.next, s.end, s.inflight, s.Window(), len(s.retx)-s.rtxH, s.backoff)
	if s.rccc {
		out += fmt.Sprintf(", credit %d B (requested %d, granted %d)", s.Credit(), s.Request(), s.granted)
	}
	return out
}
