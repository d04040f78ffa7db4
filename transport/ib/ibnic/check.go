package ibnic

import (
	"fmt"
	"strings"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/ib"
	"github.com/lockstepsim/lockstep/transport/roce/rocenic"
)

// maxCreditProblems bounds the credit warnings (fabric.Network.CreditCheck).
const maxCreditProblems = 5

// check is the plugin's Check. Warnings for settings that are legal but do nothing under
// InfiniBand (inertWarnings): ECN marking without transport.ib.cc, switch trimming, a cc
// block's parameters with cc.enabled false; a cc threshold no queue can reach, or cc
// marking settings a scenario's own ecn block overrides (ccQueueWarnings);
// out_of_order.enabled written false under adaptive routing (orderWarnings); out_of_order
// settings while placement is off (placementOffWarnings); credit settings with
// credits.enabled false (creditOffWarnings); high_limit without both VL arbitration tables
// (arbWarnings); traffic_sl's service levels all on one VL (slWarnings). Errors: an SL mapped to a VL the switch queues lack, or VL arbitration
// tables that give a VL in use no weight (ib.Config.CheckVLs); the fabric refusing the
// credits. On a packet fabric it then turns credit flow
// control on (as newEndpoint would, which then leaves it as it is) so that
// fabric.Network.CreditCheck can say before the run why the credits cannot keep it
// lossless: a switch egress whose queue limit (a scenario's switch_queue.limit, which
// overrides the ib profile's) is below what the switch's ingresses may hold, so drop-tail
// can still act. A buffer per VL below the largest packet never gets here: the block's
// Validate refuses it (ib.Config.CreditBufferMin, the one rule). cfg is the resolved
// transport.ib block.
func check(cfg any, env transport.CheckEnv) ([]string, error) {
	c, err := config(cfg)
	if err != nil {
		return nil, err
	}
	q := env.Queues
	escape := -1
	if env.Net != nil && c.Credits.Fabric().Enabled {
		escape = env.Net.AdaptiveEscapeVL()
	}
	if err := c.CheckVLs("transport.ib", escape, q.Switch.Classes, q.LastHop.Classes, q.NIC.Classes); err != nil {
		return nil, err
	}
	out := inertWarnings(c, env.Queues)
	out = append(out, ccQueueWarnings(c, env.Queues)...)
	out = append(out, orderWarnings(c, env.Adaptive, env.Net == nil)...)
	out = append(out, placementOffWarnings(c, env.Adaptive, env.Topology)...)
	out = append(out, creditOffWarnings(c)...)
	out = append(out, arbWarnings(c)...)
	out = append(out, slWarnings(c, q.Switch.Classes)...)
	cr := c.Credits.Fabric()
	if env.Net == nil || !cr.Enabled {
		return out, nil
	}
	if !env.Net.CreditsOn() {
		if err := env.Net.SetCredits(cr); err != nil {
			return nil, fmt.Errorf("transport.ib.credits: %w", err)
		}
	}
	_, wire := c.DataPacketBytes()
	for _, w := range env.Net.CreditCheck(wire, maxCreditProblems) {
		out = append(out, "transport.ib.credits: cannot be lossless: "+w)
	}
	return out, nil
}

