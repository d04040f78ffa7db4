package main

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/spf13/cobra"
)

func newSweepCmd(stdout, stderr io.Writer) *cobra.Command {
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
		list        bool
		variant     string

		slurm, collect bool
		so             slurmOpts
	)
	cmd := &cobra.Command{
		Use:   "sweep SCENARIO.yaml [-j N] [--list] [--variant NAME|INDEX] [--slurm [--submit [--wait]]] [--collect]",
		Short: "Run the variants of a file with a variants: section on a local worker pool",
		Long: `Run every variant of a scenario file with a variants: section, -j N at once (default one
per core), each into its own results folder (--out DIR/<variant>, default
results/<the file's name>/<variant>), and print them side by side with compare.html beside
them and sweep.csv (one row per variant: its parameter values, seed and headline figures;
docs/outputs.md): the same as 'lockstep run FILE', and the same files and output whatever
-j is.

--list prints the variants (index, name, parameter values) without running any.
--variant NAME|INDEX runs exactly one of them (an index counts from 0, as --list shows),
into the folder the whole sweep gives it, so an array scheduler (one task per index) fills
the same folders as a local sweep.

--slurm writes sweep.sbatch into the results folder: a plain sbatch job array script, one
array task per variant running 'lockstep sweep FILE --variant $SLURM_ARRAY_TASK_ID' into
the folder a local sweep gives it (--partition, --time, --cpus-per-task and --mem become
#SBATCH options; --lockstep the binary the tasks run, default this one). --submit submits
it with sbatch and prints the job id; --wait then waits for the array and names the
variants whose tasks did not complete. --collect reads the variants' folders back and
writes sweep.csv, sweep.html and the table as a local sweep would, naming any variant
missing, incomplete or failed (exit 1). docs/sweeps.md shows the workflow.`,
		Args: cobra.ExactArgs(1),
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
			if err := checkSweepModes(list, cmd.Flags().Changed("variant"), slurm, collect); err != nil {
				return err
			}
			if err := checkSlurmFlags(so, slurm, cmd.Flags().Changed); err != nil {
				return err
			}
			vs, err := loadVariantsMax(args[0], maxVariants)
			if err != nil {
				return badInput(err)
			}
			if vs == nil {
				if _, err := loadScenarioArg(args[0]); err != nil {
					return badInput(err)
				}
				return badInput(fmt.Errorf("%s has no variants: section, so there is nothing to sweep; run it with lockstep run", args[0]))
			}
			if err := checkSeedFlag(args[0], runOpts{seeded: cmd.Flags().Changed("seed"), seed: seed}, vs); err != nil {
				return err
			}
			if list {
				printVariants(stdout, vs)
				fmt.Fprintln(stderr, sweepEstimate(vs, jobs)) // stdout stays the table, for scripts
				return nil
			}
			if len(vs) > scenario.MaxVariants && !cmd.Flags().Changed("variant") {
				fmt.Fprintln(stderr, "lockstep:", sweepEstimate(vs, jobs))
			}
			intr, stop := catchSignals(stderr)
			defer stop()
			ro := runOpts{seeded: cmd.Flags().Changed("seed"), seed: seed, quiet: quiet || asJSON, stderr: stderr, trace: trace, intr: intr, jobs: jobs, force: force, figure: figure}
			switch {
			case slurm:
				return sweepSlurm(stdout, args[0], vs, out, so, taskFlags(cmd.Flags().Changed, seed, trace, maxVariants, force), ro)
			case collect:
				return collectSweep(stdout, vs, out, asJSON, ro)
			case !cmd.Flags().Changed("variant"):
				return runVariants(stdout, vs, out, asJSON, ro)
			}
			i, err := pickVariant(vs, variant)
			if err != nil {
				return badInput(fmt.Errorf("%s: %w", args[0], err))
			}
			return runOneVariant(stdout, vs[i], out, asJSON, ro)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "folder of the variants' results folders (default results/<the file's name>)")
	cmd.Flags().Uint64Var(&seed, "seed", 0, "random seed for every variant, overriding run.seed (>= 1; not with a variants key that sets run.seed, such as seeds)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summaries (by variant name; with --variant, its summary.json) instead of the table")
	cmd.Flags().BoolVar(&trace, "trace", false, "also write trace.json in every variant's folder")
	cmd.Flags().IntVar(&maxVariants, "max", scenario.MaxVariants, "the most variants the file may expand to (a guard against typos; up to 100000)")
	cmd.Flags().StringVar(&figure, "figure", "", "the figure sweep.html plots against each swept parameter (a sweep.csv column; default the first of step_time_us, busbw_GBps, jct_us, fct_p99_us, duration_us a variant has)")
	cmd.Flags().BoolVar(&force, "force", false, "rerun every variant, even one whose folder holds a complete run of the same scenario (a rerun skips those)")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress bar")
	cmd.Flags().IntVarP(&jobs, "jobs", "j", defaultJobs(), "variants run at once (results and output as with -j 1)")
	cmd.Flags().BoolVar(&list, "list", false, "print the variants (index, name, parameter values) and run none")
	cmd.Flags().StringVar(&variant, "variant", "", "run only this variant: its name or its index (from 0, as --list shows)")
	cmd.Flags().BoolVar(&slurm, "slurm", false, "write a Slurm job array script (one task per variant) into the results folder and run none here")
	cmd.Flags().BoolVar(&so.submit, "submit", false, "with --slurm: submit the script with sbatch and print the job id")
	cmd.Flags().BoolVar(&so.wait, "wait", false, "with --submit: wait for the array to finish and name the variants that did not complete")
	cmd.Flags().StringVar(&so.partition, "partition", "", "with --slurm: the Slurm partition (#SBATCH --partition; default the cluster's)")
	cmd.Flags().StringVar(&so.time, "time", "", "with --slurm: each task's time limit, as sbatch takes it: minutes, HH:MM:SS or D-HH:MM:SS (default the partition's)")
	cmd.Flags().IntVar(&so.cpus, "cpus-per-task", 0, "with --slurm: CPUs per task (#SBATCH --cpus-per-task; a variant runs on one core)")
	cmd.Flags().StringVar(&so.mem, "mem", "", "with --slurm: memory per task, as sbatch takes it: 4G, 500M (default the partition's)")
	cmd.Flags().StringVar(&so.lockstep, "lockstep", "", "with --slurm: the lockstep binary the tasks run (default this one's absolute path)")
	cmd.Flags().BoolVar(&collect, "collect", false, "gather the variants' folders (from Slurm tasks, or any --variant runs) into sweep.csv, sweep.html and the table, running none")
	return cmd
}

