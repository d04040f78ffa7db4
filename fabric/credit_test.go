package fabric_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// bigQ is a queue that never fills in the credit tests: under credits the receivers'
// buffers, not the egress limits, bound what a switch holds.
var bigQ = fabric.QueueConfig{Limit: bigLimit}

// TestCreditLinkThroughput checks IBTA vol 1 §7.9's promise on one link: a 100 m cable
// (500 ns) runs at line rate when the receiver's credits cover the credit round trip and at
// credits / credit RTT when they do not: throughput = min(C, W / RTT), W the packets the
// buffer holds times their size and RTT = the packet's serialisation + the delay there +
// the delay back + the flow-control packet's serialisation (the host adapter frees a packet's
// blocks when it arrives). Within 2%, over 10G..800G and buffers of 4 to 256 packets.
func TestCreditLinkThroughput(t *testing.T) {
	const delay = 500 * sim.Nanosecond // 100 m of fibre at 5 ns/m
	for _, rate := range []sim.Rate{10 * sim.Gbps, 100 * sim.Gbps, 400 * sim.Gbps, 800 * sim.Gbps} {
		for _, buf := range []sim.Size{16 << 10, 64 << 10, 256 << 10, 1 << 20} {
			t.Run(fmt.Sprintf("%v/%v", rate, buf), func(t *testing.T) {
				h := newHarness(t, 1)
				a, b := h.node("h0", fabric.Host), h.node("h1", fabric.Host)
				h.link(a, b, rate, delay, bigQ, bigQ)
				if err := h.n.SetCredits(fabric.CreditConfig{Enabled: true, BufferPerVL: buf}); err != nil {
					t.Fatal(err)
				}
				const n = 3000
				h.sendN(0, n, pkt{src: 0, dst: 1, class: 0})
				h.run(sim.MaxTime)
				h.audit()
				if len(h.got) != n {
					t.Fatalf("delivered %d of %d", len(h.got), n)
				}
				// Steady state: from the end of the first window to the last packet.
				w := int(int64(buf) / mtu)
				from := min(2*w, n/2)
				got := float64(n-1-from) * mtu * 8 / float64(h.got[n-1].at-h.got[from].at) * 1e12
				s := rate.TxTime(mtu)
				rtt := s + 2*delay + rate.TxTime(fabric.FCPacketBytes)
				want := math.Min(float64(rate), float64(w)*mtu*8/float64(rtt)*1e12)
				if math.Abs(got-want)/want > 0.02 {
					t.Fatalf("throughput %.2f Gb/s, closed form min(C, W/RTT) = %.2f Gb/s (W %d packets, RTT %v)", got/1e9, want/1e9, w, rtt)
				}
				st := h.n.CreditStats(h.port("h0", 0).Peer, h.s.Now())
				if st.FCPacketsSent != n {
					t.Fatalf("receiver sent %d flow-control packets for %d data packets", st.FCPacketsSent, n)
				}
			})
		}
	}
}

// incastRig builds k senders and one receiver on one switch (s0), every link at 400G with a
// 100 ns delay, and returns the harness; credits on with buf per VL when buf > 0.
func incastRig(t *testing.T, k int, buf sim.Size) *harness {
	h := newHarness(t, 7)
	var hosts []fabric.NodeID
	for i := 0; i <= k; i++ {
		hosts = append(hosts, h.node(fmt.Sprintf("h%d", i), fabric.Host))
	}
	s := h.node("s0", fabric.Switch)
	for _, x := range hosts {
		h.link(x, s, 400*sim.Gbps, 100*sim.Nanosecond, bigQ, bigQ)
	}
	h.n.Nodes[s].Routes = fabric.RouteTable{Entries: []fabric.RouteEntry{{HostLo: int32(k), HostHi: int32(k + 1), Ports: []uint16{uint16(k)}}}}
	if buf > 0 {
		if err := h.n.SetCredits(fabric.CreditConfig{Enabled: true, BufferPerVL: buf}); err != nil {
			t.Fatal(err)
		}
		if w := h.n.CreditCheck(mtu, 5); w != nil {
			t.Fatalf("credit check: %v", w)
		}
	}
	for i := 0; i < k; i++ {
		h.sendN(0, 20, pkt{src: int32(i), dst: int32(k)})
	}
	return h
}

