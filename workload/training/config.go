package training

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// ConfigPath is the YAML path of a training configuration in a scenario; Config's errors
// start with it ("workload.training.plan.tp: ...").
const ConfigPath = "workload.training"

// DefaultPowerInterval is the power series' default sampling interval.
const DefaultPowerInterval = 100 * sim.Microsecond

// DefaultMaxPowerSamples bounds the power series when power.interval is not given: a run
// whose simulated steps would need more samples of DefaultPowerInterval (more than 100 s of
// steps: a huge global batch) is sampled at the smallest interval of 1, 2 or 5 x 10^k
// microseconds that fits, and a note says so. This keeps power.csv and the report's reading of
// it bounded (a 2,000 s step at 100us was 20M samples, most of a 16 s run).
const DefaultMaxPowerSamples = 1_000_000

// end returns the end of the trace's last simulated step.
func (t *Trace) end() sim.Time {
	if len(t.Steps) == 0 {
		return 0
	}
	last := t.Steps[len(t.Steps)-1]
	return last.Start + last.Time
}

// defaultPowerInterval returns DefaultPowerInterval, or the coarser interval
// DefaultMaxPowerSamples asks for over tr's steps.
func defaultPowerInterval(tr *Trace) sim.Time {
	total := tr.end()
	for scale := sim.Microsecond; ; scale *= 10 {
		for _, k := range []sim.Time{1, 2, 5} {
			iv := k * scale
			if iv >= DefaultPowerInterval && (total+iv-1)/iv <= DefaultMaxPowerSamples {
				return iv
			}
		}
	}
}

// Config is a scenario's training workload, `workload: training: {...}`:
//
//	workload:
//	  training:
//	    model: {preset: llama3-70b}        # or inline fields (Model); inline fields override the preset's
//	    gpu: {preset: h100}                # or inline (GPU)
//	    gpus: 1024                         # world size; 0: every host of the fabric
//	    plan: {tp: 8, pp: 4, order: "tp,dp,pp"}   # dp derived (Plan)
//	    steps: 1000                        # iterations reported; default 1
//	    sim_steps: 1                       # iterations simulated (the rest repeat the last); default 1
//	    exact: false                       # simulate every microbatch (no steady-round reuse)
//	    overlap: true                      # overlap gradient reduction with backward; default true
//	    bucket_bytes: 80MB                 # default: Megatron-Core's max(40M, 1M x dp) parameters
//	    chunk_bytes: 512KiB                # collective chunk; default 512 KiB
//	    tp_model: auto                     # TP inside a scale-up domain: auto | closed_form | simulated
//	    power: {interval: 100us}
//	    goodput: {checkpoint_write: 60s, restart: 600s, gpu_mtbf: 5000h}
//	    stragglers: {slow: [{ranks: [17], speed: 0.8}], jitter: {sigma: 0.02}}   # Stragglers
//
// Decode it with the scenario decoder (or go.yaml.in/yaml/v3); zero fields take the defaults
// above. Validate checks it without the fabric; Job builds the job for a fabric of a given
// host count; Run simulates it and returns the Result.
type Config struct {
	Model       Model       `yaml:"model"`                  // preset and/or inline shape and batch
	GPU         GPU         `yaml:"gpu"`                    // preset and/or inline accelerator
	GPUs        int         `yaml:"gpus,omitempty"`         // world size; 0: every host of the fabric
	Plan        Plan        `yaml:"plan"`                   // parallelism
	Steps       int         `yaml:"steps,omitempty"`        // iterations reported; default 1
	SimSteps    int         `yaml:"sim_steps,omitempty"`    // iterations simulated (<= steps); default 1
	Exact       bool        `yaml:"exact,omitempty"`        // simulate every microbatch (RunOptions.Exact)
	Overlap     *bool       `yaml:"overlap,omitempty"`      // overlap gradient reduction with backward; default true
	BucketBytes sim.Size    `yaml:"bucket_bytes,omitempty"` // gradient bucket; 0: Megatron-Core's default
	ChunkBytes  sim.Size    `yaml:"chunk_bytes,omitempty"`  // network collectives' chunk; 0: 512 KiB
	TPModel     string      `yaml:"tp_model,omitempty"`     // TP inside a scale-up domain: auto (default) | closed_form | simulated (TPModel)
	Power       PowerConfig `yaml:"power,omitempty"`        // power series sampling
	Goodput     Goodput     `yaml:"goodput,omitempty"`      // reliability inputs
	Stragglers  *Stragglers `yaml:"stragglers,omitempty"`   // slow GPUs, jitter, throttling; nil: none
}

