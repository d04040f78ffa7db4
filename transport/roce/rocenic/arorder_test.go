package rocenic_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
)

// TestOutOfOrderFollowsAR: under fabric.adaptive_routing, RoCE's responder places reordered
// packets unless transport.roce.out_of_order.enabled is written false (roce.Config.ForFabric):
// a permutation on AR switches with the block left out resends nothing and warns nothing,
// while written false it resends (go-back-N on every reorder) and warns, at packet and flow
// level; without adaptive routing the default stays in order and quiet.
func TestOutOfOrderFollowsAR(t *testing.T) {
	const y = "topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\nfabric: {%s}\ntransport: {kind: roce%s}\n" +
		"traffic: [{pattern: permutation, bytes: 1MiB}]\nrun: {engine: %s}\n"
	const ar = "adaptive_routing: {enabled: true}"
	const off = ", roce: {out_of_order: {enabled: false}}"
	for _, c := range []struct {
		name, fab, block string
		flow             bool
		wantRetx         bool   // packet level: resends expected
		warn             string // "": no warning
	}{
		{"static, default", "", "", false, false, ""},
		{"AR, default", ar, "", false, false, ""},
		{"AR, window only", ar, ", roce: {out_of_order: {window: 512}}", false, false, ""},
		{"AR, written off", ar, off, false, true, "transport.roce.out_of_order.enabled: false with fabric.adaptive_routing on"},
		{"AR, default, flow level", ar, "", true, false, ""},
		{"AR, written off, flow level", ar, off, true, false, "at flow level each QP then keeps one hashed path"},
	} {
		engine := "packet"
		if c.flow {
			engine = "flow"
		}
		sc, err := scenario.Parse([]byte(fmt.Sprintf(y, c.fab, c.block, engine)))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		res, err := runner.Run(sc)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		s := res.Summary.Transport
		if s == nil {
			t.Fatalf("%s: no transport summary", c.name)
		}
		w := s.Warnings
		switch {
		case c.warn == "" && len(w) != 0:
			t.Errorf("%s: warnings %q; want none", c.name, w)
		case c.warn != "" && (len(w) != 1 || !strings.Contains(w[0], c.warn)):
			t.Errorf("%s: warnings %q; want one containing %q", c.name, w, c.warn)
		}
		if c.flow {
			continue
		}
		if got := s.RetxPackets > 0; got != c.wantRetx {
			t.Errorf("%s: %d packets resent; want resends %v", c.name, s.RetxPackets, c.wantRetx)
		}
		if s.FlowsCompleted != s.Flows {
			t.Errorf("%s: %d of %d transfers done", c.name, s.FlowsCompleted, s.Flows)
		}
	}
}
