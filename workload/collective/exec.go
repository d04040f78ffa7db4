package collective

import (
	"fmt"
	"math"

	"github.com/lockstepsim/lockstep/sim"
)

// Message is one transfer the Executor asks a Transport to carry.
type Message struct {
	Src, Dst int   // fabric host indexes, Src != Dst
	Bytes    int64 // payload bytes, >= 0 (0 is a pure synchronisation message: it still pays latency)
	Channel  int   // logical channel of the data (Schedule.BlockChannel), for transports that pin channels to planes or QPs
	// Instance is the id Launch returned for the collective the message belongs to, so a
	// transport can keep each communicator's connections apart (NCCL opens QPs per
	// communicator).
	Instance int
	Token    uint64 // opaque to the transport: hand it back to Executor.Delivered
}

// Transport carries the Executor's messages over some network model. The contract:
//
//   - The Executor calls Send(now, m) from inside a simulation event, at the instant the
//     message's send op becomes eligible (all its dependencies done), possibly many times at
//     one instant. Messages between one (Src, Dst) pair are posted in the order they should be
//     carried; a connection-oriented transport (MRC, RoCE) maps each pair to one QP and posts
//     them on it in that order. Send returns at once; the transfer proceeds in later events.
//     (Calling Delivered from inside Send is tolerated: the executor queues it.)
//   - Send returns an error only for a message it can never carry (bad host, broken QP); the
//     Executor then stops the simulation with that error.
//   - When the receiver holds every byte of the message (placement complete), the transport
//     calls Executor.Delivered(now, m.Token) exactly once, from a simulation event at or after
//     the Send. Deliveries may come in any order, across and within pairs.
//
// Both the send op and its receive op complete at delivery; the sender's buffer is considered
// in use until then.
type Transport interface {
	Send(now sim.Time, m Message) error
}

// ExecConfig configures an Executor.
type ExecConfig struct {
	// Hosts is the number of fabric hosts (>= 1); every communicator's hosts must be below it.
	Hosts int
	// ReduceBytesPerSec is each GPU's reduction throughput (reduce_bps), bytes per second: an
	// OpReduce of B bytes occupies its host's reduction engine for B/ReduceBytesPerSec, in FIFO
	// order across every collective on that host. 0 makes reductions free and instantaneous.
	ReduceBytesPerSec float64
	// OnDone, if set, is called when a launched collective completes, with its id, from inside
	// the simulation event that completed it (a workload can launch the next one from there).
	OnDone func(now sim.Time, id int)
	// RecordSteps keeps, per collective, when each rank finished each algorithm step
	// (Result.StepEnd): ranks x steps times per launch, for traces; off, nothing is kept.
	RecordSteps bool
}

// op state bits.
const (
	stReady   uint8 = 1 << iota // dependencies done
	stArrived                   // recv: the data has been delivered
	stDone
)

// instance is one launched collective.
type instance struct {
	id       int
	name     string
	sch      *Schedule
	comm     Comm
	at, end  sim.Time
	left     []int32 // per op: dependencies not yet done
	st       []uint8 // per op: state bits
	rankLeft []int32 // per rank: ops not yet done
	rankEnd  []sim.Time
	opsLeft  int
	started  bool
	done     bool
	// steps and stepEnd (RecordSteps): the schedule's step count and, by rank*steps+step,
	// when the rank's last op of that step completed (0: it had none).
	steps   int
	stepEnd []sim.Time
}

// engine is one host's reduction engine: a FIFO of (instance, op) items with one pending
// event while busy.
type engine struct {
	q    []uint64
	head int
	busy bool
	cur  uint64
}

// Executor runs schedules on a simulation through a Transport: it posts each send when its
// dependencies are done, completes receives when the transport reports delivery, charges
// reductions to each host's reduction engine, and records when every rank and every collective
// finished. Several collectives, on the same or different communicators, can run at once.
// Not safe for concurrent use; all calls happen inside one simulation.
type Executor struct {
	s       *sim.Sim
	t       Transport
	cfg     ExecConfig
	kLaunch sim.Kind
	kReduce sim.Kind
	insts   []*instance
	work    []uint64 // (instance, op) to complete, FIFO from whead
	whead   int
	busy    bool // inside an entry point: nested calls only queue work
	eng     []engine
	running int
	err     error

	// Stats.
	Posted      int64 // messages posted to the transport
	PostedBytes int64 // their payload bytes
	Reductions  int64 // reduce ops completed
}