// PowerConfig configures the power series.
type PowerConfig struct {
	Interval sim.Time `yaml:"interval,omitempty"` // sampling interval; default 100us
}

// MaxSteps bounds Config.Steps.
const MaxSteps = 100_000_000

// MinBucketBytes is the smallest gradient bucket accepted: 64 KiB.
const MinBucketBytes = 64 << 10

// Validate checks everything that does not need the fabric: model, GPU, plan (against GPUs
// when it is set), steps, sizes, power and goodput fields. Errors are *FieldError values whose
// paths start with ConfigPath and name the field, the value and what is allowed:
//
//	workload.training.plan.tp: tp=3 does not divide world size 32 (32 = tp x pp x dp needs 32 % (3x2) == 0)
func (c *Config) Validate() error {
	return under(ConfigPath, c.validate(c.GPUs))
}

func (c *Config) validate(world int) error {
	m, err := c.Model.Resolve()
	if err != nil {
		return under("model", err)
	}
	g, err := c.GPU.Resolve()
	if err != nil {
		return under("gpu", err)
	}
	if m.bytesPerElem() == 1 && g.PeakFP8TFLOPS <= 0 {
		return errorf("gpu.peak_fp8_tflops", "0 but the model's dtype is fp8; give the GPU's dense fp8 peak")
	}
	if c.GPUs < 0 || c.GPUs > 1<<24 {
		return errorf("gpus", "%d: want 0 (every host) or a world size of 1 to %d", c.GPUs, 1<<24)
	}
	if world > 0 {
		if _, err := c.Plan.Resolve(world, m); err != nil {
			return err
		}
	}
	if _, err := ParseTPModel(c.TPModel); err != nil {
		return err
	}
	switch {
	case c.Steps < 0 || c.Steps > MaxSteps:
		return errorf("steps", "%d: want 0 (1) to %d iterations", c.Steps, MaxSteps)
	case c.SimSteps < 0 || c.SimSteps > 1000:
		return errorf("sim_steps", "%d: want 0 (1) to 1000 simulated iterations", c.SimSteps)
	case c.SimSteps > max(c.Steps, 1):
		return errorf("sim_steps", "%d is more than steps (%d); simulated iterations are among the reported ones", c.SimSteps, max(c.Steps, 1))
	case c.BucketBytes < 0 || c.BucketBytes > 0 && c.BucketBytes < MinBucketBytes:
		return errorf("bucket_bytes", "%v: want 0 (Megatron-Core's default) or at least %v (smaller buckets launch a collective per few parameters)", c.BucketBytes, sim.Size(MinBucketBytes))
	case c.ChunkBytes < 0:
		return errorf("chunk_bytes", "%v: want 0 (512KiB) or a positive size", c.ChunkBytes)
	case c.Power.Interval < 0 || c.Power.Interval > 0 && c.Power.Interval < sim.Microsecond:
		return errorf("power.interval", "%v: want a sampling interval of at least 1us (default 100us)", c.Power.Interval)
	}
	if err := under("stragglers", c.Stragglers.validate(world)); err != nil {
		return err
	}
	return under("goodput", c.Goodput.validate())
}

// Job builds the job for a fabric of hosts hosts (GPUs): the world is GPUs, or every host
// when GPUs is 0. Errors: as Validate, with paths under ConfigPath, and a world larger than
// the fabric.
func (c *Config) Job(hosts int) (*Job, error) { return c.JobOn(hosts, false, collective.Model{}) }

