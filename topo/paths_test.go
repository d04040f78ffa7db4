package topo

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// wires maps every connected port to the port at the other end, built from Links alone: the
// naive reference the walkers below follow.
func wires(l *Layout) map[Endpoint]Endpoint {
	m := make(map[Endpoint]Endpoint, 2*l.NumLinks())
	for _, lk := range l.Links() {
		m[lk.A] = lk.B
		m[lk.B] = lk.A
	}
	return m
}

// walk follows r from host src over w and returns the node it ends at and the egress ports
// (node, port) it used, starting with src's NIC port.
func walk(w map[Endpoint]Endpoint, src int, r Route) (int, []Endpoint, error) {
	at := Endpoint{src, int(r.Plane)}
	used := []Endpoint{at}
	for k := 0; ; k++ {
		far, ok := w[at]
		if !ok {
			return -1, used, fmt.Errorf("hop %d: port %+v is unconnected", k, at)
		}
		if k == int(r.Len) {
			return far.Node, used, nil
		}
		at = Endpoint{far.Node, int(r.Hops[k])}
		used = append(used, at)
	}
}

// pairs returns every ordered host pair of l when there are few, else n random ones.
func pairs(l *Layout, rng *rand.Rand, n int) [][2]int {
	h := l.NumHosts()
	var out [][2]int
	if h*(h-1) <= n {
		for s := 0; s < h; s++ {
			for d := 0; d < h; d++ {
				if s != d {
					out = append(out, [2]int{s, d})
				}
			}
		}
		return out
	}
	for len(out) < n {
		s, d := rng.IntN(h), rng.IntN(h)
		if s != d {
			out = append(out, [2]int{s, d})
		}
	}
	return out
}

// TestPathWalk follows random paths through the links and checks that they arrive at the
// destination, stay in their plane, and have the length of a minimal path.
func TestPathWalk(t *testing.T) {
	for _, tt := range small {
		t.Run(tt.name, func(t *testing.T) {
			l := mustLayout(t, tt.c)
			w := wires(l)
			rng := rand.New(rand.NewPCG(1, 2))
			hops := l.Sizing().MaxSwitchHops
			for _, p := range pairs(l, rng, 3000) {
				n := l.NumPaths(p[0], p[1])
				i := rng.IntN(n)
				r, err := l.Path(p[0], p[1], i)
				if err != nil {
					t.Fatal(err)
				}
				end, used, err := walk(w, p[0], r)
				if err != nil || end != p[1] {
					t.Fatalf("Path(%d, %d, %d) = %v ends at %d: %v", p[0], p[1], i, r.Ports(), end, err)
				}
				if int(r.Plane) != i%tt.c.Planes || int(r.Len) > hops {
					t.Errorf("Path(%d, %d, %d): plane %d, %d hops", p[0], p[1], i, r.Plane, r.Len)
				}
				for _, e := range used[1:] {
					if nd, _ := l.Node(e.Node); nd.Plane != int(r.Plane) {
						t.Errorf("Path(%d, %d, %d) leaves plane %d at %s", p[0], p[1], i, r.Plane, nd.Name)
					}
				}
			}
		})
	}
}

// TestRoutesMatchPaths walks the ECMP tables of Routes along every branch for each pair and
// plane, and checks that the walks reach the destination within MaxSwitchHops and are
// exactly the paths Path enumerates for that plane, which are distinct and NumPaths in all.
func TestRoutesMatchPaths(t *testing.T) {
	for _, tt := range small {
		t.Run(tt.name, func(t *testing.T) {
			l := mustLayout(t, tt.c)
			w := wires(l)
			tables := make([]RouteTable, l.NumNodes())
			for n := range tables {
				var err error
				if tables[n], err = l.Routes(n); err != nil {
					t.Fatal(err)
				}
				for i, e := range tables[n].Entries {
					if e.HostLo >= e.HostHi || (i > 0 && tables[n].Entries[i-1].HostHi > e.HostLo) {
						t.Fatalf("node %s: entries not sorted and disjoint: %+v", l.NodeName(n), tables[n].Entries)
					}
				}
			}
			hops := l.Sizing().MaxSwitchHops
			rng := rand.New(rand.NewPCG(3, 4))
			for _, p := range pairs(l, rng, 400) {
				src, dst := p[0], p[1]
				enumerated := map[Route]bool{}
				for i := 0; i < l.NumPaths(src, dst); i++ {
					r, err := l.Path(src, dst, i)
					if err != nil {
						t.Fatal(err)
					}
					if enumerated[r] {
						t.Fatalf("Path(%d, %d, %d) = %v repeats", src, dst, i, r.Ports())
					}
					enumerated[r] = true
				}
				walked := map[Route]bool{}
				for plane, up := range tables[src].Up {
					var dfs func(at Endpoint, r Route)
					dfs = func(at Endpoint, r Route) {
						far := w[at]
						if far.Node == dst {
							walked[r] = true
							return
						}
						if int(r.Len) == hops || far.Node < l.NumHosts() {
							t.Fatalf("%d -> %d plane %d: ECMP walk %v strays to %s", src, dst, plane, r.Ports(), l.NodeName(far.Node))
						}
						tb := tables[far.Node]
						for _, port := range tb.Lookup(int32(dst)) {
							next := r
							next.Hops[next.Len] = port
							next.Len++
							dfs(Endpoint{far.Node, int(port)}, next)
						}
					}
					dfs(Endpoint{src, int(up)}, Route{Plane: uint8(plane)})
				}
				if len(walked) != len(enumerated) {
					t.Fatalf("%d -> %d: %d ECMP walks, %d enumerated paths", src, dst, len(walked), len(enumerated))
				}
				for r := range walked {
					if !enumerated[r] {
						t.Fatalf("%d -> %d: ECMP walk %v in plane %d not enumerated", src, dst, r.Ports(), r.Plane)
					}
				}
			}
		})
	}
}

