package training

import (
	"fmt"
	"math"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// Collective choice (see the package documentation, "Collectives"): data-parallel
// reductions and ZeRO gathers pick their algorithm from the group's layout in scale-up
// domains and the size, as NCCL's tuner does; tensor-parallel all-reduces inside a domain
// are costed in closed form or run as NVLink collectives (TPModel).

// commLayout says how a communicator's ranks sit in scale-up domains.
type commLayout struct {
	ranks int
	// inner is the members per domain when every domain the group touches holds the same
	// number and rank g*inner+i of the communicator is member i of the g-th domain (so a
	// hierarchical collective can take Inner = inner); 1 otherwise.
	inner int
	// outer is the number of domains the group spans.
	outer int
	// shared reports whether two members share a domain, so that the group's collectives
	// put traffic on NVLink (hierarchical or not: a flat ring's neighbours in one domain
	// talk over it).
	shared bool
}

// layoutOf returns the layout of a communicator whose rank r is on hosts[r], in scale-up
// domains of g hosts (hosts h, h' share one when h/g == h'/g).
func layoutOf(hosts []int, g int) commLayout {
	n := len(hosts)
	l := commLayout{ranks: n, inner: 1, outer: n}
	if g <= 1 || n <= 1 {
		return l
	}
	// Blocks of consecutive ranks on one domain, and whether a domain recurs.
	seen := map[int]bool{}
	block, first := 0, true
	uniform := true
	l.outer = 0
	for r := 0; r < n; {
		d := hosts[r] / g
		if seen[d] {
			uniform = false // a domain's members are not consecutive in the communicator
		}
		seen[d] = true
		k := r + 1
		for k < n && hosts[k]/g == d {
			k++
		}
		if k-r > 1 {
			l.shared = true
		}
		if first {
			block, first = k-r, false
		} else if k-r != block {
			uniform = false
		}
		r = k
	}
	l.outer = len(seen)
	if uniform {
		l.inner = block
	}
	if l.inner*l.outer != n {
		l.inner = 1
	}
	return l
}

// stageLayout returns the common layout of every group that f gives for the ranks of
// pipeline stage s (f(r) lists r's group, as Placement.Group), or a flat layout (inner 1)
// when the groups differ: one spec serves every group of a stage, so a hierarchical
// collective needs them all alike. shared is set when any group shares a domain.
func (j *Job) stageLayout(s int, f func(r int) []int) commLayout {
	pl := j.Placement
	var out commLayout
	got := false
	done := map[int]bool{}
	for r := 0; r < pl.World; r++ {
		if pl.Coord(r).PP != s || done[r] {
			continue
		}
		g := f(r)
		hosts := make([]int, len(g))
		for i, x := range g {
			done[x] = true
			hosts[i] = pl.Host(x)
		}
		l := layoutOf(hosts, pl.Domain)
		switch {
		case !got:
			out, got = l, true
		case l.inner != out.inner || l.outer != out.outer:
			out.inner, out.outer = 1, max(out.outer, l.outer)
			out.shared = out.shared || l.shared
		default:
			out.shared = out.shared || l.shared
		}
	}
	return out
}

// scaleUpModel is the GPU's NVLink as a collective.Model (per-GPU rate per direction, one-way
// latency).
func (j *Job) scaleUpModel() collective.Model {
	return collective.Model{Rate: j.GPU.ScaleUpRate, Latency: j.GPU.ScaleUpLatency}
}

// dpSpec returns the spec of a collective op of bytes over a data-parallel (or expert
// data-parallel, or ZeRO gather) group laid out as lay, with the algorithm chosen here
// (chooseAlgo) rather than left to Auto.
func (j *Job) dpSpec(op collective.Collective, lay commLayout, bytes int64) collective.Spec {
	sp := j.newSpec(op, lay.ranks, bytes)
	sp.Algo, sp.Inner, sp.Outer = j.chooseAlgo(op, lay, bytes)
	return sp
}

// chooseAlgo picks the algorithm of a collective op of S bytes over a group laid out as lay,
// following NCCL's tuner (src/graph/tuning.cc: each algorithm's time is modelled as a
// latency plus bytes over a bandwidth and the fastest is taken):
//
//   - The flat candidate is collective.AutoAlgorithm's pick (recursive doubling up to
//     64 KiB, halving-doubling or the double binary tree while S/n < 512 KiB, the ring
//     above: NCCL's tree for small messages at large rank counts, its ring for large).
//   - When the backend carries the scale-up domain (Options.ScaleUp) and the group spans
//     O >= 2 domains with I >= 2 members in each, in blocks (all-reduce, reduce-scatter and
//     all-gather), the hierarchical candidate runs the inner phases over NVLink and the
//     outer one over the network on 1/I of the data.
//   - With Options.Network set, the hierarchical candidate is taken when its
//     collective.AlphaBetaScaleUp time (inner phases at the GPU's scale-up rate and
//     latency, outer at the network's) is below the flat candidate's collective.AlphaBeta
//     time at the network's (charging every flat message to the NIC: an upper bound, as
//     neighbours in one domain would talk over NVLink). Without it, the size rule of
//     collective.AutoAlgorithmDomain: S > 64 KiB and S/O >= 512 KiB.
//
// It returns the algorithm and, for the hierarchical one, Inner x Outer.
func (j *Job) chooseAlgo(op collective.Collective, lay commLayout, S int64) (collective.Algorithm, int, int) {
	n := lay.ranks
	flat := collective.AutoAlgorithm(op, n, S)
	I, O := lay.inner, lay.outer
	hierOK := j.Options.ScaleUp && I >= 2 && O >= 2 && I*O == n && j.GPU.ScaleUpRate > 0 &&
		(op == collective.AllReduce || op == collective.ReduceScatter || op == collective.AllGather)
	if !hierOK {
		return flat, 0, 0
	}
	net := j.Options.Network
	if net.Rate <= 0 {
		if S > collective.AutoRecursiveDoublingMax && S/int64(O) >= collective.AutoTreePerRankMax {
			return collective.Hierarchical, I, O
		}
		return flat, 0, 0
	}
	h := j.newSpec(op, n, S)
	h.Algo, h.Inner, h.Outer = collective.Hierarchical, I, O
	th, err := collective.AlphaBetaScaleUp(h, j.scaleUpModel(), net)
	if err != nil {
		return flat, 0, 0
	}
	f := j.newSpec(op, n, S)
	f.Algo = flat
	tf, err := collective.AlphaBeta(f, net)
	if err == nil && tf <= th {
		return flat, 0, 0
	}
	return collective.Hierarchical, I, O
}

// TPModel says how tensor-parallel collectives inside one scale-up domain are charged.
type TPModel uint8

// Tensor-parallel models (the package documentation, "Tensor parallelism over NVLink",
// gives the error bound of each).
const (
	// TPAuto (the default): closed form on the critical path, except where the rank's own
	// NVLink may carry other traffic at the same time: during the last microbatch's backward
	// under overlap, when the stage's gradient reduction has members in one domain
	// (hierarchical, or a flat ring whose neighbours share a domain). There the TP
	// all-reduces run as collectives through the backend (NVLink links at flow level, the
	// ideal NVLink transport at packet level), sharing NVLink with the reduction.
	TPAuto TPModel = iota
	// TPClosedForm: always the closed form (collective.Pipelined ring at the NVLink rate).
	TPClosedForm
	// TPSimulated: every TP collective inside a domain runs through the backend.
	TPSimulated
	numTPModels
)

var tpModelNames = [numTPModels]string{"auto", "closed_form", "simulated"}

// String returns the YAML name: "auto", "closed_form", "simulated".
func (m TPModel) String() string {
	if m < numTPModels {
		return tpModelNames[m]
	}
	return fmt.Sprintf("tp_model(%d)", m)
}

// ParseTPModel parses a YAML name ("" is auto). Errors name the value and the valid names.
func ParseTPModel(s string) (TPModel, error) {
	if s == "" {
		return TPAuto, nil
	}
	for i, n := range tpModelNames {
		if s == n {
			return TPModel(i), nil
		}
	}
	return 0, errorf("tp_model", "%q: want one of %s", s, strings.Join(tpModelNames[:], ", "))
}

// tpSpec returns the spec of one TP all-reduce of the activations: a ring over the TP group,
// the algorithm the closed form charges.
func (j *Job) tpSpec() collective.Spec {
	sp := j.newSpec(collective.AllReduce, j.Plan.TP, j.actBytes)
	sp.Algo = collective.Ring
	return sp
}

// TPAutoMaxCollectives bounds the NVLink TP collectives tp_model auto adds to one step (over
// the whole job): beyond it the window's TP all-reduces stay in closed form and Summary gives
// the bound of what that leaves out. 100,000 collectives are 800,000 flows at TP 8 (ring
// flows), a few seconds of flow-level wall time; a 1,152-GPU Llama-3-70B job on NVL72 needs
// 5,760, a 131,072-GPU Llama-3-405B one 262,144.
const TPAutoMaxCollectives = 100_000

// planTP decides, once the stages are built, which closed-form TP all-reduces run as NVLink
// collectives (TPModel auto): those of the backward passes that overlap the gradient
// reduction (the last microbatch's on every chunk; every microbatch's under ZeRO-2) on every
// stage whose reduction puts traffic on the same GPUs' NVLink (stage.nvlShared), while the job's total
// stays within TPAutoMaxCollectives. It records the window's size and the contention bound
// either way.
func (j *Job) planTP() {
	p := j.Plan
	if !j.tpInDomain || p.TP == 1 || !j.Options.ScaleUp || !j.Options.Overlap {
		return
	}
	up := float64(j.GPU.ScaleUpRate)
	for s := range j.stages {
		st := &j.stages[s]
		if !st.nvlShared || st.zero3 {
			continue // ZeRO-3 reduce-scatters inside the passes: no overlapping cursor pass
		}
		k := 0
		for _, ch := range st.chunks {
			for _, list := range [][]item{ch.bwd, ch.wgt} {
				for _, it := range list {
					if it.nvl && it.kind == itemSeg {
						k++
					}
				}
			}
		}
		if k == 0 {
			continue
		}
		if p.ZeRO == 2 {
			k *= j.micro // every microbatch's gradients are reduce-scattered as they fill
		}
		j.tpWindow += int64(k) * int64(p.DP*p.CP) // one TP group per DP (and CP) replica
		var dpBytes float64
		for _, list := range [][]int32{st.dpSpecs, st.edpSpecs} {
			for _, sk := range list {
				dpBytes += nvlinkBytes(j.specs[sk])
			}
		}
		j.tpBound = max(j.tpBound, min(sim.Time(k)*j.tpAR, sim.FromSeconds(dpBytes*8/up)))
	}
	if j.tpWindow == 0 || j.Options.TPModel != TPAuto || j.tpWindow > TPAutoMaxCollectives {
		return
	}
	for s := range j.stages {
		if st := &j.stages[s]; st.nvlShared {
			for c := range st.chunks {
				ch := &st.chunks[c]
				ch.bwdNVL, ch.wgtNVL = nvlinkPass(ch.bwd), nvlinkPass(ch.wgt)
			}
		}
	}
	j.tpStreams, j.tpSimWin = true, true
}

// nvlinkBytes is an upper bound on the bytes one GPU moves over NVLink in collective sp
// (resolved): a hierarchical one's inner phases (2(I-1)/I S for an all-reduce, (I-1)/I S for
// a reduce-scatter or all-gather); for a flat one everything it sends (a ring's 2(n-1)/n S
// or (n-1)/n S; other algorithms at most (2 + log2 n) S).
func nvlinkBytes(sp collective.Spec) float64 {
	sp, err := sp.Resolve()
	if err != nil || sp.Ranks <= 1 {
		return 0
	}
	S, n := float64(sp.Bytes), float64(sp.Ranks)
	k := 1.0
	if sp.Op == collective.AllReduce {
		k = 2
	}
	switch sp.Algo {
	case collective.Hierarchical:
		I := float64(sp.Inner)
		return k * (I - 1) / I * S
	case collective.Ring:
		return k * (n - 1) / n * S
	}
	return (2 + math.Log2(n)) * S
}

// nvlinkPass returns items with every closed-form TP all-reduce (an itemSeg with nvl set)
// turned into a collective on the TP stream.
func nvlinkPass(items []item) []item {
	out := make([]item, len(items))
	for i, it := range items {
		if it.nvl && it.kind == itemSeg {
			it.kind = itemColl
		}
		out[i] = it
	}
	return out
}

// tpWhere says where TP all-reduces run, for Summary.
func (j *Job) tpWhere() string {
	switch {
	case !j.tpInDomain:
		return "network (TP groups cross scale-up domains)"
	case j.Options.TPModel == TPSimulated:
		return "NVLink collectives through the backend, tp_model simulated"
	case j.tpSimWin:
		return fmt.Sprintf("NVLink, closed form; during the last backward %d NVLink collectives per step, sharing NVLink with the gradient reduction", j.tpWindow)
	case j.tpWindow > 0:
		why := "tp_model closed_form"
		if j.Options.TPModel == TPAuto {
			why = fmt.Sprintf("%d collectives per step, beyond tp_model auto's %d", j.tpWindow, TPAutoMaxCollectives)
		}
		return fmt.Sprintf("NVLink, closed form; its sharing of NVLink with the gradient reduction during the last backward is not simulated (%s; tp_model simulated runs it): at most +%v per step", why, j.tpBound)
	}
	return "NVLink, closed form"
}

// collSummary describes the gradient reductions that do not run flat, one line each, for
// Summary: "dp reduction: all_reduce hierarchical 9x4: NVLink reduce-scatter and all-gather
// within each domain, the network on 1/9 of the data across 4 domains (stages 0-3)".
func (j *Job) collSummary() string {
	var b strings.Builder
	line := func(name string, specs func(st *stage) []int32) {
		seen := map[string][]int{}
		var order []string
		for s := range j.stages {
			for _, k := range specs(&j.stages[s]) {
				sp := j.specs[k]
				if sp.Algo != collective.Hierarchical {
					continue
				}
				d := fmt.Sprintf("%s %s", sp.Op, describeAlgo(sp))
				l := seen[d]
				if len(l) == 0 {
					order = append(order, d)
				}
				if len(l) == 0 || l[len(l)-1] != s {
					seen[d] = append(l, s)
				}
			}
		}
		for _, d := range order {
			fmt.Fprintf(&b, "%s: %s (stages %s)\n", name, d, fmtStages(seen[d]))
		}
	}
	line("dp reduction", func(st *stage) []int32 { return st.dpSpecs })
	line("dp parameter all-gather", func(st *stage) []int32 { return st.agSpecs })
	line("expert dp reduction", func(st *stage) []int32 { return st.edpSpecs })
	line("expert dp parameter all-gather", func(st *stage) []int32 { return st.eagSpecs })
	return b.String()
}

// fmtStages prints ascending stage numbers as ranges: "0-3", "0, 2".
func fmtStages(st []int) string {
	var parts []string
	for i := 0; i < len(st); {
		k := i
		for k+1 < len(st) && st[k+1] == st[k]+1 {
			k++
		}
		if k > i {
			parts = append(parts, fmt.Sprintf("%d-%d", st[i], st[k]))
		} else {
			parts = append(parts, fmt.Sprint(st[i]))
		}
		i = k + 1
	}
	return strings.Join(parts, ", ")
}

// describeAlgo says how a hierarchical collective runs: "hierarchical 9x4: NVLink
// reduce-scatter and all-gather within each domain, the network on 1/9 of the data across 4
// domains".
func describeAlgo(sp collective.Spec) string {
	return fmt.Sprintf("hierarchical %dx%d: NVLink %s within each domain, the network on 1/%d of the data across %d domains", sp.Inner, sp.Outer, phaseNames(sp.Op), sp.Inner, sp.Outer)
}

func phaseNames(op collective.Collective) string {
	switch op {
	case collective.AllReduce:
		return "reduce-scatter and all-gather"
	case collective.ReduceScatter:
		return "reduce-scatter"
	default:
		return "all-gather"
	}
}
