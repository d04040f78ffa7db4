package flow

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/lockstepsim/lockstep/workload/collective"
)

// The schedule model under a fold (fold.go), on a communicator that mixes representative
// and other hosts (a DP group across the replicas, invariant under its stabiliser stab).
//
// CheckFold accepts such a collective when its schedule is equivariant under every element
// of stab, as a permutation rho of the communicator's ranks, with the ops matched by their
// place among their rank's ops ordered by (step, kind, channel, chunk), program order among
// equals (rankTables: the k-th op of rank r and the k-th op of rank rho(r)): the
// same kind and bytes, peers and matching ops mapped by rho, dependencies (all on the op's
// own rank) mapped place by place; and when every rank's representative (the least host of
// its orbit, Fold.repOf) is a member that some element of stab maps onto it. Then every
// rank runs its representative's program at the same instants (the run is invariant, as
// the phase model's is), so only the representative ranks' ops are simulated: their sends
// are the flows, one per orbit of messages as foldDemands keeps them, on the links'
// classes; and the delivery of a representative's k-th op, a send, stands for the k-th op
// of every rank it represents, so it also completes the receives, on representative ranks,
// that those images match (dagFoldInst's img).

// rankTables returns, for schedule ds, each op's place among its rank's ops and the ops of
// every rank in that order (off[r]..off[r+1] in ops), built on first use.
func (ds *dagSched) rankTables() (pos, off, ops []int32) {
	if ds.pos != nil {
		return ds.pos, ds.rankOff, ds.rankOps
	}
	sch := ds.sch
	n := sch.Ranks()
	all := sch.Ops()
	off = make([]int32, n+1)
	for i := range all {
		off[all[i].Rank+1]++
	}
	for r := 0; r < n; r++ {
		off[r+1] += off[r]
	}
	pos = make([]int32, len(all))
	ops = make([]int32, len(all))
	fill := make([]int32, n)
	for i := range all {
		r := all[i].Rank
		ops[off[r]+fill[r]] = int32(i)
		fill[r]++
	}
	// A rank's ops in the order (step, kind, channel, chunk), program order among equals:
	// the same place for an op and its image under a symmetry that permutes the ranks (a
	// ring's rank 0 posts its first send before its first receive, the others after).
	key := func(i int32) [4]int32 {
		o := &all[i]
		return [4]int32{o.Step, int32(o.Kind), int32(sch.BlockChannel(int(o.Block))), int32(sch.BlockChunk(int(o.Block)))}
	}
	for r := 0; r < n; r++ {
		seg := ops[off[r]:off[r+1]]
		slices.SortStableFunc(seg, func(a, b int32) int {
			ka, kb := key(a), key(b)
			for t := range ka {
				if ka[t] != kb[t] {
					return cmp.Compare(ka[t], kb[t])
				}
			}
			return 0
		})
		for k, i := range seg {
			pos[i] = int32(k)
		}
	}
	ds.pos, ds.rankOff, ds.rankOps = pos, off, ops
	return pos, off, ops
}

// repRanks returns, by rank of comm, the rank of its host's representative (Fold.repOf), -1
// when that host is not a member.
func repRanks(f *Fold, comm collective.Comm) []int32 {
	n := comm.Size()
	at := make(map[int32]int32, n)
	for r := 0; r < n; r++ {
		at[int32(comm.Host(r))] = int32(r)
	}
	out := make([]int32, n)
	for r := 0; r < n; r++ {
		q, ok := at[f.repOf[comm.Host(r)]]
		if !ok {
			q = -1
		}
		out[r] = q
	}
	return out
}

