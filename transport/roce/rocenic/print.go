package rocenic

import (
	"fmt"
	"io"

	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// printBlock writes RoCE's block of the terminal summary: the completion line naming the QPs, the
// throughput while all flows were active (and its flow-level max-min counterpart), the
// go-back-N and DCQCN figures, then the QP errors.
func printBlock(w io.Writer, s *transport.Summary, collective bool) {
	r, ok := s.Detail.(*Detail)
	if !ok {
		transport.PrintTransfers(w, s, collective, "", "")
		transport.PrintQPErrors(w, s)
		return
	}
	perPeer := fmt.Sprintf(" (%d per peer per plane)", r.QPsPerPeer)
	transport.PrintTransfers(w, s, collective, perPeer, fmt.Sprintf(" over %d QPs%s", r.QPs, perPeer))
	transport.PrintActive(w, s.ActiveUntilUs, s.ActiveThroughputMeanOfLine, s.ActiveThroughputMinOfLine, s.HeaderOverheadPct)
	if r.ActiveMaxMinMeanOfLine > 0 {
		fmt.Fprintf(w, "flow-level max-min over the same ECMP-hashed QP paths: mean %.3f of line (packet level %.3f)\n", r.ActiveMaxMinMeanOfLine, s.ActiveThroughputMeanOfLine)
	}
	fmt.Fprintf(w, "RoCE: go-back-N resent %d packets (%d B) after %d NAKs and %d timeouts; CE %d, CNPs %d sent / %d received, rate at end min %.1f mean %.1f Gb/s; QP errors %d\n",
		s.RetxPackets, s.RetxBytes, r.NAKs, s.Timeouts, r.CEPackets, r.CNPsSent, r.CNPsReceived, r.RateMinGbps, r.RateMeanGbps, s.QPErrors)
	transport.PrintQPErrors(w, s)
}

// label names a RoCE block for comparison tables: "roce (4 QP/peer)".
func label(cfg any) string {
	c, _ := cfg.(*roce.Config)
	if c == nil {
		return Kind
	}
	return fmt.Sprintf("%s (%d QP/peer)", Kind, c.QPsPerPeer)
}
