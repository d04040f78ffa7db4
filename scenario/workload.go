package scenario

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
	"github.com/lockstepsim/lockstep/workload/training"
)

// Workload is what the ranks do, as an alternative to raw traffic groups: collectives, each on
// its own communicator, at one size or over an nccl-tests style size sweep. A scenario has
// either traffic or a workload, not both.
//
// Several collectives run concurrently on one fabric (their communicators may overlap): step k
// of the sweep launches every collective at its k-th size together, and the step ends when all
// of them are done, so every collective needs the same number of sizes.
type Workload struct {
	Collectives []Collective `yaml:"collectives,omitempty"`
	// Training runs whole training steps of a model under a parallelism plan (package
	// workload/training): compute, TP/PP/DP/EP communication in lockstep, power, goodput.
	Training *training.Config `yaml:"training,omitempty"`
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
	cfg.Steps, cfg.SimSteps = max(cfg.Steps, 1), min(max(cfg.SimSteps, 1), max(cfg.Steps, 1))
	for i, f := range sc.Faults {
		if f.AtStep != nil && *f.AtStep >= cfg.SimSteps {
			return Errorf(fmt.Sprintf("faults[%d].at_step", i), "%d is not a simulated step: workload.training.sim_steps is %d (steps 0 to %d); raise sim_steps (and steps) to reach it", *f.AtStep, cfg.SimSteps, cfg.SimSteps-1)
		}
	}
	return nil
}

// trainingError turns a *training.FieldError into a *FieldError with the same path.
func trainingError(err error) error {
	var fe *training.FieldError
	if errors.As(err, &fe) {
		return Errorf(fe.Path, "%s", fe.Msg)
	}
	return Errorf("workload.training", "%v", err)
}

// MaxCollectives bounds workload.collectives.
const MaxCollectives = 64

// MaxPlacementShown is how many hosts PlacementLabel lists before it elides the rest.
const MaxPlacementShown = 32

// PlacementLabel names the collective's placement for a report line: the placement, and for
// shuffled the order drawn (rank r on the r-th host listed; at most MaxPlacementShown hosts,
// then how many more: the resolved scenario records them all).
func (c *Collective) PlacementLabel() string {
	if c.Placement != PlacementShuffled || len(c.Hosts) == 0 {
		return c.Placement
	}
	var b strings.Builder
	b.WriteString(c.Placement + ": hosts")
	for i, h := range c.Hosts {
		if i == MaxPlacementShown {
			fmt.Fprintf(&b, " ... (%d more, in the resolved scenario.yaml)", len(c.Hosts)-i)
			break
		}
		fmt.Fprintf(&b, " %d", h)
	}
	return b.String()
}

// Collective describes the collective a workload runs (package workload/collective). Sizes
// follow nccl-tests: Bytes is the buffer size S (all-reduce, broadcast, reduce: every rank's
// buffer; reduce-scatter: the input, S/n out per rank; all-gather: the output, S/n in per
// rank; all-to-all: what each rank sends, S/n to each peer; sendrecv: the message).
type Collective struct {
	// Name labels the collective's rows in reports; default "<op>" (with the index when
	// several collectives share an op).
	Name string `yaml:"name"`
	// Op: all_reduce, reduce_scatter, all_gather, broadcast, reduce, all_to_all or sendrecv.
	Op string `yaml:"op"`
	// Algorithm: auto (default; the rule in the collective package), ring, tree,
	// halving_doubling, recursive_doubling, pairwise, hierarchical or direct.
	Algorithm string `yaml:"algorithm"`
	// Ranks is the communicator size; rank r runs on host r. Default: every host. Hosts, when
	// given, places rank r on Hosts[r] instead (distinct hosts) and sets Ranks.
	Ranks int   `yaml:"ranks"`
	Hosts []int `yaml:"hosts,omitempty"`
	// Placement orders the ranks on hosts: PlacementTopology (default), PlacementSequential,
	// PlacementShuffled or PlacementExplicit (Hosts given; set by a hosts list).
	Placement string `yaml:"placement,omitempty"`
	// Bytes is the size (nccl-tests -b). With MaxBytes, a sweep Bytes, Bytes x Factor, ... up
	// to MaxBytes (-e, -f); Factor defaults to 2. Required unless MoE sets the all-to-all.
	Bytes    sim.Size `yaml:"bytes"`
	MaxBytes sim.Size `yaml:"max_bytes,omitempty"`
	Factor   int      `yaml:"factor,omitempty"`
	// Iterations per size, back to back (nccl-tests -n); the reported time is their mean.
	// Default 1.
	Iterations int `yaml:"iterations"`
	// Chunk is the pipelining unit (default 512 KiB, NCCL's ring step); Channels splits the
	// data over that many independent instances of the algorithm (default 1).
	Chunk    sim.Size `yaml:"chunk"`
	Channels int      `yaml:"channels"`
	// Root (broadcast, reduce, sendrecv sender) and Peer (sendrecv receiver), as ranks.
	Root int `yaml:"root,omitempty"`
	Peer int `yaml:"peer,omitempty"`
	// Inner x Outer is the hierarchical (2-D ring of rings) layout; Inner x Outer = Ranks.
	Inner int `yaml:"inner,omitempty"`
	Outer int `yaml:"outer,omitempty"`
	// DType sets the element size for the report's count column: float32 (default), bf16,
	// float16, float64, int8...
	DType string `yaml:"dtype"`
	// ReduceRate is each GPU's reduction throughput in bits/s (e.g. 1600Gbps = 200 GB/s); a
	// reduction of B bytes costs B x 8 / ReduceRate before the data it produces can be sent.
	// 0 (default) makes reductions free.
	ReduceRate sim.Rate `yaml:"reduce_rate,omitempty"`
	// MoE, with op all_to_all, sets the per-pair byte matrix of a mixture-of-experts token
	// dispatch (uniform routing) instead of Bytes.
	MoE *MoE `yaml:"moe,omitempty"`
}

