package training

import (
	"math"
	"slices"
	"sort"

	"github.com/lockstepsim/lockstep/sim"
)

type opKind uint8

const (
	opCompute opKind = iota // run pattern arg on the compute stream
	opPost                  // post call seq on the role's stream (spec arg, label)
	opWait                  // block until call seq on the role's stream is done
	opMark                  // steady-state round arg begins (for extrapolation)
	opBarrier               // end of step
)

// op is one instruction of a rank's program.
type op struct {
	kind  opKind
	role  role
	seq   int32
	arg   int32
	label int32
}

// cursor tracks gradient production into one stream's buckets during a backward.
type cursor struct {
	role          role
	specs, labels []int32
	next          int
	acc           int64
}

// progBuilder emits a stage's program.
type progBuilder struct {
	j    *Job
	ops  []op
	segs []seg
	seq  [numRoles]int32
	tags map[int32]int32 // itemPost tag -> seq, within the current pass
}

func (b *progBuilder) flush() {
	if len(b.segs) > 0 {
		b.ops = append(b.ops, op{kind: opCompute, arg: b.j.addPattern(b.segs)})
		b.segs = b.segs[:0]
	}
}

func (b *progBuilder) seg(s seg) {
	if s.dur > 0 {
		b.segs = append(b.segs, s)
	}
}

func (b *progBuilder) post(r role, spec, label int32) int32 {
	b.flush()
	s := b.seq[r]
	b.seq[r]++
	b.ops = append(b.ops, op{kind: opPost, role: r, seq: s, arg: spec, label: label})
	return s
}

func (b *progBuilder) wait(r role, s int32) {
	b.flush()
	b.ops = append(b.ops, op{kind: opWait, role: r, seq: s})
}

func (b *progBuilder) mark(k int) {
	b.flush()
	b.ops = append(b.ops, op{kind: opMark, arg: int32(k)})
}

func (b *progBuilder) postCursor(c *cursor) {
	b.post(c.role, c.specs[c.next], c.labels[c.next])
	c.next++
	c.acc = 0
}

// pass emits one forward, backward or W pass. With cursors (a backward whose gradients are
// reduced as they appear), gradients accumulate into buckets as each item produces them,
// evenly over the item's time, and each bucket is posted the moment it fills.
func (b *progBuilder) pass(items []item, curs []*cursor) {
	type event struct {
		frac float64
		c    *cursor
		idx  int
	}
	var evs []event
	clear(b.tags)
	for _, it := range items {
		switch it.kind {
		case itemColl:
			s := b.post(it.role, it.spec, it.label)
			b.wait(it.role, s)
			continue
		case itemPost:
			s := b.post(it.role, it.spec, it.label)
			if it.tag >= 0 {
				if b.tags == nil {
					b.tags = map[int32]int32{}
				}
				b.tags[it.tag] = s
			}
			continue
		case itemWait:
			b.wait(it.role, b.tags[it.tag])
			continue
		}
		if len(curs) == 0 || it.grad+it.egrad == 0 {
			b.seg(it.seg)
			continue
		}
		evs = evs[:0]
		for _, c := range curs {
			g := it.grad
			if c.role == roleEDP {
				g = it.egrad
			}
			var made int64
			for g > 0 && c.next < len(c.specs) {
				need := b.j.specs[c.specs[c.next]].Bytes - c.acc
				if g-made < need {
					c.acc += g - made
					break
				}
				made += need
				evs = append(evs, event{float64(made) / float64(g), c, c.next})
				c.acc = 0
				c.next++
			}
		}
		sort.SliceStable(evs, func(a, z int) bool { return evs[a].frac < evs[z].frac })
		var prev int64
		for _, e := range evs {
			t := int64(math.Round(float64(it.seg.dur) * e.frac))
			b.seg(seg{dur: sim.Time(t - prev), cat: it.seg.cat})
			prev = t
			b.post(e.c.role, e.c.specs[e.idx], e.c.labels[e.idx])
		}
		b.seg(seg{dur: sim.Time(int64(it.seg.dur) - prev), cat: it.seg.cat})
	}
}

// grads hands out the gradient cursors of a stage's backward passes: for ZeRO 0 and 1 the
// last microbatch's (gradients accumulate locally until then), for ZeRO 2 every
// microbatch's (only a shard is kept); none under ZeRO 3 (the passes reduce-scatter each
// unit themselves). Without overlap, buckets are posted after the microbatch's last
// gradient pass instead of as they fill.
type grads struct {
	st      *stage
	zero    ZeROStage
	overlap bool
	m       int
	curs    map[int][2]*cursor
}

