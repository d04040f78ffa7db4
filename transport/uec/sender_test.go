package uec

import (
	"math/rand/v2"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

var testPath = Path{BaseRTT: 10 * sim.Microsecond, NICRate: 100 * sim.Gbps, MaxQueueDelay: sim.Microsecond, Hops: 3}

func newPair(t *testing.T, cfg Config) (*Sender, *Receiver) {
	t.Helper()
	s, err := NewSender(cfg, 1, testPath, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return s, NewReceiver(cfg)
}

// loop is a fake network: every data packet is delivered (or dropped by drop, or trimmed by
// trim) after d, its answer returns after d, in send order; it runs until the sender is done
// or stops making progress, calling the sender's timer at its deadline.
func loop(t *testing.T, s *Sender, r *Receiver, drop, trim func(h Header) bool) sim.Time {
	t.Helper()
	const d = 5 * sim.Microsecond
	now := sim.Time(0)
	for step := 0; step < 100000 && !s.Done() && s.Err() == nil; step++ {
		var sent []Header
		for {
			h, ok := s.Next(now)
			if !ok {
				break
			}
			h.TS = now
			sent = append(sent, h)
		}
		got := 0
		for _, h := range sent {
			if drop(h) {
				continue
			}
			r.OnData(now+d, &h, trim(h), false, false)
		}
		for _, a := range r.Out() {
			s.OnAck(now+2*d, &a)
			got++
		}
		r.ClearOut()
		r.ClearCompletions()
		s.ClearCompletions()
		if got == 0 {
			now = max(now+2*d, s.Deadline())
			s.OnTimer(now)
		} else {
			now += 2 * d
		}
	}
	return now
}

// TestSelectiveVersusGoBack: one dropped packet costs RUD one retransmission (selective
// repeat) and ROD the whole window after it (go-back-N) [UEC §3.5 RUD, ROD].
func TestSelectiveVersusGoBack(t *testing.T) {
	for _, c := range []struct {
		delivery string
		min, max int64
	}{{DeliveryRUD, 1, 1}, {DeliveryROD, 10, 1000}} {
		s, r := newPair(t, Config{Delivery: c.delivery})
		s.Post(0, 64*4096)
		dropped := false
		loop(t, s, r, func(h Header) bool {
			if h.PSN == 5 && !dropped {
				dropped = true
				return true
			}
			return false
		}, func(Header) bool { return false })
		var retx int64
		for _, n := range s.Stats.Retx {
			retx += n
		}
		if !s.Done() || r.Stats.PlacedBytes != 64*4096 || retx < c.min || retx > c.max {
			t.Errorf("%s: done %v, placed %d, retransmitted %d (%v); want done, all placed, %d..%d", c.delivery, s.Done(), r.Stats.PlacedBytes, retx, s.Stats.Retx, c.min, c.max)
		}
	}
}

// TestTrimNACK: a trimmed packet is NACKed and sent again at once, no timeout [UEC §4.1].
func TestTrimNACK(t *testing.T) {
	s, r := newPair(t, Config{})
	s.Post(0, 16*4096)
	trimmed := map[uint64]bool{}
	loop(t, s, r, func(Header) bool { return false }, func(h Header) bool {
		if h.PSN%4 == 0 && !trimmed[h.PSN] {
			trimmed[h.PSN] = true
			return true
		}
		return false
	})
	if !s.Done() || s.Stats.Timeouts != 0 || s.Stats.Retx[RetxTrim] != 4 || r.Stats.Trimmed != 4 {
		t.Fatalf("done %v, timeouts %d, trim retx %d, trims %d; want done, 0, 4, 4", s.Done(), s.Stats.Timeouts, s.Stats.Retx[RetxTrim], r.Stats.Trimmed)
	}
}

// TestRetriesExhausted: a dead path times out MaxRetries+1 times, each twice as long as
// the last (exponential backoff), then the connection errors.
func TestRetriesExhausted(t *testing.T) {
	s, r := newPair(t, Config{MaxRetries: 3, RTO: 20 * sim.Microsecond})
	s.Post(0, 4096)
	end := loop(t, s, r, func(Header) bool { return true }, func(Header) bool { return false })
	if s.Err() == nil || s.Stats.Timeouts != 4 {
		t.Fatalf("err %v after %d timeouts; want an error after 4", s.Err(), s.Stats.Timeouts)
	}
	// 20 + 40 + 80 + 160 us of timeouts.
	if want := 300 * sim.Microsecond; end < want {
		t.Fatalf("gave up at %v, before %v of doubling timeouts", end, want)
	}
}

// TestBitmapAgainstSet: the SACK's cumulative PSN and bitmap agree with a plain set of the
// PSNs delivered, for random arrival orders.
func TestBitmapAgainstSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 50; trial++ {
		r := NewReceiver(Config{})
		got := map[uint64]bool{}
		for i := 0; i < 100; i++ {
			psn := uint64(rng.IntN(200))
			r.OnData(0, &Header{Kind: Data, PSN: psn, Len: 1, MsgStart: 0, MsgEnd: 200}, false, false, false)
			got[psn] = true
			a := r.Out()[len(r.Out())-1]
			cum := uint64(0)
			for got[cum] {
				cum++
			}
			if a.Cum != cum {
				t.Fatalf("cum %d, set says %d", a.Cum, cum)
			}
			for b := uint64(0); b < BitmapBits; b++ {
				if (a.Bitmap>>b&1 == 1) != got[cum+1+b] {
					t.Fatalf("bitmap bit %d (PSN %d) = %d, set says %v", b, cum+1+b, a.Bitmap>>b&1, got[cum+1+b])
				}
			}
		}
	}
}

// TestTimerWhenNothingCanLeave (ut20 F1): a sender whose packets can never leave after the
// first burst (its NIC port down: Next is never called again) must keep its RTO armed,
// doubling per expiry, and error after max_retries expiries; before the fix one expiry left
// no deadline and the connection hung without erroring.
func TestTimerWhenNothingCanLeave(t *testing.T) {
	for _, c := range []struct {
		name    string
		cfg     Config
		retries int
	}{
		{"rud nscc", Config{MaxRetries: 3}, 3},
		{"rod", Config{Delivery: DeliveryROD, MaxRetries: 2}, 2},
		{"rud none", Config{CC: CCNone, MaxRetries: 5}, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := newPair(t, c.cfg)
			s.Post(0, 64<<10)
			for {
				if _, ok := s.Next(0); !ok {
					break
				}
			}
			rto, _ := s.Timers()
			prev := sim.Time(0)
			for i := 0; i <= c.retries; i++ {
				d := s.Deadline()
				if d == sim.MaxTime {
					t.Fatalf("expiry %d: no deadline armed (timeouts %d), want one", i, s.Stats.Timeouts)
				}
				if i > 0 && d-prev != rto<<uint(i) {
					t.Errorf("expiry %d: deadline %v after the last, want %v (doubled)", i, d-prev, rto<<uint(i))
				}
				prev = d
				s.OnTimer(d)
			}
			if s.Err() == nil {
				t.Fatalf("no error after %d expiries (timeouts %d)", c.retries+1, s.Stats.Timeouts)
			}
			if s.Stats.Timeouts != int64(c.retries+1) {
				t.Errorf("timeouts %d, want %d", s.Stats.Timeouts, c.retries+1)
			}
		})
	}
}
