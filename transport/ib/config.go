// Package ib is InfiniBand's reliable-connection transport: its configuration, its wire
// sizes and its defaults (NCCL's IB timeouts). The RC engine itself (PSN, go-back-N with
// sequence-error NAKs, the local ACK timeout and retry count [IBTA vol 1 §9.7]) is the one
// RoCEv2 uses, transport/roce: RoCEv2 is the IBTA transport layer (BTH, AETH) carried over
// UDP/IP [IBTA vol 1 Annex A17], so the two differ below the transport, in the link and
// network headers, the link's flow control (credits, fabric/credit.go, instead of PFC) and
// congestion control (IB CC as an option, cc.go; DCQCN is RoCE's). Config maps onto a roce.Config with
// InfiniBand's header sizes and DCQCN off (RC).
package ib

import (
	"fmt"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// Wire sizes [IBTA vol 1 §5.2, §7.7-7.8, §9.2]: a local route header (LRH, 8 bytes), the base
// transport header (BTH, 12), the invariant CRC (ICRC, 4) and the variant CRC (VCRC, 2);
// intra-subnet packets carry no GRH.
const (
	LRHBytes  = 8
	BTHBytes  = 12
	ICRCBytes = 4
	VCRCBytes = 2
	// HeaderBytes is what every IB packet pays on the wire within a subnet: 26 bytes.
	HeaderBytes = LRHBytes + BTHBytes + ICRCBytes + VCRCBytes
)

// NCCL's InfiniBand defaults [NCCL environment variables: NCCL_IB_TIMEOUT default 18 (since
// NCCL 2.14; 4.096 us x 2^18, about 1.07 s), NCCL_IB_RETRY_CNT default 7].
const (
	DefaultTimeoutExponent = 18
	DefaultRetryCount      = 7
)

// Config is transport.ib: transport: {kind: ib, ib: {...}}.
type Config struct {
	// QPsPerPeer is how many QPs each (source, destination) pair opens per plane, each with
	// its own fixed ECMP entropy (static routing: a destination-based LFT is one path per
	// QP); default 1.
	QPsPerPeer int `yaml:"qps_per_peer"`
	// PayloadBytes is the path MTU: 256..4096 (IBTA), default 4096.
	PayloadBytes int `yaml:"payload_bytes"`
	// TimeoutExponent t sets the local ACK timeout 4.096 us x 2^t [IBTA vol 1 §9.7.6.1.3];
	// left out (nil): DefaultTimeoutExponent (NCCL_IB_TIMEOUT 18), which WithDefaults
	// writes; allowed 1..31. A written 0, IBTA's infinite timeout, is an error (Validate): a
	// lost packet would hang the QP.
	TimeoutExponent *int `yaml:"timeout"`
	// RetryCount is how many times a QP retries before it errors, 1..7; default 7
	// (NCCL_IB_RETRY_CNT).
	RetryCount int `yaml:"retry_count"`
	// Credits is the fabric's link-level flow control under this transport; enabled unless
	// written false (credits: {enabled: false} runs IB links lossy, for comparison).
	Credits Credits `yaml:"credits"`
	// OutOfOrder is the responder's out-of-order placement (ConnectX-style; roce.Config.
	// WithReorder). Default: on when fabric.adaptive_routing is, off otherwise (static
	// routing keeps a QP's packets in order, and results stay as they were).
	OutOfOrder OutOfOrder `yaml:"out_of_order"`
	// SL is the service level of every QP [IBTA vol 1 §7.6.5]: 0..14, default 0 (15 is the
	// management SL, VL15, for subnet management packets only). Its VL is SLToVL's.
	SL int `yaml:"sl"`
	// TrafficSL is the service level of traffic group i's transfers (traffic[i]), 0..14; a
	// group past its end takes SL. Collectives and training use SL.
	TrafficSL []int `yaml:"traffic_sl,omitempty"`
	// SLToVL is the SL-to-VL mapping table [IBTA vol 1 §7.6.6, SLtoVLMappingTable]: entry n
	// is the VL of SL n's data packets, 0..fabric.MaxClasses-1 and below the switch queues'
	// classes (each VL is a queue class with its own credits); at most 15 entries (SL 0..14).
	// Left out, or an SL past its end: DefaultVL. One table for every port (a switch's table is
	// per input and output port in IBTA; lockstep's is fabric-wide). ACKs and NAKs travel on
	// VL 0 whatever the SL (lockstep's control lane).
	SLToVL []int `yaml:"sl_to_vl,omitempty"`
	// CC is IB congestion control [IBTA vol 1 Annex A10] (cc.go): FECN marking at the
	// switches, BECNs back from the destination, CCT-indexed injection rate delay at the
	// source. Absent or enabled false: off (InfiniBand's usual fabric setting).
	CC *CC `yaml:"cc,omitempty"`
}

// OutOfOrder is transport.ib.out_of_order [NVIDIA DOCA, Out-of-order Data Placement: RC
// packets that took different paths are placed into host memory as they arrive instead of
// being dropped and retransmitted].
type OutOfOrder struct {
	// Enabled: nil (written scenarios leave it out) follows fabric.adaptive_routing.enabled;
	// the written scenario (lockstep validate, scenario.yaml) says so in a comment with the
	// value in force (the follows tag, scenario.Encode).
	Enabled *bool `yaml:"enabled,omitempty" follows:"fabric.adaptive_routing.enabled"`
	// Window is how many PSNs above the expected one are accepted, packets; default
	// DefaultReorderWindow; rounded up to a power of two; allowed 1..65536.
	Window int `yaml:"window"`
	// Hold is how long a hole may stay open before the responder NAKs it (a real loss rather
	// than reordering); allowed 1us..1s. Left out (0): automatic, AutoReorderHold for the
	// topology (the resolved scenario carries the value in force), grown with the
	// responder's fan-in by HoldPerFanIn; a written value is used as written.
	Hold sim.Time `yaml:"hold"`
	// HoldPerFanIn is what the hold grows by for each source host beyond the first with data
	// outstanding into the responder's NIC port (a QP of its with a transfer open or packets
	// held behind a hole, counted at the NIC: roce.FanIn): hold + (n-1) x hold_per_fan_in, at most
	// MaxReorderHold. A credit buffer ahead of an n-to-1 bottleneck drains at about C/n, so
	// reordering under fan-in lasts about n times longer. Allowed 0..1s. Left out with hold
	// left out: automatic, AutoReorderFanIn (one credit buffer drain per switch hop); left
	// out with hold written: 0 (the written hold, fixed). docs/protocols.md, "Automatic
	// out-of-order hold".
	HoldPerFanIn sim.Time `yaml:"hold_per_fan_in"`
	// FanInMax is the most sources the hold grows for: hold + (min(n, fan_in_max)-1) x
	// hold_per_fan_in. One switch output arbitrates among at most its other ports' input
	// buffers, so a credit buffer ahead of it drains at no less than about C/(ports-1).
	// Allowed 0..65536; left out (0): automatic, the most ports of a switch of the topology
	// less one (15 at radix 16); with no topology known, no cap.
	FanInMax int `yaml:"fan_in_max"`
}

// Out-of-order placement defaults: a window of 1,024 packets (4 MiB at a 4 KiB MTU, well over
// a 100G fat tree's BDP). DefaultReorderHold, 100 us, is the hole hold when no automatic one
// can be computed (credits off: no buffer bounds the queues; no topology known). Lockstep
// choices: NVIDIA publishes neither figure.
const (
	DefaultReorderWindow = 1024
	DefaultReorderHold   = 100 * sim.Microsecond
)

// MaxFanIn bounds transport.ib.out_of_order.fan_in_max, sources.
const MaxFanIn = 1 << 16

// Bounds of the out-of-order hold, automatic or written: 1 us .. 1 s.
const (
	MinReorderHold = sim.Microsecond
	MaxReorderHold = sim.Second
)

// AutoReorderHold is the automatic out-of-order hold: the longest reordering adaptive
// routing can cause between two packets of one QP, so that a hole still open after it is a
// loss. Two packets of a QP differ in delay by at most the queueing one of them met that the
// other did not; under credits a switch egress holds at most what the next hop's credits
// let through, a receiver's buffer per VL, which drains at the egress rate in
// buffer_per_vl / rate (fabric.CreditConfig.BufferFor: scaled by rate under the default
// buffers). So the hold is baseRTT (the path's round trip: the NAK's way back and the
// serialisations) plus one buffer drain per switch hop of the longest minimal path,
// egress[i] being hop i's egress rate (the last the host link). Bounded to
// MinReorderHold..MaxReorderHold. With credits off no buffer bounds a queue, and it is
// DefaultReorderHold. docs/protocols.md, "Automatic out-of-order hold", has the measurements.
func (c Config) AutoReorderHold(baseRTT sim.Time, egress []sim.Rate) sim.Time {
	cr := c.Credits.Fabric()
	if !cr.Enabled || len(egress) == 0 {
		return DefaultReorderHold
	}
	return min(max(baseRTT+c.drainTime(egress), MinReorderHold), MaxReorderHold)
}

// AutoReorderFanIn is the automatic out_of_order.hold_per_fan_in: the drain term of
// AutoReorderHold (one credit buffer per switch hop at its egress rate), added once more for
// each further source with data outstanding into the responder's NIC port. Under n-to-1 fan-in a
// credit-blocked queue ahead of the bottleneck drains at about C/n [the congestion tree of
// Pfister and Norton, "Hot Spot Contention and Combining in Multistage Interconnection
// Networks", ICPP 1985; Gran et al., "First experiences with congestion control in
// InfiniBand hardware", IPDPS 2010: a hot spot's tree spreads back through credit-blocked
// switches], so one buffer there takes n drains at link rate. 0 with credits off (no buffer
// bounds a queue: the fixed DefaultReorderHold). Bounded to MaxReorderHold.
func (c Config) AutoReorderFanIn(egress []sim.Rate) sim.Time {
	if !c.Credits.Fabric().Enabled || len(egress) == 0 {
		return 0
	}
	return min(c.drainTime(egress), MaxReorderHold)
}

// drainTime is one credit buffer per VL drained at each egress rate of egress, summed.
func (c Config) drainTime(egress []sim.Rate) sim.Time {
	cr := c.Credits.Fabric()
	var h sim.Time
	for _, r := range egress {
		if r > 0 {
			h += r.TxTime(int64(cr.BufferFor(cr.BufferPerVL, r)))
		}
	}
	return h
}

// Reorder returns the RC engine's configuration for a fabric with adaptive routing on or off:
// RC() with out-of-order placement when OutOfOrder is on.
func (c Config) Reorder(adaptive bool) roce.Config {
	rc := c.RC()
	if on := c.OutOfOrder.Enabled; on == nil && adaptive || on != nil && *on {
		w, h := c.OutOfOrder.Window, c.OutOfOrder.Hold
		if w == 0 {
			w = DefaultReorderWindow
		}
		if h == 0 {
			h = DefaultReorderHold // not resolved: the endpoint fills the automatic one first
		}
		rc = rc.WithReorder(w, h).WithReorderFanIn(c.OutOfOrder.HoldPerFanIn, c.OutOfOrder.FanInMax)
	}
	return rc
}

// Credits is transport.ib.credits: fabric.CreditConfig with enabled defaulting to true.
type Credits struct {
	Enabled         *bool               `yaml:"enabled"`
	BufferPerVL     sim.Size            `yaml:"buffer_per_vl"`
	HostBufferPerVL sim.Size            `yaml:"host_buffer_per_vl"`
	High            []fabric.VLArbEntry `yaml:"high"`
	Low             []fabric.VLArbEntry `yaml:"low"`
	HighLimit       int                 `yaml:"high_limit"`
	// ScaleByRate gives a port faster than 400 Gb/s buffer_per_vl (host_buffer_per_vl) x
	// ceil(rate / 400 Gb/s), so its buffer covers the same credit round trip
	// (fabric.CreditConfig.BufferFor). Left out: true when the scenario gives neither
	// buffer (the lockstep default buffers scale), false when it gives one (a given size is
	// used as written on every port). WithDefaults writes the value in force, so the
	// resolved scenario runs alike.
	ScaleByRate *bool `yaml:"scale_by_rate,omitempty"`
}

// scaleByRate reports the buffer scaling in force (ScaleByRate, or its default).
func (c Credits) scaleByRate() bool {
	if c.ScaleByRate != nil {
		return *c.ScaleByRate
	}
	return c.BufferPerVL == 0 && c.HostBufferPerVL == 0
}

// Fabric returns the fabric's credit configuration (defaults filled). With neither buffer
// given the default buffers scale with each port's rate beyond 400 Gb/s
// (fabric.CreditConfig.BufferFor), and so does a given one with scale_by_rate true.
func (c Credits) Fabric() fabric.CreditConfig {
	return fabric.CreditConfig{Enabled: c.Enabled == nil || *c.Enabled, BufferPerVL: c.BufferPerVL,
		HostBufferPerVL: c.HostBufferPerVL, High: c.High, Low: c.Low, HighLimit: c.HighLimit,
		ScaleByRate: c.scaleByRate()}.WithDefaults()
}

// WithDefaults fills the zero fields.
func (c Config) WithDefaults() Config {
	if c.QPsPerPeer == 0 {
		c.QPsPerPeer = 1
	}
	if c.PayloadBytes == 0 {
		c.PayloadBytes = 4096
	}
	if c.TimeoutExponent == nil {
		t := DefaultTimeoutExponent
		c.TimeoutExponent = &t
	}
	if c.RetryCount == 0 {
		c.RetryCount = DefaultRetryCount
	}
	if c.OutOfOrder.Window == 0 {
		c.OutOfOrder.Window = DefaultReorderWindow
	}
	if c.Credits.Enabled == nil {
		on := true
		c.Credits.Enabled = &on
	}
	// The buffers in force, so the resolved scenario (lockstep validate) shows them rather
	// than 0B, and the scaling decided before they are filled.
	if c.Credits.ScaleByRate == nil {
		on := c.Credits.scaleByRate()
		c.Credits.ScaleByRate = &on
	}
	if c.Credits.BufferPerVL == 0 {
		c.Credits.BufferPerVL = fabric.DefaultCreditBuffer
	}
	if c.Credits.HostBufferPerVL == 0 {
		c.Credits.HostBufferPerVL = c.Credits.BufferPerVL
	}
	if c.CC != nil {
		cc := c.CC.WithDefaults()
		c.CC = &cc
	}
	return c
}

// MaxSL is the highest service level a QP may use: SL 15 is reserved for subnet management
// packets, which travel on VL15, the management VL [IBTA vol 1 §7.6.5, §7.6.6].
const MaxSL = 14

// DefaultVL is the VL of sl's data packets when SLToVL does not give one, on a fabric whose
// switch queues have classes classes (VLs 0..classes-1): SL n -> VL 1 + n mod (classes - 1),
// the data VLs taken in turn; VL 0 is lockstep's control lane (ACKs and NAKs, served first
// under strict priority), so with the default 2 classes every SL's data is on VL 1, as it
// always was. With one class everything is on VL 0. Lockstep's choice: IBTA leaves the
// table to the subnet manager, and OpenSM's default QoS maps SL n to VL n mod the operational
// data VLs [OpenSM, "QoS" (qos_sl2vl)]; lockstep keeps its VL 0 for control.
func DefaultVL(sl, classes int) int {
	if classes <= 1 {
		return 0
	}
	return 1 + sl%(classes-1)
}

// VL returns the VL of sl's data packets on switch queues of classes classes: SLToVL[sl],
// or DefaultVL.
func (c Config) VL(sl, classes int) int {
	if sl >= 0 && sl < len(c.SLToVL) {
		return c.SLToVL[sl]
	}
	return DefaultVL(sl, classes)
}

// GroupSL returns the service level of traffic group g's transfers: TrafficSL[g], or SL.
func (c Config) GroupSL(g int) int {
	if g >= 0 && g < len(c.TrafficSL) {
		return c.TrafficSL[g]
	}
	return c.SL
}

// VLsInUse returns the VLs the block's packets use on switch queues of classes classes,
// ascending: VL 0 (ACKs and NAKs) and the data VL of SL and of every TrafficSL.
func (c Config) VLsInUse(classes int) []int {
	var on [fabric.MaxClasses]bool
	on[0] = true
	for _, sl := range append([]int{c.SL}, c.TrafficSL...) {
		if v := c.VL(sl, classes); v >= 0 && v < fabric.MaxClasses {
			on[v] = true
		}
	}
	var out []int
	for v, ok := range on {
		if ok {
			out = append(out, v)
		}
	}
	return out
}

// validateSL checks SL, TrafficSL and SLToVL's ranges (prefix "transport.ib"); the VLs
// against the queues' classes and the arbitration tables are CheckVLs'.
func (c Config) validateSL(prefix string) error {
	sl := func(field string, v int) error {
		switch {
		case v == 15:
			return fmt.Errorf("%s: 15 is the management SL (VL15, subnet management packets only) [IBTA vol 1 §7.6.5]; allowed 0..%d", field, MaxSL)
		case v < 0 || v > MaxSL:
			return fmt.Errorf("%s: %d is out of range; allowed 0..%d (15 is the management SL)", field, v, MaxSL)
		}
		return nil
	}
	if err := sl(prefix+".sl", c.SL); err != nil {
		return err
	}
	for i, v := range c.TrafficSL {
		if err := sl(fmt.Sprintf("%s.traffic_sl[%d]", prefix, i), v); err != nil {
			return err
		}
	}
	if len(c.SLToVL) > MaxSL+1 {
		return fmt.Errorf("%s.sl_to_vl: %d entries; allowed at most %d (SL 0..%d; SL 15 is the management SL, always VL15)", prefix, len(c.SLToVL), MaxSL+1, MaxSL)
	}
	for i, v := range c.SLToVL {
		if v < 0 || v >= fabric.MaxClasses {
			return fmt.Errorf("%s.sl_to_vl[%d]: VL %d is out of range; allowed 0..%d (a queue class; VL15 is the management VL)", prefix, i, v, fabric.MaxClasses-1)
		}
	}
	return nil
}

// CheckVLs checks the VLs this block uses against ports whose queues have the given classes
// (the switch, last-hop and NIC queues; a class at or above a port's count is queued in its
// last one): an SL mapped to a VL the switch queues do not have (classes[0]) is refused, and
// under VL arbitration tables (credits.high, low) every VL in use must have an entry of
// weight 1..255 in one of them, since the arbiter serves no other VL and its packets would
// wait forever [IBTA vol 1 §7.6.9]; so must escape, the escape VL of adaptive routing's
// detours (fabric.Network.AdaptiveEscapeVL; -1: none). Errors name the field, the value and
// what is allowed.
func (c Config) CheckVLs(prefix string, escape int, classes ...int) error {
	if len(classes) == 0 || classes[0] < 1 {
		return nil
	}
	sw := classes[0]
	for sl, v := range c.SLToVL {
		if v >= sw {
			return fmt.Errorf("%s.sl_to_vl[%d]: VL %d, but the switch queues have %d classes (VL 0..%d); allowed 0..%d, or raise fabric.switch_queue.classes (and fabric.nic_queue.classes)", prefix, sl, v, sw, sw-1, sw-1)
		}
	}
	cr := c.Credits
	if cr.Enabled != nil && !*cr.Enabled || len(cr.High)+len(cr.Low) == 0 {
		return nil
	}
	var weight [fabric.MaxClasses]int
	for _, e := range append(append([]fabric.VLArbEntry(nil), cr.High...), cr.Low...) {
		if e.VL >= 0 && e.VL < fabric.MaxClasses {
			weight[e.VL] += e.Weight
		}
	}
	for _, n := range classes {
		if n < 1 {
			continue
		}
		for _, u := range c.VLsInUse(sw) {
			v := min(u, n-1) // where a port of n classes queues it
			if weight[v] > 0 {
				continue
			}
			what := "data"
			if v == 0 {
				what = "ACKs and NAKs (and data mapped there)"
			}
			where := ""
			if v != u {
				where = fmt.Sprintf(" (VL %d's packets, on ports whose queues have %d classes: give fabric.switch_queue, last_hop_queue and nic_queue the same classes)", u, n)
			}
			return fmt.Errorf("%s.credits.high, low: VL %d, which carries %s%s, has no entry of weight > 0 (high %v, low %v): the VL arbiter would never send on it and its QPs would stall; allowed: tables giving every VL in use (%v) a weight 1..255 [IBTA vol 1 §7.6.9], or leave high and low out for strict priority", prefix, v, what, where, cr.High, cr.Low, c.VLsInUse(sw))
		}
	}
	if escape >= 0 && escape < fabric.MaxClasses && weight[escape] == 0 {
		return fmt.Errorf("%s.credits.high, low: VL %d, the escape VL of adaptive routing's detours (fabric.adaptive_routing.detour), has no entry of weight > 0 (high %v, low %v): a detoured packet would never leave its switch; allowed: give VL %d a weight 1..255 [IBTA vol 1 §7.6.9], set fabric.adaptive_routing.detour: false, or leave high and low out for strict priority", prefix, escape, cr.High, cr.Low, escape)
	}
	return nil
}

// CCOn reports whether IB congestion control is on.
func (c Config) CCOn() bool { return c.CC != nil && c.CC.Enabled }

// Validate names the first bad field under prefix ("transport.ib").
func (c Config) Validate(prefix string) error {
	switch t := c.timeout(); {
	case t == 0:
		return fmt.Errorf("%s.timeout: 0 is IBTA's infinite timeout; lockstep does not offer it because a lost packet would hang the QP; allowed 1..31 (4.096us x 2^t); leave it out for NCCL's default %d", prefix, DefaultTimeoutExponent)
	case t < 1 || t > 31:
		return fmt.Errorf("%s.timeout: %d is out of range; allowed 1..31 (4.096us x 2^t); leave it out for NCCL's default %d", prefix, t, DefaultTimeoutExponent)
	}
	if w := c.OutOfOrder.Window; w < 0 || w > roce.MaxReorderWindow {
		return fmt.Errorf("%s.out_of_order.window: %d is out of range; allowed 0 (default %d) or 1..%d packets", prefix, w, DefaultReorderWindow, roce.MaxReorderWindow)
	}
	if h := c.OutOfOrder.Hold; h != 0 && (h < MinReorderHold || h > MaxReorderHold) {
		return fmt.Errorf("%s.out_of_order.hold: %v is out of range; allowed %v..%v, or leave it out for the automatic hold (base RTT + one credit buffer drain per switch hop)", prefix, h, MinReorderHold, MaxReorderHold)
	}
	if f := c.OutOfOrder.HoldPerFanIn; f < 0 || f > MaxReorderHold {
		return fmt.Errorf("%s.out_of_order.hold_per_fan_in: %v is out of range; allowed 0..%v (0: a fixed hold), or leave hold and it out for the automatic one (one credit buffer drain per switch hop per source of fan-in)", prefix, f, MaxReorderHold)
	}
	if m := c.OutOfOrder.FanInMax; m < 0 || m > MaxFanIn {
		return fmt.Errorf("%s.out_of_order.fan_in_max: %d is out of range; allowed 1..%d sources, or leave it out for the automatic cap (a switch's ports less one)", prefix, m, MaxFanIn)
	}
	if c.CC != nil {
		if err := c.CC.Validate(prefix + ".cc"); err != nil {
			return err
		}
	}
	if err := c.validateSL(prefix); err != nil {
		return err
	}
	if err := c.RC().Validate(prefix); err != nil {
		return err
	}
	if err := c.validateBuffers(prefix + ".credits"); err != nil {
		return err
	}
	return c.Credits.Fabric().Validate(prefix + ".credits")
}

// CreditBufferMin is the least credit buffer per VL (buffer_per_vl, host_buffer_per_vl) this
// block allows: its largest data packet's credit blocks (DataPacketBytes; 65 blocks, 4,160
// B, at the default payload), since a packet starts only when the receiver's limit covers
// all its blocks [IBTA vol 1 §7.9.4.2] and a smaller buffer could never admit it. The most
// is fabric.MaxQueueLimit. This is the one rule for both fields; fabric.CreditConfig's own
// lower bound (one block) is below it and never reached through this block.
func (c Config) CreditBufferMin() sim.Size {
	_, wire := c.DataPacketBytes()
	blk := int64(fabric.CreditBlockBytes)
	return sim.Size((wire + blk - 1) / blk * blk)
}

// validateBuffers checks both buffers per VL (defaults filled) against CreditBufferMin and
// fabric.MaxQueueLimit, naming the field under prefix ("transport.ib.credits"), the value,
// its blocks against the packet's, and the range allowed.
func (c Config) validateBuffers(prefix string) error {
	least := c.CreditBufferMin()
	_, wire := c.DataPacketBytes()
	blk := int64(fabric.CreditBlockBytes)
	cr := c.Credits.Fabric()
	for _, b := range []struct {
		name string
		v    sim.Size
	}{{"buffer_per_vl", cr.BufferPerVL}, {"host_buffer_per_vl", cr.HostBufferPerVL}} {
		allowed := fmt.Sprintf("allowed at least %v (%d blocks of %d B: the largest packet, %d B at payload_bytes %d) and at most %v", least, int64(least)/blk, blk, wire, c.WithDefaults().PayloadBytes, sim.Size(fabric.MaxQueueLimit))
		switch {
		case b.v < 0 || b.v > fabric.MaxQueueLimit:
			return fmt.Errorf("%s.%s: %v is out of range; %s", prefix, b.name, b.v, allowed)
		case b.v < least:
			return fmt.Errorf("%s.%s: %v holds %d credit blocks, fewer than the largest packet's %d: it could never be sent; %s", prefix, b.name, b.v, int64(b.v)/blk, int64(least)/blk, allowed)
		}
	}
	return nil
}

// timeout is the timeout exponent in force: TimeoutExponent, or DefaultTimeoutExponent when
// left out.
func (c Config) timeout() int {
	if c.TimeoutExponent == nil {
		return DefaultTimeoutExponent
	}
	return *c.TimeoutExponent
}

// RTO is the local ACK timeout, 4.096 us x 2^TimeoutExponent (DefaultTimeoutExponent when
// left out).
func (c Config) RTO() sim.Time { return roce.LocalAckTimeout(c.timeout()) }

// RC returns the RC engine's configuration: InfiniBand's header sizes, the timeout and retry
// count, DCQCN off; with CC on, IB congestion control's reaction point and a BECN for every
// FECN.
func (c Config) RC() roce.Config {
	rc := roce.Config{QPsPerPeer: c.QPsPerPeer, PayloadBytes: c.PayloadBytes, HeaderBytes: HeaderBytes,
		RTO: c.RTO(), RetryCount: c.RetryCount}
	rc.DCQCN.Disabled = true
	if c.CCOn() {
		// Every FECN is returned as a BECN [IBTA vol 1 A10.2.2]: CNPs unspaced (1 ps),
		// the sender's reaction point the CCT (cc.go).
		rc.CNPInterval = 1
		rc = rc.WithRateControl(c.CC.WithDefaults())
	}
	return rc.WithDefaults()
}

// DataPacketBytes returns a full data packet's payload and its largest wire size
// (transport.DataPacketSizer).
func (c *Config) DataPacketBytes() (payload, wire int64) {
	rc := c.WithDefaults().RC()
	return rc.DataPacketBytes()
}

// QPsPerTransfer returns the QPs one transfer opens (transport.QPFanout).
func (c *Config) QPsPerTransfer(planes int) int { return max(1, c.QPsPerPeer) * max(1, planes) }

// FlowLevelNotes says what the flow level leaves out of this block (transport.FlowLevelNoter):
// with cc on, IB congestion control (FECN marking, BECN, the CCT's rate steps); the flow
// level's max-min rates on credit-limited lossless links are then what the fabric gives
// without it, the victim flows' slowdown from congestion spreading included.
func (c *Config) FlowLevelNotes() []string {
	if !c.CCOn() {
		return nil
	}
	return []string{"transport.ib.cc: InfiniBand congestion control (FECN marking, BECN, the CCT's injection rate delay) is not modelled at run.engine flow: rates are max-min on the credit-limited lossless links, as without cc; run.engine packet runs it"}
}

// HopRate is the most one link of rate bits/s and one-way delay carries under this block's
// credits (transport.HopRateLimiter): fabric.CreditRate with the receiving end's buffer per
// VL (host_buffer_per_vl into a host adapter, buffer_per_vl into a switch) and a full data
// packet; rate when credits are off.
func (c *Config) HopRate(rate sim.Rate, delay sim.Time, intoHost bool) sim.Rate {
	cr := c.Credits.Fabric()
	if !cr.Enabled {
		return rate
	}
	buf := cr.BufferFor(cr.BufferPerVL, rate)
	if intoHost {
		buf = cr.BufferFor(cr.HostBufferPerVL, rate)
	}
	_, wire := c.DataPacketBytes()
	return fabric.CreditRate(rate, delay, buf, wire)
}
