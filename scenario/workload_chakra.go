package scenario

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/chakra"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// Chakra runs a Chakra execution trace (ASTRA-sim's workload format; package workload/chakra):
// one file per rank, Path.0.et, Path.1.et, ..., each rank's compute nodes as delays of their
// duration_micros and its communication nodes through the collective executor on the
// scenario's transport, every node after its ctrl_deps and data_deps. The k-th collective
// node of a process group (pg_name; none: every rank) on each member runs as one collective
// once every member has reached it; the k-th send from rank a to rank b with a tag and the
// k-th receive at b from a with that tag are one message, started when both are ready.
// docs/chakra.md describes the format and the outputs.
type Chakra struct {
	// Path is the trace's prefix: the folder and the file name before ".<rank>.et",
	// relative to the scenario file's folder unless absolute ("traces/dp" reads
	// traces/dp.0.et, traces/dp.1.et, ...).
	Path string `yaml:"path"`
	// Hosts places trace rank r on host Hosts[r] (distinct hosts of the topology); left out,
	// rank r runs on host r and the trace must have one rank per host.
	Hosts []int `yaml:"hosts,omitempty"`
	// Algorithm, Chunk and Channels apply to every collective of the trace as in
	// workload.collectives (defaults auto, 512 KiB, 1).
	Algorithm string   `yaml:"algorithm"`
	Chunk     sim.Size `yaml:"chunk"`
	Channels  int      `yaml:"channels"`
	// ReduceRate is each GPU's reduction throughput (as workload.collectives' reduce_rate);
	// 0 (default) makes reductions free.
	ReduceRate sim.Rate `yaml:"reduce_rate,omitempty"`

	trace *chakra.Trace
	plan  *chakra.Plan
	moved float64 // payload bytes sent over all ranks (a collective counted 2 S per member)
}

// estimate returns the packets of pay payload bytes the resolved trace sends, its QPs (each
// group's members' ring neighbours and every sending pair, both ways), and its memory in
// schedule-op equivalents (MemPerOp bytes each, Scenario.Estimate): the distinct schedules'
// operations (the runner builds each once), the executor's state of every launch (5 bytes
// per operation, kept to the end), and the trace's nodes (about MemPerChakraNode each).
func (c *Chakra) estimate(pay float64) (packets float64, flows int64, ops float64) {
	if c.plan == nil {
		return 0, 0, 0
	}
	if pay > 0 {
		packets = c.moved / pay
	}
	pairs := map[[2]int]bool{}
	for _, m := range c.plan.P2Ps {
		pairs[[2]int{m.Src, m.Dst}] = true
	}
	flows = 2 * int64(len(pairs))
	type key struct {
		op    collective.Collective
		n     int
		bytes int64
	}
	distinct := map[key]float64{}
	var launched float64
	count := func(op collective.Collective, n int, bytes int64) {
		k := key{op, n, bytes}
		n0, ok := distinct[k]
		if !ok {
			if sp, err := c.Spec(op, n, bytes); err == nil {
				n0, _ = collective.EstimateOps(sp)
			}
			distinct[k] = n0
		}
		launched += n0
	}
	for _, g := range c.plan.Groups {
		flows += 4 * int64(len(g.Members))
		for _, cl := range g.Colls {
			count(cl.Op, len(g.Members), cl.Bytes)
		}
	}
	for _, m := range c.plan.P2Ps {
		count(collective.SendRecv, 2, m.Bytes)
	}
	for _, n := range distinct {
		ops += n
	}
	nodes := 0
	for _, rk := range c.trace.Ranks {
		nodes += len(rk.Nodes)
	}
	ops += launched*5/MemPerOp + float64(nodes)*MemPerChakraNode/MemPerOp
	return packets, flows, ops
}

// MemPerChakraNode is the memory of one trace node while it runs: its decoded form, its
// dependency lists and the runner's ready and end times and counters (bytes, about).
const MemPerChakraNode = 200

