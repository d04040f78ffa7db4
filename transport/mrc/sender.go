package mrc

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/lockstepsim/lockstep/sim"
)

// Packet states in the sender's PSN ring.
const (
	stFree     uint8 = iota // not sent, or acknowledged and released
	stInFlight              // sent, not acknowledged, counted in flight
	stLost                  // declared lost or NACKed; waiting in the retransmit queue
	stAcked                 // acknowledged (by SACK bitmap before the cumulative PSN passed it)
)

// RetxCause says why a PSN was sent again.
type RetxCause uint8

// Retransmission causes.
const (
	RetxTrimNack    RetxCause = iota // a NACK for a trimmed packet [MRC §2.1]
	RetxSackGap                      // RACK: later packets were acknowledged and this one is overdue
	RetxTimeout                      // the ACK timeout fired
	RetxOutOfWindow                  // the receiver NACKed it as outside its window
	NumRetxCauses
)

var retxNames = [NumRetxCauses]string{"trim_nack", "sack_gap", "timeout", "out_of_window"}

// String returns the cause's snake_case name, as used in summary keys.
func (c RetxCause) String() string {
	if c < NumRetxCauses {
		return retxNames[c]
	}
	return "cause?"
}

type pktState struct {
	sentAt sim.Time
	offset int64
	len    int32
	msg    uint32
	ev     uint16
	state  uint8
	retx   bool // sent more than once: its ACK cannot tell which copy arrived (Karn)
}

type message struct {
	bytes    int64
	posted   sim.Time
	firstPSN uint32
	lastPSN  uint32
	cut      int64 // bytes already cut into packets
}

// Completion reports a finished transfer: Bytes of payload posted at Posted, done at Done. On a
// Sender, Done is when the last byte was acknowledged (the requester's completion); on a
// Receiver, when the last byte was placed.
type Completion struct {
	Msg    uint32
	Bytes  int64
	Posted sim.Time
	Done   sim.Time
}

// SenderStats counts what a Sender did. Bytes are wire bytes.
type SenderStats struct {
	DataPackets, DataBytes int64 // data packets sent, retransmissions included
	Retx                   [NumRetxCauses]int64
	Timeouts               int64 // ACK timeout expiries
	SACKs, NACKs           int64 // answers received
	ProbesSent, ProbeAcks  int64
	ProbeLosses            int64
	NoEVStalls             int64    // times the window had room but no EV was usable
	RTTSum                 sim.Time // sum of RTT samples (SACK arrival - echoed send time)
	RTTSamples             int64
	// Loss attribution (see Sender.blame): untrimmed losses charged to the EV that carried
	// them (a strike), losses not charged because the destination was congested (a trim NACK
	// within the congestion hold) or because nothing sent after them was delivered either,
	// and EV retirements that followed.
	Strikes, CongestionLosses, UnattributedLosses, PathRetirements int64
	ProbesDeferred                                                 int64 // due probes held back by the probe budget
	PacedSends                                                     int64 // packets sent under a window below one packet (paced)
	RetxBytes                                                      int64 // wire bytes of retransmitted data packets
}

// Sender is the requester side of one MRC connection: it cuts posted RDMA Write transfers into
// packets, sprays them over its EV set, and recovers losses. Not safe for concurrent use.
type Sender struct {
	cfg     Config
	qp      uint32
	evs     *EVSet
	ccs     []*NSCC // by plane: that plane's congestion controller (planeCC)
	baseRTT sim.Time
	reo     sim.Time // RACK reordering window
	rto0    sim.Time // ACK timeout before backoff

	wnd, mask uint32
	ring      []pktState
	una, next uint32   // oldest unacknowledged PSN; next new PSN
	highAck   uint32   // one past the highest PSN acknowledged
	inflight  int64    // wire bytes in flight
	retxq     []uint32 // PSNs to resend: a min-heap by PSN distance from una, lowest first

	msgs    []message
	msgDone int // first transfer not yet acknowledged completely
	msgCut  int // transfer being cut into packets

	rackXmit sim.Time   // send time of the latest-sent packet acknowledged (RACK)
	route    []int32    // by EV: a dense number for its route (plane, path); EVs on one route share it
	rtSeen   []sim.Time // by route: latest send time of a packet the current answer reports received
	rtPSN    []uint32   // by route: that packet's PSN (ties of send time go by PSN)
	rtGen    []uint32   // by route: the answer rtSeen belongs to (gen)
	gen      uint32     // answers absorbed
	rackRTT  sim.Time   // its RTT
	rackAt   sim.Time   // earliest RACK expiry among candidates, or MaxTime

	retries   int
	rtoAt     sim.Time // ACK timeout deadline while data is in flight
	probeOut  []sim.Time
	probesOut []uint16 // EVs with an outstanding probe

	out     []Header
	done    []Completion
	err     error
	stalled bool // the window had room but no EV was usable at the last Pump
	backlog func(plane int) int64
	planes  int
	planeRR int        // rotating start for ties in quietestPlane
	gate    int64      // SetNICGate: new packets only while the quietest plane's backlog is below it; 0 = off
	gated   bool       // the last Pump stopped because the NIC had no room (SetNICGate)
	pend    []int64    // by plane: wire bytes put in the outbox during the current Pump
	nicDown []bool     // by plane: the NIC port was down at the last Pump (its EVs denied)
	pinfl   []int64    // by plane: wire bytes in flight on the plane's EVs
	pdelay  []sim.Time // by plane: queueing delay of the latest answer echoing a packet of the plane
	packed  []int64    // by plane: scratch for absorb, wire bytes the current answer acknowledges

	// Loss attribution (blame).
	strikes  []uint8    // by EV: two per untrimmed loss, less one per clean delivery
	runLoss  []uint8    // by EV: losses since its strikes were last zero
	rtStrike []uint8    // by route (Sender.route): as strikes, for all the route's EVs together
	trimTil  []sim.Time // by plane: a trim NACK arrived; losses until then may be congestion
	holdCong sim.Time   // how long a trim NACK marks the destination congested

	// The NIC's mark board (SetMarkBoard), nil for none: board route of each EV, the board
	// routes of each plane's EVs, and per plane the lap last seen begun and when the current
	// and previous laps began (-1 none yet).
	board       *MarkBoard
	boardRoute  []int32
	planeRoutes [][]int32
	lapSeen     []int64
	lapAt       []sim.Time
	prevLapAt   []sim.Time
	bgLosses    int64 // losses on paths that delivered again afterwards (background loss)

	// Probe budget: tokens in probes, refilled per probe interval and per data packet sent.
	probeTok  float64
	probeTokT sim.Time

	// Receiver window and pacing below one packet.
	rcvWnd   int64    // the receiver's share for this QP (bytes), 0 = none given
	srtt     sim.Time // smoothed RTT (EWMA, weight 1/8), 0 before the first sample
	jit      uint64   // pacing jitter stream (splitmix64 state), seeded from the QP's rng
	paceFrom sim.Time // when the last data packet was sent (paceAt)
	paceWire int64    // its wire bytes, 0 before the first
	pacing   bool     // the last Pump stopped only because of paceAt

	Stats SenderStats
}

