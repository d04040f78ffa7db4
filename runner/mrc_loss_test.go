package runner

import (
	"fmt"
	"testing"
)

// mrcRingYAML is a 64 MiB ring all-reduce over 16 hosts of an 8-plane 2-tier Clos (100G per
// plane), MRC, then the faults block.
const mrcRingYAML = `
name: mrc-ring-loss
topology:
  clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100G, hop_latency: 500ns}
transport: {kind: mrc}
workload:
  collectives:
    - {name: dp, op: all_reduce, algorithm: ring, bytes: 64MiB}
%s
`

// Random loss is not path failure (issue 15): a large-message ring all-reduce keeps its busbw
// under random loss on every NIC ingress or every link (>= 0.9 of the lossless run at 0.1%, and
// well above the 0.3 at 1%), and no healthy EV is retired for it. Measured (seed 1):
// 1.000 and 0.967 on NIC ingress, 0.976 and 0.901 on every link (out of each named end).
func TestMRCRandomLossCollective(t *testing.T) {
	clean := mustRun(t, fmt.Sprintf(mrcRingYAML, ""))
	base := clean.Summary.Collectives[0].BusBWGBps
	for _, tc := range []struct {
		links, dir string
		loss       float64
		min        float64
	}{
		{"h*", "in", 0.001, 0.9}, {"h*", "in", 0.01, 0.8}, {"*", "out", 0.001, 0.9}, {"*", "out", 0.01, 0.7},
	} {
		t.Run(fmt.Sprintf("%s-%s/%v", tc.links, tc.dir, tc.loss), func(t *testing.T) {
			res := mustRun(t, fmt.Sprintf(mrcRingYAML, fmt.Sprintf("faults:\n  - {at: 0s, link: %q, action: loss, loss: %v, direction: %s}", tc.links, tc.loss, tc.dir)))
			m := res.Summary.mrcT()
			r := res.Summary.Collectives[0].BusBWGBps / base
			t.Logf("loss %v on %s: busbw %.3f of lossless (%.1f GB/s), loss retransmissions %d, EV retirements %d, probes %.3f%% of data",
				tc.loss, tc.links, r, base, m.RetxPacketsByCause["sack_gap"]+m.RetxPacketsByCause["timeout"], m.EVRetirements, m.ProbesPerDataPct)
			if r < tc.min {
				t.Errorf("busbw %.3f of lossless; want >= %v", r, tc.min)
			}
			if m.EVRetirements != 0 {
				t.Errorf("%d EVs retired for random loss; want none", m.EVRetirements)
			}
			if m.ProbesPerDataPct > 1 {
				t.Errorf("probes %.3f%% of data packets; want <= 1%%", m.ProbesPerDataPct)
			}
		})
	}
}

// A run whose every unfinished transfer is on a QP that gave up stops there instead of idling
// to run.duration (the receiver's only NIC link fails under an incast on a 1-plane Clos).
func TestMRCStopsWhenOnlyErroredQPsRemain(t *testing.T) {
	res := mustRun(t, `
name: fail-qp
topology:
  clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}
transport: {kind: mrc, mrc: {fixed_retries: 1, max_retries: 3}}
traffic:
  - {pattern: incast, receiver: 0, bytes: 4MiB, senders: [4, 5, 6, 7]}
  - {pattern: flows, flows: [{src: 8, dst: 9}], bytes: 1MiB}
faults:
  - {at: 20us, link: h0.p0, action: down}
run: {duration: 10ms, fault_baseline: none, allow_qp_errors: true}
`)
	m := res.Summary.mrcT()
	if m.QPErrors != 4 || m.FlowsCompleted != 1 {
		t.Fatalf("QP errors %d, completed %d; want 4 and 1", m.QPErrors, m.FlowsCompleted)
	}
	if end := res.Summary.EndUs; end > 1000 {
		t.Fatalf("run ended at %.1f us; want it stopped when the last QP gave up (about 284 us)", end)
	}
	// The same when a healthy transfer finishes after the last QP gave up.
	res = mustRun(t, `
name: fail-qp-late
topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 64, host_link: 100G, hop_latency: 500ns}}
transport: {kind: mrc, mrc: {max_retries: 3}}
traffic: [{pattern: flows, flows: [{src: 1, dst: 0}, {src: 9, dst: 0}, {src: 20, dst: 21}], bytes: 4MiB}]
faults: [{at: 50us, link: h0.p0, action: down}]
run: {fault_baseline: none, allow_qp_errors: true}
`)
	if m := res.Summary.mrcT(); m.QPErrors != 2 || m.FlowsCompleted != 1 {
		t.Fatalf("QP errors %d, completed %d; want 2 and 1", m.QPErrors, m.FlowsCompleted)
	}
	if end := res.Summary.EndUs; end > 500 {
		t.Fatalf("run ended at %.1f us; want it stopped when the healthy transfer finished (about 349 us)", end)
	}
}