// TestNumPaths pins the path counts stated in the package documentation.
func TestNumPaths(t *testing.T) {
	g := 100 * sim.Gbps
	// 3-tier radix 8, p0 = p1 = 2: d0 = u0 = d1 = u1 = 4; 2 T0s per pod (8 hosts), 4 pods.
	p2 := mustLayout(t, Clos{Tiers: 3, Planes: 2, Radix: 8, HostLink: g, ParallelLinks: []int{2, 2}})
	// 8 planes radix 512 2-tier: u0 = 256.
	big := mustLayout(t, Clos{Tiers: 2, Planes: 8, Radix: 512, HostLink: g})
	// Radix 64 3-tier: u0 = u1 = 32, 32 hosts per T0, 1,024 per pod.
	r64 := mustLayout(t, Clos{Tiers: 3, Planes: 1, Radix: 64, HostLink: g})
	tests := []struct {
		l        *Layout
		src, dst int
		want     int
	}{
		{p2, 0, 1, 2},                      // same T0: one per plane
		{p2, 0, 4, 2 * 4 * 2},              // same pod: planes x u0 x p0
		{p2, 0, 8, 2 * 4 * 4 * 2 * 2},      // cross pod: planes x u0 x u1 x p1 x p0
		{big, 0, 255, 8},                   // same T0
		{big, 0, 256, 8 * 256},             // planes x u0
		{r64, 0, 32, 32},                   // same pod
		{r64, 0, 1024, 32 * 32},            // cross pod
		{r64, 5, 5, 0},                     // src == dst
		{r64, -1, 5, 0},                    // out of range
		{r64, 0, r64.NumHosts(), 0},        // out of range
		{r64, r64.NumHosts() - 1, 0, 1024}, // last pod to first
	}
	for _, tt := range tests {
		if got := tt.l.NumPaths(tt.src, tt.dst); got != tt.want {
			t.Errorf("NumPaths(%d, %d) = %d, want %d", tt.src, tt.dst, got, tt.want)
		}
	}
}

func TestPathErrors(t *testing.T) {
	l := mustLayout(t, Clos{Tiers: 2, Planes: 2, Radix: 8, HostLink: 100 * sim.Gbps})
	tests := []struct {
		src, dst, i int
		want        string
	}{
		{3, 3, 0, "to itself"},
		{-1, 3, 0, "hosts are 0 to 31"},
		{3, 32, 0, "hosts are 0 to 31"},
		{0, 4, -1, "out of range [0, 8)"},
		{0, 4, 8, "out of range [0, 8)"},
		{0, 1, 2, "out of range [0, 2)"},
	}
	for _, tt := range tests {
		_, err := l.Path(tt.src, tt.dst, tt.i)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Path(%d, %d, %d) error %v, want %q", tt.src, tt.dst, tt.i, err, tt.want)
		}
	}
}

// TestPathNoAlloc checks that Path does not allocate, so it can run per packet.
func TestPathNoAlloc(t *testing.T) {
	l := mustLayout(t, Clos{Tiers: 3, Planes: 8, Radix: 16, HostLink: 100 * sim.Gbps})
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		i++
		if _, err := l.Path(3, 1000, i%l.NumPaths(3, 1000)); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Path allocates %v times per call", allocs)
	}
}

func BenchmarkPath(b *testing.B) {
	l := mustLayout(b, Clos{Tiers: 3, Planes: 8, Radix: 64, HostLink: 800 * sim.Gbps})
	n := l.NumPaths(3, 60000)
	var r Route
	for i := 0; b.Loop(); i++ {
		r, _ = l.Path(3, 60000, i%n)
	}
	_ = r
}
