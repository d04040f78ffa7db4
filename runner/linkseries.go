package runner

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// maxLinkCells bounds the (port, interval) cells a link series keeps: 24 bytes each in
// memory and up to about 60 bytes each in links.csv, so 1 Mi cells is at most about 25 MB and
// 60 MB.
const maxLinkCells = 1 << 20

// LinkSeries is every port's traffic over consecutive intervals, for links.csv: bytes sent,
// drops, the deepest queue seen at the samples in the interval and the time-averaged queue. It is fed at each queue
// sample (run.sample_interval) and keeps at most about maxLinkCells cells: when full, adjacent
// intervals merge and the interval doubles, so a run of any length keeps a bounded number of
// rows at the finest resolution that fits.
type LinkSeries struct {
	net      *fabric.Network
	ports    int
	interval sim.Time // current interval length
	cap      int      // intervals kept before a merge
	starts   []sim.Time
	tx       []int64   // [interval*ports + port]: bytes put on the wire
	drops    []int64   // packets dropped at the port (every reason)
	qmax     []int64   // deepest queue (bytes) at the samples
	area     []float64 // integral of the bytes queued over the interval, byte-picoseconds
	lastTx   []int64
	lastDrop []int64
	lastArea []float64
	settled  sim.Time // the time the last settle read the counters at
	// PFC (nil when it is off): picoseconds each egress spent paused and the pauses it
	// received, per interval, for pauses.csv.
	paused     []int64
	pauses     []int64
	lastPaused []int64
	lastPauses []int64
	// fl, at flow level, feeds the series instead of a packet network (net nil): flowlinks.go.
	fl *flowLinkFeed
}

func newLinkSeries(net *fabric.Network, interval sim.Time) *LinkSeries {
	n := len(net.Ports)
	// Bytes are read every 8 samples at most: a finer series would cost more than the run.
	ls := &LinkSeries{net: net, ports: n, interval: 8 * interval, lastTx: make([]int64, n), lastDrop: make([]int64, n),
		lastArea: make([]float64, n)}
	ls.cap = max(16, maxLinkCells/max(n, 1))
	if net.PFCOn() {
		ls.lastPaused, ls.lastPauses = make([]int64, n), make([]int64, n)
	}
	return ls
}

// sample records the queue depths into the interval that holds now (intervals are aligned to
// multiples of the interval length from time 0), opening intervals as time passes and merging
// them when the series is full. Bytes sent and drops are read from the port counters only when
// a sample crosses into a new interval (and at finish), which keeps a sample cheap.
func (ls *LinkSeries) sample(now sim.Time) {
	t := max(now-1, 0) // a sample at now covers the time just before it
	k := int(t / ls.interval)
	// Credit the last open interval with the bytes up to its end: at the sample that lands on
	// its end (samples fall on interval boundaries), or else the first one past it.
	if n := len(ls.starts); n > 0 && now >= ls.starts[n-1]+ls.interval && ls.settled < ls.starts[n-1]+ls.interval {
		ls.settle(now, n-1)
		ls.settled = now
	}
	for k >= len(ls.starts) {
		if len(ls.starts) == ls.cap {
			ls.merge()
			k = int(t / ls.interval)
			continue
		}
		ls.starts = append(ls.starts, sim.Time(len(ls.starts))*ls.interval)
		ls.tx = append(ls.tx, make([]int64, ls.ports)...)
		ls.drops = append(ls.drops, make([]int64, ls.ports)...)
		ls.qmax = append(ls.qmax, make([]int64, ls.ports)...)
		ls.area = append(ls.area, make([]float64, ls.ports)...)
		if ls.lastPaused != nil {
			ls.paused = append(ls.paused, make([]int64, ls.ports)...)
			ls.pauses = append(ls.pauses, make([]int64, ls.ports)...)
		}
	}
	if ls.fl != nil {
		return // flow level: no queues
	}
	base := k * ls.ports
	for i := range ls.net.Ports {
		if q := ls.net.Ports[i].QueueBytes(); q > ls.qmax[base+i] {
			ls.qmax[base+i] = q
		}
	}
}

// settle credits interval k with every port's bytes sent, drops and queue area (the fabric's
// integral of bytes queued over time) since the last settle.
func (ls *LinkSeries) settle(now sim.Time, k int) {
	if ls.fl != nil {
		ls.fl.settle(now, k)
		return
	}
	base := k * ls.ports
	for i := range ls.net.Ports {
		p := &ls.net.Ports[i]
		tot := p.Totals()
		tx := p.SentBytes(now)
		var d int64
		for _, x := range tot.Drops {
			d += x
		}
		ls.tx[base+i] += tx - ls.lastTx[i]
		ls.drops[base+i] += d - ls.lastDrop[i]
		ls.lastTx[i], ls.lastDrop[i] = tx, d
		a := tot.DepthArea(now)
		ls.area[base+i] += a - ls.lastArea[i]
		ls.lastArea[i] = a
		if ls.lastPaused != nil {
			st := ls.net.PFCStats(fabric.PortID(i), now)
			ls.paused[base+i] += int64(st.PausedTime) - ls.lastPaused[i]
			ls.pauses[base+i] += st.PausesReceived - ls.lastPauses[i]
			ls.lastPaused[i], ls.lastPauses[i] = int64(st.PausedTime), st.PausesReceived
		}
	}
}

