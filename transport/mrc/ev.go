package mrc

// Entropy values (EVs): the per-QP set of paths MRC sprays packets over, with the per-EV state
// machine that moves traffic off congested or failed paths [MRC §2.1, §2.4; API: mrc.h EV
// states].

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/lockstepsim/lockstep/sim"
)

// EVState is the state of one entropy value [MRC §2.1; API: mrc.h EV states].
//
// Membership follows from the state: the active set holds only Good and Skip EVs, the backup
// pool of each plane only Good ones, the probe list exactly the AssumedBad ones, and Denied EVs
// are in none of them.
type EVState uint8

// EV states [MRC §2.1; API: mrc.h EV states].
const (
	// Good: usable. An active Good EV carries data; a Good EV in the backup pool waits to
	// replace a retired one of its plane.
	Good EVState = iota
	// Skip: passed over once, the next time its plane's rotation reaches it, then Good again.
	// Set on an active EV by a CE mark echoed in an ACK/SACK or by a NACK for a packet trimmed
	// before the last hop: the path is congested, not broken.
	Skip
	// AssumedBad: retired after untrimmed losses (timeouts or gaps the SACKs prove) that the
	// sender blames on the path (Sender.StrikeLimit). Never used for data; probed every
	// ProbeInterval, backing off while probes are lost, until ProbeSuccesses consecutive clean
	// answers make it Good again.
	AssumedBad
	// Denied: set and cleared only by the operator (a denylist or a fault schedule) through
	// Deny and Allow. Never used for data and never probed.
	Denied

	numEVStates
)

// String returns the state's name as mrc.h spells it: "GOOD", "SKIP", "ASSUMED_BAD",
// "DENIED".
func (s EVState) String() string {
	switch s {
	case Good:
		return "GOOD"
	case Skip:
		return "SKIP"
	case AssumedBad:
		return "ASSUMED_BAD"
	case Denied:
		return "DENIED"
	}
	return fmt.Sprintf("EVState(%d)", uint8(s))
}

// Defaults and limits of EVConfig. The EV count comes from [MRC §2.1, §2.4] ("typically
// 128-256" active EVs per QP); the rest is unpublished and chosen by lockstep.
const (
	// DefaultEVActive is the active set size: the low end of the 128-256 MRC reports [MRC
	// §2.1], which splits evenly over 1, 2, 4 or 8 planes (16 EVs per plane on an 8-plane NIC)
	// and keeps per-QP state small.
	DefaultEVActive = 128
	// DefaultEVProbeInterval is the lockstep default probe interval. A 2-tier Clos with 500ns
	// hops has a base RTT of about 4us (6us for 3 tiers); 50us leaves room for an answer
	// delayed by a few BDPs of queueing before the next probe is due (when an unanswered probe
	// counts as lost), costs one 64-byte probe and its SACK per AssumedBad EV per 50us (about
	// 10 Mb/s per bad EV, only while a path is bad), and with DefaultEVProbeSuccesses brings a
	// healed path back after 150us: the same order as MRC's "tens of microseconds" failover
	// [MRC §2.1] and far below a training step.
	DefaultEVProbeInterval = 50 * sim.Microsecond
	// DefaultEVProbeSuccesses is the lockstep default number of consecutive clean probe answers
	// that make an AssumedBad EV Good: one answer could be luck on a flapping link or a probe
	// slipping through a lossy one; three in a row at 50us spacing show the path has held for
	// 100us.
	DefaultEVProbeSuccesses = 3
	// MinEVProbeInterval is the shortest probe interval accepted. An unanswered probe counts
	// as lost when the next is due, so an interval below the base RTT (a few microseconds in a
	// Clos) loses every probe, and sub-nanosecond intervals schedule billions of probes; the
	// runner also rejects an interval below the fabric's base RTT.
	MinEVProbeInterval = sim.Microsecond
	// NoEVBackup as EVConfig.Backup means no backup EVs at all (0 means the default).
	NoEVBackup = -1
	// MaxEVs bounds Active + Backup per QP: an entropy value fits a 16-bit field (the UDP source
	// port in RoCEv2), and it keeps per-QP state within a few MiB.
	MaxEVs = 1 << 16
	// MaxEVProbeBackoff caps the probe backoff: an EV whose probes keep being lost is probed
	// every 2^6 = 64 probe intervals at most (3.2 ms at the default 50us).
	MaxEVProbeBackoff = 6
	// MaxEVProbeSuccesses bounds ProbeSuccesses: beyond it a healed path would stay unused for
	// a thousand probe intervals, which is surely a typo.
	MaxEVProbeSuccesses = 1000
)

// EVConfig configures a QP's entropy values [MRC §2.1, §2.4]. The zero value of a field means
// its default; WithDefaults writes them out. In a scenario it sits under transport.mrc.ev, so
// mrc.h's ev_min_active is transport.mrc.ev.min_active.
type EVConfig struct {
	// Active is the number of EVs in the active set, a count; default 128
	// (DefaultEVActive), 1 to MaxEVs. It is split over the planes as evenly as possible: each
	// plane gets Active/planes, and the Active%planes left over go one each to planes the QP's
	// rng picks, so over many QPs no plane is favoured. It must be at least the number of
	// planes. A scenario requires a multiple of the planes (package scenario,
	// resolveEVSplit), so every plane carries the same share of each QP's packets.
	Active int `yaml:"active"`
	// Backup is the number of backup EVs, a count, split over the planes like Active; default
	// Active/2, NoEVBackup (-1) for none. A retired active EV is replaced by a backup of the
	// same plane. Half of a plane's active share lets a QP replace, say, 8 of its 16 EVs on a
	// plane (a failed T1 or a few failed links) before that plane's share starts to shrink,
	// at about 50 bytes of state per EV.
	Backup int `yaml:"backup"`
	// MinActive (mrc.h's ev_min_active) is the floor on usable active EVs, a count: an
	// untrimmed loss never retires an EV when that would leave fewer than MinActive in the
	// active set (the EV stays in use and the retirement is counted as suppressed). Default
	// Active/4 (at least 1), 1 to Active. A quarter lets a QP retire every EV of up to 3 of 4
	// planes (6 of 8) while a burst of losses that are not path failures (a stalled receiver
	// times out every EV at once) still leaves 32 of the default 128 EVs spreading load. Deny
	// is the operator's word and ignores the floor.
	MinActive int `yaml:"min_active"`
	// ProbeInterval is the time between probes of each AssumedBad EV, in picoseconds (YAML: a
	// duration such as "50us"); default DefaultEVProbeInterval (50us; a scenario left without
	// one gets twice the fabric's base RTT when that is longer), at least MinEVProbeInterval. "never" (sim.MaxTime)
	// disables probing, so retired EVs never return.
	ProbeInterval sim.Time `yaml:"probe_interval"`
	// ProbeSuccesses is the number of consecutive clean probe answers that make an AssumedBad
	// EV Good, a count; default DefaultEVProbeSuccesses (3), 1 to MaxEVProbeSuccesses.
	ProbeSuccesses int `yaml:"probe_successes"`
	// Rotation is the order of the rotation through the active set [MRC §2.1: "a different EV
	// for every packet, rotating through the active set in a pseudo-random order"]:
	// RotationFixed (default) or RotationShuffle. Each plane rotates through its own active
	// EVs; see EVSet.Next and EVSet.NextOn.
	Rotation string `yaml:"rotation"`
	// CESkip is when a CE mark echoed for an EV moves it to Skip (EVSet.OnCE): CESkipBalance
	// (default) or CESkipAlways.
	CESkip string `yaml:"ce_skip"`
}

