package training

import (
	"fmt"
	"strings"
)

// Coord is a rank's position in the parallelism grid.
type Coord struct {
	TP int // position in the tensor-parallel group, 0 to TP-1
	DP int // data-parallel replica, 0 to DP-1
	PP int // pipeline stage, 0 to PP-1
	CP int // position in the context-parallel group, 0 to CP-1

	hasCP bool // the grid has a context-parallel dimension (cp > 1): String shows it
}

// String formats the coordinate as "tp=1 dp=3 pp=0", or "tp=1 cp=2 dp=3 pp=0" when the
// grid has context parallelism.
func (c Coord) String() string {
	if c.hasCP {
		return fmt.Sprintf("tp=%d cp=%d dp=%d pp=%d", c.TP, c.CP, c.DP, c.PP)
	}
	return fmt.Sprintf("tp=%d dp=%d pp=%d", c.TP, c.DP, c.PP)
}

// Placement maps ranks to fabric hosts: rank r runs on host r (the host index is the GPU index
// in the fabric, so hosts r/G share scale-up domain r/G), and the plan's Order decides which
// grid coordinates consecutive ranks take. With the default order tp,dp,pp and TP <= G each
// tensor-parallel group sits inside one NVLink domain; DP and PP groups cross domains and use
// the network.
type Placement struct {
	World  int          // ranks = TP x CP x DP x PP
	Size   [NumDims]int // group size per dimension (by Dim)
	Order  [NumDims]Dim // innermost first
	Domain int          // G, GPUs per scale-up domain
	EP     int          // expert-parallel group size (divides Size[DimDP])
	stride [NumDims]int // rank distance between neighbours along each dimension
}

// NewPlacement lays out a resolved plan (Plan.Resolve) with scale-up domains of domain GPUs
// (plan.Domain, when set, wins). Errors: an unresolved plan (a size < 1 or a bad order), a
// domain < 1.
func NewPlacement(p Plan, domain int) (*Placement, error) {
	if p.Domain > 0 {
		domain = p.Domain
	}
	if domain < 1 {
		return nil, errorf("plan.domain", "%d: want GPUs per scale-up domain >= 1", domain)
	}
	cp := max(p.CP, 1)
	if p.TP < 1 || p.DP < 1 || p.PP < 1 || p.EP < 1 || p.DP%p.EP != 0 {
		return nil, errorf("plan", "tp=%d dp=%d pp=%d ep=%d: resolve the plan first (Plan.Resolve)", p.TP, p.DP, p.PP, p.EP)
	}
	order, err := ParseOrder(p.Order)
	if err != nil {
		return nil, errorf("plan.order", "%s", err)
	}
	pl := &Placement{World: p.TP * cp * p.DP * p.PP, Order: order, Domain: domain, EP: p.EP}
	pl.Size[DimTP], pl.Size[DimDP], pl.Size[DimPP], pl.Size[DimCP] = p.TP, p.DP, p.PP, cp
	s := 1
	for _, d := range order {
		pl.stride[d] = s
		s *= pl.Size[d]
	}
	return pl, nil
}

// Coord returns rank r's grid coordinates (0 <= r < World).
func (pl *Placement) Coord(r int) Coord {
	c := func(d Dim) int { return r / pl.stride[d] % pl.Size[d] }
	return Coord{TP: c(DimTP), DP: c(DimDP), PP: c(DimPP), CP: c(DimCP), hasCP: pl.Size[DimCP] > 1}
}

// Rank returns the rank at coordinates c (each in range).
func (pl *Placement) Rank(c Coord) int {
	return c.TP*pl.stride[DimTP] + c.DP*pl.stride[DimDP] + c.PP*pl.stride[DimPP] + c.CP*pl.stride[DimCP]
}

// Host returns the fabric host of rank r: r itself.
func (pl *Placement) Host(r int) int { return r }

// Group returns the ranks of r's group along dimension d, in coordinate order (member i has
// coordinate i along d).
func (pl *Placement) Group(d Dim, r int) []int {
	base := r - (r/pl.stride[d]%pl.Size[d])*pl.stride[d]
	out := make([]int, pl.Size[d])
	for i := range out {
		out[i] = base + i*pl.stride[d]
	}
	return out
}

// EPGroup returns r's expert-parallel group: the EP data-parallel ranks with DP coordinates
// EP x floor(dp / EP) ... + EP-1 and r's TP and PP coordinates.
func (pl *Placement) EPGroup(r int) []int {
	c := pl.Coord(r)
	first := c.DP / pl.EP * pl.EP
	out := make([]int, pl.EP)
	for i := range out {
		c.DP = first + i
		out[i] = pl.Rank(c)
	}
	return out
}

