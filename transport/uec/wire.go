package uec

import (
	"fmt"
	"math"

	"github.com/lockstepsim/lockstep/sim"
)

// Kind is a UEC packet's type.
type Kind uint8

// Packet kinds [UEC §3.5 PDS: data, ACK (SACK), NACK].
const (
	Data Kind = 1 // a data packet (PSN, payload)
	ACK  Kind = 2 // a SACK: cumulative PSN + 64-bit bitmap, echoing one data packet
	NACK Kind = 3 // a negative acknowledgement of one data packet, with a reason
	// Credit is an RCCC credit grant, receiver to sender: Req carries the cumulative wire
	// bytes the receiver has granted the connection so far [UEC §3.6 RCCC].
	Credit Kind = 4
	// CreditRequest is an RCCC credit request, sender to receiver: Req carries the cumulative
	// wire bytes the sender has asked credit for (beyond its speculative allowance).
	CreditRequest Kind = 5
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case Data:
		return "data"
	case ACK:
		return "ack"
	case NACK:
		return "nack"
	case Credit:
		return "credit"
	case CreditRequest:
		return "credit_request"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// NackReason says why a data packet was NACKed [UEC §3.5 PDS NACK codes].
type NackReason uint8

// NACK reasons.
const (
	// NackTrimmed: the packet was trimmed by a congested fabric queue.
	NackTrimmed NackReason = 1
	// NackTrimmedLastHop: trimmed on the port facing the receiver (incast).
	NackTrimmedLastHop NackReason = 2
	// NackOutOfOrder: under ROD, a packet arrived ahead of the next expected PSN, which the
	// NACK names; the sender goes back to it.
	NackOutOfOrder NackReason = 3
)

// Header is one UEC packet's transport header, decoded. Which fields mean something depends
// on Kind:
//
//	Data: PSN, EV, Len (payload bytes, 1..2^24), MsgStart <= PSN < MsgEnd (the message's PSNs)
//	ACK:  PSN and EV of the data packet acknowledged, Cum (every PSN below it received),
//	      Bitmap (bit i: PSN Cum+1+i received), Echo (that packet's transmit time), ECE (it
//	      arrived CE-marked)
//	NACK: PSN and EV of the data packet, Cum, Echo, Reason
//	Credit, CreditRequest: EV, Req (cumulative bytes granted or requested, < 2^63)
//
// A data packet also carries Req under RCCC: the cumulative wire bytes its sender has asked
// credit for (0 without RCCC; below 2^39).
//
// TS is the packet's own transmit time, which the fabric stamps (Packet.SentAt); it is not
// packed.
type Header struct {
	Kind             Kind
	EV               uint16
	PSN              uint64
	Len              int32
	MsgStart, MsgEnd uint64
	Cum, Bitmap      uint64
	Echo             sim.Time
	ECE              bool
	Reason           NackReason
	Req              int64
	TS               sim.Time
}

// Words are the fabric packet's transport-owned fields a header packs into (fabric.Packet's
// Op, Entropy, Seq, Ack, Bitmap and Aux).
type Words struct {
	Op                    uint8
	Entropy               uint32
	Seq, Ack, Bitmap, Aux uint64
}

// Op layout: bits 0-1 the kind, bit 2 ECE (ACK), bits 3-4 the NACK reason, bit 5 a control
// packet (RCCC): kind bits 1 Credit, 2 CreditRequest.
const (
	opKindMask    = 0x3
	opECE         = 1 << 2
	opReasonShift = 3
	opReasonMask  = 0x3 << opReasonShift
	opCtl         = 1 << 5
	maxLen        = 1 << 24
	// lenBits: a data packet's Aux holds Len in its low 25 bits and Req above them.
	lenBits = 25
	maxReq  = 1<<(64-lenBits) - 1
)

// Pack encodes h into fabric words: Entropy = EV (the switches hash it), Seq = PSN; data:
// Ack = MsgStart, Bitmap = MsgEnd, Aux = Len | Req<<25; ACK and NACK: Ack = Cum, Bitmap =
// the SACK bitmap (0 in a NACK), Aux = Echo; Credit and CreditRequest: Seq = Req.
func (h *Header) Pack() Words {
	w := Words{Op: uint8(h.Kind) & opKindMask, Entropy: uint32(h.EV), Seq: h.PSN}
	switch h.Kind {
	case Data:
		w.Ack, w.Bitmap, w.Aux = h.MsgStart, h.MsgEnd, uint64(uint32(h.Len))|uint64(h.Req)<<lenBits
	case Credit, CreditRequest:
		w.Op = opCtl | uint8(h.Kind-Credit+1)
		w.Seq = uint64(h.Req)
	case ACK:
		if h.ECE {
			w.Op |= opECE
		}
		w.Ack, w.Bitmap, w.Aux = h.Cum, h.Bitmap, uint64(h.Echo)
	case NACK:
		w.Op |= uint8(h.Reason) << opReasonShift & opReasonMask
		w.Ack, w.Aux = h.Cum, uint64(h.Echo)
	}
	return w
}

// Unpack decodes fabric words into a header stamped ts. Errors name what is malformed: an
// unknown kind, bits set that the kind does not use, an entropy beyond 16 bits, a data
// length outside 1..2^24 or a PSN outside its message's range, a NACK reason that does not
// exist, an echoed time that is negative. For every valid h, Unpack(h.Pack(), ts) is h with
// TS ts; for any words Unpack accepts, Pack gives them back.
func Unpack(w Words, ts sim.Time) (Header, error) {
	h := Header{Kind: Kind(w.Op & opKindMask), PSN: w.Seq, TS: ts}
	if w.Entropy > math.MaxUint16 {
		return Header{}, fmt.Errorf("uec: entropy %#x is beyond 16 bits", w.Entropy)
	}
	h.EV = uint16(w.Entropy)
	if w.Op&opCtl != 0 {
		if w.Op&^(opCtl|opKindMask) != 0 || w.Ack != 0 || w.Bitmap != 0 || w.Aux != 0 || w.Seq > math.MaxInt64 || w.Op&opKindMask == 0 || w.Op&opKindMask == 3 {
			return Header{}, fmt.Errorf("uec: control packet with op %#x, ack %#x, bitmap %#x, aux %#x or credit %#x out of range", w.Op, w.Ack, w.Bitmap, w.Aux, w.Seq)
		}
		h.Kind = Credit + Kind(w.Op&opKindMask) - 1
		h.PSN, h.Req = 0, int64(w.Seq)
		return h, nil
	}
	switch h.Kind {
	case Data:
		if w.Op&^opKindMask != 0 {
			return Header{}, fmt.Errorf("uec: data packet with op flags %#x set", w.Op)
		}
		ln := w.Aux & (1<<lenBits - 1)
		if ln == 0 || ln > maxLen {
			return Header{}, fmt.Errorf("uec: data length %d is out of range 1..%d", ln, maxLen)
		}
		if !(w.Ack <= w.Seq && w.Seq < w.Bitmap) {
			return Header{}, fmt.Errorf("uec: data PSN %d outside its message's PSNs [%d, %d)", w.Seq, w.Ack, w.Bitmap)
		}
		h.Len, h.MsgStart, h.MsgEnd, h.Req = int32(ln), w.Ack, w.Bitmap, int64(w.Aux>>lenBits)
	case ACK:
		if w.Op&^(opKindMask|opECE) != 0 {
			return Header{}, fmt.Errorf("uec: ACK with op flags %#x set", w.Op)
		}
		h.ECE = w.Op&opECE != 0
		h.Cum, h.Bitmap = w.Ack, w.Bitmap
		if w.Aux > math.MaxInt64 {
			return Header{}, fmt.Errorf("uec: ACK echo time %#x is negative", w.Aux)
		}
		h.Echo = sim.Time(w.Aux)
	case NACK:
		if w.Op&^(opKindMask|opReasonMask) != 0 || w.Bitmap != 0 {
			return Header{}, fmt.Errorf("uec: NACK with op flags %#x or bitmap %#x set", w.Op, w.Bitmap)
		}
		h.Reason = NackReason(w.Op & opReasonMask >> opReasonShift)
		if h.Reason < NackTrimmed || h.Reason > NackOutOfOrder {
			return Header{}, fmt.Errorf("uec: NACK reason %d does not exist (1 trimmed, 2 trimmed at the last hop, 3 out of order)", h.Reason)
		}
		if w.Aux > math.MaxInt64 {
			return Header{}, fmt.Errorf("uec: NACK echo time %#x is negative", w.Aux)
		}
		h.Cum, h.Echo = w.Ack, sim.Time(w.Aux)
	default:
		return Header{}, fmt.Errorf("uec: unknown packet kind %d", w.Op&opKindMask)
	}
	return h, nil
}
