package scenario

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport/mrc"
	"github.com/lockstepsim/lockstep/transport/roce"
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
}

// Transport kinds.
const (
	TransportRaw = "raw" // paced packets, no reliability: traffic gives load or rate
	TransportMRC = "mrc" // MRC [MRC §2]: traffic gives bytes per transfer
	// TransportRoCE is RoCEv2 [docs/protocols.md, "RoCEv2: QP scaling and ECMP", "RoCEv2:
	// go-back-N", "RoCEv2: DCQCN"]: RC QPs hashed by ECMP, go-back-N, DCQCN; traffic gives bytes
	// per transfer.
	TransportRoCE = "roce"
	// TransportIdeal is no packet fabric at all: workload messages cross an ideal network
	// (per-host NIC serialisation and a fixed latency; workloads only).
	TransportIdeal = "ideal"
)

// Transport selects the transport and holds its parameters. Each kind's parameters sit in a
// block of its own name (transport: {kind: mrc, mrc: {ev: {active: 128}}}), so a block for a
// kind not selected is an error rather than silently ignored.
type Transport struct {
	// Kind: "raw" (default), "mrc", "roce" or "ideal" (workloads only).
	Kind string `yaml:"kind"`
	// MRC parameters (kind mrc); defaults filled on resolve.
	MRC *mrc.Config `yaml:"mrc,omitempty"`
	// RoCE parameters (kind roce); defaults filled on resolve.
	RoCE *roce.Config `yaml:"roce,omitempty"`
	// Ideal parameters (kind ideal).
	Ideal *Ideal `yaml:"ideal,omitempty"`
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
	switch len(specs) {
	case 0:
		return nil, "", Errorf("topology", "missing; set one of topology.clos, fat_tree, rail, torus, mesh")
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

// Switch queue profiles.
const (
	ProfileNone = "none" // queues exactly as configured
	// ProfileMRC: ECN marking between 0.2 and 0.8 BDP of queue (probability 0 to 1) on every
	// switch hop except the last, trimming above 1 BDP (1.5 BDP at the last hop), as in the
	// UEC reference simulator's defaults for MRC/NSCC fabrics [docs/protocols.md, "NSCC"]. BDP is the
	// fabric link rate x the transport's base RTT. It sets the ecn and trim blocks of
	// switch_queue and last_hop_queue, and raises a queue limit below 2 BDP, wherever the
	// scenario leaves them out (see Fabric.Profile); classes stay as configured.
	ProfileMRC = "mrc"
	// ProfileRoCE: RED/ECN marking for DCQCN on every switch port, the last hop included
	// (runner.ProfileRoCEKmin, ProfileRoCEKmax per 100 Gb/s, Pmax 0.2) [docs/protocols.md,
	// "RoCEv2: DCQCN" and "ECN"; DCQCN], no trimming; under PFC, switch queue limits left out are
	// raised to what the switch's ingresses may hold before all pause (at least 64 MiB), and a Kmin is
	// checked against that limit; classes stay as configured.
	ProfileRoCE = "roce"
)

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
	// Reconvergence is how long after a link fails or comes back the switches' ECMP tables are
	// recomputed from the links that are up (the routing protocol's convergence: hundreds of ms to
	// seconds [docs/protocols.md, "RoCEv2: link failures and timeouts"]). Until then ECMP keeps
	// hashing flows onto a dead link and they are blackholed. Default 1s; source-routed traffic (MRC)
	// is not affected.
	Reconvergence sim.Time `yaml:"reconvergence"`

	given QueueGiven // what the profile must keep (Resolve derives it from keys)
	keys  fabricKeys // what the YAML wrote (recordPresence, while decoding)
}

// QueueGiven records which queue settings a scenario set explicitly, so a profile (mrc, roce)
// fills in only the rest: a queue limit, ECN marking or trimming the user wrote is kept,
// enabled: false included. A block that gives only enabled: true where the profile turns the
// feature on is not given: the profile fills its thresholds.
type QueueGiven struct {
	SwitchLimit, SwitchECN, SwitchTrim bool // fabric.switch_queue
	// fabric.last_hop_queue; without one, switch_queue's (copied), except ECN and trimming
	// under the mrc profile, which sets the last hop apart.
	LastLimit, LastECN, LastTrim bool
}

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

// Marking probability at kmax (ecn.pmax) of the fabric profiles, which fill it in an ecn block
// that gives thresholds but no pmax.
const (
	ProfileMRCPmax  = 1.0 // ProfileMRC: marking rises from 0 at 0.2 BDP to 1 at 0.8 BDP
	ProfileRoCEPmax = 0.2 // ProfileRoCE: DCQCN's RED profile [DCQCN §5]
	// ProfileRoCEPFCAlpha is the roce profile's dynamic PFC threshold (fabric.pfc.alpha):
	// SONiC's default for lossless priority groups, dynamic_th 0 (alpha = 2^0 = 1).
	ProfileRoCEPFCAlpha = 1.0
)

// profileOn says whether profile turns ECN marking and trimming on at a queue (last: the last
// hop), and the pmax it marks with; ok is false for ProfileNone, which fills nothing.
func profileOn(profile string, last bool) (ecn, trim bool, pmax float64, ok bool) {
	switch profile {
	case ProfileMRC:
		return !last, true, ProfileMRCPmax, true // MRC marks every hop but the last [MRC §2.1]
	case ProfileRoCE:
		return true, false, ProfileRoCEPmax, true
	}
	return false, false, 0, false
}

// resolveQueues finishes fabric.switch_queue and last_hop_queue once the profile is known:
// it decides which settings the profile must keep (Given), fills a left-out enabled or pmax
// of a block the scenario gave with the profile's, copies switch_queue to a missing
// last_hop_queue, applies the queue defaults and validates both.
func (f *Fabric) resolveQueues() error {
	k := f.keys
	// fill completes one queue's ECN and trim blocks from the profile and says which of its
	// settings the profile must keep.
	fill := func(path string, q *fabric.QueueConfig, qk queueKeys, last bool) (limit, ecn, trim bool, err error) {
		onECN, onTrim, pmax, ok := profileOn(f.Profile, last)
		// A block with thresholds but no enabled: the profile's choice when it turns the
		// feature on here; otherwise the thresholds would be silently unused.
		what := func() string {
			switch {
			case !ok:
				return "profile none turns nothing on"
			case last:
				return "the " + f.Profile + " profile turns it off at the last hop"
			}
			return "the " + f.Profile + " profile turns it off"
		}
		if qk.ecnThresholds && !qk.ecnEnabled {
			if !ok || !onECN {
				return false, false, false, Errorf(path+".ecn.enabled", "missing, but kmin, kmax or pmax is given and %s; set enabled: true to mark at them (or remove them)", what())
			}
			q.ECN.Enabled = true
		}
		if qk.trimThreshold && !qk.trimEnabled {
			if !ok || !onTrim {
				return false, false, false, Errorf(path+".trim.enabled", "missing, but threshold is given and %s; set enabled: true to trim above it (or remove it)", what())
			}
			q.Trim.Enabled = true
		}
		if ok && qk.ecnThresholds && !qk.ecnPmax && q.ECN.Enabled {
			q.ECN.Pmax = pmax
		}
		// enabled: true alone where the profile marks (trims) anyway: the profile's block.
		ecn = qk.ecnThresholds || qk.ecnEnabled && !(ok && onECN && q.ECN.Enabled)
		trim = qk.trimThreshold || qk.trimEnabled && !(ok && onTrim && q.Trim.Enabled)
		if !ecn {
			q.ECN = fabric.ECNConfig{} // the profile's block replaces it (no thresholds to check yet)
		}
		return qk.limit, ecn, trim, nil
	}
	g := &f.given
	var err error
	if g.SwitchLimit, g.SwitchECN, g.SwitchTrim, err = fill("fabric.switch_queue", &f.SwitchQueue, k.sw, false); err != nil {
		return err
	}
	if err := f.SwitchQueue.Validate("fabric.switch_queue"); err != nil {
		return err
	}
	if f.LastHopQueue == nil || !k.last.block {
		q := f.SwitchQueue
		f.LastHopQueue = &q
		g.LastLimit, g.LastECN, g.LastTrim = g.SwitchLimit, g.SwitchECN, g.SwitchTrim
		if f.Profile == ProfileMRC {
			// The mrc profile's last hop differs from the fabric hops (no marking, trimming
			// at 1.5 BDP): switch_queue's ECN and trimming are not the last hop's.
			g.LastECN, g.LastTrim = false, false
		}
	} else if g.LastLimit, g.LastECN, g.LastTrim, err = fill("fabric.last_hop_queue", f.LastHopQueue, k.last, true); err != nil {
		return err
	}
	lq := f.LastHopQueue.WithDefaults()
	f.LastHopQueue = &lq
	return lq.Validate("fabric.last_hop_queue")
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
	// Senders and Receiver define an incast: host indices.
	Senders  []int `yaml:"senders,omitempty"`
	Receiver *int  `yaml:"receiver,omitempty"`
	// Flows is the explicit list for pattern "flows".
	Flows []FlowSpec `yaml:"flows,omitempty"`
	// Bytes is the size of the one RDMA Write transfer each flow carries (transports only;
	// raw flows are paced by load or rate instead).
	Bytes sim.Size `yaml:"bytes,omitempty"`

	given trafficKeys // what the YAML wrote (recordPresence)
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

	bytesGiven bool // the YAML wrote bytes (bytes: 0 is an error, not "the group's")
}

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
	sc, err := Parse(data)
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
func Parse(data []byte) (*Scenario, error) {
	if HasVariants(data) {
		return nil, Errorf("variants", "this file describes several scenarios; run or compare it as a file (lockstep run FILE, lockstep compare FILE), which expand the variants")
	}
	var sc Scenario
	if err := Decode(data, &sc); err != nil {
		return nil, err
	}
	if err := sc.Resolve(); err != nil {
		return nil, err
	}
	return &sc, nil
}

// Resolve fills defaults in place and validates the result.
func (sc *Scenario) Resolve() error {
	if sc.Name == "" {
		sc.Name = DefaultName
	}
	for _, r := range sc.Name {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return Errorf("name", "%q has character %q; allowed letters, digits, '-', '_' and '.'", sc.Name, r)
		}
	}
	if strings.HasPrefix(sc.Name, ".") {
		return Errorf("name", "%q must not start with '.'", sc.Name)
	}
	l, err := sc.Topology.Describe()
	if err != nil {
		return err
	}
	if cl, ok := l.(*topo.Layout); ok && sc.Topology.Clos != nil {
		c := cl.Config()
		sc.Topology.Clos = &c
	}
	// Show every default in the resolved scenario.
	if t := sc.Topology.Rail; t != nil {
		*t = t.WithDefaults()
	}
	if t := sc.Topology.Torus; t != nil {
		*t = t.WithDefaults()
	}
	if t := sc.Topology.Mesh; t != nil {
		*t = t.WithDefaults()
	}
	c := l.Params()

	if !sc.Fabric.keys.recorded {
		// Built in Go, not decoded: judge what was given by the values, before defaults.
		sc.Fabric.keys = fabricKeys{recorded: true, sw: valueKeys(&sc.Fabric.SwitchQueue), last: valueKeys(sc.Fabric.LastHopQueue)}
	}
	sc.Fabric.SwitchQueue = sc.Fabric.SwitchQueue.WithDefaults()
	switch sc.Fabric.ECMPSeed {
	case "":
		sc.Fabric.ECMPSeed = "per_switch"
	case "per_switch", "shared":
	default:
		return Errorf("fabric.ecmp_seed", "%q is not a seeding; allowed per_switch, shared", sc.Fabric.ECMPSeed)
	}
	if sc.Fabric.Reconvergence == 0 {
		sc.Fabric.Reconvergence = DefaultReconvergence
	}
	if sc.Fabric.Reconvergence < 0 || sc.Fabric.Reconvergence > sim.Hour {
		return Errorf("fabric.reconvergence", "%v is out of range; allowed 0 (default 1s) to 1h", sc.Fabric.Reconvergence)
	}
	if sc.Fabric.NICQueue.Limit == 0 {
		sc.Fabric.NICQueue.Limit = DefaultNICQueueLimit
	}
	sc.Fabric.NICQueue = sc.Fabric.NICQueue.WithDefaults()
	if err := sc.Fabric.NICQueue.Validate("fabric.nic_queue"); err != nil {
		return err
	}

	r := &sc.Run
	wl := len(sc.Workload.Collectives) > 0 || sc.Workload.Training != nil
	switch r.Engine {
	case "":
		r.Engine = EnginePacket
		if sc.Workload.Training != nil {
			r.Engine = EngineFlow // a training step at packet level is hours of wall time
		}
	case EnginePacket, EngineFlow:
	default:
		return Errorf("run.engine", "%q is not an engine; allowed packet, flow", r.Engine)
	}
	if r.Engine == EngineFlow && sc.Workload.Training == nil {
		if len(sc.Workload.Collectives) == 0 {
			return Errorf("run.engine", "flow runs workloads only (workload.collectives or workload.training); traffic groups run at packet level (run.engine: packet)")
		}
		if len(sc.Faults) > 0 {
			return Errorf("faults", "not supported with run.engine flow yet; run the collectives at packet level (run.engine: packet) to fail links")
		}
	}
	if r.Seed == 0 {
		r.Seed = DefaultSeed
	}
	durationGiven := r.Duration != 0
	if r.Duration == 0 {
		r.Duration = DefaultDuration
		if wl {
			r.Duration = DefaultWorkloadDuration
		}
	}
	if r.Drain == 0 {
		r.Drain = DefaultDrain
	}
	sampleGiven := r.SampleInterval != 0
	if r.SampleInterval == 0 {
		r.SampleInterval = DefaultSampleInterval
		if wl && r.Duration/20000 > r.SampleInterval {
			r.SampleInterval = r.Duration / 20000 // at most 20,000 samples over a workload's bound
		}
	}
	if r.Duration > sim.Hour {
		return Errorf("run.duration", "%v is too long for a packet-level run; allowed up to 1h", r.Duration)
	}
	if r.SampleInterval < 10*sim.Nanosecond {
		return Errorf("run.sample_interval", "%v is too short; allowed >= 10ns", r.SampleInterval)
	}
	if r.SampleInterval > r.Duration {
		return Errorf("run.sample_interval", "%v is longer than run.duration (%v); no sample would be taken", r.SampleInterval, r.Duration)
	}
	if r.Drain < 0 || r.Drain > MaxDrain {
		return Errorf("run.drain", "%v is out of range; allowed up to %v", r.Drain, MaxDrain)
	}
	if r.MaxPackets == 0 {
		r.MaxPackets = DefaultMaxPackets
	}
	switch r.FaultBaseline {
	case "":
		r.FaultBaseline = FaultBaselineTwin
	case FaultBaselineTwin, FaultBaselineNone:
	default:
		return Errorf("run.fault_baseline", "%q is not a baseline; allowed twin, none", r.FaultBaseline)
	}
	if r.MaxPackets < 0 {
		return Errorf("run.max_packets", "%d must be positive", r.MaxPackets)
	}
	flowLevel := sc.Fluid()
	if links := l.NumLinks(); links > MaxLinks && !flowLevel {
		return Errorf("topology", "%d links in all planes is beyond the packet-level limit of %d; use fewer hosts, planes or tiers (lockstep topo sizes any fabric)", links, MaxLinks)
	}
	switchPorts := int64(2*l.NumLinks() - l.NumHosts()*c.Planes)
	fitSampling := func() error {
		if switchPorts > 0 && !sampleGiven {
			// Left out, the sampling period grows with a long run to keep within the cap.
			if min := sim.Time(float64(r.Duration) * float64(switchPorts) / MaxQueueSamples); r.SampleInterval < min {
				r.SampleInterval = min + 1
			}
		}
		if samples := int64(r.Duration/r.SampleInterval) * switchPorts; samples > MaxQueueSamples && sc.Transport.Kind != TransportIdeal && !flowLevel {
			return Errorf("run.sample_interval", "%v over %v on %d switch ports is %d queue samples; allowed up to %d: use a longer interval", r.SampleInterval, r.Duration, switchPorts, samples, int64(MaxQueueSamples))
		}
		return nil
	}
	if err := fitSampling(); err != nil {
		return err
	}
	if r.Out == "" {
		r.Out = "results/" + sc.Name
	}

	switch sc.Transport.Kind {
	case "":
		sc.Transport.Kind = TransportRaw
		if wl {
			sc.Transport.Kind = TransportMRC // a workload needs a reliable transport
		}
	case TransportRaw, TransportMRC, TransportRoCE, TransportIdeal:
	default:
		return Errorf("transport.kind", "%q is not a transport; allowed raw, mrc, roce, ideal", sc.Transport.Kind)
	}
	if sc.Transport.Kind == TransportRoCE {
		rc := roce.Config{}
		if sc.Transport.RoCE != nil {
			rc = *sc.Transport.RoCE
		}
		rc = rc.WithDefaults()
		if err := rc.Validate("transport.roce"); err != nil {
			return err // already "transport.roce.<field>: ..."
		}
		if rc.DCQCN.RateAI > c.HostLink {
			div := roce.ProductionRateAIDivisor
			if rc.DCQCN.Profile == roce.DCQCNProfilePaper {
				div = roce.DCQCNRateAIDivisor
			}
			return Errorf("transport.roce.dcqcn.rate_ai", "%v is above the NIC port rate %v; an additive step is a small fraction of it (default under dcqcn.profile %s: line/%d, %v here)", rc.DCQCN.RateAI, c.HostLink, rc.DCQCN.Profile, div, c.HostLink/sim.Rate(div))
		}
		if rc.DCQCN.RateHAI > c.HostLink {
			return Errorf("transport.roce.dcqcn.rate_hai", "%v is above the NIC port rate %v; the hyper-increase step is a small fraction of it (default 10 x rate_ai)", rc.DCQCN.RateHAI, c.HostLink)
		}
		if rc.DCQCN.MinRate > c.HostLink {
			return Errorf("transport.roce.dcqcn.min_rate", "%v is above the NIC port rate %v", rc.DCQCN.MinRate, c.HostLink)
		}
		sc.Transport.RoCE = &rc
	} else if sc.Transport.RoCE != nil {
		return Errorf("transport.roce", "set, but transport.kind is %q; use kind: roce or remove the block", sc.Transport.Kind)
	}
	if err := sc.resolvePFC(); err != nil {
		return err
	}
	if sc.Transport.Kind == TransportIdeal {
		if !wl {
			return Errorf("transport.kind", "ideal carries workload messages only; give workload.collectives or use raw or mrc for traffic")
		}
		if len(sc.Faults) > 0 {
			return Errorf("faults", "given with transport ideal, which has no links to fail; use transport mrc or roce")
		}
		id := Ideal{}
		if sc.Transport.Ideal != nil {
			id = *sc.Transport.Ideal
		}
		if id.Latency == 0 {
			id.Latency = DefaultIdealLatency
		}
		if id.Latency < 0 || id.Latency > sim.Second {
			return Errorf("transport.ideal.latency", "%v is out of range; allowed 0..1s", id.Latency)
		}
		sc.Transport.Ideal = &id
	} else if sc.Transport.Ideal != nil {
		return Errorf("transport.ideal", "set, but transport.kind is %q; use kind: ideal or remove the block", sc.Transport.Kind)
	}
	switch sc.Fabric.Profile {
	case "":
		sc.Fabric.Profile = ProfileNone
		switch sc.Transport.Kind {
		case TransportMRC:
			sc.Fabric.Profile = ProfileMRC
		case TransportRoCE:
			sc.Fabric.Profile = ProfileRoCE
		}
	case ProfileNone, ProfileMRC, ProfileRoCE:
	default:
		return Errorf("fabric.profile", "%q is not a profile; allowed mrc, roce, none", sc.Fabric.Profile)
	}
	if err := sc.Fabric.resolveQueues(); err != nil {
		return err
	}
	if sc.Transport.Kind == TransportMRC {
		m := mrc.Config{}
		if sc.Transport.MRC != nil {
			m = *sc.Transport.MRC
		}
		if err := resolveEVSplit(&m.EV, c.Planes); err != nil {
			return err
		}
		if m.EV.ProbeInterval == 0 {
			// Left out: the default, or twice the base RTT on a fabric whose round trip is
			// longer (an unanswered probe counts as lost when the next is due).
			d := m.WithDefaults()
			rtt := c.RoundTrip(l.Sizing().MaxSwitchHops, d.WireBytes(d.PayloadBytes), d.AckBytes)
			m.EV.ProbeInterval = max(mrc.DefaultEVProbeInterval, 2*rtt)
		}
		m = m.WithDefaults()
		if err := m.Validate("transport.mrc"); err != nil {
			return err // already "transport.mrc.<field>: ..."
		}
		sc.Transport.MRC = &m
	} else if sc.Transport.MRC != nil {
		return Errorf("transport.mrc", "set, but transport.kind is %q; use kind: mrc or remove the block", sc.Transport.Kind)
	}
	if err := sc.resolveFaults(l); err != nil {
		return err
	}
	hosts := l.NumHosts()
	var packets float64
	if t := sc.Topology.Torus; t != nil && t.OCS && sc.Workload.Training == nil {
		for i, f := range sc.Faults {
			if f.Switch != "" && f.Action == FaultDown {
				return Errorf(fmt.Sprintf("faults[%d]", i), "a failed chip on a torus with OCS is remapped onto a spare cube (the job pauses, then continues) only under workload.training; traffic and collectives would just lose the router: set topology.torus.ocs: false to fail it as a dead router")
			}
		}
	}
	if sc.Workload.Training != nil {
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
			return Errorf("transport.kind", "raw cannot carry a training job's collectives; allowed mrc, roce or ideal")
		}
		if err := sc.resolveTraining(hosts); err != nil {
			return err
		}
		return sc.checkQueues()
	}
	if wl {
		if len(sc.Traffic) > 0 {
			return Errorf("traffic", "given with workload.collectives; a scenario runs traffic groups or a workload, not both")
		}
		if sc.Transport.Kind == TransportRaw {
			return Errorf("transport.kind", "raw cannot carry a collective's messages; allowed mrc or roce (packet level) or ideal")
		}
		moved, err := sc.Workload.resolve(workloadEnv{seed: r.Seed, hosts: hosts, domain: c.ScaleUpGPUs, flow: r.Engine == EngineFlow && sc.Transport.Kind != TransportIdeal})
		if err != nil {
			return err
		}
		if pay := sc.Transport.payloadBytes(); pay > 0 {
			packets = moved / pay
			if packets > float64(r.MaxPackets) {
				return Errorf("workload.collectives", "moves about %.3g packets, beyond run.max_packets (%d, one to four minutes of wall time); use smaller sizes, fewer ranks or iterations, transport ideal, or raise run.max_packets", packets, r.MaxPackets)
			}
		}
		return sc.checkQueues()
	}
	if len(sc.Traffic) == 0 {
		return Errorf("traffic", "empty; give at least one traffic group (e.g. pattern: permutation) or a workload (workload.collectives)")
	}
	for i := range sc.Traffic {
		t := &sc.Traffic[i]
		dur := r.Duration
		if !durationGiven && sc.Transport.payloadBytes() > 0 {
			dur = sim.Hour // transfers: the duration left out is derived below, after their start
		}
		if err := t.resolve(fmt.Sprintf("traffic[%d]", i), sc.Transport, hosts, dur); err != nil {
			return err
		}
	}
	nic := c.HostLink * sim.Rate(c.Planes)
	if need := transferBound(sc.Traffic, sc.Transport, hosts, nic); need > 0 && !durationGiven {
		// Transfers end the run when they complete; the duration only bounds it. Left out, it
		// is long enough for the busiest NIC's bytes at a quarter of line rate, under RoCE at
		// a sixteenth: each QP is hashed onto one path, so k flows may share a link (a 5-way
		// collision in a 128-host permutation), and a transfer left unfinished fails the run.
		factor := sim.Time(4)
		if sc.Transport.Kind == TransportRoCE {
			factor = 16
		}
		if d := factor*need + 100*sim.Microsecond; d > r.Duration {
			r.Duration = min(d, sim.Hour)
			if err := fitSampling(); err != nil {
				return err
			}
		}
	}
	for i := range sc.Traffic {
		packets += sc.Traffic[i].estimatePackets(sc.Transport, hosts, c.Planes, c.HostLink, r.Duration)
	}
	if packets > float64(r.MaxPackets) {
		if !durationGiven && sc.Transport.payloadBytes() > 0 {
			return Errorf("traffic", "the transfers are about %.3g packets, beyond run.max_packets (%d, one to four minutes of wall time at 7-12 events per packet and 1-4 million events/s); use smaller transfers, a run.duration that stops them early, or raise run.max_packets", packets, r.MaxPackets)
		}
		return Errorf("run.duration", "%v of this traffic is about %.3g packets, beyond run.max_packets (%d, one to four minutes of wall time at 7-12 events per packet and 1-4 million events/s); shorten the run or raise run.max_packets", r.Duration, packets, r.MaxPackets)
	}
	if err := sc.checkQueues(); err != nil {
		return err
	}
	return nil
}

