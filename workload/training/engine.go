package training

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// RunOptions controls a simulation of a job.
type RunOptions struct {
	// Steps is how many optimizer steps to simulate (default 1). Steps start from the same
	// state (every rank at the step barrier, no collective in flight), so on a backend without
	// memory (AnalyticBackend, Ideal) every step is identical and one is enough; the Config
	// repeats the last simulated step for the remaining iterations.
	Steps int
	// Exact simulates every microbatch of each step. Otherwise a step with more than 2PP+2
	// microbatches is simulated with 2PP+2 and the steady 1F1B round PP is repeated for the
	// rest (see Trace).
	Exact bool
	// Limit bounds the simulated time of Job.Run (0: no bound).
	Limit sim.Time
	// OnStep, if set, is called as each step starts (from 0), before any rank runs: a runner
	// schedules what is timed from a step's start (faults with at_step) from it.
	OnStep func(now sim.Time, step int)
	// Stragglers slow some ranks' compute (nil: none; see Stragglers). Their random draws
	// come from the simulation's seed (sim.Sim.Seed: the scenario's run.seed). With any
	// straggler every microbatch is simulated (as Exact): rounds differ under jitter and
	// throttling, and a slow stage that is not the pipeline's bottleneck takes a transient
	// as long as its slack lasts (tens of rounds) before the rounds repeat.
	Stragglers *Stragglers
	// Folds, if any, are tried in order: the first whose symmetry Start can verify (see
	// Fold) simulates the job's symmetric data-parallel replicas once; the trace is the same
	// as without it.
	Folds []*Fold
}

// span is an interval of a rank's compute stream: a compute pattern (pat >= 0) or a wait.
type span struct {
	start, end sim.Time
	pat        int32
	cat        Category
}

type mark struct {
	span int32
	at   sim.Time
}

type rankState struct {
	stage     int32
	pc        int32
	str       [numRoles]int32
	waitStart sim.Time
	spans     []span
	marks     []mark
	arrive    sim.Time
	atBarrier bool
}

// callState is one call of a stream in the current step: 64 bytes, one cache line in
// Run.calls.
type callState struct {
	spec, label    int32
	arrived        int32
	launched, done bool
	firstAt, allAt sim.Time // first and last member's post
	launchAt       sim.Time
	waiters        []int32 // its memory is kept from step to step
}

// streamHot is the part of a stream the engine reads at every post, wait and completion,
// packed (16 bytes) apart from the rest so that the streams of 131,072 ranks stay in cache.
type streamHot struct {
	base int32 // the stream's first call in Run.calls
	n    int32 // calls in use this step: Run.calls[base : base+n]
	nmem int32 // members
	next int32 // the next call to launch (calls launch in order)
}

// stream is a group's communication stream: its collectives run one at a time, in order,
// each launching when every member has posted it and the previous one is done (NCCL: one
// communicator, one CUDA stream).
// Its calls and its position are in Run.hot and Run.calls.
type stream struct {
	name    string
	comm    collective.Comm
	members []int32
	dp      bool // a DP or expert-DP stream (gradient reductions, ZeRO all-gathers)
	ncalls  int  // calls a step posts on it (the largest seq + 1 in its members' programs)
}

// Run is a job in progress on a simulation (Job.Start). Job.Run drives it to the end; a
// runner with its own event loop calls Start, runs the simulation until Done, then Trace.
type Run struct {
	j        *Job
	s        *sim.Sim
	b        Backend
	nb       NamedBackend // b, when it takes lazy names; nil otherwise
	opts     RunOptions
	kCompute sim.Kind
	kStart   sim.Kind
	progs    [][]op
	spanCap  []int // per stage: spans a step's timeline holds at most (one per compute op, two per wait)
	ranks    []rankState
	streams  []stream
	hot      []streamHot // by stream
	calls    []callState // every stream's calls, stream by stream (streamHot.base)
	simM     int         // microbatches simulated per step
	kc, rep  int         // round repeated and how many extra times
	step     int
	start    sim.Time // simulated start of the current step
	arrived  int
	finished bool
	err      error
	trace    *Trace
	strag    *stragState // nil: no stragglers
	t0       sim.Time    // the job's start
	fold     *foldState  // nil: every rank simulated
	// FoldReason is why the RunOptions.Folds before the one used (or all, when none was)
	// were not used ("" when the first was, or none was given).
	FoldReason string
}

