package scenario

import (
	"strings"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// name resolves the scenario's name (default "scenario", a safe folder name); it relies on
// nothing.
func (r *resolver) name() error {
	sc := r.sc
	if sc.Name == "" {
		sc.Name = DefaultName
	}
	for _, c := range sc.Name {
		if !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return Errorf("name", "%q has character %q; allowed letters, digits, '-', '_' and '.'", sc.Name, c)
		}
	}
	if strings.HasPrefix(sc.Name, ".") {
		return Errorf("name", "%q must not start with '.'", sc.Name)
	}
	return nil
}

// run resolves the run section (engine, seed, duration, drain, sampling, packet limits, fault
// baseline, out) and the packet-level link limit; it relies on the name and the topology.
func (r *resolver) run() error {
	sc := r.sc
	run := &sc.Run
	r.wl = len(sc.Workload.Collectives) > 0 || sc.Workload.Training != nil || sc.Workload.Chakra != nil
	if err := r.engine(); err != nil {
		return err
	}
	if run.Seed == 0 {
		run.Seed = DefaultSeed
	}
	r.durationGiven = run.Duration != 0
	if run.Duration == 0 {
		run.Duration = DefaultDuration
		if r.wl {
			run.Duration = DefaultWorkloadDuration
		}
	}
	if run.Drain == 0 {
		run.Drain = DefaultDrain
	}
	r.sampleGiven = run.SampleInterval != 0
	if run.SampleInterval == 0 {
		run.SampleInterval = DefaultSampleInterval
		if r.wl && run.Duration/20000 > run.SampleInterval {
			run.SampleInterval = run.Duration / 20000 // at most 20,000 samples over a workload's bound
		}
	}
	if run.Duration > MaxRunDuration {
		return Errorf("run.duration", "%v is too long for a run at run.engine %s; allowed up to %v", run.Duration, run.Engine, MaxRunDuration)
	}
	if run.SampleInterval < 10*sim.Nanosecond {
		return Errorf("run.sample_interval", "%v is too short; allowed >= 10ns", run.SampleInterval)
	}
	if run.SampleInterval > run.Duration {
		return Errorf("run.sample_interval", "%v is longer than run.duration (%v); no sample would be taken", run.SampleInterval, run.Duration)
	}
	if run.Drain < 0 || run.Drain > MaxDrain {
		return Errorf("run.drain", "%v is out of range; allowed up to %v", run.Drain, MaxDrain)
	}
	if run.MaxPackets == 0 {
		run.MaxPackets = DefaultMaxPackets
	}
	switch run.FaultBaseline {
	case "":
		run.FaultBaseline = FaultBaselineTwin
	case FaultBaselineTwin, FaultBaselineNone:
	default:
		return Errorf("run.fault_baseline", "%q is not a baseline; allowed twin, none", run.FaultBaseline)
	}
	if run.MaxPackets < 0 {
		return Errorf("run.max_packets", "%d must be positive", run.MaxPackets)
	}
	r.flowLevel = sc.Fluid()
	l := r.l
	if links := l.NumLinks(); links > MaxLinks && !r.flowLevel {
		return Errorf("topology", "%d links in all planes is beyond the packet-level limit of %d; use fewer hosts, planes or tiers (lockstep topo sizes any fabric)", links, MaxLinks)
	}
	r.switchPorts = int64(2*l.NumLinks() - l.NumHosts()*r.c.Planes)
	if err := r.fitSampling(); err != nil {
		return err
	}
	if run.Out == "" {
		run.Out = "results/" + sc.Name
	}
	return nil
}

// engine resolves run.engine (default flow for workload.training, packet otherwise) and what
// the flow engine cannot run; it relies on knowing whether a workload is given.
func (r *resolver) engine() error {
	sc := r.sc
	run := &sc.Run
	switch run.Engine {
	case "":
		run.Engine = EnginePacket
		if sc.Workload.Training != nil {
			run.Engine = EngineFlow // a training step at packet level is hours of wall time
		}
	case EnginePacket, EngineFlow:
	default:
		return Errorf("run.engine", "%q is not an engine; allowed packet, flow", run.Engine)
	}
	if run.Engine == EngineFlow && sc.Workload.Training == nil {
		if len(sc.Workload.Collectives) == 0 && sc.Workload.Chakra == nil {
			// Traffic groups: transfers at flow level (runner/flowtraffic.go), faults included.
			if k := sc.Transport.Kind; k == TransportRaw || k == "" { // "": raw, filled in later
				return Errorf("run.engine", "flow carries transfers, and raw traffic is paced packets with no transfer size; use a transport (transport.kind mrc or roce) for traffic at flow level, or run.engine: packet for raw traffic")
			}
			return nil
		}
	}
	return nil
}

