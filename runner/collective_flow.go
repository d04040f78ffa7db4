package runner

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// runCollectiveFlow runs workload.collectives on the flow-level engine (run.engine flow)
// over the scenario's topology, as the packet-level path runs them: step k of the sweeps
// launches every collective at its k-th size together, iterations times back to back, and
// records one nccl-tests row per size. Flows are routed as the transport would route its
// packets (MRC sprays each flow over its minimal paths, RoCE hashes it onto one path per
// plane: newFlowRouter), and hosts of one scale-up domain talk over their scale-up links at
// the domain's rate. The flow model of each algorithm is package flow's: the tree,
// halving-doubling, recursive doubling and pairwise run their packet-level schedule message
// by message (flow/dag.go: the same DAG and chunk pipelining as the packet level, each
// message on its QP), the others phases separated by barriers (flow/expand.go: the ring's
// and hierarchical ring's steady state, grouped and direct without dependencies);
// reductions are free. A collective not done
// by run.duration, or a stall (a flow at rate 0), stops the run naming the unfinished ones.
// It uses the topology only, never res.Net (the packet fabric).
func runCollectiveFlow(sc *scenario.Scenario, layout topo.Topology, res *Result, groups []collGroup, iters int) error {
	s := res.Sim
	p := layout.Params()
	hosts := layout.NumHosts()
	up := scaleUpModel(p)
	var upRate sim.Rate
	var upLat sim.Time
	if up != nil {
		upRate, upLat = up.Rate, up.Latency
	}
	base, caps, err := scenarioFlowRouter(sc, layout, p.ScaleUpGPUs, upRate, upLat)
	if err != nil {
		return err
	}
	router := newMsgRouter(base)
	stop := func(now sim.Time, err error) { s.Stop(err) }
	ncfg, ccfg := flow.Config{OnStall: stop}, flow.CollConfig{OnError: stop}
	// links.csv: the links' bytes at the series' boundaries, read as the fluid state advances
	// (flowlinks.go), as at flow level for traffic and training.
	var links *flowLinkFeed
	ncfg.OnAdvance = func(now sim.Time) {
		if links != nil {
			links.observe(now)
		}
	}
	var ff *flowFaults
	var fc *flow.Collectives
	ff, err = runFlowFaults(sc, layout, res, base, caps, &ncfg, &ccfg,
		stopOnQPError(s, &ff, &fc, func(l int) string { return flowLinkName(layout, base, l) }))
	if err != nil {
		return err
	}
	fnet, err := flow.New(s, caps, ncfg)
	if err != nil {
		return &InputError{Err: err}
	}
	links = newFlowLinkSeries(layout, base, fnet, sc.Run.SampleInterval)
	ceil, err := newFlowCeiling(s, fnet, router, base, p.HostLink, ff != nil)
	if err != nil {
		return err
	}
	if fc, err = flow.NewCollectives(fnet, ceilRouter(router, ceil), ccfg); err != nil {
		return &InputError{Err: err}
	}
	if ff != nil {
		ff.ceil = ceil
	}
	// Collectives of up to flowScheduleMaxOps operations run their packet-level schedule
	// message by message (flow/dag.go); larger ones, and direct and grouped, their phases
	// (flow/expand.go).
	fc.SetSchedules(flowScheduleMaxOps)
	if ff != nil {
		ff.start(fnet, fc)
	}
	nicPayload := sim.Rate(float64(p.HostLink*sim.Rate(p.Planes)) * payloadShare(base.model))
	run := &CollectiveRun{Model: collective.Model{Latency: flowBaseLatency(layout), Rate: nicPayload},
		ScaleUp: up, Engine: "flow", NICRate: p.HostLink * sim.Rate(p.Planes)}
	if up != nil {
		run.Domain = p.ScaleUpGPUs
	}
	res.Collective = run

	w := &sweepState{s: s, meter: res.meter}
	e := &flowColl{w: w, run: run, fc: fc, groups: groups, router: router, ff: ff, linkName: func(l int) string { return flowLinkName(layout, base, l) },
		specs: make([]collective.Spec, len(groups)), done: make([]collective.Result, len(groups))}
	rowsOut, err := sweepCollectives(sc, w, run, groups, iters, e)
	var stall *stallError
	if err != nil && !errors.As(err, &stall) {
		return err
	}
	if stall != nil {
		res.stall = stall.Error()
	}
	end := s.Now()
	st := fnet.Stats()
	run.Flow = &st
	res.trafficEnd = end
	if links != nil {
		links.finish(end)
		res.Links = links.ls
	}
	res.Summary = Summary{Scenario: sc.Name, Seed: sc.Run.Seed, Hosts: hosts, Planes: p.Planes,
		Switches: layout.NumNodes() - hosts, Links: layout.NumLinks(), Flows: int(st.FlowsAdded),
		DurationUs: us(end), EndUs: us(end), Events: s.Events(), Engine: "flow", Collectives: rowsOut}
	return nil
}

