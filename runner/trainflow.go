package runner

import (
	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// trainFlowBackend is the training.Backend of a flow-level job: package flow's collectives,
// with each collective's connections recorded on the router before its launch as
// workload.collectives records them (runner/collective_flow.go, flowColl.launch), so that a
// transport that does not spray (RoCE) carries each message on the QPs the packet level
// gives it: the schedule model's one QP per message, round robin (setConnPlanes with
// sched), or the phase model's QPs of a channel's loops; and each QP on the path its
// packets hash to, its owner the communicator's group as the packet level's
// training.ExecutorBackend numbers it (Group: communicators in the order of their first
// launch). Under a transport that sprays (MRC) nothing is recorded (the router keeps
// nothing per key) and a launch costs what fc's does.
type trainFlowBackend struct {
	fc     *flow.Collectives
	router *collRouter
	groups u64Table // communicator (its hash, collective.Comm.Hash) -> group, by first launch
	specs  map[trainSpecKey]trainSpecConn
}

// trainSpecKey identifies a spec for trainFlowBackend's cache (a matrix by its first row's
// address: the job reuses one matrix per all-to-all shape, as training's specKey).
type trainSpecKey struct {
	op                   collective.Collective
	algo                 collective.Algorithm
	ranks                int
	bytes, chunk         int64
	channels, root, peer int
	inner, outer         int
	matrix               *int64
}

// trainSpecConn is what record needs of a spec: resolved for the flow engine, whether it
// runs the schedule model, and whether the phase model's record keeps every QP of a pair
// (one channel whose loops reach the pair's QPs: no record needed).
type trainSpecConn struct {
	sp      collective.Spec
	ok      bool
	sched   bool
	everyQP bool
}

// newTrainFlowBackend returns the backend over fc routed by router.
func newTrainFlowBackend(fc *flow.Collectives, router *collRouter) *trainFlowBackend {
	return &trainFlowBackend{fc: fc, router: router, specs: map[trainSpecKey]trainSpecConn{}}
}

// conn returns spec's trainSpecConn, cached.
func (b *trainFlowBackend) conn(spec collective.Spec) trainSpecConn {
	k := trainSpecKey{op: spec.Op, algo: spec.Algo, ranks: spec.Ranks, bytes: spec.Bytes, chunk: spec.ChunkBytes,
		channels: spec.Channels, root: spec.Root, peer: spec.Peer, inner: spec.Inner, outer: spec.Outer}
	if len(spec.Matrix) > 0 && len(spec.Matrix[0]) > 0 {
		k.matrix = &spec.Matrix[0][0]
	}
	if c, ok := b.specs[k]; ok {
		return c
	}
	var c trainSpecConn
	sp, err := flowSpec(spec)
	if err == nil {
		c = trainSpecConn{sp: sp, ok: true, sched: b.fc.Schedules(sp)}
		chans, loops := msgLoops(sp)
		c.everyQP = !c.sched && chans == 1 && loops >= max(b.router.paths, 1)*b.router.planes
	}
	b.specs[k] = c
	return c
}

// record registers spec's connections on comm with the router (a transport that does not
// spray only): their QPs and owner, as flowColl.launch does. A phase-model collective whose
// record would keep every QP of a pair (collRouter.keepQPs keeps them all) clears its key's
// record instead of writing one.
func (b *trainFlowBackend) record(spec collective.Spec, comm collective.Comm) {
	r := b.router
	if r.spray {
		return
	}
	c := b.conn(spec)
	if !c.ok {
		return // the launch reports it
	}
	h := comm.Hash()
	g, ok := b.groups.get(h)
	if !ok {
		g = uint64(b.groups.len())
		b.groups.put(h, g)
	}
	if c.everyQP {
		if r.msgPlanes != nil {
			delete(r.msgPlanes, commKey(comm))
		}
	} else {
		r.setConnPlanes(c.sp, comm, c.sched)
	}
	r.setConnOwners(c.sp, comm, transport.CollectiveOwner(int(g)), c.sched)
}

// Launch implements training.Backend.
func (b *trainFlowBackend) Launch(at sim.Time, spec collective.Spec, comm collective.Comm, name string, done func(now sim.Time)) error {
	b.record(spec, comm)
	return b.fc.Launch(at, spec, comm, name, done)
}

// LaunchNamed implements training.NamedBackend.
func (b *trainFlowBackend) LaunchNamed(at sim.Time, spec collective.Spec, comm collective.Comm, name func() string, done func(now sim.Time)) error {
	b.record(spec, comm)
	return b.fc.LaunchNamed(at, spec, comm, name, done)
}

// trainScheduleMaxLoops is, in a job of more than trainScheduleAllRanks GPUs, the most chunk
// loops per logical channel (msgLoops: a ring's
// ceil(S/C) in loops of ranks x chunk, halving-doubling's of p x chunk, the hierarchical
// ring's of inner x chunk, a chunk for the tree and chains) a training collective may have
// to run its packet-level schedule message by message at flow level (flow/dag.go); one with
// more keeps its phases (flow/expand.go). Messages cost one Net flow each where a phase costs
// one per pair, so a collective of L loops costs about L times its phases; and with many
// loops the phases are the schedule's steady state, the pipeline's fill and drain (what the
// schedule adds on an uncontended fabric) a share of about 1/L of its time. DeepSeek-V3 on
// 2,048 GPUs (train-dsv3-2k: data-parallel hierarchical all-reduces of 61 loops, 4-rank
// rings of 122), unfolded, took 117 s of CPU with every collective on its schedule and
// 35,906.5 ms per step, against 40 s and 35,909.5 ms with this bound (docs/flow-agreement.md,
// "Training at both levels").
const trainScheduleMaxLoops = 8

// trainScheduleAllRanks is the largest job (GPUs) whose every collective runs its schedule
// (up to flowScheduleMaxOps operations), whatever its loops: small jobs are where the packet
// level can check the flow level in seconds (TestTrainingAgreement). Beyond it a job's
// many-loop collectives cost: Llama-3-8B on 256 GPUs (cmd/lockstep/testdata/train-llama8b)
// took 1,977,748 events with every collective on its schedule, 56 times its phases' 35,064,
// for a step 0.04% shorter (350,282.5 against 350,431.6 us).
const trainScheduleAllRanks = 64

// trainScheduleFilter returns the schedule filter (flow.Collectives.SetScheduleFilter) of a
// job of world GPUs: nil (every collective) up to trainScheduleAllRanks, else at most
// trainScheduleMaxLoops loops per logical channel.
func trainScheduleFilter(world int) func(sp *collective.Spec) bool {
	if world <= trainScheduleAllRanks {
		return nil
	}
	return func(sp *collective.Spec) bool {
		_, loops := msgLoops(*sp)
		return loops <= trainScheduleMaxLoops
	}
}
