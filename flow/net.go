package flow

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lockstepsim/lockstep/sim"
)

// Path is one route of a flow: the directed link indexes it crosses, in order, and the share
// of the flow's rate it carries. Weights need not sum to exactly 1; AddFlow normalises them.
type Path struct {
	Links  []int32 // directed link indexes in [0, NumLinks()); may be empty (a loopback)
	Weight float64 // > 0; paths of weight 0 are ignored
}

// FlowID identifies a flow: its creation order on its Net, from 0.
type FlowID int64

// Flow describes a flow to add with Net.AddFlow.
type Flow struct {
	// Src and Dst are the hosts the flow runs between. The Net does not interpret them; they
	// name the flow in errors and in FlowInfo. Use -1 when there are none.
	Src, Dst int
	// Bytes is the payload, >= 0. A flow of 0 bytes loads no link and is delivered after its
	// latency.
	Bytes int64
	// Paths are the weighted paths the flow's rate splits over (see the package doc). The
	// Links slices are copied; the caller may reuse them.
	Paths []Path
	// Latency (>= 0) is added once: the flow is delivered Latency after its last byte is sent.
	Latency sim.Time
	// Cap is the flow's rate ceiling in bits per second (a NIC line rate, a transport's
	// ceiling); 0 means none.
	Cap float64
	// Done, if not nil, is called when the flow is delivered, from inside a simulation event
	// at that instant. It may add flows and change capacities.
	Done func(now sim.Time)
}

// Config configures a Net.
type Config struct {
	// OnStall, if set, is called from inside the recomputation that leaves at least one
	// active flow at rate 0 which was not at rate 0 before (a path through a link of capacity
	// 0), with Err() as err. A fluid model cannot otherwise stall; a runner typically stops
	// the simulation with err.
	OnStall func(now sim.Time, err error)
	// OnAdvance, if set, is called whenever the fluid state is about to move forward to now
	// (time passed since the last update, and the rates and link loads in effect since then
	// are still set): LinkBytesAt gives the exact bytes at any instant from the last update to
	// now. It must only observe (a runner's link-load sampler).
	OnAdvance func(now sim.Time)
	// FullRecompute, if set, makes every rate recomputation a full one (fill.go) instead of
	// refilling only the flows a change affects (incr.go); the rates agree to rounding (1e-9
	// relative). For comparisons and measurements.
	FullRecompute bool
}

// Stats are a Net's counters.
type Stats struct {
	FlowsAdded     int64         // flows passed to AddFlow
	FlowsCompleted int64         // flows whose last byte was sent
	FlowsDelivered int64         // flows delivered (Done called)
	Recomputes     int64         // rate recomputations
	FullRecomputes int64         // recomputations that refilled every flow (the rest were incremental)
	Refilled       int64         // flows refilled by the incremental recomputations, summed over them
	Deferred       int64         // recomputations postponed within an instant to batch changes
	MaxActive      int           // largest number of flows sending at once
	BytesSent      float64       // payload bytes sent by every flow so far (fluid; fractional)
	RecomputeWall  time.Duration // wall-clock time spent recomputing rates (not deterministic)
}

// Flow states.
const (
	stFree    uint8 = iota // slot unused
	stPending              // waiting for its start (in the start heap)
	stActive               // sending
	stSent                 // last byte sent, waiting for its delivery (in the delivery heap)
)

// entry is one (link, coefficient) pair of a flow.
type entry struct {
	link int32
	pos  int32   // index of this flow's linkRef in the link's list, while active
	coef float64 // sum of the weights of the flow's paths through link, > 0
}

// linkRef is one active flow crossing a link: the flow's slot, the index of its entry and
// the entry's coefficient (a copy, so that a pass over a link's flows reads the flows' rates
// and not their entries).
type linkRef struct {
	slot int32
	ent  int32
	coef float64
}

// linkState is everything the Net keeps about one internal link, 128 bytes (two cache
// lines of Net.link): the first line holds what every pass over the link reads and what a
// flow joining or leaving it writes (its list, coefficient sum, load and its instant, and
// the incremental recomputation's per-change marks), the second what a recomputation reads
// and writes besides (capacity, the fill's scratch, the byte counter, the incremental
// check's per-round cache). The engine's cost at scale is mostly random access to per-link
// and per-flow state; one record per link makes the first touch of a link in a pass bring
// in what the pass reads next.
type linkState struct {
	list []linkRef // active flows crossing the link
	wsum float64   // sum of the coefficients of list; exactly 0 when the list is empty
	load float64   // bits per second carried, from the last recomputation
	lupd sim.Time  // bytes is as of this instant (the load has not changed since)
	// Incremental recomputation (incr.go).
	chg  uint32 // inc.aep when in inc.links
	scan uint32 // inc.aep when every flow on it joined A (seeding)
	// seen is inc.batch<<1 when the link joined inc.seedLinks in that batch, plus 1 when
	// its capacity changed in it.
	seen uint32
	upos int32 // index in Net.used, or -1

	fill   linkFill // the fill's scratch (fill.go)
	capa   float64  // capacity, bits per second (a copy of capExt, times capMul when folded)
	bytes  float64  // bytes carried up to lupd
	lmax   float64  // the fastest rate on the link, as of round lmaxAt of the check
	lload  float64  // the load under the current rates, as of round lmaxAt
	lsat   uint32   // inc.rnd when a flow of A froze on it in the refill (saturated)
	lmaxAt uint32   // inc.rnd when lmax and lload are current
}

