package uec

import (
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// validHeaders are one header of each kind and reason, as the engines make them.
var validHeaders = []Header{
	{Kind: Data, EV: 7, PSN: 12, Len: 4096, MsgStart: 10, MsgEnd: 500},
	{Kind: Data, EV: 65535, PSN: 0, Len: 1, MsgStart: 0, MsgEnd: 1},
	{Kind: ACK, EV: 3, PSN: 40, Cum: 33, Bitmap: 0x8000_0000_0000_0041, Echo: 5 * sim.Microsecond, ECE: true},
	{Kind: ACK, PSN: 1, Cum: 2},
	{Kind: NACK, EV: 9, PSN: 17, Cum: 12, Echo: 3, Reason: NackTrimmed},
	{Kind: NACK, PSN: 17, Cum: 12, Reason: NackTrimmedLastHop},
	{Kind: NACK, PSN: 12, Cum: 12, Reason: NackOutOfOrder},
	{Kind: Data, EV: 2, PSN: 3, Len: 4096, MsgStart: 0, MsgEnd: 9, Req: 1<<39 - 1},
	{Kind: Credit, EV: 4, Req: 123456789},
	{Kind: CreditRequest, Req: 1 << 62},
}

// TestPackRoundTrip: Unpack(Pack(h)) is h, stamped with the packet's time [wire.go].
func TestPackRoundTrip(t *testing.T) {
	for _, h := range validHeaders {
		got, err := Unpack(h.Pack(), 42)
		want := h
		want.TS = 42
		if err != nil || got != want {
			t.Errorf("%+v: got %+v, %v", h, got, err)
		}
	}
}

// TestUnpackRejects: malformed words are errors, never panics.
func TestUnpackRejects(t *testing.T) {
	for _, w := range []Words{
		{Op: 0}, // no kind
		{Op: uint8(Data), Seq: 5, Ack: 0, Bitmap: 6},         // no length
		{Op: uint8(Data), Seq: 6, Ack: 0, Bitmap: 6, Aux: 1}, // PSN past its message
		{Op: uint8(Data), Entropy: 1 << 16, Seq: 0, Bitmap: 1, Aux: 1},
		{Op: uint8(NACK)}, // no reason
		{Op: uint8(NACK) | 1<<opReasonShift, Bitmap: 1}, // NACK with a bitmap
		{Op: uint8(ACK) | 1<<7},                         // stray bit
		{Op: uint8(ACK), Aux: 1 << 63},                  // negative echo
		{Op: opCtl},                                     // control without a kind
		{Op: opCtl | 3},                                 // control kind 3
		{Op: opCtl | 1, Aux: 1},                         // credit with aux
		{Op: opCtl | 2, Seq: 1 << 63},                   // negative request
		{Op: opCtl | 1 | opECE},                         // stray flag
	} {
		if _, err := Unpack(w, 0); err == nil {
			t.Errorf("%+v: accepted", w)
		}
	}
}

// FuzzUnpack: any words Unpack accepts pack back to themselves, and Pack/Unpack round-trips
// what it decoded.
func FuzzUnpack(f *testing.F) {
	for _, h := range validHeaders {
		w := h.Pack()
		f.Add(w.Op, w.Entropy, w.Seq, w.Ack, w.Bitmap, w.Aux)
	}
	f.Fuzz(func(t *testing.T, op uint8, ent uint32, seq, ack, bm, aux uint64) {
		w := Words{Op: op, Entropy: ent, Seq: seq, Ack: ack, Bitmap: bm, Aux: aux}
		h, err := Unpack(w, 1)
		if err != nil {
			return
		}
		if got := h.Pack(); got != w {
			t.Fatalf("words %+v decoded to %+v packed to %+v", w, h, got)
		}
		if h2, err := Unpack(h.Pack(), 1); err != nil || h2 != h {
			t.Fatalf("%+v: round trip %+v, %v", h, h2, err)
		}
	})
}
