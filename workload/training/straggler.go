package training

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
)

// Stragglers is `workload.training.stragglers`: GPUs that compute slower than their peers.
// Each rank's compute runs at a speed, the product of the factors that apply to it; a compute
// phase of nominal duration d (FLOPs / (peak x efficiency), and the optimizer's HBM time) then
// takes d / speed, while the NVLink TP time inside it does not change:
//
//	stragglers:
//	  slow: [{ranks: [17], speed: 0.8}]                        # fixed slow GPUs (ranks or ranges "0-7")
//	  jitter: {sigma: 0.02}                                    # lognormal, per compute op (per: op | step)
//	  throttle: [{ranks: [3], at: 2s, for: 500ms, speed: 0.7}] # thermal throttling windows
//
// Ranks are the job's ranks (rank r runs on host r; Placement.Coord gives its grid position).
// Decisions (see the package documentation, "Stragglers"): jitter multiplies each compute op's
// duration by exp(sigma Z), Z standard normal, drawn per rank per op (the default, per: op) or
// once per rank per step (per: step), from the simulation's seed (the scenario's run.seed); a
// tensor-parallel group inside one NVLink domain (costed in closed form) computes at the pace of
// its slowest member, the others waiting for it as sync. The zero value (no stragglers) leaves
// the run exactly as without the section.
type Stragglers struct {
	Slow     []SlowGPUs `yaml:"slow,omitempty"`     // fixed slow GPUs
	Jitter   *Jitter    `yaml:"jitter,omitempty"`   // random per-op (or per-step) speed noise
	Throttle []Throttle `yaml:"throttle,omitempty"` // slow-downs during windows of simulated time
}

// SlowGPUs is one entry of stragglers.slow: ranks that always compute at Speed.
type SlowGPUs struct {
	Ranks []RankRange `yaml:"ranks"` // ranks, or inclusive ranges "0-7"
	Speed float64     `yaml:"speed"` // compute speed, MinSpeed to MaxSpeed (1: nominal)
}

// Jitter is stragglers.jitter: random variation of compute time.
type Jitter struct {
	// Dist is the distribution of the duration multiplier: "lognormal" (the default and only
	// one): exp(Sigma Z), median 1, mean exp(Sigma^2/2).
	Dist string `yaml:"dist,omitempty"`
	// Sigma is the standard deviation of the multiplier's logarithm, 0 to MaxJitterSigma
	// (0.02: a kernel's time varies by about 2%).
	Sigma float64 `yaml:"sigma"`
	// Per is how often a rank draws: "op" (default: every compute op, so the slowest of N
	// ranks at each synchronisation grows with N) or "step" (one draw per rank per step: a GPU
	// that is slow for a whole step).
	Per string `yaml:"per,omitempty"`
}

// Throttle is one entry of stragglers.throttle: ranks that compute at Speed from At for For
// (simulated time from the job's start), as a GPU does when it throttles its clocks at its
// thermal or power limit. Overlapping windows (and a slow entry) multiply.
type Throttle struct {
	Ranks []RankRange `yaml:"ranks"` // ranks, or inclusive ranges "0-7"
	At    sim.Time    `yaml:"at"`    // start, from the job's start
	For   sim.Time    `yaml:"for"`   // duration, > 0
	Speed float64     `yaml:"speed"` // compute speed in the window, MinSpeed to MaxSpeed
}

// Limits of straggler inputs.
const (
	MinSpeed       = 0.05 // slower than 1/20 is a failed GPU, not a straggler
	MaxSpeed       = 1.5  // a GPU faster than its peers (binning) is allowed up to 1.5x
	MaxJitterSigma = 0.5  // exp(0.5 Z) already spans 0.37x to 2.7x at 2 sigma
)

// RankRange is an inclusive range of ranks, Lo to Hi. YAML: a rank (17) or a range ("0-7").
type RankRange struct{ Lo, Hi int }

