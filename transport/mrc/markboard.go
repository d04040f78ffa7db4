package mrc

import "github.com/lockstepsim/lockstep/sim"

// MarkBoard is the CE marks a NIC has seen on its fabric routes, pooled over all its QPs: the
// routes from one host toward one T0 (the T0 uplink and the T1 downlink an EV fixes [MRC
// §2.2]) are the same for every QP that takes them, so every QP's answers say how loaded they
// are. With one, CESkipBalance asks the board rather than the QP's own answers whether its
// plane has an unmarked route (Sender.SetMarkBoard). Not safe for concurrent use.
type MarkBoard struct {
	mark, clean []sim.Time // by route: when last answered marked, and clean; -1 never
}

// NewMarkBoard returns an empty board.
func NewMarkBoard() *MarkBoard { return &MarkBoard{} }

// AddRoute adds a route and returns its number (0, 1, ...).
func (b *MarkBoard) AddRoute() int32 {
	b.mark = append(b.mark, -1)
	b.clean = append(b.clean, -1)
	return int32(len(b.mark) - 1)
}

// Routes returns the number of routes on the board.
func (b *MarkBoard) Routes() int { return len(b.mark) }

// note records an answer on route r at now, marked or not (r out of range is ignored).
func (b *MarkBoard) note(r int32, now sim.Time, marked bool) {
	if r < 0 || int(r) >= len(b.mark) {
		return
	}
	if marked {
		b.mark[r] = now
	} else {
		b.clean[r] = now
	}
}

// allMarked reports whether, since from, some of routes were answered and every route answered
// was marked (a route both marked and answered clean since from counts as marked).
func (b *MarkBoard) allMarked(routes []int32, from sim.Time) bool {
	answered := false
	for _, r := range routes {
		switch {
		case b.mark[r] >= from:
			answered = true
		case b.clean[r] >= from:
			return false
		}
	}
	return answered
}
