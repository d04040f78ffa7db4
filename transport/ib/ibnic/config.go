package ibnic

import (
	"fmt"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/ib"
	"github.com/lockstepsim/lockstep/transport/nic"
)

// newConfig returns the zero transport.ib block.
func newConfig() any { return &ib.Config{} }

// config reads the plugin's block (nil: the defaults), defaults filled.
func config(cfg any) (ib.Config, error) {
	switch c := cfg.(type) {
	case nil:
		return ib.Config{}.WithDefaults(), nil
	case *ib.Config:
		if c == nil {
			return ib.Config{}.WithDefaults(), nil
		}
		return c.WithDefaults(), nil
	}
	return ib.Config{}, fmt.Errorf("transport.ib: the block is a %T, want *ib.Config", cfg)
}

// resolve fills transport.ib's defaults and validates it; errors name the field under
// env.Path.
func resolve(cfg any, env transport.ResolveEnv) error {
	c := cfg.(*ib.Config)
	*c = c.WithDefaults()
	if err := c.Validate(env.Path); err != nil {
		return err
	}
	if n := len(c.TrafficSL); n > env.TrafficGroups {
		return fmt.Errorf("%s.traffic_sl: %d entries for %d traffic groups; allowed at most one per group (traffic_sl[i] is traffic[i]'s service level; groups without an entry take sl)", env.Path, n, env.TrafficGroups)
	}
	if c.OutOfOrder.Hold == 0 && env.Topology != nil {
		// The automatic hold in force, so the resolved scenario (lockstep validate) shows it.
		c.OutOfOrder.Hold, c.OutOfOrder.HoldPerFanIn, c.OutOfOrder.FanInMax = autoHold(*c, env.Topology)
	}
	return nil
}

// autoHold is transport.ib.out_of_order.hold and hold_per_fan_in when hold is left out:
// ib.Config.AutoReorderHold and AutoReorderFanIn over l's longest minimal path, its base
// round trip (a full data packet one way, an ACK back) and the egress rate of each of its
// switch hops (fabric links, the last the host link), and fan_in_max: the most ports of one
// switch of l less one (nic.SwitchIngresses). A hold_per_fan_in or fan_in_max the scenario
// wrote is kept.
func autoHold(c ib.Config, l topo.Topology) (hold, perFanIn sim.Time, fanInMax int) {
	p, hops := l.Params(), l.Sizing().MaxSwitchHops
	rc := c.RC()
	_, wire := rc.DataPacketBytes()
	rtt := p.RoundTrip(hops, int(wire), rc.AckWire())
	egress := make([]sim.Rate, 0, hops)
	for i := 0; i < hops; i++ {
		r := p.FabricLink
		if i == hops-1 || r == 0 {
			r = p.HostLink
		}
		egress = append(egress, r)
	}
	perFanIn = c.OutOfOrder.HoldPerFanIn
	if perFanIn == 0 {
		perFanIn = c.AutoReorderFanIn(egress)
	}
	fanInMax = c.OutOfOrder.FanInMax
	if fanInMax == 0 {
		for _, s := range nic.SwitchIngresses(l) {
			fanInMax = max(fanInMax, len(s)-1)
		}
		fanInMax = min(max(fanInMax, 1), ib.MaxFanIn)
	}
	return c.AutoReorderHold(rtt, egress), perFanIn, fanInMax
}

// profile is the ib fabric profile: no trimming, no ECN marking unless IB congestion control
// is on (then FECN marking at CC's threshold and rate, ib.CC.ECN), and under credits switch queue limits of at least what a switch's ingresses may
// hold of one VL (ports x buffer per VL), so drop-tail never acts before the credits do
// (fabric.Network.CreditCheck's bound); at most fabric.MaxQueueLimit. Settings the scenario
// wrote are kept.
func profile(cfg any, env transport.ProfileEnv) {
	c, err := config(cfg)
	if err != nil {
		return
	}
	var limit sim.Size
	if cr := c.Credits.Fabric(); cr.Enabled && !env.Fluid {
		for _, s := range nic.SwitchIngresses(env.Topology) {
			limit = max(limit, ingressHold(cr, s))
		}
		limit = min(limit, fabric.MaxQueueLimit)
	}
	set := func(q *fabric.QueueConfig, limitGiven, ecnGiven, trimGiven bool) {
		if !limitGiven && q.Limit < limit {
			q.Limit = limit
		}
		if !ecnGiven {
			q.ECN.Enabled = false
			if c.CCOn() {
				q.ECN = c.CC.ECN() // FECN marking (ib.CC)
			}
		}
		if !trimGiven {
			q.Trim.Enabled = false
		}
	}
	g := env.Given
	set(env.SwitchQueue, g.SwitchLimit, g.SwitchECN, g.SwitchTrim)
	if lh := *env.LastHopQueue; lh != nil {
		set(lh, g.LastLimit, g.LastECN, g.LastTrim)
	}
}

// ingressHold is what a switch with ingress links s may hold of one VL: its ports' credit
// buffers (fabric.CreditConfig.BufferFor: scaled by rate under the default buffers).
func ingressHold(cr fabric.CreditConfig, s []topo.Link) sim.Size {
	var h sim.Size
	for _, k := range s {
		h += cr.BufferFor(cr.BufferPerVL, k.Rate)
	}
	return h
}
