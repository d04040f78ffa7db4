package report

import (
	"cmp"
	"errors"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// interval is one sample interval of links.csv, in microseconds.
type interval struct{ start, end float64 }

// linksData is what the report takes from links.csv: the intervals (silent ones filled in),
// the bytes each class of port sent per plane and interval, and every port's non-empty cells,
// from which the plots take the part up to the traffic's end (see shown).
type linksData struct {
	rows      int
	step      float64     // the interval's length (us): end_us - start_us of the first row
	intervals []interval  // ascending start, without holes: silent intervals filled in
	planes    []int       // planes of the host NIC ports (tier -1), ascending
	nicTx     [][]float64 // [plane index][interval]: wire bytes the plane's NIC ports sent
	tiers     []int       // tiers seen (-1 = host NIC ports), ascending
	classes   []portClass // classes of port seen, in the order a packet crosses them
	ports     []portSeries
	hasRate   bool // every port has a rate_gbps: utilisation can be computed
}

// portClass is a kind of port: host NIC ports, or a tier's up or down ports (from the port
// name's last part, "up3", "down5"; anything else is the tier's other ports), with, per plane,
// the ports' summed rate and the bytes they sent per interval.
type portClass struct {
	tier   int
	dir    string      // "up", "down" or "" (NIC ports and ports named otherwise)
	planes []int       // ascending
	cap    []float64   // [plane index]: summed rate_gbps of the class's ports in the plane
	ports  []int       // [plane index]: how many ports
	tx     [][]float64 // [plane index][interval]: wire bytes sent
}

// name labels the class: "NIC ports", "T0 up", "T1 down", "T2 ports".
func (c portClass) name() string {
	if c.tier < 0 {
		return "NIC ports"
	}
	if c.dir == "" {
		return tierName(c.tier) + " ports"
	}
	return tierName(c.tier) + " " + c.dir
}

// order sorts classes as a packet crosses them: NIC ports, the up ports tier by tier, then the
// down ports from the top tier down, other ports last.
func (c portClass) order() (int, int) {
	switch {
	case c.tier < 0:
		return 0, 0
	case c.dir == "up":
		return 1, c.tier
	case c.dir == "down":
		return 2, -c.tier
	}
	return 3, c.tier
}

// portSeries is one port of links.csv: its rate and its cells (intervals with a row whose
// tx_bytes or queue_max_bytes is not zero).
type portSeries struct {
	name  string
	tier  int
	plane int
	class int     // index into linksData.classes
	rate  float64 // Gb/s; 0 when links.csv has no rate_gbps
	cells []portCell
}

// portCell is a port's bytes sent and deepest queue in interval iv.
type portCell struct {
	iv    int
	tx, q float64
}

// portDir is the direction a switch port's name gives ("p0.t0-1.up3": "up"), or "".
func portDir(port string) string {
	last := port[strings.LastIndexByte(port, '.')+1:]
	base := strings.TrimRight(last, "0123456789")
	if (base == "up" || base == "down") && len(base) < len(last) {
		return base
	}
	return ""
}

// readLinks reads links.csv (docs/outputs.md). Required columns: start_us, end_us, port,
// plane, tier, tx_bytes, queue_max_bytes; rate_gbps (optional) gives the utilisation. The file
// has no row for a port in an interval where it did nothing: such cells are zero, and
// intervals with no row at all are filled in (see intervalSlots). Errors are *FileError values
// naming file, line and column.
func readLinks(file string, r io.Reader) (*linksData, error) {
	t, err := newCSVTable(file, r, "start_us", "end_us", "port", "plane", "tier", "tx_bytes", "queue_max_bytes")
	if err != nil {
		return nil, err
	}
	_, withRate := t.col["rate_gbps"]
	type classKey struct {
		tier int
		dir  string
	}
	type classAgg struct {
		key   classKey
		cap   map[int]float64
		ports map[int]int
		tx    map[int][]float64
	}
	var (
		rawIvs  []interval
		ivOf    = map[float64]int{} // start_us -> raw interval index
		nicTx   = map[int][]float64{}
		tiers   = map[int]bool{}
		portOf  = map[string]int{}
		classOf = map[classKey]int{}
		classes []classAgg
		d       = &linksData{hasRate: withRate}
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
		rate := 0.0
		if withRate {
			if rate, err = t.nonNeg("rate_gbps"); err != nil {
				return nil, err
			}
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
		tiers[tier] = true
		pi, ok := portOf[port]
		if !ok {
			key := classKey{tier: tier}
			if tier >= 0 {
				key.dir = portDir(port)
			}
			ci, ok := classOf[key]
			if !ok {
				ci = len(classes)
				classOf[key] = ci
				classes = append(classes, classAgg{key: key, cap: map[int]float64{}, ports: map[int]int{}, tx: map[int][]float64{}})
			}
			pi = len(d.ports)
			portOf[port] = pi
			d.ports = append(d.ports, portSeries{name: port, tier: tier, plane: plane, class: ci})
			classes[ci].ports[plane]++
		}
		p := &d.ports[pi]
		if p.rate == 0 && rate > 0 {
			p.rate = rate
			classes[p.class].cap[p.plane] += rate
		}
		c := &classes[p.class]
		c.tx[p.plane] = grow(c.tx[p.plane], iv)
		c.tx[p.plane][iv] += tx
		if tx > 0 || q > 0 {
			p.cells = append(p.cells, portCell{iv: iv, tx: tx, q: q})
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
	d.tiers = sortedKeys(tiers)
	for i := range d.ports {
		p := &d.ports[i]
		for k := range p.cells {
			p.cells[k].iv = pos[p.cells[k].iv]
		}
		slices.SortStableFunc(p.cells, func(a, b portCell) int { return cmp.Compare(a.iv, b.iv) })
		if p.rate == 0 {
			d.hasRate = false
		}
	}
	// Classes in crossing order; ports renumbered to match.
	order := make([]int, len(classes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ca := portClass{tier: classes[a].key.tier, dir: classes[a].key.dir}
		cb := portClass{tier: classes[b].key.tier, dir: classes[b].key.dir}
		a1, a2 := ca.order()
		b1, b2 := cb.order()
		return cmp.Or(cmp.Compare(a1, b1), cmp.Compare(a2, b2), cmp.Compare(ca.dir, cb.dir))
	})
	newIndex := make([]int, len(classes))
	for ni, oi := range order {
		newIndex[oi] = ni
		c := classes[oi]
		pc := portClass{tier: c.key.tier, dir: c.key.dir, planes: sortedKeys(c.ports)}
		for _, pl := range pc.planes {
			pc.cap = append(pc.cap, c.cap[pl])
			pc.ports = append(pc.ports, c.ports[pl])
			pc.tx = append(pc.tx, reorder(c.tx[pl]))
		}
		d.classes = append(d.classes, pc)
	}
	for i := range d.ports {
		d.ports[i].class = newIndex[d.ports[i].class]
	}
	slices.SortFunc(d.ports, func(a, b portSeries) int { return cmp.Compare(a.name, b.name) })
	return d, nil
}

// shown is how many of the intervals the plots show: those that start before tEnd (the
// traffic's end; every interval when tEnd is not positive), at least one.
func (l *linksData) shown(tEnd float64) int {
	n := len(l.intervals)
	if !(tEnd > 0) {
		return n
	}
	k := sort.Search(n, func(i int) bool { return l.intervals[i].start >= tEnd-1e-9 })
	return max(min(k, n), min(1, n))
}

// classUtil is the utilisation of class ci's ports in plane index pi over intervals [lo, hi):
// the bytes they sent over what their summed rate could send in that time (0 to 1).
func (l *linksData) classUtil(ci, pi, lo, hi int) float64 {
	c := l.classes[ci]
	var bytes, us float64
	for k := lo; k < hi; k++ {
		bytes += c.tx[pi][k]
		us += l.intervals[k].end - l.intervals[k].start
	}
	if !(c.cap[pi] > 0) || !(us > 0) {
		return math.NaN()
	}
	return bytes * 8 / (c.cap[pi] * us * 1e3)
}

// queueRow is one row of the queue heatmap: a tier's deepest queue over its ports, or one
// port's, per interval (bytes).
type queueRow struct {
	label string
	peak  float64
	q     []float64 // [interval], the first n shown
}

// queueRows is the heatmap's rows over the first n intervals: for each tier, one row of the
// deepest queue over its ports ("max over T0") and then up to perTier of its ports with the
// deepest peaks, deepest first (ties by name); tiers in ascending order. maxQ is the deepest
// queue in those intervals. A tier whose ports never queued gets no rows.
func (l *linksData) queueRows(n, perTier int) (rows []queueRow, maxQ float64) {
	for _, tier := range l.tiers {
		agg := queueRow{label: "max over " + tierName(tier), q: make([]float64, n)}
		var ports []queueRow
		for _, p := range l.ports {
			if p.tier != tier {
				continue
			}
			var r queueRow
			for _, c := range p.cells {
				if c.iv >= n || c.q == 0 {
					continue
				}
				if r.q == nil {
					r = queueRow{label: p.name, q: make([]float64, n)}
				}
				r.q[c.iv] = max(r.q[c.iv], c.q)
				r.peak = max(r.peak, c.q)
				agg.q[c.iv] = max(agg.q[c.iv], c.q)
			}
			if r.peak > 0 {
				ports = append(ports, r)
				agg.peak = max(agg.peak, r.peak)
			}
		}
		if agg.peak == 0 {
			continue
		}
		slices.SortFunc(ports, func(a, b queueRow) int {
			return cmp.Or(cmp.Compare(b.peak, a.peak), cmp.Compare(a.label, b.label))
		})
		rows = append(rows, agg)
		rows = append(rows, ports[:min(len(ports), perTier)]...)
		maxQ = max(maxQ, agg.peak)
	}
	return rows, maxQ
}

// linkLoad is one port's utilisation over the shown intervals: the mean (its bytes over what
// its rate could send in them) and the peak interval's.
type linkLoad struct {
	port               *portSeries
	mean, peak         float64
	peakAt             float64 // start of the peak interval (us)
	queuePeak          float64 // bytes
	rankMean, rankPeak int     // 1-based ranks by mean and by peak (0: not in the top)
}

// linkLoads is every port's load over the first n intervals (ports without a rate left out).
func (l *linksData) linkLoads(n int, tEnd float64) []linkLoad {
	if n == 0 {
		return nil
	}
	// The mean is over the whole time to the traffic's end (from the run's start, 0), not over
	// the intervals links.csv happens to have rows for: a port idle for most of the run is
	// not busy on average (the topology picture's figure, the same).
	span := max(tEnd, l.intervals[n-1].end)
	if !(span > 0) {
		span = 0
		for _, iv := range l.intervals[:n] {
			span += iv.end - iv.start
		}
	}
	var out []linkLoad
	for i := range l.ports {
		p := &l.ports[i]
		if !(p.rate > 0) {
			continue
		}
		ld := linkLoad{port: p}
		var bytes float64
		for _, c := range p.cells {
			if c.iv >= n {
				break
			}
			bytes += c.tx
			iv := l.intervals[c.iv]
			u := c.tx * 8 / (p.rate * (iv.end - iv.start) * 1e3)
			if u > ld.peak {
				ld.peak, ld.peakAt = u, iv.start
			}
			ld.queuePeak = max(ld.queuePeak, c.q)
		}
		ld.mean = bytes * 8 / (p.rate * span * 1e3)
		out = append(out, ld)
	}
	return out
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
