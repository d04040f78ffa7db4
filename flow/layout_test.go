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
	// What a pass over a link's flows reads of each flow shares its first line.
	var f flowState
	for _, c := range []struct {
		name string
		off  uintptr
	}{
		{"rate", unsafe.Offsetof(f.rate)}, {"cap", unsafe.Offsetof(f.cap)}, {"bott", unsafe.Offsetof(f.bott)},
		{"inA", unsafe.Offsetof(f.inA)}, {"mark", unsafe.Offsetof(f.mark)}, {"fseen", unsafe.Offsetof(f.fseen)},
		{"soloLink", unsafe.Offsetof(f.soloLink)},
	} {
		if c.off >= 64 {
			t.Errorf("flowState.%s at offset %d; keep it in the first cache line", c.name, c.off)
		}
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
	var l linkState
	for _, c := range []struct {
		name string
		off  uintptr
	}{
		{"list", unsafe.Offsetof(l.list)}, {"wsum", unsafe.Offsetof(l.wsum)}, {"load", unsafe.Offsetof(l.load)},
		{"lupd", unsafe.Offsetof(l.lupd)}, {"chg", unsafe.Offsetof(l.chg)}, {"scan", unsafe.Offsetof(l.scan)},
		{"seen", unsafe.Offsetof(l.seen)}, {"upos", unsafe.Offsetof(l.upos)},
	} {
		if c.off >= 64 {
			t.Errorf("linkState.%s at offset %d; keep it in the first cache line", c.name, c.off)
		}
	}
}
