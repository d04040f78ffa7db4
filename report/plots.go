package report

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure geometry. SVGs keep only their viewBox, so the page scales them to its width.
const (
	figWidth   = 8 * vg.Inch
	panelH     = 2.8 * vg.Inch
	legendW    = 1.6 * vg.Inch
	maxLinePts = 600 // points per line after downsampling
	maxHeatCol = 200 // heatmap columns after downsampling
)

// seriesColors is the Tableau 10 palette: distinct hues that stay readable as thin lines.
var seriesColors = []color.Color{
	color.RGBA{0x4e, 0x79, 0xa7, 0xff}, color.RGBA{0xf2, 0x8e, 0x2b, 0xff}, color.RGBA{0x59, 0xa1, 0x4f, 0xff},
	color.RGBA{0xe1, 0x57, 0x59, 0xff}, color.RGBA{0x76, 0xb7, 0xb2, 0xff}, color.RGBA{0xed, 0xc9, 0x48, 0xff},
	color.RGBA{0xb0, 0x7a, 0xa1, 0xff}, color.RGBA{0xff, 0x9d, 0xa7, 0xff}, color.RGBA{0x9c, 0x75, 0x5f, 0xff},
	color.RGBA{0xba, 0xb0, 0xac, 0xff},
}

// seriesColor is the colour of the i-th series; past ten, the palette repeats with dashes
// (see seriesDashes).
func seriesColor(i int) color.Color { return seriesColors[i%len(seriesColors)] }

// seriesDashes tells the i-th series from the one ten before it, which shares its colour.
func seriesDashes(i int) []vg.Length {
	switch (i / len(seriesColors)) % 3 {
	case 1:
		return []vg.Length{vg.Points(5), vg.Points(3)}
	case 2:
		return []vg.Length{vg.Points(1.5), vg.Points(2)}
	}
	return nil
}

var (
	faultFill  = color.NRGBA{0xd6, 0x27, 0x28, 0x30} // translucent red span
	faultEdge  = color.NRGBA{0xd6, 0x27, 0x28, 0xc0}
	gridColour = color.Gray{0xe4}
)

