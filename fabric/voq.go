package fabric

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
)

// Switch models (SwitchConfig.Kind). Output queueing is the fabric's default: a packet that
// reaches a switch is forwarded straight into its egress queue. The two input-buffered models
// hold it in its ingress port first and move it to the egress when the egress has room (its
// queue holds less than EgressThreshold), as a crossbar switch with input buffers does
// [McKeown, "The iSLIP Scheduling Algorithm for Input-Queued Switches", IEEE/ACM ToN 7(2),
// 1999, §I-II]:
//   - shared_ingress: one FIFO per ingress; only its head may move, so a head waiting for a
//     busy egress blocks the packets behind it that go elsewhere (head-of-line blocking,
//     which limits a FIFO input-queued switch to 58.6% throughput under uniform traffic
//     [Karol, Hluchyj, Morgan, "Input versus output queueing on a space-division packet
//     switch", IEEE Trans. Commun. 35(12), 1987]).
//   - voq: one virtual output queue per (ingress, egress); each egress serves the ingresses
//     holding packets for it in round robin, so no packet waits behind one for another egress
//     [McKeown 1999, §II].
const (
	SwitchOutput        = "output"
	SwitchSharedIngress = "shared_ingress"
	SwitchVOQ           = "voq"
)

// SwitchPrefix is the scenario path SetSwitch's errors name.
const SwitchPrefix = "fabric.switch_model"

// Defaults of SwitchConfig.
const (
	// DefaultIngressBuffer is each switch ingress port's buffer, bytes (1 MiB).
	DefaultIngressBuffer = 1 << 20
	// DefaultEgressThreshold is the egress queue depth, bytes, below which an egress takes a
	// packet from the ingresses: two 4 KiB MTU packets, enough to keep the transmitter busy
	// while the next one crosses the crossbar.
	DefaultEgressThreshold = 8 << 10
)

// SwitchConfig is the scenario's fabric.switch_model: where a switch buffers packets. The
// zero value (kind output) is the output-queued fabric.
type SwitchConfig struct {
	// Kind is "output" (default; also ""), "shared_ingress" or "voq".
	Kind string `yaml:"kind"`
	// IngressBuffer is each switch ingress port's buffer, bytes; 0: DefaultIngressBuffer. A
	// packet that finds it full is dropped (queue_full, counted at the switch node).
	IngressBuffer sim.Size `yaml:"ingress_buffer"`
	// VOQBuffer bounds each virtual output queue (voq only), bytes; 0: IngressBuffer.
	VOQBuffer sim.Size `yaml:"voq_buffer"`
	// EgressThreshold: an egress takes the next packet while its queue holds fewer bytes
	// than this; 0: DefaultEgressThreshold.
	EgressThreshold sim.Size `yaml:"egress_threshold"`
}

// WithDefaults fills the zero fields.
func (c SwitchConfig) WithDefaults() SwitchConfig {
	if c.Kind == "" {
		c.Kind = SwitchOutput
	}
	if c.IngressBuffer == 0 {
		c.IngressBuffer = DefaultIngressBuffer
	}
	if c.VOQBuffer == 0 {
		c.VOQBuffer = c.IngressBuffer
	}
	if c.EgressThreshold == 0 {
		c.EgressThreshold = DefaultEgressThreshold
	}
	return c
}

// Validate checks c (before or after WithDefaults); prefix names the block in errors
// ("fabric.switch_model").
func (c SwitchConfig) Validate(prefix string) error {
	switch c.Kind {
	case "", SwitchOutput, SwitchSharedIngress, SwitchVOQ:
	default:
		return fmt.Errorf("%s.kind: %q is not a switch model (allowed: output, shared_ingress, voq)", prefix, c.Kind)
	}
	for _, f := range []struct {
		name string
		v    sim.Size
	}{{"ingress_buffer", c.IngressBuffer}, {"voq_buffer", c.VOQBuffer}, {"egress_threshold", c.EgressThreshold}} {
		if f.v < 0 {
			return fmt.Errorf("%s.%s: %d B must not be negative", prefix, f.name, int64(f.v))
		}
	}
	if c.VOQBuffer > c.IngressBuffer && c.IngressBuffer > 0 {
		return fmt.Errorf("%s.voq_buffer: %s exceeds ingress_buffer %s (allowed: at most the ingress buffer)", prefix, c.VOQBuffer, c.IngressBuffer)
	}
	if c.EgressThreshold > c.IngressBuffer && c.IngressBuffer > 0 {
		return fmt.Errorf("%s.egress_threshold: %s exceeds ingress_buffer %s (allowed: at most the ingress buffer)", prefix, c.EgressThreshold, c.IngressBuffer)
	}
	return nil
}