// resolveEVSplit checks that transport.mrc.ev's active set and backup pool split equally over
// the topology's planes [MRC §2.1: the active set is split across the planes], so every plane
// carries the same share of each QP's packets and each plane's EVs are one contiguous block
// of EV numbers (active, then backup). Left out, active is the largest multiple of planes up
// to mrc.DefaultEVActive (128; 126 on 6 planes), and backup is active/2 (mrc's default) when
// that is a multiple of planes, otherwise half of each plane's active share rounded up, on
// every plane (active 8 on 8 planes: 8 backups, not 4 on half the planes).
func resolveEVSplit(ev *mrc.EVConfig, planes int) error {
	if planes < 1 {
		return nil // Describe rejects such a topology first
	}
	eg := func(n int) string { // two multiples of planes near n, for the error's example
		lo := max(planes, n/planes*planes)
		return fmt.Sprintf("e.g. %d or %d", lo, lo+planes)
	}
	switch {
	case ev.Active == 0:
		ev.Active = max(planes, mrc.DefaultEVActive/planes*planes)
	case ev.Active > 0 && ev.Active < planes:
		return Errorf("transport.mrc.ev.active", "%d EVs cannot cover the %d planes of the topology; want at least one per plane, a multiple of %d (%s)", ev.Active, planes, planes, eg(ev.Active))
	case ev.Active > 0 && ev.Active%planes != 0:
		return Errorf("transport.mrc.ev.active", "%d does not split equally over the %d planes of the topology; use a multiple of %d (%s)", ev.Active, planes, planes, eg(ev.Active))
	}
	switch {
	case ev.Backup == 0 && ev.Active > 0:
		ev.Backup = ev.Active / 2 // mrc's default, when it splits
		if ev.Backup%planes != 0 {
			ev.Backup = planes * ((ev.Active/planes + 1) / 2)
		}
	case ev.Backup > 0 && ev.Backup%planes != 0:
		return Errorf("transport.mrc.ev.backup", "%d does not split equally over the %d planes of the topology; use a multiple of %d (%s), 0 for the default (active/2, or half of each plane's active share rounded up when that does not split) or -1 for none", ev.Backup, planes, planes, eg(ev.Backup))
	}
	return nil
}

