package runner

import (
	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lockstepsim/lockstep/sim"
)

// TransferSummary is the part of a transport's summary every transport shares, embedded
// (anonymously, so summary.json inlines its keys at the embedding point) in MRCSummary and
// RoCESummary and filled by fill. Readers take it from Summary.Transfers without asking which
// transport ran. Under a collective workload JCT is the workload's end, the FCT figures are
// per message and the per-flow ideal figures are left out.
type TransferSummary struct {
	BaseRTTUs float64 `json:"base_rtt_us"`
	// JCTUs is when the last transfer was acknowledged (all transfers start at their group's
	// start; the run's clock starts at 0); absent when a transfer never finished (the job did
	// not complete in the run).
	JCTUs float64 `json:"jct_us,omitempty"`
	// Flow completion time: a transfer's post to the acknowledgement of its last byte
	// (collective messages: each message's post to its acknowledgement).
	FCTMeanUs float64 `json:"fct_mean_us,omitempty"`
	FCTP50Us  float64 `json:"fct_p50_us,omitempty"`
	FCTP99Us  float64 `json:"fct_p99_us,omitempty"`
	FCTMaxUs  float64 `json:"fct_max_us,omitempty"`
	// IdealFCTUs is wire bytes / NIC line rate (all planes) + base RTT for the largest
	// transfer: what one flow alone on an idle fabric would take.
	IdealFCTUs float64 `json:"ideal_fct_us,omitempty"`
	// FCT over ideal, per flow: mean and worst.
	FCTOverIdealMean float64 `json:"fct_over_ideal_mean,omitempty"`
	FCTOverIdealMax  float64 `json:"fct_over_ideal_max,omitempty"`
}

// TransferCounts are the counts every transport keeps, read from whichever transport's
// summary is set (Summary.TransferCounts); in summary.json they sit at each transport's own
// place in its block.
type TransferCounts struct {
	Kind           string // "MRC", "RoCE"
	Flows          int
	FlowsCompleted int
	QPErrors       int
	QPErrorList    []string
	RetxPackets    int64 // packets sent again, every cause
}

// Transfers returns the common part of the transport's summary, nil for a run without a
// transport (raw traffic, a workload on the analytic or flow-level engine).
func (s *Summary) Transfers() *TransferSummary {
	switch {
	case s.MRC != nil:
		return &s.MRC.TransferSummary
	case s.RoCE != nil:
		return &s.RoCE.TransferSummary
	}
	return nil
}

// TransferCounts returns the transport's transfer and QP-error counts; false for a run
// without a transport.
func (s *Summary) TransferCounts() (TransferCounts, bool) {
	switch {
	case s.MRC != nil:
		m := s.MRC
		var retx int64
		for _, v := range m.RetxPackets {
			retx += v
		}
		return TransferCounts{"MRC", m.Flows, m.FlowsCompleted, m.QPErrors, m.QPErrorList, retx}, true
	case s.RoCE != nil:
		r := s.RoCE
		return TransferCounts{"RoCE", r.Flows, r.FlowsCompleted, r.QPErrors, r.QPErrorList, r.RetxPackets}, true
	}
	return TransferCounts{}, false
}

// fctAcc gathers the per-flow FCT figures of the finished transfers a summary covers.
type fctAcc struct {
	n                  int
	sumFCT             int64
	sumRatio, maxRatio float64
	last               sim.Time // the latest completion
}

// add counts a transfer that started at start, finished at done and would take ideal alone
// on an idle fabric.
func (a *fctAcc) add(start, done, ideal sim.Time) {
	fct := done - start
	a.n++
	a.sumFCT += int64(fct)
	r := float64(fct) / float64(ideal)
	a.sumRatio += r
	a.maxRatio = max(a.maxRatio, round3(r))
	a.last = max(a.last, done)
}

// fill sets the common figures: the base RTT, the ideal FCT of the largest transfer, the
// per-flow figures of a (JCT only when allDone, every transfer finished), and the FCT
// percentiles of the histogram h in nanoseconds with its exact maximum hMax. Under a
// collective workload (collective) JCT is the run's end end, the mean FCT is the histogram's
// and the ideal is left out.
func (t *TransferSummary) fill(baseRTT, ideal sim.Time, a *fctAcc, allDone bool, h *hdrhistogram.Histogram, hMax int64, collective bool, end sim.Time) {
	t.BaseRTTUs, t.IdealFCTUs = us(baseRTT), us(ideal)
	t.FCTOverIdealMax = a.maxRatio
	if a.n > 0 {
		t.FCTMeanUs = us(sim.Time(a.sumFCT / int64(a.n)))
		t.FCTOverIdealMean = round3(a.sumRatio / float64(a.n))
		if allDone {
			t.JCTUs = us(a.last)
		}
	}
	if collective {
		t.IdealFCTUs = 0
		t.JCTUs = us(end)
		t.FCTMeanUs = round3(h.Mean() / 1e3)
	}
	t.FCTP50Us, t.FCTP99Us, t.FCTMaxUs = fctPercentiles(h, hMax)
}
