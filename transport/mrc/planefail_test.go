package mrc

import (
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// Each plane has its own window (Sender.planeCC): trims of plane 0's packets shrink plane 0's
// window only, and the next window's worth of packets goes mostly to plane 1, whose window
// stays at its maximum. With one window for the connection (before), the same trims cut the
// packets of both planes alike.
func TestPlaneWindowsIndependent(t *testing.T) {
	s := newStressSender(t, Config{}, 2, 64<<20)
	s.SetPlaneBacklog(2, func(int) int64 { return 0 })
	now := 10 * sim.Microsecond
	s.Pump(now)
	max1 := s.PlaneCC(1).MaxWindow()
	// Trim NACKs for every plane-0 packet of the first window, a base RTT apart so each can
	// count, then a SACK for every plane-1 packet.
	var p0, p1 []uint32
	for _, h := range s.Out() {
		if pl, _, _ := s.EVs().Route(int(h.EV)); pl == 0 {
			p0 = append(p0, h.PSN)
		} else {
			p1 = append(p1, h.PSN)
		}
	}
	out := append([]Header(nil), s.Out()...)
	s.ClearOut()
	if len(p0) == 0 || len(p1) == 0 {
		t.Fatalf("first window: %d packets on plane 0, %d on plane 1; want both", len(p0), len(p1))
	}
	for i, psn := range p0 {
		now += sim.Microsecond
		var ev uint16
		for _, h := range out {
			if h.PSN == psn {
				ev = h.EV
			}
		}
		s.OnNACK(now, &Header{Kind: NACK, QP: 7, Reason: NackTrimmed, NackPSN: psn, CumPSN: 0, EchoEV: ev, EchoTS: now - s.baseRTT})
		if i == len(p0)/2 {
			now += 3 * s.baseRTT // let quick adapt close its interval
		}
	}
	w0, w1 := s.PlaneCC(0).Window(), s.PlaneCC(1).Window()
	t.Logf("after %d trims on plane 0: windows %d B and %d B (max %d B); in flight %d and %d B",
		len(p0), w0, w1, max1, s.PlaneInFlight(0), s.PlaneInFlight(1))
	if w1 != max1 {
		t.Errorf("plane 1's window %d B; want its maximum %d B (no signal on plane 1)", w1, max1)
	}
	if w0 >= max1 {
		t.Errorf("plane 0's window %d B after %d trims; want below %d B", w0, len(p0), max1)
	}
	for p := range 2 {
		if got := s.PlaneInFlight(p); got > s.PlaneCC(p).Window()+int64(s.cfg.WireBytes(s.cfg.PayloadBytes)) {
			t.Errorf("plane %d: %d B in flight over its window %d B", p, got, s.PlaneCC(p).Window())
		}
	}
	if s.PlaneInFlight(1) <= s.PlaneInFlight(0) {
		t.Errorf("in flight: plane 0 %d B, plane 1 %d B; want more on the untrimmed plane", s.PlaneInFlight(0), s.PlaneInFlight(1))
	}
}

// Losses on different EVs of one route add up (Sender.rtStrike): StrikeLimit losses on the
// route retire it even when no EV lost more than one packet. Counted per EV only (before),
// each EV of a failed route had to lose StrikeLimit packets itself, one per rotation of the
// active set.
func TestBlameRouteStrikes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sameEV   bool
		losses   int
		retire   bool
		planes   int
		interval int // clean deliveries on the route between losses
	}{
		{"3 losses on 3 EVs of a route", false, 3, true, 1, 0},
		{"3 losses on 3 EVs of a route, 2 planes", false, 3, true, 2, 0},
		{"2 losses on 2 EVs of a route", false, 2, false, 1, 0},
		{"3 losses on one EV", true, 3, true, 1, 0},
		{"1 loss in 3 packets of a route", false, 20, false, 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStressSender(t, Config{}, tc.planes, 1<<20)
			s.Stats.DataPackets = 100_000
			now := 100 * sim.Microsecond
			s.rackXmit = now
			// The active EVs on plane 0's path 0.
			var evs []int
			for e := 0; e < s.EVs().Len(); e++ {
				pl, pa, _ := s.EVs().Route(e)
				if en, _ := s.EVs().Entry(e); en.Active && pl == 0 && pa == 0 {
					evs = append(evs, e)
				}
			}
			if len(evs) < tc.losses && !tc.sameEV {
				t.Fatalf("%d active EVs on the route; want %d", len(evs), tc.losses)
			}
			for i := 0; i < tc.losses; i++ {
				ev := evs[0]
				if !tc.sameEV {
					ev = evs[i%len(evs)]
				}
				p := pktState{ev: uint16(ev), sentAt: now - sim.Microsecond, state: stLost}
				s.blame(now, &p)
				for range tc.interval {
					if r := s.route[ev]; s.rtStrike[r] > 0 {
						s.rtStrike[r]--
					}
				}
			}
			if got := s.EVs().Stats().Retirements > 0; got != tc.retire {
				t.Errorf("retired %v, want %v (route strikes %d, limit %d)", got, tc.retire, s.rtStrike[s.route[evs[0]]], s.StrikeLimit())
			}
		})
	}
}
