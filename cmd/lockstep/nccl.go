package main

// lockstep nccl: nccl-tests' command line and output over a simulated fabric.
//
// The command is a thin layer over the collective workload: it turns nccl-tests' flags into a
// scenario (the base fabric plus one workload.collectives entry over the sizes), runs it
// through the same runner as lockstep run, and prints the rows in nccl-tests' table, so
// existing parsers of nccl-tests output read it. --print-scenario shows the scenario; lockstep
// run of it gives the same times.
//
// Sources (facts and formats, no code):
//   - nccl-tests README.md (github.com/NVIDIA/nccl-tests, the version documenting -J): the
//     flags -t -g -b -e -i -f -o -d -r -n -w -m -c -G -J and the others accepted here, and
//     their defaults (-b and -e 32M, -i 1M, -f disabled, -n 20, -w 1, -m 1, -c 1, -o sum,
//     -d float, -r 0).
//   - nccl-tests src/util.cu (writeDeviceReport, writeResultHeader, writeBenchmarkLinePreamble,
//     writeBenchmarkLineBody, getFloatStr, writeResultFooter and the JSON writer used by -J,
//     nccl-tests 2.14 and later): the header lines, the column widths, the number formatting,
//     the two footer lines and the JSON keys.
//   - nccl-tests doc/PERFORMANCE.md: algbw = S / t and the bus bandwidth factors (all-reduce
//     2(n-1)/n; reduce-scatter, all-gather, all-to-all (n-1)/n; broadcast, reduce 1), which
//     collective.BusFactor implements.
//   - nccl-tests src/*.cu GetCollByteCount: how a size becomes the element counts (all-gather,
//     reduce-scatter and all-to-all round the per-rank count down to a multiple of 16 bytes).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/workload/collective"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// ncclOp is one nccl-tests benchmark lockstep runs: its binary's name (without _perf), the
// collective and whether its per-rank count is rounded to 16 bytes (the ops whose size is
// split over the ranks).
type ncclOp struct {
	name    string // nccl-tests' name: all_reduce, alltoall, sendrecv
	op      collective.Collective
	perRank bool // size is n x the per-rank count (all_gather, reduce_scatter, alltoall)
}

// ncclOps are the benchmarks the collective executor runs, in nccl-tests' names.
var ncclOps = []ncclOp{
	{"all_reduce", collective.AllReduce, false},
	{"all_gather", collective.AllGather, true},
	{"reduce_scatter", collective.ReduceScatter, true},
	{"broadcast", collective.Broadcast, false},
	{"reduce", collective.Reduce, false},
	{"alltoall", collective.AllToAll, true},
	{"sendrecv", collective.SendRecv, false},
}

// ncclOpNames lists ncclOps' names for errors and help.
func ncclOpNames() string {
	var names []string
	for _, o := range ncclOps {
		names = append(names, o.name)
	}
	return strings.Join(names, ", ")
}

// parseNCCLOp accepts a benchmark as nccl-tests names its binary (all_reduce_perf,
// all_reduce_perf_mpi) or as an operation (all_reduce, allreduce, all_to_all, send_recv).
func parseNCCLOp(s string) (ncclOp, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	k = strings.TrimSuffix(k, "_mpi")
	k = strings.TrimSuffix(k, "_perf")
	k = strings.NewReplacer("_", "", "-", "").Replace(k)
	for _, o := range ncclOps {
		if k == strings.ReplaceAll(o.name, "_", "") || k == strings.ReplaceAll(o.op.String(), "_", "") {
			return o, nil
		}
	}
	return ncclOp{}, fmt.Errorf("%q is not a benchmark lockstep runs; want one of %s (or its nccl-tests binary name, e.g. all_reduce_perf); gather, scatter, hypercube and alltoallv are not modelled", s, ncclOpNames())
}

// ncclType is an nccl-tests data type: its name and element size. The network sees only the
// size, so the scenario carries lockstep's dtype of that size (sim).
type ncclType struct {
	name string
	size int
	sim  string // workload.collectives dtype of the same size
}

// ncclTypes are nccl-tests' -d types (its test_typenames).
var ncclTypes = []ncclType{
	{"int8", 1, "int8"}, {"uint8", 1, "int8"}, {"int32", 4, "float"}, {"uint32", 4, "float"},
	{"int64", 8, "double"}, {"uint64", 8, "double"}, {"half", 2, "half"}, {"float", 4, "float"},
	{"double", 8, "double"}, {"bfloat16", 2, "bfloat16"}, {"f8e4m3", 1, "int8"}, {"f8e5m2", 1, "int8"},
}

// ncclTypeAliases maps other common spellings to ncclTypes' names.
var ncclTypeAliases = map[string]string{
	"char": "int8", "int": "int32", "float16": "half", "fp16": "half", "float32": "float", "fp32": "float",
	"float64": "double", "fp64": "double", "bf16": "bfloat16", "fp8e4m3": "f8e4m3", "fp8e5m2": "f8e5m2",
}

// parseNCCLType parses -d: a name of ncclTypes or an alias (ncclTypeAliases).
func parseNCCLType(s string) (ncclType, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	if a, ok := ncclTypeAliases[k]; ok {
		k = a
	}
	var names []string
	for _, t := range ncclTypes {
		if t.name == k {
			return t, nil
		}
		names = append(names, t.name)
	}
	return ncclType{}, fmt.Errorf("-d/--datatype: %q is not a data type; want one of %s (\"all\" is not supported: run one type at a time)", s, strings.Join(names, ", "))
}

// ncclRedOps are nccl-tests' -o operators. The operator does not change what crosses the
// network, so every one takes the same simulated time; it is printed in the redop column.
var ncclRedOps = []string{"sum", "prod", "max", "min", "avg", "mulsum"}

// parseNCCLRedOp parses -o: one of ncclRedOps, any case.
func parseNCCLRedOp(s string) (string, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	for _, o := range ncclRedOps {
		if o == k {
			return o, nil
		}
	}
	return "", fmt.Errorf("-o/--op: %q is not a reduction operator; want one of %s (\"all\" is not supported: every operator takes the same simulated time)", s, strings.Join(ncclRedOps, ", "))
}

// parseNCCLSize parses a size as nccl-tests does (its parsesize: a floating-point number
// times an optional K, M, G or T suffix, either case, powers of 1024, truncated to whole
// bytes: "8G" is 8589934592, "1.5M" 1572864, "1.0001K" 1024, "1.5" 1). Anything else is
// lockstep's size syntax (sim.ParseSize: "4KiB", "64MB" = 64e6, "1500B"). P and E suffixes,
// and any size beyond ncclMaxBytes, are out of range; errors say so with the limit.
func parseNCCLSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	shift := 0
	num := in
	if n := len(in); n > 1 {
		switch in[n-1] {
		case 'K', 'k':
			shift = 10
		case 'M', 'm':
			shift = 20
		case 'G', 'g':
			shift = 30
		case 'T', 't':
			shift = 40
		case 'P', 'p':
			shift = 50
		case 'E', 'e':
			shift = 60
		}
		if shift > 0 {
			num = in[:n-1]
		}
	}
	if strings.HasPrefix(num, "-") && ncclNumberRe.MatchString(num[1:]) {
		return 0, fmt.Errorf("%q is negative; want a size in bytes", s)
	}
	if ncclNumberRe.MatchString(num) {
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) || v*math.Exp2(float64(shift)) > ncclMaxBytes {
			return 0, ncclRangeError(s)
		}
		return int64(v * math.Exp2(float64(shift))), nil // truncated, as nccl-tests' size_t
	}
	v, err := sim.ParseSize(in)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: want bytes, a number with an optional K, M, G or T suffix (powers of 1024, as nccl-tests: 8, 1.5M, 8G, 1T) or a unit such as 4KiB or 64MB", s)
	}
	if v > ncclMaxBytes {
		return 0, ncclRangeError(s)
	}
	return v, nil
}

