package sim

import "math/bits"

// Event is one pending action: at time At, call the handler registered for Kind with Obj and
// Arg. Events are plain values stored in the queue's slices; nothing is boxed or allocated per
// event. Obj is usually an index into the owner's slice of objects (a port, a QP), Arg a small
// payload (a generation counter, a packet index).
type Event struct {
	At   Time
	key  uint64 // seeded tiebreak among events with the same At; see Sim.At
	Arg  uint64
	Obj  int32
	Kind Kind
}

// set copies *ev into *e field by field. A plain struct copy moves an Event with 16-byte
// loads, and when the Event is a parameter the register ABI has just spilled to the stack with
// 8-byte stores, those loads stall on store forwarding; the queue's hot stores use set.
func (e *Event) set(ev *Event) {
	e.At, e.key, e.Arg, e.Obj, e.Kind = ev.At, ev.key, ev.Arg, ev.Obj, ev.Kind
}

// before is the queue order: earlier time first, then the seeded key. Two events never tie on
// both in practice (Sim draws keys from a bijection of a counter); if they did, Arg, Obj and Kind
// decide, so the order is a function of the pending events alone, never of how the queue
// happens to hold them.
func (a *Event) before(b *Event) bool {
	if a.At != b.At {
		return a.At < b.At
	}
	if a.key != b.key {
		return a.key < b.key
	}
	return a.tieBefore(b)
}

// tieBefore orders events equal in At and key.
func (a *Event) tieBefore(b *Event) bool {
	if a.Arg != b.Arg {
		return a.Arg < b.Arg
	}
	if a.Obj != b.Obj {
		return a.Obj < b.Obj
	}
	return a.Kind < b.Kind
}

// eventQueue is the pending-event set, a calendar queue (R. Brown, "Calendar queues", CACM 31(10),
// 1988) with a heap for the far future. Pops come out in the order of before: (At, key).
//
// Time is cut into buckets of W = 1<<shift ps; bucket b holds the events with At>>shift == b. A
// ring of N buckets covers the window [cur, cur+N) of bucket numbers: pushing into a bucket of
// the window appends to its chain of fixed-size chunks, which come from one arena and are
// recycled last-freed-first, so the memory just read by a pop is the memory the next push
// writes. Events beyond the window wait in h, a 4-ary heap, and move into the ring when the
// window reaches them. The earliest non-empty bucket, the front, is found with a two-level
// bitmap and copied out into fr, where it is sorted in descending order so a pop takes the last
// element: by insertion up to sortMax events, by radix on a key-order proxy beyond (a crowded
// bucket is mostly simultaneous events, which only their random keys order). A push into the
// front is inserted in order (binary search); a front whose insertions have moved more than
// frMoveBudget events per event it holds becomes a heap.
//
// The queue sizes itself (tune): W so that a bucket holds about targetPerBucket events when it
// reaches the front, from the rate at which events pass the front, and N so that the window
// spans a few times the mean look-ahead of the pending events. The packet-level hold model of
// lockstep (tens of thousands of pending events, most due within microseconds) then costs O(1)
// per event with mostly sequential memory access, where a heap pays log4(n) levels of
// unpredictable branches and cache misses. The order never depends on the tuning: W and N
// only decide where an event waits.
//
// Invariants (checked by checkInvariants in the tests):
//   - cur never passes the bucket of the last popped event, so a push at or after Sim.Now lands
//     in the window or beyond it. An event earlier than bucket cur (a caller bug) is filed in
//     bucket cur, where ordering still puts it first.
//   - Every event in ring slot s belongs to the bucket b in [cur, cur+N) with b&(N-1) == s;
//     every event in h belongs to a bucket >= cur+N.
//   - A slot's chunks are all full except the last, so n says how full the last is.
//   - Bit s of bits is set iff slot s holds events; bit w of sum is set iff bits[w] != 0.
//   - When frMode != frNone, fr holds all the events of bucket frB (its slot is empty), fr is
//     non-empty, and no ring bucket before frB holds events.
type eventQueue struct {
	fr     []Event // the front bucket while frMode != frNone; the buffer is reused
	frB    int64   // bucket number of fr
	frMode uint8   // frNone, frSorted or frHeap

	slots  []slot   // slots[b&mask]: the events of bucket b of the window
	arena  []Event  // chunk c is arena[c*chunkLen:(c+1)*chunkLen]
	prev   []int32  // prev[c]: the chunk before c in its slot's chain, or in the free list
	free   int32    // first free chunk, or -1
	bits   []uint64 // one bit per ring slot: non-empty
	sum    []uint64 // one bit per word of bits: non-zero
	shift  uint     // bucket width W = 1<<shift ps
	mask   int64    // N-1; N = len(slots) is a power of two
	cur    int64    // first bucket of the window
	inRing int      // events in the ring, fr included

	h []Event // the events beyond the window: a 4-ary heap

	// Tuning: pops since the last check, the time of the last check, when to check next, and
	// whether the last check found the calendar off its ideal.
	pops    int
	t0      Time
	checkAt int
	offTune bool
	scratch []Event // reused by resize when small

	// Sorting a crowded front bucket (radixSort): the key buffers, the spare event buffer that
	// alternates with fr, and the events frontInsert has moved since the last load.
	rkeys   []uint64
	spare   []Event
	frMoves int
}

