package runner

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
)

// refHashedWalk is hashedWalk as it was before the walk tables (session 40): every hop
// through the topology's LinkOf, Peer and Routes and the link's topo.Link. The compact walk
// must give exactly its links, latency and outcome (TestHashedWalkCompactMatchesTopology).
// rts holds every node's forwarding table (Topology.Routes), ok false where it is an error.
func refHashedWalk(r *flowRouter, seeds []uint64, rts []refRoutes, src, dst, plane int, hdr *fabric.Packet, out []int32) ([]int32, sim.Time, bool) {
	hosts := r.t.NumHosts()
	out = out[:0]
	var lat sim.Time
	node, port := src, plane
	for hop := 0; hop <= topo.MaxHops; hop++ {
		k, ok := r.t.LinkOf(node, port)
		peer, ok2 := r.t.Peer(node, port)
		if !ok || !ok2 {
			break
		}
		d := int32(2 * k)
		if r.links[k].A.Node != node {
			d++
		}
		if len(out) > 0 {
			lat += r.storeForward(k)
		}
		out = append(out, d)
		lat += r.links[k].Delay
		node = peer.Node
		if node == dst {
			return out, lat, true
		}
		if node < hosts {
			break
		}
		if !rts[node].ok {
			break
		}
		g := rts[node].rt.Lookup(int32(dst))
		if len(g) == 0 {
			break
		}
		port = int(g[fabric.ECMPChoice(seeds[node], hdr, len(g))])
	}
	return nil, 0, false
}

// refRoutes is a node's forwarding table as refHashedWalk reads it.
type refRoutes struct {
	rt fabric.RouteTable
	ok bool
}

// allRoutes returns every node's forwarding table.
func allRoutes(t topo.Topology) []refRoutes {
	out := make([]refRoutes, t.NumNodes())
	for n := range out {
		rt, err := t.Routes(n)
		out[n] = refRoutes{rt, err == nil}
	}
	return out
}

// cutTopology is a topology with some ports unconnected (a link taken out of the build): its
// LinkOf and Peer report them not ok from either end.
type cutTopology struct {
	topo.Topology
	cut map[topo.Endpoint]bool
}

func (c *cutTopology) Peer(n, p int) (topo.Endpoint, bool) {
	e, ok := c.Topology.Peer(n, p)
	if !ok || c.cut[topo.Endpoint{Node: n, Port: p}] || c.cut[e] {
		return topo.Endpoint{}, false
	}
	return e, true
}

func (c *cutTopology) LinkOf(n, p int) (int, bool) {
	if _, ok := c.Peer(n, p); !ok {
		return 0, false
	}
	return c.Topology.LinkOf(n, p)
}

// withCut returns t with the links at index ks unconnected (both ends).
func withCut(t topo.Topology, ks ...int) topo.Topology {
	c := &cutTopology{Topology: t, cut: map[topo.Endpoint]bool{}}
	links := t.Links()
	for _, k := range ks {
		c.cut[links[k].A] = true
	}
	return c
}

