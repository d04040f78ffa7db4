package training

import (
	"math"
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

// cursor tracks gradient production into one stream's buckets during the last backward.
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

func (b *progBuilder) postCursor(c *cursor) {
	b.post(c.role, c.specs[c.next], c.labels[c.next])
	c.next++
	c.acc = 0
}

// pass emits one forward or backward pass. With cursors (the last microbatch's backward under
// overlap), gradients accumulate into buckets as each item produces them, evenly over the
// item's time, and each bucket is posted the moment it fills.
func (b *progBuilder) pass(items []item, curs []*cursor) {
	type event struct {
		frac float64
		c    *cursor
		idx  int
	}
	var evs []event
	for _, it := range items {
		if it.kind == itemColl {
			s := b.post(it.role, it.spec, it.label)
			b.wait(it.role, s)
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

// program returns stage s's program for one step of m microbatches, following Megatron-LM's
// non-interleaved 1F1B schedule (forward_backward_pipelining_without_interleaving): warmup
// forwards, steady one-forward-one-backward iterations with batched blocking send/recv pairs
// (send_forward_recv_backward, send_backward_recv_forward), cooldown backwards; then the
// gradient reduction, the optimizer and, with ZeRO, the parameter all-gather.
func (j *Job) program(s, m int) []op {
	b := &progBuilder{j: j}
	P := j.Plan.PP
	st := &j.stages[s]
	first, last := s == 0, s == P-1
	w := min(P-s-1, m)
	rem := m - w
	dp := &cursor{role: roleDP, specs: st.dpSpecs, labels: st.dpLabels}
	edp := &cursor{role: roleEDP, specs: st.edpSpecs, labels: st.edpLabels}
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
		if i == m-1 && j.Options.Overlap {
			b.pass(st.bwdLast, []*cursor{dp, edp})
			return
		}
		b.pass(st.bwd, nil)
	}
	for i := 0; i < w; i++ {
		recvFwd()
		b.pass(st.fwd, nil)
		sendFwd()
	}
	if rem > 0 {
		recvFwd()
	}
	for k := 0; k < rem; k++ {
		b.flush()
		b.ops = append(b.ops, op{kind: opMark, arg: int32(k)})
		b.pass(st.fwd, nil)
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
	b.flush()
	b.ops = append(b.ops, op{kind: opMark, arg: int32(rem)})
	for i := 0; i < w; i++ {
		recvBwd()
		backward(rem + i)
		sendBwd()
	}
	for dp.next < len(dp.specs) {
		b.postCursor(dp)
	}
	for edp.next < len(edp.specs) {
		b.postCursor(edp)
	}
	for k := range st.dpSpecs {
		b.wait(roleDP, int32(k))
	}
	for k := range st.edpSpecs {
		b.wait(roleEDP, int32(k))
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
	return b.ops
}