// slot is one ring bucket: a chain of chunks, last first.
type slot struct {
	last int32 // the chunk being filled, valid when n > 0
	n    int32 // events in the bucket
}

const (
	frNone uint8 = iota
	frSorted
	frHeap
)

// Tuning knobs, chosen with BenchmarkEventQueue*, BenchmarkSim* and `lockstep bench`. Within
// targetPerBucket 8-16, spanFactor 2-8 and chunkLen 2-8 the benchmarks differ by less than the
// noise of a shared machine (10%); smaller buckets pay more per bucket, larger ones more to sort.
const (
	// targetPerBucket is the aim for the number of events in a bucket as it reaches the front.
	targetPerBucket = 8
	// spanFactor is the aim for the window's span in units of the mean look-ahead of the pending
	// events, which is pending/rate by Little's law.
	spanFactor = 8
	// chunkLen is the number of events in an arena chunk (a power of two).
	chunkLen = 4
	// sortMax is the largest front bucket sorted by insertion; larger ones are radix sorted.
	sortMax = 32
	// frMoveBudget bounds the events insertions into a sorted front may move, per event of the
	// front (plus sortMax) since it was loaded; past it the front becomes a heap, so a crowd of
	// simultaneous events scheduling more of them costs O(log n) per event, not O(n).
	frMoveBudget = 4
	// The ring has between 1<<minLogN and 1<<maxLogN buckets.
	minLogN = 6
	maxLogN = 20
	// maxShift bounds the bucket width at 2^50 ps, about 19 minutes.
	maxShift = 50
	// The queue starts with 256 buckets of 4.096 ns and checks its tuning after tuneMinPops
	// pops (see tune).
	initShift   = 12
	initLogN    = 8
	tuneMinPops = 1024
)

func (q *eventQueue) len() int { return q.inRing + len(q.h) }

// grow makes room in the arena for n more events packed in full chunks. Buckets with fewer
// events than a chunk take more, and the far heap grows on demand; both keep their peak
// capacity for reuse, so only the first climb to a peak allocates.
func (q *eventQueue) grow(n int) {
	chunks := (n + chunkLen - 1) / chunkLen
	if cap(q.prev)-len(q.prev) < chunks {
		p := make([]int32, len(q.prev), len(q.prev)+chunks)
		copy(p, q.prev)
		q.prev = p
	}
	if cap(q.arena)-len(q.arena) < chunks*chunkLen {
		a := make([]Event, len(q.arena), len(q.arena)+chunks*chunkLen)
		copy(a, q.arena)
		q.arena = a
	}
}

// push adds ev to the queue.
func (q *eventQueue) push(ev Event) {
	b := int64(ev.At) >> q.shift
	// Fast path: a bucket after the front, whose last chunk has room.
	if q.frMode != frNone && b > q.frB && b-q.cur <= q.mask {
		sl := &q.slots[b&q.mask]
		if i := sl.n & (chunkLen - 1); i != 0 {
			q.arena[int(sl.last)*chunkLen+int(i)].set(&ev)
			sl.n++
			q.inRing++
			return
		}
	}
	q.pushSlow(b, ev)
}

