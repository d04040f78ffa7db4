package flow

import "math"

// Progressive filling (water-filling) for weighted max-min fair rates: Bertsekas & Gallager,
// Data Networks, 2nd ed., §6.5.2. Every unfrozen flow's rate rises together (the level t);
// link l saturates at
//
//	t_l = (capacity_l - frozen load on l) / (sum of c(f,l) over the unfrozen flows f on l)
//
// and the flows crossing the link with the smallest t_l freeze at that level; a capped flow
// freezes when t reaches its cap. Repeat until every flow is frozen.
//
// Implementation. Per used link: rem (capacity minus frozen load), w (sum of the unfrozen
// coefficients), cnt (unfrozen flows). The links sit in a 4-ary heap keyed by t_l. Freezing
// a flow at level t <= t_l lowers rem by c t and w by c, which can only raise t_l:
// (R - c t)/(W - c) >= R/W when t <= R/W. So the heap is lazy: a key is a lower bound, and
// the top is re-keyed (and sifted down) when its key is found stale, instead of re-keying
// every link a freeze touches; when half the entries are dead (links whose flows are all
// frozen) the heap is rebuilt without them in O(size). A link crossed by a single flow
// saturates exactly when that flow reaches capacity/coefficient, a fixed level, so it is not
// a heap entry: it is folded with the flow's cap into one heap entry for the flow (its "solo"
// limit). Host links of permutations and rings are such links; folding them keeps the heap
// to the shared links. Each flow freezes once, touching its entries once:
// O(E + L log L + R log L) per fill (package doc, "Cost").
//
// Float guards: w is not trusted once cnt reaches 0 (the link leaves the heap), and a key is
// never below the current level (rounding can make R - c t slightly negative on a link that
// saturates together with the bottleneck; mathematically t_l >= t).

// linkFill is the per-link scratch of one fill.
type linkFill struct {
	rem float64 // capacity minus the load of the frozen flows
	w   float64 // sum of the coefficients of the unfrozen flows
	cnt int32   // number of unfrozen flows
	// heaped: the link has a heap entry (it has more than one flow); once its cnt is 0 the
	// entry is dead.
	heaped bool
}

// fillState is the scratch the fill (and flow construction) reuses; nothing is allocated per
// recomputation once the slices have grown.
type fillState struct {
	// The per-link scratch is in Net.link (linkState.fill); a flow's frozen mark (the
	// epoch of the fill in which it froze) and solo link are in its flowState.

	// Per flow slot: the flow's own limit, the least of its cap and capacity/coefficient over
	// the links it alone crosses (the link: flowState.soloLink, -1 the cap).
	solo  []float64
	dead  int // heap entries of links with no unfrozen flow left
	heap  linkHeap
	epoch uint32

	// Flow construction (beginFlow, addPath, commitFlow): the links of the flow being built
	// and their accumulated weights. Up to smallFlow links the weights are kept beside the
	// links (tw, found by a linear search: no per-link memory is touched); past it they
	// move to acc, by internal link (spilled).
	acc      []float64 // per internal link: accumulated weight, while spilled
	touched  []int32   // links of the flow being built, in order of first use
	tw       []float64 // touched's weights, while not spilled
	ids      []int32   // addPath's scratch: the internal numbers of a path's links
	spilled  bool
	wtotal   float64
	sawLinks bool // a path has links
}

// smallFlow is the number of distinct links up to which a flow being built keeps its
// weights in fillState.tw: a pinned (ECMP) route crosses a handful, a sprayed one hundreds.
const smallFlow = 32

// accum adds weight w to internal link l of the flow being built. The sums are the same,
// added in the same order, in either representation.
func (fs *fillState) accum(l int32, w float64) {
	if !fs.spilled {
		for i, t := range fs.touched {
			if t == l {
				fs.tw[i] += w
				return
			}
		}
		if len(fs.touched) < smallFlow {
			fs.touched = append(fs.touched, l)
			fs.tw = append(fs.tw, w)
			return
		}
		for i, t := range fs.touched {
			fs.growAcc(t)
			fs.acc[t] = fs.tw[i]
		}
		fs.spilled = true
	}
	fs.growAcc(l)
	if fs.acc[l] == 0 {
		fs.touched = append(fs.touched, l)
	}
	fs.acc[l] += w
}

// growAcc makes acc cover internal link l (zeros: no weight).
func (fs *fillState) growAcc(l int32) {
	if int(l) >= len(fs.acc) {
		fs.acc = append(fs.acc, make([]float64, int(l)+1-len(fs.acc))...)
	}
}