// The walk tables change how hashedWalk reads the topology, not what it walks: on Clos
// fabrics of 2 and 3 tiers, 1 and 4 planes, with a cut last T0 (hosts not a multiple of the
// T0's down ports), oversubscribed, with links taken out (unconnected ports at a host, a T0
// uplink and a T1-T2 link), with shared and per-switch ECMP seeds, on a fat-tree and on the
// graph kinds (rail, torus: irregular tables, hosts that stop the walk), every (src, dst,
// plane) and several source ports give the old walk's links, latency and outcome.
func TestHashedWalkCompactMatchesTopology(t *testing.T) {
	for _, tc := range []struct {
		name, topology string
		cut            func(l []topo.Link) []int // links to take out
		shared         bool
		wrap           bool // hide the layout: its hops read from the port table
	}{
		{"2 tiers 1 plane", "{clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}", nil, false, false},
		{"2 tiers 4 planes cut T0", "{clos: {tiers: 2, planes: 4, radix: 8, hosts: 13, host_link: 100G}}", nil, false, false},
		{"2 tiers oversubscribed", "{clos: {tiers: 2, planes: 2, radix: 16, hosts: 40, host_link: 400G, oversubscription: [3]}}", nil, false, false},
		{"3 tiers 1 plane", "{clos: {tiers: 3, planes: 1, radix: 8, host_link: 100G}}", nil, false, false},
		{"3 tiers 4 planes shared seed", "{clos: {tiers: 3, planes: 4, radix: 8, hosts: 60, host_link: 100G}}", nil, true, false},
		{"3 tiers oversubscribed", "{clos: {tiers: 3, planes: 2, radix: 8, hosts: 96, host_link: 100G, oversubscription: [3, 3]}}", nil, false, false},
		{"3 tiers links down", "{clos: {tiers: 3, planes: 2, radix: 8, host_link: 100G}}", func(l []topo.Link) []int {
			var ks []int
			for lv := range 3 {
				for k := range l {
					if l[k].Level == lv && l[k].Plane == 1 {
						ks = append(ks, k+3*lv) // one link of each level, not the first
						break
					}
				}
			}
			return ks
		}, false, false},
		{"2 tiers 4 planes cut T0, port table", "{clos: {tiers: 2, planes: 4, radix: 8, hosts: 13, host_link: 100G}}", nil, false, true},
		{"3 tiers oversubscribed shared seed, port table", "{clos: {tiers: 3, planes: 2, radix: 8, hosts: 96, host_link: 100G, oversubscription: [3, 3]}}", nil, true, true},
		{"fat tree", "{fat_tree: {k: 4, host_link: 100G}}", nil, false, false},
		{"rail", "{rail: {servers: 4, gpus_per_server: 4, radix: 16, host_link: 400G}}", nil, false, false},
		{"torus", "{torus: {dims: 4x2x2, link_rate: 100G}}", nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, tp := parseDescribe(t, "topology: "+tc.topology+"\ntransport: {kind: roce}\nworkload: {collectives: [{op: all_reduce, bytes: 1MiB}]}\n")
			if tc.cut != nil || tc.wrap {
				var ks []int
				if tc.cut != nil {
					ks = tc.cut(tp.Links())
				}
				tp = withCut(tp, ks...)
			}
			r, _ := newFlowRouter(tp, fabricModelForWalk(), nil, 5, 0, 0, 0)
			r.ecmpShared = tc.shared
			seeds := fabric.ECMPSeeds(r.seed, tp.NumNodes(), tc.shared)
			rts := allRoutes(tp)
			hosts := tp.NumHosts()
			walked, failed := 0, 0
			for src := range hosts {
				for dst := range hosts {
					if src == dst {
						continue
					}
					for plane := range tp.Params().Planes + 1 { // one past the last: no such port
						for _, sp := range []uint16{0, 4097, 49152, 65535} {
							hdr := fabric.Packet{Proto: fabric.ProtoRoCE, Src: int32(src), Dst: int32(dst), SrcPort: sp, DstPort: 4791}
							want, wantLat, wantOK := refHashedWalk(r, seeds, rts, src, dst, plane, &hdr, nil)
							r.scratch = append(r.scratch[:0], -7) // a walk appends after what is there
							lat, ok := r.hashedWalk(src, dst, plane, &hdr)
							got := r.scratch[1:]
							if !ok {
								got = nil
								if len(r.scratch) != 1 || r.scratch[0] != -7 {
									t.Fatalf("h%d -> h%d plane %d port %d: a failed walk left %v", src, dst, plane, sp, r.scratch)
								}
							}
							if ok != wantOK || lat != wantLat || !slices.Equal(got, want) {
								t.Fatalf("h%d -> h%d plane %d port %d: compact walk %v %v %v, old walk %v %v %v", src, dst, plane, sp, got, lat, ok, want, wantLat, wantOK)
							}
							if ok {
								walked++
							} else {
								failed++
							}
						}
					}
				}
			}
			t.Logf("irregular tables %d of %d switches, computed hops %v", len(r.wt.tables), len(r.wt.sw), r.wt.lay != nil)
			if _, isLayout := tp.(*topo.Layout); isLayout != (r.wt.lay != nil) {
				t.Errorf("hops computed %v on a %T; want them computed on every layout, read from the table elsewhere", r.wt.lay != nil, tp)
			}
			if walked == 0 || failed == 0 {
				t.Fatalf("%d walks ended at their destination, %d did not; want both", walked, failed)
			}
		})
	}
}

