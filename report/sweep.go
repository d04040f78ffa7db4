package report

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Sweep is what sweep.html plots beside the comparison of a sweep's runs: each variant's
// swept parameter values and one chosen figure.
type Sweep struct {
	// Params are the variants keys in order ("transport.kind", "seeds").
	Params []string
	// Values holds, per variant, its value of each parameter as the variants section wrote
	// it (len(Values[i]) == len(Params)).
	Values [][]string
	// SeedParam is the index in Params of the seed axis (the variants key seeds or
	// run.seed), -1 for none: variants that differ only there are averaged, with their 95%
	// confidence interval (Student's t) drawn as error bars.
	SeedParam int
	// Figure names the figure plotted (a sweep.csv column, "jct_us"); Y is its value per
	// variant, NaN where the variant did not run or has no such figure.
	Figure string
	Y      []float64
}

// maxSweepSeries bounds the lines of one sweep plot: beyond it the other parameters'
// settings are averaged into one line.
const maxSweepSeries = 10

// WriteSweep writes sweep.html at out: the compare page of the runs in dirs (named names, as
// WriteCompare) followed by one plot per swept parameter (the seed axis excepted) of
// sw.Figure against that parameter's values, one line per setting of the other
// parameters. Numeric values (sizes and rates with units included) are placed by value,
// others evenly in the order the variants section gives them. Errors: as WriteCompare, or
// an inconsistent sw.
func WriteSweep(out string, names, dirs []string, sw Sweep) error {
	return WriteSweepPages("", out, names, dirs, sw)
}

// WriteSweepPages writes a sweep's compare.html (at compareOut, as WriteCompare; "" skips
// it) and sweep.html (at out, as WriteSweep) from one reading of the results folders: the
// pages read every variant's CSVs, which dominate the end of a large sweep. Errors: as
// WriteCompare and WriteSweep.
func WriteSweepPages(compareOut, out string, names, dirs []string, sw Sweep) error {
	if err := checkSweep(names, dirs, sw); err != nil {
		return err
	}
	runs, err := loadRuns(dirs, names)
	if err != nil {
		return err
	}
	if compareOut != "" {
		pg, err := comparePage(runs, compareOut)
		if err != nil {
			return fmt.Errorf("report: compare: %w", err)
		}
		if err := writePage(compareOut, pg); err != nil {
			return err
		}
	}
	return writeSweep(out, runs, names, dirs, sw)
}

// checkSweep rejects an inconsistent sw or no folders (WriteSweep's errors).
func checkSweep(names, dirs []string, sw Sweep) error {
	if len(sw.Values) != len(sw.Y) {
		return fmt.Errorf("report: sweep: %d variants with values, %d with figures", len(sw.Values), len(sw.Y))
	}
	for i, v := range sw.Values {
		if len(v) != len(sw.Params) {
			return fmt.Errorf("report: sweep: variant %d has %d values for %d parameters", i, len(v), len(sw.Params))
		}
	}
	if len(dirs) == 0 {
		return errors.New("report: sweep: no results folders")
	}
	if len(names) != len(dirs) {
		return fmt.Errorf("report: sweep: %d names for %d results folders", len(names), len(dirs))
	}
	return nil
}

// writeSweep writes sweep.html at out from the loaded runs (WriteSweep).
func writeSweep(out string, runs []*runData, names, dirs []string, sw Sweep) error {
	pg, err := comparePage(runs, out)
	if err != nil {
		return fmt.Errorf("report: sweep: %w", err)
	}
	pg.Title = "lockstep sweep: " + strings.Join(sw.Params, " x ")
	pg.Subtitle = fmt.Sprintf("%d variants (%d ran): the runs side by side (ratios to the first, %s), then %s against each swept parameter.",
		len(sw.Values), len(dirs), names[0], sw.Figure)
	var figs []figure
	for p := range sw.Params {
		if p == sw.SeedParam {
			continue
		}
		f, err := sweepFigure(sw, p)
		if err != nil {
			return fmt.Errorf("report: sweep: %w", err)
		}
		figs = append(figs, f)
	}
	pg.Figures = append(figs, pg.Figures...) // the sweep's own plots lead the figures
	return writePage(out, pg)
}