// resetBuild clears the flow being built.
func (fs *fillState) resetBuild() {
	if fs.spilled {
		for _, l := range fs.touched {
			fs.acc[l] = 0
		}
		fs.spilled = false
	}
	fs.touched, fs.tw = fs.touched[:0], fs.tw[:0]
}

// nextEpoch starts a fill: no flow is marked frozen in the new epoch.
func (n *Net) nextEpoch() {
	fs := &n.fs
	fs.epoch++
	if fs.epoch == 0 { // wrapped: clear the marks so no flow looks frozen
		for i := range n.flows {
			n.flows[i].mark = 0
		}
		fs.epoch = 1
	}
}

// fill assigns every active flow its max-min fair rate and bottleneck, sets each used link's
// load, and updates the stall count. It reports whether a flow became stalled (rate 0) that
// was not before.
func (n *Net) fill() bool {
	fs := &n.fs
	n.nextEpoch()
	lks := n.link
	h := &fs.heap
	h.reset()
	for _, s := range n.active {
		fs.solo[s] = n.flows[s].cap
		n.flows[s].soloLink = -1
	}
	if 4*len(n.used) > len(lks) {
		// Most links are in use: visit them in index order (sequential memory access).
		for l := range lks {
			if k := len(lks[l].list); k > 0 {
				n.initLink(int32(l), k)
			}
		}
	} else {
		for _, l := range n.used {
			n.initLink(l, len(n.link[l].list))
		}
	}
	for _, s := range n.active {
		if !math.IsInf(fs.solo[s], 1) {
			h.key = append(h.key, fs.solo[s])
			h.link = append(h.link, -1-s)
		}
	}
	n.progress(n.active)
	newStall := false
	for _, s := range n.active {
		newStall = n.stallUpdate(s) || newStall
	}
	for _, l := range n.used {
		lk := &lks[l]
		if load := max(0, lk.capa-lk.fill.rem); load != lk.load {
			n.settleLink(l, n.fillNow)
			lk.load = load
		}
	}
	return newStall
}

// progress runs progressive filling over flows (slots, none frozen yet in this epoch; the
// flows of their links that are not among them are marked frozen), from the link state and
// heap the caller set up (fill, refill).
func (n *Net) progress(flows []int32) {
	fs := &n.fs
	ep := fs.epoch
	lks := n.link
	h := &fs.heap
	h.heapify()
	fs.dead = 0
	level := 0.0
	left := len(flows)
	ft := n.flows
	for left > 0 {
		if 2*fs.dead > h.len() && h.len() > 64 {
			n.rebuildHeap(level)
		}
		// The next event: a link saturating or a flow reaching its own limit.
		found := false
		for h.len() > 0 {
			id := h.link[0]
			if id < 0 {
				if ft[-1-id].mark == ep {
					h.pop()
					continue
				}
				found = true
				break
			}
			lf := &lks[id].fill
			if lf.cnt == 0 {
				h.pop()
				fs.dead--
				continue
			}
			k := lf.rem / lf.w
			if k < level {
				k = level
			}
			if k > h.key[0] {
				h.key[0] = k
				h.siftDown(0)
				continue
			}
			h.key[0] = k
			found = true
			break
		}
		if !found {
			// Only flows crossing no link and without a cap are left: unconstrained.
			for _, s := range flows {
				if ft[s].mark != ep {
					n.freeze(s, math.Inf(1), -2)
					left--
				}
			}
			break
		}
		level = max(level, h.key[0])
		id := h.link[0]
		h.pop()
		if id < 0 {
			s := -1 - id
			n.freeze(s, level, n.flows[s].soloLink)
			left--
			continue
		}
		for _, ref := range n.link[id].list {
			if ft[ref.slot].mark != ep {
				n.freeze(ref.slot, level, id)
				left--
			}
		}
	}
}

// rebuildHeap drops the dead entries (links without unfrozen flows, frozen flows) and
// re-keys the rest to their current levels (at least level), in O(heap size): cheaper than
// popping the dead one by one once they are half the heap.
func (n *Net) rebuildHeap(level float64) {
	fs := &n.fs
	h := &fs.heap
	ep := fs.epoch
	k := 0
	for i, id := range h.link {
		key := h.key[i]
		if id < 0 {
			if n.flows[-1-id].mark == ep {
				continue
			}
		} else {
			lf := &n.link[id].fill
			if lf.cnt == 0 {
				continue
			}
			key = max(lf.rem/lf.w, level)
		}
		h.key[k], h.link[k] = key, id
		k++
	}
	h.key, h.link = h.key[:k], h.link[:k]
	h.heapify()
	fs.dead = 0
}

