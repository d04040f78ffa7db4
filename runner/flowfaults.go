package runner

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/lockstepsim/lockstep/fault"
	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
)

// flowFaults applies a training job's (or a traffic run's: flowTraffic) fault schedule to
// the flow-level network (run.engine flow), at the simulated time of each event, as the
// transport would feel it. It is
// only built when the scenario has faults: a run without them has none of this (the same
// events, the same speed). Every difference between transports here comes from their flow
// model (transport.FlowModel, the router's): GoBackN for the loss factor, EndpointReroute
// for who moves flows off a dead path, RerouteAfter, RTO and GiveUp for when; MRC and RoCE
// below name the two shipped models.
//
// Capacities. Every directed link of the topology runs at its effective capacity: 0 while
// the link is down or touches a blackholed switch; else its rate (the built one, or a
// degrade's) times the transport's goodput factor under the link's packet loss p (loss,
// and ber as p = 1 - (1 - ber)^(8 x packet bytes)): MRC retransmits only what was lost
// (selective repeat), 1 - p; RoCE's go-back-N resends everything in flight after a loss,
// (1 - p) / (1 + (W - 1) p) with W the packets one QP has in flight per round trip (its
// bandwidth-delay product in packets) [Bertsekas & Gallager, Data Networks 2nd ed. §2.4;
// docs/protocols.md, "Faults at flow level"]. Under MRC on a Clos or fat-tree, flows ride
// bundles (flowroute.go); a bundle's capacity is the sum of its members' effective
// capacities, since MRC moves load off slow, lossy and dead paths (its EVs see ECN, trims and
// losses [MRC §2.1]; per-plane rotations keep 0.99 of the remaining capacity of a slow NIC
// port, docs/design-notes.md).
//
// Routing. MRC elsewhere (sprayed over sampled paths) re-sprays every flow over the live
// paths one ACK timeout after a link dies or returns (detect: how long a packet on a dead
// path takes to be declared lost); new flows avoid dead paths at once after that. RoCE's ECMP
// follows link state: fabric.reconvergence after a link goes down or up, routes are
// recomputed over the links that are up; until then flows hashed onto a dead link stall
// (rate 0) and new ones still hash onto it. At reconvergence, moving flows rehash (those on
// live paths keep them) and a stalled QP resumes on its new path when its retransmission
// timer fires next (RTO after its last progress, then every RTO). A blackhole or a lossy
// link is no link-state signal: RoCE routing keeps hashing into it.
//
// QP errors. A flow stalled longer than its transport's retry budget errors its QPs: RoCE
// RTO x (retry_count + 1); MRC its ACK timeouts (fixed_retries at the timeout, then
// doubling, up to max_retries; never with max_retries 25). The job restarts (restart time
// and the lost work since the last checkpoint are charged to it, trainingCharges); the
// simulation goes on as the restarted job would find the network (the stalled flows resume
// when their path returns or routing reconverges). Each failure (one entry's event at one
// instant, a flap cycle, a random failure) restarts the job at most once.
type flowFaults struct {
	s   *sim.Sim
	net *flow.Net
	fc  *flow.Collectives
	// ceil is the transport's rate ceiling on the same Net (nil: none), told of reroutes.
	ceil  *flowCeiling
	r     *flowRouter
	model transport.FlowModel // the transport's (r.model)
	name  string              // its plugin's Name, for messages ("RoCE")
	links []topo.Link
	evs   []FaultEvent
	nDir  int // directed topology links: 2 x len(links)

	rate  []float64 // per link: its rate now (built or degraded), bits/s
	down  []bool    // per link
	lossP []float64 // per directed link: packet loss probability (action loss)
	berP  []float64 // per directed link: bit error rate
	black []bool    // per node: a blackholed switch
	nodeL [][]int32 // per node: its links (built on the first blackhole)
	share float64   // payloadShare of the model: a link's payload rate is its rate x share
	cur   []float64 // per Net link: the capacity set now
	built []float64 // per Net link: the capacity as built
	cause []int32   // per Net link: the event that last took it to 0, -1 none
	// members[b-firstB] lists bundle b's member directed links (bundled MRC).
	members [][]int32
	firstB  int

	pktBits float64 // bits per data packet on the wire (BER)
	gbnW    float64 // go-back-N: packets in flight per QP per round trip
	reconv  sim.Time
	detect  sim.Time // endpoint reroute: delay after a link dies or returns (RerouteAfter)
	rto     sim.Time // retransmission timeout of a stalled QP (RTO)
	budget  sim.Time // a stall this long errors the QPs (GiveUp; MaxTime: never)

	// reconvName names what sets reconv, for messages (faultReactionName).
	reconvName string

	kFault, kReconv, kTick, kCatch, kCheck, kDetect sim.Kind
	reconvAt                                        []sim.Time // reconvergences scheduled (and applied, <= now)
	detectAt                                        sim.Time   // the endpoint reroute pending, -1 none
	lastCheck                                       sim.Time
	catchAt                                         sim.Time // the stalled-QP catch pending, -1 none
	routeChanged                                    bool

	// QPs waiting for their retransmission timer (no endpoint reroute: RoCE): held at rate 0
	// (flow.Net.Hold) from their stall until a timer tick finds their path live; ticks[i]
	// are the flows due at one tick.
	waits   map[flow.FlowID]*qpWait
	ticks   [][]flow.FlowID
	errored int // waits whose QPs gave up (they resume when their path returns)
	// during holds the fault state each link entered during the current step (cleared as a
	// step closes, flowStepLinks), for naming a step's slowest link after the fault ended.
	during map[int32]string

	restarts []flowRestart
	byCause  map[[3]int64]int // failure -> index in restarts
	stallBuf []flow.StallInfo
	notes    []string
	// reactAt are the instants the transport's modelled reactions happened, in time order:
	// MRC's endpoint reroute, a RoCE QP's go-back-N resend (its timer or a NAK). They are
	// the flow level's loss-driven retransmissions (flowTraffic.Log: the fault table's
	// detect and last retx columns).
	reactAt []sim.Time

	// onQPError, when set (a traffic run: flowTraffic), makes a QP error final, as a
	// transport's QP in the error state is: the flow stays held and is never released, and
	// onQPError hears of it (at the instant its QPs gave up, the stall and the event behind
	// it, -1 unknown) instead of a job restart being recorded. It may be called more than
	// once for one flow.
	onQPError func(at sim.Time, st flow.StallInfo, ev int)
}

