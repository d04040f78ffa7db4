package training

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// TestDefaultScheduleNeedsMultipleOfPP: the default schedule is interleaved exactly when the
// microbatches per step are a multiple of pp (Megatron-LM's requirement), else 1f1b with a
// Note saying why; across pp and microbatch counts.
func TestDefaultScheduleNeedsMultipleOfPP(t *testing.T) {
	for _, p := range []int{2, 3, 4, 8, 16} {
		for m := 1; m <= 3*p+1; m++ {
			rm, err := uniformModel(4*p, 2*m).Resolve()
			if err != nil {
				t.Fatal(err)
			}
			got, err := Plan{PP: p}.Resolve(2*p, rm)
			if err != nil {
				t.Fatalf("p %d m %d: %v", p, m, err)
			}
			want, note := ScheduleInterleaved, ""
			if m%p != 0 {
				want, note = Schedule1F1B, fmt.Sprintf("schedule 1f1b (default): %d microbatches is not a multiple of pp %d", m, p)
			}
			if got.Schedule != want || !strings.HasPrefix(got.Note(), note) || (note == "") != (got.Note() == "") {
				t.Errorf("p %d m %d: schedule %s (v %d), note %q; want %s, note %q", p, m, got.Schedule, got.VirtualStages, got.Note(), want, note)
			}
			if want == Schedule1F1B && got.VirtualStages != 1 {
				t.Errorf("p %d m %d: 1f1b with %d virtual stages", p, m, got.VirtualStages)
			}
			// Re-resolving a resolved plan changes nothing (NewJob resolves again).
			again, err := got.Resolve(2*p, rm)
			if err != nil || again.Schedule != got.Schedule || again.VirtualStages != got.VirtualStages || again.Note() != got.Note() {
				t.Errorf("p %d m %d: re-resolved to %s v %d note %q (err %v)", p, m, again.Schedule, again.VirtualStages, again.Note(), err)
			}
		}
	}
}

// TestExplicitVirtualStagesNeedMultipleOfPP: virtual_stages > 1 without a schedule asks for
// interleaving, so a microbatch count that is not a multiple of pp is an error on it.
func TestExplicitVirtualStagesNeedMultipleOfPP(t *testing.T) {
	rm, _ := uniformModel(16, 2*6).Resolve()
	_, err := Plan{PP: 4, VirtualStages: 2}.Resolve(8, rm)
	if err == nil || !strings.Contains(err.Error(), "plan.virtual_stages: interleaved needs the microbatches per step to be a multiple of pp") || !strings.Contains(err.Error(), "6 microbatches % pp 4 = 2") {
		t.Fatalf("error %v", err)
	}
}

// TestPP1SchedulesIdentical: with pp 1 there is no pipeline, so 1f1b, interleaved and zb-h1
// resolve to 1f1b and give identical steps (breakdowns included), with a note for the two
// that were rewritten; across data-parallel widths and microbatch counts.
func TestPP1SchedulesIdentical(t *testing.T) {
	g := mustGPU(t, "h100")
	for _, dp := range []int{1, 2, 8} {
		for _, m := range []int{1, 3, 8} {
			var ref *Trace
			for _, sc := range []string{Schedule1F1B, ScheduleInterleaved, ScheduleZBH1, ""} {
				j := newJob(t, uniformModel(4, m*dp), g, Plan{Schedule: sc}, dp, Options{Overlap: true})
				if j.Plan.Schedule != Schedule1F1B || j.Plan.VirtualStages != 1 {
					t.Fatalf("dp %d m %d %q: resolved to %s v %d", dp, m, sc, j.Plan.Schedule, j.Plan.VirtualStages)
				}
				if wantNote := sc == ScheduleInterleaved || sc == ScheduleZBH1; wantNote != strings.Contains(j.Summary(), "with pp 1 there is no pipeline") {
					t.Errorf("dp %d m %d %q: summary note %v, want %v:\n%s", dp, m, sc, !wantNote, wantNote, j.Summary())
				}
				tr := runAnalytic(t, j, 100e9, RunOptions{})
				if ref == nil {
					ref = tr
					continue
				}
				a, b := tr.Steps[0], ref.Steps[0]
				if a.Time != b.Time || a.Mean != b.Mean {
					t.Errorf("dp %d m %d %q: step %v %v, 1f1b %v %v", dp, m, sc, a.Time, a.Mean, b.Time, b.Mean)
				}
			}
		}
	}
}

