package runner

import (
	"github.com/lockstepsim/lockstep/sim"
)

// RoCESummary is the RoCEv2 transport's headline figures (units in the keys). Under a
// collective workload Flows counts QPs and FlowsCompleted those whose every message was
// placed, JCT is the workload's end, the FCT figures are per message and the per-flow ideal
// figures are left out.
type RoCESummary struct {
	Flows          int      `json:"flows"`
	FlowsCompleted int      `json:"flows_completed"`
	QPs            int      `json:"qps"`
	QPsPerPeer     int      `json:"qps_per_peer"`
	QPErrors       int      `json:"qp_errors"`
	QPErrorList    []string `json:"qp_error_list,omitempty"` // the first few, verbatim
	// Warnings are the pre-run checks that failed (roceChecks): ECN that cannot mark before
	// PFC pauses, a local ACK timeout shorter than the worst paused path's drain time.
	Warnings []string `json:"warnings,omitempty"`

	// Base RTT, JCT, FCT percentiles and FCT over ideal.
	TransferSummary
	// Throughput while all flows are active: each traffic flow's payload placed from its
	// start to the first flow's completion (ActiveUntilUs), as a fraction of the NIC line
	// rate (all planes); mean and min over the flows, and how many ran at about 1, 1/2, 1/3
	// or less than 1/3 of line (nearest share, the quantisation ECMP collisions produce).
	ActiveUntilUs              float64 `json:"active_until_us,omitempty"`
	ActiveThroughputMeanOfLine float64 `json:"active_throughput_mean_of_line,omitempty"`
	ActiveThroughputMinOfLine  float64 `json:"active_throughput_min_of_line,omitempty"`
	// ActiveMaxMinMeanOfLine is the flow-level answer to the same figure: each QP's stripe
	// as a fluid flow on its ECMP-hashed path at max-min fair rates (the flow engine), each
	// flow's payload placed by the first flow's completion over its time (activeMaxMin);
	// when every flow starts together and the run has no faults.
	ActiveMaxMinMeanOfLine float64 `json:"active_maxmin_mean_of_line,omitempty"`
	// ActiveShares counts flows by nearest share: [about 1, about 1/2, about 1/3, below].
	ActiveShares []int `json:"active_shares_1_half_third_less,omitempty"`
	// HeaderOverheadPct is header / wire bytes of a full data packet.
	HeaderOverheadPct float64 `json:"header_overhead_pct"`

	DataPackets int64 `json:"data_packets"`
	// Go-back-N: packets and wire bytes sent again, and what triggered it.
	RetxPackets int64 `json:"retx_packets"`
	RetxBytes   int64 `json:"retx_bytes"`
	NAKs        int64 `json:"naks_received"`
	Timeouts    int64 `json:"timeouts"`
	// DCQCN: CE-marked data packets received, CNPs sent (at most one per cnp_interval per QP)
	// and received, and the senders' rates at the end (min and mean over QPs that sent).
	CEPackets      int64   `json:"ce_packets"`
	CNPsSent       int64   `json:"cnps_sent"`
	CNPsReceived   int64   `json:"cnps_received"`
	RateMinGbps    float64 `json:"rate_min_gbps_at_end"`
	RateMeanGbps   float64 `json:"rate_mean_gbps_at_end"`
	OutOfOrderRecv int64   `json:"out_of_order_received"`

	// Loss-driven retransmissions (go-back-N after a NAK or a timeout).
	LossSpan
}

// idealFCT is a transfer of b payload bytes alone on an idle fabric over a path of hops switch
// hops (idealTransfer): its wire bytes (one RETH per transfer) at the NIC line rate (all
// planes) plus the last packet's round trip less its first serialisation.
func (r *roceNet) idealFCT(b int64, hops int) sim.Time {
	cfg := &r.cfg
	pay := int64(cfg.PayloadBytes)
	n := (b + pay - 1) / pay
	wire := b + n*int64(cfg.HeaderBytes) + 16
	full := int64(cfg.HeaderBytes + cfg.PayloadBytes)
	return idealTransfer(r.layout.Params(), r.portRate*sim.Rate(r.planes), hops, wire, min(full, wire), cfg.AckWire())
}

