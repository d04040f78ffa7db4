package training

import (
	"fmt"
	"slices"

	"github.com/lockstepsim/lockstep/workload/collective"
)

// Fold simulates a job's symmetric replicas once (RunOptions.Folds). Gens generate an
// abelian group G of permutations of the ranks (ranks are hosts: Placement.Host), free on
// the ranks, under which the fabric is invariant (the caller proves it: the runner for a
// Clos's bundled MRC routes with the replicas moved by whole switches). Start checks that
// the job is invariant too: every element of G keeps every rank's stage (so its program)
// and maps every stream either member by member onto another stream of the same roles or
// onto itself; for a stream that some elements map onto themselves (its stabiliser: a DP
// group across the replicas) Check must find every collective it posts invariant under
// them; a stream with a representative rank (the least of its orbit) must hold the
// representatives of all its members. With no stragglers every replica then runs the same
// program at the same instants as its images, so the engine advances only the
// representative ranks, launches only the collectives of streams that have one (counting
// their representative members' posts), and reads every other rank's timeline from its
// representative's: the trace is the full run's. When a check fails (or with stragglers)
// the fold is not used and Enable is not called; Run.FoldReason says why.
type Fold struct {
	Gens [][]int32 // each a permutation rank -> rank; they commute (flow.NewFold checks)
	// Check reports whether spec on comm (some hosts representatives, some not) is invariant
	// under stab, the elements of G that map comm onto itself, so that adding its
	// representative flows alone is exact (flow.Collectives.CheckFold).
	Check func(stab [][]int32, spec collective.Spec, comm collective.Comm) error
	// Enable is called once Start has accepted the fold, before anything is launched: the
	// backend starts simulating one flow per orbit (flow.Collectives.SetFold). An error
	// (the backend's own checks failed; it must then be unchanged) rejects the fold.
	Enable func() error
}

// maxFoldOrder bounds the group a fold enumerates.
const maxFoldOrder = 1 << 12

// FoldGroups returns candidate groups of symmetries of the job's replicas, as generators on
// the ranks, largest first. The DP part: for the least block B of DP coordinates that
// divides DP, is a multiple of EP (expert groups map onto expert groups) and moves ranks by
// a multiple of unit hosts (B x the DP stride: whole switches or domains, as the caller's
// fabric needs), the rotation of every rank's DP coordinate by B (a ring across the
// replicas maps onto itself); when B and DP are powers of two, the flips of each DP
// coordinate bit from B's up (halving-doubling's partners map onto partners); the rotation
// by DP/2 (both at once). The TP part: the rotation of every rank's TP coordinate by one
// (the GPUs of a tensor-parallel group inside one domain: a permutation of a domain's
// hosts), with each DP part and alone. The caller's fabric check and the run's checks
// (Start) keep the first that holds.
func (j *Job) FoldGroups(unit int) [][][]int32 {
	pl := j.Placement
	gen := func(f func(Coord) Coord) []int32 {
		perm := make([]int32, pl.World)
		for r := range perm {
			perm[r] = int32(pl.Rank(f(pl.Coord(r))))
		}
		return perm
	}
	var dps [][][]int32
	dp := pl.Size[DimDP]
	ep := max(pl.EP, 1)
	fits := func(x int) bool { return x < dp && dp%x == 0 && x%ep == 0 && (x*pl.stride[DimDP])%unit == 0 }
	if unit >= 1 && dp >= 2 {
		b := 0
		for x := ep; x < dp; x += ep {
			if fits(x) {
				b = x
				break
			}
		}
		rot := func(by int) []int32 {
			return gen(func(c Coord) Coord { c.DP = (c.DP + by) % dp; return c })
		}
		if b > 0 {
			dps = append(dps, [][]int32{rot(b)})
			if b&(b-1) == 0 && dp&(dp-1) == 0 && 2*b < dp {
				var flips [][]int32
				for bit := b; bit < dp; bit <<= 1 {
					flips = append(flips, gen(func(c Coord) Coord { c.DP ^= bit; return c }))
				}
				dps = append(dps, flips)
			}
			if dp%2 == 0 && b != dp/2 && fits(dp/2) {
				dps = append(dps, [][]int32{rot(dp / 2)})
			}
		}
	}
	var out [][][]int32
	if tp := pl.Size[DimTP]; tp > 1 {
		tpRot := gen(func(c Coord) Coord { c.TP = (c.TP + 1) % tp; return c })
		for _, d := range dps {
			out = append(out, append([][]int32{tpRot}, d...))
		}
		out = append(out, [][]int32{tpRot})
	}
	return append(out, dps...)
}

// foldState is an accepted fold: each rank's representative and which ranks are simulated.
type foldState struct {
	repOf []int32 // rank -> the least rank of its orbit
	live  int     // simulated ranks (representatives)
}

