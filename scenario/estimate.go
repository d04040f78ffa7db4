package scenario

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/collective"
	"github.com/lockstepsim/lockstep/workload/training"
	"go.yaml.in/yaml/v3"
)

// Estimate is what a resolved scenario will cost to run, worked out without running it
// (Scenario.Estimate): `lockstep validate` prints it and Resolve refuses a scenario whose
// memory estimate passes run.max_memory. Every figure is an order of magnitude, not a
// prediction: the memory model's costs were measured on small cases (see the Mem* constants)
// and the wall time is a range over the event rates lockstep reaches.
type Estimate struct {
	// Engine is what carries the run: "packet" (every packet through the fabric), "flow" (the
	// flow-level engine) or "analytic" (transport ideal: closed forms or the ideal network).
	Engine string `json:"engine"`
	Hosts  int    `json:"hosts"`
	// Links is the topology's links in all planes (the packet fabric builds each one).
	Links int `json:"links"`
	// Flows is the transport's connections (QPs) or raw flows (one per pair and plane) the
	// packet fabric carries; for a collective workload an upper estimate of its QPs; 0 at flow
	// level and under transport ideal.
	Flows int64 `json:"flows"`
	// Packets is the data packets the traffic or the collectives offer, as the packet budget
	// (run.max_packets) counts them; 0 when no packet is simulated.
	Packets float64 `json:"packets"`
	// ScheduleOps is the collective schedules' operations (collective.EstimateOps): at packet
	// level every collective's, at flow level those of workload.collectives that run their
	// schedule message by message (flowScheduleOps); 0 without either.
	ScheduleOps float64 `json:"schedule_ops"`
	// MemoryBytes is the estimated peak heap, bytes (the model in Scenario.Estimate).
	MemoryBytes float64 `json:"memory_bytes"`
	// MaxMemory is the limit it was checked against (run.max_memory or DefaultMemoryLimit).
	MaxMemory sim.Size `json:"max_memory"`
	// WallMin and WallMax bound the wall time (0 and 0: not estimated, as at flow level,
	// whose cost is its rate recomputes).
	WallMin time.Duration `json:"wall_min_ns"`
	WallMax time.Duration `json:"wall_max_ns"`
	// Note says what the figures leave out, when something is.
	Note string `json:"note,omitempty"`

	inFlight float64 // packets in flight in the model
	perFlow  float64 // bytes per flow in the model
	perHost  float64 // bytes per host in the flow-level training model
	coll     float64 // bytes of workload.collectives' own terms in the model
	extraQPs float64 // traffic QPs past the first of each transfer (transport.QPFanout)
}

