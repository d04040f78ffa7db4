package training

import (
	"fmt"
	"math"
	"testing"

	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// The two-level reference of these tests: NVLink 5 (gb200: 7.2 Tb/s per GPU per direction,
// 1 us) and a 400 Gb/s NIC per GPU with 2 us per message.
var (
	nvl5   = collective.Model{Rate: 7200 * sim.Gbps, Latency: sim.Microsecond}
	nic400 = collective.Model{Rate: 400 * sim.Gbps, Latency: 2 * sim.Microsecond}
	nic100 = collective.Model{Rate: 100 * sim.Gbps, Latency: 2 * sim.Microsecond}
)

// domainRouter is a flow.Router for hosts in scale-up domains of g on a non-blocking
// network: host h sends on its NIC uplink 2h and receives on its downlink 2h+1 (rate net),
// and to a host of its own domain on its NVLink transmit link 2H+2h and receive link
// 2H+2h+1 (rate up), as the runner's scenarioFlowRouter does.
type domainRouter struct {
	hosts, g int
	up, net  collective.Model
	links    [2]int32
}

func (d *domainRouter) caps() []float64 {
	c := make([]float64, 4*d.hosts)
	for i := range c {
		c[i] = float64(d.net.Rate)
		if i >= 2*d.hosts {
			c[i] = float64(d.up.Rate)
		}
	}
	return c
}

func (d *domainRouter) Paths(src, dst int, _ uint64, buf []flow.Path) ([]flow.Path, sim.Time, error) {
	if src == dst || src < 0 || dst < 0 || src >= d.hosts || dst >= d.hosts {
		return nil, 0, fmt.Errorf("no path %d -> %d", src, dst)
	}
	if src/d.g == dst/d.g {
		d.links = [2]int32{int32(2*d.hosts + 2*src), int32(2*d.hosts + 2*dst + 1)}
		return append(buf[:0], flow.Path{Links: d.links[:], Weight: 1}), d.up.Latency, nil
	}
	d.links = [2]int32{int32(2 * src), int32(2*dst + 1)}
	return append(buf[:0], flow.Path{Links: d.links[:], Weight: 1}), d.net.Latency, nil
}

// flowBackend returns a flow-level backend on s over hosts in domains of g.
func flowBackend(t testing.TB, s *sim.Sim, hosts, g int) *flow.Collectives {
	t.Helper()
	r := &domainRouter{hosts: hosts, g: g, up: nvl5, net: nic400}
	n, err := flow.New(s, r.caps(), flow.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := flow.NewCollectives(n, r, flow.CollConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// splitBackend returns an executor backend on s whose messages inside a domain of g go over
// an Ideal NVLink (nvl5) and the rest over an Ideal NIC network of model net (the packet
// engine's split).
func splitBackend(t testing.TB, s *sim.Sim, hosts, g int, net collective.Model) *ExecutorBackend {
	t.Helper()
	inner, err := collective.NewIdeal(s, collective.IdealConfig{Hosts: hosts, Rate: nvl5.Rate, Latency: nvl5.Latency})
	if err != nil {
		t.Fatal(err)
	}
	outer, err := collective.NewIdeal(s, collective.IdealConfig{Hosts: hosts, Rate: net.Rate, Latency: net.Latency})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewSplitTransport(g, inner, outer)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewExecutorBackend(s, tr, hosts, 0)
	if err != nil {
		t.Fatal(err)
	}
	inner.SetSink(b.Delivered)
	outer.SetSink(b.Delivered)
	return b
}

// launchOne runs spec on comm alone on b and returns its time.
func launchOne(t testing.TB, s *sim.Sim, b Backend, sp collective.Spec, comm collective.Comm) sim.Time {
	t.Helper()
	var end sim.Time = -1
	if err := b.Launch(s.Now(), sp, comm, "test", func(now sim.Time) { end = now }); err != nil {
		t.Fatal(err)
	}
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	if end < 0 {
		t.Fatalf("%s %s %dx%d never completed", sp.Op, sp.Algo, sp.Inner, sp.Outer)
	}
	return end
}

// nvlComm returns the communicator of a data-parallel group on NVL-style domains of g GPUs
// with inner members per domain at stride g/inner (so member i of domain d is host
// d*g + i*g/inner): rank d*inner+i, the order the hierarchical collective needs.
func nvlComm(t testing.TB, inner, outer, g int) collective.Comm {
	t.Helper()
	hosts := make([]int, 0, inner*outer)
	for d := 0; d < outer; d++ {
		for i := 0; i < inner; i++ {
			hosts = append(hosts, d*g+i*(g/inner))
		}
	}
	if l := layoutOf(hosts, g); l.inner != inner || l.outer != outer {
		t.Fatalf("layout of the test communicator: %dx%d, want %dx%d", l.inner, l.outer, inner, outer)
	}
	c, err := collective.NewComm(hosts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHierarchicalMatchesClosedForm is the acceptance check "NVL72 domains: DP all-reduce
// time within 5% of the hierarchical closed form" (collective.AlphaBetaScaleUp: inner phases
// at NVLink 5's rate and latency, the outer phase at a 400 Gb/s NIC's), over inner
// I in {2, 8, 36, 72} members per domain of 72 GPUs, outer O in {2, 4, 16} domains and sizes
// 1 MiB to 1 GiB, for all-reduce, reduce-scatter and all-gather, on the analytic backend
// (which must charge the form itself) and the flow engine with per-GPU NVLink and NIC links.
func TestHierarchicalMatchesClosedForm(t *testing.T) {
	const g = 72
	sizes := []int64{1 << 20, 16 << 20, 128 << 20, 1 << 30}
	for _, op := range []collective.Collective{collective.AllReduce, collective.ReduceScatter, collective.AllGather} {
		for _, I := range []int{2, 8, 36, 72} {
			for _, O := range []int{2, 4, 16} {
				comm := nvlComm(t, I, O, g)
				for _, S := range sizes {
					sp := collective.NewSpec(op, I*O, S)
					sp.Algo, sp.Inner, sp.Outer = collective.Hierarchical, I, O
					want, err := collective.AlphaBetaScaleUp(sp, nvl5, nic400)
					if err != nil {
						t.Fatal(err)
					}
					s := sim.New(1)
					ab, err := NewAnalyticBackend(s, nic400)
					if err != nil {
						t.Fatal(err)
					}
					if err := ab.SetScaleUp(nvl5); err != nil {
						t.Fatal(err)
					}
					if got := launchOne(t, s, ab, sp, comm); got != want {
						t.Errorf("analytic %s %dx%d S=%d: %v, closed form %v", op, I, O, S, got, want)
					}
					s = sim.New(1)
					got := launchOne(t, s, flowBackend(t, s, g*O, g), sp, comm)
					if e := math.Abs(float64(got-want)) / float64(want); e > 0.05 {
						t.Errorf("flow %s %dx%d S=%d: %v, closed form %v (%+.2f%%)", op, I, O, S, got, want, 100*(float64(got)/float64(want)-1))
					}
				}
			}
		}
	}
}

// TestHierarchicalPacketSmall: the packet engine's split (the chunked schedule on an Ideal
// NVLink inside each domain and an Ideal NIC across) against the closed form, which runs the
// phases one after another as the flow engine does. The executor pipelines chunks and
// overlaps the phases of successive loops on their different links, so it is never slower
// than the form and never faster than a perfect pipeline's bound, the busier link's bytes:
// max(2(I-1)/I S b_up, 2(O-1)/O (S/I) b_net). Where the NVLink phases are a small share (2 x 4 behind a
// 100 Gb/s NIC: 2% of the outer phase's time) it is within 5% of the form. The flat ring,
// which pushes 2(n-1)/n S through one NIC at every domain boundary, is far slower.
func TestHierarchicalPacketSmall(t *testing.T) {
	const g = 72
	for _, c := range []struct {
		I, O int
		net  collective.Model
		tol  float64 // within this of the form; 0: bounds only
	}{{2, 4, nic100, 0.05}, {2, 2, nic400, 0}, {8, 2, nic400, 0}, {2, 4, nic400, 0}, {8, 4, nic400, 0}} {
		comm := nvlComm(t, c.I, c.O, g)
		for _, S := range []int64{16 << 20, 64 << 20} {
			sp := collective.NewSpec(collective.AllReduce, c.I*c.O, S)
			sp.Algo, sp.Inner, sp.Outer = collective.Hierarchical, c.I, c.O
			want, err := collective.AlphaBetaScaleUp(sp, nvl5, c.net)
			if err != nil {
				t.Fatal(err)
			}
			I, O := float64(c.I), float64(c.O)
			up := 2 * (I - 1) / I * float64(S) * 8 / float64(nvl5.Rate)
			nw := 2 * (O - 1) / O * float64(S) / I * 8 / float64(c.net.Rate)
			bound := sim.FromSeconds(math.Max(up, nw))
			s := sim.New(1)
			got := launchOne(t, s, splitBackend(t, s, g*c.O, g, c.net), sp, comm)
			e := float64(got)/float64(want) - 1
			t.Logf("%dx%d at %v, S=%d: packet %v, closed form %v (%+.2f%%), pipeline bound %v", c.I, c.O, c.net.Rate, S, got, want, 100*e, bound)
			if got > want || got < bound || c.tol > 0 && -e > c.tol {
				t.Errorf("%dx%d S=%d: packet %v; want in [%v, %v] (within %.0f%% of the form when set)", c.I, c.O, S, got, bound, want, 100*c.tol)
			}
			ring := sp
			ring.Algo, ring.Inner, ring.Outer = collective.Ring, 0, 0
			s = sim.New(1)
			flat := launchOne(t, s, splitBackend(t, s, g*c.O, g, c.net), ring, comm)
			if float64(flat) < 1.5*float64(got) {
				t.Errorf("%dx%d S=%d: flat ring %v, hierarchical %v; want the ring far slower", c.I, c.O, S, flat, got)
			}
		}
	}
}

// TestLayoutOf: communicators' layouts in domains, including a data-parallel group of
// order tp,dp,pp on NVL72 with TP 8 (9 members in each of 4 domains), the same at a world
// that is not a multiple of the domain (9, 9, 9, 5: not uniform), one member per domain, a
// group whose domains recur out of order, and no domains.
func TestLayoutOf(t *testing.T) {
	stride := func(first, n, step int) []int {
		h := make([]int, n)
		for i := range h {
			h[i] = first + i*step
		}
		return h
	}
	cases := []struct {
		name         string
		hosts        []int
		g            int
		inner, outer int
		shared       bool
	}{
		{"dp of 36 at stride 8, NVL72", stride(0, 36, 8), 72, 9, 4, true},
		{"dp of 32 at stride 8, NVL72 (9,9,9,5)", stride(0, 32, 8), 72, 1, 4, true},
		{"one per domain", stride(3, 16, 8), 8, 1, 16, false},
		{"whole domains", stride(0, 32, 1), 8, 8, 4, true},
		{"domains out of order", []int{0, 1, 8, 9, 2, 3}, 8, 1, 2, true},
		{"no domains", stride(0, 8, 1), 1, 1, 8, false},
		{"single rank", []int{5}, 8, 1, 1, false},
	}
	for _, c := range cases {
		l := layoutOf(c.hosts, c.g)
		if l.ranks != len(c.hosts) || l.inner != c.inner || l.outer != c.outer || l.shared != c.shared {
			t.Errorf("%s: %+v, want inner %d outer %d shared %v", c.name, l, c.inner, c.outer, c.shared)
		}
	}
}

// nvlJob builds Llama-3-70B on gb200 NVL72 domains, TP 8 PP 4 over world GPUs, with a
// global batch divisible by the DP size.
func nvlJob(t testing.TB, world int, o Options) *Job {
	t.Helper()
	m := mustModel(t, "llama3-70b")
	m.GlobalBatch = world / 32 * 16
	g := mustGPU(t, "gb200")
	j, err := NewJob(m, g, Plan{TP: 8, PP: 4, DP: world / 32}, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestJobPicksHierarchical: on NVL72 with TP 8 (order tp,dp,pp) every DP bucket of a
// 1,152-GPU job runs hierarchical 9 x 4 when the backend carries the domain, flat without
// it, flat at 1,024 GPUs (9, 9, 9, 5 members per domain), and the ZeRO all-gathers and
// reduce-scatters too.
func TestJobPicksHierarchical(t *testing.T) {
	for _, c := range []struct {
		world   int
		scaleUp bool
		zero    bool
		hier    bool
	}{{1152, true, false, true}, {1152, false, false, false}, {1024, true, false, false}, {1152, true, true, true}} {
		m := mustModel(t, "llama3-70b")
		m.GlobalBatch = 576
		j, err := NewJob(m, mustGPU(t, "gb200"), Plan{TP: 8, PP: 4, ZeRO: c.zero}, nvlPlacement(t, c.world, 8, 4), Options{Overlap: true, ScaleUp: c.scaleUp, Network: nic400})
		if err != nil {
			t.Fatal(err)
		}
		for s, st := range j.stages {
			for _, list := range [][]int32{st.dpSpecs, st.agSpecs} {
				for _, k := range list {
					sp := j.specs[k]
					h := sp.Algo == collective.Hierarchical
					if h != c.hier || h && (sp.Inner != 9 || sp.Outer != 4) {
						t.Errorf("world %d scale-up %v zero %v stage %d: %s %s %dx%d, want hierarchical %v (9x4)", c.world, c.scaleUp, c.zero, s, sp.Op, sp.Algo, sp.Inner, sp.Outer, c.hier)
					}
				}
			}
		}
	}
}

// nvlPlacement lays out tp x pp over world GPUs on NVL72 domains.
func nvlPlacement(t testing.TB, world, tp, pp int) *Placement {
	t.Helper()
	m := mustModel(t, "llama3-70b")
	m.GlobalBatch = world / (tp * pp) * 16
	p, err := Plan{TP: tp, PP: pp}.Resolve(world, m)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := NewPlacement(p, 72)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// TestChooseAlgoIsArgmin: with a network model the selector takes, over I in {2, 8, 36, 72},
// O in {2, 4, 16, 64} and sizes 4 KiB to 1 GiB, whichever of the flat and the hierarchical
// candidates has the smaller closed form, so it is never slower than either by its own
// model; large sizes go hierarchical at every layout, and the smallest flat once O >= 16
// (the tree's 2 log2 n network latencies against the hierarchical 2(I-1) NVLink plus
// 2(O-1) network steps).
func TestChooseAlgoIsArgmin(t *testing.T) {
	j := nvlJob(t, 1152, Options{Overlap: true, ScaleUp: true, Network: nic400})
	for _, I := range []int{2, 8, 36, 72} {
		for _, O := range []int{2, 4, 16, 64} {
			lay := commLayout{ranks: I * O, inner: I, outer: O, shared: true}
			for S := int64(4 << 10); S <= 1<<30; S *= 4 {
				algo, in, out := j.chooseAlgo(collective.AllReduce, lay, S)
				h := collective.NewSpec(collective.AllReduce, I*O, S)
				h.Algo, h.Inner, h.Outer = collective.Hierarchical, I, O
				th, _ := collective.AlphaBetaScaleUp(h, nvl5, nic400)
				f := collective.NewSpec(collective.AllReduce, I*O, S)
				f.Algo = collective.AutoAlgorithm(collective.AllReduce, I*O, S)
				tf, _ := collective.AlphaBeta(f, nic400)
				best := min(th, tf)
				var got sim.Time
				if algo == collective.Hierarchical {
					got = th
					if in != I || out != O {
						t.Errorf("%dx%d S=%d: hierarchical %dx%d", I, O, S, in, out)
					}
				} else {
					got = tf
					if algo != f.Algo {
						t.Errorf("%dx%d S=%d: flat %s, want %s", I, O, S, algo, f.Algo)
					}
				}
				if got != best {
					t.Errorf("%dx%d S=%d: picked %s (%v); hierarchical %v, flat %s %v", I, O, S, algo, got, th, f.Algo, tf)
				}
				if S == 1<<30 && algo != collective.Hierarchical {
					t.Errorf("%dx%d 1 GiB: %s, want hierarchical", I, O, algo)
				}
				if S == 4<<10 && O >= 16 && algo == collective.Hierarchical {
					t.Errorf("%dx%d 4 KiB: hierarchical, want flat", I, O)
				}
			}
		}
	}
	// Without a network model: the size rule (S > 64 KiB, S/O >= 512 KiB).
	j.Options.Network = collective.Model{}
	lay := commLayout{ranks: 36, inner: 9, outer: 4, shared: true}
	for _, c := range []struct {
		S    int64
		hier bool
	}{{64 << 10, false}, {2<<20 - 1, false}, {2 << 20, true}, {1 << 30, true}} {
		if algo, _, _ := j.chooseAlgo(collective.AllReduce, lay, c.S); (algo == collective.Hierarchical) != c.hier {
			t.Errorf("size rule S=%d: %s, want hierarchical %v", c.S, algo, c.hier)
		}
	}
}
