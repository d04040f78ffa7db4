package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/workload/collective"
)

// manyCollectives returns a scenario of n 16-rank ring all-reduces (op all_to_all: a2a) of
// 1 MiB on the 128 hosts of a 4-plane Clos, collective i on hosts 16(i mod 8) .. +15, at
// run.engine engine, with run.max_memory when memory is not "".
func manyCollectives(n int, op, engine, memory string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "topology: {clos: {tiers: 2, planes: 4, radix: 16, hosts: 128, host_link: 100Gbps}}\ntransport: {kind: mrc}\n")
	fmt.Fprintf(&b, "run: {engine: %s", engine)
	if memory != "" {
		fmt.Fprintf(&b, ", max_memory: %s", memory)
	}
	b.WriteString("}\nworkload:\n  collectives:\n")
	for i := range n {
		g := 16 * (i % 8)
		fmt.Fprintf(&b, "    - {op: %s, ranks: 16, hosts: [", op)
		for k := range 16 {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d", g+k)
		}
		b.WriteString("], bytes: 1MiB}\n")
	}
	return b.String()
}

// TestCollectivesNoFixedCap: workload.collectives has no fixed bound (it was 64): 1,000
// collectives resolve at flow level and at packet level, the memory estimate counts each
// (MemPerCollective, and at flow level MemPerCollectiveFlow per flow of its largest phase),
// and a run.max_memory they do not fit in is refused naming workload.collectives, the count
// and the limit, both before decoding (the list's length alone) and after resolving.
func TestCollectivesNoFixedCap(t *testing.T) {
	for _, c := range []struct {
		name, y string
		engine  string
		coll    float64 // the collectives' flow-level terms (0: packet level)
		want    string  // error substring; "" resolves
	}{
		// Each all-reduce runs its schedule message by message (the default algorithm's 416
		// ops: TestFlowScheduleOps).
		{"1000 flow", manyCollectives(1000, "all_reduce", "flow", ""), "flow", 1000 * (MemPerCollective + 64*MemPerCollectiveFlow + 416*MemPerFlowScheduleOp), ""},
		{"1000 packet", manyCollectives(1000, "all_reduce", "packet", ""), "packet", 0, ""},
		{"1000 all-to-all flow", manyCollectives(1000, "all_to_all", "flow", ""), "flow", 1000 * (MemPerCollective + 240*MemPerCollectiveFlow), ""},
		// 1,000 x 60 KB = 60 MB passes 40 MiB before anything is decoded.
		{"list too long", manyCollectives(1000, "all_reduce", "flow", "40MiB"), "", 0,
			"workload.collectives (line 6): 1000 collectives need at least 60 MB of memory (1000 x 60 KB), beyond run.max_memory (40MiB)"},
		// 64 MiB base + 128 hosts x 310 KB = 107 MB; 1,000 all-to-alls add 204 MB.
		{"flow estimate", manyCollectives(1000, "all_to_all", "flow", "200MiB"), "", 0,
			"workload.collectives: 1000 collectives at run.engine flow are estimated at 311 MB of memory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, err := Parse([]byte(c.y))
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v; want one containing %q", err, c.want)
				}
				if !strings.Contains(err.Error(), "run.max_memory (200MiB)") && !strings.Contains(err.Error(), "run.max_memory (40MiB)") {
					t.Errorf("error %v does not name the limit", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.Workload.Collectives) != 1000 {
				t.Fatalf("%d collectives resolved; want 1000", len(sc.Workload.Collectives))
			}
			e, err := sc.Estimate()
			if err != nil {
				t.Fatal(err)
			}
			if e.Engine != c.engine {
				t.Fatalf("engine %s; want %s", e.Engine, c.engine)
			}
			if c.engine == "flow" {
				want := MemBase + 128*MemPerFluidHost + c.coll
				if !near(e.MemoryBytes, want) {
					t.Errorf("memory %.0f; want %.0f", e.MemoryBytes, want)
				}
			} else if e.MemoryBytes < 1000*MemPerCollective {
				t.Errorf("packet-level memory %.0f leaves out the collectives' %d x %d", e.MemoryBytes, 1000, MemPerCollective)
			}
		})
	}
}

