package fabric

import (
	"fmt"
	"math"

	"github.com/lockstepsim/lockstep/sim"
)

// Fault controls: the mechanisms a failure acts through. The fabric only applies a state when
// told; when and how often things fail (MTBF, flapping, repair times, and published failure
// figures such as Alibaba HPN's link-failure rates, SIGCOMM 2024) is package fault's business.
//
// Every control is per port (one direction of a link) or per switch, costs the forwarding path
// a few compares while unused, and draws from streams that depend only on the seed and the port, so
// a run is reproducible and turning a fault on in one place does not shift random draws
// anywhere else. Each drop is counted under its reason in the network's books and where it
// happened (a port's queue statistics or a node's Drops), so Audit stays balanced.

// MaxEntropyFilters is the number of entropy filters (SetEntropyLoss) one port can hold: a few
// gray-failed paths per link, stored in the port without a map.
const MaxEntropyFilters = 4

// SetLinkDown fails (down = true) or repairs (down = false) the link of port p, both
// directions at once. now must be the current simulated time (call it from an event, or
// between runs at Sim().Now()).
//
// When the link goes down, at each end:
//   - the packets queued at the egress port are dropped at once as link_down ("flushed"), and
//     while the link is down every packet offered to the port, at a switch or a NIC, is dropped
//     as it arrives there. A dead port holds nothing, as a switch drops on a port whose link is
//     down; this is simpler to reason about than draining the queue at line rate into a dead
//     link (drops happen at the failure, not spread over a drain time that depends on the
//     queue), and an outage costs no events however much traffic is still sent at the port.
//     With adaptive routing on (SetAdaptive), a switch forwards its dead egress's queue to
//     another minimal port instead (adaptive_rescue.go);
//   - the packet being serialised is lost: it is dropped as link_down when it would have
//     arrived (a packet goes on the link when its serialisation starts; the transmitter stays
//     busy until that serialisation would have ended);
//   - the packets on the wire are lost: each is dropped as link_down at its arrival time, even
//     if the link is up again by then, since it was on the wire when the link failed. (Each
//     packet on the link carries, in its slot, the port's down-transition count from the
//     start of its serialisation, and a mismatch at arrival drops it.)
//
// All these drops are counted in the port's queue statistics (Port.Totals) under link_down.
// When the link comes back up traffic flows again at once; routing does not change in either
// state (ECMP and source routes keep using the link; reacting is the transports' job).
//
// Each end counts its down transitions (Port.Downs) and the time it spent down
// (Port.DownTime). Failing a link that is already down, or repairing one that is up, changes
// nothing and is not counted. Errors: an unknown port, or now other than the current time.
func (n *Network) SetLinkDown(now sim.Time, p PortID, down bool) error {
	if err := n.checkPort("SetLinkDown", p); err != nil {
		return err
	}
	if now != n.sim.Now() {
		return fmt.Errorf("fabric: SetLinkDown on %s at %v: the clock is at %v; call it at the current time", n.Ports[p].Name, now, n.sim.Now())
	}
	for _, id := range [2]PortID{p, n.Ports[p].Peer} {
		port := &n.Ports[id]
		if down {
			if !port.outage {
				port.outage = true
				port.downSince = now
				port.epoch++
			}
			port.Down = true
			n.flush(now, port)
		} else {
			if port.outage {
				port.downTime += now - port.downSince
				port.outage = false
				if n.credOn {
					n.creditLinkUp(id) // link re-initialisation resets flow control (credit.go)
				}
			}
			port.Down = false
		}
	}
	n.arLinkChange(now, p, down)
	return nil
}

// Downs returns how many times SetLinkDown took this port's link down.
func (p *Port) Downs() int64 { return int64(p.epoch) }

// DownTime returns how long this port's link has been down (by SetLinkDown) over [0, now],
// in ps, the current outage included up to now.
func (p *Port) DownTime(now sim.Time) sim.Time {
	t := p.downTime
	if p.outage && now > p.downSince {
		t += now - p.downSince
	}
	return t
}

