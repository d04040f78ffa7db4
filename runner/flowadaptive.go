package runner

import (
	"fmt"

	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
)

// adaptiveFlowModel is m under sc's fabric.adaptive_routing at flow level [issue 19: "flow
// level gets an IB model (AR as per-packet spreading within minimal paths)"]. A transport
// whose receivers place reordered packets (FlowModel.AdaptiveSpray: IB's out-of-order
// placement, RoCE's out_of_order) keeps AdaptiveSpray only while adaptive routing is on, and
// keeps its QPs: an RC QP is bound to one NIC port, so to one plane (QP i on plane i mod
// planes, rocenic.Endpoint.newQP) [IBTA §9.7: the QP's primary path names its port], and a
// switch's AR chooses among the minimal-hop egress ports of the packet's AR group, which
// are all in the switch's own plane. So on a Clos or fat-tree each QP is spread over the
// minimal paths of its own plane (flowRouter.withPlaneBundles: per-plane bundles), never
// across planes; MRC, which sprays across planes from the endpoint (Spray), is left as it
// is. On another topology (no per-plane bundles) the flows are sprayed over up to
// DefaultFlowPaths sampled minimal paths (Spray), as before. Every transport without
// adaptive routing keeps m less AdaptiveSpray (one ECMP-hashed path per QP).
func adaptiveFlowModel(sc *scenario.Scenario, t topo.Topology, m transport.FlowModel) transport.FlowModel {
	if a := sc.Fabric.AdaptiveRouting; a == nil || !a.Enabled || !m.AdaptiveSpray || m.Spray {
		m.AdaptiveSpray = false
		return m
	}
	if _, ok := t.(*topo.Layout); ok {
		return m
	}
	m.Spray, m.Paths, m.AdaptiveSpray = true, 0, false
	return m
}

// planeTable is the routing table of per-plane bundles (withPlaneBundles): for each plane p,
// each host's NIC port, each T0's uplinks and the links down into it, and in three tiers each
// pod's T1-T2 links out and in, as one bundle each, at (group x planes + p) x 2 + dir (dir 0
// up, 1 down).
type planeTable struct {
	d                  topo.Dims
	planes             int
	hop                sim.Time
	fwdFabric, fwdHost sim.Time
	hostB, t0B, podB   []int32
}

// at is the bundle of group g (a host, T0 or pod) in plane p and direction dir of tbl.
func (pt *planeTable) at(tbl []int32, g, p, dir int) int32 {
	return tbl[(g*pt.planes+p)*2+dir]
}

// withPlaneBundles, for a transport that keeps its QPs on their planes under adaptive
// routing (model.AdaptiveSpray as adaptiveFlowModel leaves it, no Spray) on a Clos or fat
// tree, bundles the links of each plane as bundleLinks bundles them over all planes, and
// returns caps (bits/s of payload, share of each member's rate) with the bundles' capacities
// appended, and sets r.bundle and r.pt; caps unchanged otherwise. Perfect spreading of
// every flow over the minimal paths of a plane loads every uplink of a T0 in that plane
// equally, and every downlink into a T0, and every T1-T2 link of a pod: each set acts as one
// link of its summed capacity (exact for the fluid model without faults; a failed member
// lowers its bundle's capacity, as a switch's AR moves off a dead port). What this leaves
// out is AR's imperfection: per-packet least-loaded choices leave queues that perfect
// spreading does not (packet-level IB AR reaches 0.94 of line on a permutation, TestPermutationAdaptive).
func (r *flowRouter) withPlaneBundles(caps []float64, share float64) []float64 {
	l, ok := r.t.(*topo.Layout)
	if !ok || !r.model.AdaptiveSpray || r.spray || r.bundle != nil {
		return caps
	}
	d := l.Dims()
	planes := max(d.Planes, 1)
	pods := max(d.Pods, 1)
	pt := &planeTable{d: d, planes: planes, hop: l.Params().HopLatency,
		fwdFabric: l.Params().FabricLink.TxTime(r.wire), fwdHost: l.Params().HostLink.TxTime(r.wire)}
	first := len(caps)
	next := first
	ids := func(groups int) []int32 {
		out := make([]int32, 2*groups*planes)
		for i := range out {
			out[i] = int32(next)
			next++
		}
		return out
	}
	pt.hostB, pt.t0B, pt.podB = ids(d.Hosts), ids(d.T0s), ids(pods)
	caps = append(caps, make([]float64, next-first)...)
	out := make([]int32, 2*len(r.links))
	for k, lk := range r.links {
		out[2*k], out[2*k+1] = -1, -1
		var tbl []int32
		var group int
		switch lk.Level {
		case 0:
			tbl, group = pt.hostB, lk.A.Node // the lower end is the host
		case 1, 2:
			_, _, idx, ok := l.Locate(lk.A.Node) // a T0 (level 1) or a T1 (level 2)
			if !ok {
				continue
			}
			tbl, group = pt.t0B, idx
			if lk.Level == 2 {
				tbl, group = pt.podB, idx/max(d.T1PerPod, 1)
			}
		default:
			continue
		}
		if lk.Plane < 0 || lk.Plane >= planes {
			continue
		}
		for dir := range 2 {
			id := pt.at(tbl, group, lk.Plane, dir)
			out[2*k+dir] = id
			caps[id] += r.wireRate(2*k+dir, float64(lk.Rate)) * share
		}
	}
	r.bundle, r.pt = out, pt
	r.routes, r.routeLinks, r.routeUsed = nil, nil, 0
	return caps
}