// NewSender makes the requester side of connection qp over path. rng seeds the EV set (draws
// and rotation). Errors: invalid config, or a path with no usable plane.
func NewSender(cfg Config, qp uint32, path Path, rng *rand.Rand) (*Sender, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate("transport"); err != nil {
		return nil, err
	}
	if path.BaseRTT <= 0 || path.NICRate <= 0 {
		return nil, fmt.Errorf("mrc: qp %d: base RTT %v and NIC rate %v must be positive", qp, path.BaseRTT, path.NICRate)
	}
	evs, err := NewEVSet(cfg.EV, path.Planes, path.PathsPerPlane, rng)
	if err != nil {
		return nil, fmt.Errorf("mrc: qp %d: %w", qp, err)
	}
	ccs, err := planeNSCCs(cfg, path, evs.Planes())
	if err != nil {
		return nil, fmt.Errorf("mrc: qp %d: %w", qp, err)
	}
	wnd := uint32(cfg.WindowMPR * 128)
	t := cfg.AckTimeoutExp
	if t == 0 {
		t = autoTimeoutExp(path.BaseRTT)
	}
	reo := cfg.ReorderWindow
	if reo == 0 {
		reo = path.BaseRTT + path.MaxQueueDelay
	}
	s := &Sender{
		cfg: cfg, qp: qp, evs: evs, ccs: ccs, baseRTT: path.BaseRTT, reo: reo, rto0: ackTimeout(t),
		wnd: wnd, mask: initRing - 1, ring: make([]pktState, initRing),
		rackAt: sim.MaxTime, rtoAt: sim.MaxTime,
		probeOut: make([]sim.Time, evs.Len()),
		route:    evRoutes(evs),
		trimTil:  make([]sim.Time, evs.Planes()),
		pinfl:    make([]int64, evs.Planes()),
		pdelay:   make([]sim.Time, evs.Planes()),
		packed:   make([]int64, evs.Planes()),
		probeTok: ProbeBurst,
	}
	s.rtSeen, s.rtPSN, s.rtGen = make([]sim.Time, len(s.route)), make([]uint32, len(s.route)), make([]uint32, len(s.route))
	s.strikes, s.runLoss, s.rtStrike = make([]uint8, evs.Len()), make([]uint8, evs.Len()), make([]uint8, len(s.route))
	s.holdCong = 2*s.rto0 + path.BaseRTT
	s.jit = rng.Uint64()
	return s, nil
}

// planeNSCCs makes one NSCC per plane, each sized for its plane's share of the NIC
// (path.NICRate / planes; the whole NIC on a one-plane path). See Sender.planeCC for why a QP
// keeps one window per plane rather than one for the connection.
func planeNSCCs(cfg Config, path Path, planes int) ([]*NSCC, error) {
	ccs := make([]*NSCC, planes)
	rate := path.NICRate / sim.Rate(planes)
	if rate <= 0 {
		return nil, fmt.Errorf("NIC rate %v over %d planes leaves no rate per plane", path.NICRate, planes)
	}
	for p := range ccs {
		cc, err := NewNSCC(NSCCConfig{
			BaseRTT: path.BaseRTT, LinkRate: rate, MTU: int64(cfg.WireBytes(cfg.PayloadBytes)),
			TargetFactor: cfg.CC.TargetFactor, MaxWindowFactor: cfg.CC.MaxWindowFactor, Gamma: cfg.CC.Gamma,
			FairIncrease: cfg.CC.FairIncrease, PropIncrease: cfg.CC.PropIncrease,
		})
		if err != nil {
			return nil, err
		}
		ccs[p] = cc
	}
	return ccs, nil
}

// initRing is the PSN ring's first size (a power of two, 512 bytes): the ring doubles as
// PSNs in flight need it (growRing), up to the window rounded up to a power of two, so a QP
// that sends a few packets does not hold a whole window's ring (4,096 entries of 32 bytes,
// 128 KiB, at the default window_mpr).
const initRing = 16

// growRing doubles the PSN ring (keeping the states of the PSNs from una to next at their new
// slots) when the next new PSN would overwrite a live one; the ring never outgrows the window
// rounded up to a power of two, which nextPSN never lets next - una reach.
func (s *Sender) growRing() {
	if s.next-s.una < uint32(len(s.ring)) {
		return
	}
	ring := make([]pktState, 2*len(s.ring))
	mask := uint32(len(ring) - 1)
	for psn := s.una; psn != s.next; psn++ {
		ring[psn&mask] = s.ring[psn&s.mask]
	}
	s.ring, s.mask = ring, mask
}

// SetPlaneBacklog tells the sender how to read each plane's NIC transmit backlog (bytes queued
// at that port). With it, each packet goes to the plane with the least backlog, on that plane's
// next EV in the rotation (EVSet.NextOn); without it, to the rotation's next EV whatever its
// plane. Lockstep's model of a NIC arbitrating across its ports: a plane that drains slower or
// got more packets by chance does not hold the others idle.
func (s *Sender) SetPlaneBacklog(planes int, fn func(plane int) int64) {
	s.planes, s.backlog = planes, fn
	s.pend = make([]int64, planes)
	s.nicDown = make([]bool, planes)
}

// syncNICPorts denies the EVs of a plane whose NIC port is down (its backlog reads
// math.MaxInt64) and allows them again when it is back: a NIC knows its own port status at
// once, so it never sprays onto a dead port [MRC §2.1: DENIED]. (Peers learn of it only by
// losses, then by a port-status update.) Allowing a plane allows every denied EV of it.
func (s *Sender) syncNICPorts() {
	for p := 0; p < s.planes; p++ {
		down := s.backlog(p) == math.MaxInt64
		if down == s.nicDown[p] {
			continue
		}
		s.nicDown[p] = down
		if down {
			s.evs.DenyPlane(p)
		} else {
			s.evs.AllowPlane(p)
		}
	}
}

// planeBacklog is plane's NIC backlog plus the wire bytes this Pump put in the outbox for it
// (the caller hands them to the NIC only after Pump returns).
func (s *Sender) planeBacklog(p int) int64 {
	b := s.backlog(p)
	if b == math.MaxInt64 {
		return b
	}
	return b + s.pend[p]
}

// SetNICGate makes the sender pull-driven, like a NIC's transmit scheduler: Pump emits a
// packet only while the quietest plane's backlog (SetPlaneBacklog) is below bytes, and
// otherwise stops with Gated reporting true; the caller pumps again when a NIC port has room.
// bytes = 1 lets a packet wait behind the one being serialised on each port and no more, so
// the window counts packets on the network, not packets parked in the NIC; 0 turns the gate
// off (packets go to the NIC queue as soon as the window allows). A plane whose backlog reads
// math.MaxInt64 is a port that is down: its EVs are denied while it is (syncNICPorts), and
// with every port down the sender stalls with its ACK timeout running, so its QP errors
// instead of waiting for room forever.
// Without SetPlaneBacklog the gate does nothing.
func (s *Sender) SetNICGate(bytes int64) { s.gate = max(bytes, 0) }