// qpWait is a flow of a transport without endpoint reroute (RoCE) whose path died: it
// waits for its retransmission timer.
type qpWait struct {
	since sim.Time // its stall: the last progress
	// sendFor is how long its QP goes on sending into the dead path after the stall: its
	// bytes left at its port's rate (RoCE's window is unbounded by default, DCQCN paces by
	// rate). While it still sends, a path that returns carries new packets, whose PSN gap
	// the receiver NAKs: go-back-N resends at once, without waiting for the timer.
	sendFor sim.Time
	link    int  // the dead link
	cause   int  // the event that killed it, -1 unknown
	tries   int  // timer ticks so far
	errored bool // its QPs gave up (retry_count + 1 timeouts)
}

// flowRestart is a job restart the flow-level fault model found: QPs that gave up.
type flowRestart struct {
	At      sim.Time // when the first QP gave up
	Since   sim.Time // when it stalled
	Src     int
	Dst     int
	Link    int // the Net link of capacity 0 that stalled it
	Event   int // evs index of the failure behind it, -1 unknown
	QPFlows int // stalled flows that gave up for this failure
}

// trainingFaultSpecs returns the scenario's fault entries that act on the training job's
// network and each one's index in sc.Faults: every entry but, on a torus with optical
// circuit switches, a chip failure (a switch down), which the OCS remap handles (ocsRemaps).
func trainingFaultSpecs(sc *scenario.Scenario) ([]scenario.Fault, []int) {
	ocs := sc.Topology.Torus != nil && sc.Topology.Torus.OCS
	var specs []scenario.Fault
	var idx []int
	for i, f := range sc.Faults {
		if ocs && f.Switch != "" && f.Action == scenario.FaultDown && f.Random == nil {
			continue
		}
		specs = append(specs, f)
		idx = append(idx, i)
	}
	return specs, idx
}

