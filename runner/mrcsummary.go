package runner

import (
	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/mrc"
)

// MRCSummary is the MRC transport's headline figures (units in the keys). Under a collective
// workload a "flow" is a QP carrying many messages: FlowsCompleted counts QPs whose every
// message was placed, JCT is the workload's end, the FCT figures are per message, and the
// per-flow ideal figures are left out.
type MRCSummary struct {
	Flows          int      `json:"flows"`
	FlowsCompleted int      `json:"flows_completed"`
	QPErrors       int      `json:"qp_errors"`
	QPErrorList    []string `json:"qp_error_list,omitempty"` // the first few, verbatim

	// Base RTT, JCT, FCT percentiles and FCT over ideal.
	TransferSummary
	// Per-flow throughput, payload bytes / FCT, as a fraction of the NIC line rate.
	ThroughputMeanOfLine float64 `json:"throughput_mean_of_line,omitempty"`
	ThroughputMinOfLine  float64 `json:"throughput_min_of_line,omitempty"`
	// Throughput while all flows are active: each traffic flow's payload placed from its
	// start to the first flow's completion (ActiveUntilUs), over that time, as a fraction of
	// the NIC line rate (all planes); mean and min over the flows (flows.csv: active_of_line).
	// Payload only: HeaderOverheadPct of the wire is headers.
	ActiveUntilUs              float64 `json:"active_until_us,omitempty"`
	ActiveThroughputMeanOfLine float64 `json:"active_throughput_mean_of_line,omitempty"`
	ActiveThroughputMinOfLine  float64 `json:"active_throughput_min_of_line,omitempty"`
	// HeaderOverheadPct is header / wire bytes of a full data packet: the share of line rate
	// that can never be payload.
	HeaderOverheadPct float64 `json:"header_overhead_pct"`

	DataPackets  int64            `json:"data_packets"`
	RetxPackets  map[string]int64 `json:"retx_packets"` // by cause
	Timeouts     int64            `json:"timeouts"`
	NACKsSent    int64            `json:"nacks_sent"`
	TrimsNACKed  int64            `json:"trims_nacked"` // trimmed headers received (each answered by a NACK)
	SACKsSent    int64            `json:"sacks_sent"`
	ProbesSent   int64            `json:"probes_sent"`
	ProbeAcks    int64            `json:"probe_acks"`
	NoEVStalls   int64            `json:"no_ev_stalls"`
	EVGood       int              `json:"ev_good_at_end"`
	EVSkip       int              `json:"ev_skip_at_end"`
	EVAssumedBad int              `json:"ev_assumed_bad_at_end"`
	EVDenied     int              `json:"ev_denied_at_end"`
	// RetxBytes is the wire bytes of data packets sent again (every cause).
	RetxBytes int64 `json:"retx_bytes"`
	// ProbesPerDataPct is probes sent over data packets sent, in percent (the probe budget
	// keeps it near 1% or below; mrc.Sender.probe).
	ProbesPerDataPct float64 `json:"probes_per_data_pct"`
	// Loss attribution (mrc.Sender.blame): untrimmed losses charged to their EV's path, those
	// excused because the destination was congested (trims on other planes) or because nothing
	// sent after them was delivered, and the EV routes retired for path faults over the run.
	LossStrikes        int64 `json:"loss_strikes"`
	LossesCongestion   int64 `json:"losses_excused_congestion"`
	LossesUnattributed int64 `json:"losses_excused_nothing_later_delivered"`
	EVRetirements      int64 `json:"ev_retirements"`
	// RxMaxActiveQPs is the most QPs under way toward one host at once (the receiver's share,
	// mrc.HostRx, divides its budget among them); RxBudgetCuts counts the budget cuts its
	// last hop's trims caused, over all hosts.
	RxMaxActiveQPs int   `json:"rx_max_active_qps"`
	RxBudgetCuts   int64 `json:"rx_budget_cuts"`

	// Loss-driven retransmissions (SACK gap or timeout).
	LossSpan
}

