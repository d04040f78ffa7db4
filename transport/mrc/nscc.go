package mrc

import (
	"fmt"
	"math"

	"github.com/lockstepsim/lockstep/sim"
)

// NSCC constants given by the sources [UEC §3.6 NSCC; docs/protocols.md, "NSCC"]. They are the
// defaults of the matching NSCCConfig fields; the tuning knobs lockstep chose itself are listed
// apart, below.
const (
	// NSCCTargetFactorTrimming is the target queueing delay in base RTTs when switches trim.
	NSCCTargetFactorTrimming = 0.75
	// NSCCTargetFactorNoTrimming is the target queueing delay in base RTTs without trimming.
	NSCCTargetFactorNoTrimming = 1.0
	// NSCCMaxWindowFactor is the maximum window in BDPs.
	NSCCMaxWindowFactor = 1.5
	// NSCCGamma is the strength of the multiplicative decrease.
	NSCCGamma = 0.8
	// NSCCMinMDFactor is the floor of one multiplicative decrease: a window at most halves per
	// base RTT.
	NSCCMinMDFactor = 0.5
	// NSCCMinQueuePackets is a floor, in full packets, on what a maximum window above one BDP
	// leaves for queueing: the maximum window is at least BDP + 6 MTUs (lockstep default).
	// NSCC sizes everything in BDPs, which assumes a BDP of many packets; spraying queues
	// packets, not fractions of a BDP, at every hop. At 10G a BDP is about 5 packets and 1.5 BDP
	// left 2.7 packets of queue for 3 hops: a 128-host permutation ran at 0.74 of line (FCT 1.30
	// x ideal), at 0.89 with this floor (and the MRC profile's packet floors on ECN and trimming,
	// transport/mrc/mrcnic/config.go profile). From 100G up, 1.5 BDP is the larger and nothing changes.
	NSCCMinQueuePackets = 6
	// NSCCDelayEWMA is the weight of a new sample in the filtered queueing delay (avg_delay)
	// that sizes and gates the multiplicative decrease [UEC §3.6 NSCC: avg_delay, an EWMA with
	// weight 0.125].
	NSCCDelayEWMA = 0.125
)

// Lockstep defaults for the NSCC increase gains, scenario parameters. The sources give the
// quadrant rules but not the gains [docs/protocols.md, "NSCC"]. The UEC reference simulator (htsim,
// uec.cpp) scales its gains with the BDP ("scaling_factor_a" = BDP / (100 Gb/s x 12 us)); lockstep
// therefore expresses them as fractions of the BDP, which keeps the dynamics alike from 100G to
// 800G NICs.
const (
	// DefaultNSCCFairIncrease: in the fair-increase quadrant the window grows by 2% of the BDP
	// per window's worth of ACKs, like TCP's one MSS per RTT but scaled: about 6 MTUs of 4 KiB
	// on an 800 Gb/s x 12 us path, about one at 200 Gb/s x 10 us. Every flow gains the same
	// bytes per RTT while the decrease is multiplicative, so this gain sets how fast competing
	// flows converge to equal windows, and N flows swing the queue by N x 2% BDP per RTT. The
	// reference simulator's fi (5 MTUs at 100 Gb/s x 12 us, about 14% of the BDP) is gentler
	// here: in the fluid bottleneck of nscc_test.go, 16 senders keep the queue below the 1-BDP
	// trim threshold with 2% (peak 0.88 BDP) and reach it with 5%, while 4 staggered senders
	// still converge to within 1% of each other.
	DefaultNSCCFairIncrease = 0.02
	// DefaultNSCCPropIncrease: below the target delay the window grows, on top of the fair
	// increase, by up to 10% of the BDP per window's worth of ACKs, scaled by
	// (target - delay) / target: fastest with an empty queue, nothing extra at the target. The
	// reference simulator's alpha gives about 0.11 x the target's bytes (0.08 BDP) at zero
	// delay; lockstep rounds up to 0.1 BDP because it has no separate "fast increase" (not in
	// the sources, docs/protocols.md "NSCC"), so a flow that quick-adapted down to one MTU regains a
	// BDP in about ten base RTTs.
	DefaultNSCCPropIncrease = 0.1
)

