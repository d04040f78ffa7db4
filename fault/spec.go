package fault

import (
	"fmt"
	"math"
	pathpkg "path"

	"github.com/lockstepsim/lockstep/sim"
)

// Actions (Spec.Action).
const (
	ActionDown      = "down"      // the link fails, both directions
	ActionUp        = "up"        // the link is repaired; it must be down
	ActionFlap      = "flap"      // Count cycles of down for DownFor, one every Period
	ActionDegrade   = "degrade"   // the link runs at Rate (or Factor x its rate), both directions
	ActionUndegrade = "undegrade" // the link is back at its built rate; it must be degraded
	ActionLoss      = "loss"      // each packet is lost with probability Loss, in Direction
	ActionBER       = "ber"       // each bit is corrupted with probability BER, in Direction
	ActionBlackhole = "blackhole" // the switch stays up, its links stay up, it forwards nothing
	ActionHeal      = "heal"      // every fault active on the target ends
)

// actionList is the allowed actions, for error messages.
const actionList = "down, up, flap, degrade, undegrade, loss, ber, blackhole, heal"

// Target kinds: the Spec field that names the target.
const (
	KindLink        = "link"
	KindSwitch      = "switch"
	KindNIC         = "nic"
	KindTransceiver = "transceiver"
)

// Directions of loss and ber (Spec.Direction), relative to the end the target names.
const (
	DirOut  = "out"  // packets leaving the named port (default)
	DirIn   = "in"   // packets arriving at the named port (leaving its peer)
	DirBoth = "both" // both directions of the link
)

// Repair time distributions (Repair.Dist).
const (
	RepairFixed       = "fixed"       // always Mean
	RepairExponential = "exponential" // exponential with mean Mean
	RepairLognormal   = "lognormal"   // lognormal with median Median (or mean Mean) and shape Sigma
)

// Published figures and lockstep defaults.
const (
	// HPNLinkFailuresPerDay is the default failure rate of a link (or NIC port, or transceiver)
	// in a random down process: 1.9e-5 failures per link per day, Alibaba HPN (Qian et al.,
	// "Alibaba HPN: A Data Center Network for Large Language Model Training", SIGCOMM 2024).
	// At that rate a 100k-link fabric sees about two link failures a day.
	HPNLinkFailuresPerDay = 1.9e-5
	// DefaultBreakout is the number of links per transceiver (a 4 x 200G breakout of an 800G
	// module); lockstep default.
	DefaultBreakout = 4
	// MaxBreakout bounds Spec.Breakout.
	MaxBreakout = 64
	// DefaultLognormalSigma is the shape of a lognormal repair time when Repair.Sigma is 0:
	// the 90th percentile is 3.6 x the median. lockstep default.
	DefaultLognormalSigma = 1.0
	// MaxSigma bounds Repair.Sigma.
	MaxSigma = 10.0
	// MaxBER bounds Spec.BER: beyond 1e-3 every packet is lost anyway (a 4 KiB packet at 1e-3
	// survives with probability about 6e-15); use action loss for that.
	MaxBER = 1e-3
	// MaxCount bounds a flap's Count.
	MaxCount = 1_000_000
	// MaxEvents bounds the events a schedule may expand to (about 100 MB): beyond it a random
	// process or a flap train is far denser than any run can use.
	MaxEvents = 1_000_000
	// MaxPerDay bounds Random.PerDay (one failure per element every 86 ns).
	MaxPerDay = 1e12
)

// psPerDay is one day in picoseconds.
const psPerDay = 86400 * float64(sim.Second)

