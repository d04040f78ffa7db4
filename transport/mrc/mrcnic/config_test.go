package mrcnic

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/mrc"
)

func clos(t *testing.T, planes int, rate sim.Rate) topo.Topology {
	t.Helper()
	l, err := topo.Clos{Tiers: 2, Planes: planes, Radix: 16, Hosts: 16, HostLink: rate}.Topology()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestResolveEVSplit sweeps planes and EV counts: left out, active is the largest multiple of
// the planes up to 128 and backup splits too; given, both must split equally, and errors name
// the field under the block's path.
func TestResolveEVSplit(t *testing.T) {
	for _, planes := range []int{1, 2, 3, 4, 6, 8, 16} {
		for _, active := range []int{0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 100, 128} {
			for _, backup := range []int{-1, 0, 2, 4, 6, 8} {
				ev := mrc.EVConfig{Active: active, Backup: backup}
				err := resolveEVSplit(&ev, planes, "transport.mrc")
				switch {
				case active > 0 && active < planes:
					wantPrefix(t, err, "transport.mrc.ev.active: ", "cannot cover")
				case active%planes != 0:
					wantPrefix(t, err, "transport.mrc.ev.active: ", "does not split equally")
				case backup > 0 && backup%planes != 0:
					wantPrefix(t, err, "transport.mrc.ev.backup: ", "does not split equally")
				default:
					if err != nil {
						t.Fatalf("%d planes, active %d, backup %d: %v", planes, active, backup, err)
					}
					if ev.Active%planes != 0 || ev.Active < planes || ev.Active > max(128, planes) {
						t.Errorf("%d planes, active %d: resolved active %d", planes, active, ev.Active)
					}
					if ev.Backup != -1 && ev.Backup%planes != 0 {
						t.Errorf("%d planes, backup %d: resolved backup %d does not split", planes, backup, ev.Backup)
					}
				}
			}
		}
	}
}

func wantPrefix(t *testing.T, err error, prefix, contains string) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), contains) {
		t.Errorf("error %v; want %q...%q", err, prefix, contains)
	}
}

// TestResolve: the block comes back with mrc's defaults, a probe interval of at least twice
// the base RTT, and is a fixed point; Validate's errors carry env.Path.
func TestResolve(t *testing.T) {
	for _, planes := range []int{1, 2, 4, 8} {
		for _, rate := range []sim.Rate{25e9, 100e9, 400e9, 800e9} {
			l := clos(t, planes, rate)
			c := &mrc.Config{}
			if err := resolve(c, transport.ResolveEnv{Path: "transport.mrc", Topology: l}); err != nil {
				t.Fatalf("%d planes, %v: %v", planes, rate, err)
			}
			rtt := l.Params().RoundTrip(l.Sizing().MaxSwitchHops, c.WireBytes(c.PayloadBytes), c.AckBytes)
			if c.EV.ProbeInterval < 2*rtt || c.EV.ProbeInterval < mrc.DefaultEVProbeInterval || c.PayloadBytes == 0 {
				t.Errorf("%d planes, %v: probe %v (rtt %v), payload %d", planes, rate, c.EV.ProbeInterval, rtt, c.PayloadBytes)
			}
			again := *c
			if err := resolve(&again, transport.ResolveEnv{Path: "transport.mrc", Topology: l}); err != nil || fmt.Sprint(again) != fmt.Sprint(*c) {
				t.Errorf("%d planes, %v: not a fixed point: %v\n%+v\n%+v", planes, rate, err, again, *c)
			}
		}
	}
	for _, path := range []string{"transport.mrc", "x.y"} {
		err := resolve(&mrc.Config{EV: mrc.EVConfig{Active: 3}}, transport.ResolveEnv{Path: path, Topology: clos(t, 2, 100e9)})
		wantPrefix(t, err, path+".ev.active: ", "does not split")
	}
}

// TestProfile sweeps link rates: the mrc profile marks from 0.2 to 0.8 BDP (at least 3 and 12
// MTUs) on fabric hops, not at the last hop, trims at 1 BDP (1.5 at the last hop) and keeps
// what the scenario gave (a last hop left out is the switch queue's copy).
func TestProfile(t *testing.T) {
	for _, rate := range []sim.Rate{10e9, 25e9, 100e9, 400e9, 800e9} {
		for _, given := range []transport.QueueGiven{{}, {SwitchECN: true, LastTrim: true}, {SwitchLimit: true, LastLimit: true}} {
			l := clos(t, 4, rate)
			sw := fabric.QueueConfig{Limit: 1 << 20}.WithDefaults()
			var lh *fabric.QueueConfig
			profile(&mrc.Config{}, transport.ProfileEnv{Topology: l, SwitchQueue: &sw, LastHopQueue: &lh, Given: given})
			if lh == nil {
				t.Fatalf("%v: no last hop queue", rate)
			}
			if sw.ECN.Enabled == given.SwitchECN || (!given.SwitchECN && (sw.ECN.Kmin >= sw.ECN.Kmax || sw.ECN.Pmax != ProfilePmax)) {
				t.Errorf("%v, %+v: switch ECN %+v", rate, given, sw.ECN)
			}
			if !sw.Trim.Enabled || lh.ECN.Enabled || !lh.Trim.Enabled || given.LastTrim && lh.Trim != sw.Trim {
				t.Errorf("%v, %+v: switch trim %+v, last ECN %+v, last trim %+v", rate, given, sw.Trim, lh.ECN, lh.Trim)
			}
			if !given.LastTrim && lh.Trim.Threshold != sw.Trim.Threshold*3/2 {
				t.Errorf("%v: last-hop trim %v; want 1.5 x %v", rate, lh.Trim.Threshold, sw.Trim.Threshold)
			}
			if given.SwitchLimit != (sw.Limit == 1<<20) && sw.Limit < 2*sw.Trim.Threshold {
				t.Errorf("%v, %+v: limit %v below 2 x trim %v", rate, given, sw.Limit, sw.Trim.Threshold)
			}
		}
	}
}
