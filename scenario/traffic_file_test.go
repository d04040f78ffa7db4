package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/traffic/htsim"
	"github.com/lockstepsim/lockstep/traffic/ns3"
)

// The test files are the importers' own hand-made ones.
const (
	htsimData = "../traffic/htsim/testdata"
	ns3Data   = "../traffic/ns3/testdata"
)

// fileScenario parses a scenario in dir with the given topology and traffic.
func fileScenario(dir, topology, traffic string) (*Scenario, error) {
	return ParseIn([]byte(fmt.Sprintf("topology: %s\ntransport: {kind: mrc}\ntraffic: %s\nrun: {duration: 1ms}\n", topology, traffic)), dir)
}

const clos16 = "{clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}"

// TestFileHTSim: a connection matrix's connections become the group's flows, bytes and
// start from the file, offset by the group's start; the resolved scenario keeps the file,
// not the expansion.
func TestFileHTSim(t *testing.T) {
	sc, err := fileScenario(htsimData, clos16, "[{pattern: file, format: htsim, file: perm16.cm, start: 3us}]")
	if err != nil {
		t.Fatal(err)
	}
	fl := sc.Traffic[0].FlowList()
	if len(fl) != 16 {
		t.Fatalf("%d flows, want 16", len(fl))
	}
	if *fl[0].Src != 7 || *fl[0].Dst != 5 || fl[0].Bytes != 2000000 || fl[0].Start != 3*sim.Microsecond {
		t.Fatalf("flow 0 = %d->%d %v at %v", *fl[0].Src, *fl[0].Dst, fl[0].Bytes, fl[0].Start)
	}
	out, err := Encode(sc)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseIn(out, htsimData)
	if err != nil {
		t.Fatalf("re-resolving the written scenario: %v\n%s", err, out)
	}
	if n := len(again.Traffic[0].FlowList()); n != 16 {
		t.Fatalf("re-resolved %d flows", n)
	}
}

// TestFileNS3: flow.txt on the k=4 fat-tree given as an ns-3 topology.txt (topology.graph).
func TestFileNS3(t *testing.T) {
	sc, err := fileScenario(ns3Data, "{graph: {format: ns3, file: fattree4.txt}}", "[{pattern: file, format: ns3, file: flow.txt}]")
	if err != nil {
		t.Fatal(err)
	}
	l, err := sc.Topology.Describe()
	if err != nil {
		t.Fatal(err)
	}
	if l.NumHosts() != 16 || l.Params().Kind != "graph" {
		t.Fatalf("%d hosts, kind %s", l.NumHosts(), l.Params().Kind)
	}
	fl := sc.Traffic[0].FlowList()
	if len(fl) != 8 || *fl[6].Src != 13 || *fl[6].Dst != 2 || fl[6].Bytes != 100000 || fl[6].Start != 3500*sim.Nanosecond {
		t.Fatalf("flows %d, flow 6 %d->%d %v at %v", len(fl), *fl[6].Src, *fl[6].Dst, fl[6].Bytes, fl[6].Start)
	}
}

