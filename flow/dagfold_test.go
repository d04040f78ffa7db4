package flow

import (
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// The schedule model under a fold is exact (dagfold.go): on the 16-host fabric of four T0s,
// a ring all-reduce (one loop, and four loops of 128 KiB chunks), a halving-doubling
// all-reduce and a ring reduce-scatter across all hosts (a communicator of
// representative and other hosts, invariant under the fold), with a pairwise all-to-all in
// each T0 and (under the rotation) sends from each T0 to the next, end at the same picosecond folded as in
// full, with the schedule model on in both runs: the rings folded by the rotation of the
// T0s, halving-doubling by the flips of host bits 2 and 3 (its partners map onto partners;
// under the rotation its check fails); and the folded runs add a quarter of the flows.
func TestFoldScheduleMatchesFull(t *testing.T) {
	r := &twoTier{hosts: 16, per: 4}
	rotT0 := make([]int32, 16)
	flip4, flip8 := make([]int32, 16), make([]int32, 16)
	for h := range 16 {
		rotT0[h] = int32((h + 4) % 16)
		flip4[h], flip8[h] = int32(h^4), int32(h^8)
	}
	mb := int64(1 << 20)
	ring := collective.NewSpec(collective.AllReduce, 16, 8*mb)
	ring.Algo = collective.Ring
	loops := ring
	loops.ChunkBytes = 128 << 10 // 8 MiB in loops of 16 x 128 KiB: 4 loops
	hd := collective.NewSpec(collective.AllReduce, 16, 8*mb)
	hd.Algo = collective.HalvingDoubling
	rs := collective.NewSpec(collective.ReduceScatter, 16, 8*mb)
	rs.Algo = collective.Ring
	a2a := collective.NewSpec(collective.AllToAll, 4, 4*mb)
	a2a.Algo = collective.Pairwise
	send := collective.NewSpec(collective.SendRecv, 2, 3*mb)
	send.Algo, send.Root, send.Peer = collective.Direct, 0, 1
	for _, c := range []struct {
		name  string
		first collective.Spec
		gens  [][]int32
	}{
		{"ring", ring, [][]int32{rotT0}}, {"ring of 4 loops", loops, [][]int32{rotT0}},
		{"reduce-scatter", rs, [][]int32{rotT0}}, {"halving-doubling", hd, [][]int32{flip4, flip8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ls := []foldLaunch{{spec: c.first, hosts: hostRange(0, 16)}}
			for b := range 4 {
				ls = append(ls, foldLaunch{spec: a2a, hosts: hostRange(4*b, 4), at: 10 * sim.Microsecond})
			}
			for h := range 16 {
				if c.first.Algo == collective.Ring { // the sends are invariant under the rotation only
					ls = append(ls, foldLaunch{spec: send, hosts: []int{h, (h + 4) % 16}, at: 50 * sim.Microsecond})
				}
			}
			gens := c.gens
			full, fs := runFoldSched(t, r, ls, nil, 1<<21)
			folded, ffs := runFoldSched(t, r, ls, gens, 1<<21)
			phases, _ := runFoldSched(t, r, ls, nil, 0)
			for i := range ls {
				if folded[i] >= 0 && folded[i] != full[i] {
					t.Errorf("launch %d (%s on %v): folded end %v, full %v", i, ls[i].spec.Op, ls[i].hosts, folded[i], full[i])
				}
			}
			if ffs.FlowsAdded*4 != fs.FlowsAdded {
				t.Errorf("flows %d folded, %d full; want a quarter", ffs.FlowsAdded, fs.FlowsAdded)
			}
			if c.first.Algo != collective.Ring && full[0] == phases[0] {
				t.Errorf("%s: the schedule model's end %v equals the phase model's: the schedule did not run", c.name, full[0])
			}
			t.Logf("flows %d -> %d; first collective %v (phases %v)", fs.FlowsAdded, ffs.FlowsAdded, full[0], phases[0])
		})
	}
}

// A schedule that is not equivariant under the stabiliser is refused: a ring all-reduce
// whose 16 segments are not all of one size (16 MiB + 8 bytes: the first ranks' segments
// are a byte longer) under the rotation of the T0s.
func TestFoldScheduleRefusal(t *testing.T) {
	r := &twoTier{hosts: 16, per: 4}
	rotT0 := make([]int32, 16)
	for h := range 16 {
		rotT0[h] = int32((h + 4) % 16)
	}
	f, err := NewFold([][]int32{rotT0}, [][]int32{r.linkGen(rotT0)})
	if err != nil {
		t.Fatal(err)
	}
	s := sim.New(1)
	n, _ := New(s, r.caps(), Config{})
	c, _ := NewCollectives(n, r, CollConfig{})
	c.SetSchedules(1 << 21)
	odd := collective.NewSpec(collective.AllReduce, 16, 16<<20+8)
	odd.Algo = collective.Ring
	comm, _ := collective.NewComm(hostRange(0, 16))
	stab := stabiliser([][]int32{rotT0}, hostRange(0, 16))
	if err := c.CheckFold(f, stab, odd, comm); err == nil || !strings.Contains(err.Error(), "differ") {
		t.Errorf("uneven ring: %v; want its ops to differ", err)
	}
	even := odd
	even.Bytes = 16 << 20
	if err := c.CheckFold(f, stab, even, comm); err != nil {
		t.Errorf("even ring: %v", err)
	}
}
