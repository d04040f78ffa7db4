package fault

import (
	"fmt"
	pathpkg "path"
	"strconv"
	"strings"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
)

// Inventory lists what fault targets resolve against: a fabric's named nodes and ports and how
// they are wired. Indices are fabric.NodeID and fabric.PortID: FromLayout (at load time,
// without building the fabric) and FromNetwork (at run time, from the built fabric) give equal
// inventories for the same topology, so a schedule expanded from either names the same
// elements by the same indices.
type Inventory struct {
	Nodes []Node
	Ports []Port
}

// Node is one host or switch.
type Node struct {
	Name   string // "h3", "p0.t1-2"
	Switch bool   // false for a host
	// Ports are the node's connected ports by local port number, -1 where a number is
	// unconnected; trailing unconnected numbers are left out.
	Ports []int32
}

// Port is one end of a link (one direction: the port transmits toward Peer).
type Port struct {
	Name string // "h3.p2", "p0.t0-1.up3", "p0.t1-2.down5"
	Node int32
	Peer int32
	// Rate is the link's built rate in bits/s (both directions run at one rate).
	Rate sim.Rate
}

// FromLayout lists a Clos layout's nodes and ports in the order topo.Build creates them in a
// fabric.Network: nodes by index, ports two per link of Layout.Links (its A end, then its B
// end).
func FromLayout(l topo.Topology) *Inventory {
	nodes := l.Nodes()
	links := l.Links()
	inv := &Inventory{Nodes: make([]Node, len(nodes)), Ports: make([]Port, 0, 2*len(links))}
	for i, n := range nodes {
		inv.Nodes[i] = Node{Name: n.Name, Switch: n.Kind == topo.KindSwitch}
	}
	attach := func(node, local int, id int32) {
		ps := inv.Nodes[node].Ports
		for len(ps) <= local {
			ps = append(ps, -1)
		}
		ps[local] = id
		inv.Nodes[node].Ports = ps
	}
	for _, k := range links {
		a := int32(len(inv.Ports))
		inv.Ports = append(inv.Ports,
			Port{Name: k.Name, Node: int32(k.A.Node), Peer: a + 1, Rate: k.Rate},
			Port{Name: l.PortName(k.B.Node, k.B.Port), Node: int32(k.B.Node), Peer: a, Rate: k.Rate})
		attach(k.A.Node, k.A.Port, a)
		attach(k.B.Node, k.B.Port, a+1)
	}
	return inv
}

// FromNetwork lists a built network's nodes and ports. Call it before any fault is applied:
// Port.Rate is read as the built rate.
func FromNetwork(net *fabric.Network) *Inventory {
	inv := &Inventory{Nodes: make([]Node, len(net.Nodes)), Ports: make([]Port, len(net.Ports))}
	for i := range net.Nodes {
		n := &net.Nodes[i]
		last := len(n.Ports)
		for last > 0 && n.Ports[last-1] < 0 {
			last--
		}
		var ps []int32
		if last > 0 {
			ps = make([]int32, last)
			for j := range ps {
				ps[j] = int32(n.Ports[j])
			}
		}
		inv.Nodes[i] = Node{Name: n.Name, Switch: n.Kind == fabric.Switch, Ports: ps}
	}
	for i := range net.Ports {
		p := &net.Ports[i]
		inv.Ports[i] = Port{Name: p.Name, Node: int32(p.Node), Peer: int32(p.Peer), Rate: p.Rate}
	}
	return inv
}

// target is one element a pattern matched: a port (link, nic), a switch, or a transceiver.
type target struct {
	name  string
	node  int32   // the switch of a switch target; -1 otherwise
	ports []int32 // the named ends: the port, the switch's ports, the transceiver's ports
}

// side returns how a port name ends: 'p' for a host NIC port ".p<k>", 'd' for ".down<k>",
// 'u' for ".up<k>" (0 when the name has another shape), and k.
func side(name string) (byte, int) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return 0, 0
	}
	s := name[i+1:]
	for _, p := range [...]struct {
		prefix string
		side   byte
	}{{"down", 'd'}, {"up", 'u'}, {"p", 'p'}} {
		if rest, ok := strings.CutPrefix(s, p.prefix); ok {
			if k, err := strconv.Atoi(rest); err == nil && k >= 0 && rest[0] != '+' {
				return p.side, k
			}
		}
	}
	return 0, 0
}

