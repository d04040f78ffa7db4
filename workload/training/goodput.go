package training

import (
	"fmt"
	"math"

	"github.com/lockstepsim/lockstep/fault"
	"github.com/lockstepsim/lockstep/sim"
)

// Reliability defaults.
const (
	// DefaultGPUMTBF is the per-GPU mean time between job-interrupting failures: Llama 3
	// (Dubey et al., "The Llama 3 Herd of Models", 2024, §3.3.4) saw 419 unexpected
	// interruptions in a 54-day snapshot of 16,384 H100 GPUs, i.e. a job MTBF of 11,135 s,
	// 16,384 x 54 days / 419 = 1.824e8 s per GPU with every cause (GPU, HBM, host, network)
	// attributed to the GPUs.
	DefaultGPUMTBF Seconds = 16384 * 54 * 86400 / 419.0
	// DefaultLinkMTBF is one link's mean time between failures at the Alibaba HPN rate
	// (fault.HPNLinkFailuresPerDay, 1.9e-5 per link per day).
	DefaultLinkMTBF Seconds = 86400 / fault.HPNLinkFailuresPerDay
	// DefaultHorizon is the Monte Carlo horizon: 30 days of training.
	DefaultHorizon Seconds = 30 * 86400
	// DefaultTrials is the number of Monte Carlo horizons simulated.
	DefaultTrials = 1000
	// DefaultCheckpointWrite and DefaultRestart are the checkpoint write and restart times
	// used when none are given (lockstep's choice; Llama 3 does not publish its own).
	DefaultCheckpointWrite Seconds = 60
	DefaultRestart         Seconds = 600
)

// MaxMonteCarloDraws bounds the failures the goodput Monte Carlo draws (about a second of
// work).
const MaxMonteCarloDraws = 5e7

// FailureProcess is a failure process beyond the MTBF inputs, such as a flapping link from a
// scenario's fault schedule: Rate failures per second (treated as a Poisson process of that
// rate by the efficiency model and the Monte Carlo), of which the fraction Restarts restarts
// the job and the rest the transport absorbs.
type FailureProcess struct {
	Name     string
	Rate     float64 // failures per second
	Restarts float64 // fraction in [0, 1] that restart the job
}

// Goodput is the reliability part of a training configuration: failure rates, checkpoint
// and restart costs, and the Monte Carlo's horizon.
//
// Failures are classified. Restarting (the job stops, restarts from the last checkpoint):
// a GPU loss (GPUMTBF per GPU; by default covering every cause, see DefaultGPUMTBF), a NIC
// loss (NICMTBF per NIC port; 0 = counted in GPUMTBF), and the fraction
// LinkFailureRestarts of link failures (LinkMTBF per link): under RoCE a link failure breaks
// the QPs crossing it once the retry budget runs out, so the fraction is 1; under MRC the
// transport sprays around a failed path and absorbs it, so the fraction is 0 (the rest are
// absorbed: counted, no restart). The job MTBF is M = 1 / (GPUs/GPUMTBF + NICs/NICMTBF +
// f x Links/LinkMTBF).
type Goodput struct {
	GPUMTBF             Seconds  `yaml:"gpu_mtbf,omitempty"`              // per GPU; default DefaultGPUMTBF
	NICMTBF             Seconds  `yaml:"nic_mtbf,omitempty"`              // per NIC port; 0: included in gpu_mtbf
	LinkMTBF            Seconds  `yaml:"link_mtbf,omitempty"`             // per link; default DefaultLinkMTBF
	Links               int      `yaml:"links,omitempty"`                 // links whose failure can hit the job; 0: the fabric's
	NICs                int      `yaml:"nics,omitempty"`                  // NIC ports; 0: the fabric's
	LinkFailureRestarts *float64 `yaml:"link_failure_restarts,omitempty"` // fraction in [0, 1]; default: the transport's (MRC 0, RoCE 1)
	CheckpointWrite     Seconds  `yaml:"checkpoint_write,omitempty"`      // d; default 60s
	CheckpointInterval  Seconds  `yaml:"checkpoint_interval,omitempty"`   // tau; 0: Daly's optimum
	Restart             Seconds  `yaml:"restart,omitempty"`               // R; default 600s
	Horizon             Seconds  `yaml:"horizon,omitempty"`               // Monte Carlo horizon; default 30 days
	Trials              int      `yaml:"trials,omitempty"`                // Monte Carlo horizons; default 1000
	Seed                uint64   `yaml:"seed,omitempty"`                  // Monte Carlo seed
}