// Costs of the memory model (bytes). The per-element costs were measured with
// runtime.MemStats (TotalAlloc over the run, which bounds the peak heap from above; HeapAlloc
// retained after it in brackets) on a 2-tier radix-16 Clos at 100 Gb/s, one 4 KiB transfer
// per flow (go1.26, amd64):
//
//   - per link: 16 -> 128 hosts, 1 -> 8 planes (256 -> 2,048 links), MRC: 12.2 KB per link
//     (5.2 KB retained): its ports' queues, histograms and links.csv series.
//   - per flow: 1,000 -> 4,000 explicit flows on 128 hosts: MRC 45 KB per QP (35 KB
//     retained: its EV set with its routes, the PSN ring, the receiver); RoCE 12 KB (5.7 KB);
//     before the MRC PSN ring grew on demand, 175 KB (160 KB retained). A raw flow (one per
//     pair and plane) holds a few hundred bytes and its spray routes.
//   - per packet in flight: fabric.Packet is 128 bytes; with the event queue's entry and the
//     sender's PSN state about 256.
//   - per schedule operation: 75 (collective.EstimateOps: 50-75 bytes per op).
//   - training at flow level: the peak grows with the pipeline transfers of the simulated
//     steps (pipelineTransfers), hardly with the hosts. Peak RSS (/usr/bin/time -v, lockstep
//     run PRESET, go1.26, one step): train-405b-8k (8,192 hosts, 4.16 million pipeline
//     transfers of 4.57 million flows) 2,680 MB in 76 s; train-405b-16k (16,384 hosts, 4.16
//     million) 2,630 MB in 110 s; train-405b-131k (131,072 hosts, zb-h1: 3.93 million) 3.0 GB
//     (the review's figure). Fit: 630 B per pipeline transfer and 3.8 KB per host
//     (MemPerTrainingTransferKept, MemPerTrainingHostKept), which gives 2.72, 2.75 and 3.04
//     GB; the old 310 KB per host gave 2.6, 5.1 and 40.7 GB. Since finished collectives are
//     released (flow.CollConfig.Forget, runs without faults): 996, 931 and 1,813 MB
//     (/usr/bin/time -v lockstep run PRESET, max RSS x 1,024 B); fit 195 B per transfer and
//     7.0 KB per host (MemPerTrainingTransfer, MemPerTrainingHost): 935, 993 and 1,751 MB.
//   - per host at flow level without training (collectives, traffic): 310 KB, the old
//     training figure (train-405b-8k's 2,549 MB over its hosts), an upper estimate.
//   - per collective of workload.collectives (they all run side by side, so their costs add):
//     at flow level 1,000 and 4,000 16-rank ring all-reduces of 1 MiB on 128 hosts (4
//     planes, MRC; lockstep run, /usr/bin/time -v) peaked at 82 and 291 MB RSS, 70 KB per
//     collective of 16 flows; 1,000 16-rank all-to-alls (240 flows each) at 217 MB, 600 B
//     per further flow: MemPerCollective 60 KB (its spec, hosts, result rows and report) and
//     MemPerCollectiveFlow 600 B per flow of its largest phase (collectiveFlows).
//   - base: 64 MB (the Go runtime, the report's fonts, a small fabric: raw-ecmp peaks at
//     37 MB RSS).
//
// Against lockstep bench's peak RSS the model gives perm-1024 169 MB (measured 120),
// incast-255 119 MB (142), mrc-fail 115 MB (92), raw-ecmp 78 MB (37), and 20,000 explicit
// 4 KiB MRC flows on 128 hosts 992 MB (934-946; 1,050 before the PSN ring grew on demand:
// most of the 128 KiB rings were allocated but never touched, so they cost heap and
// collector work more than resident memory): within a factor of two,
// which is what a limit needs (Go's collector lets the heap reach about twice the live data).
const (
	MemPerLink      = 12_500
	MemPerFlow      = 46_000
	MemPerRawFlow   = 1_000
	MemPerPacket    = 256
	MemPerOp        = 75
	MemPerFluidHost = 310_000
	// MemPerFluidTransfer is one traffic transfer at flow level (runner/flowtraffic.go: its
	// record, its collective, its Net flow and paths, its flows.csv row) and MemPerFluidLink
	// one topology link there (capacities, link series): a 32,768-host permutation of a
	// 3-tier Clos (393,216 links) peaked at 172 MB under MRC and 348 MB under RoCE (its QPs'
	// paths per plane), about 10 KB per transfer.
	MemPerFluidTransfer = 12_000
	// MemPerStripeQP is each further QP of a traffic transfer that opens several
	// (transport.QPFanout: RoCE's qps_per_peer on every plane). Measured (lockstep run,
	// /usr/bin/time peak RSS, go1.26): a 2,048-host RoCE permutation of 64 KiB on 1 plane,
	// qps_per_peer 1 -> 8 (2,048 -> 16,384 QPs), 182 -> 206 MB; on 8 planes (16,384 -> 131,072
	// QPs) 360 -> 618 MB: 1.7 and 2.25 KB per further QP, rounded up.
	MemPerStripeQP  = 2_500
	MemPerFluidLink = 200
	// MemPerCollective and MemPerCollectiveFlow are each collective's cost (see above).
	MemPerCollective     = 60_000
	MemPerCollectiveFlow = 600
	// MemPerFlowScheduleOp is one operation of a collective that runs its packet-level
	// schedule at flow level (the schedule model, flow/dag.go: the schedule's ops, dependency
	// and successor lists, the send ops' pair numbers, the run's per-op dependency count and
	// state, the connections' queues and one Net flow per message in flight). Measured
	// (lockstep run, /usr/bin/time peak RSS, go1.26, MRC, 1,024 hosts on one plane): a
	// pairwise all-to-all of 256 MiB (2.1 million ops) peaks at 464 MB, against 27 MB for its
	// phases (docs/flow-agreement.md, session 37): 208 B per op; a tree all-reduce of 256 MiB
	// (5.2 million) 159 MB above its phases, 31 B per op: the larger, rounded up.
	MemPerFlowScheduleOp = 210
	// FlowScheduleMaxOps is the largest schedule (collective.EstimateOps) a collective runs
	// at flow level message by message (runner: flow.Collectives.SetSchedules); a larger one
	// runs its phases. The schedule model costs about 2 us of wall time per op.
	FlowScheduleMaxOps = 1 << 21
	// MemPerTrainingHost and MemPerTrainingTransfer are the flow-level training model: bytes
	// per host and per pipeline transfer (see above); MemPerTrainingHostKept and
	// MemPerTrainingTransferKept the same when the run keeps every finished collective (faults
	// configured: the per-step link naming reads them back; transport ideal).
	MemPerTrainingHost         = 7_000
	MemPerTrainingTransfer     = 195
	MemPerTrainingHostKept     = 3_800
	MemPerTrainingTransferKept = 630
	MemBase                    = 64 << 20
	// DefaultMaxMemory caps run.max_memory left out (DefaultMemoryLimit): 64 GiB, what a
	// large workstation or a cluster node has, and the limit wherever the machine's memory
	// cannot be read.
	DefaultMaxMemory = 64 << 30
	// inFlightPerPort bounds the packets in flight or queued per NIC port in the model: 64
	// packets of 4 KiB (256 KiB), about the bandwidth-delay product of a 400 Gb/s port over a
	// 5 us round trip.
	inFlightPerPort = 64
)

