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
	// CatCP: exposed context-parallel communication: the key/value all-gathers and their
	// gradients' reduce-scatters (NVLink closed form inside a domain, else network waits
	// once launched).
	CatCP
	// CatBubble: pipeline bubble: waiting for the neighbouring stage to post its side of a
	// pipeline transfer, and, with pp > 1, waiting at the end of the step for the slowest rank.
	CatBubble
	// CatSync: waiting for other members of a TP, DP or EP group to reach a collective
	// (stragglers, skew), and, with pp 1 (no pipeline, so no bubble), waiting at the end of
	// the step for the slowest rank.
	CatSync
	NumCategories
)

var catNames = [NumCategories]string{"compute", "tp", "pp", "dp", "ep", "cp", "bubble", "sync"}

// String returns the category's short name ("compute", "tp", "pp", "dp", "ep", "cp",
// "bubble", "sync").
func (c Category) String() string {
	if c < NumCategories {
		return catNames[c]
	}
	return fmt.Sprintf("category(%d)", c)
}

// Comm reports whether the category is time waiting on communication (TP, PP, DP, EP, CP).
func (c Category) Comm() bool { return c >= CatTP && c <= CatCP }

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

// Exposed returns the exposed communication: TP + PP + DP + EP + CP.
func (b Breakdown) Exposed() sim.Time {
	return b[CatTP] + b[CatPP] + b[CatDP] + b[CatEP] + b[CatCP]
}

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
	roleCP                   // context-parallel group (key/value all-gathers, when it crosses domains)
	roleDPAG                 // data-parallel group's ZeRO-3 parameter all-gathers (their own stream)
	numRoles
)

// roleCat is the category of a network wait on each role, and of a wait for peers.
var roleCat = [numRoles][2]Category{
	roleTP: {CatTP, CatSync}, roleEP: {CatEP, CatSync},
	rolePPFwdIn: {CatPP, CatBubble}, rolePPFwdOut: {CatPP, CatBubble},
	rolePPBwdIn: {CatPP, CatBubble}, rolePPBwdOut: {CatPP, CatBubble},
	roleDP: {CatDP, CatSync}, roleEDP: {CatDP, CatSync},
	roleCP: {CatCP, CatSync}, roleDPAG: {CatDP, CatSync},
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
	itemPost                 // post a collective on a role's stream without waiting (tag names it)
	itemWait                 // wait for the collective posted with the same tag in this pass
)