// planeBundled routes a flow of an adaptively routed QP transport (withPlaneBundles) from
// src to dst: r.paths QPs on each plane, plane by plane as pick lists them (path k is QP
// k mod paths of plane k / paths, so keepQPs cuts them as it cuts hashed RoCE paths), each
// one path over its plane's bundles: the source's port, the source T0's uplinks unless both
// hosts share a T0, in three tiers the two pods' T1-T2 links unless they share a pod, the
// links down into the destination's T0 and the destination's port. Latency as bundled's.
func (r *flowRouter) planeBundled(src, dst int, buf []flow.Path) ([]flow.Path, sim.Time, error) {
	pt := r.pt
	d := &pt.d
	if src < 0 || src >= d.Hosts || dst < 0 || dst >= d.Hosts || src == dst {
		return nil, 0, fmt.Errorf("no path from h%d to h%d in the topology", src, dst)
	}
	t0s, t0d := src/d.T0Down, dst/d.T0Down
	per := max(r.paths, 1)
	need := pt.planes * per * 6
	if cap(r.scratch) < need {
		r.scratch = make([]int32, 0, need)
	}
	r.scratch = r.scratch[:0]
	buf = buf[:0]
	var hops sim.Time
	for p := range pt.planes {
		start := len(r.scratch)
		r.scratch = append(r.scratch, pt.at(pt.hostB, src, p, 0))
		if t0s != t0d {
			r.scratch = append(r.scratch, pt.at(pt.t0B, t0s, p, 0))
			if ps, pd := t0s/d.T0PerPod, t0d/d.T0PerPod; d.Tiers == 3 && ps != pd {
				r.scratch = append(r.scratch, pt.at(pt.podB, ps, p, 0), pt.at(pt.podB, pd, p, 1))
			}
			r.scratch = append(r.scratch, pt.at(pt.t0B, t0d, p, 1))
		}
		r.scratch = append(r.scratch, pt.at(pt.hostB, dst, p, 1))
		links := r.scratch[start:len(r.scratch):len(r.scratch)]
		hops = sim.Time(len(links))
		for range per {
			buf = append(buf, flow.Path{Links: links, Weight: 1})
		}
	}
	// Every bundle is one hop; after the first, each also holds one packet (store and
	// forward): fabric links, then the destination's host link.
	return buf, hops*pt.hop + (hops-2)*pt.fwdFabric + pt.fwdHost, nil
}

// faultReaction is how long after a link goes down or comes up the flow level re-routes the
// flows of a transport whose endpoints do not reroute by themselves (flowFaults'
// reconvergence): fabric.reconvergence, the routing recomputation (the subnet manager's
// sweep, an Ethernet routing protocol); under fabric.adaptive_routing the switches' fast
// recovery instead (SHIELD, fabric/adaptive.go): a down port leaves the AR choice at once
// and a switch left with no minimal port toward a destination has its upstream switches
// avoid it after notify_delay (default 2 us), so flows hashed onto the dead link (one ECMP
// path per QP: a transport without out-of-order placement, or AR on a topology without
// bundles) move after notify_delay rather than the sweep. Flows on bundles (per plane or
// MRC's) take a failure as a capacity loss at once and do not wait for either.
func faultReaction(sc *scenario.Scenario) sim.Time {
	if a := sc.Fabric.AdaptiveRouting; a != nil && a.Enabled {
		return a.WithDefaults().NotifyDelay
	}
	return sc.Fabric.Reconvergence
}

// planeBundleName names flow link d when it is a per-plane bundle (withPlaneBundles): "h3
// NIC port p1, tx", "p1.t0-2 uplinks", "links down into p1.t0-2", "pod 0 T1-T2 uplinks,
// plane 1", "T2 links down into pod 0, plane 1"; ok false for any other link.
func (r *flowRouter) planeBundleName(d int) (name string, ok bool) {
	pt := r.pt
	if pt == nil || len(pt.hostB) == 0 {
		return "", false
	}
	off := d - int(pt.hostB[0])
	nh, nt, np := len(pt.hostB), len(pt.t0B), len(pt.podB)
	if off < 0 || off >= nh+nt+np {
		return "", false
	}
	switch {
	case off < nh:
		g, p := off/2/pt.planes, (off/2)%pt.planes
		return fmt.Sprintf("h%d NIC port p%d, %s", g, p, map[bool]string{true: "tx", false: "rx"}[off%2 == 0]), true
	case off < nh+nt:
		o := off - nh
		g, p := o/2/pt.planes, (o/2)%pt.planes
		t0 := fmt.Sprintf("T0 %d of plane %d", g, p)
		if l, ok := r.t.(*topo.Layout); ok {
			if n := l.SwitchNode(p, 0, g); n >= 0 {
				t0 = l.NodeName(n)
			}
		}
		if o%2 == 0 {
			return t0 + " uplinks", true
		}
		return "links down into " + t0, true
	default:
		o := off - nh - nt
		g, p := o/2/pt.planes, (o/2)%pt.planes
		if o%2 == 0 {
			return fmt.Sprintf("pod %d T1-T2 uplinks, plane %d", g, p), true
		}
		return fmt.Sprintf("T2 links down into pod %d, plane %d", g, p), true
	}
}

// faultReactionName names the setting faultReaction reads, for messages:
// fabric.reconvergence, or fabric.adaptive_routing.notify_delay under adaptive routing.
func faultReactionName(sc *scenario.Scenario) string {
	if a := sc.Fabric.AdaptiveRouting; a != nil && a.Enabled {
		return "fabric.adaptive_routing.notify_delay"
	}
	return "fabric.reconvergence"
}
