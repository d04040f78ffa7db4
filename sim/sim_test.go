package sim

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// recorder is a handler that logs what it is called with.
type recorder struct {
	calls []call
}

type call struct {
	now Time
	obj int32
	arg uint64
}

func (r *recorder) handle(now Time, obj int32, arg uint64) {
	r.calls = append(r.calls, call{now, obj, arg})
}

func (r *recorder) times() []Time {
	var ts []Time
	for _, c := range r.calls {
		ts = append(ts, c.now)
	}
	return ts
}

func TestNew(t *testing.T) {
	s := New(99)
	if s.Seed() != 99 || s.Now() != 0 || s.Pending() != 0 || s.Events() != 0 || s.Stopped() {
		t.Errorf("New(99): seed %d now %d pending %d events %d stopped %v",
			s.Seed(), s.Now(), s.Pending(), s.Events(), s.Stopped())
	}
	if s.NextAt() != MaxTime {
		t.Errorf("NextAt() on an empty queue = %v, want MaxTime", s.NextAt())
	}
}

func TestRegisterKindName(t *testing.T) {
	s := New(1)
	if got := s.KindName(0); got != "timer" {
		t.Errorf("KindName(0) = %q, want timer", got)
	}
	a := s.Register("port.depart", func(Time, int32, uint64) {})
	b := s.Register("link.arrive", func(Time, int32, uint64) {})
	if a != 1 || b != 2 {
		t.Errorf("kinds = %d, %d, want 1, 2 (assigned in registration order from 1)", a, b)
	}
	if got := s.KindName(a); got != "port.depart" {
		t.Errorf("KindName(%d) = %q", a, got)
	}
	if got := s.KindName(b); got != "link.arrive" {
		t.Errorf("KindName(%d) = %q", b, got)
	}
	if got := s.KindName(77); got != "kind(77)" {
		t.Errorf("KindName(77) = %q, want kind(77)", got)
	}
}

func TestDispatchArgs(t *testing.T) {
	s := New(1)
	var ra, rb recorder
	a := s.Register("a", ra.handle)
	b := s.Register("b", rb.handle)
	s.At(10, a, 3, 300)
	s.At(5, b, -1, 1<<63)
	s.After(7, a, 4, 400)
	if err := s.Run(MaxTime); err != nil {
		t.Fatal(err)
	}
	wantA := []call{{7, 4, 400}, {10, 3, 300}}
	wantB := []call{{5, -1, 1 << 63}}
	if fmt.Sprint(ra.calls) != fmt.Sprint(wantA) || fmt.Sprint(rb.calls) != fmt.Sprint(wantB) {
		t.Errorf("a got %v want %v; b got %v want %v", ra.calls, wantA, rb.calls, wantB)
	}
	if s.Events() != 3 {
		t.Errorf("Events() = %d, want 3", s.Events())
	}
}

func TestRunUntil(t *testing.T) {
	s := New(1)
	var r recorder
	k := s.Register("ev", r.handle)
	for _, at := range []Time{30, 10, 20} {
		s.At(at, k, 0, 0)
	}

	// Events at until run; the clock ends at until.
	if err := s.Run(20); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(r.times()); got != "[10ps 20ps]" {
		t.Errorf("Run(20) dispatched %s, want [10ps 20ps]", got)
	}
	if s.Now() != 20 || s.Pending() != 1 || s.NextAt() != 30 {
		t.Errorf("after Run(20): now %d pending %d next %d, want 20, 1, 30", s.Now(), s.Pending(), s.NextAt())
	}

	// Nothing due: the clock still advances to until and the event stays pending.
	if err := s.Run(25); err != nil {
		t.Fatal(err)
	}
	if s.Now() != 25 || s.Pending() != 1 || len(r.calls) != 2 {
		t.Errorf("after Run(25): now %d pending %d calls %d, want 25, 1, 2", s.Now(), s.Pending(), len(r.calls))
	}

	// An until in the past moves nothing.
	if err := s.Run(5); err != nil {
		t.Fatal(err)
	}
	if s.Now() != 25 || s.Pending() != 1 {
		t.Errorf("after Run(5): now %d pending %d, want 25, 1", s.Now(), s.Pending())
	}

	// Run(MaxTime) drains the queue and leaves the clock at the last event.
	if err := s.Run(MaxTime); err != nil {
		t.Fatal(err)
	}
	if s.Now() != 30 || s.Pending() != 0 || s.Events() != 3 {
		t.Errorf("after Run(MaxTime): now %d pending %d events %d, want 30, 0, 3", s.Now(), s.Pending(), s.Events())
	}

	// An empty queue still advances to a finite until.
	if err := s.Run(1000); err != nil {
		t.Fatal(err)
	}
	if s.Now() != 1000 {
		t.Errorf("Run(1000) on an empty queue: now %d, want 1000", s.Now())
	}
}

