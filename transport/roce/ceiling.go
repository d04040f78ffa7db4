package roce

import "github.com/lockstepsim/lockstep/sim"

// Settle puts the reaction point where DCQCN holds a QP on a congested link at now, for the
// flow level's rate ceiling (rocenic's flow model; docs/protocols.md, "DCQCN at flow level"):
// at the fixed point of DCQCN's fluid model (Zhu et al., CoNEXT 2016) the QP's rate is its
// share of the link and CNPs keep arriving, so Rc = Rt = rate (within [MinRate, line]) and,
// as after a CNP [DCQCN §3.1], the rate-increase timer starts at now + T and the byte
// counter and both stage counts restart. Alpha is left as it is (it sizes cuts, which the
// flow level does not make). A rate at or above line rate leaves the QP at line rate with
// no timer running. Does nothing when DCQCN is disabled.
func (d *DCQCN) Settle(now sim.Time, rate sim.Rate) {
	if d.cfg.Disabled {
		return
	}
	d.Advance(now)
	if rate >= d.line {
		d.rc, d.rt, d.active = d.line, d.line, false
		d.t, d.bc, d.bytes = 0, 0, 0
		return
	}
	rate = max(rate, d.cfg.MinRate)
	d.rc, d.rt = rate, rate
	d.active, d.incAt = true, now+d.cfg.RateIncreaseTimer
	d.t, d.bc, d.bytes = 0, 0, 0
}