// printVariants writes --list: one row per variant with its index, name and each swept
// parameter's value, under a header naming the variants keys.
func printVariants(w io.Writer, vs []scenario.Variant) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "index\tname")
	for _, p := range vs[0].Values {
		fmt.Fprintf(tw, "\t%s", p.Key)
	}
	fmt.Fprintln(tw)
	for i, v := range vs {
		fmt.Fprintf(tw, "%d\t%s", i, v.Scenario.Name)
		for _, p := range v.Values {
			fmt.Fprintf(tw, "\t%s", p.Value)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// pickVariant finds --variant's value among vs: a variant name, or an index from 0. The
// error names what is allowed.
func pickVariant(vs []scenario.Variant, arg string) (int, error) {
	for i, v := range vs {
		if v.Scenario.Name == arg {
			return i, nil
		}
	}
	if i, err := strconv.Atoi(arg); err == nil {
		if i >= 0 && i < len(vs) {
			return i, nil
		}
		return 0, fmt.Errorf("--variant: index %d is out of range; the file has %d variants: 0..%d (lockstep sweep --list shows them)", i, len(vs), len(vs)-1)
	}
	names := make([]string, 0, len(vs))
	for _, v := range vs {
		names = append(names, v.Scenario.Name)
	}
	if len(names) > 8 {
		names = append(names[:8:8], "...")
	}
	return 0, fmt.Errorf("--variant: %q is neither a variant's name nor an index; give an index 0..%d or a name (%s; lockstep sweep --list shows them)", arg, len(vs)-1, strings.Join(names, ", "))
}

// runOneVariant runs one variant into out/<its name> (out defaulting as for the whole sweep)
// and prints its summary as lockstep run does; compare.html and the other variants' folders
// are left alone.
func runOneVariant(w io.Writer, v scenario.Variant, out string, asJSON bool, ro runOpts) error {
	field := "--out"
	if out == "" {
		out, field = filepath.Join("results", v.Base), "results folder"
	}
	ro.jobs = 1 // one run: its progress bar may show
	var (
		res *runner.Result
		js  []byte
		err error
	)
	if st := planResume([]scenario.Variant{v}, out, ro)[0]; st != nil {
		// Complete from an earlier run (an array task run twice): nothing to do.
		if asJSON {
			_, err = w.Write(st.js)
			return err
		}
		fmt.Fprintf(w, "%s (%s): results in %s, complete from an earlier run (--force reruns it)\n", v.Scenario.Name, v.Label, filepath.Join(out, v.Scenario.Name))
		return nil
	}
	if res, js, err = runVariant(v, out, field, ro, ro.stderr); err != nil {
		return err
	}
	sc := v.Scenario
	if err := interruptErr(ro.intr, res, sc.Run.Out); err != nil {
		if asJSON {
			_, _ = w.Write(js)
		}
		return err
	}
	if asJSON {
		if _, err := w.Write(js); err != nil {
			return err
		}
		return outcomeErr(&res.Summary)
	}
	fmt.Fprintf(w, "%s (%s): results in %s\n", sc.Name, v.Label, sc.Run.Out)
	printSummary(w, sc, res)
	return outcomeErr(&res.Summary)
}

// sweepFigures are sweep.csv's headline columns after seed (docs/outputs.md): each reads a
// summary's figure, or reports that it does not apply to that run (an empty cell).
var sweepFigures = []struct {
	col string
	get func(s *runner.Summary) (float64, bool)
}{
	{"duration_us", func(s *runner.Summary) (float64, bool) { return s.DurationUs, s.Training == nil }},
	{"delivered_gbps", func(s *runner.Summary) (float64, bool) {
		return s.DeliveredGbps, s.Training == nil && (s.Engine != "flow" || s.Transport != nil) // flow-level traffic has goodput; workloads do not
	}},
	{"jct_us", sweepXfer(func(t *transport.Summary) (float64, bool) { return t.JCTUs, t.JCTUs > 0 })},
	{"fct_p50_us", sweepXfer(func(t *transport.Summary) (float64, bool) { return t.FCTP50Us, t.FlowsCompleted > 0 })},
	{"fct_p99_us", sweepXfer(func(t *transport.Summary) (float64, bool) { return t.FCTP99Us, t.FlowsCompleted > 0 })},
	{"fct_max_us", sweepXfer(func(t *transport.Summary) (float64, bool) { return t.FCTMaxUs, t.FlowsCompleted > 0 })},
	{"retx_packets", sweepXfer(func(t *transport.Summary) (float64, bool) { return float64(t.RetxPackets), true })},
	{"qp_errors", sweepXfer(func(t *transport.Summary) (float64, bool) { return float64(t.QPErrors), true })},
	{"failed", nil}, // true or false: written apart
	{"step_time_us", func(s *runner.Summary) (float64, bool) {
		if s.Training == nil {
			return 0, false
		}
		return s.Training.StepTimeUs, true
	}},
	{"mfu", func(s *runner.Summary) (float64, bool) {
		if s.Training == nil {
			return 0, false
		}
		return s.Training.MFU, true
	}},
	{"busbw_GBps", func(s *runner.Summary) (float64, bool) {
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

// sweepXfer reads a transport figure (transport.Summary's common fields): it does not apply
// to a run without a packet-level transport, nor where f says so (FCTs when nothing finished).
func sweepXfer(f func(t *transport.Summary) (float64, bool)) func(s *runner.Summary) (float64, bool) {
	return func(s *runner.Summary) (float64, bool) {
		if t := s.Transfers(); t != nil {
			return f(t)
		}
		return 0, false
	}
}

// writeSweepCSV writes sweep.csv at path: one row per variant of vs in variant order (index,
// name, each swept parameter's value, seed, then sweepFigures), sums[i] being variant i's
// summary (nil: it did not run, so it counts as failed and its figures are empty).
func writeSweepCSV(path string, vs []scenario.Variant, sums []*runner.Summary) error {
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	head := []string{"index", "name"}
	for _, p := range vs[0].Values {
		head = append(head, p.Key)
	}
	head = append(head, "seed")
	for _, f := range sweepFigures {
		head = append(head, f.col)
	}
	_ = cw.Write(head)
	for i, v := range vs {
		row := []string{strconv.Itoa(i), v.Scenario.Name}
		for _, p := range v.Values {
			row = append(row, p.Value)
		}
		s := sums[i]
		row = append(row, strconv.FormatUint(v.Scenario.Run.Seed, 10))
		for _, f := range sweepFigures {
			switch {
			case f.get == nil:
				row = append(row, strconv.FormatBool(s == nil || s.Failed))
			case s == nil:
				row = append(row, "")
			default:
				if x, ok := f.get(s); ok {
					row = append(row, strconv.FormatFloat(x, 'g', -1, 64))
				} else {
					row = append(row, "")
				}
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

// checkSweepModes rejects two of sweep's modes at once: --list, --variant, --slurm and
// --collect each exclude the others.
func checkSweepModes(list, variant, slurm, collect bool) error {
	var given []string
	for _, m := range []struct {
		on   bool
		name string
	}{{list, "--list"}, {variant, "--variant"}, {slurm, "--slurm"}, {collect, "--collect"}} {
		if m.on {
			given = append(given, m.name)
		}
	}
	if len(given) > 1 {
		return badInput(fmt.Errorf("%s: give one of them (--list prints the variants, --variant runs one, --slurm writes the job array, --collect gathers the folders)", strings.Join(given, " and ")))
	}
	return nil
}

// taskFlags are the flags a Slurm array task and --collect pass on so they resolve the same
// scenarios as the command that wrote the script: --seed, --trace, --max and --force as
// given (changed says whether a flag was).
func taskFlags(changed func(string) bool, seed uint64, trace bool, maxVariants int, force bool) []string {
	var f []string
	if changed("seed") {
		f = append(f, "--seed", strconv.FormatUint(seed, 10))
	}
	if trace {
		f = append(f, "--trace")
	}
	if changed("max") {
		f = append(f, "--max", strconv.Itoa(maxVariants))
	}
	if force {
		f = append(f, "--force")
	}
	return f
}
