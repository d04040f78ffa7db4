package ibnic

import (
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/ib"
)

// flowModel is InfiniBand to the flow-level engine: with static routing each QP on one
// ECMP-hashed path (qps_per_peer per peer per plane); under fabric.adaptive_routing (with
// out-of-order placement, its default there) each flow sprayed over the minimal paths
// (FlowModel.AdaptiveSpray: the runner's adaptiveFlowModel); go-back-N, routing (the subnet
// manager) moves flows off a link that is down after fabric.reconvergence, a stalled QP
// retries every local ACK timeout and errors after retry_count + 1 timeouts. Credits are not
// modelled at flow level: max-min rates on lossless links.
func flowModel(cfg any, _ topo.Topology) (transport.FlowModel, error) {
	c, err := config(cfg)
	if err != nil {
		return transport.FlowModel{}, err
	}
	return transport.FlowModel{
		Paths:       c.QPsPerPeer,
		WireBytes:   c.PayloadBytes + ib.HeaderBytes,
		HeaderBytes: ib.HeaderBytes,
		AckBytes:    ib.HeaderBytes,
		GoBackN:     true,
		RTO:         c.RTO(),
		GiveUp:      c.RTO() * sim.Time(c.RetryCount+1),
		// Out-of-order placement on (its default under adaptive routing): under
		// fabric.adaptive_routing the flows are sprayed over the minimal paths.
		AdaptiveSpray: c.OutOfOrder.Enabled == nil || *c.OutOfOrder.Enabled,
	}, nil
}
