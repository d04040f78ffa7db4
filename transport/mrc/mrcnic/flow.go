package mrcnic

import (
	"errors"

	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
)

// STUB (issue 18 track F replaces this file).
func flowModel(cfg any, t topo.Topology) (transport.FlowModel, error) {
	return transport.FlowModel{}, errors.New("mrc: flow model not yet moved")
}
