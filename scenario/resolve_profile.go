package scenario

import (
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/transport"
)

// profile applies fabric.profile to the switch and last-hop queues (and, under a lossless
// profile with PFC, the shared buffer) through the plugin of the kind it names
// (transport.Plugin.Profile; step profile, after checkQueues: the checks see the queues as
// written, the profile fills what they left to it). The plugin sees the transport's resolved
// block when the profile is the transport's own, else its zero block. Settings the scenario
// gave explicitly (Fabric.Given) are kept, so the resolved scenario, parsed again with every
// setting given, resolves to itself. A PFC buffer the profile sizes is written back to
// fabric.pfc.
func (r *resolver) profile() error {
	sc := r.sc
	p := plugin(sc.Fabric.Profile)
	if p == nil || p.Profile == nil {
		return nil // none
	}
	cfg := sc.Transport.Block()
	if sc.Fabric.Profile != sc.Transport.Kind || cfg == nil {
		cfg = nil
		if p.NewConfig != nil {
			cfg = p.NewConfig()
		}
	}
	env := transport.ProfileEnv{
		Topology:       r.l,
		Fluid:          sc.Fluid(),
		SwitchQueue:    &sc.Fabric.SwitchQueue,
		LastHopQueue:   &sc.Fabric.LastHopQueue,
		Given:          sc.Fabric.Given(),
		MaxPacketBytes: sc.MaxPacketBytes(),
	}
	var pfc fabric.PFCConfig
	if sc.Fabric.PFC != nil {
		pfc = sc.Fabric.PFC.Config()
		env.PFC = &pfc
	}
	p.Profile(cfg, env)
	if sc.Fabric.PFC != nil {
		sc.Fabric.PFC.set(pfc)
	}
	return nil
}
