package sim

import (
	"fmt"
	"testing"
)

// newTimerSim returns a simulation with one timer (obj 7) whose firings are recorded.
func newTimerSim() (*Sim, TimerID, *recorder) {
	s := New(1)
	r := &recorder{}
	k := s.Register("rto", r.handle)
	return s, s.NewTimer(k, 7), r
}

func checkFired(t *testing.T, r *recorder, want ...Time) {
	t.Helper()
	if got := fmt.Sprint(r.times()); got != fmt.Sprint(want) {
		t.Errorf("timer fired at %s, want %v", got, want)
	}
	for _, c := range r.calls {
		if c.obj != 7 || c.arg != 0 {
			t.Errorf("timer handler got obj %d arg %d, want 7, 0", c.obj, c.arg)
		}
	}
}

func checkDeadline(t *testing.T, s *Sim, id TimerID, wantAt Time, wantArmed bool) {
	t.Helper()
	if at, armed := s.Deadline(id); at != wantAt || armed != wantArmed {
		t.Errorf("Deadline() = %v, %v; want %v, %v", at, armed, wantAt, wantArmed)
	}
}

func TestTimerFiresAtDeadline(t *testing.T) {
	s, id, r := newTimerSim()
	checkDeadline(t, s, id, 0, false) // a new timer is stopped
	s.Reset(id, 100)
	checkDeadline(t, s, id, 100, true)
	if err := s.Run(99); err != nil {
		t.Fatal(err)
	}
	checkFired(t, r)
	if err := s.Run(MaxTime); err != nil {
		t.Fatal(err)
	}
	checkFired(t, r, 100)
	checkDeadline(t, s, id, 100, false) // disarmed once fired
	if s.Events() != 1 || s.Pending() != 0 {
		t.Errorf("events %d pending %d, want 1, 0", s.Events(), s.Pending())
	}
}

func TestTimerResetEarlierReplaces(t *testing.T) {
	s, id, r := newTimerSim()
	s.Reset(id, 100)
	s.Reset(id, 50)
	checkDeadline(t, s, id, 50, true)
	if err := s.Run(MaxTime); err != nil {
		t.Fatal(err)
	}
	checkFired(t, r, 50) // once; the event at 100 is stale
	// The stale event is not counted as a dispatched event.
	if s.Events() != 1 {
		t.Errorf("Events() = %d, want 1", s.Events())
	}
}

func TestTimerResetLaterDefers(t *testing.T) {
	s, id, r := newTimerSim()
	s.Reset(id, 50)
	s.Reset(id, 100)
	if s.Pending() != 1 {
		t.Errorf("Reset to a later deadline queued another event: pending %d, want 1", s.Pending())
	}
	checkDeadline(t, s, id, 100, true)
	if err := s.Run(MaxTime); err != nil {
		t.Fatal(err)
	}
	checkFired(t, r, 100)
	if s.Events() != 1 {
		t.Errorf("Events() = %d, want 1 (the early wake-up is not an event)", s.Events())
	}
}

func TestTimerStop(t *testing.T) {
	s, id, r := newTimerSim()
	s.Reset(id, 100)
	s.StopTimer(id)
	checkDeadline(t, s, id, 100, false)
	s.StopTimer(id) // stopping a stopped timer is a no-op
	if err := s.Run(MaxTime); err != nil {
		t.Fatal(err)
	}
	checkFired(t, r)
	if s.Events() != 0 || s.Pending() != 0 {
		t.Errorf("events %d pending %d, want 0, 0", s.Events(), s.Pending())
	}
}

func TestTimerResetAfterStop(t *testing.T) {
	for _, c := range []struct {
		name    string
		restart Time
	}{
		{"later", 200},
		{"same", 100},
		{"earlier", 50},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, id, r := newTimerSim()
			s.Reset(id, 100)
			if err := s.Run(10); err != nil {
				t.Fatal(err)
			}
			s.StopTimer(id)
			s.Reset(id, c.restart)
			if err := s.Run(MaxTime); err != nil {
				t.Fatal(err)
			}
			checkFired(t, r, c.restart)
		})
	}

	// Stopped while its event is pending, then the event passes, then re-armed.
	s, id, r := newTimerSim()
	s.Reset(id, 100)
	s.Run(50)
	s.StopTimer(id)
	s.Run(150)
	checkFired(t, r)
	s.Reset(id, 200)
	s.Run(MaxTime)
	checkFired(t, r, 200)
}

func TestTimerResetInPastFiresNow(t *testing.T) {
	s, id, r := newTimerSim()
	s.Run(100)
	s.Reset(id, 40)
	checkDeadline(t, s, id, 100, true)
	if err := s.Run(MaxTime); err != nil {
		t.Fatalf("Reset in the past: Run = %v", err)
	}
	checkFired(t, r, 100)
}

func TestTimerPeriodic(t *testing.T) {
	s := New(1)
	var fired []Time
	var id TimerID
	k := s.Register("tick", func(now Time, _ int32, _ uint64) {
		fired = append(fired, now)
		s.Reset(id, now+10)
	})
	id = s.NewTimer(k, 0)
	s.Reset(id, 10)
	if err := s.Run(100); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(fired); got != "[10ps 20ps 30ps 40ps 50ps 60ps 70ps 80ps 90ps 100ps]" {
		t.Errorf("periodic timer fired at %s", got)
	}
	checkDeadline(t, s, id, 110, true)
}

func TestTimersIndependent(t *testing.T) {
	s := New(1)
	var r recorder
	k := s.Register("rto", r.handle)
	a, b := s.NewTimer(k, 1), s.NewTimer(k, 2)
	if a == b {
		t.Fatalf("NewTimer returned the same id twice")
	}
	s.Reset(a, 30)
	s.Reset(b, 20)
	s.StopTimer(a)
	s.Reset(b, 40)
	if err := s.Run(MaxTime); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(r.calls); got != "[{40 2 0}]" {
		t.Errorf("calls %s, want only timer 2 at 40ps", got)
	}
}

// TestTimerResetChurnBounded is the docs/style.md §3 case: an RTO re-armed to a later deadline on
// every ACK must not grow the queue.
func TestTimerResetChurnBounded(t *testing.T) {
	// Without time passing.
	s, id, r := newTimerSim()
	for i := range Time(100000) {
		s.Reset(id, 1000+i)
	}
	if s.Pending() != 1 {
		t.Errorf("100,000 later Resets: pending %d, want 1", s.Pending())
	}
	if err := s.Run(MaxTime); err != nil {
		t.Fatal(err)
	}
	checkFired(t, r, 1000+99999)

	// With time passing: an ACK every 10 ps pushes the RTO 1 us out, 100,000 times. The timer
	// wakes once per microsecond to find its deadline moved, requeues, and fires once at the end.
	s, id, r = newTimerSim()
	const acks = 100000
	maxPending := 0
	var ack Kind
	ack = s.Register("ack", func(now Time, _ int32, n uint64) {
		s.Reset(id, now+Microsecond)
		if n+1 < acks {
			s.After(10, ack, 0, n+1)
		}
		maxPending = max(maxPending, s.Pending())
	})
	s.At(0, ack, 0, 0)
	if err := s.Run(MaxTime); err != nil {
		t.Fatal(err)
	}
	if maxPending > 3 {
		t.Errorf("pending events peaked at %d, want <= 3", maxPending)
	}
	last := Time(acks-1) * 10
	checkFired(t, r, last+Microsecond)
	if s.Events() != acks+1 {
		t.Errorf("Events() = %d, want %d", s.Events(), acks+1)
	}
}
