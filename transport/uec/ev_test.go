package uec

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestObliviousCoversPool: oblivious spraying uses every EV of the pool once per round
// [UEC §3.5 packet spraying].
func TestObliviousCoversPool(t *testing.T) {
	for _, paths := range []int{1, 64, 128, 256} {
		p := NewEVPicker(LBOblivious, paths, 8, rand.New(rand.NewPCG(1, 1)))
		for round := 0; round < 3; round++ {
			seen := make([]bool, paths)
			for i := 0; i < paths; i++ {
				ev := p.Next()
				if int(ev) >= paths || seen[ev] {
					t.Fatalf("paths %d round %d: EV %d out of the pool or repeated", paths, round, ev)
				}
				seen[ev] = true
			}
		}
	}
}

// TestREPSRecycles replays REPS's rules [arXiv 2407.21625 §3]: clean ACKs' EVs come back in
// order; a CE-marked ACK's EV and a lost packet's EV are dropped; an empty buffer draws a
// fresh EV from the pool; a full one loses its oldest entry.
func TestREPSRecycles(t *testing.T) {
	p := NewEVPicker(LBREPS, 128, 4, rand.New(rand.NewPCG(2, 2)))
	for _, c := range []struct {
		ack  uint16
		ce   bool
		want []uint16
	}{{5, false, []uint16{5}}, {9, false, []uint16{5, 9}}, {5, true, []uint16{9}}, {3, false, []uint16{9, 3}}} {
		p.OnAck(c.ack, c.ce)
		if got := p.Buffered(); !slices.Equal(got, c.want) {
			t.Fatalf("after ACK ev %d ce %v: buffer %v, want %v", c.ack, c.ce, got, c.want)
		}
	}
	p.OnLoss(9)
	if got := p.Buffered(); !slices.Equal(got, []uint16{3}) {
		t.Fatalf("after a loss on 9: buffer %v, want [3]", got)
	}
	if ev := p.Next(); ev != 3 || p.Stats.Recycled != 1 {
		t.Fatalf("Next = %d (recycled %d), want the recycled 3", ev, p.Stats.Recycled)
	}
	if ev := p.Next(); ev >= 128 || p.Stats.Fresh != 1 {
		t.Fatalf("Next on an empty buffer = %d (fresh %d), want a fresh EV below 128", ev, p.Stats.Fresh)
	}
	for ev := uint16(10); ev < 16; ev++ {
		p.OnAck(ev, false)
	}
	if got := p.Buffered(); !slices.Equal(got, []uint16{12, 13, 14, 15}) || p.Stats.Overflow != 2 {
		t.Fatalf("full buffer: %v (overflow %d), want the 4 newest", got, p.Stats.Overflow)
	}
}

// TestSingleEV: ROD's picker returns one EV for the connection's life.
func TestSingleEV(t *testing.T) {
	p := NewEVPicker("", 128, 8, rand.New(rand.NewPCG(3, 3)))
	ev := p.Next()
	for i := 0; i < 100; i++ {
		p.OnAck(uint16(i), false)
		if p.Next() != ev {
			t.Fatal("ROD EV changed")
		}
	}
}

