package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
)

// trainYAML: Llama-3-70B on 1,024 H100s (TP 8, PP 4, DP 32) over a 2-tier Clos of 4 planes x
// %s links, radix 64; %s is the transport kind.
const trainYAML = `
name: train
topology:
  clos: {tiers: 2, planes: 4, radix: 64, hosts: 1024, host_link: %s}
transport: {kind: %s}
workload:
  training:
    model: {preset: llama3-70b}
    gpu: {preset: h100}
    plan: {tp: 8, pp: 4}
    overlap: %v
`

// A Llama-3-70B-class step on 1,024 GPUs runs on a 2-tier MRC fabric and on RoCEv2 at flow
// level [issue 9]: both report step time and exposed communication; ECMP collisions make
// RoCE's gradient all-reduce slower, so its exposed communication is higher; halving the
// link rate raises exposed communication; turning overlap off raises it too.
func TestTraining70B(t *testing.T) {
	run := func(rate, kind string, overlap bool) *Summary {
		t.Helper()
		s := &mustRun(t, fmt.Sprintf(trainYAML, rate, kind, overlap)).Summary
		if s.Training == nil || s.Engine != "flow" {
			t.Fatalf("%s %s: no training result (engine %q)", kind, rate, s.Engine)
		}
		tr := s.Training
		t.Logf("%-4s %s overlap %-5v: step %.1f ms, exposed comm %.1f ms (dp %.1f, pp %.1f, tp %.1f), bubble %.1f ms, MFU %.1f%%",
			kind, rate, overlap, tr.StepTimeUs/1e3, tr.ExposedCommUs/1e3, tr.DPExposedUs/1e3, tr.PPWaitUs/1e3, tr.TPExposedUs/1e3, tr.BubbleUs/1e3, 100*tr.MFU)
		if tr.GPUs != 1024 || tr.TP != 8 || tr.PP != 4 || tr.DP != 32 {
			t.Fatalf("plan %d GPUs tp %d pp %d dp %d; want 1024, 8, 4, 32", tr.GPUs, tr.TP, tr.PP, tr.DP)
		}
		return s
	}
	mrc := run("100G", "mrc", true)
	roce := run("100G", "roce", true)
	half := run("50G", "mrc", true)
	noOverlap := run("100G", "mrc", false)
	if roce.Training.ExposedCommUs <= mrc.Training.ExposedCommUs {
		t.Errorf("RoCE exposed comm %.1f ms not above MRC's %.1f ms", roce.Training.ExposedCommUs/1e3, mrc.Training.ExposedCommUs/1e3)
	}
	if half.Training.ExposedCommUs <= mrc.Training.ExposedCommUs {
		t.Errorf("halving the link rate: exposed comm %.1f ms, not above %.1f ms", half.Training.ExposedCommUs/1e3, mrc.Training.ExposedCommUs/1e3)
	}
	if noOverlap.Training.DPExposedUs <= 2*mrc.Training.DPExposedUs {
		t.Errorf("overlap off: DP exposed %.1f ms vs %.1f ms with overlap; want much more", noOverlap.Training.DPExposedUs/1e3, mrc.Training.DPExposedUs/1e3)
	}
	if mrc.Training.PowerSwingMW <= 0 || mrc.Training.GoodputFrac <= 0 || mrc.Training.GoodputFrac >= 1 {
		t.Errorf("power swing %.3f MW, goodput %.3f; want both reported", mrc.Training.PowerSwingMW, mrc.Training.GoodputFrac)
	}
}

