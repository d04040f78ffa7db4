package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lockstepsim/lockstep/sim"
)

// Summary is the transport block of summary.json (key "transport"): the figures every
// transport shares, then the transport's own (Detail) in the same JSON object. Readers
// (compare, bench, the terminal summary, the report) use the common fields and never ask
// which transport ran. Under a collective workload a "flow" is a QP carrying many messages:
// FlowsCompleted counts QPs whose every message was placed, JCT is the workload's end, the
// FCT figures are per message and the per-flow ideal figures are left out.
//
// Goodput is not here: summary.json's top-level delivered_gbps and delivered_fraction are
// computed by the runner for every transport from Endpoint.Bytes (payload placed over the
// run's time, and over the payload posted).
type Summary struct {
	// Kind is transport.kind ("mrc"); Name how messages name it ("MRC").
	Kind string `json:"kind"`
	Name string `json:"-"`
	// Flows is the QPs opened (traffic: one per transfer); FlowsCompleted those whose every
	// posted transfer was acknowledged.
	Flows          int `json:"flows"`
	FlowsCompleted int `json:"flows_completed"`
	// QPErrors counts QPs that gave up (retries exhausted); QPErrorList the first few,
	// verbatim.
	QPErrors    int      `json:"qp_errors"`
	QPErrorList []string `json:"qp_error_list,omitempty"`
	// DataPackets is the data packets the senders put on the wire, retransmissions included
	// (control packets such as ACKs, NACKs, CNPs or probes are not counted).
	DataPackets int64 `json:"data_packets"`
	// RetxPackets is the data packets sent again, every cause.
	RetxPackets int64 `json:"retx_packets"`
	// RetxPacketsByCause splits RetxPackets by what triggered the resend, keyed by the
	// transport's own cause names (MRC: trim_nack, sack_gap, timeout, out_of_window); the
	// values sum to RetxPackets. Absent when the transport does not count resends by cause.
	RetxPacketsByCause map[string]int64 `json:"retx_packets_by_cause,omitempty"`
	// RetxBytes is the wire bytes (headers included) of the data packets sent again, every
	// cause.
	RetxBytes int64 `json:"retx_bytes"`
	// Timeouts is the senders' retransmission (ACK) timer expiries, over all QPs.
	Timeouts int64 `json:"timeouts"`

	BaseRTTUs float64 `json:"base_rtt_us"`
	// JCTUs is when the last transfer was acknowledged (all transfers start at their group's
	// start; the run's clock starts at 0); absent when a transfer never finished.
	JCTUs float64 `json:"jct_us,omitempty"`
	// Flow completion time: a transfer's post to the acknowledgement of its last byte
	// (collective messages: each message's post to its acknowledgement).
	FCTMeanUs float64 `json:"fct_mean_us,omitempty"`
	FCTP50Us  float64 `json:"fct_p50_us,omitempty"`
	FCTP99Us  float64 `json:"fct_p99_us,omitempty"`
	FCTMaxUs  float64 `json:"fct_max_us,omitempty"`
	// IdealFCTUs is what the largest transfer would take alone on an idle fabric: its wire
	// bytes at the NIC line rate (all planes) plus its last packet's round trip.
	IdealFCTUs float64 `json:"ideal_fct_us,omitempty"`
	// FCT over ideal, per flow: mean and worst.
	FCTOverIdealMean float64 `json:"fct_over_ideal_mean,omitempty"`
	FCTOverIdealMax  float64 `json:"fct_over_ideal_max,omitempty"`
	// HeaderOverheadPct is header / wire bytes of a full-size data packet, in percent: the
	// share of the line rate that can never be payload.
	HeaderOverheadPct float64 `json:"header_overhead_pct"`
	// Throughput while all flows are active (traffic runs with several flows; absent under a
	// collective workload or when not measured): ActiveUntilUs is the first flow's completion
	// in microseconds; each traffic flow's payload placed from its start to then, over that
	// time, as a fraction of the NIC line rate (all planes), is its active_of_line in
	// flows.csv, and the mean and min over the flows are ActiveThroughputMeanOfLine and
	// ActiveThroughputMinOfLine (3 decimals, 3 significant digits below 0.01: RoundFrac).
	// Payload only: HeaderOverheadPct of the wire is headers.
	ActiveUntilUs              float64 `json:"active_until_us,omitempty"`
	ActiveThroughputMeanOfLine float64 `json:"active_throughput_mean_of_line,omitempty"`
	ActiveThroughputMinOfLine  float64 `json:"active_throughput_min_of_line,omitempty"`
	// ActiveFlows is how many flows the two figures average over (the terminal adds their
	// sum, the flows' aggregate in NIC line rates, when the mean is small); not in
	// summary.json, whose flows.csv holds each flow's share.
	ActiveFlows int `json:"-"`
	// Loss-driven retransmissions (SACK gap, NAK or timeout): the first and last time one
	// was sent and, with faults, the span from the first fault to the last one (its
	// recovery time when there was one failure).
	FirstLossRetxUs       float64 `json:"first_loss_retx_us,omitempty"`
	LastLossRetxUs        float64 `json:"last_loss_retx_us,omitempty"`
	FaultToLastLossRetxUs float64 `json:"fault_to_last_loss_retx_us,omitempty"`
	// Warnings are the transport's pre-run warnings (Plugin.Check).
	Warnings []string `json:"warnings,omitempty"`
	// TimeoutWait, when set, says that QPs with transfers unfinished at the end had lost
	// packets no NAK would recover and were waiting for their retransmission timer: the run
	// stopped before the timer fired. nil: none (or the transport does not tell).
	TimeoutWait *TimeoutWait `json:"timeout_wait,omitempty"`

	// Detail is the transport's own figures (a pointer to a struct with json tags): its keys
	// follow the common ones in the same object. nil: none.
	Detail any `json:"-"`
}

