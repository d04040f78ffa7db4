package report

import (
	"cmp"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
)

// topQueuePorts is how many ports the queue heatmap shows one by one (those with the deepest
// peak queue); every tier also gets one aggregate row.
const topQueuePorts = 24

// interval is one sample interval of links.csv, in microseconds.
type interval struct{ start, end float64 }

// linksData is what the report takes from links.csv, aggregated while reading so a file of a
// million (port, interval) rows costs memory only for the ports that queued.
type linksData struct {
	rows      int
	step      float64     // the interval's length (us): end_us - start_us of the first row
	intervals []interval  // ascending start, without holes: silent intervals filled in
	planes    []int       // planes of the host NIC ports (tier -1), ascending
	nicTx     [][]float64 // [plane index][interval]: wire bytes the plane's NIC ports sent
	tiers     []int       // tiers seen (-1 = host NIC ports), ascending
	tierQ     [][]float64 // [tier index][interval]: deepest queue over the tier's ports (bytes)
	top       []portQueue // up to topQueuePorts ports by peak queue, deepest first, ties by name
	maxQueue  float64     // deepest queue anywhere (bytes)
}

// portQueue is one port's queue depth per interval (bytes).
type portQueue struct {
	name string
	tier int
	peak float64
	q    []float64 // [interval]
}

// readLinks reads links.csv (docs/outputs.md). Required columns: start_us, end_us, port,
// plane, tier, tx_bytes, queue_max_bytes. The file has no row for a port in an interval where
// it did nothing: such cells are zero, and intervals with no row at all are filled in (see
// intervalSlots). Errors are *FileError values naming file, line and column.
func readLinks(file string, r io.Reader) (*linksData, error) {
	t, err := newCSVTable(file, r, "start_us", "end_us", "port", "plane", "tier", "tx_bytes", "queue_max_bytes")
	if err != nil {
		return nil, err
	}
	type cell struct {
		iv int
		q  float64
	}
	type portAgg struct {
		name  string
		tier  int
		peak  float64
		cells []cell // intervals with a non-empty queue, raw interval indexes
	}
	var (
		rawIvs []interval
		ivOf   = map[float64]int{} // start_us -> raw interval index
		nicTx  = map[int][]float64{}
		tierQ  = map[int][]float64{}
		portOf = map[string]int{}
		ports  []portAgg
		d      = &linksData{}
	)
	grow := func(s []float64, i int) []float64 {
		for len(s) <= i {
			s = append(s, 0)
		}
		return s
	}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		d.rows++
		start, err := t.nonNeg("start_us")
		if err != nil {
			return nil, err
		}
		end, err := t.float("end_us")
		if err != nil {
			return nil, err
		}
		if end <= start {
			return nil, t.cellErr("end_us", errors.New("interval ends at or before its start_us"))
		}
		plane, err := t.int("plane")
		if err != nil {
			return nil, err
		}
		tier, err := t.int("tier")
		if err != nil {
			return nil, err
		}
		tx, err := t.nonNeg("tx_bytes")
		if err != nil {
			return nil, err
		}
		q, err := t.nonNeg("queue_max_bytes")
		if err != nil {
			return nil, err
		}
		port := t.str("port")
		if port == "" {
			return nil, t.cellErr("port", errors.New("empty port name"))
		}
		iv, ok := ivOf[start]
		if !ok {
			iv = len(rawIvs)
			ivOf[start] = iv
			rawIvs = append(rawIvs, interval{start, end})
		}
		rawIvs[iv].end = max(rawIvs[iv].end, end)
		if tier == -1 {
			nicTx[plane] = grow(nicTx[plane], iv)
			nicTx[plane][iv] += tx
		}
		tq := grow(tierQ[tier], iv)
		tq[iv] = max(tq[iv], q)
		tierQ[tier] = tq
		if q > 0 {
			pi, ok := portOf[port]
			if !ok {
				pi = len(ports)
				portOf[port] = pi
				ports = append(ports, portAgg{name: port, tier: tier})
			}
			p := &ports[pi]
			p.peak = max(p.peak, q)
			p.cells = append(p.cells, cell{iv, q})
			d.maxQueue = max(d.maxQueue, q)
		}
	}

	// Intervals in time order with the silent ones filled in, and each raw index's place.
	var pos []int
	d.intervals, pos = intervalSlots(rawIvs)
	if len(rawIvs) > 0 {
		d.step = rawIvs[0].end - rawIvs[0].start
	}
	n := len(d.intervals)
	reorder := func(raw []float64) []float64 {
		out := make([]float64, n)
		for i, v := range raw {
			out[pos[i]] = v
		}
		return out
	}
	d.planes = sortedKeys(nicTx)
	for _, p := range d.planes {
		d.nicTx = append(d.nicTx, reorder(nicTx[p]))
	}
	d.tiers = sortedKeys(tierQ)
	for _, k := range d.tiers {
		d.tierQ = append(d.tierQ, reorder(tierQ[k]))
	}
	slices.SortFunc(ports, func(a, b portAgg) int {
		return cmp.Or(cmp.Compare(b.peak, a.peak), cmp.Compare(a.name, b.name))
	})
	for _, p := range ports[:min(len(ports), topQueuePorts)] {
		pq := portQueue{name: p.name, tier: p.tier, peak: p.peak, q: make([]float64, n)}
		for _, c := range p.cells {
			pq.q[pos[c.iv]] = max(pq.q[pos[c.iv]], c.q)
		}
		d.top = append(d.top, pq)
	}
	return d, nil
}

