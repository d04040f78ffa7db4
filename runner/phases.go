package runner

import (
	"encoding/csv"
	"io"
	"slices"
	"strconv"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/training"
)

// Bounds of phases.csv: the ranks it lists and its rows (docs/outputs.md).
const (
	// MaxPhaseRanks is the most ranks phases.csv lists: each simulated step's slowest,
	// fastest and busiest rank, then one rank per pipeline stage, then ranks spread evenly.
	MaxPhaseRanks = 16
	// MaxPhaseRows is the most rows phases.csv holds: ranks are left out, the last chosen
	// first, until the rest fit; a first rank alone beyond it is cut at MaxPhaseRows rows.
	MaxPhaseRows = 200_000
)

// PhasesCSVHeader is the header of phases.csv: one row per phase of a listed rank in a
// simulated step.
var PhasesCSVHeader = []string{"step", "rank", "coord", "chosen", "category", "start_us", "end_us"}

// phaseRank is a rank phases.csv lists and why.
type phaseRank struct {
	rank   int
	chosen string // "slowest", "fastest", "busiest", "stage", "spread" ("+"-joined)
}

// phaseRanks chooses the ranks phases.csv lists (at most MaxPhaseRanks, in rank order):
// every step's slowest (the last at the barrier), fastest (the first there; ties the lowest
// rank) and busiest (the longest compute), then the first rank of each pipeline stage (tp 0,
// dp 0; evenly spaced stages when there are more than fit), then ranks spread evenly over
// the world. arrive[s][r] is rank r's arrival in step s.
func phaseRanks(tr *training.Trace, arrive [][]sim.Time) []phaseRank {
	pl := tr.Job.Placement
	world := pl.World
	why := map[int]string{}
	var order []int
	add := func(r int, reason string) bool {
		if r < 0 || r >= world {
			return true
		}
		if w, ok := why[r]; ok {
			if !slices.Contains(splitPlus(w), reason) {
				why[r] = w + "+" + reason
			}
			return true
		}
		if len(order) >= MaxPhaseRanks {
			return false
		}
		why[r] = reason
		order = append(order, r)
		return true
	}
	for s, st := range tr.Steps {
		fast := 0
		for r, a := range arrive[s] {
			if a < arrive[s][fast] {
				fast = r
			}
		}
		add(st.Slowest, "slowest")
		add(fast, "fastest")
		add(st.Busiest, "busiest")
	}
	stages := pl.Group(training.DimPP, 0)
	room := max(MaxPhaseRanks-len(order), 1)
	for i := range min(len(stages), room) {
		k := i
		if len(stages) > room {
			k = i * (len(stages) - 1) / max(room-1, 1)
		}
		add(stages[k], "stage")
	}
	if n := MaxPhaseRanks - len(order); n > 0 {
		for i := range n {
			r := 0
			if n > 1 {
				r = i * (world - 1) / (n - 1)
			}
			add(r, "spread")
		}
	}
	out := make([]phaseRank, 0, len(order))
	for _, r := range order {
		out = append(out, phaseRank{rank: r, chosen: why[r]})
	}
	return out
}

func splitPlus(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '+' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// phase is one row of phases.csv before it is written.
type phase struct {
	step, rank int
	cat        string
	start, end sim.Time
}

// rankPhases returns rank's phases in step (an index into tr.Steps): its spans with compute
// split into kernels and NVLink TP (training.Trace.Segments; adjacent phases of one category
// merged) and, when it reached the barrier before the step's end, the wait there (the
// bubble with pipeline parallelism, else sync, as the step's breakdown counts it).
func rankPhases(tr *training.Trace, step, rank int, barrier training.Category) []phase {
	var out []phase
	st := &tr.Steps[step]
	last := st.Start
	tr.Segments(step, rank, func(a, b sim.Time, c training.Category) {
		if b <= a {
			return
		}
		name := c.String()
		if n := len(out); n > 0 && out[n-1].cat == name && out[n-1].end == a {
			out[n-1].end = b
		} else {
			out = append(out, phase{step: st.Index, rank: rank, cat: name, start: a, end: b})
		}
		last = max(last, b)
	})
	if end := st.Start + st.Time; end > last {
		name := barrier.String()
		if n := len(out); n > 0 && out[n-1].cat == name && out[n-1].end == last {
			out[n-1].end = end
		} else {
			out = append(out, phase{step: st.Index, rank: rank, cat: name, start: last, end: end})
		}
	}
	return out
}

// WritePhasesCSV writes phases.csv: for a few ranks (phaseRanks: at most MaxPhaseRanks), each
// phase of every simulated step in order, with the step, the rank, its coordinates, why it
// was chosen, the category (training.Category's names: compute, tp, pp, dp, ep, cp, bubble,
// sync) and its start and end on the steps' timeline (steps.csv's start_us: the steps back
// to back from 0, repeated 1F1B rounds as the copies they stand for). Adjacent phases of one
// category are merged; the wait at the step's end for the slowest rank is the bubble with
// pipeline parallelism, else sync. At most MaxPhaseRows rows. Errors: the writer's.
func (t *TrainingRun) WritePhasesCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(PhasesCSVHeader); err != nil {
		return err
	}
	var tr *training.Trace
	if t.Result != nil {
		tr = t.Result.Trace()
	}
	if tr == nil || tr.Job == nil || len(tr.Steps) == 0 {
		cw.Flush()
		return cw.Error()
	}
	pl := tr.Job.Placement
	barrier := training.CatSync
	if tr.Job.Plan.PP > 1 {
		barrier = training.CatBubble
	}
	arrive := make([][]sim.Time, len(tr.Steps))
	for s := range tr.Steps {
		st := &tr.Steps[s]
		arrive[s] = make([]sim.Time, pl.World)
		for r := range pl.World {
			a := st.Start
			st.Spans(r, func(_, b sim.Time, _ training.Category) { a = max(a, b) })
			arrive[s][r] = a
		}
	}
	ranks := phaseRanks(tr, arrive)
	per := make([][]phase, len(ranks))
	total := 0
	keep := 0
	for i, pr := range ranks {
		for s := range tr.Steps {
			per[i] = append(per[i], rankPhases(tr, s, pr.rank, barrier)...)
		}
		if i > 0 && total+len(per[i]) > MaxPhaseRows {
			break
		}
		total += len(per[i])
		keep = i + 1
	}
	// The kept ranks, in rank order, each with its phases step by step.
	idx := make([]int, keep)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return ranks[a].rank - ranks[b].rank })
	f := func(x sim.Time) string { return strconv.FormatFloat(x.Micros(), 'f', -1, 64) }
	rows := 0
	for _, i := range idx {
		pr := ranks[i]
		coord := pl.Coord(pr.rank).String()
		for _, p := range per[i] {
			if rows >= MaxPhaseRows {
				break
			}
			rows++
			if err := cw.Write([]string{strconv.Itoa(p.step), strconv.Itoa(p.rank), coord, pr.chosen, p.cat, f(p.start), f(p.end)}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
