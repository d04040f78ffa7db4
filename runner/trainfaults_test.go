package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/training"
)

// tfYAML is a small training job for fault tests: by default a 4-layer model (TP 8 inside
// each 8-GPU NVLink domain, DP over the fabric, overlap off so the gradient all-reduce is
// exposed) on a 2-tier Clos of 8 planes x 100G. Fields: radix, hosts, transport block,
// reconvergence, model, GPU extras, plan, steps, sim_steps, engine, faults.
const tfYAML = `
topology: {clos: {tiers: 2, planes: 8, radix: %d, hosts: %d, host_link: 100G}}
transport: %s
fabric: {reconvergence: %s}
workload:
  training:
    model: %s
    gpu: {preset: h100%s}
    plan: %s
    overlap: false
    steps: %d
    sim_steps: %d
run: {engine: %s}
%s`

type tfCase struct {
	radix, hosts int
	transport    string
	reconv       string
	steps        int
	engine       string
	faults       string
	model, plan  string // defaults: tinyModel, {tp: 8, pp: 1}
	gpu          string // extra GPU fields, e.g. ", scale_up_gpus: 1"
}

const tinyModel = "{name: tiny, layers: 4, hidden: 1024, heads: 8, kv_heads: 8, ffn: 4096, vocab: 32000, seq_len: 1024, global_batch: 16, micro_batch: 1}"

func (c tfCase) yaml() string {
	if c.reconv == "" {
		c.reconv = "1s"
	}
	if c.engine == "" {
		c.engine = "flow"
	}
	if c.steps == 0 {
		c.steps = 1
	}
	if c.model == "" {
		c.model = tinyModel
	}
	if c.plan == "" {
		c.plan = "{tp: 8, pp: 1}"
	}
	f := ""
	if c.faults != "" {
		f = "faults:\n" + c.faults
	}
	return fmt.Sprintf(tfYAML, c.radix, c.hosts, c.transport, c.reconv, c.model, c.gpu, c.plan, c.steps, c.steps, c.engine, f)
}

func (c tfCase) run(t *testing.T) *Result {
	t.Helper()
	return mustRun(t, c.yaml())
}

// stepTimes returns every simulated step's time in microseconds (training_faults.steps, or
// the one step of a run without faults).
func stepTimes(s *Summary) []float64 {
	if s.TrainingFaults == nil {
		return []float64{s.Training.StepTimeUs}
	}
	var out []float64
	for _, st := range s.TrainingFaults.Steps {
		out = append(out, st.StepTimeUs)
	}
	return out
}

// Acceptance (issue 17, 3a): one NIC-T0 link of one host degraded under MRC on an 8-plane
// fabric raises the step by what that host's collectives explain: its NIC runs at 7/8 + f/8
// of its rate (MRC moves load off the slow plane), so its gradient all-reduce (the exposed
// DP time, every other part of the step unchanged) takes 1 / (7/8 + f/8) as long. Under RoCE
// with one QP per plane the transfer's stripe on the slow plane runs at f of a plane, so the
// all-reduce takes 1/f as long: worse. The slowest link of the step names the degraded link.
// 16 hosts on one T0 per plane (radix 32): no ECMP collisions to confound RoCE. Swept over f.
func TestTrainingDegradedNICLink(t *testing.T) {
	for _, kind := range []string{"{kind: mrc}", "{kind: roce}"} {
		base := tfCase{radix: 32, hosts: 16, transport: kind}.run(t).Summary.Training
		dp := base.DPExposedUs
		for _, f := range []float64{0.25, 0.5, 0.75} {
			c := tfCase{radix: 32, hosts: 16, transport: kind, faults: fmt.Sprintf("  - {at: 0s, link: h0.p0, action: degrade, factor: %v}\n", f)}
			s := c.run(t).Summary
			rise := s.Training.StepTimeUs - base.StepTimeUs
			share := 7.0/8 + f/8
			want := dp * (1/share - 1)
			if strings.Contains(kind, "roce") {
				want = dp * (1/f - 1)
			}
			avg := dp * (1/(1-(1-f)/(8*16)) - 1) // the same loss spread over every link
			link := s.TrainingFaults.Steps[0].SlowestLink
			t.Logf("%s f=%.2f: step %.1f -> %.1f us, rise %.1f us; expected %.1f from the host's rate (%.1f if every link lost a share); slowest link %q",
				kind, f, base.StepTimeUs, s.Training.StepTimeUs, rise, want, avg, link)
			if math.Abs(rise-want) > 0.05*want+1 {
				t.Errorf("%s f=%.2f: step rose %.1f us; want %.1f (within 5%%)", kind, f, rise, want)
			}
			if rise < 3*avg {
				t.Errorf("%s f=%.2f: rise %.1f us no more than the average link's %.1f", kind, f, rise, avg)
			}
			if !strings.Contains(link, "h0.p0") && !strings.Contains(link, "-> h0") {
				t.Errorf("%s f=%.2f: slowest link %q does not name h0.p0", kind, f, link)
			}
		}
	}
}

