package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
)

const roceYAML = `
name: roce
topology:
  clos: {tiers: 2, planes: %d, radix: 16, hosts: %d, host_link: 100G, hop_latency: 500ns}
transport: {kind: roce, roce: {qps_per_peer: %d}}
traffic:
%s
%s
run: {duration: 50ms, sample_interval: 5us}
`

// shortRTO re-pins a RoCE scenario from before NCCL's timeouts became the default to the local
// ACK timeout it was written for, LocalAckTimeout(8) = 1.048576 ms (perftest-like short): a
// failure study of tail losses, blackholes and headroom drops, whose QPs must time out, go
// back N or error within the run rather than after NCCL's 4.3 s.
func shortRTO(y string) string {
	if strings.Contains(y, "roce: {") {
		return strings.Replace(y, "roce: {", "roce: {rto: 1048576ns, ", 1)
	}
	return strings.Replace(y, "kind: roce}", "kind: roce, roce: {rto: 1048576ns}}", 1)
}

func runRoCEScenario(t *testing.T, planes, hosts, qps int, traffic, extra string) *Result {
	t.Helper()
	return mustRun(t, fmt.Sprintf(roceYAML, planes, hosts, qps, traffic, extra))
}

// One transfer alone on an idle fabric: each plane's QP runs at line rate on its own path, so
// the FCT is within 2% of wire bytes / NIC rate + base RTT, with no retransmission and no CNP.
func TestRoCESingleFlow(t *testing.T) {
	res := runRoCEScenario(t, 8, 16, 1, "  - {pattern: flows, flows: [{src: 0, dst: 9, bytes: 16MiB}]}", "")
	r := res.Summary.roceT()
	t.Logf("single flow: FCT %.1f us vs ideal %.1f us (%.3fx), %d QPs", r.FCTMaxUs, r.IdealFCTUs, r.FCTOverIdealMax, r.QPs)
	if r.FlowsCompleted != 1 || r.QPs != 8 {
		t.Fatalf("completed %d, QPs %d; want 1 and 8 (one per plane)", r.FlowsCompleted, r.QPs)
	}
	// The ideal counts the first hop's serialisation twice (in bytes / rate and in the base
	// RTT), so a perfect run sits a hair below 1.
	if r.FCTOverIdealMax > 1.02 || r.FCTOverIdealMax < 0.99 {
		t.Errorf("FCT/ideal %.3f; want 0.99-1.02", r.FCTOverIdealMax)
	}
	if r.RetxPackets != 0 || r.CNPsSent != 0 {
		t.Errorf("an idle fabric caused %d resends and %d CNPs", r.RetxPackets, r.CNPsSent)
	}
}

// ECMP hash collisions: a permutation on one plane with one QP per peer puts several QPs on
// some uplinks, so flows finish well behind the ideal; 8 QPs per peer spread each transfer
// over 8 hashed paths and the worst flow improves [docs/protocols.md, "RoCEv2: QP scaling and
// ECMP"].
func TestRoCEQPScaling(t *testing.T) {
	fct := map[int]float64{}
	for _, qps := range []int{1, 8} {
		res := runRoCEScenario(t, 1, 64, qps, "  - {pattern: permutation, bytes: 4MiB}", "")
		r := res.Summary.roceT()
		t.Logf("qps_per_peer %d: FCT/ideal mean %.3f worst %.3f, resent %d packets, CNPs %d, drops %v",
			qps, r.FCTOverIdealMean, r.FCTOverIdealMax, r.RetxPackets, r.CNPsSent, res.Summary.Drops)
		if r.FlowsCompleted != 64 || r.QPErrors != 0 {
			t.Fatalf("qps %d: completed %d of 64, QP errors %d", qps, r.FlowsCompleted, r.QPErrors)
		}
		fct[qps] = r.FCTOverIdealMax
	}
	if fct[1] < 1.3 {
		t.Errorf("one QP per peer: worst flow %.3fx the ideal; ECMP collisions should cost more than 30%%", fct[1])
	}
	if fct[8] >= fct[1] {
		t.Errorf("8 QPs per peer: worst flow %.3fx, not better than 1 QP's %.3fx", fct[8], fct[1])
	}
}

