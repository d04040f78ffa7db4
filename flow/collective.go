package flow

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// Router tells Collectives how flows cross the fabric.
//
// Paths returns the weighted paths (directed link indexes of the Net, see Path) that a flow
// from host src to host dst with the given key takes, and its one-way latency (propagation
// plus switch hops; the latency of one message between the two hosts). key identifies the
// connection (QP, NCCL channel): a RoCE-like router hashes (src, dst, key) to pick one ECMP
// path of weight 1; an MRC-like router ignores it and returns every minimal path with equal
// weights. Weights need not be normalised. The result is appended to buf[:0] (which may be
// returned grown); the Links slices need only stay valid until the next call. Errors: no
// path (a host out of range, a partitioned fabric); Collectives reports them with the
// collective's name.
type Router interface {
	Paths(src, dst int, key uint64, buf []Path) ([]Path, sim.Time, error)
}

// CollConfig configures Collectives.
type CollConfig struct {
	// FlowCap is every collective flow's rate ceiling in bits per second (a NIC line rate or a
	// transport's ceiling); 0 means none (the links alone limit the flows).
	FlowCap float64
	// OnError, if set, is called with every asynchronous error: a Router error when a phase
	// starts (the collective then never completes) and a Net stall (Config.OnStall). A runner
	// typically stops the simulation with it.
	OnError func(now sim.Time, err error)
	// Reroutable keeps what each flow was routed from (a few dozen bytes per flow in
	// flight), so that Reroute can route it again after the Router's view of the fabric
	// changed (a failure). Off, Reroute is an error.
	Reroutable bool
	// TailLoss, if set, is the probability that a message sent over a path (its directed
	// links) loses its last packet, which a transport without a tail-loss probe (RoCE's
	// go-back-N) recovers only at its retransmission timer, TailRTO later. A channel's
	// message of a step takes one of its demand's paths (by weight), so it loses its tail
	// with the weighted mean P of its paths; each step of a phase (phase.K of them, the
	// flows in lockstep) waits TailRTO when one of its messages (every demand, every
	// channel) lost its tail, drawn with probability 1 - prod(1 - P_message) from a stream
	// seeded by TailSeed; TailWaits counts the waits. nil: no tail
	// losses (the flows' latencies are the Router's alone).
	TailLoss func(links []int32) float64
	TailRTO  sim.Time
	TailSeed uint64
	// Forget releases each collective once it has completed (after its done callback): its
	// memory is reused by a later Launch, and Results and ResultsFrom list only those not
	// released. For a runner that needs only the done callbacks and Incomplete, as a
	// training step's millions of point-to-point sends (131,072 GPUs: about 4 million per
	// step) would otherwise all stay in memory.
	Forget bool
}

// Collectives runs collectives (collective.Spec on a collective.Comm) as flows on a Net. Each
// collective is expanded into phases of concurrent flows, phases one after another (the model
// of each algorithm is in expand.go); flows of one phase with the same (src, dst) host pair
// are one flow. Several collectives may run at once, from independent Launch calls; they
// share the links. Not safe for concurrent use.
type Collectives struct {
	net   *Net
	s     *sim.Sim
	r     Router
	cfg   CollConfig
	kind  sim.Kind
	insts []*coll

	running  int
	launched int // collectives launched so far (the default names' numbers)
	err      error

	// Tail losses (CollConfig.TailLoss): the survival product of the demand being routed,
	// the draws made so far, and the steps that waited a TailRTO.
	tailQ     float64
	tailDraws uint64
	TailWaits int64

	// Scratch for expanding a phase; reused.
	dem   []demand
	pbuf  []Path
	slots []int32
	lats  []sim.Time
	gsum  []int64
	gcnt  []int32

	// recs[slot] is what the Net flow in slot was routed from (CollConfig.Reroutable).
	recs []flowRec
	rr   []int32
	// free are the ids of released collectives (CollConfig.Forget), reused by Launch.
	free []int32
	// dag is the schedule model's state (dag.go, SetSchedules); nil until turned on.
	dag *dagState
	// fold, when set (SetFold), makes the collectives simulate one representative per orbit
	// (fold.go); lfold is the scratch of a path's links mapped to their classes.
	fold  *Fold
	lfold []int32
}

