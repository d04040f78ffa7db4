package chakra

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/chakra/etpb"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// Version is the GlobalMetadata version the writer records.
const Version = "0.0.4"

// Writer writes one rank's trace stream: the GlobalMetadata first (NewWriter), then nodes.
type Writer struct {
	w   *bufio.Writer
	buf []byte
	err error
}

// NewWriter starts a stream on w with a GlobalMetadata of version Version.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{w: bufio.NewWriter(w)}
	wr.message(&etpb.GlobalMetadata{Version: Version})
	return wr
}

// message appends one length-delimited message.
func (w *Writer) message(m proto.Message) {
	if w.err != nil {
		return
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		w.err = err
		return
	}
	if len(b) > MaxMessageBytes {
		w.err = fmt.Errorf("chakra: a message of %d bytes; the reader allows up to %d", len(b), MaxMessageBytes)
		return
	}
	w.buf = binary.AppendUvarint(w.buf[:0], uint64(len(b)))
	if _, err := w.w.Write(w.buf); err != nil {
		w.err = err
		return
	}
	_, w.err = w.w.Write(b)
}

// Node writes n: its dependencies as data_deps, its duration in whole microseconds
// (rounded down), and for communication nodes comm_type (int64_val), comm_size (int64_val),
// comm_src or comm_dst and comm_tag (int32_val), pg_name (string_val), as Chakra's
// converters write them. Errors: an operation Chakra has no comm_type for, a tag beyond
// int32, and the stream's write errors.
func (w *Writer) Node(n *Node) error {
	pn := &etpb.Node{Id: n.ID, Name: n.Name, Type: n.Type, DataDeps: n.Deps, DurationMicros: uint64(n.Duration / sim.Microsecond)}
	i64 := func(name string, v int64) *etpb.AttributeProto {
		return &etpb.AttributeProto{Name: name, Value: &etpb.AttributeProto_Int64Val{Int64Val: v}}
	}
	i32 := func(name string, v int) *etpb.AttributeProto {
		return &etpb.AttributeProto{Name: name, Value: &etpb.AttributeProto_Int32Val{Int32Val: int32(v)}}
	}
	if n.IsComm() {
		if n.Tag != int64(int32(n.Tag)) {
			return fmt.Errorf("chakra: node %d: comm_tag %d does not fit an int32_val", n.ID, n.Tag)
		}
		switch n.Type {
		case etpb.NodeType_COMM_COLL_NODE:
			ct, ok := commTypeOf(n.Comm)
			if !ok {
				return fmt.Errorf("chakra: node %d: %s has no Chakra comm_type", n.ID, n.Comm)
			}
			pn.Attr = append(pn.Attr, i64("comm_type", int64(ct)))
		case etpb.NodeType_COMM_SEND_NODE:
			pn.Attr = append(pn.Attr, i32("comm_dst", n.Peer))
		case etpb.NodeType_COMM_RECV_NODE:
			pn.Attr = append(pn.Attr, i32("comm_src", n.Peer))
		}
		pn.Attr = append(pn.Attr, i64("comm_size", n.Bytes), i32("comm_tag", int(n.Tag)))
		if n.Group != "" {
			pn.Attr = append(pn.Attr, &etpb.AttributeProto{Name: "pg_name", Value: &etpb.AttributeProto_StringVal{StringVal: n.Group}})
		}
	}
	w.message(pn)
	return w.err
}

// Flush writes what is buffered and returns the first error of the stream.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	return w.w.Flush()
}

// WriteTrace writes ranks[r] to FileName(prefix, r), creating prefix's folder.
func WriteTrace(prefix string, ranks [][]Node) error {
	if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
		return fmt.Errorf("chakra: %w", err)
	}
	for r, nodes := range ranks {
		f, err := os.Create(FileName(prefix, r))
		if err != nil {
			return fmt.Errorf("chakra: %w", err)
		}
		w := NewWriter(f)
		for i := range nodes {
			if err := w.Node(&nodes[i]); err != nil {
				f.Close()
				return err
			}
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return fmt.Errorf("chakra: %s: %w", f.Name(), err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("chakra: %w", err)
		}
	}
	return nil
}

// DataParallel describes one data-parallel training step: a forward pass, the backward pass
// in Buckets equal parts, each part's gradients all-reduced as one bucket (comm_size
// BucketBytes) once the part is computed and the previous bucket's all-reduce is done (DDP's
// buckets, in order), then the optimizer once every bucket is reduced. Durations are whole
// microseconds.
//
// When each backward part is no longer than one bucket's all-reduce T, the buckets run back
// to back and the step takes Forward + Backward + Buckets x T + Optimizer.
type DataParallel struct {
	Ranks       int
	Buckets     int
	BucketBytes int64
	Forward     sim.Time // the forward pass
	Backward    sim.Time // each backward part
	Optimizer   sim.Time
}

