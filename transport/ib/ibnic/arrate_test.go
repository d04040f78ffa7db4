package ibnic_test

import (
	"fmt"
	"testing"
)

// permRateYAML is permYAML's 2-tier radix-16 permutation at host link rate rate (every link
// at that rate, 1 us hops) with bytes per host, under InfiniBand with adaptive routing on or
// off and extra transport.ib fields (e.g. "credits: {buffer_per_vl: 256KiB}").
func permRateYAML(rate, bytes string, ar bool, ib string) string {
	a := ""
	if ar {
		a = "\n  adaptive_routing: {enabled: true}"
	}
	tr := "kind: ib"
	if ib != "" {
		tr += ", ib: {" + ib + "}"
	}
	return fmt.Sprintf(`name: perm-rate
topology:
  clos: {tiers: 2, planes: 1, radix: 16, host_link: %s, hop_latency: 1us}
fabric:%s
  ecmp_seed: per_switch
transport: {%s}
traffic:
  - {pattern: permutation, bytes: %s}
run: {seed: 1}
`, rate, a, tr, bytes)
}

// TestPermutationAdaptiveRates [issue 19: "on a permutation over a 2-tier fat tree, IB with
// AR reaches >= 0.9 of line rate"] at 100, 200, 400 and 800G host links (the transfer
// scaled with the rate, so each lasts about as long).
func TestPermutationAdaptiveRates(t *testing.T) {
	for _, c := range []struct {
		rate, bytes string
	}{{"100Gbps", "2MB"}, {"200Gbps", "4MB"}, {"400Gbps", "8MB"}, {"800Gbps", "16MB"}} {
		t.Run(c.rate, func(t *testing.T) {
			if testing.Short() && c.rate != "100Gbps" {
				t.Skip("long")
			}
			r := run(t, permRateYAML(c.rate, c.bytes, true, ""))
			tr := r.Summary.Transport
			t.Logf("%s: AR %.3f of ideal (active %.3f of line), drops %d, retx %d, JCT %.1f us; %+v", c.rate, ofIdeal(tr), tr.ActiveThroughputMeanOfLine, r.Summary.DroppedPackets, tr.RetxPackets, tr.JCTUs, r.Net.AdaptiveStats())
			if tr.FlowsCompleted != 128 || r.Summary.DroppedPackets != 0 {
				t.Fatalf("completed %d of 128, drops %d", tr.FlowsCompleted, r.Summary.DroppedPackets)
			}
			if ofIdeal(tr) < 0.9 {
				t.Errorf("%s: %.3f of ideal; want >= 0.9", c.rate, ofIdeal(tr))
			}
		})
	}
}
