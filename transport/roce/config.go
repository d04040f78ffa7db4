package roce

import (
	"cmp"
	"fmt"
	"math"

	"github.com/lockstepsim/lockstep/sim"
)

// ConfigPath is the YAML path of the RoCEv2 block in a scenario, the prefix NewSender and
// NewReceiver give Validate.
const ConfigPath = "transport.roce"

// Config holds every RoCEv2 parameter a scenario may set (transport: {kind: roce, roce: {...}}).
// Defaults returns the full default configuration; WithDefaults fills the zero fields of a
// partial one, so a block decoded from YAML over a zero value and one decoded over Defaults()
// resolve alike.
type Config struct {
	// QPsPerPeer is how many QPs each (source, destination) host pair opens on each plane; a
	// transfer is striped across them (Stripe), each QP hashed onto its own ECMP path (QP
	// scaling). Default 1; allowed 1..MaxQPsPerPeer. Used by the runner, not by one engine.
	QPsPerPeer int `yaml:"qps_per_peer"`
	// PayloadBytes is the RDMA payload per data packet, the path MTU: one of 256, 512, 1024,
	// 2048, 4096 [IBTA: path MTU]; default 4096 (what AI fabrics configure).
	PayloadBytes int `yaml:"payload_bytes"`
	// HeaderBytes is the overhead every packet pays on the wire (Ethernet + IP + UDP + BTH +
	// ICRC); default DefaultHeaderBytes (82, IPv6). A data packet that opens a transfer adds
	// RETHBytes (16), an ACK or NAK AETHBytes (4), a CNP CNPPayloadBytes (16).
	HeaderBytes int `yaml:"header_bytes"`
	// AckEvery: the responder acknowledges every this many in-order data packets, and at once
	// on a packet with AckReq (the last of each transfer, or one that fills the sender's
	// window). Lockstep default 1: an ACK per packet, as the HPCC ns-3 RoCE/DCQCN simulator
	// (L2_ACK_INTERVAL 1) and the simulators built on it run; NIC coalescing is unpublished.
	AckEvery int `yaml:"ack_every"`
	// Window bounds the wire bytes in flight (sent, not acknowledged); 0 (default) means no
	// bound beyond DCQCN's rate and IBTA's 2^23 outstanding PSNs: RoCEv2 NICs pace by rate and
	// keep no congestion window [DCQCN §3].
	Window sim.Size `yaml:"window"`
	// RTO is the local ACK timeout: with data outstanding and no progress for this long, the
	// requester resends from the oldest unacknowledged PSN [IBTA §9.7, requester: transport
	// timer]. Default DefaultRTO = LocalAckTimeout(20) = 4.294967296 s, NCCL's default
	// (NCCL_IB_TIMEOUT 20). Allowed 1us .. LocalAckTimeout(31) (about 2.4 h). The runner warns
	// when it is shorter than the time to drain the worst paused path, which would error QPs
	// whose packets only wait behind PFC pauses.
	RTO sim.Time `yaml:"rto"`
	// RetryCount is how many times the requester retries after a timeout (or a sequence NAK
	// that brought no progress) before the QP errors, 1..7 [IBTA §9.7: 3-bit retry count; ibv_modify_qp(3): retry_cnt];
	// default 7, the IBTA maximum and NCCL's default NCCL_IB_RETRY_CNT (perftest uses it too). IBTA's 0 is
	// not offered: it turns any tail loss into a QP error.
	RetryCount int `yaml:"retry_count"`
	// CNPInterval: the notification point sends at most one CNP per QP per this interval.
	// Default by DCQCN profile: 20us under "production" (lockstep default, of the order of
	// ConnectX's 4 us rate-reduction period, rate_reduce_monitor_period), 50us under
	// "paper" [DCQCN §3.1: N = 50 us; docs/protocols.md, "RoCEv2: DCQCN"].
	CNPInterval sim.Time `yaml:"cnp_interval"`
	// DCQCN configures the reaction point (the sender's rate control).
	DCQCN DCQCNConfig `yaml:"dcqcn"`
	// OutOfOrder is the responder's out-of-order placement (transport.roce.out_of_order).
	// Left out (nil, or enabled left out) it follows fabric.adaptive_routing (ForFabric): on
	// under adaptive routing, as Spectrum-X pairs its switches' AR with the SuperNIC's
	// placement, off otherwise (RoCEv2's in-order go-back-N). WithDefaults applies it through
	// WithReorder when it is on.
	OutOfOrder *OutOfOrder `yaml:"out_of_order,omitempty"`
	// reorder is the responder's out-of-order placement window in packets (WithReorder); 0
	// (RoCEv2's default) accepts data in PSN order only.
	reorder int
	// reorderTime is how long a hole may stay open before the responder NAKs it (WithReorder).
	reorderTime sim.Time
	// reorderFanIn is what the hold grows by for each further source with data outstanding
	// into the responder's NIC port (WithReorderFanIn); 0: a fixed hold.
	reorderFanIn sim.Time
	// reorderFanInMax caps the sources the hold grows for (WithReorderFanIn); 0: no cap.
	reorderFanInMax int
	// rateControl makes each sender's reaction point instead of DCQCN (WithRateControl); nil:
	// DCQCN.
	rateControl RateControlMaker
}