// match returns the elements of the given kind whose names match pattern, in inventory order
// (transceivers: by node, then down before up, then group index).
func (inv *Inventory) match(kind, pattern string, breakout int) []target {
	lit := !strings.ContainsAny(pattern, `*?[\`)
	ok := func(name string) bool {
		if lit {
			return name == pattern
		}
		m, _ := pathpkg.Match(pattern, name)
		return m
	}
	var out []target
	switch kind {
	case KindLink, KindNIC:
		for i := range inv.Ports {
			p := &inv.Ports[i]
			if kind == KindNIC && inv.Nodes[p.Node].Switch {
				continue
			}
			if ok(p.Name) {
				out = append(out, target{name: p.Name, node: -1, ports: []int32{int32(i)}})
			}
		}
	case KindSwitch:
		for i := range inv.Nodes {
			n := &inv.Nodes[i]
			if !n.Switch || !ok(n.Name) {
				continue
			}
			t := target{name: n.Name, node: int32(i)}
			for _, p := range n.Ports {
				if p >= 0 {
					t.ports = append(t.ports, p)
				}
			}
			if len(t.ports) > 0 {
				out = append(out, t)
			}
		}
	case KindTransceiver:
		for i := range inv.Nodes {
			for _, t := range inv.transceivers(int32(i), breakout) {
				if ok(t.name) {
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// transceivers returns node n's transceivers with breakout ports each: the groups of
// consecutive NIC ports (hosts, "h3.x0") or of down ports then of up ports (switches,
// "p0.t0-1.xd0", "p0.t0-1.xu0"), each holding its connected ports by index.
func (inv *Inventory) transceivers(n int32, breakout int) []target {
	node := &inv.Nodes[n]
	var out []target
	add := func(letter string, want byte) {
		var groups [][]int32
		for _, p := range node.Ports {
			if p < 0 {
				continue
			}
			s, k := side(inv.Ports[p].Name)
			if s != want {
				continue
			}
			g := k / breakout
			for len(groups) <= g {
				groups = append(groups, nil)
			}
			groups[g] = append(groups[g], p)
		}
		for g, ps := range groups {
			if len(ps) > 0 {
				out = append(out, target{name: node.Name + ".x" + letter + strconv.Itoa(g), node: -1, ports: ps})
			}
		}
	}
	if node.Switch {
		add("d", 'd')
		add("u", 'u')
	} else {
		add("", 'p')
	}
	return out
}

// noMatch explains that pattern matched no element of kind, with examples of this fabric's
// names.
func (inv *Inventory) noMatch(path, kind, pattern string, breakout int) error {
	var host, hostLast, up, down, sw0, sw1 string
	for i := range inv.Ports {
		p := &inv.Ports[i]
		switch s, _ := side(p.Name); {
		case s == 'p' && host == "":
			host = p.Name
		case s == 'p':
			hostLast = p.Name
		case s == 'u' && up == "":
			up = p.Name
		case s == 'd' && down == "" && inv.Nodes[inv.Ports[p.Peer].Node].Switch:
			down = p.Name // a switch-to-switch down port, e.g. a T1's toward a T0
		}
	}
	for i := range inv.Nodes {
		n := &inv.Nodes[i]
		switch {
		case !n.Switch:
		case sw0 == "":
			sw0 = n.Name
		case sw1 == "" && tierOf(n.Name) != tierOf(sw0):
			sw1 = n.Name
		}
	}
	switch kind {
	case KindSwitch:
		return errorf(path+".switch", "%q matches no switch; switch names are plane.tier-index such as %s (lockstep topo shows the shape; a host is targeted by its NIC ports with nic)", pattern, examples(sw0, sw1))
	case KindNIC:
		return errorf(path+".nic", "%q matches no NIC port; NIC ports are a host's port per plane, host.plane such as %s", pattern, examples(host, hostLast))
	case KindTransceiver:
		var hx, xd, xu string
		for i := range inv.Nodes {
			for _, t := range inv.transceivers(int32(i), breakout) {
				switch {
				case !inv.Nodes[i].Switch && hx == "":
					hx = t.name
				case strings.Contains(t.name, ".xd") && xd == "":
					xd = t.name
				case strings.Contains(t.name, ".xu") && xu == "":
					xu = t.name
				}
			}
			if hx != "" && xd != "" && xu != "" {
				break
			}
		}
		return errorf(path+".transceiver", "%q matches no transceiver; with breakout %d a host's NIC ports p0-p%d form <host>.x0, a switch's down and up ports <switch>.xd0 and <switch>.xu0, such as %s", pattern, breakout, breakout-1, examples(hx, xd, xu))
	}
	return errorf(path+".link", "%q matches no port; port names look like %s (a host's NIC port host.plane, switch ports plane.tier-index.up/down; lockstep topo shows the shape)", pattern, examples(host, up, down))
}

// examples quotes the non-empty names and joins them with commas.
func examples(names ...string) string {
	var q []string
	for _, n := range names {
		if n != "" {
			q = append(q, strconv.Quote(n))
		}
	}
	if len(q) == 0 {
		return "(this fabric has none)"
	}
	return strings.Join(q, ", ")
}

// tierOf returns the ".t<k>-" part of a switch name, "" if none.
func tierOf(name string) string {
	i := strings.Index(name, ".t")
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(name[i:], '-')
	if j < 0 {
		return ""
	}
	return name[i : i+j]
}

// String describes the inventory's size.
func (inv *Inventory) String() string {
	return fmt.Sprintf("%d nodes, %d ports", len(inv.Nodes), len(inv.Ports))
}