// The wall-time range: packets at the packet rates lockstep bench measured on one core of a
// shared 2-core machine, from 20,000 packets/s (incast-255: 34 events per data packet, its
// trims, NACKs and probes) to 1.3 million (raw-ecmp: 5 events per packet); perm-1024 and
// mrc-fail ran 70,000-100,000 (10-16 events per packet at 0.6-1.1 million events/s).
//
// A transport's sampler also visits every QP at every queue sample (MRC's EV state counts), so
// many small flows cost wall time without packets: 5,000 explicit 4 KiB MRC flows on 128
// hosts (1,300 samples at 10 ns) spent 430 ms of CPU in the sampler, 66 ns per flow and
// sample; 20,000 such flows 3.6 s of the run's 6.2 s of CPU (the model: 1 to 11 s). The range
// adds flows x samples over the transfers' line-rate bound at 50 to 500 ns each. Both are CPU
// time on one core: a machine shared with other work takes longer (that run took 36 s of
// wall time on a 2-core machine running other simulations).
const (
	packetRateMin, packetRateMax = 2e4, 1.3e6
	flowSampleMin, flowSampleMax = 50e-9, 500e-9 // seconds per flow and queue sample
)

// Estimate returns the resolved scenario's estimate: hosts, links, flows and packets from the
// resolver's budgets, memory from the model above (MemBase + links x MemPerLink + flows x
// MemPerFlow + packets in flight x MemPerPacket + schedule operations x MemPerOp at packet
// level, MemPerRawFlow for raw flows; MemBase + hosts x MemPerTrainingHost + pipeline
// transfers x MemPerTrainingTransfer for training at flow level and under transport ideal,
// MemBase + hosts x MemPerFluidHost for other flow-level work, plus each collective's
// MemPerCollective (and at flow level MemPerCollectiveFlow per flow of its largest phase);
// MemBase alone for collectives under transport ideal), wall
// time from packets at the measured packet rates and, for transfers, the sampler's visits to
// every QP. Errors: a topology that does not build (an unresolved scenario).
func (sc *Scenario) Estimate() (Estimate, error) {
	l, err := sc.Topology.Describe()
	if err != nil {
		return Estimate{}, err
	}
	return sc.estimate(l), nil
}