// Start prepares the job's programs and communicators on s, with b carrying network
// collectives, and schedules the first step at s.Now(). The caller then runs the simulation;
// the run pauses it (sim.Pause) when the last step ends, and stops it (sim.Stop, with the
// error) if the backend refuses a collective. Errors: invalid options.
func (j *Job) Start(s *sim.Sim, b Backend, opts RunOptions) (*Run, error) {
	if s == nil || b == nil {
		return nil, fmt.Errorf("training: a run needs a simulation and a backend")
	}
	if opts.Steps == 0 {
		opts.Steps = 1
	}
	if opts.Steps < 1 || opts.Steps > 1<<20 {
		return nil, errorf("sim_steps", "%d: want 1 to %d steps to simulate", opts.Steps, 1<<20)
	}
	r := &Run{j: j, s: s, b: b, opts: opts, simM: j.micro, t0: s.Now()}
	r.nb, _ = b.(NamedBackend)
	var err error
	if r.strag, err = newStragState(j, opts.Stragglers, s.Seed(), s.Now()); err != nil {
		return nil, err
	}
	P := j.Plan.PP
	if r.strag == nil {
		r.simM, r.kc, r.rep = j.reuse(opts.Exact)
	}
	r.progs = make([][]op, P)
	for st := range r.progs {
		r.progs[st] = j.program(st, r.simM)
		n := 0
		for _, o := range r.progs[st] {
			switch o.kind {
			case opCompute:
				n++
			case opWait:
				n += 2
			}
		}
		r.spanCap = append(r.spanCap, n)
	}
	pl := j.Placement
	r.ranks = make([]rankState, pl.World)
	for i := range r.ranks {
		r.ranks[i].stage = int32(pl.Coord(i).PP)
		for k := range r.ranks[i].str {
			r.ranks[i].str[k] = -1
		}
	}
	// newStream adds a stream of ranks; member i takes it as role rls[i] (or rls[0] for all).
	newStream := func(name string, ranks []int, rls ...role) {
		hosts := make([]int, len(ranks))
		members := make([]int32, len(ranks))
		for i, x := range ranks {
			hosts[i], members[i] = pl.Host(x), int32(x)
			rl := rls[0]
			if len(rls) > 1 {
				rl = rls[i]
			}
			r.ranks[x].str[rl] = int32(len(r.streams))
		}
		comm, err := collective.NewComm(hosts)
		if err != nil && r.err == nil {
			r.err = fmt.Errorf("training: %s: %w", name, err) // cannot happen: ranks are distinct hosts
		}
		r.streams = append(r.streams, stream{name: name, comm: comm, members: members, dp: rls[0] == roleDP || rls[0] == roleEDP})
	}
	p := j.Plan
	if p.TP > 1 && j.tpStreams {
		for _, g := range pl.groups(func(x int) []int { return pl.Group(DimTP, x) }) {
			c := pl.Coord(g[0])
			newStream(fmt.Sprintf("tp[dp=%d pp=%d]", c.DP, c.PP), g, roleTP)
		}
	}
	if p.EP > 1 {
		for _, g := range pl.groups(pl.EPGroup) {
			c := pl.Coord(g[0])
			newStream(fmt.Sprintf("ep[tp=%d dp=%d-%d pp=%d]", c.TP, c.DP, c.DP+p.EP-1, c.PP), g, roleEP)
		}
	}
	if p.CP > 1 && !j.cpInDomain {
		for _, g := range pl.groups(func(x int) []int { return pl.Group(DimCP, x) }) {
			c := pl.Coord(g[0])
			newStream(fmt.Sprintf("cp[tp=%d dp=%d pp=%d]", c.TP, c.DP, c.PP), g, roleCP)
		}
	}
	if P > 1 {
		// Interleaved: the last stage's chunk c feeds chunk c+1 of stage 0 (the wrap).
		hops := P - 1
		if p.VirtualStages > 1 {
			hops = P
		}
		for _, g := range pl.groups(func(x int) []int { return pl.Group(DimPP, x) }) {
			c := pl.Coord(g[0])
			at := fmt.Sprintf("tp=%d dp=%d", c.TP, c.DP)
			if p.CP > 1 {
				at = fmt.Sprintf("tp=%d cp=%d dp=%d", c.TP, c.CP, c.DP)
			}
			for st := 0; st < hops; st++ {
				nx := (st + 1) % P
				newStream(fmt.Sprintf("pp.fwd[%s %d->%d]", at, st, nx), []int{g[st], g[nx]}, rolePPFwdOut, rolePPFwdIn)
				newStream(fmt.Sprintf("pp.bwd[%s %d->%d]", at, nx, st), []int{g[nx], g[st]}, rolePPBwdOut, rolePPBwdIn)
			}
		}
	}
	if p.DP*p.CP > 1 {
		for _, g := range pl.groups(j.gradGroup) {
			c := pl.Coord(g[0])
			newStream(fmt.Sprintf("dp[tp=%d pp=%d]", c.TP, c.PP), g, roleDP)
			if j.stages[c.PP].zero3 {
				newStream(fmt.Sprintf("dp.gather[tp=%d pp=%d]", c.TP, c.PP), g, roleDPAG)
			}
		}
	}
	if p.EP > 1 && p.DP/p.EP > 1 {
		for _, g := range pl.groups(pl.ExpertDPGroup) {
			c := pl.Coord(g[0])
			if j.stages[c.PP].hasExpertGrads {
				newStream(fmt.Sprintf("expert dp[tp=%d dp=%d+%dk pp=%d]", c.TP, c.DP, p.EP, c.PP), g, roleEDP)
			}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if err := r.sizeCalls(); err != nil {
		return nil, err
	}
	for _, f := range opts.Folds {
		why, err := r.setupFold(f)
		if err != nil {
			return nil, err
		}
		if why == "" {
			break
		}
		r.FoldReason = joinReason(r.FoldReason, why)
	}
	r.trace = &Trace{Job: j, SimulatedMicrobatches: r.simM, Periodic: true}
	r.kCompute = s.Register("training.compute", r.onCompute)
	r.kStart = s.Register("training.step", r.onStart)
	s.At(s.Now(), r.kStart, 0, 0)
	return r, nil
}

// Run simulates opts.Steps steps of the job on s with backend b and returns the trace. It
// drains the simulation up to opts.Limit. Errors: invalid options, a backend error, or a run
// that stops with ranks not done (the watchdog: the simulation emptied or hit the limit),
// naming the stuck ranks and the collective each waits on.
func (j *Job) Run(s *sim.Sim, b Backend, opts RunOptions) (*Trace, error) {
	r, err := j.Start(s, b, opts)
	if err != nil {
		return nil, err
	}
	limit := opts.Limit
	if limit == 0 {
		limit = sim.MaxTime
	}
	if err := s.Drain(limit); err != nil && r.err == nil {
		return nil, err
	}
	return r.Trace()
}

// Done reports whether every step has finished.
func (r *Run) Done() bool { return r.finished }

// Completed returns a trace of the steps finished so far, nil when none has: for a runner
// that ends a run early, as when the job's transport gave up (a restart the packet engine
// does not simulate past). The trace is complete for those steps.
func (r *Run) Completed() *Trace {
	if r.trace == nil || len(r.trace.Steps) == 0 {
		return nil
	}
	t := *r.trace
	t.Steps = t.Steps[:len(t.Steps):len(t.Steps)]
	return &t
}

// Trace returns the run's trace once Done. Errors: the error that stopped the run, or the
// watchdog's report when it has not finished (Stuck).
func (r *Run) Trace() (*Trace, error) {
	if r.err != nil {
		return nil, r.err
	}
	if !r.finished {
		msg := fmt.Sprintf("training: step %d did not finish by %v: %d of %d ranks have not reached the step barrier:\n%s",
			r.step, r.s.Now(), r.liveRanks()-r.arrived, r.liveRanks(), r.Stuck(12))
		if eb, ok := r.b.(*ExecutorBackend); ok {
			if st := eb.Stuck(12); st != "" {
				msg += "\nnetwork collectives in flight:\n" + st
			}
		}
		return nil, fmt.Errorf("%s", msg)
	}
	return r.trace, nil
}

// Stuck describes, one line per rank (at most max lines, then a count), what each rank that
// has not reached the step barrier is doing: the collective it waits on, how many members
// posted it and which are missing, or the compute it is in.
func (r *Run) Stuck(max int) string {
	var lines []string
	more := 0
	pl := r.j.Placement
	for i := range r.ranks {
		rs := &r.ranks[i]
		if rs.atBarrier || !r.simulated(i) {
			continue
		}
		if max > 0 && len(lines) >= max {
			more++
			continue
		}
		who := fmt.Sprintf("rank %d (%v, host %d)", i, pl.Coord(i), pl.Host(i))
		prog := r.progs[rs.stage]
		if int(rs.pc) >= len(prog) {
			lines = append(lines, who+": past the end of its program")
			continue
		}
		o := prog[rs.pc]
		if o.kind != opWait {
			lines = append(lines, fmt.Sprintf("%s: computing (op %d of %d)", who, rs.pc, len(prog)))
			continue
		}
		si := rs.str[o.role]
		st := &r.streams[si]
		desc := fmt.Sprintf("%s call #%d", st.name, o.seq)
		if o.seq >= r.hot[si].n || r.call(si, o.seq).spec < 0 {
			lines = append(lines, fmt.Sprintf("%s: waits for %s, which no member has posted", who, desc))
			continue
		}
		c := r.call(si, o.seq)
		desc = fmt.Sprintf("%s call #%d %s (%s %s)", st.name, o.seq, r.labelOf(c.label), r.j.specs[c.spec].Op, sim.FormatSize(r.j.specs[c.spec].Bytes))
		switch {
		case c.launched:
			lines = append(lines, fmt.Sprintf("%s: waits for %s, launched at %v, not done", who, desc, c.launchAt))
		case c.arrived < r.hot[si].nmem:
			var missing []string
			posted := r.postedBy(si, o.seq)
			for _, m := range st.members {
				if !posted[m] {
					missing = append(missing, fmt.Sprint(m))
				}
			}
			lines = append(lines, fmt.Sprintf("%s: waits for %s: %d of %d members posted it; missing rank(s) %s", who, desc, c.arrived, len(st.members), strings.Join(missing, " ")))
		default:
			lines = append(lines, fmt.Sprintf("%s: waits for %s: every member posted it; queued behind call #%d on the stream", who, desc, r.hot[si].next))
		}
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("... and %d more ranks", more))
	}
	return strings.Join(lines, "\n")
}

// postedBy returns which members of stream si have posted call seq (their program counter
// is past the post).
func (r *Run) postedBy(si, seq int32) map[int32]bool {
	out := map[int32]bool{}
	st := &r.streams[si]
	for _, m := range st.members {
		rs := &r.ranks[m]
		for k, o := range r.progs[rs.stage][:min(int(rs.pc)+1, len(r.progs[rs.stage]))] {
			if o.kind == opPost && rs.str[o.role] == si && o.seq == seq && (int32(k) < rs.pc || rs.atBarrier) {
				out[m] = true
			}
		}
	}
	return out
}

func (r *Run) labelOf(l int32) string {
	if l < 0 {
		return "activations"
	}
	return r.j.labels[l]
}

func (r *Run) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.s.Stop(err)
}

