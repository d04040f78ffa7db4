package report

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// idTopology is the topology picture's element id.
const idTopology = "topology"

// Sizes of the topology picture. A fabric of at most topoMaxNodes nodes and topoMaxLinks links
// is drawn node by node and link by link; a larger one is aggregated into groups (at most
// topoGroups switch groups per tier row across all planes, topoHostGroups host groups, a torus
// in at most 6 x 6 blocks per z-panel and 4 panels, a mesh in topoHostGroups arcs) joined by
// bundles, so the SVG stays under MaxTopologySVG bytes whatever the fabric's size.
const (
	topoMaxNodes   = 300
	topoMaxLinks   = 800
	topoGroups     = 16
	topoHostGroups = 16
	topoWidth      = 960.0
	// MaxTopologySVG bounds the picture's SVG, in bytes (TestTopologyLarge checks it).
	MaxTopologySVG = 250_000
)

// tItem is one drawn node, or one group of nodes in an aggregated picture.
type tItem struct {
	x, y  float64
	host  bool   // drawn as a circle (hosts, host groups); else a square
	n     int    // nodes in it
	label string // its <title>
	// grid position (torus: the z-panel and x, y; -1 panel elsewhere), for deciding which
	// links are drawn whole and which as stubs
	panel, gx, gy int
}

// tEdge is one drawn link, or the bundle of links between two groups.
type tEdge struct {
	a, b   int // items
	links  []int
	stub   bool
	dx, dy float64 // a stub's direction at a (b gets the opposite)
}

// tScene is the picture before it is written as SVG.
type tScene struct {
	height     float64
	items      []tItem
	edges      []tEdge
	labels     []tText
	aggregated bool
	internal   int // links inside one group (not drawn)
}

// tText is a label of the picture.
type tText struct {
	x, y   float64
	anchor string
	text   string
}

// topologyFigure draws topology.json with every link coloured by its mean utilisation and
// widened by its peak (links.csv, over the run's duration_us), failed links (faults.csv)
// dashed red. The table lists the hottest links by name. Without topology.json the figure is
// a no-data note and the table nil.
func topologyFigure(r *runData, td *topoData) (figure, *htmlTable, error) {
	const title = "Topology, links by utilisation"
	if td == nil {
		return noData(idTopology, title, fileTopology+" not written by this run (lockstep run writes it for every run; this folder predates it)"), nil, nil
	}
	haveUse := false
	if td.Listed {
		use, span, err := loadPortUse(r.dir)
		if err != nil {
			return figure{}, nil, err
		}
		if use != nil {
			if d, ok := r.summary.number("duration_us"); ok && d > 0 {
				span = d
			}
			td.applyUse(use, span)
			haveUse = span > 0
		}
		td.applyFaults(r.faults)
	}
	sc := buildScene(td)
	svg := sc.svg(td, haveUse)
	caption := "Every node and link of the fabric (topology.json): hosts are circles, switches and chip routers squares; "
	if sc.aggregated {
		caption = fmt.Sprintf("The fabric of %d nodes and %d links (topology.json), aggregated: each mark is a group of consecutive nodes (its count on hover), each line the bundle of links between two groups, coloured by the bundle's mean and widened by its links' highest peak; %d links inside a group are not drawn. ",
			td.NumNodes, td.NumLinks, sc.internal)
	}
	switch {
	case !td.Listed:
		caption += "The fabric is too large for topology.json to list its links, so no utilisation is shown."
	case haveUse:
		caption += "a link's colour is the mean utilisation of its busier direction over the run (links.csv bytes over the rate and duration_us), its width the highest one-interval utilisation; failed links (faults.csv) are dashed red."
	default:
		caption += "no links.csv (packet-level runs write it), so links are grey; failed links (faults.csv) are dashed red."
	}
	if strings.Contains(td.Kind, "torus") {
		caption += " Torus: one panel per z-plane; wrap-around and z links are short stubs at both ends."
	}
	return figure{ID: idTopology, Title: title, Caption: caption, SVG: template.HTML(svg)}, hotLinksTable(td, haveUse), nil
}

