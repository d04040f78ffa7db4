package roce

import (
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

const us = sim.Microsecond

// The worked examples run a 100 Gb/s NIC with the default parameters: g = 1/256, K = T = 55 us,
// B = 10 MB, F = 5, R_AI = 100 Mb/s (line / 1000), R_HAI = 1 Gb/s, floor 100 Mb/s. Expected
// values are hand-derived from [DCQCN §3.1] (the arithmetic is in each comment) and were
// checked against an independent transcription of the paper's rules, not against this code.
const exLine = 100 * sim.Gbps

func newExampleDCQCN(t testing.TB) *DCQCN {
	t.Helper()
	d, err := NewDCQCN(DCQCNConfig{Profile: DCQCNProfilePaper}, exLine)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// dcqcnStep is one input of a replayed example and the state it must leave.
type dcqcnStep struct {
	at     sim.Time
	op     byte  // 'c' CNP, 's' bytes sent, 'a' advance the clock
	bytes  int64 // for 's'
	rc, rt sim.Rate
	alpha  float64 // checked to 1e-15 relative
	t, bc  int
}

func cnpAt(at sim.Time, rc, rt sim.Rate, alpha float64, t, bc int) dcqcnStep {
	return dcqcnStep{at: at, op: 'c', rc: rc, rt: rt, alpha: alpha, t: t, bc: bc}
}

func sentAt(at sim.Time, n int64, rc, rt sim.Rate, alpha float64, t, bc int) dcqcnStep {
	return dcqcnStep{at: at, op: 's', bytes: n, rc: rc, rt: rt, alpha: alpha, t: t, bc: bc}
}

func advanceTo(at sim.Time, rc, rt sim.Rate, alpha float64, t, bc int) dcqcnStep {
	return dcqcnStep{at: at, op: 'a', rc: rc, rt: rt, alpha: alpha, t: t, bc: bc}
}

// replayDCQCN feeds steps to d with a fake clock and checks its state after each.
func replayDCQCN(t *testing.T, d *DCQCN, steps []dcqcnStep) {
	t.Helper()
	for i, s := range steps {
		switch s.op {
		case 'c':
			d.OnCNP(s.at)
		case 's':
			d.OnSent(s.at, s.bytes)
		case 'a':
			d.Advance(s.at)
		}
		tt, bc := d.Stages()
		if d.Rate() != s.rc || d.Target() != s.rt || math.Abs(d.Alpha()-s.alpha) > 1e-15*s.alpha || tt != s.t || bc != s.bc {
			t.Fatalf("step %d (%c at %v): Rc %d Rt %d alpha %.17g t %d bc %d; want Rc %d Rt %d alpha %.17g t %d bc %d (stats %+v)",
				i, s.op, s.at, d.Rate(), d.Target(), d.Alpha(), tt, bc, s.rc, s.rt, s.alpha, s.t, s.bc, d.Stats)
		}
	}
}

func TestDCQCNDefaults(t *testing.T) {
	d := newExampleDCQCN(t)
	c := d.Config()
	if c.G != 1.0/256 || c.InitialAlpha != 1 || c.AlphaTimer != 55*us || c.RateIncreaseTimer != 55*us ||
		c.ByteCounter != 10_000_000 || c.FastRecoverySteps != 5 || c.MinRate != 100*sim.Mbps {
		t.Fatalf("effective config %+v: want the [DCQCN] values (docs/protocols.md, RoCEv2: DCQCN)", c)
	}
	if c.RateAI != 100*sim.Mbps || c.RateHAI != sim.Gbps {
		t.Fatalf("R_AI %v, R_HAI %v at 100G; want line/1000 = 100Mbps and 10 x that", c.RateAI, c.RateHAI)
	}
	// [DCQCN §3.1] no slow start: a flow starts at line rate, with no timer running.
	if d.Rate() != exLine || d.Target() != exLine || d.Alpha() != 1 || d.NextEvent() != sim.MaxTime {
		t.Fatalf("initial Rc %v Rt %v alpha %v next %v; want line rate, alpha 1, no timer", d.Rate(), d.Target(), d.Alpha(), d.NextEvent())
	}
	// Explicit rates are kept.
	d2, err := NewDCQCN(DCQCNConfig{Profile: DCQCNProfilePaper, RateAI: 40 * sim.Mbps}, exLine)
	if err != nil || d2.Config().RateAI != 40*sim.Mbps || d2.Config().RateHAI != 400*sim.Mbps {
		t.Fatalf("explicit R_AI: %+v, %v; want 40Mbps and 400Mbps", d2.Config(), err)
	}
}

// TestDCQCNCNPTrain replays a train of CNPs [DCQCN §3.1: cut, alpha update, alpha decay] with a timer increase
// and an alpha decay between them.
func TestDCQCNCNPTrain(t *testing.T) {
	const a1 = 255.0 / 256 // alpha after one decay from 1
	replayDCQCN(t, newExampleDCQCN(t), []dcqcnStep{
		// Rt = 100G; Rc = 100G x (1 - 1/2) = 50G; alpha = (1-g) 1 + g = 1.
		cnpAt(0, 50e9, 100e9, 1, 0, 0),
		// K and T expire together: alpha = 255/256; fast recovery Rc = (100G + 50G) / 2.
		advanceTo(55*us, 75e9, 100e9, a1, 1, 0),
		// Rt = 75G; Rc = 75G x (1 - a1/2) = 75G x 257/512 = 37,646,484,375;
		// alpha = a1 a1 + 1/256 = 65281/65536.
		cnpAt(60*us, 37_646_484_375, 75e9, 65281.0/65536, 0, 0),
		// At 115 us: alpha decays to 65281/65536 x 255/256, and fast recovery lifts Rc to
		// ceil((75G + 37,646,484,375) / 2) = 56,323,242,188; then the CNP at 120 us:
		// Rt = 56,323,242,188, Rc = that x (1 - alpha/2) = 28,380,776,012 (truncated),
		// alpha = (1-g) alpha + g.
		cnpAt(120*us, 28_380_776_012, 56_323_242_188, float64(65281.0/65536*a1)*a1+1.0/256, 0, 0),
		// 50 us later, before K: no decay, no increase; Rc halves roughly again.
		cnpAt(170*us, 14_300_386_833, 28_380_776_012, 0.9922786364322747, 0, 0),
	})
}

// TestDCQCNAlphaDecay: alpha decays once per K without a CNP [DCQCN §3.1: alpha decay], lazily, and
// a CNP restarts the decay clock.
func TestDCQCNAlphaDecay(t *testing.T) {
	d := newExampleDCQCN(t)
	d.Advance(sim.Second) // no CNP yet: the alpha timer does not run
	if d.Alpha() != 1 || d.Stats.AlphaDecays != 0 {
		t.Fatalf("alpha %v after 1s without any CNP; want 1 (timer starts at the first CNP)", d.Alpha())
	}
	d.OnCNP(sim.Second)
	base := sim.Second
	for k := 1; k <= 3; k++ {
		d.Advance(base + sim.Time(k)*55*us - 1)
		want := math.Pow(255.0/256, float64(k-1))
		if math.Abs(d.Alpha()-want) > 1e-15 {
			t.Fatalf("just before decay %d: alpha %v, want %v", k, d.Alpha(), want)
		}
		d.Advance(base + sim.Time(k)*55*us)
		want *= 255.0 / 256
		if math.Abs(d.Alpha()-want) > 1e-15 {
			t.Fatalf("decay %d: alpha %v, want (255/256)^%d = %v", k, d.Alpha(), k, want)
		}
	}
	// A long idle stretch is applied in one step: 18,181 decays in the next second.
	d.Advance(base + sim.Second)
	n := int64(sim.Second / (55 * us))
	if got := d.Stats.AlphaDecays; got != n {
		t.Fatalf("%d decays after 1s; want %d (one per 55us)", got, n)
	}
	if want := math.Pow(255.0/256, float64(n)); math.Abs(d.Alpha()-want) > 1e-9*want {
		t.Fatalf("alpha after 1s: %g, want (255/256)^%d = %g", d.Alpha(), n, want)
	}
	// A CNP right after: alpha = (1-g) alpha + g, and the cut uses the decayed alpha.
	a := d.Alpha()
	rc := d.Rate()
	d.OnCNP(base + sim.Second)
	if want := sim.Rate(float64(rc) * (1 - a/2)); d.Rate() != want {
		t.Fatalf("cut with alpha %g: Rc %v, want %v", a, d.Rate(), want)
	}
	if want := float64((1-1.0/256)*a) + 1.0/256; d.Alpha() != want {
		t.Fatalf("alpha after CNP %v, want %v", d.Alpha(), want)
	}
}

// TestDCQCNRecoveryToLineRate: after one CNP the timer alone brings the rate back, through F = 5
// fast-recovery steps and then additive increase, to exactly line rate, where the timer stops
// [DCQCN §3.1; docs/protocols.md, "RoCEv2: DCQCN": 5 fast-recovery steps, then additive, then
// hyper].
func TestDCQCNRecoveryToLineRate(t *testing.T) {
	d := newExampleDCQCN(t)
	d.OnCNP(0)
	wantFR := []sim.Rate{75e9, 87.5e9, 93.75e9, 96.875e9, 98.4375e9}
	steps := 0
	for d.NextEvent() != sim.MaxTime {
		at := d.NextEvent()
		if at != sim.Time(steps+1)*55*us {
			t.Fatalf("increase %d due at %v, want %v", steps+1, at, sim.Time(steps+1)*55*us)
		}
		d.Advance(at)
		if steps < len(wantFR) && d.Rate() != wantFR[steps] {
			t.Fatalf("fast recovery step %d: Rc %v, want %v", steps+1, d.Rate(), wantFR[steps])
		}
		steps++
		if steps > 1000 {
			t.Fatal("no recovery after 1000 steps")
		}
	}
	// The gap to line rate after fast recovery is 50G / 2^5 = 1,562,500,000 b/s; each
	// additive step (Rt stuck at line rate) halves it, rounding the gap down, so 31 more
	// steps close it: 36 in all, at 36 x 55 us = 1.98 ms.
	if steps != 36 || d.Rate() != exLine || d.Target() != exLine || d.Recovering() {
		t.Fatalf("recovered after %d steps at Rc %v Rt %v (recovering %v); want 36 steps to line rate", steps, d.Rate(), d.Target(), d.Recovering())
	}
	s := d.Stats
	if s.FastRecoveries != 5 || s.AdditiveIncreases != 31 || s.HyperIncreases != 0 || s.TimerEvents != 36 || s.ByteEvents != 0 || s.Recoveries != 1 {
		t.Fatalf("stats %+v; want 5 fast recoveries, 31 additive, 36 timer events, 1 recovery", s)
	}
}

// TestDCQCNHyperIncrease drives the byte counter and the timer: fast recovery while both counts
// are at most F, additive increase once one exceeds F, hyper increase (Rt += (min(t, bc) - F) x
// R_HAI) once both do [DCQCN §3.1].
func TestDCQCNHyperIncrease(t *testing.T) {
	const B = 10_000_000
	replayDCQCN(t, newExampleDCQCN(t), []dcqcnStep{
		cnpAt(0, 50e9, 100e9, 1, 0, 0),
		cnpAt(1*us, 25e9, 50e9, 1, 0, 0),
		// Byte-counter events 1-5: fast recovery towards Rt = 50G.
		sentAt(2*us, B, 37.5e9, 50e9, 1, 0, 1),
		sentAt(3*us, B-1, 37.5e9, 50e9, 1, 0, 1), // one byte short of an event
		sentAt(3*us, 1, 43.75e9, 50e9, 1, 0, 2),
		sentAt(4*us, B, 46.875e9, 50e9, 1, 0, 3),
		sentAt(5*us, B, 48.4375e9, 50e9, 1, 0, 4),
		sentAt(6*us, B, 49.21875e9, 50e9, 1, 0, 5),
		// bc = 6 > F, t = 0: additive. Rt = 50.1G; Rc = 49.21875G + ceil(0.88125G / 2).
		sentAt(7*us, B, 49_659_375_000, 50.1e9, 1, 0, 6),
		// Timer events 1-5 (at 1 + 55k us): max(t, bc) > F, min <= F: additive each time;
		// alpha decays at the same instants.
		advanceTo(56*us, 49_929_687_500, 50.2e9, 255.0/256, 1, 6),
		advanceTo(276*us, 50_489_355_469, 50.6e9, 0.980620743007421, 5, 6),
		// t = 6, bc = 6: both exceed F: hyper, i = 1. Rt = 50.6G + 1G.
		advanceTo(331*us, 51_044_677_735, 51.6e9, 0.9767901932300482, 6, 6),
		advanceTo(441*us, 52_711_169_434, 53.6e9, 0.9691739244809553, 8, 6),
		// bc = 7, t = 8: i = min - F = 2: Rt += 2G.
		sentAt(442*us, B, 54_155_584_717, 55.6e9, 0.9691739244809553, 8, 7),
		sentAt(443*us, B, 56_377_792_359, 58.6e9, 0.9691739244809553, 8, 8),
	})
}

// TestDCQCNSameInstant: a timer instant at the CNP's time applies before the CNP (the order
// Advance documents), so the CNP cuts the increased rate with the decayed alpha.
func TestDCQCNSameInstant(t *testing.T) {
	replayDCQCN(t, newExampleDCQCN(t), []dcqcnStep{
		cnpAt(0, 50e9, 100e9, 1, 0, 0),
		cnpAt(55*us, 37_646_484_375, 75e9, 65281.0/65536, 0, 0),
	})
}

// TestDCQCNMinRate: cuts stop at the floor.
func TestDCQCNMinRate(t *testing.T) {
	d, err := NewDCQCN(DCQCNConfig{Profile: DCQCNProfilePaper}, sim.Gbps)
	if err != nil {
		t.Fatal(err)
	}
	want := []sim.Rate{500 * sim.Mbps, 250 * sim.Mbps, 125 * sim.Mbps, 100 * sim.Mbps, 100 * sim.Mbps}
	for i, w := range want {
		d.OnCNP(sim.Time(i) * us)
		if d.Rate() != w {
			t.Fatalf("CNP %d: Rc %v, want %v", i+1, d.Rate(), w)
		}
	}
	if d.Stats.MinRateCuts != 2 || d.Stats.CNPs != 5 {
		t.Fatalf("stats %+v; want 2 floored cuts of 5", d.Stats)
	}
}

func TestDCQCNDisabled(t *testing.T) {
	d, err := NewDCQCN(DCQCNConfig{Disabled: true}, exLine)
	if err != nil {
		t.Fatal(err)
	}
	d.OnCNP(0)
	d.OnSent(1, 1<<30)
	d.Advance(sim.Second)
	if d.Rate() != exLine || d.NextEvent() != sim.MaxTime || d.Stats != (DCQCNStats{}) {
		t.Fatalf("disabled DCQCN moved: Rc %v next %v stats %+v", d.Rate(), d.NextEvent(), d.Stats)
	}
}

func TestNewDCQCNErrors(t *testing.T) {
	cases := []struct {
		cfg  DCQCNConfig
		line sim.Rate
		want string
	}{
		{DCQCNConfig{}, 0, "line rate"},
		{DCQCNConfig{MinRate: 200 * sim.Gbps}, exLine, "transport.roce.dcqcn.min_rate: 200Gbps exceeds the line rate 100Gbps"},
		{DCQCNConfig{G: 2}, exLine, "transport.roce.dcqcn.g: 2 is out of range"},
		{DCQCNConfig{G: math.NaN()}, exLine, "transport.roce.dcqcn.g"},
	}
	for _, c := range cases {
		_, err := NewDCQCN(c.cfg, c.line)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewDCQCN(%+v, %v) = %v; want an error containing %q", c.cfg, c.line, err, c.want)
		}
	}
}

// TestDCQCNAllocs: the reaction point's per-packet and per-CNP work allocates nothing.
func TestDCQCNAllocs(t *testing.T) {
	d := newExampleDCQCN(t)
	now := sim.Time(0)
	n := testing.AllocsPerRun(1000, func() {
		now += 20 * us
		d.OnSent(now, 4178)
		d.OnCNP(now)
		d.Advance(now + 100*us)
	})
	if n != 0 {
		t.Fatalf("%v allocations per run, want 0", n)
	}
}