// Spec is one fault entry: an action on the elements one target names, at one time, as a
// timed train (flap), or drawn by a random process. Zero fields take defaults (WithDefaults);
// Validate lists what each action accepts. The yaml tags are the scenario's field names.
type Spec struct {
	// At is when the action happens (ps; YAML "500us"), inside the run: [0, run.duration).
	// With Random it is when the process starts.
	At sim.Time `yaml:"at"`
	// Link is a port name or glob ("h3.p2", "p0.t0-*.up*", "*"); either end names the link.
	Link string `yaml:"link,omitempty"`
	// Switch is a switch name or glob ("p0.t1-2", "p*.t1-*").
	Switch string `yaml:"switch,omitempty"`
	// NIC is a host NIC port name or glob ("h3.p2", "h3.*").
	NIC string `yaml:"nic,omitempty"`
	// Transceiver is a transceiver name or glob: "h3.x0" (host 3's NIC ports p0..p(N-1)),
	// "p0.t0-1.xd0" (down0..down(N-1) of a switch), "p0.t0-1.xu1" (upN..up(2N-1)).
	Transceiver string `yaml:"transceiver,omitempty"`
	// Breakout is the number of ports per transceiver, 1 to MaxBreakout (default 4);
	// transceiver targets only.
	Breakout int `yaml:"breakout,omitempty"`
	// Action is one of down, up, flap, degrade, undegrade, loss, ber, blackhole, heal.
	Action string `yaml:"action"`
	// For restores the target this long after At (down, degrade, loss, ber, blackhole; not
	// with Random, whose restores come from Random.Repair).
	For sim.Time `yaml:"for,omitempty"`
	// DownFor, Period and Count shape a flap: down at At + k x Period for DownFor, k = 0 ..
	// Count-1. DownFor > 0; Count 1 to MaxCount; Period > DownFor (needed when Count > 1).
	DownFor sim.Time `yaml:"down_for,omitempty"`
	Period  sim.Time `yaml:"period,omitempty"`
	Count   int      `yaml:"count,omitempty"`
	// Rate is a degraded link's rate in bits/s, above 0 and below the link's rate; Factor is
	// the same as a fraction of each link's rate, in (0, 1). A degrade gives exactly one.
	Rate   sim.Rate `yaml:"rate,omitempty"`
	Factor float64  `yaml:"factor,omitempty"`
	// Loss is the per-packet loss probability for action loss, in [0, 1]; 0 clears it.
	Loss float64 `yaml:"loss,omitempty"`
	// Entropy, when set, limits action loss to packets carrying this entropy value (one EV's
	// path: a gray failure of one route only). Without it every packet is at risk.
	Entropy *uint32 `yaml:"entropy,omitempty"`
	// BER is the bit error rate after FEC for action ber, in (0, MaxBER]; a packet of s bytes
	// is lost with probability 1 - (1 - BER)^(8 s) (fabric.Network.SetBER).
	BER float64 `yaml:"ber,omitempty"`
	// Direction of loss and ber relative to the named end: out (default), in or both.
	Direction string `yaml:"direction,omitempty"`
	// Random, when set, draws the action's failures instead of applying it once at At.
	Random *Random `yaml:"random,omitempty"`
	// AtStep, when set (workload.training only), counts the entry's times from the simulated
	// start of training step AtStep (from 0) instead of the run's start: At is an offset into
	// that step, and For, flap trains and heals follow from there. Not with Random. An element
	// an AtStep entry acts on may be named by no other entry (their order is only known as
	// the run goes), so Expand checks each AtStep entry's contradictions on its own.
	AtStep *int `yaml:"at_step,omitempty"`
}

// MaxAtStep bounds Spec.AtStep.
const MaxAtStep = 1_000_000

// Random is a random failure process over each element an entry names (see the package
// documentation).
type Random struct {
	// PerDay is the failure rate per element per day (> 0). Default HPNLinkFailuresPerDay
	// for action down on links, NIC ports and transceivers; required otherwise. For flaps,
	// published fleet figures are "several per minute cluster-wide" in large MRC deployments
	// [MRC]: f flaps per minute over n links is PerDay = 1440 f / n.
	PerDay float64 `yaml:"per_day,omitempty"`
	// MTBF is the mean time from an element's start or repair to its next failure, instead
	// of PerDay (at most about 106 days, the range of sim.Time).
	MTBF sim.Time `yaml:"mtbf,omitempty"`
	// Until ends the process: failures are drawn over [At, Until). Default run.duration.
	Until sim.Time `yaml:"until,omitempty"`
	// Repair is how long each failure lasts; nil means it lasts to the end of the run (and
	// that element fails no more). Not for flaps, whose train is their repair.
	Repair *Repair `yaml:"repair,omitempty"`
}

// Repair is a repair-time distribution.
type Repair struct {
	// Dist is fixed (Mean), exponential (mean Mean) or lognormal (Median, or Mean, and Sigma).
	Dist   string   `yaml:"dist"`
	Mean   sim.Time `yaml:"mean,omitempty"`
	Median sim.Time `yaml:"median,omitempty"`
	// Sigma is the lognormal shape (the standard deviation of the log), in (0, MaxSigma];
	// default DefaultLognormalSigma.
	Sigma float64 `yaml:"sigma,omitempty"`
}

// Target returns the target's kind (KindLink, ...) and pattern: the first of Link, Switch,
// NIC and Transceiver that is set, or "", "" when none is.
func (s *Spec) Target() (kind, pattern string) {
	for _, t := range s.targets() {
		if t[1] != "" {
			return t[0], t[1]
		}
	}
	return "", ""
}