// flowRec is what a flow of a collective was routed from, for Reroute.
type flowRec struct {
	in   *coll
	id   FlowID
	d    demand
	tree bool
	dag  bool   // a schedule-model message (dag.go): d.src, d.dst its ranks, d.group its QP
	key  uint64 // a schedule-model message's Router key base (dagInst.key)
}

// charge adds d to the time link l held the collective up. The links are looked up in bidx
// once there are more than bottScan of them (a 1,024-rank collective on a RoCE fabric is
// held up by thousands of links, and scanning them on every message was 4% of
// train-405b-131k-roce); bott keeps its order (first charged first).
func (in *coll) charge(l int, d sim.Time) {
	if in.bidx != nil {
		if i, ok := in.bidx[l]; ok {
			in.bott[i].t += d
			return
		}
		in.bidx[l] = int32(len(in.bott))
		in.bott = append(in.bott, linkTime{link: l, t: d})
		return
	}
	for i := range in.bott {
		if in.bott[i].link == l {
			in.bott[i].t += d
			return
		}
	}
	in.bott = append(in.bott, linkTime{link: l, t: d})
	if len(in.bott) > bottScan {
		in.bidx = make(map[int]int32, 2*len(in.bott))
		for i, b := range in.bott {
			in.bidx[b.link] = int32(i)
		}
	}
}

// bottScan is how many bottleneck links a collective scans before it indexes them (charge).
const bottScan = 16

// linkTime is time attributed to a bottleneck link.
type linkTime struct {
	link int
	t    sim.Time
}

// coll is one launched collective.
type coll struct {
	id      int
	name    string
	namer   func() string   // builds name on first use (LaunchNamed); nil once built
	defName int             // the launch index its default name carries ("<op>#<index>")
	spec    collective.Spec // resolved
	comm    collective.Comm
	key     uint64 // base of the Router keys: a hash of the communicator's hosts
	done    func(now sim.Time)
	cb      func(now sim.Time) // every flow's Done: one closure per collective
	phase   int
	nphase  int
	left    int // flows of the current phase not yet delivered
	start   sim.Time
	end     sim.Time
	started bool
	fin     bool
	gone    bool  // released (CollConfig.Forget): its slot awaits reuse
	fk      uint8 // its communicator under the fold (foldOff, foldAll or foldMixed)
	err     error
	flows   int
	bytes   int64
	phaseAt sim.Time   // when the current phase started
	bott    []linkTime // each phase's duration, by the bottleneck of its last flow
	// bidx indexes bott by link once it is long (charge); nil or covering every entry.
	bidx map[int]int32
}

// NewCollectives returns a collective runner on net routed by r. It chains itself into
// net's stall hook (the previous Config.OnStall still runs first). Errors: a nil Net or
// Router, a negative or NaN FlowCap.
func NewCollectives(net *Net, r Router, cfg CollConfig) (*Collectives, error) {
	if net == nil || r == nil {
		return nil, fmt.Errorf("flow: NewCollectives needs a Net and a Router")
	}
	if !(cfg.FlowCap >= 0) {
		return nil, fmt.Errorf("flow: flow cap %v bits/s: must be >= 0 (0 = none)", cfg.FlowCap)
	}
	c := &Collectives{net: net, s: net.s, r: r, cfg: cfg}
	c.kind = c.s.Register("flow.collective", c.onStart)
	prev := net.cfg.OnStall
	net.cfg.OnStall = func(now sim.Time, err error) {
		if prev != nil {
			prev(now, err)
		}
		if c.cfg.OnError != nil {
			c.cfg.OnError(now, err)
		}
	}
	return c, nil
}

// maxPhaseFlows bounds the flows one phase may create (an all-to-all over n ranks creates
// n(n-1)): beyond it Launch fails rather than exhausting memory.
const maxPhaseFlows = 1 << 26

// Launch schedules the collective spec on comm to start at time at (>= now); done, if not
// nil, is called once when it completes, from inside the simulation event that completed it.
// name labels it in errors and results ("" gives "<op>#<index>"). Routing happens when each
// phase starts, so a link failure before then is seen by the Router. Errors (nothing is
// launched): an invalid spec (collective.Spec.Resolve), a communicator whose size is not
// spec.Ranks, a start in the past, an all-to-all of more than 2^26 flows.
func (c *Collectives) Launch(at sim.Time, spec collective.Spec, comm collective.Comm, name string, done func(now sim.Time)) error {
	sp, err := c.check(at, spec, comm, name)
	if err != nil {
		return err
	}
	c.launch(at, sp, comm, name, nil, done)
	return nil
}

