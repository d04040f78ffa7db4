package fabric_test

import (
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// hol builds the head-of-line test: hosts A and V on switch S1, whose 400 Gb/s uplink enters
// S2 through one ingress; B and C on S2; R and Q behind S2. A, B and C send incast packets to R
// (3:1 at R's egress); V sends victim packets to Q, whose egress is idle. Host links 100 Gb/s.
func hol(t *testing.T, model string, incast, victim int) (h *harness, victimDone sim.Time) {
	t.Helper()
	h = newHarness(t, 7)
	q := fabric.QueueConfig{Limit: bigLimit}
	var id [6]fabric.NodeID
	for i, name := range []string{"A", "V", "B", "C", "R", "Q"} {
		id[i] = h.node(name, fabric.Host)
	}
	s1, s2 := h.node("S1", fabric.Switch), h.node("S2", fabric.Switch)
	h.link(id[0], s1, rate100, testDelay, q, q) // S1.p0
	h.link(id[1], s1, rate100, testDelay, q, q) // S1.p1
	h.link(s1, s2, 4*rate100, testDelay, q, q)  // S1.p2 - S2.p0 (the shared ingress)
	h.link(id[2], s2, rate100, testDelay, q, q) // S2.p1
	h.link(id[3], s2, rate100, testDelay, q, q) // S2.p2
	h.link(s2, id[4], rate100, testDelay, q, q) // S2.p3 -> R
	h.link(s2, id[5], rate100, testDelay, q, q) // S2.p4 -> Q
	if err := h.n.SetSwitch(fabric.SwitchConfig{Kind: model, IngressBuffer: 4 << 20}); err != nil {
		t.Fatal(err)
	}
	h.sendN(0, incast, pkt{src: 0, dst: 4, route: []uint16{2, 3}, flow: 1})
	h.sendN(0, incast, pkt{src: 2, dst: 4, route: []uint16{3}, flow: 1})
	h.sendN(0, incast, pkt{src: 3, dst: 4, route: []uint16{3}, flow: 1})
	h.sendN(0, victim, pkt{src: 1, dst: 5, route: []uint16{2, 4}, flow: 2})
	h.run(sim.Time(1e12))
	h.audit()
	n := 0
	for _, a := range h.got {
		if a.flow == 2 {
			n++
			victimDone = a.at
		}
	}
	if n != victim || len(h.got) != 3*incast+victim {
		t.Fatalf("%s: delivered %d victim of %d, %d in all of %d", model, n, victim, len(h.got), 3*incast+victim)
	}
	return h, victimDone
}

// TestSwitchModelHOL: the victim shares S2's ingress with incast traffic. Output queueing and
// VOQ leave it at its ideal FCT (its 100 Gb/s NIC's serialisation plus the path); the shared
// ingress FIFO makes it wait behind incast heads for R's egress.
func TestSwitchModelHOL(t *testing.T) {
	const incast, victim = 200, 100
	// Ideal: victim packets leave V back to back at 100 Gb/s; the last one crosses three links.
	ideal := sim.Time(victim)*tx100 + tx100/4 + tx100 + 3*testDelay
	for _, c := range []struct {
		model    string
		min, max float64 // bounds on victim FCT / ideal
	}{
		{fabric.SwitchOutput, 0.99, 1.03},
		{fabric.SwitchVOQ, 0.99, 1.03},
		{fabric.SwitchSharedIngress, 1.5, 10},
	} {
		t.Run(c.model, func(t *testing.T) {
			_, done := hol(t, c.model, incast, victim)
			r := float64(done) / float64(ideal)
			t.Logf("%s: victim FCT %v, ideal %v, ratio %.3f", c.model, done, ideal, r)
			if r < c.min || r > c.max {
				t.Fatalf("%s: victim FCT / ideal = %.3f, want in [%.2f, %.2f]", c.model, r, c.min, c.max)
			}
		})
	}
}

// TestSwitchModelDeterministic: same seed, same arrivals, packet by packet.
func TestSwitchModelDeterministic(t *testing.T) {
	for _, m := range []string{fabric.SwitchSharedIngress, fabric.SwitchVOQ} {
		a, _ := hol(t, m, 50, 20)
		b, _ := hol(t, m, 50, 20)
		if len(a.got) != len(b.got) {
			t.Fatalf("%s: %d vs %d arrivals", m, len(a.got), len(b.got))
		}
		for i := range a.got {
			if a.got[i] != b.got[i] {
				t.Fatalf("%s: arrival %d differs: %+v vs %+v", m, i, a.got[i], b.got[i])
			}
		}
	}
}

// TestSwitchModelIngressDrops: a small ingress buffer drops what does not fit, at the switch
// node, and the books still balance.
func TestSwitchModelIngressDrops(t *testing.T) {
	h := newHarness(t, 1)
	q := fabric.QueueConfig{Limit: bigLimit}
	a, b, r := h.node("A", fabric.Host), h.node("B", fabric.Host), h.node("R", fabric.Host)
	s := h.node("S", fabric.Switch)
	h.link(a, s, rate800, testDelay, q, q)
	h.link(b, s, rate800, testDelay, q, q)
	h.link(s, r, rate100, testDelay, q, q)
	if err := h.n.SetSwitch(fabric.SwitchConfig{Kind: fabric.SwitchVOQ, IngressBuffer: 64 << 10}); err != nil {
		t.Fatal(err)
	}
	h.sendN(0, 100, pkt{src: 0, dst: 2, route: []uint16{2}})
	h.sendN(0, 100, pkt{src: 1, dst: 2, route: []uint16{2}})
	h.run(sim.Time(1e12))
	h.audit()
	drops := h.n.C.Dropped[fabric.DropQueueFull]
	if drops == 0 || h.n.Nodes[s].Drops[fabric.DropQueueFull] != drops || int64(len(h.got))+drops != 200 {
		t.Fatalf("drops %d (node %d), delivered %d", drops, h.n.Nodes[s].Drops[fabric.DropQueueFull], len(h.got))
	}
	// Every drop is booked at the ingress it happened in: S's two host-facing ports.
	var sum int64
	for pid, d := range h.n.VOQIngressDrops() {
		if d > 0 && (h.n.Ports[pid].Node != s || h.n.Ports[pid].Peer < 0 || h.n.Ports[pid].Local > 1) {
			t.Errorf("port %s: %d ingress drops, want none there", h.n.Ports[pid].Name, d)
		}
		sum += d
	}
	if sum != drops {
		t.Fatalf("ingress drops sum to %d, the node counts %d", sum, drops)
	}
	if d := fabric.New(sim.New(1)).VOQIngressDrops(); d != nil {
		t.Fatalf("output queueing: ingress drops %v, want nil", d)
	}
}

// TestSwitchConfigErrors: bad fields are named.
func TestSwitchConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  fabric.SwitchConfig
		want string
	}{
		{fabric.SwitchConfig{Kind: "crossbar"}, "fabric.switch_model.kind"},
		{fabric.SwitchConfig{Kind: "voq", IngressBuffer: -1}, "fabric.switch_model.ingress_buffer"},
		{fabric.SwitchConfig{Kind: "voq", IngressBuffer: 1000, VOQBuffer: 2000}, "fabric.switch_model.voq_buffer"},
		{fabric.SwitchConfig{Kind: "voq", IngressBuffer: 1000, EgressThreshold: 2000}, "fabric.switch_model.egress_threshold"},
	} {
		n := fabric.New(sim.New(1))
		err := n.SetSwitch(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%+v: error %v, want one naming %s", c.cfg, err, c.want)
		}
	}
	n := fabric.New(sim.New(1))
	if err := n.SetPFC(fabric.PFCConfig{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := n.SetSwitch(fabric.SwitchConfig{Kind: "voq"}); err == nil || !strings.Contains(err.Error(), "fabric.pfc") {
		t.Fatalf("voq with PFC: %v", err)
	}
}

// TestSwitchModelTrimOnAdmission: under the input-buffered models an egress that trims judges
// the backlog for it (its queue plus the bytes waiting in the ingresses) against its trim
// threshold on admission, so an incast is trimmed as under output queueing instead of filling
// the ingress buffers; headers reach the receiver, nothing is dropped, and the trims are the
// egress port's.
func TestSwitchModelTrimOnAdmission(t *testing.T) {
	for _, model := range []string{fabric.SwitchOutput, fabric.SwitchSharedIngress, fabric.SwitchVOQ} {
		h := newHarness(t, 1)
		q := fabric.QueueConfig{Limit: bigLimit}
		tq := fabric.QueueConfig{Limit: bigLimit, Trim: fabric.TrimConfig{Enabled: true, Threshold: 64 << 10}}
		a, b, r := h.node("A", fabric.Host), h.node("B", fabric.Host), h.node("R", fabric.Host)
		s := h.node("S", fabric.Switch)
		h.link(a, s, rate100, testDelay, q, q)
		h.link(b, s, rate100, testDelay, q, q)
		h.link(s, r, rate100, testDelay, tq, q) // S.p2 -> R trims above 64 KiB
		if model != fabric.SwitchOutput {
			if err := h.n.SetSwitch(fabric.SwitchConfig{Kind: model, IngressBuffer: 4 << 20}); err != nil {
				t.Fatal(err)
			}
		}
		h.sendN(0, 200, pkt{src: 0, dst: 2, route: []uint16{2}, flags: fabric.Trimmable})
		h.sendN(0, 200, pkt{src: 1, dst: 2, route: []uint16{2}, flags: fabric.Trimmable})
		h.run(sim.Time(1e12))
		h.audit()
		egress := h.n.Ports[h.n.Nodes[s].Ports[2]].Totals().Trims
		headers := 0
		for _, g := range h.got {
			if g.size == fabric.HeaderBytes {
				headers++
			}
		}
		t.Logf("%s: %d trims at the egress, %d on admission, %d headers delivered, %d dropped", model, egress, h.n.VOQTrims(), headers, h.n.C.DroppedTotal())
		if egress == 0 || int64(headers) != egress || h.n.C.DroppedTotal() != 0 || len(h.got) != 400 {
			t.Fatalf("%s: %d trims, %d headers delivered, %d dropped, %d delivered of 400", model, egress, headers, h.n.C.DroppedTotal(), len(h.got))
		}
		if model != fabric.SwitchOutput && h.n.VOQTrims() != egress {
			t.Fatalf("%s: %d trims on admission, the egress counts %d", model, h.n.VOQTrims(), egress)
		}
	}
}
