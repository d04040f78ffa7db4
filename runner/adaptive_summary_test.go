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
	PrintAdaptive(&b, &AdaptiveSummary{LostInFlight: 9, LostQueued: 1, NoRoute: 16})
	if s := b.String(); !strings.Contains(s, "dropped at dead links: 9 in flight, 1 queued, 16 no route") {
		t.Errorf("drops: %q", s)
	}
}
