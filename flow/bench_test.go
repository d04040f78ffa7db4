package flow

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// clos is a synthetic multi-plane 2-tier Clos for benchmarks and tests: hosts H, planes P;
// per plane, T0 switches of d down ports and u up ports, and u T1 switches each linked to
// every T0 of the plane. Directed links, per plane: host->T0 (H), T0->host (H), T0->T1
// (T0s x u), T1->T0 (T0s x u). All at one rate, one latency per link.
type clos struct {
	H, P, d, u int
	t0s        int
	perPlane   int
	hopLat     sim.Time
	scratch    [][4]int32
}

func newClos(hosts, planes, down, up int, hopLat sim.Time) *clos {
	t0s := (hosts + down - 1) / down
	return &clos{H: hosts, P: planes, d: down, u: up, t0s: t0s, perPlane: 2*hosts + 2*t0s*up, hopLat: hopLat}
}

func (c *clos) numLinks() int { return c.P * c.perPlane }

func (c *clos) hostUp(p, h int) int32   { return int32(p*c.perPlane + h) }
func (c *clos) hostDown(p, h int) int32 { return int32(p*c.perPlane + c.H + h) }
func (c *clos) t0Up(p, t0, j int) int32 { return int32(p*c.perPlane + 2*c.H + t0*c.u + j) }
func (c *clos) t1Down(p, j, t0 int) int32 {
	return int32(p*c.perPlane + 2*c.H + c.t0s*c.u + j*c.t0s + t0)
}

// Paths sprays over every minimal path of every plane (MRC-style): P x u paths across T0s,
// P within one T0, equal weights. key is ignored.
func (c *clos) Paths(src, dst int, _ uint64, buf []Path) ([]Path, sim.Time, error) {
	if src < 0 || dst < 0 || src >= c.H || dst >= c.H || src == dst {
		return buf, 0, fmt.Errorf("clos: bad pair %d -> %d", src, dst)
	}
	buf = buf[:0]
	ts, td := src/c.d, dst/c.d
	need := c.P * c.u
	if cap(c.scratch) < need {
		c.scratch = make([][4]int32, need)
	}
	c.scratch = c.scratch[:need]
	k := 0
	for p := 0; p < c.P; p++ {
		if ts == td {
			c.scratch[k] = [4]int32{c.hostUp(p, src), c.hostDown(p, dst)}
			buf = append(buf, Path{Links: c.scratch[k][:2], Weight: 1})
			k++
			continue
		}
		for j := 0; j < c.u; j++ {
			c.scratch[k] = [4]int32{c.hostUp(p, src), c.t0Up(p, ts, j), c.t1Down(p, j, td), c.hostDown(p, dst)}
			buf = append(buf, Path{Links: c.scratch[k][:], Weight: 1})
			k++
		}
	}
	lat := 2 * c.hopLat
	if ts != td {
		lat = 4 * c.hopLat
	}
	return buf, lat, nil
}

