package fabric

import "github.com/lockstepsim/lockstep/sim"

// Fast recovery under the input-buffered switch models (fabric.switch_model shared_ingress or
// voq; voq.go): the same rescue as the output model's (adaptive_rescue.go). A packet there is
// in one of two places when its egress dies or is avoided by a fault notification:
//   - the egress queue itself (it crossed the crossbar already): taken off and forwarded by
//     the adaptive choice straight into the new egress's queue (it does not cross the
//     crossbar again);
//   - an ingress buffer, waiting for that egress: given a new egress by the adaptive choice
//     where it waits. Under shared_ingress it keeps its place in its ingress FIFO (only the
//     egress it waits for changes, so the FIFO's order and head-of-line blocking are as
//     before); under voq it moves from the dead egress's virtual output queue to the new
//     one's tail at the same ingress (re-admitted there: voqOffer, which may mark or, if
//     that queue is full, drop it).
//
// A packet with a source route, or with no usable minimal port left (nor a detour,
// adaptive_detour.go), is dropped as link_down, at the switch node when it was in an
// ingress buffer. The input-buffered models refuse credits and PFC (SetSwitch), so there is
// no buffer accounting to move.

// arRescueVOQ is flush's adaptive branch under an input-buffered model: dead switch egress
// port's queue and the packets waiting for it in the switch's ingress buffers are forwarded
// elsewhere.
func (n *Network) arRescueVOQ(now sim.Time, port *Port) {
	pid := n.Ports[port.Peer].Peer
	out := port.q.extract(now, -1)
	n.voq.moving = true // in the switch already: straight into the new egress's queue
	n.arReforward(now, port, out)
	n.voq.moving = false
	n.voqRetarget(now, pid, -1)
}

// arNotifiedVOQ is arNotified under an input-buffered model: the packets for dst queued at
// egress pid or waiting for it in the ingress buffers go elsewhere.
func (n *Network) arNotifiedVOQ(now sim.Time, pid PortID, dst int32) {
	port := &n.Ports[pid]
	if out := port.q.extract(now, dst); out.head != nil {
		n.voq.moving = true
		n.arReforward(now, port, out)
		n.voq.moving = false
	}
	n.voqRetarget(now, pid, dst)
	n.voqServe(now, pid) // the egress may have room again for the others
}

// voqRetarget gives the packets for dst (every destination when dst < 0) waiting in switch
// ingress buffers for egress dead a new egress by the adaptive choice, or drops them.
func (n *Network) voqRetarget(now sim.Time, dead PortID, dst int32) {
	st := n.voq
	if st.waiting[dead] == 0 {
		return
	}
	id := n.Ports[dead].Node
	for _, in := range n.hot[id].ports {
		if in < 0 || st.inBytes[in] == 0 {
			continue
		}
		if st.voq {
			n.voqRetargetVOQ(now, in, dead, dst)
		} else {
			n.voqRetargetFIFO(now, in, dead, dst)
		}
	}
}

// voqNewEgress picks, at switch id, the egress for p in place of dead, or drops p (counted at
// the node) and returns -1.
func (n *Network) voqNewEgress(now sim.Time, id NodeID, p *Packet) PortID {
	node := &n.Nodes[id]
	g := node.Routes.Lookup(p.Dst)
	if p.RouteLen > 0 || len(g) == 0 {
		n.ar.st.LostQueued++
		if node.failed {
			n.ar.st.FailedLostQueued++
		}
		n.dropAt(node, p, DropLinkDown)
		return -1
	}
	p.Flags &^= flagDetour
	l := n.arPick(now, id, p, g)
	if l < 0 {
		n.ar.st.QueuedDeadEnds++
		n.dropAt(node, p, DropLinkDown)
		return -1
	}
	n.ar.st.Rescued++
	return n.hot[id].ports[l]
}

// voqRetargetVOQ moves ingress in's packets for dst in dead's virtual output queue to their
// new egresses' queues at in.
func (n *Network) voqRetargetVOQ(now sim.Time, in, dead PortID, dst int32) {
	st := n.voq
	f := &st.fifo[st.base[in]+int32(n.Ports[dead].Local)]
	var keep voqFIFO // packets for other destinations stay, in order
	var moved fifo
	for f.head != nil {
		p := f.pop()
		if dst >= 0 && p.Dst != dst {
			keep.push(p)
			continue
		}
		size := int64(p.Size)
		st.inBytes[in] -= size
		st.waiting[dead] -= size
		st.held--
		st.heldBytes -= size
		moved.push(p)
	}
	*f = keep
	id := n.Ports[dead].Node
	for p := moved.pop(); p != nil; p = moved.pop() {
		if out := n.voqNewEgress(now, id, p); out >= 0 {
			n.voqOffer(now, in, out, p)
		}
	}
}

// voqRetargetFIFO gives ingress in's packets for dst waiting for dead in its shared FIFO a
// new egress in place (dropping those with none), then serves the egress its head waits for.
func (n *Network) voqRetargetFIFO(now sim.Time, in, dead PortID, dst int32) {
	st := n.voq
	f := &st.fifo[in]
	id := n.Ports[dead].Node
	var prev *Packet
	for p := f.head; p != nil; {
		next := p.next
		if PortID(p.voqOut) != dead || (dst >= 0 && p.Dst != dst) {
			prev, p = p, next
			continue
		}
		size := int64(p.Size)
		st.waiting[dead] -= size
		// Unlinked while it is judged: arPick and a drop must not see it in the FIFO.
		if prev != nil {
			prev.next = next
		} else {
			f.head = next
		}
		if f.tail == p {
			f.tail = prev
		}
		p.next = nil
		out := n.voqNewEgress(now, id, p)
		if out < 0 {
			f.bytes -= size
			f.n--
			st.inBytes[in] -= size
			st.held--
			st.heldBytes -= size
			p = next
			continue
		}
		// Back in its place, waiting for its new egress.
		p.voqOut = int32(out)
		st.waiting[out] += size
		p.next = next
		if prev != nil {
			prev.next = p
		} else {
			f.head = p
		}
		if next == nil {
			f.tail = p
		}
		prev, p = p, next
	}
	if f.head != nil {
		n.voqServe(now, PortID(f.head.voqOut))
	}
}
