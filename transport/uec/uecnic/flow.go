package uecnic

import (
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/uec"
)

// flowModel is UEC to the flow-level engine (run.engine flow). MRC's flow model
// (mrcnic.flowModel) is unexported and takes MRC's block, so this one states the same
// figures for UEC's: under RUD every flow sprays over up to paths EVs and retransmits only
// what was lost; under ROD it rides one hashed path and goes back N. On a Clos or fat-tree a
// spraying flow rides link bundles (transport.FlowModel.Spray): a dead link leaves its
// bundle at once whatever the lb, so there oblivious spraying costs what REPS does (the
// packet level's cost of spraying onto a dead link until reconvergence is not modelled;
// ut20 F10). Elsewhere REPS, reps_nofreeze and bitmap move off a dead path one RTO after the
// fault (EndpointReroute); oblivious keeps it until routing reconverges. A QP errors after
// max_retries doubling timeouts: (2^(max_retries+1) - 1) first timeouts.
//
// Congestion control needs no term of its own under cc rccc: the destination paces credit at
// its link rate C over its active sources, which is the max-min share the flow level gives
// them, and the credit packets ride the destination's uplink, opposite to the data, so an
// N -> 1 incast's fluid answer is N x S x (wire / payload) / C plus a round trip, as RCCC's
// packet level gives it (TestRCCCIncastFlowLevel: within 0.2% at N = 8, 64, 255). Under
// NSCC alone the flow level gives the same answer and is optimistic: at packet level the
// senders' full first windows overflow the last hop and are trimmed and resent.
func flowModel(cfg any, t topo.Topology) (transport.FlowModel, error) {
	c, err := config(cfg)
	if err != nil {
		return transport.FlowModel{}, err
	}
	wire := c.WireBytes(c.PayloadBytes)
	s := t.Sizing()
	rtt := t.Params().RoundTrip(s.MaxSwitchHops, wire, c.AckBytes)
	// Without built queues, the automatic RTO takes one BDP of queueing per hop.
	rto, _ := c.Timers(uec.Path{BaseRTT: rtt, MaxQueueDelay: rtt, Hops: s.MaxSwitchHops})
	rod := c.Delivery == uec.DeliveryROD
	m := transport.FlowModel{
		Spray:       !rod,
		Paths:       c.Paths,
		WireBytes:   wire,
		HeaderBytes: c.HeaderBytes,
		AckBytes:    c.AckBytes,
		GoBackN:     rod,
		RTO:         rto,
		GiveUp:      rto * sim.Time(uint64(1)<<uint(min(c.MaxRetries+1, 40))-1),
	}
	if rod {
		m.Paths = 1
	}
	if !rod && c.LB != uec.LBOblivious { // reps, reps_nofreeze, bitmap: the sender steers off a dead path
		m.EndpointReroute, m.RerouteAfter, m.RTO = true, rto, 0
	}
	return m, nil
}
