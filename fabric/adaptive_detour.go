package fabric

import "github.com/lockstepsim/lockstep/sim"

// Detours on an escape VL: what a switch with no live minimal route does with a packet
// (issue 19, "with one T0-T1 link down ... no packet is lost").
//
// The problem. When a T0-T1 link fails, the T1 has no minimal port left toward the hosts of
// that T0: its route table's only entry for them is the dead port. SHIELD's answer is the
// fault notification (NVIDIA calls it Fast Link Fault Notification, FLFN, or pFRN: "the
// switch [reports] to neighbor switches that an alternative output port for the traffic to
// specific destination LID should be selected to avoid sending traffic to the switch. This
// is required when the FLFR on the switch has no alternative port to select" [NVIDIA
// InfiniBand Cluster Bring-up Procedure, SHIELD; MLNXSM release notes v5.11, "Self healing
// network with PFRN"]). The notification stops new packets after notify_delay, but NVIDIA
// documents nothing for the packets that reach the dead-end switch before it takes effect or
// that sit in its queue toward the dead port: lockstep dropped them (16 in the 2-tier
// permutation of TestLinkDownAdaptive).
//
// The detour. With AdaptiveConfig.Detour on (the default with adaptive routing), such a
// packet is not dropped: the dead-end switch S sends it down a live port to another switch
// P (a T0 in a 2-tier tree, a T1 of another pod below a T2) that has a usable minimal port
// toward the destination other than the one back to S (one hop of look-ahead in P's route
// table), the least loaded such port first. P forwards it by its own minimal routes (up to
// another T1, then down to the destination's T0) and, before queueing it, moves it to the
// escape VL: one queue class above every class the switch-to-switch ports had (SetAdaptive
// adds it). A packet detours at most once: one that meets a second dead end on the escape
// VL is dropped as before (counted in DeadEnds).
//
// Why it cannot deadlock. With credits (or PFC) a cycle of full buffers, each waiting for
// the next, is a cycle in the channel dependency graph, a channel being one VL of one link;
// routing is deadlock-free if that graph is acyclic [Dally and Seitz, "Deadlock-free
// message routing in multiprocessor interconnection networks", IEEE Trans. Computers C-36(5),
// 1987]. Fat-tree minimal routes are up*/down* (up some hops, then only down), and
// up*/down* dependencies follow a partial order of the links, so they are acyclic
// [Schroeder et al., "Autonet", IEEE JSAC 9(8), 1991]; a detour breaks up*/down* only at
// P, where a packet that came down turns up. So:
//   - the normal VLs (the classes packets start in) carry minimal up*/down* routes plus, at
//     most, the detour hop S -> P, which goes down (a detour port must lead to a lower
//     tier), and a down hop after an up or a down hop is still up*/down*: acyclic;
//   - the escape VL carries only the rest of detoured paths, from P on, which are P's
//     minimal up*/down* routes: acyclic;
//   - a packet moves from a normal VL to the escape VL at P and never back (the last hop to
//     a host, where a 2-class host port folds the escape class into its last class, ends
//     in a sink that depends on nothing), so every dependency between the layers points the
//     same way, and a cycle would have to lie within one layer.
//
// Hence the union is acyclic. This is the layered construction of LASH and DFSSSP for
// InfiniBand (one VL per acyclic layer) and of Tagger for PFC Ethernet [Hu et al., "Tagger:
// Practical PFC Deadlock Prevention in Data Center Networks", CoNEXT 2017: a packet that
// bounces off up-down routing is tagged into another lossless queue]; IBTA provides up to
// 15 data VLs [IBTA vol 1 §7.6]. An InfiniBand switch chooses the egress VL of each hop by
// its SL-to-VL table, per (ingress, egress) port pair [IBTA vol 1 §7.6.6]; lockstep has no
// SL-to-VL tables (VL = queue class) and changes the packet's class instead.
//
// Credits at the turn: the packet arrived at P on its normal VL and P's ingress buffer
// holds it there until it leaves (IBTA credits are per ingress VL); it is queued and sent on
// the escape VL, so its blocks are charged to the escape VL toward the next hop and freed at
// P's ingress in the class it arrived in (Packet.heldClass, creditRelease). Under PFC the
// escape class is not among the lossless classes (SetPFC's), so it is never paused: a
// detoured packet can be dropped by drop-tail there, never deadlock.
//
// Simplified: the detour port is chosen by this switch's load only (arLoad, no threshold);
// the look-ahead is one route table deep, so a packet can still meet a second dead end (a
// second failure) and be dropped; detours are off for a fabric whose switch ports already
// have MaxClasses classes when credits or PFC are on (no class left for the escape VL).

