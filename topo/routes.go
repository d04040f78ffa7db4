package topo

import (
	"fmt"

	"github.com/lockstepsim/lockstep/fabric"
)

// RouteTable is a node's up/down ECMP forwarding table: destination host ranges below the
// node, each with its group of equal-cost local egress ports, and an Up group for every other
// destination (the fabric's own type, so Build installs it as is).
type RouteTable = fabric.RouteTable

// RouteEntry is one range of destination hosts and its ECMP group of local egress ports.
type RouteEntry = fabric.RouteEntry

// Routes returns node n's up/down routing table: minimal paths only, so a packet climbs
// until the destination is below it, then descends [Al-Fares et al., SIGCOMM 2008 §3].
//
//   - T0: one entry per attached host h (its down port); Up = all u0 up ports.
//   - T1: one entry per T0 of its pod (the host range of that T0; its p0 down ports);
//     Up = all u1 up ports (3-tier) or empty (2-tier).
//   - T2: one entry per pod (the host range of the pod; its p1 down ports); Up empty.
//   - Host: no entries; Up = its NIC ports, one per plane (the transport chooses the plane).
//
// Errors: n out of range.
func (l *Layout) Routes(n int) (RouteTable, error) {
	_, tier, index, ok := l.locate(n)
	if !ok {
		return RouteTable{}, fmt.Errorf("topo: node %d out of range [0, %d)", n, l.NumNodes())
	}
	d := &l.d
	var t RouteTable
	span := func(lo, hi int) []uint16 {
		ps := make([]uint16, hi-lo)
		for i := range ps {
			ps[i] = uint16(lo + i)
		}
		return ps
	}
	add := func(lo, hi int, ports []uint16) {
		t.Entries = append(t.Entries, RouteEntry{HostLo: int32(lo), HostHi: int32(min(hi, d.Hosts)), Ports: ports})
	}
	switch tier {
	case -1:
		t.Up = span(0, d.Planes)
	case 0:
		all := span(0, d.Radix)
		for k := 0; k < d.T0Down && index*d.T0Down+k < d.Hosts; k++ {
			h := index*d.T0Down + k
			add(h, h+1, all[k:k+1:k+1])
		}
		t.Up = all[d.T0Down:]
	case 1:
		all := span(0, d.Radix)
		pod := index / d.T1PerPod
		p0 := d.T0Parallel
		for local := 0; local < d.T0PerPod; local++ {
			t0 := pod*d.T0PerPod + local
			if t0 >= d.T0s {
				break
			}
			add(t0*d.T0Down, (t0+1)*d.T0Down, all[local*p0:(local+1)*p0:(local+1)*p0])
		}
		if d.T1Up > 0 {
			t.Up = all[d.T1Down : d.T1Down+d.T1Up]
		}
	case 2:
		all := span(0, d.Radix)
		p1 := d.T1Parallel
		podHosts := d.T0PerPod * d.T0Down
		for pod := 0; pod < d.Pods; pod++ {
			add(pod*podHosts, (pod+1)*podHosts, all[pod*p1:(pod+1)*p1:(pod+1)*p1])
		}
	}
	return t, nil
}
