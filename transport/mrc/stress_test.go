package mrc

import (
	"math/rand/v2"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// newStressSender is a sender of one transfer of bytes over planes planes of 4 paths each,
// base RTT 10 us at 100 Gb/s per plane, with cfg's settings.
func newStressSender(t *testing.T, cfg Config, planes int, bytes int64) *Sender {
	t.Helper()
	pp := make([]int, planes)
	for i := range pp {
		pp[i] = 4
	}
	path := Path{Planes: planes, PathsPerPlane: pp, BaseRTT: 10 * sim.Microsecond,
		NICRate: sim.Rate(planes) * 100 * sim.Gbps, MaxQueueDelay: sim.Microsecond}
	s, err := NewSender(cfg, 7, path, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		t.Fatal(err)
	}
	s.Post(0, bytes)
	return s
}

// sackFor answers the data packets of psns at once: cumulative PSN cum, the bitmap of the
// given PSNs above it, echoing the last one's EV and send time.
func sackFor(s *Sender, cum uint32, psns []uint32, out []Header) Header {
	h := Header{Kind: SACK, QP: 7, CumPSN: cum, BitmapBase: cum + 1}
	for _, p := range psns {
		if p > cum {
			h.Bitmap |= 1 << (p - cum - 1)
		}
		for _, o := range out {
			if o.Kind == Data && o.PSN == p {
				h.EchoEV, h.EchoTS = o.EV, o.TS
			}
		}
	}
	return h
}

// The automatic strike limit follows the background loss rate: p^k <= 1e-9, at least 3 and
// at most 8 (Sender.StrikeLimit).
func TestStrikeLimit(t *testing.T) {
	for _, tc := range []struct {
		losses, packets int64
		want            int
	}{
		{0, 0, 3}, {0, 1_000_000, 3}, {1, 1000, 3}, {4, 1000, 4}, {10, 1000, 5}, {40, 1000, 7},
		{200, 1000, 8}, {1000, 1000, 8},
	} {
		s := newStressSender(t, Config{}, 1, 1<<20)
		s.bgLosses, s.Stats.DataPackets = tc.losses, tc.packets
		if got := s.StrikeLimit(); got != tc.want {
			t.Errorf("%d losses in %d packets: limit %d, want %d", tc.losses, tc.packets, got, tc.want)
		}
	}
	s := newStressSender(t, Config{LossStrikes: 2}, 1, 1<<20)
	if got := s.StrikeLimit(); got != 2 {
		t.Errorf("loss_strikes 2: limit %d", got)
	}
}

// blame: a loss on a path counts only when the destination is not congested (no trim on
// another plane within the hold) and something sent later was delivered; two strikes per
// loss, one back per clean delivery, retirement at twice the limit.
func TestBlame(t *testing.T) {
	cases := []struct {
		name       string
		trimPlane  int // -1: no trim NACK; else a trim NACK seen on this plane just before
		later      bool
		losses     int
		retire     bool
		congestion int64
		unattrib   int64
	}{
		{"clean fabric: 3 losses retire", -1, true, 3, true, 0, 0},
		{"clean fabric: 2 losses do not", -1, true, 2, false, 0, 0},
		{"nothing later delivered: never", -1, false, 5, false, 0, 5},
		{"trims on another plane: congestion", 1, true, 5, false, 5, 0},
		{"trims on the lost packet's own plane only: still counts", 0, true, 3, true, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStressSender(t, Config{}, 2, 1<<20)
			s.Stats.DataPackets = 100_000
			ev := -1
			for e := 0; e < s.EVs().Len(); e++ {
				if pl, _, _ := s.EVs().Route(e); pl == 0 {
					if en, _ := s.EVs().Entry(e); en.Active {
						ev = e
						break
					}
				}
			}
			now := 100 * sim.Microsecond
			if tc.trimPlane >= 0 {
				s.trimTil[tc.trimPlane] = now + s.holdCong
			}
			if tc.later {
				s.rackXmit = now
			}
			before := s.EVs().Stats().Retirements
			for i := 0; i < tc.losses; i++ {
				p := pktState{ev: uint16(ev), sentAt: now - sim.Microsecond, state: stLost}
				s.blame(now, &p)
			}
			retired := s.EVs().Stats().Retirements > before
			if retired != tc.retire {
				t.Errorf("retired %v, want %v (strikes %d, limit %d)", retired, tc.retire, s.strikes[ev], s.StrikeLimit())
			}
			if s.Stats.CongestionLosses != tc.congestion || s.Stats.UnattributedLosses != tc.unattrib {
				t.Errorf("excused: congestion %d, nothing later %d; want %d, %d", s.Stats.CongestionLosses, s.Stats.UnattributedLosses, tc.congestion, tc.unattrib)
			}
		})
	}
}

