package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstepsim/lockstep/scenario"
)

// sweep4Path is the 4-variant test sweep's absolute path (the tests change folder).
var sweep4Path, _ = filepath.Abs(filepath.Join("testdata", "variants", "sweep4.yaml"))

// sweep4 is sweep4Path.
func sweep4(t *testing.T) string {
	t.Helper()
	if sweep4Path == "" {
		t.Fatal("testdata/variants/sweep4.yaml: no absolute path")
	}
	return sweep4Path
}

// sweep4Names are sweep4.yaml's variants in index order.
var sweep4Names = []string{"sw-mrc-256KiB", "sw-mrc-1MiB", "sw-roce-256KiB", "sw-roce-1MiB"}

// sbatchLines are the script's #SBATCH options by name ("--array" -> "0-3").
func sbatchLines(script string) map[string]string {
	opts := map[string]string{}
	for _, l := range strings.Split(script, "\n") {
		if rest, ok := strings.CutPrefix(l, "#SBATCH "); ok {
			k, v, _ := strings.Cut(rest, "=")
			opts[k] = v
		}
	}
	return opts
}

// The script: a bash script whose #SBATCH options are the array over every variant, the
// job name, the log files in the results folder and the folder the tasks start in, plus
// exactly the options given; its one command runs the task's variant with the flags that
// resolve the same scenarios (--seed, --trace, --max, --force), which the --collect line
// repeats (--force aside); the default binary is this one.
func TestSlurmScript(t *testing.T) {
	file := sweep4(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		flags []string
		want  map[string]string // #SBATCH options besides the five every script has
		exec  string            // in the task command, after --quiet
	}{
		{"bare", nil, map[string]string{}, ""},
		{"partition", []string{"--partition", "gpu,cpu"}, map[string]string{"--partition": "gpu,cpu"}, ""},
		{"all", []string{"--partition", "p1", "--time", "1-02:03:04", "--cpus-per-task", "2", "--mem", "4G"},
			map[string]string{"--partition": "p1", "--time": "1-02:03:04", "--cpus-per-task": "2", "--mem": "4G"}, ""},
		{"time only", []string{"--time", "90"}, map[string]string{"--time": "90"}, ""},
		{"scenario flags", []string{"--seed", "7", "--trace", "--max", "10", "--force"}, map[string]string{}, " --seed 7 --trace --max 10 --force"},
		{"binary", []string{"--lockstep", "/opt/lockstep/bin/lockstep"}, map[string]string{}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			code, stdout, stderr := cli(t, append([]string{"sweep", file, "--slurm", "--out", "res"}, c.flags...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			wd, _ := os.Getwd()
			out := filepath.Join(wd, "res")
			path := filepath.Join(out, slurmScriptName)
			if !strings.Contains(stdout, "wrote "+path) || !strings.Contains(stdout, "sbatch "+path) {
				t.Errorf("stdout %q does not name the script %s and how to submit it", stdout, path)
			}
			script := string(readFile(t, path))
			if !strings.HasPrefix(script, "#!/bin/bash\n") {
				t.Errorf("the script does not start with #!/bin/bash:\n%s", script)
			}
			if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
				t.Errorf("bash -n: %v: %s", err, out)
			}
			opts := sbatchLines(script)
			wantAll := map[string]string{"--job-name": "lockstep-sw", "--array": "0-3", "--output": out + "/slurm-%A_%a.out",
				"--error": out + "/slurm-%A_%a.err", "--chdir": wd}
			for k, v := range c.want {
				wantAll[k] = v
			}
			if len(opts) != len(wantAll) {
				t.Errorf("#SBATCH options %v; want %v", opts, wantAll)
			}
			for k, v := range wantAll {
				if opts[k] != v {
					t.Errorf("#SBATCH %s=%q; want %q", k, opts[k], v)
				}
			}
			bin := self
			if c.name == "binary" {
				bin = "/opt/lockstep/bin/lockstep"
			}
			task := "exec " + bin + " sweep " + file + " --out " + out + ` --variant "$SLURM_ARRAY_TASK_ID" --quiet` + c.exec + "\n"
			if !strings.HasSuffix(script, task) {
				t.Errorf("the script ends\n%s\nwant the task command\n%s", script[strings.LastIndex(script[:len(script)-1], "\n")+1:], task)
			}
			collect := bin + " sweep " + file + " --out " + out + " --collect" + strings.TrimSuffix(c.exec, " --force")
			if !strings.Contains(script, "#   "+collect+"\n") || !strings.Contains(stdout, collect+"\n") {
				t.Errorf("the script and stdout do not give the --collect line %q:\n%s\n%s", collect, script, stdout)
			}
			// The header lists every variant by its task index, before the #SBATCH lines
			// (sbatch reads them only above the first command).
			for i, name := range sweep4Names {
				if !regexp.MustCompile(`(?m)^# ` + strconv.Itoa(i) + ` +` + name + ` \(`).MatchString(script) {
					t.Errorf("the script does not list task %d as %s", i, name)
				}
			}
			if i := strings.Index(script, "\nset -eu"); i < strings.LastIndex(script, "#SBATCH") {
				t.Errorf("a command comes before an #SBATCH line:\n%s", script)
			}
		})
	}
}

