package fabric

import (
	"fmt"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
)

// PFCConfig is priority flow control (IEEE 802.1Qbb) on every switch ingress port: each
// ingress counts, per lossless class, the bytes it brought in that still wait in the switch;
// when they reach XOFF it pauses that class at the upstream port (the peer's egress: a switch
// port or a host NIC), one link delay later; when they fall to XON it resumes it. A paused
// class is not served; the packet being serialised finishes.
//
// PAUSE frames carry a pause time in quanta of 512 bit times at the link's rate (IEEE
// 802.1Qbb §36.1.3.2; Quanta, default the maximum 65535: 335 us at 100 Gb/s): the upstream
// egress resumes by itself when it runs out, so the ingress sends the pause again every half
// pause time while it stays above XON, and XON is a PAUSE frame of zero quanta.
//
// Thresholds are static (XOFF, XON per ingress and class) unless Alpha > 0, which makes them
// dynamic over a shared buffer, as switch ASICs do (Choudhury & Hahne, "Dynamic queue length
// thresholds for shared-memory packet switches", IEEE/ACM ToN 1998): each ingress and class
// has Reserved bytes of its own; what it holds above that comes from the switch's
// SharedBuffer, and it pauses when that share reaches Alpha x (SharedBuffer - the switch's
// shared bytes in use), resuming two MTUs below the threshold. A busy switch so pauses its
// ingresses earlier than an idle one. Lossless classes still obey the
// egress queue limits, so a lossless fabric needs limits above what the ingresses can hold
// (the runner's RoCE profile raises them); Headroom is what an ingress must absorb after XOFF
// (what is in flight while the pause travels and takes effect): a lossless packet that would
// take its ingress past XOFF + Headroom finds no buffer and is dropped (drop reason
// pfc_headroom, PFCStats.HeadroomDrops): the configuration cannot be lossless. Network.
// PFCLosslessCheck says so before a run.
// [docs/protocols.md, "RoCEv2: PFC"; IEEE 802.1Qbb.]
type PFCConfig struct {
	Enabled bool `yaml:"enabled"`
	// Classes lists the lossless classes (default [1], the data class; class 0 carries ACKs,
	// NAKs and CNPs and is not paused, as NIC vendors put CNPs on a separate priority).
	Classes []int `yaml:"classes"`
	// XOFF is the ingress bytes per class at which a pause is sent (default 128 KiB); XON the
	// level at which it is lifted (default XOFF - 8 KiB, two MTUs).
	XOFF sim.Size `yaml:"xoff"`
	XON  sim.Size `yaml:"xon"`
	// Headroom is the room reserved above XOFF per ingress and class; 0 (default) sizes it per
	// link: 2 x link delay x rate + 2 x 4160 B [docs/protocols.md, "RoCEv2: PFC": about 2 x link
	// delay x rate + 2 MTU].
	Headroom sim.Size `yaml:"headroom"`
	// Quanta is the pause time each PAUSE frame asks for, in quanta of 512 bit times
	// (1..65535; default 65535, the IEEE 802.1Qbb maximum).
	Quanta int `yaml:"quanta"`
	// Alpha > 0 turns on dynamic thresholds (see the type's doc): an ingress class pauses
	// when its bytes above Reserved reach Alpha x the switch's free shared buffer. Typical
	// ASIC settings are 1/128 .. 8; 0 (default) keeps the static XOFF and XON (which dynamic
	// thresholds do not use: a scenario giving them with alpha is rejected).
	Alpha float64 `yaml:"alpha"`
	// SharedBuffer is each switch's shared buffer for lossless traffic in bytes, used when
	// Alpha > 0; default 32 MiB (lockstep default, the order of a 12.8-25.6 Tb/s ASIC's
	// packet buffer less its headroom pool).
	SharedBuffer sim.Size `yaml:"shared_buffer"`
	// Reserved is each ingress class's guaranteed buffer outside the shared pool, used when
	// Alpha > 0; default 2 MTU (8,320 B).
	Reserved sim.Size `yaml:"reserved"`
	// Watchdog, when > 0, is the PFC watchdog: an egress class paused that long with packets
	// waiting stops honouring pauses for the same time again (NIC and switch vendors' "PFC
	// storm" protection; losslessness is given up there to keep traffic moving). 0: off.
	Watchdog sim.Time `yaml:"watchdog"`
}