// GoodputResult is the expected goodput of a job.
type GoodputResult struct {
	JobMTBF          float64 // M, seconds between restarting failures
	RestartsPerDay   float64 // restarting failures per day
	AbsorbedPerDay   float64 // link failures absorbed by the transport, per day
	Young            float64 // Young's interval sqrt(2 d M), seconds
	Daly             float64 // Daly's higher-order interval, seconds
	Interval         float64 // the interval evaluated (given, else Daly's)
	Efficiency       float64 // Daly's model at Interval: useful time / wall time
	MonteCarlo       float64 // the Monte Carlo's mean efficiency
	MonteCarloStdErr float64 // its standard error
}

// YoungInterval returns Young's first-order optimum checkpoint interval sqrt(2 d M) for a
// checkpoint write of d seconds and a job MTBF of M seconds (J. W. Young, "A first order
// approximation to the optimum checkpoint interval", CACM 1974).
func YoungInterval(d, M float64) float64 { return math.Sqrt(2 * d * M) }

// DalyInterval returns Daly's higher-order optimum (J. T. Daly, "A higher order estimate of
// the optimum checkpoint interval for restart dumps", Future Generation Computer Systems 22,
// 2006, eq. 37): tau = sqrt(2 d M) [1 + 1/3 sqrt(d/(2M)) + d/(9 x 2M)] - d for d < 2M, and M
// otherwise. With M = 11,135 s and d = 60 s it is 1,116 s (Young's 1,156 s).
func DalyInterval(d, M float64) float64 {
	if d >= 2*M {
		return M
	}
	return math.Sqrt(2*d*M)*(1+math.Sqrt(d/(2*M))/3+d/(18*M)) - d
}

// DalyEfficiency returns the fraction of wall time doing useful work for compute segments of
// tau seconds each followed by a checkpoint of d, failures exponential with mean M, and a
// restart of R after each failure, in Daly's model (2006, eq. 13): the wall time of T_s of
// work is T_w = M e^{R/M} (e^{(tau+d)/M} - 1) T_s / tau, failures may strike during a
// checkpoint or a restart, and each failure loses the work since the last checkpoint. So
//
//	efficiency = tau / (M e^{R/M} (e^{(tau+d)/M} - 1))
//
// This is the expression that gives 85.2% for M = 11,135 s, d = 60 s, R = 600 s at tau =
// 1,156 s (Young's) or 1,116 s (Daly's): the optimum is flat. The first-order estimate
// 1 - d/tau - (tau+d)/(2M) - R/M gives 84.0% instead.
func DalyEfficiency(tau, d, R, M float64) float64 {
	return tau / (M * math.Exp(R/M) * math.Expm1((tau+d)/M))
}

// MonteCarloEfficiency simulates trials horizons of horizon seconds each and returns the
// mean fraction of the horizon spent on work that was checkpointed, with its standard error.
// Within a horizon the job runs segments of tau seconds of work plus a d-second checkpoint;
// failures arrive as a Poisson process of mean interval M (at any time: computing,
// checkpointing or restarting); a failure discards the segment under way and costs a restart
// of R seconds (itself restarted if a failure strikes), after which the segment runs again.
// A trial runs until the first segment that completes at or after the horizon, and its
// efficiency is the checkpointed work over that time (the renewal-reward ratio): cutting the
// trial at the horizon instead would lose the segment under way, about (tau + d) / 2 /
// horizon, and bias long checkpoint intervals low (1 day in 30: 97.0% against Daly's 99.9%).
// Deterministic for a seed (the stream sim.Stream(seed, "training.goodput")).
func MonteCarloEfficiency(tau, d, R, M, horizon float64, trials int, seed uint64) (mean, stderr float64) {
	rng := sim.Stream(seed, "training.goodput")
	var sum, sum2 float64
	seg := tau + d
	for k := 0; k < trials; k++ {
		t, work := 0.0, 0.0
		// Past 100 horizons without a completed segment (failures far more frequent than a
		// segment), the trial stops: its efficiency is then about 0, as it should be.
		for t < 100*horizon {
			x := rng.ExpFloat64() * M
			if x >= seg {
				t += seg
				work += tau
				if t >= horizon {
					break
				}
				continue
			}
			t += x
			for t < 100*horizon {
				y := rng.ExpFloat64() * M
				if y >= R {
					t += R
					break
				}
				t += y
			}
		}
		e := work / t
		sum += e
		sum2 += e * e
	}
	n := float64(trials)
	mean = sum / n
	if trials > 1 {
		stderr = math.Sqrt(math.Max(0, sum2/n-mean*mean) / (n - 1))
	}
	return mean, stderr
}