// NSCCConfig parameterises one NSCC instance. BaseRTT, LinkRate and MTU come from the fabric
// at connection setup and are required; zero values of the other fields take the defaults that
// WithDefaults fills in.
type NSCCConfig struct {
	// BaseRTT is the unloaded round-trip time of the connection's longest path, data out and
	// ACK back (required, > 0) [docs/protocols.md, "NSCC"].
	BaseRTT sim.Time
	// LinkRate is the bottleneck rate used for the BDP: the sender NIC's aggregate rate over all
	// planes, bits/s (required, > 0) [docs/protocols.md, "NSCC": the slowest link's rate; with
	// MRC the fabric is full-bisection, so the NIC bounds the connection].
	LinkRate sim.Rate
	// MTU is the wire size in bytes of one full data packet, headers included (required, > 0).
	// It is the window's floor.
	MTU int64
	// TargetFactor sets the target queueing delay = TargetFactor x BaseRTT. Default 0.75
	// (NSCCTargetFactorTrimming, trimming on); use 1.0 (NSCCTargetFactorNoTrimming) when
	// switches do not trim [docs/protocols.md, "NSCC"].
	TargetFactor float64
	// MaxWindowFactor sets the maximum (and initial) window = MaxWindowFactor x BDP; default 1.5
	// [docs/protocols.md, "NSCC"]. Above 1 the window is at least BDP + NSCCMinQueuePackets MTUs.
	MaxWindowFactor float64
	// Gamma is the multiplicative-decrease strength in (0, 1]: the window is multiplied by
	// max(1 - Gamma (delay - target) / delay, 0.5); default 0.8 [docs/protocols.md, "NSCC"].
	Gamma float64
	// FairIncrease is the fair (additive) increase, as a fraction of the BDP added per window's
	// worth of acknowledged bytes; default 0.02 (lockstep default, DefaultNSCCFairIncrease).
	FairIncrease float64
	// PropIncrease is the proportional increase at zero queueing delay, as a fraction of the
	// BDP per window's worth of acknowledged bytes, scaled by (target - delay) / target and
	// added to the fair increase; default 0.1 (lockstep default, DefaultNSCCPropIncrease).
	PropIncrease float64
}

// WithDefaults returns c with zero optional fields set to their defaults. BaseRTT, LinkRate and
// MTU have no default.
func (c NSCCConfig) WithDefaults() NSCCConfig {
	if c.TargetFactor == 0 {
		c.TargetFactor = NSCCTargetFactorTrimming
	}
	if c.MaxWindowFactor == 0 {
		c.MaxWindowFactor = NSCCMaxWindowFactor
	}
	if c.Gamma == 0 {
		c.Gamma = NSCCGamma
	}
	if c.FairIncrease == 0 {
		c.FairIncrease = DefaultNSCCFairIncrease
	}
	if c.PropIncrease == 0 {
		c.PropIncrease = DefaultNSCCPropIncrease
	}
	return c
}

