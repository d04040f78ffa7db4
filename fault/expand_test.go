package fault

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

const (
	us = sim.Microsecond
	ms = sim.Millisecond
)

func u32(v uint32) *uint32 { return &v }

// brief renders events as "100us down h3.p1" (plus the rate or probability).
func brief(s *Schedule) []string {
	var out []string
	for _, e := range s.Events {
		b := e.At.String() + " " + e.Op.String() + " " + e.Name
		switch e.Op {
		case OpDegrade, OpUndegrade:
			b += " " + e.Rate.String()
		case OpLoss, OpBER:
			b += fmt.Sprintf(" %g", e.Prob)
			if e.HasEntropy {
				b += fmt.Sprintf(" ev%d", e.Entropy)
			}
		}
		out = append(out, b)
	}
	return out
}

// replay walks a schedule with a plain state machine and reports the first inconsistency: a
// down of a down link, an up of an up one, an undegrade of a full-rate link, a blackhole of a
// blackholed switch or the reverse, events out of time order.
func replay(inv *Inventory, s *Schedule) error {
	down := map[int32]bool{}
	degraded := map[int32]bool{}
	hole := map[int32]bool{}
	link := func(p int32) int32 { return min(p, inv.Ports[p].Peer) }
	var last sim.Time
	for i, e := range s.Events {
		if e.At < last {
			return fmt.Errorf("event %d (%v) before the previous one (%v)", i, e, last)
		}
		last = e.At
		switch e.Op {
		case OpDown, OpUp:
			if down[link(e.Port)] == (e.Op == OpDown) {
				return fmt.Errorf("event %d: %v, but the link is already in that state", i, e)
			}
			down[link(e.Port)] = e.Op == OpDown
		case OpDegrade:
			if e.Rate <= 0 || e.Rate >= inv.Ports[e.Port].Rate {
				return fmt.Errorf("event %d: %v does not lower the rate", i, e)
			}
			degraded[link(e.Port)] = true
		case OpUndegrade:
			if !degraded[link(e.Port)] || e.Rate != inv.Ports[e.Port].Rate {
				return fmt.Errorf("event %d: %v, but the link is not degraded or the rate is not its own", i, e)
			}
			degraded[link(e.Port)] = false
		case OpBlackhole, OpUnblackhole:
			if hole[e.Node] == (e.Op == OpBlackhole) {
				return fmt.Errorf("event %d: %v, but the switch is already in that state", i, e)
			}
			hole[e.Node] = e.Op == OpBlackhole
		case OpLoss, OpBER:
			if !(e.Prob >= 0 && e.Prob <= 1) {
				return fmt.Errorf("event %d: %v: probability out of range", i, e)
			}
		default:
			return fmt.Errorf("event %d: %v: unknown op", i, e)
		}
	}
	return nil
}

func mustExpand(t *testing.T, inv *Inventory, seed uint64, specs ...Spec) *Schedule {
	t.Helper()
	s, err := Expand(specs, inv, Options{Seed: seed, Duration: ms})
	if err != nil {
		t.Fatalf("%v", err)
	}
	if err := replay(inv, s); err != nil {
		t.Fatalf("inconsistent schedule: %v", err)
	}
	return s
}

