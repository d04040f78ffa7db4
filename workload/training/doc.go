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
//     forms; ExecutorBackend runs per-step schedules on a collective.Executor over any
//     transport (Ideal, MRC, RoCE, a flow engine's adapter); SplitTransport sends
//     intra-domain messages over NVLink and the rest over the fabric.
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
// added to the compute phase as exposed TP time (they are on the critical path); otherwise
// they go through the backend as network collectives.
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
// gathering, overlap of TP or EP communication with compute, load imbalance across experts,
// stragglers' effect on the power draw beyond their longer compute (a throttled GPU draws
// its busy power while computing, as any other),
// memory capacity, CPUs, NICs and switches in the power draw, and the cost of the step
// barrier's global all-reduce.
package training
