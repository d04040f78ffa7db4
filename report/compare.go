package report

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// WriteCompare reads the results folders dirs (each as [Write] reads one) and writes out, one
// self-contained HTML page comparing the runs: a link to each run's report.html (relative to
// out's folder), their headline figures side by side with each later run's ratio to the first,
// their busbw against message size overlaid (runs with collectives.csv), their FCT CDFs
// overlaid (unless every run is a collective workload's; the caption says, run by run, how
// many transfers never finished), and the throughput of each run's NIC ports (all planes) over time. Every run is in the
// legends: when they do not fit beside a plot they go below it. names[i] labels dirs[i]; names
// may be nil, and an empty name falls back to the scenario name in summary.json, then to the
// folder's name.
//
// A run lacking a file is named in the plot's caption; a plot no run has data for becomes a
// "no data" note. Errors: no dirs, names and dirs of different lengths, a folder that cannot
// be read, a malformed file (a *FileError naming the file, line and column), or out that
// cannot be written. The same inputs give a byte-identical page.
func WriteCompare(out string, names []string, dirs []string) error {
	if len(dirs) == 0 {
		return errors.New("report: compare: no results folders")
	}
	if names != nil && len(names) != len(dirs) {
		return fmt.Errorf("report: compare: %d names for %d results folders", len(names), len(dirs))
	}
	runs, err := loadRuns(dirs, names)
	if err != nil {
		return err
	}
	pg, err := comparePage(runs, out)
	if err != nil {
		return fmt.Errorf("report: compare: %w", err)
	}
	return writePage(out, pg)
}

// reportHref is the relative URL of dir's report.html from the folder of the page out, or ""
// when there is no relative path between them (another volume, say).
func reportHref(out, dir string) string {
	from, err := filepath.Abs(filepath.Dir(out))
	if err != nil {
		return ""
	}
	to, err := filepath.Abs(filepath.Join(dir, ReportFile))
	if err != nil {
		return ""
	}
	rel, err := filepath.Rel(from, to)
	if err != nil {
		return ""
	}
	u := url.URL{Path: filepath.ToSlash(rel)}
	return u.String()
}

// comparePage builds the page comparing runs, to be written to out.
func comparePage(runs []*runData, out string) (*page, error) {
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = r.name
	}
	pg := &page{
		Title:    "lockstep comparison: " + strings.Join(names, " vs "),
		Subtitle: fmt.Sprintf("%d runs; ratios are to the first, %s.", len(runs), names[0]),
	}
	for _, r := range runs {
		pg.Sources = append(pg.Sources, source{Run: r.name, Files: r.files})
		pg.Runs = append(pg.Runs, runLink{Name: r.name, Dir: r.dir, Href: reportHref(out, r.dir)})
	}
	pg.Headline, pg.Note = compareTable(runs)
	// Collective runs are compared by busbw against size; FCT is for traffic (it stays when
	// any run is not a collective workload's).
	colls := 0
	for _, r := range runs {
		if r.isCollective() {
			colls++
		}
	}
	var builders []func([]*runData) (figure, error)
	if colls > 0 {
		builders = append(builders, compareBusbw)
	}
	if colls < len(runs) {
		builders = append(builders, compareFCT)
	}
	builders = append(builders, compareThroughput)
	for _, b := range builders {
		f, err := b(runs)
		if err != nil {
			return nil, err
		}
		pg.Figures = append(pg.Figures, f)
	}
	return pg, nil
}

// compareTable is the headline figures of every run side by side: for each run after the
// first, its value and its ratio to the first run's (when both are numbers and the first is
// not zero).
func compareTable(runs []*runData) (*htmlTable, string) {
	sums := make([]*summaryData, len(runs))
	var missing []string
	for i, r := range runs {
		sums[i] = r.summary
		if r.summary == nil {
			missing = append(missing, r.name)
		}
	}
	paths := headline(sums...)
	if len(paths) == 0 {
		return nil, "no data: " + absent(fileSummary)
	}
	t := &htmlTable{ID: "headline-table", Head: []string{"figure", runs[0].name},
		Caption: "Units are in the names (docs/outputs.md). Ratio: the run's figure over " + runs[0].name + "'s."}
	for _, r := range runs[1:] {
		t.Head = append(t.Head, r.name, "ratio")
	}
	for _, p := range paths {
		row := []cell{{Text: p}}
		base, baseOK := sums[0].number(p)
		for i, s := range sums {
			f, ok := s.get(p)
			if !ok {
				row = append(row, cell{Text: "-"})
			} else {
				row = append(row, cell{Text: headlineValue(f), Num: f.num})
			}
			if i == 0 {
				continue
			}
			v, vOK := s.number(p)
			if baseOK && vOK && base != 0 {
				row = append(row, cell{Text: fmtRatio(v / base), Num: true})
			} else {
				row = append(row, cell{})
			}
		}
		t.Rows = append(t.Rows, row)
	}
	if len(missing) > 0 {
		t.Note = "No summary.json: " + strings.Join(missing, ", ") + "."
	}
	return t, ""
}

