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
	var h keyHeap
	checkHeap(t, 4, func() { h = keyHeap{} }, h.push, h.pop, h.filter, func() []kent { return h.e })
}

// TestWideHeap is TestKeyHeap for the 8-ary drain heap.
func TestWideHeap(t *testing.T) {
	var h wideHeap
	checkHeap(t, 8, func() { h = wideHeap{} }, h.push, h.pop, h.filter, func() []kent { return h.e })
}

// checkHeap runs TestKeyHeap's sequences on a heap of the given arity through its methods.
func checkHeap(t *testing.T, arity int, reset func(), push func(kent), pop func(), filter func(func(kent) bool), entries func() []kent) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		reset()
		var want []sim.Time
		for op := range 400 {
			switch k := rng.IntN(10); {
			case k < 6:
				at := sim.Time(rng.IntN(30))
				push(kent{at: at, slot: int32(op)})
				want = append(want, at)
			case k < 9:
				if len(want) == 0 {
					continue
				}
				slices.Sort(want)
				if e := entries(); e[0].at != want[0] {
					t.Fatalf("seed %d op %d: top %v, want %v", seed, op, e[0].at, want[0])
				}
				pop()
				want = want[1:]
			default:
				odd := func(k kent) bool { return k.at%2 == 1 }
				filter(odd)
				want = slices.DeleteFunc(want, func(at sim.Time) bool { return at%2 == 0 })
			}
			e := entries()
			if len(e) != len(want) {
				t.Fatalf("seed %d op %d: %d entries, want %d", seed, op, len(e), len(want))
			}
			for i := 1; i < len(e); i++ {
				if e[(i-1)/arity].at > e[i].at {
					t.Fatalf("seed %d op %d: heap order broken at %d", seed, op, i)
				}
			}
		}
	}
}

// The start and delivery heaps pop in (at, id) order, whatever the pushes' order and ties.
func TestPendHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 300; trial++ {
		var h []pend
		var all []pend
		ids := rng.Perm(2000) // unique ids, pushed in no particular order
		for op := 0; op < 2000; op++ {
			if len(h) > 0 && rng.IntN(3) == 0 {
				top := h[0]
				h = popPend(h)
				k := slices.IndexFunc(all, func(p pend) bool { return p.id == top.id })
				for _, p := range all {
					if pendLess(&p, &top) {
						t.Fatalf("trial %d: popped (%v, %d) before (%v, %d)", trial, top.at, top.id, p.at, p.id)
					}
				}
				all = slices.Delete(all, k, k+1)
				continue
			}
			p := pend{at: sim.Time(rng.IntN(50)), id: FlowID(ids[op]), slot: int32(op)}
			h = pushPend(h, p)
			all = append(all, p)
		}
	}
}
