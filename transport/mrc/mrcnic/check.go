package mrcnic

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/mrc"
)

// check is Plugin.Check: it rejects MRC timers the fabric makes meaningless, on the packet
// fabric only (env.Net nil, flow level: nothing to check). An ACK timeout below the base RTT
// of the longest path would time out every packet before its SACK could return, and a probe
// interval below it would count every probe lost before its answer could return (so a
// retired EV never comes back). docs/protocols.md explains both timers. It gives no
// warnings. Errors: name transport.mrc.ack_timeout_exp or transport.mrc.ev.probe_interval,
// the value, the base RTT and what is allowed; cfg not an MRC block.
func check(cfg any, env transport.CheckEnv) ([]string, error) {
	if env.Net == nil {
		return nil, nil
	}
	c, err := config(cfg)
	if err != nil {
		return nil, err
	}
	rtt := baseRTT(env.Topology, &c)
	if t := c.AckTimeoutExp; t > 0 && mrc.AckTimeoutUnit<<uint(t) < rtt {
		return nil, fmt.Errorf("transport.mrc.ack_timeout_exp: %d gives an ACK timeout of %v, shorter than the fabric's base RTT %v: every packet would time out before its SACK could return; want at least %d, or 0 (automatic: the smallest covering 4 base RTTs)",
			t, mrc.AckTimeoutUnit<<uint(t), rtt, minExp(rtt))
	}
	if pi := c.EV.ProbeInterval; pi < rtt {
		return nil, fmt.Errorf("transport.mrc.ev.probe_interval: %v is shorter than the fabric's base RTT %v: an unanswered probe counts as lost when the next is due, so every probe would be lost; use at least %v (default %v)",
			pi, rtt, rtt, mrc.DefaultEVProbeInterval)
	}
	return nil, nil
}

// minExp is the smallest ACK timeout exponent whose timeout (1.024 us x 2^t) covers rtt.
func minExp(rtt sim.Time) int {
	t := 1
	for t < 24 && mrc.AckTimeoutUnit<<uint(t) < rtt {
		t++
	}
	return t
}
