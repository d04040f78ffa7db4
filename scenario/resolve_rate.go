package scenario

import (
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
)

// transferRate is the rate the automatic run.duration sizes a host's transfers at
// (transferDuration): its NIC's line rate over all planes, or less when the transport's
// link-level flow control holds a hop below line rate whatever the load (its block is a
// transport.HopRateLimiter: InfiniBand credits, buffer / credit round trip): planes x the
// slowest of the host link into a switch, the host link into a host adapter and a fabric
// link (at the topology's slowest fabric rate and longest hop latency). limited reports
// that the transport's limit, not the line rate, set it. The block must be resolved.
func transferRate(tr Transport, p topo.Params) (rate sim.Rate, limited bool) {
	planes := sim.Rate(max(p.Planes, 1))
	nic := p.HostLink * planes
	l, ok := tr.Block().(transport.HopRateLimiter)
	if !ok || p.HostLink <= 0 {
		return nic, false
	}
	hop := min(l.HopRate(p.HostLink, p.HopLatency, false), l.HopRate(p.HostLink, p.HopLatency, true))
	if p.FabricLink > 0 {
		hop = min(hop, l.HopRate(p.FabricLink, p.HopLatency, false))
	}
	if hop <= 0 || hop >= p.HostLink {
		// 0: no packet fits a buffer (the transport's own check rejects or warns): size
		// at line rate rather than forever.
		return nic, false
	}
	return hop * planes, true
}