// checkFoldSchedule is CheckFold for a collective that runs the schedule model: its
// schedule equivariant under every rank permutation of rhos (the stabiliser's elements on
// comm's ranks), and every rank's representative a member mapped onto it by one of them
// (see above). Errors: the first failure.
func (c *Collectives) checkFoldSchedule(fold *Fold, rhos [][]int32, sp collective.Spec, comm collective.Comm) error {
	ds, err := c.dag.schedule(&sp)
	if err != nil {
		return err
	}
	sch := ds.sch
	all := sch.Ops()
	pos, off, ops := ds.rankTables()
	n := sch.Ranks()
	for i := range all {
		for _, d := range sch.Deps(i) {
			if all[d].Rank != all[i].Rank {
				return fmt.Errorf("flow: fold: %s: op %d of rank %d depends on rank %d's op %d", sp.Op, i, all[i].Rank, all[d].Rank, d)
			}
		}
	}
	for gi, rho := range rhos {
		for r := 0; r < n; r++ {
			x := rho[r]
			if off[r+1]-off[r] != off[x+1]-off[x] {
				return fmt.Errorf("flow: fold: %s: rank %d has %d ops and its image %d has %d", sp.Op, r, off[r+1]-off[r], x, off[x+1]-off[x])
			}
			for k := int32(0); k < off[r+1]-off[r]; k++ {
				i, j := ops[off[r]+k], ops[off[x]+k]
				a, b := &all[i], &all[j]
				switch {
				case a.Kind != b.Kind || sch.Bytes(int(i)) != sch.Bytes(int(j)):
					return fmt.Errorf("flow: fold: %s: op %d of rank %d (%d bytes) and its image on rank %d (%d bytes) differ (stabiliser element %d)", sp.Op, k, r, sch.Bytes(int(i)), x, sch.Bytes(int(j)), gi)
				case a.Kind != collective.OpReduce && rho[a.Peer] != b.Peer:
					return fmt.Errorf("flow: fold: %s: op %d of rank %d has peer %d, its image on rank %d peer %d, not %d", sp.Op, k, r, a.Peer, x, b.Peer, rho[a.Peer])
				case a.Kind != collective.OpReduce && pos[a.Match] != pos[b.Match]:
					return fmt.Errorf("flow: fold: %s: op %d of rank %d and its image on rank %d match ops at different places", sp.Op, k, r, x)
				}
				da, db := sch.Deps(int(i)), sch.Deps(int(j))
				if len(da) != len(db) {
					return fmt.Errorf("flow: fold: %s: op %d of rank %d has %d dependencies, its image on rank %d %d", sp.Op, k, r, len(da), x, len(db))
				}
				for t := range da {
					found := false
					for _, e := range db {
						if pos[e] == pos[da[t]] {
							found = true
							break
						}
					}
					if !found {
						return fmt.Errorf("flow: fold: %s: op %d of rank %d and its image on rank %d have different dependencies", sp.Op, k, r, x)
					}
				}
			}
		}
	}
	reps := repRanks(fold, comm)
	for r := 0; r < n; r++ {
		q := reps[r]
		if q < 0 {
			return fmt.Errorf("flow: fold: host %d of the communicator has its representative %d outside it", comm.Host(r), fold.repOf[comm.Host(r)])
		}
		if q == int32(r) {
			continue
		}
		mapped := false
		for _, rho := range rhos {
			if rho[q] == int32(r) {
				mapped = true
				break
			}
		}
		if !mapped {
			return fmt.Errorf("flow: fold: no element of the communicator's stabiliser maps host %d onto host %d, which it represents", comm.Host(int(q)), comm.Host(r))
		}
	}
	return nil
}

// dagFoldInst prepares d, a schedule-model collective on a mixed communicator under the
// fold (CheckFold accepted it), to simulate its representative ranks only: the other
// ranks' ops are marked done (never run) and img lists, by send op of a representative
// rank, the receives on representative ranks its delivery completes: its own match and
// those of the sends it stands for (the same place in the program of every rank it
// represents). It returns the number of ops to run. Errors: a rank whose representative is
// not a member.
func (c *Collectives) dagFoldInst(d *dagInst) (int, error) {
	in, ds := d.in, d.ds
	sch := ds.sch
	all := sch.Ops()
	_, off, ops := ds.rankTables()
	n := sch.Ranks()
	reps := repRanks(c.fold, in.comm)
	isRep := func(r int32) bool { return reps[r] == r }
	active := 0
	cnt := make([]int32, len(all)+1)
	for b := int32(0); b < int32(n); b++ {
		q := reps[b]
		if q < 0 {
			return 0, fmt.Errorf("host %d of the communicator has its representative %d outside it", in.comm.Host(int(b)), c.fold.repOf[in.comm.Host(int(b))])
		}
		if q == b {
			active += int(off[b+1] - off[b])
		}
		for k := int32(0); k < off[b+1]-off[b]; k++ {
			o := &all[ops[off[b]+k]]
			if o.Kind == collective.OpSend && isRep(o.Peer) {
				cnt[ops[off[q]+k]+1]++
			}
		}
	}
	for i := range all {
		cnt[i+1] += cnt[i]
		if !isRep(all[i].Rank) {
			d.st[i] |= dagDone
		}
	}
	img := make([]int32, cnt[len(all)])
	fill := make([]int32, len(all))
	for b := int32(0); b < int32(n); b++ {
		q := reps[b]
		for k := int32(0); k < off[b+1]-off[b]; k++ {
			o := &all[ops[off[b]+k]]
			if o.Kind == collective.OpSend && isRep(o.Peer) {
				j := ops[off[q]+k]
				img[cnt[j]+fill[j]] = o.Match
				fill[j]++
			}
		}
	}
	d.img, d.imgOff = img, cnt
	return active, nil
}
