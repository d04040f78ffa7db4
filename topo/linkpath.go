package topo

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
)

// LinkPath returns the directed links of path i % NumPaths(src, dst) (see Topology.LinkPath):
// the same path as Path, as link ids 2k (link k of Links, upward: A -> B) or 2k+1 (downward),
// and its latency, (switches + 1) x HopLatency. It does not allocate when buf has room for
// the path (at most 6 links). Errors: src == dst, a host out of range, i < 0.
func (l *Layout) LinkPath(src, dst, i int, buf []int32) ([]int32, sim.Time, error) {
	n := l.NumPaths(src, dst)
	if n == 0 {
		_, err := l.Path(src, dst, 0)
		return buf[:0], 0, err
	}
	if i < 0 {
		return buf[:0], 0, fmt.Errorf("topo: path index %d is negative", i)
	}
	r, err := l.Path(src, dst, i%n)
	if err != nil {
		return buf[:0], 0, err
	}
	out := buf[:0]
	at := Endpoint{src, int(r.Plane)}
	for k := 0; ; k++ {
		far, _ := l.Peer(at.Node, at.Port)
		idx, _ := l.LinkOf(at.Node, at.Port)
		_, tAt, _, _ := l.locate(at.Node)
		_, tFar, _, _ := l.locate(far.Node)
		dir := int32(0) // the lower end is A: climbing is A -> B
		if tAt > tFar {
			dir = 1
		}
		out = append(out, 2*int32(idx)+dir)
		if k == int(r.Len) {
			break
		}
		at = Endpoint{far.Node, int(r.Hops[k])}
	}
	return out, timeMul(l.cfg.HopLatency, int(r.Len)+1), nil
}
