package ibnic_test

import (
	"fmt"
	"testing"
)

// TestCreditsAfterOutage [ut19 finding 1]: on the 3-tier permutation over InfiniBand, a T2
// switch (every one of its links) or one T1-T2 link fails at 15 us and is repaired 30 us
// later, with 8 KiB and 128 KiB per VL, adaptive and static routing. Every transfer completes
// (before the fix, 8 KiB runs stalled with 32 packets inside: the blocks of the packets lost
// on the dead links stayed charged to their senders), and at the end every port's credits
// are back to its receiver's whole buffer with nothing held (fabric.CreditAudit): link
// re-initialisation resets FCTBS/ABR and re-advertises the free buffer [IBTA vol 1 §7.9.4].
func TestCreditsAfterOutage(t *testing.T) {
	for _, c := range []struct {
		name, fault string
		buf         string
		ar          bool
	}{
		{"switch/8KiB/ar", "switch: p0.t2-1", "8KiB", true},
		{"switch/8KiB/static", "switch: p0.t2-1", "8KiB", false},
		{"switch/128KiB/ar", "switch: p0.t2-1", "128KiB", true},
		{"link/8KiB/ar", "link: p0.t2-1.down2", "8KiB", true},
		{"link/8KiB/static", "link: p0.t2-1.down2", "8KiB", false},
		{"link/128KiB/ar", "link: p0.t2-1.down2", "128KiB", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := fmt.Sprintf(`name: credit-outage
topology: {clos: {tiers: 3, planes: 1, radix: 8, hosts: 128, host_link: 200G}}
transport: {kind: ib, ib: {credits: {buffer_per_vl: %s}}}
fabric: {adaptive_routing: {enabled: %v}}
traffic:
  - {pattern: permutation, bytes: 256KiB}
faults:
  - {at: 15us, %s, action: down, for: 30us}
run: {fault_baseline: none}
`, c.buf, c.ar, c.fault)
			res := run(t, y)
			tr := res.Summary.Transport
			if tr.FlowsCompleted != 128 || tr.QPErrors != 0 {
				t.Fatalf("completed %d of 128 transfers, QP errors %d", tr.FlowsCompleted, tr.QPErrors)
			}
			if res.Net.InFlight() != 0 {
				t.Fatalf("%d packets still inside", res.Net.InFlight())
			}
			if bad := res.Net.CreditAudit(5); bad != nil {
				t.Fatalf("credits not back to full:\n%v", bad)
			}
			if res.Summary.DroppedPackets == 0 {
				t.Fatalf("no packet dropped: the outage did not hit traffic, the test proves nothing")
			}
		})
	}
}
