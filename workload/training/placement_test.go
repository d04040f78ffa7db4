package training

import (
	"reflect"
	"strings"
	"testing"
)

func mustPlacement(t *testing.T, world int, p Plan, domain int) *Placement {
	t.Helper()
	m := Model{Name: "p", Layers: 16, Hidden: 1024, Heads: 16, FFN: 4096, Vocab: 1000, SeqLen: 128, GlobalBatch: 1024}
	if p.EP > 1 {
		m.Experts, m.TopK, m.ExpertFFN = 64, 2, 512
	}
	m, err := m.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	rp, err := p.Resolve(world, m)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := NewPlacement(rp, domain)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// TestPlacement checks coordinates and groups under the default and other orders.
func TestPlacement(t *testing.T) {
	cases := []struct {
		name                   string
		world                  int
		plan                   Plan
		rank                   int
		coord                  Coord
		tp, dp, pp, ep, expert []int
		tpDomains, dpDomains   int
	}{
		{"tp,dp,pp: 32 = 4 x 4 x 2", 32, Plan{TP: 4, PP: 2}, 13, Coord{TP: 1, DP: 3, PP: 0},
			[]int{12, 13, 14, 15}, []int{1, 5, 9, 13}, []int{13, 29}, nil, nil, 1, 2},
		{"pp,dp,tp: TP outermost crosses domains", 32, Plan{TP: 4, PP: 2, Order: "pp,dp,tp"}, 13, Coord{TP: 1, DP: 2, PP: 1},
			[]int{5, 13, 21, 29}, []int{9, 11, 13, 15}, []int{12, 13}, nil, nil, 4, 1},
		{"ep 4 of dp 8", 64, Plan{TP: 2, PP: 4, EP: 4}, 11, Coord{TP: 1, DP: 5, PP: 0},
			[]int{10, 11}, []int{1, 3, 5, 7, 9, 11, 13, 15}, []int{11, 27, 43, 59}, []int{9, 11, 13, 15}, []int{3, 11}, 1, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pl := mustPlacement(t, c.world, c.plan, 8)
			if got := pl.Coord(c.rank); got != c.coord {
				t.Errorf("coord of %d: %v, want %v", c.rank, got, c.coord)
			}
			for r := 0; r < pl.World; r++ {
				if pl.Rank(pl.Coord(r)) != r {
					t.Fatalf("Rank(Coord(%d)) = %d", r, pl.Rank(pl.Coord(r)))
				}
			}
			check := func(what string, got, want []int) {
				if want != nil && !reflect.DeepEqual(got, want) {
					t.Errorf("%s group of %d: %v, want %v", what, c.rank, got, want)
				}
			}
			check("tp", pl.Group(DimTP, c.rank), c.tp)
			check("dp", pl.Group(DimDP, c.rank), c.dp)
			check("pp", pl.Group(DimPP, c.rank), c.pp)
			if c.ep != nil {
				check("ep", pl.EPGroup(c.rank), c.ep)
				check("expert dp", pl.ExpertDPGroup(c.rank), c.expert)
			}
			if got := pl.Domains(pl.Group(DimTP, c.rank)); got != c.tpDomains {
				t.Errorf("tp group spans %d domains, want %d", got, c.tpDomains)
			}
			if got := pl.Domains(pl.Group(DimDP, c.rank)); got != c.dpDomains {
				t.Errorf("dp group spans %d domains, want %d", got, c.dpDomains)
			}
		})
	}
}

// TestPlacementString pins the compact description.
func TestPlacementString(t *testing.T) {
	pl := mustPlacement(t, 1024, Plan{TP: 8, PP: 4}, 8)
	got := pl.String()
	for _, line := range []string{
		"1024 GPUs = tp 8 x dp 32 x pp 4, order tp,dp,pp (innermost first), scale-up domains of 8 GPUs (128 domains)",
		"  tp: 128 groups of 8, stride 1: [0 1 ... 7] [8 9 ... 15] ...; none crosses a domain",
		"  dp: 32 groups of 32, stride 8: [0 8 ... 248] [1 9 ... 249] ...; all cross domains (up to 32 domains each)",
		"  pp: 256 groups of 4, stride 256: [0 256 512 768] [1 257 513 769] ...; all cross domains (up to 4 domains each)",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("placement description lacks %q:\n%s", line, got)
		}
	}
	ep := mustPlacement(t, 64, Plan{TP: 2, PP: 4, EP: 4}, 8).String()
	for _, line := range []string{"  ep: 16 groups of 4, stride 2: [0 2 4 6] [1 3 5 7] ...; none crosses a domain",
		"  expert dp: 32 groups of 2, stride 8: [0 8] [1 9] ...; all cross domains (up to 2 domains each)"} {
		if !strings.Contains(ep, line) {
			t.Errorf("placement description lacks %q:\n%s", line, ep)
		}
	}
}