// CE skip rules (EVConfig.CESkip).
const (
	// CESkipBalance (lockstep default): a CE mark skips its EV only when the plane had a path
	// to move the load to, one answered and not marked; when every path of the plane answered
	// was marked, the EV is kept. With the NIC's MarkBoard (Sender.SetMarkBoard; mrcnic gives
	// every QP its host's) the answers are those of all the NIC's QPs since the plane's
	// previous lap began; without one, the QP's own answers in the plane's last lap window.
	// [MRC §2.1] skips on every mark because in a full-bisection fabric a mark means imbalance:
	// some path is less loaded. On a tier that is loaded as a whole (a 2:1 oversubscribed T0
	// uplink tier, every uplink busy) every path is marked, a skip moves the load onto paths
	// as loaded while the skipped one drains, and the uplinks go idle in turn: measured on a
	// 2:1 permutation of 16 hosts across two T0s on one plane (bound 693.0 us), 900.8 us with
	// CESkipAlways, see docs/flow-agreement.md "Residuals and their causes". The rule needs no
	// constant: it asks whether the last lap (each active EV used once) saw a clean path, so in
	// a fabric with any unmarked path it is [MRC §2.1]'s rule unchanged. docs/protocols.md, "CE
	// skips on a loaded plane", has the measurements.
	CESkipBalance = "balance"
	// CESkipAlways: every CE mark on a Good active EV skips it [MRC §2.1], whatever the other
	// paths of the plane saw.
	CESkipAlways = "always"
)

// Rotation orders (EVConfig.Rotation).
const (
	// RotationFixed: each plane's lap order is drawn once, when the QP is set up, and every
	// lap of the plane repeats it. A plane's EVs are drawn as a random permutation of its
	// paths, repeated when the plane has more EVs than paths, so a plane's packets visit every
	// path once before any path twice, whichever planes the sender picks in between. A sender
	// then loads each T0 uplink at evenly spaced packets: measured on the 128-host
	// 8-plane permutation of 16 MiB (seeds 1-4), FCT/ideal is 1.024-1.026 mean and
	// 1.032-1.034 worst, against 1.043-1.053 and 1.068-1.079 with RotationShuffle, whose
	// reshuffled laps can put a path's packets back to back and so queue about 0.4 us more
	// per RTT at 96-98% load. Next interleaves the planes smoothly in proportion to their
	// active EVs (planes in turn when they hold equal shares).
	RotationFixed = "fixed"
	// RotationShuffle: every lap of a plane is a fresh random permutation of its active EVs,
	// and Next interleaves the planes at random in proportion to the EVs each has left, so a
	// rotation of Next is a uniformly random permutation of the active set.
	RotationShuffle = "shuffle"
)

// WithDefaults returns c with zero fields replaced by their defaults: Active 128, Backup
// Active/2, MinActive max(1, Active/4), ProbeInterval 50us, ProbeSuccesses 3, Rotation
// fixed, CESkip balance. Backup and MinActive are derived only from a positive Active.
func (c EVConfig) WithDefaults() EVConfig {
	if c.Active == 0 {
		c.Active = DefaultEVActive
	}
	if c.Backup == 0 && c.Active > 0 {
		c.Backup = c.Active / 2
	}
	if c.MinActive == 0 && c.Active > 0 {
		c.MinActive = max(1, c.Active/4)
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = DefaultEVProbeInterval
	}
	if c.ProbeSuccesses == 0 {
		c.ProbeSuccesses = DefaultEVProbeSuccesses
	}
	if c.Rotation == "" {
		c.Rotation = RotationFixed
	}
	if c.CESkip == "" {
		c.CESkip = CESkipBalance
	}
	return c
}

// Validate reports whether c (with defaults applied) is usable. It returns nil or an error
// naming the first bad field by its YAML key ("min_active: 0 is out of range; ..."), so a
// caller can prefix its own path ("transport.ev."). The plane split (Active >= planes) is
// checked by NewEVSet, which knows the planes.
func (c EVConfig) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Active < 1 || c.Active > MaxEVs:
		return bad("active", "%d is out of range; want 1 to %d (lockstep default %d)", c.Active, MaxEVs, DefaultEVActive)
	case c.Backup < NoEVBackup:
		return bad("backup", "%d is negative; want a count, 0 for the default (active/2) or -1 for none", c.Backup)
	case c.Active+c.Backup > MaxEVs:
		return bad("backup", "%d backup + %d active EVs exceed %d per QP", c.Backup, c.Active, MaxEVs)
	case c.MinActive < 1 || c.MinActive > c.Active:
		return bad("min_active", "%d is out of range; want 1 to active (%d)", c.MinActive, c.Active)
	case c.ProbeInterval < MinEVProbeInterval:
		return bad("probe_interval", "%v is below %v; want a duration such as \"50us\" (at least a base RTT), or \"never\" to disable probing", c.ProbeInterval, MinEVProbeInterval)
	case c.ProbeSuccesses < 1 || c.ProbeSuccesses > MaxEVProbeSuccesses:
		return bad("probe_successes", "%d is out of range; want 1 to %d (lockstep default %d)", c.ProbeSuccesses, MaxEVProbeSuccesses, DefaultEVProbeSuccesses)
	case c.Rotation != RotationFixed && c.Rotation != RotationShuffle:
		return bad("rotation", "%q is not a rotation order; want %q (default) or %q", c.Rotation, RotationFixed, RotationShuffle)
	case c.CESkip != CESkipBalance && c.CESkip != CESkipAlways:
		return bad("ce_skip", "%q is not a CE skip rule; want %q (default) or %q", c.CESkip, CESkipBalance, CESkipAlways)
	}
	return nil
}

// EVEntry is a read-only view of one EV's table entry.
type EVEntry struct {
	Plane  int     // plane, 0 to planes-1
	Path   int     // path within the plane, 0 to pathsPerPlane[Plane]-1; the caller's source route
	State  EVState // see EVState
	Active bool    // in the active set, so Next may return it

	// Probe bookkeeping, meaningful while State is AssumedBad (reset on retirement).
	ProbeSuccesses   int      // consecutive clean probe answers so far
	ProbeOutstanding bool     // a probe was sent and is neither answered nor lost yet
	ProbesSent       int      // probes sent since the EV was retired
	LastProbe        sim.Time // when the last probe was sent; valid if ProbesSent > 0
	NextProbe        sim.Time // when the next probe is due; MaxTime if none
}

