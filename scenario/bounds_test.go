package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
)

// TestBounds: huge and overflowing inputs get a clean error naming the field, the value and,
// where the limit depends on it, the engine; none overflows into a run that looks valid (1 EiB
// transfers used to resolve to a 1 ms run, a flow-level 1 EiB all-reduce to one "not done at
// 0s"), panics or allocates without bound.
func TestBounds(t *testing.T) {
	clos := "topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 16, host_link: 100Gbps}}\n"
	slow := "topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 16, host_link: 1bps}}\n"
	mrc := clos + "transport: {kind: mrc}\n"
	perm := func(bytes string) string { return mrc + "traffic: [{pattern: permutation, bytes: " + bytes + "}]\n" }
	coll := func(engine, extra string) string {
		return mrc + "run: {engine: " + engine + "}\nworkload: {collectives: [{op: all_reduce, ranks: 16, " + extra + "}]}\n"
	}
	var flows strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&flows, "{src: %d, dst: %d}, ", i%16, (i+1)%16)
	}
	flows3k := strings.Repeat("{src: 1, dst: 2}, ", 3000)
	for _, c := range []struct {
		name string
		y    string
		want []string // substrings of the error
	}{
		{"1 EiB transfers", perm("1048576TiB"), []string{"traffic[0].bytes", "1048576TiB", "1024TiB", "run.engine packet"}},
		{"int64 max bytes", perm("9223372036854775807"), []string{"traffic[0].bytes", "9223372036854775807B", "run.engine packet"}},
		{"bytes past int64", perm("9223372036854775808"), []string{"traffic[0].bytes", "9223372036854775808", "out of range; allowed up to 1024TiB"}},
		{"1 EiB explicit flow", mrc + "traffic: [{pattern: flows, flows: [{src: 0, dst: 1, bytes: 1048576TiB}]}]\n", []string{"traffic[0].flows[0].bytes", "1048576TiB", "run.engine packet"}},
		{"transfers past the longest run", perm("100TiB"), []string{"traffic", "need at least", "beyond 3600s", "run.engine packet"}},
		{"1 bps host links", slow + "transport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 4KiB}]\n", []string{"traffic", "32768s", "1bps", "run.engine packet"}},
		{"flow-level 1 EiB all-reduce", coll("flow", "bytes: 1048576TiB"), []string{"workload.collectives[0].bytes", "1048576TiB", "run.engine flow"}},
		{"packet-level 1 EiB all-reduce", coll("packet", "bytes: 1048576TiB"), []string{"workload.collectives[0].bytes", "1048576TiB", "run.engine packet"}},
		{"flow-level 1 EiB sweep", coll("flow", "bytes: 1MiB, max_bytes: 1048576TiB"), []string{"workload.collectives[0].max_bytes", "1048576TiB", "run.engine flow"}},
		{"flow-level all-reduce past the longest run", coll("flow", "bytes: 100TiB"), []string{"workload.collectives", "take at least 16492", "beyond 3600s", "run.engine flow"}},
		{"flow-level 1000 iterations of 1 PiB", coll("flow", "bytes: 1024TiB, iterations: 1000"), []string{"workload.collectives", "beyond 3600s", "run.engine flow"}},
		{"packet-level all-reduce past the longest run", coll("packet", "bytes: 100TiB, chunk: 1GiB"), []string{"workload.collectives", "run.max_packets"}},
		{"a billion iterations", coll("flow", "bytes: 1MiB, iterations: 1000000000"), []string{"workload.collectives[0].iterations", "1000000000", "1..1000"}},
		{"run.duration never", perm("4KiB") + "run: {duration: never}\n", []string{"run.duration", "never", "run.engine packet", "3600s"}},
		{"flow-level run.duration 2h", mrc + "run: {engine: flow, duration: 2h}\nworkload: {collectives: [{op: all_reduce, ranks: 16, bytes: 1MiB}]}\n", []string{"run.duration", "7200s", "run.engine flow"}},
		{"start near MaxTime", mrc + "traffic: [{pattern: permutation, bytes: 4KiB, start: 2562047h}]\n", []string{"traffic", "start"}},
		{"rate 1e30", clos + "transport: {kind: raw}\ntraffic: [{pattern: permutation, rate: 1e30bps}]\n", []string{"traffic[0].rate", "1e30bps", "out of range; the largest rate is about 9.2e18 bit/s"}},
		{"host link 1e21 bps", "topology: {clos: {tiers: 2, planes: 1, radix: 16, host_link: 1000000000Tbps}}\ntransport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 4KiB}]\n", []string{"topology.clos.host_link", "1000000000Tbps", "out of range; the largest rate is about 9.2e18 bit/s"}},
		{"a million-port radix", "topology: {clos: {tiers: 3, planes: 8, radix: 1000000, host_link: 100G}}\ntransport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 4KiB}]\n", []string{"topology.clos.radix", "1000000", "4096"}},
		{"10ns samples over an hour", perm("4KiB") + "run: {sample_interval: 10ns, duration: 1h}\n", []string{"run.sample_interval", "10ns", "250000000"}},
		{"a billion flaps", perm("4KiB") + "faults: [{at: 1us, link: h0.p0, action: flap, period: 1ns, down_for: 1ns, count: 1000000000}]\n", []string{"faults[0].count", "1000000000", "1000000"}},
		{"a random failure every picosecond", perm("4KiB") + "faults: [{at: 1us, link: h0.p0, action: down, random: {mtbf: 1ps}}]\n", []string{"faults[0]", "1000000 events"}},
		{"MoE matrix past int64", mrc + "workload: {collectives: [{op: all_to_all, ranks: 16, moe: {tokens: 1000000000000000, top_k: 8, hidden: 1000000000}}]}\n", []string{"workload.collectives[0]", "overflows"}},
		{"a trillion training steps", mrc + "workload: {training: {model: {preset: llama3-8b}, gpu: {preset: h100}, plan: {tp: 8}, steps: 1000000000000}}\n", []string{"workload.training.steps", "1000000000000"}},
		{"1-byte chunks", mrc + "workload: {collectives: [{op: all_reduce, ranks: 16, bytes: 1MiB, chunk: 1B}]}\n", []string{"workload.collectives[0]", "schedule operations", "20000000"}},
		// A value its type cannot hold names the field's own limit, not the type's.
		{"a million-hour run", perm("4KiB") + "run: {duration: 1000000h}\n", []string{"run.duration", `"1000000h" is out of range; allowed up to 3600s, the longest run`}},
		{"a 1e400 s run", perm("4KiB") + "run: {duration: 1e400s}\n", []string{"run.duration", `"1e400s" is out of range; allowed up to 3600s`}},
		{"a million-hour hop", "topology: {clos: {tiers: 2, planes: 1, radix: 16, host_link: 100G, hop_latency: 1000000h}}\ntransport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 4KiB}]\n", []string{"topology.clos.hop_latency", `"1000000h" is out of range; allowed up to 1ms`}},
		{"a run below 1 ps", perm("4KiB") + "run: {duration: 1e-400s}\n", []string{"run.duration", "below the 1 ps resolution"}},
		{"a run of 0.0001 ps", perm("4KiB") + "run: {duration: 0.0001ps}\n", []string{"run.duration", `"0.0001ps" is below the 1 ps resolution`}},
		{"host_link 0G", "topology: {clos: {tiers: 2, planes: 1, radix: 16, host_link: 0G}}\ntransport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 4KiB}]\n", []string{"topology.clos.host_link", `"0G": must be > 0`}},
		{"100000 PiB", perm("100000PiB"), []string{"traffic[0].bytes", `"100000PiB" is out of range; allowed up to 1024TiB`}},
		{"2 PiB", perm("2PiB"), []string{"traffic[0].bytes", "2048TiB is beyond 1024TiB"}},
		{"torus dimension past int", "topology: {torus: {dims: 99999999999999999999x2x2}}\ntransport: {kind: mrc}\ntraffic: [{pattern: permutation, bytes: 4KiB}]\n", []string{"topology.torus.dims", "dimension 99999999999999999999 is out of range; want 2 to 1024"}},
		{"negative max_memory", perm("4KiB") + "run: {max_memory: -1B}\n", []string{"run.max_memory"}},
		// Past the budget on the flows alone: refused from the node tree, before decoding them.
		{"3,000 explicit flows past max_memory", mrc + "traffic: [{pattern: flows, bytes: 4KiB, flows: [" + flows3k + "]}]\nrun: {max_memory: 100MiB}\n",
			[]string{"traffic (line 3): 3000 explicit flows need at least 138 MB of memory (3000 flows x 46 KB under transport mrc), beyond run.max_memory (100MiB)"}},
		{"3,000 raw flows within max_memory", clos + "transport: {kind: raw}\ntraffic: [{pattern: flows, load: 0.5, flows: [" + flows3k + "]}]\nrun: {max_memory: 100MiB}\n", nil},
		{"2,000 explicit flows past max_memory", mrc + "traffic: [{pattern: flows, bytes: 4KiB, flows: [" + flows.String() + "]}]\nrun: {max_memory: 100MiB}\n",
			[]string{"run: the packet-level run is estimated at", "2000 flows x 46 KB", "beyond run.max_memory (100MiB)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.y))
			if c.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestCollectiveDurationGrows: a left-out run.duration grows past its 1 s default to 4 x the
// collectives' lower bound (a flow-level 1 TiB all-reduce on 16 ranks at 100 Gb/s: 2 x 15/16
// x 2^40 B x 8 / 100 Gb/s = 164.9 s, so 659.7 s), where it used to stop at 1 s as "not done";
// a given one is kept (the run then stops naming the waiting ranks).
func TestCollectiveDurationGrows(t *testing.T) {
	base := "topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 16, host_link: 100Gbps}}\ntransport: {kind: mrc}\n" +
		"workload: {collectives: [{op: all_reduce, algorithm: ring, ranks: 16, bytes: 1TiB}]}\nrun: {engine: flow"
	sc, err := Parse([]byte(base + "}\n"))
	if err != nil {
		t.Fatal(err)
	}
	least := 2 * 15.0 / 16 * float64(1<<40) * 8 / 100e9
	if got := sc.Run.Duration.Seconds(); got < 4*least || got > 4*least*1.001 {
		t.Fatalf("run.duration %v, want 4 x %.1f s", sc.Run.Duration, least)
	}
	sc, err = Parse([]byte(base + ", duration: 1s}\n"))
	if err != nil || sc.Run.Duration != sim.Second {
		t.Fatalf("given 1s: %v, %v", err, sc)
	}
}