// Every value sbatch accepts for --time, --mem, --cpus-per-task and --partition passes,
// and every other is bad input (exit 2) naming the flag and the value; Slurm flags without
// --slurm, --wait without --submit and two modes at once are bad input too.
func TestSlurmFlagErrors(t *testing.T) {
	file := sweep4(t)
	for _, c := range []struct {
		flags []string
		want  string // in the error; "" = accepted
	}{
		{[]string{"--time", "90"}, ""},
		{[]string{"--time", "0"}, ""},
		{[]string{"--time", "30:00"}, ""},
		{[]string{"--time", "01:30:00"}, ""},
		{[]string{"--time", "48:00:00"}, ""},
		{[]string{"--time", "2-12"}, ""},
		{[]string{"--time", "2-12:30"}, ""},
		{[]string{"--time", "2-12:30:59"}, ""},
		{[]string{"--time", "unlimited"}, ""},
		{[]string{"--time", "1:60:00"}, `--time: "1:60:00" is not a Slurm time limit (minutes 60 is over 59)`},
		{[]string{"--time", "10:75"}, `--time: "10:75"`},
		{[]string{"--time", "1-24:00:00"}, `(hours 24 is over 23)`},
		{[]string{"--time", "1-2:3:4:5"}, `--time: "1-2:3:4:5"`},
		{[]string{"--time", "1:2:3:4"}, `too many ':' fields`},
		{[]string{"--time", "1h"}, `--time: "1h" is not a Slurm time limit`},
		{[]string{"--time", ""}, `--time: "" is not`},
		{[]string{"--time", "-5"}, `days "" is not a whole number`},
		{[]string{"--time", "1:030"}, `--time: "1:030"`},
		{[]string{"--mem", "4G"}, ""},
		{[]string{"--mem", "500"}, ""},
		{[]string{"--mem", "16384M"}, ""},
		{[]string{"--mem", "1t"}, ""},
		{[]string{"--mem", "4GB"}, `--mem: "4GB" is not a Slurm memory size`},
		{[]string{"--mem", "-1G"}, `--mem: "-1G"`},
		{[]string{"--mem", "1.5G"}, `--mem: "1.5G"`},
		{[]string{"--cpus-per-task", "4"}, ""},
		{[]string{"--cpus-per-task", "0"}, "--cpus-per-task: 0 is not allowed"},
		{[]string{"--cpus-per-task", "-2"}, "--cpus-per-task: -2 is not allowed"},
		{[]string{"--cpus-per-task", "two"}, `--cpus-per-task: "two" is not a whole number`},
		{[]string{"--partition", "gpu-a100"}, ""},
		{[]string{"--partition", "a b"}, `--partition: "a b" is not a partition name`},
		{[]string{"--partition", "a;rm"}, `--partition: "a;rm"`},
		{[]string{"--partition", ""}, `--partition: "" is not a partition name`},
		{[]string{"--lockstep", ""}, "--lockstep: give the path"},
		{[]string{"--wait"}, "--wait waits for the job --submit submits"},
		{[]string{"--list"}, "--list and --slurm: give one of them"},
		{[]string{"--collect"}, "--slurm and --collect: give one of them"},
		{[]string{"--variant", "1"}, "--variant and --slurm: give one of them"},
	} {
		t.Run(strings.Join(c.flags, "="), func(t *testing.T) {
			t.Chdir(t.TempDir())
			code, _, stderr := cli(t, append([]string{"sweep", file, "--slurm", "--out", "res", "--lockstep", "/bin/true"}, c.flags...)...)
			if c.want == "" {
				if code != 0 {
					t.Errorf("exit %d: %s", code, stderr)
				}
				return
			}
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, c.want)
			}
			if _, err := os.Stat(filepath.Join("res", slurmScriptName)); err == nil {
				t.Errorf("bad input, yet the script was written")
			}
		})
	}
	t.Run("out with a space", func(t *testing.T) {
		t.Chdir(t.TempDir())
		code, _, stderr := cli(t, "sweep", file, "--slurm", "--out", "my results", "--lockstep", "/bin/true")
		if code != 2 || !strings.Contains(stderr, "the results folder (--out) ") || !strings.Contains(stderr, `it holds " ", which an #SBATCH line cannot carry`) {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--submit"}, "--submit applies only with --slurm"},
		{[]string{"--mem", "4G"}, "--mem applies only with --slurm"},
		{[]string{"--partition", "p"}, "--partition applies only with --slurm"},
		{[]string{"--collect", "--variant", "0"}, "--variant and --collect: give one of them"},
	} {
		t.Run("no slurm "+strings.Join(c.flags, "="), func(t *testing.T) {
			code, _, stderr := cli(t, append([]string{"sweep", file}, c.flags...)...)
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr, c.want)
			}
		})
	}
}

