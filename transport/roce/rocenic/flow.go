package rocenic

import (
	"fmt"
	"github.com/lockstepsim/lockstep/fabric"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// flowModel is RoCEv2 to the flow-level engine (run.engine flow; docs/protocols.md, "Faults
// at flow level"): each QP rides one ECMP-hashed path, qps_per_peer QPs per peer per plane;
// go-back-N resends everything in flight after a loss; routing, not the endpoints, moves
// flows off a link that is down, after fabric.reconvergence; a QP stalled on a dead path
// retries every rto and errors after retry_count + 1 timeouts without progress; with DCQCN
// on and dcqcn.flow_recovery set, each QP's flows are capped by DCQCN's recovery after it
// stops sharing a congested link (flowCeiling; docs/protocols.md, "DCQCN at flow level"). cfg
// is the
// resolved *roce.Config (nil: the defaults); t is not needed (RoCE's budget is its RTO's).
//
// AckBytes is a packet's headers alone, as the flow level has always sized the ACK in the
// round trip behind the go-back-N window (the AETH's 4 bytes are left out).
func flowModel(cfg any, _ topo.Topology) (transport.FlowModel, error) {
	c, err := flowConfig(cfg)
	if err != nil {
		return transport.FlowModel{}, err
	}
	return transport.FlowModel{
		Spray:           false,
		Paths:           c.QPsPerPeer,
		WireBytes:       c.PayloadBytes + c.HeaderBytes,
		HeaderBytes:     c.HeaderBytes,
		AckBytes:        c.HeaderBytes,
		GoBackN:         true,
		EndpointReroute: false,
		RTO:             c.RTO,
		GiveUp:          c.RTO * sim.Time(c.RetryCount+1),
		QPTuple:         transport.QPTuple{Proto: fabric.ProtoRoCE, DstPort: roce.UDPPort, Ports: portRule{}},
		// With out-of-order placement (on under fabric.adaptive_routing unless written off:
		// roce.Config.ForFabric) its flows spread like IB's (runner/flowadaptive.go, which
		// reads this only under adaptive routing); go-back-N in order keeps one hashed path
		// per QP.
		AdaptiveSpray: c.ForFabric(true).OutOfOrderOn(),
		Ceiling:       flowCeiling(c.DCQCN),
	}, nil
}

// flowCeiling is DCQCN's rate recovery to the flow level (transport.RateCeiling;
// docs/protocols.md, "DCQCN at flow level"): each QP runs the packet level's own reaction
// point (roce.DCQCN) on the resolved settings, settled at its share while it shares a
// congested link, and its increase steps [DCQCN §3.1] cap it once it no longer does. nil
// when DCQCN is disabled (the sender paces at line rate and the max-min rates are its rates)
// and unless dcqcn.flow_recovery is set (the default: max-min).
func flowCeiling(d roce.DCQCNConfig) transport.RateCeiling {
	if d.Disabled || !d.FlowRecovery {
		return nil
	}
	return dcqcnCeiling{cfg: d}
}

// dcqcnCeiling is flowCeiling's transport.RateCeiling: a comparable value (the resolved
// DCQCN block).
type dcqcnCeiling struct{ cfg roce.DCQCNConfig }

// Step implements transport.RateCeiling: DCQCN's rate-increase timer T.
func (c dcqcnCeiling) Step() sim.Time { return c.cfg.WithDefaults().RateIncreaseTimer }

// NewQP implements transport.RateCeiling with a reaction point at line rate.
func (c dcqcnCeiling) NewQP(line sim.Rate) (transport.QPCeiling, error) {
	d, err := roce.NewDCQCN(c.cfg, line)
	if err != nil {
		return nil, err
	}
	return dcqcnQP{d}, nil
}

// dcqcnQP is one QP's reaction point as a transport.QPCeiling.
type dcqcnQP struct{ d *roce.DCQCN }

// Settle implements transport.QPCeiling (roce.DCQCN.Settle).
func (q dcqcnQP) Settle(now sim.Time, rate sim.Rate) { q.d.Settle(now, rate) }

// Advance implements transport.QPCeiling: the timer steps due by now, then the byte
// counter's for wireBytes (roce.DCQCN.OnSent), then Rc.
func (q dcqcnQP) Advance(now sim.Time, wireBytes int64) (sim.Rate, bool) {
	q.d.OnSent(now, wireBytes)
	return q.d.Rate(), q.d.Recovering()
}

// flowConfig is cfg (a *roce.Config, or nil for the zero block) with its defaults filled.
func flowConfig(cfg any) (roce.Config, error) {
	switch c := cfg.(type) {
	case nil:
		return roce.Config{}.WithDefaults(), nil
	case *roce.Config:
		if c == nil {
			return roce.Config{}.WithDefaults(), nil
		}
		return c.WithDefaults(), nil
	}
	return roce.Config{}, fmt.Errorf("transport.roce: flow model: the block is a %T, want *roce.Config", cfg)
}

// SourcePort is the UDP source port of QP qp (0-based, on plane qp mod planes) of owner's
// connection from src to dst on a run of seed runSeed, perConn QPs per connection: for
// traffic flow i (transport.FlowOwner) roce.UDPSourcePort of QP number i x perConn + qp, the
// number Endpoint.AddFlow gives it when the traffic flows are added before any collective
// message (as the runner adds them); for a collective's connection (transport.CollectiveOwner)
// transport.QPSourcePort, a hash of what the QP connects, since collective QPs open on first
// use in an order only the run decides. Either way the flow level (transport.QPTuple) routes
// each QP on the path its packets hash to.
func SourcePort(runSeed uint64, src, dst int, owner uint64, qp, perConn int) uint16 {
	if i, ok := transport.FlowOwnerIndex(owner); ok {
		return roce.UDPSourcePort(runSeed, uint32(i*perConn+qp))
	}
	return transport.QPSourcePort(runSeed, src, dst, owner, qp)
}

// portRule is SourcePort as a transport.PortRule.
type portRule struct{}

// Port implements transport.PortRule with SourcePort.
func (portRule) Port(runSeed uint64, src, dst int, owner uint64, qp, perConn int) uint16 {
	return SourcePort(runSeed, src, dst, owner, qp, perConn)
}
