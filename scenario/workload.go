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
// of them are done, so every collective needs the same number of sizes. There is no fixed
// bound on their number: the memory estimate (Scenario.Estimate: MemPerCollective each, and
// their flows or schedules) is checked against run.max_memory, and at packet level their
// packets against run.max_packets.
type Workload struct {
	Collectives []Collective `yaml:"collectives,omitempty"`
	// Training runs whole training steps of a model under a parallelism plan (package
	// workload/training): compute, TP/PP/DP/EP communication in lockstep, power, goodput.
	Training *training.Config `yaml:"training,omitempty"`
	// Chakra runs a Chakra execution trace, one file per rank (workload_chakra.go).
	Chakra *Chakra `yaml:"chakra,omitempty"`
}

// trainingError turns a *training.FieldError into a *FieldError with the same path.
func trainingError(err error) error {
	var fe *training.FieldError
	if errors.As(err, &fe) {
		return Errorf(fe.Path, "%s", fe.Msg)
	}
	return Errorf("workload.training", "%v", err)
}

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
	// halving_doubling, recursive_doubling, pairwise, hierarchical, direct or grouped
	// (collective.AlgorithmNames).
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
	// Root (broadcast, reduce, sendrecv sender) and Peer (sendrecv receiver), as ranks; peer
	// -1 makes send_recv a ring shift (every rank sends to the next, as nccl-tests'
	// sendrecv_perf; root 0).
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
// with an error naming the waiting ranks if the workload is not done by then. Collectives
// whose closed form without latency (a lower bound) is longer get 4 x that bound instead, up
// to MaxRunDuration (transferDuration in resolve_run.go).
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