// Trace returns the trace read when the scenario was resolved and its communication matched
// across ranks (nil before).
func (c *Chakra) Trace() (*chakra.Trace, *chakra.Plan) { return c.trace, c.plan }

// Host returns the host trace rank r runs on.
func (c *Chakra) Host(r int) int {
	if len(c.Hosts) > 0 {
		return c.Hosts[r]
	}
	return r
}

// Spec returns the collective spec of a group's collective on n ranks (the scenario's
// algorithm, chunk and channels; a send/recv message from rank 0 to 1 of a two-rank
// communicator, algorithm direct). Errors: an algorithm that does not parse (the scenario is
// not resolved).
func (c *Chakra) Spec(op collective.Collective, n int, bytes int64) (collective.Spec, error) {
	algo, err := collective.ParseAlgorithm(c.Algorithm)
	if err != nil {
		return collective.Spec{}, err
	}
	sp := collective.NewSpec(op, n, bytes)
	sp.ChunkBytes, sp.Channels = int64(c.Chunk), c.Channels
	if op == collective.SendRecv {
		sp.Root, sp.Peer = 0, 1
		return sp, nil
	}
	sp.Algo = algo
	return sp, nil
}

// chakra resolves workload.chakra: reads and matches the trace, places its ranks on hosts,
// fills the collective defaults and checks the packet budget; it relies on the topology, the
// run and the transport. A left-out run.duration grows to four times the busiest rank's
// computation plus its bytes at the NIC rate.
func (r *resolver) chakra() error {
	sc, run := r.sc, &r.sc.Run
	c := sc.Workload.Chakra
	const path = "workload.chakra"
	switch {
	case sc.Workload.Training != nil || len(sc.Workload.Collectives) > 0:
		return Errorf(path, "given with workload.training or workload.collectives; a scenario runs one workload")
	case len(sc.Traffic) > 0:
		return Errorf("traffic", "given with workload.chakra; a scenario runs traffic groups or a workload, not both")
	case sc.Transport.Kind == TransportRaw:
		return Errorf("transport.kind", "raw cannot carry a trace's messages; allowed %s (packet level) or ideal", strings.Join(transport.Kinds(), " or "))
	case c.Path == "":
		return Errorf(path+".path", "missing; give the trace's prefix (path: traces/dp reads traces/dp.0.et, traces/dp.1.et, ...)")
	}
	file := c.Path
	if !filepath.IsAbs(file) && sc.dir != "" {
		file = filepath.Join(sc.dir, file)
	}
	tr, err := chakra.Read(file)
	if err != nil {
		return Errorf(path+".path", "%v", err)
	}

	plan, err := tr.Match()
	if err != nil {
		return Errorf(path+".path", "%v", err)
	}
	hosts, ranks := r.l.NumHosts(), len(tr.Ranks)
	if len(c.Hosts) == 0 && ranks != hosts {
		return Errorf(path+".path", "the trace has %d ranks (%s.0.et to .%d.et) but the topology %d hosts; give hosts: [h0, h1, ...] to place rank r on hosts[r], or a topology of %d hosts", ranks, c.Path, ranks-1, hosts, ranks)
	}
	if len(c.Hosts) > 0 {
		if len(c.Hosts) != ranks {
			return Errorf(path+".hosts", "lists %d hosts, but the trace has %d ranks; give one host per rank", len(c.Hosts), ranks)
		}
		seen := map[int]int{}
		for i, h := range c.Hosts {
			if h < 0 || h >= hosts {
				return Errorf(fmt.Sprintf("%s.hosts[%d]", path, i), "%d is not a host; allowed 0 to %d", h, hosts-1)
			}
			if j, dup := seen[h]; dup {
				return Errorf(fmt.Sprintf("%s.hosts[%d]", path, i), "host %d is also hosts[%d]; every rank needs its own host", h, j)
			}
			seen[h] = i
		}
	}
	if c.Algorithm == "" {
		c.Algorithm = "auto"
	}
	algo, err := collective.ParseAlgorithm(c.Algorithm)
	if err != nil {
		return Errorf(path+".algorithm", "%q is not an algorithm; allowed %s", c.Algorithm, strings.Join(slices.DeleteFunc(collective.AlgorithmNames(), func(n string) bool { return n == "direct" }), ", "))
	}
	c.Algorithm = algo.String()
	if c.Chunk == 0 {
		c.Chunk = collective.DefaultChunkBytes
	}
	if c.Chunk < 0 {
		return Errorf(path+".chunk", "%v must be positive", c.Chunk)
	}
	if c.Channels == 0 {
		c.Channels = 1
	}
	if c.Channels < 0 || c.Channels > 1024 {
		return Errorf(path+".channels", "%d; allowed 1 to 1024", c.Channels)
	}
	if c.ReduceRate < 0 {
		return Errorf(path+".reduce_rate", "%v must be >= 0", c.ReduceRate)
	}
	// Every collective's schedule must build (and stay within the op bound).
	for gi := range plan.Groups {
		g := &plan.Groups[gi]
		for k := range g.Colls {
			sp, err := c.Spec(g.Colls[k].Op, len(g.Members), g.Colls[k].Bytes)
			if err != nil {
				return Errorf(path+".algorithm", "%v", err)
			}
			if ops, err := collective.EstimateOps(sp); err != nil {
				return Errorf(path+".path", "process group %q collective %d (%s of %d bytes on %d ranks): %v", g.Name, k, sp.Op, sp.Bytes, sp.Ranks, err)
			} else if ops > MaxCollectiveOps {
				return Errorf(path+".chunk", "process group %q collective %d needs about %.3g schedule operations at chunk %v; allowed up to %d: raise chunk", g.Name, k, ops, c.Chunk, MaxCollectiveOps)
			}
		}
	}
	c.trace, c.plan = tr, plan
	// The bytes the trace moves (a collective at most 2 S per member) and the busiest rank's
	// computation, for the packet budget and the run's bound.
	var moved float64
	sent := make([]float64, ranks)
	compute := make([]sim.Time, ranks)
	for _, g := range plan.Groups {
		for _, cl := range g.Colls {
			for _, m := range g.Members {
				sent[m] += 2 * float64(cl.Bytes)
			}
		}
	}
	for _, m := range plan.P2Ps {
		sent[m.Src] += float64(m.Bytes)
	}
	for rk, t := range tr.Ranks {
		for i := range t.Nodes {
			if !t.Nodes[i].IsComm() {
				compute[rk] = satAdd(compute[rk], t.Nodes[i].Duration)
			}
		}
		moved += sent[rk]
	}
	c.moved = moved
	if pay := sc.Transport.payloadBytes(); pay > 0 && !sc.Fluid() {
		if packets := moved / pay; packets > float64(run.MaxPackets) {
			return Errorf(path, "moves about %.3g packets, beyond run.max_packets (%d, one to four minutes of wall time); use a smaller trace, transport ideal, or raise run.max_packets", packets, run.MaxPackets)
		}
	}
	if !r.durationGiven {
		nic := float64(r.c.HostLink) * float64(r.c.Planes)
		var need sim.Time
		for rk := range compute {
			wire := sim.MaxTime
			if nic > 0 && sent[rk]*8/nic < MaxRunDuration.Seconds() {
				wire = sim.Time(sent[rk] * 8 / nic * float64(sim.Second))
			}
			need = max(need, satAdd(compute[rk], wire))
		}
		if need > MaxRunDuration {
			return Errorf(path, "the busiest rank needs at least %v (its computation and its bytes at the NIC rate), beyond %v, the longest run", need, MaxRunDuration)
		}
		if d := satAdd(satMul(need, 4), 100*sim.Microsecond); d > run.Duration {
			run.Duration = min(d, MaxRunDuration)
			if err := r.fitSampling(); err != nil {
				return err
			}
		}
	}
	// The resolved scenario (a results folder's scenario.yaml) names the trace absolutely,
	// so it runs again from anywhere on this machine.
	if abs, err := filepath.Abs(file); err == nil {
		c.Path = abs
	}
	return nil
}
