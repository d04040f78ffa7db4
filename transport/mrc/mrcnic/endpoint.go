package mrcnic

import (
	"errors"

	"github.com/lockstepsim/lockstep/transport"
)

// STUB (issue 18 track MRC replaces this file).
func newEndpoint(cfg any, env transport.EndpointEnv) (transport.Endpoint, error) {
	return nil, errors.New("mrc: endpoint not yet moved")
}