// DCQCNConfig holds the DCQCN reaction-point parameters [DCQCN §3.1, with the values the paper
// recommends for its 40 Gb/s NICs; docs/protocols.md, "RoCEv2: DCQCN"]. Rates given as 0 scale
// with the line rate (see each field), so one default serves 100G and 800G NICs.
type DCQCNConfig struct {
	// Profile names the parameter set the zero fields take (DCQCNProfileProduction, the
	// default, or DCQCNProfilePaper); fields given explicitly override it.
	Profile string `yaml:"profile"`
	// Disabled turns DCQCN off: the sender paces at line rate and ignores CNPs (a RoCEv2
	// fabric relying on PFC alone). Default false.
	Disabled bool `yaml:"disabled"`
	// G is the alpha gain g: alpha = (1-g) alpha + g on a CNP, (1-g) alpha per AlphaTimer
	// without one; default 1/256 [DCQCN §3.1 and its recommended values; docs/protocols.md,
	// "RoCEv2: DCQCN"]. Allowed (0, 1].
	G float64 `yaml:"g"`
	// InitialAlpha is alpha before the first CNP; default 1 [DCQCN §3.1], so the first CNP
	// halves the rate. Allowed (0, 1].
	InitialAlpha float64 `yaml:"initial_alpha"`
	// AlphaTimer is K: alpha decays once per this interval without a CNP; default 55us, longer
	// than the CNP interval as [DCQCN §3.1] requires.
	AlphaTimer sim.Time `yaml:"alpha_timer"`
	// RateIncreaseTimer is T: the rate increases once per this interval since the last CNP;
	// default 10us under "production" (ProductionRateIncreaseTimer), 55us under "paper"
	// [DCQCN §3.1 and its recommended values].
	RateIncreaseTimer sim.Time `yaml:"rate_increase_timer"`
	// ByteCounter is B: the rate also increases once per this many bytes sent since the last
	// CNP. Default: "paper" 10 MB (10,000,000 B) [DCQCN §3.1 and its recommended values];
	// "production" 0, meaning 40 us of the line rate (500 KB at 100 Gb/s), resolved per sender.
	ByteCounter sim.Size `yaml:"byte_counter"`
	// FastRecoverySteps is F: the first F increases after a CNP are fast recovery
	// (Rc = (Rt + Rc) / 2); after F timer or byte-counter events additive increase, after F of
	// both hyper increase; default 2 under "production", 5 under "paper" [DCQCN §3.1;
	// docs/protocols.md, "RoCEv2: DCQCN"]. Allowed 1..64.
	FastRecoverySteps int `yaml:"fast_recovery_steps"`
	// RateAI is R_AI, the target rate's additive step. 0 (default) scales with the line rate:
	// "paper" line / 1000, the paper's 40 Mb/s on its 40 Gb/s NICs [DCQCN recommended value]
	// (lockstep scaling; a fixed 40 Mb/s step would take seconds to matter at 800G);
	// "production" line / 170 (588 Mb/s per 10 us step at 100G; lockstep default, see
	// DCQCNProfileProduction).
	RateAI sim.Rate `yaml:"rate_ai"`
	// RateHAI is R_HAI, the hyper-increase step. 0 (default) means 10 x RateAI, the ratio of
	// the QCN reference (IEEE 802.1Qau: 5 and 50 Mb/s) that DCQCN's RP descends from and of the
	// ConnectX defaults (rpg_ai_rate 5, rpg_hai_rate 50 Mb/s).
	RateHAI sim.Rate `yaml:"rate_hai"`
	// MinRate is the floor a CNP cannot cut below; default 100 Mb/s (the HPCC ns-3 DCQCN
	// default MIN_RATE). Must not exceed the line rate.
	MinRate sim.Rate `yaml:"min_rate"`
	// FlowRecovery, at run.engine flow, caps each QP's flows by DCQCN's recovery curve after
	// it stops sharing a congested link (docs/protocols.md, "DCQCN at flow level"); it has no
	// effect at packet level, with DCQCN disabled, or on a run with faults. Default false:
	// the flow level's RoCE rates are max-min (the measured effect, and why it is off, are in
	// that section).
	FlowRecovery bool `yaml:"flow_recovery,omitempty"`
}

