package main

// Slurm: a sweep fans out as one job array, one array task per variant, each task running
// `lockstep sweep FILE --variant $SLURM_ARRAY_TASK_ID` into the folder a local sweep gives
// that variant; `lockstep sweep FILE --collect` then reads the folders back and writes the
// sweep's files and table through the same code as a local sweep (finishSweep). lockstep
// schedules nothing itself: the script is plain sbatch (sbatch(1): the #SBATCH options,
// --array, the %A and %a filename patterns, $SLURM_ARRAY_TASK_ID), and --submit and --wait
// only call sbatch and squeue (squeue(1): -h, -r, -t all, -j, -o "%K %T"). docs/sweeps.md
// describes the workflow for users.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
)

// slurmOpts are sweep's Slurm flags.
type slurmOpts struct {
	partition string // --partition ("" = the cluster's default)
	time      string // --time, sbatch's format ("" = the partition's default)
	cpus      int    // --cpus-per-task (0 = not given)
	mem       string // --mem, sbatch's format ("" = the partition's default)
	lockstep  string // --lockstep: the binary the tasks run ("" = this one, os.Executable)
	submit    bool   // --submit: run sbatch on the script
	wait      bool   // --wait: wait for the array to finish
}

// slurmScriptName is the script's file name in the sweep's results folder.
const slurmScriptName = "sweep.sbatch"

// maxListedVariants is how many variants the script's header comment lists by index.
const maxListedVariants = 64

// --wait polls squeue every slurmPoll for its first slurmPollSteady, then at intervals
// grown by half each poll up to slurmPollMax (squeue asks slurmctld, which a busy cluster
// shares; a short array still ends within a second of its last task).
var slurmPoll, slurmPollSteady, slurmPollMax = time.Second, 30 * time.Second, 30 * time.Second

// checkSlurmFlags rejects Slurm flags given without --slurm (changed says whether a flag
// was given), --wait without --submit, and values sbatch would refuse. Errors name the
// flag, the value and what is allowed; all are bad input.
func checkSlurmFlags(o slurmOpts, slurm bool, changed func(string) bool) error {
	if !slurm {
		for _, f := range []string{"submit", "wait", "partition", "time", "cpus-per-task", "mem", "lockstep"} {
			if changed(f) {
				return badInput(fmt.Errorf("--%s applies only with --slurm (lockstep sweep FILE --slurm --%s ...)", f, f))
			}
		}
		return nil
	}
	if o.wait && !o.submit {
		return badInput(fmt.Errorf("--wait waits for the job --submit submits: give --submit too"))
	}
	if changed("partition") {
		if err := checkSlurmPartition(o.partition); err != nil {
			return badInput(err)
		}
	}
	if changed("time") {
		if err := checkSlurmTime(o.time); err != nil {
			return badInput(err)
		}
	}
	if changed("cpus-per-task") && o.cpus < 1 {
		return badInput(fmt.Errorf("--cpus-per-task: %d is not allowed; give the CPUs each array task gets (>= 1; one variant runs on one core)", o.cpus))
	}
	if changed("mem") {
		if err := checkSlurmMem(o.mem); err != nil {
			return badInput(err)
		}
	}
	if changed("lockstep") && o.lockstep == "" {
		return badInput(fmt.Errorf("--lockstep: give the path of the lockstep binary the array tasks run (default this one)"))
	}
	return nil
}

