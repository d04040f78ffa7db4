package ibnic_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestConfigWarnings: settings that are legal but inert or harmful draw one pre-run warning
// each, naming the field, kept in summary.json's warnings (and printed before the run):
// out_of_order.enabled written false under adaptive routing (packet and flow level),
// credit settings with credits.enabled false, and fabric.adaptive_routing fields with its
// enabled false. Clean default scenarios (with and without adaptive routing, at packet and
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