// Lockstep defaults and the constants they come from.
const (
	// DefaultPayloadBytes is the default path MTU payload [IBTA: largest path MTU].
	DefaultPayloadBytes = 4096
	// DefaultAckEvery: one ACK per in-order packet (see Config.AckEvery).
	DefaultAckEvery = 1
	// DefaultRTOExp is the IBTA timeout exponent of DefaultRTO: 20, NCCL's default
	// NCCL_IB_TIMEOUT (NCCL environment variables documentation; 4.096 us x 2^20).
	DefaultRTOExp = 20
	// DefaultRTO is LocalAckTimeout(20) = 4.294967296 s, NCCL's default. RoCEv2 recovers a
	// lost tail, a lost NAK and a blackholed path only by this timeout, so at this default a
	// lossy fabric pays seconds per tail loss, as NCCL jobs do; what it buys is that QPs whose
	// packets wait behind PFC pauses (a lossless incast of a thousand flows drains for
	// milliseconds) never error. With 7 retries a blackholed QP errors after 8 x 4.3 s, about
	// 34 s. A failure study can set rto shorter (perftest uses 14, 67 ms).
	DefaultRTO = LocalAckTimeoutUnit << DefaultRTOExp
	// MaxQPsPerPeer bounds Config.QPsPerPeer (gains from QP scaling stop near 8
	// [docs/protocols.md, "RoCEv2: QP scaling and ECMP"]).
	MaxQPsPerPeer = 64
	// DefaultRetryCount is the IBTA maximum retry count [IBTA §9.7, requester: transport timer].
	DefaultRetryCount = 7
	// MaxRetryCount is the largest retry_cnt a 3-bit field holds.
	MaxRetryCount = 7
	// DefaultCNPInterval is the "paper" profile's CNP spacing [DCQCN §3.1; docs/protocols.md,
	// "RoCEv2: DCQCN"].
	DefaultCNPInterval = 50 * sim.Microsecond

	// DCQCNG is the alpha gain g [DCQCN §3.1; docs/protocols.md, "RoCEv2: DCQCN"].
	DCQCNG = 1.0 / 256
	// DCQCNAlphaTimer is K [DCQCN §3.1; docs/protocols.md, "RoCEv2: DCQCN": 55 us].
	DCQCNAlphaTimer = 55 * sim.Microsecond
	// DCQCNRateIncreaseTimer is the "paper" profile's T [DCQCN recommended value].
	DCQCNRateIncreaseTimer = 55 * sim.Microsecond
	// DCQCNByteCounter is the "paper" profile's B in bytes [DCQCN recommended value: 10 MB].
	DCQCNByteCounter = 10_000_000
	// DCQCNFastRecoverySteps is the "paper" profile's F [DCQCN §3.1; docs/protocols.md, "RoCEv2:
	// DCQCN"].
	DCQCNFastRecoverySteps = 5
	// DCQCNRateAIDivisor: under "paper", RateAI 0 means line rate / this (DCQCNConfig.RateAI).
	DCQCNRateAIDivisor = 1000
	// DCQCNHAIFactor: RateHAI 0 means RateAI x this (see DCQCNConfig.RateHAI).
	DCQCNHAIFactor = 10
	// DCQCNMinRate is the default rate floor (see DCQCNConfig.MinRate).
	DCQCNMinRate = 100 * sim.Mbps

	// DCQCNProfileProduction (the default profile) reacts and recovers on the microsecond
	// scale of current NICs rather than the paper's 40 Gb/s-era timers: CNPs at most every
	// ProductionCNPInterval per QP, a rate-increase event every ProductionRateIncreaseTimer and
	// every ProductionByteCounterTime of line rate sent, ProductionFastRecoverySteps of fast
	// recovery, R_AI = line / ProductionRateAIDivisor; g, alpha's timer, the initial alpha and
	// R_HAI = 10 R_AI are the paper's. Anchors: NVIDIA ConnectX (DOCA "DCQCN CC parameters")
	// reduces at most once per 4 us (rate_reduce_monitor_period), updates alpha every 1 us
	// with g = 5/1024 and cuts at most 50% (rpg_min_dec_fac); the increase side here is
	// lockstep's, chosen by a parameter sweep so that, on the defaults, DCQCN rather than PFC
	// controls a 7 -> 1 incast plus victim at 25G, 100G and 400G (victim >= 0.6 of line, the
	// incast flows within 20% of each other) and an 11 -> 1 incast at 25G (bottleneck >= 95%
	// busy, standing queue <= 3 BDP); runner tests pin both. A lockstep default, documented
	// in docs/protocols.md. T must exceed the packet spacing of a QP at its fair share, or
	// fast recovery undoes every cut before the next CNP (T 5 us left an 11 -> 1 incast at
	// 25G to PFC with a 1.9 MB standing queue; a CNP interval above about 2 T did too).
	DCQCNProfileProduction = "production"
	// DCQCNProfilePaper is the parameter set of [DCQCN §3.1 and its recommended values]: CNP
	// every 50 us, T 55 us, B 10 MB, F 5, R_AI line / 1000 (40 Mb/s at 40G).
	DCQCNProfilePaper = "paper"

	// ProductionCNPInterval is the "production" profile's CNP spacing per QP.
	ProductionCNPInterval = 20 * sim.Microsecond
	// ProductionRateIncreaseTimer is the "production" profile's T.
	ProductionRateIncreaseTimer = 10 * sim.Microsecond
	// ProductionByteCounterTime: the "production" profile's B is this long at line rate.
	ProductionByteCounterTime = 40 * sim.Microsecond
	// ProductionFastRecoverySteps is the "production" profile's F.
	ProductionFastRecoverySteps = 2
	// ProductionRateAIDivisor: the "production" profile's R_AI is line rate / this.
	ProductionRateAIDivisor = 170
)

