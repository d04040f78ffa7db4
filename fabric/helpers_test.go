package fabric_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// Test rates and the serialisation times of a 4 KiB packet at them, written out rather than
// computed so the tests pin the closed form (4,096 B x 8 / rate).
const (
	mtu       = 4096
	rate800   = 800 * sim.Gbps
	rate100   = 100 * sim.Gbps
	tx800     = sim.Time(40_960)  // ps per 4 KiB at 800 Gb/s
	tx100     = sim.Time(327_680) // ps per 4 KiB at 100 Gb/s
	bigLimit  = 256 << 20         // a queue that never fills in these tests
	testDelay = sim.Time(1_000)
)

// arrival is what the test receiver saw of one delivered packet.
type arrival struct {
	at    sim.Time
	id    uint64
	src   int32
	dst   int32
	size  int32
	class uint8
	flags fabric.Flags
	flow  int32
}

// harness is a hand-built network plus a receiver that records every delivery and a way to
// run closures at given times.
type harness struct {
	tb  testing.TB
	s   *sim.Sim
	n   *fabric.Network
	got []arrival
	// onRecv, if set, runs after a delivery is recorded (closed-loop senders).
	onRecv func(now sim.Time, p *fabric.Packet)

	kAt sim.Kind
	fns []func(now sim.Time)
}

func newHarness(tb testing.TB, seed uint64) *harness {
	tb.Helper()
	h := &harness{tb: tb, s: sim.New(seed)}
	h.n = fabric.New(h.s)
	h.kAt = h.s.Register("test.at", func(now sim.Time, obj int32, _ uint64) { h.fns[obj](now) })
	h.n.SetReceiver(fabric.ProtoRaw, func(now sim.Time, p *fabric.Packet) {
		h.got = append(h.got, arrival{at: now, id: p.ID, src: p.Src, dst: p.Dst, size: p.Size,
			class: p.Class, flags: p.Flags, flow: p.Flow})
		if h.onRecv != nil {
			h.onRecv(now, p)
		}
	})
	return h
}

// at runs fn at simulated time t.
func (h *harness) at(t sim.Time, fn func(now sim.Time)) {
	h.fns = append(h.fns, fn)
	h.s.At(t, h.kAt, int32(len(h.fns)-1), 0)
}

func (h *harness) node(name string, kind fabric.NodeKind) fabric.NodeID {
	h.tb.Helper()
	plane, tier := 0, 0
	if kind == fabric.Host {
		plane, tier = -1, -1
	}
	id, err := h.n.AddNode(name, kind, plane, tier)
	if err != nil {
		h.tb.Fatal(err)
	}
	return id
}

// link connects a and b; ports are named "<node>.p<local>".
func (h *harness) link(a, b fabric.NodeID, rate sim.Rate, delay sim.Time, qa, qb fabric.QueueConfig) {
	h.tb.Helper()
	name := func(id fabric.NodeID) string {
		return fmt.Sprintf("%s.p%d", h.n.Nodes[id].Name, len(h.n.Nodes[id].Ports))
	}
	pa := fabric.PortEnd{Node: a, Local: fabric.AppendPort, Name: name(a), Queue: qa}
	pb := fabric.PortEnd{Node: b, Local: fabric.AppendPort, Name: name(b), Queue: qb}
	if a == b {
		pb.Name = fmt.Sprintf("%s.p%d", h.n.Nodes[b].Name, len(h.n.Nodes[b].Ports)+1)
	}
	if _, _, err := h.n.Connect(pa, pb, rate, delay); err != nil {
		h.tb.Fatal(err)
	}
}

// port returns the port named "<node>.p<local>".
func (h *harness) port(node string, local int) *fabric.Port {
	h.tb.Helper()
	id, ok := h.n.PortByName(fmt.Sprintf("%s.p%d", node, local))
	if !ok {
		h.tb.Fatalf("no port %s.p%d", node, local)
	}
	return &h.n.Ports[id]
}

// pkt describes a packet for send.
type pkt struct {
	src, dst int32
	size     int32
	route    []uint16 // nil: ECMP
	class    uint8
	flags    fabric.Flags
	sport    uint16
	entropy  uint32
	flow     int32
	proto    fabric.Proto
}