// checkSlurmTime agrees with a plain regular expression of sbatch's six forms (§9): one
// field of any size, two or three with the later ones 0..59, or days then hours 0..23
// and optional minutes and seconds.
func FuzzSlurmTime(f *testing.F) {
	ref := regexp.MustCompile(`^(?i:UNLIMITED|INFINITE)$|^\d{1,7}(:[0-5]?\d){0,2}$|^\d{1,7}-([01]?\d|2[0-3])(:[0-5]?\d){0,2}$`)
	for _, s := range []string{"90", "0", "30:00", "01:30:00", "1-12", "1-12:30", "1-12:30:00", "UNLIMITED", "1:60", "1-24", "", "-", "1--2", "1-2:3:4:5", "99999999", "١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := checkSlurmTime(s)
		if (err == nil) != ref.MatchString(s) {
			t.Fatalf("checkSlurmTime(%q) = %v; the reference says valid %v", s, err, ref.MatchString(s))
		}
		if err != nil && !strings.Contains(err.Error(), "--time: "+strconv.Quote(s)) {
			t.Fatalf("error %q does not name --time and the value", err)
		}
	})
}

// squeue's lines give each array task's state; lines of other shapes and indices outside
// the array are dropped.
func TestParseSqueue(t *testing.T) {
	got := parseSqueue("1 COMPLETED\n0 RUNNING\n\n3 FAILED\n7 PENDING\nN/A RUNNING\nx\n2 CANCELLED+\n-1 FAILED\n0 +\n", 4)
	want := map[int]string{0: "RUNNING", 1: "COMPLETED", 2: "CANCELLED", 3: "FAILED"}
	if len(got) != len(want) {
		t.Errorf("parseSqueue = %v; want %v", got, want)
	}
	for i, st := range want {
		if got[i] != st {
			t.Errorf("task %d: %q; want %q", i, got[i], st)
		}
	}
}

// FuzzParseSqueue: no input panics, and every task parsed is in range with a state.
func FuzzParseSqueue(f *testing.F) {
	f.Add("0 PENDING\n1 COMPLETED\n")
	f.Add("3 FAILED+\nN/A RUNNING\n")
	f.Add("0 +")
	f.Fuzz(func(t *testing.T, s string) {
		for i, st := range parseSqueue(s, 4) {
			if i < 0 || i >= 4 || st == "" || strings.ContainsAny(st, " \n") {
				t.Fatalf("parseSqueue(%q) gave task %d state %q", s, i, st)
			}
		}
	})
}