// flowColl is the flow-level collEngine: package flow's collectives over the topology, each
// step's specs resolved by flowSpec.
type flowColl struct {
	w      *sweepState
	run    *CollectiveRun
	fc     *flow.Collectives
	router *collRouter
	groups []collGroup
	specs  []collective.Spec
	done   []collective.Result // each collective's last launch, completed or not
	// ff is the run's fault model (nil without faults) and linkName its links' names, for
	// naming what a failure left stalled.
	ff       *flowFaults
	linkName func(int) string
}

// prepare resolves collective g's spec sp for the flow engine.
func (e *flowColl) prepare(g int, sp collective.Spec) (err error) {
	e.specs[g], err = flowSpec(sp)
	return err
}

// spec returns collective g's resolved spec.
func (e *flowColl) spec(g int) collective.Spec { return e.specs[g] }

// launch starts collective g on the flow engine, its result (numbered in launch order)
// completed when the engine reports it done.
func (e *flowColl) launch(g int, name string) error {
	s := e.w.s
	start := s.Now()
	e.done[g] = collective.Result{ID: len(e.run.Instances) + e.w.running, Name: name, Spec: e.specs[g], Hosts: e.groups[g].comm.Hosts(),
		Start: start, End: sim.MaxTime}
	r := &e.done[g]
	sched := e.fc.Schedules(e.specs[g])
	e.router.setConnPlanes(e.specs[g], e.groups[g].comm, sched)
	e.router.setConnOwners(e.specs[g], e.groups[g].comm, transport.CollectiveOwner(g), sched)
	err := e.fc.Launch(start, e.specs[g], e.groups[g].comm, name, func(now sim.Time) {
		r.End, r.Done = now, true
		e.w.finished()
	})
	if err != nil {
		return &InputError{Err: fmt.Errorf("workload.collectives[%d]: %w", g, err)}
	}
	return nil
}

// settle reports a drain error or the collectives still running, with the flow engine's
// account of the unfinished ones.
func (e *flowColl) settle(drainErr error, running int, limit sim.Time) error {
	s := e.w.s
	if drainErr != nil {
		return fmt.Errorf("run stopped at %v: %w (%v)", s.Now(), drainErr, e.fc.Incomplete())
	}
	if running > 0 {
		// The clock stops at the last event before the limit (a long flow has none in
		// between), so the limit is when the run gave up.
		at, why := limit, fmt.Sprintf("run.duration (%v) reached; raise it if they were still progressing", limit)
		if s.NextAt() == sim.MaxTime {
			at, why = s.Now(), "nothing left to happen"
		}
		stuck := ""
		if e.ff != nil {
			if st := e.ff.stuck(e.linkName); st != "" {
				stuck = "; " + st
			}
		}
		return &stallError{fmt.Errorf("%d collective(s) not done at %v (%s): %v%s", running, at, why, e.fc.Incomplete(), stuck)}
	}
	return nil
}

// result returns collective g's last launch.
func (e *flowColl) result(g int) (collective.Result, error) { return e.done[g], nil }

// sent returns the most payload one rank sends in collective g's flow-level expansion.
func (e *flowColl) sent(g int) (int64, error) { return flowSentMax(e.specs[g]) }