// check resolves spec and checks a launch of it on comm at at (Launch's errors).
func (c *Collectives) check(at sim.Time, spec collective.Spec, comm collective.Comm, name string) (collective.Spec, error) {
	sp, err := spec.Resolve()
	if err != nil {
		return sp, err
	}
	if comm.Size() != sp.Ranks {
		return sp, fmt.Errorf("flow: launch %q: communicator has %d ranks, spec has %d", name, comm.Size(), sp.Ranks)
	}
	if now := c.s.Now(); at < now {
		return sp, fmt.Errorf("flow: launch %q: start %v is before now (%v)", name, at, now)
	}
	if sp.Op == collective.AllToAll && int64(sp.Ranks)*int64(sp.Ranks-1) > maxPhaseFlows {
		return sp, fmt.Errorf("flow: launch %q: all_to_all over %d ranks is %d flows; the flow engine takes at most %d per phase",
			name, sp.Ranks, int64(sp.Ranks)*int64(sp.Ranks-1), maxPhaseFlows)
	}
	if c.fold != nil && c.foldKindOf(comm.Host, comm.Size()) == foldNone {
		return sp, fmt.Errorf("flow: launch %q: no host of the communicator represents its orbit under the fold; launch its representative image instead", name)
	}
	if len(c.free) == 0 && len(c.insts) >= 1<<31-1 {
		return sp, fmt.Errorf("flow: launch %q: too many collectives in memory (%d)", name, len(c.insts))
	}
	return sp, nil
}

// LaunchNamed is Launch with the collective's name built by name only when something reads it
// (an error, Incomplete, Results): a runner launching millions of collectives whose names
// are seldom read skips building them. name must return the same string whenever called; nil
// or "" gives the default name. Errors: as Launch's.
func (c *Collectives) LaunchNamed(at sim.Time, spec collective.Spec, comm collective.Comm, name func() string, done func(now sim.Time)) error {
	sp, err := c.check(at, spec, comm, "")
	if err != nil {
		if name != nil {
			// The error names the launch: check again with the name (error path only).
			_, err = c.check(at, spec, comm, name())
		}
		return err
	}
	c.launch(at, sp, comm, "", name, done)
	return nil
}

// nameOf returns the collective's name, building it on first use (LaunchNamed).
func (in *coll) nameOf() string {
	if in.namer != nil {
		in.name, in.namer = in.namer(), nil
	}
	if in.name == "" {
		in.name = fmt.Sprintf("%s#%d", in.spec.Op, in.defName)
	}
	return in.name
}

// launch creates the collective sp (resolved and checked) and schedules its start; it
// returns it. It reuses a released collective's memory when there is one.
func (c *Collectives) launch(at sim.Time, sp collective.Spec, comm collective.Comm, name string, namer func() string, done func(now sim.Time)) *coll {
	if name == "" && namer == nil {
		name = fmt.Sprintf("%s#%d", sp.Op, c.launched)
	}
	var in *coll
	if k := len(c.free); k > 0 {
		// A released collective: every field set anew, its flow callback kept (it names
		// the same coll) and its bottleneck list's memory.
		in = c.insts[c.free[k-1]]
		c.free = c.free[:k-1]
		clear(in.bidx)
		*in = coll{id: in.id, cb: in.cb, bott: in.bott[:0], bidx: in.bidx}
	} else {
		in = &coll{id: len(c.insts)}
		in.cb = func(now sim.Time) { c.flowDone(now, in) }
		c.insts = append(c.insts, in)
	}
	in.name, in.namer, in.defName = name, namer, c.launched
	in.spec, in.comm, in.key, in.done = sp, comm, sim.Mix64(comm.Hash()), done
	in.nphase, in.start, in.end = numPhases(sp), at, sim.MaxTime
	in.fk = c.foldKindOf(comm.Host, comm.Size())
	c.launched++
	c.running++
	c.s.At(at, c.kind, int32(in.id), 0)
	return in
}

