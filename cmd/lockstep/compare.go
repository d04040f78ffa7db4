package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"go.yaml.in/yaml/v3"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/lockstepsim/lockstep/report"
	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/training"
	"github.com/spf13/cobra"
)

func newCompareCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		seed  uint64
		out   string
		quiet bool
		// engines: --engines, the one scenario at both levels (engineArgs)
		engines bool
		jobs    int
	)
	cmd := &cobra.Command{
		Use:   "compare SCENARIO.yaml|PRESET|RESULTS-DIR SCENARIO.yaml|PRESET|RESULTS-DIR...",
		Short: "Run several scenarios and print their headline figures side by side",
		Long: `Run each scenario (a file or an embedded preset) and print one column per scenario with
its headline figures (transport, when the traffic or workload ended, delivered goodput, FCT
percentiles, drops, retransmissions, QP errors, what faults cost, collective bus bandwidth),
and each figure's ratio to the first scenario's. A file with a variants: section counts as
its variants (e.g. variants: {transport: [mrc, roce]}). Each run's results folder goes into
--out (default results/compare), one folder per scenario, with compare.html, the combined
report, beside them. A results folder (one holding summary.json, from an earlier run, sweep
or compare) is not run again: its summary.json is read back and shown beside the others.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("seed") && seed == 0 {
				return badInput(fmt.Errorf("--seed: 0 is not allowed; use a seed >= 1"))
			}
			if err := checkJobs(jobs); err != nil {
				return err
			}
			orig := ""
			if engines {
				var err error
				orig = args[0]
				if args, err = engineArgs(args); err != nil {
					return err
				}
				defer os.Remove(args[0])
			}
			scs, err := compareArgs(args, runOpts{seeded: cmd.Flags().Changed("seed"), seed: seed})
			if err != nil {
				if orig != "" {
					// Name the user's file, not its hidden copy with both engines.
					return badInput(errors.New(strings.ReplaceAll(err.Error(), args[0], orig)))
				}
				return err
			}
			if len(scs) < 2 {
				return badInput(fmt.Errorf("compare needs at least two scenarios; %s gives %d", strings.Join(args, ", "), len(scs)))
			}
			var (
				sums               []*runner.Summary
				kinds, names, dirs []string
				failed             error // the first run that failed: the exit code
			)
			intr, stop := catchSignals(stderr)
			defer stop()
			ro := runOpts{seeded: cmd.Flags().Changed("seed"), seed: seed, quiet: quiet || jobs > 1, stderr: stderr, intr: intr, jobs: jobs}
			folders, runs, given, err := compareFolders(scs, out)
			if err != nil {
				return err
			}
			release, err := lockResults("--out", out) // held until compare.html is written
			if err != nil {
				return err
			}
			defer release()
			if len(runs) > 0 {
				keep := append([]string(nil), folders...)
				for g := range given {
					keep = append(keep, g)
				}
				clearStale(out, keep, stderr)
			}
			p := startPool(len(runs), jobs, intr, stderr, func(k int, stderr io.Writer) (*runner.Result, []byte, error) {
				i := runs[k]
				ro := ro
				ro.stderr, ro.arg, ro.variant = stderr, scs[i].name, scs[i].variant
				return runAndWrite(scs[i].sc, "--out", ro)
			})
			defer p.wait()
			k := 0
			for _, ns := range scs {
				if ns.dir != "" {
					if err := outcomeErr(ns.sum); err != nil && failed == nil {
						failed = err
					}
					sums = append(sums, ns.sum)
					kinds = append(kinds, ns.kind)
					names = append(names, ns.name)
					dirs = append(dirs, ns.dir)
					continue
				}
				sc := ns.sc
				job := p.next(k)
				k++
				if job.skipped {
					r := intr.Reason()
					return &exitError{code: signalExit(r), err: fmt.Errorf("%s: stopped before %s started; the scenarios before it are in %s", r, ns.name, out)}
				}
				res, err := job.res, job.err
				if err != nil {
					return err
				}
				if err := interruptErr(ro.intr, res, sc.Run.Out); err != nil {
					return err // the scenarios not run yet are not run; no compare.html
				}
				if err := outcomeErr(&res.Summary); err != nil && failed == nil {
					failed = err
				}
				sum := res.Summary // a copy: the Result (its whole fabric) is freed after this one
				sums = append(sums, &sum)
				job.res = nil
				kinds = append(kinds, transportOf(sc))
				names = append(names, ns.name)
				dirs = append(dirs, sc.Run.Out)
			}
			printComparison(stdout, names, kinds, sums)
			html := filepath.Join(out, "compare.html")
			if err := os.MkdirAll(out, 0o755); err != nil { // only folders were compared
				return badInput(fmt.Errorf("--out: %q cannot hold compare.html: %w", out, err))
			}
			if err := report.WriteCompare(html, names, dirs); err != nil {
				return runFailed(fmt.Errorf("compare.html: %w", err))
			}
			fmt.Fprintf(stdout, "\nresults: %s (one folder per scenario); combined report: %s\n", out, html)
			return failed
		},
	}
	cmd.Flags().Uint64Var(&seed, "seed", 0, "random seed for every scenario, overriding run.seed (>= 1)")
	cmd.Flags().StringVar(&out, "out", filepath.Join("results", "compare"), "folder for each scenario's results folder and compare.html")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress bar")
	cmd.Flags().IntVarP(&jobs, "jobs", "j", defaultJobs(), "scenarios run at once (results and output as with -j 1)")
	cmd.Flags().BoolVar(&engines, "engines", false, "run the one scenario given at packet level and at flow level and print the flow level's ratios to the packet level (a cross-check of the two engines)")
	return cmd
}

// engineArgs is compare --engines: the one scenario argument (a file without variants, or
// a preset) as a copy whose variants are run.engine: [packet, flow], written as a hidden
// temporary file in the original's folder (so its relative paths resolve as the original's;
// a preset's copy goes in the working directory) and removed by the caller.
func engineArgs(args []string) ([]string, error) {
	if len(args) != 1 {
		return nil, badInput(fmt.Errorf("--engines takes one scenario (a file or preset), not %d arguments", len(args)))
	}
	a := args[0]
	var data []byte
	if fi, err := os.Stat(a); err == nil && fi.IsDir() {
		return nil, badInput(fmt.Errorf("--engines: %s is a results folder; give the scenario file to run at both levels", a))
	} else if err == nil {
		if data, err = os.ReadFile(a); err != nil {
			return nil, badInput(fmt.Errorf("--engines: %w", err))
		}
		if scenario.HasVariants(data) {
			return nil, badInput(fmt.Errorf("--engines: %s has a variants section; add run.engine: [packet, flow] to it and run lockstep compare %s", a, a))
		}
	} else if data, err = scenario.PresetYAML(a); err != nil {
		return nil, badInput(fmt.Errorf("--engines: %s is neither a scenario file nor a preset (%v)", a, err))
	}
	out, err := withEngines(data, a)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(a)
	if _, err := os.Stat(a); err != nil {
		dir = "." // a preset: its paths are the working directory's
	}
	f, err := os.CreateTemp(dir, ".lockstep-engines-*.yaml")
	if err != nil {
		return nil, runFailed(fmt.Errorf("--engines: a copy of %s with both engines: %w", a, err))
	}
	_, werr := f.Write(out)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(f.Name())
		return nil, runFailed(fmt.Errorf("--engines: %w", werr))
	}
	return []string{f.Name()}, nil
}

// withEngines returns scenario data (a mapping without variants nor run.engine; what names
// it in errors) with the variants run.engine: [packet, flow]: the scenario at both levels,
// as compare --engines and the agreement suite (agree.go) run it. Errors: data is not a
// YAML mapping, or it sets run.engine.
func withEngines(data []byte, what string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, badInput(fmt.Errorf("--engines: %s is not a YAML mapping", what))
	}
	if run := getKey(doc.Content[0], "run"); run != nil && getKey(run, "engine") != nil {
		return nil, badInput(fmt.Errorf("--engines: %s sets run.engine; leave it out to run both engines", what))
	}
	var vars yaml.Node
	_ = vars.Encode(map[string][]string{"run.engine": {scenario.EnginePacket, scenario.EngineFlow}})
	setKey(doc.Content[0], "variants", &vars)
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, runFailed(err)
	}
	return out, nil
}

// compareItem is one of compare's runs: a scenario to run, or a results folder given as an
// argument (dir), read back and not run.
type compareItem struct {
	name    string
	sc      *scenario.Scenario
	variant *runner.VariantInfo
	dir     string          // a results folder given as an argument: not run
	sum     *runner.Summary // its summary.json
	kind    string
}

// compareArgs loads compare's arguments: results folders, files (a file with variants: is
// its variants) and presets, in order. ro.seeded (--seed) is refused on a file with a seed
// axis (checkSeedFlag).
func compareArgs(args []string, ro runOpts) ([]compareItem, error) {
	var scs []compareItem
	for _, a := range args {
		if fi, err := os.Stat(a); err == nil && fi.IsDir() {
			sum, kind, err := loadResultsDir(a)
			if err != nil {
				return nil, badInput(err)
			}
			name := sum.Scenario
			if sum.Variant != nil && sum.Variant.Name != "" {
				name = sum.Variant.Name
			}
			scs = append(scs, compareItem{name: name, dir: a, sum: sum, kind: kind})
			continue
		}
		vs, err := loadVariantsArg(a)
		if err != nil {
			return nil, badInput(err)
		}
		if err := checkSeedFlag(a, ro, vs); err != nil {
			return nil, err
		}
		for _, v := range vs {
			scs = append(scs, compareItem{name: v.Scenario.Name, sc: v.Scenario, variant: variantInfo(v)})
		}
		if vs != nil {
			continue
		}
		sc, err := loadScenarioArg(a)
		if err != nil {
			return nil, badInput(err)
		}
		scs = append(scs, compareItem{name: a, sc: sc})
	}
	return scs, nil
}

// compareFolders gives each scenario of scs to run its results folder under out (setting
// run.out): its name, with a -N suffix for the same scenario again. It returns those folder
// names, the indexes in scs of the scenarios to run, and the names of the results folders
// given as arguments that lie directly in out (kept, never cleared nor overwritten).
func compareFolders(scs []compareItem, out string) (folders []string, runs []int, given map[string]bool, err error) {
	used := map[string]int{}
	given = map[string]bool{}
	absOut, _ := filepath.Abs(out)
	for _, ns := range scs {
		if ns.dir == "" {
			continue
		}
		if ad, err := filepath.Abs(ns.dir); err == nil && filepath.Dir(ad) == absOut {
			given[filepath.Base(ad)] = true
			used[filepath.Base(ad)]++
		}
	}
	for i, ns := range scs {
		if ns.dir != "" {
			continue
		}
		folder := ns.sc.Name
		if used[folder]++; used[folder] > 1 {
			folder = fmt.Sprintf("%s-%d", folder, used[folder]) // the same scenario twice
		}
		if given[folder] {
			return nil, nil, nil, badInput(fmt.Errorf("%s would overwrite the results folder %s given to compare; use another --out", ns.name, filepath.Join(out, folder)))
		}
		folders = append(folders, folder)
		runs = append(runs, i)
		scs[i].sc.Run.Out = filepath.Join(out, folder)
	}
	return folders, runs, given, nil
}

// loadResultsDir reads back a results folder given to compare: its summary.json, and the
// transport's label from its scenario.yaml (else summary.json's transport kind).
func loadResultsDir(dir string) (*runner.Summary, string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, "", fmt.Errorf("%s is a folder but not a results folder (no summary.json): %w", dir, err)
	}
	var sum runner.Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		return nil, "", fmt.Errorf("%s: summary.json: %w", filepath.Join(dir, "summary.json"), err)
	}
	// Any JSON object unmarshals: one without the fields every run writes is not a run's.
	var must struct {
		Scenario *string `json:"scenario"`
		Complete *bool   `json:"complete"`
	}
	_ = json.Unmarshal(data, &must) // it parsed above
	switch {
	case must.Scenario == nil || *must.Scenario == "":
		return nil, "", fmt.Errorf("%s is not a lockstep summary (no scenario)", filepath.Join(dir, "summary.json"))
	case must.Complete == nil:
		return nil, "", fmt.Errorf("%s is not a lockstep summary (no complete field)", filepath.Join(dir, "summary.json"))
	}
	if sc, err := scenario.Load(filepath.Join(dir, "scenario.yaml")); err == nil {
		return &sum, transportOf(sc), nil
	}
	if sum.Transport != nil {
		return &sum, sum.Transport.Kind, nil
	}
	return &sum, "", nil
}

// transportOf names sc's transport for the comparison table: the plugin's label of its block
// (transport.Plugin.Label), else the kind.
func transportOf(sc *scenario.Scenario) string {
	if p, ok := transport.Lookup(sc.Transport.Kind); ok && p.Label != nil {
		return p.Label(sc.Transport.Block())
	}
	return sc.Transport.Kind
}

// unfinishedAll reports whether a transport run finished none of its transfers.
func unfinishedAll(s *runner.Summary) bool {
	c := s.Transfers()
	return c != nil && c.FlowsCompleted == 0
}

// outcomeCell is the comparison table's outcome for a run: "interrupted (SIGINT)" for one a
// signal stopped (summary.json "complete": false: its figures cover the run so far),
// "failed: " and the first clause of the reason (at most outcomeReasonMax characters; the
// note under the table gives it whole), "ok (QP errors allowed)", "ok (not drained,
// allowed)", or "ok".
func outcomeCell(s *runner.Summary) string {
	switch {
	case !s.Complete:
		if s.Interrupted == "" {
			return "interrupted"
		}
		return "interrupted (" + s.Interrupted + ")"
	case s.Failed:
		why := s.FailureReason
		for _, sep := range []string{"; ", " ("} {
			if i := strings.Index(why, sep); i > 0 {
				why = why[:i]
			}
		}
		why = strings.TrimRight(strings.TrimSpace(why), ",")
		if r := []rune(why); len(r) > outcomeReasonMax {
			why = string(r[:outcomeReasonMax-3]) + "..."
		}
		if why == "" {
			return "failed"
		}
		return "failed: " + why
	case s.QPErrorsAllowed:
		return "ok (QP errors allowed)"
	case s.NotDrainedAllowed:
		return "ok (not drained, allowed)"
	}
	return "ok"
}

// outcomeReasonMax is the most characters of a failure reason the outcome column shows.
const outcomeReasonMax = 40

// printComparison writes one row per figure, one column per scenario, and the ratio of each
// later scenario's figure to the first's.
func printComparison(w io.Writer, names, kinds []string, sums []*runner.Summary) {
	type fig struct {
		name string
		get  func(s *runner.Summary) (float64, bool)
	}
	// xfer and count read any transport's common figures (transport.Summary).
	xfer := func(f func(t *transport.Summary) float64) func(s *runner.Summary) (float64, bool) {
		return func(s *runner.Summary) (float64, bool) {
			if t := s.Transfers(); t != nil {
				return f(t), true
			}
			return 0, false
		}
	}
	count := func(f func(c *transport.Summary) int64) func(s *runner.Summary) (float64, bool) {
		return func(s *runner.Summary) (float64, bool) {
			if c := s.Transfers(); c != nil {
				return float64(f(c)), true
			}
			return 0, false
		}
	}
	train := func(f func(t *training.Result) float64) func(s *runner.Summary) (float64, bool) {
		return func(s *runner.Summary) (float64, bool) {
			if s.Training == nil {
				return 0, false
			}
			return f(s.Training), true
		}
	}
	figs := []fig{
		{"traffic end us", func(s *runner.Summary) (float64, bool) { return s.DurationUs, s.Training == nil }},
		{"delivered Gb/s", func(s *runner.Summary) (float64, bool) {
			return s.DeliveredGbps, s.Training == nil && (s.Engine != "flow" || s.Transport != nil) // flow-level traffic has goodput; workloads do not
		}},
		{"transfers done", count(func(c *transport.Summary) int64 { return int64(c.FlowsCompleted) })},
		{"step time ms", train(func(t *training.Result) float64 { return t.StepTimeUs / 1e3 })},
		{"exposed comm ms", train(func(t *training.Result) float64 { return t.ExposedCommUs / 1e3 })},
		{"DP exposed ms", train(func(t *training.Result) float64 { return t.DPExposedUs / 1e3 })},
		{"MFU %", train(func(t *training.Result) float64 { return 100 * t.MFU })},
		{"power swing MW", train(func(t *training.Result) float64 { return t.PowerSwingMW })},
		{"goodput %", train(func(t *training.Result) float64 { return 100 * t.GoodputFrac })},
		{"FCT p50 us", xfer(func(t *transport.Summary) float64 { return t.FCTP50Us })},
		{"FCT p99 us", xfer(func(t *transport.Summary) float64 { return t.FCTP99Us })},
		{"FCT max us", xfer(func(t *transport.Summary) float64 { return t.FCTMaxUs })},
		{"FCT/ideal mean", func(s *runner.Summary) (float64, bool) { // traffic runs only
			v, ok := xfer(func(t *transport.Summary) float64 { return t.FCTOverIdealMean })(s)
			return v, ok && v > 0
		}},
		{"dropped packets", func(s *runner.Summary) (float64, bool) {
			return float64(s.DroppedPackets), s.Training == nil || s.Engine == "packet"
		}},
		{"retransmitted packets", count(func(c *transport.Summary) int64 { return c.RetxPackets })},
		{"QP errors", count(func(c *transport.Summary) int64 { return int64(c.QPErrors) })},
		{"fault slowdown us", func(s *runner.Summary) (float64, bool) { return s.FaultSlowdownUs, s.FaultBaselineEndUs > 0 }},
		{"busbw GB/s (mean)", func(s *runner.Summary) (float64, bool) {
			if len(s.Collectives) == 0 {
				return 0, false
			}
			var t float64
			for _, c := range s.Collectives {
				t += c.BusBWGBps
			}
			return t / float64(len(s.Collectives)), true
		}},
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\t")
	for i, n := range names {
		fmt.Fprintf(tw, "%s\t", n)
		if i > 0 {
			fmt.Fprint(tw, "x first\t")
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprint(tw, "transport\t")
	for i, k := range kinds {
		fmt.Fprintf(tw, "%s\t", k)
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprint(tw, "outcome\t")
	for i, s := range sums {
		o := outcomeCell(s)
		fmt.Fprintf(tw, "%s\t", o)
		if i > 0 {
			fmt.Fprint(tw, "\t")
		}
	}
	fmt.Fprintln(tw)
	for _, f := range figs {
		var vals []float64
		var has []bool
		any, whole := false, true
		for _, s := range sums {
			v, ok := f.get(s)
			// FCT figures of a run where nothing finished are not measurements.
			if ok && strings.HasPrefix(f.name, "FCT") && unfinishedAll(s) {
				ok = false
			}
			any = any || ok
			whole = whole && v == float64(int64(v))
			vals, has = append(vals, v), append(has, ok)
		}
		if !any {
			continue
		}
		counts := whole && (strings.Contains(f.name, "packets") || strings.Contains(f.name, "errors") || strings.Contains(f.name, "done"))
		fmt.Fprintf(tw, "%s\t", f.name)
		for i, v := range vals {
			switch {
			case !has[i]:
				fmt.Fprint(tw, "-\t") // does not apply to this run
			case counts:
				fmt.Fprintf(tw, "%d\t", int64(v))
			default:
				fmt.Fprintf(tw, "%.3f\t", v)
			}
			if i > 0 {
				if has[0] && has[i] && vals[0] != 0 {
					fmt.Fprintf(tw, "%.3f\t", v/vals[0])
				} else {
					fmt.Fprint(tw, "-\t")
				}
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	printComparisonNotes(w, names, sums)
}

// printComparisonNotes writes, under compare's table, each run's lines that qualify its
// figures: its engine notes and pre-run warnings, unfinished transfers, an interruption, and
// RUN FAILED with the reason.
func printComparisonNotes(w io.Writer, names []string, sums []*runner.Summary) {
	for i, s := range sums {
		// What a run's engine leaves out (at flow level, e.g. IB congestion control) and its
		// pre-run warnings, so a ratio is never read without them (each run's summary.json
		// holds the same).
		for _, n := range s.Notes {
			fmt.Fprintf(w, "note: %s: %s\n", names[i], n)
		}
		if t := s.Transfers(); t != nil {
			for _, x := range t.Warnings {
				fmt.Fprintf(w, "warning: %s: %s\n", names[i], x)
			}
		}
		if t := s.Transfers(); t != nil && t.FlowsCompleted < t.Flows && len(s.Collectives) == 0 {
			fmt.Fprintf(w, "note: %s: %d of %d transfers did not finish; its FCT figures cover the %d that did\n",
				names[i], t.Flows-t.FlowsCompleted, t.Flows, t.FlowsCompleted)
		}
		if !s.Complete {
			fmt.Fprintf(w, "note: %s: interrupted (%s) at %.1f us: its figures cover the run so far\n", names[i], s.Interrupted, s.EndUs)
		}
		if s.Failed {
			fmt.Fprintf(w, "RUN FAILED: %s: %s\n", names[i], s.FailureReason)
		}
	}
}
