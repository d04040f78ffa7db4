package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/mrc"
)

// ceSkipYAML is a 16-host 2-tier Clos of 100G links (8 hosts per T0) with MRC: %d planes,
// radix %d, the oversubscription block, the CE skip rule, then the flows.
const ceSkipYAML = `
name: mrc-ce-skip
topology:
  clos: {tiers: 2, planes: %d, radix: %d, hosts: 16, host_link: 100G, hop_latency: 500ns%s}
transport: {kind: mrc, mrc: {ev: {ce_skip: %s}}}
traffic:
  - {pattern: flows, flows: [%s]}
`

// TestMRCCESkipOversubscribed runs a permutation across the two T0s (host i <-> i+8, 4 MiB
// each way) under both CE skip rules. On 2:1 oversubscribed uplinks (4 per T0 and plane) the
// bound is the uplinks' time, 8 x the wire bytes over 4 x 100G per plane: every uplink is
// marked, and [MRC §2.1]'s skip on every mark (CESkipAlways) moves load onto uplinks as loaded
// while the skipped one drains, leaving uplinks idle; CESkipBalance keeps a marked EV when
// every route of its plane that the NIC's QPs answered since the plane's previous lap began
// was marked, and must be faster and within 12% of the bound (always: 889.4 us against 693.0,
// balance 759.4; at 2 planes 453.4 and 377.8 against 346.5). Without oversubscription no path is marked and both rules
// give the same JCT, within 5% of one flow's wire bytes at the NIC rate (361.0 us against
// 346.5), 7% at 2 planes (182.9 against 173.3: the 5.4 us base RTT and start-up weigh twice).
func TestMRCCESkipOversubscribed(t *testing.T) {
	var flows []string
	for i := 0; i < 8; i++ {
		flows = append(flows, fmt.Sprintf("{src: %d, dst: %d, bytes: 4MiB}", i, i+8), fmt.Sprintf("{src: %d, dst: %d, bytes: 4MiB}", i+8, i))
	}
	const size = 4 << 20
	line := 100 * sim.Gbps
	for _, c := range []struct {
		planes, oversub int
		maxOverBound    float64 // balance's JCT over the bound, at most
	}{{1, 1, 1.05}, {2, 1, 1.07}, {1, 2, 1.12}, {2, 2, 1.12}} {
		t.Run(fmt.Sprintf("p%d-o%d", c.planes, c.oversub), func(t *testing.T) {
			radix, ov := 16, ""
			uplinks := 8
			if c.oversub == 2 {
				radix, ov, uplinks = 12, ", oversubscription: [2]", 4
			}
			// Bound: a NIC's plane share carries the flow's wire bytes, a T0's uplinks on a
			// plane carry the 8 flows' plane shares.
			wire := float64(wireBytes(size)) * 8 / float64(c.planes) // bits per plane
			bound := max(wire/float64(line), 8*wire/(float64(uplinks)*float64(line))) * 1e6
			jct := map[string]float64{}
			for _, rule := range []string{mrc.CESkipAlways, mrc.CESkipBalance} {
				res := mustRun(t, fmt.Sprintf(ceSkipYAML, c.planes, radix, ov, rule, strings.Join(flows, ", ")))
				s := res.Summary.Transport
				if res.Summary.Failed || s.FlowsCompleted != 16 {
					t.Fatalf("%s: failed %v (%s), %d of 16 done", rule, res.Summary.Failed, res.Summary.FailureReason, s.FlowsCompleted)
				}
				jct[rule] = s.JCTUs
			}
			a, b := jct[mrc.CESkipAlways], jct[mrc.CESkipBalance]
			t.Logf("bound %.1f us: always %.1f us (%.3f), balance %.1f us (%.3f)", bound, a, a/bound, b, b/bound)
			if b < bound || b > c.maxOverBound*bound {
				t.Errorf("balance: JCT %.1f us; want %.1f to %.1f us (bound x %.2f)", b, bound, c.maxOverBound*bound, c.maxOverBound)
			}
			if c.oversub == 1 && a != b {
				t.Errorf("full bisection: JCT %.1f us with always, %.1f with balance; want the same (no path marked)", a, b)
			}
			if c.oversub == 2 && b >= a {
				t.Errorf("oversubscribed: balance %.1f us not faster than always %.1f", b, a)
			}
		})
	}
}
