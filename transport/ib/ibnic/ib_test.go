package ibnic_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/ib"
	"github.com/lockstepsim/lockstep/transport/ib/ibnic"
)

func run(t *testing.T, y string) *runner.Result {
	t.Helper()
	sc, err := scenario.Parse([]byte(y))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, y)
	}
	res, err := runner.Run(sc)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

// incastYAML is a k -> 1 incast of 100 KB each over InfiniBand on a 3-tier k=16 fat tree
// (1,024 hosts, 100G, 1 us hops), senders spread over the fabric.
func incastYAML(k int) string {
	var s []string
	for i := 0; i < k; i++ {
		s = append(s, fmt.Sprint(1+4*i))
	}
	return fmt.Sprintf(`name: ib-incast-%d
topology:
  clos: {tiers: 3, planes: 1, radix: 16, host_link: 100Gbps, hop_latency: 1us}
transport: {kind: ib}
traffic:
  - {pattern: incast, receiver: 0, bytes: 100KB, senders: [%s]}
run: {seed: 1}
`, k, strings.Join(s, ", "))
}

// TestIncastLossless: InfiniBand's credits keep 8 -> 1, 64 -> 1 and 255 -> 1 incasts free of
// drops, every transfer completes without a retransmission, the receiver's link runs at line
// rate (JCT within 3% of the bytes at line rate), credits.csv is written with blocked ports
// in it and summary.json sums the blocked time (credit_blocked_*).
func TestIncastLossless(t *testing.T) {
	for _, k := range []int{8, 64, 255} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			res := run(t, incastYAML(k))
			s := res.Summary
			tr := s.Transport
			if s.DroppedPackets != 0 || tr.FlowsCompleted != k || tr.RetxPackets != 0 || tr.QPErrors != 0 {
				t.Fatalf("drops %d, completed %d of %d, retx %d, QP errors %d", s.DroppedPackets, tr.FlowsCompleted, k, tr.RetxPackets, tr.QPErrors)
			}
			line := float64(k) * 100e3 * 8 / 100e9 * 1e6 // us of payload at line rate
			if tr.JCTUs > 1.03*line+20 {
				t.Fatalf("JCT %.1f us; the payload at line rate needs %.1f us", tr.JCTUs, line)
			}
			var files []string
			var csv strings.Builder
			for _, f := range res.Endpoint.Files() {
				files = append(files, f.Name)
				if f.Name == "credits.csv" {
					if err := f.Write(&csv); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !strings.HasPrefix(csv.String(), "port,node,rate_gbps,blocked_us") {
				t.Fatalf("files %v; credits.csv starts %.80q", files, csv.String())
			}
			if k >= 64 && !strings.Contains(csv.String(), ".up") {
				t.Fatalf("no uplink in credits.csv of a %d -> 1 incast", k)
			}
			// Blocked time per port, summed in summary.json (credit_blocked_*).
			d, _ := tr.Detail.(*ibnic.Detail)
			if d == nil || d.CreditBlockedPorts == 0 || d.CreditBlockedUsTotal < d.CreditBlockedUsMax || d.CreditBlockedUsMax <= 0 || d.CreditBlockedMaxPort == "" {
				t.Fatalf("credit blocked figures %+v; want blocked ports in a %d -> 1 incast", d, k)
			}
			t.Logf("%d -> 1: JCT %.1f us (line %.1f), %d ports blocked for credits, %.1f us in all, most %s %.1f us", k, tr.JCTUs, line, d.CreditBlockedPorts, d.CreditBlockedUsTotal, d.CreditBlockedMaxPort, d.CreditBlockedUsMax)
		})
	}
}

// TestRingAllReduceClosedForm: a ring all-reduce of 16 MiB over 8 hosts at 400G runs within
// 2% of its closed form (the collective row's model_us), with no drops.
func TestRingAllReduceClosedForm(t *testing.T) {
	res := run(t, `name: ib-ar
topology:
  clos: {tiers: 2, planes: 1, radix: 8, hosts: 8, host_link: 400G, hop_latency: 500ns}
transport: {kind: ib}
workload:
  collectives:
    - {name: ar, op: all_reduce, algorithm: ring, ranks: 8, bytes: 16MiB}
run: {seed: 2}
`)
	c := res.Summary.Collectives
	if len(c) != 1 || res.Summary.DroppedPackets != 0 {
		t.Fatalf("rows %d, drops %d", len(c), res.Summary.DroppedPackets)
	}
	if r := c[0].TimeUs / c[0].ModelUs; math.Abs(r-1) > 0.02 {
		t.Fatalf("time %.1f us, closed form %.1f us (x%.3f)", c[0].TimeUs, c[0].ModelUs, r)
	}
}

