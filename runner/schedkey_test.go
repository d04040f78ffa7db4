package runner

import (
	"testing"

	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// TestPhaseAndScheduleKeysApart: a phase-model and a schedule-model collective on the same
// hosts at once (RoCE, 4 planes) keep their own QP records: the phase model's channel key
// keeps the QPs of its loops (4 chunk messages in flight: 4 paths) and its owner, the
// schedule model's per-QP keys (flow.ScheduleKey) one QP each and theirs, whichever was
// recorded last. Before the keys were apart, the later record replaced the earlier.
func TestPhaseAndScheduleKeysApart(t *testing.T) {
	y := "topology: {clos: {tiers: 2, planes: 4, radix: 16, hosts: 16, host_link: 100Gbps}}\ntransport: {kind: roce}\nrun: {engine: flow}\nworkload: {collectives: [{op: all_reduce, algorithm: ring, bytes: 32MiB}]}\n"
	sc, l := parseDescribe(t, y)
	comm, _ := collective.RangeComm(0, 16, 1)
	ring := collective.NewSpec(collective.AllReduce, 16, 32<<20)
	ring.Algo = collective.Ring
	var err error
	if ring, err = flowSpec(ring); err != nil {
		t.Fatal(err)
	}
	if _, loops := msgLoops(ring); loops != 4 {
		t.Fatalf("ring of 32 MiB on 16 ranks: %d loops, want 4", loops)
	}
	for _, schedFirst := range []bool{false, true} {
		base, _, err := scenarioFlowRouter(sc, l, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		r := newMsgRouter(base)
		key0 := commKey(comm)
		phaseOwner, schedOwner := transport.CollectiveOwner(0), transport.CollectiveOwner(1)
		record := func(sched bool) {
			owner := phaseOwner
			if sched {
				owner = schedOwner
			}
			r.setConnPlanes(ring, comm, sched)
			r.setConnOwners(ring, comm, owner, sched)
		}
		record(schedFirst)
		record(!schedFirst)
		paths, _, err := r.Paths(0, 15, key0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) != 4 {
			t.Errorf("schedule first %v: the phase model's channel 0 has %d paths, want 4 (its 4 loops' QPs)", schedFirst, len(paths))
		}
		if got := r.ownerOf(key0); got != phaseOwner {
			t.Errorf("schedule first %v: the phase model's key has owner %#x, want %#x", schedFirst, got, phaseOwner)
		}
		sk := r.ScheduleKey(key0)
		if sk == key0 {
			t.Fatalf("RoCE: schedule key equals the phase key")
		}
		for q := range 4 {
			paths, _, err := r.Paths(0, 15, sk+uint64(q), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(paths) != 1 {
				t.Errorf("schedule first %v: schedule QP %d has %d paths, want 1", schedFirst, q, len(paths))
			}
			if got := r.ownerOf(sk + uint64(q)); got != schedOwner {
				t.Errorf("schedule first %v: schedule QP %d has owner %#x, want %#x", schedFirst, q, got, schedOwner)
			}
		}
	}
}