// String formats the range as "17" or "0-7", which UnmarshalText reads back.
func (r RankRange) String() string {
	if r.Lo == r.Hi {
		return strconv.Itoa(r.Lo)
	}
	return strconv.Itoa(r.Lo) + "-" + strconv.Itoa(r.Hi)
}

// MarshalText implements encoding.TextMarshaler with String.
func (r RankRange) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler: "17" or "0-7" (lo <= hi, both >= 0).
func (r *RankRange) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	lo, hi, isRange := strings.Cut(s, "-")
	a, err := strconv.Atoi(strings.TrimSpace(lo))
	if err != nil || a < 0 {
		return fmt.Errorf("want a rank >= 0 (17) or a range (\"0-7\")") // the decoder names the value
	}
	z := a
	if isRange {
		if z, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || z < a {
			return fmt.Errorf("want a rank range lo-hi with 0 <= lo <= hi (\"0-7\")")
		}
	}
	*r = RankRange{a, z}
	return nil
}

// Active reports whether any straggler is configured (a jitter of sigma 0 is none).
func (s *Stragglers) Active() bool {
	return s != nil && (len(s.Slow) > 0 || len(s.Throttle) > 0 || s.Jitter != nil && s.Jitter.Sigma > 0)
}

// validate checks the section; world > 0 bounds the ranks. Paths are relative to the section.
func (s *Stragglers) validate(world int) error {
	if s == nil {
		return nil
	}
	speed := func(path string, v float64) error {
		if v == 0 {
			return errorf(path, "missing (or 0): want a compute speed of %v to %v (1 is nominal, 0.8 a GPU 20%% slower)", MinSpeed, MaxSpeed)
		}
		if !(v >= MinSpeed && v <= MaxSpeed) {
			return errorf(path, "%v: want a compute speed of %v to %v (1 is nominal, 0.8 a GPU 20%% slower)", v, MinSpeed, MaxSpeed)
		}
		return nil
	}
	ranks := func(path string, rs []RankRange) error {
		if len(rs) == 0 {
			return errorf(path, "empty: list the ranks (17) or ranges (\"0-7\")")
		}
		for i, r := range rs {
			switch {
			case r.Lo < 0 || r.Hi < r.Lo:
				return errorf(fmt.Sprintf("%s[%d]", path, i), "%v: want a rank >= 0 or a range lo-hi with lo <= hi", r)
			case world > 0 && r.Hi >= world:
				return errorf(fmt.Sprintf("%s[%d]", path, i), "%v: rank %d is outside the job's %d ranks (0 to %d)", r, r.Hi, world, world-1)
			}
		}
		return nil
	}
	type owned struct{ lo, hi, entry int }
	var spans []owned
	for i, e := range s.Slow {
		p := fmt.Sprintf("slow[%d]", i)
		if err := ranks(p+".ranks", e.Ranks); err != nil {
			return err
		}
		if err := speed(p+".speed", e.Speed); err != nil {
			return err
		}
		for _, r := range e.Ranks {
			spans = append(spans, owned{r.Lo, r.Hi, i})
		}
	}
	// A rank in two entries: two overlapping ranges of different entries. Sorted by start,
	// the first such pair shows as the range reaching furthest so far overlapping the next.
	sort.SliceStable(spans, func(a, b int) bool { return spans[a].lo < spans[b].lo })
	for k := 1; k < len(spans); k++ {
		reach, b := spans[k-1], spans[k]
		if reach.hi >= b.lo && reach.entry != b.entry {
			return errorf(fmt.Sprintf("slow[%d].ranks", max(reach.entry, b.entry)), "rank %d is already in slow[%d]; give each slow rank one speed", b.lo, min(reach.entry, b.entry))
		}
		if reach.hi > b.hi {
			spans[k] = reach // carry the furthest-reaching range forward
		}
	}
	if j := s.Jitter; j != nil {
		switch strings.ToLower(j.Dist) {
		case "", "lognormal":
		default:
			return errorf("jitter.dist", "%q: allowed lognormal", j.Dist)
		}
		if !(j.Sigma >= 0 && j.Sigma <= MaxJitterSigma) {
			return errorf("jitter.sigma", "%v: want 0 to %v (the standard deviation of the log of the duration multiplier; 0.02 is 2%%)", j.Sigma, MaxJitterSigma)
		}
		switch j.Per {
		case "", "op", "step":
		default:
			return errorf("jitter.per", "%q: allowed op (a draw per compute op, the default) or step (one per rank per step)", j.Per)
		}
	}
	for i, t := range s.Throttle {
		p := fmt.Sprintf("throttle[%d]", i)
		if err := ranks(p+".ranks", t.Ranks); err != nil {
			return err
		}
		if t.At < 0 {
			return errorf(p+".at", "%v: want a start >= 0 (from the job's start)", t.At)
		}
		if t.For <= 0 || t.At+t.For < t.At {
			return errorf(p+".for", "%v: want a duration > 0 (e.g. 500ms)", t.For)
		}
		if err := speed(p+".speed", t.Speed); err != nil {
			return err
		}
	}
	return nil
}

