package collective

import (
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestHierarchicalRSAGNearClosedForm: the hierarchical reduce-scatter and all-gather on
// Ideal, over layouts I x O from 2x2 to 8x4 and sizes 4 MiB to 256 MiB, take their phases'
// pipelined forms (PipelinedScaleUp on one network) within 3% plus one latency a (the
// executor overlaps the two phases of successive loops, so one phase's trailing latency
// hides under the other's transfers) and never more than the
// alpha-beta form (I-1)a + (I-1)/I S b + (O-1)a + (O-1)/O (S/I) b, which charges every
// step's latency; and every rank sends exactly (I-1)/I S + (O-1)/O S/I bytes (up to
// rounding of the blocks).
func TestHierarchicalRSAGNearClosedForm(t *testing.T) {
	for _, op := range []Collective{ReduceScatter, AllGather} {
		for _, l := range [][2]int{{2, 2}, {4, 2}, {2, 4}, {8, 4}} {
			for _, S := range []int64{4 << 20, 64 << 20, 256 << 20} {
				sp := spec(op, Hierarchical, l[0]*l[1], S)
				sp.Inner, sp.Outer = l[0], l[1]
				r := run(t, sp, refModel)
				ab, err := AlphaBeta(sp, refModel)
				if err != nil {
					t.Fatal(err)
				}
				pf, err := PipelinedScaleUp(sp, refModel, refModel)
				if err != nil {
					t.Fatal(err)
				}
				if d := r.Time() - pf; d < -(pf*3/100+refModel.Latency) || d > pf*3/100 || r.Time() > ab {
					t.Errorf("%s %dx%d S=%d: simulated %v, pipelined phases %v (%.2f%%), alpha-beta %v; want within 3%% + a of the first and at most the second", op, l[0], l[1], S, r.Time(), pf, 100*relErr(r.Time(), pf), ab)
				}
				sch, err := Build(sp)
				if err != nil {
					t.Fatal(err)
				}
				var sent int64
				for i := 0; i < sch.Ranks(); i++ {
					sent = max(sent, sch.SentBytes(i))
				}
				I, O := int64(l[0]), int64(l[1])
				want := (I-1)*S/I + (O-1)*(S/I)/O
				if d := sent - want; d < -I*O || d > I*O {
					t.Errorf("%s %dx%d S=%d: a rank sends %d B; want (I-1)/I S + (O-1)/O S/I = %d", op, l[0], l[1], S, sent, want)
				}
			}
		}
	}
}

// TestHierarchicalPhasesSumToAlphaBeta: on one network the phases' ring forms add up to
// AlphaBeta's hierarchical form (the same terms), for every operation and layouts with
// I or O = 1; and AlphaBetaScaleUp charges the inner phases on the scale-up model: with an
// infinitely fast, latency-free domain (approximated by 10^6 x the rate) only the outer
// term remains, and with the scale-up model equal to the network it is AlphaBeta.
func TestHierarchicalPhasesSumToAlphaBeta(t *testing.T) {
	fast := Model{Rate: refModel.Rate * 1e6}
	for _, op := range []Collective{AllReduce, ReduceScatter, AllGather} {
		for _, l := range [][2]int{{1, 4}, {4, 1}, {2, 2}, {9, 4}, {72, 16}} {
			for _, S := range []int64{1 << 20, 1 << 30} {
				sp := spec(op, Hierarchical, l[0]*l[1], S)
				sp.Inner, sp.Outer = l[0], l[1]
				ab, err := AlphaBeta(sp, refModel)
				if err != nil {
					t.Fatal(err)
				}
				same, err := AlphaBetaScaleUp(sp, refModel, refModel)
				if err != nil {
					t.Fatal(err)
				}
				if d := same - ab; d < -sim.Nanosecond || d > sim.Nanosecond {
					t.Errorf("%s %dx%d S=%d: phases sum to %v, AlphaBeta %v", op, l[0], l[1], S, same, ab)
				}
				outerOnly, err := AlphaBetaScaleUp(sp, fast, refModel)
				if err != nil {
					t.Fatal(err)
				}
				I, O := float64(l[0]), float64(l[1])
				steps := O - 1
				if op == AllReduce {
					steps *= 2
				}
				want := sim.FromSeconds(steps*refModel.Latency.Seconds() + steps/O*float64(S)/I*8/float64(refModel.Rate))
				if e := relErr(outerOnly, want); O > 1 && e > 1e-3 {
					t.Errorf("%s %dx%d S=%d: with a free domain %v; want the outer phase %v", op, l[0], l[1], S, outerOnly, want)
				}
			}
		}
	}
	if _, err := HierarchicalPhases(spec(AllReduce, Ring, 8, 1<<20)); err == nil {
		t.Error("HierarchicalPhases accepted a ring")
	}
}
