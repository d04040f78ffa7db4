package uecnic_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/lockstepsim/lockstep/transport/uec/uecnic"
)

// ringYAML is a ring all-reduce of 8 ranks x 4 MiB on a 2-tier Clos of 16 hosts (100G,
// 1 us per link) over UEC with the block %s, engine %s, and the faults %s.
const ringYAML = `topology: {clos: {tiers: 2, radix: 8, planes: 1, hosts: 16, host_link: 100G, hop_latency: 1us}}
transport: {kind: uec, uec: %s}
workload: {collectives: [{op: all_reduce, algorithm: ring, ranks: 8, bytes: 4MiB}]}
run: {engine: %s, seed: 1}
%s`

// ringClosedForm is the ring all-reduce's closed form 2(n-1) a + 2(n-1)/n S/B (Thakur et
// al. 2005 §4.4) for the run's endpoint (a its one-way latency, B the NIC rate times the
// payload share), us.
func ringClosedForm(lat float64, share float64) float64 {
	const n, S = 8.0, float64(4 << 20)
	return (2*(n-1)*lat + 2*(n-1)/n*S*8/(100e9*share)) * 1e6
}

// TestCollectivesCC: the ring all-reduce over UEC under each congestion control (nscc, rccc,
// nscc+rccc, rccc with a one-BDP speculative window) and each load balancer at packet level,
// and at flow level, lands within 10% of the closed form (RCCC's quarter-BDP speculative
// window costs most of a round trip per ring step: the first credit comes back one RTT after
// the message starts).
func TestCollectivesCC(t *testing.T) {
	var want float64
	for _, c := range []struct{ block, engine string }{
		{"{cc: nscc}", "packet"}, {"{cc: rccc}", "packet"}, {"{cc: nscc+rccc}", "packet"},
		{"{cc: rccc, rccc: {speculative_bdp: 1}}", "packet"},
		{"{lb: bitmap}", "packet"}, {"{lb: oblivious}", "packet"}, {"{delivery: rod}", "packet"},
		{"{cc: nscc}", "flow"}, {"{cc: rccc}", "flow"},
	} {
		name := c.block + " " + c.engine
		res := run(t, fmt.Sprintf(ringYAML, c.block, c.engine, ""))
		if res.Summary.Failed || len(res.Summary.Collectives) != 1 {
			t.Fatalf("%s: failed %v (%s)", name, res.Summary.Failed, res.Summary.FailureReason)
		}
		if res.Endpoint != nil { // the flow engine has no packet endpoint: the packet runs' form
			lat, share := res.Endpoint.Link()
			want = ringClosedForm(lat.Seconds(), share)
		}
		got := res.Summary.Collectives[0].TimeUs
		t.Logf("%s: %.1f us, closed form %.1f us (%+.1f%%)", name, got, want, 100*(got/want-1))
		if math.Abs(got/want-1) > 0.10 {
			t.Errorf("%s: %.1f us, want within 10%% of the closed form %.1f us", name, got, want)
		}
	}
}

// TestCollectiveLinkDown: a T0-T1 link failing at 200 us, inside the ring all-reduce (about
// 650 us), at packet and flow level: every load balancer and congestion control finishes the
// collective with no QP error, no sooner than without the fault; REPS (with freezing) and the
// bitmap variant within 15% of the fault-free time (only the failed link's quarter of T0-0's
// uplinks is lost, and they steer off it), oblivious spraying slower than REPS.
func TestCollectiveLinkDown(t *testing.T) {
	const fault = "faults:\n  - {at: 200us, link: p0.t0-0.up0, action: down}\n"
	times := map[string]float64{}
	for _, c := range []struct{ block, engine string }{
		{"{lb: reps}", "packet"}, {"{lb: bitmap}", "packet"}, {"{lb: oblivious}", "packet"},
		{"{lb: reps_nofreeze}", "packet"}, {"{cc: nscc+rccc}", "packet"}, {"{lb: reps}", "flow"}, {"{lb: oblivious}", "flow"},
	} {
		name := c.block + " " + c.engine
		var tt [2]float64
		for i, f := range []string{"", fault} {
			res := run(t, fmt.Sprintf(ringYAML, c.block, c.engine, f))
			if res.Summary.Failed || len(res.Summary.Collectives) != 1 {
				t.Fatalf("%s (fault %v): failed %v (%s)", name, i == 1, res.Summary.Failed, res.Summary.FailureReason)
			}
			if tr := res.Summary.Transport; tr != nil && tr.QPErrors != 0 {
				t.Fatalf("%s: %d QP errors %v", name, tr.QPErrors, tr.QPErrorList)
			}
			tt[i] = res.Summary.Collectives[0].TimeUs
		}
		times[name] = tt[1]
		t.Logf("%s: %.1f us without the fault, %.1f us with it (x%.3f)", name, tt[0], tt[1], tt[1]/tt[0])
		if tt[1] < tt[0]*0.999 {
			t.Errorf("%s: %.1f us with the link down, faster than %.1f us without", name, tt[1], tt[0])
		}
		if (c.block == "{lb: reps}" || c.block == "{lb: bitmap}") && c.engine == "packet" && tt[1] > 1.15*tt[0] {
			t.Errorf("%s: %.1f us with the link down, want within 15%% of %.1f us", name, tt[1], tt[0])
		}
	}
	if r, o := times["{lb: reps} packet"], times["{lb: oblivious} packet"]; o <= r {
		t.Errorf("oblivious %.1f us after the failure, REPS %.1f us: want REPS faster", o, r)
	}
}