// Flags of a packet's detour (in Packet.Flags, above the public ones).
const (
	// flagDetour: a dead-end switch sent the packet off its minimal route; the next switch
	// must not send it back (Packet.detourFrom) and moves it to the escape VL.
	flagDetour Flags = 1 << 13
	// flagEscape: the packet is on the escape VL (it detoured once); no second detour.
	flagEscape Flags = 1 << 14
	// flagEscHeld: the packet's switch ingress holds its blocks in Packet.heldClass, the VL
	// it arrived in, not in its Class (creditRelease).
	flagEscHeld Flags = 1 << 15
)

// DetourOn reports whether switches with no live minimal route detour packets (Detour nil
// or true: the default).
func (c AdaptiveConfig) DetourOn() bool { return c.Detour == nil || *c.Detour }

// arEscapeSetup picks the escape VL, one class above every class a switch-to-switch port
// has, and gives those ports that class; -1 (detours without an escape VL, allowed only
// without link flow control) when the ports already have MaxClasses. Called by SetAdaptive,
// before the run: the queues are empty.
func (n *Network) arEscapeSetup(a *arState) {
	a.escape = -1
	esc := 0
	for i := range n.Ports {
		if p := &n.Ports[i]; n.arInner(p) {
			esc = max(esc, p.q.p.classes)
		}
	}
	if esc == 0 || esc >= MaxClasses {
		return
	}
	a.escape = esc
	for i := range n.Ports {
		p := &n.Ports[i]
		if !n.arInner(p) || p.q.p.classes > esc {
			continue
		}
		cfg := p.q.p.cfg
		cfg.Classes = esc + 1
		free := p.q.free
		p.q.init(n.queueParams(cfg), n.lineBlock(PortID(i)))
		p.q.free = free
	}
}

// arInner reports whether p is a switch port toward another switch.
func (n *Network) arInner(p *Port) bool {
	return p.Peer >= 0 && !p.peerHost && n.Nodes[p.Node].Kind == Switch
}

// arDetour returns the local port of dead-end switch id (no usable minimal port toward
// p.Dst) that p detours through, marking p, or -1 when p may not detour (detours off, a
// source route, a packet that detoured already, no escape VL under link flow control) or no
// port qualifies: one leading down a tier, up, not avoided for p.Dst, to a switch with a
// usable minimal port toward p.Dst that does not lead back here.
func (n *Network) arDetour(now sim.Time, id NodeID, p *Packet) int {
	a := n.ar
	if !a.detour || p.Flags&(flagDetour|flagEscape) != 0 || p.RouteLen > 0 || (n.linkFC && a.escape < 0) {
		return -1
	}
	tier := n.Nodes[id].Tier
	best, ties := -1, 0
	var bestLoad int64
	for l, pid := range n.hot[id].ports {
		if pid < 0 {
			continue
		}
		port := &n.Ports[pid]
		if port.peerHost || n.Nodes[port.peerNode].Tier >= tier || !a.usable(n, pid, p.Dst) || !n.arTurnable(port.peerNode, id, p.Dst) {
			continue
		}
		ld := n.arLoad(now, pid, p)
		switch {
		case best < 0 || ld < bestLoad:
			best, bestLoad, ties = l, ld, 1
		case ld == bestLoad:
			// Reservoir choice among the equally loaded: each with probability 1/ties.
			ties++
			a.n++
			if sim.Mix64(a.seed^a.n*0x9e3779b97f4a7c15)%uint64(ties) == 0 {
				best = l
			}
		}
	}
	if best < 0 {
		return -1
	}
	p.Flags |= flagDetour
	p.detourFrom = int32(id)
	a.st.Detours++
	return best
}

