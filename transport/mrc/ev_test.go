package mrc

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

func evRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// evNew builds an EV set over len(paths) planes and audits it.
func evNew(t *testing.T, cfg EVConfig, paths []int, seed uint64) *EVSet {
	t.Helper()
	s, err := NewEVSet(cfg, len(paths), paths, evRand(seed))
	if err != nil {
		t.Fatalf("NewEVSet: %v", err)
	}
	evAudit(t, s)
	return s
}

func evAudit(t *testing.T, s *EVSet) {
	t.Helper()
	if err := s.Audit(); err != nil {
		t.Fatalf("audit: %v", err)
	}
}

func evEntryOf(t *testing.T, s *EVSet, ev int) EVEntry {
	t.Helper()
	e, ok := s.Entry(ev)
	if !ok {
		t.Fatalf("Entry(%d) out of range", ev)
	}
	return e
}

// evActiveIn returns the active EVs of plane p (every plane if p < 0), in index order.
func evActiveIn(s *EVSet, p int) []int {
	var out []int
	for ev := 0; ev < s.Len(); ev++ {
		e, _ := s.Entry(ev)
		if e.Active && (p < 0 || e.Plane == p) {
			out = append(out, ev)
		}
	}
	return out
}

func TestEVStateString(t *testing.T) {
	for st, want := range map[EVState]string{
		Good: "GOOD", Skip: "SKIP", AssumedBad: "ASSUMED_BAD", Denied: "DENIED", 9: "EVState(9)",
	} {
		if got := st.String(); got != want {
			t.Errorf("EVState(%d).String() = %q, want %q", uint8(st), got, want)
		}
	}
}

func TestEVConfigDefaults(t *testing.T) {
	tests := []struct {
		in, want EVConfig
	}{
		{EVConfig{}, EVConfig{Active: 128, Backup: 64, MinActive: 32, ProbeInterval: 50 * sim.Microsecond, ProbeSuccesses: 3, Rotation: RotationFixed, CESkip: CESkipBalance}},
		{EVConfig{Active: 10}, EVConfig{Active: 10, Backup: 5, MinActive: 2, ProbeInterval: 50 * sim.Microsecond, ProbeSuccesses: 3, Rotation: RotationFixed, CESkip: CESkipBalance}},
		{EVConfig{Active: 2}, EVConfig{Active: 2, Backup: 1, MinActive: 1, ProbeInterval: 50 * sim.Microsecond, ProbeSuccesses: 3, Rotation: RotationFixed, CESkip: CESkipBalance}},
		{EVConfig{Active: 256, Backup: NoEVBackup, MinActive: 7, ProbeInterval: sim.Millisecond, ProbeSuccesses: 1, Rotation: RotationShuffle},
			EVConfig{Active: 256, Backup: NoEVBackup, MinActive: 7, ProbeInterval: sim.Millisecond, ProbeSuccesses: 1, Rotation: RotationShuffle, CESkip: CESkipBalance}},
		{EVConfig{CESkip: CESkipAlways}, EVConfig{Active: 128, Backup: 64, MinActive: 32, ProbeInterval: 50 * sim.Microsecond, ProbeSuccesses: 3, Rotation: RotationFixed, CESkip: CESkipAlways}},
	}
	for _, tt := range tests {
		got := tt.in.WithDefaults()
		if got != tt.want {
			t.Errorf("%+v.WithDefaults() = %+v, want %+v", tt.in, got, tt.want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%+v: defaults do not validate: %v", tt.in, err)
		}
		if again := got.WithDefaults(); again != got {
			t.Errorf("WithDefaults is not idempotent: %+v then %+v", got, again)
		}
	}
}

func TestEVConfigValidate(t *testing.T) {
	def := EVConfig{}.WithDefaults()
	with := func(f func(*EVConfig)) EVConfig { c := def; f(&c); return c }
	tests := []struct {
		name  string
		cfg   EVConfig
		field string // "" for valid
	}{
		{"defaults", def, ""},
		{"no backup", with(func(c *EVConfig) { c.Backup = NoEVBackup }), ""},
		{"probing off", with(func(c *EVConfig) { c.ProbeInterval = sim.MaxTime }), ""},
		{"most EVs", with(func(c *EVConfig) { c.Active, c.Backup = MaxEVs-10, 10 }), ""},
		{"active negative", with(func(c *EVConfig) { c.Active = -1 }), "active"},
		{"active too many", with(func(c *EVConfig) { c.Active = MaxEVs + 1 }), "active"},
		{"backup below -1", with(func(c *EVConfig) { c.Backup = -2 }), "backup"},
		{"active+backup too many", with(func(c *EVConfig) { c.Active, c.Backup = MaxEVs-10, 11 }), "backup"},
		{"min active zero", with(func(c *EVConfig) { c.MinActive = 0 }), "min_active"},
		{"min active above active", with(func(c *EVConfig) { c.MinActive = 129 }), "min_active"},
		{"probe interval negative", with(func(c *EVConfig) { c.ProbeInterval = -sim.Microsecond }), "probe_interval"},
		{"probe interval zero", with(func(c *EVConfig) { c.ProbeInterval = 0 }), "probe_interval"},
		{"probe interval 1ps", with(func(c *EVConfig) { c.ProbeInterval = 1 }), "probe_interval"},
		{"probe interval 999ns", with(func(c *EVConfig) { c.ProbeInterval = 999 * sim.Nanosecond }), "probe_interval"},
		{"rotation unknown", with(func(c *EVConfig) { c.Rotation = "random" }), "rotation"},
		{"ce skip always", with(func(c *EVConfig) { c.CESkip = CESkipAlways }), ""},
		{"ce skip unknown", with(func(c *EVConfig) { c.CESkip = "never" }), "ce_skip"},
		{"probe successes zero", with(func(c *EVConfig) { c.ProbeSuccesses = 0 }), "probe_successes"},
		{"probe successes too many", with(func(c *EVConfig) { c.ProbeSuccesses = MaxEVProbeSuccesses + 1 }), "probe_successes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.field != "" && err == nil:
				t.Fatalf("Validate() = nil, want an error naming %s", tt.field)
			case tt.field != "" && !strings.HasPrefix(err.Error(), tt.field+": "):
				t.Fatalf("Validate() = %q, want it to start with %q", err, tt.field+": ")
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("Validate() = %q spans lines; want one line", err)
			}
		})
	}
}

func TestNewEVSetErrors(t *testing.T) {
	rng := evRand(1)
	tests := []struct {
		name   string
		cfg    EVConfig
		planes int
		paths  []int
		rng    *rand.Rand
		want   string
	}{
		{"bad config", EVConfig{MinActive: -3}, 1, []int{4}, rng, "min_active"},
		{"nil rng", EVConfig{}, 1, []int{4}, nil, "random source"},
		{"no planes", EVConfig{}, 0, nil, rng, "0 planes"},
		{"path counts mismatch", EVConfig{}, 2, []int{4}, rng, "1 path counts for 2 planes"},
		{"dead plane", EVConfig{}, 2, []int{4, 0}, rng, "plane 1 has 0 paths"},
		{"negative paths", EVConfig{}, 1, []int{-1}, rng, "plane 0 has -1 paths"},
		{"fewer EVs than planes", EVConfig{Active: 3}, 4, []int{4, 4, 4, 4}, rng, "active"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewEVSet(tt.cfg, tt.planes, tt.paths, tt.rng)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewEVSet = %v, %v; want an error containing %q", s, err, tt.want)
			}
		})
	}
}

