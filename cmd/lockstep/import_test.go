package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lockstep import writes a scenario that lockstep run runs: the htsim DAG with its triggers
// and failures (as faults on the generated fat-tree), and ns-3 flow.txt on its topology.txt.
func TestImportRuns(t *testing.T) {
	htsimDAG, _ := filepath.Abs("../../traffic/htsim/testdata/dag.cm")
	ns3Flow, _ := filepath.Abs("../../traffic/ns3/testdata/flow.txt")
	ns3Topo, _ := filepath.Abs("../../traffic/ns3/testdata/fattree4.txt")
	cases := []struct {
		name  string
		args  []string
		yaml  []string // lines the scenario has
		flows int
	}{
		{"htsim", []string{htsimDAG}, []string{"topology: {fat_tree: {k: 4", "pattern: file, format: htsim"}, 6},
		{"ns3 graph roce", []string{ns3Flow, "--format", "ns3", "--topology", ns3Topo, "--transport", "roce"}, []string{"topology: {graph: {format: ns3", `transport: {kind: "roce"}`}, 8},
		{"ns3 fat-tree", []string{ns3Flow, "--format", "ns3"}, []string{"topology: {fat_tree: {k: 4"}, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			sc := filepath.Join(dir, "sub", "scenario.yaml")
			if err := os.MkdirAll(filepath.Dir(sc), 0o755); err != nil {
				t.Fatal(err)
			}
			mustRun(t, append([]string{"import", "-o", sc}, c.args...)...)
			y, err := os.ReadFile(sc)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range c.yaml {
				if !strings.Contains(string(y), l) {
					t.Errorf("scenario lacks %q:\n%s", l, y)
				}
			}
			out := filepath.Join(dir, "out")
			mustRun(t, "run", sc, "--out", out)
			b, err := os.ReadFile(filepath.Join(out, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			var s struct {
				Transport struct {
					Flows          int `json:"flows"`
					FlowsCompleted int `json:"flows_completed"`
				} `json:"transport"`
			}
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			if s.Transport.Flows != c.flows || s.Transport.FlowsCompleted != c.flows {
				t.Errorf("%d of %d flows completed, want %d", s.Transport.FlowsCompleted, s.Transport.Flows, c.flows)
			}
			if c.name == "htsim" {
				res, _ := os.ReadFile(filepath.Join(out, "scenario.yaml"))
				if !strings.Contains(string(res), "p0.t1-0.up1") || !strings.Contains(string(res), "p0.t2-3") {
					t.Errorf("resolved scenario lacks the failure lines' faults:\n%s", res)
				}
			}
		})
	}
}

// Bad input exits 2 with the file, line and column.
func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.cm")
	if err := os.WriteFile(bad, []byte("Nodes 4\nConnections 1\n0->1 start 0 size q\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// two components: hosts 0, 1 under switch 4, hosts 2, 3 under switch 5
	split, across := filepath.Join(dir, "split.txt"), filepath.Join(dir, "flow.txt")
	if err := os.WriteFile(split, []byte("6 2 4\n4 5\n0 4 1Gbps 1us 0\n1 4 1Gbps 1us 0\n2 5 1Gbps 1us 0\n3 5 1Gbps 1us 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(across, []byte("1\n0 2 3 100 1000000 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"import", bad}, bad + `:3:19: size "q" is not a byte count`},
		{[]string{"import", bad, "--format", "omnet"}, `--format: "omnet" is not an importer; allowed htsim, ns3`},
		{[]string{"import", filepath.Join(dir, "x.txt")}, "--format: missing; allowed htsim, ns3"},
		{[]string{"import", bad, "--topology", "t.txt"}, "--topology: an htsim connection matrix runs on a generated fat_tree"},
		{[]string{"import", filepath.Join(dir, "none.cm")}, "no such file"},
		{[]string{"import", across, "--format", "ns3", "--topology", split}, across + ":2:1: flow 0 from host 0 to host 2: no path joins them"},
	} {
		code, _, stderr := cli(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("lockstep %v: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
}
