// Package mrcnic is the MRC transport's plugin (transport.Register): its scenario block and
// defaults (config.go), its fabric profile (config.go), its pre-run checks (check.go), its
// NIC adapter between the sans-IO engine (transport/mrc) and the fabric (endpoint.go), its
// summary block (summary.go), its typed run with the EV state series and ev_states.csv
// (run.go) and its flow-level model (flow.go).
//
// The adapter (Endpoint) is what a packet-level run of transport.kind mrc drives through
// transport.Endpoint: one QP per traffic transfer (AddFlow) or per (src, dst, connection
// group) of collective messages (Send), each a mrc.Sender and mrc.Receiver whose headers ride
// fabric packets of fabric.ProtoMRC, sprayed over every plane along the EVs' source routes.
// The senders of one host share its mrc.MarkBoard (hostBoard): the CE marks of the host's
// routes, pooled over its QPs, which the CE skip rule reads (docs/protocols.md, "CE skips on
// a loaded plane").
// docs/protocols.md describes MRC, docs/architecture.md where the adapter sits in a run.
package mrcnic

import (
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/transport"
)

// Kind is transport.kind for MRC.
const Kind = "mrc"

func init() {
	transport.Register(Kind, transport.Plugin{
		Name:            "MRC",
		Proto:           fabric.ProtoMRC,
		NewConfig:       newConfig,
		Resolve:         resolve,
		Lossless:        false,
		WorkloadDefault: true,
		DataMarks:       "MRC marks every data packet ECN-capable and trimmable",
		Entropy:         entropy,
		Profile:         profile,
		Check:           check,
		NewEndpoint:     newEndpoint,
		Flow:            flowModel,
		Print:           printBlock,
		Outputs:         []string{EVStatesFile},
	})
}
