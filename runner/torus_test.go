package runner

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
)

// torusA2A is an all-to-all of 4 MiB per chip on a 4x4x8 torus of 100G links, twisted (%v) or
// not, at flow level under MRC (every flow sprayed over up to 128 of its minimal paths).
const torusA2A = `
name: torus-a2a
topology:
  torus: {dims: 4x4x8, twisted: %v, link_rate: 100G}
transport: {kind: mrc}
workload:
  collectives: [{op: all_to_all, bytes: 4MiB}]
run: {engine: flow}
`

// All-to-all on a twisted 4x4x8 torus is faster than on a regular one [issue 8; Jouppi et
// al., "TPU v4", ISCA 2023, §6 (Fig. 9): 1.63x all-to-all throughput for 4x4x8 twisted]: the
// twist halves the long dimension's way round (diameter 6 against 8) and doubles the links
// across its halving cut (64 against 32), and all-to-all is bisection-bound. Measured here at
// flow level: 1.74x.
//
// Packet level is left out: the regular torus's farthest chips are 2+2+4 = 8 hops and 9
// routers apart, beyond the 8 a source route holds (topo.MaxHops), so NumPaths is 0 for them
// and MRC has no path to spray over (checked below); only the flow engine, which follows
// LinkPath at any length, runs both. (The twisted torus, diameter 6, runs at packet level:
// 4 MiB took about 870 us and 8.5 s of wall time with the pairwise schedule's 127 sequential
// steps; the default is now grouped, every pair at once at both levels.)
func TestTorusTwistedAllToAll(t *testing.T) {
	times := map[bool]float64{}
	for _, twisted := range []bool{false, true} {
		start := time.Now()
		res := mustRun(t, fmt.Sprintf(torusA2A, twisted))
		r := res.Summary.Collectives[0]
		if res.Summary.Engine != "flow" || r.Algorithm != "grouped" || r.Ranks != 128 {
			t.Fatalf("twisted %v: engine %q, %s on %d ranks; want flow, grouped, 128", twisted, res.Summary.Engine, r.Algorithm, r.Ranks)
		}
		if want := int64(16256); res.Summary.Flows != int(want) {
			t.Errorf("twisted %v: %d flows; want every ordered pair, %d", twisted, res.Summary.Flows, want)
		}
		t.Logf("4x4x8 twisted %-5v: %.1f us, algbw %.2f GB/s, busbw %.2f GB/s (wall %v)", twisted, r.TimeUs, r.AlgBWGBps, r.BusBWGBps, time.Since(start).Round(time.Millisecond))
		times[twisted] = r.TimeUs
	}
	ratio := times[false] / times[true]
	t.Logf("twisted / regular all-to-all throughput: %.2fx (TPU v4 paper: 1.63x)", ratio)
	if ratio <= 1 {
		t.Errorf("twisted all-to-all %.1f us is not faster than regular %.1f us", times[true], times[false])
	}

	// Why packet level is skipped: no source route joins the regular torus's farthest chips.
	sc, err := scenario.Parse([]byte(fmt.Sprintf(torusA2A, false)))
	if err != nil {
		t.Fatal(err)
	}
	l, err := sc.Topology.Describe()
	if err != nil {
		t.Fatal(err)
	}
	far := 2 + 2*4 + 4*16 // (2, 2, 4) from chip 0
	if n := l.NumPaths(0, far); n != 0 {
		t.Errorf("regular 4x4x8: NumPaths(0, %d) = %d; the comment above assumes 0 (9 routers > MaxHops %d)", far, n, topo.MaxHops)
	}
}

