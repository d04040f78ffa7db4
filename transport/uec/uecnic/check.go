package uecnic

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
)

// check is Plugin.Check: on the packet fabric it rejects an RTO or a reorder window below
// the fabric's base RTT (every packet would be declared lost before its ACK could return).
// No warnings. Errors name transport.uec.rto or transport.uec.reorder_window, the value and
// the base RTT.
func check(cfg any, env transport.CheckEnv) ([]string, error) {
	if env.Net == nil {
		return nil, nil
	}
	c, err := config(cfg)
	if err != nil {
		return nil, err
	}
	rtt := baseRTT(env.Topology, &c)
	for _, f := range []struct {
		name string
		v    sim.Time
	}{{"rto", c.RTO}, {"reorder_window", c.ReorderWindow}} {
		if f.v > 0 && f.v < rtt {
			return nil, fmt.Errorf("transport.uec.%s: %v is shorter than the fabric's base RTT %v: every packet would count as lost before its ACK could return; want at least %v, or 0 (automatic)", f.name, f.v, rtt, rtt)
		}
	}
	return nil, nil
}
