package fabric

import "github.com/lockstepsim/lockstep/sim"

// Fast recovery of queued packets (SHIELD re-routes the queue; issue 19).
//
// With adaptive routing on, a switch whose egress port goes down does not drop the packets
// queued there: it takes them out of the dead port's queues, oldest first in each class, and
// forwards each again by the adaptive choice among the minimal ports of its destination's
// group (the dead port is out of the choice), so only the packets already on the wire (or
// being serialised) are lost. Likewise, when a fault notification reaches an upstream switch
// it takes the packets for that destination out of the egress it must now avoid and forwards
// them elsewhere, so that nothing queued toward the dead end before the notification is sent
// there after it. [NVIDIA SHIELD: the switch "re-routes" around the fault locally, without the
// subnet manager; NVIDIA InfiniBand Cluster Bring-up Procedure, Adaptive Routing.]
//
// A packet with a source route (RouteLen > 0) is never rerouted: it is dropped as before. A
// packet whose switch has no usable minimal port left is detoured (arPick, arDetour): in a
// fat tree the only other path goes down and up again (a valley), which up*/down* routing
// forbids on one VL because with credit flow control a down-up turn can close a cycle of
// buffer dependencies (deadlock) [Schroeder et al., "Autonet", IEEE JSAC 9(8), 1991], so the
// packet takes the escape VL from the turn on (adaptive_detour.go has the argument); one that
// cannot detour is dropped as a dead end and upstream is notified.
//
// Credits stay consistent: a switch's packet keeps the ingress buffer it was accounted to
// (Packet.ingress) until it leaves the switch from its new egress, which frees the blocks
// then, as for any packet (creditRelease in startTx). With PFC the packet leaves the old
// egress's ingress accounting and enters the new one's (pfcOut, then enqueue's pfcIn). The
// VOQ switch models (fabric.switch_model) rescue their queues too (adaptive_voq.go).
//
// Each packet moved counts once in AdaptiveStats.Rescued and as Flushed (not dropped) at the
// queue it left; the queues' books (EnqPackets = TxPackets + Flushed + queued) still hold.

// extract takes out of q's queues the packets for destination dst (every packet when dst <
// 0), oldest first by queue, counting each as flushed but not dropped, and returns them.
func (q *portQueue) extract(now sim.Time, dst int32) fifo {
	var out fifo
	for i := range q.lines {
		l, c := &q.lines[i], &q.aux.cold[i]
		prev, removed := int32(-1), int64(0)
		for h := l.head; h >= 0; {
			sl := q.s[h]
			if dst >= 0 && sl.p.Dst != dst {
				prev, h = h, sl.next
				continue
			}
			if prev >= 0 {
				q.s[prev].next = sl.next
			} else {
				l.head = sl.next
			}
			if l.tail == h {
				l.tail = prev
			}
			l.n--
			removed += sl.v
			c.flushed++
			c.flushedBytes += sl.v
			out.push(sl.p)
			q.release(h)
			h = sl.next
		}
		if removed == 0 {
			continue
		}
		if l.n == 0 {
			l.head, l.tail = -1, -1
			q.busy &^= 1 << i
		}
		l.setDepth(now, int64(l.depth)-removed)
		q.bytes -= removed
	}
	if !q.hdrBusy() || q.busy&(1<<q.p.classes-1) == 0 {
		q.resetDRR() // at most one side backlogged: a fresh round
	}
	return out
}

// arRescue is flush's adaptive branch: at a switch with adaptive routing on (and the output
// switch model), it forwards the packets queued at dead egress port again instead of dropping
// them, and reports true; otherwise it does nothing and reports false.
func (n *Network) arRescue(now sim.Time, port *Port) bool {
	if n.ar == nil || n.Nodes[port.Node].Kind != Switch {
		return false
	}
	if n.voqOn {
		n.arRescueVOQ(now, port) // adaptive_voq.go
		return true
	}
	out := port.q.extract(now, -1)
	n.arReforward(now, port, out)
	return true
}

// arReforward forwards again, at from's switch, the packets out just taken out of from's
// queues; one that cannot be (a source route, or no usable minimal port) is dropped as
// link_down, counted at from's queue (a source-routed one as AdaptiveStats.LostQueued) or at
// the switch (a dead end, AdaptiveStats.DeadEnds).
func (n *Network) arReforward(now sim.Time, from *Port, out fifo) {
	a := n.ar
	id := from.Node
	node := &n.Nodes[id]
	for p := out.pop(); p != nil; p = out.pop() {
		if n.pfcOn {
			in := p.ingress
			n.pfcOut(now, p)
			p.ingress = in // enqueue accounts it to its ingress again (pfcIn)
		}
		p.Flags &^= flagDetour // still at the switch it detoured from: it may pick again
		g := node.Routes.Lookup(p.Dst)
		if p.RouteLen > 0 || len(g) == 0 {
			s := from.q.coldFor(p)
			s.Drops[DropLinkDown]++
			s.dropBytes += int64(p.Size)
			a.st.LostQueued++
			if node.failed {
				n.C.AtFailedSwitch++
				a.st.FailedLostQueued++
			}
			n.drop(p, DropLinkDown)
			continue
		}
		l := n.arPick(now, id, p, g)
		if l < 0 {
			a.st.QueuedDeadEnds++
			n.dropAt(node, p, DropLinkDown)
			continue
		}
		a.st.Rescued++
		n.enqueue(now, n.hot[id].ports[l], p)
	}
}

