package rocenic

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/roce"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// checkTraffic checks a finished traffic run of want flows over qps QPs: every transfer
// completed after at least its ideal FCT, the summary counts them, the flow records agree
// with the run, and every posted byte was placed.
func checkTraffic(t *testing.T, g *rig, end sim.Time, want, qps int, bytes int64) *transport.Summary {
	t.Helper()
	if g.doneAt == sim.MaxTime || end != g.doneAt {
		t.Fatalf("OnDone at %v, run ended at %v (halt %v, errors %v); want every transfer done", g.doneAt, end, g.haltAt, g.ep.Errs())
	}
	if running, errs := g.ep.Outstanding(); running != 0 || errs != 0 {
		t.Fatalf("outstanding %d, QP errors %d", running, errs)
	}
	s := g.ep.Summary(end, nil)
	d := s.Detail.(*Detail)
	if s.Flows != want || s.FlowsCompleted != want || s.QPErrors != 0 || d.QPs != qps {
		t.Fatalf("flows %d completed %d QP errors %d QPs %d; want %d, %d, 0, %d", s.Flows, s.FlowsCompleted, s.QPErrors, d.QPs, want, want, qps)
	}
	if s.JCTUs != transport.Us(end) || s.FCTMaxUs > s.JCTUs || s.FCTP50Us > s.FCTP99Us {
		t.Errorf("JCT %v us (run end %v), FCT p50 %v p99 %v max %v", s.JCTUs, transport.Us(end), s.FCTP50Us, s.FCTP99Us, s.FCTMaxUs)
	}
	run := g.ep.Run().(*Run)
	if run.QPs() != qps {
		t.Errorf("Run.QPs %d; want %d", run.QPs(), qps)
	}
	for i, f := range g.ep.Flows() {
		if f.Done == 0 || f.Done != run.FlowDone(i) {
			t.Fatalf("flow %d: done %v, Run.FlowDone %v", i, f.Done, run.FlowDone(i))
		}
		if fct := f.Done - f.Start; fct < f.Ideal || f.Ideal <= 0 {
			t.Errorf("flow %d (h%d -> h%d, %d B): FCT %v below its ideal %v", i, f.Src, f.Dst, f.Bytes, fct, f.Ideal)
		}
		if f.Delivered != f.Bytes || f.Plane != -1 || f.Extra["qps"] != qps/want {
			t.Errorf("flow %d: delivered %d of %d, plane %d, extra %v", i, f.Delivered, f.Bytes, f.Plane, f.Extra)
		}
	}
	sent, placed, posted := g.ep.Bytes()
	if posted != int64(want)*bytes || placed != posted || sent < placed {
		t.Errorf("bytes sent %d placed %d posted %d; want %d posted, all placed", sent, placed, posted, int64(want)*bytes)
	}
	return s
}

// TestPermutationSweep: a shifted permutation (each host to the one hosts/2 on) over 2..64
// hosts on one and two planes, 1..4 QPs per peer per plane, PFC on: every transfer completes
// with no loss, no resend and no QP error.
func TestPermutationSweep(t *testing.T) {
	const bytes = 256 << 10
	for _, hosts := range []int{2, 3, 8, 17, 40, 64} {
		for qpp := 1; qpp <= 4; qpp++ {
			planes := 1 + (hosts+qpp)%2
			t.Run(fmt.Sprintf("hosts%d/qps%d/planes%d", hosts, qpp, planes), func(t *testing.T) {
				g := newRig(t, rigSpec{clos: clos(planes, hosts), seed: uint64(hosts*10 + qpp), pfc: true, ecn: true, cfg: roce.Config{QPsPerPeer: qpp}})
				g.traffic()
				for src := 0; src < hosts; src++ {
					if err := g.ep.AddFlow(src, (src+hosts/2)%hosts, bytes, 0); err != nil {
						t.Fatal(err)
					}
				}
				end := g.run(t, 50*sim.Millisecond)
				s := checkTraffic(t, g, end, hosts, hosts*qpp*planes, bytes)
				if s.RetxPackets != 0 || g.net.C.DroppedTotal() != 0 {
					t.Errorf("lossless permutation: %d resent, %d dropped", s.RetxPackets, g.net.C.DroppedTotal())
				}
				if d := s.Detail.(*Detail); hosts > 1 && (s.ActiveUntilUs <= 0 || len(d.ActiveShares) != 4) {
					t.Errorf("active figures missing: until %v shares %v", s.ActiveUntilUs, d.ActiveShares)
				}
			})
		}
	}
}

