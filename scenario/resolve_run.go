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
			return Errorf("run.engine", "flow runs workloads only (workload.collectives, workload.training or workload.chakra); traffic groups run at packet level (run.engine: packet)")
		}
		if len(sc.Faults) > 0 {
			return Errorf("faults", "not supported with run.engine flow yet; run the collectives at packet level (run.engine: packet) to fail links")
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
		if least > run.Duration && !r.durationGiven && len(sc.Faults) == 0 {
			// Left out, the bound grows to fit collectives longer than the default (as it
			// does for transfers): 4 x their lower bound, up to the longest run. A given
			// run.duration is kept: a collective it cuts short stops naming the waiting ranks.
			if least > MaxRunDuration {
				return Errorf("workload.collectives", "take at least %v (their closed form at the NIC rate without latency, a lower bound), beyond %v, the longest run (run.engine %s); use smaller sizes or fewer iterations", least, MaxRunDuration, run.Engine)
			}
			run.Duration = min(satMul(least, 4), MaxRunDuration)
			if !r.sampleGiven {
				run.SampleInterval = max(DefaultSampleInterval, run.Duration/20000)
			}
			if err := r.fitSampling(); err != nil {
				return err
			}
		}
		if d := workloadBound(exp); d > 0 && !r.durationGiven && len(sc.Faults) == 0 && d < run.Duration && d >= least {
			// Without faults only: they were expanded against the duration already.
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
	nic := r.c.HostLink * sim.Rate(r.c.Planes)
	need := transferBound(sc.Traffic, sc.Transport, hosts, nic)
	if need > 0 && !r.durationGiven {
		// Transfers end the run when they complete; the duration only bounds it. Left out, it
		// is long enough for the busiest NIC's bytes at a quarter of line rate, under an
		// ECMP-hashed transport (RoCE) at a sixteenth: each QP is hashed onto one path, so k flows may share a link (a 5-way
		// collision in a 128-host permutation), and a transfer left unfinished fails the run.
		factor := sim.Time(4)
		if p, ok := transport.Lookup(sc.Transport.Kind); ok && p.ECMPHashed {
			factor = 16
		}
		if need > MaxRunDuration {
			return Errorf("traffic", "the busiest host NIC's transfers need at least %v at line rate (%v, all planes), beyond %v, the longest run (run.engine %s); use smaller transfers or fewer of them per host", need, nic, MaxRunDuration, run.Engine)
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
// collective, its closed form (collective.AlphaBeta, free reductions) at every size of its
// sweep times its iterations, at the NIC rate (all planes) or the scale-up rate when that is
// higher (a lower bound for collectives that use it), with the topology's worst-case one-way
// latency per message; the longest collective's total (they run side by side). 0 without
// collectives or when no form applies.
func (r *resolver) collectivesExpected() sim.Time { return r.collectivesTime(true) }

// collectivesTime is collectivesExpected, without the per-message latency when latency is
// false: then a lower bound on the collectives' run whatever paths their messages take.
func (r *resolver) collectivesTime(latency bool) sim.Time {
	sc := r.sc
	rate := r.c.HostLink * sim.Rate(r.c.Planes)
	if r.c.ScaleUpGPUs > 1 && r.c.ScaleUpRate > rate {
		rate = r.c.ScaleUpRate
	}
	if rate <= 0 {
		return 0
	}
	m := collective.Model{Rate: rate}
	if latency {
		m.Latency = r.l.Sizing().WorstCaseLatency
	}
	var most sim.Time
	for i := range sc.Workload.Collectives {
		wc := &sc.Workload.Collectives[i]
		base, sizes, err := wc.CollectiveSpec()
		if err != nil {
			continue
		}
		var total sim.Time
		for _, sz := range sizes {
			sp := base
			if sz > 0 {
				sp.Bytes = sz
			}
			if t, err := collective.AlphaBeta(sp, m); err == nil {
				total = satAdd(total, satMul(t, int64(max(wc.Iterations, 1))))
			}
		}
		most = max(most, total)
	}
	return most
}