// arTurnable reports whether switch at has a usable minimal port toward dst that does not
// lead to switch from.
func (n *Network) arTurnable(at, from NodeID, dst int32) bool {
	hot := &n.hot[at]
	for _, l := range n.Nodes[at].Routes.Lookup(dst) {
		if int(l) >= len(hot.ports) || hot.ports[l] < 0 {
			continue
		}
		if pid := hot.ports[l]; n.Ports[pid].peerNode != from && n.ar.usable(n, pid, dst) {
			return true
		}
	}
	return false
}

// arTurn forwards detoured packet p at switch id, the one after its detour: it moves p to
// the escape VL and picks the least loaded usable port of its minimal group g that does not
// lead back to the switch p detoured from; -1 (a dead end: every such port is down or
// avoided, p is dropped and upstream notified) when none is left.
func (n *Network) arTurn(now sim.Time, id NodeID, p *Packet, g []uint16) int {
	a := n.ar
	p.Flags = p.Flags&^flagDetour | flagEscape
	if a.escape >= 0 {
		if n.credOn && p.ingress != 0 {
			p.heldClass = uint8(n.Ports[p.ingress-1].q.class(p)) // its ingress buffer keeps it there
			p.Flags |= flagEscHeld
		}
		p.Class = uint8(a.escape)
	}
	a.st.Decisions++
	a.st.Turns++
	hot := &n.hot[id]
	best, ties := -1, 0
	var bestLoad int64
	for _, l := range g {
		if int(l) >= len(hot.ports) || hot.ports[l] < 0 {
			continue
		}
		pid := hot.ports[l]
		if n.Ports[pid].peerNode == NodeID(p.detourFrom) || !a.usable(n, pid, p.Dst) {
			continue
		}
		ld := n.arLoad(now, pid, p)
		switch {
		case best < 0 || ld < bestLoad:
			best, bestLoad, ties = int(l), ld, 1
		case ld == bestLoad:
			ties++
			a.n++
			if sim.Mix64(a.seed^a.n*0x9e3779b97f4a7c15)%uint64(ties) == 0 {
				best = int(l)
			}
		}
	}
	if best < 0 {
		a.st.LastDeadEnd = now
		n.arNotify(now, id, p.Dst)
		if best = n.arIntoAvoided(now, id, p, g, NodeID(p.detourFrom)); best < 0 {
			a.st.DeadEnds++
			if n.Nodes[id].failed {
				a.st.FailedDeadEnds++
			}
		}
	}
	return best
}

// arIntoAvoided returns, for a packet at switch id with no usable port in its minimal group
// g, the least loaded port of g that is up but avoided by a fault notification (not leading
// to switch not), or -1 when none is. It comes before a detour of this switch's own: a
// notification says the switch behind that port has no minimal port toward p.Dst left, and
// that switch, next to the failure, can detour the packet in one hop, while this one may
// not (its look-ahead sees one table deep). In a 3-tier tree a T2 whose only way down to a
// pod is the T1 that lost its T0 link is such a switch: a detour of its own would go down
// to a T1 of another pod and up to another T2 of its group, which is in the same state
// (TestLinkDownLossless: 18 dead ends that way). Forwarding on a minimal port brings p
// strictly closer to its destination, so this cannot loop; the hop is minimal, so it keeps
// the deadlock argument (it is on up*/down* routes in whichever layer p is).
func (n *Network) arIntoAvoided(now sim.Time, id NodeID, p *Packet, g []uint16, not NodeID) int {
	a := n.ar
	if !a.detour || len(a.avoid) == 0 {
		return -1
	}
	hot := &n.hot[id]
	best := -1
	var bestLoad int64
	for _, l := range g {
		if int(l) >= len(hot.ports) || hot.ports[l] < 0 {
			continue
		}
		pid := hot.ports[l]
		if n.Ports[pid].Down || n.Ports[pid].peerNode == not {
			continue
		}
		if ld := n.arLoad(now, pid, p); best < 0 || ld < bestLoad {
			best, bestLoad = int(l), ld
		}
	}
	if best >= 0 {
		a.st.IntoAvoided++
	}
	return best
}
