// Package roce is a sans-IO engine for the RoCEv2 baseline: one reliable connection (RC QP)
// carrying RDMA Write transfers over one ECMP path (one UDP source port per QP), go-back-N
// recovery driven by sequence-error NAKs and a retransmission timeout, and DCQCN congestion
// control (a CNP-driven, paced rate) [DCQCN; IBTA; docs/protocols.md, the "RoCEv2:" sections].
//
// Sans-IO (docs/style.md §3), like transport/mrc: a Sender or Receiver sees only the time passed in
// and the Headers handed to it. It appends the Headers it wants sent to an outbox the caller
// drains, and reports one deadline the caller keeps a single timer for. Nothing here imports the
// simulator's kernel or fabric.
//
// Sources: Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015 =
// [DCQCN]; InfiniBand Architecture Specification Vol. 1, chapter 9 (transport layer: BTH, RETH,
// AETH, PSNs, the requester's and responder's RC behaviour) = [IBTA]; its Annex A17 (RoCEv2:
// UDP encapsulation, port 4791, CNPs) = [RoCEv2]; docs/protocols.md (the "RoCEv2:" sections).
// Values no source gives are lockstep defaults, named as such.
//
// Simplifications, all deliberate:
//   - PSNs are 32-bit here, compared modulo 2^32; [IBTA §9.7] PSNs are 24-bit. Every rule
//     this package applies (in order, before, after) is the same as long as fewer than 2^23
//     PSNs are outstanding, which the Sender enforces as [IBTA §9.7] does.
//   - Only RDMA Write (First/Middle/Last/Only) is modelled; reads, sends and atomics are not.
//   - The responder never runs out of resources, so there are no RNR NAKs.
package roce

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
)

// Header sizes on the wire, in bytes. The preamble and inter-frame gap (20 B) are not counted,
// as in transport/mrc: the fabric serialises frames, not line symbols.
const (
	// EthernetBytes is the MAC header and FCS.
	EthernetBytes = 14 + 4
	// IPv6Bytes is the IP header. RoCEv2 runs over IPv4 (20 B) or IPv6 (40 B) [RoCEv2 Annex A17];
	// lockstep takes IPv6 to match transport/mrc's inner header, so both baselines pay for the
	// same IP version. Set Config.HeaderBytes to 62 for IPv4.
	IPv6Bytes = 40
	// UDPBytes is the UDP header (destination port UDPPort).
	UDPBytes = 8
	// BTHBytes is the base transport header: opcode, destination QP, PSN, AckReq bit [IBTA §9.2].
	BTHBytes = 12
	// RETHBytes is the RDMA extended transport header (virtual address, key, DMA length). It
	// rides only on the first packet of an RDMA Write (opcodes WRITE First and WRITE Only)
	// [IBTA §9.3: RETH]; Middle and Last packets are placed after the previous one.
	RETHBytes = 16
	// AETHBytes is the ACK extended transport header (syndrome, MSN) on ACKs and NAKs
	// [IBTA §9.3: AETH].
	AETHBytes = 4
	// ICRCBytes is the invariant CRC every RoCEv2 packet ends with [RoCEv2 Annex A17].
	ICRCBytes = 4
	// CNPPayloadBytes is a CNP's reserved payload after the BTH [RoCEv2 Annex A17: CNP format].
	CNPPayloadBytes = 16

	// DefaultHeaderBytes is the overhead every RoCEv2 packet pays: Ethernet + IPv6 + UDP +
	// BTH + ICRC = 82 B. A data packet adds RETHBytes when it opens a transfer, an ACK or NAK
	// adds AETHBytes, a CNP adds CNPPayloadBytes.
	DefaultHeaderBytes = EthernetBytes + IPv6Bytes + UDPBytes + BTHBytes + ICRCBytes
)

// UDPPort is the RoCEv2 UDP destination port (IANA-assigned) [RoCEv2 Annex A17].
const UDPPort = 4791

// UDPSourcePort returns the UDP source port of QP qp: a hash of (seed, qp) in 0xC000..0xFFFF.
// RoCEv2 leaves the source port to the sender as ECMP entropy [RoCEv2 Annex A17]; Linux derives
// it from the QP numbers' flow label into the same range (rdma_flow_label_to_udp_sport), which
// is symmetric, so the responder answers from the same port. Every packet of a QP carries it,
// so a QP follows one hashed path.
func UDPSourcePort(seed uint64, qp uint32) uint16 {
	return 0xC000 | uint16(sim.Mix64(seed^uint64(qp)*0x9e3779b97f4a7c15)&0x3FFF)
}

