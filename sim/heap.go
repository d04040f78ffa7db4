package sim

// A 4-ary min-heap of Events on a plain slice, ordered by (At, key). The event queue uses it for
// the events beyond its calendar's span and for a front bucket into which insertions have moved
// too many events to keep it sorted.
//
// A 4-ary heap does half the levels of a binary heap and keeps a node's children on one or two
// cache lines, which is what dominates at a million elements. Push and pop are O(log n) and
// allocate only when the slice grows.

// heapPush adds ev to the heap h and returns the grown slice.
func heapPush(h []Event, ev Event) []Event {
	h = grow1(h)
	// Sift up.
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) >> 2
		if !ev.before(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i].set(&ev)
	return h
}

// heapDrop removes the earliest event, h[0], from the non-empty heap h and returns the shrunk
// slice. Callers read h[0] first if they need it.
//
// Bottom-up (Floyd) deletion: the hole left at the root walks down to a leaf along the
// smallest children, then the last element sifts up from there. The last element usually
// belongs near the bottom, so this skips the comparison against it at every level that the
// classic top-down sift pays.
func heapDrop(h []Event) []Event {
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	if n == 0 {
		return h
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		end := min(c+4, n)
		for j := c + 1; j < end; j++ {
			if h[j].before(&h[m]) {
				m = j
			}
		}
		h[i] = h[m]
		i = m
	}
	for i > 0 {
		p := (i - 1) >> 2
		if !last.before(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = last
	return h
}

// heapify orders h as a heap in O(len(h)) (Floyd's construction: sift down every inner node,
// last first).
func heapify(h []Event) {
	n := len(h)
	for i := (n - 2) >> 2; i >= 0; i-- {
		ev := h[i]
		j := i
		for {
			c := 4*j + 1
			if c >= n {
				break
			}
			m := c
			end := min(c+4, n)
			for k := c + 1; k < end; k++ {
				if h[k].before(&h[m]) {
					m = k
				}
			}
			if !h[m].before(&ev) {
				break
			}
			h[j] = h[m]
			j = m
		}
		h[j] = ev
	}
}