// EVStats counts what an EVSet did, for reports and the end-of-run audit.
type EVStats struct {
	Skips        int64 // Good -> Skip transitions (OnCE, OnTrimNack before the last hop)
	SkipsHeld    int64 // CE marks on Good active EVs that CESkipBalance kept Good: every path of the plane answered was marked
	SkipsPassed  int64 // times Next passed over a Skip EV, returning it to Good
	Retirements  int64 // active EVs made AssumedBad by OnLoss
	Replacements int64 // retired or denied active EVs replaced by a backup of the same plane
	Suppressed   int64 // OnLoss calls that left the EV in use because of ev_min_active
	ProbesSent   int64 // probes handed out by ProbeDue
	ProbeLosses  int64 // probes lost: OnProbeLoss, or still unanswered when the next was due
	Recoveries   int64 // AssumedBad -> Good after ProbeSuccesses clean answers
	Denials      int64 // EVs made Denied
	Allows       int64 // Denied EVs made Good again
	Rounds       int64 // rotations started: by Next, or by NextOn on a plane a lap ahead of the rest
	Invalid      int64 // calls naming an EV index out of range (ignored)
}

// evEntry is one EV's table entry. Invariants (checked by Audit): slot >= 0 iff the EV is in
// the active set, at ring[plane][slot], with state Good or Skip; a Good EV not in the active
// set is in its plane's backup pool; AssumedBad EVs are in probing; Denied EVs are nowhere.
type evEntry struct {
	nextProbe   sim.Time // next probe due (AssumedBad); MaxTime otherwise
	lastProbe   sim.Time // last probe sent (AssumedBad, probes > 0)
	path        int32
	plane       int32
	route       int32 // dense number of (plane, path) among this QP's EVs; EVs on one path share it
	slot        int32 // index in EVSet.ring[plane] while active, else -1
	probes      int32 // probes sent since retirement
	okProbes    int32 // consecutive clean probe answers
	lostProbes  int32 // consecutive probes lost (backoff exponent, capped at MaxEVProbeBackoff)
	state       EVState
	outstanding bool // a probe is in flight
}

// EVSet is the entropy-value table of one QP [MRC §2.1, §2.4; API: mrc.h EV states]: an active
// set split evenly over the planes and drawn at random from each plane's paths, a backup pool
// per plane, and the per-EV state machine
//
//	Good       --OnCE, OnTrimNack(!lastHop)-->  Skip  --passed over once by Next-->  Good
//	Good/Skip  --OnLoss-->  AssumedBad, replaced by a backup of the same plane
//	AssumedBad --ProbeSuccesses x OnProbeAck-->  Good (active set if its plane is short, else backup)
//	any        --Deny-->  Denied  --Allow-->  Good
//
// It is a sans-IO value: time is passed in, randomness comes from the caller's rng, nothing is
// sent. The caller turns an EV into a packet's source route from (Plane, Path): with
// topo.Layout.Path the global path index is Path*planes + Plane. A caller keeps one timer per
// QP and folds NextProbeAt into it.
//
// Methods taking an EV index ignore an index out of range (counted in EVStats.Invalid) rather
// than panic or return an error: the index comes back in acknowledgements, and a bad one is a
// caller bug the audit reports, not a reason to stop the run. Events that do not apply to the
// EV's state (a CE on a retired EV, a loss on a backup, a late probe answer) are stale and
// ignored.
//
// Next, NextOn, the On* methods, ProbeDue and NextProbeAt allocate nothing. An EVSet is not
// safe for concurrent use.
type EVSet struct {
	cfg  EVConfig
	rng  *rand.Rand
	evs  []evEntry
	last int32 // EV Next returned last, -1 before the first

	// The rotation, per plane [MRC §2.1: a retired EV is replaced from the same plane, so each
	// plane is a rotation of its own]: ring[p] is plane p's active set in lap order and
	// ring[p][:pos[p]] were visited in its current lap (pos[p] == len(ring[p]): the lap is
	// over, the plane's next EV starts its next lap).
	ring [][]int32
	pos  []int
	laps []int64 // per plane: laps begun
	nAct int     // EVs in the active set, all planes

	target  []int     // per plane: active share (Active split over the planes)
	nActive []int     // per plane: EVs in the active set; <= target, and < target only with an empty backup pool
	backup  [][]int32 // per plane: backup pool (Good EVs), taken from the front, refilled at the back
	probing []int32   // AssumedBad EVs in retirement order

	// Marks per lap, for CESkipBalance. A plane's lap window is the time from one of its laps
	// starting to the next starting: answers arriving in it are counted for it. rtWin[r] and
	// rtMarked[r] are route r's last window with an answer and whether one in it was marked;
	// markNow[p] and markLast[p] count plane p's routes answered and marked in its current and
	// last window.
	win      []int64
	rtWin    []int64
	rtMarked []bool
	markNow  []routeMarks
	markLast []routeMarks
	holdCE   func(plane int) bool // replaces allMarked when set (Sender.SetMarkBoard)

	nState [numEVStates]int
	stats  EVStats
}

// routeMarks counts a plane's routes answered in a lap window and, of those, the ones marked.
type routeMarks struct{ answered, marked int32 }

