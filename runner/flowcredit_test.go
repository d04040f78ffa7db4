package runner

import (
	"fmt"
	"math"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/ib"
)

// ibWire and ibPayload are a full InfiniBand data packet's wire and payload bytes at the
// default 4,096-byte payload (LRH + BTH + ICRC + VCRC headers).
const (
	ibPayload = 4096
	ibWire    = ibPayload + ib.HeaderBytes
)

// TestFlowCreditRateOneLink: at flow level one InfiniBand transfer between two hosts under
// one T0 runs at the credit-limited rate of its slowest hop, the closed form
// fabric.CreditRate (buffer per VL over the credit round trip, as the packet level's credit
// loop runs it) times the payload share, across buffers per VL of 8 KiB..1 MiB, links of
// 100G..800G and hops of 1 us and 10 us (2 km of fibre: long cables); a buffer that covers the
// round trip leaves the link at its line rate. The ib defaults (128 KiB per VL scaled by
// rate) cover 1 us hops and not 10 us ones, where the block's own HopRate is the reference.
// Before the flow level read transport.HopRateLimiter it ran every case at line rate.
func TestFlowCreditRateOneLink(t *testing.T) {
	for _, delay := range []sim.Time{sim.Microsecond, 10 * sim.Microsecond} {
		for _, buf := range []sim.Size{0, 8 << 10, 16 << 10, 32 << 10, 128 << 10, 1 << 20} {
			for _, g := range []int64{100, 200, 400, 800} {
				rate := sim.Rate(g) * sim.Gbps
				credits := "" // buf 0: the ib defaults
				if buf > 0 {
					credits = fmt.Sprintf(", ib: {credits: {buffer_per_vl: %dB, host_buffer_per_vl: %dB}}", buf, buf)
				}
				yaml := func(bytes int64) string {
					return fmt.Sprintf(`name: credit-one
topology:
  clos: {tiers: 2, planes: 1, radix: 8, hosts: 8, host_link: %dGbps, hop_latency: %v}
transport: {kind: ib%s}
traffic:
  - {pattern: flows, flows: [{src: 0, dst: 1, bytes: %dB}]}
run: {seed: 1, engine: flow}
`, g, delay, credits, bytes)
				}
				hop := fabric.CreditRate(rate, delay, buf, ibWire)
				if buf == 0 {
					sc, err := scenario.Parse([]byte(yaml(1 << 20)))
					if err != nil {
						t.Fatal(err)
					}
					l := sc.Transport.Block().(transport.HopRateLimiter)
					hop = min(l.HopRate(rate, delay, false), l.HopRate(rate, delay, true))
				}
				want := float64(hop) * ibPayload / ibWire // payload bits/s
				// Bytes for 100 round trips at the expected rate: the path's latency is about 1%.
				bytes := int64(want * 100 * 2 * 2 * delay.Seconds() / 8)
				tr := mustRun(t, yaml(bytes)).Summary.Transport
				if tr.FlowsCompleted != 1 {
					t.Fatalf("%v, %v, %dG: %d of 1 transfers done", delay, buf, g, tr.FlowsCompleted)
				}
				got := float64(bytes) * 8 / (tr.JCTUs * 1e-6)
				t.Logf("hop %v, buffer %v at %dG: closed form %.2f Gb/s payload (credit-limited %v), flow level %.2f Gb/s (JCT %.1f us)", delay, buf, g, want/1e9, hop < rate, got/1e9, tr.JCTUs)
				if math.Abs(got/want-1) > 0.02 || got > want {
					t.Errorf("hop %v, buffer %v at %dG: flow level %.3f Gb/s; want the closed form %.3f Gb/s, less the latency's < 2%%", delay, buf, g, got/1e9, want/1e9)
				}
			}
		}
	}
}

// TestFlowCreditAgreesWithPacket: with 8 KiB per VL (credit-limited at 400G and 800G over
// 1 us hops) a permutation and an incast at flow level end (JCT) within 10% of the packet
// level, as lockstep compare --engines compares them (measured: permutation x0.904, incast
// x1.008). The mean FCT is logged, not held: the packet level's credit-blocked VL buffers
// and arbitration share a link unevenly between the flows on it (some finish early, some
// late), where max-min gives them equal rates (incast mean FCT x1.32).
func TestFlowCreditAgreesWithPacket(t *testing.T) {
	if testing.Short() {
		t.Skip("packet-level runs")
	}
	const base = `name: credit-agree
topology:
  clos: {tiers: 2, planes: 1, radix: 8, hosts: 32, host_link: %s, hop_latency: 1us}
transport: {kind: ib, ib: {credits: {buffer_per_vl: 8KiB}}}
traffic:
%s
run: {seed: 1, engine: %s}
`
	incast := "  - {pattern: incast, receiver: 0, senders: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], bytes: 128KB}"
	for _, c := range []struct{ name, rate, traffic string }{
		{"permutation 400G", "400Gbps", "  - {pattern: permutation, bytes: 1MB}"},
		{"permutation 800G", "800Gbps", "  - {pattern: permutation, bytes: 1MB}"},
		{"incast 800G", "800Gbps", incast},
	} {
		pk := mustRun(t, fmt.Sprintf(base, c.rate, c.traffic, "packet")).Summary
		fl := mustRun(t, fmt.Sprintf(base, c.rate, c.traffic, "flow")).Summary
		pe, fe := pk.Transport.JCTUs, fl.Transport.JCTUs
		pm, fm := pk.Transport.FCTMeanUs, fl.Transport.FCTMeanUs
		t.Logf("%s: JCT packet %.1f us, flow %.1f us (x%.3f); mean FCT packet %.1f us, flow %.1f us (x%.3f)", c.name, pe, fe, fe/pe, pm, fm, fm/pm)
		if pk.Transport.FlowsCompleted != pk.Transport.Flows || fl.Transport.FlowsCompleted != fl.Transport.Flows {
			t.Fatalf("%s: done packet %d/%d, flow %d/%d", c.name, pk.Transport.FlowsCompleted, pk.Transport.Flows, fl.Transport.FlowsCompleted, fl.Transport.Flows)
		}
		if math.Abs(fe/pe-1) > 0.10 {
			t.Errorf("%s: flow-level JCT %.1f us vs packet level %.1f us: x%.3f, want within 10%%", c.name, fe, pe, fe/pe)
		}

	}
}
