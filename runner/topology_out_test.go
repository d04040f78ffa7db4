package runner

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/report"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
)

// topologySVG writes t's topology.json into a fresh folder, has the report draw it and returns
// the decoded file and the picture's <svg> element.
func topologySVG(t *testing.T, tp topo.Topology, dims []int) (topologyJSON, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := writeTopology(&buf, tp, dims); err != nil {
		t.Fatal(err)
	}
	var got topologyJSON
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("topology.json is not JSON: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "topology.json"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := report.Write(dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, report.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	i := strings.Index(s, `<svg class="plot" id="topology"`)
	if i < 0 {
		t.Fatal("report.html has no topology picture")
	}
	j := strings.Index(s[i:], "</svg>")
	svg := s[i : i+j+len("</svg>")]
	if d := os.Getenv("TOPOLOGY_SVGS"); d != "" { // for a person to look at
		name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
		os.WriteFile(filepath.Join(d, name+".html"), []byte("<!DOCTYPE html><html><body style=\"margin:0;width:1000px\">"+svg+"</body></html>"), 0o644)
	}
	return got, svg
}

// TestTopologyJSONKinds: for each topology kind at small size, topology.json lists exactly the
// topology's nodes and links (names, ends, counts), and the report's picture draws one node
// element per node and one link element per link.
func TestTopologyJSONKinds(t *testing.T) {
	g := sim.Gbps
	for _, tc := range []struct {
		name string
		spec topo.Spec
	}{
		{"clos 2-tier 2 planes", topo.Clos{Tiers: 2, Planes: 2, Radix: 8, HostLink: 100 * g}},
		{"clos 3-tier partial", topo.Clos{Tiers: 3, Planes: 1, Radix: 8, Hosts: 37, HostLink: 100 * g}},
		{"clos 2-tier parallel links", topo.Clos{Tiers: 2, Planes: 1, Radix: 8, Hosts: 16, HostLink: 100 * g, ParallelLinks: []int{2}}},
		{"fat-tree k=4", topo.FatTree{K: 4, HostLink: 100 * g}},
		{"rail with spine", topo.Rail{Servers: 8, GPUsPerServer: 4, Planes: 2, Radix: 8, HostLink: 100 * g}},
		{"rail-only", topo.Rail{Servers: 6, GPUsPerServer: 2, Radix: 4, HostLink: 100 * g, RailOnly: true}},
		{"torus 3x3x2", topo.Torus{Dims: topo.TorusDims{3, 3, 2}, LinkRate: 100 * g}},
		{"torus 4x4x8 twisted", topo.Torus{Dims: topo.TorusDims{4, 4, 8}, LinkRate: 100 * g, Twisted: true}},
		{"mesh 8", topo.Mesh{Nodes: 8, LinkRate: 100 * g}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp, err := tc.spec.Topology()
			if err != nil {
				t.Fatal(err)
			}
			var dims []int
			if tor, ok := tc.spec.(topo.Torus); ok {
				dims = []int{tor.Dims[0], tor.Dims[1], tor.Dims[2]}
			}
			got, svg := topologySVG(t, tp, dims)
			if !got.Listed || got.NumNodes != tp.NumNodes() || got.NumLinks != tp.NumLinks() || len(got.Nodes) != tp.NumNodes() || len(got.Links) != tp.NumLinks() {
				t.Fatalf("topology.json: listed %v, %d/%d nodes, %d/%d links; the topology has %d nodes and %d links",
					got.Listed, got.NumNodes, len(got.Nodes), got.NumLinks, len(got.Links), tp.NumNodes(), tp.NumLinks())
			}
			hosts, sw := 0, 0
			for i, n := range tp.Nodes() {
				if got.Nodes[i].Name != n.Name || got.Nodes[i].Kind != n.Kind.String() || got.Nodes[i].Tier != n.Tier || got.Nodes[i].Plane != n.Plane {
					t.Errorf("node %d: %+v, topology has %+v", i, got.Nodes[i], n)
				}
				if n.Kind == topo.KindHost {
					hosts++
				} else {
					sw++
				}
				if dims != nil && len(got.Nodes[i].Coords) != 3 {
					t.Errorf("torus node %d has no coordinates", i)
				}
			}
			if got.Hosts != hosts || got.Switches != sw || got.Hosts != tp.NumHosts() {
				t.Errorf("hosts %d, switches %d; topology has %d and %d", got.Hosts, got.Switches, hosts, sw)
			}
			nodes := tp.Nodes()
			levels := 0
			for _, l := range got.Levels {
				levels += l.Links
			}
			if levels != tp.NumLinks() {
				t.Errorf("levels count %d links, topology has %d", levels, tp.NumLinks())
			}
			for i, k := range tp.Links() {
				gl := got.Links[i]
				if gl.Name != k.Name || gl.A != nodes[k.A.Node].Name || gl.B != nodes[k.B.Node].Name || gl.Level != k.Level || gl.Plane != k.Plane ||
					gl.RateGbps != k.Rate.Gbps() || gl.BPort != tp.PortName(k.B.Node, k.B.Port) {
					t.Errorf("link %d: %+v, topology has %+v", i, gl, k)
				}
			}
			if n := strings.Count(svg, `class="tn"`); n != tp.NumNodes() {
				t.Errorf("picture draws %d nodes, topology has %d", n, tp.NumNodes())
			}
			if n := strings.Count(svg, `class="tl"`); n != tp.NumLinks() {
				t.Errorf("picture draws %d links, topology has %d", n, tp.NumLinks())
			}
			if strings.Contains(svg, `class="tg"`) || strings.Contains(svg, `class="tb"`) {
				t.Errorf("small fabric drawn aggregated")
			}
		})
	}
}

