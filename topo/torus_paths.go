package topo

import "sync"

// torusPaths enumerates the minimal paths of a torus, twisted or not, without a search per
// destination: the flow-level engine asks for paths between every pair of a large torus.
//
// A torus is the Cayley graph of Z^3 modulo the lattice of its wrap-arounds (k_d e_d, and for
// a twisted short dimension k_d e_d - k e_long), so translations are automorphisms that keep
// every port's dimension and direction. The minimal paths from src to dst are therefore those
// from src - dst to chip 0, with the same ports: one breadth-first search toward chip 0 (its
// distances and path counts, N entries each) serves every pair. Paths are decoded in the
// order and with the counts of the generic search (Graph.walk), so they are the same paths.
type torusPaths struct {
	g      torusGeom
	single bool

	once  sync.Once
	dist  []int32  // chip -> hops to chip 0
	count []uint32 // chip -> minimal paths to chip 0, saturating at MaxPathsPerPair
}

// toZero computes the distances and path counts toward chip 0.
func (tp *torusPaths) toZero() {
	tp.dist = tp.g.distances()
	order := make([]int32, tp.g.n) // chips by distance: a counting sort
	var byDist []int
	for _, d := range tp.dist {
		for int(d) >= len(byDist) {
			byDist = append(byDist, 0)
		}
		byDist[d]++
	}
	start := make([]int, len(byDist))
	for d := 1; d < len(byDist); d++ {
		start[d] = start[d-1] + byDist[d-1]
	}
	for c, d := range tp.dist {
		order[start[d]] = int32(c)
		start[d]++
	}
	tp.count = make([]uint32, tp.g.n)
	tp.count[0] = 1
	for _, x := range order[1:] {
		var c uint32
		for p := 0; p < 6; p++ {
			if y := tp.g.neighbor(int(x), p/2, p%2); tp.dist[y] == tp.dist[x]-1 {
				c = min(c+tp.count[y], MaxPathsPerPair)
				if tp.single {
					break
				}
			}
		}
		tp.count[x] = c
	}
}

// sub returns the chip at src - dst: the one that the translation taking chip 0 to dst takes
// to src.
func (g *torusGeom) sub(src, dst int) int {
	a, b := g.coords(src), g.coords(dst)
	var u [3]int
	for d := range 3 {
		u[d] = a[d] - b[d]
	}
	if g.twisted { // fold the short dimensions first: each wrap moves k along the long ones
		for d := range 3 {
			if g.tw.short[d] && u[d] < 0 {
				u[d] += g.k[d]
				for l := range 3 {
					if g.tw.long[l] {
						u[l] -= g.tw.k
					}
				}
			}
		}
	}
	for d := range 3 {
		u[d] = ((u[d] % g.k[d]) + g.k[d]) % g.k[d]
	}
	return g.index(u)
}

// pair returns the pair's path count and the routers its paths cross.
func (tp *torusPaths) pair(src, dst int) (int, int) {
	tp.once.Do(tp.toZero)
	r := tp.g.sub(src, dst)
	return int(tp.count[r]), int(tp.dist[r]) + 1
}

// walk follows path k from chip src to chip dst like Graph.walk: at each router the minimal
// ports in port order (x+, x-, y+, y-, z+, z-), each taking as many indices as it has paths.
func (tp *torusPaths) walk(src, dst, k int, visit func(link int32, port int)) {
	tp.once.Do(tp.toZero)
	n := int32(tp.g.n)
	visit(2*int32(src), -1) // the chip's link to its router, from the chip (A) end
	x, xr := src, tp.g.sub(src, dst)
	for xr != 0 {
		port, yr := 0, 0
		for p := 0; p < 6; p++ {
			yr = tp.g.neighbor(xr, p/2, p%2)
			if tp.dist[yr] != tp.dist[xr]-1 {
				continue
			}
			if c := int(tp.count[yr]); k < c || tp.single {
				port = p + 1
				break
			} else {
				k -= c
			}
		}
		if port == 0 {
			panic("topo: torus path index beyond the path count") // a bug, never input
		}
		d := (port - 1) / 2
		if port%2 == 1 { // d+: x's own + link, A -> B
			visit(2*(n+3*int32(x)+int32(d)), port)
			x = tp.g.neighbor(x, d, 0)
		} else { // d-: the + link of the chip behind, B -> A
			x = tp.g.neighbor(x, d, 1)
			visit(2*(n+3*int32(x)+int32(d))+1, port)
		}
		xr = yr
	}
	visit(2*int32(dst)+1, 0) // router to chip
}
