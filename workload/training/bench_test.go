package training

import (
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// BenchmarkStep70B1024 simulates one step of Llama-3-70B on 1,024 H100s (TP 8, PP 4, DP 32,
// 16 microbatches, 400 Gb/s per GPU, 5 us) on each backend, reporting the simulated step
// time and the events per second.
func BenchmarkStep70B1024(b *testing.B) {
	for _, c := range []struct {
		name string
		run  func(testing.TB, *Job, sim.Rate, RunOptions) *Trace
	}{{"analytic", runAnalytic}, {"ideal", runIdeal}} {
		b.Run(c.name, func(b *testing.B) {
			j := job70B(b, true)
			var st StepTrace
			for i := 0; i < b.N; i++ {
				st = c.run(b, j, 400*sim.Gbps, RunOptions{}).Steps[0]
			}
			b.ReportMetric(st.Time.Seconds()*1e3, "step_ms")
		})
	}
}

// BenchmarkStepDeepSeekV3 simulates one step of DeepSeek-V3 on 2,048 H100s (PP 16, EP 64,
// DP 128, ZeRO: DeepSeek's own layout, §3.2 of its report) on the analytic backend.
func BenchmarkStepDeepSeekV3(b *testing.B) {
	j := newJob(b, mustModel(b, "deepseek-v3"), mustGPU(b, "h100"), Plan{PP: 16, EP: 64, ZeRO: 1, StageLayers: dsStages}, 2048, Options{Overlap: true})
	var st StepTrace
	for i := 0; i < b.N; i++ {
		st = runAnalytic(b, j, 400*sim.Gbps, RunOptions{}).Steps[0]
	}
	b.ReportMetric(st.Time.Seconds()*1e3, "step_ms")
}