// TestEVTableDraw checks the initial table [MRC §2.1, §2.4]: the active set split evenly over
// the planes, drawn at random from each plane's paths (distinct while there are enough),
// backups on the paths left over, and paths shared as evenly as possible when there are not.
func TestEVTableDraw(t *testing.T) {
	tests := []struct {
		name           string
		cfg            EVConfig
		paths          []int
		active, backup []int // per plane
	}{
		{"8 planes, many paths", EVConfig{}, []int{256, 256, 256, 256, 256, 256, 256, 256},
			[]int{16, 16, 16, 16, 16, 16, 16, 16}, []int{8, 8, 8, 8, 8, 8, 8, 8}},
		{"4 planes, few paths", EVConfig{Active: 32, Backup: 16}, []int{5, 5, 5, 5},
			[]int{8, 8, 8, 8}, []int{4, 4, 4, 4}},
		{"one path per plane (same T0)", EVConfig{Active: 8}, []int{1, 1}, []int{4, 4}, []int{2, 2}},
		{"mixed", EVConfig{Active: 20, Backup: 10}, []int{3, 1000}, []int{10, 10}, []int{5, 5}},
		{"active fits, backups reuse", EVConfig{Active: 8, Backup: 8}, []int{6}, []int{8}, []int{8}},
		{"no backup", EVConfig{Active: 6, Backup: NoEVBackup}, []int{2, 9, 4}, []int{2, 2, 2}, []int{0, 0, 0}},
		{"huge plane", EVConfig{Active: 4}, []int{1 << 30}, []int{4}, []int{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := evNew(t, tt.cfg, tt.paths, 7)
			good, skip, bad, denied, active := s.Counts()
			total := 0
			for p := range tt.paths {
				total += tt.active[p] + tt.backup[p]
			}
			if good != total || skip+bad+denied != 0 || active != s.Config().Active || s.Len() != total {
				t.Fatalf("Counts() = %d good, %d skip, %d bad, %d denied, %d active; Len %d; want %d good, %d active",
					good, skip, bad, denied, active, s.Len(), total, s.Config().Active)
			}
			for p, n := range tt.paths {
				prevPlane := 0
				if s.PlaneUsable(p) != tt.active[p] || s.PlaneBackup(p) != tt.backup[p] {
					t.Errorf("plane %d: %d active, %d backup; want %d, %d", p, s.PlaneUsable(p), s.PlaneBackup(p), tt.active[p], tt.backup[p])
				}
				useActive := map[int]int{}
				useAll := map[int]int{}
				for ev := 0; ev < s.Len(); ev++ {
					e := evEntryOf(t, s, ev)
					if e.Plane < prevPlane {
						t.Fatalf("EV %d of plane %d follows plane %d: want EVs numbered plane by plane", ev, e.Plane, prevPlane)
					}
					prevPlane = e.Plane
					if e.Plane != p {
						continue
					}
					if e.Path < 0 || e.Path >= n {
						t.Fatalf("EV %d: path %d outside plane %d's %d paths", ev, e.Path, p, n)
					}
					useAll[e.Path]++
					if e.Active {
						useActive[e.Path]++
					}
				}
				// Even spread: each path carries floor or ceil of the EVs per path.
				for what, use := range map[string]map[int]int{"active": useActive, "all": useAll} {
					k := 0
					for _, c := range use {
						k += c
					}
					lo, hi := k/n, (k+n-1)/n
					for path, c := range use {
						if c < lo || c > hi {
							t.Errorf("plane %d (%d paths): path %d carries %d of %d %s EVs; want %d to %d", p, n, path, c, k, what, lo, hi)
						}
					}
					if len(use) != min(k, n) {
						t.Errorf("plane %d: %s EVs use %d distinct paths; want %d", p, what, len(use), min(k, n))
					}
				}
			}
		})
	}
}

// TestEVUnevenSplit: an active set that does not divide by the planes is split as evenly as
// possible, with the extra EVs on planes the rng picks (not always the first ones).
func TestEVUnevenSplit(t *testing.T) {
	patterns := map[string]bool{}
	for seed := uint64(0); seed < 40; seed++ {
		s := evNew(t, EVConfig{Active: 10, Backup: 6}, []int{50, 50, 50, 50}, seed)
		var a, b []int
		sumA, sumB := 0, 0
		for p := 0; p < 4; p++ {
			a = append(a, s.PlaneUsable(p))
			b = append(b, s.PlaneBackup(p))
			sumA += a[p]
			sumB += b[p]
			if a[p] < 2 || a[p] > 3 || b[p] < 1 || b[p] > 2 {
				t.Fatalf("seed %d: active %v backup %v; want 2 or 3 active and 1 or 2 backups per plane", seed, a, b)
			}
		}
		if sumA != 10 || sumB != 6 {
			t.Fatalf("seed %d: active %v backup %v; want sums 10 and 6", seed, a, b)
		}
		patterns[fmt.Sprint(a)] = true
	}
	if len(patterns) < 3 {
		t.Errorf("extra EVs went to the same planes for 40 seeds: %v", patterns)
	}
}

// TestEVNextRotation [MRC §2.1, §2.4]: with every EV Good, Next visits each active EV exactly
// once per rotation and never gives two consecutive packets the same EV, across rotation
// boundaries included; with RotationShuffle in a new pseudo-random order each rotation, with
// RotationFixed in the same order every rotation.
func TestEVNextRotation(t *testing.T) {
	for _, tt := range []struct {
		name     string
		active   int
		paths    []int
		rotation string
		orders   int // distinct rotation orders expected in 200 rotations
	}{
		{"32 over 4 planes", 32, []int{64, 64, 64, 64}, RotationShuffle, 200},
		{"3 EVs", 3, []int{8}, RotationShuffle, 6}, // all 3! orders occur
		{"2 EVs", 2, []int{8}, RotationShuffle, 1}, // no repeat across the boundary forces a b, a b, ...
		{"32 over 4 planes fixed", 32, []int{64, 64, 64, 64}, RotationFixed, 1},
		{"3 EVs fixed", 3, []int{8}, RotationFixed, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := evNew(t, EVConfig{Active: tt.active, Rotation: tt.rotation}, tt.paths, 3)
			want := evActiveIn(s, -1)
			const rounds = 200
			orders := map[string]bool{}
			last := -1
			for r := 1; r <= rounds; r++ {
				var got []int
				for range tt.active {
					ev, ok := s.Next()
					if !ok {
						t.Fatal("Next() not ok with every EV Good")
					}
					if ev == last {
						t.Fatalf("round %d: EV %d twice in a row", r, ev)
					}
					last = ev
					got = append(got, ev)
					if s.Stats().Rounds != int64(r) {
						t.Fatalf("after %d packets of round %d, Rounds = %d", len(got), r, s.Stats().Rounds)
					}
				}
				orders[fmt.Sprint(got)] = true
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("round %d visited %v; want each of %v once", r, got, want)
				}
			}
			if len(orders) != tt.orders {
				t.Errorf("%d distinct orders in %d rounds; want %d", len(orders), rounds, tt.orders)
			}
			evAudit(t, s)
		})
	}
}

