package fabric_test

import (
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// Most queue tests load h0's NIC: every packet sent at time 0 is offered to it at once, the
// first goes straight onto the transmitter and the rest queue behind it, so depths on arrival
// are known exactly: 0 for the first two packets, then 4 KiB more for each one after.

// TestDropTail: a class queue takes packets up to Limit bytes and drops the rest, counting
// packets and bytes under queue_full in the port and the network.
func TestDropTail(t *testing.T) {
	h := newLine(t, 1, lineOpts{nic: fabric.QueueConfig{Limit: 4 * mtu}})
	h.sendN(0, 10, pkt{src: 0, dst: 1, route: lineRoute(1, 0, 0)})
	h.run(sim.MaxTime)
	h.audit()
	// One on the wire, four queued (exactly at Limit), five dropped.
	tot := h.port("h0", 0).Totals()
	if tot.Drops[fabric.DropQueueFull] != 5 || tot.DropBytes != 5*mtu || tot.MaxDepth != 4*mtu {
		t.Errorf("drops %d (%d B), max depth %d; want 5 (%d B), %d", tot.Drops[fabric.DropQueueFull], tot.DropBytes, tot.MaxDepth, 5*mtu, 4*mtu)
	}
	if h.n.C.Dropped[fabric.DropQueueFull] != 5 || h.n.C.DeliveredWhole != 5 {
		t.Errorf("network: %+v", h.n.C)
	}
	for i, a := range h.got {
		if a.id != uint64(i+1) {
			t.Errorf("delivery %d is packet %d, want %d (the first five)", i, a.id, i+1)
		}
	}
}

// TestStrictPriority: class 0 is always served before class 1, whatever the arrival order;
// a class beyond the port's last is queued in the last class but keeps its own Class.
func TestStrictPriority(t *testing.T) {
	h := newLine(t, 1, lineOpts{})
	r := lineRoute(1, 0, 0)
	h.at(0, func(now sim.Time) {
		for _, c := range []uint8{1, 1, 1, 7, 0, 0, 1, 0} {
			h.send(now, pkt{src: 0, dst: 1, route: r, class: c})
		}
	})
	h.run(sim.MaxTime)
	h.audit()
	// Packet 1 (class 1) was already on the wire; then 5, 6, 8 (class 0), then 2, 3, 4, 7.
	want := []uint64{1, 5, 6, 8, 2, 3, 4, 7}
	for i, a := range h.got {
		if a.id != want[i] {
			t.Fatalf("delivery order %v, want %v", ids(h.got), want)
		}
	}
	if h.got[6].class != 7 {
		t.Errorf("packet 4 arrived with class %d, want its own 7", h.got[6].class)
	}
	cls, _ := h.port("h0", 0).Stats()
	if len(cls) != fabric.DefaultClasses || cls[0].TxPackets != 3 || cls[1].TxPackets != 5 {
		t.Errorf("class stats %+v", cls)
	}
}

// TestClassKeptAcrossHops: a 1-class NIC must not promote a class-1 packet to class 0 for the
// switches after it; at s0 the class-0 packets still overtake it.
func TestClassKeptAcrossHops(t *testing.T) {
	// s0's egress runs at 1/8 of the NIC rate so packets queue there.
	h := newHarness(t, 1)
	h0, h1 := h.node("h0", fabric.Host), h.node("h1", fabric.Host)
	s0 := h.node("s0", fabric.Switch)
	h.link(h0, s0, rate800, 0, fabric.QueueConfig{Classes: 1}, fabric.QueueConfig{})
	h.link(s0, h1, rate100, 0, fabric.QueueConfig{}, fabric.QueueConfig{})
	h.at(0, func(now sim.Time) {
		for _, c := range []uint8{1, 1, 1, 0, 0} {
			h.send(now, pkt{src: 0, dst: 1, route: []uint16{1}, class: c})
		}
	})
	h.run(sim.MaxTime)
	h.audit()
	want := []uint64{1, 4, 5, 2, 3}
	for i, a := range h.got {
		if a.id != want[i] {
			t.Fatalf("delivery order %v, want %v", ids(h.got), want)
		}
	}
}

// TestECNThresholds: RED/ECN (RFC 3168): no mark below Kmin, always at or above Kmax, never
// on a packet without ECT; marks are counted in CEMarks and seen by the receiver.
func TestECNThresholds(t *testing.T) {
	ecn := fabric.QueueConfig{ECN: fabric.ECNConfig{Enabled: true, Kmin: mtu, Kmax: 2 * mtu, Pmax: 0.5}}
	for _, tc := range []struct {
		name  string
		flags fabric.Flags
		marks int64
	}{
		// Depths on arrival 0, 0, 4K (= Kmin: p = 0), then 8K.. (>= Kmax: p = 1).
		{"ECT", fabric.ECT, 7},
		{"not ECT", 0, 0},
		{"already CE", fabric.ECT | fabric.CE, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newLine(t, 1, lineOpts{nic: ecn})
			h.sendN(0, 10, pkt{src: 0, dst: 1, route: lineRoute(1, 0, 0), flags: tc.flags})
			h.run(sim.MaxTime)
			h.audit()
			if got := h.port("h0", 0).Totals().CEMarks; got != tc.marks {
				t.Errorf("CEMarks = %d, want %d", got, tc.marks)
			}
			for _, a := range h.got {
				ce := a.flags&fabric.CE != 0
				wantCE := tc.flags&fabric.CE != 0 || (tc.flags&fabric.ECT != 0 && a.id >= 4)
				if ce != wantCE {
					t.Errorf("packet %d: CE %v, want %v", a.id, ce, wantCE)
				}
			}
		})
	}
}

