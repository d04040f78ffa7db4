package training

import (
	"fmt"
	"strings"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/workload/collective"
)

// Category classifies the time on a rank's compute stream. Every instant of a step falls in
// exactly one category, so a rank's categories sum to the step time.
type Category uint8

// Categories. The power state of each is in GPU's documentation: Compute is busy; TP, PP, DP
// and EP (waiting on the network or NVLink) are communicating; Bubble and Sync (waiting for
// other ranks) are idle.
const (
	// CatCompute: forward, backward and optimizer kernels.
	CatCompute Category = iota
	// CatTP: exposed tensor-parallel communication: NVLink all-reduces (closed form, on the
	// critical path), or waits on network TP collectives once launched.
	CatTP
	// CatPP: waits on pipeline send/recv transfers once both stages posted them.
	CatPP
	// CatDP: exposed data-parallel gradient reduction (and ZeRO parameter all-gather).
	CatDP
	// CatEP: waits on expert-parallel all-to-alls (dispatch and combine) once launched.
	CatEP
	// CatBubble: pipeline bubble: waiting for the neighbouring stage to post its side of a
	// pipeline transfer, and waiting at the end of the step for the slowest rank.
	CatBubble
	// CatSync: waiting for other members of a TP, DP or EP group to reach a collective
	// (stragglers, skew).
	CatSync
	NumCategories
)

var catNames = [NumCategories]string{"compute", "tp", "pp", "dp", "ep", "bubble", "sync"}

// String returns the category's short name ("compute", "tp", "pp", "dp", "ep", "bubble",
// "sync").
func (c Category) String() string {
	if c < NumCategories {
		return catNames[c]
	}
	return fmt.Sprintf("category(%d)", c)
}

// Comm reports whether the category is time waiting on communication (TP, PP, DP, EP).
func (c Category) Comm() bool { return c >= CatTP && c <= CatEP }

// Breakdown is the time of one rank (or a mean over ranks) by category.
type Breakdown [NumCategories]sim.Time

// Total returns the sum over categories.
func (b Breakdown) Total() sim.Time {
	var t sim.Time
	for _, v := range b {
		t += v
	}
	return t
}

// Exposed returns the exposed communication: TP + PP + DP + EP.
func (b Breakdown) Exposed() sim.Time { return b[CatTP] + b[CatPP] + b[CatDP] + b[CatEP] }

// role is a rank's communication stream by purpose.
type role uint8

const (
	roleTP       role = iota // tensor-parallel group (when it crosses scale-up domains)
	roleEP                   // expert-parallel group
	rolePPFwdIn              // activations from the previous stage
	rolePPFwdOut             // activations to the next stage
	rolePPBwdIn              // gradients from the next stage
	rolePPBwdOut             // gradients to the previous stage
	roleDP                   // data-parallel group (dense gradients)
	roleEDP                  // expert data-parallel group (expert gradients)
	numRoles
)

// roleCat is the category of a network wait on each role, and of a wait for peers.
var roleCat = [numRoles][2]Category{
	roleTP: {CatTP, CatSync}, roleEP: {CatEP, CatSync},
	rolePPFwdIn: {CatPP, CatBubble}, rolePPFwdOut: {CatPP, CatBubble},
	rolePPBwdIn: {CatPP, CatBubble}, rolePPBwdOut: {CatPP, CatBubble},
	roleDP: {CatDP, CatSync}, roleEDP: {CatDP, CatSync},
}

// seg is a piece of a compute pattern: a duration in one category.
type seg struct {
	dur sim.Time
	cat Category
}

// pattern is a run of compute-stream work with no network dependency: one op on the compute
// stream, one event. Its segments keep the interleaving (per layer: compute, NVLink TP
// all-reduce, ...) for the power trace.
type pattern struct {
	segs []seg
	dur  sim.Time
	sums Breakdown
}

type itemKind uint8

const (
	itemSeg  itemKind = iota // compute (or NVLink TP) time
	itemColl                 // a network collective on a role's stream, posted and waited for
)

// item is one element of a microbatch's forward or backward pass on a stage.
type item struct {
	kind  itemKind
	seg   seg
	role  role
	spec  int32
	label int32
	grad  int64 // backward: dense gradient bytes this item produces
	egrad int64 // backward: expert gradient bytes (reduced over the expert-DP group)
	nvl   bool  // an NVLink TP all-reduce (seg its closed form) that can run as a collective (spec, label, roleTP)
}

