package fabric_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// newDumbbell builds h0 - sA = sB - h1: 800 Gb/s host links without delay around a 100 Gb/s
// link of delay d, so traffic in either direction queues at the slow link's egress ports
// (sA.p1 toward sB, sB.p0 toward sA). Source routes: h0 -> h1 is [1, 1], h1 -> h0 is [0, 0].
func newDumbbell(tb testing.TB, seed uint64, d sim.Time) *harness {
	tb.Helper()
	h := newHarness(tb, seed)
	h0, h1 := h.node("h0", fabric.Host), h.node("h1", fabric.Host)
	sA, sB := h.node("sA", fabric.Switch), h.node("sB", fabric.Switch)
	nic := fabric.QueueConfig{Limit: bigLimit}
	h.link(h0, sA, rate800, 0, nic, nic)
	h.link(sA, sB, rate100, d, nic, nic)
	h.link(sB, h1, rate800, 0, nic, nic)
	return h
}

var (
	fwd = []uint16{1, 1} // h0 -> h1 on the dumbbell
	rev = []uint16{0, 0} // h1 -> h0 on the dumbbell
)

// must fails the test on a non-nil error.
func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// portID returns the ID of the port named name.
func (h *harness) portID(name string) fabric.PortID {
	h.tb.Helper()
	id, ok := h.n.PortByName(name)
	if !ok {
		h.tb.Fatalf("no port %s", name)
	}
	return id
}

// deliveredFrom counts the deliveries from host src.
func (h *harness) deliveredFrom(src int32) int {
	k := 0
	for _, a := range h.got {
		if a.src == src {
			k++
		}
	}
	return k
}

// TestSetLinkDown fails the slow link of a dumbbell while each direction has packets delivered,
// on the wire, on the transmitter and queued, and checks SetLinkDown's documented choices in
// both directions: queued packets are flushed at once, the one on the transmitter and the
// ones on the wire are lost even when the link is repaired before they would have arrived,
// packets offered while it is down are dropped at the port, the counters hold one transition
// and the outage's length, and traffic flows again after the repair.
func TestSetLinkDown(t *testing.T) {
	const d = 1_000_000 // 1 us: about three 4 KiB packets on the 100 Gb/s wire
	// Packet k (of 20 sent at t = 0, in each direction) reaches the slow port at (k+1) tx800
	// and leaves it at tx800 + (k+1) tx100. At the failure, tx800 + 5.5 tx100: packets 0-1
	// have arrived, 2-4 are on the wire (the first arrives at fail + 0.55 tx100), 5 is on the
	// transmitter (until fail + 0.5 tx100) and 6-19 are queued.
	const fail = tx800 + 11*tx100/2
	const delivered, lost, flushed = 2, 18, 14
	for _, tc := range []struct {
		name   string
		repair sim.Time // after the failure
		during int      // packets each host sends while the link is down
	}{
		{"outage of 10us with traffic during it", 10_000_000, 3},
		{"repaired before the packets on the wire arrive", tx100 / 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newDumbbell(t, 1, d)
			a, b := h.portID("sA.p1"), h.portID("sB.p0")
			pa, pb := &h.n.Ports[a], &h.n.Ports[b]
			h.sendN(0, 20, pkt{src: 0, dst: 1, route: fwd})
			h.sendN(0, 20, pkt{src: 1, dst: 0, route: rev})
			h.at(fail, func(now sim.Time) {
				must(t, h.n.SetLinkDown(now, a, true))
				must(t, h.n.SetLinkDown(now, b, true)) // the same link from its other end: no new transition
				for _, p := range []*fabric.Port{pa, pb} {
					if !p.Down || p.QueueBytes() != 0 {
						t.Errorf("%s at the failure: down %v, %d B queued; want down and flushed", p.Name, p.Down, p.QueueBytes())
					}
				}
			})
			h.at(fail+tc.repair/2, func(now sim.Time) {
				if got := pa.DownTime(now); got != tc.repair/2 {
					t.Errorf("DownTime mid-outage = %v, want %v", got, tc.repair/2)
				}
			})
			if tc.during > 0 {
				h.sendN(fail+tc.repair/2, tc.during, pkt{src: 0, dst: 1, route: fwd})
				h.sendN(fail+tc.repair/2, tc.during, pkt{src: 1, dst: 0, route: rev})
			}
			h.at(fail+tc.repair, func(now sim.Time) {
				must(t, h.n.SetLinkDown(now, b, false))
				must(t, h.n.SetLinkDown(now, a, false))
			})
			end := fail + tc.repair + 5*d
			h.run(end)
			h.audit()
			for _, src := range []int32{0, 1} {
				if got := h.deliveredFrom(src); got != delivered {
					t.Errorf("delivered %d from h%d, want %d", got, src, delivered)
				}
			}
			if got, want := h.n.C.Dropped[fabric.DropLinkDown], int64(2*(lost+tc.during)); got != want {
				t.Errorf("link_down drops %d, want %d", got, want)
			}
			for _, p := range []*fabric.Port{pa, pb} {
				tot := p.Totals()
				if tot.Drops[fabric.DropLinkDown] != int64(lost+tc.during) || tot.Flushed != flushed {
					t.Errorf("%s: %d link_down drops, %d flushed; want %d and %d", p.Name, tot.Drops[fabric.DropLinkDown], tot.Flushed, lost+tc.during, flushed)
				}
				if p.Down || p.Downs() != 1 || p.DownTime(h.s.Now()) != tc.repair {
					t.Errorf("%s: down %v, %d transitions, down for %v; want up, 1, %v", p.Name, p.Down, p.Downs(), p.DownTime(h.s.Now()), tc.repair)
				}
			}
			// Repaired: traffic flows again in both directions.
			h.sendN(end, 5, pkt{src: 0, dst: 1, route: fwd})
			h.sendN(end, 5, pkt{src: 1, dst: 0, route: rev})
			h.run(sim.MaxTime)
			h.audit()
			for _, src := range []int32{0, 1} {
				if got := h.deliveredFrom(src); got != delivered+5 {
					t.Errorf("after the repair: delivered %d from h%d, want %d", got, src, delivered+5)
				}
			}
			if h.n.InFlight() != 0 {
				t.Errorf("%d packets left in the fabric", h.n.InFlight())
			}
		})
	}
}

