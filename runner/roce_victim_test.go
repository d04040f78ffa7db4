package runner

import (
	"fmt"
	"strings"
	"testing"
)

// victimRun runs a 7 -> 1 incast into h0 (senders h8-h14 on another T0) plus one victim flow
// h16 -> h1 (an idle host on the receiver's T0, from a third T0) on one plane of 100G, and
// returns the victim's throughput as a fraction of line rate, with the summary. transport
// replaces the scenario's transport line; "" keeps RoCE's defaults (PFC and DCQCN on).
func victimRun(t *testing.T, seed int, transport string, incast bool) (float64, Summary) {
	t.Helper()
	tr := "  - {pattern: flows, flows: [{src: 16, dst: 1, bytes: 8MiB}]}"
	victim := 0
	if incast {
		tr = "  - {pattern: incast, receiver: 0, senders: [8, 9, 10, 11, 12, 13, 14], bytes: 16MiB}\n" + tr
		victim = 7
	}
	y := fmt.Sprintf(roceYAML, 1, 32, 1, tr, "")
	y = strings.Replace(y, "sample_interval: 5us", fmt.Sprintf("sample_interval: 5us, seed: %d", seed), 1)
	if transport != "" {
		y = strings.Replace(y, "transport: {kind: roce, roce: {qps_per_peer: 1}}", transport, 1)
	}
	res := mustRun(t, y)
	done := res.roceRun().FlowDone(victim)
	if done == 0 {
		t.Fatalf("seed %d: the victim flow never finished", seed)
	}
	return float64(8<<20) * 8 / done.Seconds() / 100e9, res.Summary
}

// Incast 7 -> 1 plus a victim flow to an idle host in the receiver's rack [docs/protocols.md,
// "RoCEv2: PFC": victim flows]: with PFC alone the receiver's T0 pauses its uplinks, which also
// carry the victim, so the victim loses most of its throughput though its own path is idle; nothing
// is dropped. DCQCN (the reference RED/ECN profile) slows the incast senders, fewer pauses reach
// the victim's path and it recovers part of its throughput. Averaged over seeds (the ECMP hash
// decides which T1 the victim shares with which incast QPs).
func TestRoCEVictimFlow(t *testing.T) {
	seeds := []int{1, 2, 3}
	var alone, pfcOnly, withDCQCN float64
	var pausesPFC, pausesDCQCN int64
	for _, seed := range seeds {
		a, _ := victimRun(t, seed, "", false)
		p, sp := victimRun(t, seed, "transport: {kind: roce, roce: {dcqcn: {disabled: true}}}", true)
		d, sd := victimRun(t, seed, "", true)
		t.Logf("seed %d: victim alone %.3f, PFC only %.3f (%d pauses, %.0f us paused), PFC + DCQCN %.3f (%d pauses, %.0f us paused, %d CNPs)",
			seed, a, p, sp.PFC.Pauses, sp.PFC.PausedUsTotal, d, sd.PFC.Pauses, sd.PFC.PausedUsTotal, sd.roceT().CNPsSent)
		// Re-pinned with the roce profile's buffer model and production DCQCN: DCQCN acts
		// before PFC, so the DCQCN run may pause nothing at all; both stay lossless.
		for _, s := range []Summary{sp, sd} {
			if s.DroppedPackets != 0 || sp.PFC.Pauses == 0 {
				t.Errorf("seed %d: %d drops, %d pauses with PFC only; want lossless runs, PFC only pausing", seed, s.DroppedPackets, sp.PFC.Pauses)
			}
		}
		alone += a / float64(len(seeds))
		pfcOnly += p / float64(len(seeds))
		withDCQCN += d / float64(len(seeds))
		pausesPFC += sp.PFC.Pauses
		pausesDCQCN += sd.PFC.Pauses
	}
	t.Logf("mean victim throughput: alone %.3f, PFC only %.3f (loses %.0f%%), PFC + DCQCN %.3f (recovers %.0f%% of the loss); pauses %d -> %d",
		alone, pfcOnly, 100*(1-pfcOnly/alone), withDCQCN, 100*(withDCQCN-pfcOnly)/(alone-pfcOnly), pausesPFC, pausesDCQCN)
	if alone < 0.95 {
		t.Errorf("the victim alone ran at %.3f of line; want >= 0.95", alone)
	}
	if pfcOnly > 0.7*alone {
		t.Errorf("PFC only: victim at %.3f of line, %.3f alone; want a loss of at least 30%%", pfcOnly, alone)
	}
	if withDCQCN <= pfcOnly || pausesDCQCN >= pausesPFC {
		t.Errorf("DCQCN: victim %.3f vs %.3f with PFC only, pauses %d vs %d; want more throughput and fewer pauses", withDCQCN, pfcOnly, pausesDCQCN, pausesPFC)
	}
}
