package flow

import (
	"fmt"

	"github.com/lockstepsim/lockstep/workload/collective"
)

// Folding: exact symmetric replicas simulated once.
//
// A Fold is a permutation pi of the hosts, of order K, under which the whole run is
// invariant: pi maps the fabric onto itself (a link l onto a link pi(l) of the same capacity,
// the route of every flow a -> b onto the route of pi(a) -> pi(b), latencies equal), and the
// workload's flows at every instant onto flows of the same bytes, start and cap (DP replicas
// of a training job, shifted by whole switches, doing the same thing at the same time). The
// group <pi> acts freely: every host orbit and every link orbit has exactly K members. The
// max-min allocation is unique, so it is invariant too: every flow runs at the rate of its
// image, every link carries the load of its image. Progressive filling then proceeds
// identically on the quotient: one representative flow per flow orbit (the one whose
// source is the least host of its orbit: Rep), every link replaced by the least link of its
// orbit (Link), of the same capacity. A link class l carries, in the quotient, the
// representatives of exactly the flows crossing l in the full network (orbits are free:
// flow f on l' = pi^i(l) has the representative pi^-i(f), which crosses l), with the same
// coefficients and rates, so the saturation levels, freezes, completions and deliveries are
// the same instants (the sums over a link's flows are of the same terms, in another order:
// equal up to floating-point rounding, 1e-15 relative, below the picosecond rounding of
// completion times in practice). A collective on a communicator of representative hosts
// only stands for its K images (the caller does not launch those); a collective on a
// communicator that pi maps onto itself (a DP ring across the replicas) adds only its
// representative flows, which is exact when each of its phases' demand sets is invariant
// under pi (CheckFold verifies it before a run).
//
// The caller proves the fabric part (runner: a Clos's bundled MRC routes, hosts shifted by
// whole T0s) and the workload part (training: no stragglers, replicas' streams mapping onto
// streams); CheckFold proves the collective part.
type Fold struct {
	// Host is pi: Host[h] is the image of host h. A permutation of [0, hosts) of order K
	// whose every orbit has K members.
	Host []int32
	// Link maps every directed link of the Net to the least link of its orbit (the class the
	// quotient simulates), -1 for a link no route may use (routing across it is an error).
	Link []int32
	// K is the order of pi, >= 2.
	K   int
	rep []bool // by host: the least host of its orbit
}

// NewFold returns the fold of host permutation host and link permutation link (link[l] the
// image of directed link l under pi, -1 for a link no route may use), both of order k with
// every orbit of exactly k members; each link's class is the least link of its orbit.
// Errors: name the first host or link out of range or with another orbit size.
func NewFold(host []int32, link []int32, k int) (*Fold, error) {
	if k < 2 {
		return nil, fmt.Errorf("flow: fold of order %d: want >= 2", k)
	}
	for h, x := range host {
		if x < 0 {
			return nil, fmt.Errorf("flow: fold: host %d has no image", h)
		}
	}
	f := &Fold{Host: host, K: k, rep: make([]bool, len(host)), Link: make([]int32, len(link))}
	err := orbits(host, k, func(first, x int) { f.rep[x] = x == first }, "host")
	if err != nil {
		return nil, err
	}
	err = orbits(link, k, func(first, x int) { f.Link[x] = int32(first) }, "link")
	if err != nil {
		return nil, err
	}
	return f, nil
}

// orbits walks the orbits of permutation p (entries -1 are fixed points left out, each
// mapped to -1 by visit's caller) and calls visit(first, x) for each member x of the orbit
// whose least member is first. Errors: an entry out of range, an orbit of another size
// than k.
func orbits(p []int32, k int, visit func(first, x int), what string) error {
	n := len(p)
	seen := make([]bool, n)
	for h := range p {
		if seen[h] {
			continue
		}
		if p[h] < 0 {
			seen[h] = true
			visit(-1, h)
			continue
		}
		x, size := h, 0
		for !seen[x] {
			seen[x] = true
			visit(h, x)
			size++
			if x = int(p[x]); x < 0 || x >= n {
				return fmt.Errorf("flow: fold: %s %d maps out of range (%d)", what, h, n)
			}
		}
		if x != h || size != k {
			return fmt.Errorf("flow: fold: %s %d has an orbit of %d, want %d", what, h, size, k)
		}
	}
	return nil
}

// Rep reports whether host h represents its orbit (its least host).
func (f *Fold) Rep(h int) bool { return f.rep[h] }

// SetFold makes the collectives simulate one representative per orbit of fold (nil: every
// flow). Call it before the first Launch. Errors: collectives already launched, a Reroutable
// or TailLoss configuration (faults break the symmetry).
func (c *Collectives) SetFold(fold *Fold) error {
	if c.launched > 0 {
		return fmt.Errorf("flow: SetFold after %d launches", c.launched)
	}
	if fold != nil && (c.cfg.Reroutable || c.cfg.TailLoss != nil) {
		return fmt.Errorf("flow: SetFold with Reroutable or TailLoss (faults): not symmetric")
	}
	c.fold = fold
	return nil
}

