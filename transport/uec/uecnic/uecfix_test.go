package uecnic_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/transport/uec/uecnic"
)

// TestRCCCCreditAcrossLinkFailure (ut20 F2): an RCCC permutation with one T0-T1 link dead
// from 10 us (routing reconverges only after the default 1 s) must finish well within 1 ms:
// credit packets and credit requests ride REPS-good EVs (or a walk over the pool), not one
// fixed ECMP path per connection. Before the fix 1 to 4 of the 16 transfers were still
// waiting for credit at 1 ms on every seed.
func TestRCCCCreditAcrossLinkFailure(t *testing.T) {
	const yaml = `topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}
transport: {kind: uec, uec: {cc: %s}}
traffic: [{pattern: permutation, bytes: 512KiB}]
faults: [{at: 10us, link: p0.t0-0.up0, action: down}]
run: {fault_baseline: none, seed: %d, duration: 1ms}
`
	for _, c := range []struct {
		cc    string
		seed  int
		maxUs float64
	}{{"rccc", 1, 400}, {"rccc", 2, 400}, {"rccc", 3, 400}, {"rccc", 4, 400}, {"nscc+rccc", 1, 400}} {
		name := fmt.Sprintf("%s/seed %d", c.cc, c.seed)
		s := complete(t, name, run(t, fmt.Sprintf(yaml, c.cc, c.seed)))
		d := s.Detail.(*uecnic.Detail)
		t.Logf("%s: JCT %.1f us, timeouts %d, credit requests %d", name, s.JCTUs, s.Timeouts, d.CreditRequests)
		if s.JCTUs > c.maxUs {
			t.Errorf("%s: JCT %.1f us, want at most %.0f us", name, s.JCTUs, c.maxUs)
		}
	}
}

// TestMultiPlanePacedIncast (ut20 F9): a 16 -> 1 RCCC incast of 256 KiB per sender on P
// planes must run at the receiver's P-plane rate: JCT within 5% of N x S / (P x 100G) + the
// base RTT. Before the fix paced senders broke the emptiest-port tie to plane 0 and the JCT
// was 331.6 / 296.8 us at 2 / 4 planes (bounds 177 / 93 us).
func TestMultiPlanePacedIncast(t *testing.T) {
	const yaml = `topology: {clos: {tiers: 2, planes: %d, radix: 16, hosts: 64, host_link: 100G, hop_latency: 1us}}
fabric: {profile: uec}
transport: {kind: uec, uec: {cc: %s}}
traffic: [{pattern: incast, senders: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], receiver: 0, bytes: 256KiB}]
`
	for _, c := range []struct {
		planes int
		cc     string
	}{{2, "rccc"}, {4, "rccc"}} {
		name := fmt.Sprintf("%d planes %s", c.planes, c.cc)
		s := complete(t, name, run(t, fmt.Sprintf(yaml, c.planes, c.cc)))
		bound := 16*256*1024*8/(float64(c.planes)*100e9)*1e6 + s.BaseRTTUs
		t.Logf("%s: JCT %.1f us, bound %.1f us", name, s.JCTUs, bound)
		if s.JCTUs > 1.05*bound {
			t.Errorf("%s: JCT %.1f us, want within 5%% of N x S / (P x C) + base RTT = %.1f us", name, s.JCTUs, bound)
		}
	}
}

// TestRODOnePlane (ut20 F8): one ROD flow alone on an idle fabric stays on one plane: no
// out-of-order drops and the one-plane FCT (90.2 us for 1 MiB at 100G) on 1, 2 or 4 planes.
// Before the fix its packets were spread over the planes: 8,798 out-of-order drops and
// 880 us on 4 planes.
func TestRODOnePlane(t *testing.T) {
	const yaml = `topology: {clos: {tiers: 2, planes: %d, radix: 8, hosts: 16, host_link: 100G}}
transport: {kind: uec, uec: {delivery: rod}}
traffic: [{pattern: flows, flows: [{src: 0, dst: 9, bytes: 1MiB}]}]
`
	for _, planes := range []int{1, 2, 4} {
		name := fmt.Sprintf("%d planes", planes)
		s := complete(t, name, run(t, fmt.Sprintf(yaml, planes)))
		d := s.Detail.(*uecnic.Detail)
		t.Logf("%s: FCT %.1f us, out-of-order drops %d", name, s.FCTMaxUs, d.OutOfOrderDrops)
		if d.OutOfOrderDrops != 0 || s.FCTMaxUs > 92 {
			t.Errorf("%s: FCT %.1f us with %d out-of-order drops, want <= 92 us (one plane's line rate) and none", name, s.FCTMaxUs, d.OutOfOrderDrops)
		}
	}
}