// sans is the report's plot font: Liberation Sans, whose metrics gonum/plot ships, so text is
// laid out the same on every machine (the browser draws it with a local sans-serif).
func sans(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

// panel is one plot of a figure and its legend, drawn in a column right of the data (or, when
// it does not fit there, below the plot) so it never hides a line.
type panel struct {
	p   *plot.Plot
	leg legend
}

// newPanel returns a panel with the report's fonts and the given title and axis labels (and
// no grid: see grid).
func newPanel(title, xLabel, yLabel string) *panel {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(11)
	p.X.Label.Text, p.Y.Label.Text = xLabel, yLabel
	p.X.Label.TextStyle.Font, p.Y.Label.TextStyle.Font = sans(9.5), sans(9.5)
	p.X.Tick.Label.Font, p.Y.Tick.Label.Font = sans(8.5), sans(8.5)
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	return &panel{p: p}
}

// grid adds light grid lines behind what is added next.
func (pn *panel) grid() *panel {
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = gridColour, gridColour
	pn.p.Add(g)
	return pn
}

// line adds series i named name; points with a non-finite coordinate are left out, and a
// series longer than maxLinePts is decimated.
func (pn *panel) line(i int, name string, pts plotter.XYs) error {
	clean := pts[:0:0]
	for _, pt := range pts {
		if !math.IsNaN(pt.X) && !math.IsNaN(pt.Y) && !math.IsInf(pt.X, 0) && !math.IsInf(pt.Y, 0) {
			clean = append(clean, pt)
		}
	}
	if len(clean) == 0 {
		return nil
	}
	l, err := plotter.NewLine(decimate(clean, maxLinePts))
	if err != nil {
		return err
	}
	l.LineStyle.Color = seriesColor(i)
	l.LineStyle.Width = vg.Points(1.3)
	l.LineStyle.Dashes = seriesDashes(i)
	pn.p.Add(l)
	pn.leg.Add(name, l)
	return nil
}

// decimate keeps at most maxPts of pts (maxPts >= 2): pts is cut into maxPts/2 runs of
// consecutive points and each run keeps its lowest and its highest point, in their order. The
// line keeps its envelope: a one-sample spike or dip survives, which taking every k-th point
// would lose.
func decimate(pts plotter.XYs, maxPts int) plotter.XYs {
	if len(pts) <= maxPts {
		return pts
	}
	out := make(plotter.XYs, 0, maxPts)
	for _, g := range colGroups(len(pts), maxPts/2) {
		lo, hi := g[0], g[0]
		for i := g[0]; i < g[1]; i++ {
			if pts[i].Y < pts[lo].Y {
				lo = i
			}
			if pts[i].Y > pts[hi].Y {
				hi = i
			}
		}
		out = append(out, pts[min(lo, hi)])
		if lo != hi {
			out = append(out, pts[max(lo, hi)])
		}
	}
	return out
}

// faults overlays the failures: a shaded span from each failure to its end (a line where the
// end is unknown); with outline only, a line at each end instead of a fill (for the heatmap,
// whose colours a fill would change). Call it before adding lines: plotters are drawn in the
// order added, and the lines belong on top of the spans.
func (pn *panel) faults(spans []faultSpan, outline bool) {
	if len(spans) == 0 {
		return
	}
	o := &faultOverlay{spans: spans, outline: outline}
	pn.p.Add(o)
	pn.leg.Add("failure", o)
}

// timeAxis sets the x axis to [0, tMax] us, the same on every time plot of a report, so that a
// failure lines up across them.
func (pn *panel) timeAxis(tMax float64) {
	if tMax > 0 {
		pn.p.X.Min, pn.p.X.Max = 0, tMax
	}
}

// logX puts the x axis on a log scale (every x must be > 0), for values spanning more than two
// decades.
func (pn *panel) logX() {
	pn.p.X.Scale = plot.LogScale{}
	pn.p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	pn.p.X.Label.Text += ", log scale"
}

// zeroY starts the y axis at zero and keeps an empty plot's axis finite.
func (pn *panel) zeroY() {
	pn.p.Y.Min = 0
	if !(pn.p.Y.Max > 0) || math.IsInf(pn.p.Y.Max, 0) {
		pn.p.Y.Max = 1
	}
}

// figureSVG draws panels stacked top to bottom (x axes aligned, each panel panelH tall unless
// height says otherwise) with their legends in a right-hand column, and returns the inline
// <svg class="plot" id=id> element. A legend that does not fit beside its panel (many entries,
// long names), even wrapped and in a smaller font, moves below: then every panel takes the
// full width and the legends follow the last one, in columns, each entry shown.
func figureSVG(id, label string, height vg.Length, panels ...*panel) (template.HTML, error) {
	if height == 0 {
		height = panelH * vg.Length(len(panels))
	}
	sizes := make([]float64, len(panels))
	beside := true
	for i, pn := range panels {
		var ok bool
		sizes[i], ok = pn.leg.fitColumn(legendW-vg.Points(8), height/vg.Length(len(panels))-vg.Points(26))
		beside = beside && ok
	}
	drawPanels := func(dc, area draw.Canvas, legends bool) {
		rows := make([][]*plot.Plot, len(panels))
		for i, pn := range panels {
			rows[i] = []*plot.Plot{pn.p}
		}
		tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(6), PadTop: vg.Points(2), PadBottom: vg.Points(2)}
		cs := plot.Align(rows, tiles, area)
		for i, pn := range panels {
			c := cs[i][0]
			pn.p.Draw(c)
			if legends {
				pn.leg.drawColumn(draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
					Min: vg.Point{X: dc.Max.X - legendW + vg.Points(8), Y: c.Min.Y},
					Max: vg.Point{X: dc.Max.X - vg.Points(2), Y: c.Max.Y - vg.Points(18)},
				}}, sizes[i])
			}
		}
	}
	if beside {
		return renderSVG(id, label, figWidth, height, func(dc draw.Canvas) {
			drawPanels(dc, draw.Crop(dc, 0, -legendW, 0, 0), true)
		})
	}
	margin := vg.Points(36) // the legend starts under the data area, roughly past the y axis
	legW := figWidth - margin - vg.Points(12)
	var below vg.Length
	for _, pn := range panels {
		below += pn.leg.gridHeight(legW)
	}
	below += vg.Points(8)
	return renderSVG(id, label, figWidth, height+below, func(dc draw.Canvas) {
		drawPanels(dc, draw.Crop(dc, 0, -vg.Points(12), below, 0), false)
		top := dc.Min.Y + below - vg.Points(4)
		for _, pn := range panels {
			h := pn.leg.gridHeight(legW)
			pn.leg.drawGrid(draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
				Min: vg.Point{X: dc.Min.X + margin, Y: top - h},
				Max: vg.Point{X: dc.Min.X + margin + legW, Y: top},
			}})
			top -= h
		}
	})
}

