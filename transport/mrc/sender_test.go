package mrc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

func newGateSender(t *testing.T) *Sender {
	t.Helper()
	cfg := Config{}.WithDefaults()
	path := Path{Planes: 2, PathsPerPlane: []int{4, 4}, BaseRTT: 10 * sim.Microsecond,
		NICRate: 200 * sim.Gbps, MaxQueueDelay: sim.Microsecond}
	s, err := NewSender(cfg, 0, path, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	s.Post(0, 1<<20)
	return s
}

// dataPlanes counts the data packets in the outbox per plane.
func dataPlanes(s *Sender) [2]int {
	var n [2]int
	for _, h := range s.Out() {
		if h.Kind == Data {
			p, _, _ := s.EVs().Route(int(h.EV))
			n[p]++
		}
	}
	return n
}

// The NIC gate (SetNICGate): with gate 1, Pump hands each plane whose port has nothing waiting
// one packet and stops, Gated; packets put in the outbox during the Pump count as waiting. A
// port that is down (backlog MaxInt64) has its EVs denied: with every port down nothing is
// sent and the ACK timeout runs, so the QP errors instead of waiting for room forever. Without the gate the whole window goes.
func TestSenderNICGate(t *testing.T) {
	cases := []struct {
		name    string
		backlog [2]int64
		gate    int64
		want    [2]int
		gated   bool
	}{
		{"both ports empty: one each", [2]int64{0, 0}, 1, [2]int{1, 1}, true},
		{"plane 1 busy: plane 0 only", [2]int64{0, 5000}, 1, [2]int{1, 0}, true},
		{"both busy: nothing", [2]int64{100, 5000}, 1, [2]int{0, 0}, true},
		{"plane 1 down: plane 0 only", [2]int64{0, math.MaxInt64}, 1, [2]int{1, 0}, true},
		{"every port down: every EV denied, nothing sent, the ACK timeout armed", [2]int64{math.MaxInt64, math.MaxInt64}, 1, [2]int{0, 0}, false},
		{"no gate: the window", [2]int64{0, 0}, 0, [2]int{-1, -1}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newGateSender(t)
			s.SetPlaneBacklog(2, func(p int) int64 { return tc.backlog[p] })
			s.SetNICGate(tc.gate)
			s.Pump(0)
			got := dataPlanes(s)
			if s.Gated() != tc.gated {
				t.Fatalf("Gated %v, want %v (sent %v)", s.Gated(), tc.gated, got)
			}
			for p := range got {
				if tc.want[p] >= 0 && got[p] != tc.want[p] {
					t.Fatalf("sent per plane %v, want %v", got, tc.want)
				}
			}
			if tc.backlog[0] == math.MaxInt64 && tc.backlog[1] == math.MaxInt64 {
				if s.Stats.NoEVStalls != 1 || s.Deadline() == sim.MaxTime {
					t.Fatalf("all ports down: %d no-EV stalls, deadline %v; want 1 and an armed timeout", s.Stats.NoEVStalls, s.Deadline())
				}
			}
			if tc.want[0] < 0 || tc.want[1] < 0 {
				// Window-limited: everything the window allows went out.
				if s.InFlight()+int64(s.cfg.WireBytes(s.cfg.PayloadBytes)) <= s.CC().Window() {
					t.Fatalf("in flight %d B with window %d B: the window was not filled", s.InFlight(), s.CC().Window())
				}
			}
		})
	}
}

// Data headers report the sender's in-flight bytes and whether the receiver's share holds it
// (Header.InFlight, Held): held once the share is reached with more to send, below the
// congestion window; not held without a share, with a share above the window, or with
// nothing left to send.
func TestSenderReportsHeld(t *testing.T) {
	cfg := Config{}.WithDefaults()
	wire := int64(cfg.WireBytes(cfg.PayloadBytes))
	for _, tc := range []struct {
		name     string
		share    int64 // RcvWnd of the first answer; 0 none
		bytes    int64 // posted
		wantHeld bool
	}{
		{"no share", 0, 1 << 20, false},
		{"share of 4 packets", 4 * wire, 1 << 20, true},
		{"share above the window", 1 << 30, 1 << 20, false},
		{"share reached with nothing left", 4 * wire, 4 * int64(cfg.PayloadBytes), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := Path{Planes: 1, PathsPerPlane: []int{8}, BaseRTT: 10 * sim.Microsecond,
				NICRate: 100 * sim.Gbps, MaxQueueDelay: sim.Microsecond}
			s, err := NewSender(cfg, 0, path, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			s.Post(0, 1)
			s.Pump(0)
			first := s.Out()[0]
			s.ClearOut()
			// The first packet's answer carries the share.
			s.OnSACK(sim.Microsecond*10, &Header{Kind: SACK, CumPSN: 1, BitmapBase: 2, EchoEV: first.EV, EchoTS: 0, RcvWnd: uint32(tc.share)})
			s.ClearOut()
			s.Post(sim.Microsecond*10, tc.bytes)
			s.Pump(sim.Microsecond * 10)
			out := s.Out()
			if len(out) == 0 {
				t.Fatal("nothing sent")
			}
			last := out[len(out)-1]
			if int64(last.InFlight) != s.InFlight() {
				t.Errorf("last header InFlight %d, sender in flight %d", last.InFlight, s.InFlight())
			}
			if last.Held != tc.wantHeld {
				t.Errorf("last header Held %v, want %v (in flight %d, share %d, window %d)", last.Held, tc.wantHeld, s.InFlight(), tc.share, s.Window())
			}
			for _, h := range out[:len(out)-1] {
				if tc.share > 0 && h.Held && int64(h.InFlight) < tc.share {
					t.Errorf("header with %d B in flight of a %d B share says Held", h.InFlight, tc.share)
				}
			}
		})
	}
}
