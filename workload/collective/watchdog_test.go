package collective

import (
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// lossy wraps a transport and silently drops messages from host drop, as a broken link would.
type lossy struct {
	Transport
	drop int
}

func (l *lossy) Send(now sim.Time, m Message) error {
	if m.Src == l.drop {
		return nil
	}
	return l.Transport.Send(now, m)
}

// TestStuckReport: when messages from one host never arrive, the run ends with work left and
// Stuck names the waiting ranks and what they wait for, capped at max lines.
func TestStuckReport(t *testing.T) {
	s := sim.New(1)
	net, _ := NewIdeal(s, IdealConfig{Hosts: 8, Rate: 400 * sim.Gbps, Latency: sim.Microsecond})
	ex, _ := NewExecutor(s, &lossy{Transport: net, drop: 6}, ExecConfig{Hosts: 8})
	net.SetSink(ex.Delivered)
	sch, _ := Build(spec(AllReduce, Ring, 4, 4<<20))
	comm, _ := NewComm([]int{3, 5, 6, 7}) // rank 2 is host 6
	if _, err := ex.Launch(0, sch, comm, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Drain(sim.MaxTime); err != nil {
		t.Fatal(err)
	}
	if ex.Done() {
		t.Fatal("executor done although host 6 never delivered")
	}
	rep := ex.Stuck(0)
	t.Logf("\n%s", rep)
	for _, want := range []string{
		"all_reduce#0 rank 3 (host 7): waits for recv from rank 2 (host 6), chunk 0 step 0",
		"all_reduce#0 rank 2 (host 6): waits for delivery of send to rank 3",
	} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if err := ex.Incomplete(3); err == nil || !strings.Contains(err.Error(), "1 collective(s) did not complete") {
		t.Errorf("Incomplete = %v", err)
	}
	if lines := strings.Split(ex.Stuck(2), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[2], "... and ") {
		t.Errorf("Stuck(2) = %q; want 2 lines and a count of the rest", lines)
	}
	r, _ := ex.Result(0)
	if r.Done || r.Time() != sim.MaxTime {
		t.Errorf("result of a stuck collective: %+v", r)
	}
}

// TestStuckBeforeStart: a collective launched in the future is reported as not started.
func TestStuckBeforeStart(t *testing.T) {
	s, _, ex := newIdealExec(t, 4, refModel)
	sch, _ := Build(spec(AllGather, Ring, 4, 1<<20))
	comm, _ := RangeComm(0, 4, 1)
	ex.Launch(sim.Millisecond, sch, comm, "ag")
	s.Run(sim.Microsecond)
	if got := ex.Stuck(5); !strings.Contains(got, "ag: not started") {
		t.Errorf("Stuck = %q", got)
	}
	s.Drain(sim.MaxTime)
	if !ex.Done() || ex.Stuck(5) != "" || ex.Incomplete(5) != nil {
		t.Errorf("after the run: done %v, stuck %q", ex.Done(), ex.Stuck(5))
	}
}

// dupTransport delivers every message twice.
type dupTransport struct {
	s  *sim.Sim
	ex *Executor
	k  sim.Kind
}

func (d *dupTransport) Send(now sim.Time, m Message) error {
	d.s.After(sim.Microsecond, d.k, 0, m.Token)
	d.s.After(2*sim.Microsecond, d.k, 0, m.Token)
	return nil
}

// TestBadDeliveries: a repeated or unknown token stops the simulation with an error.
func TestBadDeliveries(t *testing.T) {
	s := sim.New(1)
	d := &dupTransport{s: s}
	ex, _ := NewExecutor(s, d, ExecConfig{Hosts: 2})
	d.ex = ex
	d.k = s.Register("dup", func(now sim.Time, _ int32, tok uint64) { ex.Delivered(now, tok) })
	sr := spec(SendRecv, Direct, 2, 100)
	sr.Peer = 1
	sch, err := Build(sr)
	if err != nil {
		t.Fatal(err)
	}
	comm, _ := RangeComm(0, 2, 1)
	ex.Launch(0, sch, comm, "")
	err = s.Drain(sim.MaxTime)
	if err == nil || !strings.Contains(err.Error(), "delivered twice") {
		t.Errorf("duplicate delivery: %v", err)
	}
	s2 := sim.New(1)
	ex2, _ := NewExecutor(s2, d, ExecConfig{Hosts: 2})
	ex2.Delivered(0, 12345)
	if ex2.Err() == nil || !strings.Contains(ex2.Err().Error(), "unknown token") {
		t.Errorf("unknown token: %v", ex2.Err())
	}
}
