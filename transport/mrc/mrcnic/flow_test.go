package mrcnic

import (
	"fmt"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/mrc"
)

// flowTopos are the topologies the flow model is checked on: their base RTTs differ, so the
// automatic ACK timeout does.
func flowTopos(t *testing.T) map[string]topo.Topology {
	t.Helper()
	out := map[string]topo.Topology{}
	for name, c := range map[string]topo.Clos{
		"2-tier 100G":  {Tiers: 2, Planes: 4, Radix: 16, Hosts: 128, HostLink: 100e9},
		"3-tier 400G":  {Tiers: 3, Planes: 1, Radix: 16, Hosts: 512, HostLink: 400e9},
		"2-tier 1 hop": {Tiers: 2, Planes: 2, Radix: 8, Hosts: 4, HostLink: 200e9},
	} {
		l, err := c.Layout()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = l
	}
	return out
}

// The model sprays over ev.active paths (the default when 0), selective repeat, endpoint
// reroute after the first ACK timeout, no RTO, and sizes a packet as the block does, for
// every ev.active and packet size swept.
func TestFlowModelMRC(t *testing.T) {
	for name, l := range flowTopos(t) {
		for _, active := range []int{0, 1, 2, 3, 4, 8, 16, 32, 64, 100, 128, 200, 256} {
			for _, payload := range []int{0, 1024, 4096} {
				cfg := &mrc.Config{PayloadBytes: payload, EV: mrc.EVConfig{Active: active}}
				m, err := flowModel(cfg, l)
				if err != nil {
					t.Fatalf("%s active %d: %v", name, active, err)
				}
				c := cfg.WithDefaults()
				wantPaths := active
				if active == 0 {
					wantPaths = mrc.DefaultEVActive
				}
				rtt := l.Params().RoundTrip(l.Sizing().MaxSwitchHops, c.WireBytes(c.PayloadBytes), c.AckBytes)
				timeout, giveUp := flowGiveUp(c, rtt)
				want := transport.FlowModel{Spray: true, Paths: wantPaths, WireBytes: c.PayloadBytes + c.HeaderBytes,
					HeaderBytes: c.HeaderBytes, AckBytes: c.AckBytes, EndpointReroute: true, RerouteAfter: timeout, GiveUp: giveUp}
				if m != want {
					t.Errorf("%s active %d payload %d: model %+v; want %+v", name, active, payload, m, want)
				}
				if m.RerouteAfter < 4*rtt || m.GiveUp <= m.RerouteAfter {
					t.Errorf("%s active %d: reroute after %v, give up %v; want >= 4 RTTs (%v) and a longer give-up", name, active, m.RerouteAfter, m.GiveUp, 4*rtt)
				}
			}
		}
	}
}

// A left-out block (nil, or a nil *mrc.Config) is the defaults; any other type is an error.
func TestFlowModelMRCConfigs(t *testing.T) {
	l := flowTopos(t)["2-tier 100G"]
	def, err := flowModel(&mrc.Config{}, l)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []any{nil, (*mrc.Config)(nil)} {
		if m, err := flowModel(cfg, l); err != nil || m != def {
			t.Errorf("%T: %+v, %v; want the defaults %+v", cfg, m, err, def)
		}
	}
	for _, cfg := range []any{mrc.Config{}, "mrc", 3} {
		if _, err := flowModel(cfg, l); err == nil {
			t.Errorf("%T: no error", cfg)
		}
	}
}

// flowGiveUp against its closed forms: the first ACK timeout is 1.024 us x 2^t, t given or
// the smallest covering 4 base RTTs; the budget is (F + 2^(M-F+1) - 1) timeouts for F fixed
// retries and M max retries, never with M 25 (unlimited).
func TestFlowGiveUpClosedForm(t *testing.T) {
	for _, rtt := range []sim.Time{0, sim.Nanosecond, 255 * sim.Nanosecond, 256 * sim.Nanosecond, 257 * sim.Nanosecond,
		2 * sim.Microsecond, 3500 * sim.Nanosecond, 40 * sim.Microsecond, sim.Millisecond, 10 * sim.Second} {
		for exp := 0; exp <= 24; exp++ {
			for maxR := 1; maxR <= mrc.UnlimitedRetries; maxR++ {
				for fixed := 0; fixed <= min(maxR, 24); fixed++ {
					cfg := mrc.Config{AckTimeoutExp: exp, FixedRetries: fixed, MaxRetries: maxR}
					timeout, giveUp := flowGiveUp(cfg, rtt)
					e := exp
					if e == 0 {
						for e = 0; e < 24 && mrc.AckTimeoutUnit<<uint(e) < 4*rtt; e++ {
						}
						if lo := mrc.AckTimeoutUnit << uint(e); (e < 24 && lo < 4*rtt) || (e > 0 && lo>>1 >= 4*rtt) {
							t.Fatalf("rtt %v: automatic t %d (%v) is not the smallest covering 4 RTTs", rtt, e, lo)
						}
					}
					rto0 := mrc.AckTimeoutUnit << uint(e)
					if timeout != rto0 {
						t.Fatalf("rtt %v exp %d: timeout %v; want %v", rtt, exp, timeout, rto0)
					}
					f := cfg.WithDefaults().FixedRetries
					want := sim.MaxTime
					if maxR < mrc.UnlimitedRetries {
						want = rto0 * (sim.Time(f) + sim.Time(1)<<uint(maxR-f+1) - 1)
					}
					if giveUp != want {
						t.Fatalf("rtt %v exp %d fixed %d (%d) max %d: give up %v; want %v", rtt, exp, fixed, f, maxR, giveUp, want)
					}
				}
			}
		}
	}
}

// The defaults: 7 fixed and 15 in all, 518 timeouts; ack_timeout_exp moves both times.
func TestFlowGiveUpDefaults(t *testing.T) {
	for exp := 1; exp <= 24; exp++ {
		timeout, giveUp := flowGiveUp(mrc.Config{AckTimeoutExp: exp}, 0)
		if want := mrc.AckTimeoutUnit << uint(exp); timeout != want || giveUp != 518*want {
			t.Errorf("exp %d: %v, %v; want %v and 518 x it", exp, timeout, giveUp, want)
		}
	}
	for _, c := range []struct{ fixed, max int }{{1, 1}, {3, 3}, {7, 15}, {2, 10}, {10, 24}} {
		t.Run(fmt.Sprintf("%d/%d", c.fixed, c.max), func(t *testing.T) {
			_, a := flowGiveUp(mrc.Config{AckTimeoutExp: 5, FixedRetries: c.fixed, MaxRetries: c.max}, 0)
			_, b := flowGiveUp(mrc.Config{AckTimeoutExp: 5, FixedRetries: c.fixed, MaxRetries: c.max + 1}, 0)
			if b <= a {
				t.Errorf("max_retries %d -> %d: give up %v -> %v; want longer", c.max, c.max+1, a, b)
			}
		})
	}
}
