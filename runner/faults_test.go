package runner

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/fault"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
)

// faultYAML is a raw-traffic scenario on a 2-tier radix-8 Clos (planes, hosts, traffic,
// faults, packet size and duration filled in).
const faultYAML = `
name: f
topology:
  clos: {tiers: 2, planes: %d, radix: 8, hosts: %d, host_link: 100G, hop_latency: 500ns}
fabric:
  nic_queue: {limit: 64KiB}
  switch_queue: {limit: 256KiB}
traffic:
%s
faults:
%s
run: {seed: 1, duration: %s}
`

func port(t *testing.T, res *Result, name string) *fabric.Port {
	t.Helper()
	p, ok := res.Net.PortByName(name)
	if !ok {
		t.Fatalf("no port %s", name)
	}
	return &res.Net.Ports[p]
}

// TestFaultBER: bit errors on every NIC port's transmit direction lose packets at the rate
// 1 - (1 - BER)^(8 x size) per packet (Network.SetBER, end to end through the runner): at
// 1e-8 about 3.3e-4 of 4160 B packets and 8.3e-5 of 1040 B ones, within 4 standard deviations
// of the binomial count; at 1e-12 (3.3e-8 per packet) none of a few hundred thousand.
// Paths are link-disjoint at full load, so no packet is lost to congestion.
func TestFaultBER(t *testing.T) {
	for _, c := range []struct {
		ber  float64
		size int
		dur  string
	}{
		{1e-8, 4160, "2ms"},
		{1e-8, 1040, "2ms"},
		{1e-12, 4160, "2ms"},
	} {
		tr := fmt.Sprintf("  - {pattern: permutation, path: spread, load: 1, packet_size: %dB}", c.size)
		fl := fmt.Sprintf("  - {at: 0s, nic: \"h*\", action: ber, ber: %g}", c.ber)
		res := mustRun(t, fmt.Sprintf(faultYAML, 4, 16, tr, fl, c.dur))
		s := res.Summary
		n := float64(s.SentPackets)
		p := -math.Expm1(8 * float64(c.size) * math.Log1p(-c.ber))
		want := n * p
		got := float64(s.Drops[fabric.DropLoss.String()])
		sd := math.Sqrt(n * p * (1 - p))
		t.Logf("BER %g, %d B: %d packets, %.0f lost (expected %.1f +- %.1f, per packet %.3g vs 8 x size x BER %.3g)", c.ber, c.size, s.SentPackets, got, want, sd, got/n, 8*float64(c.size)*c.ber)
		if s.DroppedPackets != int64(got) {
			t.Errorf("BER %g: %d drops, %d of them loss; want only losses", c.ber, s.DroppedPackets, int64(got))
		}
		if c.ber < 1e-10 {
			if got > 1 {
				t.Errorf("BER %g: %.0f of %.0f packets lost; want at most 1 (expected %.3f)", c.ber, got, n, want)
			}
			continue
		}
		if n < 100_000 || math.Abs(got-want) > 4*sd {
			t.Errorf("BER %g, %d B packets: %.0f of %.0f lost; want %.1f within 4 sd (%.1f)", c.ber, c.size, got, n, want, 4*sd)
		}
	}
}

// TestFaultDegrade: degrading a NIC port's link to half its rate halves a flow's delivered
// rate (the excess is dropped at the NIC's small queue); undegraded after half the run it
// delivers three quarters; both ends' rates are set and restored.
func TestFaultDegrade(t *testing.T) {
	tr := "  - {pattern: flows, flows: [{src: 0, dst: 5, rate: 100G}]}"
	for _, c := range []struct {
		fault string
		want  float64 // Gb/s delivered over the 2 ms
		rate  sim.Rate
	}{
		{"  - {at: 0s, link: h0.p0, action: degrade, factor: 0.5}", 50, 50 * sim.Gbps},
		{"  - {at: 0s, nic: h0.p0, action: degrade, rate: 50G, for: 1ms}", 75, 100 * sim.Gbps},
		{"  - {at: 0s, link: p0.t0-0.down0, action: degrade, rate: 25G}\n  - {at: 1ms, link: h0.p0, action: undegrade}", 62.5, 100 * sim.Gbps},
	} {
		res := mustRun(t, fmt.Sprintf(faultYAML, 1, 8, tr, c.fault, "2ms"))
		got := float64(res.Raw.Stats[0].RecvBytes) * 8 / 2e-3 / 1e9
		t.Logf("%s: delivered %.2f Gb/s", strings.TrimSpace(c.fault), got)
		if math.Abs(got/c.want-1) > 0.02 {
			t.Errorf("%s: delivered %.2f Gb/s; want %.1f within 2%%", c.fault, got, c.want)
		}
		if a, b := port(t, res, "h0.p0").Rate, port(t, res, "p0.t0-0.down0").Rate; a != c.rate || b != c.rate {
			t.Errorf("%s: link rates at the end %v / %v; want %v both ways", c.fault, a, b, c.rate)
		}
	}
}

