package collective

import (
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// idealHarness records deliveries of a bare Ideal network (no executor).
type idealHarness struct {
	s   *sim.Sim
	net *Ideal
	got map[uint64]sim.Time
}

func newIdealHarness(t *testing.T, hosts int) *idealHarness {
	t.Helper()
	s := sim.New(3)
	net, err := NewIdeal(s, IdealConfig{Hosts: hosts, Rate: 400 * sim.Gbps, Latency: 5 * sim.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	h := &idealHarness{s: s, net: net, got: map[uint64]sim.Time{}}
	net.SetSink(func(now sim.Time, tok uint64) {
		if _, dup := h.got[tok]; dup {
			t.Errorf("token %d delivered twice", tok)
		}
		h.got[tok] = now
	})
	return h
}

// TestIdealModel replays the documented model on worked examples: 1 MiB at 400 Gb/s takes
// 20.97152 us to serialise; a = 5 us.
func TestIdealModel(t *testing.T) {
	const MiB = 1 << 20
	ser := (400 * sim.Gbps).TxTime(MiB) // 20.97152us
	a := 5 * sim.Microsecond
	type send struct {
		at       sim.Time
		src, dst int
		bytes    int64
	}
	cases := []struct {
		name  string
		sends []send
		want  []sim.Time // delivery time per send, by index
	}{
		{"one message: a + b/B", []send{{0, 0, 1, MiB}}, []sim.Time{a + ser}},
		{"zero bytes: a", []send{{0, 0, 1, 0}}, []sim.Time{a}},
		{"one sender, three receivers: tx FIFO", []send{{0, 0, 1, MiB}, {0, 0, 2, MiB}, {0, 0, 3, MiB}},
			[]sim.Time{a + ser, a + 2*ser, a + 3*ser}},
		{"incast of three: rx FIFO", []send{{0, 1, 0, MiB}, {0, 2, 0, MiB}, {0, 3, 0, MiB}},
			nil}, // order among simultaneous arrivals is seeded: checked as a set below
		{"late second message waits for nothing", []send{{0, 0, 1, MiB}, {ser + sim.Microsecond, 0, 1, MiB}},
			[]sim.Time{a + ser, 2*ser + sim.Microsecond + a}},
		{"cut-through: small after large from another host", []send{{0, 1, 0, 4 * MiB}, {sim.Microsecond, 2, 0, 1024}},
			[]sim.Time{a + 4*ser, a + 4*ser + (400 * sim.Gbps).TxTime(1024)}},
		{"exchange: full duplex", []send{{0, 0, 1, MiB}, {0, 1, 0, MiB}}, []sim.Time{a + ser, a + ser}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newIdealHarness(t, 4)
			// One event per distinct time posts that time's sends in index order (simultaneous
			// events run in a seeded order, not insertion order).
			post := h.s.Register("post", func(now sim.Time, _ int32, _ uint64) {
				for i, sd := range tc.sends {
					if sd.at == now {
						if err := h.net.Send(now, Message{Src: sd.src, Dst: sd.dst, Bytes: sd.bytes, Token: uint64(i)}); err != nil {
							t.Fatal(err)
						}
					}
				}
			})
			for i, sd := range tc.sends {
				if i == 0 || sd.at != tc.sends[i-1].at {
					h.s.At(sd.at, post, 0, 0)
				}
			}
			if err := h.s.Drain(sim.MaxTime); err != nil {
				t.Fatal(err)
			}
			if len(h.got) != len(tc.sends) {
				t.Fatalf("%d of %d delivered", len(h.got), len(tc.sends))
			}
			if tc.want == nil {
				seen := map[sim.Time]bool{}
				for _, at := range h.got {
					seen[at] = true
				}
				for k := 1; k <= 3; k++ {
					if !seen[a+sim.Time(k)*ser] {
						t.Errorf("incast deliveries %v; want a + k*b/B for k = 1, 2, 3", h.got)
					}
				}
				return
			}
			for i, w := range tc.want {
				if g := h.got[uint64(i)]; g != w {
					t.Errorf("message %d delivered at %v, want %v", i, g, w)
				}
			}
		})
	}
}

// TestIdealErrors: bad configurations and messages are errors.
func TestIdealErrors(t *testing.T) {
	s := sim.New(1)
	for _, c := range []IdealConfig{{Hosts: 0, Rate: sim.Gbps}, {Hosts: 2, Rate: 0}, {Hosts: 2, Rate: sim.Gbps, Latency: -1}} {
		if _, err := NewIdeal(s, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	net, _ := NewIdeal(s, IdealConfig{Hosts: 2, Rate: sim.Gbps})
	if err := net.Send(0, Message{Src: 0, Dst: 1}); err == nil {
		t.Errorf("send without a sink accepted")
	}
	net.SetSink(func(sim.Time, uint64) {})
	for _, m := range []Message{{Src: 0, Dst: 2}, {Src: -1, Dst: 0}, {Src: 1, Dst: 1}, {Src: 0, Dst: 1, Bytes: -1}} {
		if err := net.Send(0, m); err == nil {
			t.Errorf("%+v accepted", m)
		}
	}
}
