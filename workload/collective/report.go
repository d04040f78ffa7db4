package collective

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/lockstepsim/lockstep/sim"
)

// DType is an element type, for the "count" and "type" columns of nccl-tests style reports.
type DType uint8

// Element types, named as nccl-tests prints them. Float32 ("float", 4 bytes) is nccl-tests'
// default (-d float) and lockstep's; BFloat16 (2 bytes) is what most training all-reduces
// carry.
const (
	Float32 DType = iota
	BFloat16
	Float16
	Float64
	Int8
	numDTypes
)

var dtypeInfo = [numDTypes]struct {
	name string
	size int
}{{"float", 4}, {"bfloat16", 2}, {"half", 2}, {"double", 8}, {"int8", 1}}

// String returns the nccl-tests name ("float", "bfloat16", "half", "double", "int8").
func (d DType) String() string {
	if d < numDTypes {
		return dtypeInfo[d].name
	}
	return fmt.Sprintf("dtype(%d)", d)
}

// Size returns the element size in bytes (0 for an unknown type).
func (d DType) Size() int {
	if d < numDTypes {
		return dtypeInfo[d].size
	}
	return 0
}

// ParseDType parses a name as String prints it; "float32", "fp32", "bf16", "fp16", "float16"
// and "fp64" are accepted too.
func ParseDType(s string) (DType, error) {
	switch normName(s) {
	case "float", "float32", "fp32":
		return Float32, nil
	case "bfloat16", "bf16":
		return BFloat16, nil
	case "half", "float16", "fp16":
		return Float16, nil
	case "double", "float64", "fp64":
		return Float64, nil
	case "int8":
		return Int8, nil
	}
	return 0, fmt.Errorf("collective: unknown dtype %q; want float, bfloat16, half, double or int8", s)
}

// BusFactor returns nccl-tests' bus-bandwidth factor for op on n ranks (doc/PERFORMANCE.md):
// all-reduce 2(n-1)/n; reduce-scatter, all-gather and all-to-all (n-1)/n; broadcast, reduce
// and send/recv 1. busbw = algbw x factor is comparable to the per-rank link rate whatever n.
// n < 1 gives 0.
func BusFactor(op Collective, n int) float64 {
	if n < 1 {
		return 0
	}
	f := float64(n-1) / float64(n)
	switch op {
	case AllReduce:
		return 2 * f
	case ReduceScatter, AllGather, AllToAll:
		return f
	default:
		return 1
	}
}

// Row is one line of an nccl-tests style report. Bytes is the size S as defined per operation
// on Collective (reduce-scatter and all-gather: the total buffer, each rank holding S/n;
// all-to-all: what each rank sends); Count = Bytes / Type.Size() elements, as nccl-tests'
// count column. Time is when the last rank finished minus the launch (nccl-tests reports the
// mean over iterations of the slowest rank's time; one simulated run has no noise). AlgBW =
// S / Time and BusBW = AlgBW x BusFactor, both in GB/s (1e9 bytes per second). Model is a
// closed-form prediction to compare with (0 when none).
type Row struct {
	Name  string     // the collective's label (first CSV column; "" prints as the op)
	Op    Collective // the operation
	Algo  Algorithm  // resolved, never Auto
	Ranks int        // n
	Bytes int64      // S, bytes
	Count int64      // elements per rank, nccl-tests' count column: S / type size, divided by n for all_gather, reduce_scatter and all_to_all
	Type  DType      // element type for Count
	Root  int        // -1 when the operation has no root; the sender for send/recv
	Time  sim.Time   // simulated duration of the collective
	AlgBW float64    // S / Time, GB/s
	BusBW float64    // AlgBW x BusFactor(Op, Ranks), GB/s
	Model sim.Time   // closed-form prediction, 0 if none
	// Split, when the ranks sit in scale-up domains (the runner sets it), is the payload each
	// rank sends inside its domain and over the fabric (Schedule.DomainBytes); nil without
	// domains. It adds collectives.csv's last two columns, not the table's.
	Split *DomainSplit
}

// NewRow fills a Row for a collective of spec (Auto resolved, as in Schedule.Spec) that took
// t, counting elements of dt.
func NewRow(spec Spec, t sim.Time, dt DType) Row {
	r := Row{Op: spec.Op, Algo: spec.Algo, Ranks: spec.Ranks, Bytes: spec.Bytes, Type: dt, Root: -1, Time: t}
	if sz := dt.Size(); sz > 0 {
		r.Count = spec.Bytes / int64(sz)
		if (spec.Op == AllGather || spec.Op == ReduceScatter || spec.Op == AllToAll) && spec.Ranks > 0 {
			r.Count /= int64(spec.Ranks) // nccl-tests prints the per-rank count for these
		}
	}
	if spec.Op == Broadcast || spec.Op == Reduce || spec.Op == SendRecv {
		r.Root = spec.Root
	}
	if t > 0 {
		r.AlgBW = float64(spec.Bytes) / t.Seconds() / 1e9
		r.BusBW = r.AlgBW * BusFactor(spec.Op, spec.Ranks)
	}
	return r
}

