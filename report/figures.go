package report

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot element ids: each plot is <svg class="plot" id=...>, each missing one a
// <p class="nodata" id=...-nodata>.
const (
	idFCT        = "fct-cdf"
	idGoodput    = "goodput-cdf"
	idThroughput = "throughput" // compare pages: each run's NIC throughput
	idUtil       = "utilisation"
	idHottest    = "hottest-links" // a table, under the utilisation plots
	idBusbw      = "busbw"
	idQueue      = "queue-heatmap"
	idPauses     = "pauses"
	idEV         = "ev-states"
	idFaults     = "fault-timeline"
)

// figure is one plot of a page, or the note saying why it is missing.
type figure struct {
	ID      string
	Title   string
	Caption string        // what the plot shows, one or two sentences
	SVG     template.HTML // the inline <svg>; empty when Note is set
	Note    string        // "no data: ..." when the plot could not be drawn
	Table   *htmlTable    // a table that belongs with the plot, under its caption; may be nil
}

// noData builds the note of a missing plot.
func noData(id, title, note string) figure {
	return figure{ID: id, Title: title, Note: "no data: " + note}
}

// why a file may be absent from a results folder (docs/outputs.md).
var whyAbsent = map[string]string{
	fileSummary:     "every run writes it; is this a results folder?",
	fileFlows:       "traffic runs write it",
	fileLinks:       "packet-level runs write it",
	fileEV:          "MRC runs write it",
	filePauses:      "runs with PFC write it",
	fileFaults:      "runs with faults write it",
	fileCollectives: "collective workloads write it",
	filePower:       "training workloads write it",
	fileSteps:       "training workloads write it",
}

// absent is the note for a file the run did not write.
func absent(file string) string {
	return fmt.Sprintf("%s not written by this run (%s)", file, whyAbsent[file])
}

// fctFigure is the CDF of flow completion times or, for raw traffic (which has no completion
// time), of per-flow goodput. empty says why flows.csv may have no rows in this run; s gives
// raw traffic's latency percentiles (may be nil).
func fctFigure(f *flowsData, s *summaryData, empty string) (figure, error) {
	const title = "Flow completion time (CDF)"
	switch {
	case f == nil:
		return noData(idFCT, title, absent(fileFlows)), nil
	case f.rows == 0:
		return noData(idFCT, title, "flows.csv has no rows"+empty), nil
	case len(f.fct) == 0 && f.raw == f.rows:
		return goodputFigure(f, s)
	case len(f.fct) == 0:
		note := fmt.Sprintf("none of the %d transfers in flows.csv finished (%s): %s", f.unfinished,
			strings.Join(nonRaw(f.transports), ", "), neverFinished(f.unfinished))
		if f.raw > 0 {
			note += fmt.Sprintf("; %d raw flows have no completion time", f.raw)
		}
		return noData(idFCT, title, note), nil
	}
	pn := newPanel("", "flow completion time (us)", "fraction of flows").grid()
	if f.fct[0] > 0 && f.fct[len(f.fct)-1]/f.fct[0] > 100 {
		pn.logX()
	}
	name := "all flows"
	if tr := nonRaw(f.transports); len(tr) == 1 {
		name = tr[0]
	}
	if err := pn.line(0, name, cdfPoints(f.fct, maxLinePts/2)); err != nil {
		return figure{}, err
	}
	pn.p.Y.Min, pn.p.Y.Max = 0, 1
	svg, err := figureSVG(idFCT, title, 0, pn)
	caption := fmt.Sprintf("%d flows completed: p50 %s us, p99 %s us, max %s us.", len(f.fct),
		fmtNum(quantile(f.fct, 0.5)), fmtNum(quantile(f.fct, 0.99)), fmtNum(f.fct[len(f.fct)-1]))
	if f.unfinished > 0 {
		caption += fmt.Sprintf(" %d of %d never finished and are not in the curve.", f.unfinished, f.rows-f.raw)
	}
	if f.raw > 0 {
		caption += fmt.Sprintf(" %d raw flows have no completion time and are not in the curve.", f.raw)
	}
	return figure{ID: idFCT, Title: title, Caption: caption, SVG: svg}, err
}

