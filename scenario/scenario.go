package scenario

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
)

// Scenario is one simulation input: the fabric, the load and how to run it. Zero fields take
// the lockstep defaults listed on each field; the resolved scenario (defaults filled) is what a
// run records in its results folder.
type Scenario struct {
	// Name labels the run and its default results folder, results/<name>. Letters, digits,
	// '-', '_' and '.'; default "scenario".
	Name     string   `yaml:"name"`
	Topology Topology `yaml:"topology"`
	Fabric   Fabric   `yaml:"fabric"`
	// Transport carries the traffic: raw paced packets (default) or a reliable transport.
	Transport Transport `yaml:"transport"`
	// Traffic is raw flow groups; Workload is a collective. Exactly one of them is given.
	Traffic  []Traffic `yaml:"traffic,omitempty"`
	Workload Workload  `yaml:"workload,omitempty"`
	// Faults act on named links during the run.
	Faults []Fault `yaml:"faults,omitempty"`
	Run    Run     `yaml:"run"`

	dir string // the folder files the scenario names are read from (ParseIn)
}

// Dir returns the folder the files a scenario names (traffic files, traces) are read from:
// the scenario file's folder (Load, LoadVariants), or "" for the working directory.
func (sc *Scenario) Dir() string { return sc.dir }

// Transport kinds the simulator itself provides; every other kind is a registered transport
// (transport.Register; transport/all/all.go lists the shipped ones).
const (
	TransportRaw = "raw" // paced packets, no reliability: traffic gives load or rate
	// TransportIdeal is no packet fabric at all: workload messages cross an ideal network
	// (per-host NIC serialisation and a fixed latency; workloads only).
	TransportIdeal = "ideal"
)

// Transport selects the transport and holds its parameters. Each kind's parameters sit in a
// block of its own name (transport: {kind: mrc, mrc: {ev: {active: 128}}}), so a block for a
// kind not selected is an error rather than silently ignored. A registered transport's block
// is its plugin's configuration (transport.Plugin.NewConfig), decoded under the transport's
// kind as key (transportBlocks) and reached with Block and SetBlock.
type Transport struct {
	// Kind: "raw" (default; a workload defaults to the registered transport whose plugin is
	// the WorkloadDefault), "ideal" (workloads only) or a registered transport
	// (transport.Kinds: "mrc", "roce").
	Kind string `yaml:"kind"`
	// Ideal parameters (kind ideal).
	Ideal *Ideal `yaml:"ideal,omitempty"`

	// blocks are the registered transports' blocks given, by kind: pointers to each plugin's
	// configuration type, never nil, nil when none. Writes replace the map (copy on write),
	// so a copied Scenario never shares a change.
	blocks map[string]any
}

// Topology is a one-of: exactly one builder key is set (package topo documents each).
type Topology struct {
	// Clos is a multi-plane 2- or 3-tier Clos.
	Clos *topo.Clos `yaml:"clos,omitempty"`
	// FatTree is a k-ary 3-tier fat-tree (pods), single- or multi-plane.
	FatTree *topo.FatTree `yaml:"fat_tree,omitempty"`
	// Rail is a rail-optimised GPU cluster: GPU i of every server on rail i (its own T0s),
	// a spine above (or rail_only), one or two NIC ports per GPU.
	Rail *topo.Rail `yaml:"rail,omitempty"`
	// Torus is a 3D torus of chips (wrap-around links, optionally twisted, OCS cubes).
	Torus *topo.Torus `yaml:"torus,omitempty"`
	// Mesh is a 1-tier full mesh: every node linked to every other.
	Mesh *topo.Mesh `yaml:"mesh,omitempty"`
	// Graph is a topology read from a file in another simulator's format (an ns-3 HPCC
	// topology.txt): explicit switches, hosts and links (scenario/topology_graph.go).
	Graph *GraphFile `yaml:"graph,omitempty"`
}