// Random loss on a healthy path, interleaved with deliveries, never retires it: 1 loss in 20
// packets on one EV, for 10,000 packets.
func TestBlameRandomLossNoRetirement(t *testing.T) {
	s := newStressSender(t, Config{}, 1, 1<<20)
	rng := rand.New(rand.NewPCG(9, 9))
	now := 100 * sim.Microsecond
	s.rackXmit = now
	s.Stats.DataPackets = 10_000
	s.bgLosses = 500 // 5% background: limit 7
	for i := 0; i < 10_000; i++ {
		if rng.IntN(20) == 0 {
			p := pktState{ev: 0, sentAt: now - 1, state: stLost}
			s.blame(now, &p)
		} else { // a clean delivery on the EV, hence on its route
			if s.strikes[0] > 0 {
				s.strikes[0]--
			}
			if r := s.route[0]; s.rtStrike[r] > 0 {
				s.rtStrike[r]--
			}
		}
	}
	if r := s.EVs().Stats().Retirements; r != 0 {
		t.Fatalf("%d retirements under 5%% random loss (limit %d)", r, s.StrikeLimit())
	}
}

// fifoLoss: an answer that reports a packet received and an earlier one on the same route
// missing declares the earlier one lost at once; one that reports only packets of other routes
// does not (those may be overtaken).
func TestFIFOLoss(t *testing.T) {
	s := newStressSender(t, Config{}, 1, 1<<20)
	s.Pump(0)
	out := append([]Header(nil), s.Out()...)
	s.ClearOut()
	// Two packets on the same route: the first and the next one with the same route.
	first := out[0]
	r0 := s.route[first.EV]
	same, other := -1, -1
	for i := 1; i < len(out); i++ {
		if s.route[out[i].EV] == r0 && same < 0 {
			same = i
		}
		if s.route[out[i].EV] != r0 && other < 0 {
			other = i
		}
	}
	if same < 0 || other < 0 {
		t.Fatal("window holds no second packet on the first's route")
	}
	// An answer reporting only a packet on another route: nothing lost.
	h := sackFor(s, 0, []uint32{out[other].PSN}, out)
	s.OnSACK(5*sim.Microsecond, &h)
	if n := s.Stats.Retx[RetxSackGap]; s.ring[first.PSN&s.mask].state != stInFlight || n != 0 {
		t.Fatalf("other route reported: first packet state %d, gap losses %d", s.ring[first.PSN&s.mask].state, n)
	}
	// An answer reporting the later packet on the same route: the first is lost.
	h = sackFor(s, 0, []uint32{out[same].PSN}, out)
	s.OnSACK(6*sim.Microsecond, &h)
	// Declared lost and, the window allowing, sent again at once (so in flight as a copy).
	if p := s.ring[first.PSN&s.mask]; p.state == stInFlight && !p.retx {
		t.Fatalf("same route reported received after it: first packet still in flight, never resent")
	}
	if n := s.Stats.Retx[RetxSackGap]; n != 1 {
		t.Fatalf("%d gap losses, want 1", n)
	}
}

