package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/mrc"
)

// oneYAML is one transfer 9 -> 0 of %s bytes on a 16-host 8-plane 2-tier Clos under
// transport %s, with extra YAML %s appended.
const oneYAML = `
name: one
topology:
  clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100G, hop_latency: 500ns}
transport: {kind: %s}
traffic:
  - {pattern: flows, bytes: %s, flows: [{src: 9, dst: 0}]}
run: {duration: 2ms, sample_interval: 1us}
%s`

// The ideal FCT is a lower bound that a lone transfer on an idle fabric meets: wire bytes at
// the NIC line rate plus the round trip of its largest packet less that packet's first
// serialisation. A 1-byte transfer's round trip is a small packet's, not a full one's.
func TestIdealFCTIsTight(t *testing.T) {
	for _, kind := range []string{"mrc", "roce"} {
		for _, b := range []string{"1", "4KiB", "64KiB", "16MiB"} {
			res := mustRun(t, fmt.Sprintf(oneYAML, kind, b, ""))
			var got float64
			switch kind {
			case "mrc":
				got = res.Summary.mrcT().FCTOverIdealMax
			case "roce":
				got = res.Summary.roceT().FCTOverIdealMax
			}
			if got < 1 || got > 1.01 {
				t.Errorf("%s %s B alone: FCT/ideal %.3f; want 1 to 1.01 (the ideal is a tight lower bound)", kind, b, got)
			}
		}
	}
}

// A transfer that does not finish within the run leaves the JCT out (the job did not complete)
// and says so, rather than reporting the finished transfers' end as the JCT.
func TestJCTUnfinished(t *testing.T) {
	y := strings.Replace(fmt.Sprintf(oneYAML, "mrc", "64MiB", ""), "duration: 2ms", "duration: 100us", 1)
	y = strings.Replace(y, "flows: [{src: 9, dst: 0}]}", "flows: [{src: 9, dst: 0}]}\n  - {pattern: flows, bytes: 64KiB, flows: [{src: 10, dst: 1}]}", 1)
	res := mustRun(t, y)
	m := res.Summary.mrcT()
	if m.FlowsCompleted != 1 || m.Flows != 2 {
		t.Fatalf("completed %d of %d; want 1 of 2", m.FlowsCompleted, m.Flows)
	}
	if m.JCTUs != 0 {
		t.Errorf("JCT %.1f us with a transfer unfinished; want none", m.JCTUs)
	}
}

// A probe interval below the fabric's base RTT would count every probe lost: rejected before
// the run, naming the field and the RTT.
func TestMRCProbeIntervalBelowRTT(t *testing.T) {
	sc, err := scenario.Parse([]byte(fmt.Sprintf(oneYAML, "mrc", "1MiB", "")))
	if err != nil {
		t.Fatal(err)
	}
	sc.Transport.Block().(*mrc.Config).EV.ProbeInterval = 2000000 // 2 us, below the 5.4 us base RTT
	_, err = Run(sc)
	if err == nil || !strings.Contains(err.Error(), "transport.mrc.ev.probe_interval") || !strings.Contains(err.Error(), "base RTT") {
		t.Fatalf("err = %v; want a probe_interval error naming the base RTT", err)
	}
}