func (s *Spec) targets() [4][2]string {
	return [4][2]string{{KindLink, s.Link}, {KindSwitch, s.Switch}, {KindNIC, s.NIC}, {KindTransceiver, s.Transceiver}}
}

// WithDefaults returns s with its defaults filled: Direction out for loss and ber, Breakout
// for transceivers, and for Random the HPN rate where it applies, Until = duration (the run's
// length; 0 leaves it unset) and the lognormal Sigma. It copies Random rather than writing
// through the pointer. Applying it twice changes nothing.
func (s Spec) WithDefaults(duration sim.Time) Spec {
	if (s.Action == ActionLoss || s.Action == ActionBER) && s.Direction == "" {
		s.Direction = DirOut
	}
	kind, _ := s.Target()
	if kind == KindTransceiver && s.Breakout == 0 {
		s.Breakout = DefaultBreakout
	}
	if s.Random != nil {
		r := *s.Random
		if r.PerDay == 0 && r.MTBF == 0 && s.Action == ActionDown && kind != KindSwitch && kind != "" {
			r.PerDay = HPNLinkFailuresPerDay
		}
		if r.Until == 0 {
			r.Until = duration
		}
		if r.Repair != nil {
			rp := *r.Repair
			if rp.Dist == RepairLognormal && rp.Sigma == 0 {
				rp.Sigma = DefaultLognormalSigma
			}
			r.Repair = &rp
		}
		s.Random = &r
	}
	return s
}

