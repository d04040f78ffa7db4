package topo

import (
	"github.com/lockstepsim/lockstep/fabric"
)

// BuildOptions configures the queues of the ports Build creates.
type BuildOptions struct {
	SwitchQueue fabric.QueueConfig // every switch egress port toward another switch
	// LastHopQueue configures T0 ports toward hosts, the last queue before a receiver (MRC
	// turns ECN off there and trims at a higher threshold [MRC §2.1]); nil means SwitchQueue.
	LastHopQueue *fabric.QueueConfig
	NICQueue     fabric.QueueConfig // every host NIC port's egress
}

// Build instantiates the Clos into net, which must be empty: every node of Layout.Nodes in
// order (so fabric NodeID = topo node index and host h = node h), every link of Layout.Links
// with its stable name at both ends and the topology's local port numbers (unconnected ports of
// a partial build stay as gaps), and every switch's up/down ECMP table from Layout.Routes.
// It returns the Layout, which the caller uses for path enumeration. Errors: an invalid Clos
// (field errors as from Validate), a non-empty network, or a fabric error.
func Build(net *fabric.Network, c Clos, opt BuildOptions) (*Layout, error) {
	l, err := c.Layout()
	if err != nil {
		return nil, err
	}
	if err := BuildTopology(net, l, opt); err != nil {
		return nil, err
	}
	return l, nil
}

// FabricRoute converts a topology route to the fabric's packet route.
func FabricRoute(r Route) fabric.Route { return fabric.Route{Hops: r.Hops, Len: r.Len} }
