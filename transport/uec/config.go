// Package uec is the Ultra Ethernet transport's packet-delivery engine (UET PDS) as sans-IO
// values: a Sender and a Receiver per connection that take headers and times and return
// headers, completions and one deadline each, never touching the fabric. The NIC adapter that
// moves their headers through fabric packets is transport/uec/uecnic.
//
// What it models [UEC = Ultra Ethernet Specification 1.0; docs/protocols.md, "UEC"]:
//   - RUD (reliable, unordered delivery; the default): every data packet carries its PSN and
//     its message's PSN range, the receiver places packets in any order, acknowledges each
//     with a SACK (cumulative PSN + a 64-bit bitmap of the PSNs after it), and the sender
//     retransmits only what was lost (selective repeat).
//   - ROD (reliable, ordered delivery), for comparison: one entropy value per connection, the
//     receiver accepts only the next PSN, and a gap or trim sends the sender back to it
//     (go-back-N).
//   - NACKs for trimmed packets (reason trimmed, or trimmed at the last hop) and, under ROD,
//     for a packet out of order; an untrimmed loss is found by a SACK of a packet sent a
//     reorder window later, or by the retransmission timeout (RTO, doubling per expiry
//     without progress); MaxRetries expiries in a row error the connection.
//   - Load balancing over entropy values (EVs) that the switches hash (ECMP), not source
//     routes: oblivious spraying, REPS (with its freezing mode after failures) or a
//     bitmap/penalty variant (ev.go).
//   - Congestion control: NSCC, the implementation transport/mrc shares (mrc.NSCC); RCCC,
//     receiver credit (rccc.go): the destination paces credit to its active sources near
//     its link rate, a source sends a speculative first window and then only on credit; or
//     both, a packet leaving only when NSCC's window and the credit allow it.
package uec

import (
	"fmt"
	"math"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/mrc"
)

// Delivery modes (Config.Delivery) [UEC §3.5 PDS: RUD, ROD].
const (
	DeliveryRUD = "rud" // reliable, unordered delivery: selective retransmission (default)
	DeliveryROD = "rod" // reliable, ordered delivery: one EV, go-back-N
)

// Load-balancing schemes (Config.LB).
const (
	// LBOblivious sprays packets over the EV pool in a per-connection random order,
	// reshuffled every round, regardless of what the network reports.
	LBOblivious = "oblivious"
	// LBREPS is REPS [Bonato et al., "REPS: Recycling Entropies for Packet Spraying",
	// arXiv 2407.21625]: an EV whose ACK came back without CE is reused for a later packet;
	// one that saw CE, a trim or a timeout is not; with nothing to reuse a fresh EV is drawn
	// at random from the pool; with freezing after failures (ev.go).
	LBREPS = "reps"
	// LBREPSNoFreeze is REPS without its freezing mode (phase 1's REPS): a failure drops the
	// EV and exploration goes on. The default: measured no slower than freezing in every
	// failure case lockstep tried and 4-22% faster in flap, single-failure and
	// degrade+blackhole permutations (docs/protocols.md, "REPS freezing").
	LBREPSNoFreeze = "reps_nofreeze"
	// LBSingle is one EV per connection, drawn at setup: ROD's scheme (its default and only
	// choice), and under RUD a single-path baseline.
	LBSingle = "single"
	// LBBitmap is the bitmap/penalty variant: a per-EV penalty over the pool (ev.go).
	LBBitmap = "bitmap"
)

// Congestion control schemes (Config.CC).
const (
	CCNSCC = "nscc" // UEC sender congestion control (mrc.NSCC), the default
	CCNone = "none" // a fixed window of max_window_factor x BDP, for comparisons
	// CCRCCC is receiver-credit congestion control alone [UEC §3.6 RCCC]: no sender window,
	// a speculative first window, then only what the destination's credit allows.
	CCRCCC = "rccc"
	// CCNSCCRCCC is NSCC and RCCC together: a packet leaves only when NSCC's window and the
	// credit both allow it (the smaller of the two limits); trims at the last hop do not cut
	// NSCC's window.
	CCNSCCRCCC = "nscc+rccc"
)

