package sim

// TimerID names a timer created by NewTimer; it indexes the simulation's timer table.
type TimerID int32

// timer is a cancellable, re-armable deadline that calls a handler when it expires.
//
// It follows the one-deadline-per-object habit (quic-go's connection timer): Reset to a later
// deadline pushes nothing, the pending event re-queues itself when it fires early; Reset to an
// earlier deadline pushes one event and the older one becomes stale (its gen no longer
// matches) and is dropped when popped. Stop only clears armed. So re-arming on every ACK costs
// nothing in the queue, and nothing is ever found by scanning.
type timer struct {
	kind       Kind
	obj        int32
	deadline   Time   // valid when armed
	pendingAt  Time   // time of the live queued event, valid when hasPending
	gen        uint64 // generation of the live queued event
	armed      bool
	hasPending bool
}

// NewTimer creates a stopped timer that, when it expires, calls the handler of kind k with obj
// and arg 0.
func (s *Sim) NewTimer(k Kind, obj int32) TimerID {
	s.timers = append(s.timers, timer{kind: k, obj: obj})
	return TimerID(len(s.timers) - 1)
}

// Reset arms timer id to expire at time at, replacing any earlier deadline. A deadline in the
// past fires at the current time.
func (s *Sim) Reset(id TimerID, at Time) {
	t := &s.timers[id]
	if at < s.now {
		at = s.now
	}
	t.deadline = at
	t.armed = true
	if !t.hasPending || at < t.pendingAt {
		t.gen++
		t.pendingAt = at
		t.hasPending = true
		s.At(at, timerKind, int32(id), t.gen)
	}
}

// StopTimer disarms timer id; it will not fire until Reset again. Stopping a stopped timer is a
// no-op.
func (s *Sim) StopTimer(id TimerID) { s.timers[id].armed = false }

// Deadline returns the timer's deadline and whether it is armed.
func (s *Sim) Deadline(id TimerID) (Time, bool) {
	t := &s.timers[id]
	return t.deadline, t.armed
}

// fireTimer handles the kernel's timer events.
func (s *Sim) fireTimer(now Time, obj int32, gen uint64) {
	t := &s.timers[obj]
	if gen != t.gen || !t.hasPending {
		return // superseded by an earlier Reset
	}
	t.hasPending = false
	if !t.armed {
		return
	}
	if t.deadline > now {
		// Pushed back by a later Reset: requeue at the real deadline.
		t.gen++
		t.pendingAt = t.deadline
		t.hasPending = true
		s.At(t.deadline, timerKind, obj, t.gen)
		return
	}
	t.armed = false
	s.events++
	s.handlers[t.kind](now, t.obj, 0)
}