func (r *Run) onStart(now sim.Time, _ int32, _ uint64) {
	r.start = now
	if r.opts.OnStep != nil {
		r.opts.OnStep(now, r.step)
	}
	r.arrived = 0
	for i := range r.hot {
		h := &r.hot[i]
		h.n, h.next = 0, 0
	}
	for i := range r.ranks {
		if !r.simulated(i) {
			continue
		}
		rs := &r.ranks[i]
		rs.pc, rs.atBarrier = 0, false
		rs.spans, rs.marks = make([]span, 0, r.spanCap[rs.stage]), rs.marks[:0]
	}
	for i := range r.ranks {
		if r.simulated(i) {
			r.advance(now, int32(i))
		}
	}
}

func (r *Run) onCompute(now sim.Time, rank int32, _ uint64) { r.advance(now, rank) }

// sizeCalls sets each stream's ncalls from the programs (for every rank and role, the
// largest seq its stage's program posts or waits on for that role, plus one) and lays the
// streams' calls out in Run.calls (Run.hot). Errors: more than 2^31-1 calls in a step.
func (r *Run) sizeCalls() error {
	need := make([][numRoles]int32, len(r.progs)) // per stage and role
	for st, prog := range r.progs {
		for _, o := range prog {
			if (o.kind == opPost || o.kind == opWait) && o.seq+1 > need[st][o.role] {
				need[st][o.role] = o.seq + 1
			}
		}
	}
	for i := range r.ranks {
		rs := &r.ranks[i]
		for rl, si := range rs.str {
			if si >= 0 {
				r.streams[si].ncalls = max(r.streams[si].ncalls, int(need[rs.stage][rl]))
			}
		}
	}
	r.hot = make([]streamHot, len(r.streams))
	total := 0
	for i := range r.streams {
		if total > math.MaxInt32-r.streams[i].ncalls {
			return fmt.Errorf("training: a step posts more than %d collectives; too many to simulate", math.MaxInt32)
		}
		r.hot[i] = streamHot{base: int32(total), nmem: int32(len(r.streams[i].members))}
		total += r.streams[i].ncalls
	}
	r.calls = make([]callState, total)
	return nil
}

