package collective

import (
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// benchRingSpec is the benchmark case: ring all-reduce of 64 MiB on 1024 ranks, one 64 KiB
// block per rank (one loop, 2046 steps): 5.2 M operations, 2.1 M messages.
func benchRingSpec() Spec {
	sp := NewSpec(AllReduce, 1024, 64<<20)
	sp.Algo = Ring
	return sp
}

// BenchmarkBuildRing1024 measures expanding the ring all-reduce at n = 1024.
func BenchmarkBuildRing1024(b *testing.B) {
	sp := benchRingSpec()
	b.ReportAllocs()
	var ops int
	for i := 0; i < b.N; i++ {
		s, err := Build(sp)
		if err != nil {
			b.Fatal(err)
		}
		ops = s.Len()
	}
	b.ReportMetric(float64(ops), "ops")
	b.ReportMetric(float64(ops)*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkRingAllReduce1024 measures expansion plus execution on the Ideal network at
// n = 1024 (400 Gb/s, 5 us), reporting events and simulated payload bytes per wall second.
func BenchmarkRingAllReduce1024(b *testing.B) {
	sp := benchRingSpec()
	b.ReportAllocs()
	var events, bytes uint64
	var simTime sim.Time
	for i := 0; i < b.N; i++ {
		sch, err := Build(sp)
		if err != nil {
			b.Fatal(err)
		}
		s := sim.New(1)
		net, _ := NewIdeal(s, IdealConfig{Hosts: 1024, Rate: 400 * sim.Gbps, Latency: 5 * sim.Microsecond})
		ex, _ := NewExecutor(s, net, ExecConfig{Hosts: 1024})
		net.SetSink(ex.Delivered)
		comm, _ := RangeComm(0, 1024, 1)
		if _, err := ex.Launch(0, sch, comm, ""); err != nil {
			b.Fatal(err)
		}
		if err := s.Drain(sim.MaxTime); err != nil || !ex.Done() {
			b.Fatal(err, ex.Stuck(5))
		}
		events += s.Events()
		bytes += uint64(net.Bytes)
		simTime = s.Now()
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/sec, "events/s")
	b.ReportMetric(float64(bytes)/sec, "simbytes/s")
	b.ReportMetric(simTime.Micros(), "sim_us")
}
