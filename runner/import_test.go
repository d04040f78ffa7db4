package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/traffic/htsim"
)

// importYAML is a 16-host fat-tree scenario; %s the transport kind, %s the traffic list.
const importYAML = `
topology: {fat_tree: {k: 4, host_link: 100G}}
transport: {kind: %s}
traffic: %s
run: {seed: 5}
`

// outputs returns every file a run writes except scenario.yaml (which echoes the input),
// and summary.json, by name.
func outputs(t *testing.T, sc *scenario.Scenario, res *Result) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	s, err := json.Marshal(res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	out["summary.json"] = s
	for _, f := range res.Files(sc) {
		var b bytes.Buffer
		if err := f.Write(&b); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		out[f.Name] = b.Bytes()
	}
	return out
}

// A .cm permutation and the same permutation written as YAML (pattern permutation) give
// byte-identical flows.csv, links.csv and summary for the same seed, under MRC and RoCE: the
// .cm is written from the pairs the permutation draws.
func TestHTSimPermutationEqualsYAML(t *testing.T) {
	for _, kind := range []string{"mrc", "roce"} {
		t.Run(kind, func(t *testing.T) {
			yamlA := fmt.Sprintf(importYAML, kind, "[{pattern: permutation, bytes: 256KiB}]")
			scA, err := scenario.Parse([]byte(yamlA))
			if err != nil {
				t.Fatal(err)
			}
			pairs := groupPairs(&scA.Traffic[0], 16, sim.Stream(scA.Run.Seed, "traffic[0]").Perm)
			m := &htsim.Matrix{Nodes: 16}
			for i, p := range pairs {
				m.Conns = append(m.Conns, htsim.Conn{Src: p.src, Dst: p.dst, ID: uint32(i + 1), Size: 256 << 10})
			}
			dir := t.TempDir()
			var cm bytes.Buffer
			if err := htsim.Write(&cm, m); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "perm.cm"), cm.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			scB, err := scenario.ParseIn([]byte(fmt.Sprintf(importYAML, kind, "[{pattern: file, format: htsim, file: perm.cm}]")), dir)
			if err != nil {
				t.Fatal(err)
			}
			if scA.Run.Duration != scB.Run.Duration {
				t.Fatalf("derived run.duration %v vs %v", scA.Run.Duration, scB.Run.Duration)
			}
			resA, err := Run(scA)
			if err != nil {
				t.Fatal(err)
			}
			resB, err := Run(scB)
			if err != nil {
				t.Fatal(err)
			}
			if resA.Summary.Transport == nil || resA.Summary.Transport.FlowsCompleted != 16 {
				t.Fatalf("permutation run did not complete its 16 flows: %+v", resA.Summary.Transport)
			}
			a, b := outputs(t, scA, resA), outputs(t, scB, resB)
			if len(a) != len(b) {
				t.Fatalf("%d files vs %d", len(a), len(b))
			}
			for name, da := range a {
				if !bytes.Equal(da, b[name]) {
					t.Errorf("%s differs between the YAML permutation and the .cm (%d vs %d bytes)", name, len(da), len(b[name]))
				}
			}
		})
	}
}

// ns3YAML runs ns-3 inputs: the k=4 fat-tree of traffic/ns3/testdata as topology.graph.
const ns3YAML = `
topology: {graph: {format: ns3, file: fattree4.txt}}
transport: {kind: %s}
traffic: [{pattern: file, format: ns3, file: %s}]
run: {seed: 2}
`

// A small fat-tree given in ns-3 format runs under MRC (spraying over the graph's minimal
// paths) and RoCE (ECMP tables): every flow of flow.txt completes, and a lone cross-pod flow
// takes its ideal time within 10% (one path, six links, no contention).
func TestNS3FatTreeRuns(t *testing.T) {
	dir, err := filepath.Abs("../traffic/ns3/testdata")
	if err != nil {
		t.Fatal(err)
	}
	one := t.TempDir()
	if err := os.WriteFile(filepath.Join(one, "one.txt"), []byte("1\n0 5 3 100 200000 0.000001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"mrc", "roce"} {
		t.Run(kind, func(t *testing.T) {
			sc, err := scenario.ParseIn([]byte(fmt.Sprintf(ns3YAML, kind, "flow.txt")), dir)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(sc)
			if err != nil {
				t.Fatal(err)
			}
			if tr := res.Summary.Transport; tr == nil || tr.Flows != 8 || tr.FlowsCompleted != 8 || tr.QPErrors != 0 {
				t.Fatalf("transport summary %+v", tr)
			}
			sc, err = scenario.ParseIn([]byte(fmt.Sprintf(ns3YAML, kind, filepath.Join(one, "one.txt"))), dir)
			if err != nil {
				t.Fatal(err)
			}
			res, err = Run(sc)
			if err != nil {
				t.Fatal(err)
			}
			tr := res.Summary.Transport
			if tr.FlowsCompleted != 1 || tr.FCTOverIdealMax < 1 || tr.FCTOverIdealMax > 1.1 {
				t.Fatalf("lone flow: %d completed, FCT %.2f us, %.3f x ideal (%.2f us)", tr.FlowsCompleted, tr.FCTMaxUs, tr.FCTOverIdealMax, tr.IdealFCTUs)
			}
			// Closed form: 200 kB at 100 Gb/s (16 us) plus the round trip over 6 links of 1 us
			// each way (12 us); headers and store-and-forward at 5 switches add under 10%.
			if closed := 16.0 + 12.0; tr.FCTMaxUs < closed || tr.FCTMaxUs > 1.1*closed {
				t.Errorf("lone flow FCT %.2f us, want %.1f us to +10%%", tr.FCTMaxUs, closed)
			}
			t.Logf("%s: lone cross-pod 200 kB flow %.2f us, %.3f x ideal", kind, tr.FCTMaxUs, tr.FCTOverIdealMax)
		})
	}
}
