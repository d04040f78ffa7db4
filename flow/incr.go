package flow

import "math"

// Incremental recomputation: after a change (flows starting or completing, a link's capacity
// changing, a flow held, released or repathed) only the flows the change can affect are
// refilled, by "verify and extend":
//
//  1. The affected set A starts as the flows on the links the change touched (the links a
//     completed flow left, a link whose capacity changed, the links of a flow that started)
//     and the changed flows themselves.
//  2. A is refilled by progressive filling with every other flow held at its rate, as frozen
//     load on A's links (progress, as the full fill, over A and the links of A).
//  3. The result is checked against the characterisation of the max-min allocation (B&G
//     §6.5.2): it is feasible and every flow runs at its cap or has a bottleneck, a saturated
//     link on which no flow is faster. Only the flows whose bottleneck could have changed are
//     checked: A's flows, and the other flows whose recorded bottleneck is a link whose load,
//     capacity or flows changed (the links of A and the links the change touched); every
//     other flow keeps a bottleneck that nothing touched. Feasibility holds by construction:
//     the refill keeps A's links within capacity, links without a flow of A only lost load,
//     and every flow on a link whose capacity changed is in A.
//  4. Where the check fails, A grows: a flow of A whose freezing link carries a faster flow
//     outside A brings in the faster flows; a flow outside A left without a bottleneck joins
//     A. Then back to 2.
//
// When the check passes, the allocation is the max-min fair one (it is unique), so the rates
// equal a full recomputation's up to rounding (incr_test.go compares them after every change
// of 1,000 random sequences). When A grows past a quarter of the active flows, or the
// refills and checks have visited a quarter of the entries a full fill would, or after
// maxRounds rounds, the full fill runs instead, and the next 1, 3, 7, ... (up to maxBackoff)
// recomputations are full without trying: where changes touch everything (spraying on a
// Clos), the attempts that give up then cost little. A change under an eighth of the one
// that gave up (its seed flows and links) still tries: a batch of flows starting says
// nothing about the single completions after it (TestBackoffSparesSmallChanges).
//
// One exact shortcut: when the only changes are flows completing, every flow slower than the
// slowest of them keeps its rate. In progressive filling a flow's links saturate at levels at
// or above its rate, so below that level the removed flows change no saturation: every freeze
// below it happens as before. Those flows are left out of the initial A. When that leaves A
// empty (every flow on the completed flows' links was slower than them) there is nothing to
// refill: only the check runs, which renews the bottleneck records of the flows whose
// recorded bottleneck the completions touched (its work is counted as if the refill had
// run, so the give-up rule decides as before).
//
// Tolerances: a rate is "the fastest on a link" when no rate there exceeds it by more than
// rateTol relative, and a link not saturated by the refill itself counts as saturated when
// its load is within satTol of its capacity. A spurious failure only costs a larger A; a
// spurious pass bounds the error by the tolerance.

const (
	rateTol    = 1e-11
	satTol     = 1e-12
	maxRounds  = 32
	maxBackoff = 64
)

// incrAlways, set by tests only, makes every recomputation incremental however large A grows.
var incrAlways = false

// incrState is the bookkeeping of incremental recomputation: the changes since the last
// recomputation, and the scratch of one.
type incrState struct {
	// Changes since the last recomputation, recorded by noteFlow, noteLeave and noteCap.
	// batch is the epoch of the changes being recorded, below 2^31 (linkState.seen holds
	// it shifted by one bit).
	batch     uint32
	seedFlows []int32 // slots of flows that started, were held or released, or repathed
	seedLinks []int32 // links a flow left, or whose capacity changed (linkState.seen)
	mixed     bool    // a change other than flows completing
	minLeft   float64 // least rate of the flows that completed

	// Back-off: after an incremental attempt gave up, the next skip recomputations are full
	// without trying; backoff doubles (up to maxBackoff) with every attempt that gives up and
	// resets on one that succeeds. The skipping ends early once more than twice as many
	// flows are active as when the attempt gave up (skipActive): the change that made it give
	// up (a batch of flows starting or ending among few) says little about single changes
	// among many, and a full fill among many costs far more.
	skip, backoff, skipActive int
	// skipSeeds is the size of the change (seed flows and links) whose attempt gave up: a
	// change under an eighth of it tries incrementally even while skipping (a batch of
	// thousands of flows starting says nothing about the single completions after it).
	skipSeeds int

	// One incremental recomputation. Its per-link marks and caches are in Net.link
	// (linkState.chg, scan, lsat, lmaxAt, lmax, lload).
	aep    uint32
	a      []int32 // the affected flows (slots)
	links  []int32 // the links of A's flows and the links the changes touched
	work   int     // list entries visited so far
	rnd    uint32  // epoch of the current round (linkState.lsat, lmaxAt)
	emptyA int     // rounds that skipped the refill on an empty A (for tests)
}