// TestEVNextSingle: one EV is used for every packet (the repeat is unavoidable).
func TestEVNextSingle(t *testing.T) {
	s := evNew(t, EVConfig{Active: 1, Backup: NoEVBackup}, []int{4}, 1)
	for range 5 {
		if ev, ok := s.Next(); !ok || ev != 0 {
			t.Fatalf("Next() = %d, %v; want 0, true", ev, ok)
		}
	}
}

// TestEVSkipOnce [MRC §2.1; API: mrc.h EV states]: a SKIP EV is passed over once when the
// rotation reaches it, then is GOOD and used again.
func TestEVSkipOnce(t *testing.T) {
	const n = 16
	s := evNew(t, EVConfig{Active: n}, []int{32, 32}, 11)
	for range n { // one full rotation
		s.Next()
	}
	act := evActiveIn(s, -1)
	a, b := act[3], act[12]
	s.OnCE(a)
	s.OnTrimNack(b, false)
	if st := evEntryOf(t, s, a).State; st != Skip {
		t.Fatalf("after OnCE: %v; want SKIP", st)
	}
	seen := map[int]bool{}
	for range n - 2 {
		ev, _ := s.Next()
		if ev == a || ev == b {
			t.Fatalf("SKIP EV %d used in the rotation after it was marked", ev)
		}
		seen[ev] = true
	}
	if len(seen) != n-2 {
		t.Fatalf("%d distinct EVs in the rotation; want %d", len(seen), n-2)
	}
	// The next rotation (after passing any SKIP EVs left at the end of this one) uses all.
	seen = map[int]bool{}
	for range n {
		ev, _ := s.Next()
		seen[ev] = true
	}
	if !seen[a] || !seen[b] || len(seen) != n {
		t.Fatalf("rotation after the skip used %d EVs (a %v, b %v); want all %d", len(seen), seen[a], seen[b], n)
	}
	if st := s.Stats(); st.Skips != 2 || st.SkipsPassed != 2 {
		t.Errorf("Skips %d, SkipsPassed %d; want 2, 2", st.Skips, st.SkipsPassed)
	}
	evAudit(t, s)
}

// TestEVSkipTransitions [MRC §2.1]: which feedback moves an EV to SKIP.
func TestEVSkipTransitions(t *testing.T) {
	tests := []struct {
		name  string
		apply func(s *EVSet, ev int)
		want  EVState
		skips int64
	}{
		{"CE", func(s *EVSet, ev int) { s.OnCE(ev) }, Skip, 1},
		{"CE twice", func(s *EVSet, ev int) { s.OnCE(ev); s.OnCE(ev) }, Skip, 1},
		{"trim before last hop", func(s *EVSet, ev int) { s.OnTrimNack(ev, false) }, Skip, 1},
		{"trim at last hop (incast: congestion control's job)", func(s *EVSet, ev int) { s.OnTrimNack(ev, true) }, Good, 0},
		{"CE on a retired EV", func(s *EVSet, ev int) { s.OnLoss(ev); s.OnCE(ev) }, AssumedBad, 0},
		{"loss on a SKIP EV", func(s *EVSet, ev int) { s.OnCE(ev); s.OnLoss(ev) }, AssumedBad, 1},
		{"CE on a denied EV", func(s *EVSet, ev int) { s.Deny(ev); s.OnCE(ev) }, Denied, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := evNew(t, EVConfig{Active: 8}, []int{16}, 2)
			ev := evActiveIn(s, -1)[0]
			tt.apply(s, ev)
			if st := evEntryOf(t, s, ev).State; st != tt.want {
				t.Errorf("state %v; want %v", st, tt.want)
			}
			if got := s.Stats().Skips; got != tt.skips {
				t.Errorf("Skips = %d; want %d", got, tt.skips)
			}
			evAudit(t, s)
		})
	}
	t.Run("CE on a backup", func(t *testing.T) {
		s := evNew(t, EVConfig{Active: 8}, []int{16}, 2)
		ev := s.Len() - 1 // the last EV of the plane is a backup
		s.OnCE(ev)
		if e := evEntryOf(t, s, ev); e.Active || e.State != Good {
			t.Errorf("backup after CE: %+v; want GOOD, not active", e)
		}
	})
}

// TestEVLossReplacesFromSamePlane [MRC §2.1, §2.4]: an untrimmed loss makes the EV
// ASSUMED_BAD and a backup of the same plane takes its place, so planes stay equally loaded;
// once the plane's backups are gone its share shrinks.
func TestEVLossReplacesFromSamePlane(t *testing.T) {
	s := evNew(t, EVConfig{Active: 16, Backup: 8}, []int{64, 64, 64, 64}, 5)
	for i, want := range []struct{ usable, backup int }{{4, 1}, {4, 0}, {3, 0}, {2, 0}} {
		before := evActiveIn(s, 2)
		ev := before[0]
		s.OnLoss(ev)
		e := evEntryOf(t, s, ev)
		if e.State != AssumedBad || e.Active {
			t.Fatalf("loss %d: EV %d is %v, active %v; want ASSUMED_BAD, not active", i, ev, e.State, e.Active)
		}
		after := evActiveIn(s, 2)
		for _, a := range after {
			if evEntryOf(t, s, a).Plane != 2 {
				t.Fatalf("loss %d: active EV %d of plane 2 is on another plane", i, a)
			}
		}
		if s.PlaneUsable(2) != want.usable || s.PlaneBackup(2) != want.backup {
			t.Fatalf("loss %d: plane 2 has %d active, %d backup; want %d, %d", i, s.PlaneUsable(2), s.PlaneBackup(2), want.usable, want.backup)
		}
		for _, p := range []int{0, 1, 3} {
			if s.PlaneUsable(p) != 4 || s.PlaneBackup(p) != 2 {
				t.Fatalf("loss %d: plane %d changed to %d active, %d backup", i, p, s.PlaneUsable(p), s.PlaneBackup(p))
			}
		}
		evAudit(t, s)
	}
	if st := s.Stats(); st.Retirements != 4 || st.Replacements != 2 || st.Suppressed != 0 {
		t.Errorf("stats %+v; want 4 retirements, 2 replacements", st)
	}
	// Stale losses (on retired EVs, on backups) change nothing.
	before := s.Stats()
	for ev := 0; ev < s.Len(); ev++ {
		if e := evEntryOf(t, s, ev); e.State == AssumedBad || (!e.Active && e.State == Good) {
			s.OnLoss(ev)
		}
	}
	if got := s.Stats(); got.Retirements != before.Retirements || got.Replacements != before.Replacements {
		t.Errorf("stale losses changed stats: %+v -> %+v", before, got)
	}
	evAudit(t, s)
}

// TestEVMinActive [MRC §2.4: ev_min_active]: retirements stop at the floor; the EV stays in use
// and the suppressed retirement is counted.
func TestEVMinActive(t *testing.T) {
	s := evNew(t, EVConfig{Active: 8, Backup: NoEVBackup, MinActive: 5}, []int{16}, 9)
	act := evActiveIn(s, -1)
	for _, ev := range act[:4] {
		s.OnLoss(ev)
	}
	if _, _, bad, _, active := s.Counts(); bad != 3 || active != 5 {
		t.Fatalf("%d ASSUMED_BAD, %d active; want 3, 5", bad, active)
	}
	if e := evEntryOf(t, s, act[3]); e.State != Good || !e.Active {
		t.Fatalf("EV at the floor: %v, active %v; want GOOD and active", e.State, e.Active)
	}
	if st := s.Stats(); st.Suppressed != 1 || st.Retirements != 3 {
		t.Errorf("stats %+v; want 1 suppressed, 3 retirements", st)
	}
	for range 50 {
		ev, ok := s.Next()
		if !ok || slices.Contains(act[:3], ev) {
			t.Fatalf("Next() = %d, %v; want one of the 5 EVs in use", ev, ok)
		}
	}
	evAudit(t, s)
}

