package runner

import (
	"fmt"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
)

// flowRouter routes the flow-level engine's flows over a topology, as the packet-level
// transport would, from its flow model (transport.FlowModel, flowModelOf): a spraying
// transport (Spray, MRC) on a Clos or fat-tree is perfect spraying over link bundles (see
// bundleLinks), elsewhere it sprays each flow equally over up to Paths (default
// transport.DefaultFlowPaths) of its minimal paths, sampled evenly and split over the planes
// as the packet level splits its active EVs; a transport that does not spray (RoCE) puts each
// (src, dst, key) on one ECMP-hashed path per QP, Paths QPs per plane, all weighted equally;
// hosts in one scale-up domain talk over their NVLink-like links instead. Directed link 2k is
// link k of Topology.Links from its A end to its B end, 2k+1 the other way; each host h has
// two more, its scale-up transmit (nvl + 2h) and receive (nvl + 2h + 1) links; bundles are
// numbered after those.
type flowRouter struct {
	t       topo.Topology
	links   []topo.Link
	planes  int
	spray   bool
	seed    uint64
	domain  int // scale-up domain size (hosts h/domain share one); <= 1: none
	nvl     int // first scale-up link
	nvlLat  sim.Time
	scratch []int32
	// paths is, spraying, the most paths a flow samples; else the QPs per peer per plane,
	// each its own ECMP path (FlowModel.Paths, at least 1).
	paths int
	// wire is a full data packet's wire bytes (FlowModel.WireBytes), for storeForward.
	wire int64
	// model is the transport's flow model, name its plugin's Name (for messages).
	model transport.FlowModel
	name  string
	// hop is the transport's link-level limit (its block as a transport.HopRateLimiter:
	// InfiniBand credits), nil when it has none; see wireRate.
	hop transport.HopRateLimiter
	// bundle maps every directed link of a Clos or fat-tree to its bundle link (see
	// bundleLinks); nil when flows are not bundled (the transport does not spray, or the
	// topology is no Clos).
	bundle []int32
	bt     *bundleTable // the same, indexed for routing without walking a path
	// pickBuf holds pick's path indices, reused from call to call.
	pickBuf []int
	pt      *planeTable // instead, per-plane bundles of adaptively routed QPs (flowadaptive.go)
	// dead marks the directed links a new route avoids (nil: none), as the transport sees
	// the fabric: set by the flow-level fault model (flowFaults). Bundled MRC routes do not
	// read it (a failure lowers its bundle's capacity instead).
	dead []bool
	// in lists each node's incoming directed links, for detours (built on first use).
	in [][]int32
	// crossPlane lets a QP that does not spray (RoCE) with no live path in its plane take one in another plane:
	// set from the first job restart on (flowFaults.qpError). A live RC
	// QP is bound to its port and cannot move [IBTA §9.7]; on restart NCCL builds new
	// communicators over the ports that are up, so a dead port's rail is left out.
	crossPlane bool
	// routes caches the hashed routes of a transport that does not spray (RoCE) while no
	// link is dead: a training step asks for the same (src, dst, key) every microbatch, and
	// walking 8 planes' paths hop by hop was a quarter of a RoCE run. routeLinks holds each
	// route's paths as a length followed by the links, in chunks of routeChunk int32 that
	// are never reallocated (a route lies in one chunk). Bounded by routeCacheLinks.
	routes     *routeTable
	routeLinks [][]int32
	routeUsed  int // int32 held in routeLinks
	// hostPort maps every directed link to its host's port bundle when a transport that
	// does not spray has its host links bundled (bundleHostPorts), -1 for the other links;
	// nil when they are not.
	hostPort []int32
	// For a transport that does not spray and gives its packets' 5-tuple
	// (FlowModel.QPTuple): ecmpShared is fabric.ecmp_seed shared; owners the owner
	// (transport.FlowOwner, CollectiveOwner) of each Router key its callers registered
	// (setOwner); hdr the header being hashed; wt the ports and forwarding tables
	// hashedWalk reads, with every switch's seed (fabric.ECMPSeeds), built on first use
	// from the topology (buildWalkTables). See hashedWalk.
	ecmpShared bool
	owners     u64Table
	hdr        fabric.Packet
	wt         *walkTables
}

// routeKey and routeVal are an entry of flowRouter.routes: the paths' start in routeLinks,
// their number and the route's latency. Chunk indices stay below 1 << 11 (routeCacheLinks
// over routeChunk, plus the chunks a route too long for the last one's rest starts), so ref
// fits an int32.
type routeKey struct {
	src, dst int32
	key      uint64
}

type routeVal struct {
	ref   int32 // chunk x routeChunk + offset in the chunk (routeChunk is 1 << 20)
	paths int32
	lat   sim.Time
}