// Send schedules one point-to-point transfer of bytes from host src to host dst to start at
// time at (>= now): a send/recv (collective.SendRecv, algorithm Direct) on the two-host
// communicator {src, dst}, routed with Router key key (so transfers between the same hosts
// can hash onto different paths, as a transport's QPs do with their own source ports). It
// is a collective like any other: it shares the links, Reroute moves it, Incomplete and
// Results name it. done, if not nil, is called once when it is delivered. Errors: as
// Launch's; src == dst; a negative size.
func (c *Collectives) Send(at sim.Time, src, dst int, bytes int64, key uint64, name string, done func(now sim.Time)) error {
	if src == dst {
		return fmt.Errorf("flow: send %q: source and destination are both host %d", name, src)
	}
	comm, err := collective.NewComm([]int{src, dst})
	if err != nil {
		return fmt.Errorf("flow: send %q: %w", name, err)
	}
	sp := collective.NewSpec(collective.SendRecv, 2, bytes)
	sp.Algo, sp.Root, sp.Peer = collective.Direct, 0, 1
	sp, err = c.check(at, sp, comm, name)
	if err != nil {
		return err
	}
	c.launch(at, sp, comm, name, nil, done).key = key
	return nil
}

func (c *Collectives) onStart(now sim.Time, obj int32, _ uint64) {
	in := c.insts[obj]
	in.started = true
	in.start = now
	if c.dagStart(now, in) {
		return
	}
	c.startPhase(now, in)
}

// flowDone is every flow's delivery callback.
func (c *Collectives) flowDone(now sim.Time, in *coll) {
	in.left--
	if in.left == 0 {
		// The phase's last flow held the phase up: the link that stalled it for as long as
		// it did, its bottleneck for the rest.
		d := now - in.phaseAt
		if sl, sd := c.net.DeliveredStall(); sd > 0 {
			sd = min(sd, d)
			in.charge(sl, sd)
			d -= sd
		}
		in.charge(c.net.DeliveredBottleneck(), d)
	}
	if in.left == 0 && in.err == nil {
		in.phase++
		c.startPhase(now, in)
	}
}

// startPhase expands and adds the flows of in's current phase, skipping empty phases, or
// finishes the collective after its last.
func (c *Collectives) startPhase(now sim.Time, in *coll) {
	for ; in.phase < in.nphase; in.phase++ {
		ph := c.expand(in, in.phase)
		if len(c.dem) == 0 {
			continue
		}
		if ph.tree {
			c.mergeDemands()
		}
		if in.fk == foldMixed {
			c.foldDemands(in) // an invariant phase (CheckFold): one flow per orbit
			if len(c.dem) == 0 {
				c.fail(now, in, fmt.Errorf("flow: collective %q phase %d: no flow from a representative host under the fold (its orbit's representative is another launch's)", in.nameOf(), in.phase))
				return
			}
		}
		in.phaseAt = now
		if err := c.addFlows(now, in, ph); err != nil {
			c.fail(now, in, err)
		}
		return
	}
	in.fin = true
	in.end = now
	c.running--
	if in.done != nil {
		in.done(now)
	}
	if c.cfg.Forget {
		in.gone, in.done = true, nil
		c.free = append(c.free, int32(in.id))
	}
}

// addFlows routes the demands of one phase and adds them to the Net as flows starting now,
// then sets their latencies (phase.K x the group mean, or x their own).
func (c *Collectives) addFlows(now sim.Time, in *coll, ph phase) error {
	ng := 0
	c.slots, c.lats = c.slots[:0], c.lats[:0]
	phaseQ := 1.0 // no message of a step loses its tail
	defer func() { c.tailWait(ph.k, phaseQ) }()
	for di := range c.dem {
		d := &c.dem[di]
		src, dst := in.comm.Host(int(d.src)), in.comm.Host(int(d.dst))
		total := d.b[0] + d.b[1]
		c.net.beginFlow()
		c.tailQ = 1
		lat, err := c.route(in, d, ph.tree)
		if err != nil {
			return err
		}
		phaseQ *= c.tailQ
		slot, err := c.net.commitFlow(now, Flow{Src: src, Dst: dst, Bytes: total, Cap: c.cfg.FlowCap, Done: in.cb})
		if err != nil {
			return fmt.Errorf("flow: collective %q: %w", in.nameOf(), err)
		}
		if c.cfg.Reroutable {
			for int(slot) >= len(c.recs) {
				c.recs = append(c.recs, flowRec{})
			}
			c.recs[slot] = flowRec{in: in, id: c.net.flows[slot].id, d: *d, tree: ph.tree}
		}
		in.left++
		in.flows++
		in.bytes += total
		c.slots = append(c.slots, slot)
		c.lats = append(c.lats, lat)
		ng = max(ng, int(d.group)+1)
	}
	if !ph.mean {
		for i, s := range c.slots {
			c.net.flows[s].lat = mulTime(c.lats[i], ph.k)
		}
		return nil
	}
	c.gsum = slices.Grow(c.gsum[:0], ng)[:ng]
	c.gcnt = slices.Grow(c.gcnt[:0], ng)[:ng]
	clear(c.gsum)
	clear(c.gcnt)
	for i := range c.slots {
		g := c.dem[i].group
		c.gsum[g] += int64(c.lats[i])
		c.gcnt[g]++
	}
	for i, s := range c.slots {
		g := c.dem[i].group
		c.net.flows[s].lat = meanTimes(c.gsum[g], int64(c.gcnt[g]), ph.k)
	}
	return nil
}