// estimate is Estimate over the described topology l.
func (sc *Scenario) estimate(l topo.Topology) Estimate {
	c := l.Params()
	e := Estimate{Engine: EnginePacket, Hosts: l.NumHosts(), Links: l.NumLinks(), MaxMemory: sc.Run.maxMemory()}
	wl := len(sc.Workload.Collectives) > 0 || sc.Workload.Training != nil
	switch {
	case sc.Fluid():
		e.Engine = EngineFlow
		if sc.Transport.Kind == TransportIdeal {
			e.Engine = "analytic"
		}
		e.MemoryBytes = MemBase + float64(e.Hosts)*MemPerFluidHost
		if tc := sc.Workload.Training; tc != nil {
			// breakdown reads the transfers from inFlight and the model from perFlow.
			e.inFlight, e.perFlow = pipelineTransfers(tc, e.Hosts), MemPerTrainingTransfer
			e.perHost = MemPerTrainingHost
			if len(sc.Faults) > 0 || e.Engine == "analytic" {
				e.perFlow, e.perHost = MemPerTrainingTransferKept, MemPerTrainingHostKept
			}
			e.MemoryBytes = MemBase + float64(e.Hosts)*e.perHost + e.inFlight*e.perFlow
		}
		if !wl && sc.Workload.Chakra == nil {
			// Traffic transfers, one fluid flow each.
			e.Flows, e.perFlow = sc.trafficFlows(e.Hosts, c.Planes), MemPerFluidTransfer
			e.MemoryBytes = MemBase + float64(e.Links)*MemPerFluidLink + float64(e.Flows)*MemPerFluidTransfer
		}
		e.ScheduleOps = sc.flowScheduleOps()
		e.coll = sc.collectivesMemory() + e.ScheduleOps*MemPerFlowScheduleOp
		e.MemoryBytes += e.coll
		e.Note = "flow level: the wall time depends on the rate recomputes and is not estimated"
		return e
	case sc.Transport.Kind == TransportIdeal:
		e.Engine = "analytic"
		e.MemoryBytes = MemBase
		e.Note = "transport ideal: the collectives run on the ideal network; no packet is simulated"
		return e
	case sc.Workload.Chakra != nil:
		e.Packets, e.Flows, e.ScheduleOps = sc.Workload.Chakra.estimate(sc.Transport.payloadBytes())
	case sc.Workload.Training != nil:
		e.Flows = 4 * int64(e.Hosts) // each rank's ring and pipeline neighbours
		e.Note = "a training job at packet level: packets and wall time are not estimated"
	case wl:
		pay := sc.Transport.payloadBytes()
		for i := range sc.Workload.Collectives {
			wc := &sc.Workload.Collectives[i]
			base, sizes, err := wc.CollectiveSpec()
			if err != nil {
				continue
			}
			base.Domain = wc.Domain(c.ScaleUpGPUs)
			var most float64
			for _, sz := range sizes {
				sp := base
				if sz > 0 {
					sp.Bytes = sz
				}
				if pay > 0 {
					e.Packets += float64(sp.Bytes) * 2 * float64(wc.Ranks) * float64(wc.Iterations) / pay
				}
				if ops, err := collective.EstimateOps(sp); err == nil {
					most = max(most, ops) // one size's schedule at a time
				}
			}
			e.ScheduleOps += most
			r := int64(wc.Ranks)
			if wc.Op == "all_to_all" {
				e.Flows += r * (r - 1)
			} else {
				e.Flows += 4 * r
			}
		}
	default:
		for i := range sc.Traffic {
			e.Packets += sc.Traffic[i].estimatePackets(sc.Transport, e.Hosts, c.Planes, c.HostLink, sc.Run.Duration)
		}
		e.Flows = sc.trafficFlows(e.Hosts, c.Planes)
		if f, ok := sc.Transport.Block().(transport.QPFanout); ok {
			// The further QPs of each transfer (RoCE's qps_per_peer on every plane) hold
			// their sender and receiver, not the transfer's own records: MemPerStripeQP.
			transfers := e.Flows
			e.Flows *= int64(max(1, f.QPsPerTransfer(c.Planes)))
			e.extraQPs = float64(e.Flows - transfers)
		}
	}
	e.inFlight = min(e.Packets, float64(e.Hosts)*float64(c.Planes)*inFlightPerPort)
	inFlight := e.inFlight
	e.perFlow = MemPerFlow
	if sc.Transport.Kind == TransportRaw {
		e.perFlow = MemPerRawFlow
	}
	e.MemoryBytes = MemBase + float64(e.Links)*MemPerLink + (float64(e.Flows)-e.extraQPs)*e.perFlow + e.extraQPs*MemPerStripeQP +
		inFlight*MemPerPacket + e.ScheduleOps*MemPerOp
	if n := len(sc.Workload.Collectives); n > 0 {
		e.coll = float64(n)*MemPerCollective + e.ScheduleOps*MemPerOp + float64(e.Flows)*e.perFlow
		e.MemoryBytes += float64(n) * MemPerCollective
	}
	if e.Packets > 0 {
		var flowSamples float64 // QPs visited by the sampler over the transfers' bound
		if !wl && sc.Transport.payloadBytes() > 0 && sc.Run.SampleInterval > 0 {
			rate, _ := transferRate(sc.Transport, c)
			need := transferBound(sc.Traffic, sc.Transport, e.Hosts, rate)
			flowSamples = float64(e.Flows) * float64(min(need, sc.Run.Duration)) / float64(sc.Run.SampleInterval)
		}
		e.WallMin = wallTime(e.Packets/packetRateMax + flowSamples*flowSampleMin)
		e.WallMax = wallTime(e.Packets/packetRateMin + flowSamples*flowSampleMax)
	}
	return e
}

