package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// The same NIC-T0 link failure (down at 50 us, up 5 ms later) under the same ring all-reduce
// on MRC and on RoCEv2, both over 4 planes: MRC moves the failed plane's share to the other
// three and the job slows by well under 1 ms; RoCE's QP on that plane is stuck until the link
// returns and its next retry (RTO 1 ms) gets through, so the job slows by the outage and more.
func TestFaultCostMRCvsRoCE(t *testing.T) {
	const y = `
name: ar-fault
topology:
  clos: {tiers: 2, planes: 4, radix: 16, hosts: 16, host_link: 100Gbps, hop_latency: 500ns}
transport: {kind: %s}
workload:
  collectives:
    - {op: all_reduce, algorithm: ring, bytes: 64MiB}
faults:
  - {at: 50us, nic: h3.p1, action: down, for: 5ms}
run: {duration: 100ms, sample_interval: 5us}
`
	slow := map[string]float64{}
	for _, tr := range []string{"mrc", "roce"} {
		res := mustRun(t, shortRTO(fmt.Sprintf(y, tr)))
		s := res.Summary
		if len(s.Faults) != 1 {
			t.Fatalf("%s: %d fault rows, want 1", tr, len(s.Faults))
		}
		f := s.Faults[0]
		detect := "-"
		if f.DetectUs != nil {
			detect = fmt.Sprintf("%.1f us", *f.DetectUs)
		}
		t.Logf("%s: all-reduce %.1f us without the fault, slowed by %.1f us; detect %s, lost %d B, drops %d, QP errors %d",
			tr, s.FaultBaselineEndUs, s.FaultSlowdownUs, detect, *f.LostBytes, f.PacketsDropped, f.QPErrors)
		slow[tr] = s.FaultSlowdownUs
	}
	if slow["mrc"] >= 1000 {
		t.Errorf("MRC slowed by %.1f us; want under 1 ms", slow["mrc"])
	}
	if slow["roce"] < 4000 {
		t.Errorf("RoCE slowed by %.1f us; want about the 5 ms outage", slow["roce"])
	}
}

// A transceiver carrying a quarter of an 8-plane NIC's links (breakout 2: h0.p0, h0.p1) fails:
// in steady state the NIC keeps 75% of its bandwidth (within 2%) under MRC.
func TestFaultCostTransceiver(t *testing.T) {
	res := mustRun(t, `
name: xcvr
topology:
  clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100Gbps, hop_latency: 500ns}
transport: {kind: mrc}
traffic:
  - {pattern: flows, flows: [{src: 0, dst: 9, bytes: 32MiB}]}
faults:
  - {at: 60us, transceiver: h0.x0, breakout: 2, action: down}
run: {duration: 5ms, sample_interval: 2us}
`)
	run := res.mrcRun()
	at := func(us int) int {
		for i, s := range run.EVSeries {
			if s.At >= sim.Time(us)*sim.Microsecond {
				return i
			}
		}
		return len(run.EVSeries) - 1
	}
	b0, b1, a0, a1 := at(20), at(60), at(120), at(220)
	before := float64(run.FlowPlaced[b1][0]-run.FlowPlaced[b0][0]) / float64(b1-b0)
	after := float64(run.FlowPlaced[a1][0]-run.FlowPlaced[a0][0]) / float64(a1-a0)
	t.Logf("NIC goodput after losing 2 of 8 links: %.3f of before", after/before)
	if r := after / before; r < 0.73 || r > 0.77 {
		t.Errorf("goodput kept %.3f; want 0.75 +- 0.02", r)
	}
	if len(res.Summary.Faults) != 1 || res.Summary.Faults[0].Target != "h0.x0" {
		t.Errorf("fault rows %+v; want one for h0.x0", res.Summary.Faults)
	}
}

