package traffic

import (
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// star builds hosts h0..h(n-1) around one switch s0 at rate with delay per link; switch port i
// faces host i, and ECMP routes each host to its port.
func star(t *testing.T, n int, rate sim.Rate, delay sim.Time) (*sim.Sim, *fabric.Network) {
	t.Helper()
	return starOn(t, sim.New(1), n, rate, delay)
}

// starOn is star on the kernel s.
func starOn(t *testing.T, s *sim.Sim, n int, rate sim.Rate, delay sim.Time) (*sim.Sim, *fabric.Network) {
	t.Helper()
	net := fabric.New(s)
	for i := 0; i < n; i++ {
		if _, err := net.AddNode("h"+string(rune('0'+i)), fabric.Host, -1, -1); err != nil {
			t.Fatal(err)
		}
	}
	sw, err := net.AddNode("s0", fabric.Switch, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		a := fabric.PortEnd{Node: fabric.NodeID(i), Local: 0, Name: "h.p0"}
		b := fabric.PortEnd{Node: sw, Local: i, Name: "s0.down"}
		if _, _, err := net.Connect(a, b, rate, delay); err != nil {
			t.Fatal(err)
		}
		net.Nodes[sw].Routes.Entries = append(net.Nodes[sw].Routes.Entries,
			fabric.RouteEntry{HostLo: int32(i), HostHi: int32(i + 1), Ports: []uint16{uint16(i)}})
	}
	return s, net
}

func TestNewRawRejectsBadFlows(t *testing.T) {
	_, net := star(t, 3, 100*sim.Gbps, 0)
	good := Flow{Src: 0, Dst: 1, Rate: sim.Gbps, PacketSize: 4160, Stop: sim.Microsecond}
	for _, c := range []struct {
		name string
		edit func(*Flow)
		want string
	}{
		{"src", func(f *Flow) { f.Src = 9 }, "src 9"},
		{"dst", func(f *Flow) { f.Dst = -1 }, "dst -1"},
		{"same", func(f *Flow) { f.Dst = 0 }, "both host 0"},
		{"plane", func(f *Flow) { f.Plane = 1 }, "plane 1"},
		{"rate", func(f *Flow) { f.Rate = 0 }, "rate"},
		{"size", func(f *Flow) { f.PacketSize = 10 }, "packet size"},
		{"stop", func(f *Flow) { f.Start = 2 * sim.Microsecond }, "stop"},
		{"routes", func(f *Flow) { f.Mode = Spray }, "needs at least one route"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := good
			c.edit(&f)
			_, err := NewRaw(net, []Flow{good, f})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "flow 1:") {
				t.Fatalf("err = %v; want flow 1 and %q", err, c.want)
			}
		})
	}
}

// Packet k leaves at Start + TxTime(k x size) at the flow rate: the count over an interval is
// ceil(rate x T / size bits), and at line rate the sender never builds a queue.
func TestPacingIsExact(t *testing.T) {
	for _, c := range []struct {
		name  string
		rate  sim.Rate
		start sim.Time
		stop  sim.Time
	}{
		{"line rate", 100 * sim.Gbps, 0, 100 * sim.Microsecond},
		{"third", 100 * sim.Gbps / 3, 5 * sim.Microsecond, 105 * sim.Microsecond},
		{"slow", sim.Gbps, 0, 100 * sim.Microsecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, net := star(t, 2, 100*sim.Gbps, 100*sim.Nanosecond)
			f := Flow{Src: 0, Dst: 1, Rate: c.rate, PacketSize: 4160, Start: c.start, Stop: c.stop}
			r, err := NewRaw(net, []Flow{f})
			if err != nil {
				t.Fatal(err)
			}
			r.Start()
			if err := s.Run(sim.Second); err != nil {
				t.Fatal(err)
			}
			gap := c.rate.TxTime(4160)
			want := int64((c.stop - c.start + gap - 1) / gap) // exact when TxTime(k x size) = k x gap
			st := r.Stats[0]
			if st.SentPackets < want-1 || st.SentPackets > want+1 {
				t.Errorf("sent %d packets, want about %d", st.SentPackets, want)
			}
			if st.RecvPackets != st.SentPackets || st.RecvBytes != st.SentBytes {
				t.Errorf("received %d of %d packets", st.RecvPackets, st.SentPackets)
			}
			if err := net.Audit(); err != nil {
				t.Fatal(err)
			}
			// A paced flow never waits at its NIC: below line rate the queue stays empty; at
			// line rate packet k+1 may be queued in the same picosecond packet k finishes
			// (same-time events run in seeded order), waiting zero time.
			nic, _ := net.Ports[net.Nodes[0].Ports[0]].Stats()
			maxOK := int64(0)
			if c.rate == 100*sim.Gbps {
				maxOK = 4160
			}
			if nic[0].MaxDepth > maxOK || nic[0].MeanDepth(s.Now()) != 0 {
				t.Errorf("NIC queue max %d B, mean %v B; want max <= %d and mean 0", nic[0].MaxDepth, nic[0].MeanDepth(s.Now()), maxOK)
			}
			if r.Latency.TotalCount() != st.RecvPackets {
				t.Errorf("latency histogram has %d samples for %d packets", r.Latency.TotalCount(), st.RecvPackets)
			}
		})
	}
}