// TestFileErrors: every error names the field, and for a bad line the file, line and column.
func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bad.cm", "Nodes 4\nConnections 1\n0->1 start 0 size x\n")
	write("big.cm", "Nodes 32\nConnections 1\n0->1 start 0 size 10\n")
	write("zero.cm", "Nodes 4\nConnections 1\n0->1 start 0 size 0\n")
	write("never.cm", "Nodes 4\nConnections 2\nTriggers 1\n0->1 start 0 size 9 send_done_trigger 1\n1->2 trigger 1 size 9\ntrigger id 1 barrier count 2\n")
	write("cycle.cm", "Nodes 4\nConnections 2\nTriggers 1\n0->1 start 0 size 9\n1->2 trigger 1 size 9 send_done_trigger 1\ntrigger id 1 oneshot\n")
	write("twice.cm", "Nodes 4\nConnections 3\nTriggers 1\n0->1 start 0 size 9 send_done_trigger 1 recv_done_trigger 1\n1->2 trigger 1 size 9\ntrigger id 1 oneshot\n2->3 start 0 size 1\n")
	write("over.cm", "Nodes 4\nConnections 3\nTriggers 1\n0->1 start 0 size 9 send_done_trigger 1\n1->2 trigger 1 size 9\ntrigger id 1 barrier count 1\n2->3 start 0 size 99 send_done_trigger 1\n")
	write("fail.cm", "Nodes 4\nConnections 1\nFailures 1\n0->1 start 0 size 9\nfailure switch_type TOR switch_id 0\n")
	write("fail9.cm", "Nodes 4\nConnections 1\nFailures 1\n0->1 start 0 size 9\nfailure switch_type TOR switch_id 9\n")
	write("faillink.cm", "Nodes 4\nConnections 1\nFailures 1\n0->1 start 0 size 9\nfailure switch_type CORE switch_id 1 link_id 4\n")
	write("flow.txt", "1\n0 99 3 100 10 0\n")
	write("lossy.txt", "4 1 3\n3\n0 3 1Gbps 1us 0\n1 3 1Gbps 1us 0.01\n2 3 1Gbps 1us 0\n")
	write("swfirst.txt", "3 1 2\n0\n0 1 1Gbps 1us 0\n0 2 1Gbps 1us 0\n")
	write("mixed.txt", "3 1 2\n2\n0 2 1Gbps 1us 0\n1 2 100Gbps 1us 0\n")
	write("split.txt", "6 2 4\n4 5\n0 4 1Gbps 1us 0\n1 4 1Gbps 1us 0\n2 5 1Gbps 1us 0\n3 5 1Gbps 1us 0\n")
	write("across.txt", "2\n0 1 3 100 10 0\n 1 2 3 100 10 0\n")
	write("none.txt", "0\n")
	const ft4 = "{fat_tree: {k: 4, host_link: 100G}}"
	cases := []struct{ name, topo, traffic, want string }{
		{"no format", clos16, "[{pattern: file, file: bad.cm}]", "traffic[0].format: missing; pattern file needs the file's format: allowed htsim, ns3"},
		{"bad format", clos16, "[{pattern: file, format: omnet, file: bad.cm}]", `traffic[0].format: "omnet" is not a traffic file format; allowed htsim, ns3`},
		{"no file", clos16, "[{pattern: file, format: htsim}]", "traffic[0].file: missing"},
		{"missing file", clos16, "[{pattern: file, format: htsim, file: nope.cm}]", "traffic[0].file: open " + filepath.Join(dir, "nope.cm")},
		{"bytes", clos16, "[{pattern: file, format: htsim, file: bad.cm, bytes: 1MiB}]", "traffic[0].bytes: 1MiB is set, but pattern file takes each flow's size"},
		{"bad line", clos16, "[{pattern: file, format: htsim, file: bad.cm}]", "traffic[0].file: " + filepath.Join(dir, "bad.cm") + `:3:19: size "x" is not a byte count`},
		{"too many nodes", clos16, "[{pattern: file, format: htsim, file: big.cm}]", "has Nodes 32, but the topology has 16 hosts"},
		{"never fires", clos16, "[{pattern: file, format: htsim, file: never.cm}]", "never.cm:5:1: the connection waits on trigger 1 (line 6), which never fires: it is a barrier of count 2 and gets 1 activations"},
		{"never activated", clos16, "[{pattern: file, format: htsim, file: cycle.cm}]", "cycle.cm:5:1: the connection waits on trigger 1 (line 6), which never fires: no connection activates it"},
		{"oneshot twice", clos16, "[{pattern: file, format: htsim, file: twice.cm}]", "twice.cm:6:1: oneshot trigger 1 is activated a second time; htsim allows one activation: use multishot or barrier (by the connection on line 4)"},
		{"barrier over", clos16, "[{pattern: file, format: htsim, file: over.cm}]", "over.cm:6:1: barrier trigger 1 (count 1) is activated 2 times"},
		{"failures off a fat-tree", clos16, "[{pattern: file, format: htsim, file: fail.cm}]", "traffic[0].file: " + filepath.Join(dir, "fail.cm") + ":5:1: failure lines name htsim fat-tree switches (TOR, AGG, CORE); use topology.fat_tree"},
		{"failure switch range", ft4, "[{pattern: file, format: htsim, file: fail9.cm}]", "fail9.cm:5:35: switch_id 9 is not a TOR switch of the k=4 fat-tree; allowed 0 to 7"},
		{"failure link range", ft4, "[{pattern: file, format: htsim, file: faillink.cm}]", "faillink.cm:5:46: link_id 4 is not a link of CORE switch 1 (down ports); allowed 0 to 3"},
		{"file on permutation", clos16, "[{pattern: permutation, bytes: 1MiB, file: bad.cm}]", `traffic[0].file: "bad.cm" is set, but only pattern file reads a traffic file`},
		{"format on flows", clos16, "[{pattern: flows, bytes: 1MiB, format: htsim, flows: [{src: 0, dst: 1}]}]", `traffic[0].format: "htsim" is set`},
		{"ns3 host range", clos16, "[{pattern: file, format: ns3, file: flow.txt}]", `flow.txt:2:3: flow 0's dst "99" is not an integer in [0, 15] (the topology has 16 hosts)`},
		{"graph format", "{graph: {file: lossy.txt}}", "[{pattern: permutation, bytes: 1MiB}]", "topology.graph.format: missing; allowed ns3"},
		{"graph no file", "{graph: {format: ns3}}", "[{pattern: permutation, bytes: 1MiB}]", "topology.graph.file: missing"},
		{"graph loss given twice", "{graph: {format: ns3, file: lossy.txt}}\nfaults: [{at: 0s, link: h1.p0, action: loss, loss: 0.5}]", "[{pattern: permutation, bytes: 1MiB}]", "faults[0]: sets the loss of link h1.p0 at 0s, and lossy.txt gives it error_rate 0.01 (a loss fault from 0s); give the loss in one place"},
		{"graph shape", "{graph: {format: ns3, file: swfirst.txt}}", "[{pattern: permutation, bytes: 1MiB}]", "topology.graph.file: " + filepath.Join(dir, "swfirst.txt") + ":2:1: switch id 0 is below host id 1"},
		{"graph host rates", "{graph: {format: ns3, file: mixed.txt}}", "[{pattern: permutation, bytes: 1MiB}]", "topology.graph.file: " + filepath.Join(dir, "mixed.txt") + ":4:1: host links have different rates (h0 1Gbps, h1 100Gbps); lockstep's transports assume one NIC rate per fabric: give every host link the same rate"},
		{"graph no path", "{graph: {format: ns3, file: split.txt}}", "[{pattern: file, format: ns3, file: across.txt}]", "traffic[0].file: " + filepath.Join(dir, "across.txt") + ":3:2: flow 1 from host 1 to host 2: no path joins them in split.txt"},
		{"no flows", clos16, "[{pattern: file, format: ns3, file: none.txt}]", "traffic[0].file: " + filepath.Join(dir, "none.txt") + ": has no flows"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := fileScenario(dir, c.topo, c.traffic)
			wantErr(t, err, []string{c.want})
		})
	}
}