// renderSVG paints one SVG of w x h and returns it as an inline element: the XML prolog is
// dropped and the root keeps only its viewBox (so CSS sizes it), class "plot", id and an
// accessible label. gonum/plot reports some impossible inputs by panicking; the report checks
// its data before plotting, and any panic left is returned as an error naming the plot rather
// than ending the run that asked for the report.
func renderSVG(id, label string, w, h vg.Length, paint func(dc draw.Canvas)) (out template.HTML, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("drawing plot %s: %v", id, r)
		}
	}()
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	paint(dc)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	s := buf.String()
	i := strings.Index(s, "<svg")
	if i < 0 {
		return "", fmt.Errorf("plot %s: no <svg> element in the renderer's output", id)
	}
	j := strings.IndexByte(s[i:], '>')
	if j < 0 {
		return "", fmt.Errorf("plot %s: unterminated <svg> element", id)
	}
	root := fmt.Sprintf(`<svg class="plot" id="%s" role="img" aria-label="%s" viewBox="0 0 %.5g %.5g" xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">`,
		html.EscapeString(id), html.EscapeString(label), w.Points(), h.Points())
	return template.HTML(root + s[i+j+1:]), nil
}

// faultOverlay is a plot.Plotter that shades each failure's span over the whole height of
// the data area.
type faultOverlay struct {
	spans   []faultSpan
	outline bool
}

// Plot implements plot.Plotter.
func (o *faultOverlay) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	edge := draw.LineStyle{Color: faultEdge, Width: vg.Points(1)}
	for _, s := range o.spans {
		x0 := trX(s.at)
		if x0 > c.Max.X {
			continue
		}
		x0 = max(x0, c.Min.X)
		if !math.IsNaN(s.end) {
			x1 := min(trX(s.end), c.Max.X)
			if !o.outline && x1 > x0 {
				c.FillPolygon(faultFill, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
			}
			if o.outline && x1 > x0 && x1 < c.Max.X {
				c.StrokeLine2(draw.LineStyle{Color: faultEdge, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}, x1, c.Min.Y, x1, c.Max.Y)
			}
		}
		c.StrokeLine2(edge, x0, c.Min.Y, x0, c.Max.Y)
	}
}

// DataRange implements plot.DataRanger: the failures' times widen the x axis; the y axis is
// left to the data.
func (o *faultOverlay) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, s := range o.spans {
		xmin = min(xmin, s.at)
		xmax = max(xmax, s.at)
		if !math.IsNaN(s.end) {
			xmax = max(xmax, s.end)
		}
	}
	return xmin, xmax, math.Inf(1), math.Inf(-1)
}

// Thumbnail implements plot.Thumbnailer for the legend.
func (o *faultOverlay) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(faultFill, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
	c.StrokeLine2(draw.LineStyle{Color: faultEdge, Width: vg.Points(1)}, r.Min.X, r.Min.Y, r.Min.X, r.Max.Y)
}

// ganttBars is a plot.Plotter drawing failure i as a bar on row n-1-i (the first at the top),
// from its start to its end or, when the end is unknown, to tMax in outline.
type ganttBars struct {
	spans []faultSpan
	tMax  float64
}