// HostRx: no share for one QP, an equal share among several, the budget cut by 1/8 per base
// RTT of last-hop trims down to 9/8 BDP and regrown by placed bytes up to the maximum.
func TestHostRx(t *testing.T) {
	const bdp = 100_000
	h := NewHostRx(bdp, 1.4, 10*sim.Microsecond)
	cfg := Config{}.WithDefaults()
	rs := make([]*Receiver, 4)
	for i := range rs {
		rs[i] = NewReceiver(cfg, uint32(i))
		rs[i].SetHost(h)
	}
	data := func(r *Receiver, psn uint32, trimmed bool) {
		r.OnData(0, &Header{Kind: Data, PSN: psn, Len: 4096, LastPSN: 9}, trimmed, trimmed, false)
		r.ClearOut()
	}
	data(rs[0], 0, false)
	if h.Active() != 1 || h.Share() != 0 {
		t.Fatalf("one QP: active %d, share %d; want 1, 0 (no cap)", h.Active(), h.Share())
	}
	for _, r := range rs[1:] {
		data(r, 0, false)
	}
	if h.Active() != 4 || h.Share() != h.Budget()/4 {
		t.Fatalf("four QPs: active %d, share %d of %d", h.Active(), h.Share(), h.Budget())
	}
	// Trims at the last hop: one cut per base RTT, never below 9/8 BDP.
	b0 := h.Budget()
	for i := 0; i < 100; i++ {
		h.onLastHopTrim(sim.Time(i) * 10 * sim.Microsecond)
	}
	if h.Budget() != bdp*9/8 || h.Cuts == 0 || h.Budget() >= b0 {
		t.Fatalf("after trims: budget %d (cuts %d); want %d", h.Budget(), h.Cuts, bdp*9/8)
	}
	for i := 0; i < 10_000; i++ {
		h.onPlaced(4096)
	}
	if h.Budget() != bdp*14/10 {
		t.Fatalf("after placements: budget %d; want the maximum %d", h.Budget(), bdp*14/10)
	}
	// A QP whose transfer is placed leaves the count.
	for psn := uint32(1); psn <= 9; psn++ {
		data(rs[3], psn, false)
	}
	if h.Active() != 3 {
		t.Fatalf("after one transfer completed: active %d, want 3", h.Active())
	}
}

// TestHostRxShareOf: a QP held by the share gets what the QPs not held leave of the budget
// (each counted at its in-flight, at most the equal share), split equally among the held, at
// least the equal share; a QP not held gets the equal share; one QP alone gets none. Without
// SetMaxMin (rcv_share: equal, the default) every QP gets the equal share.
func TestHostRxShareOf(t *testing.T) {
	const bdp = 100_000 // budget 140,000 B at 1.4 BDP
	type qp struct {
		inflight uint32
		held     bool
	}
	for _, tc := range []struct {
		name  string
		equal bool // rcv_share: equal
		qps   []qp
		want  []int64
	}{
		{"equal: one held by its NIC", true, []qp{{20_000, false}, {70_000, true}}, []int64{70_000, 70_000}},
		{"equal: four, one held", true, []qp{{35_000, false}, {35_000, false}, {10_000, false}, {35_000, true}}, []int64{35_000, 35_000, 35_000, 35_000}},
		{"alone", false, []qp{{50_000, true}}, []int64{0}},
		{"all held", false, []qp{{70_000, true}, {70_000, true}}, []int64{70_000, 70_000}},
		{"none held", false, []qp{{10_000, false}, {20_000, false}}, []int64{70_000, 70_000}},
		{"one held by its NIC", false, []qp{{20_000, false}, {70_000, true}}, []int64{70_000, 120_000}},
		{"idle and held", false, []qp{{0, false}, {46_656, true}, {46_656, true}}, []int64{46_666, 70_000, 70_000}},
		{"not held above the equal share", false, []qp{{90_000, false}, {70_000, true}}, []int64{70_000, 70_000}},
		{"four, one held", false, []qp{{35_000, false}, {35_000, false}, {10_000, false}, {35_000, true}}, []int64{35_000, 35_000, 35_000, 60_000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHostRx(bdp, 1.4, 10*sim.Microsecond)
			h.SetMaxMin(!tc.equal)
			cfg := Config{}.WithDefaults()
			rs := make([]*Receiver, len(tc.qps))
			for i, q := range tc.qps {
				rs[i] = NewReceiver(cfg, uint32(i))
				rs[i].SetHost(h)
				rs[i].OnData(0, &Header{Kind: Data, PSN: 0, Len: 4096, LastPSN: 9, InFlight: q.inflight, Held: q.held}, false, false, false)
			}
			for i, r := range rs {
				r.ClearOut()
				r.OnData(0, &Header{Kind: Data, PSN: 1, Len: 4096, LastPSN: 9, InFlight: tc.qps[i].inflight, Held: tc.qps[i].held}, false, false, true)
				out := r.Out()
				if len(out) != 1 {
					t.Fatalf("qp %d: %d answers to a CE-marked packet; want 1", i, len(out))
				}
				// The wire carries the share in RcvWndUnit granules, rounded up.
				if got, want := int64(out[0].RcvWnd), (tc.want[i]+RcvWndUnit-1)/RcvWndUnit*RcvWndUnit; got != want && int64(out[0].RcvWnd) != tc.want[i] {
					t.Errorf("qp %d (%+v): share %d B; want %d", i, tc.qps[i], got, tc.want[i])
				}
			}
			// A QP leaving (its transfer placed) gives its part back.
			if len(rs) > 1 {
				for psn := uint32(2); psn <= 9; psn++ {
					rs[0].OnData(0, &Header{Kind: Data, PSN: psn, Len: 4096, LastPSN: 9}, false, false, false)
				}
				if h.Active() != len(rs)-1 {
					t.Fatalf("after qp 0 completed: active %d; want %d", h.Active(), len(rs)-1)
				}
			}
		})
	}
}

