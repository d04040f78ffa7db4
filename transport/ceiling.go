package transport

import "github.com/lockstepsim/lockstep/sim"

// RateCeiling is a transport's rate recovery after congestion, for the flow level
// (FlowModel.Ceiling): the fluid's max-min rates are the fixed point of a congestion
// control, which a QP whose share rose reaches only as fast as its increase rules allow
// (RoCE's DCQCN [DCQCN §3.1]). The runner (runner/flowceiling.go) keeps one QPCeiling per
// QP, settles it at the QP's rate while the QP shares a congested link, and caps the QP's
// flows at its rate once it stops sharing one, until it is back at line rate. The value
// must be comparable (FlowModel values are compared).
type RateCeiling interface {
	// Step is the grid on which the runner moves every QP's ceiling (> 0): the transport's
	// rate-increase period, so that each QP's timer steps fall on the grid and all the
	// ceilings that move, move in one recomputation.
	Step() sim.Time
	// NewQP returns the recovery state of a QP on a NIC port of line rate line (bits/s on
	// the wire), at line rate. Errors: a line rate the transport's settings reject.
	NewQP(line sim.Rate) (QPCeiling, error)
}

// QPCeiling is one QP's rate recovery (RateCeiling.NewQP). Rates are on the wire, bits/s.
type QPCeiling interface {
	// Settle holds the QP at rate at now: it shares a congested link there, its rate is its
	// share, and its recovery restarts from that rate.
	Settle(now sim.Time, rate sim.Rate)
	// Advance moves the recovery to now, wireBytes having been sent since the last call,
	// and returns the ceiling and whether it is still below line rate (false: back at line
	// rate, the state may be dropped).
	Advance(now sim.Time, wireBytes int64) (ceiling sim.Rate, recovering bool)
}