// split returns where collective g's bytes go in scale-up domains of domain hosts: the
// one-chunk schedule of its spec (Schedule.DomainBytes; the flow engine's expansion moves
// the same bytes between the same ranks).
func (e *flowColl) split(g, domain int) (collective.DomainSplit, error) {
	one := e.specs[g]
	one.ChunkBytes = max(one.Bytes, 1)
	sch, err := collective.Build(one)
	if err != nil {
		return collective.DomainSplit{}, err
	}
	return sch.DomainBytes(e.groups[g].comm, domain)
}

// flowSpec resolves sp for the flow engine; an all-to-all with a byte matrix gets Bytes = its
// largest row sum, as collective.Build reports it.
func flowSpec(sp collective.Spec) (collective.Spec, error) {
	if sp.Matrix != nil {
		sp.Bytes = 0
		for _, row := range sp.Matrix {
			var sum int64
			for _, b := range row {
				sum += b
			}
			sp.Bytes = max(sp.Bytes, sum)
		}
	}
	return sp.Resolve()
}

// flowBaseLatency is the one-way latency of the longest minimal path between two hosts,
// propagation and forwarding only: topo.Sizing.WorstCaseLatency without its serialisation of
// one SizingPacketBytes packet on the two host links and on every fabric hop: the alpha of
// the flow-level rows' model column. A flow on that path is charged this plus one packet's
// store and forward per link after its first (flowRouter.storeForward).
func flowBaseLatency(t topo.Topology) sim.Time {
	z := t.Sizing()
	p := t.Params()
	lat := z.WorstCaseLatency - 2*p.HostLink.TxTime(topo.SizingPacketBytes) - sim.Time(z.DiameterHops)*p.FabricLink.TxTime(topo.SizingPacketBytes)
	return max(lat, 0)
}

// flowSentMax returns the most payload one rank sends in sp's flow-level expansion (sp
// resolved; flow/expand.go): the flow engine's counterpart of the schedule's SentBytes.
// With n ranks and S bytes: ring all-reduce 2(n-1)/n S; reduce-scatter and all-gather
// (n-1)/n S; chain broadcast and reduce, send/recv S; all-to-all the largest row sum
// without the diagonal; halving-doubling sum over its phases of S d/p (plus S for a folded
// rank); recursive doubling lg p x S (plus S); hierarchical 2(I-1)/I S + 2(O-1)/O S/I; the
// double binary tree from its one-chunk schedule (about 2n ops).
func flowSentMax(sp collective.Spec) (int64, error) {
	n, S := sp.Ranks, sp.Bytes
	if n <= 1 {
		return 0, nil
	}
	frac := func(b int64, num, den int) int64 { return int64(math.Round(float64(b) * float64(num) / float64(den))) }
	p := 1 << (bits.Len(uint(n)) - 1)
	lg := bits.Len(uint(p)) - 1
	fold := int64(0)
	if p < n {
		fold = S
	}
	switch sp.Algo {
	case collective.Ring:
		switch sp.Op {
		case collective.AllReduce:
			return frac(S, 2*(n-1), n), nil
		case collective.ReduceScatter, collective.AllGather:
			return frac(S, n-1, n), nil
		}
		return S, nil // a chain: every rank but one end sends the buffer once
	case collective.Direct:
		return S, nil
	case collective.Pairwise, collective.Grouped:
		var most int64
		for i := 0; i < n; i++ {
			var w int64
			if sp.Matrix != nil {
				for j, b := range sp.Matrix[i] {
					if j != i {
						w += b
					}
				}
			} else {
				w = S - (S/int64(n) + boolInt64(int64(i) < S%int64(n))) // every share but its own
			}
			most = max(most, w)
		}
		return most, nil
	case collective.HalvingDoubling:
		var w int64
		for d := 1; d < p; d <<= 1 {
			w += frac(S, d, p)
		}
		if sp.Op == collective.AllReduce {
			return 2*w + fold, nil
		}
		return w, nil
	case collective.RecursiveDoubling:
		return int64(lg)*S + fold, nil
	case collective.Hierarchical:
		I, O := sp.Inner, sp.Outer
		return 2*frac(S, I-1, I) + frac((S+int64(I)-1)/int64(I), 2*(O-1), O), nil
	}
	one := sp
	one.ChunkBytes = max(S, 1)
	sch, err := collective.Build(one)
	if err != nil {
		return 0, err
	}
	var most int64
	for r := 0; r < sch.Ranks(); r++ {
		most = max(most, sch.SentBytes(r))
	}
	return most, nil
}