// TestECNNotOnDropped: a packet dropped at a full queue is neither marked nor counted as
// marked.
func TestECNNotOnDropped(t *testing.T) {
	h := newLine(t, 1, lineOpts{nic: fabric.QueueConfig{Limit: 2 * mtu,
		ECN: fabric.ECNConfig{Enabled: true, Kmin: 0, Kmax: 1, Pmax: 1}}})
	h.sendN(0, 6, pkt{src: 0, dst: 1, route: lineRoute(1, 0, 0), flags: fabric.ECT})
	h.run(sim.MaxTime)
	h.audit()
	// Depth 0 on arrival for packets 1 and 2 (0 < Kmax = 1 B but >= Kmin = 0: p = 0), 4K for
	// packet 3 (marked), full for 4..6 (dropped).
	tot := h.port("h0", 0).Totals()
	if tot.CEMarks != 1 || tot.Drops[fabric.DropQueueFull] != 3 {
		t.Errorf("CEMarks %d, drops %d; want 1 and 3", tot.CEMarks, tot.Drops[fabric.DropQueueFull])
	}
}

// TestTrimOvertakes: with trimming on (UEC §4.1, NDP), a Trimmable packet that would push the
// class queue above Threshold is cut to a 64 B header, queued in the header queue and sent
// before the data already queued.
func TestTrimOvertakes(t *testing.T) {
	trim := fabric.QueueConfig{Trim: fabric.TrimConfig{Enabled: true, Threshold: 2 * mtu}}
	h := newLine(t, 1, lineOpts{nic: trim, delay: testDelay})
	h.sendN(0, 10, pkt{src: 0, dst: 1, route: lineRoute(1, 0, 0), flags: fabric.Trimmable})
	h.run(sim.MaxTime)
	h.audit()
	// 1 on the wire, 2 and 3 queued (depth 8K = Threshold), 4..10 trimmed; the headers go
	// before 2 and 3.
	want := []uint64{1, 4, 5, 6, 7, 8, 9, 10, 2, 3}
	for i, a := range h.got {
		if a.id != want[i] {
			t.Fatalf("delivery order %v, want %v", ids(h.got), want)
		}
		trimmed := a.id >= 4
		if trimmed != (a.flags&fabric.Trimmed != 0) || a.flags&fabric.TrimmedLastHop != 0 {
			t.Errorf("packet %d: flags %b", a.id, a.flags)
		}
		if trimmed != (a.size == fabric.HeaderBytes) {
			t.Errorf("packet %d: size %d", a.id, a.size)
		}
	}
	// The first header leaves the NIC right after packet 1 and follows it through every
	// switch, so it arrives one 64 B serialisation (640 ps) after it.
	if wantAt := 4*(tx800+testDelay) + rate800.TxTime(fabric.HeaderBytes); h.got[1].at != wantAt {
		t.Errorf("first header arrived at %d, want %d", h.got[1].at, wantAt)
	}
	_, hdr := h.port("h0", 0).Stats()
	c := h.n.C
	if hdr.EnqPackets != 7 || hdr.TxBytes != 7*fabric.HeaderBytes || c.DeliveredTrimmed != 7 || c.DeliveredWhole != 3 {
		t.Errorf("header queue %+v, books %+v", hdr, c)
	}
	if tot := h.port("h0", 0).Totals(); tot.Trims != 7 {
		t.Errorf("Trims = %d, want 7", tot.Trims)
	}
}

