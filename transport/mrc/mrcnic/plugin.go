// Package mrcnic is the MRC transport's plugin (transport.Register): its scenario block and
// defaults (config.go), its fabric profile (config.go), its pre-run checks (check.go), its
// NIC adapter between the sans-IO engine (transport/mrc) and the fabric (endpoint.go), its
// summary block (summary.go) and its flow-level model (flow.go).
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
		Profile:         profile,
		Check:           check,
		NewEndpoint:     newEndpoint,
		Flow:            flowModel,
	})
}
