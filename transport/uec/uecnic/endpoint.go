package uecnic

import (
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/nic"
	"github.com/lockstepsim/lockstep/transport/uec"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// qp is one UEC connection carrying one transfer (traffic) or a pair's collective messages.
type qp struct {
	src, dst int32
	id       int32
	bytes    int64
	start    sim.Time
	snd      *uec.Sender
	rcv      *uec.Receiver
	timer    sim.TimerID
	ackTimer sim.TimerID // receiver's coalesced-SACK timer (ack_every > 1)
	done     sim.Time    // last sender completion
	placed   sim.Time    // last receiver completion
	hops     int
	posts    int
	acked    int
	tokens   []uint64
	tokHead  int
	transfer int32 // traffic transfer number, -1 for a collective QP
	waiting  bool
	lossRetx int64
	errored  bool
	// Ephemeral PDCs (pdc.go): the pair's key (collective qps), closed for good, idle since
	// idleSince with nothing outstanding, and the idle-timeout timer (idle_timeout > 0).
	key       [3]int32
	closed    bool
	idle      bool
	idleSince sim.Time
	idleTimer sim.TimerID
	// uecfix (plane.go): plane choice state (nil with one plane); control packets sent.
	pl     *planeState
	ctl    uint32
	rxEV   uint16 // RCCC: EV of the latest data packet or credit request received
	rxEVOK bool
}

// Endpoint is UEC's NIC adapter (transport.Endpoint): one uec.Sender/uec.Receiver pair per
// QP, their headers packed into fabric packets of fabric.ProtoUET (uec.Header.Pack,
// uec.Unpack) forwarded by ECMP over the entropy (RouteLen 0), one timer per sender at its
// deadline, sends pulled by the NIC (nic.Wait, fabric.Network.SetNICReady), completions
// recorded.
type Endpoint struct {
	s        *sim.Sim
	net      *fabric.Network
	cfg      uec.Config
	layout   topo.Topology
	seed     uint64
	qps      []*qp
	kStart   sim.Kind
	kTimer   sim.Kind
	baseRTT  sim.Time
	maxQueue sim.Time
	nicRate  sim.Rate
	planes   int
	fct      *hdrhistogram.Histogram
	fctMax   int64
	running  int
	errs     []error
	hooks    transport.Hooks
	pairs    map[[3]int32]int32
	wait     []nic.Wait
	quiet    bool
	log      transport.LossLog
	// nTransfers counts AddFlow calls (a transfer's number).
	nTransfers int32
	// RCCC (rccc.go): per receiving host, its credit scheduler and pacer timer; the credit
	// packets and credit requests sent.
	kCredit      sim.Kind
	kAck         sim.Kind
	ackDelay     sim.Time
	sched        []*uec.CreditScheduler
	schedTimer   []sim.TimerID
	creditsSent  int64
	requestsSent int64
	// Sample's series (PlacedSeries).
	placedAt []sim.Time
	placed   [][]int64
	placedN  int
	// pdc is the ephemeral PDC bookkeeping (pdc.go); nil unless transport.uec.pdc is set.
	pdc *pdcState
	// uecfix (plane.go): per-host plane rotation; planes a QP began avoiding.
	rot           []uint32
	planesAvoided int64
}

var _ transport.Endpoint = (*Endpoint)(nil)

// newEndpoint is Plugin.NewEndpoint: UEC's adapter over env.Net for the resolved block cfg.
// It registers the kernel kinds "uec.start" and "uec.timer", the fabric receiver of
// fabric.ProtoUET and the NIC-ready callback. Errors: cfg not a UEC block, env without a
// kernel, fabric or topology.
func newEndpoint(cfg any, env transport.EndpointEnv) (transport.Endpoint, error) {
	c, err := config(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.Validate("transport.uec"); err != nil {
		return nil, err
	}
	s, net, l := env.Sim, env.Net, env.Topology
	if s == nil || net == nil || l == nil {
		return nil, fmt.Errorf("transport.uec: the endpoint needs a kernel, a packet fabric and its topology")
	}
	p := l.Params()
	e := &Endpoint{s: s, net: net, cfg: c, layout: l, seed: env.Seed, baseRTT: baseRTT(l, &c),
		nicRate: p.HostLink * sim.Rate(p.Planes), planes: p.Planes, fct: transport.NewFCTHistogram(), pairs: map[[3]int32]int32{}}
	hold := func(q fabric.QueueConfig, r sim.Rate) sim.Time {
		b := q.Limit
		if q.Trim.Enabled && q.Trim.Threshold > 0 && q.Trim.Threshold < b {
			b = q.Trim.Threshold
		}
		return r.TxTime(int64(b))
	}
	e.maxQueue = max(hold(env.Queues.Switch, p.FabricLink), hold(env.Queues.LastHop, p.HostLink))
	e.kStart = s.Register("uec.start", e.onStart)
	e.kTimer = s.Register("uec.timer", e.onTimer)
	if c.HasRCCC() {
		e.kCredit = s.Register("uec.credit", e.onCredit)
	}
	if c.AckEvery > 1 {
		e.kAck = s.Register("uec.ack", e.onAckTimer)
		e.ackDelay = c.AckDelay
		if e.ackDelay == 0 {
			e.ackDelay = (p.HostLink * sim.Rate(p.Planes)).TxTime(int64(c.AckEvery * c.WireBytes(c.PayloadBytes)))
		}
	}
	if c.PDC.Ephemeral() {
		e.pdc = newPDCState(net.NumHosts(), s.Register("uec.idle", e.onIdle))
	}
	net.SetReceiver(fabric.ProtoUET, e.onPacket)
	e.wait = make([]nic.Wait, net.NumHosts())
	net.SetNICReady(e.onNICReady)
	return e, nil
}

// SetHooks installs the runner's callbacks (transport.Hooks).
func (e *Endpoint) SetHooks(h transport.Hooks) { e.hooks = h }

// checkPair reports why src -> dst cannot carry a connection: hosts out of range or equal,
// or no route.
func (e *Endpoint) checkPair(src, dst int) error {
	hosts := e.net.NumHosts()
	if src < 0 || src >= hosts || dst < 0 || dst >= hosts || src == dst {
		return fmt.Errorf("uec: connection from host %d to host %d: want two distinct hosts of 0..%d", src, dst, hosts-1)
	}
	return nic.PairRouteError(e.layout, src, dst, false)
}

func (e *Endpoint) newQP(src, dst int) (*qp, error) {
	if err := e.checkPair(src, dst); err != nil {
		return nil, err
	}
	id := int32(len(e.qps))
	rng := sim.Stream(e.seed, fmt.Sprintf("uec.qp%d", id))
	snd, err := uec.NewSender(e.cfg, uint32(id), uec.Path{BaseRTT: e.baseRTT, NICRate: e.nicRate, MaxQueueDelay: e.maxQueue, Hops: e.layout.Sizing().MaxSwitchHops}, rng)
	if err != nil {
		return nil, err
	}
	q := &qp{src: int32(src), dst: int32(dst), id: id, snd: snd, rcv: uec.NewReceiver(e.cfg), transfer: -1, hops: nic.PairHops(e.layout, src, dst)}
	q.timer = e.s.NewTimer(e.kTimer, id)
	if e.pdc != nil && e.cfg.PDC.IdleTimeout > 0 {
		q.idleTimer = e.s.NewTimer(e.pdc.kIdle, id)
	}
	if e.cfg.AckEvery > 1 {
		q.rcv.SetAckDelay(e.ackDelay)
		q.ackTimer = e.s.NewTimer(e.kAck, id)
	}
	e.initPlanes(q)
	e.qps = append(e.qps, q)
	return q, nil
}

// AddFlow opens the QP from src to dst for one transfer of bytes posted at start (its random
// stream is "uec.qp<n>" of the run's seed). Errors: hosts out of range or equal, no route.
func (e *Endpoint) AddFlow(src, dst int, bytes int64, start sim.Time) error {
	q, err := e.newQP(src, dst)
	if err != nil {
		return err
	}
	q.bytes, q.start, q.posts = max(bytes, 1), start, 1
	q.transfer = e.nTransfers
	e.nTransfers++
	e.running++
	e.s.At(start, e.kStart, q.id, 0)
	return nil
}

// Send carries one collective message (collective.Transport) on the QP of (src, dst,
// Hooks.Group(instance)), opened on first use; Hooks.Delivered hears of it when the receiver
// has placed every byte. Errors: hosts out of range or equal, no route, the QP gave up.
func (e *Endpoint) Send(now sim.Time, m collective.Message) error {
	key := [3]int32{int32(m.Src), int32(m.Dst), 0}
	if e.hooks.Group != nil {
		key[2] = int32(e.hooks.Group(m.Instance))
	}
	if e.pdc != nil {
		return e.pdcSend(now, m, key)
	}
	var q *qp
	if i, ok := e.pairs[key]; ok {
		q = e.qps[i]
	} else {
		var err error
		if q, err = e.newQP(m.Src, m.Dst); err != nil {
			return err
		}
		e.pairs[key] = q.id
		q.start = now
	}
	if err := q.snd.Err(); err != nil {
		return err
	}
	e.running++
	e.post(now, q, m)
	return nil
}

// post carries collective message m on q (the caller has counted it in e.running).
func (e *Endpoint) post(now sim.Time, q *qp, m collective.Message) {
	b := max(m.Bytes, 1)
	q.snd.Post(now, b)
	q.bytes += b
	q.posts++
	q.tokens = append(q.tokens, m.Token)
	e.pump(now, q)
}

func (e *Endpoint) onStart(now sim.Time, id int32, _ uint64) {
	q := e.qps[id]
	if e.pdc != nil {
		e.pdcStart(now, q)
		return
	}
	q.snd.Post(now, q.bytes)
	e.pump(now, q)
}

func (e *Endpoint) onTimer(now sim.Time, id int32, _ uint64) {
	q := e.qps[id]
	q.snd.OnTimer(now)
	e.pump(now, q)
}

// gated reports whether every NIC port of host has a packet waiting behind the one on the
// wire: the NIC pulls the next packet when a port drains (onNICReady).
func (e *Endpoint) gated(host int32) (bool, int) {
	ports := e.net.Nodes[host].Ports
	best, bq := -1, int64(0)
	for pl := 0; pl < e.planes && pl < len(ports); pl++ {
		pt := &e.net.Ports[ports[pl]]
		if pt.Down {
			continue
		}
		if qb := pt.QueueBytes(); best < 0 || qb < bq {
			best, bq = pl, qb
		}
	}
	return best < 0 || bq > 0, best
}

// pump sends what the sender's windows allow while the NIC has room, then handles
// completions, errors and the timer.
func (e *Endpoint) pump(now sim.Time, q *qp) {
	if e.quiet {
		q.snd.ClearCompletions()
		return
	}
	for {
		full, plane := e.gatedFor(now, q)
		if full {
			if !q.waiting && q.snd.Err() == nil {
				q.waiting = true
				e.wait[q.src].Push(q.id)
			}
			break
		}
		h, ok := q.snd.Next(now)
		if !ok {
			break
		}
		e.planeEV(q, &h, plane)
		e.send(now, q, &h, q.src, q.dst, plane)
		e.sentOn(q, &h, plane)
	}
	e.rcccRequestOut(now, q)
	e.afterSender(now, q)
}

func (e *Endpoint) afterSender(now sim.Time, q *qp) {
	st := &q.snd.Stats
	if n := st.Retx[uec.RetxSackGap] + st.Retx[uec.RetxTimeout]; n > q.lossRetx {
		q.lossRetx = n
		e.log.Retx(now)
	}
	for _, c := range q.snd.Completions() {
		q.done = c.Done
		q.acked++
		posted := c.Posted
		if q.transfer >= 0 {
			// A traffic transfer's FCT runs from its start, so a wait for an ephemeral PDC
			// (pdc.go) counts, as in flows.csv and the mean.
			posted = min(posted, q.start)
		}
		ns := int64((c.Done - posted) / sim.Nanosecond)
		_ = e.fct.RecordValue(ns)
		e.fctMax = max(e.fctMax, ns)
		if q.transfer >= 0 && e.hooks.FlowSent != nil {
			e.hooks.FlowSent(now, int(q.transfer))
		}
		e.running--
		if e.running == 0 && e.hooks.OnDone != nil {
			e.hooks.OnDone(now)
		}
	}
	q.snd.ClearCompletions()
	e.learnPlanes(now, q)
	if err := q.snd.Err(); err != nil {
		if !q.errored {
			q.errored = true
			e.errs = append(e.errs, err)
			e.log.QPError(now)
			e.s.StopTimer(q.timer)
			if e.hooks.Halt != nil && e.allLeftErrored() {
				e.hooks.Halt(now)
			}
		}
		return
	}
	if d := q.snd.Deadline(); d != sim.MaxTime {
		e.s.Reset(q.timer, d)
	} else {
		e.s.StopTimer(q.timer)
	}
	if e.pdc != nil && q.posts > 0 && q.acked == q.posts {
		e.pdcIdle(now, q)
	}
}

func (e *Endpoint) allLeftErrored() bool {
	for _, q := range e.qps {
		if q.acked < q.posts && q.snd.Err() == nil {
			return false
		}
	}
	return true
}

// onNICReady serves host's waiting QPs in FIFO order when a NIC port has room.
func (e *Endpoint) onNICReady(now sim.Time, host int32, _ int) {
	w := &e.wait[host]
	for w.Head < len(w.Q) {
		q := e.qps[w.Q[w.Head]]
		w.Head++
		q.waiting = false
		e.pump(now, q)
		if q.waiting {
			break
		}
	}
	w.Reset()
}

// send packs h into a fabric packet from host to peer on plane: Op, Entropy (the EV the
// switches hash), Seq, Ack, Bitmap, Aux from uec.Words; Flow the QP; RouteLen 0 (ECMP).
// Data is class 1, ECN-capable and trimmable; ACKs and NACKs class 0.
func (e *Endpoint) send(now sim.Time, q *qp, h *uec.Header, host, peer int32, plane int) {
	p := e.net.NewPacket()
	p.Proto = fabric.ProtoUET
	p.Flow = q.id
	p.Src, p.Dst = host, peer
	w := h.Pack()
	p.Op, p.Entropy = w.Op, w.Entropy
	p.Seq, p.Ack, p.Bitmap, p.Aux = w.Seq, w.Ack, w.Bitmap, w.Aux
	if h.Kind == uec.Data {
		p.Size = int32(e.cfg.WireBytes(int(h.Len)))
		p.Class = 1
		p.Flags = fabric.ECT | fabric.Trimmable
	} else {
		p.Size = int32(e.cfg.AckBytes)
		p.Class = 0
	}
	if plane < 0 {
		plane = int(h.EV) % e.planes
	}
	if err := e.net.Send(now, host, plane, p); err != nil {
		e.s.Stop(err)
	}
}

// onPacket decodes a UEC packet at its destination and hands it to the engine.
func (e *Endpoint) onPacket(now sim.Time, p *fabric.Packet) {
	if p.Flow < 0 || int(p.Flow) >= len(e.qps) || e.quiet {
		return
	}
	q := e.qps[p.Flow]
	h, err := uec.Unpack(uec.Words{Op: p.Op, Entropy: p.Entropy, Seq: p.Seq, Ack: p.Ack, Bitmap: p.Bitmap, Aux: p.Aux}, p.SentAt)
	if err != nil {
		e.s.Stop(err)
		return
	}
	switch h.Kind {
	case uec.Credit:
		q.snd.OnCredit(now, h.Req)
		e.pump(now, q)
		return
	case uec.CreditRequest:
		e.rcccRequest(now, q, &h)
		return
	case uec.ACK, uec.NACK:
		q.snd.OnAck(now, &h)
		e.pump(now, q)
		return
	}
	if e.sched != nil || e.cfg.HasRCCC() {
		e.rcccData(now, q, &h, p)
	}
	q.rcv.OnData(now, &h, p.Flags&fabric.Trimmed != 0, p.Flags&fabric.TrimmedLastHop != 0, p.Flags&fabric.CE != 0)
	e.receiverOut(now, q)
}

// onAckTimer sends QP id's coalesced SACK when its delay is up.
func (e *Endpoint) onAckTimer(now sim.Time, id int32, _ uint64) {
	if e.quiet {
		return
	}
	q := e.qps[id]
	q.rcv.OnTimer(now)
	e.receiverOut(now, q)
}

// receiverOut sends q's receiver's answers, re-arms its coalescing timer and reports what it
// completed.
func (e *Endpoint) receiverOut(now sim.Time, q *qp) {
	if e.cfg.AckEvery > 1 {
		if d := q.rcv.Deadline(); d != sim.MaxTime {
			e.s.Reset(q.ackTimer, d)
		} else {
			e.s.StopTimer(q.ackTimer)
		}
	}
	for i := range q.rcv.Out() {
		a := &q.rcv.Out()[i]
		e.send(now, q, a, q.dst, q.src, e.ctrlPlane(q.dst, a.EV))
	}
	q.rcv.ClearOut()
	for range q.rcv.Completions() {
		q.placed = now
		if q.transfer >= 0 && e.hooks.FlowPlaced != nil {
			e.hooks.FlowPlaced(now, int(q.transfer))
		}
		if q.tokHead < len(q.tokens) {
			tok := q.tokens[q.tokHead]
			q.tokHead++
			if e.hooks.Delivered != nil {
				e.hooks.Delivered(now, tok)
			}
		}
	}
	q.rcv.ClearCompletions()
}

// Outstanding returns the transfers or messages not yet acknowledged and the QP errors.
func (e *Endpoint) Outstanding() (running, errs int) { return e.running, len(e.errs) }

// Errs returns the QP errors in the order they happened.
func (e *Endpoint) Errs() []error { return e.errs }

// Stuck names at most max QPs still waiting.
func (e *Endpoint) Stuck(max int) string {
	var out []string
	for i, q := range e.qps {
		if q.acked < q.posts {
			out = append(out, fmt.Sprintf("qp %d (h%d->h%d): %s", i, q.src, q.dst, q.snd.Outstanding()))
		}
	}
	return nic.StuckList(out, max)
}

// Quiesce stops every engine: timers off, nothing more sent.
func (e *Endpoint) Quiesce() {
	e.quiet = true
	for _, q := range e.qps {
		e.s.StopTimer(q.timer)
	}
}

// maxPlacedSamples bounds the entries PlacedSeries keeps (QPs x samples).
const maxPlacedSamples = 1 << 20

// Sample records, at every queue sample, the payload each QP's receiver has placed so far
// (PlacedSeries; while QPs x samples stays under 2^20, then no more). Nothing is written to
// the outputs.
func (e *Endpoint) Sample(now sim.Time) {
	if e.quiet || e.placedN+len(e.qps) > maxPlacedSamples {
		return
	}
	row := make([]int64, len(e.qps))
	for i, q := range e.qps {
		row[i] = q.rcv.Stats.PlacedBytes
	}
	e.placedAt = append(e.placedAt, now)
	e.placed = append(e.placed, row)
	e.placedN += len(row)
}

// PlacedSeries returns the sample times and, per sample, each QP's payload placed by then,
// bytes (rows as long as the QPs open at that sample), for tests and tools: a flow's rate
// between two samples is the difference over the interval.
func (e *Endpoint) PlacedSeries() ([]sim.Time, [][]int64) { return e.placedAt, e.placed }

// Bytes returns the data wire bytes sent, the payload placed and the payload posted.
func (e *Endpoint) Bytes() (sent, placed, posted int64) {
	for _, q := range e.qps {
		sent += q.snd.Stats.DataBytes
		placed += q.rcv.Stats.PlacedBytes
		posted += q.bytes
	}
	return
}

// Log returns the loss-driven retransmission times and the QP error times.
func (e *Endpoint) Log() (lossAt, errAt []sim.Time) { return e.log.LossAt, e.log.ErrAt }

// Link returns half the base RTT and the payload share of a full data packet.
func (e *Endpoint) Link() (sim.Time, float64) {
	return e.baseRTT / 2, float64(e.cfg.PayloadBytes) / float64(e.cfg.WireBytes(e.cfg.PayloadBytes))
}

// Files returns nil: UEC writes no files of its own.
func (e *Endpoint) Files() []transport.File { return nil }

// Run returns the endpoint itself (*Endpoint) for tests and tools.
func (e *Endpoint) Run() any { return e }

// QPs returns the number of QPs opened.
func (e *Endpoint) QPs() int { return len(e.qps) }

// Sender returns QP i's sender, for tests and tools.
func (e *Endpoint) Sender(i int) *uec.Sender { return e.qps[i].snd }