// Gated reports whether the last Pump stopped with data to send and window to spare because
// the NIC had no room (SetNICGate).
func (s *Sender) Gated() bool { return s.gated }

// quietestPlane returns the plane with the least NIC backlog among those with active EVs and a
// NIC port that is up; ties go to the plane least far through its own EV rotation
// (EVSet.Progress: each plane's share in proportion to its active EVs), then round robin. Each
// plane keeps its own EV rotation (EVSet.NextOn), so the plane choice is the NIC's alone: a
// slow local port drains slower, is the quietest less often and gets fewer packets, instead of
// an equal share of every rotation setting the QP's rate. With no such plane (cannot happen
// while the active set is not empty), the least backlogged of all.
func (s *Sender) quietestPlane(wire int64) int {
	best, bestB, bestP := -1, int64(-1), 0.0
	full := false // a usable plane was passed over only because its window is full
	for pass := 0; pass < 2 && best < 0 && !full; pass++ {
		for i := 0; i < s.planes; i++ {
			p := (s.planeRR + i) % s.planes
			b := s.planeBacklog(p)
			if pass == 0 && (s.evs.PlaneUsable(p) == 0 || b == math.MaxInt64) {
				continue
			}
			if pass == 0 && !s.planeFits(p, wire) {
				full = true
				continue
			}
			pr := s.evs.Progress(p)
			if bestB < 0 || b < bestB || (b == bestB && pr < bestP) {
				best, bestB, bestP = p, b, pr
			}
		}
	}
	if best < 0 {
		return -1
	}
	s.planeRR = (best + 1) % s.planes
	return best
}

// addPlaneInflight adds wire bytes to the in-flight count of ev's plane.
func (s *Sender) addPlaneInflight(ev int, wire int64) {
	if pl, _, ok := s.evs.Route(ev); ok {
		s.pinfl[pl] += wire
	}
}

// EVs returns the sender's EV set, for reports and the operator's denylist.
func (s *Sender) EVs() *EVSet { return s.evs }

// CC returns plane 0's congestion controller (the connection's only one on a one-plane NIC),
// for reports; PlaneCC gives the others.
func (s *Sender) CC() *NSCC { return s.ccs[0] }

// PlaneCC returns plane p's congestion controller, or nil for a plane out of range.
func (s *Sender) PlaneCC(p int) *NSCC {
	if p < 0 || p >= len(s.ccs) {
		return nil
	}
	return s.ccs[p]
}

// PlaneInFlight returns the wire bytes in flight on plane p's EVs (0 for a plane out of range).
func (s *Sender) PlaneInFlight(p int) int64 {
	if p < 0 || p >= len(s.pinfl) {
		return 0
	}
	return s.pinfl[p]
}

// planeCC returns the congestion controller of ev's plane.
//
// One window per plane, lockstep's reading of MRC's per-path congestion response [MRC §2.1]:
// NSCC sizes the window for the connection's bottleneck, which under spraying over a
// full-bisection fabric is the NIC, and every plane then carries an equal share of it. When
// one plane loses capacity somewhere along the QP's paths (a dead T0 uplink, a failed T1), a
// single window is cut by that plane's queues and trims, and because the planes share it
// equally, the healthy planes are held to the damaged plane's rate: a 64-host 2-plane
// permutation with one of a T0's 8 plane-0 uplinks down took 1.47 x its ideal for the flows
// of that T0 instead of the 1.07 its capacity allows. With a window per plane, each plane's
// share is clocked by its own ACKs and NACKs (delay, CE and trims of its own packets): the
// damaged plane settles at what it delivers and the others stay at line rate.
func (s *Sender) planeCC(ev int) *NSCC {
	if pl, _, ok := s.evs.Route(ev); ok {
		return s.ccs[pl]
	}
	return s.ccs[0]
}

// slowPlane reports whether a delay sample of plane p says the plane, not the destination,
// is slow: p's queueing delay is above twice the target while the latest of another plane
// still in use (active EVs) is below the target. The last hop marks no CE [MRC §2.1], so NSCC's quadrants never cut a window for
// a queue there and only trims at its 1.5-BDP threshold would; a receiver port running at a
// fraction of its rate holds that threshold's bytes for many base RTTs (a 10G port of a 100G
// plane: 80 us), and the plane's window, kept by fair increases, keeps it full. An incast
// queues every plane's last hop alike and is left alone. Then the plane's window is quick-
// adapted to what it delivers (NSCC.ArmQuickAdapt).
func (s *Sender) slowPlane(p int, delay sim.Time) bool {
	if len(s.ccs) < 2 || delay <= 2*s.ccs[p].Target() {
		return false
	}
	for q, d := range s.pdelay {
		if q != p && d < s.ccs[q].Target() && s.evs.PlaneUsable(q) > 0 {
			return true
		}
	}
	return false
}

// planeFits reports whether wire more bytes fit in plane p's window: one packet may always go
// on a plane with nothing in flight.
func (s *Sender) planeFits(p int, wire int64) bool {
	return s.pinfl[p] == 0 || s.pinfl[p]+wire <= s.ccs[p].Window()
}

// ccWindow is the sum of the planes' windows.
func (s *Sender) ccWindow() int64 {
	var w int64
	for _, c := range s.ccs {
		w += c.Window()
	}
	return w
}

// Err returns the QP error that stopped the sender (retries exhausted), or nil.
func (s *Sender) Err() error { return s.err }

// InFlight returns the wire bytes sent and not yet acknowledged or declared lost.
func (s *Sender) InFlight() int64 { return s.inflight }

// Idle reports whether every posted transfer has been acknowledged.
func (s *Sender) Idle() bool { return s.msgDone == len(s.msgs) }

