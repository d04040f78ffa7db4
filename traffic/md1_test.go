package traffic

import (
	"fmt"
	"math"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// md1 runs Poisson arrivals of fixed-size packets at load rho into host 0's NIC port (the one
// queue: the switch forwards at the same rate, so nothing waits there) until about packets have
// left, and returns the time-averaged packets waiting at the NIC (excluding the one on the
// wire), the packets' mean wait there in picoseconds (the raw traffic's host wait) and the
// packets sent. Every packet's network latency is the unloaded one: the switch never queues.
func md1(t *testing.T, rho float64, packets int64, seed uint64) (lq, wq float64, sent int64) {
	t.Helper()
	const size = 4160
	rate := 100 * sim.Gbps
	delay := 100 * sim.Nanosecond
	service := rate.TxTime(size)
	// The unloaded latency: one packet alone, both hops' serialisation and propagation.
	s0, net0 := star(t, 2, rate, delay)
	r0, err := NewRaw(net0, []Flow{{Src: 0, Dst: 1, Rate: rate, PacketSize: size, Stop: 1}})
	if err != nil {
		t.Fatal(err)
	}
	r0.Start()
	if err := s0.Run(sim.Second); err != nil {
		t.Fatal(err)
	}
	base := r0.Stats[0].LatencySum
	if want := 2*service + 2*delay; base != want || r0.Stats[0].RecvPackets != 1 {
		t.Fatalf("lone packet latency %v (%d packets), want 2 x (%v + %v)", base, r0.Stats[0].RecvPackets, service, delay)
	}

	s := sim.New(seed)
	_, net := starOn(t, s, 2, rate, delay)
	stop := sim.Time(float64(packets) * float64(service) / rho)
	r, err := NewRaw(net, []Flow{{Src: 0, Dst: 1, Rate: sim.Rate(rho * float64(rate)), PacketSize: size, Stop: stop, Arrivals: Poisson}})
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	if err := s.Run(stop); err != nil {
		t.Fatal(err)
	}
	nic := &net.Ports[net.Nodes[0].Ports[0]]
	lq = nic.MeanDepth(stop) / size
	if err := s.Drain(stop + sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := net.Audit(); err != nil {
		t.Fatal(err)
	}
	st := r.Totals()
	if st.RecvPackets != st.SentPackets {
		t.Fatalf("delivered %d of %d packets", st.RecvPackets, st.SentPackets)
	}
	if st.LatencySum != sim.Time(st.RecvPackets)*base {
		t.Errorf("mean network latency %v, want the unloaded %v", st.LatencySum/sim.Time(st.RecvPackets), base)
	}
	wq = float64(st.HostWaitSum) / float64(st.RecvPackets)
	return lq, wq, st.SentPackets
}

// Poisson arrivals of fixed-size packets at one link form the M/D/1 queue (Pollaczek-Khinchine
// with deterministic service): Lq = rho^2 / (2 (1 - rho)) packets waiting on average, and
// Wq = rho / (2 mu (1 - rho)) the mean wait, mu the service rate (packets/s). The queue is the
// fabric's time-weighted depth at the NIC, the wait the raw traffic's mean host wait (send to
// the NIC's transmit timestamp); Little's law ties them (Lq = lambda Wq). The tolerance is 2%,
// as the acceptance test asks, and 3% at 0.9, where the queue's relaxation time (about
// 1 / (1 - sqrt rho)^2 service times) is longest. Measured with seed 1: within 0.4% at every
// load; at 0.8 six seeds of 4 M packets gave -0.53% .. +0.01%.
func TestMD1(t *testing.T) {
	service := float64((100 * sim.Gbps).TxTime(4160)) // ps
	for _, c := range []struct {
		rho     float64
		packets int64
		tol     float64
	}{
		{0.3, 500000, 0.02},
		{0.5, 500000, 0.02},
		{0.8, 2000000, 0.02},
		{0.9, 2000000, 0.03},
	} {
		t.Run(fmt.Sprint(c.rho), func(t *testing.T) {
			lq, wq, sent := md1(t, c.rho, c.packets, 1)
			wantLq := c.rho * c.rho / (2 * (1 - c.rho))
			wantWq := c.rho * service / (2 * (1 - c.rho))
			t.Logf("rho %.1f: %d packets, Lq %.4f (M/D/1 %.4f, %+.2f%%), Wq %.1f ps (M/D/1 %.1f, %+.2f%%)",
				c.rho, sent, lq, wantLq, 100*(lq/wantLq-1), wq, wantWq, 100*(wq/wantWq-1))
			if math.Abs(lq/wantLq-1) > c.tol {
				t.Errorf("mean queue %.4f packets, M/D/1 %.4f: off by more than %.0f%%", lq, wantLq, 100*c.tol)
			}
			if math.Abs(wq/wantWq-1) > c.tol {
				t.Errorf("mean wait %.1f ps, M/D/1 %.1f: off by more than %.0f%%", wq, wantWq, 100*c.tol)
			}
			// Little: the packets' mean wait and the queue's time average agree whatever the model.
			lambda := c.rho / service
			if little := lambda * wq; math.Abs(little/lq-1) > 0.01 {
				t.Errorf("Little's law: lambda Wq = %.4f, Lq = %.4f", little, lq)
			}
		})
	}
}