// neverFinished says what n transfers with an empty done_us and fct_us mean.
func neverFinished(n int) string {
	if n == 1 {
		return "it never finished (done_us and fct_us are empty: it was still in flight or stuck when the run ended)"
	}
	return fmt.Sprintf("all %d never finished (done_us and fct_us are empty: they were still in flight or stuck when the run ended)", n)
}

// nonRaw is transports without raw.
func nonRaw(transports []string) []string {
	var out []string
	for _, t := range transports {
		if t != transportRaw {
			out = append(out, t)
		}
	}
	return out
}

// goodputFigure is the CDF of raw flows' goodput: raw traffic is paced packets with no
// transport, so it has no completion time, but each flow's delivered bytes over its sending
// time say how well the fabric carried it.
func goodputFigure(f *flowsData, s *summaryData) (figure, error) {
	const title = "Per-flow goodput of raw traffic (CDF)"
	if len(f.goodput) == 0 {
		return noData(idGoodput, title, fmt.Sprintf("flows.csv has %d raw flows (no completion time) and no goodput_gbps values", f.raw)), nil
	}
	pn := newPanel("", "per-flow goodput (Gb/s)", "fraction of flows").grid()
	if err := pn.line(0, "raw flows", cdfPoints(f.goodput, maxLinePts/2)); err != nil {
		return figure{}, err
	}
	pn.p.X.Min = 0
	pn.p.Y.Min, pn.p.Y.Max = 0, 1
	svg, err := figureSVG(idGoodput, title, 0, pn)
	g := f.goodput
	caption := fmt.Sprintf("Raw traffic has no completion time, so this is the goodput of each of its %d flows (goodput_gbps: wire bytes delivered whole over the flow's sending time): min %s, p50 %s, p99 %s, max %s Gb/s.",
		len(g), fmtNum(g[0]), fmtNum(quantile(g, 0.5)), fmtNum(quantile(g, 0.99)), fmtNum(g[len(g)-1]))
	if n := f.raw - len(g); n > 0 {
		caption += fmt.Sprintf(" %d raw flows give no goodput_gbps and are not in the curve.", n)
	}
	if lat := latencyText(s); lat != "" {
		caption += " One-way packet latency (summary.json): " + lat + "."
	}
	return figure{ID: idGoodput, Title: title, Caption: caption, SVG: svg}, err
}

// latencyText lists summary.json's latency percentiles ("p50 3.331 us, p99 12.175 us, ..."), or
// "" when it has none.
func latencyText(s *summaryData) string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, f := range s.figs {
		name, ok := strings.CutPrefix(f.path, "latency_")
		if !ok || !f.num || strings.ContainsAny(name, ".[") {
			continue
		}
		name = strings.TrimSuffix(name, "_us")
		v, _ := s.number(f.path)
		parts = append(parts, name+" "+fmtNum(v)+" us")
	}
	return strings.Join(parts, ", ")
}

// quantile is the q-quantile of the ascending xs by the nearest rank.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// stepPoints draws per-interval values as steps: v[k] holds over groups' intervals.
func stepPoints(ivs []interval, groups [][2]int, v func(lo, hi int) float64) plotter.XYs {
	pts := make(plotter.XYs, 0, 2*len(groups))
	for _, g := range groups {
		y := v(g[0], g[1])
		pts = append(pts, plotter.XY{X: ivs[g[0]].start, Y: y}, plotter.XY{X: ivs[g[1]-1].end, Y: y})
	}
	return pts
}

// tailZero ends a per-interval step line at zero and holds it there until tMax: links.csv has
// no rows after the last interval in which something happened.
func tailZero(pts plotter.XYs, tMax float64) plotter.XYs {
	if n := len(pts); n > 0 && tMax > pts[n-1].X {
		pts = append(pts, plotter.XY{X: pts[n-1].X, Y: 0}, plotter.XY{X: tMax, Y: 0})
	}
	return pts
}

// tEnd is where a run's time plots end (us): the traffic's end, summary.json's duration_us
// (raw traffic: run.duration; transports and workloads: their last transfer or collective
// done, the JCT), else the transport's jct_us, else the latest time any file mentions
// (runData.tMax); a failure that starts later still shows. drain is a sentence for the
// captions when summary.json's end_us (drain included) is later and so cut, else "".
func (r *runData) tEnd() (end float64, drain string) {
	end, ok := r.summary.number("duration_us")
	key := "duration_us"
	if !ok || !(end > 0) {
		end, ok = r.summary.number("transport.jct_us")
		key = "transport.jct_us"
	}
	if !ok || !(end > 0) {
		return r.tMax(), ""
	}
	for _, s := range r.faultSpans() {
		end = max(end, s.at)
	}
	if e, ok := r.summary.number("end_us"); ok && e > end*(1+1e-9) {
		drain = fmt.Sprintf(" The time axis ends with the traffic at %s us (summary.json %s); the drain after it, to %s us (end_us), is not shown.", fmtNum(end), key, fmtNum(e))
	}
	return end, drain
}