// flowState is one slot of the flow table. Slots are reused after delivery. It is 128 bytes,
// two cache lines of the table: the first holds what the fill and the incremental
// recomputation read for every flow on a link they pass over (rate, entries, cap,
// bottleneck, and the epoch marks: in A, frozen, seeded), so that one miss brings them all;
// the second what events read (id, remaining bytes, state and key generations, which the
// completion heaps check for staleness).
type flowState struct {
	rate     float64 // bits per second, from the last recomputation; +Inf for an unconstrained flow
	ents     []entry // sorted by link; capacity kept across reuse of the slot
	cap      float64 // +Inf for none
	bott     int32   // link that froze the flow at the last recomputation; -1 its cap, -2 none
	apos     int32   // index in Net.active while active
	inA      uint32  // inc.aep while in the incremental recomputation's A (incr.go)
	mark     uint32  // fs.epoch once frozen in that fill (fill.go)
	fseen    uint32  // inc.batch once among that batch's seed flows (incr.go)
	soloLink int32   // the link of its solo limit in the fill in progress, -1 its cap (fill.go)

	id        FlowID
	remaining float64  // bytes left to send, as of upd
	upd       sim.Time // remaining is as of this instant (the rate has not changed since)
	lat       sim.Time
	done      func(now sim.Time)
	// dgen and sgen are the generations of the flow's entries in Net.hDrain and Net.hSent:
	// an entry of another generation is stale.
	dgen, sgen uint32
	state      uint8
	stalled    bool // rate 0 at the last recomputation
	held       bool // Hold: kept at rate 0 (its own cap in side[slot].cap0)
	sided      bool // side[slot] belongs to this flow (it has stalled or been held)
	src, dst   int32
}

// flowInfo is the part of a flow's state only its creation, activation and snapshots read,
// kept beside the flow table (Net.info, by slot).
type flowInfo struct {
	start sim.Time // when it starts
	bytes int64    // payload
}

// stallRec is the rarely used part of a flow's state, kept beside the flow table (Net.side,
// by slot) so that the table stays small for the fill: its stalls and holds.
type stallRec struct {
	at   sim.Time // when it last became stalled (valid while stalled)
	bott int32    // the link that stalls it (valid while stalled)
	link int32    // the link of its longest stall that ended, -2 none
	dur  sim.Time // that stall's length
	cap0 float64  // its own cap while held
}

// doneRef is a flow queued for completion (Net.doneBuf): its id, for the order, and its slot.
type doneRef struct {
	id   FlowID
	slot int32
}

// pend is an entry of a time-ordered heap of flows (starts, deliveries), ordered by (at, id).
type pend struct {
	at   sim.Time
	id   FlowID
	slot int32
}

// maxDefers bounds how often one instant's recomputation is postponed behind other events of
// that instant.
const maxDefers = 32

// Net is a flow-level network: directed links with capacities and the flows crossing them,
// run on a *sim.Sim (see the package doc for the model). Not safe for concurrent use; all
// calls happen inside one simulation (or before it runs).
type Net struct {
	s     *sim.Sim
	cfg   Config
	kind  sim.Kind
	kEnd  sim.Kind // the end-of-instant wake of a deferred recomputation
	timer sim.TimerID

	// Links are numbered internally in order of first use, so that the links of one flow,
	// and of flows between nearby hosts, sit close in memory whatever the caller's numbering:
	// the fill's cost is mostly random access to per-link state. Entries, lists and every
	// per-link slice below use internal numbers; the API uses the caller's.
	capExt  []float64 // by the caller's index: capacity, bits per second, finite, >= 0
	ext2int []int32   // caller's index -> internal number, -1 until first used
	int2ext []int32   // internal number -> caller's index
	// Folded (Collectives.SetFold, fold.go): the caller's link l is read (LinkBytes,
	// LinkLoad) as its class view[l] times viewMul[l] (K/m), and a class runs at capMul of
	// its capacity (m/K); nil when not folded.
	view    []int32
	viewMul []float64
	capMul  []float64

	// Per internal link: its state in one record (linkState), so that a pass over a link
	// reads one or two cache lines of it instead of one line per field.
	link []linkState
	used []int32 // links with at least one active flow, in no particular order

	flows  []flowState
	info   []flowInfo // by slot
	free   []int32    // free slots
	active []int32    // slots of active flows (swap-removed)
	nextID FlowID

	starts []pend // flows waiting to start
	// startsNow are the slots of flows added to start at the current instant, in id order
	// (wake activates them after the due entries of starts, whose ids are all lower: they
	// were added at an earlier instant). They skip the heap: a phase's flows start at once.
	startsNow []int32
	deliv     []pend // flows waiting for delivery

	last     sim.Time // the fluid state's last update (Config.OnAdvance)
	nextDone sim.Time // earliest completion under the current rates (MaxTime: none)
	wakeAt   sim.Time // the timer's deadline (MaxTime: stopped)
	inWake   bool
	dirty    bool // rates need recomputing
	// Completions: every active flow with a rate has a live entry in both heaps (kent).
	// hDrain is keyed by when its last byte leaves at its current rate (the timer's next
	// deadline); hSent by the earliest instant it can count as sent (finished: less than a
	// byte left), a lower bound checked when reached.
	hDrain  wideHeap
	hSent   keyHeap
	changed []int32 // slots whose rate the recomputation in progress changed (freeze)
	deferAt sim.Time
	defers  int
	// endPending: an end-of-instant wake is queued at deferAt.
	endPending bool

	fs      fillState
	inc     incrState
	nEnts   int // (link, coefficient) entries of the active flows
	doneBuf []doneRef
	doneTmp []doneRef // sortDone's scratch

	stats    Stats
	nStalled int      // active flows at rate 0 after the last recomputation
	fillNow  sim.Time // the instant of the fill in progress (stall times)
	// delivBott is the bottleneck (internal link, -1 cap, -2 none) of the flow being
	// delivered, delivStall and delivStallFor its longest stall, for DeliveredBottleneck and
	// DeliveredStall inside its Done callback.
	delivBott, delivStall int32
	delivStallFor         sim.Time
	side                  []stallRec // by slot, grown on a flow's first stall or hold (sideOf)
}

// sideOf returns the side record of the flow in slot, reset on its flow's first use.
func (n *Net) sideOf(slot int32) *stallRec {
	for int(slot) >= len(n.side) {
		n.side = append(n.side, stallRec{link: -2})
	}
	r := &n.side[slot]
	if f := &n.flows[slot]; !f.sided {
		f.sided = true
		*r = stallRec{link: -2}
	}
	return r
}

