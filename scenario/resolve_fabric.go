package scenario

import (
	"fmt"
	"strings"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
)

// fabricQueues resolves what of the fabric section needs no transport: which queue settings
// were given, the switch and NIC queue defaults, ecmp_seed and reconvergence; it relies on
// nothing.
func (r *resolver) fabricQueues() error {
	f := &r.sc.Fabric
	if !f.keys.recorded {
		// Built in Go, not decoded: judge what was given by the values, before defaults.
		f.keys = fabricKeys{recorded: true, sw: valueKeys(&f.SwitchQueue), last: valueKeys(f.LastHopQueue)}
	}
	f.SwitchQueue = f.SwitchQueue.WithDefaults()
	switch f.ECMPSeed {
	case "":
		f.ECMPSeed = "per_switch"
	case "per_switch", "shared":
	default:
		return Errorf("fabric.ecmp_seed", "%q is not a seeding; allowed per_switch, shared", f.ECMPSeed)
	}
	if a := f.AdaptiveRouting; a != nil {
		if err := a.Validate("fabric.adaptive_routing"); err != nil {
			return err
		}
		// sm_delay written alone with adaptive routing off: it still sets reconvergence,
		// which static routing uses (SMDelayWithoutAR).
		f.smDelayAlone = a.SMDelay != 0 && f.Reconvergence == 0 && !a.Enabled
		if a.SMDelay != 0 {
			if f.Reconvergence != 0 && f.Reconvergence != a.SMDelay {
				return Errorf("fabric.adaptive_routing.sm_delay", "%v, but fabric.reconvergence is %v: they are the same delay; give one", a.SMDelay, f.Reconvergence)
			}
			f.Reconvergence = a.SMDelay
		}
	}
	if f.Reconvergence == 0 {
		f.Reconvergence = DefaultReconvergence
	}
	if f.Reconvergence < 0 || f.Reconvergence > sim.Hour {
		return Errorf("fabric.reconvergence", "%v is out of range; allowed 0 (default 1s) to 1h", f.Reconvergence)
	}
	if a := f.AdaptiveRouting; a != nil {
		// The delays in force, so the resolved scenario shows them rather than 0s: the
		// notification's default and the subnet manager's sweep, which is reconvergence.
		*a = a.WithDefaults()
		a.SMDelay = f.Reconvergence
	}
	if f.NICQueue.Limit == 0 {
		f.NICQueue.Limit = DefaultNICQueueLimit
	}
	f.NICQueue = f.NICQueue.WithDefaults()
	return f.NICQueue.Validate("fabric.nic_queue")
}

// fabricProfile resolves fabric.profile (default the transport's own) and then the switch
// and last-hop queues it shapes; it relies on the transport kind.
func (r *resolver) fabricProfile() error {
	sc := r.sc
	switch sc.Fabric.Profile {
	case "":
		sc.Fabric.Profile = ProfileNone
		if p := plugin(sc.Transport.Kind); p != nil && p.Profile != nil {
			sc.Fabric.Profile = sc.Transport.Kind
		}
	case ProfileNone:
	default:
		if p := plugin(sc.Fabric.Profile); p == nil || p.Profile == nil {
			return Errorf("fabric.profile", "%q is not a profile; allowed %s", sc.Fabric.Profile, strings.Join(append(profileKinds(), ProfileNone), ", "))
		}
	}
	return sc.Fabric.resolveQueues(probeProfile(sc.Fabric.Profile, r.l, sc.Fluid()))
}

// profileShape is what a fabric profile turns on at the switch hops and at the last hop,
// and the ecn.pmax it marks with (probeProfile).
type profileShape struct {
	ok                           bool // a profile, not none
	ecn, trim, lastECN, lastTrim bool
	pmax                         float64
	lastApart                    bool // it gives the last hop a queue of its own
}

// on says whether the profile turns ECN marking and trimming on at a queue (last: the last
// hop), and the pmax it marks with; ok is false for ProfileNone, which fills nothing.
func (s profileShape) on(last bool) (ecn, trim bool, pmax float64, ok bool) {
	if last {
		return s.lastECN, s.lastTrim, s.pmax, s.ok
	}
	return s.ecn, s.trim, s.pmax, s.ok
}

