package training

import (
	"fmt"
	"math"
	"sort"

	"github.com/lockstepsim/lockstep/sim"
)

// MaxPowerSamples bounds a power series (raise the interval for longer runs).
const MaxPowerSamples = 20_000_000

// PowerSeries is the cluster's power draw over the simulated steps (in the extended timeline:
// Trace), sampled at a fixed interval. Each GPU draws GPU.BusyW while computing, CommW while
// waiting on communication (categories tp, pp, dp, ep) and IdleW while waiting for other ranks
// (bubble, sync); the cluster draw is the sum over GPUs (GPU boards only: no CPUs, NICs,
// switches or cooling).
type PowerSeries struct {
	Interval sim.Time     // sample width
	MW       []float64    // sample i: mean power over [i, i+1) x Interval, megawatts
	Steps    []PowerStats // per simulated step
}

// PowerStats summarises one step's power.
//
// Swing is max - min of the samples lying wholly inside the step. Slew is the largest
// |P[i+1] - P[i]| / Interval between consecutive samples of the step, including the
// transition from its last sample to its first (steps repeat, so the next begins the same
// way); it depends on the interval (finer sampling sees steeper edges). Battery is the
// energy a battery must deliver to hold the grid draw flat at the step's mean: the integral
// of the positive deviation, E = ∫ max(0, P(t) - mean) dt over the step (equal to the
// integral of the negative deviation it must absorb). BatteryRange is the range of the
// running integral ∫ (P - mean) dt over the step: the storage actually needed, which equals
// Battery when the step has one high and one low phase and is smaller when charge and
// discharge alternate within the step.
type PowerStats struct {
	Step           int     // step number
	MeanMW         float64 // energy / step time (exact, from the timelines)
	MinMW          float64 // lowest sample inside the step
	MaxMW          float64 // highest sample inside the step
	SwingMW        float64 // MaxMW - MinMW
	SlewMWPerMs    float64 // largest change between consecutive samples, MW per ms
	EnergyMJ       float64 // energy of the step
	BatteryMJ      float64 // ∫ max(0, P - mean) dt over the step, megajoules
	BatteryMWh     float64 // the same in megawatt-hours (1 MWh = 3600 MJ)
	BatteryRangeMJ float64 // range of ∫ (P - mean) dt over the step, megajoules
}

// watts returns a GPU's draw in each category.
func (g GPU) watts(c Category) float64 {
	switch {
	case c == CatCompute:
		return g.BusyW
	case c.Comm():
		return g.CommW
	default:
		return g.IdleW
	}
}

