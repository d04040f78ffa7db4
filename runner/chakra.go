package runner

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/chakra"
	"github.com/lockstepsim/lockstep/workload/chakra/etpb"
	"github.com/lockstepsim/lockstep/workload/collective"
	"github.com/lockstepsim/lockstep/workload/training"
)

// ChakraSummary is summary.json's chakra block (workload.chakra): the step time, from the
// start to the last node's end on any rank (the job completion time), and what ran.
type ChakraSummary struct {
	Trace      string  `json:"trace"` // workload.chakra.path
	Ranks      int     `json:"ranks"`
	Nodes      int     `json:"nodes"` // over all ranks
	StepTimeUs float64 `json:"step_time_us"`
	// FirstRankEndUs and LastRankEndUs: the earliest and latest end of a rank's last node.
	FirstRankEndUs float64 `json:"first_rank_end_us"`
	LastRankEndUs  float64 `json:"last_rank_end_us"`
	// ComputeUsMax is the most computation (sum of duration_micros of non-communication
	// nodes) on one rank; CommUs the time some collective or message was in flight (their
	// union over the run).
	ComputeUsMax  float64 `json:"compute_us_max"`
	CommUs        float64 `json:"comm_us"`
	Collectives   int     `json:"collectives"` // collectives run (each once for all its members)
	Messages      int     `json:"messages"`    // send/recv pairs run
	CommBytes     int64   `json:"comm_bytes"`  // the collectives' sizes plus the messages' payloads
	ProcessGroups int     `json:"process_groups"`
}

// ChakraRun is what a Chakra trace run leaves beyond the summary: every node's ready and end
// times (chakra_nodes.csv).
type ChakraRun struct {
	Trace *chakra.Trace
	// Ready[r][i] and End[r][i] are when rank r's node i became ready (its dependencies done)
	// and completed.
	Ready, End [][]sim.Time
}

// chakraExec executes a trace's per-rank DAGs: computation as timed events, collectives and
// messages through the executor.
type chakraExec struct {
	s     *sim.Sim
	car   chakraCarrier
	cfg   *scenario.Chakra
	tr    *chakra.Trace
	plan  *chakra.Plan
	kComp sim.Kind
	// Per rank: dependencies left per node, successors (CSR), ready and end times.
	left           [][]int32
	succOff, succs [][]int32
	ready, end     [][]sim.Time
	// arrived[g][k]: members that reached group g's k-th collective; p2p[i]: bit 0 the send
	// is ready, bit 1 the receive.
	arrived  [][]int32
	p2p      []uint8
	comms    []collective.Comm
	work     []uint64 // rank<<32|node to complete now
	busy     bool
	nodes    int      // not yet completed
	lastEnd  sim.Time // when the last node completed
	err      error
	inFlight int
	commFrom sim.Time
	commTime sim.Time
	bytes    int64
	colls    int
	msgs     int
}