// TimeoutWait describes the QPs a run left waiting for their retransmission timer
// (Summary.TimeoutWait): each had sent a packet that never arrived (the fabric drained
// without it), had nothing more a NAK could recover it by (a lost tail: no later packet
// reaches the responder, so no sequence-error NAK is sent; or a resend lost after the one
// NAK the responder sends per hole [IBTA vol 1 §9.7.5.1.1]), and its timer was due after the
// run's end.
type TimeoutWait struct {
	// QPs is how many QPs were waiting.
	QPs int `json:"qps"`
	// First names the first of them (in QP order) and the PSN it lost: "qp 3 (h1->h0 plane
	// 0), PSN 245 lost".
	First string `json:"first"`
	// TimeoutUs is the retransmission timeout, microseconds.
	TimeoutUs float64 `json:"timeout_us"`
	// ResumeUs is when the last of them would resend (its timer), microseconds: a run.duration
	// past it lets every one recover (unless the resend is lost too).
	ResumeUs float64 `json:"resume_us"`
	// Setting is the scenario field that sets the timeout, with its value in force
	// ("transport.ib.timeout 18 (4.096us x 2^18)"); Fix says how to lower it.
	Setting string `json:"setting"`
	Fix     string `json:"fix"`
}

// Text is w as one clause for the run's headline and summary: which QPs, waiting for which
// timeout, and what to change.
func (w *TimeoutWait) Text() string {
	us := func(x float64) sim.Time { return sim.Time(math.Round(x)) * sim.Microsecond }
	return fmt.Sprintf("%d QP(s) lost a packet no NAK will recover (a lost tail, or a resend lost after its NAK) and were waiting for the transport's retransmission timeout, %v (%s), when the run stopped (the first: %s); they resend by about %v: raise run.duration past that, or %s",
		w.QPs, sim.Time(math.Round(w.TimeoutUs*float64(sim.Microsecond))), w.Setting, w.First, us(w.ResumeUs), w.Fix)
}

// MarshalJSON writes the common fields, then Detail's keys in the same object. Errors:
// Detail is not a JSON object, or repeats a common key.
func (s *Summary) MarshalJSON() ([]byte, error) {
	type common Summary // no MarshalJSON: plain struct encoding
	head, err := json.Marshal((*common)(s))
	if err != nil || s.Detail == nil {
		return head, err
	}
	tail, err := json.Marshal(s.Detail)
	if err != nil {
		return nil, err
	}
	tail = bytes.TrimSpace(tail)
	if len(tail) < 2 || tail[0] != '{' {
		return nil, fmt.Errorf("transport summary %q: Detail must encode as a JSON object, got %.40s", s.Kind, tail)
	}
	if string(tail) == "{}" {
		return head, nil
	}
	var ck, dk map[string]json.RawMessage
	_ = json.Unmarshal(head, &ck)
	_ = json.Unmarshal(tail, &dk)
	for k := range dk {
		if _, dup := ck[k]; dup {
			return nil, fmt.Errorf("transport summary %q: Detail repeats the common key %q", s.Kind, k)
		}
	}
	out := make([]byte, 0, len(head)+len(tail))
	out = append(out, head[:len(head)-1]...)
	out = append(out, ',')
	return append(out, tail[1:]...), nil
}

// FCTAcc gathers the per-flow FCT figures of the finished transfers a summary covers.
type FCTAcc struct {
	n                  int
	sumFCT             int64
	sumRatio, maxRatio float64
	last               sim.Time // the latest completion
}

// Add counts a transfer that started at start, finished at done and would take ideal alone
// on an idle fabric (ideal > 0).
func (a *FCTAcc) Add(start, done, ideal sim.Time) {
	fct := done - start
	a.n++
	a.sumFCT += int64(fct)
	r := float64(fct) / float64(ideal)
	a.sumRatio += r
	a.maxRatio = max(a.maxRatio, Round3(r))
	a.last = max(a.last, done)
}