// Kind is the RoCEv2 packet type.
type Kind uint8

// Packet kinds. Zero is not a kind, so a zeroed header is recognisably empty.
const (
	// Data is an RDMA Write packet [IBTA §9.4: RDMA Write].
	Data Kind = iota + 1
	// Ack is a positive acknowledgement: every PSN below Header.PSN was received [IBTA §9.7, responder].
	Ack
	// Nak is a NAK with the PSN-sequence-error syndrome: Header.PSN is the PSN the responder
	// expects; everything below it was received, everything from it on must be resent
	// [IBTA §9.7, responder: out-of-sequence requests; AETH NAK syndromes].
	Nak
	// CNP is a congestion notification packet from the notification point (receiver) to the
	// reaction point (sender) [RoCEv2 Annex A17: CNP; DCQCN §3.1].
	CNP
	numKinds
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case Data:
		return "data"
	case Ack:
		return "ack"
	case Nak:
		return "nak"
	case CNP:
		return "cnp"
	}
	return "kind?"
}

// Seg is a data packet's place in its transfer, the BTH opcode's RDMA WRITE First, Middle, Last
// or Only [IBTA §9.2: BTH opcodes]. The responder learns transfer boundaries from it, since RC
// delivers in order.
type Seg uint8

// Segments.
const (
	SegFirst  Seg = iota // first of several packets; carries RETH
	SegMiddle            // neither first nor last
	SegLast              // last of several packets; completes the transfer
	SegOnly              // the transfer's only packet; carries RETH and completes it
)

// String names the segment as the opcode does.
func (s Seg) String() string {
	switch s {
	case SegFirst:
		return "first"
	case SegMiddle:
		return "middle"
	case SegLast:
		return "last"
	case SegOnly:
		return "only"
	}
	return "seg?"
}

// opens reports whether the segment starts a transfer (and so carries RETH).
func (s Seg) opens() bool { return s == SegFirst || s == SegOnly }

// closes reports whether the segment ends a transfer.
func (s Seg) closes() bool { return s == SegLast || s == SegOnly }

// Header is the RoCEv2 header of one packet, the engine's unit of I/O. Which fields matter
// depends on Kind; the rest are zero. Pack and Unpack map it to and from the fabric's
// transport-owned words.
type Header struct {
	Kind Kind
	QP   uint32 // connection number, the same at both ends (BTH destination QP)

	// PSN: on Data the packet's sequence number; on Ack and Nak the responder's expected PSN
	// (every PSN below it was received). [IBTA §9.7, responder] puts ePSN-1 in an ACK's BTH; carrying
	// ePSN itself holds the same information and reads the same for ACK and NAK.
	PSN uint32

	// Data only.
	Seg    Seg   // place in the transfer (BTH opcode)
	AckReq bool  // BTH A bit: the requester asks for an ACK at once [IBTA §9.2: BTH AckReq]
	Len    int32 // payload bytes, 0..Config.PayloadBytes
	// MsgBytes is the transfer's length, RETH's DMA length, on SegFirst and SegOnly packets
	// (0 on the others) [IBTA §9.3: RETH].
	MsgBytes int64

	// Wire is the packet's size on the wire in bytes, all headers included, set by the engine
	// on every Header it emits (the adapter copies it to the fabric packet's size). Pack does
	// not carry it, and engines ignore it on input.
	Wire int32
}

// Words is a Header packed into the fabric's transport-owned packet fields: Op and two 64-bit
// words (the adapter stores them in Packet.Op, Packet.Seq and Packet.Ack). The QP travels
// apart, in the packet's flow field, as transport/mrc does.
//
// Layout:
//
//	Op   bits 0-2 Kind, bits 3-4 Seg, bit 5 AckReq (bits 3-5 zero unless Kind is Data)
//	Seq  bits 0-31 PSN, bits 32-63 Len (Data only)
//	Ack  MsgBytes (Data, SegFirst and SegOnly only)
type Words struct {
	Op       uint8
	Seq, Ack uint64
}

const (
	opKindMask = 0x07
	opSegShift = 3
	opSegMask  = 0x03 << opSegShift
	opAckReq   = 1 << 5
)

