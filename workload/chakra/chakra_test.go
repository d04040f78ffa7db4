package chakra

import (
	"bytes"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/chakra/etpb"
	"github.com/lockstepsim/lockstep/workload/collective"
)

var update = flag.Bool("update", false, "rewrite testdata/dp16 and testdata/pp4 from TestDataParallel and TestPipeline")

// encode writes nodes as one rank's stream.
func encode(t testing.TB, nodes []Node) []byte {
	t.Helper()
	var b bytes.Buffer
	w := NewWriter(&b)
	for i := range nodes {
		if err := w.Node(&nodes[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// raw frames messages as a stream without the writer's checks.
func raw(msgs ...proto.Message) []byte {
	var out []byte
	for _, m := range msgs {
		b, _ := proto.Marshal(m)
		out = binary.AppendUvarint(out, uint64(len(b)))
		out = append(out, b...)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	for name, ranks := range map[string][][]Node{"dp": TestDataParallel.Nodes(), "pp": TestPipeline.Nodes()} {
		for r, nodes := range ranks {
			rk, err := ReadRank(bytes.NewReader(encode(t, nodes)), name)
			if err != nil {
				t.Fatalf("%s rank %d: %v", name, r, err)
			}
			if rk.Version != Version {
				t.Errorf("version %q, want %q", rk.Version, Version)
			}
			if !reflect.DeepEqual(rk.Nodes, nodes) {
				t.Fatalf("%s rank %d: read back\n%+v\nwrote\n%+v", name, r, rk.Nodes, nodes)
			}
		}
	}
}

// TestReadAttrTypes: the attributes are read from whichever integer field holds them, as
// converters differ, and ctrl and data deps merge without duplicates.
func TestReadAttrTypes(t *testing.T) {
	pn := &etpb.Node{Id: 7, Name: "ar", Type: etpb.NodeType_COMM_COLL_NODE, CtrlDeps: []uint64{3, 4}, DataDeps: []uint64{4, 5}, Attr: []*etpb.AttributeProto{
		{Name: "comm_type", Value: &etpb.AttributeProto_Uint32Val{Uint32Val: uint32(etpb.CollectiveCommType_ALL_GATHER)}},
		{Name: "comm_size", Value: &etpb.AttributeProto_Uint64Val{Uint64Val: 1234}},
		{Name: "pg_name", Value: &etpb.AttributeProto_StringVal{StringVal: "dp"}},
		{Name: "is_cpu_op", Value: &etpb.AttributeProto_BoolVal{BoolVal: false}},
	}}
	var msgs []proto.Message
	msgs = append(msgs, &etpb.GlobalMetadata{Version: "x"})
	for _, id := range []uint64{3, 4, 5} {
		msgs = append(msgs, &etpb.Node{Id: id, Type: etpb.NodeType_COMP_NODE, DurationMicros: 2})
	}
	msgs = append(msgs, pn)
	rk, err := ReadRank(bytes.NewReader(raw(msgs...)), "f")
	if err != nil {
		t.Fatal(err)
	}
	got := rk.Nodes[3]
	want := Node{ID: 7, Name: "ar", Type: etpb.NodeType_COMM_COLL_NODE, Deps: []uint64{3, 4, 5}, Comm: collective.AllGather, Bytes: 1234, Group: "dp"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if rk.Nodes[0].Duration != 2*sim.Microsecond {
		t.Errorf("duration %v, want 2us", rk.Nodes[0].Duration)
	}
}

func TestReadErrors(t *testing.T) {
	md := &etpb.GlobalMetadata{Version: "0.0.4"}
	comp := func(id uint64, deps ...uint64) *etpb.Node {
		return &etpb.Node{Id: id, Name: "c", Type: etpb.NodeType_COMP_NODE, DataDeps: deps}
	}
	attr := func(name string, v int64) *etpb.AttributeProto {
		return &etpb.AttributeProto{Name: name, Value: &etpb.AttributeProto_Int64Val{Int64Val: v}}
	}
	huge := binary.AppendUvarint(nil, MaxMessageBytes+1)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "f.et: empty file"},
		{"bad varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "f.et: byte 0: message 0: bad length prefix"},
		{"cut prefix", append(raw(md), 0x80), "message 1: bad length prefix: unexpected EOF"},
		{"too long", append(raw(md), huge...), "message 1 is 1048577 bytes; allowed up to 1048576"},
		{"truncated", append(raw(md), 10, 1, 2), "message 1 truncated: 10 bytes announced"},
		{"not proto", append(raw(md), 2, 0xff, 0xff), "node index 0 (message 1)"},
		{"invalid type", raw(md, &etpb.Node{Id: 1}), "node index 0 (id 1, \"\"): type = 0: not a node type"},
		{"duplicate id", raw(md, comp(1), comp(1)), "node index 1: id 1 repeats node index 0's"},
		{"self dep", raw(md, comp(1, 1)), "node index 0 (id 1, \"c\"): depends on itself"},
		{"unknown dep", raw(md, comp(1), comp(2, 9)), "node index 1 (id 2, \"c\"): depends on id 9, which is not in the file"},
		{"cycle", raw(md, comp(1, 3), comp(2, 1), comp(3, 2), comp(4)), "the dependencies form a cycle: 3 nodes never become ready"},
		{"duration", raw(md, &etpb.Node{Id: 1, Type: etpb.NodeType_COMP_NODE, DurationMicros: MaxDurationMicros + 1}), "duration_micros = 1000000001; allowed up to 1000000000"},
		{"no comm_type", raw(md, &etpb.Node{Id: 1, Type: etpb.NodeType_COMM_COLL_NODE}), "attribute comm_type missing"},
		{"gather", raw(md, &etpb.Node{Id: 1, Type: etpb.NodeType_COMM_COLL_NODE, Attr: []*etpb.AttributeProto{attr("comm_type", 3)}}), "comm_type = 3 (GATHER) is not supported"},
		{"size", raw(md, &etpb.Node{Id: 1, Type: etpb.NodeType_COMM_COLL_NODE, Attr: []*etpb.AttributeProto{attr("comm_type", 0), attr("comm_size", -1)}}), "attribute comm_size = -1; allowed 0 to 1099511627776"},
		{"size type", raw(md, &etpb.Node{Id: 1, Type: etpb.NodeType_COMM_COLL_NODE, Attr: []*etpb.AttributeProto{attr("comm_type", 0), {Name: "comm_size", Value: &etpb.AttributeProto_StringVal{StringVal: "1"}}}}), "attribute comm_size is not an integer"},
		{"no comm_size", raw(md, &etpb.Node{Id: 1, Type: etpb.NodeType_COMM_COLL_NODE, Attr: []*etpb.AttributeProto{attr("comm_type", 0)}}), "node index 0 (id 1, \"\"): attribute comm_size missing; a ALL_REDUCE collective needs its bytes (only BARRIER moves none)"},
		{"no dst", raw(md, &etpb.Node{Id: 1, Type: etpb.NodeType_COMM_SEND_NODE}), "attribute comm_dst missing; a COMM_SEND_NODE needs it"},
		{"src range", raw(md, &etpb.Node{Id: 1, Type: etpb.NodeType_COMM_RECV_NODE, Attr: []*etpb.AttributeProto{attr("comm_src", MaxRanks)}}), "attribute comm_src = 4096; allowed 0 to 4095"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadRank(bytes.NewReader(tc.data), "f.et")
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "f.et: ") {
				t.Fatalf("err %v, want f.et: ...%q", err, tc.want)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	p := TestPipeline
	plan, err := (&Trace{Ranks: ranksOf(t, p.Nodes())}).Match()
	if err != nil {
		t.Fatal(err)
	}
	// Each of the 3 stage pairs carries M activations and M gradients.
	if got, want := len(plan.P2Ps), 2*(p.Stages-1)*p.Microbatches; got != want {
		t.Fatalf("%d messages, want %d", got, want)
	}
	for _, m := range plan.P2Ps {
		if m.Bytes != p.ActivationBytes || (m.Dst != m.Src+1 && m.Dst != m.Src-1) {
			t.Fatalf("message %+v", m)
		}
	}
	d := TestDataParallel
	plan, err = (&Trace{Ranks: ranksOf(t, d.Nodes())}).Match()
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Groups) != 1 || len(plan.Groups[0].Members) != d.Ranks || len(plan.Groups[0].Colls) != d.Buckets {
		t.Fatalf("groups %+v", plan.Groups)
	}

	// Mismatches.
	bad := d.Nodes()
	bad[3] = append([]Node(nil), bad[3]...)
	bad[3][d.Buckets+1].Bytes++
	if _, err := (&Trace{Ranks: ranksOf(t, bad)}).Match(); err == nil || !strings.Contains(err.Error(), "r0 node id 6 is all_reduce of 4194304 bytes, r3 node id 6 is all_reduce of 4194305 bytes") {
		t.Fatalf("err %v", err)
	}
	bad = d.Nodes()
	bad[5] = bad[5][:len(bad[5])-2]
	if _, err := (&Trace{Ranks: ranksOf(t, bad)}).Match(); err == nil || !strings.Contains(err.Error(), "r0 has 4 collectives, r5 has 3") {
		t.Fatalf("err %v", err)
	}
	pp := p.Nodes()
	pp[1] = pp[1][1:] // the first activation receive is gone (and with it a dependency)
	for i := range pp[1] {
		pp[1][i].Deps = nil
	}
	if _, err := (&Trace{Ranks: ranksOf(t, pp)}).Match(); err == nil || !strings.Contains(err.Error(), "8 send(s) from rank 0 to rank 1 with tag 0") && !strings.Contains(err.Error(), "1 send(s) from rank 0 to rank 1 with tag 0 (r0) but 0 receive(s) (r1); the first unmatched is send node id 3") {
		t.Fatalf("err %v", err)
	}
	pp = p.Nodes()
	pp[2] = append([]Node(nil), pp[2]...)
	for i := range pp[2] {
		if pp[2][i].Type == etpb.NodeType_COMM_SEND_NODE {
			pp[2][i].Peer = 2
			break
		}
	}
	if _, err := (&Trace{Ranks: ranksOf(t, pp)}).Match(); err == nil || !strings.Contains(err.Error(), "r2: node id 3 (\"send_act_mb0\"): peer rank 2; allowed a rank of the trace in [0, 4) other than 2") {
		t.Fatalf("err %v", err)
	}
}

// ranksOf reads each rank's nodes back through the stream, named r0, r1, ...
func ranksOf(t *testing.T, ranks [][]Node) []*Rank {
	out := make([]*Rank, len(ranks))
	for r, nodes := range ranks {
		rk, err := ReadRank(bytes.NewReader(encode(t, nodes)), "r"+string(rune('0'+r)))
		if err != nil {
			t.Fatal(err)
		}
		out[r] = rk
	}
	return out
}

// TestTestdata: the shipped traces are what the writer makes of TestDataParallel and
// TestPipeline (-update rewrites them), and Read finds every rank.
func TestTestdata(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		ranks  [][]Node
	}{
		{"testdata/dp16/dp", TestDataParallel.Nodes()},
		{"testdata/pp4/pp", TestPipeline.Nodes()},
	} {
		if *update {
			if err := WriteTrace(tc.prefix, tc.ranks); err != nil {
				t.Fatal(err)
			}
		}
		for r, nodes := range tc.ranks {
			got, err := os.ReadFile(FileName(tc.prefix, r))
			if err != nil {
				t.Fatalf("%v (run with -update to write the test traces)", err)
			}
			if !bytes.Equal(got, encode(t, nodes)) {
				t.Fatalf("%s differs from the writer's output; run go test ./workload/chakra -run TestTestdata -update", FileName(tc.prefix, r))
			}
		}
		tr, err := Read(tc.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Ranks) != len(tc.ranks) {
			t.Fatalf("%s: %d ranks read, want %d", tc.prefix, len(tr.Ranks), len(tc.ranks))
		}
		if _, err := tr.Match(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none")); err == nil || !strings.Contains(err.Error(), "no trace at") {
		t.Fatalf("err %v", err)
	}
}

// TestReadRankGap: a trace folder with dp.0.et and dp.2.et names the missing dp.1.et
// instead of reading one rank; files that are not rank files (dp.x.et, dp.01.et, other
// prefixes) are not ranks, and a barrier needs no comm_size.
func TestReadRankGap(t *testing.T) {
	md := &etpb.GlobalMetadata{Version: "0.0.4"}
	barrier := raw(md, &etpb.Node{Id: 1, Name: "b", Type: etpb.NodeType_COMM_COLL_NODE, Attr: []*etpb.AttributeProto{
		{Name: "comm_type", Value: &etpb.AttributeProto_Int64Val{Int64Val: int64(etpb.CollectiveCommType_BARRIER)}}}})
	dir := t.TempDir()
	prefix := filepath.Join(dir, "dp")
	for _, name := range []string{"dp.0.et", "dp.1.et", "dp.x.et", "dp.03.et", "pp.5.et"} {
		if err := os.WriteFile(filepath.Join(dir, name), barrier, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := Read(prefix)
	if err != nil || len(tr.Ranks) != 2 {
		t.Fatalf("read %v, %v; want 2 ranks", tr, err)
	}
	if err := os.Remove(filepath.Join(dir, "dp.1.et")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dp.2.et"), barrier, 0o644); err != nil {
		t.Fatal(err)
	}
	want := "chakra: " + prefix + ": " + prefix + ".1.et is missing, but " + prefix + ".2.et exists"
	if _, err := Read(prefix); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err %v, want %s", err, want)
	}
}
