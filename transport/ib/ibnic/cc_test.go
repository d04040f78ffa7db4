package ibnic_test

import (
	"fmt"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/ib"
	"github.com/lockstepsim/lockstep/transport/roce/rocenic"
)

// victimYAML is a 7 -> 1 incast into h0 (senders h8-h14 on T0 1, 4 MiB each) plus a victim
// flow h16 -> h1 (2 MiB, from T0 2 to an idle host on the receiver's T0) on a 2-tier radix-16
// fat tree at 100G, InfiniBand with the ib block ibBlock, static routing.
func victimYAML(ibBlock string, incast bool, seed int) string {
	tr := "  - {pattern: flows, flows: [{src: 15, dst: 16, bytes: 2MiB, start: 500us}]}\n"
	if incast {
		tr = "  - {pattern: incast, receiver: 0, senders: [8, 9, 10, 11, 12, 13, 14], bytes: 4MiB}\n" + tr
	}
	return fmt.Sprintf(`name: ib-victim
topology:
  clos: {tiers: 2, planes: 1, radix: 16, host_link: 100Gbps, hop_latency: 1us}
transport: {kind: ib%s}
traffic:
%srun: {seed: %d}
`, ibBlock, tr, seed)
}

// victimThroughput runs victimYAML and returns the victim's throughput (fraction of line
// rate), the incast's mean, and the run.
func victimThroughput(t *testing.T, ibBlock string, incast bool, seed int) (victim float64, s string) {
	t.Helper()
	res := run(t, victimYAML(ibBlock, incast, seed))
	x := res.Endpoint.Run().(*rocenic.Run)
	v := 0
	if incast {
		v = 7
	}
	done := x.FlowDone(v)
	if done == 0 {
		t.Fatalf("the victim never finished")
	}
	var becns int64
	var peak int
	for i := 0; i < x.QPs(); i++ {
		snd, _, _, _, _ := x.QP(i)
		if q, ok := snd.RateControl().(*ib.CCT); ok {
			becns += q.BECNs
			peak = max(peak, q.Peak)
		}
	}
	return float64(2<<20) * 8 / (done - 500*sim.Microsecond).Seconds() / 100e9, fmt.Sprintf("drops %d, JCT %.0f us, BECNs %d, peak CCTI %d",
		res.Summary.DroppedPackets, res.Summary.Transport.JCTUs, becns, peak)
}

func TestVictimCCExplore(t *testing.T) {
	for seed := 1; seed <= 4; seed++ {
		a, sa := victimThroughput(t, "", false, seed)
		n, sn := victimThroughput(t, "", true, seed)
		c, sc := victimThroughput(t, ", ib: {cc: {enabled: true}}", true, seed)
		t.Logf("seed %d: alone %.3f (%s); no CC %.3f (%s); CC %.3f (%s)", seed, a, sa, n, sn, c, sc)
	}
}
