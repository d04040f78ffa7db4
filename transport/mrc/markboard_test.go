package mrc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestMarkBoardAllMarked sweeps a plane of 1 to 4 routes, each never answered, answered clean,
// marked, or both, before or after the window's start: the plane counts as all marked when
// some route was answered since the start and none of those was only clean.
func TestMarkBoardAllMarked(t *testing.T) {
	const from = 10 * sim.Microsecond
	type rt struct{ mark, clean sim.Time } // -1: never
	states := []rt{{-1, -1}, {-1, 5 * sim.Microsecond}, {-1, from}, {from, -1}, {2 * from, 3 * from}, {5 * sim.Microsecond, 2 * from}, {2 * from, 5 * sim.Microsecond}}
	var walk func(prefix []rt, n int)
	walk = func(prefix []rt, n int) {
		if len(prefix) == n {
			b := NewMarkBoard()
			routes := make([]int32, n)
			answered, clean := false, false
			for i, r := range prefix {
				routes[i] = b.AddRoute()
				if r.mark >= 0 {
					b.note(routes[i], r.mark, true)
				}
				if r.clean >= 0 {
					b.note(routes[i], r.clean, false)
				}
				switch {
				case r.mark >= from:
					answered = true
				case r.clean >= from:
					answered, clean = true, true
				}
			}
			if got, want := b.allMarked(routes, from), answered && !clean; got != want {
				t.Errorf("routes %v since %v: allMarked %v, want %v", prefix, from, got, want)
			}
			return
		}
		for _, s := range states {
			walk(append(prefix, s), n)
		}
	}
	for n := 1; n <= 4; n++ {
		walk(nil, n)
	}
	// Out of range routes are ignored, not a panic.
	b := NewMarkBoard()
	b.note(3, sim.Microsecond, true)
	b.note(-1, sim.Microsecond, false)
	if b.Routes() != 0 {
		t.Errorf("Routes() = %d after notes on no route; want 0", b.Routes())
	}
}

// TestSenderSetMarkBoard checks SetMarkBoard's errors (each naming what is wrong) and that a
// Sender with a board holds a CE-marked EV exactly when every route of its plane answered on
// the board since the plane's previous lap began was marked, whichever QP answered.
func TestSenderSetMarkBoard(t *testing.T) {
	s := newGateSender(t)
	n := s.EVs().Len()
	b := NewMarkBoard()
	for range 8 {
		b.AddRoute()
	}
	for _, tc := range []struct {
		name   string
		b      *MarkBoard
		routes []int32
		want   string
	}{
		{"nil board", nil, make([]int32, n), "nil board"},
		{"too few routes", b, make([]int32, n-1), fmt.Sprintf("%d routes for %d EVs", n-1, n)},
		{"route off the board", b, append(make([]int32, n-1), 8), "on route 8; the board has 8"},
		{"negative route", b, append(make([]int32, n-1), -1), "on route -1"},
	} {
		err := s.SetMarkBoard(tc.b, tc.routes)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: SetMarkBoard error %v; want one containing %q", tc.name, err, tc.want)
		}
	}

	for _, allMarked := range []bool{false, true} {
		t.Run(fmt.Sprintf("all_marked=%v", allMarked), func(t *testing.T) {
			s := newGateSender(t)
			evs := s.EVs()
			b := NewMarkBoard()
			routes := make([]int32, evs.Len())
			ids := map[[2]int]int32{}
			for ev := range routes {
				pl, pa, _ := evs.Route(ev)
				id, ok := ids[[2]int{pl, pa}]
				if !ok {
					id = b.AddRoute()
					ids[[2]int{pl, pa}] = id
				}
				routes[ev] = id
			}
			if err := s.SetMarkBoard(b, routes); err != nil {
				t.Fatal(err)
			}
			now := 5 * sim.Microsecond
			s.Pump(now) // begins the planes' first laps at 5 us
			// Another QP of the NIC answered on every route of plane 0 since: all marked, or
			// one route clean.
			for k, id := range ids {
				if k[0] == 0 {
					b.note(id, now+sim.Microsecond, true)
				}
			}
			if !allMarked {
				b.note(ids[[2]int{0, 0}], now+sim.Microsecond, false)
				b.mark[ids[[2]int{0, 0}]] = -1
			}
			var ev int
			for ev = 0; ev < evs.Len(); ev++ {
				if e, _ := evs.Entry(ev); e.Active && e.Plane == 0 && e.State == Good {
					break
				}
			}
			held := evs.Stats().SkipsHeld
			s.OnSACK(now+2*sim.Microsecond, &Header{Kind: SACK, CE: true, EchoEV: uint16(ev), EchoTS: now})
			e, _ := evs.Entry(ev)
			want := Skip
			if allMarked {
				want = Good
			}
			if e.State != want {
				t.Errorf("EV %d is %v after a CE echo, want %v", ev, e.State, want)
			}
			if got := evs.Stats().SkipsHeld - held; (got == 1) != allMarked {
				t.Errorf("SkipsHeld rose by %d", got)
			}
		})
	}
}