// pushSlow is push for everything but the fast path; b is ev's bucket under the current width.
func (q *eventQueue) pushSlow(b int64, ev Event) {
	if q.slots == nil {
		q.free = -1
		q.resize(initShift, initLogN)
		q.checkAt = tuneMinPops
		b = int64(ev.At) >> q.shift
	}
	if b < q.cur {
		b = q.cur // before the window: only a caller bug does this; see the invariants
	}
	if b-q.cur > q.mask {
		q.h = heapPush(q.h, ev)
		return
	}
	q.file(b, ev)
}

// file adds ev to bucket b of the window.
func (q *eventQueue) file(b int64, ev Event) {
	q.inRing++
	if q.frMode != frNone {
		if b == q.frB {
			q.frontInsert(ev)
			return
		}
		if b < q.frB {
			q.detach() // no longer the earliest bucket
		}
	} else if q.inRing == 1 {
		// The only event of the ring: it is the front.
		q.fr = grow1(q.fr[:0])
		q.fr[0].set(&ev)
		q.frB = b
		q.frMode = frSorted
		return
	}
	q.append(b&q.mask, ev)
}

// append adds ev to the chain of slot s.
func (q *eventQueue) append(s int64, ev Event) {
	sl := &q.slots[s]
	i := sl.n & (chunkLen - 1)
	if i == 0 {
		if sl.n == 0 {
			q.bits[s>>6] |= 1 << (s & 63)
			q.sum[s>>12] |= 1 << ((s >> 6) & 63)
		}
		c := q.free
		if c >= 0 {
			q.free = q.prev[c]
		} else {
			c = q.newChunk()
		}
		q.prev[c] = sl.last
		sl.last = c
	}
	q.arena[int(sl.last)*chunkLen+int(i)].set(&ev)
	sl.n++
}

// newChunk extends the arena by one chunk and returns its number.
func (q *eventQueue) newChunk() int32 {
	c := len(q.prev)
	q.prev = append(q.prev, -1)
	if len(q.arena)+chunkLen > cap(q.arena) {
		a := make([]Event, len(q.arena), 2*cap(q.arena)+64*chunkLen)
		copy(a, q.arena)
		q.arena = a
	}
	q.arena = q.arena[:len(q.arena)+chunkLen]
	return int32(c)
}

// takeSlot appends the events of slot s to buf, returns the chunks to the free list, and empties
// the slot.
func (q *eventQueue) takeSlot(s int64, buf []Event) []Event {
	sl := &q.slots[s]
	n := int(sl.n)
	if n == 0 {
		return buf
	}
	if q.bits[s>>6] &^= 1 << (s & 63); q.bits[s>>6] == 0 {
		q.sum[s>>12] &^= 1 << ((s >> 6) & 63)
	}
	c := sl.last
	k := (n-1)&(chunkLen-1) + 1 // events in the last chunk
	for {
		base := int(c) * chunkLen
		buf = append(buf, q.arena[base:base+k]...)
		n -= k
		p := q.prev[c]
		q.prev[c] = q.free
		q.free = c
		if n == 0 {
			break
		}
		c, k = p, chunkLen
	}
	*sl = slot{}
	return buf
}

// frontInsert adds ev to the front bucket, keeping its order.
func (q *eventQueue) frontInsert(ev Event) {
	if q.frMode == frSorted && q.frMoves > frMoveBudget*len(q.fr)+sortMax {
		// Insertions have moved more events than the bucket holds several times over (a crowd
		// of simultaneous events scheduling more of them): a heap bounds each at O(log n).
		heapify(q.fr)
		q.frMode = frHeap
	}
	if q.frMode == frHeap {
		q.fr = heapPush(q.fr, ev)
		return
	}
	fr := q.fr
	if len(fr) <= sortMax {
		// Descending order: walk from the end, where the earliest events are.
		fr = grow1(fr)
		i := len(fr) - 1
		for i > 0 && fr[i-1].before(&ev) {
			fr[i] = fr[i-1]
			i--
		}
		fr[i].set(&ev)
		q.frMoves += len(fr) - 1 - i
		q.fr = fr
		return
	}
	// The events after the insertion point are the earlier ones. Binary search for the first
	// of them, then shift them up by one.
	lo, hi := 0, len(fr)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if fr[m].before(&ev) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	fr = grow1(fr)
	copy(fr[lo+1:], fr[lo:len(fr)-1])
	fr[lo].set(&ev)
	q.frMoves += len(fr) - 1 - lo
	q.fr = fr
}

