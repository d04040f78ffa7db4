package mrcnic

import (
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/mrc"
	"github.com/lockstepsim/lockstep/transport/nic"
)

// Detail is MRC's own part of summary.json's transport block (transport.Summary.Detail): its
// keys follow the common ones (flows, packets and retransmissions with their causes,
// timeouts, the FCT figures, the header overhead, the throughput while all flows were
// active, the loss span) in the same object. Under a collective workload the per-flow
// throughput figures are left out (a QP carries many messages). docs/outputs.md describes
// each key.
type Detail struct {
	// Per-flow throughput, payload bytes / FCT, as a fraction of the NIC line rate (all
	// planes): mean and min over the completed traffic transfers.
	ThroughputMeanOfLine float64 `json:"throughput_mean_of_line,omitempty"`
	ThroughputMinOfLine  float64 `json:"throughput_min_of_line,omitempty"`

	// NACKsSent, TrimsNACKed (trimmed headers received, each answered by a NACK), SACKsSent:
	// the receivers' answers.
	NACKsSent   int64 `json:"nacks_sent"`
	TrimsNACKed int64 `json:"trims_nacked"`
	SACKsSent   int64 `json:"sacks_sent"`
	// ProbesSent and ProbeAcks: the senders' path probes and their answers.
	ProbesSent int64 `json:"probes_sent"`
	ProbeAcks  int64 `json:"probe_acks"`
	// NoEVStalls counts the times a sender had data and window but no usable EV.
	NoEVStalls int64 `json:"no_ev_stalls"`
	// EV states over all QPs at the run's end.
	EVGood       int `json:"ev_good_at_end"`
	EVSkip       int `json:"ev_skip_at_end"`
	EVAssumedBad int `json:"ev_assumed_bad_at_end"`
	EVDenied     int `json:"ev_denied_at_end"`
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
}

// idealFCT is a transfer of b payload bytes alone on an idle fabric over a path of hops switch
// hops (nic.IdealTransfer): wire bytes at the NIC line rate (all planes) plus the last
// packet's round trip less its first serialisation.
func (m *Endpoint) idealFCT(b int64, hops int) sim.Time {
	cfg := &m.cfg
	pay := int64(cfg.PayloadBytes)
	full := int64(cfg.WireBytes(cfg.PayloadBytes))
	wb := b / pay * full
	if rem := b % pay; rem > 0 {
		wb += int64(cfg.WireBytes(int(rem)))
	}
	return nic.IdealTransfer(m.layout.Params(), m.nicRate, hops, wb, min(full, wb), cfg.AckBytes)
}

// retx is a flow's retransmitted packets, every cause.
func (f *flow) retx() int64 {
	var n int64
	for _, c := range f.snd.Stats.Retx {
		n += c
	}
	return n
}

// Summary gathers the MRC figures over the run that ended at end (transport.Summary, Detail a
// *Detail); faults are the run's fault times (ascending), from the first of which the loss
// span is measured. Warnings are left to the caller (Plugin.Check's).
func (m *Endpoint) Summary(end sim.Time, faults []sim.Time) *transport.Summary {
	cfg := &m.cfg
	s := &transport.Summary{Kind: Kind, Name: "MRC", Flows: len(m.flows)}
	s.RetxPacketsByCause = make(map[string]int64, mrc.NumRetxCauses) // every mrc.RetxCause, zeros included
	for c := mrc.RetxCause(0); c < mrc.NumRetxCauses; c++ {
		s.RetxPacketsByCause[c.String()] = 0
	}
	d := &Detail{}
	s.Detail = d
	full := cfg.WireBytes(cfg.PayloadBytes)
	s.HeaderOverheadPct = transport.Round3(100 * float64(cfg.HeaderBytes) / float64(full))
	var maxBytes int64
	var sumTput float64
	minTput := 0.0
	for _, f := range m.flows {
		if f.bytes > maxBytes {
			maxBytes = f.bytes
		}
	}
	var acc transport.FCTAcc // completed flows of one transfer: the per-flow FCT figures are over them
	n := 0
	for _, f := range m.flows {
		st := &f.snd.Stats
		s.DataPackets += st.DataPackets
		for c := mrc.RetxCause(0); c < mrc.NumRetxCauses; c++ {
			s.RetxPacketsByCause[c.String()] += st.Retx[c]
			s.RetxPackets += st.Retx[c]
		}
		s.Timeouts += st.Timeouts
		d.ProbesSent += st.ProbesSent
		d.ProbeAcks += st.ProbeAcks
		d.NoEVStalls += st.NoEVStalls
		s.RetxBytes += st.RetxBytes
		d.LossStrikes += st.Strikes
		d.LossesCongestion += st.CongestionLosses
		d.LossesUnattributed += st.UnattributedLosses
		d.EVRetirements += f.snd.EVs().Stats().Retirements
		rs := &f.rcv.Stats
		d.NACKsSent += rs.NACKs
		d.SACKsSent += rs.SACKs
		d.TrimsNACKed += rs.Trimmed
		good, skip, bad, denied, _ := f.snd.EVs().Counts()
		d.EVGood += good
		d.EVSkip += skip
		d.EVAssumedBad += bad
		d.EVDenied += denied
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
		acc.Add(f.start, f.done, m.idealFCT(f.bytes, f.hops))
		n++
		tput := float64(f.bytes) * 8 / (f.done - f.start).Seconds() / float64(m.nicRate)
		sumTput += tput
		if minTput == 0 || tput < minTput {
			minTput = tput
		}
	}
	if n > 0 {
		d.ThroughputMeanOfLine = transport.Round3(sumTput / float64(n))
		d.ThroughputMinOfLine = transport.Round3(minTput)
	}
	allDone := s.FlowsCompleted == s.Flows
	if m.activeAt > 0 {
		m.activeFigures(s)
	}
	if m.delivered != nil {
		s.FlowsCompleted = 0
		for _, f := range m.flows {
			if f.tokHead == len(f.tokens) {
				s.FlowsCompleted++
			}
		}
	}
	s.Fill(m.baseRTT, m.idealFCT(maxBytes, m.layout.Sizing().MaxSwitchHops), &acc, allDone, m.fct, m.fctMax, m.delivered != nil, end)
	if s.DataPackets > 0 {
		d.ProbesPerDataPct = transport.Round3(100 * float64(d.ProbesSent) / float64(s.DataPackets))
	}
	for _, h := range m.rx {
		if h != nil {
			d.RxMaxActiveQPs = max(d.RxMaxActiveQPs, h.MaxActive)
			d.RxBudgetCuts += h.Cuts
		}
	}
	s.SetLossSpan(m.log.LossAt, faults)
	return s
}

// activeFigures fills the common throughput while all flows were active (snapshotActive):
// mean and min over the flows measured.
func (m *Endpoint) activeFigures(s *transport.Summary) {
	s.SetActive(m.activeAt, func(yield func(float64) bool) {
		for _, f := range m.flows {
			if !yield(f.activeOfLine) {
				return
			}
		}
	})
}
