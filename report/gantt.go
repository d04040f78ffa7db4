package report

import (
	"errors"
	"fmt"
	"html"
	"html/template"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// filePhases is the training run's per-rank phases (docs/outputs.md).
const filePhases = "phases.csv"

// idGantt is the plot id of the per-rank Gantt chart.
const idGantt = "rank-gantt"

// Bounds of the Gantt chart: the ranks drawn (phases.csv lists at most 16), the rows of
// phases.csv kept (the runner writes at most 200,000), and the horizontal cells each row is
// drawn in (each takes the colour of the category that spent the most time in it).
const (
	maxGanttRanks = 32
	maxPhaseRows  = 500_000
	ganttCells    = 900
)

// phaseCats are phases.csv's categories in the step breakdown's order (stepCategories), so
// both plots colour a category alike.
var phaseCats = []struct{ col, name string }{
	{"compute", "compute"}, {"tp", "TP"}, {"pp", "PP wait"}, {"dp", "DP"}, {"ep", "EP"},
	{"cp", "CP"}, {"bubble", "bubble"}, {"sync", "sync"},
}

// phaseSpan is one phase of a rank.
type phaseSpan struct {
	cat        int // index in phaseCats
	start, end float64
}

// phaseRank is one rank of phases.csv: its label parts and phases.
type phaseRank struct {
	rank          int
	coord, chosen string
	spans         []phaseSpan
}

// phasesData is phases.csv.
type phasesData struct {
	ranks   []*phaseRank // in order of first appearance
	steps   map[int][2]float64
	rows    int
	dropped int // rows past maxPhaseRows, or of ranks past maxGanttRanks
}

// readPhases reads phases.csv (docs/outputs.md). Required columns: step, rank, category,
// start_us, end_us; coord and chosen are optional. Errors: a *FileError naming the line and
// column of a malformed cell, an unknown category, or an end before its start.
func readPhases(file string, r io.Reader) (*phasesData, error) {
	t, err := newCSVTable(file, r, "step", "rank", "category", "start_us", "end_us")
	if err != nil {
		return nil, err
	}
	d := &phasesData{steps: map[int][2]float64{}}
	byRank := map[int]*phaseRank{}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return d, nil
		}
		d.rows++
		step, err := t.int("step")
		if err != nil {
			return nil, err
		}
		rank, err := t.int("rank")
		if err != nil {
			return nil, err
		}
		if rank < 0 {
			return nil, t.cellErr("rank", errNegative(t.str("rank")))
		}
		cat := -1
		for i, c := range phaseCats {
			if c.col == t.str("category") {
				cat = i
			}
		}
		if cat < 0 {
			names := make([]string, len(phaseCats))
			for i, c := range phaseCats {
				names[i] = c.col
			}
			return nil, t.cellErr("category", fmt.Errorf("%q is not a category (want one of %s)", t.str("category"), strings.Join(names, ", ")))
		}
		a, err := t.nonNeg("start_us")
		if err != nil {
			return nil, err
		}
		b, err := t.nonNeg("end_us")
		if err != nil {
			return nil, err
		}
		if b < a || math.IsInf(b, 0) {
			return nil, t.cellErr("end_us", errors.New("ends before its start_us or is infinite"))
		}
		if d.rows > maxPhaseRows {
			d.dropped++
			continue
		}
		pr := byRank[rank]
		if pr == nil {
			if len(d.ranks) >= maxGanttRanks {
				d.dropped++
				continue
			}
			pr = &phaseRank{rank: rank, coord: t.str("coord"), chosen: t.str("chosen")}
			byRank[rank] = pr
			d.ranks = append(d.ranks, pr)
		}
		pr.spans = append(pr.spans, phaseSpan{cat: cat, start: a, end: b})
		s, ok := d.steps[step]
		if !ok {
			s = [2]float64{a, b}
		}
		d.steps[step] = [2]float64{min(s[0], a), max(s[1], b)}
	}
}

// hexColor is c as #rrggbb.
func hexColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}