// MoE is a mixture-of-experts dispatch: Tokens tokens in the batch, spread evenly over the
// ranks, each routed to TopK experts spread uniformly over the ranks, each Hidden elements of
// DType.
type MoE struct {
	Tokens int64  `yaml:"tokens"`
	TopK   int    `yaml:"top_k"`
	Hidden int64  `yaml:"hidden"`
	DType  string `yaml:"dtype"` // default bf16
}

// Ideal is the transport-free network model (transport kind ideal): each host's NIC sends and
// receives at the topology's NIC rate (host_link x planes), one message at a time in FIFO
// order each way, and every message pays Latency first (package workload/collective, Ideal).
type Ideal struct {
	// Latency is the per-message latency (alpha), default 5us.
	Latency sim.Time `yaml:"latency"`
}

// MaxCollectiveOps bounds the operations of one collective's schedule at its largest size
// (about 50-75 bytes of memory each): 20 million ops is about 1.5 GB while building.
const MaxCollectiveOps = 20_000_000

// Rank placements (Collective.Placement).
const (
	// PlacementTopology (default) follows NCCL's topology-aware ring and tree order: ranks of
	// one server, rail and rack adjacent, racks in order. Every topology lockstep builds
	// numbers its hosts that way (a T0's hosts consecutively, a server's GPUs consecutively,
	// a torus in x-major order), so rank r runs on host r.
	PlacementTopology = "topology"
	// PlacementSequential is rank r on host r, whatever the topology.
	PlacementSequential = "sequential"
	// PlacementShuffled draws a seeded random order of the first Ranks hosts (from run.seed);
	// the resolved scenario lists it in hosts.
	PlacementShuffled = "shuffled"
	// PlacementExplicit is the order a hosts list gives.
	PlacementExplicit = "explicit"
)

// MaxMoERanks bounds the ranks of a MoE dispatch: its byte matrix is ranks x ranks.
const MaxMoERanks = 4096

// DefaultIdealLatency is the ideal transport's default per-message latency.
const DefaultIdealLatency = 5 * sim.Microsecond

// DefaultWorkloadDuration bounds a workload run when run.duration is not given: the run stops
// with an error naming the waiting ranks if the workload is not done by then.
const DefaultWorkloadDuration = sim.Second