// inertWarnings lists what c and the resolved queues q set that has no effect under
// InfiniBand: ECN marking at a switch queue while transport.ib.cc is off (the RC engine
// answers FECN with BECNs, but no reaction point changes a rate: marks only cost the
// BECNs' bytes); trimming at a switch queue (InfiniBand data packets are never trimmable, so
// a full queue drops, and under credits none fills); and a cc block whose parameters differ
// from the defaults with enabled false (ignored). The ib profile turns ECN (without cc) and
// trimming off, so these come only from a scenario's own fabric.switch_queue or
// last_hop_queue.
func inertWarnings(c ib.Config, q transport.Queues) []string {
	var out []string
	queues := []struct {
		name string
		q    fabric.QueueConfig
	}{{"fabric.switch_queue", q.Switch}}
	if q.LastHopGiven {
		queues = append(queues, struct {
			name string
			q    fabric.QueueConfig
		}{"fabric.last_hop_queue", q.LastHop})
	}
	for i, s := range queues {
		if i > 0 && s.q.ECN == q.Switch.ECN && s.q.Trim == q.Switch.Trim {
			break // the last hop as the switch queue: said once
		}
		if s.q.ECN.Enabled && !c.CCOn() {
			out = append(out, fmt.Sprintf("%s.ecn: enabled under transport ib without transport.ib.cc: switches mark FECN (kmin %v, kmax %v, pmax %g) but no rate reacts to it; turn IB congestion control on (transport.ib.cc: {enabled: true}, which sets the marking itself) or leave ecn out", s.name, s.q.ECN.Kmin, s.q.ECN.Kmax, s.q.ECN.Pmax))
		}
		if s.q.Trim.Enabled {
			out = append(out, fmt.Sprintf("%s.trim: enabled under transport ib: InfiniBand data packets are never trimmable, so trimming does nothing (a full queue drops instead); leave trim out", s.name))
		}
	}
	if c.CC != nil && !c.CC.Enabled {
		if set := ccSetFields(*c.CC); len(set) > 0 {
			out = append(out, fmt.Sprintf("transport.ib.cc: %s given with enabled false: IB congestion control is off, so they do nothing; set transport.ib.cc.enabled: true or leave them out", strings.Join(set, ", ")))
		}
	}
	return out
}

// ccSetFields names the fields of cc (defaults filled) that differ from ib.CC's defaults.
func ccSetFields(cc ib.CC) []string {
	d := ib.CC{}.WithDefaults()
	cc = cc.WithDefaults()
	var set []string
	add := func(differ bool, name string, v any) {
		if differ {
			set = append(set, fmt.Sprintf("%s %v", name, v))
		}
	}
	add(cc.Threshold != d.Threshold, "threshold", cc.Threshold)
	add(*cc.MarkingRate != *d.MarkingRate, "marking_rate", *cc.MarkingRate)
	add(cc.CCTIIncrease != d.CCTIIncrease, "ccti_increase", cc.CCTIIncrease)
	add(cc.CCTILimit != d.CCTILimit, "ccti_limit", cc.CCTILimit)
	add(cc.CCTIMin != d.CCTIMin, "ccti_min", cc.CCTIMin)
	add(cc.CCTITimer != d.CCTITimer, "ccti_timer", cc.CCTITimer)
	add(cc.CCTStep != d.CCTStep, "cct_step", cc.CCTStep)
	return set
}

// orderWarnings: fabric.adaptive_routing on while transport.ib.out_of_order.enabled is
// written false. The responder then accepts only the expected PSN, so at packet level every
// packet adaptive routing reorders draws a sequence-error NAK and a go-back-N resend of all
// that followed it [IBTA vol 1 §9.7.5.1.1]: a retransmission storm (the Ethernet AR figures
// in docs/protocols.md: 326,611 resends, 0.146 of ideal); at flow level each QP keeps one
// hashed path, so adaptive routing moves nothing but failures.
func orderWarnings(c ib.Config, adaptive, fluid bool) []string {
	if !adaptive || c.OutOfOrder.Enabled == nil || *c.OutOfOrder.Enabled {
		return nil
	}
	return []string{rocenic.InOrderUnderAR("transport.ib", fluid, "on under adaptive routing")}
}

// ccQueueWarnings: with transport.ib.cc on, the switch and last-hop queues' FECN marking.
// A queue marking at cc's threshold (the ib profile's ecn, ib.CC.ECN) whose limit is at or
// below the threshold never marks: a queue holds at most its limit, and marking starts past
// the threshold [IBTA vol 1 Annex A10.2.1], so IB CC never acts there. A queue whose ecn the
// scenario wrote (kept by the profile) marks by that block instead, so cc.threshold and
// marking_rate given away from their defaults are not in force there.
func ccQueueWarnings(c ib.Config, q transport.Queues) []string {
	if !c.CCOn() {
		return nil
	}
	cc := c.CC.WithDefaults()
	mark := cc.ECN()
	d := ib.CC{}.WithDefaults()
	var set []string
	if cc.Threshold != d.Threshold {
		set = append(set, fmt.Sprintf("threshold %v", cc.Threshold))
	}
	if *cc.MarkingRate != *d.MarkingRate {
		set = append(set, fmt.Sprintf("marking_rate %d", *cc.MarkingRate))
	}
	var out []string
	queues := []struct {
		name string
		q    fabric.QueueConfig
	}{{"fabric.switch_queue", q.Switch}}
	if q.LastHopGiven && q.LastHop != q.Switch {
		queues = append(queues, struct {
			name string
			q    fabric.QueueConfig
		}{"fabric.last_hop_queue", q.LastHop})
	}
	for _, s := range queues {
		switch {
		case s.q.ECN == mark && s.q.Limit > 0 && cc.Threshold >= s.q.Limit:
			out = append(out, fmt.Sprintf("transport.ib.cc.threshold: %v, but %s.limit is %v: a queue never holds more than its limit, so it never passes the threshold, no switch marks FECN there and IB CC never acts on it; allowed below %v: lower transport.ib.cc.threshold or raise %s.limit", cc.Threshold, s.name, s.q.Limit, s.q.Limit, s.name))
		case s.q.ECN != mark && s.q.ECN.Enabled && len(set) > 0:
			out = append(out, fmt.Sprintf("transport.ib.cc: %s given, but %s.ecn is written (kmin %v, kmax %v, pmax %g) and switches mark FECN by it there, so they are not in force; leave %s.ecn out for cc's marking, or leave them out", strings.Join(set, ", "), s.name, s.q.ECN.Kmin, s.q.ECN.Kmax, s.q.ECN.Pmax, s.name))
		}
	}
	return out
}