// validate names the first bad field of a config with defaults applied.
func (c NSCCConfig) validate() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case c.BaseRTT <= 0:
		return fmt.Errorf("nscc: BaseRTT %v must be positive", c.BaseRTT)
	case c.LinkRate <= 0:
		return fmt.Errorf("nscc: LinkRate %v must be positive", c.LinkRate)
	case c.MTU <= 0:
		return fmt.Errorf("nscc: MTU %d B must be positive", c.MTU)
	case !(c.TargetFactor > 0) || !finite(c.TargetFactor):
		return fmt.Errorf("nscc: TargetFactor %v must be positive (0.75 with trimming, 1.0 without)", c.TargetFactor)
	case !(c.MaxWindowFactor > 0) || !finite(c.MaxWindowFactor):
		return fmt.Errorf("nscc: MaxWindowFactor %v must be positive", c.MaxWindowFactor)
	case !(c.Gamma > 0 && c.Gamma <= 1):
		return fmt.Errorf("nscc: Gamma %v is out of range; allowed (0, 1]", c.Gamma)
	case !(c.FairIncrease > 0) || !finite(c.FairIncrease):
		return fmt.Errorf("nscc: FairIncrease %v must be positive (a fraction of the BDP per window of ACKs)", c.FairIncrease)
	case !(c.PropIncrease > 0) || !finite(c.PropIncrease):
		return fmt.Errorf("nscc: PropIncrease %v must be positive (a fraction of the BDP per window of ACKs)", c.PropIncrease)
	}
	// Bounds that keep every sum of times and every window far from overflow.
	const maxTime = sim.Time(math.MaxInt64 / 4)
	if c.BaseRTT > maxTime {
		return fmt.Errorf("nscc: BaseRTT %v is too long; allowed up to %v", c.BaseRTT, maxTime)
	}
	if t := c.TargetFactor * float64(c.BaseRTT); t < 1 || t > float64(maxTime) {
		return fmt.Errorf("nscc: TargetFactor %v x BaseRTT %v is out of range; the target delay must be 1ps..%v", c.TargetFactor, c.BaseRTT, maxTime)
	}
	bdp := c.LinkRate.BytesIn(c.BaseRTT)
	maxW := c.MaxWindowFactor * float64(bdp)
	if maxW < float64(c.MTU) {
		return fmt.Errorf("nscc: MaxWindowFactor %v x BDP %d B (%v x %v) is below MTU %d B",
			c.MaxWindowFactor, bdp, c.LinkRate, c.BaseRTT, c.MTU)
	}
	if maxW > 1<<52 {
		return fmt.Errorf("nscc: MaxWindowFactor %v x BDP %d B (%v x %v) is beyond 2^52 B",
			c.MaxWindowFactor, bdp, c.LinkRate, c.BaseRTT)
	}
	return nil
}

// NSCCStats counts what NSCC did, for reports. Each ACK (with ackedBytes > 0) lands in exactly
// one of the first six counters.
type NSCCStats struct {
	ProportionalIncreases int64 // ACKs without ECN and delay < target
	FairIncreases         int64 // ACKs without ECN and delay >= target
	Decreases             int64 // multiplicative decreases applied (at most one per base RTT)
	DecreasesHeld         int64 // ACKs with ECN and delay > target within a base RTT of the last decrease (or at the target)
	Holds                 int64 // ACKs with ECN and delay < target: the path is wrong, not the rate
	IgnoredAfterQA        int64 // ECN-marked ACKs ignored after a quick adapt, and ACKs that triggered one
	QuickAdapts           int64 // windows set to the bytes delivered in the last measurement interval
	Nacks                 int64 // trim NACKs (OnNack calls)
	NackedBytes           int64 // bytes those NACKs reported lost
	Timeouts              int64 // OnTimeout calls
}

