package scenario

import "testing"

// TestPresetsResolve checks that every embedded scenario parses and resolves, so lockstep bench
// and lockstep run PRESET never fail on input.
func TestPresetsResolve(t *testing.T) {
	names := Presets()
	if len(names) < 5 {
		t.Fatalf("%d presets: %v", len(names), names)
	}
	for _, n := range names {
		sc, err := Preset(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if sc.Name != n {
			t.Errorf("preset %s names itself %q", n, sc.Name)
		}
	}
	if _, err := Preset("no-such"); err == nil {
		t.Error("an unknown preset resolved")
	}
}