// routeCacheLinks bounds flowRouter.routes: at most this many int32 in routeLinks (128 MB),
// about a million routes of 8 paths of 3 to 4 links. A larger bound does not pay: in a
// 131,072-GPU RoCE training step (train-405b-131k-roce) the routes asked for after the
// first million (the data-parallel gradient collectives over 1,024 ranks, each message on
// its own QP of its own pair) are each asked for once (session 39: at 4 times this bound,
// 2.3 million more routes cached, not one more hit).
const routeCacheLinks = 32 << 20

// routeChunk is the size of one chunk of flowRouter.routeLinks, in int32 (4 MB); routeVal.ref
// holds an offset in 20 bits.
const routeChunk = 1 << 20

// bundleTable is what routing a bundled flow needs: each host's, T0's and pod's bundle per
// direction (0 up, 1 down).
type bundleTable struct {
	d   topo.Dims
	hop sim.Time // HopLatency, the same on every link of a Clos or fat-tree
	// fwdFabric and fwdHost are one full packet's serialisation on a fabric link and on a
	// host link (flowRouter.storeForward).
	fwdFabric, fwdHost sim.Time
	hostB, t0B, podB   []int32 // [host*2 + dir], [t0*2 + dir], [pod*2 + dir]
}

// MRC on a Clos or fat-tree is modelled at flow level as perfect spraying: each flow's rate
// splits equally over the planes and, within a plane, over every minimal path. The planes are
// identical copies and every flow splits the same way, so each plane carries the same share
// of every link's load; within a plane every T0 loads each of its uplinks equally, and every
// pod each of its T1-T2 links. So a host's NIC ports (all planes), a T0's uplinks (all
// planes), the links down into a T0, and in three tiers the T1-T2 links out of a pod and into
// it each act as one link of their summed capacity: a bundle. A flow is then one path of at
// most six bundles instead of 8 planes x 16 sampled paths (272 entries), and flows between
// like pairs get like rates and finish together, so a training step batches them into few
// recomputations. This is exact for the fluid model without faults (the flow level applies
// none) and is what MRC converges to: it moves off EVs that see ECN, evening out what
// per-packet spraying leaves uneven [MRC §2.1]. RoCE keeps one ECMP-hashed path per plane,
// and other topologies the sampled paths.

// bundleLinks gives every directed link of Clos or fat-tree l its bundle, numbered from first,
// and returns the map, the bundles' capacities in bits/s and the routing table: each host's
// NIC ports, each T0's uplinks and the links down into it, and in three tiers the T1-T2 links
// out of each pod and into it, each over all planes.
// A member adds wire(d), its directed link d's wire rate in bits/s (flowRouter.wireRate).
func bundleLinks(l *topo.Layout, links []topo.Link, first int, wire func(d int) float64) ([]int32, []float64, *bundleTable) {
	d := l.Dims()
	bt := &bundleTable{d: d, hop: l.Params().HopLatency}
	pods := max(d.Pods, 1)
	// Bundle ids: hosts, then T0s, then pods, each up (even) and down (odd).
	bt.hostB = make([]int32, 2*d.Hosts)
	bt.t0B = make([]int32, 2*d.T0s)
	bt.podB = make([]int32, 2*pods)
	caps := make([]float64, 2*(d.Hosts+d.T0s+pods))
	for i := range bt.hostB {
		bt.hostB[i] = int32(first + i)
	}
	for i := range bt.t0B {
		bt.t0B[i] = int32(first + 2*d.Hosts + i)
	}
	for i := range bt.podB {
		bt.podB[i] = int32(first + 2*(d.Hosts+d.T0s) + i)
	}
	out := make([]int32, 2*len(links))
	for k, lk := range links {
		var base []int32
		var group int
		switch lk.Level {
		case 0:
			base, group = bt.hostB, lk.A.Node // the lower end is the host
		case 1, 2:
			_, _, idx, ok := l.Locate(lk.A.Node) // a T0 (level 1) or a T1 (level 2)
			if !ok {
				out[2*k], out[2*k+1] = -1, -1
				continue
			}
			base, group = bt.t0B, idx
			if lk.Level == 2 {
				base, group = bt.podB, idx/max(d.T1PerPod, 1)
			}
		default:
			out[2*k], out[2*k+1] = -1, -1
			continue
		}
		for dir := range 2 {
			id := base[2*group+dir]
			out[2*k+dir] = id
			caps[int(id)-first] += wire(2*k + dir)
		}
	}
	return out, caps, bt
}