// PFC defaults.
const (
	DefaultPFCXOFF         = 128 << 10
	DefaultPFCQuanta       = 65535
	DefaultPFCSharedBuffer = 32 << 20
	pfcMTU                 = 4160
)

// WithDefaults fills the zero fields.
func (c PFCConfig) WithDefaults() PFCConfig {
	if len(c.Classes) == 0 {
		c.Classes = []int{1}
	}
	if c.XOFF == 0 {
		c.XOFF = DefaultPFCXOFF
	}
	if c.XON == 0 && c.XOFF > 2*pfcMTU {
		c.XON = c.XOFF - 2*pfcMTU
	}
	if c.Quanta == 0 {
		c.Quanta = DefaultPFCQuanta
	}
	if c.Alpha > 0 {
		if c.SharedBuffer == 0 {
			c.SharedBuffer = DefaultPFCSharedBuffer
		}
		if c.Reserved == 0 {
			c.Reserved = 2 * pfcMTU
		}
	}
	return c
}

// Validate names the first bad field under prefix (e.g. "fabric.pfc").
func (c PFCConfig) Validate(prefix string) error {
	for i, k := range c.Classes {
		if k < 0 || k >= MaxClasses {
			return fmt.Errorf("%s.classes[%d]: %d is out of range; allowed 0..%d", prefix, i, k, MaxClasses-1)
		}
	}
	if c.XOFF <= 0 || c.XOFF > MaxQueueLimit {
		return fmt.Errorf("%s.xoff: %v is out of range; allowed 1B..%v", prefix, c.XOFF, sim.Size(MaxQueueLimit))
	}
	if c.XON < 0 || c.XON >= c.XOFF {
		return fmt.Errorf("%s.xon: %v must be below xoff (%v)", prefix, c.XON, c.XOFF)
	}
	if c.Headroom < 0 {
		return fmt.Errorf("%s.headroom: %v must not be negative", prefix, c.Headroom)
	}
	if c.Quanta < 1 || c.Quanta > 65535 {
		return fmt.Errorf("%s.quanta: %d is out of range; allowed 1..65535 (units of 512 bit times)", prefix, c.Quanta)
	}
	if !(c.Alpha >= 0 && c.Alpha <= 64) {
		return fmt.Errorf("%s.alpha: %v is out of range; allowed 0 (static thresholds) .. 64", prefix, c.Alpha)
	}
	if c.Alpha > 0 && (c.SharedBuffer < 0 || c.SharedBuffer > MaxQueueLimit) {
		return fmt.Errorf("%s.shared_buffer: %v is out of range; allowed 1B..%v", prefix, c.SharedBuffer, sim.Size(MaxQueueLimit))
	}
	if c.Reserved < 0 {
		return fmt.Errorf("%s.reserved: %v must not be negative", prefix, c.Reserved)
	}
	if c.Watchdog < 0 {
		return fmt.Errorf("%s.watchdog: %v must not be negative (0: off)", prefix, c.Watchdog)
	}
	return nil
}

// PortHeadroom is the headroom above XOFF of an ingress on a link of this rate and delay:
// Headroom, or when it is 0, 2 x delay x rate + 2 MTU.
func (c PFCConfig) PortHeadroom(rate sim.Rate, delay sim.Time) sim.Size {
	if c.Headroom > 0 {
		return c.Headroom
	}
	return sim.Size(2*rate.BytesIn(delay) + 2*pfcMTU)
}

// IngressHold is what one switch ingress on a link of this rate and delay may hold of a
// lossless class outside the shared buffer: its own threshold (XOFF; with dynamic thresholds
// Reserved) plus its headroom. A switch's ingresses together may hold the sum of theirs, plus
// SharedBuffer with dynamic thresholds, before all of them are paused (PFCLosslessCheck). c
// must have its defaults (WithDefaults).
func (c PFCConfig) IngressHold(rate sim.Rate, delay sim.Time) sim.Size {
	own := c.XOFF
	if c.Alpha > 0 {
		own = c.Reserved
	}
	return own + c.PortHeadroom(rate, delay)
}