// Pack encodes h's on-the-wire fields (everything but QP and Wire).
func (h *Header) Pack() Words {
	w := Words{Op: uint8(h.Kind) & opKindMask, Seq: uint64(h.PSN)}
	if h.Kind == Data {
		w.Op |= uint8(h.Seg) << opSegShift & opSegMask
		if h.AckReq {
			w.Op |= opAckReq
		}
		w.Seq |= uint64(uint32(h.Len)) << 32
		w.Ack = uint64(h.MsgBytes)
	}
	return w
}

// MaxMsgBytes bounds a transfer's length (2^48 B = 256 TiB), so MsgBytes always fits a word
// with room to spare. [IBTA §9.3: RETH] allows 2^31 B per message; lockstep lets a runner post a
// whole flow as one transfer.
const MaxMsgBytes = int64(1) << 48

// MaxPayloadBytes is the largest payload a data packet may carry: IBTA's largest path MTU,
// 4096 B [IBTA: path MTU].
const MaxPayloadBytes = 4096

// Unpack decodes w into the Header of a packet of connection qp. Wire is left zero. Errors: an
// unknown kind, reserved Op bits set, Data fields on an answer, a data packet's length beyond
// MaxPayloadBytes, a DMA length on a Middle or Last packet or beyond MaxMsgBytes, or a non-zero
// PSN on a CNP. Unpack(Pack(h)) returns h (Wire aside) for every valid h, and Pack(Unpack(w))
// returns w for every w Unpack accepts.
func Unpack(qp uint32, w Words) (Header, error) {
	k := Kind(w.Op & opKindMask)
	if k == 0 || k >= numKinds {
		return Header{}, fmt.Errorf("roce: qp %d: op %#02x: unknown kind %d", qp, w.Op, k)
	}
	if w.Op&^(opKindMask|opSegMask|opAckReq) != 0 {
		return Header{}, fmt.Errorf("roce: qp %d: op %#02x: reserved bits set", qp, w.Op)
	}
	h := Header{Kind: k, QP: qp, PSN: uint32(w.Seq)}
	if k != Data {
		if w.Op&^opKindMask != 0 || w.Seq>>32 != 0 || w.Ack != 0 {
			return Header{}, fmt.Errorf("roce: qp %d: %v carries data fields (op %#02x, seq %#x, ack %#x)", qp, k, w.Op, w.Seq, w.Ack)
		}
		if k == CNP && h.PSN != 0 {
			return Header{}, fmt.Errorf("roce: qp %d: cnp carries PSN %d", qp, h.PSN)
		}
		return h, nil
	}
	h.Seg = Seg(w.Op & opSegMask >> opSegShift)
	h.AckReq = w.Op&opAckReq != 0
	n := w.Seq >> 32
	if n > MaxPayloadBytes {
		return Header{}, fmt.Errorf("roce: qp %d: data PSN %d: length %d B beyond %d B", qp, h.PSN, n, MaxPayloadBytes)
	}
	h.Len = int32(n)
	if !h.Seg.opens() && w.Ack != 0 {
		return Header{}, fmt.Errorf("roce: qp %d: data PSN %d: DMA length %d on a %v packet (RETH rides only on first and only)", qp, h.PSN, w.Ack, h.Seg)
	}
	if w.Ack > uint64(MaxMsgBytes) {
		return Header{}, fmt.Errorf("roce: qp %d: data PSN %d: DMA length %d B beyond %d B", qp, h.PSN, w.Ack, MaxMsgBytes)
	}
	h.MsgBytes = int64(w.Ack)
	return h, nil
}

// LocalAckTimeoutUnit is the granule of the IBTA local ACK timeout, 4.096 us [IBTA §9.7, requester: transport timer].
const LocalAckTimeoutUnit = 4096 * sim.Nanosecond

// LocalAckTimeout returns the IBTA local ACK timeout for exponent t (the QP attribute
// "timeout", 1..31): 4.096 us x 2^t [IBTA §9.7, requester: transport timer; ibv_modify_qp(3): timeout]. NCCL_IB_TIMEOUT,
// perftest's --timeout and HCCL_RDMA_TIMEOUT all set this t. t outside 0..31 gives 0.
func LocalAckTimeout(t int) sim.Time {
	if t < 0 || t > 31 {
		return 0
	}
	return LocalAckTimeoutUnit << uint(t)
}

// PSN helpers: comparisons modulo 2^32, valid while the two PSNs are less than 2^31 apart.
func before(a, b uint32) bool { return int32(a-b) < 0 }
func after(a, b uint32) bool  { return int32(a-b) > 0 }