// scenarioFlowRouter is newFlowRouter for sc's transport (its flow model, flowModelOf): an
// *InputError when the transport has no flow-level model.
func scenarioFlowRouter(sc *scenario.Scenario, t topo.Topology, domain int, upRate sim.Rate, upLat sim.Time) (*flowRouter, []float64, error) {
	m, name, err := flowModelOf(sc, t)
	if err != nil {
		return nil, nil, err
	}
	hop, _ := sc.Transport.Block().(transport.HopRateLimiter)
	r, caps := newFlowRouter(t, m, hop, sc.Run.Seed, domain, upRate, upLat)
	r.name = name
	r.ecmpShared = sc.Fabric.ECMPSeed == "shared"
	return r, caps, nil
}

// payloadShare is the fraction of a fabric link's rate that carries payload under flow model
// m: a full data packet's payload over its wire bytes, (WireBytes - HeaderBytes) / WireBytes
// (MRC's default 4,096 B payload in 4,230 B on the wire: 0.968). The flow level counts
// payload bytes, so running fabric links at this rate charges every transfer its headers
// (1 MiB at 50 Gb/s: 173.3 us rather than 167.8 us), as the packet level does. 1 when m
// gives no sizes.
func payloadShare(m transport.FlowModel) float64 {
	if m.WireBytes <= 0 || m.HeaderBytes <= 0 || m.HeaderBytes >= m.WireBytes {
		return 1
	}
	return float64(m.WireBytes-m.HeaderBytes) / float64(m.WireBytes)
}

// newFlowRouter returns the router for flow model m and the directed link capacities in
// bits/s of payload (fabric links at their wire rate, wireRate: the line rate or less under
// hop's link-level flow control, x payloadShare(m); scale-up links at upRate when domain >
// 1; bundles, for a spraying transport on a Clos or fat-tree, at their members' summed
// payload rates). hop is the transport's block as a transport.HopRateLimiter, nil for none.
func newFlowRouter(t topo.Topology, m transport.FlowModel, hop transport.HopRateLimiter, seed uint64, domain int, upRate sim.Rate, upLat sim.Time) (*flowRouter, []float64) {
	r := &flowRouter{t: t, links: t.Links(), planes: t.Params().Planes, spray: m.Spray, seed: seed, domain: domain, nvlLat: upLat, model: m, wire: int64(max(m.WireBytes, 0)), hop: hop}
	r.paths = max(m.Paths, 1)
	if m.Spray && m.Paths <= 0 {
		r.paths = transport.DefaultFlowPaths
	}
	share := payloadShare(m)
	caps := make([]float64, 2*len(r.links), 2*len(r.links)+2*t.NumHosts())
	for d := range caps {
		caps[d] = r.wireRate(d, float64(r.links[d/2].Rate)) * share
	}
	r.nvl = len(caps)
	if domain > 1 {
		for range 2 * t.NumHosts() {
			caps = append(caps, float64(upRate))
		}
	}
	if l, ok := t.(*topo.Layout); ok && r.spray {
		var bcaps []float64
		r.bundle, bcaps, r.bt = bundleLinks(l, r.links, len(caps), func(d int) float64 { return r.wireRate(d, float64(r.links[d/2].Rate)) })
		r.bt.fwdFabric, r.bt.fwdHost = l.Params().FabricLink.TxTime(r.wire), l.Params().HostLink.TxTime(r.wire)
		for i := range bcaps {
			bcaps[i] *= share
		}
		caps = append(caps, bcaps...)
	}
	caps = r.withPlaneBundles(caps, share)
	return r, caps
}

// wireRate is the most directed link d (link d/2 of Topology.Links, from its A end to its B
// end when d is even) carries in wire bits/s when it runs at rate bits/s (its built rate or
// a degrade's): rate itself, or the transport's link-level limit when that is lower (r.hop:
// InfiniBand credits cap a link at its receiving end's buffer per VL over the credit round
// trip, fabric.CreditRate, as the packet level's credit loop runs it; the receiving end is
// a host adapter when it is a host). The flow level runs the link at this times
// payloadShare, so a credit-starved fabric is as slow as at packet level [IBTA vol 1 §7.9].
func (r *flowRouter) wireRate(d int, rate float64) float64 {
	if r.hop == nil || rate <= 0 {
		return rate
	}
	l := &r.links[d/2]
	to := l.B.Node
	if d%2 == 1 {
		to = l.A.Node
	}
	h := float64(r.hop.HopRate(sim.Rate(rate), l.Delay, to >= 0 && to < r.t.NumHosts()))
	if h < 0 || h >= rate {
		return rate
	}
	return h
}

