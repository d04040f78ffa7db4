package uecnic

import (
	"fmt"
	"io"

	"github.com/lockstepsim/lockstep/transport"
)

// printBlock writes UEC's block of the terminal summary: the completion line, the
// retransmissions by cause, trims, EV use, then the QP errors.
func printBlock(w io.Writer, s *transport.Summary, collective bool) {
	transport.PrintTransfers(w, s, collective, "", "")
	d, ok := s.Detail.(*Detail)
	if ok {
		by := s.RetxPacketsByCause
		fmt.Fprintf(w, "UEC (%s, %s, %d EVs): retransmitted packets: trim NACK %d, SACK gap %d, timeout %d, go-back-N %d; timeouts %d, trims NACKed %d (last hop %d), spurious %d; EVs recycled %d, fresh %d, dropped %d; NSCC decreases %d, quick adapts %d\n",
			d.Delivery, d.LB, d.Paths, by["trim_nack"], by["sack_gap"], by["timeout"], by["go_back_n"], s.Timeouts, d.TrimsNACKed, d.TrimsLastHop, d.Spurious,
			d.EVsRecycled, d.EVsFresh, d.EVsDropped, d.NSCCDecreases, d.NSCCQuickAdapts)
		if d.CC != "" {
			fmt.Fprintf(w, "UEC %s: credit packets %d (%d B granted), credit requests %d, speculative %d B, last-hop trims not taken as congestion %d\n",
				d.CC, d.CreditsSent, d.CreditGrantedBytes, d.CreditRequests, d.SpeculativeBytes, d.LastHopTrimsIgnored)
		}
		if d.PDCsOpened > 0 {
			fmt.Fprintf(w, "UEC PDCs: opened %d, closed %d, most open at one NIC %d; %d waited for one (mean %.1f us)\n",
				d.PDCsOpened, d.PDCsClosed, d.PDCPeakOpen, d.PDCWaits, d.PDCWaitMeanUs)
		}
	}
	transport.PrintQPErrors(w, s)
}