// fitSampling grows a left-out run.sample_interval to keep a long run's queue samples within
// MaxQueueSamples and rejects a given one beyond it; it relies on the run step's switch ports.
func (r *resolver) fitSampling() error {
	sc := r.sc
	run := &sc.Run
	if r.switchPorts > 0 && !r.sampleGiven {
		// Left out, the sampling period grows with a long run to keep within the cap.
		if min := sim.Time(float64(run.Duration) * float64(r.switchPorts) / MaxQueueSamples); run.SampleInterval < min {
			run.SampleInterval = min + 1
		}
	}
	if samples := int64(run.Duration/run.SampleInterval) * r.switchPorts; samples > MaxQueueSamples && sc.Transport.Kind != TransportIdeal && !r.flowLevel {
		return Errorf("run.sample_interval", "%v over %v on %d switch ports is %d queue samples; allowed up to %d: use a longer interval", run.SampleInterval, run.Duration, r.switchPorts, samples, int64(MaxQueueSamples))
	}
	return nil
}

// transferDuration grows a left-out run.duration to fit the traffic's transfers (and refits
// the sampling period); it relies on the transport and the traffic being resolved.
func (r *resolver) transferDuration() error {
	sc := r.sc
	run := &sc.Run
	if r.wl {
		// A workload's duration only bounds it; it has no traffic groups. Left out, a
		// collective workload's bound follows the collectives' closed-form time (a lower
		// bound), and so does its sampling.
		exp := r.collectivesExpected()
		least := r.collectivesTime(false)
		if satMul(least, 4) > run.Duration && !r.durationGiven && len(sc.Faults) == 0 {
			// Left out, the bound grows to fit collectives whose 4 x lower bound is longer
			// than the default (as it does for transfers): 4 x their lower bound, up to the
			// longest run. A given
			// run.duration is kept: a collective it cuts short stops naming the waiting ranks.
			if least > MaxRunDuration {
				return Errorf("workload.collectives", "take at least %v (their closed form without latency, a lower bound), beyond %v, the longest run (run.engine %s); use smaller sizes or fewer iterations", least, MaxRunDuration, run.Engine)
			}
			run.Duration = min(satMul(least, 4), MaxRunDuration)
			if !r.sampleGiven {
				run.SampleInterval = max(DefaultSampleInterval, run.Duration/20000)
			}
			if err := r.fitSampling(); err != nil {
				return err
			}
		}
		if d := workloadBound(exp); d > 0 && !r.durationGiven && len(sc.Faults) == 0 && d < run.Duration && d >= satMul(least, 4) {
			// Without faults only: they were expanded against the duration already. Never below
			// 4 x the lower bound, the growth above.
			run.Duration = d
			if !r.sampleGiven {
				run.SampleInterval = max(DefaultSampleInterval, run.Duration/20000) // the run step's default at this duration
			}
			if err := r.fitSampling(); err != nil {
				return err
			}
		}
		return r.fineSampling(exp)
	}
	hosts := r.l.NumHosts()
	nic, limited := transferRate(sc.Transport, r.c)
	need := transferBound(sc.Traffic, sc.Transport, hosts, nic)
	if need > 0 && !r.durationGiven {
		// Transfers end the run when they complete; the duration only bounds it. Left out, it
		// is long enough for the busiest NIC's bytes at a quarter of line rate (or of the
		// rate the transport's credits allow a hop, transferRate), under an
		// ECMP-hashed transport (RoCE) at a sixteenth: each QP is hashed onto one path, so k flows may share a link (a 5-way
		// collision in a 128-host permutation), and a transfer left unfinished fails the run.
		factor := sim.Time(4)
		if p, ok := transport.Lookup(sc.Transport.Kind); ok && p.ECMPHashed {
			factor = 16
		}
		if need > MaxRunDuration {
			at := "line rate"
			if limited {
				at = "the rate the transport's link-level flow control allows"
			}
			return Errorf("traffic", "the busiest host NIC's transfers need at least %v at %s (%v, all planes), beyond %v, the longest run (run.engine %s); use smaller transfers or fewer of them per host", need, at, nic, MaxRunDuration, run.Engine)
		}
		if d := satAdd(satMul(need, int64(factor)), 100*sim.Microsecond); d > run.Duration {
			run.Duration = min(d, MaxRunDuration)
			if err := r.fitSampling(); err != nil {
				return err
			}
		}
	}
	if need <= 0 {
		need = run.Duration // raw traffic runs until run.duration
	}
	return r.fineSampling(need)
}

// Bounds of a left-out run.duration for collective workloads (workloadBound).
const (
	workloadBoundFactor = 100                  // times the closed-form estimate
	minWorkloadBound    = 10 * sim.Millisecond // at least
)

