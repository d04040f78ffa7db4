package runner

import (
	"fmt"
	"testing"
)

// mrcPortYAML is a 2-tier Clos of radix 16 and 16 hosts with %d planes, MRC, one transfer
// 0 -> 9 (off the sender's T0) of %d MiB, then the faults block.
const mrcPortYAML = `
name: mrc-port
topology:
  clos: {tiers: 2, planes: %d, radix: 16, hosts: 16, host_link: 100G, hop_latency: 500ns}
transport: {kind: mrc}
traffic:
  - {pattern: flows, flows: [{src: 0, dst: 9}], bytes: %dMiB}
%s
run: {duration: 20ms, sample_interval: 2us}
`

// mrcPortRun runs one transfer 0 -> 9 over planes planes with host host's NIC port of plane
// slow degraded to factor of its rate from the start (factor 1: no fault), and returns the
// result and the steady goodput in bits/s: placed payload over the middle of the transfer
// (from 20% to 90% of its completion time, past the start-up and before the tail).
func mrcPortRun(t *testing.T, planes, mib, host, slow int, factor float64) (*Result, float64) {
	t.Helper()
	faults := ""
	if factor < 1 {
		faults = fmt.Sprintf("faults:\n  - {at: 0s, link: h%d.p%d, action: degrade, factor: %v}", host, slow, factor)
	}
	res := mustRun(t, fmt.Sprintf(mrcPortYAML, planes, mib, faults))
	m := res.Summary.mrcT()
	if m.FlowsCompleted != 1 || m.QPErrors != 0 {
		t.Fatalf("%d planes, h%d plane %d at %v: completed %d, QP errors %d", planes, host, slow, factor, m.FlowsCompleted, m.QPErrors)
	}
	if factor < 1 {
		// The fault names the NIC port of the plane meant: h<host>.p<slow> is plane slow.
		id := res.Net.Nodes[host].Ports[slow]
		if res.Net.Ports[id].Name != fmt.Sprintf("h%d.p%d", host, slow) {
			t.Fatalf("plane %d's NIC port of h%d is %s", slow, host, res.Net.Ports[id].Name)
		}
	}
	return res, placedRate(res, res.DoneAt/5, res.DoneAt*9/10)
}

// planeTx returns the wire bytes host's NIC port of each plane transmitted.
func planeTx(res *Result, host, planes int) []int64 {
	out := make([]int64, planes)
	for p := range out {
		out[p] = res.Net.Ports[res.Net.Nodes[host].Ports[p]].Totals().TxBytes
	}
	return out
}

// One slow NIC port must not set the QP's rate (issue 15): with one of the sender's 4 NIC
// ports degraded to 25%, the QP's steady goodput is at least 0.9 of the remaining capacity
// (3.25 of 4 ports, against the healthy run's goodput), because the sender picks the plane for
// each packet by NIC backlog and each plane keeps its own rotation [MRC §2.1]; with every port
// healthy the 4 NIC ports carry equal loads within 2% [MRC §2.1: planes stay equally loaded].
func TestMRCSlowNICPort(t *testing.T) {
	const planes = 4
	healthy, g0 := mrcPortRun(t, planes, 16, 0, 0, 1)
	tx := planeTx(healthy, 0, planes)
	lo, hi := tx[0], tx[0]
	for _, b := range tx {
		lo, hi = min(lo, b), max(hi, b)
	}
	t.Logf("healthy: goodput %.1f Gb/s, NIC port tx bytes %v (max/min %.4f)", g0/1e9, tx, float64(hi)/float64(lo))
	if float64(hi) > 1.02*float64(lo) {
		t.Errorf("healthy NIC ports carried %v bytes; want equal within 2%%", tx)
	}
	_, g := mrcPortRun(t, planes, 16, 0, 1, 0.25)
	want := g0 * 3.25 / 4
	t.Logf("h0.p1 at 25%%: goodput %.1f Gb/s = %.3f of the remaining capacity (%.1f Gb/s)", g/1e9, g/want, want/1e9)
	if g < 0.9*want {
		t.Errorf("goodput %.1f Gb/s with one port at 25%%; want >= 0.9 x %.1f Gb/s", g/1e9, want/1e9)
	}
}

// The sweep of issue 15 at 8 MiB: 1, 2, 4 and 8 planes, a port at 10%, 25% or 50%, on the
// sender's NIC or on the receiver's. A slow sender port costs only its lost capacity (>= 0.9
// of what is left). A slow receiver port is invisible to the sender's NIC arbitration; the
// sweep records what it costs and checks only that the transfer completes and that a QP keeps
// what a strict plane alternation gives: the slow port carrying its 1/planes of the packets at
// factor of its rate, factor of the healthy goodput.
func TestMRCSlowPortSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("sweep of 25 runs")
	}
	for _, planes := range []int{1, 2, 4, 8} {
		_, g0 := mrcPortRun(t, planes, 8, 0, 0, 1)
		for _, factor := range []float64{0.1, 0.25, 0.5} {
			for _, side := range []struct {
				name string
				host int
			}{{"sender", 0}, {"receiver", 9}} {
				name := fmt.Sprintf("%dplanes/%v/%s", planes, factor, side.name)
				t.Run(name, func(t *testing.T) {
					slow := planes - 1
					res, g := mrcPortRun(t, planes, 8, side.host, slow, factor)
					left := g0 * (float64(planes-1) + factor) / float64(planes)
					strict := g0 * factor // the slow port carries 1/planes of every rotation
					m := res.Summary.mrcT()
					t.Logf("%s: goodput %.1f Gb/s = %.3f of remaining %.1f (strict alternation %.1f); retx %v, timeouts %d",
						name, g/1e9, g/left, left/1e9, strict/1e9, m.RetxPackets, m.Timeouts)
					if side.host == 0 && g < 0.9*left {
						t.Errorf("goodput %.3f of the remaining capacity; want >= 0.9", g/left)
					}
					// Receiver side: the floor is 0.6 of the strict alternation. Loss
					// attribution (mrc.Sender.blame) retires a path only after three or more
					// net losses, and the degraded receiver port trims and loses only part of
					// its plane's packets while probes bring its EVs back, so on 2 planes the
					// QP keeps 0.88-1.36 of the strict alternation (open in docs/design-notes.md;
					// 4 and 8 planes keep more than it).
					if side.host != 0 && g < 0.6*strict {
						t.Errorf("goodput %.1f Gb/s below 0.6 x the strict alternation's %.1f", g/1e9, strict/1e9)
					}
				})
			}
		}
	}
}
