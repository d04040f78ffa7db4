package uec

import (
	"math/rand/v2"

	"github.com/lockstepsim/lockstep/sim"
)

// EVStats counts an EV picker's choices over a connection.
type EVStats struct {
	Recycled int64 // REPS: packets sent on an EV reused from a clean ACK
	Fresh    int64 // packets sent on an EV drawn from the pool (oblivious: every packet)
	Dropped  int64 // REPS: EVs removed from the buffer after a CE mark, trim or timeout
	Overflow int64 // REPS: clean EVs lost because the buffer was full (the oldest goes)
	// Freezes: REPS freezing periods begun (a loss without trim: a failed path); Frozen the
	// packets sent while frozen on a cached EV kept for reuse.
	Freezes, Frozen int64
	// Skipped: bitmap: EVs passed over for their penalty.
	Skipped int64
}

// Bitmap penalties (lockstep constants), in rounds of the pool an EV sits out: a CE mark or
// a trim adds BitmapCEPenalty; a loss without trim (a failed path) sets BitmapMaxPenalty, so
// a dead path's EV is tried again only after 255 rounds (32,640 packets at 128 EVs: 1.3 ms
// at 100G).
const (
	BitmapCEPenalty  = 1
	BitmapMaxPenalty = 255
)

// EVPicker chooses each data packet's entropy value. The switches hash the EV with the
// 5-tuple (ECMP) at every tier, so an EV names a path only through the hash; the picker
// never sees routes. Four schemes:
//
//   - oblivious: a per-connection random permutation of the pool 0..paths-1, one EV per
//     packet, reshuffled every round [UEC §3.5 packet spraying];
//   - REPS [arXiv 2407.21625 §3]: a FIFO of EVs whose ACKs came back without CE; a packet
//     reuses the oldest, and with none left takes a fresh random EV from the pool
//     (exploration); an EV that saw CE, a trim or a timeout is removed. With freezing (lb
//     reps; not reps_nofreeze), a loss without trim (timeout or SACK gap: a failed path, not
//     congestion) freezes the picker for the freeze time [REPS, freezing mode after
//     failures]: no exploration, and a cached EV is reused without leaving the buffer (it
//     goes to the back), so packets cycle over the EVs known good until the period ends;
//   - bitmap: a penalty per EV over the pool, walked in a per-connection random order; an EV
//     with a penalty is skipped (the penalty decreasing by one per skip); CE or a trim adds
//     BitmapCEPenalty, a loss without trim sets BitmapMaxPenalty [issue 20's "bitmap/penalty
//     variant"; constants lockstep's];
//   - single (ROD): one EV drawn at setup, every packet on it.
//
// Invariants: 0 <= n <= len(buf); every EV returned is below paths.
type EVPicker struct {
	lb    string
	paths int
	rng   *rand.Rand
	perm  []uint16 // oblivious: this round's order
	pos   int      // oblivious: next index in perm
	buf   []uint16 // REPS ring
	head  int      // REPS: oldest entry
	n     int      // REPS: entries held
	// held counts REPS's queued copies of each EV (sum = n): while frozen a clean ACK of an
	// EV already held adds no copy.
	held []uint16
	one  uint16 // single
	// REPS freezing: frozen until frozenTo; freeze is the period (0: no freezing).
	freeze, frozenTo, now sim.Time
	// bitmap: per-EV penalty, rounds left to sit out.
	pen []uint8
	// Stats counts the picker's choices; the caller may read it.
	Stats EVStats
}

// NewEVPicker returns a picker for lb (LBOblivious, LBREPS, LBREPSNoFreeze, LBBitmap, or ""
// for a single EV as under ROD) over paths EVs (1..65536) with a REPS buffer of buffer
// entries, drawing from rng. REPS freezes only once SetFreeze gives it a period.
func NewEVPicker(lb string, paths, buffer int, rng *rand.Rand) *EVPicker {
	paths = min(max(paths, 1), 1<<16)
	p := &EVPicker{lb: lb, paths: paths, rng: rng}
	switch lb {
	case LBBitmap:
		p.pen = make([]uint8, paths)
		fallthrough
	case LBOblivious:
		p.perm = make([]uint16, paths)
		for i := range p.perm {
			p.perm[i] = uint16(i)
		}
		p.shuffle()
	case LBREPS, LBREPSNoFreeze:
		p.lb = LBREPS
		p.buf = make([]uint16, max(buffer, 1))
		p.held = make([]uint16, paths)
	default:
		p.one = uint16(rng.IntN(paths))
	}
	return p
}

func (p *EVPicker) shuffle() {
	p.rng.Shuffle(len(p.perm), func(i, j int) { p.perm[i], p.perm[j] = p.perm[j], p.perm[i] })
	p.pos = 0
}

// SetFreeze sets REPS's freezing period (0: never freeze).
func (p *EVPicker) SetFreeze(d sim.Time) { p.freeze = max(d, 0) }

// Frozen reports whether REPS is frozen at now.
func (p *EVPicker) Frozen(now sim.Time) bool { return p.lb == LBREPS && now < p.frozenTo }

// Advance tells the picker the time (for the end of a freezing period).
func (p *EVPicker) Advance(now sim.Time) { p.now = max(p.now, now) }