// TestMicrobatchCap: microbatches per step up to MaxMicrobatches resolve, one more is an
// error naming model.global_batch, the count and the limit; across dp and micro_batch.
func TestMicrobatchCap(t *testing.T) {
	for _, dp := range []int{1, 8, 64} {
		for _, mb := range []int{1, 2} {
			m := uniformModel(4, MaxMicrobatches*dp*mb)
			m.MicroBatch = mb
			rm, err := m.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := (Plan{}).Resolve(dp, rm); err != nil {
				t.Errorf("dp %d mb %d at the cap: %v", dp, mb, err)
			}
			rm.GlobalBatch += dp * mb
			_, err = Plan{}.Resolve(dp, rm)
			want := fmt.Sprintf("model.global_batch: %d gives %d microbatches per pipeline per step", rm.GlobalBatch, MaxMicrobatches+1)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("want at most %d", MaxMicrobatches)) {
				t.Errorf("dp %d mb %d: error %v, want %q", dp, mb, err, want)
			}
		}
	}
}

// TestDefaultPowerInterval: the default interval stays 100us up to DefaultMaxPowerSamples
// samples and grows in 1-2-5 steps beyond, never giving more samples than the cap.
func TestDefaultPowerInterval(t *testing.T) {
	for _, c := range []struct {
		total sim.Time
		want  sim.Time
	}{
		{sim.Millisecond, DefaultPowerInterval},
		{100 * sim.Second, DefaultPowerInterval},
		{100*sim.Second + 1, 200 * sim.Microsecond},
		{200 * sim.Second, 200 * sim.Microsecond},
		{201 * sim.Second, 500 * sim.Microsecond},
		{1995 * sim.Second, 2 * sim.Millisecond},
		{40000 * sim.Second, 50 * sim.Millisecond},
	} {
		tr := &Trace{Steps: []StepTrace{{Time: c.total}}}
		got := defaultPowerInterval(tr)
		if got != c.want || (c.total+got-1)/got > DefaultMaxPowerSamples {
			t.Errorf("%v: interval %v, want %v", c.total, got, c.want)
		}
	}
}

// TestCPCategory: context-parallel communication is its own category, cp, both over the
// network (a domain of 1) and on NVLink (the closed form); tensor-parallel time stays zero
// with tp 1, and cp counts as exposed communication (and communication power).
func TestCPCategory(t *testing.T) {
	g := mustGPU(t, "h100")
	for _, cp := range []int{2, 4, 8} {
		for _, domain := range []int{1, 8} {
			m := tinyModel()
			m.GlobalBatch = 2
			j := newJob(t, m, g, Plan{CP: cp, Domain: domain}, 2*cp, Options{Overlap: true})
			st := runAnalytic(t, j, 100*sim.Gbps, RunOptions{}).Steps[0]
			if st.Mean[CatCP] <= 0 || st.Mean[CatTP] != 0 {
				t.Errorf("cp %d domain %d: cp %v, tp %v; want cp > 0 and tp 0", cp, domain, st.Mean[CatCP], st.Mean[CatTP])
			}
			if st.Mean.Exposed() < st.Mean[CatCP] || !CatCP.Comm() || CatCP.String() != "cp" {
				t.Errorf("cp %d domain %d: exposed %v below cp %v", cp, domain, st.Mean.Exposed(), st.Mean[CatCP])
			}
		}
	}
}

