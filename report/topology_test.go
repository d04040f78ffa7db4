package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// synthTopology is topology.json of the synthetic run (synth_test.go): 4 hosts, 2 planes, in
// each plane one T0 (p<plane>.t0-0, down ports 0..3 to the hosts) with 4 uplinks to one T1,
// the ports links.csv names.
func synthTopology() string {
	var nodes, links []string
	for h := range 4 {
		nodes = append(nodes, fmt.Sprintf(`{"name":"h%d","kind":"host","tier":-1,"plane":-1}`, h))
	}
	for pl := range 2 {
		for tier := range 2 {
			nodes = append(nodes, fmt.Sprintf(`{"name":"p%d.t%d-0","kind":"switch","tier":%d,"plane":%d}`, pl, tier, tier, pl))
		}
	}
	for pl := range 2 {
		for h := range 4 {
			links = append(links, fmt.Sprintf(`{"name":"h%d.p%d","a":"h%d","b":"p%d.t0-0","b_port":"p%d.t0-0.down%d","rate_gbps":100,"level":0,"plane":%d}`, h, pl, h, pl, pl, h, pl))
		}
		for u := range 4 {
			links = append(links, fmt.Sprintf(`{"name":"p%d.t0-0.up%d","a":"p%d.t0-0","b":"p%d.t1-0","b_port":"p%d.t1-0.down%d","rate_gbps":100,"level":1,"plane":%d}`, pl, u, pl, pl, pl, u, pl))
		}
	}
	return `{"kind":"clos","planes":2,"hosts":4,"switches":4,"num_nodes":8,"num_links":16,"listed":true,` +
		`"tiers":[{"tier":0,"plane":0,"switches":1},{"tier":0,"plane":1,"switches":1},{"tier":1,"plane":0,"switches":1},{"tier":1,"plane":1,"switches":1}],` +
		`"levels":[{"level":0,"plane":0,"links":4,"rate_gbps":100},{"level":1,"plane":0,"links":4,"rate_gbps":100},{"level":0,"plane":1,"links":4,"rate_gbps":100},{"level":1,"plane":1,"links":4,"rate_gbps":100}],` +
		"\n\"nodes\": [\n  " + strings.Join(nodes, ",\n  ") + "\n],\n\"links\": [\n  " + strings.Join(links, ",\n  ") + "\n]}\n"
}

// topologyPicture returns the topology <svg> of a report page.
func topologyPicture(t *testing.T, page string) string {
	t.Helper()
	i := strings.Index(page, `<svg class="plot" id="`+idTopology+`"`)
	if i < 0 {
		t.Fatal("no topology picture")
	}
	j := strings.Index(page[i:], "</svg>")
	return page[i : i+j]
}

// TestTopologyPicture: the synthetic run's picture draws every node and link, colours them by
// links.csv, dashes the failed ones (faults.csv names h0.p1 and the port p0.t0-0.down3, whose
// link is h3.p0), and the hottest-links table orders links by mean utilisation.
func TestTopologyPicture(t *testing.T) {
	dir := synthDir(t, defaultSynth())
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page := readReport(t, dir)
	svg := topologyPicture(t, page)
	if n := strings.Count(svg, `class="tn"`); n != 8 {
		t.Errorf("%d nodes drawn, want 8", n)
	}
	if n := strings.Count(svg, `class="tl"`); n != 16 {
		t.Errorf("%d links drawn, want 16", n)
	}
	if n := strings.Count(svg, `stroke-dasharray="4 3">`); n != 2 {
		t.Errorf("%d failed links drawn, want 2 (h0.p1 and h3.p0)", n)
	}
	for _, want := range []string{"<title>h0.p1 (h0 - p0.t0-0)", ", failed</title>", "mean utilisation", "peak (width)"} {
		if !strings.Contains(svg, want) && !strings.Contains(svg, strings.Replace(want, "p0.t0-0", "p1.t0-0", 1)) {
			t.Errorf("picture lacks %q", want)
		}
	}
	// h1.p0 sends 20000+1000*((k+1)%5) bytes per 2 us interval at 100 Gb/s over 80 us; its
	// downlink p0.t0-0.down1 12500 bytes: the host's direction is the busier.
	var tx float64
	for k := range 40 {
		tx += float64(20000 + 1000*((k+1)%5))
	}
	mean := 8 * tx / (100e3 * 80)
	if want := fmt.Sprintf("<title>h1.p0 (h1 - p0.t0-0): mean %.1f%%, peak %.1f%%</title>", 100*mean, 100*8*24000/(100e3*2)); !strings.Contains(svg, want) {
		t.Errorf("picture lacks %q", want)
	}
	i := strings.Index(page, `id="topology-hot-table"`)
	if i < 0 {
		t.Fatal("no hottest-links table")
	}
	table := page[i:]
	table = table[:strings.Index(table, "</table>")]
	if n := strings.Count(table, "<tr>") - 1; n != 14 {
		t.Errorf("hottest links: %d rows, want the 14 links that carried traffic (uplink 0 of each plane sent nothing)", n)
	}
	// links.csv names no T0 up ports, and the T1 down port k sends 12500 x k bytes per
	// interval, less than any host link: the uplinks are coldest, so the table ends with them.
	last := table[strings.LastIndex(table, "<tr>"):]
	if !strings.Contains(last, ".up") {
		t.Errorf("coldest row is not an uplink: %s", last)
	}
}

