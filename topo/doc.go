// Package topo describes network topologies as pure data: which nodes and links exist, how
// they are named and numbered, how switches route, and which paths join two hosts. It does not
// depend on the packet fabric; a builder instantiates a description into a simulation.
//
// # Multi-plane Clos
//
// A Clos config (2 or 3 tiers) is validated and derived into a Layout, which answers every
// other question. A multi-plane fabric is Planes identical, disjoint copies of one Clos;
// every host has one NIC port in each plane [MRC §2.2].
//
// Per plane, with R = Radix, H = HostLink, F = FabricLink, p0, p1 = ParallelLinks[0], [1]:
//
//	T0:  d0 down ports (hosts) + u0 up ports = R,   d0 x H / (u0 x F) = oversubscription[0]
//
// 2-tier (leaf-spine): each T0 connects to every T1 with p0 parallel links.
//
//	T1s = u0/p0 (each with R down ports), T0s <= R/p0, hosts <= d0 x R/p0
//
// 3-tier: a pod is T0s plus T1s, each T0 connected to every T1 of its pod with p0 links; T1
// j of every pod connects to every T2 of core group j with p1 links. With oversubscription =
// 1 and p0 = p1 = 1 this is the k-ary fat-tree of Al-Fares et al., SIGCOMM 2008 (k = R: k
// pods of k/2 + k/2 switches, (k/2)^2 cores, k^3/4 hosts).
//
//	T1:  d1 down + u1 up = R,   d1/u1 = oversubscription[1]
//	T1s per pod = u0/p0,   T0s per pod = d1/p0
//	core group = u1/p1 T2s,   T2s = (u0/p0) x (u1/p1),   each T2 has p1 links to every pod
//	pods <= R/p1,   hosts <= pods x (d1/p0) x d0
//
// Examples: 8 planes of radix 512 at 100G in 2 tiers give 131,072 hosts and 768 switches per
// plane (512 T0s, 256 T1s); one plane of radix 64 gives 2,048 hosts (96 switches) in 2 tiers
// and 65,536 hosts (5,120 switches) in 3.
//
// Clos.Hosts below the maximum builds only ceil(hosts/d0) T0s and, in 3 tiers, only the pods
// they need; the last T0 and the last pod may be partly filled. Every T1 of a built pod and
// every T2 is built, so the uplinks of every built switch are connected; down ports toward
// hosts, T0s or pods that are not built stay unconnected (Layout.Peer reports them), and port
// numbers never shift.
//
// # Numbering and names
//
// Node indices: hosts first (host h is node h), then plane by plane the T0s, T1s and T2s, each
// tier by index (Layout.SwitchNode). A switch's index counts within its tier and plane; in 3
// tiers T0 t is T0 t%(d1/p0) of pod t/(d1/p0), T1 g is T1 g%(u0/p0) of pod g/(u0/p0), and T2 s
// is switch s%(u1/p1) of core group s/(u1/p1).
//
//	host           "h17"
//	switch         "p3.t0-17", "p3.t1-5", "p3.t2-2"     (plane, tier, index)
//	host port      "h17.p3"                             local port 3 = NIC port for plane 3
//	switch port    "p3.t0-17.down5", "p3.t0-17.up5"     down ports first, up ports after
//	link           named after its lower end's port: "h17.p3", "p3.t0-17.up5", "p3.t1-5.up2"
//
// Local ports of a switch: 0..down-1 are down ports ("downK" is local port K), down..R-1 are
// up ports ("upK" is local port down+K). T0s have d0 down ports, T1s d1 (2-tier: R, no up
// ports), T2s R down ports. The wiring, in local port numbers:
//
//	host h, port p          -> plane p T0 h/d0, down port h%d0 (the same T0 index in every plane)
//	T0 t, up port d0+u      -> T1 u/p0 of t's pod, down port (t's index in pod) x p0 + u%p0
//	T1 j of pod q, up d1+v  -> T2 v/p1 of core group j, down port q x p1 + v%p1
//
// so T1 down port k leads to the pod's T0 k/p0 (its up port d0 + j x p0 + k%p0) and T2 down
// port k to T1 j of pod k/p1 (its up port d1 + (T2 index in group) x p1 + k%p1).
//
// # Routing and paths
//
// Layout.Routes gives each switch an up/down ECMP table: hosts below it by range with their
// down ports, everything else up over all uplinks (parallel links included). Layout.Path
// enumerates the minimal source routes between two hosts, indexed in mixed radix with the
// plane as the lowest digit; Layout.NumPaths counts them (Planes x 1 on one T0, Planes x u0 x
// p0 within a pod or 2-tier, Planes x u0 x u1 x p1 x p0 across pods). Layout.SpreadRoutes
// assigns permutation traffic link-disjoint paths by bipartite edge colouring.
//
// References: [MRC §2.2] multi-plane fabrics; Al-Fares, Loukissas, Vahdat, "A Scalable,
// Commodity Data Center Network Architecture", SIGCOMM 2008 (k-ary fat-tree).
package topo