// NSCC is the UEC network-signal-based sender congestion control [UEC §3.6 NSCC;
// docs/protocols.md, "NSCC"] as a sans-IO value: the caller feeds it ACKs, trim NACKs and timeouts
// with the current time and reads Window. It never reads a clock, allocates nothing per call and is
// not safe for concurrent use.
//
// Window rules, per ACK, from its ECN echo and its queueing delay d against the target
// (TargetFactor x BaseRTT):
//
//	no ECN, d <  target: proportional increase  w += (FI + PI (target-d)/target) BDP x acked/w
//	no ECN, d >= target: fair increase          w += FI x BDP x acked/w
//	ECN,    D >= target: multiplicative decrease w *= max(1 - Gamma (D-target)/D, 0.5),
//	                     at most once per BaseRTT (none at D == target: the factor is 1)
//	ECN,    D <  target: no change (the path, not the rate, is wrong; MRC moves off the EV)
//
// d is the ACK's own queueing delay; D is the filtered delay (avg_delay), an EWMA of the
// samples with weight NSCCDelayEWMA [UEC §3.6 NSCC]. Lockstep reads the decrease rule of
// docs/protocols.md ("NSCC") with the filtered delay, as the UEC specification sizes it: under
// per-packet spraying each ACK samples a different path, and one unlucky sample through a transient
// queue says little about the connection's queueing. With the raw sample, a 128-host 8-plane
// permutation cut windows about six times per flow and finished 7% behind the ideal (worst flow
// 15%); the ECN-marked path is handled by MRC moving off that EV, not by the rate.
//
// A trim NACK subtracts the lost bytes and arms quick adapt; see OnNack. The window starts at
// the maximum, MaxWindowFactor x BDP, and stays within [MTU, maximum]; BDP = LinkRate x
// BaseRTT.
//
// Invariants: MTU <= window <= maximum window; delivered >= 0.
type NSCC struct {
	cfg       NSCCConfig
	bdp       int64    // LinkRate x BaseRTT, bytes
	maxWnd    float64  // MaxWindowFactor x bdp, bytes
	minWnd    float64  // MTU, bytes
	target    sim.Time // TargetFactor x BaseRTT
	fiBytes   float64  // FairIncrease x bdp: bytes per window's worth of ACKs
	piBytes   float64  // PropIncrease x bdp: bytes per window's worth of ACKs at zero delay
	qaEpoch   sim.Time // quick-adapt measurement interval: BaseRTT + target
	avgDelay  float64  // filtered queueing delay (EWMA of samples), ps
	haveDelay bool     // avgDelay holds at least one sample
	wnd       float64  // congestion window, bytes (fractional: increases are sub-byte per ACK)
	nextMD    sim.Time // earliest time of the next multiplicative decrease
	epochEnd  sim.Time // end of the current quick-adapt measurement interval
	started   bool     // a measurement interval is running
	delivered int64    // bytes acknowledged in the current measurement interval
	qaArmed   bool     // a NACK or timeout asked for a quick adapt at the interval's end
	ignoreECN int64    // bytes of ACKs still to come for data sent before the last quick adapt

	// Stats counts the controller's decisions; the caller may read or reset it.
	Stats NSCCStats
}

// NewNSCC returns a controller with the window at its maximum. Errors name the bad field:
// BaseRTT, LinkRate or MTU missing or not positive; a factor or gain that is not a positive
// finite number; Gamma outside (0, 1]; a maximum window below one MTU.
func NewNSCC(cfg NSCCConfig) (*NSCC, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &NSCC{cfg: cfg}
	c.bdp = cfg.LinkRate.BytesIn(cfg.BaseRTT)
	c.maxWnd = cfg.MaxWindowFactor * float64(c.bdp)
	if cfg.MaxWindowFactor > 1 {
		c.maxWnd = max(c.maxWnd, float64(c.bdp)+NSCCMinQueuePackets*float64(cfg.MTU))
	}
	c.minWnd = float64(cfg.MTU)
	c.target = sim.Time(math.Round(cfg.TargetFactor * float64(cfg.BaseRTT)))
	c.fiBytes = cfg.FairIncrease * float64(c.bdp)
	c.piBytes = cfg.PropIncrease * float64(c.bdp)
	c.qaEpoch = cfg.BaseRTT + c.target
	c.wnd = c.maxWnd
	return c, nil
}

// Config returns the effective configuration, defaults filled in.
func (c *NSCC) Config() NSCCConfig { return c.cfg }

// BDP returns LinkRate x BaseRTT in bytes.
func (c *NSCC) BDP() int64 { return c.bdp }

// MaxWindow returns the window's ceiling (and starting value), MaxWindowFactor x BDP, in bytes.
func (c *NSCC) MaxWindow() int64 { return int64(c.maxWnd + 0.5) }

