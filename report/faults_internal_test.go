package report

import (
	"math"
	"strings"
	"testing"
)

// TestReadFaultsTimes: faults.csv's detect_at_us and recover_at_us are absolute simulated
// times, read as they are; a folder from before (detect_us and recover_us, relative to
// at_us) gives the same spans; an absolute time before at_us is an error naming the column.
func TestReadFaultsTimes(t *testing.T) {
	const tail = ",baseline_gbps,during_gbps\n"
	for _, c := range []struct {
		name, csv string
		detect    []float64 // per row; NaN: none
		recover   []float64
		err       string
	}{
		{"absolute", "entry,cycle,action,target,at_us,end_us,detect_at_us,last_retx_at_us,recover_at_us" + tail +
			"0,0,down,h0.p1,30,50,31.5,40,42,400,300\n1,0,flap,p0.t0-0.down3,60,,,,,400,\n",
			[]float64{31.5, math.NaN()}, []float64{42, math.NaN()}, ""},
		{"relative (before)", "entry,cycle,action,target,at_us,end_us,detect_us,last_retx_us,recover_us" + tail +
			"0,0,down,h0.p1,30,50,1.5,10,12,400,300\n1,0,flap,p0.t0-0.down3,60,,,,,400,\n",
			[]float64{31.5, math.NaN()}, []float64{42, math.NaN()}, ""},
		{"absolute before at_us", "entry,cycle,action,target,at_us,end_us,detect_at_us,last_retx_at_us,recover_at_us" + tail +
			"0,0,down,h0.p1,30,50,1.5,10,42,400,300\n", nil, nil, "detect_at_us"},
	} {
		d, err := readFaults("faults.csv", strings.NewReader(c.csv))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v; want one naming %s", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(d.spans) != len(c.detect) {
			t.Fatalf("%s: %d spans; want %d", c.name, len(d.spans), len(c.detect))
		}
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
		for i, s := range d.spans {
			if !same(s.detect, c.detect[i]) || !same(s.recover, c.recover[i]) {
				t.Errorf("%s: row %d detect %v recover %v; want %v, %v", c.name, i, s.detect, s.recover, c.detect[i], c.recover[i])
			}
		}
	}
}