// RedOp returns the reduction operator column: "sum" for reducing operations, else "none".
func (r Row) RedOp() string {
	if r.Op.Reduces() {
		return "sum"
	}
	return "none"
}

func micros(t sim.Time) string { return strconv.FormatFloat(t.Micros(), 'f', 2, 64) }

func (r Row) fields() []string {
	model := ""
	if r.Model > 0 {
		model = micros(r.Model)
	}
	return []string{
		strconv.FormatInt(r.Bytes, 10), strconv.FormatInt(r.Count, 10), r.Type.String(), r.RedOp(),
		strconv.Itoa(r.Root), r.Op.String(), r.Algo.String(), strconv.Itoa(r.Ranks), micros(r.Time),
		strconv.FormatFloat(r.AlgBW, 'f', 2, 64), strconv.FormatFloat(r.BusBW, 'f', 2, 64), model,
	}
}

var tableHeader = []string{"size(B)", "count(elems)", "type", "redop", "root", "op", "algorithm", "ranks", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "model(us)"}

// CSVHeader is the header line WriteCSV writes; units are in the names. After nccl-tests'
// columns and model_us: the most payload one rank sends inside its scale-up domain and over
// the fabric (empty without scale-up domains).
var CSVHeader = []string{"name", "size_bytes", "count", "type", "redop", "root", "op", "algorithm", "ranks", "time_us", "algbw_GBps", "busbw_GBps", "model_us",
	"scale_up_bytes_per_rank_max", "fabric_bytes_per_rank_max"}

// WriteTable renders rows as an aligned text table in nccl-tests' column order (size, count,
// type, redop, root, then op, algorithm, ranks, time, algbw, busbw and the model time),
// followed by nccl-tests' "Avg bus bandwidth" line. Errors: the writer's.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "#"+strings.Join(tableHeader, "\t")+"\t")
	var sum float64
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.fields(), "\t")+"\t")
		sum += r.BusBW
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rows) > 0 {
		_, err := fmt.Fprintf(w, "# Avg bus bandwidth    : %.2f GB/s\n", sum/float64(len(rows)))
		return err
	}
	return nil
}

// WriteCSV writes rows as CSV with the CSVHeader line first: the row's name (its op when
// unnamed), then the table's columns, then the scale-up / fabric split (Row.Split). Times are in microseconds,
// bandwidths in GB/s, an empty model_us means no model. Errors: the writer's.
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	for _, r := range rows {
		name := r.Name
		if name == "" {
			name = r.Op.String()
		}
		up, fab := "", ""
		if r.Split != nil {
			up, fab = strconv.FormatInt(r.Split.ScaleUpMax, 10), strconv.FormatInt(r.Split.FabricMax, 10)
		}
		if err := cw.Write(append(append([]string{name}, r.fields()...), up, fab)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// Sizes returns the sizes of an nccl-tests sweep (-b min -e max -f factor): min, min*factor,
// ... up to and including max. Sizes(1<<20, 1<<30, 2) is 1 MiB..1 GiB doubling (11 sizes).
// Errors: min < 1, max < min, factor < 2.
func Sizes(min, max int64, factor int) ([]int64, error) {
	if min < 1 {
		return nil, fieldError("sweep.min_bytes", min, "must be >= 1")
	}
	if max < min {
		return nil, fieldError("sweep.max_bytes", max, fmt.Sprintf("must be >= min_bytes (%d)", min))
	}
	if factor < 2 {
		return nil, fieldError("sweep.factor", factor, "must be >= 2")
	}
	var out []int64
	for s := min; s <= max; {
		out = append(out, s)
		if s > max/int64(factor) {
			break
		}
		s *= int64(factor)
	}
	return out, nil
}

// SweepIdeal runs base at each size on an Ideal network (RunIdeal) and returns one row per
// size, with the closed form of AlphaBeta as Model (Pipelined where it applies). Errors: the
// first failing size's, naming it.
func SweepIdeal(base Spec, sizes []int64, m Model, dt DType, seed uint64) ([]Row, error) {
	rows := make([]Row, 0, len(sizes))
	for _, sz := range sizes {
		sp := base
		sp.Bytes = sz
		res, err := RunIdeal(sp, m, seed)
		if err != nil {
			return nil, fmt.Errorf("size %d: %w", sz, err)
		}
		row := NewRow(res.Spec, res.Time(), dt)
		if t, err := Pipelined(res.Spec, m); err == nil {
			row.Model = t
		} else if t, err := AlphaBeta(res.Spec, m); err == nil {
			row.Model = t
		}
		rows = append(rows, row)
	}
	return rows, nil
}
