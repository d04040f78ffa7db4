package topo

import (
	"strconv"
)

// hostHops is the naive reference for hop statistics: a breadth-first search from every host.
// It returns the largest and the mean fabric hops (host-to-host links minus the two host
// links) over ordered host pairs the fabric connects, self pairs included, and the number of
// connected ordered pairs. O(hosts x (nodes + links)).
func (g *Graph) hostHops() (diameter int, mean float64, pairs int64) {
	st := g.s()
	dist := make([]int32, g.nodes)
	order := make([]int32, 0, g.nodes)
	var sum int64
	for src := range g.hosts {
		order = st.bfsTo(src, g.hosts, dist, order)
		for h := range g.hosts {
			d := int(dist[h])
			if d < 0 {
				continue
			}
			hops := max(d-2, 0)
			sum += int64(hops)
			pairs++
			diameter = max(diameter, hops)
		}
	}
	return diameter, float64(sum) / float64(pairs), pairs
}

// genericSizing computes the Sizing of a GraphSpec given without one (see Graph.Sizing).
func genericSizing(g *Graph) Sizing {
	st := g.s()
	p := g.params
	s := Sizing{Kind: p.Kind, Hosts: g.hosts, GPUs: g.hosts, Planes: p.Planes, SwitchesPerPlaneByTier: []int{}}
	for _, n := range st.nodes[g.hosts:] {
		s.Switches++
		t := max(n.Tier, 0)
		for len(s.SwitchesPerPlaneByTier) <= t {
			s.SwitchesPerPlaneByTier = append(s.SwitchesPerPlaneByTier, 0)
		}
		if n.Plane <= 0 {
			s.SwitchesPerPlaneByTier[t]++
			s.SwitchesPerPlane++
		}
	}
	bw := make([]float64, g.nodes)
	for _, k := range st.links {
		lv := max(k.Level, 0)
		for len(s.LinksByLevel) <= lv {
			s.LevelNames = append(s.LevelNames, "level "+strconv.Itoa(len(s.LinksByLevel)))
			s.LinksByLevel = append(s.LinksByLevel, 0)
		}
		s.LinksByLevel[lv]++
		s.Links++
		bw[k.A.Node] += float64(k.Rate)
		bw[k.B.Node] += float64(k.Rate)
	}
	for _, b := range bw {
		if b > 0 {
			s.OpticsModules += modulesFor(b)
		}
	}
	s.OpticalLinks, s.Optics = s.Links, 2*s.Links
	s.NICBandwidth = rateMul(p.HostLink, p.Planes)
	d, mean, _ := g.hostHops()
	s.DiameterHops, s.MeanHops, s.MaxSwitchHops = d, mean, d+1
	lat := timeMul(p.HopLatency, d+2)
	lat = timeAdd(lat, timeMul(p.HostLink.TxTime(SizingPacketBytes), 2))
	s.WorstCaseLatency = timeAdd(lat, timeMul(p.FabricLink.TxTime(SizingPacketBytes), d))
	s.Notes = []string{"generic graph: every link counted optical; bisection not computed"}
	return s
}

// genericBlast returns the blast radius of a GraphSpec given without one: a NIC port, and for
// each link level above 0 the largest share one link takes from the links of that level at a
// node where it is the lower end.
func genericBlast(g *Graph) []Blast {
	st := g.s()
	out := []Blast{{Element: BlastNICPort, Lost: "host NIC bandwidth", Share: 1 / float64(g.params.Planes), Affected: 1, AffectedKind: "hosts"}}
	perNode := map[[2]int]int{} // (level, node) -> links of that level at the node's A end
	maxLevel := 0
	for _, k := range st.links {
		if k.Level > 0 {
			perNode[[2]int{k.Level, k.A.Node}]++
			maxLevel = max(maxLevel, k.Level)
		}
	}
	for lv := 1; lv <= maxLevel; lv++ {
		least := 0
		for key, n := range perNode {
			if key[0] == lv && (least == 0 || n < least) {
				least = n
			}
		}
		if least > 0 {
			out = append(out, Blast{Element: "link_level_" + strconv.Itoa(lv), Lost: "level-" + strconv.Itoa(lv) + " bandwidth of the link's lower node",
				Share: 1 / float64(least), Affected: 1, AffectedKind: "nodes"})
		}
	}
	return out
}
