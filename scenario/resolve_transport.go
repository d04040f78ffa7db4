package scenario

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/mrc"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// transportKind resolves transport.kind (default raw, mrc for a workload) and the
// transport.roce block; it relies on the topology (the NIC port rate) and on the run step
// knowing whether a workload is given.
func (r *resolver) transportKind() error {
	sc := r.sc
	switch sc.Transport.Kind {
	case "":
		sc.Transport.Kind = TransportRaw
		if r.wl {
			sc.Transport.Kind = TransportMRC // a workload needs a reliable transport
		}
	case TransportRaw, TransportMRC, TransportRoCE, TransportIdeal:
	default:
		return Errorf("transport.kind", "%q is not a transport; allowed raw, mrc, roce, ideal", sc.Transport.Kind)
	}
	if sc.Transport.Kind == TransportRoCE {
		return r.transportRoCE()
	} else if sc.Transport.RoCE != nil {
		return Errorf("transport.roce", "set, but transport.kind is %q; use kind: roce or remove the block", sc.Transport.Kind)
	}
	return nil
}

// transportRoCE resolves transport.roce under kind roce: its defaults, and DCQCN's rates
// against the NIC port rate; it relies on the topology.
func (r *resolver) transportRoCE() error {
	sc, c := r.sc, r.c
	rc := roce.Config{}
	if sc.Transport.RoCE != nil {
		rc = *sc.Transport.RoCE
	}
	rc = rc.WithDefaults()
	if err := rc.Validate("transport.roce"); err != nil {
		return err // already "transport.roce.<field>: ..."
	}
	if rc.DCQCN.RateAI > c.HostLink {
		div := roce.ProductionRateAIDivisor
		if rc.DCQCN.Profile == roce.DCQCNProfilePaper {
			div = roce.DCQCNRateAIDivisor
		}
		return Errorf("transport.roce.dcqcn.rate_ai", "%v is above the NIC port rate %v; an additive step is a small fraction of it (default under dcqcn.profile %s: line/%d, %v here)", rc.DCQCN.RateAI, c.HostLink, rc.DCQCN.Profile, div, c.HostLink/sim.Rate(div))
	}
	if rc.DCQCN.RateHAI > c.HostLink {
		return Errorf("transport.roce.dcqcn.rate_hai", "%v is above the NIC port rate %v; the hyper-increase step is a small fraction of it (default 10 x rate_ai)", rc.DCQCN.RateHAI, c.HostLink)
	}
	if rc.DCQCN.MinRate > c.HostLink {
		return Errorf("transport.roce.dcqcn.min_rate", "%v is above the NIC port rate %v", rc.DCQCN.MinRate, c.HostLink)
	}
	sc.Transport.RoCE = &rc
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
		return Errorf("transport.kind", "ideal carries workload messages only; give workload.collectives or use raw or mrc for traffic")
	}
	if len(sc.Faults) > 0 {
		return Errorf("faults", "given with transport ideal, which has no links to fail; use transport mrc or roce")
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

// transportMRC resolves transport.mrc under kind mrc: the EV split over the planes, the probe
// interval from the fabric's base RTT, then mrc's defaults; it relies on the topology.
func (r *resolver) transportMRC() error {
	sc, c := r.sc, r.c
	if sc.Transport.Kind != TransportMRC {
		if sc.Transport.MRC != nil {
			return Errorf("transport.mrc", "set, but transport.kind is %q; use kind: mrc or remove the block", sc.Transport.Kind)
		}
		return nil
	}
	m := mrc.Config{}
	if sc.Transport.MRC != nil {
		m = *sc.Transport.MRC
	}
	if err := resolveEVSplit(&m.EV, c.Planes); err != nil {
		return err
	}
	if m.EV.ProbeInterval == 0 {
		// Left out: the default, or twice the base RTT on a fabric whose round trip is
		// longer (an unanswered probe counts as lost when the next is due).
		d := m.WithDefaults()
		rtt := c.RoundTrip(r.l.Sizing().MaxSwitchHops, d.WireBytes(d.PayloadBytes), d.AckBytes)
		m.EV.ProbeInterval = max(mrc.DefaultEVProbeInterval, 2*rtt)
	}
	m = m.WithDefaults()
	if err := m.Validate("transport.mrc"); err != nil {
		return err // already "transport.mrc.<field>: ..."
	}
	sc.Transport.MRC = &m
	return nil
}

// resolveEVSplit checks that transport.mrc.ev's active set and backup pool split equally over
// the topology's planes [MRC §2.1: the active set is split across the planes], so every plane
// carries the same share of each QP's packets and each plane's EVs are one contiguous block
// of EV numbers (active, then backup). Left out, active is the largest multiple of planes up
// to mrc.DefaultEVActive (128; 126 on 6 planes), and backup is active/2 (mrc's default) when
// that is a multiple of planes, otherwise half of each plane's active share rounded up, on
// every plane (active 8 on 8 planes: 8 backups, not 4 on half the planes).
func resolveEVSplit(ev *mrc.EVConfig, planes int) error {
	if planes < 1 {
		return nil // Describe rejects such a topology first
	}
	eg := func(n int) string { // two multiples of planes near n, for the error's example
		lo := max(planes, n/planes*planes)
		return fmt.Sprintf("e.g. %d or %d", lo, lo+planes)
	}
	switch {
	case ev.Active == 0:
		ev.Active = max(planes, mrc.DefaultEVActive/planes*planes)
	case ev.Active > 0 && ev.Active < planes:
		return Errorf("transport.mrc.ev.active", "%d EVs cannot cover the %d planes of the topology; want at least one per plane, a multiple of %d (%s)", ev.Active, planes, planes, eg(ev.Active))
	case ev.Active > 0 && ev.Active%planes != 0:
		return Errorf("transport.mrc.ev.active", "%d does not split equally over the %d planes of the topology; use a multiple of %d (%s)", ev.Active, planes, planes, eg(ev.Active))
	}
	switch {
	case ev.Backup == 0 && ev.Active > 0:
		ev.Backup = ev.Active / 2 // mrc's default, when it splits
		if ev.Backup%planes != 0 {
			ev.Backup = planes * ((ev.Active/planes + 1) / 2)
		}
	case ev.Backup > 0 && ev.Backup%planes != 0:
		return Errorf("transport.mrc.ev.backup", "%d does not split equally over the %d planes of the topology; use a multiple of %d (%s), 0 for the default (active/2, or half of each plane's active share rounded up when that does not split) or -1 for none", ev.Backup, planes, planes, eg(ev.Backup))
	}
	return nil
}