// route adds the paths of demand d of collective in (tree: a tree phase, whose demands carry
// per-tree bytes) to the flow being built on the Net, every channel (and tree) weighted by
// its share, and returns the flow's latency: the largest the Router gave.
func (c *Collectives) route(in *coll, d *demand, tree bool) (sim.Time, error) {
	C := in.spec.Channels
	src, dst := in.comm.Host(int(d.src)), in.comm.Host(int(d.dst))
	total := d.b[0] + d.b[1]
	var lat sim.Time
	trees := 1
	if tree {
		trees = 2
	}
	for t := 0; t < trees; t++ {
		if d.trees&(1<<t) == 0 {
			continue
		}
		share := 1.0
		if tree && total > 0 {
			share = float64(d.b[t]) / float64(total)
		} else if tree && d.trees == 3 {
			share = 0.5
		}
		if share == 0 {
			continue
		}
		for ch := 0; ch < C; ch++ {
			logical := ch
			if tree {
				logical = 2*ch + t
			}
			paths, l, err := c.r.Paths(src, dst, in.key+uint64(logical), c.pbuf[:0])
			c.pbuf = paths
			if err != nil {
				return 0, fmt.Errorf("flow: collective %q rank %d (host %d) -> rank %d (host %d), channel %d: %w",
					in.nameOf(), d.src, src, d.dst, dst, logical, err)
			}
			if l < 0 {
				return 0, fmt.Errorf("flow: collective %q host %d -> %d: router latency %v is negative", in.nameOf(), src, dst, l)
			}
			lat = max(lat, l)
			var wsum float64
			for i := range paths {
				wsum += paths[i].Weight
			}
			if len(paths) > 0 && !(wsum > 0) {
				return 0, fmt.Errorf("flow: collective %q host %d -> %d: router path weights sum to %v", in.nameOf(), src, dst, wsum)
			}
			scale := share / float64(C) / wsum
			if c.cfg.TailLoss != nil {
				// A channel's message takes one of the paths (by weight): its tail is lost
				// with their weighted mean probability.
				var pc float64
				for i := range paths {
					pc += paths[i].Weight / wsum * c.cfg.TailLoss(paths[i].Links)
				}
				c.tailQ *= 1 - pc
			}
			for i := range paths {
				links := paths[i].Links
				if c.fold != nil {
					if links, err = c.foldLinks(links); err != nil {
						return 0, fmt.Errorf("flow: collective %q host %d -> %d: %w", in.nameOf(), src, dst, err)
					}
				}
				if err := c.net.addPath(links, paths[i].Weight*scale); err != nil {
					return 0, fmt.Errorf("flow: collective %q host %d -> %d: router path %d: %w", in.nameOf(), src, dst, i, err)
				}
			}
		}
	}
	return lat, nil
}

