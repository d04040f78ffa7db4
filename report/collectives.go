package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// collData is collectives.csv as the busbw plot needs it: every row, grouped by collective
// name in the order the names first appear.
type collData struct {
	names []string
	rows  map[string][]collRow // by name, in file order
}

// collRow is one collective at one size. Figures a row leaves empty are NaN.
type collRow struct {
	op, algorithm      string
	size               float64 // bytes
	time, algbw, busbw float64 // us, GB/s, GB/s
	model              float64 // model_us: the closed form's time
}

// modelBusbw is the busbw the closed form gives: the measured busbw scaled by time/model (the
// same size and bus factor); NaN when either time is missing.
func (r collRow) modelBusbw() float64 {
	if !(r.model > 0) || !(r.time > 0) {
		return math.NaN()
	}
	return r.busbw * r.time / r.model
}

// readCollectives reads collectives.csv (docs/outputs.md) for the plot. Required columns:
// name, size_bytes (> 0), busbw_GBps; algbw_GBps, time_us, model_us, op and algorithm are read
// when present (an empty model_us: no closed form). Errors are *FileError values naming the
// file, line and column.
func readCollectives(file string, r io.Reader) (*collData, error) {
	t, err := newCSVTable(file, r, "name", "size_bytes", "busbw_GBps")
	if err != nil {
		return nil, err
	}
	d := &collData{rows: map[string][]collRow{}}
	opt := func(c string) (float64, error) {
		v, ok, err := t.optFloat(c)
		if err != nil || !ok {
			return math.NaN(), err
		}
		if v < 0 {
			return 0, t.cellErr(c, errNegative(t.str(c)))
		}
		return v, nil
	}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return d, nil
		}
		row := collRow{op: t.str("op"), algorithm: t.str("algorithm")}
		if row.size, err = t.float("size_bytes"); err != nil {
			return nil, err
		}
		if !(row.size > 0) {
			return nil, t.cellErr("size_bytes", fmt.Errorf("%s is not a size: it must be > 0", t.str("size_bytes")))
		}
		if row.busbw, err = t.nonNeg("busbw_GBps"); err != nil {
			return nil, err
		}
		for _, f := range []struct {
			col string
			v   *float64
		}{{"algbw_GBps", &row.algbw}, {"time_us", &row.time}, {"model_us", &row.model}} {
			if *f.v, err = opt(f.col); err != nil {
				return nil, err
			}
		}
		name := t.str("name")
		if name == "" {
			return nil, t.cellErr("name", errors.New("empty collective name"))
		}
		if _, seen := d.rows[name]; !seen {
			d.names = append(d.names, name)
		}
		d.rows[name] = append(d.rows[name], row)
	}
}

// sizeTicks labels a log axis of bytes at powers of two ("64 KiB", "1 MiB"), at most about
// eight labels, with unlabelled ticks at the powers between.
type sizeTicks struct{}

// Ticks implements plot.Ticker.
func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	e0, e1 := int(math.Ceil(math.Log2(lo)-1e-9)), int(math.Floor(math.Log2(hi)+1e-9))
	stride := max(1, (e1-e0+8)/8)
	var ts []plot.Tick
	for e := e0; e <= e1; e++ {
		t := plot.Tick{Value: math.Ldexp(1, e)}
		if (e-e0)%stride == 0 {
			t.Label = fmtBytes(t.Value)
		}
		ts = append(ts, t)
	}
	return ts
}

// fmtBytes formats a size in binary units ("512 B", "64 KiB", "1.5 MiB").
func fmtBytes(v float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	u := 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " " + units[u]
}

// sizeAxis puts the x axis of pn on a log scale of message sizes from lo to hi bytes.
func sizeAxis(pn *panel, lo, hi float64) {
	if lo == hi {
		lo, hi = lo/2, hi*2
	}
	pn.p.X.Scale = plot.LogScale{}
	pn.p.X.Tick.Marker = sizeTicks{}
	pn.p.X.Min, pn.p.X.Max = lo, hi
}