// TestCreditIncastLossless: under k -> 1 incasts (8, 64, 255) with small buffers (4 packets
// per VL) nothing is dropped, every packet arrives, the switch never holds more for one
// ingress than its buffer, and the senders' NIC ports spent time blocked on credits.
func TestCreditIncastLossless(t *testing.T) {
	for _, k := range []int{8, 64, 255} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			h := incastRig(t, k, 16<<10)
			h.run(sim.MaxTime)
			h.audit()
			if d := h.n.C.DroppedTotal(); d != 0 {
				t.Fatalf("%d drops", d)
			}
			if len(h.got) != 20*k {
				t.Fatalf("delivered %d of %d", len(h.got), 20*k)
			}
			var blocked sim.Time
			for i := 0; i < k; i++ {
				st := h.n.CreditStats(portID(h, fmt.Sprintf("h%d.p0", i)), h.s.Now())
				blocked += st.BlockedTime
				in := h.n.CreditStats(h.port(fmt.Sprintf("h%d", i), 0).Peer, h.s.Now())
				if in.PeakHeldBytes > 16<<10 {
					t.Fatalf("ingress from h%d held %d B, buffer 16 KiB", i, in.PeakHeldBytes)
				}
			}
			if blocked == 0 {
				t.Fatal("no sender was ever blocked on credits")
			}
			// The receiver's link ran at line rate: k x 20 packets in about their time.
			ideal := (400 * sim.Gbps).TxTime(int64(20*k) * mtu)
			if last := h.got[len(h.got)-1].at; last > ideal+ideal/20+2*sim.Microsecond {
				t.Fatalf("last arrival at %v; the bottleneck alone needs %v", last, ideal)
			}
		})
	}
}

// TestCreditDeterminism: the same incast twice gives the same deliveries, packet for packet.
func TestCreditDeterminism(t *testing.T) {
	a, b := incastRig(t, 64, 16<<10), incastRig(t, 64, 16<<10)
	a.run(sim.MaxTime)
	b.run(sim.MaxTime)
	if !slices.Equal(a.got, b.got) {
		t.Fatal("two runs of one incast differ")
	}
}