// shellQuote's words come back whole through a real shell, whatever they hold.
func TestShellQuote(t *testing.T) {
	words := []string{"plain", "/a/b.yaml", "with space", "it's", `"dq"`, "$HOME", "`x`", "a\\b", "", "--seed", "tab\there", "*"}
	var line []string
	for _, w := range words {
		line = append(line, shellQuote(w))
	}
	// The shell reads the line as it reads the script's command.
	out, err := exec.Command("sh", "-c", `eval "set -- $1"; for a in "$@"; do printf '%s\0' "$a"; done`, "sh", strings.Join(line, " ")).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(got) != len(words) {
		t.Fatalf("the shell read %q; want %q", got, words)
	}
	for i := range words {
		if got[i] != words[i] {
			t.Errorf("word %d: the shell read %q; want %q", i, got[i], words[i])
		}
	}
}

// localSweep runs sweep4.yaml locally into dir/res from dir and returns its stdout.
func localSweep(t *testing.T, dir string) string {
	t.Helper()
	t.Chdir(dir)
	return mustRun(t, "sweep", sweep4(t), "--out", "res", "-j", "1", "--quiet", "--force")
}

// --collect on the folders of a local sweep writes the same sweep.csv, sweep_stats.csv,
// compare.html and sweep.html and prints the same table as the sweep did.
func TestCollectMatchesLocalSweep(t *testing.T) {
	dir := t.TempDir()
	local := localSweep(t, dir)
	files := []string{"sweep.csv", "sweep_stats.csv", "compare.html", "sweep.html"}
	before := map[string][]byte{}
	for _, f := range files {
		if b, err := os.ReadFile(filepath.Join("res", f)); err == nil {
			before[f] = b
			os.Remove(filepath.Join("res", f))
		}
	}
	if len(before) < 3 {
		t.Fatalf("the local sweep wrote %d of %v", len(before), files)
	}
	got := mustRun(t, "sweep", sweep4(t), "--out", "res", "--collect")
	if got != local {
		t.Errorf("--collect printed\n%s\nthe sweep printed\n%s", got, local)
	}
	for f, b := range before {
		if !bytes.Equal(readFile(t, filepath.Join("res", f)), b) {
			t.Errorf("--collect's %s differs from the sweep's", f)
		}
	}
	// --json: the summaries by name, as the sweep's --json.
	js := mustRun(t, "sweep", sweep4(t), "--out", "res", "--collect", "--json")
	for _, n := range sweep4Names {
		if !strings.Contains(js, `"`+n+`": {`) {
			t.Errorf("--collect --json lacks %s", n)
		}
	}
}