// RCCC defaults.
const (
	// DefaultSpeculativeBDP is a source's speculative window, sent before any credit, in
	// BDPs of its NIC (base RTT x NIC rate): a quarter BDP. Lockstep default, measured (the
	// UE specification's own figure was not available to lockstep): with one BDP per source,
	// as NDP's and Homa's unscheduled first windows, an incast of 255 sources puts 30 MB into
	// the fabric at once, the trimmed headers' flood holds data past the RTO and the last
	// completion lands 4% above N x S / C; a quarter BDP keeps it under 2% at 255 and 1,023
	// sources (docs/protocols.md, "RCCC").
	DefaultSpeculativeBDP = 0.25
	// DefaultRCCCRateFactor: the destination paces credit at this fraction of its NIC rate
	// (1: the sum of its sources' credit is its link rate) [UEC §3.6 RCCC].
	DefaultRCCCRateFactor = 1.0
)

// RCCCParams are RCCC's knobs (transport.uec.rccc).
type RCCCParams struct {
	// SpeculativeBDP is the speculative window a source may send before credit, in BDPs of
	// its NIC, (0, 100]; default 0.25. It is granted again when a message is posted to an idle
	// connection (every packet acknowledged) or to one whose credit requests have all been
	// granted.
	SpeculativeBDP float64 `yaml:"speculative_bdp"`
	// RateFactor scales the credit rate: credit is paced at RateFactor x the destination's
	// NIC rate, (0, 2]; default 1.
	RateFactor float64 `yaml:"rate_factor"`
	// CreditBytes is one grant, wire bytes, 64..1 MiB; default 0: one full data packet's wire
	// bytes. Each grant is one credit packet of ack_bytes on the wire.
	CreditBytes int `yaml:"credit_bytes"`
}

// Header sizes and defaults.
const (
	// DefaultPayloadBytes is the payload of a full data packet (lockstep default, as MRC).
	DefaultPayloadBytes = 4096
	// DefaultHeaderBytes is a data packet's headers on the wire: Ethernet + FCS (18),
	// IPv4 (20), UDP (8) and UET's PDS and SES headers; lockstep default 64, the size a trim
	// leaves (fabric.HeaderBytes, UEC §4.1 trimming keeps the headers). The cross-check
	// presets use 54 (4,096 + 54 = 4,150 B packets, the reference simulator's).
	DefaultHeaderBytes = 64
	// DefaultAckBytes is a SACK or NACK on the wire: a header-only packet (lockstep default).
	DefaultAckBytes = 64
	// DefaultPaths is the EV pool size: 128, the reference simulator's path count in the
	// cross-check (issue 20; UEC deployments use 64-256 EVs per connection).
	DefaultPaths = 128
	// DefaultREPSBuffer is how many recycled EVs REPS keeps (lockstep default: larger than a
	// 1.5-BDP window of 4 KiB packets at 100G, so every clean ACK's EV is reused).
	DefaultREPSBuffer = 64
	// DefaultREPSFreezeRTOs: REPS's automatic freezing period is this many first RTOs
	// (lockstep default: long enough that a failed path's EVs, each lost once, are not
	// explored again within a flow's steady state; [REPS] freezes after failures and
	// leaves the period to the implementation as lockstep reads it). Only under lb reps, no
	// longer the default: 1, 3 and 10 RTOs all measured slower than no freezing in flap,
	// single-failure and degrade+blackhole permutations (docs/protocols.md, "ut20 fixes").
	DefaultREPSFreezeRTOs = 10
	// DefaultMaxRetries is the RTO expiries in a row without progress before the connection
	// errors (lockstep default, as RoCE's retry count 7).
	DefaultMaxRetries = 7
	// DefaultWindowPSNs bounds the PSNs between the oldest unacknowledged packet and the
	// next new one (the receive window; lockstep default 4,096, as MRC's 32 x 128).
	DefaultWindowPSNs = 4096
	// BitmapBits is the SACK bitmap's reach: PSNs cum+1 .. cum+64 [UEC §3.5 PDS SACK].
	BitmapBits = 64
)

