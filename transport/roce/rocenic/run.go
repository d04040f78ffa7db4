package rocenic

import (
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// Run is what a RoCE run leaves beyond the summary (Endpoint.Run): the QPs' engines and the
// traffic flows' completion times, for tests and tools.
type Run struct {
	r *Endpoint
}

// QP returns QP i's engines and ends (hosts and plane); i in 0..QPs()-1.
func (x *Run) QP(i int) (snd *roce.Sender, rcv *roce.Receiver, src, dst, plane int) {
	q := x.r.qps[i]
	return q.snd, q.rcv, int(q.src), int(q.dst), int(q.plane)
}

// QPs returns the number of QPs opened.
func (x *Run) QPs() int { return len(x.r.qps) }

// FlowDone returns when traffic flow i (in AddFlow order) had its last stripe acknowledged
// (0 if never).
func (x *Run) FlowDone(i int) sim.Time { return x.r.flows[i].done }

// Endpoint returns the endpoint the run belongs to.
func (x *Run) Endpoint() *Endpoint { return x.r }

// SrcPort returns QP i's UDP source port: its ECMP entropy (fabric.Network.ECMPPath of a
// packet with it gives the path its data takes).
func (x *Run) SrcPort(i int) uint16 { return x.r.qps[i].srcPort }