// call returns call seq of stream si (seq < ncalls).
func (r *Run) call(si, seq int32) *callState { return &r.calls[r.hot[si].base+seq] }

// openCalls makes calls [0, seq] of stream si in use this step, each new one reset (its
// waiters' memory kept).
func (r *Run) openCalls(si, seq int32) {
	h := &r.hot[si]
	for h.n <= seq {
		c := &r.calls[h.base+h.n]
		*c = callState{spec: -1, waiters: c.waiters[:0]}
		h.n++
	}
}

// advance runs rank ri's program from its program counter until it blocks.
func (r *Run) advance(now sim.Time, ri int32) {
	rs := &r.ranks[ri]
	prog := r.progs[rs.stage]
	for r.err == nil {
		o := &prog[rs.pc]
		switch o.kind {
		case opCompute:
			d := r.j.patterns[o.arg].dur
			if r.strag == nil {
				rs.spans = append(rs.spans, span{start: now, end: now + d, pat: o.arg})
			} else {
				var own sim.Time
				own, d = r.strag.compute(r.step, ri, rs.pc, &r.j.patterns[o.arg], now)
				rs.spans = append(rs.spans, span{start: now, end: now + own, pat: o.arg})
				if d > own { // waiting for the slowest member of its NVLink TP group
					rs.spans = append(rs.spans, span{start: now + own, end: now + d, pat: -1, cat: CatSync})
				}
			}
			rs.pc++
			if d > 0 {
				r.s.At(now+d, r.kCompute, ri, 0)
				return
			}
		case opPost:
			si := rs.str[o.role]
			if si < 0 {
				r.fail(fmt.Errorf("training: rank %d posts on role %d with no stream (program bug)", ri, o.role))
				return
			}
			h := &r.hot[si]
			if o.seq >= h.n {
				r.openCalls(si, o.seq)
			}
			c := &r.calls[h.base+o.seq]
			if c.spec < 0 {
				c.spec, c.label = o.arg, o.label
			}
			if c.arrived == 0 {
				c.firstAt = now
			}
			c.arrived++
			rs.pc++
			if c.arrived == h.nmem {
				c.allAt = now
				r.tryLaunch(now, si)
			}
		case opWait:
			si := rs.str[o.role]
			h := &r.hot[si]
			if o.seq < h.n && r.calls[h.base+o.seq].done {
				rs.pc++
				continue
			}
			if o.seq >= h.n {
				r.openCalls(si, o.seq)
			}
			c := &r.calls[h.base+o.seq]
			c.waiters = append(c.waiters, ri)
			rs.waitStart = now
			return
		case opMark:
			rs.marks = append(rs.marks, mark{span: int32(len(rs.spans)), at: now})
			rs.pc++
		case opBarrier:
			rs.arrive, rs.atBarrier = now, true
			r.arrived++
			if r.arrived == r.liveRanks() {
				r.endStep(now)
			}
			return
		}
	}
}