// fabricModelForWalk is RoCE's flow model as far as hashedWalk reads it: a full packet's
// wire bytes, for store and forward.
func fabricModelForWalk() (m transport.FlowModel) {
	m.WireBytes = 4096 + 78
	return m
}

// hashedWalk is the path the packet level gives a QP: on Clos fabrics of 2 and 3 tiers, 1
// and 4 planes, with per-switch and shared seeds, the directed links of every (src, dst,
// plane) and several source ports are those of the built fabric's ECMPPath (its egress
// ports, each the A or B end of a link).
func TestHashedWalkMatchesFabric(t *testing.T) {
	for _, tc := range []struct {
		clos   topo.Clos
		shared bool
	}{
		{topo.Clos{Tiers: 2, Planes: 1, Radix: 8, HostLink: 100 * sim.Gbps}, false},
		{topo.Clos{Tiers: 2, Planes: 4, Radix: 8, Hosts: 13, HostLink: 100 * sim.Gbps}, true},
		{topo.Clos{Tiers: 3, Planes: 2, Radix: 8, HostLink: 100 * sim.Gbps}, false},
		{topo.Clos{Tiers: 3, Planes: 4, Radix: 8, Hosts: 50, HostLink: 100 * sim.Gbps}, true},
	} {
		t.Run(fmt.Sprintf("%d tiers %d planes shared %v", tc.clos.Tiers, tc.clos.Planes, tc.shared), func(t *testing.T) {
			const seed = 11
			net := fabric.New(sim.New(seed))
			l, err := topo.Build(net, tc.clos, topo.BuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			net.SetECMPSharedSeed(tc.shared)
			r, _ := newFlowRouter(l, fabricModelForWalk(), nil, seed, 0, 0, 0)
			r.ecmpShared = tc.shared
			// Each directed link's egress port: 2k leaves link k's A end, 2k+1 its B end.
			egress := map[fabric.PortID]int32{}
			for k, lk := range r.links {
				egress[net.Nodes[lk.A.Node].Ports[lk.A.Port]] = int32(2 * k)
				egress[net.Nodes[lk.B.Node].Ports[lk.B.Port]] = int32(2*k + 1)
			}
			var ports []fabric.PortID
			for src := range l.NumHosts() {
				for dst := range l.NumHosts() {
					if src == dst {
						continue
					}
					for plane := range tc.clos.Planes {
						for _, sp := range []uint16{1, 777, 50000} {
							hdr := fabric.Packet{Proto: fabric.ProtoRoCE, Src: int32(src), Dst: int32(dst), SrcPort: sp, DstPort: 4791}
							if ports, err = net.ECMPPath(int32(src), plane, &hdr, ports); err != nil {
								t.Fatal(err)
							}
							want := make([]int32, len(ports))
							for i, p := range ports {
								want[i] = egress[p]
							}
							r.scratch = r.scratch[:0]
							if _, ok := r.hashedWalk(src, dst, plane, &hdr); !ok || !slices.Equal(r.scratch, want) {
								t.Fatalf("h%d -> h%d plane %d port %d: walk %v (%v), fabric %v", src, dst, plane, sp, r.scratch, ok, want)
							}
						}
					}
				}
			}
		})
	}
}

// BenchmarkHashedWalk walks QPs' hashed paths on a 2-tier Clos of 8 planes of radix-128
// switches (8,192 hosts), pairs spread over the fabric: the route walk of a RoCE flow the
// route cache has not seen, with its hops computed from the layout (layout) and read from
// the port table (port table: the layout hidden). 0 allocations per walk.
func BenchmarkHashedWalk(b *testing.B) {
	l, err := topo.Clos{Tiers: 2, Planes: 8, Radix: 128, HostLink: 100 * sim.Gbps}.Layout()
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		t    topo.Topology
	}{{"layout", l}, {"port table", withCut(l)}} {
		b.Run(tc.name, func(b *testing.B) {
			r, _ := newFlowRouter(tc.t, fabricModelForWalk(), nil, 1, 0, 0, 0)
			r.scratch = make([]int32, 0, topo.MaxHops+1)
			hosts := l.NumHosts()
			hdr := fabric.Packet{Proto: fabric.ProtoRoCE, DstPort: 4791}
			r.hashedWalk(0, 1, 0, &hdr) // build the walk tables
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				src := int(uint64(i) * 0x9e3779b97f4a7c15 % uint64(hosts))
				dst := (src + 1 + i%(hosts-1)) % hosts
				hdr.Src, hdr.Dst, hdr.SrcPort = int32(src), int32(dst), uint16(i)
				r.scratch = r.scratch[:0]
				if _, ok := r.hashedWalk(src, dst, i%8, &hdr); !ok {
					b.Fatalf("h%d -> h%d: no path", src, dst)
				}
			}
		})
	}
}