// initLink starts link l, crossed by k > 0 active flows, for a fill: nothing frozen. A link
// crossed by one flow saturates exactly when that flow reaches capacity/coefficient, so it
// becomes a limit of the flow (solo, soloLink) instead of a heap entry: most host links of a
// permutation or a ring are such links, and they would otherwise fill the heap.
func (n *Net) initLink(l int32, k int) {
	fs := &n.fs
	lk := &n.link[l]
	lf := &lk.fill
	lf.rem = lk.capa
	lf.w = lk.wsum
	lf.cnt = int32(k)
	lf.heaped = k > 1
	if k == 1 {
		// w is the one flow's coefficient.
		s := lk.list[0].slot
		if lim := lf.rem / lf.w; lim < fs.solo[s] {
			fs.solo[s] = lim
			n.flows[s].soloLink = l
		}
		return
	}
	h := &fs.heap
	h.key = append(h.key, lf.rem/lf.w)
	h.link = append(h.link, l)
}

// freeze fixes the rate of the flow in slot at r (its bottleneck bott: a link, -1 its cap,
// -2 none) and takes it out of its links' unfrozen sums.
func (n *Net) freeze(slot int32, r float64, bott int32) {
	f := &n.flows[slot]
	if r != f.rate {
		// Its remaining bytes at the rate it had, and new completion keys (rekeyChanged).
		n.settle(slot, n.fillNow)
		f.rate = r
		n.changed = append(n.changed, slot)
	}
	f.mark = n.fs.epoch
	f.bott = bott
	lks := n.link
	for i := range f.ents {
		e := &f.ents[i]
		lf := &lks[e.link].fill
		lf.rem -= e.coef * r
		lf.cnt--
		if lf.cnt == 0 {
			lf.w = 0
			if lf.heaped {
				n.fs.dead++
			}
		} else {
			lf.w -= e.coef
		}
	}
}

// stallUpdate records whether the flow in slot is stalled (rate 0) after a recomputation. It
// reports whether it became stalled just now (and is not held).
func (n *Net) stallUpdate(slot int32) bool {
	f := &n.flows[slot]
	if stalled := f.rate == 0; stalled != f.stalled {
		f.stalled = stalled
		sr := n.sideOf(slot)
		if stalled {
			n.nStalled++
			sr.at, sr.bott = n.fillNow, f.bott
			return !f.held
		}
		n.nStalled--
		if d := n.fillNow - sr.at; d > sr.dur {
			sr.dur, sr.link = d, sr.bott
		}
	}
	return false
}

// The link heap is 4-ary (half the levels of a binary heap; a node's four children's keys
// share a cache line) on two parallel slices, keys and links, so comparisons read keys only.
// Ties between equal keys pop in an order fixed by the inputs (deterministic), not by index.

// linkHeap is a 4-ary min-heap of links keyed by a lower bound of their saturation level.
type linkHeap struct {
	key  []float64
	link []int32
}

func (h *linkHeap) reset() { h.key, h.link = h.key[:0], h.link[:0] }

func (h *linkHeap) len() int { return len(h.key) }

// heapify orders the heap in O(n) (Floyd).
func (h *linkHeap) heapify() {
	n := len(h.key)
	if n < 2 {
		return
	}
	for i := (n - 2) / 4; i >= 0; i-- {
		h.siftDown(i)
	}
}

// siftDown moves the entry at i down to its place.
func (h *linkHeap) siftDown(i int) {
	keys, links := h.key, h.link
	n := len(keys)
	k, l := keys[i], links[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		mk := keys[c]
		end := min(c+4, n)
		for j := c + 1; j < end; j++ {
			if keys[j] < mk {
				m, mk = j, keys[j]
			}
		}
		if mk >= k {
			break
		}
		keys[i], links[i] = mk, links[m]
		i = m
	}
	keys[i], links[i] = k, l
}

// pop removes the top entry of the non-empty heap.
func (h *linkHeap) pop() {
	n := len(h.key) - 1
	h.key[0], h.link[0] = h.key[n], h.link[n]
	h.key, h.link = h.key[:n], h.link[:n]
	if n > 0 {
		h.siftDown(0)
	}
}