// Nodes returns every rank's nodes (the same on each): ids 1 (forward), 2..Buckets+1 (the
// backward parts), then the all-reduces, then the optimizer.
func (d DataParallel) Nodes() [][]Node {
	var nodes []Node
	comp := func(id uint64, name string, dur sim.Time, deps ...uint64) {
		nodes = append(nodes, Node{ID: id, Name: name, Type: etpb.NodeType_COMP_NODE, Duration: dur, Deps: deps})
	}
	comp(1, "forward", d.Forward)
	k := uint64(d.Buckets)
	for b := uint64(0); b < k; b++ {
		comp(2+b, fmt.Sprintf("backward_%d", b), d.Backward, 1+b)
	}
	for b := uint64(0); b < k; b++ {
		deps := []uint64{2 + b}
		if b > 0 {
			deps = append(deps, 2+k+b-1)
		}
		nodes = append(nodes, Node{ID: 2 + k + b, Name: fmt.Sprintf("all_reduce_bucket_%d", b), Type: etpb.NodeType_COMM_COLL_NODE,
			Comm: collective.AllReduce, Bytes: d.BucketBytes, Deps: deps})
	}
	comp(2+2*k, "optimizer", d.Optimizer, 2+2*k-1)
	out := make([][]Node, d.Ranks)
	for r := range out {
		out[r] = nodes
	}
	return out
}

// Pipeline describes one GPipe training step over Stages ranks (stage s on rank s):
// Microbatches forward passes of Forward each per stage, the activations (ActivationBytes)
// sent to the next stage after each, then the backward passes of Backward each in the same
// microbatch order from the last stage back, the gradients (ActivationBytes) sent to the
// previous stage; a stage starts its backward passes after its last forward. Every send and
// receive of one stage pair and direction carries the microbatch number as comm_tag.
//
// With a transfer time t no longer than Forward or Backward, the step takes
// (Microbatches + Stages - 1) x (Forward + Backward) + 2 (Stages - 1) t.
type Pipeline struct {
	Stages          int
	Microbatches    int
	ActivationBytes int64
	Forward         sim.Time
	Backward        sim.Time
}

// Nodes returns every stage's nodes.
func (p Pipeline) Nodes() [][]Node {
	out := make([][]Node, p.Stages)
	m := uint64(p.Microbatches)
	for s := range out {
		var nodes []Node
		add := func(n Node) { nodes = append(nodes, n) }
		// ids per microbatch j: forward recv 10j+1, forward 10j+2, forward send 10j+3,
		// backward recv 10j+4, backward 10j+5, backward send 10j+6.
		id := func(j uint64, k uint64) uint64 { return 10*j + k }
		first, last := s == 0, s == p.Stages-1
		for j := uint64(0); j < m; j++ {
			var deps []uint64
			if !first {
				var rdeps []uint64
				if j > 0 {
					rdeps = append(rdeps, id(j-1, 1))
				}
				add(Node{ID: id(j, 1), Name: fmt.Sprintf("recv_act_mb%d", j), Type: etpb.NodeType_COMM_RECV_NODE, Peer: s - 1, Tag: int64(j), Bytes: p.ActivationBytes, Deps: rdeps})
				deps = append(deps, id(j, 1))
			}
			if j > 0 {
				deps = append(deps, id(j-1, 2))
			}
			add(Node{ID: id(j, 2), Name: fmt.Sprintf("forward_mb%d", j), Type: etpb.NodeType_COMP_NODE, Duration: p.Forward, Deps: deps})
			if !last {
				sdeps := []uint64{id(j, 2)}
				if j > 0 {
					sdeps = append(sdeps, id(j-1, 3))
				}
				add(Node{ID: id(j, 3), Name: fmt.Sprintf("send_act_mb%d", j), Type: etpb.NodeType_COMM_SEND_NODE, Peer: s + 1, Tag: int64(j), Bytes: p.ActivationBytes, Deps: sdeps})
			}
		}
		for j := uint64(0); j < m; j++ {
			deps := []uint64{id(m-1, 2)}
			if !last {
				var rdeps []uint64
				if j > 0 {
					rdeps = append(rdeps, id(j-1, 4))
				}
				add(Node{ID: id(j, 4), Name: fmt.Sprintf("recv_grad_mb%d", j), Type: etpb.NodeType_COMM_RECV_NODE, Peer: s + 1, Tag: int64(j), Bytes: p.ActivationBytes, Deps: rdeps})
				deps = append(deps, id(j, 4))
			}
			if j > 0 {
				deps = append(deps, id(j-1, 5))
			}
			add(Node{ID: id(j, 5), Name: fmt.Sprintf("backward_mb%d", j), Type: etpb.NodeType_COMP_NODE, Duration: p.Backward, Deps: deps})
			if !first {
				sdeps := []uint64{id(j, 5)}
				if j > 0 {
					sdeps = append(sdeps, id(j-1, 6))
				}
				add(Node{ID: id(j, 6), Name: fmt.Sprintf("send_grad_mb%d", j), Type: etpb.NodeType_COMM_SEND_NODE, Peer: s - 1, Tag: int64(j), Bytes: p.ActivationBytes, Deps: sdeps})
			}
		}
		out[s] = nodes
	}
	return out
}

// The test traces shipped in testdata/ (regenerated by `go test ./workload/chakra -run
// TestTestdata -update`).
var (
	// TestDataParallel is testdata/dp16/dp: 16 ranks, 4 buckets of 4 MiB.
	TestDataParallel = DataParallel{Ranks: 16, Buckets: 4, BucketBytes: 4 << 20, Forward: 100 * sim.Microsecond, Backward: 50 * sim.Microsecond, Optimizer: 20 * sim.Microsecond}
	// TestPipeline is testdata/pp4/pp: 4 stages, 8 microbatches of 1 MiB activations.
	TestPipeline = Pipeline{Stages: 4, Microbatches: 8, ActivationBytes: 1 << 20, Forward: 200 * sim.Microsecond, Backward: 400 * sim.Microsecond}
)