// Spec returns the one topology kind that is set, with its YAML key. Errors: none or more
// than one set.
func (t *Topology) Spec() (topo.Spec, string, error) {
	var specs []topo.Spec
	var keys []string
	if t.Clos != nil {
		specs, keys = append(specs, *t.Clos), append(keys, "clos")
	}
	if t.FatTree != nil {
		specs, keys = append(specs, *t.FatTree), append(keys, "fat_tree")
	}
	if t.Rail != nil {
		specs, keys = append(specs, *t.Rail), append(keys, "rail")
	}
	if t.Torus != nil {
		specs, keys = append(specs, *t.Torus), append(keys, "torus")
	}
	if t.Mesh != nil {
		specs, keys = append(specs, *t.Mesh), append(keys, "mesh")
	}
	if t.Graph != nil {
		specs, keys = append(specs, *t.Graph), append(keys, "graph")
	}
	switch len(specs) {
	case 0:
		return nil, "", Errorf("topology", "missing; set one of topology.clos, fat_tree, rail, torus, mesh, graph")
	case 1:
		return specs[0], keys[0], nil
	}
	return nil, "", Errorf("topology", "sets %s; a scenario has one topology", strings.Join(keys, " and "))
}

// Describe validates the topology section and returns its description (nodes, links, routes,
// paths), without building a fabric. Errors are *FieldError naming topology.<kind>.<field>,
// or "topology" when no kind (or more than one) is set.
func (t *Topology) Describe() (topo.Topology, error) {
	spec, key, err := t.Spec()
	if err != nil {
		return nil, err
	}
	l, err := spec.Topology()
	if err != nil {
		return nil, kindError(key, err)
	}
	return l, nil
}

// ProfileNone is fabric.profile none: queues exactly as configured. Every other profile is
// a registered transport's kind whose plugin has a Profile (transport.Plugin.Profile).
const ProfileNone = "none"

// Fabric holds the queue configuration of switch and NIC egress ports.
type Fabric struct {
	// Profile derives switch ECN, trimming and queue limits for a transport: "mrc", "roce"
	// or "none" (queues exactly as configured). Default: the transport's own ("mrc" under
	// mrc, "roce" under roce), "none" otherwise. A profile fills in only what the scenario
	// does not set, queue by queue: a limit, ecn or trim block given explicitly is kept,
	// `enabled: false` included (ecn: {enabled: false} turns marking off). A block that
	// gives thresholds (ecn kmin, kmax, pmax; trim threshold) but no enabled is on where the
	// profile turns the feature on (switch_queue: {ecn: {kmin: 20KB, kmax: 80KB}} marks under
	// mrc and roce) and an error elsewhere (profile none, the mrc last hop's ECN, roce
	// trimming), and a left-out ecn.pmax is the profile's (1 under mrc, 0.2 under roce);
	// enabled: true alone where the profile turns the feature on leaves every threshold to
	// the profile.
	Profile string `yaml:"profile"`
	// SwitchQueue configures every switch egress port (default: 2 classes, 1 MiB drop-tail,
	// no ECN, no trimming).
	SwitchQueue fabric.QueueConfig `yaml:"switch_queue"`
	// LastHopQueue configures T0 egress ports toward hosts, the last queue before a receiver
	// (MRC: no ECN marking there, trimming at a higher threshold [MRC §2.1]). Default: a copy
	// of SwitchQueue, except that under the mrc profile, which sets the last hop apart, its
	// ecn and trim are the profile's unless last_hop_queue gives them (switch_queue's limit
	// and classes are still copied).
	LastHopQueue *fabric.QueueConfig `yaml:"last_hop_queue"`
	// NICQueue configures every host NIC port's egress (default: 2 classes, 16 MiB).
	NICQueue fabric.QueueConfig `yaml:"nic_queue"`
	// ECMPSeed is "per_switch" (default: each switch hashes with its own seed, as deployed) or
	// "shared" (every switch the same seed: the misconfiguration that polarises multi-stage
	// ECMP, for comparison).
	ECMPSeed string `yaml:"ecmp_seed"`
	// PFC is priority flow control on the switches (fabric.PFCConfig: enabled, classes, xoff,
	// xon, headroom). Default: on under transport roce (lossless RoCE, as deployed), off
	// otherwise; `pfc: {enabled: false}` runs RoCE lossy.
	PFC *PFC `yaml:"pfc,omitempty"`
	// SwitchModel is where the switches buffer packets (fabric.SwitchConfig): kind output
	// (default: straight into the egress queue), shared_ingress (one FIFO per ingress port:
	// head-of-line blocking) or voq (a virtual output queue per ingress and egress, served
	// round robin), with ingress_buffer, voq_buffer and egress_threshold. Packet engine only;
	// not with fabric.pfc or credit flow control (resolve_switch.go).
	SwitchModel *fabric.SwitchConfig `yaml:"switch_model,omitempty"`
	// Reconvergence is how long after a link fails or comes back the switches' ECMP tables are
	// recomputed from the links that are up (the routing protocol's convergence: hundreds of ms to
	// seconds [docs/protocols.md, "RoCEv2: link failures and timeouts"]). Until then ECMP keeps
	// hashing flows onto a dead link and they are blackholed. Default 1s; source-routed traffic (MRC)
	// is not affected.
	Reconvergence sim.Time `yaml:"reconvergence"`
	// AdaptiveRouting is switch adaptive routing with SHIELD-style fast link-fault recovery
	// (fabric.AdaptiveConfig: enabled, threshold, notify_delay, sm_delay; issue 19). Default off: static
	// ECMP. Its sm_delay is the subnet manager's recomputation delay, the same setting as
	// reconvergence (give one or the other, or both equal).
	AdaptiveRouting *fabric.AdaptiveConfig `yaml:"adaptive_routing,omitempty"`

	given QueueGiven // what the profile must keep (Resolve derives it from keys)
	keys  fabricKeys // what the YAML wrote (recordPresence, while decoding)
	// smDelayAlone: adaptive_routing.sm_delay was given, reconvergence was not, and
	// adaptive routing is off (Resolve; SMDelayWithoutAR).
	smDelayAlone bool
}

