package flow

import "github.com/lockstepsim/lockstep/sim"

// timeHeap is an indexed 4-ary min-heap of flow slots keyed by an instant: the Net's
// completion heaps (net.go, Net.hDrain and Net.hSent). Every active flow has an entry; its key is sim.MaxTime while it cannot complete. pos gives each
// slot's index in the heap (-1 none), so a key changes in O(log n).
type timeHeap struct {
	at   []sim.Time // by heap index
	slot []int32    // by heap index
	pos  []int32    // by slot
}

// grow adds a slot (commitFlow).
func (h *timeHeap) grow() { h.pos = append(h.pos, -1) }

func (h *timeHeap) len() int { return len(h.at) }

// top returns the least key and its slot; MaxTime and -1 when the heap is empty.
func (h *timeHeap) top() (sim.Time, int32) {
	if len(h.at) == 0 {
		return sim.MaxTime, -1
	}
	return h.at[0], h.slot[0]
}

// The heap is 4-ary (half the levels of a binary heap; a node's four children's keys share a
// cache line) and moves entries into the hole rather than swapping. Equal keys are left in
// the order the operations put them in (fixed by the inputs).

func (h *timeHeap) up(i int) {
	at, s := h.at[i], h.slot[i]
	for i > 0 {
		p := (i - 1) / 4
		if h.at[p] <= at {
			break
		}
		h.at[i], h.slot[i] = h.at[p], h.slot[p]
		h.pos[h.slot[i]] = int32(i)
		i = p
	}
	h.at[i], h.slot[i] = at, s
	h.pos[s] = int32(i)
}

func (h *timeHeap) down(i int) {
	n := len(h.at)
	at, s := h.at[i], h.slot[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m, mk := c, h.at[c]
		for j := c + 1; j < min(c+4, n); j++ {
			if h.at[j] < mk {
				m, mk = j, h.at[j]
			}
		}
		if mk >= at {
			break
		}
		h.at[i], h.slot[i] = mk, h.slot[m]
		h.pos[h.slot[i]] = int32(i)
		i = m
	}
	h.at[i], h.slot[i] = at, s
	h.pos[s] = int32(i)
}

// set gives slot the key at, adding it when absent.
func (h *timeHeap) set(slot int32, at sim.Time) {
	p := int(h.pos[slot])
	if p < 0 {
		p = len(h.at)
		h.at = append(h.at, at)
		h.slot = append(h.slot, slot)
		h.pos[slot] = int32(p)
		h.up(p)
		return
	}
	old := h.at[p]
	h.at[p] = at
	switch {
	case at < old:
		h.up(p)
	case at > old:
		h.down(p)
	}
}

// setLazy gives slot (present) the key at without restoring the heap order: call heapify
// after a batch of them.
func (h *timeHeap) setLazy(slot int32, at sim.Time) { h.at[h.pos[slot]] = at }

// heapify restores the heap order in O(n) (Floyd).
func (h *timeHeap) heapify() {
	if len(h.at) < 2 {
		return
	}
	for i := (len(h.at) - 2) / 4; i >= 0; i-- {
		h.down(i)
	}
}

// remove drops slot's entry, if any.
func (h *timeHeap) remove(slot int32) {
	p := int(h.pos[slot])
	if p < 0 {
		return
	}
	h.pos[slot] = -1
	k := len(h.at) - 1
	if p != k {
		h.at[p], h.slot[p] = h.at[k], h.slot[k]
		h.pos[h.slot[p]] = int32(p)
	}
	h.at, h.slot = h.at[:k], h.slot[:k]
	if p != k {
		h.down(p)
		h.up(p)
	}
}