// TestLinkFlaps: a link failed and repaired many times counts every transition and the sum of
// its outages on both ends, and the books balance throughout.
func TestLinkFlaps(t *testing.T) {
	h := newDumbbell(t, 3, 200_000)
	a := h.portID("sA.p1")
	h.sendN(0, 400, pkt{src: 0, dst: 1, route: fwd})
	h.sendN(0, 400, pkt{src: 1, dst: 0, route: rev})
	const flaps, period, outage = 12, 3_000_000, 700_000
	for i := range flaps {
		at := sim.Time(i+1) * period
		h.at(at, func(now sim.Time) { must(t, h.n.SetLinkDown(now, a, true)) })
		h.at(at+outage, func(now sim.Time) { must(t, h.n.SetLinkDown(now, a, false)) })
	}
	h.run(sim.MaxTime)
	h.audit()
	for _, name := range []string{"sA.p1", "sB.p0"} {
		p := &h.n.Ports[h.portID(name)]
		if p.Downs() != flaps || p.DownTime(h.s.Now()) != flaps*outage {
			t.Errorf("%s: %d transitions, down %v; want %d and %v", name, p.Downs(), p.DownTime(h.s.Now()), flaps, sim.Time(flaps*outage))
		}
	}
	c := h.n.C
	if c.Dropped[fabric.DropLinkDown] == 0 || c.DeliveredWhole == 0 {
		t.Errorf("books %+v: want both deliveries and link_down drops", c)
	}
}