// TestCollectivesSharedNICDuration: a left-out run.duration covers 4 x the lower bound of
// the collectives sharing one host's NIC, not of the longest alone. 4,000 16-rank ring
// all-reduces of 1 MiB put 500 on every host, each at least 2 x 15/16 MiB x 8 / 400 Gb/s =
// 39.3 us on its NICs: 19.7 ms together, so the duration is at least 78.6 ms (the longest
// alone gave 13.9 ms, and the run stopped with none done).
func TestCollectivesSharedNICDuration(t *testing.T) {
	sc, err := Parse([]byte(manyCollectives(4000, "all_reduce", "flow", "")))
	if err != nil {
		t.Fatal(err)
	}
	one := 2 * 15.0 / 16 * (1 << 20) * 8 / 400e9 // seconds
	if got, want := sc.Run.Duration.Seconds(), 4*500*one; got < want {
		t.Errorf("run.duration %v; want at least %.1f ms", sc.Run.Duration, want*1e3)
	}
}

// TestFlowScheduleOps: at flow level the memory estimate counts the operations of every
// collective that runs its packet-level schedule message by message (flowScheduleOps):
// the largest size of each, summed over the collectives; none for grouped and direct
// (their phases) or past FlowScheduleMaxOps (phases too). A list of schedules too large
// for run.max_memory is refused before it runs, naming workload.collectives and the
// schedule operations.
func TestFlowScheduleOps(t *testing.T) {
	hdr := "topology: {clos: {tiers: 2, planes: 1, radix: 64, hosts: 1024, host_link: 100Gbps}}\ntransport: {kind: mrc}\nrun: {engine: flow%s}\nworkload: {collectives: [%s]}\n"
	ops := func(op, algo string, ranks int, bytes int64) float64 {
		sp := collective.NewSpec(map[string]collective.Collective{"all_reduce": collective.AllReduce, "all_to_all": collective.AllToAll}[op], ranks, bytes)
		var err error
		if sp.Algo, err = collective.ParseAlgorithm(algo); err != nil {
			t.Fatal(err)
		}
		n, err := collective.EstimateOps(sp)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	small := ops("all_reduce", "ring", 16, 1<<20)
	sweep := ops("all_to_all", "pairwise", 64, 64<<20)
	if small != 1200 || sweep <= ops("all_to_all", "pairwise", 64, 1<<20) {
		t.Fatalf("ops: ring %v, pairwise %v", small, sweep)
	}
	for _, c := range []struct {
		name, colls string
		want        float64
	}{
		{"ring", "{op: all_reduce, algorithm: ring, ranks: 16, bytes: 1MiB}", small},
		{"two and a grouped one", "{op: all_reduce, algorithm: ring, ranks: 16, bytes: 1MiB}, {op: all_reduce, algorithm: ring, ranks: 16, bytes: 1MiB}, {op: all_to_all, algorithm: grouped, ranks: 64, bytes: 64MiB}", 2 * small},
		{"largest size of a sweep", "{op: all_to_all, algorithm: pairwise, ranks: 64, bytes: 1MiB, max_bytes: 64MiB}", sweep},
		{"past the bound: phases", "{op: all_reduce, algorithm: ring, ranks: 1024, bytes: 1GiB}", 0},
	} {
		sc, err := Parse([]byte(fmt.Sprintf(hdr, "", c.colls)))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		e, err := sc.Estimate()
		if err != nil {
			t.Fatal(err)
		}
		if e.ScheduleOps != c.want {
			t.Errorf("%s: %v schedule ops; want %v", c.name, e.ScheduleOps, c.want)
		}
	}
	// 200 pairwise all-to-alls over 1,024 ranks (2.1 million ops each, 440 MB at 210 B):
	// 88 GB, refused before anything runs.
	var b strings.Builder
	for i := range 200 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("{op: all_to_all, algorithm: pairwise, ranks: 1024, bytes: 256MiB}")
	}
	_, err := Parse([]byte(fmt.Sprintf(hdr, ", max_memory: 16GiB", b.String())))
	if err == nil || !strings.Contains(err.Error(), "workload.collectives") || !strings.Contains(err.Error(), "schedule operations x 210 B") {
		t.Errorf("200 large schedules: %v; want workload.collectives refused with its schedule operations", err)
	}
}