// NewEVSet builds the EV table of a QP over planes planes, plane p having pathsPerPlane[p]
// paths [MRC §2.1, §2.4]. cfg gets its defaults applied. For each plane it draws the plane's
// share of Active EVs on distinct random paths, then its share of Backup on the paths left
// over; when a plane has fewer paths than that, the EVs cycle through a random permutation of
// its paths, so paths are shared as evenly as possible (every path carries the same number of
// active EVs, give or take one, and backups take the paths the active set uses least). EVs are
// numbered plane by plane, the active ones first within each plane. All EVs start Good.
//
// Errors: an invalid cfg; planes < 1; len(pathsPerPlane) != planes; a plane with no paths (a
// plane dead at start: build with its paths and Deny its EVs, or DenyPlane, so plane indices
// stay those of the fabric); more paths than an int32 holds; Active < planes; a nil rng.
func NewEVSet(cfg EVConfig, planes int, pathsPerPlane []int, rng *rand.Rand) (*EVSet, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, errors.New("mrc: NewEVSet needs a random source")
	}
	if planes < 1 {
		return nil, fmt.Errorf("mrc: %d planes; want at least 1", planes)
	}
	if len(pathsPerPlane) != planes {
		return nil, fmt.Errorf("mrc: %d path counts for %d planes; want one per plane", len(pathsPerPlane), planes)
	}
	for p, n := range pathsPerPlane {
		if n < 1 {
			return nil, fmt.Errorf("mrc: plane %d has %d paths; want at least 1 (deny a dead plane's EVs instead)", p, n)
		}
		if n > math.MaxInt32 {
			return nil, fmt.Errorf("mrc: plane %d has %d paths; at most %d supported", p, n, math.MaxInt32)
		}
	}
	if cfg.Active < planes {
		return nil, fmt.Errorf("active: %d EVs cannot cover %d planes; want at least one per plane", cfg.Active, planes)
	}
	nBackup := max(cfg.Backup, 0)
	total := cfg.Active + nBackup

	s := &EVSet{
		cfg:     cfg,
		rng:     rng,
		evs:     make([]evEntry, 0, total),
		last:    -1,
		ring:    make([][]int32, planes),
		pos:     make([]int, planes),
		laps:    make([]int64, planes),
		target:  evSplit(cfg.Active, planes, rng),
		nActive: make([]int, planes),
		backup:  make([][]int32, planes),
		probing: make([]int32, 0, total),

		win:      make([]int64, planes),
		markNow:  make([]routeMarks, planes),
		markLast: make([]routeMarks, planes),
	}
	backupShare := evSplit(nBackup, planes, rng)
	var paths []int32
	for p := 0; p < planes; p++ {
		nA, nB := s.target[p], backupShare[p]
		paths = evDrawPaths(rng, pathsPerPlane[p], nA+nB, paths[:0])
		// The pool and the ring can each hold every EV of the plane, so refilling them never
		// allocates.
		s.backup[p] = make([]int32, 0, nA+nB)
		s.ring[p] = make([]int32, 0, nA+nB)
		for i, path := range paths {
			ev := int32(len(s.evs))
			s.evs = append(s.evs, evEntry{
				nextProbe: sim.MaxTime, path: path, plane: int32(p), slot: -1, state: Good,
			})
			if i < nA {
				// The plane's lap order: its active EVs in drawn order (a random permutation
				// of its paths, repeated), so a fixed rotation spreads the plane's packets
				// over its paths evenly.
				s.evs[ev].slot = int32(len(s.ring[p]))
				s.ring[p] = append(s.ring[p], ev)
				s.nActive[p]++
			} else {
				s.backup[p] = append(s.backup[p], ev)
			}
		}
		s.pos[p] = len(s.ring[p]) // the plane's first EV starts its first lap (shuffled with RotationShuffle)
	}
	// Dense route numbers, in EV order (deterministic).
	routes := make(map[[2]int32]int32, len(s.evs))
	for i := range s.evs {
		e := &s.evs[i]
		k := [2]int32{e.plane, e.path}
		id, ok := routes[k]
		if !ok {
			id = int32(len(routes))
			routes[k] = id
		}
		e.route = id
	}
	s.rtWin = make([]int64, len(routes))
	for i := range s.rtWin {
		s.rtWin[i] = -1
	}
	s.rtMarked = make([]bool, len(routes))
	s.nAct = cfg.Active
	s.nState[Good] = len(s.evs)
	return s, nil
}

// evSplit splits n over k parts as evenly as possible: n/k each, and one more for n%k parts
// chosen at random.
func evSplit(n, k int, rng *rand.Rand) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = n / k
	}
	extra := n % k
	if extra == 0 {
		return out
	}
	perm := rng.Perm(k)
	for _, i := range perm[:extra] {
		out[i]++
	}
	return out
}

// evDrawPaths appends k path indices in [0, n) to dst: the first min(k, n) entries of a
// uniformly random permutation of the n paths (a sparse Fisher-Yates shuffle, so a plane with
// millions of paths costs only k steps), repeated cyclically when k > n.
func evDrawPaths(rng *rand.Rand, n, k int, dst []int32) []int32 {
	m := min(k, n)
	moved := make(map[int]int, m) // position -> value, where the shuffle moved a value
	at := func(i int) int {
		if v, ok := moved[i]; ok {
			return v
		}
		return i
	}
	start := len(dst)
	for i := 0; i < m; i++ {
		j := i + rng.IntN(n-i)
		vi, vj := at(i), at(j)
		moved[j] = vi // position i is never read again
		dst = append(dst, int32(vj))
	}
	for i := m; i < k; i++ {
		dst = append(dst, dst[start+i%m])
	}
	return dst
}

// Laps returns how many laps plane p has begun (0 for a plane out of range).
func (s *EVSet) Laps(p int) int64 {
	if p < 0 || p >= len(s.laps) {
		return 0
	}
	return s.laps[p]
}

// Config returns the effective configuration (defaults applied).
func (s *EVSet) Config() EVConfig { return s.cfg }

// Len returns the number of EVs in the table (Active + Backup); valid indices are 0 to Len()-1.
func (s *EVSet) Len() int { return len(s.evs) }

// Planes returns the number of planes.
func (s *EVSet) Planes() int { return len(s.target) }

// Entry returns EV ev's table entry, or false if ev is out of range.
func (s *EVSet) Entry(ev int) (EVEntry, bool) {
	if ev < 0 || ev >= len(s.evs) {
		return EVEntry{}, false
	}
	e := &s.evs[ev]
	return EVEntry{
		Plane:            int(e.plane),
		Path:             int(e.path),
		State:            e.state,
		Active:           e.slot >= 0,
		ProbeSuccesses:   int(e.okProbes),
		ProbeOutstanding: e.outstanding,
		ProbesSent:       int(e.probes),
		LastProbe:        e.lastProbe,
		NextProbe:        e.nextProbe,
	}, true
}

// Route returns EV ev's plane and path within the plane, or false if ev is out of range: what
// the caller needs per packet to build a source route.
func (s *EVSet) Route(ev int) (plane, path int, ok bool) {
	if ev < 0 || ev >= len(s.evs) {
		return 0, 0, false
	}
	return int(s.evs[ev].plane), int(s.evs[ev].path), true
}

// Next returns the EV for the next data packet when the caller has no preferred plane [MRC
// §2.1: "a different EV for every packet, rotating through the active set in a pseudo-random
// order"]. Each plane rotates through its own active EVs in laps (see NextOn); Next takes the
// next EV of a plane whose current lap is not over, choosing the plane in proportion to the
// EVs each has in its lap, and when every plane's lap is over it starts the next rotation: a
// new lap on every plane (Stats().Rounds counts them). So a rotation of Next uses each active
// EV once and gives each plane a share of packets proportional to its active EVs, which the
// same-plane replacement of retired EVs keeps equal [MRC §2.1: planes stay equally loaded].
// With RotationFixed (default) every lap of a plane repeats the order drawn at setup (a random
// permutation of its paths; an EV admitted later takes a random unvisited place and keeps it)
// and the planes interleave smoothly, the one with the largest part of its lap left first
// (ties: the lowest plane), so equal planes take turns; with RotationShuffle the rng
// reshuffles each lap of a plane and picks the plane at random, weighted by the EVs it has
// left, so a rotation is a uniformly random permutation of the active set. A Skip EV is passed
// over when its plane's lap reaches it and becomes Good (skipped for one lap); the active set
// holds no AssumedBad or Denied EVs. Consecutive packets never take the same EV while the
// active set holds two or more: if a lap would repeat the last EV it takes a later one first,
// or (when that EV is the lap's last, as after a rejoin, or the plane's only EV) ends the lap.
//
// ok is false when the active set is empty (every EV retired or denied): the caller must report
// the QP as stalled and wait for a probe recovery or an Allow. Next does not allocate.
func (s *EVSet) Next() (ev int, ok bool) {
	if s.nAct == 0 {
		return -1, false
	}
	// Bounded: each pass returns, ends a plane's lap (once per plane per rotation) or starts a
	// rotation. The current rotation may end on Skip EVs or a rejoined last EV, the next pass
	// its Skip EVs (now Good); in the third only a plane whose one EV is the last can fail.
	for range 4*len(s.ring) + 4 {
		p := s.nextPlane()
		if p < 0 {
			s.newRound()
			continue
		}
		if e, ok := s.take(p); ok {
			s.last = e
			return int(e), true
		}
	}
	return -1, false // unreachable: the active set holds only Good and Skip EVs
}