// SMDelayWithoutAR reports whether the resolved scenario gave fabric.adaptive_routing.sm_delay
// (and not fabric.reconvergence) with adaptive routing off: sm_delay is then in force as
// reconvergence, the route recomputation static routing uses too, though it was written under
// a block that is off (runner's fabricWarnings says so). False before Resolve.
func (f *Fabric) SMDelayWithoutAR() bool { return f.smDelayAlone }

// QueueGiven records which queue settings a scenario set explicitly, so a profile fills in
// only the rest (transport.QueueGiven).
type QueueGiven = transport.QueueGiven

// Given returns which queue settings the scenario set explicitly (all false before Resolve).
func (f *Fabric) Given() QueueGiven { return f.given }

// queueKeys records which settings of one queue block a scenario wrote (a null counts as left
// out).
type queueKeys struct {
	block         bool // the block itself (last_hop_queue: a copy of switch_queue without it)
	limit         bool
	ecnEnabled    bool // ecn.enabled
	ecnThresholds bool // ecn.kmin, kmax or pmax
	ecnPmax       bool // ecn.pmax
	trimEnabled   bool // trim.enabled
	trimThreshold bool // trim.threshold (header_limit and header_share every profile keeps)
}

// fabricKeys records which queue settings a scenario's YAML wrote.
type fabricKeys struct {
	recorded bool // by recordPresence or, for a scenario built in Go, from its values
	sw, last queueKeys
}

// recordPresence notes which queue settings the fabric mapping gives (see presenceRecorder).
func (f *Fabric) recordPresence(given func(path ...string) bool) {
	q := func(name string) queueKeys {
		return queueKeys{
			block:         given(name),
			limit:         given(name, "limit"),
			ecnEnabled:    given(name, "ecn", "enabled"),
			ecnThresholds: given(name, "ecn", "kmin") || given(name, "ecn", "kmax") || given(name, "ecn", "pmax"),
			ecnPmax:       given(name, "ecn", "pmax"),
			trimEnabled:   given(name, "trim", "enabled"),
			trimThreshold: given(name, "trim", "threshold"),
		}
	}
	f.keys = fabricKeys{recorded: true, sw: q("switch_queue"), last: q("last_hop_queue")}
}

// valueKeys judges which settings of q were given by their values, for a scenario built in Go
// rather than decoded: a non-zero limit, ECN or trim block counts as given, enabled included.
func valueKeys(q *fabric.QueueConfig) queueKeys {
	if q == nil {
		return queueKeys{}
	}
	ecn := q.ECN != (fabric.ECNConfig{})
	trim := q.Trim.Enabled || q.Trim.Threshold != 0
	return queueKeys{block: true, limit: q.Limit != 0, ecnEnabled: ecn, ecnThresholds: ecn, ecnPmax: ecn, trimEnabled: trim, trimThreshold: trim}
}