// TestLossRate: random loss and bit errors on one direction of a link lose the expected
// fraction of packets (within 3 standard deviations of the binomial count), counted as loss
// at that port, and nothing in the other direction.
func TestLossRate(t *testing.T) {
	const n = 20_000 // packets per direction
	// berFor returns the bit error rate that loses a packet of size bytes with probability q.
	berFor := func(q float64, size int) float64 { return -math.Expm1(math.Log1p(-q) / float64(8*size)) }
	berLoss := func(ber float64, size int32) float64 { return 1 - math.Pow(1-ber, float64(8*size)) }
	ber := berFor(0.1, mtu)
	for _, tc := range []struct {
		name  string
		set   func(h *harness, p fabric.PortID)
		sizes []int32                  // cycled over the packets
		want  func(size int32) float64 // loss probability of one packet
	}{
		{"loss 0.1", func(h *harness, p fabric.PortID) { must(t, h.n.SetLoss(p, 0.1)) },
			[]int32{mtu}, func(int32) float64 { return 0.1 }},
		{"loss 0.01", func(h *harness, p fabric.PortID) { must(t, h.n.SetLoss(p, 0.01)) },
			[]int32{mtu}, func(int32) float64 { return 0.01 }},
		{"loss 0", func(h *harness, p fabric.PortID) { must(t, h.n.SetLoss(p, 0)) },
			[]int32{mtu}, func(int32) float64 { return 0 }},
		{"loss 1", func(h *harness, p fabric.PortID) { must(t, h.n.SetLoss(p, 1)) },
			[]int32{mtu}, func(int32) float64 { return 1 }},
		{"BER by packet size", func(h *harness, p fabric.PortID) { must(t, h.n.SetBER(p, ber)) },
			[]int32{mtu, 64, 1500, mtu}, func(s int32) float64 { return berLoss(ber, s) }},
		{"loss and BER together", func(h *harness, p fabric.PortID) {
			must(t, h.n.SetLoss(p, 0.05))
			must(t, h.n.SetBER(p, ber))
		}, []int32{mtu, 512}, func(s int32) float64 { return 1 - 0.95*(1-berLoss(ber, s)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newLine(t, 7, lineOpts{delay: testDelay, nic: fabric.QueueConfig{Limit: bigLimit}})
			lossy := h.portID("s1.p1") // s1 toward s2: the h0 -> h1 direction
			tc.set(h, lossy)
			var mean, variance float64
			h.at(0, func(now sim.Time) {
				for i := range n {
					size := tc.sizes[i%len(tc.sizes)]
					h.send(now, pkt{src: 0, dst: 1, size: size, route: lineRoute(1, 0, 0)})
					h.send(now, pkt{src: 1, dst: 0, size: size, route: []uint16{0, 0, 0}})
					q := tc.want(size)
					mean += q
					variance += q * (1 - q)
				}
			})
			h.run(sim.MaxTime)
			h.audit()
			lost := h.n.C.Dropped[fabric.DropLoss]
			if tol := 3*math.Sqrt(variance) + 1e-9; math.Abs(float64(lost)-mean) > tol {
				t.Errorf("lost %d of %d, want %.1f +- %.1f (3 sigma)", lost, n, mean, tol)
			}
			t.Logf("lost %d of %d (expected %.1f)", lost, n, mean)
			if got := h.port("s1", 1).Totals().Drops[fabric.DropLoss]; got != lost {
				t.Errorf("s1.p1 counts %d loss drops, the network %d", got, lost)
			}
			if got := h.deliveredFrom(0); int64(got) != n-lost {
				t.Errorf("delivered %d from h0, want %d - %d", got, n, lost)
			}
			if got := h.deliveredFrom(1); got != n {
				t.Errorf("delivered %d from h1 (the healthy direction), want %d", got, n)
			}
		})
	}
}

// TestEntropyLoss: entropy filters lose only the packets of their entropy value, on their
// port's direction only; removing a filter restores the path.
func TestEntropyLoss(t *testing.T) {
	const perEV, evs = 2000, 8
	h := newLine(t, 5, lineOpts{delay: testDelay, nic: fabric.QueueConfig{Limit: bigLimit}})
	p := h.portID("s1.p1")
	must(t, h.n.SetEntropyLoss(p, 3, 1))   // a dead path
	must(t, h.n.SetEntropyLoss(p, 5, 0.5)) // a gray path
	must(t, h.n.SetEntropyLoss(p, 6, 0.2))
	must(t, h.n.SetEntropyLoss(p, 6, 0)) // removed again
	send := func(t0 sim.Time) {
		h.at(t0, func(now sim.Time) {
			for i := range perEV * evs {
				ev := uint32(i % evs)
				h.send(now, pkt{src: 0, dst: 1, entropy: ev, flow: int32(ev), route: lineRoute(1, 0, 0)})
				h.send(now, pkt{src: 1, dst: 0, entropy: ev, flow: int32(ev), route: []uint16{0, 0, 0}})
			}
		})
	}
	count := func() (fwd, back [evs]int) {
		for _, a := range h.got {
			if a.src == 0 {
				fwd[a.flow]++
			} else {
				back[a.flow]++
			}
		}
		return
	}
	send(0)
	h.run(sim.MaxTime)
	h.audit()
	fwdGot, backGot := count()
	for ev := range evs {
		want, tol := float64(perEV), 0.0
		switch ev {
		case 3:
			want = 0
		case 5:
			want, tol = perEV/2, 3*math.Sqrt(perEV*0.25)
		}
		if math.Abs(float64(fwdGot[ev])-want) > tol {
			t.Errorf("entropy %d: delivered %d of %d, want %.0f +- %.0f", ev, fwdGot[ev], perEV, want, tol)
		}
		if backGot[ev] != perEV {
			t.Errorf("entropy %d, reverse direction: delivered %d of %d", ev, backGot[ev], perEV)
		}
	}
	lost := h.n.C.Dropped[fabric.DropLoss]
	if got := h.port("s1", 1).Totals().Drops[fabric.DropLoss]; got != lost || lost != int64(2*perEV*evs-len(h.got)) {
		t.Errorf("loss drops: port %d, network %d, missing deliveries %d", got, lost, 2*perEV*evs-len(h.got))
	}

	// Remove both filters: every path delivers again.
	must(t, h.n.SetEntropyLoss(p, 3, 0))
	must(t, h.n.SetEntropyLoss(p, 5, 0))
	h.got = h.got[:0]
	send(h.s.Now())
	h.run(sim.MaxTime)
	h.audit()
	if len(h.got) != 2*perEV*evs {
		t.Errorf("after removing the filters: delivered %d of %d", len(h.got), 2*perEV*evs)
	}
}

// TestBlackhole: a blackholed switch drops what it receives, counted as blackhole in its own
// Drops, while its queued packets still leave; switched off, it forwards again.
func TestBlackhole(t *testing.T) {
	h := newDumbbell(t, 1, 1_000_000)
	sA := h.n.Ports[h.portID("sA.p1")].Node
	// All 20 h0 -> h1 packets reach sA by 20 tx800 and queue at its slow port; the h1 -> h0
	// ones reach sA after tx800 + tx100 + 1us.
	on := 21 * tx800 / 2 // packets 0-9 have reached sA
	h.sendN(0, 20, pkt{src: 0, dst: 1, route: fwd})
	h.sendN(0, 20, pkt{src: 1, dst: 0, route: rev})
	h.at(on, func(sim.Time) { must(t, h.n.SetBlackhole(sA, true)) })
	h.run(20_000_000)
	h.audit()
	if !h.n.Nodes[sA].Blackholed() {
		t.Error("sA is not blackholed")
	}
	if got := h.deliveredFrom(0); got != 10 {
		t.Errorf("delivered %d from h0, want the 10 queued at sA before the blackhole", got)
	}
	if got := h.deliveredFrom(1); got != 0 {
		t.Errorf("delivered %d from h1 through the blackhole, want 0", got)
	}
	if c, nd := h.n.C.Dropped[fabric.DropBlackhole], h.n.Nodes[sA].Drops[fabric.DropBlackhole]; c != 30 || nd != 30 {
		t.Errorf("blackhole drops: network %d, sA %d; want 30", c, nd)
	}
	must(t, h.n.SetBlackhole(sA, false))
	h.sendN(h.s.Now(), 5, pkt{src: 0, dst: 1, route: fwd})
	h.sendN(h.s.Now(), 5, pkt{src: 1, dst: 0, route: rev})
	h.run(sim.MaxTime)
	h.audit()
	if a, b := h.deliveredFrom(0), h.deliveredFrom(1); a != 15 || b != 5 {
		t.Errorf("after switching the blackhole off: delivered %d and %d, want 15 and 5", a, b)
	}
}

// TestFaultErrors: bad arguments are errors naming the port or node, never panics, and leave
// the state unchanged; the entropy filter table holds MaxEntropyFilters.
func TestFaultErrors(t *testing.T) {
	h := newLine(t, 1, lineOpts{})
	p := h.portID("s1.p1")
	nan := math.NaN()
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"SetLinkDown unknown port", h.n.SetLinkDown(0, -1, true)},
		{"SetLinkDown port past the end", h.n.SetLinkDown(0, fabric.PortID(len(h.n.Ports)), true)},
		{"SetLinkDown in the future", h.n.SetLinkDown(5, p, true)},
		{"SetLoss unknown port", h.n.SetLoss(99, 0.1)},
		{"SetLoss negative", h.n.SetLoss(p, -0.1)},
		{"SetLoss above 1", h.n.SetLoss(p, 1.5)},
		{"SetLoss NaN", h.n.SetLoss(p, nan)},
		{"SetBER unknown port", h.n.SetBER(-3, 1e-12)},
		{"SetBER above 1", h.n.SetBER(p, 2)},
		{"SetBER NaN", h.n.SetBER(p, nan)},
		{"SetEntropyLoss unknown port", h.n.SetEntropyLoss(99, 1, 0.1)},
		{"SetEntropyLoss NaN", h.n.SetEntropyLoss(p, 1, nan)},
		{"SetEntropyLoss negative", h.n.SetEntropyLoss(p, 1, -1)},
		{"SetBlackhole unknown node", h.n.SetBlackhole(99, true)},
		{"SetBlackhole negative node", h.n.SetBlackhole(-1, true)},
		{"SetBlackhole host", h.n.SetBlackhole(0, true)},
		{"SetSwitchFailed unknown node", h.n.SetSwitchFailed(99, true)},
		{"SetSwitchFailed negative node", h.n.SetSwitchFailed(-1, true)},
		{"SetSwitchFailed host", h.n.SetSwitchFailed(0, true)},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
		} else {
			t.Logf("%s: %v", tc.name, tc.err)
		}
	}
	if pt := &h.n.Ports[p]; pt.Down || pt.Downs() != 0 || h.n.Nodes[0].Blackholed() || h.n.Nodes[0].Failed() {
		t.Error("a failed call changed the state")
	}

	for ev := range uint32(fabric.MaxEntropyFilters) {
		must(t, h.n.SetEntropyLoss(p, ev, 0.5))
	}
	if err := h.n.SetEntropyLoss(p, 100, 0.5); err == nil {
		t.Error("a filter beyond MaxEntropyFilters was accepted")
	}
	must(t, h.n.SetEntropyLoss(p, 2, 1))     // replacing one in a full table
	must(t, h.n.SetEntropyLoss(p, 100, 0))   // removing one that does not exist
	must(t, h.n.SetEntropyLoss(p, 1, 0))     // removing one makes room
	must(t, h.n.SetEntropyLoss(p, 100, 0.5)) // for another
}