// of returns the cursors of microbatch i (nil when its gradients are not reduced or not
// overlapped).
func (g *grads) of(i int) []*cursor {
	c, ok := g.get(i)
	if !ok || !g.overlap {
		return nil
	}
	return c[:]
}

func (g *grads) get(i int) ([2]*cursor, bool) {
	if g.zero == 3 || (g.zero < 2 && i != g.m-1) {
		return [2]*cursor{}, false
	}
	c, ok := g.curs[i]
	if !ok {
		c = [2]*cursor{{role: roleDP, specs: g.st.dpSpecs, labels: g.st.dpLabels}, {role: roleEDP, specs: g.st.edpSpecs, labels: g.st.edpLabels}}
		if g.curs == nil {
			g.curs = map[int][2]*cursor{}
		}
		g.curs[i] = c
	}
	return c, true
}

// done posts what microbatch i's gradient cursors have not posted (its last gradient pass
// has run).
func (g *grads) done(b *progBuilder, i int) {
	c, ok := g.get(i)
	if !ok {
		return
	}
	for _, x := range c {
		for x.next < len(x.specs) {
			b.postCursor(x)
		}
	}
}

// tail emits the end of a step after the pipeline: wait for the gradient reductions (every
// call posted on the DP and expert-DP streams), the optimizer step, the ZeRO 1-2 parameter
// all-gather, and the step barrier.
func (b *progBuilder) tail(st *stage) {
	for _, r := range []role{roleDP, roleEDP, roleDPAG} {
		for k := int32(0); k < b.seq[r]; k++ {
			b.wait(r, k)
		}
	}
	b.seg(seg{st.optimizer, CatCompute})
	if len(st.agSpecs) > 0 || len(st.eagSpecs) > 0 {
		var ws [][2]int32
		for k := range st.agSpecs {
			ws = append(ws, [2]int32{int32(roleDP), b.post(roleDP, st.agSpecs[k], st.agLabels[k])})
		}
		for k := range st.eagSpecs {
			ws = append(ws, [2]int32{int32(roleEDP), b.post(roleEDP, st.eagSpecs[k], st.eagLabels[k])})
		}
		for _, w := range ws {
			b.wait(role(w[0]), w[1])
		}
	}
	b.flush()
	b.ops = append(b.ops, op{kind: opBarrier})
}

// program returns stage s's program for one step of m microbatches under the plan's
// schedule: program1F1B for 1f1b, programAsync for interleaved and zb-h1.
func (j *Job) program(s, m int) []op {
	if j.Plan.Schedule == Schedule1F1B {
		return j.program1F1B(s, m)
	}
	return j.programAsync(s, m)
}

// program1F1B returns stage s's program following Megatron-LM's non-interleaved 1F1B
// schedule (forward_backward_pipelining_without_interleaving): warmup forwards, steady
// one-forward-one-backward iterations with batched blocking send/recv pairs
// (send_forward_recv_backward, send_backward_recv_forward), cooldown backwards; then the
// gradient reduction, the optimizer and, with ZeRO 1-2, the parameter all-gather.
func (j *Job) program1F1B(s, m int) []op {
	b := &progBuilder{j: j}
	P := j.Plan.PP
	st := &j.stages[s]
	ch := &st.chunks[0]
	first, last := s == 0, s == P-1
	w := min(P-s-1, m)
	rem := m - w
	gr := &grads{st: st, zero: j.Plan.ZeRO, overlap: j.Options.Overlap, m: m}
	recvFwd := func() {
		if !first {
			b.wait(rolePPFwdIn, b.post(rolePPFwdIn, j.actSpec, -1))
		}
	}
	sendFwd := func() {
		if !last {
			b.wait(rolePPFwdOut, b.post(rolePPFwdOut, j.actSpec, -1))
		}
	}
	recvBwd := func() {
		if !last {
			b.wait(rolePPBwdIn, b.post(rolePPBwdIn, j.actSpec, -1))
		}
	}
	sendBwd := func() {
		if !first {
			b.wait(rolePPBwdOut, b.post(rolePPBwdOut, j.actSpec, -1))
		}
	}
	backward := func(i int) {
		curs := gr.of(i)
		b.pass(ch.overlapping(ch.bwd, ch.bwdNVL, curs), curs)
		gr.done(b, i)
	}
	for i := 0; i < w; i++ {
		recvFwd()
		b.pass(ch.fwd, nil)
		sendFwd()
	}
	if rem > 0 {
		recvFwd()
	}
	for k := 0; k < rem; k++ {
		b.mark(k)
		b.pass(ch.fwd, nil)
		if !last { // send_forward_recv_backward
			a := b.post(rolePPFwdOut, j.actSpec, -1)
			c := b.post(rolePPBwdIn, j.actSpec, -1)
			b.wait(rolePPFwdOut, a)
			b.wait(rolePPBwdIn, c)
		}
		backward(k)
		switch {
		case k == rem-1:
			sendBwd()
		case !first: // send_backward_recv_forward
			a := b.post(rolePPBwdOut, j.actSpec, -1)
			c := b.post(rolePPFwdIn, j.actSpec, -1)
			b.wait(rolePPBwdOut, a)
			b.wait(rolePPFwdIn, c)
		}
	}
	b.mark(rem)
	for i := 0; i < w; i++ {
		recvBwd()
		backward(rem + i)
		sendBwd()
	}
	b.tail(st)
	return b.ops
}

