package fabric

import "fmt"

// SpreadPath is one minimal route of a packet and the share of a flow's bytes it carries when
// every switch spreads the flow evenly over the ports of the destination's ECMP group: the
// egresses crossed, in order, and the product of 1/len(group) over its switches.
type SpreadPath struct {
	Ports []PortID
	Share float64
}

// SpreadPaths returns every route from host src's NIC port on plane to host dst that a
// switch's ECMP group allows (the minimal-hop ports its route table holds, failed links
// not avoided), each with the share even spreading at every switch gives it (SpreadPath):
// the fluid picture of perfect adaptive routing, where each switch splits a flow's load
// equally over its minimal ports. The shares sum to 1. Errors: no host src or plane, no
// route at a switch, a route longer than any loop-free path, or more than max routes (max
// <= 0: no bound).
func (n *Network) SpreadPaths(src int32, plane int, dst int32, max int) ([]SpreadPath, error) {
	if int(src) < 0 || int(src) >= len(n.Nodes) || plane < 0 || plane >= len(n.Nodes[src].Ports) {
		return nil, fmt.Errorf("fabric: SpreadPaths: no host %d plane %d", src, plane)
	}
	var out []SpreadPath
	var walk func(pid PortID, prefix []PortID, share float64) error
	walk = func(pid PortID, prefix []PortID, share float64) error {
		if pid < 0 || len(prefix) > len(n.Nodes) {
			return fmt.Errorf("fabric: SpreadPaths h%d -> h%d: no route after %d hops", src, dst, len(prefix))
		}
		path := append(prefix, pid)
		port := &n.Ports[pid]
		if port.peerHost {
			if max > 0 && len(out) >= max {
				return fmt.Errorf("fabric: SpreadPaths h%d -> h%d: more than %d routes", src, dst, max)
			}
			out = append(out, SpreadPath{Ports: append([]PortID(nil), path...), Share: share})
			return nil
		}
		node := &n.Nodes[port.peerNode]
		g := node.Routes.Lookup(dst)
		if len(g) == 0 {
			return fmt.Errorf("fabric: SpreadPaths h%d -> h%d: no route at %s", src, dst, node.Name)
		}
		for _, local := range g {
			if int(local) >= len(node.Ports) {
				return fmt.Errorf("fabric: SpreadPaths h%d -> h%d: bad port at %s", src, dst, node.Name)
			}
			if err := walk(node.Ports[local], path, share/float64(len(g))); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(n.Nodes[src].Ports[plane], nil, 1); err != nil {
		return nil, err
	}
	return out, nil
}
