package fabric

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
)

// Adaptive routing and fast link-fault recovery in the switches (issue 19, phase 2).
//
// Model. With adaptive routing (AR) on, a switch forwarding a packet that carries no source
// route chooses, per packet, among the output ports of the destination's ECMP group (the
// minimal-hop equal-cost ports: the route table holds only those) the one with the least load,
// load being the bytes queued at the port plus the bytes of the packet still being serialised
// and, with credits on, an unpayable credit debt when the port's VL lacks the credits for the
// packet. This is NVIDIA's InfiniBand AR with the TREE group algorithm ("all ports with
// minimal hops to destination are in the same AR group"; the switch "select[s] the output
// port based on the port's load" [NVIDIA InfiniBand Cluster Bring-up Procedure, Adaptive
// Routing, docs.nvidia.com/networking/display/ibclusterbringupprocedure/adaptive+routing])
// and Spectrum-X Ethernet AR ("selecting forwarding paths dynamically based on the state of
// the switch, such as queue occupancy and port utilization" [NVIDIA NVUE reference, Adaptive
// Routing; NetQ, Monitor Adaptive Routing]). Ports within Threshold bytes of the least loaded
// tie; ties are broken by a seeded per-decision key (never by port order, which would pile
// every switch's choices onto the first port); when every live port ties the switch keeps
// the static ECMP hash, so an idle fabric forwards as ECMP does. Packets with a source route
// (RouteLen > 0, MRC's SRv6) are never rerouted.
//
// Fast recovery (SHIELD, NVIDIA's self-healing interconnect: "HowTo Configure Adaptive
// Routing and SHIELD", referenced from [NVIDIA DOCA, Out-of-order Data Placement]). A down
// output port is out of the choice at once, so a switch moves traffic to another minimal port
// of the group the moment its link fails (AR on), instead of blackholing the hashed flows
// until the subnet manager recomputes the tables (fabric.reconvergence: the sm_delay). When
// no port of the group is usable, the switch notifies its neighbours, which after
// NotifyDelay avoid it for that destination (a fault routing notification) until the link
// comes back, and detours the packet on an escape VL (adaptive_detour.go) or, when it
// cannot, drops it.
//
// Simplified: the load is this switch's own egress state and, with credits, its credit debt
// toward the next hop (arLoad); there is no remote congestion notification (ARN) and no
// flowlet state; the VOQ switch models' ingress queues are not counted.

// AdaptiveConfig configures adaptive routing (the scenario's fabric.adaptive_routing).
type AdaptiveConfig struct {
	// Enabled turns adaptive routing and fast fault recovery on for every switch.
	Enabled bool `yaml:"enabled"`
	// Threshold is the load difference, bytes, within which output ports count as equally
	// loaded (0: exactly equal). A larger threshold keeps more packets on the static choice.
	Threshold sim.Size `yaml:"threshold"`
	// NotifyDelay is how long after a switch finds every port toward a destination down its
	// upstream neighbours stop sending it that destination's packets; 0: DefaultNotifyDelay.
	NotifyDelay sim.Time `yaml:"notify_delay"`
	// SMDelay is the subnet manager's delay: how long after a link change its recomputed
	// tables take effect. The fabric does not read it; the scenario resolves it into
	// fabric.reconvergence, whose route recomputation models the sweep (0: reconvergence's
	// own value). Until then only the switches' fast recovery avoids the dead link.
	SMDelay sim.Time `yaml:"sm_delay"`
	// Detour lets a switch with no live minimal port toward a packet's destination send it
	// down to a switch that has one, which forwards it on the escape VL (adaptive_detour.go),
	// instead of dropping it until the fault notification takes effect; nil: on.
	Detour *bool `yaml:"detour,omitempty"`
}

// DefaultNotifyDelay is the default upstream fault notification delay, 2 us: SHIELD reacts
// in the order of microseconds, against seconds for the subnet manager [NVIDIA, SHIELD].
const DefaultNotifyDelay = 2 * sim.Microsecond

// maxAdaptiveThreshold bounds AdaptiveConfig.Threshold: a port's queues hold at most this.
const maxAdaptiveThreshold = MaxQueueLimit

// WithDefaults fills the zero fields.
func (c AdaptiveConfig) WithDefaults() AdaptiveConfig {
	if c.NotifyDelay == 0 {
		c.NotifyDelay = DefaultNotifyDelay
	}
	return c
}