// setupFold checks f against the run's ranks and streams (see Fold) and, when it holds,
// folds the run: representative member counts per stream, r.fold set, Enable called. It
// returns why not otherwise ("" when folded). Cost: O(ranks x generators) for the ranks and
// the streams; the group's elements are enumerated only on the members of streams with a
// stabiliser (DP groups), K x their members.
func (r *Run) setupFold(f *Fold) (string, error) {
	n := len(r.ranks)
	if r.strag != nil {
		return "stragglers break the replicas' symmetry", nil
	}
	if len(f.Gens) == 0 {
		return "no generators", nil
	}
	k := 1
	for _, g := range f.Gens {
		if len(g) != n {
			return fmt.Sprintf("permutation of %d ranks for %d", len(g), n), nil
		}
		for i, x := range g {
			if x < 0 || int(x) >= n {
				return fmt.Sprintf("rank %d maps to %d, out of range", i, x), nil
			}
			if r.ranks[x].stage != r.ranks[i].stage {
				return fmt.Sprintf("rank %d (stage %d) maps to rank %d (stage %d)", i, r.ranks[i].stage, x, r.ranks[x].stage), nil
			}
		}
		o := permOrder(g)
		if o < 1 || k > maxFoldOrder/o {
			return fmt.Sprintf("group of more than %d elements", maxFoldOrder), nil
		}
		k *= o
	}
	for i := range f.Gens {
		for j := range i {
			for x := range n {
				if f.Gens[i][f.Gens[j][x]] != f.Gens[j][f.Gens[i][x]] {
					return fmt.Sprintf("generators %d and %d do not commute", j, i), nil
				}
			}
		}
	}
	// Rank orbits: each of k ranks (then the group has k elements and acts freely), each
	// rank's representative the least of its orbit.
	repOf := make([]int32, n)
	for i := range repOf {
		repOf[i] = -1
	}
	live := 0
	var orbit []int32
	for i := range repOf {
		if repOf[i] >= 0 {
			continue
		}
		live++
		orbit = closure(orbit[:0], int32(i), f.Gens, func(x int32) bool {
			if repOf[x] >= 0 {
				return false
			}
			repOf[x] = int32(i)
			return true
		})
		if len(orbit) != k {
			return fmt.Sprintf("rank %d has an orbit of %d ranks, want %d", i, len(orbit), k), nil
		}
	}
	// The specs each (stage, role) posts.
	posts := make([][numRoles][]int32, len(r.progs))
	for st, prog := range r.progs {
		for _, o := range prog {
			if o.kind == opPost {
				posts[st][o.role] = appendUniq(posts[st][o.role], o.arg)
			}
		}
	}
	// The generators on the streams: img[si*ng+i] the stream generator i maps si onto (every
	// member onto a member of the same role), exact[...] whether member by member.
	ng := len(f.Gens)
	ns := len(r.streams)
	img := make([]int32, ns*ng)
	exact := make([]bool, ns*ng)
	nrep := make([]int32, ns)
	roles := make([][]role, ns)
	for si := range r.streams {
		st := &r.streams[si]
		roles[si] = make([]role, len(st.members))
		for i, m := range st.members {
			rl := r.roleIn(m, int32(si))
			if rl == numRoles {
				return fmt.Sprintf("stream %s: member %d has no role (program bug)", st.name, m), nil
			}
			roles[si][i] = rl
			if repOf[m] == m {
				nrep[si]++
			}
		}
		for gi, g := range f.Gens {
			sj := r.ranks[g[st.members[0]]].str[roles[si][0]]
			if sj < 0 || len(r.streams[sj].members) != len(st.members) {
				return fmt.Sprintf("stream %s does not map onto a stream", st.name), nil
			}
			ex := true
			for i, m := range st.members {
				pm := g[m]
				if r.ranks[pm].str[roles[si][i]] != sj {
					return fmt.Sprintf("stream %s: member %d maps to rank %d, not a member of stream %s in its role", st.name, m, pm, r.streams[sj].name), nil
				}
				ex = ex && r.streams[sj].members[i] == pm
			}
			img[si*ng+gi], exact[si*ng+gi] = sj, ex
		}
		if nrep[si] > 0 {
			for i, m := range st.members {
				if r.ranks[repOf[m]].str[roles[si][i]] != int32(si) {
					return fmt.Sprintf("stream %s: the representative of member %d is rank %d, not a member", st.name, m, repOf[m]), nil
				}
			}
		}
	}
	// Stream orbits. Each stream of an orbit must be reached from its first by generators
	// member by member (then its collectives are the images of the first's). A stream of
	// an orbit of fewer than k streams has a stabiliser: what the orbit's simulated streams
	// post must be invariant under it (then any element reaching a stream maps the first's
	// collectives onto that stream's, as the member-by-member one does).
	seen := make([]bool, ns)
	checked := map[string]error{}
	pool := permPool{n: n}
	var sorb, queue []int32
	for s0 := range r.streams {
		if seen[s0] {
			continue
		}
		sorb = append(sorb[:0], int32(s0))
		seen[s0] = true
		for q := 0; q < len(sorb); q++ {
			for gi := range ng {
				if sj := img[int(sorb[q])*ng+gi]; !seen[sj] {
					seen[sj] = true
					sorb = append(sorb, sj)
				}
			}
		}
		if k%len(sorb) != 0 {
			return fmt.Sprintf("stream %s has an orbit of %d streams, which does not divide %d", r.streams[s0].name, len(sorb), k), nil
		}
		// Member-by-member reach from s0.
		reach := map[int32]bool{int32(s0): true}
		queue = append(queue[:0], int32(s0))
		for q := 0; q < len(queue); q++ {
			for gi := range ng {
				x := int(queue[q])*ng + gi
				if sj := img[x]; exact[x] && !reach[sj] {
					reach[sj] = true
					queue = append(queue, sj)
				}
			}
		}
		if len(reach) != len(sorb) {
			return fmt.Sprintf("stream %s: not every stream of its orbit is its image member by member", r.streams[s0].name), nil
		}
		if len(sorb) == k {
			continue // no stabiliser
		}
		stab, err := r.stabiliser(f.Gens, sorb, roles[sorb[0]], k, &pool)
		if err != "" {
			return err, nil
		}
		for _, si := range sorb {
			if nrep[si] == 0 {
				continue
			}
			st := &r.streams[si]
			pat := streamPattern(st.members, stab, repOf)
			for i, m := range st.members {
				for _, sp := range posts[r.ranks[m].stage][roles[si][i]] {
					key := fmt.Sprintf("%d:%s", sp, pat)
					err, ok := checked[key]
					if !ok {
						err = f.Check(stab, r.j.specs[sp], st.comm)
						checked[key] = err
					}
					if err != nil {
						return fmt.Sprintf("stream %s: %v", st.name, err), nil
					}
				}
			}
		}
		pool.release()
	}
	if f.Enable != nil {
		if err := f.Enable(); err != nil {
			return err.Error(), nil // the backend refused it, unchanged
		}
	}
	for si := range r.hot {
		r.hot[si].nmem = nrep[si]
	}
	r.fold = &foldState{repOf: repOf, live: live}
	return "", nil
}

