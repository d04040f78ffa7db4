package runner

import (
	"fmt"

	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
)

// flowCeiling applies a transport's rate recovery (transport.FlowModel.Ceiling: RoCE's
// DCQCN) to the flow level's QPs (docs/protocols.md, "DCQCN at flow level"). It is the
// Router package flow's collectives see: it routes through the workload's router and keys
// each flow to its QP (source, destination and the router's QP key, the key the packet
// level's QP table has), whose recovery state persists across the QP's messages.
//
// On a grid of the ceiling's Step (DCQCN's timer T), while flows send, one pass over the
// sending flows:
//   - a QP is congested when a link of its path is saturated (its load at its capacity) and
//     carries flows that reach it from two or more different links (a switch egress fed by
//     several ingress ports, where a queue builds and ECN marks; a NIC's own link, whose QPs
//     the NIC schedules, is fed from the host alone). A congested QP runs at its max-min
//     share, uncapped (DCQCN's fixed point on a shared link is the fair share: Zhu et al.,
//     CoNEXT 2016), and is settled there (transport.QPCeiling.Settle: Rc = Rt = its share);
//   - a QP congested at the last pass and no longer is (its share rose: a flow it shared
//     with left) is settled at its old share at the previous grid instant, the last one
//     at which it was known congested, and from there follows the next item (so between
//     the change and the grid instant after it, at most one Step, it runs at its new share);
//   - a QP that is not congested and has recovery state moves along its recovery curve
//     (QPCeiling.Advance, with the wire bytes its flows sent since the last pass for the
//     byte counter) and is capped at it, until it is back at line rate (state dropped, cap
//     removed).
//
// Every cap that changes is set in one flow.Net.SetCaps call, so every ramping QP steps in
// one recomputation per grid instant. A pass is skipped when no rate was recomputed since the
// previous grid instant and no QP is ramping (nothing it reads has changed). A QP with no
// flow sending is not visited: its state is advanced when its next message is routed
// (DCQCN's timer runs while the QP is idle), and that flow is capped at once.
type flowCeiling struct {
	s     *sim.Sim
	net   *flow.Net
	inner flow.Router
	rc    transport.RateCeiling
	step  sim.Time
	line  sim.Rate // a QP's NIC port rate on the wire
	share float64  // payload share of the wire (flow rates are payload bits/s)
	// domain: hosts of one scale-up domain (their flows ride scale-up links: no DCQCN).
	domain int

	// qps holds the QPs with recovery state; track the flows routed as one QP on one path
	// since the last pass and those still sending at it, in id order (merged with the Net's
	// snapshot at each pass, which drops the ones that ended).
	qps   map[ceilKey]*ceilQP
	track []ceilFlow
	live  []*ceilQP // QPs with recovery state whose flow sent at the last pass
	tick  sim.Kind
	apply sim.Kind
	passK sim.Kind
	armed bool
	// rerouting: a fault model's reroute is in progress (its routes are not new flows).
	rerouting bool
	// last is the flow id the latest route was for, multi one routed more than once.
	last, multi flow.FlowID
	lastKey     ceilKey
	// pendIDs and pendCaps are caps for flows routed at the current instant (applied by the
	// apply event at that instant, after the flows exist).
	pendIDs  []flow.FlowID
	pendCaps []float64
	lastRec  int64
	lastFill int64 // the Net's Refilled at the last pass
	skipped  int   // grid instants skipped by the cost bound
	passes   int
	ramping  int
	gen      uint32
	flows    []flow.FlowInfo
	at       []int32 // by tracked flow: its index in flows (a pass)
	ids      []flow.FlowID
	caps     []float64
	mark     []int32 // by link: the one link its flows arrive from (-1 the host), -3 several
	markGen  []uint32
	err      error
}

// ceilFreeFlows bounds the ceiling's cost. A pass reads every sending flow (O(active)); with
// at most this many sending, every grid instant may pass; with more, a grid instant passes
// only once the Net has refilled at least as many flows as are sending since the last pass,
// so the passes cost at most what the rate recomputations cost (a 131,072-GPU training
// step has a million flows in flight: a pass every Step would cost 10^5 times the step's
// recomputations). The grid then coarsens and the ceilings move later than DCQCN's steps
// (the DCQCN state itself is exact: Advance applies every step due).
const ceilFreeFlows = 4096

// ceilKey is a QP: its hosts and the router's QP key.
type ceilKey struct {
	src, dst int32
	key      uint64
}

