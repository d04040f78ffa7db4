package topo

import "fmt"

// SpreadRoutes assigns each (src, dst) host pair a path in one plane so that no two pairs share
// a directed link, whenever that is possible: each host sends at most one flow and receives at
// most one (a permutation or part of one), and no T0 (or, across pods, no pod through one T1
// index) carries more flows out or in than it has uplinks, which always holds when T0s and T1s
// have at least as many up ports as down ports (non-oversubscribed in ports). It returns, per
// pair, the index to pass to Path; every index is in plane.
//
// Method: colour the edges of the bipartite multigraph src T0 -> dst T0 (one edge per pair on
// different T0s) with u0 colours so that edges at a vertex differ (König's theorem: a
// bipartite multigraph of maximum degree D is D-edge-colourable; built edge by edge with
// alternating-path (Kempe chain) recolouring). Colour c is the T0 uplink c, so T1 c/p0 of the
// pod and parallel link c%p0 up, and the same parallel index c%p0 down from the T1: distinct
// colours at src T0 keep the up links apart, at dst T0 the down links. In a 3-tier Clos, the
// cross-pod pairs through T1 index j are coloured again, src pod -> dst pod with u1 colours:
// colour v is the T1 uplink v (T2 v/p1 of core group j, parallel v%p1) and the T2 comes down
// on parallel link v%p1.
//
// Pairs on the same T0 use their only path. Errors: plane out of range; a pair with src == dst
// or a host out of range; a host sending or receiving twice; a T0 or pod with more flows than
// uplinks (oversubscribed: no conflict-free assignment exists).
func (l *Layout) SpreadRoutes(plane int, pairs [][2]int) ([]int, error) {
	d := &l.d
	if plane < 0 || plane >= d.Planes {
		return nil, fmt.Errorf("topo: spread: plane %d out of range [0, %d)", plane, d.Planes)
	}
	kinds := make([]int, len(pairs))
	sends := make(map[int]int, len(pairs))
	recvs := make(map[int]int, len(pairs))
	for i, p := range pairs {
		src, dst := p[0], p[1]
		_, kinds[i] = l.pathsInPlane(src, dst)
		if kinds[i] == pairInvalid {
			if src == dst {
				return nil, fmt.Errorf("topo: spread: pair %d (%d -> %d): source equals destination", i, src, dst)
			}
			return nil, fmt.Errorf("topo: spread: pair %d (%d -> %d): hosts are 0 to %d", i, src, dst, d.Hosts-1)
		}
		if j, dup := sends[src]; dup {
			return nil, fmt.Errorf("topo: spread: host %d sends in pairs %d and %d; each host may send at most one flow and receive at most one", src, j, i)
		}
		if j, dup := recvs[dst]; dup {
			return nil, fmt.Errorf("topo: spread: host %d receives in pairs %d and %d; each host may send at most one flow and receive at most one", dst, j, i)
		}
		sends[src], recvs[dst] = i, i
	}

	// Level 1: src T0 -> dst T0, colours = T0 uplinks.
	var edges [][2]int32
	var which []int // pair index per edge
	for i, p := range pairs {
		if kinds[i] != pairSameT0 {
			edges = append(edges, [2]int32{int32(p[0] / d.T0Down), int32(p[1] / d.T0Down)})
			which = append(which, i)
		}
	}
	c0, err := colourChecked(edges, d.T0Up, func(v int, out bool, n int) error {
		dir := "leaving"
		if !out {
			dir = "entering"
		}
		return fmt.Errorf("topo: spread: %d flows %s T0 %s but it has %d uplinks: oversubscribed, no conflict-free assignment exists",
			n, dir, switchName(plane, 0, v), d.T0Up)
	})
	if err != nil {
		return nil, err
	}
	up := make([]int, len(pairs)) // T0 uplink per pair
	for e, i := range which {
		up[i] = int(c0[e])
	}

	// Level 2 (3-tier): per T1 index j, src pod -> dst pod, colours = T1 uplinks.
	t1up := make([]int, len(pairs))
	if d.Tiers == 3 {
		groups := make([][]int, d.T1PerPod) // cross-pod pairs by T1 index
		for i := range pairs {
			if kinds[i] == pairCrossPod {
				j := up[i] / d.T0Parallel
				groups[j] = append(groups[j], i)
			}
		}
		podOf := func(h int) int32 { return int32(h / d.T0Down / d.T0PerPod) }
		for j, g := range groups {
			edges = edges[:0]
			for _, i := range g {
				edges = append(edges, [2]int32{podOf(pairs[i][0]), podOf(pairs[i][1])})
			}
			c1, err := colourChecked(edges, d.T1Up, func(v int, out bool, n int) error {
				dir := "leave"
				if !out {
					dir = "enter"
				}
				return fmt.Errorf("topo: spread: %d flows %s pod %d through T1 %s but it has %d uplinks: oversubscribed, no conflict-free assignment exists",
					n, dir, v, switchName(plane, 1, v*d.T1PerPod+j), d.T1Up)
			})
			if err != nil {
				return nil, err
			}
			for e, i := range g {
				t1up[i] = int(c1[e])
			}
		}
	}

	out := make([]int, len(pairs))
	for i := range pairs {
		c, v := up[i], t1up[i]
		switch kinds[i] {
		case pairSameT0:
			out[i] = plane
		case pairSamePod:
			out[i] = l.pathIndex(plane, c, 0, 0, c%d.T0Parallel, false)
		case pairCrossPod:
			out[i] = l.pathIndex(plane, c, v, v%d.T1Parallel, c%d.T0Parallel, true)
		}
	}
	return out, nil
}