// NewExecutor returns an executor that posts to t on s. Errors: Hosts < 1, a negative or NaN
// ReduceBytesPerSec, a nil transport or simulation.
func NewExecutor(s *sim.Sim, t Transport, cfg ExecConfig) (*Executor, error) {
	if s == nil || t == nil {
		return nil, fmt.Errorf("collective: executor needs a simulation and a transport")
	}
	if cfg.Hosts < 1 {
		return nil, fieldError("exec.hosts", cfg.Hosts, "must be >= 1")
	}
	if !(cfg.ReduceBytesPerSec >= 0) || math.IsInf(cfg.ReduceBytesPerSec, 0) {
		return nil, fieldError("exec.reduce_bps", cfg.ReduceBytesPerSec, "must be a finite number of bytes per second >= 0 (0 = free)")
	}
	e := &Executor{s: s, t: t, cfg: cfg, eng: make([]engine, cfg.Hosts)}
	e.kLaunch = s.Register("collective.launch", e.onLaunch)
	e.kReduce = s.Register("collective.reduce", e.onReduce)
	return e, nil
}

func token(inst int, op int32) uint64 { return uint64(inst)<<32 | uint64(uint32(op)) }

// Launch schedules sched to start on comm at time at (>= now) and returns the collective's
// id. name labels it in diagnostics ("" gives "<op>#<id>"). Errors: a nil schedule, a
// communicator of the wrong size, a host >= ExecConfig.Hosts, a start in the past.
func (e *Executor) Launch(at sim.Time, sched *Schedule, comm Comm, name string) (int, error) {
	if sched == nil {
		return -1, fmt.Errorf("collective: launch: nil schedule")
	}
	if comm.Size() != sched.Ranks() {
		return -1, fieldError("comm", fmt.Sprintf("%d ranks", comm.Size()), fmt.Sprintf("the schedule is for %d ranks", sched.Ranks()))
	}
	for r := 0; r < comm.Size(); r++ {
		if h := comm.Host(r); h >= e.cfg.Hosts {
			return -1, fieldError(fmt.Sprintf("comm.hosts[%d]", r), h, fmt.Sprintf("must be a host in [0, %d)", e.cfg.Hosts))
		}
	}
	if at < e.s.Now() {
		return -1, fieldError("start", at, fmt.Sprintf("must be >= now (%v)", e.s.Now()))
	}
	id := len(e.insts)
	if id >= 1<<31 {
		return -1, fmt.Errorf("collective: too many launches")
	}
	if name == "" {
		name = fmt.Sprintf("%s#%d", sched.spec.Op, id)
	}
	n := len(sched.ops)
	in := &instance{
		id: id, name: name, sch: sched, comm: comm, at: at, end: sim.MaxTime,
		left: make([]int32, n), st: make([]uint8, n),
		rankLeft: make([]int32, sched.Ranks()), rankEnd: make([]sim.Time, sched.Ranks()),
		opsLeft: n,
	}
	for i := 0; i < n; i++ {
		in.left[i] = sched.depOff[i+1] - sched.depOff[i]
		in.rankLeft[sched.ops[i].Rank]++
	}
	for r := range in.rankEnd {
		in.rankEnd[r] = sim.MaxTime
	}
	if e.cfg.RecordSteps {
		for i := range sched.ops {
			in.steps = max(in.steps, int(sched.ops[i].Step)+1)
		}
		in.stepEnd = make([]sim.Time, sched.Ranks()*in.steps)
	}
	e.insts = append(e.insts, in)
	e.running++
	e.s.At(at, e.kLaunch, int32(id), 0)
	return id, nil
}