// DefaultReconvergence is the default routing reconvergence delay.
const DefaultReconvergence = sim.Second

// Traffic patterns.
const (
	PatternPermutation = "permutation" // every host sends to one other, every host receives one flow (a random derangement)
	PatternIncast      = "incast"      // Senders hosts all send to Receiver
	PatternFlows       = "flows"       // an explicit list
)

// Path modes for raw traffic.
const (
	PathECMP   = "ecmp"   // one hashed path per flow (distinct UDP source port per flow)
	PathSpread = "spread" // one source route per flow, chosen so no two flows share a link (Clos edge colouring)
	PathSpray  = "spray"  // a different source route per packet, rotating over all paths in the plane
)

// Traffic is one group of flows. Under transport raw, each flow is paced on every plane of its
// source NIC (one sub-flow per plane), each sub-flow at Load x the NIC port rate (or Rate /
// planes). Under a transport, each flow is one connection (QP) carrying one transfer of Bytes,
// posted at Start; the transport picks paths and rates.
type Traffic struct {
	// Pattern: "permutation", "incast" or "flows".
	Pattern string `yaml:"pattern"`
	// Load is the offered load per sub-flow as a fraction of the NIC port rate, in (0, 1];
	// default 1 unless Rate is set. Incast senders each offer Load.
	Load float64 `yaml:"load"`
	// Rate is the offered rate of each flow across all planes (bits/s); overrides Load.
	Rate sim.Rate `yaml:"rate,omitempty"`
	// Path: "ecmp" (default), "spread" or "spray".
	Path string `yaml:"path"`
	// PacketSize is the wire size of each packet (default 4,160 B: 4 KiB payload + 64 B of
	// headers).
	PacketSize sim.Size `yaml:"packet_size"`
	// Start and Stop bound when packets leave; Stop defaults to run.duration.
	Start sim.Time `yaml:"start"`
	Stop  sim.Time `yaml:"stop"`
	// ECN marks packets ECN-capable (ECT) so switch queues with ECN enabled mark them (raw
	// traffic only: a transport's packets are always ECN-capable).
	ECN bool `yaml:"ecn,omitempty"`
	// Trimmable lets switch queues with trimming enabled trim these packets (raw traffic
	// only: MRC's data packets are always trimmable, RoCE's never).
	Trimmable bool `yaml:"trimmable,omitempty"`
	// Senders and Receiver define an incast: host indices. Senders takes hosts and inclusive
	// ranges, as a list ([1, 2, 8-15]) or one text ("1-255"; HostList).
	Senders  HostList `yaml:"senders,omitempty"`
	Receiver *int     `yaml:"receiver,omitempty"`
	// Flows is the explicit list for pattern "flows". A generated pattern (RegisterPattern)
	// leaves it empty and keeps its expansion apart (FlowList).
	Flows []FlowSpec `yaml:"flows,omitempty"`
	// Bytes is the size of the one RDMA Write transfer each flow carries (transports only;
	// raw flows are paced by load or rate instead).
	Bytes sim.Size `yaml:"bytes,omitempty"`

	// File and Format name a traffic file written for another simulator, read by pattern
	// "file" (scenario/traffic_file.go, docs/importers.md): format "htsim" (a connection
	// matrix, .cm) or "ns3" (an HPCC flow.txt). A relative File is read from the scenario's
	// folder (Scenario.Dir).
	File     string       `yaml:"file,omitempty"`
	Format   string       `yaml:"format,omitempty"`
	triggers *TriggerPlan // a file's triggers, made with its flows (Triggers)
	// Generated arrivals (scenario/traffic_poisson.go, docs/traffic.md).
	// Arrivals holds the settings of patterns poisson and onoff: the load or flow rate, the
	// flow sizes, the hosts and the bound (duration or count) of the flows they make.
	Arrivals *Arrivals `yaml:"arrivals,omitempty"`
	// Process is how raw flows space their packets: "paced" (a constant bit rate; the
	// default) or "poisson" (exponential gaps at the same mean rate). Raw traffic only.
	Process string `yaml:"process,omitempty"`

	given     trafficKeys // what the YAML wrote (recordPresence)
	generated []FlowSpec  // a generated pattern's flows, made by Resolve (FlowList)
}

