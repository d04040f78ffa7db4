package uecnic

import (
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/uec"
)

// Plane choice on multi-plane fabrics (ut20 F4, F8, F9). A host's NIC has one port per
// plane; every data packet leaves on one of them:
//
//   - RUD: the emptiest live port the connection has not seen fail; ties (a paced sender's
//     ports are all empty when it sends) are broken by a per-host rotation from a seeded
//     offset ("uec.planes" stream of the run's seed), never a fixed order, so paced traffic
//     spreads over every plane as MRC's does;
//   - ROD: one plane per connection (its EV modulo the planes, as its ACKs), so its packets
//     stay in order [UEC §3.5 ROD: one path per connection]; it moves to the next live plane
//     only when that one fails;
//   - a plane on which the connection lost a packet on evidence of a bad path (a SACK gap, or
//     the oldest packet of an RTO expiry: uec.Sender.Failures) is avoided for
//     planeHoldRTOs first RTOs while another plane is usable, as MRC moves off a dead plane
//     [MRC's plane failover]: REPS learns dead paths inside a plane, this learns a dead
//     plane (a NIC-T0 link, which routing cannot go around).
//
// ACKs, NACKs, credits and credit requests leave on their EV's plane, or the next live port
// when the host's own port there is down. With one plane nothing here changes a packet.

// planeHoldRTOs is how long a failed plane is avoided, in the connection's first RTOs
// (lockstep constant: long enough for a transfer to finish around a dead NIC link, short
// enough that a transient fault does not exile a plane for long; a plane still dead when it
// is tried again costs one packet, found by the next SACK gap).
const planeHoldRTOs = 8

// planeState is one QP's plane choice state (nil with one plane).
type planeState struct {
	home int        // ROD: the plane of its EV
	bad  []sim.Time // per plane: avoided until then
}

// initPlanes sets up q's plane state when the fabric has more than one plane.
func (e *Endpoint) initPlanes(q *qp) {
	if e.planes <= 1 {
		return
	}
	if e.rot == nil {
		rng := sim.Stream(e.seed, "uec.planes")
		e.rot = make([]uint32, e.net.NumHosts())
		for i := range e.rot {
			e.rot[i] = uint32(rng.IntN(e.planes))
		}
	}
	ps := &planeState{bad: make([]sim.Time, e.planes)}
	if ev, ok := q.snd.EVs().Fixed(); ok {
		ps.home = int(ev) % e.planes
	}
	q.snd.TrackFailures()
	q.pl = ps
}

// gatedFor reports whether q's sender must wait for its NIC (no usable port free) and
// otherwise the plane its next data packet leaves on.
func (e *Endpoint) gatedFor(now sim.Time, q *qp) (bool, int) {
	ps := q.pl
	if ps == nil {
		return e.gated(q.src)
	}
	ports := e.net.Nodes[q.src].Ports
	usable := func(pl int, avoid bool) bool {
		if pl >= len(ports) || e.net.Ports[ports[pl]].Down {
			return false
		}
		return !avoid || now >= ps.bad[pl]
	}
	if e.cfg.Delivery == uec.DeliveryROD {
		for _, avoid := range []bool{true, false} {
			for i := 0; i < e.planes; i++ {
				if pl := (ps.home + i) % e.planes; usable(pl, avoid) {
					return e.net.Ports[ports[pl]].QueueBytes() > 0, pl
				}
			}
		}
		return true, -1
	}
	start := int(e.rot[q.src] % uint32(e.planes))
	for _, avoid := range []bool{true, false} {
		best, bq := -1, int64(0)
		for i := 0; i < e.planes; i++ {
			pl := (start + i) % e.planes
			if !usable(pl, avoid) {
				continue
			}
			if qb := e.net.Ports[ports[pl]].QueueBytes(); best < 0 || qb < bq {
				best, bq = pl, qb
			}
		}
		if best >= 0 {
			return bq > 0, best
		}
	}
	return true, -1
}

// sentOn records that q's data packet h left on plane (the sender's tag of its PSN), and the
// host's rotation moves on.
func (e *Endpoint) sentOn(q *qp, h *uec.Header, plane int) {
	if q.pl == nil || plane < 0 {
		return
	}
	q.snd.SetTag(h.PSN, uint8(plane))
	e.rot[q.src]++
}

// planeEV (ROD) moves data packet h's EV to plane's residue (EV modulo the planes = plane), so
// the receiver's ACKs, sent on their EV's plane, come back on the plane the data took: when
// the home plane is down at the sender the ACKs follow the connection to the plane it moved
// to. RUD's EVs are REPS's and stay as picked.
func (e *Endpoint) planeEV(q *qp, h *uec.Header, plane int) {
	if q.pl == nil || plane < 0 || e.cfg.Delivery != uec.DeliveryROD {
		return
	}
	ev := int(h.EV)
	h.EV = uint16(ev - ev%e.planes + plane)
}

// learnPlanes hears q's sender's path failures: each one's plane is avoided for
// planeHoldRTOs RTOs from now.
func (e *Endpoint) learnPlanes(now sim.Time, q *qp) {
	ps := q.pl
	if ps == nil {
		return
	}
	fails := q.snd.Failures()
	if len(fails) == 0 {
		return
	}
	rto, _ := q.snd.Timers()
	for _, psn := range fails {
		pl := int(q.snd.Tag(psn)) % e.planes
		if now >= ps.bad[pl] {
			e.planesAvoided++
		}
		ps.bad[pl] = now + planeHoldRTOs*rto
	}
	q.snd.ClearFailures()
}

// ctrlPlane returns the plane a control packet on ev leaves host on: ev's plane, or the next
// live port when the host's own port there is down.
func (e *Endpoint) ctrlPlane(host int32, ev uint16) int {
	pl := int(ev) % e.planes
	if e.planes <= 1 {
		return pl
	}
	ports := e.net.Nodes[host].Ports
	for i := 0; i < e.planes; i++ {
		c := (pl + i) % e.planes
		if c < len(ports) && !e.net.Ports[ports[c]].Down {
			return c
		}
	}
	return pl
}

// creditEV returns the EV of q's next credit packet (ut20 F2): the EV of the latest data
// packet or credit request the destination received from q (REPS picks those from EVs whose
// round trip worked, so their reverse path is live too), else a walk over the pool (ctrlEV).
// A credit request answered rides the request's own EV back.
func (e *Endpoint) creditEV(q *qp) uint16 {
	if q.rxEVOK {
		return q.rxEV
	}
	return e.ctrlEV(q)
}

// ctrlEV returns the EV of q's next credit or credit request: a walk over the pool from the
// QP's number (one EV further per control packet), so consecutive control packets hash onto
// different paths (sprayed as data is) and a dead path costs one of them, not the
// connection's credit (ut20 F2).
func (e *Endpoint) ctrlEV(q *qp) uint16 {
	paths := int64(max(e.cfg.Paths, 1))
	ev := uint16((int64(q.id) + int64(q.ctl)) % paths)
	q.ctl++
	return ev
}
