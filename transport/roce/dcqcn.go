package roce

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
)

// DCQCNStats counts what a reaction point did. Every increase lands in exactly one of
// FastRecoveries, AdditiveIncreases and HyperIncreases, and came from exactly one of
// TimerEvents and ByteEvents.
type DCQCNStats struct {
	CNPs              int64 // CNPs reacted to (each cut the rate)
	MinRateCuts       int64 // cuts the MinRate floor stopped
	FastRecoveries    int64 // Rc = (Rt + Rc) / 2 with Rt unchanged
	AdditiveIncreases int64 // Rt += R_AI first
	HyperIncreases    int64 // Rt += i x R_HAI first
	TimerEvents       int64 // increases the rate-increase timer T triggered
	ByteEvents        int64 // increases the byte counter B triggered
	AlphaDecays       int64 // alpha = (1-g) alpha steps (one per AlphaTimer without a CNP)
	Recoveries        int64 // times the rate climbed back to line rate after CNPs
}

// DCQCN is the reaction point (RP) of [DCQCN §3.1] at a sender: a current rate Rc the sender
// paces at, a target rate Rt, and the congestion estimate alpha.
//
//   - On a CNP: Rt = Rc; Rc = max(Rc (1 - alpha/2), MinRate); alpha = (1-g) alpha + g; the
//     rate-increase timer, the byte counter and both stage counts restart.
//   - Every K (AlphaTimer) without a CNP: alpha = (1-g) alpha.
//   - Every T (RateIncreaseTimer) and every B (ByteCounter) bytes sent since the last CNP, the
//     timer count t or the byte count bc goes up by one and the rate increases: while
//     max(t, bc) <= F, fast recovery (Rc = (Rt + Rc) / 2); once both exceed F, hyper increase
//     (Rt += (min(t, bc) - F) x R_HAI, then the average); otherwise additive increase
//     (Rt += R_AI, then the average). Rt never exceeds the line rate.
//
// Flows start at line rate with alpha = InitialAlpha and no timers running [DCQCN §3.1: no
// slow start]. Once Rc and Rt are back at line rate the increase timer stops (it could only
// keep them there). The averages round up, so Rc reaches Rt in finitely many steps.
//
// Time is passed in, and timers are evaluated lazily: Advance(now) applies every timer
// instant at or before now, in order, and NextEvent says when the next one that changes the
// rate is due. Alpha's decays never change the rate by themselves, so they need no deadline.
// Floating-point steps are written so that no platform fuses them (FMA), keeping runs
// byte-identical across machines. Not safe for concurrent use.
type DCQCN struct {
	cfg    DCQCNConfig // effective: defaults filled, rates resolved
	line   sim.Rate
	rc, rt sim.Rate
	alpha  float64

	alphaOn bool     // the alpha timer runs (since the first CNP)
	alphaAt sim.Time // next alpha decay while alphaOn
	active  bool     // below line rate after a CNP: increase events run
	incAt   sim.Time // next rate-increase timer instant while active
	t, bc   int      // timer and byte-counter events since the last CNP
	bytes   int64    // bytes sent since the last byte-counter event (or CNP)

	// Stats counts the reaction point's actions.
	Stats DCQCNStats
}

// NewDCQCN returns a reaction point for a NIC port of line rate line (bits/s), starting at
// line rate. cfg's zero fields take their defaults and its rates are resolved against line
// (DCQCNConfig.Resolve). Errors, named by YAML path under ConfigPath: an invalid field, a
// non-positive line rate, or MinRate above line.
func NewDCQCN(cfg DCQCNConfig, line sim.Rate) (*DCQCN, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("%s.dcqcn.%s: %s", ConfigPath, err.field, err.msg)
	}
	if line <= 0 {
		return nil, fmt.Errorf("roce: line rate %v must be positive", line)
	}
	if cfg.MinRate > line {
		return nil, fmt.Errorf("%s.dcqcn.min_rate: %v exceeds the line rate %v", ConfigPath, cfg.MinRate, line)
	}
	cfg = cfg.Resolve(line)
	return &DCQCN{cfg: cfg, line: line, rc: line, rt: line, alpha: cfg.InitialAlpha}, nil
}

// Config returns the effective configuration (defaults filled, R_AI and R_HAI resolved).
func (d *DCQCN) Config() DCQCNConfig { return d.cfg }

// Line returns the line rate, bits/s.
func (d *DCQCN) Line() sim.Rate { return d.line }

// Rate returns the current rate Rc (bits/s) as of the last Advance.
func (d *DCQCN) Rate() sim.Rate { return d.rc }