// TestEVWholePlaneFails [MRC §2.1, §5.2]: when every EV of one plane sees an untrimmed loss
// (its backups included as they rotate in), the QP runs on the other planes, equally loaded,
// and Next never picks the dead plane.
func TestEVWholePlaneFails(t *testing.T) {
	const dead = 1
	s := evNew(t, EVConfig{}, []int{16, 16, 16, 16}, 21) // 32 active, 16 backup per plane
	for i := 0; s.PlaneUsable(dead) > 0; i++ {
		if i > 1000 {
			t.Fatal("plane never emptied")
		}
		s.OnLoss(evActiveIn(s, dead)[0])
		evAudit(t, s)
	}
	if got := s.PlanesInUse(); got != 3 {
		t.Fatalf("PlanesInUse() = %d; want 3", got)
	}
	if st := s.Stats(); st.Retirements != 48 || st.Replacements != 16 || st.Suppressed != 0 {
		t.Errorf("stats %+v; want 48 retirements, 16 replacements", st)
	}
	perPlane := make([]int, 4)
	for range 96 * 10 { // ten rotations of the 96 EVs left
		ev, ok := s.Next()
		if !ok {
			t.Fatal("Next() not ok")
		}
		e := evEntryOf(t, s, ev)
		if e.Plane == dead {
			t.Fatalf("Next() = %d on the dead plane", ev)
		}
		perPlane[e.Plane]++
	}
	if want := []int{320, 0, 320, 320}; !slices.Equal(perPlane, want) {
		t.Errorf("packets per plane %v; want %v", perPlane, want)
	}
}

// TestEVProbes [MRC §2.1; API]: an ASSUMED_BAD EV is probed every ProbeInterval, from at once;
// K consecutive clean answers make it GOOD, a lost probe restarts the count.
func TestEVProbes(t *testing.T) {
	const us = sim.Microsecond
	cfg := EVConfig{Active: 4, Backup: 2, ProbeInterval: 50 * us, ProbeSuccesses: 3}
	s := evNew(t, cfg, []int{8}, 4)
	if got := s.NextProbeAt(); got != sim.MaxTime {
		t.Fatalf("NextProbeAt() = %v with nothing to probe; want never", got)
	}
	ev := evActiveIn(s, -1)[0]
	s.OnLoss(ev)
	step := func(now sim.Time, due bool, answer string) {
		t.Helper()
		got, ok := s.ProbeDue(now)
		if ok != due || (ok && got != ev) {
			t.Fatalf("ProbeDue(%v) = %d, %v; want %d, %v", now, got, ok, ev, due)
		}
		switch answer {
		case "ack":
			s.OnProbeAck(now+5*us, ev)
		case "loss":
			s.OnProbeLoss(ev)
		}
		evAudit(t, s)
	}
	if got := s.NextProbeAt(); got != 0 {
		t.Fatalf("NextProbeAt() = %v after a loss; want 0 (due at once)", got)
	}
	step(100*us, true, "ack")
	if e := evEntryOf(t, s, ev); e.NextProbe != 150*us || e.LastProbe != 100*us || e.ProbeSuccesses != 1 || e.ProbesSent != 1 {
		t.Fatalf("after one probe: %+v", e)
	}
	if got := s.NextProbeAt(); got != 150*us {
		t.Fatalf("NextProbeAt() = %v; want 150us", got)
	}
	step(149*us, false, "")
	step(150*us, true, "ack")
	step(200*us, true, "loss")
	if e := evEntryOf(t, s, ev); e.ProbeSuccesses != 0 || e.State != AssumedBad {
		t.Fatalf("after a lost probe: %+v; want 0 successes, ASSUMED_BAD", e)
	}
	step(250*us, true, "ack")
	s.OnProbeAck(256*us, ev) // duplicate answer: ignored
	if e := evEntryOf(t, s, ev); e.ProbeSuccesses != 1 {
		t.Fatalf("a duplicate answer counted: %d successes", e.ProbeSuccesses)
	}
	step(300*us, true, "")    // unanswered ...
	step(350*us, true, "ack") // ... counts as lost when the next probe is due
	if e := evEntryOf(t, s, ev); e.ProbeSuccesses != 1 {
		t.Fatalf("an unanswered probe did not reset the count: %d successes", e.ProbeSuccesses)
	}
	step(400*us, true, "ack")
	step(450*us, true, "ack")
	e := evEntryOf(t, s, ev)
	if e.State != Good || e.Active || e.NextProbe != sim.MaxTime {
		t.Fatalf("after 3 clean answers: %+v; want GOOD in the backup pool", e)
	}
	if s.PlaneBackup(0) != 2 || s.NextProbeAt() != sim.MaxTime {
		t.Fatalf("backups %d, NextProbeAt %v; want 2 (the recovered EV joined the pool), never", s.PlaneBackup(0), s.NextProbeAt())
	}
	st := s.Stats()
	if st.ProbesSent != 8 || st.ProbeLosses != 2 || st.Recoveries != 1 {
		t.Errorf("stats %+v; want 8 probes, 2 lost, 1 recovery", st)
	}
	if _, ok := s.ProbeDue(sim.Second); ok {
		t.Error("a recovered EV is still probed")
	}
}

// TestEVRecoveryRefillsShortPlane: a recovered EV goes straight back into the active set when
// its plane ran out of backups.
func TestEVRecoveryRefillsShortPlane(t *testing.T) {
	s := evNew(t, EVConfig{Active: 4, Backup: NoEVBackup, ProbeSuccesses: 1}, []int{8, 8}, 4)
	ev := evActiveIn(s, 1)[0]
	s.OnLoss(ev)
	if s.PlaneUsable(1) != 1 {
		t.Fatalf("plane 1 has %d active; want 1", s.PlaneUsable(1))
	}
	s.Next() // start a rotation so the recovered EV must join it mid-way
	p, _ := s.ProbeDue(0)
	s.OnProbeAck(sim.Microsecond, p)
	if e := evEntryOf(t, s, ev); e.State != Good || !e.Active || s.PlaneUsable(1) != 2 {
		t.Fatalf("recovered EV %+v, plane 1 active %d; want GOOD, active, 2", e, s.PlaneUsable(1))
	}
	evAudit(t, s)
	seen := map[int]bool{}
	for range 8 {
		ev, _ := s.Next()
		seen[ev] = true
	}
	if !seen[ev] {
		t.Error("the recovered EV is not used")
	}
}