// voqFIFO is a FIFO of packets linked through Packet.next (free while a packet is in a switch).
type voqFIFO struct {
	head, tail *Packet
	bytes      int64
	n          int32
}

func (f *voqFIFO) push(p *Packet) {
	p.next = nil
	if f.tail != nil {
		f.tail.next = p
	} else {
		f.head = p
	}
	f.tail = p
	f.bytes += int64(p.Size)
	f.n++
}

func (f *voqFIFO) pop() *Packet {
	p := f.head
	f.head = p.next
	if f.head == nil {
		f.tail = nil
	}
	p.next = nil
	f.bytes -= int64(p.Size)
	f.n--
	return p
}

// voqState is the input-buffered switch model's state (SetSwitch).
type voqState struct {
	voq       bool // voq; false: shared_ingress
	cfg       SwitchConfig
	inBytes   []int64   // by ingress port: bytes it holds
	inDrops   []int64   // by ingress port: packets dropped there for want of buffer
	fifo      []voqFIFO // shared_ingress: by ingress port; voq: by ingress*width + egress local
	width     []int32   // by node: its port count (voq row width)
	base      []int32   // by port: the index of its node's first VOQ row (voq)
	rr        []int32   // by egress port: the next ingress local index to serve (round robin)
	waiting   []int64   // by egress port: bytes waiting for it in ingresses (for ECN marking)
	in        PortID    // the ingress of the arrival being forwarded; -1 otherwise
	moving    bool      // a packet is moving from an ingress to its egress
	serving   bool      // serve is running; kicks are queued in pending
	pending   []PortID  // egresses to serve once the current serve returns
	ecnRNG    uint64
	held      int64 // packets held in ingress buffers
	marks     int64 // packets marked CE on admission to an ingress buffer
	trims     int64 // packets trimmed on admission (voqTrim)
	heldBytes int64
}

// SetSwitch sets the switch model for every switch (after the topology is built, before the
// run). output changes nothing. The input-buffered models refuse PFC and credits (both
// account ingress buffers their own way): errors name the fields.
func (n *Network) SetSwitch(cfg SwitchConfig) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(SwitchPrefix); err != nil {
		return err
	}
	if cfg.Kind == SwitchOutput {
		return nil
	}
	if n.voq != nil {
		return fmt.Errorf("%s: already set (SetSwitch is called once, before the run)", SwitchPrefix)
	}
	if n.pfcOn {
		return fmt.Errorf("%s.kind: %s with fabric.pfc enabled is not supported (allowed with PFC: output; or set fabric.pfc: {enabled: false})", SwitchPrefix, cfg.Kind)
	}
	if n.credOn {
		return fmt.Errorf("%s.kind: %s with credit-based flow control (transport.ib.credits) is not supported (allowed with credits: output; or set transport.ib.credits: {enabled: false})", SwitchPrefix, cfg.Kind)
	}
	st := &voqState{voq: cfg.Kind == SwitchVOQ, cfg: cfg, in: -1,
		inBytes: make([]int64, len(n.Ports)), inDrops: make([]int64, len(n.Ports)), rr: make([]int32, len(n.Ports)),
		waiting: make([]int64, len(n.Ports)), ecnRNG: n.ecnSeed ^ 0x5f0e1d2c3b4a6978}
	if st.voq {
		st.width = make([]int32, len(n.Nodes))
		st.base = make([]int32, len(n.Ports))
		rows := int32(0)
		for i := range n.Nodes {
			st.width[i] = int32(len(n.Nodes[i].Ports))
		}
		for i := range n.Ports {
			st.base[i] = rows
			rows += st.width[n.Ports[i].Node]
		}
		st.fifo = make([]voqFIFO, rows)
	} else {
		st.fifo = make([]voqFIFO, len(n.Ports))
	}
	st.pending = make([]PortID, 0, 64)
	n.voq, n.voqOn = st, true
	return nil
}

// SwitchModel returns the switch model in use: output unless SetSwitch set another.
func (n *Network) SwitchModel() string {
	if n.voq == nil {
		return SwitchOutput
	}
	return n.voq.cfg.Kind
}

// voqArrive notes the ingress port of the packet arriving at a switch (onArrive's hook).
func (n *Network) voqArrive(in PortID) { n.voq.in = in }