// pfcState is one port's PFC state: as a switch ingress (the bytes it brought in, by class,
// and the classes it has paused upstream) and as an egress (the time its classes spent paused).
type pfcState struct {
	in       [MaxClasses]int64
	peak     [MaxClasses]int64 // the most bytes in, by class
	xoff     uint16            // classes this ingress has paused upstream
	since    [MaxClasses]sim.Time
	paused   [MaxClasses]sim.Time // completed pauses of this egress, by class
	pauses   int64                // pauses this egress received
	xoffSent int64                // pauses this ingress sent
	headroom int64                // XOFF + headroom for this ingress
	ignore   [MaxClasses]sim.Time // watchdog: pauses of the class are ignored until then
	wdFired  int64                // watchdog triggers on this egress
	until    [MaxClasses]sim.Time // this egress's pause of the class runs out then (quanta)
	quanta   sim.Time             // the pause time this ingress's PAUSE frames ask for
	frames   int64                // PAUSE frames this ingress sent, refreshes and XONs included
	overflow int64                // lossless packets dropped here past XOFF + headroom
	xoffAt   [MaxClasses]int64    // bytes this ingress held when it paused the class
}

// PFCStats is one port's PFC record: as an egress, the pauses it received and the time its
// classes spent paused (summed over classes, the current pause included up to now); as a
// switch ingress, the pauses it sent and the most bytes it held for one class, and whether that
// went past XOFF + headroom (the configuration could not be lossless there).
type PFCStats struct {
	WatchdogFired    int64 // times the watchdog stopped honouring pauses here
	PausesReceived   int64
	PauseFramesSent  int64 // as an ingress: PAUSE frames sent (first XOFFs, refreshes, XONs)
	PausedTime       sim.Time
	PausesSent       int64
	PeakIngressBytes int64
	HeadroomExceeded bool  // the ingress had to drop lossless packets past XOFF + headroom
	HeadroomDrops    int64 // how many (counted as drops_packets.pfc_headroom)
}

// SetPFC turns PFC on for every switch ingress with cfg (defaults applied); call it after the
// fabric is built and before the run. Errors: an invalid cfg.
func (n *Network) SetPFC(cfg PFCConfig) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate("pfc"); err != nil {
		return err
	}
	if n.credOn {
		return fmt.Errorf("fabric: pfc: credit flow control is on; PFC and credits are alternatives")
	}
	n.pfcOn, n.linkFC = true, true
	n.pfcCfg = cfg
	n.pfcLossless = 0
	for _, k := range cfg.Classes {
		n.pfcLossless |= 1 << k
	}
	n.pfcShared = make([]int64, len(n.Nodes))
	for i := range n.Ports {
		p := &n.Ports[i]
		st := &pfcState{quanta: p.Rate.TxTime(int64(cfg.Quanta) * 64)} // 512 bits a quantum
		st.headroom = int64(cfg.XOFF) + int64(cfg.PortHeadroom(p.Rate, p.Delay))
		p.pfc = st
	}
	return nil
}

// PFCOn reports whether SetPFC turned PFC on.
func (n *Network) PFCOn() bool { return n.pfcOn }

// PFCStats returns port p's PFC record at now (zero when PFC is off).
func (n *Network) PFCStats(p PortID, now sim.Time) PFCStats {
	port := &n.Ports[p]
	st := port.pfc
	if st == nil {
		return PFCStats{}
	}
	s := PFCStats{PausesReceived: st.pauses, PausesSent: st.xoffSent, WatchdogFired: st.wdFired, PauseFramesSent: st.frames}
	for c := 0; c < MaxClasses; c++ {
		s.PausedTime += st.paused[c]
		if port.paused&(1<<c) != 0 && now > st.since[c] {
			s.PausedTime += now - st.since[c]
		}
		s.PeakIngressBytes = max(s.PeakIngressBytes, st.peak[c])
	}
	if st.overflow > 0 {
		s.HeadroomExceeded, s.HeadroomDrops = true, st.overflow
	}
	return s
}

// pfcClass is the class index PFC accounts p under (its queue class), or -1 when p is not
// lossless.
func (n *Network) pfcClass(p *Packet) int {
	c := int(p.Class)
	if c >= MaxClasses || n.pfcLossless&(1<<c) == 0 {
		return -1
	}
	return c
}

