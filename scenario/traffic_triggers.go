package scenario

import (
	"container/heap"
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/traffic/htsim"
)

// Triggers: a connection matrix's flows may wait on a trigger instead of starting at a time,
// and activate triggers when their sender has had every byte acknowledged (send_done) or
// their receiver has placed every byte (recv_done), making a dependency DAG. The semantics
// are htsim's (sim/trigger.cpp): a oneshot fires on its one activation, starting every flow
// waiting on it; a multishot starts the next waiting flow (in file order) on each
// activation; a barrier fires after count activations. htsim aborts on a second activation
// of a oneshot or on more activations than a barrier's count; so does Resolve, before the
// run. The runner starts waiting flows when their trigger fires (runner/triggers.go).

// TriggerPlan is a traffic group's triggers, in the order of its FlowList.
type TriggerPlan struct {
	// Triggers lists the triggers; FlowTrigger fields index it.
	Triggers []TriggerSpec
	// Flows gives each flow's triggers, parallel to FlowList.
	Flows []FlowTrigger
	// File names the file the triggers were read from, for messages.
	File string
}

// TriggerSpec is one trigger.
type TriggerSpec struct {
	// ID is its id in the file; Line and Col the position of its declaration.
	ID        uint32
	Line, Col int
	// Kind is oneshot, multishot or barrier; Count is a barrier's activations.
	Kind  htsim.TriggerKind
	Count int
	// Targets are the flows waiting on it (FlowList indices), in file order.
	Targets []int
}

// FlowTrigger is one flow's triggers: indices in TriggerPlan.Triggers, -1 for none.
type FlowTrigger struct {
	// Wait is the trigger the flow waits on (-1: it starts at its Start).
	Wait int
	// SendDone and RecvDone are the triggers it activates when sent and when placed.
	SendDone, RecvDone int
	// Line and Col are the position of the flow's connection line in the file.
	Line, Col int
}

// Triggers returns the group's trigger plan, nil when its flows use none.
func (t *Traffic) Triggers() *TriggerPlan { return t.triggers }

// TriggerState is the run-time state of a plan's triggers.
type TriggerState struct {
	plan *TriggerPlan
	acts []int // activations so far, per trigger
}

// NewState returns the plan's triggers before any activation.
func (p *TriggerPlan) NewState() *TriggerState {
	return &TriggerState{plan: p, acts: make([]int, len(p.Triggers))}
}

// Activate records one activation of trigger k and returns the flows it starts (appended to
// buf[:0]). Errors: a second activation of a oneshot, more activations than a barrier's
// count (htsim aborts on both).
func (s *TriggerState) Activate(k int, buf []int) ([]int, error) {
	tr := &s.plan.Triggers[k]
	s.acts[k]++
	n := s.acts[k]
	buf = buf[:0]
	switch tr.Kind {
	case htsim.Oneshot:
		if n > 1 {
			return buf, fmt.Errorf("%s:%d:%d: oneshot trigger %d is activated a second time; htsim allows one activation: use multishot or barrier", s.plan.File, tr.Line, tr.Col, tr.ID)
		}
		buf = append(buf, tr.Targets...)
	case htsim.Multishot:
		if n <= len(tr.Targets) {
			buf = append(buf, tr.Targets[n-1])
		}
	case htsim.Barrier:
		if n > tr.Count {
			return buf, fmt.Errorf("%s:%d:%d: barrier trigger %d (count %d) is activated %d times; htsim aborts past its count", s.plan.File, tr.Line, tr.Col, tr.ID, tr.Count, n)
		}
		if n == tr.Count {
			buf = append(buf, tr.Targets...)
		}
	}
	return buf, nil
}

// Activations returns how often trigger k was activated.
func (s *TriggerState) Activations(k int) int { return s.acts[k] }