// voqTake reports whether enqueue must hand p, bound for egress pid, to the ingress buffers:
// the model is input-buffered, the egress is a switch's and p is not already moving.
func (n *Network) voqTake(now sim.Time, pid PortID, p *Packet) bool {
	st := n.voq
	if st.moving || st.in < 0 || n.Ports[pid].nic {
		return false
	}
	in := st.in
	st.in = -1
	n.voqOffer(now, in, pid, p)
	return true
}

// voqOffer buffers p at ingress in for egress out, dropping it when the ingress buffer (or its
// VOQ) is full or the egress is down. ECN and trimming are judged on admission, against the
// egress's own curve and threshold applied to its queue plus every byte waiting for it in the
// switch's ingresses: the backlog the packet will queue behind, which an output-queued switch
// would hold in that egress queue (the egress queue itself stays near EgressThreshold, below
// where it would mark or trim). A packet the egress would trim, or one that finds its buffer
// full at an egress that trims, is cut to its header and goes straight to the egress's header
// queue (voqTrim); the egress marks again by its own depth when a packet moves, as ever.
func (n *Network) voqOffer(now sim.Time, in, out PortID, p *Packet) {
	st := n.voq
	port := &n.Ports[out]
	node := &n.Nodes[port.Node]
	if port.Down {
		n.dropLinkDown(port, p)
		return
	}
	size := int64(p.Size)
	var f *voqFIFO
	full := st.inBytes[in]+size > int64(st.cfg.IngressBuffer)
	if st.voq {
		f = &st.fifo[st.base[in]+int32(port.Local)]
		full = full || f.bytes+size > int64(st.cfg.VOQBuffer)
	} else {
		f = &st.fifo[in]
	}
	qp := port.q.p
	backlog := port.q.bytes + st.waiting[out]
	if qp.trim && p.Flags&Trimmable != 0 && p.Flags&Trimmed == 0 && (full || backlog+size > qp.trimAt) {
		n.voqTrim(now, out, port, p)
		return
	}
	if full {
		st.inDrops[in]++
		n.dropAt(node, p, DropQueueFull)
		return
	}
	if qp.ecn && p.Flags&ECT != 0 && p.Flags&CE == 0 {
		if mark(&qp.cfg.ECN, backlog, &st.ecnRNG) {
			p.Flags |= CE
			st.marks++
		}
	}
	p.voqOut = int32(out)
	f.push(p)
	st.inBytes[in] += size
	st.waiting[out] += size
	st.held++
	st.heldBytes += size
	if st.voq {
		n.voqServe(now, out)
	} else if f.head == p {
		n.voqServe(now, out)
	}
}

// voqTrim cuts p to its header at the switch whose egress out (port) trims and hands the header
// to that egress's header queue at once, past the ingress buffers (headers take the priority
// queue [NDP, Handley et al. SIGCOMM 2017; UEC §4.1]); it is counted in the egress's trims,
// as a trim at the egress queue is.
func (n *Network) voqTrim(now sim.Time, out PortID, port *Port, p *Packet) {
	st := n.voq
	port.q.aux.cold[port.q.class(p)].trims++
	p.Size = HeaderBytes
	p.Flags |= Trimmed
	if port.LastHop {
		p.Flags |= TrimmedLastHop
	}
	st.trims++
	st.moving = true
	n.enqueue(now, out, p)
	st.moving = false
}

// voqServe moves packets to egress out while it has room (startTx's hook and the arrival
// path). Moving a shared_ingress head exposes the next head, which may go to another egress:
// those egresses are served in turn from pending, so serve never recurses.
func (n *Network) voqServe(now sim.Time, out PortID) {
	st := n.voq
	if st.serving {
		st.pending = append(st.pending, out)
		return
	}
	st.serving = true
	n.voqFill(now, out)
	for len(st.pending) > 0 {
		k := len(st.pending) - 1
		e := st.pending[k]
		st.pending = st.pending[:k]
		n.voqFill(now, e)
	}
	st.serving = false
}

