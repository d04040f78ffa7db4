// Package nic holds what every transport's NIC adapter (transport/mrc/mrcnic,
// transport/roce/rocenic) shares: route checks for a host pair, the ideal transfer time a
// flow's FCT is compared with, and the NIC's wait list of QPs gated by a full port.
package nic

import (
	"fmt"
	"sort"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
)

// PairRouteError explains why src and dst have no source route (NumPaths 0), or returns nil
// when they have one: either their minimal paths are longer than a source route holds
// (topo.MaxHops switches: a large torus), or there is no path at all (a rail-only fabric
// across rails). sourceRouted says whether the transport needs source routes (sprayed
// transports, raw spray and spread) or forwards by the switches' tables (ECMP: only "no
// path at all" is an error for it).
func PairRouteError(l topo.Topology, src, dst int, sourceRouted bool) error {
	if src == dst || l.NumPaths(src, dst) > 0 {
		return nil
	}
	links, _, err := l.LinkPath(src, dst, 0, nil)
	if err != nil {
		what := "no path joins them"
		if l.Params().Kind == "rail" {
			what = "they are on different rails of a rail-only fabric, which links only GPUs of one rail (cross-rail traffic needs the spine: rail_only: false)"
		}
		return fmt.Errorf("h%d -> h%d: %s", src, dst, what)
	}
	if !sourceRouted {
		return nil
	}
	return fmt.Errorf("h%d -> h%d: their minimal paths cross %d switches, more than the %d a source route holds, so source-routed transports and raw spray cannot route them on this %s; use run.engine: flow (workloads), a twisted torus (shorter paths), or an ECMP transport / raw ECMP (the switches' tables)",
		src, dst, len(links)-1, topo.MaxHops, l.Params().Kind)
}

// PairHops is the number of switches on the minimal paths from src to dst (all have the same
// length), or the topology's diameter when it cannot say.
func PairHops(l topo.Topology, src, dst int) int {
	if r, err := l.Path(src, dst, 0); err == nil {
		return int(r.Len)
	}
	return l.Sizing().MaxSwitchHops
}

// IdealTransfer is the FCT of a transfer alone on an idle fabric: its wire bytes at the NIC
// line rate nic (all planes), or one packet at one port's rate if that is longer, then the
// round trip of its last packet, less that packet's serialisation onto the first link, which
// the first term already counts. pkt is the transfer's largest packet on the wire (a full
// packet, or the whole transfer when it fits in one): a 1-byte transfer's round trip is that
// of a small packet, not of a full one. hops is the pair's switch hops. It is a lower bound:
// the last packet cannot leave the NIC before wire / nic, nor before one packet's
// serialisation on its port, and then crosses the rest of its path and the ACK comes back.
func IdealTransfer(c topo.Params, nic sim.Rate, hops int, wire, pkt int64, ackWire int) sim.Time {
	first := c.HostLink.TxTime(pkt)
	return max(nic.TxTime(wire), first) + c.RoundTrip(hops, int(pkt), ackWire) - first
}

// Wait is one NIC port's (or NIC's) FIFO of QPs that had data and window but no room on the
// port: the NIC's transmit scheduler serves them in order as the port drains.
type Wait struct {
	Q    []int32 // QP numbers; Q[Head:] are waiting
	Head int
}

// Push queues qp at the end, reusing the slice once every entry was served.
func (w *Wait) Push(qp int32) {
	if w.Head > 0 && w.Head == len(w.Q) {
		w.Q, w.Head = w.Q[:0], 0
	}
	w.Q = append(w.Q, qp)
}

// Len is the number of QPs waiting.
func (w *Wait) Len() int { return len(w.Q) - w.Head }

// Reset empties the list once every entry was served.
func (w *Wait) Reset() {
	if w.Head == len(w.Q) {
		w.Q, w.Head = w.Q[:0], 0
	}
}

// SwitchIngresses lists, by node of l, the links at a switch's ports (one per connected port,
// so the switch's ingresses; none for a host): what PFC buffer checks and profiles size from.
func SwitchIngresses(l topo.Topology) [][]topo.Link {
	out := make([][]topo.Link, l.NumNodes())
	for _, k := range l.Links() {
		for _, n := range [2]int{k.A.Node, k.B.Node} {
			if nd, ok := l.Node(n); ok && nd.Kind == topo.KindSwitch {
				out[n] = append(out[n], k)
			}
		}
	}
	return out
}

// StuckList formats the descriptions of the QPs still waiting, for Endpoint.Stuck: sorted (so
// the message does not depend on QP order), at most max of them, then "and N more".
func StuckList(out []string, max int) string {
	sort.Strings(out)
	if len(out) > max {
		out = append(out[:max], fmt.Sprintf("and %d more", len(out)-max))
	}
	return fmt.Sprint(out)
}
