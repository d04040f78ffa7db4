package report

import (
	"fmt"
	"html/template"
	"math"
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
	idThroughput = "throughput"
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

// planeGbps is the mean rate the NIC ports of plane index pi sent at over intervals [lo, hi).
func (l *linksData) planeGbps(pi, lo, hi int) float64 {
	var bytes, us float64
	for k := lo; k < hi; k++ {
		bytes += l.nicTx[pi][k]
		us += l.intervals[k].end - l.intervals[k].start
	}
	return bytes * 8 / (us * 1e3)
}

// totalGbps is the mean rate all NIC ports sent at over intervals [lo, hi).
func (l *linksData) totalGbps(lo, hi int) float64 {
	var g float64
	for pi := range l.planes {
		g += l.planeGbps(pi, lo, hi)
	}
	return g
}

// throughputFigure is the rate each plane's NIC ports sent at, per interval of links.csv.
func throughputFigure(l *linksData, faults []faultSpan, tMax float64) (figure, error) {
	const title = "Throughput per plane"
	switch {
	case l == nil:
		return noData(idThroughput, title, absent(fileLinks)), nil
	case len(l.planes) == 0:
		return noData(idThroughput, title, "links.csv has no host NIC port rows (tier -1)"), nil
	}
	pn := newPanel("", "time (us)", "sent by NIC ports (Gb/s)").grid()
	pn.faults(faults, false)
	groups := colGroups(len(l.intervals), maxLinePts/2)
	for pi, plane := range l.planes {
		pts := tailZero(stepPoints(l.intervals, groups, func(lo, hi int) float64 { return l.planeGbps(pi, lo, hi) }), tMax)
		if err := pn.line(pi, fmt.Sprintf("plane %d", plane), pts); err != nil {
			return figure{}, err
		}
	}
	pn.timeAxis(tMax)
	pn.zeroY()
	svg, err := figureSVG(idThroughput, title, 0, pn)
	caption := fmt.Sprintf("Wire bytes the host NIC ports of each plane put on their links, per interval of %s us (links.csv); an interval without a row in links.csv sent nothing and shows as 0.",
		fmtNum(l.step))
	if len(groups) < len(l.intervals) {
		caption += fmt.Sprintf(" %d intervals averaged into %d steps.", len(l.intervals), len(groups))
	}
	return figure{ID: idThroughput, Title: title, Caption: caption, SVG: svg}, err
}

// queueFigure is a heatmap of queue depth over ports x time: one row per tier (the deepest
// queue of any of its ports) and one per port with the deepest peaks.
func queueFigure(l *linksData, faults []faultSpan, tMax float64) (figure, error) {
	const title = "Queue depth over links and time"
	switch {
	case l == nil:
		return noData(idQueue, title, absent(fileLinks)), nil
	case l.rows == 0:
		return noData(idQueue, title, "links.csv has no rows"), nil
	case l.maxQueue == 0:
		return noData(idQueue, title, "every queue_max_bytes in links.csv is 0: nothing queued"), nil
	}
	groups := colGroups(len(l.intervals), maxHeatCol)
	edges := make([]float64, 0, len(groups)+1)
	for _, g := range groups {
		edges = append(edges, l.intervals[g[0]].start)
	}
	edges = append(edges, l.intervals[len(l.intervals)-1].end)
	kib := func(q []float64) []float64 {
		out := make([]float64, len(groups))
		for k, g := range groups {
			for i := g[0]; i < g[1]; i++ {
				out[k] = max(out[k], q[i]/1024)
			}
		}
		return out
	}
	// Rows listed top to bottom; the heatmap's row 0 is at the bottom.
	var labels []string
	var rows [][]float64
	for ti, tier := range l.tiers {
		labels = append(labels, "max over "+tierName(tier))
		rows = append(rows, kib(l.tierQ[ti]))
	}
	for _, p := range l.top {
		labels = append(labels, p.name)
		rows = append(rows, kib(p.q))
	}
	maxKiB := l.maxQueue / 1024
	// The palette is fixed (white-yellow-red-black over [0, 1]); heatCells scales values to it.
	cm := palette.Reverse(moreland.BlackBody())
	cm.SetMin(0)
	cm.SetMax(1)
	hm := &heatCells{edges: edges, max: maxKiB, pal: cm.Palette(64).Colors()}
	var ticks []plot.Tick
	for i := len(rows) - 1; i >= 0; i-- {
		ticks = append(ticks, plot.Tick{Value: float64(len(hm.rows)), Label: labels[i]})
		hm.rows = append(hm.rows, rows[i])
	}

	p := newPanel("", "time (us)", "")
	p.p.Add(hm)
	p.faults(faults, true) // after the cells: the outlines go on top
	p.p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.p.Y.Tick.Label.Font = sans(7.5)
	_, xmax, ymin, ymax := hm.DataRange()
	p.p.X.Min, p.p.X.Max, p.p.Y.Min, p.p.Y.Max = 0, max(xmax, tMax), ymin, ymax
	p.p.X.Padding, p.p.Y.Padding = 0, 0

	bar := plot.New()
	bar.HideY()
	bar.X.Label.Text = "queue depth (KiB)"
	bar.X.Label.TextStyle.Font = sans(9)
	bar.X.Tick.Label.Font = sans(8)
	bar.X.Tick.Marker = plainTicks{}
	bar.Add(colourBar{hm})

	barH := 0.75 * vg.Inch
	height := vg.Inch + vg.Points(11)*vg.Length(len(rows)) + barH
	svg, err := renderSVG(idQueue, title, figWidth, height, func(dc draw.Canvas) {
		top := draw.Crop(dc, 0, -legendW, barH, 0)
		p.p.Draw(top)
		lc := draw.Crop(dc, figWidth-legendW+vg.Points(8), -vg.Points(2), height-vg.Inch, -vg.Points(18))
		size, _ := p.leg.fitColumn(lc.Max.X-lc.Min.X, lc.Max.Y-lc.Min.Y)
		p.leg.drawColumn(lc, size)
		bar.Draw(draw.Crop(dc, legendW, -legendW-vg.Inch, 0, -(height - barH)))
	})
	caption := fmt.Sprintf("Deepest egress queue per interval (KiB): one row per tier (the deepest of its ports) and the %d ports with the deepest peaks, deepest first.", len(l.top))
	if len(groups) < len(l.intervals) {
		caption += fmt.Sprintf(" %d intervals merged into %d columns (each the deepest of its intervals).", len(l.intervals), len(groups))
	}
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
