package rocenic

import (
	"fmt"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/nic"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// newConfig returns the zero transport.roce block (transport.Plugin.NewConfig).
func newConfig() any { return &roce.Config{} }

// resolve fills transport.roce in place under kind roce (transport.Plugin.Resolve): roce's
// defaults (out-of-order placement on under fabric.adaptive_routing unless written off:
// roce.Config.ForFabric), its validation, and DCQCN's rates against the NIC port rate of env.Topology.
// Errors name the field under env.Path ("transport.roce.dcqcn.rate_ai: ..."), the value and
// what is allowed.
func resolve(cfg any, env transport.ResolveEnv) error {
	rc := cfg.(*roce.Config)
	follows := rc.OutOfOrder == nil || rc.OutOfOrder.Enabled == nil
	*rc = rc.ForFabric(env.Adaptive)
	if follows {
		// Left out, enabled stays left out in the resolved scenario, in a block of its own:
		// the written scenario (lockstep validate, scenario.yaml) says in a comment that it
		// follows fabric.adaptive_routing.enabled and its value in force (the follows tag);
		// Endpoint and the flow model apply ForFabric again.
		var o roce.OutOfOrder
		if rc.OutOfOrder != nil {
			o = *rc.OutOfOrder
		}
		o.Enabled = nil
		rc.OutOfOrder = &o
	}
	if err := rc.Validate(env.Path); err != nil {
		return err // already "transport.roce.<field>: ..."
	}
	line := env.Topology.Params().HostLink
	if rc.DCQCN.RateAI > line {
		div := roce.ProductionRateAIDivisor
		if rc.DCQCN.Profile == roce.DCQCNProfilePaper {
			div = roce.DCQCNRateAIDivisor
		}
		return fmt.Errorf("%s.dcqcn.rate_ai: %v is above the NIC port rate %v; an additive step is a small fraction of it (default under dcqcn.profile %s: line/%d, %v here)", env.Path, rc.DCQCN.RateAI, line, rc.DCQCN.Profile, div, line/sim.Rate(div))
	}
	if rc.DCQCN.RateHAI > line {
		return fmt.Errorf("%s.dcqcn.rate_hai: %v is above the NIC port rate %v; the hyper-increase step is a small fraction of it (default 10 x rate_ai)", env.Path, rc.DCQCN.RateHAI, line)
	}
	if rc.DCQCN.MinRate > line {
		return fmt.Errorf("%s.dcqcn.min_rate: %v is above the NIC port rate %v", env.Path, rc.DCQCN.MinRate, line)
	}
	return nil
}

// Constants of the roce fabric profile (fabric.profile: roce).
const (
	// ProfileKmin and ProfileKmax are the profile's ECN thresholds per 100 Gb/s of link
	// rate, bytes: 4 us and 16 us of queue, the 1:4 RED shape and Pmax 0.2 of the DCQCN/HPCC
	// profile (100/400 KB per 25 Gb/s) at 1/8 of its depth. That profile's depth (32 us of
	// queue) sits above a typical PFC pause point, so DCQCN never acted; NVIDIA's Spectrum
	// RoCE default (150 KB / 1.5 MB at 400 Gb/s, Cumulus Linux "RoCE" defaults) puts Kmin at
	// 3 us, the same order as this one. Lockstep default; runner tests pin what it gives
	// across 25G..800G.
	ProfileKmin = 50e3
	ProfileKmax = 200e3
	// ProfilePmax is the profile's marking probability at kmax (ecn.pmax), which it also
	// fills in an ecn block that gives thresholds but no pmax: DCQCN's RED profile [DCQCN §5].
	ProfilePmax = 0.2
	// ProfilePFCAlpha is the profile's dynamic PFC threshold (fabric.pfc.alpha): SONiC's
	// default for lossless priority groups, dynamic_th 0 (alpha = 2^0 = 1).
	ProfilePFCAlpha = 1.0
	// BufferTime is the profile's switch buffer model: a shared buffer of this much time at
	// the switch's total port rate, 5 MB per Tb/s, the ratio of a 12.8 Tb/s shared-buffer
	// ASIC with 64 MB (Broadcom Tomahawk 3, NVIDIA Spectrum-3 class), with dynamic PFC
	// thresholds alpha = ProfilePFCAlpha over it (SONiC's lossless-PG default dynamic_th 0,
	// alpha 2^0), a 2-MTU reserve per ingress and headroom from each link's delay (cable and
	// forwarding) and speed (fabric.PFCConfig).
	BufferTime = 40 * sim.Microsecond
	// PFCQueueLimit is the least switch queue limit the profile sets under PFC, bytes: a
	// switch's shared buffer (tens of MiB on current ASICs); losslessLimit raises it on
	// larger switches.
	PFCQueueLimit = 64 << 20
)

// profile applies the roce fabric profile (transport.Plugin.Profile): RED/ECN marking for
// DCQCN on every switch queue, the last hop included: Kmin ProfileKmin and Kmax ProfileKmax
// per 100 Gb/s of the port's link rate (4 us and 16 us of queue at any speed), Pmax
// ProfilePmax (within a smaller queue limit the scenario sets: Kmin limit/4, Kmax the limit),
// no trimming [docs/protocols.md, "RoCEv2: DCQCN" and "ECN"]; under PFC, the shared buffer
// sized from the switch (sizeBuffer) and queue limits of at least PFCQueueLimit (64 MiB) and
// at least what a switch's ingresses may hold before all of them pause (losslessLimit), so
// the pauses, not drop-tail, bound the queues at any switch size. Settings env.Given says the
// scenario wrote are kept. The thresholds sit far below the PFC pause point of the profile's
// buffer model (sizeBuffer) at every speed, so DCQCN acts before PFC; the pre-run checks warn
// when a scenario's do not. cfg is not used: the profile depends on the fabric alone.
func profile(cfg any, env transport.ProfileEnv) {
	c := env.Topology.Params()
	given := env.Given
	lossless := env.PFC != nil && env.PFC.Enabled
	var limit sim.Size
	if lossless {
		sizeBuffer(env)
		limit = losslessLimit(env)
	}
	set := func(q *fabric.QueueConfig, rate sim.Rate, limitGiven, ecnGiven, trimGiven bool) {
		if lossless && !limitGiven && q.Limit < limit {
			// Lossless: the ingresses' pauses, not the egress limits, bound the buffer; a
			// limit at least what the ingresses may hold keeps drop-tail from acting first.
			q.Limit = limit
		}
		if !ecnGiven {
			scale := float64(rate) / 100e9
			q.ECN = fabric.ECNConfig{Enabled: true, Kmin: sim.Size(ProfileKmin * scale), Kmax: sim.Size(ProfileKmax * scale), Pmax: ProfilePmax}
			if q.ECN.Kmax > q.Limit { // a small queue the user set: mark within it
				q.ECN.Kmin, q.ECN.Kmax = q.Limit/4, q.Limit
			}
		}
		if !trimGiven {
			q.Trim.Enabled = false
		}
	}
	set(env.SwitchQueue, c.FabricLink, given.SwitchLimit, given.SwitchECN, given.SwitchTrim)
	if lh := *env.LastHopQueue; lh != nil {
		set(lh, c.HostLink, given.LastLimit, given.LastECN, given.LastTrim)
	}
}

// sizeBuffer sets env.PFC.SharedBuffer, when the profile left it to the switch (dynamic
// thresholds with no buffer given), to BufferTime x the largest switch's total port rate on
// the topology (at least 1 MiB and one data packet of env.MaxPacketBytes per ingress; 1 MiB
// on a fluid run, which builds no packet fabric).
func sizeBuffer(env transport.ProfileEnv) {
	p := env.PFC
	if p == nil || p.Alpha == 0 || p.SharedBuffer != 0 {
		return
	}
	var most sim.Rate
	ports := 0
	if !env.Fluid {
		for _, s := range nic.SwitchIngresses(env.Topology) {
			var sum sim.Rate
			for _, k := range s {
				sum += k.Rate
			}
			most, ports = max(most, sum), max(ports, len(s))
		}
	}
	// At least one data packet per ingress (the pre-run check), which 1 MiB is up to radix 250.
	p.SharedBuffer = max(sim.Size(most.BytesIn(BufferTime)), 1<<20, sim.Size(int64(ports)*env.MaxPacketBytes))
}

// losslessLimit is the switch egress queue limit the profile sets under PFC: PFCQueueLimit,
// or more on a switch whose ingresses may hold more before all of them pause (each ingress
// its reserve or XOFF plus headroom, and the shared buffer with dynamic thresholds:
// fabric.Network.PFCLosslessCheck's bound), so drop-tail never acts before PFC; at most
// fabric.MaxQueueLimit. The shared buffer must be sized first (sizeBuffer).
func losslessLimit(env transport.ProfileEnv) sim.Size {
	limit := sim.Size(PFCQueueLimit)
	if env.Fluid {
		return limit
	}
	cfg := env.PFC.WithDefaults()
	for _, s := range nic.SwitchIngresses(env.Topology) {
		var hold sim.Size
		for _, k := range s {
			hold += cfg.IngressHold(k.Rate, k.Delay)
		}
		if cfg.Alpha > 0 {
			hold += cfg.SharedBuffer
		}
		limit = max(limit, hold)
	}
	return min(limit, fabric.MaxQueueLimit)
}
