package ibnic_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestConfigWarnings: settings that are legal but inert or harmful draw one pre-run warning
// each, naming the field, kept in summary.json's warnings (and printed before the run):
// out_of_order.enabled written false under adaptive routing (packet and flow level),
// credit settings with credits.enabled false, fabric.adaptive_routing fields with its
// enabled false (sm_delay alone: in force as fabric.reconvergence), high_limit without both
// VL arbitration tables, an IB CC threshold at or above a queue's limit or cc marking settings
// under a written ecn block, and out_of_order settings while placement is off. Clean default scenarios (with and without adaptive routing, at packet and
// flow level) have no warning at all.
func TestConfigWarnings(t *testing.T) {
	const y = "topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\nfabric: {%s}\ntransport: {kind: ib%s}\n" +
		"traffic: [{pattern: permutation, bytes: 64KB}]\nrun: {engine: %s}\n"
	const ar = "adaptive_routing: {enabled: true}"
	for _, c := range []struct {
		name, fab, ib string
		flow          bool
		want          string // "": no warning at all
	}{
		{"defaults", "", "", false, ""},
		{"defaults, flow level", "", "", true, ""},
		{"adaptive routing", ar, "", false, ""},
		{"adaptive routing, flow level", ar, "", true, ""},
		{"adaptive routing, out_of_order on", ar, ", ib: {out_of_order: {enabled: true}}", false, ""},
		{"credits off alone", "", ", ib: {credits: {enabled: false}}", false, ""},
		{"adaptive routing off alone", "adaptive_routing: {enabled: false}", "", false, ""},
		{"in order under AR", ar, ", ib: {out_of_order: {enabled: false}}", false, "transport.ib.out_of_order.enabled: false with fabric.adaptive_routing on: in-order delivery under adaptive routing: every packet AR reorders draws a sequence-error NAK"},
		{"in order under AR, flow level", ar, ", ib: {out_of_order: {enabled: false}}", true, "transport.ib.out_of_order.enabled: false with fabric.adaptive_routing on: in-order delivery under adaptive routing: at flow level"},
		{"buffer with credits off", "", ", ib: {credits: {enabled: false, buffer_per_vl: 64KiB}}", false, "transport.ib.credits: buffer_per_vl 64KiB given with enabled false"},
		{"host buffer with credits off", "", ", ib: {credits: {enabled: false, host_buffer_per_vl: 256KiB}}", false, "transport.ib.credits: host_buffer_per_vl 256KiB given with enabled false"},
		{"tables with credits off", "", ", ib: {credits: {enabled: false, high: [{vl: 1, weight: 4}], low: [{vl: 0, weight: 4}, {vl: 1, weight: 4}], high_limit: 4}}", false, "transport.ib.credits: high (1 entries), low (2 entries), high_limit 4 given with enabled false"},
		{"AR fields with AR off", "adaptive_routing: {enabled: false, threshold: 8KiB, notify_delay: 5us, detour: false}", "", false, "fabric.adaptive_routing: threshold 8KiB, notify_delay 5us, detour false given with enabled false"},
		{"AR threshold with AR off, flow level", "adaptive_routing: {enabled: false, threshold: 8KiB}", "", true, "fabric.adaptive_routing: threshold 8KiB given with enabled false"},
		{"sm_delay with AR off", "adaptive_routing: {enabled: false, sm_delay: 2s}", "", false, "fabric.adaptive_routing.sm_delay: 2s given with enabled false: it is not an adaptive routing setting but the subnet manager's route recomputation"},
		{"sm_delay with AR off, flow level", "adaptive_routing: {enabled: false, sm_delay: 500ms}", "", true, "in force (fabric.reconvergence 500ms); write fabric.reconvergence: 500ms instead"},
		{"sm_delay with AR on", "adaptive_routing: {enabled: true, sm_delay: 2s}", "", false, ""},
		{"sm_delay with reconvergence, AR off", "reconvergence: 2s, adaptive_routing: {enabled: false, sm_delay: 2s}", "", false, ""},
		{"reconvergence with AR off", "reconvergence: 2s, adaptive_routing: {enabled: false}", "", false, ""},
		{"high_limit without tables", "", ", ib: {credits: {high_limit: 4}}", false, "transport.ib.credits.high_limit: 4 given without VL arbitration tables (credits.high and low empty)"},
		{"high_limit without a low table", "", ", ib: {credits: {high: [{vl: 0, weight: 4}, {vl: 1, weight: 4}], high_limit: 8}}", false, "transport.ib.credits.high_limit: 8 given without a low-priority table (credits.low empty)"},
		{"high_limit without a high table", "", ", ib: {credits: {low: [{vl: 0, weight: 4}, {vl: 1, weight: 4}], high_limit: 255}}", false, "transport.ib.credits.high_limit: 255 given without a high-priority table (credits.high empty)"},
		{"high_limit with both tables", "", ", ib: {credits: {high: [{vl: 0, weight: 4}], low: [{vl: 1, weight: 4}], high_limit: 4}}", false, ""},
		{"tables without high_limit", "", ", ib: {credits: {high: [{vl: 0, weight: 4}, {vl: 1, weight: 4}]}}", false, ""},
		{"cc on", "", ", ib: {cc: {enabled: true}}", false, ""},
		{"cc on, flow level", "", ", ib: {cc: {enabled: true}}", true, ""},
		{"cc threshold within the queue", "switch_queue: {limit: 2MiB}", ", ib: {cc: {enabled: true, threshold: 1MiB}}", false, ""},
		{"cc threshold at the queue limit", "switch_queue: {limit: 2MiB}", ", ib: {cc: {enabled: true, threshold: 2MiB}}", false, "transport.ib.cc.threshold: 2MiB, but fabric.switch_queue.limit is 2MiB: a queue never holds more than its limit"},
		{"cc threshold above the queue limit", "switch_queue: {limit: 2MiB}", ", ib: {cc: {enabled: true, threshold: 3MiB}}", false, "allowed below 2MiB: lower transport.ib.cc.threshold or raise fabric.switch_queue.limit"},
		{"cc threshold above the last hop only", "switch_queue: {limit: 8MiB}, last_hop_queue: {limit: 2MiB}", ", ib: {cc: {enabled: true, threshold: 4MiB}}", false, "transport.ib.cc.threshold: 4MiB, but fabric.last_hop_queue.limit is 2MiB"},
		{"cc marking under a written ecn", "switch_queue: {ecn: {enabled: true, kmin: 20KiB, kmax: 200KiB, pmax: 0.1}}", ", ib: {cc: {enabled: true, threshold: 32KiB, marking_rate: 3}}", false, "transport.ib.cc: threshold 32KiB, marking_rate 3 given, but fabric.switch_queue.ecn is written (kmin 20KiB, kmax 200KiB, pmax 0.1)"},
		{"cc defaults under a written ecn", "switch_queue: {ecn: {enabled: true, kmin: 20KiB, kmax: 200KiB, pmax: 0.1}}", ", ib: {cc: {enabled: true}}", false, ""},
		{"out_of_order window with AR off", "", ", ib: {out_of_order: {window: 4096}}", false, "transport.ib.out_of_order: window 4096 given while out-of-order placement is off (fabric.adaptive_routing is off and out_of_order.enabled follows it)"},
		{"out_of_order hold with AR off, flow level", "", ", ib: {out_of_order: {hold: 50us}}", true, "transport.ib.out_of_order: hold 50us given while out-of-order placement is off"},
		{"out_of_order fan-in with AR off", "", ", ib: {out_of_order: {hold_per_fan_in: 3us, fan_in_max: 4}}", false, "transport.ib.out_of_order: hold_per_fan_in 3us, fan_in_max 4 given while"},
		{"out_of_order window with enabled false", "", ", ib: {out_of_order: {enabled: false, window: 64}}", false, "(out_of_order.enabled is false)"},
		{"out_of_order window with AR on", ar, ", ib: {out_of_order: {window: 4096, hold: 50us}}", false, ""},
		{"out_of_order window with enabled true", "", ", ib: {out_of_order: {enabled: true, window: 4096}}", false, ""},
		{"fan_in_max with a fixed hold", ar, ", ib: {out_of_order: {hold: 50us, fan_in_max: 4}}", false, "transport.ib.out_of_order.fan_in_max: 4 given with hold_per_fan_in 0: the hold does not grow"},
		{"fan_in_max with a growing hold", ar, ", ib: {out_of_order: {hold: 50us, hold_per_fan_in: 2us, fan_in_max: 4}}", false, ""},
		{"fan_in_max with the automatic hold", ar, ", ib: {out_of_order: {fan_in_max: 4}}", false, ""},
		{"AR, credits off", ar, ", ib: {credits: {enabled: false}}", false, ""},
	} {
		engine := "packet"
		if c.flow {
			engine = "flow"
		}
		res := run(t, fmt.Sprintf(y, c.fab, c.ib, engine))
		w := res.Summary.Transport.Warnings
		switch {
		case c.want == "" && len(w) != 0:
			t.Errorf("%s: warnings %q; want none", c.name, w)
		case c.want != "" && (len(w) != 1 || !strings.Contains(w[0], c.want)):
			t.Errorf("%s: warnings %q; want one containing %q", c.name, w, c.want)
		}
	}
}

