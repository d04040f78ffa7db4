package topo

import (
	"fmt"

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
	if len(net.Nodes) != 0 {
		return nil, fmt.Errorf("topo: build into a network that already has %d nodes", len(net.Nodes))
	}
	l, err := c.Layout()
	if err != nil {
		return nil, err
	}
	net.Reserve(l.NumNodes(), 2*l.NumLinks())
	for _, n := range l.Nodes() {
		kind := fabric.Switch
		if n.Kind == KindHost {
			kind = fabric.Host
		}
		if _, err := net.AddNode(n.Name, kind, n.Plane, n.Tier); err != nil {
			return nil, err
		}
	}
	for _, k := range l.Links() {
		qa, qb := opt.SwitchQueue, opt.SwitchQueue
		if k.Level == 0 {
			qa = opt.NICQueue // A is the host end of a host link, B the T0's last-hop port
			if opt.LastHopQueue != nil {
				qb = *opt.LastHopQueue
			}
		}
		a := fabric.PortEnd{Node: fabric.NodeID(k.A.Node), Local: k.A.Port, Name: k.Name, Queue: qa}
		b := fabric.PortEnd{Node: fabric.NodeID(k.B.Node), Local: k.B.Port, Name: l.PortName(k.B.Node, k.B.Port), Queue: qb}
		if _, _, err := net.Connect(a, b, k.Rate, k.Delay); err != nil {
			return nil, err
		}
	}
	for n := l.NumHosts(); n < l.NumNodes(); n++ {
		rt, err := l.Routes(n)
		if err != nil {
			return nil, err
		}
		net.Nodes[n].Routes = rt
	}
	return l, nil
}

// FabricRoute converts a topology route to the fabric's packet route.
func FabricRoute(r Route) fabric.Route { return fabric.Route{Hops: r.Hops, Len: r.Len} }