// placementOffWarnings: transport.ib.out_of_order settings given while out-of-order
// placement is off (fabric.adaptive_routing off and out_of_order.enabled not written true,
// or enabled written false): the responder accepts only the expected PSN, so no window or
// hold is read. Given means different from what resolve fills in: the default window and,
// on topology l, the automatic hold, hold_per_fan_in and fan_in_max (autoHold); a written
// hold leaves hold_per_fan_in and fan_in_max at 0. With placement on, fan_in_max given while
// hold_per_fan_in is 0 (a fixed hold: a written hold, or credits off) caps nothing.
func placementOffWarnings(c ib.Config, adaptive bool, l topo.Topology) []string {
	o := c.OutOfOrder
	if on := o.Enabled; on == nil && adaptive || on != nil && *on {
		if l == nil || o.HoldPerFanIn != 0 || o.FanInMax == 0 {
			return nil
		}
		// Placement on with a fixed hold: fan_in_max caps a growth that never happens.
		bare := c
		bare.OutOfOrder = ib.OutOfOrder{Enabled: o.Enabled}
		if _, _, auto := autoHold(bare, l); o.FanInMax == auto {
			return nil // the automatic cap resolve wrote
		}
		return []string{fmt.Sprintf("transport.ib.out_of_order.fan_in_max: %d given with hold_per_fan_in 0: the hold does not grow with the responder's fan-in, so the cap on that growth does nothing; give hold_per_fan_in (or leave hold out for the automatic one) or leave fan_in_max out", o.FanInMax)}
	}
	var set []string
	if o.Window != 0 && o.Window != ib.DefaultReorderWindow {
		set = append(set, fmt.Sprintf("window %d", o.Window))
	}
	if l != nil {
		bare := c
		bare.OutOfOrder = ib.OutOfOrder{Enabled: o.Enabled}
		hold, perFanIn, fanInMax := autoHold(bare, l)
		if o.Hold != 0 && o.Hold != hold {
			set = append(set, fmt.Sprintf("hold %v", o.Hold))
			perFanIn, fanInMax = 0, 0 // a written hold: left out, they stay 0
		}
		if o.HoldPerFanIn != perFanIn {
			set = append(set, fmt.Sprintf("hold_per_fan_in %v", o.HoldPerFanIn))
		}
		if o.FanInMax != fanInMax && o.FanInMax != 0 {
			set = append(set, fmt.Sprintf("fan_in_max %d", o.FanInMax))
		}
	}
	if len(set) == 0 {
		return nil
	}
	why := "fabric.adaptive_routing is off and out_of_order.enabled follows it"
	if o.Enabled != nil {
		why = "out_of_order.enabled is false"
	}
	return []string{fmt.Sprintf("transport.ib.out_of_order: %s given while out-of-order placement is off (%s): the responder accepts only the expected PSN, so they do nothing; set transport.ib.out_of_order.enabled: true (or fabric.adaptive_routing.enabled: true) or leave them out", strings.Join(set, ", "), why)}
}