// A T1 that blackholes (links up, forwards nothing) under a permutation: MRC retires the EVs
// through it and every transfer completes; RoCE keeps hashing QPs into it (routing sees no
// failure), so those QPs exhaust their retries and error.
func TestFaultCostBlackholeT1(t *testing.T) {
	const y = `
name: bh
topology:
  clos: {tiers: 2, planes: 1, radix: 16, hosts: 32, host_link: 400Gbps, hop_latency: 500ns}
transport: {kind: %s}
traffic:
  - {pattern: permutation, bytes: 4MiB}
faults:
  - {at: 20us, switch: p0.t1-2, action: blackhole}
run: {duration: 20ms, sample_interval: 5us, fault_baseline: none}
`
	mrc := mustRun(t, fmt.Sprintf(y, "mrc")).Summary
	if mrc.mrcT().FlowsCompleted != mrc.mrcT().Flows || mrc.mrcT().QPErrors != 0 {
		t.Errorf("MRC: %d of %d done, %d QP errors; want all done", mrc.mrcT().FlowsCompleted, mrc.mrcT().Flows, mrc.mrcT().QPErrors)
	}
	if mrc.Drops["blackhole"] == 0 {
		t.Errorf("MRC: nothing reached the blackholed T1")
	}
	roce := mustRun(t, shortRTO(fmt.Sprintf(y, "roce"))).Summary
	t.Logf("MRC: %d of %d done, blackhole drops %d; RoCE: %d of %d done, %d QP errors, blackhole drops %d",
		mrc.mrcT().FlowsCompleted, mrc.mrcT().Flows, mrc.Drops["blackhole"], roce.roceT().FlowsCompleted, roce.roceT().Flows, roce.roceT().QPErrors, roce.Drops["blackhole"])
	if roce.roceT().QPErrors == 0 || roce.roceT().FlowsCompleted == roce.roceT().Flows {
		t.Errorf("RoCE: %d QP errors, %d of %d done; want the QPs hashed through the blackhole to error", roce.roceT().QPErrors, roce.roceT().FlowsCompleted, roce.roceT().Flows)
	}
	if !strings.Contains(strings.Join(roce.roceT().QPErrorList, " "), "retr") {
		t.Logf("QP errors: %v", roce.roceT().QPErrorList)
	}
}

// A flapping T0-T1 link (down 20 us of every 200 us, scaled down from the 1 ms every
// 10 ms) under an MRC permutation costs under 1% of the aggregate goodput against the same
// run without faults; under RoCE the QPs hashed onto it lose what they send while it is down
// and go back N (their stall; the job's end is set by ECMP collisions elsewhere).
func TestFaultCostFlap(t *testing.T) {
	const y = `
name: flap
topology:
  clos: {tiers: 2, planes: %d, radix: 16, hosts: 16, host_link: 100Gbps, hop_latency: 500ns}
transport: {kind: %s}
traffic:
  - {pattern: permutation, bytes: %s}
faults:
  - {at: 100us, link: p0.t0-0.up1, action: flap, down_for: 20us, period: 200us, count: 3}
run: {duration: 50ms, sample_interval: 5us}
`
	res := mustRun(t, fmt.Sprintf(y, 8, "mrc", "64MiB"))
	s := res.Summary
	var lost int64
	for _, f := range s.Faults {
		if f.LostBytes == nil {
			t.Fatalf("fault row without lost bytes under the twin baseline: %+v", f)
		}
		lost += *f.LostBytes
	}
	total := float64(s.mrcT().Flows) * 64 * (1 << 20)
	t.Logf("MRC: %d flap cycles cost %d B of goodput (%.3f%% of %.0f B), slowed by %.1f us of %.1f us",
		len(s.Faults), lost, 100*float64(lost)/total, total, s.FaultSlowdownUs, s.FaultBaselineEndUs)
	if len(s.Faults) != 3 {
		t.Fatalf("%d fault rows; want one per flap cycle (3)", len(s.Faults))
	}
	if frac := s.FaultSlowdownUs / s.FaultBaselineEndUs; frac > 0.01 {
		t.Errorf("MRC slowed by %.2f%%; want under 1%%", 100*frac)
	}
	// Every uplink of one T0 flaps, so some QP is surely hashed onto a flapping link.
	r := mustRun(t, strings.Replace(fmt.Sprintf(y, 1, "roce", "8MiB"), "link: p0.t0-0.up1", "link: \"p0.t0-0.up*\"", 1)).Summary
	t.Logf("RoCE: timeouts %d, NAKs %d, QP errors %d, slowed by %.1f us of %.1f us", r.roceT().Timeouts, r.roceT().NAKs, r.roceT().QPErrors, r.FaultSlowdownUs, r.FaultBaselineEndUs)
	if r.roceT().Timeouts+r.roceT().NAKs == 0 || r.roceT().RetxPackets == 0 {
		t.Errorf("RoCE: %d timeouts, %d NAKs, %d resent packets; want the QPs on the flapping link to lose packets and go back N", r.roceT().Timeouts, r.roceT().NAKs, r.roceT().RetxPackets)
	}
}