// TestCreditCongestionSpreading: head-of-line blocking and congestion spreading without pause
// frames. Four senders on s0 and four on s1 send to h8 on s1 (an 8 -> 1 incast); a victim on
// s0 sends to a host on s1 whose link is idle. All links 400G. Without flow control (queues
// that never fill) the victim shares s0's uplink FIFO with four saturating incast flows and
// gets about C/5. With credits, every ingress of s1 holds at most its buffer, so the FIFO
// toward h8 holds as many packets from the one ingress fed by s0 as from each of the four
// local senders' ingresses: the four remote incast flows together get C/5 of h8's link (the
// per-ingress, not per-flow, fairness of credit buffers: the "parking lot" effect). s0's
// uplink then carries only what s1 frees, r with 4/5 r = C/5, so r = C/4, and the victim,
// behind incast packets in the same FIFO, gets r/5 = C/20: four times slower. Zero drops
// either way.
func TestCreditCongestionSpreading(t *testing.T) {
	victim := func(credits bool) float64 {
		h := newHarness(t, 3)
		var hs []fabric.NodeID
		for i := 0; i < 11; i++ { // h0-h3 and h9 (victim) on s0; h4-h8, h10 on s1
			hs = append(hs, h.node(fmt.Sprintf("h%d", i), fabric.Host))
		}
		s0, s1 := h.node("s0", fabric.Switch), h.node("s1", fabric.Switch)
		r, d := 400*sim.Gbps, 100*sim.Nanosecond
		for _, i := range []int{0, 1, 2, 3, 9} {
			h.link(hs[i], s0, r, d, bigQ, bigQ)
		}
		for _, i := range []int{4, 5, 6, 7, 8, 10} {
			h.link(hs[i], s1, r, d, bigQ, bigQ)
		}
		h.link(s0, s1, r, d, bigQ, bigQ) // s0.p5 - s1.p6
		h.n.Nodes[s0].Routes = fabric.RouteTable{Up: []uint16{5}}
		h.n.Nodes[s1].Routes = fabric.RouteTable{Entries: []fabric.RouteEntry{
			{HostLo: 8, HostHi: 9, Ports: []uint16{4}}, {HostLo: 10, HostHi: 11, Ports: []uint16{5}}}}
		if credits {
			if err := h.n.SetCredits(fabric.CreditConfig{Enabled: true, BufferPerVL: 32 << 10}); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 8; i++ {
			h.sendN(0, 2000, pkt{src: int32(i), dst: 8})
		}
		const v = 300
		h.sendN(0, v, pkt{src: 9, dst: 10, flow: 1})
		h.run(sim.MaxTime)
		h.audit()
		if dr := h.n.C.DroppedTotal(); dr != 0 {
			t.Fatalf("credits %v: %d drops", credits, dr)
		}
		var last sim.Time
		k := 0
		for _, a := range h.got {
			if a.flow == 1 {
				last, k = a.at, k+1
			}
		}
		if k != v {
			t.Fatalf("victim delivered %d of %d", k, v)
		}
		return float64(v) * mtu * 8 / float64(last) * 1e12 / float64(r)
	}
	free, cred := victim(false), victim(true)
	t.Logf("victim throughput of line: %.3f without flow control, %.3f with credits", free, cred)
	if !(cred < 0.8*free) {
		t.Fatalf("victim %.3f of line with credits, %.3f without: no head-of-line blocking", cred, free)
	}
	if math.Abs(free-0.2) > 0.03 || math.Abs(cred-0.05) > 0.01 {
		t.Fatalf("victim %.3f / %.3f of line; closed forms C/5 and C/20", free, cred)
	}
}

// TestCreditConfigErrors: bad buffers and PFC together are refused with the field named.
func TestCreditConfigErrors(t *testing.T) {
	h := incastRig(t, 2, 0)
	if err := h.n.SetCredits(fabric.CreditConfig{Enabled: true, BufferPerVL: 10}); err == nil {
		t.Fatal("a 10 B buffer was accepted")
	}
	if err := h.n.SetPFC(fabric.PFCConfig{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if err := h.n.SetCredits(fabric.CreditConfig{Enabled: true}); err == nil {
		t.Fatal("credits accepted with PFC on")
	}
}

// portID returns the id of the port named name.
func portID(h *harness, name string) fabric.PortID {
	h.tb.Helper()
	id, ok := h.n.PortByName(name)
	if !ok {
		h.tb.Fatalf("no port %s", name)
	}
	return id
}

// TestVLArbitration: the VL arbitration tables [IBTA vol 1 §7.6.9] share a link between two
// backlogged VLs by weight (64-byte units): low table VL0:64, VL1:192 gives 1:3; VL0 in the
// high table and VL1 in the low one alternate with high_limit 0 (one high packet, then a low
// one may go) and send all of VL0 first with 255 (unlimited).
func TestVLArbitration(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       fabric.CreditConfig
		wantVL0   int // of the first 200 deliveries
		tolerance int
	}{
		{"low 1:3", fabric.CreditConfig{Low: []fabric.VLArbEntry{{VL: 0, Weight: 64}, {VL: 1, Weight: 192}}}, 50, 2},
		{"high limit 0", fabric.CreditConfig{High: []fabric.VLArbEntry{{VL: 0, Weight: 64}}, Low: []fabric.VLArbEntry{{VL: 1, Weight: 64}}}, 100, 2},
		{"high unlimited", fabric.CreditConfig{High: []fabric.VLArbEntry{{VL: 0, Weight: 64}}, Low: []fabric.VLArbEntry{{VL: 1, Weight: 64}}, HighLimit: 255}, 200, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, 1)
			a, b := h.node("h0", fabric.Host), h.node("h1", fabric.Host)
			h.link(a, b, 400*sim.Gbps, 500*sim.Nanosecond, bigQ, bigQ)
			cfg := tc.cfg
			cfg.Enabled, cfg.BufferPerVL = true, 1<<20
			if err := h.n.SetCredits(cfg); err != nil {
				t.Fatal(err)
			}
			h.sendN(0, 300, pkt{src: 0, dst: 1, class: 1})
			h.sendN(0, 300, pkt{src: 0, dst: 1, class: 0})
			h.run(sim.MaxTime)
			h.audit()
			if len(h.got) != 600 {
				t.Fatalf("delivered %d of 600", len(h.got))
			}
			vl0 := 0
			for _, g := range h.got[:200] {
				if g.class == 0 {
					vl0++
				}
			}
			if d := vl0 - tc.wantVL0; d < -tc.tolerance || d > tc.tolerance {
				t.Fatalf("VL0 sent %d of the first 200 packets, want %d +- %d", vl0, tc.wantVL0, tc.tolerance)
			}
		})
	}
	bad := fabric.CreditConfig{Enabled: true, Low: []fabric.VLArbEntry{{VL: 9, Weight: 1}}}.WithDefaults()
	if err := bad.Validate("fabric.credits"); err == nil || !strings.Contains(err.Error(), "fabric.credits.low[0].vl") {
		t.Fatalf("VL 9 accepted or the field not named: %v", err)
	}
}