// New returns a Net on s with len(capacity) directed links, link i of capacity[i] bits per
// second. Errors: a nil simulation, more than 2^31-1 links, a capacity that is negative, NaN
// or infinite.
func New(s *sim.Sim, capacity []float64, cfg Config) (*Net, error) {
	if s == nil {
		return nil, fmt.Errorf("flow: New needs a simulation")
	}
	if len(capacity) > math.MaxInt32 {
		return nil, fmt.Errorf("flow: %d links; at most %d", len(capacity), math.MaxInt32)
	}
	for i, c := range capacity {
		if err := checkCap(i, c); err != nil {
			return nil, err
		}
	}
	n := &Net{
		s: s, cfg: cfg,
		capExt:   slices.Clone(capacity),
		ext2int:  make([]int32, len(capacity)),
		nextDone: sim.MaxTime, wakeAt: sim.MaxTime, deferAt: -1,
		last: s.Now(),
	}
	for i := range n.ext2int {
		n.ext2int[i] = -1
	}
	n.resetChanges()
	n.kind = s.Register("flow.net", n.wake)
	n.kEnd = s.Register("flow.net.end", n.onEnd)
	n.timer = s.NewTimer(n.kind, 0)
	return n, nil
}

func checkCap(link int, c float64) error {
	if !(c >= 0) || math.IsInf(c, 0) {
		return fmt.Errorf("flow: link %d capacity %v bits/s: must be a finite number >= 0", link, c)
	}
	return nil
}

// NumLinks returns the number of directed links.
func (n *Net) NumLinks() int { return len(n.capExt) }

// intern returns the internal number of the caller's link l (in range), assigning the next
// one on first use.
func (n *Net) intern(l int32) int32 {
	if i := n.ext2int[l]; i >= 0 {
		return i
	}
	i := int32(len(n.int2ext))
	n.ext2int[l] = i
	n.int2ext = append(n.int2ext, l)
	c := n.capExt[l]
	if n.capMul != nil {
		c *= n.capMul[l]
	}
	if len(n.link) == cap(n.link) {
		// Double (append grows a large slice by a quarter, copying it again and again).
		n.link = slices.Grow(n.link, max(len(n.link), 64))
	}
	n.link = append(n.link, linkState{capa: c, upos: -1})
	return i
}

// extLink returns the caller's index of internal link i, or i itself when negative (-1 a
// cap, -2 none).
func (n *Net) extLink(i int32) int {
	if i < 0 {
		return int(i)
	}
	return int(n.int2ext[i])
}

// Capacity returns link's capacity in bits per second (0 for an index out of range).
func (n *Net) Capacity(link int) float64 {
	if link < 0 || link >= len(n.capExt) {
		return 0
	}
	return n.capExt[link]
}

// SetCapacity sets link's capacity to bitsPerSec from the current instant on (0 for a failed
// link) and recomputes the rates at this instant. Existing flows keep their paths; a flow
// crossing a link of capacity 0 stalls at rate 0 until it is restored (see Err). Errors: a
// link out of range, a capacity that is negative, NaN or infinite.
func (n *Net) SetCapacity(link int, bitsPerSec float64) error {
	if link < 0 || link >= len(n.capExt) {
		return fmt.Errorf("flow: SetCapacity: link %d out of range [0, %d)", link, len(n.capExt))
	}
	if err := checkCap(link, bitsPerSec); err != nil {
		return err
	}
	n.capExt[link] = bitsPerSec
	if n.capMul != nil {
		bitsPerSec *= n.capMul[link]
	}
	i := n.ext2int[link]
	if i < 0 || n.link[i].capa == bitsPerSec {
		return nil
	}
	n.link[i].capa = bitsPerSec
	if len(n.link[i].list) > 0 {
		n.noteCap(i)
		n.dirty = true
		n.armAt(n.s.Now())
	}
	return nil
}

// AddFlow adds a flow that starts at time at (>= now) and returns its id. Its paths are
// copied and merged into per-link coefficients now; Done runs at delivery. Errors (nothing is
// added): a start in the past, negative bytes, a negative latency, a cap that is negative or
// NaN, a path weight that is negative or NaN or infinite, paths whose weights sum to 0 while
// some path has links, a link out of range.
func (n *Net) AddFlow(at sim.Time, f Flow) (FlowID, error) {
	n.beginFlow()
	for i := range f.Paths {
		if err := n.addPath(f.Paths[i].Links, f.Paths[i].Weight); err != nil {
			return -1, fmt.Errorf("flow: flow %d -> %d: paths[%d]: %w", f.Src, f.Dst, i, err)
		}
	}
	slot, err := n.commitFlow(at, f)
	if err != nil {
		return -1, err
	}
	return n.flows[slot].id, nil
}

// beginFlow starts accumulating the paths of a new flow in the fill scratch.
func (n *Net) beginFlow() {
	fs := &n.fs
	fs.resetBuild()
	fs.wtotal = 0
	fs.sawLinks = false
}

// addPath adds one weighted path to the flow being built.
func (n *Net) addPath(links []int32, w float64) error {
	if !(w >= 0) || math.IsInf(w, 0) {
		return fmt.Errorf("weight %v: must be a finite number >= 0", w)
	}
	fs := &n.fs
	for _, l := range links {
		if l < 0 || int(l) >= len(n.capExt) {
			return fmt.Errorf("link %d out of range [0, %d)", l, len(n.capExt))
		}
	}
	if len(links) > 0 {
		fs.sawLinks = true
	}
	if w == 0 {
		return nil
	}
	fs.wtotal += w
	// Look every link up first: the lookups are independent random reads the processor
	// overlaps, where interleaved with accum's branches on their results each waited for
	// the one before. A link first used in this path reads -1 and is interned below (a
	// repeat of it then finds its number).
	ids := fs.ids[:0]
	for _, x := range links {
		ids = append(ids, n.ext2int[x])
	}
	for k, i := range ids {
		if i < 0 {
			i = n.intern(links[k])
		}
		fs.accum(i, w)
	}
	fs.ids = ids
	return nil
}

