// Package training generates the per-rank compute and communication of whole training steps
// from a model and a parallelism plan, runs them in lockstep on a simulation, and reports
// what the network costs the job: step time, exposed communication, pipeline bubbles, the
// slowest rank and why, the cluster's power trace (swing, slew, battery), and goodput over a
// long horizon with checkpoints and restarts.
//
// # Pieces
//
//   - Model (model.go, flops.go): a decoder-only transformer (dense or mixture of experts,
//     grouped-query or latent attention) and its batch; embedded presets llama3-8b,
//     llama3-70b, llama3-405b, deepseek-v3 (presets.yaml, with sources); parameter and FLOP
//     counts after Narayanan et al., SC'21, Appendix.
//   - GPU (gpu.go): peak FLOP/s, per-operation efficiencies (matmul, attention, memory-bound),
//     HBM bandwidth, power when busy, communicating and idle, the NVLink domain; presets h100,
//     b200, gb200.
//   - Plan (plan.go): TP, CP, PP, DP, EP, the pipeline schedule and virtual stages, the ZeRO
//     stage, recomputation, placement order, with checked arithmetic; Placement
//     (placement.go) maps ranks to fabric hosts.
//   - Job (job.go, program.go): each stage's model chunks, each chunk's forward, backward (and
//     under zb-h1 weight-gradient) pass per microbatch as compute phases, NVLink TP in closed
//     form, and network collectives; gradient buckets; the optimizer; a per-rank program
//     following the plan's schedule.
//   - Backend (backend.go): what carries network collectives. AnalyticBackend charges closed
//     forms (hierarchical ones on NVLink and the NIC after SetScaleUp); ExecutorBackend runs
//     per-step schedules on a collective.Executor over any transport (Ideal, MRC, RoCE, a
//     flow engine's adapter); SplitTransport sends intra-domain messages over NVLink and the
//     rest over the fabric.
//   - Collective choice (collsel.go): the algorithm of each data-parallel collective from
//     its group's layout in scale-up domains, and where TP runs (TPModel); see
//     "Collectives" and "Tensor parallelism over NVLink".
//   - Run (engine.go, trace.go): the lockstep engine and what it measured; Trace.Power
//     (power.go) the power series; Goodput (goodput.go) Young, Daly and a Monte Carlo;
//     Config and Result (config.go) the scenario section and its headline figures.
//
// # The lockstep engine
//
// Every rank runs a program: compute ops on its compute stream (one event each), posts of
// collectives to the communication streams of its groups, waits for them, and the step
// barrier. Each group (a TP group crossing domains, a CP group crossing domains, an EP group,
// a pair of adjacent pipeline stages per direction, a DP group, its ZeRO-3 gather stream, an
// expert-DP group) has one stream: its collectives run one at a time in posting order, and
// each launches when the last member rank has posted it and the previous one has finished
// (NCCL semantics: one communicator, one CUDA stream). The backend reports completion;
// waiting ranks resume.
//
// # Pipeline schedules
//
// plan.schedule picks one (Plan.Resolve has the defaults and checks):
//
//   - 1f1b: Megatron-LM's non-interleaved schedule (Narayanan et al., SC'21 §2.2.1):
//     min(PP-p-1, m) warmup forwards, steady iterations of one forward and one backward with
//     batched blocking send/recv pairs (send_forward_recv_backward, send_backward_recv_forward),
//     cooldown backwards. Bubble (p-1)(t_f + t_b), a fraction (p-1)/m of the ideal step.
//   - interleaved: V model chunks per rank (plan.virtual_stages; chunk c of stage s is
//     virtual stage c·PP + s), Megatron-Core's interleaved 1F1B (SC'21 §2.2.2): groups of PP
//     microbatches go through chunk 0, then chunk 1, ..., the backwards with the chunks
//     reversed; stage s runs 2(PP-s-1) + (V-1)PP warmup forwards. Bubble (p-1)(t_f+t_b)/V, at
//     V times the pipeline sends: chunk c of the last stage feeds chunk c+1 of stage 0 (the
//     wrap, its own pair of streams). m must be a multiple of PP, as Megatron-LM asserts:
//     the program can run a last group of m mod PP microbatches (warmups lengthened until a
//     dry run of the dependencies completes, interleavedWarmups), but its bubbles made
//     interleaved slower than 1f1b (405B, pp 16, 24 microbatches: 19.2 s against 13.5 s) and
//     the step non-monotonic in m, so an explicit interleaved with m % PP != 0 is an error
//     (plan.schedule) naming the fixes and the default falls back to 1f1b.
//   - zb-h1: zero-bubble ZB-H1 (Qi et al., ICLR 2024, §3.1): the backward split into B (input
//     gradient: the dgrad GEMMs, the attention core's backward, the memory-bound backward, the
//     TP traffic) and W (weight gradient: the wgrad GEMMs and the gradient-buffer update, which
//     produce the gradients); pass x of stage s is (F_x, B_(x-(PP-1-s)), W_(x-(PP-1))), so
//     W lags B by s passes and fills the drain. Bubble (p-1)(T_F + T_B - T_W), about a third
//     of 1F1B's when T_F = T_B = T_W, at 1F1B's activation memory.
//
// The default is interleaved when the stages can be cut into V >= 2 chunks (the largest V <=
// 8 dividing every stage's layers, else the largest V <= 8 giving chunks of q or q+1 layers:
// Llama 3 ran V = 8 with 126 layers on 16 stages, its first chunk holding only the embedding
// and its last only the head) and m is a multiple of PP, else 1f1b (the job summary says
// why); with pp 1 there is no pipeline and every schedule resolves to 1f1b (zb-h1's W split
// only fills pipeline bubbles), written so in the resolved scenario and noted in the summary. Interleaved and
// zb-h1 use asynchronous point-to-point communication, as Llama 3 does (§3.3.2) and
// Megatron-Core's overlap_p2p_comm: a stage posts each send as soon as its pass produced the
// tensor and never waits for it, and keeps one receive posted ahead per incoming stream,
// waiting for it only when a pass needs its input. Pipeline transfers carry b s h / (TP CP)
// bytes per microbatch per rank (Megatron's scatter/gather optimisation, SC'21 §4.1). The
// table-driven tests check every schedule's bubble against its closed form for p in {2, 4,
// 8, 16}, m in {p, 2p, 4p}, V in {1, 2, 4} (schedule_test.go).
//
// MoE layers wait on an all-to-all dispatch before their experts and a combine after (two
// more in the backward; collective.MoE sizes them, uniform routing, tokens split over TP ranks
// as with sequence parallelism). The step ends with the gradient reduction, the optimizer
// step (HBM-bound: OptimizerBytesPerParam per parameter, of the 1/(DP·CP) shard under ZeRO
// >= 1), the ZeRO 1-2 parameter all-gather, and the step barrier: the optimizer needs the
// global gradient norm (Megatron's clip_grad_norm all-reduces it over every rank), so no rank
// starts the next step before every rank has finished this one; the barrier itself costs
// nothing here.
//
// # ZeRO, FSDP and the gradient reduction
//
// Gradients are reduced over the DP x CP ranks holding the same weights (Megatron's
// data-parallel group with context parallelism), in buckets (Options.BucketBytes), by
// plan.zero (Rajbhandari et al., SC'20; G a rank's gradient bytes, P its parameters, m
// microbatches):
//
//   - 0: gradients accumulate over the microbatches and are all-reduced during the last
//     microbatch's backward, each bucket posted when it fills (overlap: false posts them all
//     after it);
//   - 1: reduce-scatter instead, the optimizer on the shard, the parameters all-gathered after
//     it (Megatron's distributed optimizer; the same 2G-equivalent on the wire);
//   - 2: the gradients are sharded too, so every microbatch's backward reduce-scatters its
//     gradients into the shard (DeepSpeed stage 2 with gradient accumulation): m G;
//   - 3: ZeRO-3 / FSDP: also the parameters, gathered per unit (a layer; the embedding and head
//     folded into the first and last) before its forward and again before its backward, every
//     microbatch, the next unit's gather posted while the current one computes (FSDP's
//     prefetch) on a stream of its own; each unit's gradients reduce-scattered after its
//     backward (after its W pass under zb-h1): 2 m P gathered, m G reduced; no gather after
//     the optimizer.
//
// Interleaving and zb-h1 produce a chunk's gradients at its last backward (W) pass; buckets
// fill in the order the passes run. zero 3 with expert parallelism is not modelled.
//
// # Context parallelism
//
// plan.cp splits every sequence over CP ranks (world = TP x CP x PP x DP, placed right after
// TP unless the order names cp: Llama 3's [TP, CP, PP, DP]). Each rank computes b s / CP
// tokens, so matmuls, memory-bound work and the attention core (its queries against the
// whole sequence, balanced over the causal mask by two chunks per rank) all scale as 1/CP. The
// keys and values are exchanged by all-gather, as Llama 3 does (§3.3.2: all-gather then
// attention for the local queries; chosen over ring attention for flexibility with document
// masks and because with GQA the gathered K and V are small): per layer an all-gather of b s
// 2 kv d / TP bytes before the attention core, again before its backward, and a
// reduce-scatter of their gradients after it (Megatron-Core's context parallelism), on the CP
// group's stream, or in closed form on NVLink when every CP group sits in one scale-up
// domain. These waits count as tp (model-parallel traffic inside the layer).
//
// # Compute: per-operation efficiency
//
// Each layer's forward is: the attention block (RMSNorm, QKV projection, rotary embedding,
// [CP gather], attention core, output projection, residual add), TP, [EP dispatch], the MLP
// block (RMSNorm, gate and up projections, SwiGLU, down projection, residual add), [EP
// combine], TP. Its time on one rank is the sum of
//
//   - weight matmuls: 2 x weights x tokens / (TP CP) FLOPs at peak x gemm_efficiency;
//     backward: the input-gradient and the weight-gradient GEMMs, one forward's FLOPs each;
//   - the attention core, FlashAttention: the executed FLOPs, half the score matrix under the
//     causal mask, 2.5 times the forward in the backward (it recomputes QK^T), at peak x
//     attention_efficiency;
//   - memory-bound operations, charged by bytes over HBM x memory_efficiency: RMSNorm,
//     residual adds, rotary embedding and SwiGLU counted as the Llama reference
//     implementation runs them in PyTorch eager mode (one kernel per operation, RMSNorm in
//     fp32: flops.go), norms and residuals on 1/TP of the tokens (sequence parallelism), the
//     backward twice the forward; the vocabulary-parallel loss (fp32 logits); the weight-
//     gradient GEMMs' read and write of the gradient buffer (grad_dtype) every microbatch
//     (Megatron's main_grad, Llama 3's fp32 accumulation); the optimizer.
//
// gpu.efficiency, when set, replaces all three with one flat fraction of peak, counts
// attention in full (backward twice the forward) and charges no memory-bound time but the
// optimizer's at the full HBM rate: the model before per-operation efficiencies, which
// scenarios that set it keep. The presets' values and sources are in presets.yaml.
//
// plan.recompute: none; selective (Korthikanti et al., MLSys 2023 §5: the attention core's
// forward recomputed before its backward); full (the layer's whole forward, with its TP and
// CP traffic, recomputed in the backward). The booleans of earlier versions still decode
// (recompute: true is full, zero: true is 1). MFU counts model FLOPs and is unchanged by
// recomputation.
//
// Tensor parallelism: 2 all-reduces of b s h / CP bytes per layer in the forward and 2 in the
// backward (Narayanan et al., SC'21 §3.2). When every TP group sits inside one scale-up
// domain they are costed with collective.Pipelined on the GPU's NVLink rate and latency and
// added to the compute phase as exposed TP time (they are on the critical path), except
// where "Tensor parallelism over NVLink" below runs them as collectives; otherwise they go
// through the backend as network collectives.
//
// # Categories
//
// Every instant of every rank is compute, exposed TP, PP, DP, EP or CP communication
// (waiting on a launched collective, or on one queued behind another on its stream; cp is
// the key/value all-gathers and their gradients' reduce-scatters, in closed form on NVLink or
// on the network), bubble (waiting for the neighbouring stage to post its side of a pipeline
// transfer, or, with pp > 1, at the step barrier for the slowest rank) or sync (waiting for
// the rest of a TP, CP, DP or EP group to reach a collective, or, with pp 1, at the step
// barrier: without a pipeline there is no bubble, and a rank waiting there waits for a
// straggler). They sum to the step time on every rank (Category). Communication categories
// (tp, pp, dp, ep, cp) draw the GPU's communication power.
//
// # Limits
//
// Microbatches per pipeline per step are at most MaxMicrobatches (65,536; model.global_batch
// above it is an error). The power series' default interval (100us) coarsens in 1-2-5 steps
// to keep at most DefaultMaxPowerSamples (1M) samples over long steps, with a note; an
// explicit power.interval is kept (up to MaxPowerSamples).
//
// # MFU and calibration
//
// MFU = model FLOPs / (step x GPUs x dense peak), model FLOPs 6N + attention per token in
// full: 3 x (2 x weights + 2 s a (d_qk + d_v) per layer) (PaLM's count, Chowdhery et al. 2022
// App. B; Narayanan et al., SC'21), no recomputation, no causal halving. Llama 3 does not
// state its formula; counted as 6N only, its 41% would be 44% here, with causal halving 43%.
//
// Llama-3-405B (Dubey et al. 2024, Table 4: 16,384 H100s, TP 8, PP 16, DP 128, 8K tokens, 16
// microbatches: 400 TFLOP/s, 41% MFU; 8,192 at DP 64, 32 microbatches: 430, 43%) with the
// defaults (interleaved V 8, the lead's stage layers [8 x 14, 7, 7]) on a 400 Gb/s-per-GPU
// non-blocking Clos at flow level: 41.9% at 16,384 GPUs (step 6,491 ms per rank: compute
// 4,986, TP 527, PP 28, DP 58, bubble 892) and 45.2% at 8,192 (step 12,025: compute 9,941, TP
// 1,053, PP 28, DP 47, bubble 956); the analytic backend gives 42.4% and 45.5%
// (TestMFULlama3405B pins 38-44% and 40-46%). The bubble is 12.8% of the 16K step against
// Llama 3's (p-1)/(Vm) = 11.7% of the bubble-free step: the pipeline transfers add to the
// fill and drain and the 7-layer stages idle. 1f1b gives 24.6% (bubble 47% of the step) and
// zb-h1 32.8%.
//
// What lockstep leaves out that Meta pays, and the reason its 8,192-GPU MFU sits above the
// paper's (45.2 vs 43%): stragglers and jitter across 16K GPUs (the slowest rank sets every
// step), document-masked attention of uneven cost per microbatch (§3.3.2 names the resulting
// imbalance), the second all-gather of sequence-parallel activations in the backward, NCCL
// kernels taking SMs from the GEMMs they overlap, kernel launch and host overheads, the FSDP
// all-gather at the step's start and fp32 reduce-scatter Llama 3 runs (the scenario's plan has
// zero 0), and a 3-tier RoCE fabric oversubscribed 1:7 above its pods. What Meta overlaps
// that lockstep does not: nothing on the TP path (both expose it); lockstep overlaps the
// gradient reduction with the last backward as Megatron does. The matmul efficiency is the
// least certain input (presets.yaml): +-0.05 moves these MFUs by about +-3 points.
// Llama-3-70B (TP 8, PP 4 on 1,024: 41%; FSDP x TP 8 on 256: 44%) and -8B (FSDP on 8: 45%;
// TP 2 PP 2 on 256: 42%) land within the 33-47% torchtitan and Megatron-LM publish for H100
// bf16 (TestMFUSmallerLlamas).
//
// # Reuse of identical rounds
//
// Identical work is simulated once: see Trace. A step with more microbatches than its steady
// state needs is simulated with fewer and a steady window repeated: 1f1b m > 2PP+3 simulates
// 2PP+2 and repeats round PP; zb-h1 and interleaved repeat a window of PP (zb-h1) or PP x V
// (interleaved) steady rounds, pp microbatches' worth, simulating the fewest m' = m mod PP
// microbatches that give stage 0 four windows (Job.reuse): with asynchronous sends the rounds
// settle into a cycle of PP rounds when the pipeline transfers take a good part of a round.
// The extrapolated step equals the exact one on the analytic backend (TestExtrapolation*).
// A 1,024-GPU Llama-3-70B step (TP 8, PP 4, DP 32, 16 microbatches, 10 simulated) takes about
// 0.07 s of wall time on AnalyticBackend and 7-11 s on ExecutorBackend over collective.Ideal
// (BenchmarkStep70B1024, two cores). The executor keeps every launched collective's state
// until the simulation ends, about 5 bytes per schedule operation.
//
// At flow level the cost follows the pipeline transfers: Llama-3-405B on 131,072 GPUs (TP 8,
// PP 16, DP 1,024, 16 microbatches, a 3-tier 8-plane Clos, MRC) runs in about 24 s under 1f1b
// and 27 s under zb-h1 (6.5 million flows, 3 GB); interleaved V 8 sends 8 times as often
// (about 34 million flows) and takes about 30 s per 32,768 GPUs (4.6 GB), so about 2 minutes
// and 18 GB at 131,072: the flows of the 8 TP ranks of a stage, identical in a symmetric job,
// would have to travel as one flow over the 8 NICs' paths to change that (not done).
//
// The watchdog: when the simulation stops with ranks short of the barrier (the event queue
// emptied, or a limit passed), Run.Trace returns an error naming each stuck rank and the
// collective it waits on, with how many members posted it and which are missing.
//
// # Collectives
//
// Data-parallel reductions (all-reduce, or reduce-scatter under ZeRO), ZeRO's parameter
// all-gathers and the expert-DP ones pick their algorithm as NCCL does, from the group's
// layout in scale-up domains and the size (collsel.go, Job.chooseAlgo). A group whose
// ranks sit I to a domain over O >= 2 domains, the members of each domain consecutive in the
// communicator (rank g*I+i is member i of domain g; groups of the Placement are in host
// order, so this holds whenever every domain holds the same number: with order tp,dp,pp on
// NVL72 and TP 8 a DP group has 9 members in each domain it touches), can run hierarchical
// (collective.Hierarchical with Inner x Outer = I x O): a reduce-scatter over NVLink inside
// each domain, the network collective across domains on 1/I of the data (each of the I
// members on its own NIC), an all-gather over NVLink. NCCL's tuner models every algorithm's
// time as a latency plus bytes over a bandwidth, a ring's latency its intra-node steps at
// the intra-node latency and its inter-node steps at the network's, and takes the fastest
// (src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime; docs/protocols.md). So
// here: the flat candidate is collective.AutoAlgorithm's (recursive doubling up to 64 KiB,
// halving-doubling or the double binary tree while S/n < 512 KiB: NCCL's tree for small
// messages at large rank counts; the ring above), and the hierarchical one is taken when its
// collective.AlphaBetaScaleUp time (inner phases at the GPU's scale-up rate and latency,
// the outer one at the network's) beats the flat one's collective.AlphaBeta at the
// network's; Options.Network is that network (the runner gives the NIC rate, host link x
// planes, and per message the ideal transport's latency or four hop latencies). Without it,
// hierarchical from S/O >= 512 KiB (collective.AutoAlgorithmDomain's rule). The choice needs
// a backend that carries the scale-up domain on its own model (Options.ScaleUp: the
// runner's AnalyticBackend with SetScaleUp, the flow engine's NVLink links, SplitTransport);
// on any other every group runs flat. Groups whose domains hold different numbers of members
// (a world that is not a multiple of the domain: 1,024 GPUs on NVL72 give 9, 9, 9 and 5),
// or whose groups within one stage are laid out differently (one spec serves a stage), run
// flat: a flat ring then crosses each domain boundary through one NIC.
//
// The backends agree on the hierarchical collective: the analytic backend charges
// collective.AlphaBetaScaleUp, 2[(I-1) a_up + (I-1)/I S b_up] + 2(O-1) a_net +
// 2(O-1)/O (S/I) b_net for an all-reduce; the flow engine runs the three phases one after
// another, inner rings on the NVLink links, outer rings on the fabric, within 5% of it for
// I in {2, 8, 36, 72}, O in {2, 4, 16}, 1 MiB to 1 GiB (TestHierarchicalMatchesClosedForm);
// the packet engine's chunked schedule overlaps the phases of successive loops on their
// different links and hides per-step latencies, so it lies between the busier link's
// bandwidth bound, max(2(I-1)/I S b_up, 2(O-1)/O (S/I) b_net), and the form: within 2-3% of
// it when the NVLink phases are a small share (2 x 4 behind a 100 Gb/s NIC), up to 25%
// below when they are not (8 x 2 behind 400 Gb/s; TestHierarchicalPacketSmall). The
// phase-after-phase form is thus pessimistic by up to the smaller of the NVLink and network
// times; a pipelined flow expansion would remove that and is left open.
//
// Measured (Llama-3-70B, TP 8 PP 4 DP 36 on 1,152 GB200 in 16 NVL72 domains, global batch
// 576, 16 microbatches, a 2-tier Clos, MRC at flow level): with one 100 Gb/s NIC per GPU the
// flat ring's exposed DP time was 617 ms (its closed form 707 ms per step over 57 buckets)
// and the hierarchical 9 x 4 reduction's is 1.3 ms (its closed form 72 ms, hidden under the
// last backward); step 3.006 s -> 2.377 s. With 4 x 100 Gb/s: 101 ms -> 0.4 ms (closed
// forms 177 ms and 27 ms).
//
// # Tensor parallelism over NVLink
//
// Options.TPModel (tp_model) says how TP all-reduces inside a domain are charged. The
// closed form on the critical path is exact for the fluid NVLink model as long as nothing
// else loads the same GPUs' NVLink while they run, because the NVLink model is per GPU
// (NVSwitch: a transmit and a receive link of the scale-up rate per GPU, non-blocking): a
// rank's TP all-reduce only shares NVLink with its own other traffic. Its pipeline transfers,
// all-to-alls and TP all-reduces are blocking (post and wait) and never overlap each other;
// the one thing that runs beside TP is the gradient reduction during the last microbatch's
// backward under overlap, when the stage's DP (or expert-DP) group has members in one
// domain (a hierarchical reduction's NVLink phases, or a flat ring whose neighbours share a
// domain). So:
//
//   - auto (the default): closed form, except the TP all-reduces of those last backwards,
//     which run as collectives through the backend on the TP stream (category tp): ring
//     flows on the NVLink links at flow level, the ideal NVLink transport at packet level,
//     sharing the GPUs' NVLink max-min fairly with the reduction. 2 per layer per stage per
//     TP group: 5,760 per step for the 1,152-GPU job above, 0.19 s of wall time against
//     0.17 s closed form; TP per rank 336.3 ms against 335.3 ms. Beyond
//     TPAutoMaxCollectives (100,000 per step, about 800,000 ring flows; 131,072 GPUs of
//     Llama-3-405B on NVL72 need 258,048) they stay in closed form and Summary says so.
//   - closed_form: always the closed form.
//   - simulated: every TP all-reduce runs through the backend (1,280 per TP group per step
//     above, 2.2 s of wall time); for checking auto. It needs a backend that carries the
//     domain (Options.ScaleUp).
//
// Error bound where the window stays in closed form: a TP all-reduce sharing a GPU's link
// max-min fairly with other traffic loses at most the time the other traffic's bytes take
// at the link rate, so the window's TP time per rank is at most min(its closed form,
// the reduction's NVLink bytes per GPU / the NVLink rate) above the closed form (planTP;
// Summary prints it: 9.0 ms per step for the job above, 0.4% of its step; measured 0.9 ms
// for TP, 3.7 ms for the step; TestTPSharesNVLink checks the bound on the flow engine).
// The flow engine's ring charges K = 2(TP-1) latencies after the last byte where the
// pipelined closed form charges one, so a simulated TP all-reduce costs (K-1) a_up more
// than its closed form (13 us of 262 us at TP 8 on NVLink 5): simulated's 17 ms above
// closed_form for that job is mostly this.
//
// # Stragglers
//
// `stragglers` (Stragglers) gives some GPUs a compute speed: a compute phase of nominal
// duration d (its FLOPs at peak x efficiency, or the optimizer's HBM time) takes d / speed on
// that rank; the NVLink TP time inside a phase does not change (it is the links', not the
// SMs'). Three sources, whose factors multiply:
//
//	stragglers:
//	  slow: [{ranks: [17, 64-71], speed: 0.8}]                 # fixed: a GPU 20% slower
//	  jitter: {dist: lognormal, sigma: 0.02, per: op}          # random, per compute op (or per step)
//	  throttle: [{ranks: [3], at: 2s, for: 500ms, speed: 0.7}] # clocks down for a window
//
// Speeds are 0.05 to 1.5 (below 1/20 a GPU has failed rather than straggled; above 1 is a
// better-binned part). Ranks are the job's ranks (rank r on host r), a number or an inclusive
// range "lo-hi", checked against the world size; a rank takes one slow speed.
//
// Decisions. Jitter multiplies each compute op's duration by exp(sigma Z), Z standard normal:
// lognormal, median 1, because kernel times are positive and skewed; sigma 0.02 is a 2%
// spread. A rank draws once per compute op by default (per: op): the gradient reduction and
// the step barrier wait for the slowest of N ranks, so the step grows with the world; with
// one draw per rank per step (per: step, a GPU slow for a whole step) by exactly the
// expected maximum of N lognormals, exp(sigma M_N) - 1 with M_N = E[max of N standard
// normals] (1.42 at 8 ranks, 3.25 at 1,024: +2.9% and +6.7% at sigma 0.02), and per op by
// less, since a rank's own ops average out (+5.4% at 1,024 ranks with 5 ops per rank). Draws come from a counter-based hash of a stream of the
// simulation's seed (sim.Stream(run.seed, "training.stragglers")), the step, the rank and the
// op's index, so they do not depend on event order and rank r draws the same in a larger
// world (the maximum never falls as the world grows). Throttle windows are in simulated time
// from the job's start (the first simulated step); a compute op that straddles a window's
// edge is integrated piecewise. A window after the simulated steps has no effect and leaves a
// note (raise sim_steps to reach it).
//
// A TP group inside one NVLink domain (its all-reduces in closed form) computes at the pace of
// its slowest member: the all-reduces after every attention and MLP block synchronise the
// members, so each of its compute ops takes the longest of the members' times and the
// faster members wait the difference as sync. Across domains the TP all-reduces are network
// collectives and the engine synchronises the members itself.
//
// Everything else follows from the lockstep engine: a collective launches when its last
// member posts it, a pipeline transfer when both stages reach it, and the step barrier waits
// for the last rank. In 1F1B with Megatron's blocking send/recv pairs every stage's round is
// F_p + B_p plus one transfer per pair it takes part in (one on the first and last stage, two
// inside), and the rounds of a pipeline run in lockstep, so the steady period is the largest
// over stages; a slow stage whose round still fits (an end stage has one transfer of slack
// per round) costs only its share of the fill and drain. With pure data parallelism and the
// reduction after the last backward, one rank at speed s lengthens the step by exactly
// (m (F+B) + optimizer) (1/s - 1). The tests check both closed forms, a 0.8x GPU in a
// 1,024-GPU Llama-3-8B job (TP 8, PP 4, DP 32: its pipeline's heaviest stage takes
// 16 x 0.25 x its compute longer, +139.5 ms on an 816 ms step, +17.1%, whatever the DP size),
// and the growth of jitter with the world against E[max of N normals].
//
// Reuse. Any straggler simulates every microbatch (as RunOptions.Exact): jitter and throttling
// make rounds differ, and a slow stage that is not its pipeline's bottleneck settles into the
// slower period only after its slack is spent, tens of rounds in, so the repeated rounds are
// not yet steady at round PP. The cost is m / (2PP + 2) times the events of a reused step. A
// job without stragglers (no section, an empty one, sigma 0) runs exactly as before. Whole
// steps are still reused: RunOptions.Steps (sim_steps) are simulated, each with its own
// draws, and the last stands for the remaining iterations.
//
// Per step the trace records (StepTrace) the distribution of the ranks' arrival at the step
// barrier (nearest-rank P50, P99, P100 from the step's start), the launch skew of the
// data-parallel collectives (how long the first member to post each gradient bucket waited for
// the last: a straggler's lateness reaches every DP group its pipeline is in), the slowest
// rank (the last to arrive) and why, and the busiest rank (the longest compute: the straggler
// itself, while the last to arrive is whoever runs the longest optimizer after the reduction
// everyone waited at). steps.csv has them per step, summary.json for the last and the worst
// simulated step.
//
// # Not modelled
//
// Overlap of TP, CP or EP communication with compute, ring-attention context parallelism,
// sequence parallelism's all-gather and reduce-scatter in place of each TP all-reduce (the
// same bytes), NVLink SHARP (NCCL's NVLS algorithms), hierarchical collectives over domains
// holding unequal numbers of a group's members, the overlap of a hierarchical collective's
// phases across loops at flow level, load imbalance across experts or documents,
// stragglers' effect on the power draw beyond their longer compute (a throttled GPU draws its
// busy power while computing, as any other), memory capacity (activation memory of the
// schedules included), CPUs, NICs and switches in the power draw, the cost of the step
// barrier's global all-reduce, and the compute slowdown of kernels sharing SMs with NCCL.
package training