// ceilFlow is a flow routed as one QP on one path.
type ceilFlow struct {
	id    flow.FlowID
	key   ceilKey
	links []int32
}

// ceilQP is one QP's recovery state.
type ceilQP struct {
	key   ceilKey
	q     transport.QPCeiling
	flow  flow.FlowID // its latest flow
	rem   float64     // that flow's bytes left at the last pass (-1: never seen)
	carry float64     // payload bytes sent since the last Advance and not yet counted
	cap   float64     // the cap its flow has (payload bits/s, 0 none)
	cut   bool        // congested at the last pass
	wire  sim.Rate    // the rate it was settled at while cut
	seen  uint32      // the pass (gen) it was last visited in
	live  bool        // in flowCeiling.live
}

// newFlowCeiling returns the ceiling router over inner for base's flow model on net, or nil
// when the model has no ceiling, spreads a QP over several paths (spraying, adaptive spray:
// no one congested path), or the run has a fault model (faults: its reroutes and held QPs
// are not followed; docs/protocols.md, "DCQCN at flow level"). line is a host NIC port's
// rate on the wire.
func newFlowCeiling(s *sim.Sim, net *flow.Net, inner flow.Router, base *flowRouter, line sim.Rate, faults bool) (*flowCeiling, error) {
	m := base.model
	if m.Ceiling == nil || m.Spray || m.AdaptiveSpray || faults {
		return nil, nil
	}
	step := m.Ceiling.Step()
	if step <= 0 {
		return nil, fmt.Errorf("transport %s: flow-level rate ceiling: step %v; want > 0", base.name, step)
	}
	if line <= 0 {
		return nil, fmt.Errorf("transport %s: flow-level rate ceiling: line rate %v; want > 0", base.name, line)
	}
	c := &flowCeiling{s: s, net: net, inner: inner, rc: m.Ceiling, step: step, line: line, share: payloadShare(m),
		domain: base.domain, qps: map[ceilKey]*ceilQP{}, lastRec: -1, last: -1, multi: -1}
	c.tick = s.Register("flow-ceiling", c.onTick)
	c.apply = s.Register("flow-ceiling-apply", c.onApply)
	c.passK = s.Register("flow-ceiling-pass", c.onPass)
	return c, nil
}

// Paths implements flow.Router: inner's paths, the flow they are for (the Net's next id)
// keyed to its QP, and, when the QP is recovering, the flow capped at its ceiling at this
// instant.
func (c *flowCeiling) Paths(src, dst int, key uint64, buf []flow.Path) ([]flow.Path, sim.Time, error) {
	buf, lat, err := c.inner.Paths(src, dst, key, buf)
	if err != nil || c.rerouting || len(buf) != 1 || (c.domain > 1 && src/c.domain == dst/c.domain) {
		return buf, lat, err
	}
	id := flow.FlowID(c.net.Stats().FlowsAdded) // the id AddFlow gives the next flow
	switch id {
	case c.multi:
		return buf, lat, nil
	case c.last:
		// A second route for one flow: a phase's flow over several QPs (flow/expand.go),
		// with no one QP to follow. Left to the max-min rates.
		c.multi = id
		if n := len(c.track); n > 0 && c.track[n-1].id == id {
			c.track = c.track[:n-1]
		}
		if qp := c.qps[c.lastKey]; qp != nil && qp.flow == id {
			qp.flow, qp.rem = -1, -1
		}
		if n := len(c.pendIDs); n > 0 && c.pendIDs[n-1] == id {
			c.pendIDs, c.pendCaps = c.pendIDs[:n-1], c.pendCaps[:n-1]
		}
		return buf, lat, nil
	}
	k := ceilKey{src: int32(src), dst: int32(dst), key: key}
	c.last, c.lastKey = id, k
	c.track = append(c.track, ceilFlow{id: id, key: k, links: append([]int32(nil), buf[0].Links...)})
	if !c.armed {
		c.armed = true
		c.s.At((c.s.Now()/c.step+1)*c.step, c.tick, 0, 0)
	}
	qp := c.qps[k]
	if qp == nil {
		return buf, lat, nil
	}
	if qp.flow >= 0 && qp.flow != id && qp.rem > 0 {
		qp.carry += qp.rem // the previous message's rest was sent after the last pass
	}
	qp.flow, qp.rem = id, -1
	if !qp.cut {
		c.advance(qp)
	}
	if qp.cap > 0 {
		c.pendIDs = append(c.pendIDs, id)
		c.pendCaps = append(c.pendCaps, qp.cap)
		if len(c.pendIDs) == 1 {
			c.s.At(c.s.Now(), c.apply, 0, 0)
		}
	}
	return buf, lat, nil
}