// pfcIn accounts p, just queued at a switch egress, to the ingress port in it arrived by,
// and pauses the class upstream at XOFF.
func (n *Network) pfcIn(now sim.Time, in PortID, p *Packet) {
	c := n.pfcClass(p)
	if c < 0 {
		return
	}
	p.ingress = int32(in) + 1
	port := &n.Ports[in]
	st := port.pfc
	old := st.in[c]
	st.in[c] += int64(p.Size)
	st.peak[c] = max(st.peak[c], st.in[c])
	if st.xoff&(1<<c) != 0 {
		n.pfcShare(port, old, st.in[c])
		return
	}
	var over bool
	if n.pfcCfg.Alpha > 0 {
		over = n.pfcShare(port, old, st.in[c]) >= n.pfcDynamic(port.Node)
	} else {
		over = st.in[c] >= int64(n.pfcCfg.XOFF)
	}
	if over {
		st.xoff |= 1 << c
		st.xoffAt[c] = st.in[c]
		st.xoffSent++
		n.pfcFrame(now, port, c, true)
		n.sim.At(now+st.quanta/2, n.kPFCTimer, int32(in), uint64(c)|1<<8)
	}
}

// pfcOverflow reports whether lossless packet p, arriving at an ingress that has paused its
// class upstream, would take it past the headroom: the bytes it held when it paused plus
// Headroom (what is in flight while the pause travels and takes effect). A switch has no
// room for it, so it is dropped (DropHeadroom): a headroom smaller than that loses packets,
// as on a real switch. An ingress that has not paused never overflows (it pauses first).
func (n *Network) pfcOverflow(in PortID, p *Packet) bool {
	c := n.pfcClass(p)
	if c < 0 {
		return false
	}
	st := n.Ports[in].pfc
	if st.xoff&(1<<c) == 0 {
		return false
	}
	if st.in[c]+int64(p.Size) > st.xoffAt[c]+st.headroom-int64(n.pfcCfg.XOFF) {
		st.overflow++
		return true
	}
	return false
}

// pfcShare moves ingress port's share of its switch's shared buffer from bytes held old to
// new and returns its new share (bytes above Reserved); 0 under static thresholds.
func (n *Network) pfcShare(port *Port, old, new int64) int64 {
	if n.pfcCfg.Alpha == 0 {
		return 0
	}
	res := int64(n.pfcCfg.Reserved)
	a, b := max(old-res, 0), max(new-res, 0)
	n.pfcShared[port.Node] += b - a
	return b
}

// pfcDynamic is the dynamic XOFF threshold at switch node: Alpha x its free shared buffer.
func (n *Network) pfcDynamic(node NodeID) int64 {
	free := int64(n.pfcCfg.SharedBuffer) - n.pfcShared[node]
	return int64(n.pfcCfg.Alpha * float64(max(free, 0)))
}

// pfcFrame sends a PAUSE frame for class c from ingress port to its upstream egress, arriving
// one link delay later: with the configured quanta (pause) or zero quanta (XON).
func (n *Network) pfcFrame(now sim.Time, port *Port, c int, pause bool) {
	port.pfc.frames++
	arg := uint64(c)
	if pause {
		arg |= 1 << 8
	}
	n.sim.At(now+port.Delay, n.kPFC, int32(port.Peer), arg)
}

// pfcOut releases p, leaving a switch egress, from its ingress's count, and resumes the class
// upstream at XON.
func (n *Network) pfcOut(now sim.Time, p *Packet) {
	if p.ingress == 0 {
		return
	}
	in := PortID(p.ingress - 1)
	p.ingress = 0
	c := n.pfcClass(p)
	if c < 0 {
		return
	}
	port := &n.Ports[in]
	st := port.pfc
	old := st.in[c]
	st.in[c] -= int64(p.Size)
	share := n.pfcShare(port, old, st.in[c])
	if st.xoff&(1<<c) == 0 {
		return
	}
	var under bool
	if n.pfcCfg.Alpha > 0 {
		under = share <= max(n.pfcDynamic(port.Node)-2*pfcMTU, 0)
	} else {
		under = st.in[c] <= int64(n.pfcCfg.XON)
	}
	if under {
		st.xoff &^= 1 << c
		n.pfcFrame(now, port, c, false)
	}
}