// Config holds every UEC parameter a scenario may set (transport: {kind: uec, uec: {...}}).
// Zero fields take the defaults WithDefaults documents; RTO and ReorderWindow 0 are resolved
// per connection from the fabric (Path).
type Config struct {
	// Delivery is "rud" (default) or "rod".
	Delivery string `yaml:"delivery"`
	// LB is "reps_nofreeze" (default), "reps" (with freezing), "bitmap", "oblivious" or
	// "single"; under ROD only "single" (the default there): ROD uses one EV.
	LB string `yaml:"lb"`
	// REPSFreeze is REPS's freezing period after a loss without trim, 0..1s; 0 (default) is
	// automatic: 10 first RTOs.
	REPSFreeze sim.Time `yaml:"reps_freeze"`
	// Paths is the EV pool size, 1..4096; default 128 (DefaultPaths); under ROD 1 (its one
	// EV is drawn from 0..DefaultPaths-1).
	Paths int `yaml:"paths"`
	// REPSBuffer is the recycled-EV buffer of REPS, 1..4096; default 64.
	REPSBuffer int `yaml:"reps_buffer"`
	// PayloadBytes per full data packet, 64..65536; default 4096.
	PayloadBytes int `yaml:"payload_bytes"`
	// HeaderBytes per data packet, 1..1024; default 64.
	HeaderBytes int `yaml:"header_bytes"`
	// AckBytes per SACK or NACK, 64..4096; default 64.
	AckBytes int `yaml:"ack_bytes"`
	// RTO is the first retransmission timeout; 0 (default) is automatic: the base RTT plus
	// a full queue at every switch hop of the longest path (Path.MaxQueueDelay x hops), so a
	// packet is not declared lost while it may still be queued.
	RTO sim.Time `yaml:"rto"`
	// MaxRetries is the RTO expiries in a row without progress before the connection
	// errors, 1..30; default 7. Each expiry doubles the timeout (exponential backoff).
	MaxRetries int `yaml:"max_retries"`
	// ReorderWindow: under RUD, a packet still unacknowledged when a packet sent this much
	// later was acknowledged is lost. 0 (default): the base RTT plus one hop's largest
	// queueing (Path.MaxQueueDelay), the most sprayed packets overtake each other by.
	ReorderWindow sim.Time `yaml:"reorder_window"`
	// WindowPSNs bounds next PSN - oldest unacknowledged PSN, a multiple of 64 in 64..65536;
	// default 4096.
	WindowPSNs int `yaml:"window_psns"`
	// CC is "nscc" (default), "rccc", "nscc+rccc" or "none".
	CC string `yaml:"cc"`
	// NSCC are NSCC's knobs, as transport.mrc.cc (mrc.NSCCParams; the same defaults).
	NSCC mrc.NSCCParams `yaml:"nscc"`
	// RCCC are the receiver-credit knobs (cc rccc or nscc+rccc).
	RCCC RCCCParams `yaml:"rccc"`
	// AckEvery coalesces SACKs: the receiver answers every AckEvery-th new data packet placed
	// (1..64; default 1, every packet), the SACK echoing the last one (its EV, its send time,
	// CE if any of them had it). Duplicates and trims are answered at once.
	AckEvery int `yaml:"ack_every"`
	// AckDelay bounds how long a coalesced SACK waits, 0..1s; 0 (default) is automatic:
	// AckEvery full data packets at the receiver's NIC rate.
	AckDelay sim.Time `yaml:"ack_delay"`
	// PDC makes packet delivery contexts ephemeral (transport.uec.pdc); the zero value keeps
	// one context per connection for the whole run, as before.
	PDC PDCParams `yaml:"pdc"`
}

