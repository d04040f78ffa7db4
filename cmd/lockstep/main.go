// Command lockstep simulates AI-training cluster networks. See README.md.
//
// Exit codes: 0 success, 2 bad input (scenario, flags, files), 1 a run that failed (packet
// conservation broken, kernel error, watchdog), 130 and 143 a run interrupted by SIGINT and
// SIGTERM (its results folder holds what it had: summary.json says "complete": false).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// exitError carries an exit code chosen by a command.
type exitError struct {
	code int
	err  error
}

// Error returns the wrapped error's message.
func (e *exitError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *exitError) Unwrap() error { return e.err }

// badInput wraps err as exit code 2.
func badInput(err error) error { return &exitError{code: 2, err: err} }

// runFailed wraps err as exit code 1.
func runFailed(err error) error { return &exitError{code: 1, err: err} }

func main() {
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the CLI with args and returns the exit code; tests call it directly.
func execute(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "lockstep:", oneLine(err.Error()))
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// Errors from cobra itself (unknown flag or command, wrong argument count) are bad input.
	return 2
}

// oneLine folds a multi-line message onto one line: cobra's "unknown command" error adds a
// "Did you mean this?" block on further lines, and stderr gets exactly one line per error.
func oneLine(msg string) string {
	var parts []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "lockstep",
		Short: "Simulate what an AI-training network does to the job",
		Long: `lockstep simulates AI-training cluster networks packet by packet: multi-plane Clos
fabrics, queues with ECN and trimming, ECMP or source-routed paths, and paced traffic.

Run the built-in default scenario with 'lockstep run', or give a scenario file.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(flagValueError) // inherited by every subcommand
	root.AddCommand(newRunCmd(stdout, stderr), newCompareCmd(stdout, stderr), newSweepCmd(stdout, stderr), newTopoCmd(stdout), newBenchCmd(stdout), newVersionCmd(stdout), newNCCLCmd(stdout, stderr),
		newValidateCmd(stdout, stderr), newSchemaCmd(stdout), newImportCmd(stdout))
	root.AddCommand(newServeCmd(stdout, stderr))
	addCompletions(root)
	return root
}

// flagValueError rewrites pflag's "invalid argument "x" for "--seed" flag: strconv.ParseUint:
// parsing "x": invalid syntax" as "--seed: "x" is not a whole number (random seed, ...)":
// the flag, the bad value and what the flag takes, without Go internals.
func flagValueError(_ *cobra.Command, err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	f := ive.GetFlag()
	want, ok := flagKinds[f.Value.Type()]
	if !ok {
		want = "a valid " + f.Value.Type()
	}
	return fmt.Errorf("--%s: %q is not %s (%s)", f.Name, ive.GetValue(), want, f.Usage)
}

// flagKinds says in words what each pflag value type accepts.
var flagKinds = map[string]string{
	"bool":         "true or false",
	"int":          "a whole number",
	"uint64":       "a whole number",
	"float64":      "a number",
	"intSlice":     "a comma-separated list of whole numbers",
	"float64Slice": "a comma-separated list of numbers",
}