// NextOn is Next with a preferred plane: it returns the next EV of that plane's own rotation,
// whatever the other planes did meanwhile. A plane whose lap is over starts its next one, so
// the plane choice is entirely the caller's and each plane still visits its EVs in its fixed
// lap order (with RotationFixed: every path of the plane once before any path twice). Skip EVs
// of the plane met on the way are passed over (and become Good) as Next would. When the plane
// has no usable EV, or its only one was the last EV returned while others are active, it
// returns Next's choice. The sender uses it to hand the next packet to the plane whose NIC
// port has the least backlog (lockstep's model of the NIC's transmit arbitration across
// ports): a slow local port is then simply chosen less. It does not allocate.
func (s *EVSet) NextOn(plane int) (ev int, ok bool) {
	if plane < 0 || plane >= len(s.ring) || s.nActive[plane] == 0 ||
		(s.nActive[plane] == 1 && s.ring[plane][0] == s.last && s.nAct > 1) {
		return s.Next()
	}
	// Three laps at most: the current one may end on Skip EVs or a rejoined last EV, the next
	// pass its Skip EVs (now Good) and end on the last EV; the third then has a usable one.
	for range 3 {
		if s.pos[plane] >= len(s.ring[plane]) {
			s.newLap(plane)
		}
		if e, ok := s.take(plane); ok {
			s.last = e
			return int(e), true
		}
	}
	return s.Next()
}

// LeftOn returns how many active EVs of plane p its current lap has not used yet (all of the
// plane's active EVs when the lap is over: its next EV starts a new one). 0 for a plane out of
// range.
func (s *EVSet) LeftOn(p int) int {
	if p < 0 || p >= len(s.ring) {
		return 0
	}
	if s.pos[p] >= len(s.ring[p]) {
		return s.nActive[p]
	}
	return len(s.ring[p]) - s.pos[p]
}

// Progress returns how far plane p is through its own rotation, in laps: the laps it has
// finished plus the part of its current lap used. A packet on the plane advances it by one over
// the plane's active EVs, so among planes equally able to take a packet the one with the least
// progress has had the least of its share [MRC §2.1: planes stay equally loaded while each
// keeps its EVs; a plane short of EVs takes a smaller share]. A plane that regains active EVs
// after having none starts level with the rotation count, not from where it stopped. 0 for a
// plane out of range or without active EVs.
func (s *EVSet) Progress(p int) float64 {
	if p < 0 || p >= len(s.ring) || len(s.ring[p]) == 0 {
		return 0
	}
	return float64(s.laps[p]-1) + float64(s.pos[p])/float64(len(s.ring[p]))
}

// Lag returns how far plane p is behind the QP's own mean progress over its planes with
// active EVs, in laps: the mean of Progress over those planes minus Progress(p). Positive
// means p has had less than its share of this QP's packets. Unlike Progress it does not grow
// with the packets the QP has sent, so it compares QPs fairly: a QP that has sent for a long
// time and one just opened are both level (0) when their planes are even, and a one-plane QP
// is always level. 0 for a plane out of range or without active EVs.
func (s *EVSet) Lag(p int) float64 {
	if p < 0 || p >= len(s.ring) || len(s.ring[p]) == 0 {
		return 0
	}
	var sum float64
	n := 0
	for q := range s.ring {
		if len(s.ring[q]) > 0 {
			sum += s.Progress(q)
			n++
		}
	}
	return sum/float64(n) - s.Progress(p)
}

// nextPlane picks the plane for Next among those whose lap is not over: with RotationFixed the
// one with the largest part of its lap left (ties: the lowest index), with RotationShuffle one
// at random weighted by the EVs it has left. -1 if every lap is over.
func (s *EVSet) nextPlane() int {
	if s.cfg.Rotation == RotationShuffle {
		total := 0
		for p, r := range s.ring {
			total += len(r) - s.pos[p]
		}
		if total == 0 {
			return -1
		}
		k := s.rng.IntN(total)
		for p, r := range s.ring {
			if k -= len(r) - s.pos[p]; k < 0 {
				return p
			}
		}
		return -1 // unreachable
	}
	best, bestLeft, bestLen := -1, 0, 1
	for p, r := range s.ring {
		left := len(r) - s.pos[p]
		if left > 0 && left*bestLen > bestLeft*len(r) {
			best, bestLeft, bestLen = p, left, len(r)
		}
	}
	return best
}

// take returns plane p's next EV in its current lap, passing Skip EVs over (they become Good)
// and never the last EV returned while others are active: that one is moved behind a later EV
// of the lap, or, as the lap's last, sits the lap out. ok is false when the lap is over.
func (s *EVSet) take(p int) (int32, bool) {
	r := s.ring[p]
	for s.pos[p] < len(r) {
		i := s.pos[p]
		e := r[i]
		ent := &s.evs[e]
		switch {
		case ent.state == Skip:
			s.setState(ent, Good)
			s.stats.SkipsPassed++
			s.pos[p]++
		case e == s.last && s.nAct > 1:
			// The previous packet used e: it left the active set and rejoined it, or it is
			// its plane's only EV.
			switch {
			case i+1 >= len(r):
				s.pos[p] = len(r)
			case s.cfg.Rotation == RotationShuffle:
				s.swap(p, i, i+1+s.rng.IntN(len(r)-i-1))
			default:
				s.pull(p, i+1)
			}
		default:
			s.pos[p]++
			return e, true
		}
	}
	return -1, false
}

// newRound starts a rotation of Next: a new lap on every plane with active EVs, all numbered
// as the new rotation.
func (s *EVSet) newRound() {
	s.stats.Rounds++
	for p := range s.ring {
		if len(s.ring[p]) > 0 {
			s.newLap(p)
		}
		s.laps[p] = s.stats.Rounds
	}
}

// newLap starts plane p's next lap: with RotationShuffle a Fisher-Yates shuffle of its active
// EVs; with RotationFixed the previous lap's order again. A plane running ahead of the others
// (NextOn) counts a new rotation when it starts a lap beyond the last one counted.
func (s *EVSet) newLap(p int) {
	r := s.ring[p]
	if s.cfg.Rotation == RotationShuffle {
		for i := len(r) - 1; i > 0; i-- {
			s.swap(p, i, s.rng.IntN(i+1))
		}
	}
	s.pos[p] = 0
	s.laps[p]++
	s.stats.Rounds = max(s.stats.Rounds, s.laps[p])
	s.markLast[p], s.markNow[p] = s.markNow[p], routeMarks{}
	s.win[p]++
}

