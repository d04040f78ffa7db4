package runner

import (
	"strings"
	"testing"
)

// TestPrintAdaptive: no line without the block; the dead-link split only when something was
// dropped there, with each figure in its place.
func TestPrintAdaptive(t *testing.T) {
	var b strings.Builder
	PrintAdaptive(&b, nil)
	if b.Len() != 0 {
		t.Fatalf("nil block printed %q", b.String())
	}
	PrintAdaptive(&b, &AdaptiveSummary{Decisions: 10, AdaptivelyRerouted: 3, FastRecoveryReroutes: 2, QueueRescued: 1, NotificationsSent: 4, NotificationsDelivered: 4})
	if s := b.String(); !strings.HasPrefix(s, "adaptive routing: 10 decisions, 3 moved by load, 2 fast-recovery reroutes, 1 rescued") || strings.Contains(s, "dropped") {
		t.Errorf("no drops: %q", s)
	}
	b.Reset()
	PrintAdaptive(&b, &AdaptiveSummary{LostInFlight: 9, LostInFlightB: 33006, LostQueued: 1, NoRoute: 16, DroppedBySwitches: 17})
	if s := b.String(); !strings.Contains(s, "17 dropped by switches (at dead links: 1 queued, 16 no route); 9 lost on failed wires (33006 B)") || strings.Contains(s, "detoured") {
		t.Errorf("drops: %q", s)
	}
	b.Reset()
	PrintAdaptive(&b, &AdaptiveSummary{LostInFlight: 10, LostInFlightB: 33036, Detours: 25, EscapeVL: 25})
	if s := b.String(); !strings.Contains(s, "; 25 detoured on the escape VL; 0 dropped by switches (at dead links: 0 queued, 0 no route); 10 lost on failed wires (33036 B)") {
		t.Errorf("detours: %q", s)
	}
}

// TestAdaptiveNoteUnderMRC: fabric.adaptive_routing under MRC, whose packets carry source
// routes, makes no adaptive decision, and the summary says so instead of staying silent
// (the new-user review of issue 19).
func TestAdaptiveNoteUnderMRC(t *testing.T) {
	res := mustRun(t, `
name: mrcar
topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}
transport: {kind: mrc}
fabric: {adaptive_routing: {enabled: true}}
traffic: [{pattern: permutation, bytes: 256KiB}]
`)
	a := res.Summary.Adaptive
	if a == nil || a.Decisions != 0 || !strings.Contains(a.Note, "source route") {
		t.Fatalf("mrc with adaptive routing: block %+v; want 0 decisions and a note naming source routes", a)
	}
	res = mustRun(t, `
name: ibar
topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}
transport: {kind: ib}
fabric: {adaptive_routing: {enabled: true}}
traffic: [{pattern: permutation, bytes: 256KiB}]
`)
	if a := res.Summary.Adaptive; a == nil || a.Decisions == 0 || a.Note != "" {
		t.Fatalf("ib with adaptive routing: block %+v; want decisions and no note", a)
	}
}
