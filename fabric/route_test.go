package fabric_test

import (
	"math"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// TestSourceRoute: switches follow Route[Hop] (MRC §2.2, static source routes), so different
// routes between the same hosts use different parallel links.
func TestSourceRoute(t *testing.T) {
	const k = 3
	h := newLine(t, 1, lineOpts{parallel: k, delay: testDelay})
	routes := []struct {
		i, j, n int // s0-s1 link i, s1-s2 link j, packets
	}{{0, 2, 3}, {1, 1, 5}, {2, 2, 7}}
	for _, r := range routes {
		h.sendN(0, r.n, pkt{src: 0, dst: 1, route: lineRoute(k, r.i, r.j)})
	}
	h.run(sim.MaxTime)
	h.audit()
	if h.n.C.DeliveredWhole != 15 {
		t.Fatalf("delivered %d, want 15", h.n.C.DeliveredWhole)
	}
	var s0, s1 [k]int64
	for _, r := range routes {
		s0[r.i] += int64(r.n)
		s1[r.j] += int64(r.n)
	}
	for i := range k {
		if got := h.port("s0", 1+i).Totals().TxPackets; got != s0[i] {
			t.Errorf("s0.p%d sent %d, want %d", 1+i, got, s0[i])
		}
		if got := h.port("s1", k+i).Totals().TxPackets; got != s1[i] {
			t.Errorf("s1.p%d sent %d, want %d", k+i, got, s1[i])
		}
		// Nothing goes backwards.
		if got := h.port("s1", i).Totals().TxPackets; got != 0 {
			t.Errorf("s1.p%d (toward s0) sent %d", i, got)
		}
	}
	if got := h.port("s2", k).Totals().TxPackets; got != 15 {
		t.Errorf("s2.p%d sent %d, want 15", k, got)
	}
}

// TestBadRoutes: every way a route can be unusable is a counted DropNoRoute, never a panic.
func TestBadRoutes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		route []uint16
		mod   func(p *fabric.Packet)
		ecmp  bool
		dst   int32
	}{
		{name: "egress out of range at s0", route: []uint16{9, 1, 1}, dst: 1},
		{name: "egress out of range at s2", route: []uint16{1, 1, 200}, dst: 1},
		{name: "route too short", route: []uint16{1}, dst: 1},
		{name: "route bounces back past its end", route: []uint16{1, 1, 0}, dst: 1},
		{name: "route delivers to the wrong host", route: []uint16{0}, dst: 1},
		{name: "ECMP without any table", dst: 1},
		{name: "ECMP to a host not in the table", ecmp: true, dst: 7},
		{name: "ECMP to a negative host", ecmp: true, dst: -3},
		{
			// s0 <-> s1 ping-pong for all MaxHops hops with RouteLen claiming more: the switch
			// after the last carried hop must not read past Route.
			name: "RouteLen beyond MaxHops", route: []uint16{1, 0, 1, 0, 1, 0, 1, 0}, dst: 1,
			mod: func(p *fabric.Packet) { p.RouteLen = fabric.MaxHops + 3 },
		},
		{
			name: "route longer than MaxHops", dst: 1,
			route: []uint16{1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newLine(t, 1, lineOpts{ecmp: tc.ecmp})
			h.at(0, func(now sim.Time) {
				p := h.n.NewPacket()
				p.Dst, p.Size = tc.dst, mtu
				if tc.route != nil {
					p.SetRoute(tc.route)
				}
				if tc.mod != nil {
					tc.mod(p)
				}
				if err := h.n.Send(now, 0, 0, p); err != nil {
					t.Fatal(err)
				}
			})
			h.run(sim.MaxTime)
			h.audit()
			if len(h.got) != 0 || h.n.C.Dropped[fabric.DropNoRoute] != 1 {
				t.Errorf("delivered %d, no-route drops %d; want 0 and 1", len(h.got), h.n.C.Dropped[fabric.DropNoRoute])
			}
		})
	}
}

