package scenario

import (
	"errors"
	"path/filepath"

	"github.com/lockstepsim/lockstep/topo"
)

// topology resolves the topology section (the one kind set, validated and described) and
// writes its defaults back so the resolved scenario shows them; it relies on nothing.
func (r *resolver) topology() error {
	sc := r.sc
	if sc.Topology.Graph != nil {
		sc.Topology.Graph.dir = sc.dir // its file is read from the scenario's folder
	}
	l, err := sc.Topology.Describe()
	if err != nil {
		return err
	}
	if cl, ok := l.(*topo.Layout); ok && sc.Topology.Clos != nil {
		c := cl.Config()
		sc.Topology.Clos = &c
	}
	// Show every default in the resolved scenario.
	if t := sc.Topology.Rail; t != nil {
		*t = t.WithDefaults()
	}
	if t := sc.Topology.Torus; t != nil {
		*t = t.WithDefaults()
	}
	if t := sc.Topology.Mesh; t != nil {
		*t = t.WithDefaults()
	}
	r.l, r.c = l, l.Params()
	if err := sc.addGraphLosses(); err != nil { // topology_graph.go: link error rates as loss faults
		return err
	}
	if g := sc.Topology.Graph; g != nil {
		// The resolved scenario names the file absolutely (it resolves again from anywhere).
		if abs, err := filepath.Abs(g.path()); err == nil {
			g.File = abs
		}
	}
	return sc.addFileFaults() // traffic_file.go: htsim failure lines as faults
}

// closError prefixes the Clos's field errors with their scenario path.
func closError(err error) error { return kindError("clos", err) }

// kindError prefixes a topology kind's field errors with their scenario path
// (topology.<key>.<field>). Validate may join several; the first is reported, so the message
// stays one line.
func kindError(key string, err error) error {
	var fe *topo.FieldError
	if errors.As(err, &fe) {
		return Errorf("topology."+key+"."+fe.Field, "%s", fe.Msg)
	}
	return Errorf("topology."+key, "%v", err)
}
