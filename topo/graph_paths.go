package topo

import (
	"fmt"
	"slices"

	"github.com/lockstepsim/lockstep/sim"
)

// dstPaths is the shortest-path DAG toward the hosts attached to one set of switches: for
// every switch (index node - hosts) its distance in links to such a host (-1 when
// unreachable) and its number of minimal paths to it (saturating at MaxPathsPerPair). Hosts
// attached to the same switches by the same number of ports (the hosts of one T0, in every
// plane) share it; hosts never forward, so only switches are searched.
type dstPaths struct {
	dist  []int32
	count []uint32
}

// dstCacheBytes bounds the memory of the path cache.
const dstCacheBytes = 64 << 20

// attachKey returns the key of host h's attachment: its neighbour switches, sorted, with
// repeats for parallel links.
func (g *Graph) attachKey(h int) string {
	st := g.st
	var sw []int32
	for fp := st.portBase[h]; fp < st.portBase[h+1]; fp++ {
		if y := st.nbr[fp]; y >= int32(g.hosts) {
			sw = append(sw, y)
		}
	}
	slices.Sort(sw)
	b := make([]byte, 0, 4*len(sw))
	for _, y := range sw {
		b = append(b, byte(y), byte(y>>8), byte(y>>16), byte(y>>24))
	}
	return string(b)
}

