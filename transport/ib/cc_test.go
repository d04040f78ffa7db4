package ib

import (
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestCCTTimeline replays the reaction point [IBTA vol 1 Annex A10.4] on a fake clock: each
// BECN adds ccti_increase up to ccti_limit, the rate is line/(1 + CCTI x cct_step), the CCTI
// timer starts with the first BECN and lowers the index by one per ccti_timer down to
// ccti_min, where it stops.
func TestCCTTimeline(t *testing.T) {
	const us = sim.Microsecond
	c := CC{Enabled: true, CCTIIncrease: 2, CCTILimit: 5, CCTIMin: 1, CCTITimer: 10 * us, CCTStep: 0.5}
	q := c.NewRateControl(100e9).(*CCT)
	if q.CCTI() != 1 || q.NextEvent() != sim.MaxTime {
		t.Fatalf("start: CCTI %d, next %v; want ccti_min 1, no timer", q.CCTI(), q.NextEvent())
	}
	q.OnCNP(3 * us) // 1 -> 3, timer due at 13us
	q.OnCNP(4 * us) // 3 -> 5
	q.OnCNP(5 * us) // capped at 5
	if q.CCTI() != 5 || q.Peak != 5 || q.BECNs != 3 || q.NextEvent() != 13*us {
		t.Fatalf("after 3 BECNs: CCTI %d, peak %d, BECNs %d, next %v; want 5, 5, 3, 13us", q.CCTI(), q.Peak, q.BECNs, q.NextEvent())
	}
	line := 100e9
	if r, want := q.Rate(), sim.Rate(line/3.5); r != want {
		t.Errorf("rate at CCTI 5: %v; want line/3.5", r)
	}
	for _, c := range []struct {
		at   sim.Time
		ccti int
		next sim.Time
	}{{12 * us, 5, 13 * us}, {13 * us, 4, 23 * us}, {43 * us, 1, sim.MaxTime}, {100 * us, 1, sim.MaxTime}} {
		q.Advance(c.at)
		if q.CCTI() != c.ccti || q.NextEvent() != c.next {
			t.Errorf("at %v: CCTI %d, next %v; want %d, %v", c.at, q.CCTI(), q.NextEvent(), c.ccti, c.next)
		}
	}
	z := CC{Enabled: true}.NewRateControl(100e9)
	if z.Rate() != 100e9 {
		t.Errorf("CCTI 0: rate %v, want the line rate", z.Rate())
	}
}

// TestCCConfig: defaults (OpenSM's CC manager where fixed), the marking the fabric gets, and
// errors naming the field for bad values.
func TestCCConfig(t *testing.T) {
	d := CC{Enabled: true}.WithDefaults()
	if d.Threshold != DefaultCCThreshold || *d.MarkingRate != 10 || d.CCTIIncrease != 1 || d.CCTILimit != DefaultCCTILimit || d.CCTITimer != DefaultCCTITimer {
		t.Errorf("defaults %+v", d)
	}
	if e := d.ECN(); !e.Enabled || e.Kmin != DefaultCCThreshold || e.Kmax != DefaultCCThreshold+MarkRamp || e.Pmax != 1.0/11 {
		t.Errorf("ECN %+v", e)
	}
	zero := 0
	if e := (CC{Enabled: true, MarkingRate: &zero}).ECN(); e.Pmax != 1 {
		t.Errorf("marking_rate 0: pmax %v, want 1 (every packet)", e.Pmax)
	}
	neg := -1
	for _, c := range []struct {
		cc   CC
		want string
	}{
		{CC{MarkingRate: &neg}, "transport.ib.cc.marking_rate: -1"},
		{CC{CCTILimit: 20000}, "transport.ib.cc.ccti_limit: 20000"},
		{CC{CCTIMin: 200}, "transport.ib.cc.ccti_min: 200"},
		{CC{CCTITimer: sim.Nanosecond}, "transport.ib.cc.ccti_timer: 1ns"},
		{CC{CCTStep: 17}, "transport.ib.cc.cct_step: 17"},
		{CC{CCTIIncrease: 256}, "transport.ib.cc.ccti_increase: 256"},
	} {
		cc := c.cc
		err := (Config{CC: &cc}).WithDefaults().Validate("transport.ib")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.cc, err, c.want)
		}
	}
	on := Config{CC: &CC{Enabled: true}}.WithDefaults()
	rc := on.RC()
	if rc.CNPInterval != 1 || (Config{}).WithDefaults().RC().CNPInterval == 1 {
		t.Errorf("CNP interval with CC %v; want 1 ps (a BECN per FECN), and the default without", rc.CNPInterval)
	}
}
