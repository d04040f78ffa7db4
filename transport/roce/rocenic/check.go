package rocenic

import (
	"fmt"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// maxECNProblems bounds the ECN-after-PFC warnings (one per distinct kmin and port rate).
const maxECNProblems = 5

// check is the plugin's Check: the RoCE pre-run checks on the built fabric. Under the roce
// profile an ECN kmin at or above the queue limit in force (the profile's under PFC) is an
// error (checkQueueKmin). The warnings are DCQCN on with ECN off on every switch queue
// (dcqcnWithoutECN) and, on a packet fabric with PFC on, ECN that cannot mark before PFC
// pauses (fabric.Network.ECNAfterPFC, both values named) and a local ACK timeout shorter than
// the time to drain the worst paused path (rtoBelowDrain). cfg is the resolved
// transport.roce block (*roce.Config). The shared buffer's room for one packet per ingress is
// a PFC check, the runner's.
func check(cfg any, env transport.CheckEnv) ([]string, error) {
	c, err := config(cfg)
	if err != nil {
		return nil, err
	}
	if env.Profile == Kind {
		if err := checkQueueKmin(env.Queues); err != nil {
			return nil, err
		}
	}
	out := dcqcnWithoutECN(c.DCQCN.Disabled, env.Queues)
	if w := inOrderUnderAR(c, env.Adaptive, env.Net == nil); w != "" {
		out = append(out, w)
	}
	if w := flowRecoveryInert(c, env); w != "" {
		out = append(out, w)
	}
	net := env.Net
	if net == nil || !net.PFCOn() {
		return out, nil
	}
	if !c.DCQCN.Disabled {
		for _, w := range net.ECNAfterPFC(maxECNProblems) {
			out = append(out, "fabric.switch_queue.ecn: "+w)
		}
	}
	hops := env.Topology.Sizing().MaxSwitchHops
	if w := rtoBelowDrain(c.WithDefaults().RTO, c.WithDefaults().RetryCount, hops, net); w != "" {
		out = append(out, w)
	}
	return out, nil
}

// inOrderUnderAR warns when fabric.adaptive_routing is on and
// transport.roce.out_of_order.enabled is written false (left out it is on under adaptive
// routing: roce.Config.ForFabric); "" when there is nothing to say. The text is
// InOrderUnderAR's, shared with InfiniBand's.
func inOrderUnderAR(c roce.Config, adaptive, fluid bool) string {
	o := c.OutOfOrder
	if !adaptive || o == nil || o.Enabled == nil || *o.Enabled {
		return ""
	}
	return InOrderUnderAR("transport.roce", fluid, "on under adaptive routing, as Spectrum-X's SuperNICs place reordered packets")
}

// InOrderUnderAR is the warning for an RC responder written in order (path +
// ".out_of_order.enabled: false", path "transport.roce" or "transport.ib") on a fabric with
// adaptive routing. The responder then accepts only the expected PSN, so at packet level
// every packet adaptive routing reorders draws a sequence-error NAK and a go-back-N resend of
// all that followed it [IBTA vol 1 §9.7.5.1.1] (a retransmission storm: docs/protocols.md,
// the Ethernet AR figures); at flow level (fluid) each QP keeps one hashed path. why says
// what leaving the field out gives.
func InOrderUnderAR(path string, fluid bool, why string) string {
	what := "every packet AR reorders draws a sequence-error NAK and a go-back-N resend of everything after it (a retransmission storm)"
	if fluid {
		what = "at flow level each QP then keeps one hashed path, so adaptive routing balances nothing (at packet level every reorder would be a go-back-N)"
	}
	return path + ".out_of_order.enabled: false with fabric.adaptive_routing on: in-order delivery under adaptive routing: " + what + "; leave out_of_order.enabled out (" + why + ") or turn adaptive routing off"
}

// checkQueueKmin rejects, under the roce profile, an ECN kmin at or above the queue limit in
// force on the switch queue or the last hop's (the profile's under PFC, which scenario
// resolution only then knows): nothing would ever be marked. The error names the field, both
// values and what is allowed.
func checkQueueKmin(qs transport.Queues) error {
	check := func(path string, q *fabric.QueueConfig) error {
		if q.ECN.Enabled && q.ECN.Kmin >= q.Limit {
			return fmt.Errorf("%s.ecn.kmin: %v is at or above the queue limit in force %v; nothing would ever be marked; want kmin below it", path, q.ECN.Kmin, q.Limit)
		}
		return nil
	}
	if err := check("fabric.switch_queue", &qs.Switch); err != nil {
		return err
	}
	return check("fabric.last_hop_queue", &qs.LastHop)
}

// dcqcnWithoutECN warns when DCQCN is on (not disabled) but no switch queue marks
// (fabric.switch_queue and last_hop_queue both with ECN off): DCQCN reacts only to CNPs,
// which receivers send for CE-marked packets, so it can never act.
func dcqcnWithoutECN(disabled bool, qs transport.Queues) []string {
	if disabled || qs.Switch.ECN.Enabled || qs.LastHop.ECN.Enabled {
		return nil
	}
	return []string{"transport.roce.dcqcn: on, but ECN marking is off on every switch queue (fabric.switch_queue.ecn and fabric.last_hop_queue.ecn), so no packet is marked, no CNP is sent and DCQCN can never act; turn ECN on (the roce profile's default) or set transport.roce.dcqcn.disabled: true to run PFC only"}
}

// rtoBelowDrain warns when the local ACK timeout rto is shorter than the time to drain the
// worst paused path of net (PFC on): the last hop's worst egress plus hops-1 times the other
// switch hops' worst, each sending what its switch's ingresses may hold before they all pause
// (fabric.Network.PFCWorstDrain). QPs whose packets only wait behind pauses would time out
// and, after retries resends, error. "" when rto covers it.
func rtoBelowDrain(rto sim.Time, retries, hops int, net *fabric.Network) string {
	host, hp, sw, sp := net.PFCWorstDrain()
	drain := host + sim.Time(max(hops-1, 0))*sw
	if rto >= drain {
		return ""
	}
	return fmt.Sprintf("transport.roce.rto: %v is shorter than the %v the worst paused path may take to drain (%v at last hop %s + %d x %v at %s); QPs whose packets only wait behind PFC pauses would time out, resend, and after retry_count (%d) retries error; NCCL's default is 4.096us x 2^20 (about 4.3 s)",
		rto, drain, host, hp, max(hops-1, 0), sw, sp, retries)
}

// flowRecoveryInert warns when transport.roce.dcqcn.flow_recovery is set where it does
// nothing: at packet level (DCQCN runs there itself), with DCQCN disabled, under adaptive
// routing with out-of-order placement (a QP's flow spreads over paths: no one congested
// path to recover from), and in a run with faults (the ceiling does not follow a fault
// model's reroutes, so it is left out: docs/protocols.md, "DCQCN at flow level"); "" when
// it acts or is not set.
func flowRecoveryInert(c roce.Config, env transport.CheckEnv) string {
	if !c.DCQCN.FlowRecovery {
		return ""
	}
	why := ""
	switch {
	case env.Net != nil:
		why = "the packet level runs DCQCN itself; the setting is for run.engine: flow"
	case c.DCQCN.Disabled:
		why = "dcqcn.disabled is true, so there is no recovery to follow"
	case env.Adaptive && c.ForFabric(true).OutOfOrderOn():
		why = "under fabric.adaptive_routing with out-of-order placement a QP's flow spreads over paths and keeps max-min rates"
	case env.Faults:
		why = "runs with faults keep max-min rates: the ceiling does not follow a fault model's reroutes (docs/protocols.md, \"DCQCN at flow level\")"
	default:
		return ""
	}
	return "transport.roce.dcqcn.flow_recovery: true does nothing here: " + why
}
