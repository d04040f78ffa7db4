package rocenic

import (
	"fmt"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/nic"
	"github.com/lockstepsim/lockstep/transport/roce"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// qp is one RoCEv2 RC connection: a sender at src, a receiver at dst, one NIC port (plane)
// and one UDP source port, so every packet of the QP takes one ECMP path each way.
type qp struct {
	qp       int32
	src, dst int32
	plane    uint8
	srcPort  uint16
	snd      *roce.Sender
	rcv      *roce.Receiver
	timer    sim.TimerID
	// hole is the responder's hold timer under out-of-order placement (armed at
	// Receiver.HoleDeadline), holeAt where it is set; holeOn once made.
	hole     sim.TimerID
	holeAt   sim.Time
	holeOn   bool
	waiting  bool  // in its NIC port's wait list
	flow     int32 // traffic flow it carries a stripe of; -1 for collective messages
	posts    int
	acked    int
	posted   int64    // payload bytes posted
	tokens   []uint64 // collective messages in posting order; tokens[tokHead:] not yet placed
	tokHead  int
	done     sim.Time // latest sender completion
	lastRetx int64    // resent packets seen so far (for the loss-recovery span)
	class    uint8    // its data packets' queue class (VL under credits): SetDataClass
	// backlog holds collective messages waiting for a free slot: at most MsgWindow messages
	// per QP are posted and not yet acknowledged (Send).
	backlog []collective.Message
}

// MsgWindow is how many collective messages one QP may have posted and not yet acknowledged
// before the next waits: NCCL's slots per connection (NCCL_STEPS = 8, each a chunk whose
// buffer is reused only once its send completed, i.e. was acknowledged). A sender whose ACKs
// are lost (a failed link on the return path) therefore stalls, as a real one does, instead
// of going on as the receiver places its data.
const MsgWindow = 8

// transfer is one traffic flow striped over QPs.
type transfer struct {
	src, dst  int32
	bytes     int64
	start     sim.Time
	qps       []int32
	parts     int // stripes with bytes
	partsDone int
	placed    int // stripes placed at the receiver
	done      sim.Time
	hops      int // the pair's switch hops, for the ideal FCT
	// activeOfLine is the payload placed from the flow's start to the first flow's completion
	// over that time, as a fraction of the NIC line rate (all planes); -1 when not measured
	// (one flow, or it started after the first completion).
	activeOfLine float64
}

// Endpoint is the RoCEv2 NIC adapter over the packet fabric (transport.Endpoint): it drives
// the sans-IO engines of transport/roce, QPs hashed by ECMP (no source route), NIC transmit
// arbitration across the QPs of a port (roce.Sender.SetNICGate, nic.Wait), one timer per
// sender. Traffic transfers (AddFlow) are striped over QPsPerPeer QPs per plane; collective
// messages (Send) go round robin over the QPs of their (src, dst, group), at most MsgWindow
// unacknowledged per QP. docs/protocols.md, "RoCEv2", describes the model.
type Endpoint struct {
	s        *sim.Sim
	net      *fabric.Network
	cfg      roce.Config
	planes   int
	portRate sim.Rate // one NIC port
	qps      []*qp
	flows    []*transfer
	kStart   sim.Kind
	kTimer   sim.Kind
	kHole    sim.Kind     // out-of-order placement's hold timer (onHoleTimer); 0 when off
	proto    fabric.Proto // its packets' protocol (Wire)
	class    uint8        // data class of the QPs opened next (SetDataClass)
	baseRTT  sim.Time
	fct      *hdrhistogram.Histogram // per traffic flow or message, ns
	fctMax   int64                   // the largest FCT recorded, ns, exact
	layout   topo.Topology
	running  int // transfers (flows or messages) not yet acknowledged
	errs     []error
	quiet    bool
	wait     [][]nic.Wait // by host, plane
	seed     uint64
	pairs    map[[3]int32][]int32 // collective messages: the QPs of (src, dst, group)
	nextQP   map[[3]int32]int     // round robin over a pair's QPs for messages
	hooks    transport.Hooks
	// activeAt is when the first traffic flow completed, and activeTput each flow's payload
	// placed by then over its time active, as a fraction of the NIC line rate: throughput
	// while all flows are active.
	activeAt   sim.Time
	activeTput []float64

	// Go-back-N resends and QP errors, for what a failure cost.
	log transport.LossLog

	// fanIn is each host NIC port's count of sources with data outstanding into it, which
	// the hold grows with under roce.Config.WithReorderFanIn (nil when that is off); by
	// host x planes + plane.
	fanIn []roce.FanIn
}

var _ transport.Endpoint = (*Endpoint)(nil)

// newEndpoint is the plugin's NewEndpoint: cfg is the resolved transport.roce block
// (*roce.Config; its zero fields take the defaults).
func newEndpoint(cfg any, env transport.EndpointEnv) (transport.Endpoint, error) {
	c, err := config(cfg)
	if err != nil {
		return nil, err
	}
	return New(env, c.ForFabric(env.Net.AdaptiveOn())), nil
}

// config reads the plugin's block.
func config(cfg any) (roce.Config, error) {
	switch c := cfg.(type) {
	case *roce.Config:
		if c == nil {
			return roce.Config{}, nil
		}
		return *c, nil
	case roce.Config:
		return c, nil
	}
	return roce.Config{}, fmt.Errorf("rocenic: configuration of type %T; want *roce.Config", cfg)
}

// New builds the RoCEv2 endpoint over env.Net for cfg (its zero fields take the defaults):
// it registers the kernel kinds "roce.start" and "roce.timer", the fabric receiver of
// fabric.ProtoRoCE and the NIC-ready callback. QPs draw their UDP source ports from env.Seed.
func New(env transport.EndpointEnv, cfg roce.Config) *Endpoint {
	return NewWire(env, cfg, Wire{Proto: fabric.ProtoRoCE, Kinds: "roce"})
}

// Wire is what a transport that shares RoCE's RC engine and NIC adapter but not its wire
// (InfiniBand's RC over LRH/BTH, transport/ib) changes: the fabric protocol its packets
// carry and the prefix of its kernel kinds ("<Kinds>.start", "<Kinds>.timer").
type Wire struct {
	Proto fabric.Proto
	Kinds string
}

// NewWire is New for a transport with its own Wire; New is NewWire with RoCEv2's.
func NewWire(env transport.EndpointEnv, cfg roce.Config, w Wire) *Endpoint {
	s, net, l := env.Sim, env.Net, env.Topology
	c := l.Params()
	cfg = cfg.WithDefaults()
	r := &Endpoint{
		s: s, net: net, cfg: cfg, planes: c.Planes, portRate: c.HostLink,
		fct:    transport.NewFCTHistogram(),
		pairs:  map[[3]int32][]int32{},
		nextQP: map[[3]int32]int{},
		seed:   env.Seed,
	}
	r.baseRTT = c.RoundTrip(l.Sizing().MaxSwitchHops, cfg.HeaderBytes+cfg.PayloadBytes, cfg.AckWire())
	r.layout = l
	r.proto = w.Proto
	r.class = DataClass
	r.kStart = s.Register(w.Kinds+".start", r.onStart)
	r.kTimer = s.Register(w.Kinds+".timer", r.onTimer)
	if win, _ := cfg.Reorder(); win > 0 {
		// Only with out-of-order placement: the kinds of a run without it stay as they were.
		r.kHole = s.Register(w.Kinds+".hole", r.onHoleTimer)
	}
	net.SetReceiver(w.Proto, r.onPacket)
	r.wait = make([][]nic.Wait, net.NumHosts())
	for h := range r.wait {
		r.wait[h] = make([]nic.Wait, c.Planes)
	}
	net.SetNICReady(r.onNICReady)
	return r
}

// SetHooks installs the runner's callbacks (transport.Hooks). A non-nil Delivered marks a
// workload run: the summary then counts QPs as flows (Summary).
func (r *Endpoint) SetHooks(h transport.Hooks) { r.hooks = h }

// newQP opens QP i (on plane i mod planes) of owner's connection from src to dst (owner:
// transport.FlowOwner or transport.CollectiveOwner), its UDP source port SourcePort's.
// Errors: no path joins the hosts.
func (r *Endpoint) newQP(src, dst, i int, owner uint64, fl int32) (*qp, error) {
	if err := nic.PairRouteError(r.layout, src, dst, false); err != nil {
		return nil, err
	}
	plane := i % r.planes
	id := uint32(len(r.qps))
	conn := roce.Conn{QP: id, LineRate: r.portRate, SrcPort: SourcePort(r.seed, src, dst, owner, i, r.cfg.QPsPerPeer*r.planes)}
	snd, err := roce.NewSender(r.cfg, conn)
	if err != nil {
		return nil, err
	}
	rcv, err := roce.NewReceiver(r.cfg, conn)
	if err != nil {
		return nil, err
	}
	if per, _ := r.cfg.ReorderFanIn(); per > 0 {
		if r.fanIn == nil {
			r.fanIn = make([]roce.FanIn, len(r.net.Nodes)*r.planes)
		}
		rcv.ShareFanIn(&r.fanIn[dst*r.planes+plane], int32(src))
	}
	q := &qp{qp: int32(id), src: int32(src), dst: int32(dst), plane: uint8(plane), srcPort: snd.SrcPort(), snd: snd, rcv: rcv, flow: fl, class: r.class}
	port := &r.net.Ports[r.net.Nodes[src].Ports[plane]]
	snd.SetNICGate(func() bool { return port.Down || port.QueueBytes() == 0 })
	q.timer = r.s.NewTimer(r.kTimer, int32(id))
	r.qps = append(r.qps, q)
	return q, nil
}

// AddFlow stripes one transfer of bytes from src to dst, posted at start, over the pair's
// QPs: QPsPerPeer on each plane. Errors: a host out of range, no path joins the hosts
// (nic.PairRouteError), or the engines reject the configuration.
func (r *Endpoint) AddFlow(src, dst int, bytes int64, start sim.Time) error {
	hosts := r.net.NumHosts()
	if src < 0 || src >= hosts || dst < 0 || dst >= hosts {
		return fmt.Errorf("roce: flow from host %d to host %d: want hosts in 0..%d", src, dst, hosts-1)
	}
	f := &transfer{src: int32(src), dst: int32(dst), bytes: bytes, start: start, hops: nic.PairHops(r.layout, src, dst), activeOfLine: -1}
	fi := int32(len(r.flows))
	n := r.cfg.QPsPerPeer * r.planes
	for i := 0; i < n; i++ {
		q, err := r.newQP(src, dst, i, transport.FlowOwner(int(fi)), fi)
		if err != nil {
			return err
		}
		f.qps = append(f.qps, q.qp)
	}
	r.flows = append(r.flows, f)
	r.running++
	r.s.At(start, r.kStart, fi, 0)
	return nil
}

// onStart posts traffic flow obj's stripes on its QPs.
func (r *Endpoint) onStart(now sim.Time, obj int32, _ uint64) {
	f := r.flows[obj]
	parts, err := roce.Stripe(f.bytes, len(f.qps), int64(r.cfg.PayloadBytes))
	if err != nil {
		r.s.Stop(err)
		return
	}
	for i, b := range parts {
		if b == 0 {
			continue
		}
		q := r.qps[f.qps[i]]
		if _, err := q.snd.Post(now, b); err != nil {
			r.s.Stop(err)
			return
		}
		q.posts++
		q.posted += b
		f.parts++
		q.snd.Pump(now)
		r.flushSender(now, q)
	}
}

// Send carries one collective message (collective.Transport) on the QPs of the (src, dst)
// pair and the message's collective (NCCL connects each communicator apart; Hooks.Group):
// QPsPerPeer per plane, opened on first use, used round robin message by message (a message
// is not striped: NCCL posts each chunk on one QP of the channel). Hooks.Delivered hears of
// it when the receiver has placed every byte. A zero-byte message is sent as one byte.
// Errors: hosts out of range or equal, no path, or the chosen QP already gave up.
func (r *Endpoint) Send(now sim.Time, msg collective.Message) error {
	hosts := r.net.NumHosts()
	if msg.Src < 0 || msg.Src >= hosts || msg.Dst < 0 || msg.Dst >= hosts || msg.Src == msg.Dst {
		return fmt.Errorf("roce: message from host %d to host %d: want two distinct hosts of %d", msg.Src, msg.Dst, hosts)
	}
	key := [3]int32{int32(msg.Src), int32(msg.Dst), 0}
	if r.hooks.Group != nil {
		key[2] = int32(r.hooks.Group(msg.Instance))
	}
	list, ok := r.pairs[key]
	if !ok {
		for i := 0; i < r.cfg.QPsPerPeer*r.planes; i++ {
			q, err := r.newQP(msg.Src, msg.Dst, i, transport.CollectiveOwner(int(key[2])), -1)
			if err != nil {
				return err
			}
			list = append(list, q.qp)
		}
		r.pairs[key] = list
	}
	k := r.nextQP[key]
	r.nextQP[key] = (k + 1) % len(list)
	q := r.qps[list[k]]
	if err := q.snd.Err(); err != nil {
		return err
	}
	r.running++
	if len(q.backlog) > 0 || q.posts-q.acked >= MsgWindow {
		q.backlog = append(q.backlog, msg)
		return nil
	}
	return r.post(now, q, msg)
}

// post posts one collective message on q and sends what the sender can.
func (r *Endpoint) post(now sim.Time, q *qp, msg collective.Message) error {
	if _, err := q.snd.Post(now, max(msg.Bytes, 1)); err != nil {
		return err
	}
	q.posts++
	q.posted += max(msg.Bytes, 1)
	q.tokens = append(q.tokens, msg.Token)
	q.snd.Pump(now)
	r.flushSender(now, q)
	return nil
}

// onHoleTimer fires QP obj's responder hold timer (out-of-order placement).
func (r *Endpoint) onHoleTimer(now sim.Time, obj int32, _ uint64) {
	q := r.qps[obj]
	q.holeAt = sim.MaxTime
	q.rcv.OnHoleTimer(now)
	r.flushReceiver(now, q)
	r.armHole(q) // the NIC's fan-in grew since it was armed: the hold runs on
}

// armHole sets QP q's hold timer to its receiver's HoleDeadline when out-of-order placement
// is on and the deadline moved.
func (r *Endpoint) armHole(q *qp) {
	if r.kHole == 0 {
		return
	}
	d := q.rcv.HoleDeadline()
	if !q.holeOn {
		if d == sim.MaxTime {
			return
		}
		q.hole, q.holeOn, q.holeAt = r.s.NewTimer(r.kHole, q.qp), true, sim.MaxTime
	}
	if d == q.holeAt {
		return
	}
	q.holeAt = d
	if d == sim.MaxTime {
		r.s.StopTimer(q.hole)
		return
	}
	r.s.Reset(q.hole, d)
}

// onTimer fires QP obj's sender timer.
func (r *Endpoint) onTimer(now sim.Time, obj int32, _ uint64) {
	q := r.qps[obj]
	q.snd.OnTimer(now)
	r.flushSender(now, q)
}

// onNICReady serves the port's waiting QPs in FIFO order: each is pumped; one that the port
// still cannot take goes back to the end and stops the round.
func (r *Endpoint) onNICReady(now sim.Time, host int32, plane int) {
	w := &r.wait[host][plane]
	for w.Head < len(w.Q) {
		q := r.qps[w.Q[w.Head]]
		w.Head++
		q.waiting = false
		q.snd.Pump(now)
		r.flushSender(now, q)
		if q.snd.Gated() {
			break
		}
	}
	w.Reset()
}

// flushSender sends the sender's outbox, records completions and errors, queues a gated QP on
// its port and re-arms the timer.
func (r *Endpoint) flushSender(now sim.Time, q *qp) {
	if r.quiet {
		q.snd.ClearOut()
		q.snd.ClearCompletions()
		return
	}
	if n := q.snd.Stats.RetxPackets; n > q.lastRetx {
		q.lastRetx = n
		r.log.Retx(now)
	}
	for i := range q.snd.Out() {
		r.send(now, q, &q.snd.Out()[i], q.src, q.dst)
	}
	q.snd.ClearOut()
	if q.snd.Gated() && !q.waiting {
		q.waiting = true
		r.wait[q.src][q.plane].Push(q.qp)
	}
	for _, c := range q.snd.Completions() {
		q.done = c.Done
		q.acked++
		r.complete(now, q, c)
	}
	q.snd.ClearCompletions()
	if err := q.snd.Err(); err != nil {
		r.errs = append(r.errs, err)
		r.log.QPError(now)
		r.s.StopTimer(q.timer)
		if r.hooks.Halt != nil && r.allLeftErrored() {
			r.hooks.Halt(now) // nothing left can finish: stop rather than idle to run.duration
		}
		return
	}
	if d := q.snd.Deadline(); d != sim.MaxTime {
		r.s.Reset(q.timer, max(d, now))
	} else {
		r.s.StopTimer(q.timer)
	}
	if len(q.backlog) > 0 && q.posts-q.acked < MsgWindow {
		msg := q.backlog[0]
		q.backlog = q.backlog[1:]
		if err := r.post(now, q, msg); err != nil {
			r.s.Stop(err)
		}
	}
}

// complete accounts one acknowledged transfer of q.
func (r *Endpoint) complete(now sim.Time, q *qp, c roce.Completion) {
	if q.flow >= 0 {
		f := r.flows[q.flow]
		if f.partsDone++; f.partsDone < f.parts {
			return
		}
		f.done = c.Done
		if r.activeAt == 0 && len(r.flows) > 1 {
			r.snapshotActive(c.Done)
		}
		r.recordFCT(c.Done - f.start)
		if r.hooks.FlowSent != nil {
			r.hooks.FlowSent(now, int(q.flow)) // may add flows, before running counts this one
		}
	} else {
		r.recordFCT(c.Done - c.Posted)
	}
	r.running--
	if r.running == 0 && r.hooks.OnDone != nil {
		r.hooks.OnDone(now)
	} else if r.running > 0 && len(r.errs) > 0 && r.hooks.Halt != nil && r.allLeftErrored() {
		r.hooks.Halt(now) // the last transfer that could finish did: the rest are on errored QPs
	}
}

// recordFCT adds one FCT to the histogram (ns) and the exact maximum.
func (r *Endpoint) recordFCT(d sim.Time) {
	ns := int64(d / sim.Nanosecond)
	_ = r.fct.RecordValue(ns)
	r.fctMax = max(r.fctMax, ns)
}

// snapshotActive records, at the first flow completion, each started flow's placed payload
// over its time active as a fraction of the NIC line rate (all planes).
func (r *Endpoint) snapshotActive(now sim.Time) {
	r.activeAt = now
	line := float64(r.portRate) * float64(r.planes)
	for _, f := range r.flows {
		if f.start >= now {
			continue
		}
		var placed int64
		for _, qi := range f.qps {
			placed += r.qps[qi].rcv.Stats.PlacedBytes
		}
		f.activeOfLine = float64(placed) * 8 / (now - f.start).Seconds() / line
		r.activeTput = append(r.activeTput, f.activeOfLine)
	}
}

// flushReceiver sends the receiver's answers and hands placed collective messages on.
func (r *Endpoint) flushReceiver(now sim.Time, q *qp) {
	if r.quiet {
		q.rcv.ClearOut()
		q.rcv.ClearCompletions()
		return
	}
	for i := range q.rcv.Out() {
		r.send(now, q, &q.rcv.Out()[i], q.dst, q.src)
	}
	q.rcv.ClearOut()
	for range q.rcv.Completions() {
		if q.flow >= 0 {
			f := r.flows[q.flow]
			f.placed++
			if f.placed == f.parts && r.hooks.FlowPlaced != nil {
				r.hooks.FlowPlaced(now, int(q.flow)) // may add flows
			}
		}
		if q.tokHead < len(q.tokens) {
			tok := q.tokens[q.tokHead]
			q.tokHead++
			if r.hooks.Delivered != nil {
				r.hooks.Delivered(now, tok)
			}
		}
	}
	q.rcv.ClearCompletions()
}

// DataClass is the queue class of data packets unless SetDataClass says otherwise: 1 (ACKs,
// NAKs and CNPs travel in class 0).
const DataClass = 1

// SetDataClass sets the queue class (under InfiniBand credits, the VL) of the data packets
// of the QPs opened from now on (AddFlow, and the QPs Send opens): InfiniBand's SL-to-VL
// mapping (ibnic). Default DataClass; a class at or above a port's classes is queued in its
// last one (fabric). ACKs, NAKs and CNPs stay in class 0.
func (r *Endpoint) SetDataClass(c uint8) { r.class = c }

// send encodes h as a fabric packet from host to peer on the QP's plane. No source route:
// switches hash the 5-tuple (the QP's UDP source port, port 4791). Data is ECN-capable in the
// QP's class (DataClass unless SetDataClass changed it); ACKs, NAKs and CNPs travel in class 0. Word layout: roce.Words in Op, Seq and Ack; the QP
// in Flow.
func (r *Endpoint) send(now sim.Time, q *qp, h *roce.Header, host, peer int32) {
	p := r.net.NewPacket()
	p.Proto = r.proto
	p.Flow = q.qp
	p.Src, p.Dst = host, peer
	p.SrcPort, p.DstPort = q.srcPort, roce.UDPPort
	w := h.Pack()
	p.Op, p.Seq, p.Ack = w.Op, w.Seq, w.Ack
	p.Size = h.Wire
	if h.Kind == roce.Data {
		p.Class = q.class
		p.Flags = fabric.ECT
	}
	if err := r.net.Send(now, host, int(q.plane), p); err != nil {
		r.s.Stop(err)
	}
}

// onPacket decodes a RoCE packet at its destination and hands it to the engine.
func (r *Endpoint) onPacket(now sim.Time, p *fabric.Packet) {
	if p.Flow < 0 || int(p.Flow) >= len(r.qps) {
		return
	}
	q := r.qps[p.Flow]
	h, err := roce.Unpack(uint32(p.Flow), roce.Words{Op: p.Op, Seq: p.Seq, Ack: p.Ack})
	if err != nil {
		r.s.Stop(err)
		return
	}
	switch h.Kind {
	case roce.Data:
		q.rcv.OnData(now, &h, p.Flags&fabric.CE != 0)
		r.flushReceiver(now, q)
		r.armHole(q)
	case roce.Ack:
		q.snd.OnAck(now, &h)
		r.flushSender(now, q)
	case roce.Nak:
		q.snd.OnNak(now, &h)
		r.flushSender(now, q)
	case roce.CNP:
		q.snd.OnCNP(now, &h)
		r.flushSender(now, q)
	}
}

// allLeftErrored reports whether every traffic flow not yet acknowledged has a stripe on a QP
// that gave up (so it can never finish); false while a flow has not started.
func (r *Endpoint) allLeftErrored() bool {
	for _, f := range r.flows {
		if f.parts > 0 && f.partsDone == f.parts {
			continue // done
		}
		doomed := false
		for _, qi := range f.qps {
			if q := r.qps[qi]; q.acked < q.posts && q.snd.Err() != nil {
				doomed = true
				break
			}
		}
		if !doomed {
			return false
		}
	}
	return true
}

// Outstanding returns the transfers (traffic flows or collective messages) not yet
// acknowledged and the QP errors so far.
func (r *Endpoint) Outstanding() (running, errs int) { return r.running, len(r.errs) }

// Errs returns the QP errors so far, in the order they happened.
func (r *Endpoint) Errs() []error { return r.errs }

// Quiesce stops every engine (timers off, outboxes and completions discarded from now on) so
// the fabric can drain.
func (r *Endpoint) Quiesce() {
	r.quiet = true
	for _, q := range r.qps {
		r.s.StopTimer(q.timer)
	}
}

// Stuck describes at most max QPs with transfers outstanding (sorted, "and N more" after), for
// a run that stopped making progress.
func (r *Endpoint) Stuck(max int) string {
	var out []string
	for _, q := range r.qps {
		if q.acked < q.posts {
			out = append(out, fmt.Sprintf("qp %d (h%d->h%d plane %d): %s", q.qp, q.src, q.dst, q.plane, q.snd.Outstanding()))
		}
	}
	return nic.StuckList(out, max)
}

// Sample does nothing: RoCE keeps no per-sample series of its own.
func (r *Endpoint) Sample(now sim.Time) {}

// Bytes returns the data wire bytes sent (retransmissions included), the payload placed at
// the receivers and the payload posted, over all QPs so far.
func (r *Endpoint) Bytes() (sent, placed, posted int64) {
	for _, q := range r.qps {
		sent += q.snd.Stats.DataBytes
		placed += q.rcv.Stats.PlacedBytes
		posted += q.posted
	}
	return sent, placed, posted
}

// Log returns the go-back-N resend times (ascending, one per instant) and the QP error times.
func (r *Endpoint) Log() (lossAt, errAt []sim.Time) { return r.log.LossAt, r.log.ErrAt }

// Link returns half the base RTT (a full data packet out, its ACK back over the longest
// minimal path) and the payload share of a full data packet's wire bytes,
// PayloadBytes / (HeaderBytes + PayloadBytes).
func (r *Endpoint) Link() (latency sim.Time, payloadShare float64) {
	return r.baseRTT / 2, float64(r.cfg.PayloadBytes) / float64(r.cfg.HeaderBytes+r.cfg.PayloadBytes)
}

// Files returns nil: RoCE writes no output file of its own.
func (r *Endpoint) Files() []transport.File { return nil }

// Run returns the endpoint's typed run (*Run).
func (r *Endpoint) Run() any { return &Run{r: r} }