// OnCE handles an ACK or SACK that echoes EV ev and reports a CE mark on the forward path
// [MRC §2.1]: a Good active EV becomes Skip. In a full-bisection fabric a mark means imbalance,
// so the sender moves off the path for a rotation; the rate is congestion control's business.
// With CESkipBalance (default) the EV stays Good when every path of its plane answered in the
// plane's last lap was marked (nothing to move the load to; counted in EVStats.SkipsHeld). The
// mark counts for the EV's path in the plane's current lap either way.
func (s *EVSet) OnCE(ev int) {
	e := s.entry(ev)
	if e == nil {
		return
	}
	hold := false
	if s.cfg.CESkip == CESkipBalance {
		if s.holdCE != nil {
			hold = s.holdCE(int(e.plane))
		} else {
			hold = s.allMarked(int(e.plane))
		}
	}
	s.observe(e, true)
	if !hold {
		s.skip(e)
	} else if e.slot >= 0 && e.state == Good {
		s.stats.SkipsHeld++
	}
}

// OnClean records that an answer acknowledged a packet sent on EV ev without a CE mark: its
// path was answered clean in its plane's current lap (unless another answer in the lap was
// marked). It changes no EV's state; CESkipBalance reads it. The sender calls it for every
// packet sent once that an answer acknowledges for the first time.
func (s *EVSet) OnClean(ev int) {
	if e := s.entry(ev); e != nil {
		s.observe(e, false)
	}
}

// allMarked reports whether plane p's last lap window had answers and every route answered in
// it was marked.
func (s *EVSet) allMarked(p int) bool {
	m := s.markLast[p]
	return m.answered > 0 && m.marked == m.answered
}

// observe counts an answer on e's route in its plane's current lap window, marked or not.
func (s *EVSet) observe(e *evEntry, marked bool) {
	p, r := e.plane, e.route
	m := &s.markNow[p]
	if s.rtWin[r] != s.win[p] {
		s.rtWin[r], s.rtMarked[r] = s.win[p], false
		m.answered++
	}
	if marked && !s.rtMarked[r] {
		s.rtMarked[r] = true
		m.marked++
	}
}

// OnTrimNack handles a NACK for a packet sent on EV ev that a switch trimmed [MRC §2.1]: a Good
// active EV becomes Skip when the trim was before the last hop (NACK reason TRIMMED). A trim at
// the last hop (TRIMMED_LASTHOP) is incast at the receiver, which no path choice avoids: it is
// left to congestion control and the EV is unchanged.
func (s *EVSet) OnTrimNack(ev int, lastHop bool) {
	if e := s.entry(ev); e != nil && !lastHop {
		s.observe(e, true)
		s.skip(e)
	}
}

func (s *EVSet) skip(e *evEntry) {
	if e.slot >= 0 && e.state == Good {
		s.setState(e, Skip)
		s.stats.Skips++
	}
}

// OnLoss handles an untrimmed loss of a packet sent on active EV ev (an ACK timeout, or a gap
// the SACKs prove) [MRC §2.1, §2.4]. With trimming on, congestion trims rather than drops, so
// the path is assumed failed: the EV becomes AssumedBad, joins the probe list (first probe due
// at once, see NextProbeAt) and its place in the rotation goes to the first backup EV of the
// same plane, so planes stay equally loaded. Without a backup the plane's active share shrinks
// by one, unless that would leave fewer than MinActive (ev_min_active) active EVs: then the EV
// stays in use, unchanged, and the retirement is counted as suppressed. Losses on EVs outside
// the active set (already retired, denied, or backups) are stale and ignored.
func (s *EVSet) OnLoss(ev int) {
	e := s.entry(ev)
	if e == nil || e.slot < 0 {
		return
	}
	s.retire(ev, e, false)
}

// OnPathLoss is OnLoss for the route ev travels: every active EV on the same (plane, path) is
// the same path [MRC §2.2: an EV is a static source route], so all are retired at once rather
// than each losing a packet before the sender learns it, and their replacements are taken from
// backups on routes not known bad. The sender calls it for untrimmed losses.
func (s *EVSet) OnPathLoss(ev int) {
	e := s.entry(ev)
	if e == nil || e.slot < 0 {
		return
	}
	s.retire(ev, e, true)
	for i := 0; i < len(s.ring[e.plane]); i++ { // only the plane's own EVs share its route
		o := s.ring[e.plane][i]
		if oe := &s.evs[o]; oe.path == e.path && oe.slot >= 0 {
			if s.retire(int(o), oe, true) {
				i = -1 // the rotation was reordered: rescan
			}
		}
	}
}

// retire makes active EV e AssumedBad and replaces it from its plane's backups (or, with no
// backup, takes it out of the rotation unless that would go below MinActive). It reports
// whether it retired the EV.
func (s *EVSet) retire(ev int, e *evEntry, avoidBad bool) bool {
	if !s.replace(e, avoidBad) {
		if s.nAct-1 < s.cfg.MinActive {
			s.stats.Suppressed++
			return false
		}
		s.removeActive(e)
	}
	s.setState(e, AssumedBad)
	e.okProbes, e.outstanding, e.probes, e.lostProbes = 0, false, 0, 0
	e.nextProbe = 0
	if s.cfg.ProbeInterval == sim.MaxTime {
		e.nextProbe = sim.MaxTime
	}
	s.probing = append(s.probing, int32(ev))
	s.stats.Retirements++
	return true
}

// pathBad reports whether an AssumedBad EV holds the route (plane, path).
func (s *EVSet) pathBad(plane, path int32) bool {
	for _, p := range s.probing {
		if e := &s.evs[p]; e.plane == plane && e.path == path && e.state == AssumedBad {
			return true
		}
	}
	return false
}

// probeGap is the time from a probe on e to its next one: ProbeInterval, doubled for each
// consecutive probe lost, up to 2^MaxEVProbeBackoff x ProbeInterval (lockstep default: a path
// that stays dead costs ever fewer probes, one per 3.2 ms at the default interval, while one
// that heals is found again within that).
func (s *EVSet) probeGap(e *evEntry) sim.Time {
	g := s.cfg.ProbeInterval
	for i := int32(0); i < min(e.lostProbes, MaxEVProbeBackoff) && g < sim.MaxTime/2; i++ {
		g *= 2
	}
	return g
}

// ProbeDue returns an AssumedBad EV whose probe is due at now, and records the probe as sent:
// its next probe is due at now + ProbeInterval, doubled per consecutive probe lost (probeGap)
// [MRC §2.1; API]. Call it until ok is false. When
// several are due, the one due earliest goes first (ties: the one retired first). A probe still
// unanswered when the next one is due counts as lost (resetting the clean-answer count), so a
// caller need not time probes out itself; it may still call OnProbeLoss earlier.
func (s *EVSet) ProbeDue(now sim.Time) (ev int, ok bool) {
	best := -1
	for i, p := range s.probing {
		t := s.evs[p].nextProbe
		if t != sim.MaxTime && t <= now && (best < 0 || t < s.evs[s.probing[best]].nextProbe) {
			best = i
		}
	}
	if best < 0 {
		return -1, false
	}
	ev = int(s.probing[best])
	e := &s.evs[ev]
	if e.outstanding {
		e.okProbes = 0
		e.lostProbes++
		s.stats.ProbeLosses++
	}
	e.outstanding = true
	e.probes++
	e.lastProbe = now
	e.nextProbe = evAddSat(now, s.probeGap(e))
	s.stats.ProbesSent++
	return ev, true
}