// bundleHostPorts bundles each host's NIC ports for a transport that does not spray (RoCE)
// on a Clos or fat-tree of several planes, as MRC's bundles do (bundleLinks): a host's QPs
// to every peer stripe equally over the planes (pick: Paths QPs per plane), so each of its
// ports in a direction carries the same share of the same flows, and the ports together act
// as one link of their summed capacity; the max-min rates are the same with a quarter to a
// half of the (link, coefficient) entries per flow (8 planes: 18 instead of 32 across a
// Clos, 2 instead of 16 under one T0). Only without faults (a port failing alone breaks the
// symmetry; the fault model reads the per-plane links): the caller checks. It returns caps
// with the bundles' capacities appended (bits/s of payload, from caps) and sets hostPort;
// caps unchanged when the fabric is no Clos or fat-tree, has one plane or the transport
// sprays.
func (r *flowRouter) bundleHostPorts(caps []float64) []float64 {
	if _, ok := r.t.(*topo.Layout); !ok || r.spray || r.bundle != nil || r.planes < 2 || r.dead != nil {
		return caps
	}
	first := len(caps)
	hosts := r.t.NumHosts()
	port := make([]int32, 2*len(r.links))
	for i := range port {
		port[i] = -1
	}
	caps = append(caps, make([]float64, 2*hosts)...)
	for k, lk := range r.links {
		if lk.Level != 0 || lk.A.Node < 0 || lk.A.Node >= hosts {
			continue
		}
		for dir := range 2 {
			id := first + 2*lk.A.Node + dir
			port[2*k+dir] = int32(id)
			caps[id] += caps[2*k+dir]
		}
	}
	r.hostPort = port
	r.routes, r.routeLinks, r.routeUsed = nil, nil, 0
	return caps
}

// linkBundles is what a flow-level link series credits each directed link of the fabric
// from (flowLinkFeed): the link's bundle (MRC's bundles or the host port bundles), -1 for a
// link the flows cross themselves; nil when nothing is bundled.
func (r *flowRouter) linkBundles() []int32 {
	if r.bundle != nil {
		return r.bundle
	}
	return r.hostPort
}

// Paths implements flow.Router.
func (r *flowRouter) Paths(src, dst int, key uint64, buf []flow.Path) ([]flow.Path, sim.Time, error) {
	r.scratch = r.scratch[:0]
	if r.domain > 1 && src/r.domain == dst/r.domain {
		r.scratch = append(r.scratch, int32(r.nvl+2*src), int32(r.nvl+2*dst+1))
		return append(buf[:0], flow.Path{Links: r.scratch, Weight: 1}), r.nvlLat, nil
	}
	n := r.t.NumPaths(src, dst)
	if n == 0 {
		return nil, 0, fmt.Errorf("no path from h%d to h%d in the topology", src, dst)
	}
	if r.pt != nil {
		return r.planeBundled(src, dst, buf)
	}
	if r.bundle != nil {
		return r.bundled(src, dst, buf)
	}
	cacheable := r.dead == nil && !r.spray
	if cacheable && r.routes != nil {
		if v, ok := r.routes.get(routeKey{int32(src), int32(dst), key}); ok {
			buf = buf[:0]
			c, o := r.routeLinks[v.ref>>20], int(v.ref&(routeChunk-1))
			for range v.paths {
				k := int(c[o])
				buf = append(buf, flow.Path{Links: c[o+1 : o+1+k : o+1+k], Weight: 1})
				o += 1 + k
			}
			return buf, v.lat, nil
		}
	}
	var live func(i int) bool
	if r.dead != nil {
		live = func(i int) bool { return r.pathLive(src, dst, i) }
	}
	idx := r.pick(src, dst, n/r.planes, key, live)
	buf = buf[:0]
	var lat sim.Time
	// Carve every path's links from one scratch array; grow it first so slices stay valid.
	need := len(idx) * (topo.MaxHops + 1)
	if cap(r.scratch) < need {
		r.scratch = make([]int32, 0, need)
	}
	hashed := r.model.QPTuple.Proto != 0 && !r.spray
	var owner uint64
	if hashed {
		owner = r.ownerOf(key)
	}
	for k, i := range idx {
		start := len(r.scratch)
		l, ok := sim.Time(0), false
		if hashed {
			// Path k is QP q = k mod paths on plane k / paths: QP q x planes + plane of the
			// pair (keepQPs), on the path its packets hash to unless that is not live.
			plane, q := k/r.paths, k%r.paths
			r.hdr = fabric.Packet{Proto: r.model.QPTuple.Proto, Src: int32(src), Dst: int32(dst), DstPort: r.model.QPTuple.DstPort,
				SrcPort: r.model.QPTuple.Port(r.seed, src, dst, owner, q*r.planes+plane, r.paths*r.planes)}
			if l, ok = r.hashedWalk(src, dst, plane, &r.hdr); ok && live != nil && !r.live(r.scratch[start:]) {
				r.scratch, ok = r.scratch[:start], false
			}
		}
		if !ok {
			var err error
			if l, err = r.walk(src, dst, i); err != nil {
				return nil, 0, err
			}
		}
		lat = max(lat, l)
		if r.hostPort != nil {
			for j := start; j < len(r.scratch); j++ {
				if b := r.hostPort[r.scratch[j]]; b >= 0 {
					r.scratch[j] = b
				}
			}
		}
		buf = append(buf, flow.Path{Links: r.scratch[start:len(r.scratch):len(r.scratch)], Weight: 1})
	}
	if r.dead != nil && !r.spray {
		lat = r.detours(src, dst, key, idx, buf, lat)
	}
	if cacheable && r.routeUsed < routeCacheLinks {
		r.cacheRoute(routeKey{int32(src), int32(dst), key}, buf, lat)
	}
	return buf, lat, nil
}