// workloadBound is the run.duration a collective workload gets when it is left out and the
// scenario has no faults: workloadBoundFactor x the collectives' closed-form time (a lower
// bound on their run: the NIC or scale-up rate, free reductions), at least
// minWorkloadBound, at most DefaultWorkloadDuration; 0 when there is no estimate. A run
// that takes longer stops naming the waiting ranks, as at the old 1 s bound.
func workloadBound(expected sim.Time) sim.Time {
	if expected <= 0 {
		return 0
	}
	return min(max(workloadBoundFactor*expected, minWorkloadBound), DefaultWorkloadDuration)
}

// samplesPerRun is how many queue samples a left-out run.sample_interval aims at over the
// expected run: links.csv's interval is 8 samples, so about 100 intervals (up to 250, as the
// period is rounded down to 1, 2 or 5 x a power of ten).
const samplesPerRun = 800

// fineSampling shortens a left-out run.sample_interval so that a run expected to last
// expected gets at least about samplesPerRun samples (links.csv about 100 intervals):
// expected / samplesPerRun rounded down to 1, 2 or 5 x a power of ten, at least 10 ns, never
// longer than the period the run step chose; then fitSampling grows it again if the queue
// sample cap over run.duration needs it. A given run.sample_interval, or expected <= 0, is
// left alone.
func (r *resolver) fineSampling(expected sim.Time) error {
	run := &r.sc.Run
	if r.sampleGiven || expected <= 0 {
		return nil
	}
	if t := max(niceFloor(expected/samplesPerRun), 10*sim.Nanosecond); t < run.SampleInterval {
		run.SampleInterval = t
		return r.fitSampling()
	}
	return nil
}

// niceFloor rounds t (> 0) down to 1, 2 or 5 x a power of ten picoseconds.
func niceFloor(t sim.Time) sim.Time {
	if t < 1 {
		return 1
	}
	p := sim.Time(1)
	for p <= t/10 {
		p *= 10
	}
	for _, m := range []sim.Time{5, 2} {
		if m*p <= t {
			return m * p
		}
	}
	return p
}

// collectivesExpected estimates how long workload.collectives run, for their sampling: per
// collective, its closed form (collectiveForm) at every size of its sweep times its
// iterations, with the topology's worst-case one-way latency per message on the network and
// the scale-up latency inside a domain; the longest collective's total (they run side by
// side). 0 without collectives or when no form applies.
func (r *resolver) collectivesExpected() sim.Time { return r.collectivesTime(true) }

// collectivesTime is collectivesExpected, without latencies and with every form taken as a
// lower bound when latency is false (collectiveForm): then a lower bound on the collectives'
// run whatever paths their messages take, at least what any host's fabric-only collectives
// add up to (they share its NIC).
func (r *resolver) collectivesTime(latency bool) sim.Time {
	sc := r.sc
	net := collective.Model{Rate: r.c.HostLink * sim.Rate(r.c.Planes)}
	if net.Rate <= 0 {
		return 0
	}
	var up *collective.Model
	if r.c.ScaleUpGPUs > 1 && r.c.ScaleUpRate > 0 {
		up = &collective.Model{Rate: r.c.ScaleUpRate}
		if latency {
			up.Latency = r.c.ScaleUpLatency
		}
	}
	if latency {
		net.Latency = r.l.Sizing().WorstCaseLatency
	}
	var most sim.Time
	// perHost sums, for the lower bound, the forms of every host's fabric-only collectives
	// (no scale-up domain), which share its NIC when they run side by side (a larger lower
	// bound than the longest one alone, with many collectives on the same hosts).
	var perHost []sim.Time
	for i := range sc.Workload.Collectives {
		wc := &sc.Workload.Collectives[i]
		base, sizes, err := wc.CollectiveSpec()
		if err != nil {
			continue
		}
		base.Domain = wc.Domain(r.c.ScaleUpGPUs)
		inOne := up != nil && oneDomain(wc, r.c.ScaleUpGPUs)
		var total sim.Time
		for _, sz := range sizes {
			sp := base
			if sz > 0 {
				sp.Bytes = sz
			}
			if t, ok := collectiveForm(sp, net, up, inOne, !latency); ok {
				total = satAdd(total, satMul(t, int64(max(wc.Iterations, 1))))
			}
		}
		most = max(most, total)
		if latency || up != nil || base.Domain > 1 || total == 0 {
			continue
		}
		if perHost == nil {
			perHost = make([]sim.Time, r.l.NumHosts())
		}
		for k := range wc.Ranks {
			h := k
			if len(wc.Hosts) > 0 {
				h = wc.Hosts[k]
			}
			if h >= 0 && h < len(perHost) {
				perHost[h] = satAdd(perHost[h], total)
				most = max(most, perHost[h])
			}
		}
	}
	return most
}