// The importers' bounds are the scenario's.
func TestImporterBounds(t *testing.T) {
	if htsim.MaxConnections != MaxGeneratedFlows || ns3.MaxFlows != MaxGeneratedFlows {
		t.Errorf("flow bounds %d, %d; want scenario.MaxGeneratedFlows %d", htsim.MaxConnections, ns3.MaxFlows, MaxGeneratedFlows)
	}
	if htsim.MaxSize != int64(MaxTransferBytes) || ns3.MaxSize != int64(MaxTransferBytes) {
		t.Errorf("size bounds %d, %d; want scenario.MaxTransferBytes %d", htsim.MaxSize, ns3.MaxSize, MaxTransferBytes)
	}
}

// TestTriggerPlan: a 3-level DAG's waiting flows get the earliest start the chain allows at
// the NIC rate (100 Gb/s: 100 kB in 8 us), which run.duration's default then covers.
func TestTriggerPlan(t *testing.T) {
	dir := t.TempDir()
	cm := "Nodes 8\nConnections 4\nTriggers 2\n" +
		"0->1 id 1 start 0 size 100000 send_done_trigger 1\n" +
		"2->3 id 2 trigger 1 size 50000 recv_done_trigger 2\n" +
		"4->5 id 3 trigger 1 size 100000 recv_done_trigger 2\n" +
		"6->7 id 4 trigger 2 size 10000\n" +
		"trigger id 1 oneshot\ntrigger id 2 barrier count 2\n"
	if err := os.WriteFile(filepath.Join(dir, "dag.cm"), []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := ParseIn([]byte("topology: "+clos16+"\ntransport: {kind: mrc}\ntraffic: [{pattern: file, format: htsim, file: dag.cm}]\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	g := &sc.Traffic[0]
	p := g.Triggers()
	if p == nil || len(p.Triggers) != 2 || len(p.Flows) != 4 {
		t.Fatalf("plan %+v", p)
	}
	if ft := p.Flows[0]; ft.Wait != -1 || ft.SendDone != 0 || ft.RecvDone != -1 {
		t.Errorf("flow 0 triggers %+v", ft)
	}
	if tr := p.Triggers[1]; tr.Kind != htsim.Barrier || tr.Count != 2 || len(tr.Targets) != 1 || tr.Targets[0] != 3 {
		t.Errorf("trigger 2 %+v", tr)
	}
	us := sim.Microsecond
	want := []sim.Time{0, 8 * us, 8 * us, 16 * us}
	for j, f := range g.FlowList() {
		if f.Start != want[j] {
			t.Errorf("flow %d earliest start %v, want %v", j, f.Start, want[j])
		}
	}
	if sc.Run.Duration < 16*us+sim.Time(10000*8)*sim.Second/sim.Time(100e9) {
		t.Errorf("run.duration %v does not cover the chain", sc.Run.Duration)
	}
}

// TestTriggerState pins htsim's three trigger types.
func TestTriggerState(t *testing.T) {
	p := &TriggerPlan{File: "x.cm", Triggers: []TriggerSpec{
		{ID: 1, Kind: htsim.Oneshot, Targets: []int{4, 5}},
		{ID: 2, Kind: htsim.Multishot, Targets: []int{6, 7}},
		{ID: 3, Kind: htsim.Barrier, Count: 3, Targets: []int{8}},
	}}
	st := p.NewState()
	steps := []struct {
		k    int
		want []int
		err  bool
	}{
		{0, []int{4, 5}, false}, {0, nil, true},
		{1, []int{6}, false}, {1, []int{7}, false}, {1, nil, false},
		{2, nil, false}, {2, nil, false}, {2, []int{8}, false}, {2, nil, true},
	}
	for i, s := range steps {
		got, err := st.Activate(s.k, nil)
		if (err != nil) != s.err || fmt.Sprint(got) != fmt.Sprint(append([]int{}, s.want...)) {
			t.Errorf("step %d: activate %d = %v, %v; want %v, error %v", i, s.k, got, err, s.want, s.err)
		}
	}
}

// A link's error_rate becomes a loss fault from time 0, shown in the resolved scenario;
// resolving that again adds nothing (a fixed point).
func TestGraphLossFaults(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lossy.txt"), []byte("4 1 3\n3\n0 3 1Gbps 1us 0\n1 3 1Gbps 1us 0.01\n2 3 1Gbps 1us 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := fileScenario(dir, "{graph: {format: ns3, file: lossy.txt}}", "[{pattern: permutation, bytes: 64KiB}]")
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Faults) != 1 || sc.Faults[0].Link != "h1.p0" || sc.Faults[0].Action != "loss" || sc.Faults[0].Loss != 0.01 || sc.Faults[0].Direction != "both" {
		t.Fatalf("faults %+v", sc.Faults)
	}
	out, err := Encode(sc)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseIn(out, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(again.Faults) != 1 {
		t.Fatalf("re-resolved faults %+v", again.Faults)
	}
}

// Failure lines become faults on the fat-tree: a switch down, or a link on its up (core:
// down) port, from 0s; the resolved scenario shows them and re-resolving adds none.
func TestHTSimFailureFaults(t *testing.T) {
	sc, err := fileScenario(htsimData, "{fat_tree: {k: 4, host_link: 100G}}", "[{pattern: file, format: htsim, file: dag.cm}]")
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Faults) != 2 || sc.Faults[0].Link != "p0.t1-0.up1" || sc.Faults[0].Action != "down" || sc.Faults[1].Switch != "p0.t2-3" || sc.Faults[1].At != 0 {
		t.Fatalf("faults %+v", sc.Faults)
	}
	out, err := Encode(sc)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseIn(out, htsimData)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(again.Faults) != 2 {
		t.Fatalf("re-resolved faults %+v", again.Faults)
	}
}

// An htsim connection of size 0 is an unbounded flow: twice what a 100G NIC sends in the
// 1 ms run (25 MB), marked Unbounded; without run.duration, or with a done trigger (it never
// completes), it is refused naming the file position.
func TestFileHTSimUnbounded(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "zero.cm"), []byte("Nodes 4\nConnections 2\n0->1 start 0 size 0\n2->3 start 0 size 4096\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "zerodone.cm"), []byte("Nodes 4\nConnections 2\nTriggers 1\n0->1 start 0 size 0 send_done_trigger 1\n2->3 size 4096 trigger 1\ntrigger id 1 oneshot\n"), 0o644)
	sc, err := fileScenario(dir, clos16, "[{pattern: file, format: htsim, file: zero.cm}]")
	if err != nil {
		t.Fatal(err)
	}
	fl := sc.Traffic[0].FlowList()
	if len(fl) != 2 || !fl[0].Unbounded() || fl[1].Unbounded() {
		t.Fatalf("flows %+v; want the first unbounded", fl)
	}
	if want := sim.Size(2 * 100e9 / 8 * 1e-3); fl[0].Bytes != want || fl[1].Bytes != 4096 {
		t.Errorf("bytes %v and %v; want %v (twice 100G for 1 ms) and 4096", fl[0].Bytes, fl[1].Bytes, want)
	}
	_, err = ParseIn([]byte(fmt.Sprintf("topology: %s\ntransport: {kind: mrc}\ntraffic: [{pattern: file, format: htsim, file: zero.cm}]\n", clos16)), dir)
	wantErr(t, err, []string{"zero.cm:3:19: connection 0->1 has size 0, an unbounded flow, which sends until run.duration: give run.duration"})
	_, err = fileScenario(dir, clos16, "[{pattern: file, format: htsim, file: zerodone.cm}]")
	wantErr(t, err, []string{"zerodone.cm:4:19: connection 0->1 has size 0, an unbounded flow, which never completes"})
}