// cacheRoute stores route (paths, latency lat) under k in flowRouter.routes; a route longer
// than a chunk is not stored.
func (r *flowRouter) cacheRoute(k routeKey, paths []flow.Path, lat sim.Time) {
	need := 0
	for _, p := range paths {
		need += 1 + len(p.Links)
	}
	if need > routeChunk {
		return
	}
	if r.routes == nil {
		r.routes = &routeTable{}
	}
	if n := len(r.routeLinks); n == 0 || len(r.routeLinks[n-1])+need > routeChunk {
		r.routeLinks = append(r.routeLinks, make([]int32, 0, routeChunk))
	}
	ci := len(r.routeLinks) - 1
	c := r.routeLinks[ci]
	v := routeVal{ref: int32(ci<<20 | len(c)), paths: int32(len(paths)), lat: lat}
	for _, p := range paths {
		c = append(c, int32(len(p.Links)))
		c = append(c, p.Links...)
	}
	r.routeLinks[ci] = c
	r.routeUsed += need
	r.routes.put(k, v)
}

// detours replaces every path of buf (path indices idx) that crosses a dead link by a
// detour, when one exists, and returns the latency over the paths.
func (r *flowRouter) detours(src, dst int, key uint64, idx []int, buf []flow.Path, lat sim.Time) sim.Time {
	for k := range buf {
		if r.live(buf[k].Links) {
			continue
		}
		if links, l := r.detour(src, dst, idx[k]%r.planes, mix(key^uint64(k)<<24^uint64(src)<<40^uint64(dst))); links != nil {
			buf[k].Links = links
			lat = max(lat, l)
		}
	}
	return lat
}

// live reports whether none of links is dead.
func (r *flowRouter) live(links []int32) bool {
	for _, d := range links {
		if int(d) < len(r.dead) && r.dead[d] {
			return false
		}
	}
	return true
}

// detour returns a shortest path from host src to host dst over the links that are not dead,
// leaving src by its NIC port in plane, and its latency: what ECMP over the surviving links
// gives once routing reconverged (runner/reroute.go: shortest paths over the links that are
// up, hosts not forwarding), equal next hops chosen by the hash h. A RoCE flow takes it when
// no minimal path of the built topology is live (a torus link: its neighbours' one minimal
// path). nil when dst is cut off.
func (r *flowRouter) detour(src, dst, plane int, h uint64) ([]int32, sim.Time) {
	hosts := r.t.NumHosts()
	if r.in == nil {
		r.in = make([][]int32, r.t.NumNodes())
		for k, l := range r.links {
			r.in[l.B.Node] = append(r.in[l.B.Node], int32(2*k))
			r.in[l.A.Node] = append(r.in[l.A.Node], int32(2*k+1))
		}
	}
	tail := func(d int32) int {
		if d%2 == 0 {
			return r.links[d/2].A.Node
		}
		return r.links[d/2].B.Node
	}
	head := func(d int32) int {
		if d%2 == 0 {
			return r.links[d/2].B.Node
		}
		return r.links[d/2].A.Node
	}
	dist := make([]int32, r.t.NumNodes())
	for i := range dist {
		dist[i] = -1
	}
	dist[dst] = 0
	queue := []int{dst}
	for q := 0; q < len(queue); q++ {
		x := queue[q]
		for _, d := range r.in[x] {
			u := tail(d)
			if r.dead[d] || dist[u] >= 0 || (u < hosts && u != src) {
				continue
			}
			dist[u] = dist[x] + 1
			if u >= hosts {
				queue = append(queue, u)
			}
		}
	}
	k, ok := r.t.LinkOf(src, plane)
	if !ok || dist[src] < 0 {
		return nil, 0
	}
	d0 := int32(2 * k)
	if r.links[k].A.Node != src {
		d0++
	}
	n := head(d0)
	if r.dead[d0] || dist[n] != dist[src]-1 {
		return nil, 0 // the plane's NIC port is dead, or not on a shortest path
	}
	links := []int32{d0}
	lat := r.links[k].Delay
	var cand []int32
	for n != dst {
		cand = cand[:0]
		for _, d := range r.in[n] { // n's outgoing links are the reverses of its incoming ones
			o := d ^ 1
			m := head(o)
			if !r.dead[o] && dist[m] == dist[n]-1 && (m >= hosts || m == dst) {
				cand = append(cand, o)
			}
		}
		if len(cand) == 0 {
			return nil, 0
		}
		h = mix(h + 0x9e3779b97f4a7c15)
		o := cand[h%uint64(len(cand))]
		links = append(links, o)
		lat += r.links[o/2].Delay + r.storeForward(int(o/2))
		n = head(o)
	}
	return links, lat
}