// totalGbps is the mean rate all NIC ports sent at over intervals [lo, hi).
func (l *linksData) totalGbps(lo, hi int) float64 {
	var bytes, us float64
	for k := lo; k < hi; k++ {
		for pi := range l.planes {
			bytes += l.nicTx[pi][k]
		}
		us += l.intervals[k].end - l.intervals[k].start
	}
	return bytes * 8 / (us * 1e3)
}

// minBins is the fewest intervals of links.csv over the traffic under which a time plot's
// caption says links.csv is too coarse to show the traffic's shape.
const minBins = 20

// coarseNote says when the first n intervals of links.csv are too few to show the traffic up
// to tEnd, or "".
func coarseNote(l *linksData, n int, tEnd float64) string {
	if n >= minBins || len(l.intervals) == 0 {
		return ""
	}
	span := tEnd
	if !(span > 0) {
		span = l.intervals[len(l.intervals)-1].end
	}
	return fmt.Sprintf(" links.csv is too coarse for this run: its intervals are %s us, so the traffic's %s us spans only %d of them (a smaller run.sample_interval gives finer ones).",
		fmtNum(l.step), fmtNum(span), n)
}

// lineThumb is a legend thumbnail of a line style.
type lineThumb struct{ sty draw.LineStyle }

// Thumbnail implements plot.Thumbnailer.
func (t lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(t.sty, c.Min.X, y, c.Max.X, y)
}

// utilZoom is the y range of a utilisation panel whose lines are vals[plane][step]: [0, 1]
// (or less, when the class never came near its line rate), or, when over the busy steps (the
// planes' mean at least half its peak; at least 3 of them) every plane stays within a band
// narrow next to its level, that band padded: then a plane that falls behind the others (a
// failed link) shows as a dip however small.
func utilZoom(vals [][]float64) (lo, hi float64, zoomed bool) {
	if len(vals) == 0 || len(vals[0]) == 0 {
		return 0, 1, false
	}
	mean := make([]float64, len(vals[0]))
	for k := range mean {
		var n float64
		for _, v := range vals {
			if !math.IsNaN(v[k]) {
				mean[k] += v[k]
				n++
			}
		}
		if n > 0 {
			mean[k] /= n
		}
	}
	peak := slices.Max(mean)
	bLo, bHi := math.Inf(1), math.Inf(-1)
	busy := 0
	for k, m := range mean {
		if peak > 0 && m >= peak/2 {
			busy++
			for _, v := range vals {
				if !math.IsNaN(v[k]) {
					bLo, bHi = min(bLo, v[k]), max(bHi, v[k])
				}
			}
		}
	}
	top := 0.0
	for _, v := range vals {
		for _, x := range v {
			if !math.IsNaN(x) {
				top = max(top, x)
			}
		}
	}
	if busy >= 3 && bHi-bLo < 0.25*bHi {
		pad := max(0.15*(bHi-bLo), 0.002*bHi)
		return max(0, bLo-pad), bHi + pad, true
	}
	if top <= 0 {
		return 0, 1, false
	}
	return 0, min(1, top*1.1) + max(0, top-1), false
}

