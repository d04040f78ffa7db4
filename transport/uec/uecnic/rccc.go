package uecnic

import (
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport/uec"
)

// RCCC in the adapter: one uec.CreditScheduler per receiving host (created on its first
// connection), its pacer one kernel timer ("uec.credit", object = host), each grant a credit
// packet of ack_bytes (class 0, not trimmable) from the destination to the source, carrying
// the connection's cumulative credit.

// scheduler returns host's credit scheduler, creating it and its timer on first use.
func (e *Endpoint) scheduler(host int32) *uec.CreditScheduler {
	if e.sched == nil {
		e.sched = make([]*uec.CreditScheduler, e.net.NumHosts())
		e.schedTimer = make([]sim.TimerID, e.net.NumHosts())
	}
	if e.sched[host] == nil {
		rate := sim.Rate(float64(e.nicRate) * e.cfg.RCCC.RateFactor)
		e.sched[host] = uec.NewCreditScheduler(rate, e.cfg.CreditQuantum())
		e.schedTimer[host] = e.s.NewTimer(e.kCredit, host)
	}
	return e.sched[host]
}

// wakeCredit arms host's pacer for its next grant, if a connection wants credit and it is
// not armed already.
func (e *Endpoint) wakeCredit(now sim.Time, host int32) {
	c := e.sched[host]
	if _, armed := e.s.Deadline(e.schedTimer[host]); !c.Active() || armed {
		return
	}
	e.s.Reset(e.schedTimer[host], max(now, c.NextAt()))
}

// onCredit is the pacer of host: one grant, sent as a credit packet, then the timer re-armed.
func (e *Endpoint) onCredit(now sim.Time, host int32, _ uint64) {
	if e.quiet {
		return
	}
	c := e.sched[host]
	id, cum, ok := c.Grant(now)
	if !ok {
		return
	}
	e.sendCredit(now, e.qps[id], cum)
	if c.Active() {
		e.s.Reset(e.schedTimer[host], c.NextAt())
	}
}

// sendCredit sends q's source a credit packet carrying its cumulative credit cum.
func (e *Endpoint) sendCredit(now sim.Time, q *qp, cum int64) {
	h := uec.Header{Kind: uec.Credit, EV: e.creditEV(q), Req: cum}
	e.creditsSent++
	e.send(now, q, &h, q.dst, q.src, e.ctrlPlane(q.dst, h.EV))
}

// rcccData tells the destination's scheduler what a data packet of q says: its cumulative
// request, plus the packet's full wire bytes when it arrived trimmed (its source will need
// credit to send it again).
func (e *Endpoint) rcccData(now sim.Time, q *qp, h *uec.Header, p *fabric.Packet) {
	var extra int64
	if p.Flags&fabric.Trimmed != 0 {
		extra = int64(e.cfg.WireBytes(int(h.Len)))
	}
	q.rxEV, q.rxEVOK = h.EV, true
	c := e.scheduler(q.dst)
	if c.Learn(q.id, uec.UnwrapReq(c.Known(q.id), h.Req), extra) {
		e.wakeCredit(now, q.dst)
	}
}

// rcccRequest answers a credit request at q's destination: the scheduler learns it and the
// credit granted so far goes back at once.
func (e *Endpoint) rcccRequest(now sim.Time, q *qp, h *uec.Header) {
	c := e.scheduler(q.dst)
	q.rxEV, q.rxEVOK = h.EV, true
	cum := c.Request(q.id, h.Req)
	e.sendCredit(now, q, cum)
	e.wakeCredit(now, q.dst)
}

// rcccRequestOut sends q's credit request when its sender wants one.
func (e *Endpoint) rcccRequestOut(now sim.Time, q *qp) {
	if !q.snd.WantCredit() {
		return
	}
	ev, ok := q.snd.EVs().Peek()
	if !ok {
		ev = e.ctrlEV(q)
	}
	h := uec.Header{Kind: uec.CreditRequest, EV: ev, Req: q.snd.Request()}
	e.requestsSent++
	e.send(now, q, &h, q.src, q.dst, e.ctrlPlane(q.src, h.EV))
	q.snd.CreditRequested(now)
}