// runChakra runs workload.chakra on the MRC or RoCE fabric or the ideal network (messages
// inside a scale-up domain on the domain's links, as for collectives), or under run.engine
// flow on the flow-level engine (runChakraFlow): every rank's nodes
// start when their dependencies are done; the run ends when every node has, or stops with
// the ranks and nodes still waiting.
func runChakra(sc *scenario.Scenario, layout topo.Topology, res *Result) error {
	if sc.Fluid() {
		return runChakraFlow(sc, layout, res)
	}
	cfg := sc.Workload.Chakra
	tr, plan := cfg.Trace()
	if tr == nil {
		return &InputError{Err: fmt.Errorf("workload.chakra: the scenario is not resolved")}
	}
	s, net := res.Sim, res.Net
	c := layout.Params()
	nicRate := c.HostLink * sim.Rate(c.Planes)
	var (
		tr0   collective.Transport
		ideal *collective.Ideal
		ep    transport.Endpoint
		err   error
	)
	if sc.Transport.Kind == scenario.TransportIdeal {
		if ideal, err = collective.NewIdeal(s, collective.IdealConfig{Hosts: net.NumHosts(), Rate: nicRate, Latency: sc.Transport.Ideal.Latency}); err != nil {
			return &InputError{Err: err}
		}
		tr0 = ideal
	} else {
		if ep, err = newEndpoint(sc, layout, res); err != nil {
			return err
		}
		tr0 = ep
	}
	var nvl *collective.Ideal
	if up := scaleUpModel(c); up != nil {
		if nvl, err = collective.NewIdeal(s, collective.IdealConfig{Hosts: net.NumHosts(), Rate: up.Rate, Latency: up.Latency}); err != nil {
			return &InputError{Err: fmt.Errorf("topology scale_up: %w", err)}
		}
		split, err := training.NewSplitTransport(c.ScaleUpGPUs, nvl, tr0)
		if err != nil {
			return &InputError{Err: err}
		}
		tr0 = split
	}
	e := newChakraExec(s, cfg, tr, plan)
	pc := &chakraPacket{scheds: map[schedKey]*collective.Schedule{}, done: map[int]func(sim.Time){}, group: map[int]int{}}
	pc.ex, err = collective.NewExecutor(s, tr0, collective.ExecConfig{Hosts: net.NumHosts(), ReduceBytesPerSec: float64(cfg.ReduceRate) / 8, OnDone: pc.onDone})
	if err != nil {
		return &InputError{Err: err}
	}
	e.car = pc
	if ideal != nil {
		ideal.SetSink(pc.ex.Delivered)
	} else {
		ep.SetHooks(transport.Hooks{Delivered: pc.ex.Delivered, Group: func(instance int) int { return pc.group[instance] }})
	}
	if nvl != nil {
		nvl.SetSink(pc.ex.Delivered)
	}
	if res.meter != nil {
		total := float64(e.nodes)
		res.meter.unit = "of the trace's nodes done"
		res.meter.done = func() (float64, float64) { return total - float64(e.nodes), total }
	}
	var smp *sampler
	if ep != nil {
		smp = newEndpointSampler(sc, res, c.Planes, ep)
		smp.start()
	}
	e.start()
	drainErr := s.Drain(sc.Run.Duration)
	if err := e.settle(drainErr, sc.Run.Duration, ep); err != nil {
		return err
	}
	end := s.Now()
	if ep != nil {
		if err := finishTransport(sc, res, ep, smp, end); err != nil {
			return err
		}
	} else {
		res.Summary = Summary{Scenario: sc.Name, Seed: sc.Run.Seed, Hosts: net.NumHosts(), Planes: c.Planes,
			DurationUs: us(end), EndUs: us(end), Events: s.Events()}
	}
	res.Chakra = &ChakraRun{Trace: tr, Ready: e.ready, End: e.end}
	res.Summary.Chakra = e.summary(cfg.Path)
	return nil
}