// TestTopologyLarge: large fabrics of every kind are drawn aggregated, in groups and bundles,
// under report.MaxTopologySVG bytes; a fabric beyond MaxTopologyListLinks gets counts only.
func TestTopologyLarge(t *testing.T) {
	g := sim.Gbps
	for _, tc := range []struct {
		name   string
		spec   topo.Spec
		listed bool
	}{
		{"clos 2-tier 8 planes radix 64", topo.Clos{Tiers: 2, Planes: 8, Radix: 64, HostLink: 100 * g}, true},
		{"clos 3-tier radix 32", topo.Clos{Tiers: 3, Planes: 1, Radix: 32, HostLink: 100 * g}, true},
		{"fat-tree k=16", topo.FatTree{K: 16, HostLink: 100 * g}, true},
		{"rail 128x8 r64", topo.Rail{Servers: 128, GPUsPerServer: 8, Radix: 64, HostLink: 400 * g}, true},
		{"rail-only 128x8 r128", topo.Rail{Servers: 128, GPUsPerServer: 8, Radix: 128, HostLink: 400 * g, RailOnly: true}, true},
		{"torus 16x16x16", topo.Torus{Dims: topo.TorusDims{16, 16, 16}, LinkRate: 400 * g}, true},
		{"mesh 64", topo.Mesh{Nodes: 64, LinkRate: 100 * g}, true},
		{"clos 8 planes radix 512 (131,072 hosts)", topo.Clos{Tiers: 2, Planes: 8, Radix: 512, HostLink: 100 * g}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp, err := tc.spec.Topology()
			if err != nil {
				t.Fatal(err)
			}
			var dims []int
			if tor, ok := tc.spec.(topo.Torus); ok {
				dims = []int{tor.Dims[0], tor.Dims[1], tor.Dims[2]}
			}
			got, svg := topologySVG(t, tp, dims)
			if got.Listed != tc.listed || got.NumNodes != tp.NumNodes() || got.NumLinks != tp.NumLinks() {
				t.Errorf("topology.json: listed %v (want %v), %d nodes, %d links; the topology has %d and %d", got.Listed, tc.listed, got.NumNodes, got.NumLinks, tp.NumNodes(), tp.NumLinks())
			}
			if len(svg) > report.MaxTopologySVG {
				t.Errorf("picture is %d bytes, bound %d", len(svg), report.MaxTopologySVG)
			}
			if !strings.Contains(svg, `class="tg"`) || !strings.Contains(svg, `class="tb"`) || strings.Contains(svg, `class="tn"`) {
				t.Errorf("large fabric not drawn aggregated")
			}
			t.Logf("%d nodes, %d links: picture %d bytes, %d groups, %d bundles", tp.NumNodes(), tp.NumLinks(), len(svg),
				strings.Count(svg, `class="tg"`), strings.Count(svg, `class="tb"`))
		})
	}
}
