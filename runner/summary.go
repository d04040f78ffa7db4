package runner

import (
	"fmt"
	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/traffic"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/training"
)

// Summary is every headline figure of a run, with the unit in each JSON key. It contains
// nothing that depends on the machine or the wall clock, so the same scenario and seed give a
// byte-identical summary.json.
type Summary struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	// Version is the lockstep build that wrote the summary (module version and VCS revision
	// from the binary's build information); absent when the caller sets none (the CLI does).
	Version *BuildVersion `json:"version,omitempty"`
	// Variant names the variant of a file with a variants: section this run is, with its
	// parameter values by variants key; absent for a plain run. The CLI sets it.
	Variant *VariantInfo `json:"variant,omitempty"`
	// Complete says the simulation ran to its end (false: it was interrupted; Interrupted
	// says why). A complete run may still have failed (Failed).
	Complete bool `json:"complete"`
	// Interrupted is the signal that stopped the run early ("SIGINT", "SIGTERM"), at
	// InterruptedAtUs of simulated time; InterruptedNote says what that means for the
	// figures (no drain, no audit, transfers cut short). Absent for a complete run.
	Interrupted     string   `json:"interrupted,omitempty"`
	InterruptedAtUs *float64 `json:"interrupted_at_us,omitempty"`
	InterruptedNote string   `json:"interrupted_note,omitempty"`
	// Failed says the run did not do what it was asked (markOutcome): a QP errored (unless
	// run.allow_qp_errors) or a transfer never finished; FailureReason says which, with
	// counts. Absent (false) for a run that succeeded; the CLI exits 1 on a failed run.
	Failed        bool   `json:"failed,omitempty"`
	FailureReason string `json:"failure_reason,omitempty"`
	// Notes say what the run's engine leaves out of the scenario (at run.engine flow, each
	// note of the transport's transport.FlowLevelNoter: InfiniBand's congestion control),
	// one sentence each naming its field; the terminal prints them as "note:" lines.
	// Absent when there is nothing to say.
	Notes []string `json:"notes,omitempty"`
	// NotDrained, when the fabric still held packets after run.drain, says how many and the
	// fullest ports; the run is then failed (FailureReason names them) unless
	// run.allow_not_drained, which sets NotDrainedAllowed instead. Absent when it drained.
	NotDrained        *NotDrained `json:"not_drained,omitempty"`
	NotDrainedAllowed bool        `json:"not_drained_allowed,omitempty"`
	// QPErrorsAllowed: QPs errored and run.allow_qp_errors accepted it (a failure study).
	QPErrorsAllowed bool `json:"qp_errors_allowed,omitempty"`
	// UnboundedFlows counts the unbounded flows (htsim connections of size 0,
	// scenario.FlowSpec.Unbounded): transfers that send until run.duration and are expected
	// not to finish, so they do not fail the run. Absent when there are none.
	UnboundedFlows int `json:"unbounded_flows,omitempty"`

	Hosts    int `json:"hosts"`
	Planes   int `json:"planes"`
	Switches int `json:"switches"`
	Links    int `json:"links"`
	Flows    int `json:"flows"`

	DurationUs float64 `json:"duration_us"` // offered-load interval
	EndUs      float64 `json:"end_us"`      // when the run ended, drain included
	// StoppedEarly: the run stopped before run.duration with transfers unfinished, because
	// every one of them was on a QP that gave up (MRC and RoCE traffic runs): nothing left
	// could finish. DurationUs is when it stopped.
	StoppedEarly bool   `json:"stopped_early,omitempty"`
	Events       uint64 `json:"events"`

	// Raw traffic: wire bytes sent by sources and delivered whole, over the duration. MRC:
	// data wire bytes sent and payload bytes placed over the run, and placed / posted payload.
	OfferedGbps       float64 `json:"offered_gbps"`
	DeliveredGbps     float64 `json:"delivered_gbps"`
	DeliveredFraction float64 `json:"delivered_fraction"`

	SentPackets      int64            `json:"sent_packets"`
	DeliveredPackets int64            `json:"delivered_packets"`
	TrimmedPackets   int64            `json:"trimmed_packets"`
	DroppedPackets   int64            `json:"dropped_packets"`
	Drops            map[string]int64 `json:"drops_packets"` // by reason; map keys are sorted by encoding/json
	// DroppedAtFailedSwitches counts, of drops_packets' link_down, the packets dropped at a
	// switch that failed (a fault of kind switch): in its own queues, offered to its dead
	// ports, being sent by it or on the wire into it (fabric.Counters.AtFailedSwitch). Absent
	// when none.
	DroppedAtFailedSwitches int64 `json:"dropped_at_failed_switches_packets,omitempty"`
	InFlightAtEnd           int64 `json:"in_flight_packets_at_end"`
	CEMarks                 int64 `json:"ce_marks"`

	// One-way delay of raw packets delivered whole (raw traffic only), from the source NIC's
	// transmit timestamp to delivery. LatencyMeanUs is the exact mean (a sum over the
	// packets); the percentiles are the histogram's (3 significant digits).
	LatencyMeanUs float64 `json:"latency_mean_us,omitempty"`
	LatencyP50Us  float64 `json:"latency_p50_us,omitempty"`
	LatencyP99Us  float64 `json:"latency_p99_us,omitempty"`
	LatencyP999Us float64 `json:"latency_p999_us,omitempty"`
	LatencyMaxUs  float64 `json:"latency_max_us,omitempty"`
	// HostWaitMeanUs is the mean time the same packets waited in their source NIC's queue
	// before transmission (raw traffic only; exact): with latency_mean_us, the mean delay
	// from the send.
	HostWaitMeanUs float64 `json:"host_wait_mean_us,omitempty"`

	Queue QueueDepths `json:"queue_depth"` // all switch egress ports

	PerPlane []PlaneSummary `json:"planes_detail"`

	// Transport holds the packet-level transport's figures (its kind, the common transfer
	// figures, then its own): absent for raw traffic and for workloads on the flow level or
	// the closed forms.
	Transport *transport.Summary `json:"transport,omitempty"`
	// FCTBySize is the flow completion times by transfer size, for traffic with generated
	// arrivals (patterns poisson and onoff) under a transport (fctsize.go).
	FCTBySize []FCTBucket `json:"fct_by_size,omitempty"`
	// PFC, when fabric.pfc is on: pauses and paused time over every port.
	PFC *PFCSummary `json:"pfc,omitempty"`
	// Switch, when fabric.switch_model is given (packet level): the switch model and its
	// ingress drops (switchmodel.go).
	Switch *SwitchSummary `json:"switch_model,omitempty"`
	// Adaptive, when fabric.adaptive_routing is on (packet level): its decisions, fast
	// recovery and losses at failed links (adaptive_summary.go).
	Adaptive *AdaptiveSummary `json:"adaptive_routing,omitempty"`
	// Faults holds what each failure cost (faults.csv), when the scenario has faults.
	Faults []FaultCost `json:"faults,omitempty"`
	// With run.fault_baseline twin: when the same run without faults ended its traffic, and
	// how much later this one did (the job's slowdown from all its failures).
	FaultBaselineEndUs float64 `json:"fault_baseline_end_us,omitempty"`
	FaultSlowdownUs    float64 `json:"fault_slowdown_us,omitempty"`
	// Collectives holds one nccl-tests style row per size of a collective workload.
	Collectives []CollectiveRow `json:"collectives,omitempty"`
	// Chakra is a Chakra trace's step time and counts (workload.chakra).
	Chakra *ChakraSummary `json:"chakra,omitempty"`
	// Engine says how a workload's collectives ran when not simply at packet level:
	// analytic (closed forms), flow (the flow-level engine) or packet (training).
	Engine string `json:"engine,omitempty"`
	// Training holds a training workload's figures (step time, exposed communication,
	// power, goodput; units in the keys).
	Training *training.Result `json:"training,omitempty"`
	// OCS lists chip failures on a torus with optical circuit switches: the cube swapped for
	// a spare, the pause, the step time before and after.
	OCS []OCSEvent `json:"ocs,omitempty"`
	// TrainingFaults is what a training job's faults did: events by step, restarts and their
	// charge, the slowest link of every step (present when the scenario has faults).
	TrainingFaults *TrainingFaults `json:"training_faults,omitempty"`
}

