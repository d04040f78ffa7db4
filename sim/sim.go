// Package sim is lockstep's discrete-event kernel: simulated Time in picoseconds, a typed event
// queue, cancellable timers, seeded named random streams, and the shared parsers for durations,
// rates and sizes.
//
// All state lives in a *Sim value; nothing reads a global clock, so many simulations can run in
// one process (compare, sweep, parallel tests). Components register a Handler once per event
// kind and then schedule plain Event values; dispatch is a slice index, not an interface call
// or a string lookup.
//
// Ordering: events run in time order. Events at the same instant run in the order of a 64-bit
// key drawn from a stream seeded by the scenario seed, not in insertion order, so two symmetric
// components (two senders into one egress) are treated fairly on average and identically on
// every run with the same seed.
package sim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
)

// Kind identifies a registered event handler. Kinds are assigned by Register in registration
// order, starting at 1 (0 is the kernel's own timer kind).
type Kind uint16

// Handler runs one event: now is the event's time, obj and arg are the values passed when it was
// scheduled.
type Handler func(now Time, obj int32, arg uint64)

// Sim is one simulation: the clock, the pending events, the timers and the random streams.
// The zero value is not usable; call New.
type Sim struct {
	now      Time
	q        eventQueue
	handlers []Handler
	names    []string
	seed     uint64
	keyState uint64 // splitmix64 state for tiebreak keys
	timers   []timer
	events   uint64
	stopped  bool
	paused   bool
	stopErr  error

	progEvery, progNext uint64     // SetProgress: call progFn every progEvery events
	progFn              func(Time) // nil: no progress reports
}

// SetProgress makes the simulation call fn(now) every `every` dispatched events (0 or a nil fn
// turns it off), from inside the dispatch loop between two events. It schedules nothing, so
// it never changes a run's events or their order; use it for progress bars. fn must not
// schedule events or touch the simulation's state.
func (s *Sim) SetProgress(every uint64, fn func(now Time)) {
	if every == 0 || fn == nil {
		s.progEvery, s.progFn = 0, nil
		return
	}
	s.progEvery, s.progFn = every, fn
	s.progNext = s.events + every
}

const timerKind Kind = 0

// New returns an empty simulation at time 0 whose random streams and tiebreak keys derive from
// seed.
func New(seed uint64) *Sim {
	s := &Sim{seed: seed, keyState: mix64(seed ^ 0x6c6f636b73746570)} // "lockstep"
	s.handlers = append(s.handlers, s.fireTimer)
	s.names = append(s.names, "timer")
	return s
}

// Seed returns the seed the simulation was created with.
func (s *Sim) Seed() uint64 { return s.seed }

// Now returns the current simulated time: the time of the event being dispatched, or the end
// of the last Run.
func (s *Sim) Now() Time { return s.now }

// Events returns how many events have been dispatched so far (stale timer events excluded).
func (s *Sim) Events() uint64 { return s.events }

// Pending returns the number of events in the queue, including stale timer events not yet
// discarded.
func (s *Sim) Pending() int { return s.q.len() }

// Grow makes room for n more pending events, for callers that know their peak (benchmarks,
// large fabrics), so the queue's storage does not grow step by step on the way there. The
// queue keeps its peak storage and reuses it, so the steady state allocates nothing either way.
func (s *Sim) Grow(n int) { s.q.grow(n) }

// Register adds a handler and returns the Kind that schedules it. name is used in error and
// debug output. At most 65,535 kinds.
func (s *Sim) Register(name string, h Handler) Kind {
	s.handlers = append(s.handlers, h)
	s.names = append(s.names, name)
	return Kind(len(s.handlers) - 1)
}

