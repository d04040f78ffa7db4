package mrc

import (
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// validHeaders are headers of every kind, reason and flag, at the ends of the field ranges, as
// the engines emit them (fields a kind does not carry zero, RcvWnd a multiple of RcvWndUnit).
func validHeaders() []Header {
	return []Header{
		{Kind: Data, QP: 3, EV: 0, PSN: 0, Msg: 0, Offset: 0, Len: 4096, LastPSN: 0, TS: 1},
		{Kind: Data, QP: 3, EV: 0xffff, PSN: 0xffffffff, Msg: 0xffffffff, Offset: 1<<63 - 1, Len: MaxPayloadBytes, LastPSN: 0xffffffff, TS: 1<<63 - 1},
		{Kind: Data, QP: 0xffffffff, EV: 7, PSN: 12345, Msg: 2, Offset: 8192, Len: 0, LastPSN: 99999},
		{Kind: Data, QP: 3, PSN: 1, Len: 4096, InFlight: MaxRcvWnd, Held: true},
		{Kind: Data, QP: 3, PSN: 2, Len: 4096, InFlight: RcvWndUnit},
		{Kind: Data, QP: 3, PSN: 3, Len: MaxPayloadBytes, Held: true},
		{Kind: Probe, QP: 3, EV: 0xffff, TS: 5 * sim.Microsecond},
		{Kind: Probe, QP: 3},
		{Kind: SACK, QP: 3, CumPSN: 0xffffffff, Bitmap: 1<<64 - 1, BitmapBase: 0xffffffff, EchoEV: 0xffff, EchoTS: 1<<63 - 1, CE: true, ForProbe: true, RcvWnd: MaxRcvWnd},
		{Kind: SACK, QP: 3, CumPSN: 10, Bitmap: 0b1011, BitmapBase: 11, EchoEV: 4, EchoTS: 77, RcvWnd: RcvWndUnit},
		{Kind: SACK, QP: 3, ForProbe: true},
		{Kind: SACK, QP: 3, CE: true, RcvWnd: 1 << 20},
		{Kind: NACK, QP: 3, CumPSN: 4, NackPSN: 0xffffffff, Reason: NackTrimmed, EchoEV: 1, EchoTS: 9, BitmapBase: 5},
		{Kind: NACK, QP: 3, NackPSN: 9, Reason: NackTrimmedLastHop, CE: true, RcvWnd: 64 * 1000},
		{Kind: NACK, QP: 3, NackPSN: 9, Reason: NackOutOfWindow, Bitmap: 1 << 63, ForProbe: true, RcvWnd: MaxRcvWnd - RcvWndUnit},
	}
}

// TestPackRoundTrip: Unpack(Pack(h)) == h for every valid header, and the layout is the
// documented one.
func TestPackRoundTrip(t *testing.T) {
	for _, h := range validHeaders() {
		w := h.Pack()
		got, err := Unpack(h.QP, h.TS, w)
		if err != nil || got != h {
			t.Errorf("Unpack(Pack(%+v)) = %+v, %v", h, got, err)
		}
	}
	w := (&Header{Kind: Data, EV: 9, PSN: 0x01020304, Msg: 5, Offset: 4096, LastPSN: 0x0a0b, Len: 1500}).Pack()
	if w != (Words{Op: 1, Entropy: 9, Seq: 0x01020304 | 5<<32, Ack: 4096, Bitmap: 0x0a0b, Aux: 1500}) {
		t.Errorf("data layout %+v", w)
	}
	w = (&Header{Kind: Data, EV: 1, Len: 4096, InFlight: 640, Held: true}).Pack()
	if w != (Words{Op: 1, Entropy: 1, Aux: 4096 | 10<<32 | 1<<54}) {
		t.Errorf("data layout with InFlight and Held %+v", w)
	}
	w = (&Header{Kind: NACK, EV: 3, EchoEV: 6, CumPSN: 7, NackPSN: 8, Bitmap: 0xf0, BitmapBase: 8, EchoTS: 42,
		Reason: NackOutOfWindow, CE: true, ForProbe: true, RcvWnd: 640}).Pack()
	if w != (Words{Op: 3, Entropy: 6, Seq: 7 | 8<<32, Ack: 42, Bitmap: 0xf0, Aux: 3 | 1<<8 | 1<<9 | 10<<10 | 8<<32}) {
		t.Errorf("nack layout %+v", w)
	}
	// Fields a kind does not carry are not packed.
	if w := (&Header{Kind: Probe, EV: 2, PSN: 9, Len: 100, CumPSN: 4, RcvWnd: 64}).Pack(); w != (Words{Op: 4, Entropy: 2}) {
		t.Errorf("probe packed as %+v", w)
	}
	if w := (&Header{Kind: SACK, EV: 2, PSN: 9, Len: 100, Offset: 3}).Pack(); w != (Words{Op: 2}) {
		t.Errorf("sack packed as %+v", w)
	}
}

// TestPackRcvWnd: RcvWnd (answers) and InFlight (data) are rounded up to RcvWndUnit and
// saturate at MaxRcvWnd.
func TestPackRcvWnd(t *testing.T) {
	for _, c := range []struct{ in, want uint32 }{
		{0, 0}, {1, 64}, {63, 64}, {64, 64}, {65, 128}, {1 << 20, 1 << 20},
		{MaxRcvWnd - 1, MaxRcvWnd}, {MaxRcvWnd, MaxRcvWnd}, {MaxRcvWnd + 1, MaxRcvWnd}, {1<<32 - 1, MaxRcvWnd},
	} {
		h := Header{Kind: SACK, RcvWnd: c.in}
		got, err := Unpack(0, 0, h.Pack())
		if err != nil || got.RcvWnd != c.want {
			t.Errorf("RcvWnd %d -> %d, %v; want %d", c.in, got.RcvWnd, err, c.want)
		}
		d := Header{Kind: Data, Len: 4096, InFlight: c.in}
		got, err = Unpack(0, 0, d.Pack())
		if err != nil || got.InFlight != c.want || got.Len != 4096 {
			t.Errorf("InFlight %d -> %d (len %d), %v; want %d", c.in, got.InFlight, got.Len, err, c.want)
		}
	}
}

func TestUnpackErrors(t *testing.T) {
	bad := []Words{
		{Op: 0},                      // no kind
		{Op: 5},                      // beyond Probe
		{Op: 0xff},                   // beyond Probe
		{Op: 1, Entropy: 1 << 16},    // EV beyond 16 bits
		{Op: 2, Entropy: 0xffffffff}, // echoed EV beyond 16 bits
		{Op: 1, Ack: 1 << 63},        // negative offset
		{Op: 1, Bitmap: 1 << 32},     // last PSN beyond 32 bits
		{Op: 1, Aux: MaxPayloadBytes + 1},
		{Op: 1, Aux: 1 << 55},                       // beyond Held
		{Op: 1, Aux: 1 << 63},                       // beyond Held
		{Op: 1, Aux: 1<<32 | (MaxPayloadBytes + 1)}, // length too long beside an InFlight
		{Op: 4, Seq: 1},                             // PSN on a probe
		{Op: 4, Ack: 1},                             // offset on a probe
		{Op: 4, Bitmap: 1},                          // last PSN on a probe
		{Op: 4, Aux: 1},                             // length on a probe
		{Op: 2, Ack: 1 << 63},                       // negative echoed timestamp
		{Op: 3, Aux: 1, Ack: 1 << 63},               // negative echoed timestamp
		{Op: 2, Aux: 1},                             // reason on a SACK
		{Op: 2, Seq: 1 << 32},                       // NACK PSN on a SACK
		{Op: 3},                                     // NACK without a reason
		{Op: 3, Aux: 4},                             // unknown reason
		{Op: 3, Aux: 0xff},                          // unknown reason
	}
	for _, w := range bad {
		if h, err := Unpack(1, 0, w); err == nil {
			t.Errorf("Unpack(%+v) = %+v; want an error", w, h)
		}
	}
}

// TestPackAllocs: the hot path allocates nothing per packet.
func TestPackAllocs(t *testing.T) {
	hs := validHeaders()
	var sink Header
	n := testing.AllocsPerRun(100, func() {
		for i := range hs {
			h, err := Unpack(hs[i].QP, hs[i].TS, hs[i].Pack())
			if err != nil {
				t.Fatal(err)
			}
			sink = h
		}
	})
	_ = sink
	if n != 0 {
		t.Fatalf("Pack+Unpack allocate %v times per run", n)
	}
}

func BenchmarkPackUnpack(b *testing.B) {
	hs := validHeaders()
	b.ReportAllocs()
	var sink Header
	for i := 0; i < b.N; i++ {
		h := &hs[i%len(hs)]
		sink, _ = Unpack(h.QP, h.TS, h.Pack())
	}
	_ = sink
}

// FuzzUnpack: Unpack never panics; whatever it accepts packs back to the same words and
// unpacks to the same header (the decoding is canonical). Seeded from round-tripped headers.
func FuzzUnpack(f *testing.F) {
	for _, h := range validHeaders() {
		w := h.Pack()
		f.Add(w.Op, w.Entropy, w.Seq, w.Ack, w.Bitmap, w.Aux, int64(h.TS))
	}
	f.Fuzz(func(t *testing.T, op uint8, entropy uint32, seq, ack, bitmap, aux uint64, ts int64) {
		w := Words{Op: op, Entropy: entropy, Seq: seq, Ack: ack, Bitmap: bitmap, Aux: aux}
		h, err := Unpack(5, sim.Time(ts), w)
		if err != nil {
			return
		}
		if back := h.Pack(); back != w {
			t.Fatalf("Unpack(%+v) = %+v packs back to %+v", w, h, back)
		}
		if h2, err := Unpack(5, h.TS, h.Pack()); err != nil || h2 != h {
			t.Fatalf("not canonical: %+v -> %+v, %v", h, h2, err)
		}
	})
}
