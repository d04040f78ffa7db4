// Package chakra reads and writes Chakra execution traces (ASTRA-sim's workload format,
// mlcommons/chakra) and checks them for a run: one file per rank, `<prefix>.<rank>.et`, each a
// stream of messages, every message a protobuf varint of its length followed by that many
// bytes, the first a GlobalMetadata and every later one a Node (schema: etpb/et_def.proto).
//
// A rank's nodes form a DAG through ctrl_deps and data_deps (both are ordering constraints
// here). Computation (COMP_NODE, and the memory, metadata, batch and checkpoint node types)
// runs as a delay of duration_micros; COMM_COLL_NODE is a collective over a process group,
// COMM_SEND_NODE and COMM_RECV_NODE a point-to-point message (Match pairs them across ranks).
// The runner (runner/chakra.go) executes a Trace through the collective executor.
package chakra

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/chakra/etpb"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// Bounds on a trace, checked before anything is allocated for the values they bound.
const (
	// MaxMessageBytes bounds one message of a trace file (its varint length prefix).
	MaxMessageBytes = 1 << 20
	// MaxNodes bounds the nodes of one rank's file.
	MaxNodes = 1 << 20
	// MaxTotalNodes bounds the nodes of a whole trace (all ranks).
	MaxTotalNodes = 1 << 22
	// MaxRanks bounds the ranks (files) of a trace.
	MaxRanks = 4096
	// MaxDurationMicros bounds a node's duration_micros (1000 s).
	MaxDurationMicros = 1_000_000_000
	// MaxCommBytes bounds a node's comm_size (1 TiB).
	MaxCommBytes = 1 << 40
	// MaxTag bounds comm_tag's magnitude.
	MaxTag = 1 << 40
)

// Node is one node of a rank's trace, with the attributes lockstep runs on: its id (unique in
// the file), name and type as in the file.
type Node struct {
	ID   uint64
	Name string
	Type etpb.NodeType
	// Deps are the node's ctrl_deps then data_deps, duplicates removed: node ids of the same
	// rank that must complete before this one starts.
	Deps []uint64
	// Duration is duration_micros as simulated time (computation and memory nodes).
	Duration sim.Time
	// Comm is the comm_type of a COMM_COLL_NODE as a collective operation.
	Comm collective.Collective
	// Bytes is comm_size: a collective's size S as workload.collectives takes it (all-reduce,
	// broadcast, reduce: the buffer; all-gather: the output; reduce-scatter: the input;
	// all-to-all: what each rank sends) or a send/recv message's payload.
	Bytes int64
	// Peer is a send's comm_dst or a recv's comm_src, a rank of the trace.
	Peer int
	// Tag is comm_tag (0 when absent): sends and receives of one (src, dst) pair match in
	// order within a tag.
	Tag int64
	// Group is pg_name, the process group of a collective ("" = every rank of the trace).
	Group string
}

// IsComm reports whether the node is a collective, a send or a receive.
func (n *Node) IsComm() bool {
	return n.Type == etpb.NodeType_COMM_COLL_NODE || n.Type == etpb.NodeType_COMM_SEND_NODE || n.Type == etpb.NodeType_COMM_RECV_NODE
}

// Rank is one rank's file: its name (as given to ReadRank), the GlobalMetadata version, and
// its nodes in file order.
type Rank struct {
	File    string
	Version string
	Nodes   []Node
	index   map[uint64]int32 // node id -> position in Nodes
}

// Index returns the position in Nodes of the node with id, or -1.
func (r *Rank) Index(id uint64) int {
	if i, ok := r.index[id]; ok {
		return int(i)
	}
	return -1
}

// commOps maps Chakra's CollectiveCommType onto the collectives lockstep runs; BARRIER runs
// as a zero-byte all-reduce. GATHER, SCATTER and REDUCE_SCATTER_BLOCK are not supported.
var commOps = map[etpb.CollectiveCommType]collective.Collective{
	etpb.CollectiveCommType_ALL_REDUCE:     collective.AllReduce,
	etpb.CollectiveCommType_REDUCE:         collective.Reduce,
	etpb.CollectiveCommType_ALL_GATHER:     collective.AllGather,
	etpb.CollectiveCommType_BROADCAST:      collective.Broadcast,
	etpb.CollectiveCommType_ALL_TO_ALL:     collective.AllToAll,
	etpb.CollectiveCommType_REDUCE_SCATTER: collective.ReduceScatter,
	etpb.CollectiveCommType_BARRIER:        collective.AllReduce,
}