// Plot implements plot.Plotter.
func (g *ganttBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(g.spans)
	for i, s := range g.spans {
		y := float64(n - 1 - i)
		y0, y1 := trY(y-0.3), trY(y+0.3)
		x0 := max(trX(s.at), c.Min.X)
		end := s.end
		if math.IsNaN(end) {
			end = g.tMax
		}
		x1 := min(trX(end), c.Max.X)
		x1 = max(x1, x0+vg.Points(2)) // an instant still shows
		box := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		if !math.IsNaN(s.end) {
			c.FillPolygon(faultFill, box)
		}
		c.StrokeLines(draw.LineStyle{Color: faultEdge, Width: vg.Points(1)}, append(box, box[0]))
	}
}

// DataRange implements plot.DataRanger.
func (g *ganttBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = 0, g.tMax
	for _, s := range g.spans {
		xmax = max(xmax, s.at)
		if !math.IsNaN(s.end) {
			xmax = max(xmax, s.end)
		}
	}
	return xmin, xmax, -0.6, float64(len(g.spans)) - 0.4
}

// Thumbnail implements plot.Thumbnailer for the legend.
func (g *ganttBars) Thumbnail(c *draw.Canvas) {
	(&faultOverlay{}).Thumbnail(c)
}

// heatCells is a plot.Plotter drawing a heatmap: row r (0 at the bottom) of values over columns
// of time, each column spanning [edges[c], edges[c+1]) us. It takes gonum's axes but draws its
// own cells: runs of one colour become one rectangle, and each reaches a hair past its right
// edge, so anti-aliasing leaves no seams between cells (plotter.HeatMap draws every cell
// separately, which shows as white hairlines in a browser).
type heatCells struct {
	edges []float64   // column edges (us), ascending, len(columns)+1
	rows  [][]float64 // [row][column], values in [0, max]
	max   float64     // value of the darkest colour (> 0)
	pal   []color.Color
}

// colour is the palette colour of v: an empty queue is white, and any queue at all at least
// the palette's second colour (its first is white too).
func (h *heatCells) colour(v float64) color.Color {
	if v <= 0 {
		return color.White
	}
	k := int(v/h.max*float64(len(h.pal)-1) + 0.5)
	return h.pal[min(max(k, 1), len(h.pal)-1)]
}

// Plot implements plot.Plotter.
func (h *heatCells) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	seam := vg.Points(0.6)
	for r, row := range h.rows {
		y0, y1 := trY(float64(r)-0.5), trY(float64(r)+0.5)
		for lo := 0; lo < len(row); {
			col := h.colour(row[lo])
			hi := lo + 1
			for hi < len(row) && h.colour(row[hi]) == col {
				hi++
			}
			x0, x1 := trX(h.edges[lo]), trX(h.edges[hi])
			if hi < len(row) {
				x1 += seam
			}
			c.FillPolygon(col, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1 + seam}, {X: x0, Y: y1 + seam}})
			lo = hi
		}
	}
}

// DataRange implements plot.DataRanger.
func (h *heatCells) DataRange() (xmin, xmax, ymin, ymax float64) {
	return h.edges[0], h.edges[len(h.edges)-1], -0.5, float64(len(h.rows)) - 0.5
}

// colourBar is a plot.Plotter drawing the scale of a heatCells along x, from 0 to its max.
type colourBar struct{ h *heatCells }

// Plot implements plot.Plotter.
func (b colourBar) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	n := len(b.h.pal)
	for i := range n {
		v0, v1 := b.h.max*float64(i)/float64(n), b.h.max*float64(i+1)/float64(n)
		x0, x1 := trX(v0), trX(v1)
		if i < n-1 {
			x1 += vg.Points(0.6)
		}
		c.FillPolygon(b.h.colour((v0+v1)/2), []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
	}
}

// DataRange implements plot.DataRanger.
func (b colourBar) DataRange() (xmin, xmax, ymin, ymax float64) { return 0, b.h.max, 0, 1 }

// plainTicks are gonum's default tick positions labelled without trailing zeros ("2500", not
// "2500.00").
type plainTicks struct{}

// Ticks implements plot.Ticker.
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 6, 64)
		}
	}
	return ts
}
