package main

// The Slurm workflow against a real single-node Slurm: the test starts munged, slurmctld
// and slurmd (Debian packages munge and slurm-wlm, as root) with a generated munge key and
// slurm.conf, all under t.TempDir with free ports, so it touches no system configuration
// and no other cluster. It skips, naming the missing package, where they are not
// installed or the test is not root; .ci/run installs them.

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// slurmBinaries are the programs the test needs, with the Debian package of each.
var slurmBinaries = []struct{ name, pkg string }{
	{"munged", "munge"}, {"slurmctld", "slurm-wlm"}, {"slurmd", "slurm-wlm"},
	{"sbatch", "slurm-wlm (slurm-client)"}, {"squeue", "slurm-wlm (slurm-client)"}, {"sinfo", "slurm-wlm (slurm-client)"},
}

// findDaemon finds a program on PATH or in /usr/sbin (daemons live there; a non-login
// root shell may lack it in PATH).
func findDaemon(name string) (string, bool) {
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	p := filepath.Join("/usr/sbin", name)
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		return p, true
	}
	return "", false
}

// freePort returns a TCP port of 127.0.0.1 nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// miniSlurm is a running single-node Slurm: its folder and configuration.
type miniSlurm struct {
	dir, conf string
}

// startMiniSlurm writes a munge key and a single-node slurm.conf (node localhost with this
// machine's CPUs, no cgroups, no accounting) into a temporary folder, starts munged,
// slurmctld and slurmd in the foreground (killed in t.Cleanup), points SLURM_CONF at the
// configuration and waits until sinfo shows the node idle.
func startMiniSlurm(t *testing.T, bins map[string]string) *miniSlurm {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"spool", "state", "log"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	key := make([]byte, 1024)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "munge.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "munge.sock")
	conf := filepath.Join(dir, "slurm.conf")
	// slurm.conf(5); one node, one partition; root runs everything.
	text := fmt.Sprintf(`ClusterName=lockstep-test
SlurmctldHost=localhost
SlurmctldPort=%d
SlurmdPort=%d
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%s
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%s/state
SlurmdSpoolDir=%s/spool
SlurmctldPidFile=%s/slurmctld.pid
SlurmdPidFile=%s/slurmd.pid
SlurmctldLogFile=%s/log/slurmctld.log
SlurmdLogFile=%s/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
NodeName=localhost NodeAddr=127.0.0.1 CPUs=%d State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
`, freePort(t), freePort(t), sock, dir, dir, dir, dir, dir, dir, runtime.NumCPU())
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLURM_CONF", conf)
	s := &miniSlurm{dir: dir, conf: conf}
	s.start(t, "munged", exec.Command(bins["munged"], "-F", "-f", "--socket="+sock, "--key-file="+filepath.Join(dir, "munge.key"),
		"--log-file="+filepath.Join(dir, "log", "munged.log"), "--pid-file="+filepath.Join(dir, "munged.pid"), "--seed-file="+filepath.Join(dir, "munged.seed")))
	waitFor(t, 5*time.Second, "munged's socket", func() bool { _, err := os.Stat(sock); return err == nil })
	s.start(t, "slurmctld", exec.Command(bins["slurmctld"], "-D", "-c", "-f", conf))
	s.start(t, "slurmd", exec.Command(bins["slurmd"], "-D", "-N", "localhost", "-f", conf))
	// Up to 60 s: slurmd registers in a few seconds alone, but CI runs this test beside the
	// other packages' on 2 cores (20 s was once not enough there).
	waitFor(t, 60*time.Second, "the node idle in sinfo", func() bool {
		out, err := exec.Command(bins["sinfo"], "-h", "-N", "-o", "%T").Output()
		return err == nil && strings.TrimSpace(string(out)) == "idle"
	})
	return s
}

// start runs a daemon in the foreground, its output in log/<name>.out, and kills it in
// t.Cleanup (after the daemons started after it: cleanups run last first).
func (s *miniSlurm) start(t *testing.T, name string, cmd *exec.Cmd) {
	t.Helper()
	f, err := os.Create(filepath.Join(s.dir, "log", name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		f.Close()
		if t.Failed() {
			b, _ := os.ReadFile(f.Name())
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s's output (the end):\n%s", name, b)
		}
	})
}