// TestFaultBlackhole: a blackholed T1 drops everything that reaches it while its links stay
// up, so sprayed traffic across T0s loses exactly the quarter that goes through it (4 T1s),
// routing does not reconverge, and after the blackhole ends nothing more is lost.
func TestFaultBlackhole(t *testing.T) {
	tr := "  - {pattern: flows, path: spray, flows: [{src: 0, dst: 4}, {src: 1, dst: 5}, {src: 2, dst: 6}, {src: 3, dst: 7}]}"
	for _, c := range []struct {
		fault string
		share float64
	}{
		{"  - {at: 0s, switch: p0.t1-0, action: blackhole}", 0.25},
		{"  - {at: 0s, switch: p0.t1-0, action: blackhole, for: 500us}", 0.125},
	} {
		res := mustRun(t, fmt.Sprintf(faultYAML, 1, 8, tr, c.fault, "1ms"))
		s := res.Summary
		holed := s.Drops[fabric.DropBlackhole.String()]
		got := float64(holed) / float64(s.SentPackets)
		t.Logf("%s: %d of %d packets blackholed (%.4f), delivered %.4f", strings.TrimSpace(c.fault), holed, s.SentPackets, got, s.DeliveredFraction)
		if math.Abs(got-c.share) > 0.01 || s.DroppedPackets != holed {
			t.Errorf("%s: %.4f of packets blackholed (%d drops in all); want %.3f, nothing else dropped", c.fault, got, s.DroppedPackets, c.share)
		}
		for i := range res.Net.Nodes {
			n := &res.Net.Nodes[i]
			if d := n.Drops[fabric.DropBlackhole]; (n.Name == "p0.t1-0") != (d > 0) {
				t.Errorf("%s: %s dropped %d as blackhole", c.fault, n.Name, d)
			}
		}
		if len(res.Reconverge) != 0 {
			t.Errorf("a blackhole made routing reconverge at %v; its links stay up", res.Reconverge)
		}
	}
}

// TestFaultLinkStates: flaps, switch failures and transceivers change link state at the
// scheduled times (Port.Downs, Port.DownTime at both ends), and routing reconverges after each
// down and up.
func TestFaultLinkStates(t *testing.T) {
	tr := "  - {pattern: permutation, load: 0.3}"
	faults := `  - {at: 100us, link: h0.p0, action: flap, down_for: 50us, period: 200us, count: 3}
  - {at: 100us, switch: p1.t1-1, action: down, for: 100us}
  - {at: 50us, transceiver: h3.x0, breakout: 2, action: down}`
	res := mustRun(t, fmt.Sprintf(faultYAML, 4, 16, tr, faults, "1ms"))
	end := res.Sim.Now()
	check := func(name string, downs int64, downTime sim.Time) {
		t.Helper()
		p := port(t, res, name)
		peer := &res.Net.Ports[p.Peer]
		for _, q := range []*fabric.Port{p, peer} {
			if q.Downs() != downs || q.DownTime(end) != downTime {
				t.Errorf("%s: %d downs, down %v; want %d, %v", q.Name, q.Downs(), q.DownTime(end), downs, downTime)
			}
		}
	}
	check("h0.p0", 3, 150*sim.Microsecond)
	check("h1.p0", 0, 0)
	for _, p := range []string{"p1.t1-1.down0", "p1.t1-1.down1", "p1.t1-1.down2", "p1.t1-1.down3"} {
		check(p, 1, 100*sim.Microsecond)
	}
	check("h3.p0", 1, end-50*sim.Microsecond)
	check("h3.p1", 1, end-50*sim.Microsecond)
	check("h3.p2", 0, 0)
	// Reconvergence (default 1s) is due after every distinct down or up time.
	want := []sim.Time{50, 100, 150, 200, 300, 350, 500, 550}
	if len(res.Reconverge) != len(want) {
		t.Fatalf("reconvergence at %v; want after %v us", res.Reconverge, want)
	}
	for i, w := range want {
		if res.Reconverge[i] != w*sim.Microsecond+sim.Second {
			t.Errorf("reconvergence %d at %v; want %v", i, res.Reconverge[i], w*sim.Microsecond+sim.Second)
		}
	}
}

