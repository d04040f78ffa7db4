// Package fabric is lockstep's packet-level network: packets from a free list, NIC ports,
// links with serialisation and propagation delay, egress queues (drop-tail, RED/ECN marking,
// trimming into a WDRR-scheduled header queue, strict-priority classes) and switches that
// forward by per-packet source route or by ECMP hash.
//
// Event model (docs/style.md §1, after htsim's Queue + Pipe): a port's link is a FIFO of packets in
// flight with at most one pending event for the head's arrival, and the port has at most one
// pending transmitter event, only while something waits for the transmitter: a packet that
// starts serialising is put on the link at once with its arrival time (end of serialisation
// plus link delay), so a hop through an empty queue costs one event, not two. The transmitter
// event fires at the end of a serialisation only when packets are queued behind it (or on a
// NIC port, whose transports want to know it has room: SetNICReady). The event set grows with
// busy ports, not with packets in flight. Switch forwarding latency is folded into each link's
// delay.
//
// A packet's path: Network.Send enqueues it at the source host's NIC port for a plane; the port
// serialises it (Rate.TxTime), puts it on the link, and after the link delay the peer receives
// it. A switch picks the egress by source route (Packet.Route[Hop]) or by ECMP hash of the
// 5-tuple and entropy with its own seed, and enqueues it; a host NIC hands it to the receiver
// registered for its Proto, and the packet returns to the free list after the callback.
//
// Faults (fault.go): links fail and recover in both directions (SetLinkDown), lose packets at
// random, by bit error rate or by entropy value on one direction (SetLoss, SetBER,
// SetEntropyLoss), and switches can silently drop all they receive (SetBlackhole).
//
// Conservation: every injected packet is counted as delivered whole, delivered trimmed,
// dropped (by reason) or in flight; Network.Audit checks the books.
package fabric

import (
	"fmt"
	"math/bits"
	"slices"
	"sort"
	"unsafe"

	"github.com/lockstepsim/lockstep/sim"
)

// NodeID indexes Network's nodes. Hosts come first, so a host's NodeID equals its host index.
type NodeID int32

// PortID indexes Network's ports (every port of every node).
type PortID int32

// NodeKind says whether a node is a host NIC or a switch.
type NodeKind uint8

// Node kinds.
const (
	Host NodeKind = iota
	Switch
)

// Node is a host (its NIC ports, one per plane) or a switch.
type Node struct {
	Name  string
	Kind  NodeKind
	Ports []PortID // by local port number; -1 where a number is unconnected
	// Plane and Tier label the node for reports: a switch's plane and tier (0 = T0); hosts
	// have Plane -1 and Tier -1. The fabric itself does not use them.
	Plane, Tier int8
	// Routes is the ECMP table used for packets without a source route (switches only).
	Routes RouteTable
	// Drops counts, by reason, the packets this node discarded itself rather than in one of its
	// port queues: no_route (a bad source route or no ECMP entry at a switch, a misrouted packet
	// at a host) and blackhole. Port queues count the other reasons (Port.Totals).
	Drops     [NumDropReasons]int64
	seed      uint64 // per-switch ECMP hash seed
	blackhole bool   // SetBlackhole: drop everything received
	failed    bool   // SetSwitchFailed: the switch itself failed (its links are taken down apart)
}

// RouteTable maps destination hosts to ECMP groups of local egress ports.
type RouteTable struct {
	// Entries are disjoint half-open host ranges [HostLo, HostHi), sorted by HostLo, each with
	// its group of equal-cost local egress ports.
	Entries []RouteEntry
	// Up is the group for destinations not in Entries (the uplinks); empty at the top tier.
	Up []uint16
}

// RouteEntry is one range of destination hosts and its ECMP group.
type RouteEntry struct {
	HostLo, HostHi int32
	Ports          []uint16
}