// summary gathers the RoCE figures over the run that ended at end.
func (r *roceNet) summary(end sim.Time, faults []FaultEvent) *RoCESummary {
	cfg := &r.cfg
	s := &RoCESummary{Flows: len(r.flows), QPs: len(r.qps), QPsPerPeer: cfg.QPsPerPeer}
	full := cfg.HeaderBytes + cfg.PayloadBytes
	s.HeaderOverheadPct = round3(100 * float64(cfg.HeaderBytes) / float64(full))
	var maxBytes int64
	for _, f := range r.flows {
		maxBytes = max(maxBytes, f.bytes)
	}
	var acc fctAcc
	for _, f := range r.flows {
		if f.done == 0 {
			continue
		}
		s.FlowsCompleted++
		acc.add(f.start, f.done, r.idealFCT(f.bytes, f.hops))
	}
	allDone := s.FlowsCompleted == s.Flows
	if n := len(r.activeTput); n > 0 {
		s.ActiveUntilUs = us(r.activeAt)
		lo, sum := r.activeTput[0], 0.0
		s.ActiveShares = make([]int, 4)
		for _, x := range r.activeTput {
			lo = min(lo, x)
			sum += x
			switch {
			case x >= 0.75:
				s.ActiveShares[0]++
			case x >= 5.0/12:
				s.ActiveShares[1]++
			case x >= 0.29:
				s.ActiveShares[2]++
			default:
				s.ActiveShares[3]++
			}
		}
		s.ActiveThroughputMeanOfLine, s.ActiveThroughputMinOfLine = round3(sum/float64(n)), round3(lo)
	}
	var rates []float64
	for _, q := range r.qps {
		st := &q.snd.Stats
		s.DataPackets += st.DataPackets
		s.RetxPackets += st.RetxPackets
		s.RetxBytes += st.RetxBytes
		s.NAKs += st.NAKs
		s.Timeouts += st.Timeouts
		s.CNPsReceived += st.CNPs
		rs := &q.rcv.Stats
		s.CEPackets += rs.CEPackets
		s.CNPsSent += rs.CNPs
		s.OutOfOrderRecv += rs.OutOfOrder
		if err := q.snd.Err(); err != nil {
			s.QPErrors++
			if len(s.QPErrorList) < 5 {
				s.QPErrorList = append(s.QPErrorList, err.Error())
			}
		}
		if st.DataPackets > 0 {
			rates = append(rates, float64(q.snd.Rate(end))/1e9)
		}
	}
	if len(rates) > 0 {
		lo, sum := rates[0], 0.0
		for _, x := range rates {
			lo = min(lo, x)
			sum += x
		}
		s.RateMinGbps, s.RateMeanGbps = round3(lo), round3(sum/float64(len(rates)))
	}
	if r.delivered != nil {
		s.Flows, s.FlowsCompleted = len(r.qps), 0
		for _, q := range r.qps {
			if q.tokHead == len(q.tokens) {
				s.FlowsCompleted++
			}
		}
	}
	s.fill(r.baseRTT, r.idealFCT(maxBytes, r.layout.Sizing().MaxSwitchHops), &acc, allDone, r.fct, r.fctMax, r.delivered != nil, end)
	s.LossSpan = r.span(faults)
	return s
}

// roceGoodput fills the generic rate figures for a RoCE run over [0, end].
func roceGoodput(s *Summary, r *roceNet, end sim.Time) {
	var sent, placed, posted int64
	for _, q := range r.qps {
		sent += q.snd.Stats.DataBytes
		placed += q.rcv.Stats.PlacedBytes
		posted += q.posted
	}
	rateFigures(s, sent, placed, posted, end)
}
