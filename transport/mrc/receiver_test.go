package mrc

import (
	"math/rand/v2"
	"testing"
)

// Every placed PSN is acknowledged by some answer (cumulative PSN or bitmap with its offset),
// whatever the arrival order and even with a PSN that never arrives holding the cumulative
// point back: the property the sender's window relies on (a placed but unacknowledged packet
// stays "in flight" forever). Checked against a naive set, for several AckEvery values.
func TestReceiverAcknowledgesEveryPlacedPSN(t *testing.T) {
	for _, every := range []int{1, 4, 16} {
		for seed := uint64(1); seed <= 20; seed++ {
			cfg := Config{AckEvery: every}.WithDefaults()
			r := NewReceiver(cfg, 0)
			rng := rand.New(rand.NewPCG(seed, 7))
			const n = 3000
			missing := uint32(rng.IntN(n))
			acked := map[uint32]bool{}
			collect := func() {
				for _, a := range r.Out() {
					for q := uint32(0); q < a.CumPSN; q++ {
						acked[q] = true
					}
					for i := uint32(0); i < BitmapPSNs; i++ {
						if a.Bitmap&(1<<i) != 0 {
							acked[a.BitmapBase+i] = true
						}
					}
				}
				r.ClearOut()
			}
			// Arrival order: in order with random local reordering up to 200 PSNs.
			order := make([]int, n)
			for i := range order {
				order[i] = i
			}
			for i := range order {
				j := i + rng.IntN(min(200, n-i))
				order[i], order[j] = order[j], order[i]
			}
			for _, p := range order {
				if uint32(p) == missing {
					continue
				}
				h := Header{Kind: Data, PSN: uint32(p), Len: 4096, LastPSN: n - 1}
				r.OnData(0, &h, false, false, false)
				collect()
			}
			r.OnTimer(r.Deadline())
			collect()
			for p := uint32(0); p < n; p++ {
				if p != missing && !acked[p] {
					t.Fatalf("ack_every %d seed %d: PSN %d placed but never acknowledged (cum %d, missing %d)", every, seed, p, r.CumPSN(), missing)
				}
			}
			if acked[missing] {
				t.Fatalf("ack_every %d seed %d: the missing PSN %d was acknowledged", every, seed, missing)
			}
		}
	}
}