// advance moves a QP that is not congested along its recovery curve to now and sets its
// cap (qp.cap); back at line rate its state is dropped.
func (c *flowCeiling) advance(qp *ceilQP) {
	rate, rec := qp.q.Advance(c.s.Now(), int64(qp.carry/c.share))
	qp.carry = 0
	if !rec {
		qp.q, qp.cap = nil, 0
		delete(c.qps, qp.key)
		return
	}
	qp.cap = float64(rate) * c.share
}

// onApply caps the flows routed at this instant whose QPs are recovering.
func (c *flowCeiling) onApply(sim.Time, int32, uint64) {
	if _, err := c.net.SetCaps(c.pendIDs, c.pendCaps); err != nil {
		c.fail(err)
	}
	c.pendIDs, c.pendCaps = c.pendIDs[:0], c.pendCaps[:0]
}

// onTick is one grid instant: the pass over the sending flows (see flowCeiling).
func (c *flowCeiling) onTick(now sim.Time, _ int32, _ uint64) {
	c.armed = false
	if c.net.Active() == 0 {
		c.settleIdle(now)
		return // Paths arms the grid again
	}
	c.armed = true
	c.s.At(now+c.step, c.tick, 0, 0)
	// The pass sees the instant's end (every flow that starts or ends at it, whatever the
	// order of the instant's events; sim.AtEndOfInstant), after the Net's own recomputation.
	c.s.AtEndOfInstant(now, c.passK, 0, 0)
}

// onPass is a grid instant's pass, at the instant's end (see flowCeiling).
func (c *flowCeiling) onPass(now sim.Time, _ int32, _ uint64) {
	if c.net.Active() == 0 {
		return
	}
	st := c.net.Stats()
	if st.Recomputes == c.lastRec && c.ramping == 0 {
		return
	}
	if a := c.net.Active(); a > ceilFreeFlows && st.Refilled-c.lastFill < int64(a) {
		c.skipped++
		return // the cost bound: the grid coarsens (see ceilFreeFlows)
	}
	c.passes++
	c.gen++
	c.flows = c.net.Flows(c.flows[:0])
	for len(c.mark) < c.net.NumLinks() {
		c.mark = append(c.mark, 0)
		c.markGen = append(c.markGen, 0)
	}
	// Keep the tracked flows still sending (both lists in id order), each with its
	// snapshot's index.
	k, j := 0, 0
	c.at = c.at[:0]
	for _, t := range c.track {
		for j < len(c.flows) && c.flows[j].ID < t.id {
			j++
		}
		if j < len(c.flows) && c.flows[j].ID == t.id {
			c.track[k] = t
			c.at = append(c.at, int32(j))
			k++
		}
	}
	clear(c.track[k:])
	c.track = c.track[:k]
	for i := range c.track {
		from := int32(-1)
		for _, l := range c.track[i].links {
			switch {
			case c.markGen[l] != c.gen:
				c.markGen[l], c.mark[l] = c.gen, from
			case c.mark[l] != from:
				c.mark[l] = -3
			}
			from = l
		}
	}
	c.ids, c.caps = c.ids[:0], c.caps[:0]
	c.ramping = 0
	prev := now - c.step
	for i := range c.track {
		t := &c.track[i]
		f := &c.flows[c.at[i]]
		qp := c.qps[t.key]
		if qp != nil && qp.flow != t.id || f.Rate <= 0 {
			continue // an older message of a QP that has moved on, or one held or stalled
		}
		cong := c.congested(t.links)
		if qp == nil {
			if !cong {
				continue
			}
			q, err := c.rc.NewQP(c.line)
			if err != nil {
				c.fail(err)
				continue
			}
			qp = &ceilQP{key: t.key, q: q, flow: t.id, rem: -1}
			c.qps[t.key] = qp
		}
		qp.seen = c.gen
		if qp.rem >= 0 {
			qp.carry += qp.rem - f.Remaining
		} else {
			qp.carry += float64(f.Bytes) - f.Remaining
		}
		qp.rem = f.Remaining
		had := qp.cap // the cap the flow has
		want := had
		switch {
		case cong:
			qp.wire = sim.Rate(f.Rate / c.share)
			qp.q.Settle(now, qp.wire)
			qp.carry, qp.cut = 0, true
			want = 0 // at its max-min share: DCQCN's fixed point is the fair share
		case qp.q != nil:
			if qp.cut {
				// Congested until the change since the last grid instant (a pass runs at the
				// first grid instant after any recomputation).
				qp.q.Settle(prev, qp.wire)
				qp.cut = false
				// Only what it sent since then counts toward the byte counter: at most its
				// cap (its share) for one step.
				qp.carry = min(qp.carry, max(float64(qp.wire)*c.share, f.Rate)*float64(now-prev)*1e-12/8)
			}
			c.advance(qp)
			want = qp.cap
			if qp.q != nil {
				c.ramping++
			}
		}
		if qp.q != nil && !qp.live {
			qp.live = true
			c.live = append(c.live, qp)
		}
		qp.cap = want
		if want != had {
			c.ids = append(c.ids, f.ID)
			c.caps = append(c.caps, want)
		}
	}
	c.settleIdle(now)
	if _, err := c.net.SetCaps(c.ids, c.caps); err != nil {
		c.fail(err)
	}
	st = c.net.Stats()
	c.lastRec, c.lastFill = st.Recomputes, st.Refilled
}