// Validate checks s's fields alone (not its target against a fabric), as WithDefaults leaves
// them. path names the entry in errors ("faults[2]"); duration is the run's length (0: no
// bound). Errors are *Error, naming the field, the value and what is allowed.
func (s *Spec) Validate(path string, duration sim.Time) error {
	// Target.
	kind := ""
	for _, t := range s.targets() {
		if t[1] == "" {
			continue
		}
		if kind != "" {
			return errorf(path+"."+t[0], "given with %s; an entry names exactly one target (link, switch, nic or transceiver)", kind)
		}
		kind = t[0]
		if _, err := pathpkg.Match(t[1], ""); err != nil {
			return errorf(path+"."+t[0], "%q is not a valid pattern: %v", t[1], err)
		}
	}
	if kind == "" {
		return errorf(path+".link", `missing; give the target as link (a port name or glob: "h3.p2", "p0.t0-*.up*"), switch ("p0.t1-2"), nic ("h3.p2") or transceiver ("h3.x0")`)
	}
	if kind == KindTransceiver {
		if s.Breakout < 1 || s.Breakout > MaxBreakout {
			return errorf(path+".breakout", "%d is out of range; allowed 1 to %d ports per transceiver (default %d)", s.Breakout, MaxBreakout, DefaultBreakout)
		}
	} else if s.Breakout != 0 {
		return errorf(path+".breakout", "applies to transceiver targets only")
	}

	// Action and which fields it takes.
	a := s.Action
	switch a {
	case ActionDown, ActionUp, ActionFlap, ActionDegrade, ActionUndegrade, ActionLoss, ActionBER, ActionHeal:
	case ActionBlackhole:
		if kind != KindSwitch {
			return errorf(path+".action", "blackhole is a switch state (up, links up, forwarding nothing) and needs a switch target such as switch: \"p0.t1-2\"; on a %s use down, or loss: 1", kind)
		}
	case "":
		return errorf(path+".action", "missing; allowed %s", actionList)
	default:
		return errorf(path+".action", "%q is not an action; allowed %s", a, actionList)
	}
	only := func(field string, set bool, actions ...string) error {
		if !set {
			return nil
		}
		for _, x := range actions {
			if a == x {
				return nil
			}
		}
		return errorf(path+"."+field, "does not apply to action %s; it is for %s", a, joinOr(actions))
	}
	for _, c := range []struct {
		field   string
		set     bool
		actions []string
	}{
		{"for", s.For != 0, []string{ActionDown, ActionDegrade, ActionLoss, ActionBER, ActionBlackhole}},
		{"down_for", s.DownFor != 0, []string{ActionFlap}},
		{"period", s.Period != 0, []string{ActionFlap}},
		{"count", s.Count != 0, []string{ActionFlap}},
		{"rate", s.Rate != 0, []string{ActionDegrade}},
		{"factor", s.Factor != 0, []string{ActionDegrade}},
		{"loss", s.Loss != 0, []string{ActionLoss}},
		{"entropy", s.Entropy != nil, []string{ActionLoss}},
		{"ber", s.BER != 0, []string{ActionBER}},
		{"direction", s.Direction != "", []string{ActionLoss, ActionBER}},
		{"random", s.Random != nil, []string{ActionDown, ActionFlap, ActionDegrade, ActionLoss, ActionBER, ActionBlackhole}},
	} {
		if err := only(c.field, c.set, c.actions...); err != nil {
			return err
		}
	}

	// Times.
	if s.AtStep != nil {
		switch {
		case *s.AtStep < 0 || *s.AtStep > MaxAtStep:
			return errorf(path+".at_step", "%d is out of range; allowed 0 to %d (a training step, from 0)", *s.AtStep, MaxAtStep)
		case s.Random != nil:
			return errorf(path+".at_step", "given with random; a random process runs over [at, random.until) of the run, from its start")
		}
	}
	if s.At < 0 {
		return errorf(path+".at", "%v is negative; allowed 0 to the end of the run", s.At)
	}
	if duration > 0 && s.At >= duration {
		return errorf(path+".at", "%v is not inside the run (0 to %v)", s.At, duration)
	}
	if s.For < 0 {
		return errorf(path+".for", "%v is negative; allowed > 0 (how long until the target is restored)", s.For)
	}
	if s.For != 0 && s.Random != nil {
		return errorf(path+".for", "given with random; a random process's failures last random.repair")
	}

	// Per action.
	switch a {
	case ActionFlap:
		if s.DownFor <= 0 {
			return errorf(path+".down_for", "%v; want how long each flap keeps the link down, > 0", timeOrMissing(s.DownFor))
		}
		if s.Count < 1 || s.Count > MaxCount {
			return errorf(path+".count", "%d is out of range; allowed 1 to %d down/up cycles", s.Count, MaxCount)
		}
		if s.Count > 1 || s.Period != 0 {
			if s.Period <= s.DownFor {
				return errorf(path+".period", "%v is not longer than down_for (%v); allowed > down_for (the link must come up between flaps)", s.Period, s.DownFor)
			}
			if s.Period > (sim.MaxTime-s.At-s.DownFor)/sim.Time(s.Count) {
				return errorf(path+".period", "%v x %d cycles runs past the end of time (about 106 days)", s.Period, s.Count)
			}
		}
	case ActionDegrade:
		switch {
		case s.Rate != 0 && s.Factor != 0:
			return errorf(path+".factor", "given with rate; give one of rate (the degraded rate) and factor (a fraction of the link's rate)")
		case s.Rate == 0 && s.Factor == 0:
			return errorf(path+".rate", "and factor both missing or 0; give rate (e.g. 50Gbps, below the link's rate) or factor (e.g. 0.5 of the link's rate, above 0); a link at rate 0 is action down")
		case s.Rate < 0:
			return errorf(path+".rate", "%v is negative; allowed above 0 and below the link's rate", s.Rate)
		case s.Factor != 0 && !(s.Factor > 0 && s.Factor < 1):
			return errorf(path+".factor", "%v is out of range; allowed above 0 and below 1 (of the link's rate)", s.Factor)
		}
	case ActionLoss:
		if !(s.Loss >= 0 && s.Loss <= 1) {
			return errorf(path+".loss", "%v is out of range; allowed 0..1 (0 clears the loss)", s.Loss)
		}
		if s.Loss == 0 && (s.For != 0 || s.Random != nil) {
			return errorf(path+".loss", "0 clears a loss and cannot be restored or drawn; give a probability above 0")
		}
	case ActionBER:
		if !(s.BER > 0 && s.BER <= MaxBER) {
			return errorf(path+".ber", "%v is out of range; allowed above 0 and up to %g (clear a BER with action heal; for heavier loss use action loss)", s.BER, MaxBER)
		}
	}
	if a == ActionLoss || a == ActionBER {
		switch s.Direction {
		case DirOut, DirIn, DirBoth:
		default:
			return errorf(path+".direction", "%q is not a direction; allowed out (leaving the named port, default), in (arriving at it), both", s.Direction)
		}
	}
	if s.Random != nil {
		return s.Random.validate(path+".random", kind, a, s.At, duration)
	}
	return nil
}

