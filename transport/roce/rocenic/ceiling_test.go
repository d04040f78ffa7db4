package rocenic

import (
	"math"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// The flow level's DCQCN ceiling of an idle QP (timer events only, no bytes sent) settled at
// share S follows the closed form of DCQCN's increase rules [DCQCN §3.1] from Rc = Rt = S:
// the first F timer steps are fast recovery, which moves nothing (Rt = Rc); step k > F is
// additive increase, Rt = S + (k - F) R_AI, and Rc halves its gap to Rt each step, so
// Rt - Rc = R_AI (1 - 2^-(k-F)) and Rc_k = S + (k - F) R_AI - R_AI (1 - 2^-(k-F)), up to
// the line rate, where the QP stops recovering. Swept over line rates 25G..800G and shares
// of 1% to 99% of line, production and paper profiles.
func TestFlowCeilingIdleClosedForm(t *testing.T) {
	for _, profile := range []string{roce.DCQCNProfileProduction, roce.DCQCNProfilePaper} {
		cfg := roce.DCQCNConfig{Profile: profile, FlowRecovery: true}
		rc := flowCeiling(cfg)
		eff := cfg.WithDefaults()
		if got := rc.Step(); got != eff.RateIncreaseTimer {
			t.Errorf("%s: step %v; want T = %v", profile, got, eff.RateIncreaseTimer)
		}
		for _, line := range []sim.Rate{25e9, 50e9, 100e9, 200e9, 400e9, 800e9} {
			res := eff.Resolve(line)
			ai, f := float64(res.RateAI), res.FastRecoverySteps
			for _, frac := range []float64{0.01, 0.1, 0.25, 0.5, 0.75, 0.99} {
				s := float64(line) * frac
				q, err := rc.NewQP(line)
				if err != nil {
					t.Fatal(err)
				}
				q.Settle(0, sim.Rate(s))
				T := rc.Step()
				L := float64(line)
				j0 := math.Ceil((L - s) / ai) // the additive step at which Rt reaches line rate
				for k := 1; k <= 3000; k++ {
					want := s
					switch j := float64(k - f); {
					case j <= 0:
					case j < j0:
						want = s + j*ai - ai*(1-math.Pow(2, -j))
					default: // Rt = line; Rc halves its gap to it each step from Rc at j0 - 1
						before := s + (j0-1)*ai - ai*(1-math.Pow(2, -(j0-1)))
						if j0 <= 1 {
							before = s
						}
						want = L - (L-before)*math.Pow(2, -(j-j0+1))
					}
					got, rec := q.Advance(sim.Time(k)*T, 0)
					// The reaction point's rates are whole bits/s, averages rounded up: at most
					// one bit/s per step.
					tol := float64(k) + 1
					if !rec {
						if got != line || want < L-tol {
							t.Errorf("%s %v share %.2f step %d: %v, done; want %.0f", profile, line, frac, k, got, want)
						}
						break
					}
					if math.Abs(float64(got)-want) > tol {
						t.Errorf("%s %v share %.2f step %d: ceiling %v, recovering %v; want %.0f", profile, line, frac, k, got, rec, want)
						break
					}
					if k == 3000 {
						t.Errorf("%s %v share %.2f: still recovering after %d steps", profile, line, frac, k)
					}
				}
			}
		}
	}
}

// A sending QP's ceiling (the QP at its ceiling, wire bytes = ceiling x T per step) matches
// a direct transcription of [DCQCN §3.1]'s increase rules: timer and byte-counter events
// counted from the settle, fast recovery while max(t, bc) <= F, hyper increase (Rt +=
// (min(t, bc) - F) R_HAI) once both exceed F, additive increase otherwise, then Rc = (Rt +
// Rc) / 2, capped at line rate. Line rates 25G..800G, shares 10% to 90%.
func TestFlowCeilingSendingRules(t *testing.T) {
	cfg := roce.DCQCNConfig{FlowRecovery: true}
	rc := flowCeiling(cfg)
	T := rc.Step()
	for _, line := range []sim.Rate{25e9, 100e9, 400e9, 800e9} {
		res := cfg.WithDefaults().Resolve(line)
		ai, hai, f, b := float64(res.RateAI), float64(res.RateHAI), res.FastRecoverySteps, float64(res.ByteCounter)
		for _, frac := range []float64{0.1, 0.5, 0.9} {
			q, err := rc.NewQP(line)
			if err != nil {
				t.Fatal(err)
			}
			s := float64(line) * frac
			q.Settle(0, sim.Rate(s))
			wrc, wrt, tc, bc, acc := s, s, 0, 0, 0.0
			step := func() {
				switch {
				case max(tc, bc) <= f:
				case min(tc, bc) > f:
					wrt += float64(min(tc, bc)-f) * hai
				default:
					wrt += ai
				}
				wrt = min(wrt, float64(line))
				wrc = (wrt + wrc) / 2
			}
			cur := sim.Rate(s)
			for k := 1; k <= 2000 && wrc < float64(line)*(1-1e-9); k++ {
				sent := float64(cur) * float64(T) * 1e-12 / 8 // at its ceiling for one step
				tc++
				step()
				acc += math.Floor(sent)
				for acc >= b {
					acc -= b
					bc++
					step()
				}
				got, rec := q.Advance(sim.Time(k)*T, int64(sent))
				if !rec {
					got = line
				}
				if math.Abs(float64(got)-wrc) > 1e-6*float64(line) {
					t.Errorf("%v share %.1f step %d (t %d, bc %d): ceiling %v; want %.0f", line, frac, k, tc, bc, got, wrc)
					break
				}
				cur = got
			}
		}
	}
}

// The flow model has a ceiling only with dcqcn.flow_recovery set and DCQCN on (disabled, the
// sender paces at line rate), and a line rate below min_rate is refused.
func TestFlowCeilingDisabled(t *testing.T) {
	for _, c := range []struct {
		d    roce.DCQCNConfig
		want bool
	}{
		{roce.DCQCNConfig{}, false},
		{roce.DCQCNConfig{Disabled: true}, false},
		{roce.DCQCNConfig{Disabled: true, FlowRecovery: true}, false},
		{roce.DCQCNConfig{FlowRecovery: true}, true},
		{roce.DCQCNConfig{FlowRecovery: true, Profile: roce.DCQCNProfilePaper}, true},
	} {
		m, err := flowModel(&roce.Config{DCQCN: c.d}, nil)
		if err != nil || (m.Ceiling != nil) != c.want {
			t.Errorf("%+v: model ceiling %v, %v; want one: %v", c.d, m.Ceiling, err, c.want)
		}
	}
	var _ transport.RateCeiling = dcqcnCeiling{}
	if _, err := flowCeiling(roce.DCQCNConfig{FlowRecovery: true}).NewQP(50e6); err == nil {
		t.Error("line 50 Mb/s below min_rate 100 Mb/s: no error")
	}
}
