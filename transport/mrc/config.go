package mrc

import (
	"fmt"

	"github.com/lockstepsim/lockstep/sim"
)

// Header sizes on the wire, in bytes [MRC §2.2: SRv6 adds an outer IPv6 header].
const (
	EthernetBytes = 14 + 4 // MAC header + FCS
	IPv6Bytes     = 40
	UDPBytes      = 8
	BTHBytes      = 12 // InfiniBand base transport header, as in RoCEv2
	RETHBytes     = 16 // RDMA extended header: virtual address, key, DMA length
	// DefaultHeaderBytes is a data packet's overhead: Ethernet + IPv6 + outer IPv6 (SRv6) +
	// UDP + BTH + RETH = 134 B.
	DefaultHeaderBytes = EthernetBytes + 2*IPv6Bytes + UDPBytes + BTHBytes + RETHBytes
	// SACKExtBytes is the SACK payload: cumulative PSN and offset, 64-bit bitmap, echoed EV and
	// timestamp, congestion state (lockstep layout of [API] fields).
	SACKExtBytes = 32
	// DefaultAckBytes is a SACK, NACK or probe on the wire: Ethernet + 2 IPv6 + UDP + BTH + the
	// SACK extension = 150 B.
	DefaultAckBytes = EthernetBytes + 2*IPv6Bytes + UDPBytes + BTHBytes + SACKExtBytes
)

// Config holds every MRC parameter a scenario may set (transport: {kind: mrc, ...}). Zero
// fields take the defaults WithDefaults documents.
type Config struct {
	// PayloadBytes is the RDMA payload per data packet (MTU payload); default 4096.
	PayloadBytes int `yaml:"payload_bytes"`
	// HeaderBytes is the per-data-packet overhead on the wire; default DefaultHeaderBytes (134).
	HeaderBytes int `yaml:"header_bytes"`
	// AckBytes is the wire size of SACKs, NACKs and probes; default DefaultAckBytes (150).
	AckBytes int `yaml:"ack_bytes"`
	// AckEvery: the receiver sends a SACK every this many data packets, and at once on a CE
	// mark, a duplicate, a filled hole, a gap near the bitmap's reach or a completed transfer;
	// lockstep default 4 ([API] leaves coalescing to the implementation; 4 keeps SACK overhead
	// under 1% of a link with 4 KiB packets).
	AckEvery int `yaml:"ack_every"`
	// AckDelay bounds coalescing: a placed packet is acknowledged at most this long after it
	// arrived even if no further packet comes; lockstep default 1us (a fraction of a base RTT,
	// so a sender's last packets never wait for a timeout).
	AckDelay sim.Time `yaml:"ack_delay"`
	// AckTimeoutExp is t in the ACK timeout 1.024 us x 2^t, 1..24 [API]. 0 means automatic:
	// the smallest t whose timeout covers 4 base RTTs (lockstep default).
	AckTimeoutExp int `yaml:"ack_timeout_exp"`
	// FixedRetries are the retries at the fixed ACK timeout before exponential backoff; default
	// 7 [API], or MaxRetries when that is lower (and not unlimited). At most MaxRetries unless
	// MaxRetries is 25 (unlimited): the QP errors after MaxRetries timeouts, so more fixed
	// retries would never happen.
	FixedRetries int `yaml:"fixed_retries"`
	// MaxRetries is the number of ACK timeouts in a row without progress before the QP errors;
	// 25 means unlimited [API]. Lockstep default 15 (7 fixed + 8 doubling: about 2^8 x the
	// timeout), so a dead peer is reported rather than retried forever.
	MaxRetries int `yaml:"max_retries"`
	// ReorderWindow is the RACK reordering allowance: a packet is lost when a packet sent after
	// it was acknowledged and it has been out for that packet's RTT plus this. 0 means the
	// lockstep default: the base RTT plus the most queueing one hop's trim threshold allows
	// (Path.MaxQueueDelay). Sprayed packets overtake each other by the queueing difference
	// between their paths, which trimming bounds; measured on 8-plane permutations and
	// incasts, one RTT alone gives thousands of spurious retransmissions and this none or a
	// handful, while still finding a failed path's losses within a few RTTs.
	ReorderWindow sim.Time `yaml:"reorder_window"`
	// RcvWindowBDP is the receiver's budget of bytes in flight toward its host, in BDPs of the
	// host's NIC rate x base RTT, shared equally by the QPs under way toward it when there are
	// two or more (HostRx); default DefaultRcvWindowBDP (1.4), 0.1..100; negative turns the
	// receiver's share off.
	RcvWindowBDP float64 `yaml:"rcv_window_bdp"`
	// RcvShare is how the budget is shared among the QPs under way toward a host (HostRx):
	// RcvShareEqual (default), an equal part each, or RcvShareMaxMin, a QP held by the share
	// also getting what QPs held by something else leave (HostRx.shareOf).
	RcvShare string `yaml:"rcv_share"`
	// ProbeBudget is the probes a QP earns per data packet sent, on top of one per probe
	// interval (Sender.probe); default DefaultProbeBudget (0.01), 0..1. Use a negative value
	// for none beyond the per-interval one.
	ProbeBudget float64 `yaml:"probe_budget"`
	// LossStrikes is how many untrimmed losses a path must suffer, net of its clean deliveries
	// (two strikes per loss, one back per delivery), before its EV is retired; 0 (default)
	// means automatic, from the QP's background loss rate (Sender.StrikeLimit). 1..32.
	LossStrikes int `yaml:"loss_strikes"`
	// WindowMPR is the receive window in units of 128 PSNs [API: MPR]; default 32 (4,096 PSNs,
	// 16 MiB of 4 KiB packets in flight).
	WindowMPR int `yaml:"window_mpr"`
	// EV configures the entropy-value set.
	EV EVConfig `yaml:"ev"`
	// CC configures NSCC.
	CC NSCCParams `yaml:"cc"`
}

