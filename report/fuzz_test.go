package report

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"testing"
)

// Every reader either parses its input or returns a *FileError naming the file; none panics,
// and what it parses holds the readers' invariants. Seeds: the synthetic run's files (as the
// runner writes them), the real runs' headers, and a few broken ones.

// checkReadErr fails unless err is nil or a *FileError naming file.
func checkReadErr(t *testing.T, file string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var fe *FileError
	if !errors.As(err, &fe) || fe.File != file {
		t.Fatalf("error %v (%T) is not a *FileError naming %s", err, err, file)
	}
	if fe.Err == nil {
		t.Fatal("FileError without a cause")
	}
}

func seed(f *testing.F, file string, extra ...string) {
	f.Add(defaultSynth().files()[file])
	body := defaultSynth().files()[file]
	if head, rest, ok := strings.Cut(body, "\n"); ok {
		f.Add(head + "\n")
		if line, _, ok := strings.Cut(rest, "\n"); ok {
			f.Add(head + "\n" + line + "\n" + line) // no final newline
			f.Add(head + "\n" + strings.Replace(line, ",", ",\"", 1))
		}
	}
	for _, e := range extra {
		f.Add(e)
	}
}

func FuzzReadFlows(f *testing.F) {
	seed(f, fileFlows, "fct_us\n1e308\n-0\n", "fct_us\nNaN\n", "fct_us,fct_us\n")
	f.Fuzz(func(t *testing.T, in string) {
		d, err := readFlows(fileFlows, strings.NewReader(in))
		checkReadErr(t, fileFlows, err)
		if err != nil {
			return
		}
		if !slices.IsSorted(d.fct) || len(d.fct)+d.unfinished+d.raw != d.rows || len(d.goodput) > d.raw || !slices.IsSorted(d.goodput) {
			t.Fatalf("flows: %d fct (sorted %v) + %d unfinished + %d raw != %d rows", len(d.fct), slices.IsSorted(d.fct), d.unfinished, d.raw, d.rows)
		}
		for _, v := range d.fct {
			if v < 0 {
				t.Fatalf("negative fct %v accepted", v)
			}
		}
		pts := cdfPoints(d.fct, 16)
		for i := 1; i < len(pts); i++ {
			if pts[i].Y < pts[i-1].Y || pts[i].X < pts[i-1].X {
				t.Fatalf("CDF not monotone at %d: %v", i, pts)
			}
		}
	})
}

// maxDrawnInput bounds the inputs FuzzReadLinks and FuzzReadPowerSteps read and draw: drawing a
// figure costs 1 to 3 ms whatever its data, and the fuzzer minimises every new input by
// thousands of executions, so a seed of tens of kilobytes (the default synthetic run's
// links.csv is 78 KB) kept each minimisation busy for up to a minute and the fuzzer ran a
// handful of new inputs in 30 s. Longer files are the unit tests' (the synthetic runs and the
// real runs' folders); every row format fits well within the bound.
const maxDrawnInput = 2048

// tinySynth is the synthetic run cut down to fuzz seeds of a few hundred bytes: 3 intervals,
// 2 switch ports per tier.
func tinySynth() synthRun {
	s := defaultSynth()
	s.intervals, s.ports, s.flows = 3, 2, 4
	return s
}

// firstLines is the header and the first n rows of a CSV body.
func firstLines(body string, n int) string {
	lines := strings.SplitAfter(body, "\n")
	return strings.Join(lines[:min(len(lines), n+1)], "")
}

