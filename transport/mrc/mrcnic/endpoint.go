package mrcnic

import (
	"fmt"
	"math"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/mrc"
	"github.com/lockstepsim/lockstep/transport/nic"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// flow is one MRC connection (QP) carrying one transfer (traffic) or a pair's collective
// messages from src to dst.
type flow struct {
	src, dst  int32
	bytes     int64
	start     sim.Time
	snd       *mrc.Sender
	rcv       *mrc.Receiver
	routes    []fabric.Route // by EV: the forward source route
	ackRoutes []fabric.Route // by EV: the reverse route its answers take
	planes    []uint8        // by EV: plane
	timer     sim.TimerID    // the sender's deadline
	rtimer    sim.TimerID    // the receiver's delayed SACK
	done      sim.Time       // latest sender completion (last byte acknowledged), 0 before the first
	placed    sim.Time       // latest receiver completion (last byte placed)
	hops      int            // the pair's switch hops (its paths' length), for the ideal FCT
	lossRetx  int64          // SACK-gap + timeout retransmissions seen so far
	waiting   bool           // queued in its NIC's wait list (gated by a full NIC)
	qp        int32          // index in Endpoint.flows
	posts     int            // transfers posted on the QP
	tokens    []uint64       // collective messages (Send): tokens in posting order; tokens[tokHead:] not yet placed
	tokHead   int
	acked     int   // transfers acknowledged
	transfer  int32 // the traffic transfer's number (AddFlow order), -1 for a collective QP
	// activeOfLine is the payload placed from the flow's start to the first traffic flow's
	// completion over that time, as a fraction of the NIC line rate (all planes); -1 when not
	// measured (one flow, collective messages, or it started after the first completion).
	activeOfLine float64
}

// Endpoint is MRC's NIC adapter over the packet fabric (transport.Endpoint): it drives one
// MRC engine pair (mrc.Sender, mrc.Receiver) per QP, turns their Headers into fabric packets
// and back (mrc.Header.Pack, mrc.Unpack), keeps one timer per sender at its deadline and one
// per receiver for its delayed SACK, gates sends on the NIC's ports (nic.Wait) and records
// completions. docs/protocols.md describes the protocol, docs/architecture.md the adapter's
// place in a run.
type Endpoint struct {
	s        *sim.Sim
	net      *fabric.Network
	cfg      mrc.Config
	flows    []*flow
	kStart   sim.Kind
	kTimer   sim.Kind
	kRTimer  sim.Kind
	baseRTT  sim.Time
	maxQueue sim.Time // most queueing one switch hop can add (trim threshold or limit / rate)
	nicRate  sim.Rate
	fct      *hdrhistogram.Histogram // sender FCT, ns
	fctMax   int64                   // the largest FCT recorded, ns, exact
	activeAt sim.Time                // the first traffic flow's completion, 0 before it
	running  int
	errs     []error
	onDone   func(now sim.Time) // called when every transfer posted so far has completed
	// halt, when set (traffic runs), stops the run: every transfer left is on a QP that gave up.
	halt func(now sim.Time)
	// flowSent and flowPlaced hear of each traffic transfer's completion at the sender and
	// the receiver (Hooks.FlowSent, FlowPlaced); transfers counts the AddFlow calls.
	flowSent, flowPlaced func(now sim.Time, flow int)
	transfers            int32
	quiet                bool // engines stopped: outboxes are discarded, timers stay off
	// Collective messages (Send): QPs by (src, dst, group), and who hears of placements.
	layout    topo.Topology
	seed      uint64
	pairs     map[[3]int32]int32     // (src, dst, group) -> QP
	group     func(instance int) int // a message's connection group (collective); nil: one group
	delivered func(now sim.Time, token uint64)
	wait      []nic.Wait    // by host
	rx        []*mrc.HostRx // by host: the receive side's share (hostRx), nil until used
	boards    []*hostBoard  // by host: the CE marks of its NIC's routes (mrc.MarkBoard), nil until used
	run       *Run

	// Loss-driven retransmissions (SACK gap, timeout) and QP errors, for what a failure cost.
	log transport.LossLog
}

var _ transport.Endpoint = (*Endpoint)(nil)

// config returns the resolved block cfg (a *mrc.Config, as NewConfig makes; nil means the
// defaults) with its defaults filled. Errors: cfg of another type.
func config(cfg any) (mrc.Config, error) {
	switch c := cfg.(type) {
	case *mrc.Config:
		if c == nil {
			return mrc.Config{}.WithDefaults(), nil
		}
		return c.WithDefaults(), nil
	case mrc.Config:
		return c.WithDefaults(), nil
	case nil:
		return mrc.Config{}.WithDefaults(), nil
	}
	return mrc.Config{}, fmt.Errorf("transport.mrc: the block is a %T, want *mrc.Config", cfg)
}

// baseRTT is the round trip of a full data packet and its SACK over the topology's longest
// minimal path: what the engines and the timer checks take as the fabric's base RTT.
func baseRTT(l topo.Topology, cfg *mrc.Config) sim.Time {
	return l.Params().RoundTrip(l.Sizing().MaxSwitchHops, cfg.WireBytes(cfg.PayloadBytes), cfg.AckBytes)
}

// newEndpoint is Plugin.NewEndpoint: MRC's adapter (*Endpoint) over env.Net, whose hosts
// and ports env.Topology built (topo.BuildTopology), for the resolved block cfg (*mrc.Config;
// its defaults are filled here). env.Queues give the switch and last-hop queues whose trim
// thresholds (or limits) bound one hop's queueing (the engines' MaxQueueDelay); env.Seed
// seeds each QP's stream ("mrc.qp<n>"). It registers the kernel kinds "mrc.start",
// "mrc.timer" and "mrc.ack_delay", the fabric receiver of fabric.ProtoMRC and the NIC-ready
// callback. Errors: cfg is not an MRC block, or env has no kernel, fabric or topology.
func newEndpoint(cfg any, env transport.EndpointEnv) (transport.Endpoint, error) {
	mc, err := config(cfg)
	if err != nil {
		return nil, err
	}
	s, net, l := env.Sim, env.Net, env.Topology
	if s == nil || net == nil || l == nil {
		return nil, fmt.Errorf("transport.mrc: the endpoint needs a kernel, a packet fabric and its topology")
	}
	c := l.Params()
	m := &Endpoint{
		s: s, net: net, cfg: mc,
		baseRTT: baseRTT(l, &mc),
		nicRate: c.HostLink * sim.Rate(c.Planes),
		fct:     transport.NewFCTHistogram(),
		layout:  l,
		seed:    env.Seed,
		pairs:   map[[3]int32]int32{},
	}
	m.run = &Run{m: m}
	// Queueing bound of the worst single hop: the switch queue's trim threshold (or limit) at
	// the fabric rate, or the last-hop queue's at the host rate.
	hold := func(q fabric.QueueConfig, r sim.Rate) sim.Time {
		b := q.Limit
		if q.Trim.Enabled && q.Trim.Threshold > 0 && q.Trim.Threshold < b {
			b = q.Trim.Threshold
		}
		return r.TxTime(int64(b))
	}
	m.maxQueue = max(hold(env.Queues.Switch, c.FabricLink), hold(env.Queues.LastHop, c.HostLink))
	m.kStart = s.Register("mrc.start", m.onStart)
	m.kTimer = s.Register("mrc.timer", m.onTimer)
	m.kRTimer = s.Register("mrc.ack_delay", m.onRTimer)
	net.SetReceiver(fabric.ProtoMRC, m.onPacket)
	m.wait = make([]nic.Wait, net.NumHosts())
	net.SetNICReady(m.onNICReady)
	return m, nil
}

// SetHooks installs the runner's callbacks (transport.Hooks): OnDone when every transfer
// posted so far is acknowledged, Halt when all that is left is on QPs that gave up,
// Delivered when a collective message is placed (its presence makes this a workload run:
// QPs carry many messages), Group for a message's connection group.
func (m *Endpoint) SetHooks(h transport.Hooks) {
	m.onDone, m.halt, m.delivered, m.group = h.OnDone, h.Halt, h.Delivered, h.Group
	m.flowSent, m.flowPlaced = h.FlowSent, h.FlowPlaced
}

// hostRx returns host's shared receive state (mrc.HostRx), made on first use; nil when the
// receiver's share is off (transport.mrc.rcv_window_bdp negative).
func (m *Endpoint) hostRx(host int) *mrc.HostRx {
	if m.cfg.RcvWindowBDP <= 0 {
		return nil
	}
	if m.rx == nil {
		m.rx = make([]*mrc.HostRx, m.net.NumHosts())
	}
	if m.rx[host] == nil {
		m.rx[host] = mrc.NewHostRx(m.nicRate.BytesIn(m.baseRTT), m.cfg.RcvWindowBDP, m.baseRTT)
		m.rx[host].SetMaxMin(m.cfg.RcvShare == mrc.RcvShareMaxMin)
	}
	return m.rx[host]
}

// nicGateBytes is the adapter's NIC pull threshold (mrc.Sender.SetNICGate): a QP hands the NIC
// a packet only while some plane's port has nothing waiting behind the packet on the wire.
const nicGateBytes = 1

// onNICReady serves the host's waiting QPs in FIFO order when one of its NIC ports has room:
// each is pumped until the NIC is full again (it goes back to the end of the list) or it has
// nothing more the window allows (it leaves the list).
//
// The QP served first is the one furthest behind on the freed port's plane relative to its own
// other planes (EVSet.Lag): a QP cannot tell a port busy with another QP's packet from a slow
// port, so without it QPs sharing a NIC drift apart in their plane shares (coll-mrc: ring
// all-reduce 136-138 us instead of 128 us, seeds 1-4). The lag is relative to the QP's own
// mean, not its laps since it opened (EVSet.Progress): comparing laps gave a QP opened later
// strict priority over older ones until it had sent as many packets, so a collective's new
// message starved the older ones on the same NIC (pairwise all-to-all on 16 hosts, one plane,
// 32 MiB: 3,309 us, 304 trims, against 2,828 us, 9 trims, with the lag; the schedule on an
// ideal network takes 2,522 us).
func (m *Endpoint) onNICReady(now sim.Time, host int32, plane int) {
	w := &m.wait[host]
	if w.Len() > 1 {
		best, bl := w.Head, math.Inf(-1)
		for i := w.Head; i < len(w.Q); i++ {
			if l := m.flows[w.Q[i]].snd.EVs().Lag(plane); l > bl {
				best, bl = i, l
			}
		}
		w.Q[w.Head], w.Q[best] = w.Q[best], w.Q[w.Head]
	}
	for w.Head < len(w.Q) {
		f := m.flows[w.Q[w.Head]]
		w.Head++
		f.waiting = false
		f.snd.Pump(now)
		m.flushSender(now, f) // re-queues f if it is gated again
		if f.snd.Gated() {
			break
		}
	}
	w.Reset()
}

// AddFlow opens the QP from src to dst for one traffic transfer of bytes posted at start
// (its random stream is "mrc.qp<n>" of the endpoint's seed). Errors: a host out of range, or a
// pair with no source route (nic.PairRouteError).
func (m *Endpoint) AddFlow(src, dst int, bytes int64, start sim.Time) error {
	if hosts := m.net.NumHosts(); src < 0 || src >= hosts || dst < 0 || dst >= hosts {
		return fmt.Errorf("mrc: flow from host %d to host %d: want hosts of 0..%d", src, dst, hosts-1)
	}
	f, err := m.newQP(src, dst)
	if err != nil {
		return err
	}
	f.bytes, f.start, f.posts = bytes, start, 1
	f.transfer = m.transfers
	m.transfers++
	f.hops = nic.PairHops(m.layout, src, dst)
	m.running++
	m.s.At(start, m.kStart, f.qp, 0)
	return nil
}

// newQP opens the QP from src to dst: sender, receiver, EV routes and timers; nothing posted.
func (m *Endpoint) newQP(src, dst int) (*flow, error) {
	l := m.layout
	if err := nic.PairRouteError(l, src, dst, true); err != nil {
		return nil, err
	}
	c := l.Params()
	qp := uint32(len(m.flows))
	per := l.NumPaths(src, dst) / c.Planes
	pp := make([]int, c.Planes)
	for i := range pp {
		pp[i] = per
	}
	rng := sim.Stream(m.seed, fmt.Sprintf("mrc.qp%d", qp))
	snd, err := mrc.NewSender(m.cfg, qp, mrc.Path{Planes: c.Planes, PathsPerPlane: pp, BaseRTT: m.baseRTT, NICRate: m.nicRate, MaxQueueDelay: m.maxQueue}, rng)
	if err != nil {
		return nil, err
	}
	f := &flow{qp: int32(qp), src: int32(src), dst: int32(dst), snd: snd, rcv: mrc.NewReceiver(m.cfg, qp), activeOfLine: -1, transfer: -1}
	if h := m.hostRx(dst); h != nil {
		f.rcv.SetHost(h)
	}
	ports := m.net.Nodes[src].Ports
	snd.SetPlaneBacklog(c.Planes, func(plane int) int64 {
		pt := &m.net.Ports[ports[plane]]
		if pt.Down {
			return math.MaxInt64 // the NIC knows its own port is down: never the quietest
		}
		return pt.QueueBytes()
	})
	snd.SetNICGate(nicGateBytes)
	evs := snd.EVs()
	n := evs.Len()
	f.routes = make([]fabric.Route, n)
	f.ackRoutes = make([]fabric.Route, n)
	f.planes = make([]uint8, n)
	for ev := 0; ev < n; ev++ {
		plane, path, _ := evs.Route(ev)
		r, err := l.Path(src, dst, path*c.Planes+plane)
		if err != nil {
			return nil, err
		}
		back, err := l.Path(dst, src, path*c.Planes+plane)
		if err != nil {
			return nil, err
		}
		f.routes[ev], f.ackRoutes[ev], f.planes[ev] = topo.FabricRoute(r), topo.FabricRoute(back), uint8(plane)
	}
	if err := snd.SetMarkBoard(m.boardOf(src, f.routes, f.planes)); err != nil {
		return nil, err
	}
	f.timer = m.s.NewTimer(m.kTimer, int32(qp))
	f.rtimer = m.s.NewTimer(m.kRTimer, int32(qp))
	m.flows = append(m.flows, f)
	return f, nil
}

// Send carries one collective message (collective.Transport): the QP of the pair (and of the
// message's collective, as NCCL connects each communicator apart: Hooks.Group) is opened on
// first use and keeps its EV set across messages; the message is posted on it as one RDMA
// Write (a zero-byte message as one byte, so it still costs a packet and an RTT), and the
// executor hears of it (Hooks.Delivered) when the receiver has placed every byte (placement
// completes in posting order per QP, which is how tokens are matched). msg.Channel is
// ignored: MRC sprays every message over all planes. Errors: hosts out of range or equal, no
// source route, or the pair's QP already gave up.
func (m *Endpoint) Send(now sim.Time, msg collective.Message) error {
	hosts := m.net.NumHosts()
	if msg.Src < 0 || msg.Src >= hosts || msg.Dst < 0 || msg.Dst >= hosts || msg.Src == msg.Dst {
		return fmt.Errorf("mrc: message from host %d to host %d: want two distinct hosts of %d", msg.Src, msg.Dst, hosts)
	}
	key := [3]int32{int32(msg.Src), int32(msg.Dst), 0}
	if m.group != nil {
		key[2] = int32(m.group(msg.Instance))
	}
	qi, ok := m.pairs[key]
	var f *flow
	if ok {
		f = m.flows[qi]
	} else {
		var err error
		if f, err = m.newQP(msg.Src, msg.Dst); err != nil {
			return err
		}
		m.pairs[key] = f.qp
		f.start = now
	}
	if err := f.snd.Err(); err != nil {
		return err
	}
	bytes := max(msg.Bytes, 1)
	f.snd.Post(now, bytes)
	f.bytes += bytes
	f.posts++
	f.tokens = append(f.tokens, msg.Token)
	m.running++
	f.snd.Pump(now)
	m.flushSender(now, f)
	return nil
}

func (m *Endpoint) onStart(now sim.Time, obj int32, _ uint64) {
	f := m.flows[obj]
	f.snd.Post(now, f.bytes)
	f.snd.Pump(now)
	m.flushSender(now, f)
}

func (m *Endpoint) onTimer(now sim.Time, obj int32, _ uint64) {
	f := m.flows[obj]
	f.snd.OnTimer(now)
	m.flushSender(now, f)
}

func (m *Endpoint) onRTimer(now sim.Time, obj int32, _ uint64) {
	f := m.flows[obj]
	f.rcv.OnTimer(now)
	m.flushReceiver(now, f)
}

// flushReceiver sends the receiver's answers, records its completions and re-arms its
// delayed-SACK timer.
func (m *Endpoint) flushReceiver(now sim.Time, f *flow) {
	if m.quiet {
		f.rcv.ClearOut()
		f.rcv.ClearCompletions()
		return
	}
	for i := range f.rcv.Out() {
		a := &f.rcv.Out()[i]
		m.send(now, f, a, f.dst, f.ackRoutes[a.EchoEV], int(f.planes[a.EchoEV]))
	}
	f.rcv.ClearOut()
	for _, c := range f.rcv.Completions() {
		f.placed = c.Done
		if f.transfer >= 0 && m.flowPlaced != nil {
			m.flowPlaced(now, int(f.transfer)) // may add flows
		}
		if f.tokHead < len(f.tokens) {
			tok := f.tokens[f.tokHead]
			f.tokHead++
			if m.delivered != nil {
				m.delivered(now, tok) // may post more on this or other QPs
			}
		}
	}
	f.rcv.ClearCompletions()
	if d := f.rcv.Deadline(); d != sim.MaxTime {
		m.s.Reset(f.rtimer, d)
	} else {
		m.s.StopTimer(f.rtimer)
	}
}

// flushSender sends the sender's outbox, records completions and errors, and re-arms its timer.
func (m *Endpoint) flushSender(now sim.Time, f *flow) {
	if m.quiet {
		f.snd.ClearOut()
		f.snd.ClearCompletions()
		return
	}
	if n := f.snd.Stats.Retx[mrc.RetxSackGap] + f.snd.Stats.Retx[mrc.RetxTimeout]; n > f.lossRetx {
		f.lossRetx = n
		m.log.Retx(now)
	}
	for i := range f.snd.Out() {
		h := &f.snd.Out()[i]
		m.send(now, f, h, f.src, f.routes[h.EV], int(f.planes[h.EV]))
	}
	f.snd.ClearOut()
	if f.snd.Gated() && !f.waiting {
		f.waiting = true
		m.wait[f.src].Push(f.qp)
	}
	for _, c := range f.snd.Completions() {
		f.done = c.Done
		f.acked++
		if m.activeAt == 0 && m.delivered == nil && f.posts == 1 && len(m.flows) > 1 {
			m.snapshotActive(c.Done)
		}
		ns := int64((c.Done - c.Posted) / sim.Nanosecond)
		_ = m.fct.RecordValue(ns)
		m.fctMax = max(m.fctMax, ns)
		if f.transfer >= 0 && m.flowSent != nil {
			m.flowSent(now, int(f.transfer)) // may add flows, before running counts this one
		}
		m.running--
		if m.running == 0 && m.onDone != nil {
			m.onDone(now)
		} else if len(m.errs) > 0 && m.halt != nil && m.allLeftErrored() {
			m.halt(now) // the last healthy transfer is done; the rest are on QPs that gave up
		}
	}
	f.snd.ClearCompletions()
	if err := f.snd.Err(); err != nil {
		m.errs = append(m.errs, err)
		m.log.QPError(now)
		m.s.StopTimer(f.timer)
		if m.halt != nil && m.allLeftErrored() {
			m.halt(now) // nothing left can finish: stop rather than idle to run.duration
		}
		return
	}
	if d := f.snd.Deadline(); d != sim.MaxTime {
		m.s.Reset(f.timer, d)
	} else {
		m.s.StopTimer(f.timer)
	}
}

// send encodes h into a fabric packet and injects it at host on plane with route r. Word
// layout: mrc.Words in Op, Entropy, Seq, Ack, Bitmap and Aux; the QP in Flow; TS is the
// packet's transmit timestamp (SentAt), which the fabric sets.
func (m *Endpoint) send(now sim.Time, f *flow, h *mrc.Header, host int32, r fabric.Route, plane int) {
	p := m.net.NewPacket()
	p.Proto = fabric.ProtoMRC
	p.Flow = int32(h.QP)
	p.Src, p.Dst = host, f.dst
	if host == f.dst {
		p.Dst = f.src
	}
	w := h.Pack()
	p.Op, p.Entropy = w.Op, w.Entropy
	p.Seq, p.Ack, p.Bitmap, p.Aux = w.Seq, w.Ack, w.Bitmap, w.Aux
	switch h.Kind {
	case mrc.Data:
		p.Size = int32(m.cfg.WireBytes(int(h.Len)))
		p.Class = 1
		p.Flags = fabric.ECT | fabric.Trimmable
	case mrc.Probe:
		p.Size = int32(m.cfg.AckBytes)
		p.Class = 1
		p.Flags = fabric.ECT
	default: // SACK, NACK
		p.Size = int32(m.cfg.AckBytes)
		p.Class = 0
	}
	p.UseRoute(&r)
	if err := m.net.Send(now, host, plane, p); err != nil {
		m.s.Stop(err)
	}
}

// onPacket decodes an MRC packet at its destination and hands it to the engine.
func (m *Endpoint) onPacket(now sim.Time, p *fabric.Packet) {
	if p.Flow < 0 || int(p.Flow) >= len(m.flows) {
		return
	}
	f := m.flows[p.Flow]
	h, err := mrc.Unpack(uint32(p.Flow), p.SentAt, mrc.Words{
		Op: p.Op, Entropy: p.Entropy, Seq: p.Seq, Ack: p.Ack, Bitmap: p.Bitmap, Aux: p.Aux,
	})
	if err != nil {
		m.s.Stop(err)
		return
	}
	ce := p.Flags&fabric.CE != 0
	switch h.Kind {
	case mrc.Data:
		f.rcv.OnData(now, &h, p.Flags&fabric.Trimmed != 0, p.Flags&fabric.TrimmedLastHop != 0, ce)
		m.flushReceiver(now, f)
	case mrc.Probe:
		f.rcv.OnProbe(now, &h, ce)
		m.flushReceiver(now, f)
	case mrc.SACK:
		f.snd.OnSACK(now, &h)
		m.flushSender(now, f)
	case mrc.NACK:
		f.snd.OnNACK(now, &h)
		m.flushSender(now, f)
	}
}

// Stuck names at most max QPs that have not completed (sorted, then "and N more"), each with
// what its sender still waits for, for a run that stopped making progress.
func (m *Endpoint) Stuck(max int) string {
	var out []string
	for i, f := range m.flows {
		if f.acked < f.posts {
			out = append(out, fmt.Sprintf("qp %d (h%d->h%d): %s", i, f.src, f.dst, f.snd.Outstanding()))
		}
	}
	return nic.StuckList(out, max)
}

// allLeftErrored reports whether every transfer not yet acknowledged is on a QP that gave up.
func (m *Endpoint) allLeftErrored() bool {
	for _, f := range m.flows {
		if f.acked < f.posts && f.snd.Err() == nil {
			return false
		}
	}
	return true
}

// Outstanding returns the transfers (traffic) or messages (Send) not yet acknowledged and the
// QP errors so far.
func (m *Endpoint) Outstanding() (running, errs int) { return m.running, len(m.errs) }

// Errs returns the QP errors so far (mrc.Sender.Err of each QP that gave up), in the order
// they happened.
func (m *Endpoint) Errs() []error { return m.errs }

// Quiesce stops every engine: timers off, outboxes discarded from now on, so the fabric can
// drain (probes would otherwise go on forever).
func (m *Endpoint) Quiesce() {
	m.quiet = true
	for _, f := range m.flows {
		m.s.StopTimer(f.timer)
		m.s.StopTimer(f.rtimer)
	}
}

// Bytes returns the data wire bytes the senders sent (retransmissions included), the payload
// placed at the receivers and the payload posted, over all QPs so far.
func (m *Endpoint) Bytes() (sent, placed, posted int64) {
	for _, f := range m.flows {
		sent += f.snd.Stats.DataBytes
		placed += f.rcv.Stats.PlacedBytes
		posted += f.bytes
	}
	return sent, placed, posted
}

// Log returns the loss-driven retransmission times (SACK gap or timeout; ascending, one per
// instant) and the QP error times.
func (m *Endpoint) Log() (lossAt, errAt []sim.Time) { return m.log.LossAt, m.log.ErrAt }

// Link returns a collective's closed-form parameters under MRC: the one-way latency, half the
// base RTT, and the payload share of a full data packet on the wire (PayloadBytes over
// WireBytes(PayloadBytes)).
func (m *Endpoint) Link() (latency sim.Time, payloadShare float64) {
	return m.baseRTT / 2, float64(m.cfg.PayloadBytes) / float64(m.cfg.WireBytes(m.cfg.PayloadBytes))
}

// snapshotActive records, at the first traffic flow's completion, each started flow's payload
// placed so far over its time active, as a fraction of the NIC line rate (all planes): the
// throughput while all flows are active.
func (m *Endpoint) snapshotActive(now sim.Time) {
	m.activeAt = now
	for _, f := range m.flows {
		if f.posts == 1 && f.start < now {
			f.activeOfLine = float64(f.rcv.Stats.PlacedBytes) * 8 / (now - f.start).Seconds() / float64(m.nicRate)
		}
	}
}

// hostBoard is one host's mrc.MarkBoard and its routes by key: the NIC port (plane) and the
// egress ports at every switch but the last. The last hop, into the receiver, is never marked
// [MRC §2.1], so QPs toward hosts of one T0 share the key of each uplink and T1 they take.
type hostBoard struct {
	b    *mrc.MarkBoard
	keys map[[fabric.MaxHops + 1]uint16]int32
}

// boardOf returns src's mark board and the board route of each EV (routes[ev] on plane
// planes[ev]), adding the routes the board does not have yet.
func (m *Endpoint) boardOf(src int, routes []fabric.Route, planes []uint8) (*mrc.MarkBoard, []int32) {
	if m.boards == nil {
		m.boards = make([]*hostBoard, m.net.NumHosts())
	}
	hb := m.boards[src]
	if hb == nil {
		hb = &hostBoard{b: mrc.NewMarkBoard(), keys: map[[fabric.MaxHops + 1]uint16]int32{}}
		m.boards[src] = hb
	}
	ids := make([]int32, len(routes))
	for ev, r := range routes {
		var k [fabric.MaxHops + 1]uint16
		k[0] = uint16(planes[ev])
		if r.Len > 0 {
			copy(k[1:], r.Hops[:r.Len-1])
		}
		id, ok := hb.keys[k]
		if !ok {
			id = hb.b.AddRoute()
			hb.keys[k] = id
		}
		ids[ev] = id
	}
	return hb.b, ids
}
