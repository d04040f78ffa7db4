package fabric_test

import (
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// TestConservationMixed: a Clos carrying ECMP and source-routed traffic of mixed sizes,
// classes and flags, with drops of every reason (full queues, header overflow, a link failed
// and repaired mid-run, bad routes, random loss, an entropy filter, a blackholed spine),
// balances its books at an arbitrary stop with packets in flight, and again when it has
// drained (docs/architecture.md, Conventions, "Conservation").
func TestConservationMixed(t *testing.T) {
	sw := fabric.QueueConfig{
		Limit: 16 << 10,
		ECN:   fabric.ECNConfig{Enabled: true, Kmin: 4 << 10, Kmax: 12 << 10, Pmax: 0.3},
		Trim:  fabric.TrimConfig{Enabled: true, Threshold: 8 << 10, HeaderLimit: 4 * fabric.HeaderBytes},
	}
	h := newClos(t, 42, rate800, testDelay, fabric.QueueConfig{Limit: bigLimit}, sw)
	rng := sim.Stream(42, "test.traffic")
	h.at(0, func(now sim.Time) {
		for i := range 2400 {
			src := int32(i % 4)
			dst := (src + 1 + int32(rng.IntN(3))) % 4
			if src != 3 && rng.IntN(2) == 0 {
				dst = 3 // incast hot spot
			}
			d := pkt{src: src, dst: dst, size: int32(64 + rng.IntN(mtu-63)), class: uint8(rng.IntN(3)),
				sport: uint16(rng.Uint32()), entropy: rng.Uint32() % 64}
			if rng.IntN(2) == 0 {
				d.flags |= fabric.Trimmable
			}
			if rng.IntN(3) == 0 {
				d.flags |= fabric.ECT
			}
			switch k := rng.IntN(20); {
			case k == 0: // a route leading nowhere
				d.route = []uint16{uint16(2 + rng.IntN(2)), 7}
			case k < 8 && src/2 != dst/2: // source route through a chosen spine
				d.route = []uint16{uint16(2 + rng.IntN(2)), uint16(dst / 2), uint16(dst % 2)}
			}
			h.send(now, d)
		}
	})
	down, _ := h.n.PortByName("S0.p1") // spine 0 toward leaf 1
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	h.at(2_000_000, func(now sim.Time) { must(h.n.SetLinkDown(now, down, true)) })
	h.at(4_000_000, func(now sim.Time) { must(h.n.SetLinkDown(now, down, false)) })
	up, _ := h.n.PortByName("l1.p2") // leaf 1 toward spine 0
	must(h.n.SetLoss(up, 0.05))
	spine, _ := h.n.PortByName("S1.p0") // spine 1 toward leaf 0
	for ev := range uint32(3) {
		must(h.n.SetEntropyLoss(spine, ev, 0.5))
	}
	h.at(2_500_000, func(sim.Time) { must(h.n.SetBlackhole(h.n.Ports[spine].Node, true)) })
	h.at(3_000_000, func(sim.Time) { must(h.n.SetBlackhole(h.n.Ports[spine].Node, false)) })

	for _, stop := range []sim.Time{1_234_567, 3_333_333, sim.MaxTime} {
		h.run(stop)
		h.audit()
		c := h.n.C
		t.Logf("at %v: %+v, in flight %d", h.s.Now(), c, h.n.InFlight())
		if stop != sim.MaxTime && h.n.InFlight() == 0 {
			t.Errorf("at %v nothing is in flight; the stop is not mid-run", stop)
		}
	}
	if h.n.InFlight() != 0 {
		t.Errorf("%d packets in flight after the run", h.n.InFlight())
	}
	c := h.n.C
	for r := fabric.DropReason(0); r < fabric.NumDropReasons; r++ {
		if c.Dropped[r] == 0 && r != fabric.DropHeadroom { // PFC: TestPFCHeadroomDrops
			t.Errorf("no %s drops: the test does not exercise every reason", r)
		}
	}
	if c.DeliveredTrimmed == 0 || c.DeliveredWhole == 0 {
		t.Errorf("books %+v: want both whole and trimmed deliveries", c)
	}
	var marks int64
	for i := range h.n.Ports {
		marks += h.n.Ports[i].Totals().CEMarks
	}
	if marks == 0 {
		t.Error("no CE marks")
	}
}

// TestLinkDown: with Port.Down written directly (one direction, the older way; SetLinkDown is
// tested in fault_test.go), packets sent onto the failed link, or on it when it fails, are
// dropped as link_down; the books balance and the link carries traffic again once repaired.
func TestLinkDown(t *testing.T) {
	const d = 100_000 // 100 ns per link, so packets are on the s1-s2 link when it fails
	h := newLine(t, 1, lineOpts{delay: d})
	h.sendN(0, 20, pkt{src: 0, dst: 1, route: lineRoute(1, 0, 0)})
	// Packet k leaves s1 at 3tx + 2D + k tx and reaches s2 D later. Fail the link at
	// 3tx + 2D + 4.5tx: packets 0-2 have arrived, 3 and 4 are on the link, 5-19 are not sent.
	fail := 3*tx800 + 2*d + 9*tx800/2
	s1 := h.port("s1", 1)
	h.at(fail, func(sim.Time) { s1.Down = true })
	h.run(fail + 10*d)
	h.audit()
	if got, c := len(h.got), h.n.C; got != 3 || c.Dropped[fabric.DropLinkDown] != 17 {
		t.Fatalf("delivered %d, link-down drops %d; want 3 and 17", got, c.Dropped[fabric.DropLinkDown])
	}
	if tot := s1.Totals(); tot.Drops[fabric.DropLinkDown] != 17 || tot.DropBytes != 17*mtu {
		t.Errorf("s1.p1 counts %d link-down drops (%d B), want 17", tot.Drops[fabric.DropLinkDown], tot.DropBytes)
	}
	s1.Down = false
	h.sendN(h.s.Now(), 5, pkt{src: 0, dst: 1, route: lineRoute(1, 0, 0)})
	h.run(sim.MaxTime)
	h.audit()
	if len(h.got) != 8 {
		t.Errorf("delivered %d after the repair, want 8", len(h.got))
	}
}

// TestFreeList: once warm, steady forwarding takes every packet from the free list, so the
// number ever allocated stops growing; and a reused packet comes back zeroed.
func TestFreeList(t *testing.T) {
	const window, total = 16, 4000
	h := newLine(t, 1, lineOpts{parallel: 2, ecmp: true, delay: testDelay})
	sent := 0
	var warm int64
	send := func(now sim.Time) {
		p := h.n.NewPacket()
		if *p != (fabric.Packet{}) {
			t.Fatalf("NewPacket returned a used packet: %+v", *p)
		}
		p.Dst, p.Size, p.SrcPort, p.Flags = 1, mtu, uint16(sent), fabric.ECT|fabric.Trimmable
		p.Seq, p.Aux = 7, 9
		if sent%2 == 0 {
			p.SetRoute(lineRoute(2, sent%4/2, 1))
		}
		sent++
		if err := h.n.Send(now, 0, 0, p); err != nil {
			t.Fatal(err)
		}
	}
	h.onRecv = func(now sim.Time, _ *fabric.Packet) {
		if len(h.got) == 500 {
			warm = h.n.Allocated()
		}
		if sent < total {
			send(now)
		}
	}
	h.at(0, func(now sim.Time) {
		for range window {
			send(now)
		}
	})
	h.run(sim.MaxTime)
	h.audit()
	if len(h.got) != total {
		t.Fatalf("delivered %d, want %d", len(h.got), total)
	}
	if a := h.n.Allocated(); a != warm || a > window+1 {
		t.Errorf("allocated %d after warm-up (%d), want it unchanged and <= %d", a, warm, window+1)
	}
}
