package roce

import "github.com/lockstepsim/lockstep/sim"

// RateControl is a sender's congestion reaction point when it is not DCQCN: the rate the
// pacer spaces packets at, and what moves it. InfiniBand's congestion control (CCT-indexed
// injection rate delay, transport/ib) is one. Methods take the current time; none is called
// with an earlier time than before.
type RateControl interface {
	// Advance applies every timer instant at or before now.
	Advance(now sim.Time)
	// Rate is the current injection rate, bits/s, at most the line rate.
	Rate() sim.Rate
	// NextEvent is when the next timer instant is due (it may raise the rate), MaxTime if none.
	NextEvent() sim.Time
	// OnSent is told of every data packet sent, bytes on the wire.
	OnSent(now sim.Time, bytes int64)
	// OnCNP takes a congestion notification (a CNP; InfiniBand's BECN).
	OnCNP(now sim.Time)
}

// RateControlMaker makes a QP's reaction point given the NIC line rate. Its dynamic type must
// be comparable (Config values are compared): a configuration struct, not a closure.
type RateControlMaker interface {
	NewRateControl(line sim.Rate) RateControl
}

// WithRateControl returns c whose senders pace under the reaction point m makes for each QP
// instead of DCQCN; nil restores DCQCN. Not a YAML setting: transports opt in (InfiniBand
// congestion control). The DCQCN block is then unused.
func (c Config) WithRateControl(m RateControlMaker) Config {
	c.rateControl = m
	return c
}
