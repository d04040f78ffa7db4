package report

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
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

// The files a training workload adds to its results folder (docs/outputs.md).
const (
	filePower = "power.csv"
	fileSteps = "steps.csv"
)

// Plot ids of a training run's page.
const (
	idPower      = "power"
	idSteps      = "step-breakdown"
	idStepSeries = "step-series"
	idNetwork    = "network"
)

// powerData is power.csv: the cluster's GPU power at each sample.
type powerData struct {
	times []float64 // us, ascending
	mw    []float64 // MW at times[i]
}

// readPower reads power.csv (time_us, power_mw; both >= 0). Rows are put in time order.
// Errors are *FileError values naming file, line and column.
func readPower(file string, r io.Reader) (*powerData, error) {
	t, err := newCSVTable(file, r, "time_us", "power_mw")
	if err != nil {
		return nil, err
	}
	type sample struct{ t, mw float64 }
	var ss []sample
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		at, err := t.nonNeg("time_us")
		if err != nil {
			return nil, err
		}
		mw, err := t.nonNeg("power_mw")
		if err != nil {
			return nil, err
		}
		ss = append(ss, sample{at, mw})
	}
	slices.SortStableFunc(ss, func(a, b sample) int { return cmp.Compare(a.t, b.t) })
	d := &powerData{times: make([]float64, len(ss)), mw: make([]float64, len(ss))}
	for i, s := range ss {
		d.times[i], d.mw[i] = s.t, s.mw
	}
	return d, nil
}

// stepCategories are the columns of steps.csv that split a step's time (per-rank means that
// add up to step_time_us), in the order they are stacked, with their legend names.
var stepCategories = []struct{ col, name string }{
	{"compute_us", "compute"},
	{"tp_us", "TP exposed"},
	{"pp_us", "PP wait"},
	{"dp_us", "DP exposed"},
	{"ep_us", "EP exposed"},
	{"cp_us", "CP exposed"},
	{"bubble_us", "pipeline bubble"},
	{"sync_us", "sync"},
}

// maxStepsKept bounds the rows of steps.csv the report keeps (a run may report millions of
// steps, all but the simulated ones repeats); the rest are only counted.
const maxStepsKept = 100_000

// stepRow is one row of steps.csv.
type stepRow struct {
	step        int
	start, time float64   // us
	cats        []float64 // us, as stepCategories; 0 where the file lacks the column
	simulated   bool
	// The per-step columns of a newer steps.csv (NaN or "" where the file lacks them): the
	// barrier arrival percentiles, the DP launch skew, the slowest and busiest rank, the
	// slowest link and the fault events the runner wrote.
	p50, p99, p100, skew  float64 // us
	slowest, coord, wait  string
	busiest, link, events string
	busiestUs             float64 // us
}

// stepsData is steps.csv: one row per simulated step, the last standing for every later
// iteration of the job (they repeat it; the iterations column says how many steps a row is).
// An earlier format had one row per iteration and a simulated column (0 for the repeats); it is
// read too.
type stepsData struct {
	rows       int
	steps      []stepRow // the first maxStepsKept rows, in file order
	simulated  int       // simulated rows (every row, unless a simulated column says otherwise)
	iterations int       // the job's steps the rows stand for (the rows, without an iterations column)
}

// readSteps reads steps.csv (docs/outputs.md): step, start_us and step_time_us are required;
// the category columns and iterations (or simulated) are used when present. Times must be
// >= 0, iterations >= 1. Errors are *FileError values naming file, line and column.
func readSteps(file string, r io.Reader) (*stepsData, error) {
	t, err := newCSVTable(file, r, "step", "start_us", "step_time_us")
	if err != nil {
		return nil, err
	}
	d := &stepsData{}
	_, hasSim := t.col["simulated"]
	_, hasIters := t.col["iterations"]
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return d, nil
		}
		d.rows++
		s := stepRow{simulated: true}
		if s.step, err = t.int("step"); err != nil {
			return nil, err
		}
		if s.start, err = t.nonNeg("start_us"); err != nil {
			return nil, err
		}
		if s.time, err = t.nonNeg("step_time_us"); err != nil {
			return nil, err
		}
		s.cats = make([]float64, len(stepCategories))
		for i, c := range stepCategories {
			v, ok, err := t.optFloat(c.col)
			if err != nil {
				return nil, err
			}
			if ok && v < 0 {
				return nil, t.cellErr(c.col, errNegative(t.str(c.col)))
			}
			s.cats[i] = v
		}
		for _, f := range []struct {
			col string
			v   *float64
		}{{"arrive_p50_us", &s.p50}, {"arrive_p99_us", &s.p99}, {"arrive_p100_us", &s.p100}, {"dp_skew_max_us", &s.skew}, {"busiest_compute_us", &s.busiestUs}} {
			v, ok, err := t.optFloat(f.col)
			if err != nil {
				return nil, err
			}
			if ok && v < 0 {
				return nil, t.cellErr(f.col, errNegative(t.str(f.col)))
			}
			*f.v = math.NaN()
			if ok {
				*f.v = v
			}
		}
		s.slowest, s.coord, s.wait = t.str("slowest_rank"), t.str("slowest_coord"), t.str("slowest_wait")
		s.busiest, s.link, s.events = t.str("busiest_rank"), t.str("slowest_link"), t.str("events")
		iters := 1
		if hasIters {
			if iters, err = t.int("iterations"); err != nil {
				return nil, err
			}
			if iters < 1 || iters > maxIterations {
				return nil, t.cellErr("iterations", fmt.Errorf("%d is out of range: a row stands for 1 to %d steps", iters, maxIterations))
			}
		}
		if hasSim {
			switch t.str("simulated") {
			case "1", "true":
			case "0", "false":
				s.simulated = false
			default:
				return nil, t.cellErr("simulated", errors.New("want 1 (simulated) or 0 (a repeat of the last simulated step)"))
			}
		}
		if s.simulated {
			d.simulated++
		}
		d.iterations = min(d.iterations+iters, maxIterations)
		if len(d.steps) < maxStepsKept {
			d.steps = append(d.steps, s)
		}
	}
}