// newChakraExec lays out the trace's DAGs (the trace was checked when the scenario was
// resolved: every dependency is a node of the rank, no cycle).
func newChakraExec(s *sim.Sim, cfg *scenario.Chakra, tr *chakra.Trace, plan *chakra.Plan) *chakraExec {
	n := len(tr.Ranks)
	e := &chakraExec{s: s, cfg: cfg, tr: tr, plan: plan,
		left: make([][]int32, n), succOff: make([][]int32, n), succs: make([][]int32, n),
		ready: make([][]sim.Time, n), end: make([][]sim.Time, n),
		arrived: make([][]int32, len(plan.Groups)), p2p: make([]uint8, len(plan.P2Ps)),
		comms: make([]collective.Comm, len(plan.Groups)), commFrom: -1}
	e.kComp = s.Register("chakra.compute", e.onCompute)
	for r, rk := range tr.Ranks {
		m := len(rk.Nodes)
		e.nodes += m
		left, off := make([]int32, m), make([]int32, m+1)
		for i := range rk.Nodes {
			left[i] = int32(len(rk.Nodes[i].Deps))
			for _, d := range rk.Nodes[i].Deps {
				off[rk.Index(d)+1]++
			}
		}
		for i := 0; i < m; i++ {
			off[i+1] += off[i]
		}
		succ, fill := make([]int32, off[m]), append([]int32(nil), off[:m]...)
		for i := range rk.Nodes {
			for _, d := range rk.Nodes[i].Deps {
				j := rk.Index(d)
				succ[fill[j]] = int32(i)
				fill[j]++
			}
		}
		e.left[r], e.succOff[r], e.succs[r] = left, off, succ
		e.ready[r], e.end[r] = make([]sim.Time, m), make([]sim.Time, m)
		for i := range e.end[r] {
			e.ready[r][i], e.end[r][i] = -1, -1
		}
	}
	for g := range plan.Groups {
		e.arrived[g] = make([]int32, len(plan.Groups[g].Colls))
		hosts := make([]int, len(plan.Groups[g].Members))
		for m, r := range plan.Groups[g].Members {
			hosts[m] = cfg.Host(r)
		}
		e.comms[g], _ = collective.NewComm(hosts) // distinct hosts: checked by Resolve
	}
	return e
}

// start makes every node without dependencies ready at time 0.
func (e *chakraExec) start() {
	e.busy = true
	for r := range e.left {
		for i, k := range e.left[r] {
			if k == 0 {
				e.makeReady(0, r, int32(i))
			}
		}
	}
	e.drain(0)
}

// makeReady handles rank r's node i whose dependencies are done.
func (e *chakraExec) makeReady(now sim.Time, r int, i int32) {
	e.ready[r][i] = now
	nd := &e.tr.Ranks[r].Nodes[i]
	ref := e.plan.Refs[r][i]
	switch nd.Type {
	case etpb.NodeType_COMM_COLL_NODE:
		g, k := ref.Group, ref.Seq
		if e.arrived[g][k]++; int(e.arrived[g][k]) == len(e.plan.Groups[g].Members) {
			e.launchColl(now, int(g), int(k))
		}
	case etpb.NodeType_COMM_SEND_NODE, etpb.NodeType_COMM_RECV_NODE:
		bit := uint8(1)
		if nd.Type == etpb.NodeType_COMM_RECV_NODE {
			bit = 2
		}
		if e.p2p[ref.P2P] |= bit; e.p2p[ref.P2P] == 3 {
			e.launchP2P(now, int(ref.P2P))
		}
	default:
		if nd.Duration == 0 {
			e.work = append(e.work, uint64(r)<<32|uint64(i))
			return
		}
		e.s.At(now+nd.Duration, e.kComp, int32(r), uint64(i))
	}
}

// launchColl starts group g's k-th collective: every member has reached it.
func (e *chakraExec) launchColl(now sim.Time, g, k int) {
	grp := &e.plan.Groups[g]
	cl := &grp.Colls[k]
	sp, err := e.cfg.Spec(cl.Op, len(grp.Members), cl.Bytes)
	if err == nil {
		done := func(now sim.Time) {
			for m, r := range grp.Members {
				e.work = append(e.work, uint64(r)<<32|uint64(grp.Colls[k].Nodes[m]))
			}
			e.commDone(now)
		}
		if err = e.car.launch(now, sp, e.comms[g], fmt.Sprintf("%s/%s#%d", groupName(grp.Name), cl.Op, k), g, done); err == nil {
			e.commStart(now, cl.Bytes)
			e.colls++
			return
		}
	}
	e.fail(fmt.Errorf("process group %s collective %d (%s of %d bytes): %w", groupName(grp.Name), k, cl.Op, cl.Bytes, err))
}

