package runner

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
)

// md1YAML is one raw flow from host 0 to host 1 of a one-tier Clos with Poisson packet
// departures (process %s) at load %v: host 0's NIC queue is then an M/D/1 queue; hosts 0 and 1
// share a leaf.
const md1YAML = `
name: md1
topology:
  clos: {tiers: 2, planes: 1, radix: 4, host_link: 100G}
traffic:
  - {pattern: flows, flows: [{src: 0, dst: 1}], process: %s, load: %v}
run: {seed: 1, duration: %s, sample_interval: 1ms}
`

// summary.json's new figures reproduce the M/D/1 queue end to end: queue_depth.max_mean_bytes
// is host 0's NIC (the deepest time-averaged queue), within 2% of rho^2 / (2 (1 - rho))
// packets, and host_wait_mean_us within 2% of rho / (2 mu (1 - rho)); the network latency is
// the unloaded one (nothing queues in the switch), and paced traffic at the same load has no
// host wait at all.
func TestPoissonRawMD1(t *testing.T) {
	const size = 4160 // the default packet size
	service := (100 * sim.Gbps).TxTime(size).Micros()
	for _, c := range []struct {
		rho float64
		dur string
	}{{0.5, "50ms"}, {0.8, "200ms"}} {
		t.Run(fmt.Sprint(c.rho), func(t *testing.T) {
			s := mustRun(t, fmt.Sprintf(md1YAML, "poisson", c.rho, c.dur)).Summary
			lq := s.Queue.MaxMeanBytes / size
			wq := s.HostWaitMeanUs
			wantLq := c.rho * c.rho / (2 * (1 - c.rho))
			wantWq := c.rho * service / (2 * (1 - c.rho))
			t.Logf("rho %v: max_mean_bytes %.1f at %s = %.4f packets (M/D/1 %.4f, %+.2f%%); host wait %.5f us (M/D/1 %.5f, %+.2f%%); latency %.4f us",
				c.rho, s.Queue.MaxMeanBytes, s.Queue.MaxMeanPort, lq, wantLq, 100*(lq/wantLq-1), wq, wantWq, 100*(wq/wantWq-1), s.LatencyMeanUs)
			if math.Abs(lq/wantLq-1) > 0.02 || math.Abs(wq/wantWq-1) > 0.02 {
				t.Errorf("Lq %.4f (want %.4f), Wq %.5f us (want %.5f): beyond 2%%", lq, wantLq, wq, wantWq)
			}
			if s.Queue.MaxMeanPort == "" || s.Queue.MeanBytes > s.Queue.MaxMeanBytes/100 {
				t.Errorf("deepest mean queue %q; switch egress mean %.3f B should be about 0", s.Queue.MaxMeanPort, s.Queue.MeanBytes)
			}
			if s.LatencyMeanUs < s.LatencyP50Us*0.99 || s.LatencyMeanUs > s.LatencyP50Us*1.01 {
				t.Errorf("network latency mean %.4f us, p50 %.4f: the switch should not queue", s.LatencyMeanUs, s.LatencyP50Us)
			}
		})
	}
	paced := mustRun(t, fmt.Sprintf(md1YAML, "paced", 0.8, "1ms")).Summary
	if paced.HostWaitMeanUs != 0 || paced.Queue.MaxMeanBytes != 0 || paced.Queue.MaxMeanPort != "" {
		t.Errorf("paced at 0.8: host wait %v us, deepest mean queue %v B at %q; want none", paced.HostWaitMeanUs, paced.Queue.MaxMeanBytes, paced.Queue.MaxMeanPort)
	}
}

// fct_by_size groups transfers by size decade: counts, means and nearest-rank p99 of FCT and
// slowdown, unfinished transfers counted but not timed; absent without generated arrivals.
func TestFCTBySize(t *testing.T) {
	var flows []transport.FlowRecord
	for i := 1; i <= 100; i++ { // 100 small flows: FCT i us, ideal 1 us
		flows = append(flows, transport.FlowRecord{Bytes: 5000, Start: sim.Microsecond, Done: sim.Time(i+1) * sim.Microsecond, Ideal: sim.Microsecond})
	}
	flows = append(flows,
		transport.FlowRecord{Bytes: 10_000, Done: 4 * sim.Microsecond, Ideal: 2 * sim.Microsecond}, // the edge belongs below
		transport.FlowRecord{Bytes: 50_000_000, Done: 0},                                           // unfinished, unbounded bucket
	)
	sc := &scenario.Scenario{Traffic: []scenario.Traffic{{Arrivals: &scenario.Arrivals{}}}}
	got := fctBySize(sc, flows)
	want := []FCTBucket{
		// 100 flows of 1..100 us plus one of 4 us: mean (5050 + 4) / 101, p99 the 100th of 101
		{MaxBytes: 10_000, Flows: 101, Completed: 101, FCTMeanUs: round3(5054.0 / 101), FCTP99Us: 99, SlowdownMean: round3(5052.0 / 101), SlowdownP99: 99},
		{MaxBytes: 0, Flows: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fctBySize\n got %+v\nwant %+v", got, want)
	}
	if fctBySize(&scenario.Scenario{Traffic: []scenario.Traffic{{}}}, flows) != nil {
		t.Error("fct_by_size without generated arrivals")
	}
}