// BuildVersion is summary.json's "version": what runtime/debug.ReadBuildInfo says of the
// binary, so a results folder names the code that produced it. It depends only on the binary,
// never on the run or the wall clock, so the same binary still writes byte-identical
// summaries. A build from a git checkout (go build, go run) carries the VCS fields; a binary
// built without VCS information (go test, -buildvcs=false, a source tree without .git) has
// none, and Version is "(devel)" unless a module version or -ldflags set one.
type BuildVersion struct {
	// Module is the main module's path (github.com/lockstepsim/lockstep).
	Module string `json:"module"`
	// Version is the module version (v1.2.3 from go install ...@v1.2.3, a pseudo-version),
	// "(devel)" for a build from a source tree, or what -ldflags "-X main.version=..." set.
	Version string `json:"version"`
	// VCS is the version control system ("git"); Revision the commit hash, Time its commit
	// time (RFC 3339) and Modified whether the tree had uncommitted changes when built.
	VCS      string `json:"vcs,omitempty"`
	Revision string `json:"vcs_revision,omitempty"`
	Time     string `json:"vcs_time,omitempty"`
	Modified *bool  `json:"vcs_modified,omitempty"`
}

// VariantInfo is summary.json's "variant": the variant's scenario name and the value of
// each swept parameter (variants key -> value as written; a mapping value as "#N").
type VariantInfo struct {
	Name   string            `json:"name"`
	Values map[string]string `json:"values"`
	// ScenarioSHA256 is the SHA-256 (hex) of the resolved scenario's YAML without run.out:
	// a rerun of the sweep skips this variant while it matches (docs/sweeps.md).
	ScenarioSHA256 string `json:"scenario_sha256"`
}