// piece is a constant speed multiplier from a time on (until the next piece).
type piece struct {
	from sim.Time
	mult float64
}

// stragState is a run's stragglers, resolved per rank.
type stragState struct {
	speed   []float64 // per rank fixed speed (nil: every rank 1)
	thr     [][]piece // per rank throttle profile (nil: none), absolute simulated time
	sigma   float64   // jitter
	perStep bool
	key     uint64
	group   [][]int32 // per rank: its in-domain TP group (nil: not coupled)
	cache   []gcache  // per group leader: the group's last op
	windows []Throttle
	t0      sim.Time
}

// gcache is a TP group's duration for its members' op pc of a step.
type gcache struct {
	step, pc int32
	nominal  sim.Time
	d        sim.Time
}

// newStragState resolves s for job j started at t0 on a simulation of seed seed; nil when
// there are none.
func newStragState(j *Job, s *Stragglers, seed uint64, t0 sim.Time) (*stragState, error) {
	if !s.Active() {
		return nil, nil
	}
	n := j.Placement.World
	if err := s.validate(n); err != nil {
		return nil, under("stragglers", err)
	}
	st := &stragState{t0: t0, windows: s.Throttle, key: sim.Stream(seed, "training.stragglers").Uint64()}
	if len(s.Slow) > 0 {
		st.speed = make([]float64, n)
		for i := range st.speed {
			st.speed[i] = 1
		}
		for _, e := range s.Slow {
			for _, r := range e.Ranks {
				for x := r.Lo; x <= r.Hi; x++ {
					st.speed[x] = e.Speed
				}
			}
		}
	}
	if len(s.Throttle) > 0 {
		// The windows covering a rank change only at the ranges' edges: one profile per
		// segment between edges, shared by its ranks.
		edges := []int{0, n}
		for _, t := range s.Throttle {
			for _, r := range t.Ranks {
				edges = append(edges, r.Lo, r.Hi+1)
			}
		}
		sort.Ints(edges)
		st.thr = make([][]piece, n)
		for k := 1; k < len(edges); k++ {
			lo, hi := edges[k-1], edges[k]
			if lo == hi {
				continue
			}
			var ws []Throttle
			for _, t := range s.Throttle {
				for _, r := range t.Ranks {
					if r.Lo <= lo && lo <= r.Hi {
						ws = append(ws, t)
						break
					}
				}
			}
			ps := profile(ws, t0)
			for x := lo; x < hi; x++ {
				st.thr[x] = ps
			}
		}
	}
	if jt := s.Jitter; jt != nil && jt.Sigma > 0 {
		st.sigma, st.perStep = jt.Sigma, jt.Per == "step"
	}
	if j.Plan.TP > 1 && j.tpInDomain {
		pl := j.Placement
		st.group = make([][]int32, n)
		st.cache = make([]gcache, n)
		for _, g := range pl.groups(func(x int) []int { return pl.Group(DimTP, x) }) {
			g32 := make([]int32, len(g))
			for i, x := range g {
				g32[i] = int32(x)
			}
			for _, x := range g {
				st.group[x] = g32
			}
			st.cache[g[0]] = gcache{step: -1}
		}
	}
	return st, nil
}