// detach files the front bucket's events back into its slot.
func (q *eventQueue) detach() {
	s := q.frB & q.mask
	for _, ev := range q.fr {
		q.append(s, ev)
	}
	q.fr = q.fr[:0]
	q.frMode = frNone
}

// load makes the earliest non-empty ring bucket the front; the ring must hold events and have
// no front.
func (q *eventQueue) load() {
	c := q.cur & q.mask
	s := q.nextSlot(c)
	q.frB = q.cur + (s-c)&q.mask
	fr := q.takeSlot(s, q.fr[:0])
	if len(fr) <= sortMax {
		insertionSort(fr)
	} else {
		fr = q.radixSort(fr)
	}
	q.frMode = frSorted
	q.frMoves = 0
	q.fr = fr
}

// insertionSort orders fr descending by before (the earliest event last).
func insertionSort(fr []Event) {
	for i := 1; i < len(fr); i++ {
		ev := fr[i]
		j := i
		for j > 0 && fr[j-1].before(&ev) {
			fr[j] = fr[j-1]
			j--
		}
		fr[j] = ev
	}
}

// radixSort orders fr descending by before and returns the sorted slice, which may be q's spare
// front buffer (fr then becomes the spare).
//
// A crowded front bucket is mostly events at one instant, ordered by their random keys, where
// comparison sorts and heaps pay a mispredicted branch per comparison. Each event gets a 64-bit
// proxy that preserves (At, key) order: its time offset in the bucket in the top bits, then
// the top bits of its key. The top 32 bits of the proxies are sorted by LSD radix (four 8-bit
// passes, a pass skipped when all events share its digit), and a final insertion sort with the
// exact order mends the rare events whose proxies agree in those bits. The result is the same
// order a comparison sort gives: before is a total order.
func (q *eventQueue) radixSort(fr []Event) []Event {
	n := len(fr)
	tmin, tmax := fr[0].At, fr[0].At
	for i := 1; i < n; i++ {
		tmin, tmax = min(tmin, fr[i].At), max(tmax, fr[i].At)
	}
	tb := uint(bits.Len64(uint64(tmax - tmin))) // bits of time offset in the proxy
	if cap(q.rkeys) < 2*n {
		q.rkeys = make([]uint64, 2*n)
	}
	a, b := q.rkeys[:n], q.rkeys[n:2*n]
	for i := range fr {
		proxy := fr[i].key >> tb
		if tb > 0 {
			proxy |= uint64(fr[i].At-tmin) << (64 - tb)
		}
		// Descending: sort the complement ascending. The index rides in the low 32 bits.
		a[i] = ^proxy&^(1<<32-1) | uint64(i)
	}
	var count [256]int32
	for shift := uint(32); shift < 64; shift += 8 {
		count = [256]int32{}
		for _, w := range a {
			count[byte(w>>shift)]++
		}
		if count[byte(a[0]>>shift)] == int32(n) {
			continue // every proxy has this digit
		}
		var sum int32
		for d := range count {
			sum, count[d] = sum+count[d], sum
		}
		for _, w := range a {
			d := byte(w >> shift)
			b[count[d]] = w
			count[d]++
		}
		a, b = b, a
	}
	out := q.spare[:0]
	if cap(out) < n {
		out = make([]Event, 0, max(n, 2*cap(out)))
	}
	out = out[:n]
	for i, w := range a {
		out[i] = fr[uint32(w)]
	}
	q.spare = fr[:0]
	insertionSort(out)
	return out
}