// Scenario errors for training name the field and show the arithmetic.
func TestTrainingScenarioErrors(t *testing.T) {
	base := `
topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 32, host_link: 100G}}
transport: {kind: %s}
workload: {training: {model: {preset: llama3-8b, global_batch: 32}, gpu: {preset: h100}, plan: %s}}
%s`
	for _, c := range []struct{ kind, plan, extra, want string }{
		{"mrc", "{tp: 3}", "", "workload.training.plan.tp: tp=3 does not divide world size 32"},
		{"raw", "{tp: 4, pp: 2}", "", "transport.kind"},
		{"mrc", "{tp: 4, pp: 2}", "traffic: [{pattern: permutation, bytes: 1MiB}]", "traffic"},
		{"mrc", "{tp: 4, pp: 2}", "run: {engine: warp}", "run.engine"},
	} {
		_, err := scenario.Parse([]byte(fmt.Sprintf(base, c.kind, c.plan, c.extra)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s %s: %v; want %q", c.kind, c.plan, c.extra, err, c.want)
		}
	}
	// 32 GPUs with TP 4, PP 2 give DP 4.
	s := mustRun(t, fmt.Sprintf(base, "ideal", "{tp: 4, pp: 2}", "")).Summary
	if s.Training.DP != 4 || s.Engine != "analytic" {
		t.Errorf("32 GPUs, tp 4, pp 2: dp %d (engine %s); want 4", s.Training.DP, s.Engine)
	}
}

// The same job with one flapping link [issue 9]: under MRC every flap is absorbed and goodput
// is unchanged (within 1%); under RoCEv2 each flap (down 30 s) outlasts the QPs' retry budget
// (about 8.4 ms, well before routing reconverges after 1 s), restarts the job, and goodput
// falls with the restarts it reports.
func TestTrainingFlappingLink(t *testing.T) {
	const y = `
topology: {clos: {tiers: 2, planes: 4, radix: 64, hosts: 256, host_link: 100G}}
transport: {kind: %s}
workload:
  training:
    model: {preset: llama3-8b, global_batch: 128}
    gpu: {preset: h100}
    plan: {tp: 8, pp: 2}
%s`
	flap := "faults: [{link: p1.t0-3.up5, action: flap, at: 0s, down_for: 30s, period: 1h, count: 1}]\n"
	good := map[string][2]float64{}
	for _, kind := range []string{"mrc", "roce"} {
		base := mustRun(t, shortRTO(fmt.Sprintf(y, kind, ""))).Summary.Training
		flapped := mustRun(t, shortRTO(fmt.Sprintf(y, kind, flap))).Summary.Training
		t.Logf("%s: goodput %.4f -> %.4f with the flapping link; restarts/day %.2f -> %.2f, absorbed/day %.2f -> %.2f",
			kind, base.GoodputFrac, flapped.GoodputFrac, base.RestartsPerDay, flapped.RestartsPerDay, base.AbsorbedPerDay, flapped.AbsorbedPerDay)
		good[kind] = [2]float64{base.GoodputFrac, flapped.GoodputFrac}
		if kind == "mrc" && (flapped.RestartsPerDay != base.RestartsPerDay || flapped.AbsorbedPerDay < base.AbsorbedPerDay+23) {
			t.Errorf("mrc: restarts/day %.2f -> %.2f, absorbed %.2f -> %.2f; want the 24 flaps a day absorbed", base.RestartsPerDay, flapped.RestartsPerDay, base.AbsorbedPerDay, flapped.AbsorbedPerDay)
		}
		if kind == "roce" && flapped.RestartsPerDay < base.RestartsPerDay+23 {
			t.Errorf("roce: restarts/day %.2f -> %.2f; want the 24 flaps a day to restart the job", base.RestartsPerDay, flapped.RestartsPerDay)
		}
	}
	if g := good["mrc"]; g[1] < 0.99*g[0] {
		t.Errorf("mrc goodput %.4f -> %.4f; want unchanged within 1%%", g[0], g[1])
	}
	if g := good["roce"]; g[1] > 0.9*g[0] {
		t.Errorf("roce goodput %.4f -> %.4f; want a clear loss from the restarts", g[0], g[1])
	}
}

// Packet level and flow level agree on a small job [issue 9: every transport]: a 4-layer
// model on 32 GPUs (TP 8 over NVLink, PP 2, DP 2 over the fabric) steps within 10% of each
// other under MRC and 20% under RoCE, whose DCQCN rate cuts and PFC pauses the fluid model
// leaves out (it only shares ECMP paths fairly); the packet run also reports its transport
// figures.
func TestTrainingPacketVsFlow(t *testing.T) {
	const y = `
topology: {clos: {tiers: 2, planes: 2, radix: 16, hosts: 32, host_link: 100G}}
transport: {kind: %s}
workload:
  training:
    model: {name: tiny, layers: 4, hidden: 1024, heads: 8, kv_heads: 8, ffn: 4096, vocab: 32000, seq_len: 1024, global_batch: 16, micro_batch: 1}
    gpu: {preset: h100}
    plan: {tp: 8, pp: 2, schedule: 1f1b}
    exact: true
run: {engine: %s, duration: 100ms}
`
	for _, kind := range []string{"mrc", "roce"} {
		pk := mustRun(t, fmt.Sprintf(y, kind, "packet")).Summary
		fl := mustRun(t, fmt.Sprintf(y, kind, "flow")).Summary
		a, b := pk.Training.StepTimeUs, fl.Training.StepTimeUs
		t.Logf("%s: step %.1f us at packet level, %.1f us at flow level (%.3fx); exposed comm %.1f vs %.1f us",
			kind, a, b, a/b, pk.Training.ExposedCommUs, fl.Training.ExposedCommUs)
		if pk.Engine != "packet" || fl.Engine != "flow" || pk.Transport == nil {
			t.Fatalf("%s: engines %q/%q, transport block missing", kind, pk.Engine, fl.Engine)
		}
		tol := map[string]float64{"mrc": 1.1, "roce": 1.2}[kind]
		if a > tol*b || a < b/tol {
			t.Errorf("%s: packet %.1f us vs flow %.1f us; want within %.0f%%", kind, a, b, 100*(tol-1))
		}
	}
}

// A failed chip in a torus with OCS spares [issue 8]: the OCSes swap its 4x4x4 cube for the
// spare, the job pauses for the switching time and continues on the remapped shape (the same
// torus, so the same step time); a second failure with no spare left is an error naming
// spare_cubes.
func TestTrainingTorusOCS(t *testing.T) {
	const y = `
topology: {torus: {dims: 4x4x8, link_rate: 100G, ocs: true, spare_cubes: 1, ocs_switch_time: 10ms}}
transport: {kind: mrc}
workload:
  training:
    model: {name: small, layers: 8, hidden: 2048, heads: 16, kv_heads: 16, ffn: 8192, vocab: 32000, seq_len: 2048, global_batch: 64, micro_batch: 1}
    gpu: {preset: h100, scale_up_gpus: 1}
    plan: {tp: 1, pp: 2}
faults:
%s`
	s := mustRun(t, fmt.Sprintf(y, "  - {at: 1ms, switch: x1y2z3.r, action: down}\n")).Summary
	if len(s.OCS) != 1 {
		t.Fatalf("%d OCS events; want 1", len(s.OCS))
	}
	o := s.OCS[0]
	t.Logf("OCS: %+v", o)
	if o.PauseUs != 10000 || o.MovedHosts != 64 || o.SpareCube != 2 || o.StepWithPause != o.StepBeforeUs+10000 {
		t.Errorf("OCS event %+v; want a 10 ms pause, 64 ranks moved to spare cube 2", o)
	}
	if d := o.StepAfterUs / o.StepBeforeUs; d < 0.99 || d > 1.01 {
		t.Errorf("step %.1f us after the remap vs %.1f before; want the same shape's time", o.StepAfterUs, o.StepBeforeUs)
	}
	sc, err := scenario.Parse([]byte(fmt.Sprintf(y, "  - {at: 1ms, switch: x1y2z3.r, action: down}\n  - {at: 2ms, switch: x0y0z5.r, action: down}\n")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(sc); err == nil || !strings.Contains(err.Error(), "spare_cubes") {
		t.Errorf("two failures, one spare: %v; want an error naming spare_cubes", err)
	}
}

// Training inputs the review found unchecked are refused with the field named.
func TestTrainingInputBounds(t *testing.T) {
	const y = `
topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 32, host_link: 100G%s}}
transport: {kind: mrc}
workload: {training: {model: {preset: llama3-8b, global_batch: 32}, gpu: {preset: h100%s}, plan: {tp: 8}%s}}
`
	for _, c := range []struct{ topo, gpu, extra, want string }{
		{"", "", ", bucket_bytes: 1B", "bucket_bytes"},
		{"", "", ", steps: 2, sim_steps: 5", "sim_steps"},
		{"", "", ", power: {interval: 1ps}", "power.interval"},
		{"", "", ", goodput: {gpu_mtbf: 1s}", "horizon"},
		{", scale_up: {gpus: 4, rate: 1T}", ", scale_up_gpus: 8", "", "scale_up_gpus"},
	} {
		sc, err := scenario.Parse([]byte(fmt.Sprintf(y, c.topo, c.gpu, c.extra)))
		if err == nil {
			_, err = Run(sc)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s%s%s: %v; want an error naming %s", c.topo, c.gpu, c.extra, err, c.want)
		}
	}
}

// On one plane a host's link is its only way out: MRC cannot absorb its failure, so the host
// links' share of link failures restarts the job; on two planes every link failure is
// absorbed. RoCE restarts on every link failure either way.
func TestTrainingOnePlaneLinkRestarts(t *testing.T) {
	const y = `
topology: {clos: {tiers: 2, planes: %d, radix: 16, hosts: 32, host_link: %s}}
transport: {kind: mrc}
workload: {training: {model: {preset: llama3-8b, global_batch: 32}, gpu: {preset: h100}, plan: {tp: 8, pp: 2}}}
`
	one := mustRun(t, fmt.Sprintf(y, 1, "200G")).Summary.Training
	two := mustRun(t, fmt.Sprintf(y, 2, "100G")).Summary.Training
	if one.RestartsPerDay <= two.RestartsPerDay || two.AbsorbedPerDay <= 0 {
		t.Errorf("restarts/day one plane %.3f, two planes %.3f (absorbed %.3f); want more restarts on one plane", one.RestartsPerDay, two.RestartsPerDay, two.AbsorbedPerDay)
	}
	t.Logf("restarts/day: one plane %.3f (absorbed %.3f), two planes %.3f (absorbed %.3f)", one.RestartsPerDay, one.AbsorbedPerDay, two.RestartsPerDay, two.AbsorbedPerDay)
}

// TestTrainingTPSimulatedIdealNote: tp_model simulated under transport ideal runs the closed
// forms, so the result equals closed_form and a note says so; closed_form has no note.
func TestTrainingTPSimulatedIdealNote(t *testing.T) {
	const y = `
topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 16, host_link: 100G}}
transport: {kind: ideal}
workload: {training: {model: {preset: llama3-8b, global_batch: 16}, gpu: {preset: h100}, plan: {tp: 8}, tp_model: %s}}
`
	sim := mustRun(t, fmt.Sprintf(y, "simulated")).Summary.Training
	cf := mustRun(t, fmt.Sprintf(y, "closed_form")).Summary.Training
	note := func(ns []string) bool {
		for _, n := range ns {
			if strings.Contains(n, "tp_model simulated with transport ideal") {
				return true
			}
		}
		return false
	}
	if sim.StepTimeUs != cf.StepTimeUs || !note(sim.Notes) || note(cf.Notes) {
		t.Errorf("simulated %v us (notes %q), closed_form %v us (notes %q)", sim.StepTimeUs, sim.Notes, cf.StepTimeUs, cf.Notes)
	}
}
