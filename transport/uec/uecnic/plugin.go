// Package uecnic is the UEC transport's plugin (transport.Register, kind uec): its scenario
// block and defaults (config.go), its fabric profile (config.go), its NIC adapter between
// the sans-IO engine (transport/uec) and the fabric (endpoint.go), its summary block
// (summary.go), its flow-level model (flow.go) and its terminal block (print.go).
//
// One QP per traffic transfer (AddFlow) or per (src, dst, connection group) of collective
// messages (Send), each a uec.Sender and uec.Receiver whose headers ride fabric packets of
// fabric.ProtoUET with RouteLen 0: every switch forwards them by ECMP over the 5-tuple and the
// packet's entropy value (Packet.Entropy = EV), as UEC sprays [UEC §3.5]. docs/protocols.md,
// "UEC", describes the protocol and the source of each default.
package uecnic

import (
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/transport"
)

// Kind is transport.kind for UEC.
const Kind = "uec"

func init() {
	transport.Register(Kind, transport.Plugin{
		Name:        "UEC",
		Proto:       fabric.ProtoUET,
		NewConfig:   newConfig,
		Resolve:     resolve,
		DataMarks:   "UEC marks every data packet ECN-capable and trimmable",
		Profile:     profile,
		Check:       check,
		NewEndpoint: newEndpoint,
		Flow:        flowModel,
		Print:       printBlock,
		Label:       label,
	})
}