// QueueDepths are percentiles of switch egress queue depth sampled every run.sample_interval
// over every switch port (bytes), the deepest sample, and the time-averaged depth.
type QueueDepths struct {
	P50Bytes  int64 `json:"p50_bytes"`
	P90Bytes  int64 `json:"p90_bytes"`
	P99Bytes  int64 `json:"p99_bytes"`
	P999Bytes int64 `json:"p999_bytes"`
	MaxBytes  int64 `json:"max_bytes"`
	// MeanBytes is the time-averaged depth (the fabric's exact integral of bytes queued over
	// time, not a mean of the samples) over the offered-load interval, averaged over the ports.
	MeanBytes float64 `json:"mean_bytes"`
	Samples   int64   `json:"samples"`
	// MaxMeanBytes is the largest time-averaged depth of one egress port over the same
	// interval, NIC ports included (where raw traffic's own queueing is), and MaxMeanPort that
	// port's name (absent when every queue stayed empty).
	MaxMeanBytes float64 `json:"max_mean_bytes"`
	MaxMeanPort  string  `json:"max_mean_port,omitempty"`
}

// PlaneSummary is one plane's figures. Utilisation is transmitted bits / (rate x duration) over
// the offered-load interval; offered load counts bytes a port accepted or dropped.
type PlaneSummary struct {
	Plane int `json:"plane"`

	// Host links (NIC -> T0) and switch egress ports by role.
	NICUtilMeanPct     float64 `json:"nic_util_mean_pct"`
	UplinkUtilMeanPct  float64 `json:"uplink_util_mean_pct"` // switch ports toward a higher tier
	UplinkUtilMinPct   float64 `json:"uplink_util_min_pct"`
	UplinkUtilMaxPct   float64 `json:"uplink_util_max_pct"`
	UplinksIdle        int     `json:"uplinks_idle"`       // offered nothing
	UplinksOverloaded  int     `json:"uplinks_overloaded"` // offered more than line rate
	Uplinks            int     `json:"uplinks"`
	DownlinkUtilMaxPct float64 `json:"downlink_util_max_pct"` // switch ports toward a lower tier or a host
	DownlinksOverload  int     `json:"downlinks_overloaded"`

	TxBytes int64 `json:"tx_bytes"`      // all switch ports of the plane
	Drops   int64 `json:"drops_packets"` // at the plane's switch ports and its NIC ports
	Trims   int64 `json:"trims"`
	CEMarks int64 `json:"ce_marks"`

	Queue QueueDepths `json:"queue_depth"`
}

