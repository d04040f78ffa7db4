package training

import (
	"fmt"

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
	// backend starts simulating one flow per orbit (flow.Collectives.SetFold).
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
// returns why not otherwise ("" when folded).
func (r *Run) setupFold(f *Fold) (string, error) {
	n := len(r.ranks)
	if r.strag != nil {
		return "stragglers break the replicas' symmetry", nil
	}
	if len(f.Gens) == 0 {
		return "no generators", nil
	}
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
	}
	// The group's elements other than the identity, by closure under the generators.
	id := make([]int32, n)
	for i := range id {
		id[i] = int32(i)
	}
	elems := [][]int32{id}
	known := map[string]bool{permKey(id): true}
	for k := 0; k < len(elems); k++ {
		for _, g := range f.Gens {
			p := make([]int32, n)
			for i, x := range elems[k] {
				p[i] = g[x]
			}
			if key := permKey(p); !known[key] {
				if len(elems) >= maxFoldOrder {
					return fmt.Sprintf("group of more than %d elements", maxFoldOrder), nil
				}
				known[key] = true
				elems = append(elems, p)
			}
		}
	}
	elems = elems[1:]
	// Each rank's representative: the least of its orbit; free: K distinct images.
	repOf := make([]int32, n)
	live := 0
	for i := range repOf {
		m := int32(i)
		for _, e := range elems {
			if e[i] == int32(i) {
				return fmt.Sprintf("rank %d is fixed by an element of the group", i), nil
			}
			m = min(m, e[i])
		}
		repOf[i] = m
		if m == int32(i) {
			live++
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
	nrep := make([]int32, len(r.streams))
	checked := map[string]error{}
	roles := make([]role, 0, 8)
	var stab [][]int32
	var reached []reach
	for si := range r.streams {
		st := &r.streams[si]
		roles = roles[:0]
		reps := 0
		for _, m := range st.members {
			rl := r.roleIn(m, int32(si))
			if rl == numRoles {
				return fmt.Sprintf("stream %s: member %d has no role (program bug)", st.name, m), nil
			}
			roles = append(roles, rl)
			if repOf[m] == m {
				reps++
			}
		}
		nrep[si] = int32(reps)
		// Every element maps the stream onto itself (its stabiliser) or onto another stream;
		// each other stream reached must be reached member by member by some element: the
		// others reaching it differ from that one by the stabiliser, under which what the
		// stream posts is invariant (checked below), so they map its collectives onto the
		// same ones.
		stab = stab[:0]
		reached = reached[:0]
		for _, e := range elems {
			sj := r.ranks[e[st.members[0]]].str[roles[0]]
			if sj < 0 {
				return fmt.Sprintf("stream %s: rank %d maps to rank %d, which has no such stream", st.name, st.members[0], e[st.members[0]]), nil
			}
			img := &r.streams[sj]
			if len(img.members) != len(st.members) {
				return fmt.Sprintf("stream %s maps onto stream %s of another size", st.name, img.name), nil
			}
			exact := true
			for i, m := range st.members {
				pm := e[m]
				if r.ranks[pm].str[roles[i]] != sj {
					return fmt.Sprintf("stream %s: member %d maps to rank %d, not a member of stream %s in its role", st.name, m, pm, img.name), nil
				}
				exact = exact && img.members[i] == pm
			}
			if sj == int32(si) {
				stab = append(stab, e)
				continue
			}
			reached = appendReach(reached, sj, exact)
		}
		for _, x := range reached {
			if !x.exact {
				return fmt.Sprintf("stream %s: no element maps it member by member onto stream %s", st.name, r.streams[x.si].name), nil
			}
		}
		if reps == 0 {
			continue
		}
		for i, m := range st.members {
			if r.ranks[repOf[m]].str[roles[i]] != int32(si) {
				return fmt.Sprintf("stream %s: the representative of member %d is rank %d, not a member", st.name, m, repOf[m]), nil
			}
		}
		if len(stab) == 0 {
			continue
		}
		// Invariance of what the stream posts under its stabiliser, once per pattern (the
		// stabiliser on the members and which are representatives) and spec.
		pat := streamPattern(st.members, stab, repOf)
		for i, m := range st.members {
			for _, sp := range posts[r.ranks[m].stage][roles[i]] {
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
	if f.Enable != nil {
		if err := f.Enable(); err != nil {
			return "", err
		}
	}
	for si := range r.hot {
		r.hot[si].nmem = nrep[si]
	}
	r.fold = &foldState{repOf: repOf, live: live}
	return "", nil
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

// Folded reports whether the run simulates one replica per orbit of a fold.
func (r *Run) Folded() bool { return r.fold != nil }

func joinReason(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