// Options are the job's knobs beyond model, GPU and plan.
type Options struct {
	// Overlap launches each gradient bucket's reduction as soon as the last microbatch's
	// backward has produced it (PyTorch DDP, Megatron-Core overlap_grad_reduce); off, every
	// bucket is launched after the last backward.
	Overlap bool
	// BucketBytes is the gradient bucket size in bytes; 0 takes Megatron-Core's default of
	// max(40M, 1M x DP) parameters (DistributedDataParallelConfig.bucket_size) at the
	// gradient element size: 80 MB for bf16 gradients at DP <= 40. Larger buckets than
	// PyTorch DDP's 25 MiB keep the all-reduce bandwidth-bound at large DP (a ring's latency
	// term grows with 2(DP-1) steps), at the cost of a later first launch.
	BucketBytes int64
	// ChunkBytes is the pipelining chunk of network collectives (Spec.ChunkBytes); 0 takes
	// collective.DefaultChunkBytes (512 KiB, NCCL's ring step).
	ChunkBytes int64
	// ScaleUp says the backend carries collectives between GPUs of one scale-up domain on
	// the GPU's scale-up (NVLink) model, as the runner's backends do (closed forms at the
	// NVLink rate, the flow engine's NVLink links, SplitTransport). It enables hierarchical
	// collectives across domains and TP collectives on NVLink (TPModel); without it every
	// collective is chosen flat and TP inside a domain stays in closed form, as a backend
	// with one network (a plain AnalyticBackend or Ideal) would otherwise charge NVLink
	// traffic at the NIC rate.
	ScaleUp bool
	// Network is the per-GPU network (NIC rate, per-message latency) the collective
	// selector assumes (collsel.go, chooseAlgo); zero: its size rule.
	Network collective.Model
	// TPModel says how TP collectives inside a scale-up domain are charged (default auto).
	TPModel TPModel
}

// StageInfo describes one pipeline stage's work per rank (shapes and closed-form times).
type StageInfo struct {
	FirstLayer, Layers int      // layers [FirstLayer, FirstLayer+Layers)
	Forward, Backward  sim.Time // per microbatch: compute plus NVLink TP (no network waits)
	ForwardTP          sim.Time // the NVLink TP part of Forward
	BackwardTP         sim.Time // the NVLink TP part of Backward
	Optimizer          sim.Time // the optimizer step (memory-bound)
	ParamsPerRank      int64    // weights held by one rank of the stage
	GradBytes          int64    // dense gradient bytes per rank reduced over DP
	ExpertGradBytes    int64    // expert gradient bytes per rank reduced over DP/EP
	Buckets            int      // DP buckets
	ExpertBuckets      int      // expert-DP buckets
	ForwardCollectives int      // network collectives per microbatch forward (EP, cross-domain TP)
}

type stage struct {
	info           StageInfo
	fwd, bwd       []item
	bwdLast        []item  // the backward that overlaps the gradient reduction (bwd, or with TP on NVLink collectives)
	nvlShared      bool    // the stage's gradient reduction has members sharing a scale-up domain
	dpSpecs        []int32 // per bucket: reduction spec
	dpLabels       []int32
	edpSpecs       []int32
	edpLabels      []int32
	agSpecs        []int32 // ZeRO: per bucket all-gather spec
	agLabels       []int32
	eagSpecs       []int32
	eagLabels      []int32
	optimizer      sim.Time
	hasExpertGrads bool
}

// Job is a training job ready to run: the model, GPU, plan and placement, resolved, with each
// stage's per-microbatch forward and backward (compute phases, NVLink TP costed in closed
// form, network collectives), gradient buckets and optimizer step. NewJob builds it; Run
// simulates it.
type Job struct {
	Model     Model      // resolved
	GPU       GPU        // resolved
	Plan      Plan       // resolved
	Placement *Placement // rank to host mapping
	Options   Options    // knobs as given

	micro      int      // microbatches per step
	tpInDomain bool     // every TP group inside one scale-up domain
	tpStreams  bool     // TP collectives go through the backend (TP groups cross domains, or TPModel)
	tpWindow   int64    // closed-form TP all-reduces per step that overlap NVLink traffic of the reduction (planTP)
	tpSimWin   bool     // they run as NVLink collectives
	tpBound    sim.Time // what leaving them in closed form can miss per step, at most
	tpAR       sim.Time // NVLink all-reduce of one activation (closed form)
	actBytes   int64    // one microbatch's activations, b s h dtype
	bucket     int64    // resolved bucket bytes
	actSpec    int32    // PP send/recv spec
	stages     []stage
	specs      []collective.Spec
	specIdx    map[specKey]int32
	labels     []string
	patterns   []pattern
	patIdx     map[string]int32
}