// commTypeOf is the inverse of commOps for the writer (BARRIER aside).
func commTypeOf(op collective.Collective) (etpb.CollectiveCommType, bool) {
	for k, v := range commOps {
		if v == op && k != etpb.CollectiveCommType_BARRIER {
			return k, true
		}
	}
	return 0, false
}

// ReadFile reads one rank's trace file (ReadRank).
func ReadFile(path string) (*Rank, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("chakra: %w", err)
	}
	defer f.Close()
	return ReadRank(f, path)
}

// ReadRank reads one rank's stream from r; file names it in errors. It checks the stream
// (lengths within MaxMessageBytes, at most MaxNodes nodes, every message whole), each node
// (a known type, its attributes in range) and the DAG (unique ids, dependencies on nodes of
// the file, no cycle). Errors name the file, the node's index in the file and its id.
func ReadRank(r io.Reader, file string) (*Rank, error) {
	br := bufio.NewReader(r)
	rk := &Rank{File: file, index: map[uint64]int32{}}
	var buf []byte
	var off int64
	for msg := 0; ; msg++ {
		n, err := binary.ReadUvarint(br)
		if err == io.EOF {
			if msg == 0 {
				return nil, fmt.Errorf("%s: empty file; a Chakra trace starts with a GlobalMetadata message", file)
			}
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: byte %d: message %d: bad length prefix: %v", file, off, msg, noEOF(err))
		}
		if n > MaxMessageBytes {
			return nil, fmt.Errorf("%s: byte %d: message %d is %d bytes; allowed up to %d", file, off, msg, n, MaxMessageBytes)
		}
		if msg > MaxNodes {
			return nil, fmt.Errorf("%s: more than %d nodes; allowed up to %d per rank", file, MaxNodes, MaxNodes)
		}
		off += int64(uvarintLen(n))
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return nil, fmt.Errorf("%s: byte %d: message %d truncated: %d bytes announced: %v", file, off, msg, n, noEOF(err))
		}
		if msg == 0 {
			var md etpb.GlobalMetadata
			if err := proto.Unmarshal(buf, &md); err != nil {
				return nil, fmt.Errorf("%s: byte %d: GlobalMetadata (message 0): %v", file, off, err)
			}
			rk.Version = md.GetVersion()
		} else {
			var pn etpb.Node
			if err := proto.Unmarshal(buf, &pn); err != nil {
				return nil, fmt.Errorf("%s: byte %d: node index %d (message %d): %v", file, off, msg-1, msg, err)
			}
			nd, err := convert(&pn)
			if err != nil {
				return nil, fmt.Errorf("%s: node index %d (id %d, %q): %v", file, msg-1, pn.GetId(), pn.GetName(), err)
			}
			if _, dup := rk.index[nd.ID]; dup {
				return nil, fmt.Errorf("%s: node index %d: id %d repeats node index %d's", file, msg-1, nd.ID, rk.index[nd.ID])
			}
			rk.index[nd.ID] = int32(len(rk.Nodes))
			rk.Nodes = append(rk.Nodes, nd)
		}
		off += int64(n)
	}
	if err := rk.checkDAG(); err != nil {
		return nil, err
	}
	return rk, nil
}

// noEOF turns a bare EOF inside a message into ErrUnexpectedEOF's text.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func uvarintLen(n uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], n)
}

