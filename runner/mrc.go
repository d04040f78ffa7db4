package runner

import (
	"fmt"
	"math"
	"sort"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport/mrc"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// mrcFlow is one MRC connection (QP) carrying one transfer from Src to Dst.
type mrcFlow struct {
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
	qp        int32          // index in mrcNet.flows
	posts     int            // transfers posted on the QP
	tokens    []uint64       // collective messages (Send): tokens in posting order; tokens[tokHead:] not yet placed
	tokHead   int
	acked     int // transfers acknowledged
	// activeOfLine is the payload placed from the flow's start to the first traffic flow's
	// completion over that time, as a fraction of the NIC line rate (all planes); -1 when not
	// measured (one flow, collective messages, or it started after the first completion).
	activeOfLine float64
}

// nicWait is one host NIC's FIFO of QPs that had data and window but no NIC room: the NIC's
// transmit scheduler serves them round robin as its ports drain.
type nicWait struct {
	q    []int32 // QP numbers; q[head:] are waiting
	head int
}

// mrcNet drives MRC engines over the fabric: it turns engine Headers into fabric packets and
// back, keeps one timer per sender at its deadline, and records completions.
type mrcNet struct {
	s        *sim.Sim
	net      *fabric.Network
	cfg      mrc.Config
	flows    []*mrcFlow
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
	onDone   func(now sim.Time) // called when every flow has completed
	// halt, when set (traffic runs), stops the run: every transfer left is on a QP that gave up.
	halt  func(now sim.Time)
	quiet bool // engines stopped: outboxes are discarded, timers stay off
	// Collective messages (Send): QPs by (src, dst), and who hears of placements.
	layout    topo.Topology
	seed      uint64
	pairs     map[[3]int32]int32     // (src, dst, group) -> QP
	group     func(instance int) int // a message's connection group (collective); nil: one group
	delivered func(now sim.Time, token uint64)
	wait      []nicWait     // by host
	rx        []*mrc.HostRx // by host: the receive side's share (hostRx), nil until used

	// Loss-driven retransmissions (SACK gap, timeout) and QP errors, for what a failure cost.
	lossLog
}

// pairHops is the number of switches on the minimal paths from src to dst (all have the same
// length), or the topology's diameter when it cannot say.
func pairHops(l topo.Topology, src, dst int) int {
	if r, err := l.Path(src, dst, 0); err == nil {
		return int(r.Len)
	}
	return l.Sizing().MaxSwitchHops
}

// idealTransfer is the FCT of a transfer alone on an idle fabric: its wire bytes at the NIC
// line rate nic (all planes), or one packet at one port's rate if that is longer, then the
// round trip of its last packet, less that packet's serialisation onto the first link, which
// the first term already counts. pkt is the transfer's largest packet on the wire (a full
// packet, or the whole transfer when it fits in one): a 1-byte transfer's round trip is that
// of a small packet, not of a full one. hops is the pair's switch hops. It is a lower bound:
// the last packet cannot leave the NIC before wire / nic, nor before one packet's
// serialisation on its port, and then crosses the rest of its path and the ACK comes back.
func idealTransfer(c topo.Params, nic sim.Rate, hops int, wire, pkt int64, ackWire int) sim.Time {
	first := c.HostLink.TxTime(pkt)
	return max(nic.TxTime(wire), first) + c.RoundTrip(hops, int(pkt), ackWire) - first
}

func newMRCNet(s *sim.Sim, net *fabric.Network, l topo.Topology, cfg mrc.Config, fq scenario.Fabric) *mrcNet {
	c := l.Params()
	cfg = cfg.WithDefaults()
	m := &mrcNet{
		s: s, net: net, cfg: cfg,
		baseRTT: c.RoundTrip(l.Sizing().MaxSwitchHops, cfg.WireBytes(cfg.PayloadBytes), cfg.AckBytes),
		nicRate: c.HostLink * sim.Rate(c.Planes),
		fct:     hdrhistogram.New(1, int64(sim.Hour/sim.Nanosecond), 3),
		layout:  l,
		pairs:   map[[3]int32]int32{},
	}
	// Queueing bound of the worst single hop: the switch queue's trim threshold (or limit) at
	// the fabric rate, or the last-hop queue's at the host rate.
	hold := func(q fabric.QueueConfig, r sim.Rate) sim.Time {
		b := q.Limit
		if q.Trim.Enabled && q.Trim.Threshold > 0 && q.Trim.Threshold < b {
			b = q.Trim.Threshold
		}
		return r.TxTime(int64(b))
	}
	lh := fq.SwitchQueue
	if fq.LastHopQueue != nil {
		lh = *fq.LastHopQueue
	}
	m.maxQueue = max(hold(fq.SwitchQueue, c.FabricLink), hold(lh, c.HostLink))
	m.kStart = s.Register("mrc.start", m.onStart)
	m.kTimer = s.Register("mrc.timer", m.onTimer)
	m.kRTimer = s.Register("mrc.ack_delay", m.onRTimer)
	net.SetReceiver(fabric.ProtoMRC, m.onPacket)
	m.wait = make([]nicWait, net.NumHosts())
	net.SetNICReady(m.onNICReady)
	return m
}

// hostRx returns host's shared receive state (mrc.HostRx), made on first use; nil when the
// receiver's share is off (transport.mrc.rcv_window_bdp negative).
func (m *mrcNet) hostRx(host int) *mrc.HostRx {
	if m.cfg.RcvWindowBDP <= 0 {
		return nil
	}
	if m.rx == nil {
		m.rx = make([]*mrc.HostRx, m.net.NumHosts())
	}
	if m.rx[host] == nil {
		m.rx[host] = mrc.NewHostRx(m.nicRate.BytesIn(m.baseRTT), m.cfg.RcvWindowBDP, m.baseRTT)
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
// The QP served first is the one least far through its rotation on the freed port's plane
// (EVSet.Progress): a QP cannot tell a port busy with another QP's packet from a slow port,
// so without it QPs sharing a NIC drift apart in their plane shares (coll-mrc: ring
// all-reduce 136-138 us instead of 128 us, seeds 1-4).
func (m *mrcNet) onNICReady(now sim.Time, host int32, plane int) {
	w := &m.wait[host]
	if n := len(w.q) - w.head; n > 1 {
		best, bp := w.head, math.Inf(1)
		for i := w.head; i < len(w.q); i++ {
			if p := m.flows[w.q[i]].snd.EVs().Progress(plane); p < bp {
				best, bp = i, p
			}
		}
		w.q[w.head], w.q[best] = w.q[best], w.q[w.head]
	}
	for w.head < len(w.q) {
		f := m.flows[w.q[w.head]]
		w.head++
		f.waiting = false
		f.snd.Pump(now)
		m.flushSender(now, f) // re-queues f if it is gated again
		if f.snd.Gated() {
			break
		}
	}
	if w.head == len(w.q) {
		w.q, w.head = w.q[:0], 0
	}
}

// addFlow creates the QP from src to dst for one transfer of bytes posted at start.
func (m *mrcNet) addFlow(l topo.Topology, src, dst int, bytes int64, start sim.Time, seed uint64) error {
	f, err := m.newQP(l, src, dst, seed)
	if err != nil {
		return err
	}
	f.bytes, f.start, f.posts = bytes, start, 1
	f.hops = pairHops(l, src, dst)
	m.running++
	m.s.At(start, m.kStart, f.qp, 0)
	return nil
}

// newQP opens the QP from src to dst: sender, receiver, EV routes and timers; nothing posted.
func (m *mrcNet) newQP(l topo.Topology, src, dst int, seed uint64) (*mrcFlow, error) {
	if err := pairRouteError(l, src, dst, true); err != nil {
		return nil, err
	}
	c := l.Params()
	qp := uint32(len(m.flows))
	per := l.NumPaths(src, dst) / c.Planes
	pp := make([]int, c.Planes)
	for i := range pp {
		pp[i] = per
	}
	rng := sim.Stream(seed, fmt.Sprintf("mrc.qp%d", qp))
	snd, err := mrc.NewSender(m.cfg, qp, mrc.Path{Planes: c.Planes, PathsPerPlane: pp, BaseRTT: m.baseRTT, NICRate: m.nicRate, MaxQueueDelay: m.maxQueue}, rng)
	if err != nil {
		return nil, err
	}
	f := &mrcFlow{qp: int32(qp), src: int32(src), dst: int32(dst), snd: snd, rcv: mrc.NewReceiver(m.cfg, qp), activeOfLine: -1}
	if h := m.hostRx(dst); h != nil {
		f.rcv.SetHost(h)
	}
	nic := m.net.Nodes[src].Ports
	snd.SetPlaneBacklog(c.Planes, func(plane int) int64 {
		pt := &m.net.Ports[nic[plane]]
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
	f.timer = m.s.NewTimer(m.kTimer, int32(qp))
	f.rtimer = m.s.NewTimer(m.kRTimer, int32(qp))
	m.flows = append(m.flows, f)
	return f, nil
}

// Send carries one collective message (collective.Transport): the QP of the pair (and of the
// message's collective, as NCCL connects each communicator apart) is opened on first use and
// keeps its EV set across messages; the message is posted on it as one RDMA
// Write (a zero-byte message as one byte, so it still costs a packet and an RTT), and the
// executor hears of it when the receiver has placed every byte (placement completes in
// posting order per QP, which is how tokens are matched). msg.Channel is ignored: MRC sprays
// every message over all planes.
func (m *mrcNet) Send(now sim.Time, msg collective.Message) error {
	hosts := m.net.NumHosts()
	if msg.Src < 0 || msg.Src >= hosts || msg.Dst < 0 || msg.Dst >= hosts || msg.Src == msg.Dst {
		return fmt.Errorf("mrc: message from host %d to host %d: want two distinct hosts of %d", msg.Src, msg.Dst, hosts)
	}
	key := [3]int32{int32(msg.Src), int32(msg.Dst), 0}
	if m.group != nil {
		key[2] = int32(m.group(msg.Instance))
	}
	qi, ok := m.pairs[key]
	var f *mrcFlow
	if ok {
		f = m.flows[qi]
	} else {
		var err error
		if f, err = m.newQP(m.layout, msg.Src, msg.Dst, m.seed); err != nil {
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

func (m *mrcNet) onStart(now sim.Time, obj int32, _ uint64) {
	f := m.flows[obj]
	f.snd.Post(now, f.bytes)
	f.snd.Pump(now)
	m.flushSender(now, f)
}

func (m *mrcNet) onTimer(now sim.Time, obj int32, _ uint64) {
	f := m.flows[obj]
	f.snd.OnTimer(now)
	m.flushSender(now, f)
}

func (m *mrcNet) onRTimer(now sim.Time, obj int32, _ uint64) {
	f := m.flows[obj]
	f.rcv.OnTimer(now)
	m.flushReceiver(now, f)
}

// flushReceiver sends the receiver's answers, records its completions and re-arms its
// delayed-SACK timer.
func (m *mrcNet) flushReceiver(now sim.Time, f *mrcFlow) {
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
func (m *mrcNet) flushSender(now sim.Time, f *mrcFlow) {
	if m.quiet {
		f.snd.ClearOut()
		f.snd.ClearCompletions()
		return
	}
	if n := f.snd.Stats.Retx[mrc.RetxSackGap] + f.snd.Stats.Retx[mrc.RetxTimeout]; n > f.lossRetx {
		f.lossRetx = n
		m.retx(now)
	}
	for i := range f.snd.Out() {
		h := &f.snd.Out()[i]
		m.send(now, f, h, f.src, f.routes[h.EV], int(f.planes[h.EV]))
	}
	f.snd.ClearOut()
	if f.snd.Gated() && !f.waiting {
		f.waiting = true
		w := &m.wait[f.src]
		if w.head > 0 && w.head == len(w.q) {
			w.q, w.head = w.q[:0], 0
		}
		w.q = append(w.q, f.qp)
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
		m.qpError(now)
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
func (m *mrcNet) send(now sim.Time, f *mrcFlow, h *mrc.Header, host int32, r fabric.Route, plane int) {
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
func (m *mrcNet) onPacket(now sim.Time, p *fabric.Packet) {
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

// stuck describes flows that have not completed, for a run that stopped making progress.
func (m *mrcNet) stuck(max int) string {
	var out []string
	for i, f := range m.flows {
		if f.acked < f.posts {
			out = append(out, fmt.Sprintf("qp %d (h%d->h%d): %s", i, f.src, f.dst, f.snd.Outstanding()))
		}
	}
	sort.Strings(out)
	if len(out) > max {
		out = append(out[:max], fmt.Sprintf("and %d more", len(out)-max))
	}
	return fmt.Sprint(out)
}

// MRCRun is what an MRC run leaves for tests and reports beyond the summary.
type MRCRun struct {
	m *mrcNet
	// DoneAt is when the last transfer was acknowledged (MaxTime if some never were).
	DoneAt sim.Time
	// EVSeries samples EV states summed over all QPs every run.sample_interval.
	EVSeries []EVSample
	// FlowPlaced samples each flow's placed payload bytes at EVSeries' times:
	// FlowPlaced[sample][flow]. Kept for runs of at most maxFlowSeries flows.
	FlowPlaced [][]int64
}

// maxFlowSeries bounds the flows whose per-flow progress is sampled.
const maxFlowSeries = 1024

// EVSample is the EV state counts over all QPs at one time.
type EVSample struct {
	At                             sim.Time
	Good, Skip, AssumedBad, Denied int
	// PlacedBytes is the payload placed at receivers so far, all flows: its slope is goodput.
	PlacedBytes int64
}

// Flow returns flow i's sender, receiver and completion times (zero while not complete).
func (r *MRCRun) Flow(i int) (snd *mrc.Sender, rcv *mrc.Receiver, src, dst int, done, placed sim.Time) {
	f := r.m.flows[i]
	return f.snd, f.rcv, int(f.src), int(f.dst), f.done, f.placed
}

// Flows returns the number of MRC flows.
func (r *MRCRun) Flows() int { return len(r.m.flows) }

// BaseRTT returns the base RTT the engines were configured with.
func (r *MRCRun) BaseRTT() sim.Time { return r.m.baseRTT }

// runMRC posts every flow's transfer, runs until all are acknowledged (or run.duration), then
// stops the engines and drains the fabric.
func runMRC(sc *scenario.Scenario, layout topo.Topology, res *Result) error {
	s, net := res.Sim, res.Net
	m := newMRCNet(s, net, layout, *sc.Transport.Block().(*mrc.Config), sc.Fabric)
	hosts := net.NumHosts()
	for gi := range sc.Traffic {
		g := &sc.Traffic[gi]
		rng := sim.Stream(sc.Run.Seed, fmt.Sprintf("traffic[%d]", gi))
		for _, p := range groupPairs(g, hosts, rng.Perm) {
			bytes := p.bytes
			if bytes == 0 {
				bytes = int64(g.Bytes)
			}
			if err := m.addFlow(layout, p.src, p.dst, bytes, g.Start, sc.Run.Seed); err != nil {
				return &InputError{Err: fmt.Errorf("traffic[%d]: %w", gi, err)}
			}
		}
	}
	run := &MRCRun{m: m, DoneAt: sim.MaxTime}
	res.MRC = run
	smp := newSampler(s, net, layout.Params().Planes, sc.Run.SampleInterval, sc.Run.Duration)
	res.Links = smp.links
	smp.extra = func(now sim.Time) {
		run.EVSeries = append(run.EVSeries, m.evSample(now))
		if len(m.flows) <= maxFlowSeries {
			row := make([]int64, len(m.flows))
			for i, f := range m.flows {
				row[i] = f.rcv.Stats.PlacedBytes
			}
			run.FlowPlaced = append(run.FlowPlaced, row)
		}
	}
	smp.placed = m.placedBytes
	m.halt = func(now sim.Time) {
		smp.until = now
		s.Pause()
	}
	end, snap, err := driveTransport(sc, res, smp, &m.onDone, &run.DoneAt, m)
	if err != nil {
		return err
	}
	res.Summary = summarise(sc, net, len(m.flows), smp, snap, end)
	res.Summary.MRC = m.summary(end, res.Faults)
	res.progress, res.trafficEnd, res.lossAt, res.errAt = smp.progress, end, m.lossAt, m.errAt
	mrcGoodput(&res.Summary, m, end)
	return nil
}

// allLeftErrored reports whether every transfer not yet acknowledged is on a QP that gave up.
func (m *mrcNet) allLeftErrored() bool {
	for _, f := range m.flows {
		if f.acked < f.posts && f.snd.Err() == nil {
			return false
		}
	}
	return true
}

// placedBytes is the payload placed at every receiver so far.
func (m *mrcNet) placedBytes() int64 {
	var n int64
	for _, f := range m.flows {
		n += f.rcv.Stats.PlacedBytes
	}
	return n
}

// outstanding returns the transfers not yet acknowledged and the QP errors so far.
func (m *mrcNet) outstanding() (running, errs int) { return m.running, len(m.errs) }

// quiesce stops every engine: timers off, outboxes discarded from now on, so the fabric can
// drain (probes would otherwise go on forever).
func (m *mrcNet) quiesce() {
	m.quiet = true
	for _, f := range m.flows {
		m.s.StopTimer(f.timer)
		m.s.StopTimer(f.rtimer)
	}
}

// startWorkloadSampler starts the queue sampler of a packet-level workload (collectives, a
// training step) carried by m (MRC) or rn (RoCE), whose run is already in res: links.csv,
// the goodput series and, under MRC, the EV state counts (ev_states.csv).
func startWorkloadSampler(sc *scenario.Scenario, res *Result, planes int, m *mrcNet, rn *roceNet) *sampler {
	smp := newSampler(res.Sim, res.Net, planes, sc.Run.SampleInterval, sc.Run.Duration)
	res.Links = smp.links
	if m != nil {
		smp.placed = m.placedBytes
		run := res.MRC
		smp.extra = func(now sim.Time) { run.EVSeries = append(run.EVSeries, m.evSample(now)) }
	} else {
		smp.placed = rn.placedBytes
	}
	smp.start()
	return smp
}

// evSample sums EV state counts over all QPs.
func (m *mrcNet) evSample(now sim.Time) EVSample {
	e := EVSample{At: now}
	for _, f := range m.flows {
		good, skip, bad, denied, _ := f.snd.EVs().Counts()
		e.Good += good
		e.Skip += skip
		e.AssumedBad += bad
		e.Denied += denied
		e.PlacedBytes += f.rcv.Stats.PlacedBytes
	}
	return e
}

// checkMRCTiming rejects MRC timers the fabric makes meaningless: an ACK timeout below the base
// RTT of the longest path, which would time out every packet before its SACK could return,
// and a probe interval below it, which would count every probe lost before its answer could
// return (so a retired EV never comes back).
func checkMRCTiming(sc *scenario.Scenario, l topo.Topology) error {
	if sc.Transport.Kind != scenario.TransportMRC || sc.Fluid() {
		return nil
	}
	cfg := mrc.Config{}
	if c, ok := sc.Transport.Block().(*mrc.Config); ok {
		cfg = *c
	}
	cfg = cfg.WithDefaults()
	rtt := l.Params().RoundTrip(l.Sizing().MaxSwitchHops, cfg.WireBytes(cfg.PayloadBytes), cfg.AckBytes)
	if t := cfg.AckTimeoutExp; t > 0 && mrc.AckTimeoutUnit<<uint(t) < rtt {
		return fmt.Errorf("transport.mrc.ack_timeout_exp: %d gives an ACK timeout of %v, shorter than the fabric's base RTT %v: every packet would time out before its SACK could return; want at least %d, or 0 (automatic: the smallest covering 4 base RTTs)",
			t, mrc.AckTimeoutUnit<<uint(t), rtt, minExp(rtt))
	}
	if pi := cfg.EV.ProbeInterval; pi < rtt {
		return fmt.Errorf("transport.mrc.ev.probe_interval: %v is shorter than the fabric's base RTT %v: an unanswered probe counts as lost when the next is due, so every probe would be lost; use at least %v (default %v)",
			pi, rtt, rtt, mrc.DefaultEVProbeInterval)
	}
	return nil
}

// minExp is the smallest ACK timeout exponent whose timeout (1.024 us x 2^t) covers rtt.
func minExp(rtt sim.Time) int {
	t := 1
	for t < 24 && mrc.AckTimeoutUnit<<uint(t) < rtt {
		t++
	}
	return t
}

// snapshotActive records, at the first traffic flow's completion, each started flow's payload
// placed so far over its time active, as a fraction of the NIC line rate (all planes): the
// throughput while all flows are active.
func (m *mrcNet) snapshotActive(now sim.Time) {
	m.activeAt = now
	for _, f := range m.flows {
		if f.posts == 1 && f.start < now {
			f.activeOfLine = float64(f.rcv.Stats.PlacedBytes) * 8 / (now - f.start).Seconds() / float64(m.nicRate)
		}
	}
}