// TestEVProbeOrder: with several EVs due, the earliest due goes first, ties in retirement
// order; probing off ("never") probes nothing.
func TestEVProbeOrder(t *testing.T) {
	const us = sim.Microsecond
	s := evNew(t, EVConfig{Active: 6, ProbeInterval: 10 * us}, []int{16}, 8)
	act := evActiveIn(s, -1)
	s.OnLoss(act[4])
	s.OnLoss(act[1])
	for _, want := range []int{act[4], act[1]} {
		if got, ok := s.ProbeDue(0); !ok || got != want {
			t.Fatalf("ProbeDue(0) = %d, %v; want %d (retired first)", got, ok, want)
		}
	}
	s.OnLoss(act[2])                                         // due at once
	if got, ok := s.ProbeDue(5 * us); !ok || got != act[2] { // the others are due at 10us
		t.Fatalf("ProbeDue(5us) = %d, %v; want %d", got, ok, act[2])
	}
	var got []int
	for {
		ev, ok := s.ProbeDue(20 * us)
		if !ok {
			break
		}
		got = append(got, ev)
	}
	if want := []int{act[4], act[1], act[2]}; !slices.Equal(got, want) {
		t.Errorf("ProbeDue(20us) order %v; want %v (due 10us, 10us, 15us)", got, want)
	}

	off := evNew(t, EVConfig{Active: 6, ProbeInterval: sim.MaxTime}, []int{16}, 8)
	off.OnLoss(evActiveIn(off, -1)[0])
	if at := off.NextProbeAt(); at != sim.MaxTime {
		t.Errorf("probing off: NextProbeAt() = %v; want never", at)
	}
	if ev, ok := off.ProbeDue(sim.MaxTime); ok {
		t.Errorf("probing off: ProbeDue = %d", ev)
	}
}

// TestEVDenyAllow [MRC §2.1; API: mrc.h EV states]: DENIED EVs are never used or probed until
// the operator allows them; a denied active EV is replaced from its plane's backups.
func TestEVDenyAllow(t *testing.T) {
	s := evNew(t, EVConfig{Active: 8, Backup: 4}, []int{32, 32}, 6)
	act := evActiveIn(s, 0)
	s.Deny(act[0])
	s.OnLoss(act[1])
	s.Deny(act[1]) // an ASSUMED_BAD EV: leaves the probe list
	s.Deny(act[1])
	for _, ev := range act[:2] {
		if e := evEntryOf(t, s, ev); e.State != Denied || e.Active {
			t.Fatalf("EV %d: %+v; want DENIED", ev, e)
		}
	}
	if s.PlaneUsable(0) != 4 || s.PlaneBackup(0) != 0 {
		t.Fatalf("plane 0: %d active, %d backup; want 4, 0", s.PlaneUsable(0), s.PlaneBackup(0))
	}
	if ev, ok := s.ProbeDue(sim.Second); ok {
		t.Fatalf("ProbeDue = %d; a denied EV is never probed", ev)
	}
	for range 100 {
		if ev, _ := s.Next(); ev == act[0] || ev == act[1] {
			t.Fatalf("Next() = %d, a denied EV", ev)
		}
	}
	if st := s.Stats(); st.Denials != 2 {
		t.Errorf("Denials = %d; want 2", st.Denials)
	}
	s.Allow(act[0])
	s.Allow(act[0])
	s.Allow(act[2]) // not denied: nothing
	if e := evEntryOf(t, s, act[0]); e.State != Good || e.Active {
		t.Fatalf("allowed EV: %+v; want GOOD in the backup pool (plane 0 is full)", e)
	}
	if st := s.Stats(); st.Allows != 1 {
		t.Errorf("Allows = %d; want 1", st.Allows)
	}
	evAudit(t, s)

	// A whole plane denied (port-status update), then allowed again.
	if n := s.DenyPlane(1); n != 6 {
		t.Fatalf("DenyPlane(1) = %d; want 6", n)
	}
	if s.PlanesInUse() != 1 || s.PlaneUsable(1) != 0 || s.Stats().Replacements != 2 {
		t.Fatalf("after DenyPlane: %d planes, plane 1 %d active, %d replacements; want 1, 0, 2 (backups denied first)",
			s.PlanesInUse(), s.PlaneUsable(1), s.Stats().Replacements)
	}
	for range 50 {
		ev, _ := s.Next()
		if e := evEntryOf(t, s, ev); e.Plane == 1 {
			t.Fatalf("Next() = %d on the denied plane", ev)
		}
	}
	evAudit(t, s)
	if n := s.AllowPlane(1); n != 6 {
		t.Fatalf("AllowPlane(1) = %d; want 6", n)
	}
	if s.PlaneUsable(1) != 4 || s.PlaneBackup(1) != 2 {
		t.Fatalf("after AllowPlane: plane 1 %d active, %d backup; want 4, 2", s.PlaneUsable(1), s.PlaneBackup(1))
	}
	evAudit(t, s)

	// Everything denied: the QP stalls until one EV is allowed.
	for ev := 0; ev < s.Len(); ev++ {
		s.Deny(ev)
	}
	if ev, ok := s.Next(); ok {
		t.Fatalf("Next() = %d with every EV denied; want not ok", ev)
	}
	s.Allow(3)
	if ev, ok := s.Next(); !ok || ev != 3 {
		t.Fatalf("Next() = %d, %v; want 3, true", ev, ok)
	}
	evAudit(t, s)
}

// TestEVBadIndex: EV indices out of range are ignored and counted, never a panic.
func TestEVBadIndex(t *testing.T) {
	s := evNew(t, EVConfig{Active: 4}, []int{8}, 1)
	for _, ev := range []int{-1, s.Len(), 1 << 40} {
		s.OnCE(ev)
		s.OnTrimNack(ev, false)
		s.OnLoss(ev)
		s.OnProbeAck(0, ev)
		s.OnProbeLoss(ev)
		s.Deny(ev)
		s.Allow(ev)
		if _, ok := s.Entry(ev); ok {
			t.Errorf("Entry(%d) ok", ev)
		}
		if _, _, ok := s.Route(ev); ok {
			t.Errorf("Route(%d) ok", ev)
		}
	}
	for _, p := range []int{-1, 1, 99} {
		if s.PlaneUsable(p) != 0 || s.PlaneBackup(p) != 0 || s.DenyPlane(p) != 0 || s.AllowPlane(p) != 0 {
			t.Errorf("plane %d out of range is not empty", p)
		}
	}
	if got := s.Stats().Invalid; got != 21 {
		t.Errorf("Invalid = %d; want 21", got)
	}
	if good, _, _, _, active := s.Counts(); good != 6 || active != 4 {
		t.Errorf("bad indices changed the table: %d good, %d active", good, active)
	}
	evAudit(t, s)
}

// TestEVDeterminism: the same seed and calls give the same EVs and routes; another seed
// differs.
func TestEVDeterminism(t *testing.T) {
	run := func(seed uint64) []int {
		s := evNew(t, EVConfig{}, []int{40, 40, 40, 40}, seed)
		var out []int
		for i := range 2000 {
			ev, _ := s.Next()
			_, path, _ := s.Route(ev)
			out = append(out, ev, path)
			switch i % 7 {
			case 0:
				s.OnCE(ev)
			case 3:
				s.OnLoss(ev)
			}
			for p, ok := s.ProbeDue(sim.Time(i) * sim.Microsecond); ok; p, ok = s.ProbeDue(sim.Time(i) * sim.Microsecond) {
				s.OnProbeAck(sim.Time(i)*sim.Microsecond, p)
				out = append(out, -p)
			}
		}
		return out
	}
	a, b, c := run(42), run(42), run(43)
	if !slices.Equal(a, b) {
		t.Error("same seed, different EV sequences")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds, same EV sequence")
	}
}