// TestTopologyNoLinks: without links.csv the picture is grey and the table a note; without
// topology.json the figure is a note.
func TestTopologyNoLinks(t *testing.T) {
	dir := synthDir(t, defaultSynth())
	os.Remove(filepath.Join(dir, fileLinks))
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page := readReport(t, dir)
	svg := topologyPicture(t, page)
	if !strings.Contains(svg, "no utilisation data") || strings.Contains(svg, "mean utilisation") {
		t.Errorf("picture without links.csv is not grey")
	}
	if !strings.Contains(page, `id="topology-hot-table-nodata">no data: links.csv not written`) {
		t.Errorf("hottest-links table lacks its note")
	}
	os.Remove(filepath.Join(dir, fileTopology))
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	if page := readReport(t, dir); !strings.Contains(page, `id="topology-nodata">no data: topology.json not written`) {
		t.Errorf("page lacks the topology note")
	}
}

// TestReadTopologyErrors: malformed topology.json files are *FileError values naming the field.
func TestReadTopologyErrors(t *testing.T) {
	good := synthTopology()
	for _, tc := range []struct {
		name, body, field string
	}{
		{"not JSON", "{", ""},
		{"no planes", strings.Replace(good, `"planes":2`, `"planes":0`, 1), "planes"},
		{"short node list", strings.Replace(good, `"num_nodes":8`, `"num_nodes":9`, 1), "nodes"},
		{"short link list", strings.Replace(good, `"num_links":16`, `"num_links":15`, 1), "links"},
		{"duplicate node", strings.Replace(good, `"name":"h1"`, `"name":"h0"`, 1), "nodes"},
		{"unknown end", strings.Replace(good, `"b":"p0.t1-0"`, `"b":"p9.t1-0"`, 1), "links"},
		{"zero rate", strings.Replace(good, `"rate_gbps":100,"level":0`, `"rate_gbps":0,"level":0`, 1), "links"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readTopology(fileTopology, strings.NewReader(tc.body))
			var fe *FileError
			if !errors.As(err, &fe) || fe.File != fileTopology || fe.Field != tc.field {
				t.Fatalf("error %v; want a FileError on %s field %q", err, fileTopology, tc.field)
			}
		})
	}
	if _, err := readTopology(fileTopology, strings.NewReader(good)); err != nil {
		t.Fatal(err)
	}
}

// TestUtilColour: the scale runs from pale blue to dark red and clamps outside [0, 1].
func TestUtilColour(t *testing.T) {
	for _, tc := range []struct {
		u    float64
		want string
	}{{-1, "#c6dbef"}, {0, "#c6dbef"}, {0.5, "#fdae61"}, {1, "#a50026"}, {7, "#a50026"}} {
		if got := utilColour(tc.u); got != tc.want {
			t.Errorf("utilColour(%g) = %s, want %s", tc.u, got, tc.want)
		}
	}
}

