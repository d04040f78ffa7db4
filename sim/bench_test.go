package sim

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// holdDeltas returns a precomputed table of random future offsets (0..2 us, mean 1 us) for the
// hold model, so the timed loop draws no random numbers and allocates nothing.
func holdDeltas(seed uint64) []Time {
	rng := rand.New(rand.NewPCG(seed, 0xbe7c4))
	d := make([]Time, 1<<16)
	for i := range d {
		d[i] = Time(rng.Int64N(int64(2 * Microsecond)))
	}
	return d
}

// mixDeltas returns a precomputed table of future offsets drawn from the mix a packet-level run
// produces: 70% serialisation-like (50-400 ns), 25% link-delay-like (0.5-2 us), 5% timer-like
// (10-50 us).
func mixDeltas(seed uint64) []Time {
	rng := rand.New(rand.NewPCG(seed, 0x3e41))
	d := make([]Time, 1<<16)
	for i := range d {
		switch p := rng.IntN(100); {
		case p < 70:
			d[i] = 50*Nanosecond + Time(rng.Int64N(int64(350*Nanosecond)))
		case p < 95:
			d[i] = 500*Nanosecond + Time(rng.Int64N(int64(1500*Nanosecond)))
		default:
			d[i] = 10*Microsecond + Time(rng.Int64N(int64(40*Microsecond)))
		}
	}
	return d
}

// crowdDeltas returns offsets that are whole multiples (1-4) of one serialisation time (4,150 B
// at 100 Gb/s), as in a fabric of equal links where every port works in step: the pending
// events gather at a few instants, hundreds to each, which only their keys order.
func crowdDeltas(seed uint64) []Time {
	rng := rand.New(rand.NewPCG(seed, 0xc40d))
	d := make([]Time, 1<<16)
	for i := range d {
		d[i] = Time(1+rng.IntN(4)) * 332 * Nanosecond
	}
	return d
}

const benchPending = 1_000_000

// realisticPending is the pending-event count of a mid-sized fabric run.
const realisticPending = 20_000

// BenchmarkEventQueue measures the event queue alone in the classic hold model: the queue holds
// 1,000,000 pending events and each op pops the earliest and pushes one at a random later time.
// Events are plain values in slices the queue reuses, so allocs/op must be 0.
func BenchmarkEventQueue(b *testing.B) {
	// Warm up: every prefilled event popped and pushed back at least once.
	benchQueueHold(b, benchPending, holdDeltas(1), 2)
}

// BenchmarkEventQueueRealistic is BenchmarkEventQueue with 20,000 pending events and the offsets
// of mixDeltas instead of uniform 0-2 us.
func BenchmarkEventQueueRealistic(b *testing.B) {
	// Warm up 50 times the pending count, so the slow 5% have cycled too.
	benchQueueHold(b, realisticPending, mixDeltas(3), 50)
}

// BenchmarkEventQueueCrowd is BenchmarkEventQueue with 4,096 pending events at the offsets of
// crowdDeltas: about 1,600 simultaneous events per instant, the shape of perm-8192's queue.
func BenchmarkEventQueueCrowd(b *testing.B) {
	benchQueueHold(b, 4096, crowdDeltas(5), 50)
}

// benchQueueHold runs the hold model on a bare queue: pending events, each op popping the
// earliest and pushing it back by the next of deltas (a power-of-two long table), after
// warm x pending untimed ops.
func benchQueueHold(b *testing.B, pending int, deltas []Time, warm int) {
	mask := len(deltas) - 1
	var q eventQueue
	q.grow(pending + 1)
	var key uint64
	for i := range pending {
		key++
		q.push(Event{At: deltas[i&mask], key: mix64(key)})
	}
	i := 0
	hold := func() {
		ev := q.pop()
		ev.At += deltas[i&mask]
		key++
		ev.key = mix64(key)
		q.push(ev)
		i++
	}
	for range warm * pending {
		hold()
	}
	b.ReportAllocs()
	for b.Loop() {
		hold()
	}
	if q.len() != pending {
		b.Fatalf("queue length %d, want %d", q.len(), pending)
	}
}

// BenchmarkSimRealistic is BenchmarkSimDispatch with 20,000 pending events and the offsets of
// mixDeltas: the whole kernel under the load of a mid-sized fabric run.
func BenchmarkSimRealistic(b *testing.B) {
	// Warm up to the steady state: about 50 cycles of the mean offset (~2 us).
	benchHold(b, realisticPending, mixDeltas(4), 100*Microsecond)
}

// BenchmarkSimDispatch measures the whole kernel: Run pops an event, dispatches it by kind, and
// the handler reschedules itself at a random later time through Sim.After (hold model). One op is
// one dispatched event; events/s is reported as a metric.
func BenchmarkSimDispatch(b *testing.B) {
	for _, pending := range []int{1, 1000, benchPending} {
		b.Run("pending="+strconv.Itoa(pending), func(b *testing.B) {
			// Warm up to the steady state: all prefilled events are due within 2 us.
			benchHold(b, pending, holdDeltas(2), 2*Microsecond)
		})
	}
}

// benchHold runs the hold model: pending events, each rescheduling itself by the next of
// deltas (a power-of-two long table) when dispatched; warm is simulated before timing starts.
func benchHold(b *testing.B, pending int, deltas []Time, warm Time) {
	mask := len(deltas) - 1
	s := New(1)
	s.Grow(pending + 1)
	var n, i int
	var counting bool
	var k Kind
	k = s.Register("hold", func(_ Time, obj int32, arg uint64) {
		i++
		s.After(deltas[i&mask], k, obj, arg)
		if counting {
			if n++; n == b.N {
				s.Stop(nil)
			}
		}
	})
	for j := range pending {
		s.At(deltas[j&mask], k, int32(j), 0)
	}
	if err := s.Run(warm); err != nil {
		b.Fatal(err)
	}
	counting = true
	b.ReportAllocs()
	b.ResetTimer()
	if err := s.Run(MaxTime); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if n != b.N || s.Pending() != pending {
		b.Fatalf("dispatched %d of %d, pending %d", n, b.N, s.Pending())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkTimerReset measures re-arming a timer to a later deadline, the per-ACK RTO update.
func BenchmarkTimerReset(b *testing.B) {
	s := New(1)
	k := s.Register("rto", func(Time, int32, uint64) {})
	id := s.NewTimer(k, 0)
	b.ReportAllocs()
	var at Time
	for b.Loop() {
		at++
		s.Reset(id, at)
	}
	if s.Pending() != 1 {
		b.Fatalf("pending %d, want 1", s.Pending())
	}
}
