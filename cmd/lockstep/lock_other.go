//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package main

import "os"

// flockSupported says results folders are not locked on this system: lock.go's functions
// succeed without a lock file.
const flockSupported = false

// tryFlock is never called where flockSupported is false.
func tryFlock(f *os.File) error { return nil }

// releaseFlock does nothing here.
func releaseFlock(f *os.File) {}
