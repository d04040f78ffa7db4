package flow

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// The schedule model (Collectives.SetSchedules): a collective whose algorithm has
// dependencies between messages (ring, chain, hierarchical, double binary tree,
// halving-doubling, recursive doubling, pairwise all-to-all) and whose schedule is small
// enough runs at flow level as the packet level runs it, message by message
// through package collective's Schedule (the same DAG of sends, receives and reductions the
// packet level's collective.Executor walks), instead of expand.go's phases:
//
//   - A send op becomes eligible when its dependencies are done (collective.Executor.ready):
//     a rank's next step waits only on its own previous sends and receives, and chunks
//     pipeline across steps, with no barrier over the communicator.
//   - Each eligible send is one message, posted on a connection of its (src, dst) host pair
//     and collective: one connection per pair (MRC: one QP sprays every message over every
//     plane), or Q of them taken round robin message by message when the Router is a
//     QPRouter reporting Q > 1 QPs for the pair (RoCE: rocenic.Endpoint.Send, a message whole
//     on one QP). A connection carries its messages in order, one at a time (a QP's packets
//     go in posting order), each a Net flow of the message's bytes routed with Router key
//     (collective key + QP index) when it reaches the head, so the links see one flow per
//     busy connection, max-min shared with everything else.
//   - A message is delivered its Router latency after its last byte is sent (the next
//     message on the connection starts at that last byte); delivery completes its send and
//     its receive, as Executor.Delivered does. Reductions are free and instantaneous (no
//     gamma term, as in the phase model).
//
// On a non-blocking fabric without contention at the NICs this is the schedule's run on
// collective.Ideal (one message at a time per NIC, latency a); where several connections of
// one host are busy at once the fluid shares the NIC max-min fairly where Ideal serves its
// posted messages in FIFO order (flow/dag_test.go). Direct and grouped collectives keep the
// phase model (no dependencies: one flow per pair is exactly their chunks in order), and so
// do schedules above SetSchedules' bound: there the phases are the ring's steady state
// (AlphaBeta's form exactly on a crossbar, and the schedule's own time when each channel is
// one loop, S/C <= n x chunk, as at scale), and so do those a SetScheduleFilter leaves out
// (a large training job's many-loop collectives: runner/trainflow.go).
//
// Deliveries due at one instant are made in (collective, op) order (dagWake), so which QP a
// send readied by them takes does not depend on the simulation's tie-breaks. Under
// CollConfig.TailLoss a message that lost its tail holds its connection for TailRTO after
// its last byte (go-back-N sends nothing new on the QP before resending the tail: dagResume).
// Under a fold (SetFold) a collective runs on the links' classes; on a communicator that
// mixes representative and other hosts only the representative ranks run (dagfold.go).

// QPRouter is a Router that also says how many connections (QPs) the transport opens between
// two hosts for one collective, which the schedule model takes round robin message by
// message: Router key k + q (k the collective's key, q < QPs) is QP q's path. A Router that
// is not a QPRouter has one connection per pair.
type QPRouter interface {
	Router
	// QPs returns the connections between hosts src and dst (>= 1; values below 1 mean 1).
	QPs(src, dst int) int
}

// ScheduleKeyer is a Router that keeps the schedule model's connections apart from the phase
// model's: a collective whose Router keys are k + c (c its logical channel) under the phase
// model has keys ScheduleKey(k) + q (q its QP) under the schedule model, so that a router
// recording something per key (the QPs a key's flows use, the owner its hashed paths come
// from, a route cache) keeps both when collectives of both models run on the same hosts at
// once. A Router that is not a ScheduleKeyer gets k + q.
type ScheduleKeyer interface {
	Router
	// ScheduleKey returns the base of the schedule model's Router keys for a collective whose
	// phase-model base is key.
	ScheduleKey(key uint64) uint64
}

// ScheduleKey is the schedule model's key base for phase-model base key that a
// ScheduleKeyer may return: key mixed with a constant of its own (sim.Mix64), so that it
// meets no phase-model key k + c of a few channels but with probability about 2^-60.
func ScheduleKey(key uint64) uint64 { return sim.Mix64(key ^ 0x5c4edb1e0dac0ffe) }