// --collect names each variant it cannot collect, and why: a deleted folder, an
// interrupted run, a failed run, a run of another scenario (another --seed); it exits 1
// and still writes sweep.csv, the missing variants' rows marked failed with empty figures.
func TestCollectNamesMissing(t *testing.T) {
	dir := t.TempDir()
	localSweep(t, dir)
	edit := func(name, from, to string) {
		p := filepath.Join("res", name, "summary.json")
		b := readFile(t, p)
		if !bytes.Contains(b, []byte(from)) {
			t.Fatalf("%s lacks %q", p, from)
		}
		if err := os.WriteFile(p, bytes.Replace(b, []byte(from), []byte(to), 1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join("res", "sw-mrc-1MiB")); err != nil {
		t.Fatal(err)
	}
	edit("sw-roce-256KiB", `"complete": true`, `"complete": false, "interrupted": "SIGTERM"`)
	edit("sw-roce-1MiB", `"complete": true`, `"complete": true, "failed": true, "failure_reason": "a test said so"`)
	code, stdout, stderr := cli(t, "sweep", sweep4(t), "--out", "res", "--collect")
	if code != 1 {
		t.Errorf("exit %d; want 1", code)
	}
	for _, want := range []string{
		"variant sw-mrc-1MiB (res/sw-mrc-1MiB): its folder is missing",
		"variant sw-roce-256KiB (res/sw-roce-256KiB): it is incomplete: the run was interrupted (SIGTERM)",
		"variant sw-roce-1MiB (res/sw-roce-1MiB): run sw-roce-1MiB failed: a test said so",
		"--collect: 3 of 4 variants in res are missing, incomplete or failed: sw-mrc-1MiB, sw-roce-256KiB, sw-roce-1MiB",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr\n%s\nlacks %q", stderr, want)
		}
	}
	if strings.Contains(stderr, "sw-mrc-256KiB") {
		t.Errorf("stderr names the complete variant sw-mrc-256KiB:\n%s", stderr)
	}
	// The failed run is in the table, as a local sweep shows it; the missing ones are not.
	if !strings.Contains(stdout, "sw-roce-1MiB (") || strings.Contains(stdout, "sw-mrc-1MiB (") {
		t.Errorf("stdout:\n%s", stdout)
	}
	rows := strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join("res", "sweep.csv")))), "\n")
	if len(rows) != 5 {
		t.Fatalf("sweep.csv has %d lines; want 5", len(rows))
	}
	if rows[2] != "1,sw-mrc-1MiB,mrc,1MiB,1,,,,,,,,,true,,," {
		t.Errorf("the missing variant's row is %q; want it failed with empty figures", rows[2])
	}

	// Another --seed is another scenario: nothing matches.
	code, _, stderr = cli(t, "sweep", sweep4(t), "--out", "res", "--collect", "--seed", "9")
	if code != 1 || !strings.Contains(stderr, "variant sw-mrc-256KiB (res/sw-mrc-256KiB): it holds a run of another scenario") {
		t.Errorf("--seed 9: exit %d, stderr %s", code, stderr)
	}
}