func TestRunEventsScheduledDuringRun(t *testing.T) {
	s := New(1)
	var r recorder
	same := s.Register("same-instant", r.handle)
	var k Kind
	k = s.Register("chain", func(now Time, obj int32, arg uint64) {
		r.handle(now, obj, arg)
		if now < 50 {
			s.After(10, k, obj, arg+1)
		}
		s.At(now, same, -1, 0) // scheduled for the current instant: still runs in this Run
	})
	s.At(0, k, 0, 0)
	if err := s.Run(35); err != nil {
		t.Fatal(err)
	}
	// chain at 0,10,20,30 plus a same-instant event after each.
	if got := len(r.calls); got != 8 {
		t.Errorf("dispatched %d events, want 8: %v", got, r.calls)
	}
	if s.NextAt() != 40 {
		t.Errorf("NextAt() = %d, want 40", s.NextAt())
	}
}

func TestStop(t *testing.T) {
	errBoom := errors.New("boom")
	s := New(1)
	var r recorder
	k := s.Register("ev", func(now Time, obj int32, arg uint64) {
		r.handle(now, obj, arg)
		if now == 20 {
			s.Stop(errBoom)
			s.Stop(errors.New("second")) // the first error wins
		}
	})
	for _, at := range []Time{10, 20, 30} {
		s.At(at, k, 0, 0)
	}
	if err := s.Run(100); !errors.Is(err, errBoom) {
		t.Fatalf("Run = %v, want %v", err, errBoom)
	}
	if !s.Stopped() {
		t.Errorf("Stopped() = false after Stop")
	}
	// The run ends after the stopping event; the clock is not advanced to until.
	if s.Now() != 20 || s.Pending() != 1 || len(r.calls) != 2 {
		t.Errorf("after Stop: now %d pending %d calls %d, want 20, 1, 2", s.Now(), s.Pending(), len(r.calls))
	}
	// Stop is sticky: a later Run does nothing and reports the same error.
	if err := s.Run(100); !errors.Is(err, errBoom) {
		t.Errorf("second Run = %v, want %v", err, errBoom)
	}
	if s.Pending() != 1 {
		t.Errorf("second Run dispatched events after Stop")
	}
}

func TestStopNil(t *testing.T) {
	s := New(1)
	k := s.Register("ev", func(Time, int32, uint64) {})
	stop := s.Register("stop", func(Time, int32, uint64) { s.Stop(nil) })
	s.At(10, stop, 0, 0)
	s.At(20, k, 0, 0)
	if err := s.Run(MaxTime); err != nil {
		t.Errorf("Run after Stop(nil) = %v, want nil", err)
	}
	if !s.Stopped() || s.Now() != 10 || s.Pending() != 1 {
		t.Errorf("stopped %v now %d pending %d, want true, 10, 1", s.Stopped(), s.Now(), s.Pending())
	}
	// A later error still surfaces: Stop(nil) does not claim the error slot.
	s.Stop(errors.New("late"))
	if err := s.Run(MaxTime); err == nil || err.Error() != "late" {
		t.Errorf("Run = %v, want late", err)
	}
}