// Acceptance (issue 17, 3b): a T1 switch failing during step k of several. Under MRC every
// step after it is within 2% of the steps before (spraying moves onto the other 63 of a T0's
// 64 uplinks). Under RoCE the QPs hashed onto it stall: with the default RTO (4.3 s, longer
// than reconvergence) they resume at their next retransmission after routing reconverged,
// so step k is slower by about an RTO; with a 1 ms RTO (budget 8 ms) and 10 ms to
// reconverge they give up, the job restarts (charged) and step k shows it; later steps are
// back to the steps before. Swept over the step that fails.
func TestTrainingT1Failure(t *testing.T) {
	const steps = 6
	for _, k := range []int{1, 3} {
		for _, tc := range []struct{ name, transport string }{
			{"mrc", "{kind: mrc}"},
			{"roce", "{kind: roce}"},
			{"roce-1ms", "{kind: roce, roce: {rto: 1ms}}"},
		} {
			base := tfCase{radix: 16, hosts: 32, transport: tc.transport, reconv: "10ms", steps: steps}.run(t).Summary
			step := base.Training.StepTimeUs
			at := (float64(k) + 0.5) * step // the middle of step k
			c := tfCase{radix: 16, hosts: 32, transport: tc.transport, reconv: "10ms", steps: steps,
				faults: fmt.Sprintf("  - {at: %.0fus, switch: p0.t1-0, action: down}\n", at)}
			s := c.run(t).Summary
			times := stepTimes(&s)
			tf := s.TrainingFaults
			t.Logf("%s, failure in step %d: steps %v us (before: %.1f); restarts %d, charged %.0f s; step %d: %s | %s",
				tc.name, k, roundAll(times), step, len(tf.Restarts), tf.RestartsChargedS, k, tf.Steps[k].Events, tf.Steps[k].SlowestLink)
			if !strings.Contains(tf.Steps[k].Events, "down p0.t1-0") {
				t.Errorf("%s: step %d events %q do not show the failure", tc.name, k, tf.Steps[k].Events)
			}
			for i, x := range times {
				if i < k && math.Abs(x-step) > 1e-6*step {
					t.Errorf("%s: step %d before the failure took %.1f us, not %.1f", tc.name, i, x, step)
				}
			}
			switch tc.name {
			case "mrc":
				for i := k; i < steps; i++ {
					if d := times[i]/step - 1; math.Abs(d) > 0.02 {
						t.Errorf("mrc: step %d %.1f us, %.1f%% off the %.1f before", i, times[i], 100*d, step)
					}
				}
				if len(tf.Restarts) > 0 {
					t.Errorf("mrc: %d restarts; want none", len(tf.Restarts))
				}
			case "roce":
				if times[k] < step+4.2e6 || len(tf.Restarts) > 0 {
					t.Errorf("roce: step %d %.1f us, %d restarts; want about an RTO (4.29 s) slower, no restart", k, times[k], len(tf.Restarts))
				}
			case "roce-1ms":
				if len(tf.Restarts) != 1 || tf.Restarts[0].Step != k || !strings.Contains(tf.Steps[k].Events, "restart") {
					t.Fatalf("roce-1ms: restarts %+v; want one, in step %d, shown in its events", tf.Restarts, k)
				}
				r := tf.Restarts[0]
				if r.RestartS != 600 || r.LostWorkS <= 0 || r.ChargedS != r.RestartS+r.LostWorkS ||
					math.Abs(tf.RunTimeWithRestartsS-(s.Training.RunTimeS+r.ChargedS)) > 1e-6 {
					t.Errorf("roce-1ms: restart %+v, run time %.3f -> %.3f s; want 600 s restart + lost work charged", r, s.Training.RunTimeS, tf.RunTimeWithRestartsS)
				}
				if times[k] <= step || s.Failed {
					t.Errorf("roce-1ms: step %d %.1f us (failed %v); want slower, and the restart a reported event, not a failure", k, times[k], s.Failed)
				}
			}
			if tc.name != "mrc" {
				// Routing has reconverged (10 ms) a step or two later: back to normal.
				for i := k + 1; i < steps; i++ {
					if times[i-1] > 0 && i >= k+2 && math.Abs(times[i]/step-1) > 0.05 {
						t.Errorf("%s: step %d %.1f us after reconvergence, vs %.1f before", tc.name, i, times[i], step)
					}
				}
			}
		}
	}
}

func roundAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Round(x*10) / 10
	}
	return out
}

// Acceptance (issue 17, 3c): the flow and packet engines agree within 10% on the step of a
// small job, with and without a degraded NIC link. Two jobs on 16 GPUs: "dp" is data
// parallel only (no NVLink domain), so the 28 MB gradient all-reduce over the fabric is most
// of the step; "tp8" keeps TP in 8-GPU domains and all-reduces over 2 replicas. RoCE runs
// the tp8 job: on the dp job its packet level is 1.78x the flow level without any fault
// (one plane of 800G: 1.00x), a gap of RoCE striping over 8 planes that faults do not touch.
func TestTrainingFaultsFlowVsPacket(t *testing.T) {
	const small = "{name: small, layers: 2, hidden: 512, heads: 8, kv_heads: 8, ffn: 2048, vocab: 8000, seq_len: 512, global_batch: 16, micro_batch: 1}"
	for _, tc := range []struct {
		name, transport string
		job             tfCase
	}{
		{"mrc dp", "{kind: mrc}", tfCase{model: small, plan: "{tp: 1, pp: 1}", gpu: ", scale_up_gpus: 1"}},
		{"mrc tp8", "{kind: mrc}", tfCase{}},
		{"roce tp8", "{kind: roce}", tfCase{}},
	} {
		for _, f := range []string{"", "  - {at: 0s, link: h0.p0, action: degrade, factor: 0.25}\n"} {
			c := tc.job
			c.radix, c.hosts, c.transport, c.faults = 32, 16, tc.transport, f
			c2 := c
			c2.engine = "packet"
			fl, pk := c.run(t).Summary, c2.run(t).Summary
			a, b := pk.Training.StepTimeUs, fl.Training.StepTimeUs
			t.Logf("%s degraded=%v: step %.1f us packet, %.1f us flow (%.3fx); dp exposed %.1f vs %.1f us", tc.name, f != "", a, b, a/b, pk.Training.DPExposedUs, fl.Training.DPExposedUs)
			if a > 1.1*b || a < b/1.1 {
				t.Errorf("%s degraded=%v: packet %.1f us vs flow %.1f us; want within 10%%", tc.name, f != "", a, b)
			}
			if f != "" && (pk.TrainingFaults == nil || !strings.Contains(pk.TrainingFaults.Steps[0].SlowestLink, "h0.p0")) {
				t.Errorf("%s packet: slowest link %+v; want h0.p0 named", tc.name, pk.TrainingFaults)
			}
		}
	}
}

