package mrcnic

import (
	"fmt"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/mrc"
)

// newConfig returns the zero transport.mrc block (transport.Plugin.NewConfig).
func newConfig() any { return &mrc.Config{} }

// resolve fills transport.mrc in place under kind mrc (transport.Plugin.Resolve): the EV split
// over the topology's planes (resolveEVSplit), the probe interval from the fabric's base RTT,
// then mrc's defaults, and validates the result. Errors name the field under env.Path
// ("transport.mrc.ev.active: ..."), the value and what is allowed.
func resolve(cfg any, env transport.ResolveEnv) error {
	m := cfg.(*mrc.Config)
	c := env.Topology.Params()
	if err := resolveEVSplit(&m.EV, c.Planes, env.Path); err != nil {
		return err
	}
	if m.EV.ProbeInterval == 0 {
		// Left out: the default, or twice the base RTT on a fabric whose round trip is
		// longer (an unanswered probe counts as lost when the next is due).
		d := m.WithDefaults()
		rtt := c.RoundTrip(env.Topology.Sizing().MaxSwitchHops, d.WireBytes(d.PayloadBytes), d.AckBytes)
		m.EV.ProbeInterval = max(mrc.DefaultEVProbeInterval, 2*rtt)
	}
	*m = m.WithDefaults()
	return m.Validate(env.Path) // already "transport.mrc.<field>: ..."
}

// resolveEVSplit checks that transport.mrc.ev's active set and backup pool split equally over
// the topology's planes [MRC §2.1: the active set is split across the planes], so every plane
// carries the same share of each QP's packets and each plane's EVs are one contiguous block
// of EV numbers (active, then backup). Left out, active is the largest multiple of planes up
// to mrc.DefaultEVActive (128; 126 on 6 planes), and backup is active/2 (mrc's default) when
// that is a multiple of planes, otherwise half of each plane's active share rounded up, on
// every plane (active 8 on 8 planes: 8 backups, not 4 on half the planes). path is the
// block's YAML path ("transport.mrc"), the prefix of every error.
func resolveEVSplit(ev *mrc.EVConfig, planes int, path string) error {
	if planes < 1 {
		return nil // the topology's validation rejects such a topology first
	}
	eg := func(n int) string { // two multiples of planes near n, for the error's example
		lo := max(planes, n/planes*planes)
		return fmt.Sprintf("e.g. %d or %d", lo, lo+planes)
	}
	switch {
	case ev.Active == 0:
		ev.Active = max(planes, mrc.DefaultEVActive/planes*planes)
	case ev.Active > 0 && ev.Active < planes:
		return fmt.Errorf("%s.ev.active: %d EVs cannot cover the %d planes of the topology; want at least one per plane, a multiple of %d (%s)", path, ev.Active, planes, planes, eg(ev.Active))
	case ev.Active > 0 && ev.Active%planes != 0:
		return fmt.Errorf("%s.ev.active: %d does not split equally over the %d planes of the topology; use a multiple of %d (%s)", path, ev.Active, planes, planes, eg(ev.Active))
	}
	switch {
	case ev.Backup == 0 && ev.Active > 0:
		ev.Backup = ev.Active / 2 // mrc's default, when it splits
		if ev.Backup%planes != 0 {
			ev.Backup = planes * ((ev.Active/planes + 1) / 2)
		}
	case ev.Backup > 0 && ev.Backup%planes != 0:
		return fmt.Errorf("%s.ev.backup: %d does not split equally over the %d planes of the topology; use a multiple of %d (%s), 0 for the default (active/2, or half of each plane's active share rounded up when that does not split) or -1 for none", path, ev.Backup, planes, planes, eg(ev.Backup))
	}
	return nil
}

// ProfilePmax is the mrc profile's marking probability at kmax (ecn.pmax), which it also
// fills in an ecn block that gives thresholds but no pmax: marking rises from 0 at 0.2 BDP to
// 1 at 0.8 BDP.
const ProfilePmax = 1.0

// profile applies the mrc fabric profile (transport.Plugin.Profile): switch ECN and trimming
// from the BDP, marking from 0.2 to 0.8 BDP on fabric hops, none on the last hop, trimming
// above 1 BDP (1.5 BDP at the last hop), each at least a few packets (3, 12 and 12 MTUs), as
// in the UEC reference simulator's defaults for MRC/NSCC fabrics [docs/protocols.md, "NSCC"];
// a queue limit below 2 x the trim threshold is raised to it. BDP = fabric link rate x base
// RTT of the MRC packet sizes of cfg (its defaults filled). Settings env.Given says the
// scenario wrote are kept; a missing last-hop queue becomes a copy of the switch queue with
// the last hop's own ECN and trimming.
func profile(cfg any, env transport.ProfileEnv) {
	m := *cfg.(*mrc.Config)
	m = m.WithDefaults()
	c := env.Topology.Params()
	hops := env.Topology.Sizing().MaxSwitchHops
	rtt := c.RoundTrip(hops, m.WireBytes(m.PayloadBytes), m.AckBytes)
	bdp := c.FabricLink.BytesIn(rtt)
	// Packet floors (lockstep): at low rates a BDP is a few packets, and spraying queues
	// whole packets at every hop; marking from 0.2 BDP (one packet at 10G) and trimming at one
	// BDP (five) would mark and trim the ordinary contention of a full-bisection fabric.
	// Marking starts at 3 packets at least, reaches 1 at 12, trimming at 12 (18 at the last
	// hop). From 100G up the BDP fractions are the larger (docs/protocols.md).
	mtu := int64(m.WireBytes(m.PayloadBytes))
	kmin, kmax, trim := max(bdp/5, 3*mtu), max(bdp*4/5, 12*mtu), max(bdp, 12*mtu)
	given := env.Given
	sw := env.SwitchQueue
	if !given.SwitchECN {
		sw.ECN = fabric.ECNConfig{Enabled: true, Kmin: sim.Size(kmin), Kmax: sim.Size(kmax), Pmax: ProfilePmax}
	}
	if !given.SwitchTrim {
		sw.Trim = fabric.TrimConfig{Enabled: true, Threshold: sim.Size(trim), HeaderLimit: sw.Trim.HeaderLimit, HeaderShare: sw.Trim.HeaderShare}
	}
	lh := *env.LastHopQueue
	if lh == nil {
		q := *sw
		lh = &q
		*env.LastHopQueue = lh
	}
	if !given.LastECN {
		lh.ECN = fabric.ECNConfig{}
	}
	if !given.LastTrim {
		lh.Trim = fabric.TrimConfig{Enabled: true, Threshold: sim.Size(trim * 3 / 2), HeaderLimit: lh.Trim.HeaderLimit, HeaderShare: lh.Trim.HeaderShare}
	}
	for i, q := range []*fabric.QueueConfig{sw, lh} {
		if given := [2]bool{given.SwitchLimit, given.LastLimit}[i]; !given && q.Limit < sim.Size(2*trim) {
			q.Limit = sim.Size(2 * trim) // room above the trim threshold for headers' data to drain
		}
		*q = q.WithDefaults()
	}
}
