package training

import (
	"math"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// dipJob is a data-parallel job with a long exposed all-reduce: overlap off, a slow network,
// so every GPU computes, then waits on the network, then runs the optimizer.
func dipJob(t *testing.T, gpus int, g GPU) (*Job, *Trace) {
	t.Helper()
	m := tinyModel()
	m.GlobalBatch = gpus
	j := newJob(t, m, g, Plan{}, gpus, Options{})
	s := sim.New(1)
	b, err := NewAnalyticBackend(s, collective.Model{Rate: 10 * sim.Gbps})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := j.Run(s, b, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return j, tr
}

// TestPowerDip: during an exposed all-reduce every GPU drops from busy to communicating
// power, so the cluster's draw dips by GPUs x (busy - comm) watts: the swing is proportional
// to the GPUs waiting (doubling them doubles it), and with comm power set to idle power the
// dip is GPUs x (busy - idle). The battery holding the draw flat at the mean stores
// (P_high - P_low) T_high T_low / T per step.
func TestPowerDip(t *testing.T) {
	h100 := mustGPU(t, "h100")
	idleComm := h100
	idleComm.CommW = idleComm.IdleW
	for _, c := range []struct {
		gpus int
		g    GPU
	}{{16, h100}, {32, h100}, {32, idleComm}} {
		j, tr := dipJob(t, c.gpus, c.g)
		ps, err := tr.Power(10 * sim.Microsecond)
		if err != nil {
			t.Fatal(err)
		}
		st, pw := tr.Steps[0], ps.Steps[0]
		dip := float64(c.gpus) * (c.g.BusyW - c.g.CommW) / 1e6
		if math.Abs(pw.SwingMW-dip) > 1e-9 {
			t.Errorf("%d GPUs, comm %g W: swing %.6f MW, want %d x (%g - %g) W = %.6f MW", c.gpus, c.g.CommW, pw.SwingMW, c.gpus, c.g.BusyW, c.g.CommW, dip)
		}
		if math.Abs(pw.MaxMW-float64(c.gpus)*c.g.BusyW/1e6) > 1e-9 {
			t.Errorf("max %.6f MW, want every GPU busy", pw.MaxMW)
		}
		// Square wave: high for the compute, low for the exposed all-reduce.
		T := st.Time.Seconds()
		low := st.Mean[CatDP].Seconds()
		want := dip * (T - low) * low / T
		if math.Abs(pw.BatteryMJ-want)/want > 0.01 {
			t.Errorf("battery %.6g MJ, want (P_high - P_low) T_high T_low / T = %.6g MJ", pw.BatteryMJ, want)
		}
		if math.Abs(pw.BatteryRangeMJ-pw.BatteryMJ)/want > 0.01 {
			t.Errorf("one dip: battery range %.6g MJ, want the battery %.6g MJ", pw.BatteryRangeMJ, pw.BatteryMJ)
		}
		// Slew: the edge falls within one or two samples.
		I := 10e-3 // ms
		if pw.SlewMWPerMs < dip/(2*I)-1e-9 || pw.SlewMWPerMs > dip/I+1e-9 {
			t.Errorf("slew %.4g MW/ms, want between %.4g and %.4g", pw.SlewMWPerMs, dip/(2*I), dip/I)
		}
		// The mean is the energy over the step time.
		e := float64(c.gpus) * (c.g.BusyW*st.Mean[CatCompute].Seconds() + c.g.CommW*st.Mean[CatDP].Seconds()) / 1e6
		if math.Abs(pw.EnergyMJ-e)/e > 1e-9 || math.Abs(pw.MeanMW-e/T)/(e/T) > 1e-9 {
			t.Errorf("energy %.6g MJ mean %.6g MW, want %.6g MJ %.6g MW", pw.EnergyMJ, pw.MeanMW, e, e/T)
		}
		t.Logf("%d GPUs, comm %g W: %s (dp exposed %v of %v)", c.gpus, c.g.CommW, ps, st.Mean[CatDP], st.Time)
		_ = j
	}
}

// TestPowerSeriesEnergy: the samples integrate to the step's energy, for a pipelined job with
// bubbles and NVLink TP interleaved in the compute patterns.
func TestPowerSeriesEnergy(t *testing.T) {
	j := job70B(t, true)
	tr := runAnalytic(t, j, 400*sim.Gbps, RunOptions{})
	ps, err := tr.Power(100 * sim.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, p := range ps.MW {
		sum += p * ps.Interval.Seconds()
	}
	last := tr.Steps[0].Time - sim.Time(len(ps.MW)-1)*ps.Interval // the last sample is partial
	sum -= ps.MW[len(ps.MW)-1] * (ps.Interval - last).Seconds()
	if e := ps.Steps[0].EnergyMJ; math.Abs(sum-e)/e > 1e-9 {
		t.Errorf("samples integrate to %.9g MJ, step energy %.9g MJ", sum, e)
	}
	if _, err := tr.Power(0); err == nil {
		t.Error("no error for a zero interval")
	}
	t.Logf("70B on 1024 H100: %s", ps)
}
