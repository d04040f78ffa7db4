package fabric

import "github.com/lockstepsim/lockstep/sim"

// MaxHops is the longest source route a packet can carry: one egress port per switch. A 3-tier
// Clos needs 5 (T0, T1, T2, T1, T0); 8 leaves room for longer fabrics.
const MaxHops = 8

// HeaderBytes is the size of a trimmed packet: the headers that survive trimming, as in UEC
// §4.1 and NDP (64 B).
const HeaderBytes = 64

// Flags are per-packet header bits the fabric reads or sets.
type Flags uint16

// Packet flags.
const (
	// ECT: the packet is ECN-capable; queues mark it CE instead of ignoring congestion (RFC 3168).
	ECT Flags = 1 << iota
	// CE: congestion experienced, set by a queue's RED marker (RFC 3168 §5).
	CE
	// Trimmable: a congested queue may cut the packet to HeaderBytes instead of dropping it.
	Trimmable
	// Trimmed: the packet was cut to HeaderBytes by a congested queue (UEC §4.1).
	Trimmed
	// TrimmedLastHop: the trim happened on a port facing the destination host (incast), which
	// the receiver reports as NACK reason TRIMMED_LASTHOP [API].
	TrimmedLastHop
)

// Proto says which transport owns a packet, so the destination NIC hands it to the right
// engine. Transports register their own value with Network.SetReceiver.
type Proto uint8

// Protocols known to the fabric. Later transports add theirs below ProtoMax.
const (
	ProtoRaw Proto = iota // paced raw traffic, no reliability (package traffic)
	ProtoMRC
	ProtoRoCE
	ProtoIB
	ProtoUET
	ProtoMax = 16
)

// Packet is one frame on the wire. Packets come from the Network's free list (NewPacket) and go
// back to it when delivered or dropped; a receiver must copy what it needs during its callback.
//
// The fabric reads Src, Dst, Size, Class, Flags, the 5-tuple and Route; the transport-owned
// header words (Seq, Ack, Bitmap, Aux, Op) are opaque to it, and their meaning is defined by the
// package of the packet's Proto (a PSN, a cumulative ACK, a SACK bitmap...). This keeps
// per-transport fields inside their package without a per-packet interface or allocation.
//
// Layout: a packet is 128 bytes, so the allocator places it on two whole cache lines, and every
// field a switch reads or writes comes first, in the first line; the second line (ID, SentAt,
// the transport words) is touched only at the ends, by Send and the receiver. A packet is cold
// in the cache at nearly every hop of a large run, so this halves what a hop brings in; and a
// hop reads it once, when it arrives at a switch (route, class, flags): while it waits in a
// queue and crosses the link, its size, link epoch and arrival time are in the port's slot.
type Packet struct {
	next *Packet // free-list link (and the list of packets a flush drops)

	Size int32 // bytes on the wire, all headers included; HeaderBytes once trimmed
	Dst  int32 // destination host index
	Src  int32 // source host index

	Entropy uint32 // entropy value (EV): hashed by ECMP, or the index of a source route
	Flags   Flags
	Proto   Proto
	Class   uint8 // strict-priority class at each queue, 0 = highest

	// Source route: Route[Hop] is the local egress port at the next switch. RouteLen 0 means
	// the switches forward by ECMP hash instead [MRC §2.2: static SRv6 micro-SIDs].
	Route    [MaxHops]uint16
	RouteLen uint8
	Hop      uint8

	SrcPort uint16 // UDP source port (RoCEv2 puts its ECMP entropy here)
	DstPort uint16 // UDP destination port (4791 for RoCEv2)
	Op      uint8  // transport-owned header word; see the owning transport package
	Flow    int32  // flow or QP index, owned by the source transport (for accounting)
	ingress int32  // PFC: the switch ingress port it is accounted to, plus one; 0 = none
	voqOut  int32  // the egress port it waits for in a switch ingress buffer (voq.go)

	// Second cache line: the ends only.
	ID     uint64   // unique per injected packet, in injection order
	SentAt sim.Time // when the source NIC began sending it (its transmit timestamp); Send sets it first

	// Transport-owned header words; see the owning transport package.
	Seq, Ack, Bitmap, Aux uint64

	// Adaptive routing's detours (adaptive_detour.go), read only by a packet that took one:
	// the switch that sent it off its minimal route, and the VL its ingress buffer holds it in
	// after it moved to the escape VL.
	detourFrom int32
	heldClass  uint8

	_ [11]byte // pad to 128 bytes (TestPacketLayout)
}

// SetRoute copies a source route into the packet and resets its hop counter. Hops beyond
// MaxHops are an error reported as a NoRoute drop when the packet reaches that switch.
func (p *Packet) SetRoute(hops []uint16) {
	n := copy(p.Route[:], hops)
	p.RouteLen = uint8(n)
	p.Hop = 0
}

// fifo is an intrusive singly-linked packet list (through Packet.next): push and pop allocate
// nothing. Queues and links hold slots (see slot); a fifo carries the packets a flush drops.
type fifo struct {
	head, tail *Packet
	n          int
}

func (f *fifo) push(p *Packet) {
	p.next = nil
	if f.tail == nil {
		f.head = p
	} else {
		f.tail.next = p
	}
	f.tail = p
	f.n++
}

func (f *fifo) pop() *Packet {
	p := f.head
	if p == nil {
		return nil
	}
	f.head = p.next
	if f.head == nil {
		f.tail = nil
	}
	p.next = nil
	f.n--
	return p
}

// Route is a source route held outside a packet (by a flow, an EV table): the local egress
// port at each switch in order. Copying it into a packet (Packet.UseRoute) allocates nothing.
type Route struct {
	Hops [MaxHops]uint16
	Len  uint8
}

// UseRoute copies r into the packet and resets its hop counter.
func (p *Packet) UseRoute(r *Route) {
	p.Route = r.Hops
	p.RouteLen = r.Len
	p.Hop = 0
}

// slot is one packet a port holds, queued in one of its queues or on its link. A port keeps
// its slots in one slab (portQueue.s), and its queues and its link are lists of slot indices,
// so moving a packet from a queue onto the link, and finding the size of the next packet to
// send or the arrival time of the next to arrive, read the port's slab and not the packets,
// which are cold in the cache by then in a large run.
type slot struct {
	p *Packet
	// v is the packet's wire size while it is queued. On the link it is an arrival time (ps):
	// the packet's own while it is the last on the link, then, once another follows it, that
	// one's. So an arrival reads the next arrival time from the slot it frees, not the next
	// slot, and the link's last arrival time (which keeps the link a FIFO) is in the last slot.
	v    int64
	next int32 // the next slot in the same queue or link, or -1
	// epoch is, on the link, the low 16 bits of the port's epoch when the packet started
	// serialising (a packet on the wire for 65,536 link failures would be needed to alias).
	epoch uint16
	// hop is the packet's next egress at the switch this port leads to, plus one, read from
	// its source route when it was queued (the packet is in the cache then); 0 when it has no
	// next source-route hop. The arrival then finds its egress port without first reading the
	// packet, so the two cache misses (packet and egress port) overlap instead of queueing.
	hop uint16
}