// Defaults returns the default configuration, every field set (rates that scale with the
// line rate stay 0, meaning "scaled"; see DCQCNConfig).
func Defaults() Config {
	return Config{}.WithDefaults()
}

// WithDefaults returns c with every zero field set to its default. Window 0 (unbounded),
// DCQCN.Disabled false and DCQCN.RateAI/RateHAI 0 (scaled with the line rate) are meaningful
// zeros and stay.
func (c Config) WithDefaults() Config {
	if c.QPsPerPeer == 0 {
		c.QPsPerPeer = 1
	}
	if c.PayloadBytes == 0 {
		c.PayloadBytes = DefaultPayloadBytes
	}
	if c.HeaderBytes == 0 {
		c.HeaderBytes = DefaultHeaderBytes
	}
	if c.AckEvery == 0 {
		c.AckEvery = DefaultAckEvery
	}
	if c.RTO == 0 {
		c.RTO = DefaultRTO
	}
	if c.RetryCount == 0 {
		c.RetryCount = DefaultRetryCount
	}
	c.DCQCN = c.DCQCN.WithDefaults()
	if c.OutOfOrderOn() && c.reorder == 0 {
		o := c.OutOfOrder
		c = c.WithReorder(cmp.Or(o.Window, DefaultReorderWindow), cmp.Or(o.Hold, DefaultReorderHold))
	}
	if c.CNPInterval == 0 {
		c.CNPInterval = DefaultCNPInterval
		if c.DCQCN.Profile == DCQCNProfileProduction {
			c.CNPInterval = ProductionCNPInterval
		}
	}
	return c
}