// convert checks a decoded node and keeps what lockstep runs on.
func convert(pn *etpb.Node) (Node, error) {
	nd := Node{ID: pn.GetId(), Name: pn.GetName(), Type: pn.GetType()}
	if _, ok := etpb.NodeType_name[int32(nd.Type)]; !ok || nd.Type == etpb.NodeType_INVALID_NODE {
		return nd, fmt.Errorf("type = %d: not a node type; allowed COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE, MEM_LOAD_NODE, MEM_STORE_NODE, METADATA_NODE, BATCH_NODE, CHECKPOINT_NODE, STORAGE_NODE", nd.Type)
	}
	d := pn.GetDurationMicros()
	if d > MaxDurationMicros {
		return nd, fmt.Errorf("duration_micros = %d; allowed up to %d", d, MaxDurationMicros)
	}
	nd.Duration = sim.Time(d) * sim.Microsecond
	seen := map[uint64]bool{}
	for _, list := range [][]uint64{pn.GetCtrlDeps(), pn.GetDataDeps()} {
		for _, d := range list {
			if d == nd.ID {
				return nd, fmt.Errorf("depends on itself")
			}
			if !seen[d] {
				seen[d] = true
				nd.Deps = append(nd.Deps, d)
			}
		}
	}
	attrs := map[string]*etpb.AttributeProto{}
	for _, a := range pn.GetAttr() {
		attrs[a.GetName()] = a
	}
	integer := func(name string, lo, hi int64, need bool) (int64, error) {
		a, ok := attrs[name]
		if !ok {
			if need {
				return 0, fmt.Errorf("attribute %s missing; a %s needs it", name, nd.Type)
			}
			return 0, nil
		}
		v, ok := intValue(a)
		if !ok {
			return 0, fmt.Errorf("attribute %s is not an integer", name)
		}
		if v < lo || v > hi {
			return 0, fmt.Errorf("attribute %s = %d; allowed %d to %d", name, v, lo, hi)
		}
		return v, nil
	}
	if !nd.IsComm() {
		return nd, nil
	}
	var err error
	if nd.Bytes, err = integer("comm_size", 0, MaxCommBytes, false); err != nil {
		return nd, err
	}
	if nd.Tag, err = integer("comm_tag", -MaxTag, MaxTag, false); err != nil {
		return nd, err
	}
	if a, ok := attrs["pg_name"]; ok {
		nd.Group = a.GetStringVal()
	}
	switch nd.Type {
	case etpb.NodeType_COMM_COLL_NODE:
		ct, err := integer("comm_type", 0, 1<<30, true)
		if err != nil {
			return nd, err
		}
		op, ok := commOps[etpb.CollectiveCommType(ct)]
		if !ok {
			return nd, fmt.Errorf("attribute comm_type = %d (%s) is not supported; allowed ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER, BARRIER", ct, etpb.CollectiveCommType(ct))
		}
		nd.Comm = op
		if etpb.CollectiveCommType(ct) == etpb.CollectiveCommType_BARRIER {
			nd.Bytes = 0
		} else if _, ok := attrs["comm_size"]; !ok {
			return nd, fmt.Errorf("attribute comm_size missing; a %s collective needs its bytes (only BARRIER moves none)", etpb.CollectiveCommType(ct))
		}
	case etpb.NodeType_COMM_SEND_NODE:
		p, err := integer("comm_dst", 0, MaxRanks-1, true)
		if err != nil {
			return nd, err
		}
		nd.Peer = int(p)
	case etpb.NodeType_COMM_RECV_NODE:
		p, err := integer("comm_src", 0, MaxRanks-1, true)
		if err != nil {
			return nd, err
		}
		nd.Peer = int(p)
	}
	return nd, nil
}

// intValue returns an attribute's integer value, whichever integer field of the oneof holds
// it (converters differ: comm_type is an int64_val, comm_src an int32_val).
func intValue(a *etpb.AttributeProto) (int64, bool) {
	switch v := a.GetValue().(type) {
	case *etpb.AttributeProto_Int32Val:
		return int64(v.Int32Val), true
	case *etpb.AttributeProto_Int64Val:
		return v.Int64Val, true
	case *etpb.AttributeProto_Uint32Val:
		return int64(v.Uint32Val), true
	case *etpb.AttributeProto_Uint64Val:
		if v.Uint64Val > 1<<62 {
			return 1 << 62, true
		}
		return int64(v.Uint64Val), true
	case *etpb.AttributeProto_Sint32Val:
		return int64(v.Sint32Val), true
	case *etpb.AttributeProto_Sint64Val:
		return v.Sint64Val, true
	case *etpb.AttributeProto_Fixed32Val:
		return int64(v.Fixed32Val), true
	case *etpb.AttributeProto_Fixed64Val:
		if v.Fixed64Val > 1<<62 {
			return 1 << 62, true
		}
		return int64(v.Fixed64Val), true
	case *etpb.AttributeProto_Sfixed32Val:
		return int64(v.Sfixed32Val), true
	case *etpb.AttributeProto_Sfixed64Val:
		return v.Sfixed64Val, true
	}
	return 0, false
}