// LossSpan is when a transport's loss-driven retransmissions happened: the first and last
// time one was sent and, with faults, the span from the first fault to the last one (its
// recovery time when there was one failure).
type LossSpan struct {
	FirstLossRetxUs       float64 `json:"first_loss_retx_us,omitempty"`
	LastLossRetxUs        float64 `json:"last_loss_retx_us,omitempty"`
	FaultToLastLossRetxUs float64 `json:"fault_to_last_loss_retx_us,omitempty"`
}

// lossLog records when a transport adapter resent after a loss (one entry per instant, in
// order) and when its QPs errored: the summary's LossSpan and the fault costs read it.
type lossLog struct {
	lossAt []sim.Time // loss-driven retransmission times, ascending, one per instant
	errAt  []sim.Time // QP error times
}

// retx records a loss-driven retransmission at now.
func (l *lossLog) retx(now sim.Time) {
	if k := len(l.lossAt); k == 0 || l.lossAt[k-1] != now {
		l.lossAt = append(l.lossAt, now)
	}
}

// qpError records a QP error at now.
func (l *lossLog) qpError(now sim.Time) { l.errAt = append(l.errAt, now) }

// span is the LossSpan of the log: its first and last retransmission and, with faults, the
// time from the first fault to the last one.
func (l *lossLog) span(faults []FaultEvent) LossSpan {
	var s LossSpan
	if len(l.lossAt) > 0 {
		first, last := l.lossAt[0], l.lossAt[len(l.lossAt)-1]
		s.FirstLossRetxUs, s.LastLossRetxUs = us(first), us(last)
		if len(faults) > 0 && last > faults[0].At {
			s.FaultToLastLossRetxUs = us(last - faults[0].At)
		}
	}
	return s
}

// fctPercentiles reads p50 and p99 from an FCT histogram in nanoseconds, as microseconds, with
// the exact maximum maxNs (the histogram's own is rounded up to its bucket); p50 and p99 are
// capped at it.
func fctPercentiles(h *hdrhistogram.Histogram, maxNs int64) (p50, p99, max float64) {
	max = round3(float64(maxNs) / 1e3)
	ns := func(q float64) float64 { return min(round3(float64(h.ValueAtQuantile(q))/1e3), max) }
	return ns(50), ns(99), max
}

// rateFigures fills the generic rate figures of a transport run over [0, end]: data wire
// bytes sent and payload placed per second, and placed over posted payload.
func rateFigures(s *Summary, sent, placed, posted int64, end sim.Time) {
	if secs := end.Seconds(); secs > 0 {
		s.OfferedGbps = round3(float64(sent) * 8 / secs / 1e9)
		s.DeliveredGbps = round3(float64(placed) * 8 / secs / 1e9)
	}
	if posted > 0 {
		s.DeliveredFraction = round3(float64(placed) / float64(posted))
	}
}

func us(t sim.Time) float64 { return round3(t.Micros()) }

// idealFCT is a transfer of b payload bytes alone on an idle fabric over a path of hops switch
// hops (idealTransfer): wire bytes at the NIC line rate (all planes) plus the last packet's
// round trip less its first serialisation.
func (m *mrcNet) idealFCT(b int64, hops int) sim.Time {
	cfg := &m.cfg
	pay := int64(cfg.PayloadBytes)
	full := int64(cfg.WireBytes(cfg.PayloadBytes))
	wb := b / pay * full
	if rem := b % pay; rem > 0 {
		wb += int64(cfg.WireBytes(int(rem)))
	}
	return idealTransfer(m.layout.Params(), m.nicRate, hops, wb, min(full, wb), cfg.AckBytes)
}

