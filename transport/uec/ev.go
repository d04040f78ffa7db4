package uec

import "math/rand/v2"

// EVStats counts an EV picker's choices over a connection.
type EVStats struct {
	Recycled int64 // REPS: packets sent on an EV reused from a clean ACK
	Fresh    int64 // packets sent on an EV drawn from the pool (oblivious: every packet)
	Dropped  int64 // REPS: EVs removed from the buffer after a CE mark, trim or timeout
	Overflow int64 // REPS: clean EVs lost because the buffer was full (the oldest goes)
}

// EVPicker chooses each data packet's entropy value. The switches hash the EV with the
// 5-tuple (ECMP) at every tier, so an EV names a path only through the hash; the picker
// never sees routes. Three schemes:
//
//   - oblivious: a per-connection random permutation of the pool 0..paths-1, one EV per
//     packet, reshuffled every round [UEC §3.5 packet spraying];
//   - REPS [arXiv 2407.21625 §3]: a FIFO of EVs whose ACKs came back without CE; a packet
//     reuses the oldest, and with none left takes a fresh random EV from the pool
//     (exploration); an EV that saw CE, a trim or a timeout is removed;
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
	one   uint16   // single
	// Stats counts the picker's choices; the caller may read it.
	Stats EVStats
}

// NewEVPicker returns a picker for lb (LBOblivious, LBREPS, or "" for a single EV as under
// ROD) over paths EVs (1..65536) with a REPS buffer of buffer entries, drawing from rng.
func NewEVPicker(lb string, paths, buffer int, rng *rand.Rand) *EVPicker {
	paths = min(max(paths, 1), 1<<16)
	p := &EVPicker{lb: lb, paths: paths, rng: rng}
	switch lb {
	case LBOblivious:
		p.perm = make([]uint16, paths)
		for i := range p.perm {
			p.perm[i] = uint16(i)
		}
		p.shuffle()
	case LBREPS:
		p.buf = make([]uint16, max(buffer, 1))
	default:
		p.one = uint16(rng.IntN(paths))
	}
	return p
}

func (p *EVPicker) shuffle() {
	p.rng.Shuffle(len(p.perm), func(i, j int) { p.perm[i], p.perm[j] = p.perm[j], p.perm[i] })
	p.pos = 0
}

// Next returns the EV for the next data packet.
func (p *EVPicker) Next() uint16 {
	switch p.lb {
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
			return ev
		}
		p.Stats.Fresh++
		return uint16(p.rng.IntN(p.paths))
	}
	return p.one
}

// OnAck hears of an ACK that echoed ev: under REPS a clean one (no CE) is queued for reuse,
// the oldest entry giving way when the buffer is full; a CE-marked one is not, and any
// queued copy of it is removed.
func (p *EVPicker) OnAck(ev uint16, ce bool) {
	if p.lb != LBREPS {
		return
	}
	if ce {
		p.drop(ev)
		return
	}
	if p.n == len(p.buf) {
		p.head = (p.head + 1) % len(p.buf)
		p.n--
		p.Stats.Overflow++
	}
	p.buf[(p.head+p.n)%len(p.buf)] = ev
	p.n++
}

// OnLoss hears that a packet on ev was trimmed or timed out: under REPS every queued copy
// of ev is removed.
func (p *EVPicker) OnLoss(ev uint16) {
	if p.lb == LBREPS {
		p.drop(ev)
	}
}

// drop removes every queued copy of ev, keeping the others in order.
func (p *EVPicker) drop(ev uint16) {
	k := 0
	for i := 0; i < p.n; i++ {
		e := p.buf[(p.head+i)%len(p.buf)]
		if e == ev {
			p.Stats.Dropped++
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