// No fault, no cost: a fault scheduled after the job has ended changes nothing the run
// computed (byte-identical training figures: fault events take their own tiebreak keys), and
// a run without faults has no fault report nor the extra steps.csv columns.
func TestTrainingFaultsNoCost(t *testing.T) {
	for _, kind := range []string{"{kind: mrc}", "{kind: roce}"} {
		base := tfCase{radix: 16, hosts: 32, transport: kind, steps: 2}.run(t)
		late := tfCase{radix: 16, hosts: 32, transport: kind, steps: 2, faults: "  - {at: 900ms, switch: p0.t1-0, action: down}\n"}.run(t)
		a, _ := json.Marshal(base.Summary.Training)
		b, _ := json.Marshal(late.Summary.Training)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: a fault after the end changed the training result:\n%s\n%s", kind, a, b)
		}
		if base.Summary.TrainingFaults != nil || late.Summary.TrainingFaults == nil || late.Summary.TrainingFaults.Events[0].Applied {
			t.Errorf("%s: fault reports %+v / %+v; want none without faults, an unapplied event with the late one", kind, base.Summary.TrainingFaults, late.Summary.TrainingFaults)
		}
		if r := base.Summary.Training.StepRecords; len(r) == 0 || r[0].SlowestLink != "" || r[0].Events != "" {
			t.Errorf("%s: steps.csv records without faults %+v; want the fault columns empty", kind, r)
		}
		// With the late fault, steps.csv's columns come from the fault report, and the
		// report's simulated step intervals are the step records'.
		for k, r := range late.Summary.Training.StepRecords {
			n := late.Summary.TrainingFaults.Steps[k]
			if r.SlowestLink != n.SlowestLink || r.Events != n.Events || math.Abs(r.SimStartUs-n.StartUs) > 1e-3 || math.Abs(r.SimEndUs-n.EndUs) > 1e-3 {
				t.Errorf("%s: step %d record %+v vs note %+v", kind, k, r, n)
			}
		}
	}
}

// Loss at flow level costs each transport its own goodput factor on the lossy link, swept
// over the loss rate: MRC (selective repeat) keeps 1 - p of the link, so host 0's NIC runs
// at (7 + (1 - p)) / 8; RoCE (go-back-N) keeps (1 - p) / (1 + (W - 1) p) of it, W the
// packets a QP has in flight per round trip, and its stripe on that plane holds the transfer
// back. The step rises by the all-reduce's share of it.
func TestTrainingLossPerTransport(t *testing.T) {
	for _, kind := range []string{"mrc", "roce"} {
		base := tfCase{radix: 32, hosts: 16, transport: "{kind: " + kind + "}"}.run(t).Summary.Training
		for _, p := range []float64{0.001, 0.01, 0.05} {
			c := tfCase{radix: 32, hosts: 16, transport: "{kind: " + kind + "}",
				faults: fmt.Sprintf("  - {at: 0s, link: h0.p0, action: loss, loss: %v, direction: both}\n", p)}
			r := c.run(t)
			s := r.Summary.Training
			// W: 100 Gb/s x the 2-hop base RTT of 4 KiB RoCE packets, in packets.
			sc, _ := scenario.Parse([]byte(c.yaml()))
			layout, _ := sc.Topology.Describe()
			rtt := layout.Params().RoundTrip(layout.Sizing().MaxSwitchHops, 4096+82, 82)
			w := math.Ceil(100e9 * rtt.Seconds() / (8 * (4096 + 82)))
			g := lossGoodput(kind == "roce", p, w) // go-back-N under RoCE
			if kind == "roce" {
				if ff := r.Training.Faults; ff == nil {
					t.Fatal("no fault report")
				}
			}
			want := base.DPExposedUs * (8/(7+g) - 1)
			if kind == "roce" {
				want = base.DPExposedUs * (1/g - 1)
			}
			rise := s.StepTimeUs - base.StepTimeUs
			t.Logf("%s loss %.3f: goodput factor %.4f (W %.0f), step %.1f -> %.1f us, rise %.1f (expected %.1f)", kind, p, g, w, base.StepTimeUs, s.StepTimeUs, rise, want)
			if math.Abs(rise-want) > 0.05*want+1 {
				t.Errorf("%s loss %v: rise %.1f us; want %.1f", kind, p, rise, want)
			}
		}
	}
}

