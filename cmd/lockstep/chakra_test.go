package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/workload/chakra"
	"github.com/lockstepsim/lockstep/workload/chakra/etpb"
)

// chakraScenario writes a scenario running the trace at path (as written in the file) on a
// 4-host fabric under transport tp into dir and returns its file.
func chakraScenario(t *testing.T, dir, path, tp string) string {
	t.Helper()
	f := filepath.Join(dir, "chakra.yaml")
	yaml := fmt.Sprintf(`name: chakra
topology:
  clos: {tiers: 2, planes: 1, radix: 4, hosts: 4, host_link: 100Gbps}
transport: %s
workload:
  chakra: {path: %s}
`, tp, path)
	if err := os.WriteFile(f, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestChakraRunCLI: lockstep run on the shipped pipeline trace, read relative to the
// scenario's folder, writes the step time in summary.json and on the terminal and one
// chakra_nodes.csv row per node; the step time is the latest node end in that file.
func TestChakraRunCLI(t *testing.T) {
	dir := t.TempDir()
	if err := chakra.WriteTrace(filepath.Join(dir, "traces", "pp"), chakra.TestPipeline.Nodes()); err != nil {
		t.Fatal(err)
	}
	for _, tp := range []string{"{kind: ideal}", "{kind: mrc}", "{kind: roce}\nrun: {engine: flow}"} {
		sc := chakraScenario(t, dir, "traces/pp", tp)
		out := t.TempDir()
		stdout := mustRun(t, "run", sc, "--out", out)
		if !strings.Contains(stdout, filepath.Join(dir, "traces", "pp")+": 4 ranks") || !strings.Contains(stdout, "step time ") {
			t.Fatalf("stdout:\n%s", stdout)
		}
		// The results folder's scenario.yaml names the trace absolutely: it resolves again.
		if code, _, stderr := cli(t, "validate", filepath.Join(out, "scenario.yaml"), "--no-setup"); code != 0 {
			t.Errorf("validate of the results' scenario.yaml: exit %d, %s", code, stderr)
		}
		var sum struct {
			Chakra struct {
				StepTimeUs float64 `json:"step_time_us"`
				Nodes      int     `json:"nodes"`
				Messages   int     `json:"messages"`
			} `json:"chakra"`
		}
		if err := json.Unmarshal(readFile(t, filepath.Join(out, "summary.json")), &sum); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join(out, "chakra_nodes.csv"))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows)-1 != sum.Chakra.Nodes || sum.Chakra.Messages != 2*3*chakra.TestPipeline.Microbatches {
			t.Fatalf("%d csv rows for %d nodes, %d messages", len(rows)-1, sum.Chakra.Nodes, sum.Chakra.Messages)
		}
		last := 0.0
		for _, r := range rows[1:] {
			var end float64
			fmt.Sscan(r[8], &end)
			last = max(last, end)
		}
		if last != sum.Chakra.StepTimeUs || last < 7000 {
			t.Fatalf("latest node end %.3f us, step time %.3f us", last, sum.Chakra.StepTimeUs)
		}
	}
}

// TestChakraFailures: a deadlocked trace runs and fails with exit 1 naming the ranks and
// node ids that wait; bad traces are bad input (exit 2) naming the field and the file.
func TestChakraFailures(t *testing.T) {
	dir := t.TempDir()
	p2p := func(id uint64, typ etpb.NodeType, peer int, tag int64, deps ...uint64) chakra.Node {
		return chakra.Node{ID: id, Name: fmt.Sprintf("n%d", id), Type: typ, Peer: peer, Tag: tag, Bytes: 4096, Deps: deps}
	}
	// Each rank receives before it sends what the other waits for.
	dead := make([][]chakra.Node, 4)
	for r := range dead {
		peer := r ^ 1
		dead[r] = []chakra.Node{
			p2p(1, etpb.NodeType_COMM_RECV_NODE, peer, int64(peer)),
			p2p(2, etpb.NodeType_COMM_SEND_NODE, peer, int64(r), 1),
		}
	}
	if err := chakra.WriteTrace(filepath.Join(dir, "dead", "t"), dead); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := cli(t, "run", chakraScenario(t, dir, "dead/t", "{kind: mrc}"), "--out", t.TempDir())
	for _, want := range []string{"8 node(s) not done", "deadlocked", `rank 0: node id 1 ("n1"): its send at rank 1 (node id 2) is not ready`, "rank 3: node id 1"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("deadlock: exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
		}
	}

	// 3 ranks on 4 hosts; a truncated file.
	three := chakra.TestDataParallel
	three.Ranks = 3
	if err := chakra.WriteTrace(filepath.Join(dir, "three", "t"), three.Nodes()); err != nil {
		t.Fatal(err)
	}
	if err := chakra.WriteTrace(filepath.Join(dir, "cut", "t"), chakra.TestPipeline.Nodes()); err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut", "t.2.et")
	b := readFile(t, cut)
	if err := os.WriteFile(cut, b[:len(b)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{"three/t", "workload.chakra.path: the trace has 3 ranks (three/t.0.et to .2.et) but the topology 4 hosts"},
		{"cut/t", "cut/t.2.et: byte "},
		{"none/t", "workload.chakra.path: chakra: no trace at"},
	} {
		code, _, stderr := cli(t, "run", chakraScenario(t, dir, c.path, "{kind: ideal}"), "--out", t.TempDir())
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", c.path, code, stderr, c.want)
		}
	}
}
