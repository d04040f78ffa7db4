package scenario

import "github.com/lockstepsim/lockstep/topo"

// Resolve fills defaults in place and validates the result, section by section. The first
// error found is returned, so the order of the steps is also which error a scenario with
// several reports first; where no dependency orders two steps (fabric queues and run, say),
// they keep the order the checks have always had, so such a scenario keeps reporting the same
// error. The steps, and why they run in this order:
//
//  1. name (resolve_run.go): relies on nothing; run.out defaults from it.
//  2. topology (resolve_topology.go): relies on nothing; every later section is checked
//     against it (hosts, planes, link rate, links, switch ports, base RTT).
//  3. fabric queues (resolve_fabric.go): switch and NIC queue defaults, ecmp_seed,
//     reconvergence; the profile-dependent parts wait for the transport kind (steps 6, 8).
//  4. run (resolve_run.go): engine, seed, duration, drain, sampling, packet limits, out;
//     relies on the topology (link limit, switch ports) and on whether a workload is given
//     (engine and duration defaults).
//  5. transport kind and its block (resolve_transport.go): the kind defaults from whether a
//     workload is given (the WorkloadDefault plugin); a block for another kind is an error;
//     the block in force is resolved by its plugin (transport.Plugin.Resolve: MRC's EV split
//     over the topology's planes and probe interval from its base RTT, RoCE's rates against
//     the NIC port rate).
//  6. fabric.pfc (resolve_fabric.go): on by default under a lossless transport
//     (transport.Plugin.Lossless), its data class depends on the kind, its classes on the
//     switch queues (step 3); the transport's own profile's thresholds apply when
//     fabric.profile is that or left out (read as given, before step 14). Then
//     fabric.switch_model (resolve_switch.go): it needs PFC, the engine and the kind.
//  7. transport.ideal (resolve_transport.go): needs the kind and whether a workload or
//     faults are given.
//  8. fabric.profile and the switch and last-hop queues (resolve_fabric.go): the profile
//     defaults from the transport kind; what it turns on is probed from its plugin.
//  9. faults (resolve_faults.go): expanded against the topology with run.seed and
//     run.duration (as of step 4: step 11 does not move the faults), entropies checked
//     against the resolved transport (MRC's EVs).
//  10. workload or traffic (resolve_workload.go, resolve_traffic.go): checked against the
//     topology's hosts, the transport and the run (seed, engine, duration); the faults'
//     at_step against training's sim_steps.
//  11. run.duration from the transfers (resolve_run.go): left out, it grows to fit the
//     traffic's transfers (step 10), refitting the sampling period.
//  12. the traffic's packet budget (resolve_traffic.go): needs the final run.duration.
//  13. queue checks (resolve_fabric.go): queue limits, ECN and trim thresholds and PFC
//     buffers against the largest packet, which needs the transport and the traffic.
//  14. fabric.profile applied (resolve_profile.go, through transport.Plugin.Profile): the mrc
//     profile's ECN and trimming from the BDP (topology, transport.mrc), the roce profile's
//     marking and, under PFC, its shared buffer and queue limits from the switches
//     (topology, run.engine, the largest packet); last, so the checks of step 13 see the
//     queues as written and the resolved scenario is what runs. Settings given explicitly
//     are kept, so it is a fixed point.
//  15. the memory budget (estimate.go): the estimate of the resolved scenario against
//     run.max_memory; it needs everything above.
func (sc *Scenario) Resolve() error {
	r := &resolver{sc: sc}
	for _, step := range []func() error{
		r.name,
		r.topology,
		r.fabricQueues,
		r.run,
		r.transportKind,
		sc.resolvePFC,
		r.switchModel,
		r.transportIdeal,
		r.fabricProfile,
		r.faults,
		r.load,
		r.transferDuration,
		r.trafficBudget,
		sc.checkQueues,
		r.profile,
		r.memoryBudget,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// resolver carries what earlier resolution steps found to the later ones.
type resolver struct {
	sc *Scenario
	l  topo.Topology // the described topology (step topology)
	c  topo.Params   // its parameters
	// wl: a workload is given (workload.collectives, workload.training or workload.chakra).
	wl bool
	// durationGiven and sampleGiven: run.duration and run.sample_interval were given, not
	// defaulted (step run).
	durationGiven, sampleGiven bool
	flowLevel                  bool  // Scenario.Fluid, as of step run
	switchPorts                int64 // the topology's switch ports in all planes, for the sample cap
}
