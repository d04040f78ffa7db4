package scenario

import (
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport/mrc"
)

// profile applies fabric.profile to the switch and last-hop queues (and, under roce with
// PFC, the shared buffer) from the topology (step profile, after checkQueues: the checks see
// the queues as written, the profile fills what they left to it). Settings the scenario gave
// explicitly (Fabric.Given) are kept, so the resolved scenario, parsed again with every
// setting given, resolves to itself.
func (r *resolver) profile() error {
	switch r.sc.Fabric.Profile {
	case ProfileMRC:
		applyMRCProfile(r.sc, r.l)
	case ProfileRoCE:
		applyRoCEProfile(r.sc, r.l)
	}
	return nil
}

// applyMRCProfile sets switch ECN and trimming from the BDP (ProfileMRC): marking from 0.2 to
// 0.8 BDP on fabric hops, none on the last hop, trimming above 1 BDP (1.5 BDP at the last
// hop), each at least a few packets (3, 12 and 12 MTUs). BDP = fabric link rate x base RTT of
// the MRC packet sizes.
func applyMRCProfile(sc *Scenario, l topo.Topology) {
	c := l.Params()
	cfg := mrc.Config{}
	if sc.Transport.MRC != nil {
		cfg = *sc.Transport.MRC
	}
	cfg = cfg.WithDefaults()
	hops := l.Sizing().MaxSwitchHops
	rtt := c.RoundTrip(hops, cfg.WireBytes(cfg.PayloadBytes), cfg.AckBytes)
	bdp := c.FabricLink.BytesIn(rtt)
	// Packet floors (lockstep): at low rates a BDP is a few packets, and spraying queues
	// whole packets at every hop; marking from 0.2 BDP (one packet at 10G) and trimming at one
	// BDP (five) would mark and trim the ordinary contention of a full-bisection fabric.
	// Marking starts at 3 packets at least, reaches 1 at 12, trimming at 12 (18 at the last
	// hop). From 100G up the BDP fractions are the larger (docs/protocols.md).
	mtu := int64(cfg.WireBytes(cfg.PayloadBytes))
	kmin, kmax, trim := max(bdp/5, 3*mtu), max(bdp*4/5, 12*mtu), max(bdp, 12*mtu)
	given := sc.Fabric.Given()
	sw := &sc.Fabric.SwitchQueue
	if !given.SwitchECN {
		sw.ECN = fabric.ECNConfig{Enabled: true, Kmin: sim.Size(kmin), Kmax: sim.Size(kmax), Pmax: 1}
	}
	if !given.SwitchTrim {
		sw.Trim = fabric.TrimConfig{Enabled: true, Threshold: sim.Size(trim), HeaderLimit: sw.Trim.HeaderLimit, HeaderShare: sw.Trim.HeaderShare}
	}
	lh := sc.Fabric.LastHopQueue
	if lh == nil {
		q := *sw
		lh = &q
		sc.Fabric.LastHopQueue = lh
	}
	if !given.LastECN {
		lh.ECN = fabric.ECNConfig{}
	}
	if !given.LastTrim {
		lh.Trim = fabric.TrimConfig{Enabled: true, Threshold: sim.Size(trim * 3 / 2), HeaderLimit: lh.Trim.HeaderLimit, HeaderShare: lh.Trim.HeaderShare}
	}
	for i, q := range []*fabric.QueueConfig{sw, lh} {
		if given := [2]bool{given.SwitchLimit, given.LastLimit}[i]; !given && q.Limit < sim.Size(2*trim) {
			q.Limit = sim.Size(2 * trim) // room above the trim threshold for headers' data to drain
		}
		*q = q.WithDefaults()
	}
}

// applyRoCEProfile sets RED/ECN marking for DCQCN on every switch queue, the last hop
// included (ProfileRoCE): Kmin ProfileRoCEKmin and Kmax ProfileRoCEKmax per 100 Gb/s of the
// port's link rate (4 us and 16 us of queue at any speed), Pmax 0.2 (within a smaller queue
// limit the scenario sets: Kmin limit/4, Kmax the limit), no trimming; under PFC, the shared
// buffer sized from the switch (sizeRoCEBuffer) and queue limits of at least pfcQueueLimit
// (64 MiB) and at least what a switch's ingresses may hold before all of them pause
// (roceLosslessLimit), so the pauses, not drop-tail, bound the queues at any switch size.
// Settings the scenario gives explicitly (Fabric.Given) are kept. The thresholds sit far
// below the PFC pause point of the profile's buffer model (sizeRoCEBuffer) at every speed, so
// DCQCN acts before PFC; the runner warns when a scenario's do not.
func applyRoCEProfile(sc *Scenario, l topo.Topology) {
	c := l.Params()
	given := sc.Fabric.Given()
	lossless := sc.Fabric.PFC.Config().Enabled
	var limit sim.Size
	if lossless {
		sizeRoCEBuffer(sc, l)
		limit = roceLosslessLimit(sc, l)
	}
	set := func(q *fabric.QueueConfig, rate sim.Rate, limitGiven, ecnGiven, trimGiven bool) {
		if lossless && !limitGiven && q.Limit < limit {
			// Lossless: the ingresses' pauses, not the egress limits, bound the buffer; a
			// limit at least what the ingresses may hold keeps drop-tail from acting first.
			q.Limit = limit
		}
		if !ecnGiven {
			scale := float64(rate) / 100e9
			q.ECN = fabric.ECNConfig{Enabled: true, Kmin: sim.Size(ProfileRoCEKmin * scale), Kmax: sim.Size(ProfileRoCEKmax * scale), Pmax: ProfileRoCEPmax}
			if q.ECN.Kmax > q.Limit { // a small queue the user set: mark within it
				q.ECN.Kmin, q.ECN.Kmax = q.Limit/4, q.Limit
			}
		}
		if !trimGiven {
			q.Trim.Enabled = false
		}
	}
	set(&sc.Fabric.SwitchQueue, c.FabricLink, given.SwitchLimit, given.SwitchECN, given.SwitchTrim)
	if sc.Fabric.LastHopQueue != nil {
		set(sc.Fabric.LastHopQueue, c.HostLink, given.LastLimit, given.LastECN, given.LastTrim)
	}
}