func TestScheduleInPast(t *testing.T) {
	s := New(1)
	var late recorder
	lateK := s.Register("port.depart", late.handle)
	k := s.Register("bad", func(now Time, _ int32, _ uint64) {
		s.At(now-1, lateK, 0, 0)
	})
	s.At(100, k, 0, 0)
	s.At(200, k, 0, 0)
	err := s.Run(MaxTime)
	if err == nil {
		t.Fatal("Run = nil, want an error for an event scheduled in the past")
	}
	for _, want := range []string{`"port.depart"`, "99ps", "100ps", "before now"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if len(late.calls) != 0 {
		t.Errorf("the past event ran: %v", late.calls)
	}
	if s.Now() != 100 || s.Pending() != 1 {
		t.Errorf("now %d pending %d, want 100, 1 (the past event is not queued)", s.Now(), s.Pending())
	}

	// Before any Run, a negative time is in the past too.
	s = New(1)
	k = s.Register("k", func(Time, int32, uint64) {})
	s.At(-1, k, 0, 0)
	if err := s.Run(MaxTime); err == nil || !strings.Contains(err.Error(), `"k"`) {
		t.Errorf("At(-1): Run = %v, want an error naming the kind", err)
	}
	s = New(1)
	k = s.Register("k", func(Time, int32, uint64) {})
	s.After(-1, k, 0, 0)
	if err := s.Run(MaxTime); err == nil {
		t.Errorf("After(-1): Run = nil, want an error")
	}
}

// TestAfterSaturates: After(MaxTime) means "never" and must not wrap into the past.
func TestAfterSaturates(t *testing.T) {
	s := New(1)
	var r recorder
	k := s.Register("k", r.handle)
	if err := s.Run(10); err != nil {
		t.Fatal(err)
	}
	s.After(MaxTime, k, 0, 0)
	s.After(MaxTime-5, k, 0, 0)
	if s.Stopped() {
		t.Fatal("After(MaxTime) at now=10 stopped the simulation")
	}
	if s.NextAt() != MaxTime || s.Pending() != 2 {
		t.Errorf("NextAt %v pending %d, want MaxTime, 2", s.NextAt(), s.Pending())
	}
	if err := s.Run(Hour); err != nil || len(r.calls) != 0 {
		t.Errorf("Run(Hour) = %v with %d calls, want nil and none", err, len(r.calls))
	}
}

func TestGrowNoAlloc(t *testing.T) {
	s := New(1)
	k := s.Register("k", func(Time, int32, uint64) {})
	s.At(5, k, 0, 0)
	s.Grow(1000)
	if s.Pending() != 1 || s.NextAt() != 5 {
		t.Fatalf("Grow lost events: pending %d next %d", s.Pending(), s.NextAt())
	}
	var at Time = 10
	allocs := testing.AllocsPerRun(900, func() {
		s.At(at, k, 0, 0)
		at++
	})
	if allocs != 0 {
		t.Errorf("At after Grow allocates %.1f times per call, want 0", allocs)
	}
	// Dispatch does not allocate either.
	allocs = testing.AllocsPerRun(10, func() {
		s.Run(s.Now() + 50)
	})
	if allocs != 0 {
		t.Errorf("Run allocates %.1f times per call, want 0", allocs)
	}
}

func TestRNGStreams(t *testing.T) {
	draw := func(seed uint64, name string) [8]uint64 {
		var out [8]uint64
		r := New(seed).RNG(name)
		for i := range out {
			out[i] = r.Uint64()
		}
		return out
	}
	a := draw(1, "traffic")
	if b := draw(1, "traffic"); a != b {
		t.Errorf("same (seed, name) gave different streams")
	}
	if b := draw(1, "faults"); a == b {
		t.Errorf("names traffic and faults gave the same stream")
	}
	if b := draw(2, "traffic"); a == b {
		t.Errorf("seeds 1 and 2 gave the same stream")
	}
	if b := draw(1, ""); a == b {
		t.Errorf("names traffic and \"\" gave the same stream")
	}
	// Stream matches Sim.RNG, for code that runs before the simulation exists.
	r := Stream(1, "traffic")
	for i, want := range a {
		if got := r.Uint64(); got != want {
			t.Fatalf("Stream(1, traffic)[%d] = %d, want %d", i, got, want)
		}
	}
	// Each RNG call is a fresh generator at the start of the stream.
	s := New(1)
	s.RNG("traffic").Uint64()
	if got := s.RNG("traffic").Uint64(); got != a[0] {
		t.Errorf("second RNG(traffic) did not restart the stream")
	}
	// Streams from similar names are not shifted copies of one another.
	seen := map[uint64]string{}
	for i := range 1000 {
		name := fmt.Sprintf("qp%d", i)
		v := Stream(7, name).Uint64()
		if prev, dup := seen[v]; dup {
			t.Fatalf("streams %s and %s start with the same value", prev, name)
		}
		seen[v] = name
	}
}

func TestMix64(t *testing.T) {
	// Bijective: no collisions over a dense range of inputs.
	seen := make(map[uint64]bool, 1<<16)
	for i := range uint64(1 << 16) {
		v := Mix64(i)
		if seen[v] {
			t.Fatalf("Mix64 collision at %d", i)
		}
		seen[v] = true
	}
	// Avalanche: flipping one input bit flips about half the output bits.
	total := 0
	for i := range uint64(64) {
		total += popcount(Mix64(12345) ^ Mix64(12345^(1<<i)))
	}
	if avg := float64(total) / 64; avg < 28 || avg > 36 {
		t.Errorf("Mix64 avalanche: %.1f bits flip on average, want about 32", avg)
	}
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// TestIndependentSims: all state lives in the *Sim, so simulations run in parallel do not
// interfere and give identical results.
func TestIndependentSims(t *testing.T) {
	run := func() uint64 {
		s := New(5)
		rng := s.RNG("delays")
		var sum uint64
		var k Kind
		k = s.Register("hop", func(now Time, obj int32, arg uint64) {
			sum = sum*31 + uint64(now) + uint64(obj)
			if arg < 2000 {
				s.After(Time(rng.Int64N(100)), k, obj, arg+1)
			}
		})
		for i := range int32(8) {
			s.At(0, k, i, 0)
		}
		if err := s.Run(MaxTime); err != nil {
			t.Error(err)
		}
		return sum
	}
	want := run()
	done := make(chan uint64)
	for range 8 {
		go func() { done <- run() }()
	}
	for range 8 {
		if got := <-done; got != want {
			t.Errorf("parallel run = %d, want %d", got, want)
		}
	}
}

// SetProgress reports every N events without changing the run.
func TestSetProgress(t *testing.T) {
	run := func(progress bool) (uint64, int) {
		s := New(3)
		var k Kind
		n := 0
		k = s.Register("tick", func(now Time, obj int32, _ uint64) {
			if now < 1000 {
				s.After(1, k, obj, 0)
			}
		})
		s.At(0, k, 0, 0)
		if progress {
			s.SetProgress(100, func(Time) { n++ })
		}
		if err := s.Run(MaxTime); err != nil {
			t.Fatal(err)
		}
		return s.Events(), n
	}
	plain, _ := run(false)
	with, calls := run(true)
	if plain != with || calls != int(with/100) {
		t.Fatalf("events %d without and %d with progress, %d reports; want equal counts and %d reports", plain, with, calls, with/100)
	}
}

// An event scheduled with AtOwnKey does not shift the tiebreak keys of the events scheduled
// after it: the order of simultaneous events before it is the same as without it.
func TestAtOwnKeyKeepsOrder(t *testing.T) {
	order := func(extra bool) []int32 {
		s := New(7)
		var got []int32
		k := s.Register("x", func(now Time, obj int32, _ uint64) {
			if obj >= 0 {
				got = append(got, obj)
			}
		})
		if extra {
			s.AtOwnKey(5*Microsecond, k, -1, 0)
		}
		for i := range int32(64) {
			s.At(Microsecond, k, i, 0)
		}
		if err := s.Run(MaxTime); err != nil {
			t.Fatal(err)
		}
		return got
	}
	a, b := order(false), order(true)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("order differs at %d: %v vs %v", i, a, b)
		}
	}
}

// TestAtEndOfInstant: an end-of-instant event runs after every other event at its instant,
// those scheduled after it (from handlers at that instant) included, and before any later one.
func TestAtEndOfInstant(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		s := New(seed)
		var order []string
		var kA, kB, kEnd, kLate Kind
		kA = s.Register("a", func(now Time, obj int32, _ uint64) {
			order = append(order, "a")
			s.At(now, kB, 0, 0) // scheduled after the end event, at the same instant
		})
		kB = s.Register("b", func(Time, int32, uint64) { order = append(order, "b") })
		kEnd = s.Register("end", func(Time, int32, uint64) { order = append(order, "end") })
		kLate = s.Register("late", func(Time, int32, uint64) { order = append(order, "late") })
		s.AtEndOfInstant(10, kEnd, 0, 0)
		s.At(11, kLate, 0, 0)
		for range 5 {
			s.At(10, kA, 0, 0)
		}
		if err := s.Run(MaxTime); err != nil {
			t.Fatal(err)
		}
		if len(order) != 12 || order[10] != "end" || order[11] != "late" {
			t.Fatalf("seed %d: order %v; want the end event last at its instant", seed, order)
		}
	}
}
