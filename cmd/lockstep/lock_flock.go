//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"errors"
	"os"
	"syscall"
)

// flockSupported says results folders are really locked here (lock.go).
const flockSupported = true

// tryFlock takes an exclusive flock(2) on f without waiting: errLockHeld when another open
// file holds it.
func tryFlock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errLockHeld
		}
		return err
	}
}

// releaseFlock drops f's flock.
func releaseFlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