// slWarnings: transport.ib.traffic_sl giving the traffic groups two or more service levels
// that all map to one data VL (with sl, for groups past its end) on switch queues of classes
// classes: the VL is the unit of separation on a link (its own credits, queue and arbitration
// [IBTA vol 1 §7.6.6]), so such SLs do not separate the groups. With the default 2 classes
// every SL's data is on VL 1 (ib.DefaultVL).
func slWarnings(c ib.Config, classes int) []string {
	distinct := map[int]bool{}
	for _, sl := range c.TrafficSL {
		distinct[sl] = true
	}
	if len(distinct) < 2 {
		return nil
	}
	vl := c.VL(c.SL, classes)
	for sl := range distinct {
		if c.VL(sl, classes) != vl {
			return nil
		}
	}
	return []string{fmt.Sprintf("transport.ib.traffic_sl: %v, with sl %d, all map to VL %d (fabric.switch_queue.classes %d, sl_to_vl %v): the VL is what separates traffic on a link (its own credits, queue and arbitration), so these service levels do not separate the groups; raise fabric.switch_queue.classes (and fabric.nic_queue.classes) for more data VLs, or give sl_to_vl mapping them apart", c.TrafficSL, c.SL, vl, classes, c.SLToVL)}
}

// arbWarnings: transport.ib.credits.high_limit given (not 0) with credits on but without
// both VL arbitration tables. LimitOfHighPriority bounds the high-priority bytes sent while
// a low-priority packet waits [IBTA vol 1 §7.6.9]: with no high table nothing is
// high-priority (and with neither table the VLs are served in strict priority), and with no
// low table nothing low-priority ever waits, so the limit is never read.
func arbWarnings(c ib.Config) []string {
	cr := c.Credits
	if cr.Enabled != nil && !*cr.Enabled || cr.HighLimit == 0 {
		return nil // credits off: creditOffWarnings says it
	}
	switch {
	case len(cr.High) == 0 && len(cr.Low) == 0:
		return []string{fmt.Sprintf("transport.ib.credits.high_limit: %d given without VL arbitration tables (credits.high and low empty): the VLs are served in strict priority, so the limit does nothing; give credits.high and credits.low [IBTA vol 1 §7.6.9] or leave high_limit out", cr.HighLimit)}
	case len(cr.High) == 0:
		return []string{fmt.Sprintf("transport.ib.credits.high_limit: %d given without a high-priority table (credits.high empty): it bounds the high-priority bytes sent while a low-priority packet waits, and no VL is high-priority, so it does nothing; give credits.high or leave high_limit out", cr.HighLimit)}
	case len(cr.Low) == 0:
		return []string{fmt.Sprintf("transport.ib.credits.high_limit: %d given without a low-priority table (credits.low empty): it bounds the high-priority bytes sent while a low-priority packet waits, and no VL is low-priority, so none ever waits and it does nothing; give credits.low or leave high_limit out", cr.HighLimit)}
	}
	return nil
}

// creditOffWarnings: credit settings other than enabled given while
// transport.ib.credits.enabled is false, which nothing reads then (the links run lossy
// without link-level flow control): the buffers per VL that differ from the defaults and the
// VL arbitration tables.
func creditOffWarnings(c ib.Config) []string {
	cr := c.Credits
	if cr.Enabled == nil || *cr.Enabled {
		return nil
	}
	var set []string
	if cr.BufferPerVL != 0 && cr.BufferPerVL != fabric.DefaultCreditBuffer {
		set = append(set, fmt.Sprintf("buffer_per_vl %v", cr.BufferPerVL))
	}
	if cr.HostBufferPerVL != 0 && cr.HostBufferPerVL != cr.BufferPerVL {
		set = append(set, fmt.Sprintf("host_buffer_per_vl %v", cr.HostBufferPerVL))
	}
	if len(cr.High) > 0 {
		set = append(set, fmt.Sprintf("high (%d entries)", len(cr.High)))
	}
	if len(cr.Low) > 0 {
		set = append(set, fmt.Sprintf("low (%d entries)", len(cr.Low)))
	}
	if cr.HighLimit != 0 {
		set = append(set, fmt.Sprintf("high_limit %d", cr.HighLimit))
	}
	if len(set) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("transport.ib.credits: %s given with enabled false: credit flow control is off (the links are lossy), so they do nothing; set transport.ib.credits.enabled: true or leave them out", strings.Join(set, ", "))}
}