// A T1 that stops forwarding (a blackhole: its links stay up) during step 1: MRC retires
// the paths through it and steps on as after a failure; RoCE's ECMP keeps hashing into it
// (no link-state signal), so its QPs wait for their retransmission timer: with the default
// RTO (4.3 s) past the 20 ms blackhole they resume at the first timeout, one RTO after their
// last progress; with a 1 ms RTO they give up (a restart) and resume when the switch
// forwards again; blackholed for good, the job cannot continue (an error naming it).
func TestTrainingBlackhole(t *testing.T) {
	c := tfCase{radix: 16, hosts: 32, reconv: "10ms", steps: 4}
	for _, tc := range []struct {
		name, transport, faults string
		restarts                int
		slowMinUs, slowMaxUs    float64 // step 1's extra time
	}{
		{"mrc", "{kind: mrc}", "  - {at: 6ms, switch: p0.t1-0, action: blackhole, for: 20ms}\n", 0, 0, 0.02},
		{"roce", "{kind: roce}", "  - {at: 6ms, switch: p0.t1-0, action: blackhole, for: 20ms}\n", 0, 4.2e6, 4.4e6},
		{"roce-1ms", "{kind: roce, roce: {rto: 1ms}}", "  - {at: 6ms, switch: p0.t1-0, action: blackhole, for: 20ms}\n", 1, 15e3, 25e3},
	} {
		c.transport, c.faults = tc.transport, ""
		base := c.run(t).Summary.Training.StepTimeUs
		c.faults = tc.faults
		s := c.run(t).Summary
		times := stepTimes(&s)
		extra := times[1] - base
		tf := s.TrainingFaults
		t.Logf("%s: steps %v us (before %.1f): step 1 +%.1f us; %d restarts; %s", tc.name, roundAll(times), base, extra, len(tf.Restarts), tf.Steps[1].Events)
		if len(tf.Restarts) != tc.restarts {
			t.Errorf("%s: %d restarts; want %d", tc.name, len(tf.Restarts), tc.restarts)
		}
		if tc.name == "mrc" {
			if extra > tc.slowMaxUs*base || times[3] > 1.02*base {
				t.Errorf("mrc: step 1 %.1f us, step 3 %.1f us vs %.1f before; want within 2%%", times[1], times[3], base)
			}
			continue
		}
		if extra < tc.slowMinUs || extra > tc.slowMaxUs {
			t.Errorf("%s: step 1 took %.1f us more; want %.0f to %.0f", tc.name, extra, tc.slowMinUs, tc.slowMaxUs)
		}
	}
	c.transport, c.faults = "{kind: roce}", "  - {at: 6ms, switch: p0.t1-0, action: blackhole}\n"
	sc, err := scenario.Parse([]byte(c.yaml()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc)
	if err != nil {
		t.Fatalf("RoCE under a permanent blackhole: %v; want a failed run with outputs", err)
	}
	if s := res.Summary; !s.Failed || !strings.Contains(s.FailureReason, "blackhole p0.t1-0") || !strings.Contains(s.FailureReason, "no link-state signal") || len(s.Training.StepRecords) < 1 {
		t.Errorf("RoCE under a permanent blackhole: failed %v, %q, %d steps; want a failed run naming the blackhole, that RoCE routing does not see it, with the finished steps", s.Failed, s.FailureReason, len(s.Training.StepRecords))
	}
}

// A host's whole NIC (every plane's port) failing: MRC has no path left, so its QPs stall;
// an outage shorter than their retry budget (about 17 ms of ACK timeouts) is waited out, a
// longer one errors them (a restart, charged); a permanent one leaves the job unable to
// continue on that host, an error that says a spare host is needed.
func TestTrainingNICFailure(t *testing.T) {
	c := tfCase{radix: 16, hosts: 32, transport: "{kind: mrc}", steps: 4}
	for _, tc := range []struct {
		forMs    int
		restarts int
	}{{5, 0}, {10, 0}, {50, 1}, {100, 1}} {
		c.faults = fmt.Sprintf("  - {at: 6ms, nic: \"h3.*\", action: down, for: %dms}\n", tc.forMs)
		s := c.run(t).Summary
		tf := s.TrainingFaults
		times := stepTimes(&s)
		t.Logf("NIC down %d ms: steps %v us, %d restarts", tc.forMs, roundAll(times), len(tf.Restarts))
		if len(tf.Restarts) != tc.restarts {
			t.Errorf("NIC down %d ms: %d restarts; want %d", tc.forMs, len(tf.Restarts), tc.restarts)
		}
		for _, r := range tf.Restarts {
			// Lost work is capped by the work done since the job started (item 2 of the
			// issue 17 review: a 7.6 s job was charged 7227 s).
			if r.LostWorkS > r.AtUs/1e6+1e-12 || r.ChargedS != r.RestartS+r.LostWorkS {
				t.Errorf("NIC down %d ms: restart at %.0f us charged %g s lost work; want at most the %g s since the job started", tc.forMs, r.AtUs, r.LostWorkS, r.AtUs/1e6)
			}
		}
		named := false
		for _, st := range tf.Steps {
			named = named || strings.Contains(st.Events, "down h3.* (8 elements)")
		}
		if !named {
			t.Errorf("NIC down %d ms: no step's events name the 8 ports of the entry's glob: %+v", tc.forMs, tf.Steps)
		}
	}
	c.faults = "  - {at: 6ms, nic: \"h3.*\", action: down}\n"
	checkCutOff(t, c, "spare host")
}

// On a torus a link is its neighbours' only minimal path. RoCE reroutes over the shortest
// surviving path once routing reconverges (a detour of 3 hops), after its retransmission
// timer; MRC sprays over minimal paths only (its EVs are the topology's minimal source
// routes), so the pair is cut off and the job cannot continue.
func TestTrainingTorusLinkDown(t *testing.T) {
	const y = `
topology: {torus: {dims: 4x4x4, link_rate: 100G}}
transport: %s
fabric: {reconvergence: 5ms}
workload:
  training:
    model: {name: small, layers: 8, hidden: 2048, heads: 16, kv_heads: 16, ffn: 8192, vocab: 32000, seq_len: 2048, global_batch: 64, micro_batch: 1}
    gpu: {preset: h100, scale_up_gpus: 1}
    plan: {tp: 1, pp: 2}
    steps: 2
    sim_steps: 2
faults: [{at: 30ms, link: "x0y0z0.r.x+", action: down}]
`
	s := mustRun(t, fmt.Sprintf(y, "{kind: roce, roce: {rto: 2ms}}")).Summary
	tf := s.TrainingFaults
	t.Logf("roce: steps %v us; %s | %s", roundAll(stepTimes(&s)), tf.Steps[0].Events, tf.Steps[0].SlowestLink)
	if len(tf.Restarts) != 0 || !strings.Contains(tf.Steps[0].Events, "reconverged") {
		t.Errorf("roce: restarts %+v, events %q; want the detour after reconvergence, no restart", tf.Restarts, tf.Steps[0].Events)
	}
	// MRC's EVs are minimal source routes: the torus neighbours' only one died, so the job
	// stops before its first step: a failed run with outputs, naming the dead link.
	ms := mustRun(t, fmt.Sprintf(y, "{kind: mrc}")).Summary
	if !ms.Failed || !strings.Contains(ms.FailureReason, "x0y0z0.r.x+") {
		t.Errorf("mrc: failed %v, reason %q; want a failed run naming the dead link", ms.Failed, ms.FailureReason)
	}
}

// The same T1 failure at packet level (the fabric's fault schedule, as for traffic): MRC
// fails over (the steps after it within 2% of before, no QP error); RoCE with a 1 ms RTO
// errors its QPs before routing reconverges (10 ms): the job restarts, the packet engine
// stops there (its QPs are dead), and the run fails saying so unless run.allow_qp_errors
// accepts QP errors; either way the restart is reported and charged.
func TestTrainingT1FailurePacket(t *testing.T) {
	c := tfCase{radix: 16, hosts: 32, transport: "{kind: mrc}", reconv: "10ms", steps: 3, engine: "packet, duration: 50ms",
		faults: "  - {at: 4ms, switch: p0.t1-0, action: down}\n"}
	s := c.run(t).Summary
	times := stepTimes(&s)
	t.Logf("mrc packet: steps %v us; step 1: %s | %s", roundAll(times), s.TrainingFaults.Steps[1].Events, s.TrainingFaults.Steps[1].SlowestLink)
	for i := 1; i < len(times); i++ {
		if d := times[i]/times[0] - 1; d > 0.02 || d < -0.02 || s.mrcT().QPErrors > 0 {
			t.Errorf("mrc packet: step %d %.1f us vs %.1f before (%d QP errors); want within 2%%", i, times[i], times[0], s.mrcT().QPErrors)
		}
	}
	c.transport, c.steps = "{kind: roce, roce: {rto: 1ms}}", 2
	c.faults = "  - {at: 6ms, switch: p0.t1-0, action: down}\n"
	sc, err := scenario.Parse([]byte(c.yaml()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	for _, allow := range []bool{false, true} {
		// The outcome with and without run.allow_qp_errors, on the same run.
		s := res.Summary
		s.Failed, s.FailureReason = false, ""
		sc.Run.AllowQPErrors = allow
		markOutcome(sc, &s)
		markTrainingOutcome(sc, &s)
		tf := s.TrainingFaults
		t.Logf("roce packet (allow %v): failed %v (%.120s...); %d steps simulated, restarts %d, charged %.0f s", allow, s.Failed, s.FailureReason, len(tf.Steps), len(tf.Restarts), tf.RestartsChargedS)
		if len(tf.Restarts) != 1 || tf.Restarts[0].Step != 1 || len(tf.Steps) != 1 || tf.RestartsChargedS <= 600 {
			t.Errorf("roce packet: %d steps, restarts %+v; want step 0 done and a charged restart in step 1", len(tf.Steps), tf.Restarts)
		}
		if s.Failed == allow || (!allow && !strings.Contains(s.FailureReason, "does not simulate past a restart")) {
			t.Errorf("roce packet (allow %v): failed %v, reason %q", allow, s.Failed, s.FailureReason)
		}
	}
}

// annotateSteps puts each fault event in the simulated step whose interval holds it (steps
// back to back from 0, [start, end); the last step's end belongs to it), groups an entry's
// events at one instant into one line naming the entry's target as written, and leaves out
// events a run never reached.
func TestAnnotateSteps(t *testing.T) {
	us := sim.Microsecond
	tr := &training.Trace{Steps: []training.StepTrace{{SimTime: 10 * us, Time: 10 * us}, {SimTime: 20 * us, Time: 25 * us}, {SimTime: 30 * us, Time: 30 * us}}}
	ev := func(at sim.Time, entry int, action, name string, applied bool) FaultEvent {
		return FaultEvent{At: at, Entry: entry, Action: action, Cause: action, Target: name, Name: name, applied: applied}
	}
	evs := []FaultEvent{
		ev(0, 0, "degrade", "h0.p0", true),
		ev(10*us, 1, "down", "h3.p0", true), // the boundary: step 1
		ev(10*us, 1, "down", "h3.p1", true),
		ev(29*us, 2, "down", "p0.t1-0", true),
		ev(60*us, 2, "up", "p0.t1-0", true), // the last step's end
		ev(70*us, 3, "down", "h5.p0", false),
	}
	labels := []string{"h0.p0", "h3.*", "p0.t1-0", "h5.p0"}
	notes := annotateSteps(tr, evs, labels, []timedNote{{at: 15 * us, text: "routing reconverged"}}, func(k int) string { return fmt.Sprint("link", k) })
	want := []string{
		"0.000 ms faults[0] degrade h0.p0",
		"0.000 ms faults[1] down h3.* (2 elements); 0.005 ms routing reconverged; 0.019 ms faults[2] down p0.t1-0",
		"0.030 ms faults[2] up p0.t1-0",
	}
	for k, n := range notes {
		if n.Events != want[k] || n.SlowestLink != fmt.Sprint("link", k) || n.StepTimeUs != tr.Steps[k].Time.Micros() {
			t.Errorf("step %d: %+v; want events %q", k, n, want[k])
		}
	}
	if notes[1].StartUs != 10 || notes[1].EndUs != 30 {
		t.Errorf("step 1 spans %.0f-%.0f us; want 10-30", notes[1].StartUs, notes[1].EndUs)
	}
	g := groupFaultEvents(evs, stepSpans(tr), labels)
	if len(g) != 5 || g[4].Applied || g[4].Step != -1 || g[1].Elements != 2 {
		t.Errorf("groups %+v; want 5, the last unapplied (step -1), the second of 2 elements", g)
	}
}

// at_step counts an entry's times from a simulated step's start: the failure lands in that
// step at its offset on both engines, whatever the steps before took (here step 2 of 4, 1 ms
// in); its restore (for) follows from there. Misuse is refused naming the field.
func TestTrainingAtStep(t *testing.T) {
	for _, engine := range []string{"flow", "packet"} {
		c := tfCase{radix: 16, hosts: 32, transport: "{kind: mrc}", steps: 4, engine: engine,
			faults: "  - {at_step: 2, at: 1ms, switch: p0.t1-0, action: down, for: 2ms}\n"}
		s := c.run(t).Summary
		tf := s.TrainingFaults
		t.Logf("%s: step 2 events %q; events %+v", engine, tf.Steps[2].Events, tf.Events)
		if !strings.HasPrefix(tf.Steps[2].Events, "1.000 ms faults[0] down p0.t1-0") || len(tf.Events) != 2 || math.Abs(tf.Events[1].AtUs-tf.Events[0].AtUs-2000) > 1e-6 || !tf.Events[1].Applied {
			t.Errorf("%s: step 2 events %q, events %+v; want the failure 1 ms in and its restore 2 ms later", engine, tf.Steps[2].Events, tf.Events)
		}
		if d := tf.Events[0].AtUs - (tf.Steps[2].StartUs + 1000); d > 1e-6 || d < -1e-6 {
			t.Errorf("%s: failure at %.3f us; want step 2's start %.3f + 1000", engine, tf.Events[0].AtUs, tf.Steps[2].StartUs)
		}
	}
	base := tfCase{radix: 16, hosts: 32, transport: "{kind: mrc}", steps: 4}
	for _, tc := range []struct{ faults, want string }{
		{"  - {at_step: 4, switch: p0.t1-0, action: down}\n", "faults[0].at_step: 4 is not a simulated step"},
		{"  - {at: 2s, switch: p0.t1-0, action: down}\n", "faults[0].at: 2s is not inside the run (0 to 1s); under workload.training run.duration (1s) bounds the fault schedule"},
		{"  - {at_step: -1, switch: p0.t1-0, action: down}\n", "faults[0].at_step"},
		{"  - {at_step: 1, link: \"p0.t0-*.up*\", action: down, random: {per_day: 1000}}\n", "faults[0].at_step: given with random"},
		{"  - {at_step: 1, switch: p0.t1-0, action: down}\n  - {at: 1ms, link: p0.t0-0.up0, action: degrade, factor: 0.5}\n", "faults[0].at_step: acts on link p0.t0-0.up0, which faults[1] names too"},
	} {
		c := base
		c.faults = tc.faults
		if _, err := scenario.Parse([]byte(c.yaml())); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.faults, err, tc.want)
		}
	}
	y := strings.Replace(permutation(2, 2, 8, "ecmp", 0.5, 1, "100us"), "\nrun:", "\nfaults: [{at_step: 1, link: h0.p0, action: down}]\nrun:", 1)
	if _, err := scenario.Parse([]byte(y)); err == nil || !strings.Contains(err.Error(), "needs workload.training") {
		t.Errorf("at_step with traffic: %v; want an error saying it needs workload.training", err)
	}
}

// Issue 17 review, item 1: a RoCE link or T1 failure inside a training step costs the same
// at packet level as at flow level. A failed link on a QP's ACK path (ECMP hashes the two
// directions apart) lost every ACK; the packet engine handed a message on as its receiver
// placed it, so the job went on as if nothing happened. A QP now holds at most
// roceMsgWindow unacknowledged messages (NCCL's slots per connection), so its sender stalls
// until its retransmission timer and the reconverged routes, as at flow level. Each case:
// both engines slow (the step longer than the fault-free one by over an RTO) or both not, and when slow, within
// 10% of each other. The engines hash QPs onto paths independently (flowRouter.pick vs the
// switches' ECMP), so a fabric link is in the table when both put a QP on it (p0.t0-0.up1 is
// on a packet-level path only); a host link is on every engine's path.
func TestTrainingRoCELinkDownFlowVsPacket(t *testing.T) {
	const rtoUs = 2000 // a stall costs at least one retransmission timeout
	for _, f := range []string{
		"link: p0.t0-0.up0, action: down",
		"link: h8.p0, action: down, for: 4ms",
		"link: p0.t0-1.up0, action: down",
		"switch: p0.t1-0, action: down",
	} {
		c := tfCase{radix: 16, hosts: 16, transport: "{kind: roce, roce: {rto: 2ms}}", reconv: "5ms", steps: 2,
			plan: "{tp: 1, pp: 1}", gpu: ", scale_up_gpus: 1", faults: "  - {at_step: 1, at: 5ms, " + f + "}\n"}
		fl := c.run(t).Summary
		c.engine = "packet, duration: 1s"
		pk := c.run(t).Summary
		ft, pt := stepTimes(&fl), stepTimes(&pk)
		slowF, slowP := ft[1]-ft[0] > rtoUs, pt[1]-pt[0] > rtoUs
		t.Logf("%s: flow steps %v us, packet %v us (retx %d, timeouts %d)", f, roundAll(ft), roundAll(pt), pk.roceT().RetxPackets, pk.roceT().Timeouts)
		if slowF != slowP {
			t.Errorf("%s: flow slow %v (%v us), packet slow %v (%v us); want the engines to agree", f, slowF, roundAll(ft), slowP, roundAll(pt))
		}
		if slowF && slowP && (pt[1] > 1.1*ft[1] || pt[1] < ft[1]/1.1) {
			t.Errorf("%s: faulted step %.0f us packet vs %.0f us flow; want within 10%%", f, pt[1], ft[1])
		}
	}
}

// restartCharge: lost work is half a checkpoint period (interval + write) / 2, capped by the
// simulated time since the job started or last restarted; the restart time is the goodput
// model's. Swept over the time since the start across the cap.
func TestRestartChargeCapped(t *testing.T) {
	cfg := &training.Config{}
	cfg.Goodput.Restart, cfg.Goodput.CheckpointWrite = 600, 60
	tr := &training.Result{CkptIntervalS: 3000}
	for _, tc := range []struct{ since, want float64 }{
		{-1, 0}, {0, 0}, {0.42, 0.42}, {7.57, 7.57}, {1529, 1529}, {1530, 1530}, {1531, 1530}, {1e6, 1530},
	} {
		r, lost := restartCharge(cfg, tr, tc.since)
		if r != 600 || math.Abs(lost-tc.want) > 1e-9 {
			t.Errorf("since %g s: restart %g s, lost %g s; want 600 s and %g s", tc.since, r, lost, tc.want)
		}
	}
}

// Issue 17 review, item 6 and the headline of items 4-5: a fault after the simulated steps
// ended is not applied and a note says so (raise sim_steps); an at_step offset past its
// step's end lands in a later step and a note says where; the headline says what the faults
// cost against the fault-free step, and "absorbed" only when no step got slower.
func TestTrainingFaultTimingNotes(t *testing.T) {
	base := tfCase{radix: 16, hosts: 32, transport: "{kind: mrc}", steps: 3}
	for _, tc := range []struct {
		name, faults string
		notes        []string // substrings of the notes, in order
		headline     string
		extra        bool // ExtraTimeUs over 0.1% of a fault-free step
	}{
		{"after the end", "  - {at: 500ms, link: h0.p0, action: down}\n",
			[]string{"came after the 3 simulated steps ended", "raise workload.training.sim_steps"}, "none reached the job", false},
		{"at_step past its step", "  - {at_step: 0, at: 4ms, link: h3.p0, action: degrade, factor: 0.25}\n",
			[]string{"faults[0] at_step 0, at 4.000 ms is past that step's end", "the event fell in step 1"}, "they cost", true},
		{"slower steps", "  - {at_step: 1, at: 0s, link: h3.p0, action: degrade, factor: 0.25}\n",
			nil, "they cost", true},
		{"absorbed", "  - {at_step: 1, at: 0s, link: p0.t0-0.up0, action: degrade, factor: 0.9}\n",
			nil, "absorbed", false},
	} {
		c := base
		c.faults = tc.faults
		r := c.run(t)
		tf := r.Summary.TrainingFaults
		head := strings.SplitN(r.Training.FaultLines(), "\n", 2)[0]
		t.Logf("%s: steps %v us; %s; notes %q", tc.name, roundAll(stepTimes(&r.Summary)), head, tf.Notes)
		all := strings.Join(tf.Notes, "\n")
		for _, n := range tc.notes {
			if !strings.Contains(all, n) {
				t.Errorf("%s: notes %q; want %q", tc.name, tf.Notes, n)
			}
		}
		if !strings.Contains(head, tc.headline) {
			t.Errorf("%s: headline %q; want %q", tc.name, head, tc.headline)
		}
		if (tf.ExtraTimeUs > 1e-3*tf.FaultFreeStepUs) != tc.extra {
			t.Errorf("%s: extra time %.1f us (fault-free step %.1f us); want extra %v", tc.name, tf.ExtraTimeUs, tf.FaultFreeStepUs, tc.extra)
		}
	}
}

// Issue 17 review, item 3: one NIC port down for good out of 8 planes under RoCE. The QPs
// bound to the port cannot move planes (an RC QP is bound to its port), so they give up and
// the job restarts; the restarted job's communicators leave the dead port out (NCCL builds
// them over the ports that are up), so the host goes on over its 7 live ports: every step
// finishes, with one restart charged. All 8 ports down cuts the host off: an error.
func TestTrainingRoCEOnePortDown(t *testing.T) {
	c := tfCase{radix: 16, hosts: 32, transport: "{kind: roce, roce: {rto: 1ms, retry_count: 3}}", reconv: "2ms", steps: 4,
		faults: "  - {at: 6ms, nic: h3.p0, action: down}\n"}
	s := c.run(t).Summary
	tf := s.TrainingFaults
	times := stepTimes(&s)
	t.Logf("one port down: steps %v us, restarts %d", roundAll(times), len(tf.Restarts))
	if len(tf.Restarts) != 1 || len(times) != 4 {
		t.Errorf("one port down: %d steps, restarts %+v; want 4 steps and 1 restart", len(times), tf.Restarts)
	}
	if last := times[len(times)-1]; last > 1.5*times[0] {
		t.Errorf("one port down: last step %.1f us vs %.1f us before; want the host on its 7 live ports, not stalled", last, times[0])
	}
	c.faults = "  - {at: 6ms, nic: \"h3.*\", action: down}\n"
	checkCutOff(t, c, "every port of a host down cuts it off")
}

// checkCutOff runs c, whose faults cut a host off for good after step 0, and checks it is a
// failed run with outputs (item 3 of the issue 17 review): Failed with a reason naming why,
// the finished step in the training result (steps.csv) and the fault report.
func checkCutOff(t *testing.T, c tfCase, why string) {
	t.Helper()
	sc, err := scenario.Parse([]byte(c.yaml()))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(sc)
	if err != nil {
		t.Fatalf("a host cut off: %v; want a failed run with outputs, not an error", err)
	}
	s := res.Summary
	t.Logf("cut off: failed %v: %.200s", s.Failed, s.FailureReason)
	if !s.Failed || !strings.Contains(s.FailureReason, why) || strings.Contains(s.FailureReason, "blackhole") {
		t.Errorf("a host cut off: failed %v, reason %q; want failed, saying %q (and nothing of blackholes)", s.Failed, s.FailureReason, why)
	}
	if s.Training == nil || len(s.Training.StepRecords) < 1 || s.TrainingFaults == nil || len(s.TrainingFaults.Steps) != len(s.Training.StepRecords) {
		t.Errorf("a host cut off: training %v, faults %v; want the finished steps reported", s.Training != nil, s.TrainingFaults != nil)
	}
}

// Issue 17 review, item 4: RoCE under packet loss at flow level waits the RTO for tail losses
// (a message whose last packet is lost: go-back-N has no tail-loss probe), as the packet
// engine does; before, flow level charged only go-back-N's resends and was 34,000x faster
// at 1% loss. Both engines slow the step by several RTOs, within 1.5x of each other.
func TestTrainingRoCETailLossFlowVsPacket(t *testing.T) {
	const small = "{name: small, layers: 2, hidden: 512, heads: 8, kv_heads: 8, ffn: 2048, vocab: 8000, seq_len: 512, global_batch: 16, micro_batch: 1}"
	c := tfCase{radix: 16, hosts: 16, transport: "{kind: roce, roce: {rto: 1ms}}", model: small, plan: "{tp: 1, pp: 1}", gpu: ", scale_up_gpus: 1",
		faults: "  - {at: 0s, link: \"*\", action: loss, loss: 0.005}\n", steps: 4}
	fl := c.run(t).Summary
	c.engine = "packet, duration: 1s"
	pk := c.run(t).Summary
	a, b := pk.Training.StepTimeUs, fl.Training.StepTimeUs
	base := fl.TrainingFaults.FaultFreeStepUs
	t.Logf("loss 0.5%%: step %.1f us packet, %.1f us flow (fault-free %.1f us flow, %.1f us packet)", a, b, base, pk.TrainingFaults.FaultFreeStepUs)
	if !fl.TrainingFaults.FaultFreeRerun || b < base+2000 || a < pk.TrainingFaults.FaultFreeStepUs+2000 {
		t.Errorf("loss: flow %.1f us, packet %.1f us vs fault-free %.1f us; want both slower by over 2 RTOs a step", b, a, base)
	}
	if a > 1.5*b || b > 1.5*a {
		t.Errorf("loss: packet %.1f us vs flow %.1f us; want within 1.5x", a, b)
	}
}

// TestTrainingStoppedBeforeFirstStep: a job cut off before its first step (a host's only
// NIC port down) is a failed run with outputs at both engines, not an error: summary.json
// failed with the reason naming the stuck ranks (the new-user review of issue 20, F11).
func TestTrainingStoppedBeforeFirstStep(t *testing.T) {
	const y = `
name: stopped
topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G, scale_up: {gpus: 8, rate: 3600G}}}
transport: {kind: %s}
workload:
  training:
    model: {layers: 4, hidden: 1024, heads: 8, ffn: 4096, vocab: 32000, seq_len: 1024, global_batch: 4, micro_batch: 1}
    gpu: {preset: h100}
    plan: {tp: 4, pp: 2}
faults:
  - {at: 100us, nic: h8.p0, action: down}
run: {engine: %s, duration: 20ms}
`
	for _, c := range []struct{ kind, engine, want string }{
		{"mrc", "packet", "ranks have not reached the step barrier"},
		{"uec", "packet", "ranks have not reached the step barrier"},
		{"mrc", "flow", "could not continue"},
	} {
		res := mustRun(t, fmt.Sprintf(y, c.kind, c.engine))
		s := res.Summary
		if !s.Failed || !s.Complete || !strings.Contains(s.FailureReason, c.want) {
			t.Errorf("%s %s: failed %v complete %v, reason %.200q; want failed, complete, %q", c.kind, c.engine, s.Failed, s.Complete, s.FailureReason, c.want)
		}
	}
}
