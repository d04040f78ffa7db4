package nic

import (
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
)

// TestWait checks the NIC wait list: FIFO order, reuse once drained.
func TestWait(t *testing.T) {
	var w Wait
	for qp := int32(0); qp < 5; qp++ {
		w.Push(qp)
	}
	for want := int32(0); want < 5; want++ {
		if got := w.Q[w.Head]; got != want {
			t.Fatalf("served %d; want %d", got, want)
		}
		w.Head++
	}
	if w.Len() != 0 {
		t.Fatalf("Len %d after serving all", w.Len())
	}
	w.Push(9)
	if w.Head != 0 || len(w.Q) != 1 || w.Q[0] != 9 {
		t.Fatalf("after reuse: head %d, q %v", w.Head, w.Q)
	}
}

// TestPairHelpers checks the pair helpers on a 2-tier Clos across rates: a pair under one T0
// crosses one switch, others three; the ideal transfer grows with the bytes and is at least
// the wire time at the NIC rate.
func TestPairHelpers(t *testing.T) {
	for _, rate := range []sim.Rate{10 * sim.Gbps, 100 * sim.Gbps, 800 * sim.Gbps} {
		l, err := topo.Clos{Tiers: 2, Planes: 1, Radix: 8, Hosts: 16, HostLink: rate, FabricLink: rate, HopLatency: 500 * sim.Nanosecond}.Topology()
		if err != nil {
			t.Fatal(err)
		}
		if h := PairHops(l, 0, 1); h != 1 {
			t.Errorf("%v: hops h0->h1 = %d; want 1", rate, h)
		}
		if h := PairHops(l, 0, 15); h != 3 {
			t.Errorf("%v: hops h0->h15 = %d; want 3", rate, h)
		}
		if err := PairRouteError(l, 0, 15, true); err != nil {
			t.Errorf("%v: %v", rate, err)
		}
		prev := sim.Time(0)
		for _, b := range []int64{64, 4096, 1 << 20} {
			d := IdealTransfer(l.Params(), rate, 3, b, min(b, 4160), 64)
			if d <= prev || d < rate.TxTime(b) {
				t.Errorf("%v: ideal of %d B = %v (previous %v); want growing and at least the wire time", rate, b, d, prev)
			}
			prev = d
		}
		if in := SwitchIngresses(l); len(in) != l.NumNodes() || len(in[0]) != 0 {
			t.Errorf("%v: SwitchIngresses by node: %d entries, host 0 has %d", rate, len(in), len(in[0]))
		}
	}
}