// waitFor polls ok every 100 ms until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(timeout); !ok(); {
		if time.Now().After(end) {
			t.Fatalf("waited %v for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lockstepCmd runs the lockstep binary with args in dir and returns stdout, stderr and
// the error.
func lockstepCmd(bin, dir string, args ...string) (string, string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// A 4-variant sweep run as a Slurm job array (--slurm --submit --wait) and gathered with
// --collect gives the same sweep.csv as the sweep run locally, byte for byte; submitting
// it again runs no variant (every task finds its folder complete).
func TestSlurmIntegration(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the Slurm integration test starts daemons")
	}
	if os.Geteuid() != 0 {
		t.Skip("not root: the Slurm integration test starts slurmctld and slurmd (packages slurm-wlm and munge) as root")
	}
	bins := map[string]string{}
	for _, b := range slurmBinaries {
		p, ok := findDaemon(b.name)
		if !ok {
			t.Skipf("%s not found: install the Debian package %s (apt-get install slurm-wlm munge) to run the Slurm integration test", b.name, b.pkg)
		}
		bins[b.name] = p
	}
	start := time.Now()
	work := t.TempDir()
	bin := filepath.Join(work, "lockstep")
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go") // go test found it, so it is there
	}
	if out, err := exec.Command(gobin, "build", "-buildvcs=false", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built lockstep in %v", time.Since(start).Round(time.Millisecond))
	startMiniSlurm(t, bins)
	t.Logf("Slurm up after %v", time.Since(start).Round(time.Millisecond))
	file := sweep4(t)

	stdout, stderr, err := lockstepCmd(bin, work, "sweep", file, "--out", "slurm", "--slurm", "--submit", "--wait", "--time", "5", "--cpus-per-task", "1")
	if err != nil {
		t.Fatalf("sweep --slurm --submit --wait: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	for _, want := range []string{"submitted Slurm job ", "all 4 "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("sweep --slurm --submit --wait printed\n%s\nwant %q in it", stdout, want)
		}
	}
	// Every task seen to end COMPLETED, or slurmctld forgot some first: the folders judge.
	if !strings.Contains(stdout, "all 4 tasks completed") && !strings.Contains(stdout, "all 4 variants' folders hold complete runs") {
		t.Errorf("sweep --slurm --submit --wait printed\n%s\nwant every task completed", stdout)
	}
	t.Logf("array done after %v", time.Since(start).Round(time.Millisecond))
	stdout, stderr, err = lockstepCmd(bin, work, "sweep", file, "--out", "slurm", "--collect")
	if err != nil {
		t.Fatalf("sweep --collect: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if _, stderr, err := lockstepCmd(bin, work, "sweep", file, "--out", "local", "-j", "1", "--quiet"); err != nil {
		t.Fatalf("the local sweep: %v\n%s", err, stderr)
	}
	got, err := os.ReadFile(filepath.Join(work, "slurm", "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(work, "local", "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("sweep.csv from Slurm and --collect:\n%s\nfrom the local sweep:\n%s", got, want)
	}
	if n := strings.Count(string(got), "\n"); n != 5 {
		t.Errorf("sweep.csv has %d lines; want a header and 4 variants", n)
	}

	// Again: every task finds its variant complete and runs nothing.
	stdout, stderr, err = lockstepCmd(bin, work, "sweep", file, "--out", "slurm", "--slurm", "--submit", "--wait")
	if err != nil {
		t.Fatalf("the second --submit --wait: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	var id string
	if _, err := fmt.Sscanf(stdout[strings.Index(stdout, "submitted Slurm job "):], "submitted Slurm job %s", &id); err != nil {
		t.Fatalf("no job id in %q", stdout)
	}
	for i := range 4 {
		log, err := os.ReadFile(filepath.Join(work, "slurm", fmt.Sprintf("slurm-%s_%d.out", id, i)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(log), "complete from an earlier run") {
			t.Errorf("task %d of the second job printed %q; want it to find its variant complete", i, log)
		}
	}
	t.Logf("done after %v", time.Since(start).Round(time.Millisecond))
}