// partitionRE is a partition name, or a comma-separated list of them (sbatch(1) --partition).
var partitionRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$`)

// checkSlurmPartition validates --partition: one name or a comma-separated list.
func checkSlurmPartition(p string) error {
	if !partitionRE.MatchString(p) {
		return fmt.Errorf("--partition: %q is not a partition name; give a name of letters, digits, '_', '.' and '-' (or a comma-separated list of them; sinfo lists them)", p)
	}
	return nil
}

// checkSlurmTime validates --time in one of sbatch's forms (sbatch(1) --time): "minutes",
// "minutes:seconds", "hours:minutes:seconds", "days-hours", "days-hours:minutes",
// "days-hours:minutes:seconds", or UNLIMITED / INFINITE. Seconds and minutes after a colon
// are 0..59, hours after "days-" 0..23; 0 asks for no limit, as sbatch reads it.
func checkSlurmTime(s string) error {
	bad := func(why string) error {
		return fmt.Errorf("--time: %q is not a Slurm time limit (%s); give minutes (90), HH:MM:SS (01:30:00), D-HH:MM:SS (1-12:00:00), MM:SS, D-HH or D-HH:MM", s, why)
	}
	if u := strings.ToUpper(s); u == "UNLIMITED" || u == "INFINITE" {
		return nil
	}
	num := func(f string, what string, max int) error {
		if f == "" || len(f) > 7 || strings.Trim(f, "0123456789") != "" {
			return bad(what + " " + strconv.Quote(f) + " is not a whole number of at most 7 digits")
		}
		if max > 0 && len(f) > 2 {
			return bad(what + " " + strconv.Quote(f) + " has more than two digits")
		}
		if n, _ := strconv.Atoi(f); max > 0 && n > max {
			return bad(fmt.Sprintf("%s %d is over %d", what, n, max))
		}
		return nil
	}
	if d, r, ok := strings.Cut(s, "-"); ok {
		if err := num(d, "days", 0); err != nil {
			return err
		}
		parts := strings.Split(r, ":")
		if len(parts) > 3 {
			return bad("too many fields after the days")
		}
		for i, f := range parts {
			what, max := []string{"hours", "minutes", "seconds"}[i], []int{23, 59, 59}[i]
			if err := num(f, what, max); err != nil {
				return err
			}
		}
		return nil
	}
	parts := strings.Split(s, ":")
	names := map[int][]string{1: {"minutes"}, 2: {"minutes", "seconds"}, 3: {"hours", "minutes", "seconds"}}[len(parts)]
	if names == nil {
		return bad("too many ':' fields")
	}
	for i, f := range parts {
		max := 59
		if i == 0 {
			max = 0 // the leading field may be any size (90 minutes, 48 hours)
		}
		if err := num(f, names[i], max); err != nil {
			return err
		}
	}
	return nil
}

// memRE is sbatch's --mem: a whole number with an optional unit K, M, G or T (default M).
var memRE = regexp.MustCompile(`^[0-9]{1,12}[KMGTkmgt]?$`)

// checkSlurmMem validates --mem (sbatch(1) --mem: 0 grants all of a node's memory).
func checkSlurmMem(m string) error {
	if !memRE.MatchString(m) {
		return fmt.Errorf("--mem: %q is not a Slurm memory size; give a whole number with a unit K, M, G or T (4G, 500M; no unit: megabytes), the memory of one array task", m)
	}
	return nil
}

// slurmScript is what the sbatch script is made of.
type slurmScript struct {
	file     string             // the scenario file, absolute
	out      string             // the sweep's results folder, absolute
	dir      string             // the folder the tasks start in (--chdir), absolute
	lockstep string             // the lockstep binary, absolute
	vs       []scenario.Variant // the variants, in index order
	opts     slurmOpts
	extra    []string // flags every task and --collect pass on (--seed N, --trace, --max N, --force)
}

// shellQuote quotes s for a POSIX shell: inside single quotes, a single quote in s closes
// them, is escaped with a backslash and reopens them.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-=+,:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sbatchPathOK reports why a path cannot go on an #SBATCH line as it is ("" when it can):
// sbatch reads those lines itself, not through a shell, and expands % in --output.
func sbatchPathOK(p string) string {
	if why := commandPathOK(p); why != "" {
		return why
	}
	if i := strings.IndexAny(p, " \t\n\"'%\\"); i >= 0 {
		return fmt.Sprintf("it holds %q, which an #SBATCH line cannot carry", p[i:i+1])
	}
	return ""
}

// commentSafe is s as it may stand in the script's comment lines: every control character
// (a newline above all, which would start a line of its own, maybe an #SBATCH line sbatch
// obeys) written as Go escapes it (a newline as a backslash and n), so a value from the
// scenario file or the command line stays on its "# " line.
func commentSafe(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// commandPathOK reports why a path cannot go into the script's command ("" when it can):
// a control character (a newline) would be carried by the quoting, but is no file name a
// user means, and would break every line that shows the path.
func commandPathOK(p string) string {
	if i := strings.IndexFunc(p, unicode.IsControl); i >= 0 {
		return fmt.Sprintf("it holds the control character %s", strconv.QuoteRune([]rune(p[i:])[0]))
	}
	return ""
}

// jobNameRE matches what is not kept of a scenario name in the job name.
var jobNameRE = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// collectLine is the lockstep command that gathers the sweep once its tasks are done.
func (s *slurmScript) collectLine() string {
	parts := []string{shellQuote(s.lockstep), "sweep", shellQuote(s.file), "--out", shellQuote(s.out), "--collect"}
	for _, e := range s.extra {
		if e != "--force" { // the tasks' business: --collect runs nothing
			parts = append(parts, shellQuote(e))
		}
	}
	return strings.Join(parts, " ")
}

// text is the script: a comment saying what it is and how to use it, the #SBATCH options
// (only those given, besides the array, the job name, the log files and the folder), and
// the one command each task runs.
func (s *slurmScript) text() string {
	var b strings.Builder
	n := len(s.vs)
	base := s.vs[0].Base
	// Every comment line goes through comment: "# " and then text whose user data (paths,
	// variant names and values) cannot end the line, so no #SBATCH line comes from them.
	comment := func(format string, args ...any) {
		b.WriteString("# " + commentSafe(fmt.Sprintf(format, args...)) + "\n")
	}
	fmt.Fprintf(&b, "#!/bin/bash\n")
	comment("Slurm job array for the lockstep sweep %s: %d variants, one array task each.", s.file, n)
	comment("Written by 'lockstep sweep --slurm'; plain sbatch, edit it freely. Submit it with")
	comment("  sbatch %s", shellQuote(filepath.Join(s.out, slurmScriptName)))
	comment("Task i runs variant i (lockstep sweep FILE --list shows them) into %s/<variant name>,", s.out)
	comment("the folder a local sweep gives it; a variant whose folder already holds a complete run of")
	comment("the same scenario is not run again. Each task's output: slurm-<job>_<task>.out and .err")
	comment("there. When every task is done, gather sweep.csv, sweep.html and the table with")
	comment("  %s", s.collectLine())
	b.WriteString("#\n")
	comment("task  variant")
	for i, v := range s.vs {
		if i == maxListedVariants {
			comment("...   (%d more: lockstep sweep FILE --list)", n-i)
			break
		}
		comment("%-5d %s (%s)", i, v.Scenario.Name, v.Label)
	}
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", "lockstep-"+jobNameRE.ReplaceAllString(base, "_"))
	fmt.Fprintf(&b, "#SBATCH --array=0-%d\n", n-1)
	fmt.Fprintf(&b, "#SBATCH --output=%s\n", filepath.Join(s.out, "slurm-%A_%a.out"))
	fmt.Fprintf(&b, "#SBATCH --error=%s\n", filepath.Join(s.out, "slurm-%A_%a.err"))
	fmt.Fprintf(&b, "#SBATCH --chdir=%s\n", s.dir)
	if s.opts.partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", s.opts.partition)
	}
	if s.opts.time != "" {
		fmt.Fprintf(&b, "#SBATCH --time=%s\n", s.opts.time)
	}
	if s.opts.cpus > 0 {
		fmt.Fprintf(&b, "#SBATCH --cpus-per-task=%d\n", s.opts.cpus)
	}
	if s.opts.mem != "" {
		fmt.Fprintf(&b, "#SBATCH --mem=%s\n", s.opts.mem)
	}
	b.WriteString("\nset -eu\n")
	parts := []string{"exec", shellQuote(s.lockstep), "sweep", shellQuote(s.file), "--out", shellQuote(s.out), "--variant", `"$SLURM_ARRAY_TASK_ID"`, "--quiet"}
	for _, e := range s.extra {
		parts = append(parts, shellQuote(e))
	}
	b.WriteString(strings.Join(parts, " ") + "\n")
	return b.String()
}

// lockstepBinary is the binary the tasks run: --lockstep made absolute, else this one. A
// binary `go run` built in a temporary folder is gone when it exits: a warning says so.
func lockstepBinary(flag string, stderr io.Writer) (string, error) {
	if flag != "" {
		abs, err := filepath.Abs(flag)
		if err != nil {
			return "", badInput(fmt.Errorf("--lockstep: %q: %w", flag, err))
		}
		if fi, err := os.Stat(abs); err != nil || fi.IsDir() {
			fmt.Fprintf(stderr, "warning: --lockstep: %s is not a file here; the script runs it as given, so it must exist on the compute nodes\n", abs)
		}
		return abs, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", badInput(fmt.Errorf("cannot tell where this lockstep binary is (%w); give --lockstep PATH", err))
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		fmt.Fprintf(stderr, "warning: this lockstep (%s) is a temporary 'go run' build, gone when it exits: build one (go build -o lockstep ./cmd/lockstep) and give --lockstep PATH\n", exe)
	}
	return exe, nil
}

// sweepSlurm is sweep --slurm: it writes the sbatch script into out (default
// results/<base>), then, with --submit, submits it and prints the job id, and with --wait
// waits for the array and names the variants whose tasks did not complete.
func sweepSlurm(w io.Writer, file string, vs []scenario.Variant, out string, o slurmOpts, extra []string, ro runOpts) error {
	if out == "" {
		out = filepath.Join("results", vs[0].Base)
	}
	var s slurmScript
	var err error
	if s.file, err = filepath.Abs(file); err != nil {
		return badInput(fmt.Errorf("%s: %w", file, err))
	}
	if s.out, err = filepath.Abs(out); err != nil {
		return badInput(fmt.Errorf("--out: %q: %w", out, err))
	}
	if s.dir, err = os.Getwd(); err != nil {
		return runFailed(fmt.Errorf("the current folder: %w", err))
	}
	for _, p := range []struct{ what, path string }{{"the results folder (--out)", s.out}, {"the current folder (the tasks' --chdir)", s.dir}} {
		if why := sbatchPathOK(p.path); why != "" {
			return badInput(fmt.Errorf("%s %q cannot be written into the sbatch script: %s; use a folder without spaces, quotes, %%, \\ or control characters", p.what, p.path, why))
		}
	}
	if s.lockstep, err = lockstepBinary(o.lockstep, ro.stderr); err != nil {
		return err
	}
	for _, p := range []struct{ what, path string }{{"the scenario file", s.file}, {"the lockstep binary (--lockstep)", s.lockstep}} {
		if why := commandPathOK(p.path); why != "" {
			return badInput(fmt.Errorf("%s %q cannot be written into the sbatch script's command: %s; rename it (or use a link) without newlines or other control characters", p.what, p.path, why))
		}
	}
	s.vs, s.opts, s.extra = vs, o, extra
	if err := os.MkdirAll(s.out, 0o755); err != nil {
		return badInput(fmt.Errorf("--out: %q cannot be the results folder: %w", s.out, err))
	}
	path := filepath.Join(s.out, slurmScriptName)
	if err := os.WriteFile(path, []byte(s.text()), 0o755); err != nil {
		return badInput(fmt.Errorf("%s: %w", path, err))
	}
	fmt.Fprintf(w, "wrote %s: a Slurm job array of %d tasks (0-%d), one per variant, into %s\n", path, len(vs), len(vs)-1, s.out)
	if len(vs) > 1001 {
		fmt.Fprintf(ro.stderr, "warning: %d array tasks: Slurm's default MaxArraySize (1001) allows task ids 0..1000 only; ask your admins, or split the variants\n", len(vs))
	}
	if !o.submit {
		fmt.Fprintf(w, "submit it with: sbatch %s\nthen, when every task is done: %s\n", shellQuote(path), s.collectLine())
		return nil
	}
	id, err := sbatchSubmit(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "submitted Slurm job %s (array 0-%d); its tasks write slurm-%s_<task>.out and .err into %s\n", id, len(vs)-1, id, s.out)
	if !o.wait {
		fmt.Fprintf(w, "when every task is done (squeue -j %s shows none): %s\n", id, s.collectLine())
		return nil
	}
	states, err := slurmWait(id, len(vs), ro)
	if err != nil {
		return err
	}
	return reportArray(w, id, &s, states, ro)
}

// sbatchSubmit runs `sbatch --parsable path` and returns the job id it prints ("id" or
// "id;cluster"). Without sbatch on PATH the error says Slurm is not installed.
func sbatchSubmit(path string) (string, error) {
	sbatch, err := exec.LookPath("sbatch")
	if err != nil {
		return "", runFailed(fmt.Errorf("--submit: Slurm is not installed here (no sbatch on PATH; Debian: apt-get install slurm-client): the script was written to %s; submit it with sbatch on a machine of your cluster", path))
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(sbatch, "--parsable", path)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", runFailed(fmt.Errorf("--submit: sbatch %s: %v: %s (the script is written; edit it and submit it with sbatch)", path, err, strings.TrimSpace(stderr.String())))
	}
	id, _, _ := strings.Cut(strings.TrimSpace(stdout.String()), ";")
	if id == "" || strings.Trim(id, "0123456789") != "" {
		return "", runFailed(fmt.Errorf("--submit: sbatch --parsable printed %q, not a job id", stdout.String()))
	}
	return id, nil
}

// slurmFinal are the job states after which a task does nothing more (squeue(1), JOB STATE
// CODES); every other state (PENDING, RUNNING, COMPLETING, REQUEUED, SUSPENDED, ...) waits.
var slurmFinal = map[string]bool{
	"COMPLETED": true, "FAILED": true, "CANCELLED": true, "TIMEOUT": true, "NODE_FAIL": true,
	"OUT_OF_MEMORY": true, "PREEMPTED": true, "BOOT_FAIL": true, "DEADLINE": true, "REVOKED": true,
	"SPECIAL_EXIT": true,
}

// parseSqueue reads `squeue -h -r -t all -o "%K %T"` lines: each array task's index and
// state. Lines of other shapes (a task index outside 0..n-1, "N/A") are ignored.
func parseSqueue(out string, n int) map[int]string {
	states := map[int]string{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		i, err := strconv.Atoi(f[0])
		if err != nil || i < 0 || i >= n {
			continue
		}
		if st := strings.TrimSuffix(f[1], "+"); st != "" { // squeue may mark a truncated state with +
			states[i] = st
		}
	}
	return states
}

// slurmWait polls squeue until every array task of job id (n of them) is in a final
// state, or squeue lists none of them (slurmctld has forgotten the job, MinJobAge: said
// on stderr, and the folders then judge), printing a line to stderr whenever the counts
// change. It returns the last states seen by task index (a task missing from
// them ended before the poll that would have seen it). A signal stops the wait, not the
// job: catchSignals prints stoppedWaiting (signalNotes) instead of its simulation message.
func slurmWait(id string, n int, ro runOpts) (map[int]string, error) {
	squeue, err := exec.LookPath("squeue")
	if err != nil {
		return nil, runFailed(fmt.Errorf("--wait: no squeue on PATH (Slurm's client commands, Debian package slurm-client): job %s was submitted; watch it with your cluster's tools", id))
	}
	if ro.intr != nil {
		signalNotes.Store(ro.intr, stoppedWaiting(id))
		defer signalNotes.Delete(ro.intr)
	}
	states := map[int]string{}
	poll, last, errs, began := slurmPoll, "", 0, time.Now()
	for {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(squeue, "-h", "-r", "-t", "all", "-j", id, "-o", "%K %T")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		switch {
		case err != nil && strings.Contains(stderr.String(), "Invalid job id"):
			// Finished and purged from slurmctld's memory (MinJobAge).
			fmt.Fprintf(ro.stderr, "lockstep: squeue no longer lists job %s; judging by the folders\n", id)
			return states, nil
		case err != nil:
			if errs++; errs >= 5 {
				return states, runFailed(fmt.Errorf("--wait: squeue -j %s: %v: %s (the job may still run: squeue -j %s)", id, err, strings.TrimSpace(stderr.String()), id))
			}
		default:
			errs = 0
			now := parseSqueue(stdout.String(), n)
			for i, st := range now {
				states[i] = st
			}
			done, failed, running := 0, 0, 0
			for _, st := range now {
				switch {
				case slurmFinal[st]:
					done++
					if st != "COMPLETED" {
						failed++
					}
				case st == "RUNNING" || st == "COMPLETING":
					running++
				}
			}
			if len(now) == 0 {
				// Ended and purged, or never listed: squeue cannot say how the tasks ended.
				fmt.Fprintf(ro.stderr, "lockstep: squeue no longer lists job %s; judging by the folders\n", id)
				return states, nil
			}
			line := fmt.Sprintf("slurm job %s: %d of %d tasks done (%d failed), %d running, %d pending", id, done, len(now), failed, running, len(now)-done-running)
			if line != last {
				fmt.Fprintln(ro.stderr, "lockstep:", line)
				last = line
			}
			if done == len(now) {
				return states, nil
			}
		}
		for end := time.Now().Add(poll); ; { // a signal ends the sleep within 50 ms
			if r := ro.intr.Reason(); r != "" {
				return states, &exitError{code: signalExit(r), err: fmt.Errorf("%s: %s", r, stoppedWaiting(id))}
			}
			left := time.Until(end)
			if left <= 0 {
				break
			}
			time.Sleep(min(left, 50*time.Millisecond))
		}
		if time.Since(began) > slurmPollSteady {
			poll = min(poll*3/2, slurmPollMax)
		}
	}
}

// stoppedWaiting is what a signal during --wait does: it stops the waiting, not the array.
func stoppedWaiting(id string) string {
	return fmt.Sprintf("stopped waiting; the array keeps running (job %s); collect later with --collect (scancel %s stops it)", id, id)
}

// signalNotes holds, by the Interrupt of a command that is not running a simulation (sweep
// --wait), what its first signal does instead, for catchSignals to print.
var signalNotes sync.Map // *runner.Interrupt -> string

// reportArray prints, after --wait, each variant whose task did not complete or whose
// folder is not a complete run (collectVariant says why), with its task's log files, and
// the --collect command; any such variant makes it a failed run (exit 1). A task that
// ended in a state other than COMPLETED is named even when its folder is complete. The last
// line says every task completed only when squeue showed each end COMPLETED; otherwise
// that every variant's folder holds a complete run, and how many ends squeue showed.
func reportArray(w io.Writer, id string, s *slurmScript, states map[int]string, ro runOpts) error {
	var bad []string
	for i, v := range s.vs {
		sc := v.Scenario
		applyRunOpts(sc, ro)
		dir := filepath.Join(s.out, sc.Name)
		sum, _, why := collectVariant(dir, sc.Name, scenarioHash(sc))
		if why == "" && sum.Failed {
			why = "its run failed: " + sum.FailureReason
		}
		// A task last seen before its end (slurmctld forgot it since) is judged by its
		// folder alone.
		st := states[i]
		if why == "" && (!slurmFinal[st] || st == "COMPLETED") {
			continue
		}
		what := "task " + strconv.Itoa(i)
		if st != "" {
			what += " ended " + st
		}
		if why == "" {
			why = "its folder holds a complete run all the same"
		}
		log := filepath.Join(s.out, fmt.Sprintf("slurm-%s_%d", id, i))
		fmt.Fprintf(w, "variant %s: %s; %s; its log: %s.out, %s.err\n", sc.Name, what, why, log, log)
		bad = append(bad, sc.Name)
	}
	if len(bad) > 0 {
		return runFailed(fmt.Errorf("slurm job %s: %d of %d variants failed or are not complete: %s", id, len(bad), len(s.vs), strings.Join(bad, ", ")))
	}
	seen := 0
	for i := range s.vs {
		if states[i] == "COMPLETED" {
			seen++
		}
	}
	if seen == len(s.vs) {
		fmt.Fprintf(w, "slurm job %s: all %d tasks completed; gather them with: %s\n", id, len(s.vs), s.collectLine())
		return nil
	}
	fmt.Fprintf(w, "slurm job %s: all %d variants' folders hold complete runs (squeue showed %d of the tasks end COMPLETED); gather them with: %s\n", id, len(s.vs), seen, s.collectLine())
	return nil
}

// collectVariant reads variant name's folder dir for --collect: its summary and
// summary.json's bytes, or why it cannot be collected (missing, unreadable, another
// variant's or another scenario's, interrupted). A failed run is collected (the table
// shows it, as a local sweep's does); the caller names it.
func collectVariant(dir, name, hash string) (*runner.Summary, []byte, string) {
	js, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		if _, err := os.Stat(dir); err != nil {
			return nil, nil, "its folder is missing (the variant has not run into it)"
		}
		return nil, nil, "its folder has no summary.json (its task has not finished, or stopped before writing)"
	case err != nil:
		return nil, nil, fmt.Sprintf("its summary.json cannot be read: %v", err)
	}
	var s runner.Summary
	switch err := json.Unmarshal(js, &s); {
	case err != nil:
		return nil, nil, fmt.Sprintf("its summary.json does not parse: %v", err)
	case s.Variant == nil || s.Variant.Name != name:
		return nil, nil, "its summary.json is not this variant's"
	case hash == "" || s.Variant.ScenarioSHA256 != hash:
		return nil, nil, "it holds a run of another scenario (the file changed, or the run had another --seed or --trace than this one)"
	case !s.Complete:
		return nil, nil, fmt.Sprintf("it is incomplete: the run was interrupted (%s)", s.Interrupted)
	}
	return &s, js, ""
}

// collectSweep is sweep --collect: it reads every variant's folder out/<name> (out
// defaulting as for the sweep) and writes sweep.csv, sweep_stats.csv, compare.html and
// sweep.html and prints the table as the local sweep that wrote them would have
// (finishSweep). A variant whose folder is missing, incomplete or another scenario's is
// left out, as a variant that failed to run is; each of those and each failed run is
// named on stderr, and the exit code is then 1. It refuses (creating nothing) when no
// variant's folder exists, and --force (bad input: nothing runs); it holds out's lock
// (lock.go) while it writes.
func collectSweep(w io.Writer, vs []scenario.Variant, out string, asJSON bool, ro runOpts) error {
	if ro.force {
		return badInput(errors.New("--collect runs no variant, so --force (rerun every variant) does not apply: give one of them (--force belongs to the sweep or its array tasks)"))
	}
	if out == "" {
		out = filepath.Join("results", vs[0].Base)
	}
	ran := false // some variant's folder exists
	for _, v := range vs {
		if fi, err := os.Stat(filepath.Join(out, v.Scenario.Name)); err == nil && fi.IsDir() {
			ran = true
			break
		}
	}
	if !ran {
		return runFailed(fmt.Errorf("nothing to collect in %s: no variant folder holds a summary.json; run the array first (or give the --out it ran into)", out))
	}
	release, err := lockResults("--out", out) // the sweep's folder, while its files are written
	if err != nil {
		return err
	}
	defer release()
	got := newSweepResults(len(vs))
	var bad []string
	for i, v := range vs {
		sc := v.Scenario
		applyRunOpts(sc, ro)
		sc.Run.Out = filepath.Join(out, sc.Name)
		sum, js, why := collectVariant(sc.Run.Out, sc.Name, scenarioHash(sc))
		if why != "" {
			fmt.Fprintf(ro.stderr, "lockstep: --collect: variant %s (%s): %s\n", sc.Name, sc.Run.Out, why)
			bad = append(bad, sc.Name)
			continue
		}
		if !sameBuild(sum.Version, buildVersion()) {
			fmt.Fprintf(ro.stderr, "warning: --collect: variant %s: another lockstep build wrote %s (summary.json's version differs)\n", sc.Name, sc.Run.Out)
		}
		if err := outcomeErr(sum); err != nil {
			fmt.Fprintf(ro.stderr, "lockstep: --collect: variant %s (%s): %v\n", sc.Name, sc.Run.Out, err)
			bad = append(bad, sc.Name)
		}
		got.add(i, sc, sum, js)
		if !asJSON {
			fmt.Fprintf(w, "%s (%s): results in %s\n", sc.Name, v.Label, sc.Run.Out)
		}
	}
	// finishSweep returns only its own writing errors: the failures are named above.
	if err := finishSweep(w, vs, out, got, asJSON, ro.figure, nil); err != nil {
		return err
	}
	if len(bad) > 0 {
		return runFailed(fmt.Errorf("--collect: %d of %d variants in %s are missing, incomplete or failed: %s", len(bad), len(vs), out, strings.Join(bad, ", ")))
	}
	return nil
}
