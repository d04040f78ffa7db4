package ibnic_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
)

// slYAML is two traffic groups into h0 of a 2-tier radix-8 tree (100G, 3 queue classes:
// VL 0 for ACKs, VL 1 and 2 for data): h1 -> h0 on SL 1 (VL 1) and h2 -> h0 on SL 2
// (VL 2), 4 MB each from t = 0, so they share the T0's downlink into h0; credits is the
// transport.ib.credits block (its VL arbitration tables).
func slYAML(credits string) string {
	return fmt.Sprintf(`name: sl
topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}
fabric: {switch_queue: {classes: 3}, nic_queue: {classes: 3}}
transport: {kind: ib, ib: {traffic_sl: [1, 2], sl_to_vl: [1, 1, 2], credits: {%s}}}
traffic:
  - {pattern: flows, flows: [{src: 1, dst: 0, bytes: 4MB}]}
  - {pattern: flows, flows: [{src: 2, dst: 0, bytes: 4MB}]}
run: {seed: 1}
`, credits)
}

// vlShare runs slYAML(credits) and returns the share of the shared link the VL 1 flow got
// while both ran: with equal sizes, the first to finish had rate B / FCT1 and both together
// 2B / FCT2 (the link stays full), so its share is FCT2 / (2 FCT1); and the two flows' VLs
// as the fabric saw them.
func vlShare(t *testing.T, credits string) (share float64, res *runner.Result) {
	t.Helper()
	res = run(t, slYAML(credits))
	fl := res.Endpoint.Flows()
	if len(fl) != 2 || fl[0].Done == 0 || fl[1].Done == 0 || res.Summary.DroppedPackets != 0 {
		t.Fatalf("%s: flows %+v, drops %d", credits, fl, res.Summary.DroppedPackets)
	}
	a, b := float64(fl[0].Done-fl[0].Start), float64(fl[1].Done-fl[1].Start)
	if a <= b {
		return b / (2 * a), res
	}
	return 1 - a/(2*b), res
}

// TestServiceLevelsShareByWeight [issue 19: "SL -> VL mapping, a VL arbiter with high/low
// priority weighted round robin"]: two traffic groups on different SLs land on different
// VLs (sl_to_vl), and the VL arbitration tables share the link between them by weight
// [IBTA vol 1 §7.6.9]: weights 192:64 (3 packets to 1 of 4,138 B, since an entry may start a
// packet while it has weight left) give the VL 1 flow 3/4 of the link, 64:192 1/4, equal
// weights 1/2; with VL 2 in the high table (high_limit 255, unlimited) it gets nearly all
// the link, and high_limit 0 (one high packet, then a waiting low one) halves that.
// Without tables (strict priority, lowest VL first) VL 1 takes it all.
func TestServiceLevelsShareByWeight(t *testing.T) {
	for _, c := range []struct {
		name     string
		credits  string
		lo, hi   float64 // VL 1's share
		wantVLs2 bool
	}{
		{"weights 3:1", "high: [{vl: 0, weight: 255}], low: [{vl: 1, weight: 192}, {vl: 2, weight: 64}], high_limit: 255", 0.70, 0.80, true},
		{"weights 1:3", "high: [{vl: 0, weight: 255}], low: [{vl: 1, weight: 64}, {vl: 2, weight: 192}], high_limit: 255", 0.20, 0.30, true},
		{"weights 1:1", "high: [{vl: 0, weight: 255}], low: [{vl: 1, weight: 64}, {vl: 2, weight: 64}], high_limit: 255", 0.45, 0.55, true},
		{"VL 2 high, unlimited", "high: [{vl: 0, weight: 255}, {vl: 2, weight: 64}], low: [{vl: 1, weight: 255}], high_limit: 255", 0, 0.1, true},
		{"VL 2 high, high_limit 0", "high: [{vl: 0, weight: 255}, {vl: 2, weight: 64}], low: [{vl: 1, weight: 255}], high_limit: 0", 0.4, 0.6, true},
		{"strict priority", "", 0.9, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			share, res := vlShare(t, c.credits)
			t.Logf("%s: VL 1 got %.3f of the link (%.2f:1); JCT %.1f us", c.name, share, share/(1-share), res.Summary.Transport.JCTUs)
			if share < c.lo || share > c.hi {
				t.Errorf("VL 1's share %.3f; want %.2f..%.2f", share, c.lo, c.hi)
			}
		})
	}
}

