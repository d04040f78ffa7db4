package scenario

import (
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// testRing is a generated pattern for these tests: host h sends Bytes to h+1, flow h starting
// h x Start after the group's start (Start as the step), a fixed, checkable expansion.
func init() {
	RegisterPattern("test_ring", PatternGenerator{
		Summary: "a ring of staggered transfers (tests only)",
		Expand: func(t *Traffic, env TrafficEnv) ([]FlowSpec, error) {
			if t.Bytes <= 0 {
				return nil, Errorf(env.Path+".bytes", "missing; test_ring needs bytes")
			}
			flows := make([]FlowSpec, env.Hosts)
			for h := range env.Hosts {
				src, dst := h, (h+1)%env.Hosts
				flows[h] = FlowSpec{Src: &src, Dst: &dst, Bytes: t.Bytes, Start: t.Start + sim.Time(h)*sim.Microsecond}
			}
			return flows, nil
		},
	})
}

// A generated pattern's flows are checked and bounded as pattern flows' are, are not written
// back into the scenario, and count toward the derived run.duration.
func TestGeneratedPattern(t *testing.T) {
	sc, err := valScenario("", "{kind: mrc}", "[{pattern: test_ring, bytes: 64KiB, start: 2us}]", "")
	if err != nil {
		t.Fatal(err)
	}
	g := &sc.Traffic[0]
	flows := g.FlowList()
	if len(flows) < 2 || len(g.Flows) != 0 {
		t.Fatalf("FlowList %d flows, Flows %d; want the expansion apart from Flows", len(flows), len(g.Flows))
	}
	last := flows[len(flows)-1]
	if want := 2*sim.Microsecond + sim.Time(len(flows)-1)*sim.Microsecond; last.Start != want {
		t.Errorf("last flow start %v, want %v", last.Start, want)
	}
	if sc.Run.Duration <= last.Start {
		t.Errorf("run.duration %v does not cover the last start %v", sc.Run.Duration, last.Start)
	}
	out, err := Encode(sc)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "flows:") {
		t.Errorf("resolved scenario writes the expansion:\n%s", out)
	}
	if !strings.Contains(strings.Join(PatternNames(), ","), "test_ring") {
		t.Errorf("PatternNames %v lacks test_ring", PatternNames())
	}
	cases := []struct{ name, tr, traffic, err string }{
		{"raw", "{kind: raw}", "[{pattern: test_ring, bytes: 64KiB}]", "traffic[0].pattern: test_ring makes transfers, which need a transport"},
		{"generator's error", "{kind: mrc}", "[{pattern: test_ring}]", "traffic[0].bytes: missing; test_ring needs bytes"},
		{"flows given", "{kind: mrc}", "[{pattern: test_ring, bytes: 1KiB, flows: [{src: 0, dst: 1}]}]", "traffic[0].flows: is given, but pattern test_ring makes its own flows"},
		{"unknown lists generated", "{kind: mrc}", "[{pattern: ring, bytes: 1KiB}]", "allowed permutation, incast, flows, file, onoff, poisson, test_ring"},
		{"start past the run", "{kind: mrc}", "[{pattern: test_ring, bytes: 1KiB, start: 999us}]", "traffic[0](test_ring flow 1).start: 1ms is outside"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := valScenario("", c.tr, c.traffic, "")
			wantErr(t, err, []string{c.err})
		})
	}
}

// flows[].start: a transfer's own start, within the run; under raw within the group's window.
func TestFlowStart(t *testing.T) {
	cases := []struct{ name, tr, traffic, err string }{
		{"transfer", "{kind: mrc}", "[{pattern: flows, bytes: 1MiB, flows: [{src: 0, dst: 1, start: 5us}]}]", ""},
		{"before the group", "{kind: mrc}", "[{pattern: flows, bytes: 1MiB, start: 10us, flows: [{src: 0, dst: 1, start: 5us}]}]",
			"traffic[0].flows[0].start: 5us is outside [the group's start 10us"},
		{"raw inside", "{kind: raw}", "[{pattern: flows, flows: [{src: 0, dst: 1, start: 5us}]}]", ""},
		{"raw after stop", "{kind: raw}", "[{pattern: flows, stop: 4us, flows: [{src: 0, dst: 1, start: 5us}]}]",
			"traffic[0].flows[0].start: 5us is outside the group's [start 0s, stop 4us)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := valScenario("", c.tr, c.traffic, "")
			var want []string
			if c.err != "" {
				want = []string{c.err}
			}
			wantErr(t, err, want)
		})
	}
}
