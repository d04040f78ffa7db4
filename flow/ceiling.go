package flow

import (
	"fmt"
	"math"
	"slices"
)

// SetCaps sets the rate cap of each sending flow ids[i] to bitsPerSec[i] bits per second (0:
// none, as Flow.Cap) from the current instant on, and recomputes the rates at this instant,
// as SetCapacity does for a link: a transport's ceiling that moves while its flow sends (a
// RoCE QP's DCQCN recovery, runner/flowceiling.go). Caps that do not change cost nothing; a
// held flow (Hold) stays at rate 0 and takes its new cap when released. Ids that are not
// sending are skipped. It returns how many of ids were sending. ids must be in increasing
// order (one pass over the sending flows, O(active x log len(ids))). Errors (nothing is
// changed): slices of different lengths, ids out of order or repeated, a cap that is
// negative, NaN or infinite.
func (n *Net) SetCaps(ids []FlowID, bitsPerSec []float64) (int, error) {
	if len(ids) != len(bitsPerSec) {
		return 0, fmt.Errorf("flow: SetCaps: %d ids and %d caps; want one cap per id", len(ids), len(bitsPerSec))
	}
	for i, c := range bitsPerSec {
		if !(c >= 0) || math.IsInf(c, 1) {
			return 0, fmt.Errorf("flow: SetCaps: flow %d: cap %v bits/s: must be finite and >= 0 (0 = none)", ids[i], c)
		}
		if i > 0 && ids[i] <= ids[i-1] {
			return 0, fmt.Errorf("flow: SetCaps: ids[%d] = %d after %d; want increasing ids", i, ids[i], ids[i-1])
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	found, changed := 0, false
	for _, s := range n.active {
		f := &n.flows[s]
		i, ok := slices.BinarySearch(ids, f.id)
		if !ok {
			continue
		}
		found++
		c := bitsPerSec[i]
		if c == 0 {
			c = math.Inf(1)
		}
		if f.held {
			n.sideOf(s).cap0 = c
			continue
		}
		if f.cap == c {
			continue
		}
		f.cap = c
		n.noteFlow(s)
		changed = true
	}
	if changed {
		n.dirty = true
		n.armAt(n.s.Now())
	}
	return found, nil
}