// Fill sets the common figures: the base RTT, the ideal FCT of the largest transfer, the
// per-flow figures of a (JCT only when allDone, every transfer finished), and the FCT
// percentiles of the histogram h in nanoseconds with its exact maximum hMax. Under a
// collective workload (collective) JCT is the run's end end, the mean FCT is the histogram's
// and the ideal is left out.
func (s *Summary) Fill(baseRTT, ideal sim.Time, a *FCTAcc, allDone bool, h *hdrhistogram.Histogram, hMax int64, collective bool, end sim.Time) {
	s.BaseRTTUs, s.IdealFCTUs = Us(baseRTT), Us(ideal)
	s.FCTOverIdealMax = a.maxRatio
	if a.n > 0 {
		s.FCTMeanUs = Us(sim.Time(a.sumFCT / int64(a.n)))
		s.FCTOverIdealMean = Round3(a.sumRatio / float64(a.n))
		if allDone {
			s.JCTUs = Us(a.last)
		}
	}
	if collective {
		s.IdealFCTUs = 0
		s.JCTUs = Us(end)
		s.FCTMeanUs = Round3(h.Mean() / 1e3)
	}
	s.FCTP50Us, s.FCTP99Us, s.FCTMaxUs = FCTPercentiles(h, hMax)
}

// SetActive fills the throughput-while-all-flows-are-active figures from the first
// completion's time activeAt and each flow's active_of_line (payload placed from its start
// to activeAt over that time, as a fraction of the NIC line rate; negative: not measured):
// ActiveUntilUs, and the mean and min over the measured flows. Nothing when activeAt is 0 or
// no flow was measured.
func (s *Summary) SetActive(activeAt sim.Time, ofLine func(yield func(float64) bool)) {
	if activeAt <= 0 {
		return
	}
	var sum, lo float64
	n := 0
	for x := range ofLine {
		if x < 0 {
			continue
		}
		if n == 0 || x < lo {
			lo = x
		}
		sum += x
		n++
	}
	if n > 0 {
		s.ActiveUntilUs = Us(activeAt)
		s.ActiveThroughputMeanOfLine = RoundFrac(sum / float64(n))
		s.ActiveThroughputMinOfLine = RoundFrac(lo)
		s.ActiveFlows = n
	}
}

// SetLossSpan fills the loss span from the loss-driven retransmission times lossAt
// (ascending) and the fault times faults (ascending; the span is measured from the first).
func (s *Summary) SetLossSpan(lossAt, faults []sim.Time) {
	if len(lossAt) == 0 {
		return
	}
	first, last := lossAt[0], lossAt[len(lossAt)-1]
	s.FirstLossRetxUs, s.LastLossRetxUs = Us(first), Us(last)
	if len(faults) > 0 && last > faults[0] {
		s.FaultToLastLossRetxUs = Us(last - faults[0])
	}
}

// NewFCTHistogram returns the FCT histogram adapters record into: nanoseconds, 1 ns to one
// hour, 3 significant digits.
func NewFCTHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(sim.Hour/sim.Nanosecond), 3)
}

// FCTPercentiles reads p50 and p99 from an FCT histogram in nanoseconds, as microseconds, with
// the exact maximum maxNs (the histogram's own is rounded up to its bucket); p50 and p99 are
// capped at it.
func FCTPercentiles(h *hdrhistogram.Histogram, maxNs int64) (p50, p99, max float64) {
	max = Round3(float64(maxNs) / 1e3)
	ns := func(q float64) float64 { return min(Round3(float64(h.ValueAtQuantile(q))/1e3), max) }
	return ns(50), ns(99), max
}

// Us is t in microseconds rounded to 3 decimals, the unit of summary.json's *_us keys.
func Us(t sim.Time) float64 { return Round3(t.Micros()) }

// Round3 rounds to 3 decimals so summaries stay short and stable; NaN and infinities are 0.
func Round3(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return math.Round(x*1000) / 1000
}

// RoundFrac rounds a fraction of line rate for the summary: to 3 decimals from 0.01 up (as
// Round3), below that to 3 significant digits, so a share that small is not shown as 0: a
// 1,023 -> 1 incast gives each sender 1/1,023 of its line (0.000977), which 3 decimals made
// 0.001 or, for the slowest sender, 0.000. NaN and infinities are 0.
func RoundFrac(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	if a := math.Abs(x); a >= 0.01 || a == 0 {
		return Round3(x)
	}
	p := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

// FormatFrac formats a fraction of line rate RoundFrac rounded: 3 decimals from 0.01 up,
// else 3 significant digits ("0.851", "0.000977").
func FormatFrac(x float64) string {
	x = RoundFrac(x)
	if a := math.Abs(x); a >= 0.01 || a == 0 {
		return strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// LossLog records when an adapter resent after a loss (one entry per instant, in order) and
// when its QPs errored: Endpoint.Log returns it, the summary's loss span reads it.
type LossLog struct {
	LossAt []sim.Time // loss-driven retransmission times, ascending, one per instant
	ErrAt  []sim.Time // QP error times
}

// Retx records a loss-driven retransmission at now.
func (l *LossLog) Retx(now sim.Time) {
	if k := len(l.LossAt); k == 0 || l.LossAt[k-1] != now {
		l.LossAt = append(l.LossAt, now)
	}
}

// QPError records a QP error at now.
func (l *LossLog) QPError(now sim.Time) { l.ErrAt = append(l.ErrAt, now) }
