package rocenic

import (
	"errors"

	"github.com/lockstepsim/lockstep/transport"
)

// STUB (issue 18 track ROCE replaces this file).
func newEndpoint(cfg any, env transport.EndpointEnv) (transport.Endpoint, error) {
	return nil, errors.New("roce: endpoint not yet moved")
}