// PDCParams are the ephemeral packet delivery context knobs [UEC §3.5 PDS: a PDC is
// established by the first packet of a message to a peer, without a handshake, and closed
// when idle; a NIC holds a bounded number]. A PDC here is one connection (a Sender and a
// Receiver with their own PSN space, window, EV and credit state): reopening one starts
// them afresh (PSN 0, NSCC's initial window, an empty REPS buffer, RCCC's speculative
// window).
type PDCParams struct {
	// IdleTimeout closes a PDC that has had nothing outstanding for this long, 0..1s; 0
	// (default): never on a timer.
	IdleTimeout sim.Time `yaml:"idle_timeout"`
	// MaxPerNIC bounds the PDCs open at one source NIC, 0..65536; 0 (default): no bound. A
	// message (or traffic transfer) that needs a new PDC at a NIC at its bound closes that
	// NIC's longest-idle PDC, or waits, in order, until one goes idle.
	MaxPerNIC int `yaml:"max_per_nic"`
}

// Ephemeral reports whether PDCs open and close during the run (either knob set).
func (p PDCParams) Ephemeral() bool { return p.IdleTimeout > 0 || p.MaxPerNIC > 0 }

// HasRCCC reports whether the congestion control includes receiver credit.
func (c *Config) HasRCCC() bool { return c.CC == CCRCCC || c.CC == CCNSCCRCCC }

// HasNSCC reports whether the congestion control includes NSCC.
func (c *Config) HasNSCC() bool { return c.CC == CCNSCC || c.CC == CCNSCCRCCC }

// CreditQuantum returns one RCCC grant's wire bytes (CreditBytes, or a full data packet).
func (c *Config) CreditQuantum() int64 {
	if c.RCCC.CreditBytes > 0 {
		return int64(c.RCCC.CreditBytes)
	}
	return int64(c.WireBytes(c.PayloadBytes))
}

