// Package ibnic is the InfiniBand transport's plugin (transport.Register, kind ib): its
// scenario block (config.go), its fabric profile (config.go: no ECN, no trimming, queue
// limits above what credits let a switch hold), its NIC adapter (endpoint.go: InfiniBand RC
// QPs on the shared RC engine, credit flow control turned on in the fabric, credits.csv), its
// terminal block (print.go) and its flow-level model (flow.go).
package ibnic

import (
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/transport"
)

// Kind is transport.kind for InfiniBand.
const Kind = "ib"

// CreditsFile is the per-port credit record the endpoint writes (docs/outputs.md).
const CreditsFile = "credits.csv"

func init() {
	transport.Register(Kind, transport.Plugin{
		Name:         "InfiniBand",
		Proto:        fabric.ProtoIB,
		NewConfig:    newConfig,
		Resolve:      resolve,
		ECMPHashed:   true,
		DataMarks:    "InfiniBand data packets are never trimmable; they carry FECN (the fabric's ECN marking) only under transport.ib.cc",
		NeverTrimmed: true,
		Profile:      profile,
		NewEndpoint:  newEndpoint,
		Check:        check,
		Flow:         flowModel,
		Print:        printBlock,
		Label:        label,
		Outputs:      []string{CreditsFile},
	})
}