// Next returns the EV for the next data packet.
func (p *EVPicker) Next() uint16 {
	switch p.lb {
	case LBBitmap:
		for {
			if p.pos == len(p.perm) {
				p.shuffle()
			}
			ev := p.perm[p.pos]
			p.pos++
			if p.pen[ev] == 0 {
				p.Stats.Fresh++
				return ev
			}
			p.pen[ev]--
			p.Stats.Skipped++
		}
	case LBOblivious:
		if p.pos == len(p.perm) {
			p.shuffle()
		}
		ev := p.perm[p.pos]
		p.pos++
		p.Stats.Fresh++
		return ev
	case LBREPS:
		if p.n > 0 {
			ev := p.buf[p.head]
			p.head = (p.head + 1) % len(p.buf)
			p.n--
			p.Stats.Recycled++
			if p.now < p.frozenTo {
				// Frozen: the EV is known good; keep it for reuse (at the back).
				p.buf[(p.head+p.n)%len(p.buf)] = ev
				p.n++
				p.Stats.Frozen++
			} else {
				p.held[ev]--
			}
			return ev
		}
		p.Stats.Fresh++
		return uint16(p.rng.IntN(p.paths))
	}
	return p.one
}

// OnAck hears of an ACK that echoed ev: under REPS a clean one (no CE) is queued for reuse,
// the oldest entry giving way when the buffer is full; a CE-marked one is not, and any
// queued copy of it is removed. While frozen, a clean ACK of an EV the buffer already holds
// adds no copy: the frozen picker kept that EV when it sent on it, and a second copy per
// ACK would let the EVs used most crowd the others out of the buffer until a few paths
// carried the whole window (measured: a permutation losing a T0-T1 link of a full-bisection
// Clos ran 1.36x slower than its faultless twin with the copies, docs/transport-compare.md).
func (p *EVPicker) OnAck(ev uint16, ce bool) {
	if p.lb == LBBitmap {
		if ce && int(ev) < p.paths {
			p.pen[ev] = uint8(min(int(p.pen[ev])+BitmapCEPenalty, BitmapMaxPenalty))
		}
		return
	}
	if p.lb != LBREPS {
		return
	}
	if ce {
		p.drop(ev)
		return
	}
	if int(ev) >= p.paths || p.now < p.frozenTo && p.held[ev] > 0 {
		return
	}
	if p.n == len(p.buf) {
		p.held[p.buf[p.head]]--
		p.head = (p.head + 1) % len(p.buf)
		p.n--
		p.Stats.Overflow++
	}
	p.buf[(p.head+p.n)%len(p.buf)] = ev
	p.held[ev]++
	p.n++
}

// OnLoss hears that a packet on ev was trimmed (congestion): under REPS every queued copy of
// ev is removed; bitmap adds BitmapCEPenalty to it.
func (p *EVPicker) OnLoss(ev uint16) {
	switch p.lb {
	case LBREPS:
		p.drop(ev)
	case LBBitmap:
		if int(ev) < p.paths {
			p.pen[ev] = uint8(min(int(p.pen[ev])+BitmapCEPenalty, BitmapMaxPenalty))
		}
	}
}

// OnFailure hears at now that a packet on ev was lost without a trim (a timeout or a SACK
// gap: the path may have failed): REPS removes ev and, with a freezing period set, freezes
// until now + the period (a new failure extends it); bitmap sets ev's penalty to
// BitmapMaxPenalty.
func (p *EVPicker) OnFailure(now sim.Time, ev uint16) {
	p.Advance(now)
	switch p.lb {
	case LBREPS:
		p.drop(ev)
		if p.freeze > 0 {
			if now >= p.frozenTo {
				p.Stats.Freezes++
			}
			p.frozenTo = max(p.frozenTo, now+p.freeze)
		}
	case LBBitmap:
		if int(ev) < p.paths {
			p.pen[ev] = BitmapMaxPenalty
		}
	}
}

// Penalty returns ev's bitmap penalty (0 for other schemes).
func (p *EVPicker) Penalty(ev uint16) int {
	if p.lb != LBBitmap || int(ev) >= p.paths {
		return 0
	}
	return int(p.pen[ev])
}

// drop removes every queued copy of ev, keeping the others in order.
func (p *EVPicker) drop(ev uint16) {
	k := 0
	for i := 0; i < p.n; i++ {
		e := p.buf[(p.head+i)%len(p.buf)]
		if e == ev {
			p.Stats.Dropped++
			p.held[ev]--
			continue
		}
		p.buf[(p.head+k)%len(p.buf)] = e
		k++
	}
	p.n = k
}

// Buffered returns the EVs REPS holds for reuse, oldest first (nil for other schemes).
func (p *EVPicker) Buffered() []uint16 {
	var out []uint16
	for i := 0; i < p.n; i++ {
		out = append(out, p.buf[(p.head+i)%len(p.buf)])
	}
	return out
}

// Fixed returns the single scheme's EV and true (ROD: the connection's one EV), false for
// the spraying schemes.
func (p *EVPicker) Fixed() (uint16, bool) {
	switch p.lb {
	case LBBitmap, LBOblivious, LBREPS:
		return 0, false
	}
	return p.one, true
}

// Peek returns, under REPS, the EV most recently queued for reuse (its ACK came back clean:
// its path works both ways) without using it, and true; false with none queued or under
// another scheme. RCCC's credit requests ride it.
func (p *EVPicker) Peek() (uint16, bool) {
	if p.lb != LBREPS || p.n == 0 {
		return 0, false
	}
	return p.buf[(p.head+p.n-1)%len(p.buf)], true
}