// schedAlgo reports whether sp's algorithm has a schedule the model can run differently
// from its phases: every one but direct and grouped, whose messages have no dependencies
// (their chunks in order on a connection finish when one flow of their sum does).
func schedAlgo(sp *collective.Spec) bool {
	return sp.Ranks >= 2 && sp.Algo != collective.Direct && sp.Algo != collective.Grouped
}

// schedKey identifies a spec without a matrix, for the schedule cache.
type schedKey struct {
	op                         collective.Collective
	algo                       collective.Algorithm
	ranks                      int
	bytes, chunk               int64
	root, peer, chans, in, out int
	domain                     int
}

// dagSched is a built schedule with its send ops' host-pair numbering.
type dagSched struct {
	key    schedKey
	sch    *collective.Schedule
	pair   []int32 // per op: the pair index of a send, -1 otherwise
	npairs int
	// pos, rankOff, rankOps: each op's place in its rank's program and the ops by rank
	// (rankTables; built for folds only).
	pos, rankOff, rankOps []int32
}

// dagCacheSize bounds the schedules kept for reuse (a sweep launches each size many times).
const dagCacheSize = 8

// dagState is the schedule model's state on a Collectives (nil until SetSchedules turns it on).
type dagState struct {
	maxOps float64                        // SetSchedules: the largest schedule the model runs; 0 off
	keep   func(sp *collective.Spec) bool // SetScheduleFilter; nil: every one
	kind   sim.Kind                       // a message's delivery
	resume sim.Kind                       // a connection's lost-tail wait over
	cache  []*dagSched
	insts  []*dagInst // by collective id; nil for phase-model collectives
	work   []uint64   // (collective id, op) to complete, FIFO
	busy   bool
	due    dagDueHeap // deliveries not yet made, by (time, collective id, op)
}

// dagDue is a message's delivery: at its time, the send op op of collective id.
type dagDue struct {
	at sim.Time
	id int32
	op int32
}

// dagDueHeap is a binary min-heap of deliveries by (at, id, op).
type dagDueHeap []dagDue

func (a dagDue) less(b dagDue) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.id != b.id {
		return a.id < b.id
	}
	return a.op < b.op
}

