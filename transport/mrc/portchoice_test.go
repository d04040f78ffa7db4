package mrc

import (
	"math/rand/v2"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// Each plane rotates on its own [MRC §2.1]: NextOn(p) returns plane p's next EV however often
// p is asked for, a plane that has used all its EVs starts its own next lap, and each plane's
// packets still visit every path once before any path twice, here with plane 0 asked for 10
// times as often as each of the others (a NIC with three slow ports).
func TestEVNextOnPerPlaneRotation(t *testing.T) {
	const planes, pathsPer = 4, 8
	for seed := uint64(1); seed <= 5; seed++ {
		s := evNew(t, EVConfig{Active: 64}, []int{pathsPer, pathsPer, pathsPer, pathsPer}, seed)
		rng := evRand(seed + 7)
		seq := make([][]int, planes)
		for i := range 64 * 40 {
			p := 0
			if rng.IntN(13) >= 10 {
				p = 1 + rng.IntN(3)
			}
			ev, ok := s.NextOn(p)
			if !ok {
				t.Fatal("NextOn not ok with every EV Good")
			}
			pl, path, _ := s.Route(ev)
			if pl != p {
				t.Fatalf("seed %d packet %d: NextOn(%d) gave plane %d", seed, i, p, pl)
			}
			seq[p] = append(seq[p], path)
		}
		for p := range planes {
			for i := 0; i+pathsPer <= len(seq[p]); i++ {
				seen := map[int]bool{}
				for _, x := range seq[p][i : i+pathsPer] {
					seen[x] = true
				}
				if len(seen) != pathsPer {
					t.Fatalf("seed %d plane %d: packets %d..%d took paths %v; want all %d distinct",
						seed, p, i, i+pathsPer-1, seq[p][i:i+pathsPer], pathsPer)
				}
			}
		}
		// Plane 0 ran about 10 laps per lap of the others: the rotation count follows it.
		if r := s.Stats().Rounds; r < int64(len(seq[0])/16) {
			t.Errorf("seed %d: %d rotations counted after %d laps of plane 0", seed, r, len(seq[0])/16)
		}
		evAudit(t, s)
	}
}

// NextOn with state changes in between (Skip, retirements without backups, denials, probe
// recoveries): the table stays consistent, NextOn keeps to the plane asked for whenever that
// plane has a usable EV other than the last one returned, and no EV is returned twice in a
// row while two or more are active.
func TestEVNextOnUnderChanges(t *testing.T) {
	for seed := uint64(0); seed < 30; seed++ {
		s := evNew(t, EVConfig{Active: 12, Backup: 3, MinActive: 2, ProbeInterval: 5 * sim.Microsecond, ProbeSuccesses: 1}, []int{5, 3, 9}, seed)
		ops := rand.New(rand.NewPCG(seed, 17))
		now := sim.Time(0)
		last := -1
		for step := range 4000 {
			switch r := ops.IntN(100); {
			case r < 60:
				p := ops.IntN(3)
				before := s.PlaneUsable(p)
				ev, ok := s.NextOn(p)
				_, _, _, _, active := s.Counts()
				if ok != (active > 0) {
					t.Fatalf("seed %d step %d: NextOn ok=%v with %d active", seed, step, ok, active)
				}
				if !ok {
					break
				}
				pl, _, _ := s.Route(ev)
				single := before == 1 && evActiveIn(s, p)[0] == last
				if before > 0 && !single && pl != p {
					t.Fatalf("seed %d step %d: NextOn(%d) gave plane %d with %d usable there", seed, step, p, pl, before)
				}
				if e := evEntryOf(t, s, ev); !e.Active || e.State != Good {
					t.Fatalf("seed %d step %d: NextOn gave EV %d, %+v", seed, step, ev, e)
				}
				if ev == last && active > 1 {
					t.Fatalf("seed %d step %d: EV %d twice in a row", seed, step, ev)
				}
				last = ev
			case r < 70:
				s.OnCE(ops.IntN(s.Len()))
			case r < 78:
				s.OnLoss(ops.IntN(s.Len()))
			case r < 90:
				now += sim.Time(ops.IntN(4)) * sim.Microsecond
				for ev, ok := s.ProbeDue(now); ok; ev, ok = s.ProbeDue(now) {
					s.OnProbeAck(now, ev)
				}
			case r < 95:
				s.Deny(ops.IntN(s.Len()))
			default:
				s.Allow(ops.IntN(s.Len()))
			}
			if err := s.Audit(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
		}
	}
}

// NextOn allocates nothing, as Next does.
func TestEVNextOnNoAlloc(t *testing.T) {
	s := evNew(t, EVConfig{}, []int{16, 16, 16, 16}, 1)
	p := 0
	if n := testing.AllocsPerRun(10000, func() {
		s.NextOn(p % 4)
		s.NextOn(0)
		p++
	}); n != 0 {
		t.Errorf("NextOn: %v allocs per call; want 0", n)
	}
}

// Progress: a packet advances a plane by one over its active EVs, so a plane with half the EVs
// moves twice as fast; an EV set just built is at 0 on every plane.
func TestEVProgress(t *testing.T) {
	s := evNew(t, EVConfig{Active: 16, Backup: NoEVBackup, MinActive: 1}, []int{8, 8}, 3)
	for p := range 2 {
		if got := s.Progress(p); got != 0 {
			t.Fatalf("plane %d progress %v at start; want 0", p, got)
		}
	}
	for _, ev := range evActiveIn(s, 1)[:4] {
		s.OnLoss(ev) // plane 1: 4 of 8 EVs left
	}
	for range 4 {
		s.NextOn(0)
		s.NextOn(1)
	}
	if p0, p1 := s.Progress(0), s.Progress(1); p0 != 0.5 || p1 != 1 {
		t.Errorf("after 4 packets each: progress %v, %v; want 0.5 (4 of 8), 1 (4 of 4)", p0, p1)
	}
	if got := s.Progress(5); got != 0 {
		t.Errorf("plane out of range: %v", got)
	}
}

// portSim is a NIC of len(rate) ports for one sender: each port serialises its packets at its
// rate (bytes per picosecond scaled), and Backlog is what waits behind the packet on the wire,
// as the runner's Port.QueueBytes.
type portSim struct {
	rate []float64 // bytes per ns
	busy []sim.Time
	q    [][]sim.Time // per port: finish times of packets waiting or on the wire
	tx   []int64
}

func (n *portSim) backlog(now sim.Time, p int) int64 {
	// Drop what finished, then count the waiting ones (all but the one on the wire).
	q := n.q[p]
	for len(q) > 0 && q[0] <= now {
		q = q[1:]
	}
	n.q[p] = q
	if len(q) <= 1 {
		return 0
	}
	return int64(len(q)-1) * 4000
}

func (n *portSim) send(now sim.Time, p int, wire int64) {
	start := max(now, n.busy[p])
	n.busy[p] = start + sim.Time(float64(wire)/n.rate[p]*float64(sim.Nanosecond))
	n.q[p] = append(n.q[p], n.busy[p])
	n.tx[p] += wire
}

// A sender behind the NIC gate with one of 4 ports at 25%: each port gets packets in
// proportion to its rate (the slow one about 1/13 of them), not an equal share that would hold
// the QP to 4 x the slow port; with 4 equal ports, equal shares within 2%. No ACKs: the window
// is made unlimited by acknowledging everything sent (cumulatively) after each Pump.
func TestSenderSlowPortShare(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate []float64
	}{
		{"one port at 25%", []float64{12.5, 3.125, 12.5, 12.5}},
		{"healthy", []float64{12.5, 12.5, 12.5, 12.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{}.WithDefaults()
			path := Path{Planes: 4, PathsPerPlane: []int{8, 8, 8, 8}, BaseRTT: 10 * sim.Microsecond,
				NICRate: 400 * sim.Gbps, MaxQueueDelay: sim.Microsecond}
			s, err := NewSender(cfg, 0, path, rand.New(rand.NewPCG(4, 2)))
			if err != nil {
				t.Fatal(err)
			}
			s.Post(0, 64<<20)
			nic := &portSim{rate: tc.rate, busy: make([]sim.Time, 4), q: make([][]sim.Time, 4), tx: make([]int64, 4)}
			now := sim.Time(0)
			s.SetPlaneBacklog(4, func(p int) int64 { return nic.backlog(now, p) })
			s.SetNICGate(1)
			for range 20000 {
				s.Pump(now)
				for _, h := range s.Out() {
					if h.Kind == Data {
						p, _, _ := s.EVs().Route(int(h.EV))
						nic.send(now, p, int64(cfg.WireBytes(int(h.Len))))
					}
				}
				s.ClearOut()
				// Everything sent is acknowledged at once, so only the NIC limits the sender.
				ack := Header{Kind: SACK, CumPSN: s.next, EchoTS: now}
				s.absorb(now, &ack)
				// Advance to the next time a port finishes a packet.
				next := sim.MaxTime
				for p := range nic.q {
					for _, f := range nic.q[p] {
						if f > now {
							next = min(next, f)
							break
						}
					}
				}
				if next == sim.MaxTime {
					break
				}
				now = next
			}
			var total, sum float64
			for p := range tc.rate {
				total += float64(nic.tx[p])
				sum += tc.rate[p]
			}
			for p, r := range tc.rate {
				share, want := float64(nic.tx[p])/total, r/sum
				if share < 0.98*want || share > 1.02*want {
					t.Errorf("port %d (rate %v): %.4f of the bytes; want %.4f within 2%% (tx %v)", p, r, share, want, nic.tx)
				}
			}
			t.Logf("%s: tx bytes per port %v", tc.name, nic.tx)
		})
	}
}

// Lag: a plane's lag is the QP's mean progress over its planes minus the plane's own, so it
// stays 0 on one plane however many packets the QP sent (QPs opened at different times
// compare level), and on two planes the one behind has the positive lag.
func TestEVLag(t *testing.T) {
	one := evNew(t, EVConfig{Active: 8, Backup: NoEVBackup, MinActive: 1}, []int{8}, 3)
	for range 100 {
		one.NextOn(0)
	}
	if got := one.Lag(0); got != 0 {
		t.Errorf("one plane after 100 packets: lag %v; want 0", got)
	}
	s := evNew(t, EVConfig{Active: 16, Backup: NoEVBackup, MinActive: 1}, []int{8, 8}, 3)
	for range 6 {
		s.NextOn(0)
	}
	for range 2 {
		s.NextOn(1)
	}
	// Progress 0.75 and 0.25 laps: mean 0.5.
	if l0, l1 := s.Lag(0), s.Lag(1); l0 != -0.25 || l1 != 0.25 {
		t.Errorf("after 6 and 2 packets: lag %v, %v; want -0.25, 0.25", l0, l1)
	}
	if got := s.Lag(5); got != 0 {
		t.Errorf("plane out of range: %v", got)
	}
}