// TestTopologyRealRuns: the results folders lockstep wrote (testdata/runs) with topology.json get
// a picture with one element per node and link of the file, and the failed link of a run with
// a failure is dashed.
func TestTopologyRealRuns(t *testing.T) {
	for _, tc := range []struct {
		run           string
		nodes, links  int
		failed        int
		failedLinkTxt string
	}{
		{"mrc-incast-fail", 96, 256, 1, "<title>h8.p5 (h8 - p5.t0-1)"},
		{"roce-incast-pfc", 36, 64, 1, ""},
		{"coll-mrc", 96, 256, 0, ""},
		{"permutation-ecmp", 0, 0, 0, ""},
	} {
		t.Run(tc.run, func(t *testing.T) {
			dir := copyDir(t, filepath.Join("testdata", "runs", tc.run))
			td, _, err := loadTopology(dir)
			if err != nil || td == nil {
				t.Fatalf("topology.json: %v", err)
			}
			if tc.nodes > 0 && (td.NumNodes != tc.nodes || td.NumLinks != tc.links) {
				t.Errorf("topology.json: %d nodes, %d links; want %d, %d", td.NumNodes, td.NumLinks, tc.nodes, tc.links)
			}
			if err := Write(dir); err != nil {
				t.Fatal(err)
			}
			svg := topologyPicture(t, readReport(t, dir))
			if n := strings.Count(svg, `class="tn"`); n != td.NumNodes {
				t.Errorf("%d nodes drawn, topology.json has %d", n, td.NumNodes)
			}
			if n := strings.Count(svg, `class="tl"`); n != td.NumLinks {
				t.Errorf("%d links drawn, topology.json has %d", n, td.NumLinks)
			}
			if n := strings.Count(svg, `stroke-dasharray="4 3">`); n != tc.failed {
				t.Errorf("%d failed links drawn, want %d", n, tc.failed)
			}
			if tc.failedLinkTxt != "" && !strings.Contains(svg, tc.failedLinkTxt) {
				t.Errorf("picture lacks %q", tc.failedLinkTxt)
			}
		})
	}
}

// synthClosTopology is topology.json of a 2-tier Clos of planes planes with t0s T0s of d0 hosts
// and u uplinks each, one to each of u T1s per plane, as lockstep names them.
func synthClosTopology(planes, t0s, d0, u int) string {
	hosts := t0s * d0
	var nodes, links []string
	for h := range hosts {
		nodes = append(nodes, fmt.Sprintf(`{"name":"h%d","kind":"host","tier":-1,"plane":-1}`, h))
	}
	for p := range planes {
		for i := range t0s {
			nodes = append(nodes, fmt.Sprintf(`{"name":"p%d.t0-%d","kind":"switch","tier":0,"plane":%d}`, p, i, p))
		}
		for j := range u {
			nodes = append(nodes, fmt.Sprintf(`{"name":"p%d.t1-%d","kind":"switch","tier":1,"plane":%d}`, p, j, p))
		}
	}
	for p := range planes {
		for h := range hosts {
			links = append(links, fmt.Sprintf(`{"name":"h%d.p%d","a":"h%d","b":"p%d.t0-%d","b_port":"p%d.t0-%d.down%d","rate_gbps":100,"level":0,"plane":%d}`, h, p, h, p, h/d0, p, h/d0, h%d0, p))
		}
		for i := range t0s {
			for j := range u {
				links = append(links, fmt.Sprintf(`{"name":"p%d.t0-%d.up%d","a":"p%d.t0-%d","b":"p%d.t1-%d","b_port":"p%d.t1-%d.down%d","rate_gbps":100,"level":1,"plane":%d}`, p, i, j, p, i, p, j, p, j, i, p))
			}
		}
	}
	return fmt.Sprintf(`{"kind":"clos","planes":%d,"hosts":%d,"switches":%d,"num_nodes":%d,"num_links":%d,"listed":true,"tiers":[],"levels":[],`,
		planes, hosts, len(nodes)-hosts, len(nodes), len(links)) +
		"\n\"nodes\": [\n  " + strings.Join(nodes, ",\n  ") + "\n],\n\"links\": [\n  " + strings.Join(links, ",\n  ") + "\n]}\n"
}

