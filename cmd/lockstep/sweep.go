package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/spf13/cobra"
)

func newSweepCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		out     string
		seed    uint64
		asJSON  bool
		quiet   bool
		trace   bool
		jobs    int
		list    bool
		variant string
	)
	cmd := &cobra.Command{
		Use:   "sweep SCENARIO.yaml [-j N] [--list] [--variant NAME|INDEX]",
		Short: "Run the variants of a file with a variants: section on a local worker pool",
		Long: `Run every variant of a scenario file with a variants: section, -j N at once (default one
per core), each into its own results folder (--out DIR/<variant>, default
results/<the file's name>/<variant>), and print them side by side with compare.html beside
them: the same as 'lockstep run FILE', and the same files and output whatever -j is.

--list prints the variants (index, name, parameter values) without running any.
--variant NAME|INDEX runs exactly one of them (an index counts from 0, as --list shows),
into the folder the whole sweep gives it, so an array scheduler (one task per index) fills
the same folders as a local sweep.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("seed") && seed == 0 {
				return badInput(fmt.Errorf("--seed: 0 is not allowed; use a seed >= 1"))
			}
			if err := checkJobs(jobs); err != nil {
				return err
			}
			if list && cmd.Flags().Changed("variant") {
				return badInput(fmt.Errorf("--list and --variant: give one of them"))
			}
			vs, err := loadVariantsArg(args[0])
			if err != nil {
				return badInput(err)
			}
			if vs == nil {
				if _, err := loadScenarioArg(args[0]); err != nil {
					return badInput(err)
				}
				return badInput(fmt.Errorf("%s has no variants: section, so there is nothing to sweep; run it with lockstep run", args[0]))
			}
			if list {
				printVariants(stdout, vs)
				return nil
			}
			intr, stop := catchSignals(stderr)
			defer stop()
			ro := runOpts{seeded: cmd.Flags().Changed("seed"), seed: seed, quiet: quiet || asJSON, stderr: stderr, trace: trace, intr: intr, jobs: jobs}
			if !cmd.Flags().Changed("variant") {
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
	cmd.Flags().Uint64Var(&seed, "seed", 0, "random seed for every variant, overriding run.seed (>= 1)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summaries (by variant name; with --variant, its summary.json) instead of the table")
	cmd.Flags().BoolVar(&trace, "trace", false, "also write trace.json in every variant's folder")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "no progress bar")
	cmd.Flags().IntVarP(&jobs, "jobs", "j", defaultJobs(), "variants run at once (results and output as with -j 1)")
	cmd.Flags().BoolVar(&list, "list", false, "print the variants (index, name, parameter values) and run none")
	cmd.Flags().StringVar(&variant, "variant", "", "run only this variant: its name or its index (from 0, as --list shows)")
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
	res, js, err := runVariant(v, out, field, ro, ro.stderr)
	if err != nil {
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