// Pass kinds of a schedule.
const (
	passF = iota // forward
	passB        // backward (input gradient; with the weight gradient unless zb-h1)
	passW        // zb-h1: weight gradient
)

// schedOp is one pass of a schedule on a stage: kind, model chunk, microbatch.
type schedOp struct {
	kind, c, i int
}

// schedule returns stage s's passes for one step of m microbatches under the plan's
// schedule, in order, and the index of the first pass of each steady-state round (the
// rounds marked for extrapolation; see Job.reuse).
//
// interleaved (Narayanan et al., SC'21 §2.2.2, Megatron-Core's
// forward_backward_pipelining_with_interleaving): the forwards run groups of N = pp
// microbatches through chunk 0, then the same group through chunk 1, ... chunk V-1, then
// the next group (a last group of m mod pp microbatches runs the same way: Llama 3's
// flexible N, Dubey et al. 2024 §3.3.2); the backwards run in the same order with the
// chunks reversed. Stage s runs min(2(pp-s-1) + (V-1) N, mV) warmup forwards, then pairs of
// one forward and one backward (the steady rounds), then the remaining backwards.
//
// zb-h1 (Qi et al., ICLR 2024, §3.1): pass x of stage s is (F_x, B_(x-(pp-1-s)),
// W_(x-(pp-1))) for x = 0 ... m+pp-2, each part skipped when its microbatch is outside 0 ...
// m-1: pp-1-s lone forwards, s forward-backward pairs, steady triples, pp-1-s
// backward-W pairs and s lone Ws; the W of a microbatch lags its B by s passes, filling the
// drain bubble, and stage 0 still holds pp microbatches' activations as under 1F1B.
func (j *Job) schedule(s, m int) (ops []schedOp, rounds []int) {
	P, V := j.Plan.PP, j.Plan.VirtualStages
	if j.Plan.Schedule == ScheduleZBH1 {
		for x := 0; x <= m+P-2; x++ {
			if x >= P-1 && x <= m { // steady rounds x < m, and the end of the last
				rounds = append(rounds, len(ops))
			}
			if x < m {
				ops = append(ops, schedOp{passF, 0, x})
			}
			if y := x - (P - 1 - s); y >= 0 && y < m {
				ops = append(ops, schedOp{passB, 0, y})
			}
			if y := x - (P - 1); y >= 0 && y < m {
				ops = append(ops, schedOp{passW, 0, y})
			}
		}
		return ops, rounds
	}
	fseq, bseq := interleavedOrder(P, V, m)
	T := len(fseq)
	w := j.warmups(m)[s]
	ops = append(ops, fseq[:w]...)
	for k := 0; k < T-w; k++ {
		rounds = append(rounds, len(ops))
		ops = append(ops, fseq[w+k], bseq[k])
	}
	rounds = append(rounds, len(ops))
	ops = append(ops, bseq[T-w:]...)
	return ops, rounds
}

// interleavedOrder returns the order of the interleaved schedule's forwards and backwards
// (the same on every stage): groups of pp microbatches through chunk 0, 1, ... V-1 (the
// backwards: V-1 ... 0), a last group of m mod pp the same way.
func interleavedOrder(P, V, m int) (fseq, bseq []schedOp) {
	N := P
	for g := 0; g*N < m; g++ {
		n := min(N, m-g*N)
		for c := 0; c < V; c++ {
			for i := 0; i < n; i++ {
				fseq = append(fseq, schedOp{passF, c, g*N + i})
				bseq = append(bseq, schedOp{passB, V - 1 - c, g*N + i})
			}
		}
	}
	return fseq, bseq
}

