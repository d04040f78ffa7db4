package mrcnic_test

import (
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/mrc"
	"github.com/lockstepsim/lockstep/transport/mrc/mrcnic"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// TestMatchesRunnerCollectives: testdata/coll-mrc.yaml (cmd/lockstep/testdata/coll-mrc.yaml:
// a ring all-reduce on hosts 0-7 and an all-gather on the even hosts, 4 MiB each, over MRC on
// 8 planes of 16 hosts, seed 1), driven as the runner's runCollective and sweepCollectives
// drive it (runner/collective.go, runner/collective_sweep.go: the endpoint, then the
// executor, the two collectives launched at 0 each in its own connection group, the clock
// drained until both are done, then the engines stopped and the fabric drained), gives the
// summary.json "mrc" block `lockstep run` wrote for it at commit 28e473d, as it is since the
// NIC serves the QP furthest behind on a plane relative to its own planes (EVSet.Lag).
func TestMatchesRunnerCollectives(t *testing.T) {
	const seed = 1
	c := topo.Clos{Tiers: 2, Planes: 8, Radix: 16, Hosts: 16, HostLink: 100 * sim.Gbps, FabricLink: 100 * sim.Gbps, HopLatency: 500 * sim.Nanosecond}
	s, net, l, q := fabricFor(t, c, seed, mrc.Config{})
	p, _ := transport.Lookup(mrcnic.Kind)
	e, err := p.NewEndpoint(&mrc.Config{}, transport.EndpointEnv{Sim: s, Net: net, Topology: l, Queues: q, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	ex, err := collective.NewExecutor(s, e, collective.ExecConfig{
		Hosts:  net.NumHosts(),
		OnDone: func(now sim.Time, id int) { running--; s.Pause() },
	})
	if err != nil {
		t.Fatal(err)
	}
	instGroup := map[int]int{}
	e.SetHooks(transport.Hooks{Delivered: ex.Delivered, Group: func(instance int) int { return instGroup[instance] }})
	dp := collective.NewSpec(collective.AllReduce, 8, 4<<20)
	dp.Algo = collective.Ring
	tp := collective.NewSpec(collective.AllGather, 8, 4<<20)
	for g, tc := range []struct {
		name  string
		spec  collective.Spec
		hosts []int
	}{
		{"dp/4194304B/0", dp, []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"tp/4194304B/0", tp, []int{0, 2, 4, 6, 8, 10, 12, 14}},
	} {
		sched, err := collective.Build(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		comm, err := collective.NewComm(tc.hosts)
		if err != nil {
			t.Fatal(err)
		}
		id, err := ex.Launch(s.Now(), sched, comm, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		instGroup[id] = g
		running++
	}
	for running > 0 {
		if err := s.Drain(sim.Second); err != nil {
			t.Fatal(err)
		}
		if s.NextAt() == sim.MaxTime && running > 0 {
			t.Fatalf("stuck at %v: %s", s.Now(), ex.Stuck(5))
		}
	}
	end := s.Now()
	e.Quiesce()
	if err := s.Drain(end + 10*sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	sum := e.Summary(end, nil)
	d := sum.Detail.(*mrcnic.Detail)
	type figures struct {
		flows, completed                int
		jct, mean, p50, p99, max, ideal float64
		data, sacks                     int64
		maxQPs, evGood                  int
	}
	got := figures{sum.Flows, sum.FlowsCompleted, sum.JCTUs, sum.FCTMeanUs, sum.FCTP50Us, sum.FCTP99Us, sum.FCTMaxUs, sum.IdealFCTUs,
		sum.DataPackets, d.SACKsSent, d.RxMaxActiveQPs, d.EVGood}
	// summary.json "mrc": flows 16, flows_completed 16, jct_us 128.956, fct_mean_us 11.356,
	// fct_p50_us 10.951, fct_p99_us 29.231, fct_max_us 32.555, no ideal_fct_us, data_packets
	// 21504, sacks_sent 7005, rx_max_active_qps 2, ev_good_at_end 3072 (before EVSet.Lag:
	// jct_us 129.114, fct_p99_us 23.999, sacks_sent 6964).
	want := figures{16, 16, 128.956, 11.356, 10.951, 29.231, 32.555, 0, 21504, 7005, 2, 3072}
	if got != want {
		t.Errorf("figures differ from the runner's:\n got %+v\nwant %+v", got, want)
	}
	if sum.RetxPackets != 0 || sum.QPErrors != 0 {
		t.Errorf("%d retransmissions, %d QP errors", sum.RetxPackets, sum.QPErrors)
	}
}
