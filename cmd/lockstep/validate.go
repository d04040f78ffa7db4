package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

func newValidateCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		asJSON, noSetup bool
		maxVariants     int
	)
	cmd := &cobra.Command{
		Use:   "validate [SCENARIO.yaml | PRESET]",
		Short: "Resolve a scenario and print it with estimates of its cost, running nothing",
		Long: `Load and resolve a scenario exactly as run does (a file, a preset, or the built-in default
when none is given), run nothing, and print the resolved scenario (what run writes as
scenario.yaml) followed by a second YAML document, estimate:, with the engine, hosts,
links, flows, packets, memory and a wall-time range (scenario.Estimate: an order of
magnitude, from measured costs). A file with variants prints one line per variant
(--max raises the 64-variant guard as run and sweep do).

After resolving, validate sets the run up as run does (the fabric, routes, endpoints,
collective schedules) and stops it before its first events, so the runner's own input
checks (a spread assignment that cannot exist, a route a topology lacks) are made too;
--no-setup skips that (faster on a huge fabric; the resolver's checks and the estimate
remain). The results folder is not created. Bad input gets exactly run's error and exit
code (2); a valid scenario exits 0. With --json, prints {"scenario": ..., "estimate": ...}
(variants: a list of {"name", "label", "estimate"}) instead.`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeScenarioArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkMaxFlag(maxVariants); err != nil {
				return badInput(err)
			}
			if len(args) == 1 {
				vs, err := loadVariantsMax(args[0], maxVariants)
				if err != nil {
					return badInput(err)
				}
				if vs != nil {
					return validateVariants(stdout, stderr, vs, asJSON, noSetup)
				}
			}
			sc, err := loadScenarioOrDefault(args)
			if err != nil {
				return badInput(err)
			}
			if !noSetup {
				arg := ""
				if len(args) == 1 {
					arg = args[0]
				}
				if err := setupCheck(sc, arg, stderr); err != nil {
					return err
				}
			}
			return printValidated(stdout, sc, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"scenario": ..., "estimate": ...} as JSON`)
	cmd.Flags().BoolVar(&noSetup, "no-setup", false, "resolve only: do not set the run up (skips the runner's own input checks)")
	cmd.Flags().IntVar(&maxVariants, "max", scenario.MaxVariants, "the most variants a file may expand to, as run's and sweep's --max (up to 100000)")
	return cmd
}

// checkMaxFlag rejects a --max (run, sweep, validate) outside 1..scenario.MaxVariantsLimit,
// naming the flag, its value and the range.
func checkMaxFlag(max int) error {
	if max < 1 || max > scenario.MaxVariantsLimit {
		return fmt.Errorf("--max: %d; want 1..%d", max, scenario.MaxVariantsLimit)
	}
	return nil
}

// printValidated writes the resolved scenario and its estimate (YAML, two documents; or JSON).
func printValidated(w io.Writer, sc *scenario.Scenario, asJSON bool) error {
	y, err := scenario.Encode(sc)
	if err != nil {
		return runFailed(fmt.Errorf("encoding the resolved scenario: %w", err))
	}
	e, err := sc.Estimate()
	if err != nil {
		return badInput(err)
	}
	if asJSON {
		var doc any
		if err := yaml.Unmarshal(y, &doc); err != nil {
			return runFailed(fmt.Errorf("reading the resolved scenario back: %w", err))
		}
		js, err := json.MarshalIndent(map[string]any{"scenario": doc, "estimate": e}, "", "  ")
		if err != nil {
			return runFailed(err)
		}
		_, err = fmt.Fprintf(w, "%s\n", js)
		return err
	}
	if _, err := w.Write(y); err != nil {
		return err
	}
	_, err = io.WriteString(w, "---\n"+estimateYAML(sc, e))
	return err
}

// setupCheck sets sc's run up as run does and stops it before its first events (an
// interrupt requested before the start: the runner checks it every few thousand events), so
// the runner's input errors come out as run reports them: prefixed by arg (the scenario
// argument, or the variant) and exit code 2; its warnings go to stderr as run prints them.
// A run that fails for another reason while being set up is exit code 1, as in run.
func setupCheck(sc *scenario.Scenario, arg string, stderr io.Writer) error {
	intr := &runner.Interrupt{}
	intr.Request("validate")
	_, err := runner.RunWith(sc, runner.Options{Interrupt: intr, Warn: func(w string) { fmt.Fprintln(stderr, "warning:", w) }})
	if err == nil {
		return nil
	}
	var ie *runner.InputError
	if errors.As(err, &ie) {
		if arg != "" {
			err = fmt.Errorf("%s: %w", arg, err)
		}
		return badInput(err)
	}
	return runFailed(err)
}

// estimateYAML is the estimate: block validate prints, one figure a line, with the limits it
// was checked against.
func estimateYAML(sc *scenario.Scenario, e scenario.Estimate) string {
	var b strings.Builder
	b.WriteString("estimate:\n")
	fmt.Fprintf(&b, "  engine: %s\n", e.Engine)
	fmt.Fprintf(&b, "  hosts: %d\n  links: %d\n", e.Hosts, e.Links)
	if e.Flows > 0 {
		fmt.Fprintf(&b, "  flows: %d\n", e.Flows)
	}
	if e.Packets > 0 {
		fmt.Fprintf(&b, "  packets: %s   # run.max_packets %d\n", strconv.FormatFloat(e.Packets, 'g', 4, 64), sc.Run.MaxPackets)
	}
	if e.ScheduleOps > 0 {
		fmt.Fprintf(&b, "  schedule_ops: %s\n", strconv.FormatFloat(e.ScheduleOps, 'g', 4, 64))
	}
	fmt.Fprintf(&b, "  memory: %s   # run.max_memory %v\n", memStr(e.MemoryBytes), e.MaxMemory)
	if e.WallMax > 0 {
		fmt.Fprintf(&b, "  wall: %s .. %s\n", wallStr(e.WallMin), wallStr(e.WallMax))
	}
	if e.Note != "" {
		fmt.Fprintf(&b, "  note: %q\n", e.Note)
	}
	return b.String()
}

// validateVariants prints one line per variant of a file: its name, what it sets and its
// estimate (or, with asJSON, a list of them).
func validateVariants(w, stderr io.Writer, vs []scenario.Variant, asJSON, noSetup bool) error {
	type row struct {
		Name     string            `json:"name"`
		Label    string            `json:"label"`
		Estimate scenario.Estimate `json:"estimate"`
	}
	var rows []row
	for _, v := range vs {
		e, err := v.Scenario.Estimate()
		if err != nil {
			return badInput(fmt.Errorf("variant %s (%s): %w", v.Scenario.Name, v.Label, err))
		}
		if !noSetup {
			if err := setupCheck(v.Scenario, "variant "+v.Scenario.Name+" ("+v.Label+")", stderr); err != nil {
				return err
			}
		}
		rows = append(rows, row{v.Scenario.Name, v.Label, e})
	}
	if asJSON {
		js, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return runFailed(err)
		}
		_, err = fmt.Fprintf(w, "%s\n", js)
		return err
	}
	for _, r := range rows {
		e := r.Estimate
		fmt.Fprintf(w, "%s (%s): valid; %s, %d hosts, %d links", r.Name, r.Label, e.Engine, e.Hosts, e.Links)
		if e.Flows > 0 {
			fmt.Fprintf(w, ", %d flows", e.Flows)
		}
		if e.Packets > 0 {
			fmt.Fprintf(w, ", %s packets", strconv.FormatFloat(e.Packets, 'g', 4, 64))
		}
		fmt.Fprintf(w, ", memory %s", memStr(e.MemoryBytes))
		if e.WallMax > 0 {
			fmt.Fprintf(w, ", wall %s .. %s", wallStr(e.WallMin), wallStr(e.WallMax))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, sweepEstimate(vs, runtime.NumCPU()))
	return nil
}

// memStr prints bytes in MB or GB (decimal), 3 significant digits.
func memStr(b float64) string {
	if b >= 1e9 {
		return strconv.FormatFloat(b/1e9, 'g', 3, 64) + " GB"
	}
	return strconv.FormatFloat(b/1e6, 'g', 3, 64) + " MB"
}

// wallStr prints a wall time to 2 significant digits ("0.38s", "26s", "1.2h").
func wallStr(d time.Duration) string {
	s := d.Seconds()
	switch {
	case s >= 3600:
		return strconv.FormatFloat(s/3600, 'g', 2, 64) + "h"
	case s >= 60:
		return strconv.FormatFloat(s/60, 'g', 2, 64) + "min"
	default:
		return strconv.FormatFloat(s, 'g', 2, 64) + "s"
	}
}
