package rocenic

import (
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// rigSpec is a small fabric as the runner builds it for a RoCE scenario under the roce
// profile (scenario/resolve_profile.go, applyRoCEProfile): ECN on every switch queue at 50 kB
// / 200 kB per 100 Gb/s, Pmax 0.2, no trimming; with PFC the queue limits raised to 64 MiB
// and a dynamic-threshold shared buffer of 40 us of the switch's total port rate.
type rigSpec struct {
	clos topo.Clos
	seed uint64
	pfc  bool
	ecn  bool // ECN marking on the switch queues (the profile's); false: off everywhere
	// limit is the switch and last-hop queue limit a scenario gives (0: the profile's).
	limit sim.Size
	// kmin, kmax are ECN thresholds a scenario gives on the switch and last-hop queues (0:
	// the profile's).
	kmin, kmax sim.Size
	cfg        roce.Config
}

// rig is one built fabric with a RoCE endpoint over it, run by the test as the runner does.
type rig struct {
	s      *sim.Sim
	net    *fabric.Network
	l      topo.Topology
	ep     *Endpoint
	queues transport.Queues
	doneAt sim.Time
	haltAt sim.Time
	tokens []uint64 // delivered collective messages, in order
}

// profileQueue is the roce profile's switch queue at rate.
func profileQueue(rate sim.Rate, pfc, ecn bool) fabric.QueueConfig {
	q := fabric.QueueConfig{Classes: 2, Limit: 1 << 20, Trim: fabric.TrimConfig{HeaderLimit: 1 << 20, HeaderShare: 0.5}}
	if pfc {
		q.Limit = 64 << 20
	}
	if ecn {
		scale := float64(rate) / 100e9
		q.ECN = fabric.ECNConfig{Enabled: true, Kmin: sim.Size(50e3 * scale), Kmax: sim.Size(200e3 * scale), Pmax: 0.2}
	}
	return q
}

// newRig builds sp's fabric into a fresh kernel seeded sp.seed and the endpoint over it,
// in the runner's order (fabric, PFC, endpoint).
func newRig(t testing.TB, sp rigSpec) *rig {
	t.Helper()
	l, err := sp.clos.Topology()
	if err != nil {
		t.Fatal(err)
	}
	c := l.Params()
	s := sim.New(sp.seed)
	net := fabric.New(s)
	qs := transport.Queues{
		Switch:  profileQueue(c.FabricLink, sp.pfc, sp.ecn),
		LastHop: profileQueue(c.HostLink, sp.pfc, sp.ecn),
		NIC:     fabric.QueueConfig{Classes: 2, Limit: 16 << 20, Trim: fabric.TrimConfig{HeaderLimit: 1 << 20, HeaderShare: 0.5}},
	}
	if sp.limit > 0 {
		qs.Switch.Limit, qs.LastHop.Limit = sp.limit, sp.limit
	}
	if sp.kmax > 0 {
		for _, q := range []*fabric.QueueConfig{&qs.Switch, &qs.LastHop} {
			q.ECN = fabric.ECNConfig{Enabled: true, Kmin: sp.kmin, Kmax: sp.kmax, Pmax: 0.2}
		}
	}
	last := qs.LastHop
	if err := topo.BuildTopology(net, l, topo.BuildOptions{SwitchQueue: qs.Switch, LastHopQueue: &last, NICQueue: qs.NIC}); err != nil {
		t.Fatal(err)
	}
	if sp.pfc {
		// Every port of the largest switch at the faster rate (the profile's sizeRoCEBuffer).
		most := sim.Rate(sp.clos.Radix) * max(c.HostLink, c.FabricLink)
		buf := max(sim.Size(most.BytesIn(40*sim.Microsecond)), 1<<20)
		if err := net.SetPFC(fabric.PFCConfig{Enabled: true, Classes: []int{1}, Quanta: 65535, Alpha: 1, SharedBuffer: buf, Reserved: 8320}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := sp.cfg
	ep, err := newEndpoint(&cfg, transport.EndpointEnv{Sim: s, Net: net, Topology: l, Queues: qs, Seed: sp.seed})
	if err != nil {
		t.Fatal(err)
	}
	g := &rig{s: s, net: net, l: l, ep: ep.(*Endpoint), queues: qs, doneAt: sim.MaxTime, haltAt: sim.MaxTime}
	return g
}

// traffic installs the traffic hooks: OnDone and Halt pause the kernel, as the runner's do.
func (g *rig) traffic() {
	g.ep.SetHooks(transport.Hooks{
		OnDone: func(now sim.Time) { g.doneAt = now; g.s.Pause() },
		Halt:   func(now sim.Time) { g.haltAt = now; g.s.Pause() },
	})
}

// run runs the kernel until the hooks pause it or limit, then quiesces the endpoint, drains
// the fabric and audits it; it returns when the traffic ended.
func (g *rig) run(t testing.TB, limit sim.Time) sim.Time {
	t.Helper()
	if err := g.s.Run(limit); err != nil {
		t.Fatalf("run stopped at %v: %v", g.s.Now(), err)
	}
	end := g.s.Now()
	g.ep.Quiesce()
	if err := g.s.Drain(end + 100*sim.Millisecond); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if err := g.net.Audit(); err != nil {
		t.Fatal(err)
	}
	if left := g.net.InFlight(); left > 0 {
		t.Fatalf("%d packets left in the fabric after the drain", left)
	}
	return end
}

// clos is a 2-tier Clos of radix 16 with 100G links and 500 ns hops.
func clos(planes, hosts int) topo.Clos {
	return topo.Clos{Tiers: 2, Planes: planes, Radix: 16, Hosts: hosts, HostLink: 100e9, HopLatency: 500 * sim.Nanosecond}
}
