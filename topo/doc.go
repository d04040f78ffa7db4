// Package topo describes network topologies as pure data: which nodes and links exist, how
// they are named and numbered, how switches route, and which paths join two hosts. It does not
// depend on the packet fabric; a builder (BuildTopology) instantiates a description into a
// simulation.
//
// # Kinds
//
// Every kind is a configuration (a Spec: YAML keys, Validate returning *FieldError, Topology)
// whose Topology answers the same questions (see Topology):
//
//	Clos     multi-plane 2- or 3-tier Clos                    -> *Layout   (kind "clos")
//	FatTree  k-ary 3-tier fat-tree, a Clos{Tiers: 3, Radix: k} -> *Layout   (kind "fat_tree")
//	Rail     rail-optimised (or rail-only) GPU fabric         -> *Graph    (kind "rail")
//	Torus    3D torus of chips, optionally twisted and OCS    -> *Graph    (kind "torus")
//	Mesh     switchless full mesh                             -> *Graph    (kind "mesh")
//
// A Graph is built from explicit node and link lists (NewGraph takes any); it computes
// minimal-path forwarding tables and enumerates minimal paths itself (see Routing and paths).
//
// # Switchless kinds: a chip and its router
//
// A torus chip or mesh node has no switch between it and its neighbours: it forwards traffic
// itself. lockstep models each one as a host (the chip's endpoint: one NIC port, plane 0)
// joined by one internal link to its own router, a switch that carries the chip's torus or
// mesh links. The internal link's rate is the sum of the chip's links (or the kind's
// host_link) so it never throttles the chip, and its latency is 0: a hop's forwarding latency
// is in the chip-to-chip link's HopLatency. Routers are counted in Sizing.Routers, not
// Switches, and hop counts are chip-to-chip links: a path of d torus hops crosses d+1 routers.
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
// # Routing and paths of a Clos
//
// Layout.Routes gives each switch an up/down ECMP table: hosts below it by range with their
// down ports, everything else up over all uplinks (parallel links included). Layout.Path
// enumerates the minimal source routes between two hosts, indexed in mixed radix with the
// plane as the lowest digit; Layout.NumPaths counts them (Planes x 1 on one T0, Planes x u0 x
// p0 within a pod or 2-tier, Planes x u0 x u1 x p1 x p0 across pods). Layout.SpreadRoutes
// assigns permutation traffic link-disjoint paths by bipartite edge colouring.
//
// Layout.LinkPath gives the same paths as directed link ids (2k for link k of Links from A to
// B, climbing; 2k+1 descending) with their latency, for the flow-level engine.
//
// # Rail-optimised fabrics
//
// Rail: GPU g of every server is on rail g, host h = server x GPUsPerServer + g. Rail g has
// ceil(servers / (Radix/2)) T0s of Radix/2 down and Radix/2 up ports; a spine of Radix/2 T1s
// joins the T0s of every rail (each T0 one link to each T1), at most Radix T0s per plane. GPUs
// of one rail under one T0 are 0 fabric hops apart, all others 2. With RailOnly there is no
// spine: a rail is one switch (servers <= Radix) or a leaf-spine of its own, and GPUs on
// different rails have no path in the packet fabric (NumPaths 0, LinkPath an error, bisection
// 0): their traffic must first cross the scale-up domain to the right rail [Wang et al.,
// "Rail-only", HotI 2024]. Planes > 1 copies the fabric: dual-plane (HPN) puts each NIC's two
// ports on T0s of two independent planes [Qian et al., "Alibaba HPN", SIGCOMM 2024].
//
// # Scale-up domains
//
// ScaleUp (in Clos, FatTree and Rail) groups hosts h with equal h / ScaleUp.GPUs into an NVLink
// domain (8 for HGX, 72 for GB200 NVL72). The domain is not in the packet fabric: Params
// carries ScaleUpGPUs, ScaleUpRate and ScaleUpLatency for the runner to model intra-domain
// traffic separately, and Sizing.ScaleUp reports it (NVL72 at 900 GB/s per GPU: 129.6 TB/s
// aggregate, both directions).
//
// # 3D torus
//
// Torus{Dims: k1 x k2 x k3}: chip c at x = c % k1, y = c / k1 % k2, z = c / (k1 k2) is host c;
// its router is node N + c with local ports 0 (the chip), 1 x+, 2 x-, 3 y+, 4 y-, 5 z+, 6 z-.
// Each chip's + link in each dimension goes to the next chip, the last wrapping to the first.
// Diameter and mean distance add per dimension (k/2 and, for even k, k/4 over all ordered
// pairs with self): 16x20x28 has diameter 32 and mean 16; 16x16x16 diameter 24 and mean 12.
// Bisection: the fewest links crossing an axis-aligned cut into equal halves, wrap-around links
// included: 2 k1 k2 across the longest dimension k3 (16x20x28: 640; 16x16x16: 512).
//
// Twisted torus [Jouppi et al., "TPU v4: An Optically Reconfigurable Supercomputer for
// Machine Learning with Hardware Support for Embeddings", ISCA 2023, §2 and §6; Cámara et
// al., "Twisted Torus Topologies for Enhanced Interconnection Networks", IEEE TPDS 2010]: only
// shapes k x k x 2k and k x 2k x 2k (any order; Cloud TPU's 2A=B=C and 2A=2B=C) twist. The
// wrap-around links of every dimension of size k are twisted, those of the 2k dimensions are
// not: the + wrap link leaving a chip at coordinate k-1 of a short dimension arrives at
// coordinate 0 with every long coordinate moved by +k (mod 2k). For 4x4x8 (z long):
//
//	(3, y, z) --x+--> (0, y, (z+4) mod 8)      (x, 3, z) --y+--> (x, 0, (z+4) mod 8)
//	(x, y, 7) --z+--> (x, y, 0)
//
// and for k x 2k x 2k (x short) (k-1, y, z) --x+--> (0, (y+k) mod 2k, (z+k) mod 2k). The twist
// halves the long way round: 4x4x8 twisted has diameter 6 and mean distance 3.4375 against
// 8 and 4, and its smallest axis-aligned halving cut is 64 links against 32 (an upper bound on
// the exact bisection, which Cámara et al. derive).
//
// With OCS the torus is built from cubes of CubeSize^3 chips (TPU v4: 4x4x4 = 64): links
// inside a cube are electrical; every link leaving a cube through a face, wrap-arounds
// included, is optical and passes an optical circuit switch, 3 x CubeSize^2 OCSes in all (one
// per dimension and face position; TPU v4: 48). Torus.Remap swaps the cube of a failed chip
// for a spare: the job keeps its shape and host numbering, the cube's hosts move to the spare
// cube's chips (OCSRemap.Mapping), and the runner pauses the job for OCSSwitchTime.
//
// Routing "minimal" (default) puts every minimal next hop in a router's ECMP group and
// enumerates every minimal path; "dor" (dimension order) keeps one: the lowest-numbered
// minimal port, so x first, then y, then z (on a twisted torus: the lowest dimension whose
// step is minimal). Minimal paths of a large torus cross more than MaxHops routers: NumPaths is
// 0 for them and source routing is off, but tables and LinkPath work at any size.
//
// # Full mesh
//
// Mesh{Nodes: n}: every node linked to every other (PortsPerNode/(n-1) parallel links per
// pair), node i's router node n + i; diameter 1, mean (n-1)/n, bisection (n/2)^2 links.
//
// # Routing and paths of a Graph
//
// Routes: for each destination host, a breadth-first search over the switches from those it
// hangs from (hosts do not forward) gives every switch's distance; a switch's ECMP group is
// its ports toward a node one hop closer. Groups become host ranges where consecutive
// destinations share one, and the group with the most ranges becomes Up, so tables stay as
// small as the host numbering allows. All tables are computed on the first Routes call, in
// O(hosts x (switches + switch links)) time, split over GOMAXPROCS goroutines. The fabric's
// table is one-dimensional (host ranges), which suits a Clos or rail fabric but not a torus:
// a router of a regular torus has about 4 x k2 x k3 entries (x fastest: give the longest
// dimension first), a twisted one about twice that. Measured (2 cores): 16x16x16 torus, 4.2M
// entries, 190 MB, 2s; 32x16x16 twisted, 16M entries, 600 MB, 9s; 8,192-GPU rail of radix
// 512, 2M entries, 110 MB, 1.3s. Larger tori are for the flow-level engine (LinkPath).
//
// Paths: the minimal paths toward a destination form a DAG; each switch's path count is the sum
// over its minimal egress ports of the next switch's count (saturating at MaxPathsPerPair =
// 65,536). Path i is decoded from the source: plane i % Planes, then at each switch the
// minimal ports in port order, each taking as many indices as it has paths, so distinct
// indices give distinct paths. The DAG depends only on the switches a destination hangs from,
// so hosts of one T0 share it (a small cache holds recent ones); a torus needs just one, toward
// chip 0, translated to any pair (translations are automorphisms, twisted ones included).
//
// # Sizing and blast radius
//
// Sizing reports switches by tier, chip routers, links by level, optical links (NIC-switch and
// switch-switch links by default; torus: the OCS-facing cube faces only; mesh: none), optics
// (transceivers, and 800G modules with breakout: 8-plane radix-512 100G 2-tier fabrics take 4
// per host, single-plane radix-64 800G 3-tier ones 6, hence 2/3 the optics with 3/5 the
// switches per host), bisection, diameter and mean fabric hops, worst-case latency and the
// scale-up and OCS parts. BlastRadius lists, for one failure of each element, the share of a
// host's, switch's or chip's bandwidth lost and how many lose it (radix 512: one T0-T1 link
// takes 1/256 = 0.39% of its T0's uplinks; radix 64: 1/32 = 3.1%; one port of an 8-plane NIC
// 12.5%).
//
// References: [MRC §2.2] multi-plane fabrics; Al-Fares, Loukissas, Vahdat, "A Scalable,
// Commodity Data Center Network Architecture", SIGCOMM 2008 (k-ary fat-tree); Jouppi et al.,
// ISCA 2023 (TPU v4: 3D torus, twisted tori, OCS); Cámara et al., IEEE TPDS 2010 (twisted
// tori); Wang et al., HotI 2024 (rail-only); Qian et al., SIGCOMM 2024 (HPN dual-plane).
package topo
