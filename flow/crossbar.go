package flow

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
)

// Crossbar is a Router for an ideal non-blocking switch: host h has one uplink (directed link
// 2h, host to switch) and one downlink (2h+1, switch to host), and every flow from src to dst
// takes the single path [2 src, 2 dst + 1] with the same latency, whatever its key. It is the
// flow-level counterpart of collective.Ideal (which also serialises at each NIC), for tests
// and for users without a topology. Build it with NewCrossbar; Capacities gives the link
// table for New.
type Crossbar struct {
	hosts   int
	latency sim.Time
	links   [2]int32 // scratch for the path returned by Paths
}

// NewCrossbar returns a crossbar of hosts hosts (>= 1) whose flows have one-way latency
// latency (>= 0). Errors: hosts < 1 or > 2^30, a negative latency.
func NewCrossbar(hosts int, latency sim.Time) (*Crossbar, error) {
	if hosts < 1 || hosts > 1<<30 {
		return nil, fmt.Errorf("flow: crossbar of %d hosts: want 1 to %d", hosts, 1<<30)
	}
	if latency < 0 {
		return nil, fmt.Errorf("flow: crossbar latency %v: must be >= 0", latency)
	}
	return &Crossbar{hosts: hosts, latency: latency}, nil
}

// NumLinks returns 2 x hosts: the uplink and the downlink of every host.
func (x *Crossbar) NumLinks() int { return 2 * x.hosts }

// Capacities returns the link capacity table for New: every uplink and downlink at
// bitsPerSec.
func (x *Crossbar) Capacities(bitsPerSec float64) []float64 {
	c := make([]float64, x.NumLinks())
	for i := range c {
		c[i] = bitsPerSec
	}
	return c
}

// Paths returns the one path from src to dst, [2 src, 2 dst + 1], of weight 1, and the
// crossbar's latency. The path's Links stay valid until the next call. Errors: a host out
// of range, src == dst.
func (x *Crossbar) Paths(src, dst int, _ uint64, buf []Path) ([]Path, sim.Time, error) {
	if src < 0 || dst < 0 || src >= x.hosts || dst >= x.hosts {
		return buf, 0, fmt.Errorf("flow: crossbar path %d -> %d: hosts are 0 to %d", src, dst, x.hosts-1)
	}
	if src == dst {
		return buf, 0, fmt.Errorf("flow: crossbar path from host %d to itself", src)
	}
	x.links = [2]int32{int32(2 * src), int32(2*dst + 1)}
	return append(buf[:0], Path{Links: x.links[:], Weight: 1}), x.latency, nil
}