// expandFaults expands specs (entries idx of the scenario's faults) against the topology's
// names, as scheduleFaults does against a built fabric, and returns the events with Entry
// the scenario's index.
func expandFaults(specs []scenario.Fault, idx []int, inv *fault.Inventory, seed uint64) ([]FaultEvent, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	sch, err := fault.Expand(specs, inv, fault.Options{Seed: seed, Path: "faults"})
	if err != nil {
		var fe *fault.Error
		if errors.As(err, &fe) {
			return nil, scenario.Errorf(fe.Path, "%s", fe.Msg)
		}
		return nil, err
	}
	evs := make([]FaultEvent, len(sch.Events))
	for i, e := range sch.Events {
		evs[i] = faultEvent(e)
		evs[i].Entry = idx[e.Entry]
	}
	return evs, nil
}

// newFlowFaults builds the fault model for a flow-level training run over layout, whose
// router r (with the transport's flow model) and Net capacities caps the run has made; evs
// is the expanded schedule (non-empty).
func newFlowFaults(sc *scenario.Scenario, layout topo.Topology, s *sim.Sim, r *flowRouter, caps []float64, evs []FaultEvent) *flowFaults {
	links := r.links
	m := r.model
	ff := &flowFaults{s: s, r: r, model: m, name: r.name, links: links, evs: evs, nDir: 2 * len(links),
		rate: make([]float64, len(links)), down: make([]bool, len(links)),
		lossP: make([]float64, 2*len(links)), berP: make([]float64, 2*len(links)),
		cur: slices.Clone(caps), built: slices.Clone(caps), cause: make([]int32, len(caps)),
		reconv: faultReaction(sc), reconvName: faultReactionName(sc), detectAt: -1, lastCheck: -1, catchAt: -1, byCause: map[[3]int64]int{},
		waits: map[flow.FlowID]*qpWait{}, during: map[int32]string{}}
	for k, l := range links {
		ff.rate[k] = float64(l.Rate)
	}
	ff.share = payloadShare(m)
	for i := range ff.cause {
		ff.cause[i] = -1
	}
	// The loss factor's go-back-N window: the packets one QP has in flight per base round
	// trip (its bandwidth-delay product at the host link), over the longest switch path.
	ff.pktBits = 8 * float64(m.WireBytes)
	if m.GoBackN {
		p := layout.Params()
		rtt := p.RoundTrip(layout.Sizing().MaxSwitchHops, m.WireBytes, m.AckBytes)
		ff.gbnW = max(1, math.Ceil(float64(p.HostLink)*rtt.Seconds()/ff.pktBits))
	}
	ff.detect, ff.rto, ff.budget = m.RerouteAfter, m.RTO, m.GiveUp
	if r.bundle != nil {
		ff.firstB = len(caps)
		for _, b := range r.bundle {
			if b >= 0 {
				ff.firstB = min(ff.firstB, int(b))
			}
		}
		ff.members = make([][]int32, len(caps)-ff.firstB)
		for d, b := range r.bundle {
			if b >= 0 {
				ff.members[int(b)-ff.firstB] = append(ff.members[int(b)-ff.firstB], int32(d))
			}
		}
	}
	ff.kFault = s.Register("runner.flowfault", func(now sim.Time, obj int32, _ uint64) { ff.apply(now, int(obj)) })
	ff.kReconv = s.Register("runner.flowfault.reconverge", func(now sim.Time, _ int32, _ uint64) { ff.reconverge(now) })
	ff.kTick = s.Register("runner.flowfault.rto", func(now sim.Time, obj int32, _ uint64) { ff.tick(now, int(obj)) })
	ff.kCatch = s.Register("runner.flowfault.hold", func(now sim.Time, _ int32, _ uint64) { ff.catch(now) })
	ff.kCheck = s.Register("runner.flowfault.check", func(now sim.Time, _ int32, _ uint64) { ff.check(now) })
	ff.kDetect = s.Register("runner.flowfault.detect", func(now sim.Time, _ int32, _ uint64) { ff.endpointReroute(now) })
	return ff
}

// start attaches the model to the run's Net and collectives and schedules every event. Fault
// events take their own tiebreak keys (sim.AtOwnKey), so the run is event for event the
// faultless one until the first fault.
func (ff *flowFaults) start(net *flow.Net, fc *flow.Collectives) {
	ff.net, ff.fc = net, fc
	for i := range ff.evs {
		if ff.evs[i].Step < 0 { // at_step entries wait for their step (stepStart)
			ff.s.AtOwnKey(ff.evs[i].At, ff.kFault, int32(i), 0)
		}
	}
}