// colourChecked colours edges (see colourBipartite) after relabelling their ends to dense
// indices, so memory grows with the vertices in use, not the fabric. If a vertex has more
// edges than colours it returns fail(original label, left side, degree) instead.
func colourChecked(edges [][2]int32, colours int, fail func(v int, out bool, deg int) error) ([]int32, error) {
	var labels [2][]int32
	var deg [2][]int
	ids := [2]map[int32]int32{make(map[int32]int32), make(map[int32]int32)}
	dense := make([][2]int32, len(edges))
	for i, e := range edges {
		for side := 0; side < 2; side++ {
			id, ok := ids[side][e[side]]
			if !ok {
				id = int32(len(labels[side]))
				ids[side][e[side]] = id
				labels[side] = append(labels[side], e[side])
				deg[side] = append(deg[side], 0)
			}
			dense[i][side] = id
			deg[side][id]++
		}
	}
	for side := 0; side < 2; side++ {
		for id, k := range deg[side] {
			if k > colours {
				return nil, fail(int(labels[side][id]), side == 0, k)
			}
		}
	}
	return colourBipartite(len(labels[0]), len(labels[1]), colours, dense), nil
}

// colourBipartite colours the edges of a bipartite multigraph (edge = [left, right], left in
// [0, nl), right in [0, nr)) with colours colours so that edges sharing a vertex differ. The
// maximum degree must not exceed colours (König's line colouring theorem guarantees success
// then). Each edge takes a colour a free at its left end; if a is taken at the right end, the
// a/b alternating path from the right end (b free there) is flipped first. In a bipartite
// graph that path cannot reach the left end, so a becomes free at both. O(E x (colours + V)).
func colourBipartite(nl, nr, colours int, edges [][2]int32) []int32 {
	at := make([]int32, (nl+nr)*colours) // at[vertex*colours+colour] = edge, or -1
	for i := range at {
		at[i] = -1
	}
	col := make([]int32, len(edges))
	ends := func(e int32) (int, int) { return int(edges[e][0]), nl + int(edges[e][1]) }
	free := func(x int) int32 {
		for c := 0; c < colours; c++ {
			if at[x*colours+c] < 0 {
				return int32(c)
			}
		}
		return -1 // unreachable when degrees <= colours
	}
	var path []int32
	for ei := range edges {
		u, v := ends(int32(ei))
		a, b := free(u), free(v)
		if at[v*colours+int(a)] >= 0 {
			path = path[:0]
			x, c := v, a
			for {
				e := at[x*colours+int(c)]
				if e < 0 {
					break
				}
				path = append(path, e)
				if p, q := ends(e); p == x {
					x = q
				} else {
					x = p
				}
				c = a + b - c
			}
			for _, e := range path {
				p, q := ends(e)
				at[p*colours+int(col[e])], at[q*colours+int(col[e])] = -1, -1
			}
			for _, e := range path {
				col[e] = a + b - col[e]
				p, q := ends(e)
				at[p*colours+int(col[e])], at[q*colours+int(col[e])] = e, e
			}
		}
		col[ei] = a
		at[u*colours+int(a)], at[v*colours+int(a)] = int32(ei), int32(ei)
	}
	return col
}
