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