// A permanent NIC-port failure costs its flow 1/8 of its rate to the end: the fault table's
// goodput against the faultless twin is below 1 (compared while the twin still sent), and no
// recovery time is claimed; a loss fault on every link counts exactly the drops the fabric
// counted as loss.
func TestFaultCostPermanent(t *testing.T) {
	res := mustRun(t, fmt.Sprintf(oneYAML, "mrc", "16MiB", "faults:\n  - {at: 40us, link: h9.p3, action: down}"))
	if len(res.Summary.Faults) != 1 {
		t.Fatalf("%d fault rows; want 1", len(res.Summary.Faults))
	}
	c := res.Summary.Faults[0]
	if c.DuringFraction <= 0.8 || c.DuringFraction >= 0.95 {
		t.Errorf("goodput vs faultless %.3f; want about 7/8", c.DuringFraction)
	}
	if c.RecoverUs != nil {
		t.Errorf("recover %.1f us for a failure that costs 1/8 of the rate to the end; want none", *c.RecoverUs)
	}

	res = mustRun(t, strings.Replace(fmt.Sprintf(oneYAML, "mrc", "4MiB", "faults:\n  - {at: 0s, link: \"*\", action: loss, loss: 0.01}"), "hosts: 16", "hosts: 32", 1))
	if got, want := res.Summary.Faults[0].PacketsDropped, res.Summary.Drops["loss"]; got != want || want == 0 {
		t.Errorf("fault row counts %d drops, the fabric %d loss drops; want equal and > 0", got, want)
	}
}

// Sampling only observes: the queue-sampling interval (and a long run.duration, which
// lengthens the default one) leave every packet and completion where they were.
func TestSamplingDoesNotPerturb(t *testing.T) {
	const y = `
name: samp
topology:
  clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100G}
transport: {kind: mrc}
traffic:
  - {pattern: flows, bytes: 4MiB, flows: [{src: 0, dst: 9}, {src: 1, dst: 9}, {src: 2, dst: 9}]}
faults:
  - {at: 20us, link: h9.p2, action: flap, down_for: 5us, period: 30us, count: 2}
run: {%s}
`
	var ref *Summary
	for _, run := range []string{"sample_interval: 1us", "sample_interval: 7us", "duration: 2s"} {
		res := mustRun(t, fmt.Sprintf(y, run))
		s := &res.Summary
		if ref == nil {
			ref = s
			continue
		}
		if s.SentPackets != ref.SentPackets || s.mrcT().FCTMaxUs != ref.mrcT().FCTMaxUs || s.mrcT().FCTMeanUs != ref.mrcT().FCTMeanUs || s.DroppedPackets != ref.DroppedPackets {
			t.Errorf("%s: sent %d, dropped %d, FCT mean %.3f max %.3f us; with 1us sampling %d, %d, %.3f, %.3f",
				run, s.SentPackets, s.DroppedPackets, s.mrcT().FCTMeanUs, s.mrcT().FCTMaxUs, ref.SentPackets, ref.DroppedPackets, ref.mrcT().FCTMeanUs, ref.mrcT().FCTMaxUs)
		}
	}
}

// An ACK timeout below the base RTT would time out every packet: rejected before the run. Left
// out, the probe interval rises to twice the base RTT on a fabric whose round trip passes the
// 50us default, instead of rejecting the default.
func TestMRCTimersAgainstRTT(t *testing.T) {
	sc, err := scenario.Parse([]byte(fmt.Sprintf(oneYAML, "mrc", "1MiB", "")))
	if err != nil {
		t.Fatal(err)
	}
	sc.Transport.Block().(*mrc.Config).AckTimeoutExp = 1 // 2.048 us, below the 5.4 us base RTT
	if _, err = Run(sc); err == nil || !strings.Contains(err.Error(), "transport.mrc.ack_timeout_exp") {
		t.Fatalf("err = %v; want an ack_timeout_exp error", err)
	}
	slow := strings.Replace(fmt.Sprintf(oneYAML, "mrc", "1MiB", ""), "hop_latency: 500ns", "hop_latency: 10us", 1)
	sc, err = scenario.Parse([]byte(slow))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc)
	if err != nil {
		t.Fatalf("a fabric of 10us hops: %v", err)
	}
	if pi, rtt := sc.Transport.Block().(*mrc.Config).EV.ProbeInterval, res.mrcRun().BaseRTT(); pi < 2*rtt || rtt < 50*sim.Microsecond {
		t.Errorf("default probe interval %v on a fabric of base RTT %v; want at least twice that", pi, rtt)
	}
}