// A share below one packet paces: one packet per wire/share RTTs on average, never two in
// flight.
func TestPacingBelowOnePacket(t *testing.T) {
	s := newStressSender(t, Config{}, 1, 4<<20)
	s.rcvWnd = 1000 // about a quarter packet
	now := sim.Time(0)
	sent := 0
	for step := 0; step < 4000 && now < 2*sim.Millisecond; step++ {
		s.Pump(now)
		for _, h := range s.Out() {
			if h.Kind != Data {
				continue
			}
			sent++
			if s.InFlight() > int64(s.cfg.WireBytes(s.cfg.PayloadBytes)) {
				t.Fatalf("%d B in flight under a 1000 B share", s.InFlight())
			}
			// Answer it one base RTT later.
			a := Header{Kind: SACK, QP: 7, CumPSN: h.PSN + 1, BitmapBase: h.PSN + 2, EchoEV: h.EV, EchoTS: h.TS, RcvWnd: 1000}
			s.ClearOut()
			now += s.baseRTT
			s.OnSACK(now, &a)
			break
		}
		s.ClearOut()
		if d := s.Deadline(); d != sim.MaxTime && d > now {
			now = d
		} else {
			now += sim.Microsecond
		}
	}
	// 2 ms at one 4,230-byte packet per 4.23 x the RTT (10 us to 12.5 us, jitter +-50%):
	// about 40-50 packets.
	if sent < 30 || sent > 60 {
		t.Fatalf("%d packets in 2 ms under a quarter-packet share; want about 40-50", sent)
	}
	if s.Stats.PacedSends == 0 {
		t.Fatal("no paced sends counted")
	}
}

// The probe budget: with every EV of a QP retired at once, probes over 1 ms stay near one
// per probe interval plus the bucket, not one per EV per interval.
func TestProbeBudget(t *testing.T) {
	s := newStressSender(t, Config{}, 2, 1<<20)
	for ev := 0; ev < s.EVs().Len(); ev++ {
		s.EVs().OnLoss(ev)
	}
	_, _, bad, _, _ := s.EVs().Counts()
	if bad < 64 {
		t.Fatalf("only %d EVs retired", bad)
	}
	now := sim.Time(0)
	for now < sim.Millisecond {
		s.OnTimer(now)
		s.ClearOut()
		d := s.Deadline()
		if d <= now {
			d = now + sim.Microsecond
		}
		now = min(d, now+10*sim.Microsecond)
	}
	// 1 ms at one token per 50 us = 20, plus the bucket of 4; with per-EV probing it would be
	// bad x 20 = over 1,000.
	if n := s.Stats.ProbesSent; n > 20+ProbeBurst+1 || n < 10 {
		t.Fatalf("%d probes in 1 ms with %d EVs retired; want about 24", n, bad)
	}
}

// The per-packet path allocates nothing: answering and pumping a sender in steady state
// (fifoLoss, blame's bookkeeping, the receiver share, pacing) makes no allocation.
func TestSenderSteadyStateNoAlloc(t *testing.T) {
	s := newStressSender(t, Config{}, 2, 1<<40)
	s.Pump(0)
	now := sim.Time(0)
	var psn uint32
	allocs := testing.AllocsPerRun(1000, func() {
		now += sim.Microsecond
		out := s.Out()
		if len(out) == 0 {
			s.Pump(now)
			return
		}
		h := out[0]
		a := Header{Kind: SACK, QP: 7, CumPSN: h.PSN + 1, BitmapBase: h.PSN + 2, EchoEV: h.EV, EchoTS: h.TS, RcvWnd: 50_000}
		copy(out, out[1:])
		s.out = out[:len(out)-1]
		s.OnSACK(now, &a)
		psn = h.PSN
	})
	if allocs > 0 {
		t.Fatalf("%v allocations per answer (last PSN %d)", allocs, psn)
	}
}