// The script's task command, run by bash as Slurm would (SLURM_ARRAY_TASK_ID set) with a
// stand-in binary that records its arguments, gives arguments that, run as the CLI, fill
// the folders a local sweep does (a task run twice runs nothing the second time): --collect
// on them then writes the same sweep.csv. The scenario file's path has a space and a
// quote, which the command must carry whole.
func TestSlurmTaskCommand(t *testing.T) {
	dir := t.TempDir()
	odd := filepath.Join(dir, "my sweeps", "it's")
	if err := os.MkdirAll(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(odd, "sweep4.yaml")
	if err := os.WriteFile(file, readFile(t, sweep4(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "fake-lockstep")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$ARGS_DIR/task$SLURM_ARRAY_TASK_ID\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	mustRun(t, "sweep", file, "--slurm", "--out", "slurm", "--lockstep", fake)
	script := filepath.Join(dir, "slurm", slurmScriptName)
	for i := range 4 {
		cmd := exec.Command("bash", script)
		cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID="+strconv.Itoa(i), "ARGS_DIR="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("task %d: %v: %s", i, err, out)
		}
		args := strings.Split(strings.TrimSuffix(string(readFile(t, filepath.Join(dir, "task"+strconv.Itoa(i)))), "\x00"), "\x00")
		if len(args) < 2 || args[1] != file {
			t.Fatalf("task %d ran %q; want the file %q", i, args, file)
		}
		if _, stderr := mustRunErr(t, args...); stderr != "" {
			t.Fatalf("task %d: lockstep %q: %s", i, args, stderr)
		}
		// The task run again (a resubmitted array) finds its variant complete.
		if stdout, _ := mustRunErr(t, args...); !strings.Contains(stdout, sweep4Names[i]+" (") || !strings.Contains(stdout, "complete from an earlier run") {
			t.Errorf("task %d run again printed %q; want its variant complete from an earlier run", i, stdout)
		}
	}
	mustRun(t, "sweep", file, "--out", "slurm", "--collect")
	mustRun(t, "sweep", file, "--out", "local", "-j", "1", "--quiet")
	got, want := readFile(t, filepath.Join("slurm", "sweep.csv")), readFile(t, filepath.Join("local", "sweep.csv"))
	if !bytes.Equal(got, want) {
		t.Errorf("sweep.csv from the tasks:\n%s\nfrom the local sweep:\n%s", got, want)
	}
}

// mustRunErr runs the CLI, fails the test unless it exits 0, and returns stdout and stderr.
func mustRunErr(t *testing.T, args ...string) (string, string) {
	t.Helper()
	code, stdout, stderr := cli(t, args...)
	if code != 0 {
		t.Fatalf("lockstep %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
	}
	return stdout, stderr
}

// fakeSlurm puts stand-ins for sbatch and squeue first on PATH: sbatch records its
// arguments and prints "4242;test" (--parsable's "id;cluster"); squeue prints the
// polls[k] on its k-th call (the last one again after), or fails as slurmctld does for a
// job it has forgotten when a poll is "gone".
func fakeSlurm(t *testing.T, polls []string) (bin string) {
	t.Helper()
	bin = t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("sbatch", `printf '%s\n' "$@" > "`+bin+`/sbatch.args"; echo '4242;test'`+"\n")
	var sq strings.Builder
	sq.WriteString(`printf '%s\n' "$@" > "` + bin + `/squeue.args"` + "\n")
	sq.WriteString(`n=0; [ -f "` + bin + `/n" ] && read n < "` + bin + `/n"; echo $((n+1)) > "` + bin + `/n"` + "\n")
	sq.WriteString(`case $n in` + "\n")
	for k, p := range polls {
		pat := strconv.Itoa(k)
		if k == len(polls)-1 {
			pat = "*"
		}
		if p == "gone" {
			sq.WriteString(pat + ") echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1;;\n")
			continue
		}
		sq.WriteString(pat + ") printf '" + strings.ReplaceAll(p, "\n", `\n`) + "';;\n")
	}
	sq.WriteString("esac\n")
	write("squeue", sq.String())
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	old := slurmPoll
	slurmPoll = time.Millisecond
	t.Cleanup(func() { slurmPoll = old })
	return bin
}

// --submit --wait with stand-ins for sbatch and squeue: the job id is printed, squeue is
// polled for that job until every task is final, and the variant whose task failed is
// named with its state and log files (exit 1); a job slurmctld forgot ends the wait, and
// the folders then decide.
func TestSlurmSubmitWait(t *testing.T) {
	dir := t.TempDir()
	localSweep(t, dir) // every folder complete, as finished tasks leave them
	if err := os.RemoveAll(filepath.Join("res", "sw-roce-256KiB")); err != nil {
		t.Fatal(err)
	}
	bin := fakeSlurm(t, []string{"0 RUNNING\n1 PENDING\n2 PENDING\n3 PENDING\n", "0 COMPLETED\n1 RUNNING\n2 RUNNING\n3 PENDING\n",
		"1 COMPLETED\n0 COMPLETED\n2 FAILED\n3 COMPLETED\n"})
	code, stdout, stderr := cli(t, "sweep", sweep4(t), "--out", "res", "--slurm", "--submit", "--wait", "--lockstep", "/bin/true")
	if code != 1 {
		t.Errorf("exit %d; want 1", code)
	}
	wd, _ := os.Getwd()
	out := filepath.Join(wd, "res")
	for _, want := range []string{
		"submitted Slurm job 4242 (array 0-3)",
		"variant sw-roce-256KiB: task 2 ended FAILED; its folder is missing (the variant has not run into it); its log: " + out + "/slurm-4242_2.out, " + out + "/slurm-4242_2.err",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout\n%s\nlacks %q", stdout, want)
		}
	}
	for _, want := range []string{
		"slurm job 4242: 0 of 4 tasks done (0 failed), 1 running, 3 pending",
		"slurm job 4242: 1 of 4 tasks done (0 failed), 2 running, 1 pending",
		"slurm job 4242: 4 of 4 tasks done (1 failed), 0 running, 0 pending",
		"slurm job 4242: 1 of 4 variants failed or are not complete: sw-roce-256KiB",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr\n%s\nlacks %q", stderr, want)
		}
	}
	if got := string(readFile(t, filepath.Join(bin, "sbatch.args"))); got != "--parsable\n"+filepath.Join(out, slurmScriptName)+"\n" {
		t.Errorf("sbatch ran with %q", got)
	}
	if got := string(readFile(t, filepath.Join(bin, "squeue.args"))); !strings.Contains(got, "-j\n4242\n") {
		t.Errorf("squeue ran with %q; want -j 4242", got)
	}

	// Every task completed, then slurmctld forgot the job: the folders are all complete.
	localSweep(t, dir)
	fakeSlurm(t, []string{"0 COMPLETED\n1 RUNNING\n2 COMPLETED\n3 COMPLETED\n", "gone"})
	code, stdout, stderr = cli(t, "sweep", sweep4(t), "--out", "res", "--slurm", "--submit", "--wait", "--lockstep", "/bin/true", "--seed", "1")
	if code != 0 {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
	if !strings.Contains(stdout, "slurm job 4242: all 4 variants' folders hold complete runs (squeue showed 3 of the tasks end COMPLETED); gather them with: /bin/true sweep "+sweep4(t)+" --out "+out+" --collect --seed 1") {
		t.Errorf("stdout:\n%s", stdout)
	}
	if !strings.Contains(stderr, "lockstep: squeue no longer lists job 4242; judging by the folders") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

// squeue listing no task at all (the job ended and was purged before the first poll) is
// said, not counted as "0 of 0 tasks done", and the folders judge: one missing fails it.
func TestSlurmWaitNoRows(t *testing.T) {
	dir := t.TempDir()
	localSweep(t, dir)
	fakeSlurm(t, []string{""})
	code, stdout, stderr := cli(t, "sweep", sweep4(t), "--out", "res", "--slurm", "--submit", "--wait", "--lockstep", "/bin/true", "--force")
	if code != 0 || strings.Contains(stderr, "0 of 0") || !strings.Contains(stderr, "lockstep: squeue no longer lists job 4242; judging by the folders\n") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if strings.Contains(stdout, "all 4 tasks completed") || !strings.Contains(stdout, "all 4 variants' folders hold complete runs (squeue showed 0 of the tasks end COMPLETED)") {
		t.Errorf("stdout:\n%s", stdout)
	}
	if err := os.RemoveAll(filepath.Join("res", "sw-mrc-1MiB")); err != nil {
		t.Fatal(err)
	}
	fakeSlurm(t, []string{""})
	code, stdout, _ = cli(t, "sweep", sweep4(t), "--out", "res", "--slurm", "--submit", "--wait", "--lockstep", "/bin/true", "--force")
	if code != 1 || !strings.Contains(stdout, "variant sw-mrc-1MiB: task 1; its folder is missing") {
		t.Errorf("a folder missing: exit %d, stdout:\n%s", code, stdout)
	}
}

// A SIGTERM while --wait polls stops the waiting, says the array keeps running and how to
// collect it, and exits 143; it does not speak of stopping a simulation.
func TestSlurmWaitSignal(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	bin := fakeSlurm(t, []string{"0 RUNNING\n1 PENDING\n2 PENDING\n3 PENDING\n"})
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := cli(t, "sweep", sweep4(t), "--out", "res", "--slurm", "--submit", "--wait", "--lockstep", "/bin/true")
		done <- result{code, stdout, stderr}
	}()
	// squeue's first call comes after the signal handler is in place (catchSignals runs first).
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(bin, "n")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("squeue was not called within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		t.Fatal("--wait still waiting a minute after SIGTERM")
	}
	want := "stopped waiting; the array keeps running (job 4242); collect later with --collect"
	if r.code != 143 || !strings.Contains(r.stderr, "lockstep: SIGTERM: "+want) || strings.Contains(r.stderr, "simulation") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

// Without sbatch on PATH, --submit says Slurm is not installed and where the script was
// written (it was).
func TestSlurmNotInstalled(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("PATH", t.TempDir())
	code, _, stderr := cli(t, "sweep", sweep4(t), "--out", "res", "--slurm", "--submit", "--lockstep", "/bin/true")
	wd, _ := os.Getwd()
	path := filepath.Join(wd, "res", slurmScriptName)
	if code != 1 || !strings.Contains(stderr, "Slurm is not installed here (no sbatch on PATH") || !strings.Contains(stderr, "the script was written to "+path) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the script is not there: %v", err)
	}
}

// User data in the script's comment lines (the scenario path, variant names and values)
// cannot start a line of its own: a newline in a variant's value ("a\n#SBATCH
// --qos=evil2", as run.out: [...] gives) or in the file's path stays escaped on its "# "
// line, so the only #SBATCH lines are the script's own; control characters are escaped.
func TestSlurmScriptCommentsSanitised(t *testing.T) {
	evil := "a\n#SBATCH --qos=evil2"
	vs := []scenario.Variant{{
		Label: "run.out=" + evil, Base: "sw",
		Values:   []scenario.Param{{Key: "run.out", Value: evil}},
		Scenario: &scenario.Scenario{Name: "sw-" + evil + "\r#SBATCH --qos=evil3\x1b"},
	}}
	s := slurmScript{file: "/home/me/x\n#SBATCH --qos=evil1/s.yaml", out: "/home/me/res", dir: "/home/me", lockstep: "/bin/lockstep", vs: vs}
	// (sweepSlurm refuses such a file before text: its command would carry the newline in
	// quotes, below the header, where sbatch reads no option.)
	text := s.text()
	header, _, _ := strings.Cut(text, "\n\nset -eu\n")
	opts := sbatchLines(header)
	if _, ok := opts["--qos"]; ok || len(opts) != 5 {
		t.Errorf("the script has #SBATCH options %v; want only its five:\n%s", opts, text)
	}
	for i, l := range strings.Split(header, "\n")[1:] {
		if !strings.HasPrefix(l, "# ") && l != "#" && !strings.HasPrefix(l, "#SBATCH --") {
			t.Errorf("header line %d %q is neither a comment nor an option", i+2, l)
		}
		if strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Errorf("header line %d %q holds a control character", i+2, l)
		}
	}
	for _, want := range []string{`# 0     sw-a\n#SBATCH --qos=evil2\r#SBATCH --qos=evil3\x1b (run.out=a\n#SBATCH --qos=evil2)`, `lockstep sweep /home/me/x\n#SBATCH --qos=evil1/s.yaml: 1 variants`} {
		if !strings.Contains(text, want) {
			t.Errorf("the script lacks %q:\n%s", want, text)
		}
	}
	if got := commentSafe("plain ünïcode"); got != "plain ünïcode" {
		t.Errorf("commentSafe changed printable text: %q", got)
	}
}

// A path with a newline (or another control character) is refused before anything is
// written when it would go into the script's command: the scenario file's, --lockstep's,
// and the results folder's (exit 2, naming it).
func TestSlurmPathNewline(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	odd := filepath.Join(dir, "x\n#SBATCH --qos=evil")
	if err := os.MkdirAll(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(odd, "sweep4.yaml")
	if err := os.WriteFile(file, readFile(t, sweep4(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", file, "--slurm", "--out", "res", "--lockstep", "/bin/true"}, `the scenario file "` + strings.ReplaceAll(file, "\n", `\n`) + `" cannot be written into the sbatch script's command: it holds the control character '\n'`},
		{[]string{"sweep", sweep4(t), "--slurm", "--out", "res", "--lockstep", "/bin/l\tx"}, `the lockstep binary (--lockstep) "/bin/l\tx" cannot be written into the sbatch script's command: it holds the control character '\t'`},
		{[]string{"sweep", sweep4(t), "--slurm", "--out", "r\nes", "--lockstep", "/bin/true"}, `cannot be written into the sbatch script: it holds the control character '\n'`},
	} {
		code, _, stderr := cli(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "res", slurmScriptName)); err == nil {
			t.Errorf("%q wrote the script", tc.args)
		}
	}
}

// --collect before any variant ran refuses, creating nothing; --collect --force is refused
// as a combination that does nothing.
func TestCollectNothing(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, _, stderr := cli(t, "sweep", sweep4(t), "--out", "res", "--collect")
	if want := "nothing to collect in res: no variant folder holds a summary.json; run the array first"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
	}
	if _, err := os.Stat("res"); !os.IsNotExist(err) {
		t.Errorf("--collect created res: %v", err)
	}
	code, _, stderr = cli(t, "sweep", sweep4(t), "--out", "res", "--collect", "--force")
	if code != 2 || !strings.Contains(stderr, "--collect runs no variant, so --force (rerun every variant) does not apply") {
		t.Errorf("--collect --force: exit %d, stderr %q", code, stderr)
	}
}