// TestExpand checks what each action expands to: names, times, rates, probabilities.
func TestExpand(t *testing.T) {
	inv := inventory(t, smallClos)
	cases := []struct {
		name  string
		specs []Spec
		want  []string
	}{
		{"down for", []Spec{{At: 100 * us, Link: "h3.p1", Action: ActionDown, For: 50 * us}},
			[]string{"100us down h3.p1", "150us up h3.p1"}},
		{"down named from the far end", []Spec{{At: 1 * us, Link: "p1.t0-0.down3", Action: ActionDown}},
			[]string{"1us down p1.t0-0.down3"}},
		{"flap train", []Spec{{At: 100 * us, Link: "p0.t0-1.up2", Action: ActionFlap, DownFor: 20 * us, Period: 50 * us, Count: 3}},
			[]string{"100us down p0.t0-1.up2", "120us up p0.t0-1.up2", "150us down p0.t0-1.up2", "170us up p0.t0-1.up2", "200us down p0.t0-1.up2", "220us up p0.t0-1.up2"}},
		{"single flap", []Spec{{At: 5 * us, NIC: "h0.p0", Action: ActionFlap, DownFor: 1 * us, Count: 1}},
			[]string{"5us down h0.p0", "6us up h0.p0"}},
		{"switch down and up", []Spec{{At: 10 * us, Switch: "p0.t1-0", Action: ActionDown}, {At: 20 * us, Switch: "p0.t1-0", Action: ActionUp}},
			[]string{"10us down p0.t1-0.down0", "10us down p0.t1-0.down1", "10us down p0.t1-0.down2", "10us down p0.t1-0.down3",
				"20us up p0.t1-0.down0", "20us up p0.t1-0.down1", "20us up p0.t1-0.down2", "20us up p0.t1-0.down3"}},
		{"transceiver", []Spec{{At: 1 * us, Transceiver: "h3.x0", Breakout: 2, Action: ActionDown}},
			[]string{"1us down h3.p0", "1us down h3.p1"}},
		{"switch-side transceiver", []Spec{{At: 1 * us, Transceiver: "p1.t0-2.xu1", Breakout: 2, Action: ActionFlap, DownFor: us, Count: 1}},
			[]string{"1us down p1.t0-2.up2", "1us down p1.t0-2.up3", "2us up p1.t0-2.up2", "2us up p1.t0-2.up3"}},
		{"degrade by factor for", []Spec{{At: 1 * us, Link: "h3.p1", Action: ActionDegrade, Factor: 0.5, For: 10 * us}},
			[]string{"1us degrade h3.p1 50Gbps", "11us undegrade h3.p1 100Gbps"}},
		{"degrade then undegrade", []Spec{{At: 1 * us, Switch: "p1.t0-3", Action: ActionDegrade, Rate: 25 * sim.Gbps}, {At: 2 * us, Link: "p1.t0-3.up1", Action: ActionUndegrade}},
			append(func() []string {
				var w []string
				for _, p := range []string{"down0", "down1", "down2", "down3", "up0", "up1", "up2", "up3"} {
					w = append(w, "1us degrade p1.t0-3."+p+" 25Gbps")
				}
				return w
			}(), "2us undegrade p1.t0-3.up1 100Gbps")},
		{"loss out (default)", []Spec{{At: 0, Link: "h3.p1", Action: ActionLoss, Loss: 0.01}},
			[]string{"0s loss h3.p1 0.01"}},
		{"loss in", []Spec{{At: 0, Link: "h3.p1", Action: ActionLoss, Loss: 0.01, Direction: DirIn}},
			[]string{"0s loss p1.t0-0.down3 0.01"}},
		{"loss both, one entropy, for", []Spec{{At: 0, Link: "h3.p1", Action: ActionLoss, Loss: 1, Direction: DirBoth, Entropy: u32(7), For: us}},
			[]string{"0s loss h3.p1 1 ev7", "0s loss p1.t0-0.down3 1 ev7", "1us loss h3.p1 0 ev7", "1us loss p1.t0-0.down3 0 ev7"}},
		{"loss out of a switch", []Spec{{At: 0, Switch: "p0.t1-3", Action: ActionLoss, Loss: 0.5}},
			[]string{"0s loss p0.t1-3.down0 0.5", "0s loss p0.t1-3.down1 0.5", "0s loss p0.t1-3.down2 0.5", "0s loss p0.t1-3.down3 0.5"}},
		{"ber", []Spec{{At: 3 * us, NIC: "h3.p0", Action: ActionBER, BER: 1e-8, For: us}},
			[]string{"3us ber h3.p0 1e-08", "4us ber h3.p0 0"}},
		{"blackhole for", []Spec{{At: 5 * us, Switch: "p0.t1-1", Action: ActionBlackhole, For: 5 * us}},
			[]string{"5us blackhole p0.t1-1", "10us unblackhole p0.t1-1"}},
		{"heal", []Spec{
			{At: 1 * us, Link: "h3.p1", Action: ActionDown},
			{At: 1 * us, Link: "h3.p0", Action: ActionDegrade, Factor: 0.5},
			{At: 1 * us, Link: "h3.p0", Action: ActionLoss, Loss: 0.1, Direction: DirIn},
			{At: 1 * us, Link: "h3.p0", Action: ActionLoss, Loss: 0.2, Entropy: u32(7)},
			{At: 1 * us, Link: "h4.p0", Action: ActionBER, BER: 1e-6},
			{At: 5 * us, NIC: "h3.*", Action: ActionHeal}},
			[]string{"1us down h3.p1", "1us degrade h3.p0 50Gbps", "1us loss p0.t0-0.down3 0.1", "1us loss h3.p0 0.2 ev7", "1us ber h4.p0 1e-06",
				"5us undegrade h3.p0 100Gbps", "5us loss h3.p0 0 ev7", "5us loss p0.t0-0.down3 0", "5us up h3.p1"}},
		{"heal a blackholed switch", []Spec{{At: 1 * us, Switch: "p1.t1-2", Action: ActionBlackhole}, {At: 2 * us, Switch: "p*.t1-2", Action: ActionHeal}},
			[]string{"1us blackhole p1.t1-2", "2us unblackhole p1.t1-2"}},
		{"entries out of time order", []Spec{{At: 20 * us, Link: "h0.p0", Action: ActionUp}, {At: 10 * us, Link: "h0.p0", Action: ActionDown}},
			[]string{"10us down h0.p0", "20us up h0.p0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := brief(mustExpand(t, inv, 1, c.specs...))
			if !slices.Equal(got, c.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
		})
	}
}

// TestExpandOnce: a glob matching both ends of a link acts on the link once for link actions
// and on each direction once for loss.
func TestExpandOnce(t *testing.T) {
	inv := inventory(t, smallClos)
	s := mustExpand(t, inv, 1, Spec{At: us, Link: "*", Action: ActionDown}, Spec{At: 2 * us, Link: "*", Action: ActionLoss, Loss: 0.1, Direction: DirBoth})
	if got := s.Entries[0].Events; got != len(inv.Ports)/2 {
		t.Errorf("down of every port: %d events; want one per link, %d", got, len(inv.Ports)/2)
	}
	if got := s.Entries[1].Events; got != len(inv.Ports) {
		t.Errorf("loss both ways on every port: %d events; want one per port, %d", got, len(inv.Ports))
	}
	s = mustExpand(t, inv, 1, Spec{At: us, Switch: "*", Action: ActionDown})
	if got := s.Entries[0].Events; got != len(inv.Ports)/2 {
		t.Errorf("every switch down: %d events; want one per link, %d", got, len(inv.Ports)/2)
	}
}

// TestContradictions: contradictory entries are errors naming both.
func TestContradictions(t *testing.T) {
	inv := inventory(t, smallClos)
	cases := []struct {
		name  string
		specs []Spec
		want  []string
	}{
		{"two downs, no up between", []Spec{{At: us, Link: "h3.p1", Action: ActionDown}, {At: 2 * us, Link: "p1.t0-0.down3", Action: ActionDown}},
			[]string{"faults[1]: ", "link h3.p1 down at 2us", "faults[0] already took it down at 1us"}},
		{"up of a link never down", []Spec{{At: us, Link: "h3.p1", Action: ActionUp}},
			[]string{"faults[0]: ", "brings link h3.p1 up at 1us", "not down", "nothing takes it down before"}},
		{"up after the for restore", []Spec{{At: us, Link: "h3.p1", Action: ActionDown, For: us}, {At: 3 * us, Link: "h3.p1", Action: ActionUp}},
			[]string{"faults[1]: ", "not down", "faults[0] (its restore after for) brought it up at 2us"}},
		{"down inside a flap train", []Spec{{At: 10 * us, Link: "h3.p1", Action: ActionFlap, DownFor: 5 * us, Period: 20 * us, Count: 3}, {At: 32 * us, Link: "h3.p1", Action: ActionDown}},
			[]string{"faults[1]: ", "down at 32us", "faults[0] (flap cycle 1) already took it down at 30us"}},
		{"flap into a down", []Spec{{At: 10 * us, Link: "h3.p1", Action: ActionFlap, DownFor: 5 * us, Period: 20 * us, Count: 3}, {At: 25 * us, Link: "h3.p1", Action: ActionDown, For: 10 * us}},
			[]string{"faults[0]: ", "down at 30us (flap cycle 1)", "faults[1] already took it down at 25us"}},
		{"link of a failed switch", []Spec{{At: us, Switch: "p0.t1-0", Action: ActionDown}, {At: 2 * us, Link: "p0.t0-2.up0", Action: ActionDown}},
			[]string{"faults[1]: ", "link p0.t0-2.up0", "faults[0] already took it down at 1us"}},
		{"two adjacent switches", []Spec{{At: us, Switch: "p0.t0-2", Action: ActionDown}, {At: 2 * us, Switch: "p0.t1-0", Action: ActionDown}},
			[]string{"faults[1]: ", "link p0.t0-2.up0", "faults[0] already took it down"}},
		{"undegrade of a full-rate link", []Spec{{At: us, Link: "h3.p1", Action: ActionUndegrade}},
			[]string{"faults[0]: ", "restores the rate of link h3.p1", "not degraded"}},
		{"blackhole twice", []Spec{{At: us, Switch: "p0.t1-1", Action: ActionBlackhole}, {At: 2 * us, Switch: "p*.t1-1", Action: ActionBlackhole}},
			[]string{"faults[1]: ", "blackholes switch p0.t1-1 at 2us", "faults[0] already blackholed it at 1us"}},
		{"same instant", []Spec{{At: us, Link: "h3.p1", Action: ActionDegrade, Rate: 50 * sim.Gbps}, {At: us, NIC: "h3.*", Action: ActionDegrade, Rate: 25 * sim.Gbps}},
			[]string{"faults[1]: ", "link h3.p1 at 1us", "so does faults[0]", "same instant"}},
		{"heal at the instant of a down", []Spec{{At: us, Link: "h3.p1", Action: ActionLoss, Loss: 0.1}, {At: 2 * us, Link: "h3.p1", Action: ActionDown}, {At: 2 * us, NIC: "h3.p1", Action: ActionHeal}},
			[]string{"faults[2]: ", "so does faults[1]", "same instant"}},
		{"heal with nothing to heal", []Spec{{At: us, Link: "h3.p1", Action: ActionDown, For: us}, {At: 5 * us, Link: "h3.*", Action: ActionHeal}},
			[]string{"faults[1].action: ", `nothing to heal on "h3.*"`}},
		{"five entropy filters", []Spec{
			{At: us, Link: "h3.p1", Action: ActionLoss, Loss: 0.1, Entropy: u32(1)}, {At: us, Link: "h3.p1", Action: ActionLoss, Loss: 0.1, Entropy: u32(2)},
			{At: us, Link: "h3.p1", Action: ActionLoss, Loss: 0.1, Entropy: u32(3)}, {At: us, Link: "h3.p1", Action: ActionLoss, Loss: 0.1, Entropy: u32(4)},
			{At: 2 * us, Link: "h3.p1", Action: ActionLoss, Loss: 0.1, Entropy: u32(5)}},
			[]string{"faults[4].entropy: ", "at most 4"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Expand(c.specs, inv, Options{Seed: 1, Duration: ms})
			if err == nil {
				t.Fatalf("no error; want one containing %q", c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error %q", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	// Consistent sequences are accepted: re-degrading, loss changed and cleared, an up after
	// a switch failure of one of its links, a second filter after one is cleared.
	mustExpand(t, inv, 1,
		Spec{At: us, Link: "h3.p1", Action: ActionDegrade, Rate: 50 * sim.Gbps}, Spec{At: 2 * us, Link: "h3.p1", Action: ActionDegrade, Rate: 25 * sim.Gbps},
		Spec{At: us, Link: "h3.p0", Action: ActionLoss, Loss: 0.1}, Spec{At: 2 * us, Link: "h3.p0", Action: ActionLoss, Loss: 0.3}, Spec{At: 3 * us, Link: "h3.p0", Action: ActionLoss},
		Spec{At: us, Switch: "p0.t1-0", Action: ActionDown}, Spec{At: 2 * us, Link: "p0.t0-2.up0", Action: ActionUp},
		Spec{At: 3 * us, Switch: "p0.t0-2", Action: ActionDown, For: us})
}

// TestFieldErrors: every bad field is an error naming its path, the value and what is allowed.
func TestFieldErrors(t *testing.T) {
	inv := inventory(t, smallClos)
	rnd := func(r Random) *Random { return &r }
	cases := []struct {
		spec Spec
		want []string
	}{
		{Spec{At: -us, Link: "h3.p1", Action: ActionDown}, []string{"faults[0].at: ", "-1us", "negative"}},
		{Spec{At: 2 * ms, Link: "h3.p1", Action: ActionDown}, []string{"faults[0].at: ", "2ms", "not inside the run (0 to 1ms)"}},
		{Spec{Link: "h3.p1", Action: ActionFlap, DownFor: 10 * us, Period: 10 * us, Count: 2}, []string{"faults[0].period: ", "10us", "not longer than down_for"}},
		{Spec{Link: "h3.p1", Action: ActionFlap, DownFor: 10 * us, Period: 20 * us}, []string{"faults[0].count: ", "0 is out of range", "1 to 1000000"}},
		{Spec{Link: "h3.p1", Action: ActionFlap, Period: 20 * us, Count: 2}, []string{"faults[0].down_for: ", "missing"}},
		{Spec{Link: "h3.p1", Action: ActionLoss, Loss: 1.5}, []string{"faults[0].loss: ", "1.5", "0..1"}},
		{Spec{Link: "h3.p1", Action: ActionLoss, Loss: -0.1}, []string{"faults[0].loss: ", "-0.1", "0..1"}},
		{Spec{Link: "h3.p1", Action: ActionBER}, []string{"faults[0].ber: ", "0 is out of range", "0.001"}},
		{Spec{Link: "h3.p1", Action: ActionBER, BER: 0.01}, []string{"faults[0].ber: ", "0.01", "0.001"}},
		{Spec{Link: "h3.p1", Action: "explode"}, []string{"faults[0].action: ", `"explode" is not an action`, "down, up, flap"}},
		{Spec{Link: "h3.p1"}, []string{"faults[0].action: ", "missing"}},
		{Spec{Action: ActionDown}, []string{"faults[0].link: ", "missing", "switch", "nic", "transceiver"}},
		{Spec{Link: "h3.p1", Switch: "p0.t1-0", Action: ActionDown}, []string{"faults[0].switch: ", "given with link"}},
		{Spec{Link: "[", Action: ActionDown}, []string{"faults[0].link: ", `"["`, "not a valid pattern"}},
		{Spec{Link: "h3.p1", Action: ActionBlackhole}, []string{"faults[0].action: ", "blackhole is a switch state", "switch target"}},
		{Spec{Link: "h3.p1", Action: ActionDown, Rate: sim.Gbps}, []string{"faults[0].rate: ", "does not apply to action down", "degrade"}},
		{Spec{Link: "h3.p1", Action: ActionLoss, Loss: 0.1, Direction: "sideways"}, []string{"faults[0].direction: ", `"sideways"`, "out", "in", "both"}},
		{Spec{Link: "h3.p1", Action: ActionDown, Direction: DirIn}, []string{"faults[0].direction: ", "does not apply to action down"}},
		{Spec{Link: "h3.p1", Action: ActionDegrade}, []string{"faults[0].rate: ", "missing"}},
		{Spec{Link: "h3.p1", Action: ActionDegrade, Rate: sim.Gbps, Factor: 0.5}, []string{"faults[0].factor: ", "given with rate"}},
		{Spec{Link: "h3.p1", Action: ActionDegrade, Factor: 1.5}, []string{"faults[0].factor: ", "1.5", "below 1"}},
		{Spec{Link: "h3.p1", Action: ActionDegrade, Rate: 200 * sim.Gbps}, []string{"faults[0].rate: ", "200Gbps", "not below the rate of link h3.p1 (100Gbps)"}},
		{Spec{Link: "h3.p1", Action: ActionDegrade, Rate: 100 * sim.Gbps}, []string{"faults[0].rate: ", "100Gbps is not below"}},
		{Spec{Link: "h3.p1", Action: ActionDegrade, Rate: -sim.Gbps}, []string{"faults[0].rate: ", "-1Gbps", "negative"}},
		{Spec{Link: "h3.p1", Action: ActionDown, For: -us}, []string{"faults[0].for: ", "-1us", "negative"}},
		{Spec{Link: "h3.p1", Action: ActionFlap, DownFor: us, Count: 1, For: us}, []string{"faults[0].for: ", "does not apply to action flap"}},
		{Spec{Link: "h3.p1", Action: ActionLoss, For: us}, []string{"faults[0].loss: ", "0 clears"}},
		{Spec{Link: "h3.p1", Breakout: 2, Action: ActionDown}, []string{"faults[0].breakout: ", "transceiver targets only"}},
		{Spec{Transceiver: "h3.x0", Breakout: 100, Action: ActionDown}, []string{"faults[0].breakout: ", "100", "1 to 64"}},
		{Spec{Link: "h3.p1", Action: ActionUp, Random: rnd(Random{PerDay: 1})}, []string{"faults[0].random: ", "does not apply to action up"}},
		{Spec{Switch: "p0.t1-0", Action: ActionDown, Random: &Random{}}, []string{"faults[0].random.per_day: ", "no published default", "switch"}},
		{Spec{Link: "h3.p1", Action: ActionFlap, DownFor: us, Count: 1, Random: &Random{}}, []string{"faults[0].random.per_day: ", "missing", "flap"}},
		{Spec{Link: "h3.p1", Action: ActionDown, Random: rnd(Random{PerDay: 1, MTBF: sim.Second})}, []string{"faults[0].random.mtbf: ", "given with per_day"}},
		{Spec{Link: "h3.p1", Action: ActionDown, Random: rnd(Random{PerDay: -1})}, []string{"faults[0].random.per_day: ", "-1", "out of range"}},
		{Spec{At: 500 * us, Link: "h3.p1", Action: ActionDown, Random: rnd(Random{Until: 100 * us})}, []string{"faults[0].random.until: ", "100us is not after at (500us)"}},
		{Spec{Link: "h3.p1", Action: ActionDown, Random: rnd(Random{Until: 2 * ms})}, []string{"faults[0].random.until: ", "2ms is after the end of the run (1ms)"}},
		{Spec{Link: "h3.p1", Action: ActionDown, Random: rnd(Random{Repair: &Repair{Dist: "weibull", Mean: us}})}, []string{"faults[0].random.repair.dist: ", `"weibull"`, "fixed, exponential, lognormal"}},
		{Spec{Link: "h3.p1", Action: ActionDown, Random: rnd(Random{Repair: &Repair{Dist: RepairFixed}})}, []string{"faults[0].random.repair.mean: ", "missing"}},
		{Spec{Link: "h3.p1", Action: ActionDown, Random: rnd(Random{Repair: &Repair{Dist: RepairLognormal, Median: us, Sigma: 20}})}, []string{"faults[0].random.repair.sigma: ", "20", "up to 10"}},
		{Spec{Link: "h3.p1", Action: ActionDown, Random: rnd(Random{Repair: &Repair{Dist: RepairExponential, Mean: us, Median: us}})}, []string{"faults[0].random.repair.median: ", "lognormal only"}},
		{Spec{Link: "h3.p1", Action: ActionFlap, DownFor: us, Count: 1, Random: rnd(Random{PerDay: 1, Repair: &Repair{Dist: RepairFixed, Mean: us}})}, []string{"faults[0].random.repair: ", "does not apply to flap"}},
		{Spec{Link: "h3.p1", Action: ActionDown, For: us, Random: rnd(Random{})}, []string{"faults[0].for: ", "given with random"}},
		{Spec{Link: "*", Action: ActionFlap, DownFor: 1, Period: 2, Count: MaxCount}, []string{"faults[0]: ", "more than 1000000 events"}},
		{Spec{Link: "*", Action: ActionDown, Random: rnd(Random{PerDay: MaxPerDay, Repair: &Repair{Dist: RepairFixed, Mean: 1}})}, []string{"faults[0]: ", "more than 1000000 events"}},
	}
	for _, c := range cases {
		_, err := Expand([]Spec{c.spec}, inv, Options{Seed: 1, Duration: ms})
		if err == nil {
			t.Errorf("%+v: no error; want %q", c.spec, c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %q does not contain %q", c.spec, err, w)
			}
		}
	}
}

// TestWithDefaults: defaults are filled once, in copies, and a second application changes
// nothing.
func TestWithDefaults(t *testing.T) {
	r := &Random{Repair: &Repair{Dist: RepairLognormal, Median: us}}
	s := Spec{Link: "h*", Action: ActionDown, Random: r}
	d := s.WithDefaults(ms)
	if d.Random.PerDay != HPNLinkFailuresPerDay || d.Random.Until != ms || d.Random.Repair.Sigma != DefaultLognormalSigma {
		t.Errorf("defaults %+v %+v", *d.Random, *d.Random.Repair)
	}
	if r.PerDay != 0 || r.Until != 0 || r.Repair.Sigma != 0 {
		t.Errorf("WithDefaults wrote through the pointer: %+v", *r)
	}
	if d2 := d.WithDefaults(2 * ms); d2.Random.Until != ms || d2.Random.PerDay != d.Random.PerDay || *d2.Random.Repair != *d.Random.Repair {
		t.Errorf("second WithDefaults changed %+v to %+v", *d.Random, *d2.Random)
	}
	if got := (Spec{Link: "x", Action: ActionLoss}).WithDefaults(ms).Direction; got != DirOut {
		t.Errorf("loss direction default %q", got)
	}
	if got := (Spec{Link: "x", Action: ActionDown}).WithDefaults(ms).Direction; got != "" {
		t.Errorf("down got a direction %q", got)
	}
	if got := (Spec{Transceiver: "x", Action: ActionDown}).WithDefaults(ms).Breakout; got != DefaultBreakout {
		t.Errorf("transceiver breakout default %d", got)
	}
	if got := (Spec{Switch: "x", Action: ActionDown, Random: &Random{}}).WithDefaults(ms).Random.PerDay; got != 0 {
		t.Errorf("switch failures got the link rate %v", got)
	}
}

// downs returns the times of the random downs per element of entry e.
func downs(s *Schedule, e int) map[string][]sim.Time {
	out := map[string][]sim.Time{}
	for _, ev := range s.Events {
		if ev.Entry == e && ev.Op == OpDown {
			out[ev.Target] = append(out[ev.Target], ev.At)
		}
	}
	return out
}

// TestRandomPoisson: failures at rate lambda per element over a horizon H, with repairs much
// shorter than 1/lambda, number Poisson(n lambda H) in all: over 200 seeds the mean count is
// within 3 standard errors of n lambda H and the variance is close to the mean.
func TestRandomPoisson(t *testing.T) {
	inv := inventory(t, smallClos)
	const (
		seeds = 200
		links = 64
		perEl = 0.5 // expected failures per link over the horizon
	)
	at, until := 200*us, 700*us
	horizon := float64(until-at) / float64(sim.Second)
	perDay := perEl / horizon * 86400
	spec := Spec{At: at, Link: "*", Action: ActionDown,
		Random: &Random{PerDay: perDay, Until: until, Repair: &Repair{Dist: RepairFixed, Mean: sim.Nanosecond}}}
	var counts []float64
	for seed := uint64(1); seed <= seeds; seed++ {
		s := mustExpand(t, inv, seed, spec)
		if s.Entries[0].Elements != links || s.Entries[0].Skipped != 0 {
			t.Fatalf("seed %d: %+v; want %d elements, none skipped", seed, s.Entries[0], links)
		}
		n := 0
		for _, ev := range s.Events {
			if ev.Op == OpDown {
				n++
				if ev.At < at || ev.At >= until {
					t.Fatalf("seed %d: failure at %v outside the horizon [%v, %v)", seed, ev.At, at, until)
				}
			}
		}
		if n != s.Entries[0].Arrivals {
			t.Fatalf("seed %d: %d downs, %d arrivals", seed, n, s.Entries[0].Arrivals)
		}
		counts = append(counts, float64(n))
	}
	var mean, v float64
	for _, c := range counts {
		mean += c
	}
	mean /= seeds
	for _, c := range counts {
		v += (c - mean) * (c - mean)
	}
	v /= seeds - 1
	want := links * perEl // the renewal correction (repair 1ns against 1ms between failures) is 1e-6
	se := math.Sqrt(want / seeds)
	t.Logf("failures per seed: mean %.2f (want %.1f +- %.2f), variance %.2f (ratio %.2f)", mean, want, 3*se, v, v/mean)
	if math.Abs(mean-want) > 3*se {
		t.Errorf("mean failures %.2f; want %.1f within 3 standard errors (%.2f)", mean, want, 3*se)
	}
	// For Poisson counts the sample variance over 200 seeds has a relative standard error of
	// about sqrt((1/mean + 2)/200) = 0.1; allow three.
	if r := v / mean; r < 0.7 || r > 1.3 {
		t.Errorf("variance/mean = %.2f; want about 1 for Poisson counts", r)
	}
}

// TestRandomStreams: the same seed gives the same failures, another seed others, and an
// element's failures do not move when the glob widens to more elements.
func TestRandomStreams(t *testing.T) {
	inv := inventory(t, smallClos)
	spec := func(pat string) Spec {
		return Spec{NIC: pat, Action: ActionDown, Random: &Random{MTBF: 100 * us, Repair: &Repair{Dist: RepairExponential, Mean: 10 * us}}}
	}
	a := mustExpand(t, inv, 7, spec("h3.p1"))
	b := mustExpand(t, inv, 7, spec("h3.p1"))
	c := mustExpand(t, inv, 8, spec("h3.p1"))
	wide := mustExpand(t, inv, 7, spec("h*"))
	if !slices.Equal(brief(a), brief(b)) {
		t.Errorf("same seed, different schedules")
	}
	if slices.Equal(brief(a), brief(c)) {
		t.Errorf("seeds 7 and 8 give the same schedule")
	}
	if got, want := downs(wide, 0)["h3.p1"], downs(a, 0)["h3.p1"]; !slices.Equal(got, want) || len(want) == 0 {
		t.Errorf("h3.p1's failures moved when the glob widened: %v vs %v", got, want)
	}
}

// TestRandomSkips: a random failure overlapping another fault of the same aspect on the same
// element is skipped, one of another aspect is not.
func TestRandomSkips(t *testing.T) {
	inv := inventory(t, smallClos)
	random := Spec{NIC: "h3.*", Action: ActionDown, Random: &Random{MTBF: 50 * us, Repair: &Repair{Dist: RepairFixed, Mean: 10 * us}}}
	s := mustExpand(t, inv, 1, Spec{At: 0, Link: "h3.p1", Action: ActionDown}, random)
	d := downs(s, 1)
	if len(d["h3.p1"]) != 0 || len(d["h3.p0"]) == 0 || s.Entries[1].Skipped != s.Entries[1].Arrivals-len(d["h3.p0"]) || s.Entries[1].Skipped == 0 {
		t.Errorf("h3.p1 down all along: random downs %v, stats %+v; want h3.p1's all skipped", d, s.Entries[1])
	}
	// Background loss on every port does not block link failures.
	s = mustExpand(t, inv, 1, Spec{At: 0, Link: "*", Action: ActionBER, BER: 1e-9, Direction: DirBoth}, random)
	if s.Entries[1].Skipped != 0 || s.Entries[1].Arrivals == 0 {
		t.Errorf("with background BER: %+v; want no skips", s.Entries[1])
	}
	// An explicit down in the middle of the horizon: every admitted random failure of that
	// link ends before it starts or starts after it ends.
	s = mustExpand(t, inv, 3, Spec{At: 300 * us, Link: "h3.p0", Action: ActionDown, For: 100 * us}, random)
	for _, ev := range s.Events {
		if ev.Random && ev.Name == "h3.p0" && ev.At >= 300*us && ev.At <= 400*us {
			t.Errorf("random %v inside the explicit outage [300us, 400us]", ev)
		}
	}
	// Two random processes on the same links never overlap.
	s = mustExpand(t, inv, 5, random, random)
	if s.Entries[1].Skipped == 0 {
		t.Errorf("two identical dense processes: %+v; want some of the second's failures skipped", s.Entries)
	}
}

// TestRepairTimes: repair durations follow the configured distribution.
func TestRepairTimes(t *testing.T) {
	inv := inventory(t, smallClos)
	cases := []struct {
		rp             Repair
		mean, median   float64 // us; 0: not checked
		tolMean, tolMd float64 // relative
	}{
		{Repair{Dist: RepairFixed, Mean: 3 * us}, 3, 3, 1e-9, 1e-9},
		{Repair{Dist: RepairExponential, Mean: 3 * us}, 3, 3 * math.Ln2, 0.05, 0.08},
		{Repair{Dist: RepairLognormal, Median: 3 * us, Sigma: 0.5}, 3 * math.Exp(0.125), 3, 0.05, 0.08},
		{Repair{Dist: RepairLognormal, Mean: 3 * us, Sigma: 1}, 3, 3 * math.Exp(-0.5), 0.1, 0.1},
	}
	for _, c := range cases {
		rp := c.rp
		s := mustExpand(t, inv, 1, Spec{Link: "*", Action: ActionDown, Random: &Random{MTBF: 10 * us, Repair: &rp}})
		start := map[string]sim.Time{}
		var d []float64
		for _, ev := range s.Events {
			switch {
			case ev.Op == OpDown:
				start[ev.Target] = ev.At
			case ev.Op == OpUp && ev.Restore:
				d = append(d, float64(ev.At-start[ev.Target])/float64(us))
			}
		}
		if len(d) < 2000 {
			t.Fatalf("%+v: only %d repairs", rp, len(d))
		}
		var mean float64
		for _, x := range d {
			mean += x
		}
		mean /= float64(len(d))
		sort.Float64s(d)
		median := d[len(d)/2]
		t.Logf("%s: %d repairs, mean %.3f us (want %.3f), median %.3f us (want %.3f)", rp.Dist, len(d), mean, c.mean, median, c.median)
		if math.Abs(mean/c.mean-1) > c.tolMean+1e-9 {
			t.Errorf("%+v: mean repair %.3f us; want %.3f within %.0f%%", rp, mean, c.mean, 100*c.tolMean)
		}
		if math.Abs(median/c.median-1) > c.tolMd+1e-9 {
			t.Errorf("%+v: median repair %.3f us; want %.3f within %.0f%%", rp, median, c.median, 100*c.tolMd)
		}
	}
}

// TestRandomActions: random processes of each failure action expand to failures and their
// restores on the matched elements only.
func TestRandomActions(t *testing.T) {
	inv := inventory(t, smallClos)
	rep := &Repair{Dist: RepairFixed, Mean: 5 * us}
	for _, spec := range []Spec{
		{Switch: "p0.t1-*", Action: ActionBlackhole, Random: &Random{MTBF: 200 * us, Repair: rep}},
		{Switch: "p1.t1-0", Action: ActionDown, Random: &Random{MTBF: 200 * us, Repair: rep}},
		{Link: "p0.t0-*.up*", Action: ActionFlap, DownFor: us, Period: 3 * us, Count: 2, Random: &Random{MTBF: 200 * us}},
		{Link: "p0.t0-*.up*", Action: ActionDegrade, Factor: 0.25, Random: &Random{MTBF: 200 * us, Repair: rep}},
		{Link: "h*", Action: ActionLoss, Loss: 0.5, Entropy: u32(3), Random: &Random{MTBF: 200 * us, Repair: rep}},
		{Transceiver: "h*.x0", Breakout: 2, Action: ActionBER, BER: 1e-5, Random: &Random{MTBF: 200 * us}},
	} {
		s := mustExpand(t, inv, 1, spec)
		if len(s.Events) == 0 || s.Entries[0].Arrivals == 0 {
			t.Errorf("%s on %v: nothing drawn", spec.Action, spec.Random)
			continue
		}
		for _, ev := range s.Events {
			if !ev.Random || ev.Action != spec.Action {
				t.Errorf("%s: event %v not marked as the random %s", spec.Action, ev, spec.Action)
				break
			}
		}
	}
}