// NSCCParams are the scenario-settable NSCC knobs; the path-dependent parts (base RTT, link
// rate, MTU) come from the fabric at connection time.
type NSCCParams struct {
	// TargetFactor: target queueing delay = factor x base RTT; default 0.75 (trimming on)
	// [docs/protocols.md, "NSCC"].
	TargetFactor float64 `yaml:"target_factor"`
	// MaxWindowFactor: max window = factor x BDP; default 1.5.
	MaxWindowFactor float64 `yaml:"max_window_factor"`
	// Gamma is the multiplicative-decrease strength; default 0.8.
	Gamma float64 `yaml:"gamma"`
	// FairIncrease and PropIncrease are NSCC's additive gains as fractions of the BDP per
	// window of ACKs (lockstep defaults DefaultNSCCFairIncrease, DefaultNSCCPropIncrease; see
	// NSCCConfig).
	FairIncrease float64 `yaml:"fair_increase"`
	PropIncrease float64 `yaml:"prop_increase"`
}

// Lockstep defaults.
const (
	DefaultPayloadBytes = 4096
	DefaultAckEvery     = 4
	DefaultAckDelay     = sim.Microsecond
	DefaultFixedRetries = 7
	DefaultMaxRetries   = 15
	UnlimitedRetries    = 25
	DefaultWindowMPR    = 32
	// DefaultRcvWindowBDP is the receiver's budget in BDPs (HostRx): one BDP keeps the link
	// busy, 0.4 more absorbs jitter and the senders' rounding and stays below the last hop's
	// 1.5-BDP trim threshold (docs/protocols.md).
	DefaultRcvWindowBDP = 1.4
	// RcvShareEqual (default): each QP under way toward a host gets an equal part of its
	// budget (HostRx.Share).
	RcvShareEqual = "equal"
	// RcvShareMaxMin: a QP its sender reports held by the share gets an equal part of what the
	// QPs not held leave of the budget, at least the equal part (HostRx.shareOf; the first
	// round of max-min water-filling). Not the default: on 64 hosts it slowed halving-doubling
	// on the full-bisection fabric by 0.8-2.8% (docs/flow-agreement.md, session 40).
	RcvShareMaxMin = "max_min"
	// AckTimeoutUnit is the ACK timeout granule, 1.024 us [API].
	AckTimeoutUnit = 1024 * sim.Nanosecond
)

