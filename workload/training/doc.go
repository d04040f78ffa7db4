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
//   - GPU (gpu.go): peak FLOP/s, efficiency, HBM bandwidth, power when busy, communicating
//     and idle, the NVLink domain; presets h100, b200, gb200.
//   - Plan (plan.go): TP, PP, DP, EP, ZeRO, recomputation, placement order, with checked
//     arithmetic; Placement (placement.go) maps ranks to fabric hosts.
//   - Job (job.go, program.go): each stage's forward and backward per microbatch as compute
//     phases (FLOPs / (peak x efficiency)), NVLink TP all-reduces in closed form, and network
//     collectives; gradient buckets; the optimizer; a per-rank program following Megatron-LM's
//     1F1B schedule.
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
// barrier. Each group (a TP group crossing domains, an EP group, a pair of adjacent pipeline
// stages per direction, a DP group, an expert-DP group) has one stream: its collectives run
// one at a time in posting order, and each launches when the last member rank has posted it
// and the previous one has finished (NCCL semantics: one communicator, one CUDA stream). The
// backend reports completion; waiting ranks resume.
//
// A step follows Megatron-LM's non-interleaved 1F1B schedule on each stage: min(PP-p-1, m)
// warmup forwards, steady iterations of one forward and one backward with batched blocking
// send/recv pairs, cooldown backwards; pipeline transfers carry b s h / TP bytes per
// microbatch per TP rank (Megatron's scatter/gather optimisation, SC'21 §4.1). MoE layers
// wait on an all-to-all dispatch before their experts and a combine after (two more in the
// backward; collective.MoE sizes them, uniform routing, tokens split over TP ranks as with
// sequence parallelism). Gradients accumulate over microbatches; during the last
// microbatch's backward each bucket's reduction is posted as soon as the bucket fills
// (gradients appear evenly over each layer's backward), or all after it when overlap is off.
// Then the ranks wait for the reductions, run the optimizer (HBM-bound:
// OptimizerBytesPerParam per parameter, of the 1/DP shard under ZeRO), all-gather parameters
// under ZeRO, and meet at the step barrier: the optimizer needs the global gradient norm
// (Megatron's clip_grad_norm all-reduces it over every rank), so no rank starts the next step
// before every rank has finished this one; the barrier itself costs nothing here.
//
// Tensor parallelism: 2 all-reduces of b s h bytes per layer in the forward and 2 in the
// backward (Narayanan et al., SC'21 §3.2). When every TP group sits inside one scale-up
// domain they are costed with collective.Pipelined on the GPU's NVLink rate and latency and
// added to the compute phase as exposed TP time (they are on the critical path), except
// where "Tensor parallelism over NVLink" below runs them as collectives; otherwise they go
// through the backend as network collectives.
//
// Categories (Category): every instant of every rank is compute, exposed TP, PP, DP or EP
// communication (waiting on a launched collective, or on one queued behind another on its
// stream), bubble (waiting for the neighbouring stage to post its side of a pipeline
// transfer, or at the step barrier for the slowest rank) or sync (waiting for the rest of a
// TP, DP or EP group to reach a collective). They sum to the step time on every rank.
//
// Identical work is simulated once: see Trace for the reuse of steady 1F1B rounds within a
// step and of whole steps. A 1,024-GPU Llama-3-70B step (TP 8, PP 4, DP 32, 16 microbatches,
// 10 simulated) takes about 0.07 s of wall time on AnalyticBackend and 7-11 s on
// ExecutorBackend over collective.Ideal (18 M messages, mostly the gradient all-reduce's
// 512 KiB ring chunks; BenchmarkStep70B1024, two cores). The executor keeps every launched
// collective's state until the simulation ends, about 5 bytes per schedule operation (270 MB
// for that step).
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
// Interleaved (virtual-stage) schedules, context parallelism, per-layer FSDP/ZeRO-3
// gathering, sequence parallelism's all-gather and reduce-scatter in place of each TP
// all-reduce (the same bytes), NVLink SHARP (NCCL's NVLS algorithms), hierarchical
// collectives over domains holding unequal numbers of a group's members, the overlap of a
// hierarchical collective's phases across loops at flow level, overlap of TP or EP
// communication with compute, load imbalance across experts,
// stragglers' effect on the power draw beyond their longer compute (a throttled GPU draws
// its busy power while computing, as any other),
// memory capacity, CPUs, NICs and switches in the power draw, and the cost of the step
// barrier's global all-reduce.
package training