// sortedKeys returns the keys of m in ascending order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// maxSlots bounds the intervals readLinks fills in on links.csv's grid: the runner keeps at
// most about a million (port, interval) cells, so no file it writes has more intervals.
const maxSlots = 1 << 20

// intervalSlots puts the intervals links.csv has rows for (raw, in file order) on a time line
// without holes, and returns it with each raw interval's index in it. links.csv leaves out
// the (port, interval) rows where nothing happened, so an interval where no port did anything
// has no row at all: the intervals in between are restored as slots with every value zero, so
// a plot drops to zero over silence instead of joining the busy intervals either side of it.
//
// The runner's intervals are a regular grid from time 0 (every row's end_us - start_us is the
// interval). When the rows fit such a grid, the missing intervals are filled in one by one
// (times rounded as the file rounds them); otherwise (a hand-made or irregular file), each
// hole between consecutive intervals, and the one before the first, becomes one slot.
func intervalSlots(raw []interval) ([]interval, []int) {
	order := make([]int, len(raw))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(raw[a].start, raw[b].start) })
	pos := make([]int, len(raw))
	if len(raw) == 0 {
		return nil, pos
	}
	if slots, ok := gridSlots(raw, order, pos); ok {
		return slots, pos
	}
	// Irregular: the intervals as they are, and one slot for each hole.
	var slots []interval
	const tol = 0.002 // us: two roundings of links.csv's 3 decimals
	prevEnd := 0.0
	for _, i := range order {
		iv := raw[i]
		if iv.start > prevEnd+tol {
			slots = append(slots, interval{prevEnd, iv.start})
		}
		pos[i] = len(slots)
		slots = append(slots, iv)
		prevEnd = max(prevEnd, iv.end)
	}
	return slots, pos
}

// gridSlots fills in raw's intervals (sorted by order) on the regular grid of their common
// length, writing each one's slot into pos; ok is false when they are not on one grid or it
// would exceed maxSlots.
func gridSlots(raw []interval, order, pos []int) (slots []interval, ok bool) {
	dt := raw[order[0]].end - raw[order[0]].start
	// Starts and ends carry 3 decimals, so a length may be off by 0.001 us and a gap of k
	// intervals by k x that.
	same := func(a, b float64) bool { return math.Abs(a-b) <= 0.0021+1e-9*math.Abs(b) }
	steps := make([]int, len(order)) // slots from the previous interval's start (the first: from 0)
	total := 0
	for j, i := range order {
		iv := raw[i]
		if !same(iv.end-iv.start, dt) {
			return nil, false
		}
		from := 0.0
		if j > 0 {
			from = raw[order[j-1]].start
		}
		gap := iv.start - from
		k := math.Round(gap / dt)
		if j > 0 && k < 1 || !same(gap, k*dt) && math.Abs(gap/dt-k) > 0.01 {
			return nil, false
		}
		if total += int(k); total >= maxSlots {
			return nil, false
		}
		steps[j] = int(k)
	}
	slots = make([]interval, 0, total+1)
	from := 0.0
	for j, i := range order {
		iv := raw[i]
		if k := steps[j]; j == 0 && k > 0 || k > 1 {
			// k-1 silent intervals between the previous start and this one (k before the
			// first), evenly spaced.
			first := 1
			if j == 0 {
				first = 0
			}
			w := (iv.start - from) / float64(k)
			for m := first; m < k; m++ {
				slots = append(slots, interval{from + float64(m)*w, from + float64(m+1)*w})
			}
		}
		pos[i] = len(slots)
		slots = append(slots, iv)
		from = iv.start
	}
	return slots, true
}

// colGroups splits n consecutive columns into at most maxCols groups of equal width (the last
// may be narrower) and returns each group's [lo, hi) bounds. It downsamples long time series:
// a heatmap cell then shows the deepest queue of its group, a throughput point the group's mean.
func colGroups(n, maxCols int) [][2]int {
	if n == 0 {
		return nil
	}
	w := (n + maxCols - 1) / maxCols
	var g [][2]int
	for lo := 0; lo < n; lo += w {
		g = append(g, [2]int{lo, min(n, lo+w)})
	}
	return g
}

// tierName names a links.csv tier for a legend or an axis: host NIC ports, T0, T1, ...
func tierName(tier int) string {
	if tier < 0 {
		return "NIC ports"
	}
	return "T" + strconv.Itoa(tier)
}
