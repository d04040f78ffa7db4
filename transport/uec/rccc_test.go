package uec

import (
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestCreditSchedulerRoundRobin: grants go round-robin over the connections wanting credit,
// never beyond what each asked for, and are paced at the scheduler's rate: k grants of q
// bytes take k x q / rate.
func TestCreditSchedulerRoundRobin(t *testing.T) {
	const q = 4160
	c := NewCreditScheduler(100*sim.Gbps, q)
	c.Learn(1, 3*q, 0)
	c.Learn(2, q/2, 0)
	c.Learn(3, q, q) // a trimmed packet to resend counts on top
	var order []int32
	var total int64
	now := sim.Time(0)
	for c.Active() {
		now = max(now, c.NextAt())
		id, cum, ok := c.Grant(now)
		if !ok {
			break
		}
		if cum != c.Granted(id) {
			t.Fatalf("grant to %d: cum %d, Granted %d", id, cum, c.Granted(id))
		}
		order = append(order, id)
		total += min(cum, q) // each grant is at most q
	}
	want := []int32{1, 2, 3, 1, 3, 1}
	if len(order) != len(want) {
		t.Fatalf("grant order %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("grant order %v, want %v", order, want)
		}
	}
	if g := [3]int64{c.Granted(1), c.Granted(2), c.Granted(3)}; g != [3]int64{3 * q, q / 2, 2 * q} {
		t.Errorf("granted %v, want [%d %d %d]", g, 3*q, q/2, 2*q)
	}
	// Pacing: the grants before the last sum to 5.5 q bytes; the next may go only after
	// their transmission time at 100G.
	if want := (100 * sim.Gbps).TxTime(3*q + q/2 + 2*q); c.NextAt() < want-sim.Nanosecond || c.NextAt() > want+sim.Nanosecond {
		t.Errorf("pacer at %v after all grants, want %v", c.NextAt(), want)
	}
	// A stale (smaller) request changes nothing; a request answers with the credit so far.
	if c.Learn(1, q, 0) {
		t.Error("a stale request made connection 1 want credit")
	}
	if got := c.Request(1, 3*q); got != 3*q {
		t.Errorf("Request: %d, want the credit granted %d", got, 3*q)
	}
}

// TestSenderCredit: under RCCC a sender sends its speculative window, then stops; its data
// packets carry the cumulative request; credit lets exactly that many more bytes go; a
// last-hop trim is resent but does not cut NSCC's window; with nothing in flight and no
// credit it asks again one RTO after the last credit, then twice as late.
func TestSenderCredit(t *testing.T) {
	cfg := Config{CC: CCNSCCRCCC}
	s, _ := newPair(t, cfg)
	c := cfg.WithDefaults()
	mtu := int64(c.WireBytes(c.PayloadBytes))
	s.Post(0, 64*int64(c.PayloadBytes))
	spec := int64(0.25 * float64(testPath.NICRate.BytesIn(testPath.BaseRTT)))
	var sent []Header
	for {
		h, ok := s.Next(0)
		if !ok {
			break
		}
		sent = append(sent, h)
	}
	if want := int(spec / mtu); len(sent) != want {
		t.Fatalf("speculative: %d packets sent, want %d (%d B of %d B packets)", len(sent), want, spec, mtu)
	}
	if req := sent[0].Req; req != 64*mtu-spec {
		t.Errorf("first data packet requests %d B, want %d (the rest of the message)", req, 64*mtu-spec)
	}
	if s.WantCredit() {
		t.Error("wants a credit request though its data packets told the destination")
	}
	s.OnCredit(sim.Microsecond, 2*mtu) // cumulative: 2 packets' worth
	n := 0
	for {
		h, ok := s.Next(sim.Microsecond)
		if !ok {
			break
		}
		sent = append(sent, h)
		n++
	}
	if n != 2 {
		t.Errorf("after a credit of 2 packets: %d sent, want 2", n)
	}
	w := s.Window()
	nack := Header{Kind: NACK, PSN: sent[0].PSN, EV: sent[0].EV, Echo: 0, Reason: NackTrimmedLastHop}
	s.OnAck(2*sim.Microsecond, &nack)
	if s.Window() != w || s.NSCC().Stats.Decreases != 0 || s.Stats.LastHopTrimsIgnored != 1 {
		t.Errorf("last-hop trim under RCCC: window %d -> %d, %d decreases, %d ignored; want unchanged, 0, 1", w, s.Window(), s.NSCC().Stats.Decreases, s.Stats.LastHopTrimsIgnored)
	}
	if s.Request() != 64*mtu-spec+mtu {
		t.Errorf("request after a trim %d, want %d (the resend needs credit)", s.Request(), 64*mtu-spec+mtu)
	}
	// Acknowledge everything else in flight; no credit: the sender waits, then re-asks.
	for _, h := range sent[1:] {
		a := Header{Kind: ACK, PSN: h.PSN, EV: h.EV}
		s.OnAck(3*sim.Microsecond, &a)
	}
	if _, ok := s.Next(3 * sim.Microsecond); ok {
		t.Fatal("sent without credit")
	}
	rto, _ := s.Timers()
	if want := sim.Microsecond + rto; s.Deadline() != want {
		t.Fatalf("credit wait: deadline %v, want the last credit + RTO = %v", s.Deadline(), want)
	}
	s.OnTimer(s.Deadline())
	if !s.WantCredit() || s.Stats.Timeouts != 0 {
		t.Fatalf("after the credit wait: WantCredit %v, %d timeouts; want a request and no RTO", s.WantCredit(), s.Stats.Timeouts)
	}
	at := sim.Microsecond + rto
	s.CreditRequested(at)
	if want := at + 2*rto; s.Deadline() != want {
		t.Errorf("second credit wait: deadline %v, want %v (doubled)", s.Deadline(), want)
	}
	s.OnCredit(at+sim.Microsecond, 3*mtu)
	if h, ok := s.Next(at + sim.Microsecond); !ok || h.PSN != sent[0].PSN {
		t.Errorf("after credit: %+v, %v; want the trimmed PSN %d resent", h, ok, sent[0].PSN)
	}
}

// TestAckCoalescing: with ack_every 4 the receiver answers every 4th new packet with one
// cumulative SACK echoing the last (CE if any of the four had it), a duplicate at once
// (carrying what was pending), and a pending SACK when its delay is up.
func TestAckCoalescing(t *testing.T) {
	r := NewReceiver(Config{AckEvery: 4})
	r.SetAckDelay(sim.Microsecond)
	data := func(psn uint64) *Header {
		return &Header{Kind: Data, PSN: psn, Len: 100, MsgStart: 0, MsgEnd: 100, TS: sim.Time(psn)}
	}
	for psn := uint64(0); psn < 4; psn++ {
		r.OnData(sim.Time(psn), data(psn), false, false, psn == 1)
	}
	if out := r.Out(); len(out) != 1 || out[0].Cum != 4 || out[0].PSN != 3 || !out[0].ECE {
		t.Fatalf("after 4 packets: %+v; want one SACK, cum 4, echoing PSN 3 with CE", out)
	}
	r.ClearOut()
	r.OnData(10, data(6), false, false, false) // out of order: coalesced, the bitmap names it
	if len(r.Out()) != 0 || r.Deadline() != 10+sim.Microsecond {
		t.Fatalf("one pending packet: %d answers, deadline %v; want 0 and %v", len(r.Out()), r.Deadline(), 10+sim.Microsecond)
	}
	r.OnData(11, data(2), false, false, false) // a duplicate: answered at once
	if out := r.Out(); len(out) != 1 || out[0].Cum != 4 || out[0].Bitmap != 1<<1 || r.Deadline() != sim.MaxTime {
		t.Fatalf("duplicate: %+v, deadline %v; want one SACK, cum 4, bitmap naming PSN 6, nothing pending", out, r.Deadline())
	}
	r.ClearOut()
	r.OnData(20, data(4), false, false, false)
	r.OnTimer(20 + sim.Microsecond - 1)
	if len(r.Out()) != 0 {
		t.Fatal("SACK sent before its delay")
	}
	r.OnTimer(20 + sim.Microsecond)
	if out := r.Out(); len(out) != 1 || out[0].Cum != 5 {
		t.Fatalf("after the delay: %+v; want one SACK, cum 5", out)
	}
}

// TestUnwrapReq: a request carried modulo 2^39 comes back whole across the wrap, and a
// stale (smaller) one stays below what is known.
func TestUnwrapReq(t *testing.T) {
	const span = maxReq + 1
	for _, c := range []struct{ prev, full int64 }{
		{0, 4160}, {span - 100, span + 50}, {5*span + 7, 5*span + 9000}, {3*span + 10, 3*span - 20},
	} {
		if got := UnwrapReq(c.prev, c.full&maxReq); got != c.full {
			t.Errorf("UnwrapReq(%d, %d) = %d, want %d", c.prev, c.full&maxReq, got, c.full)
		}
	}
}
