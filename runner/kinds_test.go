package runner

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
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
				if s.mrcT().FlowsCompleted != s.mrcT().Flows || s.mrcT().Flows == 0 {
					t.Errorf("%s, mrc: %d of %d done", k, s.mrcT().FlowsCompleted, s.mrcT().Flows)
				}
			case "roce":
				if s.roceT().FlowsCompleted != s.roceT().Flows || s.roceT().Flows == 0 {
					t.Errorf("%s, roce: %d of %d done", k, s.roceT().FlowsCompleted, s.roceT().Flows)
				}
			default:
				if s.DeliveredPackets == 0 || s.DeliveredFraction < 0.9 {
					t.Errorf("%s, raw: delivered %d packets (%.3f)", k, s.DeliveredPackets, s.DeliveredFraction)
				}
			}
		}
	}
}

// Pairs a transport cannot route are named at load [issue 8 review]: a regular 4x4x8 torus's
// farthest chips are 9 routers apart, beyond a source route's 8 switches (MRC, raw spray);
// GPUs on different rails of a rail-only fabric have no path at all (every transport).
func TestUnroutablePairsNamed(t *testing.T) {
	for _, c := range []struct{ topo, tr, traffic, want string }{
		{"torus: {dims: 4x4x8, link_rate: 100G}", "mrc", "{pattern: flows, flows: [{src: 0, dst: 74}], bytes: 1MiB}", "more than the 8 a source route holds"},
		{"rail: {servers: 8, gpus_per_server: 8, radix: 16, host_link: 100G, rail_only: true}", "roce", "{pattern: flows, flows: [{src: 0, dst: 9}], bytes: 1MiB}", "different rails"},
		{"rail: {servers: 8, gpus_per_server: 8, radix: 16, host_link: 100G, rail_only: true}", "raw", "{pattern: flows, flows: [{src: 0, dst: 9}], load: 0.5}", "different rails"},
	} {
		sc, err := scenario.Parse([]byte(fmt.Sprintf("topology: {%s}\ntransport: {kind: %s}\ntraffic: [%s]\n", c.topo, c.tr, c.traffic)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(sc)
		var ie *InputError
		if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s, %s: %v; want an input error containing %q", c.topo, c.tr, err, c.want)
		}
	}
	// RoCE routes the far torus pair by the switches' tables.
	s := mustRun(t, "topology: {torus: {dims: 4x4x8, link_rate: 100G}}\ntransport: {kind: roce}\ntraffic: [{pattern: flows, flows: [{src: 0, dst: 74}], bytes: 1MiB}]\n").Summary
	if s.roceT().FlowsCompleted != 1 {
		t.Errorf("RoCE on the far torus pair: %d of 1 done", s.roceT().FlowsCompleted)
	}
}