// utilFigure is the utilisation of each class of port (NIC ports, each tier's up and down
// ports) as a fraction of line rate, one small plot per class and one line per plane, over
// the intervals of links.csv up to the traffic's end tEnd; hot is the hottest-links table
// that goes under it.
func utilFigure(l *linksData, faults []faultSpan, tEnd float64) (figure, error) {
	const title = "Utilisation per tier and plane"
	switch {
	case l == nil:
		return noData(idUtil, title, absent(fileLinks)), nil
	case len(l.classes) == 0:
		return noData(idUtil, title, "links.csv has no rows"), nil
	case !l.hasRate:
		return noData(idUtil, title, "links.csv has no rate_gbps for some ports: utilisation needs each port's line rate"), nil
	}
	n := l.shown(tEnd)
	groups := colGroups(n, maxLinePts/2)
	xMax := tEnd
	if !(xMax > 0) {
		xMax = l.intervals[n-1].end
	}
	// One colour per plane across every panel.
	var planes []int
	for _, c := range l.classes {
		planes = append(planes, c.planes...)
	}
	slices.Sort(planes)
	planes = slices.Compact(planes)
	colourOf := map[int]int{}
	for i, p := range planes {
		colourOf[p] = i
	}
	var (
		panels []*plot.Plot
		zooms  []string
	)
	for ci, c := range l.classes {
		vals := make([][]float64, len(c.planes))
		for pi := range c.planes {
			vals[pi] = make([]float64, len(groups))
			for k, g := range groups {
				vals[pi][k] = l.classUtil(ci, pi, g[0], g[1])
			}
		}
		ports := 0
		for _, k := range c.ports {
			ports += k
		}
		pn := newPanel(fmt.Sprintf("%s (%d ports)", c.name(), ports), "", "").grid()
		pn.p.Title.TextStyle.Font = sans(9.5)
		pn.faults(faults, false)
		for pi, pl := range c.planes {
			pts := make(plotter.XYs, 0, 2*len(groups)+2)
			for k, g := range groups {
				pts = append(pts, plotter.XY{X: l.intervals[g[0]].start, Y: vals[pi][k]}, plotter.XY{X: l.intervals[g[1]-1].end, Y: vals[pi][k]})
			}
			if err := pn.line(colourOf[pl], fmt.Sprintf("plane %d", pl), tailZero(pts, xMax)); err != nil {
				return figure{}, err
			}
		}
		pn.timeAxis(xMax)
		lo, hi, zoomed := utilZoom(vals)
		pn.p.Y.Min, pn.p.Y.Max = lo, hi
		if zoomed {
			zooms = append(zooms, fmt.Sprintf("%s %.3g to %.3g", c.name(), lo, hi))
		}
		panels = append(panels, pn.p)
	}
	var leg legend
	for _, pl := range planes {
		i := colourOf[pl]
		leg.Add(fmt.Sprintf("plane %d", pl), lineThumb{draw.LineStyle{Color: seriesColor(i), Width: vg.Points(1.3), Dashes: seriesDashes(i)}})
	}
	if len(faults) > 0 {
		leg.Add("failure", &faultOverlay{})
	}
	svg, err := smallMultiples(idUtil, title, panels, leg, "time (us)", "fraction of line rate")
	caption := fmt.Sprintf("Bytes each class of port sent over what its ports' line rates could send, per plane (a port is one direction of a link: NIC ports send from hosts, up ports climb a tier, down ports descend), per interval of %s us of links.csv up to the traffic's end. Every port links.csv names is counted, so a failed link's plane dips; a port that never sent, queued or dropped anything has no row there and is not counted.",
		fmtNum(l.step))
	if len(zooms) > 0 {
		caption += " The y axes zoom where every plane stays in a narrow band while busy (values outside are cut): " + strings.Join(zooms, ", ") + "."
	}
	if len(groups) < n {
		caption += fmt.Sprintf(" %d intervals averaged into %d steps.", n, len(groups))
	}
	caption += coarseNote(l, n, tEnd)
	return figure{ID: idUtil, Title: title, Caption: caption, SVG: svg, Table: hottestTable(l, n, tEnd)}, err
}

