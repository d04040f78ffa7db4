package report

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// phasesCSV builds a phases.csv of ranks ranks x steps steps, each step 1000 us: compute,
// then tp, then dp, then the bubble at the step's end; rank r computes 5 r us longer.
func phasesCSV(ranks, steps int) string {
	var b strings.Builder
	b.WriteString("step,rank,coord,chosen,category,start_us,end_us\n")
	for r := range ranks {
		for s := range steps {
			t0 := float64(s) * 1000
			c := 400 + 5*float64(r)
			fmt.Fprintf(&b, "%d,%d,tp=%d dp=0 pp=0,spread,compute,%g,%g\n", s, r, r, t0, t0+c)
			fmt.Fprintf(&b, "%d,%d,tp=%d dp=0 pp=0,spread,tp,%g,%g\n", s, r, r, t0+c, t0+c+100)
			fmt.Fprintf(&b, "%d,%d,tp=%d dp=0 pp=0,spread,dp,%g,%g\n", s, r, r, t0+c+100, t0+c+300)
			fmt.Fprintf(&b, "%d,%d,tp=%d dp=0 pp=0,spread,bubble,%g,%g\n", s, r, r, t0+c+300, t0+1000)
		}
	}
	return b.String()
}

// readPhases: rows by rank, in order of first appearance; malformed cells are FileErrors;
// more than maxGanttRanks ranks are counted, not kept.
func TestReadPhases(t *testing.T) {
	for _, c := range []struct {
		name      string
		in        string
		ranks     int
		dropped   int
		errSubstr string
	}{
		{"one rank", phasesCSV(1, 1), 1, 0, ""},
		{"16 ranks 3 steps", phasesCSV(16, 3), 16, 0, ""},
		{"past the bound", phasesCSV(maxGanttRanks+3, 1), maxGanttRanks, 3 * 4, ""},
		{"header only", "step,rank,category,start_us,end_us\n", 0, 0, ""},
		{"missing column", "step,rank,category,start_us\n0,0,compute,0\n", 0, 0, "end_us"},
		{"bad category", "step,rank,category,start_us,end_us\n0,0,lunch,0,1\n", 0, 0, "lunch"},
		{"end before start", "step,rank,category,start_us,end_us\n0,0,compute,5,1\n", 0, 0, "before its start"},
		{"negative rank", "step,rank,category,start_us,end_us\n0,-1,compute,0,1\n", 0, 0, "negative"},
		{"negative start", "step,rank,category,start_us,end_us\n0,0,compute,-1,1\n", 0, 0, "negative"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := readPhases(filePhases, strings.NewReader(c.in))
			if c.errSubstr != "" {
				var fe *FileError
				if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), c.errSubstr) {
					t.Fatalf("err %v, want a FileError with %q", err, c.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(d.ranks) != c.ranks || d.dropped != c.dropped {
				t.Fatalf("%d ranks, %d dropped; want %d, %d", len(d.ranks), d.dropped, c.ranks, c.dropped)
			}
			for i, r := range d.ranks {
				if r.rank != i {
					t.Fatalf("rank %d at %d: not in order of appearance", r.rank, i)
				}
			}
		})
	}
}