// FlowList returns the group's explicit flows: Flows for pattern "flows", the expansion of a
// generated pattern (RegisterPattern) once resolved, nil for permutation and incast.
func (t *Traffic) FlowList() []FlowSpec {
	if t.Pattern == PatternFlows {
		return t.Flows
	}
	return t.generated
}

// explicit reports whether the group's flows are a list (FlowList): pattern flows or a
// generated pattern.
func (t *Traffic) explicit() bool {
	return t.Pattern == PatternFlows || patternGenerator(t.Pattern) != nil
}

// trafficKeys records which of a traffic group's fields whose zero value is also a value the
// YAML wrote: ecn: false and trimmable: false (raw only), bytes: 0 (not a size).
type trafficKeys struct {
	ecn, trimmable, bytes bool
}

// recordPresence notes which fields the traffic group's mapping gives (see presenceRecorder).
func (t *Traffic) recordPresence(given func(path ...string) bool) {
	t.given = trafficKeys{ecn: given("ecn"), trimmable: given("trimmable"), bytes: given("bytes")}
}

// FlowSpec is one explicit flow: host indices and an optional per-flow rate (all planes), which
// overrides the group's load or rate for this flow.
type FlowSpec struct {
	Src  *int     `yaml:"src"` // required
	Dst  *int     `yaml:"dst"` // required
	Rate sim.Rate `yaml:"rate,omitempty"`
	// Bytes overrides the group's transfer size for this flow (transports only).
	Bytes sim.Size `yaml:"bytes,omitempty"`
	// Start is when this flow starts (absolute simulated time), overriding the group's
	// start; it must not be before the group's start. Under a transport it is when the
	// transfer is posted; under raw it must also be before the group's stop.
	Start sim.Time `yaml:"start,omitempty"`

	bytesGiven bool // the YAML wrote bytes (bytes: 0 is an error, not "the group's")
	unbounded  bool // an htsim size-0 connection (Unbounded)
}

// Unbounded reports whether the flow is an unbounded one (an htsim connection of size 0):
// a transfer sized beyond what its NIC can send before run.duration (Bytes is twice the
// host rate times the time left), so it sends until the run stops it. Its not finishing is
// expected: it does not fail the run (Summary.UnboundedFlows counts it).
func (f FlowSpec) Unbounded() bool { return f.unbounded }

// recordPresence notes whether the flow's mapping gives bytes (see presenceRecorder).
func (f *FlowSpec) recordPresence(given func(path ...string) bool) { f.bytesGiven = given("bytes") }

// Run configures execution.
type Run struct {
	// Seed drives every random stream (default 1). The same scenario and seed give
	// byte-identical summary.json.
	Seed uint64 `yaml:"seed"`
	// Duration is the simulated time traffic is offered (default 1ms; for MRC or RoCE
	// transfers, which end the run when they complete, at least 4 (RoCE: 16) x the busiest NIC's bytes at
	// line rate plus 100us, up to 1h); utilisation is measured over it.
	Duration sim.Time `yaml:"duration"`
	// Drain is how long the run may continue after Duration for packets in flight to land
	// (default 10ms, extended by doubling up to MaxDrain while packets keep landing, so a very
	// slow degraded link still drains; the run ends as soon as the fabric is empty). A drain
	// given explicitly is a hard bound.
	Drain sim.Time `yaml:"drain"`
	// SampleInterval is the period of queue-depth sampling for percentiles (default 1us).
	SampleInterval sim.Time `yaml:"sample_interval"`
	// Out is the results folder (default results/<name>).
	Out string `yaml:"out"`
	// MaxPackets bounds the packets the traffic may offer (default 20 million: a packet costs
	// about 7 to 12 events, and lockstep dispatches 1 to 4 million events per second on one
	// core, so about one to four minutes): a scenario estimated beyond it is rejected before it
	// starts instead of running for hours. Raise it deliberately for long runs.
	MaxPackets int64 `yaml:"max_packets"`
	// FaultBaseline says what a run with faults measures their cost against: "twin" (default)
	// runs the same scenario and seed without faults first, so each failure's lost goodput and
	// the job's slowdown are exact (the run takes about twice as long); "none" compares with
	// the goodput just before each failure.
	FaultBaseline string `yaml:"fault_baseline"`
	// Engine is "packet" (default: every packet through the fabric) or "flow" (the flow-level
	// engine, package flow: max-min fair rates over the same topology; the default for
	// workload.training, whose steps move terabytes).
	Engine string `yaml:"engine"`
	// Trace writes trace.json into the results folder: a Chrome/Perfetto trace with, per
	// host, its part of each collective and its traffic transfers, and the failures (open it
	// at ui.perfetto.dev). Default false.
	Trace bool `yaml:"trace"`
	// AllowQPErrors accepts QP errors (and the transfers they strand) as an expected outcome,
	// for failure studies: the run still reports them in the headline and summary.json but
	// does not count as failed. Default false: any QP error fails the run (exit code 1).
	AllowQPErrors bool `yaml:"allow_qp_errors,omitempty"`
	// AllowNotDrained accepts a fabric that still holds packets after run.drain (a PFC
	// deadlock or credit loop under study): the run reports them (summary.json not_drained,
	// the headline) but does not count as failed. Default false: a run that does not drain
	// fails (exit code 1), with every output written.
	AllowNotDrained bool `yaml:"allow_not_drained,omitempty"`
	// MaxMemory bounds the run's estimated peak memory (Scenario.Estimate; left out:
	// DefaultMaxMemory, 64 GiB): a scenario estimated beyond it is rejected before it starts,
	// naming the figures, instead of being killed for memory hours in. Raise it on a machine
	// with more.
	MaxMemory sim.Size `yaml:"max_memory,omitempty"`
}

