package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// trainingSummary is summary.json of a training run on the flow-level engine, as the runner
// writes it (the packet counters all zero), with an OCS event.
const trainingSummary = `{
  "scenario": "train-synth",
  "seed": 1,
  "hosts": 128,
  "planes": 1,
  "switches": 128,
  "links": 512,
  "flows": 0,
  "duration_us": 2000,
  "end_us": 2000,
  "offered_gbps": 0,
  "delivered_gbps": 0,
  "sent_packets": 0,
  "delivered_packets": 0,
  "queue_depth": {"p50_bytes": 0, "max_bytes": 0},
  "engine": "flow",
  "training": {
    "model": "Llama-3-8B", "gpu": "H100 SXM5", "gpus": 128, "tp": 8, "pp": 2, "dp": 8, "ep": 1,
    "microbatches": 4, "steps": 6, "simulated_steps": 3,
    "step_time_us": 402454.817825, "compute_us": 244044.297435,
    "exposed_comm_us": 70310.378496, "tp_exposed_us": 67066.602496, "pp_wait_us": 890.80384,
    "dp_exposed_us": 2352.97216, "ep_exposed_us": 0, "bubble_us": 88100.141894, "sync_us": 0,
    "slowest_rank": 0, "slowest_rank_coord": "tp=0 dp=0 pp=0", "slowest_wait": "bubble", "slowest_wait_us": 99573.9675,
    "ideal_step_us": 324165.168577, "mfu": 0.2979829988263947, "tokens_per_s": 1302725.1178987673,
    "power_mean_mw": 0.12589726419318117, "power_min_mw": 0.04608, "power_max_mw": 0.1792,
    "power_swing_mw": 0.13312, "slew_mw_per_ms": 1.11887913984, "battery_mj": 0.00718640590232256,
    "battery_mwh": 0.0000019962238617562667, "energy_per_step_mj": 0.05066796052553262,
    "goodput_frac": 0.9862489721852691, "goodput_mc_frac": 0.9843934000874364,
    "ckpt_interval_s": 9207.607340783738, "job_mtbf_s": 712645.3460620525,
    "restarts_per_day": 0.12123842592592592, "absorbed_failures_per_day": 0.077824
  },
  "ocs": [
    {"at_us": 1000, "chip": "x1y2z3", "cube": 0, "failed_cube": 0, "spare_cube": 2, "moved_hosts": 64,
     "pause_us": 10000, "step_before_us": 141351.075, "step_after_us": 141351.075, "step_with_pause_us": 151351.075}
  ]
}
`

// trainingFiles is a training run's folder: summary.json, power.csv over three simulated
// steps of 400 ms (sampled every 5 ms, swinging between 0.05 and 0.18 MW within each step),
// steps.csv with the three steps (the last standing for four: the job has six) and an empty
// flows.csv.
func trainingFiles() map[string]string {
	var p strings.Builder
	p.WriteString("time_us,power_mw\n")
	for t := 0; t < 3*400000; t += 5000 {
		mw := 0.18
		if t%400000 >= 300000 {
			mw = 0.05 // the bubble and the gradient reduction
		}
		fmt.Fprintf(&p, "%d,%g\n", t, mw)
	}
	var s strings.Builder
	s.WriteString("step,start_us,step_time_us,compute_us,tp_us,pp_us,dp_us,ep_us,bubble_us,sync_us,exposed_comm_us,slowest_rank,slowest_wait,power_mean_mw,power_swing_mw,slew_mw_per_ms,battery_mwh,iterations\n")
	for i, iters := range []int{1, 1, 4} {
		fmt.Fprintf(&s, "%d,%d,400000,250000,60000,1000,2000,0,87000,0,63000,0,bubble,0.14,0.13,1.1,2e-06,%d\n", i, 400000*i, iters)
	}
	return map[string]string{
		fileSummary: trainingSummary,
		filePower:   p.String(),
		fileSteps:   s.String(),
		fileFlows:   "flow,transport,src,dst,plane,bytes,delivered_bytes,start_us,done_us,fct_us,ideal_us,fct_over_ideal,goodput_gbps,retx_packets\n",
	}
}