// Outstanding describes what the sender still waits for, for stall reports: the oldest
// unacknowledged PSN, the next PSN, bytes in flight, the window, retries in a row.
func (s *Sender) Outstanding() string {
	return fmt.Sprintf("una %d, next %d, in flight %d B, window %d B, retries %d, transfers done %d of %d",
		s.una, s.next, s.inflight, s.Window(), s.retries, s.msgDone, len(s.msgs))
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

// Post queues an RDMA Write of bytes (> 0) and returns its transfer number. Call Pump after.
func (s *Sender) Post(now sim.Time, bytes int64) uint32 {
	id := uint32(len(s.msgs))
	pay := int64(s.cfg.PayloadBytes)
	npkts := (bytes + pay - 1) / pay
	var first uint32
	if len(s.msgs) > 0 {
		first = s.msgs[len(s.msgs)-1].lastPSN + 1
	}
	s.msgs = append(s.msgs, message{bytes: bytes, posted: now, firstPSN: first, lastPSN: first + uint32(npkts) - 1})
	return id
}

// Pump sends what the window allows: retransmissions first, then new data, then due probes.
func (s *Sender) Pump(now sim.Time) {
	if s.err != nil {
		return
	}
	if s.backlog != nil {
		s.syncNICPorts()
	}
	s.probe(now)
	s.gated = false
	s.pacing = false
	clear(s.pend)
	for {
		psn, fresh, ok := s.nextPSN()
		if !ok {
			break
		}
		var p *pktState
		var wire int64
		if fresh {
			m := &s.msgs[s.msgCut]
			n := min(int64(s.cfg.PayloadBytes), m.bytes-m.cut)
			wire = int64(s.cfg.WireBytes(int(n)))
			if !s.fits(now, wire) {
				break
			}
			s.growRing()
			p = &s.ring[psn&s.mask]
			*p = pktState{offset: m.cut, len: int32(n), msg: uint32(s.msgCut)}
		} else {
			p = &s.ring[psn&s.mask]
			wire = int64(s.cfg.WireBytes(int(p.len)))
			if !s.fits(now, wire) {
				break
			}
		}
		var ev int
		if s.backlog != nil {
			plane := s.quietestPlane(wire)
			if plane < 0 {
				break // every usable plane's window is full
			}
			if s.gate > 0 {
				if b := s.planeBacklog(plane); b >= s.gate && b != math.MaxInt64 {
					s.gated = true
					break
				}
			}
			ev, ok = s.evs.NextOn(plane)
		} else {
			ev, ok = s.evs.Next()
		}
		if !ok {
			// Every EV is assumed bad or denied: wait for probes, but keep the ACK timeout
			// running so a QP that never recovers errors instead of hanging.
			if !s.stalled {
				s.Stats.NoEVStalls++
			}
			s.stalled = true
			if s.rtoAt == sim.MaxTime {
				s.rtoAt = now + s.rto()
			}
			break
		}
		s.stalled = false
		s.noteLap(now, ev)
		if s.pend != nil {
			if pl, _, ok := s.evs.Route(ev); ok {
				s.pend[pl] += wire
			}
		}
		if fresh {
			m := &s.msgs[s.msgCut]
			m.cut += int64(p.len)
			s.next++
			if m.cut == m.bytes {
				s.msgCut++
			}
		} else {
			s.popRetx()
		}
		if s.inflight == 0 {
			s.rtoAt = now + s.rto()
		}
		p.retx = !fresh
		p.sentAt = now
		p.ev = uint16(ev)
		p.state = stInFlight
		s.inflight += wire
		s.addPlaneInflight(ev, wire)
		s.paceNext(now, wire)
		s.Stats.DataPackets++
		s.Stats.DataBytes += wire
		if !fresh {
			s.Stats.RetxBytes += wire
		}
		s.probeTok = min(s.probeTok+s.cfg.ProbeBudget, ProbeBurst)
		m := &s.msgs[p.msg]
		s.out = append(s.out, Header{
			Kind: Data, QP: s.qp, EV: uint16(ev), PSN: psn, Msg: p.msg, Offset: p.offset, Len: p.len,
			LastPSN: m.lastPSN, TS: now, InFlight: uint32(min(s.inflight, math.MaxUint32)), Held: s.heldByShare(),
		})
	}
}

// pushRetx adds psn to the retransmit heap (ordered by distance from una, wrap-safe).
func (s *Sender) pushRetx(psn uint32) {
	s.retxq = append(s.retxq, psn)
	h := s.retxq
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p]-s.una <= psn-s.una {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = psn
}

// popRetx removes the lowest PSN from the retransmit heap.
func (s *Sender) popRetx() {
	h := s.retxq
	n := len(h) - 1
	last := h[n]
	s.retxq = h[:n]
	if n == 0 {
		return
	}
	h = s.retxq
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && h[c+1]-s.una < h[c]-s.una {
			c++
		}
		if last-s.una <= h[c]-s.una {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = last
}

// nextPSN picks the next PSN to send: the lowest pending retransmission (skipping ones
// acknowledged meanwhile), so the cumulative PSN moves first; else a new PSN if the receive
// window and the posted data allow.
func (s *Sender) nextPSN() (psn uint32, fresh, ok bool) {
	for len(s.retxq) > 0 {
		psn = s.retxq[0]
		if s.ring[psn&s.mask].state == stLost && psn-s.una < s.wnd {
			return psn, false, true
		}
		s.popRetx() // acknowledged after all (spurious loss), or released
	}
	if s.msgCut < len(s.msgs) && s.next-s.una < s.wnd {
		return s.next, true, true
	}
	return 0, false, false
}

// Window returns the effective window in wire bytes: the sum of the planes' NSCC windows
// (planeCC), capped by the receiver's share for this QP when its answers carry one
// (Header.RcvWnd).
func (s *Sender) Window() int64 {
	w := s.ccWindow()
	if s.rcvWnd > 0 && s.rcvWnd < w {
		w = s.rcvWnd
	}
	return w
}

// fits reports whether wire more bytes fit in the window. One packet may always go when
// nothing is in flight, except while paced: with a window below one packet the sender sends
// one packet, then waits (paceAt). The receiver's share is met on average rather than never
// exceeded: a packet may go while less than the share is in flight, so a share of 2.5
// packets keeps 2 or 3 in flight rather than 2 (N senders rounding down together would
// leave the receiver's link short of its BDP: measured on a 64 -> 1 incast over 8 planes,
// 85% of the receiver's links used, against 99% this way); NSCC's window is never exceeded.
func (s *Sender) fits(now sim.Time, wire int64) bool {
	if s.inflight == 0 {
		if now < s.paceAt() {
			s.pacing = true
			return false
		}
		return true
	}
	if s.rcvWnd > 0 && s.inflight >= s.rcvWnd {
		return false
	}
	if s.backlog != nil {
		return true // each plane's own window is checked when the plane is chosen (quietestPlane)
	}
	return s.inflight+wire <= s.ccWindow()
}

// heldByShare reports whether the receiver's share is what stops the sender now (Header.Held):
// it has more to send (new data or resends), its in-flight has reached the share, and the
// share is below its congestion window (so NSCC would let it send more).
func (s *Sender) heldByShare() bool {
	if s.rcvWnd <= 0 || s.inflight < s.rcvWnd || s.rcvWnd >= s.ccWindow() {
		return false
	}
	return s.msgCut < len(s.msgs) || len(s.retxq) > 0
}

// paceNext records a data packet of wire bytes sent at now, for pacing.
func (s *Sender) paceNext(now sim.Time, wire int64) {
	s.paceFrom, s.paceWire = now, wire
	if s.Window() < wire {
		s.Stats.PacedSends++
	}
}

// paceAt is when the next packet may leave: with a window w below one packet, w/wire packets
// per RTT means one packet every wire/w RTTs after the last one sent (lockstep reading of a
// window below one MTU: it keeps its meaning, bytes per round trip, as a rate). It is worked
// out from the current window, so a larger share the receiver reports in the answer to the
// last packet (its senders finishing) takes effect at once. The RTT is the smoothed one, kept
// between the base RTT and the RTT at which the receiver's budget is all in flight
// (rcv_window_bdp base RTTs), so one stale sample (a burst's queue) can neither stop a sender
// nor let it overrun. Each gap has a jitter of +-50% (a seeded per-QP stream), so senders
// synchronised by one event (the first window of an incast, NACKed together) do not pace in
// lockstep, feeding the receiver bursts of N packets and then nothing.
func (s *Sender) paceAt() sim.Time {
	w := s.Window()
	if s.paceWire == 0 || w >= s.paceWire {
		return 0
	}
	hi := sim.Time(float64(s.baseRTT) * max(s.cfg.RcvWindowBDP, 1))
	rtt := min(max(s.srtt, s.baseRTT), hi)
	u := float64(sim.Mix64(s.jit^uint64(s.paceFrom))>>11) * 0x1p-53
	return s.paceFrom + sim.Time(float64(rtt)*float64(s.paceWire)/float64(max(w, 1))*(0.5+u))
}

// rto returns the current ACK timeout: fixed for the first FixedRetries, then doubling [API].
func (s *Sender) rto() sim.Time {
	if s.retries <= s.cfg.FixedRetries {
		return s.rto0
	}
	shift := min(s.retries-s.cfg.FixedRetries, 24)
	return s.rto0 << uint(shift)
}

// Probe budget (lockstep defaults; see Sender.probe).
const (
	// ProbeBurst is the most probes a QP may send back to back: its probe bucket's depth.
	ProbeBurst = 4
	// DefaultProbeBudget is the probes a QP earns per data packet it sends, on top of one
	// per probe interval: 1%, so probes stay a small share of any busy NIC's packets.
	DefaultProbeBudget = 0.01
)

// refillProbes adds the probe tokens earned since the last refill: one per probe interval.
func (s *Sender) refillProbes(now sim.Time) {
	if pi := s.cfg.EV.ProbeInterval; pi != sim.MaxTime && now > s.probeTokT {
		s.probeTok = min(s.probeTok+float64(now-s.probeTokT)/float64(pi), ProbeBurst)
	}
	s.probeTokT = now
}

// probeTokenAt is when the probe bucket next holds a whole token, from the time refill alone.
func (s *Sender) probeTokenAt() sim.Time {
	if s.probeTok >= 1 {
		return s.probeTokT
	}
	pi := s.cfg.EV.ProbeInterval
	if pi == sim.MaxTime {
		return sim.MaxTime
	}
	return s.probeTokT + sim.Time(math.Ceil((1-s.probeTok)*float64(pi)))
}

// probe sends probes on assumed-bad EVs that are due [API: probes consume no PSN], within the
// QP's probe budget (lockstep default): a bucket of ProbeBurst tokens, refilled by one per
// probe interval and by probe_budget (1%) per data packet sent, one token per probe. With
// many EVs retired at once (a dead plane, a failed T1, or a storm of losses that were not
// failures at all), probes therefore never exceed about 1% of the QP's data packets plus one
// per probe interval, instead of one per bad EV per interval; each EV also backs off while
// its probes are lost (EVSet.ProbeDue).
func (s *Sender) probe(now sim.Time) {
	s.refillProbes(now)
	for {
		if s.probeTok < 1 {
			if s.evs.NextProbeAt() <= now {
				s.Stats.ProbesDeferred++
			}
			return
		}
		ev, ok := s.evs.ProbeDue(now)
		if !ok {
			return
		}
		s.probeTok--
		if s.probeOut[ev] == 0 {
			s.probesOut = append(s.probesOut, uint16(ev))
		}
		s.probeOut[ev] = now
		s.Stats.ProbesSent++
		s.out = append(s.out, Header{Kind: Probe, QP: s.qp, EV: uint16(ev), TS: now})
	}
}

// SetMarkBoard pools the QP's CE marks with the other QPs of its NIC: routes[ev] is EV ev's
// route on board b (one per EV, Len() of them). With CESkipBalance a mark then holds its EV
// when, since the plane's previous lap began (its first lap, if only one), some of the plane's
// routes were answered on the board, by any QP, and every one answered was marked. Errors: a
// nil board, a route count other than the EVs', or a route not on the board.
func (s *Sender) SetMarkBoard(b *MarkBoard, routes []int32) error {
	if b == nil {
		return errors.New("mrc: SetMarkBoard: nil board")
	}
	if len(routes) != s.evs.Len() {
		return fmt.Errorf("mrc: SetMarkBoard: %d routes for %d EVs; want one per EV", len(routes), s.evs.Len())
	}
	planes := s.evs.Planes()
	s.planeRoutes = make([][]int32, planes)
	seen := make(map[int32]bool, len(routes))
	for ev, r := range routes {
		if r < 0 || int(r) >= b.Routes() {
			return fmt.Errorf("mrc: SetMarkBoard: EV %d on route %d; the board has %d", ev, r, b.Routes())
		}
		if !seen[r] {
			seen[r] = true
			pl, _, _ := s.evs.Route(ev)
			s.planeRoutes[pl] = append(s.planeRoutes[pl], r)
		}
	}
	s.board, s.boardRoute = b, append([]int32(nil), routes...)
	s.lapSeen = make([]int64, planes)
	s.lapAt, s.prevLapAt = make([]sim.Time, planes), make([]sim.Time, planes)
	for p := range s.lapAt {
		s.lapAt[p], s.prevLapAt[p] = -1, -1
	}
	s.evs.holdCE = s.boardHold
	return nil
}

// boardHold is the CESkipBalance test on the NIC's board for plane p.
func (s *Sender) boardHold(p int) bool {
	from := s.prevLapAt[p]
	if from < 0 {
		from = s.lapAt[p]
	}
	if from < 0 {
		return false
	}
	return s.board.allMarked(s.planeRoutes[p], from)
}

// noteLap records when plane p began its current lap, for boardHold.
func (s *Sender) noteLap(now sim.Time, ev int) {
	if s.board == nil {
		return
	}
	p, _, _ := s.evs.Route(ev)
	if l := s.evs.Laps(p); l != s.lapSeen[p] {
		s.lapSeen[p] = l
		s.prevLapAt[p], s.lapAt[p] = s.lapAt[p], now
	}
}

// noteBoard records an answer on EV ev's route on the NIC's board.
func (s *Sender) noteBoard(now sim.Time, ev int, marked bool) {
	if s.board != nil && ev >= 0 && ev < len(s.boardRoute) {
		s.board.note(s.boardRoute[ev], now, marked)
	}
}

// OnSACK processes a selective acknowledgement, then pumps.
func (s *Sender) OnSACK(now sim.Time, h *Header) {
	s.Stats.SACKs++
	if h.ForProbe {
		s.onProbeAnswer(now, h)
		s.Pump(now)
		return
	}
	if h.CE {
		s.evs.OnCE(int(h.EchoEV))
		s.noteBoard(now, int(h.EchoEV), true)
	}
	s.rcvWnd = int64(h.RcvWnd)
	s.absorb(now, h)
	s.Pump(now)
}

// absorb takes the cumulative PSN and bitmap every answer carries (SACKs and NACKs alike):
// marks what they acknowledge, feeds NSCC, completes transfers and runs loss detection.
func (s *Sender) absorb(now sim.Time, h *Header) {
	var acked int64
	clear(s.packed)
	// Cumulative part.
	for ; int32(h.CumPSN-s.una) > 0 && s.una != s.next; s.una++ {
		acked += s.ackPSN(now, s.una)
	}
	// Bitmap part: bit i is PSN BitmapBase+i. Each packet it reports received, sent once,
	// also tells the latest send time this answer vouches for on its route (fifoLoss).
	s.gen++
	for b := h.Bitmap; b != 0; b &= b - 1 {
		i := uint32(bits.TrailingZeros64(b))
		psn := h.BitmapBase + i
		if int32(psn-s.una) >= 0 && int32(s.next-psn) > 0 {
			if p := &s.ring[psn&s.mask]; !p.retx && p.state != stFree {
				if r := s.route[p.ev]; s.rtGen[r] != s.gen || p.sentAt > s.rtSeen[r] ||
					(p.sentAt == s.rtSeen[r] && int32(psn-s.rtPSN[r]) > 0) {
					s.rtGen[r], s.rtSeen[r], s.rtPSN[r] = s.gen, p.sentAt, psn
				}
			}
			acked += s.ackPSN(now, psn)
		}
	}
	if acked > 0 {
		s.retries = 0
		rtt := now - h.EchoTS
		s.Stats.RTTSum += rtt
		s.Stats.RTTSamples++
		if s.srtt == 0 {
			s.srtt = rtt
		} else {
			s.srtt += (rtt - s.srtt) / 8
		}
		delay := now - h.EchoTS - s.baseRTT
		if delay < 0 {
			delay = 0
		}
		// Each plane's NSCC gets the bytes of its own packets this answer acknowledges. The
		// answer's delay and CE mark are those of the packet it echoes, so they go to that
		// packet's plane; another plane's bytes count with the delay its latest echo measured
		// and no mark (the mark was for the echoed packet's path alone).
		ep, _, _ := s.evs.Route(int(h.EchoEV))
		if ep < len(s.pdelay) {
			s.pdelay[ep] = delay
		}
		for p, b := range s.packed {
			switch {
			case b == 0:
			case p == ep:
				s.ccs[p].OnAck(now, b, delay, h.CE)
				if !h.CE && s.slowPlane(p, delay) {
					s.ccs[p].ArmQuickAdapt(now)
				}
			default:
				s.ccs[p].OnAck(now, b, s.pdelay[p], false)
			}
		}
		s.rtoAt = now + s.rto()
	}
	clear(s.packed)
	s.fifoLoss(now, h)
	s.complete(now)
	s.detectLoss(now)
}

// fifoLoss declares lost the packets this answer reports missing although it reports a packet
// sent after them on the same route received: an EV is a static source route [MRC §2.2] and
// every hop serves a class in FIFO order, so packets on one route never overtake each other,
// and the receiver built this answer after the later packet, hence after the earlier one
// would have arrived. A packet is reported missing when it is the answer's cumulative PSN or
// a clear bit of its bitmap. Unlike RACK's time rule this needs no reordering allowance, so a
// packet lost on a healthy path is found about one visit of its route later (a fraction of a
// rotation of the active set) instead of a reordering window later: what keeps random loss
// from stalling a collective's chunks. Answers themselves travel on many reverse routes and
// may overtake each other; the rule reads only what one answer says, so that does not fool it.
func (s *Sender) fifoLoss(now sim.Time, h *Header) {
	check := func(psn uint32) {
		if int32(psn-s.una) < 0 || int32(s.next-psn) <= 0 {
			return
		}
		p := &s.ring[psn&s.mask]
		r := s.route[p.ev]
		if p.state != stInFlight || s.rtGen[r] != s.gen {
			return
		}
		// Sent before the packet seen, or in the same instant ahead of it in the NIC's queue
		// (PSNs of packets sent once follow their sending order).
		if s.rtSeen[r] > p.sentAt || (s.rtSeen[r] == p.sentAt && !p.retx && int32(s.rtPSN[r]-psn) > 0) {
			s.lose(psn, p, RetxSackGap)
			s.blame(now, p)
		}
	}
	if h.CumPSN != h.BitmapBase {
		check(h.CumPSN)
	}
	for miss := ^h.Bitmap; miss != 0; miss &= miss - 1 {
		check(h.BitmapBase + uint32(bits.TrailingZeros64(miss)))
	}
}

// ackPSN marks psn acknowledged and returns the wire bytes it frees from flight (0 if it was
// already acknowledged or declared lost).
func (s *Sender) ackPSN(now sim.Time, psn uint32) int64 {
	p := &s.ring[psn&s.mask]
	var freed int64
	switch p.state {
	case stInFlight:
		freed = int64(s.cfg.WireBytes(int(p.len)))
		s.inflight -= freed
		s.addPlaneInflight(int(p.ev), -freed)
		if pl, _, ok := s.evs.Route(int(p.ev)); ok {
			s.packed[pl] += freed
		}
	case stLost:
		// Acknowledged after being declared lost: the retransmit queue skips it.
	default:
		return 0
	}
	// RACK learns only from packets sent once: the ACK of a retransmitted packet may answer
	// its first copy, and the tiny RTT that suggests would mark everything older lost (Karn's
	// rule, RFC 8985 §6.1).
	if !p.retx {
		// Its path was answered: clean, unless the answer that echoes it carried a mark
		// (OnSACK gives that to OnCE first, and a mark in a lap outweighs clean answers).
		s.evs.OnClean(int(p.ev))
		s.noteBoard(now, int(p.ev), false)
		if p.sentAt > s.rackXmit {
			s.rackXmit, s.rackRTT = p.sentAt, now-p.sentAt
		}
		if k := &s.rtStrike[s.route[p.ev]]; *k > 0 {
			*k--
		}
		if k := &s.strikes[p.ev]; *k > 0 {
			*k-- // a clean delivery on the EV outweighs half a loss
			if *k == 0 {
				// The path works: the losses of its run were background loss.
				s.bgLosses += int64(s.runLoss[p.ev])
				s.runLoss[p.ev] = 0
			}
		}
	}
	if d := psn + 1; int32(d-s.highAck) > 0 {
		s.highAck = d
	}
	if psn == s.una {
		p.state = stFree
	} else {
		p.state = stAcked
	}
	return freed
}

// complete advances una over acknowledged PSNs and reports finished transfers in order.
func (s *Sender) complete(now sim.Time) {
	for s.una != s.next && s.ring[s.una&s.mask].state == stAcked {
		s.ring[s.una&s.mask].state = stFree
		s.una++
	}
	for s.msgDone < len(s.msgs) {
		m := &s.msgs[s.msgDone]
		if m.cut < m.bytes || int32(s.una-m.lastPSN) <= 0 {
			break
		}
		s.done = append(s.done, Completion{Msg: uint32(s.msgDone), Bytes: m.bytes, Posted: m.posted, Done: now})
		s.msgDone++
	}
	if s.inflight == 0 && !s.stalled {
		s.rtoAt = sim.MaxTime
	}
}

// detectLoss is RACK (RFC 8985 §6.2, by time): a packet in flight that was sent before the
// latest-sent packet to be acknowledged, and has been out longer than that packet's RTT plus
// the reordering window, is lost (fifoLoss finds most losses earlier), and blame decides
// whether the loss counts against its EV's path. It also sets rackAt, the earliest time a
// candidate will expire.
func (s *Sender) detectLoss(now sim.Time) {
	s.rackAt = sim.MaxTime
	if s.rackXmit == 0 {
		return
	}
	for psn := s.una; int32(s.highAck-psn) > 0; psn++ {
		p := &s.ring[psn&s.mask]
		if p.state != stInFlight || p.sentAt >= s.rackXmit {
			continue
		}
		deadline := p.sentAt + s.rackRTT + s.reo
		if now >= deadline {
			s.lose(psn, p, RetxSackGap)
			s.blame(now, p)
		} else if deadline < s.rackAt {
			s.rackAt = deadline
		}
	}
}

// lose moves an in-flight packet to the retransmit queue.
func (s *Sender) lose(psn uint32, p *pktState, cause RetxCause) {
	if p.state == stInFlight {
		w := int64(s.cfg.WireBytes(int(p.len)))
		s.inflight -= w
		s.addPlaneInflight(int(p.ev), -w)
	}
	p.state = stLost
	s.pushRetx(psn)
	s.Stats.Retx[cause]++
}

// OnNACK processes a NACK: the PSN is resent at once [MRC §2.1]. A trim NACK not at the last
// hop moves the EV to SKIP (so does one at the last hop when no other plane trims: a slow
// receiver port); every trim NACK marks its plane congested for blame and reduces the window
// (NSCC quick adapt).
func (s *Sender) OnNACK(now sim.Time, h *Header) {
	s.Stats.NACKs++
	s.rcvWnd = int64(h.RcvWnd)
	reason := h.Reason
	if reason == NackTrimmed || reason == NackTrimmedLastHop {
		// A trim says the destination is congested even when the packet was already found
		// lost (an answer on another reverse route overtook this NACK): note it first. The
		// plane is the echoed EV's: the NACK answers the trimmed packet.
		trimPlane, _, _ := s.evs.Route(int(h.EchoEV))
		wasCongested := s.congested(now, int(h.EchoEV))
		if trimPlane < len(s.trimTil) {
			s.trimTil[trimPlane] = now + s.holdCong
		}
		// A last-hop trim on one plane while no other plane trims is that plane's last hop,
		// not an incast: the receiver's port on it is slow or degraded. Moving off the EV (as
		// for a trim before the last hop) shifts load to the other planes; an incast trims
		// every plane and leaves the EVs alone [MRC §2.1].
		if reason == NackTrimmedLastHop && len(s.trimTil) > 1 && !wasCongested {
			reason = NackTrimmed
		}
	}
	psn := h.NackPSN
	if int32(psn-s.una) < 0 || int32(s.next-psn) <= 0 {
		s.absorb(now, h)
		s.Pump(now)
		return // stale
	}
	p := &s.ring[psn&s.mask]
	if p.state != stInFlight {
		s.absorb(now, h)
		s.Pump(now)
		return
	}
	wire := int64(s.cfg.WireBytes(int(p.len)))
	switch reason {
	case NackTrimmed, NackTrimmedLastHop:
		s.evs.OnTrimNack(int(p.ev), reason == NackTrimmedLastHop)
		if reason == NackTrimmed {
			s.noteBoard(now, int(p.ev), true)
		}
		s.lose(psn, p, RetxTrimNack)
		s.planeCC(int(p.ev)).OnNack(now, wire)
	default:
		s.lose(psn, p, RetxOutOfWindow)
	}
	// The NACK's cumulative PSN and bitmap acknowledge like a SACK's. The NACKed PSN is not in
	// them (the receiver has only its header), so this cannot undo the loss just recorded.
	s.absorb(now, h)
	// A NACK is progress: the receiver is alive and the path answered.
	s.retries = 0
	if s.inflight == 0 {
		s.rtoAt = sim.MaxTime
	} else {
		s.rtoAt = now + s.rto()
	}
	s.Pump(now)
}

// onProbeAnswer credits a probe answered cleanly.
func (s *Sender) onProbeAnswer(now sim.Time, h *Header) {
	ev := int(h.EchoEV)
	if ev >= len(s.probeOut) || s.probeOut[ev] == 0 {
		return
	}
	s.probeOut[ev] = 0
	s.Stats.ProbeAcks++
	s.evs.OnProbeAck(now, ev)
}

// Deadline returns when OnTimer must next be called: the earliest of the ACK timeout, the RACK
// expiry, a probe answer's timeout and the next probe; MaxTime if none.
func (s *Sender) Deadline() sim.Time {
	d := s.rackAt
	if s.inflight > 0 && s.rtoAt < d {
		d = s.rtoAt
	}
	if s.err != nil {
		return sim.MaxTime
	}
	if t := max(s.evs.NextProbeAt(), s.probeTokenAt()); t < d {
		d = t
	}
	for _, ev := range s.probesOut {
		if t := s.probeOut[ev]; t != 0 && t+s.rto0 < d {
			d = t + s.rto0
		}
	}
	if s.stalled && s.rtoAt < d {
		d = s.rtoAt
	}
	if s.pacing {
		if t := s.paceAt(); t < d {
			d = t
		}
	}
	return d
}

// OnTimer handles whatever is due at now: RACK expiries, the ACK timeout (retransmit what has
// been out longer than the timeout, back off, count the retry; exhausted retries are a QP
// error), probe answers that never came, and probes to send.
func (s *Sender) OnTimer(now sim.Time) {
	if s.err != nil {
		return
	}
	if now >= s.rackAt {
		s.detectLoss(now)
	}
	// Probe answers that did not come back within the ACK timeout.
	keep := s.probesOut[:0]
	for _, ev := range s.probesOut {
		t := s.probeOut[ev]
		if t == 0 {
			continue
		}
		if now >= t+s.rto0 {
			s.probeOut[ev] = 0
			s.Stats.ProbeLosses++
			s.evs.OnProbeLoss(int(ev))
			continue
		}
		keep = append(keep, ev)
	}
	s.probesOut = keep
	if (s.inflight > 0 || s.stalled) && now >= s.rtoAt {
		s.Stats.Timeouts++
		s.retries++
		if s.cfg.MaxRetries != UnlimitedRetries && s.retries > s.cfg.MaxRetries {
			s.err = fmt.Errorf("mrc: qp %d: gave up at %v after %d ACK timeouts in a row without progress, beyond max_retries %d (%s)", s.qp, now, s.retries, s.cfg.MaxRetries, s.Outstanding())
			return
		}
		rto := s.rto()
		for psn := s.una; psn != s.next; psn++ {
			p := &s.ring[psn&s.mask]
			if p.state == stInFlight && now-p.sentAt >= s.rto0 {
				s.lose(psn, p, RetxTimeout)
				s.blame(now, p)
			}
		}
		for _, c := range s.ccs {
			c.OnTimeout(now) // each plane's quick adapt keeps what that plane delivered
		}
		s.rtoAt = now + rto
	}
	s.Pump(now)
	if s.inflight == 0 && !s.stalled {
		s.rtoAt = sim.MaxTime
	}
}

// Loss attribution defaults (lockstep; see blame).
const (
	// StrikeFalseRate is the per-packet chance of a false retirement that the automatic strike
	// limit allows under independent random loss: about one healthy EV retired per 10^9 packets.
	StrikeFalseRate = 1e-9
	// StrikeLossFloor is the background loss rate the automatic limit assumes at least, so a
	// QP that has seen no loss yet still needs three losses on a path (limit 3).
	StrikeLossFloor = 1e-3
	// MinAutoStrikes and MaxAutoStrikes bound the automatic strike limit.
	MinAutoStrikes, MaxAutoStrikes = 3, 8
)

// StrikeLimit returns the number of net untrimmed losses (see blame) that retire an EV: the
// scenario's loss_strikes if set, else the smallest k with p^k <= StrikeFalseRate, where p is
// the QP's background loss rate so far (untrimmed losses charged to EVs that were not retired,
// over data packets sent, at least StrikeLossFloor), clamped to [MinAutoStrikes,
// MaxAutoStrikes]. A clean path loses nothing and a failed one nearly everything, so the limit
// only has to rise above what random loss on healthy paths can string together: 3 on a clean
// fabric, 4 at 0.4% loss per packet (0.1% on each of four links), 7 at 4%.
func (s *Sender) StrikeLimit() int {
	if s.cfg.LossStrikes > 0 {
		return s.cfg.LossStrikes
	}
	p := max(float64(s.bgLosses)/float64(max(s.Stats.DataPackets, 1)), StrikeLossFloor)
	if p >= 1 {
		return MaxAutoStrikes
	}
	k := int(math.Ceil(math.Log(StrikeFalseRate) / math.Log(p)))
	return min(max(k, MinAutoStrikes), MaxAutoStrikes)
}

// blame decides what an untrimmed loss (a RACK gap or an ACK timeout) of packet p says about
// the path of its EV [MRC §2.1: "loss without a trim ... -> ASSUMED_BAD"; lockstep reading].
// With trimming, congestion should cut packets rather than drop them, but a trimmed header can
// still be dropped where the header queue overflows, and links lose packets at random; neither
// is a path failure. So a loss counts against the EV only when
//   - the destination is not congested: no trim NACK arrived within the congestion hold (two
//     ACK timeouts plus a base RTT) for a packet on another plane than the lost one's (any
//     plane, with one), since a header queue overflows only where trimming is heavy, and
//     such a QP sees trim NACKs for its other packets there; and
//   - something sent after the packet was delivered (the RACK condition, RFC 8985): other
//     paths to the same destination work, so the receiver is alive and this path is the odd
//     one out. A timeout with nothing delivered at all blames no EV.
//
// Trims on one plane alone do not excuse that plane's losses (on a multi-plane NIC): a
// receiver port that is slow or degraded trims only its own plane's packets, and retiring
// those EVs is what moves traffic to the healthy planes; an incast trims on every plane.
//
// A loss that counts adds two strikes to its EV and two to its route (the plane and path the
// EV travels: every EV on it is the same static source route [MRC §2.2]); every clean
// delivery (a packet sent once and acknowledged) takes one from each, so a score rises on a
// path that loses more than a third of its packets and decays on a path that loses at random.
// When either reaches 2 x StrikeLimit the route is retired (EVSet.OnPathLoss). The route's
// score finds a failed path after StrikeLimit of its packets are lost, whichever of its EVs
// carried them: microseconds at line rate. The EV's finds a loss tied to the entropy value
// itself (a gray failure that drops one EV's packets, diluted in its route's deliveries).
// Random loss of 0.1-1% per link retires no healthy EV (checked in the runner's stress suite).
// With the EV's score alone, each of a failed route's EVs had to lose StrikeLimit packets
// itself, one per rotation of the active set: on one 100G plane with 128 EVs, three rotations
// of 43 us, while the route kept taking its share of the QP's packets and one lost PSN could
// be resent onto it again and again (a PSN of TestMRCFaultSlowdownSweep's one-plane uplink
// case sent 8 times over 140 us, every copy on the dead route, holding the cumulative ACK).
func (s *Sender) blame(now sim.Time, p *pktState) {
	ev := int(p.ev)
	switch {
	case s.congested(now, ev):
		s.Stats.CongestionLosses++
		return
	case p.sentAt >= s.rackXmit:
		s.Stats.UnattributedLosses++
		return
	}
	s.Stats.Strikes++
	k := &s.strikes[ev]
	*k = uint8(min(int(*k)+2, math.MaxUint8))
	rk := &s.rtStrike[s.route[ev]]
	*rk = uint8(min(int(*rk)+2, math.MaxUint8))
	// The loss joins the EV's pending run; it becomes background loss only if the path then
	// delivers again (ackPSN): a failed path's losses must not raise the limit that has to
	// find it.
	s.runLoss[ev] = uint8(min(int(s.runLoss[ev])+1, math.MaxUint8))
	if limit := 2 * s.StrikeLimit(); int(*k) < limit && int(*rk) < limit {
		return
	}
	*rk = 0
	plane, path, _ := s.evs.Route(ev)
	for e := range s.strikes {
		if pl, pa, _ := s.evs.Route(e); pl == plane && pa == path {
			s.strikes[e], s.runLoss[e] = 0, 0
		}
	}
	s.Stats.PathRetirements++
	s.evs.OnPathLoss(ev)
}

// congested reports whether a loss on EV ev at now falls in destination-wide congestion: a
// trim NACK within the hold on a plane other than ev's, or on ev's own plane when the QP has
// only one (see blame).
func (s *Sender) congested(now sim.Time, ev int) bool {
	pl, _, _ := s.evs.Route(ev)
	for q, t := range s.trimTil {
		if now < t && (q != pl || len(s.trimTil) == 1) {
			return true
		}
	}
	return false
}

// evRoutes numbers the distinct routes (plane, path) of evs densely, in EV order, and returns
// each EV's number; len(result) bounds the numbers.
func evRoutes(evs *EVSet) []int32 {
	out := make([]int32, evs.Len())
	seen := make(map[[2]int]int32, evs.Len())
	for ev := range out {
		pl, pa, _ := evs.Route(ev)
		k := [2]int{pl, pa}
		id, ok := seen[k]
		if !ok {
			id = int32(len(seen))
			seen[k] = id
		}
		out[ev] = id
	}
	return out
}
