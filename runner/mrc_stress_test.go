package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"go.yaml.in/yaml/v3"
)

// stressBand is one row of testdata/stress/bands.yaml.
type stressBand struct {
	File          string     `yaml:"file"`
	JCTOverIdeal  [2]float64 `yaml:"jct_over_ideal"`
	ProbesPerData float64    `yaml:"probes_per_data"`
}

// The MRC stress suite (issue 15) as data: every case in testdata/stress completes every
// transfer with no QP error, its last completion lies in its band of N x wire bytes / line
// rate + base RTT, and probes stay under their share of data packets. The same cases run at
// full size in `lockstep bench` (presets incast-255, incast-1023-2mb).
func TestMRCStressSuite(t *testing.T) {
	raw, err := os.ReadFile("testdata/stress/bands.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var bands []stressBand
	if err := yaml.Unmarshal(raw, &bands); err != nil {
		t.Fatal(err)
	}
	if len(bands) == 0 {
		t.Fatal("no stress bands")
	}
	for _, b := range bands {
		t.Run(b.File, func(t *testing.T) {
			sc, err := scenario.Load(filepath.Join("testdata/stress", b.File))
			if err != nil {
				t.Fatal(err)
			}
			res, err := Run(sc)
			if err != nil {
				t.Fatal(err)
			}
			m := res.Summary.mrcT()
			if m.FlowsCompleted != m.Flows || m.QPErrors != 0 {
				t.Fatalf("%d of %d transfers done, %d QP errors", m.FlowsCompleted, m.Flows, m.QPErrors)
			}
			g := &sc.Traffic[0]
			rate := sc.Topology.Clos.HostLink * sim.Rate(max(sc.Topology.Clos.Planes, 1))
			ideal := rate.TxTime(int64(len(g.Senders))*wireBytes(int64(g.Bytes))).Micros() + m.BaseRTTUs
			r := m.JCTUs / ideal
			probes := float64(m.ProbesSent) / float64(m.DataPackets)
			retx := m.RetxPackets
			t.Logf("%s: JCT %.1f us = %.3f x ideal %.1f us; probes/data %.4f; retransmitted %d of %d data packets (%.1f%%), timeouts %d, EVs assumed bad at end %d",
				b.File, m.JCTUs, r, ideal, probes, retx, m.DataPackets, 100*float64(retx)/float64(m.DataPackets), m.Timeouts, m.EVAssumedBad)
			if r < b.JCTOverIdeal[0] || r > b.JCTOverIdeal[1] {
				t.Errorf("JCT/ideal %.3f outside [%v, %v]", r, b.JCTOverIdeal[0], b.JCTOverIdeal[1])
			}
			if probes > b.ProbesPerData {
				t.Errorf("probes/data %.4f above %v", probes, b.ProbesPerData)
			}
		})
	}
}