// incrLimit is the size of A past which a recomputation is full.
func (n *Net) incrLimit() int {
	if incrAlways {
		return math.MaxInt
	}
	return len(n.active) / 4
}

// noteFlow records that the flow in slot started, was held or released, or was repathed.
func (n *Net) noteFlow(slot int32) {
	is := &n.inc
	is.mixed = true
	if n.flows[slot].fseen == is.batch {
		return
	}
	n.flows[slot].fseen = is.batch
	is.seedFlows = append(is.seedFlows, slot)
}

// noteLeave records that the flow in slot leaves its links (it completed, or it is being
// repathed). Call it before the flow leaves its links.
func (n *Net) noteLeave(slot int32) {
	is := &n.inc
	f := &n.flows[slot]
	is.minLeft = min(is.minLeft, f.rate)
	for i := range f.ents {
		n.noteLink(f.ents[i].link)
	}
}

// noteCap records that link l's capacity changed.
func (n *Net) noteCap(l int32) {
	n.inc.mixed = true
	n.noteLink(l)
	n.link[l].seen |= 1
}

// noteLink records that link l lost a flow or changed capacity (a seed link).
func (n *Net) noteLink(l int32) {
	is := &n.inc
	lk := &n.link[l]
	if lk.seen>>1 == is.batch {
		return
	}
	lk.seen = is.batch << 1
	is.seedLinks = append(is.seedLinks, l)
}

// resetChanges starts recording the changes after a recomputation.
func (n *Net) resetChanges() {
	is := &n.inc
	is.batch++
	if is.batch == 1<<31 {
		for i := range n.flows {
			n.flows[i].fseen = 0
		}
		for i := range n.link {
			n.link[i].seen = 0
		}
		is.batch = 1
	}
	is.seedFlows = is.seedFlows[:0]
	is.seedLinks = is.seedLinks[:0]
	is.mixed = false
	is.minLeft = math.Inf(1)
}

// rates recomputes every active flow's rate, incrementally when it can, and reports whether
// a flow became stalled that was not before.
func (n *Net) rates() bool {
	is := &n.inc
	defer n.resetChanges()
	switch {
	case n.cfg.FullRecompute:
	case is.skip > 0 && !incrAlways && len(n.active) <= 2*is.skipActive && 8*n.seeds() >= is.skipSeeds:
		is.skip--
	default:
		if newStall, ok := n.fillIncr(); ok {
			is.backoff, is.skip = 0, 0
			return newStall
		}
		is.backoff = min(2*is.backoff+1, maxBackoff)
		is.skip, is.skipActive, is.skipSeeds = is.backoff, len(n.active), n.seeds()
	}
	n.stats.FullRecomputes++
	return n.fill()
}

// seeds is the size of the change since the last recomputation: the flows and links it
// touched (the incremental recomputation's seeds).
func (n *Net) seeds() int { return len(n.inc.seedFlows) + len(n.inc.seedLinks) }

