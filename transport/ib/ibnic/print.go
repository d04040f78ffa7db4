package ibnic

import (
	"fmt"
	"io"

	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/ib"
	"github.com/lockstepsim/lockstep/transport/roce/rocenic"
)

// printBlock writes InfiniBand's block of the terminal summary: the completions, the
// throughput while all flows were active and its flow-level reference for the routing in
// force (rocenic.PrintMaxMin), the go-back-N figures, IB CC's marks and BECNs when any, the
// credits line (always at packet level: the ports blocked, "no port blocked", or off), then
// the QP errors.
func printBlock(w io.Writer, s *transport.Summary, collective bool) {
	transport.PrintTransfers(w, s, collective, "", "")
	transport.PrintActive(w, s)
	d, _ := s.Detail.(*Detail)
	if d != nil && d.Detail != nil {
		rocenic.PrintMaxMin(w, s, d.Detail)
	}
	fmt.Fprintf(w, "InfiniBand: go-back-N resent %d packets (%d B) after %d timeouts; QP errors %d\n", s.RetxPackets, s.RetxBytes, s.Timeouts, s.QPErrors)
	if d != nil && d.Detail != nil && d.CEPackets > 0 {
		fmt.Fprintf(w, "InfiniBand CC: %d FECN-marked data packets, %d BECNs; injection rate at end min %.1f, mean %.1f Gb/s\n", d.CEPackets, d.CNPsSent, d.RateMinGbps, d.RateMeanGbps)
	}
	switch {
	case d == nil:
	case d.CreditBlockedPorts > 0:
		fmt.Fprintf(w, "InfiniBand credits: %d ports blocked for credits, %.1f us in all; most %s, %.1f us (credits.csv)\n", d.CreditBlockedPorts, d.CreditBlockedUsTotal, d.CreditBlockedMaxPort, d.CreditBlockedUsMax)
	case d.CreditsEnabled:
		fmt.Fprintln(w, "InfiniBand credits: on, no port blocked (credits.csv)")
	default:
		fmt.Fprintln(w, "InfiniBand credits: off (transport.ib.credits.enabled false): links are lossy")
	}
	transport.PrintQPErrors(w, s)
}

// label names an IB block: "ib (1 QP/peer)".
func label(cfg any) string {
	c, _ := cfg.(*ib.Config)
	if c == nil {
		return Kind
	}
	return fmt.Sprintf("%s (%d QP/peer)", Kind, max(1, c.QPsPerPeer))
}
