package roce

import (
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// perPacket is one packet's worth of engine work in steady state: the sender's timer sends a
// data packet, the receiver places it and answers, the sender takes the answers. mark puts a
// CE mark on the packet (CNP path); drop loses it (NAK and go-back-N path).
type perPacket struct {
	s   *Sender
	r   *Receiver
	now sim.Time
}

func newPerPacket(tb testing.TB, cfg Config) *perPacket {
	tb.Helper()
	c := Conn{QP: 1, LineRate: 400 * sim.Gbps}
	s, err := NewSender(cfg, c)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := NewReceiver(cfg, c)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := s.Post(0, 1<<40); err != nil {
		tb.Fatal(err)
	}
	return &perPacket{s: s, r: r}
}

func (p *perPacket) step(mark, drop bool) {
	p.now = max(p.now, p.s.Deadline())
	p.s.OnTimer(p.now)
	out := p.s.Out()
	for i := range out {
		if !drop {
			p.r.OnData(p.now, &out[i], mark)
		}
	}
	p.s.ClearOut()
	in := p.r.Out()
	for i := range in {
		switch in[i].Kind {
		case Ack:
			p.s.OnAck(p.now, &in[i])
		case Nak:
			p.s.OnNak(p.now, &in[i])
		case CNP:
			p.s.OnCNP(p.now, &in[i])
		}
	}
	p.r.ClearOut()
	p.s.ClearOut() // packets a NAK sent at once are not delivered: the next step resends
}

// TestPerPacketAllocs: the per-packet path allocates nothing, including CE marks (CNPs, DCQCN
// cuts and increases) and losses (NAKs, go-back-N).
func TestPerPacketAllocs(t *testing.T) {
	p := newPerPacket(t, Config{})
	for i := 0; i < 100; i++ { // warm the outboxes
		p.step(i%10 == 0, i%17 == 3)
	}
	i := 0
	n := testing.AllocsPerRun(5000, func() {
		i++
		p.step(i%10 == 0, i%17 == 3)
	})
	if n != 0 {
		t.Fatalf("%v allocations per packet, want 0", n)
	}
	if p.s.Stats.GoBackN == 0 || p.s.Stats.CNPs == 0 || p.s.DCQCN().Stats.FastRecoveries == 0 {
		t.Fatalf("the loop did not exercise NAKs, CNPs and increases: %+v %+v", p.s.Stats, p.s.DCQCN().Stats)
	}
}

// BenchmarkPerPacket measures sender + receiver processing per data packet (send, place, ACK)
// at line rate; run with -benchmem: 0 allocs/op.
func BenchmarkPerPacket(b *testing.B) {
	p := newPerPacket(b, Config{})
	b.ReportAllocs()
	for b.Loop() {
		p.step(false, false)
	}
}

// BenchmarkPerPacketMarkedLossy: the same with a CE mark every 10th packet and a loss every
// 97th (CNPs, DCQCN, NAKs and resends on the path).
func BenchmarkPerPacketMarkedLossy(b *testing.B) {
	p := newPerPacket(b, Config{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		p.step(i%10 == 0, i%97 == 0)
	}
}

// BenchmarkLoopback runs whole 4 MiB transfers over the test network with 1% loss and ECN
// marking, reporting data packets per second of wall time (harness included).
func BenchmarkLoopback(b *testing.B) {
	var pkts int64
	for b.Loop() {
		n := newLoopNet(b, loopConfig{cfg: Config{RTO: 50 * us}, seed: 1, dropData: 0.01, dropBack: 0.01,
			linkRate: 100 * sim.Gbps, markAbove: 30_000, line: 200 * sim.Gbps})
		n.post(4 << 20)
		n.run()
		pkts += n.s.Stats.DataPackets
	}
	b.ReportMetric(float64(pkts)/b.Elapsed().Seconds(), "pkts/s")
}