// fillIncr recomputes the rates incrementally (see the top of this file). It reports whether
// a flow became stalled, and false in ok when it gave up (the caller then fills everything;
// the rates of the flows it refilled are then not valid).
func (n *Net) fillIncr() (newStall, ok bool) {
	is := &n.inc
	is.aep++
	if is.aep == 0 {
		for i := range n.flows {
			n.flows[i].inA = 0
		}
		for i := range n.link {
			n.link[i].chg, n.link[i].scan = 0, 0
		}
		is.aep = 1
	}
	is.a, is.links, is.work = is.a[:0], is.links[:0], 0
	limit := n.incrLimit()
	workLimit := n.nEnts / 4
	if incrAlways {
		workLimit = math.MaxInt
	}
	thr := math.Inf(-1)
	if !is.mixed {
		thr = is.minLeft * (1 - 1e-9)
	}
	for _, l := range is.seedLinks {
		n.addLink(l)
		lk := &n.link[l]
		all := lk.seen&1 != 0 || is.mixed
		if all {
			lk.scan = is.aep
		}
		for _, ref := range lk.list {
			if all || n.flows[ref.slot].rate >= thr {
				n.addA(ref.slot)
			}
		}
		is.work += len(lk.list)
		if len(is.a) > limit {
			return false, false
		}
	}
	for _, s := range is.seedFlows {
		f := &n.flows[s]
		if f.state != stActive || f.apos < 0 {
			continue // completed since
		}
		n.addA(s)
		for i := range f.ents {
			lk := &n.link[f.ents[i].link]
			if lk.scan == is.aep {
				continue // its flows are in A already (a link many new flows share)
			}
			lk.scan = is.aep
			for _, ref := range lk.list {
				n.addA(ref.slot)
			}
			is.work += len(lk.list)
		}
		if len(is.a) > limit {
			return false, false
		}
	}
	for round := 0; ; round++ {
		if len(is.a) > limit || is.work > workLimit || (round >= maxRounds && !incrAlways) {
			return false, false
		}
		if len(is.a) > 0 {
			n.refill()
		} else {
			// An empty A (only completions, every flow they left slower than the slowest of
			// them) has nothing to refill: the check below only renews the bottleneck
			// records of the flows whose recorded bottleneck the completions touched. The
			// work is counted as the refill's (its pass over the links' lists), so the
			// give-up rule decides as before.
			for _, l := range is.links {
				is.work += len(n.link[l].list)
			}
			is.emptyA++
		}
		grew, ok := n.verify()
		if !ok {
			return false, false
		}
		if !grew {
			break
		}
	}
	// Commit: the loads of the links whose flows changed, and the stall records.
	for _, l := range is.links {
		if lk := &n.link[l]; len(lk.list) > 0 {
			if n.linkStats(l); lk.lload != lk.load {
				n.settleLink(l, n.fillNow)
				lk.load = lk.lload
			}
		}
	}
	for _, s := range is.a {
		newStall = n.stallUpdate(s) || newStall
	}
	n.stats.Refilled += int64(len(is.a))
	return newStall, true
}

// addA adds the flow in slot to A, and its links to the changed links.
func (n *Net) addA(slot int32) {
	is := &n.inc
	if n.flows[slot].inA == is.aep {
		return
	}
	n.flows[slot].inA = is.aep
	is.a = append(is.a, slot)
	f := &n.flows[slot]
	for i := range f.ents {
		n.addLink(f.ents[i].link)
	}
}

func (n *Net) addLink(l int32) {
	is := &n.inc
	if lk := &n.link[l]; lk.chg != is.aep {
		lk.chg = is.aep
		is.links = append(is.links, l)
	}
}

// refill runs progressive filling over A, every other flow frozen at its rate.
func (n *Net) refill() {
	is := &n.inc
	fs := &n.fs
	n.nextEpoch()
	ep, aep := fs.epoch, is.aep
	h := &fs.heap
	h.reset()
	for _, s := range is.a {
		fs.solo[s] = n.flows[s].cap
		n.flows[s].soloLink = -1
	}
	for _, l := range is.links {
		lk := &n.link[l]
		lf := &lk.fill
		rem, w, cnt, one := lk.capa, 0.0, int32(0), int32(-1)
		list := lk.list
		is.work += len(list)
		for _, ref := range list {
			if g := &n.flows[ref.slot]; g.inA == aep {
				w += ref.coef
				cnt++
				one = ref.slot
			} else {
				rem -= ref.coef * g.rate
				g.mark = ep
			}
		}
		rem = max(rem, 0)
		lf.rem, lf.w, lf.cnt, lf.heaped = rem, w, cnt, cnt > 1
		switch {
		case cnt == 1:
			// A link of one flow of A is a limit of that flow (as initLink).
			if lim := rem / w; lim < fs.solo[one] {
				fs.solo[one] = lim
				n.flows[one].soloLink = l
			}
		case cnt > 1:
			h.key = append(h.key, rem/w)
			h.link = append(h.link, l)
		}
	}
	for _, s := range is.a {
		if !math.IsInf(fs.solo[s], 1) {
			h.key = append(h.key, fs.solo[s])
			h.link = append(h.link, -1-s)
		}
	}
	n.progress(is.a)
}

