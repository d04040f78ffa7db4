package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lockstepsim/lockstep/report"
	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
)

// A sweep over seeds (the variants key seeds, or a run.seed list) repeats each setting of the
// other parameters with several random seeds. Its figures then come with statistics: for
// every group of variants that differ only in their seed, each sweep.csv figure's mean over
// the seeds that ran and gave it, the sample standard deviation and the half-width of the
// 95% confidence interval of the mean, t(0.975, n-1) x sd / sqrt(n) (Student's t: the seeds
// are few and the spread unknown). They are printed after the comparison table and written
// to sweep_stats.csv (docs/outputs.md).

// seedGroup is one setting of the non-seed parameters and the variants (indices) that run it.
type seedGroup struct {
	label   string   // the other parameters, "transport.kind=mrc traffic.0.bytes=1MiB" ("all" when none)
	values  []string // their values, in variants-key order (sweep_stats.csv's columns)
	members []int
}

// isSeedKey reports whether a variants key sweeps the seed.
func isSeedKey(k string) bool { return k == scenario.SeedsKey || k == "run.seed" }

// seedGroups groups vs by their non-seed parameter values, in order of first appearance; nil
// when the sweep has no seed axis or no group holds two seeds.
func seedGroups(vs []scenario.Variant) []seedGroup {
	if len(vs) == 0 {
		return nil
	}
	hasSeed := false
	for _, p := range vs[0].Values {
		hasSeed = hasSeed || isSeedKey(p.Key)
	}
	if !hasSeed {
		return nil
	}
	var groups []seedGroup
	at := map[string]int{}
	multi := false
	for i, v := range vs {
		var parts, vals []string
		for _, p := range v.Values {
			if !isSeedKey(p.Key) {
				parts = append(parts, p.Key+"="+p.Value)
				vals = append(vals, p.Value)
			}
		}
		label := strings.Join(parts, " ")
		if label == "" {
			label = "all"
		}
		g, ok := at[label]
		if !ok {
			g = len(groups)
			at[label] = g
			groups = append(groups, seedGroup{label: label, values: vals})
		}
		groups[g].members = append(groups[g].members, i)
		multi = multi || len(groups[g].members) > 1
	}
	if !multi {
		return nil
	}
	return groups
}

// seedStat is one figure's statistics over a group's seeds.
type seedStat struct {
	n          int
	mean, ci95 float64 // ci95: the half-width (0 for n < 2)
}

// statsOf computes the mean and the 95% confidence half-width of xs (report.MeanCI95).
func statsOf(xs []float64) seedStat {
	mean, half := report.MeanCI95(xs)
	return seedStat{n: len(xs), mean: mean, ci95: half}
}

// groupStats returns, for group g, each sweepFigures figure's statistics (by column; figures
// no member gave are absent) over the members that ran (sums[i] != nil).
func groupStats(g seedGroup, sums []*runner.Summary) map[string]seedStat {
	out := map[string]seedStat{}
	for _, f := range sweepFigures {
		if f.get == nil {
			continue
		}
		var xs []float64
		for _, i := range g.members {
			if sums[i] == nil {
				continue
			}
			if x, ok := f.get(sums[i]); ok {
				xs = append(xs, x)
			}
		}
		if len(xs) > 0 {
			out[f.col] = statsOf(xs)
		}
	}
	return out
}

