package topo

// Spec is the configuration of one topology kind: Clos, FatTree, Rail, Torus or Mesh. A
// scenario's topology section holds one of them; Topology validates it and builds the
// description.
type Spec interface {
	// Kind returns the kind's name, as Params.Kind reports it: "clos", "fat_tree", "rail",
	// "torus", "mesh".
	Kind() string
	// Validate returns nil, or one *FieldError per problem joined with errors.Join, each
	// naming the field by its YAML key, the bad value and what is allowed.
	Validate() error
	// Topology validates the configuration and returns the topology (a *Layout for Clos and
	// FatTree, a *Graph for the others). Errors: those of Validate.
	Topology() (Topology, error)
}

var (
	_ Spec = Clos{}
	_ Spec = FatTree{}
	_ Spec = Rail{}
	_ Spec = Torus{}
	_ Spec = Mesh{}
)

// Kind returns "clos".
func (c Clos) Kind() string { return "clos" }

// Topology validates c and returns its Layout as a Topology.
func (c Clos) Topology() (Topology, error) {
	l, err := c.Layout()
	if err != nil {
		return nil, err
	}
	return l, nil
}

// asTopology returns g as a Topology, nil (not a nil *Graph) on error.
func asTopology(g *Graph, err error) (Topology, error) {
	if err != nil {
		return nil, err
	}
	return g, nil
}
