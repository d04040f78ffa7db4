package training

import (
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// mustModel returns a preset or fails the test.
func mustModel(t testing.TB, name string) Model {
	t.Helper()
	m, err := ModelPreset(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustGPU(t testing.TB, name string) GPU {
	t.Helper()
	g, err := GPUPreset(name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// tinyModel is a small dense model for fast engine tests: 8 layers, hidden 1024, 16
// sequences of 1024 tokens per step.
func tinyModel() Model {
	return Model{Name: "tiny", Layers: 8, Hidden: 1024, Heads: 8, KVHeads: 8, FFN: 4096, Vocab: 32000, SeqLen: 1024, GlobalBatch: 16}
}

// runAnalytic runs one step of j on the closed-form backend at rate and 5 us latency.
func runAnalytic(t testing.TB, j *Job, rate sim.Rate, opts RunOptions) *Trace {
	t.Helper()
	s := sim.New(1)
	b, err := NewAnalyticBackend(s, collective.Model{Latency: 5 * sim.Microsecond, Rate: rate})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := j.Run(s, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// runIdeal runs one step of j through ExecutorBackend on a collective.Ideal network.
func runIdeal(t testing.TB, j *Job, rate sim.Rate, opts RunOptions) *Trace {
	t.Helper()
	s := sim.New(1)
	n := j.World()
	net, err := collective.NewIdeal(s, collective.IdealConfig{Hosts: n, Rate: rate, Latency: 5 * sim.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewExecutorBackend(s, net, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	net.SetSink(b.Delivered)
	tr, err := j.Run(s, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
