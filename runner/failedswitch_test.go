package runner

import (
	"fmt"
	"strings"
	"testing"
)

// TestDropsAtFailedSwitch: a fault of kind switch labels the drops at the failed switch
// (summary.json dropped_at_failed_switches_packets, part of drops_packets' link_down; under
// adaptive routing adaptive_routing.at_failed_switches_packets, the failed switch's own queued
// packets, said apart from the dead-link drops on the terminal line), with and without
// adaptive routing; a link fault, no fault, and a switch blackhole (its links stay up) label
// nothing.
func TestDropsAtFailedSwitch(t *testing.T) {
	const y = "name: failed-switch\ntopology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\n" +
		"fabric: {adaptive_routing: {enabled: %v}}\ntransport: {kind: ib}\ntraffic: [{pattern: permutation, bytes: 4MB}]\n%srun: {seed: 1}\n"
	for _, c := range []struct {
		name   string
		ar     bool
		faults string
		failed bool // drops labelled at a failed switch
		queued bool // under AR: the failed switch's own queued packets among them
	}{
		{"switch down, AR", true, "faults: [{switch: p0.t1-0, action: down, at: 50us}]\n", true, true},
		{"switch down, static", false, "faults: [{switch: p0.t1-0, action: down, at: 50us}]\n", true, false},
		{"switch down and up, static", false, "faults: [{switch: p0.t1-1, action: down, at: 50us, for: 100us}]\n", true, false},
		{"T0 switch down, AR", true, "faults: [{switch: p0.t0-1, action: down, at: 50us}]\n", true, true},
		{"link down, AR", true, "faults: [{link: p0.t1-0.down0, action: down, at: 50us}]\n", false, false},
		{"link down, static", false, "faults: [{link: p0.t1-0.down0, action: down, at: 50us}]\n", false, false},
		{"blackhole, static", false, "faults: [{switch: p0.t1-0, action: blackhole, at: 50us, for: 100us}]\n", false, false},
		{"no fault", true, "", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := mustRun(t, fmt.Sprintf(y, c.ar, c.faults))
			s := &res.Summary
			n := s.DroppedAtFailedSwitches
			if c.failed != (n > 0) || n > s.Drops["link_down"] {
				t.Fatalf("dropped at failed switches %d of link_down %d (drops %v); want > 0: %v, within link_down", n, s.Drops["link_down"], s.Drops, c.failed)
			}
			a := s.Adaptive
			if !c.ar {
				return
			}
			var b strings.Builder
			PrintAdaptive(&b, a)
			if c.queued != (a.AtFailedSwitches > 0) {
				t.Errorf("adaptive at_failed_switches %d; want > 0: %v", a.AtFailedSwitches, c.queued)
			}
			if a.AtFailedSwitches > n || a.AtFailedSwitches > a.LostQueued+a.NoRoute {
				t.Errorf("adaptive at_failed_switches %d: more than the failed switches' drops %d or the queued and no-route drops %d", a.AtFailedSwitches, n, a.LostQueued+a.NoRoute)
			}
			if has := strings.Contains(b.String(), "in failed switches' own queues"); has != (a.AtFailedSwitches > 0) {
				t.Errorf("terminal line %q: names the failed switches' queues %v; want %v", b.String(), has, a.AtFailedSwitches > 0)
			}
		})
	}
}