// AvgDelay returns the filtered queueing delay (avg_delay) that gates and sizes the
// multiplicative decrease.
func (c *NSCC) AvgDelay() sim.Time { return sim.Time(c.avgDelay + 0.5) }

// Target returns the target queueing delay, TargetFactor x BaseRTT.
func (c *NSCC) Target() sim.Time { return c.target }

// Window returns the congestion window in bytes, rounded to the nearest byte: the sender may
// have this many wire bytes unacknowledged. The window is kept with a fraction internally, as
// an increase per ACK is often below one byte.
func (c *NSCC) Window() int64 { return int64(c.wnd + 0.5) }

// OnAck processes acknowledged bytes [UEC §3.6 NSCC; docs/protocols.md, "NSCC"]. delay is the
// queueing delay the ACK measured: its RTT sample minus BaseRTT (negative values count as 0); ecn
// is the CE echo. ackedBytes is the wire bytes newly acknowledged (a SACK may cover several
// packets); ACKs with ackedBytes <= 0 are ignored.
//
// The ACK first counts towards the quick-adapt measurement. If a quick adapt is armed and the
// measurement interval has ended, the window is set from the measurement and this ACK changes
// nothing more. After a quick adapt, ECN-marked ACKs are ignored until a pre-adapt window's
// worth of bytes has been acknowledged: they report the queue the adapt already removed (the
// reference simulator's bytes_to_ignore, with the old window standing in for the bytes then in
// flight). Otherwise the ACK lands in one of the four quadrants in the type's comment.
func (c *NSCC) OnAck(now sim.Time, ackedBytes int64, delay sim.Time, ecn bool) {
	if ackedBytes <= 0 {
		return
	}
	if delay < 0 {
		delay = 0
	}
	if c.haveDelay {
		c.avgDelay += NSCCDelayEWMA * (float64(delay) - c.avgDelay)
	} else {
		c.avgDelay, c.haveDelay = float64(delay), true // the first sample seeds the filter
	}
	adapted := c.endEpoch(now)
	c.delivered += ackedBytes
	if c.ignoreECN > 0 {
		c.ignoreECN -= ackedBytes
		if adapted || ecn {
			// The ACK that closed the interval reports on data sent under the old window,
			// as do the marked ACKs after it.
			c.Stats.IgnoredAfterQA++
			return
		}
	}
	switch {
	case !ecn && delay < c.target:
		// Proportional increase: the fair increase plus a share that shrinks linearly to zero
		// as the delay reaches the target, so the increase never drops as the delay rises
		// past the target (the reference simulator's proportional_increase also adds the fair
		// increase).
		c.Stats.ProportionalIncreases++
		inc := c.fiBytes + c.piBytes*float64(c.target-delay)/float64(c.target)
		c.grow(inc * float64(ackedBytes) / c.wnd)
	case !ecn:
		c.Stats.FairIncreases++
		c.grow(c.fiBytes * float64(ackedBytes) / c.wnd)
	case c.avgDelay > float64(c.target) && now >= c.nextMD:
		c.Stats.Decreases++
		f := 1 - c.cfg.Gamma*(c.avgDelay-float64(c.target))/c.avgDelay
		if f < NSCCMinMDFactor {
			f = NSCCMinMDFactor
		}
		c.wnd *= f
		if c.wnd < c.minWnd {
			c.wnd = c.minWnd
		}
		c.nextMD = now + c.cfg.BaseRTT
	case c.avgDelay >= float64(c.target):
		c.Stats.DecreasesHeld++
	default:
		c.Stats.Holds++
	}
}