// KindName returns the name a Kind was registered with.
func (s *Sim) KindName(k Kind) string {
	if int(k) < len(s.names) {
		return s.names[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// At schedules kind k with obj and arg at time at. Scheduling in the past is a bug in the
// caller; it stops the run with an error naming the kind rather than corrupting time order.
func (s *Sim) At(at Time, k Kind, obj int32, arg uint64) {
	if at < s.now {
		s.Stop(fmt.Errorf("sim: event %q scheduled at %v, before now (%v)", s.KindName(k), at, s.now))
		return
	}
	s.keyState += 0x9e3779b97f4a7c15
	s.q.push(Event{At: at, key: mix64(s.keyState), Arg: arg, Obj: obj, Kind: k})
}

// AtOwnKey schedules kind k like At, but takes its tiebreak key from (k, obj, arg, at) and
// the seed instead of the shared key sequence, so scheduling it does not shift the keys of
// events scheduled after it. Use it for events injected from outside the model, such as a
// fault schedule: a run with a fault at 4 ms is then event for event the run without it up
// to 4 ms. Events with equal (k, obj, arg, at) tie on their key and fall back to the
// queue's deterministic order.
func (s *Sim) AtOwnKey(at Time, k Kind, obj int32, arg uint64) {
	if at < s.now {
		s.Stop(fmt.Errorf("sim: event %q scheduled at %v, before now (%v)", s.KindName(k), at, s.now))
		return
	}
	key := mix64(s.seed ^ mix64(uint64(k)<<32^uint64(uint32(obj))) ^ mix64(arg+0x51a7e) ^ mix64(uint64(at)))
	s.q.push(Event{At: at, key: key, Arg: arg, Obj: obj, Kind: k})
}

// AtEndOfInstant schedules kind k like At, but after every other event at that instant,
// including those scheduled later with At or AtOwnKey: its tiebreak key is the largest. Use it
// for work that should see all an instant does, such as a flow network recomputing rates once
// after every flow that starts or ends at that instant. Several such events at one instant run
// in the order of (arg, obj, kind), deterministically.
func (s *Sim) AtEndOfInstant(at Time, k Kind, obj int32, arg uint64) {
	if at < s.now {
		s.Stop(fmt.Errorf("sim: event %q scheduled at %v, before now (%v)", s.KindName(k), at, s.now))
		return
	}
	s.q.push(Event{At: at, key: ^uint64(0), Arg: arg, Obj: obj, Kind: k})
}

// After schedules kind k with obj and arg at Now()+d. The sum saturates at MaxTime, so
// After(MaxTime, ...) means "never" rather than wrapping into the past.
func (s *Sim) After(d Time, k Kind, obj int32, arg uint64) {
	at := s.now + d
	if d > 0 && at < s.now {
		at = MaxTime
	}
	s.At(at, k, obj, arg)
}

// Stop ends the current Run after the event being dispatched. A non-nil err is returned by Run
// (the first one wins); nil stops without error.
func (s *Sim) Stop(err error) {
	s.stopped = true
	if s.stopErr == nil {
		s.stopErr = err
	}
}

// Pause ends the current Run or Drain after the event being dispatched, without an error and
// without advancing the clock to the Run's limit: a workload that finished early calls it, and
// the caller continues with another Run or Drain from Now().
func (s *Sim) Pause() { s.paused = true }

// Stopped reports whether Stop was called.
func (s *Sim) Stopped() bool { return s.stopped }

// Run dispatches events in order until the next event is later than until, the queue is empty,
// or Stop is called. On a normal end the clock is advanced to until (unless until is MaxTime),
// so Now() is the end of the simulated interval. It returns the error passed to Stop, if any.
func (s *Sim) Run(until Time) error {
	s.dispatch(until)
	if s.paused {
		s.paused = false
		return s.stopErr
	}
	if !s.stopped && until != MaxTime && s.now < until {
		s.now = until
	}
	return s.stopErr
}

// Drain dispatches events like Run, up to limit, but leaves the clock at the last event
// dispatched instead of advancing it to limit: use it to let in-flight work finish and learn
// when it did. It returns the error passed to Stop, if any.
func (s *Sim) Drain(limit Time) error {
	err := s.dispatch(limit)
	s.paused = false
	return err
}

// dispatch runs events up to limit until the queue empties, Stop or Pause.
func (s *Sim) dispatch(limit Time) error {
	for s.q.len() > 0 && !s.stopped && !s.paused {
		// Read the event in place and drop it, rather than pop a copy: cheaper for a 32-byte
		// struct on the hot path.
		ev := s.q.peek()
		at, k, obj, arg := ev.At, ev.Kind, ev.Obj, ev.Arg
		if at > limit {
			break
		}
		s.q.drop()
		s.now = at
		if k != timerKind {
			s.events++
		}
		s.handlers[k](at, obj, arg)
		if s.progEvery != 0 && s.events >= s.progNext {
			s.progNext = s.events + s.progEvery
			s.progFn(s.now)
		}
	}
	return s.stopErr
}

// NextAt returns the time of the earliest pending event, or MaxTime if none is pending.
func (s *Sim) NextAt() Time {
	if s.q.len() == 0 {
		return MaxTime
	}
	return s.q.peek().At
}

// RNG returns a new random stream for name, derived from the simulation seed: the same seed and
// name always give the same sequence, and different names give independent streams. Each call
// returns a fresh generator; keep the one you get. PCG from math/rand/v2.
func (s *Sim) RNG(name string) *rand.Rand { return Stream(s.seed, name) }

// Stream returns the random stream for (seed, name), as Sim.RNG does, for code that runs before
// or outside a simulation (topology building, traffic generation).
func Stream(seed uint64, name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(mix64(seed), h.Sum64()))
}

// mix64 is the splitmix64 finaliser: a bijective 64-bit mixer with good avalanche.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Mix64 exposes the splitmix64 finaliser for hashing (ECMP, EV choice): bijective, fast, with
// full avalanche. Not cryptographic.
func Mix64(z uint64) uint64 { return mix64(z) }