// WithDefaults returns d with every zero field set to its profile's default (Profile ""
// means DCQCNProfileProduction); RateAI and RateHAI, and under "production" ByteCounter, stay
// 0 (scaled with the line rate when a sender is made, Resolve). An unknown profile is left for
// Validate to name.
func (d DCQCNConfig) WithDefaults() DCQCNConfig {
	if d.Profile == "" {
		d.Profile = DCQCNProfileProduction
	}
	if d.Profile == DCQCNProfileProduction {
		if d.RateIncreaseTimer == 0 {
			d.RateIncreaseTimer = ProductionRateIncreaseTimer
		}
		if d.FastRecoverySteps == 0 {
			d.FastRecoverySteps = ProductionFastRecoverySteps
		}
	} else if d.ByteCounter == 0 {
		d.ByteCounter = DCQCNByteCounter
	}
	if d.G == 0 {
		d.G = DCQCNG
	}
	if d.InitialAlpha == 0 {
		d.InitialAlpha = 1
	}
	if d.AlphaTimer == 0 {
		d.AlphaTimer = DCQCNAlphaTimer
	}
	if d.RateIncreaseTimer == 0 {
		d.RateIncreaseTimer = DCQCNRateIncreaseTimer
	}
	if d.FastRecoverySteps == 0 {
		d.FastRecoverySteps = DCQCNFastRecoverySteps
	}
	if d.MinRate == 0 {
		d.MinRate = DCQCNMinRate
	}
	return d
}

// Resolve returns d with RateAI and RateHAI scaled from line (bits/s) where they are 0: RateAI
// = line / 1000 under "paper", line / ProductionRateAIDivisor under "production" (at least
// 1 bit/s), RateHAI = 10 x RateAI; under "production" a ByteCounter of 0 becomes
// ProductionByteCounterTime of line rate. The result is the effective configuration a sender
// at that line rate runs.
func (d DCQCNConfig) Resolve(line sim.Rate) DCQCNConfig {
	div := sim.Rate(DCQCNRateAIDivisor)
	if d.Profile == DCQCNProfileProduction {
		div = ProductionRateAIDivisor
		if d.ByteCounter == 0 {
			d.ByteCounter = sim.Size(max(line.BytesIn(ProductionByteCounterTime), 1))
		}
	}
	if d.RateAI == 0 {
		d.RateAI = max(line/div, 1)
	}
	if d.RateHAI == 0 {
		d.RateHAI = d.RateAI * DCQCNHAIFactor
	}
	return d
}

