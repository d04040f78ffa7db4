package fabric_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// TestCreditRateClosedForm checks fabric.CreditRate, the closed form the scenario's
// automatic run.duration reads through the IB transport (transport.HopRateLimiter), against
// one simulated credit link [IBTA vol 1 §7.9]: within 2% over 100G..800G, 100 ns..2 us
// delays and buffers that are and are not whole packets (6 KiB: one 4 KiB packet; 12 KiB:
// three), line rate when the buffer covers the round trip; 0 for a buffer below one packet.
func TestCreditRateClosedForm(t *testing.T) {
	for _, rate := range []sim.Rate{100 * sim.Gbps, 800 * sim.Gbps} {
		for _, delay := range []sim.Time{100 * sim.Nanosecond, 2 * sim.Microsecond} {
			for _, buf := range []sim.Size{6 << 10, 12 << 10, 64 << 10, 1 << 20} {
				t.Run(fmt.Sprintf("%v/%v/%v", rate, delay, buf), func(t *testing.T) {
					h := newHarness(t, 3)
					a, b := h.node("h0", fabric.Host), h.node("h1", fabric.Host)
					h.link(a, b, rate, delay, bigQ, bigQ)
					if err := h.n.SetCredits(fabric.CreditConfig{Enabled: true, BufferPerVL: buf}); err != nil {
						t.Fatal(err)
					}
					const n = 2000
					h.sendN(0, n, pkt{src: 0, dst: 1, class: 0})
					h.run(sim.MaxTime)
					if len(h.got) != n {
						t.Fatalf("delivered %d of %d", len(h.got), n)
					}
					from := n / 4
					got := float64(n-1-from) * mtu * 8 / (h.got[n-1].at - h.got[from].at).Seconds()
					want := float64(fabric.CreditRate(rate, delay, buf, mtu))
					if math.Abs(got-want)/want > 0.02 {
						t.Fatalf("simulated %.2f Gb/s, CreditRate %.2f Gb/s", got/1e9, want/1e9)
					}
				})
			}
		}
	}
	if r := fabric.CreditRate(400*sim.Gbps, sim.Microsecond, 4<<10, 4122); r != 0 {
		t.Errorf("a 4 KiB buffer for a 4,122-byte packet: %v, want 0 (it can never be sent)", r)
	}
	if r := fabric.CreditRate(400*sim.Gbps, sim.Microsecond, 0, 4122); r != 400*sim.Gbps {
		t.Errorf("no buffer given: %v, want the line rate", r)
	}
}