// resolve fills the defaults; restarts is the transport's default fraction of link failures
// that restart the job.
func (g Goodput) resolve(restarts float64) Goodput {
	if g.GPUMTBF == 0 {
		g.GPUMTBF = DefaultGPUMTBF
	}
	if g.LinkMTBF == 0 {
		g.LinkMTBF = DefaultLinkMTBF
	}
	if g.LinkFailureRestarts == nil {
		g.LinkFailureRestarts = &restarts
	}
	if g.CheckpointWrite == 0 {
		g.CheckpointWrite = DefaultCheckpointWrite
	}
	if g.Restart == 0 {
		g.Restart = DefaultRestart
	}
	if g.Horizon == 0 {
		g.Horizon = DefaultHorizon
	}
	if g.Trials == 0 {
		g.Trials = DefaultTrials
	}
	return g
}

// validate checks the fields (paths relative to the goodput block).
func (g Goodput) validate() error {
	fin := func(v Seconds) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) && v >= 0 }
	for _, c := range []struct {
		path string
		v    Seconds
	}{{"gpu_mtbf", g.GPUMTBF}, {"nic_mtbf", g.NICMTBF}, {"link_mtbf", g.LinkMTBF}, {"checkpoint_write", g.CheckpointWrite},
		{"checkpoint_interval", g.CheckpointInterval}, {"restart", g.Restart}, {"horizon", g.Horizon}} {
		if !fin(c.v) {
			return errorf(c.path, "%v: want a finite duration >= 0", c.v)
		}
	}
	if g.Links < 0 || g.NICs < 0 {
		return errorf("links", "links %d, nics %d: want counts >= 0 (0: the fabric's)", g.Links, g.NICs)
	}
	if f := g.LinkFailureRestarts; f != nil && !(*f >= 0 && *f <= 1) {
		return errorf("link_failure_restarts", "%g: want a fraction in [0, 1] (0: every link failure absorbed, as under MRC; 1: every one restarts the job, as under RoCE)", *f)
	}
	if g.Trials < 0 || g.Trials > 1_000_000 {
		return errorf("trials", "%d: want 0 (default %d) to 1000000", g.Trials, DefaultTrials)
	}
	if g.Horizon > 0 && g.Horizon < 60 {
		return errorf("horizon", "%v: want at least 60s", g.Horizon)
	}
	return nil
}

// Evaluate computes the expected goodput for a job of gpus GPUs on a fabric with nics NIC
// ports and links links (the fields Links and NICs, when set, win), where restarts is the
// transport's default fraction of link failures that restart the job. Errors: a field out of
// range (paths relative to the goodput block), or no failure source at all.
func (g Goodput) Evaluate(gpus, nics, links int, restarts float64, extra ...FailureProcess) (GoodputResult, error) {
	if err := g.validate(); err != nil {
		return GoodputResult{}, err
	}
	g = g.resolve(restarts)
	if g.Links > 0 {
		links = g.Links
	}
	if g.NICs > 0 {
		nics = g.NICs
	}
	rate := float64(gpus) / float64(g.GPUMTBF)
	if g.NICMTBF > 0 {
		rate += float64(nics) / float64(g.NICMTBF)
	}
	linkRate := float64(links) / float64(g.LinkMTBF)
	f := *g.LinkFailureRestarts
	rate += f * linkRate
	absorbed := (1 - f) * linkRate
	for _, x := range extra {
		rate += x.Rate * x.Restarts
		absorbed += x.Rate * (1 - x.Restarts)
	}
	if !(rate > 0) {
		return GoodputResult{}, errorf("gpu_mtbf", "%v with %d GPUs gives no failures; want a finite MTBF", g.GPUMTBF, gpus)
	}
	M := 1 / rate
	d, R := float64(g.CheckpointWrite), float64(g.Restart)
	res := GoodputResult{JobMTBF: M, RestartsPerDay: rate * 86400, AbsorbedPerDay: absorbed * 86400,
		Young: YoungInterval(d, M), Daly: DalyInterval(d, M)}
	res.Interval = float64(g.CheckpointInterval)
	if res.Interval == 0 {
		res.Interval = res.Daly
	}
	if res.Interval <= 0 {
		return GoodputResult{}, fmt.Errorf("training: checkpoint interval %g s: want > 0", res.Interval)
	}
	res.Efficiency = DalyEfficiency(res.Interval, d, R, M)
	// The Monte Carlo draws about horizon/M failures per trial (more when restarts keep
	// failing): bound the work so a tiny MTBF or a huge horizon is an error, not a hang.
	if draws := float64(g.Horizon) / min(M, res.Interval+d) * float64(g.Trials); draws > MaxMonteCarloDraws {
		return GoodputResult{}, errorf("horizon", "%v over %d trials with a job MTBF of %.3g s is about %.3g failures to draw; at most %.0g: shorten the horizon, fewer trials, or longer MTBFs",
			g.Horizon, g.Trials, M, draws, float64(MaxMonteCarloDraws))
	}
	res.MonteCarlo, res.MonteCarloStdErr = MonteCarloEfficiency(res.Interval, d, R, M, float64(g.Horizon), g.Trials, g.Seed)
	return res, nil
}
