package transport

import (
	"fmt"
	"io"
)

// PrintTransfers writes the completion line of a transport block s for the terminal summary
// from its common figures: per message under a collective, else how many transfers finished,
// JCT and FCT. qps qualifies "N QPs" under a collective and over follows the transfer count
// otherwise ("" for none; RoCE names its QPs there). Plugins' Print hooks call it first.
func PrintTransfers(w io.Writer, s *Summary, collective bool, qps, over string) {
	switch {
	case collective:
		fmt.Fprintf(w, "%s: %d QPs%s carried the messages; message FCT us p50 %.1f  p99 %.1f  max %.1f; base RTT %.2f us\n",
			s.Name, s.Flows, qps, s.FCTP50Us, s.FCTP99Us, s.FCTMaxUs, s.BaseRTTUs)
	case s.FlowsCompleted == 0:
		fmt.Fprintf(w, "%s: none of %d transfers finished%s: no JCT or FCT; base RTT %.2f us\n", s.Name, s.Flows, over, s.BaseRTTUs)
	case s.FlowsCompleted < s.Flows:
		fmt.Fprintf(w, "%s: %d of %d transfers done%s, JCT not reached (%d unfinished); finished FCT us p50 %.1f  p99 %.1f  max %.1f (mean %.3fx, worst %.3fx their ideal); base RTT %.2f us\n",
			s.Name, s.FlowsCompleted, s.Flows, over, s.Flows-s.FlowsCompleted, s.FCTP50Us, s.FCTP99Us, s.FCTMaxUs, s.FCTOverIdealMean, s.FCTOverIdealMax, s.BaseRTTUs)
	default:
		fmt.Fprintf(w, "%s: %d of %d transfers done%s, JCT %.1f us; FCT us p50 %.1f  p99 %.1f  max %.1f (FCT/ideal per flow mean %.3fx, worst %.3fx; the largest transfer's ideal on the longest path %.1f us); base RTT %.2f us\n",
			s.Name, s.FlowsCompleted, s.Flows, over, s.JCTUs, s.FCTP50Us, s.FCTP99Us, s.FCTMaxUs, s.FCTOverIdealMean, s.FCTOverIdealMax, s.IdealFCTUs, s.BaseRTTUs)
	}
}

// PrintActive writes the throughput-while-all-flows-were-active line of s (until the first
// completion, in us; the mean and min over the flows of each one's payload rate as a
// fraction of its NIC's line rate, FormatFrac: 3 significant digits below 0.01; the header
// share of the wire in percent); nothing when it was not measured. When the mean is below
// 0.1 of line (many flows share a bottleneck: an N -> 1 incast gives each sender 1/N) it
// adds the flows' sum in NIC line rates, which says how full the bottleneck ran.
func PrintActive(w io.Writer, s *Summary) {
	if s.ActiveUntilUs <= 0 {
		return
	}
	fmt.Fprintf(w, "throughput while all flows were active (to %.1f us): mean %s, min %s of line rate (payload; headers are %.2f%% of the wire)",
		s.ActiveUntilUs, FormatFrac(s.ActiveThroughputMeanOfLine), FormatFrac(s.ActiveThroughputMinOfLine), s.HeaderOverheadPct)
	if n := s.ActiveFlows; n > 1 && s.ActiveThroughputMeanOfLine < 0.1 {
		fmt.Fprintf(w, "; the %d flows together %s of one NIC's line rate", n, FormatFrac(s.ActiveThroughputMeanOfLine*float64(n)))
	}
	fmt.Fprintln(w)
}

// PrintQPErrors writes one line per QP error listed in s, then the block's closing blank line.
func PrintQPErrors(w io.Writer, s *Summary) {
	for _, e := range s.QPErrorList {
		fmt.Fprintf(w, "QP error: %s\n", e)
	}
	fmt.Fprintln(w)
}