// sweepFigure plots sw.Figure against parameter p.
func sweepFigure(sw Sweep, p int) (figure, error) {
	id := "sweep-" + strconv.Itoa(p)
	title := fmt.Sprintf("%s against %s", sw.Figure, sw.Params[p])
	xs, labels, numeric := sweepAxis(sw, p)
	// Series: the other non-seed parameters' settings.
	var order []string
	series := map[string]map[float64][]float64{}
	for i, v := range sw.Values {
		if math.IsNaN(sw.Y[i]) {
			continue
		}
		var parts []string
		for q, val := range v {
			if q != p && q != sw.SeedParam {
				parts = append(parts, sw.Params[q]+"="+val)
			}
		}
		key := strings.Join(parts, " ")
		if _, ok := series[key]; !ok {
			series[key] = map[float64][]float64{}
			order = append(order, key)
		}
		series[key][xs[i]] = append(series[key][xs[i]], sw.Y[i])
	}
	if len(order) == 0 {
		return noData(id, title, "no data: no variant that ran has "+sw.Figure), nil
	}
	if len(order) > maxSweepSeries {
		all := map[float64][]float64{}
		for _, k := range order {
			for x, ys := range series[k] {
				all[x] = append(all[x], ys...)
			}
		}
		series, order = map[string]map[float64][]float64{"mean over the other parameters": all}, []string{"mean over the other parameters"}
	}
	pn := newPanel("", sw.Params[p], sw.Figure).grid()
	bars := false
	for si, k := range order {
		var pts plotter.XYs
		var errs plotter.YErrors
		xsSorted := make([]float64, 0, len(series[k]))
		for x := range series[k] {
			xsSorted = append(xsSorted, x)
		}
		sort.Float64s(xsSorted)
		for _, x := range xsSorted {
			m, ci := MeanCI95(series[k][x])
			pts = append(pts, plotter.XY{X: x, Y: m})
			errs = append(errs, struct{ Low, High float64 }{ci, ci})
			bars = bars || ci > 0
		}
		name := k
		if name == "" {
			name = sw.Figure
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return figure{}, err
		}
		sc.GlyphStyle.Color, sc.GlyphStyle.Radius = seriesColor(si), vg.Points(2.2)
		pn.p.Add(sc)
		if numeric {
			// A line joins values on a numeric axis; categories stay points.
			if err := pn.line(si, name, pts); err != nil {
				return figure{}, err
			}
		} else {
			pn.leg.Add(name, sc)
		}
		if bars {
			eb, err := plotter.NewYErrorBars(struct {
				plotter.XYer
				plotter.YErrorer
			}{pts, errs})
			if err != nil {
				return figure{}, err
			}
			eb.LineStyle.Color = seriesColor(si)
			pn.p.Add(eb)
		}
	}
	if !numeric {
		ticks := make([]plot.Tick, len(labels))
		for i, l := range labels {
			ticks[i] = plot.Tick{Value: float64(i), Label: l}
		}
		pn.p.X.Tick.Marker = plot.ConstantTicks(ticks)
		pn.p.X.Min, pn.p.X.Max = -0.5, float64(len(labels))-0.5
	}
	pn.zeroY()
	svg, err := figureSVG(id, title, 0, pn)
	if err != nil {
		return figure{}, err
	}
	caption := fmt.Sprintf("%s of each variant against its %s, one line per setting of the other parameters.", sw.Figure, sw.Params[p])
	if sw.SeedParam >= 0 {
		caption += " Each point is the mean over the seeds, with its 95% confidence interval (Student's t) as an error bar."
	}
	return figure{ID: id, Title: title, Caption: caption, SVG: svg}, nil
}

// sweepAxis places each variant on parameter p's axis: by value when every value is a number
// (an optional unit suffix such as KiB, MiB, G, us allowed: sizes scale by it), else by the
// value's position among the distinct values in order of appearance (labels).
func sweepAxis(sw Sweep, p int) (xs []float64, labels []string, numeric bool) {
	xs = make([]float64, len(sw.Values))
	numeric = true
	for i, v := range sw.Values {
		x, ok := numberWithUnit(v[p])
		if !ok {
			numeric = false
			break
		}
		xs[i] = x
	}
	if numeric {
		return xs, nil, true
	}
	at := map[string]int{}
	for i, v := range sw.Values {
		k, ok := at[v[p]]
		if !ok {
			k = len(labels)
			at[v[p]] = k
			labels = append(labels, v[p])
		}
		xs[i] = float64(k)
	}
	return xs, labels, false
}

// unitScale are the suffixes numberWithUnit understands, longest first within a prefix.
var unitScale = []struct {
	suffix string
	scale  float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
	{"Gbps", 1e9}, {"Mbps", 1e6}, {"Tbps", 1e12}, {"G", 1e9}, {"M", 1e6}, {"T", 1e12}, {"K", 1e3},
	{"ps", 1e-6}, {"ns", 1e-3}, {"us", 1}, {"ms", 1e3}, {"s", 1e6},
}

// numberWithUnit parses "256KiB", "400G", "1.5us" or "0.8" (times as microseconds).
func numberWithUnit(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if x, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(x) && !math.IsInf(x, 0) {
		return x, true
	}
	for _, u := range unitScale {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			if x, err := strconv.ParseFloat(strings.TrimSpace(num), 64); err == nil && !math.IsNaN(x) && !math.IsInf(x, 0) {
				return x * u.scale, true
			}
		}
	}
	return 0, false
}

// MeanCI95 is the mean of ys and the half-width of the 95% confidence interval of the mean,
// t(0.975, n-1) x sd / sqrt(n) with the sample standard deviation (Student's t: few samples,
// unknown spread); the half-width is 0 for fewer than two values, and both are 0 for none.
func MeanCI95(ys []float64) (mean, half float64) {
	if len(ys) == 0 {
		return 0, 0
	}
	n := float64(len(ys))
	for _, y := range ys {
		mean += y
	}
	mean /= n
	if len(ys) < 2 {
		return mean, 0
	}
	var ss float64
	for _, y := range ys {
		ss += (y - mean) * (y - mean)
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(0.975)
	return mean, t * math.Sqrt(ss/(n-1)) / math.Sqrt(n)
}