// nextSlot returns the first non-empty ring slot at or after slot from, going round the ring;
// the ring must not be empty.
func (q *eventQueue) nextSlot(from int64) int64 {
	w := from >> 6
	if m := q.bits[w] & (^uint64(0) << (from & 63)); m != 0 {
		return w<<6 | int64(bits.TrailingZeros64(m))
	}
	w = nextBit(q.sum, w+1)
	if w < 0 {
		w = nextBit(q.sum, 0) // wrap round; finds the word of from itself at worst
	}
	return w<<6 | int64(bits.TrailingZeros64(q.bits[w]))
}

// nextBit returns the index of the first set bit at or after i in set, or -1.
func nextBit(set []uint64, i int64) int64 {
	w := i >> 6
	if w >= int64(len(set)) {
		return -1
	}
	if m := set[w] & (^uint64(0) << (i & 63)); m != 0 {
		return w<<6 | int64(bits.TrailingZeros64(m))
	}
	for w++; w < int64(len(set)); w++ {
		if set[w] != 0 {
			return w<<6 | int64(bits.TrailingZeros64(set[w]))
		}
	}
	return -1
}

// peek returns the earliest event; the queue must not be empty. It may order the front bucket
// but never moves the window, so pushes earlier than the peeked event (after a Run that stopped
// short of it) stay cheap. The pointer is valid until the next push, drop or pop.
func (q *eventQueue) peek() *Event {
	if q.frMode == frSorted {
		return &q.fr[len(q.fr)-1]
	}
	return q.peekSlow()
}

// peekSlow is peek when the front is not a sorted bucket.
func (q *eventQueue) peekSlow() *Event {
	if q.frMode == frNone {
		if q.inRing == 0 {
			return &q.h[0]
		}
		q.load()
		if q.frMode == frSorted {
			return &q.fr[len(q.fr)-1]
		}
	}
	return &q.fr[0]
}

// pop removes and returns the earliest event; the queue must not be empty.
func (q *eventQueue) pop() Event {
	ev := *q.peek()
	q.drop()
	return ev
}

// drop removes the earliest event, the one peek returns; the queue must not be empty. With peek
// it lets Sim.dispatch read the event in place rather than copy it out.
func (q *eventQueue) drop() {
	// Fast path: the front is sorted and stays non-empty, the window is at it, no tuning due.
	if n := len(q.fr) - 1; q.frMode == frSorted && n > 0 && q.frB == q.cur && q.pops < q.checkAt-1 {
		q.fr = q.fr[:n]
		q.inRing--
		q.pops++
		return
	}
	q.dropSlow()
}

// dropSlow is drop for everything but the fast path.
func (q *eventQueue) dropSlow() {
	if q.frMode == frNone {
		if q.inRing == 0 {
			// Only far events: drop the earliest, which peek returns, and jump the window to it.
			at := q.h[0].At
			q.h = heapDrop(q.h)
			q.advance(max(int64(at)>>q.shift, q.cur))
			q.count(at)
			return
		}
		q.load()
	}
	if q.frB != q.cur {
		q.advance(q.frB)
	}
	var at Time
	if q.frMode == frSorted {
		n := len(q.fr) - 1
		at = q.fr[n].At
		q.fr = q.fr[:n]
	} else {
		at = q.fr[0].At
		q.fr = heapDrop(q.fr)
	}
	q.inRing--
	if len(q.fr) == 0 {
		q.frMode = frNone
	}
	q.count(at)
}

// advance moves the window to start at bucket b and files the far events it now covers into
// the ring. b is the bucket of the event about to be popped.
func (q *eventQueue) advance(b int64) {
	q.cur = b
	for len(q.h) > 0 {
		hb := int64(q.h[0].At) >> q.shift
		if hb-b > q.mask {
			return
		}
		ev := q.h[0]
		q.h = heapDrop(q.h)
		q.file(max(hb, b), ev)
	}
}

// count notes a pop at time at for tuning.
func (q *eventQueue) count(at Time) {
	q.pops++
	if q.pops >= q.checkAt {
		q.tune(at)
	}
}