func boolInt64(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// collRouter is the flow router of workloads (collectives, training): newFlowRouter's, which follows
// source routes and so knows no path between hosts whose minimal paths cross more than
// topo.MaxHops switches (NumPaths 0: a regular 4x4x8 torus's farthest chips are 8 hops and
// 9 routers apart), and for those pairs the same choice over Topology.LinkPath, which has no
// length limit: MRC sprays over up to ev.active minimal paths sampled evenly, RoCE hashes
// one per plane. LinkPath takes a path index modulo the pair's path count, which the
// topology does not report beyond MaxHops; collRouter counts the minimal paths itself by a
// breadth-first search toward the destination, as topo.Graph does (saturating at
// topo.MaxPathsPerPair), caching the counts of recent destinations.
type collRouter struct {
	*flowRouter
	nbr     [][]int32 // node -> the node at the far end of each of its links (built on first use)
	counts  map[int][]uint32
	fifo    []int
	dist    []int32
	queue   []int32
	lbuf    []int32
	longBuf []int32
	// msgPlanes, for a transport that does not spray, maps a collective connection's key to
	// the QPs its messages use (setMsgPlanes); nil: every QP of every plane.
	msgPlanes map[uint64]msgQPs
	qpMark    []bool
}

// collRouterCacheBytes bounds the memory of collRouter's path counts.
const collRouterCacheBytes = 64 << 20

// Paths implements flow.Router: the paths of allPaths, cut to the QPs of the connection
// (msgPlanes).
func (r *collRouter) Paths(src, dst int, key uint64, buf []flow.Path) ([]flow.Path, sim.Time, error) {
	buf, lat, err := r.allPaths(src, dst, key, buf)
	if err != nil || r.msgPlanes == nil {
		return buf, lat, err
	}
	if set, ok := r.msgPlanes[key]; ok {
		buf = r.keepQPs(set, buf)
	}
	return buf, lat, nil
}

// allPaths returns every path of a flow: newFlowRouter's, or for hosts farther apart than
// topo.MaxHops the same choice over Topology.LinkPath.
func (r *collRouter) allPaths(src, dst int, key uint64, buf []flow.Path) ([]flow.Path, sim.Time, error) {
	if r.domain > 1 && src/r.domain == dst/r.domain || r.t.NumPaths(src, dst) > 0 {
		return r.flowRouter.Paths(src, dst, key, buf)
	}
	if src < 0 || dst < 0 || src >= r.t.NumHosts() || dst >= r.t.NumHosts() || src == dst {
		return nil, 0, fmt.Errorf("no path from h%d to h%d in the topology", src, dst)
	}
	per := r.perPlane(src, dst)
	if per == 0 {
		return nil, 0, fmt.Errorf("no path from h%d to h%d in the topology", src, dst)
	}
	var live func(i int) bool
	if r.dead != nil {
		live = func(i int) bool {
			links, _, err := r.t.LinkPath(src, dst, i, r.lbuf)
			if err != nil {
				return false
			}
			r.lbuf = links
			for _, d := range links {
				if int(d) < len(r.dead) && r.dead[d] {
					return false
				}
			}
			return true
		}
	}
	idx := r.pick(src, dst, per, key, live)
	// Carve every path from one array, grown first so that the slices stay valid.
	r.longBuf = r.longBuf[:0]
	starts := make([]int, 0, len(idx)+1)
	var lat sim.Time
	for _, i := range idx {
		links, l, err := r.t.LinkPath(src, dst, i, r.lbuf)
		if err != nil {
			return nil, 0, err
		}
		r.lbuf = links
		starts = append(starts, len(r.longBuf))
		r.longBuf = append(r.longBuf, links...)
		lat = max(lat, l)
	}
	starts = append(starts, len(r.longBuf))
	buf = buf[:0]
	for k := range idx {
		seg := r.longBuf[starts[k]:starts[k+1]:starts[k+1]]
		buf = append(buf, flow.Path{Links: seg, Weight: 1})
	}
	if r.dead != nil && !r.spray {
		lat = r.detours(src, dst, key, idx, buf, lat)
	}
	return buf, lat, nil
}

// perPlane returns the number of minimal paths from src to dst in each plane (the smallest
// over planes, capped so all planes together stay within topo.MaxPathsPerPair), 0 when they
// are not connected.
func (r *collRouter) perPlane(src, dst int) int {
	cnt := r.pathCounts(dst)
	per := topo.MaxPathsPerPair / r.planes
	for plane := range r.planes {
		e, ok := r.t.Peer(src, plane)
		switch {
		case !ok:
			return 0
		case e.Node == dst:
			per = min(per, 1)
		case cnt[e.Node] == 0:
			return 0
		default:
			per = min(per, int(cnt[e.Node]))
		}
	}
	return per
}

// pathCounts returns, for every node, its number of minimal paths to host dst through
// switches (hosts do not forward; 0 for hosts and unreachable switches), saturating at
// topo.MaxPathsPerPair: the count of a switch at distance d is the sum over its links to
// switches at distance d-1 of theirs, a switch next to dst counting its links to it.
func (r *collRouter) pathCounts(dst int) []uint32 {
	if c, ok := r.counts[dst]; ok {
		return c
	}
	nodes, hosts := r.t.NumNodes(), r.t.NumHosts()
	if r.nbr == nil {
		r.nbr = make([][]int32, nodes)
		for _, l := range r.links {
			r.nbr[l.A.Node] = append(r.nbr[l.A.Node], int32(l.B.Node))
			r.nbr[l.B.Node] = append(r.nbr[l.B.Node], int32(l.A.Node))
		}
		r.dist = make([]int32, nodes)
		r.counts = map[int][]uint32{}
	}
	cnt := make([]uint32, nodes)
	for i := range r.dist {
		r.dist[i] = -1
	}
	r.queue = r.queue[:0]
	for _, y := range r.nbr[dst] {
		if int(y) < hosts {
			continue
		}
		if r.dist[y] < 0 {
			r.dist[y] = 1
			r.queue = append(r.queue, y)
		}
		cnt[y] = min(cnt[y]+1, topo.MaxPathsPerPair)
	}
	for q := 0; q < len(r.queue); q++ { // breadth first: distances in order
		x := r.queue[q]
		for _, y := range r.nbr[x] {
			if int(y) >= hosts && r.dist[y] < 0 {
				r.dist[y] = r.dist[x] + 1
				r.queue = append(r.queue, y)
			}
		}
	}
	for _, x := range r.queue {
		if r.dist[x] == 1 {
			continue
		}
		var c uint32
		for _, y := range r.nbr[x] {
			if int(y) >= hosts && r.dist[y] == r.dist[x]-1 {
				c = min(c+cnt[y], topo.MaxPathsPerPair)
			}
		}
		cnt[x] = c
	}
	limit := max(16, collRouterCacheBytes/(4*nodes))
	for len(r.fifo) >= limit {
		delete(r.counts, r.fifo[0])
		r.fifo = r.fifo[1:]
	}
	r.counts[dst] = cnt
	r.fifo = append(r.fifo, dst)
	return cnt
}

// newMsgRouter returns the collective router over base that, for a transport that does not
// spray (RoCE) on more than one plane, keeps each collective connection on the planes its
// messages use at packet level (setMsgPlanes; call it before each Launch).
func newMsgRouter(base *flowRouter) *collRouter {
	r := &collRouter{flowRouter: base}
	if !base.spray && base.planes > 1 {
		r.msgPlanes = map[uint64]msgQPs{}
	}
	return r
}

// setMsgPlanes records, for a transport that does not spray (RoCE: r.msgPlanes not nil),
// the QPs each connection of collective sp on comm uses, keyed as package flow keys its
// Router calls (a hash of the communicator's hosts, plus the channel: flow.Collectives).
// The packet level carries a collective message whole on one QP, the Q = qps_per_peer x
// planes QPs of a host pair (QP i on plane i mod planes) taken round robin message by message
// (rocenic.Endpoint.Send: a message is not striped), so a pair with m messages in
// flight uses min(m, Q) QPs on min(m, planes) ports, not all of them: a ring all-reduce whose
// per-rank segment is one chunk has one message in flight per channel and runs at one port's
// rate. The fluid model gives logical channel c (tree: 2c+t) of C' the QPs (c + jC') mod Q,
// j < L (msgLoops: its chunk messages to one peer posted at once), the order in which the
// packet level posts its first messages (loop-major, channels interleaved). For the tree,
// whose pipeline keeps fewer chunks in flight on an edge than it posts, this is an
// approximation (docs/flow-agreement.md, "Residuals"). A later collective on the same hosts
// replaces the record.
func (r *collRouter) setMsgPlanes(sp collective.Spec, comm collective.Comm) {
	r.setConnPlanes(sp, comm, false)
}

// setConnPlanes is setMsgPlanes for a collective that runs the phase model (sched false) or
// the schedule model (sched true: flow.Collectives.Schedules), which posts each message on
// one QP, so key ScheduleKey(key0) + q is QP q alone. The two models' keys differ
// (ScheduleKey), so a phase-model and a schedule-model collective on the same hosts at once
// keep their own records.
func (r *collRouter) setConnPlanes(sp collective.Spec, comm collective.Comm, sched bool) {
	if r.msgPlanes == nil {
		return
	}
	key0 := commKey(comm)
	if sched {
		// The schedule model (flow/dag.go) posts each message on one QP, round robin
		// as the packet level does: key ScheduleKey(key0) + q is QP q alone.
		key0 = r.ScheduleKey(key0)
		for q := range max(r.paths, 1) * r.planes {
			r.msgPlanes[key0+uint64(q)] = msgQPs{first: q, stride: 1, count: 1}
		}
		return
	}
	chans, loops := msgLoops(sp)
	for c := range chans {
		r.msgPlanes[key0+uint64(c)] = msgQPs{first: c, stride: chans, count: loops}
	}
}

// setOwners records owner (transport.CollectiveOwner of the packet level's QP group) behind
// the Router key of every logical channel of collective sp on comm (msgLoops), so that each
// of its QPs takes the path its packets hash to (flowRouter.hashedWalk). A later collective
// on the same hosts replaces the record, as setMsgPlanes's.
func (r *collRouter) setOwners(sp collective.Spec, comm collective.Comm, owner uint64) {
	r.setConnOwners(sp, comm, owner, false)
}

// setConnOwners is setOwners for a collective that runs the phase model (sched false: a key
// per logical channel) or the schedule model (sched true: flow.Collectives.Schedules, a key
// ScheduleKey(key0) + q per QP q of the pair, flow/dag.go).
func (r *collRouter) setConnOwners(sp collective.Spec, comm collective.Comm, owner uint64, sched bool) {
	key0 := commKey(comm)
	keys, _ := msgLoops(sp)
	if sched {
		key0 = r.ScheduleKey(key0)
		keys = 1
		if !r.spray {
			keys = max(r.paths, 1) * r.planes
		}
	}
	for c := range keys {
		r.setOwner(key0+uint64(c), owner)
	}
}

// msgQPs is the QPs of a host pair one collective connection's messages use: (first +
// j x stride) mod Q for j < count, Q the pair's QPs.
type msgQPs struct{ first, stride, count int }

// commKey is the base of the Router keys package flow gives comm's connections: a 64-bit
// FNV-1a hash of its hosts (4 bytes each, little-endian), mixed (flow.Collectives.Launch).
func commKey(comm collective.Comm) uint64 { return sim.Mix64(comm.Hash()) }

// msgLoops returns the logical channels of sp's packet-level schedule (Channels; the tree
// 2 x Channels) and how many chunk messages one of them posts to a peer at once: the loops of
// package collective's builders (ring.go, hier.go, hd.go, tree.go, alltoall.go), each
// channel's ceil(Bytes/channels) cut into loops of (ranks in the ring or exchange) x
// ChunkBytes (ring, hierarchical, halving-doubling) or ChunkBytes (the others; an
// all-to-all's per-peer share).
func msgLoops(sp collective.Spec) (chans, loops int) {
	chans = max(sp.Channels, 1)
	chunk := max(sp.ChunkBytes, 1)
	per, part := chunk, ceilDiv64(sp.Bytes, int64(chans))
	switch sp.Algo {
	case collective.Ring:
		if sp.Op == collective.AllReduce || sp.Op == collective.ReduceScatter || sp.Op == collective.AllGather {
			per = int64(sp.Ranks) * chunk
		}
	case collective.Hierarchical:
		per = int64(max(sp.Inner, 1)) * chunk
	case collective.HalvingDoubling:
		per = int64(1<<(bits.Len(uint(sp.Ranks))-1)) * chunk
	case collective.Tree:
		chans *= 2
		part = ceilDiv64(sp.Bytes, int64(chans))
	case collective.Pairwise, collective.Grouped:
		part = ceilDiv64(part, int64(max(sp.Ranks, 1)))
	}
	return chans, int(max(ceilDiv64(part, per), 1))
}

// ceilDiv64 is ceil(a/b) for a >= 0, b > 0.
func ceilDiv64(a, b int64) int64 { return (a + b - 1) / b }

// keepQPs keeps of buf, a RoCE flow's paths (one per QP: r.paths QPs on each plane, plane
// by plane, as flowRouter.pick lists them; path k is QP (k mod paths) x planes + k / paths),
// those of the QPs in set. A buf of another shape (a scale-up pair's one path) is kept whole.
func (r *collRouter) keepQPs(set msgQPs, buf []flow.Path) []flow.Path {
	per := max(r.paths, 1)
	q := per * r.planes
	if len(buf) != q || set.count >= q && set.stride == 1 {
		return buf
	}
	if cap(r.qpMark) < q {
		r.qpMark = make([]bool, q)
	}
	mark := r.qpMark[:q]
	clear(mark)
	for j := 0; j < min(set.count, q); j++ {
		mark[(set.first+j*set.stride)%q] = true
	}
	out := buf[:0]
	for k, p := range buf {
		if mark[(k%per)*r.planes+k/per] {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return buf[:q]
	}
	return out
}

// planeOf returns the plane of directed link d (2k: link k from A to B, 2k+1 back; a
// scale-up or bundle link, past the topology's links, is plane 0).
func (r *collRouter) planeOf(d int32) int {
	if int(d/2) >= len(r.links) {
		return 0
	}
	return r.links[d/2].Plane
}

// flowScheduleMaxOps is the largest schedule (collective.EstimateOps) a collective workload
// runs at flow level message by message (flow.Collectives.SetSchedules); larger collectives
// run their phases. The schedule model costs about 2 us of wall time per op (MRC, 1,024
// hosts: a tree all-reduce of 256 MiB, 5.2 million ops, 10 s; a pairwise all-to-all of 256
// MiB, 2.1 million, 3 s), so the bound keeps one collective to a few seconds; a ring
// all-reduce over 16 ranks of 32 MiB is 4,800 ops, over 1,024 ranks of 1 GiB 10.5 million.
const flowScheduleMaxOps = scenario.FlowScheduleMaxOps

// ScheduleKey implements flow.ScheduleKeyer: the schedule model's keys apart from the phase
// model's (flow.ScheduleKey) for a transport that records something per key (RoCE: the QPs a
// key uses, msgPlanes; its owner, setOwner; the route cache), key itself for one that sprays
// (MRC keeps nothing per key, and its sampled paths stay as they were).
func (r *collRouter) ScheduleKey(key uint64) uint64 {
	if r.spray {
		return key
	}
	return flow.ScheduleKey(key)
}

// QPs implements flow.QPRouter: the connections the transport opens between two hosts for
// one collective, which the schedule model takes round robin message by message: 1 for a
// transport that sprays (MRC: one QP over every plane) and between hosts of one scale-up
// domain, else qps_per_peer on each plane (RoCE: rocenic.Endpoint.Send, QP i on plane i mod
// planes).
func (r *collRouter) QPs(src, dst int) int {
	if r.spray || r.domain > 1 && src/r.domain == dst/r.domain {
		return 1
	}
	return max(r.paths, 1) * r.planes
}
