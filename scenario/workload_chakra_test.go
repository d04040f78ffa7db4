package scenario

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/workload/chakra"
)

const chakraTopo = "topology: {clos: {tiers: 2, planes: 4, radix: 16, hosts: 16, host_link: 100G}}\n"

// TestChakraResolve: a trace resolves with the collective defaults and its rank placement;
// the resolved scenario encodes and reads back to the same.
func TestChakraResolve(t *testing.T) {
	dir := "../workload/chakra/testdata"
	sc, err := ParseIn([]byte(chakraTopo+"workload: {chakra: {path: dp16/dp}}\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	c := sc.Workload.Chakra
	if c.Algorithm != "auto" || c.Chunk != 512<<10 || c.Channels != 1 || sc.Transport.Kind != "mrc" || sc.Run.Engine != EnginePacket {
		t.Fatalf("resolved %+v, transport %s, engine %s", *c, sc.Transport.Kind, sc.Run.Engine)
	}
	tr, plan := c.Trace()
	if len(tr.Ranks) != 16 || len(plan.Groups) != 1 || c.Host(7) != 7 {
		t.Fatalf("trace %d ranks, %d groups", len(tr.Ranks), len(plan.Groups))
	}
	out, err := Encode(sc)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseIn(out, dir)
	if err != nil {
		t.Fatal(err)
	}
	out2, _ := Encode(again)
	if !bytes.Equal(out, out2) {
		t.Fatalf("not a fixed point:\n%s\n---\n%s", out, out2)
	}

	// Four pipeline stages placed on hosts 15, 11, 7, 3 of the 16.
	sc, err = ParseIn([]byte(chakraTopo+"workload: {chakra: {path: pp4/pp, hosts: [15, 11, 7, 3], algorithm: ring}}\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if c := sc.Workload.Chakra; c.Host(0) != 15 || c.Host(3) != 3 || c.Algorithm != "ring" {
		t.Fatalf("resolved %+v", *c)
	}
	// A long computation grows a left-out run.duration past the default.
	long := t.TempDir()
	d := chakra.TestDataParallel
	d.Forward = 3 * DefaultWorkloadDuration
	if err := chakra.WriteTrace(filepath.Join(long, "dp"), d.Nodes()); err != nil {
		t.Fatal(err)
	}
	sc, err = ParseIn([]byte(chakraTopo+"workload: {chakra: {path: dp}}\n"), long)
	if err != nil {
		t.Fatal(err)
	}
	if sc.Run.Duration < 4*d.Forward {
		t.Fatalf("run.duration %v, want >= %v", sc.Run.Duration, 4*d.Forward)
	}
}

// TestChakraResolveErrors: every bad workload.chakra names its field.
func TestChakraResolveErrors(t *testing.T) {
	dir := "../workload/chakra/testdata"
	for _, tc := range []struct{ yaml, want string }{
		{"workload: {chakra: {}}", "workload.chakra.path: missing"},
		{"workload: {chakra: {path: nope/x}}", "workload.chakra.path: chakra: no trace at " + filepath.Join(dir, "nope/x")},
		{"workload: {chakra: {path: pp4/pp}}", "workload.chakra.path: the trace has 4 ranks (pp4/pp.0.et to .3.et) but the topology 16 hosts; give hosts"},
		{"workload: {chakra: {path: pp4/pp, hosts: [0, 1]}}", "workload.chakra.hosts: lists 2 hosts, but the trace has 4 ranks"},
		{"workload: {chakra: {path: pp4/pp, hosts: [0, 1, 2, 16]}}", "workload.chakra.hosts[3]: 16 is not a host; allowed 0 to 15"},
		{"workload: {chakra: {path: pp4/pp, hosts: [0, 1, 2, 1]}}", "workload.chakra.hosts[3]: host 1 is also hosts[1]"},
		{"workload: {chakra: {path: dp16/dp, algorithm: fastest}}", "workload.chakra.algorithm: \"fastest\" is not an algorithm"},
		{"workload: {chakra: {path: dp16/dp, algorithm: pairwise}}", "workload.chakra.path: process group \"\" collective 0 (all_reduce of 4194304 bytes on 16 ranks): collective: algorithm = pairwise: all_reduce supports auto, ring"},
		{"workload: {chakra: {path: dp16/dp, channels: 2000}}", "workload.chakra.channels: 2000; allowed 1 to 1024"},
		{"workload: {chakra: {path: dp16/dp, chunk: 1B}}", "workload.chakra.chunk: process group \"\" collective 0 needs about"},
		{"workload: {chakra: {path: dp16/dp}}\ntransport: {kind: raw}", "transport.kind: raw cannot carry a trace's messages"},
		{"workload: {chakra: {path: dp16/dp}, collectives: [{op: all_reduce, bytes: 1MiB}]}", "workload.chakra: given with workload.training or workload.collectives"},
		{"workload: {chakra: {path: dp16/dp}}\ntraffic: [{pattern: permutation, bytes: 1MiB}]", "traffic: given with workload.chakra"},
		{"workload: {chakra: {path: dp16/dp}}\nrun: {max_packets: 100}", "workload.chakra: moves about"},
		{"workload: {chakra: {path: dp16/dp, colour: red}}", "colour"},
	} {
		_, err := ParseIn([]byte(chakraTopo+tc.yaml+"\n"), dir)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
