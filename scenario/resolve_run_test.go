package scenario

import (
	"fmt"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// A left-out run.sample_interval gives at least samplesPerRun samples over the expected run
// (the collectives' closed form, the transfers' line-rate bound, raw traffic's duration), a 1-2-5
// value never above the default, within the queue sample cap over run.duration; a given one is
// kept; and the resolved scenario resolves again to the same interval (scenario.yaml reruns).
func TestSampleIntervalFromExpectedRun(t *testing.T) {
	const clos = "topology: {clos: {tiers: 2, planes: %d, radix: 16, hosts: %d, host_link: 100Gbps, hop_latency: 500ns}}\n"
	for _, c := range []struct {
		name     string
		planes   int
		hosts    int
		body     string
		expected sim.Time // 0: take r.collectivesExpected
		want     sim.Time // exact interval when > 0
	}{
		{"raw-1ms-default", 1, 16, "traffic: [{pattern: permutation, load: 0.5}]\n", sim.Millisecond, sim.Microsecond},
		{"raw-20us", 1, 16, "traffic: [{pattern: permutation, load: 0.5}]\nrun: {duration: 20us}\n", 20 * sim.Microsecond, 20 * sim.Nanosecond},
		{"raw-given", 1, 16, "traffic: [{pattern: permutation, load: 0.5}]\nrun: {duration: 20us, sample_interval: 2us}\n", 0, 2 * sim.Microsecond},
		{"mrc-perm-1MiB", 8, 16, "transport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 1MiB}]\n", 0, 0},
		{"roce-perm-64KiB", 1, 16, "transport: {kind: roce}\ntraffic: [{pattern: permutation, bytes: 64KiB}]\n", 0, 0},
		{"mrc-allreduce-sweep", 8, 16, "transport: {kind: mrc}\nworkload: {collectives: [{op: all_reduce, ranks: 8, bytes: 64KiB, max_bytes: 4MiB, factor: 4}]}\n", 0, 0},
		{"ideal-allgather", 4, 64, "transport: {kind: ideal}\nworkload: {collectives: [{op: all_gather, ranks: 64, bytes: 1GiB}]}\n", 0, 0},
		{"mrc-allreduce-faults", 8, 16, "transport: {kind: mrc}\nfaults: [{at: 50us, link: h1.p0, action: down}]\nworkload: {collectives: [{op: all_reduce, ranks: 8, bytes: 1MiB}]}\n", 0, 0},
		{"mrc-allreduce-given", 8, 16, "transport: {kind: mrc}\nrun: {sample_interval: 3us}\nworkload: {collectives: [{op: all_reduce, ranks: 8, bytes: 1MiB}]}\n", 0, 3 * sim.Microsecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := fmt.Sprintf(clos, c.planes, c.hosts) + c.body
			sc, err := Parse([]byte(y))
			if err != nil {
				t.Fatalf("%v\n%s", err, y)
			}
			got := sc.Run.SampleInterval
			if c.want > 0 && got != c.want {
				t.Errorf("sample_interval %v, want %v", got, c.want)
			}
			exp := c.expected
			if exp == 0 {
				r := &resolver{sc: sc}
				if err := r.topology(); err != nil {
					t.Fatal(err)
				}
				if r.wl = len(sc.Workload.Collectives) > 0; r.wl {
					exp = r.collectivesExpected()
				} else {
					exp = transferBound(sc.Traffic, sc.Transport, r.l.NumHosts(), r.c.HostLink*sim.Rate(r.c.Planes))
				}
				if exp <= 0 && c.want == 0 {
					t.Fatalf("no expected time")
				}
			}
			if c.want == 0 && len(sc.Faults) > 0 {
				// Faults keep the 1 s bound, over which the queue sample cap on the 384 switch
				// ports (16 hosts x 8 planes) sets the period.
				if cap := sim.Time(float64(sc.Run.Duration)*384/MaxQueueSamples) + 1; got != cap {
					t.Errorf("with faults: sample_interval %v, want the cap's %v", got, cap)
				}
			} else if c.want == 0 {
				n := exp / got
				if got == 10*sim.Nanosecond && n < samplesPerRun {
					n = samplesPerRun // the floor
				}
				if n < samplesPerRun || n > 3*samplesPerRun || got > max(DefaultSampleInterval, sc.Run.Duration/20000) {
					t.Errorf("sample_interval %v over an expected %v: %d samples; want %d to %d, at most %v", got, exp, n, samplesPerRun, 3*samplesPerRun, DefaultSampleInterval)
				}
				if niceFloor(got) != got {
					t.Errorf("sample_interval %v is not 1, 2 or 5 x a power of ten", got)
				}
			}
			if len(sc.Workload.Collectives) > 0 && sc.Transport.Kind != TransportIdeal {
				want := workloadBound(exp)
				if len(sc.Faults) > 0 || want == 0 {
					want = DefaultWorkloadDuration
				}
				if sc.Run.Duration != want {
					t.Errorf("run.duration %v, want %v (expected %v, %d faults)", sc.Run.Duration, want, exp, len(sc.Faults))
				}
			}
			y2, err := Encode(sc)
			if err != nil {
				t.Fatal(err)
			}
			sc2, err := Parse(y2)
			if err != nil {
				t.Fatalf("resolved scenario does not parse again: %v", err)
			}
			if sc2.Run.SampleInterval != got || sc2.Run.Duration != sc.Run.Duration {
				t.Errorf("rerun: sample_interval %v, duration %v; first %v, %v", sc2.Run.SampleInterval, sc2.Run.Duration, got, sc.Run.Duration)
			}
		})
	}
}

// niceFloor rounds down to 1, 2 or 5 x a power of ten, across magnitudes.
func TestNiceFloor(t *testing.T) {
	for _, c := range []struct{ in, want sim.Time }{
		{0, 1}, {1, 1}, {9, 5}, {10, 10}, {19, 10}, {20, 20}, {49, 20}, {50, 50}, {99, 50}, {770_000, 500_000}, {1_999_999, 1_000_000}, {2_000_000, 2_000_000},
	} {
		if got := niceFloor(c.in); got != c.want {
			t.Errorf("niceFloor(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}
