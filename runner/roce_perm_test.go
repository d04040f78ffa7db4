package runner

import (
	"fmt"
	"testing"
)

// permYAML is a 4 MiB permutation on one plane of a non-blocking 2-tier Clos (radix 32: 8
// T0s of 16 hosts, 16 T1s) of 100G links; %s is the transport line, %d the seed.
const permYAML = `
name: perm
topology:
  clos: {tiers: 2, planes: 1, radix: 32, hosts: 128, host_link: 100G, hop_latency: 500ns}
%s
traffic:
  - {pattern: permutation, bytes: 4MiB}
run: {duration: 50ms, sample_interval: 5us, seed: %d}
`

// RoCEv2 permutation throughput while all flows are active [issue 4; docs/protocols.md,
// "RoCEv2: QP scaling and ECMP"]: one QP per pair, ECMP per QP with per-switch seeds, PFC and DCQCN
// on (the defaults). Averaged over 10 seeds the mean per-flow throughput lies in 0.45-0.65 of line
// rate, the flows sitting at about 1, 1/2 and 1/3 of line (hash collisions on T0 uplinks and T1
// downlinks); 8 QPs per pair raise the mean; MRC on the same fabric beats RoCE with 16 QPs per
// pair.
func TestRoCEPermutationSeeds(t *testing.T) {
	run := func(transport string, seed int) Summary {
		return mustRun(t, fmt.Sprintf(permYAML, transport, seed)).Summary
	}
	mean := func(qps, seeds int) (float64, []int) {
		var sum float64
		shares := make([]int, 4)
		for seed := 1; seed <= seeds; seed++ {
			s := run(fmt.Sprintf("transport: {kind: roce, roce: {qps_per_peer: %d}}", qps), seed).roceT()
			if s.FlowsCompleted != 128 || s.QPErrors != 0 || len(s.ActiveShares) != 4 {
				t.Fatalf("qps %d seed %d: %d of 128 done, %d QP errors, shares %v", qps, seed, s.FlowsCompleted, s.QPErrors, s.ActiveShares)
			}
			sum += s.ActiveThroughputMeanOfLine
			for i, n := range s.ActiveShares {
				shares[i] += n
			}
		}
		return sum / float64(seeds), shares
	}
	one, shares := mean(1, 10)
	t.Logf("1 QP per pair, 10 seeds: mean throughput while all active %.3f of line; flows at ~1, ~1/2, ~1/3, less: %v", one, shares)
	if one < 0.45 || one > 0.65 {
		t.Errorf("1 QP per pair: mean %.3f of line; want 0.45-0.65", one)
	}
	if shares[0] == 0 || shares[1] == 0 || shares[2] == 0 {
		t.Errorf("shares %v; want flows at about 1, 1/2 and 1/3 of line", shares)
	}
	eight, _ := mean(8, 3)
	t.Logf("8 QPs per pair, 3 seeds: %.3f", eight)
	if eight <= one+0.05 {
		t.Errorf("8 QPs per pair: %.3f, not above 1 QP's %.3f", eight, one)
	}
	sixteen, _ := mean(16, 1)
	m := run("transport: {kind: mrc}", 1).mrcT()
	t.Logf("16 QPs per pair: %.3f; MRC: %.3f (FCT/ideal mean %.3f)", sixteen, m.ThroughputMeanOfLine, m.FCTOverIdealMean)
	if m.ThroughputMeanOfLine <= sixteen {
		t.Errorf("MRC %.3f of line does not beat RoCE with 16 QPs (%.3f)", m.ThroughputMeanOfLine, sixteen)
	}
}

// Random loss of 1% on every link, go-back-N against MRC's selective repeat on the same
// permutation [issue 4]: RoCE resends everything after each lost packet, so its resent bytes
// are many times the lost bytes and its flows finish far behind MRC's, which resends only what
// the SACKs prove lost. Reported side by side.
func TestRandomLossGoBackNVsMRC(t *testing.T) {
	const y = `
name: loss
topology:
  clos: {tiers: 2, planes: 2, radix: 16, hosts: 32, host_link: 100G, hop_latency: 500ns}
transport: {kind: %s}
traffic:
  - {pattern: permutation, bytes: 4MiB}
faults:
  - {at: 0s, link: "*", action: loss, loss: 0.01}
run: {duration: 200ms, sample_interval: 10us}
`
	rs := mustRun(t, shortRTO(fmt.Sprintf(y, "roce"))).Summary
	ms := mustRun(t, fmt.Sprintf(y, "mrc")).Summary
	r, m := rs.roceT(), ms.mrcT()
	mRetx := m.RetxPackets
	t.Logf("1%% loss, 32-host permutation of 4 MiB: RoCE go-back-N FCT/ideal mean %.2f worst %.2f, resent %d packets (%d NAKs, %d timeouts), dropped %d; MRC FCT/ideal mean %.2f worst %.2f, resent %d packets, dropped %d",
		r.FCTOverIdealMean, r.FCTOverIdealMax, r.RetxPackets, r.NAKs, r.Timeouts, rs.DroppedPackets,
		m.FCTOverIdealMean, m.FCTOverIdealMax, mRetx, ms.DroppedPackets)
	if r.FlowsCompleted != 32 || m.FlowsCompleted != 32 {
		t.Fatalf("completed: RoCE %d, MRC %d of 32", r.FlowsCompleted, m.FlowsCompleted)
	}
	if r.FCTOverIdealMean < 1.5*m.FCTOverIdealMean {
		t.Errorf("go-back-N mean FCT/ideal %.2f is not well behind MRC's %.2f", r.FCTOverIdealMean, m.FCTOverIdealMean)
	}
	if r.RetxPackets < 5*rs.DroppedPackets || mRetx > 2*ms.DroppedPackets {
		t.Errorf("resent per drop: RoCE %d/%d, MRC %d/%d; want go-back-N >= 5x, MRC <= 2x", r.RetxPackets, rs.DroppedPackets, mRetx, ms.DroppedPackets)
	}
}
