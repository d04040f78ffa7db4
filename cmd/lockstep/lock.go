package main

// Results-folder locks: two lockstep processes writing into one folder remove each other's
// temporary files and leave a folder of neither run, so every command that writes a results
// folder (run, sweep, sweep --variant, sweep --collect, compare --out, nccl --out) holds an
// advisory lock on it while it writes: flock(2) LOCK_EX|LOCK_NB on <folder>/.lockstep.lock,
// which the kernel releases when the process ends however it ends. The lock file holds the
// holder's pid and start time, for the error the next process prints; a clean release
// removes it (after checking, on acquiring, that the file locked is still the one at the
// path, so a file removed under a waiting opener is not trusted). A lock file a killed
// process left is taken over by the next run; clearStale and the results-file lists count it
// as lockstep's own. Where flock is not available (lock_other.go) locking is a no-op.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// lockFileName is the lock file's name in a locked results folder.
const lockFileName = ".lockstep.lock"

// errLockHeld is what tryFlock returns when another open file holds the lock.
var errLockHeld = errors.New("lock held")

// heldLocks are the folders this process holds locked (by absolute path), with how many
// holders share each, so a command that locks a folder and then runs into it (nccl --out
// with one run) does not refuse itself.
var (
	heldMu    sync.Mutex
	heldLocks = map[string]*dirLock{}
)

// dirLock is one held lock: the open lock file and the number of holders in this process.
type dirLock struct {
	f    *os.File // nil where locking is a no-op
	path string
	refs int
}

// lockResults locks results folder dir for this process, creating it (and its parents) when
// missing (field names where dir came from, "--out", for the error when it cannot be made), and returns the function that releases the lock (safe to call more than once);
// the release removes the lock file, then the folders this call created when they are
// empty. When another process holds the lock the error (exit 1: nothing was run) names the
// folder, the holder's pid and start time.
func lockResults(field, dir string) (release func(), err error) {
	undo, err := makeDir(dir)
	if err != nil {
		return nil, badInput(fmt.Errorf("%s: %q cannot be the results folder: %w", field, dir, err))
	}
	rel, err := lockDir(dir)
	if err != nil {
		undo()
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { rel(); undo() }) }, nil
}

// lockDir locks the existing folder dir (lockResults without creating it).
func lockDir(dir string) (release func(), err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, badInput(fmt.Errorf("results folder %q: %w", dir, err))
	}
	heldMu.Lock()
	defer heldMu.Unlock()
	l := heldLocks[abs]
	if l == nil {
		if l, err = acquireLock(dir, filepath.Join(abs, lockFileName)); err != nil {
			return nil, err
		}
		heldLocks[abs] = l
	}
	l.refs++
	var once sync.Once
	return func() {
		once.Do(func() {
			heldMu.Lock()
			defer heldMu.Unlock()
			if l.refs--; l.refs > 0 {
				return
			}
			delete(heldLocks, abs)
			if l.f != nil {
				os.Remove(l.path) // before unlocking: a later opener finds a new file
				releaseFlock(l.f)
				l.f.Close()
			}
		})
	}, nil
}

// acquireLock takes the lock file at path (dir is the folder as the user gave it, for the
// error), retrying when the file it locked was removed or replaced in between.
func acquireLock(dir, path string) (*dirLock, error) {
	if !flockSupported {
		return &dirLock{path: path}, nil
	}
	for range 10 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, runFailed(fmt.Errorf("results folder %s: cannot open its lock file: %w", dir, err))
		}
		if err := tryFlock(f); err != nil {
			holder := lockHolder(f)
			f.Close()
			if errors.Is(err, errLockHeld) {
				return nil, runFailed(&lockHeldError{dir: dir, holder: holder})
			}
			return nil, runFailed(fmt.Errorf("results folder %s: cannot lock %s: %w", dir, lockFileName, err))
		}
		a, errA := f.Stat()
		b, errB := os.Stat(path)
		if errA != nil || errB != nil || !os.SameFile(a, b) {
			releaseFlock(f) // the holder removed it as we opened it: open the new one
			f.Close()
			continue
		}
		info := fmt.Sprintf("pid %d\nstarted %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339))
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt([]byte(info), 0)
		}
		return &dirLock{f: f, path: path}, nil
	}
	return nil, runFailed(fmt.Errorf("results folder %s: its lock file keeps being replaced by another lockstep; wait for it or choose another --out", dir))
}

// lockHeldError is lockDir's error when another process holds the folder's lock.
type lockHeldError struct {
	dir    string // the folder, as given
	holder string // "pid N, started T" (lockHolder)
}

// Error names the folder and its holder and says what to do.
func (e *lockHeldError) Error() string {
	return fmt.Sprintf("results folder %s is in use by another lockstep (%s); wait for it or choose another --out", e.dir, e.holder)
}

// lockHolder reads the pid and start time a lock file holds ("pid N, started T"), or says
// they are unknown (the holder has not written them yet, or another tool locked it).
func lockHolder(f *os.File) string {
	buf := make([]byte, 256)
	n, _ := f.ReadAt(buf, 0)
	var pid, started string
	for _, l := range strings.Split(string(buf[:n]), "\n") {
		if v, ok := strings.CutPrefix(l, "pid "); ok {
			if _, err := strconv.Atoi(v); err == nil {
				pid = v
			}
		}
		if v, ok := strings.CutPrefix(l, "started "); ok {
			if _, err := time.Parse(time.RFC3339, v); err == nil {
				started = v
			}
		}
	}
	if pid == "" {
		return "pid unknown"
	}
	if started == "" {
		return "pid " + pid
	}
	return "pid " + pid + ", started " + started
}
