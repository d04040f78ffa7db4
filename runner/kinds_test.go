package runner

import (
	"fmt"
	"testing"
)

// Every topology kind runs with the raw source, MRC and RoCEv2 [issue 8]: a small permutation
// completes on each (raw: delivers at a low load), with packet conservation checked by the run.
func TestTopologyKindsRun(t *testing.T) {
	kinds := []string{
		"torus: {dims: 4x4x4, link_rate: 100G}",
		"torus: {dims: 4x4x8, twisted: true, link_rate: 100G, routing: dor}",
		"mesh: {nodes: 16, link_rate: 100G}",
		"rail: {servers: 8, gpus_per_server: 8, radix: 16, host_link: 100G}",
		"rail: {servers: 8, gpus_per_server: 4, planes: 2, radix: 16, host_link: 100G}",
		"fat_tree: {k: 8, host_link: 100G}",
	}
	for _, k := range kinds {
		for _, tr := range []string{"mrc", "roce", "raw"} {
			traffic := "{pattern: permutation, bytes: 512KiB}"
			if tr == "raw" {
				traffic = "{pattern: permutation, rate: 20G}" // below any one chip-to-chip link
			}
			y := fmt.Sprintf("topology: {%s}\ntransport: {kind: %s}\ntraffic: [%s]\nrun: {duration: 200us}\n", k, tr, traffic)
			if tr != "raw" {
				y = fmt.Sprintf("topology: {%s}\ntransport: {kind: %s}\ntraffic: [%s]\nrun: {duration: 20ms}\n", k, tr, traffic)
			}
			s := mustRun(t, y).Summary
			switch tr {
			case "mrc":
				if s.MRC.FlowsCompleted != s.MRC.Flows || s.MRC.Flows == 0 {
					t.Errorf("%s, mrc: %d of %d done", k, s.MRC.FlowsCompleted, s.MRC.Flows)
				}
			case "roce":
				if s.RoCE.FlowsCompleted != s.RoCE.Flows || s.RoCE.Flows == 0 {
					t.Errorf("%s, roce: %d of %d done", k, s.RoCE.FlowsCompleted, s.RoCE.Flows)
				}
			default:
				if s.DeliveredPackets == 0 || s.DeliveredFraction < 0.9 {
					t.Errorf("%s, raw: delivered %d packets (%.3f)", k, s.DeliveredPackets, s.DeliveredFraction)
				}
			}
		}
	}
}