// Random loss on a collision-free transfer: go-back-N recovers it; resent packets and the FCT
// grow with the loss rate.
func TestRoCERandomLoss(t *testing.T) {
	var prev int64 = -1
	prevFCT := 0.0
	for _, loss := range []string{"0", "0.001", "0.01"} {
		extra := ""
		if loss != "0" {
			extra = "faults:\n  - {at: 0s, link: \"*\", action: loss, loss: " + loss + "}"
		}
		res := mustRun(t, shortRTO(fmt.Sprintf(roceYAML, 2, 16, 1, "  - {pattern: flows, flows: [{src: 0, dst: 9, bytes: 8MiB}]}", extra)))
		r := res.Summary.roceT()
		t.Logf("loss %s: resent %d packets after %d NAKs and %d timeouts; FCT/ideal mean %.3f", loss, r.RetxPackets, r.NAKs, r.Timeouts, r.FCTOverIdealMean)
		if r.FlowsCompleted != r.Flows || r.QPErrors != 0 {
			t.Fatalf("loss %s: completed %d of %d, QP errors %d", loss, r.FlowsCompleted, r.Flows, r.QPErrors)
		}
		if r.RetxPackets <= prev && loss != "0" {
			t.Errorf("loss %s: resent %d packets, not more than at the lower loss (%d)", loss, r.RetxPackets, prev)
		}
		if r.FCTOverIdealMean < prevFCT {
			t.Errorf("loss %s: FCT/ideal %.3f, below the lower loss's %.3f", loss, r.FCTOverIdealMean, prevFCT)
		}
		prev, prevFCT = r.RetxPackets, r.FCTOverIdealMean
	}
}

// Same scenario, same seed: byte-identical summaries.
func TestRoCEDeterministic(t *testing.T) {
	y := fmt.Sprintf(roceYAML, 2, 16, 2, "  - {pattern: permutation, bytes: 1MiB}", "")
	a := mustRun(t, y).Summary
	b := mustRun(t, y).Summary
	if roceString(a) != roceString(b) {
		t.Fatalf("two runs differ:\n%s\n%s", roceString(a), roceString(b))
	}
	c := mustRun(t, strings.Replace(y, "run: {", "run: {seed: 7, ", 1)).Summary
	if roceString(a) == roceString(c) {
		t.Errorf("seed 7 gave the same figures as seed 1: the seed reaches neither the permutation nor the hashing")
	}
}

// A T0-T1 link failing under RoCE: ECMP keeps hashing QPs onto it until routing reconverges
// (fabric.reconvergence). With a 200 us reconvergence the blackholed QPs' later packets take
// the new paths, the receiver NAKs the gap and go-back-N resends it, and every flow finishes;
// with the default 1 s, past the run, they exhaust their retries and error, and the run
// reports them [docs/protocols.md, "RoCEv2: link failures and timeouts"].
func TestRoCELinkDownReconvergence(t *testing.T) {
	// up1 carries data of this permutation (up0 only ACKs under the production DCQCN's
	// timing, re-pinned from up0 when the defaults changed).
	const fault = "faults:\n  - {at: 20us, link: p0.t0-0.up1, action: down}"
	for _, c := range []struct {
		reconv    string
		wantError bool
	}{{"200us", false}, {"1s", true}} {
		y := fmt.Sprintf(roceYAML, 1, 16, 1, "  - {pattern: permutation, bytes: 4MiB}", fault)
		y = strings.Replace(y, "transport:", "fabric: {reconvergence: "+c.reconv+"}\ntransport:", 1)
		res := mustRun(t, shortRTO(y))
		r := res.Summary.roceT()
		t.Logf("reconvergence %s: done %d of %d, QP errors %d, timeouts %d, drops %v, JCT %.0f us",
			c.reconv, r.FlowsCompleted, r.Flows, r.QPErrors, r.Timeouts, res.Summary.Drops, r.JCTUs)
		if res.Summary.Drops["link_down"] == 0 {
			t.Fatalf("reconvergence %s: nothing was lost on the failed link; wrong link or no QP hashed onto it", c.reconv)
		}
		if c.wantError {
			if r.QPErrors == 0 || r.FlowsCompleted == r.Flows {
				t.Errorf("reconvergence %s: %d QP errors, %d of %d done; want blackholed QPs to error", c.reconv, r.QPErrors, r.FlowsCompleted, r.Flows)
			}
		} else if r.QPErrors != 0 || r.FlowsCompleted != r.Flows || r.NAKs+r.Timeouts == 0 {
			t.Errorf("reconvergence %s: %d QP errors, %d of %d done, %d NAKs, %d timeouts; want every flow done after go-back-N", c.reconv, r.QPErrors, r.FlowsCompleted, r.Flows, r.NAKs, r.Timeouts)
		}
	}
}