// trainYAML is a small training step (tiny model, TP 8 x PP 2 on 16 H100s, 2-tier Clos, 100G)
// over UEC with the block %s at engine %s.
const trainYAML = `topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 16, host_link: 100G}}
transport: {kind: uec, uec: %s}
workload: {training: {model: {name: tiny, layers: 4, hidden: 1024, heads: 8, kv_heads: 8, ffn: 4096, vocab: 32000, seq_len: 1024, global_batch: 16, micro_batch: 1}, gpu: {preset: h100}, plan: {tp: 8, pp: 2}, exact: true}}
run: {engine: %s, duration: 100ms}
`

// TestTrainingEnginesCC: a training step over UEC (nscc, rccc, nscc+rccc) at packet and at
// flow level: both above the ideal step, and the two engines within 3% of each other (the
// flow engine models UEC's spraying and retransmission, not RCCC's credit, so the packet
// engine is the reference for rccc).
func TestTrainingEnginesCC(t *testing.T) {
	for _, block := range []string{"{cc: nscc}", "{cc: rccc}", "{cc: nscc+rccc}"} {
		var step [2]float64
		for i, engine := range []string{"packet", "flow"} {
			res := run(t, fmt.Sprintf(trainYAML, block, engine))
			tr := res.Summary.Training
			if res.Summary.Failed || tr == nil || tr.MeanStepTimeUs <= 0 || tr.MeanStepTimeUs < tr.IdealStepUs {
				t.Fatalf("%s %s: failed %v (%s), training %+v", block, engine, res.Summary.Failed, res.Summary.FailureReason, tr)
			}
			step[i] = tr.MeanStepTimeUs
			t.Logf("%s %s: step %.1f us (ideal %.1f)", block, engine, tr.MeanStepTimeUs, tr.IdealStepUs)
		}
		if math.Abs(step[0]/step[1]-1) > 0.03 {
			t.Errorf("%s: packet step %.1f us, flow step %.1f us: want within 3%%", block, step[0], step[1])
		}
	}
}

// TestAckEvery: ack_every 4 over a lossy permutation (0.5% on every link) completes every
// transfer with no QP error and at most about a quarter of the SACKs of per-packet ACKs.
func TestAckEvery(t *testing.T) {
	var acks [2]int64
	for i, blk := range []string{"{ack_every: 1}", "{ack_every: 4}"} {
		y := fmt.Sprintf("topology: {clos: {tiers: 2, radix: 8, planes: 1, hosts: 16, host_link: 100G, hop_latency: 1us}}\ntransport: {kind: uec, uec: %s}\ntraffic: [{pattern: permutation, bytes: 256KiB}]\nfaults:\n  - {at: 0s, link: \"*\", action: loss, loss: 0.005}\nrun: {seed: 3}\n", blk)
		s := complete(t, blk, run(t, y))
		d := s.Detail.(*uecnic.Detail)
		acks[i] = d.ACKsSent
		t.Logf("%s: JCT %.1f us, %d SACKs for %d data packets, retx %d", blk, s.JCTUs, d.ACKsSent, s.DataPackets, s.RetxPackets)
	}
	if acks[1]*10 > acks[0]*3 {
		t.Errorf("ack_every 4: %d SACKs, want at most 30%% of per-packet ACKs' %d", acks[1], acks[0])
	}
}
