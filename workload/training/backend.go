package training

import (
	"encoding/binary"
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// Backend carries the job's network collectives.
type Backend interface {
	// Launch starts spec on comm at time at (>= s.Now()) and calls done once, from a simulation event, when every rank has finished.
	Launch(at sim.Time, spec collective.Spec, comm collective.Comm, name string, done func(now sim.Time)) error
}

// NamedBackend is a Backend that can build a collective's name lazily: name is called only
// when something reads the name (an error, a report of collectives in flight), and returns the
// same string each time. A run uses LaunchNamed when its backend has it (a 131,072-GPU step
// launches millions of collectives whose names are seldom read; building each costs more
// than launching it), Launch otherwise. Errors: as Launch's.
type NamedBackend interface {
	Backend
	LaunchNamed(at sim.Time, spec collective.Spec, comm collective.Comm, name func() string, done func(now sim.Time)) error
}

// specKey identifies a collective spec for caching closed forms and schedules. A Matrix is
// identified by its first row's address: the job reuses one matrix per all-to-all shape, and
// a key holding the pointer keeps the matrix alive, so the address is never reused.
type specKey struct {
	op                   collective.Collective
	algo                 collective.Algorithm
	ranks                int
	bytes, chunk         int64
	channels, root, peer int
	inner, outer         int
	matrix               *[]int64
}

func keyOf(sp collective.Spec) specKey {
	k := specKey{op: sp.Op, algo: sp.Algo, ranks: sp.Ranks, bytes: sp.Bytes, chunk: sp.ChunkBytes,
		channels: sp.Channels, root: sp.Root, peer: sp.Peer, inner: sp.Inner, outer: sp.Outer}
	if len(sp.Matrix) > 0 {
		k.matrix = &sp.Matrix[0]
	}
	return k
}

// AnalyticBackend charges each collective its closed form on an uncontended network and
// calls done at at + T: collective.Pipelined where it has a form (ring all-reduce,
// reduce-scatter and all-gather, chains, pairwise all-to-all, send/recv), else
// collective.AlphaBeta, with the Model's per-host rate and latency. A hierarchical
// collective, once SetScaleUp has given the scale-up domain's model, is charged
// collective.AlphaBetaScaleUp: its inner phases on NVLink, its outer phase on the NIC, one
// after another (the flow engine's model; NCCL's tuning model's structure). Collectives do
// not contend with each other: each sees every host's full NIC. It is the fastest backend
// (one event per collective) and the reference the packet backends are compared with. Not
// safe for concurrent use.
type AnalyticBackend struct {
	s     *sim.Sim
	m     collective.Model
	up    *collective.Model // the scale-up domain's model for hierarchical collectives; nil: m
	kind  sim.Kind
	cbs   []func(sim.Time)
	free  []int32
	cache map[specKey]sim.Time

	Launches int64 // collectives launched
}

// NewAnalyticBackend returns a closed-form backend on s with model m (Latency alpha, Rate B
// per host, ReduceBytesPerSec; 0 makes reductions free and enables the pipelined forms).
// Errors: a nil simulation, a model with Rate <= 0 or a negative latency.
func NewAnalyticBackend(s *sim.Sim, m collective.Model) (*AnalyticBackend, error) {
	if s == nil {
		return nil, fmt.Errorf("training: analytic backend needs a simulation")
	}
	if m.Rate <= 0 || m.Latency < 0 {
		return nil, errorf("network", "rate %v, latency %v: want a rate > 0 and a latency >= 0", m.Rate, m.Latency)
	}
	b := &AnalyticBackend{s: s, m: m, cache: map[specKey]sim.Time{}}
	b.kind = s.Register("training.analytic_done", b.onDone)
	return b, nil
}

// SetScaleUp gives the model of the scale-up domain (NVLink: per-GPU rate per direction,
// one-way latency) on which hierarchical collectives' inner phases are charged. Errors: a
// rate <= 0 or a negative latency.
func (b *AnalyticBackend) SetScaleUp(up collective.Model) error {
	if up.Rate <= 0 || up.Latency < 0 {
		return errorf("gpu.scale_up_rate", "%v, latency %v: want a rate > 0 and a latency >= 0", up.Rate, up.Latency)
	}
	b.up = &up
	clear(b.cache)
	return nil
}

// Time returns the closed-form time the backend charges for spec. Errors: an invalid spec.
func (b *AnalyticBackend) Time(spec collective.Spec) (sim.Time, error) {
	k := keyOf(spec)
	if t, ok := b.cache[k]; ok {
		return t, nil
	}
	if b.up != nil {
		if sp, err := spec.Resolve(); err == nil && sp.Algo == collective.Hierarchical {
			t, err := collective.AlphaBetaScaleUp(sp, *b.up, b.m)
			if err != nil {
				return 0, err
			}
			b.cache[k] = t
			return t, nil
		}
	}
	t, err := collective.Pipelined(spec, b.m)
	if err != nil {
		if t, err = collective.AlphaBeta(spec, b.m); err != nil {
			return 0, err
		}
	}
	b.cache[k] = t
	return t, nil
}

// Launch implements Backend. Errors: an invalid spec, a communicator of the wrong size, a
// start before now.
func (b *AnalyticBackend) Launch(at sim.Time, spec collective.Spec, comm collective.Comm, name string, done func(now sim.Time)) error {
	if at < b.s.Now() {
		return fmt.Errorf("training: %s: launch at %v, before now (%v)", name, at, b.s.Now())
	}
	if comm.Size() != spec.Ranks {
		return fmt.Errorf("training: %s: communicator of %d ranks for a %d-rank collective", name, comm.Size(), spec.Ranks)
	}
	t, err := b.Time(spec)
	if err != nil {
		return fmt.Errorf("training: %s: %w", name, err)
	}
	var slot int32
	if n := len(b.free); n > 0 {
		slot = b.free[n-1]
		b.free = b.free[:n-1]
		b.cbs[slot] = done
	} else {
		slot = int32(len(b.cbs))
		b.cbs = append(b.cbs, done)
	}
	b.Launches++
	b.s.At(at+t, b.kind, slot, 0)
	return nil
}

func (b *AnalyticBackend) onDone(now sim.Time, slot int32, _ uint64) {
	f := b.cbs[slot]
	b.cbs[slot] = nil
	b.free = append(b.free, slot)
	f(now)
}

// ExecutorBackend runs collectives as per-step point-to-point schedules on a
// collective.Executor over any collective.Transport (collective.Ideal, the runner's MRC and
// RoCE adapters, a SplitTransport of NVLink and fabric), so they contend for NICs and links.
// Schedules are built once per distinct spec and reused. The transport must deliver to this
// backend: call SetSink(b.Delivered) on an Ideal, or give Delivered to the adapter. Not safe
// for concurrent use.
type ExecutorBackend struct {
	ex     *collective.Executor
	done   []func(sim.Time) // by collective id
	scheds map[specKey]*collective.Schedule
	comms  map[string]int // communicator (hosts) -> group index
	group  []int32        // by collective id
}

// NewExecutorBackend returns a backend that builds its own executor on s over transport t for
// a fabric of hosts hosts, with reduction throughput reduceBps bytes per second per GPU (0:
// free). The executor's OnDone dispatches each collective's done callback by id. Errors: as
// collective.NewExecutor.
func NewExecutorBackend(s *sim.Sim, t collective.Transport, hosts int, reduceBps float64) (*ExecutorBackend, error) {
	b := &ExecutorBackend{scheds: map[specKey]*collective.Schedule{}, comms: map[string]int{}}
	ex, err := collective.NewExecutor(s, t, collective.ExecConfig{Hosts: hosts, ReduceBytesPerSec: reduceBps, OnDone: b.onDone})
	if err != nil {
		return nil, err
	}
	b.ex = ex
	return b, nil
}

func (b *ExecutorBackend) onDone(now sim.Time, id int) {
	f := b.done[id]
	b.done[id] = nil
	if f != nil {
		f(now)
	}
}

// Executor returns the executor, for its results, Stuck report and statistics.
func (b *ExecutorBackend) Executor() *collective.Executor { return b.ex }

// Delivered forwards a transport's delivery to the executor (collective.Executor.Delivered).
func (b *ExecutorBackend) Delivered(now sim.Time, token uint64) { b.ex.Delivered(now, token) }

// Group returns a stable index for the communicator of collective instance id (the
// collective.Message Instance), equal for every collective launched on the same host list:
// transports that open connections per communicator, as NCCL does, key them by it. -1 for an
// unknown id.
func (b *ExecutorBackend) Group(instance int) int {
	if instance < 0 || instance >= len(b.group) {
		return -1
	}
	return int(b.group[instance])
}

// Launch implements Backend: it builds (or reuses) spec's schedule and launches it on the
// executor. Errors: an invalid spec, a communicator that does not fit, a start before now.
func (b *ExecutorBackend) Launch(at sim.Time, spec collective.Spec, comm collective.Comm, name string, done func(now sim.Time)) error {
	k := keyOf(spec)
	sch, ok := b.scheds[k]
	if !ok {
		var err error
		if sch, err = collective.Build(spec); err != nil {
			return fmt.Errorf("training: %s: %w", name, err)
		}
		b.scheds[k] = sch
	}
	id, err := b.ex.Launch(at, sch, comm, name)
	if err != nil {
		return fmt.Errorf("training: %s: %w", name, err)
	}
	for len(b.done) <= id {
		b.done = append(b.done, nil)
		b.group = append(b.group, -1)
	}
	b.done[id] = done
	key := make([]byte, 0, 4*comm.Size())
	for r := 0; r < comm.Size(); r++ {
		key = binary.LittleEndian.AppendUint32(key, uint32(comm.Host(r)))
	}
	g, ok := b.comms[string(key)]
	if !ok {
		g = len(b.comms)
		b.comms[string(key)] = g
	}
	b.group[id] = int32(g)
	return nil
}

// Stuck describes the executor's unfinished collectives (collective.Executor.Stuck).
func (b *ExecutorBackend) Stuck(max int) string { return b.ex.Stuck(max) }

// SplitTransport sends each message over one of two transports by where its ends are: Src
// and Dst in the same scale-up domain (host/Domain equal) go to Inner (e.g. a collective.Ideal
// with the NVLink rate and latency), the rest to Outer (the fabric). Both transports must
// deliver to the same executor (ExecutorBackend.Delivered), so hierarchical collectives run
// their intra-domain phases on NVLink and their inter-domain phase on the network.
type SplitTransport struct {
	Domain       int                  // G, hosts per scale-up domain, >= 1
	Inner, Outer collective.Transport // intra-domain and inter-domain carriers

	InnerMessages, OuterMessages int64 // messages sent each way
	InnerBytes, OuterBytes       int64 // their payload bytes
}

// NewSplitTransport returns a transport splitting by scale-up domains of domain hosts.
// Errors: domain < 1, a nil transport.
func NewSplitTransport(domain int, inner, outer collective.Transport) (*SplitTransport, error) {
	if domain < 1 {
		return nil, errorf("domain", "%d: want hosts per scale-up domain >= 1", domain)
	}
	if inner == nil || outer == nil {
		return nil, fmt.Errorf("training: split transport needs an inner and an outer transport")
	}
	return &SplitTransport{Domain: domain, Inner: inner, Outer: outer}, nil
}

// Send implements collective.Transport: Inner for messages inside one domain, Outer otherwise.
func (t *SplitTransport) Send(now sim.Time, m collective.Message) error {
	if m.Src/t.Domain == m.Dst/t.Domain {
		t.InnerMessages++
		t.InnerBytes += m.Bytes
		return t.Inner.Send(now, m)
	}
	t.OuterMessages++
	t.OuterBytes += m.Bytes
	return t.Outer.Send(now, m)
}
