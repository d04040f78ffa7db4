package runner

import (
	"fmt"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
)

// transfers posts a scenario's traffic transfers on a transport's endpoint and starts the
// flows that wait on htsim triggers (scenario.TriggerPlan) when their trigger fires: the
// endpoint reports each transfer's sender and receiver completions (Hooks.FlowSent,
// FlowPlaced), which activate the flow's send_done and recv_done triggers at that instant,
// and a firing trigger's flows are posted with that instant as their start. Nothing here
// knows the transport.
type transfers struct {
	ep     transport.Endpoint
	groups []trigGroup
	// posted maps an endpoint transfer (AddFlow order) to its group and flow.
	posted []flowRef
	err    error
	buf    []int
}

// trigGroup is one traffic group's flows and, when it has any, its triggers' state.
type trigGroup struct {
	gi      int
	pairs   []pair
	bytes   int64 // the group's transfer size, for flows without their own
	start   sim.Time
	plan    *scenario.TriggerPlan
	st      *scenario.TriggerState
	started int    // flows posted
	posted  []bool // by flow
}

type flowRef struct{ g, j int }

// postTransfers posts every flow that starts at a time and returns the state that starts the
// rest; hooks must then be installed with its callbacks (hooks).
func postTransfers(sc *scenario.Scenario, ep transport.Endpoint, hosts int) (*transfers, error) {
	tr := &transfers{ep: ep}
	for gi := range sc.Traffic {
		g := &sc.Traffic[gi]
		rng := sim.Stream(sc.Run.Seed, fmt.Sprintf("traffic[%d]", gi))
		tg := trigGroup{gi: gi, pairs: groupPairs(g, hosts, rng.Perm), bytes: int64(g.Bytes), start: g.Start, plan: g.Triggers()}
		tg.posted = make([]bool, len(tg.pairs))
		if tg.plan != nil {
			tg.st = tg.plan.NewState()
		}
		tr.groups = append(tr.groups, tg)
	}
	for g := range tr.groups {
		tg := &tr.groups[g]
		for j := range tg.pairs {
			if tg.plan != nil && tg.plan.Flows[j].Wait >= 0 {
				continue // posted when its trigger fires
			}
			if err := tr.post(g, j, max(tg.start, tg.pairs[j].start)); err != nil {
				return nil, &InputError{Err: err}
			}
		}
	}
	return tr, nil
}

// post adds flow j of group g to the endpoint, starting at start.
func (tr *transfers) post(g, j int, start sim.Time) error {
	tg := &tr.groups[g]
	p := tg.pairs[j]
	bytes := p.bytes
	if bytes == 0 {
		bytes = tg.bytes
	}
	if g, ok := tr.ep.(transport.TrafficGrouper); ok {
		g.SetTrafficGroup(tg.gi)
	}
	if err := tr.ep.AddFlow(p.src, p.dst, bytes, start); err != nil {
		return fmt.Errorf("traffic[%d]: %w", tg.gi, err)
	}
	tr.posted = append(tr.posted, flowRef{g, j})
	tg.posted[j] = true
	tg.started++
	return nil
}

// hooks returns the completion callbacks for Hooks.FlowSent and FlowPlaced; nil when no group
// has triggers.
func (tr *transfers) hooks() (sent, placed func(sim.Time, int)) {
	has := false
	for i := range tr.groups {
		has = has || tr.groups[i].plan != nil
	}
	if !has {
		return nil, nil
	}
	on := func(send bool) func(sim.Time, int) {
		return func(now sim.Time, flow int) {
			if flow < 0 || flow >= len(tr.posted) || tr.err != nil {
				return
			}
			ref := tr.posted[flow]
			tg := &tr.groups[ref.g]
			if tg.plan == nil {
				return
			}
			k := tg.plan.Flows[ref.j].RecvDone
			if send {
				k = tg.plan.Flows[ref.j].SendDone
			}
			if k >= 0 {
				tr.activate(now, ref.g, k)
			}
		}
	}
	return on(true), on(false)
}

// activate records one activation of trigger k of group g at now and posts the flows it
// starts. An error (an over-activated trigger, which Resolve rules out for complete runs, or
// the endpoint refusing a flow) is kept for the end of the run.
func (tr *transfers) activate(now sim.Time, g, k int) {
	tg := &tr.groups[g]
	var err error
	tr.buf, err = tg.st.Activate(k, tr.buf)
	if err != nil {
		tr.err = fmt.Errorf("traffic[%d]: %w", tg.gi, err)
		return
	}
	for _, j := range tr.buf {
		if err := tr.post(g, j, now); err != nil {
			tr.err = err
			return
		}
	}
}

// check returns the error of a trigger run: an activation or post that failed, or flows still
// waiting when the run ended (their triggers never fired: the run stopped first, or the
// transport does not report completions).
func (tr *transfers) check() error {
	if tr.err != nil {
		return tr.err
	}
	for i := range tr.groups {
		tg := &tr.groups[i]
		if tg.plan == nil || tg.started == len(tg.pairs) {
			continue
		}
		for j := range tg.pairs {
			ft := tg.plan.Flows[j]
			if ft.Wait >= 0 && !tg.posted[j] {
				trg := tg.plan.Triggers[ft.Wait]
				return fmt.Errorf("traffic[%d]: %d flows waiting on triggers never started (first: %s:%d, trigger %d, activated %d times): the run ended first, or the transport does not report flow completions (transport.Hooks.FlowSent, FlowPlaced)",
					tg.gi, len(tg.pairs)-tg.started, tg.plan.File, ft.Line, trg.ID, tg.st.Activations(ft.Wait))
			}
		}
	}
	return nil
}