// tailWait adds to the latency of every flow of the phase just added (c.slots) one TailRTO
// per step of its k that lost a message's tail: k draws, each a loss with probability
// 1 - q (q: no message of the step lost its tail), from the seeded stream.
func (c *Collectives) tailWait(k int64, q float64) {
	if c.cfg.TailLoss == nil || q >= 1 || len(c.slots) == 0 {
		return
	}
	var waits int64
	for range max(k, 1) {
		c.tailDraws++
		u := float64(sim.Mix64(c.cfg.TailSeed^0x7a11c0ffee^c.tailDraws*0x9e3779b97f4a7c15)>>11) / (1 << 53)
		if u < 1-q {
			waits++
		}
	}
	if waits == 0 {
		return
	}
	c.TailWaits += waits
	for _, s := range c.slots {
		add := mulTime(c.cfg.TailRTO, waits)
		if l := c.net.flows[s].lat; l > sim.MaxTime-add {
			c.net.flows[s].lat = sim.MaxTime
		} else {
			c.net.flows[s].lat = l + add
		}
	}
}

// mulTime returns t x k, saturating at MaxTime.
func mulTime(t sim.Time, k int64) sim.Time {
	if t == 0 || k == 0 {
		return 0
	}
	if int64(t) > int64(sim.MaxTime)/k {
		return sim.MaxTime
	}
	return t * sim.Time(k)
}

// meanTimes returns k x sum / cnt, rounded down, saturating at MaxTime.
func meanTimes(sum, cnt, k int64) sim.Time {
	q, r := sum/cnt, sum%cnt
	return mulTime(sim.Time(q), k) + sim.Time(mulDiv(r, k, cnt))
}

func (c *Collectives) fail(now sim.Time, in *coll, err error) {
	in.err = err
	if c.err == nil {
		c.err = err
	}
	if c.cfg.OnError != nil {
		c.cfg.OnError(now, err)
	}
}

// Running returns how many launched collectives have not completed (failed ones included).
func (c *Collectives) Running() int { return c.running }

// Err returns the first Router error a phase start met, else the Net's current stall
// (Net.Err), else nil.
func (c *Collectives) Err() error {
	if c.err != nil {
		return c.err
	}
	return c.net.Err()
}

// Incomplete returns nil when every launched collective has completed, else an error naming
// up to 10 of those that have not (phase reached, flows outstanding, their error), followed
// by Err(): what a runner returns when the simulation empties with collectives outstanding.
func (c *Collectives) Incomplete() error {
	if c.running == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "flow: %d collective(s) did not complete", c.running)
	shown := 0
	for _, in := range c.insts {
		if in.fin {
			continue
		}
		if shown == 10 {
			b.WriteString("\n  ...")
			break
		}
		shown++
		switch {
		case !in.started:
			fmt.Fprintf(&b, "\n  %s: not started (starts at %v)", in.nameOf(), in.start)
		case in.err != nil:
			fmt.Fprintf(&b, "\n  %s: phase %d of %d failed: %v", in.nameOf(), in.phase+1, in.nphase, in.err)
		default:
			fmt.Fprintf(&b, "\n  %s: phase %d of %d, %d flow(s) outstanding", in.nameOf(), in.phase+1, in.nphase, in.left)
		}
	}
	if err := c.net.Err(); err != nil {
		fmt.Fprintf(&b, "\n  %v", err)
	}
	return fmt.Errorf("%s", b.String())
}

// CollResult is the outcome of one launched collective.
type CollResult struct {
	Name   string
	Spec   collective.Spec // resolved (Auto replaced)
	Start  sim.Time        // when it started
	End    sim.Time        // when its last flow was delivered; MaxTime while not done
	Done   bool
	Phases int   // phases of its flow-level expansion
	Flows  int   // flows added so far
	Bytes  int64 // payload bytes of those flows
	Err    error // the Router error that stopped it, if any
	// Bottleneck is the link that held it up longest: each phase's duration is charged to
	// its last flow to be delivered, to the link that stalled it for its longest stall
	// (Net.DeliveredStall) and to its bottleneck for the rest (Net.DeliveredBottleneck: a
	// link, -1 the flows' cap, -2 nothing); Bottleneck is the link charged most (ties: the
	// first charged), BottleneckTime what it was charged; -2 and 0 before a phase has
	// completed.
	Bottleneck     int
	BottleneckTime sim.Time
}

// Time returns End-Start, or MaxTime if not done.
func (r CollResult) Time() sim.Time {
	if !r.Done {
		return sim.MaxTime
	}
	return r.End - r.Start
}

// Results returns every launched collective's outcome, in launch order.
func (c *Collectives) Results() []CollResult { return c.ResultsFrom(0) }