func depths(h *hdrhistogram.Histogram, maxBytes int64) QueueDepths {
	q := func(p float64) int64 { return min(h.ValueAtQuantile(p), maxBytes) }
	return QueueDepths{
		P50Bytes: q(50), P90Bytes: q(90), P99Bytes: q(99), P999Bytes: q(99.9), MaxBytes: maxBytes, Samples: h.TotalCount(),
	}
}

// meanDepth is the time-averaged egress queue depth (bytes) over the switch ports of plane
// (every plane when plane < 0) from the snapshot at the end of the offered-load interval,
// the mean over those ports, to 3 decimals; 0 without such ports.
func meanDepth(net *fabric.Network, snap []portSnap, plane int) float64 {
	var sum float64
	n := 0
	for i := range net.Ports {
		own := &net.Nodes[net.Ports[i].Node]
		if own.Kind != fabric.Switch || plane >= 0 && int(own.Plane) != plane || i >= len(snap) {
			continue
		}
		sum += snap[i].meanDepth
		n++
	}
	if n == 0 {
		return 0
	}
	return round3(sum / float64(n))
}

// maxMeanDepth returns the deepest time-averaged egress queue in plane (-1: every plane),
// switch and NIC ports alike, and its port's name ("" when every queue stayed empty). A tie
// goes to the first port, so the answer is deterministic.
func maxMeanDepth(net *fabric.Network, snap []portSnap, plane int) (float64, string) {
	best, name := 0.0, ""
	for i := range net.Ports {
		own := &net.Nodes[net.Ports[i].Node]
		if plane >= 0 && own.Kind == fabric.Switch && int(own.Plane) != plane || i >= len(snap) {
			continue
		}
		if plane >= 0 && own.Kind != fabric.Switch && int(net.Ports[i].Local) != plane {
			continue
		}
		if m := snap[i].meanDepth; m > best {
			best, name = m, net.Ports[i].Name
		}
	}
	return round3(best), name
}

// rawFigures fills the raw-traffic figures: offered and delivered rates over the offered-load
// interval, the delivered fraction and the one-way latency mean and percentiles.
//
// Offered counts each flow's sent bytes up to its configured rate x active time (a paced flow
// sends whole packets, so its last one may reach past Stop); delivered is the offered rate
// times the delivered fraction of bytes, so neither exceeds what the sources could send.
func rawFigures(s *Summary, raw *traffic.Raw, dur sim.Time) {
	t := raw.Totals()
	var offered float64
	for i := range raw.Flows {
		f := &raw.Flows[i]
		offered += min(float64(raw.Stats[i].SentBytes)*8, float64(f.Rate)*(f.Stop-f.Start).Seconds())
	}
	if t.SentBytes > 0 {
		s.DeliveredFraction = round3(float64(t.RecvBytes) / float64(t.SentBytes))
	}
	if secs := dur.Seconds(); secs > 0 {
		s.OfferedGbps = round3(offered / secs / 1e9)
		s.DeliveredGbps = round3(offered / secs / 1e9 * float64(t.RecvBytes) / max(1, float64(t.SentBytes)))
	}
	us := func(ns int64) float64 { return round3(float64(ns) / 1e3) }
	if t.RecvPackets > 0 {
		s.LatencyMeanUs = round3(t.LatencySum.Micros() / float64(t.RecvPackets))
		s.HostWaitMeanUs = round3(t.HostWaitSum.Micros() / float64(t.RecvPackets))
	}
	s.LatencyP50Us = us(raw.Latency.ValueAtQuantile(50))
	s.LatencyP99Us = us(raw.Latency.ValueAtQuantile(99))
	s.LatencyP999Us = us(raw.Latency.ValueAtQuantile(99.9))
	s.LatencyMaxUs = us(raw.Latency.Max())
}