// JobOn is Job for a backend that carries the scale-up domain or not (Options.ScaleUp: the
// runner's backends do) over a network of per-GPU model net (Options.Network, for the
// collective selector; zero: its size rule).
func (c *Config) JobOn(hosts int, scaleUp bool, net collective.Model) (*Job, error) {
	world := c.GPUs
	if world == 0 {
		world = hosts
	}
	if world > hosts {
		return nil, errorf(ConfigPath+".gpus", "%d is more than the fabric's %d hosts", world, hosts)
	}
	if err := c.validate(world); err != nil {
		return nil, under(ConfigPath, err)
	}
	m, _ := c.Model.Resolve()
	g, _ := c.GPU.Resolve()
	p, _ := c.Plan.Resolve(world, m)
	pl, err := NewPlacement(p, g.ScaleUpGPUs)
	if err != nil {
		return nil, under(ConfigPath, err)
	}
	o := Options{Overlap: c.Overlap == nil || *c.Overlap, BucketBytes: int64(c.BucketBytes), ChunkBytes: int64(c.ChunkBytes), ScaleUp: scaleUp, Network: net}
	o.TPModel, _ = ParseTPModel(c.TPModel) // checked by validate
	j, err := NewJob(m, g, p, pl, o)
	return j, under(ConfigPath, err)
}

// Env is what the runner knows that the configuration does not.
type Env struct {
	NICs  int // NIC ports in the fabric (for NIC failures)
	Links int // links in the fabric (for link failures)
	// LinkFailureRestarts is the transport's fraction of link failures that restart the
	// job, used when goodput.link_failure_restarts is not given: 0 under MRC (absorbed by
	// spraying), 1 under RoCE (a QP breaks once its retry budget is spent).
	LinkFailureRestarts float64
	// Extra are failure processes from the scenario (a flapping link), with whether the
	// transport absorbs them.
	Extra []FailureProcess
}

