package fabric

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
)

// CreditBlockBytes is the unit of InfiniBand link-level flow control: receivers advertise
// their buffer, and senders count what they send, in 64-byte blocks [IBTA vol 1 §7.9.2].
const CreditBlockBytes = 64

// FCPacketBytes is an InfiniBand flow-control packet on the wire: 4 bytes (Op, FCTBS, VL,
// FCCL) plus the 2-byte link packet CRC [IBTA vol 1 §7.9.4, Figure 70 "Flow Control Packet
// Format"]; its serialisation is part of the credit round trip.
const FCPacketBytes = 6

// DefaultCreditBuffer is the receive buffer per port and per VL when CreditConfig.BufferPerVL
// is 0: 128 KiB (2,048 blocks). Lockstep default: NVIDIA does not publish Quantum-2
// (QM9700) or ConnectX-7 per-VL buffer sizes; 128 KiB covers the credit round trip of a
// 400 Gb/s link up to about 1 us each way (200 m of fibre plus forwarding), so links of a
// data hall run at line rate, and it is a scenario parameter.
const DefaultCreditBuffer = 128 << 10

// CreditConfig is InfiniBand credit-based link-level flow control [IBTA vol 1 §7.9] on every
// link of the fabric, one credit pool per virtual lane. Each queue class of a port is one
// VL (class c = VL c; the transport chooses it through Packet.Class: InfiniBand maps its
// QPs' SLs to VLs, ib.Config.VL). The receiving end of every link (a switch ingress or a host
// adapter) advertises BufferPerVL bytes per VL in 64-byte blocks; the sender keeps the
// blocks it sent (FCTBS) and the last credit limit it heard (FCCL), and starts a packet only
// if FCTBS + the packet's blocks <= FCCL [§7.9.4.2; the 12-bit modular arithmetic of the
// wire fields is not modelled, counts are 64-bit]. A switch frees a packet's blocks when the
// packet leaves its buffer (its egress starts sending it), a host adapter when the packet
// arrives; each change sends a flow-control packet with the new limit back over the link,
// arriving one link delay plus its serialisation (FCPacketBytes) later. Nothing is dropped
// for want of buffer: a packet waits at the upstream egress until credits cover it, so
// backpressure spreads hop by hop (head-of-line blocking, congestion spreading) with no
// pause frames.
//
// VL arbitration: strict priority between VLs (the port's class order) unless High or Low
// give the high/low weighted round-robin VLArbitrationTable [§7.6.9] (arbDequeue). The
// transport picks a packet's VL (InfiniBand: its QP's SL through the SL-to-VL table,
// transport/ib). Simplified: no VL15 management lane apart;
// flow-control packets are never lost, so the periodic resend [§7.9.4.3] is not modelled;
// a link that comes back up re-initialises its flow control in both directions
// (creditLinkUp: FCTBS and ABR at 0, the free buffer re-advertised [§7.9.4]), which returns
// the blocks of the packets lost on it while it failed.
type CreditConfig struct {
	Enabled bool `yaml:"enabled"`
	// BufferPerVL is each receiving port's buffer for each VL, bytes, rounded down to 64-byte
	// blocks; 0: DefaultCreditBuffer. It must hold the largest packet.
	BufferPerVL sim.Size `yaml:"buffer_per_vl"`
	// HostBufferPerVL is a host adapter's receive buffer per VL; 0: BufferPerVL.
	HostBufferPerVL sim.Size `yaml:"host_buffer_per_vl"`
	// High and Low are the VL arbitration tables [IBTA vol 1 §7.6.9]: each a list of (VL,
	// weight) entries served in weighted round robin, weight in 64-byte units (an entry may
	// start a packet while it has weight left; weight 0 skips it). The high table is served
	// first, the low one when the high table has nothing to send or HighLimit is reached.
	// Both empty (default): strict priority between VLs, lowest class first.
	High []VLArbEntry `yaml:"high"`
	Low  []VLArbEntry `yaml:"low"`
	// HighLimit is LimitOfHighPriority: the bytes of high-priority packets, in 4 KiB units,
	// that may be sent while a low-priority packet waits; 0: one packet at a time; 255:
	// unlimited [IBTA vol 1 §7.6.9].
	HighLimit int `yaml:"high_limit"`
	// ScaleByRate makes BufferPerVL and HostBufferPerVL the buffers of a port of up to
	// CreditBufferRate and gives a faster port proportionally more (BufferFor), so the
	// buffer covers the same credit round trip at any link rate. The ib transport sets it
	// when the scenario gives neither buffer (the lockstep default).
	ScaleByRate bool `yaml:"-"`
	// MarkVictims turns IB CC's victim exemption off (creditVictim): a credit-blocked egress
	// marks too, as lockstep did before it (for comparisons and tests; not a scenario key).
	MarkVictims bool `yaml:"-"`
}

