package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"strings"
)

// fileTopology is the topology the run used (docs/outputs.md, "topology.json").
const fileTopology = "topology.json"

// topoData is topology.json as the report reads it.
type topoData struct {
	Kind     string `json:"kind"`
	Planes   int    `json:"planes"`
	Hosts    int    `json:"hosts"`
	Switches int    `json:"switches"`
	NumNodes int    `json:"num_nodes"`
	NumLinks int    `json:"num_links"`
	Dims     []int  `json:"dims"`
	Listed   bool   `json:"listed"`
	Tiers    []struct {
		Tier, Plane, Switches int
	} `json:"tiers"`
	Levels []struct {
		Level, Plane, Links int
		RateGbps            float64 `json:"rate_gbps"`
	} `json:"levels"`
	Nodes []topoNode `json:"nodes"`
	Links []topoLink `json:"links"`

	index map[string]int // node name -> index in Nodes
}

// topoNode is one node of topology.json.
type topoNode struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"` // "host" or "switch"
	Tier   int    `json:"tier"`
	Plane  int    `json:"plane"`
	Coords []int  `json:"coords"`
}

// topoLink is one link of topology.json, with what links.csv and faults.csv say about it.
type topoLink struct {
	Name     string  `json:"name"`
	A        string  `json:"a"`
	B        string  `json:"b"`
	BPort    string  `json:"b_port"`
	RateGbps float64 `json:"rate_gbps"`
	Level    int     `json:"level"`
	Plane    int     `json:"plane"`

	a, b   int     // node indices
	mean   float64 // mean utilisation of the busier direction, a fraction of the rate
	peak   float64 // highest utilisation of one links.csv interval, either direction
	failed bool    // a failure of faults.csv named the link, one of its ports or one of its nodes
}

// readTopology reads topology.json (docs/outputs.md). Errors are *FileError values: bad JSON,
// a listed file whose lists do not match its counts, a link naming a node that is not listed.
func readTopology(file string, r io.Reader) (*topoData, error) {
	var d topoData
	dec := json.NewDecoder(r)
	if err := dec.Decode(&d); err != nil {
		return nil, &FileError{File: file, Err: err}
	}
	bad := func(field, format string, args ...any) error {
		return &FileError{File: file, Field: field, Err: fmt.Errorf(format, args...)}
	}
	if d.Planes < 1 {
		return nil, bad("planes", "%d; want at least 1", d.Planes)
	}
	if !d.Listed {
		return &d, nil
	}
	if len(d.Nodes) != d.NumNodes {
		return nil, bad("nodes", "lists %d nodes; num_nodes says %d", len(d.Nodes), d.NumNodes)
	}
	if len(d.Links) != d.NumLinks {
		return nil, bad("links", "lists %d links; num_links says %d", len(d.Links), d.NumLinks)
	}
	d.index = make(map[string]int, len(d.Nodes))
	for i, n := range d.Nodes {
		if _, dup := d.index[n.Name]; dup || n.Name == "" {
			return nil, bad("nodes", "node %d: name %q is empty or appears twice", i, n.Name)
		}
		d.index[n.Name] = i
	}
	for i := range d.Links {
		k := &d.Links[i]
		var okA, okB bool
		k.a, okA = d.index[k.A]
		k.b, okB = d.index[k.B]
		if !okA || !okB {
			return nil, bad("links", "link %d (%s): ends %q, %q; want names of listed nodes", i, k.Name, k.A, k.B)
		}
		if !(k.RateGbps > 0) {
			return nil, bad("links", "link %d (%s): rate_gbps %g; want > 0", i, k.Name, k.RateGbps)
		}
	}
	return &d, nil
}

// portUse is one port's traffic over links.csv: wire bytes sent and its busiest interval.
type portUse struct {
	tx   float64 // bytes
	peak float64 // fraction of the rate
}

// readPortUse reads links.csv's tx_bytes per port (required columns: start_us, end_us, port,
// rate_gbps, tx_bytes) and the span its intervals cover (us). Errors are *FileError values.
func readPortUse(file string, r io.Reader) (map[string]*portUse, float64, error) {
	t, err := newCSVTable(file, r, "start_us", "end_us", "port", "rate_gbps", "tx_bytes")
	if err != nil {
		return nil, 0, err
	}
	use := map[string]*portUse{}
	first, last := math.Inf(1), 0.0
	for {
		ok, err := t.next()
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			break
		}
		start, err := t.nonNeg("start_us")
		if err != nil {
			return nil, 0, err
		}
		end, err := t.nonNeg("end_us")
		if err != nil {
			return nil, 0, err
		}
		rate, err := t.nonNeg("rate_gbps")
		if err != nil {
			return nil, 0, err
		}
		tx, err := t.nonNeg("tx_bytes")
		if err != nil {
			return nil, 0, err
		}
		first, last = min(first, start), max(last, end)
		p := use[t.str("port")]
		if p == nil {
			p = &portUse{}
			use[strings.Clone(t.str("port"))] = p
		}
		p.tx += tx
		if end > start && rate > 0 {
			p.peak = max(p.peak, 8*tx/(rate*1e3*(end-start)))
		}
	}
	if math.IsInf(first, 1) {
		return use, 0, nil
	}
	return use, last - first, nil
}

// applyUse sets each link's mean and peak utilisation from use over span us: a direction's mean
// is its port's bytes over what the rate sends in span, the link's the busier direction's.
func (d *topoData) applyUse(use map[string]*portUse, span float64) {
	if span <= 0 {
		return
	}
	for i := range d.Links {
		k := &d.Links[i]
		for _, port := range []string{k.Name, k.BPort} {
			if p := use[port]; p != nil {
				k.mean = max(k.mean, 8*p.tx/(k.RateGbps*1e3*span))
				k.peak = max(k.peak, p.peak)
			}
		}
	}
}

// applyFaults marks the links that faults.csv's targets name: the link (its A port's name), its
// B port, or a node at either end (a switch or host failure).
func (d *topoData) applyFaults(f *faultsData) {
	if f == nil || f.table == nil {
		return
	}
	col := -1
	for i, h := range f.table.Head {
		if h == "target" {
			col = i
		}
	}
	if col < 0 {
		return
	}
	// A target is a name or, as faults: entries may be, a path.Match glob of names
	// ("p0.t0-1.up*", "x0y0z0.r.*"; fault's package doc).
	targets := map[string]bool{}
	var globs []string
	for _, row := range f.table.Rows {
		if col < len(row) {
			t := row[col]
			if strings.ContainsAny(t, "*?[") {
				globs = append(globs, t)
			} else {
				targets[t] = true
			}
		}
	}
	named := func(name string) bool {
		if targets[name] {
			return true
		}
		for _, g := range globs {
			if ok, _ := path.Match(g, name); ok {
				return true
			}
		}
		return false
	}
	for i := range d.Links {
		k := &d.Links[i]
		k.failed = named(k.Name) || named(k.BPort) || named(k.A) || named(k.B)
	}
}

// errNoLists is why an unlisted topology.json has no hottest links.
var errNoLists = errors.New("topology.json lists no links (the fabric is larger than the runner lists)")