// stepStart is the training engine's step hook: the events of at_step entries for this
// step are scheduled at their offsets from now (their At made absolute).
func (ff *flowFaults) stepStart(now sim.Time, step int) {
	for i := range ff.evs {
		if e := &ff.evs[i]; e.Step == step {
			e.At += now
			e.Step, e.fromStep = -1, step+1
			ff.s.AtOwnKey(e.At, ff.kFault, int32(i), 0)
		}
	}
}

// onStall is the Net's stall hook: without endpoint reroute (RoCE) the flows stalled now
// wait for their retransmission timer (catch, at the end of this instant); with it (MRC)
// they error their QPs if still stalled one retry budget later (check).
func (ff *flowFaults) onStall(now sim.Time, _ error) {
	if !ff.model.EndpointReroute {
		if ff.catchAt != now {
			ff.catchAt = now
			ff.s.AtOwnKey(now, ff.kCatch, 0, 0)
		}
		return
	}
	if ff.budget == sim.MaxTime || now > sim.MaxTime-ff.budget {
		return
	}
	if at := now + ff.budget; at != ff.lastCheck {
		ff.lastCheck = at
		ff.s.AtOwnKey(at, ff.kCheck, 0, 0)
	}
}

// goodput is the transport's goodput factor on a link losing packets with probability p.
func (ff *flowFaults) goodput(p float64) float64 { return lossGoodput(ff.model.GoBackN, p, ff.gbnW) }

// lossGoodput is the fraction of a link's rate a transport turns into goodput when the link
// loses each packet with probability p: selective retransmission (MRC) resends only the
// lost packets, 1 - p; go-back-N (gbn, RoCE) resends the w packets in flight behind each
// loss (every packet sent in the round trip before the NAK returns), so each delivered packet
// costs 1 + (w - 1) p / (1 - p) transmissions on average and the factor is
// (1 - p) / (1 + (w - 1) p) [Bertsekas & Gallager, Data Networks 2nd ed. §2.4.2, go back n
// ARQ with a window of w frames per round trip]. p >= 1 gives 0.
func lossGoodput(gbn bool, p, w float64) float64 {
	switch {
	case p <= 0:
		return 1
	case p >= 1:
		return 0
	case gbn:
		return (1 - p) / (1 + (max(w, 1)-1)*p)
	}
	return 1 - p
}

// lossAt is directed link d's packet loss probability now: its loss and its BER over a data
// packet, 1 - (1 - p)(1 - ber)^bits; 0 for a link the fault model does not track.
func (ff *flowFaults) lossAt(d int) float64 {
	if d < 0 || d >= len(ff.lossP) {
		return 0
	}
	p := ff.lossP[d]
	if b := ff.berP[d]; b > 0 {
		p = 1 - (1-p)*math.Pow(1-b, ff.pktBits)
	}
	return p
}

// tailLoss is the probability that a message over links loses its last data packet on one
// of them or the ACK that answers it on the way back, 1 - prod(1 - p_d)(1 - p_d') over the
// path's directed links d and their reverse d' (flow.CollConfig.TailLoss), for a transport
// that waits its RTO then (RoCE): go-back-N recovers a loss when a later packet reveals the
// gap (a NAK), and nothing comes after the last one; an earlier ACK's loss is covered by the
// next (ACKs are cumulative), the last one's by nothing, so in both cases the sender waits
// its retransmission timer [IBTA §9.7.5.1, §9.7.6; docs/protocols.md, "Tail losses"]. The
// ACK's path is taken as the data path reversed (the responder hashes the same 5-tuple
// back, roce.UDPSourcePort).
func (ff *flowFaults) tailLoss(links []int32) float64 {
	q := 1.0
	for _, d := range links {
		if p := ff.lossAt(int(d)); p > 0 {
			q *= 1 - p
		}
		if p := ff.lossAt(int(d ^ 1)); p > 0 {
			q *= 1 - p
		}
	}
	return 1 - q
}

// eff is directed link d's effective capacity now (see the type's doc).
func (ff *flowFaults) eff(d int) float64 {
	k := d / 2
	if ff.down[k] {
		return 0
	}
	if ff.black != nil && (ff.black[ff.links[k].A.Node] || ff.black[ff.links[k].B.Node]) {
		return 0
	}
	p := ff.lossP[d]
	if b := ff.berP[d]; b > 0 {
		p = 1 - (1-p)*math.Pow(1-b, ff.pktBits)
	}
	return ff.r.wireRate(d, ff.rate[k]) * ff.share * ff.goodput(p)
}