// smallMultiples draws plots in a grid (one column for up to two, else two), their time axes
// aligned, with one legend for all of them in a column on the right (below them when it does
// not fit there) and the axis labels once for the figure.
func smallMultiples(id, label string, plots []*plot.Plot, leg legend, xLabel, yLabel string) (template.HTML, error) {
	cols := 1
	if len(plots) > 2 {
		cols = 2
	}
	rows := (len(plots) + cols - 1) / cols
	rowH := 1.55 * vg.Inch
	if cols == 1 {
		rowH = 1.9 * vg.Inch
	}
	for _, p := range plots {
		p.X.Tick.Label.Font, p.Y.Tick.Label.Font = sans(7.5), sans(7.5)
	}
	labelW, labelH := vg.Points(16), vg.Points(18)
	height := rowH*vg.Length(rows) + labelH
	size, beside := leg.fitColumn(legendW-vg.Points(10), height-vg.Points(30))
	below := vg.Length(0)
	legW := figWidth - vg.Points(48)
	if !beside {
		below = leg.gridHeight(legW) + vg.Points(8)
	}
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
		for c := range cols {
			if i := r*cols + c; i < len(plots) {
				grid[r][c] = plots[i]
			}
		}
	}
	return renderSVG(id, label, figWidth, height+below, func(dc draw.Canvas) {
		right := legendW
		if !beside {
			right = vg.Points(10)
		}
		area := draw.Crop(dc, labelW, -right, below+labelH, 0)
		tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(14), PadY: vg.Points(4), PadTop: vg.Points(2)}
		cs := plot.Align(grid, tiles, area)
		for r := range grid {
			for c, p := range grid[r] {
				if p != nil {
					p.Draw(cs[r][c])
				}
			}
		}
		sty := legendStyle(9.5)
		sty.XAlign = draw.XCenter
		dc.FillText(sty, vg.Point{X: (area.Min.X + area.Max.X) / 2, Y: dc.Min.Y + below + vg.Points(4)}, xLabel)
		sty.Rotation = math.Pi / 2
		sty.YAlign = draw.YTop
		dc.FillText(sty, vg.Point{X: dc.Min.X + vg.Points(2), Y: (area.Min.Y + area.Max.Y) / 2}, yLabel)
		if beside {
			leg.drawColumn(draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: dc.Max.X - legendW + vg.Points(8), Y: dc.Min.Y},
				Max: vg.Point{X: dc.Max.X - vg.Points(2), Y: dc.Max.Y - vg.Points(18)},
			}}, size)
		} else {
			leg.drawGrid(draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: dc.Min.X + vg.Points(36), Y: dc.Min.Y},
				Max: vg.Point{X: dc.Min.X + vg.Points(36) + legW, Y: dc.Min.Y + below - vg.Points(4)},
			}})
		}
	})
}

// hotLinks is how many ports the hottest-links table lists by mean and by peak utilisation.
const hotLinks = 10

// hottestTable lists the hotLinks ports with the highest mean utilisation over the first n
// intervals and the hotLinks with the highest peak interval, by name: one row per port in
// either list, ordered by its rank by mean, then by peak. nil when no port has a rate.
func hottestTable(l *linksData, n int, tEnd float64) *htmlTable {
	loads := l.linkLoads(n, tEnd)
	if len(loads) == 0 {
		return nil
	}
	byName := func(a, b linkLoad) int { return cmp.Compare(a.port.name, b.port.name) }
	slices.SortFunc(loads, func(a, b linkLoad) int { return cmp.Or(cmp.Compare(b.mean, a.mean), byName(a, b)) })
	for i := range loads[:min(hotLinks, len(loads))] {
		loads[i].rankMean = i + 1
	}
	// Many ports peak at line rate: among equal peaks the busier on average come first.
	slices.SortFunc(loads, func(a, b linkLoad) int {
		return cmp.Or(cmp.Compare(b.peak, a.peak), cmp.Compare(b.mean, a.mean), byName(a, b))
	})
	for i := range loads[:min(hotLinks, len(loads))] {
		loads[i].rankPeak = i + 1
	}
	var hot []linkLoad
	for _, ld := range loads {
		if ld.rankMean > 0 || ld.rankPeak > 0 {
			hot = append(hot, ld)
		}
	}
	rank := func(ld linkLoad) int {
		if ld.rankMean > 0 {
			return ld.rankMean
		}
		return hotLinks + ld.rankPeak
	}
	slices.SortFunc(hot, func(a, b linkLoad) int { return cmp.Compare(rank(a), rank(b)) })
	t := &htmlTable{ID: idHottest, Title: "Hottest links",
		Caption: fmt.Sprintf("The %d ports (one direction of a link, named as in links.csv and lockstep topo) with the highest mean utilisation up to the traffic's end, and the %d with the highest peak interval (equal peaks: the higher mean first), one row each: utilisation is the bytes sent over what the line rate could send.", hotLinks, hotLinks),
		Head:    []string{"rank by mean", "rank by peak", "port", "class", "plane", "rate (Gb/s)", "mean util (%)", "peak util (%)", "peak at (us)", "deepest queue (KiB)"}}
	rankText := func(r int) string {
		if r == 0 {
			return "-"
		}
		return strconv.Itoa(r)
	}
	over := 0.0
	for _, ld := range hot {
		over = max(over, ld.peak)
	}
	if over > 1.0005 {
		t.Note = fmt.Sprintf("A peak above 100%% (here up to %s%%) is as links.csv gives it (its util_pct agrees): the bytes it credits to an interval.", fmtSig(100*over))
	}
	for _, ld := range hot {
		t.Rows = append(t.Rows, []cell{
			{Text: rankText(ld.rankMean), Num: true}, {Text: rankText(ld.rankPeak), Num: true},
			{Text: ld.port.name}, {Text: l.classes[ld.port.class].name()}, {Text: strconv.Itoa(ld.port.plane), Num: true},
			{Text: fmtNum(ld.port.rate), Num: true}, {Text: fmtSig(100 * ld.mean), Num: true}, {Text: fmtSig(100 * ld.peak), Num: true},
			{Text: fmtNum(ld.peakAt), Num: true}, {Text: fmtSig(ld.queuePeak / 1024), Num: true},
		})
	}
	return t
}