func (e *Executor) onLaunch(now sim.Time, obj int32, _ uint64) {
	in := e.insts[obj]
	in.started = true
	in.at = now
	for r, k := range in.rankLeft {
		if k == 0 {
			in.rankEnd[r] = now
		}
	}
	if in.opsLeft == 0 {
		e.finish(now, in)
		return
	}
	e.busy = true
	for _, i := range in.sch.roots {
		e.ready(now, in, i)
	}
	e.drain(now)
}

// Delivered tells the executor that the message with token has fully arrived at its
// receiver. Transports call it exactly once per message (see Transport). An unknown or
// repeated token stops the simulation with an error.
func (e *Executor) Delivered(now sim.Time, tok uint64) {
	id, i := int(tok>>32), int32(uint32(tok))
	if id >= len(e.insts) || int(i) >= len(e.insts[id].st) || e.insts[id].sch.ops[i].Kind != OpRecv {
		e.fail(fmt.Errorf("collective: delivery of unknown token %#x", tok))
		return
	}
	in := e.insts[id]
	if in.st[i]&stArrived != 0 {
		e.fail(fmt.Errorf("collective: %s rank %d: message %s delivered twice", in.name, in.sch.ops[i].Rank, in.sch.describe(int(i), &in.comm)))
		return
	}
	in.st[i] |= stArrived
	e.work = append(e.work, token(id, in.sch.ops[i].Match))
	if in.st[i]&stReady != 0 {
		e.work = append(e.work, tok)
	}
	if !e.busy {
		e.busy = true
		e.drain(now)
	}
}

// ready handles op i whose dependencies are all done.
func (e *Executor) ready(now sim.Time, in *instance, i int32) {
	in.st[i] |= stReady
	o := &in.sch.ops[i]
	switch o.Kind {
	case OpSend:
		b := in.sch.Bytes(int(i))
		e.Posted++
		e.PostedBytes += b
		m := Message{Src: in.comm.Host(int(o.Rank)), Dst: in.comm.Host(int(o.Peer)), Bytes: b,
			Channel: int(in.sch.blkChan[o.Block]), Instance: in.id, Token: token(in.id, o.Match)}
		if err := e.t.Send(now, m); err != nil {
			e.fail(fmt.Errorf("collective: %s rank %d (host %d): %s: %w", in.name, o.Rank, m.Src, in.sch.describe(int(i), &in.comm), err))
		}
	case OpRecv:
		if in.st[i]&stArrived != 0 {
			e.work = append(e.work, token(in.id, i))
		}
	case OpReduce:
		if e.cfg.ReduceBytesPerSec == 0 {
			e.work = append(e.work, token(in.id, i))
			return
		}
		h := in.comm.Host(int(o.Rank))
		g := &e.eng[h]
		g.q = append(g.q, token(in.id, i))
		if !g.busy {
			e.startReduce(now, h)
		}
	}
}

// startReduce starts the head of host h's reduction queue.
func (e *Executor) startReduce(now sim.Time, h int) {
	g := &e.eng[h]
	g.cur = g.q[g.head]
	g.head++
	if g.head == len(g.q) {
		g.q, g.head = g.q[:0], 0
	}
	g.busy = true
	in := e.insts[g.cur>>32]
	b := in.sch.Bytes(int(uint32(g.cur)))
	d := sim.Time(math.Ceil(float64(b) / e.cfg.ReduceBytesPerSec * float64(sim.Second)))
	e.s.After(d, e.kReduce, int32(h), 0)
}

func (e *Executor) onReduce(now sim.Time, obj int32, _ uint64) {
	g := &e.eng[obj]
	g.busy = false
	e.work = append(e.work, g.cur)
	e.Reductions++
	if g.head < len(g.q) {
		e.startReduce(now, int(obj))
	}
	e.busy = true
	e.drain(now)
}