// TestSLWarnings: traffic_sl giving two traffic groups different service levels that map to
// one data VL (the default 2 classes: every SL on VL 1; or a table mapping them together)
// draws one warning naming the SLs, the VL and what to change; SLs on different VLs, one SL
// for every group, or no traffic_sl draw none.
func TestSLWarnings(t *testing.T) {
	const y = "topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\nfabric: {switch_queue: {classes: %d}, nic_queue: {classes: %d}}\n" +
		"transport: {kind: ib, ib: {%s}}\ntraffic:\n  - {pattern: flows, flows: [{src: 1, dst: 4, bytes: 64KB}]}\n  - {pattern: flows, flows: [{src: 2, dst: 5, bytes: 64KB}]}\n"
	for _, c := range []struct {
		name, ib string
		classes  int
		want     string
	}{
		{"two SLs, 2 classes", "traffic_sl: [1, 2]", 2, "transport.ib.traffic_sl: [1 2], with sl 0, all map to VL 1 (fabric.switch_queue.classes 2, sl_to_vl []): the VL is what separates traffic"},
		{"two SLs mapped together", "traffic_sl: [1, 2], sl_to_vl: [2, 2, 2]", 4, "all map to VL 2 (fabric.switch_queue.classes 4, sl_to_vl [2 2 2])"},
		{"two SLs, 4 classes", "traffic_sl: [1, 2]", 4, ""},
		{"two SLs, 1 class", "traffic_sl: [1, 2]", 1, "all map to VL 0"},
		{"one SL for both", "traffic_sl: [3, 3]", 2, ""},
		{"sl only", "sl: 3", 2, ""},
		{"none", "", 2, ""},
	} {
		res := run(t, fmt.Sprintf(y, c.classes, c.classes, c.ib))
		w := res.Summary.Transport.Warnings
		switch {
		case c.want == "" && len(w) != 0:
			t.Errorf("%s: warnings %q; want none", c.name, w)
		case c.want != "" && (len(w) != 1 || !strings.Contains(w[0], c.want)):
			t.Errorf("%s: warnings %q; want one containing %q", c.name, w, c.want)
		}
	}
}