// foldKind classifies a communicator under the fold: every host a representative (foldAll),
// none (foldNone), or some (foldMixed: the communicator must be invariant, and only the
// representative flows are added).
const (
	foldOff = iota // no fold
	foldAll
	foldNone
	foldMixed
)

func (c *Collectives) foldKindOf(hosts func(int) int, n int) uint8 {
	if c.fold == nil {
		return foldOff
	}
	reps := 0
	for r := 0; r < n; r++ {
		if c.fold.rep[hosts(r)] {
			reps++
		}
	}
	switch reps {
	case n:
		return foldAll
	case 0:
		return foldNone
	}
	return foldMixed
}

// CheckFold reports whether spec on comm, a communicator with some hosts not representatives
// of fold, is invariant under the fold, so that adding only its flows from representative
// hosts is exact: pi maps comm's hosts onto themselves, and in every phase of the expansion
// it maps each demand (ranks, bytes, trees) onto a demand, and each latency group whose
// latency is a group mean either onto itself or is made of representative flows only or of
// other flows only. A communicator of representatives only, or of none, needs no check.
// Errors: why not (the first failure), or an invalid spec.
func (c *Collectives) CheckFold(fold *Fold, spec collective.Spec, comm collective.Comm) error {
	sp, err := spec.Resolve()
	if err != nil {
		return err
	}
	n := comm.Size()
	if n != sp.Ranks {
		return fmt.Errorf("flow: fold check: communicator of %d ranks, spec of %d", n, sp.Ranks)
	}
	// rho: comm rank -> comm rank of pi(host).
	at := make(map[int32]int32, n)
	for r := 0; r < n; r++ {
		at[int32(comm.Host(r))] = int32(r)
	}
	rho := make([]int32, n)
	reps := 0
	for r := 0; r < n; r++ {
		h := comm.Host(r)
		if fold.rep[h] {
			reps++
		}
		j, ok := at[fold.Host[h]]
		if !ok {
			return fmt.Errorf("flow: fold: host %d of the communicator maps to host %d, outside it", h, fold.Host[h])
		}
		rho[r] = j
	}
	if reps == 0 || reps == n {
		return nil
	}
	in := &coll{spec: sp, comm: comm}
	saved := c.dem
	c.dem = nil
	defer func() { c.dem = saved }()
	type pair struct{ a, b int32 }
	for ph := 0; ph < numPhases(sp); ph++ {
		p := c.expand(in, ph)
		if p.tree {
			c.mergeDemands()
		}
		idx := make(map[pair]int, len(c.dem))
		for i, d := range c.dem {
			k := pair{d.src, d.dst}
			if _, dup := idx[k]; dup {
				return fmt.Errorf("flow: fold: %s phase %d has two flows %d -> %d", sp.Op, ph, d.src, d.dst)
			}
			idx[k] = i
		}
		const repF, otherF, movedF = 1, 2, 4
		groups := map[int32]uint8{}
		for _, d := range c.dem {
			j, ok := idx[pair{rho[d.src], rho[d.dst]}]
			if !ok {
				return fmt.Errorf("flow: fold: %s phase %d: flow %d -> %d has no image (%d -> %d)", sp.Op, ph, d.src, d.dst, rho[d.src], rho[d.dst])
			}
			e := c.dem[j]
			if e.b != d.b || e.trees != d.trees {
				return fmt.Errorf("flow: fold: %s phase %d: flow %d -> %d (%v bytes) maps onto %d -> %d (%v bytes)", sp.Op, ph, d.src, d.dst, d.b, e.src, e.dst, e.b)
			}
			g := groups[d.group]
			if fold.rep[comm.Host(int(d.src))] {
				g |= repF
			} else {
				g |= otherF
			}
			if e.group != d.group {
				g |= movedF
			}
			groups[d.group] = g
		}
		if p.mean {
			for id, g := range groups {
				if g&(repF|otherF) == repF|otherF && g&movedF != 0 {
					return fmt.Errorf("flow: fold: %s phase %d: latency group %d mixes representative and other flows and is not invariant", sp.Op, ph, id)
				}
			}
		}
	}
	return nil
}

// foldDemands keeps the demands of the phase just expanded whose source host represents its
// orbit (a mixed communicator under the fold).
func (c *Collectives) foldDemands(in *coll) {
	out := c.dem[:0]
	for _, d := range c.dem {
		if c.fold.rep[in.comm.Host(int(d.src))] {
			out = append(out, d)
		}
	}
	c.dem = out
}

// foldLinks returns links mapped to their classes (into c.lfold), or an error naming a link
// outside every class.
func (c *Collectives) foldLinks(links []int32) ([]int32, error) {
	c.lfold = c.lfold[:0]
	for _, l := range links {
		if l < 0 || int(l) >= len(c.fold.Link) || c.fold.Link[l] < 0 {
			return nil, fmt.Errorf("flow: fold: route crosses link %d, which has no class", l)
		}
		c.lfold = append(c.lfold, c.fold.Link[l])
	}
	return c.lfold, nil
}
