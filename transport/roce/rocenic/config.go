package rocenic

import (
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// STUB (issue 18 track S replaces this file).
func newConfig() any { return &roce.Config{} }

func resolve(cfg any, env transport.ResolveEnv) error { return nil }

func profile(cfg any, env transport.ProfileEnv) {}