// TestAnyProto: a packet of a Proto nobody registered, even beyond ProtoMax, is delivered
// (counted) without a panic, and a receiver registered for such a Proto gets it.
func TestAnyProto(t *testing.T) {
	h := newLine(t, 1, lineOpts{})
	got := 0
	h.n.SetReceiver(fabric.Proto(200), func(sim.Time, *fabric.Packet) { got++ })
	h.sendN(0, 2, pkt{src: 0, dst: 1, route: lineRoute(1, 0, 0), proto: 200})
	h.sendN(0, 3, pkt{src: 0, dst: 1, route: lineRoute(1, 0, 0), proto: 255})
	h.run(sim.MaxTime)
	h.audit()
	if got != 2 || h.n.C.DeliveredWhole != 5 {
		t.Errorf("receiver got %d, delivered %d; want 2 and 5", got, h.n.C.DeliveredWhole)
	}
}

// TestECMPFollowsHash: a packet without a source route leaves each switch by the group member
// ECMPIndex predicts, and every packet of one 5-tuple takes the same port.
func TestECMPFollowsHash(t *testing.T) {
	const k = 4
	h := newLine(t, 7, lineOpts{parallel: k, ecmp: true})
	s0 := fabric.NodeID(2)
	var before [k]int64
	for f := range 40 {
		for i := range k {
			before[i] = h.port("s0", 1+i).Totals().TxPackets
		}
		d := pkt{src: 0, dst: 1, sport: uint16(49152 + 977*f), entropy: uint32(f * 31)}
		h.sendN(h.s.Now(), 10, d)
		h.run(sim.MaxTime)
		probe := &fabric.Packet{Src: 0, Dst: 1, SrcPort: d.sport, DstPort: 4791, Entropy: d.entropy}
		want := h.n.ECMPIndex(s0, probe, k)
		for i := range k {
			got := h.port("s0", 1+i).Totals().TxPackets - before[i]
			if (i == want) != (got == 10) || (i != want && got != 0) {
				t.Fatalf("flow %d: s0 uplink %d sent %d of its 10 packets; hash says uplink %d", f, i, got, want)
			}
		}
	}
	h.audit()
	if h.n.C.DeliveredWhole != 400 {
		t.Errorf("delivered %d, want 400", h.n.C.DeliveredWhole)
	}
}

// TestECMPSpread: ECMP spreads distinct flows over a group uniformly (chi-square against the
// closed form, docs/style.md §9), for group sizes that are and are not powers of two.
func TestECMPSpread(t *testing.T) {
	h := newLine(t, 3, lineOpts{})
	p := &fabric.Packet{DstPort: 4791}
	for _, k := range []int{2, 3, 4, 5, 8, 12, 16, 64} {
		counts := make([]int, k)
		n := 2000 * k
		for i := range n {
			p.Src, p.Dst = int32(i%97), int32(i%89)
			p.SrcPort, p.Entropy = uint16(i), uint32(i/65536)
			idx := h.n.ECMPIndex(2, p, k)
			if idx < 0 || idx >= k {
				t.Fatalf("k=%d: index %d out of range", k, idx)
			}
			counts[idx]++
		}
		if x, crit := chi2Uniform(counts), chi2Crit(k-1); x > crit {
			t.Errorf("k=%d: chi-square %.1f > %.1f; counts %v", k, x, crit, counts)
		}
	}
}

// TestECMPSpreadInNetwork: many flows through a real switch fill its uplinks evenly.
func TestECMPSpreadInNetwork(t *testing.T) {
	const k, flows = 4, 4000
	h := newLine(t, 11, lineOpts{parallel: k, ecmp: true, nic: fabric.QueueConfig{Limit: bigLimit}})
	h.at(0, func(now sim.Time) {
		for f := range flows {
			h.send(now, pkt{src: 0, dst: 1, size: 64, sport: uint16(f), entropy: uint32(f)})
		}
	})
	h.run(sim.MaxTime)
	h.audit()
	for _, sw := range []struct {
		name string
		lo   int
	}{{"s0", 1}, {"s1", k}} {
		counts := make([]int, k)
		for i := range k {
			counts[i] = int(h.port(sw.name, sw.lo+i).Totals().TxPackets)
		}
		if x, crit := chi2Uniform(counts), chi2Crit(k-1); x > crit {
			t.Errorf("%s: chi-square %.1f > %.1f; counts %v", sw.name, x, crit, counts)
		}
	}
}