// settleIdle drops from the live list the QPs whose flow did not send at this pass; one
// congested at its last pass is settled at the previous grid instant (congested until its
// message ended), so that its next message resumes from there.
func (c *flowCeiling) settleIdle(now sim.Time) {
	k := 0
	for _, qp := range c.live {
		if qp.q != nil && qp.seen == c.gen && c.net.Active() > 0 {
			c.live[k] = qp
			k++
			continue
		}
		qp.live = false
		if qp.q != nil && qp.cut {
			qp.q.Settle(max(now-c.step, 0), qp.wire)
			qp.cut, qp.carry, qp.rem = false, 0, 0
		}
	}
	clear(c.live[k:])
	c.live = c.live[:k]
}

// congested reports whether a link of path is saturated and fed from several links (the
// marks of the current pass).
func (c *flowCeiling) congested(path []int32) bool {
	for _, l := range path {
		if c.markGen[l] != c.gen || c.mark[l] != -3 {
			continue
		}
		if capa := c.net.Capacity(int(l)); capa > 0 && c.net.LinkLoad(int(l)) >= capa*(1-1e-9) {
			return true
		}
	}
	return false
}

// fail stops the run with the first error the ceiling meets (a QP's state it could not
// make, caps the Net rejected: a bug, not bad input).
func (c *flowCeiling) fail(err error) {
	if c.err == nil {
		c.err = fmt.Errorf("flow-level rate ceiling: %w", err)
		c.s.Stop(c.err)
	}
}

// ceilRouter returns c as the Router over r, or r when there is no ceiling (c nil).
func ceilRouter(r flow.Router, c *flowCeiling) flow.Router {
	if c == nil {
		return r
	}
	return c
}

// QPs implements flow.QPRouter with the inner router's (1 when it has none).
func (c *flowCeiling) QPs(src, dst int) int {
	if qr, ok := c.inner.(flow.QPRouter); ok {
		return qr.QPs(src, dst)
	}
	return 1
}

// ScheduleKey implements flow.ScheduleKeyer with the inner router's (key when it has none).
func (c *flowCeiling) ScheduleKey(key uint64) uint64 {
	if kr, ok := c.inner.(flow.ScheduleKeyer); ok {
		return kr.ScheduleKey(key)
	}
	return key
}

// reroute runs do, a fault model's reroute of flows in flight onto new paths. The ceiling
// does not see which flows moved, so it lets go of every flow in flight: each is uncapped
// and no longer tracked (it runs at its max-min rate to its end), while the QPs keep their
// state for their next messages.
func (c *flowCeiling) reroute(do func() (int, error)) (int, error) {
	c.rerouting = true
	n, err := do()
	c.rerouting = false
	c.ids, c.caps = c.ids[:0], c.caps[:0]
	for _, t := range c.track {
		if qp := c.qps[t.key]; qp != nil && qp.flow == t.id {
			if qp.cap > 0 {
				c.ids = append(c.ids, t.id)
				c.caps = append(c.caps, 0)
			}
			qp.flow, qp.rem, qp.cap = -1, -1, 0
		}
	}
	clear(c.track)
	c.track = c.track[:0]
	if _, serr := c.net.SetCaps(c.ids, c.caps); serr != nil {
		c.fail(serr)
	}
	return n, err
}