// TestHeadlineStragglersAndWorstStep: the headline names the worst simulated step and the
// mean when the steps differ (a throttle window over one step), and the configured stragglers
// with whether the slowest rank is one; without stragglers there is no such line.
func TestHeadlineStragglersAndWorstStep(t *testing.T) {
	run := func(sg *Stragglers, steps int) *Result {
		t.Helper()
		cfg := Config{Model: Model{Preset: "llama3-8b", GlobalBatch: 16}, GPU: GPU{Preset: "h100"}, Plan: Plan{TP: 8}, Steps: steps, SimSteps: steps, Stragglers: sg}
		j, err := cfg.Job(16)
		if err != nil {
			t.Fatal(err)
		}
		s := sim.New(1)
		b, _ := NewAnalyticBackend(s, collective.Model{Latency: 5 * sim.Microsecond, Rate: 400 * sim.Gbps})
		res, err := cfg.Run(j, s, b, Env{Links: 100, NICs: 16})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for _, c := range []struct {
		name    string
		sg      *Stragglers
		steps   int
		has     []string
		hasNot  []string
		straggl string
	}{
		{"none", nil, 3, []string{"run ", "for 3 steps"}, []string{"stragglers:", "differ"}, ""},
		{"slow rank", slowRank(11, 0.8), 2, []string{"stragglers: rank 11 at 0.8x; slowest rank 8 is not a configured straggler; its TP group holds rank 11 (at 0.8x)"}, []string{"differ"}, ""},
		{"slow other rank", &Stragglers{Slow: []SlowGPUs{{Ranks: []RankRange{{3, 3}}, Speed: 1.2}}}, 1, []string{"is not a configured straggler", "for 1 step\n"}, nil, ""},
		{"throttled step", &Stragglers{Throttle: []Throttle{{Ranks: []RankRange{{0, 15}}, At: 0, For: 100 * sim.Millisecond, Speed: 0.5}}}, 4,
			[]string{"the simulated steps differ: worst step 0", "mean ", "is a configured straggler (at 0.5x from 0s for 100ms)"}, nil, "at 0.5x from 0s for 100ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := run(c.sg, c.steps)
			h := r.Summary()
			for _, w := range c.has {
				if !strings.Contains(h, w) {
					t.Errorf("headline lacks %q:\n%s", w, h)
				}
			}
			for _, w := range c.hasNot {
				if strings.Contains(h, w) {
					t.Errorf("headline has %q:\n%s", w, h)
				}
			}
			if r.SlowestStraggler != c.straggl {
				t.Errorf("slowest_straggler %q, want %q", r.SlowestStraggler, c.straggl)
			}
			if r.stepsDiffer && (r.WorstStepTimeUs <= r.StepTimeUs || r.MeanStepTimeUs <= r.StepTimeUs || r.MeanStepTimeUs >= r.WorstStepTimeUs) {
				t.Errorf("worst %v, mean %v, last %v", r.WorstStepTimeUs, r.MeanStepTimeUs, r.StepTimeUs)
			}
			if d := r.MeanStepTimeUs*float64(c.steps)/1e6 - r.RunTimeS; d > 1e-9 || d < -1e-9 {
				t.Errorf("mean %v x %d steps != run %v s", r.MeanStepTimeUs, c.steps, r.RunTimeS)
			}
		})
	}
}

// TestSummaryDomains: TP groups crossing scale-up domains are described as network
// collectives (not a 0s closed form), and domains that do not divide the world are named
// with the size of the last one; across domain sizes.
func TestSummaryDomains(t *testing.T) {
	g := mustGPU(t, "h100")
	for _, c := range []struct {
		domain  int
		network bool
		partial string
	}{
		{8, false, ""}, {16, false, ""}, {3, true, "the last domain holds 1"}, {5, true, "the last domain holds 4"}, {4, true, ""}, {1, true, ""},
	} {
		m := tinyModel()
		m.GlobalBatch = 8
		j := newJob(t, m, g, Plan{TP: 8, Domain: c.domain}, 64, Options{Overlap: true})
		s := j.Summary()
		if net := strings.Contains(s, "TP all-reduce of 2MiB per layer boundary: network collectives (TP groups cross scale-up domains)"); net != c.network || strings.Contains(s, "boundary: 0s") {
			t.Errorf("domain %d: network TP line %v, want %v:\n%s", c.domain, net, c.network, s)
		}
		if got := strings.Contains(s, "do not divide the 64 GPUs"); got != (c.partial != "") || c.partial != "" && !strings.Contains(s, c.partial) {
			t.Errorf("domain %d: partial-domain line %v, want %q:\n%s", c.domain, got, c.partial, s)
		}
	}
}

// TestPowerCoarseBins: a coarse interval (fewer bins than a pattern's segments, summed from
// the pattern's cumulative energy) gives each sample the mean of the fine samples it covers
// (fine bins, summed segment by segment); across intervals.
func TestPowerCoarseBins(t *testing.T) {
	m := tinyModel()
	m.Layers, m.GlobalBatch = 16, 16
	j := newJob(t, m, mustGPU(t, "h100"), Plan{TP: 2, PP: 2, Schedule: Schedule1F1B}, 8, Options{Overlap: true})
	tr := runAnalytic(t, j, 100*sim.Gbps, RunOptions{})
	fine, err := tr.Power(sim.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{500, 1000, 5000, 20000} {
		coarse, err := tr.Power(sim.Time(k) * sim.Microsecond)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range coarse.MW[:len(coarse.MW)-1] { // the last bin may be partial
			var sum float64
			for _, f := range fine.MW[i*k : (i+1)*k] {
				sum += f
			}
			if want := sum / float64(k); math.Abs(v-want) > 1e-9*want+1e-12 {
				t.Fatalf("interval %dus sample %d: %.12g MW, fine samples' mean %.12g", k, i, v, want)
			}
		}
	}
}