// refresh sets directed link d's capacity (and its bundle's) to what its state gives; ev is
// the event responsible.
func (ff *flowFaults) refresh(d, ev int) {
	c := ff.eff(d)
	old := ff.cur[d]
	if c == old {
		return
	}
	ff.set(d, c, ev)
	if st := ff.state(d); st != "" {
		ff.during[int32(d)] = st // for the step's slowest link, after the fault ends
	}
	if (c == 0) != (old == 0) {
		ff.routeChanged = true
	}
	if ff.r.bundle != nil {
		if b := int(ff.r.bundle[d]); b >= 0 {
			var sum float64
			for _, m := range ff.members[b-ff.firstB] {
				sum += ff.cur[m]
			}
			ff.set(b, sum, ev)
		}
	}
}

// state describes directed link d's fault state now ("" for none): down, through a
// blackholed switch, degraded, lossy.
func (ff *flowFaults) state(d int) string {
	k := d / 2
	l := &ff.links[k]
	switch {
	case ff.down[k]:
		return "down"
	case ff.black != nil && (ff.black[l.A.Node] || ff.black[l.B.Node]):
		return "through a blackholed switch"
	}
	var s []string
	if ff.rate[k] < float64(l.Rate) {
		s = append(s, "degraded to "+sim.Rate(ff.rate[k]).String())
	}
	if p := ff.lossP[d]; p > 0 {
		s = append(s, fmt.Sprintf("loss %g", p))
	}
	if b := ff.berP[d]; b > 0 {
		s = append(s, fmt.Sprintf("ber %g", b))
	}
	return strings.Join(s, ", ")
}

func (ff *flowFaults) set(link int, c float64, ev int) {
	if c == 0 && ff.cur[link] > 0 {
		ff.cause[link] = int32(ev)
	}
	ff.cur[link] = c
	_ = ff.net.SetCapacity(link, c) // c is finite and >= 0, link in range
}

// apply applies event i at now.
func (ff *flowFaults) apply(now sim.Time, i int) {
	e := &ff.evs[i]
	e.applied = true
	ff.routeChanged = false
	both := func(k int) {
		ff.refresh(2*k, i)
		ff.refresh(2*k+1, i)
	}
	switch e.Action {
	case fault.OpDown.String(), fault.OpUp.String():
		k := int(e.Port) / 2
		ff.down[k] = e.Action == fault.OpDown.String()
		both(k)
		if !ff.model.EndpointReroute {
			ff.scheduleReconv(now + ff.reconv)
		}
	case fault.OpDegrade.String(), fault.OpUndegrade.String():
		k := int(e.Port) / 2
		ff.rate[k] = float64(e.Rate)
		both(k)
	case fault.OpLoss.String():
		if e.HasEntropy {
			// One EV's path of a QP's 128: MRC retires it; at flow level it is nothing.
			ff.note(fmt.Sprintf("faults[%d]: a loss on one entropy value (one EV's path) is not modelled at flow level (MRC retires that EV)", e.Entry))
			return
		}
		ff.lossP[e.Port] = e.Loss
		ff.refresh(int(e.Port), i)
	case fault.OpBER.String():
		ff.berP[e.Port] = e.BER
		ff.refresh(int(e.Port), i)
	case fault.OpBlackhole.String(), fault.OpUnblackhole.String():
		if ff.black == nil {
			ff.black = make([]bool, ff.r.t.NumNodes())
			ff.nodeL = make([][]int32, ff.r.t.NumNodes())
			for k, l := range ff.links {
				ff.nodeL[l.A.Node] = append(ff.nodeL[l.A.Node], int32(k))
				ff.nodeL[l.B.Node] = append(ff.nodeL[l.B.Node], int32(k))
			}
		}
		ff.black[e.Node] = e.Action == fault.OpBlackhole.String()
		for _, k := range ff.nodeL[e.Node] {
			both(int(k))
		}
	}
	if ff.routeChanged && !ff.model.EndpointReroute {
		ff.releaseErrored()
		ff.nakResume(now)
	}
	if ff.routeChanged && ff.model.EndpointReroute && ff.r.bundle == nil && ff.detectAt < 0 {
		// Endpoints rerouting flows sprayed over sampled paths (MRC): they move off (or back
		// onto) the paths once the losses (or their probes) tell them, about one ACK timeout
		// (RerouteAfter) later.
		ff.detectAt = now + ff.detect
		ff.s.AtOwnKey(ff.detectAt, ff.kDetect, 0, 0)
	}
}