// summarise fills the fabric-wide figures: packet books, queue depths and per-plane
// utilisation over the measured interval dur (port counters snapshotted at its end).
func summarise(sc *scenario.Scenario, net *fabric.Network, flows int, smp *sampler, snap []portSnap, dur sim.Time) Summary {
	planes := 1 // a host's NIC ports, one per plane
	if net.NumHosts() > 0 {
		planes = len(net.Nodes[0].Ports)
	}
	s := Summary{
		Scenario: sc.Name, Seed: sc.Run.Seed,
		Hosts: net.NumHosts(), Planes: planes, Switches: len(net.Nodes) - net.NumHosts(),
		Links: len(net.Ports) / 2, Flows: flows,
		DurationUs: round3(dur.Micros()), EndUs: round3(net.Sim().Now().Micros()), Events: net.Sim().Events(),
		StoppedEarly: smp != nil && smp.stoppedEarly,
		SentPackets:  net.C.Injected, DeliveredPackets: net.C.DeliveredWhole, TrimmedPackets: net.C.DeliveredTrimmed,
		DroppedPackets: net.C.DroppedTotal(), InFlightAtEnd: net.InFlight(), DroppedAtFailedSwitches: net.C.AtFailedSwitch,
		Drops: map[string]int64{},
	}
	secs := dur.Seconds()
	for r := fabric.DropReason(0); r < fabric.NumDropReasons; r++ {
		s.Drops[r.String()] = net.C.Dropped[r]
	}
	s.Queue = depths(smp.all, smp.maxAll)
	s.Queue.MeanBytes = meanDepth(net, snap, -1)
	s.Queue.MaxMeanBytes, s.Queue.MaxMeanPort = maxMeanDepth(net, snap, -1)

	type acc struct {
		ps                    PlaneSummary
		nicSum, upSum         float64
		nicN                  int
		upMin, upMax, downMax float64
		upN                   int
		upMinSet              bool
	}
	perPlane := make([]acc, planes)

	util := func(bytes int64, r sim.Rate) float64 {
		if r <= 0 || secs <= 0 {
			return 0
		}
		return float64(bytes) * 8 / (float64(r) * secs) * 100
	}
	for i := range net.Ports {
		pt := &net.Ports[i]
		own := &net.Nodes[pt.Node]
		peer := &net.Nodes[net.Ports[pt.Peer].Node]
		tot := pt.Totals()
		s.CEMarks += tot.CEMarks
		var plane int
		if own.Kind == fabric.Host {
			plane = int(peer.Plane)
		} else {
			plane = int(own.Plane)
		}
		if plane < 0 || plane >= len(perPlane) {
			continue
		}
		a := &perPlane[plane]
		u := util(snap[i].txBytes, pt.Rate)
		offered := util(snap[i].offeredBytes, pt.Rate)
		for _, d := range tot.Drops {
			a.ps.Drops += d // NIC ports too: a failed NIC link drops at its host
		}
		if own.Kind == fabric.Host {
			a.nicSum += u
			a.nicN++
			continue
		}
		a.ps.TxBytes += tot.TxBytes
		a.ps.Trims += tot.Trims
		a.ps.CEMarks += tot.CEMarks
		if peer.Kind == fabric.Switch && peer.Tier > own.Tier {
			a.upSum += u
			a.upN++
			if !a.upMinSet || u < a.upMin {
				a.upMin, a.upMinSet = u, true
			}
			if u > a.upMax {
				a.upMax = u
			}
			if snap[i].offeredBytes == 0 {
				a.ps.UplinksIdle++
			}
			if offered > 100.0001 {
				a.ps.UplinksOverloaded++
			}
		} else {
			if u > a.downMax {
				a.downMax = u
			}
			if offered > 100.0001 {
				a.ps.DownlinksOverload++
			}
		}
	}
	for p := range planes {
		a := &perPlane[p]
		a.ps.Plane = p
		if a.nicN > 0 {
			a.ps.NICUtilMeanPct = round3(a.nicSum / float64(a.nicN))
		}
		if a.upN > 0 {
			a.ps.UplinkUtilMeanPct = round3(a.upSum / float64(a.upN))
		}
		a.ps.Uplinks = a.upN
		a.ps.UplinkUtilMinPct = round3(a.upMin)
		a.ps.UplinkUtilMaxPct = round3(a.upMax)
		a.ps.DownlinkUtilMaxPct = round3(a.downMax)
		a.ps.Queue = depths(smp.hist[p], smp.maxPlane[p])
		a.ps.Queue.MeanBytes = meanDepth(net, snap, p)
		a.ps.Queue.MaxMeanBytes, a.ps.Queue.MaxMeanPort = maxMeanDepth(net, snap, p)
		s.PerPlane = append(s.PerPlane, a.ps)
	}
	return s
}