// commitFlow validates f (its Paths are ignored: they were added by addPath) and creates the
// flow from the accumulated paths. It returns the flow's slot.
func (n *Net) commitFlow(at sim.Time, f Flow) (int32, error) {
	now := n.s.Now()
	switch {
	case at < now:
		return -1, fmt.Errorf("flow: flow %d -> %d: start %v is before now (%v)", f.Src, f.Dst, at, now)
	case f.Bytes < 0:
		return -1, fmt.Errorf("flow: flow %d -> %d: bytes %d: must be >= 0", f.Src, f.Dst, f.Bytes)
	case f.Latency < 0:
		return -1, fmt.Errorf("flow: flow %d -> %d: latency %v: must be >= 0", f.Src, f.Dst, f.Latency)
	case !(f.Cap >= 0):
		return -1, fmt.Errorf("flow: flow %d -> %d: cap %v bits/s: must be >= 0 (0 = none)", f.Src, f.Dst, f.Cap)
	}
	fs := &n.fs
	if fs.sawLinks && !(fs.wtotal > 0) {
		return -1, fmt.Errorf("flow: flow %d -> %d: path weights sum to %v; want > 0", f.Src, f.Dst, fs.wtotal)
	}
	var slot int32
	if k := len(n.free); k > 0 {
		slot = n.free[k-1]
		n.free = n.free[:k-1]
	} else {
		if len(n.flows) >= math.MaxInt32 {
			return -1, fmt.Errorf("flow: too many flows in flight (%d)", len(n.flows))
		}
		n.flows = append(n.flows, flowState{})
		n.info = append(n.info, flowInfo{})
		n.fs.solo = append(n.fs.solo, 0)
		slot = int32(len(n.flows) - 1)
	}
	st := &n.flows[slot]
	// The slot's key generations go on (old heap entries stay stale), and so do its epoch
	// marks (fseen: a slot already among this batch's seed flows is not added again).
	dgen, sgen, inA, mark, fseen := st.dgen, st.sgen, st.inA, st.mark, st.fseen
	ents := n.takeEntries(st.ents[:0])
	c := f.Cap
	if c == 0 {
		c = math.Inf(1)
	}
	*st = flowState{
		id: n.nextID, ents: ents, cap: c, lat: f.Latency,
		src: int32(f.Src), dst: int32(f.Dst), bott: -2, apos: -1, state: stPending, done: f.Done,
		dgen: dgen + 1, sgen: sgen + 1, inA: inA, mark: mark, fseen: fseen,
	}
	n.info[slot] = flowInfo{start: at, bytes: f.Bytes}
	n.nextID++
	n.stats.FlowsAdded++
	if at == now {
		n.startsNow = append(n.startsNow, slot)
	} else {
		n.starts = pushPend(n.starts, pend{at: at, id: st.id, slot: slot})
	}
	n.armAt(at)
	return slot, nil
}

// takeEntries appends the flow being built (beginFlow, addPath) to ents as (link,
// coefficient) entries sorted by internal link, coefficients normalised, and clears the
// scratch.
func (n *Net) takeEntries(ents []entry) []entry {
	fs := &n.fs
	inv := 1 / fs.wtotal
	k := len(ents)
	ents = slices.Grow(ents, len(fs.touched)) // one allocation at most
	if fs.spilled {
		slices.Sort(fs.touched)
		for _, l := range fs.touched {
			ents = append(ents, entry{link: l, coef: fs.acc[l] * inv})
		}
	} else {
		for i, l := range fs.touched {
			ents = append(ents, entry{link: l, coef: fs.tw[i] * inv})
		}
		// Insertion sort by link (few, distinct links).
		e := ents[k:]
		for i := 1; i < len(e); i++ {
			for j := i; j > 0 && e[j].link < e[j-1].link; j-- {
				e[j], e[j-1] = e[j-1], e[j]
			}
		}
	}
	fs.resetBuild()
	return ents
}

// repath gives the flow in slot (waiting to start or sending) the paths accumulated since
// beginFlow, in place of its own; a sending flow keeps the bytes it has left and its rate
// until the recomputation this triggers (at the current instant). A flow already sent is
// left alone. Errors: paths whose weights sum to 0 while some path has links (nothing is
// changed).
func (n *Net) repath(slot int32) error {
	fs := &n.fs
	f := &n.flows[slot]
	if fs.sawLinks && !(fs.wtotal > 0) {
		fs.resetBuild()
		return fmt.Errorf("flow: flow %d (%d -> %d): path weights sum to %v; want > 0", f.id, f.src, f.dst, fs.wtotal)
	}
	if f.state != stPending && f.state != stActive {
		fs.resetBuild()
		return nil
	}
	linked := f.state == stActive && f.apos >= 0
	now := n.s.Now()
	if linked {
		// Bring the fluid state to now at the old rates first: leaving a link resets its
		// load, which would otherwise lose the bytes it carried since the last event.
		n.advance(now)
		n.unlinkFlow(slot)
	}
	f.ents = n.takeEntries(f.ents[:0])
	if linked {
		n.linkFlow(slot)
		n.armAt(now)
	}
	return nil
}

// Repath gives flow id (waiting to start or sending) new weighted paths, as AddFlow takes
// them, in place of its own: a sending flow keeps the bytes it has left and the rates are
// recomputed at the current instant (a reroute after a failure: MRC moving off dead paths,
// ECMP rehashing after routing reconverges). A flow already sent or delivered is left
// alone. Cost: O(active flows) to find it, plus its entries. Errors (nothing changes): an
// unknown id, a path error as in AddFlow.
func (n *Net) Repath(id FlowID, paths []Path) error {
	slot := int32(-1)
	for s := range n.flows {
		if f := &n.flows[s]; f.id == id && (f.state == stPending || f.state == stActive) {
			slot = int32(s)
			break
		}
	}
	if slot < 0 {
		if id >= 0 && id < n.nextID {
			return nil // sent or delivered
		}
		return fmt.Errorf("flow: repath: no flow %d", id)
	}
	n.beginFlow()
	for i := range paths {
		if err := n.addPath(paths[i].Links, paths[i].Weight); err != nil {
			n.beginFlow()
			return fmt.Errorf("flow: repath flow %d: paths[%d]: %w", id, i, err)
		}
	}
	return n.repath(slot)
}

// StallInfo is one sending flow stuck at rate 0 (Net.Stalled).
type StallInfo struct {
	ID       FlowID
	Src, Dst int
	Since    sim.Time // when it last became stalled
	Link     int      // the link of capacity 0 that stops it; -1 when held (Hold)
	Held     bool
}

// activeSlot returns the slot of sending flow id, -1 if it is not sending. O(active flows).
func (n *Net) activeSlot(id FlowID) int32 {
	for _, s := range n.active {
		if n.flows[s].id == id {
			return s
		}
	}
	return -1
}

