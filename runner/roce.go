package runner

import (
	"fmt"
	"sort"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport/roce"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// roceQP is one RoCEv2 RC connection: a sender at src, a receiver at dst, one NIC port (plane)
// and one UDP source port, so every packet of the QP takes one ECMP path each way.
type roceQP struct {
	qp       int32
	src, dst int32
	plane    uint8
	srcPort  uint16
	snd      *roce.Sender
	rcv      *roce.Receiver
	timer    sim.TimerID
	waiting  bool  // in its NIC port's wait list
	flow     int32 // traffic flow it carries a stripe of; -1 for collective messages
	posts    int
	acked    int
	posted   int64    // payload bytes posted
	tokens   []uint64 // collective messages in posting order; tokens[tokHead:] not yet placed
	tokHead  int
	done     sim.Time // latest sender completion
	lastRetx int64    // resent packets seen so far (for the loss-recovery span)
	// backlog holds collective messages waiting for a free slot: at most roceMsgWindow
	// messages per QP are posted and not yet acknowledged (Send).
	backlog []collective.Message
}

// roceMsgWindow is how many collective messages one QP may have posted and not yet
// acknowledged before the next waits: NCCL's slots per connection (NCCL_STEPS = 8, each a
// chunk whose buffer is reused only once its send completed, i.e. was acknowledged). A sender
// whose ACKs are lost (a failed link on the return path) therefore stalls, as a real one
// does, instead of going on as the receiver places its data.
const roceMsgWindow = 8

// roceFlow is one traffic transfer striped over QPs.
type roceFlow struct {
	src, dst  int32
	bytes     int64
	start     sim.Time
	qps       []int32
	parts     int // stripes with bytes
	partsDone int
	done      sim.Time
	hops      int // the pair's switch hops, for the ideal FCT
	// activeOfLine is the payload placed from the flow's start to the first flow's completion
	// over that time, as a fraction of the NIC line rate (all planes); -1 when not measured
	// (one flow, or it started after the first completion).
	activeOfLine float64
}

// roceNet drives RoCEv2 engines over the fabric: QPs hashed by ECMP (no source route), NIC
// transmit arbitration across the QPs of a port (SetNICGate), one timer per sender.
type roceNet struct {
	s         *sim.Sim
	net       *fabric.Network
	cfg       roce.Config
	planes    int
	portRate  sim.Rate // one NIC port
	qps       []*roceQP
	flows     []*roceFlow
	kStart    sim.Kind
	kTimer    sim.Kind
	baseRTT   sim.Time
	fct       *hdrhistogram.Histogram // per traffic flow, ns
	fctMax    int64                   // the largest FCT recorded, ns, exact
	layout    topo.Topology
	running   int // transfers (flows or messages) not yet acknowledged
	errs      []error
	quiet     bool
	wait      [][]nicWait // by host, plane
	seed      uint64
	pairs     map[[3]int32][]int32   // collective messages: the QPs of (src, dst, group)
	nextQP    map[[3]int32]int       // round robin over a pair's QPs for messages
	group     func(instance int) int // a message's connection group (collective); nil: one group
	delivered func(now sim.Time, token uint64)
	onDone    func(now sim.Time)
	// halt, when set (traffic runs), stops the run: every transfer left is on a QP that gave up.
	halt func(now sim.Time)
	// activeAt is when the first traffic flow completed, and activeTput each flow's payload
	// placed by then over its time active, as a fraction of the NIC line rate: throughput
	// while all flows are active.
	activeAt   sim.Time
	activeTput []float64

	// Go-back-N resends and QP errors, for what a failure cost.
	lossLog
}

func newRoCENet(s *sim.Sim, net *fabric.Network, l topo.Topology, cfg roce.Config) *roceNet {
	c := l.Params()
	cfg = cfg.WithDefaults()
	r := &roceNet{
		s: s, net: net, cfg: cfg, planes: c.Planes, portRate: c.HostLink,
		fct:    hdrhistogram.New(1, int64(sim.Hour/sim.Nanosecond), 3),
		pairs:  map[[3]int32][]int32{},
		nextQP: map[[3]int32]int{},
	}
	r.baseRTT = c.RoundTrip(l.Sizing().MaxSwitchHops, cfg.HeaderBytes+cfg.PayloadBytes, cfg.AckWire())
	r.layout = l
	r.kStart = s.Register("roce.start", r.onStart)
	r.kTimer = s.Register("roce.timer", r.onTimer)
	net.SetReceiver(fabric.ProtoRoCE, r.onPacket)
	r.wait = make([][]nicWait, net.NumHosts())
	for h := range r.wait {
		r.wait[h] = make([]nicWait, c.Planes)
	}
	net.SetNICReady(r.onNICReady)
	return r
}

// newQP opens a QP from src to dst on plane.
func (r *roceNet) newQP(src, dst, plane int, flow int32) (*roceQP, error) {
	if err := pairRouteError(r.layout, src, dst, false); err != nil {
		return nil, err
	}
	id := uint32(len(r.qps))
	conn := roce.Conn{QP: id, LineRate: r.portRate, SrcPort: roce.UDPSourcePort(r.seed, id)}
	snd, err := roce.NewSender(r.cfg, conn)
	if err != nil {
		return nil, err
	}
	rcv, err := roce.NewReceiver(r.cfg, conn)
	if err != nil {
		return nil, err
	}
	q := &roceQP{qp: int32(id), src: int32(src), dst: int32(dst), plane: uint8(plane), srcPort: snd.SrcPort(), snd: snd, rcv: rcv, flow: flow}
	port := &r.net.Ports[r.net.Nodes[src].Ports[plane]]
	snd.SetNICGate(func() bool { return port.Down || port.QueueBytes() == 0 })
	q.timer = r.s.NewTimer(r.kTimer, int32(id))
	r.qps = append(r.qps, q)
	return q, nil
}

// addFlow stripes one transfer of bytes from src to dst, posted at start, over the pair's
// QPs: QPsPerPeer on each plane.
func (r *roceNet) addFlow(src, dst int, bytes int64, start sim.Time) error {
	f := &roceFlow{src: int32(src), dst: int32(dst), bytes: bytes, start: start, hops: pairHops(r.layout, src, dst), activeOfLine: -1}
	fi := int32(len(r.flows))
	n := r.cfg.QPsPerPeer * r.planes
	for i := 0; i < n; i++ {
		q, err := r.newQP(src, dst, i%r.planes, fi)
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

func (r *roceNet) onStart(now sim.Time, obj int32, _ uint64) {
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
// pair and the message's collective (NCCL connects each communicator apart):
// QPsPerPeer per plane, opened on first use, used round robin message by message (a message is
// not striped: NCCL posts each chunk on one QP of the channel). The executor hears of it when
// the receiver has placed every byte. A zero-byte message is sent as one byte.
func (r *roceNet) Send(now sim.Time, msg collective.Message) error {
	hosts := r.net.NumHosts()
	if msg.Src < 0 || msg.Src >= hosts || msg.Dst < 0 || msg.Dst >= hosts || msg.Src == msg.Dst {
		return fmt.Errorf("roce: message from host %d to host %d: want two distinct hosts of %d", msg.Src, msg.Dst, hosts)
	}
	key := [3]int32{int32(msg.Src), int32(msg.Dst), 0}
	if r.group != nil {
		key[2] = int32(r.group(msg.Instance))
	}
	list, ok := r.pairs[key]
	if !ok {
		for i := 0; i < r.cfg.QPsPerPeer*r.planes; i++ {
			q, err := r.newQP(msg.Src, msg.Dst, i%r.planes, -1)
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
	if len(q.backlog) > 0 || q.posts-q.acked >= roceMsgWindow {
		q.backlog = append(q.backlog, msg)
		return nil
	}
	return r.post(now, q, msg)
}

// post posts one collective message on q and sends what the sender can.
func (r *roceNet) post(now sim.Time, q *roceQP, msg collective.Message) error {
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

func (r *roceNet) onTimer(now sim.Time, obj int32, _ uint64) {
	q := r.qps[obj]
	q.snd.OnTimer(now)
	r.flushSender(now, q)
}

// onNICReady serves the port's waiting QPs in FIFO order: each is pumped; one that the port
// still cannot take goes back to the end and stops the round.
func (r *roceNet) onNICReady(now sim.Time, host int32, plane int) {
	w := &r.wait[host][plane]
	for w.head < len(w.q) {
		q := r.qps[w.q[w.head]]
		w.head++
		q.waiting = false
		q.snd.Pump(now)
		r.flushSender(now, q)
		if q.snd.Gated() {
			break
		}
	}
	if w.head == len(w.q) {
		w.q, w.head = w.q[:0], 0
	}
}

// flushSender sends the sender's outbox, records completions and errors, queues a gated QP on
// its port and re-arms the timer.
func (r *roceNet) flushSender(now sim.Time, q *roceQP) {
	if r.quiet {
		q.snd.ClearOut()
		q.snd.ClearCompletions()
		return
	}
	if n := q.snd.Stats.RetxPackets; n > q.lastRetx {
		q.lastRetx = n
		r.retx(now)
	}
	for i := range q.snd.Out() {
		r.send(now, q, &q.snd.Out()[i], q.src, q.dst)
	}
	q.snd.ClearOut()
	if q.snd.Gated() && !q.waiting {
		q.waiting = true
		w := &r.wait[q.src][q.plane]
		if w.head > 0 && w.head == len(w.q) {
			w.q, w.head = w.q[:0], 0
		}
		w.q = append(w.q, q.qp)
	}
	for _, c := range q.snd.Completions() {
		q.done = c.Done
		q.acked++
		r.complete(now, q, c)
	}
	q.snd.ClearCompletions()
	if err := q.snd.Err(); err != nil {
		r.errs = append(r.errs, err)
		r.qpError(now)
		r.s.StopTimer(q.timer)
		if r.halt != nil && r.allLeftErrored() {
			r.halt(now) // nothing left can finish: stop rather than idle to run.duration
		}
		return
	}
	if d := q.snd.Deadline(); d != sim.MaxTime {
		r.s.Reset(q.timer, max(d, now))
	} else {
		r.s.StopTimer(q.timer)
	}
	if len(q.backlog) > 0 && q.posts-q.acked < roceMsgWindow {
		msg := q.backlog[0]
		q.backlog = q.backlog[1:]
		if err := r.post(now, q, msg); err != nil {
			r.s.Stop(err)
		}
	}
}

// complete accounts one acknowledged transfer of q.
func (r *roceNet) complete(now sim.Time, q *roceQP, c roce.Completion) {
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
	} else {
		r.recordFCT(c.Done - c.Posted)
	}
	r.running--
	if r.running == 0 && r.onDone != nil {
		r.onDone(now)
	} else if r.running > 0 && len(r.errs) > 0 && r.halt != nil && r.allLeftErrored() {
		r.halt(now) // the last transfer that could finish did: the rest are on errored QPs
	}
}

// recordFCT adds one FCT to the histogram (ns) and the exact maximum.
func (r *roceNet) recordFCT(d sim.Time) {
	ns := int64(d / sim.Nanosecond)
	_ = r.fct.RecordValue(ns)
	r.fctMax = max(r.fctMax, ns)
}

// snapshotActive records, at the first flow completion, each started flow's placed payload
// over its time active as a fraction of the NIC line rate (all planes).
func (r *roceNet) snapshotActive(now sim.Time) {
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
func (r *roceNet) flushReceiver(now sim.Time, q *roceQP) {
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
		if q.tokHead < len(q.tokens) {
			tok := q.tokens[q.tokHead]
			q.tokHead++
			if r.delivered != nil {
				r.delivered(now, tok)
			}
		}
	}
	q.rcv.ClearCompletions()
}

// send encodes h as a fabric packet from host to peer on the QP's plane. No source route:
// switches hash the 5-tuple (the QP's UDP source port, port 4791). Data is ECN-capable in class
// 1; ACKs, NAKs and CNPs travel in class 0. Word layout: roce.Words in Op, Seq and Ack; the QP
// in Flow.
func (r *roceNet) send(now sim.Time, q *roceQP, h *roce.Header, host, peer int32) {
	p := r.net.NewPacket()
	p.Proto = fabric.ProtoRoCE
	p.Flow = q.qp
	p.Src, p.Dst = host, peer
	p.SrcPort, p.DstPort = q.srcPort, roce.UDPPort
	w := h.Pack()
	p.Op, p.Seq, p.Ack = w.Op, w.Seq, w.Ack
	p.Size = h.Wire
	if h.Kind == roce.Data {
		p.Class = 1
		p.Flags = fabric.ECT
	}
	if err := r.net.Send(now, host, int(q.plane), p); err != nil {
		r.s.Stop(err)
	}
}

// onPacket decodes a RoCE packet at its destination and hands it to the engine.
func (r *roceNet) onPacket(now sim.Time, p *fabric.Packet) {
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
func (r *roceNet) allLeftErrored() bool {
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

// placedBytes is the payload placed at every receiver so far.
func (r *roceNet) placedBytes() int64 {
	var n int64
	for _, q := range r.qps {
		n += q.rcv.Stats.PlacedBytes
	}
	return n
}

// outstanding returns the transfers not yet acknowledged and the QP errors so far.
func (r *roceNet) outstanding() (running, errs int) { return r.running, len(r.errs) }

// quiesce stops every engine so the fabric can drain.
func (r *roceNet) quiesce() {
	r.quiet = true
	for _, q := range r.qps {
		r.s.StopTimer(q.timer)
	}
}

// stuck describes QPs with transfers outstanding.
func (r *roceNet) stuck(max int) string {
	var out []string
	for _, q := range r.qps {
		if q.acked < q.posts {
			out = append(out, fmt.Sprintf("qp %d (h%d->h%d plane %d): %s", q.qp, q.src, q.dst, q.plane, q.snd.Outstanding()))
		}
	}
	sort.Strings(out)
	if len(out) > max {
		out = append(out[:max], fmt.Sprintf("and %d more", len(out)-max))
	}
	return fmt.Sprint(out)
}

// RoCERun is what a RoCE run leaves beyond the summary.
type RoCERun struct {
	r *roceNet
	// DoneAt is when the last transfer was acknowledged (MaxTime if some never were).
	DoneAt sim.Time
}

// QP returns QP i's engines and ends.
func (x *RoCERun) QP(i int) (snd *roce.Sender, rcv *roce.Receiver, src, dst, plane int) {
	q := x.r.qps[i]
	return q.snd, q.rcv, int(q.src), int(q.dst), int(q.plane)
}

// QPs returns the number of QPs.
func (x *RoCERun) QPs() int { return len(x.r.qps) }

// FlowDone returns when traffic flow i's last stripe was acknowledged (0 if never).
func (x *RoCERun) FlowDone(i int) sim.Time { return x.r.flows[i].done }

// runRoCE posts every traffic flow's transfer, runs until all are acknowledged (or
// run.duration), then stops the engines and drains the fabric.
func runRoCE(sc *scenario.Scenario, layout topo.Topology, res *Result) error {
	s, net := res.Sim, res.Net
	r := newRoCENet(s, net, layout, *sc.Transport.Block().(*roce.Config))
	r.seed = sc.Run.Seed
	hosts := net.NumHosts()
	for gi := range sc.Traffic {
		g := &sc.Traffic[gi]
		rng := sim.Stream(sc.Run.Seed, fmt.Sprintf("traffic[%d]", gi))
		for _, p := range groupPairs(g, hosts, rng.Perm) {
			bytes := p.bytes
			if bytes == 0 {
				bytes = int64(g.Bytes)
			}
			if err := r.addFlow(p.src, p.dst, bytes, g.Start); err != nil {
				return &InputError{Err: fmt.Errorf("traffic[%d]: %w", gi, err)}
			}
		}
	}
	run := &RoCERun{r: r, DoneAt: sim.MaxTime}
	res.RoCE = run
	smp := newSampler(s, net, layout.Params().Planes, sc.Run.SampleInterval, sc.Run.Duration)
	res.Links = smp.links
	smp.placed = r.placedBytes
	r.halt = func(now sim.Time) {
		smp.until = now
		s.Pause()
	}
	end, snap, err := driveTransport(sc, res, smp, &r.onDone, &run.DoneAt, r)
	if err != nil {
		return err
	}
	res.Summary = summarise(sc, net, len(r.flows), smp, snap, end)
	res.Summary.RoCE = r.summary(end, res.Faults)
	if x, ok := r.activeMaxMin(); ok && res.Summary.RoCE.ActiveUntilUs > 0 && len(sc.Faults) == 0 { // max-min is of the intact fabric
		res.Summary.RoCE.ActiveMaxMinMeanOfLine = round3(x)
	}
	res.Summary.PFC = pfcSummary(sc, net, end)
	res.progress, res.trafficEnd, res.lossAt, res.errAt = smp.progress, end, r.lossAt, r.errAt
	roceGoodput(&res.Summary, r, end)
	return nil
}

// ProfileRoCEKmin, ProfileRoCEKmax and RoCEBufferTime are the roce profile's ECN thresholds
// per 100 Gb/s and switch buffer model, which scenario.Resolve applies (scenario/resolve_profile.go).
const (
	ProfileRoCEKmin = scenario.ProfileRoCEKmin
	ProfileRoCEKmax = scenario.ProfileRoCEKmax
	RoCEBufferTime  = scenario.RoCEBufferTime
)

// checkPFCBuffer rejects a dynamic-threshold shared buffer that cannot hold one data packet
// per ingress of the largest switch of l (checked before the build, the profile's sizing
// done), and under the roce profile an ECN kmin at or above the queue limit in force (the
// profile's under PFC, which scenario.Resolve cannot know). Errors name the field, the value
// and what is allowed.
func checkPFCBuffer(sc *scenario.Scenario, l topo.Topology) error {
	cfg := sc.Fabric.PFC.Config().WithDefaults()
	if cfg.Enabled && cfg.Alpha > 0 && !sc.Fluid() {
		pkt := sc.MaxPacketBytes()
		most, at := 0, -1
		for n, s := range switchIngresses(l) {
			if len(s) > most {
				most, at = len(s), n
			}
		}
		if need := int64(most) * pkt; at >= 0 && int64(cfg.SharedBuffer) < need {
			return fmt.Errorf("fabric.pfc.shared_buffer: %v cannot hold one data packet (%dB) for each of the %d ingresses of switch %s; want at least %v (0: sized from the switch under the roce profile)",
				cfg.SharedBuffer, pkt, most, l.NodeName(at), sim.Size(need))
		}
	}
	if sc.Fabric.Profile != scenario.ProfileRoCE {
		return nil
	}
	check := func(path string, q *fabric.QueueConfig) error {
		if q != nil && q.ECN.Enabled && q.ECN.Kmin >= q.Limit {
			return fmt.Errorf("%s.ecn.kmin: %v is at or above the queue limit in force %v; nothing would ever be marked; want kmin below it", path, q.ECN.Kmin, q.Limit)
		}
		return nil
	}
	if err := check("fabric.switch_queue", &sc.Fabric.SwitchQueue); err != nil {
		return err
	}
	return check("fabric.last_hop_queue", sc.Fabric.LastHopQueue)
}

// switchIngresses lists, by node of l, the links at a switch's ports (scenario.SwitchIngresses).
func switchIngresses(l topo.Topology) [][]topo.Link { return scenario.SwitchIngresses(l) }

// dcqcnWithoutECN warns when DCQCN is on but no switch queue marks (fabric.switch_queue and
// last_hop_queue both with ECN off): DCQCN reacts only to CNPs, which receivers send for
// CE-marked packets, so it can never act.
func dcqcnWithoutECN(sc *scenario.Scenario) []string {
	if c, _ := sc.Transport.Block().(*roce.Config); c != nil && c.DCQCN.Disabled {
		return nil
	}
	last := sc.Fabric.LastHopQueue == nil || sc.Fabric.LastHopQueue.ECN.Enabled
	if sc.Fabric.SwitchQueue.ECN.Enabled || last {
		return nil
	}
	return []string{"transport.roce.dcqcn: on, but ECN marking is off on every switch queue (fabric.switch_queue.ecn and fabric.last_hop_queue.ecn), so no packet is marked, no CNP is sent and DCQCN can never act; turn ECN on (the roce profile's default) or set transport.roce.dcqcn.disabled: true to run PFC only"}
}

// roceChecks are the pre-run warnings of a RoCE scenario on a built fabric: DCQCN on with ECN
// off on every switch queue (dcqcnWithoutECN), ECN that cannot mark before PFC pauses
// (fabric.Network.ECNAfterPFC, both values named), and a local ACK timeout shorter than the
// time to drain the worst paused path (the last hop's worst egress plus the other switch hops'
// worst, each sending what its switch's ingresses may hold before they all pause), which would
// time out and eventually error QPs whose packets only wait behind pauses.
func roceChecks(sc *scenario.Scenario, net *fabric.Network, l topo.Topology) []string {
	if sc.Transport.Kind != scenario.TransportRoCE {
		return nil
	}
	out := dcqcnWithoutECN(sc)
	if !net.PFCOn() {
		return out
	}
	if c, _ := sc.Transport.Block().(*roce.Config); c == nil || !c.DCQCN.Disabled {
		for _, w := range net.ECNAfterPFC(maxPFCProblems) {
			out = append(out, "fabric.switch_queue.ecn: "+w)
		}
	}
	cfg := roce.Defaults()
	if c, ok := sc.Transport.Block().(*roce.Config); ok {
		cfg = c.WithDefaults()
	}
	host, hp, sw, sp := net.PFCWorstDrain()
	hops := l.Sizing().MaxSwitchHops
	drain := host + sim.Time(max(hops-1, 0))*sw
	if cfg.RTO < drain {
		out = append(out, fmt.Sprintf("transport.roce.rto: %v is shorter than the %v the worst paused path may take to drain (%v at last hop %s + %d x %v at %s); QPs whose packets only wait behind PFC pauses would time out, resend, and after retry_count (%d) retries error; NCCL's default is 4.096us x 2^20 (about 4.3 s)",
			cfg.RTO, drain, host, hp, max(hops-1, 0), sw, sp, cfg.RetryCount))
	}
	return out
}
