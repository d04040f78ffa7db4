package training

import (
	"math"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// runSplit runs spec on hosts 0..n-1 with intra-domain messages on an NVLink Ideal and the
// rest on a network Ideal, through ExecutorBackend, and returns the collective's time.
func runSplit(t *testing.T, spec collective.Spec, n, domain int, nvl, net collective.IdealConfig) (sim.Time, *SplitTransport) {
	t.Helper()
	s := sim.New(1)
	nvl.Hosts, net.Hosts = n, n
	inner, err := collective.NewIdeal(s, nvl)
	if err != nil {
		t.Fatal(err)
	}
	outer, err := collective.NewIdeal(s, net)
	if err != nil {
		t.Fatal(err)
	}
	split, err := NewSplitTransport(domain, inner, outer)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewExecutorBackend(s, split, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	inner.SetSink(b.Delivered)
	outer.SetSink(b.Delivered)
	comm, err := collective.RangeComm(0, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	var end sim.Time = -1
	if err := b.Launch(0, spec, comm, "hier", func(now sim.Time) { end = now }); err != nil {
		t.Fatal(err)
	}
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	if end < 0 {
		t.Fatalf("not done:\n%s", b.Stuck(10))
	}
	return end, split
}

// TestSplitHierarchicalAllReduce: a hierarchical all-reduce on 128 servers of 8 GPUs, NVLink
// 450 GB/s per GPU inside a server and 50 GB/s per GPU on the network (both Ideal), 1 GiB.
// With one loop (chunk = S/8, so the three phases run one after the other) the time is within
// 3% of 2(g-1)/g S/B_nvl + 2(N-1)/N (S/g)/B_net = 4.18 + 5.33 = 9.50 ms; with pipelined
// chunks (16 MiB) the NVLink and network phases of different chunks overlap and it is faster
// still; a flat ring over the network (closed form, exact on Ideal) takes 42.9 ms.
func TestSplitHierarchicalAllReduce(t *testing.T) {
	const (
		g, N = 8, 128
		S    = int64(1 << 30)
	)
	nvl := collective.IdealConfig{Rate: 3600 * sim.Gbps, Latency: 500 * sim.Nanosecond}
	net := collective.IdealConfig{Rate: 400 * sim.Gbps, Latency: 500 * sim.Nanosecond}
	want := 2*float64(g-1)/g*float64(S)*8/float64(nvl.Rate) + 2*float64(N-1)/N*float64(S)/g*8/float64(net.Rate)
	hier := func(chunk int64) collective.Spec {
		sp := collective.NewSpec(collective.AllReduce, g*N, S)
		sp.Algo, sp.Inner, sp.Outer, sp.ChunkBytes = collective.Hierarchical, g, N, chunk
		return sp
	}
	got, split := runSplit(t, hier(S/g), g*N, g, nvl, net)
	t.Logf("hierarchical, one loop: %v (formula %.3f ms); %d messages on NVLink, %d on the network", got, want*1e3, split.InnerMessages, split.OuterMessages)
	if d := math.Abs(got.Seconds()-want) / want; d > 0.03 {
		t.Errorf("hierarchical all-reduce took %v, want within 3%% of %.3f ms (off by %.1f%%)", got, want*1e3, 100*d)
	}
	if split.InnerMessages == 0 || split.OuterMessages == 0 {
		t.Errorf("messages: %d inner, %d outer; want both", split.InnerMessages, split.OuterMessages)
	}
	flatSpec := collective.NewSpec(collective.AllReduce, g*N, S)
	flatSpec.Algo = collective.Ring
	flat, err := collective.Pipelined(flatSpec, collective.Model{Rate: net.Rate, Latency: net.Latency})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("flat ring over the network: %v (%.1fx the hierarchical)", flat, flat.Seconds()/got.Seconds())
	if flat < 4*got {
		t.Errorf("flat ring %v is not several times slower than hierarchical %v", flat, got)
	}
	if testing.Short() {
		return
	}
	piped, _ := runSplit(t, hier(16<<20), g*N, g, nvl, net)
	t.Logf("hierarchical, 16 MiB chunks: %v", piped)
	if piped > got {
		t.Errorf("pipelined hierarchical %v slower than one loop %v", piped, got)
	}
}