// faultRun runs a Clos with ECMP traffic, ECN marking and every fault, and returns what it
// delivered and its books.
func faultRun(t *testing.T, seed uint64) ([]arrival, fabric.Counters) {
	sw := fabric.QueueConfig{Limit: 64 << 10, ECN: fabric.ECNConfig{Enabled: true, Kmin: 8 << 10, Kmax: 48 << 10, Pmax: 0.2}}
	h := newClos(t, seed, rate800, testDelay, fabric.QueueConfig{Limit: bigLimit}, sw)
	rng := sim.Stream(seed, "test.traffic")
	h.at(0, func(now sim.Time) {
		for i := range 3000 {
			src := int32(i % 4)
			dst := (src + 1 + int32(rng.IntN(3))) % 4
			h.send(now, pkt{src: src, dst: dst, size: int32(64 + rng.IntN(mtu-63)), flags: fabric.ECT,
				sport: uint16(rng.Uint32()), entropy: rng.Uint32() % 16, flow: int32(i)})
		}
	})
	must(t, h.n.SetLoss(h.portID("l0.p2"), 0.02))
	must(t, h.n.SetBER(h.portID("S1.p1"), 1e-6))
	must(t, h.n.SetEntropyLoss(h.portID("l1.p3"), 7, 0.5))
	link := h.portID("S0.p0")
	h.at(3_000_000, func(now sim.Time) { must(t, h.n.SetLinkDown(now, link, true)) })
	h.at(3_500_000, func(now sim.Time) { must(t, h.n.SetLinkDown(now, link, false)) })
	s1 := h.n.Ports[h.portID("S1.p0")].Node
	h.at(5_000_000, func(sim.Time) { must(t, h.n.SetBlackhole(s1, true)) })
	h.at(5_200_000, func(sim.Time) { must(t, h.n.SetBlackhole(s1, false)) })
	h.run(sim.MaxTime)
	h.audit()
	return h.got, h.n.C
}