// TestIncast: n senders to one receiver, with PFC (lossless: no drop, no resend) and without
// (a 128 KiB drop-tail last hop: drops, go-back-N resends, a 200 us RTO for tail losses; more senders collapse into retry exhaustion), every
// transfer completing either way; staggered starts on the lossy fabric.
func TestIncast(t *testing.T) {
	const bytes = 512 << 10
	for _, pfc := range []bool{true, false} {
		for _, n := range []int{2, 5, 9} {
			t.Run(fmt.Sprintf("pfc%v/senders%d", pfc, n), func(t *testing.T) {
				sp := rigSpec{clos: clos(1, 16), seed: uint64(n), pfc: pfc, ecn: true, cfg: roce.Config{RTO: 200 * sim.Microsecond}}
				if !pfc {
					sp.limit = 128 << 10
				}
				g := newRig(t, sp)
				g.traffic()
				for i := 0; i < n; i++ {
					start := sim.Time(0)
					if !pfc {
						start = sim.Time(i) * sim.Microsecond
					}
					if err := g.ep.AddFlow(i+1, 0, bytes, start); err != nil {
						t.Fatal(err)
					}
				}
				end := g.run(t, 500*sim.Millisecond)
				s := checkTraffic(t, g, end, n, n, bytes)
				drops := g.net.C.DroppedTotal()
				lossAt, errAt := g.ep.Log()
				switch {
				case pfc && (drops != 0 || s.RetxPackets != 0 || len(lossAt) != 0):
					t.Errorf("lossless incast: %d dropped, %d resent, %d loss instants", drops, s.RetxPackets, len(lossAt))
				case !pfc && n > 2 && (drops == 0 || s.RetxPackets == 0 || len(lossAt) == 0 || s.FirstLossRetxUs <= 0):
					t.Errorf("lossy incast of %d: %d dropped, %d resent, %d loss instants (first %v us); want drops and go-back-N", n, drops, s.RetxPackets, len(lossAt), s.FirstLossRetxUs)
				}
				if len(errAt) != 0 {
					t.Errorf("QP errors at %v", errAt)
				}
				for i := 1; i < len(lossAt); i++ {
					if lossAt[i] <= lossAt[i-1] {
						t.Fatalf("loss log not ascending: %v", lossAt)
					}
				}
			})
		}
	}
}

// TestHalt: a transfer to a host whose link is down errors its QPs after retry_count
// timeouts; Halt is called once nothing left can finish (the other transfer already done),
// and the errors, their times and the stuck QPs are reported.
func TestHalt(t *testing.T) {
	for _, retries := range []int{1, 3} {
		t.Run(fmt.Sprintf("retries%d", retries), func(t *testing.T) {
			g := newRig(t, rigSpec{clos: clos(1, 16), seed: 1, pfc: true, ecn: true, cfg: roce.Config{RTO: 20 * sim.Microsecond, RetryCount: retries, QPsPerPeer: 2}})
			g.traffic()
			if err := g.ep.AddFlow(1, 2, 64<<10, 0); err != nil {
				t.Fatal(err)
			}
			if err := g.ep.AddFlow(3, 9, 64<<10, 0); err != nil {
				t.Fatal(err)
			}
			dead := g.net.Nodes[9].Ports[0]
			if err := g.net.SetLinkDown(0, dead, true); err != nil {
				t.Fatal(err)
			}
			if st := g.ep.Stuck(10); st != "[]" {
				t.Errorf("stuck before the run: %s", st)
			}
			end := g.run(t, 50*sim.Millisecond)
			if g.haltAt != end || g.doneAt != sim.MaxTime {
				t.Fatalf("halt at %v, done at %v, end %v; want a halt at the end", g.haltAt, g.doneAt, end)
			}
			running, errs := g.ep.Outstanding()
			_, errAt := g.ep.Log()
			if running != 1 || errs == 0 || len(g.ep.Errs()) != errs || len(errAt) != errs {
				t.Fatalf("outstanding %d, errors %d (%d listed, %d times); want 1 running and errors", running, errs, len(g.ep.Errs()), len(errAt))
			}
			// The QP errors after its first timeout and retries more.
			if min := sim.Time(retries+1) * 20 * sim.Microsecond; errAt[0] < min {
				t.Errorf("first QP error at %v, before %d timeouts of 20us", errAt[0], retries+1)
			}
			s := g.ep.Summary(end, nil)
			if s.Flows != 2 || s.FlowsCompleted != 1 || s.QPErrors != errs || len(s.QPErrorList) == 0 || s.JCTUs != 0 {
				t.Errorf("flows %d completed %d QP errors %d (%v) JCT %v", s.Flows, s.FlowsCompleted, s.QPErrors, s.QPErrorList, s.JCTUs)
			}
			if st := g.ep.Stuck(1); !strings.Contains(st, "h3->h9") {
				t.Errorf("stuck: %s; want the QP to h9", st)
			}
			if f := g.ep.Flows()[1]; f.Done != 0 || f.Delivered >= f.Bytes {
				t.Errorf("flow to the dead host: done %v, delivered %d of %d", f.Done, f.Delivered, f.Bytes)
			}
		})
	}
}

