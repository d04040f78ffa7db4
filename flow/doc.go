// Package flow is lockstep's flow-level (fluid) network engine, for fabrics too large for the
// packet-level simulation (1k to 131k GPUs). Flows share links at max-min fair rates,
// recomputed whenever a flow starts or ends or a link's capacity changes (incrementally:
// only the flows the change affects are refilled, see "Cost"); between those
// instants every rate is constant and nothing is simulated.
//
// # Pieces
//
//   - Net (net.go) holds the links and the flows and runs them on a *sim.Sim: one timer for
//     its next piece of work, whatever it is (a flow starting, a flow's last byte leaving, a
//     delivery), one rate recomputation per instant however many flows start or end in it.
//   - fill.go computes the rates by progressive filling; incr.go refills only the flows a
//     change affects and checks the result.
//   - Collectives (collective.go, expand.go) expands NCCL-style collectives (collective.Spec on
//     a collective.Comm) into phases of concurrent flows on a Net, routed by a Router the
//     caller provides. It has the Launch method the runner's collective interface asks for,
//     and Send for one point-to-point transfer (a traffic flow at flow level).
//   - Crossbar (crossbar.go) is a Router for an ideal non-blocking switch, for tests and for
//     users without a topology.
//
// # The model
//
// Links are directed: a full-duplex cable is two links, one per direction, each with its own
// index 0..L-1 and capacity in bits per second (float64). A flow carries Bytes from one host
// to another over a set of weighted paths (Path: directed link indexes and a weight; the
// weights are normalised to sum to 1). A flow sprayed over k paths (MRC-style per-packet
// spraying over every minimal path) has k paths of weight 1/k; a RoCE QP pinned by an ECMP
// hash has one path of weight 1. The flow's rate r splits over its paths by weight, so link l
// carries c(f,l) x r where c(f,l), the flow's load coefficient on l, is the sum of the weights
// of its paths through l (a path crossing l twice counts twice). Net stores each flow as a
// compact list of (link, coefficient) pairs, duplicates merged, sorted by (internal) link
// number.
//
// Rates are weighted max-min fair (Bertsekas & Gallager, Data Networks, 2nd ed., §6.5.2), by
// progressive filling: every unfrozen flow's rate rises together from 0; link l saturates
// when sum over f of c(f,l) x r(f) reaches its capacity; the flows crossing a saturated link
// freeze at the level reached; a flow with a rate cap (Flow.Cap: a NIC line rate, a
// transport's ceiling) freezes when the level reaches its cap; filling continues with the
// remaining flows until every flow is frozen. The result is the unique allocation in which
// every flow either runs at its cap or crosses a saturated link on which no flow has a higher
// rate (its bottleneck; B&G §6.5.2, and the test TestMaxMinBottleneckProperty). A flow that
// crosses no link and has no cap gets an infinite rate (it completes at once).
//
// Latency: every flow has a fixed latency (propagation plus switch hops, from the caller),
// added once. A flow whose last byte is sent at the fluid rate at time t_s is delivered at
// t_s + latency; its Done callback runs then. The latency does not hold bandwidth: a flow
// loads its links from its start to t_s only. So an uncontended flow of b bytes at rate B
// takes b x 8 / B + latency, exactly sim.Rate(B).TxTime(b) + latency for a whole-number rate
// (see Rounding).
//
// # Events and rounding
//
// Rates are float64 bits per second and remaining bytes float64, updated lazily: a flow's
// remaining bytes drop by rate x elapsed only when its rate changes or it is checked for
// completion, a link's byte count only when its load changes or it is read. A flow's next
// completion is remaining x 8 / rate after that update, rounded up to a whole picosecond (a
// value within 0.001 ps above a whole number rounds down, which absorbs float error in exact
// cases); the earliest over the flows is the Net's next event. At every event a flow
// completes when fewer than 1 byte remains or its last byte would leave within half a
// picosecond. Two heaps of completion keys (theap.go, lazy deletion) find those flows without
// visiting the others: one keyed by each flow's drain instant (the timer's deadline), one by
// the earliest instant it can count as sent. So completion times are exact to the
// picosecond for a constant rate, and flows that the exact arithmetic would finish at the
// same instant (symmetric flows: a ring's edges) finish together and cost one recomputation.
//
// Every change at one simulated instant (flows added by several events, flows completing,
// SetCapacity) is folded into one recomputation: Net recomputes from its own timer event,
// and when other events are still pending at the same instant it defers to an event at the
// end of that instant (sim.AtEndOfInstant: after every other event there, those the
// instant's handlers schedule included), at most 32 times per instant. Re-arming its timer at
// the instant instead placed the recomputation at a random point among those events: a
// 131,072-GPU training step recomputed 8,760 times, 12 times fewer with the end-of-instant
// event (734).
//
// Determinism: identical inputs give identical results. Flows get ids in creation order;
// flows completing or delivered at the same instant are processed in id order; links that
// saturate at the same level are taken in an order fixed by the inputs (it does not change
// the rates). No map iteration, no wall-clock reads in the results (Stats.RecomputeWall is
// the only wall-clock figure).
//
// # Cost
//
// A recomputation is O(E + L log L + R log L): E the (link, coefficient) entries of the
// active flows (each flow is frozen once, updating its links), L the links they share (one
// heap of links keyed by their saturation level; a link crossed by one flow is folded into
// that flow's limit), R the heap entries found stale (a link's level only rises as flows
// freeze, so a stale link is re-keyed when it reaches the top rather than on every change).
// Adding or removing a flow costs O(its entries); nothing is allocated per recomputation.
// Links are renumbered internally in order of first use, so one flow's links sit close in
// memory whatever the caller's numbering. The cost at scale is random access to per-link and
// per-flow state, so each is one record: a link's (linkState, 128 bytes) and a flow's
// (flowState, 128 bytes) hold in their first cache line what a pass over a link's flows
// reads, so that one miss brings it (layout_test.go pins the layout). Memory: 16 bytes per
// entry plus 16 per (link, flow) pair and 128 per link used, so a sprayed flow of 272
// entries costs about 8.7 KB.
//
// Measured on a 2-core shared Xeon (BenchmarkRecompute1k, BenchmarkRecompute10k, full fills, in
// bench_test.go: a random permutation on an 8-plane 2-tier Clos, every flow sprayed over
// 8 x 16 paths, 263-272 entries each): 1,024 flows recompute in about 2.3 ms of CPU time,
// 10,240 in about 17.5 ms (wall times 2.6-5 ms and 20-55 ms, depending on the machine's
// load). A 1 GiB ring all-reduce over 8,192 ranks of that fabric runs end to end (routing
// included) in 75-170 ms (BenchmarkRingAllReduce8k). Workloads whose flows end
// one by one paid one full recomputation per completion before recomputation was
// incremental (BenchmarkAllToAllRun: 4,096 sprayed flows of random sizes, about 5 ms per
// completion).
//
// Incremental recomputation (incr.go). A recomputation refills only the flows a change can
// affect, with every other flow held at its rate as frozen load, and checks the result
// against the max-min characterisation (every flow at its cap or with a saturated link on
// which no flow is faster) on the flows and links the change and the refill touched; where
// the check fails it refills more flows, and past a quarter of the active flows (or a
// quarter of a full fill's work, or 32 rounds) it runs the full fill; after an attempt that
// gave up, the next 1, 3, 7, ... up to 64 recomputations are full without trying. When only
// flows completed, every flow
// slower than the slowest of them keeps its rate (exact: below that level the removed flows
// saturate nothing) and is left out; when that leaves nothing to refill, only the check
// runs. The rates equal the full fill's to 1e-9 relative
// (TestIncrementalMatchesFull: after every change of 1,000 random sequences of arrivals,
// completions, capacity changes, holds and repaths); Config.FullRecompute forces the full
// fill, and Stats.FullRecomputes and Stats.Refilled count what was done. The cost of an
// incremental recomputation is O(sum of the list lengths of the affected flows' links) per
// round, nothing allocated; the rest of a recomputation (the next completion) and of an event
// is O(log active) per flow whose rate changed or that completes (the completion heaps;
// until issue 21's speed work it was O(active flows) per event: every flow advanced and
// scanned).
//
// Measured on the same shared 2-core machine (BenchmarkFinish16kFull/Incr: 16,384
// single-path ECMP flows on a one-plane 2-tier clos finishing one by one in random order):
// 52.7 ms per completion with full recomputations, 0.26 ms incremental (3.4 flows refilled
// per completion; the O(active) scan for the next completion is most of what is left), no
// allocation. With the completion heaps and lazy remaining bytes (issue 21, same machine
// under load, one run each before and after): 208.6 us -> 20.3 us per completion
// incremental, 36.4 ms -> 25.0 ms full. Whole runs (lockstep run, flow engine, RoCE; results byte-identical to the full
// fill's): Llama-3-405B (TP 8, PP 16, DP 4) on 512 GPUs, 1,564,229 recomputations, 99.6%
// incremental, 1 flow refilled per recomputation on average: 34-41 s -> 21-25 s of CPU for
// the whole run (three pairs; wall times on the shared machine 62-104 s -> 40-85 s);
// Llama-3-70B (TP 8, PP 4) on 256 GPUs, time recomputing 4.5 s -> 1.3 s, network
// simulation 7.5 s -> 2.0 s wall. What is left per event is mostly advancing every active
// flow's remaining bytes (Net.advance) and the runner's routing. Under spraying on a Clos every flow shares
// links with every other, so many changes touch more than a quarter of the flows and fall
// back to the full fill: 2,048 sprayed flows of random sizes on 1,024 hosts of the 8-plane
// clos (BenchmarkAllToAllRun's set, halved), 40% of 2,049 recomputations incremental, 15.7 s
// -> 14.5 s; without the back-off the attempts that gave up made it twice as slow.
//
// # Folding symmetric replicas
//
// Collectives.SetFold (fold.go) simulates one representative per orbit of a group G of
// host permutations under which the whole run is invariant (a training job's data-parallel
// replicas moved by whole T0s, and the GPUs of a tensor-parallel group rotated inside their
// domain, on MRC's bundled Clos): only the flows whose source is the least host of its
// orbit are added, every link is mapped to the least link of its orbit, and a link orbit of
// m < K = |G| links runs at m/K of its capacity. The max-min allocation is unique, hence
// G-invariant, and the quotient's progressive filling reaches the same levels at the same
// instants; the proof and its conditions are in fold.go, the checks in NewFold (the
// generators commute, every host orbit has K members), Collectives.CheckFold (every
// collective on a communicator G maps onto itself is invariant phase by phase), the
// training engine (training.Fold: stages, streams, stabilisers) and the runner
// (runner/flowfold.go: the fabric). Folded and full runs give equal results
// (TestFoldMatchesFull here, runner's TestTrainingFoldMatchesFull: the whole training
// summary). Net readings of a link (LinkBytes, LinkLoad) are its class's times K/m.
//
// # Failures
//
// SetCapacity changes a link's capacity at the current instant (0 for a failed link) and
// triggers a recomputation. Paths are fixed when a flow is added: existing flows keep theirs,
// only flows added later see a Router's new choice. A flow whose path crosses a link of
// capacity 0 gets rate 0 and stalls; Net.Err names it (hosts, flow id, the dead link) and
// Config.OnStall reports it when it happens. Restoring the capacity resumes it.
package flow