// profile is the speed multiplier over time of a rank throttled by ws (nil for none): a
// piece at each window edge, the product of the windows in force from it on.
func profile(ws []Throttle, t0 sim.Time) []piece {
	if len(ws) == 0 {
		return nil
	}
	var bs []sim.Time
	for _, w := range ws {
		bs = append(bs, t0+w.At, t0+w.At+w.For)
	}
	sort.Slice(bs, func(a, b int) bool { return bs[a] < bs[b] })
	var ps []piece
	for k, b := range bs {
		if k > 0 && b == bs[k-1] {
			continue
		}
		m := 1.0
		for _, w := range ws {
			if t0+w.At <= b && b < t0+w.At+w.For {
				m *= w.Speed
			}
		}
		ps = append(ps, piece{b, m})
	}
	return ps
}

// draw returns rank's jitter multiplier for op pc of step (1 without jitter): exp(sigma Z),
// Z from a counter-based hash of the key, step, rank and op (per step: pc ignored), so a draw
// does not depend on event order and rank r draws the same in a larger world.
func (st *stragState) draw(step int, rank int32, pc int32) float64 {
	if st.sigma == 0 {
		return 1
	}
	if st.perStep {
		pc = -1
	}
	h := sim.Mix64(st.key ^ uint64(step+1))
	h = sim.Mix64(h ^ uint64(rank)<<1 ^ 0x5bd1e995)
	h = sim.Mix64(h ^ uint64(uint32(pc))<<2 ^ 0x27d4eb2f)
	u1 := (float64(h>>11) + 0.5) / (1 << 53)
	u2 := float64(sim.Mix64(h)>>11) / (1 << 53)
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	return math.Exp(st.sigma * z)
}

// elapsed is how long rank takes, from now, for work picoseconds of nominal compute.
func (st *stragState) elapsed(rank int32, now sim.Time, work float64) sim.Time {
	s := 1.0
	if st.speed != nil {
		s = st.speed[rank]
	}
	var ps []piece
	if st.thr != nil {
		ps = st.thr[rank]
	}
	if len(ps) == 0 {
		return sim.Time(math.Round(work / s))
	}
	k := sort.Search(len(ps), func(i int) bool { return ps[i].from > now }) - 1 // piece holding now (-1: before all)
	cur, rem := float64(now), work
	for {
		m, next := 1.0, math.Inf(1)
		if k >= 0 {
			m = ps[k].mult
		}
		if k+1 < len(ps) {
			next = float64(ps[k+1].from)
		}
		rate := s * m
		if span := next - cur; rem <= rate*span {
			return sim.Time(math.Round(cur + rem/rate - float64(now)))
		} else {
			rem -= rate * span
		}
		cur = next
		k++
	}
}

// compute returns how long rank ri's compute op pc (pattern p) of step takes, started at now:
// own is its own time, total the time until its TP group (when coupled) has finished too.
func (st *stragState) compute(step int, ri, pc int32, p *pattern, now sim.Time) (own, total sim.Time) {
	c := p.sums[CatCompute]
	if c == 0 {
		return p.dur, p.dur
	}
	other := p.dur - c
	one := func(r int32) sim.Time { return st.elapsed(r, now, float64(c)*st.draw(step, r, pc)) }
	own = other + one(ri)
	if st.group == nil {
		return own, own
	}
	g := st.group[ri]
	gc := &st.cache[g[0]]
	if gc.step != int32(step) || gc.pc != pc || gc.nominal != p.dur {
		var d sim.Time
		for _, m := range g {
			d = max(d, one(m))
		}
		*gc = gcache{step: int32(step), pc: pc, nominal: p.dur, d: other + d}
	}
	return own, max(own, gc.d)
}

