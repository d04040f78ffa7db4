package uecnic

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/mrc"
	"github.com/lockstepsim/lockstep/transport/mrc/mrcnic"
	"github.com/lockstepsim/lockstep/transport/uec"
)

// newConfig returns the zero transport.uec block (transport.Plugin.NewConfig).
func newConfig() any { return &uec.Config{} }

// resolve fills transport.uec's defaults in place and validates it (transport.Plugin.Resolve).
// Errors name the field under env.Path ("transport.uec.paths: ..."), the value and what is
// allowed.
func resolve(cfg any, env transport.ResolveEnv) error {
	c, ok := cfg.(*uec.Config)
	if !ok || c == nil {
		return fmt.Errorf("%s: the block is a %T, want *uec.Config", env.Path, cfg)
	}
	*c = c.WithDefaults()
	return c.Validate(env.Path)
}

// config returns the resolved block cfg (nil: the defaults) with defaults filled.
func config(cfg any) (uec.Config, error) {
	switch c := cfg.(type) {
	case nil:
		return uec.Config{}.WithDefaults(), nil
	case *uec.Config:
		if c == nil {
			return uec.Config{}.WithDefaults(), nil
		}
		return c.WithDefaults(), nil
	}
	return uec.Config{}, fmt.Errorf("transport.uec: the block is a %T, want *uec.Config", cfg)
}

// baseRTT is the round trip of a full data packet and its ACK over t's longest path.
func baseRTT(t topo.Topology, c *uec.Config) sim.Time {
	return t.Params().RoundTrip(t.Sizing().MaxSwitchHops, c.WireBytes(c.PayloadBytes), c.AckBytes)
}

// profile is the uec fabric profile (transport.Plugin.Profile): UEC and MRC share NSCC and
// the UEC reference simulator's switch defaults (ECN 0.2-0.8 BDP on fabric hops, trimming
// above 1 BDP, 1.5 BDP at the last hop; docs/protocols.md, "NSCC"), so it applies MRC's
// profile with UEC's packet sizes.
func profile(cfg any, env transport.ProfileEnv) {
	c, err := config(cfg)
	if err != nil {
		return
	}
	mrcProfile(c, env)
	lastHopECN(env)
}

// lastHopECN marks ECN at the last hop too, with the fabric hops' thresholds (issue 20: "ECN
// on all hops"; the UEC reference simulator's cross-check configuration, which the
// uec-perm-128 preset writes out, marks there as well), unless the scenario set the last
// hop's ECN itself. MRC's profile marks none there; UEC's NSCC takes a last-hop mark as it
// takes any other (ut20 F12: a 64 -> 1 NSCC incast 368.8 -> 359.8 us, 2,656 -> 2,406 trims).
func lastHopECN(env transport.ProfileEnv) {
	if env.Given.LastECN || env.LastHopQueue == nil || *env.LastHopQueue == nil || env.SwitchQueue == nil {
		return
	}
	(*env.LastHopQueue).ECN = env.SwitchQueue.ECN
}

// label names the block for comparison tables ("uec (rud, reps, 128 EVs)"; a cc other than
// nscc and ack_every above 1 are appended: "uec (rud, reps, 128 EVs, rccc)").
func label(cfg any) string {
	c, err := config(cfg)
	if err != nil {
		return Kind
	}
	if c.Delivery == uec.DeliveryROD {
		return "uec (rod)"
	}
	l := fmt.Sprintf("uec (%s, %s, %d EVs", c.Delivery, c.LB, c.Paths)
	if c.CC != uec.CCNSCC {
		l += ", " + c.CC
	}
	if c.AckEvery > 1 {
		l += fmt.Sprintf(", ack every %d", c.AckEvery)
	}
	return l + ")"
}

// mrcProfile applies MRC's registered profile (mrcnic) to env with c's packet sizes: the
// thresholds are the same BDP fractions of a fabric whose BDP UEC's packets set.
func mrcProfile(c uec.Config, env transport.ProfileEnv) {
	p, ok := transport.Lookup(mrcnic.Kind)
	if !ok || p.Profile == nil {
		return
	}
	p.Profile(&mrc.Config{PayloadBytes: c.PayloadBytes, HeaderBytes: c.HeaderBytes, AckBytes: c.AckBytes}, env)
}