// CreditBufferRate is the link rate DefaultCreditBuffer is sized for: 400 Gb/s (NDR).
const CreditBufferRate = 400 * sim.Gbps

// BufferFor returns the receive buffer per VL of a port at rate: buf, and with ScaleByRate
// buf x ceil(rate / CreditBufferRate) for a port faster than CreditBufferRate. A link runs
// at line rate only if its buffer covers its credit round trip (about twice its delay plus a
// packet's serialisation: TestCreditLinkThroughput), which grows with the rate: at 800 Gb/s
// (XDR, NVIDIA Quantum-X800 and ConnectX-8, whose per-port buffers NVIDIA does not publish)
// 128 KiB covers 1.3 us of round trip against 2.6 us at 400 Gb/s, so 1 us hops (2 us plus
// the next switch's wait) held every link to about 0.64 of line and an adaptively routed
// permutation to 0.597 of ideal; 256 KiB gives 0.968 (TestPermutationAdaptiveRates).
func (c CreditConfig) BufferFor(buf sim.Size, rate sim.Rate) sim.Size {
	if !c.ScaleByRate || rate <= CreditBufferRate {
		return buf
	}
	k := (int64(rate) + int64(CreditBufferRate) - 1) / int64(CreditBufferRate)
	return sim.Size(min(int64(buf)*k, MaxQueueLimit))
}

// VLArbEntry is one entry of a VL arbitration table: a VL (a queue class) and its weight in
// 64-byte units, 0..255.
type VLArbEntry struct {
	VL     int `yaml:"vl"`
	Weight int `yaml:"weight"`
}

// WithDefaults fills the zero fields.
func (c CreditConfig) WithDefaults() CreditConfig {
	if c.BufferPerVL == 0 {
		c.BufferPerVL = DefaultCreditBuffer
	}
	if c.HostBufferPerVL == 0 {
		c.HostBufferPerVL = c.BufferPerVL
	}
	return c
}

// Validate names the first bad field under prefix (e.g. "fabric.credits").
func (c CreditConfig) Validate(prefix string) error {
	if c.BufferPerVL < CreditBlockBytes || c.BufferPerVL > MaxQueueLimit {
		return fmt.Errorf("%s.buffer_per_vl: %v is out of range; allowed %dB (one block)..%v", prefix, c.BufferPerVL, CreditBlockBytes, sim.Size(MaxQueueLimit))
	}
	if c.HostBufferPerVL < CreditBlockBytes || c.HostBufferPerVL > MaxQueueLimit {
		return fmt.Errorf("%s.host_buffer_per_vl: %v is out of range; allowed %dB (one block)..%v", prefix, c.HostBufferPerVL, CreditBlockBytes, sim.Size(MaxQueueLimit))
	}
	for _, t := range []struct {
		name string
		e    []VLArbEntry
	}{{"high", c.High}, {"low", c.Low}} {
		for i, e := range t.e {
			if e.VL < 0 || e.VL >= MaxClasses {
				return fmt.Errorf("%s.%s[%d].vl: %d is out of range; allowed 0..%d (a queue class)", prefix, t.name, i, e.VL, MaxClasses-1)
			}
			if e.Weight < 0 || e.Weight > 255 {
				return fmt.Errorf("%s.%s[%d].weight: %d is out of range; allowed 0..255 (64-byte units)", prefix, t.name, i, e.Weight)
			}
		}
	}
	if c.HighLimit < 0 || c.HighLimit > 255 {
		return fmt.Errorf("%s.high_limit: %d is out of range; allowed 0..255 (4 KiB units, 255 unlimited)", prefix, c.HighLimit)
	}
	return nil
}

// blocks is the number of 64-byte credit blocks a packet of size bytes takes.
func blocks(size int64) int64 { return (size + CreditBlockBytes - 1) / CreditBlockBytes }

// fcUpdate is one flow-control packet on its way back over a link: the VL it is for and the
// credit limit it carries, arriving at at.
type fcUpdate struct {
	at    sim.Time
	class uint8
	limit int64
}