// TestTrimLastHop: in an incast, trims on the switch port facing the receiver are flagged
// TrimmedLastHop; a header overflow drops with its own reason.
func TestTrimLastHop(t *testing.T) {
	for _, tc := range []struct {
		name     string
		hdrLimit sim.Size
		overflow bool
	}{{"roomy header queue", 0, false}, {"two-header queue", 2 * fabric.HeaderBytes, true}} {
		t.Run(tc.name, func(t *testing.T) {
			toRecv := fabric.QueueConfig{Limit: 4 * mtu, Trim: fabric.TrimConfig{Enabled: true, HeaderLimit: tc.hdrLimit}}
			h := newStar(t, 1, 4, rate800, testDelay, fabric.QueueConfig{}, toRecv)
			for src := range int32(4) {
				h.sendN(0, 20, pkt{src: src, dst: 4, route: []uint16{4}, flags: fabric.Trimmable})
			}
			h.run(sim.MaxTime)
			h.audit()
			tot := h.port("s0", 4).Totals()
			c := h.n.C
			if tot.Trims == 0 {
				t.Fatal("no trims")
			}
			if c.DeliveredTrimmed+c.Dropped[fabric.DropHeaderOverflow] != tot.Trims {
				t.Errorf("trimmed %d = delivered %d + overflowed %d?", tot.Trims, c.DeliveredTrimmed, c.Dropped[fabric.DropHeaderOverflow])
			}
			if (c.Dropped[fabric.DropHeaderOverflow] > 0) != tc.overflow {
				t.Errorf("header overflow drops %d", c.Dropped[fabric.DropHeaderOverflow])
			}
			if c.Dropped[fabric.DropQueueFull] != 0 {
				t.Errorf("Trimmable packets were dropped whole: %d", c.Dropped[fabric.DropQueueFull])
			}
			for _, a := range h.got {
				if a.flags&fabric.Trimmed != 0 && a.flags&fabric.TrimmedLastHop == 0 {
					t.Fatalf("packet %d trimmed at the last hop without TrimmedLastHop", a.id)
				}
			}
		})
	}
}

// TestHeaderOverflow: with room for two headers, the third and later trims are dropped as
// header_overflow, counted in packets and bytes.
func TestHeaderOverflow(t *testing.T) {
	nic := fabric.QueueConfig{Trim: fabric.TrimConfig{Enabled: true, Threshold: 2 * mtu, HeaderLimit: 2 * fabric.HeaderBytes}}
	h := newLine(t, 1, lineOpts{nic: nic})
	h.sendN(0, 10, pkt{src: 0, dst: 1, route: lineRoute(1, 0, 0), flags: fabric.Trimmable})
	h.run(sim.MaxTime)
	h.audit()
	_, hdr := h.port("h0", 0).Stats()
	if hdr.Drops[fabric.DropHeaderOverflow] != 5 || hdr.DropBytes != 5*fabric.HeaderBytes || hdr.MaxDepth != 2*fabric.HeaderBytes {
		t.Errorf("header queue %+v; want 5 overflow drops of 64 B, max depth 128", hdr)
	}
	if c := h.n.C; c.DeliveredWhole != 3 || c.DeliveredTrimmed != 2 || c.Dropped[fabric.DropHeaderOverflow] != 5 {
		t.Errorf("books %+v", c)
	}
}