func FuzzReadLinks(f *testing.F) {
	links := tinySynth().files()[fileLinks]
	f.Add(firstLines(links, 26))
	f.Add(firstLines(links, 1))
	f.Add("start_us,end_us,port,plane,tier,tx_bytes,queue_max_bytes\n0,1,a,0,-1,5,0\n0,2,a,0,-1,5,7\n")
	f.Add("start_us,end_us,port,plane,tier,tx_bytes,queue_max_bytes\n0,1e308,a,0,-1,5,0\n1,NaN,a,0,0,-5,7")
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > maxDrawnInput {
			t.Skip()
		}
		d, err := readLinks(fileLinks, strings.NewReader(in))
		checkReadErr(t, fileLinks, err)
		if err != nil {
			return
		}
		if !slices.IsSortedFunc(d.intervals, func(a, b interval) int { return cmp.Compare(a.start, b.start) }) {
			t.Fatal("intervals not in time order")
		}
		for _, iv := range d.intervals {
			if !(iv.end > iv.start) {
				t.Fatalf("interval %+v", iv)
			}
		}
		if len(d.nicTx) != len(d.planes) {
			t.Fatal("series and their keys disagree")
		}
		for _, c := range d.classes {
			if len(c.cap) != len(c.planes) || len(c.tx) != len(c.planes) {
				t.Fatalf("class %s: %d rates, %d series for %d planes", c.name(), len(c.cap), len(c.tx), len(c.planes))
			}
		}
		n := len(d.intervals)
		rows, maxQ := d.queueRows(n, 8)
		for _, r := range rows {
			if len(r.q) != n || r.peak > maxQ {
				t.Fatalf("queue row %s: %d cells for %d intervals, peak %v of %v", r.label, len(r.q), n, r.peak, maxQ)
			}
		}
		// Drawing what was read never fails.
		if _, err := utilFigure(d, nil, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := queueFigure(d, nil, 0); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzReadPauses(f *testing.F) {
	seed(f, filePauses, "time_us,port,node,paused_frac,pause_events\n0,x,,1,0\n0,x,,1,0\n")
	f.Fuzz(func(t *testing.T, in string) {
		d, err := readPauses(filePauses, strings.NewReader(in))
		checkReadErr(t, filePauses, err)
		if err != nil {
			return
		}
		if !slices.IsSorted(d.times) || len(d.total) != len(d.times) || len(d.events) != len(d.times) || len(d.paused) != len(d.tiers) {
			t.Fatal("pause series and their times disagree")
		}
		if _, err := pausesFigure(d, nil, 0, 0); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzReadEVStates(f *testing.F) {
	seed(f, fileEV)
	f.Fuzz(func(t *testing.T, in string) {
		d, err := readEVStates(fileEV, strings.NewReader(in))
		checkReadErr(t, fileEV, err)
		if err != nil {
			return
		}
		for _, c := range d.counts {
			if len(c) != len(d.times) {
				t.Fatal("EV counts and times disagree")
			}
		}
		if _, err := evFigure(d, nil, 0); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzReadFaults(f *testing.F) {
	seed(f, fileFaults, "action,target,at_us,end_us\ndown,x,5,5\n")
	f.Fuzz(func(t *testing.T, in string) {
		d, err := readFaults(fileFaults, strings.NewReader(in))
		checkReadErr(t, fileFaults, err)
		if err != nil {
			return
		}
		for _, s := range d.spans {
			if s.at < 0 || s.end < s.at {
				t.Fatalf("span %+v", s)
			}
		}
		if _, err := faultFigure(d, 0); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzReadCollectives(f *testing.F) {
	seed(f, fileCollectives)
	f.Fuzz(func(t *testing.T, in string) {
		rt, err := readRawTable(fileCollectives, strings.NewReader(in), 3)
		checkReadErr(t, fileCollectives, err)
		if err == nil && len(rt.Rows) > 3 {
			t.Fatalf("%d rows past the limit of 3", len(rt.Rows))
		}
	})
}

func FuzzReadSummary(f *testing.F) {
	seed(f, fileSummary, "{}", "[]", "", "{\"a\":{\"b\":[1,{\"c\":null}]}}", "{\"a\":1,\"a\":2}", "{\"a\" 1}")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := readSummary(fileSummary, strings.NewReader(in))
		checkReadErr(t, fileSummary, err)
		if err != nil {
			var fe *FileError
			errors.As(err, &fe)
			if fe.Line < 1 || fe.Column < 1 {
				t.Fatalf("summary error without a place: %v", err)
			}
			return
		}
		for i, f := range s.figs {
			if s.at[f.path] != i {
				t.Fatalf("index of %s is %d, want %d", f.path, s.at[f.path], i)
			}
		}
		_ = headline(s)
	})
}

func FuzzReadPowerSteps(f *testing.F) {
	f.Add(firstLines(trainingFiles()[filePower], 6), firstLines(trainingFiles()[fileSteps], 3))
	f.Add("time_us,power_mw\n0,0\n", "step,start_us,step_time_us\n0,0,0\n")
	f.Add("time_us,power_mw\n5,1\n5,2\n", "step,start_us,step_time_us,simulated,compute_us\n0,1e300,1e300,0,1e300\n")
	f.Fuzz(func(t *testing.T, power, steps string) {
		if len(power)+len(steps) > maxDrawnInput {
			t.Skip()
		}
		p, err := readPower(filePower, strings.NewReader(power))
		checkReadErr(t, filePower, err)
		s, err2 := readSteps(fileSteps, strings.NewReader(steps))
		checkReadErr(t, fileSteps, err2)
		if err2 == nil {
			if s.simulated > s.rows || len(s.steps) > s.rows {
				t.Fatalf("steps: %d simulated, %d kept of %d rows", s.simulated, len(s.steps), s.rows)
			}
			if _, err := stepsFigure(s); err != nil {
				t.Fatal(err)
			}
		}
		if err == nil {
			if !slices.IsSorted(p.times) || len(p.mw) != len(p.times) {
				t.Fatal("power samples out of order")
			}
			if err2 != nil {
				s = nil
			}
			if _, err := powerFigure(p, s, nil); err != nil {
				t.Fatal(err)
			}
		}
	})
}