// TestDeterminism: the same scenario and seed give a byte-identical summary.
func TestDeterminism(t *testing.T) {
	a, b := run(t, incastYAML(64)), run(t, incastYAML(64))
	ja, _ := json.Marshal(a.Summary.Transport)
	jb, _ := json.Marshal(b.Summary.Transport)
	if string(ja) != string(jb) {
		t.Fatalf("two runs differ:\n%s\n%s", ja, jb)
	}
}

// TestCreditCheckWarns: a scenario's switch queue limit below what the credits let a switch's
// ingresses hold draws a pre-run warning naming the egress (drop-tail could act, so the run
// may not be lossless); the ib profile's own limits draw none.
func TestCreditCheckWarns(t *testing.T) {
	const y = "topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\ntransport: {kind: ib}\n%s" +
		"traffic: [{pattern: permutation, bytes: 256KB}]\n"
	warned := func(res *runner.Result) bool {
		for _, w := range res.Summary.Transport.Warnings {
			if strings.Contains(w, "transport.ib.credits: cannot be lossless: egress") {
				return true
			}
		}
		return false
	}
	if res := run(t, fmt.Sprintf(y, "")); warned(res) {
		t.Errorf("ib profile: warnings %q; want no credit warning", res.Summary.Transport.Warnings)
	}
	if res := run(t, fmt.Sprintf(y, "fabric: {switch_queue: {limit: 64KB}}\n")); !warned(res) {
		t.Errorf("64 KB switch queues: warnings %q; want the credit warning", res.Summary.Transport.Warnings)
	}
}

// TestCreditBufferBelowPacket: a buffer per VL that holds fewer credit blocks than the largest
// packet is refused when the scenario is read (it could never be sent; the run would only
// stall), naming the field, the value and the least allowed, for switch and host buffers.
func TestCreditBufferBelowPacket(t *testing.T) {
	for _, c := range []struct{ block, field string }{
		{"buffer_per_vl: 1KB", "transport.ib.credits.buffer_per_vl: 1000B"},
		{"host_buffer_per_vl: 4KB", "transport.ib.credits.host_buffer_per_vl: 4000B"},
	} {
		_, err := scenario.Parse([]byte("topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\n" +
			"transport: {kind: ib, ib: {credits: {" + c.block + "}}}\ntraffic: [{pattern: permutation, bytes: 256KB}]\n"))
		if err == nil || !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), "allowed at least 4160B") {
			t.Errorf("%s: %v; want an error naming %s and the least allowed", c.block, err, c.field)
		}
	}
}

// TestIncast1023Preset [issue 19: "zero drops under any incast in the test suite (8 -> 1 to
// 1000+ -> 1)"]: the ib-incast-1023 preset (lockstep bench ib-incast-1023) completes all
// 1,023 transfers with no drop and no retransmission, its JCT within 3% of the payload at
// line rate.
func TestIncast1023Preset(t *testing.T) {
	if testing.Short() {
		t.Skip("1,023 senders")
	}
	sc, err := scenario.Preset("ib-incast-1023")
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	s, tr := res.Summary, res.Summary.Transport
	line := 1023 * 100e3 * 8 / 100e9 * 1e6
	d, _ := tr.Detail.(*ibnic.Detail)
	t.Logf("1023 -> 1: drops %d, done %d, retx %d, JCT %.1f us (payload at line rate %.1f us), blocked ports %d", s.DroppedPackets, tr.FlowsCompleted, tr.RetxPackets, tr.JCTUs, line, d.CreditBlockedPorts)
	if s.DroppedPackets != 0 || tr.FlowsCompleted != 1023 || tr.RetxPackets != 0 || tr.JCTUs > 1.03*line {
		t.Errorf("drops %d, done %d of 1023, retx %d, JCT %.1f us (line %.1f)", s.DroppedPackets, tr.FlowsCompleted, tr.RetxPackets, tr.JCTUs, line)
	}
}

// TestAutoDurationCreditLimited [issue 19]: with credits that cannot cover a link's credit
// round trip (8 KiB per VL at 800G over 1 us hops: one 4,122-byte packet per 2.04 us, 16.2
// Gb/s a hop, fabric.CreditRate) the automatic run.duration sizes the transfers at that rate
// (scenario's transferRate through transport.HopRateLimiter), so every transfer finishes; at
// line rate it was 1 ms and none did.
func TestAutoDurationCreditLimited(t *testing.T) {
	res := run(t, `name: ib-credit-auto
topology:
  clos: {tiers: 2, planes: 1, radix: 8, hosts: 32, host_link: 800Gbps, hop_latency: 1us}
transport: {kind: ib, ib: {credits: {buffer_per_vl: 8KiB}}}
traffic:
  - {pattern: permutation, bytes: 2MB}
run: {seed: 1}
`)
	tr := res.Summary.Transport
	if tr.FlowsCompleted != tr.Flows || tr.Flows != 32 {
		t.Fatalf("%d of %d transfers done (want 32 of 32) by the automatic run.duration", tr.FlowsCompleted, tr.Flows)
	}
	hop := 4122 * 8 / ((800 * sim.Gbps).TxTime(4122) + 2*sim.Microsecond + (800 * sim.Gbps).TxTime(6)).Seconds()
	t.Logf("JCT %.1f us; 2 MB at %.1f Gb/s a hop: %.1f us", tr.JCTUs, hop/1e9, 2e6*8/hop*1e6)
}