// RoCE is lossless by default (fabric.pfc on under RoCE): a 64-host one-plane permutation with
// one QP per peer drops nothing, pauses upstream ports, and hash-colliding flows share their
// links (flows at about 1, 1/2, 1/3 of line rate: mean throughput well under line rate);
// turning PFC off (lossy RoCE) drops packets and goes back N [docs/protocols.md, "RoCEv2: PFC"
// and "RoCEv2: go-back-N"].
func TestRoCEPFC(t *testing.T) {
	lossless := runRoCEScenario(t, 1, 64, 1, "  - {pattern: permutation, bytes: 4MiB}", "")
	s := lossless.Summary
	if s.PFC == nil {
		t.Fatal("no pfc block: PFC is not on by default under RoCE")
	}
	t.Logf("PFC on: drops %d, pauses %d on %d ports, FCT/ideal mean %.3f worst %.3f, resent %d",
		s.DroppedPackets, s.PFC.Pauses, s.PFC.PortsPaused, s.roceT().FCTOverIdealMean, s.roceT().FCTOverIdealMax, s.roceT().RetxPackets)
	// Re-pinned with the roce profile's buffer model: DCQCN now keeps a permutation's
	// collisions below the PFC pause point, so pauses are not required (they were with
	// 128 KiB static thresholds and ECN above them); lossless still is.
	if s.DroppedPackets != 0 || s.roceT().RetxPackets != 0 || s.PFC.HeadroomExceeded != 0 {
		t.Errorf("PFC on: %d drops, %d resent, %d headroom violations; want lossless", s.DroppedPackets, s.roceT().RetxPackets, s.PFC.HeadroomExceeded)
	}
	if tput := 1 / s.roceT().FCTOverIdealMean; tput > 0.8 || tput < 0.2 {
		t.Errorf("mean throughput %.2f of line with hash collisions; want well under 1 and above 0.2", tput)
	}
	y := fmt.Sprintf(roceYAML, 1, 64, 1, "  - {pattern: permutation, bytes: 4MiB}", "")
	lossy := mustRun(t, strings.Replace(y, "transport:", "fabric: {pfc: {enabled: false}}\ntransport:", 1)).Summary
	t.Logf("PFC off: drops %d, resent %d", lossy.DroppedPackets, lossy.roceT().RetxPackets)
	if lossy.PFC != nil || lossy.DroppedPackets == 0 || lossy.roceT().RetxPackets == 0 {
		t.Errorf("PFC off: pfc block %v, %d drops, %d resent; want drops and go-back-N", lossy.PFC, lossy.DroppedPackets, lossy.roceT().RetxPackets)
	}
}