// tryLaunch launches the next call on stream si if every member posted it (the previous one
// is done: next only advances on completion).
func (r *Run) tryLaunch(now sim.Time, si int32) {
	h := &r.hot[si]
	if h.next >= h.n {
		return
	}
	seq := h.next
	c := &r.calls[h.base+seq]
	if c.launched || c.arrived < h.nmem {
		return
	}
	st := &r.streams[si]
	c.launched, c.launchAt = true, now
	done := func(t sim.Time) { r.callDone(t, si, seq) }
	var err error
	if r.nb != nil {
		step, label := r.step, c.label
		err = r.nb.LaunchNamed(now, r.j.specs[c.spec], st.comm, func() string { return r.callName(si, seq, label, step) }, done)
	} else {
		err = r.b.Launch(now, r.j.specs[c.spec], st.comm, r.callName(si, seq, c.label, r.step), done)
	}
	if err != nil {
		r.fail(err)
	}
}

// callName names call seq of stream si, of the given label, in step: "<stream> <label> #<seq>
// step <step>".
func (r *Run) callName(si, seq, label int32, step int) string {
	return r.streams[si].name + " " + r.labelOf(label) + " #" + strconv.Itoa(int(seq)) + " step " + strconv.Itoa(step) // (no fmt: one launch per collective)
}

