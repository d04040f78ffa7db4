package training

import (
	"fmt"
	"math"
	"reflect"
	"strings"
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

// flowBackend returns a flow-level backend on s over hosts in domains of g, NVLink 5 inside
// them and a 400 Gb/s NIC across.
func flowBackend(t testing.TB, s *sim.Sim, hosts, g int) *flow.Collectives {
	return flowBackendOn(t, s, hosts, g, nvl5, nic400)
}

// flowBackendOn is flowBackend with the scale-up model up and the network model net.
func flowBackendOn(t testing.TB, s *sim.Sim, hosts, g int, up, net collective.Model) *flow.Collectives {
	t.Helper()
	r := &domainRouter{hosts: hosts, g: g, up: up, net: net}
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
		zero    ZeROStage
		hier    bool
	}{{1152, true, 0, true}, {1152, false, 0, false}, {1024, true, 0, false}, {1152, true, 1, true}} {
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
// (recursive doubling's log2 n network latencies against the hierarchical 2(I-1) NVLink
// plus 2(O-1) network steps).
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

// tinyTP returns the tiny model with TP 2 on h100 domains of 8 over 16 GPUs (DP 8 at stride
// 2: 4 members in each of 2 domains, a hierarchical reduction), with the given TP model.
func tinyTP(t testing.TB, tm TPModel, overlap bool) *Job {
	t.Helper()
	return newJob(t, tinyModel(), mustGPU(t, "h100"), Plan{TP: 2}, 16, Options{Overlap: overlap, ScaleUp: true, Network: nic400, TPModel: tm})
}

// runFlowJob runs one step of j on the flow engine over 400 Gb/s NICs and the GPU's NVLink
// and returns the trace and how many TP collectives the backend ran.
func runFlowJob(t testing.TB, j *Job) (*Trace, int) {
	t.Helper()
	s := sim.New(1)
	up := collective.Model{Rate: j.GPU.ScaleUpRate, Latency: j.GPU.ScaleUpLatency}
	b := flowBackendOn(t, s, j.World(), j.Placement.Domain, up, nic400)
	tr, err := j.Run(s, b, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range b.Results() {
		if len(r.Name) > 3 && r.Name[:3] == "tp[" {
			n++
		}
	}
	return tr, n
}

// TestTPModels: what each tp_model runs through the backend and what it costs, on the flow
// engine (per-GPU NVLink and NIC links) for a job whose hierarchical gradient reduction
// shares NVLink with TP 2 during the last backward:
//   - closed_form runs no TP collective;
//   - auto runs exactly the last backward's TP all-reduces (2 per layer, 16, per TP group:
//     8 groups) and its TP time exceeds the closed form's by more than nothing and at most
//     the contention bound (Summary's) plus the flow ring's latency model, (K-1) a_up per
//     all-reduce (K = 2(TP-1));
//   - with overlap off nothing overlaps: auto is closed_form exactly;
//   - simulated runs every TP all-reduce (4 per layer per microbatch) and keeps StageInfo.
func TestTPModels(t *testing.T) {
	closed := tinyTP(t, TPClosedForm, true)
	auto := tinyTP(t, TPAuto, true)
	simd := tinyTP(t, TPSimulated, true)
	if sp := closed.specs[closed.stages[0].dpSpecs[0]]; sp.Algo != collective.Hierarchical || sp.Inner != 4 || sp.Outer != 2 {
		t.Fatalf("reduction %s %dx%d; want hierarchical 4x2", sp.Algo, sp.Inner, sp.Outer)
	}
	tc, nc := runFlowJob(t, closed)
	ta, na := runFlowJob(t, auto)
	ts, ns := runFlowJob(t, simd)
	layers, groups, micro := 8, 8, closed.Microbatches()
	if nc != 0 || na != 2*layers*groups || ns != 4*layers*groups*micro {
		t.Errorf("TP collectives: closed_form %d, auto %d, simulated %d; want 0, %d, %d", nc, na, ns, 2*layers*groups, 4*layers*groups*micro)
	}
	if int(auto.tpWindow) != na || !auto.tpSimWin || closed.tpSimWin || closed.tpWindow != auto.tpWindow {
		t.Errorf("window %d (simulated %v), closed_form's %d (%v); want %d", auto.tpWindow, auto.tpSimWin, closed.tpWindow, closed.tpSimWin, na)
	}
	c, a := tc.Steps[0].Mean[CatTP], ta.Steps[0].Mean[CatTP]
	lat := sim.Time(2*layers) * sim.Time(2*(2-1)-1) * closed.GPU.ScaleUpLatency
	t.Logf("TP per rank: closed_form %v, auto %v (bound %v + latency model %v), simulated %v; step %v, %v, %v",
		c, a, auto.tpBound, lat, ts.Steps[0].Mean[CatTP], tc.Steps[0].Time, ta.Steps[0].Time, ts.Steps[0].Time)
	if auto.tpBound <= 0 || a <= c || a-c > auto.tpBound+lat {
		t.Errorf("auto's TP %v against closed_form's %v: want more, by at most %v + %v", a, c, auto.tpBound, lat)
	}
	if s := ts.Steps[0].Mean[CatTP]; s < a {
		t.Errorf("simulated TP %v below auto's %v", s, a)
	}
	if !reflect.DeepEqual(simd.Stages()[0], closed.Stages()[0]) || simd.ideal() != closed.ideal() {
		t.Errorf("simulated StageInfo %+v, closed_form %+v", simd.Stages()[0], closed.Stages()[0])
	}
	off, offC := tinyTP(t, TPAuto, false), tinyTP(t, TPClosedForm, false)
	to, no := runFlowJob(t, off)
	tco, _ := runFlowJob(t, offC)
	if no != 0 || off.tpWindow != 0 || to.Steps[0].Time != tco.Steps[0].Time {
		t.Errorf("overlap off: auto ran %d TP collectives, step %v against closed_form's %v", no, to.Steps[0].Time, tco.Steps[0].Time)
	}
}

// TestTPSharesNVLink: a TP ring all-reduce in domain 0 and a hierarchical all-reduce whose
// inner phases use the same GPUs' NVLink, launched together on the flow engine, slow each
// other down; the TP one by more than nothing and at most the other's NVLink bytes per GPU
// over the NVLink rate (the bound planTP reports), for sizes 16 MiB to 1 GiB.
func TestTPSharesNVLink(t *testing.T) {
	const g = 8
	up := collective.Model{Rate: 3600 * sim.Gbps, Latency: sim.Microsecond}
	tpComm, err := collective.RangeComm(0, g, 1)
	if err != nil {
		t.Fatal(err)
	}
	dpComm, err := collective.RangeComm(0, 2*g, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, S := range []int64{16 << 20, 128 << 20, 1 << 30} {
		tp := collective.NewSpec(collective.AllReduce, g, S)
		tp.Algo = collective.Ring
		dp := collective.NewSpec(collective.AllReduce, 2*g, S)
		dp.Algo, dp.Inner, dp.Outer = collective.Hierarchical, g, 2
		alone := func(sp collective.Spec, c collective.Comm) sim.Time {
			s := sim.New(1)
			return launchOne(t, s, flowBackendOn(t, s, 2*g, g, up, nic400), sp, c)
		}
		tTP, tDP := alone(tp, tpComm), alone(dp, dpComm)
		s := sim.New(1)
		b := flowBackendOn(t, s, 2*g, g, up, nic400)
		var eTP, eDP sim.Time
		if err := b.Launch(0, tp, tpComm, "tp", func(now sim.Time) { eTP = now }); err != nil {
			t.Fatal(err)
		}
		if err := b.Launch(0, dp, dpComm, "dp", func(now sim.Time) { eDP = now }); err != nil {
			t.Fatal(err)
		}
		if err := s.Drain(sim.MaxTime); err != nil {
			t.Fatal(err)
		}
		bound := sim.FromSeconds(nvlinkBytes(dp) * 8 / float64(up.Rate))
		t.Logf("S=%d: TP alone %v, with the reduction %v (bound +%v); reduction alone %v, with TP %v", S, tTP, eTP, bound, tDP, eDP)
		if eTP <= tTP || eTP > tTP+bound+sim.Nanosecond || eDP <= tDP {
			t.Errorf("S=%d: TP %v -> %v (bound +%v), reduction %v -> %v; want both slower, TP by at most the bound", S, tTP, eTP, bound, tDP, eDP)
		}
	}
}

// TestTPAutoBudget: beyond TPAutoMaxCollectives per step (Llama-3-70B, TP 8 PP 4, on 20,736
// NVL72 GPUs: 40 TP all-reduces in each last backward x 648 TP groups x 4 stages = 103,680)
// auto leaves the window in closed form and Summary says what that can miss.
func TestTPAutoBudget(t *testing.T) {
	j := nvlJob(t, 20736, Options{Overlap: true, ScaleUp: true, Network: nic400})
	if j.tpWindow != 103680 || j.tpSimWin || j.tpStreams || j.tpBound <= 0 {
		t.Fatalf("window %d, simulated %v, streams %v, bound %v; want 103680 in closed form with a bound", j.tpWindow, j.tpSimWin, j.tpStreams, j.tpBound)
	}
	if !strings.Contains(j.Summary(), "beyond tp_model auto's 100000") {
		t.Errorf("summary does not say why: %s", j.Summary())
	}
	small := nvlJob(t, 1152, Options{Overlap: true, ScaleUp: true, Network: nic400})
	if small.tpWindow != 5760 || !small.tpSimWin {
		t.Errorf("1152 GPUs: window %d simulated %v; want 5760, simulated", small.tpWindow, small.tpSimWin)
	}
}

// TestParseTPModel: names round-trip; anything else is an error naming the field and the
// valid names, also from the configuration.
func TestParseTPModel(t *testing.T) {
	for m := TPAuto; m < numTPModels; m++ {
		if got, err := ParseTPModel(m.String()); err != nil || got != m {
			t.Errorf("%v: %v, %v", m, got, err)
		}
	}
	if m, err := ParseTPModel(""); err != nil || m != TPAuto {
		t.Errorf("empty: %v, %v", m, err)
	}
	_, err := ParseTPModel("fluid")
	if err == nil || !strings.Contains(err.Error(), "tp_model") || !strings.Contains(err.Error(), "closed_form") {
		t.Errorf("bad name: %v", err)
	}
	c := Config{Model: Model{Preset: "llama3-8b"}, GPU: GPU{Preset: "h100"}, TPModel: "fluid"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "workload.training.tp_model") {
		t.Errorf("config: %v", err)
	}
	if _, err := NewJob(tinyModel(), mustGPU(t, "h100"), Plan{TP: 2, PP: 1, DP: 8}, nil, Options{TPModel: TPSimulated}); err == nil || !strings.Contains(err.Error(), "tp_model") {
		t.Errorf("simulated without a scale-up backend: %v", err)
	}
}
