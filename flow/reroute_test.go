package flow

import (
	"fmt"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// at runs f at time t on s.
func at(s *sim.Sim, t sim.Time, f func()) {
	k := s.Register(fmt.Sprintf("test@%d", t), func(sim.Time, int32, uint64) { f() })
	s.At(t, k, 0, 0)
}

// TestRepathKeepsBytes: a flow moved at time t from a link of rate R to one of rate R2
// keeps the bytes it has left: it is delivered at t + (b - R t / 8) x 8 / R2, exactly,
// swept over the move time and the new rate; the old link carried R t / 8 bytes and the new
// one the rest.
func TestRepathKeepsBytes(t *testing.T) {
	const R, b = 100e9, int64(1e6) // 80 us alone on link 0
	for _, tc := range []struct {
		move sim.Time
		r2   float64
	}{{10 * sim.Microsecond, 100e9}, {40 * sim.Microsecond, 50e9}, {40 * sim.Microsecond, 400e9}, {79 * sim.Microsecond, 25e9}} {
		s, n := newNet(t, []float64{R, tc.r2}, Config{})
		var done sim.Time
		id, err := n.AddFlow(0, Flow{Src: 0, Dst: 1, Bytes: b, Paths: []Path{{Links: []int32{0}, Weight: 1}}, Done: func(now sim.Time) { done = now }})
		if err != nil {
			t.Fatal(err)
		}
		at(s, tc.move, func() {
			if err := n.Repath(id, []Path{{Links: []int32{1}, Weight: 1}}); err != nil {
				t.Error(err)
			}
		})
		if err := s.Drain(sim.MaxTime); err != nil {
			t.Fatal(err)
		}
		sent := R * tc.move.Seconds() / 8
		want := tc.move + sim.Time((float64(b)-sent)*8/tc.r2*1e12+0.5)
		bytes := n.LinkBytes(nil)
		t.Logf("move at %v to %.0f Gb/s: delivered at %v (want %v); bytes per link %.0f, %.0f", tc.move, tc.r2/1e9, done, want, bytes[0], bytes[1])
		if d := done - want; d < -1 || d > 1 {
			t.Errorf("move at %v: delivered at %v, want %v", tc.move, done, want)
		}
		if d := bytes[0] - sent; d > 1 || d < -1 || bytes[0]+bytes[1] < float64(b)-1 || bytes[0]+bytes[1] > float64(b)+1 {
			t.Errorf("move at %v: links carried %.1f and %.1f bytes; want %.1f and the rest of %d", tc.move, bytes[0], bytes[1], sent, b)
		}
	}
	_, n := newNet(t, []float64{R}, Config{})
	if err := n.Repath(99, nil); err == nil {
		t.Error("Repath of an unknown flow: no error")
	}
}

// TestHoldAndStalled: a held flow runs at rate 0 whatever its links (Stalled lists it as
// held, OnStall is not called for it) and resumes where it stopped when released; a flow
// through a dead link is listed with the time it stalled and the link, Blocked names the
// link, and DeliveredStall charges its stall to that link.
func TestHoldAndStalled(t *testing.T) {
	const R, b = 100e9, int64(1e6)
	hooks := 0
	s, n := newNet(t, []float64{R, R}, Config{OnStall: func(sim.Time, error) { hooks++ }})
	var heldDone, deadDone sim.Time
	var deadStall sim.Time
	deadLink := -9
	held, _ := n.AddFlow(0, Flow{Src: 1, Dst: 2, Bytes: b, Paths: []Path{{Links: []int32{0}, Weight: 1}}, Done: func(now sim.Time) { heldDone = now }})
	dead, _ := n.AddFlow(0, Flow{Src: 3, Dst: 4, Bytes: b, Paths: []Path{{Links: []int32{1}, Weight: 1}}, Done: func(now sim.Time) {
		deadDone = now
		deadLink, deadStall = n.DeliveredStall()
	}})
	at(s, 20*sim.Microsecond, func() { n.Hold(held, true); _ = n.SetCapacity(1, 0) })
	at(s, 30*sim.Microsecond, func() {
		st := n.Stalled(nil)
		if len(st) != 2 || !st[0].Held || st[1].ID != dead || st[1].Since != 20*sim.Microsecond || st[1].Link != 1 || st[1].Held {
			t.Errorf("Stalled = %+v; want the held flow and the dead one (since 20us, link 1)", st)
		}
		if n.Blocked(dead) != 1 || n.Blocked(held) != -1 || n.Blocked(99) != -2 {
			t.Errorf("Blocked: %d, %d, %d; want 1, -1, -2", n.Blocked(dead), n.Blocked(held), n.Blocked(99))
		}
	})
	at(s, 50*sim.Microsecond, func() { n.Hold(held, false); _ = n.SetCapacity(1, R) })
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	// Both stopped for 30 us: delivered at 80 + 30 us.
	if heldDone != 110*sim.Microsecond || deadDone != 110*sim.Microsecond {
		t.Errorf("delivered at %v and %v; want 110us for both", heldDone, deadDone)
	}
	if hooks != 1 {
		t.Errorf("OnStall called %d times; want once (the dead link, not the hold)", hooks)
	}
	if deadLink != 1 || deadStall != 30*sim.Microsecond {
		t.Errorf("DeliveredStall = %d, %v; want link 1, 30us", deadLink, deadStall)
	}
}

// TestCollectivesReroute: a ring all-reduce whose flows all cross link 0 of a two-link
// "fabric" (the router's choice), with link 0 failing half-way through and the router
// moving to link 1: Reroute moves every sending flow, the collective completes at the time
// the closed form gives for the two halves, and its bottleneck is charged to the links it
// crossed. Without Reroutable, Reroute is an error.
func TestCollectivesReroute(t *testing.T) {
	const R = 100e9
	for _, ranks := range []int{2, 4, 8} {
		s := sim.New(1)
		r := &switchRouter{link: 0}
		n, err := New(s, []float64{R, R}, Config{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewCollectives(n, r, CollConfig{Reroutable: true})
		if err != nil {
			t.Fatal(err)
		}
		comm, _ := collective.RangeComm(0, ranks, 1)
		sp := collective.Spec{Op: collective.AllGather, Algo: collective.Ring, Ranks: ranks, Bytes: int64(ranks) << 20, ChunkBytes: 512 << 10, Channels: 1}
		var end sim.Time
		if err := c.Launch(0, sp, comm, "ag", func(now sim.Time) { end = now }); err != nil {
			t.Fatal(err)
		}
		// Every flow shares link 0: ranks flows of (n-1)/n S at R/ranks each.
		per := float64(sp.Bytes) * float64(ranks-1) / float64(ranks)
		alone := per * 8 / (R / float64(ranks)) // seconds
		half := sim.Time(alone / 2 * 1e12)
		moved := 0
		at(s, half, func() {
			_ = n.SetCapacity(0, 0)
			r.link = 1
			var err error
			if moved, err = c.Reroute(nil); err != nil {
				t.Error(err)
			}
		})
		if err := s.Drain(sim.MaxTime); err != nil {
			t.Fatal(err)
		}
		want := sim.Time(alone * 1e12)
		res := c.Results()[0]
		t.Logf("%d ranks: %d flows moved at %v, done at %v (want %v), bottleneck link %d for %v", ranks, moved, half, end, want, res.Bottleneck, res.BottleneckTime)
		if moved != ranks || end < want-2 || end > want+2 {
			t.Errorf("%d ranks: moved %d flows, done at %v; want %d moved, done at %v", ranks, moved, end, ranks, want)
		}
		if res.Bottleneck != 1 && res.Bottleneck != 0 || res.BottleneckTime <= 0 {
			t.Errorf("%d ranks: bottleneck %d for %v; want link 0 or 1", ranks, res.Bottleneck, res.BottleneckTime)
		}
	}
	s := sim.New(1)
	n, _ := New(s, []float64{R}, Config{})
	c, _ := NewCollectives(n, &switchRouter{}, CollConfig{})
	if _, err := c.Reroute(nil); err == nil {
		t.Error("Reroute without Reroutable: no error")
	}
}

// switchRouter sends every flow over one link, which the test changes.
type switchRouter struct{ link int32 }

func (r *switchRouter) Paths(_, _ int, _ uint64, buf []Path) ([]Path, sim.Time, error) {
	return append(buf[:0], Path{Links: []int32{r.link}, Weight: 1}), 0, nil
}

// TestOwners: with Reroutable, Owners maps every flow in flight to its collective's launch
// index, as Owner does one by one; flows delivered and collectives done leave it; without
// Reroutable both say nothing.
func TestOwners(t *testing.T) {
	for _, reroutable := range []bool{true, false} {
		s, n, c := crossbarColls(t, 8, 1, CollConfig{Reroutable: reroutable})
		small, _ := collective.RangeComm(0, 4, 1)
		big, _ := collective.RangeComm(4, 4, 1)
		for i, sz := range []int64{1 << 16, 1 << 24} {
			comm := []collective.Comm{small, big}[i]
			if err := c.Launch(0, spec(collective.AllReduce, collective.Ring, 4, sz), comm, "", nil); err != nil {
				t.Fatal(err)
			}
		}
		check := func(when string, want map[int]int) {
			own := c.Owners()
			if !reroutable {
				if own != nil {
					t.Errorf("%s: Owners %v without Reroutable; want nil", when, own)
				}
				return
			}
			got := map[int]int{}
			for _, fi := range n.Flows(nil) {
				k, ok := own[fi.ID]
				if !ok || k != c.Owner(fi.ID) {
					t.Errorf("%s: flow %d: Owners %d (%v), Owner %d", when, fi.ID, k, ok, c.Owner(fi.ID))
				}
				got[k]++
			}
			if len(own) != len(n.Flows(nil)) || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: owners %v of %d flows; want flows per collective %v", when, own, len(n.Flows(nil)), want)
			}
		}
		at(s, sim.Microsecond, func() { check("both running", map[int]int{0: 4, 1: 4}) })
		at(s, 500*sim.Microsecond, func() { check("the small one done", map[int]int{1: 4}) })
		if err := s.Drain(sim.MaxTime); err != nil {
			t.Fatal(err)
		}
		check("all done", map[int]int{})
	}
}
