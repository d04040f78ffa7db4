// Package collective expands NCCL-style collectives into per-step point-to-point transfers with
// dependencies, runs them on any transport inside a simulation, and reports them the way
// nccl-tests does.
//
// # Pieces
//
//   - Spec (spec.go) says what to run: an operation (Collective), an Algorithm, the rank count,
//     the size S, chunking and channels. Build (build.go) validates it and expands it into a
//     Schedule (schedule.go): per-rank operations Send{peer, bytes, step}, Recv{peer, bytes,
//     step} and Reduce{bytes} with dependencies (a DAG), stored compactly (28-byte ops, CSR
//     int32 dependency and successor lists, no maps) so 1024 ranks with chunking, millions of
//     ops, build in about a second. A Schedule is for rank positions 0..n-1 and can be launched
//     on any communicator (Comm, comm.go) of n hosts, many times, concurrently.
//   - Executor (exec.go) runs schedules on a *sim.Sim through a Transport, the small interface
//     a network model implements (its contract is on Transport). Ideal (ideal.go) is a
//     packet-free transport: one NIC of rate B per host with FIFO transmit and receive
//     serialisation and latency a, for tests and for users without a fabric. The MRC and RoCE
//     engines plug in through an adapter in the runner: one QP per (src, dst) host pair,
//     messages posted in order, Executor.Delivered called when the receiver has placed a
//     message.
//   - AlphaBeta and Pipelined (model.go) are the closed forms (Thakur et al. 2005; Rabenseifner
//     2004; Sanders et al. 2009) that tests and reports compare the simulation with;
//     AlphaBetaScaleUp and PipelinedScaleUp charge a hierarchical collective's phases
//     (HierarchicalPhases) on two networks, the scale-up domain and the NIC.
//   - Row, WriteTable, WriteCSV, Sizes and SweepIdeal (report.go) produce nccl-tests style
//     tables with algbw and busbw (nccl-tests doc/PERFORMANCE.md).
//   - MoE (moe.go) sizes expert-parallel dispatch all-to-alls.
//   - Executor.Stuck (watchdog.go) names the ranks still waiting and on what.
//
// # Algorithms
//
//	operation        algorithms
//	all_reduce       ring, tree, halving_doubling, recursive_doubling, hierarchical
//	reduce_scatter   ring, halving_doubling (power-of-two n only), hierarchical
//	all_gather       ring, halving_doubling (power-of-two n only), hierarchical
//	broadcast        ring (a pipelined chain from the root)
//	reduce           ring (a pipelined chain to the root)
//	all_to_all       grouped (NCCL: every pair at once), pairwise (n-1 steps); uniform, or a [n][n] byte matrix
//	send_recv        direct
//
// Halving-doubling and recursive-doubling all-reduces on a non-power-of-two n fold the extra
// ranks in and out as MPICH does (two extra steps); see hd.go.
//
// # Auto
//
// Auto picks (AutoAlgorithm), a simplification of NCCL's tuner: for all-reduce with n > 1,
// recursive doubling when S <= 64 KiB (log2 n steps, each a full-buffer exchange: latency
// wins); when S/n < 512 KiB (the ring's per-rank block would be under one chunk, so the ring
// pays 2(n-1) unpipelined latencies) halving-doubling if n is a power of two (2 log2 n steps,
// bandwidth-optimal) and the double binary tree otherwise (about 2 log2 n steps); and the ring
// otherwise (bandwidth-optimal: each rank sends 2(n-1)/n S). All-to-all takes grouped, as
// NCCL runs it (one ncclGroupStart/ncclGroupEnd of a send and a receive per peer); pairwise
// is the MPI-style alternative. Every other operation has one algorithm, which Auto picks; n = 1 is always a ring of no messages.
// When the ranks are whole scale-up (NVLink) domains of G (Spec.Domain, WholeDomains), an
// all-reduce over O >= 2 domains above 64 KiB with S/O >= 512 KiB runs hierarchical with
// Inner = G (AutoAlgorithmDomain): reduce-scatter in the domain, all-reduce across domains,
// all-gather in the domain, so the network carries 1/G of the ring's bytes and G times fewer
// latencies.
//
// # Sizes and units
//
// S (Spec.Bytes) follows nccl-tests: for reduce-scatter and all-gather it is the total buffer
// (each rank holds S/n), for all-to-all the bytes each rank sends including its own share.
// Times are sim.Time (picoseconds), rates sim.Rate (bits per second), sizes bytes, reduction
// throughput bytes per second. Report bandwidths are GB/s (1e9 bytes per second).
//
// # Not modelled
//
// NCCL's flow control between chunks (NCCL_STEPS slots per channel) is not modelled: a rank
// posts every eligible chunk at once and the transport's own window or NIC queue paces them.
// Protocols (LL, LL128, Simple), SM counts and intra-node NVLink are outside this package;
// run an intra-node communicator on a transport that models NVLink if you need them.
package collective