// onPFCTimer: arg bit 8 set, ingress port obj refreshes its pause of class arg&0xff if it
// still holds it (every half pause time); clear, the pause of egress port obj runs out if no
// later frame extended it.
func (n *Network) onPFCTimer(now sim.Time, obj int32, arg uint64) {
	port := &n.Ports[obj]
	st := port.pfc
	c := int(arg & 0xff)
	if arg&(1<<8) != 0 {
		if st.xoff&(1<<c) != 0 {
			n.pfcFrame(now, port, c, true)
			n.sim.At(now+st.quanta/2, n.kPFCTimer, obj, arg)
		}
		return
	}
	if port.paused&(1<<c) != 0 && now >= st.until[c] {
		n.resume(now, PortID(obj), port, c)
	}
}

// onPFC: a pause (arg bit 8) or resume for class arg&0xff reaches egress port obj.
func (n *Network) onPFC(now sim.Time, obj int32, arg uint64) {
	pid := PortID(obj)
	port := &n.Ports[pid]
	c := int(arg & 0xff)
	st := port.pfc
	if arg&(1<<8) != 0 {
		if now < st.ignore[c] {
			return // the watchdog is ignoring pauses of this class here
		}
		if port.paused&(1<<c) == 0 {
			port.paused |= 1 << c
			st.since[c] = now
			st.pauses++
		}
		// The pause time is the sender's quanta at this link's rate (both ends share it).
		st.until[c] = now + st.quanta
		n.sim.At(st.until[c], n.kPFCTimer, obj, uint64(c))
		return
	}
	if port.paused&(1<<c) == 0 {
		return
	}
	n.resume(now, pid, port, c)
}

// resume lifts egress port's pause of class c and restarts its transmitter.
func (n *Network) resume(now sim.Time, pid PortID, port *Port, c int) {
	port.paused &^= 1 << c
	port.pfc.paused[c] += now - port.pfc.since[c]
	if now >= port.txEnd && !port.Down {
		n.startTx(now, pid, port)
	}
}

// PFCLosslessCheck reports, before a run, why the PFC configuration cannot keep the lossless
// classes lossless, one line per problem (at most max; nil when there is none):
//   - a switch ingress whose headroom is below what arrives while its pause travels and takes
//     effect, 2 x link delay x rate + 2 MTU [docs/protocols.md, "RoCEv2: PFC": headroom];
//   - a switch egress whose class queue limit is below what the switch's ingresses may hold
//     for it before they all pause (ingress ports x (XOFF + headroom); with dynamic
//     thresholds, the shared buffer plus every ingress's reserve and headroom), so drop-tail
//     can act before PFC does.
func (n *Network) PFCLosslessCheck(max int) []string {
	if !n.pfcOn {
		return nil
	}
	var out []string
	add := func(format string, args ...any) bool {
		if len(out) < max {
			out = append(out, fmt.Sprintf(format, args...))
		}
		return len(out) < max
	}
	for i := range n.Ports {
		p := &n.Ports[i]
		if n.Nodes[p.Node].Kind != Switch || p.pfc == nil {
			continue
		}
		need := 2*p.Rate.BytesIn(p.Delay) + 2*pfcMTU
		if have := p.pfc.headroom - int64(n.pfcCfg.XOFF); have < need && !add("ingress %s: headroom %v is below the %v that arrive while a pause travels (2 x delay x rate + 2 MTU)", p.Name, sim.Size(have), sim.Size(need)) {
			return out
		}
	}
	for id := range n.Nodes {
		nd := &n.Nodes[id]
		if nd.Kind != Switch {
			continue
		}
		hold := n.pfcSwitchHold(nd) // what the switch's ingresses may hold before all are paused
		for _, pid := range nd.Ports {
			if pid < 0 {
				continue
			}
			if lim := int64(n.Ports[pid].q.p.limit); lim < hold {
				if !add("egress %s: queue limit %v is below the %v the switch's ingresses may hold for it before all pause; drop-tail can act first", n.Ports[pid].Name, sim.Size(lim), sim.Size(hold)) {
					return out
				}
				break // one line per switch
			}
		}
	}
	return out
}

