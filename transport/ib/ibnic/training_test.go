package ibnic_test

import (
	"fmt"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/ib"
)

// ibTrainYAML is a small data-parallel training job over InfiniBand [issue 19: "Training on
// IB at flow level and packet level"]: a 2-layer model on 16 H100s, one GPU per NVLink
// domain (scale_up_gpus 1) so the 16-way gradient all-reduce crosses the fabric and, with
// overlap off, is most of the step; a 2-tier Clos of radix 8 (4 T0s of 4 hosts, 400G, 500 ns
// hops). Fields: adaptive routing on, the transport.ib block's extra fields, the engine, the
// faults section.
const ibTrainYAML = `name: ib-train
topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 400G, hop_latency: 500ns}}
transport: {kind: ib%s}
fabric: {adaptive_routing: {enabled: %v}}
workload:
  training:
    model: {name: small, layers: 2, hidden: 512, heads: 8, kv_heads: 8, ffn: 2048, vocab: 8000, seq_len: 512, global_batch: 16, micro_batch: 1}
    gpu: {preset: h100, scale_up_gpus: 1}
    plan: {tp: 1, pp: 1}
    overlap: false
    steps: 1
    sim_steps: 1
run: {engine: %s}
%s`

// TestTrainingOverIB: the job finishes at the flow and the packet level, with and without
// fabric.adaptive_routing, with no drop and no QP error, and the two engines' step times
// agree within 10% (measured: packet 1611.0 us, flow 1640.7 us, 0.982x, both routings; the
// flow engine has no adaptive routing, so its step is the same either way; at the packet
// level the ring all-reduce has no contention for it to steer around, and its step is too).
func TestTrainingOverIB(t *testing.T) {
	step := map[string]float64{}
	for _, ar := range []bool{false, true} {
		for _, engine := range []string{"flow", "packet"} {
			name := fmt.Sprintf("%s ar=%v", engine, ar)
			res := run(t, fmt.Sprintf(ibTrainYAML, "", ar, engine, ""))
			s := res.Summary
			if s.Failed || !s.Complete || s.Training == nil || s.Training.StepTimeUs <= 0 {
				t.Fatalf("%s: failed %v (%s), complete %v, training %+v", name, s.Failed, s.FailureReason, s.Complete, s.Training)
			}
			var qpErrors int64 // the flow engine simulates no QPs: it has no transport block
			if s.Transport != nil {
				qpErrors = int64(s.Transport.QPErrors)
			}
			if s.DroppedPackets != 0 || qpErrors != 0 || engine == "packet" && s.Transport == nil {
				t.Errorf("%s: %d drops, %d QP errors (transport block %v); want none", name, s.DroppedPackets, qpErrors, s.Transport != nil)
			}
			if engine == "packet" && ar && (s.Adaptive == nil || s.Adaptive.AdaptivelyRerouted == 0) {
				t.Errorf("%s: adaptive_routing block %+v; want packets routed adaptively", name, s.Adaptive)
			}
			step[name] = s.Training.StepTimeUs
			t.Logf("%s: step %.1f us (DP exposed %.1f us)", name, s.Training.StepTimeUs, s.Training.DPExposedUs)
		}
		p, f := step[fmt.Sprintf("packet ar=%v", ar)], step[fmt.Sprintf("flow ar=%v", ar)]
		t.Logf("ar=%v: packet / flow %.3f", ar, p/f)
		if p > 1.1*f || p < f/1.1 {
			t.Errorf("ar=%v: packet step %.1f us, flow %.1f us; want within 10%%", ar, p, f)
		}
	}
}

// TestTrainingIBLinkDownAdaptive: a T0-T1 link (p0.t0-0.up0) fails 800 us into the step, in
// the gradient all-reduce, and stays down; at the packet level with adaptive routing the job
// recovers without a restart or a QP error: the step is slower than the clean one but
// finishes, and the only drops are the failed link's (on the wire and the far T1's dead ends
// before its notification). What it costs is InfiniBand's local ACK timeout: the packets lost
// at the failure were the tail of their messages, no later packet draws a sequence-error NAK,
// so they wait for the timeout (4.096 us x 2^timeout, 1.07 s at NCCL's default 18; measured:
// step 1075.3 ms for a 1.61 ms clean one, 22 drops, 2 timeouts). With transport.ib.timeout 12
// (16.8 ms) the same failure costs one 16.8 ms timeout instead (measured: step 18.36 ms).
func TestTrainingIBLinkDownAdaptive(t *testing.T) {
	const fault = "faults: [{at: 800us, link: p0.t0-0.up0, action: down}]\n"
	for _, tc := range []struct {
		name string
		ib   string
		exp  int
	}{{"default timeout", "", ib.DefaultTimeoutExponent}, {"timeout 12", ", ib: {timeout: 12}", 12}} {
		clean := run(t, fmt.Sprintf(ibTrainYAML, tc.ib, true, "packet", "")).Summary.Training.StepTimeUs
		res := run(t, fmt.Sprintf(ibTrainYAML, tc.ib, true, "packet", fault))
		s := res.Summary
		rto := float64(ib.Config{TimeoutExponent: &tc.exp}.RTO()) / float64(sim.Microsecond)
		tr := s.Transport
		t.Logf("%s: step %.1f us (clean %.1f, RTO %.1f us), drops %d (%v), retx %d, timeouts %d, QP errors %d",
			tc.name, s.Training.StepTimeUs, clean, rto, s.DroppedPackets, s.Drops, tr.RetxPackets, tr.Timeouts, tr.QPErrors)
		if s.Failed || !s.Complete || s.TrainingFaults == nil || len(s.TrainingFaults.Restarts) != 0 || tr.QPErrors != 0 {
			t.Fatalf("%s: failed %v (%s), complete %v, QP errors %d, faults %+v; want the step to recover", tc.name, s.Failed, s.FailureReason, s.Complete, tr.QPErrors, s.TrainingFaults)
		}
		if st := s.Training.StepTimeUs; st <= clean || st > clean+2*rto+clean {
			t.Errorf("%s: step %.1f us; want slower than the clean %.1f us, by at most two local ACK timeouts (%.1f us each)", tc.name, st, clean, rto)
		}
		if d := s.DroppedPackets; d == 0 || res.Net.C.Dropped[fabric.DropLinkDown] != d {
			t.Errorf("%s: drops %d (%v); want some, all at the failed link", tc.name, d, s.Drops)
		}
	}
}
