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
