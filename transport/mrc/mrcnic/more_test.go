package mrcnic_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/mrc"
	"github.com/lockstepsim/lockstep/transport/mrc/mrcnic"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// newEndpoint builds the MRC endpoint of cfg over a fresh Clos of hosts hosts and planes
// planes through the registered plugin.
func newEndpoint(t testing.TB, hosts, planes int, seed uint64, cfg mrc.Config) (*sim.Sim, *mrcnic.Endpoint) {
	t.Helper()
	s, net, l, q := fabricFor(t, clos(hosts, planes), seed, cfg)
	p, _ := transport.Lookup(mrcnic.Kind)
	e, err := p.NewEndpoint(&cfg, transport.EndpointEnv{Sim: s, Net: net, Topology: l, Queues: q, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return s, e.(*mrcnic.Endpoint)
}

// TestRingMessages carries collective messages (Send) round a ring of hosts for several
// rounds, each round its own connection group: every token comes back once, the QPs are one
// per (pair, group), and the workload summary counts QPs whose every message was placed.
func TestRingMessages(t *testing.T) {
	for _, hosts := range []int{2, 3, 8, 16} {
		for _, groups := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("%dhosts-%dgroups", hosts, groups), func(t *testing.T) {
				const rounds, msgBytes = 6, 100 << 10
				s, ep := newEndpoint(t, hosts, 2, 5, mrc.Config{})
				total := hosts * rounds
				seen := map[uint64]int{}
				send := func(now sim.Time, round, src int) {
					m := collective.Message{Src: src, Dst: (src + 1) % hosts, Bytes: msgBytes, Instance: round, Token: uint64(round*hosts + src)}
					if round%3 == 2 {
						m.Bytes = 0 // a synchronisation message: still one packet
					}
					if err := ep.Send(now, m); err != nil {
						t.Fatal(err)
					}
				}
				ep.SetHooks(transport.Hooks{
					OnDone: func(now sim.Time) { s.Pause() },
					Delivered: func(now sim.Time, tok uint64) {
						seen[tok]++
						round, src := int(tok)/hosts, int(tok)%hosts
						if round+1 < rounds {
							send(now, round+1, (src+1)%hosts)
						}
					},
					Group: func(instance int) int { return instance % groups },
				})
				kick := s.Register("test.kick", func(now sim.Time, _ int32, _ uint64) {
					for h := range hosts {
						send(now, 0, h)
					}
				})
				s.At(0, kick, 0, 0)
				limit := 10 * sim.Millisecond
				for {
					if err := s.Run(limit); err != nil {
						t.Fatal(err)
					}
					if running, _ := ep.Outstanding(); running == 0 && len(seen) == total || s.Now() >= limit {
						break
					}
				}
				end := s.Now()
				if len(seen) != total {
					t.Fatalf("%d of %d messages delivered by %v: %s", len(seen), total, end, ep.Stuck(5))
				}
				for tok, n := range seen {
					if n != 1 {
						t.Errorf("token %d delivered %d times", tok, n)
					}
				}
				ep.Sample(end)
				run := ep.Run().(*mrcnic.Run)
				if len(run.EVSeries) != 1 || run.FlowPlaced != nil {
					t.Errorf("workload sample: %d EV samples, flow series %v; want 1 and none", len(run.EVSeries), run.FlowPlaced)
				}
				ep.Quiesce()
				sum := ep.Summary(end, nil)
				wantQPs := hosts * min(groups, rounds)
				if sum.Flows != wantQPs || sum.FlowsCompleted != wantQPs || sum.QPErrors != 0 {
					t.Errorf("summary: %d QPs, %d completed, %d errors; want %d, all, none", sum.Flows, sum.FlowsCompleted, sum.QPErrors, wantQPs)
				}
				if sum.JCTUs != transport.Us(end) || sum.IdealFCTUs != 0 || sum.FCTMeanUs <= 0 || sum.FCTMaxUs < sum.FCTP50Us {
					t.Errorf("workload figures: JCT %v (end %v), ideal %v, FCT mean %v p50 %v max %v", sum.JCTUs, transport.Us(end), sum.IdealFCTUs, sum.FCTMeanUs, sum.FCTP50Us, sum.FCTMaxUs)
				}
				d := sum.Detail.(*mrcnic.Detail)
				if d.ThroughputMeanOfLine != 0 || sum.ActiveUntilUs != 0 {
					t.Errorf("per-flow throughput under a workload: %v, active until %v", d.ThroughputMeanOfLine, sum.ActiveUntilUs)
				}
				var posted int64
				for _, r := range ep.Flows() {
					if r.Done == 0 || r.Done > end || r.Delivered != r.Bytes || r.ActiveOfLine != -1 {
						t.Errorf("QP h%d->h%d: done %v, %d of %d placed, active_of_line %v", r.Src, r.Dst, r.Done, r.Delivered, r.Bytes, r.ActiveOfLine)
					}
					posted += r.Bytes
				}
				zeros := 0
				for r := range rounds {
					if r%3 == 2 {
						zeros++
					}
				}
				if want := int64(hosts) * (int64(rounds-zeros)*msgBytes + int64(zeros)); posted != want {
					t.Errorf("posted %d bytes, want %d (a zero-byte message posts one)", posted, want)
				}
			})
		}
	}
}