// Result is every headline figure of a training run, units in the names. Times are means
// over ranks unless named max; the step is the last simulated one (later iterations repeat
// it).
type Result struct {
	Model                 string   `json:"model"`                       // model name
	GPU                   string   `json:"gpu"`                         // GPU name
	GPUs                  int      `json:"gpus"`                        // world size
	TP                    int      `json:"tp"`                          // tensor-parallel size
	PP                    int      `json:"pp"`                          // pipeline stages
	DP                    int      `json:"dp"`                          // data-parallel replicas
	EP                    int      `json:"ep"`                          // expert-parallel size
	CP                    int      `json:"cp"`                          // context-parallel size
	Schedule              string   `json:"schedule"`                    // pipeline schedule as resolved: 1f1b, interleaved or zb-h1 (1f1b with pp 1)
	VirtualStages         int      `json:"virtual_stages"`              // model chunks per rank (1 unless interleaved)
	ZeRO                  int      `json:"zero"`                        // ZeRO stage 0-3
	Recompute             string   `json:"recompute"`                   // activation recomputation: none, selective or full
	TPModel               string   `json:"tp_model"`                    // TP inside a scale-up domain: auto, closed_form or simulated
	Microbatches          int      `json:"microbatches"`                // per pipeline per step
	SimulatedMicrobatches int      `json:"simulated_microbatches"`      // of which simulated (Trace)
	Steps                 int      `json:"steps"`                       // iterations reported
	SimulatedSteps        int      `json:"simulated_steps"`             // of which simulated
	BucketBytes           int64    `json:"bucket_bytes"`                // gradient bucket in use
	StepTimeUs            float64  `json:"step_time_us"`                // step time
	ComputeUs             float64  `json:"compute_us"`                  // compute per rank (mean)
	ExposedCommUs         float64  `json:"exposed_comm_us"`             // TP + PP + DP + EP + CP waits per rank (mean)
	ExposedCommMaxUs      float64  `json:"exposed_comm_max_us"`         // the same, the most any rank saw
	TPExposedUs           float64  `json:"tp_exposed_us"`               // tensor-parallel communication (mean)
	PPWaitUs              float64  `json:"pp_wait_us"`                  // pipeline transfers (mean)
	DPExposedUs           float64  `json:"dp_exposed_us"`               // gradient reduction and ZeRO all-gather (mean)
	EPExposedUs           float64  `json:"ep_exposed_us"`               // expert all-to-alls (mean)
	CPExposedUs           float64  `json:"cp_exposed_us"`               // context-parallel key/value all-gathers and reduce-scatters (mean)
	BubbleUs              float64  `json:"bubble_us"`                   // pipeline bubble and end-of-step wait (mean)
	SyncUs                float64  `json:"sync_us"`                     // waiting for group members (mean)
	SlowestRank           int      `json:"slowest_rank"`                // the rank that finished the step last
	SlowestRankCoord      string   `json:"slowest_rank_coord"`          // its coordinates, "tp=0 dp=3 pp=0"
	SlowestWait           string   `json:"slowest_wait"`                // the category it waited on most
	SlowestWaitUs         float64  `json:"slowest_wait_us"`             // how long
	ArriveP50Us           float64  `json:"arrive_p50_us"`               // median rank's arrival at the step barrier, from the step start
	ArriveP99Us           float64  `json:"arrive_p99_us"`               // the 99th percentile rank's
	ArriveP100Us          float64  `json:"arrive_p100_us"`              // the last rank's (the step time)
	DPSkewMaxUs           float64  `json:"dp_skew_max_us"`              // longest wait of a DP collective's first member for its last
	WorstStep             int      `json:"worst_step"`                  // the simulated step with the longest time (ties: the first)
	WorstStepTimeUs       float64  `json:"worst_step_time_us"`          // its time
	WorstArriveP50Us      float64  `json:"worst_arrive_p50_us"`         // its barrier arrivals: median
	WorstArriveP99Us      float64  `json:"worst_arrive_p99_us"`         // 99th percentile
	WorstArriveP100Us     float64  `json:"worst_arrive_p100_us"`        // last
	WorstStepMFU          float64  `json:"worst_step_mfu"`              // its MFU
	MeanStepTimeUs        float64  `json:"mean_step_time_us"`           // run_time_s / steps (the reported steps' mean)
	Stragglers            string   `json:"stragglers,omitempty"`        // the stragglers configured, in words
	SlowestStraggler      string   `json:"slowest_straggler,omitempty"` // how the last step's slowest rank is configured to straggle ("at 0.8x"); absent when it is not a configured straggler
	IdealStepUs           float64  `json:"ideal_step_us"`               // compute (incl. NVLink TP) and optimizer of the busiest stage: no bubble, no network
	MFU                   float64  `json:"mfu"`                         // model FLOPs / (step time x GPUs x dense peak)
	TokensPerS            float64  `json:"tokens_per_s"`                // global batch tokens / step time
	RunTimeS              float64  `json:"run_time_s"`                  // steps x step time (no failures)
	PowerIntervalUs       float64  `json:"power_interval_us"`           // power sampling interval
	PowerMeanMW           float64  `json:"power_mean_mw"`               // mean cluster power over the step
	PowerMinMW            float64  `json:"power_min_mw"`                // lowest sample
	PowerMaxMW            float64  `json:"power_max_mw"`                // highest sample
	PowerSwingMW          float64  `json:"power_swing_mw"`              // max - min over the step
	SlewMWPerMs           float64  `json:"slew_mw_per_ms"`              // steepest change between samples
	BatteryMJ             float64  `json:"battery_mj"`                  // ∫ max(0, P - mean) dt per step
	BatteryMWh            float64  `json:"battery_mwh"`                 // the same in MWh
	BatteryRangeMJ        float64  `json:"battery_range_mj"`            // range of ∫ (P - mean) dt per step
	EnergyPerStepMJ       float64  `json:"energy_per_step_mj"`          // GPU energy per step
	GoodputFrac           float64  `json:"goodput_frac"`                // Daly's efficiency at the checkpoint interval
	GoodputMCFrac         float64  `json:"goodput_mc_frac"`             // the Monte Carlo's
	GoodputMCStdErr       float64  `json:"goodput_mc_stderr"`           // its standard error
	CkptIntervalS         float64  `json:"ckpt_interval_s"`             // checkpoint interval evaluated (given, else Daly's)
	CkptYoungS            float64  `json:"ckpt_young_s"`                // Young's optimum
	CkptDalyS             float64  `json:"ckpt_daly_s"`                 // Daly's optimum
	JobMTBFS              float64  `json:"job_mtbf_s"`                  // mean time between restarting failures
	RestartsPerDay        float64  `json:"restarts_per_day"`            // restarting failures per day
	AbsorbedPerDay        float64  `json:"absorbed_failures_per_day"`   // link failures the transport absorbs, per day
	Periodic              bool     `json:"periodic"`                    // the reused 1F1B rounds were identical (Trace)
	Notes                 []string `json:"notes,omitempty"`             // warnings

	// StepRecords has one record per simulated step: steps.csv's rows. The runner fills
	// SlowestLink and Events after the run (they need the fabric and the fault timeline).
	StepRecords []StepRecord `json:"-"`

	trace *Trace
	power *PowerSeries
	// stepsDiffer: the simulated steps do not all take the last one's time; stragglers: the
	// configuration has stragglers.
	stepsDiffer, stragglers bool
	slowestPeer             string // "; its TP group holds rank 11 (at 0.8x)" when a peer, not the slowest rank, is a straggler
}

