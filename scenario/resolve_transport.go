package scenario

import (
	"reflect"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
)

// transportKind resolves transport.kind (default raw; for a workload, the registered
// transport that is the plugins' WorkloadDefault) and the block of the transport in force
// through its plugin (transport.Plugin.Resolve); it relies on the topology and on the run
// step (whether a workload is given, whether the run is fluid). A block given for a kind that
// is not transport.kind is an error.
func (r *resolver) transportKind() error {
	sc := r.sc
	switch sc.Transport.Kind {
	case "":
		sc.Transport.Kind = TransportRaw
		if w := workloadTransport(); r.wl && w != "" {
			sc.Transport.Kind = w // a workload needs a reliable transport
		}
	case TransportRaw, TransportIdeal:
	default:
		if plugin(sc.Transport.Kind) == nil {
			return Errorf("transport.kind", "%q is not a transport; allowed %s", sc.Transport.Kind, transportKinds())
		}
	}
	for _, k := range sc.Transport.blockKinds() {
		if k != sc.Transport.Kind {
			return Errorf("transport."+k, "set, but transport.kind is %q; use kind: %s or remove the block", sc.Transport.Kind, k)
		}
	}
	return r.transportBlock()
}

// transportBlock resolves the block of the transport in force (transport.<kind>) through its
// plugin, from the zero block when it is left out, on a copy: the scenario keeps the resolved
// block only when it is valid.
func (r *resolver) transportBlock() error {
	sc := r.sc
	p := plugin(sc.Transport.Kind)
	if p == nil || p.NewConfig == nil {
		return nil
	}
	cfg := p.NewConfig()
	if cur := sc.Transport.Block(); cur != nil {
		reflect.ValueOf(cfg).Elem().Set(reflect.ValueOf(cur).Elem())
	}
	if p.Resolve != nil {
		ar := sc.Fabric.AdaptiveRouting != nil && sc.Fabric.AdaptiveRouting.Enabled
		env := transport.ResolveEnv{Path: "transport." + sc.Transport.Kind, Topology: r.l, Workload: r.wl, Fluid: sc.Fluid(), Adaptive: ar, TrafficGroups: len(sc.Traffic)}
		if err := p.Resolve(cfg, env); err != nil {
			return err // already "transport.<kind>.<field>: ..."
		}
	}
	sc.Transport.setBlock(sc.Transport.Kind, cfg)
	return nil
}

// transportIdeal resolves transport.ideal (workloads only, no faults, latency default); it
// relies on the transport kind and on knowing whether a workload is given.
func (r *resolver) transportIdeal() error {
	sc := r.sc
	if sc.Transport.Kind != TransportIdeal {
		if sc.Transport.Ideal != nil {
			return Errorf("transport.ideal", "set, but transport.kind is %q; use kind: ideal or remove the block", sc.Transport.Kind)
		}
		return nil
	}
	if !r.wl {
		return Errorf("transport.kind", "ideal carries workload messages only; give workload.collectives or use raw or %s for traffic", transferTransport())
	}
	if len(sc.Faults) > 0 {
		return Errorf("faults", "given with transport ideal, which has no links to fail; use transport %s", strings.Join(transport.Kinds(), " or "))
	}
	id := Ideal{}
	if sc.Transport.Ideal != nil {
		id = *sc.Transport.Ideal
	}
	if id.Latency == 0 {
		id.Latency = DefaultIdealLatency
	}
	if id.Latency < 0 || id.Latency > sim.Second {
		return Errorf("transport.ideal.latency", "%v is out of range; allowed 0..1s", id.Latency)
	}
	sc.Transport.Ideal = &id
	return nil
}
