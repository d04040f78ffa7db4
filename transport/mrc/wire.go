// Package mrc is a sans-IO engine for MRC (Multipath Reliable Connection) [MRC §2]: RDMA Write
// transfers sprayed packet by packet over a set of entropy values (EVs), each EV a static
// source route; packets are placed by address in any order; trimmed packets are NACKed and
// resent at once; untrimmed losses (found by SACK gaps, RACK-style, or by the ACK timeout)
// retire the EV that lost them; NSCC sets the window.
//
// Sans-IO (docs/style.md §3): a Sender or Receiver sees only time passed in, the Headers handed to
// it, and its own random stream. It appends the Headers it wants sent to an outbox the caller
// drains, and reports one deadline the caller keeps a single timer for. Nothing here imports the
// simulator, so the same engine can run over UDP sockets (package wire, later).
//
// Sources: Araujo et al., "Resilient AI Supercomputer Networking using MRC and SRv6" (2026) =
// [MRC]; the OCP MRC 1.0 reference API (mrc.h, mrc_ctl.h) = [API]; Ultra Ethernet 1.0 = [UEC];
// see docs/protocols.md ("MRC", "Trimming", "NSCC"). Unpublished values are lockstep
// defaults, named as such.
package mrc

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
)

// Kind is the MRC packet type.
type Kind uint8

// Packet kinds.
const (
	// Data is an RDMA Write packet: PSN, placement offset and length [MRC §2.1].
	Data Kind = iota + 1
	// SACK acknowledges: cumulative PSN, 64-bit bitmap, echoed EV, timestamp and CE [API].
	SACK
	// NACK asks for one PSN at once: trimmed, trimmed at the last hop, or out of window [API].
	NACK
	// Probe tests one EV's path; it consumes no PSN and elicits a SACK [API].
	Probe
)

// String names the kind.
func (k Kind) String() string {
	switch k {
	case Data:
		return "data"
	case SACK:
		return "sack"
	case NACK:
		return "nack"
	case Probe:
		return "probe"
	}
	return "kind?"
}

// NackReason says why a receiver NACKed a PSN [API].
type NackReason uint8

// NACK reasons.
const (
	NackTrimmed        NackReason = iota + 1 // trimmed in the fabric (congestion on a path)
	NackTrimmedLastHop                       // trimmed at the last hop (incast: not the path's fault)
	NackOutOfWindow                          // PSN beyond the receive window (MPR)
)

// String names the reason as in the reference API.
func (r NackReason) String() string {
	switch r {
	case NackTrimmed:
		return "TRIMMED"
	case NackTrimmedLastHop:
		return "TRIMMED_LASTHOP"
	case NackOutOfWindow:
		return "PSN_OUT_OF_WINDOW"
	}
	return "reason?"
}

// BitmapPSNs is the span of the SACK bitmap [API: 64-bit].
const BitmapPSNs = 64

// Header is the MRC header of one packet, the engine's unit of I/O. Which fields matter depends
// on Kind; the rest are zero. Pack and Unpack map it to and from the wire (the simulator's
// transport-owned packet words; UDP payloads later).
type Header struct {
	Kind Kind
	QP   uint32 // connection number, the same at both ends
	EV   uint16 // Data, Probe: the EV (index in the sender's EV table) the packet travels on

	// Data.
	PSN     uint32   // packet sequence number
	Msg     uint32   // transfer number within the QP, from 0
	Offset  int64    // placement address: byte offset within the transfer
	Len     int32    // payload bytes
	LastPSN uint32   // last PSN of the transfer, so the receiver can complete it
	TS      sim.Time // Data, Probe: send time, echoed by the answer
	// InFlight is the sender's wire bytes in flight on the QP once this packet is sent, and
	// Held says the receiver's share (RcvWnd) is what stops it sending more: it has more to
	// send and its in-flight has reached the share, below its congestion window. The
	// receiver hands the budget the QPs not held leave unused to those held (HostRx; the
	// request a data packet carries in UEC's receiver credit, RCCC [UEC §3.6], reduced to
	// what a window share needs). InFlight travels in units of RcvWndUnit, rounded up.
	InFlight uint32
	Held     bool

	// Answers (SACK, NACK). A SACK answering a probe has Probe set.
	CumPSN uint32 // every PSN below CumPSN has been received
	// Bitmap bit i set: PSN BitmapBase+i received. The base is the SACK's offset [API: SACK =
	// cumulative PSN + offset + bitmap]: CumPSN+1 normally, or the 64-PSN block holding the
	// answered packet when that lies beyond CumPSN+64, so packets far above a hole are still
	// acknowledged and do not clog the sender's window.
	Bitmap     uint64
	BitmapBase uint32
	EchoEV     uint16 // EV of the packet this answers
	EchoTS     sim.Time
	CE         bool // the answered packet arrived with CE (forward-path congestion)
	ForProbe   bool
	Reason     NackReason
	NackPSN    uint32
	// RcvWnd is the receiver's share of its NIC for this QP, in wire bytes in flight (see
	// HostRx); 0 = no share given. The sender's window is at most this.
	RcvWnd uint32
}

