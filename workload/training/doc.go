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
// # Not modelled
//
// Interleaved (virtual-stage) schedules, context parallelism, per-layer FSDP/ZeRO-3
// gathering, overlap of TP or EP communication with compute, load imbalance across experts,
// memory capacity, CPUs, NICs and switches in the power draw, and the cost of the step
// barrier's global all-reduce.
package training