// Run simulates the job (built by c.Job) on s with backend b and evaluates power and
// goodput. Errors: the run's (a stuck rank, a backend refusing a collective) and the power
// and goodput inputs' (paths under ConfigPath).
func (c *Config) Run(j *Job, s *sim.Sim, b Backend, env Env) (*Result, error) {
	steps := max(c.Steps, 1)
	simSteps := min(max(c.SimSteps, 1), steps)
	tr, err := j.Run(s, b, RunOptions{Steps: simSteps, Exact: c.Exact, Stragglers: c.Stragglers})
	if err != nil {
		return nil, err
	}
	return c.Evaluate(tr, env)
}

// Evaluate turns a trace (from Job.Run, or Run.Trace for a runner driving the simulation
// itself) into the Result: headline figures from the last simulated step, the power series
// and the goodput. Errors: as Run.
func (c *Config) Evaluate(tr *Trace, env Env) (*Result, error) {
	if len(tr.Steps) == 0 {
		return nil, fmt.Errorf("training: the trace has no steps")
	}
	j := tr.Job
	interval, coarse := c.Power.Interval, ""
	if interval == 0 {
		interval = defaultPowerInterval(tr)
		if interval != DefaultPowerInterval {
			coarse = fmt.Sprintf("power sampled every %v, not the default %v, to keep the series to at most %d samples over %.1f s of simulated steps (give power.interval to choose)", interval, DefaultPowerInterval, DefaultMaxPowerSamples, tr.end().Seconds())
		}
	}
	ps, err := tr.Power(interval)
	if err != nil {
		return nil, under(ConfigPath, err)
	}
	gr, err := c.Goodput.Evaluate(j.World(), env.NICs, env.Links, env.LinkFailureRestarts, env.Extra...)
	if err != nil {
		return nil, under(ConfigPath+".goodput", err)
	}
	st := tr.Steps[len(tr.Steps)-1]
	pw := ps.Steps[len(ps.Steps)-1]
	us := func(t sim.Time) float64 { return t.Micros() }
	steps := max(c.Steps, 1)
	r := &Result{
		Model: j.Model.Name, GPU: j.GPU.Name, GPUs: j.World(), TP: j.Plan.TP, PP: j.Plan.PP, DP: j.Plan.DP, EP: j.Plan.EP,
		Microbatches: j.micro, SimulatedMicrobatches: tr.SimulatedMicrobatches, Steps: steps, SimulatedSteps: len(tr.Steps),
		BucketBytes: j.bucket,
		StepTimeUs:  us(st.Time), ComputeUs: us(st.Mean[CatCompute]), ExposedCommUs: us(st.Mean.Exposed()),
		TPExposedUs: us(st.Mean[CatTP]), PPWaitUs: us(st.Mean[CatPP]), DPExposedUs: us(st.Mean[CatDP]), EPExposedUs: us(st.Mean[CatEP]), CPExposedUs: us(st.Mean[CatCP]),
		BubbleUs: us(st.Mean[CatBubble]), SyncUs: us(st.Mean[CatSync]),
		SlowestRank: st.Slowest, SlowestRankCoord: j.Placement.Coord(st.Slowest).String(),
		SlowestWait: st.SlowestWait.String(), SlowestWaitUs: us(st.Ranks[st.Slowest][st.SlowestWait]),
		IdealStepUs:     us(j.ideal()),
		MFU:             j.MFU(st.Time),
		TokensPerS:      float64(j.Model.Tokens()) / st.Time.Seconds(),
		PowerIntervalUs: us(interval), PowerMeanMW: pw.MeanMW, PowerMinMW: pw.MinMW, PowerMaxMW: pw.MaxMW,
		PowerSwingMW: pw.SwingMW, SlewMWPerMs: pw.SlewMWPerMs, BatteryMJ: pw.BatteryMJ, BatteryMWh: pw.BatteryMWh,
		BatteryRangeMJ: pw.BatteryRangeMJ, EnergyPerStepMJ: pw.EnergyMJ,
		GoodputFrac: gr.Efficiency, GoodputMCFrac: gr.MonteCarlo, GoodputMCStdErr: gr.MonteCarloStdErr,
		CkptIntervalS: gr.Interval, CkptYoungS: gr.Young, CkptDalyS: gr.Daly, JobMTBFS: gr.JobMTBF,
		RestartsPerDay: gr.RestartsPerDay, AbsorbedPerDay: gr.AbsorbedPerDay,
		Periodic: tr.Periodic, Notes: append([]string(nil), tr.Notes...),
		trace: tr, power: ps,
	}
	r.stragglers = c.Stragglers.Active()
	if coarse != "" {
		r.Notes = append(r.Notes, coarse)
	}
	r.CP, r.Schedule, r.VirtualStages = j.Plan.CP, j.Plan.Schedule, j.Plan.VirtualStages
	r.ZeRO, r.Recompute, r.TPModel = int(j.Plan.ZeRO), string(j.Plan.Recompute), j.Options.TPModel.String()
	var total sim.Time
	worst := 0
	for k, s := range tr.Steps {
		total += s.Time
		if s.Time > tr.Steps[worst].Time {
			worst = k
		}
		iters := 1
		if k == len(tr.Steps)-1 {
			iters = max(steps-k, 1)
		}
		r.StepRecords = append(r.StepRecords, StepRecord{Step: k, StartUs: us(s.Start), SimStartUs: us(s.SimStart), SimEndUs: us(s.SimStart + s.SimTime),
			StepTimeUs: us(s.Time), ArriveP50Us: us(s.Arrive.P50), ArriveP99Us: us(s.Arrive.P99), ArriveP100Us: us(s.Arrive.P100),
			DPSkewP50Us: us(s.DPSkew.P50), DPSkewMaxUs: us(s.DPSkew.P100), DPSkewWorst: s.DPSkewWorst,
			SlowestRank: s.Slowest, SlowestCoord: j.Placement.Coord(s.Slowest).String(), SlowestWait: s.SlowestWait.String(),
			BusiestRank: s.Busiest, BusiestUs: us(s.Ranks[s.Busiest][CatCompute]), Iterations: iters})
	}
	ws := tr.Steps[worst]
	r.ArriveP50Us, r.ArriveP99Us, r.ArriveP100Us, r.DPSkewMaxUs = us(st.Arrive.P50), us(st.Arrive.P99), us(st.Arrive.P100), us(st.DPSkew.P100)
	r.WorstStep, r.WorstStepTimeUs = worst, us(ws.Time)
	r.WorstArriveP50Us, r.WorstArriveP99Us, r.WorstArriveP100Us = us(ws.Arrive.P50), us(ws.Arrive.P99), us(ws.Arrive.P100)
	r.Stragglers, r.SlowestStraggler = c.Stragglers.String(), c.Stragglers.of(st.Slowest)
	if r.SlowestStraggler == "" && c.Stragglers.Active() {
		// A TP group computes at its slowest member's pace: name a straggling peer.
		for _, q := range j.Placement.Group(DimTP, st.Slowest) {
			if w := c.Stragglers.of(q); w != "" && q != st.Slowest {
				r.slowestPeer = fmt.Sprintf("; its TP group holds rank %d (%s)", q, w)
				break
			}
		}
	}
	r.RunTimeS = total.Seconds() + float64(steps-len(tr.Steps))*st.Time.Seconds()
	r.WorstStepMFU, r.MeanStepTimeUs = j.MFU(ws.Time), r.RunTimeS*1e6/float64(steps)
	for _, s := range tr.Steps {
		r.stepsDiffer = r.stepsDiffer || s.Time != st.Time
	}
	for _, ex := range st.Ranks {
		r.ExposedCommMaxUs = max(r.ExposedCommMaxUs, us(ex.Exposed()))
	}
	return r, nil
}