// BenchmarkHashedWalkRef is BenchmarkHashedWalk on the old walk (refHashedWalk), for the
// comparison in docs/flow-agreement.md "Speed".
func BenchmarkHashedWalkRef(b *testing.B) {
	l, err := topo.Clos{Tiers: 2, Planes: 8, Radix: 128, HostLink: 100 * sim.Gbps}.Layout()
	if err != nil {
		b.Fatal(err)
	}
	r, _ := newFlowRouter(l, fabricModelForWalk(), nil, 1, 0, 0, 0)
	seeds := fabric.ECMPSeeds(1, l.NumNodes(), false)
	rts := allRoutes(l)
	out := make([]int32, 0, topo.MaxHops+1)
	hosts := l.NumHosts()
	hdr := fabric.Packet{Proto: fabric.ProtoRoCE, DstPort: 4791}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		src := int(uint64(i) * 0x9e3779b97f4a7c15 % uint64(hosts))
		dst := (src + 1 + i%(hosts-1)) % hosts
		hdr.Src, hdr.Dst, hdr.SrcPort = int32(src), int32(dst), uint16(i)
		if _, _, ok := refHashedWalk(r, seeds, rts, src, dst, i%8, &hdr, out); !ok {
			b.Fatalf("h%d -> h%d: no path", src, dst)
		}
	}
}

// routeTable holds what a Go map would: 0 to 5,000 routes under keys that collide in
// their low bits, stored, replaced and looked up again across the table's growth, and
// keys never stored are not found.
func TestRouteTableMatchesMap(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 513, 5000} {
		var tb *routeTable
		if _, ok := tb.get(routeKey{1, 2, 3}); ok {
			t.Fatal("a nil table found a route")
		}
		tb = &routeTable{}
		want := map[routeKey]routeVal{}
		key := func(i int) routeKey { return routeKey{int32(i % 37), int32(i / 37), uint64(i) << 44} }
		for i := range n {
			v := routeVal{ref: int32(i), paths: int32(1 + i%8), lat: sim.Time(i)}
			tb.put(key(i), v)
			want[key(i)] = v
			if i%3 == 0 { // replace an earlier route
				k := key(i / 2)
				v := routeVal{ref: -int32(i), paths: 9, lat: 7}
				tb.put(k, v)
				want[k] = v
			}
		}
		if tb.n != len(want) {
			t.Fatalf("%d puts: %d routes held, want %d", n, tb.n, len(want))
		}
		for i := range n + 100 {
			got, ok := tb.get(key(i))
			w, wok := want[key(i)]
			if ok != wok || got != w {
				t.Fatalf("%d puts, key %v: %v %v, want %v %v", n, key(i), got, ok, w, wok)
			}
		}
	}
}

// u64Table holds what a Go map would: 0 to 5,000 keys, sequential (as a connection's keys
// are), spread and 0, set, reset and looked up again across the table's growth; keys never
// set are not found.
func TestU64TableMatchesMap(t *testing.T) {
	for _, n := range []int{0, 1, 31, 32, 33, 5000} {
		for _, stride := range []uint64{1, 0x9e3779b97f4a7c15} {
			var tb u64Table
			want := map[uint64]uint64{}
			for i := range uint64(n) {
				k := i * stride
				tb.put(k, i+7)
				want[k] = i + 7
				if i%3 == 0 {
					tb.put(k/2*stride, i)
					want[k/2*stride] = i
				}
			}
			if tb.len() != len(want) {
				t.Fatalf("n %d stride %d: %d keys held, want %d", n, stride, tb.len(), len(want))
			}
			for i := range uint64(n + 100) {
				for _, k := range []uint64{i * stride, i*stride + 3} {
					got, ok := tb.get(k)
					w, wok := want[k]
					if ok != wok || got != w {
						t.Fatalf("n %d stride %d key %d: %d %v, want %d %v", n, stride, k, got, ok, w, wok)
					}
				}
			}
		}
	}
}
