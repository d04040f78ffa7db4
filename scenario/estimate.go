package scenario

import (
	"fmt"
	"math"
	"time"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/workload/collective"
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
	// ScheduleOps is the collective schedules' operations (collective.EstimateOps); 0 without
	// packet-level collectives.
	ScheduleOps float64 `json:"schedule_ops"`
	// MemoryBytes is the estimated peak heap, bytes (the model in Scenario.Estimate).
	MemoryBytes float64 `json:"memory_bytes"`
	// MaxMemory is the limit it was checked against (run.max_memory or DefaultMaxMemory).
	MaxMemory sim.Size `json:"max_memory"`
	// WallMin and WallMax bound the wall time (0 and 0: not estimated, as at flow level,
	// whose cost is its rate recomputes).
	WallMin time.Duration `json:"wall_min_ns"`
	WallMax time.Duration `json:"wall_max_ns"`
	// Note says what the figures leave out, when something is.
	Note string `json:"note,omitempty"`

	inFlight float64 // packets in flight in the model
	perFlow  float64 // bytes per flow in the model
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
//   - per host at flow level: train-405b-8k (8,192 hosts, 8 planes, 4.6 million flows)
//     peaks at 2,549 MB RSS (lockstep bench), 310 KB per host.
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
	MemBase         = 64 << 20
	// DefaultMaxMemory is run.max_memory left out: 64 GiB, more than any preset needs
	// (train-405b-131k: about 41 GB) and what a large workstation or a cluster node has. A
	// fixed figure rather than this machine's memory, so a scenario is accepted or refused
	// alike everywhere; lockstep validate prints the estimate to compare with the machine.
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
// level, MemPerRawFlow for raw flows; MemBase + hosts x MemPerFluidHost at flow level and for
// training under transport ideal; MemBase alone for collectives under transport ideal), wall
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
		hosts, planes := e.Hosts, c.Planes
		for i := range sc.Traffic {
			t := &sc.Traffic[i]
			e.Packets += t.estimatePackets(sc.Transport, hosts, planes, c.HostLink, sc.Run.Duration)
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
			e.Flows += n
		}
	}
	e.inFlight = min(e.Packets, float64(e.Hosts)*float64(c.Planes)*inFlightPerPort)
	inFlight := e.inFlight
	e.perFlow = MemPerFlow
	if sc.Transport.Kind == TransportRaw {
		e.perFlow = MemPerRawFlow
	}
	e.MemoryBytes = MemBase + float64(e.Links)*MemPerLink + float64(e.Flows)*e.perFlow +
		inFlight*MemPerPacket + e.ScheduleOps*MemPerOp
	if e.Packets > 0 {
		var flowSamples float64 // QPs visited by the sampler over the transfers' bound
		if !wl && sc.Transport.payloadBytes() > 0 && sc.Run.SampleInterval > 0 {
			need := transferBound(sc.Traffic, sc.Transport, e.Hosts, c.HostLink*sim.Rate(c.Planes))
			flowSamples = float64(e.Flows) * float64(min(need, sc.Run.Duration)) / float64(sc.Run.SampleInterval)
		}
		e.WallMin = wallTime(e.Packets/packetRateMax + flowSamples*flowSampleMin)
		e.WallMax = wallTime(e.Packets/packetRateMin + flowSamples*flowSampleMax)
	}
	return e
}

// wallTime converts seconds to a duration, saturating.
func wallTime(secs float64) time.Duration {
	if secs >= float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(secs * 1e9)
}

// maxMemory is the memory limit in force: run.max_memory, or DefaultMaxMemory left out.
func (r *Run) maxMemory() sim.Size {
	if r.MaxMemory > 0 {
		return r.MaxMemory
	}
	return DefaultMaxMemory
}

// memoryBudget rejects a scenario whose memory estimate passes run.max_memory; it relies on
// everything else being resolved (it runs last).
func (r *resolver) memoryBudget() error {
	run := &r.sc.Run
	if run.MaxMemory < 0 {
		return Errorf("run.max_memory", "%v must be positive (or left out for %v)", run.MaxMemory, sim.Size(DefaultMaxMemory))
	}
	e := r.sc.estimate(r.l)
	if e.MemoryBytes > float64(e.MaxMemory) {
		return Errorf("run", "the %s-level run is estimated at %s of memory (%s), beyond run.max_memory (%v); use a smaller fabric or fewer flows, or raise run.max_memory if the machine has the memory", e.Engine, fmtBytes(e.MemoryBytes), e.breakdown(), e.MaxMemory)
	}
	return nil
}

// breakdown names the terms of the memory estimate.
func (e Estimate) breakdown() string {
	if e.Engine != EnginePacket {
		return fmt.Sprintf("%d hosts x %s", e.Hosts, fmtBytes(MemPerFluidHost))
	}
	return fmt.Sprintf("%s base, %d links x %s, %d flows x %s, %.3g packets in flight x %d B, %.3g schedule operations x %d B", fmtBytes(MemBase), e.Links, fmtBytes(MemPerLink), e.Flows, fmtBytes(e.perFlow), e.inFlight, MemPerPacket, e.ScheduleOps, MemPerOp)
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