// tune re-sizes the calendar if it is far from the ideal for the events popped since the last
// check, which took from q.t0 to now. Checks are tuneMinPops pops apart at first, doubling up
// to twice the pending count. A resize costs O(pending), so it needs the bucket width or count
// to be off by a factor of about 3 or 4 at two checks in a row: one burst, or a window that
// caught a lull, moves nothing. Tuning then costs O(1) per event, even when the spacing of
// events swings between checks.
func (q *eventQueue) tune(now Time) {
	pops, elapsed := uint64(q.pops), uint64(now-q.t0)
	q.pops, q.t0 = 0, now
	q.checkAt = min(2*q.checkAt, max(tuneMinPops, 2*q.len()))
	if int64(elapsed) <= 0 {
		return // a burst at one instant says nothing about the spacing of events
	}
	// Events pass the front at pops/elapsed per ps, so a bucket of
	// targetPerBucket*elapsed/pops ps holds about targetPerBucket of them. Round the log2.
	shift := int(q.shift)
	if ideal := roundLog2(mulDiv(elapsed, targetPerBucket, pops)); ideal-shift >= 2 || shift-ideal >= 2 {
		shift = min(ideal, maxShift)
	}
	// The window should span spanFactor times the mean look-ahead, pending/rate.
	span := mulDiv(elapsed, uint64(spanFactor*q.len()), pops)
	logN := bits.Len64(max(span>>shift, 1) - 1)
	logN = min(max(logN, minLogN), maxLogN)
	oldLogN := bits.Len64(uint64(q.mask))
	if shift == int(q.shift) && logN-oldLogN < 2 && oldLogN-logN < 2 {
		q.offTune = false
		return
	}
	if !q.offTune {
		q.offTune = true // confirm at the next check
		return
	}
	q.offTune = false
	q.resize(uint(shift), uint(logN))
}

// mulDiv returns a*b/c, saturating at 1<<63-1.
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi >= c {
		return 1<<63 - 1
	}
	q, _ := bits.Div64(hi, lo, c)
	return min(q, 1<<63-1)
}

// roundLog2 returns log2(x) rounded to the nearest integer (0 for x = 0).
func roundLog2(x uint64) int {
	if x == 0 {
		return 0
	}
	l := bits.Len64(x) - 1
	if l > 0 && x>>(l-1)&1 == 1 {
		l++ // x >= 1.5 * 2^l
	}
	return l
}

// resize rebuilds the calendar with buckets of 1<<shift ps and a ring of 1<<logN of them,
// keeping the window's start time (rounded down to the new width).
func (q *eventQueue) resize(shift, logN uint) {
	all := append(q.scratch[:0], q.fr...)
	q.fr = q.fr[:0]
	q.frMode = frNone
	for s := range q.slots {
		all = q.takeSlot(int64(s), all)
	}
	n := 1 << logN
	if cap(q.slots) >= n {
		q.slots = q.slots[:n] // slots past the old length are empty
	} else {
		q.slots = make([]slot, n)
	}
	q.bits = resetBits(q.bits, (n+63)/64)
	q.sum = resetBits(q.sum, (n+4095)/4096)
	q.cur = q.cur << q.shift >> shift
	q.shift = shift
	q.mask = int64(n - 1)
	q.inRing = 0
	for _, ev := range all {
		b := max(int64(ev.At)>>shift, q.cur)
		if b-q.cur > q.mask {
			q.h = heapPush(q.h, ev)
		} else {
			q.file(b, ev)
		}
	}
	if cap(all) <= 1<<16 {
		q.scratch = all[:0] // keep small buffers; a big one would double the peak memory
	}
	q.advance(q.cur)
}

// grow1 returns s extended by one element, reallocating (doubling) only when it is full.
func grow1(s []Event) []Event {
	if len(s) == cap(s) {
		t := make([]Event, len(s), 2*cap(s)+4)
		copy(t, s)
		s = t
	}
	return s[:len(s)+1]
}

// resetBits returns a zeroed bit set of n words, reusing set's storage.
func resetBits(set []uint64, n int) []uint64 {
	if cap(set) < n {
		return make([]uint64, n)
	}
	set = set[:n]
	clear(set)
	return set
}