// WithDefaults fills zero fields (AckTimeoutExp 0 stays 0: automatic, resolved per
// connection from its base RTT).
func (c Config) WithDefaults() Config {
	if c.PayloadBytes == 0 {
		c.PayloadBytes = DefaultPayloadBytes
	}
	if c.HeaderBytes == 0 {
		c.HeaderBytes = DefaultHeaderBytes
	}
	if c.AckBytes == 0 {
		c.AckBytes = DefaultAckBytes
	}
	if c.AckEvery == 0 {
		c.AckEvery = DefaultAckEvery
	}
	if c.AckDelay == 0 {
		c.AckDelay = DefaultAckDelay
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.FixedRetries == 0 {
		c.FixedRetries = DefaultFixedRetries
		if c.MaxRetries >= 1 && c.MaxRetries < UnlimitedRetries {
			c.FixedRetries = min(c.FixedRetries, c.MaxRetries) // max_retries: 3 alone is valid
		}
	}
	if c.WindowMPR == 0 {
		c.WindowMPR = DefaultWindowMPR
	}
	if c.RcvShare == "" {
		c.RcvShare = RcvShareEqual
	}
	if c.RcvWindowBDP == 0 {
		c.RcvWindowBDP = DefaultRcvWindowBDP
	}
	if c.ProbeBudget == 0 {
		c.ProbeBudget = DefaultProbeBudget
	} else if c.ProbeBudget < 0 {
		c.ProbeBudget = 0
	}
	if c.CC.TargetFactor == 0 {
		c.CC.TargetFactor = NSCCTargetFactorTrimming
	}
	if c.CC.MaxWindowFactor == 0 {
		c.CC.MaxWindowFactor = NSCCMaxWindowFactor
	}
	if c.CC.Gamma == 0 {
		c.CC.Gamma = NSCCGamma
	}
	if c.CC.FairIncrease == 0 {
		c.CC.FairIncrease = DefaultNSCCFairIncrease
	}
	if c.CC.PropIncrease == 0 {
		c.CC.PropIncrease = DefaultNSCCPropIncrease
	}
	c.EV = c.EV.WithDefaults()
	return c
}

// Validate names the first bad field (prefix is its YAML path, e.g. "transport").
func (c Config) Validate(prefix string) error {
	bad := func(f, format string, a ...any) error {
		return fmt.Errorf("%s.%s: %s", prefix, f, fmt.Sprintf(format, a...))
	}
	switch {
	case c.PayloadBytes < 64 || c.PayloadBytes > 65536:
		return bad("payload_bytes", "%d is out of range; allowed 64..65536", c.PayloadBytes)
	case c.HeaderBytes < 1 || c.HeaderBytes > 1024:
		return bad("header_bytes", "%d is out of range; allowed 1..1024", c.HeaderBytes)
	case c.AckBytes < 64 || c.AckBytes > 4096:
		return bad("ack_bytes", "%d is out of range; allowed 64..4096 (a trimmed header is 64 B)", c.AckBytes)
	case c.AckEvery < 1 || c.AckEvery > 64:
		return bad("ack_every", "%d is out of range; allowed 1..64", c.AckEvery)
	case c.AckDelay < 0 || c.AckDelay > sim.Millisecond:
		return bad("ack_delay", "%v is out of range; allowed 0..1ms", c.AckDelay)
	case c.AckTimeoutExp < 0 || c.AckTimeoutExp > 24:
		return bad("ack_timeout_exp", "%d is out of range; allowed 1..24 (timeout 1.024us x 2^t) or 0 (automatic)", c.AckTimeoutExp)
	case c.FixedRetries < 0 || c.FixedRetries > 25:
		return bad("fixed_retries", "%d is out of range; allowed 0..25", c.FixedRetries)
	case c.MaxRetries < 1 || c.MaxRetries > UnlimitedRetries:
		return bad("max_retries", "%d is out of range; allowed 1..25 (25 = unlimited)", c.MaxRetries)
	case c.FixedRetries > c.MaxRetries && c.MaxRetries != UnlimitedRetries:
		return bad("fixed_retries", "%d is above %s.max_retries (%d): the QP errors after max_retries timeouts, so only %d fixed retries could happen; want fixed_retries <= max_retries, or max_retries 25 (unlimited)", c.FixedRetries, prefix, c.MaxRetries, c.MaxRetries)
	case c.ReorderWindow < 0 || c.ReorderWindow > sim.Second:
		return bad("reorder_window", "%v is out of range; allowed 0..1s (0 = one base RTT)", c.ReorderWindow)
	case !(c.RcvWindowBDP <= 100) || (c.RcvWindowBDP > 0 && c.RcvWindowBDP < 0.1):
		return bad("rcv_window_bdp", "%v is out of range; allowed 0.1..100 BDPs, or negative for no receiver share", c.RcvWindowBDP)
	case c.RcvShare != RcvShareEqual && c.RcvShare != RcvShareMaxMin:
		return bad("rcv_share", "%q is not a share rule; want %q (default) or %q", c.RcvShare, RcvShareEqual, RcvShareMaxMin)
	case !(c.ProbeBudget >= 0 && c.ProbeBudget <= 1):
		return bad("probe_budget", "%v is out of range; allowed 0..1 probes per data packet (negative: none)", c.ProbeBudget)
	case c.LossStrikes < 0 || c.LossStrikes > 32:
		return bad("loss_strikes", "%d is out of range; allowed 1..32, or 0 (automatic, from the background loss rate)", c.LossStrikes)
	case c.WindowMPR < 1 || c.WindowMPR > 512:
		return bad("window_mpr", "%d is out of range; allowed 1..512 (units of 128 PSNs)", c.WindowMPR)
	case !(c.CC.TargetFactor > 0 && c.CC.TargetFactor <= 10):
		return bad("cc.target_factor", "%v is out of range; allowed (0, 10]", c.CC.TargetFactor)
	case !(c.CC.MaxWindowFactor >= 0.1 && c.CC.MaxWindowFactor <= 100):
		return bad("cc.max_window_factor", "%v is out of range; allowed 0.1..100", c.CC.MaxWindowFactor)
	case !(c.CC.Gamma > 0 && c.CC.Gamma <= 1):
		return bad("cc.gamma", "%v is out of range; allowed (0, 1]", c.CC.Gamma)
	case !(c.CC.FairIncrease > 0 && c.CC.FairIncrease <= 1):
		return bad("cc.fair_increase", "%v is out of range; allowed (0, 1] (fraction of BDP)", c.CC.FairIncrease)
	case !(c.CC.PropIncrease >= 0 && c.CC.PropIncrease <= 1):
		return bad("cc.prop_increase", "%v is out of range; allowed 0..1 (fraction of BDP)", c.CC.PropIncrease)
	}
	if err := c.EV.Validate(); err != nil {
		return fmt.Errorf("%s.ev.%w", prefix, err)
	}
	return nil
}

// WireBytes is the on-the-wire size of a data packet carrying payload bytes.
func (c *Config) WireBytes(payload int) int { return payload + c.HeaderBytes }

// DataPacketBytes returns a full data packet's payload (PayloadBytes) and wire size
// (WireBytes of it), bytes, of a resolved configuration (transport.DataPacketSizer).
func (c *Config) DataPacketBytes() (payload, wire int64) {
	return int64(c.PayloadBytes), int64(c.WireBytes(c.PayloadBytes))
}

// Path describes what a connection's sender knows of the fabric at setup.
type Path struct {
	Planes        int      // NIC ports (planes) of the sender
	PathsPerPlane []int    // source routes available to the peer, per plane
	BaseRTT       sim.Time // unloaded RTT of the longest path, data out + SACK back
	NICRate       sim.Rate // the sender's aggregate NIC rate (all planes), bits/s
	// MaxQueueDelay is the most queueing delay one switch hop can add (its trim threshold or
	// queue limit over its link rate, the largest over the path's hops); sets the default RACK
	// reordering window.
	MaxQueueDelay sim.Time
}

// ackTimeout returns the ACK timeout for the given exponent t: 1.024 us x 2^t [API].
func ackTimeout(t int) sim.Time { return AckTimeoutUnit << uint(t) }

// autoTimeoutExp is the smallest t whose ACK timeout covers 4 base RTTs (lockstep default).
func autoTimeoutExp(baseRTT sim.Time) int {
	for t := 0; t < 24; t++ {
		if ackTimeout(t) >= 4*baseRTT {
			return t
		}
	}
	return 24
}
