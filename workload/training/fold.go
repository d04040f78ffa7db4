package training

import (
	"fmt"

	"github.com/lockstepsim/lockstep/workload/collective"
)

// Fold simulates a job's symmetric data-parallel replicas once (RunOptions.Fold). Perm is a
// permutation pi of the ranks (ranks are hosts: Placement.Host) of order K under which the
// fabric is invariant (the caller proves it: the runner for a Clos's bundled MRC routes with
// the replicas shifted by whole switches) and under which the job is: Start checks that pi
// keeps every rank's stage (so its program) and maps every stream onto a stream of the same
// roles, member by member, and asks Check about every collective a stream that pi maps onto
// itself (a DP group across the replicas) posts. With no stragglers every replica then runs
// the same program at the same instants as its image, so the engine advances only the
// representative ranks (the least of each orbit), launches only the collectives of streams
// that have one (a stream across the replicas counts its representative members' posts),
// and reads every other rank's timeline from its representative's: the trace is the full
// run's. When a check fails (or with stragglers) the run is not folded and Enable is not
// called; Run.FoldReason says why.
type Fold struct {
	Perm []int32 // rank -> rank
	// Check reports whether spec on comm (some hosts representatives, some not) is invariant
	// under Perm, so that adding its representative flows alone is exact
	// (flow.Collectives.CheckFold).
	Check func(spec collective.Spec, comm collective.Comm) error
	// Enable is called once Start has accepted the fold, before anything is launched: the
	// backend starts simulating one flow per orbit (flow.Collectives.SetFold).
	Enable func() error
}

// FoldPerm returns the permutation of the ranks that shifts every rank's data-parallel
// coordinate by B (modulo DP) and its order DP/B, for the least B that divides DP, is a
// multiple of EP (expert groups map onto expert groups) and moves ranks by a multiple of
// unit hosts (B x the DP stride: whole switches or domains, as the caller's fabric needs);
// nil when there is none below DP.
func (j *Job) FoldPerm(unit int) ([]int32, int) {
	pl := j.Placement
	dp := pl.Size[DimDP]
	if unit < 1 || dp < 2 {
		return nil, 0
	}
	for b := max(pl.EP, 1); b < dp; b++ {
		if dp%b != 0 || b%max(pl.EP, 1) != 0 || (b*pl.stride[DimDP])%unit != 0 {
			continue
		}
		perm := make([]int32, pl.World)
		for r := range perm {
			c := pl.Coord(r)
			c.DP = (c.DP + b) % dp
			perm[r] = int32(pl.Rank(c))
		}
		return perm, dp / b
	}
	return nil, 0
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
	if len(f.Perm) != n {
		return fmt.Sprintf("permutation of %d ranks for %d", len(f.Perm), n), nil
	}
	// Orbits: each rank's representative (its orbit's least rank), walked in rank order.
	repOf := make([]int32, n)
	for i := range repOf {
		repOf[i] = -1
	}
	live := 0
	for i := range repOf {
		if repOf[i] >= 0 {
			continue
		}
		live++
		for x := i; repOf[x] < 0; x = int(f.Perm[x]) {
			if p := f.Perm[x]; p < 0 || int(p) >= n {
				return fmt.Sprintf("rank %d maps to %d, out of range", x, p), nil
			}
			repOf[x] = int32(i)
		}
	}
	for i := range r.ranks {
		if r.ranks[f.Perm[i]].stage != r.ranks[i].stage {
			return fmt.Sprintf("rank %d (stage %d) maps to rank %d (stage %d)", i, r.ranks[i].stage, f.Perm[i], r.ranks[f.Perm[i]].stage), nil
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
	type check struct {
		spec int32
		si   int
	}
	var checks []check
	for si := range r.streams {
		st := &r.streams[si]
		reps := 0
		for _, m := range st.members {
			if repOf[m] == m {
				reps++
			}
		}
		nrep[si] = int32(reps)
		mixed := reps > 0 && reps < len(st.members)
		for i, m := range st.members {
			rl := r.roleIn(m, int32(si))
			if rl == numRoles {
				return fmt.Sprintf("stream %s: member %d has no role (program bug)", st.name, m), nil
			}
			pm := f.Perm[m]
			sj := r.ranks[pm].str[rl]
			switch {
			case sj < 0:
				return fmt.Sprintf("stream %s: rank %d maps to rank %d, which has no such stream", st.name, m, pm), nil
			case mixed && sj != int32(si):
				return fmt.Sprintf("stream %s spans representatives and others but maps onto stream %s", st.name, r.streams[sj].name), nil
			case !mixed && (len(r.streams[sj].members) != len(st.members) || r.streams[sj].members[i] != pm):
				return fmt.Sprintf("stream %s does not map member by member onto stream %s", st.name, r.streams[sj].name), nil
			}
			if mixed {
				for _, sp := range posts[r.ranks[m].stage][rl] {
					checks = appendUniq(checks, check{spec: sp, si: si})
				}
			}
		}
	}
	for _, c := range checks {
		if err := f.Check(r.j.specs[c.spec], r.streams[c.si].comm); err != nil {
			return fmt.Sprintf("stream %s: %v", r.streams[c.si].name, err), nil
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