// launchP2P starts message i: its send and its receive are both ready.
func (e *chakraExec) launchP2P(now sim.Time, i int) {
	m := &e.plan.P2Ps[i]
	sp, err := e.cfg.Spec(collective.SendRecv, 2, m.Bytes)
	if err == nil {
		var comm collective.Comm
		if comm, err = collective.NewComm([]int{e.cfg.Host(m.Src), e.cfg.Host(m.Dst)}); err == nil {
			done := func(now sim.Time) {
				e.work = append(e.work, uint64(m.Src)<<32|uint64(m.SendNode), uint64(m.Dst)<<32|uint64(m.RecvNode))
				e.commDone(now)
			}
			if err = e.car.launch(now, sp, comm, fmt.Sprintf("send %d->%d tag %d", m.Src, m.Dst, m.Tag), len(e.plan.Groups), done); err == nil {
				e.commStart(now, m.Bytes)
				e.msgs++
				return
			}
		}
	}
	e.fail(fmt.Errorf("message from rank %d to rank %d tag %d: %w", m.Src, m.Dst, m.Tag, err))
}

// commStart and commEnd keep the union of the times communication was in flight.
func (e *chakraExec) commStart(now sim.Time, bytes int64) {
	if e.inFlight == 0 {
		e.commFrom = now
	}
	e.inFlight++
	e.bytes += bytes
}

func (e *chakraExec) commEnd(now sim.Time) {
	if e.inFlight--; e.inFlight == 0 {
		e.commTime += now - e.commFrom
	}
}

// commDone completes what a finished collective or message queued (its nodes on every
// member, or its send and its receive).
func (e *chakraExec) commDone(now sim.Time) {
	e.commEnd(now)
	if !e.busy {
		e.busy = true
		e.drain(now)
	}
}

// onCompute completes a computation node.
func (e *chakraExec) onCompute(now sim.Time, r int32, i uint64) {
	e.work = append(e.work, uint64(r)<<32|i)
	e.busy = true
	e.drain(now)
}

// drain completes the queued nodes and readies their successors, pausing the clock when the
// last node of the trace is done.
func (e *chakraExec) drain(now sim.Time) {
	for len(e.work) > 0 {
		w := e.work[len(e.work)-1]
		e.work = e.work[:len(e.work)-1]
		r, i := int(w>>32), int32(uint32(w))
		e.end[r][i] = now
		e.nodes--
		e.lastEnd = now
		off := e.succOff[r]
		for _, s := range e.succs[r][off[i]:off[i+1]] {
			if e.left[r][s]--; e.left[r][s] == 0 {
				e.makeReady(now, r, s)
			}
		}
	}
	e.busy = false
	if e.nodes == 0 {
		e.s.Pause()
	}
}

func (e *chakraExec) fail(err error) {
	if e.err == nil {
		e.err = err
		e.s.Stop(err)
	}
}

// settle returns the error that stops the run: the drain's or the executor's, or nodes not
// done at the end, naming the ranks and what their first waiting nodes wait on.
func (e *chakraExec) settle(drainErr error, limit sim.Time, ep transport.Endpoint) error {
	s := e.s
	switch {
	case e.err != nil:
		return fmt.Errorf("chakra trace stopped at %v: %w", s.Now(), e.err)
	case drainErr != nil:
		return fmt.Errorf("run stopped at %v: %w", s.Now(), drainErr)
	case e.car.err() != nil:
		return fmt.Errorf("chakra trace stopped at %v: %w", s.Now(), e.car.err())
	case e.nodes == 0:
		return nil
	}
	why := fmt.Sprintf("run.duration (%v) reached; raise it if the trace was still progressing", limit)
	if s.NextAt() == sim.MaxTime {
		why = "nothing left to happen: the trace is deadlocked"
	}
	if errs := endpointErrs(ep); len(errs) > 0 {
		why = fmt.Sprintf("%d QP(s) gave up, the first: %v", len(errs), errs[0])
	}
	return fmt.Errorf("chakra trace %s: %d node(s) not done at %v, the last node completed at %v (%s); %s", e.cfg.Path, e.nodes, s.Now(), e.lastEnd, why, e.stuck(8))
}

