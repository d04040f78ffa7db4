package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestTopoKinds pins the text table of each topology kind on well-known shapes.
func TestTopoKinds(t *testing.T) {
	tests := []struct {
		args []string
		rows [][2]string // label, value
	}{
		{[]string{"--kind", "fat_tree", "--k", "64"}, [][2]string{
			{"hosts", "65,536"}, {"switches per plane", "5,120 (T0 2,048, T1 2,048, T2 1,024)"}, {"switches", "5,120"},
			{"diameter", "4 fabric hops"}, {"max switch hops", "5"}}},
		{[]string{"--kind", "torus", "--dims", "16x20x28", "--link", "400G"}, [][2]string{
			{"hosts", "8,960"}, {"switches", "0"}, {"chip routers", "8,960"}, {"links", "26,880 (chip-chip 26,880)"},
			{"bisection bandwidth", "256Tbps (640 links cut)"}, {"diameter", "32 fabric hops"}, {"mean hops", "16"}}},
		{[]string{"--kind", "torus", "--dims", "16x16x16", "--ocs", "--spare-cubes", "2"}, [][2]string{
			{"diameter", "24 fabric hops"}, {"optical links", "3,072"}, {"bisection bandwidth", "409.6Tbps (512 links cut)"},
			{"OCS", "48 OCSes of 132 ports, 64 cubes of 4^3 chips + 2 spare, reconfiguration 10ms"}}},
		{[]string{"--kind", "torus", "--dims", "4x4x8", "--twisted"}, [][2]string{{"diameter", "6 fabric hops"}, {"mean hops", "3.4375"}}},
		{[]string{"--kind", "rail", "--servers", "128", "--gpus-per-server", "8"}, [][2]string{
			{"hosts", "1,024"}, {"switches per plane", "64 (T0 32, T1 32)"}, {"diameter", "2 fabric hops"}}},
		{[]string{"--kind", "rail", "--servers", "128", "--gpus-per-server", "8", "--rail-only", "--radix", "128"}, [][2]string{
			{"switches", "8"}, {"bisection bandwidth", "0Gbps"}}},
		{[]string{"--kind", "rail", "--servers", "36", "--gpus-per-server", "4", "--scale-up-gpus", "72", "--scale-up-rate", "7.2T"}, [][2]string{
			{"scale-up domain", "72 GPUs at 7.2Tbps per GPU per direction, 2 domains, 129.6 TB/s per domain"}}},
		{[]string{"--kind", "mesh", "--nodes", "64", "--link", "100G"}, [][2]string{
			{"links", "2,016 (node-node 2,016)"}, {"diameter", "1 fabric hops"}, {"bisection bandwidth", "102.4Tbps (1,024 links cut)"}}},
	}
	for _, tc := range tests {
		out := mustRun(t, append([]string{"topo"}, tc.args...)...)
		for _, r := range tc.rows {
			topoLine(t, out, r[0], r[1])
		}
		if !strings.Contains(out, "blast radius of one failure:") {
			t.Errorf("topo %v: no blast radius table:\n%s", tc.args, out)
		}
	}
}