// creditState is one port's credit state: as a sender (the blocks it sent and the limit it
// knows, by VL, and its blocked time) and as a receiver (the limit it advertises, the blocks
// it holds and the flow-control packets it has sent that are still on the wire).
type creditState struct {
	// Sender.
	sent, limit [MaxClasses]int64 // FCTBS and FCCL, blocks since the link came up
	blockedAt   [MaxClasses]sim.Time
	blocked     [MaxClasses]sim.Time // completed blocked spells, by VL
	blocks      int64                // times a VL became blocked
	victim      int64                // packets queued unmarked while their VL was blocked (creditVictim)
	// Receiver.
	adv, held [MaxClasses]int64 // the limit it advertises; blocks it holds now
	peak      [MaxClasses]int64 // the most blocks held
	capacity  int64             // blocks per VL
	fc        []fcUpdate        // in flight toward the sender, in arrival order
	fcHead    int
	fcSent    int64
	// VL arbiter (CreditConfig.High, Low): each table's current entry and the weight it has
	// left, bytes; the high-priority bytes sent since a low-priority packet could go.
	arbPos  [2]int
	arbLeft [2]int64
	hiSent  int64
}

// CreditStats is one port's credit record: as a sender, the time its VLs spent with a packet
// waiting that the credit limit did not cover (summed over VLs, the current spell included)
// and how often one became blocked; as a receiver, its buffer per VL, the most bytes it held
// for one VL and the flow-control packets it sent.
type CreditStats struct {
	BlockedTime     sim.Time
	BlockedSpells   int64
	BufferBytes     int64
	PeakHeldBytes   int64
	FCPacketsSent   int64
	TxBlocks        int64 // blocks sent, all VLs
	CreditsInFlight int64 // as a sender: blocks it may still send now, summed over VLs
	// VictimUnmarked counts the ECN-capable packets this egress queued while their VL was
	// credit-blocked, which IB CC's victim exemption leaves unmarked (creditVictim); 0 without
	// marking.
	VictimUnmarked int64
}

// SetCredits turns InfiniBand credit-based flow control on for every link (cfg's defaults
// filled); call it once, after the fabric is built and before the run. Errors: an invalid
// cfg, credits already on, or PFC on (the two are alternatives). A buffer smaller than a packet makes that packet
// wait forever; CreditCheck says so before a run.
func (n *Network) SetCredits(cfg CreditConfig) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate("credits"); err != nil {
		return err
	}
	if n.credOn {
		return fmt.Errorf("fabric: credits: already on (SetCredits is called once, before the run)")
	}
	if n.pfcOn {
		return fmt.Errorf("fabric: credits: PFC is on; credit-based flow control replaces it (turn fabric.pfc off)")
	}
	n.credOn, n.linkFC = true, true
	// Registered here, not in New: a kind registered there would shift the kinds registered
	// after it, and with them the kernel's tie order, in every run without credits.
	n.kCredit = n.sim.Register("fabric.credit", n.onCredit)
	n.credCfg = cfg
	for i := range n.Ports {
		p := &n.Ports[i]
		st := &creditState{capacity: int64(cfg.BufferFor(cfg.BufferPerVL, p.Rate)) / CreditBlockBytes}
		if n.Nodes[p.Node].Kind == Host {
			st.capacity = int64(cfg.BufferFor(cfg.HostBufferPerVL, p.Rate)) / CreditBlockBytes
		}
		for c := range st.adv {
			st.adv[c] = st.capacity
		}
		p.cred = st
	}
	for i := range n.Ports {
		p := &n.Ports[i]
		if p.Peer >= 0 {
			p.cred.limit = n.Ports[p.Peer].cred.adv // initial credit exchange at link up
		}
	}
	return nil
}

// CreditsOn reports whether SetCredits turned credit flow control on.
func (n *Network) CreditsOn() bool { return n.credOn }

// CreditConfig returns the configuration SetCredits applied (zero when off).
func (n *Network) CreditConfig() CreditConfig { return n.credCfg }

// CreditStats returns port p's credit record at now (zero when credits are off).
func (n *Network) CreditStats(p PortID, now sim.Time) CreditStats {
	port := &n.Ports[p]
	st := port.cred
	if st == nil {
		return CreditStats{}
	}
	s := CreditStats{BlockedSpells: st.blocks, BufferBytes: st.capacity * CreditBlockBytes, FCPacketsSent: st.fcSent, VictimUnmarked: st.victim}
	for c := 0; c < MaxClasses; c++ {
		s.BlockedTime += st.blocked[c]
		if port.paused&(1<<c) != 0 && now > st.blockedAt[c] {
			s.BlockedTime += now - st.blockedAt[c]
		}
		s.PeakHeldBytes = max(s.PeakHeldBytes, st.peak[c]*CreditBlockBytes)
		s.TxBlocks += st.sent[c]
		if c < port.q.p.classes {
			s.CreditsInFlight += st.limit[c] - st.sent[c]
		}
	}
	return s
}

