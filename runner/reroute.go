package runner

import (
	"slices"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
)

// reconverge recomputes every switch's ECMP table from the links that are up, as the fabric's
// routing protocol would once converged after a failure or a repair: for each destination
// host, the egress ports of a switch are those toward a neighbour one hop closer to the
// host's tier-0 switch along links that are up (shortest-path ECMP, what BGP yields in a
// Clos), plus, at that T0, the host's own port while its link is up. A switch that has lost
// every path to a host gets an empty group (its packets are dropped as no_route). Hosts keep
// their tables (the transport picks the plane). Source-routed packets (MRC) ignore these
// tables. Cost: one breadth-first search per T0 over the switch graph; run only on link
// state changes.
func reconverge(net *fabric.Network) {
	nodes := len(net.Nodes)
	hosts := net.NumHosts()
	// dest[h] lists the T0 ports facing host h (one per plane), whose link is up or not.
	type t0ref struct {
		node fabric.NodeID
		port uint16 // local port toward the host
	}
	dest := make([][]t0ref, hosts)
	byT0 := map[fabric.NodeID][]int{} // T0 -> hosts below it
	for h := 0; h < hosts; h++ {
		for _, pid := range net.Nodes[h].Ports {
			if pid < 0 {
				continue
			}
			peer := &net.Ports[net.Ports[pid].Peer]
			dest[h] = append(dest[h], t0ref{node: peer.Node, port: peer.Local})
			byT0[peer.Node] = append(byT0[peer.Node], h)
		}
	}
	t0s := make([]fabric.NodeID, 0, len(byT0))
	for t := range byT0 {
		t0s = append(t0s, t)
	}
	slices.Sort(t0s)
	// groups[n][h]: node n's egress ports for host h (nil: none).
	groups := make([][][]uint16, nodes)
	for n := hosts; n < nodes; n++ {
		groups[n] = make([][]uint16, hosts)
	}
	dist := make([]int32, nodes)
	queue := make([]fabric.NodeID, 0, nodes)
	for _, t := range t0s {
		for i := range dist {
			dist[i] = -1
		}
		dist[t] = 0
		queue = append(queue[:0], t)
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for _, pid := range net.Nodes[n].Ports {
				if pid < 0 || net.Ports[pid].Down {
					continue
				}
				m := net.Ports[net.Ports[pid].Peer].Node
				if net.Nodes[m].Kind == fabric.Host || dist[m] >= 0 {
					continue
				}
				dist[m] = dist[n] + 1
				queue = append(queue, m)
			}
		}
		// Every switch that reaches t: the ports toward neighbours one hop closer.
		for n := hosts; n < nodes; n++ {
			if fabric.NodeID(n) == t || dist[n] <= 0 {
				continue
			}
			var g []uint16
			for local, pid := range net.Nodes[n].Ports {
				if pid < 0 || net.Ports[pid].Down {
					continue
				}
				m := net.Ports[net.Ports[pid].Peer].Node
				if net.Nodes[m].Kind != fabric.Host && dist[m] == dist[n]-1 {
					g = append(g, uint16(local))
				}
			}
			for _, h := range byT0[t] {
				groups[n][h] = g
			}
		}
		for _, h := range byT0[t] {
			for _, d := range dest[h] {
				if d.node == t && !net.Ports[net.Nodes[t].Ports[d.port]].Down {
					groups[t][h] = []uint16{d.port}
				}
			}
		}
	}
	// Tables: consecutive hosts with the same group share an entry.
	for n := hosts; n < nodes; n++ {
		var t fabric.RouteTable
		for h := 0; h < hosts; h++ {
			g := groups[n][h]
			if len(g) == 0 {
				continue
			}
			if k := len(t.Entries); k > 0 && t.Entries[k-1].HostHi == int32(h) && slices.Equal(t.Entries[k-1].Ports, g) {
				t.Entries[k-1].HostHi++
				continue
			}
			t.Entries = append(t.Entries, fabric.RouteEntry{HostLo: int32(h), HostHi: int32(h + 1), Ports: g})
		}
		net.Nodes[n].Routes = t
	}
}

// scheduleReconvergence recomputes the ECMP tables run.reconvergence after each link-state
// fault (down or up), reading the link states as they are then, and returns their times and
// a function that schedules one more after a link-state event of an at_step entry at t
// (nil when there can be none). A fault at t whose
// reconvergence falls after the run ends never reroutes: traffic hashed onto the dead link is
// blackholed for the whole run, as with a slow control plane.
func scheduleReconvergence(s *sim.Sim, net *fabric.Network, faults []FaultEvent, delay sim.Time, dry bool) ([]sim.Time, func(at sim.Time)) {
	var at []sim.Time
	for _, f := range faults {
		if (f.Action == scenario.FaultDown || f.Action == scenario.FaultUp) && f.Step < 0 {
			t := f.At + delay
			if len(at) == 0 || at[len(at)-1] != t {
				at = append(at, t)
			}
		}
	}
	steps := false
	for _, f := range faults {
		steps = steps || (f.Step >= 0 && (f.Action == scenario.FaultDown || f.Action == scenario.FaultUp))
	}
	if len(at) == 0 && !steps {
		return nil, nil
	}
	kind := s.Register("runner.reconverge", func(now sim.Time, _ int32, _ uint64) {
		if !dry {
			reconverge(net)
		}
	})
	for _, t := range at {
		s.AtOwnKey(t, kind, 0, 0) // like the faults: no shift of the model's event keys
	}
	// A link-state event of an at_step entry, once its step has started (stepFaults).
	later := func(t sim.Time) { s.AtOwnKey(t+delay, kind, 0, 0) }
	return at, later
}