// transferBound is the time the busiest host NIC needs for its transfers at line rate nic (the
// larger of the bytes it sends and receives, from its groups' start): a lower bound on the
// transfers' completion. 0 when the transport carries no transfers (raw, ideal).
func transferBound(groups []Traffic, tr Transport, hosts int, nic sim.Rate) sim.Time {
	if tr.payloadBytes() <= 0 || nic <= 0 {
		return 0
	}
	out := make([]float64, hosts)
	in := make([]float64, hosts)
	var start sim.Time
	add := func(src, dst *int, b sim.Size) {
		if src != nil && dst != nil && *src >= 0 && *src < hosts && *dst >= 0 && *dst < hosts {
			out[*src] += float64(b)
			in[*dst] += float64(b)
		}
	}
	for i := range groups {
		t := &groups[i]
		start = max(start, t.Start)
		switch t.Pattern {
		case PatternPermutation:
			for h := range hosts {
				out[h] += float64(t.Bytes)
				in[h] += float64(t.Bytes)
			}
		case PatternIncast:
			for _, s := range t.Senders {
				add(&s, t.Receiver, t.Bytes)
			}
		case PatternFlows:
			for _, f := range t.Flows {
				add(f.Src, f.Dst, f.Bytes)
			}
		}
	}
	var most float64
	for h := range hosts {
		most = max(most, out[h], in[h])
	}
	return start + nic.TxTime(int64(min(most, 1<<62)))
}