// stabiliser returns the elements of the group generated by gens (of k elements) that map
// stream sorb[0] (its members in roles rls) onto itself, as permutations of the ranks that
// are the identity outside the members of the streams sorb (an orbit of streams: closed
// under the group), which is all a fold check reads; their memory is pool's until its
// release. The elements are enumerated on those members only.
func (r *Run) stabiliser(gens [][]int32, sorb []int32, rls []role, k int, pool *permPool) ([][]int32, string) {
	var dom []int32
	for _, si := range sorb {
		dom = append(dom, r.streams[si].members...)
	}
	slices.Sort(dom)
	dom = slices.Compact(dom)
	at := make(map[int32]int32, len(dom))
	for i, x := range dom {
		at[x] = int32(i)
	}
	d := len(dom)
	local := make([][]int32, len(gens))
	for gi, g := range gens {
		local[gi] = make([]int32, d)
		for i, x := range dom {
			j, ok := at[g[x]]
			if !ok {
				return nil, fmt.Sprintf("stream %s: its orbit's members are not closed under the group", r.streams[sorb[0]].name)
			}
			local[gi][i] = j
		}
	}
	id := make([]int32, d)
	for i := range id {
		id[i] = int32(i)
	}
	elems := [][]int32{id}
	known := map[string]bool{permKey(id): true}
	for q := 0; q < len(elems) && len(elems) <= k; q++ {
		for _, g := range local {
			p := make([]int32, d)
			for i, x := range elems[q] {
				p[i] = g[x]
			}
			if key := permKey(p); !known[key] {
				known[key] = true
				elems = append(elems, p)
			}
		}
	}
	if len(elems) != k {
		return nil, fmt.Sprintf("stream %s: the group has %d elements on its orbit, want %d", r.streams[sorb[0]].name, len(elems), k)
	}
	s0 := sorb[0]
	members := r.streams[s0].members
	var stab [][]int32
	for _, e := range elems[1:] {
		in := true
		for i, m := range members {
			if r.ranks[dom[e[at[m]]]].str[rls[i]] != s0 {
				in = false
				break
			}
		}
		if !in {
			continue
		}
		full := pool.get(dom)
		for i, x := range dom {
			full[x] = dom[e[i]]
		}
		stab = append(stab, full)
	}
	return stab, ""
}