// OptimizerBytesPerParam is the HBM traffic of one Adam update per parameter with
// mixed-precision master weights (Micikevicius et al., ICLR 2018; Kingma & Ba 2015): read
// the fp32 master weight, first and second moments (12 B), write them back (12 B), read the
// gradient (grad_dtype) and write the bf16/fp16 working weight (dtype); 28 B for bf16.
func OptimizerBytesPerParam(m Model) int64 { return 24 + m.gradBytesPerParam() + m.bytesPerElem() }

// NewJob resolves m, g and p (presets, defaults, checks) for pl's world and builds the job.
// pl may be nil: NewJob then lays the plan out with the GPU's scale-up domain. Errors:
// *FieldError values with paths "model.…", "gpu.…", "plan.…" for anything out of range or
// inconsistent (the arithmetic shown), or a placement that does not match the plan.
func NewJob(m Model, g GPU, p Plan, pl *Placement, o Options) (*Job, error) {
	var err error
	if m, err = m.Resolve(); err != nil {
		return nil, under("model", err)
	}
	if g, err = g.Resolve(); err != nil {
		return nil, under("gpu", err)
	}
	world := p.TP * p.PP * max(p.DP, 1)
	if pl != nil {
		world = pl.World
	} else if p.DP == 0 {
		return nil, errorf("plan.dp", "0 with no placement: give dp or a placement (world size)")
	}
	if p, err = p.Resolve(world, m); err != nil {
		return nil, err
	}
	if pl == nil {
		if pl, err = NewPlacement(p, g.ScaleUpGPUs); err != nil {
			return nil, err
		}
	} else if pl.Size != [NumDims]int{p.TP, p.DP, p.PP} || pl.EP != p.EP {
		return nil, errorf("plan", "tp=%d dp=%d pp=%d ep=%d does not match the placement's tp=%d dp=%d pp=%d ep=%d", p.TP, p.DP, p.PP, p.EP, pl.Size[DimTP], pl.Size[DimDP], pl.Size[DimPP], pl.EP)
	}
	if o.BucketBytes < 0 {
		return nil, errorf("bucket_bytes", "%d: want 0 (Megatron-Core's default) or a positive size", o.BucketBytes)
	}
	if o.ChunkBytes < 0 {
		return nil, errorf("chunk_bytes", "%d: want 0 (512 KiB) or a positive size", o.ChunkBytes)
	}
	if m.bytesPerElem() == 1 && g.PeakFP8TFLOPS <= 0 {
		return nil, errorf("gpu.peak_fp8_tflops", "0 but the model's dtype is fp8; give the GPU's dense fp8 peak")
	}
	j := &Job{Model: m, GPU: g, Plan: p, Placement: pl, Options: o,
		specIdx: map[specKey]int32{}, patIdx: map[string]int32{}}
	j.micro = p.Microbatches(m)
	j.actBytes = m.ActivationBytes()
	j.bucket = o.BucketBytes
	if j.bucket == 0 {
		j.bucket = max(40_000_000, 1_000_000*int64(p.DP)) * m.gradBytesPerParam()
	}
	j.tpInDomain = true
	if p.TP > 1 {
		for r := 0; r < pl.World; r++ {
			if pl.Coord(r).TP == 0 && pl.Domains(pl.Group(DimTP, r)) > 1 {
				j.tpInDomain = false
				break
			}
		}
		if j.tpInDomain && o.TPModel == TPSimulated && !o.ScaleUp {
			return nil, errorf("tp_model", "simulated runs TP collectives through the backend, which must carry the scale-up domain (Options.ScaleUp)")
		}
		j.tpStreams = !j.tpInDomain || o.TPModel == TPSimulated
		if j.tpInDomain {
			t, err := collective.Pipelined(j.tpSpec(), j.scaleUpModel())
			if err != nil {
				return nil, err
			}
			j.tpAR = t
		}
	}
	if p.PP > 1 {
		sp := j.newSpec(collective.SendRecv, 2, j.actBytes/int64(p.TP))
		sp.Root, sp.Peer = 0, 1
		j.actSpec = j.addSpec(sp)
	}
	if err := j.buildStages(); err != nil {
		return nil, err
	}
	return j, nil
}