// item is one element of a microbatch's forward or backward pass on a chunk.
type item struct {
	kind  itemKind
	seg   seg
	role  role
	spec  int32
	label int32
	tag   int32 // itemPost, itemWait: pairs a wait with its post within one pass
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
// Times are per microbatch through all of the stage's chunks.
type StageInfo struct {
	FirstLayer, Layers int      // the first chunk's first layer; layers held by the stage
	ChunkLayers        []int    // layers of each model chunk (virtual stage), in chunk order
	ChunkFirst         []int    // each chunk's first layer (chunk c of stage s is virtual stage c x pp + s)
	Forward, Backward  sim.Time // per microbatch: compute plus NVLink TP (no network waits); Backward includes W
	ForwardTP          sim.Time // the NVLink TP (and in-domain CP) part of Forward
	BackwardTP         sim.Time // the NVLink TP (and in-domain CP) part of Backward
	WeightGrad         sim.Time // zb-h1: the W (weight-gradient) part of Backward; 0 otherwise
	Optimizer          sim.Time // the optimizer step (memory-bound)
	ParamsPerRank      int64    // weights held by one rank of the stage
	GradBytes          int64    // dense gradient bytes per rank reduced over DP (x CP)
	ExpertGradBytes    int64    // expert gradient bytes per rank reduced over DP/EP
	Buckets            int      // DP buckets
	ExpertBuckets      int      // expert-DP buckets
	ForwardCollectives int      // network collectives per microbatch forward (EP, cross-domain TP/CP)
}

// chunk is one model chunk (virtual stage) of a stage: its forward, backward and, for
// zb-h1, weight-gradient passes per microbatch.
type chunk struct {
	first, layers int
	fwd, bwd, wgt []item // wgt: the W pass (zb-h1 only; otherwise bwd computes the weight gradients)
	// bwdNVL and wgtNVL are bwd and wgt with their closed-form NVLink TP all-reduces turned
	// into collectives (planTP, tp_model auto): the passes that overlap the gradient
	// reduction run them, so TP shares NVLink with it. Nil when TP stays in closed form.
	bwdNVL, wgtNVL []item
}

type stage struct {
	info           StageInfo
	chunks         []chunk
	nvlShared      bool    // the stage's gradient reduction has members sharing a scale-up domain
	dpSpecs        []int32 // per bucket: reduction spec
	dpLabels       []int32
	edpSpecs       []int32
	edpLabels      []int32
	agSpecs        []int32 // ZeRO 1-2: per bucket all-gather spec after the optimizer
	agLabels       []int32
	eagSpecs       []int32
	eagLabels      []int32
	optimizer      sim.Time
	hasExpertGrads bool
	zero3          bool // ZeRO-3: gradients reduce-scattered per layer inside the passes
}

// Job is a training job ready to run: the model, GPU, plan and placement, resolved, with each
// stage's per-microbatch forward and backward (compute phases, NVLink TP costed in closed
// form, network collectives) per model chunk, gradient buckets and optimizer step. NewJob
// builds it; Run simulates it.
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
	cpInDomain bool     // every CP group inside one scale-up domain
	tpAR       sim.Time // NVLink all-reduce of one activation (closed form)
	actBytes   int64    // one microbatch's activations per CP rank, b s h / cp dtype
	kvBytes    int64    // one layer's keys and values of a microbatch per TP rank, all CP ranks
	bucket     int64    // resolved bucket bytes
	actSpec    int32    // PP send/recv spec
	stages     []stage
	specs      []collective.Spec
	specIdx    map[specKey]int32
	labels     []string
	patterns   []pattern
	patIdx     map[string]int32
	patKey     []byte        // addPattern's scratch key
	warm       map[int][]int // interleaved warmups per microbatch count (Job.warmups)
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
	world := max(p.TP, 1) * max(p.CP, 1) * max(p.PP, 1) * max(p.DP, 1)
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
	} else if pl.Size != [NumDims]int{DimTP: p.TP, DimDP: p.DP, DimPP: p.PP, DimCP: p.CP} || pl.EP != p.EP {
		return nil, errorf("plan", "tp=%d cp=%d dp=%d pp=%d ep=%d does not match the placement's tp=%d cp=%d dp=%d pp=%d ep=%d", p.TP, p.CP, p.DP, p.PP, p.EP, pl.Size[DimTP], pl.Size[DimCP], pl.Size[DimDP], pl.Size[DimPP], pl.EP)
	}
	if p.CP > 1 && p.EP > 1 {
		return nil, errorf("plan.cp", "%d with ep=%d: context parallelism with expert parallelism is not modelled", p.CP, p.EP)
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
	j.actBytes = m.ActivationBytes() / int64(p.CP)
	j.kvBytes = int64(m.MicroBatch) * int64(m.SeqLen) * m.kvElemsPerToken() / int64(p.TP) * m.bytesPerElem()
	if m.KVLoRARank > 0 {
		j.kvBytes = int64(m.MicroBatch) * int64(m.SeqLen) * m.kvElemsPerToken() * m.bytesPerElem() // the latent is not split over TP
	}
	j.bucket = o.BucketBytes
	if j.bucket == 0 {
		j.bucket = max(40_000_000, 1_000_000*int64(p.DP*p.CP)) * m.gradBytesPerParam()
	}
	inDomain := func(d Dim, size int) bool {
		if size <= 1 {
			return true
		}
		for r := 0; r < pl.World; r++ {
			if pl.Domains(pl.Group(d, r)) > 1 {
				return false
			}
		}
		return true
	}
	j.tpInDomain = inDomain(DimTP, p.TP)
	j.cpInDomain = inDomain(DimCP, p.CP)
	if p.TP > 1 && j.tpInDomain && o.TPModel == TPSimulated && !o.ScaleUp {
		return nil, errorf("tp_model", "simulated runs TP collectives through the backend, which must carry the scale-up domain (Options.ScaleUp)")
	}
	j.tpStreams = p.TP > 1 && (!j.tpInDomain || o.TPModel == TPSimulated)
	if p.TP > 1 && j.tpInDomain {
		t, err := collective.Pipelined(j.tpSpec(), j.scaleUpModel())
		if err != nil {
			return nil, err
		}
		j.tpAR = t
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
	// The key: each segment's category byte and 8-byte duration (a fixed width, so distinct
	// lists give distinct keys); built without fmt, as a program adds a pattern per op.
	kb := j.patKey[:0]
	for _, s := range segs {
		d := uint64(s.dur)
		kb = append(kb, byte(s.cat), byte(d), byte(d>>8), byte(d>>16), byte(d>>24), byte(d>>32), byte(d>>40), byte(d>>48), byte(d>>56))
	}
	j.patKey = kb
	if i, ok := j.patIdx[string(kb)]; ok { // no allocation for the lookup
		return i
	}
	k := string(kb)
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

// PeakFLOPS returns one GPU's dense peak FLOP/s for the model's dtype (the MFU denominator).
func (j *Job) PeakFLOPS() float64 { return j.GPU.peakFLOPS(j.Model.bytesPerElem()) }

// MFU returns the model FLOPs utilisation of a step of the given time: StepFLOPs / (step x
// GPUs x PeakFLOPS). StepFLOPs is 6 N + 12 l s h_attn per token (PaLM's count, Chowdhery et
// al. 2022, Appendix B; Narayanan et al., SC'21): attention scores in full, not halved for
// the causal mask, and no recomputation.
func (j *Job) MFU(step sim.Time) float64 {
	if step <= 0 {
		return 0
	}
	return j.StepFLOPs() / (step.Seconds() * float64(j.World()) * j.PeakFLOPS())
}

// gradGroup returns the ranks over which r's dense gradients are reduced (and ZeRO shards):
// every rank with r's TP and PP coordinates, DP x CP ranks (Megatron's data-parallel group
// with context parallelism: CP ranks hold the same weights and see different tokens).
func (j *Job) gradGroup(r int) []int {
	pl := j.Placement
	if pl.Size[DimCP] == 1 {
		return pl.Group(DimDP, r)
	}
	var out []int
	for _, x := range pl.Group(DimDP, r) {
		out = append(out, pl.Group(DimCP, x)...)
	}
	return out
}

// work is a compute phase being summed in seconds (converted to sim.Time once, so a flat
// GPU's phases round as a single sum of FLOPs did before per-operation efficiencies).
type work struct{ s float64 }

// buildStages lays out each stage's chunks (forward, backward and W items), buckets and
// optimizer. Per rank, a microbatch is b s / cp tokens, split over tp for every matmul and
// attention head.
func (j *Job) buildStages() error {
	m, p, g := j.Model, j.Plan, j.GPU
	tp, ep := int64(p.TP), int64(p.EP)
	gb := m.gradBytesPerParam()
	el := m.bytesPerElem()
	par := m.Params()
	flat := g.Flat()
	zb := p.Schedule == ScheduleZBH1
	tokens := float64(m.MicroBatch) * float64(m.SeqLen) / float64(p.CP) / float64(p.TP) // per rank, per TP shard
	gemm := func(perToken float64) float64 { return perToken * tokens / g.gemmFLOPS(el) }
	// The attention core: executed FLOPs (causal: half the score matrix) per-op; the full
	// model count in the flat model. bwd is the backward's multiple of the forward.
	attn := func(i int, bwd bool) float64 {
		f := m.layerForward(i).Attention * tokens
		if flat {
			if bwd {
				f *= 2
			}
			return f / g.attnFLOPS(el)
		}
		f /= 2
		if bwd {
			f *= 2.5
		}
		return f / g.attnFLOPS(el)
	}
	mem := func(bytesPerToken float64) float64 {
		if flat {
			return 0
		}
		return bytesPerToken * tokens * float64(p.TP) / g.memBytesPerSec()
	}
	// accum is the time to read and write gradient bytes of the gradient buffer (grad_dtype):
	// weight-gradient GEMMs accumulate into it over the microbatches (Megatron's fp32
	// main_grad with gradient_accumulation_fusion; Llama 3 accumulates in fp32, Dubey et al.
	// 2024 §3.3.2). Not charged in the flat model.
	accum := func(gradBytes int64) float64 {
		if flat {
			return 0
		}
		return 2 * float64(gradBytes) / g.memBytesPerSec()
	}
	memAttn, memMLP := m.attnMemBytes(p.TP), func(i int) float64 { return m.mlpMemBytes(i, p.TP) }
	phase := func(w float64, cat Category) item { return item{kind: itemSeg, seg: seg{sim.FromSeconds(w), cat}} }
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
	// Context parallelism: all-gather the keys and values of the other CP ranks before the
	// attention core (Llama 3, Dubey et al. 2024, §3.3.2), again before its backward, and
	// reduce-scatter their gradients after it (Megatron-Core's context parallelism).
	var cpAG, cpRS int32 = -1, -1
	var cpAGt, cpRSt sim.Time
	if p.CP > 1 {
		ag, rs := j.newSpec(collective.AllGather, p.CP, j.kvBytes), j.newSpec(collective.ReduceScatter, p.CP, j.kvBytes)
		if j.cpInDomain {
			nv := collective.Model{Latency: g.ScaleUpLatency, Rate: g.ScaleUpRate}
			ag.Algo, rs.Algo = collective.Ring, collective.Ring
			var err error
			if cpAGt, err = collective.Pipelined(ag, nv); err != nil {
				return err
			}
			if cpRSt, err = collective.Pipelined(rs, nv); err != nil {
				return err
			}
		} else {
			cpAG, cpRS = j.addSpec(ag), j.addSpec(rs)
		}
	}
	cpItem := func(what string, layer int, reduce bool) item {
		if p.CP == 1 {
			return item{}
		}
		if j.cpInDomain {
			t := cpAGt
			if reduce {
				t = cpRSt
			}
			return item{kind: itemSeg, seg: seg{t, CatCP}}
		}
		sp := cpAG
		if reduce {
			sp = cpRS
		}
		return item{kind: itemColl, role: roleCP, spec: sp, label: j.addLabel(fmt.Sprintf("cp %s layer %d", what, layer))}
	}
	var epSpec int32 = -1
	if m.IsMoE() && p.EP > 1 {
		moeTokens := int64(m.MicroBatch) * int64(m.SeqLen) / tp
		moe := collective.MoE{Ranks: p.EP, Tokens: moeTokens * ep, TopK: m.TopK, Hidden: int64(m.Hidden), DTypeBytes: el}
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
	add := func(list *[]item, its ...item) {
		for _, it := range its {
			if it.kind == itemSeg && it.seg.dur == 0 && it.grad == 0 && it.egrad == 0 {
				continue
			}
			*list = append(*list, it)
		}
	}
	attnGEMM := 2 * float64(par.Attention)
	mlpGEMM := func(i int) float64 { return m.layerForward(i).Matmul - attnGEMM }
	// layerFwd returns layer i's forward: attention (norm, QKV, rotary, [CP gather], core,
	// output projection, residual), TP, [EP dispatch], MLP, [EP combine], TP.
	layerFwd := func(i int) []item {
		var out []item
		moe := m.moeLayer(i) && p.EP > 1
		if p.CP > 1 {
			add(&out, phase(gemm(attnGEMM*float64(3+0)/4)+mem(memAttn/2), CatCompute)) // QKV ~ the larger part; split is timing-neutral
			add(&out, cpItem("kv all-gather", i, false))
			add(&out, phase(gemm(attnGEMM/4)+attn(i, false)+mem(memAttn/2), CatCompute))
		} else {
			add(&out, phase(gemm(attnGEMM)+attn(i, false)+mem(memAttn), CatCompute))
		}
		add(&out, tpItem("attn", i))
		if moe {
			out = append(out, epItem("dispatch", i))
		}
		add(&out, phase(gemm(mlpGEMM(i))+mem(memMLP(i)), CatCompute))
		if moe {
			out = append(out, epItem("combine", i))
		}
		add(&out, tpItem("mlp", i))
		return out
	}
	// layerGrads returns layer i's dense and expert gradient bytes per rank and its
	// parameters (mlp, attention + norms), and notes whether expert grads need their own group.
	var hasExpert bool
	layerGrads := func(i int) (dgMLP, egMLP, dgAttn, params int64) {
		if m.moeLayer(i) {
			routed := int64(m.Experts) * m.expertParams() / ep / tp
			shared := int64(m.SharedExperts) * m.expertParams() / tp
			dgMLP = (shared + par.Router/tp) * gb
			egMLP = routed * gb
			params = routed + shared + par.Router/tp
			if p.EP == 1 || p.DP/p.EP == 1 {
				// no separate expert-DP group: EP 1 reduces experts with the dense
				// gradients over DP; DP/EP 1 leaves nothing to reduce.
				if p.EP == 1 {
					dgMLP += egMLP
				}
				egMLP = 0
			} else {
				hasExpert = true
			}
		} else {
			dgMLP = par.DenseMLP / tp * gb
			params = par.DenseMLP / tp
		}
		ag := (par.Attention + par.Norms) / tp
		return dgMLP, egMLP, ag * gb, params + ag
	}
	// layerBwd returns layer i's backward (B; with the weight gradients unless zb-h1) and its
	// W pass (zb-h1).
	layerBwd := func(i int) (b, w []item) {
		dgMLP, egMLP, dgAttn, _ := layerGrads(i)
		moe := m.moeLayer(i) && p.EP > 1
		full := p.Recompute == RecomputeFull
		if full {
			b = append(b, layerFwd(i)...)
		}
		// Weight-gradient GEMMs (one forward's FLOPs each), accumulating into the gradient
		// buffer: read and write it every microbatch.
		wMLP, wAttn := gemm(mlpGEMM(i))+accum(dgMLP+egMLP), gemm(attnGEMM)+accum(dgAttn)
		add(&b, tpItem("mlp.bwd", i))
		if moe {
			b = append(b, epItem("combine.bwd", i))
		}
		mlpB := gemm(mlpGEMM(i)) + 2*mem(memMLP(i))
		if zb {
			add(&b, phase(mlpB, CatCompute))
			add(&w, item{kind: itemSeg, seg: seg{sim.FromSeconds(wMLP), CatCompute}, grad: dgMLP, egrad: egMLP})
		} else {
			add(&b, item{kind: itemSeg, seg: seg{sim.FromSeconds(mlpB + wMLP), CatCompute}, grad: dgMLP, egrad: egMLP})
		}
		if moe {
			b = append(b, epItem("dispatch.bwd", i))
		}
		add(&b, tpItem("attn.bwd", i))
		core := attn(i, true)
		if p.Recompute == RecomputeSelective {
			core += attn(i, false)
		}
		attnB := gemm(attnGEMM) + core + 2*mem(memAttn)
		if p.CP > 1 {
			if !full {
				add(&b, cpItem("kv all-gather.bwd", i, false))
			}
			add(&b, phase(gemm(attnGEMM/4)+core+mem(memAttn), CatCompute))
			add(&b, cpItem("kv reduce-scatter.bwd", i, true))
			attnB = gemm(attnGEMM*3/4) + mem(memAttn)
		}
		if zb {
			add(&b, phase(attnB, CatCompute))
			add(&w, item{kind: itemSeg, seg: seg{sim.FromSeconds(wAttn), CatCompute}, grad: dgAttn})
		} else {
			add(&b, item{kind: itemSeg, seg: seg{sim.FromSeconds(attnB + wAttn), CatCompute}, grad: dgAttn})
		}
		return b, w
	}
	// ZeRO-3 units: each layer, with the embedding folded into virtual stage 0's first unit
	// and the LM head into the last virtual stage's last (alone when the chunk has no layer).
	type unit struct {
		layers        []int
		embed, head   bool
		params, grads int64
	}
	zero3 := p.ZeRO == 3 && p.DP*p.CP > 1
	dpn := p.DP * p.CP
	V := p.VirtualStages
	// Layers per virtual stage, in virtual-stage order (chunk c of stage s is c x pp + s).
	sizes := make([][]int, p.PP)
	for s := range sizes {
		sizes[s] = p.ChunkLayers(s)
	}
	firstOf := make([]int, V*p.PP)
	next := 0
	for v := 0; v < V*p.PP; v++ {
		firstOf[v] = next
		next += sizes[v%p.PP][v/p.PP]
	}
	headFwd := gemm(m.headForward()) + mem(m.lossBytes(p.TP))
	for s := 0; s < p.PP; s++ {
		st := stage{zero3: zero3}
		gradLay := j.stageLayout(s, j.gradGroup)
		var dense, expert, params int64
		for c := 0; c < V; c++ {
			v := c*p.PP + s
			first, n := firstOf[v], sizes[s][c]
			ch := chunk{first: first, layers: n}
			var units []unit
			for i := first; i < first+n; i++ {
				dm, em, da, lp := layerGrads(i)
				units = append(units, unit{layers: []int{i}, params: lp, grads: dm + em + da})
			}
			if embed, head := v == 0, v == V*p.PP-1; embed || head {
				if len(units) == 0 {
					units = append(units, unit{})
				}
				if embed {
					units[0].embed = true
					units[0].params += par.Embedding / tp
					units[0].grads += par.Embedding / tp * gb
				}
				if head {
					u := &units[len(units)-1]
					u.head = true
					u.params += par.LMHead / tp
					u.grads += par.LMHead / tp * gb
				}
			}
			for _, u := range units {
				params += u.params
			}
			// ZeRO-3: per unit, a parameter all-gather before its forward and again before
			// its backward (the next unit's posted while this one computes: FSDP's
			// prefetch), and a reduce-scatter of its gradients after its backward (after
			// its W pass under zb-h1), all made where every DP bucket is made.
			uAG, uRS := make([]int32, len(units)), make([]int32, len(units))
			name := func(u unit) string {
				switch {
				case len(u.layers) > 0:
					return fmt.Sprintf("layer %d", u.layers[0])
				case u.embed:
					return "embedding"
				}
				return "head"
			}
			for k, u := range units {
				uAG[k], uRS[k] = -1, -1
				if zero3 && u.grads > 0 {
					rs, _, ag, _ := j.dpBuckets(collective.ReduceScatter, u.grads, gradLay, "zero-3 "+name(u), u.grads)
					uRS[k], uAG[k] = rs[0], ag[0]
				}
			}
			gather := func(list *[]item, order []int, k int, what string) {
				// order[k] is the unit computed k-th in this pass; tags are unit indexes.
				if !zero3 {
					return
				}
				post := func(x int) {
					if u := order[x]; uAG[u] >= 0 {
						*list = append(*list, item{kind: itemPost, role: roleDPAG, spec: uAG[u], tag: int32(u),
							label: j.addLabel(fmt.Sprintf("zero-3 all-gather %s %s", name(units[u]), what))})
					}
				}
				if k == 0 {
					post(0)
				}
				if uAG[order[k]] >= 0 {
					*list = append(*list, item{kind: itemWait, role: roleDPAG, tag: int32(order[k])})
				}
				if k+1 < len(order) {
					post(k + 1)
				}
			}
			fwdOrder, bwdOrder := make([]int, len(units)), make([]int, len(units))
			for k := range units {
				fwdOrder[k], bwdOrder[k] = k, len(units)-1-k
			}
			for k, u := range units {
				gather(&ch.fwd, fwdOrder, k, "fwd")
				for _, i := range u.layers {
					add(&ch.fwd, layerFwd(i)...)
				}
				if u.head {
					add(&ch.fwd, phase(headFwd, CatCompute))
				}
			}
			for k, ui := range bwdOrder {
				u := units[ui]
				gather(&ch.bwd, bwdOrder, k, "bwd")
				var w []item
				if u.head {
					lmGrad := par.LMHead / tp * gb
					hb, hw := gemm(m.headForward())+mem(m.lossBytes(p.TP)), gemm(m.headForward())+accum(lmGrad)
					if zb {
						add(&ch.bwd, phase(hb, CatCompute))
						add(&w, item{kind: itemSeg, seg: seg{sim.FromSeconds(hw), CatCompute}, grad: lmGrad})
					} else {
						add(&ch.bwd, item{kind: itemSeg, seg: seg{sim.FromSeconds(hb + hw), CatCompute}, grad: lmGrad})
					}
				}
				for li := len(u.layers) - 1; li >= 0; li-- {
					b, lw := layerBwd(u.layers[li])
					add(&ch.bwd, b...)
					w = append(w, lw...)
				}
				if u.embed {
					e := item{kind: itemSeg, seg: seg{0, CatCompute}, grad: par.Embedding / tp * gb}
					if zb {
						w = append(w, e)
					} else {
						add(&ch.bwd, e)
					}
				}
				dst := &ch.bwd
				if zb {
					ch.wgt = append(ch.wgt, w...)
					dst = &ch.wgt
				}
				if uRS[ui] >= 0 {
					*dst = append(*dst, item{kind: itemPost, role: roleDP, spec: uRS[ui], tag: -1,
						label: j.addLabel("zero-3 reduce-scatter " + name(u))})
				}
			}
			for _, list := range [][]item{ch.bwd, ch.wgt} {
				for _, it := range list {
					dense += it.grad
					expert += it.egrad
				}
			}
			st.chunks = append(st.chunks, ch)
			st.info.ChunkLayers = append(st.info.ChunkLayers, n)
			st.info.ChunkFirst = append(st.info.ChunkFirst, first)
		}
		st.hasExpertGrads = hasExpert && expert > 0
		hasExpert = false
		st.info.FirstLayer, st.info.Layers = st.info.ChunkFirst[0], p.StageLayers[s]
		st.info.GradBytes, st.info.ExpertGradBytes, st.info.ParamsPerRank = dense, expert, params
		if !zero3 {
			dpOp := collective.AllReduce
			if p.ZeRO >= 1 {
				dpOp = collective.ReduceScatter
			}
			st.dpSpecs, st.dpLabels, st.agSpecs, st.agLabels = j.dpBuckets(dpOp, dense, gradLay, "dp", j.bucket)
			if st.hasExpertGrads {
				edpLay := j.stageLayout(s, j.Placement.ExpertDPGroup)
				st.edpSpecs, st.edpLabels, st.eagSpecs, st.eagLabels = j.dpBuckets(dpOp, expert, edpLay, "expert dp", j.bucket)
				st.nvlShared = st.nvlShared || edpLay.shared
			}
		}
		st.nvlShared = st.nvlShared || gradLay.shared && dpn > 1
		st.info.Buckets, st.info.ExpertBuckets = len(st.dpSpecs), len(st.edpSpecs)
		shard := params
		if p.ZeRO >= 1 {
			shard = params / int64(dpn)
		}
		st.optimizer = sim.FromSeconds(float64(shard*OptimizerBytesPerParam(m)) / g.memBytesPerSec())
		st.info.Optimizer = st.optimizer
		for _, ch := range st.chunks {
			for _, it := range ch.fwd {
				switch {
				case it.kind == itemSeg || it.nvl:
					st.info.Forward += it.seg.dur
					if it.seg.cat == CatTP {
						st.info.ForwardTP += it.seg.dur
					}
				case it.kind == itemColl:
					st.info.ForwardCollectives++
				}
			}
			for k, list := range [][]item{ch.bwd, ch.wgt} {
				for _, it := range list {
					if it.kind == itemSeg || it.nvl {
						st.info.Backward += it.seg.dur
						if it.seg.cat == CatTP {
							st.info.BackwardTP += it.seg.dur
						}
						if k == 1 {
							st.info.WeightGrad += it.seg.dur
						}
					}
				}
			}
		}
		j.stages = append(j.stages, st)
	}
	j.planTP()
	return nil
}

// dpBuckets splits total gradient bytes reduced over n data-parallel ranks into buckets of
// at most bucket bytes and returns, per bucket, the reduction spec (op) and its label and,
// unless op is an all-reduce, the spec and label of the matching parameter all-gather (dtype
// bytes). This is the one place where the job makes its data-parallel collectives.
func (j *Job) dpBuckets(op collective.Collective, total int64, lay commLayout, name string, bucket int64) (specs, labels, ag, agl []int32) {
	if lay.ranks <= 1 || total == 0 {
		return
	}
	m := j.Model
	gb := m.gradBytesPerParam()
	buckets := func(total int64, name string) (specs, labels, ag, agl []int32) {
		dpOp := op
		k := (total + bucket - 1) / bucket
		for b := int64(0); b < k; b++ {
			size := min(bucket, total-b*bucket)
			specs = append(specs, j.addSpec(j.dpSpec(dpOp, lay, size)))
			labels = append(labels, j.addLabel(fmt.Sprintf("%s bucket %d/%d", name, b+1, k)))
			if dpOp != collective.AllReduce {
				pb := size / gb * m.bytesPerElem()
				ag = append(ag, j.addSpec(j.dpSpec(collective.AllGather, lay, pb)))
				agl = append(agl, j.addLabel(fmt.Sprintf("%s param all-gather %d/%d", name, b+1, k)))
			}
		}
		return
	}
	return buckets(total, name)
}

// Summary describes the job in a few lines: the grid, microbatches, schedule, each stage's
// per-microbatch times and gradient buckets.
func (j *Job) Summary() string {
	var b strings.Builder
	m, p := j.Model, j.Plan
	grid := fmt.Sprintf("tp %d, pp %d, dp %d, ep %d", p.TP, p.PP, p.DP, p.EP)
	if p.CP > 1 {
		grid = fmt.Sprintf("tp %d, cp %d, pp %d, dp %d, ep %d", p.TP, p.CP, p.PP, p.DP, p.EP)
	}
	fmt.Fprintf(&b, "%s on %d x %s: %s; %d microbatches of %d x %d tokens per step (global batch %d sequences)\n",
		m.Name, j.World(), j.GPU.Name, grid, j.micro, m.MicroBatch, m.SeqLen, m.GlobalBatch)
	if p.PP > 1 && p.Note() == "" {
		fmt.Fprintf(&b, "schedule %s", p.Schedule)
		if p.Schedule == ScheduleInterleaved {
			fmt.Fprintf(&b, " with %d virtual stages per rank", p.VirtualStages)
		}
		b.WriteByte('\n')
	}
	if n := p.Note(); n != "" {
		b.WriteString(n + "\n")
	}
	tpWhere := j.tpWhere()
	switch {
	case p.TP > 1 && !j.tpInDomain:
		fmt.Fprintf(&b, "TP all-reduce of %s per layer boundary: network collectives (TP groups cross scale-up domains), timed by the run\n", sim.FormatSize(j.actBytes))
	case p.TP > 1:
		fmt.Fprintf(&b, "TP all-reduce of %s per layer boundary: %v (%s)\n", sim.FormatSize(j.actBytes), j.tpAR, tpWhere)
	}
	if g := j.Placement.Domain; g > 1 && j.World()%g != 0 {
		fmt.Fprintf(&b, "scale-up domains of %d GPUs do not divide the %d GPUs: the last domain holds %d (a group reaching into it runs flat, not hierarchical)\n", g, j.World(), j.World()%g)
	}
	if p.CP > 1 {
		where := "network"
		if j.cpInDomain {
			where = "NVLink, closed form"
		}
		fmt.Fprintf(&b, "CP key/value all-gather of %s per layer (%s)\n", sim.FormatSize(j.kvBytes), where)
	}
	eff := fmt.Sprintf("efficiency gemm %.2f, attention %.2f, memory %.2f", j.GPU.GEMMEfficiency, j.GPU.AttentionEfficiency, j.GPU.MemoryEfficiency)
	if j.GPU.Flat() {
		eff = fmt.Sprintf("flat efficiency %.2f", j.GPU.Efficiency)
	}
	fmt.Fprintf(&b, "gradient buckets of %s; overlap %v; zero %d; recompute %s; %s\n", sim.FormatSize(j.bucket), j.Options.Overlap, int(p.ZeRO), p.Recompute, eff)
	b.WriteString(j.collSummary())
	for s, st := range j.stages {
		in := st.info
		layers := fmt.Sprintf("layers %d-%d", in.FirstLayer, in.FirstLayer+in.Layers-1)
		if len(in.ChunkLayers) > 1 {
			var cs []string
			for c, n := range in.ChunkLayers {
				switch n {
				case 0:
					cs = append(cs, "-")
				case 1:
					cs = append(cs, fmt.Sprint(in.ChunkFirst[c]))
				default:
					cs = append(cs, fmt.Sprintf("%d-%d", in.ChunkFirst[c], in.ChunkFirst[c]+n-1))
				}
			}
			layers = "layers " + strings.Join(cs, ",")
		}
		ftp, btp := fmt.Sprintf("TP %v", in.ForwardTP), fmt.Sprintf("TP %v", in.BackwardTP)
		if p.TP > 1 && !j.tpInDomain {
			ftp, btp = "TP on the network, not included", "TP on the network, not included"
		}
		fmt.Fprintf(&b, "stage %d: %s, forward %v (%s), backward %v (%s), optimizer %v, %d params/rank, grads %s in %d buckets",
			s, layers, in.Forward, ftp, in.Backward, btp, in.Optimizer, in.ParamsPerRank, sim.FormatSize(in.GradBytes), in.Buckets)
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

// barrierCat is the category of a rank's wait at the end of the step for the slowest rank:
// bubble with a pipeline (the drain of a pipeline), sync without one (pp 1: a straggler's
// skew, not a pipeline bubble).
func (j *Job) barrierCat() Category {
	if j.Plan.PP > 1 {
		return CatBubble
	}
	return CatSync
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