// callDone completes call seq of stream si: wakes its waiters and launches the next call.
func (r *Run) callDone(now sim.Time, si, seq int32) {
	h := &r.hot[si]
	c := &r.calls[h.base+seq]
	if c.done {
		r.fail(fmt.Errorf("training: %s call #%d completed twice", r.streams[si].name, seq))
		return
	}
	c.done = true
	h.next++
	// The waiters are read while they run on: none of them waits on this call again (it is
	// done), and the calls never move (Run.calls is sized once).
	waiters, allAt := c.waiters, c.allAt
	c.waiters = waiters[:0]
	for _, w := range waiters {
		rs := &r.ranks[w]
		o := r.progs[rs.stage][rs.pc]
		net, peer := roleCat[o.role][0], roleCat[o.role][1]
		t0 := rs.waitStart
		pe := min(max(allAt, t0), now)
		if pe > t0 {
			rs.spans = append(rs.spans, span{start: t0, end: pe, pat: -1, cat: peer})
		}
		if now > pe {
			rs.spans = append(rs.spans, span{start: pe, end: now, pat: -1, cat: net})
		}
		rs.pc++
		r.advance(now, w)
	}
	r.tryLaunch(now, si)
}

// endStep closes the step when the last rank reaches the barrier.
func (r *Run) endStep(now sim.Time) {
	r.finishStep(now)
	r.step++
	if r.step < r.opts.Steps {
		r.s.At(now, r.kStart, 0, 0)
		return
	}
	r.finished = true
	if r.strag != nil {
		r.trace.Notes = append(r.trace.Notes, r.strag.notes(now)...)
	}
	r.s.Pause()
}