// TestFaultsDeterministic: the same seed gives the same deliveries, in the same order at the
// same times, and the same books; another seed gives other losses (docs/architecture.md,
// Conventions, "Determinism").
func TestFaultsDeterministic(t *testing.T) {
	got1, c1 := faultRun(t, 11)
	got2, c2 := faultRun(t, 11)
	if !reflect.DeepEqual(got1, got2) || c1 != c2 {
		t.Fatalf("two runs with seed 11 differ: %+v vs %+v", c1, c2)
	}
	for r := fabric.DropReason(0); r < fabric.NumDropReasons; r++ {
		if r != fabric.DropQueueFull && r != fabric.DropHeaderOverflow && r != fabric.DropNoRoute && r != fabric.DropHeadroom && c1.Dropped[r] == 0 {
			t.Errorf("no %s drops: the run does not exercise every fault", r)
		}
	}
	got3, c3 := faultRun(t, 12)
	if reflect.DeepEqual(got1, got3) && c1 == c3 {
		t.Error("seeds 11 and 12 gave identical runs")
	}
	t.Logf("seed 11: %+v; seed 12: %+v", c1, c3)
}

// TestZeroLossDrawsNothing: configuring a fault at probability 0 changes nothing (no draws,
// no drops), so a scenario that lists a fault at 0 is identical to one that does not.
func TestZeroLossDrawsNothing(t *testing.T) {
	run := func(configure bool) []arrival {
		h := newLine(t, 9, lineOpts{parallel: 2, ecmp: true, delay: testDelay, nic: fabric.QueueConfig{Limit: bigLimit},
			sw: fabric.QueueConfig{ECN: fabric.ECNConfig{Enabled: true, Kmin: 4 << 10, Kmax: 64 << 10, Pmax: 0.5}}})
		if configure {
			for i := range h.n.Ports {
				must(t, h.n.SetLoss(fabric.PortID(i), 0))
				must(t, h.n.SetBER(fabric.PortID(i), 0))
			}
		}
		h.at(0, func(now sim.Time) {
			for i := range 500 {
				h.send(now, pkt{src: 0, dst: 1, flags: fabric.ECT, sport: uint16(i), entropy: uint32(i)})
			}
		})
		h.run(sim.MaxTime)
		h.audit()
		return h.got
	}
	if a, b := run(false), run(true); !reflect.DeepEqual(a, b) {
		t.Error("faults at probability 0 changed the run")
	}
}