// Fluid reports whether the scenario runs without the packet fabric: a workload at flow
// level (run.engine flow, not under transport ideal), or a training job on the closed forms
// of transport ideal. Such runs build no packet fabric, so the packet-level limits do not
// apply.
func (sc *Scenario) Fluid() bool {
	return sc.Run.Engine == EngineFlow && sc.Transport.Kind != TransportIdeal ||
		sc.Workload.Training != nil && sc.Transport.Kind == TransportIdeal
}

// Engines (run.engine).
const (
	EnginePacket = "packet"
	EngineFlow   = "flow"
)

// Fault baselines.
const (
	FaultBaselineTwin = "twin"
	FaultBaselineNone = "none"
)

// Lockstep defaults for zero fields.
const (
	DefaultName           = "scenario"
	DefaultSeed           = 1
	DefaultDuration       = sim.Millisecond
	DefaultDrain          = 10 * sim.Millisecond
	DefaultSampleInterval = sim.Microsecond
	DefaultPacketSize     = 4096 + 64
	DefaultNICQueueLimit  = 16 << 20
	DefaultMaxPackets     = 20_000_000
	// MaxDrain bounds run.drain: any fabric empties in far less unless it is stuck.
	MaxDrain = 10 * sim.Second
	// MaxLinks bounds the links of a packet-level run (all planes): each port holds its queues'
	// state, about 12 KiB of memory per link in all. Larger fabrics are sized by `lockstep topo`
	// and belong to the flow-level engine.
	MaxLinks = 262_144
	// MaxQueueSamples bounds queue-depth samples: (duration / sample_interval) x switch ports.
	MaxQueueSamples = 250_000_000
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML returns the built-in default scenario's text: MRC on a 128-host 8-plane 2-tier
// Clos, a permutation of 16 MiB transfers, one NIC-T0 link failing halfway.
func DefaultYAML() []byte { return append([]byte(nil), defaultYAML...) }

// Default returns the built-in default scenario, resolved.
func Default() (*Scenario, error) { return Parse(defaultYAML) }

// Load reads and parses a scenario file. Errors name the file, and for content the field path.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	sc, err := ParseIn(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sc, nil
}

// LoadTopology reads a scenario file and returns its topology section only, validated (the
// kind that is set), without the run-time checks (packet budget, traffic, link limits) a run
// needs: for sizing any fabric. A Clos comes back resolved (defaults and hosts filled in).
func LoadTopology(path string) (topo.Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	var sc Scenario
	if err := Decode(data, &sc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	spec, key, err := sc.Topology.Spec()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, kindError(key, err))
	}
	if c, ok := spec.(topo.Clos); ok {
		l, err := c.Layout()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, closError(err))
		}
		return l.Config(), nil
	}
	return spec, nil
}