func (ff *flowFaults) note(s string) {
	if !slices.Contains(ff.notes, s) {
		ff.notes = append(ff.notes, s)
	}
}

// endpointReroute re-sprays every flow over the paths that are live now (effective capacity
// > 0): the transport's endpoints moved off the dead ones (FlowModel.EndpointReroute, MRC).
func (ff *flowFaults) endpointReroute(now sim.Time) {
	ff.detectAt = -1
	ff.react(now)
	ff.setDead(func(d int) bool { return ff.cur[d] == 0 })
	if _, err := ff.reroute(nil); err != nil {
		ff.s.Stop(fmt.Errorf("flow level: rerouting after a failure at %v: %w", now, err))
	}
}

// setDead sets the router's dead links (nil when none is).
func (ff *flowFaults) setDead(dead func(d int) bool) {
	var out []bool
	for d := 0; d < ff.nDir; d++ {
		if dead(d) {
			if out == nil {
				out = make([]bool, ff.nDir)
			}
			out[d] = true
		}
	}
	ff.r.dead = out
}

func (ff *flowFaults) scheduleReconv(at sim.Time) {
	if n := len(ff.reconvAt); n > 0 && ff.reconvAt[n-1] == at {
		return
	}
	ff.reconvAt = append(ff.reconvAt, at)
	ff.s.AtOwnKey(at, ff.kReconv, 0, 0)
}

// reconverge is ECMP after routing reconverged, for a transport without endpoint reroute
// (RoCE): routes avoid the links that are down now; moving flows rehash at once, waiting
// QPs at their next retransmission (tick).
func (ff *flowFaults) reconverge(now sim.Time) {
	ff.setDead(func(d int) bool { return ff.down[d/2] })
	if _, err := ff.reroute(func(_ flow.FlowID, stalled bool) bool { return !stalled }); err != nil {
		ff.s.Stop(fmt.Errorf("flow level: rerouting at reconvergence (%v): %w", now, err))
		return
	}
	ff.releaseErrored()
	ff.nakResume(now)
}