// TestFaultPathAllocs: forwarding through a port with loss, bit errors and entropy filters,
// and across link failures and a blackhole, allocates nothing once the free list is warm.
func TestFaultPathAllocs(t *testing.T) {
	h := newLine(t, 1, lineOpts{delay: testDelay})
	p := h.portID("s1.p1")
	must(t, h.n.SetLoss(p, 0.3))
	must(t, h.n.SetBER(p, 1e-6))
	must(t, h.n.SetEntropyLoss(p, 1, 0.5))
	s1 := h.n.Ports[p].Node
	route := lineRoute(1, 0, 0)
	i := 0
	step := func() {
		i++
		for k := range 4 {
			pk := h.n.NewPacket()
			pk.Dst, pk.Size, pk.Entropy = 1, int32(64+(i*k*977)%mtu), uint32(i%3)
			pk.SetRoute(route)
			must(t, h.n.Send(h.s.Now(), 0, 0, pk))
		}
		switch i % 4 {
		case 1:
			must(t, h.n.SetLinkDown(h.s.Now(), p, true))
		case 2:
			must(t, h.n.SetLinkDown(h.s.Now(), p, false))
		case 3:
			must(t, h.n.SetBlackhole(s1, i%8 == 3))
		}
		if err := h.s.Run(h.s.Now() + 50*tx800); err != nil {
			t.Fatal(err)
		}
	}
	for range 64 {
		step() // warm the free list, the event queue and the receiver's slice
	}
	h.got = make([]arrival, 0, 1<<16)
	if a := testing.AllocsPerRun(200, step); a != 0 {
		t.Errorf("%.1f allocations per step, want 0", a)
	}
	h.audit()
}

