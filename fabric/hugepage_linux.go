package fabric

import (
	"syscall"
	"unsafe"
)

// hugePage is the size of a transparent huge page on the platforms lockstep runs on.
const hugePage = 2 << 20

// adviseHuge asks the kernel to back the whole 2 MiB pages inside the size bytes at p with
// transparent huge pages (madvise MADV_HUGEPAGE), for the large, randomly accessed arrays of a
// big fabric (ports, queue lines, packets): a run of 10k+ ports touches hundreds of MB at
// random, and with 4 KiB pages nearly every cache miss is a TLB miss as well. Call it before
// the memory is first written. It is only advice: when the kernel has huge pages disabled or
// cannot find one, nothing changes, and results never depend on it.
func adviseHuge(p unsafe.Pointer, size uintptr) {
	start := (uintptr(p) + hugePage - 1) &^ (hugePage - 1)
	end := (uintptr(p) + size) &^ (hugePage - 1)
	if end <= start {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(p, start-uintptr(p))), end-start)
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
}