// OnNack processes a trim NACK [docs/protocols.md, "NSCC"; UEC §3.6 NSCC]: the window shrinks at
// once by lostBytes (the wire bytes of the trimmed packet) and quick adapt is armed.
//
// Quick adapt reads "window set to bytes delivered in the last base-RTT + target" as: the bytes
// acknowledged during the last measurement interval of BaseRTT + target, which is the
// connection's delivery rate x (BaseRTT + target): the share of the pipe it actually got plus
// the same share of a target-sized queue. That is how the UEC reference simulator measures it
// (achieved bytes over qa_endtime = now + base_rtt + target_Qdelay). Reading it instead as
// "delivered in one base RTT + target x LinkRate" would hand each of N incast senders a whole
// target queue, N times the target in all. Intervals run back to back from the first ACK, NACK
// or timeout, each starting at the first event after the previous one ends. At the first event
// after an interval ends, an armed quick adapt sets the window to that interval's delivered
// bytes (at least one MTU) if that is smaller than the window, and disarms; so it happens at
// most once per interval, hence at most once per base RTT. A NACK that arrives after the
// interval ended applies it at once.
func (c *NSCC) OnNack(now sim.Time, lostBytes int64) {
	c.Stats.Nacks++
	if lostBytes > 0 {
		c.Stats.NackedBytes += lostBytes
		c.shrink(float64(lostBytes))
	}
	c.qaArmed = true
	c.endEpoch(now)
}

// OnTimeout processes an ACK timeout (RTO) or a loss without a trim: the window shrinks by one
// MTU (the reference simulator's reaction to a packet marked for retransmission) and quick
// adapt is armed, as for a trim NACK.
//
// Lockstep choice, not in the sources: with trimming, a loss without a trim means a failed
// path, not congestion [MRC §2.1; docs/protocols.md, "Trimming"], and MRC retires that EV; cutting
// the window to one MTU or to half, as TCP would, would throttle the connection's other hundred-odd
// paths for a fault they do not share. Quick adapt instead sizes the window to what was actually
// delivered in the last interval: unchanged when the other paths kept delivering, down to one MTU
// when nothing got through (a dead peer or plane). Without trimming (TargetFactor 1.0) a timeout
// may be congestion, and the same measurement answers that too. Call it once per timeout expiry.
func (c *NSCC) OnTimeout(now sim.Time) {
	c.Stats.Timeouts++
	c.shrink(c.minWnd)
	c.qaArmed = true
	c.endEpoch(now)
}

// ArmQuickAdapt arms quick adapt without shrinking the window: at the end of the current
// measurement interval the window is set to the bytes delivered in it, if that is smaller (see
// OnNack). The caller uses it for a signal NSCC's quadrants do not see (lockstep: a plane of a
// multi-plane QP whose queueing delay far exceeds the target with no CE mark, Sender.absorb).
func (c *NSCC) ArmQuickAdapt(now sim.Time) {
	c.qaArmed = true
	c.endEpoch(now)
}

// endEpoch starts the first measurement interval, or closes the current one if it has ended,
// applying an armed quick adapt. It reports whether a quick adapt changed the window.
func (c *NSCC) endEpoch(now sim.Time) bool {
	if !c.started {
		c.started = true
		c.epochEnd = now + c.qaEpoch
		return false
	}
	if now < c.epochEnd {
		return false
	}
	adapted := false
	if c.qaArmed {
		c.qaArmed = false
		if w := math.Max(float64(c.delivered), c.minWnd); w < c.wnd {
			c.Stats.QuickAdapts++
			c.ignoreECN = int64(c.wnd)
			c.wnd = w
			adapted = true
		}
	}
	c.delivered = 0
	c.epochEnd = now + c.qaEpoch
	return adapted
}

// grow adds inc bytes to the window, up to the maximum.
func (c *NSCC) grow(inc float64) {
	c.wnd += inc
	if c.wnd > c.maxWnd {
		c.wnd = c.maxWnd
	}
}

// shrink removes dec bytes from the window, down to one MTU.
func (c *NSCC) shrink(dec float64) {
	c.wnd -= dec
	if c.wnd < c.minWnd {
		c.wnd = c.minWnd
	}
}