func (j *Job) newSpec(op collective.Collective, n int, bytes int64) collective.Spec {
	sp := collective.NewSpec(op, n, bytes)
	if j.Options.ChunkBytes > 0 {
		sp.ChunkBytes = j.Options.ChunkBytes
	}
	return sp
}

func (j *Job) addSpec(sp collective.Spec) int32 {
	k := keyOf(sp)
	if i, ok := j.specIdx[k]; ok {
		return i
	}
	j.specs = append(j.specs, sp)
	j.specIdx[k] = int32(len(j.specs) - 1)
	return int32(len(j.specs) - 1)
}

func (j *Job) addLabel(s string) int32 {
	j.labels = append(j.labels, s)
	return int32(len(j.labels) - 1)
}

// addPattern interns a run of segments as a pattern.
func (j *Job) addPattern(segs []seg) int32 {
	var kb strings.Builder
	for _, s := range segs {
		fmt.Fprintf(&kb, "%d:%d,", s.cat, s.dur)
	}
	k := kb.String()
	if i, ok := j.patIdx[k]; ok {
		return i
	}
	p := pattern{segs: append([]seg(nil), segs...)}
	for _, s := range segs {
		p.dur += s.dur
		p.sums[s.cat] += s.dur
	}
	j.patterns = append(j.patterns, p)
	j.patIdx[k] = int32(len(j.patterns) - 1)
	return int32(len(j.patterns) - 1)
}

// Microbatches returns the microbatches per pipeline per step.
func (j *Job) Microbatches() int { return j.micro }

// World returns the number of ranks (GPUs).
func (j *Job) World() int { return j.Placement.World }

// Stages returns each pipeline stage's description.
func (j *Job) Stages() []StageInfo {
	out := make([]StageInfo, len(j.stages))
	for i := range j.stages {
		out[i] = j.stages[i].info
	}
	return out
}

// TPInDomain reports whether every tensor-parallel group sits inside one scale-up domain, so
// TP all-reduces are costed in closed form on NVLink; otherwise they go through the backend.
func (j *Job) TPInDomain() bool { return j.tpInDomain }

// BucketBytes returns the gradient bucket size in use.
func (j *Job) BucketBytes() int64 { return j.bucket }

// StepFLOPs returns the model FLOPs of one step over the whole job (Model.StepFLOPs).
func (j *Job) StepFLOPs() float64 { return j.Model.StepFLOPs().Total() }

// computeTime returns the time of flops FLOPs (whole layer, one microbatch) on one TP rank.
func (j *Job) computeTime(flopsPerToken float64) sim.Time {
	tokens := float64(j.Model.MicroBatch) * float64(j.Model.SeqLen)
	return sim.FromSeconds(flopsPerToken * tokens / float64(j.Plan.TP) / j.GPU.flopsPerSec(j.Model.bytesPerElem()))
}