// Lossless incast of 64 senders under RoCE with PFC: no drop and no ingress past XOFF +
// headroom when headroom is sized from the links (the default); with a headroom smaller than
// what is in flight while a pause travels, packets are dropped, the configuration is flagged
// (before the run and after), and go-back-N recovers.
func TestRoCELosslessIncast64(t *testing.T) {
	senders := make([]string, 64)
	for i := range senders {
		senders[i] = fmt.Sprint(i + 1)
	}
	tr := "  - {pattern: incast, receiver: 0, senders: [" + strings.Join(senders, ", ") + "], bytes: 256KiB}"
	ok := runRoCEScenario(t, 1, 80, 1, tr, "").Summary
	t.Logf("default headroom: drops %d, pauses %d, headroom exceeded on %d ports, done %d of %d",
		ok.DroppedPackets, ok.PFC.Pauses, ok.PFC.HeadroomExceeded, ok.roceT().FlowsCompleted, ok.roceT().Flows)
	if ok.DroppedPackets != 0 || ok.PFC.HeadroomExceeded != 0 || ok.roceT().FlowsCompleted != 64 || ok.PFC.Pauses == 0 {
		t.Errorf("default headroom: %d drops, %d ports past headroom, %d of 64 done, %d pauses; want lossless", ok.DroppedPackets, ok.PFC.HeadroomExceeded, ok.roceT().FlowsCompleted, ok.PFC.Pauses)
	}
	y := strings.Replace(fmt.Sprintf(roceYAML, 1, 80, 1, tr, ""), "transport:", "fabric: {pfc: {headroom: 1KiB}}\ntransport:", 1)
	bad := mustRun(t, shortRTO(y)).Summary
	t.Logf("1 KiB headroom: headroom exceeded on %d ports (first %v)", bad.PFC.HeadroomExceeded, bad.PFC.HeadroomPortsFirst)
	if bad.PFC.HeadroomExceeded == 0 || bad.Drops["pfc_headroom"] == 0 || bad.roceT().FlowsCompleted != 64 {
		t.Errorf("1 KiB of headroom: %d ports flagged, %d packets dropped past the headroom, %d of 64 done; want drops, flagged, recovered by go-back-N",
			bad.PFC.HeadroomExceeded, bad.Drops["pfc_headroom"], bad.roceT().FlowsCompleted)
	}
	if len(ok.PFC.ConfigProblems) != 0 || len(bad.PFC.ConfigProblems) == 0 || !strings.Contains(bad.PFC.ConfigProblems[0], "headroom") {
		t.Errorf("configuration check: default %q, 1 KiB headroom %q; want none, then the headroom named", ok.PFC.ConfigProblems, bad.PFC.ConfigProblems)
	}
	lim := strings.Replace(fmt.Sprintf(roceYAML, 1, 80, 1, tr, ""), "transport:", "fabric: {profile: none, switch_queue: {limit: 256KiB}}\ntransport:", 1)
	if p := mustRun(t, lim).Summary.PFC.ConfigProblems; len(p) == 0 || !strings.Contains(strings.Join(p, " "), "queue limit") {
		t.Errorf("256 KiB egress limits: %q; want the queue limit named", p)
	}
}

// No false deadlocks: on a 3-tier fat-tree under a RoCE permutation, switches pause each other
// across one link (traffic climbing one way, descending the other) without a cyclic buffer
// dependency; up/down routing cannot deadlock, so every seed completes. PFC only with static
// 128 KiB thresholds, so that switches do pause each other (under the defaults DCQCN acts
// first and nothing pauses).
func TestRoCENoFalseDeadlock(t *testing.T) {
	for seed := 1; seed <= 4; seed++ {
		y := fmt.Sprintf(`
topology: {clos: {tiers: 3, planes: 1, radix: 8, host_link: 100G}}
transport: {kind: roce, roce: {dcqcn: {disabled: true}}}
fabric: {pfc: {xoff: 128KiB}}
traffic: [{pattern: permutation, bytes: 2MiB}]
run: {duration: 20ms, seed: %d}
`, seed)
		s := mustRun(t, y).Summary
		if s.roceT().FlowsCompleted != s.roceT().Flows || s.PFC.Pauses == 0 {
			t.Errorf("seed %d: %d of %d done, %d pauses", seed, s.roceT().FlowsCompleted, s.roceT().Flows, s.PFC.Pauses)
		}
	}
}