// trafficFlows counts the flows of sc's traffic groups on hosts hosts and planes planes: a
// permutation's hosts, an incast's senders, the explicit or generated flows; raw traffic has
// one flow per pair and plane.
func (sc *Scenario) trafficFlows(hosts, planes int) int64 {
	var flows int64
	for i := range sc.Traffic {
		t := &sc.Traffic[i]
		var n int64
		switch t.Pattern {
		case PatternPermutation:
			n = int64(hosts)
		case PatternIncast:
			n = int64(len(t.Senders))
		default: // explicit flows or a generated pattern's
			n = int64(len(t.FlowList()))
		}
		if sc.Transport.Kind == TransportRaw {
			n *= int64(planes) // one raw flow per pair and plane
		}
		flows += n
	}
	return flows
}

// collectivesMemory is the flow level's cost of workload.collectives: MemPerCollective each
// and MemPerCollectiveFlow per flow of its largest phase (collectiveFlows).
func (sc *Scenario) collectivesMemory() float64 {
	var m float64
	for i := range sc.Workload.Collectives {
		m += MemPerCollective + collectiveFlows(&sc.Workload.Collectives[i])*MemPerCollectiveFlow
	}
	return m
}

// flowScheduleOps is the schedule operations workload.collectives hold at flow level: each
// collective whose algorithm has dependencies (every one but direct and grouped) runs its
// packet-level schedule message by message when that has at most FlowScheduleMaxOps
// operations (collective.EstimateOps), and they all run side by side, one size of each at a
// time: the sum over the collectives of their largest size's operations.
func (sc *Scenario) flowScheduleOps() float64 {
	var ops float64
	for i := range sc.Workload.Collectives {
		wc := &sc.Workload.Collectives[i]
		base, sizes, err := wc.CollectiveSpec()
		if err != nil {
			continue
		}
		var most float64
		for _, sz := range sizes {
			sp := base
			if sz > 0 {
				sp.Bytes = sz
			}
			r, err := sp.Resolve()
			if err != nil || r.Ranks < 2 || r.Algo == collective.Direct || r.Algo == collective.Grouped {
				continue
			}
			if n, err := collective.EstimateOps(r); err == nil && n <= FlowScheduleMaxOps {
				most = max(most, n)
			}
		}
		ops += most
	}
	return ops
}

