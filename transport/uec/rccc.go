package uec

import (
	"math"

	"github.com/lockstepsim/lockstep/sim"
)

// CreditStats counts a credit scheduler's work.
type CreditStats struct {
	Grants       int64 // credit packets sent by the pacer
	GrantedBytes int64 // wire bytes of credit they granted
	Resent       int64 // credit packets sent again in answer to a credit request
	Requests     int64 // credit requests received
}

// creditQP is one source connection's credit account at its destination.
type creditQP struct {
	req     int64 // cumulative wire bytes the source needs credit for (best estimate)
	granted int64 // cumulative wire bytes granted
	queued  bool  // in the round-robin ring
}

// CreditScheduler is RCCC's destination side [UEC §3.6 RCCC]: one per receiving host, it
// learns each source connection's cumulative credit request (from its data packets and credit
// requests, and from trimmed headers, whose retransmission the source will need credit for)
// and grants credit round-robin over the connections still wanting it, one grant of at most
// quantum wire bytes at a time, paced so the grants sum to rate: the sum of its active
// sources' credit is near its link rate and every active source gets an equal share. It is
// sans-IO: the caller sends each grant as a credit packet and calls Grant again at NextAt.
//
// Invariants: granted <= req for every connection; a connection is in the ring iff it is
// queued and wants credit (granted < req).
type CreditScheduler struct {
	rate    sim.Rate
	quantum int64
	qps     map[int32]*creditQP
	ring    []int32
	head    int
	nextAt  sim.Time
	// Stats counts the scheduler's work; the caller may read it.
	Stats CreditStats
}

// NewCreditScheduler returns a destination's scheduler pacing credit at rate (bits/s, > 0) in
// grants of at most quantum wire bytes (> 0).
func NewCreditScheduler(rate sim.Rate, quantum int64) *CreditScheduler {
	return &CreditScheduler{rate: max(rate, 1), quantum: max(quantum, 1), qps: map[int32]*creditQP{}}
}

func (c *CreditScheduler) qp(id int32) *creditQP {
	q := c.qps[id]
	if q == nil {
		q = &creditQP{}
		c.qps[id] = q
	}
	return q
}

// Learn raises connection id's cumulative request to req (a smaller value is stale and
// ignored) and adds extra wire bytes to it (a trimmed packet the source will send again).
// It reports whether the connection now wants credit.
func (c *CreditScheduler) Learn(id int32, req, extra int64) bool {
	q := c.qp(id)
	q.req = max(q.req, req)
	if extra > 0 && q.req <= math.MaxInt64-extra {
		q.req += extra
	}
	if q.granted < q.req && !q.queued {
		q.queued = true
		c.ring = append(c.ring, id)
	}
	return q.granted < q.req
}

// UnwrapReq restores a data header's request, carried modulo 2^39, against prev, the last
// full request known for the connection: the value congruent to wire nearest above prev -
// 2^38 (requests only grow, and a connection never moves 256 GiB between two data packets).
func UnwrapReq(prev, wire int64) int64 {
	const span = maxReq + 1
	v := prev&^maxReq | wire&maxReq
	if v < prev-span/2 {
		v += span
	} else if v > prev+span/2 && v >= span {
		v -= span
	}
	return v
}

// Known returns connection id's cumulative request as the scheduler knows it.
func (c *CreditScheduler) Known(id int32) int64 {
	if q := c.qps[id]; q != nil {
		return q.req
	}
	return 0
}

// Request takes a credit request of connection id: it learns req and returns the credit
// granted so far, which the caller sends back (a lost credit packet is made good: grants are
// cumulative).
func (c *CreditScheduler) Request(id int32, req int64) int64 {
	c.Stats.Requests++
	c.Learn(id, req, 0)
	c.Stats.Resent++
	return c.qp(id).granted
}

// Granted returns the cumulative credit granted to connection id.
func (c *CreditScheduler) Granted(id int32) int64 {
	if q := c.qps[id]; q != nil {
		return q.granted
	}
	return 0
}

// Active reports whether some connection wants credit.
func (c *CreditScheduler) Active() bool { return c.head < len(c.ring) }

// NextAt returns when the next grant may go (the pacer's clock); meaningful when Active.
func (c *CreditScheduler) NextAt() sim.Time { return c.nextAt }

// Grant makes one grant at now (>= NextAt): the connection at the head of the ring gets
// min(quantum, what it still wants) and goes to the back if it wants more; the pacer then
// waits that grant's transmission time at rate. It returns the connection and its new
// cumulative credit, false when no connection wants credit.
func (c *CreditScheduler) Grant(now sim.Time) (id int32, cum int64, ok bool) {
	for c.head < len(c.ring) {
		id = c.ring[c.head]
		c.head++
		q := c.qps[id]
		q.queued = false
		want := q.req - q.granted
		if want <= 0 {
			continue
		}
		g := min(want, c.quantum)
		q.granted += g
		c.Stats.Grants++
		c.Stats.GrantedBytes += g
		if q.granted < q.req {
			q.queued = true
			c.ring = append(c.ring, id)
		}
		c.nextAt = max(now, c.nextAt) + c.rate.TxTime(g)
		if c.head >= 1024 && c.head*2 >= len(c.ring) {
			c.ring = append(c.ring[:0], c.ring[c.head:]...)
			c.head = 0
		}
		return id, q.granted, true
	}
	c.ring, c.head = c.ring[:0], 0
	return 0, 0, false
}