// buildStages lays out each stage's forward and backward items, buckets and optimizer.
func (j *Job) buildStages() error {
	m, p := j.Model, j.Plan
	tp, ep := int64(p.TP), int64(p.EP)
	gb := m.gradBytesPerParam()
	par := m.Params()
	tpItem := func(what string, layer int) item {
		if p.TP == 1 {
			return item{}
		}
		sp := j.newSpec(collective.AllReduce, p.TP, j.actBytes)
		if j.tpInDomain {
			sp = j.tpSpec()
		}
		it := item{kind: itemColl, role: roleTP, spec: j.addSpec(sp), label: j.addLabel(fmt.Sprintf("tp %s layer %d", what, layer))}
		if j.tpInDomain { // NVLink: its closed form is in StageInfo either way
			it.seg, it.nvl = seg{j.tpAR, CatTP}, true
			if j.Options.TPModel != TPSimulated {
				it.kind = itemSeg
			}
		}
		return it
	}
	var epSpec int32 = -1
	if m.IsMoE() && p.EP > 1 {
		tokens := int64(m.MicroBatch) * int64(m.SeqLen) / tp
		moe := collective.MoE{Ranks: p.EP, Tokens: tokens * ep, TopK: m.TopK, Hidden: int64(m.Hidden), DTypeBytes: m.bytesPerElem()}
		sp, err := moe.DispatchSpec()
		if err != nil {
			return err
		}
		if j.Options.ChunkBytes > 0 {
			sp.ChunkBytes = j.Options.ChunkBytes
		}
		epSpec = j.addSpec(sp)
	}
	epItem := func(what string, layer int) item {
		return item{kind: itemColl, role: roleEP, spec: epSpec, label: j.addLabel(fmt.Sprintf("ep %s layer %d", what, layer))}
	}
	attnPer := 2*float64(par.Attention) + m.layerForward(0).Attention
	first := 0
	for s := 0; s < p.PP; s++ {
		n := p.StageLayers[s]
		st := stage{info: StageInfo{FirstLayer: first, Layers: n}}
		var fwd, bwd []item
		add := func(list *[]item, it item) {
			if it.kind == itemSeg && it.seg.dur == 0 && it.grad == 0 && it.egrad == 0 {
				return
			}
			*list = append(*list, it)
		}
		var params int64
		layerFwd := func(i int) []item {
			var out []item
			lf := m.layerForward(i)
			mlp := lf.Matmul - 2*float64(par.Attention)
			add(&out, item{kind: itemSeg, seg: seg{j.computeTime(attnPer), CatCompute}})
			add(&out, tpItem("attn", i))
			moe := m.moeLayer(i) && p.EP > 1
			if moe {
				out = append(out, epItem("dispatch", i))
			}
			add(&out, item{kind: itemSeg, seg: seg{j.computeTime(mlp), CatCompute}})
			if moe {
				out = append(out, epItem("combine", i))
			}
			add(&out, tpItem("mlp", i))
			return out
		}
		for i := first; i < first+n; i++ {
			for _, it := range layerFwd(i) {
				add(&fwd, it)
			}
		}
		if s == p.PP-1 {
			add(&fwd, item{kind: itemSeg, seg: seg{j.computeTime(m.headForward()), CatCompute}})
			add(&bwd, item{kind: itemSeg, seg: seg{j.computeTime(2 * m.headForward()), CatCompute}, grad: par.LMHead / tp * gb})
			params += par.LMHead / tp
		}
		for i := first + n - 1; i >= first; i-- {
			if p.Recompute {
				for _, it := range layerFwd(i) {
					add(&bwd, it)
				}
			}
			lf := m.layerForward(i)
			mlp := lf.Matmul - 2*float64(par.Attention)
			var dg, eg int64
			if m.moeLayer(i) {
				routed := int64(m.Experts) * m.expertParams() / ep / tp
				shared := int64(m.SharedExperts) * m.expertParams() / tp
				dg = (shared + par.Router/tp) * gb
				eg = routed * gb
				params += routed + shared + par.Router/tp
				if p.EP == 1 || p.DP/p.EP == 1 {
					// no separate expert-DP group: EP 1 reduces experts with the dense
					// gradients over DP; DP/EP 1 leaves nothing to reduce.
					if p.EP == 1 {
						dg += eg
					}
					eg = 0
				} else {
					st.hasExpertGrads = true
				}
			} else {
				dg = par.DenseMLP / tp * gb
				params += par.DenseMLP / tp
			}
			moe := m.moeLayer(i) && p.EP > 1
			add(&bwd, tpItem("mlp.bwd", i))
			if moe {
				bwd = append(bwd, epItem("combine.bwd", i))
			}
			add(&bwd, item{kind: itemSeg, seg: seg{j.computeTime(2 * mlp), CatCompute}, grad: dg, egrad: eg})
			if moe {
				bwd = append(bwd, epItem("dispatch.bwd", i))
			}
			add(&bwd, tpItem("attn.bwd", i))
			ag := (par.Attention + par.Norms) / tp
			add(&bwd, item{kind: itemSeg, seg: seg{j.computeTime(2 * attnPer), CatCompute}, grad: ag * gb})
			params += ag
		}
		if s == 0 {
			add(&bwd, item{kind: itemSeg, seg: seg{0, CatCompute}, grad: par.Embedding / tp * gb})
			params += par.Embedding / tp
		}
		st.fwd, st.bwd = fwd, bwd
		// Buckets and closed-form times.
		var dense, expert int64
		for _, it := range bwd {
			dense += it.grad
			expert += it.egrad
		}
		st.info.GradBytes, st.info.ExpertGradBytes, st.info.ParamsPerRank = dense, expert, params
		dpOp := collective.AllReduce
		if p.ZeRO {
			dpOp = collective.ReduceScatter
		}
		buckets := func(total int64, lay commLayout, name string) (specs, labels, ag, agl []int32) {
			if lay.ranks <= 1 || total == 0 {
				return
			}
			k := (total + j.bucket - 1) / j.bucket
			for b := int64(0); b < k; b++ {
				size := min(j.bucket, total-b*j.bucket)
				specs = append(specs, j.addSpec(j.dpSpec(dpOp, lay, size)))
				labels = append(labels, j.addLabel(fmt.Sprintf("%s bucket %d/%d", name, b+1, k)))
				if p.ZeRO {
					pb := size / gb * m.bytesPerElem()
					ag = append(ag, j.addSpec(j.dpSpec(collective.AllGather, lay, pb)))
					agl = append(agl, j.addLabel(fmt.Sprintf("%s param all-gather %d/%d", name, b+1, k)))
				}
			}
			return
		}
		pl := j.Placement
		dpLay := j.stageLayout(s, func(r int) []int { return pl.Group(DimDP, r) })
		st.dpSpecs, st.dpLabels, st.agSpecs, st.agLabels = buckets(dense, dpLay, "dp")
		shared := dpLay.shared && p.DP > 1
		if st.hasExpertGrads {
			edpLay := j.stageLayout(s, pl.ExpertDPGroup)
			st.edpSpecs, st.edpLabels, st.eagSpecs, st.eagLabels = buckets(expert, edpLay, "expert dp")
			shared = shared || edpLay.shared
		}
		st.bwdLast, st.nvlShared = st.bwd, shared
		st.info.Buckets, st.info.ExpertBuckets = len(st.dpSpecs), len(st.edpSpecs)
		shard := params
		if p.ZeRO {
			shard = params / int64(p.DP)
		}
		st.optimizer = sim.FromSeconds(float64(shard*OptimizerBytesPerParam(m)) / (j.GPU.HBMGBPerSec * 1e9))
		st.info.Optimizer = st.optimizer
		for _, it := range fwd {
			if it.kind == itemSeg || it.nvl {
				st.info.Forward += it.seg.dur
				if it.seg.cat == CatTP {
					st.info.ForwardTP += it.seg.dur
				}
			} else {
				st.info.ForwardCollectives++
			}
		}
		for _, it := range bwd {
			if it.kind == itemSeg || it.nvl {
				st.info.Backward += it.seg.dur
				if it.seg.cat == CatTP {
					st.info.BackwardTP += it.seg.dur
				}
			}
		}
		j.stages = append(j.stages, st)
		first += n
	}

	j.planTP()
	return nil
}