// TestServiceLevelVLs: the SL-to-VL map in force: the default (SL n -> VL 1 + n mod
// (classes - 1), VL 0 being the ACKs'), a written table, traffic_sl per group and sl for
// the rest; the VLs the fabric's queues saw match (per-VL credit blocks sent at h1's and
// h2's NIC ports).
func TestServiceLevelVLs(t *testing.T) {
	for _, c := range []struct {
		name, ib string
		classes  int
		want     [2]int // VL of h1's and h2's data
	}{
		{"default, 2 classes", "", 2, [2]int{1, 1}},
		{"sl 3, 4 classes", "sl: 3", 4, [2]int{1, 1}}, // 1 + 3 mod 3
		{"sl 1, 4 classes", "sl: 1", 4, [2]int{2, 2}}, // 1 + 1 mod 3
		{"traffic_sl, 4 classes", "traffic_sl: [1, 2]", 4, [2]int{2, 3}},
		{"traffic_sl, one group", "sl: 2, traffic_sl: [0]", 4, [2]int{1, 3}},
		{"sl_to_vl", "traffic_sl: [0, 1], sl_to_vl: [3, 0]", 4, [2]int{3, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := fmt.Sprintf(`topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}
fabric: {switch_queue: {classes: %d}, nic_queue: {classes: %d}}
transport: {kind: ib, ib: {%s}}
traffic:
  - {pattern: flows, flows: [{src: 1, dst: 4, bytes: 64KB}]}
  - {pattern: flows, flows: [{src: 2, dst: 5, bytes: 64KB}]}
`, c.classes, c.classes, c.ib)
			res := run(t, y)
			for i, h := range []string{"h1.p0", "h2.p0"} {
				pid, ok := res.Net.PortByName(h)
				if !ok {
					t.Fatalf("no port %s", h)
				}
				vls := res.Net.CreditVLBlocks(pid)
				got := -1
				for v, n := range vls {
					if n > 1000 { // the data, not an ACK or two
						got = v
					}
				}
				if got != c.want[i] {
					t.Errorf("%s: data on VL %d (blocks by VL %v); want VL %d", h, got, vls, c.want[i])
				}
			}
		})
	}
}

// TestVLArbitrationRefusesStarvedVL: VL arbitration tables that give a VL in use (VL 0 for
// ACKs, the data VL of every SL in use) no weight are an error before the run, naming the
// field, the VL and what is allowed (before, the QPs on it stalled: nothing is ever sent on
// a VL the tables do not serve); an SL mapped to a VL the switch queues lack too. Tables
// that cover every VL in use run.
func TestVLArbitrationRefusesStarvedVL(t *testing.T) {
	const y = "topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\nfabric: {switch_queue: {classes: %[1]d}, nic_queue: {classes: %[1]d}}\ntransport: {kind: ib, ib: {%s}}\ntraffic: [{pattern: permutation, bytes: 64KB}]\n"
	for _, c := range []struct {
		name    string
		classes int
		ib      string
		want    string // "": runs
	}{
		{"data VL 1 missing", 2, "credits: {low: [{vl: 0, weight: 4}]}", "transport.ib.credits.high, low: VL 1, which carries data, has no entry of weight > 0"},
		{"data VL 1 weight 0", 2, "credits: {high: [{vl: 1, weight: 0}], low: [{vl: 0, weight: 4}]}", "VL 1, which carries data"},
		{"ACK VL 0 missing", 2, "credits: {low: [{vl: 1, weight: 4}]}", "VL 0, which carries ACKs and NAKs"},
		{"SL 1's VL 2 missing", 3, "sl: 1, credits: {low: [{vl: 0, weight: 4}, {vl: 1, weight: 4}]}", "VL 2, which carries data"},
		{"VL beyond the classes", 2, "sl_to_vl: [2]", "transport.ib.sl_to_vl[0]: VL 2, but the switch queues have 2 classes"},
		{"management SL", 2, "sl: 15", "transport.ib.sl: 15 is the management SL"},
		{"traffic SL out of range", 2, "traffic_sl: [0, 16]", "transport.ib.traffic_sl[1]: 16 is out of range; allowed 0..14"},
		{"traffic SL for a group that does not exist", 2, "traffic_sl: [0, 1]", "transport.ib.traffic_sl: 2 entries for 1 traffic groups; allowed at most one per group"},
		{"covered", 2, "credits: {high: [{vl: 0, weight: 4}], low: [{vl: 1, weight: 4}]}", ""},
		{"covered, SL 1 on VL 2", 3, "sl: 1, credits: {low: [{vl: 0, weight: 4}, {vl: 2, weight: 4}]}", ""},
		{"escape VL of AR detours missing", 102, "credits: {high: [{vl: 0, weight: 4}], low: [{vl: 1, weight: 4}]}", "VL 2, the escape VL of adaptive routing's detours"},
		{"escape VL covered", 102, "credits: {high: [{vl: 0, weight: 4}], low: [{vl: 1, weight: 4}, {vl: 2, weight: 1}]}", ""},
		{"VL 2 folded at 2-class NICs", -3, "sl: 1, credits: {low: [{vl: 0, weight: 4}, {vl: 2, weight: 4}]}", "VL 1, which carries data (VL 2's packets, on ports whose queues have 2 classes"},
	} {
		yy := fmt.Sprintf(y, c.classes, c.ib)
		if c.classes > 100 { // c.classes - 100 classes, adaptive routing on (its escape VL one above)
			yy = strings.Replace(fmt.Sprintf(y, c.classes-100, c.ib), "fabric: {", "fabric: {adaptive_routing: {enabled: true}, ", 1)
		}
		if c.classes < 0 { // the switch queues with -classes, the NICs' with the default 2
			yy = strings.Replace(fmt.Sprintf(y, -c.classes, c.ib), "nic_queue: {classes: 3}", "nic_queue: {classes: 2}", 1)
		}
		sc, err := scenario.Parse([]byte(yy))
		if err == nil {
			_, err = runner.Run(sc)
		}
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v; want it to run", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v; want %q", c.name, err, c.want)
		}
	}
}