// Lookup returns the ECMP group for destination host dst: the ports of the entry holding dst,
// else Up (nil when neither). It does not allocate.
func (t *RouteTable) Lookup(dst int32) []uint16 {
	e := t.Entries
	lo, hi := 0, len(e)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if e[m].HostHi <= dst {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(e) && e[lo].HostLo <= dst {
		return e[lo].Ports
	}
	return t.Up
}

// Port is one end of a link: the egress queue and transmitter of its node toward Peer, and the
// link itself (packets in flight toward Peer).
//
// Layout: a port is 256 bytes, 64-byte aligned in Network.Ports, and what a packet event
// reads (the transmitter, the link, the queues' heads and flags, the next hop) fills its first
// two cache lines, which the processor fetches as a pair; names, outage bookkeeping and the
// per-queue statistics that change only on drops, trims and marks come after or live apart.
// TestPortLayout pins it.
type Port struct {
	// Hot: every packet event on this port reads these.
	txEnd sim.Time // when the last serialisation ends: the port is busy while now < txEnd
	Rate  sim.Rate
	Delay sim.Time // propagation plus the next switch's forwarding latency
	// The link toward Peer: a list of q's slots in arrival order, first and last (-1 when
	// empty). It includes the packet being serialised.
	flHead, flTail int32
	// The peer's node, copied here at Connect so that an arrival reads no other port or node.
	peerNode NodeID
	// Link state kept by SetLinkDown. epoch is the number of down transitions, stamped on each
	// packet's slot when its serialisation starts (slot.epoch): a packet whose stamp differs
	// from epoch when it arrives was on the transmitter or the wire when the link failed.
	epoch   uint32
	txEvent bool // a transmitter event is pending at txEnd
	nic     bool // a host's NIC port: it stamps SentAt when it starts sending a packet
	// Down: this direction of the link is failed. Change it with Network.SetLinkDown, which
	// fails both directions at once, flushes both egress queues, loses the packets on the wire
	// and keeps the down-time counters (see there). A direct write still takes effect (the
	// fabric reads Down at every enqueue, transmission end and arrival) but fails one direction
	// only, is not counted, and a packet on the wire survives a direct down-then-up before it
	// arrives.
	Down bool
	// LastHop: the peer is a host, so this is the last queue before the receiver: trims here are
	// flagged TrimmedLastHop, and builders give these ports their own queue config (MRC: no ECN
	// marking on the last hop [MRC §2.1]; trimming at 1.5 BDP there [UEC sim defaults]).
	LastHop  bool
	peerHost bool // the peer's node is a host
	lossy    bool // faults != nil
	// paused: PFC classes paused at this egress by its peer (bit c: class c); not served.
	paused uint16
	// q's fields up to aux are hot too; its lines slice is not (see portQueue).
	q portQueue

	// Cold.
	Node      NodeID
	Peer      PortID       // the port at the other end; -1 until connected
	Local     uint16       // index in Node.Ports
	outage    bool         // in a counted outage since downSince
	downSince sim.Time     // start of the current outage
	downTime  sim.Time     // completed outages, summed
	faults    *linkFaults  // random loss, bit errors, entropy filters; nil when none
	pfc       *pfcState    // PFC state; nil when PFC is off
	cred      *creditState // credit flow control state; nil when credits are off (credit.go)
	Name      string
	_         [24]byte // pad to 256 bytes (TestPortLayout)
}

// Stats returns the port's per-class queue statistics and its header-queue statistics.
func (p *Port) Stats() (classes []QueueStats, header QueueStats) {
	q := &p.q
	k := q.p.classes
	classes = make([]QueueStats, k)
	for c := range classes {
		classes[c] = queueStats(&q.lines[c], &q.aux.cold[c])
	}
	return classes, queueStats(&q.lines[k], &q.aux.cold[k])
}

// Totals sums the port's queues: transmitted bytes and packets, drops by reason (including
// the packets its link lost: link_down, loss), flushed packets, trims, CE marks, current depth
// in bytes; its MeanDepth is the port's. MaxDepth is the largest of the queues' maxima, not
// the maximum of their sum.
func (p *Port) Totals() QueueStats {
	var t QueueStats
	q := &p.q
	all := make([]QueueStats, 0, MaxClasses+1) // classes, then the header queue
	for i := range q.lines {
		all = append(all, queueStats(&q.lines[i], &q.aux.cold[i]))
	}
	for i := range all {
		s := &all[i]
		t.EnqPackets += s.EnqPackets
		t.EnqBytes += s.EnqBytes
		t.TxPackets += s.TxPackets
		t.TxBytes += s.TxBytes
		for i := range s.Drops {
			t.Drops[i] += s.Drops[i]
		}
		t.DropBytes += s.DropBytes
		t.Flushed += s.Flushed
		t.Trims += s.Trims
		t.CEMarks += s.CEMarks
		t.Depth += s.Depth
		if s.MaxDepth > t.MaxDepth {
			t.MaxDepth = s.MaxDepth
		}
	}
	// Depth area, brought up to the latest change of any queue, so t.MeanDepth is the port's.
	for i := range all {
		t.lastChange = max(t.lastChange, all[i].lastChange)
	}
	for i := range all {
		s := &all[i]
		t.depthArea += s.depthArea + float64(s.Depth)*float64(t.lastChange-s.lastChange)
	}
	return t
}

// SentBytes returns the bytes the port has put on the wire by now: its transmitted bytes, less
// the part of the packet on the transmitter not yet serialised (counters count a packet when
// its serialisation starts). Utilisation over an interval uses it so it never exceeds 100%.
func (p *Port) SentBytes(now sim.Time) int64 {
	t := p.Totals().TxBytes
	if p.txEnd > now {
		t -= p.Rate.BytesIn(p.txEnd - now)
	}
	return t
}

// QueueBytes returns the bytes waiting in all of the port's queues (not the one on the wire).
func (p *Port) QueueBytes() int64 { return p.q.bytes }

// MeanDepth returns the time-averaged bytes queued at the port over [0, now], all classes.
func (p *Port) MeanDepth(now sim.Time) float64 {
	q := &p.q
	k := q.p.classes
	m := queueStats(&q.lines[k], &q.aux.cold[k]).MeanDepth(now)
	for c := 0; c < k; c++ {
		m += queueStats(&q.lines[c], &q.aux.cold[c]).MeanDepth(now)
	}
	return m
}

// Receiver is called when a packet reaches its destination host's NIC. The packet is only
// valid during the call; it returns to the free list afterwards.
type Receiver func(now sim.Time, p *Packet)

// Counters are the network-wide packet books for the conservation audit.
type Counters struct {
	Injected         int64 // packets handed to Send
	DeliveredWhole   int64 // reached their destination untrimmed
	DeliveredTrimmed int64 // reached their destination as a trimmed header
	Dropped          [NumDropReasons]int64
	// AtFailedSwitch counts, of Dropped[DropLinkDown], the packets dropped at a switch that
	// failed as a whole (SetSwitchFailed): flushed from or dead-ended in its own queues, offered
	// to its dead ports, lost while it was sending them, or on the wire into it when it failed.
	// The drops at its neighbours' egresses toward it are the neighbours' (their link is down)
	// and not counted here.
	AtFailedSwitch int64
}

// DroppedTotal sums Dropped over all reasons.
func (c *Counters) DroppedTotal() int64 {
	var n int64
	for _, d := range c.Dropped {
		n += d
	}
	return n
}

// Network is the whole fabric of one simulation: nodes, ports, links, the packet free list and
// the conservation books. Build it with AddNode and Connect (usually through package topo),
// then Send packets.
type Network struct {
	sim   *sim.Sim
	Nodes []Node
	Ports []Port
	hosts int32
	// hot is, by node, what forwarding reads: a copy of Node.Ports' slice header and the
	// blackhole flag, 32 bytes a node instead of the whole Node.
	hot []nodeHot
	// params holds the queue parameters shared by ports with the same QueueConfig.
	params map[QueueConfig]*queueParams
	// qlines holds every port's queue lines: port id has the block of linesPerPort lines at
	// lineBlock(id), of which it uses its classes and header queue. Blocks are found from the
	// id alone (see portQueue.enqueue), and chunks never move, so ports keep slices of them.
	qlines [][]queueLine
	slots  slotArena // the ports' slabs

	recv     [1 << 8]Receiver // by Proto: any uint8 indexes it, so no Proto value can panic
	free     *Packet
	fresh    []Packet // allocated and never handed out yet; NewPacket takes them in order
	alloc    int64    // packets ever handed out fresh (the free list's high-water mark)
	C        Counters
	seed     uint64 // ECMP seeds derive from it
	ecnSeed  uint64 // per-port ECN marking streams derive from it
	lossSeed uint64 // per-port loss streams derive from it

	kTx, kArrive sim.Kind
	// PFC (SetPFC): on, its configuration, the lossless classes (bit c: class c), the pause event.
	pfcOn       bool
	pfcCfg      PFCConfig
	pfcLossless uint16
	kPFC        sim.Kind
	kPFCTimer   sim.Kind
	pfcShared   []int64 // per node: lossless bytes its ingresses hold in the shared buffer (Alpha > 0)
	// Credits (SetCredits, credit.go): on, the configuration, the flow-control packet event.
	// linkFC is pfcOn || credOn: the one flag the hot path reads for either.
	credOn, linkFC bool
	credCfg        CreditConfig
	kCredit        sim.Kind
	nextID         uint64
	nicReady       func(now sim.Time, host int32, plane int)
	// Input-buffered switch models (SetSwitch, voq.go): on, and their state (nil when off).
	voqOn bool
	voq   *voqState
	ar    *arState // adaptive routing (SetAdaptive, adaptive.go); nil when off
}

// Queue line blocks (Network.qlines): chunk 0 holds the blocks of ports 0..firstChunk-1 and
// chunk k >= 1 those of ports firstChunk<<(k-1) .. firstChunk<<k - 1, so a small network
// allocates little and a large one a few chunks.
const (
	linesPerPort = MaxClasses + 1
	firstChunk   = 64
	logFirst     = 6 // log2(firstChunk)
)

// lineBlock returns port id's block of queue lines.
func (n *Network) lineBlock(id PortID) []queueLine {
	k := bits.Len32(uint32(id) >> logFirst)
	start := 0
	if k > 0 {
		start = firstChunk << (k - 1)
	}
	o := (int(id) - start) * linesPerPort
	return n.qlines[k][o : o+linesPerPort : o+linesPerPort]
}

// nodeHot is the part of a Node that forwarding reads.
type nodeHot struct {
	ports     []PortID // Node.Ports
	blackhole bool
}

// New returns an empty network driven by s. ECMP seeds, ECN marking draws and loss draws come
// from separate named streams of s's seed.
func New(s *sim.Sim) *Network {
	n := &Network{sim: s, seed: ecmpBase(s.RNG("fabric.ecmp")), ecnSeed: s.RNG("fabric.ecn").Uint64(),
		lossSeed: s.RNG("fabric.loss").Uint64()}
	n.kTx = s.Register("fabric.tx", n.onTxDone)
	n.kArrive = s.Register("fabric.arrive", n.onArrive)
	n.kPFC = s.Register("fabric.pfc", n.onPFC)
	n.kPFCTimer = s.Register("fabric.pfc.timer", n.onPFCTimer)
	return n
}

// SetECMPSharedSeed gives every switch the same ECMP hash seed (shared true) or its own
// (false, the default, as each switch gets at AddNode). A shared seed is the classic
// misconfiguration that polarises multi-stage ECMP: a switch picks the same group index as the
// switch before it, so the flows that reached it by index i all leave by index i and most of
// its uplinks stay idle [e.g. Cisco, "ECMP load-sharing polarization"].
func (n *Network) SetECMPSharedSeed(shared bool) {
	for id := range n.Nodes {
		n.Nodes[id].seed = switchSeed(n.seed, NodeID(id), shared)
	}
}

// ecmpBase is the base of every switch's ECMP seed: the first draw of the simulation's
// "fabric.ecmp" stream.
func ecmpBase(r interface{ Uint64() uint64 }) uint64 { return r.Uint64() }

// switchSeed is switch id's ECMP hash seed from the network's base: its own (a mix of the
// base and id) or, shared, the base itself (SetECMPSharedSeed).
func switchSeed(base uint64, id NodeID, shared bool) uint64 {
	if shared {
		return base
	}
	return sim.Mix64(base ^ uint64(id)*0x9e3779b97f4a7c15)
}

// ECMPSeeds returns the ECMP hash seed of each of the first nodes node IDs in a network built
// from topology node numbers (topo.BuildTopology: NodeID = node index) on a simulation of
// seed runSeed: each switch its own, or with shared the one every switch has
// (SetECMPSharedSeed). Code that predicts packet paths without building the fabric (the flow
// level's hashed routes) uses them with ECMPChoice.
func ECMPSeeds(runSeed uint64, nodes int, shared bool) []uint64 {
	base := ecmpBase(sim.Stream(runSeed, "fabric.ecmp"))
	out := make([]uint64, max(nodes, 0))
	for id := range out {
		out[id] = switchSeed(base, NodeID(id), shared)
	}
	return out
}

// ECMPChoice returns the member of an ECMP group of k a switch with hash seed seed picks
// for a packet with p's 5-tuple and entropy (Proto, Src, Dst, SrcPort, DstPort, Entropy;
// nothing else of p is read): the hash forward applies.
func ECMPChoice(seed uint64, p *Packet, k int) int { return ecmpIndex(seed, p, k) }

// SetNICReady registers fn to be called each time a host's NIC port finishes serialising a
// packet and has nothing left waiting (the next packet, if any, is on the transmitter): the
// port has room again. host is the
// NIC's node, plane its local port number. Transports use it to pull packets from their QPs
// the way a NIC's transmit scheduler does, rather than parking a window's worth of packets in
// the NIC queue. fn runs inside the fabric's event and may call Send; nil unregisters.
func (n *Network) SetNICReady(fn func(now sim.Time, host int32, plane int)) { n.nicReady = fn }

// Sim returns the simulation driving the network.
func (n *Network) Sim() *sim.Sim { return n.sim }

// NumHosts returns the number of host nodes.
func (n *Network) NumHosts() int { return int(n.hosts) }

// AddNode adds a node labelled with plane and tier (see Node) and returns its ID. All hosts must
// be added before any switch, so that host index = NodeID. Errors: a host added after a
// switch, an unknown kind, or a plane or tier outside -128..127.
func (n *Network) AddNode(name string, kind NodeKind, plane, tier int) (NodeID, error) {
	id := NodeID(len(n.Nodes))
	if kind != Host && kind != Switch {
		return 0, fmt.Errorf("fabric: node %q: unknown kind %d", name, kind)
	}
	if plane != int(int8(plane)) || tier != int(int8(tier)) {
		return 0, fmt.Errorf("fabric: node %q: plane %d, tier %d; allowed -128..127", name, plane, tier)
	}
	if kind == Host {
		if int(n.hosts) != len(n.Nodes) {
			return 0, fmt.Errorf("fabric: host %q added after a switch; add all hosts first", name)
		}
		n.hosts++
	}
	seed := switchSeed(n.seed, id, false)
	n.Nodes = append(n.Nodes, Node{Name: name, Kind: kind, Plane: int8(plane), Tier: int8(tier), seed: seed})
	n.hot = append(n.hot, nodeHot{})
	return id, nil
}

// Reserve makes room for nodes more nodes and ports more ports, so building a large fabric
// does not copy the slices as they grow.
func (n *Network) Reserve(nodes, ports int) {
	if nodes > 0 {
		n.Nodes = slices.Grow(n.Nodes, nodes)
		n.hot = slices.Grow(n.hot, nodes)
	}
	if ports > 0 {
		n.Ports = slices.Grow(n.Ports, ports)
		if c := n.Ports[:cap(n.Ports)]; len(c) > 0 {
			adviseHuge(unsafe.Pointer(&c[0]), uintptr(len(c))*unsafe.Sizeof(Port{}))
		}
	}
}

// PortEnd describes one end of a new link for Connect.
type PortEnd struct {
	Node NodeID
	// Local is the port's local number on its node (the index a source route names), or
	// AppendPort for the next number after the node's highest. Numbers skipped by an explicit
	// Local stay unconnected: forwarding to them is a DropNoRoute.
	Local int
	Name  string      // the port's stable name, e.g. "p3.t0-17.up5"
	Queue QueueConfig // its egress queues (defaults filled by WithDefaults)
}

// AppendPort as PortEnd.Local gives the port the next local number on its node.
const AppendPort = -1

// maxLocalPorts bounds a node's local port numbers (they travel in uint16 source routes).
const maxLocalPorts = 1 << 16

// Connect adds a full-duplex link between a and b at rate (bits/s, each direction) with delay
// (propagation plus forwarding) and returns the two new ports, numbered on their nodes as
// PortEnd.Local says. Errors: a local number already connected or beyond 65,535, unknown
// node, non-positive rate, negative delay, or an invalid queue config.
func (n *Network) Connect(a, b PortEnd, rate sim.Rate, delay sim.Time) (PortID, PortID, error) {
	if rate <= 0 {
		return 0, 0, fmt.Errorf("fabric: link %s-%s: rate %v must be positive", a.Name, b.Name, rate)
	}
	if delay < 0 {
		return 0, 0, fmt.Errorf("fabric: link %s-%s: delay %v must be >= 0", a.Name, b.Name, delay)
	}
	ends := [2]PortEnd{a, b}
	var qcs [2]QueueConfig
	var locals [2]int
	// Check both ends before adding anything, so an error leaves the network unchanged.
	for i, e := range ends {
		if e.Node < 0 || int(e.Node) >= len(n.Nodes) {
			return 0, 0, fmt.Errorf("fabric: port %s: unknown node %d", e.Name, e.Node)
		}
		qcs[i] = e.Queue.WithDefaults()
		if err := qcs[i].Validate("queue"); err != nil {
			return 0, 0, fmt.Errorf("fabric: port %s: %w", e.Name, err)
		}
		node := &n.Nodes[e.Node]
		local := e.Local
		if local == AppendPort {
			local = len(node.Ports)
			if i == 1 && a.Node == b.Node && a.Local == AppendPort {
				local++ // both ends append to the same node
			}
		}
		if local < 0 || local >= maxLocalPorts {
			return 0, 0, fmt.Errorf("fabric: port %s: local number %d out of range; allowed 0..%d or AppendPort", e.Name, e.Local, maxLocalPorts-1)
		}
		if local < len(node.Ports) && node.Ports[local] >= 0 {
			return 0, 0, fmt.Errorf("fabric: port %s: %s local port %d is already connected (%s)", e.Name, node.Name, local, n.Ports[node.Ports[local]].Name)
		}
		if i == 1 && a.Node == b.Node && local == locals[0] {
			return 0, 0, fmt.Errorf("fabric: port %s: both ends are local port %d of %s", e.Name, local, node.Name)
		}
		locals[i] = local
	}
	var ids [2]PortID
	for i, e := range ends {
		qc := qcs[i]
		node := &n.Nodes[e.Node]
		id := PortID(len(n.Ports))
		n.Ports = append(n.Ports, Port{Name: e.Name, Node: e.Node, Local: uint16(locals[i]), Rate: rate, Delay: delay, flHead: -1, flTail: -1})
		if k := bits.Len32(uint32(id) >> logFirst); k == len(n.qlines) {
			size := firstChunk
			if k > 0 {
				size = firstChunk << (k - 1)
			}
			c := make([]queueLine, size*linesPerPort)
			adviseHuge(unsafe.Pointer(&c[0]), uintptr(len(c))*unsafe.Sizeof(queueLine{}))
			n.qlines = append(n.qlines, c)
		}
		n.Ports[id].q.init(n.queueParams(qc), n.lineBlock(id))
		n.Ports[id].q.arena = &n.slots
		n.Ports[id].q.rng = sim.Mix64(n.ecnSeed ^ uint64(id)*0x9e3779b97f4a7c15)
		for len(node.Ports) <= locals[i] {
			node.Ports = append(node.Ports, -1)
		}
		node.Ports[locals[i]] = id
		n.hot[e.Node].ports = node.Ports
		ids[i] = id
	}
	for i, id := range ids {
		pt, peer := &n.Ports[id], ends[1-i]
		pt.Peer = ids[1-i]
		pt.peerNode = peer.Node
		pt.peerHost = n.Nodes[peer.Node].Kind == Host
		pt.LastHop = pt.peerHost
		pt.nic = n.Nodes[ends[i].Node].Kind == Host
	}
	return ids[0], ids[1], nil
}

// queueParams returns the shared parameters for cfg, creating them on first use.
func (n *Network) queueParams(cfg QueueConfig) *queueParams {
	if qp, ok := n.params[cfg]; ok {
		return qp
	}
	if n.params == nil {
		n.params = make(map[QueueConfig]*queueParams)
	}
	qp := newQueueParams(cfg)
	n.params[cfg] = qp
	return qp
}

// SetReceiver registers the callback for packets of proto arriving at their destination.
func (n *Network) SetReceiver(proto Proto, r Receiver) { n.recv[proto] = r }

// NewPacket returns a zeroed packet from the free list (allocating only when it is empty).
// Hand it to Send, or return it with Free.
func (n *Network) NewPacket() *Packet {
	p := n.free
	if p == nil {
		if len(n.fresh) == 0 {
			n.morePackets()
		}
		p, n.fresh = &n.fresh[0], n.fresh[1:]
		n.alloc++
		return p
	}
	n.free = p.next
	*p = Packet{}
	return p
}

// Packets are allocated in chunks that double up to maxPacketChunk packets (8 MiB), so that a
// large run's packets sit in a few big arrays (on huge pages where the kernel allows) rather
// than scattered over the heap.
const maxPacketChunk = 1 << 16

// morePackets allocates the next chunk of fresh packets.
func (n *Network) morePackets() {
	size := int(min(max(n.alloc, 64), maxPacketChunk))
	c := make([]Packet, size)
	adviseHuge(unsafe.Pointer(&c[0]), uintptr(size)*unsafe.Sizeof(Packet{}))
	n.fresh = c
}

// Free returns a packet that was never sent to the free list.
func (n *Network) Free(p *Packet) {
	p.next = n.free
	n.free = p
}

// Allocated returns how many packets were ever allocated: the free list's high-water mark.
func (n *Network) Allocated() int64 { return n.alloc }

// Send injects p at host's NIC port for plane (its local port number) at time now. The packet
// is stamped with an ID and SentAt and counted as injected; if the NIC queue refuses it, it is
// dropped and counted. Errors: a host or plane that does not exist, or a size that is not
// positive (the packet is freed and not counted).
func (n *Network) Send(now sim.Time, host int32, plane int, p *Packet) error {
	if host < 0 || host >= n.hosts {
		n.Free(p)
		return fmt.Errorf("fabric: send from host %d: no such host (have %d)", host, n.hosts)
	}
	node := &n.Nodes[host]
	if plane < 0 || plane >= len(node.Ports) || node.Ports[plane] < 0 {
		n.Free(p)
		return fmt.Errorf("fabric: send from %s on plane %d: the NIC has %d ports", node.Name, plane, len(node.Ports))
	}
	if p.Size <= 0 {
		size := p.Size
		n.Free(p)
		return fmt.Errorf("fabric: send from %s: packet size %d B must be positive", node.Name, size)
	}
	n.nextID++
	p.ID = n.nextID
	p.SentAt = now
	p.Src = host
	n.C.Injected++
	n.enqueue(now, node.Ports[plane], p)
	return nil
}

// enqueue offers p to port pid's egress queue and starts the transmitter if it is idle. A down
// port takes nothing: p is dropped at once (a switch drops on a dead port; a NIC cannot send).
func (n *Network) enqueue(now sim.Time, pid PortID, p *Packet) {
	if n.voqOn && n.voqTake(now, pid, p) {
		return
	}
	port := &n.Ports[pid]
	if port.Down {
		n.dropLinkDown(port, p)
		return
	}
	if p.ingress != 0 && n.pfcOverflow(PortID(p.ingress-1), p) {
		n.dropAt(&n.Nodes[port.Node], p, DropHeadroom)
		return
	}
	idle := now >= port.txEnd
	victim := n.credOn && n.creditVictim(port, p) // IB CC: a credit-blocked egress does not mark (credit.go)
	res, why := port.q.enqueue(now, p, port.LastHop, idle, n.lineBlock(pid))
	if victim {
		p.Flags |= ECT
	}
	if res == dropped {
		n.drop(p, why)
		return
	}
	if p.ingress != 0 {
		n.pfcIn(now, PortID(p.ingress-1), p)
	}
	if idle {
		n.startTx(now, pid, port)
	} else if !port.txEvent {
		port.txEvent = true
		n.sim.At(port.txEnd, n.kTx, int32(pid), 0)
	}
}

// startTx takes the next packet off port's idle transmitter's queues, if any, and puts it on
// the link at once: it arrives at the end of its serialisation plus the link delay. The link
// may lose it (random loss, bit errors, an entropy filter: the draw is made here, in
// transmission order), and a link failure before it arrives drops it then (its epoch stamp).
// A transmitter event is scheduled at the end of the serialisation if packets wait behind it
// or the port is a NIC's.
func (n *Network) startTx(now sim.Time, pid PortID, port *Port) {
	var k int32
	if n.credOn {
		n.creditBlock(now, port)
		if n.arbOn() && port.q.busy>>port.q.p.classes == 0 {
			k = n.arbDequeue(now, pid, port)
		} else {
			k = port.q.dequeue(now, n.lineBlock(pid), port.paused)
		}
	} else {
		k = port.q.dequeue(now, n.lineBlock(pid), port.paused)
	}
	if k < 0 {
		return
	}
	sl := &port.q.s[k]
	if n.linkFC {
		if n.pfcOn {
			n.pfcOut(now, sl.p)
		} else {
			n.creditSend(port, k)
			n.creditRelease(now, sl.p)
			n.creditBlock(now, port)
		}
	}
	port.txEnd = now + port.Rate.TxTime(sl.v)
	if port.nic {
		sl.p.SentAt = now // the NIC's transmit timestamp: host queueing is not network delay
	}
	if port.lossy && port.faults.lost(sl.p) {
		p := sl.p
		port.q.release(k)
		s := port.q.coldFor(p)
		s.Drops[DropLoss]++
		s.dropBytes += int64(p.Size)
		if n.credOn {
			// Lost on the wire: the receiver resynchronises its count from the sender's
			// FCTBS [IBTA vol 1 §7.9.4.2], which returns the blocks.
			n.creditFree(now, port.Peer, port.q.class(p), int64(p.Size))
		}
		n.drop(p, DropLoss)
	} else {
		at := port.txEnd + port.Delay
		sl.epoch = uint16(port.epoch)
		if t := port.flTail; t >= 0 {
			tail := &port.q.s[t]
			if t := sim.Time(tail.v); t > at {
				at = t // Delay was lowered mid-run: the link stays a FIFO
			}
			tail.next, tail.v = k, int64(at)
		} else {
			port.flHead = k
			n.sim.At(at, n.kArrive, int32(pid), 0)
		}
		sl.v, sl.next = int64(at), -1
		port.flTail = k
	}
	if !port.txEvent && (port.nic || port.q.sendable(port.paused)) {
		port.txEvent = true
		n.sim.At(port.txEnd, n.kTx, int32(pid), 0)
	}
	if n.voqOn {
		n.voqServe(now, pid)
	}
}

// onTxDone: a serialisation ended; start the next one. A port that went down by a direct
// write of Down flushes its queues here instead. A NIC port then tells the transports it has
// room (SetNICReady).
func (n *Network) onTxDone(now sim.Time, obj int32, _ uint64) {
	pid := PortID(obj)
	port := &n.Ports[pid]
	port.txEvent = false
	switch {
	case now < port.txEnd:
		// A same-time enqueue found the transmitter free and started the next packet before
		// this event ran: wait for that one.
		if port.nic || port.q.sendable(port.paused) {
			port.txEvent = true
			n.sim.At(port.txEnd, n.kTx, obj, 0)
		}
		return
	case port.Down:
		n.flush(now, port)
	default:
		n.startTx(now, pid, port)
	}
	if port.nic && n.nicReady != nil && port.q.empty() {
		n.nicReady(now, int32(port.Node), int(port.Local))
	}
}

// onArrive: the head packet on port obj's link reached the peer.
func (n *Network) onArrive(now sim.Time, obj int32, _ uint64) {
	port := &n.Ports[obj]
	k := port.flHead
	sl := &port.q.s[k]
	p, epoch, hop := sl.p, sl.epoch, sl.hop
	if port.flHead = sl.next; port.flHead >= 0 {
		n.sim.At(sim.Time(sl.v), n.kArrive, obj, 0)
	} else {
		port.flTail = -1
	}
	port.q.release(k)
	if port.Down || epoch != uint16(port.epoch) {
		n.arLostInFlight(port, p)
		if !n.Nodes[port.Node].failed && n.Nodes[n.Ports[port.Peer].Node].failed {
			n.C.AtFailedSwitch++ // on the wire into the failed switch
		}
		n.dropLinkDown(port, p) // on the wire when the link failed, even if it is up again
		return
	}
	if port.peerHost {
		if NodeID(p.Dst) != port.peerNode {
			// Misrouted (a source route leading elsewhere): the receiver cannot tell which
			// host it runs on, so handing it the packet would corrupt the Dst's transport.
			n.dropAt(&n.Nodes[port.peerNode], p, DropNoRoute)
			return
		}
		if n.credOn {
			n.creditFree(now, port.Peer, n.Ports[port.Peer].q.class(p), int64(p.Size)) // the adapter takes it at once
		}
		n.deliver(now, p)
		return
	}
	if n.linkFC {
		if !n.pfcOn {
			n.creditHold(&n.Ports[port.Peer], p)
			p.ingress = int32(port.Peer) + 1 // its blocks are freed when it leaves the switch
		} else if n.pfcClass(p) >= 0 {
			p.ingress = int32(port.Peer) + 1 // accounted at the egress it is queued at
		}
	}
	if n.voqOn {
		n.voqArrive(port.Peer)
	}
	if hop != 0 {
		// The next source-route hop, read when the packet was queued here (slot.hop).
		hot := &n.hot[port.peerNode]
		if local := int(hop - 1); !hot.blackhole && local < len(hot.ports) && hot.ports[local] >= 0 {
			p.Hop++
			n.enqueue(now, hot.ports[local], p)
			return
		}
	}
	n.forward(now, port.peerNode, p)
}

// forward picks an egress of switch id for p and enqueues it there.
func (n *Network) forward(now sim.Time, id NodeID, p *Packet) {
	hot := &n.hot[id]
	if hot.blackhole {
		n.dropAt(&n.Nodes[id], p, DropBlackhole)
		return
	}
	var local int
	if p.RouteLen > 0 {
		if p.Hop >= p.RouteLen || int(p.Hop) >= MaxHops { // RouteLen may be set beyond MaxHops
			n.dropAt(&n.Nodes[id], p, DropNoRoute)
			return
		}
		local = int(p.Route[p.Hop])
		p.Hop++
	} else {
		node := &n.Nodes[id]
		g := node.Routes.Lookup(p.Dst)
		if len(g) == 0 {
			n.dropAt(node, p, DropNoRoute)
			return
		}
		if n.ar != nil {
			if local = n.forwardAdaptive(now, id, p, g); local < 0 {
				return
			}
		} else {
			local = int(g[ecmpIndex(node.seed, p, len(g))])
		}
	}
	if local >= len(hot.ports) || hot.ports[local] < 0 {
		n.dropAt(&n.Nodes[id], p, DropNoRoute)
		return
	}
	n.enqueue(now, hot.ports[local], p)
}

// ecmpIndex hashes p's 5-tuple and entropy with a switch seed into [0, k): a splitmix64 chain
// over (proto, src, dst) then (sport, dport, entropy), reduced by multiply-shift (Lemire).
// Different seeds give independent choices at each tier, as real switches do with per-switch
// hash seeds. Proto offsets the seed (an odd multiplier keeps protos apart) rather than sharing
// bits with the ports, where it would alias SrcPort's high byte.
func ecmpIndex(seed uint64, p *Packet, k int) int {
	seed += uint64(p.Proto) * 0xd6e8feb86659fd93
	h := sim.Mix64(seed ^ uint64(uint32(p.Src))<<32 ^ uint64(uint32(p.Dst)))
	h = sim.Mix64(h ^ uint64(p.SrcPort)<<48 ^ uint64(p.DstPort)<<32 ^ uint64(p.Entropy))
	hi, _ := bits.Mul64(h, uint64(k))
	return int(hi)
}

// ECMPIndex exposes the ECMP hash for tests and path-prediction tools: the group index switch
// node picks for a packet with p's 5-tuple and entropy among k members.
func (n *Network) ECMPIndex(node NodeID, p *Packet, k int) int {
	return ecmpIndex(n.Nodes[node].seed, p, k)
}

// deliver hands p to its transport and frees it.
func (n *Network) deliver(now sim.Time, p *Packet) {
	if p.Flags&Trimmed != 0 {
		n.C.DeliveredTrimmed++
	} else {
		n.C.DeliveredWhole++
	}
	if r := n.recv[p.Proto]; r != nil {
		r(now, p)
	}
	n.Free(p)
}

// dropLinkDown drops p, which port sent onto its failed link, counting it in the port's
// statistics under the queue it left.
func (n *Network) dropLinkDown(port *Port, p *Packet) {
	if n.Nodes[port.Node].failed {
		n.C.AtFailedSwitch++
	}
	s := port.q.coldFor(p)
	s.Drops[DropLinkDown]++
	s.dropBytes += int64(p.Size)
	n.drop(p, DropLinkDown)
}

// flush drops, as link_down, every packet queued at port (the link went down); with adaptive
// routing a switch forwards them elsewhere instead (arRescue).
func (n *Network) flush(now sim.Time, port *Port) {
	if n.ar != nil && n.arRescue(now, port) {
		return // adaptive routing forwards the queue elsewhere (adaptive_rescue.go)
	}
	out := port.q.flush(now)
	failed := n.Nodes[port.Node].failed
	for p := out.pop(); p != nil; p = out.pop() {
		if failed {
			n.C.AtFailedSwitch++
		}
		if n.pfcOn {
			n.pfcOut(now, p)
		} else if n.credOn {
			n.creditRelease(now, p)
		}
		n.drop(p, DropLinkDown)
	}
	if n.voqOn {
		n.voqFlushed(now, port)
	}
}

// dropAt drops p under why, counting it in node's own drops (not a port queue's).
func (n *Network) dropAt(node *Node, p *Packet, why DropReason) {
	if why == DropLinkDown && node.failed {
		n.C.AtFailedSwitch++
	}
	node.Drops[why]++
	n.drop(p, why)
}

// drop counts p under why in the network's books and frees it. Callers also count it where it
// happened (a port queue's or a node's Drops), which Audit checks.
func (n *Network) drop(p *Packet, why DropReason) {
	if n.credOn && p.ingress != 0 {
		n.creditRelease(n.sim.Now(), p) // dropped inside a switch: its buffer is free again
	}
	n.C.Dropped[why]++
	n.Free(p)
}

// InFlight counts packets still inside the fabric: queued, being serialised, or on a link.
func (n *Network) InFlight() int64 {
	var k int64
	for i := range n.Ports {
		k += int64(n.Ports[i].held())
	}
	if n.voqOn {
		k += n.voq.held
	}
	return k
}

// held counts the packets port p holds: queued, or on its link (the packet being serialised is
// on the link already).
func (p *Port) held() int {
	k := 0
	for s := p.flHead; s >= 0; s = p.q.s[s].next {
		k++
	}
	for i := range p.q.lines {
		k += int(p.q.lines[i].n)
	}
	return k
}

// Occupancy is what one port holds at a moment: for reports on runs that did not drain.
type Occupancy struct {
	Port        PortID
	Name        string
	Packets     int   // queued, being serialised or on the link
	QueuedBytes int64 // bytes waiting in its queues
}

// Occupied returns the ports holding packets, most packets first (ties by port name), at most
// max of them (max <= 0: all).
func (n *Network) Occupied(max int) []Occupancy {
	var out []Occupancy
	for i := range n.Ports {
		pt := &n.Ports[i]
		if k := pt.held(); k > 0 {
			out = append(out, Occupancy{Port: PortID(i), Name: pt.Name, Packets: k, QueuedBytes: pt.QueueBytes()})
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Packets != out[b].Packets {
			return out[a].Packets > out[b].Packets
		}
		return out[a].Name < out[b].Name
	})
	if max > 0 && len(out) > max {
		out = out[:max]
	}
	return out
}

// Audit checks packet conservation: injected = delivered whole + delivered trimmed + dropped +
// in flight. It returns an error with the books when they do not balance. It also checks the
// invariants behind those books, naming the first port that breaks one: each queue's list
// holds as many packets as its count and its Depth is the sum of their sizes (TxPackets and
// TxBytes are derived: EnqPackets = TxPackets + Flushed + queued, likewise in bytes, and
// neither may be negative); every slot of the port's slab is free or holds a queued packet or
// one on the link; a port with packets queued has its transmitter event pending (nothing
// waits forever); a link's packets arrive in order; and every drop was also counted where it
// happened: for each reason, the ports' queue counts (Port.Totals) plus the nodes' own counts
// (Node.Drops) equal the network's.
func (n *Network) Audit() error {
	c := &n.C
	inflight := n.InFlight()
	acc := c.DeliveredWhole + c.DeliveredTrimmed + c.DroppedTotal() + inflight
	if acc != c.Injected {
		return fmt.Errorf("fabric: packet conservation broken: injected %d != delivered %d + trimmed %d + dropped %d + in flight %d (difference %d)",
			c.Injected, c.DeliveredWhole, c.DeliveredTrimmed, c.DroppedTotal(), inflight, c.Injected-acc)
	}
	if n.voqOn {
		if err := n.voqAudit(); err != nil {
			return err
		}
	}
	var portDrops, nodeDrops [NumDropReasons]int64
	for i := range n.Ports {
		pt := &n.Ports[i]
		if err := pt.audit(); err != nil {
			return fmt.Errorf("fabric: port %s: %w", pt.Name, err)
		}
		t := pt.Totals()
		for r := range portDrops {
			portDrops[r] += t.Drops[r]
		}
	}
	for i := range n.Nodes {
		for r, d := range n.Nodes[i].Drops {
			nodeDrops[r] += d
		}
	}
	for r := DropReason(0); r < NumDropReasons; r++ {
		if portDrops[r]+nodeDrops[r] != c.Dropped[r] {
			return fmt.Errorf("fabric: %s drops: ports count %d, nodes %d, network %d", r, portDrops[r], nodeDrops[r], c.Dropped[r])
		}
	}
	return nil
}

// audit checks the port's queue and link invariants (see Network.Audit).
func (p *Port) audit() error {
	q := &p.q
	var bytes int64
	used := 0 // slots in the queues and on the link
	for i := range q.lines {
		name := "header"
		if i < q.p.classes {
			name = fmt.Sprintf("class %d", i)
		}
		l, c := &q.lines[i], &q.aux.cold[i]
		var k, b int64
		last := int32(-1)
		for x := l.head; x >= 0 && k <= int64(len(q.s)); x = q.s[x].next {
			sl := &q.s[x]
			if sl.p == nil || int64(sl.p.Size) != sl.v {
				return fmt.Errorf("%s queue: slot %d holds no packet or a wrong size", name, x)
			}
			k++
			b += sl.v
			last = x
		}
		switch {
		case k != int64(l.n) || last != l.tail:
			return fmt.Errorf("%s queue: list holds %d packets, count says %d", name, k, l.n)
		case b != int64(l.depth):
			return fmt.Errorf("%s queue: holds %d B, depth says %d B", name, b, l.depth)
		case (k > 0) != (q.busy&(1<<i) != 0):
			return fmt.Errorf("%s queue: holds %d packets, busy flag %v", name, k, q.busy&(1<<i) != 0)
		case c.flushed > l.enqPackets-k || c.flushedBytes > l.enqBytes-b:
			return fmt.Errorf("%s queue: enqueued %d (%d B), flushed %d (%d B), queued %d (%d B)", name, l.enqPackets, l.enqBytes, c.flushed, c.flushedBytes, k, b)
		}
		bytes += b
		used += int(k)
	}
	if bytes != q.bytes {
		return fmt.Errorf("queues hold %d B, port count says %d B", bytes, q.bytes)
	}
	if !p.txEvent && q.sendable(p.paused) {
		return fmt.Errorf("%d B queued with no transmitter event pending", p.QueueBytes())
	}
	last := int32(-1)
	for x := p.flHead; x >= 0 && used <= len(q.s); x = q.s[x].next {
		if q.s[x].p == nil {
			return fmt.Errorf("link slot %d holds no packet", x)
		}
		// Each slot but the last holds the next packet's arrival time; the last its own.
		if nx := q.s[x].next; nx >= 0 && q.s[nx].v < q.s[x].v {
			return fmt.Errorf("link out of order: %v then %v", sim.Time(q.s[x].v), sim.Time(q.s[nx].v))
		}
		used++
		last = x
	}
	if last != p.flTail {
		return fmt.Errorf("link list ends at slot %d, tail says %d", last, p.flTail)
	}
	free := 0
	for x := q.free; x >= 0 && free <= len(q.s); x = q.s[x].next {
		free++
	}
	if used+free != len(q.s) {
		return fmt.Errorf("slab of %d slots: %d hold packets, %d free", len(q.s), used, free)
	}
	return nil
}

// PortByName returns the port with the given stable name. It scans; use it for setup and
// reports, not per packet.
func (n *Network) PortByName(name string) (PortID, bool) {
	for i := range n.Ports {
		if n.Ports[i].Name == name {
			return PortID(i), true
		}
	}
	return -1, false
}

// ECMPPath returns the directed ports (egresses) a packet with p's 5-tuple and entropy takes
// from host src's NIC port on plane to its destination p.Dst, hashed at every switch as
// forward does (no source route; failed links are not avoided), appended to buf[:0]. Errors:
// no route at a switch, or more hops than any loop-free path has.
func (n *Network) ECMPPath(src int32, plane int, p *Packet, buf []PortID) ([]PortID, error) {
	buf = buf[:0]
	if int(src) < 0 || int(src) >= len(n.Nodes) || plane < 0 || plane >= len(n.Nodes[src].Ports) {
		return nil, fmt.Errorf("fabric: ECMPPath: no host %d plane %d", src, plane)
	}
	pid := n.Nodes[src].Ports[plane]
	for hop := 0; ; hop++ {
		if pid < 0 || hop > len(n.Nodes) {
			return nil, fmt.Errorf("fabric: ECMPPath h%d -> h%d: no route after %d hops", src, p.Dst, hop)
		}
		buf = append(buf, pid)
		port := &n.Ports[pid]
		if port.peerHost {
			return buf, nil
		}
		node := &n.Nodes[port.peerNode]
		g := node.Routes.Lookup(p.Dst)
		if len(g) == 0 {
			return nil, fmt.Errorf("fabric: ECMPPath h%d -> h%d: no route at %s", src, p.Dst, node.Name)
		}
		local := int(g[ecmpIndex(node.seed, p, len(g))])
		if local >= len(node.Ports) {
			return nil, fmt.Errorf("fabric: ECMPPath h%d -> h%d: bad port at %s", src, p.Dst, node.Name)
		}
		pid = node.Ports[local]
	}
}