// SetLoss makes port p's link lose each packet sent on it (in p's direction only) with
// probability prob in [0, 1], independently per packet; 0 turns random loss off. Lost packets
// are dropped as loss, counted in p's queue statistics. The draw is made when the packet's
// serialisation starts (it is counted as sent and keeps the transmitter busy); the receiving
// MAC would discard it later, which nothing in the fabric can observe, so the packet does not
// occupy the wire. Draws come from a per-port splitmix64 stream seeded from the network's seed and
// p's index, separate from the ECN marking stream, and are taken only for packets whose loss
// probability is strictly between 0 and 1. Random loss composes with SetBER and
// SetEntropyLoss as independent causes. Errors: an unknown port, prob outside [0, 1] or NaN.
func (n *Network) SetLoss(p PortID, prob float64) error {
	if err := n.checkPort("SetLoss", p); err != nil {
		return err
	}
	if !(prob >= 0 && prob <= 1) {
		return fmt.Errorf("fabric: SetLoss on %s: probability %v is out of range; allowed 0..1", n.Ports[p].Name, prob)
	}
	n.faults(p).loss = prob
	return nil
}

// SetBER gives port p's link (in p's direction) a bit error rate ber in [0, 1]: each bit is
// corrupted independently with probability ber, and a frame with any bad bit fails its check
// sequence and is discarded, so a packet of s bytes (its wire size: 64 B once trimmed) is lost
// with probability 1 - (1 - ber)^(8 s), computed per packet from its size. Pass the BER after
// FEC: forward error correction is not modelled. Lost packets are dropped as loss, exactly as
// with SetLoss (same stream, same accounting); 0 turns bit errors off. Errors: an unknown
// port, ber outside [0, 1] or NaN.
func (n *Network) SetBER(p PortID, ber float64) error {
	if err := n.checkPort("SetBER", p); err != nil {
		return err
	}
	if !(ber >= 0 && ber <= 1) {
		return fmt.Errorf("fabric: SetBER on %s: bit error rate %v is out of range; allowed 0..1", n.Ports[p].Name, ber)
	}
	f := n.faults(p)
	f.ber = ber
	f.lnKeep = math.Log1p(-ber) // -Inf at ber = 1: every packet is lost
	f.berSize = 0               // invalidate the cached per-size probability
	return nil
}

// SetEntropyLoss makes port p's link (in p's direction) lose the packets whose
// Packet.Entropy equals entropy with probability prob in [0, 1]: a gray failure that hits one
// path and spares the others on the same link, as in the MRC paper's experiments with a
// single bad path (with source routes the entropy is the path index; with ECMP it is hashed).
// A port holds up to MaxEntropyFilters filters for distinct entropy values; setting one again
// replaces its probability and prob 0 removes it. Matching packets are dropped as loss, with
// the same stream and accounting as SetLoss, the filter composing with random loss and bit
// errors as an independent cause. Errors: an unknown port, prob outside [0, 1] or NaN, or a
// new filter on a port that already holds MaxEntropyFilters.
func (n *Network) SetEntropyLoss(p PortID, entropy uint32, prob float64) error {
	if err := n.checkPort("SetEntropyLoss", p); err != nil {
		return err
	}
	name := n.Ports[p].Name
	if !(prob >= 0 && prob <= 1) {
		return fmt.Errorf("fabric: SetEntropyLoss on %s, entropy %d: probability %v is out of range; allowed 0..1", name, entropy, prob)
	}
	f := n.faults(p)
	for i := 0; i < f.nEnt; i++ {
		if f.ent[i].entropy != entropy {
			continue
		}
		if prob == 0 {
			copy(f.ent[i:f.nEnt], f.ent[i+1:f.nEnt])
			f.nEnt--
			f.ent[f.nEnt] = entropyFilter{}
		} else {
			f.ent[i].prob = prob
		}
		return nil
	}
	if prob == 0 {
		return nil
	}
	if f.nEnt == MaxEntropyFilters {
		return fmt.Errorf("fabric: SetEntropyLoss on %s, entropy %d: the port already has %d entropy filters (the most allowed); remove one with probability 0", name, entropy, MaxEntropyFilters)
	}
	f.ent[f.nEnt] = entropyFilter{entropy: entropy, prob: prob}
	f.nEnt++
	return nil
}

// SetBlackhole turns a blackhole on or off at switch node: a switch that is up, whose links
// stay up (so neighbours, ECMP and source routes keep sending to it), but which forwards
// nothing. Each packet it receives while on is dropped as blackhole at its arrival, counted in
// the node's Drops; packets already in its egress queues still leave. This is the silent kind
// of gray failure that no link-state signal reveals (Huang et al., "Gray Failure: The
// Achilles' Heel of Cloud-Scale Systems", HotOS 2017). Errors: an unknown node, or a host
// (fail a host's links with SetLinkDown instead).
func (n *Network) SetBlackhole(node NodeID, on bool) error {
	nd, err := n.switchNode("SetBlackhole", node)
	if err != nil {
		return err
	}
	nd.blackhole = on
	n.hot[node].blackhole = on
	return nil
}