// ECN thresholds of the roce profile per 100 Gb/s of link rate, bytes: 4 us and 16 us of
// queue, the 1:4 RED shape and Pmax 0.2 of the DCQCN/HPCC profile (100/400 KB per 25 Gb/s)
// at 1/8 of its depth. That profile's depth (32 us of queue) sits above a typical PFC pause
// point, so DCQCN never acted; NVIDIA's Spectrum RoCE default (150 KB / 1.5 MB at 400 Gb/s,
// Cumulus Linux "RoCE" defaults) puts Kmin at 3 us, the same order as this one. Lockstep
// default; runner tests pin what it gives across 25G..800G.
const (
	ProfileRoCEKmin = 50e3
	ProfileRoCEKmax = 200e3
)

// RoCEBufferTime is the roce profile's switch buffer model: a shared buffer of this much time
// at the switch's total port rate, 5 MB per Tb/s, the ratio of a 12.8 Tb/s shared-buffer ASIC
// with 64 MB (Broadcom Tomahawk 3, NVIDIA Spectrum-3 class), with dynamic PFC thresholds
// alpha = ProfileRoCEPFCAlpha over it (SONiC's lossless-PG default dynamic_th 0, alpha 2^0),
// a 2-MTU reserve per ingress and headroom from each link's delay (cable and forwarding) and
// speed (fabric.PFCConfig).
const RoCEBufferTime = 40 * sim.Microsecond

// sizeRoCEBuffer sets fabric.pfc.shared_buffer, when the roce profile left it to the switch
// (dynamic thresholds with no buffer given), to RoCEBufferTime x the largest switch's total
// port rate on fabric l (at least 1 MiB and one data packet per ingress; 1 MiB on a
// flow-level run, which builds no packet fabric).
func sizeRoCEBuffer(sc *Scenario, l topo.Topology) {
	p := sc.Fabric.PFC
	if p == nil || p.Alpha == 0 || p.SharedBuffer != 0 || sc.Fabric.Profile != ProfileRoCE {
		return
	}
	var most sim.Rate
	ports := 0
	if !sc.Fluid() {
		for _, s := range SwitchIngresses(l) {
			var sum sim.Rate
			for _, k := range s {
				sum += k.Rate
			}
			most, ports = max(most, sum), max(ports, len(s))
		}
	}
	// At least one data packet per ingress (the runner's check), which 1 MiB is up to radix 250.
	p.SharedBuffer = max(sim.Size(most.BytesIn(RoCEBufferTime)), 1<<20, sim.Size(int64(ports)*sc.MaxPacketBytes()))
}

// SwitchIngresses lists, by node of l, the links at a switch's ports (one per connected port,
// so the switch's ingresses; none for a host).
func SwitchIngresses(l topo.Topology) [][]topo.Link {
	out := make([][]topo.Link, l.NumNodes())
	for _, k := range l.Links() {
		for _, n := range [2]int{k.A.Node, k.B.Node} {
			if nd, ok := l.Node(n); ok && nd.Kind == topo.KindSwitch {
				out[n] = append(out[n], k)
			}
		}
	}
	return out
}

// roceLosslessLimit is the switch egress queue limit the roce profile sets under PFC:
// pfcQueueLimit, or more on a switch whose ingresses may hold more before all of them pause
// (each ingress its reserve or XOFF plus headroom, and the shared buffer with dynamic
// thresholds: fabric.Network.PFCLosslessCheck's bound), so drop-tail never acts before PFC;
// at most fabric.MaxQueueLimit. The shared buffer must be sized first (sizeRoCEBuffer).
func roceLosslessLimit(sc *Scenario, l topo.Topology) sim.Size {
	limit := sim.Size(pfcQueueLimit)
	if sc.Fluid() {
		return limit
	}
	cfg := sc.Fabric.PFC.Config().WithDefaults()
	for _, s := range SwitchIngresses(l) {
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

// pfcQueueLimit is the least switch queue limit the RoCE profile sets under PFC: a switch's
// shared buffer (tens of MiB on current ASICs); roceLosslessLimit raises it on larger switches.
const pfcQueueLimit = 64 << 20