// Hold keeps sending flow id at rate 0 (on) until released (off), whatever its links'
// capacities: a transport that waits before it sends again (a RoCE QP waiting for its
// retransmission timer after its path died). A held flow counts as stalled (Stalled, with
// Held set); holding it does not call Config.OnStall. The rates are recomputed at the
// current instant. It reports whether id is sending (a flow not sending is left alone).
func (n *Net) Hold(id FlowID, on bool) bool {
	s := n.activeSlot(id)
	if s < 0 {
		return false
	}
	f := &n.flows[s]
	if f.held == on {
		return true
	}
	if sr := n.sideOf(s); on {
		sr.cap0, f.cap = f.cap, 0
	} else {
		f.cap = sr.cap0
	}
	f.held = on
	n.noteFlow(s)
	n.dirty = true
	n.armAt(n.s.Now())
	return true
}

// Blocked returns the first link (by the caller's index) of capacity 0 on sending flow id's
// paths, -1 when there is none, -2 when id is not sending. O(active flows + its entries).
func (n *Net) Blocked(id FlowID) int {
	s := n.activeSlot(id)
	if s < 0 {
		return -2
	}
	for _, e := range n.flows[s].ents {
		if n.link[e.link].capa == 0 {
			return int(n.int2ext[e.link])
		}
	}
	return -1
}

// Stalled appends every sending flow at rate 0 after the last recomputation to buf[:0], in
// id order, and returns it. O(active flows).
func (n *Net) Stalled(buf []StallInfo) []StallInfo {
	buf = buf[:0]
	if n.nStalled == 0 {
		return buf
	}
	for _, s := range n.active {
		if f := &n.flows[s]; f.stalled {
			buf = append(buf, StallInfo{ID: f.id, Src: int(f.src), Dst: int(f.dst), Since: n.sideOf(s).at, Link: n.extLink(f.bott), Held: f.held})
		}
	}
	slices.SortFunc(buf, func(a, b StallInfo) int { return cmpID(a.ID, b.ID) })
	return buf
}

// DeliveredBottleneck returns, inside a flow's Done callback, the link that limited that
// flow at the last recomputation before its last byte left (its bottleneck: saturated, no
// flow on it faster), -1 when its cap did, -2 when nothing did. Outside a Done callback it
// returns the last delivered flow's.
func (n *Net) DeliveredBottleneck() int { return n.extLink(n.delivBott) }

// DeliveredStall returns, inside a flow's Done callback, the longest time that flow spent
// stalled at rate 0 (a path through a link of capacity 0, until the capacity returned or it
// was rerouted) and the link that stalled it; 0 and -2 when it never stalled.
func (n *Net) DeliveredStall() (link int, d sim.Time) {
	if n.delivStallFor == 0 {
		return -2, 0
	}
	return n.extLink(n.delivStall), n.delivStallFor
}