// notes warns about throttle windows the simulated steps never reach (from the job's start
// to end).
func (st *stragState) notes(end sim.Time) []string {
	var out []string
	for i, w := range st.windows {
		if st.t0+w.At >= end {
			out = append(out, fmt.Sprintf("stragglers.throttle[%d] starts at %v, after the simulated steps end (%v from the job's start): it has no effect; raise sim_steps to reach it", i, w.At, end-st.t0))
		}
	}
	return out
}

// computeOf adds to b the categories of span s, a compute pattern whose length may differ from
// the pattern's (a straggler): the difference is compute.
func (j *Job) computeOf(b *Breakdown, s span) {
	p := &j.patterns[s.pat]
	for c, v := range p.sums {
		b[c] += v
	}
	if d := s.end - s.start - p.dur; d != 0 {
		b[CatCompute] += d
	}
}

// segsOf calls f for each segment of compute span s (start and end relative to its start
// offset a): the pattern's segments, with the compute ones stretched in proportion when a
// straggler made the span longer or shorter than the pattern (the last compute segment takes
// the rounding).
func (j *Job) segsOf(s span, a sim.Time, f func(a, b sim.Time, c Category)) {
	p := &j.patterns[s.pat]
	d := s.end - s.start - p.dur
	if d == 0 {
		for _, g := range p.segs {
			f(a, a+g.dur, g.cat)
			a += g.dur
		}
		return
	}
	c := p.sums[CatCompute]
	last := -1
	for i, g := range p.segs {
		if g.cat == CatCompute {
			last = i
		}
	}
	var acc sim.Time
	for i, g := range p.segs {
		l := g.dur
		if g.cat == CatCompute {
			if i == last {
				l = g.dur + d - acc
			} else {
				x := sim.Time(math.Round(float64(g.dur) * float64(d) / float64(c)))
				l, acc = g.dur+x, acc+x
			}
		}
		f(a, a+l, g.cat)
		a += l
	}
}

// of describes how rank is configured to straggle ("at 0.8x", "at 0.7x from 2s for 500ms",
// joined by "; "), or "" when no slow or throttle entry names it (jitter touches every rank
// alike and is not counted).
func (s *Stragglers) of(rank int) string {
	if s == nil {
		return ""
	}
	in := func(rs []RankRange) bool {
		for _, r := range rs {
			if rank >= r.Lo && rank <= r.Hi {
				return true
			}
		}
		return false
	}
	var parts []string
	for _, e := range s.Slow {
		if in(e.Ranks) {
			parts = append(parts, fmt.Sprintf("at %vx", e.Speed))
		}
	}
	for _, t := range s.Throttle {
		if in(t.Ranks) {
			parts = append(parts, fmt.Sprintf("at %vx from %v for %v", t.Speed, t.At, t.For))
		}
	}
	return strings.Join(parts, "; ")
}

// String describes the stragglers in words for summary.json ("rank 17 at 0.8x; jitter
// lognormal sigma 0.02 per op; ranks 3 at 0.7x from 2s for 500ms"); "" when there are none.
func (s *Stragglers) String() string {
	if !s.Active() {
		return ""
	}
	list := func(rs []RankRange) string {
		var p []string
		for _, r := range rs {
			p = append(p, r.String())
		}
		w := "rank "
		if len(rs) > 1 || rs[0].Lo != rs[0].Hi {
			w = "ranks "
		}
		return w + strings.Join(p, ",")
	}
	var parts []string
	for _, e := range s.Slow {
		parts = append(parts, fmt.Sprintf("%s at %vx", list(e.Ranks), e.Speed))
	}
	if j := s.Jitter; j != nil && j.Sigma > 0 {
		per := j.Per
		if per == "" {
			per = "op"
		}
		parts = append(parts, fmt.Sprintf("jitter lognormal sigma %v per %s", j.Sigma, per))
	}
	for _, t := range s.Throttle {
		parts = append(parts, fmt.Sprintf("%s at %vx from %v for %v", list(t.Ranks), t.Speed, t.At, t.For))
	}
	return strings.Join(parts, "; ")
}