// loadPortUse reads links.csv of dir for the picture; nil without the file.
func loadPortUse(dir string) (map[string]*portUse, float64, error) {
	type res struct {
		use  map[string]*portUse
		span float64
	}
	v, st, err := readIn(dir, fileLinks, func(file string, rd io.Reader) (res, error) {
		u, s, err := readPortUse(file, rd)
		return res{u, s}, err
	})
	if err != nil || !st.Found {
		return nil, 0, err
	}
	return v.use, v.span, nil
}

// loadTopology reads topology.json of dir; nil when absent.
func loadTopology(dir string) (*topoData, fileStatus, error) {
	return readIn(dir, fileTopology, readTopology)
}

// hotLinksTable lists the busiest links by mean utilisation (then peak, then name).
func hotLinksTable(td *topoData, haveUse bool) *htmlTable {
	const n = 20
	t := &htmlTable{ID: "topology-hot-table", Title: "Hottest links (topology.json, links.csv)",
		Caption: "Mean: the busier direction's bytes over the rate and the run's duration_us; peak: the busiest links.csv interval of either direction.",
		Head:    []string{"link", "from", "to", "level", "plane", "rate Gb/s", "mean util %", "peak util %", "failed"}}
	switch {
	case !td.Listed:
		t.Note = "no data: " + errNoLists.Error()
		return t
	case !haveUse:
		t.Note = "no data: " + absent(fileLinks)
		return t
	}
	idx := make([]int, 0, len(td.Links))
	for i, k := range td.Links {
		if k.mean > 0 || k.peak > 0 {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(i, j int) int {
		a, b := &td.Links[i], &td.Links[j]
		if c := cmp.Compare(b.mean, a.mean); c != 0 {
			return c
		}
		if c := cmp.Compare(b.peak, a.peak); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(idx) == 0 {
		t.Note = "no data: no link carried traffic in links.csv"
		return t
	}
	if len(idx) > n {
		t.Note = fmt.Sprintf("%d of the %d links that carried traffic shown.", n, len(idx))
		idx = idx[:n]
	}
	for _, i := range idx {
		k := &td.Links[i]
		f := ""
		if k.failed {
			f = "yes"
		}
		t.Rows = append(t.Rows, []cell{{Text: k.Name}, {Text: k.A}, {Text: k.B}, {Text: strconv.Itoa(k.Level), Num: true},
			{Text: strconv.Itoa(k.Plane), Num: true}, {Text: fmtNum(k.RateGbps), Num: true},
			{Text: strconv.FormatFloat(100*k.mean, 'f', 1, 64), Num: true}, {Text: strconv.FormatFloat(100*k.peak, 'f', 1, 64), Num: true}, {Text: f}})
	}
	return t
}

// buildScene lays td out: layered for Clos, fat-tree and rail (and any kind it does not know),
// a grid per z-plane for a torus, a circle for a mesh; aggregated beyond topoMaxNodes nodes or
// topoMaxLinks links.
func buildScene(td *topoData) *tScene {
	if !td.Listed {
		return summaryScene(td)
	}
	agg := td.NumNodes > topoMaxNodes || td.NumLinks > topoMaxLinks
	var sc *tScene
	var of []int // node -> item
	switch {
	case td.Kind == "torus" && len(td.Dims) == 3:
		sc, of = torusScene(td, agg)
	case td.Kind == "mesh":
		sc, of = meshScene(td, agg)
	default:
		sc, of = layeredScene(td, agg)
	}
	sc.aggregated = agg
	sc.connect(td, of)
	return sc
}

// connect makes the scene's edges: one per link, or one per pair of groups when aggregated.
func (sc *tScene) connect(td *topoData, of []int) {
	bundle := map[[2]int]int{}
	for i, k := range td.Links {
		a, b := of[k.a], of[k.b]
		if !sc.aggregated {
			sc.edges = append(sc.edges, tEdge{a: a, b: b, links: []int{i}})
			continue
		}
		if a == b {
			sc.internal++
			continue
		}
		key := [2]int{min(a, b), max(a, b)}
		j, ok := bundle[key]
		if !ok {
			j = len(sc.edges)
			bundle[key] = j
			sc.edges = append(sc.edges, tEdge{a: a, b: b})
		}
		sc.edges[j].links = append(sc.edges[j].links, i)
	}
	for i := range sc.edges {
		e := &sc.edges[i]
		ia, ib := &sc.items[e.a], &sc.items[e.b]
		if ia.panel < 0 {
			continue
		}
		dx, dy := ib.gx-ia.gx, ib.gy-ia.gy
		if ia.panel == ib.panel && abs(dx)+abs(dy) == 1 {
			continue
		}
		e.stub = true
		name := td.Links[e.links[0]].Name
		switch {
		case strings.HasSuffix(name, "x+"):
			e.dx = 1
		case strings.HasSuffix(name, "y+"):
			e.dy = 1
		default:
			e.dx, e.dy = 0.7, -0.7
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// chunks returns how many consecutive members each of at most groups groups takes, a multiple
// of unit (>= 1).
func chunkSize(n, groups, unit int) int {
	c := (n + groups - 1) / max(groups, 1)
	unit = max(unit, 1)
	return max(unit, (c+unit-1)/unit*unit)
}

// layeredScene places hosts in a row at the bottom and each plane's switches in a panel above,
// one row per tier, T0 lowest. Aggregated: each row's switches in consecutive groups (at most
// topoGroups per tier across the planes), hosts in groups of whole T0s.
func layeredScene(td *topoData, agg bool) (*tScene, []int) {
	const left, right, top, rowH = 34.0, 8.0, 30.0, 72.0
	planes := max(td.Planes, 1)
	maxTier := 0
	rows := map[[2]int][]int{} // (plane, tier) -> nodes
	var hosts []int
	for i, n := range td.Nodes {
		if n.Kind == "host" {
			hosts = append(hosts, i)
			continue
		}
		p := min(max(n.Plane, 0), planes-1)
		rows[[2]int{p, n.Tier}] = append(rows[[2]int{p, n.Tier}], i)
		maxTier = max(maxTier, n.Tier)
	}
	sc := &tScene{}
	of := make([]int, len(td.Nodes))
	inner := topoWidth - left - right
	panelW := inner / float64(planes)
	hostY := top + float64(maxTier+1)*rowH
	sc.height = hostY + 24
	for p := range planes {
		sc.labels = append(sc.labels, tText{left + (float64(p)+0.5)*panelW, 14, "middle", "plane " + strconv.Itoa(p)})
	}
	for t := 0; t <= maxTier; t++ {
		y := top + float64(maxTier-t)*rowH
		sc.labels = append(sc.labels, tText{4, y + 4, "start", "T" + strconv.Itoa(t)})
		for p := range planes {
			ns := rows[[2]int{p, t}]
			size := 1
			if agg {
				size = chunkSize(len(ns), max(topoGroups/planes, 2), 1)
			}
			groups := (len(ns) + size - 1) / size
			for g := range groups {
				lo, hi := g*size, min((g+1)*size, len(ns))
				it := tItem{x: left + float64(p)*panelW + (float64(g)+0.5)*panelW/float64(groups), y: y, n: hi - lo, panel: -1}
				it.label = td.Nodes[ns[lo]].Name
				if hi-lo > 1 {
					it.label = fmt.Sprintf("%s .. %s (%d switches)", td.Nodes[ns[lo]].Name, td.Nodes[ns[hi-1]].Name, hi-lo)
				}
				for _, n := range ns[lo:hi] {
					of[n] = len(sc.items)
				}
				sc.items = append(sc.items, it)
			}
		}
	}
	sc.labels = append(sc.labels, tText{4, hostY + 4, "start", "hosts"})
	size := 1
	if agg {
		size = chunkSize(len(hosts), topoHostGroups, hostsPerT0(td))
	}
	groups := (len(hosts) + size - 1) / size
	for g := range groups {
		lo, hi := g*size, min((g+1)*size, len(hosts))
		it := tItem{x: left + (float64(g)+0.5)*inner/float64(groups), y: hostY, host: true, n: hi - lo, panel: -1}
		it.label = td.Nodes[hosts[lo]].Name
		if hi-lo > 1 {
			it.label = fmt.Sprintf("%s .. %s (%d hosts)", td.Nodes[hosts[lo]].Name, td.Nodes[hosts[hi-1]].Name, hi-lo)
		}
		for _, n := range hosts[lo:hi] {
			of[n] = len(sc.items)
		}
		sc.items = append(sc.items, it)
	}
	return sc, of
}

// hostsPerT0 is how many hosts the first T0 of the lowest plane has (host groups hold whole
// T0s).
func hostsPerT0(td *topoData) int {
	first, n := -1, 0
	for _, k := range td.Links {
		if k.Level != 0 || td.Nodes[k.a].Kind != "host" {
			continue
		}
		if first < 0 {
			first = k.b
		}
		if k.b == first {
			n++
		}
	}
	return max(n, 1)
}

// torusScene draws a torus as one grid panel per z-plane: each chip's router a square at (x, y)
// and the chip a dot beside it. Aggregated: blocks of chips (at most 6 x 6 per panel and 4
// panels), each chip and router in its block.
func torusScene(td *topoData, agg bool) (*tScene, []int) {
	k := td.Dims
	b := [3]int{1, 1, 1}
	if agg {
		b = [3]int{(k[0] + 5) / 6, (k[1] + 5) / 6, (k[2] + 3) / 4}
	}
	g := [3]int{(k[0] + b[0] - 1) / b[0], (k[1] + b[1] - 1) / b[1], (k[2] + b[2] - 1) / b[2]}
	const gap, top = 24.0, 26.0
	cell := 36.0
	cols := max(1, min(g[2], int((topoWidth-gap)/(float64(g[0])*cell+gap))))
	if cols == 1 && float64(g[0])*cell+2*gap > topoWidth {
		cell = (topoWidth - 2*gap) / float64(g[0])
	}
	panelW, panelH := float64(g[0])*cell+gap, float64(g[1])*cell+top
	sc := &tScene{height: float64((g[2]+cols-1)/cols)*panelH + 8}
	for z := range g[2] {
		px, py := gap/2+float64(z%cols)*panelW, float64(z/cols)*panelH
		lab := "z = " + strconv.Itoa(z)
		if b[2] > 1 {
			lab = fmt.Sprintf("z = %d..%d", z*b[2], min((z+1)*b[2], k[2])-1)
		}
		sc.labels = append(sc.labels, tText{px + float64(g[0])*cell/2, py + 14, "middle", lab})
	}
	pos := func(c []int) (panel, x, y int, px, py float64) {
		x, y, panel = c[0]/b[0], c[1]/b[1], c[2]/b[2]
		px = gap/2 + float64(panel%cols)*panelW + (float64(x)+0.5)*cell
		py = float64(panel/cols)*panelH + top + (float64(y)+0.5)*cell
		return
	}
	of := make([]int, len(td.Nodes))
	if !agg {
		for i, n := range td.Nodes {
			if len(n.Coords) != 3 {
				n.Coords = []int{0, 0, 0}
			}
			p, x, y, px, py := pos(n.Coords)
			it := tItem{x: px, y: py, n: 1, label: n.Name, panel: p, gx: x, gy: y}
			if n.Kind == "host" {
				it.host, it.x, it.y, it.panel = true, px-cell*0.28, py-cell*0.28, -1
			}
			of[i] = len(sc.items)
			sc.items = append(sc.items, it)
		}
		return sc, of
	}
	block := map[[3]int]int{}
	for i, n := range td.Nodes {
		c := n.Coords
		if len(c) != 3 {
			c = []int{0, 0, 0}
		}
		key := [3]int{c[0] / b[0], c[1] / b[1], c[2] / b[2]}
		j, ok := block[key]
		if !ok {
			p, x, y, px, py := pos(c)
			j = len(sc.items)
			block[key] = j
			sc.items = append(sc.items, tItem{x: px, y: py, panel: p, gx: x, gy: y,
				label: fmt.Sprintf("block x %d..%d, y %d..%d, z %d..%d", key[0]*b[0], min((key[0]+1)*b[0], k[0])-1, key[1]*b[1], min((key[1]+1)*b[1], k[1])-1, key[2]*b[2], min((key[2]+1)*b[2], k[2])-1)})
		}
		sc.items[j].n++
		of[i] = j
	}
	for i := range sc.items {
		sc.items[i].label += fmt.Sprintf(" (%d nodes: chips and their routers)", sc.items[i].n)
	}
	return sc, of
}

// meshScene places a mesh's routers on a circle, each chip just outside its router.
// Aggregated: arcs of consecutive chips (at most topoHostGroups), each with its routers.
func meshScene(td *topoData, agg bool) (*tScene, []int) {
	const radius = 170.0
	cx, cy := topoWidth/2, radius+40
	hostOf := make([]int, len(td.Nodes)) // router -> its chip
	for i := range hostOf {
		hostOf[i] = i
	}
	for _, k := range td.Links {
		if k.Level == 0 && td.Nodes[k.a].Kind == "host" {
			hostOf[k.b] = k.a
		}
	}
	sc := &tScene{height: 2*radius + 80}
	of := make([]int, len(td.Nodes))
	h := max(td.Hosts, 1)
	size := 1
	if agg {
		size = chunkSize(h, topoHostGroups, 1)
	}
	groups := (h + size - 1) / size
	angle := func(pos float64) (float64, float64) {
		a := 2*math.Pi*pos/float64(groups) - math.Pi/2
		return math.Cos(a), math.Sin(a)
	}
	if !agg {
		for i, n := range td.Nodes {
			c, s := angle(float64(hostOf[i]))
			it := tItem{x: cx + radius*c, y: cy + radius*s, n: 1, label: n.Name, panel: -1}
			if n.Kind == "host" {
				it.host, it.x, it.y = true, cx+(radius+22)*c, cy+(radius+22)*s
			}
			of[i] = len(sc.items)
			sc.items = append(sc.items, it)
		}
		return sc, of
	}
	for g := range groups {
		c, s := angle(float64(g))
		lo, hi := g*size, min((g+1)*size, h)
		sc.items = append(sc.items, tItem{x: cx + radius*c, y: cy + radius*s, n: 0, panel: -1,
			label: fmt.Sprintf("%s .. %s and their routers", td.Nodes[min(lo, len(td.Nodes)-1)].Name, td.Nodes[min(hi-1, len(td.Nodes)-1)].Name)})
	}
	for i := range td.Nodes {
		g := min(hostOf[i]/size, groups-1)
		of[i] = g
		sc.items[g].n++
	}
	for i := range sc.items {
		sc.items[i].label += fmt.Sprintf(" (%d nodes)", sc.items[i].n)
	}
	return sc, of
}

// summaryScene draws an unlisted topology.json from its counts: one box per tier and plane, the
// hosts as one group, a line per level and plane.
func summaryScene(td *topoData) *tScene {
	const left, right, top, rowH = 34.0, 8.0, 30.0, 72.0
	planes := max(td.Planes, 1)
	maxTier := 0
	for _, t := range td.Tiers {
		maxTier = max(maxTier, t.Tier)
	}
	panelW := (topoWidth - left - right) / float64(planes)
	hostY := top + float64(maxTier+1)*rowH
	sc := &tScene{height: hostY + 24, aggregated: true}
	sc.items = append(sc.items, tItem{x: topoWidth / 2, y: hostY, host: true, n: td.Hosts, panel: -1, label: fmt.Sprintf("%d hosts", td.Hosts)})
	sc.labels = append(sc.labels, tText{4, hostY + 4, "start", "hosts"})
	at := map[[2]int]int{}
	for _, t := range td.Tiers {
		y := top + float64(maxTier-t.Tier)*rowH
		at[[2]int{t.Plane, t.Tier}] = len(sc.items)
		sc.items = append(sc.items, tItem{x: left + (float64(t.Plane)+0.5)*panelW, y: y, n: t.Switches, panel: -1,
			label: fmt.Sprintf("plane %d tier %d: %d switches", t.Plane, t.Tier, t.Switches)})
	}
	for p := range planes {
		sc.labels = append(sc.labels, tText{left + (float64(p)+0.5)*panelW, 14, "middle", "plane " + strconv.Itoa(p)})
	}
	for _, l := range td.Levels {
		b, ok := at[[2]int{l.Plane, l.Level}]
		a := 0
		if l.Level > 0 {
			a, ok = at[[2]int{l.Plane, l.Level - 1}]
		}
		if !ok {
			continue
		}
		sc.edges = append(sc.edges, tEdge{a: a, b: b})
	}
	return sc
}

// utilColour maps a utilisation (fraction) to a colour from pale blue (idle) through yellow and
// orange to dark red (saturated).
func utilColour(u float64) string {
	stops := [][3]float64{{198, 219, 239}, {255, 237, 160}, {253, 174, 97}, {240, 59, 32}, {165, 0, 38}}
	u = min(max(u, 0), 1) * float64(len(stops)-1)
	i := min(int(u), len(stops)-2)
	f := u - float64(i)
	var c [3]int
	for j := range c {
		c[j] = int(math.Round(stops[i][j] + f*(stops[i+1][j]-stops[i][j])))
	}
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2])
}

// peakWidth is the stroke width for a peak utilisation (fraction).
func peakWidth(p float64) float64 { return 0.8 + 3.2*min(max(p, 0), 1) }

// svg writes the scene: links first (under the nodes), then nodes, labels and the legend.
// Element classes: "tn" a node, "tg" a group of nodes, "tl" a link, "tb" a bundle of links.
func (sc *tScene) svg(td *topoData, haveUse bool) string {
	const legendH = 46.0
	h := sc.height + legendH
	var b strings.Builder
	b.Grow(64 * (len(sc.items) + 2*len(sc.edges)))
	fmt.Fprintf(&b, `<svg class="plot" id="%s" role="img" aria-label="topology" viewBox="0 0 %.0f %.0f" xmlns="http://www.w3.org/2000/svg" font-family="Liberation Sans, Arial, Helvetica, sans-serif" font-size="11">`, idTopology, topoWidth, h)
	b.WriteString("\n")
	mark := 5.0
	if n := len(sc.items); n > 120 {
		mark = 3.5
	}
	for _, e := range sc.edges {
		a, c := sc.items[e.a], sc.items[e.b]
		cls, stroke, width, dash := "tl", "#b0b0b0", 1.0, ""
		var mean, peak float64
		failed := 0
		for _, i := range e.links {
			k := &td.Links[i]
			mean += k.mean
			peak = max(peak, k.peak)
			if k.failed {
				failed++
			}
		}
		if len(e.links) > 0 {
			mean /= float64(len(e.links))
		}
		if sc.aggregated {
			cls = "tb"
		}
		if haveUse {
			stroke, width = utilColour(mean), peakWidth(peak)
		}
		if failed > 0 {
			stroke, dash = "#d00000", ` stroke-dasharray="4 3"`
		}
		var geo string
		if e.stub {
			s := 9.0
			geo = fmt.Sprintf(`<path class="%s" d="M%.1f %.1fl%.1f %.1fM%.1f %.1fl%.1f %.1f" fill="none"`, cls, a.x, a.y, s*e.dx, s*e.dy, c.x, c.y, -s*e.dx, -s*e.dy)
		} else {
			geo = fmt.Sprintf(`<line class="%s" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"`, cls, a.x, a.y, c.x, c.y)
		}
		fmt.Fprintf(&b, `%s stroke="%s" stroke-width="%.2g"%s>`, geo, stroke, width, dash)
		switch {
		case len(e.links) == 0: // a summary's level
			b.WriteString("<title>links</title>")
		case sc.aggregated:
			fmt.Fprintf(&b, "<title>%d links: mean %.1f%%, peak %.1f%%, %d failed</title>", len(e.links), 100*mean, 100*peak, failed)
		default:
			k := &td.Links[e.links[0]]
			fmt.Fprintf(&b, "<title>%s (%s - %s): mean %.1f%%, peak %.1f%%%s</title>", template.HTMLEscapeString(k.Name),
				template.HTMLEscapeString(k.A), template.HTMLEscapeString(k.B), 100*k.mean, 100*k.peak, map[bool]string{true: ", failed"}[k.failed])
		}
		if e.stub {
			b.WriteString("</path>\n")
		} else {
			b.WriteString("</line>\n")
		}
	}
	for _, it := range sc.items {
		cls, m := "tn", mark
		if sc.aggregated {
			cls, m = "tg", mark+2
		}
		title := "<title>" + template.HTMLEscapeString(it.label) + "</title>"
		if it.host {
			fmt.Fprintf(&b, `<circle class="%s" cx="%.1f" cy="%.1f" r="%.1f" fill="#ffffff" stroke="#333">%s</circle>`+"\n", cls, it.x, it.y, m*0.8, title)
		} else {
			fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#4a4a4a">%s</rect>`+"\n", cls, it.x-m, it.y-m, 2*m, 2*m, title)
		}
		if sc.aggregated && it.n > 1 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="9" fill="#444" stroke="#fff" stroke-width="3" paint-order="stroke">%d</text>`+"\n", it.x, it.y+m+10, it.n)
		}
	}
	for _, t := range sc.labels {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="#333">%s</text>`+"\n", t.x, t.y, t.anchor, template.HTMLEscapeString(t.text))
	}
	sc.legend(&b, sc.height+8, haveUse)
	b.WriteString("</svg>")
	return b.String()
}

// legend writes the colour scale, the peak widths and the failed-link mark at y.
func (sc *tScene) legend(b *strings.Builder, y float64, haveUse bool) {
	x := 10.0
	if haveUse {
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" fill="#333">mean utilisation</text>`+"\n", x, y+11)
		x += 100
		for i := range 10 {
			fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="16" height="10" fill="%s"/>`, x+16*float64(i), y+2, utilColour((float64(i)+0.5)/10))
		}
		for _, v := range []float64{0, 0.5, 1} {
			fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="middle" fill="#333">%.0f%%</text>`, x+160*v, y+26, 100*v)
		}
		b.WriteString("\n")
		x += 190
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" fill="#333">peak (width)</text>`+"\n", x, y+11)
		x += 78
		for _, v := range []float64{0, 0.5, 1} {
			fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#555" stroke-width="%.2g"/><text x="%.0f" y="%.0f" text-anchor="middle" fill="#333">%.0f%%</text>`,
				x, y+7, x+26, y+7, peakWidth(v), x+13, y+26, 100*v)
			x += 40
		}
		b.WriteString("\n")
		x += 20
	} else {
		fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#b0b0b0"/><text x="%.0f" y="%.0f" fill="#333">no utilisation data</text>`+"\n", x, y+7, x+26, y+7, x+32, y+11)
		x += 170
	}
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#d00000" stroke-width="1.5" stroke-dasharray="4 3"/><text x="%.0f" y="%.0f" fill="#333">failed (faults.csv)</text>`+"\n", x, y+7, x+26, y+7, x+32, y+11)
	x += 150
	fmt.Fprintf(b, `<circle cx="%.0f" cy="%.0f" r="4" fill="#fff" stroke="#333"/><text x="%.0f" y="%.0f" fill="#333">host</text>`, x, y+7, x+8, y+11)
	x += 50
	fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="9" height="9" fill="#4a4a4a"/><text x="%.0f" y="%.0f" fill="#333">switch</text>`+"\n", x-4, y+3, x+8, y+11)
	if sc.aggregated {
		fmt.Fprintf(b, `<text x="%.0f" y="%.0f" fill="#333">(groups: hover for names)</text>`+"\n", x+60, y+11)
	}
}