// probeProfile finds profile's shape by applying it (transport.Plugin.Profile, with the
// zero block of its transport) to default queues on topology l with nothing given and no
// PFC; the zero shape for none.
func probeProfile(profile string, l topo.Topology, fluid bool) profileShape {
	p := plugin(profile)
	if p == nil || p.Profile == nil {
		return profileShape{}
	}
	var cfg any
	if p.NewConfig != nil {
		cfg = p.NewConfig()
	}
	sw := fabric.QueueConfig{}.WithDefaults()
	var lh *fabric.QueueConfig
	p.Profile(cfg, transport.ProfileEnv{Topology: l, Fluid: fluid, SwitchQueue: &sw, LastHopQueue: &lh})
	s := profileShape{ok: true, ecn: sw.ECN.Enabled, trim: sw.Trim.Enabled, pmax: sw.ECN.Pmax, lastApart: lh != nil}
	s.lastECN, s.lastTrim = s.ecn, s.trim
	if lh != nil {
		s.lastECN, s.lastTrim = lh.ECN.Enabled, lh.Trim.Enabled
	}
	return s
}

// resolveQueues finishes fabric.switch_queue and last_hop_queue once the profile is known:
// it decides which settings the profile must keep (Given), fills a left-out enabled or pmax
// of a block the scenario gave with the profile's, copies switch_queue to a missing
// last_hop_queue, applies the queue defaults and validates both.
func (f *Fabric) resolveQueues(shape profileShape) error {
	k := f.keys
	// fill completes one queue's ECN and trim blocks from the profile and says which of its
	// settings the profile must keep.
	fill := func(path string, q *fabric.QueueConfig, qk queueKeys, last bool) (limit, ecn, trim bool, err error) {
		onECN, onTrim, pmax, ok := shape.on(last)
		// A block with thresholds but no enabled: the profile's choice when it turns the
		// feature on here; otherwise the thresholds would be silently unused.
		what := func() string {
			switch {
			case !ok:
				return "profile none turns nothing on"
			case last:
				return "the " + f.Profile + " profile turns it off at the last hop"
			}
			return "the " + f.Profile + " profile turns it off"
		}
		if qk.ecnThresholds && !qk.ecnEnabled {
			if !ok || !onECN {
				return false, false, false, Errorf(path+".ecn.enabled", "missing, but kmin, kmax or pmax is given and %s; set enabled: true to mark at them (or remove them)", what())
			}
			q.ECN.Enabled = true
		}
		if qk.trimThreshold && !qk.trimEnabled {
			if !ok || !onTrim {
				return false, false, false, Errorf(path+".trim.enabled", "missing, but threshold is given and %s; set enabled: true to trim above it (or remove it)", what())
			}
			q.Trim.Enabled = true
		}
		if ok && qk.ecnThresholds && !qk.ecnPmax && q.ECN.Enabled {
			q.ECN.Pmax = pmax
		}
		// enabled: true alone where the profile marks (trims) anyway: the profile's block.
		ecn = qk.ecnThresholds || qk.ecnEnabled && !(ok && onECN && q.ECN.Enabled)
		trim = qk.trimThreshold || qk.trimEnabled && !(ok && onTrim && q.Trim.Enabled)
		if !ecn {
			q.ECN = fabric.ECNConfig{} // the profile's block replaces it (no thresholds to check yet)
		}
		return qk.limit, ecn, trim, nil
	}
	g := &f.given
	var err error
	if g.SwitchLimit, g.SwitchECN, g.SwitchTrim, err = fill("fabric.switch_queue", &f.SwitchQueue, k.sw, false); err != nil {
		return err
	}
	if err := f.SwitchQueue.Validate("fabric.switch_queue"); err != nil {
		return err
	}
	if f.LastHopQueue == nil || !k.last.block {
		q := f.SwitchQueue
		f.LastHopQueue = &q
		g.LastLimit, g.LastECN, g.LastTrim = g.SwitchLimit, g.SwitchECN, g.SwitchTrim
		if shape.lastApart {
			// The profile's last hop differs from the fabric hops (the mrc profile's: no
			// marking, trimming at 1.5 BDP): switch_queue's ECN and trimming are not the last
			// hop's.
			g.LastECN, g.LastTrim = false, false
		}
	} else if g.LastLimit, g.LastECN, g.LastTrim, err = fill("fabric.last_hop_queue", f.LastHopQueue, k.last, true); err != nil {
		return err
	}
	lq := f.LastHopQueue.WithDefaults()
	f.LastHopQueue = &lq
	return lq.Validate("fabric.last_hop_queue")
}