// TestCreditLinkReinit: on the line h0 - s0 - s1 - h1 (100G, 1 us links) with credits, 300
// packets go at t = 0 and the s0 - s1 link (or switch s1: all its links) fails at 3 us, with
// packets on the wire and in s1's buffer, and is repaired at 6 us; 300 more go at 200 us. The
// link's re-initialisation resets its flow control [IBTA vol 1 §7.9.4: FCTBS and ABR to 0,
// the free buffer re-advertised], so the blocks lost with the packets on the dead link are
// not charged to the sender forever: every packet of the second batch arrives, and at the
// end every port's credits are whole (CreditAudit). Without the reset three of the four
// cases fail (8 KiB with the switch down stalls; both 128 KiB cases fail the audit).
func TestCreditLinkReinit(t *testing.T) {
	for _, buf := range []sim.Size{8 << 10, 128 << 10} {
		for _, sw := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/switch=%v", buf, sw), func(t *testing.T) {
				h := newHarness(t, 3)
				h0, h1 := h.node("h0", fabric.Host), h.node("h1", fabric.Host)
				s0, s1 := h.node("s0", fabric.Switch), h.node("s1", fabric.Switch)
				const rate, delay = 100 * sim.Gbps, sim.Microsecond
				h.link(h0, s0, rate, delay, bigQ, bigQ)
				h.link(s0, s1, rate, delay, bigQ, bigQ)
				h.link(s1, h1, rate, delay, bigQ, bigQ)
				to := func(p uint16) fabric.RouteTable {
					return fabric.RouteTable{Entries: []fabric.RouteEntry{{HostLo: 1, HostHi: 2, Ports: []uint16{p}}}}
				}
				h.n.Nodes[s0].Routes, h.n.Nodes[s1].Routes = to(1), to(1)
				if err := h.n.SetCredits(fabric.CreditConfig{Enabled: true, BufferPerVL: buf}); err != nil {
					t.Fatal(err)
				}
				dead := []string{"s0.p1"}
				if sw {
					dead = []string{"s1.p0", "s1.p1"}
				}
				for _, e := range []struct {
					at   sim.Time
					down bool
				}{{3 * sim.Microsecond, true}, {6 * sim.Microsecond, false}} {
					h.at(e.at, func(now sim.Time) {
						for _, d := range dead {
							if err := h.n.SetLinkDown(now, portID(h, d), e.down); err != nil {
								t.Fatal(err)
							}
						}
					})
				}
				const n = 300
				h.sendN(0, n, pkt{src: 0, dst: 1, class: 1})
				h.sendN(200*sim.Microsecond, n, pkt{src: 0, dst: 1, class: 1, flow: 2})
				h.run(sim.MaxTime)
				h.audit()
				late := 0
				for _, a := range h.got {
					if a.flow == 2 {
						late++
					}
				}
				if lost := h.n.C.DroppedTotal(); lost == 0 || late != n {
					t.Fatalf("%d dropped (want > 0: the outage must hit traffic), %d of the %d packets sent after the repair delivered", lost, late, n)
				}
				if bad := h.n.CreditAudit(5); bad != nil {
					t.Fatalf("credits not whole after the run:\n%v", strings.Join(bad, "\n"))
				}
			})
		}
	}
}