// ganttFigure draws phases.csv: one row per listed rank over the simulated steps, each
// horizontal cell coloured by the category the rank spent most of it in (compute, TP, PP, DP,
// EP, CP communication, bubble, sync), the steps' boundaries dashed, and a legend of the
// categories drawn. Server-side SVG, no script.
func ganttFigure(ph *phasesData) (figure, error) {
	const title = "Per-rank timeline of the simulated steps"
	switch {
	case ph == nil:
		return noData(idGantt, title, filePhases+" not written by this run (training runs write it)"), nil
	case len(ph.ranks) == 0:
		return noData(idGantt, title, "phases.csv has no rows"), nil
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range ph.ranks {
		for _, s := range r.spans {
			lo, hi = min(lo, s.start), max(hi, s.end)
		}
	}
	if !(hi > lo) {
		return noData(idGantt, title, "phases.csv's phases take no time"), nil
	}
	div, unit := timeUnit(hi - lo)
	const (
		width  = 576.0
		labelW = 185.0
		right  = 10.0
		top    = 16.0
		rowH   = 13.0
		gap    = 3.0
	)
	plotW := width - labelW - right
	rows := len(ph.ranks)
	axisY := top + float64(rows)*(rowH+gap)
	legendY := axisY + 30
	height := legendY + 16
	x := func(t float64) float64 { return labelW + (t-lo)/(hi-lo)*plotW }
	f := func(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="plot" id="%s" role="img" aria-label="%s" viewBox="0 0 %s %s" xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" font-size="8" shape-rendering="crispEdges">`,
		idGantt, html.EscapeString(title), f(width), f(height))
	used := make([]bool, len(phaseCats))
	cell := (hi - lo) / ganttCells
	acc := make([]float64, ganttCells*len(phaseCats))
	for i, r := range ph.ranks {
		y := top + float64(i)*(rowH+gap)
		label := "rank " + strconv.Itoa(r.rank)
		if r.coord != "" {
			label += " (" + r.coord + ")"
		}
		if r.chosen != "" {
			label += " " + strings.ReplaceAll(r.chosen, "+", ", ")
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s</text>`, f(labelW-4), f(y+rowH-3), html.EscapeString(clip(label, 52)))
		clear(acc)
		for _, s := range r.spans {
			c0 := min(int((s.start-lo)/cell), ganttCells-1)
			c1 := min(int((s.end-lo)/cell), ganttCells-1)
			for c := c0; c <= c1; c++ {
				a, e := max(s.start, lo+float64(c)*cell), min(s.end, lo+float64(c+1)*cell)
				if e > a {
					acc[c*len(phaseCats)+s.cat] += e - a
				}
			}
		}
		// Two lanes per row: the upper takes each cell's dominant category, the lower strip
		// the dominant category other than compute (any share), so short communication
		// phases between compute (TP inside a layer, a few hundred us in a cell of ms) stay
		// visible. Runs of cells of one category become one rectangle.
		mainH := rowH * 0.7
		lane := func(y0, h float64, pick func(c int) int) {
			run, runStart := -1, 0
			flush := func(end int) {
				if run < 0 {
					return
				}
				used[run] = true
				x0, x1 := labelW+float64(runStart)*plotW/ganttCells, labelW+float64(end)*plotW/ganttCells
				fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`, f(x0), f(y0), f(x1-x0), f(h), hexColor(seriesColor(run)))
			}
			for c := range ganttCells {
				if best := pick(c); best != run {
					flush(c)
					run, runStart = best, c
				}
			}
			flush(ganttCells)
		}
		dominant := func(from int) func(c int) int {
			return func(c int) int {
				best, bv := -1, 0.0
				for k := from; k < len(phaseCats); k++ {
					if v := acc[c*len(phaseCats)+k]; v > bv {
						best, bv = k, v
					}
				}
				return best
			}
		}
		lane(y, mainH, dominant(0))
		lane(y+mainH, rowH-mainH, dominant(1)) // phaseCats[0] is compute
	}
	// The steps' boundaries and labels.
	steps := make([]int, 0, len(ph.steps))
	for k := range ph.steps {
		steps = append(steps, k)
	}
	slices.Sort(steps)
	lastLabel := math.Inf(-1)
	for i, k := range steps {
		s := ph.steps[k]
		if i > 0 {
			fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333" stroke-dasharray="3,2" stroke-width="0.7"/>`, f(x(s[0])), f(top-4), f(x(s[0])), f(axisY))
		}
		// A label where it does not run into the previous one (about 30 points wide).
		if px := x(s[0]); px-lastLabel >= 32 && px <= labelW+plotW-28 {
			fmt.Fprintf(&b, `<text x="%s" y="%s">step %d</text>`, f(px+2), f(top-5), k)
			lastLabel = px
		}
	}
	// The time axis.
	fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333" stroke-width="0.7"/>`, f(labelW), f(axisY), f(labelW+plotW), f(axisY))
	span := (hi - lo) / div
	stepV := niceStep(span / 6)
	for v := math.Ceil(lo/div/stepV) * stepV; v <= hi/div+stepV*1e-9; v += stepV {
		px := x(v * div)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333" stroke-width="0.7"/>`, f(px), f(axisY), f(px), f(axisY+3))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, f(px), f(axisY+11), fmtNum(v))
	}
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">time (%s, the steps back to back as in steps.csv)</text>`, f(labelW+plotW/2), f(axisY+22), unit)
	// The legend: the categories drawn.
	lx := labelW
	var drawn []string
	for k, c := range phaseCats {
		if !used[k] {
			continue
		}
		drawn = append(drawn, c.name)
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="9" height="9" fill="%s"/><text x="%s" y="%s">%s</text>`, f(lx), f(legendY), hexColor(seriesColor(k)), f(lx+12), f(legendY+8), c.name)
		lx += 12 + 5.5*float64(len(c.name)) + 14
	}
	b.WriteString(`</svg>`)
	caption := fmt.Sprintf("Each listed rank's phases over the %d simulated step(s) (phases.csv): compute, waiting on TP, PP, DP, EP or CP communication, the pipeline bubble and sync (waiting for other ranks; the wait at a step's end for its slowest rank is the bubble with pipeline parallelism, else sync). phases.csv lists at most 16 ranks: each step's slowest, fastest and busiest (longest compute), the first rank of each pipeline stage, then ranks spread evenly; each row's label says why it was chosen. Each of the %d cells of a row takes the colour of the category the rank spent most of it in, and the thin strip under it the colour of the communication or wait (anything but compute) it spent most of the rest in, so phases shorter than a cell (%s %s) still show. Categories drawn: %s.",
		len(steps), ganttCells, fmtNum(cell/div), unit, strings.Join(drawn, ", "))
	if ph.dropped > 0 {
		caption += fmt.Sprintf(" %d rows of phases.csv are not drawn (more than %d ranks or %d rows).", ph.dropped, maxGanttRanks, maxPhaseRows)
	}
	return figure{ID: idGantt, Title: title, Caption: caption, SVG: template.HTML(b.String())}, nil
}

// niceStep rounds a tick step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if !(raw > 0) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}
