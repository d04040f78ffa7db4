package uecnic_test

import "testing"

// TestPDCWaitInFCT: a traffic transfer that waits for an ephemeral PDC (max_per_nic 1, two
// transfers from one host) has its FCT counted from its start in every summary figure, as in
// flows.csv and the mean: the max is the second transfer's 2 x (the first waits none), never
// below the mean (the re-check of the new-user review of issue 20 found p50 = p99 = max = the
// first transfer's alone).
func TestPDCWaitInFCT(t *testing.T) {
	s := run(t, `name: pdc-fct
topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}
transport: {kind: uec, uec: {pdc: {max_per_nic: 1}}}
traffic:
  - {pattern: flows, flows: [{src: 0, dst: 5, bytes: 64KiB}, {src: 0, dst: 6, bytes: 64KiB}]}
`).Summary.Transport
	t.Logf("FCT p50 %.3f p99 %.3f max %.3f mean %.3f us", s.FCTP50Us, s.FCTP99Us, s.FCTMaxUs, s.FCTMeanUs)
	if s.FCTMaxUs < s.FCTMeanUs || s.FCTMaxUs < 1.8*s.FCTP50Us {
		t.Errorf("FCT max %.3f us, mean %.3f, p50 %.3f; want the waiting transfer's (about 2 x p50) as the max, at least the mean", s.FCTMaxUs, s.FCTMeanUs, s.FCTP50Us)
	}
}
