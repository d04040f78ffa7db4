package rocenic

import (
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// activeMaxMin is the flow-level answer to "throughput while all flows are active" over the
// same hashed paths the packets took: every QP of every traffic flow is a fluid flow carrying
// its stripe on its ECMP path (fabric.Network.ECMPPath of its 5-tuple, the path its data
// packets hash to), the flow engine (package flow) gives the QPs weighted max-min fair rates
// over the ports' line rates in payload (x payload / wire bytes of a full packet) and
// recomputes them as stripes finish, and at the first traffic flow's completion each flow's
// payload placed so far over its time is a fraction of the NIC line rate (all planes): the
// packet-level figure's definition, with perfect rate allocation. It returns the mean over
// the flows and true, or false when the figure does not apply (fewer than two flows, flows
// starting at different times, or a path that cannot be traced).
//
// With spread (the fabric's adaptive routing is on) each QP is instead spread over every
// minimal path of its plane with the shares even spreading at each switch gives
// (fabric.Network.SpreadPaths): perfect AR, the reference a run under
// fabric.adaptive_routing is to be read against, and what run.engine flow gives it
// (runner/flowadaptive.go). False as well beyond maxSpreadQPs QPs or maxSpreadPaths paths
// for one QP.
func (r *Endpoint) activeMaxMin(spread bool) (float64, bool) {
	if len(r.flows) < 2 || spread && len(r.qps) > maxSpreadQPs {
		return 0, false
	}
	start := r.flows[0].start
	for _, f := range r.flows {
		if f.start != start {
			return 0, false
		}
	}
	eff := float64(r.cfg.PayloadBytes) / float64(r.cfg.PayloadBytes+r.cfg.HeaderBytes)
	caps := make([]float64, len(r.net.Ports))
	for i := range r.net.Ports {
		caps[i] = float64(r.net.Ports[i].Rate) * eff
	}
	s := sim.New(1)
	fn, err := flow.New(s, caps, flow.Config{})
	if err != nil {
		return 0, false
	}
	var (
		pkt    fabric.Packet
		path   []fabric.PortID
		links  = make([]int32, 0, 8)
		owner  []int // fluid flow id -> traffic flow
		left   = make([]int, len(r.flows))
		placed = make([]float64, len(r.flows)) // payload of finished stripes
		at     sim.Time
	)
	for fi, f := range r.flows {
		parts, err := roce.Stripe(f.bytes, len(f.qps), int64(r.cfg.PayloadBytes))
		if err != nil {
			return 0, false
		}
		for i, qi := range f.qps {
			if parts[i] == 0 {
				continue
			}
			q := r.qps[qi]
			var paths []flow.Path
			if spread {
				sp, err := r.net.SpreadPaths(q.src, int(q.plane), q.dst, maxSpreadPaths)
				if err != nil {
					return 0, false
				}
				for _, p := range sp {
					l := make([]int32, len(p.Ports))
					for k, pid := range p.Ports {
						l[k] = int32(pid)
					}
					paths = append(paths, flow.Path{Links: l, Weight: p.Share})
				}
			} else {
				pkt = fabric.Packet{Proto: r.proto, Src: q.src, Dst: q.dst, SrcPort: q.srcPort, DstPort: roce.UDPPort}
				if path, err = r.net.ECMPPath(q.src, int(q.plane), &pkt, path); err != nil {
					return 0, false
				}
				links = links[:0]
				for _, p := range path {
					links = append(links, int32(p))
				}
				paths = []flow.Path{{Links: links, Weight: 1}}
			}
			fi, b := fi, parts[i]
			done := func(now sim.Time) {
				placed[fi] += float64(b)
				if left[fi]--; left[fi] == 0 && at == 0 {
					at = now
					s.Pause()
				}
			}
			if _, err := fn.AddFlow(0, flow.Flow{Src: int(q.src), Dst: int(q.dst), Bytes: b, Paths: paths, Done: done}); err != nil {
				return 0, false
			}
			owner = append(owner, fi)
			left[fi]++
		}
	}
	if err := s.Run(sim.Hour); err != nil || at == 0 {
		return 0, false
	}
	for _, fl := range fn.Flows(nil) { // stripes still sending at the first completion
		placed[owner[fl.ID]] += float64(fl.Bytes) - fl.Remaining
	}
	line := float64(r.portRate) * float64(r.planes)
	var mean float64
	for _, b := range placed {
		mean += b * 8 / at.Seconds() / line
	}
	return mean / float64(len(placed)), true
}

// maxSpreadPaths and maxSpreadQPs bound the adaptive-routing reference (activeMaxMin with
// spread): a QP's minimal paths (a 3-tier radix-16 fat tree has 64 between pods) and the
// QPs, so the reference costs at most a few million path entries.
const (
	maxSpreadPaths = 1024
	maxSpreadQPs   = 16384
)