// Validate names the first bad field under prefix (e.g. "fabric.adaptive_routing").
func (c AdaptiveConfig) Validate(prefix string) error {
	if c.Threshold < 0 || c.Threshold > maxAdaptiveThreshold {
		return fmt.Errorf("%s.threshold: %v is out of range; allowed 0..%v", prefix, c.Threshold, sim.Size(maxAdaptiveThreshold))
	}
	if c.NotifyDelay < 0 || c.NotifyDelay > sim.Second {
		return fmt.Errorf("%s.notify_delay: %v is out of range; allowed 0 (default %v)..1s", prefix, c.NotifyDelay, DefaultNotifyDelay)
	}
	if c.SMDelay < 0 || c.SMDelay > sim.Hour {
		return fmt.Errorf("%s.sm_delay: %v is out of range; allowed 0 (fabric.reconvergence) to 1h", prefix, c.SMDelay)
	}
	return nil
}

// AdaptiveStats counts adaptive routing decisions over the whole fabric.
type AdaptiveStats struct {
	Decisions int64 // packets forwarded by the adaptive choice (no source route)
	Static    int64 // of those, sent where the ECMP hash points (all live ports equally loaded)
	Moved     int64 // sent elsewhere than the ECMP hash because of load
	Rerouted  int64 // sent elsewhere because the hashed port was down (fast recovery)
	DeadEnds  int64 // dropped: every port of the group was down (upstream was notified)
	Notices   int64 // fault notifications delivered to upstream switches
	// Fast recovery of the queues (adaptive_rescue.go) and the losses at a failed link.
	Rescued        int64 // packets moved off a dead or avoided egress's queue to another minimal port
	QueuedDeadEnds int64 // of DeadEnds, packets taken off a dead egress's queue with no usable port left
	LostQueued     int64 // queued at a dead switch egress and not reroutable (a source route), dropped
	LostInFlight   int64 // on the wire (or being serialised) when their link failed, dropped at arrival
	LostInFlightB  int64 // their bytes
	NotifySent     int64 // fault notifications scheduled (each delivered NotifyDelay later, counted in Notices)
	NotifyStale    int64 // scheduled notifications dropped on arrival: a link came back up meanwhile (arLinkChange)
	// Detours (adaptive_detour.go): packets a dead-end switch sent down a non-minimal port
	// instead of dropping them, and those the next switch moved to the escape VL.
	Detours int64
	Turns   int64
	// IntoAvoided: packets with neither a usable minimal port nor a detour sent on a live
	// minimal port that a fault notification avoids, to the switch that notified, which can
	// detour them (adaptive_detour.go).
	IntoAvoided int64
	// FailedDeadEnds and FailedLostQueued are, of DeadEnds and LostQueued, those at a switch
	// that failed as a whole (SetSwitchFailed): its own queued packets with every port of it
	// down, which no reroute could save.
	FailedDeadEnds, FailedLostQueued int64
	// LastDeadEnd is the last time a packet met a switch with no usable minimal port (and
	// detoured, went on to the notifying switch or was dropped): after it, no traffic
	// reached a dead end. 0 when none did.
	LastDeadEnd sim.Time
	// LostInFlightNIC: of LostInFlight, those a host's NIC had sent (the rest left a switch).
	LostInFlightNIC int64
}

// avoidKey is one upstream port that must not carry packets toward one destination host.
type avoidKey struct {
	port PortID
	dst  int32
}

// pendingNotice is one scheduled fault notification and the link-up count (arState.noticeGen)
// when it was scheduled.
type pendingNotice struct {
	k   avoidKey
	gen uint64
}

// arState is the adaptive routing state (Network.ar); nil when off.
type arState struct {
	cfg       AdaptiveConfig
	seed      uint64
	n         uint64 // decisions so far: the tie-break key's counter
	st        AdaptiveStats
	avoid     map[avoidKey]struct{} // fault notifications in force
	kNotify   sim.Kind
	notifying map[avoidKey]struct{} // notifications scheduled, not yet delivered
	pending   []pendingNotice       // notifications by event, FIFO (events at equal delays)
	pendHead  int
	noticeGen uint64 // link-up count: a notification scheduled before the last is stale
	detour    bool   // AdaptiveConfig.DetourOn
	escape    int    // the escape VL (a queue class) of detoured packets; -1: none
}

// SetAdaptive turns adaptive routing on (cfg.Enabled) or leaves the network static. Call it
// once, before the run starts; an invalid cfg is an error naming the field. The tie-break
// keys come from the sim's "fabric.adaptive" stream.
func (n *Network) SetAdaptive(cfg AdaptiveConfig) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate("fabric.adaptive_routing"); err != nil {
		return err
	}
	if !cfg.Enabled {
		n.ar = nil
		return nil
	}
	if n.ar != nil {
		return fmt.Errorf("fabric.adaptive_routing: already set")
	}
	a := &arState{cfg: cfg, seed: n.sim.RNG("fabric.adaptive").Uint64(),
		avoid: map[avoidKey]struct{}{}, notifying: map[avoidKey]struct{}{}}
	a.kNotify = n.sim.Register("fabric.adaptive.notify", n.onNotify)
	a.escape = -1
	if a.detour = cfg.DetourOn(); a.detour {
		n.arEscapeSetup(a)
	}
	n.ar = a
	return nil
}