// permPool lends identity permutations of n ranks; release restores the entries set since
// (those of the domains passed to get) so that they can be lent again.
type permPool struct {
	n    int
	free [][]int32
	lent [][]int32
	doms [][]int32
}

func (p *permPool) get(dom []int32) []int32 {
	var x []int32
	if k := len(p.free); k > 0 {
		x, p.free = p.free[k-1], p.free[:k-1]
	} else {
		x = make([]int32, p.n)
		for i := range x {
			x[i] = int32(i)
		}
	}
	p.lent, p.doms = append(p.lent, x), append(p.doms, dom)
	return x
}

func (p *permPool) release() {
	for i, x := range p.lent {
		for _, d := range p.doms[i] {
			x[d] = d
		}
		p.free = append(p.free, x)
	}
	p.lent, p.doms = p.lent[:0], p.doms[:0]
}

// closure appends to buf the orbit of x under gens, visiting each new member with add
// (which reports whether it is new), and returns it.
func closure(buf []int32, x int32, gens [][]int32, add func(int32) bool) []int32 {
	if !add(x) {
		return buf
	}
	buf = append(buf, x)
	for q := len(buf) - 1; q < len(buf); q++ {
		for _, g := range gens {
			if y := g[buf[q]]; add(y) {
				buf = append(buf, y)
			}
		}
	}
	return buf
}

// permOrder returns the order of permutation p (the lcm of its cycle lengths), 0 past
// maxFoldOrder.
func permOrder(p []int32) int {
	seen := make([]bool, len(p))
	o := 1
	for h := range p {
		if seen[h] {
			continue
		}
		size := 0
		for x := h; !seen[x]; x = int(p[x]) {
			seen[x] = true
			size++
		}
		a, b := o, size
		for b != 0 {
			a, b = b, a%b
		}
		if o = o / a * size; o > maxFoldOrder {
			return 0
		}
	}
	return o
}

// reach is a stream an element of a fold's group maps another onto, and whether some
// element does so member by member.
type reach struct {
	si    int32
	exact bool
}

func appendReach(s []reach, si int32, exact bool) []reach {
	for i := range s {
		if s[i].si == si {
			s[i].exact = s[i].exact || exact
			return s
		}
	}
	return append(s, reach{si: si, exact: exact})
}

// permKey is a permutation as a map key.
func permKey(p []int32) string {
	b := make([]byte, 4*len(p))
	for i, x := range p {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(x), byte(x>>8), byte(x>>16), byte(x>>24)
	}
	return string(b)
}

// streamPattern describes how stab permutes a stream's members (by member index) and which
// members are representatives: two streams of one pattern posting one spec get the same
// answer from a fold check (it reads only ranks, not hosts).
func streamPattern(members []int32, stab [][]int32, repOf []int32) string {
	at := make(map[int32]int32, len(members))
	for i, m := range members {
		at[m] = int32(i)
	}
	p := make([]int32, 0, len(members)*(len(stab)+1))
	for _, m := range members {
		if repOf[m] == m {
			p = append(p, 1)
		} else {
			p = append(p, 0)
		}
	}
	for _, e := range stab {
		for _, m := range members {
			p = append(p, at[e[m]])
		}
	}
	return permKey(p)
}

// roleIn returns the role in which rank m is a member of stream si, numRoles when it is not
// one.
func (r *Run) roleIn(m, si int32) role {
	for rl, s := range r.ranks[m].str {
		if s == si {
			return role(rl)
		}
	}
	return numRoles
}

// appendUniq appends x to s unless s holds it.
func appendUniq[T comparable](s []T, x T) []T {
	for _, y := range s {
		if y == x {
			return s
		}
	}
	return append(s, x)
}

// simulated reports whether rank i is advanced by the engine (every rank unless folded).
func (r *Run) simulated(i int) bool { return r.fold == nil || r.fold.repOf[i] == int32(i) }

// stateOf returns the state rank i's timeline is read from: its own, or folded its
// representative's.
func (r *Run) stateOf(i int) *rankState {
	if r.fold != nil {
		return &r.ranks[r.fold.repOf[i]]
	}
	return &r.ranks[i]
}

// liveRanks is the number of ranks the engine advances.
func (r *Run) liveRanks() int {
	if r.fold != nil {
		return r.fold.live
	}
	return len(r.ranks)
}

// FoldOrder returns how many ranks each simulated rank stands for: the order of the fold's
// group, 1 when the run is not folded.
func (r *Run) FoldOrder() int {
	if r.fold == nil {
		return 1
	}
	return len(r.ranks) / r.fold.live
}

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