// validate checks a random process of action a on targets of kind, starting at at.
func (r *Random) validate(path, kind, a string, at, duration sim.Time) error {
	switch {
	case r.PerDay != 0 && r.MTBF != 0:
		return errorf(path+".mtbf", "given with per_day; give one failure rate")
	case r.PerDay == 0 && r.MTBF == 0:
		return errorf(path+".per_day", "missing; there is no published default for %s on a %s (the HPN rate %g per link-day is for links failing down); give per_day (failures per element per day) or mtbf", a, kind, HPNLinkFailuresPerDay)
	case r.PerDay != 0 && !(r.PerDay > 0 && r.PerDay <= MaxPerDay):
		return errorf(path+".per_day", "%v is out of range; allowed above 0 and up to %g failures per element per day", r.PerDay, MaxPerDay)
	case r.MTBF < 0:
		return errorf(path+".mtbf", "%v is negative; allowed > 0", r.MTBF)
	}
	if r.Until == 0 {
		return errorf(path+".until", "missing; give when the process ends (default run.duration)")
	}
	if r.Until <= at {
		return errorf(path+".until", "%v is not after at (%v); the process runs over [at, until)", r.Until, at)
	}
	if duration > 0 && r.Until > duration {
		return errorf(path+".until", "%v is after the end of the run (%v); allowed up to run.duration (the default)", r.Until, duration)
	}
	if r.Repair == nil {
		return nil
	}
	if a == ActionFlap {
		return errorf(path+".repair", "does not apply to flap; a flap's down_for, period and count are its repair")
	}
	return r.Repair.validate(path + ".repair")
}

// validate checks a repair-time distribution.
func (rp *Repair) validate(path string) error {
	switch rp.Dist {
	case RepairFixed, RepairExponential:
		if rp.Mean <= 0 {
			return errorf(path+".mean", "%v; want the %s repair time's mean, > 0", timeOrMissing(rp.Mean), rp.Dist)
		}
		if rp.Median != 0 {
			return errorf(path+".median", "applies to dist lognormal only; %s takes mean", rp.Dist)
		}
		if rp.Sigma != 0 {
			return errorf(path+".sigma", "applies to dist lognormal only")
		}
	case RepairLognormal:
		switch {
		case rp.Mean != 0 && rp.Median != 0:
			return errorf(path+".median", "given with mean; give one of median and mean")
		case rp.Mean < 0 || rp.Median < 0 || rp.Mean == 0 && rp.Median == 0:
			return errorf(path+".median", "%v; want the lognormal's median (or mean), > 0", timeOrMissing(rp.Median+rp.Mean))
		case !(rp.Sigma > 0 && rp.Sigma <= MaxSigma):
			return errorf(path+".sigma", "%v is out of range; allowed above 0 and up to %g (default %g)", rp.Sigma, MaxSigma, DefaultLognormalSigma)
		}
	case "":
		return errorf(path+".dist", "missing; allowed fixed, exponential, lognormal")
	default:
		return errorf(path+".dist", "%q is not a distribution; allowed fixed, exponential, lognormal", rp.Dist)
	}
	return nil
}

// draw returns one repair time, at least 1 ps.
func (rp *Repair) draw(rng interface {
	ExpFloat64() float64
	NormFloat64() float64
}) sim.Time {
	var t float64
	switch rp.Dist {
	case RepairFixed:
		t = float64(rp.Mean)
	case RepairExponential:
		t = rng.ExpFloat64() * float64(rp.Mean)
	case RepairLognormal:
		mu := math.Log(float64(rp.Median))
		if rp.Median == 0 {
			mu = math.Log(float64(rp.Mean)) - rp.Sigma*rp.Sigma/2 // mean = exp(mu + sigma^2/2)
		}
		t = math.Exp(mu + rp.Sigma*rng.NormFloat64())
	}
	return timeOf(t)
}

// timeOf converts a non-negative float of picoseconds to a Time of at least 1 ps, saturating
// at MaxTime.
func timeOf(t float64) sim.Time {
	switch {
	case !(t >= 1):
		return 1
	case t >= float64(sim.MaxTime):
		return sim.MaxTime
	}
	return sim.Time(t)
}

// addTime is a + b saturating at MaxTime (both >= 0).
func addTime(a, b sim.Time) sim.Time {
	if b > sim.MaxTime-a {
		return sim.MaxTime
	}
	return a + b
}

func timeOrMissing(t sim.Time) string {
	if t == 0 {
		return "missing"
	}
	return t.String()
}

func joinOr(xs []string) string {
	switch len(xs) {
	case 1:
		return xs[0]
	case 2:
		return xs[0] + " or " + xs[1]
	}
	out := ""
	for i, x := range xs {
		switch {
		case i == len(xs)-1:
			out += " or " + x
		case i > 0:
			out += ", " + x
		default:
			out += x
		}
	}
	return out
}

// Error is a problem with one fault entry. Path names the field as a scenario user reads it
// ("faults[2].period", "faults[0].link"); Msg names the bad value and what is allowed, or for
// a contradiction the other entry involved.
type Error struct {
	Path string
	Msg  string
}

// Error formats the error on one line as "path: message".
func (e *Error) Error() string { return e.Path + ": " + e.Msg }

func errorf(path, format string, args ...any) error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
}
