package transport

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

func noEndpoint(any, EndpointEnv) (Endpoint, error) { return nil, nil }

// TestRegisterRejects pins what Register refuses: kinds that are not lower-case
// identifiers, reserved kinds, duplicates and plugins without Name or NewEndpoint.
func TestRegisterRejects(t *testing.T) {
	Register("plugtest_ok", Plugin{Name: "OK", NewEndpoint: noEndpoint})
	for _, c := range []struct {
		kind string
		p    Plugin
	}{
		{"", Plugin{Name: "x", NewEndpoint: noEndpoint}},
		{"raw", Plugin{Name: "x", NewEndpoint: noEndpoint}},
		{"ideal", Plugin{Name: "x", NewEndpoint: noEndpoint}},
		{"none", Plugin{Name: "x", NewEndpoint: noEndpoint}},
		{"kind", Plugin{Name: "x", NewEndpoint: noEndpoint}},
		{"MRC", Plugin{Name: "x", NewEndpoint: noEndpoint}},
		{"a b", Plugin{Name: "x", NewEndpoint: noEndpoint}},
		{"x.y", Plugin{Name: "x", NewEndpoint: noEndpoint}},
		{"9lives", Plugin{Name: "x", NewEndpoint: noEndpoint}},
		{strings.Repeat("a", 33), Plugin{Name: "x", NewEndpoint: noEndpoint}},
		{"plugtest_ok", Plugin{Name: "again", NewEndpoint: noEndpoint}},
		{"plugtest_noname", Plugin{NewEndpoint: noEndpoint}},
		{"plugtest_noep", Plugin{Name: "x"}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", c.kind)
				}
			}()
			Register(c.kind, c.p)
		}()
	}
	if p, ok := Lookup("plugtest_ok"); !ok || p.Name != "OK" {
		t.Fatalf("Lookup(plugtest_ok) = %v, %v", p, ok)
	}
	if k := Kinds(); len(k) != 1 || k[0] != "plugtest_ok" {
		t.Fatalf("Kinds() = %v; want only the one registered here", k)
	}
}

// TestSummaryJSON checks the transport block's encoding: the common keys first, then
// Detail's in the same object; a Detail that repeats a common key or is not an object is an
// error; an empty Detail adds nothing.
func TestSummaryJSON(t *testing.T) {
	type detail struct {
		Window int `json:"window"`
	}
	s := &Summary{Kind: "k", Name: "K", Flows: 2, FlowsCompleted: 2, BaseRTTUs: 1.5, Detail: &detail{7}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if !strings.HasPrefix(got, `{"kind":"k","flows":2,`) || !strings.HasSuffix(got, `,"window":7}`) || strings.Contains(got, `"name"`) {
		t.Fatalf("encoded %s; want kind first, window last, no name", got)
	}
	for _, bad := range []any{&struct {
		Flows int `json:"flows"`
	}{1}, []int{1}, 3} {
		if _, err := json.Marshal(&Summary{Kind: "k", Detail: bad}); err == nil {
			t.Errorf("Detail %#v encoded without error", bad)
		}
	}
	plain, _ := json.Marshal(&Summary{Kind: "k"})
	empty, err := json.Marshal(&Summary{Kind: "k", Detail: &struct{}{}})
	if err != nil || string(plain) != string(empty) {
		t.Fatalf("empty Detail: %s (%v); want %s", empty, err, plain)
	}
}

// TestFillAndLossSpan checks the common figures' arithmetic on a hand-made case.
func TestFillAndLossSpan(t *testing.T) {
	h := NewFCTHistogram()
	var a FCTAcc
	for i, fct := range []sim.Time{10 * sim.Microsecond, 20 * sim.Microsecond, 30 * sim.Microsecond} {
		a.Add(0, fct, 10*sim.Microsecond)
		_ = h.RecordValue(int64(fct / sim.Nanosecond))
		_ = i
	}
	var s Summary
	s.Fill(2*sim.Microsecond, 10*sim.Microsecond, &a, true, h, 30_000, false, 40*sim.Microsecond)
	if s.JCTUs != 30 || s.FCTMeanUs != 20 || s.FCTOverIdealMean != 2 || s.FCTOverIdealMax != 3 || s.FCTMaxUs != 30 || s.BaseRTTUs != 2 {
		t.Fatalf("Fill: %+v", s)
	}
	var c Summary
	c.Fill(2*sim.Microsecond, 10*sim.Microsecond, &a, true, h, 30_000, true, 40*sim.Microsecond)
	if c.JCTUs != 40 || c.IdealFCTUs != 0 {
		t.Fatalf("Fill under a collective: JCT %v ideal %v; want the run's end and no ideal", c.JCTUs, c.IdealFCTUs)
	}
	var l LossLog
	for _, at := range []sim.Time{5, 5, 7, 9} {
		l.Retx(at * sim.Microsecond)
	}
	if len(l.LossAt) != 3 {
		t.Fatalf("LossLog kept %v; want one entry per instant", l.LossAt)
	}
	s.SetLossSpan(l.LossAt, []sim.Time{6 * sim.Microsecond})
	if s.FirstLossRetxUs != 5 || s.LastLossRetxUs != 9 || s.FaultToLastLossRetxUs != 3 {
		t.Fatalf("loss span %+v", s)
	}
}