// PFCCheck runs the PFC watchdog and the deadlock check at now (the runner calls it
// periodically while PFC is on). Watchdog: an egress class paused longer than the configured
// time with packets waiting resumes and ignores pauses for as long again. Deadlock: the
// egresses toward another switch that are paused with lossless packets waiting form a
// wait-for graph, e -> f when f is at the switch e leads to and its paused queue holds
// packets that came in through the ingress whose pause blocks e (so f must send before e
// can); a cycle in it can never clear by itself (a cyclic buffer dependency, Hu et al.,
// "Deadlocks in datacenter networks: why do they form, and how to avoid them", HotNets 2016),
// and PFCCheck returns it: the switches and ports in order. Two switches pausing each other
// over one link without such a dependency (traffic up one way, down the other) is not a
// cycle. "" when there is none.
func (n *Network) PFCCheck(now sim.Time) string {
	if !n.pfcOn {
		return ""
	}
	wd := n.pfcCfg.Watchdog
	// The blocked egresses: paused with lossless packets waiting, toward a switch.
	var blocked []PortID
	for i := range n.Ports {
		p := &n.Ports[i]
		if p.paused == 0 || p.pfc == nil {
			continue
		}
		b := p.q.busy & p.paused & (1<<p.q.p.classes - 1)
		if b == 0 {
			continue
		}
		if wd > 0 {
			for c := 0; c < MaxClasses; c++ {
				if b&(1<<c) != 0 && now-p.pfc.since[c] >= wd {
					p.paused &^= 1 << c
					p.pfc.paused[c] += now - p.pfc.since[c]
					p.pfc.ignore[c] = now + wd
					p.pfc.wdFired++
					if now >= p.txEnd && !p.Down {
						n.startTx(now, PortID(i), p)
					}
				}
			}
			continue
		}
		if n.Nodes[p.Node].Kind == Switch && !p.peerHost {
			blocked = append(blocked, PortID(i))
		}
	}
	if len(blocked) == 0 {
		return ""
	}
	// Wait-for edges between blocked egresses: e -> f when f is at the switch e leads to and
	// holds, in a paused class, packets that arrived through e's peer port (the ingress whose
	// pause blocks e). Such an f must send before e can: a cycle of these never clears.
	byNode := make(map[NodeID][]PortID)
	for _, e := range blocked {
		byNode[n.Ports[e].Node] = append(byNode[n.Ports[e].Node], e)
	}
	from := make(map[PortID][]PortID, len(blocked)) // f -> the ingresses its paused queues hold packets from
	for _, f := range blocked {
		from[f] = n.pausedIngresses(f)
	}
	next := func(e PortID) []PortID {
		in := n.Ports[e].Peer
		var out []PortID
		for _, f := range byNode[n.Ports[e].peerNode] {
			for _, g := range from[f] {
				if g == in {
					out = append(out, f)
					break
				}
			}
		}
		return out
	}
	color := make(map[PortID]uint8, len(blocked)) // 0 new, 1 on the stack, 2 done
	var stack, found []PortID
	var visit func(e PortID) bool
	visit = func(e PortID) bool {
		color[e] = 1
		stack = append(stack, e)
		for _, f := range next(e) {
			switch color[f] {
			case 1: // back edge: the cycle is the stack from f
				for k, q := range stack {
					if q == f {
						found = append([]PortID(nil), stack[k:]...)
						return true
					}
				}
			case 0:
				if visit(f) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[e] = 2
		return false
	}
	for _, e := range blocked { // port order: stable
		if color[e] == 0 && visit(e) {
			var b strings.Builder
			for k, pid := range found {
				if k > 0 {
					b.WriteString(" -> ")
				}
				fmt.Fprintf(&b, "%s (egress %s paused)", n.Nodes[n.Ports[pid].Node].Name, n.Ports[pid].Name)
			}
			return b.String()
		}
	}
	return ""
}

// pausedIngresses lists the ingress ports that the lossless packets waiting in egress pid's
// paused classes arrived through (each once, in queue order).
func (n *Network) pausedIngresses(pid PortID) []PortID {
	p := &n.Ports[pid]
	lines := n.lineBlock(pid)
	var out []PortID
	for c := 0; c < int(p.q.p.classes); c++ {
		if p.paused&(1<<c) == 0 {
			continue
		}
		for k := lines[c].head; k >= 0; k = p.q.s[k].next {
			in := p.q.s[k].p.ingress - 1
			if in < 0 {
				continue
			}
			seen := false
			for _, g := range out {
				if g == PortID(in) {
					seen = true
					break
				}
			}
			if !seen {
				out = append(out, PortID(in))
			}
		}
	}
	return out
}

// PFCPausePoint is the lossless-class bytes one switch ingress holds when it pauses
// upstream while it alone uses its switch's buffer: XOFF under static thresholds; with
// dynamic ones Reserved plus the share s where s = Alpha x (SharedBuffer - s), that is
// Alpha x SharedBuffer / (1 + Alpha). An egress queue fed by that one ingress reaches this
// depth when the pause goes out, so ECN marking (DCQCN) acts before PFC only if Kmin is below
// it. 0 when PFC is off.
func (n *Network) PFCPausePoint() sim.Size {
	if !n.pfcOn {
		return 0
	}
	c := n.pfcCfg
	if c.Alpha == 0 {
		return c.XOFF
	}
	return c.Reserved + sim.Size(c.Alpha*float64(c.SharedBuffer)/(1+c.Alpha))
}

// ECNAfterPFC lists (at most max lines) the switch egress ports whose ECN Kmin is at or above
// PFCPausePoint: there a congested ingress pauses upstream before the egress queue marks a
// single packet, so DCQCN cannot act before PFC. One line per distinct (Kmin, rate) pair,
// naming the first such port. Nil when PFC or ECN is off.
func (n *Network) ECNAfterPFC(max int) []string {
	pause := n.PFCPausePoint()
	if pause == 0 {
		return nil
	}
	var out []string
	seen := map[[2]int64]bool{}
	for i := range n.Ports {
		p := &n.Ports[i]
		if n.Nodes[p.Node].Kind != Switch || !p.q.p.ecn {
			continue
		}
		kmin := p.q.p.cfg.ECN.Kmin
		key := [2]int64{int64(kmin), int64(p.Rate)}
		if kmin < pause || seen[key] {
			continue
		}
		seen[key] = true
		if len(out) == max {
			break
		}
		out = append(out, fmt.Sprintf("egress %s (%v): ECN kmin %v is at or above the PFC pause point %v of one congested ingress; PFC pauses before ECN marks, so DCQCN cannot act first", p.Name, p.Rate, kmin, pause))
	}
	return out
}

// pfcSwitchHold is what switch nd's ingresses may hold, in bytes, before all of them pause:
// each ingress's XOFF (its reserve, with dynamic thresholds) and headroom, plus the shared
// buffer with dynamic thresholds.
func (n *Network) pfcSwitchHold(nd *Node) int64 {
	xoff := int64(n.pfcCfg.XOFF)
	if n.pfcCfg.Alpha > 0 {
		xoff = int64(n.pfcCfg.Reserved)
	}
	var hold int64
	for _, pid := range nd.Ports {
		if pid >= 0 {
			hold += xoff + n.Ports[pid].pfc.headroom - int64(n.pfcCfg.XOFF)
		}
	}
	if n.pfcCfg.Alpha > 0 {
		hold += int64(n.pfcCfg.SharedBuffer)
	}
	return hold
}

// PFCWorstDrain returns the longest time a switch egress takes to send what its switch's
// ingresses may hold for it before all of them pause (ingress ports x (XOFF + headroom), with
// dynamic thresholds the shared buffer plus every ingress's reserve and headroom; at most the
// egress queue limit) at its line rate, for egresses toward hosts (last hop) and toward
// switches, with the port names: what a packet queued behind PFC pauses may wait per hop.
// Zeros when PFC is off.
func (n *Network) PFCWorstDrain() (toHost sim.Time, hostPort string, toSwitch sim.Time, switchPort string) {
	if !n.pfcOn {
		return
	}
	for id := range n.Nodes {
		nd := &n.Nodes[id]
		if nd.Kind != Switch {
			continue
		}
		hold := n.pfcSwitchHold(nd)
		for _, pid := range nd.Ports {
			if pid < 0 {
				continue
			}
			p := &n.Ports[pid]
			if p.Rate <= 0 {
				continue
			}
			t := p.Rate.TxTime(min(hold, p.q.p.limit))
			if p.peerHost {
				if t > toHost {
					toHost, hostPort = t, p.Name
				}
			} else if t > toSwitch {
				toSwitch, switchPort = t, p.Name
			}
		}
	}
	return
}