// maxQueueRows bounds the rows of the queue heatmap: each tier's row and its ports with the
// deepest peaks (between 3 and 8 per tier, so that all tiers fit in about this many).
const maxQueueRows = 28

// queueFigure is a heatmap of queue depth over ports x time, up to the traffic's end tEnd: for
// each tier a row of the deepest queue over its ports and rows for its ports with the deepest
// peaks.
func queueFigure(l *linksData, faults []faultSpan, tEnd float64) (figure, error) {
	const title = "Queue depth over links and time"
	switch {
	case l == nil:
		return noData(idQueue, title, absent(fileLinks)), nil
	case l.rows == 0:
		return noData(idQueue, title, "links.csv has no rows"), nil
	}
	n := l.shown(tEnd)
	perTier := min(8, max(3, maxQueueRows/max(len(l.tiers), 1)-1))
	qrows, maxQ := l.queueRows(n, perTier)
	if maxQ == 0 {
		return noData(idQueue, title, "every queue_max_bytes in links.csv up to the traffic's end is 0: nothing queued"), nil
	}
	xMax := tEnd
	if !(xMax > 0) {
		xMax = l.intervals[n-1].end
	}
	groups := colGroups(n, maxHeatCol)
	edges := make([]float64, 0, len(groups)+1)
	for _, g := range groups {
		edges = append(edges, l.intervals[g[0]].start)
	}
	edges = append(edges, min(l.intervals[n-1].end, max(xMax, l.intervals[n-1].start)))
	kib := func(q []float64) []float64 {
		out := make([]float64, len(groups))
		for k, g := range groups {
			for i := g[0]; i < g[1]; i++ {
				out[k] = max(out[k], q[i]/1024)
			}
		}
		return out
	}
	maxKiB := maxQ / 1024
	// The palette is fixed (white-yellow-red-black over [0, 1]); heatCells scales values to it.
	cm := palette.Reverse(moreland.BlackBody())
	cm.SetMin(0)
	cm.SetMax(1)
	hm := &heatCells{edges: edges, max: maxKiB, pal: cm.Palette(64).Colors()}
	// Rows listed top to bottom; the heatmap's row 0 is at the bottom.
	var ticks []plot.Tick
	for i := len(qrows) - 1; i >= 0; i-- {
		ticks = append(ticks, plot.Tick{Value: float64(len(hm.rows)), Label: qrows[i].label})
		hm.rows = append(hm.rows, kib(qrows[i].q))
	}

	p := newPanel("", "time (us)", "")
	p.p.Add(hm)
	p.faults(faults, true) // after the cells: the outlines go on top
	p.p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.p.Y.Tick.Label.Font = sans(7.5)
	_, _, ymin, ymax := hm.DataRange()
	p.p.X.Min, p.p.X.Max, p.p.Y.Min, p.p.Y.Max = 0, xMax, ymin, ymax
	p.p.X.Padding, p.p.Y.Padding = 0, 0

	bar := plot.New()
	bar.HideY()
	bar.X.Label.Text = "queue depth (KiB)"
	bar.X.Label.TextStyle.Font = sans(9)
	bar.X.Tick.Label.Font = sans(8)
	bar.X.Tick.Marker = plainTicks{}
	bar.Add(colourBar{hm})

	barH := 0.75 * vg.Inch
	height := vg.Inch + vg.Points(11)*vg.Length(len(qrows)) + barH
	svg, err := renderSVG(idQueue, title, figWidth, height, func(dc draw.Canvas) {
		top := draw.Crop(dc, 0, -legendW, barH, 0)
		p.p.Draw(top)
		lc := draw.Crop(dc, figWidth-legendW+vg.Points(8), -vg.Points(2), height-vg.Inch, -vg.Points(18))
		size, _ := p.leg.fitColumn(lc.Max.X-lc.Min.X, lc.Max.Y-lc.Min.Y)
		p.leg.drawColumn(lc, size)
		bar.Draw(draw.Crop(dc, legendW, -legendW-vg.Inch, 0, -(height - barH)))
	})
	caption := fmt.Sprintf("Deepest egress queue per interval (KiB) up to the traffic's end: for each tier, a row of the deepest queue over all its ports (max over ...), then up to %d of its ports with the deepest peaks, deepest first.", perTier)
	if len(groups) < n {
		caption += fmt.Sprintf(" %d intervals merged into %d columns (each the deepest of its intervals).", n, len(groups))
	}
	caption += coarseNote(l, n, tEnd)
	return figure{ID: idQueue, Title: title, Caption: caption, SVG: svg}, err
}

