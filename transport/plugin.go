// Package transport is the seam between lockstep's transports and the rest of the simulator:
// a transport registers one Plugin under its kind (transport.kind in a scenario), and the
// scenario resolver, the runner, the flow level and the results writer reach it only
// through that Plugin. Nothing outside a transport's own packages and the one registration
// file (transport/all/all.go) names a transport kind. docs/architecture.md, "How to add a
// transport", walks through a new one; transport/toytest (a test-only package) is a complete
// example written against this interface alone.
//
// The engines themselves (transport/mrc, transport/roce) are sans-IO: they see times and
// headers, never the fabric. A plugin's NIC adapter (its Endpoint; transport/mrc/mrcnic,
// transport/roce/rocenic) moves their headers in and out of fabric packets, keeps their
// timers, gates sends on the NIC and records completions.
package transport

import (
	"fmt"
	"io"
	"sort"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// Plugin is what one transport contributes. Only Name and NewEndpoint are required; a nil
// hook means the transport does not take part in that stage (no block to configure, no
// fabric profile of its own, no flow-level model: run.engine flow is then refused with an
// error naming the transport).
type Plugin struct {
	// Name is how headlines and messages name the transport ("MRC", "RoCEv2").
	Name string
	// Proto is the fabric protocol number its packets carry (fabric.ProtoMRC ...); the
	// endpoint registers its receiver for it (fabric.Network.SetReceiver).
	Proto fabric.Proto
	// NewConfig returns a pointer to the zero value of the transport's block, which a
	// scenario writes as transport.<kind>; nil when the transport takes no block.
	NewConfig func() any
	// Resolve fills the block's defaults and validates it (cfg is NewConfig's type, never
	// nil: a left-out block is resolved from its zero value). Errors name the field under
	// env.Path ("transport.mrc.ev.active: ..."), the value and what is allowed.
	Resolve func(cfg any, env ResolveEnv) error
	// Lossless is true for a transport deployed over a lossless fabric: fabric.pfc defaults
	// to on under it.
	Lossless bool
	// WorkloadDefault marks the transport a workload runs over when its scenario gives no
	// transport.kind (one registered plugin at most sets it; none: the workload must name
	// one).
	WorkloadDefault bool
	// ECMPHashed is true for a transport whose QPs each follow one ECMP-hashed path (RoCE):
	// a left-out run.duration is then sized for colliding flows (a sixteenth of line rate,
	// not a quarter), so a transfer left unfinished by a hash collision does not fail the run.
	ECMPHashed bool
	// DataMarks says, for the error on a traffic group's raw-only ecn or trimmable flag, how
	// the transport flags its own data packets ("MRC marks every data packet ECN-capable and
	// trimmable"); NeverTrimmed drops the hint to turn switch trimming off, which then does
	// not apply.
	DataMarks    string
	NeverTrimmed bool
	// Entropy checks a fault entry's entropy filter (faults[i].entropy, value e) against the
	// packets the transport sends: planes is the fabric's plane count, onPlane reports whether
	// the entry acts on a link of plane p, target names the entry's first element ("link
	// p0.t0-1.up2") and targetPlane its plane. An error (its message only; the resolver adds
	// the path) says no packet can carry e there. nil: entropy values are not checked.
	Entropy func(cfg any, e int64, planes int, onPlane func(p int) bool, target string, targetPlane int) error
	// Profile applies the transport's fabric profile (fabric.profile: <kind>, the default
	// under this transport) to the queues: it fills only what env.Given says the scenario
	// left out. cfg is the resolved block (NewConfig's zero block when fabric.profile names
	// this transport under another kind). The scenario resolver also probes what the profile
	// turns on at each hop (ECN, trimming, pmax, a last hop of its own) by applying it to
	// default queues with nothing given and no PFC, so it must change nothing but env. nil:
	// the transport has no profile (the default profile is then none).
	Profile func(cfg any, env ProfileEnv)
	// Check runs before the simulation on the built fabric (env.Net is nil at flow level):
	// an error rejects the scenario (exit 2), warnings are printed and kept in summary.json.
	Check func(cfg any, env CheckEnv) (warnings []string, err error)
	// NewEndpoint builds the packet-level NIC adapter over env.Net for the resolved block.
	NewEndpoint func(cfg any, env EndpointEnv) (Endpoint, error)
	// Flow describes the transport to the flow-level engine (run.engine flow) for the
	// resolved block on topology t.
	Flow func(cfg any, t topo.Topology) (FlowModel, error)
	// Print writes the transport's block of the terminal summary (s is what its Endpoint's
	// Summary returned; collective: the run carried collective messages): by convention
	// PrintTransfers, its own figures, then PrintQPErrors. nil: PrintTransfers and
	// PrintQPErrors alone.
	Print func(w io.Writer, s *Summary, collective bool)
	// Label names the resolved block in one short phrase for comparison tables ("roce (4
	// QP/peer)"); nil: the kind.
	Label func(cfg any) string
	// Outputs names every file the transport's Endpoint.Files may write ("ev_states.csv"), so
	// a results folder used before is cleared of them.
	Outputs []string
}

// ResolveEnv is what a transport's Resolve sees of the scenario being resolved.
type ResolveEnv struct {
	// Path is the block's YAML path ("transport.mrc"), the prefix of every error.
	Path string
	// Topology is the resolved topology (rates, delays, planes, paths).
	Topology topo.Topology
	// Workload is true when a workload (collectives or training) runs rather than traffic.
	Workload bool
	// Fluid is true when no packet fabric is built (run.engine flow or closed forms).
	Fluid bool
	// Adaptive is true when fabric.adaptive_routing is on.
	Adaptive bool
	// TrafficGroups is how many traffic groups the scenario has (len(traffic)), so a block
	// with per-group settings can check their count.
	TrafficGroups int
}

// QueueGiven records which queue settings a scenario set explicitly, so a profile fills in
// only the rest: a queue limit, ECN marking or trimming the user wrote is kept, enabled:
// false included. A block that gives only enabled: true where the profile turns the feature
// on is not given: the profile fills its thresholds.
type QueueGiven struct {
	SwitchLimit, SwitchECN, SwitchTrim bool // fabric.switch_queue
	// fabric.last_hop_queue; without one, switch_queue's (copied), except where a profile
	// sets the last hop apart.
	LastLimit, LastECN, LastTrim bool
}

// DataPacketSizer is implemented by a transport block (the pointer NewConfig returns) that
// knows its data packets' sizes once resolved: the scenario sizes packet budgets, queue
// checks and buffers from them without naming the transport.
type DataPacketSizer interface {
	// DataPacketBytes returns the payload of a full data packet and the largest data
	// packet's wire size (headers included), bytes.
	DataPacketBytes() (payload, wire int64)
}

// QPFanout is implemented by a transport block (the pointer NewConfig returns) whose traffic
// transfers each open more than one QP (RoCE's qps_per_peer on every plane): the scenario's
// memory estimate counts them without naming the transport. A block that does not implement
// it opens one QP per transfer (MRC: one QP sprays over every plane).
type QPFanout interface {
	// QPsPerTransfer returns the QPs (connections, each with its own sender and receiver
	// state) one transfer opens on a fabric of planes planes; >= 1.
	QPsPerTransfer(planes int) int
}

// ProfileEnv is the fabric a profile adjusts, in place.
type ProfileEnv struct {
	Topology topo.Topology
	Fluid    bool
	// SwitchQueue is fabric.switch_queue.
	SwitchQueue *fabric.QueueConfig
	// LastHopQueue is fabric.last_hop_queue: *LastHopQueue is nil when the scenario gave
	// none (the runner then copies the switch queue); a profile that sets the last hop apart
	// stores its own there.
	LastHopQueue **fabric.QueueConfig
	// Given says which queue settings the scenario wrote.
	Given QueueGiven
	// PFC is the switches' PFC configuration as written (defaults not yet filled), nil when
	// the scenario has no fabric.pfc; a profile may size SharedBuffer when it is 0.
	PFC *fabric.PFCConfig
	// MaxPacketBytes is the largest packet the transport puts on the wire.
	MaxPacketBytes int64
}

// CheckEnv is the run a transport's Check sees.
type CheckEnv struct {
	Topology topo.Topology
	// Net is the built packet fabric, nil at flow level.
	Net *fabric.Network
	// Queues are the resolved switch, last-hop and NIC queues (LastHop is the switch queue's
	// copy when the scenario gave none).
	Queues Queues
	// Profile is fabric.profile in force ("none" or a transport kind).
	Profile string
	// PFC is the resolved PFC configuration (Enabled false when off).
	PFC fabric.PFCConfig
	// Adaptive is true when fabric.adaptive_routing is on (at packet and flow level).
	Adaptive bool
	// Faults is true when the scenario has faults (fixed or random processes).
	Faults bool
}

// Queues are a fabric's resolved egress queue configurations.
type Queues struct {
	Switch, LastHop, NIC fabric.QueueConfig
	// LastHopGiven is true when the scenario (or its profile) set the last hop apart.
	LastHopGiven bool
}

// EndpointEnv is what a packet-level endpoint is built on.
type EndpointEnv struct {
	Sim      *sim.Sim
	Net      *fabric.Network
	Topology topo.Topology
	Queues   Queues
	// Seed is run.seed: endpoints draw their random streams from it (sim.Stream).
	Seed uint64
}

// Hooks are the runner's callbacks into a run; an endpoint calls each at most as documented.
type Hooks struct {
	// OnDone is called when every transfer posted so far has completed (the last
	// acknowledgement); it may pause the kernel.
	OnDone func(now sim.Time)
	// Halt is called when nothing left can finish: every transfer not yet complete is on a
	// QP that gave up. Traffic runs stop there rather than idle to run.duration.
	Halt func(now sim.Time)
	// Delivered is called when the receiver has placed every byte of a collective message
	// (Send), with the message's token; it may post more messages.
	Delivered func(now sim.Time, token uint64)
	// Group maps a collective instance to its connection group: QPs are per (src, dst,
	// group), as NCCL connects each communicator apart. nil: one group.
	Group func(instance int) int
	// FlowSent and FlowPlaced, when set, hear of each traffic transfer (AddFlow, numbered
	// from 0 in call order): FlowSent when its sender has had every byte acknowledged (before
	// OnDone counts it), FlowPlaced when its receiver has placed every byte. Either may call
	// AddFlow (with a start no earlier than now): the runner starts flows waiting on htsim
	// triggers there (runner/triggers.go).
	FlowSent   func(now sim.Time, flow int)
	FlowPlaced func(now sim.Time, flow int)
}

// Endpoint is one transport's NIC adapter over the packet fabric: every host's QPs, their
// timers, their wire format and their completions. It carries traffic transfers (AddFlow)
// and collective messages (Send, collective.Transport) alike.
type Endpoint interface {
	collective.Transport
	// SetHooks installs the runner's callbacks; called once, before the run starts.
	SetHooks(h Hooks)
	// AddFlow opens a QP from src to dst for one traffic transfer of bytes posted at start.
	// Errors: hosts out of range or with no route.
	AddFlow(src, dst int, bytes int64, start sim.Time) error
	// Outstanding returns the transfers (or messages) not yet acknowledged and the QP errors.
	Outstanding() (running, errs int)
	// Errs returns the QP errors so far, in the order they happened.
	Errs() []error
	// Stuck names at most max QPs still waiting, for a run that stopped making progress.
	Stuck(max int) string
	// Quiesce stops every engine (timers off, outboxes discarded) so the fabric can drain.
	Quiesce()
	// Sample is called at every queue sample (run.sample_interval) for the transport's own
	// series (MRC's EV states).
	Sample(now sim.Time)
	// Bytes returns the data wire bytes sent, the payload placed at receivers and the
	// payload posted, over all QPs so far: the goodput series and the rate figures.
	Bytes() (sent, placed, posted int64)
	// Log returns the loss-driven retransmission times (ascending, one per instant) and the
	// QP error times: the fault costs read them.
	Log() (lossAt, errAt []sim.Time)
	// Link returns what a collective's closed form needs of the transport: the one-way
	// latency (half the base RTT) and the payload share of the wire (payload / wire bytes of
	// a full data packet).
	Link() (latency sim.Time, payloadShare float64)
	// Summary is the transport block of summary.json at the run's end end, faults the times
	// of the run's fault events (the loss span is measured from the first).
	Summary(end sim.Time, faults []sim.Time) *Summary
	// Flows returns one record per QP (traffic) or per connection (workloads) for flows.csv
	// and the trace.
	Flows() []FlowRecord
	// Files returns the transport's own output files (MRC's ev_states.csv); nil: none.
	Files() []File
	// Run returns the adapter's typed run for tests and tools (*mrcnic.Run ...).
	Run() any
}

// TrafficGrouper is implemented by an Endpoint that treats the scenario's traffic groups
// apart (InfiniBand's service level per group, transport.ib.traffic_sl): the runner calls
// SetTrafficGroup(g) before each AddFlow of a transfer of traffic[g], g its index.
type TrafficGrouper interface {
	SetTrafficGroup(group int)
}

// FlowRecord is one QP's row of flows.csv (docs/outputs.md).
type FlowRecord struct {
	Src, Dst int
	// Plane is the QP's plane, -1 for a transport that sprays over every plane.
	Plane int
	// Bytes posted, payload delivered (placed at the receiver).
	Bytes, Delivered int64
	// Start when posted, Done when the last byte was acknowledged (0: not done), Ideal what
	// the transfer would take alone on an idle fabric (0: not measured).
	Start, Done, Ideal sim.Time
	// Retx is the packets sent again, every cause.
	Retx int64
	// ActiveOfLine is the throughput while all flows were active as a fraction of the NIC
	// line rate, -1 when not measured.
	ActiveOfLine float64
	// Extra are transport-specific columns for the trace's span arguments ("qps": 4).
	Extra map[string]any
}

// File is one output file a transport writes into the results folder.
type File struct {
	Name  string // "ev_states.csv"
	Write func(w io.Writer) error
}

// FlowModel describes a transport to the flow-level engine: how its flows use paths, how
// loss costs goodput, and how it recovers from a dead path. The flow level has no transport
// code of its own; every difference between transports there comes from these values.
type FlowModel struct {
	// Spray is true for a transport that sprays every packet over many paths (MRC): on a
	// Clos or fat-tree its flows ride link bundles (perfect spraying), elsewhere each flow
	// is split equally over up to Paths minimal paths. False: one ECMP-hashed path per QP.
	Spray bool
	// Paths is, when spraying, the most paths one flow uses (0: DefaultFlowPaths); else the
	// QPs per peer per plane, each its own ECMP path.
	Paths int
	// WireBytes is a full data packet on the wire; HeaderBytes its headers; AckBytes an
	// acknowledgement's size.
	WireBytes, HeaderBytes, AckBytes int
	// GoBackN is true for a transport that resends everything in flight after a loss
	// (goodput (1 - p) / (1 + (w - 1) p)); false: selective repeat (1 - p).
	GoBackN bool
	// EndpointReroute is true for a transport whose endpoints move off a dead, blackholed or
	// lossy path by themselves, RerouteAfter after the fault (MRC's ACK timeout); false:
	// routing moves flows only after fabric.reconvergence, and only off links that are down.
	EndpointReroute bool
	RerouteAfter    sim.Time
	// RTO is the retransmission timeout after which a QP stalled on a dead path retries
	// (0: none; the transport reroutes instead). A message whose last packet is lost also
	// waits it (no tail-loss probe).
	RTO sim.Time
	// GiveUp is how long a QP may make no progress before it errors (sim.MaxTime: never).
	GiveUp sim.Time
	// QPTuple, for a transport that does not spray, is what its packets carry for the
	// switches' ECMP besides the hosts and the UDP source port QPSourcePort gives each QP
	// (fabric.ECMPChoice). With it the flow level routes each QP on the path its packets
	// hash to, switch by switch (runner/flowroute.go); zero: on a path hashed by the flow
	// level's own seed, the same in distribution but not the packets' own.
	QPTuple QPTuple
	// AdaptiveSpray is true for a transport whose receivers place reordered packets (IB's
	// out-of-order placement): under fabric.adaptive_routing each of its QPs is spread over
	// the minimal paths of its own plane (the switches' AR spreads its packets there and
	// never changes plane; runner/flowadaptive.go). False: the fabric's adaptive routing
	// leaves its flow model as it is. The runner clears it when adaptive routing is off.
	AdaptiveSpray bool
	// Ceiling, if not nil, is the transport's rate recovery after congestion (RoCE's
	// DCQCN): each QP's flows are capped by its recovery curve after it stops sharing a
	// congested link (runner/flowceiling.go; docs/protocols.md, "DCQCN at flow level"). nil:
	// the max-min rates alone.
	Ceiling RateCeiling
}

// QPTuple is the fixed part of a QP's packet header that ECMP hashes (fabric.ECMPChoice):
// its protocol and UDP destination port, and the transport's rule for the UDP source port
// of each QP (no entropy word). The zero value (Proto 0: ProtoRaw) means none is given.
type QPTuple struct {
	Proto   fabric.Proto
	DstPort uint16
	// Ports is the transport's rule for its QPs' UDP source ports; nil: QPSourcePort. It
	// must be a comparable value (FlowModel values are compared).
	Ports PortRule
}

// PortRule gives the UDP source port a transport's packets carry for QP qp (0-based, on
// plane qp mod planes) of owner's connection (FlowOwner, CollectiveOwner) from host src to
// host dst, perConn the connection's QPs, on a run of seed runSeed.
type PortRule interface {
	Port(runSeed uint64, src, dst int, owner uint64, qp, perConn int) uint16
}

// Port returns QP qp's UDP source port by t.Ports, else QPSourcePort.
func (t QPTuple) Port(runSeed uint64, src, dst int, owner uint64, qp, perConn int) uint16 {
	if t.Ports != nil {
		return t.Ports.Port(runSeed, src, dst, owner, qp, perConn)
	}
	return QPSourcePort(runSeed, src, dst, owner, qp)
}

// QPSourcePort returns the UDP source port of QP qp (0-based; on plane qp mod planes) of
// owner's connection from host src to host dst on a run of seed runSeed: a hash of all
// five in the dynamic range 0xC000-0xFFFF. owner is FlowOwner(i) for traffic flow i
// (Endpoint.AddFlow order) and CollectiveOwner(g) for the connections of collective group g
// (Hooks.Group). A QP's port depends on what it connects, not on the order QPs were opened,
// so the flow level (FlowModel.QPTuple) can route every QP on the path its packets take.
// RoCEv2 leaves the source port to the sender as ECMP entropy [RoCEv2 Annex A17]; real NICs
// derive it from the QP number, one draw of the same kind.
func QPSourcePort(runSeed uint64, src, dst int, owner uint64, qp int) uint16 {
	key := sim.Mix64(owner*0xd6e8feb86659fd93 ^ uint64(uint32(src))<<32 ^ uint64(uint32(dst)))
	return 0xC000 | uint16(sim.Mix64(runSeed^(key^uint64(uint32(qp)))*0x9e3779b97f4a7c15)&0x3FFF)
}

// FlowOwner is the owner (QPSourcePort) of traffic flow i's QPs: the i-th transfer an
// Endpoint's AddFlow was given.
func FlowOwner(i int) uint64 { return uint64(i) }

// FlowOwnerIndex returns the traffic flow index i of owner = FlowOwner(i), and false for a
// CollectiveOwner.
func FlowOwnerIndex(owner uint64) (int, bool) {
	if owner>>62 != 0 {
		return 0, false
	}
	return int(owner), true
}

// CollectiveOwner is the owner (QPSourcePort) of the QPs of collective group g (Hooks.Group's
// value): distinct from every FlowOwner.
func CollectiveOwner(g int) uint64 { return 1<<63 | uint64(uint32(g)) }

// DefaultFlowPaths bounds the paths one sprayed flow uses at flow level when FlowModel.Paths
// is 0.
const DefaultFlowPaths = 128

var registry = map[string]*Plugin{}

// Register makes a transport available under kind (transport.kind in a scenario and the key
// of its block). It is called from the transport's package init and panics on a kind that is
// not a lower-case identifier (a letter, then letters, digits or '_'; at most 32 bytes), a
// reserved one, a kind registered twice or a plugin without Name or NewEndpoint: those are
// programming errors found on the first run of any test.
func Register(kind string, p Plugin) {
	switch {
	case !validKind(kind) || reserved[kind]:
		panic(fmt.Sprintf("transport.Register: kind %q is reserved or not a lower-case identifier (a-z, then a-z, 0-9 or _)", kind))
	case registry[kind] != nil:
		panic(fmt.Sprintf("transport.Register: kind %q registered twice", kind))
	case p.Name == "" || p.NewEndpoint == nil:
		panic(fmt.Sprintf("transport.Register: kind %q needs Name and NewEndpoint", kind))
	}
	registry[kind] = &p
}

// reserved are the kinds no plugin may take: those the simulator itself provides (paced raw
// traffic; the ideal, contention-free network of workloads), "none" (fabric.profile's
// value for no profile, where a transport's kind also names its profile) and "kind" (the
// key beside the blocks in transport: {kind: ...}).
var reserved = map[string]bool{"raw": true, "ideal": true, "none": true, "kind": true}

// validKind reports whether kind is a lower-case identifier of at most 32 bytes: one YAML
// key, one path element of a variant, one word in messages.
func validKind(kind string) bool {
	if kind == "" || len(kind) > 32 || kind[0] < 'a' || kind[0] > 'z' {
		return false
	}
	for i := 1; i < len(kind); i++ {
		if c := kind[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Lookup returns the plugin registered under kind.
func Lookup(kind string) (*Plugin, bool) {
	p, ok := registry[kind]
	return p, ok
}

// Kinds returns the registered kinds, sorted.
func Kinds() []string {
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