// Validate names the first bad field of a configuration with defaults applied, as
// "prefix.field: value is out of range; allowed ..." (prefix is the block's YAML path,
// normally ConfigPath; "" leaves the bare field name).
func (c Config) Validate(prefix string) error {
	bad := func(f, format string, a ...any) error {
		if prefix != "" {
			f = prefix + "." + f
		}
		return fmt.Errorf("%s: %s", f, fmt.Sprintf(format, a...))
	}
	if o := c.OutOfOrder; o != nil {
		if o.Window < 0 || o.Window > MaxReorderWindow {
			return bad("out_of_order.window", "%d is out of range; allowed 0 (default %d) or 1..%d packets", o.Window, DefaultReorderWindow, MaxReorderWindow)
		}
		if o.Hold != 0 && (o.Hold < sim.Microsecond || o.Hold > sim.Second) {
			return bad("out_of_order.hold", "%v is out of range; allowed 0 (default %v) or 1us..1s", o.Hold, DefaultReorderHold)
		}
	}
	if c.QPsPerPeer < 1 || c.QPsPerPeer > MaxQPsPerPeer {
		return bad("qps_per_peer", "%d is out of range; allowed 1..%d", c.QPsPerPeer, MaxQPsPerPeer)
	}
	switch c.PayloadBytes {
	case 256, 512, 1024, 2048, 4096:
	default:
		return bad("payload_bytes", "%d is not an IBTA path MTU; allowed 256, 512, 1024, 2048, 4096", c.PayloadBytes)
	}
	switch {
	case c.HeaderBytes < 1 || c.HeaderBytes > 1024:
		return bad("header_bytes", "%d is out of range; allowed 1..1024", c.HeaderBytes)
	case c.AckEvery < 1 || c.AckEvery > 1024:
		return bad("ack_every", "%d is out of range; allowed 1..1024", c.AckEvery)
	case c.Window < 0 || c.Window > 1<<40:
		return bad("window", "%v is out of range; allowed 0 (unbounded) or up to 1TiB", c.Window)
	case c.Window != 0 && int64(c.Window) < int64(c.PayloadBytes+c.HeaderBytes+RETHBytes):
		return bad("window", "%v is below one full packet (%d B); allowed 0 (unbounded) or at least one packet",
			c.Window, c.PayloadBytes+c.HeaderBytes+RETHBytes)
	case c.RTO < sim.Microsecond || c.RTO > LocalAckTimeout(31):
		return bad("rto", "%v is out of range; allowed 1us..%v (4.096us x 2^31)", c.RTO, LocalAckTimeout(31))
	case c.RetryCount < 1 || c.RetryCount > MaxRetryCount:
		return bad("retry_count", "%d is out of range; allowed 1..7 (IBTA retry_cnt)", c.RetryCount)
	case c.CNPInterval < 0 || c.CNPInterval > sim.Second:
		return bad("cnp_interval", "%v is out of range; allowed 0..1s", c.CNPInterval)
	}
	if err := c.DCQCN.validate(); err != nil {
		return bad("dcqcn."+err.field, "%s", err.msg)
	}
	return nil
}

type fieldErr struct{ field, msg string }

// validate checks a DCQCNConfig with defaults applied; line-rate checks happen in NewDCQCN.
func (d DCQCNConfig) validate() *fieldErr {
	bad := func(f, format string, a ...any) *fieldErr {
		return &fieldErr{f, fmt.Sprintf(format, a...)}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case d.Profile != DCQCNProfileProduction && d.Profile != DCQCNProfilePaper:
		return bad("profile", "%q is not a DCQCN profile; allowed %s (default), %s", d.Profile, DCQCNProfileProduction, DCQCNProfilePaper)
	case !(d.G > 0 && d.G <= 1) || !finite(d.G):
		return bad("g", "%v is out of range; allowed (0, 1]", d.G)
	case !(d.InitialAlpha > 0 && d.InitialAlpha <= 1) || !finite(d.InitialAlpha):
		return bad("initial_alpha", "%v is out of range; allowed (0, 1]", d.InitialAlpha)
	case d.AlphaTimer < sim.Nanosecond || d.AlphaTimer > sim.Second:
		return bad("alpha_timer", "%v is out of range; allowed 1ns..1s", d.AlphaTimer)
	case d.RateIncreaseTimer < sim.Nanosecond || d.RateIncreaseTimer > sim.Second:
		return bad("rate_increase_timer", "%v is out of range; allowed 1ns..1s", d.RateIncreaseTimer)
	case d.ByteCounter < 0 || d.ByteCounter > 1<<40 || d.ByteCounter == 0 && d.Profile != DCQCNProfileProduction:
		return bad("byte_counter", "%v is out of range; allowed 1B..1TiB (0: 20 us of line rate, production profile only)", d.ByteCounter)
	case d.FastRecoverySteps < 1 || d.FastRecoverySteps > 64:
		return bad("fast_recovery_steps", "%d is out of range; allowed 1..64", d.FastRecoverySteps)
	case d.RateAI < 0 || d.RateAI > sim.Pbps:
		return bad("rate_ai", "%v is out of range; allowed 0 (line rate / 1000) up to 1Pbps", d.RateAI)
	case d.RateHAI < 0 || d.RateHAI > sim.Pbps:
		return bad("rate_hai", "%v is out of range; allowed 0 (10 x rate_ai) up to 1Pbps", d.RateHAI)
	case d.MinRate < sim.Kbps || d.MinRate > sim.Pbps:
		return bad("min_rate", "%v is out of range; allowed 1Kbps..1Pbps (and at most the line rate)", d.MinRate)
	}
	return nil
}

