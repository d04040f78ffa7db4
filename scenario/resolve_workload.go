package scenario

import (
	"fmt"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// load resolves what the scenario runs: workload.training, workload.collectives or the
// traffic groups (exactly one); it relies on the topology, the run, the transport and the
// faults (training checks their at_step).
func (r *resolver) load() error {
	sc := r.sc
	switch {
	case sc.Workload.Chakra != nil:
		return r.chakra()
	case sc.Workload.Training != nil:
		return r.training()
	case r.wl:
		return r.collectives()
	}
	return r.traffic()
}

// training resolves workload.training: the scale-up domain from the topology, then the job
// (resolveTraining); it relies on the topology and the transport kind.
func (r *resolver) training() error {
	sc, c := r.sc, r.c
	if g := &sc.Workload.Training.GPU; c.ScaleUpGPUs > 0 {
		// The topology's scale-up domain is the GPUs' NVLink: one source of truth.
		switch {
		case g.ScaleUpGPUs == 0:
			g.ScaleUpGPUs, g.ScaleUpRate, g.ScaleUpLatency = c.ScaleUpGPUs, c.ScaleUpRate, c.ScaleUpLatency
		case g.ScaleUpGPUs != c.ScaleUpGPUs:
			return Errorf("workload.training.gpu.scale_up_gpus", "%d, but the topology's scale_up.gpus is %d; give the domain once (the topology's is used when this is left out)", g.ScaleUpGPUs, c.ScaleUpGPUs)
		}
	}
	if (sc.Topology.Torus != nil || sc.Topology.Mesh != nil) && sc.Workload.Training.GPU.ScaleUpGPUs == 0 {
		// Torus chips and mesh nodes have no NVLink domain: unless the scenario gives
		// one, TP goes over the fabric rather than an HGX preset's 8-GPU NVLink.
		sc.Workload.Training.GPU.ScaleUpGPUs = 1
	}
	if sc.Transport.Kind == TransportRaw {
		return Errorf("transport.kind", "raw cannot carry a training job's collectives; allowed %s or ideal", strings.Join(transport.Kinds(), ", "))
	}
	return sc.resolveTraining(r.l.NumHosts())
}

// collectives resolves workload.collectives and their packet budget; it relies on the
// topology (hosts, scale-up domain), the run (seed, engine, max_packets) and the transport.
func (r *resolver) collectives() error {
	sc, run := r.sc, &r.sc.Run
	if len(sc.Traffic) > 0 {
		return Errorf("traffic", "given with workload.collectives; a scenario runs traffic groups or a workload, not both")
	}
	if sc.Transport.Kind == TransportRaw {
		return Errorf("transport.kind", "raw cannot carry a collective's messages; allowed %s (packet level) or ideal", strings.Join(transport.Kinds(), " or "))
	}
	moved, err := sc.Workload.resolve(workloadEnv{seed: run.Seed, hosts: r.l.NumHosts(), domain: r.c.ScaleUpGPUs, flow: run.Engine == EngineFlow && sc.Transport.Kind != TransportIdeal})
	if err != nil {
		return err
	}
	if pay := sc.Transport.payloadBytes(); pay > 0 {
		if packets := moved / pay; packets > float64(run.MaxPackets) {
			return Errorf("workload.collectives", "moves about %.3g packets, beyond run.max_packets (%d, one to four minutes of wall time); use smaller sizes, fewer ranks or iterations, transport ideal, or raise run.max_packets", packets, run.MaxPackets)
		}
	}
	return nil
}

// resolveTraining checks workload.training against a fabric of hosts hosts: the model, GPU
// and plan (the plan's arithmetic against the world size), and that nothing else runs
// beside it.
func (sc *Scenario) resolveTraining(hosts int) error {
	if len(sc.Workload.Collectives) > 0 {
		return Errorf("workload.training", "given with workload.collectives; a scenario runs one workload")
	}
	if len(sc.Traffic) > 0 {
		return Errorf("traffic", "given with workload.training; a scenario runs traffic groups or a workload, not both")
	}
	// A training job's faults act on the network its collectives and transfers run on, at
	// their simulated times from the job's start, on both engines (runner: flowFaults at flow
	// level, the fabric at packet level); a recurring flap (period) is also a failure process
	// of the goodput model; on a torus with OCS a failed chip (a switch down) is remapped
	// onto a spare cube. The entries were checked against the topology with the others.
	job, err := sc.Workload.Training.JobOn(hosts, true, collective.Model{}) // the runner's backends carry the scale-up domain
	if err != nil {
		return trainingError(err)
	}
	// Show the resolved plan (dp derived, order) and step counts in the resolved scenario.
	cfg := sc.Workload.Training
	cfg.Plan = job.Plan
	// And the model and GPU with every field their presets fill in (efficiencies, power,
	// scale-up domain, batch): the resolved scenario is what runs, and reads back the same.
	cfg.Model, cfg.GPU = job.Model, job.GPU
	cfg.Steps, cfg.SimSteps = max(cfg.Steps, 1), min(max(cfg.SimSteps, 1), max(cfg.Steps, 1))
	for i, f := range sc.Faults {
		if f.AtStep != nil && *f.AtStep >= cfg.SimSteps {
			return Errorf(fmt.Sprintf("faults[%d].at_step", i), "%d is not a simulated step: workload.training.sim_steps is %d (steps 0 to %d); raise sim_steps (and steps) to reach it", *f.AtStep, cfg.SimSteps, cfg.SimSteps-1)
		}
	}
	return nil
}

// resolve fills the workload's defaults and validates it against env; it returns the
// payload bytes the workload moves over the network (for the packet budget; 0 under
// run.engine flow).
func (w *Workload) resolve(env workloadEnv) (float64, error) {
	var moved float64
	steps := -1
	names := map[string]int{}
	ops := map[string]int{}
	for i := range w.Collectives {
		if op, err := collective.ParseCollective(w.Collectives[i].Op); err == nil {
			ops[op.String()]++
		}
	}
	for i := range w.Collectives {
		c := &w.Collectives[i]
		path := fmt.Sprintf("workload.collectives[%d]", i)
		b, err := c.resolve(path, env)
		if err != nil {
			return 0, err
		}
		moved += b
		if c.Name != "" {
			if j, dup := names[c.Name]; dup {
				return 0, Errorf(path+".name", "%q is also collectives[%d]'s name; names must differ", c.Name, j)
			}
			names[c.Name] = i
		}
	}
	for i := range w.Collectives {
		c := &w.Collectives[i]
		path := fmt.Sprintf("workload.collectives[%d]", i)
		if c.Name == "" {
			c.Name = c.Op
			if ops[c.Op] > 1 {
				c.Name = fmt.Sprintf("%s-%d", c.Op, i)
			}
			if j, dup := names[c.Name]; dup {
				return 0, Errorf(path+".name", "missing, and the default %q is collectives[%d]'s name; give this one a name", c.Name, j)
			}
			names[c.Name] = i
		}
		_, sizes, _ := c.CollectiveSpec()
		if steps >= 0 && len(sizes) != steps {
			return 0, Errorf(path+".max_bytes", "a sweep of %d sizes, but collectives[0] has %d; concurrent collectives step through their sweeps together", len(sizes), steps)
		}
		steps = len(sizes)
	}
	return moved, nil
}

// resolve fills the collective's defaults and validates it against env; it returns the
// payload bytes it moves over the network (0 under run.engine flow).
func (c *Collective) resolve(path string, env workloadEnv) (float64, error) {
	op, err := c.resolveOp(path)
	if err != nil {
		return 0, err
	}
	if err := c.resolveRanks(path, env); err != nil {
		return 0, err
	}
	if err := c.resolveData(path, op, env); err != nil {
		return 0, err
	}
	if err := c.resolveSizes(path); err != nil {
		return 0, err
	}
	engine := EnginePacket
	if env.flow {
		engine = EngineFlow
	}
	if err := checkBytes(path+".bytes", c.Bytes, engine); err != nil {
		return 0, err
	}
	if err := checkBytes(path+".max_bytes", c.MaxBytes, engine); err != nil {
		return 0, err
	}
	return c.moved(path, env)
}

// resolveOp resolves the collective's op and algorithm (canonical spellings) and rejects
// fields the op or algorithm does not use; it relies on nothing.
func (c *Collective) resolveOp(path string) (collective.Collective, error) {
	const ops = "all_reduce, reduce_scatter, all_gather, broadcast, reduce, all_to_all, send_recv"
	if c.Op == "" {
		return 0, Errorf(path+".op", "missing; allowed %s", ops)
	}
	op, err := collective.ParseCollective(c.Op)
	if err != nil {
		return 0, Errorf(path+".op", "%q is not a collective; allowed %s", c.Op, ops)
	}
	c.Op = op.String() // the canonical spelling in reports and the resolved scenario
	if c.Algorithm == "" {
		c.Algorithm = "auto"
	}
	algo, err := collective.ParseAlgorithm(c.Algorithm)
	if err != nil {
		return 0, Errorf(path+".algorithm", "%q is not an algorithm; allowed %s", c.Algorithm, strings.Join(collective.AlgorithmNames(), ", "))
	}
	c.Algorithm = algo.String()
	// Fields that apply to some operations only are errors elsewhere, not silently ignored.
	rooted := op == collective.Broadcast || op == collective.Reduce || op == collective.SendRecv
	if c.Root != 0 && !rooted {
		return 0, Errorf(path+".root", "%d is set, but %s has no root; root applies to broadcast, reduce and send_recv", c.Root, op)
	}
	if c.Peer != 0 && op != collective.SendRecv {
		return 0, Errorf(path+".peer", "%d is set, but peer applies to send_recv only", c.Peer)
	}
	if (c.Inner != 0 || c.Outer != 0) && algo != collective.Hierarchical {
		return 0, Errorf(path+".inner", "inner/outer (%d x %d) are set, but they apply to algorithm hierarchical only (this is %s)", c.Inner, c.Outer, algo)
	}
	return op, nil
}

// resolveRanks resolves the collective's placement, hosts and ranks; it relies on env's
// hosts (and seed, for placement shuffled).
func (c *Collective) resolveRanks(path string, env workloadEnv) error {
	hosts := env.hosts
	switch {
	case c.Placement == "" || c.Placement == PlacementTopology || c.Placement == PlacementSequential:
		if len(c.Hosts) > 0 && c.Placement != "" {
			return Errorf(path+".placement", "%s, but hosts lists the ranks' hosts; give one (placement: explicit goes with a hosts list)", c.Placement)
		}
		if c.Placement == "" {
			c.Placement = PlacementTopology
		}
		if len(c.Hosts) > 0 {
			c.Placement = PlacementExplicit
		}
	case c.Placement == PlacementExplicit:
		if len(c.Hosts) == 0 {
			return Errorf(path+".placement", "explicit, but no hosts list; give hosts: [h0, h1, ...] (rank r on hosts[r])")
		}
	case c.Placement == PlacementShuffled:
		if len(c.Hosts) == 0 { // drawn once; the resolved scenario records the order
			n := c.Ranks
			if n == 0 {
				n = hosts
			}
			if n >= 1 && n <= hosts {
				c.Hosts = sim.Stream(env.seed, path+".placement").Perm(n)
			}
		}
	default:
		return Errorf(path+".placement", "%q is not a placement; allowed topology (default), sequential, shuffled, explicit (with hosts)", c.Placement)
	}
	if len(c.Hosts) > 0 {
		if c.Ranks != 0 && c.Ranks != len(c.Hosts) {
			return Errorf(path+".ranks", "%d, but hosts lists %d; give one or make them agree", c.Ranks, len(c.Hosts))
		}
		seen := make(map[int]int, len(c.Hosts))
		for i, h := range c.Hosts {
			if h < 0 || h >= hosts {
				return Errorf(fmt.Sprintf("%s.hosts[%d]", path, i), "%d is out of range; the topology has hosts 0..%d", h, hosts-1)
			}
			if j, dup := seen[h]; dup {
				return Errorf(fmt.Sprintf("%s.hosts[%d]", path, i), "host %d is also rank %d; ranks need distinct hosts", h, j)
			}
			seen[h] = i
		}
		c.Ranks = len(c.Hosts)
	}
	if c.Ranks == 0 {
		c.Ranks = hosts
	}
	if c.Ranks < 1 || c.Ranks > hosts {
		return Errorf(path+".ranks", "%d is out of range; allowed 1..%d (the topology's hosts)", c.Ranks, hosts)
	}
	return nil
}

// resolveData resolves the collective's iterations, chunk, channels, dtype and reduce_rate;
// it relies on the op (resolveOp) and the ranks (resolveRanks).
func (c *Collective) resolveData(path string, op collective.Collective, env workloadEnv) error {
	if op == collective.SendRecv && c.Peer == 0 && c.Root == 0 && c.Ranks > 1 {
		c.Peer = 1 // rank 0 sends to rank 1 unless told otherwise
	}
	if c.Iterations == 0 {
		c.Iterations = 1
	}
	if c.Iterations < 0 || c.Iterations > 1000 {
		return Errorf(path+".iterations", "%d is out of range; allowed 1..1000", c.Iterations)
	}
	if c.Chunk == 0 {
		c.Chunk = collective.DefaultChunkBytes
	}
	if c.Channels == 0 {
		c.Channels = 1
	}
	if c.DType == "" {
		c.DType = "float32"
		if c.MoE != nil && c.MoE.DType != "" {
			c.DType = c.MoE.DType // the dispatch's element type
		}
	}
	dt, err := collective.ParseDType(c.DType)
	if err != nil {
		return Errorf(path+".dtype", "%q is not a data type: %v", c.DType, err)
	}
	c.DType = dt.String()
	if sz := sim.Size(dt.Size()); c.MoE == nil && c.Bytes%sz != 0 {
		return Errorf(path+".bytes", "%v is not a whole number of %s elements (%d B each)", c.Bytes, dt, sz)
	}
	if c.ReduceRate < 0 {
		return Errorf(path+".reduce_rate", "%v must not be negative", c.ReduceRate)
	}
	if c.ReduceRate > 0 && env.flow {
		return Errorf(path+".reduce_rate", "%v is set, but the flow-level engine models reductions as free; remove it, or run at packet level (run.engine: packet)", c.ReduceRate)
	}
	return nil
}

// resolveSizes resolves the collective's bytes and sweep, or its MoE dispatch; it relies on
// the op, ranks and dtype being resolved.
func (c *Collective) resolveSizes(path string) error {
	if c.MoE != nil {
		if c.Ranks > MaxMoERanks {
			return Errorf(path+".ranks", "%d ranks for a MoE dispatch; allowed up to %d (its byte matrix is ranks x ranks)", c.Ranks, MaxMoERanks)
		}
		if c.Op != "all_to_all" {
			return Errorf(path+".moe", "set, but op is %q; a MoE dispatch is an all_to_all", c.Op)
		}
		if c.Bytes != 0 {
			return Errorf(path+".bytes", "%v is set with moe; the dispatch matrix sets the bytes", c.Bytes)
		}
		if c.MaxBytes != 0 || c.Factor != 0 {
			return Errorf(path+".max_bytes", "%v is set with moe; a MoE dispatch has one size, no sweep", c.MaxBytes)
		}
		if c.MoE.Tokens < 1 {
			return Errorf(path+".moe.tokens", "%d; want at least 1 token", c.MoE.Tokens)
		}
		if c.MoE.DType == "" {
			c.MoE.DType = "bf16"
		}
		if _, err := collective.ParseDType(c.MoE.DType); err != nil {
			return Errorf(path+".moe.dtype", "%q is not a data type: %v", c.MoE.DType, err)
		}
	} else {
		if c.Bytes <= 0 {
			return Errorf(path+".bytes", "%v; want a size > 0 (e.g. 64MiB)", c.Bytes)
		}
		if c.MaxBytes != 0 && c.Factor == 0 {
			c.Factor = 2
		}
		if c.MaxBytes == 0 && c.Factor != 0 {
			return Errorf(path+".factor", "%d is set without max_bytes; a sweep needs both", c.Factor)
		}
	}
	return nil
}

// moved validates the collective at each size of its sweep and returns the payload bytes it
// moves over the network (0 under run.engine flow); it relies on the rest being resolved.
func (c *Collective) moved(path string, env workloadEnv) (float64, error) {
	sp, sizes, err := c.CollectiveSpec()
	if err != nil {
		return 0, collectiveErr(path, err)
	}
	sp.Domain = c.Domain(env.domain)
	if len(sizes) > 64 {
		return 0, Errorf(path+".max_bytes", "%v from %v by x%d is %d sizes; allowed up to 64", c.MaxBytes, c.Bytes, c.Factor, len(sizes))
	}
	var moved float64
	for _, sz := range sizes {
		s := sp
		if sz > 0 {
			s.Bytes = sz
		}
		r, err := s.Resolve()
		if err != nil {
			return 0, collectiveErr(path, err)
		}
		if err := r.Validate(); err != nil {
			return 0, collectiveErr(path, err)
		}
		if env.flow {
			continue // the flow engine builds no schedule and counts no packets
		}
		ops, err := collective.EstimateOps(s)
		if err != nil {
			return 0, collectiveErr(path, err)
		}
		if ops > MaxCollectiveOps {
			return 0, Errorf(path, "%s %s of %d B on %d ranks would be about %.3g schedule operations, beyond lockstep's bound of %d (about 1.5 GB of memory); use fewer ranks or channels or a smaller size, or a larger chunk where the algorithm pipelines by chunks", r.Algo, c.Op, r.Bytes, c.Ranks, ops, MaxCollectiveOps)
		}
		moved += float64(r.Bytes) * 2 * float64(c.Ranks) * float64(c.Iterations)
	}
	return moved, nil
}
