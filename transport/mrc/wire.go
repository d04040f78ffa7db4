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

import "github.com/lockstepsim/lockstep/sim"

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
// on Kind; the rest are zero. A transport adapter maps it to and from the wire (the simulator's
// packet words, or UDP payloads).
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