func cmpID(a, b FlowID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// armAt makes sure the timer fires no later than at. Inside wake the timer is re-armed at
// the end, so nothing is done.
func (n *Net) armAt(at sim.Time) {
	if n.inWake || at >= n.wakeAt {
		return
	}
	n.wakeAt = at
	n.s.Reset(n.timer, at)
}

// onEnd is the end-of-instant wake a deferred recomputation scheduled.
func (n *Net) onEnd(now sim.Time, _ int32, _ uint64) {
	n.endPending = false
	n.wake(now, 0, 0)
}

// wake is the Net's main event: it starts due flows, advances the fluid state to now,
// completes and delivers flows, recomputes the rates if anything changed, and re-arms the
// timer for the next of these.
func (n *Net) wake(now sim.Time, _ int32, _ uint64) {
	n.inWake = true
	n.wakeAt = sim.MaxTime
	if now != n.deferAt {
		n.deferAt, n.defers = now, 0
	}
	n.advance(now)
	for {
		progress := n.startDue(now)
		if len(n.doneBuf) > 0 {
			n.complete(now)
			progress = true
		}
		for len(n.deliv) > 0 && n.deliv[0].at <= now {
			p := n.deliv[0]
			n.deliv = popPend(n.deliv)
			n.deliver(now, p.slot)
			progress = true
		}
		if !progress {
			break
		}
	}
	if n.dirty {
		if n.defers < maxDefers && n.s.NextAt() == now {
			// Other events at this instant may change the flows too: recompute once, after
			// all of them (sim.AtEndOfInstant). Re-arming the timer at now instead would put
			// the recomputation at a random place among them, and a training step's cascades
			// of completions and new flows then recomputed up to ten times per instant.
			n.defers++
			n.stats.Deferred++
			n.inWake = false
			n.wakeAt = now
			if !n.endPending {
				n.endPending = true
				n.s.AtEndOfInstant(now, n.kEnd, 0, 0)
			}
			return
		}
		n.recompute(now)
	}
	n.inWake = false
	next := n.nextDone
	if len(n.startsNow) > 0 {
		next = now
	}
	if len(n.starts) > 0 {
		next = min(next, n.starts[0].at)
	}
	if len(n.deliv) > 0 {
		next = min(next, n.deliv[0].at)
	}
	if next == sim.MaxTime {
		n.s.StopTimer(n.timer)
		return
	}
	n.wakeAt = next
	n.s.Reset(n.timer, next)
}

// startDue activates the flows due to start by now, in id order: those of the start heap,
// then those added to start at now (startsNow, whose ids are higher). It reports whether
// it started any.
func (n *Net) startDue(now sim.Time) bool {
	progress := false
	for len(n.starts) > 0 && n.starts[0].at <= now {
		p := n.starts[0]
		n.starts = popPend(n.starts)
		n.activate(p.slot)
		progress = true
	}
	if len(n.startsNow) > 0 {
		for _, s := range n.startsNow { // activate adds no flow
			n.activate(s)
		}
		n.startsNow = n.startsNow[:0]
		progress = true
	}
	return progress
}

// advance moves the fluid state to now, lazily: each flow's remaining bytes and each link's
// bytes are brought up to date only when its rate or load changes (settle, settleLink) or
// when read. Flows that count as sent by now (finished: less than one byte left, or the last
// byte leaves within half a picosecond) are queued in doneBuf, in no particular order: those
// whose hSent key has come, each checked at its exact remaining bytes. O(log active) per
// flow found, nothing per flow otherwise.
func (n *Net) advance(now sim.Time) {
	if now > n.last {
		if n.cfg.OnAdvance != nil {
			n.cfg.OnAdvance(now)
		}
		n.last = now
	}
	for n.hSent.len() > 0 {
		e := n.hSent.e[0]
		f := &n.flows[e.slot]
		if f.state != stActive || f.sgen != e.gen {
			n.hSent.pop() // stale
			continue
		}
		if e.at > now {
			break
		}
		n.hSent.pop()
		n.settle(e.slot, now)
		if finished(f) {
			n.unkey(e.slot)
			n.doneBuf = append(n.doneBuf, doneRef{id: f.id, slot: e.slot})
			continue
		}
		f.sgen++
		n.hSent.push(kent{at: max(sentKey(f), now+1), slot: e.slot, gen: f.sgen})
	}
}

// unkey makes the completion entries of the flow in slot stale (it completed, or is about
// to be rekeyed).
func (n *Net) unkey(slot int32) {
	f := &n.flows[slot]
	f.dgen++
	f.sgen++
}

// drainTop returns the earliest live hDrain key (MaxTime: none), dropping stale entries.
func (n *Net) drainTop() sim.Time {
	for n.hDrain.len() > 0 {
		e := n.hDrain.e[0]
		if f := &n.flows[e.slot]; f.state == stActive && f.dgen == e.gen {
			return e.at
		}
		n.hDrain.pop()
	}
	return sim.MaxTime
}

// settle brings the remaining bytes of the active flow in slot up to now at its current
// rate, adding what it sent to Stats.BytesSent.
func (n *Net) settle(slot int32, now sim.Time) {
	f := &n.flows[slot]
	if f.upd == now {
		return
	}
	before := f.remaining
	if math.IsInf(f.rate, 1) {
		f.remaining = 0
	} else if f.rate > 0 {
		f.remaining -= f.rate * (float64(now-f.upd) * 1e-12) / 8
		if f.remaining < 0 {
			f.remaining = 0
		}
	}
	n.stats.BytesSent += before - f.remaining
	f.upd = now
}

// settleLink brings internal link l's bytes up to now at its current load; call it before
// the load changes.
func (n *Net) settleLink(l int32, now sim.Time) {
	lk := &n.link[l]
	if d := now - lk.lupd; d > 0 {
		lk.bytes += lk.load * (float64(d) * 1e-12) / 8
	}
	lk.lupd = now
}

// sentKey is the earliest instant the flow f (settled: remaining as of f.upd) can count as
// sent at its rate: when fewer than max(1, rate x 0.5 ps) bytes are left (finished), a
// picosecond early so that rounding never makes it late; MaxTime for a flow at rate 0 with
// a byte or more left.
func sentKey(f *flowState) sim.Time {
	r := f.rate
	if f.remaining < 1 || math.IsInf(r, 1) {
		return f.upd
	}
	if !(r > 0) {
		return sim.MaxTime
	}
	thr := max(1, r/16e12)
	x := (f.remaining - thr) * 8e12 / r
	if x >= 9e18 {
		return sim.MaxTime
	}
	d := sim.Time(x) - 1
	if d <= 0 {
		return f.upd
	}
	if f.upd > sim.MaxTime-d {
		return sim.MaxTime
	}
	return f.upd + d
}

// drainKey is the instant the last byte of flow f (settled) leaves at its rate
// (f.upd + sendTime); MaxTime at rate 0.
func drainKey(f *flowState) sim.Time {
	if !(f.rate > 0) {
		return sim.MaxTime
	}
	d := sendTime(f.remaining, f.rate)
	if d == sim.MaxTime || f.upd > sim.MaxTime-d {
		return sim.MaxTime
	}
	return f.upd + d
}

// rekeyChanged gives the flows whose rate a recomputation changed (n.changed, duplicates
// allowed) new completion entries: pushed one by one in O(log n) each, or when they are
// many appended and the heaps rebuilt in O(heap size) (no flow but the changed ones is
// read). The heaps are compacted when stale entries outnumber the live ones.
func (n *Net) rekeyChanged() {
	many := 8*len(n.changed) >= len(n.active)
	for _, s := range n.changed {
		f := &n.flows[s]
		if f.state != stActive {
			continue
		}
		n.unkey(s)
		if k := drainKey(f); k != sim.MaxTime {
			if e := (kent{at: k, slot: s, gen: f.dgen}); many {
				n.hDrain.e = append(n.hDrain.e, e)
			} else {
				n.hDrain.push(e)
			}
		}
		if k := sentKey(f); k != sim.MaxTime {
			if e := (kent{at: k, slot: s, gen: f.sgen}); many {
				n.hSent.e = append(n.hSent.e, e)
			} else {
				n.hSent.push(e)
			}
		}
	}
	n.changed = n.changed[:0]
	if limit := 2*len(n.active) + 1024; n.hDrain.len() > limit || n.hSent.len() > limit {
		n.hDrain.filter(func(e kent) bool { f := &n.flows[e.slot]; return f.state == stActive && f.dgen == e.gen })
		n.hSent.filter(func(e kent) bool { f := &n.flows[e.slot]; return f.state == stActive && f.sgen == e.gen })
	} else if many {
		n.hDrain.heapify()
		n.hSent.heapify()
	}
}

// finished reports whether an active flow counts as sent: less than one byte left, or its
// last byte leaves within half a picosecond (see the package doc, "Events and rounding").
func finished(f *flowState) bool {
	if f.remaining < 1 || math.IsInf(f.rate, 1) {
		return true
	}
	return f.rate > 0 && f.remaining*8e12/f.rate < 0.5
}

// activate starts the flow in slot: it joins its links and the active set.
func (n *Net) activate(slot int32) {
	f := &n.flows[slot]
	f.state = stActive
	f.remaining = float64(n.info[slot].bytes)
	f.rate = 0
	f.upd = n.s.Now()
	if f.remaining == 0 {
		// Nothing to send: delivered after its latency, without touching a link.
		n.doneBuf = append(n.doneBuf, doneRef{id: f.id, slot: slot})
		return
	}
	f.apos = int32(len(n.active))
	n.active = append(n.active, slot)
	n.stats.MaxActive = max(n.stats.MaxActive, len(n.active))
	n.linkFlow(slot)
}

// linkFlow adds the active flow in slot to the lists of its links.
func (n *Net) linkFlow(slot int32) {
	f := &n.flows[slot]
	for i := range f.ents {
		e := &f.ents[i]
		l := e.link
		lk := &n.link[l]
		if len(lk.list) == 0 {
			lk.upos = int32(len(n.used))
			n.used = append(n.used, l)
			lk.load = 0
			lk.lupd = n.s.Now()
		}
		e.pos = int32(len(lk.list))
		lk.list = append(lk.list, linkRef{slot: slot, ent: int32(i), coef: e.coef})
		lk.wsum += e.coef
	}
	n.nEnts += len(f.ents)
	n.noteFlow(slot)
	n.dirty = true
}

// deactivate removes the active flow in slot from its links and the active set.
func (n *Net) deactivate(slot int32) {
	f := &n.flows[slot]
	if f.apos < 0 {
		return // a 0-byte flow never joined
	}
	last := n.active[len(n.active)-1]
	n.active[f.apos] = last
	n.flows[last].apos = f.apos
	n.active = n.active[:len(n.active)-1]
	f.apos = -1
	n.unkey(slot)
	n.unlinkFlow(slot)
	if f.stalled {
		f.stalled = false
		n.nStalled--
	}
	n.dirty = true
}

// unlinkFlow removes the active flow in slot from the lists of its links.
func (n *Net) unlinkFlow(slot int32) {
	f := &n.flows[slot]
	n.noteLeave(slot)
	n.nEnts -= len(f.ents)
	for i := range f.ents {
		e := &f.ents[i]
		l := e.link
		lk := &n.link[l]
		list := lk.list
		k := len(list) - 1
		if int(e.pos) != k {
			moved := list[k]
			list[e.pos] = moved
			n.flows[moved.slot].ents[moved.ent].pos = e.pos
		}
		lk.list = list[:k]
		if k == 0 {
			lk.wsum = 0
			n.settleLink(l, n.s.Now())
			lk.load = 0
			u := lk.upos
			lu := n.used[len(n.used)-1]
			n.used[u] = lu
			n.link[lu].upos = u
			n.used = n.used[:len(n.used)-1]
			lk.upos = -1
		} else {
			lk.wsum -= e.coef
		}
	}
}

// complete finishes the flows queued in doneBuf, in id order: they leave their links and
// wait for delivery.
func (n *Net) complete(now sim.Time) {
	// Sorted by the ids they carry: no flow is read (ids are unique).
	buf, spare := sortDone(n.doneBuf, n.doneTmp)
	n.doneBuf, n.doneTmp = buf, spare
	for _, d := range buf {
		s := d.slot
		f := &n.flows[s]
		n.deactivate(s)
		f.remaining = 0
		f.state = stSent
		n.stats.FlowsCompleted++
		at := now + f.lat
		if at < now {
			at = sim.MaxTime
		}
		n.deliv = pushPend(n.deliv, pend{at: at, id: f.id, slot: s})
	}
	n.doneBuf = buf[:0]
}

// deliver runs the Done callback of the flow in slot and frees the slot.
func (n *Net) deliver(now sim.Time, slot int32) {
	f := &n.flows[slot]
	done := f.done
	f.done = nil
	f.state = stFree
	n.free = append(n.free, slot)
	n.stats.FlowsDelivered++
	if done != nil {
		n.delivBott, n.delivStall, n.delivStallFor = f.bott, -2, 0
		if f.sided {
			n.delivStall, n.delivStallFor = n.side[slot].link, n.side[slot].dur
		}
		done(now)
	}
}

// recompute assigns max-min fair rates to the active flows and finds the next completion.
func (n *Net) recompute(now sim.Time) {
	t0 := time.Now()
	n.dirty = false
	n.stats.Recomputes++
	n.fillNow = now
	newStall := n.rates()
	n.rekeyChanged()
	n.nextDone = n.drainTop()
	n.stats.RecomputeWall += time.Since(t0)
	if newStall && n.cfg.OnStall != nil {
		n.cfg.OnStall(now, n.Err())
	}
}

// sendTime returns the time to send remaining bytes at rate bits per second (> 0), rounded up
// to a picosecond (a value within 0.001 ps above a whole number rounds down), at least 1 ps
// for a finite rate, saturating at MaxTime.
func sendTime(remaining, rate float64) sim.Time {
	if math.IsInf(rate, 1) {
		return 0
	}
	x := remaining * 8e12 / rate
	if x >= 9e18 {
		return sim.MaxTime
	}
	d := sim.Time(math.Ceil(x - 1e-3))
	return max(d, 1)
}

// Err returns nil when no active flow is stalled, else an error naming the lowest-id flow at
// rate 0 (its id and hosts) and the link of capacity 0 that stopped it, with the number of
// stalled flows. It reflects the last recomputation.
func (n *Net) Err() error {
	if n.nStalled == 0 {
		return nil
	}
	var best *flowState
	for _, s := range n.active {
		f := &n.flows[s]
		if f.stalled && (best == nil || f.id < best.id) {
			best = f
		}
	}
	if best == nil {
		return nil
	}
	return &StallError{Flow: best.id, Src: int(best.src), Dst: int(best.dst), Link: n.extLink(best.bott), Stalled: n.nStalled}
}

// StallError reports flows stuck at rate 0: their path crosses a link of capacity 0.
type StallError struct {
	Flow     FlowID // the lowest-id stalled flow
	Src, Dst int    // its hosts
	Link     int    // the link of capacity 0 that stopped it
	Stalled  int    // number of stalled flows
}

// Error describes the stall.
func (e *StallError) Error() string {
	return fmt.Sprintf("flow: flow %d (host %d -> host %d) is stalled at rate 0: its path crosses link %d of capacity 0 (%d flow(s) stalled)",
		e.Flow, e.Src, e.Dst, e.Link, e.Stalled)
}

// Active returns the number of flows sending now.
func (n *Net) Active() int { return len(n.active) }

// InFlight returns the number of flows added and not yet delivered (pending, sending, or
// waiting out their latency).
func (n *Net) InFlight() int { return len(n.flows) - len(n.free) }

// Stats returns the Net's counters, BytesSent as of the last event. O(active flows).
func (n *Net) Stats() Stats {
	st := n.stats
	for _, s := range n.active {
		f := &n.flows[s]
		if sec := float64(n.last-f.upd) * 1e-12; sec > 0 && f.rate > 0 {
			st.BytesSent += min(f.remaining, f.rate*sec/8)
		}
	}
	return st
}

// FlowInfo is a snapshot of one sending flow.
type FlowInfo struct {
	ID        FlowID
	Src, Dst  int
	Bytes     int64    // payload
	Remaining float64  // bytes left to send now
	Rate      float64  // bits per second, from the last recomputation
	Start     sim.Time // when it started
	// Bottleneck is the link that limits the flow (saturated, and no flow on it runs faster),
	// -1 when its cap does, -2 when nothing does (no links, no cap: infinite rate).
	Bottleneck int
}

// Flows appends a snapshot of every sending flow to buf[:0], in id order, and returns it.
func (n *Net) Flows(buf []FlowInfo) []FlowInfo {
	buf = buf[:0]
	now := n.s.Now()
	for _, s := range n.active {
		f := &n.flows[s]
		rem := f.remaining
		if sec := float64(now-f.upd) * 1e-12; sec > 0 && f.rate > 0 {
			rem = max(0, rem-f.rate*sec/8)
		}
		buf = append(buf, FlowInfo{ID: f.id, Src: int(f.src), Dst: int(f.dst), Bytes: n.info[s].bytes, Remaining: rem,
			Rate: f.rate, Start: n.info[s].start, Bottleneck: n.extLink(f.bott)})
	}
	slices.SortFunc(buf, func(a, b FlowInfo) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return buf
}

// LinkLoad returns the bits per second link carries under the current rates (0 for an
// index out of range).
func (n *Net) LinkLoad(link int) float64 {
	if link < 0 || link >= len(n.capExt) {
		return 0
	}
	mul := 1.0
	if n.view != nil {
		if link, mul = int(n.view[link]), n.viewMul[link]; link < 0 {
			return 0
		}
	}
	if n.ext2int[link] < 0 {
		return 0
	}
	return n.link[n.ext2int[link]].load * mul
}

// LinkBytes appends to buf[:0] the bytes each link has carried up to now (fluid, fractional),
// indexed by link, and returns it. A link's utilisation over [t0, t1] is the difference of
// two snapshots x 8 / (capacity x (t1-t0)).
func (n *Net) LinkBytes(buf []float64) []float64 {
	buf = append(buf[:0], make([]float64, len(n.capExt))...)
	now := n.s.Now()
	for i := range n.link {
		lk := &n.link[i]
		b := lk.bytes
		if sec := float64(now-lk.lupd) * 1e-12; sec > 0 {
			b += lk.load * sec / 8
		}
		buf[n.int2ext[i]] = b
	}
	n.unfoldLinks(buf)
	return buf
}

// LinkBytesAt appends to buf[:0] the bytes each link had carried at instant t, indexed by
// link, and returns it: the bytes carried up to the last fluid update plus the current link
// loads from then to t. Exact for any t from the last update up to the next change of the
// loads, as inside a Config.OnAdvance callback for t up to its now; fractional (fluid).
func (n *Net) LinkBytesAt(t sim.Time, buf []float64) []float64 {
	buf = append(buf[:0], make([]float64, len(n.capExt))...)
	for i := range n.link {
		lk := &n.link[i]
		b := lk.bytes
		if sec := float64(t-lk.lupd) * 1e-12; sec != 0 {
			b = max(0, b+lk.load*sec/8)
		}
		buf[n.int2ext[i]] = b
	}
	n.unfoldLinks(buf)
	return buf
}

// unfoldLinks turns per-link readings of the folded Net (by the caller's index) into the
// full network's: each link gets its class's reading times K/m. A class is the least link
// of its orbit, so going down the links reads every class before it is scaled itself.
func (n *Net) unfoldLinks(buf []float64) {
	if n.view == nil {
		return
	}
	for l := len(buf) - 1; l >= 0; l-- {
		if c := n.view[l]; c < 0 {
			buf[l] = 0
		} else {
			buf[l] = buf[c] * n.viewMul[l]
		}
	}
}

// The start and delivery heaps are 4-ary (half the levels of a binary heap, a node's children
// in two cache lines). (at, id) is a total order (ids are unique), so the pop order is the
// same whatever the heap's shape.

// pushPend adds p to the heap h, ordered by (at, id).
func pushPend(h []pend, p pend) []pend {
	h = append(h, p)
	i := len(h) - 1
	for i > 0 {
		j := (i - 1) / 4
		if !pendLess(&p, &h[j]) {
			break
		}
		h[i] = h[j]
		i = j
	}
	h[i] = p
	return h
}

// popPend removes h[0] from the non-empty heap h.
func popPend(h []pend) []pend {
	k := len(h) - 1
	last := h[k]
	h = h[:k]
	if k == 0 {
		return h
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= k {
			break
		}
		m := c
		for j := c + 1; j < min(c+4, k); j++ {
			if pendLess(&h[j], &h[m]) {
				m = j
			}
		}
		if !pendLess(&h[m], &last) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = last
	return h
}

func pendLess(a, b *pend) bool { return a.at < b.at || (a.at == b.at && a.id < b.id) }

// BytesSentNow returns the payload bytes every flow has sent up to the current instant
// (Stats.BytesSent brought forward from the last update at the current rates): the exact
// fluid figure between events. O(sending flows).
func (n *Net) BytesSentNow() float64 { return n.BytesSentAt(n.s.Now()) }

// BytesSentAt is BytesSentNow at time t, for t from the Net's last update to its next
// (inside Config.OnAdvance, up to the instant it advances to; after the run, up to its end).
// O(sending flows).
func (n *Net) BytesSentAt(t sim.Time) float64 {
	b := n.stats.BytesSent
	for _, s := range n.active {
		f := &n.flows[s] // remaining is as of f.upd; its rate has held since
		if sec := float64(t-f.upd) * 1e-12; sec > 0 && f.rate > 0 {
			b += min(f.remaining, f.rate*sec/8)
		}
	}
	return b
}