// CreditVLBlocks returns the 64-byte blocks port p has sent on each VL since its link last
// came up (FCTBS per VL; zero when credits are off): which VLs a port's traffic used.
func (n *Network) CreditVLBlocks(p PortID) [MaxClasses]int64 {
	if st := n.Ports[p].cred; st != nil {
		return st.sent
	}
	return [MaxClasses]int64{}
}

// creditBlock recomputes which of port's non-empty classes cannot send their head packet
// for want of credits, stores it as the port's paused mask (the transmitter serves only the
// others) and keeps the blocked-time books.
func (n *Network) creditBlock(now sim.Time, port *Port) {
	q, st := &port.q, port.cred
	var mask uint16
	for b := q.busy & (1<<q.p.classes - 1); b != 0; b &= b - 1 {
		c := 0
		for b&(1<<c) == 0 {
			c++
		}
		if st.sent[c]+blocks(q.s[q.lines[c].head].v) > st.limit[c] {
			mask |= 1 << c
		}
	}
	if d := mask ^ port.paused; d != 0 {
		for c := 0; c < q.p.classes; c++ {
			switch {
			case d&mask&(1<<c) != 0:
				st.blockedAt[c] = now
				st.blocks++
			case d&port.paused&(1<<c) != 0:
				st.blocked[c] += now - st.blockedAt[c]
			}
		}
	}
	port.paused = mask
}

// creditSend charges the packet in slot k, just taken off port's queues, to its VL's credits.
func (n *Network) creditSend(port *Port, k int32) {
	sl := &port.q.s[k]
	c := port.q.class(sl.p)
	port.cred.sent[c] += blocks(sl.v)
}

// creditHold accounts p, arriving at ingress port in (a switch's), to its buffer.
func (n *Network) creditHold(in *Port, p *Packet) {
	c := in.q.class(p)
	st := in.cred
	st.held[c] += blocks(int64(p.Size))
	st.peak[c] = max(st.peak[c], st.held[c])
}

// creditFree frees size bytes of VL c at receiving port in (a switch ingress whose packet
// left the buffer, or a host adapter that took it) and sends the new limit upstream.
func (n *Network) creditFree(now sim.Time, in PortID, c int, size int64) {
	port := &n.Ports[in]
	st := port.cred
	b := blocks(size)
	st.held[c] = max(st.held[c]-b, 0)
	st.adv[c] += b
	at := now + port.Delay + port.Rate.TxTime(FCPacketBytes)
	if k := len(st.fc); k > st.fcHead {
		if t := st.fc[k-1]; t.class == uint8(c) && t.at == at {
			st.fc[k-1].limit = st.adv[c] // sent at the same instant: one packet
			return
		}
		if t := st.fc[k-1].at; t > at {
			at = t // the link stays a FIFO if its delay was lowered
		}
	}
	if st.fcHead == len(st.fc) {
		st.fc, st.fcHead = st.fc[:0], 0
		n.sim.At(at, n.kCredit, int32(in), 0)
	} else if st.fcHead >= len(st.fc)/2 {
		// Keep the ring bounded by the packets in flight on a link that never empties.
		k := copy(st.fc, st.fc[st.fcHead:])
		st.fc, st.fcHead = st.fc[:k], 0
	}
	st.fc = append(st.fc, fcUpdate{at: at, class: uint8(c), limit: st.adv[c]})
	st.fcSent++
}

// creditRelease frees p's blocks at the switch ingress it is accounted to, if any (it leaves
// the buffer: sent on, flushed or dropped).
func (n *Network) creditRelease(now sim.Time, p *Packet) {
	if p.ingress == 0 {
		return
	}
	in := PortID(p.ingress - 1)
	p.ingress = 0
	c := n.Ports[in].q.class(p)
	if p.Flags&flagEscHeld != 0 {
		// Moved to the escape VL at this switch: held in the VL it arrived in (adaptive_detour.go).
		c = int(p.heldClass)
		p.Flags &^= flagEscHeld
	}
	n.creditFree(now, in, c, int64(p.Size))
}