// estimatePackets is the number of packets the group offers: flows x rate x time / size (raw),
// or total bytes / payload per packet (transports), each transfer's bytes capped at what its
// sender's NIC can send at line rate (all planes) before duration ends.
func (t *Traffic) estimatePackets(tr Transport, hosts, planes int, hostLink sim.Rate, duration sim.Time) float64 {
	if pay := tr.payloadBytes(); pay > 0 {
		sendable := func(b sim.Size) float64 {
			line := float64(hostLink) * float64(planes) / 8 * max(0, (duration-t.Start).Seconds())
			return min(float64(b), line)
		}
		var bytes float64
		switch t.Pattern {
		case PatternPermutation:
			bytes = float64(hosts) * sendable(t.Bytes)
		case PatternIncast:
			bytes = float64(len(t.Senders)) * sendable(t.Bytes)
		case PatternFlows:
			for _, f := range t.Flows {
				bytes += sendable(f.Bytes)
			}
		}
		return bytes / pay
	}
	secs := (t.Stop - t.Start).Seconds()
	perFlow := t.Load * float64(hostLink) * float64(planes) // bits/s across planes
	if t.Rate > 0 {
		perFlow = float64(t.Rate)
	}
	var bps float64
	switch t.Pattern {
	case PatternPermutation:
		bps = float64(hosts) * perFlow
	case PatternIncast:
		bps = float64(len(t.Senders)) * perFlow
	case PatternFlows:
		for _, f := range t.Flows {
			if f.Rate > 0 {
				bps += float64(f.Rate)
			} else {
				bps += perFlow
			}
		}
	}
	return bps * secs / (8 * float64(t.PacketSize))
}