// The Gantt: one row label per rank, a step boundary per step after the first, the legend
// only the categories drawn, every rectangle in one of their colours; no data without the file
// or its rows.
func TestGanttFigure(t *testing.T) {
	for _, c := range []struct{ ranks, steps int }{{1, 1}, {4, 2}, {16, 3}, {16, 12}, {maxGanttRanks, 1}} {
		t.Run(fmt.Sprintf("%dx%d", c.ranks, c.steps), func(t *testing.T) {
			d, err := readPhases(filePhases, strings.NewReader(phasesCSV(c.ranks, c.steps)))
			if err != nil {
				t.Fatal(err)
			}
			f, err := ganttFigure(d)
			if err != nil || f.SVG == "" || f.Note != "" {
				t.Fatalf("%v %+v", err, f)
			}
			svg := string(f.SVG)
			if !strings.HasPrefix(svg, `<svg class="plot" id="`+idGantt+`"`) || strings.Contains(svg, "<script") {
				t.Fatalf("svg starts %.80q", svg)
			}
			if n := strings.Count(svg, ">rank "); n != c.ranks {
				t.Errorf("%d row labels, want %d", n, c.ranks)
			}
			if n := strings.Count(svg, `stroke-dasharray="3,2"`); n != c.steps-1 {
				t.Errorf("%d step boundaries, want %d", n, c.steps-1)
			}
			colours := map[string]bool{}
			for _, k := range []int{0, 1, 3, 6} { // compute, tp, dp, bubble
				colours[hexColor(seriesColor(k))] = true
				if !strings.Contains(svg, ">"+phaseCats[k].name+"</text>") {
					t.Errorf("legend lacks %s", phaseCats[k].name)
				}
			}
			for _, k := range []int{2, 4, 5, 7} {
				if strings.Contains(svg, ">"+phaseCats[k].name+"</text>") {
					t.Errorf("legend lists %s, never drawn", phaseCats[k].name)
				}
			}
			for _, part := range strings.Split(svg, `fill="`)[1:] {
				if col := part[:7]; !colours[col] {
					t.Fatalf("a rectangle in %s, no category's colour", col)
				}
			}
		})
	}
	if f, _ := ganttFigure(nil); !strings.Contains(f.Note, filePhases) {
		t.Errorf("no file: note %q", f.Note)
	}
	d, _ := readPhases(filePhases, strings.NewReader("step,rank,category,start_us,end_us\n"))
	if f, _ := ganttFigure(d); !strings.Contains(f.Note, "no rows") {
		t.Errorf("no rows: note %q", f.Note)
	}
}

// The step series places a fault event within its step at its time, and marks restarts.
func TestStepSeriesFaultTimes(t *testing.T) {
	steps := "step,start_us,step_time_us,events\n0,0,1000,\n1,1000,3000,0.500 ms faults[0] down h0.p0\n2,4000,1000,\n"
	sum := `{"training": {"mfu": 0.4}, "training_faults": {"events": [
	  {"at_us": 1500, "step": 1, "action": "down", "applied": true},
	  {"at_us": 2500, "step": 1, "action": "up", "applied": true},
	  {"at_us": 9000, "step": -1, "action": "down", "applied": false}],
	 "restarts": [{"at_us": 4500, "step": 2, "cause": "faults[0]: QPs gave up"}],
	 "steps": [{"step": 0, "start_us": 0, "end_us": 1000}, {"step": 1, "start_us": 1000, "end_us": 4000},
	   {"step": 2, "start_us": 4000, "end_us": 5000}]}}`
	st, err := readSteps(fileSteps, strings.NewReader(steps))
	if err != nil {
		t.Fatal(err)
	}
	s, err := readSummary(fileSummary, strings.NewReader(sum))
	if err != nil {
		t.Fatal(err)
	}
	ft := readTrainingFaults(s)
	if len(ft.events) != 2 || len(ft.restarts) != 1 {
		t.Fatalf("%d events, %d restarts; want 2, 1", len(ft.events), len(ft.restarts))
	}
	for _, c := range []struct {
		step int
		at   float64
		want float64
	}{{1, 1000, 0.5}, {1, 2500, 1}, {1, 4000, 1.5}, {1, 9999, 1.5}, {2, 4500, 2}, {7, 1, 7}} {
		if x := ft.stepX(c.step, c.at); x != c.want {
			t.Errorf("step %d at %v: x %v, want %v", c.step, c.at, x, c.want)
		}
	}
	f, err := stepSeriesFigure(st, s)
	if err != nil || f.SVG == "" {
		t.Fatalf("%v %+v", err, f)
	}
	for _, want := range []string{"R1 step 2 at 4.5 ms: faults[0]: QPs gave up", "E1 step 1", "at its event's time"} {
		if !strings.Contains(f.Caption, want) {
			t.Errorf("caption lacks %q: %s", want, f.Caption)
		}
	}
}