// NextProbeAt returns when the earliest probe is due, for the caller's single per-QP timer:
// MaxTime if no EV is AssumedBad (or probing is off), and 0 (already due) for an EV retired
// since the last ProbeDue, whose first probe goes out at once.
func (s *EVSet) NextProbeAt() sim.Time {
	t := sim.MaxTime
	for _, p := range s.probing {
		t = min(t, s.evs[p].nextProbe)
	}
	return t
}

// OnProbeAck handles a clean answer (a SACK) at now to the probe outstanding on EV ev [MRC
// §2.1; API]. After ProbeSuccesses consecutive clean answers the EV is Good again: it joins the
// active set at a random unvisited point of its plane's current lap if the plane's active set
// is short of its share, and the back of its plane's backup pool otherwise. Answers with no probe
// outstanding (duplicates, or a probe already counted lost) are ignored, so every success is a
// distinct probe. What counts as clean (say, a CE-marked answer) is the caller's policy.
func (s *EVSet) OnProbeAck(now sim.Time, ev int) {
	e := s.entry(ev)
	if e == nil || e.state != AssumedBad || !e.outstanding {
		return
	}
	e.outstanding = false
	e.okProbes++
	if e.lostProbes > 0 {
		// The path answers again: probe at the base interval from the next probe on.
		e.lostProbes = 0
		e.nextProbe = min(e.nextProbe, evAddSat(e.lastProbe, s.cfg.ProbeInterval))
	}
	if int(e.okProbes) < s.cfg.ProbeSuccesses {
		return
	}
	s.removeProbing(ev)
	s.clearProbe(e)
	s.setState(e, Good)
	s.admit(ev)
	s.stats.Recoveries++
}

// OnProbeLoss handles a probe on EV ev declared lost: its count of consecutive clean answers
// restarts from zero. It applies to AssumedBad EVs only.
func (s *EVSet) OnProbeLoss(ev int) {
	e := s.entry(ev)
	if e == nil || e.state != AssumedBad {
		return
	}
	if e.outstanding {
		e.outstanding = false
		e.lostProbes++
		s.stats.ProbeLosses++
	}
	e.okProbes = 0
}

// Deny puts EV ev on the operator's denylist [MRC §2.1; API: mrc.h EV states]: it becomes
// Denied, is never used or probed, and leaves whatever set it was in. An active EV is replaced
// by a backup of its plane if there is one; ev_min_active does not apply. Denying a Denied EV
// does nothing.
func (s *EVSet) Deny(ev int) {
	e := s.entry(ev)
	if e == nil || e.state == Denied {
		return
	}
	switch {
	case e.slot >= 0:
		if !s.replace(e, false) {
			s.removeActive(e)
		}
	case e.state == AssumedBad:
		s.removeProbing(ev)
	default:
		s.removeBackup(ev)
	}
	s.clearProbe(e)
	s.setState(e, Denied)
	s.stats.Denials++
}

// Allow takes EV ev off the denylist: a Denied EV becomes Good and joins the active set if its
// plane's active set is short, the backup pool otherwise (as a recovered EV does). Allowing an
// EV that is not Denied does nothing.
func (s *EVSet) Allow(ev int) {
	e := s.entry(ev)
	if e == nil || e.state != Denied {
		return
	}
	s.setState(e, Good)
	s.admit(ev)
	s.stats.Allows++
}

// DenyPlane denies every EV of plane p, as after a port-status update reporting the plane down
// [MRC §2.1, §5.2], and returns how many EVs changed state. Backups go first, so no backup is
// rotated in only to be denied. A plane out of range does nothing.
func (s *EVSet) DenyPlane(p int) int {
	if p < 0 || p >= len(s.target) {
		return 0
	}
	n := 0
	for pass := 0; pass < 2; pass++ {
		for ev := range s.evs {
			e := &s.evs[ev]
			if int(e.plane) == p && e.state != Denied && (pass == 1 || e.slot < 0) {
				s.Deny(ev)
				n++
			}
		}
	}
	return n
}

// AllowPlane allows every Denied EV of plane p, in index order (the EVs first drawn as active
// refill the active set first), and returns how many. A plane out of range does nothing.
func (s *EVSet) AllowPlane(p int) int {
	if p < 0 || p >= len(s.target) {
		return 0
	}
	n := 0
	for ev := range s.evs {
		if int(s.evs[ev].plane) == p && s.evs[ev].state == Denied {
			s.Allow(ev)
			n++
		}
	}
	return n
}

// Counts returns how many EVs are in each state (good counts the active set's Good EVs and the
// backup pools), and the size of the active set: the usable EVs, Good or Skip, that Next
// rotates through.
func (s *EVSet) Counts() (good, skip, assumedBad, denied, active int) {
	return s.nState[Good], s.nState[Skip], s.nState[AssumedBad], s.nState[Denied], s.nAct
}

// PlaneUsable returns the number of plane p's EVs in the active set (0 for a plane out of
// range).
func (s *EVSet) PlaneUsable(p int) int {
	if p < 0 || p >= len(s.nActive) {
		return 0
	}
	return s.nActive[p]
}

// PlaneBackup returns the number of backup EVs left for plane p (0 for a plane out of range).
func (s *EVSet) PlaneBackup(p int) int {
	if p < 0 || p >= len(s.backup) {
		return 0
	}
	return len(s.backup[p])
}

// PlanesInUse returns the number of planes with at least one EV in the active set.
func (s *EVSet) PlanesInUse() int {
	n := 0
	for _, a := range s.nActive {
		if a > 0 {
			n++
		}
	}
	return n
}

// Stats returns the transition totals so far.
func (s *EVSet) Stats() EVStats { return s.stats }