// send injects one packet now (the harness's current time) on plane 0.
func (h *harness) send(now sim.Time, d pkt) {
	h.tb.Helper()
	p := h.n.NewPacket()
	p.Dst, p.Size, p.Class, p.Flags = d.dst, d.size, d.class, d.flags
	p.SrcPort, p.DstPort, p.Entropy, p.Flow, p.Proto = d.sport, 4791, d.entropy, d.flow, d.proto
	if p.Size == 0 {
		p.Size = mtu
	}
	if d.route != nil {
		p.SetRoute(d.route)
	}
	if err := h.n.Send(now, d.src, 0, p); err != nil {
		h.tb.Fatal(err)
	}
}

// sendN injects n copies of d at time t.
func (h *harness) sendN(t sim.Time, n int, d pkt) {
	h.at(t, func(now sim.Time) {
		for range n {
			h.send(now, d)
		}
	})
}

func (h *harness) run(until sim.Time) {
	h.tb.Helper()
	if err := h.s.Run(until); err != nil {
		h.tb.Fatal(err)
	}
}

// audit fails the test unless the books balance, both by Audit and by the identity spelled
// out.
func (h *harness) audit() {
	h.tb.Helper()
	if err := h.n.Audit(); err != nil {
		h.tb.Fatal(err)
	}
	c := h.n.C
	if c.Injected != c.DeliveredWhole+c.DeliveredTrimmed+c.DroppedTotal()+h.n.InFlight() {
		h.tb.Fatalf("books: %+v, in flight %d", c, h.n.InFlight())
	}
}

// lineOpts shapes the line h0 - s0 = s1 = s2 - h1 (k parallel links between switches).
type lineOpts struct {
	rate     sim.Rate
	delay    sim.Time
	parallel int                // links between consecutive switches; default 1
	nic      fabric.QueueConfig // h0's and h1's NIC queues
	sw       fabric.QueueConfig // every switch egress
	ecmp     bool               // fill the switches' route tables
}

// newLine builds h0 - s0 = s1 = s2 - h1. Port numbering (k = parallel):
//
//	h0.p0 - s0.p0;  s0.p1..pk - s1.p0..p(k-1);  s1.pk..p(2k-1) - s2.p0..p(k-1);  s2.pk - h1.p0
//
// so the source route h0 -> h1 through the first links is lineRoute(k, 0, 0) = [1, k, k].
func newLine(tb testing.TB, seed uint64, o lineOpts) *harness {
	tb.Helper()
	if o.rate == 0 {
		o.rate = rate800
	}
	if o.parallel == 0 {
		o.parallel = 1
	}
	k := o.parallel
	h := newHarness(tb, seed)
	h0, h1 := h.node("h0", fabric.Host), h.node("h1", fabric.Host)
	s0, s1, s2 := h.node("s0", fabric.Switch), h.node("s1", fabric.Switch), h.node("s2", fabric.Switch)
	h.link(h0, s0, o.rate, o.delay, o.nic, o.sw)
	for range k {
		h.link(s0, s1, o.rate, o.delay, o.sw, o.sw)
	}
	for range k {
		h.link(s1, s2, o.rate, o.delay, o.sw, o.sw)
	}
	h.link(s2, h1, o.rate, o.delay, o.sw, o.nic)
	if o.ecmp {
		span := func(lo, n int) []uint16 {
			g := make([]uint16, n)
			for i := range g {
				g[i] = uint16(lo + i)
			}
			return g
		}
		h.n.Nodes[s0].Routes = fabric.RouteTable{Entries: []fabric.RouteEntry{
			{HostLo: 0, HostHi: 1, Ports: []uint16{0}}, {HostLo: 1, HostHi: 2, Ports: span(1, k)}}}
		h.n.Nodes[s1].Routes = fabric.RouteTable{Entries: []fabric.RouteEntry{
			{HostLo: 0, HostHi: 1, Ports: span(0, k)}, {HostLo: 1, HostHi: 2, Ports: span(k, k)}}}
		h.n.Nodes[s2].Routes = fabric.RouteTable{Entries: []fabric.RouteEntry{
			{HostLo: 0, HostHi: 1, Ports: span(0, k)}, {HostLo: 1, HostHi: 2, Ports: []uint16{uint16(k)}}}}
	}
	return h
}