// StepRecord is one simulated step as steps.csv reports it (besides its categories and power):
// times in microseconds.
type StepRecord struct {
	Step         int     // step number, from 0
	StartUs      float64 // start in the extended timeline (the sum of the previous steps' times)
	SimStartUs   float64 // start in simulated time: the clock fault times are on
	SimEndUs     float64 // end in simulated time (SimStartUs + the simulated duration)
	StepTimeUs   float64 // step time (extended: every microbatch)
	ArriveP50Us  float64 // arrival at the step barrier over ranks, from the step start: median
	ArriveP99Us  float64 // 99th percentile (nearest rank)
	ArriveP100Us float64 // the last rank (= StepTimeUs)
	DPSkewP50Us  float64 // over the step's DP collectives: first member's wait for the last, median
	DPSkewMaxUs  float64 // the largest
	DPSkewWorst  string  // the DP collective with the largest skew
	SlowestRank  int     // the rank that reached the barrier last
	SlowestCoord string  // its coordinates, "tp=0 dp=3 pp=1"
	SlowestWait  string  // the waiting category it exceeds the mean rank in the most
	BusiestRank  int     // the rank that computed the longest (a straggler)
	BusiestUs    float64 // its compute time
	// SlowestLink is the fabric link that limited the step most (set by the runner; "" when
	// not measured, e.g. under the closed forms).
	SlowestLink string
	// Events is the fault timeline inside the step, "; "-separated (set by the runner), e.g.
	// "t=1.2ms faults[0] p0.t1-3 down".
	Events     string
	Iterations int // job steps the row stands for (the last simulated step: every later one)
}

