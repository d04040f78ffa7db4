package ib

import (
	"fmt"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// InfiniBand congestion control [IBTA vol 1 Annex A10, "Congestion Control"], the option
// transport.ib.cc. Three parts:
//
//   - Marking (A10.2.1): a switch egress whose queue is past a threshold sets FECN in data
//     packets it forwards, one in about MarkingRate+1 eligible packets. Lockstep carries it
//     on the fabric's ECN marking (the ib profile turns it on with CC): ECN at Kmin =
//     Threshold with probability 1/(MarkingRate+1) rising to 1 at Kmax = Threshold +
//     MarkRamp (a RED ramp; the annex marks at a flat rate past the threshold). A port
//     whose VL lacks credits is a victim rather than a root of congestion and does not
//     mark (fabric.creditVictim). Every data packet may be marked, ACKs and BECNs never are (the annex's
//     packet_size floor, OpenSM default 512 bytes, is not modelled: it would spare only a
//     transfer's short last packet).
//   - Notification (A10.2.2): the destination channel adapter returns every FECN as a BECN
//     to the source QP (the RC engine's CNP, sent for each marked packet: no spacing).
//   - Reaction (A10.2.3, A10.4): each BECN raises the QP's congestion control table index
//     CCTI by CCTIIncrease, at most CCTILimit; every CCTITimer the index drops by one, to
//     CCTIMin. Between packets the QP waits the injection rate delay CCT[CCTI]. Lockstep's
//     table is linear, CCT[i] = i x CCTStep packet serialisation times, so the rate is
//     line / (1 + i x CCTStep) (the annex leaves the entries to the congestion control
//     manager, which computes them from the subnet's size; NVIDIA's OpenSM CC manager option
//     "cct").
//
// Defaults: threshold, marking rate, packet size and CCTI increase are NVIDIA's OpenSM
// congestion control manager defaults [Mellanox OFED user manual, "Congestion Control
// Manager" options: threshold 0xf (the most aggressive), marking_rate 0xa, ccti_increase 1,
// ccti_min 0]; that manager computes the CCTI timer and the table
// from the subnet's size (ccti_timer 0, cct 0), so CCTITimer, CCTILimit and CCTStep are
// lockstep defaults, chosen so a 7 -> 1 incast settles near 1/7 of line within tens of
// microseconds. Threshold 0xf of the 4-bit scale maps to DefaultCCThreshold bytes of queue
// (the annex leaves the mapping to the switch).
type CC struct {
	// Enabled turns IB congestion control on; off by default.
	Enabled bool `yaml:"enabled"`
	// Threshold is the egress queue depth, bytes, past which switches mark FECN; 0:
	// DefaultCCThreshold.
	Threshold sim.Size `yaml:"threshold"`
	// MarkingRate is the mean number of eligible packets between two FECN marks past the
	// threshold (0: mark every one); default DefaultMarkingRate. Allowed 0..65535.
	MarkingRate *int `yaml:"marking_rate"`
	// CCTIIncrease is what one BECN adds to the CCTI, 1..255; default 1.
	CCTIIncrease int `yaml:"ccti_increase"`
	// CCTILimit is the largest CCTI (the table's last entry), 1..16383; default 128.
	CCTILimit int `yaml:"ccti_limit"`
	// CCTIMin is the least CCTI the timer brings it back to, 0..CCTILimit-1; default 0.
	CCTIMin int `yaml:"ccti_min"`
	// CCTITimer is how often the CCTI drops by one, 1us..1s; default DefaultCCTITimer.
	CCTITimer sim.Time `yaml:"ccti_timer"`
	// CCTStep is the injection rate delay one table index adds, in packet serialisation
	// times, (0, 16]; default DefaultCCTStep.
	CCTStep float64 `yaml:"cct_step"`
}

// IB congestion control defaults (CC): OpenSM CC manager defaults where it has fixed ones,
// lockstep defaults for what it computes from the subnet.
const (
	DefaultCCThreshold  = 16 << 10 // bytes: four 4 KiB packets (threshold 0xf, most aggressive)
	DefaultMarkingRate  = 10       // OpenSM marking_rate 0xa
	DefaultCCTIIncrease = 1        // OpenSM ccti_increase
	DefaultCCTILimit    = 128      // lockstep: the rate floor line/(1 + 128 x CCTStep)
	DefaultCCTITimer    = 10 * sim.Microsecond
	DefaultCCTStep      = 0.125 // lockstep: 1/7 of line at CCTI 48
	// MarkRamp is the bytes from Kmin to Kmax of the marking ramp (CC.ECN).
	MarkRamp = 64 << 10
)

// Bounds of the CC fields (CC.Validate).
const (
	maxCCTILimit    = 16383
	maxCCTStep      = 16.0
	maxMarkingRate  = 65535
	maxCCTIIncrease = 255
	minCCTITimer    = sim.Microsecond
	maxCCTITimer    = sim.Second
)

// WithDefaults fills the zero fields (MarkingRate nil: DefaultMarkingRate).
func (c CC) WithDefaults() CC {
	if c.Threshold == 0 {
		c.Threshold = DefaultCCThreshold
	}
	if c.MarkingRate == nil {
		r := DefaultMarkingRate
		c.MarkingRate = &r
	}
	if c.CCTIIncrease == 0 {
		c.CCTIIncrease = DefaultCCTIIncrease
	}
	if c.CCTILimit == 0 {
		c.CCTILimit = DefaultCCTILimit
	}
	if c.CCTITimer == 0 {
		c.CCTITimer = DefaultCCTITimer
	}
	if c.CCTStep == 0 {
		c.CCTStep = DefaultCCTStep
	}
	return c
}

// Validate names the first bad field under prefix ("transport.ib.cc"); c has its defaults.
func (c CC) Validate(prefix string) error {
	switch {
	case c.Threshold < 0 || c.Threshold > fabric.MaxQueueLimit:
		return fmt.Errorf("%s.threshold: %v is out of range; allowed 0 (default %v) up to %v", prefix, c.Threshold, sim.Size(DefaultCCThreshold), sim.Size(fabric.MaxQueueLimit))
	case c.MarkingRate != nil && (*c.MarkingRate < 0 || *c.MarkingRate > maxMarkingRate):
		return fmt.Errorf("%s.marking_rate: %d is out of range; allowed 0..%d packets", prefix, *c.MarkingRate, maxMarkingRate)
	case c.CCTIIncrease < 0 || c.CCTIIncrease > maxCCTIIncrease:
		return fmt.Errorf("%s.ccti_increase: %d is out of range; allowed 1..%d", prefix, c.CCTIIncrease, maxCCTIIncrease)
	case c.CCTILimit < 0 || c.CCTILimit > maxCCTILimit:
		return fmt.Errorf("%s.ccti_limit: %d is out of range; allowed 1..%d", prefix, c.CCTILimit, maxCCTILimit)
	case c.CCTIMin < 0 || c.CCTILimit > 0 && c.CCTIMin >= c.CCTILimit:
		return fmt.Errorf("%s.ccti_min: %d is out of range; allowed 0..ccti_limit-1 (%d)", prefix, c.CCTIMin, c.CCTILimit-1)
	case c.CCTITimer != 0 && (c.CCTITimer < minCCTITimer || c.CCTITimer > maxCCTITimer):
		return fmt.Errorf("%s.ccti_timer: %v is out of range; allowed 0 (default %v) or 1us..1s", prefix, c.CCTITimer, DefaultCCTITimer)
	case !(c.CCTStep >= 0 && c.CCTStep <= maxCCTStep):
		return fmt.Errorf("%s.cct_step: %v is out of range; allowed 0 (default %v) up to %v packet times", prefix, c.CCTStep, DefaultCCTStep, maxCCTStep)
	}
	return nil
}

// ECN is the switch marking CC asks of the fabric (Threshold, MarkingRate; see CC).
func (c CC) ECN() fabric.ECNConfig {
	c = c.WithDefaults()
	return fabric.ECNConfig{Enabled: true, Kmin: c.Threshold, Kmax: c.Threshold + MarkRamp, Pmax: 1 / float64(*c.MarkingRate+1)}
}

// NewRateControl makes a QP's reaction point (roce.RateControlMaker).
func (c CC) NewRateControl(line sim.Rate) roce.RateControl {
	c = c.WithDefaults()
	return &CCT{cfg: c, line: line, ccti: c.CCTIMin, timerAt: sim.MaxTime}
}

// CCT is one QP's IB congestion control reaction point [IBTA vol 1 Annex A10.4]: its
// congestion control table index and the CCTI timer (roce.RateControl).
type CCT struct {
	cfg     CC
	line    sim.Rate
	ccti    int      // CCTIMin..CCTILimit
	timerAt sim.Time // the next CCTI decrease; MaxTime while ccti == CCTIMin
	// BECNs counts the notifications taken, Peak the highest CCTI reached.
	BECNs int64
	Peak  int
}

// CCTI returns the current table index.
func (q *CCT) CCTI() int { return q.ccti }

// Advance applies every CCTI timer expiry at or before now: the index drops by one each.
func (q *CCT) Advance(now sim.Time) {
	for q.ccti > q.cfg.CCTIMin && q.timerAt <= now {
		q.ccti--
		q.timerAt += q.cfg.CCTITimer
	}
	if q.ccti == q.cfg.CCTIMin {
		q.timerAt = sim.MaxTime
	}
}

// Rate is line / (1 + CCTI x CCTStep): the injection rate delay CCT[CCTI] after each packet.
func (q *CCT) Rate() sim.Rate {
	if q.ccti == 0 {
		return q.line
	}
	return sim.Rate(float64(q.line) / (1 + float64(q.ccti)*q.cfg.CCTStep))
}

// NextEvent is the next CCTI decrease.
func (q *CCT) NextEvent() sim.Time { return q.timerAt }

// OnSent does nothing: the delay is per packet, read through Rate.
func (q *CCT) OnSent(sim.Time, int64) {}

// OnCNP takes a BECN: CCTI += CCTIIncrease, at most CCTILimit; the timer starts if it was
// idle (it runs while the index is above its minimum).
func (q *CCT) OnCNP(now sim.Time) {
	q.BECNs++
	q.ccti = min(q.ccti+q.cfg.CCTIIncrease, q.cfg.CCTILimit)
	q.Peak = max(q.Peak, q.ccti)
	if q.timerAt == sim.MaxTime && q.ccti > q.cfg.CCTIMin {
		q.timerAt = now + q.cfg.CCTITimer
	}
}