// TestReceiverPlaneDown (ut20 F4): on 4 planes with the receiver's plane-0 NIC port down
// from 5 us, the transfer into it completes (the sender stops using the dead plane after a
// loss on it), as does the receiver's own transfer out. Before the fix the transfer into h3
// never completed: each lone retransmission left on plane 0 again.
func TestReceiverPlaneDown(t *testing.T) {
	const yaml = `topology: {clos: {tiers: 2, planes: 4, radix: 8, hosts: 16, host_link: 100G}}
transport: {kind: uec, uec: {cc: %s, delivery: %s}}
traffic: [{pattern: flows, flows: [{src: 10, dst: 3, bytes: 1MiB}, {src: 3, dst: 12, bytes: 1MiB}]}]
faults: [{at: 5us, nic: h3.p0, action: down}]
run: {fault_baseline: none}
`
	for _, c := range [][2]string{{"nscc", "rud"}, {"rccc", "rud"}, {"nscc", "rod"}} {
		name := c[0] + "/" + c[1]
		s := complete(t, name, run(t, fmt.Sprintf(yaml, c[0], c[1])))
		t.Logf("%s: FCT max %.1f us, planes avoided %d", name, s.FCTMaxUs, s.Detail.(*uecnic.Detail).PlanesAvoided)
		if s.FCTMaxUs > 200 {
			t.Errorf("%s: FCT max %.1f us, want <= 200 us", name, s.FCTMaxUs)
		}
	}
}

// TestContradictoryOptions (ut20 F5, F6): options that contradict each other or the fabric are
// errors naming the field; options that are ignored are warnings. Before the fix every case
// ran without a word (ack_delay 1s: every flow's tail waited for its RTO, 3.97x ideal).
func TestContradictoryOptions(t *testing.T) {
	const base = `topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}
transport: {kind: uec, uec: %s}
traffic: [{pattern: permutation, bytes: 64KiB}]
run: {engine: %s}
`
	for _, c := range []struct {
		uec, engine, err, warn string
	}{
		{"{ack_every: 8, ack_delay: 1s}", "packet", "transport.uec.ack_delay: 1s plus the base RTT", ""},
		{"{ack_every: 8, ack_delay: 10us, rto: 10us}", "packet", "transport.uec.ack_delay: 10us is not below the RTO", ""},
		{"{delivery: rod, lb: bitmap}", "packet", "transport.uec.lb: bitmap with delivery rod", ""},
		{"{delivery: rod, lb: reps}", "packet", "transport.uec.lb: reps with delivery rod", ""},
		{"{delivery: rod, paths: 64}", "packet", "transport.uec.paths: 64 with delivery rod", ""},
		{"{cc: nscc, rccc: {speculative_bdp: 1}}", "packet", "", "the rccc block is ignored"},
		{"{cc: rccc}", "flow", "", "the flow level does not model receiver credit"},
		{"{ack_every: 8, ack_delay: 5us}", "packet", "", ""},
		{"{delivery: rod}", "packet", "", ""},
		{"{delivery: rod, lb: single, paths: 1}", "packet", "", ""},
	} {
		yaml := fmt.Sprintf(base, c.uec, c.engine)
		sc, err := scenario.Parse([]byte(yaml))
		var res *runner.Result
		if err == nil {
			res, err = runner.Run(sc)
		}
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one containing %q", c.uec, err, c.err)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v, want no error", c.uec, err)
			continue
		}
		got := strings.Join(res.Summary.Transport.Warnings, "; ")
		if c.warn != "" && !strings.Contains(got, c.warn) || c.warn == "" && strings.Contains(got, "transport.uec") {
			t.Errorf("%s at %s: warnings %q, want %q", c.uec, c.engine, got, c.warn)
		}
	}
}