// CollectiveSpec returns the collective's base spec (at its first size) and the sizes of its
// sweep. The scenario must be resolved.
func (c *Collective) CollectiveSpec() (collective.Spec, []int64, error) {
	op, err := collective.ParseCollective(c.Op)
	if err != nil {
		return collective.Spec{}, nil, err
	}
	algo, err := collective.ParseAlgorithm(c.Algorithm)
	if err != nil {
		return collective.Spec{}, nil, err
	}
	sp := collective.NewSpec(op, c.Ranks, int64(c.Bytes))
	sp.Algo, sp.ChunkBytes, sp.Channels = algo, int64(c.Chunk), c.Channels
	sp.Root, sp.Peer, sp.Inner, sp.Outer = c.Root, c.Peer, c.Inner, c.Outer
	if c.MoE != nil {
		dt, err := collective.ParseDType(c.MoE.DType)
		if err != nil {
			return collective.Spec{}, nil, err
		}
		m := collective.MoE{Ranks: c.Ranks, Tokens: c.MoE.Tokens, TopK: c.MoE.TopK, Hidden: c.MoE.Hidden, DTypeBytes: int64(dt.Size())}
		mx, err := m.Matrix()
		if err != nil {
			return collective.Spec{}, nil, err
		}
		sp.Matrix, sp.Bytes = mx, 0
		return sp, []int64{0}, nil
	}
	if c.MaxBytes == 0 {
		return sp, []int64{int64(c.Bytes)}, nil
	}
	sizes, err := collective.Sizes(int64(c.Bytes), int64(c.MaxBytes), c.Factor)
	return sp, sizes, err
}

// collectiveErr turns the collective package's "collective: field = value: rule" errors into
// scenario errors under path.
func collectiveErr(path string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "collective: ")
	field, rest, ok := strings.Cut(msg, " = ")
	if !ok || strings.ContainsAny(field, " :") {
		return Errorf(path, "%s", msg)
	}
	switch field {
	case "chunk_bytes":
		field = "chunk"
	case "sweep.min_bytes":
		field = "bytes"
	case "sweep.max_bytes":
		field = "max_bytes"
	case "sweep.factor":
		field = "factor"
	}
	return Errorf(path+"."+field, "%s", rest)
}

// workloadEnv is what resolving collectives needs to know of the run.
type workloadEnv struct {
	seed   uint64 // run.seed, for placement: shuffled
	hosts  int    // the topology's hosts
	domain int    // its scale-up domain size (topo.Params.ScaleUpGPUs; 0: none)
	flow   bool   // run.engine flow over a transport (not ideal): no schedule, no packet budget
}

