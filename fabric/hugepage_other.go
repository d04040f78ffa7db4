//go:build !linux

package fabric

import "unsafe"

// adviseHuge is a no-op where transparent huge pages are not available (see the Linux version).
func adviseHuge(p unsafe.Pointer, size uintptr) {}
