package runner

import "testing"

// TestTransfersEitherTransport: Summary.Transfers and Summary.TransferCounts read whichever
// transport's block is set, and nothing without one.
func TestTransfersEitherTransport(t *testing.T) {
	m := &MRCSummary{Flows: 3, FlowsCompleted: 2, QPErrors: 1, RetxPackets: map[string]int64{"timeout": 2, "sack_gap": 5}}
	m.FCTP99Us = 7
	r := &RoCESummary{Flows: 4, FlowsCompleted: 4, RetxPackets: 9}
	r.FCTP99Us = 11
	for _, c := range []struct {
		s     Summary
		p99   float64
		want  TransferCounts
		isNil bool
	}{
		{s: Summary{MRC: m}, p99: 7, want: TransferCounts{Kind: "MRC", Flows: 3, FlowsCompleted: 2, QPErrors: 1, RetxPackets: 7}},
		{s: Summary{RoCE: r}, p99: 11, want: TransferCounts{Kind: "RoCE", Flows: 4, FlowsCompleted: 4, RetxPackets: 9}},
		{isNil: true},
	} {
		tr := c.s.Transfers()
		got, ok := c.s.TransferCounts()
		if c.isNil {
			if tr != nil || ok {
				t.Errorf("no transport: Transfers %v, counts ok %v; want nil, false", tr, ok)
			}
			continue
		}
		if tr == nil || tr.FCTP99Us != c.p99 {
			t.Errorf("%s: Transfers %+v; want FCT p99 %v", c.want.Kind, tr, c.p99)
		}
		if !ok || got.Kind != c.want.Kind || got.Flows != c.want.Flows || got.FlowsCompleted != c.want.FlowsCompleted ||
			got.QPErrors != c.want.QPErrors || got.RetxPackets != c.want.RetxPackets {
			t.Errorf("counts %+v, %v; want %+v", got, ok, c.want)
		}
	}
}