// AdaptiveOn reports whether adaptive routing is on.
func (n *Network) AdaptiveOn() bool { return n.ar != nil }

// AdaptiveEscapeVL returns the escape VL (queue class) that adaptive routing's detours move
// packets to on switch-to-switch ports (adaptive_detour.go), or -1 when adaptive routing or
// its detours are off or there is no escape VL.
func (n *Network) AdaptiveEscapeVL() int {
	if n.ar == nil || !n.ar.detour {
		return -1
	}
	return n.ar.escape
}

// AdaptiveStats returns the adaptive routing counters (zero when off).
func (n *Network) AdaptiveStats() AdaptiveStats {
	if n.ar == nil {
		return AdaptiveStats{}
	}
	return n.ar.st
}

// arLoad is port pid's load for packet p at time now: bytes queued, plus the rest of the
// packet being serialised, plus, with credits on, the credit debt of p's VL: the bytes of
// the downstream receiver's buffer this port has filled or has in flight (its buffer less
// the credits left), and a full queue's worth more when the credits left do not cover p, so
// that a port that cannot send comes last. The credit debt is how a switch sees congestion
// one hop further on: a downstream switch whose egress is backed up holds this port's
// packets and returns their credits late [IBTA vol 1 §7.9; NVIDIA: AR selects by the
// port's load, credits included]. Without it a switch sees only its own queues, which stay
// short while the next hop's fill (measured in transport/ib/ibnic/ar_test.go: a 2 MB
// permutation's mean flow throughput 0.91 of ideal with the queue alone, 0.95 with the
// debt).
func (n *Network) arLoad(now sim.Time, pid PortID, p *Packet) int64 {
	port := &n.Ports[pid]
	load := port.q.bytes
	if now < port.txEnd {
		load += port.Rate.BytesIn(port.txEnd - now)
	}
	if n.credOn && port.cred != nil {
		c := port.q.class(p)
		left := port.cred.limit[c] - port.cred.sent[c]
		if left < blocks(int64(p.Size)) {
			load += MaxQueueLimit
		}
		if port.Peer >= 0 {
			// The downstream buffer this port's VL occupies or has in flight.
			load += (n.Ports[port.Peer].cred.capacity - left) * CreditBlockBytes
		}
	}
	return load
}

// arUsable reports whether switch egress pid may carry a packet toward dst: up and not
// avoided by a fault notification.
func (a *arState) usable(n *Network, pid PortID, dst int32) bool {
	if n.Ports[pid].Down {
		return false
	}
	if len(a.avoid) > 0 {
		if _, ok := a.avoid[avoidKey{pid, dst}]; ok {
			return false
		}
	}
	return true
}

// arPick returns the local port of switch id that adaptive routing sends p to, among group g
// (non-empty), or -1 when every port is down (p is then dropped and upstream notified).
func (n *Network) arPick(now sim.Time, id NodeID, p *Packet, g []uint16) int {
	a := n.ar
	hot := &n.hot[id]
	a.st.Decisions++
	h := ecmpIndex(n.Nodes[id].seed, p, len(g))
	// Pass 1: the least load among usable ports, and how many are usable.
	minLoad, usable := int64(-1), 0
	for _, l := range g {
		if int(l) >= len(hot.ports) || hot.ports[l] < 0 {
			continue
		}
		pid := hot.ports[l]
		if !a.usable(n, pid, p.Dst) {
			continue
		}
		usable++
		if ld := n.arLoad(now, pid, p); minLoad < 0 || ld < minLoad {
			minLoad = ld
		}
	}
	if usable == 0 {
		a.st.LastDeadEnd = now
		n.arNotify(now, id, p.Dst)
		if l := n.arIntoAvoided(now, id, p, g, -1); l >= 0 {
			return l // on to the notifying switch, which detours it
		}
		if l := n.arDetour(now, id, p); l >= 0 {
			return l // down a non-minimal port, to take the escape VL at the next switch
		}
		a.st.DeadEnds++
		if n.Nodes[id].failed {
			a.st.FailedDeadEnds++
		}
		return -1
	}
	limit := minLoad + int64(a.cfg.Threshold)
	// Pass 2: the tied ports (load <= limit). If all usable ports tie and the hashed one is
	// usable, keep the static choice.
	ties := 0
	for _, l := range g {
		if int(l) >= len(hot.ports) || hot.ports[l] < 0 {
			continue
		}
		pid := hot.ports[l]
		if a.usable(n, pid, p.Dst) && n.arLoad(now, pid, p) <= limit {
			ties++
		}
	}
	hl := g[h]
	hashUp := int(hl) < len(hot.ports) && hot.ports[hl] >= 0 && a.usable(n, hot.ports[hl], p.Dst)
	if ties == usable && hashUp {
		a.st.Static++
		return int(hl)
	}
	// Pass 3: the r-th tied port, r from the seeded key.
	a.n++
	r := int(sim.Mix64(a.seed^a.n*0x9e3779b97f4a7c15) % uint64(ties))
	for _, l := range g {
		if int(l) >= len(hot.ports) || hot.ports[l] < 0 {
			continue
		}
		pid := hot.ports[l]
		if a.usable(n, pid, p.Dst) && n.arLoad(now, pid, p) <= limit {
			if r == 0 {
				if l == hl {
					a.st.Static++
				} else if hashUp {
					a.st.Moved++
				} else {
					a.st.Rerouted++
				}
				return int(l)
			}
			r--
		}
	}
	return int(hl) // not reached: ties >= 1
}