func (t *Traffic) resolve(path string, tr Transport, hosts int, duration sim.Time) error {
	switch t.Pattern {
	case PatternPermutation, PatternIncast, PatternFlows:
	case "":
		return Errorf(path+".pattern", "missing; allowed permutation, incast, flows")
	default:
		return Errorf(path+".pattern", "%q is not a pattern; allowed permutation, incast, flows", t.Pattern)
	}
	if tr.Kind != TransportRaw {
		return t.resolveTransfers(path, tr, hosts, duration)
	}
	if t.Bytes != 0 || t.given.bytes {
		return Errorf(path+".bytes", "%v is set, but transport raw paces flows by load or rate; use transport.kind: mrc for transfers", t.Bytes)
	}
	switch t.Path {
	case "":
		t.Path = PathECMP
	case PathECMP, PathSpread, PathSpray:
	default:
		return Errorf(path+".path", "%q is not a path mode; allowed ecmp, spread, spray", t.Path)
	}
	if t.Load == 0 && t.Rate == 0 {
		t.Load = 1
	}
	if t.Rate != 0 && t.Load != 0 {
		return Errorf(path, "load %v and rate %v both set; give one", t.Load, t.Rate)
	}
	if t.Rate < 0 {
		return Errorf(path+".rate", "%v must be positive", t.Rate)
	}
	if t.Rate == 0 && !(t.Load > 0 && t.Load <= 1) || math.IsNaN(t.Load) {
		return Errorf(path+".load", "%v is out of range; allowed 0 < load <= 1 (a fraction of the NIC port rate)", t.Load)
	}
	if t.PacketSize == 0 {
		t.PacketSize = DefaultPacketSize
	}
	if t.PacketSize < fabric.HeaderBytes || t.PacketSize > 65536 {
		return Errorf(path+".packet_size", "%v is out of range; allowed %dB..64KiB", t.PacketSize, fabric.HeaderBytes)
	}
	if t.Stop == 0 {
		t.Stop = duration
	}
	if t.Start >= duration {
		return Errorf(path+".start", "%v is not before run.duration (%v); traffic must start inside the run", t.Start, duration)
	}
	if t.Stop > duration {
		return Errorf(path+".stop", "%v is after run.duration (%v); traffic is offered within the run only", t.Stop, duration)
	}
	if t.Stop <= t.Start {
		return Errorf(path+".stop", "%v is not after start %v", t.Stop, t.Start)
	}
	return t.checkHosts(path, hosts)
}

