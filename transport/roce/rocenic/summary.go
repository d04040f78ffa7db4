package rocenic

import (
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/nic"
)

// Detail is the RoCEv2 transport's own figures in summary.json (transport.Summary.Detail;
// its keys follow the common ones in the "transport" object; units in the keys). The
// packet counts, go-back-N resends (retx_packets, retx_bytes), timeouts, header overhead and
// the throughput while all flows were active are common (transport.Summary); RoCE leaves
// retx_packets_by_cause out (its sender counts resends, not their causes). Under a
// collective workload the active-throughput figures are absent.
type Detail struct {
	// QPs is the QPs opened; QPsPerPeer transport.roce.qps_per_peer (per plane).
	QPs        int `json:"qps"`
	QPsPerPeer int `json:"qps_per_peer"`
	// ActiveMaxMinMeanOfLine is the flow-level answer to the same figure: each QP's stripe
	// as a fluid flow on its ECMP-hashed path at max-min fair rates (the flow engine), each
	// flow's payload placed by the first flow's completion over its time (activeMaxMin);
	// when every flow starts together and the run has no faults.
	ActiveMaxMinMeanOfLine float64 `json:"active_maxmin_mean_of_line,omitempty"`
	// ActiveMaxMinARMeanOfLine is the same figure under the fabric's adaptive routing
	// (fabric.adaptive_routing on): each QP spread over every minimal path of its plane as
	// even spreading at each switch splits it (perfect AR; activeMaxMin with spread), the
	// reference for a run whose switches do not hash. ActiveMaxMinMeanOfLine is then the
	// static ECMP answer, for comparison. Absent without adaptive routing.
	ActiveMaxMinARMeanOfLine float64 `json:"active_maxmin_ar_mean_of_line,omitempty"`
	// ActiveShares counts the flows of the common throughput-while-all-active figures
	// (active_throughput_*) by nearest share of line: [about 1, about 1/2, about 1/3, below]
	// (the quantisation ECMP collisions produce).
	ActiveShares []int `json:"active_shares_1_half_third_less,omitempty"`

	// NAKs is the sequence-error NAKs received: with the common timeouts, what triggered the
	// go-back-N resends (the common retx_packets and retx_bytes).
	NAKs int64 `json:"naks_received"`
	// DCQCN: CE-marked data packets received, CNPs sent (at most one per cnp_interval per QP)
	// and received, and the senders' rates at the end in Gb/s (min and mean over QPs that
	// sent).
	CEPackets    int64   `json:"ce_packets"`
	CNPsSent     int64   `json:"cnps_sent"`
	CNPsReceived int64   `json:"cnps_received"`
	RateMinGbps  float64 `json:"rate_min_gbps_at_end"`
	RateMeanGbps float64 `json:"rate_mean_gbps_at_end"`
	// OutOfOrderRecv is the data packets received above the expected PSN: in order only,
	// dropped (go-back-N; the first of each gap NAKed); under out-of-order placement, held
	// and placed once the hole fills (roce.ReceiverStats.Reordered), plus any that fell
	// beyond the window (dropped). So it counts the packets adaptive routing reordered.
	OutOfOrderRecv int64 `json:"out_of_order_received"`
}

// IdealFCT is a transfer of b payload bytes alone on an idle fabric over a path of hops
// switch hops (nic.IdealTransfer): its wire bytes (one RETH per transfer) at the NIC line rate
// (all planes) plus the last packet's round trip less its first serialisation.
func (r *Endpoint) IdealFCT(b int64, hops int) sim.Time {
	cfg := &r.cfg
	pay := int64(cfg.PayloadBytes)
	n := (b + pay - 1) / pay
	wire := b + n*int64(cfg.HeaderBytes) + 16
	full := int64(cfg.HeaderBytes + cfg.PayloadBytes)
	return nic.IdealTransfer(r.layout.Params(), r.portRate*sim.Rate(r.planes), hops, wire, min(full, wire), cfg.AckWire())
}

// collective reports a workload run: messages (Send) rather than traffic transfers.
func (r *Endpoint) collective() bool { return r.hooks.Delivered != nil }

