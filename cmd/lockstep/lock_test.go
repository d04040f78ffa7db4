//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// holdLock locks dir/.lockstep.lock as another lockstep would: through an open file of its
// own (flock locks belong to an open file, so this conflicts with lockDir in this process
// as another process's lock does), with pid 4711 written in it. The returned function
// releases it.
func holdLock(t *testing.T, dir string) func() {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := tryFlock(f); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("pid 4711\nstarted 2026-12-02T14:00:00Z\n"); err != nil {
		t.Fatal(err)
	}
	released := false
	rel := func() {
		if !released {
			released = true
			releaseFlock(f)
			f.Close()
		}
	}
	t.Cleanup(rel)
	return rel
}

// heldMsg is the error for dir held by holdLock.
func heldMsg(dir string) string {
	return "results folder " + dir + " is in use by another lockstep (pid 4711, started 2026-12-02T14:00:00Z); wait for it or choose another --out"
}

// lockDir refuses a folder another open file holds, naming the holder; once it is free the
// lock is taken, shared within this process (a second lockDir of the same folder succeeds),
// and the last release removes the lock file.
func TestLockDir(t *testing.T) {
	dir := t.TempDir()
	free := holdLock(t, dir)
	if _, err := lockDir(dir); err == nil || err.Error() != heldMsg(dir) || exitCode(err) != 1 {
		t.Fatalf("held: error %v (exit %d); want exit 1, %q", err, exitCode(err), heldMsg(dir))
	}
	free()
	rel, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := readFile(t, filepath.Join(dir, lockFileName))
	if !strings.HasPrefix(string(b), "pid "+strconv.Itoa(os.Getpid())+"\nstarted ") {
		t.Errorf("lock file holds %q; want this pid and the start time", b)
	}
	rel2, err := lockDir(dir)
	if err != nil {
		t.Fatalf("this process locking its own folder again: %v", err)
	}
	rel2()
	if _, err := os.Stat(filepath.Join(dir, lockFileName)); err != nil {
		t.Errorf("the lock file went while a holder remains: %v", err)
	}
	rel()
	rel() // twice is harmless
	if _, err := os.Stat(filepath.Join(dir, lockFileName)); !os.IsNotExist(err) {
		t.Errorf("the lock file is left after the release: %v", err)
	}
	// A lock file a killed lockstep left (unlocked) is taken over.
	if err := os.WriteFile(filepath.Join(dir, lockFileName), []byte("pid 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err = lockDir(dir)
	if err != nil {
		t.Fatalf("a stale lock file: %v", err)
	}
	rel()
	// lockResults creates the folder and its release removes it again when empty.
	fresh := filepath.Join(t.TempDir(), "a", "b")
	rel, err = lockResults("--out", fresh)
	if err != nil {
		t.Fatal(err)
	}
	rel()
	if _, err := os.Stat(filepath.Dir(fresh)); !os.IsNotExist(err) {
		t.Errorf("lockResults left the folders it created: %v", err)
	}
}

// exitCode is err's exit code (0 for nil, 1 for an error without one).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exitError); ok {
		return ee.code
	}
	return 1
}