// nameDashes tells apart the collectives of one run on a compare page, which share its
// colour: solid, dashed, dotted, dash-dotted, then again.
func nameDashes(k int) []vg.Length {
	return [][]vg.Length{nil, {vg.Points(5), vg.Points(3)}, {vg.Points(1.5), vg.Points(2)}, {vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}}[k%4]
}

// sizeLine adds series i named name through pts (size, GB/s), each measured point marked;
// dashed draws it dashed, without marks (the model).
func sizeLine(pn *panel, i int, name string, pts plotter.XYs, dashed bool) error {
	return sizeLineStyled(pn, i, seriesDashes(i), name, pts, dashed)
}

// sizeLineStyled is sizeLine with the solid line's dashes given.
func sizeLineStyled(pn *panel, i int, dashes []vg.Length, name string, pts plotter.XYs, dashed bool) error {
	var clean plotter.XYs
	for _, p := range pts {
		if !math.IsNaN(p.Y) && !math.IsInf(p.Y, 0) {
			clean = append(clean, p)
		}
	}
	if len(clean) == 0 {
		return nil
	}
	l, err := plotter.NewLine(clean)
	if err != nil {
		return err
	}
	l.LineStyle.Color = seriesColor(i)
	l.LineStyle.Width = vg.Points(1.3)
	l.LineStyle.Dashes = dashes
	if dashed {
		l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(2.5)}
		l.LineStyle.Width = vg.Points(1)
		pn.p.Add(l)
		pn.leg.Add(name, l)
		return nil
	}
	sc, err := plotter.NewScatter(clean)
	if err != nil {
		return err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: seriesColor(i), Radius: vg.Points(2.2), Shape: draw.CircleGlyph{}}
	pn.p.Add(l, sc)
	pn.leg.Add(name, l, sc)
	return nil
}

// sizeRange is the smallest and largest size of rows.
func (d *collData) sizeRange() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, rows := range d.rows {
		for _, r := range rows {
			lo, hi = min(lo, r.size), max(hi, r.size)
		}
	}
	return lo, hi
}