// headlineRows returns the figure names of the page's headline table.
func headlineRows(t *testing.T, page string) []string {
	t.Helper()
	i := strings.Index(page, `<table id="headline-table">`)
	if i < 0 {
		t.Fatal("no headline table")
	}
	table, _, _ := strings.Cut(page[i:], "</table>")
	// The table holds up to three (figure, value) column pairs, filled column by column.
	var cols [][]string
	for _, row := range strings.Split(table, "<tr>")[2:] {
		cells := strings.Split(row, "<td")[1:]
		for k := 0; k < len(cells); k += 2 {
			_, text, _ := strings.Cut(cells[k], ">")
			name, _, _ := strings.Cut(text, "</td>")
			for len(cols) <= k/2 {
				cols = append(cols, nil)
			}
			if name != "" {
				cols[k/2] = append(cols[k/2], name)
			}
		}
	}
	var names []string
	for _, c := range cols {
		names = append(names, c...)
	}
	return names
}

// TestWriteTraining: a training run on the flow-level engine gets its training figures in the
// headline (not the zero packet counters), a power plot with the steps marked, the step
// breakdown, and one note for the network's plots that says why they are missing.
func TestWriteTraining(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, trainingFiles())
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page := readReport(t, dir)
	for _, id := range []string{idPower, idSteps} {
		if !strings.Contains(page, `<svg class="plot" id="`+id+`"`) {
			t.Errorf("plot %s missing", id)
		}
	}
	for _, want := range []string{
		`<p class="nodata" id="network-nodata">no data: the plots of the network&#39;s packets`,
		"this training run (engine flow) sent no packets: flows.csv has no rows, links.csv not written",
		// The lead sentences.
		"Training Llama-3-8B on 128 H100 SXM5 (tp 8, pp 2, dp 8, ep 1), collectives on the flow engine; 6 steps reported, 3 simulated.",
		"Step time 402.455 ms, ideal 324.165 ms, MFU 29.8%, 1302725 tokens/s.",
		"exposed communication 70.31 ms (TP 67.067, PP 0.891, DP 2.353, EP 0 ms), pipeline bubble 88.1 ms",
		"Slowest rank 0 (tp=0 dp=0 pp=0), mostly waiting on bubble (99.574 ms).",
		"Power: mean 0.1259 MW, min 0.04608 MW, max 0.1792 MW, swing 0.1331 MW, slew 1.119 MW/ms",
		"Goodput 98.6% (Daly&#39;s model; Monte Carlo 98.4%), checkpoint every 9208 s, job MTBF 712645 s (8.248 days), 0.1212 restarts/day",
		"OCS: chip x1y2z3 failed at 1000 us; the optical circuit switches moved the job&#39;s cube 0 from physical cube 0 to spare cube 2 (64 ranks on new chips) and the job paused 10 ms. Step 141.351 ms before, 141.351 ms on the remapped torus (151.351 ms for the step with the pause).",
		// The plots' captions.
		"(every 5000 us, 240 samples)", "From 0.05 to 0.18 MW", "The 3 steps of steps.csv in this span are shaded every other one",
		"The 3 simulated steps stand for the job&#39;s 6: the last is repeated for the 3 after it.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	rows := strings.Join(headlineRows(t, page), " ")
	for _, want := range []string{"engine", "training.step_time_us", "training.tp_exposed_us", "training.mfu", "training.power_swing_mw",
		"training.goodput_frac", "training.job_mtbf_s", "ocs[0].chip", "ocs[0].pause_us"} {
		if !strings.Contains(" "+rows+" ", " "+want+" ") {
			t.Errorf("headline lacks %s (rows: %s)", want, rows)
		}
	}
	for _, bad := range []string{"offered_gbps", "sent_packets", "delivered_gbps", "queue_depth.max_bytes", "flows"} {
		if strings.Contains(" "+rows+" ", " "+bad+" ") {
			t.Errorf("headline of a run that sent no packets shows %s", bad)
		}
	}
	for _, bad := range []string{"collectives-table", "a workload run", "raw traffic", `id="fct-cdf`, `id="throughput`, ", 0 flows"} {
		if strings.Contains(page, bad) {
			t.Errorf("training page has %q", bad)
		}
	}
	checkSelfContained(t, page)
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	if again := readReport(t, dir); again != page {
		t.Error("the same training folder gives another page")
	}

	// Without power.csv and steps.csv (an older run), the plots are notes saying so.
	os.Remove(filepath.Join(dir, filePower))
	os.Remove(filepath.Join(dir, fileSteps))
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page = readReport(t, dir)
	for _, id := range []string{idPower, idSteps} {
		if !strings.Contains(page, `id="`+id+`-nodata">no data: `) {
			t.Errorf("no note for %s", id)
		}
	}
}