// A RoCE traffic run whose every unfinished transfer is on a QP that gave up stops there
// instead of idling to run.duration, and the summary says so (stopped_early); a run with a
// transfer still able to finish is not cut short (the receiver's only NIC link fails under an
// incast on a 1-plane Clos, short RTO and 1 retry so the QPs error within the run).
func TestRoCEStopsWhenOnlyErroredQPsRemain(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		errs, done  int
		from, to    float64 // when the traffic must stop, us
	}{
		{"all left errored", "", 4, 1, 100, 1000},
		// A 60 MiB flow still running when the QPs error (about 220 us): the run goes on
		// until it finishes (about 5 ms), then stops.
		{"one still running", "  - {pattern: flows, flows: [{src: 10, dst: 11}], bytes: 60MiB}\n", 4, 2, 4000, 10000},
	} {
		res := mustRun(t, `
name: fail-qp
topology:
  clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}
transport: {kind: roce, roce: {rto: 100us, retry_count: 1}}
traffic:
  - {pattern: incast, receiver: 0, bytes: 4MiB, senders: [4, 5, 6, 7]}
  - {pattern: flows, flows: [{src: 8, dst: 9}], bytes: 1MiB}
`+c.extra+`faults:
  - {at: 20us, link: h0.p0, action: down}
run: {duration: 20ms, fault_baseline: none, allow_qp_errors: true}
`)
		s := res.Summary
		r := s.roceT()
		t.Logf("%s: QP errors %d, done %d, traffic end %.1f us, stopped early %v", c.name, r.QPErrors, r.FlowsCompleted, s.DurationUs, s.StoppedEarly)
		if r.QPErrors != c.errs || r.FlowsCompleted != c.done || !s.StoppedEarly {
			t.Errorf("%s: QP errors %d, completed %d, stopped_early %v; want %d, %d, true", c.name, r.QPErrors, r.FlowsCompleted, s.StoppedEarly, c.errs, c.done)
		}
		if s.DurationUs < c.from || s.DurationUs > c.to {
			t.Errorf("%s: traffic ran to %.1f us; want it stopped in %.0f..%.0f us, when nothing left could finish", c.name, s.DurationUs, c.from, c.to)
		}
	}
}

// Checks that need the built fabric's sizes: a shared buffer that cannot hold one data packet
// per ingress of a switch and an ECN kmin at or above the roce profile's queue limit (in
// force under PFC) are input errors naming field, value and what is allowed; DCQCN on with ECN
// off on every switch queue is a pre-run warning (DCQCN can never act), and none with ECN on
// or DCQCN off.
func TestRoCEBufferInputChecks(t *testing.T) {
	const y = `
name: checks
topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}
fabric: %s
transport: %s
traffic:
  - {pattern: incast, senders: [4, 5, 6], receiver: 0, bytes: 256KiB}
`
	for _, c := range []struct {
		fab, tr string
		err     []string // an InputError naming these
		warn    string   // a pre-run warning containing this ("" none about DCQCN)
	}{
		{"{pfc: {shared_buffer: 10KB}}", "{kind: roce}", []string{"fabric.pfc.shared_buffer", "10000B", "8 ingresses", "33552B"}, ""},
		{"{switch_queue: {ecn: {kmin: 100MiB, kmax: 200MiB}}}", "{kind: roce}", []string{"fabric.switch_queue.ecn.kmin", "100MiB", "64MiB"}, ""},
		{"{switch_queue: {ecn: {enabled: false}}}", "{kind: roce}", nil, "DCQCN can never act"},
		{"{switch_queue: {ecn: {enabled: false}}, pfc: {enabled: false}}", "{kind: roce}", nil, "DCQCN can never act"},
		{"{switch_queue: {ecn: {enabled: false}}}", "{kind: roce, roce: {dcqcn: {disabled: true}}}", nil, ""},
		{"{pfc: {shared_buffer: 40KB}}", "{kind: roce}", nil, ""},
		{"{}", "{kind: roce}", nil, ""},
	} {
		name := c.fab + " " + c.tr
		sc, err := scenario.Parse([]byte(fmt.Sprintf(y, c.fab, c.tr)))
		if err != nil {
			t.Fatalf("%s: parse: %v", name, err)
		}
		res, err := Run(sc)
		var ie *InputError
		if c.err != nil {
			if err == nil || !errors.As(err, &ie) {
				t.Errorf("%s: run error %v; want an InputError", name, err)
				continue
			}
			for _, w := range c.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %q does not name %q", name, err, w)
				}
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w := strings.Join(res.Summary.roceT().Warnings, "\n")
		if got := strings.Contains(w, "DCQCN can never act"); c.warn == "" && got || c.warn != "" && !strings.Contains(w, c.warn) {
			t.Errorf("%s: warnings %q; want %q", name, w, c.warn)
		}
	}
}

// roceString prints a RoCE run's transport block, common figures and RoCE's own.
func roceString(s Summary) string {
	b, err := json.Marshal(s.Transport)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