// nakResume lets every waiting QP that is still sending (its stall less than sendFor ago)
// go on at once on the path it hashes to now, when that path is live: its new packets
// arrive, the receiver NAKs the gap and go-back-N resends from it [IBTA §9.7.5.1: a
// sequence NAK, not the timer]. The others keep waiting for their timer (tick).
func (ff *flowFaults) nakResume(now sim.Time) {
	if len(ff.waits) == 0 || ff.model.EndpointReroute {
		return
	}
	ids := make([]flow.FlowID, 0, len(ff.waits))
	for id, w := range ff.waits {
		if !w.errored && now-w.since < w.sendFor {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) > 0 {
		ff.react(now) // the QPs' new packets draw a NAK and go-back-N resends
	}
	for _, id := range ids {
		if live, sending := ff.retry(id); live || !sending {
			delete(ff.waits, id)
		}
	}
}

// react records a modelled reaction at now (reactAt), once per instant.
func (ff *flowFaults) react(now sim.Time) {
	if n := len(ff.reactAt); n == 0 || ff.reactAt[n-1] != now {
		ff.reactAt = append(ff.reactAt, now)
	}
}

// catch holds every flow of a transport without endpoint reroute (RoCE) that stalled on a
// dead link (and is not waiting yet) until its retransmission timer: RTO after its last
// progress [IBTA §9.7: the requester resends from the oldest unacknowledged packet after a
// timeout].
func (ff *flowFaults) catch(now sim.Time) {
	ff.catchAt = -1
	ff.stallBuf = ff.net.Stalled(ff.stallBuf)
	type due struct {
		at sim.Time
		id flow.FlowID
	}
	var dues []due
	var left map[flow.FlowID]float64 // bytes left by stalled flow, read once
	for _, st := range ff.stallBuf {
		if st.Held || ff.waits[st.ID] != nil {
			continue
		}
		if left == nil {
			left = map[flow.FlowID]float64{}
			for _, fi := range ff.net.Flows(nil) {
				left[fi.ID] = fi.Remaining
			}
		}
		w := &qpWait{since: st.Since, link: st.Link, cause: -1,
			sendFor: sim.Time(left[st.ID] * 8 / float64(ff.r.t.Params().HostLink) * 1e12)}
		if st.Link >= 0 && st.Link < len(ff.cause) {
			w.cause = int(ff.cause[st.Link])
		}
		ff.waits[st.ID] = w
		ff.net.Hold(st.ID, true)
		dues = append(dues, due{at: st.Since + ff.rto, id: st.ID})
	}
	slices.SortFunc(dues, func(a, b due) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	for i := 0; i < len(dues); {
		j := i
		var ids []flow.FlowID
		for ; j < len(dues) && dues[j].at == dues[i].at; j++ {
			ids = append(ids, dues[j].id)
		}
		ff.scheduleTick(max(dues[i].at, now), ids)
		i = j
	}
}

func (ff *flowFaults) scheduleTick(at sim.Time, ids []flow.FlowID) {
	ff.ticks = append(ff.ticks, ids)
	ff.s.AtOwnKey(at, ff.kTick, int32(len(ff.ticks)-1), 0)
}

// retry releases a waiting flow onto the path its QP hashes to now: it reports whether that
// path is live (else the flow is held again).
func (ff *flowFaults) retry(id flow.FlowID) (live, sending bool) {
	ff.net.Hold(id, false)
	if _, err := ff.reroute(func(x flow.FlowID, _ bool) bool { return x == id }); err != nil {
		ff.s.Stop(fmt.Errorf("flow level: rerouting a waiting QP at %v: %w", ff.s.Now(), err))
	}
	switch ff.net.Blocked(id) {
	case -2:
		return false, false
	case -1:
		return true, true
	}
	ff.net.Hold(id, true)
	return false, true
}

// tick is the retransmission timer of the waiting flows ids: each resends on the path it
// hashes to now (routing may have reconverged); a flow whose path is still dead after
// retry_count + 1 timeouts errors its QPs, restarting the job.
func (ff *flowFaults) tick(now sim.Time, i int) {
	ids := ff.ticks[i]
	ff.ticks[i] = nil
	var again []flow.FlowID
	for _, id := range ids {
		w := ff.waits[id]
		if w == nil || w.errored {
			continue
		}
		w.tries++
		if now-w.since >= ff.budget {
			// The timeout after the last retry: the QP errors [IBTA §9.7].
			w.errored = true
			ff.errored++
			ff.qpError(now, flow.StallInfo{ID: id, Since: w.since, Link: w.link}, w.cause)
			continue
		}
		ff.react(now) // the timer fired: go-back-N resends from the oldest unacknowledged packet
		if live, sending := ff.retry(id); live || !sending {
			delete(ff.waits, id)
			continue
		}
		again = append(again, id)
	}
	if len(again) > 0 {
		ff.scheduleTick(now+ff.rto, again)
	}
	// The restarted job's QPs go on at once where a path is up (in another plane when
	// theirs has none: the new communicators leave a dead port out).
	ff.releaseErrored()
}

// releaseErrored lets the flows whose QPs gave up go on once their path is live: the
// restarted job's traffic on the network as it is now.
func (ff *flowFaults) releaseErrored() {
	if ff.errored == 0 || ff.onQPError != nil {
		return
	}
	ids := make([]flow.FlowID, 0, ff.errored)
	for id, w := range ff.waits {
		if w.errored {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		if live, sending := ff.retry(id); live || !sending {
			delete(ff.waits, id)
			ff.errored--
		}
	}
}

// check errors the QPs of every flow stalled for the whole retry budget by now.
func (ff *flowFaults) check(now sim.Time) {
	ff.stallBuf = ff.net.Stalled(ff.stallBuf)
	for _, st := range ff.stallBuf {
		if st.Since > now-ff.budget {
			continue
		}
		ev := -1
		if st.Link >= 0 && st.Link < len(ff.cause) {
			ev = int(ff.cause[st.Link])
		}
		ff.qpError(st.Since+ff.budget, st, ev)
	}
}

// qpError records that the QPs of flow st (stalled since st.Since on st.Link by event ev)
// gave up at: a job restart, once per failure; in a traffic run (onQPError set), the
// transfer's final error.
func (ff *flowFaults) qpError(at sim.Time, st flow.StallInfo, ev int) {
	if ff.onQPError != nil {
		ff.onQPError(at, st, ev)
		return
	}
	{
		key := [3]int64{-1, -1, -1}
		if ev >= 0 {
			e := &ff.evs[ev]
			key = [3]int64{int64(e.Entry), int64(e.Cycle), int64(e.At)}
		}
		if k, ok := ff.byCause[key]; ok {
			ff.restarts[k].QPFlows++
			return
		}
		ff.byCause[key] = len(ff.restarts)
		// The job restarts: its new communicators' QPs may use any port that is up (a QP
		// with no live path in its plane takes another plane), this one's and later ones.
		ff.r.crossPlane = true
		if st.Src == 0 && st.Dst == 0 {
			st.Src, st.Dst = ff.hosts(st.ID)
		}
		ff.restarts = append(ff.restarts, flowRestart{At: at, Since: st.Since, Src: st.Src, Dst: st.Dst, Link: st.Link, Event: ev, QPFlows: 1})
	}
}

// hosts returns sending flow id's hosts (-1, -1 when it is not sending).
func (ff *flowFaults) hosts(id flow.FlowID) (int, int) {
	ff.stallBuf = ff.net.Stalled(ff.stallBuf)
	for _, st := range ff.stallBuf {
		if st.ID == id {
			return st.Src, st.Dst
		}
	}
	return -1, -1
}

// stuck describes the flows still stalled when the job could not finish: the failure that
// cut them off and why no transport could go on.
func (ff *flowFaults) stuck(namer func(int) string) string {
	ff.stallBuf = ff.net.Stalled(ff.stallBuf)
	if len(ff.stallBuf) == 0 {
		return ""
	}
	st := ff.stallBuf[0]
	if w := ff.waits[st.ID]; w != nil {
		st.Link = w.link
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d flow(s) stalled with no live path, the first h%d -> h%d since %v on %s", len(ff.stallBuf), st.Src, st.Dst, st.Since, namer(st.Link))
	action := ""
	var at sim.Time
	if st.Link >= 0 && st.Link < len(ff.cause) && ff.cause[st.Link] >= 0 {
		e := &ff.evs[ff.cause[st.Link]]
		action, at = e.Action, e.At
		fmt.Fprintf(&b, " (faults[%d]: %s %s at %v)", e.Entry, e.Action, e.Target, e.At)
	}
	switch {
	case !ff.model.EndpointReroute && action == "down" && ff.s.Now() < at+ff.reconv+ff.rto:
		// It resumes at its first retransmission after routing reconverged.
		resume := at + ff.reconv
		if ff.rto > 0 && resume > st.Since {
			resume = st.Since + (resume-st.Since+ff.rto-1)/ff.rto*ff.rto
		}
		fmt.Fprintf(&b, "; %s routing moves off a dead link only %s (%v) after it went down, and a stalled QP resends at its retransmission timeout (%v), so it waits until about %v: lower %s or the transport's rto, or raise run.duration",
			ff.name, ff.reconvName, ff.reconv, ff.rto, resume, ff.reconvName)
	case !ff.model.EndpointReroute && (action == "blackhole" || action == "loss" || action == "ber"):
		fmt.Fprintf(&b, "; %s routing only avoids links that are down (a blackhole or a lossy link is no link-state signal), so its QPs keep hashing into it and %s", ff.name, ff.cannot("the job cannot continue"))
	case !ff.model.EndpointReroute:
		b.WriteString("; no path between the two hosts is up in any plane (every port of a host down cuts it off), so " + ff.cannot("a restarted job could not run there either (a spare host would be needed)"))
	default:
		b.WriteString("; every path between the two hosts is dead, so " + ff.cannot("a restarted job could not run there either (a spare host would be needed)"))
	}
	return b.String()
}

// cannot is what a stall that cannot end means: for a training job (the restart model) job,
// else (a traffic run or a workload, whose QP errors are final) that the flows wait until a
// path returns.
func (ff *flowFaults) cannot(job string) string {
	if ff.onQPError != nil {
		return "the flows cannot go on until a path between them returns"
	}
	return job
}

// reroute is fc.Reroute, with the rate ceiling (if any) told that the flows it selects may
// take new paths (flowCeiling.reroute).
func (ff *flowFaults) reroute(sel func(id flow.FlowID, stalled bool) bool) (int, error) {
	if ff.ceil == nil {
		return ff.fc.Reroute(sel)
	}
	return ff.ceil.reroute(func() (int, error) { return ff.fc.Reroute(sel) })
}
