package flow

import "github.com/lockstepsim/lockstep/sim"

// kent is an entry of a completion heap: a flow's key (an instant), its slot and the
// generation of the flow's keys it was pushed with. An entry whose generation is not the
// flow's current one (the flow was rekeyed, or left) is stale and is dropped when it
// surfaces: the heap never looks a slot up to move an entry, so an operation touches only
// the heap's own contiguous entries.
type kent struct {
	at   sim.Time
	slot int32
	gen  uint32
}

// keyHeap is a 4-ary min-heap of kent by at (a node's four children share a cache line;
// half the levels of a binary heap), with lazy deletion (see kent). Equal keys come out in an
// order fixed by the operations (deterministic).
type keyHeap struct{ e []kent }

// wideHeap is an 8-ary keyHeap (a node's eight children in two adjacent cache lines; a
// third fewer levels than 4-ary), for the drain heap: only its least key is ever read
// (Net.drainTop), never the order of equal keys, and most of its pops drop stale entries,
// each a walk down the heap, where a level costs a cache miss.
type wideHeap struct{ e []kent }

// The arities of keyHeap and wideHeap as shifts: a node i's children are i<<lg + 1 ..
// i<<lg + 2^lg, its parent (i-1)>>lg.
const (
	keyHeapLg  = 2
	wideHeapLg = 3
)

func (h *keyHeap) len() int                      { return len(h.e) }
func (h *keyHeap) push(k kent)                   { h.e = dPush(h.e, k, keyHeapLg) }
func (h *keyHeap) pop()                          { h.e = dPop(h.e, keyHeapLg) }
func (h *keyHeap) heapify()                      { dHeapify(h.e, keyHeapLg) }
func (h *keyHeap) filter(keep func(k kent) bool) { h.e = dFilter(h.e, keep, keyHeapLg) }

func (h *wideHeap) len() int                      { return len(h.e) }
func (h *wideHeap) push(k kent)                   { h.e = dPush(h.e, k, wideHeapLg) }
func (h *wideHeap) pop()                          { h.e = dPop(h.e, wideHeapLg) }
func (h *wideHeap) heapify()                      { dHeapify(h.e, wideHeapLg) }
func (h *wideHeap) filter(keep func(k kent) bool) { h.e = dFilter(h.e, keep, wideHeapLg) }

// dPush adds k to the 2^lg-ary heap e. O(log n), O(1) when k is not earlier than its parent
// (a later completion).
func dPush(e []kent, k kent, lg uint) []kent {
	e = append(e, k)
	i := len(e) - 1
	for i > 0 {
		p := (i - 1) >> lg
		if e[p].at <= k.at {
			break
		}
		e[i] = e[p]
		i = p
	}
	e[i] = k
	return e
}

// dPop removes the least entry of the non-empty 2^lg-ary heap e.
func dPop(e []kent, lg uint) []kent {
	k := len(e) - 1
	last := e[k]
	e = e[:k]
	if k > 0 {
		e[0] = last
		dDown(e, 0, lg)
	}
	return e
}

// dDown sifts entry i of the 2^lg-ary heap e down to its place.
func dDown(e []kent, i int, lg uint) {
	n := len(e)
	d := 1 << lg
	x := e[i]
	for {
		c := i<<lg + 1
		if c >= n {
			break
		}
		m, mk := c, e[c].at
		for j := c + 1; j < min(c+d, n); j++ {
			if e[j].at < mk {
				m, mk = j, e[j].at
			}
		}
		if mk >= x.at {
			break
		}
		e[i] = e[m]
		i = m
	}
	e[i] = x
}

// dHeapify restores the heap order of the 2^lg-ary heap e in O(n) (Floyd).
func dHeapify(e []kent, lg uint) {
	if len(e) < 2 {
		return
	}
	for i := (len(e) - 2) >> lg; i >= 0; i-- {
		dDown(e, i, lg)
	}
}

// dFilter keeps the entries of the 2^lg-ary heap e that keep accepts and restores the heap
// order, in O(n).
func dFilter(e []kent, keep func(k kent) bool, lg uint) []kent {
	j := 0
	for _, k := range e {
		if keep(k) {
			e[j] = k
			j++
		}
	}
	e = e[:j]
	dHeapify(e, lg)
	return e
}
