package uecnic

import (
	"fmt"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/uec"
)

// check is Plugin.Check. On the packet fabric it rejects an RTO or a reorder window below
// the fabric's base RTT (every packet would be declared lost before its ACK could return) and
// an ack_delay that, added to the base RTT, reaches the RTO in force (automatic or given):
// every coalesced SACK would come after the sender's timeout (ut20 F5). Errors name the
// field, the value and the bound. Warnings (ut20 F6): an rccc block that differs from the
// defaults under a cc without receiver credit (ignored), and cc rccc or nscc+rccc at flow
// level, which does not model credit (its figures are NSCC's).
func check(cfg any, env transport.CheckEnv) ([]string, error) {
	c, err := config(cfg)
	if err != nil {
		return nil, err
	}
	var warn []string
	if !c.HasRCCC() && c.RCCC != (uec.Config{}).WithDefaults().RCCC {
		warn = append(warn, fmt.Sprintf("transport.uec.rccc is set but transport.uec.cc is %s: the rccc block is ignored (it applies to cc rccc or nscc+rccc)", c.CC))
	}
	if env.Net == nil {
		if c.HasRCCC() {
			warn = append(warn, fmt.Sprintf("transport.uec.cc %s at run.engine flow: the flow level does not model receiver credit; its figures are NSCC's (docs/protocols.md, \"RCCC\")", c.CC))
		}
		return warn, nil
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
	if c.AckEvery > 1 && c.AckDelay > 0 {
		p := env.Topology.Params()
		hold := func(q fabric.QueueConfig, r sim.Rate) sim.Time {
			b := q.Limit
			if q.Trim.Enabled && q.Trim.Threshold > 0 && q.Trim.Threshold < b {
				b = q.Trim.Threshold
			}
			return r.TxTime(int64(b))
		}
		mq := max(hold(env.Queues.Switch, p.FabricLink), hold(env.Queues.LastHop, p.HostLink))
		rto, _ := c.Timers(uec.Path{BaseRTT: rtt, NICRate: p.HostLink * sim.Rate(p.Planes), MaxQueueDelay: mq, Hops: env.Topology.Sizing().MaxSwitchHops})
		if c.AckDelay+rtt >= rto {
			return nil, fmt.Errorf("transport.uec.ack_delay: %v plus the base RTT %v reaches the RTO %v: every coalesced SACK would come after the sender's timeout; allowed 0 (automatic) or below %v", c.AckDelay, rtt, rto, rto-rtt)
		}
	}
	return warn, nil
}