// fmtRatio formats a ratio with three significant digits ("1.05x", "0.333x", "12.4x").
func fmtRatio(r float64) string {
	return strconv.FormatFloat(r, 'g', 3, 64) + "x"
}

// compareFCT overlays the FCT CDFs of the runs; the caption says, run by run, how many
// transfers never finished, and why a run has no curve.
func compareFCT(runs []*runData) (figure, error) {
	const title = "Flow completion time (CDF)"
	pn := newPanel("", "flow completion time (us)", "fraction of flows").grid()
	var without, stats []string
	lo, hi := 0.0, 0.0
	for i, r := range runs {
		f := r.flows
		switch {
		case f == nil:
			without = append(without, r.name+" (no flows.csv)")
			continue
		case f.rows == 0 && r.isTraining():
			without = append(without, r.name+" (flows.csv has no rows: a training run's steps are in steps.csv)")
			continue
		case f.rows == 0:
			without = append(without, r.name+" (flows.csv has no rows)")
			continue
		case len(f.fct) == 0 && f.raw == f.rows:
			without = append(without, fmt.Sprintf("%s (%d raw flows: raw traffic has no completion time)", r.name, f.raw))
			continue
		case len(f.fct) == 0:
			without = append(without, fmt.Sprintf("%s (none of its %d transfers finished)", r.name, f.unfinished))
			continue
		}
		if len(stats) == 0 || f.fct[0] < lo {
			lo = f.fct[0]
		}
		hi = max(hi, f.fct[len(f.fct)-1])
		if err := pn.line(i, r.name, cdfPoints(f.fct, maxLinePts/2)); err != nil {
			return figure{}, err
		}
		st := fmt.Sprintf("%s p50 %s us, p99 %s us", r.name, fmtNum(quantile(f.fct, 0.5)), fmtNum(quantile(f.fct, 0.99)))
		if f.unfinished > 0 {
			st += fmt.Sprintf(", %d of %d never finished", f.unfinished, f.rows-f.raw)
		} else {
			st += fmt.Sprintf(", all %d finished", len(f.fct))
		}
		stats = append(stats, st)
	}
	if len(stats) == 0 {
		return noData(idFCT, title, "no run has a completed transfer in flows.csv: "+strings.Join(without, "; ")), nil
	}
	if lo > 0 && hi/lo > 100 {
		pn.logX()
	}
	pn.p.Y.Min, pn.p.Y.Max = 0, 1
	svg, err := figureSVG(idFCT, title, 0, pn)
	caption := "Completed transfers only: " + strings.Join(stats, "; ") + "."
	if len(without) > 0 {
		caption += " No curve: " + strings.Join(without, "; ") + "."
	}
	return figure{ID: idFCT, Title: title, Caption: caption, SVG: svg}, err
}

// compareThroughput overlays each run's NIC throughput (all planes) over time.
func compareThroughput(runs []*runData) (figure, error) {
	const title = "Throughput per run"
	pn := newPanel("", "time (us)", "sent by NIC ports, all planes (Gb/s)").grid()
	var without []string
	tMax, drawn := 0.0, 0
	for i, r := range runs {
		l := r.links
		if l == nil || len(l.planes) == 0 {
			without = append(without, r.name)
			continue
		}
		end, _ := r.tEnd()
		tMax = max(tMax, end)
		groups := colGroups(l.shown(end), maxLinePts/2)
		if err := pn.line(i, r.name, tailZero(stepPoints(l.intervals, groups, l.totalGbps), end)); err != nil {
			return figure{}, err
		}
		drawn++
	}
	if drawn == 0 {
		return noData(idThroughput, title, "no run has a links.csv with host NIC ports ("+whyAbsent[fileLinks]+")"), nil
	}
	pn.timeAxis(tMax)
	pn.zeroY()
	svg, err := figureSVG(idThroughput, title, 0, pn)
	caption := "Wire bytes all host NIC ports of each run put on their links per interval of its links.csv (0 where links.csv has no row: nothing was sent), up to the run's traffic end (summary.json duration_us; the drain after it is not shown)."
	if len(without) > 0 {
		caption += " No links.csv: " + strings.Join(without, ", ") + "."
	}
	return figure{ID: idThroughput, Title: title, Caption: caption, SVG: svg}, err
}

// loadRuns reads the results folders dirs (names[i] naming dirs[i]; nil names: the folders'
// own) on up to GOMAXPROCS goroutines, since a sweep's pages read every variant's CSVs
// (links.csv is megabytes) and each folder is independent. The runs come back in dirs'
// order; the error is the first folder's in that order, as a serial read would give.
func loadRuns(dirs, names []string) ([]*runData, error) {
	runs := make([]*runData, len(dirs))
	errs := make([]error, len(dirs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(dirs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				name := ""
				if names != nil {
					name = names[i]
				}
				runs[i], errs[i] = loadRun(dirs[i], name)
			}
		}()
	}
	for i := range dirs {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return runs, nil
}
