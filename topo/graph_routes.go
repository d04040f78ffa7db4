package topo

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
)

// bfsTo fills dist (one entry per node) with every node's hop distance to host dst, -1 where
// unreachable, never passing through another host (hosts do not forward), and returns the
// reached nodes in order of increasing distance (order's storage reused).
func (st *graphStruct) bfsTo(dst, hosts int, dist []int32, order []int32) []int32 {
	for i := range dist {
		dist[i] = -1
	}
	dist[dst] = 0
	order = append(order[:0], int32(dst))
	for head := 0; head < len(order); head++ {
		x := order[head]
		if int(x) < hosts && int(x) != dst {
			continue
		}
		dx := dist[x] + 1
		for fp := st.portBase[x]; fp < st.portBase[x+1]; fp++ {
			if far := st.peer[fp]; far >= 0 {
				if y := st.portNode[far]; dist[y] < 0 {
					dist[y] = dx
					order = append(order, y)
				}
			}
		}
	}
	return order
}

// Routes returns node n's forwarding table. For a switch: every destination host's ECMP group
// of minimal egress ports (all of them; with SinglePath only the lowest-numbered), as host
// ranges where consecutive destinations share a group; the group covering the most ranges
// becomes Up and its ranges are left out. A destination the switch cannot reach has an entry
// with no ports (the fabric drops such packets as no_route). For a host: Up = its NIC ports,
// one per plane. The first call computes every switch's table; the tables are shared, not
// copied: do not modify them. Errors: n out of range.
func (g *Graph) Routes(n int) (RouteTable, error) {
	if n < 0 || n >= g.nodes {
		return RouteTable{}, fmt.Errorf("topo: node %d out of range [0, %d)", n, g.nodes)
	}
	if n < g.hosts {
		up := make([]uint16, g.params.Planes)
		for i := range up {
			up[i] = uint16(i)
		}
		return RouteTable{Up: up}, nil
	}
	g.tablesOnce.Do(g.buildTables)
	return g.tables[n], nil
}

// tableRun starts a range of destinations, at host lo, sharing one group (an index into the
// group list of whoever built the run).
type tableRun struct{ lo, grp int32 }

// groupPool interns ECMP groups: equal port lists get one index and one shared slice.
type groupPool struct {
	groups [][]uint16
	ids    map[string]int32
	key    []byte
}

func (gp *groupPool) intern(ps []uint16) int32 {
	gp.key = gp.key[:0]
	for _, p := range ps {
		gp.key = append(gp.key, byte(p), byte(p>>8))
	}
	if id, ok := gp.ids[string(gp.key)]; ok {
		return id
	}
	id := int32(len(gp.groups))
	gp.groups = append(gp.groups, append([]uint16(nil), ps...))
	gp.ids[string(gp.key)] = id
	return id
}

// buildTables computes every switch's table: one search per destination host, appending a
// range to a switch's list whenever its group changes from the previous destination's. The
// destinations are split into contiguous chunks searched in parallel and the chunks' ranges
// joined in host order.
func (g *Graph) buildTables() {
	st := g.s()
	workers := min(runtime.GOMAXPROCS(0), max(1, g.hosts/64))
	type chunk struct {
		runs [][]tableRun // per node
		pool groupPool
	}
	chunks := make([]chunk, workers)
	var wg sync.WaitGroup
	for w := range chunks {
		lo, hi := g.hosts*w/workers, g.hosts*(w+1)/workers
		wg.Add(1)
		go func(c *chunk) {
			defer wg.Done()
			c.runs, c.pool = g.tableRuns(st, lo, hi)
		}(&chunks[w])
	}
	wg.Wait()

	// Join the chunks with one pool of groups.
	pool := groupPool{ids: map[string]int32{}}
	remap := make([][]int32, workers)
	for w := range chunks {
		remap[w] = make([]int32, len(chunks[w].pool.groups))
		for i, grp := range chunks[w].pool.groups {
			remap[w][i] = pool.intern(grp)
		}
	}
	g.tables = make([]RouteTable, g.nodes)
	count := make([]int, len(pool.groups))
	var rs []tableRun
	for x := g.hosts; x < g.nodes; x++ {
		rs = rs[:0]
		for w := range chunks {
			for _, r := range chunks[w].runs[x] {
				r.grp = remap[w][r.grp]
				if len(rs) > 0 && rs[len(rs)-1].grp == r.grp {
					continue // the previous chunk ended with the same group
				}
				rs = append(rs, r)
			}
			chunks[w].runs[x] = nil
		}
		if len(rs) == 0 {
			continue
		}
		up := rs[0].grp
		for _, r := range rs {
			count[r.grp]++
			if c := count[r.grp]; c > count[up] || c == count[up] && r.grp < up {
				up = r.grp
			}
		}
		t := RouteTable{Up: pool.groups[up][:len(pool.groups[up]):len(pool.groups[up])]}
		n := 0
		for _, r := range rs {
			if r.grp != up {
				n++
			}
		}
		t.Entries = make([]RouteEntry, 0, n)
		for i, r := range rs {
			count[r.grp] = 0
			if r.grp == up {
				continue
			}
			hi := int32(g.hosts)
			if i+1 < len(rs) {
				hi = rs[i+1].lo
			}
			ps := pool.groups[r.grp]
			t.Entries = append(t.Entries, RouteEntry{HostLo: r.lo, HostHi: hi, Ports: ps[:len(ps):len(ps)]})
		}
		g.tables[x] = t
	}
}