// arNotify schedules, after NotifyDelay, a fault notification from switch id to each of its
// upstream switches: they stop sending id packets toward dst.
func (n *Network) arNotify(now sim.Time, id NodeID, dst int32) {
	a := n.ar
	for _, pid := range n.hot[id].ports {
		if pid < 0 {
			continue
		}
		peer := n.Ports[pid].Peer
		if peer < 0 || n.Ports[pid].peerHost {
			continue
		}
		k := avoidKey{peer, dst} // the upstream's egress toward id
		if _, ok := a.notifying[k]; ok {
			continue
		}
		if _, ok := a.avoid[k]; ok {
			continue
		}
		a.notifying[k] = struct{}{}
		a.pending = append(a.pending, pendingNotice{k, a.noticeGen})
		a.st.NotifySent++
		// Its own tiebreak key (sim.AtOwnKey), not the shared sequence: a notification
		// taken from the sequence shifted the key of every event scheduled after it, so a
		// failure that touched no packet still re-broke every later same-instant tie, and
		// the run left its faultless twin at once (a 20 us outage on an idle plane "cost"
		// -1640..+1969 us by seed under 8 KiB credits; docs/protocols.md, "A lossless
		// outage under AR"). The notifications at one instant tie, and onNotify takes them
		// in FIFO order whichever event runs first.
		n.sim.AtOwnKey(now+a.cfg.NotifyDelay, a.kNotify, 0, 0)
	}
}

// onNotify delivers the oldest scheduled fault notification, unless a link came back up
// since it was scheduled (arLinkChange): it is then stale and dropped.
func (n *Network) onNotify(now sim.Time, _ int32, _ uint64) {
	a := n.ar
	pn := a.pending[a.pendHead]
	a.pendHead++
	if a.pendHead == len(a.pending) {
		a.pending, a.pendHead = a.pending[:0], 0
	}
	k := pn.k
	if pn.gen != a.noticeGen {
		a.st.NotifyStale++
		return
	}
	delete(a.notifying, k)
	a.avoid[k] = struct{}{}
	a.st.Notices++
	n.arCascade(now, k)
	n.arNotified(now, k.port, k.dst)
}

// arLinkChange, after SetLinkDown changed port p's link: when it went down, each switch end
// notifies upstream at once of the destinations it can no longer reach (arNotifyDead); when
// it came back up, the fault notifications are cleared: the notifying switch may have a path
// again (the subnet manager's sweep would find it; this is the fast case). The notifications
// still on their way (sent less than NotifyDelay ago) are cleared too, and dropped when they
// arrive: delivered after the link-up they would stand forever, nothing clearing them (a
// link down for less than NotifyDelay left its upstream switches avoiding it to the end).
func (n *Network) arLinkChange(now sim.Time, p PortID, down bool) {
	if n.ar == nil {
		return
	}
	if down {
		for _, id := range [2]PortID{p, n.Ports[p].Peer} {
			if nd := n.Ports[id].Node; n.Nodes[nd].Kind == Switch {
				n.arNotifyDead(now, nd)
			}
		}
		return
	}
	if len(n.ar.avoid) > 0 {
		clear(n.ar.avoid)
	}
	if len(n.ar.notifying) > 0 {
		clear(n.ar.notifying)
		n.ar.noticeGen++
	}
}

// forwardAdaptive is forward's adaptive branch: it picks the local egress for p (no source
// route) at switch id among group g, or returns -1 after dropping p.
func (n *Network) forwardAdaptive(now sim.Time, id NodeID, p *Packet, g []uint16) int {
	var l int
	if p.Flags&flagDetour != 0 {
		l = n.arTurn(now, id, p, g) // the switch after a detour (adaptive_detour.go)
	} else {
		l = n.arPick(now, id, p, g)
	}
	if l < 0 {
		n.dropAt(&n.Nodes[id], p, DropLinkDown)
	}
	return l
}