// printSeedStats writes the seed statistics table: one row per group, one column per figure
// any group gave, "mean ± ci95" to 4 significant digits. Nothing without seed groups.
func printSeedStats(w io.Writer, vs []scenario.Variant, sums []*runner.Summary) {
	groups := seedGroups(vs)
	if groups == nil {
		return
	}
	stats := make([]map[string]seedStat, len(groups))
	var cols []string
	for gi, g := range groups {
		stats[gi] = groupStats(g, sums)
	}
	for _, f := range sweepFigures {
		for gi := range groups {
			if _, ok := stats[gi][f.col]; ok {
				cols = append(cols, f.col)
				break
			}
		}
	}
	if len(cols) == 0 {
		return
	}
	fmt.Fprintf(w, "\nover seeds (mean ± 95%% confidence interval of the mean, Student's t; sweep_stats.csv):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "variants\tseeds")
	for _, c := range cols {
		fmt.Fprintf(tw, "\t%s", c)
	}
	fmt.Fprintln(tw)
	for gi, g := range groups {
		ran := 0
		for _, i := range g.members {
			if sums[i] != nil {
				ran++
			}
		}
		fmt.Fprintf(tw, "%s\t%d of %d", g.label, ran, len(g.members))
		for _, c := range cols {
			st, ok := stats[gi][c]
			switch {
			case !ok:
				fmt.Fprint(tw, "\t-")
			case st.n < 2:
				fmt.Fprintf(tw, "\t%s", sig4(st.mean))
			default:
				fmt.Fprintf(tw, "\t%s ± %s", sig4(st.mean), sig4(st.ci95))
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// sig4 writes x to 4 significant digits.
func sig4(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// writeSeedStats writes sweep_stats.csv at path for a sweep with seed groups (and removes a
// stale one otherwise): one row per group with its non-seed parameter values, the seeds in
// the group and that ran, then per figure <figure>_mean, <figure>_ci95 and <figure>_n
// (empty where no seed gave it).
func writeSeedStats(path string, vs []scenario.Variant, sums []*runner.Summary) error {
	groups := seedGroups(vs)
	if groups == nil {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	head := []string{"group"}
	for _, p := range vs[0].Values {
		if !isSeedKey(p.Key) {
			head = append(head, p.Key)
		}
	}
	head = append(head, "seeds", "seeds_ran")
	for _, f := range sweepFigures {
		if f.get != nil {
			head = append(head, f.col+"_mean", f.col+"_ci95", f.col+"_n")
		}
	}
	_ = cw.Write(head)
	for gi, g := range groups {
		st := groupStats(g, sums)
		ran := 0
		for _, i := range g.members {
			if sums[i] != nil {
				ran++
			}
		}
		row := append([]string{strconv.Itoa(gi)}, g.values...)
		row = append(row, strconv.Itoa(len(g.members)), strconv.Itoa(ran))
		for _, f := range sweepFigures {
			if f.get == nil {
				continue
			}
			if s, ok := st[f.col]; ok {
				row = append(row, strconv.FormatFloat(s.mean, 'g', -1, 64), strconv.FormatFloat(s.ci95, 'g', -1, 64), strconv.Itoa(s.n))
			} else {
				row = append(row, "", "", "0")
			}
		}
		_ = cw.Write(row)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// sweepPlotDefault is the order in which sweep.html picks its figure when --figure is not
// given: the first that some variant has.
var sweepPlotDefault = []string{"step_time_us", "busbw_GBps", "jct_us", "fct_p99_us", "duration_us"}

// checkFigure validates --figure: a sweep.csv figure column ("" = the default).
func checkFigure(col string) error {
	if col == "" {
		return nil
	}
	var allowed []string
	for _, f := range sweepFigures {
		if f.get == nil {
			continue
		}
		if f.col == col {
			return nil
		}
		allowed = append(allowed, f.col)
	}
	return badInput(fmt.Errorf("--figure: %q is not a sweep figure; allowed %s (sweep.csv's columns, docs/outputs.md)", col, strings.Join(allowed, ", ")))
}

// sweepPlot is sweep.html's data: vs's parameter values and figure col (the default order
// when col is ""), rows[i] being variant i's summary (nil: it did not run).
func sweepPlot(vs []scenario.Variant, rows []*runner.Summary, col string) report.Sweep {
	sw := report.Sweep{SeedParam: -1}
	for k, p := range vs[0].Values {
		sw.Params = append(sw.Params, p.Key)
		if isSeedKey(p.Key) {
			sw.SeedParam = k
		}
	}
	get := func(c string) func(s *runner.Summary) (float64, bool) {
		for _, f := range sweepFigures {
			if f.col == c {
				return f.get
			}
		}
		return nil
	}
	if col == "" {
		col = sweepPlotDefault[len(sweepPlotDefault)-1]
	pick:
		for _, c := range sweepPlotDefault {
			for _, s := range rows {
				if s != nil {
					if _, ok := get(c)(s); ok {
						col = c
						break pick
					}
				}
			}
		}
	}
	sw.Figure = col
	f := get(col)
	for i, v := range vs {
		vals := make([]string, len(v.Values))
		for k, p := range v.Values {
			vals[k] = p.Value
		}
		sw.Values = append(sw.Values, vals)
		y := math.NaN()
		if rows[i] != nil && f != nil {
			if x, ok := f(rows[i]); ok {
				y = x
			}
		}
		sw.Y = append(sw.Y, y)
	}
	return sw
}

// sweepEstimate is the one-line estimate of a whole sweep: the data packets of all variants,
// the peak memory of the largest one (each worker runs one variant at a time) and the wall
// time of all of them on jobs workers: per variant, scenario.Estimate's range for the
// simulation plus the fixed cost of a variant outside it (variantFixedCost: building the
// fabric, writing the results files and report.html, the sweep's bookkeeping), summed and
// divided by the workers. It is printed by sweep --list and before a sweep of more than
// scenario.MaxVariants variants.
func sweepEstimate(vs []scenario.Variant, jobs int) string {
	packets, mem, wmin, wmax, flow := sweepCosts(vs, jobs)
	jobs = max(1, min(jobs, len(vs)))
	var b strings.Builder
	fmt.Fprintf(&b, "estimate for %d variants: %.3g packets in all, peak memory per worker about %s (the largest variant), wall time about %s to %s at -j %d",
		len(vs), packets, scenario.FormatBytes(mem), wallStr(wmin), wallStr(wmax), jobs)
	if flow > 0 {
		fmt.Fprintf(&b, " (%d flow-level or analytic variants: their simulation not timed, only their fixed cost)", flow)
	}
	return b.String()
}

// sweepCosts are sweepEstimate's figures: the packets of all variants, the peak memory of
// the largest, the wall time's range on jobs workers, and how many variants have no
// simulation estimate (flow level, analytic).
func sweepCosts(vs []scenario.Variant, jobs int) (packets, mem float64, wmin, wmax time.Duration, flow int) {
	for _, v := range vs {
		e, err := v.Scenario.Estimate()
		if err != nil {
			wmin += variantFixedBase // the run reports the error, quickly
			wmax += variantFixedBase
			continue
		}
		packets += e.Packets
		mem = max(mem, e.MemoryBytes)
		fixed := variantFixedCost(e.Links)
		wmin += e.WallMin + fixed
		wmax += e.WallMax + fixed
		if e.WallMax == 0 && e.Engine != scenario.EnginePacket {
			flow++
		}
	}
	jobs = max(1, min(jobs, len(vs)))
	return packets, mem, wmin / time.Duration(jobs), wmax / time.Duration(jobs), flow
}

// The fixed wall time of one variant besides its simulation, which scenario.Estimate's
// packet rates do not cover: parsing and building its fabric, writing its results folder
// (links.csv and topology.json grow with the links, report.html) and the sweep's own
// bookkeeping (compare.html, sweep.csv). Measured with lockstep sweep -j 1 --quiet on
// sweeps of 20 to 80 seeds of one 4 KiB permutation on a 2-tier Clos at 100 Gb/s (go1.26,
// amd64, 2 cores shared with other work), the slope between sweep sizes so process start
// is left out: 30 ms per variant on 4 hosts (12 links), 80 ms on 32 (64 links), 216 ms
// on 128 (256 links), of which the simulation itself is under 3 ms: about 20 ms plus
// 0.75 ms per link.
const (
	variantFixedBase    = 20 * time.Millisecond
	variantFixedPerLink = 750 * time.Microsecond
)

// variantFixedCost is the fixed wall time of a variant of links links (variantFixedBase and
// variantFixedPerLink).
func variantFixedCost(links int) time.Duration {
	return variantFixedBase + time.Duration(max(links, 0))*variantFixedPerLink
}