// synthClosLinks is links.csv for synthClosTopology: every host port sends in each of 10
// intervals of 2 us, more for higher host numbers.
func synthClosLinks(planes, hosts int) string {
	var b strings.Builder
	b.WriteString("start_us,end_us,port,node,plane,tier,rate_gbps,util_pct,tx_bytes,queue_max_bytes,drops\n")
	for k := range 10 {
		for p := range planes {
			for h := range hosts {
				tx := 25000 * (h + k) % 25001
				fmt.Fprintf(&b, "%d,%d,h%d.p%d,h%d,%d,-1,100,0,%d,0,0\n", 2*k, 2*k+2, h, p, h, p, tx)
			}
		}
	}
	return b.String()
}

// TestTopologyAggregated: a fabric beyond the node-by-node limits is drawn in groups and
// bundles, under MaxTopologySVG bytes, with every group's count shown and the host groups
// holding whole T0s.
func TestTopologyAggregated(t *testing.T) {
	for _, tc := range []struct{ planes, t0s, d0, u int }{
		{1, 32, 16, 16}, {2, 64, 8, 8}, {8, 16, 32, 32}, {4, 48, 24, 24},
	} {
		t.Run(fmt.Sprintf("%d planes %d T0s", tc.planes, tc.t0s), func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{fileTopology: synthClosTopology(tc.planes, tc.t0s, tc.d0, tc.u),
				fileLinks: synthClosLinks(tc.planes, tc.t0s*tc.d0), fileSummary: `{"scenario": "big", "duration_us": 20}`})
			if err := Write(dir); err != nil {
				t.Fatal(err)
			}
			svg := topologyPicture(t, readReport(t, dir))
			if len(svg) > MaxTopologySVG {
				t.Errorf("picture is %d bytes, bound %d", len(svg), MaxTopologySVG)
			}
			if strings.Contains(svg, `class="tn"`) || strings.Contains(svg, `class="tl"`) {
				t.Errorf("drawn node by node")
			}
			groups := strings.Count(svg, `class="tg"`)
			if want := min(topoHostGroups, tc.t0s) + tc.planes*2*max(topoGroups/tc.planes, 2); groups > want {
				t.Errorf("%d groups, want at most %d", groups, want)
			}
			// Each host group holds whole T0s: its size is a multiple of d0.
			for _, m := range strings.Split(svg, "hosts)</title>")[:1] {
				i := strings.LastIndex(m, "(")
				n, err := strconv.Atoi(strings.TrimSpace(m[i+1:]))
				if err != nil || n%tc.d0 != 0 {
					t.Errorf("first host group holds %q hosts, want a multiple of %d", m[i+1:], tc.d0)
				}
			}
		})
	}
}

// TestApplyFaultsGlobs: a faults.csv target marks the links it names, exactly or as a
// path.Match glob (as faults: entries may be written), by the link, its B port or an end node.
func TestApplyFaultsGlobs(t *testing.T) {
	csv := "action,target,at_us\ndown,p0.t0-1.up*,1\ndown,p1.t0-2.up3,2\ndown,x0y0z0.r.?,3\n"
	f, err := readFaults(fileFaults, strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	d := &topoData{Links: []topoLink{
		{Name: "p0.t0-1.up0"}, {Name: "p0.t0-1.up7"}, {Name: "p0.t0-2.up0"},
		{Name: "p1.t0-2.up3"}, {Name: "p1.t0-2.up30"}, {Name: "x0y0z0.r.x"}, {Name: "x0y0z0.r.xy"},
	}}
	d.applyFaults(f)
	want := []bool{true, true, false, true, false, true, false}
	for i, k := range d.Links {
		if k.failed != want[i] {
			t.Errorf("%s: failed %v, want %v", k.Name, k.failed, want[i])
		}
	}
}