// verify checks the allocation after a refill (see the top of this file) and grows A where
// it fails. It reports whether A grew, and false in ok when the check failed where A cannot
// grow (rounding; the caller then fills everything).
func (n *Net) verify() (grew, ok bool) {
	is := &n.inc
	is.rnd++
	if is.rnd == 0 {
		for i := range n.link {
			n.link[i].lsat, n.link[i].lmaxAt = 0, 0
		}
		is.rnd = 1
	}
	aep := is.aep
	for _, s := range is.a {
		if b := n.flows[s].bott; b >= 0 {
			n.link[b].lsat = is.rnd
		}
	}
	// A's flows: the link each froze on is saturated (the refill saturated it); a flow
	// outside A on it must not be faster.
	nA := len(is.a)
	for i := 0; i < nA; i++ {
		s := is.a[i]
		f := &n.flows[s]
		b := f.bott
		if b < 0 || f.rate >= n.linkStats(b)*(1-rateTol) || n.findBott(s) {
			continue
		}
		// The faster flows are outside A, or joined it in this round (A's refilled flows on b
		// froze at or below f's rate).
		faster := false
		for _, ref := range n.link[b].list {
			if n.flows[ref.slot].rate > f.rate {
				faster = true
				n.addA(ref.slot)
			}
		}
		if !faster {
			return false, false
		}
		grew = true
	}
	// The other flows whose bottleneck is a changed link.
	nL := len(is.links)
	for i := 0; i < nL; i++ {
		l := is.links[i]
		list := n.link[l].list
		is.work += len(list)
		for _, ref := range list {
			s := ref.slot
			if n.flows[s].inA == aep || n.flows[s].bott != l {
				continue
			}
			if n.isBott(s, l) || n.findBott(s) {
				continue
			}
			n.addA(s)
			grew = true
		}
	}
	return grew, true
}

// linkStats returns the fastest rate on link l under the current rates, and caches it and
// the link's load for this round.
func (n *Net) linkStats(l int32) float64 {
	is := &n.inc
	lk := &n.link[l]
	if lk.lmaxAt == is.rnd {
		return lk.lmax
	}
	var mx, load float64
	list := lk.list
	is.work += len(list)
	for _, ref := range list {
		g := &n.flows[ref.slot]
		mx = max(mx, g.rate)
		load += ref.coef * g.rate
	}
	lk.lmaxAt, lk.lmax, lk.lload = is.rnd, mx, load
	return mx
}

// isBott reports whether link l is a bottleneck of the flow in slot: saturated, and no flow
// on it faster.
func (n *Net) isBott(slot, l int32) bool {
	mx := n.linkStats(l)
	if n.flows[slot].rate < mx*(1-rateTol) {
		return false
	}
	is := &n.inc
	lk := &n.link[l]
	return lk.lsat == is.rnd || lk.capa-lk.lload <= satTol*lk.capa
}

// findBott looks for a bottleneck of the flow in slot other than its recorded one, among its
// links and its cap, and records it. It reports whether there is one.
func (n *Net) findBott(slot int32) bool {
	f := &n.flows[slot]
	if f.rate >= f.cap*(1-rateTol) {
		f.bott = -1
		return true
	}
	for i := range f.ents {
		if l := f.ents[i].link; l != f.bott && n.isBott(slot, l) {
			f.bott = l
			return true
		}
	}
	return false
}
