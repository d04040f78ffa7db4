package roce

import (
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// validHeaders are headers of every kind and segment, as the engines emit them.
func validHeaders() []Header {
	return []Header{
		{Kind: Data, QP: 3, PSN: 0, Seg: SegFirst, Len: 4096, MsgBytes: 1 << 30},
		{Kind: Data, QP: 3, PSN: 1, Seg: SegMiddle, Len: 4096},
		{Kind: Data, QP: 3, PSN: 0xffffffff, Seg: SegLast, AckReq: true, Len: 1},
		{Kind: Data, QP: 3, PSN: 7, Seg: SegOnly, AckReq: true, Len: 0, MsgBytes: 0},
		{Kind: Data, QP: 3, PSN: 8, Seg: SegOnly, AckReq: true, Len: 4096, MsgBytes: 4096},
		{Kind: Data, QP: 3, PSN: 9, Seg: SegFirst, Len: 4096, MsgBytes: MaxMsgBytes},
		{Kind: Ack, QP: 3, PSN: 20},
		{Kind: Nak, QP: 3, PSN: 5},
		{Kind: CNP, QP: 3},
	}
}

// TestPackRoundTrip: Unpack(Pack(h)) == h for every valid header, and the layout is the
// documented one.
func TestPackRoundTrip(t *testing.T) {
	for _, h := range validHeaders() {
		w := h.Pack()
		got, err := Unpack(h.QP, w)
		if err != nil || got != h {
			t.Errorf("Unpack(Pack(%+v)) = %+v, %v", h, got, err)
		}
	}
	w := (&Header{Kind: Data, PSN: 0x01020304, Seg: SegLast, AckReq: true, Len: 4096}).Pack()
	if w.Op != uint8(Data)|uint8(SegLast)<<3|1<<5 || w.Seq != 0x01020304|4096<<32 || w.Ack != 0 {
		t.Errorf("layout %+v", w)
	}
	w = (&Header{Kind: Nak, PSN: 77, Seg: SegLast, Len: 9}).Pack() // data fields on an answer are not packed
	if w != (Words{Op: uint8(Nak), Seq: 77}) {
		t.Errorf("NAK packed as %+v", w)
	}
}

func TestUnpackErrors(t *testing.T) {
	bad := []Words{
		{Op: 0},                            // no kind
		{Op: 5},                            // beyond CNP
		{Op: uint8(Data) | 1<<6},           // reserved bit
		{Op: uint8(Ack) | 1<<3},            // segment on an answer
		{Op: uint8(Ack), Seq: 1 << 32},     // length on an answer
		{Op: uint8(Nak), Ack: 1},           // DMA length on an answer
		{Op: uint8(CNP), Seq: 9},           // PSN on a CNP
		{Op: uint8(Data), Seq: 4097 << 32}, // longer than the largest MTU
		{Op: uint8(Data) | uint8(SegMiddle)<<3, Ack: 10},         // RETH on a middle packet
		{Op: uint8(Data) | uint8(SegFirst)<<3, Ack: 1<<48 + 1},   // transfer too long
		{Op: uint8(Data) | uint8(SegOnly)<<3, Ack: 1<<63 | 4096}, // negative as int64
		{Op: uint8(Data) | uint8(SegLast)<<3, Seq: 0xffff << 32}, // long
	}
	for _, w := range bad {
		if h, err := Unpack(1, w); err == nil {
			t.Errorf("Unpack(%+v) = %+v; want an error", w, h)
		}
	}
}

// FuzzUnpack: Unpack never panics; whatever it accepts packs back to the same words and
// unpacks to the same header (the decoding is canonical). Seeded from round-tripped headers.
func FuzzUnpack(f *testing.F) {
	for _, h := range validHeaders() {
		w := h.Pack()
		f.Add(w.Op, w.Seq, w.Ack)
	}
	f.Fuzz(func(t *testing.T, op uint8, seq, ack uint64) {
		w := Words{Op: op, Seq: seq, Ack: ack}
		h, err := Unpack(5, w)
		if err != nil {
			return
		}
		if back := h.Pack(); back != w {
			t.Fatalf("Unpack(%+v) = %+v packs back to %+v", w, h, back)
		}
		if h2, err := Unpack(5, h.Pack()); err != nil || h2 != h {
			t.Fatalf("not canonical: %+v -> %+v, %v", h, h2, err)
		}
	})
}

func TestKindSegStrings(t *testing.T) {
	for k, want := range map[Kind]string{Data: "data", Ack: "ack", Nak: "nak", CNP: "cnp", 0: "kind?", 9: "kind?"} {
		if k.String() != want {
			t.Errorf("Kind(%d) = %q, want %q", k, k.String(), want)
		}
	}
	for s, want := range map[Seg]string{SegFirst: "first", SegMiddle: "middle", SegLast: "last", SegOnly: "only", 7: "seg?"} {
		if s.String() != want {
			t.Errorf("Seg(%d) = %q, want %q", s, s.String(), want)
		}
	}
}

// TestUDPSourcePort: ports lie in 0xC000-0xFFFF, depend only on (seed, QP), and spread.
func TestUDPSourcePort(t *testing.T) {
	seen := map[uint16]bool{}
	for qp := uint32(0); qp < 1000; qp++ {
		p := UDPSourcePort(11, qp)
		if p < 0xC000 || p != UDPSourcePort(11, qp) {
			t.Fatalf("qp %d: port %#x", qp, p)
		}
		seen[p] = true
	}
	if len(seen) < 950 {
		t.Fatalf("1000 QPs got only %d distinct ports", len(seen))
	}
	if UDPSourcePort(11, 5) == UDPSourcePort(12, 5) && UDPSourcePort(11, 6) == UDPSourcePort(12, 6) {
		t.Fatal("the seed does not change the ports")
	}
}

func TestLocalAckTimeout(t *testing.T) {
	if LocalAckTimeout(0) != 4096*sim.Nanosecond || LocalAckTimeout(8) != 1048576*sim.Nanosecond ||
		LocalAckTimeout(18) != 4096*sim.Nanosecond<<18 || LocalAckTimeout(32) != 0 || LocalAckTimeout(-1) != 0 {
		t.Fatal("LocalAckTimeout is not 4.096us x 2^t")
	}
	if DefaultRTO != LocalAckTimeout(DefaultRTOExp) {
		t.Fatal("DefaultRTO is not LocalAckTimeout(DefaultRTOExp)")
	}
}

// TestWireSizes pins the byte counts the fabric will serialise.
func TestWireSizes(t *testing.T) {
	c := Defaults()
	if DefaultHeaderBytes != 82 || c.DataWire(4096, false) != 4178 || c.DataWire(4096, true) != 4194 ||
		c.AckWire() != 86 || c.CNPWire() != 98 {
		t.Fatalf("header %d, data %d/%d, ack %d, cnp %d; want 82, 4178/4194, 86, 98",
			DefaultHeaderBytes, c.DataWire(4096, false), c.DataWire(4096, true), c.AckWire(), c.CNPWire())
	}
}
