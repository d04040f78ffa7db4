package flow

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestKeyHeap checks the completion heap against a sorted list after every operation of
// random sequences of pushes, pops and filters with many equal keys: the top is the least
// key, pops come out in key order and filter keeps exactly what it is told to.
func TestKeyHeap(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var h keyHeap
		var want []sim.Time
		for op := range 400 {
			switch k := rng.IntN(10); {
			case k < 6:
				at := sim.Time(rng.IntN(30))
				h.push(kent{at: at, slot: int32(op)})
				want = append(want, at)
			case k < 9:
				if len(want) == 0 {
					continue
				}
				slices.Sort(want)
				if h.e[0].at != want[0] {
					t.Fatalf("seed %d op %d: top %v, want %v", seed, op, h.e[0].at, want[0])
				}
				h.pop()
				want = want[1:]
			default:
				odd := func(k kent) bool { return k.at%2 == 1 }
				h.filter(odd)
				want = slices.DeleteFunc(want, func(at sim.Time) bool { return at%2 == 0 })
			}
			if h.len() != len(want) {
				t.Fatalf("seed %d op %d: %d entries, want %d", seed, op, h.len(), len(want))
			}
			for i := 1; i < h.len(); i++ {
				if h.e[(i-1)/4].at > h.e[i].at {
					t.Fatalf("seed %d op %d: heap order broken at %d", seed, op, i)
				}
			}
		}
	}
}