// stuck describes up to max ranks with nodes not done: each one's first ready node left
// waiting and what it waits on, or the first node whose dependencies are not done.
func (e *chakraExec) stuck(max int) string {
	var parts []string
	ranks := 0
	for r, rk := range e.tr.Ranks {
		var what string
		for i := range rk.Nodes {
			if e.end[r][i] >= 0 || e.ready[r][i] < 0 {
				continue
			}
			what = e.waitsOn(r, i)
			break
		}
		if what == "" {
			for i := range rk.Nodes {
				if e.end[r][i] < 0 {
					what = fmt.Sprintf("node id %d (%q) waits on its dependencies", rk.Nodes[i].ID, rk.Nodes[i].Name)
					break
				}
			}
		}
		if what == "" {
			continue
		}
		if ranks++; ranks <= max {
			parts = append(parts, fmt.Sprintf("rank %d: %s", r, what))
		}
	}
	if ranks > max {
		parts = append(parts, fmt.Sprintf("and %d more rank(s)", ranks-max))
	}
	return "waiting: " + strings.Join(parts, "; ")
}

// waitsOn says what rank r's ready node i waits on.
func (e *chakraExec) waitsOn(r, i int) string {
	nd := &e.tr.Ranks[r].Nodes[i]
	ref := e.plan.Refs[r][i]
	label := fmt.Sprintf("node id %d (%q)", nd.ID, nd.Name)
	switch nd.Type {
	case etpb.NodeType_COMM_COLL_NODE:
		grp := &e.plan.Groups[ref.Group]
		cl := &grp.Colls[ref.Seq]
		var missing []string
		for m, mr := range grp.Members {
			if e.ready[mr][cl.Nodes[m]] < 0 {
				missing = append(missing, fmt.Sprintf("rank %d node id %d", mr, e.tr.Ranks[mr].Nodes[cl.Nodes[m]].ID))
			}
		}
		if len(missing) == 0 {
			return label + fmt.Sprintf(": %s collective %d of process group %s is under way", cl.Op, ref.Seq, groupName(grp.Name))
		}
		if len(missing) > 4 {
			missing = append(missing[:4], fmt.Sprintf("%d more", len(missing)-4))
		}
		return label + fmt.Sprintf(": %s collective %d of process group %s waits for %s to reach it", cl.Op, ref.Seq, groupName(grp.Name), strings.Join(missing, ", "))
	case etpb.NodeType_COMM_SEND_NODE, etpb.NodeType_COMM_RECV_NODE:
		m := &e.plan.P2Ps[ref.P2P]
		if e.p2p[ref.P2P] == 3 {
			return label + fmt.Sprintf(": the message from rank %d to rank %d tag %d is under way", m.Src, m.Dst, m.Tag)
		}
		if nd.Type == etpb.NodeType_COMM_SEND_NODE {
			return label + fmt.Sprintf(": its receive at rank %d (node id %d) is not ready", m.Dst, e.tr.Ranks[m.Dst].Nodes[m.RecvNode].ID)
		}
		return label + fmt.Sprintf(": its send at rank %d (node id %d) is not ready", m.Src, e.tr.Ranks[m.Src].Nodes[m.SendNode].ID)
	}
	return label + " is computing"
}

func groupName(name string) string {
	if name == "" {
		return "(all ranks)"
	}
	return strconv.Quote(name)
}

// summary returns the run's chakra block.
func (e *chakraExec) summary(path string) *ChakraSummary {
	out := &ChakraSummary{Trace: path, Ranks: len(e.tr.Ranks), Collectives: e.colls, Messages: e.msgs, CommBytes: e.bytes,
		ProcessGroups: len(e.plan.Groups), CommUs: us(e.commTime)}
	first := sim.MaxTime
	var last sim.Time
	for r, rk := range e.tr.Ranks {
		out.Nodes += len(rk.Nodes)
		var rankEnd, comp sim.Time
		for i := range rk.Nodes {
			rankEnd = max(rankEnd, e.end[r][i])
			if !rk.Nodes[i].IsComm() {
				comp += rk.Nodes[i].Duration
			}
		}
		first, last = min(first, rankEnd), max(last, rankEnd)
		out.ComputeUsMax = max(out.ComputeUsMax, us(comp))
	}
	if len(e.tr.Ranks) == 0 {
		first = 0
	}
	out.StepTimeUs, out.FirstRankEndUs, out.LastRankEndUs = us(last), us(first), us(last)
	return out
}