// ResultsFrom returns the outcomes of the collectives launched from the i-th on (i in [0,
// launched]), in launch order: a caller reading results as it goes need not copy them all.
func (c *Collectives) ResultsFrom(i int) []CollResult {
	i = min(max(i, 0), len(c.insts))
	out := make([]CollResult, 0, len(c.insts)-i)
	for _, in := range c.insts[i:] {
		if in.gone {
			continue
		}
		r := CollResult{Name: in.nameOf(), Spec: in.spec, Start: in.start, End: in.end, Done: in.fin,
			Phases: in.nphase, Flows: in.flows, Bytes: in.bytes, Err: in.err, Bottleneck: -2}
		for _, b := range in.bott {
			if b.t > r.BottleneckTime {
				r.Bottleneck, r.BottleneckTime = b.link, b.t
			}
		}
		out = append(out, r)
	}
	return out
}

// Reroute routes again, with the Router as it is now, every flow of the running collectives
// (waiting to start or sending) for which sel(id, stalled) is true (nil: every one), in id
// order, and returns how many it rerouted: a sending flow keeps the bytes it has left
// (Net.repath) and the rates are recomputed at the current instant. A flow keeps its
// latency. This is how a runner models a transport moving off failed paths (MRC) or routing
// reconverging (ECMP rehashing). It needs CollConfig.Reroutable. Errors: Reroutable off; a
// Router error (the flows rerouted before it keep their new paths).
func (c *Collectives) Reroute(sel func(id FlowID, stalled bool) bool) (int, error) {
	if !c.cfg.Reroutable {
		return 0, fmt.Errorf("flow: Reroute needs CollConfig.Reroutable")
	}
	n := c.net
	c.rr = c.rr[:0]
	for s := range c.recs {
		r := &c.recs[s]
		if r.in == nil || s >= len(n.flows) {
			continue
		}
		f := &n.flows[s]
		if f.id != r.id || (f.state != stPending && f.state != stActive) {
			r.in = nil // delivered; the slot may hold another flow now
			continue
		}
		c.rr = append(c.rr, int32(s))
	}
	slices.SortFunc(c.rr, func(a, b int32) int { return cmpID(n.flows[a].id, n.flows[b].id) })
	done := 0
	for _, s := range c.rr {
		f := &n.flows[s]
		if sel != nil && !sel(f.id, f.stalled) {
			continue
		}
		r := &c.recs[s]
		n.beginFlow()
		var err error
		if r.dag {
			_, err = c.routeMsg(r.in, r.key, r.d.src, r.d.dst, r.d.group, false)
		} else {
			_, err = c.route(r.in, &r.d, r.tree)
		}
		if err != nil {
			n.beginFlow()
			return done, err
		}
		if err := n.repath(s); err != nil {
			return done, err
		}
		done++
	}
	return done, nil
}

// Owner returns the launch index (the order of Launch and Send calls, from 0) of the
// collective that sending or waiting Net flow id belongs to, -1 when it is not one of its
// flows or not in flight. It needs CollConfig.Reroutable (else -1); with CollConfig.Forget
// the index is the released slot's, reused by later launches. O(flows in flight); Owners
// answers for every flow at once.
func (c *Collectives) Owner(id FlowID) int {
	if !c.cfg.Reroutable {
		return -1
	}
	for s := range c.recs {
		if k := c.recOwner(s); k >= 0 && c.recs[s].id == id {
			return k
		}
	}
	return -1
}

// recOwner returns the collective of the flow recs[s] records when that flow is still in
// flight in slot s (waiting to start or sending), else -1.
func (c *Collectives) recOwner(s int) int {
	r := &c.recs[s]
	if r.in == nil || s >= len(c.net.flows) {
		return -1
	}
	if f := &c.net.flows[s]; f.id == r.id && (f.state == stPending || f.state == stActive) {
		return r.in.id
	}
	return -1
}

// Owners returns Owner for every flow waiting to start or sending, in one pass over the
// flows (O(flows), where a call of Owner per flow is O(flows) each): nil without
// CollConfig.Reroutable.
func (c *Collectives) Owners() map[FlowID]int {
	if !c.cfg.Reroutable {
		return nil
	}
	out := make(map[FlowID]int)
	for s := range c.recs {
		if k := c.recOwner(s); k >= 0 {
			out[c.recs[s].id] = k
		}
	}
	return out
}