// lineRoute is the source route h0 -> h1 over parallel link i (s0-s1) and j (s1-s2).
func lineRoute(k, i, j int) []uint16 { return []uint16{uint16(1 + i), uint16(k + j), uint16(k)} }

// newStar builds an incast star: senders h0..h(n-1) and receiver hn on switch s0, where
// s0.p<i> faces h<i> and s0.p<n> faces the receiver; the route to the receiver is [n]. Every
// link has the same rate and delay, so senders that start together arrive together.
func newStar(tb testing.TB, seed uint64, n int, rate sim.Rate, delay sim.Time, nic, toRecv fabric.QueueConfig) *harness {
	tb.Helper()
	h := newHarness(tb, seed)
	for i := 0; i <= n; i++ {
		h.node(fmt.Sprintf("h%d", i), fabric.Host)
	}
	s0 := h.node("s0", fabric.Switch)
	for i := 0; i < n; i++ {
		h.link(s0, fabric.NodeID(i), rate, delay, fabric.QueueConfig{}, nic)
	}
	h.link(s0, fabric.NodeID(n), rate, delay, toRecv, nic)
	return h
}

// newClos builds a 2-leaf, 2-spine Clos with two hosts per leaf, ECMP tables filled:
//
//	leaf l<j>: p0, p1 face hosts 2j, 2j+1; p2, p3 face spines S0, S1
//	spine S<i>: p0 faces l0, p1 faces l1
//
// A source route from a host under l0 to one under l1 via spine i is [2+i, 1, host%2].
func newClos(tb testing.TB, seed uint64, rate sim.Rate, delay sim.Time, nic, sw fabric.QueueConfig) *harness {
	tb.Helper()
	h := newHarness(tb, seed)
	for i := range 4 {
		h.node(fmt.Sprintf("h%d", i), fabric.Host)
	}
	l := []fabric.NodeID{h.node("l0", fabric.Switch), h.node("l1", fabric.Switch)}
	sp := []fabric.NodeID{h.node("S0", fabric.Switch), h.node("S1", fabric.Switch)}
	for j, leaf := range l {
		h.link(leaf, fabric.NodeID(2*j), rate, delay, sw, nic)
		h.link(leaf, fabric.NodeID(2*j+1), rate, delay, sw, nic)
	}
	for _, leaf := range l {
		for _, s := range sp {
			h.link(leaf, s, rate, delay, sw, sw)
		}
	}
	for j, leaf := range l {
		lo := int32(2 * j)
		h.n.Nodes[leaf].Routes = fabric.RouteTable{
			Entries: []fabric.RouteEntry{{HostLo: lo, HostHi: lo + 1, Ports: []uint16{0}}, {HostLo: lo + 1, HostHi: lo + 2, Ports: []uint16{1}}},
			Up:      []uint16{2, 3},
		}
	}
	for _, s := range sp {
		h.n.Nodes[s].Routes = fabric.RouteTable{Entries: []fabric.RouteEntry{
			{HostLo: 0, HostHi: 2, Ports: []uint16{0}}, {HostLo: 2, HostHi: 4, Ports: []uint16{1}}}}
	}
	return h
}

// chi2Crit approximates the chi-square quantile for dof degrees of freedom at upper tail
// 1e-4 (Wilson-Hilferty); the tests are deterministic, so this only guards a seed change.
func chi2Crit(dof int) float64 {
	const z = 3.719 // standard normal quantile at 1 - 1e-4
	k := float64(dof)
	a := 2 / (9 * k)
	return k * math.Pow(1-a+z*math.Sqrt(a), 3)
}

// chi2Uniform returns the chi-square statistic of counts against the uniform distribution.
func chi2Uniform(counts []int) float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	e := float64(total) / float64(len(counts))
	x := 0.0
	for _, c := range counts {
		d := float64(c) - e
		x += d * d / e
	}
	return x
}
