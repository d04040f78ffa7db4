package runner

import (
	"fmt"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/nic"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// flowTraffic carries a scenario's traffic transfers (permutation, incast, flows, Poisson
// arrivals, htsim and ns-3 flow files, triggers) at flow level (run.engine flow): it is the
// transport.Endpoint of a flow-level traffic run, so runTransport, the triggers
// (triggers.go), flows.csv, the summary's transport block and the outcome marking are the
// packet level's, unchanged. Nothing here knows which transport runs: every difference comes
// from its flow model (transport.FlowModel, through flowRouter and flowFaults).
//
// The model. Each transfer is one fluid flow (flow.Collectives.Send) from its post, routed
// as its transport routes: a spraying transport (MRC) over the link bundles of a Clos or
// fat-tree or its sampled minimal paths elsewhere, an ECMP transport (RoCE) on the path its
// QP hashes to, one per plane per QP (the transfer's own key, as a QP's own source port). The
// fabric links run at their payload rate (payloadShare: the headers' share of the wire is
// charged); the NIC is the host links of every plane. A transfer's last byte reaches the
// receiver its path's latency after the bottleneck sent it (the propagation and switch
// hops, plus one packet's store and forward per hop: flowRouter.walk), which places it
// (Hooks.FlowPlaced); its sender completes when the acknowledgement of that byte is back,
// one ACK's one-way time later (ackLatency), which is its FCT (Hooks.FlowSent), as at
// packet level. With faults, flowFaults applies them at their times; a QP that gives up
// errors its transfer for good (as a QP in the error state: flowFaults.onQPError), and
// the run halts once only errored transfers are left.
//
// What the fluid model leaves out (docs/flow-agreement.md measures it against the packet
// level): queueing delay and congestion control dynamics (every flow is at its max-min rate
// from its first byte: no slow start, no window, no DCQCN cuts), packet loss (a lossy link
// is a capacity loss, flowFaults), and ECMP collisions inside a plane for a spraying
// transport.
type flowTraffic struct {
	s      *sim.Sim
	layout topo.Topology
	params topo.Params
	r      *flowRouter
	net    *flow.Net
	fc     *flow.Collectives
	ff     *flowFaults
	links  *flowLinkFeed
	model  transport.FlowModel
	kind   string
	name   string
	seed   uint64
	hooks  transport.Hooks

	nicRate sim.Rate // every plane's host link
	pay     int64    // payload bytes of a full data packet
	flows   []ftFlow
	posted  int64 // payload posted
	sent    int   // transfers whose sender completed
	errored int   // transfers whose QPs gave up
	errs    []error
	errAt   []sim.Time
	running int // transfers posted, not completed and not errored

	until    sim.Time // run.duration: no samples past it
	kAck     sim.Kind
	fct      *hdrhistogram.Histogram
	fctMax   int64
	activeAt sim.Time
	buf      []flow.FlowInfo

	// The goodput series: payload sent at every progIv boundary (progNext the next),
	// halved in resolution (every other sample kept, progIv doubled) when full.
	progress []progressSample
	progIv   sim.Time
	progNext sim.Time
}

// maxFlowProgress bounds a flow-level traffic run's goodput series.
const maxFlowProgress = 1 << 14

// observeProgress records the payload sent at every series boundary up to now, with the
// rates in effect since the Net's last update (flow.Config.OnAdvance, and the run's end).
func (ft *flowTraffic) observeProgress(now sim.Time) {
	for ft.progNext <= now && ft.progNext <= ft.until {
		ft.progress = append(ft.progress, progressSample{At: ft.progNext, Placed: int64(ft.net.BytesSentAt(ft.progNext))})
		if len(ft.progress) == maxFlowProgress {
			// Every other sample: those at even multiples of the doubled interval.
			k := 0
			for i := 1; i < len(ft.progress); i += 2 {
				ft.progress[k] = ft.progress[i]
				k++
			}
			ft.progress = ft.progress[:k]
			ft.progIv *= 2
			ft.progNext = ft.progress[k-1].At
		}
		ft.progNext += ft.progIv
	}
}

// ftFlow is one transfer of a flow-level traffic run.
type ftFlow struct {
	src, dst int
	bytes    int64
	hops     int
	start    sim.Time
	placedAt sim.Time // 0: not placed
	done     sim.Time // its sender's completion, 0: not done
	ideal    sim.Time
	ackLat   sim.Time
	errored  bool
	active   float64 // payload placed by activeAt as a fraction of line rate; -1 not measured
}

// newFlowTraffic builds the flow-level endpoint of sc's traffic over layout, with sc's faults
// applied to it at their times. Errors: the transport has no flow-level model (an
// *InputError), or its faults do not expand.
func newFlowTraffic(sc *scenario.Scenario, layout topo.Topology, res *Result) (*flowTraffic, error) {
	s := res.Sim
	r, caps, err := scenarioFlowRouter(sc, layout, 0, 0, 0)
	if err != nil {
		return nil, err
	}
	p := layout.Params()
	ft := &flowTraffic{s: s, layout: layout, params: p, r: r, model: r.model, kind: sc.Transport.Kind, name: r.name,
		seed: sc.Run.Seed, nicRate: p.HostLink * sim.Rate(p.Planes), fct: transport.NewFCTHistogram()}
	ft.pay = int64(r.model.WireBytes - r.model.HeaderBytes)
	stop := func(now sim.Time, err error) { s.Stop(err) }
	ncfg, ccfg := flow.Config{OnStall: stop}, flow.CollConfig{OnError: stop}
	ncfg.OnAdvance = func(now sim.Time) {
		if ft.links != nil {
			ft.links.observe(now)
		}
		ft.observeProgress(now)
	}
	// The goodput series (fault costs) is read as the fluid state advances, like links.csv:
	// no events of its own, so a fine run.sample_interval costs no events and at most
	// maxFlowProgress samples.
	ft.progIv, ft.until = max(sc.Run.SampleInterval, 1), sc.Run.Duration
	ft.progNext = ft.progIv
	if ft.ff, err = runFlowFaults(sc, layout, res, r, caps, &ncfg, &ccfg, ft.qpError); err != nil {
		return nil, err
	}
	if ft.net, err = flow.New(s, caps, ncfg); err != nil {
		return nil, err
	}
	ft.links = newFlowLinkSeries(layout, r, ft.net, sc.Run.SampleInterval)
	ceil, err := newFlowCeiling(s, ft.net, &collRouter{flowRouter: r}, r, p.HostLink, ft.ff != nil)
	if err != nil {
		return nil, err
	}
	if ft.fc, err = flow.NewCollectives(ft.net, ceilRouter(&collRouter{flowRouter: r}, ceil), ccfg); err != nil {
		return nil, &InputError{Err: err}
	}
	if ft.ff != nil {
		ft.ff.ceil = ceil
	}
	if ft.ff != nil {
		ft.ff.start(ft.net, ft.fc)
	}
	ft.kAck = s.Register("runner.flowtraffic.ack", func(now sim.Time, obj int32, _ uint64) { ft.acked(now, int(obj)) })
	res.Endpoint, res.DoneAt = ft, sim.MaxTime
	return ft, nil
}

// wireBytes is a transfer of b payload bytes on the wire: full packets of ft.pay payload,
// the last one shorter, each with the model's headers.
func (ft *flowTraffic) wireBytes(b int64) (wire, pkt int64) {
	m := ft.model
	if ft.pay <= 0 {
		return b, b
	}
	full := int64(m.WireBytes)
	wire = b / ft.pay * full
	if rem := b % ft.pay; rem > 0 {
		wire += rem + int64(m.HeaderBytes)
	}
	return wire, min(full, wire)
}

// ackLatency is an acknowledgement's one-way time over hops switches: every link's
// propagation and switch latency and the ACK's serialisation (topo.Params.RoundTrip with no
// data packet, less its data direction's hop latencies).
func (ft *flowTraffic) ackLatency(hops int) sim.Time {
	return ft.params.RoundTrip(hops, 0, ft.model.AckBytes) - sim.Time(hops+1)*ft.params.HopLatency
}

// SetHooks implements transport.Endpoint.
func (ft *flowTraffic) SetHooks(h transport.Hooks) { ft.hooks = h }

// AddFlow implements transport.Endpoint: one transfer of bytes from src to dst posted at
// start. Errors: hosts out of range, equal, or with no path between them.
func (ft *flowTraffic) AddFlow(src, dst int, bytes int64, start sim.Time) error {
	hosts := ft.layout.NumHosts()
	if src < 0 || src >= hosts || dst < 0 || dst >= hosts {
		return fmt.Errorf("flow h%d -> h%d: hosts must be in [0, %d)", src, dst, hosts)
	}
	if src == dst {
		return fmt.Errorf("flow h%d -> h%d: source and destination are the same host", src, dst)
	}
	if ft.layout.NumPaths(src, dst) == 0 {
		return fmt.Errorf("flow h%d -> h%d: no path between them in the topology", src, dst)
	}
	if bytes < 0 {
		return fmt.Errorf("flow h%d -> h%d: %d bytes; want >= 0", src, dst, bytes)
	}
	i := len(ft.flows)
	hops := nic.PairHops(ft.layout, src, dst)
	wire, pkt := ft.wireBytes(bytes)
	// The router's latency stores and forwards a full packet per hop; a transfer shorter
	// than one has only its own to forward, so its ACK's wait is that much shorter.
	ack := ft.ackLatency(hops)
	if full := int64(ft.model.WireBytes); pkt < full && hops > 0 {
		p := ft.params
		over := sim.Time(hops-1)*(p.FabricLink.TxTime(full)-p.FabricLink.TxTime(pkt)) + p.HostLink.TxTime(full) - p.HostLink.TxTime(pkt)
		ack = max(0, ack-over)
	}
	if rem := bytes % max(ft.pay, 1); rem > 0 && ft.pay > 0 {
		// The fluid rate charges each payload byte its share of a full packet's headers; the
		// last, partial packet carries all of them: the rest at the NIC rate.
		h := int64(ft.model.HeaderBytes)
		ack += ft.nicRate.TxTime(h - h*rem/ft.pay)
	}
	if one, all := ft.params.HostLink.TxTime(pkt), ft.nicRate.TxTime(wire); one > all {
		// A packet leaves on one port: a transfer of few packets cannot use every plane's
		// rate at once (nic.IdealTransfer's bound), which the fluid split over the planes does.
		ack += one - all
	}
	f := ftFlow{src: src, dst: dst, bytes: bytes, hops: hops, start: start, ackLat: ack, active: -1,
		ideal: nic.IdealTransfer(ft.params, ft.nicRate, hops, wire, pkt, ft.model.AckBytes)}
	key := sim.Mix64(ft.seed ^ 0x5eed7aff1c ^ uint64(i)*0x9e3779b97f4a7c15)
	ft.r.setOwner(key, transport.FlowOwner(i))
	if err := ft.fc.Send(start, src, dst, bytes, key, fmt.Sprintf("flow %d (h%d -> h%d)", i, src, dst),
		func(now sim.Time) { ft.delivered(now, i) }); err != nil {
		return err
	}
	ft.flows = append(ft.flows, f)
	ft.posted += bytes
	ft.running++
	return nil
}

// delivered is transfer i's last byte placed at its receiver: FlowPlaced, then its ACK's
// return.
func (ft *flowTraffic) delivered(now sim.Time, i int) {
	f := &ft.flows[i]
	f.placedAt = now
	if ft.hooks.FlowPlaced != nil {
		ft.hooks.FlowPlaced(now, i)
	}
	ft.s.At(now+f.ackLat, ft.kAck, int32(i), 0)
}

// acked is transfer i's sender completing: its FCT, the throughput snapshot at the first
// completion, FlowSent (which may post more), then OnDone when nothing is left running.
func (ft *flowTraffic) acked(now sim.Time, i int) {
	f := &ft.flows[i]
	if f.errored || f.done > 0 {
		return
	}
	f.done = now
	ft.sent++
	ft.running--
	ns := int64((now - f.start) / sim.Nanosecond)
	_ = ft.fct.RecordValue(ns)
	ft.fctMax = max(ft.fctMax, ns)
	if ft.activeAt == 0 && len(ft.flows) > 1 {
		ft.snapshotActive(now)
	}
	if ft.hooks.FlowSent != nil {
		ft.hooks.FlowSent(now, i)
	}
	ft.settled(now)
}

// settled calls OnDone when every transfer posted has completed, Halt when those left all
// errored.
func (ft *flowTraffic) settled(now sim.Time) {
	switch {
	case ft.running > 0:
	case ft.errored == 0:
		if ft.hooks.OnDone != nil {
			ft.hooks.OnDone(now)
		}
	case ft.hooks.Halt != nil:
		ft.hooks.Halt(now)
	}
}

// snapshotActive records, at the first completion, every started transfer's payload placed
// so far over its time active as a fraction of the NIC line rate: the fluid model places a
// byte when it is sent (the latency aside), as the packet level counts placed bytes.
func (ft *flowTraffic) snapshotActive(now sim.Time) {
	ft.activeAt = now
	got := make(map[int]float64)
	ft.buf = ft.net.Flows(ft.buf)
	own := ft.owners(ft.buf)
	for _, fi := range ft.buf {
		if k, ok := own[fi.ID]; ok {
			got[k] = float64(fi.Bytes) - fi.Remaining
		}
	}
	for k := range ft.flows {
		f := &ft.flows[k]
		if f.start >= now {
			continue
		}
		b, ok := got[k]
		if !ok {
			b = float64(f.bytes) // all sent (the fluid model places a byte as it is sent)
		}
		f.active = b * 8 / (now - f.start).Seconds() / float64(ft.nicRate)
	}
}

// owners maps the sending Net flows of buf (Net.Flows) to their transfers: a transfer is one
// Net flow, read from the Collectives when faults keep it (Owner), else matched by hosts
// and start among the transfers not yet placed (those of one pair and start in launch
// order, as their flows' ids are). O(flows).
func (ft *flowTraffic) owners(buf []flow.FlowInfo) map[flow.FlowID]int {
	out := make(map[flow.FlowID]int, len(buf))
	if ft.ff != nil {
		own := ft.fc.Owners()
		for _, fi := range buf {
			if k, ok := own[fi.ID]; ok {
				out[fi.ID] = k
			}
		}
		return out
	}
	type key struct {
		src, dst int
		start    sim.Time
	}
	open := map[key][]int{}
	for k := range ft.flows {
		if f := &ft.flows[k]; f.placedAt == 0 && !f.errored {
			kk := key{f.src, f.dst, f.start}
			open[kk] = append(open[kk], k)
		}
	}
	for _, fi := range buf { // id order: launch order within a key
		kk := key{fi.Src, fi.Dst, fi.Start}
		if q := open[kk]; len(q) > 0 {
			out[fi.ID], open[kk] = q[0], q[1:]
		}
	}
	return out
}

// qpError is flowFaults' final QP error (onQPError): the transfer of the stalled flow
// errors for good, held at rate 0.
func (ft *flowTraffic) qpError(at sim.Time, st flow.StallInfo, ev int) {
	k := ft.fc.Owner(st.ID)
	if k < 0 || ft.flows[k].errored || ft.flows[k].done > 0 {
		return
	}
	f := &ft.flows[k]
	f.errored = true
	ft.net.Hold(st.ID, true)
	ft.errored++
	ft.running--
	cause := ""
	if ev >= 0 {
		e := &ft.ff.evs[ev]
		cause = fmt.Sprintf(" (faults[%d]: %s %s at %v)", e.Entry, e.Action, e.Target, e.At)
	}
	link := "a dead link"
	if st.Link >= 0 {
		link = ft.linkName(st.Link)
	}
	ft.errs = append(ft.errs, fmt.Errorf("%s QP h%d -> h%d (flow %d) gave up at %v: no progress since %v on %s%s",
		ft.name, f.src, f.dst, k, at, st.Since, link, cause))
	ft.errAt = append(ft.errAt, at)
	ft.settled(ft.s.Now())
}

// linkName names flow link l (flowLinkName).
func (ft *flowTraffic) linkName(l int) string { return flowLinkName(ft.layout, ft.r, l) }

// Send implements collective.Transport: a flow-level traffic run carries no collective
// messages (workloads at flow level run on flow.Collectives directly).
func (ft *flowTraffic) Send(now sim.Time, m collective.Message) error {
	return fmt.Errorf("flow level: a traffic run carries no collective messages")
}

// Outstanding implements transport.Endpoint.
func (ft *flowTraffic) Outstanding() (running, errs int) { return ft.running + ft.errored, ft.errored }

// Errs implements transport.Endpoint.
func (ft *flowTraffic) Errs() []error { return ft.errs }

// Stuck implements transport.Endpoint: the transfers not done, from the flow engine's
// account, and the faults' stalled flows.
func (ft *flowTraffic) Stuck(max int) string {
	var b strings.Builder
	n := 0
	for k := range ft.flows {
		f := &ft.flows[k]
		if f.done > 0 {
			continue
		}
		if n == max {
			fmt.Fprintf(&b, "; and %d more", ft.running+ft.errored-n)
			break
		}
		if n > 0 {
			b.WriteString("; ")
		}
		state := "sending"
		switch {
		case f.errored:
			state = "QP error"
		case f.placedAt > 0:
			state = "placed, ACK in flight"
		case f.start > ft.s.Now():
			state = "not started"
		}
		fmt.Fprintf(&b, "flow %d h%d -> h%d (%d B, %s)", k, f.src, f.dst, f.bytes, state)
		n++
	}
	return b.String() // the faults' account of the stalled ones: runTransport adds flowFaults.stuck
}

// Quiesce implements transport.Endpoint: nothing to stop (the flow level has no timers
// that move packets).
func (ft *flowTraffic) Quiesce() {}

// Sample implements transport.Endpoint: no series of its own.
func (ft *flowTraffic) Sample(now sim.Time) {}

// Bytes implements transport.Endpoint: the payload the fluid flows have sent by now (the
// fluid model places a byte as it is sent, its latency aside: flow.Net.BytesSentNow), its
// wire bytes (over the payload share) and the payload posted. O(sending flows).
func (ft *flowTraffic) Bytes() (sent, placed, posted int64) {
	placed = min(int64(ft.net.BytesSentNow()), ft.posted)
	return int64(float64(placed) / payloadShare(ft.model)), placed, ft.posted
}

// Log implements transport.Endpoint: the flow level has no packets, so its loss-driven
// retransmissions are the fault model's modelled reactions (flowFaults.reactAt: MRC's
// endpoint reroute, RoCE's timer and NAK resends), and the QP errors' times. MRC on a Clos's
// bundles reacts to a failure as a capacity loss at once and logs none.
func (ft *flowTraffic) Log() (lossAt, errAt []sim.Time) {
	if ft.ff != nil {
		lossAt = ft.ff.reactAt
	}
	return lossAt, ft.errAt
}

// Link implements transport.Endpoint: half the base round trip and the payload share.
func (ft *flowTraffic) Link() (latency sim.Time, share float64) {
	return ft.baseRTT() / 2, payloadShare(ft.model)
}

// baseRTT is a full data packet's round trip over the topology's longest switch path.
func (ft *flowTraffic) baseRTT() sim.Time {
	return ft.params.RoundTrip(ft.layout.Sizing().MaxSwitchHops, ft.model.WireBytes, ft.model.AckBytes)
}

// flowTrafficDetail is the flow level's own figures in the transport block.
type flowTrafficDetail struct {
	// Engine is "flow": the figures come from the fluid model (no packets: retx, timeouts
	// and data packets are what it implies, 0 retransmissions).
	Engine string `json:"engine"`
	// Recomputations is the flow engine's rate recomputations; RefilledFlows the flows
	// their incremental refills touched (flow.Stats).
	Recomputations int64 `json:"recomputations"`
	RefilledFlows  int64 `json:"refilled_flows"`
}

// Summary implements transport.Endpoint: the common figures of the run that ended at end.
// Data packets are the transfers' packets as sent once (the fluid model resends nothing).
func (ft *flowTraffic) Summary(end sim.Time, faults []sim.Time) *transport.Summary {
	m := ft.model
	st := ft.net.Stats()
	s := &transport.Summary{Kind: ft.kind, Name: ft.name, Flows: len(ft.flows), FlowsCompleted: ft.sent,
		QPErrors: ft.errored, Detail: &flowTrafficDetail{Engine: "flow", Recomputations: st.Recomputes, RefilledFlows: st.Refilled}}
	for i, e := range ft.errs {
		if i == 5 {
			break
		}
		s.QPErrorList = append(s.QPErrorList, e.Error())
	}
	if m.WireBytes > 0 {
		s.HeaderOverheadPct = transport.Round3(100 * float64(m.HeaderBytes) / float64(m.WireBytes))
	}
	var acc transport.FCTAcc
	var maxBytes int64
	for k := range ft.flows {
		f := &ft.flows[k]
		maxBytes = max(maxBytes, f.bytes)
		if ft.pay > 0 {
			s.DataPackets += max(1, (f.bytes+ft.pay-1)/ft.pay)
		}
		if f.done > 0 {
			acc.Add(f.start, f.done, f.ideal)
		}
	}
	s.SetActive(ft.activeAt, func(yield func(float64) bool) {
		for k := range ft.flows {
			if !yield(ft.flows[k].active) {
				return
			}
		}
	})
	hops := ft.layout.Sizing().MaxSwitchHops
	wire, pkt := ft.wireBytes(maxBytes)
	s.Fill(ft.baseRTT(), nic.IdealTransfer(ft.params, ft.nicRate, hops, wire, pkt, m.AckBytes), &acc, ft.sent == len(ft.flows), ft.fct, ft.fctMax, false, end)
	return s
}

// Flows implements transport.Endpoint: one record per transfer, plane -1 (a flow-level
// transfer uses every plane its routing gives it).
func (ft *flowTraffic) Flows() []transport.FlowRecord {
	out := make([]transport.FlowRecord, len(ft.flows))
	inflight := make(map[int]int64)
	if len(ft.flows) > 0 {
		ft.buf = ft.net.Flows(ft.buf)
		own := ft.owners(ft.buf)
		for _, fi := range ft.buf {
			if k, ok := own[fi.ID]; ok {
				inflight[k] = int64(float64(fi.Bytes) - fi.Remaining)
			}
		}
	}
	for k := range ft.flows {
		f := &ft.flows[k]
		d, ok := inflight[k]
		switch {
		case f.placedAt > 0:
			d = f.bytes
		case !ok && f.start <= ft.s.Now() && !f.errored:
			d = f.bytes // all sent, in flight to the receiver
		}
		out[k] = transport.FlowRecord{Src: f.src, Dst: f.dst, Plane: -1, Bytes: f.bytes, Delivered: d,
			Start: f.start, Done: f.done, Ideal: f.ideal, ActiveOfLine: f.active}
	}
	return out
}

// Files implements transport.Endpoint: none.
func (ft *flowTraffic) Files() []transport.File { return nil }

// Run implements transport.Endpoint: the endpoint itself.
func (ft *flowTraffic) Run() any { return ft }

// drive runs a flow-level traffic run: runTransport's driveTransport without the packet
// fabric's drain and audit (the fluid model holds no packets). It returns when the traffic
// ended and the (empty) port counters then.
func (ft *flowTraffic) drive(sc *scenario.Scenario, res *Result, smp *sampler, onDone *func(sim.Time), doneAt *sim.Time) (sim.Time, []portSnap, error) {
	s := res.Sim
	*onDone = func(now sim.Time) {
		*doneAt = now
		smp.until = now
		s.Pause()
	}
	// The packet sampler is not started: there are no queues, and the goodput series comes
	// from observeProgress.
	if err := s.Run(sc.Run.Duration); err != nil {
		return 0, nil, fmt.Errorf("run stopped at %v: %w", s.Now(), err)
	}
	end := s.Now()
	ft.until = end
	ft.observeProgress(end)
	smp.progress = ft.progress
	running, errs := ft.Outstanding()
	if !res.interrupted() && *doneAt == sim.MaxTime && running > 0 && errs == 0 && s.NextAt() == sim.MaxTime {
		// Nothing left to happen (a flow stalled for good, on a transport that never gives
		// up): a failed run with its results, as at packet level.
		res.stall = fmt.Sprintf("stuck at %v: nothing left to happen with %d transfer(s) outstanding: %s", end, running, ft.Stuck(5))
	}
	smp.stoppedEarly = *doneAt == sim.MaxTime && running > 0 && end < sc.Run.Duration
	snap := snapshot(res.Net)
	smp.links.finish(end)
	res.Links = nil // a fabric too large for a series gets no links.csv (newFlowLinkSeries)
	if ft.links != nil {
		ft.links.finish(end)
		res.Links = ft.links.ls
	}
	return end, snap, nil
}