// tableRuns computes the group changes of every switch for destinations lo..hi-1. Switches of
// at most 64 ports compare groups as port bit masks and build the list only on a change.
func (g *Graph) tableRuns(st *graphStruct, lo, hi int) ([][]tableRun, groupPool) {
	pool := groupPool{ids: map[string]int32{}}
	runs := make([][]tableRun, g.nodes)
	last := make([]uint64, g.nodes) // mask of each small switch's current group
	hosts := int32(g.hosts)
	dist := make([]int32, g.nodes-g.hosts)
	order := make([]int32, 0, g.nodes-g.hosts)
	var grp []uint16
	for h := lo; h < hi; h++ {
		order = st.switchBFS(h, g.hosts, dist, order)
		for x := hosts; x < int32(g.nodes); x++ {
			base := st.portBase[x]
			grp = grp[:0]
			switch want := dist[x-hosts] - 1; {
			case want == 0: // attached to h: its ports to h, found from h's side
				for fp := st.portBase[h]; fp < st.portBase[h+1]; fp++ {
					if st.nbr[fp] == x {
						grp = append(grp, uint16(st.peer[fp]-base))
					}
				}
				slices.Sort(grp)
				if g.singlePath && len(grp) > 1 {
					grp = grp[:1]
				}
			case want > 0:
				for _, fp := range st.swPort[st.swBase[x]:st.swBase[x+1]] {
					if dist[st.nbr[fp]-hosts] == want {
						grp = append(grp, uint16(fp-base))
						if g.singlePath {
							break
						}
					}
				}
			}
			if st.portBase[x+1]-base <= 64 {
				var mask uint64
				for _, p := range grp {
					mask |= 1 << p
				}
				if len(runs[x]) > 0 && last[x] == mask {
					continue
				}
				last[x] = mask
			} else if rs := runs[x]; len(rs) > 0 && slices.Equal(pool.groups[rs[len(rs)-1].grp], grp) {
				continue
			}
			runs[x] = append(runs[x], tableRun{int32(h), pool.intern(grp)})
		}
	}
	return runs, pool
}

// switchBFS fills dist (one entry per switch, index node - hosts) with every switch's
// distance in links to host dst, -1 where unreachable: a breadth-first search over switches
// from those attached to dst (hosts do not forward). It returns the reached switches in order
// of distance (order's storage reused).
func (st *graphStruct) switchBFS(dst, hosts int, dist []int32, order []int32) []int32 {
	for i := range dist {
		dist[i] = -1
	}
	order = order[:0]
	h := int32(hosts)
	for _, fp := range st.swPort[st.swBase[dst]:st.swBase[dst+1]] {
		if y := st.nbr[fp]; dist[y-h] < 0 {
			dist[y-h] = 1
			order = append(order, y)
		}
	}
	for head := 0; head < len(order); head++ {
		x := order[head]
		dx := dist[x-h] + 1
		for _, fp := range st.swPort[st.swBase[x]:st.swBase[x+1]] {
			if y := st.nbr[fp]; dist[y-h] < 0 {
				dist[y-h] = dx
				order = append(order, y)
			}
		}
	}
	return order
}