// WithDefaults returns c with zero fields set to their defaults (RTO and ReorderWindow stay 0:
// automatic).
func (c Config) WithDefaults() Config {
	if c.Delivery == "" {
		c.Delivery = DeliveryRUD
	}
	rod := c.Delivery == DeliveryROD
	if c.LB == "" {
		c.LB = LBREPSNoFreeze
		if rod {
			c.LB = LBSingle
		}
	}
	if c.Paths == 0 {
		c.Paths = DefaultPaths
		if rod {
			c.Paths = 1
		}
	}
	if c.REPSBuffer == 0 {
		c.REPSBuffer = DefaultREPSBuffer
	}
	if c.PayloadBytes == 0 {
		c.PayloadBytes = DefaultPayloadBytes
	}
	if c.HeaderBytes == 0 {
		c.HeaderBytes = DefaultHeaderBytes
	}
	if c.AckBytes == 0 {
		c.AckBytes = DefaultAckBytes
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.WindowPSNs == 0 {
		c.WindowPSNs = DefaultWindowPSNs
	}
	if c.CC == "" {
		c.CC = CCNSCC
	}
	if c.AckEvery == 0 {
		c.AckEvery = 1
	}
	if c.RCCC.SpeculativeBDP == 0 {
		c.RCCC.SpeculativeBDP = DefaultSpeculativeBDP
	}
	if c.RCCC.RateFactor == 0 {
		c.RCCC.RateFactor = DefaultRCCCRateFactor
	}
	n := &c.NSCC
	if n.TargetFactor == 0 {
		n.TargetFactor = mrc.NSCCTargetFactorTrimming
	}
	if n.MaxWindowFactor == 0 {
		n.MaxWindowFactor = mrc.NSCCMaxWindowFactor
	}
	if n.Gamma == 0 {
		n.Gamma = mrc.NSCCGamma
	}
	if n.FairIncrease == 0 {
		n.FairIncrease = mrc.DefaultNSCCFairIncrease
	}
	if n.PropIncrease == 0 {
		n.PropIncrease = mrc.DefaultNSCCPropIncrease
	}
	return c
}

// Validate names the first bad field of a config with defaults applied: prefix is the
// block's YAML path ("transport.uec"), and the error gives the value and what is allowed.
func (c Config) Validate(prefix string) error {
	bad := func(f, format string, a ...any) error {
		return fmt.Errorf("%s.%s: %s", prefix, f, fmt.Sprintf(format, a...))
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	n := c.NSCC
	switch {
	case c.Delivery != DeliveryRUD && c.Delivery != DeliveryROD:
		return bad("delivery", "%q is not a delivery mode; allowed rud (reliable unordered, default) or rod (reliable ordered)", c.Delivery)
	case c.LB != LBREPS && c.LB != LBOblivious && c.LB != LBREPSNoFreeze && c.LB != LBBitmap && c.LB != LBSingle:
		return bad("lb", "%q is not a load-balancing scheme; allowed reps_nofreeze (default), reps (with freezing after failures), bitmap, oblivious or single (one EV)", c.LB)
	case c.Delivery == DeliveryROD && c.LB != LBSingle:
		return bad("lb", "%s with delivery rod: ROD sends every packet of a connection on one EV (one path, so they arrive in order); allowed single (or leave lb out), or delivery rud to spray", c.LB)
	case c.Delivery == DeliveryROD && c.Paths != 1:
		return bad("paths", "%d with delivery rod: ROD uses one EV per connection; allowed 1 (or leave paths out), or delivery rud to spray over %d EVs", c.Paths, c.Paths)
	case c.REPSFreeze < 0 || c.REPSFreeze > sim.Second:
		return bad("reps_freeze", "%v is out of range; allowed 0 (automatic: 10 RTOs) up to 1s", c.REPSFreeze)
	case c.Paths < 1 || c.Paths > 4096:
		return bad("paths", "%d is out of range; allowed 1..4096 entropy values (default 128)", c.Paths)
	case c.REPSBuffer < 1 || c.REPSBuffer > 4096:
		return bad("reps_buffer", "%d is out of range; allowed 1..4096 (default 64)", c.REPSBuffer)
	case c.PayloadBytes < 64 || c.PayloadBytes > 65536:
		return bad("payload_bytes", "%d is out of range; allowed 64..65536", c.PayloadBytes)
	case c.HeaderBytes < 1 || c.HeaderBytes > 1024:
		return bad("header_bytes", "%d is out of range; allowed 1..1024", c.HeaderBytes)
	case c.AckBytes < 64 || c.AckBytes > 4096:
		return bad("ack_bytes", "%d is out of range; allowed 64..4096 (a trimmed header is 64 B)", c.AckBytes)
	case c.RTO < 0 || c.RTO > sim.Second:
		return bad("rto", "%v is out of range; allowed 0 (automatic) up to 1s", c.RTO)
	case c.MaxRetries < 1 || c.MaxRetries > 30:
		return bad("max_retries", "%d is out of range; allowed 1..30", c.MaxRetries)
	case c.ReorderWindow < 0 || c.ReorderWindow > sim.Second:
		return bad("reorder_window", "%v is out of range; allowed 0 (automatic) up to 1s", c.ReorderWindow)
	case c.WindowPSNs < 64 || c.WindowPSNs > 65536 || c.WindowPSNs%64 != 0:
		return bad("window_psns", "%d is out of range; allowed a multiple of 64 in 64..65536", c.WindowPSNs)
	case c.CC != CCNSCC && c.CC != CCNone && c.CC != CCRCCC && c.CC != CCNSCCRCCC:
		return bad("cc", "%q is not a congestion control; allowed nscc (default), rccc (receiver credit), nscc+rccc (both) or none (a fixed window)", c.CC)
	case c.AckEvery < 1 || c.AckEvery > BitmapBits:
		return bad("ack_every", "%d is out of range; allowed 1 (every packet, default) to 64 (the SACK bitmap's reach)", c.AckEvery)
	case c.AckDelay < 0 || c.AckDelay > sim.Second:
		return bad("ack_delay", "%v is out of range; allowed 0 (automatic) up to 1s", c.AckDelay)
	case c.PDC.IdleTimeout < 0 || c.PDC.IdleTimeout > sim.Second:
		return bad("pdc.idle_timeout", "%v is out of range; allowed 0 (never close on a timer) up to 1s", c.PDC.IdleTimeout)
	case c.PDC.MaxPerNIC < 0 || c.PDC.MaxPerNIC > 65536:
		return bad("pdc.max_per_nic", "%d is out of range; allowed 0 (no bound) to 65536", c.PDC.MaxPerNIC)
	case c.AckDelay > 0 && c.RTO > 0 && c.AckDelay >= c.RTO:
		return bad("ack_delay", "%v is not below the RTO %v (transport.uec.rto): a coalesced SACK would arrive after the sender's timeout; allowed 0 (automatic) or below %v", c.AckDelay, c.RTO, c.RTO)
	case !(c.RCCC.SpeculativeBDP > 0 && c.RCCC.SpeculativeBDP <= 100):
		return bad("rccc.speculative_bdp", "%v is out of range; allowed (0, 100] BDPs (default 0.25)", c.RCCC.SpeculativeBDP)
	case !(c.RCCC.RateFactor > 0 && c.RCCC.RateFactor <= 2):
		return bad("rccc.rate_factor", "%v is out of range; allowed (0, 2] (default 1: the destination's NIC rate)", c.RCCC.RateFactor)
	case c.RCCC.CreditBytes != 0 && (c.RCCC.CreditBytes < 64 || c.RCCC.CreditBytes > 1<<20):
		return bad("rccc.credit_bytes", "%d is out of range; allowed 0 (one full data packet) or 64..1048576", c.RCCC.CreditBytes)
	case !(n.TargetFactor > 0 && n.TargetFactor <= 10):
		return bad("nscc.target_factor", "%v is out of range; allowed (0, 10]", n.TargetFactor)
	case !(n.MaxWindowFactor >= 0.1 && n.MaxWindowFactor <= 100):
		return bad("nscc.max_window_factor", "%v is out of range; allowed 0.1..100", n.MaxWindowFactor)
	case !(n.Gamma > 0 && n.Gamma <= 1):
		return bad("nscc.gamma", "%v is out of range; allowed (0, 1]", n.Gamma)
	case !(n.FairIncrease > 0 && n.FairIncrease <= 1) || !finite(n.FairIncrease):
		return bad("nscc.fair_increase", "%v is out of range; allowed (0, 1] (fraction of the BDP)", n.FairIncrease)
	case !(n.PropIncrease > 0 && n.PropIncrease <= 1) || !finite(n.PropIncrease):
		return bad("nscc.prop_increase", "%v is out of range; allowed (0, 1] (fraction of the BDP)", n.PropIncrease)
	}
	return nil
}

// WireBytes is the on-the-wire size of a data packet carrying payload bytes.
func (c *Config) WireBytes(payload int) int { return payload + c.HeaderBytes }

// DataPacketBytes returns a full data packet's payload and wire size, bytes
// (transport.DataPacketSizer).
func (c *Config) DataPacketBytes() (payload, wire int64) {
	return int64(c.PayloadBytes), int64(c.WireBytes(c.PayloadBytes))
}

// Path is what a connection's sender knows of the fabric at setup.
type Path struct {
	// BaseRTT is the unloaded round trip of a full data packet and its ACK over the longest
	// path (> 0).
	BaseRTT sim.Time
	// NICRate is the sender's NIC rate over all its ports, bits/s (> 0): NSCC's BDP.
	NICRate sim.Rate
	// MaxQueueDelay is the most queueing one switch hop can add (its trim threshold or limit
	// over its rate); Hops the switches on the longest path. They size the automatic RTO and
	// reorder window.
	MaxQueueDelay sim.Time
	Hops          int
}

// Timers returns the first RTO and the reorder window of c over p, automatic values filled.
func (c *Config) Timers(p Path) (rto, reorder sim.Time) {
	rto, reorder = c.RTO, c.ReorderWindow
	if rto == 0 {
		rto = p.BaseRTT + sim.Time(max(p.Hops, 1))*p.MaxQueueDelay
	}
	if reorder == 0 {
		reorder = p.BaseRTT + p.MaxQueueDelay
	}
	return rto, reorder
}
