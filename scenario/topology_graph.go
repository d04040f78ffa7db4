package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/traffic/ns3"
)

// GraphFile is the topology kind "graph": switches, hosts and links read from a file in
// another simulator's format (docs/importers.md). Format "ns3" is an ns-3 HPCC topology.txt
// (traffic/ns3: node, switch and link counts, the switch ids, then "src dst rate delay
// error_rate" per link), built by ns3.Topology.GraphSpec into a topo.Graph: hosts h0.. (ns-3
// nodes 0..H-1), switches sw<id>, one NIC port per host, minimal-path routing over the
// graph (ECMP tables for RoCE, every minimal path for MRC's spraying). Links with a
// non-zero error_rate become loss faults from time 0 (LossFaults), added to the scenario's
// faults.
type GraphFile struct {
	// Format is the file's format: "ns3".
	Format string `yaml:"format" json:"format"`
	// File is the topology file; a relative path is read from the scenario's folder.
	File string `yaml:"file" json:"file"`

	dir string // the scenario's folder (Scenario.Dir), set by Resolve
}

// graphFormats are the formats topology.graph reads.
var graphFormats = []string{"ns3"}

// Kind returns "graph".
func (g GraphFile) Kind() string { return "graph" }

// Validate reads and checks the file (see Topology).
func (g GraphFile) Validate() error {
	_, err := g.spec()
	return err
}

// Topology reads the file and returns its Graph. Errors are *topo.FieldError: format not
// one of the known ones, the file missing or unreadable, a bad value at file:line:col, a shape
// the graph kind cannot take.
func (g GraphFile) Topology() (topo.Topology, error) {
	spec, err := g.spec()
	if err != nil {
		return nil, err
	}
	gr, err := topo.NewGraph(spec)
	if err != nil {
		return nil, &topo.FieldError{Field: "file", Msg: fmt.Sprintf("%s: %v", g.File, err)}
	}
	return gr, nil
}

// path returns the file's path: File, under the scenario's folder when relative, made
// absolute (so errors name the same file wherever lockstep runs from).
func (g GraphFile) path() string {
	p := g.File
	if !filepath.IsAbs(p) && g.dir != "" {
		p = filepath.Join(g.dir, p)
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// ReadGraphNS3 reads an ns-3 topology file and returns it with its graph lists. Errors name
// the file (file:line:col for a bad value).
func ReadGraphNS3(path string) (*ns3.Topology, topo.GraphSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, topo.GraphSpec{}, err
	}
	defer f.Close()
	t, err := ns3.ReadTopology(f, path)
	if err != nil {
		return nil, topo.GraphSpec{}, err
	}
	spec, err := t.GraphSpec() // its errors name the file
	if err != nil {
		return nil, topo.GraphSpec{}, err
	}
	return t, spec, nil
}

func (g GraphFile) spec() (topo.GraphSpec, error) {
	fe := func(field, format string, a ...any) error {
		return &topo.FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	switch {
	case g.Format == "":
		return topo.GraphSpec{}, fe("format", "missing; allowed %s", strings.Join(graphFormats, ", "))
	case g.Format != "ns3":
		return topo.GraphSpec{}, fe("format", "%q is not a topology file format; allowed %s", g.Format, strings.Join(graphFormats, ", "))
	case g.File == "":
		return topo.GraphSpec{}, fe("file", "missing; give the topology file (an ns-3 HPCC topology.txt)")
	}
	_, spec, err := ReadGraphNS3(g.path())
	if err != nil {
		return topo.GraphSpec{}, fe("file", "%v", err)
	}
	return spec, nil
}

// LossFaults returns the faults that model the file's link error rates: per link with a
// non-zero error_rate, packet loss at that probability in both directions from the start of
// the run (ns-3's RateErrorModel drops each packet with the link's error rate).
func (g GraphFile) LossFaults() ([]Fault, error) {
	t, spec, err := ReadGraphNS3(g.path())
	if err != nil {
		return nil, err
	}
	var out []Fault
	for _, l := range t.LossLinks(spec) {
		out = append(out, Fault{At: 0, Link: l.Port, Action: "loss", Loss: l.Loss, Direction: "both"})
	}
	return out, nil
}

// checkGraphPaths rejects an ns-3 flow.txt flow (pattern file, format ns3) between hosts no
// path of the graph joins, naming the flow's file:line:col, so import and resolve fail
// where run would. A file that does not read is left to the traffic step, which names it.
func (sc *Scenario) checkGraphPaths() error {
	g := sc.Topology.Graph
	t, _, err := ReadGraphNS3(g.path())
	if err != nil {
		return nil // LossFaults has read it already
	}
	var comp []int
	hosts := t.Nodes - len(t.Switches)
	for i := range sc.Traffic {
		tr := &sc.Traffic[i]
		if tr.Pattern != PatternFile || tr.Format != "ns3" || tr.File == "" {
			continue
		}
		path := tr.filePath(TrafficEnv{Dir: sc.dir})
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		fl, err := ns3.ReadFlows(f, path, hosts)
		f.Close()
		if err != nil {
			continue
		}
		if comp == nil {
			comp = t.Components()
		}
		for j, x := range fl {
			if comp[x.Src] != comp[x.Dst] {
				return Errorf(fmt.Sprintf("traffic[%d].file", i), "%s:%d:%d: flow %d from host %d to host %d: no path joins them in %s (they are in separate parts of the graph); link the parts or leave the flow out", path, x.Line, x.Col, j, x.Src, x.Dst, g.File)
			}
		}
	}
	return nil
}

// addGraphLosses appends the graph's loss faults (LossFaults) that sc.Faults does not
// already hold, so the resolved scenario shows them and resolving it again is a fixed point.
func (sc *Scenario) addGraphLosses() error {
	if sc.Topology.Graph == nil {
		return nil
	}
	lf, err := sc.Topology.Graph.LossFaults()
	if err != nil {
		return Errorf("topology.graph.file", "%v", err)
	}
	if err := sc.checkGraphPaths(); err != nil {
		return err
	}
	for _, f := range lf {
		if i := slices.IndexFunc(sc.Faults, func(g Fault) bool {
			return g.At == 0 && g.Link == f.Link && g.Action == f.Action && (g.Loss != f.Loss || g.Direction != f.Direction)
		}); i >= 0 {
			return Errorf(fmt.Sprintf("faults[%d]", i), "sets the loss of link %s at 0s, and %s gives it error_rate %g (a loss fault from 0s); give the loss in one place", f.Link, sc.Topology.Graph.File, f.Loss)
		}
		if !slices.ContainsFunc(sc.Faults, func(g Fault) bool {
			return g.At == 0 && g.Link == f.Link && g.Action == f.Action && g.Loss == f.Loss && g.Direction == f.Direction && g.Random == nil && g.For == 0
		}) {
			sc.Faults = append(sc.Faults, f)
		}
	}
	return nil
}
