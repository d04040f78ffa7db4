package topo

import "fmt"

// MaxHops is the capacity of a Route: one egress port per switch. A 3-tier Clos needs 5; 8
// matches the fabric's packet and leaves room for longer fabrics.
const MaxHops = 8

// Route is a source route: the plane (the source host's NIC port) and the local egress port at
// each switch in order, ending with the destination T0's down port. It is a fixed-size value
// laid out like the fabric's route (Hops, Len), so it can be copied into a packet without
// allocation.
type Route struct {
	Hops  [MaxHops]uint16 // egress port at each switch; Hops[:Len] are used
	Len   uint8           // number of switches: 1, 3 or 5 in a Clos; d+1 in a torus of d hops
	Plane uint8           // the source NIC port
}

// Ports returns the egress ports, r.Hops[:r.Len].
func (r *Route) Ports() []uint16 { return r.Hops[:r.Len] }

// Kinds of host pairs, by the highest tier their minimal paths reach.
const (
	pairInvalid = iota // src == dst, or a host out of range
	pairSameT0
	pairSamePod // different T0s of one pod (every pair of a 2-tier Clos)
	pairCrossPod
)

// pathsInPlane returns the number of minimal paths from src to dst within one plane, and the
// kind of the pair.
func (l *Layout) pathsInPlane(src, dst int) (int, int) {
	d := &l.d
	if src < 0 || dst < 0 || src >= d.Hosts || dst >= d.Hosts || src == dst {
		return 0, pairInvalid
	}
	ts, td := src/d.T0Down, dst/d.T0Down
	switch {
	case ts == td:
		return 1, pairSameT0
	case d.Tiers == 2 || ts/d.T0PerPod == td/d.T0PerPod:
		return d.T0Up * d.T0Parallel, pairSamePod
	}
	return d.T0Up * d.T1Up * d.T1Parallel * d.T0Parallel, pairCrossPod
}

// NumPaths returns the number of distinct minimal paths from host src to host dst over all
// planes: Planes x the per-plane count, which is
//
//   - 1 when src and dst share a T0;
//   - u0 x p0 across T0s of a 2-tier Clos or of one pod (T0 uplink, then the parallel link
//     down from the T1);
//   - u0 x u1 x p1 x p0 across pods (T0 uplink, T1 uplink, parallel link down from the T2,
//     parallel link down from the T1).
//
// It returns 0 when src == dst or either is not a host.
func (l *Layout) NumPaths(src, dst int) int {
	n, _ := l.pathsInPlane(src, dst)
	return n * l.d.Planes
}

// Path returns path i of the NumPaths(src, dst) minimal paths. i is read in mixed radix, lowest
// digit first: plane (Planes), T0 uplink c (u0), then across pods T1 uplink v (u1) and the T2's
// parallel link down f (p1), then the T1's parallel link down e (p0). So consecutive indices
// alternate planes first, then uplinks. The hops are
//
//	same T0:    [dst%d0]
//	same pod:   [d0+c, l*p0+e, dst%d0]
//	cross pod:  [d0+c, d1+v, pod*p1+f, l*p0+e, dst%d0]
//
// where l is dst's T0 index within its pod and pod is dst's pod. Path does not allocate.
//
// Errors: src == dst, a host out of range, or i outside [0, NumPaths(src, dst)); callers
// holding an entropy value take it modulo NumPaths.
func (l *Layout) Path(src, dst, i int) (Route, error) {
	n, kind := l.pathsInPlane(src, dst)
	if kind == pairInvalid {
		if src == dst {
			return Route{}, fmt.Errorf("topo: path from host %d to itself", src)
		}
		return Route{}, fmt.Errorf("topo: path %d -> %d: hosts are 0 to %d", src, dst, l.d.Hosts-1)
	}
	d := &l.d
	if i < 0 || i/d.Planes >= n {
		return Route{}, fmt.Errorf("topo: path %d of %d -> %d out of range [0, %d)", i, src, dst, n*d.Planes)
	}
	r := Route{Plane: uint8(i % d.Planes)}
	k := i / d.Planes
	td := dst / d.T0Down
	last := uint16(dst % d.T0Down)
	if kind == pairSameT0 {
		r.Hops[0], r.Len = last, 1
		return r, nil
	}
	local := td % d.T0PerPod
	c := k % d.T0Up
	k /= d.T0Up
	if kind == pairSamePod {
		r.Hops = [MaxHops]uint16{uint16(d.T0Down + c), uint16(local*d.T0Parallel + k), last}
		r.Len = 3
		return r, nil
	}
	v := k % d.T1Up
	k /= d.T1Up
	f, e := k%d.T1Parallel, k/d.T1Parallel
	pod := td / d.T0PerPod
	r.Hops = [MaxHops]uint16{uint16(d.T0Down + c), uint16(d.T1Down + v), uint16(pod*d.T1Parallel + f), uint16(local*d.T0Parallel + e), last}
	r.Len = 5
	return r, nil
}

// pathIndex composes a path index from its digits (see Path); unused digits are ignored.
func (l *Layout) pathIndex(plane, c, v, f, e int, crossPod bool) int {
	d := &l.d
	k := e
	if crossPod {
		k = (k*d.T1Parallel+f)*d.T1Up + v
	}
	return (k*d.T0Up+c)*d.Planes + plane
}