// resolve fills the workload's defaults and validates it against env; it returns the
// payload bytes the workload moves over the network (for the packet budget; 0 under
// run.engine flow).
func (w *Workload) resolve(env workloadEnv) (float64, error) {
	if len(w.Collectives) > MaxCollectives {
		return 0, Errorf("workload.collectives", "%d collectives; allowed up to %d", len(w.Collectives), MaxCollectives)
	}
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

// Domain returns g when the collective's ranks (resolved) are whole scale-up domains of g
// hosts, rank blocks of g on one domain each, over at least two domains
// (collective.WholeDomains), else 0: the collective.Spec Domain that lets algorithm auto
// (and hierarchical without inner and outer) use the domains.
func (c *Collective) Domain(g int) int {
	if g <= 1 || c.Ranks < 2*g {
		return 0
	}
	hosts := c.Hosts
	if len(hosts) == 0 {
		hosts = make([]int, c.Ranks)
		for r := range hosts {
			hosts[r] = r
		}
	}
	if !collective.WholeDomains(hosts, g) {
		return 0
	}
	return g
}

// resolve fills the collective's defaults and validates it against env; it returns the
// payload bytes it moves over the network (0 under run.engine flow).
func (c *Collective) resolve(path string, env workloadEnv) (float64, error) {
	hosts := env.hosts
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
		return 0, Errorf(path+".algorithm", "%q is not an algorithm; allowed auto, ring, tree, halving_doubling, recursive_doubling, pairwise, hierarchical, direct", c.Algorithm)
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
	switch {
	case c.Placement == "" || c.Placement == PlacementTopology || c.Placement == PlacementSequential:
		if len(c.Hosts) > 0 && c.Placement != "" {
			return 0, Errorf(path+".placement", "%s, but hosts lists the ranks' hosts; give one (placement: explicit goes with a hosts list)", c.Placement)
		}
		if c.Placement == "" {
			c.Placement = PlacementTopology
		}
		if len(c.Hosts) > 0 {
			c.Placement = PlacementExplicit
		}
	case c.Placement == PlacementExplicit:
		if len(c.Hosts) == 0 {
			return 0, Errorf(path+".placement", "explicit, but no hosts list; give hosts: [h0, h1, ...] (rank r on hosts[r])")
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
		return 0, Errorf(path+".placement", "%q is not a placement; allowed topology (default), sequential, shuffled, explicit (with hosts)", c.Placement)
	}
	if len(c.Hosts) > 0 {
		if c.Ranks != 0 && c.Ranks != len(c.Hosts) {
			return 0, Errorf(path+".ranks", "%d, but hosts lists %d; give one or make them agree", c.Ranks, len(c.Hosts))
		}
		seen := make(map[int]int, len(c.Hosts))
		for i, h := range c.Hosts {
			if h < 0 || h >= hosts {
				return 0, Errorf(fmt.Sprintf("%s.hosts[%d]", path, i), "%d is out of range; the topology has hosts 0..%d", h, hosts-1)
			}
			if j, dup := seen[h]; dup {
				return 0, Errorf(fmt.Sprintf("%s.hosts[%d]", path, i), "host %d is also rank %d; ranks need distinct hosts", h, j)
			}
			seen[h] = i
		}
		c.Ranks = len(c.Hosts)
	}
	if c.Ranks == 0 {
		c.Ranks = hosts
	}
	if c.Ranks < 1 || c.Ranks > hosts {
		return 0, Errorf(path+".ranks", "%d is out of range; allowed 1..%d (the topology's hosts)", c.Ranks, hosts)
	}
	if op == collective.SendRecv && c.Peer == 0 && c.Root == 0 && c.Ranks > 1 {
		c.Peer = 1 // rank 0 sends to rank 1 unless told otherwise
	}
	if c.Iterations == 0 {
		c.Iterations = 1
	}
	if c.Iterations < 0 || c.Iterations > 1000 {
		return 0, Errorf(path+".iterations", "%d is out of range; allowed 1..1000", c.Iterations)
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
		return 0, Errorf(path+".dtype", "%q is not a data type: %v", c.DType, err)
	}
	c.DType = dt.String()
	if sz := sim.Size(dt.Size()); c.MoE == nil && c.Bytes%sz != 0 {
		return 0, Errorf(path+".bytes", "%v is not a whole number of %s elements (%d B each)", c.Bytes, dt, sz)
	}
	if c.ReduceRate < 0 {
		return 0, Errorf(path+".reduce_rate", "%v must not be negative", c.ReduceRate)
	}
	if c.ReduceRate > 0 && env.flow {
		return 0, Errorf(path+".reduce_rate", "%v is set, but the flow-level engine models reductions as free; remove it, or run at packet level (run.engine: packet)", c.ReduceRate)
	}
	if c.MoE != nil {
		if c.Ranks > MaxMoERanks {
			return 0, Errorf(path+".ranks", "%d ranks for a MoE dispatch; allowed up to %d (its byte matrix is ranks x ranks)", c.Ranks, MaxMoERanks)
		}
		if c.Op != "all_to_all" {
			return 0, Errorf(path+".moe", "set, but op is %q; a MoE dispatch is an all_to_all", c.Op)
		}
		if c.Bytes != 0 {
			return 0, Errorf(path+".bytes", "%v is set with moe; the dispatch matrix sets the bytes", c.Bytes)
		}
		if c.MaxBytes != 0 || c.Factor != 0 {
			return 0, Errorf(path+".max_bytes", "%v is set with moe; a MoE dispatch has one size, no sweep", c.MaxBytes)
		}
		if c.MoE.Tokens < 1 {
			return 0, Errorf(path+".moe.tokens", "%d; want at least 1 token", c.MoE.Tokens)
		}
		if c.MoE.DType == "" {
			c.MoE.DType = "bf16"
		}
		if _, err := collective.ParseDType(c.MoE.DType); err != nil {
			return 0, Errorf(path+".moe.dtype", "%q is not a data type: %v", c.MoE.DType, err)
		}
	} else {
		if c.Bytes <= 0 {
			return 0, Errorf(path+".bytes", "%v; want a size > 0 (e.g. 64MiB)", c.Bytes)
		}
		if c.MaxBytes != 0 && c.Factor == 0 {
			c.Factor = 2
		}
		if c.MaxBytes == 0 && c.Factor != 0 {
			return 0, Errorf(path+".factor", "%d is set without max_bytes; a sweep needs both", c.Factor)
		}
	}
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
