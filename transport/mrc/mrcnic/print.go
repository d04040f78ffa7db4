package mrcnic

import (
	"fmt"
	"io"

	"github.com/lockstepsim/lockstep/transport"
)

// printBlock writes MRC's block of the terminal summary: the completion line, the throughput while
// all flows were active, the retransmissions by cause, EV states, probes and loss
// attribution, then the QP errors.
func printBlock(w io.Writer, s *transport.Summary, collective bool) {
	transport.PrintTransfers(w, s, collective, "", "")
	transport.PrintActive(w, s)
	m, ok := s.Detail.(*Detail)
	if !ok {
		transport.PrintQPErrors(w, s)
		return
	}
	by := s.RetxPacketsByCause
	fmt.Fprintf(w, "MRC: retransmitted packets: trim NACK %d, SACK gap %d, timeout %d, out of window %d; timeouts %d, trims NACKed %d, probes %d, QP errors %d; EVs at end good %d, skip %d, assumed bad %d, denied %d\n",
		by["trim_nack"], by["sack_gap"], by["timeout"], by["out_of_window"], s.Timeouts, m.TrimsNACKed, m.ProbesSent, s.QPErrors, m.EVGood, m.EVSkip, m.EVAssumedBad, m.EVDenied)
	fmt.Fprintf(w, "MRC: retransmitted %.3f MB of data; probes %.3f%% of data packets; untrimmed losses: %d charged to paths (%d EV retirements), %d excused as congestion, %d with nothing later delivered; most QPs into one receiver %d\n",
		float64(s.RetxBytes)/1e6, m.ProbesPerDataPct, m.LossStrikes, m.EVRetirements, m.LossesCongestion, m.LossesUnattributed, m.RxMaxActiveQPs)
	transport.PrintQPErrors(w, s)
}
