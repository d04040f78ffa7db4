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
type Packet struct {
	ID   uint64 // unique per injected packet, in injection order
	Src  int32  // source host index
	Dst  int32  // destination host index
	Size int32  // bytes on the wire, all headers included; HeaderBytes once trimmed
	Flow int32  // flow or QP index, owned by the source transport (for accounting)

	SrcPort uint16 // UDP source port (RoCEv2 puts its ECMP entropy here)
	DstPort uint16 // UDP destination port (4791 for RoCEv2)
	Entropy uint32 // entropy value (EV): hashed by ECMP, or the index of a source route

	Proto Proto
	Class uint8 // strict-priority class at each queue, 0 = highest
	Flags Flags

	// Source route: Route[Hop] is the local egress port at the next switch. RouteLen 0 means
	// the switches forward by ECMP hash instead [MRC §2.2: static SRv6 micro-SIDs].
	Route    [MaxHops]uint16
	RouteLen uint8
	Hop      uint8

	SentAt sim.Time // when the source NIC began sending it (its transmit timestamp); Send sets it first

	// Transport-owned header words; see the owning transport package.
	Seq, Ack, Bitmap, Aux uint64
	Op                    uint8

	// epoch is the sending port's link epoch (its count of down transitions) when the packet
	// started serialising there; a different epoch when it leaves or arrives means the link
	// failed meanwhile, and the packet is lost even if the link is up again.
	epoch    uint32
	arriveAt sim.Time // on a link: when the last bit reaches the peer
	next     *Packet  // intrusive FIFO / free-list link
}

// SetRoute copies a source route into the packet and resets its hop counter. Hops beyond
// MaxHops are an error reported as a NoRoute drop when the packet reaches that switch.
func (p *Packet) SetRoute(hops []uint16) {
	n := copy(p.Route[:], hops)
	p.RouteLen = uint8(n)
	p.Hop = 0
}

// fifo is an intrusive singly-linked packet queue: push and pop allocate nothing.
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
