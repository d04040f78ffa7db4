package runner

import (
	"fmt"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/traffic"
	"github.com/lockstepsim/lockstep/transport/nic"
)

// maxSprayRoutes caps the rotation of a spraying flow; beyond it a seeded sample of the plane's
// paths is used.
const maxSprayRoutes = 4096

// pair is one (src, dst) flow of a traffic group with its total rate across planes (0 = use
// the group's load).
type pair struct {
	src, dst int
	rate     sim.Rate
	bytes    int64    // transfer size (transports); 0 = the group's
	start    sim.Time // the flow's own start; 0 = the group's
}

// expandTraffic turns the scenario's traffic groups into per-plane raw flows.
func expandTraffic(sc *scenario.Scenario, l topo.Topology, net *fabric.Network) ([]traffic.Flow, error) {
	c := l.Params()
	var flows []traffic.Flow
	hosts := net.NumHosts()
	for gi := range sc.Traffic {
		g := &sc.Traffic[gi]
		path := fmt.Sprintf("traffic[%d]", gi)
		rng := sim.Stream(sc.Run.Seed, path)
		pairs := groupPairs(g, hosts, rng.Perm)
		var flags fabric.Flags
		if g.ECN {
			flags |= fabric.ECT
		}
		if g.Trimmable {
			flags |= fabric.Trimmable
		}
		// Spread: one link-disjoint route per pair and plane.
		var spread []int
		if g.Path == scenario.PathSpread {
			pp := make([][2]int, len(pairs))
			for i, p := range pairs {
				pp[i] = [2]int{p.src, p.dst}
			}
			cl, ok := l.(*topo.Layout)
			if !ok {
				return nil, fmt.Errorf("%s.path: spread needs a clos topology (link-disjoint routes by edge colouring of the Clos), not %s; use ecmp or spray", path, l.Params().Kind)
			}
			var err error
			if spread, err = cl.SpreadRoutes(0, pp); err != nil {
				return nil, fmt.Errorf("%s.path: spread: %w", path, err)
			}
		}
		for i, p := range pairs {
			for plane := 0; plane < c.Planes; plane++ {
				rate := sim.Rate(float64(c.HostLink) * g.Load)
				switch {
				case p.rate > 0:
					rate = p.rate / sim.Rate(c.Planes)
				case g.Rate > 0:
					rate = g.Rate / sim.Rate(c.Planes)
				}
				if rate <= 0 {
					return nil, fmt.Errorf("%s: flow %d->%d: per-plane rate rounds to 0", path, p.src, p.dst)
				}
				if err := nic.PairRouteError(l, p.src, p.dst, g.Path != scenario.PathECMP); err != nil {
					return nil, fmt.Errorf("%s: %w", path, err)
				}
				f := traffic.Flow{
					Src: int32(p.src), Dst: int32(p.dst), Plane: plane, Rate: rate,
					PacketSize: int32(g.PacketSize), Start: max(g.Start, p.start), Stop: g.Stop,
					SrcPort: uint16(49152 + rng.IntN(16384)), Flags: flags,
				}
				if g.Process == scenario.ProcessPoisson {
					f.Arrivals = traffic.Poisson
				}
				switch g.Path {
				case scenario.PathSpread:
					r, err := l.Path(p.src, p.dst, spread[i]-spread[i]%c.Planes+plane)
					if err != nil {
						return nil, fmt.Errorf("%s: flow %d->%d: %w", path, p.src, p.dst, err)
					}
					f.Mode = traffic.Fixed
					f.Routes = []fabric.Route{topo.FabricRoute(r)}
				case scenario.PathSpray:
					routes, err := planeRoutes(l, p.src, p.dst, plane, rng.IntN)
					if err != nil {
						return nil, fmt.Errorf("%s: flow %d->%d: %w", path, p.src, p.dst, err)
					}
					f.Mode = traffic.Spray
					f.Routes = routes
				}
				flows = append(flows, f)
			}
		}
	}
	return flows, nil
}

// planeRoutes lists the source routes from src to dst in one plane (path indices with that
// plane in the lowest digit), sampled down to maxSprayRoutes, in a seeded random order so
// consecutive packets take unrelated paths.
func planeRoutes(l topo.Topology, src, dst, plane int, intn func(int) int) ([]fabric.Route, error) {
	planes := l.Params().Planes
	perPlane := l.NumPaths(src, dst) / planes
	idx := make([]int, perPlane)
	for j := range idx {
		idx[j] = j
	}
	for j := len(idx) - 1; j > 0; j-- { // Fisher-Yates with the group's stream
		k := intn(j + 1)
		idx[j], idx[k] = idx[k], idx[j]
	}
	if len(idx) > maxSprayRoutes {
		idx = idx[:maxSprayRoutes]
	}
	out := make([]fabric.Route, 0, len(idx))
	for _, j := range idx {
		r, err := l.Path(src, dst, j*planes+plane)
		if err != nil {
			return nil, err
		}
		out = append(out, topo.FabricRoute(r))
	}
	return out, nil
}

// derangement returns a uniformly random permutation of [0, n) with no fixed point, by
// rejection (expected e draws).
func derangement(perm func(int) []int, n int) []int {
	for {
		p := perm(n)
		ok := true
		for i, v := range p {
			if i == v {
				ok = false
				break
			}
		}
		if ok {
			return p
		}
	}
}

// groupPairs expands a traffic group's pattern into (src, dst) pairs; perm draws the
// permutation from the group's stream, so raw and transport runs of one seed see the same one.
func groupPairs(g *scenario.Traffic, hosts int, perm func(int) []int) []pair {
	var pairs []pair
	switch g.Pattern {
	case scenario.PatternPermutation:
		for h, d := range derangement(perm, hosts) {
			pairs = append(pairs, pair{src: h, dst: d})
		}
	case scenario.PatternIncast:
		for _, s := range g.Senders {
			pairs = append(pairs, pair{src: s, dst: *g.Receiver})
		}
	default: // pattern flows or a generated pattern
		for _, f := range g.FlowList() {
			pairs = append(pairs, pair{src: *f.Src, dst: *f.Dst, rate: f.Rate, bytes: int64(f.Bytes), start: f.Start})
		}
	}
	return pairs
}