// TestCreditVictimNotMarked: IB congestion control's victim exemption [IBTA vol 1 Annex
// A10.2.1: a port marks only as the root of congestion, not while it lacks credits]. The
// rig of TestCreditCongestionSpreading (3 + 4 -> 1 incast into h8 on s1, victim h9 -> h10
// sharing s0's 400G uplink with the three remote incast flows, s0's hosts at 100G so that
// the uplink is not oversubscribed by itself, s1's at 400G, 32 KiB per VL) with ECN on
// every switch egress (RED from 16 KiB) and every packet ECN-capable: s0's uplink queue is
// deep because s1 returns its credits slowly (a victim), s1's port to h8 because h8's link
// is full (the root). The root marks incast packets; the victim's packets, which cross only
// the credit-blocked uplink and h10's idle link, arrive unmarked, and the uplink counts the
// packets it left unmarked (CreditStats.VictimUnmarked; a few victim packets are marked
// in the moments the uplink has credits to spare, a root then). With MarkVictims (the model
// before the exemption) the blocked uplink marks the victim too.
func TestCreditVictimNotMarked(t *testing.T) {
	run := func(markVictims bool) (victimCE, incastCE int, unmarked int64) {
		h := newHarness(t, 3)
		var hs []fabric.NodeID
		for i := 0; i < 11; i++ {
			hs = append(hs, h.node(fmt.Sprintf("h%d", i), fabric.Host))
		}
		s0, s1 := h.node("s0", fabric.Switch), h.node("s1", fabric.Switch)
		r, d := 400*sim.Gbps, 100*sim.Nanosecond
		sw := bigQ
		sw.ECN = fabric.ECNConfig{Enabled: true, Kmin: 16 << 10, Kmax: 80 << 10, Pmax: 0.1}
		for _, i := range []int{0, 1, 2, 3, 9} {
			h.link(hs[i], s0, r/4, d, bigQ, sw) // 100G: s0's uplink alone is not oversubscribed
		}
		for _, i := range []int{4, 5, 6, 7, 8, 10} {
			h.link(hs[i], s1, r, d, bigQ, sw)
		}
		h.link(s0, s1, r, d, sw, sw) // s0.p5 - s1.p6
		h.n.Nodes[s0].Routes = fabric.RouteTable{Up: []uint16{5}}
		h.n.Nodes[s1].Routes = fabric.RouteTable{Entries: []fabric.RouteEntry{
			{HostLo: 8, HostHi: 9, Ports: []uint16{4}}, {HostLo: 10, HostHi: 11, Ports: []uint16{5}}}}
		if err := h.n.SetCredits(fabric.CreditConfig{Enabled: true, BufferPerVL: 32 << 10, MarkVictims: markVictims}); err != nil {
			t.Fatal(err)
		}
		for _, i := range []int{0, 1, 2, 4, 5, 6, 7} {
			h.sendN(0, 500, pkt{src: int32(i), dst: 8, flags: fabric.ECT})
		}
		h.sendN(0, 100, pkt{src: 9, dst: 10, flow: 1, flags: fabric.ECT})
		h.run(sim.MaxTime)
		h.audit()
		if len(h.got) != 7*500+100 {
			t.Fatalf("mark victims %v: delivered %d of %d", markVictims, len(h.got), 7*500+100)
		}
		for _, a := range h.got {
			if a.flags&fabric.CE != 0 {
				if a.flow == 1 {
					victimCE++
				} else {
					incastCE++
				}
			}
		}
		return victimCE, incastCE, h.n.CreditStats(portID(h, "s0.p5"), h.s.Now()).VictimUnmarked
	}
	v, in, un := run(false)
	t.Logf("exemption: victim CE %d of 100, incast CE %d of 3500, %d left unmarked at s0's uplink", v, in, un)
	if v > 5 || in == 0 || un == 0 {
		t.Errorf("exemption: victim CE %d (want <= 5), incast CE %d (want > 0: the root marks), unmarked at the blocked uplink %d (want > 0)", v, in, un)
	}
	mv, mi, mun := run(true)
	t.Logf("victims mark too: victim CE %d of 100, incast CE %d", mv, mi)
	if mv < 10*max(v, 1) || mun != 0 {
		t.Errorf("victims mark too: victim CE %d (exemption %d; want >= 10x: the blocked uplink's queue is deep), %d counted unmarked (want 0)", mv, v, mun)
	}
}