// dataWire is the wire size of a data packet with payload n; opens says it carries RETH.
func (c *Config) dataWire(n int64, opens bool) int64 {
	w := n + int64(c.HeaderBytes)
	if opens {
		w += RETHBytes
	}
	return w
}

// AckWire is the wire size of an ACK or NAK: HeaderBytes + AETH (86 B by default).
func (c *Config) AckWire() int { return c.HeaderBytes + AETHBytes }

// CNPWire is the wire size of a CNP: HeaderBytes + 16 reserved bytes (98 B by default).
func (c *Config) CNPWire() int { return c.HeaderBytes + CNPPayloadBytes }

// DataWire is the wire size of a data packet carrying payload bytes; first says it opens its
// transfer (RETH): 4178 B for a full 4 KiB packet by default, 4194 B for a first one.
func (c *Config) DataWire(payload int, first bool) int {
	return int(c.dataWire(int64(payload), first))
}

// DataPacketBytes returns a full data packet's payload (PayloadBytes) and the largest data
// packet's wire size (a full first packet, with RETH: DataWire), bytes, of a resolved
// configuration (transport.DataPacketSizer).
func (c *Config) DataPacketBytes() (payload, wire int64) {
	return int64(c.PayloadBytes), int64(c.DataWire(c.PayloadBytes, true))
}

// QPsPerTransfer returns the QPs one traffic transfer opens over planes planes: QPsPerPeer on
// each plane, the transfer striped over them (rocenic.Endpoint; transport.QPFanout).
func (c *Config) QPsPerTransfer(planes int) int { return max(1, c.QPsPerPeer) * max(1, planes) }

// WithReorder returns c with out-of-order placement at the responder [NVIDIA DOCA,
// Out-of-order Data Placement: ConnectX-5 and later accept RC packets that arrive out of order
// and place them directly into host memory instead of dropping them and triggering
// retransmissions]: packets up to window-1 PSNs above the expected one are placed as they
// come and acknowledged cumulatively once the hole fills; a sequence-error NAK goes out only
// for a packet beyond the window or when a hole has stayed open for hold. window 0 turns it
// off (in-order, go-back-N). Not a YAML setting: transports opt in (InfiniBand with
// adaptive routing). A positive window is rounded up to a power of two (the ring indexes by
// PSN) and clamped to MaxReorderWindow.
func (c Config) WithReorder(window int, hold sim.Time) Config {
	w := 0
	if window > 0 {
		w = 1
		for w < window && w < MaxReorderWindow {
			w <<= 1
		}
	}
	c.reorder, c.reorderTime = w, hold
	return c
}

// WithReorderFanIn returns c whose out-of-order hold grows with the responder NIC's fan-in:
// hold + (min(n, maxSources)-1) x perQP while n >= 1 source hosts have data outstanding into
// the responder's NIC port (FanIn, Receiver.ShareFanIn), bounded by MaxReorderHold;
// maxSources 0 or negative: no cap. A credit buffer ahead of an n-to-1
// bottleneck drains at about C/n, not C, so the reordering two packets of one QP can meet
// grows with n (docs/protocols.md, "Automatic out-of-order hold"). perQP 0 or negative: a
// fixed hold (WithReorder's).
func (c Config) WithReorderFanIn(perQP sim.Time, maxSources int) Config {
	c.reorderFanIn, c.reorderFanInMax = max(perQP, 0), max(maxSources, 0)
	return c
}