// TestEVNoAlloc: Next allocates nothing, nor does the per-packet and per-timer work around it.
func TestEVNoAlloc(t *testing.T) {
	s := evNew(t, EVConfig{ProbeSuccesses: 2}, []int{16, 16, 16, 16}, 1)
	if n := testing.AllocsPerRun(10000, func() { s.Next() }); n != 0 {
		t.Errorf("Next: %v allocs per call; want 0", n)
	}
	now := sim.Time(0)
	if n := testing.AllocsPerRun(10000, func() {
		ev, _ := s.Next()
		s.OnCE(ev)
		ev, _ = s.Next()
		s.OnLoss(ev)
		ev, _ = s.Next()
		s.OnTrimNack(ev, false)
		now += 25 * sim.Microsecond
		for p, ok := s.ProbeDue(now); ok; p, ok = s.ProbeDue(now) {
			s.OnProbeAck(now, p)
		}
		s.NextProbeAt()
	}); n != 0 {
		t.Errorf("packet and probe cycle: %v allocs; want 0", n)
	}
	evAudit(t, s)
	if st := s.Stats(); st.Recoveries == 0 || st.Retirements == 0 {
		t.Errorf("the cycle did not exercise recovery: %+v", st)
	}
}

// evModel is a plain reference for the EV state machine [MRC §2.1, §2.4; API: mrc.h EV
// states]: maps and ordered lists, no rotation bookkeeping.
type evModel struct {
	cfg     EVConfig
	plane   []int
	state   []EVState
	active  map[int]bool
	target  []int
	backup  [][]int
	probing []int
	ok      []int
	out     []bool
	next    []sim.Time
	lost    []int      // consecutive probes lost (backoff exponent)
	last    []sim.Time // last probe sent
}

func newEVModel(s *EVSet) *evModel {
	m := &evModel{cfg: s.Config(), active: map[int]bool{}, target: slices.Clone(s.target)}
	for ev := 0; ev < s.Len(); ev++ {
		e, _ := s.Entry(ev)
		m.plane = append(m.plane, e.Plane)
		m.state = append(m.state, Good)
		m.ok = append(m.ok, 0)
		m.out = append(m.out, false)
		m.next = append(m.next, sim.MaxTime)
		m.lost = append(m.lost, 0)
		m.last = append(m.last, 0)
		if e.Active {
			m.active[ev] = true
		}
	}
	for _, pool := range s.backup { // the initial draw is random; take it as given
		var b []int
		for _, ev := range pool {
			b = append(b, int(ev))
		}
		m.backup = append(m.backup, b)
	}
	return m
}

func (m *evModel) valid(ev int) bool { return ev >= 0 && ev < len(m.state) }

func (m *evModel) planeActive(p int) int {
	n := 0
	for ev := range m.active {
		if m.plane[ev] == p {
			n++
		}
	}
	return n
}

func (m *evModel) skip(ev int) {
	if m.valid(ev) && m.active[ev] && m.state[ev] == Good {
		m.state[ev] = Skip
	}
}

// leave takes active EV ev out, replacing it from its plane's backups; false if there are none.
func (m *evModel) leave(ev int) bool {
	delete(m.active, ev)
	p := m.plane[ev]
	if len(m.backup[p]) == 0 {
		return false
	}
	m.active[m.backup[p][0]] = true
	m.backup[p] = m.backup[p][1:]
	return true
}

func (m *evModel) loss(ev int) {
	if !m.valid(ev) || !m.active[ev] {
		return
	}
	if len(m.backup[m.plane[ev]]) == 0 && len(m.active)-1 < m.cfg.MinActive {
		return
	}
	m.leave(ev)
	m.state[ev] = AssumedBad
	m.ok[ev], m.out[ev], m.next[ev], m.lost[ev] = 0, false, 0, 0
	if m.cfg.ProbeInterval == sim.MaxTime {
		m.next[ev] = sim.MaxTime
	}
	m.probing = append(m.probing, ev)
}

func (m *evModel) probeDue(now sim.Time) (int, bool) {
	best := -1
	for _, ev := range m.probing {
		if m.next[ev] != sim.MaxTime && m.next[ev] <= now && (best < 0 || m.next[ev] < m.next[best]) {
			best = ev
		}
	}
	if best < 0 {
		return -1, false
	}
	if m.out[best] {
		m.ok[best] = 0
		m.lost[best]++
	}
	m.out[best] = true
	m.last[best] = now
	m.next[best] = now + m.cfg.ProbeInterval<<min(m.lost[best], MaxEVProbeBackoff)
	return best, true
}

func (m *evModel) admit(ev int) {
	m.state[ev] = Good
	m.ok[ev], m.out[ev], m.next[ev], m.lost[ev] = 0, false, sim.MaxTime, 0
	p := m.plane[ev]
	if m.planeActive(p) < m.target[p] {
		m.active[ev] = true
	} else {
		m.backup[p] = append(m.backup[p], ev)
	}
}

func (m *evModel) probeAck(ev int) {
	if !m.valid(ev) || m.state[ev] != AssumedBad || !m.out[ev] {
		return
	}
	m.out[ev] = false
	m.ok[ev]++
	if m.lost[ev] > 0 {
		m.lost[ev] = 0
		m.next[ev] = min(m.next[ev], m.last[ev]+m.cfg.ProbeInterval)
	}
	if m.ok[ev] >= m.cfg.ProbeSuccesses {
		m.probing = slices.DeleteFunc(m.probing, func(x int) bool { return x == ev })
		m.admit(ev)
	}
}

func (m *evModel) probeLoss(ev int) {
	if m.valid(ev) && m.state[ev] == AssumedBad {
		if m.out[ev] {
			m.lost[ev]++
		}
		m.ok[ev], m.out[ev] = 0, false
	}
}

func (m *evModel) deny(ev int) {
	if !m.valid(ev) || m.state[ev] == Denied {
		return
	}
	p := m.plane[ev]
	switch {
	case m.active[ev]:
		m.leave(ev)
	case m.state[ev] == AssumedBad:
		m.probing = slices.DeleteFunc(m.probing, func(x int) bool { return x == ev })
	default:
		m.backup[p] = slices.DeleteFunc(m.backup[p], func(x int) bool { return x == ev })
	}
	m.state[ev] = Denied
	m.ok[ev], m.out[ev], m.next[ev], m.lost[ev] = 0, false, sim.MaxTime, 0
}

func (m *evModel) allow(ev int) {
	if m.valid(ev) && m.state[ev] == Denied {
		m.admit(ev)
	}
}