// PFCSummary is what priority flow control did over the run (units in the keys): pauses
// received by egress ports, the time egress classes spent paused (summed over ports and
// classes), how many ports were ever paused, the most-paused port, and the ingresses that held
// more than XOFF + headroom (where the configuration could not be lossless).
type PFCSummary struct {
	Pauses             int64    `json:"pauses"`
	PausedUsTotal      float64  `json:"paused_us_total"`
	PortsPaused        int      `json:"ports_paused"`
	MostPausedPort     string   `json:"most_paused_port,omitempty"`
	MostPausedUs       float64  `json:"most_paused_us,omitempty"`
	HeadroomExceeded   int      `json:"headroom_exceeded_ports"` // ingresses that dropped lossless packets past XOFF + headroom
	WatchdogFired      int64    `json:"watchdog_fired"`
	HeadroomPortsFirst []string `json:"headroom_exceeded_first,omitempty"`
	// ConfigProblems says, before the run, why the configuration cannot be lossless
	// (fabric.Network.PFCLosslessCheck; at most maxPFCProblems lines).
	ConfigProblems []string `json:"lossless_config_problems,omitempty"`
}

// maxPFCProblems bounds the PFC configuration problems reported.
const maxPFCProblems = 5

// pfcProblems is the fabric's PFC configuration check, the first maxPFCProblems lines and, if
// there are more, a last line saying how many.
func pfcProblems(net *fabric.Network) []string {
	all := net.PFCLosslessCheck(1 << 30)
	if len(all) <= maxPFCProblems {
		return all
	}
	return append(all[:maxPFCProblems:maxPFCProblems], fmt.Sprintf("and %d more like these", len(all)-maxPFCProblems))
}

// pfcSummary gathers the PFC record of every port at now, or nil when PFC is off.
func pfcSummary(sc *scenario.Scenario, net *fabric.Network, now sim.Time) *PFCSummary {
	if !sc.Fabric.PFC.Config().Enabled {
		return nil
	}
	s := &PFCSummary{ConfigProblems: pfcProblems(net)}
	var most sim.Time
	for i := range net.Ports {
		st := net.PFCStats(fabric.PortID(i), now)
		s.Pauses += st.PausesReceived
		s.WatchdogFired += st.WatchdogFired
		s.PausedUsTotal += st.PausedTime.Micros()
		if st.PausesReceived > 0 {
			s.PortsPaused++
		}
		if st.PausedTime > most {
			most, s.MostPausedPort = st.PausedTime, net.Ports[i].Name
		}
		if st.HeadroomExceeded {
			s.HeadroomExceeded++
			if len(s.HeadroomPortsFirst) < 5 {
				s.HeadroomPortsFirst = append(s.HeadroomPortsFirst, net.Ports[i].Name)
			}
		}
	}
	s.PausedUsTotal = round3(s.PausedUsTotal)
	s.MostPausedUs = us(most)
	return s
}
