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

func (h *keyHeap) len() int { return len(h.e) }

// push adds k. O(log n), O(1) when k is not earlier than its parent (a later completion).
func (h *keyHeap) push(k kent) {
	h.e = append(h.e, k)
	i := len(h.e) - 1
	for i > 0 {
		p := (i - 1) / 4
		if h.e[p].at <= k.at {
			break
		}
		h.e[i] = h.e[p]
		i = p
	}
	h.e[i] = k
}

// pop removes the least entry of the non-empty heap.
func (h *keyHeap) pop() {
	k := len(h.e) - 1
	last := h.e[k]
	h.e = h.e[:k]
	if k > 0 {
		h.e[0] = last
		h.down(0)
	}
}

func (h *keyHeap) down(i int) {
	e := h.e
	n := len(e)
	x := e[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m, mk := c, e[c].at
		for j := c + 1; j < min(c+4, n); j++ {
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

// heapify restores the heap order in O(n) (Floyd).
func (h *keyHeap) heapify() {
	if len(h.e) < 2 {
		return
	}
	for i := (len(h.e) - 2) / 4; i >= 0; i-- {
		h.down(i)
	}
}

// filter keeps the entries keep accepts and restores the heap order, in O(n).
func (h *keyHeap) filter(keep func(k kent) bool) {
	j := 0
	for _, k := range h.e {
		if keep(k) {
			h.e[j] = k
			j++
		}
	}
	h.e = h.e[:j]
	h.heapify()
}

// wideHeap is an 8-ary keyHeap (a node's eight children in two adjacent cache lines; a
// third fewer levels than 4-ary), for the drain heap: only its least key is ever read
// (Net.drainTop), never the order of equal keys, and most of its pops drop stale entries,
// each a walk down the heap, where a level costs a cache miss.
type wideHeap struct{ e []kent }

func (h *wideHeap) len() int { return len(h.e) }

// push adds k. O(log n), O(1) when k is not earlier than its parent.
func (h *wideHeap) push(k kent) {
	h.e = append(h.e, k)
	i := len(h.e) - 1
	for i > 0 {
		p := (i - 1) / 8
		if h.e[p].at <= k.at {
			break
		}
		h.e[i] = h.e[p]
		i = p
	}
	h.e[i] = k
}

// pop removes the least entry of the non-empty heap.
func (h *wideHeap) pop() {
	k := len(h.e) - 1
	last := h.e[k]
	h.e = h.e[:k]
	if k > 0 {
		h.e[0] = last
		h.down(0)
	}
}

func (h *wideHeap) down(i int) {
	e := h.e
	n := len(e)
	x := e[i]
	for {
		c := 8*i + 1
		if c >= n {
			break
		}
		m, mk := c, e[c].at
		for j := c + 1; j < min(c+8, n); j++ {
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

// heapify restores the heap order in O(n) (Floyd).
func (h *wideHeap) heapify() {
	if len(h.e) < 2 {
		return
	}
	for i := (len(h.e) - 2) / 8; i >= 0; i-- {
		h.down(i)
	}
}

// filter keeps the entries keep accepts and restores the heap order, in O(n).
func (h *wideHeap) filter(keep func(k kent) bool) {
	j := 0
	for _, k := range h.e {
		if keep(k) {
			h.e[j] = k
			j++
		}
	}
	h.e = h.e[:j]
	h.heapify()
}
