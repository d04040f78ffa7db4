package mrcnic

import "github.com/lockstepsim/lockstep/transport"

// STUB (issue 18 track MRC replaces this file).
func check(cfg any, env transport.CheckEnv) ([]string, error) { return nil, nil }