// onCredit: the head flow-control packet sent by receiving port obj reaches its peer, the
// sender, which raises its limit and restarts its transmitter if that unblocks a VL.
func (n *Network) onCredit(now sim.Time, obj int32, _ uint64) {
	rx := n.Ports[obj].cred
	u := rx.fc[rx.fcHead]
	rx.fcHead++
	if rx.fcHead < len(rx.fc) {
		n.sim.At(rx.fc[rx.fcHead].at, n.kCredit, obj, 0)
	}
	pid := n.Ports[obj].Peer
	port := &n.Ports[pid]
	if u.limit > port.cred.limit[u.class] {
		port.cred.limit[u.class] = u.limit
	}
	if port.paused&(1<<u.class) == 0 {
		return
	}
	n.creditBlock(now, port)
	if !port.q.sendable(port.paused) || port.Down {
		return
	}
	if now >= port.txEnd {
		n.startTx(now, pid, port)
	} else if !port.txEvent {
		port.txEvent = true
		n.sim.At(port.txEnd, n.kTx, int32(pid), 0)
	}
}

// CreditCheck reports, before a run, why credit flow control cannot work or cannot be
// lossless, one line per problem (at most max; nil when none): a buffer per VL below the
// largest packet (that packet could never be sent), and a switch egress whose queue limit is
// below what the switch's ingresses may hold (ingress ports x buffer per VL), so that
// drop-tail could still act. pkt is the largest packet's wire size.
func (n *Network) CreditCheck(pkt int64, max int) []string {
	if !n.credOn {
		return nil
	}
	var out []string
	add := func(s string) bool {
		if len(out) < max {
			out = append(out, s)
		}
		return len(out) < max
	}
	for _, b := range []struct {
		name string
		v    sim.Size
	}{{"buffer_per_vl", n.credCfg.BufferPerVL}, {"host_buffer_per_vl", n.credCfg.HostBufferPerVL}} {
		if int64(b.v)/CreditBlockBytes < blocks(pkt) && !add(fmt.Sprintf("credits.%s: %v holds fewer blocks than the largest packet (%dB, %d blocks); it could never be sent", b.name, b.v, pkt, blocks(pkt))) {
			return out
		}
	}
	for id := range n.Nodes {
		nd := &n.Nodes[id]
		if nd.Kind != Switch {
			continue
		}
		var hold int64
		for _, pid := range nd.Ports {
			if pid >= 0 {
				hold += n.Ports[pid].cred.capacity * CreditBlockBytes
			}
		}
		for _, pid := range nd.Ports {
			if pid < 0 {
				continue
			}
			if lim := n.Ports[pid].q.p.limit; lim < hold {
				if !add(fmt.Sprintf("egress %s: queue limit %v is below the %v the switch's ingresses may hold (ports x buffer per VL); drop-tail could act", n.Ports[pid].Name, sim.Size(lim), sim.Size(hold))) {
					return out
				}
				break
			}
		}
	}
	return out
}

// arbOn reports whether the VL arbitration tables replace strict priority.
func (n *Network) arbOn() bool { return len(n.credCfg.High)+len(n.credCfg.Low) > 0 }

// arbDequeue picks the next packet of port under the VL arbitration tables [IBTA vol 1
// §7.6.9] among the classes with a packet its credits cover (port.paused masks the others),
// takes it off its queue and returns its slot, or -1 when none may go. A class in neither
// table is never served by the tables (Validate does not require every class to appear; a
// run with such traffic stalls, which the stall checks report).
func (n *Network) arbDequeue(now sim.Time, pid PortID, port *Port) int32 {
	q, st := &port.q, port.cred
	ok := q.busy & (1<<q.p.classes - 1) &^ port.paused
	if ok == 0 {
		return -1
	}
	tables := [2][]VLArbEntry{n.credCfg.High, n.credCfg.Low}
	limit := int64(n.credCfg.HighLimit) * 4096
	eligible := func(t int) bool {
		for _, e := range tables[t] {
			if e.Weight > 0 && ok&(1<<e.VL) != 0 {
				return true
			}
		}
		return false
	}
	hi, lo := eligible(0), eligible(1)
	t := 1
	switch {
	case hi && (!lo || n.credCfg.HighLimit == 255 || st.hiSent == 0 || st.hiSent < limit):
		t = 0
	case !lo:
		return -1
	}
	tab := tables[t]
	for range len(tab) + 1 {
		e := tab[st.arbPos[t]]
		if e.Weight > 0 && ok&(1<<e.VL) != 0 {
			if st.arbLeft[t] <= 0 {
				st.arbLeft[t] = int64(e.Weight) * CreditBlockBytes
			}
			k := q.pop(now, e.VL, n.lineBlock(pid))
			st.arbLeft[t] -= q.s[k].v
			if st.arbLeft[t] <= 0 {
				st.arbPos[t] = (st.arbPos[t] + 1) % len(tab)
			}
			if t == 0 {
				st.hiSent += q.s[k].v
			} else {
				st.hiSent = 0
			}
			return k
		}
		st.arbPos[t] = (st.arbPos[t] + 1) % len(tab)
		st.arbLeft[t] = 0
	}
	return -1
}