// Target returns the target rate Rt (bits/s) as of the last Advance.
func (d *DCQCN) Target() sim.Rate { return d.rt }

// Alpha returns alpha as of the last Advance, in [0, 1].
func (d *DCQCN) Alpha() float64 { return d.alpha }

// Stages returns the timer and byte-counter event counts since the last CNP (t and bc).
func (d *DCQCN) Stages() (t, bc int) { return d.t, d.bc }

// Recovering reports whether the rate is below line rate after a CNP (increase events run).
func (d *DCQCN) Recovering() bool { return d.active }

// NextEvent returns when the next rate-increase timer instant is due, or MaxTime when the rate
// is at line rate (or DCQCN is disabled).
func (d *DCQCN) NextEvent() sim.Time {
	if !d.active {
		return sim.MaxTime
	}
	return d.incAt
}

// Advance applies every timer instant at or before now: alpha decays and rate increases.
// Calls with an earlier now than before change nothing.
func (d *DCQCN) Advance(now sim.Time) {
	if d.alphaOn && d.alphaAt <= now {
		k := d.cfg.AlphaTimer
		n := int64((now-d.alphaAt)/k) + 1
		d.alphaAt += sim.Time(n) * k
		d.decayAlpha(n)
	}
	for d.active && d.incAt <= now {
		d.incAt += d.cfg.RateIncreaseTimer
		d.t++
		d.Stats.TimerEvents++
		d.increase()
	}
}

// decayAlpha applies n decays: alpha x (1-g)^n, one multiplication at a time for the usual
// handful, by repeated squaring beyond (a QP idle for seconds owes thousands).
func (d *DCQCN) decayAlpha(n int64) {
	d.Stats.AlphaDecays += n
	f := 1 - d.cfg.G
	if n <= 64 {
		for ; n > 0; n-- {
			d.alpha *= f
		}
		return
	}
	p := 1.0
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			p *= f
		}
		f *= f
	}
	d.alpha *= p
}

// OnCNP reacts to a CNP that arrived at now [DCQCN §3.1]. Timer instants at or
// before now are applied first. Does nothing when DCQCN is disabled.
func (d *DCQCN) OnCNP(now sim.Time) {
	if d.cfg.Disabled {
		return
	}
	d.Advance(now)
	d.Stats.CNPs++
	d.rt = d.rc
	cut := sim.Rate(float64(d.rc) * (1 - d.alpha/2))
	if cut < d.cfg.MinRate {
		cut = d.cfg.MinRate
		d.Stats.MinRateCuts++
	}
	d.rc = cut
	// float64(...) stops the compiler fusing the multiply-add, which some platforms would
	// round differently.
	d.alpha = float64((1-d.cfg.G)*d.alpha) + d.cfg.G
	d.alphaOn, d.alphaAt = true, now+d.cfg.AlphaTimer
	d.active, d.incAt = true, now+d.cfg.RateIncreaseTimer
	d.t, d.bc, d.bytes = 0, 0, 0
}

// OnSent counts wire bytes sent at now toward the byte counter B; each full B is one
// byte-counter event (an increase). Timer instants at or before now are applied first.
func (d *DCQCN) OnSent(now sim.Time, bytes int64) {
	d.Advance(now)
	if !d.active {
		return
	}
	d.bytes += bytes
	for d.active && d.bytes >= int64(d.cfg.ByteCounter) {
		d.bytes -= int64(d.cfg.ByteCounter)
		d.bc++
		d.Stats.ByteEvents++
		d.increase()
	}
}

// increase is one rate-increase event after t or bc moved [DCQCN §3.1].
func (d *DCQCN) increase() {
	f := d.cfg.FastRecoverySteps
	switch {
	case max(d.t, d.bc) <= f:
		d.Stats.FastRecoveries++
	case min(d.t, d.bc) > f:
		d.Stats.HyperIncreases++
		i := sim.Rate(min(d.t, d.bc) - f)
		step := d.cfg.RateHAI
		if i > (d.line-d.rt)/step { // saturate: the target stops at line rate anyway
			d.rt = d.line
		} else {
			d.rt += i * step
		}
	default:
		d.Stats.AdditiveIncreases++
		d.rt += d.cfg.RateAI
	}
	if d.rt > d.line {
		d.rt = d.line
	}
	d.rc += (d.rt - d.rc + 1) / 2 // rounds up: Rc reaches Rt
	if d.rc >= d.line {
		d.rc, d.active = d.line, false
		d.Stats.Recoveries++
	}
}