// resolveTransfers checks a traffic group carried by a transport: each flow is one transfer of
// Bytes posted at Start; pacing fields belong to raw traffic and are errors here.
func (t *Traffic) resolveTransfers(path string, tr Transport, hosts int, duration sim.Time) error {
	rawOnly := func(field string, set bool) error {
		if set {
			return Errorf(path+"."+field, "applies to transport raw only; under %s each flow is a transfer of bytes", tr.Kind)
		}
		return nil
	}
	for _, c := range []struct {
		f   string
		set bool
	}{{"load", t.Load != 0}, {"rate", t.Rate != 0}, {"path", t.Path != ""}, {"packet_size", t.PacketSize != 0},
		{"stop", t.Stop != 0}} {
		if err := rawOnly(c.f, c.set); err != nil {
			return err
		}
	}
	// ecn and trimmable say how a raw flow's packets are flagged; a transport flags its own
	// (MRC data: ECN-capable and trimmable; RoCE data: ECN-capable), so even false is unused.
	what := map[string]string{
		TransportMRC:  "MRC marks every data packet ECN-capable and trimmable",
		TransportRoCE: "RoCE marks every data packet ECN-capable (DCQCN) and never trimmable",
	}[tr.Kind]
	for _, c := range []struct {
		f, switchOff string
		set          bool
		v            bool
	}{{"ecn", "fabric.switch_queue.ecn: {enabled: false}", t.ECN || t.given.ecn, t.ECN}, {"trimmable", "fabric.switch_queue.trim: {enabled: false}", t.Trimmable || t.given.trimmable, t.Trimmable}} {
		if c.set {
			if tr.Kind == TransportRoCE && c.f == "trimmable" {
				return Errorf(path+"."+c.f, "%v applies to transport raw only; %s", c.v, what)
			}
			return Errorf(path+"."+c.f, "%v applies to transport raw only; %s (to change what switches do, set %s and likewise last_hop_queue)", c.v, what, c.switchOff)
		}
	}
	if t.Start < 0 || t.Start >= duration {
		return Errorf(path+".start", "%v is not before run.duration (%v); transfers must start inside the run", t.Start, duration)
	}
	if t.Bytes < 0 {
		return Errorf(path+".bytes", "%v must be positive", t.Bytes)
	}
	if t.Bytes == 0 && t.given.bytes {
		return Errorf(path+".bytes", "%v is not a transfer size; want a positive size such as 4MiB", t.Bytes)
	}
	if t.Bytes == 0 && t.Pattern != PatternFlows {
		return Errorf(path+".bytes", "missing; give the transfer size of each flow, e.g. 16MiB")
	}
	for j := range t.Flows {
		f := &t.Flows[j]
		if f.Rate != 0 {
			return Errorf(fmt.Sprintf("%s.flows[%d].rate", path, j), "applies to transport raw only; give bytes")
		}
		if f.Bytes < 0 {
			return Errorf(fmt.Sprintf("%s.flows[%d].bytes", path, j), "%v must be positive", f.Bytes)
		}
		if f.Bytes == 0 && f.bytesGiven {
			return Errorf(fmt.Sprintf("%s.flows[%d].bytes", path, j), "%v is not a transfer size; want a positive size such as 4MiB (or leave it out for the group's bytes)", f.Bytes)
		}
		if f.Bytes == 0 {
			if t.Bytes == 0 {
				return Errorf(fmt.Sprintf("%s.flows[%d].bytes", path, j), "missing; set it here or bytes for the group")
			}
			f.Bytes = t.Bytes
		}
	}
	return t.checkHosts(path, hosts)
}