// Power samples the cluster power over the trace's steps at interval. Errors: an interval
// <= 0, or more than MaxPowerSamples samples.
func (t *Trace) Power(interval sim.Time) (*PowerSeries, error) {
	if interval <= 0 {
		return nil, errorf("power.interval", "%v: want a sampling interval > 0 (e.g. 100us)", interval)
	}
	if len(t.Steps) == 0 {
		return &PowerSeries{Interval: interval}, nil
	}
	last := t.Steps[len(t.Steps)-1]
	total := last.Start + last.Time
	n := (total + interval - 1) / interval
	if n > MaxPowerSamples {
		return nil, errorf("power.interval", "%v gives %d samples over %v; at most %d: raise the interval", interval, n, total, MaxPowerSamples)
	}
	j := t.Job
	var w [NumCategories]float64
	for c := range w {
		w[c] = j.GPU.watts(Category(c))
	}
	acc := make([]float64, n) // watt-picoseconds per bin
	// full is a difference array of the watts drawn over whole bins (a span covering bins
	// i0+1 .. i1-1 adds at i0+1 and takes away at i1), so a long span (a pipeline bubble over
	// thousands of bins, on each of 131,072 ranks) costs O(1), not O(bins).
	full := make([]float64, n+1)
	I := int64(interval)
	add := func(a, b sim.Time, watts float64) {
		if b <= a {
			return
		}
		x, y := int64(a), int64(b)
		i0, i1 := x/I, (y-1)/I
		if i0 == i1 {
			acc[i0] += watts * float64(y-x)
			return
		}
		acc[i0] += watts * float64((i0+1)*I-x)
		if i0+1 < i1 {
			full[i0+1] += watts
			full[i1] -= watts
		}
		acc[i1] += watts * float64(y-i1*I)
	}
	pats := patEnergies{list: make([]*patEnergy, len(j.patterns))}
	for si := range t.Steps {
		st := &t.Steps[si]
		for ri := range st.tl {
			tl := &st.tl[ri]
			tl.each(func(s span) {
				a := st.Start + s.start
				if s.pat < 0 {
					add(a, st.Start+s.end, w[s.cat])
					return
				}
				if p := &j.patterns[s.pat]; s.end-s.start == p.dur {
					x, y := int64(a), int64(a+p.dur)
					if bins := (y-1)/I - x/I + 1; 4*bins < int64(len(p.segs)) {
						// Fewer bins than segments (long steps, coarse samples): each bin's
						// share from the pattern's cumulative energy, O(bins log segs).
						pe := pats.of(s.pat, p, &w)
						for i := x / I; i*I < y; i++ {
							lo, hi := max(i*I, x), min((i+1)*I, y)
							acc[i] += pe.at(sim.Time(hi-x)) - pe.at(sim.Time(lo-x))
						}
						return
					}
					for _, g := range p.segs {
						add(a, a+g.dur, w[g.cat])
						a += g.dur
					}
					return
				}
				j.segsOf(s, a, func(a, b sim.Time, c Category) { add(a, b, w[c]) }) // a straggler's
			})
			add(st.Start+tl.arrive, st.Start+st.Time, w[j.barrierCat()])
		}
	}
	var on float64 // watts drawn over whole bins at bin i
	for i := range acc {
		on += full[i]
		acc[i] += on * float64(I)
	}
	ps := &PowerSeries{Interval: interval, MW: make([]float64, n)}
	for i := range acc {
		width := I
		if i == len(acc)-1 && int64(total)%I != 0 {
			width = int64(total) % I
		}
		ps.MW[i] = acc[i] / float64(width) / 1e6
	}
	for si := range t.Steps {
		st := &t.Steps[si]
		var joules float64
		for ri := range st.Ranks {
			for c, v := range st.Ranks[ri] {
				joules += w[c] * v.Seconds()
			}
		}
		mean := joules / st.Time.Seconds() / 1e6
		lo, hi := (int64(st.Start)+I-1)/I, (int64(st.Start+st.Time))/I // whole samples inside the step
		if hi <= lo {
			lo, hi = int64(st.Start)/I, min((int64(st.Start+st.Time)+I-1)/I, int64(n))
		}
		s := PowerStats{Step: st.Index, MeanMW: mean, EnergyMJ: joules / 1e6, MinMW: math.Inf(1), MaxMW: math.Inf(-1)}
		var cum, cmin, cmax float64
		dt := interval.Seconds()
		for i := lo; i < hi; i++ {
			p := ps.MW[i]
			s.MinMW, s.MaxMW = min(s.MinMW, p), max(s.MaxMW, p)
			if p > mean {
				s.BatteryMJ += (p - mean) * dt
			}
			cum += (p - mean) * dt
			cmin, cmax = min(cmin, cum), max(cmax, cum)
			next := lo
			if i+1 < hi {
				next = i + 1
			}
			s.SlewMWPerMs = max(s.SlewMWPerMs, math.Abs(ps.MW[next]-p)/(dt*1e3))
		}
		s.SwingMW = s.MaxMW - s.MinMW
		s.BatteryMWh = s.BatteryMJ / 3600
		s.BatteryRangeMJ = cmax - cmin
		ps.Steps = append(ps.Steps, s)
	}
	return ps, nil
}

// String summarises the series: samples, and per step mean, swing, slew and battery.
func (ps *PowerSeries) String() string {
	s := fmt.Sprintf("%d samples of %v", len(ps.MW), ps.Interval)
	for _, st := range ps.Steps {
		s += fmt.Sprintf("\nstep %d: mean %.3f MW, min %.3f, max %.3f, swing %.3f MW, slew %.3f MW/ms, battery %.4g MWh (%.4g MJ)",
			st.Step, st.MeanMW, st.MinMW, st.MaxMW, st.SwingMW, st.SlewMWPerMs, st.BatteryMWh, st.BatteryMJ)
	}
	return s
}

// patEnergy is a pattern's cumulative energy: start[k] the offset of segment k, e[k] the
// watt-picoseconds drawn before it (e[len] the whole pattern's).
type patEnergy struct {
	start []sim.Time
	e     []float64
	w     []float64 // segment k's watts
}

// at returns the watt-picoseconds the pattern draws over [0, x), 0 <= x <= its duration.
func (pe *patEnergy) at(x sim.Time) float64 {
	k := sort.Search(len(pe.start), func(k int) bool { return pe.start[k] > x }) - 1
	if k < 0 {
		return 0
	}
	return pe.e[k] + pe.w[k]*float64(x-pe.start[k])
}

// patEnergies builds each pattern's patEnergy once, when a span first needs it.
type patEnergies struct{ list []*patEnergy }

func (ps *patEnergies) of(i int32, p *pattern, w *[NumCategories]float64) *patEnergy {
	if pe := ps.list[i]; pe != nil {
		return pe
	}
	pe := &patEnergy{start: make([]sim.Time, len(p.segs)), e: make([]float64, len(p.segs)+1), w: make([]float64, len(p.segs))}
	var t sim.Time
	for k, g := range p.segs {
		pe.start[k], pe.w[k] = t, w[g.cat]
		pe.e[k+1] = pe.e[k] + w[g.cat]*float64(g.dur)
		t += g.dur
	}
	ps.list[i] = pe
	return pe
}