// SetSwitchFailed marks switch node as failed as a whole (failed true) or repaired (false).
// It changes no forwarding: the caller takes the switch's links down (SetLinkDown on each)
// and up, as a switch fault does (runner's faults of kind switch); it only labels the drops
// at the switch, Counters.AtFailedSwitch (of link_down), so outputs can say the switch
// failed rather than only its links. Mark it before its links go down so that its queues'
// drops are counted. Errors: an unknown node, or a host.
func (n *Network) SetSwitchFailed(node NodeID, failed bool) error {
	nd, err := n.switchNode("SetSwitchFailed", node)
	if err != nil {
		return err
	}
	nd.failed = failed
	return nil
}

// switchNode returns switch node for the switch-wide fault op (named in its errors): an
// unknown node or a host is an error.
func (n *Network) switchNode(op string, node NodeID) (*Node, error) {
	if node < 0 || int(node) >= len(n.Nodes) {
		return nil, fmt.Errorf("fabric: %s: no node %d (have %d)", op, node, len(n.Nodes))
	}
	nd := &n.Nodes[node]
	if nd.Kind != Switch {
		return nil, fmt.Errorf("fabric: %s: %s is a host, not a switch; fail its links with SetLinkDown", op, nd.Name)
	}
	return nd, nil
}

// Failed reports whether the node is a switch marked failed (SetSwitchFailed).
func (nd *Node) Failed() bool { return nd.failed }

// Blackholed reports whether the node is a blackhole (SetBlackhole).
func (nd *Node) Blackholed() bool { return nd.blackhole }

// checkPort returns an error naming op unless p is a port of the network.
func (n *Network) checkPort(op string, p PortID) error {
	if p < 0 || int(p) >= len(n.Ports) {
		return fmt.Errorf("fabric: %s: no port %d (have %d)", op, p, len(n.Ports))
	}
	return nil
}

// faults returns port p's loss state, creating it (and seeding its stream) on first use, so
// ports without faults carry only a nil pointer.
func (n *Network) faults(p PortID) *linkFaults {
	port := &n.Ports[p]
	if port.faults == nil {
		port.faults = &linkFaults{rng: sim.Mix64(n.lossSeed ^ uint64(p)*0x9e3779b97f4a7c15)}
		port.lossy = true
	}
	return port.faults
}

// entropyFilter loses packets of one entropy value with probability prob.
type entropyFilter struct {
	entropy uint32
	prob    float64
}

// linkFaults is one port's (one direction's) loss configuration and its random stream.
type linkFaults struct {
	loss    float64 // per-packet loss probability (SetLoss)
	ber     float64 // bit error rate (SetBER)
	lnKeep  float64 // log1p(-ber): the log of one bit arriving intact
	berSize int32   // wire size whose BER loss probability is cached in berProb; 0: none
	berProb float64
	ent     [MaxEntropyFilters]entropyFilter // the first nEnt are in use, distinct entropies
	nEnt    int
	rng     uint64 // splitmix64 state of the port's loss stream
}

// lost decides whether the link loses p, taking one draw only when its loss probability is
// strictly between 0 and 1.
func (f *linkFaults) lost(p *Packet) bool {
	q := f.prob(p)
	switch {
	case q <= 0:
		return false
	case q >= 1:
		return true
	}
	f.rng += 0x9e3779b97f4a7c15
	return float64(sim.Mix64(f.rng)>>11)*0x1p-53 < q
}

// prob is the probability that the link loses p: random loss, bit errors and a matching
// entropy filter combined as independent causes.
func (f *linkFaults) prob(p *Packet) float64 {
	q := f.loss
	if f.ber > 0 {
		if p.Size != f.berSize {
			// 1 - (1-ber)^bits, accurate for tiny BERs (no 1 - x cancellation).
			f.berSize = p.Size
			f.berProb = -math.Expm1(8 * float64(p.Size) * f.lnKeep)
		}
		q = either(q, f.berProb)
	}
	for i := 0; i < f.nEnt; i++ {
		if f.ent[i].entropy == p.Entropy {
			q = either(q, f.ent[i].prob)
			break
		}
	}
	return q
}

// either is the probability that at least one of two independent events of probabilities a
// and b happens, written to stay accurate when both are tiny. The conversion rounds the
// product, so no platform fuses it into a multiply-add and the result is the same everywhere.
func either(a, b float64) float64 { return a + b - float64(a*b) }