// Audit checks the table's invariants (see EVState and evEntry) and returns the first violation,
// or nil. It costs O(Len()) and allocates; it is meant for tests and the end-of-run audit.
func (s *EVSet) Audit() error {
	var count [numEVStates]int
	active := make([]int, len(s.target))
	inBackup := make([]bool, len(s.evs))
	inProbe := make([]bool, len(s.evs))
	n := 0
	for p, r := range s.ring {
		if s.pos[p] < 0 || s.pos[p] > len(r) {
			return fmt.Errorf("plane %d: lap position %d outside its %d active EVs", p, s.pos[p], len(r))
		}
		for i, ev := range r {
			if ev < 0 || int(ev) >= len(s.evs) || s.evs[ev].slot != int32(i) || int(s.evs[ev].plane) != p {
				return fmt.Errorf("plane %d: active slot %d holds EV %d, whose slot or plane disagrees", p, i, ev)
			}
		}
		if s.laps[p] > s.stats.Rounds {
			return fmt.Errorf("plane %d began %d laps, more than the %d rotations counted", p, s.laps[p], s.stats.Rounds)
		}
		n += len(r)
	}
	if n != s.nAct {
		return fmt.Errorf("%d EVs in the planes' rotations, count says %d active", n, s.nAct)
	}
	for p, pool := range s.backup {
		for _, ev := range pool {
			if ev < 0 || int(ev) >= len(s.evs) || inBackup[ev] || int(s.evs[ev].plane) != p {
				return fmt.Errorf("backup pool of plane %d holds EV %d twice, out of range or of another plane", p, ev)
			}
			inBackup[ev] = true
		}
	}
	for _, ev := range s.probing {
		if ev < 0 || int(ev) >= len(s.evs) || inProbe[ev] {
			return fmt.Errorf("probe list holds EV %d twice or out of range", ev)
		}
		inProbe[ev] = true
	}
	for ev := range s.evs {
		e := &s.evs[ev]
		if e.state >= numEVStates {
			return fmt.Errorf("EV %d has state %v", ev, e.state)
		}
		count[e.state]++
		isActive := e.slot >= 0
		if isActive {
			if r := s.ring[e.plane]; int(e.slot) >= len(r) || r[e.slot] != int32(ev) {
				return fmt.Errorf("EV %d claims active slot %d it does not hold", ev, e.slot)
			}
			active[e.plane]++
		}
		var ok bool
		switch e.state {
		case Good:
			ok = isActive != inBackup[ev] && !inProbe[ev]
		case Skip:
			ok = isActive && !inBackup[ev] && !inProbe[ev]
		case AssumedBad:
			ok = !isActive && !inBackup[ev] && inProbe[ev]
		case Denied:
			ok = !isActive && !inBackup[ev] && !inProbe[ev] && !e.outstanding
		}
		if !ok {
			return fmt.Errorf("EV %d is %v but active=%v, backup=%v, probing=%v", ev, e.state, isActive, inBackup[ev], inProbe[ev])
		}
		if e.state != AssumedBad && e.nextProbe != sim.MaxTime {
			return fmt.Errorf("EV %d is %v with a probe due at %v", ev, e.state, e.nextProbe)
		}
	}
	if count != s.nState {
		return fmt.Errorf("state counts %v, table holds %v", s.nState, count)
	}
	for p := range s.target {
		if active[p] != s.nActive[p] {
			return fmt.Errorf("plane %d counts %d active EVs, table holds %d", p, s.nActive[p], active[p])
		}
		if s.nActive[p] > s.target[p] {
			return fmt.Errorf("plane %d has %d active EVs, above its share %d", p, s.nActive[p], s.target[p])
		}
		if s.nActive[p] < s.target[p] && len(s.backup[p]) > 0 {
			return fmt.Errorf("plane %d is %d active EVs short of its share with %d backups unused", p, s.target[p]-s.nActive[p], len(s.backup[p]))
		}
	}
	return nil
}

// entry returns EV ev's entry, or nil (counting the call as invalid) if ev is out of range.
func (s *EVSet) entry(ev int) *evEntry {
	if ev < 0 || ev >= len(s.evs) {
		s.stats.Invalid++
		return nil
	}
	return &s.evs[ev]
}

func (s *EVSet) setState(e *evEntry, st EVState) {
	s.nState[e.state]--
	s.nState[st]++
	e.state = st
}

func (s *EVSet) clearProbe(e *evEntry) {
	e.okProbes, e.outstanding, e.probes, e.lostProbes = 0, false, 0, 0
	e.nextProbe = sim.MaxTime
}

// place puts EV ev at position i of its plane's lap order.
func (s *EVSet) place(i int, ev int32) {
	s.ring[s.evs[ev].plane][i] = ev
	s.evs[ev].slot = int32(i)
}

// pull moves the EV at ring[p][i] to ring[p][pos[p]], shifting ring[p][pos[p]:i] one place
// on: the relative order of every other EV is kept, so a fixed rotation keeps the plane's
// sequence.
func (s *EVSet) pull(p, i int) {
	r := s.ring[p]
	e := r[i]
	for j := i; j > s.pos[p]; j-- {
		s.place(j, r[j-1])
	}
	s.place(s.pos[p], e)
}

func (s *EVSet) swap(p, i, j int) {
	r := s.ring[p]
	a, b := r[i], r[j]
	s.place(i, b)
	s.place(j, a)
}

// replace gives active EV e's place in the rotation to the first backup of its plane, if any.
func (s *EVSet) replace(e *evEntry, avoidBad bool) bool {
	pool := s.backup[e.plane]
	if len(pool) == 0 {
		return false
	}
	// The first backup, or with avoidBad the first not on a route known bad (the one being
	// retired included), keeping the pool's order.
	k := 0
	if avoidBad {
		for i, b := range pool {
			if be := &s.evs[b]; be.path != e.path && !s.pathBad(be.plane, be.path) {
				k = i
				break
			}
		}
	}
	b := pool[k]
	copy(pool[k:], pool[k+1:])
	s.backup[e.plane] = pool[:len(pool)-1]
	s.place(int(e.slot), b)
	e.slot = -1
	s.stats.Replacements++
	return true
}

// removeActive takes e out of its plane's rotation, keeping the order of the others and
// ring[p][:pos[p]] the visited EVs.
func (s *EVSet) removeActive(e *evEntry) {
	p, i := e.plane, int(e.slot)
	r := s.ring[p]
	for j := i + 1; j < len(r); j++ {
		s.place(j-1, r[j])
	}
	s.ring[p] = r[:len(r)-1]
	if i < s.pos[p] {
		s.pos[p]--
	}
	e.slot = -1
	s.nActive[p]--
	s.nAct--
}

// admit puts Good EV ev (in no set) into the active set if its plane is short of its share,
// at a random unvisited point of the plane's current lap (the others keep their order), and
// into its backup pool otherwise.
func (s *EVSet) admit(ev int) {
	e := &s.evs[ev]
	p := e.plane
	if s.nActive[p] >= s.target[p] {
		s.backup[p] = append(s.backup[p], int32(ev))
		return
	}
	if len(s.ring[p]) == 0 {
		s.laps[p] = s.stats.Rounds // back from no EVs: level with the others (Progress)
	}
	r := append(s.ring[p], int32(ev)) // within capacity: the ring can hold every EV of the plane
	s.ring[p] = r
	n := len(r) - 1
	k := s.pos[p] + s.rng.IntN(n+1-s.pos[p])
	for j := n; j > k; j-- {
		s.place(j, r[j-1])
	}
	s.place(k, int32(ev))
	s.nActive[p]++
	s.nAct++
}

func (s *EVSet) removeBackup(ev int) {
	e := &s.evs[ev]
	pool := s.backup[e.plane]
	for i, b := range pool {
		if int(b) == ev {
			copy(pool[i:], pool[i+1:])
			s.backup[e.plane] = pool[:len(pool)-1]
			return
		}
	}
}

func (s *EVSet) removeProbing(ev int) {
	for i, p := range s.probing {
		if int(p) == ev {
			copy(s.probing[i:], s.probing[i+1:])
			s.probing = s.probing[:len(s.probing)-1]
			return
		}
	}
}

// evAddSat returns t + d, saturating at MaxTime.
func evAddSat(t, d sim.Time) sim.Time {
	if d >= sim.MaxTime-t {
		return sim.MaxTime
	}
	return t + d
}
