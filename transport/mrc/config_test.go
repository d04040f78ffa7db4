package mrc

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// fixed_retries beyond max_retries could never happen (the QP errors first): rejected unless
// max_retries is 25 (unlimited); left out, fixed_retries defaults to at most max_retries.
func TestConfigRetries(t *testing.T) {
	cases := []struct {
		name         string
		fixed, max   int
		err          []string
		wantFixed    int
		wantMax      int
		checkDefault bool
	}{
		{"defaults", 0, 0, nil, DefaultFixedRetries, DefaultMaxRetries, true},
		{"fixed above max", 10, 2, []string{"transport.mrc.fixed_retries: 10", "transport.mrc.max_retries (2)", "fixed_retries <= max_retries", "25 (unlimited)"}, 0, 0, false},
		{"fixed above default max", 20, 0, []string{"fixed_retries: 20", "max_retries (15)"}, 0, 0, false},
		{"fixed equal to max", 5, 5, nil, 5, 5, true},
		{"fixed above unlimited max", 20, UnlimitedRetries, nil, 20, UnlimitedRetries, true},
		{"max below the default fixed", 0, 3, nil, 3, 3, true},
		{"max below the default fixed, unlimited", 0, UnlimitedRetries, nil, DefaultFixedRetries, UnlimitedRetries, true},
		{"max out of range still named first", 10, 30, []string{"max_retries: 30 is out of range"}, 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{FixedRetries: c.fixed, MaxRetries: c.max}.WithDefaults()
			err := cfg.Validate("transport.mrc")
			if len(c.err) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
			} else {
				if err == nil {
					t.Fatalf("no error; want one containing %q", c.err)
				}
				for _, w := range c.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
			}
			if c.checkDefault && (cfg.FixedRetries != c.wantFixed || cfg.MaxRetries != c.wantMax) {
				t.Errorf("fixed %d, max %d; want %d, %d", cfg.FixedRetries, cfg.MaxRetries, c.wantFixed, c.wantMax)
			}
		})
	}
}

// EVs are numbered plane by plane, each plane's active EVs first, then its backups: with
// active and backup multiples of the planes, plane p holds EVs p x per .. (p+1) x per - 1 in
// every QP. Package scenario relies on this to range-check a fault's entropy (the EV number
// a packet carries) against the plane of the link it names.
func TestEVNumberingByPlane(t *testing.T) {
	for _, c := range []struct{ active, backup, planes int }{{128, 64, 8}, {16, -1, 8}, {126, 66, 6}, {8, 8, 8}, {7, 3, 1}} {
		paths := make([]int, c.planes)
		for i := range paths {
			paths[i] = 5
		}
		for seed := uint64(1); seed <= 3; seed++ {
			s, err := NewEVSet(EVConfig{Active: c.active, Backup: c.backup}, c.planes, paths, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				t.Fatal(err)
			}
			backup := max(c.backup, 0)
			per, act := (c.active+backup)/c.planes, c.active/c.planes
			if s.Len() != c.active+backup {
				t.Fatalf("%+v: %d EVs, want %d", c, s.Len(), c.active+backup)
			}
			for ev := 0; ev < s.Len(); ev++ {
				e, _ := s.Entry(ev)
				if e.Plane != ev/per || e.Active != (ev%per < act) {
					t.Fatalf("%+v seed %d: EV %d is plane %d active %v; want plane %d active %v", c, seed, ev, e.Plane, e.Active, ev/per, ev%per < act)
				}
			}
		}
	}
}

// rcv_share takes equal (the default) or max_min; anything else is an error naming the field,
// the value and what is allowed.
func TestConfigRcvShare(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", RcvShareEqual, true},
		{RcvShareEqual, RcvShareEqual, true},
		{RcvShareMaxMin, RcvShareMaxMin, true},
		{"maxmin", "", false},
		{"Equal", "", false},
	} {
		cfg := Config{RcvShare: tc.in}.WithDefaults()
		err := cfg.Validate("transport.mrc")
		if tc.ok {
			if err != nil || cfg.RcvShare != tc.want {
				t.Errorf("rcv_share %q: %q, %v; want %q", tc.in, cfg.RcvShare, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "rcv_share") || !strings.Contains(err.Error(), tc.in) || !strings.Contains(err.Error(), RcvShareMaxMin) {
			t.Errorf("rcv_share %q: error %v; want one naming the field, the value and the choices", tc.in, err)
		}
	}
}
