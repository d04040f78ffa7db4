// Package rocenic is the RoCEv2 transport's plugin (transport.Register): its scenario block and
// defaults (config.go), its fabric profile (config.go), its pre-run checks (check.go), its
// NIC adapter between the sans-IO engine (transport/roce) and the fabric (endpoint.go), its
// summary block (summary.go) and its flow-level model (flow.go).
package rocenic

import (
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/transport"
)

// Kind is transport.kind for RoCEv2.
const Kind = "roce"

func init() {
	transport.Register(Kind, transport.Plugin{
		Name:         "RoCE",
		Proto:        fabric.ProtoRoCE,
		NewConfig:    newConfig,
		Resolve:      resolve,
		Lossless:     true,
		ECMPHashed:   true,
		DataMarks:    "RoCE marks every data packet ECN-capable (DCQCN) and never trimmable",
		NeverTrimmed: true,
		Entropy:      entropy,
		Profile:      profile,
		Check:        check,
		NewEndpoint:  newEndpoint,
		Flow:         flowModel,
		Print:        printBlock,
		Label:        label,
	})
}