// interleavedWarmups returns each stage's warmup forwards under the interleaved schedule:
// Megatron-Core's min(2(pp-s-1) + (V-1) pp, mV), which is deadlock-free when pp divides m.
// With a last group of fewer microbatches the stages can then wait on each other (a stage's
// backward needs the next virtual stage's, which sits behind a forward that needs this
// stage's); the warmup of every stage found blocked on a backward is then lengthened by one
// until the schedule runs through (a dry run of the dependencies alone), the least extra
// activation memory that makes the flexible group work (Llama 3 lets the group size be set
// freely but does not publish its schedule, Dubey et al. 2024 §3.3.2).
func interleavedWarmups(P, V, m int) []int {
	fseq, bseq := interleavedOrder(P, V, m)
	T := len(fseq)
	w := make([]int, P)
	for s := range w {
		w[s] = min(2*(P-s-1)+(V-1)*P, T)
	}
	if m%P == 0 {
		return w
	}
	type key struct{ kind, c, i, s int }
	for {
		progs := make([][]schedOp, P)
		for s := range progs {
			progs[s] = append(progs[s], fseq[:w[s]]...)
			for k := 0; k < T-w[s]; k++ {
				progs[s] = append(progs[s], fseq[w[s]+k], bseq[k])
			}
			progs[s] = append(progs[s], bseq[T-w[s]:]...)
		}
		done := map[key]bool{}
		pc := make([]int, P)
		for moved := true; moved; {
			moved = false
			for s := 0; s < P; s++ {
				for pc[s] < len(progs[s]) {
					o := progs[s][pc[s]]
					var dep key
					ok := true
					switch {
					case o.kind == passF && s > 0:
						dep = key{passF, o.c, o.i, s - 1}
					case o.kind == passF && o.c > 0:
						dep = key{passF, o.c - 1, o.i, P - 1}
					case o.kind == passF:
						ok = false // the first virtual stage: no input
					case s < P-1:
						dep = key{passB, o.c, o.i, s + 1}
					case o.c < V-1:
						dep = key{passB, o.c + 1, o.i, 0}
					default:
						dep = key{passF, V - 1, o.i, P - 1}
					}
					if ok && !done[dep] {
						break
					}
					done[key{o.kind, o.c, o.i, s}] = true
					pc[s]++
					moved = true
				}
			}
		}
		stuck := false
		for s := range pc {
			if pc[s] < len(progs[s]) && progs[s][pc[s]].kind == passB && w[s] < T {
				w[s]++
				stuck = true
			}
		}
		if !stuck {
			return w
		}
	}
}

// warmups returns interleavedWarmups for the job's pipeline and m microbatches, cached.
func (j *Job) warmups(m int) []int {
	if w, ok := j.warm[m]; ok {
		return w
	}
	if j.warm == nil {
		j.warm = map[int][]int{}
	}
	w := interleavedWarmups(j.Plan.PP, j.Plan.VirtualStages, m)
	j.warm[m] = w
	return w
}

// programAsync returns stage s's program for the interleaved and zb-h1 schedules with
// asynchronous point-to-point communication (Llama 3, Dubey et al. 2024 §3.3.2; Megatron-Core's
// overlap_p2p_comm): a stage posts each send as soon as its pass has produced the tensor and
// never waits for it, and keeps one receive posted ahead on each incoming stream (the next
// one is posted as soon as the previous is consumed), waiting for it only when the pass
// needs its input. Chunk c of stage pp-1 sends its activations to chunk c+1 of stage 0 and
// receives its gradients from there (the wrap of the interleaved pipeline). Then the
// gradient reduction, the optimizer and the ZeRO 1-2 parameter all-gather.
func (j *Job) programAsync(s, m int) []op {
	b := &progBuilder{j: j}
	P, V := j.Plan.PP, j.Plan.VirtualStages
	st := &j.stages[s]
	sched, rounds := j.schedule(s, m)
	gr := &grads{st: st, zero: j.Plan.ZeRO, overlap: j.Options.Overlap, m: m}
	recvsF, recvsB := 0, 0
	for _, o := range sched {
		switch {
		case o.kind == passF && !(s == 0 && o.c == 0):
			recvsF++
		case o.kind == passB && !(s == P-1 && o.c == V-1):
			recvsB++
		}
	}
	// Posted receives not yet waited for, per incoming role.
	var pending [numRoles]int32
	left := map[role]int{rolePPFwdIn: recvsF, rolePPBwdIn: recvsB}
	prefetch := func(r role) {
		if left[r] > 0 {
			left[r]--
			pending[r] = b.post(r, j.actSpec, -1)
		}
	}
	recv := func(r role) {
		b.wait(r, pending[r])
		prefetch(r)
	}
	prefetch(rolePPFwdIn)
	prefetch(rolePPBwdIn)
	// The pass after which each microbatch's gradients are complete: its last gradient pass
	// (chunk 0's B, or W under zb-h1).
	gradKind := passB
	if j.Plan.Schedule == ScheduleZBH1 {
		gradKind = passW
	}
	every := j.markEvery()
	ri := 0
	for k, o := range sched {
		if ri < len(rounds) && rounds[ri] == k {
			if ri%every == 0 {
				b.mark(ri / every)
			}
			ri++
		}
		ch := &st.chunks[o.c]
		switch o.kind {
		case passF:
			if !(s == 0 && o.c == 0) {
				recv(rolePPFwdIn)
			}
			b.pass(ch.fwd, nil)
			if !(s == P-1 && o.c == V-1) {
				b.post(rolePPFwdOut, j.actSpec, -1)
			}
		case passB:
			if !(s == P-1 && o.c == V-1) {
				recv(rolePPBwdIn)
			}
			var curs []*cursor
			if gradKind == passB {
				curs = gr.of(o.i)
			}
			b.pass(ch.overlapping(ch.bwd, ch.bwdNVL, curs), curs)
			if !(s == 0 && o.c == 0) {
				b.post(rolePPBwdOut, j.actSpec, -1)
			}
		case passW:
			curs := gr.of(o.i)
			b.pass(ch.overlapping(ch.wgt, ch.wgtNVL, curs), curs)
		}
		if o.kind == gradKind && o.c == 0 {
			gr.done(b, o.i)
		}
	}
	for ; ri < len(rounds); ri++ {
		if ri%every == 0 {
			b.mark(ri / every)
		}
	}
	b.tail(st)
	return b.ops
}