// arNotified: a fault notification now in force at upstream egress pid for destination dst
// takes that destination's queued packets off pid and forwards them elsewhere; pid's
// transmitter is restarted if its new head can go.
func (n *Network) arNotified(now sim.Time, pid PortID, dst int32) {
	port := &n.Ports[pid]
	if n.Nodes[port.Node].Kind != Switch {
		return
	}
	if n.voqOn {
		n.arNotifiedVOQ(now, pid, dst) // adaptive_voq.go
		return
	}
	if port.q.empty() {
		return
	}
	out := port.q.extract(now, dst)
	if out.head == nil {
		return
	}
	if n.credOn {
		n.creditBlock(now, port)
	}
	if !port.Down && !port.txEvent && port.q.sendable(port.paused) {
		if now >= port.txEnd {
			n.startTx(now, pid, port)
		} else {
			port.txEvent = true
			n.sim.At(port.txEnd, n.kTx, int32(pid), 0)
		}
	}
	n.arReforward(now, port, out)
}

// arNotifyDead sends, when switch id loses a port, a fault notification upstream for every
// destination host of its route table none of whose ports is usable any more, at once rather
// than at the first packet that finds the dead end (SHIELD notifies on the failure).
func (n *Network) arNotifyDead(now sim.Time, id NodeID) {
	a := n.ar
	hot := &n.hot[id]
	for _, e := range n.Nodes[id].Routes.Entries {
		dead := true
		for _, l := range e.Ports {
			if int(l) < len(hot.ports) && hot.ports[l] >= 0 && !n.Ports[hot.ports[l]].Down {
				dead = false
				break
			}
		}
		if !dead {
			continue
		}
		for dst := e.HostLo; dst < e.HostHi; dst++ {
			if !a.anyUsable(n, id, e.Ports, dst) {
				n.arNotify(now, id, dst)
			}
		}
	}
}

// anyUsable reports whether some port of group g at switch id may carry packets toward dst.
func (a *arState) anyUsable(n *Network, id NodeID, g []uint16, dst int32) bool {
	hot := &n.hot[id]
	for _, l := range g {
		if int(l) < len(hot.ports) && hot.ports[l] >= 0 && a.usable(n, hot.ports[l], dst) {
			return true
		}
	}
	return false
}

// arLostInFlight counts packet p, lost on the wire of port's failed link (adaptive routing
// on).
func (n *Network) arLostInFlight(port *Port, p *Packet) {
	if n.ar != nil {
		n.ar.st.LostInFlight++
		n.ar.st.LostInFlightB += int64(p.Size)
		if port.nic {
			n.ar.st.LostInFlightNIC++
		}
	}
}

// SwitchDrops counts the packets switches discarded: their own drops (no route, dead ends,
// blackhole) and their egress queues' (full, refused or flushed at a dead port, headroom),
// but not the packets lost on their links' wires (a failed link's packets in flight, random
// loss and bit errors), which no switch decision can save. With adaptive routing on it is
// exact; off, a failed link's wire losses cannot be told from its flushed queue and count
// here.
func (n *Network) SwitchDrops() int64 {
	var d int64
	for i := range n.Nodes {
		if n.Nodes[i].Kind != Switch {
			continue
		}
		for _, k := range n.Nodes[i].Drops {
			d += k
		}
		for _, pid := range n.Nodes[i].Ports {
			if pid < 0 {
				continue
			}
			t := n.Ports[pid].Totals()
			for r, k := range t.Drops {
				if DropReason(r) != DropLoss {
					d += k
				}
			}
		}
	}
	if n.ar != nil {
		d -= n.ar.st.LostInFlight - n.ar.st.LostInFlightNIC
	}
	return d
}

// arCascade: a notification k now in force may leave its switch with no usable port toward
// k.dst (a T2 whose only way down to a pod was the notifying T1); that switch then notifies
// its own upstream at once, rather than at the first packet that finds it a dead end, so the
// notification climbs one tier per notify_delay and a switch that still has a way stops it.
func (n *Network) arCascade(now sim.Time, k avoidKey) {
	id := n.Ports[k.port].Node
	if n.Nodes[id].Kind != Switch {
		return
	}
	if g := n.Nodes[id].Routes.Lookup(k.dst); len(g) > 0 && !n.ar.anyUsable(n, id, g, k.dst) {
		n.arNotify(now, id, k.dst)
	}
}
