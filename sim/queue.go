package sim

// Event is one pending action: at time At, call the handler registered for Kind with Obj and
// Arg. Events are plain values stored in the queue's slice; nothing is boxed or allocated per
// event. Obj is usually an index into the owner's slice of objects (a port, a QP), Arg a small
// payload (a generation counter, a packet index).
type Event struct {
	At   Time
	key  uint64 // seeded tiebreak among events with the same At; see Sim.At
	Arg  uint64
	Obj  int32
	Kind Kind
}

// before is the queue order: earlier time first, then the seeded key. Two events never compare
// equal in practice (64-bit random keys); if they did, the heap's deterministic operations still
// give the same order on every run with the same seed.
func (a *Event) before(b *Event) bool {
	return a.At < b.At || (a.At == b.At && a.key < b.key)
}

// eventQueue is a 4-ary min-heap of Events on a slice, ordered by (At, key). A 4-ary heap does
// half the levels of a binary heap and keeps a node's children on one or two cache lines, which
// is what dominates at a million pending events. Push and pop are O(log n) and allocate only
// when the slice grows.
type eventQueue struct {
	h []Event
}

func (q *eventQueue) len() int { return len(q.h) }

func (q *eventQueue) push(ev Event) {
	q.h = append(q.h, ev)
	// Sift up.
	h := q.h
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) >> 2
		if !ev.before(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = ev
}

// peek returns the earliest event; the queue must not be empty.
func (q *eventQueue) peek() *Event { return &q.h[0] }

// pop removes and returns the earliest event; the queue must not be empty.
//
// Bottom-up (Floyd) deletion: the hole left at the root walks down to a leaf along the
// smallest children, then the last element sifts up from there. The last element usually
// belongs near the bottom, so this skips the comparison against it at every level that the
// classic top-down sift pays.
func (q *eventQueue) pop() Event {
	h := q.h
	top := h[0]
	n := len(h) - 1
	last := h[n]
	q.h = h[:n]
	if n == 0 {
		return top
	}
	h = q.h
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		end := c + 4
		if end > n {
			end = n
		}
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
	return top
}