// ReorderFanIn returns the hold's growth per further source with data outstanding into the
// responder's NIC port (0: a fixed hold) and the most sources it grows for (0: no cap):
// WithReorderFanIn's.
func (c Config) ReorderFanIn() (perQP sim.Time, maxSources int) {
	return c.reorderFanIn, c.reorderFanInMax
}

// MaxReorderHold bounds the out-of-order hold as fan-in grows it (WithReorderFanIn): 1 s,
// transport.ib.out_of_order.hold's upper bound.
const MaxReorderHold = sim.Second

// Reorder returns the out-of-order placement window in packets (0: in order only) and the
// hole hold time (Config.WithReorder).
func (c Config) Reorder() (window int, hold sim.Time) { return c.reorder, c.reorderTime }

// OutOfOrderOn reports whether out-of-order placement is on as written (after ForFabric:
// as in force).
func (c Config) OutOfOrderOn() bool {
	o := c.OutOfOrder
	return o != nil && o.Enabled != nil && *o.Enabled
}

// ForFabric returns c for a fabric with adaptive routing on or off, defaults filled: an
// out-of-order placement left out (no block, or a block without enabled) is turned on under
// adaptive routing, since adaptive routing reorders a QP's packets and an in-order responder
// answers every reorder with a sequence-error NAK and a go-back-N resend of all that followed
// [IBTA vol 1 §9.7.5.1.1] (the Ethernet AR figures in docs/protocols.md: a retransmission
// storm). Spectrum-X sells its switches' adaptive routing with the SuperNIC's packet
// placement [NVIDIA Spectrum-X: adaptive routing with reordering handled by the receiving
// SuperNIC]. A written enabled, true or false, is kept; without adaptive routing nothing
// changes.
func (c Config) ForFabric(adaptive bool) Config {
	if o := c.OutOfOrder; adaptive && (o == nil || o.Enabled == nil) {
		on := true
		n := OutOfOrder{}
		if o != nil {
			n = *o
		}
		n.Enabled = &on
		c.OutOfOrder = &n
	}
	return c.WithDefaults()
}

// MaxReorderWindow bounds the out-of-order placement window, packets.
const MaxReorderWindow = 1 << 16

// OutOfOrder is transport.roce.out_of_order: out-of-order placement at the responder, for
// RoCE over a fabric that reorders (fabric.adaptive_routing: Spectrum-X style Ethernet AR
// with NIC-side placement [NVIDIA DOCA, Out-of-order Data Placement; NVIDIA Spectrum-X:
// adaptive routing with packet reordering handled by the receiving SuperNIC]).
type OutOfOrder struct {
	// Enabled turns it on (true) or off (false); left out (nil) it follows
	// fabric.adaptive_routing.enabled (Config.ForFabric), and the written scenario
	// (lockstep validate, scenario.yaml) says so in a comment with the value in force (the
	// follows tag, scenario.Encode).
	Enabled *bool `yaml:"enabled,omitempty" follows:"fabric.adaptive_routing.enabled"`
	// Window is how many PSNs above the expected one are placed, packets; 0:
	// DefaultReorderWindow; rounded up to a power of two; allowed up to MaxReorderWindow.
	Window int `yaml:"window,omitempty"`
	// Hold is how long a hole may stay open before the responder NAKs it; 0:
	// DefaultReorderHold; allowed 1us..1s.
	Hold sim.Time `yaml:"hold,omitempty"`
}

// Out-of-order placement defaults (transport.roce.out_of_order, and InfiniBand's): a window
// of 1,024 packets (4 MiB at a 4 KiB MTU, well over a 100G fat tree's BDP) and a hole hold of
// 100 us (many RTTs of a two- or three-tier tree at its queue limits, so adaptive routing's
// reordering never triggers it). Lockstep choices: NVIDIA does not publish ConnectX's.
const (
	DefaultReorderWindow = 1024
	DefaultReorderHold   = 100 * sim.Microsecond
)
