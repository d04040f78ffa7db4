package training_test

import (
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/training"
)

// TestStragglersDecode: workload.training.stragglers reads with the scenario decoder (ranks
// as numbers or "lo-hi" ranges, durations with units), encodes back to the same value, and a
// bad range names its field.
func TestStragglersDecode(t *testing.T) {
	src := []byte(`
model: {preset: llama3-8b}
gpu: {preset: h100}
plan: {tp: 8, pp: 4}
stragglers:
  slow: [{ranks: [17, 100-103], speed: 0.8}]
  jitter: {dist: lognormal, sigma: 0.02, per: step}
  throttle: [{ranks: [3], at: 2s, for: 500ms, speed: 0.7}]
`)
	var c training.Config
	if err := scenario.Decode(src, &c); err != nil {
		t.Fatal(err)
	}
	sg := c.Stragglers
	if sg == nil || len(sg.Slow) != 1 || sg.Slow[0].Ranks[1] != (training.RankRange{Lo: 100, Hi: 103}) || sg.Slow[0].Speed != 0.8 ||
		sg.Jitter.Sigma != 0.02 || sg.Jitter.Per != "step" || sg.Throttle[0].At != 2*sim.Second || sg.Throttle[0].For != 500*sim.Millisecond {
		t.Fatalf("decoded %+v", sg)
	}
	if _, err := c.Job(1024); err != nil {
		t.Fatal(err)
	}
	if got, want := sg.String(), "ranks 17,100-103 at 0.8x; jitter lognormal sigma 0.02 per step; rank 3 at 0.7x from 2s for 500ms"; got != want {
		t.Errorf("String %q, want %q", got, want)
	}
	out, err := scenario.Encode(&c)
	if err != nil {
		t.Fatal(err)
	}
	var back training.Config
	if err := scenario.Decode(out, &back); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if back.Stragglers.String() != sg.String() {
		t.Errorf("round trip: %q\n%s", back.Stragglers.String(), out)
	}
	err = scenario.Decode([]byte("stragglers: {slow: [{ranks: [7-3], speed: 0.8}]}"), &back)
	if err == nil || !strings.Contains(err.Error(), "stragglers.slow[0].ranks[0]") || !strings.Contains(err.Error(), "lo <= hi") {
		t.Errorf("bad range: %v", err)
	}
	if _, err := (&training.Config{Model: training.Model{Preset: "llama3-8b"}, GPU: training.GPU{Preset: "h100"}, Plan: training.Plan{TP: 8},
		Stragglers: &training.Stragglers{Slow: []training.SlowGPUs{{Ranks: []training.RankRange{{Lo: 64, Hi: 64}}, Speed: 0.8}}}}).Job(64); err == nil ||
		!strings.Contains(err.Error(), "workload.training.stragglers.slow[0].ranks[0]: 64: rank 64 is outside the job's 64 ranks (0 to 63)") {
		t.Errorf("rank outside: %v", err)
	}
}

// TestDecodeErrorsNameValueOnce: a bad zero, recompute or rank names its value once (the
// decoder adds it; the type's own message does not repeat it).
func TestDecodeErrorsNameValueOnce(t *testing.T) {
	for _, c := range []struct{ yaml, value, want string }{
		{"plan: {zero: 4}", `"4"`, "want 0, 1, 2 or 3"},
		{"plan: {zero: full}", `"full"`, "want 0, 1, 2 or 3"},
		{"plan: {recompute: maybe}", `"maybe"`, "want none, selective or full"},
		{"stragglers: {slow: [{ranks: [abc], speed: 0.8}]}", `"abc"`, "want a rank >= 0"},
		{"stragglers: {slow: [{ranks: [7-3], speed: 0.8}]}", `"7-3"`, "lo <= hi"},
	} {
		var back training.Config
		err := scenario.Decode([]byte(c.yaml), &back)
		if err == nil || strings.Count(err.Error(), c.value) != 1 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %s once and %q", c.yaml, err, c.value, c.want)
		}
	}
}