// markEvery returns the steady rounds per marked window: 1 for 1f1b (every round does the
// same work and, with blocking send/recv, takes the same time), pp for zb-h1 and pp x V for
// interleaved. With asynchronous sends a stage may run ahead of its neighbours, and when the
// pipeline transfers take a good part of a round the rounds settle into a cycle of pp rounds
// rather than one (the interleaved chunks cycle with period pp x V anyway): a window is pp
// microbatches' worth of rounds.
func (j *Job) markEvery() int {
	switch j.Plan.Schedule {
	case ScheduleInterleaved:
		return j.Plan.PP * j.Plan.VirtualStages
	case ScheduleZBH1:
		return j.Plan.PP
	}
	return 1
}

// reuse returns how Run simulates a step: the microbatches simulated, the steady window kc
// (in marks) whose copies stand for the rest, and how many extra copies (see Trace). exact,
// a step too short for a steady state, or ZeRO 2-3 (data-parallel traffic every
// microbatch), simulates every microbatch.
//
// 1f1b: m > 2pp+3 simulates 2pp+2 and repeats round pp m-(2pp+2) times. zb-h1 and
// interleaved: windows of markEvery rounds, each pp microbatches' worth; the fewest m'
// microbatches with m' = m mod pp whose steady rounds on stage 0 (the fewest: it has the
// most warmup) fill four windows are simulated, and window 2 (past the start-up transient)
// is repeated (m - m') / pp times.
func (j *Job) reuse(exact bool) (simM, kc, rep int) {
	m, P, V := j.micro, j.Plan.PP, j.Plan.VirtualStages
	if exact || P == 1 || j.Plan.ZeRO >= 2 {
		// ZeRO 2 and 3 reduce (and gather) every microbatch: the repeated rounds would leave
		// the copies' data-parallel traffic out of the simulated step.
		return m, 0, 0
	}
	var steady func(mm int) int // steady rounds of stage 0 with mm microbatches
	switch j.Plan.Schedule {
	case Schedule1F1B:
		if m > 2*P+3 {
			return 2*P + 2, P, m - (2*P + 2)
		}
		return m, 0, 0
	case ScheduleZBH1:
		steady = func(mm int) int { return mm - P + 1 }
	default:
		steady = func(mm int) int { return mm*V - slices.Max(j.warmups(mm)) }
	}
	const window = 2
	mm := m % P
	for steady(mm) < (window+2)*j.markEvery() {
		mm += P
	}
	if mm >= m {
		return m, 0, 0
	}
	return mm, window, (m - mm) / P
}

// overlapping returns the items a pass runs: nvl (its TP all-reduces as NVLink collectives,
// planTP) when the pass overlaps the gradient reduction (curs not empty) and nvl is set,
// items otherwise.
func (c *chunk) overlapping(items, nvl []item, curs []*cursor) []item {
	if len(curs) > 0 && nvl != nil {
		return nvl
	}
	return items
}