// TestREPSFreeze: a loss without trim freezes REPS for its period [REPS, freezing mode]:
// while frozen a cached EV is reused without leaving the buffer and nothing fresh is drawn;
// the failed EV is gone; after the period EVs are consumed again and exploration resumes.
func TestREPSFreeze(t *testing.T) {
	p := NewEVPicker(LBREPS, 128, 8, rand.New(rand.NewPCG(4, 4)))
	p.SetFreeze(100)
	for _, ev := range []uint16{1, 2, 3} {
		p.OnAck(ev, false)
	}
	p.OnFailure(10, 2)
	if !p.Frozen(10) || p.Frozen(110) || p.Stats.Freezes != 1 {
		t.Fatalf("frozen at 10 %v, at 110 %v, freezes %d; want true, false, 1", p.Frozen(10), p.Frozen(110), p.Stats.Freezes)
	}
	var got []uint16
	for i := 0; i < 6; i++ {
		got = append(got, p.Next())
	}
	if !slices.Equal(got, []uint16{1, 3, 1, 3, 1, 3}) || p.Stats.Fresh != 0 {
		t.Fatalf("frozen picks %v (fresh %d), want the good EVs 1 and 3 cycling, none fresh", got, p.Stats.Fresh)
	}
	p.OnFailure(50, 3) // extends the freeze, not a new one
	if p.Stats.Freezes != 1 || !p.Frozen(149) {
		t.Fatalf("a failure while frozen: freezes %d, frozen at 149 %v; want 1, true", p.Stats.Freezes, p.Frozen(149))
	}
	p.Advance(150)
	if ev := p.Next(); ev != 1 || len(p.Buffered()) != 0 {
		t.Fatalf("after the period: %d, buffer %v; want 1 consumed", ev, p.Buffered())
	}
	if p.Next(); p.Stats.Fresh != 1 {
		t.Fatalf("after the period with an empty buffer: fresh %d, want 1", p.Stats.Fresh)
	}
	q := NewEVPicker(LBREPSNoFreeze, 128, 8, rand.New(rand.NewPCG(4, 4)))
	q.SetFreeze(0)
	q.OnFailure(10, 2)
	if q.Frozen(10) || q.Stats.Freezes != 0 {
		t.Fatal("reps without freezing froze")
	}
}

// TestREPSFrozenNoCopies: while frozen, a packet reuses a cached EV without consuming it, so
// the clean ACK of that packet must not queue a second copy: with copies, the EVs used most
// would crowd the others out of the buffer (the bug docs/transport-compare.md describes).
// An ACK of an EV the buffer does not hold (a packet sent before the freeze) still queues it.
func TestREPSFrozenNoCopies(t *testing.T) {
	p := NewEVPicker(LBREPS, 128, 8, rand.New(rand.NewPCG(6, 6)))
	p.SetFreeze(100)
	p.OnAck(1, false)
	p.OnAck(3, false)
	p.OnFailure(10, 9)
	for range 20 {
		ev := p.Next()
		p.OnAck(ev, false)
	}
	if got := p.Buffered(); len(got) != 2 {
		t.Fatalf("frozen buffer after 20 clean round trips: %v, want the two EVs once each", got)
	}
	p.OnAck(5, false) // sent before the freeze, not held: queued
	if got := p.Buffered(); len(got) != 3 || got[2] != 5 {
		t.Fatalf("buffer %v, want 5 queued after the held EVs", got)
	}
	p.Advance(200) // thawed: copies are allowed again (each send consumes one)
	p.OnAck(1, false)
	if got := p.Buffered(); len(got) != 4 {
		t.Fatalf("thawed buffer %v, want a second copy of 1", got)
	}
}

// TestBitmapPenalty: the bitmap variant walks the pool in rounds, skipping an EV once per
// round per penalty point: CE adds one round, a loss without trim sits it out for
// BitmapMaxPenalty rounds.
func TestBitmapPenalty(t *testing.T) {
	const paths = 16
	p := NewEVPicker(LBBitmap, paths, 8, rand.New(rand.NewPCG(5, 5)))
	p.OnAck(3, true)
	p.OnFailure(0, 7)
	if p.Penalty(3) != BitmapCEPenalty || p.Penalty(7) != BitmapMaxPenalty {
		t.Fatalf("penalties %d, %d; want %d, %d", p.Penalty(3), p.Penalty(7), BitmapCEPenalty, BitmapMaxPenalty)
	}
	count := make([]int, paths)
	const rounds = 10
	for i := 0; i < rounds*paths; i++ {
		ev := p.Next()
		if ev >= paths {
			t.Fatalf("EV %d out of the pool", ev)
		}
		count[ev]++
	}
	if count[7] != 0 {
		t.Errorf("EV 7 (lost) picked %d times in %d rounds, want 0", count[7], rounds)
	}
	if count[3] == 0 || count[3] > rounds {
		t.Errorf("EV 3 (one CE) picked %d times, want 1..%d", count[3], rounds)
	}
	if p.Stats.Skipped == 0 {
		t.Error("no EV skipped")
	}
}
