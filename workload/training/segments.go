package training

import "github.com/lockstepsim/lockstep/sim"

// Segments calls f for every phase of rank's timeline in step (an index into Steps), in
// order, as Spans does but with each compute span split into its pattern's segments: the
// kernels (CatCompute) and the closed-form NVLink tensor-parallel all-reduces between them
// (CatTP), as the step's breakdown counts them (a straggler's longer compute stretches the
// compute segments). Times are in the extended timeline (the step's Start plus the offset);
// the barrier wait at the step's end is not included. A step or rank out of range reports
// nothing.
func (tr *Trace) Segments(step, rank int, f func(start, end sim.Time, c Category)) {
	if step < 0 || step >= len(tr.Steps) {
		return
	}
	st := &tr.Steps[step]
	if rank < 0 || rank >= len(st.tl) {
		return
	}
	st.tl[rank].each(func(s span) {
		if s.pat >= 0 && tr.Job != nil {
			tr.Job.segsOf(s, st.Start+s.start, f)
			return
		}
		f(st.Start+s.start, st.Start+s.end, s.cat)
	})
}