// htsimPlan builds the trigger plan of a connection matrix (nil when no connection uses a
// trigger).
func htsimPlan(m *htsim.Matrix, file string) *TriggerPlan {
	used := false
	for _, c := range m.Conns {
		if c.Trigger != 0 || c.SendDone != 0 || c.RecvDone != 0 {
			used = true
			break
		}
	}
	if !used {
		return nil
	}
	p := &TriggerPlan{File: file, Triggers: make([]TriggerSpec, len(m.Triggers)), Flows: make([]FlowTrigger, len(m.Conns))}
	idx := make(map[uint32]int, len(m.Triggers))
	for i, tr := range m.Triggers {
		p.Triggers[i] = TriggerSpec{ID: tr.ID, Line: tr.Line, Col: tr.Col, Kind: tr.Kind, Count: tr.Count}
		idx[tr.ID] = i
	}
	of := func(id uint32) int {
		if id == 0 {
			return -1
		}
		return idx[id] // Read checked every reference is declared
	}
	for j, c := range m.Conns {
		ft := FlowTrigger{Wait: of(c.Trigger), SendDone: of(c.SendDone), RecvDone: of(c.RecvDone), Line: c.Line, Col: c.Col}
		if ft.Wait >= 0 {
			p.Triggers[ft.Wait].Targets = append(p.Triggers[ft.Wait].Targets, j)
		}
		p.Flows[j] = ft
	}
	return p
}

// earliestStarts sets the Start of every flow waiting on a trigger to the earliest time it
// can start: the DAG run with each flow taking its bytes at rate (no latency, no
// contention), so run.duration's default covers the chain. It checks the plan as the run
// would: every waiting flow must start, and no trigger may be over-activated. path names the
// group in errors.
func (p *TriggerPlan) earliestStarts(flows []FlowSpec, rate sim.Rate, path string) error {
	st := p.NewState()
	started := make([]bool, len(flows))
	var q finishQueue
	push := func(j int, start sim.Time) {
		started[j] = true
		flows[j].Start = start
		heap.Push(&q, finish{at: satAdd(start, rate.TxTime(int64(flows[j].Bytes))), flow: j})
	}
	for j := range flows {
		if p.Flows[j].Wait < 0 {
			push(j, flows[j].Start)
		}
	}
	var buf []int
	for q.Len() > 0 {
		f := heap.Pop(&q).(finish)
		for _, k := range []int{p.Flows[f.flow].SendDone, p.Flows[f.flow].RecvDone} {
			if k < 0 {
				continue
			}
			var err error
			if buf, err = st.Activate(k, buf); err != nil {
				return Errorf(path+".file", "%v (by the connection on line %d)", err, p.Flows[f.flow].Line)
			}
			for _, j := range buf {
				push(j, f.at)
			}
		}
	}
	for j, ok := range started {
		if ok {
			continue
		}
		tr := &p.Triggers[p.Flows[j].Wait]
		why := fmt.Sprintf("no connection activates it (send_done_trigger or recv_done_trigger %d) from a flow that starts", tr.ID)
		switch {
		case tr.Kind == htsim.Barrier && st.Activations(p.Flows[j].Wait) > 0:
			why = fmt.Sprintf("it is a barrier of count %d and gets %d activations", tr.Count, st.Activations(p.Flows[j].Wait))
		case tr.Kind == htsim.Multishot && st.Activations(p.Flows[j].Wait) > 0:
			why = fmt.Sprintf("it is a multishot with %d waiting flows and gets %d activations", len(tr.Targets), st.Activations(p.Flows[j].Wait))
		}
		return Errorf(path+".file", "%s:%d:%d: the connection waits on trigger %d (line %d), which never fires: %s", p.File, p.Flows[j].Line, p.Flows[j].Col, tr.ID, tr.Line, why)
	}
	return nil
}

// finish is a flow's earliest finish, for earliestStarts.
type finish struct {
	at   sim.Time
	flow int
}

// finishQueue orders finishes by time, then by flow (file order), so the plan is
// deterministic.
type finishQueue []finish

func (q finishQueue) Len() int { return len(q) }
func (q finishQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].flow < q[j].flow)
}
func (q finishQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *finishQueue) Push(x any)   { *q = append(*q, x.(finish)) }
func (q *finishQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
