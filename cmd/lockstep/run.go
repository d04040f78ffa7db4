package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/lockstepsim/lockstep/report"
	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/collective"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newRunCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		out    string
		seed   uint64
		asJSON bool
		quiet  bool
		trace  bool
		force  bool
		figure string

		maxVariants int
		jobs        int
	)
	cmd := &cobra.Command{
		Use:   "run [SCENARIO.yaml | PRESET]",
		Short: "Run a scenario (the built-in default when no file is given)",
		Long: `Run a scenario and write its results folder (summary.json, scenario.yaml).

Without a file, runs the built-in default: MRC on 128 hosts of a 8-plane 2-tier Clos, a
permutation of 16 MiB transfers, and one NIC-T0 link failing halfway. A name without "/" or
"." that is not a file runs the embedded preset of that name (lockstep bench --list shows
them; raw-ecmp is raw ECMP-hashed traffic). The results folder defaults to results/<name>.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("seed") && seed == 0 {
				return badInput(fmt.Errorf("--seed: 0 is not allowed; use a seed >= 1"))
			}
			if err := checkJobs(jobs); err != nil {
				return err
			}
			if err := checkFigure(figure); err != nil {
				return err
			}
			intr, stop := catchSignals(stderr)
			defer stop()
			ro := runOpts{seeded: cmd.Flags().Changed("seed"), seed: seed, quiet: quiet || asJSON, stderr: stderr, trace: trace, intr: intr, jobs: jobs, force: force, figure: figure}
			if len(args) == 1 {
				vs, err := loadVariantsMax(args[0], maxVariants)
				if err != nil {
					return badInput(err)
				}
				if err := checkSeedFlag(args[0], ro, vs); err != nil {
					return err
				}
				if vs != nil {
					if len(vs) > scenario.MaxVariants {
						fmt.Fprintln(stderr, "lockstep:", sweepEstimate(vs, jobs))
					}
					return runVariants(stdout, vs, out, asJSON, ro)
				}
			}
			sc, err := loadScenarioOrDefault(args)
			if err != nil {
				return badInput(err)
			}
			outField := "run.out"
			if out != "" {
				sc.Run.Out, outField = out, "--out"
			}
			if len(args) == 1 {
				ro.arg = args[0]
			}
			res, js, err := runAndWrite(sc, outField, ro)
			if err != nil {
				return err
			}
			if err := interruptErr(ro.intr, res, sc.Run.Out); err != nil {
				if asJSON {
					_, _ = stdout.Write(js)
				}
				return err
			}
			if asJSON {
				if _, err = stdout.Write(js); err != nil {
					return err
				}
				return outcomeErr(&res.Summary)
			}
			printSummary(stdout, sc, res)
			return outcomeErr(&res.Summary)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "results folder (default results/<scenario name>)")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "random seed, overriding run.seed (>= 1)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print summary.json to stdout instead of the table")
	cmd.Flags().BoolVar(&trace, "trace", false, "also write trace.json (Chrome/Perfetto trace events; same as run.trace: true)")
	cmd.Flags().IntVar(&maxVariants, "max", scenario.MaxVariants, "the most variants a file may expand to (a guard against typos; up to 100000)")
	cmd.Flags().StringVar(&figure, "figure", "", "the figure sweep.html plots against each swept parameter (a sweep.csv column; default the first of step_time_us, busbw_GBps, jct_us, fct_p99_us, duration_us a variant has)")
	cmd.Flags().BoolVar(&force, "force", false, "rerun every variant, even one whose folder holds a complete run of the same scenario (a rerun skips those)")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress bar (there is none either when stdout is not a terminal, or for runs under 2 s)")
	cmd.Flags().IntVarP(&jobs, "jobs", "j", defaultJobs(), "variants of a file with variants: run at once (results and output as with -j 1)")
	return cmd
}

// checkSeedFlag rejects --seed (ro.seeded) on a file whose variants set run.seed (the seeds
// key, run.seed, or run with a seed: scenario.Variant.SeedKey): every variant would run at
// --seed while its name, sweep.csv and sweep_stats.csv show the file's seeds. Bad input
// (exit 2) naming the file, the flag and the key.
func checkSeedFlag(file string, ro runOpts, vs []scenario.Variant) error {
	if !ro.seeded {
		return nil
	}
	for _, v := range vs {
		if v.SeedKey == "" {
			continue
		}
		what := "variants key " + v.SeedKey
		if v.SeedKey == scenario.SeedsKey {
			what = scenario.SeedsKey + ": axis"
		}
		return badInput(fmt.Errorf("%s: --seed %d contradicts the file's %s; leave one out", file, ro.seed, what))
	}
	return nil
}

// runOpts are the run command's flags that apply to every scenario it runs.
type runOpts struct {
	seeded bool   // --seed given
	seed   uint64 // its value (>= 1)
	quiet  bool   // no progress bar
	stderr io.Writer
	arg    string            // the scenario argument, prefixed to input errors ("" for the default)
	trace  bool              // --trace: write trace.json whatever run.trace says
	intr   *runner.Interrupt // set by the first SIGINT or SIGTERM (catchSignals); nil: none
	jobs   int               // -j: variants run at once (>= 1)
	// variant is summary.json's "variant" (nil: a plain run).
	variant *runner.VariantInfo
	// force: rerun every variant, even those complete in their folders (resume.go).
	force bool
	// figure: sweep.html's figure (--figure; "" = the default, sweepPlotDefault).
	figure string
	// progress, if set, replaces the terminal's progress bar (lockstep serve's page), called
	// every progressEvents events (0: the runner's default).
	progress       func(runner.Progress)
	progressEvents uint64
	// warn, if set, receives each warning instead of stderr (lockstep serve's page).
	warn func(string)
}

// runAndWrite runs sc (seed overridden when --seed was given) into its results folder
// sc.Run.Out (outField names where that came from, for errors), with a progress bar on a
// terminal, and returns the result and summary.json's bytes, holding the folder's lock
// (lockDir) while it writes: a folder another lockstep holds is refused (exit 1). Errors
// are already wrapped with the exit code (badInput, runFailed).
func runAndWrite(sc *scenario.Scenario, outField string, ro runOpts) (*runner.Result, []byte, error) {
	applyRunOpts(sc, ro)
	// Create the results folder before the run, so an unusable one is bad input reported at
	// once rather than after a long simulation.
	undo, err := makeDir(sc.Run.Out)
	if err != nil {
		return nil, nil, badInput(fmt.Errorf("%s: %q cannot be the results folder: %w", outField, sc.Run.Out, err))
	}
	release, err := lockDir(sc.Run.Out) // held while the run writes its folder (lock.go)
	if err != nil {
		undo()
		return nil, nil, err
	}
	defer release()
	undoDir := undo
	undo = func() { release(); undoDir() } // the lock file goes first, so the folder is empty
	opt := runner.Options{Interrupt: ro.intr, Progress: ro.progress, ProgressEvents: ro.progressEvents}
	var bar *progressbar.ProgressBar
	if ro.progress == nil && !ro.quiet && stdoutIsTerminal() {
		fmt.Fprintln(ro.stderr, describe(sc))
		start := time.Now() // the one clock the line shows: wall time since this run began
		opt.Progress = func(p runner.Progress) {
			elapsed := time.Since(start)
			if bar == nil {
				if elapsed < 2*time.Second {
					return // short runs stay quiet
				}
				bar = progressbar.NewOptions(-1, progressbar.OptionSetWriter(ro.stderr),
					progressbar.OptionSpinnerType(14), progressbar.OptionThrottle(200*time.Millisecond),
					progressbar.OptionSetElapsedTime(false), progressbar.OptionClearOnFinish())
			}
			bar.Describe(progressLine(p, elapsed))
			_ = bar.Add(1)
		}
	}
	opt.Warn = ro.warn
	if opt.Warn == nil {
		opt.Warn = func(w string) { fmt.Fprintln(ro.stderr, "warning:", w) }
	}
	res, err := runner.RunWith(sc, opt)
	if err == nil {
		res.Summary.Variant = ro.variant
		res.Summary.Version = buildVersion()
	}
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		undo() // a failed run leaves no empty results folder behind
		var ie *runner.InputError
		if errors.As(err, &ie) {
			if ro.arg != "" {
				err = fmt.Errorf("%s: %w", ro.arg, err) // like scenario.Load's errors
			}
			return nil, nil, badInput(err)
		}
		return nil, nil, runFailed(err)
	}
	js, err := json.MarshalIndent(res.Summary, "", "  ")
	if err != nil {
		return nil, nil, runFailed(err)
	}
	js = append(js, '\n')
	if err := runner.WriteResults(sc, js, res); err != nil {
		var re *runner.ReportError
		if errors.As(err, &re) {
			// The data files stand; only the picture of them failed (a bug to report).
			opt.Warn(fmt.Sprintf("%v; the results folder %s holds the run's files without it", err, sc.Run.Out))
			return res, js, nil
		}
		undo() // WriteResults removed what it wrote: a folder this run created goes too
		return nil, nil, runFailed(err)
	}
	return res, js, nil
}

// signalExit is the exit code of a run stopped by the named signal: 128 + its number, as
// shells report it (SIGINT 130, SIGTERM 143).
func signalExit(name string) int {
	if name == "SIGTERM" {
		return 128 + int(syscall.SIGTERM)
	}
	return 128 + int(syscall.SIGINT)
}

// catchSignals handles SIGINT and SIGTERM while a command runs simulations: the first asks
// the run in progress to stop at its next event boundary (the Interrupt returned, given to
// runner.Options) so its results folder gets what exists; a second one exits at once with
// signalExit (files are written under temporary names and renamed, so none is left
// truncated). A command that waits rather than simulates (sweep --wait) puts what its
// first signal does in signalNotes, printed instead. stop restores the default handling.
func catchSignals(stderr io.Writer) (intr *runner.Interrupt, stop func()) {
	intr = &runner.Interrupt{}
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		first := true
		for {
			select {
			case sig := <-ch:
				name := "SIGINT"
				if sig == syscall.SIGTERM {
					name = "SIGTERM"
				}
				if first {
					first = false
					intr.Request(name)
					if note, ok := signalNotes.Load(intr); ok { // not running a simulation
						fmt.Fprintf(stderr, "\nlockstep: %s: %s\n", name, note)
						continue
					}
					fmt.Fprintf(stderr, "\nlockstep: %s: stopping the simulation at the next event and writing what it has (a second signal quits at once)\n", name)
					continue
				}
				fmt.Fprintf(stderr, "\nlockstep: %s again: exiting at once (the results folder may lack files; none is truncated)\n", name)
				os.Exit(signalExit(name))
			case <-done:
				return
			}
		}
	}()
	return intr, func() { signal.Stop(ch); close(done) }
}

// interruptErr is the exit-code error of a run a signal interrupted (res's summary says
// complete: false), or of one that finished while the signal arrived, naming where its
// results are; nil when no signal came.
func interruptErr(intr *runner.Interrupt, res *runner.Result, dir string) error {
	if intr.Reason() == "" {
		return nil
	}
	s := &res.Summary
	if s.Interrupted == "" {
		return &exitError{code: signalExit(intr.Reason()), err: fmt.Errorf("%s: stopped after run %s finished; its results in %s are complete", intr.Reason(), s.Scenario, dir)}
	}
	return &exitError{code: signalExit(s.Interrupted), err: fmt.Errorf("run %s interrupted (%s) at %s of simulated time: what it had is in %s (summary.json says \"complete\": false; the fabric was not drained)",
		s.Scenario, s.Interrupted, fmtUs(res.Sim.Now().Micros()), dir)}
}

// fmtUs prints a time in microseconds compactly ("37.5us", "12.3ms").
func fmtUs(us float64) string {
	switch {
	case us >= 1e6:
		return strconv.FormatFloat(us/1e6, 'f', 3, 64) + "s"
	case us >= 1e3:
		return strconv.FormatFloat(us/1e3, 'f', 3, 64) + "ms"
	default:
		return strconv.FormatFloat(us, 'f', 1, 64) + "us"
	}
}

// progressLine is the progress bar's text: the phase, the simulated time as a percentage of
// the run's target (the ideal completion of its last transfer, or run.duration), the work
// done (payload placed), an ETA extrapolated from the rate so far, and one clock: the wall
// time elapsed since the run began.
func progressLine(p runner.Progress, elapsed time.Duration) string {
	var b strings.Builder
	phase := p.Phase
	if phase == "baseline" {
		phase = "baseline (the run without its faults)"
	}
	fmt.Fprintf(&b, "%s: simulated %s", phase, fmtUs(p.Now.Micros()))
	frac := -1.0 // the fraction of the work done, for the ETA; < 0: unknown
	if p.Target > 0 {
		f := float64(p.Now) / float64(p.Target)
		what := "of run.duration"
		if p.TargetWhat != "run.duration" {
			what = "of the ideal completion"
		}
		fmt.Fprintf(&b, ", %.0f%% %s (%s)", 100*f, what, fmtUs(p.Target.Micros()))
		if f < 1 {
			frac = f
		}
	}
	if p.Total > 0 {
		frac = p.Done / p.Total
		fmt.Fprintf(&b, ", %.0f%% %s", 100*frac, p.Unit)
	}
	switch {
	case frac > 0 && frac < 1 && p.Wall > 0:
		eta := time.Duration(float64(p.Wall) * (1 - frac) / frac)
		fmt.Fprintf(&b, ", ETA %v", eta.Round(time.Second))
	case frac < 0 && p.Target > 0:
		b.WriteString(", past it (no ETA)")
	}
	rate := 0.0
	if p.Wall > 0 {
		rate = float64(p.Events) / p.Wall.Seconds()
	}
	fmt.Fprintf(&b, "; %v elapsed, %.2fM events/s", elapsed.Round(100*time.Millisecond), rate/1e6)
	return b.String()
}

// describe is the scenario's one-line description printed before a run on a terminal: its
// name, hosts, topology kind, transport, and its workload or traffic.
func describe(sc *scenario.Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario %s:", sc.Name)
	if layout, err := sc.Topology.Describe(); err == nil {
		p := layout.Params()
		fmt.Fprintf(&b, " %d hosts on a %s", layout.NumHosts(), p.Kind)
		if p.Planes > 1 {
			fmt.Fprintf(&b, " of %d planes", p.Planes)
		}
		fmt.Fprintf(&b, " (%v host links)", p.HostLink)
	}
	fmt.Fprintf(&b, ", transport %s", transportOf(sc))
	switch {
	case sc.Workload.Chakra != nil:
		fmt.Fprintf(&b, ", workload: chakra trace %s", sc.Workload.Chakra.Path)
	case sc.Workload.Training != nil:
		t := sc.Workload.Training
		model := t.Model.Name
		if model == "" {
			model = t.Model.Preset
		}
		fmt.Fprintf(&b, ", workload: training %s (tp %d, pp %d, dp %d)", model, t.Plan.TP, t.Plan.PP, t.Plan.DP)
	case len(sc.Workload.Collectives) > 0:
		var parts []string
		for _, c := range sc.Workload.Collectives {
			size := c.Bytes.String()
			if c.MaxBytes > 0 {
				size += ".." + c.MaxBytes.String()
			}
			parts = append(parts, fmt.Sprintf("%s %s on %d ranks", c.Op, size, c.Ranks))
		}
		fmt.Fprintf(&b, ", workload: %s", strings.Join(parts, "; "))
	default:
		var parts []string
		for _, t := range sc.Traffic {
			what := t.Pattern
			switch {
			case t.Bytes > 0:
				what += " of " + t.Bytes.String() + " transfers"
			case t.Rate > 0:
				what += " at " + t.Rate.String() + " per flow"
			case t.Load > 0:
				what += fmt.Sprintf(" at load %g", t.Load)
			}
			parts = append(parts, what)
		}
		fmt.Fprintf(&b, ", traffic: %s", strings.Join(parts, "; "))
	}
	if n := len(sc.Faults); n > 0 {
		fmt.Fprintf(&b, ", %d fault entries", n)
	}
	fmt.Fprintf(&b, ", run.duration %s", shortTime(sc.Run.Duration))
	return b.String()
}

// outcomeErr is the exit-code error of a run the runner marked failed (runner.Summary.Failed),
// nil for one that succeeded.
func outcomeErr(s *runner.Summary) error {
	if !s.Failed {
		return nil
	}
	return runFailed(fmt.Errorf("run %s failed: %s", s.Scenario, s.FailureReason))
}

// printOutcome writes the headline line of a failed run, or of one whose QP errors
// run.allow_qp_errors accepted; nothing for a clean run.
func printOutcome(w io.Writer, s *runner.Summary) {
	switch {
	case s.Failed:
		fmt.Fprintf(w, "RUN FAILED: %s\n", s.FailureReason)
	case s.QPErrorsAllowed && s.Transfers() != nil:
		c := s.Transfers()
		fmt.Fprintf(w, "QP ERRORS: %d QP(s) errored (accepted: run.allow_qp_errors is true)\n", c.QPErrors)
	}
	if nd := s.NotDrained; nd != nil && s.NotDrainedAllowed {
		fmt.Fprintf(w, "NOT DRAINED: %s (accepted: run.allow_not_drained is true)\n", nd.Reason())
	}
	printNotes(w, s)
}

// printNotes prints what the run's engine left out of the scenario (Summary.Notes), one
// "note:" line each.
func printNotes(w io.Writer, s *runner.Summary) {
	for _, n := range s.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// loadVariantsArg returns the variants of a scenario file with a variants section, or nil
// (no error) for a preset or a file without one.
func loadVariantsArg(arg string) ([]scenario.Variant, error) {
	return loadVariantsMax(arg, scenario.MaxVariants)
}

// loadVariantsMax is loadVariantsArg allowing up to max variants (--max); beyond it the
// error says how many the file has and the --max that runs them.
func loadVariantsMax(arg string, max int) ([]scenario.Variant, error) {
	if err := checkMaxFlag(max); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(arg)
	if err != nil || !scenario.HasVariants(data) {
		return nil, nil // loadScenarioArg reports a missing file or a bad one
	}
	vs, err := scenario.ParseVariantsIn(data, filepath.Dir(arg), max)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", arg, err)
	}
	return vs, nil
}

// runVariants runs each variant of a file into its own results folder, out/<variant name>
// (out defaults to results/<the file's name>), prints their headline figures side by side
// (or, with asJSON, a JSON object of the summaries by variant name) and writes the combined
// report out/compare.html.
func runVariants(w io.Writer, vs []scenario.Variant, out string, asJSON bool, ro runOpts) error {
	var failed error
	field := "--out"
	if out == "" {
		out, field = filepath.Join("results", vs[0].Base), "results folder"
	}
	var folders []string
	for _, v := range vs {
		folders = append(folders, v.Scenario.Name)
	}
	release, err := lockResults(field, out) // the whole sweep's folder, held to its end
	if err != nil {
		return err
	}
	defer release()
	clearStale(out, folders, ro.stderr)
	got := newSweepResults(len(vs))
	plan := planResume(vs, out, ro)
	p := startPool(len(vs), ro.jobs, ro.intr, ro.stderr, func(i int, stderr io.Writer) (*runner.Result, []byte, error) {
		if st := plan[i]; st != nil {
			vs[i].Scenario.Run.Out = filepath.Join(out, vs[i].Scenario.Name)
			return &runner.Result{Summary: *st.sum}, st.js, nil
		}
		return runVariant(vs[i], out, field, ro, stderr)
	})
	defer p.wait()
	clearLine, stopLine := showSweepProgress(p, ro)
	defer stopLine()
	for i, v := range vs {
		sc := v.Scenario
		job := p.next(i)
		clearLine()
		if job.skipped {
			// A signal came before a worker reached this variant: run no more.
			r := ro.intr.Reason()
			return &exitError{code: signalExit(r), err: fmt.Errorf("%s: stopped before variant %s started; the variants before it are in %s", r, sc.Name, out)}
		}
		res, js, err := job.res, job.js, job.err
		if err == nil {
			if ierr := interruptErr(ro.intr, res, sc.Run.Out); ierr != nil {
				// The variants not run yet are not run; compare.html is not written.
				return ierr
			}
		}
		if err != nil {
			// Keep going: the other variants still compare; the first failure decides the
			// exit code at the end.
			fmt.Fprintf(ro.stderr, "lockstep: %v\n", err)
			if failed == nil {
				failed = err
			}
			if r := ro.intr.Reason(); r != "" {
				// A signal came while this variant failed: run no more.
				return &exitError{code: signalExit(r), err: fmt.Errorf("%s: stopped after variant %s failed; the variants before it are in %s", r, sc.Name, out)}
			}
			continue
		}
		if err := outcomeErr(&res.Summary); err != nil && failed == nil {
			failed = err
		}
		sum := res.Summary // a copy: the Result (its whole fabric) is freed after this one
		got.add(i, sc, &sum, js)
		job.res = nil
		if !asJSON {
			fmt.Fprintf(w, "%s (%s): results in %s\n", sc.Name, v.Label, sc.Run.Out)
		}
	}
	stopLine()
	return finishSweep(w, vs, out, got, asJSON, ro.figure, failed)
}

// sweepResults gathers what a sweep's variants gave, in variant order, for finishSweep.
type sweepResults struct {
	names, kinds, dirs []string                   // of the variants that ran, in order
	sums               []*runner.Summary          // their summaries
	rows               []*runner.Summary          // sweep.csv's, by variant index: nil for one that did not run
	all                map[string]json.RawMessage // summary.json's bytes by variant name (--json)
}

// newSweepResults is an empty sweepResults for a sweep of n variants.
func newSweepResults(n int) *sweepResults {
	return &sweepResults{rows: make([]*runner.Summary, n), all: map[string]json.RawMessage{}}
}

// add records variant i, scenario sc (its results folder sc.Run.Out), whose run gave sum
// and summary.json's bytes js.
func (r *sweepResults) add(i int, sc *scenario.Scenario, sum *runner.Summary, js []byte) {
	r.names = append(r.names, sc.Name)
	r.dirs = append(r.dirs, sc.Run.Out)
	r.kinds = append(r.kinds, transportOf(sc))
	r.sums = append(r.sums, sum)
	r.rows[i] = sum
	r.all[sc.Name] = js
}

// finishSweep writes a sweep's combined files into out (sweep.csv, sweep_stats.csv,
// compare.html, sweep.html; figure is --figure) and prints its comparison table (or, with
// asJSON, the summaries by variant name) from what its variants gave: the end of a local
// sweep and of sweep --collect alike. It returns failed (the first variant's error) unless
// writing fails.
func finishSweep(w io.Writer, vs []scenario.Variant, out string, got *sweepResults, asJSON bool, figure string, failed error) error {
	names, kinds, dirs, sums, rows, all := got.names, got.kinds, got.dirs, got.sums, got.rows, got.all
	if err := writeSweepCSV(filepath.Join(out, "sweep.csv"), vs, rows); err != nil {
		return runFailed(fmt.Errorf("sweep.csv: %w", err))
	}
	if err := writeSeedStats(filepath.Join(out, "sweep_stats.csv"), vs, rows); err != nil {
		return runFailed(fmt.Errorf("sweep_stats.csv: %w", err))
	}
	if len(names) == 0 {
		return failed
	}
	// compare.html and sweep.html from one reading of the variants' folders.
	if err := report.WriteSweepPages(filepath.Join(out, "compare.html"), filepath.Join(out, "sweep.html"), names, dirs, sweepPlot(vs, rows, figure)); err != nil {
		return runFailed(fmt.Errorf("compare.html and sweep.html: %w", err))
	}
	if asJSON {
		js, err := json.MarshalIndent(all, "", "  ")
		if err != nil {
			return runFailed(err)
		}
		if _, err = w.Write(append(js, '\n')); err != nil {
			return err
		}
		return failed
	}
	fmt.Fprintln(w)
	printComparison(w, names, kinds, sums)
	printSeedStats(w, vs, rows)
	fmt.Fprintf(w, "\ncombined report: %s (and %s)\n", filepath.Join(out, "compare.html"), filepath.Join(out, "sweep.html"))
	return failed
}

// runVariant runs variant v into out/<its name> with its terminal output on stderr (a
// worker's buffer when several run at once: then without a progress bar).
func runVariant(v scenario.Variant, out, field string, ro runOpts, stderr io.Writer) (*runner.Result, []byte, error) {
	sc := v.Scenario
	sc.Run.Out = filepath.Join(out, sc.Name)
	ro.arg = "variant " + sc.Name + " (" + v.Label + ")"
	applyRunOpts(sc, ro)
	ro.variant = variantInfo(v)
	ro.variant.ScenarioSHA256 = scenarioHash(sc)
	ro.stderr = stderr
	if ro.jobs > 1 {
		ro.quiet = true // progress bars of runs side by side would overwrite each other
	}
	return runAndWrite(sc, field, ro)
}

// clearStale prepares out, the folder of a compare or variants run about to write one results
// folder per name in keep: it removes compare.html, sweep.csv and every other subfolder that a
// previous lockstep run wrote there, so the folder describes this run only. A subfolder is
// removed only when it holds summary.json or scenario.yaml and nothing but the files a
// results folder may hold (runner.ResultFiles, temporary files of a killed write, and the
// lock file, lockFileName), and when no other lockstep holds its lock; one with any other
// file or folder in it, or locked, is kept, with a warning on stderr. Files are removed
// one by one and the folder last (never recursively), so nothing else is ever deleted.
func clearStale(out string, keep []string, stderr io.Writer) {
	entries, err := os.ReadDir(out)
	if err != nil {
		return // a new folder: nothing stale
	}
	for _, f := range []string{"compare.html", "sweep.csv", "sweep_stats.csv", "sweep.html"} {
		if fi, err := os.Lstat(filepath.Join(out, f)); err == nil && fi.Mode().IsRegular() {
			os.Remove(filepath.Join(out, f))
		}
	}
	kept := map[string]bool{}
	for _, k := range keep {
		kept[k] = true
	}
	known := map[string]bool{}
	for _, f := range runner.ResultFiles() {
		known[f] = true
	}
	for _, e := range entries {
		if !e.IsDir() || kept[e.Name()] {
			continue // WriteResults clears the folders this run writes
		}
		dir := filepath.Join(out, e.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		ours, other := false, ""
		for _, f := range files {
			name := f.Name()
			switch {
			case !f.Type().IsRegular():
				other = name
			case name == "summary.json" || name == "scenario.yaml":
				ours = true
			case known[name] || name == lockFileName || strings.HasPrefix(name, report.TempPrefix):
			default:
				other = name
			}
		}
		if !ours {
			continue // not a results folder: not ours to touch
		}
		if other != "" {
			fmt.Fprintf(stderr, "warning: %s looks like a previous run's results folder but also holds %s: kept (remove it by hand if it is stale)\n", dir, other)
			continue
		}
		release, err := lockDir(dir) // not while a --variant run of another sweep writes it
		if err != nil {
			var held *lockHeldError
			if errors.As(err, &held) {
				err = fmt.Errorf("another lockstep (%s) is writing it", held.holder)
			}
			fmt.Fprintf(stderr, "warning: %s looks like a previous run's results folder, but %v: kept\n", dir, err)
			continue
		}
		for _, f := range files {
			if f.Name() != lockFileName {
				os.Remove(filepath.Join(dir, f.Name()))
			}
		}
		release()
		if err := os.Remove(dir); err == nil {
			fmt.Fprintf(stderr, "removed %s: a previous run's results folder this run does not write\n", dir)
		}
	}
}

// makeDir creates dir and any missing parents. undo removes the folders it created, deepest
// first, as long as they are still empty.
func makeDir(dir string) (undo func(), err error) {
	var created []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	undo = func() {
		for _, d := range created {
			if os.Remove(d) != nil {
				return // not empty (or gone): leave it and its parents
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		undo()
		return func() {}, err
	}
	// Prove the folder is writable now, not after a run of minutes.
	f, err := os.CreateTemp(dir, ".lockstep-write-check-*")
	if err != nil {
		undo()
		return func() {}, fmt.Errorf("cannot write there: %w", err)
	}
	f.Close()
	os.Remove(f.Name())
	return undo, nil
}

// printCollectives writes a collective workload's nccl-tests style table and its model.
func printCollectives(w io.Writer, sc *scenario.Scenario, res *runner.Result) {
	s := &res.Summary
	var rate float64
	if secs := res.Wall.Seconds(); secs > 0 {
		rate = float64(s.Events) / secs
	}
	cr := res.Collective
	for _, wc := range sc.Workload.Collectives {
		fmt.Fprintf(w, "scenario %s (seed %d): %s: %s (%s) on %d ranks (placement %s) over %s, %d iteration(s) per size\n",
			s.Scenario, s.Seed, wc.Name, wc.Op, wc.Algorithm, wc.Ranks, wc.PlacementLabel(), sc.Transport.Kind, wc.Iterations)
	}
	fmt.Fprintf(w, "simulated %.3fus in %.2fs wall, %d events (%.1fM events/s); model: alpha %.3f us, B %.1f Gb/s per rank\n\n",
		s.EndUs, res.Wall.Seconds(), s.Events, rate/1e6, cr.Model.Latency.Micros(), float64(cr.Model.Rate)/1e9)
	for _, wc := range sc.Workload.Collectives {
		var rows []collective.Row
		for i, r := range cr.Rows {
			if cr.Names[i] == wc.Name {
				rows = append(rows, r)
			}
		}
		if len(sc.Workload.Collectives) > 1 {
			fmt.Fprintf(w, "# %s\n", wc.Name)
		}
		if wc.MoE != nil {
			for _, r := range s.Collectives {
				if r.Name == wc.Name {
					fmt.Fprintf(w, "# MoE dispatch: %d tokens, top-%d, hidden %d, %s: each rank sends %d B to the other ranks\n",
						wc.MoE.Tokens, wc.MoE.TopK, wc.MoE.Hidden, wc.MoE.DType, r.SentBytesPerRankMax)
					break
				}
			}
		}
		collective.WriteTable(w, rows)
		var mine []runner.CollectiveRow
		for _, r := range s.Collectives {
			if r.Name == wc.Name {
				mine = append(mine, r)
			}
		}
		if note := runner.ScaleUpNote(mine); note != "" {
			fmt.Fprintf(w, "# note: %s\n", note)
		}
		fmt.Fprintln(w)
	}
}

// printSummary writes the human summary: a collective workload's table, or totals; then, for
// packet-level runs, one row per plane.
func printSummary(w io.Writer, sc *scenario.Scenario, res *runner.Result) {
	if t := res.Training; t != nil {
		fmt.Fprintln(w, t.Job)
		how := map[string]string{"analytic": "closed forms at the NIC rate (transport ideal)",
			"flow": "the flow-level engine over the topology (" + sc.Transport.Kind + " routing)", "packet": "packet level"}[t.Engine]
		fmt.Fprintf(w, "network collectives: %s; simulated in %.2fs wall", how, res.Wall.Seconds())
		if f := t.Flow; f != nil {
			fmt.Fprintf(w, ", %d flows, %d rate recomputes", f.FlowsCompleted, f.Recomputes)
		}
		fmt.Fprintf(w, "\n%s\n", t.Result.Summary())
		if fl := t.FaultLines(); fl != "" {
			fmt.Fprintln(w, fl)
		}
		printOutcome(w, &res.Summary)
		for _, o := range t.OCS {
			fmt.Fprintf(w, "OCS: chip %s failed at %.0f us: the job's cube %d moved from physical cube %d to spare cube %d (%d ranks on new chips); the job paused %.1f ms and continued: step %.3f ms before, %.3f ms on the remapped torus (%.3f ms with the pause)\n",
				o.Chip, o.AtUs, o.Cube, o.FailedCube, o.SpareCube, o.MovedHosts, o.PauseUs/1e3, o.StepBeforeUs/1e3, o.StepAfterUs/1e3, o.StepWithPause/1e3)
		}
		fmt.Fprintf(w, "results: %s\n", filepath.Join(sc.Run.Out, "summary.json"))
		return
	}
	if res.Chakra != nil {
		printChakra(w, sc, res)
		if sc.Transport.Kind == scenario.TransportIdeal || sc.Fluid() {
			printNotes(w, &res.Summary)
			printFaultCosts(w, sc, &res.Summary) // the flow level's faults (none under ideal)
			fmt.Fprintf(w, "results: %s\n", filepath.Join(sc.Run.Out, "summary.json"))
			return
		}
	}
	if res.Collective != nil {
		printCollectives(w, sc, res)
		if sc.Transport.Kind == scenario.TransportIdeal || res.Collective.Engine == "flow" {
			printOutcome(w, &res.Summary)
			printFaultCosts(w, sc, &res.Summary) // the flow level's faults (none under ideal)
			fmt.Fprintf(w, "results: %s\n", filepath.Join(sc.Run.Out, "summary.json"))
			return
		}
	}
	s := &res.Summary
	fmt.Fprintf(w, "scenario %s (seed %d): %d hosts, %d planes, %d switches, %d links, %d flows\n",
		s.Scenario, s.Seed, s.Hosts, s.Planes, s.Switches, s.Links, s.Flows)
	printOutcome(w, s)
	var rate float64 // events per wall second; 0 when the run was too quick to time
	if secs := res.Wall.Seconds(); secs > 0 {
		rate = float64(s.Events) / secs
	}
	fluid := s.Engine == "flow" // traffic at flow level: no packets, queues or drain
	if fluid {
		fmt.Fprintf(w, "simulated %.3fus of traffic at flow level (fluid max-min rates, no packets) in %.2fs wall, %d events\n",
			s.DurationUs, res.Wall.Seconds(), s.Events)
	} else {
		fmt.Fprintf(w, "simulated %.3fus of traffic (+ drain to %.3fus) in %.2fs wall, %d events (%.1fM events/s)\n",
			s.DurationUs, s.EndUs, res.Wall.Seconds(), s.Events, rate/1e6)
	}
	frac := "of bytes sent delivered"
	if s.Transfers() != nil {
		frac = "of the payload posted placed"
	}
	share := fmt.Sprintf("%.2f%% %s", 100*s.DeliveredFraction, frac)
	if s.SentPackets == 0 && s.DeliveredFraction == 0 {
		share = "nothing was sent"
	}
	if fluid {
		fmt.Fprintf(w, "offered %.1f Gb/s, delivered %.1f Gb/s (%s)\n", s.OfferedGbps, s.DeliveredGbps, share)
	} else {
		failed := ""
		if n := s.DroppedAtFailedSwitches; n > 0 {
			failed = fmt.Sprintf(" (%d at failed switches: in their own queues, sent by them or on the wire into them)", n)
		}
		fmt.Fprintf(w, "offered %.1f Gb/s, delivered %.1f Gb/s (%s); packets sent %d, delivered %d, trimmed %d, dropped %d%s\n",
			s.OfferedGbps, s.DeliveredGbps, share, s.SentPackets, s.DeliveredPackets, s.TrimmedPackets, s.DroppedPackets, failed)
	}
	unfinished, qpErrs := 0, 0
	if c := s.Transfers(); c != nil && res.Collective == nil {
		unfinished, qpErrs = c.Flows-c.FlowsCompleted-s.UnboundedFlows, c.QPErrors
	}
	if s.UnboundedFlows > 0 {
		fmt.Fprintf(w, "unbounded flows: %d (htsim size 0) sent until run.duration %v and were stopped there, as intended; JCT and FCT figures cover the other transfers\n", s.UnboundedFlows, sc.Run.Duration)
	}
	if unfinished > 0 {
		what := fmt.Sprintf("%d transfers had", unfinished)
		if unfinished == 1 {
			what = "1 transfer had"
		}
		why := "raise run.duration"
		if tw := s.Transfers().TimeoutWait; tw != nil {
			why = tw.Text()
		}
		if qpErrs > 0 {
			why = fmt.Sprintf("%d QP(s) gave up (see the QP errors below); otherwise %s", qpErrs, why)
			if s.StoppedEarly { // the runner's exact decision, not rounded microseconds
				why = fmt.Sprintf("%d QP(s) gave up (see the QP errors below) and every unfinished transfer was on one, so the run stopped there", qpErrs)
			}
		}
		fmt.Fprintf(w, "note: %s not finished when the run stopped at %.1f us (run.duration %v): JCT and FCT figures cover the finished ones only; %s\n",
			what, s.EndUs, sc.Run.Duration, why)
	}
	if t := s.Transfers(); t != nil {
		if p, ok := transport.Lookup(t.Kind); ok && p.Print != nil {
			p.Print(w, t, res.Collective != nil)
		} else {
			transport.PrintTransfers(w, t, res.Collective != nil, "", "")
			transport.PrintQPErrors(w, t)
		}
	} else {
		fmt.Fprintf(w, "one-way latency us: p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n\n",
			s.LatencyP50Us, s.LatencyP99Us, s.LatencyP999Us, s.LatencyMaxUs)
	}
	if p := s.PFC; p != nil {
		fmt.Fprintf(w, "PFC: %d pauses on %d ports, %.1f us paused in all", p.Pauses, p.PortsPaused, p.PausedUsTotal)
		if p.MostPausedPort != "" {
			fmt.Fprintf(w, " (most: %s, %.1f us)", p.MostPausedPort, p.MostPausedUs)
		}
		if p.WatchdogFired > 0 {
			fmt.Fprintf(w, "; watchdog fired %d times (losslessness given up there)", p.WatchdogFired)
		}
		if len(p.ConfigProblems) > 0 {
			fmt.Fprintf(w, "; configuration cannot be lossless: %s", p.ConfigProblems[0])
		}
		if p.HeadroomExceeded > 0 {
			fmt.Fprintf(w, "; NOT LOSSLESS: %d ingresses dropped packets past XOFF + headroom (first: %v)", p.HeadroomExceeded, p.HeadroomPortsFirst)
		}
		fmt.Fprintln(w)
	}
	printSwitchModel(w, s.Switch)
	runner.PrintAdaptive(w, s.Adaptive)
	printFaultCosts(w, sc, s)
	if fluid {
		fmt.Fprintf(w, "results: %s\n", filepath.Join(sc.Run.Out, "summary.json"))
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "plane\tnic util%\tuplink util% min/mean/max\tuplinks idle/over\tdownlinks over\tqueue p50\tp99\tp99.9\tmax\tdrops\ttrims\tCE\t")
	for _, p := range s.PerPlane {
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f/%.1f/%.1f\t%d/%d of %d\t%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t\n",
			p.Plane, p.NICUtilMeanPct, p.UplinkUtilMinPct, p.UplinkUtilMeanPct, p.UplinkUtilMaxPct,
			p.UplinksIdle, p.UplinksOverloaded, p.Uplinks, p.DownlinksOverload,
			bytesStr(p.Queue.P50Bytes), bytesStr(p.Queue.P99Bytes), bytesStr(p.Queue.P999Bytes), bytesStr(p.Queue.MaxBytes),
			p.Drops, p.Trims, p.CEMarks)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nresults: %s\n", filepath.Join(sc.Run.Out, "summary.json"))
}

// noNegZero maps values that print as -0.0 to 0.
func noNegZero(x float64) float64 {
	if x < 0 && x > -0.05 {
		return 0
	}
	return x
}

// bytesStr prints a queue depth compactly ("0", "12.3KiB").
func bytesStr(b int64) string {
	switch {
	case b == 0:
		return "0"
	case b < 1<<10:
		return fmt.Sprintf("%dB", b)
	case b < 1<<20:
		return fmt.Sprintf("%.1fKiB", float64(b)/(1<<10))
	default:
		return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20))
	}
}

// loadScenarioArg loads a scenario file, or an embedded preset when the argument names one and
// no such file exists (lockstep bench --list shows them).
func loadScenarioArg(arg string) (*scenario.Scenario, error) {
	if _, err := os.Stat(arg); err != nil && !strings.ContainsAny(arg, "/.") {
		for _, p := range scenario.Presets() {
			if p == arg {
				return scenario.Preset(arg)
			}
		}
		return nil, fmt.Errorf("%q is neither a scenario file nor a preset; presets: %s", arg, strings.Join(scenario.Presets(), ", "))
	}
	return scenario.Load(arg)
}

// loadScenarioOrDefault loads the one scenario argument of run and validate (a file or a
// preset), or the built-in default when there is none.
func loadScenarioOrDefault(args []string) (*scenario.Scenario, error) {
	if len(args) == 1 {
		return loadScenarioArg(args[0])
	}
	return scenario.Default()
}

// printFaultCosts writes one line per failure: when, what, and what it cost (empty figures
// could not be measured; docs/outputs.md explains each).
func printFaultCosts(w io.Writer, sc *scenario.Scenario, s *runner.Summary) {
	costs := s.Faults
	if len(costs) == 0 {
		return
	}
	opt := func(x *float64, unit string) string {
		if x == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f%s", *x, unit)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fault\tat us\ttarget\tdetect\tlast retx\trecover\tgoodput vs faultless\tlost\tdropped\tQP errors\t")
	for _, c := range costs {
		frac := "-"
		if c.DuringFraction > 0 {
			frac = fmt.Sprintf("%.3f", c.DuringFraction)
		}
		lost := "-"
		if c.LostBytes != nil {
			lost = bytesStr(*c.LostBytes)
		}
		fmt.Fprintf(tw, "faults[%d] %s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n", c.Entry, c.Action, c.AtUs, c.Target,
			opt(c.DetectUs, "us"), opt(c.LastRetxUs, "us"), opt(c.RecoverUs, "us"), frac, lost, c.PacketsDropped, c.QPErrors)
	}
	tw.Flush()
	if s.Engine == "flow" && slices.ContainsFunc(costs, func(c runner.FaultCost) bool { return c.DetectUs == nil }) {
		fmt.Fprintln(w, "note: at flow level detect and last retx are the fault model's reactions (MRC's endpoint reroute off sampled paths, RoCE's go-back-N resends by timer or NAK); MRC on a Clos or fat-tree, and under adaptive routing a transport with out-of-order placement (its bundles per plane), takes a failure as its bundles' capacity loss at once, with no reaction to time")
	}
	for _, c := range costs {
		if c.Note != "" { // why recover is "-" though the goodput may have caught up
			fmt.Fprintf(w, "note: faults[%d] %s on %s: %s\n", c.Entry, c.Action, c.Target, c.Note)
		}
		// An entropy filter matches one EV number on one link; each QP draws its EVs' paths,
		// so a QP may route that EV elsewhere. Say so rather than leave a fault that did
		// nothing looking like a fault MRC shrugged off.
		if c.Entry < len(sc.Faults) && sc.Faults[c.Entry].Entropy != nil && c.PacketsDropped == 0 {
			fmt.Fprintf(w, "note: faults[%d] (entropy %d on %s) dropped no packet: no packet with that entropy crossed the link (under MRC each QP draws its EVs' paths: pick another EV of the link's plane; raw spray: another path index)\n",
				c.Entry, *sc.Faults[c.Entry].Entropy, c.Target)
		}
	}
	if s.FaultBaselineEndUs > 0 {
		done, all := 0, 0
		if c := s.Transfers(); c != nil {
			done, all = c.FlowsCompleted, c.Flows
		}
		if done < all {
			fmt.Fprintf(w, "with faults %d of %d transfers finished by %.1f us (the faultless run ended at %.1f us): the slowdown is at least %.1f us\n",
				done, all, s.FaultBaselineEndUs+s.FaultSlowdownUs, s.FaultBaselineEndUs, s.FaultSlowdownUs)
		} else {
			fmt.Fprintf(w, "faults slowed the traffic by %.1f us (%.1f us without them, %.1f us with)\n",
				noNegZero(s.FaultSlowdownUs), s.FaultBaselineEndUs, s.FaultBaselineEndUs+s.FaultSlowdownUs)
		}
	}
	fmt.Fprintln(w)
}

// stdoutIsTerminal reports whether stdout is a terminal (a progress bar would only clutter a
// pipe or a file).
func stdoutIsTerminal() bool { return term.IsTerminal(int(os.Stdout.Fd())) }

// shortTime writes t to 4 significant digits in the largest unit that keeps it at least 1
// ("326.4ms", "2.5us"), for one-line descriptions; summary.json keeps every digit.
func shortTime(t sim.Time) string {
	us := t.Micros()
	switch {
	case us >= 1e6:
		return strconv.FormatFloat(us/1e6, 'g', 4, 64) + "s"
	case us >= 1e3:
		return strconv.FormatFloat(us/1e3, 'g', 4, 64) + "ms"
	case us >= 1:
		return strconv.FormatFloat(us, 'g', 4, 64) + "us"
	}
	return strconv.FormatFloat(us*1e3, 'g', 4, 64) + "ns"
}
