package training

import (
	"fmt"
	"math"
	"slices"

	"github.com/lockstepsim/lockstep/sim"
)

// Trace is what a run measured: one StepTrace per simulated step, each rank's time by
// category, and the timelines the power trace is computed from.
//
// # Reuse of identical rounds
//
// A step with m > 2PP+3 microbatches is simulated with m' = 2PP+2 (unless RunOptions.Exact):
// Megatron's 1F1B steady loop then runs on every stage through round PP+2, and rounds PP and
// PP+1 of every rank lie in the part of the schedule where all stages are in steady state
// (round k of stage p consumes activations stage 0 produced in its round k-p >= 1, past the
// start-up transient, and stage 0's rounds PP and PP+1 are not its last). Each rank's
// timeline is then extended by inserting m - m' copies of its round PP (from the mark at the
// start of the round to the next) after that round and shifting everything after it by
// (m - m') x period. Times, categories and the power trace are computed from the extended
// timelines; the gradient reduction, optimizer and barrier that follow the steady loop are
// simulated, not extrapolated. The run checks that rounds PP and PP+1 are identical on every
// rank (same spans, durations within max(10 ns, 1e-4 x period)) and that every rank has the
// same period; if not, Periodic is false, Notes says by how much they differed, and
// RunOptions.Exact gives the exact answer.
//
// Identical steps are not simulated either: every step starts from the same state, so the
// Config simulates RunOptions.Steps (default 1) and repeats the last for the remaining
// iterations.
type Trace struct {
	Job                   *Job        // the job that ran
	Steps                 []StepTrace // one per simulated step
	SimulatedMicrobatches int         // m' microbatches simulated per step (m when exact)
	Periodic              bool        // the repeated rounds were identical (or none were repeated)
	PeriodDeviation       sim.Time    // largest difference seen between the compared rounds
	Notes                 []string    // warnings
}

// StepTrace is one step: its (extended) time, and per rank its time by category, which sums
// to Time on every rank.
type StepTrace struct {
	Index   int         // step number, from 0
	Start   sim.Time    // start in the extended timeline (the sum of the previous steps' times)
	Time    sim.Time    // step time: first rank starts to last rank reaches the barrier
	SimTime sim.Time    // the simulated duration (with m' microbatches)
	Ranks   []Breakdown // per rank
	Mean    Breakdown   // mean over ranks
	Max     Breakdown   // maximum over ranks, per category
	// Slowest is the rank that reached the end of the step last (ties: the lowest rank).
	Slowest int
	// SlowestWait is the waiting category in which the slowest rank exceeds the mean rank the
	// most: what made it late; when it exceeds the mean in none (the ranks tie), its largest
	// waiting category.
	SlowestWait Category
	// Busiest is the rank that computed the longest (ties: the lowest rank): a straggler, or
	// a rank of the busiest pipeline stage.
	Busiest int
	// SimStart is the step's start in simulated time (absolute: the simulation's clock, which
	// fault times are on); the step ends at SimStart + SimTime.
	SimStart sim.Time
	// Arrive is the distribution over ranks of the arrival at the step barrier, relative to
	// the step start (in the extended timeline): P100 is Time.
	Arrive Percentiles
	// DPSkew is the distribution over the step's data-parallel collectives (every gradient
	// bucket reduction and ZeRO all-gather of every DP and expert-DP group) of how long the
	// first member to post it waited for the last: the launch skew a straggler causes.
	DPSkew Percentiles
	// DPSkewWorst names the collective with the largest skew ("dp[tp=0 pp=1] stage 1 grads
	// bucket 2/3"); "" when the step has none.
	DPSkewWorst string
	tl          []rankTL
}

// Percentiles are nearest-rank percentiles of a set of times: Pq is the ceil(q n)-th smallest
// of n values (P100 the largest); N is how many there were (0: all zero).
type Percentiles struct {
	P50, P99, P100 sim.Time
	N              int
}

// percentiles returns the nearest-rank P50, P99 and P100 of v, sorting v in place.
func percentiles(v []sim.Time) Percentiles {
	n := len(v)
	if n == 0 {
		return Percentiles{}
	}
	slices.Sort(v)
	at := func(q float64) sim.Time { return v[max(int(math.Ceil(q*float64(n)))-1, 0)] }
	return Percentiles{P50: at(0.50), P99: at(0.99), P100: v[n-1], N: n}
}

// rankTL is one rank's simulated timeline in a step and how it is extended.
type rankTL struct {
	spans  []span   // simulated, absolute times
	lo, hi int32    // repeated window [lo, hi) (lo == hi: none)
	period sim.Time // the window's duration
	rep    int      // extra copies
	arrive sim.Time // extended arrival at the barrier, relative to the step start
	base   sim.Time // simulated step start
}

// Spans calls f for every phase of rank's timeline in the step, in order: start and end in
// the extended timeline (absolute: the step's Start plus the offset in the step) and the
// category the rank spent it on (compute, or waiting on TP, PP, DP, EP communication, the
// bubble, a group member). The barrier wait at the step's end is not included. Repeated
// 1F1B rounds are reported as the copies they stand for. Ranks out of range report nothing.
func (st *StepTrace) Spans(rank int, f func(start, end sim.Time, c Category)) {
	if rank < 0 || rank >= len(st.tl) {
		return
	}
	st.tl[rank].each(func(s span) { f(st.Start+s.start, st.Start+s.end, s.cat) })
}