// losslessPFCAlpha is the dynamic PFC threshold (fabric.pfc.alpha) a lossless transport's
// own profile gives a PFC block that sets no threshold: SONiC's default for lossless
// priority groups, dynamic_th 0 (alpha = 2^0 = 1).
const losslessPFCAlpha = 1.0

// resolvePFC fills fabric.pfc's defaults (on under a lossless transport, transport.Plugin.
// Lossless) and validates it: lossless classes must exist in the switch queues.
func (sc *Scenario) resolvePFC() error {
	tp := plugin(sc.Transport.Kind)
	lossless := tp != nil && tp.Lossless
	if sc.Fabric.PFC == nil {
		if !lossless {
			return nil
		}
		sc.Fabric.PFC = &PFC{}
	}
	p := sc.Fabric.PFC
	if p.Enabled == nil {
		on := lossless
		p.Enabled = &on
	}
	// The class that carries the data: a transport puts its data in class 1 (its
	// acknowledgements and congestion notifications in class 0), raw traffic in class 0.
	data, what := 1, ""
	if tp != nil {
		what = tp.Name + " data"
	}
	if sc.Transport.Kind == TransportRaw {
		data, what = 0, "raw traffic"
	}
	if len(p.Classes) == 0 {
		p.Classes = []int{data}
	}
	// A lossless transport's profile buffer model: a block that sets no threshold gets
	// dynamic thresholds (alpha losslessPFCAlpha) over a shared buffer the profile sizes from
	// the switch (resolve_profile.go); xoff, xon or alpha written keeps what was written.
	// Under that profile a shared_buffer left out (0) with dynamic thresholds is the switch's.
	ownProfile := lossless && tp.Profile != nil && (sc.Fabric.Profile == "" || sc.Fabric.Profile == sc.Transport.Kind)
	if p.Alpha > 0 && (p.XOFF != 0 || p.XON != 0) {
		// Dynamic thresholds pause at alpha x the free shared buffer and resume two MTUs
		// below it: a static xoff or xon would be silently unused.
		field, v := "xoff", p.XOFF
		if p.XOFF == 0 {
			field, v = "xon", p.XON
		}
		return Errorf("fabric.pfc."+field, "%v is a static threshold, but fabric.pfc.alpha %v turns on dynamic thresholds, which do not use it; give either xoff (and xon) for static thresholds or alpha (with shared_buffer, reserved) for dynamic ones", v, p.Alpha)
	}
	if ownProfile && p.XOFF == 0 && p.XON == 0 && p.Alpha == 0 {
		p.Alpha = losslessPFCAlpha
	}
	c := p.Config().WithDefaults()
	if ownProfile && p.SharedBuffer == 0 {
		c.SharedBuffer = 0 // sized from the switches by the profile (step profile)
	}
	p.set(c)
	if c.Alpha > 0 {
		p.XOFF, p.XON = 0, 0 // unused under dynamic thresholds (and an error if written)
	}
	if !c.Enabled {
		return nil
	}
	if !lossless && sc.Transport.Kind != TransportRaw {
		return Errorf("fabric.pfc.enabled", "true under transport %s; %s", sc.Transport.Kind, pfcTransports())
	}
	if err := c.Validate("fabric.pfc"); err != nil {
		return err
	}
	seen := map[int]bool{}
	for i, k := range c.Classes {
		if k >= sc.Fabric.SwitchQueue.Classes {
			return Errorf(fmt.Sprintf("fabric.pfc.classes[%d]", i), "class %d, but the switch queues have %d classes (0..%d)", k, sc.Fabric.SwitchQueue.Classes, sc.Fabric.SwitchQueue.Classes-1)
		}
		if seen[k] {
			return Errorf(fmt.Sprintf("fabric.pfc.classes[%d]", i), "class %d is listed twice", k)
		}
		seen[k] = true
	}
	if !seen[data] {
		return Errorf("fabric.pfc.classes", "%v leaves class %d, which carries %s, lossy (nothing would pause); include %d", c.Classes, data, what, data)
	}
	return nil
}