// algorithms says which algorithms a collective's rows used, by size range ("ring",
// "recursive_doubling 64 KiB, halving_doubling 128 KiB-4 MiB, ring 8-16 MiB").
func algorithms(rows []collRow) string {
	type run struct {
		alg    string
		lo, hi float64
	}
	var runs []run
	for _, r := range rows {
		if n := len(runs); n > 0 && runs[n-1].alg == r.algorithm {
			runs[n-1].hi = r.size
			continue
		}
		runs = append(runs, run{r.algorithm, r.size, r.size})
	}
	if len(runs) == 1 {
		return runs[0].alg
	}
	var parts []string
	for _, r := range runs {
		s := r.alg + " " + fmtBytes(r.lo)
		if r.hi != r.lo {
			s += " to " + fmtBytes(r.hi)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// busbwFigure is nccl-tests' chart: bus bandwidth against message size (log), one line per
// collective of collectives.csv, the closed-form model dashed; and algbw below.
func busbwFigure(d *collData) (figure, error) {
	const title = "Bus bandwidth against message size"
	if len(d.names) == 0 {
		return noData(idBusbw, title, "collectives.csv has no rows"), nil
	}
	lo, hi := d.sizeRange()
	if lo == hi {
		return noData(idBusbw, title, fmt.Sprintf("every collective in collectives.csv ran at one size (%s): a sweep (bytes with max_bytes) draws busbw against size; the table below lists them", fmtBytes(lo))), nil
	}
	bus := newPanel("", "", "busbw (GB/s)").grid()
	alg := newPanel("", "message size (bytes, log scale)", "algbw (GB/s)").grid()
	var notes []string
	model := false
	for i, name := range d.names {
		rows := slices.Clone(d.rows[name])
		slices.SortStableFunc(rows, func(a, b collRow) int {
			switch {
			case a.size < b.size:
				return -1
			case a.size > b.size:
				return 1
			}
			return 0
		})
		var pb, pm, pa, pam plotter.XYs
		best := rows[0]
		for _, r := range rows {
			pb = append(pb, plotter.XY{X: r.size, Y: r.busbw})
			pm = append(pm, plotter.XY{X: r.size, Y: r.modelBusbw()})
			pa = append(pa, plotter.XY{X: r.size, Y: r.algbw})
			m := math.NaN()
			if r.model > 0 {
				m = r.size / r.model / 1e3
			}
			pam = append(pam, plotter.XY{X: r.size, Y: m})
			if r.busbw > best.busbw {
				best = r
			}
		}
		label := name
		if op := rows[0].op; op != "" && op != name {
			label += " (" + op + ")"
		}
		if err := sizeLine(bus, i, label, pb, false); err != nil {
			return figure{}, err
		}
		if err := sizeLine(bus, i, name+" model", pm, true); err != nil {
			return figure{}, err
		}
		if err := sizeLine(alg, i, label, pa, false); err != nil {
			return figure{}, err
		}
		if err := sizeLine(alg, i, name+" model", pam, true); err != nil {
			return figure{}, err
		}
		model = model || slices.ContainsFunc(pm, func(p plotter.XY) bool { return !math.IsNaN(p.Y) })
		note := fmt.Sprintf("%s: %d sizes, %s; busbw peaks at %s GB/s at %s", name, len(rows), algorithms(rows), fmtSig(best.busbw), fmtBytes(best.size))
		notes = append(notes, note)
	}
	for _, pn := range []*panel{bus, alg} {
		sizeAxis(pn, lo, hi)
		pn.zeroY()
	}
	svg, err := figureSVG(idBusbw, title, 0, bus, alg)
	caption := "From collectives.csv, as nccl-tests reports it: busbw = algbw x the bus factor (all-reduce 2(n-1)/n; reduce-scatter, all-gather, all-to-all (n-1)/n; others 1), algbw = size / time, per size of each collective."
	if model {
		caption += " Dashed: the closed-form model (model_us) at the same size and bus factor."
	}
	caption += " " + strings.Join(notes, "; ") + "."
	return figure{ID: idBusbw, Title: title, Caption: caption, SVG: svg}, err
}

// compareBusbw overlays the busbw-against-size lines of every collective run (runData.
// isCollective), one line per run (its colour) and collective (its dashes).
func compareBusbw(runs []*runData) (figure, error) {
	const title = "Bus bandwidth against message size"
	pn := newPanel("", "message size (bytes, log scale)", "busbw (GB/s)").grid()
	lo, hi := math.Inf(1), math.Inf(-1)
	var without []string
	k := 0
	for ri, r := range runs {
		d := r.sweep
		if d == nil || len(d.names) == 0 || !r.isCollective() {
			without = append(without, r.name)
			continue
		}
		l, h := d.sizeRange()
		lo, hi = min(lo, l), max(hi, h)
		for ni, name := range d.names {
			var pts plotter.XYs
			for _, row := range d.rows[name] {
				pts = append(pts, plotter.XY{X: row.size, Y: row.busbw})
			}
			slices.SortStableFunc(pts, func(a, b plotter.XY) int {
				if a.X < b.X {
					return -1
				}
				if a.X > b.X {
					return 1
				}
				return 0
			})
			label := r.name
			if len(d.names) > 1 {
				label += ": " + name
			}
			if err := sizeLineStyled(pn, ri, nameDashes(ni), label, pts, false); err != nil {
				return figure{}, err
			}
			k++
		}
	}
	if k == 0 {
		return noData(idBusbw, title, "no run has rows in collectives.csv"), nil
	}
	sizeAxis(pn, lo, hi)
	pn.zeroY()
	svg, err := figureSVG(idBusbw, title, 0, pn)
	caption := "busbw (collectives.csv: algbw x nccl-tests' bus factor) of every run's collectives against message size."
	if len(without) > 0 {
		caption += " No collectives.csv: " + strings.Join(without, ", ") + "."
	}
	return figure{ID: idBusbw, Title: title, Caption: caption, SVG: svg}, err
}

// isCollective reports whether the run is a collective workload's: collectives.csv with rows,
// and no traffic in flows.csv (a workload writes it empty).
func (r *runData) isCollective() bool {
	return r.sweep != nil && len(r.sweep.names) > 0 && (r.flows == nil || r.flows.rows == 0)
}