// creditLinkUp re-initialises the flow control of port pid's link, in the direction pid
// sends, when the link comes back up: as at any link (re)initialisation both ends reset
// their flow-control state [IBTA vol 1 §7.9.4: the sender's FCTBS and the receiver's ABR
// start at 0, and the receiver advertises the buffer it has free]. The sender's count of
// blocks sent restarts at 0 and its limit is the receiver's free buffer (its capacity less
// the blocks of packets that arrived before the failure and are still inside the switch);
// the flow-control packets still on the wire carry limits of the old count and are
// discarded when they arrive. Without this, the blocks of packets lost on the dead link
// (on the wire or being serialised when it failed) stayed charged to the sender forever,
// and after a few outages its VL starved (32 packets stuck in /tmp/s38/ut19/dl7.yaml).
func (n *Network) creditLinkUp(pid PortID) {
	port := &n.Ports[pid]
	if port.cred == nil || port.Peer < 0 {
		return
	}
	tx, rx := port.cred, n.Ports[port.Peer].cred
	for c := range tx.sent {
		tx.sent[c] = 0
		rx.adv[c] = max(rx.capacity-rx.held[c], 0)
		tx.limit[c] = rx.adv[c]
	}
	for i := rx.fcHead; i < len(rx.fc); i++ {
		rx.fc[i].limit = -1 // stale: below any limit, onCredit ignores it
	}
}

// CreditAudit checks, once the fabric has drained (no packet inside; flow-control packets
// still on the wire count as arrived, since they are never lost), that every link's credits
// are back to full: for every
// port with credits and every VL of its queues, the receiving peer holds no blocks and the
// sender may send the receiver's whole buffer (FCCL - FCTBS = capacity). It returns one line
// per broken port (at most most), nil when all are whole or credits are off. A leak (blocks
// charged to a sender that the receiver never frees) shows here as a short VL.
func (n *Network) CreditAudit(most int) []string {
	if !n.credOn {
		return nil
	}
	var out []string
	for i := range n.Ports {
		p := &n.Ports[i]
		if p.Peer < 0 || p.cred == nil || len(out) >= most {
			continue
		}
		rx := n.Ports[p.Peer].cred
		for c := 0; c < p.q.p.classes; c++ {
			limit := p.cred.limit[c]
			for _, u := range rx.fc[rx.fcHead:] {
				if int(u.class) == c {
					limit = max(limit, u.limit) // still on the wire; never lost
				}
			}
			if free := limit - p.cred.sent[c]; free != rx.capacity || rx.held[c] != 0 {
				out = append(out, fmt.Sprintf("port %s VL %d: %d of %d blocks free to send, receiver %s holds %d", p.Name, c, free, rx.capacity, n.Ports[p.Peer].Name, rx.held[c]))
				break
			}
		}
	}
	return out
}

// creditVictim applies IB congestion control's victim exemption [IBTA vol 1 Annex A10.2.1:
// a switch port marks FECN only as the root of congestion; a port whose queue is past the
// threshold because it lacks credits, blocked by the next hop, is a victim and does not
// mark]: when port marks (its queue has ECN, which under credits only IB CC turns on) and
// p's VL is credit-blocked there (its head packet waits for credits the limit does not
// cover: port.paused, kept by creditBlock at every transmit and credit arrival), it takes
// ECT off p for the marking decision and returns true; the caller restores ECT after the
// enqueue. Counted in CreditStats.VictimUnmarked.
func (n *Network) creditVictim(port *Port, p *Packet) bool {
	if !port.q.p.ecn || p.Flags&(ECT|CE) != ECT || port.paused&(1<<port.q.class(p)) == 0 || n.credCfg.MarkVictims {
		return false
	}
	p.Flags &^= ECT
	port.cred.victim++
	return true
}