func (h *dagDueHeap) push(x dagDue) {
	*h = append(*h, x)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q[i].less(q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *dagDueHeap) pop() dagDue {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && q[l].less(q[m]) {
			m = l
		}
		if l+1 < n && q[l+1].less(q[m]) {
			m = l + 1
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}

// dagWake is the delivery event: every delivery due by now is made, in (collective id, op)
// order, so that which QP a send readied by them takes (round robin in readiness order)
// does not depend on the order in which the simulation breaks ties between events of one
// instant (the same delivery times give the same QPs in every step). A later event of the
// same instant finds its delivery made.
func (c *Collectives) dagWake(now sim.Time, _ int32, _ uint64) {
	g := c.dag
	for len(g.due) > 0 && g.due[0].at <= now {
		d := g.due.pop()
		c.dagDeliver(now, d.id, uint64(uint32(d.op)))
	}
}

// dagInst is one running collective of the schedule model.
type dagInst struct {
	in      *coll
	ds      *dagSched
	key     uint64  // base of its Router keys (ScheduleKeyer), + the QP
	left    []int32 // per op: dependencies not done
	st      []uint8 // per op: dagReady, dagArrived, dagDone
	opsLeft int
	rr      []int32     // per pair: the next connection (round robin)
	conns   [][]dagConn // per pair: its connections (QPRouter.QPs), created on first use
	// img, imgOff: on a mixed communicator under the fold (dagfold.go), by send op the
	// receives its delivery completes (img[imgOff[i]:imgOff[i+1]]); nil otherwise.
	img, imgOff []int32
}

// op state bits of the schedule model.
const (
	dagReady uint8 = 1 << iota
	dagArrived
	dagDone
)

// dagConn is one connection of a pair: its messages in order, the head one sending.
type dagConn struct {
	d        *dagInst
	src, dst int32 // ranks
	qp       int32
	queue    []int32 // send ops waiting, from head
	head     int
	cur      int32 // send op on the Net, -1 none
	curAt    sim.Time
	curLat   sim.Time
	done     func(now sim.Time)
	pair     int32    // its pair's index (dagSched.pair)
	curWait  sim.Time // the message on the Net lost its tail: the QP waits this (TailRTO) after its last byte
	blocked  bool     // waiting out a lost tail (go-back-N): no message starts until resumed
}

// SetSchedules turns the schedule model on for collectives launched from now on whose
// schedule has at most maxOps operations (collective.EstimateOps; 0 turns it off, the
// default: every algorithm runs expand.go's phases). Those collectives, of every algorithm
// but direct and grouped, run message by message through their packet-level schedule (see
// dag.go), so the flow level keeps the packet level's dependencies and chunk pipelining;
// larger ones keep their phases, which cost one flow per pair and phase where the schedule
// model costs one per message (about 2 us of wall time per op: a 1,024-rank tree all-reduce
// of 256 MiB, 5.2 million ops, takes 10 s). Errors: none; a negative or NaN maxOps is 0.
func (c *Collectives) SetSchedules(maxOps float64) {
	if !(maxOps > 0) {
		if c.dag != nil {
			c.dag.maxOps = 0
		}
		return
	}
	if c.dag == nil {
		c.dag = &dagState{}
		c.dag.kind = c.s.Register("flow.collective.deliver", c.dagWake)
		c.dag.resume = c.s.Register("flow.collective.resume", c.dagResume)
	}
	c.dag.maxOps = maxOps
}

// SetScheduleFilter narrows the schedule model (SetSchedules) to the collectives for which
// keep (given the resolved spec) reports true; the others run their phases. nil keeps every
// one SetSchedules admits. A runner uses it to keep phases where they are the schedule's
// steady state and messages would cost too much (runner/trainflow.go). Errors: none.
func (c *Collectives) SetScheduleFilter(keep func(sp *collective.Spec) bool) {
	if c.dag == nil {
		c.dag = &dagState{}
		c.dag.kind = c.s.Register("flow.collective.deliver", c.dagWake)
		c.dag.resume = c.s.Register("flow.collective.resume", c.dagResume)
	}
	c.dag.keep = keep
}

// Schedules reports whether a launch of spec now would run the schedule model
// (SetSchedules): its algorithm has dependencies, its schedule is small enough and the
// filter (SetScheduleFilter) keeps it. Under a fold (SetFold) a schedule-model collective
// must be on a communicator of representative hosts only (CheckFold refuses the others): it
// runs on the links' classes and stands for its images. A spec that does not resolve
// reports false.
func (c *Collectives) Schedules(spec collective.Spec) bool {
	if c.dag == nil || c.dag.maxOps <= 0 {
		return false
	}
	sp, err := spec.Resolve()
	if err != nil || !schedAlgo(&sp) || c.dag.keep != nil && !c.dag.keep(&sp) {
		return false
	}
	ops, err := collective.EstimateOps(sp)
	return err == nil && ops <= c.dag.maxOps
}

// dagStart starts collective in under the schedule model if it runs there, and reports
// whether it did.
func (c *Collectives) dagStart(now sim.Time, in *coll) bool {
	g := c.dag
	if g == nil || !c.Schedules(in.spec) {
		return false
	}
	ds, err := g.schedule(&in.spec)
	if err != nil {
		in.nphase = 1
		c.fail(now, in, fmt.Errorf("flow: collective %q: %w", in.nameOf(), err))
		return true
	}
	sch := ds.sch
	n := sch.Len()
	d := &dagInst{in: in, ds: ds, key: in.key, left: make([]int32, n), st: make([]uint8, n), opsLeft: n,
		rr: make([]int32, ds.npairs), conns: make([][]dagConn, ds.npairs)}
	if kr, ok := c.r.(ScheduleKeyer); ok {
		d.key = kr.ScheduleKey(in.key)
	}
	for i := 0; i < n; i++ {
		d.left[i] = int32(len(sch.Deps(i)))
	}
	if in.fk == foldMixed {
		// Only the representative ranks run (dagfold.go).
		if d.opsLeft, err = c.dagFoldInst(d); err != nil {
			in.nphase = 1
			c.fail(now, in, fmt.Errorf("flow: collective %q: fold: %w", in.nameOf(), err))
			return true
		}
	}
	for int(in.id) >= len(g.insts) {
		g.insts = append(g.insts, nil)
	}
	g.insts[in.id] = d
	in.nphase, in.phase = 1, 0
	in.phaseAt = now
	if d.opsLeft == 0 {
		c.dagFinish(now, d)
		return true
	}
	wasBusy := g.busy
	g.busy = true
	for i := 0; i < n; i++ {
		if d.left[i] == 0 && d.st[i]&dagDone == 0 {
			c.dagReady(now, d, int32(i))
		}
	}
	if !wasBusy {
		c.dagDrain(now)
	}
	return true
}

// schedule returns the cached schedule of sp, building it on a miss.
func (g *dagState) schedule(sp *collective.Spec) (*dagSched, error) {
	var key schedKey
	cacheable := sp.Matrix == nil
	if cacheable {
		key = schedKey{op: sp.Op, algo: sp.Algo, ranks: sp.Ranks, bytes: sp.Bytes, chunk: sp.ChunkBytes,
			root: sp.Root, peer: sp.Peer, chans: sp.Channels, in: sp.Inner, out: sp.Outer, domain: sp.Domain}
		for i, ds := range g.cache {
			if ds.key == key {
				// Most recent first.
				copy(g.cache[1:i+1], g.cache[:i])
				g.cache[0] = ds
				return ds, nil
			}
		}
	}
	sch, err := collective.Build(*sp)
	if err != nil {
		return nil, err
	}
	ds := &dagSched{key: key, sch: sch, pair: make([]int32, sch.Len())}
	ids := map[[2]int32]int32{}
	for i, o := range sch.Ops() {
		ds.pair[i] = -1
		if o.Kind != collective.OpSend {
			continue
		}
		k := [2]int32{o.Rank, o.Peer}
		p, ok := ids[k]
		if !ok {
			p = int32(len(ids))
			ids[k] = p
		}
		ds.pair[i] = p
	}
	ds.npairs = len(ids)
	if cacheable {
		if len(g.cache) < dagCacheSize {
			g.cache = append(g.cache, nil)
		}
		copy(g.cache[1:], g.cache[:len(g.cache)-1])
		g.cache[0] = ds
	}
	return ds, nil
}

// dagReady handles op i of d whose dependencies are done (collective.Executor.ready): a send
// is posted on its connection, a receive whose data is in completes, a reduce completes.
func (c *Collectives) dagReady(now sim.Time, d *dagInst, i int32) {
	d.st[i] |= dagReady
	o := &d.ds.sch.Ops()[i]
	switch o.Kind {
	case collective.OpSend:
		p := d.ds.pair[i]
		if d.conns[p] == nil {
			q := 1
			if qr, ok := c.r.(QPRouter); ok {
				q = max(1, qr.QPs(d.in.comm.Host(int(o.Rank)), d.in.comm.Host(int(o.Peer))))
			}
			d.conns[p] = make([]dagConn, q)
			for k := range d.conns[p] {
				cn := &d.conns[p][k]
				cn.d, cn.src, cn.dst, cn.qp, cn.cur, cn.pair = d, o.Rank, o.Peer, int32(k), -1, p
				cn.done = func(now sim.Time) { c.dagSent(now, cn) }
			}
		}
		k := d.rr[p]
		d.rr[p] = (k + 1) % int32(len(d.conns[p]))
		cn := &d.conns[p][k]
		cn.queue = append(cn.queue, i)
		if cn.cur < 0 && !cn.blocked {
			c.dagSend(now, cn)
		}
	case collective.OpRecv:
		if d.st[i]&dagArrived != 0 {
			c.dag.work = append(c.dag.work, uint64(d.in.id)<<32|uint64(uint32(i)))
		}
	default: // reductions are free
		c.dag.work = append(c.dag.work, uint64(d.in.id)<<32|uint64(uint32(i)))
	}
}

// dagSend puts connection cn's next message on the Net.
func (c *Collectives) dagSend(now sim.Time, cn *dagConn) {
	d := cn.d
	in := d.in
	if cn.head == len(cn.queue) || in.err != nil {
		return
	}
	op := cn.queue[cn.head]
	cn.head++
	if cn.head == len(cn.queue) {
		cn.queue, cn.head = cn.queue[:0], 0
	}
	bytes := d.ds.sch.Bytes(int(op))
	c.net.beginFlow()
	waits := c.TailWaits
	lat, err := c.routeMsg(in, d.key, cn.src, cn.dst, cn.qp, true)
	cn.curWait = 0
	if c.TailWaits > waits {
		cn.curWait = c.cfg.TailRTO
	}
	if err == nil {
		var slot int32
		src, dst := in.comm.Host(int(cn.src)), in.comm.Host(int(cn.dst))
		slot, err = c.net.commitFlow(now, Flow{Src: src, Dst: dst, Bytes: bytes, Cap: c.cfg.FlowCap, Done: cn.done})
		if err == nil && c.cfg.Reroutable {
			for int(slot) >= len(c.recs) {
				c.recs = append(c.recs, flowRec{})
			}
			c.recs[slot] = flowRec{in: in, id: c.net.flows[slot].id, d: demand{src: cn.src, dst: cn.dst, group: cn.qp}, dag: true, key: d.key}
		}
	}
	if err != nil {
		c.fail(now, in, fmt.Errorf("flow: collective %q: %w", in.nameOf(), err))
		return
	}
	cn.cur, cn.curAt, cn.curLat = op, now, lat
	in.left++
	in.flows++
	in.bytes += bytes
}

// routeMsg adds the paths of a message from rank src to rank dst of collective in on QP qp
// (Router key key + qp: the dagInst's key) to the flow being built, and returns its latency: the Router's,
// plus TailRTO when the message lost its tail (CollConfig.TailLoss, drawn per message when
// draw is set: a new message, not a reroute, which keeps its latency).
func (c *Collectives) routeMsg(in *coll, key uint64, src, dst, qp int32, draw bool) (sim.Time, error) {
	hs, hd := in.comm.Host(int(src)), in.comm.Host(int(dst))
	paths, lat, err := c.r.Paths(hs, hd, key+uint64(qp), c.pbuf[:0])
	c.pbuf = paths
	if err != nil {
		return 0, fmt.Errorf("rank %d (host %d) -> rank %d (host %d), QP %d: %w", src, hs, dst, hd, qp, err)
	}
	if lat < 0 {
		return 0, fmt.Errorf("host %d -> %d: router latency %v is negative", hs, hd, lat)
	}
	var wsum float64
	for i := range paths {
		wsum += paths[i].Weight
	}
	if len(paths) > 0 && !(wsum > 0) {
		return 0, fmt.Errorf("host %d -> %d: router path weights sum to %v", hs, hd, wsum)
	}
	var pc float64
	for i := range paths {
		if c.cfg.TailLoss != nil {
			pc += paths[i].Weight / wsum * c.cfg.TailLoss(paths[i].Links)
		}
		links := paths[i].Links
		if c.fold != nil {
			// A collective of representative hosts stands for its images (fold.go): its
			// messages cross the links' classes.
			if links, err = c.foldLinks(links); err != nil {
				return 0, fmt.Errorf("host %d -> %d: %w", hs, hd, err)
			}
		}
		if err := c.net.addPath(links, paths[i].Weight/wsum); err != nil {
			return 0, fmt.Errorf("host %d -> %d: router path %d: %w", hs, hd, i, err)
		}
	}
	if pc > 0 && draw {
		c.tailDraws++
		u := float64(sim.Mix64(c.cfg.TailSeed^0x7a11c0ffee^c.tailDraws*0x9e3779b97f4a7c15)>>11) / (1 << 53)
		if u < pc {
			c.TailWaits++
			lat = min(lat, sim.MaxTime-c.cfg.TailRTO) + c.cfg.TailRTO
		}
	}
	return lat, nil
}

// dagSent is a connection's flow callback: its message's last byte is sent. The message is
// delivered its latency later; the connection's next message starts now.
func (c *Collectives) dagSent(now sim.Time, cn *dagConn) {
	d := cn.d
	in := d.in
	op := cn.cur
	cn.cur = -1
	in.left--
	dur := now - cn.curAt
	if sl, sd := c.net.DeliveredStall(); sd > 0 {
		sd = min(sd, dur)
		in.charge(sl, sd)
		dur -= sd
	}
	in.charge(c.net.DeliveredBottleneck(), dur)
	at := now + cn.curLat
	if at < now {
		at = sim.MaxTime
	}
	c.dag.due.push(dagDue{at: at, id: int32(in.id), op: op})
	c.s.At(at, c.dag.kind, 0, 0)
	if cn.curWait > 0 {
		// Its tail was lost: the QP (go-back-N, no tail-loss probe) sends nothing more
		// until its retransmission timer has resent it.
		cn.blocked = true
		c.s.At(min(now, sim.MaxTime-cn.curWait)+cn.curWait, c.dag.resume, int32(in.id), uint64(uint32(cn.pair))<<32|uint64(uint32(cn.qp)))
		return
	}
	c.dagSend(now, cn)
}

// dagResume is a connection's lost-tail wait over (dagSent): obj the collective, data its
// pair and QP. Its next message starts.
func (c *Collectives) dagResume(now sim.Time, obj int32, data uint64) {
	d := c.dag.insts[obj]
	p, k := int(data>>32), int(uint32(data))
	if d == nil || d.in.err != nil || p >= len(d.conns) || k >= len(d.conns[p]) || !d.conns[p][k].blocked {
		return // the collective is gone (its slot may hold another: CollConfig.Forget)
	}
	cn := &d.conns[p][k]
	cn.blocked = false
	c.dagSend(now, cn)
}

// dagDeliver is a message's delivery (dagWake): obj the collective, data the send op. It
// completes the send and, when ready, its receive (collective.Executor.Delivered).
func (c *Collectives) dagDeliver(now sim.Time, obj int32, data uint64) {
	g := c.dag
	d := g.insts[obj]
	if d == nil || d.in.err != nil {
		return
	}
	send := int32(data)
	id := uint64(d.in.id) << 32
	g.work = append(g.work, id|uint64(uint32(send)))
	if d.img == nil {
		recv := d.ds.sch.Ops()[send].Match
		d.st[recv] |= dagArrived
		if d.st[recv]&dagReady != 0 {
			g.work = append(g.work, id|uint64(uint32(recv)))
		}
	} else {
		for _, recv := range d.img[d.imgOff[send]:d.imgOff[send+1]] {
			d.st[recv] |= dagArrived
			if d.st[recv]&dagReady != 0 {
				g.work = append(g.work, id|uint64(uint32(recv)))
			}
		}
	}
	if !g.busy {
		g.busy = true
		c.dagDrain(now)
	}
}

// dagDrain completes queued ops until none is left; completing an op readies its
// successors, which may queue more (collective.Executor.drain).
func (c *Collectives) dagDrain(now sim.Time) {
	g := c.dag
	for k := 0; k < len(g.work); k++ {
		t := g.work[k]
		d := g.insts[t>>32]
		i := int32(uint32(t))
		if d == nil || d.st[i]&dagDone != 0 {
			continue
		}
		d.st[i] |= dagDone
		sch := d.ds.sch
		for _, s := range sch.Succs(int(i)) {
			if d.left[s]--; d.left[s] == 0 {
				c.dagReady(now, d, s)
			}
		}
		if d.opsLeft--; d.opsLeft == 0 {
			c.dagFinish(now, d)
		}
	}
	g.work = g.work[:0]
	g.busy = false
}

// dagFinish completes collective d: its state is released and the collective finishes as
// one whose last phase ended now.
func (c *Collectives) dagFinish(now sim.Time, d *dagInst) {
	in := d.in
	c.dag.insts[in.id] = nil
	in.phase = in.nphase
	c.startPhase(now, in)
}