// summary gathers the MRC figures over the run that ended at end.
func (m *mrcNet) summary(end sim.Time, faults []FaultEvent) *MRCSummary {
	cfg := &m.cfg
	s := &MRCSummary{Flows: len(m.flows), RetxPackets: map[string]int64{}}
	full := cfg.WireBytes(cfg.PayloadBytes)
	s.HeaderOverheadPct = round3(100 * float64(cfg.HeaderBytes) / float64(full))
	var maxBytes int64
	var sumTput float64
	minTput := 0.0
	for _, f := range m.flows {
		if f.bytes > maxBytes {
			maxBytes = f.bytes
		}
	}
	var acc fctAcc // completed flows of one transfer: the per-flow FCT figures are over them
	for _, f := range m.flows {
		st := &f.snd.Stats
		s.DataPackets += st.DataPackets
		for c := mrc.RetxCause(0); c < mrc.NumRetxCauses; c++ {
			s.RetxPackets[c.String()] += st.Retx[c]
		}
		s.Timeouts += st.Timeouts
		s.ProbesSent += st.ProbesSent
		s.ProbeAcks += st.ProbeAcks
		s.NoEVStalls += st.NoEVStalls
		s.RetxBytes += st.RetxBytes
		s.LossStrikes += st.Strikes
		s.LossesCongestion += st.CongestionLosses
		s.LossesUnattributed += st.UnattributedLosses
		s.EVRetirements += f.snd.EVs().Stats().Retirements
		rs := &f.rcv.Stats
		s.NACKsSent += rs.NACKs
		s.SACKsSent += rs.SACKs
		s.TrimsNACKed += rs.Trimmed
		good, skip, bad, denied, _ := f.snd.EVs().Counts()
		s.EVGood += good
		s.EVSkip += skip
		s.EVAssumedBad += bad
		s.EVDenied += denied
		if err := f.snd.Err(); err != nil {
			s.QPErrors++
			if len(s.QPErrorList) < 5 {
				s.QPErrorList = append(s.QPErrorList, err.Error())
			}
		}
		if f.posts == 0 || f.acked < f.posts {
			continue
		}
		s.FlowsCompleted++
		if f.posts > 1 {
			continue // a QP carrying many messages: its per-message FCTs are in the histogram
		}
		acc.add(f.start, f.done, m.idealFCT(f.bytes, f.hops))
		tput := float64(f.bytes) * 8 / (f.done - f.start).Seconds() / float64(m.nicRate)
		sumTput += tput
		if minTput == 0 || tput < minTput {
			minTput = tput
		}
	}
	if n := acc.n; n > 0 {
		s.ThroughputMeanOfLine = round3(sumTput / float64(n))
		s.ThroughputMinOfLine = round3(minTput)
	}
	allDone := s.FlowsCompleted == s.Flows
	if m.activeAt > 0 {
		var sum float64
		n := 0
		for _, f := range m.flows {
			if x := f.activeOfLine; x >= 0 {
				if n == 0 || x < s.ActiveThroughputMinOfLine {
					s.ActiveThroughputMinOfLine = x
				}
				sum += x
				n++
			}
		}
		if n > 0 {
			s.ActiveUntilUs = us(m.activeAt)
			s.ActiveThroughputMeanOfLine = round3(sum / float64(n))
			s.ActiveThroughputMinOfLine = round3(s.ActiveThroughputMinOfLine)
		}
	}
	if m.delivered != nil {
		s.FlowsCompleted = 0
		for _, f := range m.flows {
			if f.tokHead == len(f.tokens) {
				s.FlowsCompleted++
			}
		}
	}
	s.fill(m.baseRTT, m.idealFCT(maxBytes, m.layout.Sizing().MaxSwitchHops), &acc, allDone, m.fct, m.fctMax, m.delivered != nil, end)
	if s.DataPackets > 0 {
		s.ProbesPerDataPct = round3(100 * float64(s.ProbesSent) / float64(s.DataPackets))
	}
	for _, h := range m.rx {
		if h != nil {
			s.RxMaxActiveQPs = max(s.RxMaxActiveQPs, h.MaxActive)
			s.RxBudgetCuts += h.Cuts
		}
	}
	s.LossSpan = m.span(faults)
	return s
}

// mrcGoodput fills the generic rate figures for an MRC run over [0, end].
func mrcGoodput(s *Summary, m *mrcNet, end sim.Time) {
	var sent, placed, posted int64
	for _, f := range m.flows {
		sent += f.snd.Stats.DataBytes
		placed += f.rcv.Stats.PlacedBytes
		posted += f.bytes
	}
	rateFigures(s, sent, placed, posted, end)
}