// gapFilled returns a step line through per-interval values at times ts (interval starts,
// ascending; missing intervals are zero): each value holds for dt, and where the next time is
// further away the line drops to zero until it.
func gapFilled(ts, vs []float64, dt float64) plotter.XYs {
	var pts plotter.XYs
	for i, t := range ts {
		pts = append(pts, plotter.XY{X: t, Y: vs[i]}, plotter.XY{X: t + dt, Y: vs[i]})
		if i+1 == len(ts) || ts[i+1] > t+dt*1.001 {
			pts = append(pts, plotter.XY{X: t + dt, Y: 0})
			if i+1 < len(ts) {
				pts = append(pts, plotter.XY{X: ts[i+1], Y: 0})
			}
		}
	}
	return pts
}

// minGap is the smallest positive gap between successive ascending ts, or fallback.
func minGap(ts []float64, fallback float64) float64 {
	g := math.Inf(1)
	for i := 1; i < len(ts); i++ {
		if d := ts[i] - ts[i-1]; d > 0 {
			g = min(g, d)
		}
	}
	if math.IsInf(g, 1) {
		return fallback
	}
	return g
}

// pausesFigure is PFC pauses over time: ports paused (all and per tier), and XOFF frames.
//
// dt is the interval of pauses.csv (links.csv's); 0 when unknown, and then the smallest gap
// between its times stands for it.
func pausesFigure(d *pausesData, faults []faultSpan, tMax, dt float64) (figure, error) {
	const title = "PFC pauses over time"
	switch {
	case d == nil:
		return noData(idPauses, title, absent(filePauses)), nil
	case d.rows == 0:
		return noData(idPauses, title, "pauses.csv has no rows: no port was paused"), nil
	}
	if !(dt > 0) {
		dt = minGap(d.times, max(tMax/200, 1e-3))
	}
	a := newPanel("", "", "ports paused").grid()
	a.faults(faults, false)
	if err := a.line(0, "all ports", gapFilled(d.times, d.total, dt)); err != nil {
		return figure{}, err
	}
	if len(d.tiers) > 1 {
		for i, tier := range d.tiers {
			if err := a.line(i+1, pauseTierName(tier), gapFilled(d.times, d.paused[i], dt)); err != nil {
				return figure{}, err
			}
		}
	}
	b := newPanel("", "time (us)", "pauses received / interval").grid()
	b.faults(faults, false)
	if err := b.line(3, "all ports", gapFilled(d.times, d.events, dt)); err != nil {
		return figure{}, err
	}
	for _, pn := range []*panel{a, b} {
		pn.timeAxis(tMax)
		pn.zeroY()
	}
	svg, err := figureSVG(idPauses, title, 0, a, b)
	caption := fmt.Sprintf("Top: ports paused, each counted by the fraction of the %s us interval it spent paused, summed over its classes (pauses.csv; %d ports were ever paused). Bottom: pauses received per interval (XOFFs that began a pause).", fmtNum(dt), d.ports)
	return figure{ID: idPauses, Title: title, Caption: caption, SVG: svg}, err
}

