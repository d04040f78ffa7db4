package runner

import (
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/flow"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// activeMaxMin is the flow-level answer to "throughput while all flows are active" over the
// same hashed paths the packets took: every QP of every traffic flow is a fluid flow on its
// ECMP path (fabric.Network.ECMPPath of its 5-tuple, the path its data packets hash to), the
// flow engine (package flow) gives them weighted max-min fair rates over the ports' line
// rates, and a traffic flow's throughput is the sum of its QPs' rates (its stripes run
// independently) as a fraction of the NIC line rate (all planes), in payload (x payload /
// wire bytes of a full packet, as the packet-level figure counts). It returns the mean over
// the flows and true, or false when the figure does not apply (fewer than two flows, flows
// starting at different times, or a path that cannot be traced).
func (r *roceNet) activeMaxMin() (float64, bool) {
	if len(r.flows) < 2 {
		return 0, false
	}
	for _, f := range r.flows {
		if f.start != r.flows[0].start {
			return 0, false
		}
	}
	caps := make([]float64, len(r.net.Ports))
	for i := range r.net.Ports {
		caps[i] = float64(r.net.Ports[i].Rate)
	}
	s := sim.New(1)
	fn, err := flow.New(s, caps, flow.Config{})
	if err != nil {
		return 0, false
	}
	var pkt fabric.Packet
	var path []fabric.PortID
	links := make([]int32, 0, 8)
	owner := make([]int, 0, len(r.qps)) // flow id -> traffic flow
	for fi, f := range r.flows {
		for _, qi := range f.qps {
			q := r.qps[qi]
			pkt = fabric.Packet{Proto: fabric.ProtoRoCE, Src: q.src, Dst: q.dst, SrcPort: q.srcPort, DstPort: roce.UDPPort}
			if path, err = r.net.ECMPPath(q.src, int(q.plane), &pkt, path); err != nil {
				return 0, false
			}
			links = links[:0]
			for _, p := range path {
				links = append(links, int32(p))
			}
			if _, err := fn.AddFlow(0, flow.Flow{Src: int(q.src), Dst: int(q.dst), Bytes: 1 << 50, Paths: []flow.Path{{Links: links, Weight: 1}}}); err != nil {
				return 0, false
			}
			owner = append(owner, fi)
		}
	}
	if err := s.Run(1); err != nil { // the rates of the first recomputation, at 0
		return 0, false
	}
	sum := make([]float64, len(r.flows))
	for _, fl := range fn.Flows(nil) {
		sum[owner[fl.ID]] += fl.Rate
	}
	line := float64(r.portRate) * float64(r.planes)
	eff := float64(r.cfg.PayloadBytes) / float64(r.cfg.PayloadBytes+r.cfg.HeaderBytes)
	var mean float64
	for _, x := range sum {
		mean += min(x/line, 1) * eff
	}
	return mean / float64(len(sum)), true
}