// bundled routes an MRC flow from src to dst as perfect spraying over bundles: one path of
// the source's NIC ports, the source T0's uplinks unless both hosts share a T0, in three tiers
// the source pod's T1-T2 links and the destination pod's unless they share a pod, the links
// down into the destination's T0, and the destination's NIC ports. Every minimal path of
// every plane crosses the same bundles (bundledWalk, which maps walked paths, agrees:
// TestFlowBundles).
func (r *flowRouter) bundled(src, dst int, buf []flow.Path) ([]flow.Path, sim.Time, error) {
	bt := r.bt
	d := &bt.d
	if src < 0 || src >= d.Hosts || dst < 0 || dst >= d.Hosts || src == dst {
		return r.bundledWalk(src, dst, buf) // the walk reports the error
	}
	t0s, t0d := src/d.T0Down, dst/d.T0Down
	r.scratch = append(r.scratch[:0], bt.hostB[2*src])
	if t0s != t0d {
		r.scratch = append(r.scratch, bt.t0B[2*t0s])
		if ps, pd := t0s/d.T0PerPod, t0d/d.T0PerPod; d.Tiers == 3 && ps != pd {
			r.scratch = append(r.scratch, bt.podB[2*ps], bt.podB[2*pd+1])
		}
		r.scratch = append(r.scratch, bt.t0B[2*t0d+1])
	}
	r.scratch = append(r.scratch, bt.hostB[2*dst+1])
	buf = append(buf[:0], flow.Path{Links: r.scratch, Weight: 1})
	// Every bundle is one hop; after the first, each also holds one packet (store and
	// forward): fabric links, then the destination's host link.
	hops := sim.Time(len(r.scratch))
	return buf, hops*bt.hop + (hops-2)*bt.fwdFabric + bt.fwdHost, nil
}

// bundledWalk is bundled by walking the first minimal path of each plane and mapping its
// links to their bundles: one path per plane, each the same list.
func (r *flowRouter) bundledWalk(src, dst int, buf []flow.Path) ([]flow.Path, sim.Time, error) {
	need := r.planes * (topo.MaxHops + 1)
	if cap(r.scratch) < need {
		r.scratch = make([]int32, 0, need)
	}
	buf = buf[:0]
	var lat sim.Time
	for plane := range r.planes {
		start := len(r.scratch)
		l, err := r.walk(src, dst, plane)
		if err != nil {
			return nil, 0, err
		}
		lat = max(lat, l)
		for i := start; i < len(r.scratch); i++ {
			if b := r.bundle[r.scratch[i]]; b >= 0 {
				r.scratch[i] = b
			}
		}
		buf = append(buf, flow.Path{Links: r.scratch[start:len(r.scratch):len(r.scratch)], Weight: 1})
	}
	return buf, lat, nil
}