// paths returns the DAG toward host dst, from the cache or computed: a breadth-first search
// over switches from those attached to dst, then path counts in order of distance.
func (g *Graph) paths(dst int) *dstPaths {
	key := g.attachKey(dst)
	g.mu.Lock()
	dp := g.cache[key]
	g.mu.Unlock()
	if dp != nil {
		return dp
	}
	st, hosts := g.st, int32(g.hosts)
	ns := g.nodes - g.hosts
	dp = &dstPaths{dist: make([]int32, ns), count: make([]uint32, ns)}
	order := st.switchBFS(dst, g.hosts, dp.dist, make([]int32, 0, ns))
	for fp := st.portBase[dst]; fp < st.portBase[dst+1]; fp++ {
		if y := st.nbr[fp]; y >= hosts && (!g.singlePath || dp.count[y-hosts] == 0) {
			dp.count[y-hosts] = min(dp.count[y-hosts]+1, MaxPathsPerPair) // its links to the host
		}
	}
	for _, x := range order {
		dx := dp.dist[x-hosts]
		if dx == 1 {
			continue
		}
		var c uint32
		for _, fp := range st.swPort[st.swBase[x]:st.swBase[x+1]] {
			if y := st.nbr[fp]; dp.dist[y-hosts] == dx-1 {
				c = min(c+dp.count[y-hosts], MaxPathsPerPair)
				if g.singlePath {
					break
				}
			}
		}
		dp.count[x-hosts] = c
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cache == nil {
		g.cache = map[string]*dstPaths{}
	}
	limit := max(16, dstCacheBytes/(8*max(ns, 1)))
	for len(g.fifo) >= limit {
		delete(g.cache, g.fifo[0])
		g.fifo = g.fifo[1:]
	}
	if _, ok := g.cache[key]; !ok {
		g.cache[key] = dp
		g.fifo = append(g.fifo, key)
	}
	return dp
}

// checkPair validates a host pair.
func (g *Graph) checkPair(src, dst int) error {
	if src < 0 || dst < 0 || src >= g.hosts || dst >= g.hosts {
		return fmt.Errorf("topo: path %d -> %d: hosts are 0 to %d", src, dst, g.hosts-1)
	}
	if src == dst {
		return fmt.Errorf("topo: path from host %d to itself", src)
	}
	return nil
}

// pair returns the DAG toward dst and, for the pair, the number of minimal paths per plane
// (the smallest over planes, capped so that all planes together stay within
// MaxPathsPerPair) and the most switches any plane's paths cross.
func (g *Graph) pair(src, dst int) (dp *dstPaths, perPlane, switches int, err error) {
	if err := g.checkPair(src, dst); err != nil {
		return nil, 0, 0, err
	}
	if g.tor != nil {
		perPlane, switches = g.tor.pair(src, dst)
		return nil, perPlane, switches, nil
	}
	st := g.s()
	dp = g.paths(dst)
	perPlane = MaxPathsPerPair / g.params.Planes
	for p := 0; p < g.params.Planes; p++ {
		y := st.nbr[st.portBase[src]+int32(p)]
		switch {
		case int(y) == dst:
			perPlane = min(perPlane, 1)
		case y < int32(g.hosts) || dp.dist[int(y)-g.hosts] < 0: // unconnected, another host, or no way on
			return dp, 0, 0, nil
		default:
			perPlane = min(perPlane, int(dp.count[int(y)-g.hosts]))
			switches = max(switches, int(dp.dist[int(y)-g.hosts]))
		}
	}
	return dp, perPlane, switches, nil
}

// NumPaths returns the number of minimal source routes from host src to host dst over all
// planes: Planes x the number of minimal paths from src's NIC port in each plane (the
// smallest when planes differ), at most MaxPathsPerPair in all. It returns 0 when src == dst,
// a host is out of range, the hosts are not connected, or the paths cross more than MaxHops
// switches (a large torus: table routing and LinkPath still work).
func (g *Graph) NumPaths(src, dst int) int {
	_, n, sw, err := g.pair(src, dst)
	if err != nil || sw > MaxHops {
		return 0
	}
	return n * g.params.Planes
}

// Path returns minimal source route i of NumPaths(src, dst): plane i % Planes, then path
// i / Planes of that plane, decoded at each switch by walking its minimal egress ports in
// port order and subtracting each one's path count until the index falls within one. Distinct
// indices give distinct paths. Errors: src == dst, a host out of range, hosts not connected,
// paths longer than MaxHops switches (naming the count), i out of range.
func (g *Graph) Path(src, dst, i int) (Route, error) {
	dp, n, sw, err := g.pair(src, dst)
	switch {
	case err != nil:
		return Route{}, err
	case n == 0:
		return Route{}, fmt.Errorf("topo: no path from host %d to host %d in this %s fabric", src, dst, g.params.Kind)
	case sw > MaxHops:
		return Route{}, fmt.Errorf("topo: path %d -> %d crosses %d switches; a source route holds at most %d (MaxHops): use table routing, or LinkPath", src, dst, sw, MaxHops)
	case i < 0 || i >= n*g.params.Planes:
		return Route{}, fmt.Errorf("topo: path %d of %d -> %d out of range [0, %d)", i, src, dst, n*g.params.Planes)
	}
	r := Route{Plane: uint8(i % g.params.Planes)}
	g.walk(dp, src, dst, int(r.Plane), i/g.params.Planes, func(_ int32, port int) {
		if port >= 0 {
			r.Hops[r.Len] = uint16(port)
			r.Len++
		}
	})
	return r, nil
}

// LinkPath returns the directed links of minimal path i from src to dst, i taken modulo the
// number of minimal paths (see Topology.LinkPath), and the sum of their delays. It is the
// path Path(src, dst, i) gives when that exists, with no MaxHops limit. Errors: src == dst, a
// host out of range, i < 0, hosts not connected.
func (g *Graph) LinkPath(src, dst, i int, buf []int32) ([]int32, sim.Time, error) {
	dp, n, _, err := g.pair(src, dst)
	switch {
	case err != nil:
		return buf[:0], 0, err
	case n == 0:
		return buf[:0], 0, fmt.Errorf("topo: no path from host %d to host %d in this %s fabric", src, dst, g.params.Kind)
	case i < 0:
		return buf[:0], 0, fmt.Errorf("topo: path index %d is negative", i)
	}
	i %= n * g.params.Planes
	out := buf[:0]
	g.walk(dp, src, dst, i%g.params.Planes, i/g.params.Planes, func(link int32, _ int) { out = append(out, link) })
	var lat sim.Time
	for _, link := range out {
		if g.tor != nil { // without building the lists: chip links have no delay
			if int(link>>1) >= g.hosts {
				lat += g.params.HopLatency
			}
			continue
		}
		lat += g.st.links[link>>1].Delay
	}
	return out, lat, nil
}

// walk follows path k of plane from src to dst, calling visit for every link crossed with its
// directed id and the local egress port at the switch it leaves (-1 for the source NIC).
func (g *Graph) walk(dp *dstPaths, src, dst, plane, k int, visit func(link int32, port int)) {
	if g.tor != nil {
		g.tor.walk(src, dst, k, visit)
		return
	}
	st, hosts := g.s(), int32(g.hosts)
	fp := st.portBase[src] + int32(plane)
	port := -1
	for {
		visit(2*st.linkOf[fp]+int32(st.dir[fp]), port)
		x := st.nbr[fp]
		if int(x) == dst {
			return
		}
		dx := dp.dist[x-hosts]
		for fp = st.portBase[x]; fp < st.portBase[x+1]; fp++ {
			y := st.nbr[fp]
			var c int
			switch {
			case dx == 1 && int(y) == dst:
				c = 1
			case dx > 1 && y >= hosts && dp.dist[y-hosts] == dx-1:
				c = int(dp.count[y-hosts])
			default:
				continue
			}
			if k < c || g.singlePath {
				break
			}
			k -= c
		}
		if fp == st.portBase[x+1] { // counts and decoding disagree: a bug, never input
			panic("topo: path index beyond the path count")
		}
		port = int(fp - st.portBase[x])
	}
}