// finish credits the last interval with what happened up to now (the run's end).
func (ls *LinkSeries) finish(now sim.Time) {
	if len(ls.starts) > 0 {
		ls.settle(now, len(ls.starts)-1)
	}
}

// merge halves the number of intervals: pairs (0,1), (2,3), ... become one interval of twice
// the length (an odd last one stays, covering its pair's span).
func (ls *LinkSeries) merge() {
	n := len(ls.starts)
	ls.interval *= 2
	k := 0
	for j := 0; j < n; j += 2 {
		ls.starts[k] = sim.Time(k) * ls.interval
		for i := 0; i < ls.ports; i++ {
			a, b := k*ls.ports+i, j*ls.ports+i
			ls.tx[a], ls.drops[a], ls.qmax[a], ls.area[a] = ls.tx[b], ls.drops[b], ls.qmax[b], ls.area[b]
			if j+1 < n {
				c := (j+1)*ls.ports + i
				ls.tx[a] += ls.tx[c]
				ls.drops[a] += ls.drops[c]
				ls.qmax[a] = max(ls.qmax[a], ls.qmax[c])
				ls.area[a] += ls.area[c]
			}
			if ls.paused != nil {
				ls.paused[a], ls.pauses[a] = ls.paused[b], ls.pauses[b]
				if j+1 < n {
					c := (j+1)*ls.ports + i
					ls.paused[a] += ls.paused[c]
					ls.pauses[a] += ls.pauses[c]
				}
			}
		}
		k++
	}
	ls.starts = ls.starts[:k]
	ls.tx, ls.drops, ls.qmax, ls.area = ls.tx[:k*ls.ports], ls.drops[:k*ls.ports], ls.qmax[:k*ls.ports], ls.area[:k*ls.ports]
	if ls.paused != nil {
		ls.paused, ls.pauses = ls.paused[:k*ls.ports], ls.pauses[:k*ls.ports]
	}
}

// HasPauses reports whether the series recorded PFC pauses (PFC on): pauses.csv applies.
func (ls *LinkSeries) HasPauses() bool { return ls.lastPaused != nil }

// PausesCSVHeader is the header of pauses.csv: one row per egress port and interval in which
// it was paused.
var PausesCSVHeader = []string{"time_us", "port", "node", "paused_frac", "pause_events"}

// WritePausesCSV writes pauses.csv (PFC runs): for each interval (time_us is its start; the
// intervals are links.csv's), every egress port paused at some point in it, with the
// fraction of the interval it spent paused (all classes summed, so up to the number of
// paused classes) and the pauses it received (XOFFs that began a pause; refreshes not
// counted). Errors: the writer's.
func (ls *LinkSeries) WritePausesCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(PausesCSVHeader); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(round3(x), 'f', -1, 64) }
	for k, start := range ls.starts {
		if ls.paused == nil {
			break
		}
		for i := range ls.net.Ports {
			c := k*ls.ports + i
			if ls.paused[c] == 0 && ls.pauses[c] == 0 {
				continue
			}
			p := &ls.net.Ports[i]
			row := []string{f(start.Micros()), p.Name, ls.net.Nodes[p.Node].Name,
				strconv.FormatFloat(float64(ls.paused[c])/float64(ls.interval), 'f', 4, 64), strconv.FormatInt(ls.pauses[c], 10)}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// Interval returns the series' interval length (it doubles as the series merges).
func (ls *LinkSeries) Interval() sim.Time { return ls.interval }

// Intervals returns how many intervals the series holds.
func (ls *LinkSeries) Intervals() int { return len(ls.starts) }

// LinksCSVHeader is the header of links.csv: one row per port (link direction) and interval.
var LinksCSVHeader = []string{"start_us", "end_us", "port", "node", "plane", "tier", "rate_gbps", "util_pct", "tx_bytes", "queue_max_bytes", "drops", "queue_mean_bytes"}

// WriteCSV writes links.csv: for each interval, every port that carried traffic, dropped or
// queued in it. util_pct is tx_bytes over what the port's rate could send in the interval;
// queue_mean_bytes is the time-averaged bytes queued over the interval (the fabric's exact
// integral, not a mean of the samples).
// Errors: the writer's.
func (ls *LinkSeries) WriteCSV(w io.Writer) error {
	if ls.fl != nil {
		return ls.fl.writeCSV(w)
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(LinksCSVHeader); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(round3(x), 'f', -1, 64) }
	for k, start := range ls.starts {
		end := start + ls.interval
		for i := range ls.net.Ports {
			c := k*ls.ports + i
			if ls.tx[c] == 0 && ls.drops[c] == 0 && ls.qmax[c] == 0 && ls.area[c] == 0 {
				continue
			}
			p := &ls.net.Ports[i]
			node := &ls.net.Nodes[p.Node]
			util := float64(ls.tx[c]) * 8 / (float64(p.Rate) * (end - start).Seconds()) * 100
			plane := int(node.Plane)
			if node.Kind == fabric.Host {
				plane = int(p.Local) // a NIC port's plane is its port number
			}
			row := []string{f(start.Micros()), f(end.Micros()), p.Name, node.Name, strconv.Itoa(plane), strconv.Itoa(int(node.Tier)),
				f(float64(p.Rate) / 1e9), f(util), strconv.FormatInt(ls.tx[c], 10), strconv.FormatInt(ls.qmax[c], 10), strconv.FormatInt(ls.drops[c], 10),
				f(ls.area[c] / float64(end-start))}
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