// TestLossStreamPerPort: a port's loss draws depend only on the packets it sends, so adding
// ECN marking, lossy links and traffic elsewhere leaves its losses unchanged (each port has
// its own stream, apart from the ECN streams; a shared stream would shift them).
func TestLossStreamPerPort(t *testing.T) {
	lostFlows := func(busy bool) []int32 {
		sw := fabric.QueueConfig{}
		if busy {
			sw.ECN = fabric.ECNConfig{Enabled: true, Kmin: 0, Kmax: 1 << 20, Pmax: 0.5}
		}
		h := newLine(t, 21, lineOpts{delay: testDelay, nic: fabric.QueueConfig{Limit: bigLimit}, sw: sw})
		must(t, h.n.SetLoss(h.portID("s1.p1"), 0.2))
		if busy {
			must(t, h.n.SetLoss(h.portID("s2.p0"), 0.5)) // the reverse direction of the same link
			must(t, h.n.SetLoss(h.portID("s0.p0"), 0.3)) // toward h0
		}
		const n = 2000
		h.at(0, func(now sim.Time) {
			for i := range n {
				h.send(now, pkt{src: 0, dst: 1, flags: fabric.ECT, flow: int32(i), route: lineRoute(1, 0, 0)})
				if busy {
					h.send(now, pkt{src: 1, dst: 0, flags: fabric.ECT, flow: -1, route: []uint16{0, 0, 0}})
				}
			}
		})
		h.run(sim.MaxTime)
		h.audit()
		got := make([]bool, n)
		for _, a := range h.got {
			if a.src == 0 {
				got[a.flow] = true
			}
		}
		var lost []int32
		for i, ok := range got {
			if !ok {
				lost = append(lost, int32(i))
			}
		}
		return lost
	}
	quiet, busy := lostFlows(false), lostFlows(true)
	if len(quiet) == 0 || !reflect.DeepEqual(quiet, busy) {
		t.Errorf("s1.p1 lost %d packets alone and %d with other activity, or different ones", len(quiet), len(busy))
	}
}

// The transmitter costs an event only when something waits for it: one packet over
// h0 - s0 - s1 - s2 - h1 takes 4 arrivals and the NIC port's end-of-serialisation event (NIC
// ports always report it, for SetNICReady). Two packets sent together take 8 arrivals and 2 NIC
// events: the second waits behind the first at the NIC only, then trails it by exactly one
// serialisation and finds each switch port free the moment the first has left it.
func TestTransmitterEvents(t *testing.T) {
	for _, c := range []struct {
		packets int
		want    uint64
	}{{1, 5}, {2, 10}} {
		h := newLine(t, 1, lineOpts{delay: testDelay})
		got := 0
		h.n.SetReceiver(fabric.ProtoRaw, func(sim.Time, *fabric.Packet) { got++ })
		for i := 0; i < c.packets; i++ {
			p := h.n.NewPacket()
			p.Dst, p.Size = 1, mtu
			p.SetRoute(lineRoute(1, 0, 0))
			if err := h.n.Send(0, 0, 0, p); err != nil {
				t.Fatal(err)
			}
		}
		h.s.Run(sim.Second)
		if got != c.packets {
			t.Fatalf("%d packets: delivered %d", c.packets, got)
		}
		if ev := h.s.Events(); ev != c.want {
			t.Errorf("%d packets: %d events, want %d", c.packets, ev, c.want)
		}
		if err := h.n.Audit(); err != nil {
			t.Fatal(err)
		}
	}
}
