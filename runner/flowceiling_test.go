package runner

import (
	"fmt"
	"testing"
)

// TestFlowCeilingTwoIntoOne: two RoCE QPs into one host (4 MiB and 1 MiB from 0, 16-host
// Clos, 100G, one plane; docs/flow-agreement.md, "RoCE tree: DCQCN"). Max-min finishes the
// 4 MiB one when the five MiB have crossed the receiver's link (about 430 us), as the packet
// level does with DCQCN off; with DCQCN on the packet level's survivor recovers from its
// share by DCQCN's increase steps and the flow level's ceiling follows the same steps: later
// than max-min, within 15% of the packet level (measured 533.6 us against 592.9 us). With
// DCQCN disabled the flow level is max-min, as before the ceiling.
func TestFlowCeilingTwoIntoOne(t *testing.T) {
	y := func(engine, dcqcn string) string {
		return fmt.Sprintf("topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\n"+
			"transport: {kind: roce, roce: {dcqcn: {disabled: %s, flow_recovery: true}}}\n"+
			"traffic: [{pattern: flows, flows: [{src: 1, dst: 0, bytes: 4MiB}, {src: 2, dst: 0, bytes: 1MiB}]}]\n"+
			"run: {engine: %s}\n", dcqcn, engine)
	}
	jct := func(engine, dcqcn string) float64 {
		res := mustRun(t, y(engine, dcqcn))
		if res.Summary.Transport == nil {
			t.Fatalf("%s, disabled %s: no transport summary", engine, dcqcn)
		}
		return res.Summary.Transport.JCTUs
	}
	off := jct("flow", "true")
	if off < 429 || off > 432 {
		t.Errorf("flow level, DCQCN off: JCT %.1f us; want the max-min 430.2", off)
	}
	if pk := jct("packet", "true"); pk/off < 0.99 || pk/off > 1.01 {
		t.Errorf("DCQCN off: packet %.1f us, flow %.1f us; want within 1%%", pk, off)
	}
	on, pk := jct("flow", "false"), jct("packet", "false")
	if on < 1.1*off {
		t.Errorf("flow level, DCQCN on: JCT %.1f us; want the recovery to cost over 10%% beyond max-min (%.1f)", on, off)
	}
	if r := on / pk; r < 0.85 || r > 1.15 {
		t.Errorf("DCQCN on: flow %.1f us / packet %.1f us = %.3f; want within 15%%", on, pk, r)
	}
	t.Logf("DCQCN on: flow %.1f us, packet %.1f us; off: flow %.1f us", on, pk, off)
}
