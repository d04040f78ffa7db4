package transport

import "github.com/lockstepsim/lockstep/sim"

// HopRateLimiter is implemented by a transport block (the pointer NewConfig returns) whose
// link-level flow control can hold a link below its line rate whatever the load: InfiniBand
// credits cap a link at its buffer over the credit round trip (fabric.CreditRate). The
// scenario's automatic run.duration sizes transfers at the slowest hop this reports
// (scenario/resolve_rate.go), so a credit-limited fabric is not cut short; a block that
// does not implement it runs at line rate there.
type HopRateLimiter interface {
	// HopRate returns the most one link of rate bits/s and one-way delay carries under the
	// resolved block, intoHost when its receiving end is a host adapter (else a switch
	// ingress); rate itself when nothing limits it, 0 when nothing can cross it.
	HopRate(rate sim.Rate, delay sim.Time, intoHost bool) sim.Rate
}
