// Package fault turns a scenario's fault entries into a checked, timed schedule of actions on
// named fabric elements: links, switches, NIC ports and transceivers. It decides what fails,
// when, and for how long; package fabric applies each action (SetLinkDown, SetLoss, SetBER,
// SetEntropyLoss, SetBlackhole, Port.Rate) and package runner schedules them in a run.
//
// # Entries
//
// A Spec is one entry of a scenario's faults: list. It names one target, by exact name or a
// path.Match glob, of one kind:
//
//   - link: a port name, "h3.p2" (host 3's NIC port on plane 2), "p0.t0-1.up3",
//     "p0.t1-2.down5". Either end names the link; down, up, flap, degrade, undegrade and heal
//     act on both directions, loss and ber on the direction given by Direction.
//   - switch: a switch name, "p0.t1-2". down, up, flap, degrade, undegrade, loss and ber act
//     on every link of the switch (loss and ber: out = leaving the switch); blackhole is for
//     switches only.
//   - nic: a host NIC port, "h3.p2" (globs such as "h3.*" or "h*.p0" match NIC ports only).
//   - transceiver: a group of Breakout consecutive ports of one node that share an optical
//     module and fail together: host h's NIC ports p(kN)..p(kN+N-1) form "h<h>.x<k>" (an
//     800G NIC module broken out to several planes), a switch's down ports down(kN).. form
//     "<switch>.xd<k>" and its up ports "<switch>.xu<k>" (a switch port broken out to several
//     hosts or switches, e.g. 4 x 200G). N is Breakout (default 4); the last group of a side may
//     hold fewer ports, and ports a partial build leaves unconnected are not part of any group.
//
// Actions (Action): down, up, flap (down for DownFor, Count times, every Period), degrade (Rate
// or Factor of the link's rate, both directions), undegrade (back to the built rate), loss
// (probability Loss per packet, optionally only packets of one Entropy value, in Direction),
// ber (bit error rate BER, in Direction), blackhole (a switch that stays up and forwards
// nothing), heal (ends every fault active on the target: up, undegrade, loss and ber cleared,
// blackhole off). For gives down, degrade, loss, ber and blackhole their own restore after a
// fixed time. AtStep (workload.training) counts an entry's times from a training step's
// simulated start rather than the run's: its events carry Event.Step, the runner schedules
// them when the step starts, and since their order against other entries is known only then,
// an element an AtStep entry acts on may be named by no other entry (checked, so each AtStep
// entry's contradictions are checked on its own).
//
// # Random processes
//
// An entry with Random draws failures of its action on each matched element over [At,
// Random.Until): exponential times to failure at Random.PerDay failures per element per day
// (or one per Random.MTBF), each failure lasting a repair time drawn from Random.Repair
// (fixed, exponential, or lognormal), then the next time to failure (an alternating renewal
// process). For links and NIC ports failing down the default rate is HPNLinkFailuresPerDay
// (Alibaba HPN, SIGCOMM 2024); other actions and switches have no published default and need
// a rate. Draws come from sim.Stream(seed, "<path>[i] <element>"): one stream per entry and
// element, so the same seed gives the same failures and widening a glob does not move the
// failures of elements already matched. Every draw becomes concrete Events in the Schedule.
//
// # Checks
//
// Expand rejects, with an *Error naming the field path, the value and what is allowed: bad
// fields (negative times, Period <= DownFor, Count 0, Loss outside [0, 1], BER outside (0,
// 1e-3], a degrade that does not lower a link's rate, an unknown action), a target matching
// nothing (with examples of this fabric's names), and contradictory explicit entries, naming
// both: a link taken down twice with no up between (flap trains included), an up of a link
// that is not down, an undegrade of a link not degraded, a switch blackholed twice, two
// entries acting on the same element and aspect at the same instant, more than
// fabric.MaxEntropyFilters entropy filters on a port, a heal with nothing to heal. A random
// failure that would overlap another fault of the same aspect on the same element is skipped
// rather than rejected (a seed must not make a scenario invalid) and counted in
// EntryStats.Skipped.
//
// # Routing
//
// down and up change link state, so runner recomputes ECMP tables fabric.reconvergence after
// each (flaps and switch failures included). A blackhole keeps every link up: no link-state
// signal reveals it, so routing never reconverges around it and ECMP keeps hashing flows into
// it until the fault ends; only a transport that moves traffic itself (MRC retiring the EVs
// through that switch [MRC §2.1]) escapes. This is the MRC paper's point about a blackholing
// T1, and why it is modelled as a switch state and not as its links failing.
package fault