// Spray mode rotates routes packet by packet and stamps the route index as the entropy; a route
// to a port that does not exist is a counted no-route drop, not a crash.
func TestSprayRotatesRoutes(t *testing.T) {
	s, net := star(t, 3, 100*sim.Gbps, 0)
	routes := []fabric.Route{{Hops: [fabric.MaxHops]uint16{1}, Len: 1}, {Hops: [fabric.MaxHops]uint16{7}, Len: 1}}
	f := Flow{Src: 0, Dst: 1, Rate: 10 * sim.Gbps, PacketSize: 1000, Stop: 10 * sim.Microsecond, Mode: Spray, Routes: routes, Flags: fabric.ECT}
	r, err := NewRaw(net, []Flow{f})
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	if err := s.Run(sim.Second); err != nil {
		t.Fatal(err)
	}
	st := r.Stats[0]
	if st.SentPackets < 2 || st.RecvPackets != (st.SentPackets+1)/2 {
		t.Errorf("sent %d, received %d; want every other packet (route 1 is a dead end)", st.SentPackets, st.RecvPackets)
	}
	if got := net.C.Dropped[fabric.DropNoRoute]; got != st.SentPackets/2 {
		t.Errorf("no_route drops %d, want %d", got, st.SentPackets/2)
	}
	if err := net.Audit(); err != nil {
		t.Fatal(err)
	}
}

// Poisson departures: the count over the interval is rate x T / size bits within 4 standard
// deviations (sqrt of the mean), the same kernel seed sends the same packets and another seed
// others, and an unknown process is refused.
func TestPoissonDepartures(t *testing.T) {
	run := func(seed uint64) FlowStats {
		s, net := starOn(t, sim.New(seed), 2, 100*sim.Gbps, 0)
		r, err := NewRaw(net, []Flow{{Src: 0, Dst: 1, Rate: 40 * sim.Gbps, PacketSize: 1000, Stop: 200 * sim.Microsecond, Arrivals: Poisson}})
		if err != nil {
			t.Fatal(err)
		}
		r.Start()
		if err := s.Run(sim.Second); err != nil {
			t.Fatal(err)
		}
		return r.Stats[0]
	}
	a, b, c := run(1), run(1), run(2)
	want := 40e9 * 200e-6 / 8000 // 1000 packets
	if d := float64(a.SentPackets) - want; d*d > 16*want {
		t.Errorf("sent %d packets, want %.0f +- %.0f", a.SentPackets, want, 4*math.Sqrt(want))
	}
	if a != b {
		t.Errorf("same seed, different runs: %+v, %+v", a, b)
	}
	if a.HostWaitSum == c.HostWaitSum && a.SentPackets == c.SentPackets {
		t.Errorf("seeds 1 and 2 sent the same packets: %+v", a)
	}
	if a.HostWaitSum <= 0 {
		t.Errorf("Poisson departures at 0.4 of the line never waited: %+v", a)
	}
	_, net := star(t, 2, 100*sim.Gbps, 0)
	if _, err := NewRaw(net, []Flow{{Src: 0, Dst: 1, Rate: sim.Gbps, PacketSize: 1000, Stop: 1, Arrivals: 7}}); err == nil || !strings.Contains(err.Error(), "flow 0: arrivals arrivals(7): allowed paced, poisson") {
		t.Errorf("err = %v", err)
	}
}