// checkQueues rejects queue settings that cannot work with this traffic: a queue limit below
// the largest packet (every packet would be dropped) and ECN thresholds at or above the limit
// (nothing would ever be marked).
func (sc *Scenario) checkQueues() error {
	pkt := sc.MaxPacketBytes()
	// Under a lossless transport's profile with PFC, a switch queue limit left out is the
	// profile's (sized from the switch's buffer; the roce profile's at least 64 MiB), which the
	// pre-run checks check ECN against; the 1 MiB default here is not the one in force.
	pfc := sc.Fabric.PFC.Config()
	pp := plugin(sc.Fabric.Profile)
	profileLimit := pp != nil && pp.Lossless && pp.Profile != nil && pfc.Enabled
	given := sc.Fabric.Given()
	check := func(path string, q fabric.QueueConfig, limitGiven bool) error {
		if profileLimit && !limitGiven {
			return nil
		}
		if int64(q.Limit) < pkt {
			return Errorf(path+".limit", "%v is below the largest packet (%dB); every packet would be dropped", q.Limit, pkt)
		}
		if q.ECN.Enabled && q.ECN.Kmin >= q.Limit {
			return Errorf(path+".ecn.kmin", "%v is at or above the queue limit %v; nothing would ever be marked", q.ECN.Kmin, q.Limit)
		}
		if q.Trim.Threshold > 0 && int64(q.Trim.Threshold) < pkt {
			// A packet is trimmed when the queue with it would pass the threshold: below one
			// packet, every packet is trimmed at an empty queue and nothing gets through.
			return Errorf(path+".trim.threshold", "%v is below the largest data packet (%dB): every packet would be trimmed, even at an empty queue, and no transfer could finish; want at least %dB", q.Trim.Threshold, pkt, pkt)
		}
		return nil
	}
	if err := check("fabric.switch_queue", sc.Fabric.SwitchQueue, given.SwitchLimit); err != nil {
		return err
	}
	if sc.Fabric.LastHopQueue != nil {
		if err := check("fabric.last_hop_queue", *sc.Fabric.LastHopQueue, given.LastLimit); err != nil {
			return err
		}
	}
	if err := check("fabric.nic_queue", sc.Fabric.NICQueue, true); err != nil {
		return err
	}
	return sc.checkPFCBuffers(pkt)
}

// checkPFCBuffers rejects PFC thresholds that cannot hold one data packet (pkt wire bytes) at
// an ingress: a static xoff below it pauses upstream before a single packet is held, and a
// dynamic reserve below it leaves the ingress to the shared pool alone (the runner checks that
// the shared buffer holds one packet per ingress of a switch).
func (sc *Scenario) checkPFCBuffers(pkt int64) error {
	c := sc.Fabric.PFC.Config().WithDefaults()
	if !c.Enabled || pkt <= 0 {
		return nil
	}
	if c.Alpha == 0 && int64(c.XOFF) < pkt {
		return Errorf("fabric.pfc.xoff", "%v is below one data packet (%dB): an ingress would pause upstream before it holds a single packet, and a packet larger than xoff + headroom is dropped (pfc_headroom); want at least %dB (default %v)", c.XOFF, pkt, pkt, sim.Size(fabric.DefaultPFCXOFF))
	}
	if c.Alpha > 0 && int64(c.Reserved) < pkt {
		return Errorf("fabric.pfc.reserved", "%v is below one data packet (%dB): each ingress's guaranteed buffer must hold at least one packet; want at least %dB (default 2 MTU, %dB)", c.Reserved, pkt, pkt, 2*4160)
	}
	return nil
}

// pfcTransports says which transports PFC applies to, for fabric.pfc.enabled's error: the
// lossless ones (and raw traffic); the others and the ideal network run without it.
func pfcTransports() string {
	var on, off []string
	for _, k := range transport.Kinds() {
		if p, _ := transport.Lookup(k); p.Lossless {
			on = append(on, p.Name)
		} else {
			off = append(off, p.Name)
		}
	}
	off = append(off, "the ideal network")
	list := func(s []string) string {
		if len(s) < 2 {
			return strings.Join(s, "")
		}
		return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
	}
	return "PFC applies to " + list(on) + " (and raw traffic), " + list(off) + " run without it"
}