// each calls f for every span of the extended timeline, in order, with times relative to
// the step start; the barrier wait is not included.
func (tl *rankTL) each(f func(s span)) {
	shift := func(s span, d sim.Time) span {
		s.start += d - tl.base
		s.end += d - tl.base
		return s
	}
	for i := int32(0); i < int32(len(tl.spans)); i++ {
		if i == tl.hi && tl.rep > 0 {
			for k := 1; k <= tl.rep; k++ {
				for w := tl.lo; w < tl.hi; w++ {
					f(shift(tl.spans[w], sim.Time(k)*tl.period))
				}
			}
		}
		d := sim.Time(0)
		if i >= tl.hi {
			d = sim.Time(tl.rep) * tl.period
		}
		f(shift(tl.spans[i], d))
	}
}

// finishStep turns the ranks' simulated spans into a StepTrace.
func (r *Run) finishStep(end sim.Time) {
	j := r.j
	n := len(r.ranks)
	st := StepTrace{Index: r.step, SimTime: end - r.start, SimStart: r.start, Ranks: make([]Breakdown, n), tl: make([]rankTL, n)}
	if k := len(r.trace.Steps); k > 0 {
		prev := r.trace.Steps[k-1]
		st.Start = prev.Start + prev.Time
	}
	var period0 sim.Time = -1
	sum := func(b *Breakdown, s span) {
		if s.pat >= 0 {
			j.computeOf(b, s)
			return
		}
		b[s.cat] += s.end - s.start
	}
	for i := range r.ranks {
		rs := r.stateOf(i) // folded: its representative's timeline, the same instants
		tl := rankTL{spans: rs.spans, base: r.start, arrive: rs.arrive - r.start}
		if r.rep > 0 {
			if len(rs.marks) < r.kc+3 {
				r.fail(fmt.Errorf("training: rank %d has %d steady-round marks, want %d (program bug)", i, len(rs.marks), r.kc+3))
				return
			}
			a, b, c := rs.marks[r.kc], rs.marks[r.kc+1], rs.marks[r.kc+2]
			tl.lo, tl.hi, tl.period, tl.rep = a.span, b.span, b.at-a.at, r.rep
			tol := max(10*sim.Nanosecond, tl.period/10000)
			dev := absTime((c.at - b.at) - tl.period)
			if b.span-a.span != c.span-b.span {
				dev = max(dev, tl.period)
			} else {
				for k := int32(0); k < b.span-a.span; k++ {
					x, y := rs.spans[a.span+k], rs.spans[b.span+k]
					if x.pat != y.pat || x.cat != y.cat {
						dev = max(dev, tl.period)
						break
					}
					dev = max(dev, absTime((x.end-x.start)-(y.end-y.start)))
				}
			}
			if period0 < 0 {
				period0 = tl.period
			}
			dev = max(dev, absTime(tl.period-period0))
			r.trace.PeriodDeviation = max(r.trace.PeriodDeviation, dev)
			if dev > tol && r.trace.Periodic {
				r.trace.Periodic = false
				r.trace.Notes = append(r.trace.Notes, fmt.Sprintf("step %d: the repeated 1F1B rounds are not periodic on rank %d (rounds %d and %d differ by %v of a %v period); the %d extrapolated microbatches are approximate: simulate exactly for an exact answer",
					r.step, i, r.kc, r.kc+1, dev, tl.period, r.rep))
			}
			tl.arrive += sim.Time(r.rep) * tl.period
		}
		st.tl[i] = tl
		b := &st.Ranks[i]
		for _, s := range rs.spans {
			sum(b, s)
		}
		if tl.rep > 0 {
			var w Breakdown
			for _, s := range rs.spans[tl.lo:tl.hi] {
				sum(&w, s)
			}
			for c := range w {
				b[c] += sim.Time(tl.rep) * w[c]
			}
		}
		if tl.arrive > st.Time {
			st.Time, st.Slowest = tl.arrive, i
		}
	}
	barrier := j.barrierCat()
	for i := range st.Ranks {
		st.Ranks[i][barrier] += st.Time - st.tl[i].arrive
		for c, v := range st.Ranks[i] {
			st.Mean[c] += v
			st.Max[c] = max(st.Max[c], v)
		}
	}
	for c := range st.Mean {
		st.Mean[c] /= sim.Time(n)
	}
	for i := range st.Ranks {
		if st.Ranks[i][CatCompute] > st.Ranks[st.Busiest][CatCompute] {
			st.Busiest = i
		}
	}
	// Why the slowest rank was late: the waiting category in which it exceeds the mean rank
	// the most (the bubble every pipeline rank has is not the cause unless it is larger).
	slow := st.Ranks[st.Slowest]
	best, excess := Category(CatTP), sim.Time(0)
	for c := CatTP; c < NumCategories; c++ {
		if d := slow[c] - st.Mean[c]; d > excess {
			best, excess = c, d
		}
	}
	if excess == 0 {
		// Late in no category (the ranks tie, as in a symmetric job): name the slowest rank's
		// largest wait rather than a category it never waited on.
		for c := CatTP; c < NumCategories; c++ {
			if slow[c] > slow[best] {
				best = c
			}
		}
	}
	st.SlowestWait = best
	arr := make([]sim.Time, n)
	for i := range st.tl {
		arr[i] = st.tl[i].arrive
	}
	st.Arrive = percentiles(arr)
	var skews []sim.Time
	var worst sim.Time = -1
	for si := range r.streams {
		sm := &r.streams[si]
		if !sm.dp {
			continue
		}
		h := &r.hot[si]
		for _, c := range r.calls[h.base : h.base+h.n] {
			if int(c.arrived) < len(sm.members) {
				continue
			}
			d := c.allAt - c.firstAt
			skews = append(skews, d)
			if d > worst {
				worst, st.DPSkewWorst = d, sm.name+" "+r.labelOf(c.label)
			}
		}
	}
	st.DPSkew = percentiles(skews)
	r.trace.Steps = append(r.trace.Steps, st)
}

func absTime(t sim.Time) sim.Time {
	if t < 0 {
		return -t
	}
	return t
}