// TestMessages: collective messages over a few pairs and groups, many per QP (past
// MsgWindow, so some wait in the backlog), zero-byte ones included: every token is delivered
// once, the summary counts QPs, and Send refuses bad hosts.
func TestMessages(t *testing.T) {
	for _, qpp := range []int{1, 2, 4} {
		for _, perPair := range []int{1, MsgWindow, 3 * MsgWindow} {
			t.Run(fmt.Sprintf("qps%d/msgs%d", qpp, perPair), func(t *testing.T) {
				g := newRig(t, rigSpec{clos: clos(2, 16), seed: 7, pfc: true, ecn: true, cfg: roce.Config{QPsPerPeer: qpp}})
				seen := map[uint64]int{}
				var last sim.Time
				g.ep.SetHooks(transport.Hooks{
					Delivered: func(now sim.Time, tok uint64) { seen[tok]++; last = now },
					Group:     func(inst int) int { return inst % 2 },
				})
				pairs := [][2]int{{0, 9}, {9, 0}, {3, 4}, {5, 12}}
				var tok uint64
				for _, p := range pairs {
					for i := 0; i < perPair; i++ {
						tok++
						b := int64(i%3) * 20000 // 0, 20 kB, 40 kB
						if err := g.ep.Send(0, collective.Message{Src: p[0], Dst: p[1], Bytes: b, Token: tok, Instance: i}); err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := g.ep.Send(0, collective.Message{Src: 2, Dst: 2, Token: 99}); err == nil {
					t.Error("a message to itself was accepted")
				}
				if err := g.ep.Send(0, collective.Message{Src: 0, Dst: 16, Token: 99}); err == nil {
					t.Error("a message to host 16 of 16 was accepted")
				}
				if err := g.s.Drain(50 * sim.Millisecond); err != nil {
					t.Fatal(err)
				}
				if len(seen) != int(tok) {
					t.Fatalf("%d of %d messages delivered", len(seen), tok)
				}
				for k, n := range seen {
					if n != 1 {
						t.Fatalf("token %d delivered %d times", k, n)
					}
				}
				if running, errs := g.ep.Outstanding(); running != 0 || errs != 0 {
					t.Fatalf("outstanding %d, errors %d", running, errs)
				}
				groups := min(perPair, 2)
				qps := len(pairs) * groups * qpp * 2
				s := g.ep.Summary(g.s.Now(), nil)
				if s.Flows != qps || s.FlowsCompleted != qps || s.JCTUs != transport.Us(g.s.Now()) || s.IdealFCTUs != 0 || s.FCTMaxUs <= 0 {
					t.Errorf("flows %d completed %d (want %d QPs), JCT %v, ideal %v, FCT max %v", s.Flows, s.FlowsCompleted, qps, s.JCTUs, s.IdealFCTUs, s.FCTMaxUs)
				}
				_, placed, posted := g.ep.Bytes()
				if placed != posted || last == 0 {
					t.Errorf("placed %d of %d", placed, posted)
				}
			})
		}
	}
}

// TestAddFlowErrors: hosts out of range are refused.
func TestAddFlowErrors(t *testing.T) {
	g := newRig(t, rigSpec{clos: clos(1, 8), seed: 1, pfc: true, ecn: true})
	for _, p := range [][2]int{{-1, 2}, {0, 8}, {8, 0}} {
		if err := g.ep.AddFlow(p[0], p[1], 1000, 0); err == nil {
			t.Errorf("AddFlow(%d, %d) accepted", p[0], p[1])
		}
	}
}

// TestLink: half the base RTT and the payload share of a full packet, across MTUs and planes.
func TestLink(t *testing.T) {
	for _, planes := range []int{1, 4} {
		for _, mtu := range []int{256, 1024, 4096} {
			g := newRig(t, rigSpec{clos: clos(planes, 16), seed: 1, cfg: roce.Config{PayloadBytes: mtu}})
			lat, share := g.ep.Link()
			cfg := g.ep.cfg
			rtt := g.l.Params().RoundTrip(g.l.Sizing().MaxSwitchHops, cfg.HeaderBytes+mtu, cfg.AckWire())
			if lat != rtt/2 || share != float64(mtu)/float64(mtu+cfg.HeaderBytes) {
				t.Errorf("planes %d mtu %d: latency %v share %v; want %v and %v", planes, mtu, lat, share, rtt/2, float64(mtu)/float64(mtu+cfg.HeaderBytes))
			}
		}
	}
}

// TestNewEndpointConfig: the block is *roce.Config (nil: defaults); other types are refused.
func TestNewEndpointConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg any
		ok  bool
	}{{&roce.Config{}, true}, {(*roce.Config)(nil), true}, {roce.Config{QPsPerPeer: 2}, true}, {"roce", false}, {nil, false}} {
		_, err := config(tc.cfg)
		if (err == nil) != tc.ok {
			t.Errorf("config %T: err %v; want ok %v", tc.cfg, err, tc.ok)
		}
	}
}