// checkHosts validates the host indices of the group's pattern.
func (t *Traffic) checkHosts(path string, hosts int) error {
	host := func(p string, h int) error {
		if h < 0 || h >= hosts {
			return Errorf(p, "host %d does not exist; allowed 0..%d", h, hosts-1)
		}
		return nil
	}
	switch t.Pattern {
	case PatternPermutation:
		if hosts < 2 {
			return Errorf(path+".pattern", "permutation needs at least 2 hosts; the topology has %d", hosts)
		}
		if len(t.Senders) > 0 || len(t.Flows) > 0 || t.Receiver != nil {
			return Errorf(path, "senders, receiver and flows are not used by pattern permutation")
		}
	case PatternIncast:
		if len(t.Senders) == 0 {
			return Errorf(path+".senders", "missing; incast needs at least one sender host")
		}
		if t.Receiver == nil {
			return Errorf(path+".receiver", "missing; incast needs the receiving host")
		}
		if err := host(path+".receiver", *t.Receiver); err != nil {
			return err
		}
		seen := map[int]bool{}
		for j, s := range t.Senders {
			p := fmt.Sprintf("%s.senders[%d]", path, j)
			if err := host(p, s); err != nil {
				return err
			}
			if s == *t.Receiver {
				return Errorf(p, "host %d is also the receiver", s)
			}
			if seen[s] {
				return Errorf(p, "host %d is listed twice", s)
			}
			seen[s] = true
		}
	case PatternFlows:
		if len(t.Flows) == 0 {
			return Errorf(path+".flows", "missing; pattern flows needs at least one {src, dst}")
		}
		for j, f := range t.Flows {
			p := fmt.Sprintf("%s.flows[%d]", path, j)
			if f.Src == nil {
				return Errorf(p+".src", "missing; give the sending host")
			}
			if f.Dst == nil {
				return Errorf(p+".dst", "missing; give the receiving host")
			}
			if err := host(p+".src", *f.Src); err != nil {
				return err
			}
			if err := host(p+".dst", *f.Dst); err != nil {
				return err
			}
			if *f.Src == *f.Dst {
				return Errorf(p, "src and dst are both host %d", *f.Src)
			}
			if f.Rate < 0 {
				return Errorf(p+".rate", "%v must be positive", f.Rate)
			}
		}
	}
	return nil
}

// closError prefixes the Clos's field errors with their scenario path.
func closError(err error) error { return kindError("clos", err) }

