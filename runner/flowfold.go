package runner

import (
	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/workload/collective"
	"github.com/lockstepsim/lockstep/workload/training"
)

// foldMinRanks is the least job size folded: below it the full simulation is cheap, and
// small runs keep their event counts (a variable for tests).
var foldMinRanks = 1024

// foldOff disables folding (tests comparing folded and full runs).
var foldOff = false

// trainFold returns the candidate folds of a flow-level training job's symmetric
// data-parallel replicas (training.Fold, flow.Fold; the engine takes the first whose checks
// pass), none when the run cannot be folded exactly. The
// fabric part of the proof is here: the routes are MRC's bundles on a Clos or fat-tree
// (flowRouter.bundled: a flow a -> b crosses a's NIC bundle, the bundles of a's T0 and pod
// and of b's pod and T0 unless they share them, and b's NIC bundle; its latency is a
// function of how many bundles it crosses), so a permutation pi of the hosts that maps every
// T0's hosts onto one T0's (and in three tiers every pod's onto one pod's), every scale-up
// domain onto a domain, and every bundle onto a bundle of the same capacity maps each route
// onto the route of the image pair, with the same latency. The candidate groups rotate
// every rank's TP coordinate inside its domain and move its DP coordinate by whole T0s
// (pods) and domains (training.Job.FoldGroups). links.csv reads each link as its class
// times K/m (flow.Net's view). Not folded: faults (they break the symmetry), other routes
// (RoCE's ECMP hashing is not equivariant), jobs under foldMinRanks ranks or not filling
// the fabric.
func trainFold(sc *scenario.Scenario, layout topo.Topology, job *training.Job, b *trainBackend) []*training.Fold {
	r := b.router
	l, ok := layout.(*topo.Layout)
	if foldOff || !ok || b.ff != nil || r == nil || r.bt == nil || r.dead != nil || b.fc == nil {
		return nil
	}
	if sc.Workload.Training == nil || sc.Workload.Training.Stragglers != nil {
		return nil
	}
	pl := job.Placement
	d := r.bt.d
	hosts := l.NumHosts()
	if pl.World < foldMinRanks || pl.World != hosts || d.T0Down < 1 {
		return nil
	}
	unit := d.T0Down
	if d.Tiers == 3 {
		unit *= max(d.T0PerPod, 1)
	}
	if r.domain > 1 {
		unit = lcm(unit, r.domain)
	}
	var out []*training.Fold
	for _, gens := range job.FoldGroups(unit) {
		lgens := make([][]int32, len(gens))
		for i, g := range gens {
			if lgens[i] = foldLinks(r, b.fnet, g, hosts); lgens[i] == nil {
				break
			}
		}
		if lgens[len(gens)-1] == nil {
			continue
		}
		// The group's checks (NewFold) only for a candidate the job's checks reach.
		var f *flow.Fold
		var ferr error
		fold := func() (*flow.Fold, error) {
			if f == nil && ferr == nil {
				f, ferr = flow.NewFold(gens, lgens)
			}
			return f, ferr
		}
		out = append(out, &training.Fold{
			Gens: gens,
			Check: func(stab [][]int32, spec collective.Spec, comm collective.Comm) error {
				f, err := fold()
				if err != nil {
					return err
				}
				return b.fc.CheckFold(f, stab, spec, comm)
			},
			Enable: func() error {
				f, err := fold()
				if err != nil {
					return err
				}
				return b.fc.SetFold(f)
			},
		})
	}
	return out
}

// foldLinks returns permutation perm of the hosts on the flow network's directed links (the bundles and the scale-up
// links; -1 for the fabric's own links, which bundled routes do not cross), nil when pi
// does not map T0s (pods, domains) onto T0s (pods, domains) or a bundle onto one of another
// capacity.
func foldLinks(r *flowRouter, net *flow.Net, perm []int32, hosts int) []int32 {
	bt := r.bt
	d := bt.d
	out := make([]int32, net.NumLinks())
	for i := range out {
		out[i] = -1
	}
	// group maps each block of size hosts per group onto the block its hosts go to, or
	// reports that they scatter.
	group := func(size, groups int) []int {
		img := make([]int, groups)
		for i := range img {
			img[i] = -1
		}
		for h := 0; h < hosts; h++ {
			g, pg := h/size, int(perm[h])/size
			if g >= groups || pg >= groups {
				return nil
			}
			if img[g] < 0 {
				img[g] = pg
			} else if img[g] != pg {
				return nil
			}
		}
		return img
	}
	t0 := group(d.T0Down, len(bt.t0B)/2)
	if t0 == nil {
		return nil
	}
	set := func(from, to int32) bool {
		out[from] = to
		return net.Capacity(int(from)) == net.Capacity(int(to))
	}
	for h := 0; h < hosts; h++ {
		for dir := range 2 {
			if !set(bt.hostB[2*h+dir], bt.hostB[2*int(perm[h])+dir]) {
				return nil
			}
		}
	}
	for t, pt := range t0 {
		for dir := range 2 {
			if pt >= 0 && !set(bt.t0B[2*t+dir], bt.t0B[2*pt+dir]) {
				return nil
			}
		}
	}
	if d.Tiers == 3 {
		pod := group(d.T0Down*max(d.T0PerPod, 1), len(bt.podB)/2)
		if pod == nil {
			return nil
		}
		for p, pp := range pod {
			for dir := range 2 {
				if pp >= 0 && !set(bt.podB[2*p+dir], bt.podB[2*pp+dir]) {
					return nil
				}
			}
		}
	}
	if r.domain > 1 {
		if group(r.domain, (hosts+r.domain-1)/r.domain) == nil {
			return nil
		}
		for h := 0; h < hosts; h++ {
			for dir := range 2 {
				if !set(int32(r.nvl+2*h+dir), int32(r.nvl+2*int(perm[h])+dir)) {
					return nil
				}
			}
		}
	}
	return out
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}