// benchNet builds a Net on a clos of `flows` hosts (8 planes x 16 uplinks, 32 hosts per T0,
// 400 Gb/s links) with one sprayed flow per host to a random other host (a permutation),
// every flow active and rated. Its recomputations are full ones (Config.FullRecompute).
func benchNet(tb testing.TB, flows int) (*sim.Sim, *Net) {
	c := newClos(flows, 8, 32, 16, 500*sim.Nanosecond)
	caps := make([]float64, c.numLinks())
	for i := range caps {
		caps[i] = 400e9
	}
	s := sim.New(1)
	n, err := New(s, caps, Config{FullRecompute: true})
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	perm := rng.Perm(flows)
	var buf []Path
	for src, dst := range perm {
		if dst == src {
			dst = (dst + 1) % flows
		}
		buf, _, err = c.Paths(src, dst, 0, buf)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := n.AddFlow(0, Flow{Src: src, Dst: dst, Bytes: 1 << 40, Paths: buf}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.Run(1); err != nil {
		tb.Fatal(err)
	}
	if n.Active() != flows {
		tb.Fatalf("%d active, want %d", n.Active(), flows)
	}
	return s, n
}

func benchRecompute(b *testing.B, flows int) {
	s, n := benchNet(b, flows)
	ents := 0
	for _, sl := range n.active {
		ents += len(n.flows[sl].ents)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		n.recompute(s.Now())
	}
	b.ReportMetric(float64(ents)/float64(flows), "entries/flow")
}

// BenchmarkRecompute1k: one full max-min recomputation of 1,000 concurrent flows (1,024
// hosts, a random permutation), each sprayed over 8 planes x 16 paths: 272 (link,
// coefficient) entries per flow across T0s.
func BenchmarkRecompute1k(b *testing.B) { benchRecompute(b, 1024) }

// BenchmarkRecompute10k is BenchmarkRecompute1k with 10,240 hosts and flows.
func BenchmarkRecompute10k(b *testing.B) { benchRecompute(b, 10240) }

// BenchmarkAllToAllRun simulates, end to end, 4,096 sprayed flows of random sizes
// (64 KiB-4 MiB) between random hosts of a 1,024-host clos, all starting at 0: every
// completion recomputes the rates. One op is the whole run.
func BenchmarkAllToAllRun(b *testing.B) {
	c := newClos(1024, 8, 32, 16, 500*sim.Nanosecond)
	caps := make([]float64, c.numLinks())
	for i := range caps {
		caps[i] = 400e9
	}
	b.ReportAllocs()
	var recs int64
	for b.Loop() {
		s := sim.New(1)
		n, _ := New(s, caps, Config{})
		rng := rand.New(rand.NewPCG(3, 4))
		var buf []Path
		for range 4096 {
			src, dst := rng.IntN(1024), rng.IntN(1023)
			if dst >= src {
				dst++
			}
			buf, _, _ = c.Paths(src, dst, 0, buf)
			if _, err := n.AddFlow(0, Flow{Src: src, Dst: dst, Bytes: 64<<10 + rng.Int64N(4<<20), Paths: buf}); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Drain(sim.MaxTime); err != nil {
			b.Fatal(err)
		}
		recs = n.Stats().Recomputes
	}
	b.ReportMetric(float64(recs), "recomputes")
}

// BenchmarkRingAllReduce8k runs, end to end, a 1 GiB ring all-reduce over 8,192 ranks of a
// sprayed 8-plane clos (8,192 flows of 272 entries): routing, two recomputations, delivery.
// One op is the whole run.
func BenchmarkRingAllReduce8k(b *testing.B) {
	const hosts = 8192
	c := newClos(hosts, 8, 32, 16, 500*sim.Nanosecond)
	caps := make([]float64, c.numLinks())
	for i := range caps {
		caps[i] = 400e9
	}
	comm, err := collective.RangeComm(0, hosts, 1)
	if err != nil {
		b.Fatal(err)
	}
	sp := collective.NewSpec(collective.AllReduce, hosts, 1<<30)
	sp.Algo = collective.Ring
	b.ReportAllocs()
	var took sim.Time
	for b.Loop() {
		s := sim.New(1)
		n, _ := New(s, caps, Config{})
		co, _ := NewCollectives(n, c, CollConfig{})
		if err := co.Launch(0, sp, comm, "", nil); err != nil {
			b.Fatal(err)
		}
		if err := s.Drain(sim.MaxTime); err != nil {
			b.Fatal(err)
		}
		if err := co.Incomplete(); err != nil {
			b.Fatal(err)
		}
		took = co.Results()[0].Time()
	}
	b.ReportMetric(took.Seconds()*1e3, "sim-ms")
}

// ecmpNet builds a Net on a one-plane clos of hosts hosts (32 per T0, 16 uplinks, 400 Gb/s)
// with one single-path flow per host to a random other host, its uplink chosen by a hash (a
// RoCE QP pinned by ECMP), every flow active and rated. It returns the flows' slots in a
// random order.
func ecmpNet(tb testing.TB, hosts int, cfg Config) (*Net, []int32) {
	c := newClos(hosts, 1, 32, 16, 500*sim.Nanosecond)
	caps := make([]float64, c.numLinks())
	for i := range caps {
		caps[i] = 400e9
	}
	s := sim.New(1)
	n, err := New(s, caps, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for src, dst := range rng.Perm(hosts) {
		if dst == src {
			dst = (dst + 1) % hosts
		}
		ts, td := src/c.d, dst/c.d
		links := []int32{c.hostUp(0, src), c.hostDown(0, dst)}
		if ts != td {
			j := rng.IntN(c.u)
			links = []int32{c.hostUp(0, src), c.t0Up(0, ts, j), c.t1Down(0, j, td), c.hostDown(0, dst)}
		}
		if _, err := n.AddFlow(0, Flow{Src: src, Dst: dst, Bytes: 1 << 40, Paths: []Path{{Links: links, Weight: 1}}}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.Run(1); err != nil {
		tb.Fatal(err)
	}
	order := slices.Clone(n.active)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	return n, order
}

// benchFinish: the flows of ecmpNet finish one by one in a random order, each completion
// followed by its recomputation (one op: a completion, its delivery and the recomputation).
// The Net is rebuilt, off the clock, when a quarter of its flows are left.
func benchFinish(b *testing.B, hosts int, cfg Config) {
	n, order := ecmpNet(b, hosts, cfg)
	b.ReportAllocs()
	b.ResetTimer()
	k := 0
	for b.Loop() {
		if k == 3*len(order)/4 {
			b.StopTimer()
			n, order = ecmpNet(b, hosts, cfg)
			k = 0
			b.StartTimer()
		}
		finishOne(n, order[k])
		k++
	}
	st := n.Stats()
	if st.Recomputes > 1 {
		b.ReportMetric(float64(st.Refilled)/float64(st.Recomputes-st.FullRecomputes+1), "refilled/op")
	}
}

// BenchmarkFinish16kFull and BenchmarkFinish16kIncr: 16,384 single-path (ECMP) flows on a
// 2-tier clos finishing one by one, with full recomputations and with incremental ones.
func BenchmarkFinish16kFull(b *testing.B) { benchFinish(b, 16384, Config{FullRecompute: true}) }
func BenchmarkFinish16kIncr(b *testing.B) { benchFinish(b, 16384, Config{}) }

// finishOne completes flow slot now, delivers what is due and recomputes the rates: one
// completion event, as the Net's timer would run it (for benchmarks and tests that drive
// completions by hand).
func finishOne(n *Net, slot int32) {
	now := n.s.Now()
	n.doneBuf = append(n.doneBuf[:0], doneRef{id: n.flows[slot].id, slot: slot})
	n.complete(now)
	for len(n.deliv) > 0 {
		p := n.deliv[0]
		n.deliv = popPend(n.deliv)
		n.deliver(now, p.slot)
	}
	n.recompute(now)
}

// BenchmarkRoCEWaves1k simulates, end to end, 4 waves of RoCE-style traffic on a 1,024-host,
// 8-plane clos (32 hosts per T0, 16 uplinks, 400 Gb/s): in each wave, 1 us after the last,
// every host sends one message on one plane (rotating) to a random peer, pinned to one
// hashed uplink of its plane (an ECMP-routed QP), of 256 KiB to 4 MiB (4,096 flows). Completions come one by one
// at distinct instants and each changes the rates of the few flows on its path: the
// incremental recomputation of a RoCE training step. One op is the whole run.
func BenchmarkRoCEWaves1k(b *testing.B) {
	const hosts, waves = 1024, 4
	c := newClos(hosts, 8, 32, 16, 500*sim.Nanosecond)
	caps := make([]float64, c.numLinks())
	for i := range caps {
		caps[i] = 400e9
	}
	b.ReportAllocs()
	var st Stats
	for b.Loop() {
		s := sim.New(1)
		n, err := New(s, caps, Config{})
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(11, 12))
		for w := range waves {
			at := sim.Time(w) * sim.Microsecond
			for src := range hosts {
				for p := (src + w) % c.P; p < c.P; p += c.P {
					dst := rng.IntN(hosts - 1)
					if dst >= src {
						dst++
					}
					ts, td := src/c.d, dst/c.d
					links := []int32{c.hostUp(p, src), c.hostDown(p, dst)}
					if ts != td {
						j := rng.IntN(c.u)
						links = []int32{c.hostUp(p, src), c.t0Up(p, ts, j), c.t1Down(p, j, td), c.hostDown(p, dst)}
					}
					bytes := int64(256<<10) << rng.IntN(5)
					if _, err := n.AddFlow(at, Flow{Src: src, Dst: dst, Bytes: bytes, Paths: []Path{{Links: links, Weight: 1}}}); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
		if err := s.Run(sim.MaxTime); err != nil {
			b.Fatal(err)
		}
		st = n.Stats()
	}
	b.ReportMetric(float64(st.Recomputes), "recomputes")
	b.ReportMetric(float64(st.FullRecomputes), "full")
}