// drain completes queued ops until none is left; completing an op readies its successors,
// which may queue more.
func (e *Executor) drain(now sim.Time) {
	for e.whead < len(e.work) {
		t := e.work[e.whead]
		e.whead++
		in := e.insts[t>>32]
		i := int32(uint32(t))
		if in.st[i]&stDone != 0 {
			continue
		}
		in.st[i] |= stDone
		r := in.sch.ops[i].Rank
		if in.rankLeft[r]--; in.rankLeft[r] == 0 {
			in.rankEnd[r] = now
		}
		if in.stepEnd != nil {
			in.stepEnd[int(r)*in.steps+int(in.sch.ops[i].Step)] = now // ops complete in time order
		}
		sch := in.sch
		for _, s := range sch.succ[sch.succOff[i]:sch.succOff[i+1]] {
			if in.left[s]--; in.left[s] == 0 {
				e.ready(now, in, s)
			}
		}
		if in.opsLeft--; in.opsLeft == 0 {
			e.finish(now, in)
		}
	}
	e.work, e.whead = e.work[:0], 0
	e.busy = false
}

func (e *Executor) finish(now sim.Time, in *instance) {
	in.done = true
	in.end = now
	e.running--
	if e.cfg.OnDone != nil {
		e.cfg.OnDone(now, in.id)
	}
}

func (e *Executor) fail(err error) {
	if e.err == nil {
		e.err = err
	}
	e.s.Stop(err)
}

// Err returns the first error that stopped the simulation (a transport refusing a message, a
// bad delivery), or nil.
func (e *Executor) Err() error { return e.err }

// Done reports whether every launched collective has completed.
func (e *Executor) Done() bool { return e.running == 0 }

// Incomplete returns nil when every launched collective has completed, else an error whose
// message is Stuck(max): what the runner returns when the event queue empties, or its time
// limit passes, with collectives outstanding (docs/architecture.md, Conventions, "Progress").
func (e *Executor) Incomplete(max int) error {
	if e.running == 0 {
		return nil
	}
	return fmt.Errorf("collective: %d collective(s) did not complete:\n%s", e.running, e.Stuck(max))
}

// Running returns how many launched collectives have not completed.
func (e *Executor) Running() int { return e.running }

// Result is the outcome of one launched collective. Times are simulated; End and RankEnd are
// sim.MaxTime while not done.
type Result struct {
	ID      int        // the id Launch returned
	Name    string     // the name given to Launch, or "<op>#<id>"
	Spec    Spec       // the schedule's resolved spec
	Hosts   []int      // rank -> host
	Start   sim.Time   // when it was launched (its start event ran)
	End     sim.Time   // when its last op completed
	RankEnd []sim.Time // per rank: when its last op completed (its send delivered, its receive or reduce done)
	Done    bool       // every op completed
	// StepEnd, with ExecConfig.RecordSteps, is per rank and algorithm step (Op.Step) when
	// the rank's last op of that step completed: StepEnd[rank][step], 0 where the rank had no
	// op in the step; nil without RecordSteps.
	StepEnd [][]sim.Time
}

// Time returns End-Start, or sim.MaxTime if not done.
func (r Result) Time() sim.Time {
	if !r.Done {
		return sim.MaxTime
	}
	return r.End - r.Start
}

// Result returns the outcome of collective id. Errors: an unknown id.
func (e *Executor) Result(id int) (Result, error) {
	if id < 0 || id >= len(e.insts) {
		return Result{}, fieldError("id", id, fmt.Sprintf("no such collective; %d launched", len(e.insts)))
	}
	in := e.insts[id]
	r := Result{ID: id, Name: in.name, Spec: in.sch.spec, Hosts: in.comm.Hosts(), Start: in.at, End: in.end,
		RankEnd: append([]sim.Time(nil), in.rankEnd...), Done: in.done}
	if in.stepEnd != nil {
		r.StepEnd = make([][]sim.Time, in.sch.Ranks())
		for k := range r.StepEnd {
			r.StepEnd[k] = append([]sim.Time(nil), in.stepEnd[k*in.steps:(k+1)*in.steps]...)
		}
	}
	return r, nil
}

// Results returns every launched collective's outcome, by id.
func (e *Executor) Results() []Result {
	out := make([]Result, len(e.insts))
	for i := range e.insts {
		out[i], _ = e.Result(i)
	}
	return out
}