// Trace returns the simulated trace behind the result.
func (r *Result) Trace() *Trace { return r.trace }

// Power returns the power series behind the result.
func (r *Result) Power() *PowerSeries { return r.power }

// ftoa formats v with 6 significant digits (enough for microseconds of multi-second steps
// and MW to the watt), without exponent clutter for ordinary magnitudes.
func ftoa(v float64) string {
	if v == 0 {
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 9, 64)
}

// WritePowerCSV writes the power series as CSV with the header time_us,power_mw: one row per
// sample, at the sample's start, over the simulated steps.
func (r *Result) WritePowerCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"time_us", "power_mw"}); err != nil {
		return err
	}
	for i, p := range r.power.MW {
		t := sim.Time(i) * r.power.Interval
		if err := cw.Write([]string{ftoa(t.Micros()), strconv.FormatFloat(p, 'f', 6, 64)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// StepsCSVHeader is steps.csv's header: the per-rank means of each category, the slowest
// rank, the step's power figures and how many job steps the row stands for, then the barrier
// arrival percentiles, the DP launch skew, the slowest rank's coordinates, the rank that
// computed the longest and how long, and the runner's slowest link and fault events
// (docs/outputs.md).
var StepsCSVHeader = []string{"step", "start_us", "step_time_us", "compute_us", "tp_us", "pp_us", "dp_us", "ep_us", "bubble_us", "sync_us",
	"exposed_comm_us", "slowest_rank", "slowest_wait", "power_mean_mw", "power_swing_mw", "slew_mw_per_ms", "battery_mwh", "iterations",
	"arrive_p50_us", "arrive_p99_us", "arrive_p100_us", "dp_skew_p50_us", "dp_skew_max_us", "slowest_coord", "busiest_rank", "busiest_compute_us", "slowest_link", "events", "cp_us"}

// WriteStepsCSV writes one row per simulated step (the last stands for every later iteration,
// which repeat it: iterations says how many each row is) with the header StepsCSVHeader.
// Category times are means over ranks; the rest comes from StepRecords.
func (r *Result) WriteStepsCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(StepsCSVHeader); err != nil {
		return err
	}
	tr := r.trace
	for k := range tr.Steps {
		st, pw, rec := &tr.Steps[k], r.power.Steps[k], &r.StepRecords[k]
		row := []string{strconv.Itoa(k), ftoa(st.Start.Micros()), ftoa(st.Time.Micros())}
		for c := CatCompute; c < NumCategories; c++ {
			if c != CatCP { // last, after the columns it was added behind
				row = append(row, ftoa(st.Mean[c].Micros()))
			}
		}
		row = append(row, ftoa(st.Mean.Exposed().Micros()), strconv.Itoa(st.Slowest), st.SlowestWait.String(),
			ftoa(pw.MeanMW), ftoa(pw.SwingMW), ftoa(pw.SlewMWPerMs), ftoa(pw.BatteryMWh), strconv.Itoa(rec.Iterations),
			ftoa(rec.ArriveP50Us), ftoa(rec.ArriveP99Us), ftoa(rec.ArriveP100Us), ftoa(rec.DPSkewP50Us), ftoa(rec.DPSkewMaxUs),
			rec.SlowestCoord, strconv.Itoa(rec.BusiestRank), ftoa(rec.BusiestUs), rec.SlowestLink, rec.Events, ftoa(st.Mean[CatCP].Micros()))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Summary returns a short human summary of the result (a few lines).
func (r *Result) Summary() string {
	grid := fmt.Sprintf("tp %d pp %d dp %d ep %d", r.TP, r.PP, r.DP, r.EP)
	if r.CP > 1 {
		grid = fmt.Sprintf("tp %d cp %d pp %d dp %d ep %d", r.TP, r.CP, r.PP, r.DP, r.EP)
	}
	s := fmt.Sprintf("training %s on %d %s (%s, %d microbatches): step %.3f ms (ideal %.3f), MFU %.1f%%, %.0f tokens/s\n",
		r.Model, r.GPUs, r.GPU, grid, r.Microbatches, r.StepTimeUs/1e3, r.IdealStepUs/1e3, 100*r.MFU, r.TokensPerS)
	cp := ""
	if r.CP > 1 {
		cp = fmt.Sprintf(", cp %.3f", r.CPExposedUs/1e3)
	}
	s += fmt.Sprintf("  per rank (mean): compute %.3f ms, exposed comm %.3f ms (tp %.3f, pp %.3f, dp %.3f, ep %.3f%s), bubble %.3f ms, sync %.3f ms\n",
		r.ComputeUs/1e3, r.ExposedCommUs/1e3, r.TPExposedUs/1e3, r.PPWaitUs/1e3, r.DPExposedUs/1e3, r.EPExposedUs/1e3, cp, r.BubbleUs/1e3, r.SyncUs/1e3)
	s += fmt.Sprintf("  run %.3f s for %d step%s", r.RunTimeS, r.Steps, map[bool]string{true: "s"}[r.Steps != 1])
	if r.stepsDiffer {
		s += fmt.Sprintf("; the simulated steps differ: worst step %d %.3f ms (MFU %.1f%%), mean %.3f ms over the run", r.WorstStep, r.WorstStepTimeUs/1e3, 100*r.WorstStepMFU, r.MeanStepTimeUs/1e3)
	}
	s += "\n"
	s += fmt.Sprintf("  slowest rank %d (%s): mostly waiting on %s (%.3f ms)\n", r.SlowestRank, r.SlowestRankCoord, r.SlowestWait, r.SlowestWaitUs/1e3)
	if r.stragglers {
		is := "is not a configured straggler"
		if r.SlowestStraggler != "" {
			is = "is a configured straggler (" + r.SlowestStraggler + ")"
		}
		s += fmt.Sprintf("  stragglers: %s; slowest rank %d %s%s\n", r.Stragglers, r.SlowestRank, is, r.slowestPeer)
	}
	s += fmt.Sprintf("  power: mean %.3f MW, swing %.3f MW, slew %.3f MW/ms, battery %.4g MWh per step\n", r.PowerMeanMW, r.PowerSwingMW, r.SlewMWPerMs, r.BatteryMWh)
	s += fmt.Sprintf("  goodput %.1f%% (Monte Carlo %.1f%% ± %.1f%%), checkpoint every %.0f s (Young %.0f s, Daly %.0f s), job MTBF %.0f s, %.2f restarts/day, %.2f absorbed link failures/day",
		100*r.GoodputFrac, 100*r.GoodputMCFrac, 100*r.GoodputMCStdErr, r.CkptIntervalS, r.CkptYoungS, r.CkptDalyS, r.JobMTBFS, r.RestartsPerDay, r.AbsorbedPerDay)
	for _, n := range r.Notes {
		s += "\n  note: " + n
	}
	return s
}