// TestInertSettingsWarn: settings that are legal under InfiniBand but do nothing draw a
// pre-run warning naming the field, kept in summary.json: ECN marking without
// transport.ib.cc (no rate reacts to FECN), switch trimming (IB data is never trimmable),
// and cc parameters with cc.enabled false; the defaults, and ECN under cc, draw none.
func TestInertSettingsWarn(t *testing.T) {
	const y = "topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\n%stransport: {kind: ib%s}\n" +
		"traffic: [{pattern: permutation, bytes: 64KB}]\n"
	ecn := "fabric: {switch_queue: {ecn: {enabled: true, kmin: 20KB, kmax: 200KB, pmax: 0.2}}}\n"
	trim := "fabric: {switch_queue: {trim: {enabled: true, threshold: 100KB}}}\n"
	for _, c := range []struct {
		name, fab, ib string
		want          []string // substrings, one warning each; nil: no warning of these kinds
	}{
		{"defaults", "", "", nil},
		{"ecn without cc", ecn, "", []string{"fabric.switch_queue.ecn: enabled under transport ib without transport.ib.cc"}},
		{"ecn with cc", ecn, ", ib: {cc: {enabled: true}}", nil},
		{"trim", trim, "", []string{"fabric.switch_queue.trim: enabled under transport ib: InfiniBand data packets are never trimmable"}},
		{"cc off with parameters", "", ", ib: {cc: {enabled: false, threshold: 32KiB, ccti_limit: 64}}", []string{"transport.ib.cc: threshold 32KiB, ccti_limit 64 given with enabled false"}},
		{"cc off alone", "", ", ib: {cc: {enabled: false}}", nil},
	} {
		res := run(t, fmt.Sprintf(y, c.fab, c.ib))
		var got []string
		for _, w := range res.Summary.Transport.Warnings {
			if strings.Contains(w, ".ecn:") || strings.Contains(w, ".trim:") || strings.HasPrefix(w, "transport.ib.cc:") {
				got = append(got, w)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: warnings %q; want %d containing %q", c.name, got, len(c.want), c.want)
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: warning %q; want it to contain %q", c.name, got[i], w)
			}
		}
	}
}

// TestCreditLimitedIncastClosedForm: an incast into one host adapter whose credits cannot
// cover the credit round trip (8 KiB per VL at 800G, 1 us hops) drains at the last hop's
// credit rate, fabric.CreditRate (one 4,122-byte packet per 2.04 us: 16.2 Gb/s), so its JCT
// is the bytes over that rate, within 3%; the automatic run.duration, sized at the same
// rate, lets it finish (at line rate it stopped the run with most transfers unfinished).
func TestCreditLimitedIncastClosedForm(t *testing.T) {
	const n, size = 31, 256000
	senders := make([]string, n)
	for i := range senders {
		senders[i] = fmt.Sprint(i + 1)
	}
	res := run(t, fmt.Sprintf(`name: ib-credit-incast
topology:
  clos: {tiers: 2, planes: 1, radix: 8, hosts: 32, host_link: 800Gbps, hop_latency: 1us}
transport: {kind: ib, ib: {credits: {buffer_per_vl: 8KiB}}}
traffic:
  - {pattern: incast, receiver: 0, senders: [%s], bytes: %d}
run: {seed: 1}
`, strings.Join(senders, ", "), size))
	tr := res.Summary.Transport
	if tr.FlowsCompleted != n || res.Summary.DroppedPackets != 0 {
		t.Fatalf("%d of %d done, %d drops; want all, none", tr.FlowsCompleted, n, res.Summary.DroppedPackets)
	}
	c := ib.Config{}.WithDefaults()
	_, wire := c.DataPacketBytes()
	rate := fabric.CreditRate(800*sim.Gbps, sim.Microsecond, 8<<10, wire)
	want := float64(n*size) * 8 / float64(rate) * 1e6
	t.Logf("JCT %.1f us; %d x %d B at the credit rate %.2f Gb/s: %.1f us (x%.4f)", tr.JCTUs, n, size, float64(rate)/1e9, want, tr.JCTUs/want)
	if math.Abs(tr.JCTUs/want-1) > 0.03 {
		t.Errorf("JCT %.1f us; want the credit-limited closed form %.1f us within 3%%", tr.JCTUs, want)
	}
}
