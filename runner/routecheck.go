package runner

import (
	"fmt"

	"github.com/lockstepsim/lockstep/topo"
)

// pairRouteError explains why src and dst have no source route (NumPaths 0), or returns nil
// when they have one: either their minimal paths are longer than a source route holds
// (topo.MaxHops switches: a large torus), or there is no path at all (a rail-only fabric
// across rails). sourceRouted says whether the transport needs source routes (MRC, raw
// spray and spread) or forwards by the switches' tables (RoCE, raw ECMP: only "no path at
// all" is an error for it).
func pairRouteError(l topo.Topology, src, dst int, sourceRouted bool) error {
	if src == dst || l.NumPaths(src, dst) > 0 {
		return nil
	}
	links, _, err := l.LinkPath(src, dst, 0, nil)
	if err != nil {
		what := "no path joins them"
		if l.Params().Kind == "rail" {
			what = "they are on different rails of a rail-only fabric, which links only GPUs of one rail (cross-rail traffic needs the spine: rail_only: false)"
		}
		return fmt.Errorf("h%d -> h%d: %s", src, dst, what)
	}
	if !sourceRouted {
		return nil
	}
	return fmt.Errorf("h%d -> h%d: their minimal paths cross %d switches, more than the %d a source route holds, so MRC and raw spray cannot route them on this %s; use run.engine: flow (workloads), a twisted torus (shorter paths), or RoCE / raw ECMP (the switches' tables)",
		src, dst, len(links)-1, topo.MaxHops, l.Params().Kind)
}