// kindError prefixes a topology kind's field errors with their scenario path
// (topology.<key>.<field>). Validate may join several; the first is reported, so the message
// stays one line.
func kindError(key string, err error) error {
	var fe *topo.FieldError
	if errors.As(err, &fe) {
		return Errorf("topology."+key+"."+fe.Field, "%s", fe.Msg)
	}
	return Errorf("topology."+key, "%v", err)
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

// Config returns the fabric configuration (Enabled false when p is nil).
func (p *PFC) Config() fabric.PFCConfig {
	if p == nil {
		return fabric.PFCConfig{}
	}
	return fabric.PFCConfig{Enabled: p.Enabled != nil && *p.Enabled, Classes: p.Classes, XOFF: p.XOFF, XON: p.XON, Headroom: p.Headroom, Watchdog: p.Watchdog,
		Quanta: p.Quanta, Alpha: p.Alpha, SharedBuffer: p.SharedBuffer, Reserved: p.Reserved}
}

// resolvePFC fills fabric.pfc's defaults (on under RoCE) and validates it: lossless classes
// must exist in the switch queues.
func (sc *Scenario) resolvePFC() error {
	if sc.Fabric.PFC == nil {
		if sc.Transport.Kind != TransportRoCE {
			return nil
		}
		sc.Fabric.PFC = &PFC{}
	}
	p := sc.Fabric.PFC
	if p.Enabled == nil {
		on := sc.Transport.Kind == TransportRoCE
		p.Enabled = &on
	}
	// The class that carries the transport's data: RoCE puts data in class 1 (ACKs, NAKs
	// and CNPs in class 0), raw traffic in class 0.
	data, what := 1, "RoCE data"
	if sc.Transport.Kind == TransportRaw {
		data, what = 0, "raw traffic"
	}
	if len(p.Classes) == 0 {
		p.Classes = []int{data}
	}
	// The roce profile's buffer model: a block that sets no threshold gets dynamic thresholds
	// (alpha ProfileRoCEPFCAlpha) over a shared buffer the runner sizes from the switch
	// (runner.RoCEBufferTime); xoff, xon or alpha written keeps what was written.
	// Under that profile a shared_buffer left out (0) with dynamic thresholds is the switch's.
	roceProfile := sc.Transport.Kind == TransportRoCE && (sc.Fabric.Profile == "" || sc.Fabric.Profile == ProfileRoCE)
	if p.Alpha > 0 && (p.XOFF != 0 || p.XON != 0) {
		// Dynamic thresholds pause at alpha x the free shared buffer and resume two MTUs
		// below it: a static xoff or xon would be silently unused.
		field, v := "xoff", p.XOFF
		if p.XOFF == 0 {
			field, v = "xon", p.XON
		}
		return Errorf("fabric.pfc."+field, "%v is a static threshold, but fabric.pfc.alpha %v turns on dynamic thresholds, which do not use it; give either xoff (and xon) for static thresholds or alpha (with shared_buffer, reserved) for dynamic ones", v, p.Alpha)
	}
	if roceProfile && p.XOFF == 0 && p.XON == 0 && p.Alpha == 0 {
		p.Alpha = ProfileRoCEPFCAlpha
	}
	c := p.Config().WithDefaults()
	if roceProfile && p.SharedBuffer == 0 {
		c.SharedBuffer = 0 // sized from the built switch by the runner
	}
	p.Classes, p.XOFF, p.XON, p.Quanta, p.SharedBuffer, p.Reserved = c.Classes, c.XOFF, c.XON, c.Quanta, c.SharedBuffer, c.Reserved
	if c.Alpha > 0 {
		p.XOFF, p.XON = 0, 0 // unused under dynamic thresholds (and an error if written)
	}
	if !c.Enabled {
		return nil
	}
	if sc.Transport.Kind != TransportRoCE && sc.Transport.Kind != TransportRaw {
		return Errorf("fabric.pfc.enabled", "true under transport %s; PFC applies to RoCE (and raw traffic), MRC and the ideal network run without it", sc.Transport.Kind)
	}
	if err := c.Validate("fabric.pfc"); err != nil {
		return err
	}
	seen := map[int]bool{}
	for i, k := range c.Classes {
		if k >= sc.Fabric.SwitchQueue.Classes {
			return Errorf(fmt.Sprintf("fabric.pfc.classes[%d]", i), "class %d, but the switch queues have %d classes (0..%d)", k, sc.Fabric.SwitchQueue.Classes, sc.Fabric.SwitchQueue.Classes-1)
		}
		if seen[k] {
			return Errorf(fmt.Sprintf("fabric.pfc.classes[%d]", i), "class %d is listed twice", k)
		}
		seen[k] = true
	}
	if !seen[data] {
		return Errorf("fabric.pfc.classes", "%v leaves class %d, which carries %s, lossy (nothing would pause); include %d", c.Classes, data, what, data)
	}
	return nil
}

// payloadBytes is the payload per data packet of a reliable transport, 0 for raw and ideal.
func (tr Transport) payloadBytes() float64 {
	switch {
	case tr.Kind == TransportMRC && tr.MRC != nil:
		return float64(tr.MRC.PayloadBytes)
	case tr.Kind == TransportRoCE && tr.RoCE != nil:
		return float64(tr.RoCE.PayloadBytes)
	}
	return 0
}

// MaxPacketBytes is the largest data packet on the wire, bytes: the transport's full data
// packet (MRC, RoCE), or the largest raw traffic packet_size; 0 when unknown (a resolved
// transport is needed).
func (sc *Scenario) MaxPacketBytes() int64 {
	var pkt int64
	switch {
	case sc.Transport.Kind == TransportMRC && sc.Transport.MRC != nil:
		pkt = int64(sc.Transport.MRC.WireBytes(sc.Transport.MRC.PayloadBytes))
	case sc.Transport.Kind == TransportRoCE && sc.Transport.RoCE != nil:
		pkt = int64(sc.Transport.RoCE.HeaderBytes + sc.Transport.RoCE.PayloadBytes + 16)
	default:
		for _, t := range sc.Traffic {
			pkt = max(pkt, int64(t.PacketSize))
		}
	}
	return pkt
}

// checkQueues rejects queue settings that cannot work with this traffic: a queue limit below
// the largest packet (every packet would be dropped) and ECN thresholds at or above the limit
// (nothing would ever be marked).
func (sc *Scenario) checkQueues() error {
	pkt := sc.MaxPacketBytes()
	// Under the roce profile with PFC, a switch queue limit left out is the profile's (at least
	// 64 MiB, sized by the runner from the switch's buffer), which the runner checks ECN
	// against; the 1 MiB default here is not the one in force.
	pfc := sc.Fabric.PFC.Config()
	profileLimit := sc.Fabric.Profile == ProfileRoCE && pfc.Enabled
	given := sc.Fabric.Given()
	check := func(path string, q fabric.QueueConfig, limitGiven bool) error {
		if profileLimit && !limitGiven {
			return nil
		}
		if int64(q.Limit) < pkt {
			return Errorf(path+".limit", "%v is below the largest packet (%dB); every packet would be dropped", q.Limit, pkt)
		}
		if q.ECN.Enabled && q.ECN.Kmin >= q.Limit {
			return Errorf(path+".ecn.kmin", "%v is at or above the queue limit %v; nothing would ever be marked", q.ECN.Kmin, q.Limit)
		}
		if q.Trim.Threshold > 0 && int64(q.Trim.Threshold) < pkt {
			// A packet is trimmed when the queue with it would pass the threshold: below one
			// packet, every packet is trimmed at an empty queue and nothing gets through.
			return Errorf(path+".trim.threshold", "%v is below the largest data packet (%dB): every packet would be trimmed, even at an empty queue, and no transfer could finish; want at least %dB", q.Trim.Threshold, pkt, pkt)
		}
		return nil
	}
	if err := check("fabric.switch_queue", sc.Fabric.SwitchQueue, given.SwitchLimit); err != nil {
		return err
	}
	if sc.Fabric.LastHopQueue != nil {
		if err := check("fabric.last_hop_queue", *sc.Fabric.LastHopQueue, given.LastLimit); err != nil {
			return err
		}
	}
	if err := check("fabric.nic_queue", sc.Fabric.NICQueue, true); err != nil {
		return err
	}
	return sc.checkPFCBuffers(pkt)
}

// checkPFCBuffers rejects PFC thresholds that cannot hold one data packet (pkt wire bytes) at
// an ingress: a static xoff below it pauses upstream before a single packet is held, and a
// dynamic reserve below it leaves the ingress to the shared pool alone (the runner checks that
// the shared buffer holds one packet per ingress of a switch).
func (sc *Scenario) checkPFCBuffers(pkt int64) error {
	c := sc.Fabric.PFC.Config().WithDefaults()
	if !c.Enabled || pkt <= 0 {
		return nil
	}
	if c.Alpha == 0 && int64(c.XOFF) < pkt {
		return Errorf("fabric.pfc.xoff", "%v is below one data packet (%dB): an ingress would pause upstream before it holds a single packet, and a packet larger than xoff + headroom is dropped (pfc_headroom); want at least %dB (default %v)", c.XOFF, pkt, pkt, sim.Size(fabric.DefaultPFCXOFF))
	}
	if c.Alpha > 0 && int64(c.Reserved) < pkt {
		return Errorf("fabric.pfc.reserved", "%v is below one data packet (%dB): each ingress's guaranteed buffer must hold at least one packet; want at least %dB (default 2 MTU, %dB)", c.Reserved, pkt, pkt, 2*4160)
	}
	return nil
}