// Words is a Header packed into the fabric's transport-owned packet fields: Op, Entropy and
// four 64-bit words (the adapter stores them in Packet.Op, Packet.Entropy, Packet.Seq,
// Packet.Ack, Packet.Bitmap and Packet.Aux). The QP travels apart, in the packet's flow field,
// and TS in its transmit timestamp (Packet.SentAt, set by the fabric), as transport/roce does
// with its QP.
//
// The fields follow what an MRC packet carries [MRC §2.1: PSN, EV, placement address; API:
// SACK = cumulative PSN + offset + 64-bit bitmap, the echoed EV and timestamp, NACK reasons;
// docs/protocols.md "MRC" and "The receiver's share"]. The bit positions are lockstep's own:
// neither source publishes a header layout.
//
// Layout:
//
//	Op       Kind (1 Data, 2 SACK, 3 NACK, 4 Probe); nothing else
//	Entropy  Data, Probe: EV; SACK, NACK: EchoEV (bits 0-15; bits 16-31 zero)
//
//	Data:    Seq     bits 0-31 PSN, bits 32-63 Msg
//	         Ack     Offset (bit 63 zero: never negative)
//	         Bitmap  bits 0-31 LastPSN (bits 32-63 zero)
//	         Aux     bits 0-31 Len, 0..MaxPayloadBytes; bits 32-53 InFlight in units of
//	                 RcvWndUnit (rounded up, saturating at MaxRcvWnd); bit 54 Held;
//	                 bits 55-63 zero
//	Probe:   Seq, Ack, Bitmap, Aux zero
//	SACK,    Seq     bits 0-31 CumPSN, bits 32-63 NackPSN (zero on a SACK)
//	NACK:    Ack     EchoTS (bit 63 zero: never negative)
//	         Bitmap  Bitmap
//	         Aux     bits 0-7 Reason (zero on a SACK, a NackReason on a NACK), bit 8 CE,
//	                 bit 9 ForProbe, bits 10-31 RcvWnd in units of RcvWndUnit (rounded up,
//	                 saturating at MaxRcvWnd), bits 32-63 BitmapBase
//
// Fields a kind does not carry (Data fields on an answer, answer fields on Data, anything but
// EV and TS on a probe, EV on an answer) are not packed.
type Words struct {
	Op      uint8
	Entropy uint32
	Seq     uint64
	Ack     uint64
	Bitmap  uint64
	Aux     uint64
}

// RcvWndUnit is the granule of Header.RcvWnd on the wire, in bytes: Pack rounds the share up to
// a multiple of it.
const RcvWndUnit = 64

// MaxRcvWnd is the largest RcvWnd the wire carries (22 bits of RcvWndUnit, about 256 MiB);
// Pack saturates larger shares to it.
const MaxRcvWnd = (1<<rcvWndBits - 1) * RcvWndUnit

// MaxPayloadBytes is the largest Len a data packet may carry: Config's bound on PayloadBytes.
const MaxPayloadBytes = 65536

const (
	inflShift    = 32
	auxHeld      = 1 << 54
	auxCE        = 1 << 8
	auxForProbe  = 1 << 9
	rcvWndShift  = 10
	rcvWndBits   = 22
	rcvWndMask   = 1<<rcvWndBits - 1
	auxReasonMsk = 0xff
	maxEV        = 1<<16 - 1
	maxNackRsn   = NackOutOfWindow
	lo32         = 1<<32 - 1
	sign64       = 1 << 63
)

// Pack encodes h's on-the-wire fields (everything but QP and TS, which the adapter carries in
// the packet's flow field and transmit timestamp). It allocates nothing.
func (h *Header) Pack() Words {
	w := Words{Op: uint8(h.Kind)}
	switch h.Kind {
	case Data:
		w.Entropy = uint32(h.EV)
		w.Seq = uint64(h.PSN) | uint64(h.Msg)<<32
		w.Ack = uint64(h.Offset)
		w.Bitmap = uint64(h.LastPSN)
		w.Aux = uint64(uint32(h.Len)) | uint64(min((uint64(h.InFlight)+RcvWndUnit-1)/RcvWndUnit, rcvWndMask))<<inflShift
		if h.Held {
			w.Aux |= auxHeld
		}
	case Probe:
		w.Entropy = uint32(h.EV)
	case SACK, NACK:
		w.Entropy = uint32(h.EchoEV)
		w.Seq = uint64(h.CumPSN) | uint64(h.NackPSN)<<32
		w.Ack = uint64(h.EchoTS)
		w.Bitmap = h.Bitmap
		w.Aux = uint64(h.Reason) | uint64(h.BitmapBase)<<32
		if h.CE {
			w.Aux |= auxCE
		}
		if h.ForProbe {
			w.Aux |= auxForProbe
		}
		w.Aux |= uint64(min((uint64(h.RcvWnd)+RcvWndUnit-1)/RcvWndUnit, rcvWndMask)) << rcvWndShift
	}
	return w
}