// TestFaultEventsMatchSchedule: the events a run applies are the resolved scenario's
// schedule (fault.Expand on the built fabric and on the layout agree), random draws included,
// with the fields the reports read.
func TestFaultEventsMatchSchedule(t *testing.T) {
	tr := "  - {pattern: permutation, load: 0.3}"
	faults := `  - {link: "p*.t0-*.up*", action: down, random: {per_day: 2e9, repair: {dist: exponential, mean: 30us}}}
  - {at: 10us, switch: "p0.t1-2", action: blackhole, for: 40us}
  - {at: 0s, nic: "h1.p*", action: loss, loss: 0.01, direction: both}
  - {at: 20us, link: h2.p1, action: degrade, rate: 10G}`
	y := fmt.Sprintf(faultYAML, 2, 16, tr, faults, "200us")
	sc, err := scenario.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	sch, err := sc.FaultSchedule()
	if err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, y)
	if len(res.Faults) != len(sch.Events) || sch.Entries[0].Arrivals < 5 {
		t.Fatalf("run applied %d events, schedule has %d (%+v)", len(res.Faults), len(sch.Events), sch.Entries)
	}
	for i, f := range res.Faults {
		e := sch.Events[i]
		if f.At != e.At || f.Name != e.Name || f.Action != e.Op.String() || f.Entry != e.Entry || f.Random != e.Random || f.Cause != e.Action || f.Target != e.Target {
			t.Fatalf("event %d: run %+v, schedule %v", i, f, e)
		}
		switch f.Action {
		case "blackhole", "unblackhole":
			if f.Port != -1 || res.Net.Nodes[f.Node].Name != "p0.t1-2" {
				t.Errorf("%+v: want the switch's node and no port", f)
			}
		case "loss":
			if f.Loss != 0.01 || res.Net.Ports[f.Port].Name != f.Name {
				t.Errorf("%+v: want loss 0.01 on its named port", f)
			}
		case "degrade":
			if f.Rate != 10*sim.Gbps {
				t.Errorf("%+v: want rate 10G", f)
			}
		}
	}
}

// TestFaultRunErrors: a scenario whose faults were changed after resolution is still checked
// when the run expands them, as an input error naming the entry.
func TestFaultRunErrors(t *testing.T) {
	y := fmt.Sprintf(faultYAML, 1, 8, "  - {pattern: permutation, load: 0.3}", "  - {at: 1us, link: h0.p0, action: down}", "20us")
	for _, c := range []struct {
		edit func(*scenario.Fault)
		want string
	}{
		{func(f *scenario.Fault) { f.Link = "p7.*" }, `faults[0].link: "p7.*" matches no port`},
		{func(f *scenario.Fault) { f.Action = fault.ActionUp }, "faults[0]: brings link h0.p0 up at 1us, but it is not down"},
		{func(f *scenario.Fault) { f.Link, f.Switch, f.Action = "", "p0.t1-0", fault.ActionHeal }, `faults[0].action: heal at 1us finds nothing to heal`},
	} {
		sc, err := scenario.Parse([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		c.edit(&sc.Faults[0])
		_, err = Run(sc)
		var ie *InputError
		if err == nil || !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run error %v; want an InputError containing %q", err, c.want)
		}
	}
}