// TestHeadersKeepPriority: a header trimmed at one hop takes the header queue again at the
// next trimming port, overtaking data queued there, instead of waiting behind it (or being
// dropped as queue_full) in a data class.
func TestHeadersKeepPriority(t *testing.T) {
	// h0, h1 -> s0 -> s1 -> h2. s0 -> s1 trims; s1 -> h2 is 8x slower, so data queues at s1.
	h := newHarness(t, 1)
	h0, h1, h2 := h.node("h0", fabric.Host), h.node("h1", fabric.Host), h.node("h2", fabric.Host)
	s0, s1 := h.node("s0", fabric.Switch), h.node("s1", fabric.Switch)
	trim := fabric.QueueConfig{Trim: fabric.TrimConfig{Enabled: true, Threshold: mtu}}
	big := fabric.QueueConfig{Limit: bigLimit}
	h.link(h0, s0, rate800, 0, big, trim) // s0.p0
	h.link(h1, s0, rate800, 0, big, trim) // s0.p1
	h.link(s0, s1, rate800, 0, trim, trim)
	h.link(s1, h2, rate100, 0, fabric.QueueConfig{Trim: fabric.TrimConfig{Enabled: true}}, big)
	route := []uint16{2, 1}
	for src := range int32(2) {
		h.sendN(0, 40, pkt{src: src, dst: 2, route: route, flags: fabric.Trimmable})
	}
	h.run(sim.MaxTime)
	h.audit()
	if h.port("s0", 2).Totals().Trims == 0 {
		t.Fatal("s0 trimmed nothing")
	}
	if got := h.port("s1", 1).Totals().Trims; got != 0 {
		t.Errorf("s1 trimmed %d (its data queue never passes the limit)", got)
	}
	_, hdr := h.port("s1", 1).Stats()
	if hdr.EnqPackets != h.n.C.DeliveredTrimmed {
		t.Errorf("s1 header queue took %d headers, %d delivered", hdr.EnqPackets, h.n.C.DeliveredTrimmed)
	}
	// Every header reaches h2 before the data that was queued at s1 when it arrived: the
	// last header must arrive before the last whole packet.
	var lastHdr, lastData sim.Time
	for _, a := range h.got {
		if a.flags&fabric.Trimmed != 0 {
			lastHdr = a.at
		} else {
			lastData = a.at
		}
	}
	if lastHdr > lastData-20*tx100 {
		t.Errorf("last header at %v, last data at %v: headers waited behind data", lastHdr, lastData)
	}
}

// TestQueueDepthStats: MaxDepth and the time-averaged MeanDepth of a hand-computed backlog.
// Three 4 KiB packets at t = 0: one on the wire and 8 KiB queued until 40.96 ns, 4 KiB until
// 81.92 ns, then empty; over [0, 122.88 ns] the mean is (8K + 4K) x 40.96 / 122.88 = 4 KiB.
func TestQueueDepthStats(t *testing.T) {
	h := newLine(t, 1, lineOpts{})
	h.sendN(0, 3, pkt{src: 0, dst: 1, route: lineRoute(1, 0, 0)})
	pt := h.port("h0", 0)
	if got := pt.MeanDepth(0); got != 0 {
		t.Errorf("MeanDepth(0) = %v", got)
	}
	// MeanDepth(now) is over [0, now], so run up to each instant before asking.
	for _, tc := range []struct {
		now  sim.Time
		mean float64
	}{{tx800 / 2, 8192}, {tx800, 8192}, {2 * tx800, 6144}, {3 * tx800, 4096}, {6 * tx800, 2048}} {
		h.run(tc.now)
		if got := pt.MeanDepth(tc.now); got != tc.mean {
			t.Errorf("MeanDepth(%v) = %v, want %v", tc.now, got, tc.mean)
		}
		if got := pt.Totals().MeanDepth(tc.now); got != tc.mean {
			t.Errorf("Totals().MeanDepth(%v) = %v, want %v", tc.now, got, tc.mean)
		}
	}
	if tot := pt.Totals(); tot.MaxDepth != 2*mtu || tot.Depth != 0 || tot.TxPackets != 3 {
		t.Errorf("totals %+v", tot)
	}
}

func ids(as []arrival) []uint64 {
	out := make([]uint64, len(as))
	for i, a := range as {
		out[i] = a.id
	}
	return out
}