// Unpack decodes w into the Header of a packet of connection qp sent at ts (TS is set on Data
// and Probe only). Errors, never a panic: an unknown kind, an EV beyond 16 bits, a negative
// offset or echoed timestamp, bits set beyond a field (LastPSN, Len), a length beyond
// MaxPayloadBytes, words set on a probe, a NACK PSN or reason on a SACK, or a NACK without a
// known reason. Unpack(Pack(h)) returns h for every valid h (RcvWnd and InFlight multiples of RcvWndUnit up
// to MaxRcvWnd, the fields its kind does not carry zero), and Pack(Unpack(w)) returns w for
// every w Unpack accepts. It allocates nothing unless it fails.
func Unpack(qp uint32, ts sim.Time, w Words) (Header, error) {
	k := Kind(w.Op)
	if k < Data || k > Probe {
		return Header{}, fmt.Errorf("mrc: qp %d: op %#02x: unknown kind", qp, w.Op)
	}
	if w.Entropy > maxEV {
		return Header{}, fmt.Errorf("mrc: qp %d: %v: EV %#x beyond 16 bits", qp, k, w.Entropy)
	}
	h := Header{Kind: k, QP: qp}
	switch k {
	case Data:
		switch {
		case w.Ack&sign64 != 0:
			return Header{}, fmt.Errorf("mrc: qp %d: data PSN %d: negative offset %d", qp, uint32(w.Seq), int64(w.Ack))
		case w.Bitmap>>32 != 0:
			return Header{}, fmt.Errorf("mrc: qp %d: data PSN %d: last PSN %#x beyond 32 bits", qp, uint32(w.Seq), w.Bitmap)
		case w.Aux&lo32 > MaxPayloadBytes:
			return Header{}, fmt.Errorf("mrc: qp %d: data PSN %d: length %d B beyond %d B", qp, uint32(w.Seq), w.Aux&lo32, MaxPayloadBytes)
		case w.Aux>>55 != 0:
			return Header{}, fmt.Errorf("mrc: qp %d: data PSN %d: aux bits 55-63 set (%#x)", qp, uint32(w.Seq), w.Aux)
		}
		h.EV, h.TS = uint16(w.Entropy), ts
		h.PSN, h.Msg = uint32(w.Seq), uint32(w.Seq>>32)
		h.Offset, h.LastPSN, h.Len = int64(w.Ack), uint32(w.Bitmap), int32(w.Aux&lo32)
		h.InFlight = uint32(w.Aux>>inflShift&rcvWndMask) * RcvWndUnit
		h.Held = w.Aux&auxHeld != 0
	case Probe:
		if w.Seq|w.Ack|w.Bitmap|w.Aux != 0 {
			return Header{}, fmt.Errorf("mrc: qp %d: probe carries words (seq %#x, ack %#x, bitmap %#x, aux %#x)", qp, w.Seq, w.Ack, w.Bitmap, w.Aux)
		}
		h.EV, h.TS = uint16(w.Entropy), ts
	default: // SACK, NACK
		r := NackReason(w.Aux & auxReasonMsk)
		switch {
		case w.Ack&sign64 != 0:
			return Header{}, fmt.Errorf("mrc: qp %d: %v: negative echoed timestamp %d", qp, k, int64(w.Ack))
		case k == SACK && (r != 0 || w.Seq>>32 != 0):
			return Header{}, fmt.Errorf("mrc: qp %d: sack carries a NACK reason %d or PSN %d", qp, r, w.Seq>>32)
		case k == NACK && (r == 0 || r > maxNackRsn):
			return Header{}, fmt.Errorf("mrc: qp %d: nack PSN %d: unknown reason %d", qp, w.Seq>>32, r)
		}
		h.EchoEV, h.EchoTS = uint16(w.Entropy), sim.Time(w.Ack)
		h.CumPSN, h.NackPSN = uint32(w.Seq), uint32(w.Seq>>32)
		h.Bitmap = w.Bitmap
		h.Reason = r
		h.CE = w.Aux&auxCE != 0
		h.ForProbe = w.Aux&auxForProbe != 0
		h.RcvWnd = uint32(w.Aux>>rcvWndShift&rcvWndMask) * RcvWndUnit
		h.BitmapBase = uint32(w.Aux >> 32)
	}
	return h, nil
}