// collectiveFlows bounds the flows of one phase of wc at flow level (flow/expand.go): n(n-1)
// for an all-to-all of n ranks (every pair at once), 4n otherwise (a tree's up and down flows
// in both trees; a ring, chain or exchange has at most n).
func collectiveFlows(wc *Collective) float64 {
	n := float64(max(wc.Ranks, len(wc.Hosts), 1))
	if wc.Op == "all_to_all" {
		return n * (n - 1)
	}
	return 4 * n
}

// wallTime converts seconds to a duration, saturating.
func wallTime(secs float64) time.Duration {
	if secs >= float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(secs * 1e9)
}

// maxMemory is the memory limit in force: run.max_memory, or DefaultMemoryLimit left out.
func (r *Run) maxMemory() sim.Size {
	if r.MaxMemory > 0 {
		return r.MaxMemory
	}
	return DefaultMemoryLimit()
}

// DefaultMemoryLimit is run.max_memory left out: 80% of this machine's physical memory
// (MemTotal of /proc/meminfo on Linux), at most DefaultMaxMemory (64 GiB), rounded down to a
// whole MiB; DefaultMaxMemory where the memory cannot be read (another OS, no /proc). A run
// the estimate puts past it is refused before it starts rather than killed by the Go
// runtime's out-of-memory (on a 23 GB machine the old fixed 64 GiB let a run of a million
// explicit flows die that way). The resolver writes the figure into run.max_memory, so a
// resolved scenario.yaml says which limit it was checked against and reruns with it.
func DefaultMemoryLimit() sim.Size { return defaultMemoryLimit() }

var defaultMemoryLimit = sync.OnceValue(func() sim.Size {
	return memoryLimitFrom(readMemTotal())
})

// memoryLimitFrom is DefaultMemoryLimit for a machine of total bytes (0: unknown).
func memoryLimitFrom(total int64) sim.Size {
	if total <= 0 {
		return DefaultMaxMemory
	}
	lim := min(total/10*8, DefaultMaxMemory)
	return sim.Size(lim &^ (1<<20 - 1))
}

// readMemTotal returns MemTotal of /proc/meminfo in bytes, 0 when it cannot be read.
func readMemTotal() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return parseMemTotal(data)
}