// checkDAG checks that every dependency names a node of the file and that the nodes have no
// cycle (Kahn's algorithm); a cycle's error names up to 8 of the node ids left on it.
func (r *Rank) checkDAG() error {
	left := make([]int32, len(r.Nodes))
	succ := make([][]int32, len(r.Nodes))
	for i := range r.Nodes {
		for _, d := range r.Nodes[i].Deps {
			j, ok := r.index[d]
			if !ok {
				return fmt.Errorf("%s: node index %d (id %d, %q): depends on id %d, which is not in the file", r.File, i, r.Nodes[i].ID, r.Nodes[i].Name, d)
			}
			left[i]++
			succ[j] = append(succ[j], int32(i))
		}
	}
	var q []int32
	for i, k := range left {
		if k == 0 {
			q = append(q, int32(i))
		}
	}
	done := 0
	for len(q) > 0 {
		i := q[len(q)-1]
		q = q[:len(q)-1]
		done++
		for _, s := range succ[i] {
			if left[s]--; left[s] == 0 {
				q = append(q, s)
			}
		}
	}
	if done == len(r.Nodes) {
		return nil
	}
	var ids []string
	for i, k := range left {
		if k > 0 && len(ids) < 8 {
			ids = append(ids, strconv.FormatUint(r.Nodes[i].ID, 10))
		}
	}
	return fmt.Errorf("%s: the dependencies form a cycle: %d nodes never become ready (ids %v...)", r.File, len(r.Nodes)-done, ids)
}

// Trace is every rank's file of one trace: Ranks[r] read from FileName(Prefix, r).
type Trace struct {
	Prefix string
	Ranks  []*Rank
}

// FileName returns the file of rank r of the trace at prefix: "<prefix>.<r>.et".
func FileName(prefix string, r int) string { return prefix + "." + strconv.Itoa(r) + ".et" }

// Read reads the trace at prefix: files prefix.0.et, prefix.1.et, ... up to the first rank
// with no file (at most MaxRanks), each by ReadFile, and at most MaxTotalNodes nodes in all.
// Errors: no prefix.0.et, a gap in the ranks (a prefix.<r>.et beyond the first missing
// rank, named), a file's own errors.
func Read(prefix string) (*Trace, error) {
	t := &Trace{Prefix: prefix}
	total := 0
	for r := 0; ; r++ {
		name := FileName(prefix, r)
		if _, err := os.Stat(name); err != nil {
			if r == 0 {
				return nil, fmt.Errorf("chakra: no trace at %s: %w", prefix, err)
			}
			break
		}
		if r == MaxRanks {
			return nil, fmt.Errorf("chakra: %s: more than %d ranks; allowed up to %d", prefix, MaxRanks, MaxRanks)
		}
		rk, err := ReadFile(name)
		if err != nil {
			return nil, err
		}
		if total += len(rk.Nodes); total > MaxTotalNodes {
			return nil, fmt.Errorf("chakra: %s: more than %d nodes over its ranks; allowed up to %d", prefix, MaxTotalNodes, MaxTotalNodes)
		}
		t.Ranks = append(t.Ranks, rk)
	}
	if hi, name := highestRank(prefix); hi >= len(t.Ranks) {
		return nil, fmt.Errorf("chakra: %s: %s is missing, but %s exists; a trace's ranks are files %s to %s with no gap", prefix, FileName(prefix, len(t.Ranks)), name, FileName(prefix, 0), FileName(prefix, hi))
	}
	return t, nil
}

// highestRank returns the highest rank r with a file "<prefix>.<r>.et" (r decimal, below
// MaxRanks) in prefix's folder and that file's path; -1 when there is none or the folder
// does not read.
func highestRank(prefix string) (int, string) {
	dir, base := filepath.Split(prefix)
	entries, err := os.ReadDir(filepath.Clean(dir + "."))
	if err != nil {
		return -1, ""
	}
	hi, name := -1, ""
	for _, e := range entries {
		r, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok {
			continue
		}
		r, ok = strings.CutSuffix(r, ".et")
		n, err := strconv.Atoi(r)
		if !ok || err != nil || n < 0 || n >= MaxRanks || strconv.Itoa(n) != r {
			continue
		}
		if n > hi {
			hi, name = n, filepath.Join(dir, e.Name())
		}
	}
	return hi, name
}