// maxIterations bounds the steps a training run reports (workload.training.steps).
const maxIterations = 100_000_000

// isTraining reports whether summary.json is a training workload's (it has a training block).
func (s *summaryData) isTraining() bool {
	if s == nil {
		return false
	}
	for _, f := range s.figs {
		if strings.HasPrefix(f.path, "training.") {
			return true
		}
	}
	return false
}

// hasTraffic reports whether the run sent packets (a packet-level run; a training run on the
// flow-level engine or the closed forms sends none, and its packet figures are all zero).
func (s *summaryData) hasTraffic() bool {
	v, _ := s.number("sent_packets")
	return v > 0
}

// timeUnit picks ms or us for an axis spanning up to maxUs: the divisor and the unit's name.
func timeUnit(maxUs float64) (float64, string) {
	if maxUs >= 2000 {
		return 1000, "ms"
	}
	return 1, "us"
}

// stepBands is a plot.Plotter shading every other step of a training run and marking each
// step's start, so the power trace reads step by step.
type stepBands struct {
	starts, ends []float64 // in the plot's x units
}

var (
	bandFill = color.NRGBA{0x4e, 0x79, 0xa7, 0x1c}
	bandEdge = color.NRGBA{0x4e, 0x79, 0xa7, 0x70}
)

// Plot implements plot.Plotter.
func (b *stepBands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	edge := draw.LineStyle{Color: bandEdge, Width: vg.Points(0.6), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
	for i := range b.starts {
		x0, x1 := max(trX(b.starts[i]), c.Min.X), min(trX(b.ends[i]), c.Max.X)
		if x0 > c.Max.X || x1 < c.Min.X {
			continue
		}
		if i%2 == 1 && x1 > x0 {
			c.FillPolygon(bandFill, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
		}
		if i > 0 {
			c.StrokeLine2(edge, x0, c.Min.Y, x0, c.Max.Y)
		}
	}
}

// Thumbnail implements plot.Thumbnailer.
func (b *stepBands) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(bandFill, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
	c.StrokeLine2(draw.LineStyle{Color: bandEdge, Width: vg.Points(0.6)}, r.Min.X, r.Min.Y, r.Min.X, r.Max.Y)
}

// maxStepBands bounds the steps shaded on the power plot; past it the bands would be hairlines.
const maxStepBands = 300

// powerFigure is the cluster's power over time (power.csv), with the steps of steps.csv shaded
// alternately and the mean of summary.json dashed.
func powerFigure(p *powerData, st *stepsData, s *summaryData) (figure, error) {
	const title = "Cluster power over time"
	switch {
	case p == nil:
		return noData(idPower, title, absent(filePower)), nil
	case len(p.times) == 0:
		return noData(idPower, title, "power.csv has no rows"), nil
	}
	dt := minGap(p.times, 0)
	if !(dt > 0) { // one sample
		dt = 1
		if v, ok := s.number("training.power_interval_us"); ok && v > 0 {
			dt = v
		}
	}
	tEnd := p.times[len(p.times)-1] + dt
	hi := slices.Max(p.mw)
	if math.IsInf(tEnd, 0) || math.IsInf(hi*1.5, 0) {
		return noData(idPower, title, "power.csv holds numbers too large to plot"), nil
	}
	div, unit := timeUnit(tEnd)
	pn := newPanel("", "time ("+unit+")", "GPU power, whole cluster (MW)").grid()

	// power.csv covers the simulated steps (the others repeat the last one).
	inPower := func(r stepRow) bool { return r.simulated && r.start < tEnd }
	var bandNote string
	if st != nil {
		b := &stepBands{}
		inRange := 0
		for _, r := range st.steps {
			if inPower(r) {
				inRange++
			}
		}
		if inRange > 0 && inRange <= maxStepBands {
			for _, r := range st.steps {
				if inPower(r) {
					b.starts = append(b.starts, r.start/div)
					b.ends = append(b.ends, (r.start+r.time)/div)
				}
			}
			pn.p.Add(b)
			pn.leg.Add("steps (every other shaded)", b)
			bandNote = fmt.Sprintf(" The %d steps of steps.csv in this span are shaded every other one (dashed lines at each step's start).", inRange)
		} else if inRange > maxStepBands {
			bandNote = fmt.Sprintf(" The span holds %d steps of steps.csv: too many to mark.", inRange)
		}
	}

	pts := make(plotter.XYs, len(p.times))
	lo, sum := math.Inf(1), 0.0
	for i, t := range p.times {
		pts[i] = plotter.XY{X: t / div, Y: p.mw[i]}
		lo, sum = min(lo, p.mw[i]), sum+p.mw[i]/float64(len(p.mw))
	}
	if err := pn.line(0, "power", pts); err != nil {
		return figure{}, err
	}
	mean, ok := s.number("training.power_mean_mw")
	if !ok {
		mean = sum
	}
	ml, err := plotter.NewLine(plotter.XYs{{X: 0, Y: mean}, {X: tEnd / div, Y: mean}})
	if err != nil {
		return figure{}, err
	}
	ml.LineStyle = draw.LineStyle{Color: seriesColor(3), Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
	pn.p.Add(ml)
	pn.leg.Add("mean", ml)

	pn.p.X.Min, pn.p.X.Max = 0, tEnd/div
	if lo > 0.6*hi {
		// A swing small next to the mean: zoom on it rather than flatten it against zero.
		pad := (hi - lo) * 0.12
		if pad == 0 {
			pad = hi * 0.05
		}
		pn.p.Y.Min, pn.p.Y.Max = lo-pad, hi+pad
	} else {
		pn.p.Y.Min, pn.p.Y.Max = 0, hi*1.05
		if !(hi > 0) {
			pn.p.Y.Max = 1
		}
	}
	svg, err := figureSVG(idPower, title, 0, pn)
	swing := hi - lo
	if v, ok := s.number("training.power_swing_mw"); ok {
		swing = v
	}
	caption := fmt.Sprintf("The GPUs' power summed over the cluster at each sample of power.csv (every %s us, %d samples): busy while computing, lower while waiting on the network, idle otherwise. From %s to %s MW, mean %s MW (dashed), swing %s MW.",
		fmtNum(dt), len(p.times), fmtSig(lo), fmtSig(hi), fmtSig(mean), fmtSig(swing))
	if v, ok := s.number("training.slew_mw_per_ms"); ok {
		caption += fmt.Sprintf(" Steepest change %s MW/ms.", fmtSig(v))
	}
	if lo > 0.6*hi {
		caption += " The y axis does not start at zero."
	}
	caption += bandNote
	return figure{ID: idPower, Title: title, Caption: caption, SVG: svg}, err
}

// maxStepBars bounds the steps drawn as bars; the caption says how many more there are.
const maxStepBars = 48

// stepsFigure is each simulated step's time split by category (steps.csv): stacked bars.
func stepsFigure(st *stepsData) (figure, error) {
	const title = "Step time by category"
	switch {
	case st == nil:
		return noData(idSteps, title, absent(fileSteps)), nil
	case st.rows == 0:
		return noData(idSteps, title, "steps.csv has no rows"), nil
	}
	var drawn []stepRow
	for _, r := range st.steps {
		if r.simulated && len(drawn) < maxStepBars {
			drawn = append(drawn, r)
		}
	}
	if len(drawn) == 0 { // no row says it was simulated: draw the first ones
		drawn = st.steps[:min(len(st.steps), maxStepBars)]
	}
	longest := 0.0
	for _, r := range drawn {
		sum := r.time
		for _, v := range r.cats {
			sum += v
		}
		if math.IsInf(sum, 0) {
			return noData(idSteps, title, "steps.csv holds numbers too large to plot"), nil
		}
		longest = max(longest, r.time)
	}
	div, unit := timeUnit(longest)

	// The categories' sum is the step time up to rounding; what is left (or a file without the
	// columns) shows as "other".
	cats := make([][]float64, len(stepCategories)+1)
	for _, r := range drawn {
		sum := 0.0
		for i, v := range r.cats {
			cats[i] = append(cats[i], v/div)
			sum += v
		}
		other := r.time - sum
		if other < 1e-3*r.time {
			other = 0
		}
		cats[len(stepCategories)] = append(cats[len(stepCategories)], other/div)
	}
	names := make([]string, 0, len(cats))
	for _, c := range stepCategories {
		names = append(names, c.name)
	}
	names = append(names, "other (not in the categories)")

	pn := newPanel("", "step", "time per step ("+unit+")").grid()
	avail := (figWidth - legendW - vg.Points(60)) / vg.Length(len(drawn))
	width := min(avail*0.7, vg.Points(48))
	var below *plotter.BarChart
	for i, vs := range cats {
		nonzero := false
		for _, v := range vs {
			nonzero = nonzero || v > 0
		}
		if !nonzero {
			continue // a category no step spent time in (EP without experts, ...)
		}
		bc, err := plotter.NewBarChart(plotter.Values(vs), width)
		if err != nil {
			return figure{}, err
		}
		bc.Color = seriesColor(i)
		bc.LineStyle.Width = 0
		if below != nil {
			bc.StackOn(below)
		}
		below = bc
		pn.p.Add(bc)
		pn.leg.Add(names[i], bc)
	}
	var ticks []plot.Tick
	every := (len(drawn) + 23) / 24
	for k, r := range drawn {
		if k%every == 0 {
			ticks = append(ticks, plot.Tick{Value: float64(k), Label: strconv.Itoa(r.step)})
		}
	}
	pn.p.X.Tick.Marker = plot.ConstantTicks(ticks)
	pn.p.X.Min, pn.p.X.Max = -0.6, float64(len(drawn))-0.4
	pn.zeroY()
	if below == nil { // every step took no time
		pn.p.Y.Max = 1
	}
	svg, err := figureSVG(idSteps, title, 0, pn)
	caption := "Each step's time split into what the ranks did, per-rank means from steps.csv: compute, exposed (not overlapped) tensor-, pipeline-, data- and expert-parallel communication, the pipeline bubble and synchronisation; stacked, they add up to the step time."
	if len(drawn) == 1 {
		r := drawn[0]
		caption += fmt.Sprintf(" Step %d: %s %s.", r.step, fmtNum(r.time/div), unit)
	}
	repeats := st.rows - st.simulated
	switch {
	case st.simulated == 0:
		caption += fmt.Sprintf(" No row of steps.csv is marked simulated; the first %d of %d are drawn.", len(drawn), st.rows)
	case repeats > 0:
		caption += fmt.Sprintf(" %d of the %d steps were simulated; the other %d repeat the last simulated step and are not drawn.", st.simulated, st.rows, repeats)
		if st.simulated > len(drawn) {
			caption += fmt.Sprintf(" The first %d simulated steps are drawn.", len(drawn))
		}
	case st.simulated > len(drawn):
		caption += fmt.Sprintf(" The first %d of %d simulated steps are drawn.", len(drawn), st.simulated)
	}
	if more := st.iterations - st.rows; more > 0 {
		caption += fmt.Sprintf(" The %d simulated steps stand for the job's %d: the last is repeated for the %d after it.", st.rows, st.iterations, more)
	}
	return figure{ID: idSteps, Title: title, Caption: caption, SVG: svg}, err
}

// fmtSig formats v with about four significant digits: three decimals from 1 up
// ("402.455"), more below ("0.1259", "1.996e-06").
func fmtSig(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	if v == 0 || math.Abs(v) >= 1 {
		return fmtNum(v)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// trainingLead is a training run's figures in a few sentences, from summary.json's training
// and ocs blocks (empty when it has none): what ran, the step and where its time went, power,
// goodput and the OCS events.
func trainingLead(s *summaryData) []string {
	if !s.isTraining() {
		return nil
	}
	str := func(p string) string {
		f, _ := s.get("training." + p)
		return f.value
	}
	num := func(p string) (float64, bool) { return s.number("training." + p) }
	ms := func(p string) string {
		v, ok := num(p)
		if !ok {
			return ""
		}
		return fmtNum(v/1000) + " ms"
	}
	// join keeps the parts whose value is known: a part is "" when a figure is missing.
	join := func(sep string, parts ...string) string {
		var keep []string
		for _, p := range parts {
			if p != "" {
				keep = append(keep, p)
			}
		}
		return strings.Join(keep, sep)
	}
	with := func(format, p string, conv func(float64) string) string {
		v, ok := num(p)
		if !ok {
			return ""
		}
		return fmt.Sprintf(format, conv(v))
	}
	var out []string

	what := "Training"
	if m := str("model"); m != "" {
		what += " " + m
	}
	if g := str("gpus"); g != "" {
		what += " on " + g
		if gpu := str("gpu"); gpu != "" {
			what += " " + gpu
		}
	}
	var plan []string
	for _, k := range []string{"tp", "cp", "pp", "dp", "ep"} {
		if v := str(k); v != "" && (k != "cp" || v != "1") {
			plan = append(plan, k+" "+v)
		}
	}
	if len(plan) > 0 {
		what += " (" + strings.Join(plan, ", ") + ")"
	}
	if e, ok := s.get("engine"); ok && e.value != "" {
		what += ", collectives on the " + e.value + " engine"
	}
	if n, ok := num("steps"); ok {
		what += fmt.Sprintf("; %s steps reported", fmtNum(n))
		if sim, ok := num("simulated_steps"); ok {
			what += fmt.Sprintf(", %s simulated", fmtNum(sim))
		}
	}
	out = append(out, what+".")

	step := join(", ",
		with("Step time %s", "step_time_us", func(v float64) string { return fmtNum(v/1000) + " ms" }),
		with("ideal %s", "ideal_step_us", func(v float64) string { return fmtNum(v/1000) + " ms" }),
		with("MFU %s", "mfu", func(v float64) string { return strconv.FormatFloat(v*100, 'f', 1, 64) + "%" }),
		with("%s tokens/s", "tokens_per_s", func(v float64) string { return fmtNum(math.Round(v)) }))
	if step != "" {
		out = append(out, step+".")
	}

	var kinds []string
	for _, k := range []struct{ name, path string }{{"TP", "tp_exposed_us"}, {"PP", "pp_wait_us"}, {"DP", "dp_exposed_us"}, {"EP", "ep_exposed_us"}, {"CP", "cp_exposed_us"}} {
		if v, ok := num(k.path); ok && (k.name != "CP" || str("cp") != "1") {
			kinds = append(kinds, k.name+" "+fmtNum(v/1000))
		}
	}
	comm := ms("exposed_comm_us")
	if comm != "" && len(kinds) > 0 {
		comm = "exposed communication " + comm + " (" + strings.Join(kinds, ", ") + " ms)"
	} else if comm != "" {
		comm = "exposed communication " + comm
	}
	per := join(", ", prefixed("compute ", ms("compute_us")), comm,
		prefixed("pipeline bubble ", ms("bubble_us")), prefixed("sync ", ms("sync_us")))
	if per != "" {
		line := "Per rank (mean): " + per + "."
		if r := str("slowest_rank"); r != "" {
			line += " Slowest rank " + r
			if c := str("slowest_rank_coord"); c != "" {
				line += " (" + c + ")"
			}
			if w := str("slowest_wait"); w != "" {
				line += ", mostly waiting on " + w
				if t := ms("slowest_wait_us"); t != "" {
					line += " (" + t + ")"
				}
			}
			line += "."
		}
		out = append(out, line)
	}

	mw := func(v float64) string { return fmtSig(v) + " MW" }
	battery := with("battery to smooth a step %s MJ", "battery_mj", fmtSig)
	if mwh := with(" (%s MWh)", "battery_mwh", fmtSig); battery != "" {
		battery += mwh
	}
	power := join(", ",
		with("mean %s", "power_mean_mw", mw),
		with("min %s", "power_min_mw", mw),
		with("max %s", "power_max_mw", mw),
		with("swing %s", "power_swing_mw", mw),
		with("slew %s MW/ms", "slew_mw_per_ms", fmtSig),
		battery,
		with("energy per step %s MJ", "energy_per_step_mj", fmtSig))
	if power != "" {
		out = append(out, "Power: "+power+".")
	}

	pct := func(v float64) string { return strconv.FormatFloat(v*100, 'f', 1, 64) + "%" }
	goodput := with("Goodput %s", "goodput_frac", pct)
	if goodput != "" {
		goodput += " (Daly's model" + with("; Monte Carlo %s", "goodput_mc_frac", pct) + ")"
	}
	good := join(", ", goodput,
		with("checkpoint every %s s", "ckpt_interval_s", func(v float64) string { return fmtNum(math.Round(v)) }),
		with("job MTBF %s", "job_mtbf_s", func(v float64) string { return fmtNum(math.Round(v)) + " s (" + fmtSig(v/86400) + " days)" }),
		with("%s restarts/day", "restarts_per_day", fmtSig),
		with("%s failures/day absorbed without a restart", "absorbed_failures_per_day", fmtSig))
	if good != "" {
		out = append(out, strings.ToUpper(good[:1])+good[1:]+".")
	}

	for i := 0; ; i++ {
		at := func(k string) (leaf, bool) { return s.get(fmt.Sprintf("ocs[%d].%s", i, k)) }
		chip, ok := at("chip")
		if !ok {
			break
		}
		v := func(k string) string {
			f, _ := at(k)
			return f.value
		}
		msv := func(k string) string {
			f, ok := at(k)
			x, err := strconv.ParseFloat(f.value, 64)
			if !ok || err != nil {
				return "?"
			}
			return fmtNum(x/1000) + " ms"
		}
		out = append(out, fmt.Sprintf("OCS: chip %s failed at %s us; the optical circuit switches moved the job's cube %s from physical cube %s to spare cube %s (%s ranks on new chips) and the job paused %s. Step %s before, %s on the remapped torus (%s for the step with the pause).",
			chip.value, v("at_us"), v("cube"), v("failed_cube"), v("spare_cube"), v("moved_hosts"), msv("pause_us"),
			msv("step_before_us"), msv("step_after_us"), msv("step_with_pause_us")))
	}
	return out
}

// prefixed is p + v, or "" when v is.
func prefixed(p, v string) string {
	if v == "" {
		return ""
	}
	return p + v
}

// eventMarks is a plot.Plotter drawing a dashed vertical line at each step with fault events
// (steps.csv's events column), labelled "E1", "E2", ... at its top; the caption says what each
// was.
type eventMarks struct {
	xs     []float64 // steps, in the plot's x units
	labels []string  // "" draws the line without a label
	// restart draws solid, darker lines (job restarts) with their labels on the lowest row.
	restart bool
}

// restartEdge is the colour of a restart's mark.
var restartEdge = color.NRGBA{0x6a, 0x1b, 0x9a, 0xe0}

// style is the marks' line style.
func (e *eventMarks) style() draw.LineStyle {
	if e.restart {
		return draw.LineStyle{Color: restartEdge, Width: vg.Points(1.8)}
	}
	return draw.LineStyle{Color: faultEdge, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
}

// Plot implements plot.Plotter.
func (e *eventMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	edge := e.style()
	sty := legendStyle(7.5)
	sty.Color = edge.Color
	for i, x := range e.xs {
		px := trX(x)
		if px < c.Min.X-vg.Points(0.5) || px > c.Max.X+vg.Points(0.5) {
			continue
		}
		c.StrokeLine2(edge, px, c.Min.Y, px, c.Max.Y)
		if e.labels[i] != "" {
			// Stagger the labels of neighbouring marks over three rows so they do not overlap
			// (a restart's on a fourth, below them).
			y := c.Max.Y - vg.Points(9) - vg.Length(i%3)*vg.Points(9)
			if e.restart {
				y = c.Max.Y - vg.Points(9) - 3*vg.Points(9)
			}
			c.FillText(sty, vg.Point{X: px + vg.Points(2), Y: y}, e.labels[i])
		}
	}
}

// Thumbnail implements plot.Thumbnailer for the legend.
func (e *eventMarks) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	x := (r.Min.X + r.Max.X) / 2
	c.StrokeLine2(e.style(), x, r.Min.Y, x, r.Max.Y)
}

// Bounds of the step series: events labelled (the rest are marked without a label) and the
// characters of each event's text quoted in the caption.
const (
	maxEventLabels = 12
	maxEventText   = 160
)

// clip shortens s to at most n characters, ending in "..." when cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}

// seriesRows is the rows of steps.csv the series and the per-step table show: the simulated
// ones (every row when none is marked simulated).
func (st *stepsData) seriesRows() []stepRow {
	var out []stepRow
	for _, r := range st.steps {
		if r.simulated {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		out = st.steps
	}
	return out
}

// stepSeriesFigure is the step time against the step index (steps.csv), with the median and
// 99th-percentile rank's arrival at the step barrier when the file has them, and a labelled
// marker at every step whose fault timeline (the events column) is not empty.
func stepSeriesFigure(st *stepsData, sum *summaryData) (figure, error) {
	const title = "Step time per step, with the fault timeline"
	switch {
	case st == nil:
		return noData(idStepSeries, title, absent(fileSteps)), nil
	case st.rows == 0:
		return noData(idStepSeries, title, "steps.csv has no rows"), nil
	}
	rows := st.seriesRows()
	lo, hi, tLo := math.Inf(1), 0.0, math.Inf(1) // the y range; the shortest step
	for _, r := range rows {
		lo, hi, tLo = min(lo, r.time), max(hi, r.time), min(tLo, r.time)
		for _, v := range []float64{r.p50, r.p99} {
			if !math.IsNaN(v) && v > 0 {
				lo = min(lo, v)
			}
		}
	}
	if math.IsInf(hi*1.5, 0) {
		return noData(idStepSeries, title, "steps.csv holds numbers too large to plot"), nil
	}
	div, unit := timeUnit(hi)
	pn := newPanel("", "step", "time ("+unit+")").grid()

	// A step's marks sit at its first fault event's time within it (summary.json's
	// training_faults: a step k spans k-0.5 to k+0.5), else at the step.
	ft := readTrainingFaults(sum)
	var marks eventMarks
	var evNotes []string
	for _, r := range rows {
		if r.events == "" {
			continue
		}
		label := ""
		if len(evNotes) < maxEventLabels {
			label = fmt.Sprintf("E%d", len(evNotes)+1)
			evNotes = append(evNotes, fmt.Sprintf("%s step %d: %s", label, r.step, clip(r.events, maxEventText)))
		}
		x := float64(r.step)
		if at, ok := ft.firstEvent[r.step]; ok {
			x = ft.stepX(r.step, at)
		}
		marks.xs, marks.labels = append(marks.xs, x), append(marks.labels, label)
	}
	// Every other applied fault event of those steps, unlabelled, at its time.
	for _, ev := range ft.events {
		if ev.at != ft.firstEvent[ev.step] { // the first is the step's labelled mark
			marks.xs, marks.labels = append(marks.xs, ft.stepX(ev.step, ev.at)), append(marks.labels, "")
		}
	}
	if len(marks.xs) > 0 {
		pn.p.Add(&marks)
		pn.leg.Add("fault events", &marks)
	}
	restarts := eventMarks{restart: true}
	var rsNotes []string
	for i, rs := range ft.restarts {
		label := fmt.Sprintf("R%d", i+1)
		restarts.xs, restarts.labels = append(restarts.xs, ft.stepX(rs.step, rs.at)), append(restarts.labels, label)
		rsNotes = append(rsNotes, fmt.Sprintf("%s step %d at %s ms: %s", label, rs.step, fmtNum(rs.at/1e3), clip(rs.cause, maxEventText)))
	}
	if len(restarts.xs) > 0 {
		pn.p.Add(&restarts)
		pn.leg.Add("job restarts", &restarts)
	}
	// The step time last, on top (the 99th-percentile rank often arrives with the last).
	series := []struct {
		colour int
		name   string
		v      func(stepRow) float64
	}{
		{2, "median rank at the barrier", func(r stepRow) float64 { return r.p50 }},
		{1, "P99 rank at the barrier", func(r stepRow) float64 { return r.p99 }},
		{0, "step time (the last rank)", func(r stepRow) float64 { return r.time }},
	}
	for _, sr := range series {
		i := sr.colour
		var pts plotter.XYs
		for _, r := range rows {
			if v := sr.v(r); !math.IsNaN(v) {
				pts = append(pts, plotter.XY{X: float64(r.step), Y: v / div})
			}
		}
		if len(pts) == 0 {
			continue
		}
		if err := pn.line(i, sr.name, pts); err != nil {
			return figure{}, err
		}
		if len(pts) <= 60 {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return figure{}, err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: seriesColor(i), Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
			pn.p.Add(sc)
		}
	}
	first, last := rows[0].step, rows[len(rows)-1].step
	pn.p.X.Min, pn.p.X.Max = float64(first)-0.5, float64(max(last, first))+0.5
	every := max(1, (max(last, first)-first+24)/24)
	var ticks []plot.Tick
	for k := first; k <= max(last, first); k++ {
		label := ""
		if (k-first)%every == 0 {
			label = strconv.Itoa(k)
		}
		ticks = append(ticks, plot.Tick{Value: float64(k), Label: label})
		if len(ticks) > 2000 { // a long run: gonum's own ticks
			ticks = nil
			break
		}
	}
	if ticks != nil {
		pn.p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	if lo > 0.6*hi && hi > lo {
		// Steps that differ little next to their length: zoom on the differences.
		pad := (hi - lo) * 0.12
		pn.p.Y.Min, pn.p.Y.Max = (lo-pad)/div, (hi+pad)/div
	} else {
		pn.p.Y.Min, pn.p.Y.Max = 0, hi*1.05/div
		if !(hi > 0) {
			pn.p.Y.Max = 1
		}
	}
	// Room above the data for the staggered event labels.
	if len(evNotes) > 0 {
		pn.p.Y.Max += (pn.p.Y.Max - pn.p.Y.Min) * 0.25
	}
	svg, err := figureSVG(idStepSeries, title, 0, pn)
	caption := "Each simulated step's time (steps.csv)"
	if !math.IsNaN(rows[0].p50) {
		caption += ", with the median and the 99th-percentile rank's arrival at the step barrier (from the step's start; the last rank's is the step time): a gap between them is ranks waiting for a pipeline's longer stage or a straggler"
	}
	caption += "."
	worst := rows[0]
	for _, r := range rows {
		if r.time > worst.time {
			worst = r
		}
	}
	if len(rows) == 1 {
		caption += fmt.Sprintf(" One simulated step (%s %s); raise workload.training.sim_steps for a series.", fmtNum(worst.time/div), unit)
	} else {
		caption += fmt.Sprintf(" %d steps from %s to %s %s; the longest is step %d.", len(rows), fmtNum(tLo/div), fmtNum(hi/div), unit, worst.step)
	}
	if worst.slowest != "" {
		caption += " Its slowest rank is " + worst.slowest
		if worst.coord != "" {
			caption += " (" + worst.coord + ")"
		}
		if worst.wait != "" {
			caption += ", waiting mostly on " + worst.wait
		}
		if worst.busiest != "" && worst.busiest != worst.slowest {
			caption += "; rank " + worst.busiest + " computed the longest"
		}
		if worst.link != "" {
			caption += "; the slowest link was " + worst.link
		}
		caption += "."
	}
	switch {
	case len(marks.xs) == 0:
		caption += " No step lists fault events."
	default:
		caption += fmt.Sprintf(" %d steps have fault events (dashed red lines): %s.", len(marks.xs), strings.Join(evNotes, "; "))
		if len(marks.xs) > len(evNotes) {
			caption += fmt.Sprintf(" The other %d are marked without a label.", len(marks.xs)-len(evNotes))
		}
	}
	if len(ft.events) > 0 {
		caption += " Each dashed line sits within its step (step k spans k-0.5 to k+0.5) at its event's time in it (summary.json's training_faults)."
	}
	if len(rsNotes) > 0 {
		caption += fmt.Sprintf(" %d job restart(s) (solid purple lines): %s.", len(rsNotes), strings.Join(rsNotes, "; "))
	}
	if pn.p.Y.Min > 0 {
		caption += " The y axis does not start at zero."
	}
	if len(rows) < st.rows {
		caption += fmt.Sprintf(" %d rows of steps.csv are repeats of the last simulated step and are not drawn.", st.rows-len(rows))
	}
	return figure{ID: idStepSeries, Title: title, Caption: caption, SVG: svg}, err
}

// Rows of the per-step table: the first steps and the longest.
const (
	stepTableFirst = 5
	stepTableWorst = 5
)

// stepsTable lists, for the first and the longest simulated steps of steps.csv, the step time,
// the barrier arrivals, the DP launch skew, the slowest rank and what it waited on, the
// busiest rank, the slowest link and the fault events; nil without steps.csv or rows.
func stepsTable(st *stepsData) *htmlTable {
	if st == nil || len(st.steps) == 0 {
		return nil
	}
	rows := st.seriesRows()
	keep := make([]bool, len(rows))
	for i := range min(stepTableFirst, len(rows)) {
		keep[i] = true
	}
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rows[b].time, rows[a].time) })
	for _, i := range order[:min(stepTableWorst, len(order))] {
		keep[i] = true
	}
	t := &htmlTable{ID: "steps-table", Title: "Slowest rank and link per step (steps.csv)",
		Caption: "The first and the longest simulated steps. Arrivals at the step barrier from the step's start (median, 99th percentile); DP skew: the longest a data-parallel collective's first member waited for its last; the slowest rank reached the barrier last, the busiest computed the longest (a straggler); link and events come from the runner.",
		Head:    []string{"step", "step_time_us", "arrive_p50_us", "arrive_p99_us", "dp_skew_max_us", "slowest_rank", "slowest_wait", "busiest_rank", "slowest_link", "events"}}
	num := func(v float64) cell {
		if math.IsNaN(v) {
			return cell{}
		}
		return cell{Text: fmtNum(v), Num: true}
	}
	shown := 0
	for i, r := range rows {
		if !keep[i] {
			continue
		}
		shown++
		slow := r.slowest
		if r.coord != "" {
			slow += " (" + r.coord + ")"
		}
		t.Rows = append(t.Rows, []cell{{Text: strconv.Itoa(r.step), Num: true}, num(r.time), num(r.p50), num(r.p99), num(r.skew),
			{Text: slow}, {Text: r.wait}, {Text: r.busiest, Num: true}, {Text: r.link}, {Text: clip(r.events, maxEventText)}})
	}
	if shown < len(rows) {
		t.Note = fmt.Sprintf("%d of %d simulated steps shown: the first %d and the %d longest.", shown, len(rows), stepTableFirst, stepTableWorst)
	}
	return t
}

// stepFaults is summary.json's training_faults as the step series draws it: the simulated
// steps' spans on the simulation's clock, the applied fault events and the restarts.
type stepFaults struct {
	spans      map[int][2]float64 // step -> start_us, end_us
	events     []stepEvent        // applied events in a simulated step, in file order
	firstEvent map[int]float64    // step -> its first applied event's at_us
	restarts   []stepRestart
}

type stepEvent struct {
	step int
	at   float64
}

type stepRestart struct {
	step  int
	at    float64
	cause string
}

// Bounds of what the step series reads from training_faults (summary.json keeps at most
// 500 events).
const (
	maxSeriesEvents   = 1000
	maxSeriesRestarts = 100
)

// readTrainingFaults reads summary.json's training_faults.steps, .events and .restarts
// (empty without them).
func readTrainingFaults(s *summaryData) *stepFaults {
	ft := &stepFaults{spans: map[int][2]float64{}, firstEvent: map[int]float64{}}
	if s == nil {
		return ft
	}
	num := func(p string) (float64, bool) { return s.number(p) }
	for i := 0; i < maxStepsKept; i++ {
		p := fmt.Sprintf("training_faults.steps[%d].", i)
		k, ok1 := num(p + "step")
		a, ok2 := num(p + "start_us")
		e, ok3 := num(p + "end_us")
		if !ok1 || !ok2 || !ok3 {
			break
		}
		ft.spans[int(k)] = [2]float64{a, e}
	}
	for i := 0; i < maxSeriesEvents; i++ {
		p := fmt.Sprintf("training_faults.events[%d].", i)
		at, ok := num(p + "at_us")
		if !ok {
			break
		}
		k, ok := num(p + "step")
		applied, _ := s.get(p + "applied")
		if !ok || k < 0 || applied.value != "true" {
			continue
		}
		if _, ok := ft.spans[int(k)]; !ok {
			continue
		}
		ft.events = append(ft.events, stepEvent{step: int(k), at: at})
		if _, ok := ft.firstEvent[int(k)]; !ok {
			ft.firstEvent[int(k)] = at
		}
	}
	for i := 0; i < maxSeriesRestarts; i++ {
		p := fmt.Sprintf("training_faults.restarts[%d].", i)
		at, ok := num(p + "at_us")
		if !ok {
			break
		}
		k, _ := num(p + "step")
		c, _ := s.get(p + "cause")
		ft.restarts = append(ft.restarts, stepRestart{step: int(k), at: at, cause: c.value})
	}
	return ft
}

// stepX places time at (us, the simulation's clock) in step k on the series' x axis: k-0.5
// at the step's start to k+0.5 at its end; k itself when the step's span is unknown.
func (ft *stepFaults) stepX(k int, at float64) float64 {
	sp, ok := ft.spans[k]
	if !ok || !(sp[1] > sp[0]) {
		return float64(k)
	}
	f := min(max((at-sp[0])/(sp[1]-sp[0]), 0), 1)
	return float64(k) - 0.5 + f
}