// oneDomain reports whether every rank of wc sits in one scale-up domain of g hosts (hosts h
// and h' share one when h/g == h'/g), so that all its messages travel at the scale-up rate.
func oneDomain(wc *Collective, g int) bool {
	if g <= 1 {
		return false
	}
	if len(wc.Hosts) == 0 {
		return wc.Ranks <= g // ranks 0..n-1 on hosts 0..n-1
	}
	for _, h := range wc.Hosts {
		if h/g != wc.Hosts[0]/g {
			return false
		}
	}
	return true
}

// collectiveForm is the closed form of sp (its algorithm resolved with sp.Domain) on the
// fabric: net is the per-GPU NIC (all planes), up the scale-up domain (nil: none), inOne that
// every rank sits in one domain. Each ring or collective form is the smaller of
// collective.Pipelined and collective.AlphaBeta (free reductions), and
//
//   - ranks in one domain: the form at the scale-up rate (the higher of it and the NIC's);
//   - a hierarchical collective whose inner groups lie in the domains: its phases
//     (collective.HierarchicalPhases), inner ones on up and outer ones on net; their sum, or
//     as a lower bound the larger of the inner sum and the outer sum (the packet-level
//     schedule overlaps the phases of successive loops, each on its own links);
//   - any other (a flat algorithm over ranks in several domains, or no domains): the form on
//     net. A ring's or a send/recv ring shift's data crosses a domain boundary at some rank
//     in every step, so the NIC form is a lower bound for them (a send/recv of one pair may
//     stay in a domain: the form at the higher rate); for the tree, halving-doubling and pairwise
//     all-to-all at least half of the busiest rank's bytes cross a NIC, so the lower bound
//     takes half the NIC form, and for recursive doubling recursiveDoublingLower.
//
// ok is false when no form applies. Without domains (up nil) a flat algorithm's form on net
// is the lower bound.
func collectiveForm(sp collective.Spec, net collective.Model, up *collective.Model, inOne, lower bool) (sim.Time, bool) {
	rs, err := sp.Resolve()
	if err != nil {
		return 0, false
	}
	form := func(s collective.Spec, m collective.Model) (sim.Time, bool) {
		t, err := collective.AlphaBeta(s, m)
		ok := err == nil
		if p, perr := collective.Pipelined(s, m); perr == nil && (!ok || p < t) {
			t, ok = p, true
		}
		return t, ok
	}
	fast := net
	if up != nil && up.Rate > fast.Rate {
		fast = *up
	}
	if up == nil {
		return form(rs, net)
	}
	if inOne {
		return form(rs, fast)
	}
	if rs.Algo == collective.Hierarchical && rs.Domain > 1 && rs.Inner >= 1 && rs.Domain%rs.Inner == 0 {
		phases, err := collective.HierarchicalPhases(rs)
		if err != nil {
			return 0, false
		}
		var inner, outer sim.Time
		for _, ph := range phases {
			m, sum := net, &outer
			if ph.Inner {
				m, sum = *up, &inner
			}
			t, ok := form(ph.Spec, m)
			if !ok {
				return 0, false
			}
			*sum = satAdd(*sum, t)
		}
		if lower {
			return max(inner, outer), true
		}
		return satAdd(inner, outer), true
	}
	t, ok := form(rs, net)
	if !ok || !lower {
		return t, ok
	}
	switch {
	case rs.Algo == collective.Direct && rs.Op == collective.SendRecv && rs.Peer != collective.ShiftPeer:
		// One pair, which may sit in one domain: only the higher rate bounds it.
		return form(rs, fast)
	case rs.Algo == collective.Ring || rs.Algo == collective.Direct:
		return t, true
	case rs.Algo == collective.RecursiveDoubling:
		return recursiveDoublingLower(rs, net, fast), true
	default:
		f, _ := form(rs, fast)
		return max(t/2, f), true
	}
}

// recursiveDoublingLower is a lower bound on a recursive-doubling all-reduce of S = rs.Bytes
// over n ranks: rank 0 exchanges S with rank d = 1, 2, 4, ... < p (p the largest power of two
// <= n), each step after the one before, so it takes S b per step, at the NIC's b when rank d
// is in another scale-up domain (d >= rs.Domain, whole domains) and at fast's b (the higher
// rate) otherwise; the fold when p < n adds S b at fast's. Without whole domains every step is
// charged at fast.
func recursiveDoublingLower(rs collective.Spec, net, fast collective.Model) sim.Time {
	bits := func(m collective.Model) float64 { return float64(rs.Bytes) * 8 / float64(m.Rate) }
	p := 1
	for p*2 <= rs.Ranks {
		p *= 2
	}
	var t float64
	for d := 1; d < p; d *= 2 {
		if rs.Domain > 1 && d >= rs.Domain {
			t += bits(net)
		} else {
			t += bits(fast)
		}
	}
	if p < rs.Ranks {
		t += bits(fast)
	}
	return sim.FromSeconds(t)
}