// Summary gathers the RoCE figures over the run that ended at end; faults are the times of
// the run's fault events, ascending (the loss span is measured from the first; with none,
// the max-min active figure is computed). Warnings stay empty: the runner fills them from
// the plugin's Check. Under a workload (Hooks.Delivered set) Flows counts QPs and
// FlowsCompleted those whose every message was placed.
func (r *Endpoint) Summary(end sim.Time, faults []sim.Time) *transport.Summary {
	cfg := &r.cfg
	s := &transport.Summary{Kind: Kind, Name: "RoCE", Flows: len(r.flows)}
	d := &Detail{QPs: len(r.qps), QPsPerPeer: cfg.QPsPerPeer}
	s.Detail = d
	full := cfg.HeaderBytes + cfg.PayloadBytes
	s.HeaderOverheadPct = transport.Round3(100 * float64(cfg.HeaderBytes) / float64(full))
	var maxBytes int64
	for _, f := range r.flows {
		maxBytes = max(maxBytes, f.bytes)
	}
	var acc transport.FCTAcc
	for _, f := range r.flows {
		if f.done == 0 {
			continue
		}
		s.FlowsCompleted++
		acc.Add(f.start, f.done, r.IdealFCT(f.bytes, f.hops))
	}
	allDone := s.FlowsCompleted == s.Flows
	r.activeFigures(s, d)
	r.engineFigures(s, d, end)
	if r.collective() {
		s.Flows, s.FlowsCompleted = len(r.qps), 0
		for _, q := range r.qps {
			if q.tokHead == len(q.tokens) {
				s.FlowsCompleted++
			}
		}
	}
	s.Fill(r.baseRTT, r.IdealFCT(maxBytes, r.layout.Sizing().MaxSwitchHops), &acc, allDone, r.fct, r.fctMax, r.collective(), end)
	s.SetLossSpan(r.log.LossAt, faults)
	if s.ActiveUntilUs > 0 && len(faults) == 0 { // max-min is of the intact fabric
		if x, ok := r.activeMaxMin(false); ok {
			d.ActiveMaxMinMeanOfLine = transport.RoundFrac(x)
		}
		if r.net.AdaptiveOn() {
			if x, ok := r.activeMaxMin(true); ok {
				d.ActiveMaxMinARMeanOfLine = transport.RoundFrac(x)
			}
		}
	}
	return s
}

// activeFigures fills the throughput-while-all-active figures (the common ones in s, the
// shares in d) from the snapshot taken at the first flow's completion.
func (r *Endpoint) activeFigures(s *transport.Summary, d *Detail) {
	n := len(r.activeTput)
	if n == 0 {
		return
	}
	s.ActiveUntilUs = transport.Us(r.activeAt)
	lo, sum := r.activeTput[0], 0.0
	d.ActiveShares = make([]int, 4)
	for _, x := range r.activeTput {
		lo = min(lo, x)
		sum += x
		switch {
		case x >= 0.75:
			d.ActiveShares[0]++
		case x >= 5.0/12:
			d.ActiveShares[1]++
		case x >= 0.29:
			d.ActiveShares[2]++
		default:
			d.ActiveShares[3]++
		}
	}
	s.ActiveThroughputMeanOfLine, s.ActiveThroughputMinOfLine = transport.RoundFrac(sum/float64(n)), transport.RoundFrac(lo)
	s.ActiveFlows = n
}

// engineFigures sums the engines' counters over every QP: packets, resends and their causes,
// DCQCN's marks, CNPs and rates at end, and the QP errors (the first five verbatim).
func (r *Endpoint) engineFigures(s *transport.Summary, d *Detail, end sim.Time) {
	var rates []float64
	for _, q := range r.qps {
		st := &q.snd.Stats
		s.DataPackets += st.DataPackets
		s.RetxPackets += st.RetxPackets
		s.RetxBytes += st.RetxBytes
		d.NAKs += st.NAKs
		s.Timeouts += st.Timeouts
		d.CNPsReceived += st.CNPs
		rs := &q.rcv.Stats
		d.CEPackets += rs.CEPackets
		d.CNPsSent += rs.CNPs
		d.OutOfOrderRecv += rs.OutOfOrder + rs.Reordered
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
		d.RateMinGbps, d.RateMeanGbps = transport.Round3(lo), transport.Round3(sum/float64(len(rates)))
	}
}

// Flows returns one record per traffic transfer (its stripes summed; none under a workload,
// whose flows.csv has no rows): payload posted and placed, post and completion times, the
// ideal FCT, resent packets, the throughput while all were active, and Extra {"qps": n} for
// the trace. Plane is -1: a transfer is striped over every plane.
func (r *Endpoint) Flows() []transport.FlowRecord {
	out := make([]transport.FlowRecord, 0, len(r.flows))
	for _, fl := range r.flows {
		var placed, retx int64
		for _, q := range fl.qps {
			placed += r.qps[q].rcv.Stats.PlacedBytes
			retx += r.qps[q].snd.Stats.RetxPackets
		}
		out = append(out, transport.FlowRecord{
			Src: int(fl.src), Dst: int(fl.dst), Plane: -1,
			Bytes: fl.bytes, Delivered: placed,
			Start: fl.start, Done: fl.done, Ideal: r.IdealFCT(fl.bytes, fl.hops),
			Retx: retx, ActiveOfLine: fl.activeOfLine,
			Extra: map[string]any{"qps": len(fl.qps)},
		})
	}
	return out
}