// TestWriteTrainingPacketLevel: a training run at the packet level has packets to show: the
// network's figures and plots join the training ones.
func TestWriteTrainingPacketLevel(t *testing.T) {
	dir := synthDir(t, defaultSynth())
	files := trainingFiles()
	sum := strings.Replace(files[fileSummary], `"sent_packets": 0`, `"sent_packets": 815552`, 1)
	sum = strings.Replace(sum, `"engine": "flow"`, `"engine": "packet"`, 1)
	writeFiles(t, dir, map[string]string{fileSummary: sum, filePower: files[filePower], fileSteps: files[fileSteps]})
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page := readReport(t, dir)
	for _, id := range append([]string{idPower, idSteps}, allPlotIDs...) {
		if !strings.Contains(page, `<svg class="plot" id="`+id+`"`) {
			t.Errorf("plot %s missing", id)
		}
	}
	if strings.Contains(page, idNetwork+"-nodata") {
		t.Error("a packet-level training run has the note for runs without packets")
	}
	rows := " " + strings.Join(headlineRows(t, page), " ") + " "
	for _, want := range []string{"training.step_time_us", "sent_packets", "queue_depth.max_bytes"} {
		if !strings.Contains(rows, " "+want+" ") {
			t.Errorf("headline lacks %s", want)
		}
	}
}

// TestStepsAndPowerEdges: steps.csv of the earlier format (a row per reported step, simulated 0
// for the repeats: bars only for the simulated ones, marks bounded), a flat power trace, steps
// without the category columns.
func TestStepsAndPowerEdges(t *testing.T) {
	var s strings.Builder
	s.WriteString("step,start_us,step_time_us,simulated\n")
	for i := range 1000 {
		sim := 0
		if i < 60 {
			sim = 1
		}
		fmt.Fprintf(&s, "%d,%d,100,%d\n", i, 100*i, sim)
	}
	st, err := readSteps(fileSteps, strings.NewReader(s.String()))
	if err != nil {
		t.Fatal(err)
	}
	if st.rows != 1000 || st.simulated != 60 {
		t.Fatalf("%d rows, %d simulated", st.rows, st.simulated)
	}
	f, err := stepsFigure(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"60 of the 1000 steps were simulated", fmt.Sprintf("The first %d simulated steps are drawn.", maxStepBars), "other (not in"} {
		if !strings.Contains(f.Caption+string(f.SVG), want) {
			t.Errorf("steps figure lacks %q", want)
		}
	}
	pw, err := readPower(filePower, strings.NewReader("time_us,power_mw\n200,1.5\n0,1.5\n100,1.5\n"))
	if err != nil {
		t.Fatal(err)
	}
	if pw.times[0] != 0 || pw.times[2] != 200 {
		t.Errorf("power samples not in time order: %v", pw.times)
	}
	f, err = powerFigure(pw, st, nil)
	if err != nil || f.SVG == "" {
		t.Fatalf("flat power: %v %+v", err, f)
	}
	if !strings.Contains(f.Caption, "The 3 steps of steps.csv in this span") {
		t.Errorf("caption %q", f.Caption)
	}
	// Too many steps in the span to shade: said, not drawn.
	var many strings.Builder
	many.WriteString("step,start_us,step_time_us\n")
	for i := range maxStepBands + 5 {
		fmt.Fprintf(&many, "%d,%d,1\n", i, i)
	}
	st, _ = readSteps(fileSteps, strings.NewReader(many.String()))
	pw, _ = readPower(filePower, strings.NewReader("time_us,power_mw\n0,1\n1000,2\n"))
	if f, err = powerFigure(pw, st, nil); err != nil || !strings.Contains(f.Caption, "too many to mark") {
		t.Errorf("many steps: %v, %q", err, f.Caption)
	}
}

func TestTrainingMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, file, body string
		line             int
		field, want      string
	}{
		{"negative power", filePower, "time_us,power_mw\n0,1\n100,-2\n", 3, "power_mw", "-2 is negative"},
		{"power lacks a column", filePower, "time_us\n0\n", 1, "power_mw", "header lacks"},
		{"step not an integer", fileSteps, "step,start_us,step_time_us\nx,0,1\n", 2, "step", "not an integer"},
		{"simulated neither 0 nor 1", fileSteps, "step,start_us,step_time_us,simulated\n0,0,1,2\n", 2, "simulated", "want 1"},
		{"negative category", fileSteps, "step,start_us,step_time_us,dp_us\n0,0,1,-1\n", 2, "dp_us", "negative"},
		{"no iterations", fileSteps, "step,start_us,step_time_us,iterations\n0,0,1,0\n", 2, "iterations", "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, trainingFiles())
			writeFiles(t, dir, map[string]string{tc.file: tc.body})
			err := Write(dir)
			var fe *FileError
			if !errors.As(err, &fe) || fe.File != tc.file || fe.Line != tc.line || fe.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want %s line %d (%s): %s", err, tc.file, tc.line, tc.field, tc.want)
			}
		})
	}
}

// TestTrainingLeadPartial: a summary with only some training figures gives sentences with those
// and no empty parts.
func TestTrainingLeadPartial(t *testing.T) {
	s, err := readSummary(fileSummary, strings.NewReader(`{"training": {"step_time_us": 1500, "power_swing_mw": 0.5, "goodput_frac": 0.9}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(trainingLead(s), "|")
	want := "Training.|Step time 1.5 ms.|Power: swing 0.5 MW.|Goodput 90.0% (Daly's model)."
	if got != want {
		t.Errorf("lead %q\nwant %q", got, want)
	}
	if trainingLead(nil) != nil {
		t.Error("lead without a summary")
	}
}

// TestStepSeries: a steps.csv with the per-step columns gives the step-time series with the
// arrival percentiles and a labelled marker at each step with fault events, and the per-step
// table of the first and the longest steps; an older steps.csv (no such columns) still gives
// the series, without them.
func TestStepSeries(t *testing.T) {
	var s strings.Builder
	s.WriteString("step,start_us,step_time_us,compute_us,tp_us,pp_us,dp_us,ep_us,bubble_us,sync_us,exposed_comm_us,slowest_rank,slowest_wait,power_mean_mw,power_swing_mw,slew_mw_per_ms,battery_mwh,iterations," +
		"arrive_p50_us,arrive_p99_us,arrive_p100_us,dp_skew_p50_us,dp_skew_max_us,slowest_coord,busiest_rank,busiest_compute_us,slowest_link,events\n")
	const n = 20
	for i := range n {
		tm, ev, link := 400000.0, "", "p0.t0-1"
		switch i {
		case 7:
			tm, ev = 520000, "t=2.8s faults[0] p0.t1-3 down"
		case 8:
			tm, ev = 450000, "t=3.2s faults[0] p0.t1-3 up; t=3.3s faults[1] host 17 down"
		case 15:
			tm = 430000
		}
		fmt.Fprintf(&s, "%d,%g,%g,250000,60000,1000,2000,0,87000,0,63000,%d,dp,0.14,0.13,1.1,2e-06,1,%g,%g,%g,10,%g,tp=1 dp=2 pp=0,17,300000,%s,%q\n",
			i, 400000.0*float64(i), tm, 100+i, tm-60000, tm-1000, tm, tm-400000+5, link, ev)
	}
	st, err := readSteps(fileSteps, strings.NewReader(s.String()))
	if err != nil {
		t.Fatal(err)
	}
	f, err := stepSeriesFigure(st, nil)
	if err != nil || f.SVG == "" {
		t.Fatalf("%v %+v", err, f)
	}
	if p := os.Getenv("H2_DUMP"); p != "" {
		os.WriteFile(p, []byte(f.SVG), 0o644)
	}
	for _, want := range []string{"20 steps from 400 to 520 ms; the longest is step 7.", "Its slowest rank is 107 (tp=1 dp=2 pp=0), waiting mostly on dp; rank 17 computed the longest; the slowest link was p0.t0-1.",
		"2 steps have fault events (dashed red lines): E1 step 7: t=2.8s faults[0] p0.t1-3 down; E2 step 8: t=3.2s faults[0] p0.t1-3 up; t=3.3s faults[1] host 17 down.",
		"median and the 99th-percentile rank"} {
		if !strings.Contains(f.Caption, want) {
			t.Errorf("caption lacks %q:\n%s", want, f.Caption)
		}
	}
	for _, want := range []string{">E1<", ">E2<", "fault events", "median rank", "P99 rank"} {
		if !strings.Contains(string(f.SVG), want) {
			t.Errorf("plot lacks %q", want)
		}
	}
	tb := stepsTable(st)
	if tb == nil || len(tb.Rows) != 8 || !strings.Contains(tb.Note, "8 of 20 simulated steps shown") {
		t.Fatalf("table %+v", tb)
	}
	var steps []string
	for _, r := range tb.Rows {
		steps = append(steps, r[0].Text)
	}
	if got := strings.Join(steps, " "); got != "0 1 2 3 4 7 8 15" {
		t.Errorf("table steps %s; want the first 5 and the 5 longest", got)
	}
	if r := tb.Rows[5]; r[1].Text != "520000" || r[5].Text != "107 (tp=1 dp=2 pp=0)" || r[7].Text != "17" || r[8].Text != "p0.t0-1" || r[9].Text != "t=2.8s faults[0] p0.t1-3 down" {
		t.Errorf("row of step 7: %+v", r)
	}

	// An older steps.csv and one step: the series without percentiles, said so.
	old, err := readSteps(fileSteps, strings.NewReader("step,start_us,step_time_us,slowest_rank,slowest_wait\n0,0,1500,3,bubble\n"))
	if err != nil {
		t.Fatal(err)
	}
	f, err = stepSeriesFigure(old, nil)
	if err != nil || f.SVG == "" || strings.Contains(f.Caption, "median") || !strings.Contains(f.Caption, "One simulated step (1500 us); raise workload.training.sim_steps") || strings.Contains(f.Caption, "zero") ||
		!strings.Contains(f.Caption, "No step lists fault events.") || strings.Contains(string(f.SVG), "barrier") {
		t.Errorf("old format: %v %q", err, f.Caption)
	}
	if tb := stepsTable(old); tb == nil || len(tb.Rows) != 1 || tb.Rows[0][2].Text != "" || tb.Note != "" {
		t.Errorf("old table %+v", tb)
	}
	if f, _ := stepSeriesFigure(nil, nil); f.Note == "" {
		t.Error("no note without steps.csv")
	}
	if stepsTable(nil) != nil {
		t.Error("table without steps.csv")
	}

	// The page has both; a negative arrival is an error naming the cell.
	dir := t.TempDir()
	files := trainingFiles()
	files[fileSteps] = s.String()
	writeFiles(t, dir, files)
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page := readReport(t, dir)
	if !strings.Contains(page, `<svg class="plot" id="`+idStepSeries+`"`) || !strings.Contains(page, `<table id="steps-table">`) {
		t.Error("page lacks the series or the table")
	}
	checkSelfContained(t, page)
	_, err = readSteps(fileSteps, strings.NewReader("step,start_us,step_time_us,arrive_p99_us\n0,0,1,-3\n"))
	var fe *FileError
	if !errors.As(err, &fe) || fe.Field != "arrive_p99_us" || fe.Line != 2 {
		t.Errorf("negative arrival: %v", err)
	}
}
