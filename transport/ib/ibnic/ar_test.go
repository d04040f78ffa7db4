package ibnic_test

import (
	"fmt"
	"testing"
)

// permYAML is a random permutation of 1 MB transfers on a 2-tier radix-16 fat tree (128
// hosts, 8 leaves, 8 spines, 100G, 1 us hops) under transport kind, with or without
// fabric.adaptive_routing.
func permYAML(kind string, ar bool, extra string) string {
	a := ""
	if ar {
		a = "\n  adaptive_routing: {enabled: true}"
	}
	return fmt.Sprintf(`name: perm-%s
topology:
  clos: {tiers: 2, planes: 1, radix: 16, host_link: 100Gbps, hop_latency: 1us}
fabric:%s
  ecmp_seed: per_switch
transport: {kind: %s%s}
traffic:
  - {pattern: permutation, bytes: 1MB}
run: {seed: 3}
`, kind, a, kind, extra)
}

func TestPermutationAdaptivePrint(t *testing.T) {
	for _, c := range []struct {
		kind string
		ar   bool
	}{{"ib", false}, {"ib", true}, {"roce", false}, {"roce", true}} {
		res := run(t, permYAML(c.kind, c.ar, ""))
		tr := res.Summary.Transport
		st := res.Net.AdaptiveStats()
		t.Logf("%s ar=%v: completed %d, jct %.1f us, ideal %.1f, mean of line %.3f, min of line %.3f (ideal/jct %.3f), retx %d, drops %d, ar %+v",
			c.kind, c.ar, tr.FlowsCompleted, tr.JCTUs, tr.IdealFCTUs, 1/tr.FCTOverIdealMean, 1/tr.FCTOverIdealMax, tr.IdealFCTUs/tr.JCTUs, tr.RetxPackets, res.Summary.DroppedPackets, st)
	}
}
