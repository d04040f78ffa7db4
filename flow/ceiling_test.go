package flow

import (
	"math"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestSetCaps: two flows of 1 MB share a 100 Gb/s link (50 Gb/s each, 250 KB sent by 40 us);
// at 40 us SetCaps gives them new caps, and both deliveries match the closed form of the
// rates that follow (a capped flow runs at its cap, the other takes what is left; once one
// ends the other runs at min(its cap, the link)).
func TestSetCaps(t *testing.T) {
	const R, B = 100e9, 1e6
	const at = 40e-6
	// end returns when a flow with rem bytes left at t0 ends at rate r (seconds).
	end := func(t0, rem, r float64) float64 { return t0 + rem*8/r }
	left := B - 50e9*at/8 // each flow's bytes at 40 us
	cases := []struct {
		name         string
		capA, capB   float64 // set at 40 us; 0: none
		wantA, wantB float64 // seconds
	}{
		{"no caps", 0, 0, 160e-6, 160e-6},
		{"cap above the share", 75e9, 0, 160e-6, 160e-6},
		{"cap at the share", 50e9, 50e9, 160e-6, 160e-6},
		// A at 20G, B at 80G until B ends; then A alone at its cap.
		{"A capped", 20e9, 0, end(end(at, left, 80e9), left-20e9*(end(at, left, 80e9)-at)/8, 20e9), end(at, left, 80e9)},
		{"B capped", 0, 10e9, end(at, left, 90e9), end(end(at, left, 90e9), left-10e9*(end(at, left, 90e9)-at)/8, 10e9)},
		// Both capped below the link: each at its cap.
		{"both capped", 20e9, 30e9, end(at, left, 20e9), end(at, left, 30e9)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, n := newNet(t, []float64{R}, Config{})
			var ta, tb sim.Time
			a, _ := n.AddFlow(0, Flow{Bytes: B, Paths: []Path{{Links: []int32{0}, Weight: 1}}, Done: func(now sim.Time) { ta = now }})
			b, _ := n.AddFlow(0, Flow{Bytes: B, Paths: []Path{{Links: []int32{0}, Weight: 1}}, Done: func(now sim.Time) { tb = now }})
			k := s.Register("caps", func(sim.Time, int32, uint64) {
				got, err := n.SetCaps([]FlowID{a, b}, []float64{c.capA, c.capB})
				if err != nil || got != 2 {
					t.Errorf("SetCaps: %d found, %v; want 2, nil", got, err)
				}
			})
			s.At(40*sim.Microsecond, k, 0, 0)
			if err := s.Drain(sim.MaxTime); err != nil {
				t.Fatal(err)
			}
			for _, g := range []struct {
				name string
				got  sim.Time
				want float64
			}{{"A", ta, c.wantA}, {"B", tb, c.wantB}} {
				if d := math.Abs(float64(g.got)*1e-12 - g.want); d > 2e-12 {
					t.Errorf("%s delivered at %v, want %.6f us", g.name, g.got, g.want*1e6)
				}
			}
		})
	}
}

// TestSetCapsHeldAndErrors: a held flow keeps rate 0 and takes its new cap when released;
// ids not sending are skipped and counted out; bad input changes nothing.
func TestSetCapsHeldAndErrors(t *testing.T) {
	const R = 100e9
	s, n := newNet(t, []float64{R}, Config{})
	var ta sim.Time
	a, _ := n.AddFlow(0, Flow{Bytes: 1e6, Paths: []Path{{Links: []int32{0}, Weight: 1}}, Done: func(now sim.Time) { ta = now }})
	k := s.Register("held", func(now sim.Time, _ int32, _ uint64) {
		switch now {
		case 10 * sim.Microsecond: // 125 KB sent
			n.Hold(a, true)
			if got, err := n.SetCaps([]FlowID{a, a + 7}, []float64{25e9, 1e9}); err != nil || got != 1 {
				t.Errorf("SetCaps on a held flow and one not sending: %d, %v; want 1, nil", got, err)
			}
		case 20 * sim.Microsecond:
			n.Hold(a, false) // 875 KB left at 25G: 280 us
		}
	})
	s.At(10*sim.Microsecond, k, 0, 0)
	s.At(20*sim.Microsecond, k, 0, 0)
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	if want := 300 * sim.Microsecond; ta != want {
		t.Errorf("delivered at %v, want %v", ta, want)
	}
	bad := []struct {
		name string
		ids  []FlowID
		caps []float64
	}{
		{"lengths", []FlowID{0, 1}, []float64{1}},
		{"negative", []FlowID{0}, []float64{-1}},
		{"NaN", []FlowID{0}, []float64{math.NaN()}},
		{"infinite", []FlowID{0}, []float64{math.Inf(1)}},
		{"out of order", []FlowID{1, 0}, []float64{1, 1}},
		{"repeated", []FlowID{1, 1}, []float64{1, 1}},
	}
	for _, c := range bad {
		if _, err := n.SetCaps(c.ids, c.caps); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}
