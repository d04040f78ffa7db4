package fabric_test

import (
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// TestCreditBufferScaleByRate: with ScaleByRate a port's buffer per VL is the configured one
// up to 400 Gb/s and grows with the rate beyond it (800G: twice, 1.6T: four times); without
// it every port has the configured buffer.
func TestCreditBufferScaleByRate(t *testing.T) {
	for _, scale := range []bool{false, true} {
		h := newHarness(t, 1)
		a, b := h.node("a", fabric.Switch), h.node("b", fabric.Switch)
		rates := []sim.Rate{100 * sim.Gbps, 400 * sim.Gbps, 800 * sim.Gbps, 1600 * sim.Gbps}
		for _, r := range rates {
			h.link(a, b, r, sim.Microsecond, bigQ, bigQ)
		}
		if err := h.n.SetCredits(fabric.CreditConfig{Enabled: true, ScaleByRate: scale}); err != nil {
			t.Fatal(err)
		}
		for i, r := range rates {
			want := int64(fabric.DefaultCreditBuffer)
			if scale && r > fabric.CreditBufferRate {
				want *= int64(r / fabric.CreditBufferRate)
			}
			pid := h.n.Nodes[a].Ports[i]
			if got := h.n.CreditStats(pid, 0).BufferBytes; got != want {
				t.Errorf("scale %v, %v: buffer %d B, want %d", scale, r, got, want)
			}
		}
	}
}