// ExpertDPGroup returns the ranks that hold the same experts as r (DP coordinates congruent
// to r's modulo EP), over which expert gradients are reduced: DP/EP ranks.
func (pl *Placement) ExpertDPGroup(r int) []int {
	c := pl.Coord(r)
	n := pl.Size[DimDP] / pl.EP
	out := make([]int, n)
	first := c.DP % pl.EP
	for i := range out {
		c.DP = first + i*pl.EP
		out[i] = pl.Rank(c)
	}
	return out
}

// Domains returns how many scale-up domains the ranks span (1: all inside one NVLink domain).
func (pl *Placement) Domains(ranks []int) int {
	seen := map[int]bool{}
	for _, r := range ranks {
		seen[pl.Host(r)/pl.Domain] = true
	}
	return len(seen)
}

// fmtRanks prints a group compactly: all members up to 4, else the first two, "..." and the
// last, with the stride when it is constant.
func fmtRanks(g []int) string {
	if len(g) <= 4 {
		s := make([]string, len(g))
		for i, r := range g {
			s[i] = fmt.Sprint(r)
		}
		return "[" + strings.Join(s, " ") + "]"
	}
	return fmt.Sprintf("[%d %d ... %d]", g[0], g[1], g[len(g)-1])
}

// String describes the placement compactly: the grid, the order and the domain size, then one
// line per dimension (and expert parallelism) with the group count and size, the first two
// groups, the stride between members, and how many groups cross scale-up domains:
//
//	1024 GPUs = tp 8 x dp 32 x pp 4, order tp,dp,pp (innermost first), scale-up domains of 8 GPUs (128 domains)
//	  tp: 128 groups of 8, stride 1: [0 1 ... 7] [8 9 ... 15] ...; none crosses a domain
//	  dp: 32 groups of 32, stride 8: [0 8 ... 248] [1 9 ... 249] ...; all cross domains (32 domains each)
//	  pp: 256 groups of 4, stride 256: [0 256 512 768] [1 257 513 769] ...; all cross domains (4 domains each)
func (pl *Placement) String() string {
	var b strings.Builder
	var ord []string
	for _, d := range pl.Order {
		if d != DimCP || pl.Size[DimCP] > 1 {
			ord = append(ord, d.String())
		}
	}
	grid := fmt.Sprintf("tp %d x dp %d x pp %d", pl.Size[DimTP], pl.Size[DimDP], pl.Size[DimPP])
	if pl.Size[DimCP] > 1 {
		grid = fmt.Sprintf("tp %d x cp %d x dp %d x pp %d", pl.Size[DimTP], pl.Size[DimCP], pl.Size[DimDP], pl.Size[DimPP])
	}
	fmt.Fprintf(&b, "%d GPUs = %s, order %s (innermost first), scale-up domains of %d GPUs (%d domains)",
		pl.World, grid, strings.Join(ord, ","), pl.Domain, (pl.World+pl.Domain-1)/pl.Domain)
	line := func(name string, groups [][]int, stride int) {
		if len(groups) == 0 || len(groups[0]) < 2 {
			fmt.Fprintf(&b, "\n  %s: size 1 (no communication)", name)
			return
		}
		cross, most := 0, 0
		for _, g := range groups {
			if n := pl.Domains(g); n > 1 {
				cross++
				most = max(most, n)
			}
		}
		ex := fmtRanks(groups[0])
		if len(groups) > 1 {
			ex += " " + fmtRanks(groups[1])
		}
		if len(groups) > 2 {
			ex += " ..."
		}
		where := "none crosses a domain"
		switch {
		case cross == len(groups):
			where = fmt.Sprintf("all cross domains (up to %d domains each)", most)
		case cross > 0:
			where = fmt.Sprintf("%d cross domains (up to %d domains each)", cross, most)
		}
		fmt.Fprintf(&b, "\n  %s: %d groups of %d, stride %d: %s; %s", name, len(groups), len(groups[0]), stride, ex, where)
	}
	for _, d := range []Dim{DimTP, DimCP, DimDP, DimPP} {
		if d == DimCP && pl.Size[DimCP] == 1 {
			continue
		}
		line(d.String(), pl.groups(func(r int) []int { return pl.Group(d, r) }), pl.stride[d])
	}
	if pl.EP > 1 {
		line("ep", pl.groups(pl.EPGroup), pl.stride[DimDP])
		if pl.Size[DimDP]/pl.EP > 1 {
			line("expert dp", pl.groups(pl.ExpertDPGroup), pl.stride[DimDP]*pl.EP)
		}
	}
	return b.String()
}

// groups returns every distinct group that f gives, ordered by first member.
func (pl *Placement) groups(f func(r int) []int) [][]int {
	seen := make([]bool, pl.World)
	var out [][]int
	for r := 0; r < pl.World; r++ {
		if seen[r] {
			continue
		}
		g := f(r)
		for _, x := range g {
			seen[x] = true
		}
		out = append(out, g)
	}
	return out
}