// TestECMPSeeds: the hash is a function of the simulation seed and the switch: the same seed
// gives the same choices, another seed different ones, and two switches with identical groups
// choose independently (their joint choice is uniform over k x k).
func TestECMPSeeds(t *testing.T) {
	const k, n = 4, 32000
	a := newLine(t, 5, lineOpts{})
	b := newLine(t, 5, lineOpts{})
	c := newLine(t, 6, lineOpts{})
	const s0, s1 = fabric.NodeID(2), fabric.NodeID(3)
	p := &fabric.Packet{Src: 0, Dst: 1, DstPort: 4791}
	same, diffSeed := 0, 0
	joint := make([]int, k*k)
	for i := range n {
		p.SrcPort, p.Entropy = uint16(i), uint32(i>>16)
		x := a.n.ECMPIndex(s0, p, k)
		if x == b.n.ECMPIndex(s0, p, k) {
			same++
		}
		if x != c.n.ECMPIndex(s0, p, k) {
			diffSeed++
		}
		joint[x*k+a.n.ECMPIndex(s1, p, k)]++
	}
	if same != n {
		t.Errorf("same seed: %d of %d choices agree", same, n)
	}
	// Independent choices differ with probability 1 - 1/k.
	if want := float64(n) * (1 - 1.0/k); math.Abs(float64(diffSeed)-want) > 5*math.Sqrt(want/k) {
		t.Errorf("other seed: %d of %d choices differ, want about %.0f", diffSeed, n, want)
	}
	if x, crit := chi2Uniform(joint), chi2Crit(k*k-1); x > crit {
		t.Errorf("s0 x s1 choices: chi-square %.1f > %.1f; not independent: %v", x, crit, joint)
	}
}

// TestECMPProtoDistinct: the protocol is part of the hashed tuple and does not alias the
// source port: (proto 0, sport 0x0100) and (proto 1, sport 0) are different flows.
func TestECMPProtoDistinct(t *testing.T) {
	h := newLine(t, 1, lineOpts{})
	const k = 1 << 20
	agree := 0
	for i := range 256 {
		a := &fabric.Packet{Src: 1, Dst: 2, SrcPort: uint16(i) << 8, Proto: 0}
		b := &fabric.Packet{Src: 1, Dst: 2, SrcPort: 0, Proto: fabric.Proto(i)}
		if i > 0 && h.n.ECMPIndex(2, a, k) == h.n.ECMPIndex(2, b, k) {
			agree++
		}
	}
	if agree > 1 {
		t.Errorf("%d of 255 (proto, sport) pairs alias each other", agree)
	}
}

// TestClosECMP: in a 2-leaf, 2-spine Clos, ECMP delivers every packet between every pair of
// hosts, up through either spine and down the one right leaf port.
func TestClosECMP(t *testing.T) {
	h := newClos(t, 9, rate800, testDelay, fabric.QueueConfig{Limit: bigLimit}, fabric.QueueConfig{Limit: bigLimit})
	h.at(0, func(now sim.Time) {
		for src := range int32(4) {
			for dst := range int32(4) {
				if src != dst {
					for f := range 100 {
						h.send(now, pkt{src: src, dst: dst, sport: uint16(f)})
					}
				}
			}
		}
	})
	h.run(sim.MaxTime)
	h.audit()
	if h.n.C.DeliveredWhole != 1200 {
		t.Fatalf("delivered %d, want 1200", h.n.C.DeliveredWhole)
	}
	for _, a := range h.got {
		if a.dst < 0 || a.dst > 3 || a.dst == a.src {
			t.Fatalf("bad delivery %+v", a)
		}
	}
	// Cross-leaf traffic: 2 x 2 x 2 pairs x 100 = 800 packets up the four leaf uplinks.
	var up int64
	for _, leaf := range []string{"l0", "l1"} {
		for i := 2; i < 4; i++ {
			tx := h.port(leaf, i).Totals().TxPackets
			if tx < 100 {
				t.Errorf("%s.p%d carried only %d packets", leaf, i, tx)
			}
			up += tx
		}
	}
	if up != 800 {
		t.Errorf("leaf uplinks carried %d, want 800", up)
	}
}
