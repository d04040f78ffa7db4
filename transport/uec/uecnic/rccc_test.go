package uecnic_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/transport/uec/uecnic"
)

// incastYAML is an N -> 1 incast of 256 KiB per source on a 2-tier Clos of 256 hosts
// (100G, 1 us per link) under transport.uec.cc = %s.
func incastYAML(n int, cc string) string {
	senders := make([]string, n)
	for i := range senders {
		senders[i] = fmt.Sprint(i + 1)
	}
	return fmt.Sprintf(`topology: {clos: {tiers: 2, radix: 32, planes: 1, hosts: 256, host_link: 100G, hop_latency: 1us}}
transport: {kind: uec, uec: {cc: %s}}
traffic: [{pattern: incast, receiver: 0, bytes: 256KiB, senders: [%s]}]
run: {seed: 1}
`, cc, strings.Join(senders, ", "))
}

// TestRCCCIncast is issue 20's RCCC acceptance at N = 8, 64, 255 (N = 1,023 is the preset
// uec-incast-1023-rccc): with receiver credit (cc rccc and nscc+rccc) the last completion is
// within 3% of N x S / C + base RTT, and the fabric trims at most a fifth of what NSCC alone
// trims; the credit packets are on the wire and counted.
func TestRCCCIncast(t *testing.T) {
	const S = 256 << 10
	for _, n := range []int{8, 64, 255} {
		if n == 255 && testing.Short() {
			continue
		}
		base := run(t, incastYAML(n, "nscc"))
		bs := complete(t, fmt.Sprint("nscc ", n), base)
		for _, cc := range []string{"rccc", "nscc+rccc"} {
			name := fmt.Sprintf("%s %d", cc, n)
			res := run(t, incastYAML(n, cc))
			s := complete(t, name, res)
			bound := float64(n)*S*8/100e9*1e6 + s.BaseRTTUs
			d := s.Detail.(*uecnic.Detail)
			trims, nsccTrims := res.Summary.TrimmedPackets, base.Summary.TrimmedPackets
			t.Logf("%s: last completion %.1f us, bound N*S/C + base RTT %.1f us (%+.2f%%); trims %d (nscc alone %d, last completion %.1f us); credit packets %d, requests %d",
				name, s.JCTUs, bound, 100*(s.JCTUs/bound-1), trims, nsccTrims, bs.JCTUs, d.CreditsSent, d.CreditRequests)
			if math.Abs(s.JCTUs/bound-1) > 0.03 {
				t.Errorf("%s: last completion %.1f us, want within 3%% of N x S / C + base RTT = %.1f us", name, s.JCTUs, bound)
			}
			if trims*5 > nsccTrims {
				t.Errorf("%s: %d packets trimmed, want at most a fifth of NSCC alone's %d", name, trims, nsccTrims)
			}
			if d.CC != cc || d.CreditsSent == 0 || d.CreditGrantedBytes == 0 {
				t.Errorf("%s: detail cc %q, %d credit packets, %d B granted; want cc %s and credit on the wire", name, d.CC, d.CreditsSent, d.CreditGrantedBytes, cc)
			}
		}
	}
}

// TestRCCCIncastFlowLevel is issue 20's RCCC at flow level: under cc rccc the destination
// paces credit at its link rate C, so an N -> 1 incast's sources share C exactly as the flow
// level's max-min rates do, and the fluid answer is the closed form N x S x (wire / payload)
// / C + base RTT (the data headers are the only overhead on the bottleneck: credit packets
// travel the receiver's uplink, opposite to the data). The flow level must land between
// N x S x (wire / payload) / C and that plus the base RTT of the longest path (the senders of
// N = 8 share the receiver's T0: their round trip is shorter), and the packet level within
// 10% of the flow level, at N in {8, 64, 255}.
func TestRCCCIncastFlowLevel(t *testing.T) {
	const S = 256 << 10
	for _, n := range []int{8, 64, 255} {
		if n == 255 && testing.Short() {
			continue
		}
		y := incastYAML(n, "rccc")
		pkt := complete(t, fmt.Sprint("packet ", n), run(t, y))
		fl := complete(t, fmt.Sprint("flow ", n), run(t, strings.Replace(y, "run: {seed: 1}", "run: {seed: 1, engine: flow}", 1)))
		wire := 1 + pkt.HeaderOverheadPct/(100-pkt.HeaderOverheadPct) // wire / payload of a full packet
		drain := float64(n) * S * wire * 8 / 100e9 * 1e6
		t.Logf("rccc %d: packet %.1f us, flow %.1f us (%.4f), closed form N x S x wire/payload / C %.1f us (+ base RTT %.1f us)",
			n, pkt.JCTUs, fl.JCTUs, fl.JCTUs/pkt.JCTUs, drain, drain+fl.BaseRTTUs)
		if fl.JCTUs < drain || fl.JCTUs > drain+fl.BaseRTTUs+1e-3 {
			t.Errorf("rccc %d: flow level %.1f us, want in [%.1f, %.1f] us (N x S x wire/payload / C, + base RTT)", n, fl.JCTUs, drain, drain+fl.BaseRTTUs)
		}
		if math.Abs(fl.JCTUs/pkt.JCTUs-1) > 0.10 {
			t.Errorf("rccc %d: flow %.1f us vs packet %.1f us, want within 10%%", n, fl.JCTUs, pkt.JCTUs)
		}
	}
}
