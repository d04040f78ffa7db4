package fabric_test

import (
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// BenchmarkForward: 4 KiB packets source-routed host -> s0 -> s1 -> s2 -> host. One op is one
// packet end to end: NewPacket, Send and its eight events (a serialisation and an arrival per
// link). A closed loop keeps 64 packets in flight, each delivery sending the next, so the
// event queue and the free list are in steady state; both are warmed before timing, and
// allocs/op must be 0. MB/s is simulated bytes delivered per wall second.
func BenchmarkForward(b *testing.B) { benchForward(b, false, false, false, "") }

// BenchmarkForwardCredits is BenchmarkForward with InfiniBand credit flow control on every
// link (fabric.SetCredits, 128 KiB per VL): each hop charges and frees credits and sends a
// flow-control packet; allocs/op must still be 0.
func BenchmarkForwardCredits(b *testing.B) { benchForward(b, false, false, true, "") }

// BenchmarkForwardECMP is BenchmarkForward with no source route: every switch hashes each
// packet's 5-tuple and entropy over a group of 4 parallel links.
func BenchmarkForwardECMP(b *testing.B) { benchForward(b, true, false, false, "") }

// BenchmarkForwardFaults is BenchmarkForward with every link lossy: a bit error rate so low
// (1e-18: 3e-14 per packet) that no packet is lost, but each transmission computes its loss
// probability, scans an entropy filter and takes a draw, so this prices the loss path.
func BenchmarkForwardFaults(b *testing.B) { benchForward(b, false, true, false, "") }

// BenchmarkForwardVOQ and BenchmarkForwardSharedIngress: BenchmarkForward through the
// input-buffered switch models (voq.go); 0 allocs/op like the others.
func BenchmarkForwardVOQ(b *testing.B) { benchForward(b, false, false, false, fabric.SwitchVOQ) }
func BenchmarkForwardSharedIngress(b *testing.B) {
	benchForward(b, false, false, false, fabric.SwitchSharedIngress)
}

func benchForward(b *testing.B, ecmp, faults, credits bool, model string) {
	const window = 64
	k := 1
	if ecmp {
		k = 4
	}
	h := newLine(b, 1, lineOpts{parallel: k, ecmp: ecmp, delay: testDelay})
	net, s := h.n, h.s
	route := lineRoute(k, 0, 0)
	if credits {
		if err := net.SetCredits(fabric.CreditConfig{Enabled: true}); err != nil {
			b.Fatal(err)
		}
	}
	if model != "" {
		if err := net.SetSwitch(fabric.SwitchConfig{Kind: model}); err != nil {
			b.Fatal(err)
		}
	}
	if faults {
		for i := range net.Ports {
			if err := net.SetBER(fabric.PortID(i), 1e-18); err != nil {
				b.Fatal(err)
			}
			if err := net.SetEntropyLoss(fabric.PortID(i), 1<<31, 1); err != nil {
				b.Fatal(err)
			}
		}
	}
	sent, delivered, target := 0, 0, 0
	send := func(now sim.Time) {
		p := net.NewPacket()
		p.Dst, p.Size, p.DstPort = 1, mtu, 4791
		if ecmp {
			p.SrcPort, p.Entropy = uint16(sent), uint32(sent)
		} else {
			p.SetRoute(route)
		}
		sent++
		if err := net.Send(now, 0, 0, p); err != nil {
			b.Fatal(err)
		}
	}
	net.SetReceiver(fabric.ProtoRaw, func(now sim.Time, _ *fabric.Packet) {
		delivered++
		if sent < target {
			send(now)
		}
	})
	kick := s.Register("bench.kick", func(now sim.Time, _ int32, _ uint64) {
		for sent < target && sent < window {
			send(now)
		}
	})
	s.Grow(1024)
	runTo := func(n int) {
		sent, delivered, target = 0, 0, n
		s.At(s.Now(), kick, 0, 0)
		if err := s.Run(sim.MaxTime); err != nil {
			b.Fatal(err)
		}
		if delivered != n {
			b.Fatalf("delivered %d of %d", delivered, n)
		}
	}
	runTo(20 * window) // warm the free list and the event queue

	ev0 := s.Events()
	b.SetBytes(mtu)
	b.ReportAllocs()
	b.ResetTimer()
	runTo(b.N)
	b.StopTimer()
	ev := float64(s.Events() - ev0)
	b.ReportMetric(ev/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(ev/float64(b.N), "events/op")
	if err := net.Audit(); err != nil {
		b.Fatal(err)
	}
}
