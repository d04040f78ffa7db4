package report

import (
	"math"
	"testing"
)

// Swept values are placed by value when all are numbers (units scale them), else in order.
func TestSweepAxis(t *testing.T) {
	cases := []struct {
		vals    []string
		xs      []float64
		labels  []string
		numeric bool
	}{
		{[]string{"256KiB", "1MiB", "4MiB"}, []float64{256 << 10, 1 << 20, 4 << 20}, nil, true},
		{[]string{"100G", "400G"}, []float64{100e9, 400e9}, nil, true},
		{[]string{"1", "2", "0.5"}, []float64{1, 2, 0.5}, nil, true},
		{[]string{"2us", "1ms"}, []float64{2, 1000}, nil, true},
		{[]string{"roce", "mrc", "roce"}, []float64{0, 1, 0}, []string{"roce", "mrc"}, false},
		{[]string{"1", "#2"}, []float64{0, 1}, []string{"1", "#2"}, false},
	}
	for _, c := range cases {
		sw := Sweep{Params: []string{"p"}, SeedParam: -1}
		for _, v := range c.vals {
			sw.Values = append(sw.Values, []string{v})
		}
		xs, labels, numeric := sweepAxis(sw, 0)
		if numeric != c.numeric || len(labels) != len(c.labels) {
			t.Errorf("%v: numeric %v labels %v", c.vals, numeric, labels)
			continue
		}
		for i := range xs {
			if math.Abs(xs[i]-c.xs[i]) > 1e-9*math.Abs(c.xs[i]) {
				t.Errorf("%v: x[%d] = %v, want %v", c.vals, i, xs[i], c.xs[i])
			}
		}
	}
}

// MeanCI95 against hand-computed values: t(0.975, 4) = 2.776445.
func TestMeanCI95(t *testing.T) {
	m, h := MeanCI95([]float64{1, 2, 3, 4, 5})
	if m != 3 || math.Abs(h-2.776445*math.Sqrt(2.5)/math.Sqrt(5)) > 1e-5 {
		t.Errorf("MeanCI95 = %v ± %v", m, h)
	}
	if m, h := MeanCI95([]float64{4}); m != 4 || h != 0 {
		t.Errorf("one value: %v ± %v", m, h)
	}
	if m, h := MeanCI95(nil); m != 0 || h != 0 {
		t.Errorf("none: %v ± %v", m, h)
	}
}

// Inconsistent input is an error, not a panic.
func TestWriteSweepErrors(t *testing.T) {
	out := t.TempDir() + "/sweep.html"
	if err := WriteSweep(out, nil, nil, Sweep{Params: []string{"a"}, Values: [][]string{{"1"}}, Y: nil}); err == nil {
		t.Error("values without figures accepted")
	}
	if err := WriteSweep(out, nil, nil, Sweep{Params: []string{"a"}, Values: [][]string{{"1", "2"}}, Y: []float64{1}}); err == nil {
		t.Error("a variant with too many values accepted")
	}
	if err := WriteSweep(out, nil, nil, Sweep{Params: []string{"a"}, Values: [][]string{{"1"}}, Y: []float64{1}}); err == nil {
		t.Error("no results folders accepted")
	}
}