// A failure after which QPs errored or transfers never finished is not reported recovered,
// whatever the goodput against the twin says: recover_us is empty and the note says what was
// left (RoCE, a T0 uplink down on a 16-host permutation; ECMP blackholes the QPs hashed onto
// it until reconvergence). QP errors at the very end of the traffic (the run stops at the
// last) count.
func TestFaultCostNotRecoveredWhenTransfersLost(t *testing.T) {
	const y = `
name: lost
topology:
  clos: {tiers: 2, planes: 1, radix: 16, hosts: 16, host_link: 100G, hop_latency: 500ns}
fabric: {reconvergence: %s}
transport: {kind: roce, roce: {rto: %s}}
traffic:
  - {pattern: permutation, bytes: 4MiB}
faults:
  - {at: 20us, link: p0.t0-0.up1, action: down}
run: {duration: %s, sample_interval: 5us, allow_qp_errors: true}
`
	for _, c := range []struct {
		name, reconv, rto, dur string
		note                   []string // "" parts: recovered, no note
	}{
		{"reconverged", "200us", "1048576ns", "50ms", nil},
		{"QPs errored", "1s", "1048576ns", "50ms", []string{"not recovered", "2 QP(s) errored", "2 transfer(s) never finished"}},
		{"transfers unfinished", "1s", "4.294967296s", "3ms", []string{"not recovered", "transfer(s) never finished"}},
	} {
		res := mustRun(t, fmt.Sprintf(y, c.reconv, c.rto, c.dur))
		if len(res.Summary.Faults) != 1 {
			t.Fatalf("%s: %d fault rows; want 1", c.name, len(res.Summary.Faults))
		}
		f := res.Summary.Faults[0]
		r := res.Summary.roceT()
		t.Logf("%s: recover %v, note %q, QP errors %d (row %d), done %d of %d", c.name, f.RecoverUs, f.Note, r.QPErrors, f.QPErrors, r.FlowsCompleted, r.Flows)
		if c.note == nil {
			if f.RecoverUs == nil || f.Note != "" || r.FlowsCompleted != r.Flows {
				t.Errorf("%s: recover %v, note %q, %d of %d done; want recovered, no note, all done", c.name, f.RecoverUs, f.Note, r.FlowsCompleted, r.Flows)
			}
			continue
		}
		if f.RecoverUs != nil || f.QPErrors != r.QPErrors {
			t.Errorf("%s: recover %v, row QP errors %d of %d; want no recovery and every QP error counted", c.name, f.RecoverUs, f.QPErrors, r.QPErrors)
		}
		for _, w := range c.note {
			if !strings.Contains(f.Note, w) {
				t.Errorf("%s: note %q; want %q", c.name, f.Note, w)
			}
		}
		var b strings.Builder
		if err := WriteFaultsCSV(&b, res.Summary.Faults); err != nil || !strings.Contains(b.String(), f.Note) || !strings.HasSuffix(strings.SplitN(b.String(), "\n", 2)[0], ",note") {
			t.Errorf("%s: faults.csv %q (%v); want a note column with the note", c.name, b.String(), err)
		}
	}
}

// TestFaultsCSVAbsoluteTimes: every time column of faults.csv is an absolute simulated time
// in microseconds (its name ends _us): at_us and end_us as in summary.json, and
// detect_at_us, last_retx_at_us and recover_at_us are summary.json's durations from at_us
// added to it (empty when absent), for failures at several times, with and without each.
func TestFaultsCSVAbsoluteTimes(t *testing.T) {
	p := func(x float64) *float64 { return &x }
	costs := []FaultCost{
		{Entry: 0, Action: "down", Target: "h0.p1", AtUs: 50, EndUs: 5050, DetectUs: p(20.744), LastRetxUs: p(1000.001), RecoverUs: p(326)},
		{Entry: 1, Cycle: 2, Action: "flap", Target: "p0.t0-0.down3", AtUs: 1234.567, EndUs: 1300},
		{Entry: 2, Action: "loss", Target: "h1.p0", AtUs: 0.001, EndUs: 9, DetectUs: p(0.1), RecoverUs: p(8.999)},
	}
	want := [][3]string{{"70.744", "1050.001", "376"}, {"", "", ""}, {"0.101", "", "9"}}
	var b strings.Builder
	if err := WriteFaultsCSV(&b, costs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	head := strings.Split(lines[0], ",")
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
		if strings.Contains(h, "_us") && !strings.HasSuffix(h, "_us") || h == "detect_us" || h == "last_retx_us" || h == "recover_us" {
			t.Errorf("column %q: want every time column absolute, named ..._us with at in it for the reaction times", h)
		}
	}
	for i, c := range costs {
		row := strings.Split(lines[i+1], ",")
		for j, name := range []string{"detect_at_us", "last_retx_at_us", "recover_at_us"} {
			if got := row[col[name]]; got != want[i][j] {
				t.Errorf("row %d (at %v us): %s %q; want %q", i, c.AtUs, name, got, want[i][j])
			}
		}
	}
}