// pick chooses the path indices a flow from src to dst (per paths in each plane) uses: a
// spraying transport (MRC) up to paths/planes evenly spaced (from a hashed offset) in every
// plane; one that does not (RoCE) one hashed by (src, dst, key) per QP, paths QPs in every
// plane. With live (a failure model: nil when every path is up), spraying drops the sampled
// paths that are not live, and samples every live path when none of its own is; a hashed
// QP rehashes a choice that is not live until it finds one (a flow on a live path keeps
// it). When nothing is live the choice stands (the flow stalls).
//
// The indices are in a buffer of r's, valid until the next pick.
func (r *flowRouter) pick(src, dst, per int, key uint64, live func(i int) bool) []int {
	idx := r.pickBuf[:0]
	if r.spray {
		// Evenly spaced from an offset of the flow's own, so that flows sampling fewer paths
		// than there are still cover every uplink together (a fixed offset would leave the
		// paths between the samples unused by every flow).
		m := max(1, min(per, r.paths/r.planes))
		off := int(mix(mix(r.seed+0x632be59bd9b4e019)^uint64(src)<<40^uint64(dst)<<16^key*0x9e3779b97f4a7c15) % uint64(per))
		for plane := range r.planes {
			for k := range m {
				idx = append(idx, ((k*per/m+off)%per)*r.planes+plane)
			}
		}
		if live == nil {
			r.pickBuf = idx
			return idx
		}
		kept := make([]int, 0, len(idx))
		for _, i := range idx {
			if live(i) {
				kept = append(kept, i)
			}
		}
		if len(kept) == 0 {
			// Every sampled path is dead: spray over the live paths there are (up to the
			// sample size), as MRC replaces retired EVs by paths known good.
			for j := 0; j < per*r.planes && len(kept) < m*r.planes; j++ {
				if live(j) {
					kept = append(kept, j)
				}
			}
		}
		if len(kept) == 0 {
			r.pickBuf = idx
			return idx
		}
		return kept
	}
	// One ECMP-hashed path per QP: paths (qps_per_peer) QPs on each plane, the transfer
	// striped over them equally, as at packet level. The seed is mixed on its own first, so
	// seeds that differ only in low bits do not collide with the plane and QP numbers.
	flow := mix(mix(r.seed+0x632be59bd9b4e019) ^ uint64(src)<<40 ^ uint64(dst)<<16 ^ key*0x9e3779b97f4a7c15)
	for plane := range r.planes {
		for q := range r.paths {
			h := mix(flow ^ uint64(plane)<<32 ^ uint64(q))
			i := int(h%uint64(per))*r.planes + plane
			if live != nil && !live(i) {
				i = r.rehash(h, per, plane, i, live)
				for d := 1; r.crossPlane && !live(i) && d < r.planes; d++ {
					// A restarted job's QP on a plane it cannot reach: the next plane
					// that has a live path.
					p2 := (plane + d) % r.planes
					h2 := mix(h ^ uint64(p2)<<48)
					if c := r.rehash(h2, per, p2, int(h2%uint64(per))*r.planes+p2, live); live(c) {
						i = c
					}
				}
			}
			idx = append(idx, i)
		}
	}
	r.pickBuf = idx
	return idx
}

// rehash returns the path a RoCE QP of hash h takes in plane when its first choice (path
// index i) is not live: the first live one of a sequence of further hashes of h, else of a
// scan from i, else i (nothing is live: it stalls). Flows leaving one dead path spread over
// the live ones as a rehash would.
func (r *flowRouter) rehash(h uint64, per, plane, i int, live func(i int) bool) int {
	for a := 1; a <= 2*min(per, 64); a++ {
		c := int(mix(h+uint64(a)*0x9e3779b97f4a7c15)%uint64(per))*r.planes + plane
		if live(c) {
			return c
		}
	}
	for k := 1; k < per; k++ {
		c := ((i/r.planes+k)%per)*r.planes + plane
		if live(c) {
			return c
		}
	}
	return i
}

// pathLive reports whether path i from src to dst avoids every dead link.
func (r *flowRouter) pathLive(src, dst, i int) bool {
	rt, err := r.t.Path(src, dst, i)
	if err != nil {
		return false
	}
	node, port := src, int(rt.Plane)
	ports := rt.Ports()
	for h := 0; ; h++ {
		k, ok := r.t.LinkOf(node, port)
		peer, ok2 := r.t.Peer(node, port)
		if !ok || !ok2 {
			return false
		}
		d := 2 * k
		if r.links[k].A.Node != node {
			d++
		}
		if d < len(r.dead) && r.dead[d] {
			return false
		}
		if h == len(ports) {
			return true
		}
		node, port = peer.Node, int(ports[h])
	}
}

// storeForward is what a flow's one-way latency adds for directed or undirected link k after
// the path's first: one full packet's serialisation at k's rate, since a switch forwards a
// packet only once it holds all of it (store and forward), so the last packet reaches the
// destination that much after the bottleneck has sent it, per hop. The first link's
// serialisation is the transfer itself (the fluid part). 0 without a wire size.
func (r *flowRouter) storeForward(k int) sim.Time {
	return r.links[k].Rate.TxTime(r.wire)
}

// setOwner records owner (transport.FlowOwner, CollectiveOwner) as the connection behind
// Router key key (transport.QPSourcePort); a caller registers a key before its first Paths call.
func (r *flowRouter) setOwner(key, owner uint64) {
	if r.model.QPTuple.Proto == 0 || r.spray {
		return
	}
	r.owners.put(key, owner)
}

// ownerOf returns the owner registered for key, else one of key's own (a flow the packet
// level has no counterpart of keeps a hash of its own, the same in distribution).
func (r *flowRouter) ownerOf(key uint64) uint64 {
	if o, ok := r.owners.get(key); ok {
		return o
	}
	return 1<<62 | key>>2
}