// compare reports the first difference between the set and the model.
func (m *evModel) compare(s *EVSet) error {
	if err := s.Audit(); err != nil {
		return err
	}
	var count [numEVStates]int
	for ev := range m.state {
		e, _ := s.Entry(ev)
		count[m.state[ev]]++
		if e.State != m.state[ev] || e.Active != m.active[ev] || e.ProbeSuccesses != m.ok[ev] ||
			e.ProbeOutstanding != m.out[ev] || e.NextProbe != m.next[ev] {
			return fmt.Errorf("EV %d: set %+v; model %v active=%v ok=%d out=%v next=%v",
				ev, e, m.state[ev], m.active[ev], m.ok[ev], m.out[ev], m.next[ev])
		}
	}
	for p, pool := range m.backup {
		got := []int{}
		for _, ev := range s.backup[p] {
			got = append(got, int(ev))
		}
		if !slices.Equal(got, append([]int{}, pool...)) {
			return fmt.Errorf("plane %d backups %v; model %v", p, got, pool)
		}
		if s.PlaneUsable(p) != m.planeActive(p) {
			return fmt.Errorf("plane %d: %d usable; model %d", p, s.PlaneUsable(p), m.planeActive(p))
		}
	}
	good, skip, bad, denied, active := s.Counts()
	if good != count[Good] || skip != count[Skip] || bad != count[AssumedBad] || denied != count[Denied] || active != len(m.active) {
		return fmt.Errorf("Counts() = %d %d %d %d %d; model %v, %d active", good, skip, bad, denied, active, count, len(m.active))
	}
	want := sim.MaxTime
	for _, ev := range m.probing {
		want = min(want, m.next[ev])
	}
	if got := s.NextProbeAt(); got != want {
		return fmt.Errorf("NextProbeAt() = %v; model %v", got, want)
	}
	return nil
}

// TestEVAgainstModel drives random event sequences through the set and the plain reference
// model and compares them after every call; Next must return an active GOOD EV, never one the
// model holds as SKIP, and within a rotation no EV twice unless it left and rejoined.
func TestEVAgainstModel(t *testing.T) {
	configs := []struct {
		cfg   EVConfig
		paths []int
	}{
		{EVConfig{Active: 12, Backup: 5, MinActive: 4, ProbeInterval: 10 * sim.Microsecond, ProbeSuccesses: 2, CESkip: CESkipAlways}, []int{7, 2, 40}},
		{EVConfig{Active: 6, Backup: NoEVBackup, MinActive: 2, ProbeInterval: 10 * sim.Microsecond, ProbeSuccesses: 3, CESkip: CESkipAlways}, []int{4}},
		{EVConfig{Active: 16, ProbeInterval: sim.MaxTime, CESkip: CESkipAlways}, []int{3, 3}},
		{EVConfig{Active: 9, Backup: 9, MinActive: 1, ProbeInterval: 3 * sim.Microsecond, ProbeSuccesses: 1, CESkip: CESkipAlways}, []int{5, 5, 5, 5}},
	}
	for ci, c := range configs {
		for seed := uint64(0); seed < 25; seed++ {
			s := evNew(t, c.cfg, c.paths, seed)
			m := newEVModel(s)
			ops := rand.New(rand.NewPCG(seed, uint64(ci)))
			pick := func() int { // mostly valid EVs, sometimes out of range
				if ops.IntN(50) == 0 {
					return s.Len() + ops.IntN(3) - 1
				}
				return ops.IntN(s.Len())
			}
			now := sim.Time(0)
			last := -1
			round := int64(-1)
			inRound := map[int]bool{}
			for step := 0; step < 3000; step++ {
				var what string
				switch r := ops.IntN(100); {
				case r < 40:
					what = "Next"
					roundsBefore := s.Stats().Rounds
					ev, ok := s.Next()
					if ok != (len(m.active) > 0) {
						t.Fatalf("config %d seed %d step %d: Next ok=%v with %d active in the model", ci, seed, step, ok, len(m.active))
					}
					if !ok {
						break
					}
					// A SKIP EV is never used in the rotation that reaches it; it may be used
					// right after, in the next rotation, which this call may have begun.
					skipped := m.state[ev] == Skip && s.Stats().Rounds > roundsBefore
					if !m.active[ev] || (m.state[ev] != Good && !skipped) {
						t.Fatalf("config %d seed %d step %d: Next() = %d, model: %v active=%v", ci, seed, step, ev, m.state[ev], m.active[ev])
					}
					if ev == last && len(m.active) > 1 {
						t.Fatalf("config %d seed %d step %d: EV %d twice in a row", ci, seed, step, ev)
					}
					if r := s.Stats().Rounds; r != round {
						round = r
						clear(inRound)
					}
					if inRound[ev] {
						t.Fatalf("config %d seed %d step %d: EV %d twice in rotation %d", ci, seed, step, ev, round)
					}
					inRound[ev] = true
					last = ev
					for e := range m.active { // passed over: SKIP -> GOOD
						if st, _ := s.Entry(e); m.state[e] == Skip && st.State == Good {
							m.state[e] = Good
						}
					}
				case r < 50:
					what = "OnCE"
					ev := pick()
					s.OnCE(ev)
					m.skip(ev)
				case r < 55:
					what = "OnTrimNack"
					ev, lastHop := pick(), ops.IntN(2) == 0
					s.OnTrimNack(ev, lastHop)
					if !lastHop {
						m.skip(ev)
					}
				case r < 65:
					what = "OnLoss"
					ev := pick()
					s.OnLoss(ev)
					m.loss(ev)
				case r < 75:
					what = "ProbeDue"
					now += sim.Time(ops.IntN(8)) * sim.Microsecond
					got, gotOK := s.ProbeDue(now)
					want, wantOK := m.probeDue(now)
					if got != want || gotOK != wantOK {
						t.Fatalf("config %d seed %d step %d: ProbeDue(%v) = %d, %v; model %d, %v", ci, seed, step, now, got, gotOK, want, wantOK)
					}
				case r < 87:
					what = "OnProbeAck"
					ev := pick()
					if len(m.probing) > 0 && ops.IntN(4) > 0 {
						ev = m.probing[ops.IntN(len(m.probing))]
					}
					s.OnProbeAck(now, ev)
					m.probeAck(ev)
				case r < 90:
					what = "OnProbeLoss"
					ev := pick()
					s.OnProbeLoss(ev)
					m.probeLoss(ev)
				case r < 94:
					what = "Deny"
					ev := pick()
					s.Deny(ev)
					m.deny(ev)
				case r < 99:
					what = "Allow"
					ev := pick()
					s.Allow(ev)
					m.allow(ev)
				default:
					p := ops.IntN(len(c.paths))
					if ops.IntN(2) == 0 {
						what = "DenyPlane"
						s.DenyPlane(p)
						for pass := 0; pass < 2; pass++ {
							for ev := range m.state {
								if m.plane[ev] == p && m.state[ev] != Denied && (pass == 1 || !m.active[ev]) {
									m.deny(ev)
								}
							}
						}
					} else {
						what = "AllowPlane"
						s.AllowPlane(p)
						for ev := range m.state {
							if m.plane[ev] == p {
								m.allow(ev)
							}
						}
					}
				}
				for ev := range inRound { // an EV that left may rejoin and be used again
					if !m.active[ev] {
						delete(inRound, ev)
					}
				}
				if err := m.compare(s); err != nil {
					t.Fatalf("config %d seed %d step %d after %s: %v", ci, seed, step, what, err)
				}
			}
		}
	}
}