// Summary describes the job in a few lines: the grid, microbatches, each stage's per-
// microbatch times and gradient buckets.
func (j *Job) Summary() string {
	var b strings.Builder
	m, p := j.Model, j.Plan
	fmt.Fprintf(&b, "%s on %d x %s: tp %d, pp %d, dp %d, ep %d; %d microbatches of %d x %d tokens per step (global batch %d sequences)\n",
		m.Name, j.World(), j.GPU.Name, p.TP, p.PP, p.DP, p.EP, j.micro, m.MicroBatch, m.SeqLen, m.GlobalBatch)
	tpWhere := j.tpWhere()
	if p.TP > 1 {
		fmt.Fprintf(&b, "TP all-reduce of %s per layer boundary: %v (%s)\n", sim.FormatSize(j.actBytes), j.tpAR, tpWhere)
	}
	fmt.Fprintf(&b, "gradient buckets of %s; overlap %v; zero %v; recompute %v\n", sim.FormatSize(j.bucket), j.Options.Overlap, p.ZeRO, p.Recompute)
	b.WriteString(j.collSummary())
	for s, st := range j.stages {
		in := st.info
		fmt.Fprintf(&b, "stage %d: layers %d-%d, forward %v (TP %v), backward %v (TP %v), optimizer %v, %d params/rank, grads %s in %d buckets",
			s, in.FirstLayer, in.FirstLayer+in.Layers-1, in.Forward, in.ForwardTP, in.Backward, in.BackwardTP, in.Optimizer, in.ParamsPerRank, sim.FormatSize(in.GradBytes), in.Buckets)
		if in.ExpertBuckets > 0 {
			fmt.Fprintf(&b, ", expert grads %s in %d buckets", sim.FormatSize(in.ExpertGradBytes), in.ExpertBuckets)
		}
		if in.ForwardCollectives > 0 {
			fmt.Fprintf(&b, ", %d network collectives per forward", in.ForwardCollectives)
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

// ideal returns the step time with an infinitely fast network and no pipeline bubble:
// per-rank compute (incl. NVLink TP) of every microbatch plus the optimizer, the slowest
// stage's. Used for checks and reports.
func (j *Job) ideal() sim.Time {
	var most sim.Time
	for _, st := range j.stages {
		t := sim.Time(j.micro)*(st.info.Forward+st.info.Backward) + st.optimizer
		most = max(most, t)
	}
	return most
}
