package scenario

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fault"
	"github.com/lockstepsim/lockstep/sim"
)

// faultsYAML is a small raw scenario (2 planes, 16 hosts on radix-8 switches, 1 ms) with its
// faults block in %s.
const faultsYAML = `
topology: {clos: {tiers: 2, planes: 2, radix: 8, hosts: 16, host_link: 100G}}
traffic: [{pattern: permutation, load: 0.5}]
faults:
%s
run: {duration: 1ms, seed: 3}
`

func faultScenario(t testing.TB, block string) (*Scenario, error) {
	t.Helper()
	return Parse([]byte(fmt.Sprintf(faultsYAML, block)))
}

// events renders a schedule as "at op name" lines.
func events(s *fault.Schedule) string {
	var b strings.Builder
	for _, e := range s.Events {
		fmt.Fprintf(&b, "%v %v %s", e.At, e.Op, e.Name)
		switch e.Op {
		case fault.OpDegrade, fault.OpUndegrade:
			fmt.Fprintf(&b, " %v", e.Rate)
		case fault.OpLoss, fault.OpBER:
			fmt.Fprintf(&b, " %g", e.Prob)
			if e.HasEntropy {
				fmt.Fprintf(&b, " ev%d", e.Entropy)
			}
		}
		b.WriteString("; ")
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// TestFaultsYAML: every action and target kind in scenario syntax, and what it expands to.
func TestFaultsYAML(t *testing.T) {
	cases := []struct{ name, block, want string }{
		{"down and up (unchanged syntax)", "  - {at: 500us, link: h3.p1, action: down}\n  - {at: 600us, link: h3.p1, action: up}",
			"500us down h3.p1; 600us up h3.p1"},
		{"loss on one entropy (unchanged syntax)", `  - {at: 0s, link: "p0.t0-0.up*", action: loss, loss: 0.2, entropy: 5}`,
			"0s loss p0.t0-0.up0 0.2 ev5; 0s loss p0.t0-0.up1 0.2 ev5; 0s loss p0.t0-0.up2 0.2 ev5; 0s loss p0.t0-0.up3 0.2 ev5"},
		{"down for", "  - {at: 10us, nic: h0.p0, action: down, for: 5us}", "10us down h0.p0; 15us up h0.p0"},
		{"flap", "  - {at: 100us, link: p1.t1-2.down0, action: flap, down_for: 1us, period: 10us, count: 2}",
			"100us down p1.t1-2.down0; 101us up p1.t1-2.down0; 110us down p1.t1-2.down0; 111us up p1.t1-2.down0"},
		{"switch down", "  - {at: 1us, switch: p0.t1-3, action: down}",
			"1us down p0.t1-3.down0; 1us down p0.t1-3.down1; 1us down p0.t1-3.down2; 1us down p0.t1-3.down3"},
		{"transceiver", "  - {at: 1us, transceiver: h5.x0, breakout: 2, action: down}", "1us down h5.p0; 1us down h5.p1"},
		{"degrade by rate, then heal", "  - {at: 1us, link: h2.p0, action: degrade, rate: 25G}\n  - {at: 2us, nic: h2.p0, action: heal}",
			"1us degrade h2.p0 25Gbps; 2us undegrade h2.p0 100Gbps"},
		{"degrade by factor", "  - {at: 1us, link: h2.p0, action: degrade, factor: 0.5, for: 1us}",
			"1us degrade h2.p0 50Gbps; 2us undegrade h2.p0 100Gbps"},
		{"ber in", "  - {at: 0s, link: h2.p0, action: ber, ber: 1e-8, direction: in}", "0s ber p0.t0-0.down2 1e-08"},
		{"blackhole", "  - {at: 5us, switch: p1.t1-0, action: blackhole, for: 10us}", "5us blackhole p1.t1-0; 15us unblackhole p1.t1-0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc, err := faultScenario(t, c.block)
			if err != nil {
				t.Fatal(err)
			}
			s, err := sc.FaultSchedule()
			if err != nil {
				t.Fatal(err)
			}
			if got := events(s); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestFaultsRandomYAML: a random process resolves its defaults into the scenario (so the
// results folder's scenario.yaml shows them) and draws the same failures from the same seed.
func TestFaultsRandomYAML(t *testing.T) {
	block := "  - {link: \"p*.t0-*.up*\", action: down, random: {per_day: 1e9, repair: {dist: lognormal, median: 20us}}}"
	sc, err := faultScenario(t, block)
	if err != nil {
		t.Fatal(err)
	}
	r := sc.Faults[0].Random
	if r.PerDay != 1e9 || r.Until != sim.Millisecond || r.Repair.Sigma != fault.DefaultLognormalSigma {
		t.Errorf("resolved random %+v, repair %+v; want until 1ms and sigma %v filled", *r, *r.Repair, fault.DefaultLognormalSigma)
	}
	y, err := Encode(sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"until: 1ms", "sigma: 1", "per_day: 1e+09"} {
		if !bytes.Contains(y, []byte(w)) {
			t.Errorf("resolved YAML lacks %q:\n%s", w, y)
		}
	}
	sc2, err := Parse(y)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := sc.FaultSchedule()
	b, _ := sc2.FaultSchedule()
	if !reflect.DeepEqual(a, b) || len(a.Events) == 0 {
		t.Errorf("the resolved scenario draws other failures (%d vs %d events)", len(a.Events), len(b.Events))
	}
	sc.Run.Seed = 4
	c, _ := sc.FaultSchedule()
	if reflect.DeepEqual(a.Events, c.Events) {
		t.Errorf("seeds 3 and 4 draw the same failures")
	}
	// The HPN default rate applies to link failures: in 1 ms of 64 links none is expected.
	sc, err = faultScenario(t, "  - {link: \"*\", action: down, random: {}}")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Faults[0].Random.PerDay != fault.HPNLinkFailuresPerDay {
		t.Errorf("default rate %v; want HPN's %v", sc.Faults[0].Random.PerDay, fault.HPNLinkFailuresPerDay)
	}
}

// TestFaultsYAMLErrors: bad fault entries are one-line errors naming the field path.
func TestFaultsYAMLErrors(t *testing.T) {
	cases := []struct{ block, want string }{
		{"  - {at: 1us, link: \"p9.*\", action: down}", `faults[0].link: "p9.*" matches no port`},
		{"  - {at: 1us, switch: h1, action: down}", `faults[0].switch: "h1" matches no switch`},
		{"  - {at: 1us, link: h1.p0, action: flap, down_for: 2us, period: 1us, count: 3}", "faults[0].period: 1us is not longer than down_for (2us)"},
		{"  - {at: 1us, link: h1.p0, action: flap, down_for: 2us, period: 3us, count: 0}", "faults[0].count: 0 is out of range"},
		{"  - {at: 1us, link: h1.p0, action: down}\n  - {at: 2us, link: h1.p0, action: down}", "faults[1]: takes link h1.p0 down at 2us, but faults[0] already took it down at 1us"},
		{"  - {at: 1us, link: h1.p0, action: up}", "faults[0]: brings link h1.p0 up at 1us, but it is not down"},
		{"  - {at: 1us, link: h1.p0, action: degrade, rate: 400G}", "faults[0].rate: 400Gbps is not below the rate of link h1.p0 (100Gbps)"},
		{"  - {at: 1us, link: h1.p0, action: ber, ber: 0.5}", "faults[0].ber: 0.5 is out of range"},
		{"  - {at: -1us, link: h1.p0, action: down}", `faults[0].at (line 5): duration "-1us" is negative`},
		{"  - {at: 1us, link: h1.p0, action: drop}", `faults[0].action: "drop" is not an action`},
		{"  - {at: 1us, link: h1.p0, action: down, colour: red}", "faults[0].colour (line 5): unknown field"},
		{"  - {link: h1.p0, action: down, random: {per_day: 1, repair: {dist: gamma, mean: 1us}}}", `faults[0].random.repair.dist: "gamma" is not a distribution`},
	}
	for _, c := range cases {
		_, err := faultScenario(t, c.block)
		if err == nil {
			t.Errorf("%s: no error; want %q", c.block, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s:\n got %q\nwant %q", c.block, err, c.want)
		}
	}
}

// FuzzFaults runs fault blocks through parsing, resolution and expansion. Properties: no
// panic; errors are one line; a scenario that parses encodes to YAML that parses again to the
// same resolved scenario and the same schedule; the schedule is in time order and consistent
// when replayed (no down of a down link, no up of an up one, no undegrade of a full-rate link,
// no blackhole of a blackholed switch), and the same on a second expansion.
func FuzzFaults(f *testing.F) {
	for _, s := range []string{
		"  - {at: 500us, link: h3.p1, action: down}\n  - {at: 600us, link: h3.p1, action: up}",
		"  - {at: 0s, link: \"*\", action: loss, loss: 0.001}",
		"  - {at: 0s, link: \"p0.t0-0.up*\", action: loss, loss: 0.2, entropy: 5, direction: both, for: 10us}",
		"  - {at: 100us, link: p1.t1-2.down0, action: flap, down_for: 1us, period: 10us, count: 20}",
		"  - {at: 1us, switch: \"p*.t1-3\", action: down, for: 100us}\n  - {at: 2us, switch: p0.t1-0, action: blackhole}\n  - {at: 3us, switch: \"*\", action: heal}",
		"  - {at: 1us, transceiver: \"h*.x0\", breakout: 2, action: degrade, factor: 0.25}\n  - {at: 9us, nic: \"h1*\", action: undegrade}",
		"  - {at: 0s, nic: h2.p0, action: ber, ber: 1e-8, direction: in}",
		"  - {link: \"p*.t0-*.up*\", action: down, random: {per_day: 1e9, repair: {dist: lognormal, median: 20us}}}",
		"  - {at: 100us, nic: \"h*\", action: flap, down_for: 2us, count: 1, random: {mtbf: 300us, until: 900us}}",
		"  - {switch: \"p0.t1-*\", action: blackhole, random: {per_day: 1e8, repair: {dist: exponential, mean: 50us}}}\n  - {at: 10us, link: \"h1.*\", action: loss, loss: 0.5}",
		"  - {transceiver: \"p1.t0-*.xu*\", action: loss, loss: 0.01, random: {per_day: 1e9, repair: {dist: fixed, mean: 1us}}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, block []byte) {
		if bytes.Contains(block, []byte("\n---")) || len(block) > 4096 {
			return
		}
		sc, err := faultScenario(t, string(block))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		s, err := sc.FaultSchedule()
		if err != nil {
			t.Fatalf("a resolved scenario's schedule fails: %v", err)
		}
		if err := replaySchedule(s); err != nil {
			t.Fatalf("inconsistent schedule: %v\n%s", err, block)
		}
		y, err := Encode(sc)
		if err != nil {
			t.Fatal(err)
		}
		sc2, err := Parse(y)
		if err != nil {
			t.Fatalf("resolved scenario does not parse: %v\n%s", err, y)
		}
		if !reflect.DeepEqual(sc.Faults, sc2.Faults) {
			t.Fatalf("resolved faults change on a round trip:\n%+v\n%+v", sc.Faults, sc2.Faults)
		}
		s2, err := sc2.FaultSchedule()
		if err != nil || !reflect.DeepEqual(s, s2) {
			t.Fatalf("the resolved scenario expands differently (%v)", err)
		}
	})
}

// replaySchedule checks a schedule with a plain state machine keyed by names (a link by its
// two end names, sorted).
func replaySchedule(s *fault.Schedule) error {
	down := map[int32]bool{}
	degraded := map[int32]bool{}
	hole := map[int32]bool{}
	var last sim.Time
	total := 0
	for i, e := range s.Events {
		if e.At < last {
			return fmt.Errorf("event %d (%v) before %v", i, e, last)
		}
		last = e.At
		switch e.Op {
		case fault.OpDown, fault.OpUp:
			// The named end differs between entries; the network's port IDs pair up as 2i,
			// 2i+1 (topo.Build connects each link's two ends in turn).
			l := e.Port &^ 1
			if down[l] == (e.Op == fault.OpDown) {
				return fmt.Errorf("event %d: %v, but the link is already in that state", i, e)
			}
			down[l] = e.Op == fault.OpDown
		case fault.OpDegrade, fault.OpUndegrade:
			l := e.Port &^ 1
			if e.Op == fault.OpUndegrade && !degraded[l] {
				return fmt.Errorf("event %d: %v of a full-rate link", i, e)
			}
			degraded[l] = e.Op == fault.OpDegrade
		case fault.OpBlackhole, fault.OpUnblackhole:
			if hole[e.Node] == (e.Op == fault.OpBlackhole) {
				return fmt.Errorf("event %d: %v, but the switch is already in that state", i, e)
			}
			hole[e.Node] = e.Op == fault.OpBlackhole
		}
	}
	for _, en := range s.Entries {
		total += en.Events
	}
	if total != len(s.Events) {
		return fmt.Errorf("entries account for %d events of %d", total, len(s.Events))
	}
	return nil
}
