package fabric_test

import (
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// TestStoreAndForward pins link timing: a packet is fully serialised at every hop before it
// moves on, so over host -> s0 -> s1 -> s2 -> host (four links of equal rate and delay D) it
// arrives at exactly 4 x (TxTime + D).
func TestStoreAndForward(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rate  sim.Rate
		delay sim.Time
		hop   sim.Time // serialisation of 4 KiB
	}{
		{"800G/D=0", rate800, 0, tx800},
		{"800G/D=1ns", rate800, 1_000, tx800},
		{"800G/D=1.234567us", rate800, 1_234_567, tx800},
		{"100G/D=500ns", rate100, 500_000, tx100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rate.TxTime(mtu); got != tc.hop {
				t.Fatalf("TxTime(4096) at %v = %v ps, want %d ps", tc.rate, int64(got), tc.hop)
			}
			h := newLine(t, 1, lineOpts{rate: tc.rate, delay: tc.delay})
			h.sendN(0, 1, pkt{src: 0, dst: 1, route: lineRoute(1, 0, 0)})
			h.run(sim.MaxTime)
			if len(h.got) != 1 {
				t.Fatalf("delivered %d packets, want 1", len(h.got))
			}
			if want := 4 * (tc.hop + tc.delay); h.got[0].at != want {
				t.Errorf("arrived at %d ps, want 4 x (%d + %d) = %d ps", h.got[0].at, tc.hop, tc.delay, want)
			}
			h.audit()
		})
	}
}

// TestBackToBack: packets sent together leave the NIC back to back and, every link being
// equally fast, arrive spaced by exactly one serialisation time; a smaller packet behind a
// larger one is spaced by its own serialisation time.
func TestBackToBack(t *testing.T) {
	h := newLine(t, 1, lineOpts{rate: rate100, delay: testDelay})
	h.at(0, func(now sim.Time) { // one event: two events at t = 0 run in seeded order
		for range 5 {
			h.send(now, pkt{src: 0, dst: 1, route: lineRoute(1, 0, 0)})
		}
		h.send(now, pkt{src: 0, dst: 1, size: 1024, route: lineRoute(1, 0, 0)})
	})
	h.run(sim.MaxTime)
	if len(h.got) != 6 {
		t.Fatalf("delivered %d, want 6", len(h.got))
	}
	first := 4 * (tx100 + testDelay)
	for i := range 5 {
		if want := first + sim.Time(i)*tx100; h.got[i].at != want {
			t.Errorf("packet %d arrived at %d, want %d", i, h.got[i].at, want)
		}
		if h.got[i].id != uint64(i+1) {
			t.Errorf("packet %d has ID %d, want %d (FIFO)", i, h.got[i].id, i+1)
		}
	}
	if want := first + 4*tx100 + tx100/4; h.got[5].at != want {
		t.Errorf("1 KiB packet arrived at %d, want %d", h.got[5].at, want)
	}
}

// TestLinkDelayLoweredKeepsFIFO: lowering a port's Delay while packets are on its link must
// neither reorder the link nor schedule an event in the past.
func TestLinkDelayLoweredKeepsFIFO(t *testing.T) {
	h := newLine(t, 1, lineOpts{delay: 1_000_000})
	h.sendN(0, 4, pkt{src: 0, dst: 1, route: lineRoute(1, 0, 0)})
	h.at(2*tx800+1, func(sim.Time) { h.port("h0", 0).Delay = 0 })
	h.run(sim.MaxTime)
	if len(h.got) != 4 {
		t.Fatalf("delivered %d, want 4", len(h.got))
	}
	for i := 1; i < 4; i++ {
		if h.got[i].id < h.got[i-1].id || h.got[i].at < h.got[i-1].at {
			t.Errorf("out of order: %+v then %+v", h.got[i-1], h.got[i])
		}
	}
	h.audit()
}

// TestSendErrors: bad host, plane or size are errors, never panics, and the packet is not
// counted.
func TestSendErrors(t *testing.T) {
	h := newLine(t, 1, lineOpts{})
	for _, tc := range []struct {
		name        string
		host, plane int
		size        int32
	}{
		{"negative host", -1, 0, mtu},
		{"switch as host", 2, 0, mtu},
		{"missing plane", 0, 1, mtu},
		{"negative plane", 0, -1, mtu},
		{"zero size", 0, 0, 0},
		{"negative size", 0, 0, -5},
	} {
		p := h.n.NewPacket()
		p.Size = tc.size
		if err := h.n.Send(0, int32(tc.host), tc.plane, p); err == nil {
			t.Errorf("%s: Send succeeded", tc.name)
		}
	}
	if h.n.C.Injected != 0 {
		t.Errorf("Injected = %d after failed sends", h.n.C.Injected)
	}
	h.audit()
}

// TestBuildErrors: AddNode and Connect reject bad input with errors, and a failed Connect
// leaves the network as it was.
func TestBuildErrors(t *testing.T) {
	h := newHarness(t, 1)
	a := h.node("a", fabric.Host)
	sw := h.node("sw", fabric.Switch)
	if _, err := h.n.AddNode("late", fabric.Host, -1, -1); err == nil {
		t.Error("host after switch accepted")
	}
	if _, err := h.n.AddNode("odd", fabric.NodeKind(7), 0, 0); err == nil {
		t.Error("unknown kind accepted")
	}
	if _, err := h.n.AddNode("big", fabric.Switch, 300, 0); err == nil {
		t.Error("plane 300 accepted")
	}
	ok := fabric.PortEnd{Node: a, Local: fabric.AppendPort, Name: "a.p0"}
	bad := fabric.PortEnd{Node: sw, Name: "sw.p0", Queue: fabric.QueueConfig{Classes: 99}}
	for _, tc := range []struct {
		name  string
		a, b  fabric.PortEnd
		rate  sim.Rate
		delay sim.Time
	}{
		{"zero rate", ok, fabric.PortEnd{Node: sw}, 0, 0},
		{"negative delay", ok, fabric.PortEnd{Node: sw}, rate800, -1},
		{"unknown node", ok, fabric.PortEnd{Node: 42}, rate800, 0},
		{"bad queue on second end", ok, bad, rate800, 0},
		{"bad ecn", ok, fabric.PortEnd{Node: sw, Queue: fabric.QueueConfig{ECN: fabric.ECNConfig{Enabled: true, Kmin: 10, Kmax: 5}}}, rate800, 0},
		{"bad trim share", ok, fabric.PortEnd{Node: sw, Queue: fabric.QueueConfig{Trim: fabric.TrimConfig{Enabled: true, HeaderShare: 1}}}, rate800, 0},
	} {
		if _, _, err := h.n.Connect(tc.a, tc.b, tc.rate, tc.delay); err == nil {
			t.Errorf("%s: Connect succeeded", tc.name)
		}
	}
	if len(h.n.Ports) != 0 || len(h.n.Nodes[a].Ports) != 0 || len(h.n.Nodes[sw].Ports) != 0 {
		t.Errorf("failed Connects left %d ports behind", len(h.n.Ports))
	}
}