// Every command that writes a results folder refuses one another lockstep holds, exit 1,
// naming it and the holder, and writes nothing into it: run, a whole sweep (its folder), a
// --variant task (its variant's folder; another variant's lock does not stop it), --collect,
// compare --out and nccl --out. The folder is as it was.
func TestLockCommands(t *testing.T) {
	file := sweep4(t)
	perm := filepath.Join(filepath.Dir(file), "..", "permutation-ecmp.yaml")
	root := t.TempDir()
	t.Chdir(root)
	for _, tc := range []struct {
		name   string
		locked string // the folder held, relative to root
		args   []string
	}{
		{"run", "r", []string{"run", perm, "--out", "r", "--quiet"}},
		{"sweep", "s", []string{"sweep", file, "--out", "s", "-j", "1", "--quiet"}},
		{"variant", "v/sw-roce-256KiB", []string{"sweep", file, "--out", "v", "--variant", "2", "--quiet"}},
		{"collect", "c", []string{"sweep", file, "--out", "c", "--collect"}},
		{"compare", "cmp", []string{"compare", perm, perm, "--out", "cmp", "--quiet"}},
		{"nccl", "n", []string{"nccl", "all_reduce", "-g", "2", "--nodes", "2", "--quiet", "--out", "n", "-b", "1K", "-e", "1K"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "collect" {
				if err := os.MkdirAll(filepath.Join("c", "sw-mrc-1MiB"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			free := holdLock(t, tc.locked)
			before := strings.Join(listDir(t, tc.locked), " ")
			code, stdout, stderr := cli(t, tc.args...)
			if code != 1 || !strings.Contains(stderr, heldMsg(tc.locked)) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and %q", code, stdout, stderr, heldMsg(tc.locked))
			}
			if after := strings.Join(listDir(t, tc.locked), " "); after != before {
				t.Errorf("the locked folder held %q and holds %q", before, after)
			}
			free()
		})
	}
	// Array tasks of different variants do not block each other: the lock is the variant's.
	free := holdLock(t, filepath.Join("v2", "sw-mrc-256KiB"))
	if code, _, stderr := cli(t, "sweep", file, "--out", "v2", "--variant", "3", "--quiet"); code != 0 {
		t.Errorf("--variant 3 beside a locked variant 0: exit %d, %s", code, stderr)
	}
	free()
	if got := strings.Join(listDir(t, filepath.Join("v2", "sw-roce-1MiB")), " "); strings.Contains(got, lockFileName) || !strings.Contains(got, "summary.json") {
		t.Errorf("the variant's folder holds %q; want its results without the lock file", got)
	}
}

// A lock file a killed lockstep left is lockstep's own: a sweep's stale variant folder
// holding one is removed without a warning, a complete variant folder holding one is
// reused, and a stale folder another lockstep holds is kept, saying so.
func TestLockFileOwn(t *testing.T) {
	file := sweep4(t)
	dir := t.TempDir()
	t.Chdir(dir)
	mustRun(t, "sweep", file, "--out", "res", "-j", "1", "--quiet")
	for _, d := range []string{"sw-mrc-1MiB", "old-variant"} {
		if d == "old-variant" {
			if err := os.MkdirAll(filepath.Join("res", d), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join("res", d, "summary.json"), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join("res", d, lockFileName), []byte("pid 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, _, stderr := cli(t, "sweep", file, "--out", "res", "-j", "1", "--quiet")
	if code != 0 || strings.Contains(stderr, "warning") || !strings.Contains(stderr, "resuming: 4 of 4 variants are complete") ||
		!strings.Contains(stderr, "removed "+filepath.Join("res", "old-variant")) {
		t.Errorf("exit %d, stderr %q; want every variant reused and old-variant removed without a warning", code, stderr)
	}
	if _, err := os.Stat(filepath.Join("res", "old-variant")); !os.IsNotExist(err) {
		t.Errorf("old-variant is left: %v", err)
	}
	// A stale folder in use by another lockstep is kept.
	if err := os.MkdirAll(filepath.Join("res", "busy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("res", "busy", "summary.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	holdLock(t, filepath.Join("res", "busy"))
	code, _, stderr = cli(t, "sweep", file, "--out", "res", "-j", "1", "--quiet")
	if code != 0 || !strings.Contains(stderr, "warning: "+filepath.Join("res", "busy")+" looks like a previous run's results folder, but another lockstep (pid 4711, started 2026-12-02T14:00:00Z) is writing it: kept") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join("res", "busy", "summary.json")); err != nil {
		t.Errorf("the busy folder was touched: %v", err)
	}
}

// Two lockstep processes sweeping into one --out a moment apart (the review's case: they
// removed each other's temporary files, one exited 0 without report.html): the second is
// refused at once (exit 1, naming the first's pid), and the first finishes a whole sweep
// whose folders match a sweep run alone, without a lock file left.
func TestLockTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildCLI(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "CC2")
	first := exec.Command(bin, "sweep", sweep4(t), "-j", "1", "--out", out, "--quiet")
	var stderr1 bytes.Buffer
	first.Stderr = &stderr1
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the first to hold the lock (not a timed assertion: the deadline only keeps a
	// broken binary from hanging the test).
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(out, lockFileName)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			first.Process.Kill()
			t.Fatalf("no lock file after a minute; stderr %q", stderr1.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	second, err := exec.Command(bin, "sweep", sweep4(t), "-j", "1", "--out", out, "--quiet").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(second), "results folder "+out+" is in use by another lockstep (pid "+strconv.Itoa(first.Process.Pid)+", started ") {
		t.Errorf("the second sweep: %v, output %q; want exit 1 naming the first's pid", err, second)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("the first sweep: %v, stderr %q", err, stderr1.String())
	}
	alone := filepath.Join(dir, "alone")
	mustRun(t, "sweep", sweep4(t), "-j", "1", "--out", alone, "--quiet")
	if a, b := strings.Join(listDir(t, out), " "), strings.Join(listDir(t, alone), " "); a != b {
		t.Errorf("the first sweep's folder holds %q; a sweep alone %q", a, b)
	}
	for _, v := range sweep4Names {
		if a, b := strings.Join(listDir(t, filepath.Join(out, v)), " "), strings.Join(listDir(t, filepath.Join(alone, v)), " "); a != b {
			t.Errorf("%s holds %q; alone %q", v, a, b)
		}
	}
}

// lockHolder reads any lock file's bytes without panicking, and says only what parses: a
// pid of digits, a start time in RFC 3339.
func FuzzLockHolder(f *testing.F) {
	f.Add([]byte("pid 4711\nstarted 2026-12-02T14:00:00Z\n"))
	f.Add([]byte("pid 12\n"))
	f.Add([]byte(""))
	f.Add([]byte("pid x\nstarted yesterday\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), lockFileName)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		got := lockHolder(fh)
		if got == "pid unknown" {
			return
		}
		rest, ok := strings.CutPrefix(got, "pid ")
		pid, started, _ := strings.Cut(rest, ", started ")
		if _, err := strconv.Atoi(pid); !ok || err != nil {
			t.Fatalf("lockHolder(%q) = %q: the pid does not parse", b, got)
		}
		if started != "" {
			if _, err := time.Parse(time.RFC3339, started); err != nil {
				t.Fatalf("lockHolder(%q) = %q: the start time does not parse", b, got)
			}
		}
	})
}