// collRouter finds paths the topology's source routes cannot hold, and counts them right: on
// a regular 4x4x8 torus the pair (0,0,0) -> (2,2,4) has 8!/(2!2!4!) x 2^3 = 3,360 minimal
// paths (every dimension is at half its ring, so both directions are minimal), which a naive
// depth-first enumeration over the links confirms; every pair the topology does count
// (NumPaths > 0) gets the same count from collRouter's own search, on tori and a rail; and
// the sprayed paths of a long pair are distinct minimal walks from src to dst.
func TestCollRouterLongPaths(t *testing.T) {
	for _, c := range []struct {
		name, topo string
		long       bool // has pairs beyond MaxHops
	}{
		{"torus-4x4x8", "torus: {dims: 4x4x8, link_rate: 100G}", true},
		{"twisted-4x4x8", "torus: {dims: 4x4x8, twisted: true, link_rate: 100G}", false},
		{"torus-3x4x5", "torus: {dims: 3x4x5, link_rate: 100G}", false},
		{"rail-dual-plane", "rail: {servers: 8, gpus_per_server: 4, planes: 2, radix: 8, host_link: 100G}", false},
		{"clos3-2planes", "clos: {tiers: 3, planes: 2, radix: 4, host_link: 100G}", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, err := scenario.Parse([]byte("topology: {" + c.topo + "}\nworkload: {collectives: [{op: all_reduce, bytes: 1MiB}]}\n"))
			if err != nil {
				t.Fatal(err)
			}
			l, err := sc.Topology.Describe()
			if err != nil {
				t.Fatal(err)
			}
			base, _ := newFlowRouter(l, transport.FlowModel{Spray: true}, nil, 1, 0, 0, 0)
			r := &collRouter{flowRouter: base}
			hosts, planes := l.NumHosts(), l.Params().Planes
			long := 0
			for src := 0; src < hosts; src++ {
				for dst := 0; dst < hosts; dst++ {
					if src == dst {
						continue
					}
					n := l.NumPaths(src, dst)
					if n == 0 {
						long++
						continue
					}
					if got := r.perPlane(src, dst) * planes; got != n {
						t.Fatalf("%d -> %d: collRouter counts %d paths, the topology %d", src, dst, got, n)
					}
				}
			}
			if (long > 0) != c.long {
				t.Fatalf("%d pairs beyond MaxHops; want some: %v", long, c.long)
			}
			if !c.long {
				return
			}
			far := 2 + 2*4 + 4*16
			if got, naive := r.perPlane(0, far), naivePaths(l, 0, far); got != 3360 || naive != 3360 {
				t.Errorf("0 -> %d: collRouter %d paths, naive %d; want 3360", far, got, naive)
			}
			paths, lat, err := r.Paths(0, far, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(paths) != transport.DefaultFlowPaths || lat != 8*500*sim.Nanosecond {
				t.Errorf("0 -> %d: %d paths, latency %v; want %d sprayed, 4us (8 hops of 500ns)", far, len(paths), lat, transport.DefaultFlowPaths)
			}
			links := l.Links()
			seen := map[string]bool{}
			for _, p := range paths {
				if len(p.Links) != 10 {
					t.Fatalf("path of %d links; want 10 (chip, 8 hops, chip)", len(p.Links))
				}
				at := 0
				for _, d := range p.Links {
					k := links[d/2]
					from, to := k.A.Node, k.B.Node
					if d%2 == 1 {
						from, to = to, from
					}
					if from != at {
						t.Fatalf("path %v leaves node %d, not %d", p.Links, from, at)
					}
					at = to
				}
				if at != far {
					t.Fatalf("path %v ends at node %d, not %d", p.Links, at, far)
				}
				key := fmt.Sprint(p.Links)
				if seen[key] {
					t.Fatalf("path %v sprayed twice", p.Links)
				}
				seen[key] = true
			}
		})
	}
}

// naivePaths counts the minimal paths from host src to host dst by depth-first enumeration of
// every walk of the minimal length through switches.
func naivePaths(l topo.Topology, src, dst int) int {
	nbr := make([][]int, l.NumNodes())
	for _, k := range l.Links() {
		nbr[k.A.Node] = append(nbr[k.A.Node], k.B.Node)
		nbr[k.B.Node] = append(nbr[k.B.Node], k.A.Node)
	}
	var walk func(x, left int) int
	walk = func(x, left int) int {
		if x == dst {
			return 1
		}
		if left == 0 || x < l.NumHosts() && x != src {
			return 0
		}
		n := 0
		for _, y := range nbr[x] {
			n += walk(y, left-1)
		}
		return n
	}
	for length := 1; ; length++ {
		if n := walk(src, length); n > 0 {
			return n
		}
	}
}