// parseMemTotal reads the "MemTotal:   24000000 kB" line of /proc/meminfo (proc(5)) as bytes;
// 0 when there is none or it is malformed.
func parseMemTotal(data []byte) int64 {
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb <= 0 || kb > math.MaxInt64/1024 {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// memoryBudget rejects a scenario whose memory estimate passes run.max_memory; it relies on
// everything else being resolved (it runs last).
func (r *resolver) memoryBudget() error {
	run := &r.sc.Run
	if run.MaxMemory < 0 {
		return Errorf("run.max_memory", "%v must be positive (or left out for %v, 80%% of this machine's memory up to %v)", run.MaxMemory, DefaultMemoryLimit(), sim.Size(DefaultMaxMemory))
	}
	if run.MaxMemory == 0 {
		run.MaxMemory = DefaultMemoryLimit() // shown in the resolved scenario
	}
	e := r.sc.estimate(r.l)
	if n := len(r.sc.Workload.Collectives); n > 0 && e.MemoryBytes > float64(e.MaxMemory) && e.MemoryBytes-e.coll <= float64(e.MaxMemory) {
		// The collectives' own terms put it over: name them.
		return Errorf("workload.collectives", "%d collectives at run.engine %s are estimated at %s of memory (%s), beyond run.max_memory (%v); use fewer or smaller collectives, or raise run.max_memory if the machine has the memory", n, e.Engine, fmtBytes(e.MemoryBytes), e.breakdown(), e.MaxMemory)
	}
	if e.MemoryBytes > float64(e.MaxMemory) {
		return Errorf("run", "the %s-level run is estimated at %s of memory (%s), beyond run.max_memory (%v); use a smaller fabric or fewer flows, or raise run.max_memory if the machine has the memory", e.Engine, fmtBytes(e.MemoryBytes), e.breakdown(), e.MaxMemory)
	}
	return nil
}

// breakdown names the terms of the memory estimate.
func (e Estimate) breakdown() string {
	if e.Engine != EnginePacket && e.perFlow > 0 {
		return fmt.Sprintf("%s base, %d hosts x %s, %.3g pipeline transfers x %.0f B", fmtBytes(MemBase), e.Hosts, fmtBytes(e.perHost), e.inFlight, e.perFlow)
	}
	if e.Engine != EnginePacket {
		if e.coll > 0 && e.ScheduleOps > 0 {
			return fmt.Sprintf("%d hosts x %s, collectives %s at %s each, %d B per flow and %.3g schedule operations x %d B", e.Hosts, fmtBytes(MemPerFluidHost), fmtBytes(e.coll), fmtBytes(MemPerCollective), MemPerCollectiveFlow, e.ScheduleOps, MemPerFlowScheduleOp)
		}
		if e.coll > 0 {
			return fmt.Sprintf("%d hosts x %s, collectives %s at %s each and %d B per flow", e.Hosts, fmtBytes(MemPerFluidHost), fmtBytes(e.coll), fmtBytes(MemPerCollective), MemPerCollectiveFlow)
		}
		return fmt.Sprintf("%d hosts x %s", e.Hosts, fmtBytes(MemPerFluidHost))
	}
	coll := ""
	if e.coll > 0 {
		coll = fmt.Sprintf(", collectives x %s", fmtBytes(MemPerCollective))
	}
	flows := fmt.Sprintf("%d flows x %s", e.Flows, fmtBytes(e.perFlow))
	if e.extraQPs > 0 {
		flows = fmt.Sprintf("%.0f transfers x %s, %.0f further QPs x %s", float64(e.Flows)-e.extraQPs, fmtBytes(e.perFlow), e.extraQPs, fmtBytes(MemPerStripeQP))
	}
	return fmt.Sprintf("%s base, %d links x %s, %s, %.3g packets in flight x %d B, %.3g schedule operations x %d B%s", fmtBytes(MemBase), e.Links, fmtBytes(MemPerLink), flows, e.inFlight, MemPerPacket, e.ScheduleOps, MemPerOp, coll)
}

// FormatBytes prints a byte count to 3 significant digits in B, KB, MB, GB or TB (decimal),
// as the estimates do.
func FormatBytes(b float64) string { return fmtBytes(b) }

// fmtBytes prints a byte count to 3 significant digits in B, KB, MB, GB or TB (decimal).
func fmtBytes(b float64) string {
	for _, u := range []struct {
		s string
		v float64
	}{{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}} {
		if b >= u.v {
			return fmt.Sprintf("%.3g %s", b/u.v, u.s)
		}
	}
	return fmt.Sprintf("%.0f B", b)
}

// pipelineTransfers is the pipeline-parallel transfers a resolved training job sends over the
// simulated steps: each of its world/pp pipelines sends every microbatch's activations forward
// and gradients backward across each of the pp x v - 1 boundaries between its (virtual)
// stages, v the interleaved schedule's virtual stages (1 otherwise); microbatches are
// global_batch / (micro_batch x dp). 0 without pipeline parallelism. The data-parallel
// reductions (a bucket per rank, about a tenth of train-405b-8k's flows) are in the per-host
// term.
func pipelineTransfers(tc *training.Config, hosts int) float64 {
	pl := tc.Plan
	world := tc.GPUs
	if world <= 0 {
		world = hosts
	}
	pp, dp := max(pl.PP, 1), max(pl.DP, 1)
	if pp == 1 {
		return 0
	}
	v := 1
	if pl.Schedule == training.ScheduleInterleaved {
		v = max(pl.VirtualStages, 1)
	}
	micro := float64(max(tc.Model.GlobalBatch, 1)) / float64(max(tc.Model.MicroBatch, 1)*dp)
	return float64(world/pp) * 2 * max(micro, 1) * float64(pp*v-1) * float64(max(tc.SimSteps, 1))
}

// checkDocument refuses, before decoding, a document whose explicit flow lists
// (traffic[i].flows) alone pass the memory budget: their count x the per-flow cost of the
// transport the document names (MemPerFlow; MemPerRawFlow for raw or when it names none), a
// lower bound of the estimate memoryBudget checks after resolving, against run.max_memory as
// written (left out or unreadable: DefaultMemoryLimit). A million explicit MRC flows (a 30 MB
// file) are refused here after their YAML parse instead of after decoding and resolving them.
func (sc *Scenario) checkDocument(root *yaml.Node) error {
	if root.Kind != yaml.MappingNode {
		return nil
	}
	if err := checkCollectivesCount(root); err != nil {
		return err
	}
	tr := mapValue(root, "traffic")
	if tr == nil || tr.Kind != yaml.SequenceNode {
		return nil
	}
	var flows int64
	line := tr.Line
	for _, t := range tr.Content {
		if fl := mapValue(t, "flows"); fl != nil && fl.Kind == yaml.SequenceNode {
			flows += int64(len(fl.Content))
			line = fl.Line
		}
	}
	if flows == 0 {
		return nil
	}
	per, kind := float64(MemPerRawFlow), TransportRaw
	if k := mapValue(mapValue(root, "transport"), "kind"); k != nil && k.Kind == yaml.ScalarNode && k.Value != TransportRaw && k.Value != "" {
		per, kind = MemPerFlow, k.Value
	}
	limit := docMaxMemory(root)
	if need := float64(flows) * per; need > float64(limit) {
		return &FieldError{Path: "traffic", Line: line, Msg: fmt.Sprintf("%d explicit flows need at least %s of memory (%d flows x %s under transport %s), beyond run.max_memory (%v); use fewer flows or a generated pattern, or raise run.max_memory if the machine has the memory", flows, fmtBytes(need), flows, fmtBytes(per), kind, limit)}
	}
	return nil
}

// checkCollectivesCount refuses, before decoding, a workload.collectives list whose length
// alone passes the memory budget: its entries x MemPerCollective, a lower bound of the
// estimate memoryBudget checks after resolving, against run.max_memory as written (left out
// or unreadable: DefaultMemoryLimit).
func checkCollectivesCount(root *yaml.Node) error {
	cl := mapValue(mapValue(root, "workload"), "collectives")
	if cl == nil || cl.Kind != yaml.SequenceNode {
		return nil
	}
	n := len(cl.Content)
	limit := docMaxMemory(root)
	if need := float64(n) * MemPerCollective; need > float64(limit) {
		return &FieldError{Path: "workload.collectives", Line: cl.Line, Msg: fmt.Sprintf("%d collectives need at least %s of memory (%d x %s), beyond run.max_memory (%v); use fewer collectives, or raise run.max_memory if the machine has the memory", n, fmtBytes(need), n, fmtBytes(MemPerCollective), limit)}
	}
	return nil
}

// docMaxMemory is run.max_memory as a document writes it, DefaultMemoryLimit when it is left
// out or unreadable.
func docMaxMemory(root *yaml.Node) sim.Size {
	if m := mapValue(mapValue(root, "run"), "max_memory"); m != nil && m.Kind == yaml.ScalarNode {
		var v sim.Size
		if v.UnmarshalText([]byte(m.Value)) == nil && v > 0 {
			return v
		}
	}
	return DefaultMemoryLimit()
}

// mapValue is the value under key k of mapping m (aliases resolved), nil when m is not a
// mapping or has no such key.
func mapValue(m *yaml.Node, k string) *yaml.Node {
	if m != nil && m.Kind == yaml.AliasNode {
		m = m.Alias
	}
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	if i := keyIndex(m, k); i >= 0 {
		v := m.Content[i+1]
		if v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		return v
	}
	return nil
}