// TestSendErrors: messages between hosts that do not exist or to oneself are refused, as are
// flows with a host out of range.
func TestSendErrors(t *testing.T) {
	s, ep := newEndpoint(t, 4, 1, 1, mrc.Config{})
	_ = s
	for _, m := range []collective.Message{{Src: -1, Dst: 1}, {Src: 0, Dst: 4}, {Src: 2, Dst: 2}, {Src: 4, Dst: 0}} {
		if err := ep.Send(0, m); err == nil || !strings.Contains(err.Error(), "want two distinct hosts of 4") {
			t.Errorf("Send %d -> %d: %v", m.Src, m.Dst, err)
		}
	}
	for _, p := range []pair{{-1, 0}, {0, 4}, {7, 1}} {
		if err := ep.AddFlow(p.src, p.dst, 1, 0); err == nil || !strings.Contains(err.Error(), "want hosts of 0..3") {
			t.Errorf("AddFlow %d -> %d: %v", p.src, p.dst, err)
		}
	}
	if n, _ := ep.Outstanding(); n != 0 || ep.Run().(*mrcnic.Run).Flows() != 0 {
		t.Errorf("refused requests left %d outstanding", n)
	}
}

// TestHaltOnDeadReceiver: with every link into the receiver down, the incast's QPs give up;
// the endpoint calls Halt once nothing left can finish, and the summary and log count the
// errors.
func TestHaltOnDeadReceiver(t *testing.T) {
	for _, senders := range []int{1, 3} {
		for _, planes := range []int{1, 2} {
			t.Run(fmt.Sprintf("%dsenders-%dplanes", senders, planes), func(t *testing.T) {
				hosts := senders + 1
				s, net, l, q := fabricFor(t, clos(hosts, planes), 2, mrc.Config{})
				p, _ := transport.Lookup(mrcnic.Kind)
				e, err := p.NewEndpoint(&mrc.Config{}, transport.EndpointEnv{Sim: s, Net: net, Topology: l, Queues: q, Seed: 2})
				if err != nil {
					t.Fatal(err)
				}
				halted := sim.MaxTime
				e.SetHooks(transport.Hooks{
					OnDone: func(sim.Time) { t.Error("OnDone with every QP failed") },
					Halt:   func(now sim.Time) { halted = now; s.Pause() },
				})
				for _, pt := range net.Nodes[0].Ports {
					if err := net.SetLinkDown(0, pt, true); err != nil {
						t.Fatal(err)
					}
				}
				for h := 1; h < hosts; h++ {
					if err := e.AddFlow(h, 0, 64<<10, 0); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Run(sim.Second); err != nil {
					t.Fatal(err)
				}
				running, errs := e.Outstanding()
				if halted == sim.MaxTime || halted != s.Now() || running != senders || errs != senders || len(e.Errs()) != senders {
					t.Fatalf("halted at %v (now %v), %d running, %d errors (%v)", halted, s.Now(), running, errs, e.Errs())
				}
				if st := e.Stuck(1); !strings.Contains(st, "qp 0 (h1->h0)") || (senders > 1) != strings.Contains(st, "more") {
					t.Errorf("Stuck(1) = %s", st)
				}
				sum := e.Summary(s.Now(), []sim.Time{0})
				if sum.QPErrors != senders || len(sum.QPErrorList) != min(senders, 5) || sum.FlowsCompleted != 0 || sum.JCTUs != 0 {
					t.Errorf("summary: %d QP errors %v, %d completed, JCT %v", sum.QPErrors, sum.QPErrorList, sum.FlowsCompleted, sum.JCTUs)
				}
				if lossAt, errAt := e.Log(); len(errAt) != senders || len(lossAt) == 0 || sum.FaultToLastLossRetxUs != sum.LastLossRetxUs {
					t.Errorf("log: %d loss retransmissions, %d errors; span %v..%v, from the fault %v", len(lossAt), len(errAt), sum.FirstLossRetxUs, sum.LastLossRetxUs, sum.FaultToLastLossRetxUs)
				}
				for i, r := range e.Flows() {
					if r.Done != 0 || r.Retx == 0 {
						t.Errorf("flow %d: done %v, %d retransmissions", i, r.Done, r.Retx)
					}
				}
			})
		}
	}
}

// TestSummaryJSON: the transport block holds the common keys in their order, then Detail's,
// each once; retx_packets is the total, retx_packets_by_cause the map.
func TestSummaryJSON(t *testing.T) {
	for _, hosts := range []int{2, 8} {
		t.Run(fmt.Sprintf("%dhosts", hosts), func(t *testing.T) {
			pairs := incast(hosts)
			r := runTraffic(t, clos(hosts, 1), 3, mrc.Config{}, pairs, 1<<20, 0)
			r.sum.Warnings = []string{"a warning"}
			b, err := json.Marshal(r.sum)
			if err != nil {
				t.Fatal(err)
			}
			keys := objectKeys(t, b)
			seen := map[string]bool{}
			for _, k := range keys {
				if seen[k] {
					t.Errorf("key %q twice", k)
				}
				seen[k] = true
			}
			common := jsonKeys(reflect.TypeFor[transport.Summary]())
			detail := jsonKeys(reflect.TypeFor[mrcnic.Detail]())
			var want []string
			for _, k := range append(common, detail...) {
				if seen[k] {
					want = append(want, k)
				}
			}
			if len(keys) < len(common)/2 || keys[len(keys)-1] != detail[len(detail)-1] {
				t.Errorf("keys %v: want the common ones, then Detail's", keys)
			}
			if !reflect.DeepEqual(keys, want) {
				t.Errorf("keys\n got %v\nwant %v", keys, want)
			}
			for _, k := range []string{"kind", "flows", "retx_packets", "jct_us", "warnings", "retx_packets_by_cause", "rx_budget_cuts", "header_overhead_pct"} {
				if !seen[k] {
					t.Errorf("key %q missing", k)
				}
			}
			var m map[string]json.RawMessage
			_ = json.Unmarshal(b, &m)
			var total int64
			var byCause map[string]int64
			if json.Unmarshal(m["retx_packets"], &total) != nil || json.Unmarshal(m["retx_packets_by_cause"], &byCause) != nil || len(byCause) != int(mrc.NumRetxCauses) {
				t.Fatalf("retx_packets %s, by cause %s", m["retx_packets"], m["retx_packets_by_cause"])
			}
			var sum int64
			for _, n := range byCause {
				sum += n
			}
			if sum != total {
				t.Errorf("retx_packets %d, by cause sums to %d", total, sum)
			}
		})
	}
}

// objectKeys returns a JSON object's keys in order.
func objectKeys(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", b)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// jsonKeys are a struct type's JSON keys in field order (none of its fields are embedded).
func jsonKeys(rt reflect.Type) []string {
	var out []string
	for i := range rt.NumField() {
		tag := rt.Field(i).Tag.Get("json")
		if name, _, _ := strings.Cut(tag, ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// TestCheck: the plugin's check rejects an ACK timeout or probe interval below the fabric's
// base RTT with the runner's messages, accepts the defaults, and skips the flow level.
func TestCheck(t *testing.T) {
	p, _ := transport.Lookup(mrcnic.Kind)
	for _, hosts := range []int{2, 16, 64} {
		s, net, l, q := fabricFor(t, clos(hosts, 2), 1, mrc.Config{})
		_ = s
		// base RTT of the default packet sizes on these fabrics
		d := mrc.Config{}.WithDefaults()
		rtt := l.Params().RoundTrip(l.Sizing().MaxSwitchHops, d.WireBytes(d.PayloadBytes), d.AckBytes)
		env := transport.CheckEnv{Topology: l, Net: net, Queues: q}
		least := 1 // the smallest exponent covering the base RTT
		for mrc.AckTimeoutUnit<<uint(least) < rtt {
			least++
		}
		type tcase struct {
			name string
			cfg  mrc.Config
			want string // "" accepted
		}
		cases := []tcase{
			{"defaults", mrc.Config{}, ""},
			{"probe 1us", mrc.Config{EV: mrc.EVConfig{ProbeInterval: sim.Microsecond}}, fmt.Sprintf("transport.mrc.ev.probe_interval: %v is shorter than the fabric's base RTT %v: an unanswered probe counts as lost when the next is due, so every probe would be lost; use at least %v (default %v)", sim.Microsecond, rtt, rtt, mrc.DefaultEVProbeInterval)},
			{"probe below rtt", mrc.Config{EV: mrc.EVConfig{ProbeInterval: rtt - 1}}, "transport.mrc.ev.probe_interval: "},
			{"probe at rtt", mrc.Config{EV: mrc.EVConfig{ProbeInterval: rtt}}, ""},
		}
		for exp := 1; exp <= least+2; exp++ {
			tc := tcase{fmt.Sprintf("exp %d", exp), mrc.Config{AckTimeoutExp: exp}, ""}
			if exp < least {
				tc.want = fmt.Sprintf("transport.mrc.ack_timeout_exp: %d gives an ACK timeout of %v, shorter than the fabric's base RTT %v: every packet would time out before its SACK could return; want at least %d, or 0 (automatic: the smallest covering 4 base RTTs)", exp, mrc.AckTimeoutUnit<<uint(exp), rtt, least)
			}
			cases = append(cases, tc)
		}
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%dhosts-%s", hosts, tc.name), func(t *testing.T) {
				cfg := tc.cfg
				warns, err := p.Check(&cfg, env)
				if len(warns) != 0 {
					t.Errorf("warnings %v", warns)
				}
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("rejected: %v", err)
				case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
					t.Errorf("got %v\nwant %s", err, tc.want)
				}
				fluid := env
				fluid.Net = nil
				if _, err := p.Check(&cfg, fluid); err != nil {
					t.Errorf("flow level checked: %v", err)
				}
			})
		}
	}
}

// TestLink: a collective's closed form sees half the base RTT and the payload share of a
// full packet, and the rate the runner derives from the share is the one it computed before
// (nic rate x payload / wire), for packet sizes and NIC rates across their range.
func TestLink(t *testing.T) {
	for _, planes := range []int{1, 2, 4, 8} {
		for _, pay := range []int{256, 1024, 2048, 4096, 8192, 9000} {
			for _, hdr := range []int{0, 64, 134} {
				cfg := mrc.Config{PayloadBytes: pay, HeaderBytes: hdr}
				_, ep := newEndpoint(t, 4, planes, 1, cfg)
				lat, share := ep.Link()
				c := cfg.WithDefaults()
				if rtt := ep.Run().(*mrcnic.Run).BaseRTT(); lat != rtt/2 || rtt <= 0 {
					t.Errorf("latency %v, base RTT %v", lat, rtt)
				}
				if want := float64(c.PayloadBytes) / float64(c.WireBytes(c.PayloadBytes)); share != want {
					t.Errorf("share %v, want %v", share, want)
				}
				for _, host := range []sim.Rate{10 * sim.Gbps, 25 * sim.Gbps, 100 * sim.Gbps, 200 * sim.Gbps, 400 * sim.Gbps, 800 * sim.Gbps} {
					nicRate := host * sim.Rate(planes)
					old := sim.Rate(float64(nicRate) * float64(c.PayloadBytes) / float64(c.WireBytes(c.PayloadBytes)))
					if got := sim.Rate(float64(nicRate) * share); got != old {
						t.Errorf("%d planes x %v, %d+%d B: rate from the share %d, the runner's %d", planes, host, pay, hdr, got, old)
					}
				}
			}
		}
	}
}

// TestNewQPDoesNotStarveOld: a QP opened while another QP of the same NIC is under way shares
// the NIC with it (onNICReady, EVSet.Lag) instead of taking it until it has sent as many
// laps of its EV rotation: host 0 sends 2 MiB to host 1 from 0 and 1 MiB to host 2 from
// 50 us on one 100G plane. Shared fairly, the 1 MiB message runs at half the line from
// 50 us and is placed about 2 x its wire time later; with the QP of fewer laps served first
// (the old rule) it took the whole port for about 50 us and was placed at 174.6 us.
func TestNewQPDoesNotStarveOld(t *testing.T) {
	s, ep := newEndpoint(t, 4, 1, 1, mrc.Config{})
	done := map[uint64]sim.Time{}
	ep.SetHooks(transport.Hooks{
		OnDone:    func(now sim.Time) { s.Pause() },
		Delivered: func(now sim.Time, tok uint64) { done[tok] = now },
	})
	post := func(at sim.Time, dst int, bytes int64, tok uint64) {
		k := s.Register(fmt.Sprintf("test.post%d", tok), func(now sim.Time, _ int32, _ uint64) {
			if err := ep.Send(now, collective.Message{Src: 0, Dst: dst, Bytes: bytes, Token: tok}); err != nil {
				t.Fatal(err)
			}
		})
		s.At(at, k, 0, 0)
	}
	const start = 50 * sim.Microsecond
	post(0, 1, 2<<20, 1)
	post(start, 2, 1<<20, 2)
	if err := s.Run(10 * sim.Millisecond); err != nil {
		t.Fatal(err)
	}
	if len(done) != 2 {
		t.Fatalf("%d of 2 messages placed: %s", len(done), ep.Stuck(2))
	}
	cfg := mrc.Config{}.WithDefaults()
	wire := int64(1<<20) / int64(cfg.PayloadBytes) * int64(cfg.WireBytes(cfg.PayloadBytes))
	alone := (100 * sim.Gbps).TxTime(wire) // the 1 MiB message alone on the port
	t.Logf("2 MiB placed at %v, 1 MiB (posted at %v) at %v; 1 MiB alone takes %v", done[1], start, done[2], alone)
	if min := start + alone*9/5; done[2] < min {
		t.Errorf("the new QP's 1 MiB was placed at %v; shared fairly with the older QP it takes until at least %v", done[2], min)
	}
	if done[2] > done[1] {
		t.Errorf("the 1 MiB message (%v) finished after the 2 MiB one posted 50 us before it (%v)", done[2], done[1])
	}
}
