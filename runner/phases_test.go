package runner

import (
	"bytes"
	"encoding/csv"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/training"
)

// readCSV parses a CSV written by the runner into its header and rows.
func readCSV(t *testing.T, write func(w *bytes.Buffer) error) ([]string, [][]string) {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("csv: %v (%d records)", err, len(recs))
	}
	return recs[0], recs[1:]
}

// phases.csv, across plans and engines: at most MaxPhaseRanks ranks, every step's slowest
// among them; each listed rank's phases tile its step from start to end without gaps or
// overlaps, and their time per category is the step breakdown's (training.StepTrace.Ranks).
func TestPhasesCSV(t *testing.T) {
	for _, c := range []struct {
		name string
		tf   tfCase
	}{
		{"tp8 flow", tfCase{radix: 32, hosts: 32, transport: "{kind: mrc}", steps: 2}},
		{"tp8 pp2 flow", tfCase{radix: 32, hosts: 64, transport: "{kind: roce}", plan: "{tp: 8, pp: 2}", steps: 2}},
		{"tp8 pp2 ideal", tfCase{radix: 32, hosts: 64, transport: "{kind: ideal}", plan: "{tp: 8, pp: 2}"}},
		{"tp8 packet", tfCase{radix: 32, hosts: 16, transport: "{kind: mrc}", engine: "packet"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := c.tf.run(t)
			head, rows := readCSV(t, func(w *bytes.Buffer) error { return res.Training.WritePhasesCSV(w) })
			if strings.Join(head, ",") != strings.Join(PhasesCSVHeader, ",") {
				t.Fatalf("header %v", head)
			}
			tr := res.Training.Result.Trace()
			type key struct{ step, rank int }
			got := map[key]*training.Breakdown{}
			last := map[key]float64{}
			ranks := map[int]bool{}
			for _, r := range rows {
				step, _ := strconv.Atoi(r[0])
				rank, _ := strconv.Atoi(r[1])
				a, _ := strconv.ParseFloat(r[5], 64)
				e, _ := strconv.ParseFloat(r[6], 64)
				k := key{step, rank}
				st := tr.Steps[step]
				if _, ok := got[k]; !ok {
					got[k] = &training.Breakdown{}
					last[k] = st.Start.Micros()
				}
				if math.Abs(a-last[k]) > 1e-6 || e < a {
					t.Fatalf("step %d rank %d: phase %v..%v after one ending at %v", step, rank, a, e, last[k])
				}
				last[k] = e
				ranks[rank] = true
				cat := -1
				for c := training.CatCompute; c < training.NumCategories; c++ {
					if c.String() == r[4] {
						cat = int(c)
					}
				}
				if cat < 0 {
					t.Fatalf("category %q", r[4])
				}
				got[k][cat] += sim.Time(math.Round((e - a) * 1e6))
			}
			if len(ranks) == 0 || len(ranks) > MaxPhaseRanks {
				t.Fatalf("%d ranks listed, want 1..%d", len(ranks), MaxPhaseRanks)
			}
			for _, st := range tr.Steps {
				if !ranks[st.Slowest] {
					t.Errorf("step %d: slowest rank %d not listed", st.Index, st.Slowest)
				}
				for rank := range ranks {
					k := key{st.Index, rank}
					if end := (st.Start + st.Time).Micros(); math.Abs(last[k]-end) > 1e-6 {
						t.Errorf("step %d rank %d: phases end at %v, the step at %v", st.Index, rank, last[k], end)
					}
					for c := range training.NumCategories {
						want, have := st.Ranks[rank][c], got[k][c]
						if d := want - have; d < -1e6 || d > 1e6 { // 1 us: the CSV's rounding
							t.Errorf("step %d rank %d %v: %v in phases.csv, %v in the breakdown", st.Index, rank, c, have, want)
						}
					}
				}
			}
		})
	}
}
