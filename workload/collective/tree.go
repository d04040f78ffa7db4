package collective

import "sort"

// Double binary tree (NCCL 2.4+; Sanders, Speck and Träff, "Two-tree algorithms for full
// bandwidth broadcast, reduction and scan", Parallel Computing 35(12), 2009).
//
// Tree 0 is NCCL's in-order binary tree rooted at rank 0 (src/graph/trees.cc ncclGetBtree:
// a rank's parent is found from its lowest set bit). Tree 1 is its mirror (rank r plays the
// role of n-1-r) when n is even, and its shift by one rank when n is odd, so most ranks are
// interior in one tree and a leaf in the other. Each tree carries half the data; each half is
// cut into Channels parts (tree t, channel c is logical channel 2c+t) and each part into
// chunks, one block each. Per chunk the data is reduced up the tree (a node sends to its
// parent once it has folded in both children) and broadcast down from the root; chunks
// pipeline, so a chunk goes down while the next goes up.

// btreeParent returns rank r's parent in NCCL's binary tree over n ranks (-1 for the root 0).
func btreeParent(n, r int) int {
	if r == 0 {
		return -1
	}
	bit := 1
	for bit < n && bit&r == 0 {
		bit <<= 1
	}
	up := (r ^ bit) | (bit << 1)
	if up >= n {
		up = r ^ bit
	}
	return up
}

// dtree is one tree of the pair: parent, children and depth per rank.
type dtree struct {
	root   int32
	parent []int32
	kids   [][]int32
	depth  []int32
	height int32   // largest depth
	up     []int32 // ranks deepest first (children before parents)
	down   []int32 // ranks shallowest first (parents before children)
}

// TreeParents returns the parent of every rank (shape [n]) in tree t (0 or 1) of NCCL's
// double binary tree over n ranks, -1 for the root: tree 0 is NCCL's binary tree rooted at
// rank 0 (src/graph/trees.cc ncclGetBtree), tree 1 its mirror (rank r plays n-1-r) for even n
// and its shift by one rank for odd n. The Tree algorithm uses these trees; the flow-level
// engine reuses them.
func TreeParents(n, t int) []int32 {
	par := make([]int32, n)
	for r := 0; r < n; r++ {
		var p int
		switch {
		case t == 0:
			p = btreeParent(n, r)
		case n%2 == 1: // shift
			if u := btreeParent(n, (r-1+n)%n); u < 0 {
				p = -1
			} else {
				p = (u + 1) % n
			}
		default: // mirror
			if u := btreeParent(n, n-1-r); u < 0 {
				p = -1
			} else {
				p = n - 1 - u
			}
		}
		par[r] = int32(p)
	}
	return par
}

// doubleTree returns NCCL's two trees over n ranks.
func doubleTree(n int) [2]*dtree {
	return [2]*dtree{newDtree(TreeParents(n, 0)), newDtree(TreeParents(n, 1))}
}

func newDtree(par []int32) *dtree {
	n := len(par)
	d := &dtree{parent: par, kids: make([][]int32, n), depth: make([]int32, n), root: -1}
	for r, p := range par {
		if p < 0 {
			d.root = int32(r)
		} else {
			d.kids[p] = append(d.kids[p], int32(r))
		}
	}
	// Depths by walking from the root (parents were checked acyclic by construction: the
	// parent's lowest set bit is higher).
	stack := []int32{d.root}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range d.kids[u] {
			d.depth[c] = d.depth[u] + 1
			d.height = max(d.height, d.depth[c])
			stack = append(stack, c)
		}
	}
	d.down = identity(n)
	sort.SliceStable(d.down, func(i, j int) bool { return d.depth[d.down[i]] < d.depth[d.down[j]] })
	d.up = make([]int32, n)
	for i, r := range d.down {
		d.up[n-1-i] = r
	}
	return d
}

// TreeDepth returns the height (edges from root to the deepest leaf) of the taller of NCCL's
// two binary trees over n ranks: the number of sequential steps of each phase of the tree
// all-reduce. 0 for n <= 1.
func TreeDepth(n int) int {
	if n <= 1 {
		return 0
	}
	ts := doubleTree(n)
	return int(max(ts[0].height, ts[1].height))
}

// buildTree expands the double binary tree all-reduce.
func buildTree(b *builder) {
	sp := b.s.spec
	n := sp.Ranks
	if n == 1 {
		forLoops(sp.Bytes, 2*sp.Channels, sp.ChunkBytes, func(cc, j int, bytes int64) {
			b.ch = int32(cc)
			b.addBlock(bytes, int32(j), -1, -1)
		})
		return
	}
	ts := doubleTree(n)
	forLoops(sp.Bytes, 2*sp.Channels, sp.ChunkBytes, func(cc, j int, bytes int64) {
		b.ch = int32(cc)
		t := ts[cc%2]
		blk := b.addBlock(bytes, int32(j), -1, -1)
		b.unit(blk, 1)
		h := t.height
		for _, u := range t.up {
			p := t.parent[u]
			if p < 0 {
				continue
			}
			st := h - t.depth[u]
			r := b.xfer(u, p, blk, 1, st, true)
			b.reduce(p, r, blk, 1, st)
		}
		for _, u := range t.down {
			for _, c := range t.kids[u] {
				b.xfer(u, c, blk, 1, h+t.depth[u], false)
			}
		}
	})
}
