package topo

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// permutation returns src -> perm[src] pairs for a random permutation of l's hosts, fixed
// points dropped. shift > 0 gives src -> (src+shift) mod hosts instead.
func permutation(l *Layout, rng *rand.Rand, shift int) [][2]int {
	h := l.NumHosts()
	perm := rng.Perm(h)
	var out [][2]int
	for s := 0; s < h; s++ {
		d := perm[s]
		if shift > 0 {
			d = (s + shift) % h
		}
		if d != s {
			out = append(out, [2]int{s, d})
		}
	}
	return out
}

// TestSpreadRoutes assigns random permutations (and worst-case shifts, where every flow
// leaves its T0 or pod) and walks every route: no directed link may carry two flows.
func TestSpreadRoutes(t *testing.T) {
	g := 100 * sim.Gbps
	tests := []struct {
		name string
		c    Clos
	}{
		{"2t r8", Clos{Tiers: 2, Planes: 2, Radix: 8, HostLink: g}},
		{"2t r8 p2", Clos{Tiers: 2, Planes: 1, Radix: 8, HostLink: g, ParallelLinks: []int{2}}},
		{"2t r64", Clos{Tiers: 2, Planes: 1, Radix: 64, HostLink: g}},
		{"2t r64 p4 partial", Clos{Tiers: 2, Planes: 1, Radix: 64, Hosts: 500, HostLink: g, ParallelLinks: []int{4}}},
		{"3t k=4", Clos{Tiers: 3, Planes: 1, Radix: 4, HostLink: g}},
		{"3t r8", Clos{Tiers: 3, Planes: 2, Radix: 8, HostLink: g}},
		{"3t r8 p2 p2", Clos{Tiers: 3, Planes: 1, Radix: 8, HostLink: g, ParallelLinks: []int{2, 2}}},
		{"3t r8 partial", Clos{Tiers: 3, Planes: 1, Radix: 8, Hosts: 37, HostLink: g}},
		{"3t r12 p2 p3 partial", Clos{Tiers: 3, Planes: 3, Radix: 12, Hosts: 50, HostLink: g, ParallelLinks: []int{2, 3}}},
		{"3t r16", Clos{Tiers: 3, Planes: 1, Radix: 16, HostLink: g}},
		{"3t r16 p2 p2", Clos{Tiers: 3, Planes: 1, Radix: 16, HostLink: g, ParallelLinks: []int{2, 2}}},
		// T1 undersubscribed (2 down : 6 up) is still conflict-free.
		{"3t r8 T1 1:3", Clos{Tiers: 3, Planes: 1, Radix: 8, HostLink: g, Oversubscription: []float64{1, 1.0 / 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustLayout(t, tt.c)
			w := wires(l)
			d := l.Dims()
			rng := rand.New(rand.NewPCG(5, 6))
			shifts := []int{0, 0, 0, 0, d.T0Down, d.T0Down * d.T0PerPod, l.NumHosts() / 2}
			for k, shift := range shifts {
				ps := permutation(l, rng, shift)
				plane := k % d.Planes
				idx, err := l.SpreadRoutes(plane, ps)
				if err != nil {
					t.Fatalf("shift %d: %v", shift, err)
				}
				owner := map[Endpoint]int{}
				for i, p := range ps {
					r, err := l.Path(p[0], p[1], idx[i])
					if err != nil {
						t.Fatal(err)
					}
					if int(r.Plane) != plane {
						t.Fatalf("pair %d: plane %d, want %d", i, r.Plane, plane)
					}
					end, used, err := walk(w, p[0], r)
					if err != nil || end != p[1] {
						t.Fatalf("pair %d %v: route %v ends at %d: %v", i, p, r.Ports(), end, err)
					}
					for _, e := range used {
						if j, dup := owner[e]; dup {
							t.Fatalf("shift %d: pairs %d %v and %d %v both leave %s", shift, j, ps[j], i, p, l.PortName(e.Node, e.Port))
						}
						owner[e] = i
					}
				}
			}
		})
	}
}

func TestSpreadRoutesErrors(t *testing.T) {
	g := 100 * sim.Gbps
	l := mustLayout(t, Clos{Tiers: 2, Planes: 2, Radix: 8, HostLink: g})
	over := mustLayout(t, Clos{Tiers: 2, Planes: 1, Radix: 8, HostLink: g, Oversubscription: []float64{3}})
	over3 := mustLayout(t, Clos{Tiers: 3, Planes: 1, Radix: 8, HostLink: g, Oversubscription: []float64{1, 3}})
	// over: d0 = 6, u0 = 2; T0 0 hosts 0-5 all sending to T0 1.
	var out6 [][2]int
	for h := 0; h < 6; h++ {
		out6 = append(out6, [2]int{h, 6 + h})
	}
	// over3: d1 = 6, u1 = 2, 6 T0s of 4 hosts per pod; pod 0 sends 3 flows through T1 0 to pod 1.
	var pod3 [][2]int
	for t0 := 0; t0 < 3; t0++ {
		pod3 = append(pod3, [2]int{t0 * 4, 24 + t0*4})
	}
	tests := []struct {
		l     *Layout
		plane int
		pairs [][2]int
		want  string
	}{
		{l, 2, [][2]int{{0, 1}}, "plane 2 out of range [0, 2)"},
		{l, -1, nil, "plane -1"},
		{l, 0, [][2]int{{0, 1}, {3, 3}}, "pair 1 (3 -> 3): source equals destination"},
		{l, 0, [][2]int{{0, 32}}, "hosts are 0 to 31"},
		{l, 0, [][2]int{{0, 5}, {0, 6}}, "host 0 sends in pairs 0 and 1"},
		{l, 0, [][2]int{{0, 5}, {1, 5}}, "host 5 receives in pairs 0 and 1"},
		{over, 0, out6, "6 flows leaving T0 p0.t0-0 but it has 2 uplinks: oversubscribed"},
		{over3, 0, pod3, "3 flows leave pod 0 through T1 p0.t1-0 but it has 2 uplinks"},
	}
	for _, tt := range tests {
		_, err := tt.l.SpreadRoutes(tt.plane, tt.pairs)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("SpreadRoutes(%d, %v) error %v, want %q", tt.plane, tt.pairs, err, tt.want)
		}
	}
	// Empty input and same-T0 pairs are fine.
	if idx, err := l.SpreadRoutes(1, [][2]int{{0, 1}, {1, 0}}); err != nil || idx[0] != 1 || idx[1] != 1 {
		t.Errorf("same-T0 pairs: %v, %v; want [1 1]", idx, err)
	}
}

// BenchmarkSpreadRoutes colours a full random permutation of one plane of the largest 2-tier
// Clos (radix 512: 131,072 hosts, 256 colours).
func BenchmarkSpreadRoutes(b *testing.B) {
	l := mustLayout(b, Clos{Tiers: 2, Planes: 1, Radix: 512, HostLink: 100 * sim.Gbps})
	ps := permutation(l, rand.New(rand.NewPCG(7, 8)), 0)
	for b.Loop() {
		if _, err := l.SpreadRoutes(0, ps); err != nil {
			b.Fatal(err)
		}
	}
}
