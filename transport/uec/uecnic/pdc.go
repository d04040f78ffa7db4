package uecnic

import (
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// Ephemeral packet delivery contexts (transport.uec.pdc; uec.PDCParams) [UEC §3.5 PDS]: a
// PDC (here one qp: a Sender, a Receiver and their state) opens on the first message to a
// peer that has none open, and closes when it has had nothing outstanding for idle_timeout,
// or at once when its NIC is at max_per_nic and another message needs a new one (the
// longest-idle goes first). A message that finds its NIC at the bound with nothing idle waits,
// in arrival order, until a PDC goes idle. A closed qp keeps its row (flows.csv, summary
// totals); the pair's next message opens a new one. With neither knob set (the default)
// none of this runs: one qp per pair for the whole run, as before.

// pdcState is the endpoint's PDC bookkeeping (nil unless uec.PDCParams.Ephemeral).
type pdcState struct {
	kIdle sim.Kind
	// open lists the qp ids open at each source host; pending the requests waiting there.
	open    [][]int32
	pending [][]pdcRequest
	// Counters for the summary (Detail): PDCs opened and closed, the most open at one NIC,
	// the requests that waited and their total wait.
	opened, closed, waits int64
	peak                  int
	waited                sim.Time
}

// pdcRequest is a message (Send) or a traffic transfer's start (qp >= 0) waiting for a PDC.
type pdcRequest struct {
	at  sim.Time
	qp  int32 // traffic: the transfer's qp, -1 for a collective message
	key [3]int32
	msg collective.Message
}

func newPDCState(hosts int, kIdle sim.Kind) *pdcState {
	return &pdcState{kIdle: kIdle, open: make([][]int32, hosts), pending: make([][]pdcRequest, hosts)}
}

// pdcSend is Send with ephemeral PDCs: the message rides the pair's open PDC, or opens one,
// or waits. Errors: hosts out of range or equal, no route (checked before it waits).
func (e *Endpoint) pdcSend(now sim.Time, m collective.Message, key [3]int32) error {
	if err := e.checkPair(m.Src, m.Dst); err != nil {
		return err
	}
	e.running++
	p := e.pdc
	p.pending[m.Src] = append(p.pending[m.Src], pdcRequest{at: now, qp: -1, key: key, msg: m})
	if len(p.pending[m.Src]) > 1 {
		p.waits++ // behind an earlier request that is itself waiting
		return nil
	}
	if !e.pdcDrain(now, int32(m.Src)) {
		p.waits++
	}
	return nil
}

// pdcStart is a traffic transfer's start with ephemeral PDCs: its qp opens now or waits.
func (e *Endpoint) pdcStart(now sim.Time, q *qp) {
	p := e.pdc
	p.pending[q.src] = append(p.pending[q.src], pdcRequest{at: now, qp: q.id})
	if len(p.pending[q.src]) > 1 || !e.pdcDrain(now, q.src) {
		p.waits++
	}
}

// pdcDrain serves host's waiting requests in order while a PDC can be had; it reports
// whether the queue emptied.
func (e *Endpoint) pdcDrain(now sim.Time, host int32) bool {
	p := e.pdc
	for len(p.pending[host]) > 0 {
		r := p.pending[host][0]
		if r.qp < 0 {
			if i, ok := e.pairs[r.key]; ok && !e.qps[i].closed {
				e.pdcServe(now, r, e.qps[i])
				continue
			}
		}
		if !e.pdcRoom(now, host) {
			return false
		}
		var q *qp
		if r.qp >= 0 {
			q = e.qps[r.qp]
		} else {
			var err error
			if q, err = e.newQP(r.msg.Src, r.msg.Dst); err != nil {
				e.s.Stop(err) // checked at Send: cannot happen
				return false
			}
			q.start = now
			e.pairs[r.key] = q.id
			q.key = r.key
		}
		p.open[host] = append(p.open[host], q.id)
		p.opened++
		p.peak = max(p.peak, len(p.open[host]))
		e.pdcServe(now, r, q)
	}
	return true
}

// pdcServe removes host's first request and carries it on q.
func (e *Endpoint) pdcServe(now sim.Time, r pdcRequest, q *qp) {
	p := e.pdc
	h := q.src
	p.pending[h] = p.pending[h][1:]
	if len(p.pending[h]) == 0 {
		p.pending[h] = nil
	}
	p.waited += now - r.at
	q.idle = false
	if e.cfg.PDC.IdleTimeout > 0 {
		e.s.StopTimer(q.idleTimer)
	}
	if r.qp >= 0 {
		q.snd.Post(now, q.bytes)
		e.pump(now, q)
		return
	}
	e.post(now, q, r.msg)
}

// pdcRoom reports whether host may open one more PDC, closing its longest-idle one if it is
// at max_per_nic.
func (e *Endpoint) pdcRoom(now sim.Time, host int32) bool {
	p := e.pdc
	lim := e.cfg.PDC.MaxPerNIC
	if lim == 0 || len(p.open[host]) < lim {
		return true
	}
	best := -1
	for i, id := range p.open[host] {
		if q := e.qps[id]; q.idle && (best < 0 || q.idleSince < e.qps[p.open[host][best]].idleSince) {
			best = i
		}
	}
	if best < 0 {
		return false
	}
	e.pdcClose(e.qps[p.open[host][best]])
	return true
}

// pdcIdle hears that q has nothing outstanding: it may close (on demand now, or after
// idle_timeout), and the requests waiting at its NIC are tried again.
func (e *Endpoint) pdcIdle(now sim.Time, q *qp) {
	if q.closed || q.idle || q.snd.Err() != nil {
		return
	}
	q.idle, q.idleSince = true, now
	if e.cfg.PDC.IdleTimeout > 0 {
		e.s.Reset(q.idleTimer, now+e.cfg.PDC.IdleTimeout)
	}
	e.pdcDrain(now, q.src)
}

// onIdle is the idle timer: a PDC still idle closes.
func (e *Endpoint) onIdle(now sim.Time, id int32, _ uint64) {
	if q := e.qps[id]; q.idle && !q.closed {
		e.pdcClose(q)
		e.pdcDrain(now, q.src)
	}
}

// pdcClose closes q: it leaves its NIC's open list and the pair's mapping; its qp stays for
// the outputs and for any late packet of the pair's old PSN space.
func (e *Endpoint) pdcClose(q *qp) {
	p := e.pdc
	q.closed = true
	if e.cfg.PDC.IdleTimeout > 0 {
		e.s.StopTimer(q.idleTimer)
	}
	open := p.open[q.src]
	for i, id := range open {
		if id == q.id {
			p.open[q.src] = append(open[:i], open[i+1:]...)
			break
		}
	}
	if q.transfer < 0 {
		if i, ok := e.pairs[q.key]; ok && i == q.id {
			delete(e.pairs, q.key)
		}
	}
	p.closed++
}
