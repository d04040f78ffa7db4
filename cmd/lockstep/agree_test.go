package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// TestAgreement is the packet-vs-flow agreement suite at AgreeSmallHosts hosts: every case's
// flow-level collective time must be within its tolerance of the packet level's (the issue's
// 10% under MRC, 15% under RoCE, or the residual docs/flow-agreement.md documents).
func TestAgreement(t *testing.T) {
	if testing.Short() {
		t.Skip("the agreement suite runs every case at both levels")
	}
	cases := agreeCases()
	rows := runAgreeSuite(cases, AgreeSmallHosts, 1, runtime.GOMAXPROCS(0))
	var tab bytes.Buffer
	printAgree(&tab, rows)
	t.Logf("agreement suite (%d hosts):\n%s", AgreeSmallHosts, tab.String())
	for _, r := range rows {
		switch {
		case r.Err != nil:
			t.Errorf("%s: %v", r.Case.Name(), r.Err)
		case !r.Within():
			t.Errorf("%s: flow %.1f us / packet %.1f us = %.3f, outside 1 +- %.2f", r.Case.Name(), r.FlowUs, r.PacketUs, r.Ratio(), r.Case.Tol)
		}
	}
}

// TestAgreementSuiteCovers checks that the suite spans what the issue asks: at least 20
// cases, every algorithm under both transports, 1, 4 and 8 planes, oversubscription 1 and 2,
// and that a case's tolerance beyond the target names its cause.
func TestAgreementSuiteCovers(t *testing.T) {
	cases := agreeCases()
	if len(cases) < 20 {
		t.Fatalf("%d cases; want at least 20", len(cases))
	}
	seen := map[string]bool{}
	names := map[string]bool{}
	for _, c := range cases {
		seen["algo "+c.Algo+" "+c.Transport] = true
		seen["planes "+string(rune('0'+c.Planes))] = true
		seen["oversub "+string(rune('0'+c.Oversub))] = true
		target := agreeTarget(c.Transport)
		if c.Tol > target+1e-12 && c.Why == "" {
			t.Errorf("%s: tolerance %.2f beyond the target %.2f without a cause", c.Name(), c.Tol, target)
		}
		if names[c.Name()] {
			t.Errorf("%s: twice in the suite", c.Name())
		}
		names[c.Name()] = true
		if _, err := agreeYAML(c, AgreeSmallHosts, 1); err != nil {
			t.Errorf("%s: %v", c.Name(), err)
		}
	}
	var want []string
	for _, a := range []string{"ring", "tree", "halving_doubling", "hierarchical", "pairwise"} {
		for _, tr := range []string{"mrc", "roce"} {
			want = append(want, "algo "+a+" "+tr)
		}
	}
	want = append(want, "planes 1", "planes 4", "planes 8", "oversub 1", "oversub 2")
	for _, w := range want {
		if !seen[w] {
			t.Errorf("no case with %s", w)
		}
	}
}

// TestAgreeRowWithin checks the pass/fail rule the suite applies: a ratio just outside the
// tolerance fails, one inside passes, an error or a zero packet time fails.
func TestAgreeRowWithin(t *testing.T) {
	c := agreeCase{Tol: 0.10}
	for _, tc := range []struct {
		p, f float64
		err  bool
		want bool
	}{
		{100, 110, false, true},
		{100, 90, false, true},
		{100, 110.1, false, false},
		{100, 89.9, false, false},
		{0, 10, false, false},
		{100, 100, true, false},
	} {
		r := agreeRow{Case: c, PacketUs: tc.p, FlowUs: tc.f}
		if tc.err {
			r.Err = errTest
		}
		if got := r.Within(); got != tc.want {
			t.Errorf("packet %v flow %v err %v: Within %v, want %v", tc.p, tc.f, tc.err, got, tc.want)
		}
	}
	var b bytes.Buffer
	if n := printAgree(&b, []agreeRow{{Case: c, PacketUs: 100, FlowUs: 120}}); n != 1 || !strings.Contains(b.String(), "MISS") {
		t.Errorf("printAgree: %d missed, table\n%s", n, b.String())
	}
}

var errTest = errTestT("test error")

type errTestT string

func (e errTestT) Error() string { return string(e) }