// TestTopoBlastTable: the blast radius rows give the share each failure takes (radix 512:
// one T0-T1 link is 0.391% of a T0's uplinks; an 8-plane NIC port 12.5%).
func TestTopoBlastTable(t *testing.T) {
	out := mustRun(t, "topo", "--planes", "8", "--radix", "512", "--link", "100G")
	for _, want := range []string{"t0_t1_link  0.391%  T0 uplink bandwidth", "nic_port    12.5%   host NIC bandwidth"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// TestTopoKindsJSON: --json carries config (in the scenario's keys), sizing and blast radius
// for every kind, and --compare --json one entry per fabric.
func TestTopoKindsJSON(t *testing.T) {
	type fab struct {
		Kind   string         `json:"kind"`
		Config map[string]any `json:"config"`
		Sizing struct {
			Hosts     int     `json:"hosts"`
			Diameter  int     `json:"diameter_hops"`
			Mean      float64 `json:"mean_hops"`
			Bisection int     `json:"bisection_links"`
		} `json:"sizing"`
		Blast []struct {
			Element string  `json:"element"`
			Share   float64 `json:"share"`
		} `json:"blast_radius"`
	}
	var v fab
	if err := json.Unmarshal([]byte(mustRun(t, "topo", "--kind", "torus", "--dims", "16x20x28", "--json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Kind != "torus" || v.Config["dims"] != "16x20x28" || v.Sizing.Hosts != 8960 || v.Sizing.Diameter != 32 || v.Sizing.Mean != 16 ||
		v.Sizing.Bisection != 640 || len(v.Blast) != 2 || v.Blast[0].Element != "torus_link" {
		t.Errorf("torus JSON %+v", v)
	}
	var c struct {
		Fabrics []fab `json:"fabrics"`
	}
	out := mustRun(t, "topo", "--json", "--compare", "planes=8 radix=512 link=100G; tiers=3 radix=64", "--compare", "kind=mesh nodes=8")
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Fabrics) != 3 || c.Fabrics[0].Sizing.Hosts != 131072 || c.Fabrics[1].Sizing.Hosts != 65536 || c.Fabrics[2].Kind != "mesh" ||
		c.Fabrics[0].Config["planes"] != 8.0 {
		t.Errorf("compare JSON %+v", c)
	}
}

// TestTopoCompare prints fabrics side by side, one column each.
func TestTopoCompare(t *testing.T) {
	out := mustRun(t, "topo", "--compare", "planes=8 radix=512 link=100G; tiers=3 radix=64 link=800G; kind=torus dims=32x64x64 twisted")
	for _, want := range []string{"[1] clos", "[3] torus", "[3] Torus: 32x64x64, 800Gbps links, twisted", "48 fabric hops"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	compareRow(t, out, "switches", "6,144", "5,120", "0")
	compareRow(t, out, "800G modules", "524,288", "393,216", "0")
}

// compareRow checks the columns of one row of a --compare table.
func compareRow(t *testing.T, out, label string, values ...string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, label+"  "); ok {
			if got := strings.Fields(rest); strings.Join(got, "|") != strings.Join(values, "|") {
				t.Errorf("row %q = %q; want %q", label, got, values)
			}
			return
		}
	}
	t.Errorf("no row %q in:\n%s", label, out)
}

// TestTopoKindErrors: bad kind flags exit 2 with one line naming the flag, the value and what
// is allowed.
func TestTopoKindErrors(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"--kind", "ring"}, []string{"--kind", `"ring"`, "clos, fat_tree, rail, torus, mesh"}},
		{[]string{"--kind", "torus", "--dims", "4x4"}, []string{"--dims", `"4x4"`, "k1xk2xk3"}},
		{[]string{"--kind", "torus"}, []string{"--dims", "topology.torus.dims", "missing"}},
		{[]string{"--kind", "torus", "--dims", "4x4x4", "--twisted"}, []string{"--twisted", "4x4x4", "k x k x 2k"}},
		{[]string{"--kind", "torus", "--dims", "4x4x6", "--ocs"}, []string{"--dims", "4x4x6", "multiple of cube_size 4"}},
		{[]string{"--kind", "torus", "--dims", "4x4x4", "--radix", "8"}, []string{"--radix", "clos or rail", "torus takes", "--dims"}},
		{[]string{"--kind", "fat_tree", "--k", "63"}, []string{"--k", "topology.fat_tree.k", "63", "even"}},
		{[]string{"--kind", "fat_tree", "--k", "64", "--oversub", "1,2"}, []string{"--oversub", "one"}},
		{[]string{"--kind", "rail", "--servers", "1000"}, []string{"--servers", "1000", "at most 256"}},
		{[]string{"--kind", "rail", "--servers", "8", "--scale-up-gpus", "72"}, []string{"--scale-up-rate", "missing"}},
		{[]string{"--kind", "mesh", "--nodes", "8", "--ports-per-node", "9"}, []string{"--ports-per-node", "9", "nodes-1 = 7"}},
		{[]string{"--compare", "kind=torus dims=4x4x4 twisted"}, []string{"--compare fabric 1", "--twisted", "4x4x4"}},
		{[]string{"--compare", "radix=8", "--radix", "8"}, []string{"--radix", "SPEC"}},
		{[]string{"--compare", " ; "}, []string{"--compare", "no fabric"}},
	}
	for _, tc := range cases {
		args := append([]string{"topo"}, tc.args...)
		code, stdout, stderr := cli(t, args...)
		if code != 2 || stdout != "" {
			t.Errorf("lockstep %s: exit %d, stdout %q; want 2 and nothing", strings.Join(args, " "), code, stdout)
		}
		checkOneLine(t, stderr)
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("lockstep %s: stderr %q does not contain %q", strings.Join(args, " "), stderr, w)
			}
		}
	}
}

// FuzzCompareSpec: any --compare text gives a table or a one-line error, never a panic.
func FuzzCompareSpec(f *testing.F) {
	for _, s := range []string{"kind=torus dims=4x4x8 twisted", "planes=8 radix=16 link=100G; tiers=3 radix=8", "kind=mesh nodes=5", "kind=rail servers=4 radix=8", "=;;x", "kind=fat_tree k=8 oversub=3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fabs, err := compareSpecs([]string{s})
		if err != nil {
			if strings.Contains(err.Error(), "\n") && !strings.Contains(s, "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		for _, f := range fabs {
			if f.topo.Sizing().Hosts > 1<<20 {
				return // sizing only; nothing big is built
			}
		}
	})
}