// evFigure is the MRC EV states over time: usable (good) EVs, and those not in use.
func evFigure(d *evData, faults []faultSpan, tMax float64) (figure, error) {
	const title = "EV states over time (MRC)"
	switch {
	case d == nil:
		return noData(idEV, title, absent(fileEV)), nil
	case len(d.times) == 0:
		return noData(idEV, title, "ev_states.csv has no rows (MRC under a workload samples no EV states yet)"), nil
	}
	series := func(i int) plotter.XYs {
		pts := make(plotter.XYs, len(d.times))
		for k, t := range d.times {
			pts[k] = plotter.XY{X: t, Y: d.counts[i][k]}
		}
		return pts
	}
	a := newPanel("", "", "EVs").grid()
	a.faults(faults, false)
	if err := a.line(2, evStateNames[0], series(0)); err != nil {
		return figure{}, err
	}
	b := newPanel("", "time (us)", "EVs").grid()
	b.faults(faults, false)
	for i := 1; i < len(evStateNames); i++ {
		if err := b.line(i, evStateNames[i], series(i)); err != nil {
			return figure{}, err
		}
	}
	for _, pn := range []*panel{a, b} {
		pn.timeAxis(tMax)
		pn.zeroY()
	}
	svg, err := figureSVG(idEV, title, 0, a, b)
	caption := "EV (entropy value) states summed over every QP at each sample (ev_states.csv). Top: good EVs, in use. Bottom: EVs skipped, assumed bad or denied after loss or a failure."
	return figure{ID: idEV, Title: title, Caption: caption, SVG: svg}, err
}

// maxGanttRows bounds the failures drawn in the timeline; faults.csv's table lists them all.
const maxGanttRows = 30

// faultFigure is the failures on a time line: a bar from each failure to its end, with the
// first loss-driven retransmission (detect) and the recovery marked.
func faultFigure(d *faultsData, tMax float64) (figure, error) {
	const title = "Fault timeline"
	switch {
	case d == nil:
		return noData(idFaults, title, absent(fileFaults)), nil
	case len(d.spans) == 0:
		return noData(idFaults, title, "faults.csv has no rows"), nil
	}
	spans := d.spans[:min(len(d.spans), maxGanttRows)]
	n := len(spans)
	pn := newPanel("", "time (us)", "").grid()
	bars := &ganttBars{spans: spans, tMax: tMax}
	pn.p.Add(bars)
	pn.leg.Add("failure (to its end)", bars)
	var ticks []plot.Tick
	var detect, recover plotter.XYs
	for i, s := range spans {
		y := float64(n - 1 - i)
		ticks = append(ticks, plot.Tick{Value: y, Label: s.label})
		if !math.IsNaN(s.detect) {
			detect = append(detect, plotter.XY{X: s.detect, Y: y})
		}
		if !math.IsNaN(s.recover) {
			recover = append(recover, plotter.XY{X: s.recover, Y: y})
		}
	}
	for k, m := range []struct {
		name  string
		pts   plotter.XYs
		shape draw.GlyphDrawer
	}{{"detected (first loss retx)", detect, draw.TriangleGlyph{}}, {"recovered", recover, draw.CircleGlyph{}}} {
		if len(m.pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(m.pts)
		if err != nil {
			return figure{}, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: seriesColor(k * 2), Radius: vg.Points(3.5), Shape: m.shape}
		pn.p.Add(sc)
		pn.leg.Add(m.name, sc)
	}
	pn.p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	pn.p.Y.Min, pn.p.Y.Max = -0.6, float64(n)-0.4
	pn.timeAxis(tMax)
	height := 1.1*vg.Inch + vg.Points(18)*vg.Length(n)
	svg, err := figureSVG(idFaults, title, height, pn)
	caption := "Each failure of faults.csv from its start to its end (its restore, or the end of the traffic), with the first loss-driven retransmission after it and when the run stopped falling behind its faultless twin. The time plots shade the same spans."
	if len(d.spans) > n {
		caption += fmt.Sprintf(" The first %d of %d failures are drawn.", n, len(d.spans))
	}
	return figure{ID: idFaults, Title: title, Caption: caption, SVG: svg}, err
}
