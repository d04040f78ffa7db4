package uecnic_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/uec/uecnic"
)

func run(t *testing.T, yaml string) *runner.Result {
	t.Helper()
	sc, err := scenario.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// complete fails t unless every transfer finished with no QP error and the run passed.
func complete(t *testing.T, name string, res *runner.Result) *transport.Summary {
	t.Helper()
	s := res.Summary.Transport
	if s == nil || s.Kind != uecnic.Kind {
		t.Fatalf("%s: transport block %+v, want kind uec", name, s)
	}
	if res.Summary.Failed || s.FlowsCompleted != s.Flows || s.QPErrors != 0 {
		t.Fatalf("%s: failed %v (%s): %d of %d transfers, %d QP errors %v", name, res.Summary.Failed, res.Summary.FailureReason, s.FlowsCompleted, s.Flows, s.QPErrors, s.QPErrorList)
	}
	return s
}

// TestCrossCheckPerm128 reproduces the UEC reference simulator's 128-host permutation of
// 2 MB flows (issue 20; scenario/presets/uec-perm-128.yaml): FCT p50 193.2 us and p99
// 200.6 us within 3%, max 200.9 us within 5%.
func TestCrossCheckPerm128(t *testing.T) {
	sc, err := scenario.Preset("uec-perm-128")
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	s := complete(t, "uec-perm-128", res)
	t.Logf("FCT p50 %.1f p99 %.1f max %.1f us (reference 193.2 / 200.6 / 200.9)", s.FCTP50Us, s.FCTP99Us, s.FCTMaxUs)
	for _, c := range []struct {
		name      string
		got, want float64
		tol       float64
	}{{"p50", s.FCTP50Us, 193.2, 0.03}, {"p99", s.FCTP99Us, 200.6, 0.03}, {"max", s.FCTMaxUs, 200.9, 0.05}} {
		if math.Abs(c.got/c.want-1) > c.tol {
			t.Errorf("FCT %s %.1f us, want within %.0f%% of the reference %.1f us", c.name, c.got, 100*c.tol, c.want)
		}
	}
}

const permYAML = `topology: {clos: {tiers: 2, radix: 8, planes: 1, hosts: 16, host_link: 100G, hop_latency: 1us}}
transport: {kind: uec, uec: {delivery: %s, lb: %s}}
traffic: [{pattern: permutation, bytes: 256KiB}]
run: {seed: 3}
%s`

// TestLossSweep: random loss on every link (0 to 1%) under RUD (REPS and oblivious) and
// ROD: every transfer completes with no QP error, and loss costs retransmissions.
func TestLossSweep(t *testing.T) {
	for _, mode := range [][2]string{{"rud", "reps"}, {"rud", "oblivious"}, {"rod", "single"}} {
		for _, loss := range []float64{0, 0.001, 0.005, 0.01} {
			name := fmt.Sprintf("%s/%s/loss %v", mode[0], mode[1], loss)
			faults := ""
			if loss > 0 {
				faults = fmt.Sprintf("faults:\n  - {at: 0s, link: \"*\", action: loss, loss: %v}\n", loss)
			}
			s := complete(t, name, run(t, fmt.Sprintf(permYAML, mode[0], mode[1], faults)))
			if by := s.RetxPacketsByCause; loss == 0 && by["timeout"]+by["sack_gap"] != 0 {
				t.Errorf("%s: loss-driven retransmissions %v on a lossless run", name, by)
			}
			if loss >= 0.005 && s.RetxPackets == 0 {
				t.Errorf("%s: no retransmission under loss", name)
			}
			t.Logf("%s: JCT %.1f us, retx %d %v", name, s.JCTUs, s.RetxPackets, s.RetxPacketsByCause)
		}
	}
}

// TestIncastFanIn: N -> 1 incasts (N = 8, 64, 255) of 64 KiB complete with no QP error; the
// last hop trims and NACKs, and the JCT is at least N x S / C.
func TestIncastFanIn(t *testing.T) {
	for _, n := range []int{8, 64, 255} {
		senders := make([]string, n)
		for i := range senders {
			senders[i] = fmt.Sprint(i + 1)
		}
		y := fmt.Sprintf(`topology: {clos: {tiers: 2, radix: 32, planes: 1, hosts: 256, host_link: 100G, hop_latency: 1us}}
transport: {kind: uec}
traffic: [{pattern: incast, receiver: 0, bytes: 64KiB, senders: [%s]}]
run: {seed: 1}
`, strings.Join(senders, ", "))
		s := complete(t, fmt.Sprint("incast ", n), run(t, y))
		floor := float64(n) * 65536 * 8 / 100e9 * 1e6
		t.Logf("incast %d: JCT %.1f us (floor %.1f), retx %v", n, s.JCTUs, floor, s.RetxPacketsByCause)
		if s.JCTUs < floor {
			t.Errorf("incast %d: JCT %.1f us below N x S / C = %.1f us", n, s.JCTUs, floor)
		}
	}
}

// TestDeterminism: two runs of one seed give byte-identical summaries; another seed differs.
func TestDeterminism(t *testing.T) {
	y := fmt.Sprintf(permYAML, "rud", "reps", "faults:\n  - {at: 0s, link: \"*\", action: loss, loss: 0.005}\n")
	js := func(y string) string {
		b, err := json.Marshal(run(t, y).Summary)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a, b := js(y), js(y)
	if a != b {
		t.Fatal("two runs of one seed gave different summaries")
	}
	if c := js(strings.Replace(y, "seed: 3", "seed: 4", 1)); c == a {
		t.Fatal("seeds 3 and 4 gave identical summaries")
	}
}

// TestRingAllReduce: a ring all-reduce of 8 ranks over UEC at packet level takes the closed
// form 2(n-1) a + 2(n-1)/n S/B (Thakur et al. 2005 §4.4, as runner/collective_test.go),
// with a the endpoint's one-way latency and B the NIC rate times the payload share, within
// 10%, and completes at flow level too.
func TestRingAllReduce(t *testing.T) {
	const n, S = 8.0, float64(4 << 20)
	y := `topology: {clos: {tiers: 2, radix: 8, planes: 1, hosts: 16, host_link: 100G, hop_latency: 1us}}
transport: {kind: uec}
workload: {collectives: [{op: all_reduce, algorithm: ring, ranks: 8, bytes: 4MiB}]}
`
	res := run(t, y)
	if res.Summary.Failed || len(res.Summary.Collectives) != 1 {
		t.Fatalf("failed %v (%s), %d rows", res.Summary.Failed, res.Summary.FailureReason, len(res.Summary.Collectives))
	}
	lat, share := res.Endpoint.Link()
	a, B := lat.Seconds(), 100e9*share
	want := (2*(n-1)*a + 2*(n-1)/n*S*8/B) * 1e6
	got := res.Summary.Collectives[0].TimeUs
	t.Logf("ring all-reduce 8 x 4 MiB: %.1f us, closed form %.1f us", got, want)
	if math.Abs(got/want-1) > 0.10 {
		t.Errorf("ring all-reduce %.1f us, want within 10%% of the closed form %.1f us", got, want)
	}
	fl := run(t, y+"run: {engine: flow}\n")
	if fl.Summary.Failed || len(fl.Summary.Collectives) != 1 {
		t.Fatalf("flow level: failed %v (%s)", fl.Summary.Failed, fl.Summary.FailureReason)
	}
	t.Logf("flow level: %.1f us", fl.Summary.Collectives[0].TimeUs)
}

// TestBadConfig: each bad value is rejected with an error naming its field.
func TestBadConfig(t *testing.T) {
	for _, c := range []struct{ block, field string }{
		{"{delivery: tcp}", "transport.uec.delivery"},
		{"{lb: ecmp}", "transport.uec.lb"},
		{"{paths: 5000}", "transport.uec.paths"},
		{"{paths: -1}", "transport.uec.paths"},
		{"{reps_buffer: -2}", "transport.uec.reps_buffer"},
		{"{payload_bytes: 10}", "transport.uec.payload_bytes"},
		{"{ack_bytes: 10}", "transport.uec.ack_bytes"},
		{"{max_retries: 99}", "transport.uec.max_retries"},
		{"{window_psns: 100}", "transport.uec.window_psns"},
		{"{rto: -1us}", "transport.uec.rto"},
		{"{cc: dcqcn}", "transport.uec.cc"},
		{"{nscc: {gamma: 2}}", "transport.uec.nscc.gamma"},
		{"{cc: rccc, rccc: {speculative_bdp: -1}}", "transport.uec.rccc.speculative_bdp"},
		{"{lb: freeze}", "transport.uec.lb"},
		{"{ack_every: 65}", "transport.uec.ack_every"},
		{"{ack_delay: -1us}", "transport.uec.ack_delay"},
		{"{reps_freeze: -1us}", "transport.uec.reps_freeze"},
		{"{cc: nscc+rccc, rccc: {rate_factor: 3}}", "transport.uec.rccc.rate_factor"},
		{"{cc: rccc, rccc: {credit_bytes: 10}}", "transport.uec.rccc.credit_bytes"},
	} {
		_, err := scenario.Parse([]byte("topology: {clos: {tiers: 2, radix: 8, planes: 1, hosts: 16, host_link: 100G}}\ntransport: {kind: uec, uec: " + c.block + "}\ntraffic: [{pattern: permutation, bytes: 1KiB}]\n"))
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: err = %v; want one naming %s", c.block, err, c.field)
		}
	}
}

// TestCheckTimers: an RTO or reorder window below the base RTT is rejected before the run.
func TestCheckTimers(t *testing.T) {
	for _, f := range []string{"rto", "reorder_window"} {
		sc, err := scenario.Parse([]byte("topology: {clos: {tiers: 2, radix: 8, planes: 1, hosts: 16, host_link: 100G, hop_latency: 1us}}\ntransport: {kind: uec, uec: {" + f + ": 1us}}\ntraffic: [{pattern: permutation, bytes: 1KiB}]\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := runner.Run(sc); err == nil || !strings.Contains(err.Error(), "transport.uec."+f) {
			t.Errorf("%s 1us: err = %v; want one naming transport.uec.%s", f, err, f)
		}
	}
}

// TestTraining: a training step over UEC runs at packet level and at flow level, and the
// network time is above the ideal step at both.
func TestTraining(t *testing.T) {
	for _, engine := range []string{"packet", "flow"} {
		res := run(t, `topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 16, host_link: 100G}}
transport: {kind: uec}
workload: {training: {model: {name: tiny, layers: 4, hidden: 1024, heads: 8, kv_heads: 8, ffn: 4096, vocab: 32000, seq_len: 1024, global_batch: 16, micro_batch: 1}, gpu: {preset: h100}, plan: {tp: 8, pp: 2}, exact: true}}
run: {engine: `+engine+`, duration: 100ms}
`)
		tr := res.Summary.Training
		if res.Summary.Failed || tr == nil || tr.MeanStepTimeUs <= 0 || tr.MeanStepTimeUs < tr.IdealStepUs {
			t.Fatalf("%s: failed %v (%s), training %+v", engine, res.Summary.Failed, res.Summary.FailureReason, tr)
		}
		t.Logf("%s: step %.1f us (ideal %.1f)", engine, tr.MeanStepTimeUs, tr.IdealStepUs)
	}
}

// TestLinkDown: a T0 uplink failing under a permutation loses the packets hashed onto it;
// both REPS and oblivious spraying finish every transfer with no QP error, resending what
// was lost.
func TestLinkDown(t *testing.T) {
	for _, lb := range []string{"reps", "oblivious"} {
		s := complete(t, lb, run(t, `topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G, hop_latency: 1us}}
transport: {kind: uec, uec: {lb: `+lb+`}}
traffic: [{pattern: permutation, bytes: 4MiB}]
faults:
  - {at: 50us, link: p0.t0-0.up0, action: down}
run: {seed: 1}
`))
		if s.RetxPackets == 0 {
			t.Errorf("%s: no retransmission after a link failure", lb)
		}
		t.Logf("%s: JCT %.1f us, retx %v", lb, s.JCTUs, s.RetxPacketsByCause)
	}
}

// TestLabel: comparison tables tell the congestion controls and ACK modes apart; the
// default lb is reps_nofreeze (ut20 F3).
func TestLabel(t *testing.T) {
	p, ok := transport.Lookup(uecnic.Kind)
	if !ok {
		t.Fatal("uec not registered")
	}
	for _, c := range []struct{ block, want string }{
		{"{}", "uec (rud, reps_nofreeze, 128 EVs)"},
		{"{cc: rccc}", "uec (rud, reps_nofreeze, 128 EVs, rccc)"},
		{"{lb: reps}", "uec (rud, reps, 128 EVs)"},
		{"{cc: nscc+rccc, lb: bitmap, ack_every: 4}", "uec (rud, bitmap, 128 EVs, nscc+rccc, ack every 4)"},
	} {
		sc, err := scenario.Parse([]byte("topology: {clos: {tiers: 2, radix: 8, planes: 1, hosts: 16, host_link: 100G}}\ntransport: {kind: uec, uec: " + c.block + "}\ntraffic: [{pattern: permutation, bytes: 1KiB}]\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Label(sc.Transport.Block()); got != c.want {
			t.Errorf("%s: label %q, want %q", c.block, got, c.want)
		}
	}
}