// TestDeterministic: the same fabric, flows and seed give byte-identical summaries and flow
// records; another seed (UDP source ports, ECMP seeds, ECN marks) changes them.
func TestDeterministic(t *testing.T) {
	run := func(seed uint64) string {
		g := newRig(t, rigSpec{clos: clos(2, 32), seed: seed, pfc: true, ecn: true, cfg: roce.Config{QPsPerPeer: 2}})
		g.traffic()
		for src := 0; src < 32; src++ {
			if err := g.ep.AddFlow(src, (src+11)%32, 1<<20, 0); err != nil {
				t.Fatal(err)
			}
		}
		end := g.run(t, 50*sim.Millisecond)
		b, err := json.Marshal(g.ep.Summary(end, nil))
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s %+v", b, g.ep.Flows())
	}
	for _, seed := range []uint64{1, 2, 9} {
		a, b, c := run(seed), run(seed), run(seed+100)
		if a != b {
			t.Errorf("seed %d: two runs differ:\n%s\n%s", seed, a, b)
		}
		if a == c {
			t.Errorf("seed %d and %d gave the same run", seed, seed+100)
		}
	}
}

// TestStuck: at most max QPs are named, sorted, then how many more.
func TestStuck(t *testing.T) {
	g := newRig(t, rigSpec{clos: clos(1, 16), seed: 1, pfc: true, ecn: true, cfg: roce.Config{QPsPerPeer: 3}})
	g.traffic()
	for _, dst := range []int{5, 6} {
		if err := g.ep.AddFlow(1, dst, 1<<20, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.s.Run(2 * sim.Microsecond); err != nil { // posted, far from done
		t.Fatal(err)
	}
	for _, tc := range []struct {
		max  int
		more string
	}{{1, "and 5 more"}, {4, "and 2 more"}, {6, ""}, {10, ""}} {
		st := g.ep.Stuck(tc.max)
		if n := strings.Count(st, "(h1->"); n != min(tc.max, 6) || (tc.more != "" && !strings.HasSuffix(st, tc.more+"]")) || (tc.more == "" && strings.Contains(st, "more")) {
			t.Errorf("Stuck(%d) = %s; want %d QPs then %q", tc.max, st, min(tc.max, 6), tc.more)
		}
	}
}
