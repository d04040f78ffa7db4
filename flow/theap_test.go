package flow

import (
	"math/rand/v2"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestTimeHeap checks the completion heap against a plain map after every operation of
// random sequences of sets, lazy sets with heapify and removes: the top is the least key,
// every slot's position is right, and removed slots are gone.
func TestTimeHeap(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		const slots = 40
		var h timeHeap
		for range slots {
			h.grow()
		}
		want := map[int32]sim.Time{}
		for op := range 300 {
			s := int32(rng.IntN(slots))
			at := sim.Time(rng.IntN(20)) // many ties
			switch k := rng.IntN(10); {
			case k < 5:
				h.set(s, at)
				want[s] = at
			case k < 7:
				h.remove(s)
				delete(want, s)
			default:
				for q := range want {
					if rng.IntN(2) == 0 {
						v := sim.Time(rng.IntN(20))
						h.setLazy(q, v)
						want[q] = v
					}
				}
				h.heapify()
			}
			if h.len() != len(want) {
				t.Fatalf("seed %d op %d: %d entries, want %d", seed, op, h.len(), len(want))
			}
			least := sim.MaxTime
			for q, v := range want {
				least = min(least, v)
				if p := h.pos[q]; p < 0 || h.slot[p] != q || h.at[p] != v {
					t.Fatalf("seed %d op %d: slot %d at position %d, want key %v", seed, op, q, p, v)
				}
			}
			if top, _ := h.top(); top != least {
				t.Fatalf("seed %d op %d: top %v, want %v", seed, op, top, least)
			}
			for i := 1; i < h.len(); i++ {
				if h.at[(i-1)/4] > h.at[i] {
					t.Fatalf("seed %d op %d: heap order broken at %d", seed, op, i)
				}
			}
		}
	}
}
