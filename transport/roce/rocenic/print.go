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
	transport.PrintActive(w, s)
	PrintMaxMin(w, s, r)
	fmt.Fprintf(w, "RoCE: go-back-N resent %d packets (%d B) after %d NAKs and %d timeouts; CE %d, CNPs %d sent / %d received, rate at end min %.1f mean %.1f Gb/s; QP errors %d\n",
		s.RetxPackets, s.RetxBytes, r.NAKs, s.Timeouts, r.CEPackets, r.CNPsSent, r.CNPsReceived, r.RateMinGbps, r.RateMeanGbps, s.QPErrors)
	transport.PrintQPErrors(w, s)
}

// PrintMaxMin writes the flow-level reference line for the throughput while all flows were
// active (d of s), matching the routing in force: under the fabric's adaptive routing the
// max-min with every QP spread over its plane's minimal paths (perfect AR), with the static
// ECMP answer beside it; else the max-min over the same ECMP-hashed QP paths. Nothing when
// neither was computed. InfiniBand's block (ibnic) prints it too.
func PrintMaxMin(w io.Writer, s *transport.Summary, d *Detail) {
	pk := transport.FormatFrac(s.ActiveThroughputMeanOfLine)
	switch {
	case d.ActiveMaxMinARMeanOfLine > 0:
		fmt.Fprintf(w, "flow-level max-min with adaptive routing (each QP spread evenly over its plane's minimal paths, perfect AR): mean %s of line (packet level %s)",
			transport.FormatFrac(d.ActiveMaxMinARMeanOfLine), pk)
		if d.ActiveMaxMinMeanOfLine > 0 {
			fmt.Fprintf(w, "; static ECMP hashing of the same QPs: %s", transport.FormatFrac(d.ActiveMaxMinMeanOfLine))
		}
		fmt.Fprintln(w)
	case d.ActiveMaxMinMeanOfLine > 0:
		fmt.Fprintf(w, "flow-level max-min over the same ECMP-hashed QP paths: mean %s of line (packet level %s)\n", transport.FormatFrac(d.ActiveMaxMinMeanOfLine), pk)
	}
}

// label names a RoCE block for comparison tables: "roce (4 QP/peer)".
func label(cfg any) string {
	c, _ := cfg.(*roce.Config)
	if c == nil {
		return Kind
	}
	return fmt.Sprintf("%s (%d QP/peer)", Kind, c.QPsPerPeer)
}