// TestEVRotationSurvivesChanges: EVs leaving the active set mid-rotation (retired or denied,
// visited or not) and EVs joining it (recovered) leave the rest of the rotation exactly the
// unvisited EVs still active plus the newcomers, each once [MRC §2.1, §2.4].
func TestEVRotationSurvivesChanges(t *testing.T) {
	const n = 16
	for seed := uint64(0); seed < 200; seed++ {
		s := evNew(t, EVConfig{Active: n, Backup: NoEVBackup, MinActive: 1, ProbeSuccesses: 1}, []int{32}, seed)
		ops := rand.New(rand.NewPCG(seed, 99))
		for range n { // finish rotation 1
			s.Next()
		}
		visited := map[int]bool{}
		k := 1 + ops.IntN(n) // how far into rotation 2 (all of it at most)
		for range k {
			ev, _ := s.Next()
			visited[ev] = true
		}
		// Retire or deny a random few, visited or not (the last one of the rotation included).
		act := evActiveIn(s, -1)
		ops.Shuffle(len(act), func(i, j int) { act[i], act[j] = act[j], act[i] })
		gone := act[:ops.IntN(6)]
		for i, ev := range gone {
			if i%2 == 0 {
				s.OnLoss(ev)
			} else {
				s.Deny(ev)
			}
			evAudit(t, s)
		}
		want := map[int]bool{}
		for _, ev := range evActiveIn(s, -1) {
			if !visited[ev] {
				want[ev] = true
			}
		}
		// A retired EV recovers and rejoins the (short) active set mid-rotation.
		if p, ok := s.ProbeDue(0); ok {
			s.OnProbeAck(0, p)
			want[p] = true
			evAudit(t, s)
		}
		rounds := s.Stats().Rounds
		got := map[int]bool{}
		for len(got) < len(want) {
			ev, _ := s.Next()
			if s.Stats().Rounds != rounds || got[ev] || !want[ev] {
				t.Fatalf("seed %d: rest of rotation returned %d (round %d->%d); want each of %v once", seed, ev, rounds, s.Stats().Rounds, want)
			}
			got[ev] = true
		}
		s.Next()
		if s.Stats().Rounds != rounds+1 {
			t.Fatalf("seed %d: rotation did not end after its %d remaining EVs", seed, len(want))
		}
	}
}

// TestEVFixedRotationSpreadsPaths: with RotationFixed, each plane's packets visit every path of
// the plane once before any path a second time, rotation after rotation, even when the sender
// picks planes in an irregular order with NextOn (the NIC's least-backlog choice) and with
// Skip EVs passed over. This is what keeps a sender's load on each T0 uplink evenly spaced.
func TestEVFixedRotationSpreadsPaths(t *testing.T) {
	const planes, pathsPer = 4, 8
	for seed := uint64(1); seed <= 5; seed++ {
		s := evNew(t, EVConfig{Active: 64}, []int{pathsPer, pathsPer, pathsPer, pathsPer}, seed) // 16 EVs, 2 per path
		rng := evRand(seed + 100)
		seq := make([][]int, planes) // per plane: paths in sending order
		for i := range 64 * 50 {
			p := rng.IntN(planes)
			for s.LeftOn(p) == 0 {
				p = (p + 1) % planes
			}
			ev, ok := s.NextOn(p)
			if !ok {
				t.Fatal("NextOn not ok with every EV Good")
			}
			pl, path, _ := s.Route(ev)
			if pl != p {
				t.Fatalf("seed %d packet %d: NextOn(%d) gave plane %d with EVs left on %d", seed, i, p, pl, p)
			}
			seq[p] = append(seq[p], path)
		}
		for p := range planes {
			// Every window of pathsPer consecutive packets of the plane covers every path once.
			for i := 0; i+pathsPer <= len(seq[p]); i++ {
				seen := map[int]bool{}
				for _, x := range seq[p][i : i+pathsPer] {
					seen[x] = true
				}
				if len(seen) != pathsPer {
					t.Fatalf("seed %d plane %d: packets %d..%d took paths %v; want all %d distinct",
						seed, p, i, i+pathsPer-1, seq[p][i:i+pathsPer], pathsPer)
				}
			}
		}
		evAudit(t, s)
	}
}

// TestEVCESkipBalance checks the CESkipBalance rule over the share of a plane's paths marked
// in its last lap: a CE mark skips its EV unless every path answered in that lap was marked
// (0 to all of 1, 2, 4 and 8 paths marked, some paths not answered, one or two EVs per path,
// a second plane untouched), the first lap and a lap without answers follow [MRC §2.1], and
// CESkipAlways skips on every mark.
func TestEVCESkipBalance(t *testing.T) {
	// nextLap draws EVs until the plane's next lap (a rotation of Next) has begun.
	nextLap := func(s *EVSet) {
		r := s.Stats().Rounds
		for s.Stats().Rounds == r {
			if _, ok := s.Next(); !ok {
				t.Fatal("Next: no active EV")
			}
		}
	}
	// evOn returns plane pl's active EVs on path pa.
	evOn := func(s *EVSet, pl, pa int) []int {
		var out []int
		for ev := 0; ev < s.Len(); ev++ {
			if e, _ := s.Entry(ev); e.Active && e.Plane == pl && e.Path == pa {
				out = append(out, ev)
			}
		}
		return out
	}
	for _, rule := range []string{CESkipBalance, CESkipAlways} {
		for _, paths := range []int{1, 2, 4, 8} {
			for _, perPath := range []int{1, 2} {
				for answered := 0; answered <= paths; answered++ {
					for marked := 0; marked <= answered; marked++ {
						name := fmt.Sprintf("%s/paths=%d/evs_per_path=%d/answered=%d/marked=%d", rule, paths, perPath, answered, marked)
						t.Run(name, func(t *testing.T) {
							cfg := EVConfig{Active: 2 * paths * perPath, Backup: NoEVBackup, MinActive: 1, CESkip: rule}
							s := evNew(t, cfg, []int{paths, paths}, uint64(paths*100+answered*10+marked))
							// The first lap has no last lap: a mark skips [MRC §2.1].
							nextLap(s)
							first := evOn(s, 0, 0)[0]
							s.OnCE(first)
							if e, _ := s.Entry(first); e.State != Skip {
								t.Fatalf("first lap: EV %d is %v after a CE mark, want SKIP", first, e.State)
							}
							// The lap being judged: paths 0..answered-1 answered, the first
							// marked of them marked. A marked path's other EV (and the marked
							// EV itself) also answers clean: a mark in a lap outweighs them.
							nextLap(s)
							for pa := 0; pa < answered; pa++ {
								evs := evOn(s, 0, pa)
								for _, ev := range evs {
									s.OnClean(ev)
								}
								if pa < marked {
									s.OnCE(evs[len(evs)-1])
									s.OnClean(evs[len(evs)-1])
								}
							}
							// Plane 1's paths all marked: another plane's marks do not count.
							for pa := 0; pa < paths; pa++ {
								s.OnCE(evOn(s, 1, pa)[0])
							}
							nextLap(s)
							// Judge a mark on path 0 (EVs still Good: skips passed over).
							target := -1
							for _, ev := range evOn(s, 0, 0) {
								if e, _ := s.Entry(ev); e.State == Good {
									target = ev
								}
							}
							if target < 0 {
								t.Fatal("no Good EV on path 0 to mark")
							}
							held0 := s.Stats().SkipsHeld
							s.OnCE(target)
							hold := rule == CESkipBalance && answered > 0 && marked == answered
							want := Skip
							if hold {
								want = Good
							}
							if e, _ := s.Entry(target); e.State != want {
								t.Errorf("EV %d is %v after a CE mark, want %v", target, e.State, want)
							}
							if got, w := s.Stats().SkipsHeld-held0, int64(map[bool]int{true: 1}[hold]); got != w {
								t.Errorf("SkipsHeld rose by %d, want %d", got, w)
							}
							evAudit(t, s)
						})
					}
				}
			}
		}
	}
}