// hashedWalk appends to r.scratch the directed links a packet with header hdr (its 5-tuple,
// FlowModel.QPTuple) takes from host src's NIC port on plane to host dst, every switch
// choosing among the equal-cost egresses of its forwarding table (Topology.Routes, as
// topo.BuildTopology installs it) by the ECMP hash of hdr with its own seed
// (fabric.ECMPChoice, fabric.ECMPSeeds): the path the packet level's switches give that QP
// (fabric.Network.ECMPPath; TestHashedWalkMatchesFabric). It returns the path's one-way
// latency as walk does, and false, with r.scratch as it was, when a port is unconnected, a
// switch has no route or the walk exceeds topo.MaxHops. It reads the compact tables of
// runner/flowwalk.go (walkTables), built on its first call: the same path as reading the
// topology hop by hop (TestHashedWalkCompactMatchesTopology), a fraction of the cache lines.
func (r *flowRouter) hashedWalk(src, dst, plane int, hdr *fabric.Packet) (sim.Time, bool) {
	w := r.wt
	if w == nil {
		w = r.buildWalkTables(fabric.ECMPSeeds(r.seed, r.t.NumNodes(), r.ecmpShared))
		r.wt = w
	}
	if src < 0 || src >= w.hosts {
		return 0, false
	}
	first := len(r.scratch)
	var lat sim.Time
	d32 := int32(dst)
	h := w.hops
	n, nports, tier, down := src, int(w.hostPort[src+1]-w.hostPort[src]), -1, 0
	if h != nil {
		h = h[w.hostPort[src]:w.hostPort[src+1]]
	}
	port := plane
	for hop := 0; hop <= topo.MaxHops; hop++ { // at most MaxHops + 1 links, as walk's paths
		if port < 0 || port >= nports {
			break
		}
		var e walkHop
		if h == nil {
			e = w.layoutHop(n, port, tier, down)
		} else {
			e = h[port]
		}
		if e.d < 0 {
			break
		}
		r.scratch = append(r.scratch, e.d)
		lat += e.lat
		node := e.peer
		if node == d32 {
			return lat, true
		}
		if int(node) < w.hosts {
			break
		}
		s := &w.sw[int(node)-w.hosts]
		n, nports, tier, down = int(node), int(s.ports), int(s.tier), int(s.down)
		if h != nil {
			h = w.hops[s.first : s.first+s.ports]
		}
		switch {
		case s.table >= 0:
			g := w.tables[s.table].Lookup(d32)
			if len(g) == 0 {
				port = -1
				break
			}
			port = int(g[fabric.ECMPChoice(s.seed, hdr, len(g))])
		case d32 >= s.lo && d32 < s.hi:
			if s.size == 1 {
				port = int(s.base + (d32-s.lo)/s.width*s.stride)
			} else {
				port = int(s.base+(d32-s.lo)/s.width*s.stride) + fabric.ECMPChoice(s.seed, hdr, int(s.size))
			}
		case s.upN > 0:
			port = int(s.upLo) + fabric.ECMPChoice(s.seed, hdr, int(s.upN))
		default:
			port = -1
		}
	}
	r.scratch = r.scratch[:first]
	return 0, false
}

// walk appends path i from src to dst as directed links to r.scratch and returns its one-way
// latency.
func (r *flowRouter) walk(src, dst, i int) (sim.Time, error) {
	rt, err := r.t.Path(src, dst, i)
	if err != nil {
		return 0, err
	}
	var lat sim.Time
	first := len(r.scratch)
	step := func(node, port int) (int, error) {
		k, ok := r.t.LinkOf(node, port)
		peer, ok2 := r.t.Peer(node, port)
		if !ok || !ok2 {
			return 0, fmt.Errorf("path %d from h%d to h%d leaves %s by unconnected port %d", i, src, dst, r.t.NodeName(node), port)
		}
		d := int32(2 * k)
		if r.links[k].A.Node != node {
			d++
		}
		if len(r.scratch) > first {
			lat += r.storeForward(k)
		}
		r.scratch = append(r.scratch, d)
		lat += r.links[k].Delay
		return peer.Node, nil
	}
	node, err := step(src, int(rt.Plane))
	if err != nil {
		return 0, err
	}
	for _, p := range rt.Ports() {
		if node, err = step(node, int(p)); err != nil {
			return 0, err
		}
	}
	if node != dst {
		return 0, fmt.Errorf("path %d from h%d ends at %s, not h%d", i, src, r.t.NodeName(node), dst)
	}
	return lat, nil
}

// mix is splitmix64's finaliser: a hash of x.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