// voqFill moves packets into egress out, round robin over its node's ingress ports starting
// after the last one served, while its queue is below the threshold (a down egress drops them).
func (n *Network) voqFill(now sim.Time, out PortID) {
	st := n.voq
	port := &n.Ports[out]
	if st.waiting[out] == 0 {
		return
	}
	ports := n.hot[port.Node].ports
	k := int32(len(ports))
	thr := int64(st.cfg.EgressThreshold)
	for st.waiting[out] > 0 && (port.Down || port.q.bytes < thr) {
		found := false
		for j := int32(0); j < k; j++ {
			li := (st.rr[out] + j) % k
			in := ports[li]
			if in < 0 {
				continue
			}
			var f *voqFIFO
			if st.voq {
				f = &st.fifo[st.base[in]+int32(port.Local)]
			} else {
				f = &st.fifo[in]
			}
			if f.head == nil || PortID(f.head.voqOut) != out {
				continue
			}
			st.rr[out] = (li + 1) % k
			p := f.pop()
			size := int64(p.Size)
			st.inBytes[in] -= size
			st.waiting[out] -= size
			st.held--
			st.heldBytes -= size
			st.moving = true
			n.enqueue(now, out, p)
			st.moving = false
			if !st.voq && f.head != nil {
				st.pending = append(st.pending, PortID(f.head.voqOut))
			}
			found = true
			break
		}
		if !found {
			return // the waiting bytes sit behind other heads (shared_ingress)
		}
	}
}

// voqFlushed serves egress out after its queue was flushed (its link went down): the packets
// waiting for it are dropped as link_down.
func (n *Network) voqFlushed(now sim.Time, port *Port) {
	if port.Peer >= 0 {
		n.voqServe(now, n.Ports[port.Peer].Peer)
	}
}

// VOQHeld returns the packets and bytes held in switch ingress buffers (0 under output
// queueing).
func (n *Network) VOQHeld() (packets, bytes int64) {
	if n.voq == nil {
		return 0, 0
	}
	return n.voq.held, n.voq.heldBytes
}

// VOQIngressDrops returns, by port, the packets dropped at that switch ingress because its
// buffer (or, under voq, the virtual output queue the packet was bound for) was full; they are
// also in the switch node's queue_full drops. nil under output queueing.
func (n *Network) VOQIngressDrops() []int64 {
	if n.voq == nil {
		return nil
	}
	return append([]int64(nil), n.voq.inDrops...)
}

// VOQMarks returns the packets marked CE on admission to an ingress buffer (voqOffer); the
// egress queues' own marks are in the ports' counters. 0 under output queueing.
func (n *Network) VOQMarks() int64 {
	if n.voq == nil {
		return 0
	}
	return n.voq.marks
}

// VOQTrims returns the packets trimmed on admission to an ingress buffer (voqTrim; they are
// also in their egress port's Trims). 0 under output queueing.
func (n *Network) VOQTrims() int64 {
	if n.voq == nil {
		return 0
	}
	return n.voq.trims
}

// voqAudit checks the ingress buffers' books: each FIFO's list matches its counts, the
// ingresses' byte counts and the per-egress waiting bytes match the packets queued.
func (n *Network) voqAudit() error {
	st := n.voq
	var held, bytes int64
	in := make([]int64, len(st.inBytes))
	wait := make([]int64, len(st.waiting))
	for i := range st.fifo {
		f := &st.fifo[i]
		var k, b int64
		for p := f.head; p != nil; p = p.next {
			k++
			b += int64(p.Size)
			wait[p.voqOut] += int64(p.Size)
		}
		if k != int64(f.n) || b != f.bytes {
			return fmt.Errorf("fabric: ingress queue %d: list holds %d packets (%d B), counts say %d (%d B)", i, k, b, f.n, f.bytes)
		}
		owner := i
		if st.voq {
			owner = -1
			for pid := range st.base {
				if int(st.base[pid]) <= i && i < int(st.base[pid])+int(st.width[n.Ports[pid].Node]) {
					owner = pid
					break
				}
			}
		}
		if owner >= 0 {
			in[owner] += b
		}
		held += k
		bytes += b
	}
	for i := range in {
		if in[i] != st.inBytes[i] {
			return fmt.Errorf("fabric: ingress %s holds %d B, its count says %d B", n.Ports[i].Name, in[i], st.inBytes[i])
		}
		if wait[i] != st.waiting[i] {
			return fmt.Errorf("fabric: egress %s: %d B wait for it, its count says %d B", n.Ports[i].Name, wait[i], st.waiting[i])
		}
		if wait[i] > 0 && n.Ports[i].q.bytes < int64(st.cfg.EgressThreshold) && st.voq {
			return fmt.Errorf("fabric: egress %s holds %d B below the threshold while %d B wait for it", n.Ports[i].Name, n.Ports[i].q.bytes, wait[i])
		}
	}
	if held != st.held || bytes != st.heldBytes {
		return fmt.Errorf("fabric: ingress buffers hold %d packets (%d B), counts say %d (%d B)", held, bytes, st.held, st.heldBytes)
	}
	return nil
}