// Parse decodes YAML, fills defaults and validates. Errors are one line naming the field path,
// the bad value and what is allowed.
func Parse(data []byte) (*Scenario, error) { return ParseIn(data, "") }

// ParseIn is Parse for a scenario read from folder dir: the files it names (traffic in other
// tools' formats, traces) are read relative to dir ("" = the working directory).
func ParseIn(data []byte, dir string) (*Scenario, error) {
	if HasVariants(data) {
		return nil, Errorf("variants", "this file describes several scenarios; run or compare it as a file (lockstep run FILE, lockstep compare FILE), which expand the variants")
	}
	sc := Scenario{dir: dir}
	if err := Decode(data, &sc); err != nil {
		return nil, err
	}
	if err := sc.Resolve(); err != nil {
		return nil, err
	}
	return &sc, nil
}

// PFC is fabric.pfc: fabric.PFCConfig's fields, with enabled defaulting to true under RoCE
// (so a block that only tunes thresholds keeps PFC on) and false otherwise. xoff or xon (static
// thresholds) with alpha (dynamic) is an error, and xoff or reserved below one data packet is
// rejected; a resolved scenario with alpha leaves xoff and xon 0 (unused).
type PFC struct {
	Enabled  *bool    `yaml:"enabled"`
	Classes  []int    `yaml:"classes"`
	XOFF     sim.Size `yaml:"xoff"`
	XON      sim.Size `yaml:"xon"`
	Headroom sim.Size `yaml:"headroom"`
	Watchdog sim.Time `yaml:"watchdog"`
	// Quanta, Alpha, SharedBuffer, Reserved: PAUSE frame quanta and dynamic thresholds
	// (fabric.PFCConfig).
	Quanta       int      `yaml:"quanta"`
	Alpha        float64  `yaml:"alpha"`
	SharedBuffer sim.Size `yaml:"shared_buffer"`
	Reserved     sim.Size `yaml:"reserved"`
}

// Config returns the fabric configuration (Enabled false when p is nil). Config and set are
// the one place PFC's fields are mapped onto fabric.PFCConfig's (TestPFCMirrorsFabric checks
// that every field is): PFC keeps its own type for enabled's "left out" (nil) and its YAML
// key order.
func (p *PFC) Config() fabric.PFCConfig {
	if p == nil {
		return fabric.PFCConfig{}
	}
	return fabric.PFCConfig{Enabled: p.Enabled != nil && *p.Enabled, Classes: p.Classes, XOFF: p.XOFF, XON: p.XON, Headroom: p.Headroom, Watchdog: p.Watchdog,
		Quanta: p.Quanta, Alpha: p.Alpha, SharedBuffer: p.SharedBuffer, Reserved: p.Reserved}
}

// set writes c into p, the inverse of Config (enabled becomes given, true or false; an
// enabled already saying so is kept).
func (p *PFC) set(c fabric.PFCConfig) {
	on := p.Enabled
	if on == nil || *on != c.Enabled {
		on = &c.Enabled
	}
	*p = PFC{Enabled: on, Classes: c.Classes, XOFF: c.XOFF, XON: c.XON, Headroom: c.Headroom, Watchdog: c.Watchdog,
		Quanta: c.Quanta, Alpha: c.Alpha, SharedBuffer: c.SharedBuffer, Reserved: c.Reserved}
}

// payloadBytes is the payload per data packet of a reliable transport, 0 for raw and ideal
// (and for a block not yet resolved or that does not tell: transport.DataPacketSizer).
func (tr Transport) payloadBytes() float64 {
	if z, ok := tr.Block().(transport.DataPacketSizer); ok {
		pay, _ := z.DataPacketBytes()
		return float64(pay)
	}
	return 0
}

// MaxPacketBytes is the largest data packet on the wire, bytes: the transport's largest data
// packet (its block's transport.DataPacketSizer), or the largest raw traffic packet_size; 0
// when unknown (a resolved transport is needed).
func (sc *Scenario) MaxPacketBytes() int64 {
	if z, ok := sc.Transport.Block().(transport.DataPacketSizer); ok {
		_, wire := z.DataPacketBytes()
		return wire
	}
	var pkt int64
	for _, t := range sc.Traffic {
		pkt = max(pkt, int64(t.PacketSize))
	}
	return pkt
}