// ncclNumberRe is the number part of an nccl-tests size: decimal digits with an optional
// fraction and exponent (what C's strtod reads, less hex, inf and nan).
var ncclNumberRe = regexp.MustCompile(`^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// ncclRangeError is the error of a size beyond ncclMaxBytes.
func ncclRangeError(s string) error {
	return fmt.Errorf("%q is out of range; want at most %d B (1T, 1 TiB: larger collectives would outlast the longest simulated run)", s, int64(ncclMaxBytes))
}

// ncclMaxPerNode bounds -t x -g (GPUs per node) and ncclMaxRanks the ranks, beyond any
// topology lockstep builds (so rank arithmetic never overflows).
const (
	ncclMaxPerNode = 1024
	ncclMaxRanks   = 1 << 21
)

// ncclMaxSizes bounds the sizes of one sweep: each is a simulation.
const ncclMaxSizes = 256

// ncclMaxBytes bounds -b, -e and -i: 1 TiB, far beyond any GPU's memory (a 1 TiB all-reduce
// on 128 GPUs at 400 Gb/s simulates about 41 s; 1 PiB would outlast scenario.MaxRunDuration).
const ncclMaxBytes = 1 << 40

// ncclSizes returns nccl-tests' sizes from min to max: times factor each step when factor > 1,
// else plus step. Errors name the flag.
func ncclSizes(min, max, step int64, factor int) ([]int64, error) {
	if factor <= 1 && step < 1 {
		return nil, fmt.Errorf("-i/--stepbytes: %d; want a step of at least 1 byte", step)
	}
	var out []int64
	for s := min; s <= max; {
		if len(out) == ncclMaxSizes {
			return nil, fmt.Errorf("-b %d to -e %d by %s is more than %d sizes; take a larger step (-f or -i) or a narrower range (each size is a simulation)", min, max, stepLabel(step, factor), ncclMaxSizes)
		}
		out = append(out, s)
		if factor > 1 {
			if s == 0 || s > max/int64(factor) {
				break
			}
			s *= int64(factor)
		} else {
			if s > max-step {
				break
			}
			s += step
		}
	}
	return out, nil
}

// stepLabel names the step of a sweep for errors ("x2 (-f)", "+1024 B (-i)").
func stepLabel(step int64, factor int) string {
	if factor > 1 {
		return fmt.Sprintf("x%d (-f)", factor)
	}
	return fmt.Sprintf("+%d B (-i)", step)
}

// ncclRound returns the bytes and element count nccl-tests runs for a requested size: count =
// size / type size; the ops that split the buffer over n ranks (all_gather, reduce_scatter,
// alltoall) round the per-rank count down to a multiple of 16 bytes and print it as the count,
// the size being n x that. A size that rounds to 0 is a row of zeros, as in nccl-tests.
func ncclRound(op ncclOp, size int64, typeSize, n int) (bytes, count int64) {
	elt := int64(typeSize)
	count = size / elt
	if !op.perRank {
		return count * elt, count
	}
	align := int64(1)
	if elt < 16 {
		align = 16 / elt
	}
	base := count / int64(n)
	base -= base % align
	return base * int64(n) * elt, base
}

// ncclFlags are the command's flags: nccl-tests' (same letters and long names) and lockstep's.
type ncclFlags struct {
	minBytes, maxBytes, stepBytes string
	stepFactor                    int
	iters, warmup, agg            int
	check, graph                  int
	blocking, average, parallel   int // accepted for nccl-tests' command lines; nothing to simulate
	register, timeout, memReport  int
	redop, dtype                  string
	root                          int
	threads, gpus                 int
	jsonOut                       string

	nodes      int
	duration   string // --duration: run.duration
	base       string // --scenario
	transport  string
	engine     string
	algorithm  string
	simIters   int
	seed       uint64
	out        string
	printScen  bool
	quiet      bool
	nodesGiven bool
}

// newNCCLCmd is lockstep nccl: nccl-tests' flags, lockstep's fabric flags, and the run.
func newNCCLCmd(stdout, stderr io.Writer) *cobra.Command {
	var f ncclFlags
	cmd := &cobra.Command{
		Use:   "nccl OP [flags]",
		Short: "Run an nccl-tests benchmark (all_reduce_perf ...) on a simulated fabric, printing nccl-tests' table",
		Long: `Run an nccl-tests style benchmark on the simulated fabric and print nccl-tests' output
(its header, the out-of-place and in-place columns, "# Out of bounds values" and "# Avg bus
bandwidth"), so scripts that parse nccl-tests read it unchanged. -J writes nccl-tests' JSON.

OP is one of ` + ncclOpNames() + `, or its binary name (all_reduce_perf).
The ranks are --nodes x -t x -g: --nodes servers (one process each), each with -t threads of
-g GPUs; GPU r is fabric host r and each server is one scale-up (NVLink) domain.

Without --scenario the fabric is a rail-optimised cluster of --nodes servers, -t x -g GPUs
each, one 400 Gb/s NIC per GPU on radix-64 switches, NVLink at 3.6 Tb/s per GPU, run on the
flow-level engine (any size runs in seconds). --scenario FILE|PRESET takes the topology,
fabric, transport, faults and run settings of a scenario instead (its traffic or workload is
replaced; a file's run.duration is kept, a preset's left out); --duration sets run.duration.
A run that fails or is interrupted prints the rows of the sizes that finished, then
"# Collective test stopped: ..." (exit 1, or 130 on Ctrl-C). --engine packet simulates every packet (small sizes and fabrics only).
--print-scenario prints the scenario the flags make; lockstep run of it gives the same times.

Simulated time has no noise: every iteration of a size takes the same time unless faults or
congestion state differ, so lockstep simulates --sim-iters iterations (default 1) and reports
their mean; -n, -w, -m and -G are printed in the header as given. In-place and out-of-place
runs move the same bytes and print the same figures; #wrong is 0 (N/A with -c 0).`,
		Example: `  lockstep nccl all_reduce -b 8 -e 8G -f 2 -g 8 --nodes 16
  lockstep nccl all_gather_perf -b 1M -e 1G -f 4 -g 8 --nodes 4 -J out.json
  lockstep nccl broadcast -b 64M -e 64M -r 3 --scenario my-fabric.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			f.nodesGiven = fl.Changed("nodes")
			if fl.Changed("seed") && f.seed == 0 {
				return badInput(errors.New("--seed: 0 is not allowed; use a seed >= 1"))
			}
			p, err := f.plan(args[0], fl.Changed("stepfactor"), fl.Changed("stepbytes"))
			if err != nil {
				return badInput(err)
			}
			// The JSON's args: the command as given, flags in their long form.
			p.args = []string{"lockstep", "nccl", args[0]}
			fl.Visit(func(fg *pflag.Flag) { p.args = append(p.args, "--"+fg.Name+"="+fg.Value.String()) })
			if f.printScen {
				for i, j := range p.jobs {
					if i > 0 {
						fmt.Fprintln(stdout, "---")
					}
					_, _ = stdout.Write(j.yaml)
				}
				return nil
			}
			intr, stop := catchSignals(stderr)
			defer stop()
			return p.run(stdout, stderr, intr)
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVarP(&f.minBytes, "minbytes", "b", "32M", "minimum size in bytes (K, M, G suffixes are powers of 1024, as nccl-tests)")
	fs.StringVarP(&f.maxBytes, "maxbytes", "e", "32M", "maximum size in bytes")
	fs.StringVarP(&f.stepBytes, "stepbytes", "i", "1M", "fixed increment between sizes, when -f is not given")
	fs.IntVarP(&f.stepFactor, "stepfactor", "f", 1, "multiplication factor between sizes (>= 2; default: fixed increments, -i)")
	fs.IntVarP(&f.iters, "iters", "n", 20, "iterations per size, as nccl-tests (printed; --sim-iters are simulated)")
	fs.IntVarP(&f.warmup, "warmup_iters", "w", 1, "warmup iterations (printed; not simulated)")
	fs.IntVarP(&f.agg, "agg_iters", "m", 1, "operations aggregated per iteration (printed; not simulated)")
	fs.IntVarP(&f.check, "check", "c", 1, "check iterations: > 0 prints #wrong 0, 0 prints N/A")
	fs.StringVarP(&f.redop, "op", "o", "sum", "reduction operator: "+strings.Join(ncclRedOps, ", "))
	fs.StringVarP(&f.dtype, "datatype", "d", "float", "data type (sets the element size and the count column)")
	fs.IntVarP(&f.root, "root", "r", 0, "root rank of broadcast and reduce (sendrecv has none: every rank sends to the next, as nccl-tests)")
	fs.IntVarP(&f.threads, "nthreads", "t", 1, "threads per process (node)")
	fs.IntVarP(&f.gpus, "ngpus", "g", 1, "GPUs per thread")
	fs.IntVarP(&f.graph, "cudagraph", "G", 0, "CUDA graph launches (printed; not simulated)")
	fs.IntVarP(&f.blocking, "blocking", "z", 0, "blocking collectives (accepted; the simulation has no host threads)")
	fs.IntVarP(&f.average, "average", "a", 1, "report across ranks as 0 rank 0, 1 avg, 2 min, 3 max (accepted; the simulated time is the slowest rank's)")
	fs.IntVarP(&f.parallel, "parallel_init", "p", 0, "parallel NCCL init (accepted; nothing to initialise)")
	fs.IntVarP(&f.register, "local_register", "R", 0, "buffer registration (accepted; not simulated)")
	fs.IntVarP(&f.timeout, "timeout", "T", 0, "timeout in seconds (accepted; a simulated run stops on run.duration instead)")
	fs.IntVarP(&f.memReport, "memory_report", "M", 0, "memory usage report (accepted; no GPU memory)")
	fs.StringVarP(&f.jsonOut, "output_file", "J", "", "also write nccl-tests' JSON results to this file (an existing file is kept: FILE.0, FILE.1, ... as nccl-tests)")
	fs.IntVar(&f.nodes, "nodes", 1, "servers (processes, one per node); ranks = nodes x nthreads x ngpus (with --scenario: default its hosts / (nthreads x ngpus))")
	fs.StringVar(&f.base, "scenario", "", "scenario file or preset (default: lockstep run's built-in one) whose topology, fabric, transport, faults and run settings to use")
	fs.StringVar(&f.duration, "duration", "", "run.duration, the simulated time the run may take (default: the --scenario file's, else covering the sizes' closed forms)")
	fs.StringVar(&f.transport, "transport", "", "transport: "+strings.Join(append(transport.Kinds(), scenario.TransportIdeal), ", ")+" (default: the scenario's, else lockstep's workload default, mrc)")
	fs.StringVar(&f.engine, "engine", "", "packet, flow or analytic (the ideal network: each message at the NIC rate after the fabric's worst-case latency, no contention); default flow, or the --scenario's run.engine")
	fs.StringVar(&f.algorithm, "algorithm", "auto", "collective algorithm: "+strings.Join(collective.AlgorithmNames(), ", "))
	fs.IntVar(&f.simIters, "sim-iters", 1, "iterations simulated per size, 1 to 1000 (the time is their mean)")
	fs.Uint64Var(&f.seed, "seed", 0, "random seed, overriding run.seed (>= 1)")
	fs.StringVar(&f.out, "out", "", "also write the results folder (summary.json, scenario.yaml, report.html) here; one subfolder per size when the sizes are not one geometric sweep")
	fs.BoolVar(&f.printScen, "print-scenario", false, "print the scenario the flags make (what lockstep run would take) and run nothing")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress bar")
	return cmd
}

// ncclPlan is a checked invocation: the sizes and their rows' columns, and the scenarios that
// run them.
type ncclPlan struct {
	f      ncclFlags
	op     ncclOp
	typ    ncclType
	redop  string // the redop column: the operator, or "none" for ops that do not reduce
	root   int    // the root column: -r for broadcast and reduce, else -1
	ranks  int
	perBox int // GPUs per node: nthreads x ngpus
	nodes  int
	min    int64 // -b, -e and the step, as given
	max    int64
	step   int64
	factor int
	sizes  []ncclSize
	jobs   []ncclJob
	args   []string // the command line, for the JSON's args
	// keepRun: the base is a scenario file the user wrote, so its run.duration and
	// run.sample_interval stay (a preset's or the built-in fabric's are left out).
	keepRun bool
}

// ncclSize is one row: the bytes run (nccl-tests' rounding applied) and the count column.
type ncclSize struct {
	bytes, count int64
	job          int // index into jobs; -1 for a size that rounds to 0 bytes (nothing to run)
}

// ncclJob is one scenario to run: its YAML and the results subfolder (under --out).
type ncclJob struct {
	yaml []byte
	out  string
}

// plan checks the flags and builds the scenarios.
func (f ncclFlags) plan(opArg string, factorGiven, stepGiven bool) (*ncclPlan, error) {
	op, err := parseNCCLOp(opArg)
	if err != nil {
		return nil, err
	}
	p := &ncclPlan{f: f, op: op, root: -1, factor: f.stepFactor}
	if p.typ, err = parseNCCLType(f.dtype); err != nil {
		return nil, err
	}
	if p.redop, err = parseNCCLRedOp(f.redop); err != nil {
		return nil, err
	}
	if !op.op.Reduces() {
		p.redop = "none"
	}
	for _, c := range []struct {
		name string
		v    int
		lo   int
		what string
	}{
		{"-g/--ngpus", f.gpus, 1, "GPUs per thread"}, {"-t/--nthreads", f.threads, 1, "threads per process"},
		{"--nodes", f.nodes, 1, "servers"}, {"-n/--iters", f.iters, 1, "iterations"}, {"-w/--warmup_iters", f.warmup, 0, "warmup iterations"},
		{"-m/--agg_iters", f.agg, 1, "aggregated operations"}, {"-G/--cudagraph", f.graph, 0, "graph launches"},
	} {
		if c.v < c.lo {
			return nil, fmt.Errorf("%s: %d; want at least %d %s", c.name, c.v, c.lo, c.what)
		}
	}
	if f.gpus > ncclMaxPerNode || f.threads > ncclMaxPerNode || f.threads*f.gpus > ncclMaxPerNode {
		return nil, fmt.Errorf("-t/--nthreads %d x -g/--ngpus %d: want at most %d GPUs per node", f.threads, f.gpus, ncclMaxPerNode)
	}
	if f.nodes > ncclMaxRanks/(f.threads*f.gpus) {
		return nil, fmt.Errorf("--nodes: %d x %d GPUs per node; want at most %d ranks", f.nodes, f.threads*f.gpus, ncclMaxRanks)
	}
	if f.check < 0 {
		return nil, fmt.Errorf("-c/--check: %d; want 0 (no check) or a count of checked iterations", f.check)
	}
	for _, c := range []struct {
		name   string
		v      int
		lo, hi int
	}{{"-z/--blocking", f.blocking, 0, 2}, {"-a/--average", f.average, 0, 3}, {"-p/--parallel_init", f.parallel, 0, 1}, {"-R/--local_register", f.register, 0, 2}, {"-T/--timeout", f.timeout, 0, math.MaxInt32}, {"-M/--memory_report", f.memReport, 0, 1}} {
		if c.v < c.lo || c.v > c.hi {
			return nil, fmt.Errorf("%s: %d; want %d to %d", c.name, c.v, c.lo, c.hi)
		}
	}
	if f.simIters < 1 || f.simIters > 1000 {
		return nil, fmt.Errorf("--sim-iters: %d; want 1 to 1000", f.simIters)
	}
	if _, err := collective.ParseAlgorithm(f.algorithm); err != nil {
		return nil, fmt.Errorf("--algorithm: %q is not an algorithm; want one of %s", f.algorithm, strings.Join(collective.AlgorithmNames(), ", "))
	}
	if p.min, err = parseNCCLSize(f.minBytes); err != nil {
		return nil, fmt.Errorf("-b/--minbytes: %w", err)
	}
	if p.max, err = parseNCCLSize(f.maxBytes); err != nil {
		return nil, fmt.Errorf("-e/--maxbytes: %w", err)
	}
	if p.min > p.max {
		return nil, fmt.Errorf("-b/--minbytes: %d is larger than -e/--maxbytes %d; want -b <= -e", p.min, p.max)
	}
	if f.stepFactor < 2 || stepGiven {
		if p.step, err = parseNCCLSize(f.stepBytes); err != nil {
			return nil, fmt.Errorf("-i/--stepbytes: %w", err)
		}
		if p.step < 1 {
			return nil, fmt.Errorf("-i/--stepbytes: %d; want a step of at least 1 byte", p.step)
		}
	}
	switch {
	case factorGiven && f.stepFactor < 2 && !stepGiven:
		return nil, fmt.Errorf("-f/--stepfactor: %d; want a factor of at least 2, or fixed steps with -i/--stepbytes", f.stepFactor)
	case factorGiven && stepGiven && f.stepFactor >= 2:
		return nil, errors.New("-f/--stepfactor and -i/--stepbytes are both given; nccl-tests takes one of them")
	case f.stepFactor < 2:
		p.factor = 1
	}
	raw, err := ncclSizes(p.min, p.max, p.step, p.factor)
	if err != nil {
		return nil, err
	}

	base, hosts, written, err := f.baseYAML()
	if err != nil {
		return nil, err
	}
	p.keepRun = written
	p.perBox = f.threads * f.gpus
	p.nodes = f.nodes
	if f.base != "" && !f.nodesGiven {
		p.nodes = max(hosts/p.perBox, 1)
	}
	p.ranks = p.nodes * p.perBox
	if hosts > 0 && p.ranks > hosts {
		return nil, fmt.Errorf("--nodes %d x -t %d x -g %d is %d ranks, but the scenario %s has %d hosts", p.nodes, f.threads, f.gpus, p.ranks, f.base, hosts)
	}
	if op.op == collective.Broadcast || op.op == collective.Reduce || op.op == collective.SendRecv {
		if f.root < 0 || f.root >= p.ranks {
			return nil, fmt.Errorf("-r/--root: %d; want a rank from 0 to %d", f.root, p.ranks-1)
		}
		if op.op != collective.SendRecv {
			p.root = f.root
		}
	}
	if op.op == collective.SendRecv && p.ranks < 2 {
		return nil, fmt.Errorf("sendrecv needs at least 2 ranks; --nodes x -t x -g is %d", p.ranks)
	}

	if err := p.buildJobs(raw, base); err != nil {
		return nil, err
	}
	return p, nil
}

// buildJobs rounds the requested sizes raw as nccl-tests does into p.sizes and makes the
// scenarios that run them from the base YAML: one sweeping them all when they are the
// scenario sweep bytes x factor^k (collective.Sizes) of at most 64 sizes, else one per size.
// Sizes that round to 0 bytes run nothing.
func (p *ncclPlan) buildJobs(raw []int64, base []byte) error {
	f, op := p.f, p.op
	var run []int64
	for _, s := range raw {
		b, c := ncclRound(op, s, p.typ.size, p.ranks)
		job := -1
		if b > 0 {
			job = 0
			run = append(run, b)
		}
		p.sizes = append(p.sizes, ncclSize{bytes: b, count: c, job: job})
	}
	if len(run) == 0 {
		return nil // every size rounds to 0: nothing to simulate
	}
	if p.factor > 1 && len(run) <= 64 {
		if sw, err := collective.Sizes(run[0], run[len(run)-1], p.factor); err == nil && equalSizes(sw, run) {
			y, err := p.scenarioYAML(base, run[0], run[len(run)-1])
			if err != nil {
				return err
			}
			p.jobs = []ncclJob{{yaml: y, out: f.out}}
			return nil
		}
	}
	for i := range p.sizes {
		if p.sizes[i].job < 0 {
			continue
		}
		y, err := p.scenarioYAML(base, p.sizes[i].bytes, 0)
		if err != nil {
			return err
		}
		out := ""
		if f.out != "" {
			out = filepath.Join(f.out, fmt.Sprintf("size-%d", p.sizes[i].bytes))
		}
		p.sizes[i].job = len(p.jobs)
		p.jobs = append(p.jobs, ncclJob{yaml: y, out: out})
	}
	return nil
}

// equalSizes reports whether a and b hold the same sizes in the same order.
func equalSizes(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ncclDefaultFabric is the built-in fabric's YAML, for nodes servers of g GPUs each.
func ncclDefaultFabric(nodes, g int) string {
	su := ""
	if g > 1 {
		su = fmt.Sprintf(", scale_up: {gpus: %d, rate: 3.6Tbps}", g)
	}
	return fmt.Sprintf(`name: nccl
# lockstep nccl's built-in fabric: %d server(s) of %d GPU(s), a 400 Gb/s NIC per GPU on a rail-optimised
# fabric of radix-64 switches, NVLink 3.6 Tb/s per GPU inside a server, on the flow-level engine.
topology:
  rail: {servers: %d, gpus_per_server: %d, radix: 64, host_link: 400Gbps%s}
run: {engine: flow}
`, nodes, g, nodes, g, su)
}

// baseYAML returns the base scenario's YAML (--scenario, or the built-in fabric) and, for a
// --scenario, its hosts (0 for the built-in one, sized from the flags); written is whether it
// is a file the user wrote (not the built-in fabric or a preset).
func (f ncclFlags) baseYAML() (data []byte, hosts int, written bool, err error) {
	if f.base == "" {
		return []byte(ncclDefaultFabric(f.nodes, f.threads*f.gpus)), 0, false, nil
	}
	if _, err := os.Stat(f.base); err != nil && !strings.ContainsAny(f.base, "/.") {
		y, perr := scenario.PresetYAML(f.base)
		switch {
		case f.base == "default":
			y = scenario.DefaultYAML() // lockstep run's built-in default
		case perr != nil:
			return nil, 0, false, fmt.Errorf("--scenario: %q is neither a scenario file nor a preset; presets: default (lockstep run's), %s", f.base, strings.Join(scenario.Presets(), ", "))
		}
		data = y
	} else if data, err = os.ReadFile(f.base); err != nil {
		return nil, 0, false, fmt.Errorf("--scenario: %w", err)
	} else {
		written = true
	}
	if scenario.HasVariants(data) {
		return nil, 0, false, fmt.Errorf("--scenario %s has a variants section; give one scenario (lockstep sweep --list shows the variants)", f.base)
	}
	var sc scenario.Scenario
	if err := scenario.Decode(data, &sc); err != nil {
		return nil, 0, false, fmt.Errorf("--scenario %s: %w", f.base, err)
	}
	layout, err := sc.Topology.Describe()
	if err != nil {
		return nil, 0, false, fmt.Errorf("--scenario %s: %w", f.base, err)
	}
	return data, layout.NumHosts(), written, nil
}

// ncclCollective is the workload.collectives entry the command runs, as YAML writes it.
type ncclCollective struct {
	Op         string `yaml:"op"`
	Algorithm  string `yaml:"algorithm,omitempty"`
	Ranks      int    `yaml:"ranks"`
	Bytes      int64  `yaml:"bytes"`
	MaxBytes   int64  `yaml:"max_bytes,omitempty"`
	Factor     int    `yaml:"factor,omitempty"`
	Iterations int    `yaml:"iterations"`
	DType      string `yaml:"dtype"`
	Root       int    `yaml:"root,omitempty"`
	Peer       int    `yaml:"peer,omitempty"`
}

// scenarioYAML returns the scenario of one run: the base with its traffic and workload
// replaced by the collective at bytes (a sweep to maxBytes by the factor when maxBytes > 0),
// named nccl-<op>, with --transport, --engine (analytic: transport ideal at the fabric's
// worst-case latency unless the base gives one), --seed and --duration applied and run.out
// left out; run.duration and run.sample_interval are kept from a scenario file the user
// wrote (p.keepRun) and left out of a preset or the built-in fabric.
func (p *ncclPlan) scenarioYAML(base []byte, bytes, maxBytes int64) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(base, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("--scenario %s: not a YAML mapping", p.f.base)
	}
	root := doc.Content[0]
	c := ncclCollective{Op: p.op.op.String(), Ranks: p.ranks, Bytes: bytes, Iterations: p.f.simIters, DType: p.typ.sim}
	if p.f.algorithm != "auto" {
		c.Algorithm = p.f.algorithm
	}
	if maxBytes > bytes {
		c.MaxBytes, c.Factor = maxBytes, p.factor
	}
	switch p.op.op {
	case collective.Broadcast, collective.Reduce:
		c.Root = p.f.root
	case collective.SendRecv:
		// nccl-tests' sendrecv_perf: every rank sends to rank+1 and receives from rank-1.
		c.Peer = collective.ShiftPeer
	}
	var wl yaml.Node
	if err := wl.Encode(map[string][]ncclCollective{"collectives": {c}}); err != nil {
		return nil, err
	}
	setKey(root, "name", strNode("nccl-"+p.op.name))
	delKey(root, "traffic")
	setKey(root, "workload", &wl)
	if t := p.f.transport; t != "" || p.f.engine == "analytic" {
		if p.f.engine == "analytic" {
			if t != "" && t != scenario.TransportIdeal {
				return nil, fmt.Errorf("--engine analytic runs on the ideal network; --transport %s contradicts it", t)
			}
			t = scenario.TransportIdeal
		}
		// Keep the scenario's transport block when it is of the kind asked for.
		if tr := getKey(root, "transport"); tr == nil || getKey(tr, "kind") == nil || getKey(tr, "kind").Value != t {
			var n yaml.Node
			_ = n.Encode(map[string]string{"kind": t})
			setKey(root, "transport", &n)
		}
		if tr := getKey(root, "transport"); t == scenario.TransportIdeal && getKey(getKey(tr, "ideal"), "latency") == nil {
			// The ideal network's per-message latency defaults to the fabric's worst-case
			// one-way latency (topology sizing), not scenario.DefaultIdealLatency, so that the
			// analytic engine is charged the latency the fabric model has.
			if lat := p.fabricLatency(base); lat > 0 {
				var n yaml.Node
				_ = n.Encode(map[string]string{"latency": lat.String()})
				setKey(tr, "ideal", &n)
			}
		}
	}
	run := getKey(root, "run")
	if run == nil || run.Kind != yaml.MappingNode {
		run = &yaml.Node{Kind: yaml.MappingNode}
		setKey(root, "run", run)
	}
	// run.out is --out's. A scenario file's other run settings are the user's and stay; a
	// preset's run.duration and run.sample_interval were sized for its own traffic, so they
	// go: the workload's default bound (covering 4 x the closed-form lower bound) applies
	// and the sampling period fits it. --duration sets run.duration.
	delKey(run, "out")
	if !p.keepRun {
		delKey(run, "duration")
		delKey(run, "sample_interval")
	}
	if d := p.f.duration; d != "" {
		if _, err := sim.ParseTime(d); err != nil {
			return nil, fmt.Errorf("--duration: %q is not a duration; want a time such as 30s or 500ms (run.duration): %v", d, err)
		}
		setKey(run, "duration", strNode(d))
	}
	switch e := p.f.engine; e {
	case "":
	case "analytic":
		delKey(run, "engine")
	case scenario.EnginePacket, scenario.EngineFlow:
		setKey(run, "engine", strNode(e))
	default:
		return nil, fmt.Errorf("--engine: %q is not an engine; want packet, flow or analytic", e)
	}
	if p.f.seed != 0 {
		setKey(run, "seed", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatUint(p.f.seed, 10)})
	}
	// The base's opening comment described the base; say what this scenario is instead.
	from := "lockstep nccl's built-in fabric"
	if p.f.base != "" {
		from = "the fabric of " + p.f.base
	}
	doc.HeadComment, root.HeadComment = "", ""
	if len(root.Content) > 0 {
		root.Content[0].HeadComment = ""
	}
	doc.HeadComment = fmt.Sprintf("lockstep nccl %s (nccl-tests %s) on %d ranks over %s:\nlockstep run of this file gives the times lockstep nccl printed.", p.op.name, p.binary(), p.ranks, from)
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// fabricLatency is the base scenario's worst-case one-way latency across its fabric
// (topo.Sizing.WorstCaseLatency), 0 when its topology does not describe.
func (p *ncclPlan) fabricLatency(base []byte) sim.Time {
	var sc scenario.Scenario
	if err := scenario.Decode(base, &sc); err != nil {
		return 0
	}
	l, err := sc.Topology.Describe()
	if err != nil {
		return 0
	}
	return l.Sizing().WorstCaseLatency
}

// strNode is a YAML string scalar.
func strNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// getKey returns the value of key in mapping m, or nil.
func getKey(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// setKey sets key in mapping m to v, in place or appended.
func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, strNode(key), v)
}

// delKey removes key from mapping m.
func delKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// ncclRow is one printed row's figures (the same for out-of-place and in-place).
type ncclRow struct {
	size, count  int64
	timeUs       float64
	algbw, busbw float64 // GB/s
}

// ncclResult is what the runs left: the rows and what the header names.
type ncclResult struct {
	rows      []ncclRow
	transport string
	engine    string
	scenario  *scenario.Scenario // the first job's, resolved
	simEndUs  float64            // simulated time of all runs together
	hostNames []string
	failure   error // the run's failure or interruption; nil when every size finished
}

// run runs the plan's scenarios and prints the table (and writes -J). A run that fails (exit
// 1) or is interrupted (exit 130, 143) still prints the header and the rows of the sizes that
// finished, then a "# Collective test stopped" line, and -J gets those rows with the failure
// in its "errors"; bad input (exit 2) prints nothing. Before the first run, --out is cleared
// of a previous lockstep run's files this one does not write (clearNCCLOut).
func (p *ncclPlan) run(stdout, stderr io.Writer, intr *runner.Interrupt) error {
	if p.f.out != "" {
		release, err := lockResults("--out", p.f.out) // held while the runs write (lock.go)
		if err != nil {
			return err
		}
		defer release()
	}
	res := &ncclResult{}
	times := make([][]sim.Time, len(p.jobs)) // per job, its rows' times in size order
	var failure error
	for i, j := range p.jobs {
		ts, err := p.runJob(i, j, res, stderr, intr)
		if err != nil {
			var ee *exitError
			if errors.As(err, &ee) && ee.code == 2 {
				return err // bad input: nothing ran
			}
			failure = err
			times[i] = ts // the sizes the failed run finished (runner keeps their rows)
			break
		}
		times[i] = ts
	}
	next := make([]int, len(p.jobs))
	factor := collective.BusFactor(p.op.op, p.ranks)
	for _, s := range p.sizes {
		row := ncclRow{size: s.bytes, count: s.count}
		if s.job >= 0 {
			ts := times[s.job]
			if next[s.job] >= len(ts) {
				if failure == nil {
					failure = runFailed(fmt.Errorf("the run of size %d B left no row", s.bytes))
				}
				break // sizes run in order: the rest did not finish
			}
			t := ts[next[s.job]]
			next[s.job]++
			row.timeUs = t.Micros()
			if t > 0 {
				row.algbw = float64(s.bytes) / t.Seconds() / 1e9
				row.busbw = row.algbw * factor
			}
		}
		res.rows = append(res.rows, row)
	}
	res.failure = failure
	jsonPath := ""
	if p.f.jsonOut != "" {
		var err error
		if jsonPath, err = writeNCCLJSON(p, res); err != nil {
			if failure != nil {
				fmt.Fprintf(stderr, "warning: -J/--output_file: %v\n", err)
			} else {
				return badInput(fmt.Errorf("-J/--output_file: %w", err))
			}
		}
	}
	p.writeTable(stdout, res, jsonPath)
	return failure
}

// runJob runs job i and returns its rows' times in size order (with a failed run's error,
// the rows of the sizes it finished); the first job's scenario,
// transport and engine go into res, and every job's simulated time is added to res.simEndUs.
func (p *ncclPlan) runJob(i int, j ncclJob, res *ncclResult, stderr io.Writer, intr *runner.Interrupt) ([]sim.Time, error) {
	sc, err := scenario.Parse(j.yaml)
	if err != nil {
		if p.f.engine == "analytic" && strings.Contains(err.Error(), "schedule operations") {
			// The ideal network runs every message of the schedule; the flow engine does not.
			return nil, badInput(fmt.Errorf("--engine analytic runs each size's schedule message by message on the ideal network, and %w; use --engine flow (the default), which runs any size", err))
		}
		return nil, badInput(fmt.Errorf("the scenario the flags make (lockstep nccl ... --print-scenario shows it): %w", err))
	}
	if i == 0 && p.f.out != "" {
		p.clearNCCLOut(stderr) // once the first scenario is known to be good input
	}
	if i == 0 {
		res.scenario, res.transport = sc, sc.Transport.Kind
		res.engine = sc.Run.Engine
		if sc.Transport.Kind == scenario.TransportIdeal {
			res.engine = "analytic"
		}
	}
	var r *runner.Result
	if j.out != "" {
		sc.Run.Out = j.out
		ro := runOpts{quiet: p.f.quiet, stderr: stderr, intr: intr, arg: "lockstep nccl"}
		if r, _, err = runAndWrite(sc, "--out", ro); err != nil {
			return nil, err
		}
	} else {
		r, err = runner.RunWith(sc, runner.Options{Interrupt: intr, Warn: func(w string) { fmt.Fprintln(stderr, "warning:", w) }})
		if err != nil {
			var ie *runner.InputError
			if errors.As(err, &ie) {
				return nil, badInput(fmt.Errorf("the scenario the flags make (--print-scenario shows it): %w", err))
			}
			return nil, runFailed(err)
		}
	}
	if r.Summary.Interrupted != "" {
		return nil, &exitError{code: signalExit(r.Summary.Interrupted), err: fmt.Errorf("lockstep nccl interrupted (%s)", r.Summary.Interrupted)}
	}
	failed := outcomeErr(&r.Summary) // a failed run keeps the rows of the sizes it finished
	if r.Collective == nil {
		if failed != nil {
			return nil, failed
		}
		return nil, runFailed(errors.New("the run left no collective rows"))
	}
	if i == 0 {
		res.engine = r.Collective.Engine
		if sc.Transport.Kind == scenario.TransportIdeal {
			res.engine = "analytic"
		}
	}
	res.simEndUs += r.Summary.EndUs
	var ts []sim.Time
	for _, row := range r.Collective.Rows {
		ts = append(ts, row.Time)
	}
	return ts, failed
}

// clearNCCLOut removes what a previous lockstep run left in --out that this run does not
// write, so the folder describes this run only (as lockstep run's variants do, clearStale):
// with one sweep (results in --out itself) the subfolders a previous run wrote, which
// clearStale removes when they hold only results files; with one run per size (size-<bytes>
// subfolders) those of other sizes, and the previous sweep's results files in --out itself
// (runner.ResultFiles, regular files only, removed one by one).
func (p *ncclPlan) clearNCCLOut(stderr io.Writer) {
	var keep []string
	top := false
	for _, j := range p.jobs {
		if filepath.Clean(j.out) == filepath.Clean(p.f.out) {
			top = true
		} else {
			keep = append(keep, filepath.Base(j.out))
		}
	}
	clearStale(p.f.out, keep, stderr)
	if top {
		return // WriteResults replaces the results files in --out
	}
	removed := 0
	for _, f := range runner.ResultFiles() {
		path := filepath.Join(p.f.out, f)
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && os.Remove(path) == nil {
			removed++
		}
	}
	if removed > 0 {
		fmt.Fprintf(stderr, "removed %d results file(s) of a previous run from %s: this run writes one folder per size\n", removed, p.f.out)
	}
}

// binary is the nccl-tests binary the run stands for ("all_reduce_perf").
func (p *ncclPlan) binary() string { return p.op.name + "_perf" }

// stepText is the header's "step:" value: "2(factor)" or "1048576(bytes)".
func (p *ncclPlan) stepText() string {
	if p.factor > 1 {
		return fmt.Sprintf("%d(factor)", p.factor)
	}
	return fmt.Sprintf("%d(bytes)", p.step)
}

// ncclMaxDeviceLines bounds the "# Using devices" lines: a larger job lists this many ranks.
const ncclMaxDeviceLines = 1024

// rankInfo is one "# Using devices" line's fields (nccl-tests' rank info): the simulated
// process, host and device of rank r.
type rankInfo struct {
	Rank       int    `json:"rank"`
	Group      int    `json:"group"`
	Pid        int    `json:"pid"`
	Hostname   string `json:"hostname"`
	Device     int    `json:"device"`
	DeviceHex  string `json:"device_hex"`
	DeviceInfo string `json:"device_info"`
}

// rankInfo returns rank r's simulated device: process r / GPUs per node on host "node<p>",
// pid 10000 + p, device r % GPUs per node at PCI bus <device>.
func (p *ncclPlan) rankInfo(r int) rankInfo {
	proc, dev := r/p.perBox, r%p.perBox
	return rankInfo{Rank: r, Pid: 10000 + proc, Hostname: fmt.Sprintf("node%d", proc), Device: dev,
		DeviceHex: fmt.Sprintf("0000:%02x:00", dev%256), DeviceInfo: fmt.Sprintf("lockstep simulated GPU (fabric host h%d)", r)}
}

// writeTable prints nccl-tests' output: the header, the devices, the two-line column header,
// one row per size and the footer, with nccl-tests' column widths and number formats.
func (p *ncclPlan) writeTable(w io.Writer, res *ncclResult, jsonPath string) {
	if jsonPath != "" {
		fmt.Fprintf(w, "# Writing JSON output to %s\n", jsonPath)
	}
	v := buildVersion()
	fmt.Fprintf(w, "# nccl-tests %s simulated by lockstep %s: no GPUs, no NCCL; the network is simulated (%s)\n", p.binary(), v.Version, p.describe(res))
	fmt.Fprintf(w, "# Collective test starting: %s\n", p.binary())
	fmt.Fprintf(w, "# nThread %d nGpus %d minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d agg iters: %d validation: %d graph: %d\n",
		p.f.threads, p.f.gpus, p.min, p.max, p.stepText(), p.f.warmup, p.f.iters, p.f.agg, p.f.check, p.f.graph)
	fmt.Fprintln(w, "#")
	fmt.Fprintln(w, "# Using devices")
	for r := 0; r < p.ranks && r < ncclMaxDeviceLines; r++ {
		ri := p.rankInfo(r)
		fmt.Fprintf(w, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%s] %s\n", ri.Rank, ri.Group, ri.Pid, ri.Hostname, ri.Device, ri.DeviceHex, ri.DeviceInfo)
	}
	if p.ranks > ncclMaxDeviceLines {
		fmt.Fprintf(w, "#  ... %d more ranks, %d per node\n", p.ranks-ncclMaxDeviceLines, p.perBox)
	}
	fmt.Fprintln(w, "#")
	if p.ranks == 1 {
		fmt.Fprintln(w, "# 1 rank: no network traffic, so every time is 0 (give --nodes or -g for more ranks)")
	}
	fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "", "", "")
	fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "size", "count", "type", "redop", "root",
		"time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong")
	fmt.Fprintf(w, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n", "(B)", "(elements)", "", "", "",
		"(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")
	var sum float64
	for _, r := range res.rows {
		fmt.Fprintf(w, "%12d  %12d  %8s  %6s  %6d", r.size, r.count, p.typ.name, p.redop, p.root)
		for range 2 { // out-of-place, then in-place: the same bytes cross the same network
			fmt.Fprintf(w, "  %7s  %6s  %6s  %s", ncclFloat(r.timeUs, 7), ncclFloat(r.algbw, 6), ncclFloat(r.busbw, 6), p.wrong())
		}
		fmt.Fprintln(w)
		sum += 2 * r.busbw
	}
	if res.failure != nil {
		fmt.Fprintf(w, "# Collective test stopped: %s after %d of %d sizes: %s\n", p.binary(), len(res.rows), len(p.sizes), oneLine(res.failure.Error()))
		return
	}
	avg := 0.0
	if len(res.rows) > 0 {
		avg = sum / float64(2*len(res.rows))
	}
	fmt.Fprintf(w, "# %-20s : %d %s\n", "Out of bounds values", 0, "OK")
	fmt.Fprintf(w, "# %-20s : %s \n", "Avg bus bandwidth", strconv.FormatFloat(avg, 'g', 6, 64))
	fmt.Fprintln(w, "#")
	fmt.Fprintf(w, "# Collective test concluded: %s\n", p.binary())
}

// wrong is the #wrong column: 0 with -c 1 (the simulated data is never corrupted), N/A with -c 0.
func (p *ncclPlan) wrong() string {
	if p.f.check == 0 {
		return "   N/A"
	}
	return "     0"
}

// describe is the header's description of the simulated fabric and how it ran.
func (p *ncclPlan) describe(res *ncclResult) string {
	var b strings.Builder
	b.WriteString(fmt.Sprintf("%d ranks: %d nodes x %d threads x %d GPUs", p.ranks, p.nodes, p.f.threads, p.f.gpus))
	if sc := res.scenario; sc != nil {
		if l, err := sc.Topology.Describe(); err == nil {
			pp := l.Params()
			b.WriteString(fmt.Sprintf("; %s of %d hosts, %v NICs", pp.Kind, l.NumHosts(), pp.HostLink*sim.Rate(max(pp.Planes, 1))))
			if pp.ScaleUpGPUs > 1 {
				b.WriteString(fmt.Sprintf(", scale-up domains of %d GPUs at %v", pp.ScaleUpGPUs, pp.ScaleUpRate))
			}
		}
	}
	if len(p.jobs) == 0 {
		b.WriteString("; nothing simulated: every size rounds to 0 bytes")
	} else {
		b.WriteString(fmt.Sprintf("; transport %s, engine %s; %d simulated iteration(s) per size", res.transport, res.engine, p.f.simIters))
	}
	return b.String()
}

// ncclFloat formats v in width characters as nccl-tests' report does: two decimals while the
// integer part leaves room, then one, then none, then an exponent.
func ncclFloat(v float64, width int) string {
	digits := 0
	for p := 1.0; v >= p && digits <= 2*width; p *= 10 {
		digits++
	}
	switch {
	case digits < width-2:
		return fmt.Sprintf("%*.2f", width, v)
	case digits < width-1:
		return fmt.Sprintf("%*.1f", width, v)
	case digits < width+1:
		return fmt.Sprintf("%*.0f", width, v)
	case width >= 7:
		return fmt.Sprintf("%*.1e", width, v)
	default:
		return fmt.Sprintf("%*.0e", width, v)
	}
}

// ncclJSON is nccl-tests' -J document (JSON file version 2), with a "simulator" block added.
// start_time and end_time are the simulated clock from the Unix epoch (end_time: after every
// size's simulated time), not the wall clock, and env is empty, so the file is reproducible
// and carries nothing of the machine; nccl_version is 0 (no NCCL ran).
type ncclJSON struct {
	Version     int            `json:"version"`
	StartTime   string         `json:"start_time"`
	Args        []string       `json:"args"`
	Env         []string       `json:"env"`
	NCCLVersion int            `json:"nccl_version"`
	Simulator   ncclSimulator  `json:"simulator"`
	Config      ncclJSONConfig `json:"config"`
	Results     []ncclJSONRow  `json:"results"`
	OutOfBounds struct {
		Count int  `json:"count"`
		Okay  bool `json:"okay"`
	} `json:"out_of_bounds"`
	AverageBusBandwidth struct {
		Bandwidth float64 `json:"bandwidth"`
		Okay      string  `json:"okay"`
	} `json:"average_bus_bandwidth"`
	Errors  []string `json:"errors"`
	EndTime string   `json:"end_time"`
}

// ncclSimulator is the -J document's lockstep block (not in nccl-tests' files).
type ncclSimulator struct {
	Name      string               `json:"name"`
	Version   *runner.BuildVersion `json:"version"`
	Scenario  string               `json:"scenario"`
	Transport string               `json:"transport"`
	Engine    string               `json:"engine"`
	SimIters  int                  `json:"simulated_iterations"`
	SimTimeUs float64              `json:"simulated_time_us"`
}

// ncclJSONConfig is the -J document's "config": the flags as nccl-tests records them, and the
// devices (one per rank).
type ncclJSONConfig struct {
	NThreads      int        `json:"nthreads"`
	NGPUs         int        `json:"ngpus"`
	MinimumBytes  int64      `json:"minimum_bytes"`
	MaximumBytes  int64      `json:"maximum_bytes"`
	StepFactor    *int       `json:"step_factor,omitempty"`
	StepBytes     *int64     `json:"step_bytes,omitempty"`
	WarmupIters   int        `json:"warmup_iters"`
	Iterations    int        `json:"iterations"`
	AggIterations int        `json:"aggregated_iterations"`
	Validation    int        `json:"validation"`
	Graph         int        `json:"graph"`
	Blocking      string     `json:"blocking_collectives"`
	PerIterTiming string     `json:"per_iter_timing"`
	ParallelInit  string     `json:"parallel_init"`
	Devices       []rankInfo `json:"devices"`
}

// ncclJSONRow is one "results" entry: a table row.
type ncclJSONRow struct {
	Size       int64        `json:"size"`
	Count      int64        `json:"count"`
	Type       string       `json:"type"`
	RedOp      string       `json:"redop"`
	Root       string       `json:"root"` // nccl-tests writes the root as printed, "%6i"
	OutOfPlace ncclJSONPerf `json:"out_of_place"`
	InPlace    ncclJSONPerf `json:"in_place"`
	ActualIter int          `json:"actual_iterations"`
	Experiment string       `json:"experiment_name"`
}

// ncclJSONPerf is a row's "out_of_place" or "in_place": time in us, bandwidths in GB/s.
type ncclJSONPerf struct {
	Time   float64  `json:"time"`
	AlgBW  float64  `json:"alg_bw"`
	BusBW  float64  `json:"bus_bw"`
	NWrong *float64 `json:"nwrong"` // null with -c 0
}

// writeNCCLJSON writes the -J file as nccl-tests does: never over an existing file (PATH.0,
// PATH.1, ... are tried next), and returns the path written.
func writeNCCLJSON(p *ncclPlan, res *ncclResult) (string, error) {
	doc := ncclJSON{Version: 2, Args: p.args, Env: []string{}, Errors: []string{}}
	epoch := time.Unix(0, 0).UTC()
	doc.StartTime = epoch.Format("2006-01-02 15:04:05")
	doc.EndTime = epoch.Add(time.Duration(res.simEndUs * 1e3)).Format("2006-01-02 15:04:05")
	name := ""
	if res.scenario != nil {
		name = res.scenario.Name
	}
	doc.Simulator = ncclSimulator{Name: "lockstep", Version: buildVersion(), Scenario: name, Transport: res.transport, Engine: res.engine, SimIters: p.f.simIters, SimTimeUs: res.simEndUs}
	c := &doc.Config
	c.NThreads, c.NGPUs, c.MinimumBytes, c.MaximumBytes = p.f.threads, p.f.gpus, p.min, p.max
	if p.factor > 1 {
		f := p.factor
		c.StepFactor = &f
	} else {
		s := p.step
		c.StepBytes = &s
	}
	c.WarmupIters, c.Iterations, c.AggIterations, c.Validation, c.Graph = p.f.warmup, p.f.iters, p.f.agg, p.f.check, p.f.graph
	c.Blocking, c.PerIterTiming, c.ParallelInit = "false", "false", "false"
	for r := 0; r < p.ranks; r++ {
		c.Devices = append(c.Devices, p.rankInfo(r))
	}
	var sum float64
	for _, r := range res.rows {
		perf := ncclJSONPerf{Time: r.timeUs, AlgBW: r.algbw, BusBW: r.busbw}
		if p.f.check != 0 {
			zero := 0.0
			perf.NWrong = &zero
		}
		doc.Results = append(doc.Results, ncclJSONRow{Size: r.size, Count: r.count, Type: p.typ.name, RedOp: p.redop,
			Root: fmt.Sprintf("%6d", p.root), OutOfPlace: perf, InPlace: perf, ActualIter: p.f.iters, Experiment: ""})
		sum += r.busbw
	}
	if res.failure != nil {
		// nccl-tests' "errors" list: this run's failure, after the rows that finished.
		doc.Errors = append(doc.Errors, oneLine(res.failure.Error()))
	}
	doc.OutOfBounds.Okay = true
	if len(res.rows) > 0 {
		doc.AverageBusBandwidth.Bandwidth = sum / float64(len(res.rows))
	}
	doc.AverageBusBandwidth.Okay = "unchecked"
	js, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", err
	}
	js = append(js, '\n')
	path := p.f.jsonOut
	for i := 0; ; i++ {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, werr := f.Write(js)
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			return path, werr
		}
		if !errors.Is(err, os.ErrExist) {
			return "", err
		}
		if i == 1000 {
			return "", fmt.Errorf("%s and %s.0 to %s.999 all exist", p.f.jsonOut, p.f.jsonOut, p.f.jsonOut)
		}
		path = fmt.Sprintf("%s.%d", p.f.jsonOut, i)
	}
}
