package mrcnic

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/mrc"
)

// flowModel is MRC to the flow-level engine (run.engine flow; docs/protocols.md, "Faults at
// flow level"): it sprays every flow over up to ev.active paths (perfect spraying over link
// bundles on a Clos or fat-tree), retransmits only what was lost (selective repeat), and its
// endpoints move off a dead, blackholed or lossy path by themselves one ACK timeout after
// the fault; a QP errors after its ACK-timeout retries without progress (flowGiveUp). cfg is
// the resolved *mrc.Config (nil: the defaults); the base RTT behind the ACK timeout is t's,
// over its longest switch path.
func flowModel(cfg any, t topo.Topology) (transport.FlowModel, error) {
	c, err := flowConfig(cfg)
	if err != nil {
		return transport.FlowModel{}, err
	}
	wire := c.WireBytes(c.PayloadBytes)
	rtt := t.Params().RoundTrip(t.Sizing().MaxSwitchHops, wire, c.AckBytes)
	timeout, giveUp := flowGiveUp(c, rtt)
	paths := c.EV.Active
	if paths <= 0 {
		paths = transport.DefaultFlowPaths
	}
	return transport.FlowModel{
		Spray:           true,
		Paths:           paths,
		WireBytes:       wire,
		HeaderBytes:     c.HeaderBytes,
		AckBytes:        c.AckBytes,
		GoBackN:         false,
		EndpointReroute: true,
		RerouteAfter:    timeout,
		RTO:             0,
		GiveUp:          giveUp,
	}, nil
}

// flowConfig is cfg (a *mrc.Config, or nil for the zero block) with its defaults filled.
func flowConfig(cfg any) (mrc.Config, error) {
	switch c := cfg.(type) {
	case nil:
		return mrc.Config{}.WithDefaults(), nil
	case *mrc.Config:
		if c == nil {
			return mrc.Config{}.WithDefaults(), nil
		}
		return c.WithDefaults(), nil
	}
	return mrc.Config{}, fmt.Errorf("transport.mrc: flow model: the block is a %T, want *mrc.Config", cfg)
}

// flowGiveUp is how long an MRC QP retries without progress before it errors:
// fixed_retries ACK timeouts, then doubling ones up to max_retries [MRC API; transport/mrc
// Sender.rto], with the ACK timeout 1.024 us x 2^t (t = ack_timeout_exp, or when 0 the
// smallest covering 4 base RTTs, at most 24). It returns that first timeout and the whole
// budget, sim.MaxTime when retries are unlimited (max_retries 25). In closed form, with F
// fixed_retries and M max_retries (F <= M < 25): (F + 2^(M-F+1) - 1) timeouts.
func flowGiveUp(cfg mrc.Config, baseRTT sim.Time) (timeout, giveUp sim.Time) {
	cfg = cfg.WithDefaults()
	t := cfg.AckTimeoutExp
	if t == 0 {
		for t = 0; t < 24 && mrc.AckTimeoutUnit<<uint(t) < 4*baseRTT; t++ {
		}
	}
	rto0 := mrc.AckTimeoutUnit << uint(t)
	if cfg.MaxRetries >= mrc.UnlimitedRetries {
		return rto0, sim.MaxTime
	}
	var sum sim.Time
	for r := 0; r <= cfg.MaxRetries; r++ {
		if r <= cfg.FixedRetries {
			sum += rto0
		} else {
			sum += rto0 << uint(min(r-cfg.FixedRetries, 24))
		}
	}
	return rto0, sum
}
