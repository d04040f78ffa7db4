package flow

import (
	"testing"
	"unsafe"
)

// The flow table's slots stay two cache lines (flowState's doc): a field added past 128
// bytes makes every flow touch a third line.
func TestFlowStateSize(t *testing.T) {
	if sz := unsafe.Sizeof(flowState{}); sz != 128 {
		t.Fatalf("flowState is %d bytes; keep it at 128 (two cache lines)", sz)
	}
	if off := unsafe.Offsetof(flowState{}.id); off != 64 {
		t.Fatalf("flowState.id at offset %d; the event fields start the second cache line (64)", off)
	}
}

// A link's record stays two cache lines (linkState's doc), the fields every pass over the
// link reads in the first.
func TestLinkStateSize(t *testing.T) {
	if sz := unsafe.Sizeof(linkState{}); sz != 128 {
		t.Fatalf("linkState is %d bytes; keep it at 128 (two cache lines)", sz)
	}
	if off := unsafe.Offsetof(linkState{}.fill); off != 64 {
		t.Fatalf("linkState.fill at offset %d; the first cache line ends at 64", off)
	}
}