// StepTime returns the trace's step time: the latest end of any node.
func (c *ChakraRun) StepTime() sim.Time {
	var t sim.Time
	for _, ends := range c.End {
		for _, x := range ends {
			t = max(t, x)
		}
	}
	return t
}

// WriteNodesCSV writes chakra_nodes.csv: one row per node, by rank then file order: rank,
// node_id, name, type, the collective op or peer, bytes, ready_us (dependencies done),
// end_us, and duration_us = end - ready (for a collective: from this rank's arrival, its
// wait for the others included).
func (c *ChakraRun) WriteNodesCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"rank", "node_id", "name", "type", "comm", "peer", "bytes", "ready_us", "end_us", "duration_us"}); err != nil {
		return err
	}
	f := func(t sim.Time) string { return strconv.FormatFloat(us(t), 'f', -1, 64) }
	for r, rk := range c.Trace.Ranks {
		for i := range rk.Nodes {
			nd := &rk.Nodes[i]
			comm, peer := "", ""
			switch nd.Type {
			case etpb.NodeType_COMM_COLL_NODE:
				comm = nd.Comm.String()
			case etpb.NodeType_COMM_SEND_NODE, etpb.NodeType_COMM_RECV_NODE:
				peer = strconv.Itoa(nd.Peer)
			}
			row := []string{strconv.Itoa(r), strconv.FormatUint(nd.ID, 10), nd.Name, nd.Type.String(), comm, peer,
				strconv.FormatInt(nd.Bytes, 10), f(c.Ready[r][i]), f(c.End[r][i]), f(c.End[r][i] - c.Ready[r][i])}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// chakraCarrier is what carries a trace's collectives and messages: the executor over a
// packet-level transport or the ideal network (chakraPacket), or the flow-level engine
// (chakraFlow, chakra_flow.go).
type chakraCarrier interface {
	// launch starts sp on comm now under name, its messages on QP group group; done is
	// called once, from a simulation event, when it completes.
	launch(now sim.Time, sp collective.Spec, comm collective.Comm, name string, group int, done func(now sim.Time)) error
	// err returns an asynchronous error that stopped the carrier, or nil.
	err() error
}

// chakraPacket carries a trace's communication through the collective executor.
type chakraPacket struct {
	ex     *collective.Executor
	scheds map[schedKey]*collective.Schedule
	done   map[int]func(sim.Time) // executor instance -> its completion
	group  map[int]int            // executor instance -> QP group
}

// schedKey is what tells a trace's schedules apart (the rest of the spec is the scenario's).
type schedKey struct {
	op    collective.Collective
	ranks int
	bytes int64
}

// launch builds (or reuses) sp's schedule and launches it on the executor.
func (c *chakraPacket) launch(now sim.Time, sp collective.Spec, comm collective.Comm, name string, group int, done func(sim.Time)) error {
	k := schedKey{sp.Op, sp.Ranks, sp.Bytes}
	sch, ok := c.scheds[k]
	if !ok {
		var err error
		if sch, err = collective.Build(sp); err != nil {
			return err
		}
		c.scheds[k] = sch
	}
	id, err := c.ex.Launch(now, sch, comm, name)
	if err != nil {
		return err
	}
	c.done[id], c.group[id] = done, group
	return nil
}

// onDone runs a finished instance's completion.
func (c *chakraPacket) onDone(now sim.Time, id int) {
	if f, ok := c.done[id]; ok {
		delete(c.done, id)
		f(now)
	}
}

func (c *chakraPacket) err() error { return c.ex.Err() }
