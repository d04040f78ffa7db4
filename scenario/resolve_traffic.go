package scenario

import (
	"fmt"
	"math"
	"strings"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
)

// traffic resolves the traffic groups (at least one, none beside a workload); it relies on
// the topology's hosts, the transport and run.duration (a left-out one is derived later, by
// transferDuration, for transfers).
func (r *resolver) traffic() error {
	sc := r.sc
	if len(sc.Traffic) == 0 {
		return Errorf("traffic", "empty; give at least one traffic group (e.g. pattern: permutation) or a workload (workload.collectives)")
	}
	for i := range sc.Traffic {
		t := &sc.Traffic[i]
		dur := sc.Run.Duration
		if !r.durationGiven && sc.Transport.payloadBytes() > 0 {
			dur = sim.Hour // transfers: the duration left out is derived below, after their start
		}
		env := TrafficEnv{
			Path: fmt.Sprintf("traffic[%d]", i), Hosts: r.l.NumHosts(), HostRate: r.c.HostLink * sim.Rate(r.c.Planes),
			Transport: sc.Transport, Duration: dur, DurationGiven: r.durationGiven, Seed: sc.Run.Seed, Dir: sc.dir,
		}
		if err := t.resolve(env); err != nil {
			return err
		}
	}
	return nil
}

// trafficBudget rejects traffic estimated beyond run.max_packets; it relies on the traffic
// and the final run.duration (transferDuration).
func (r *resolver) trafficBudget() error {
	sc, run := r.sc, &r.sc.Run
	if r.wl || r.flowLevel {
		return nil // collectives check their own budget; the flow level has no packets (Estimate bounds its memory)
	}
	var packets float64
	for i := range sc.Traffic {
		packets += sc.Traffic[i].estimatePackets(sc.Transport, r.l.NumHosts(), r.c.Planes, r.c.HostLink, run.Duration)
	}
	if packets > float64(run.MaxPackets) {
		if !r.durationGiven && sc.Transport.payloadBytes() > 0 {
			return Errorf("traffic", "the transfers are about %.3g packets, beyond run.max_packets (%d, one to four minutes of wall time at 7-12 events per packet and 1-4 million events/s); use smaller transfers, a run.duration that stops them early, or raise run.max_packets", packets, run.MaxPackets)
		}
		return Errorf("run.duration", "%v of this traffic is about %.3g packets, beyond run.max_packets (%d, one to four minutes of wall time at 7-12 events per packet and 1-4 million events/s); shorten the run or raise run.max_packets", run.Duration, packets, run.MaxPackets)
	}
	return nil
}

func (t *Traffic) resolve(env TrafficEnv) error {
	path, tr, hosts, duration := env.Path, env.Transport, env.Hosts, env.Duration
	gen := patternGenerator(t.Pattern)
	if err := t.checkFileKeys(path); err != nil {
		return err
	}
	if t.Arrivals != nil && !usesArrivals(t.Pattern) {
		return Errorf(path+".arrivals", "is set, but pattern %s does not use it; arrivals belong to patterns %s and %s (raw packets take process: poisson)", t.Pattern, PatternPoisson, PatternOnOff)
	}
	switch {
	case t.Pattern == PatternPermutation || t.Pattern == PatternIncast || t.Pattern == PatternFlows:
	case gen != nil:
		if tr.Kind == TransportRaw {
			return Errorf(path+".pattern", "%s makes transfers, which need a transport; set transport.kind: %s", t.Pattern, transferTransport())
		}
		if err := t.generate(gen, env); err != nil {
			return err
		}
	case t.Pattern == "":
		return Errorf(path+".pattern", "missing; allowed %s", strings.Join(PatternNames(), ", "))
	default:
		return Errorf(path+".pattern", "%q is not a pattern; allowed %s", t.Pattern, strings.Join(PatternNames(), ", "))
	}
	if tr.Kind != TransportRaw {
		return t.resolveTransfers(path, tr, hosts, duration)
	}
	if t.Bytes != 0 || t.given.bytes {
		return Errorf(path+".bytes", "%v is set, but transport raw paces flows by load or rate; use transport.kind: %s for transfers", t.Bytes, transferTransport())
	}
	switch t.Process {
	case "", ProcessPaced, ProcessPoisson:
	default:
		return Errorf(path+".process", "%q is not a packet process; allowed %s, %s", t.Process, ProcessPaced, ProcessPoisson)
	}
	switch t.Path {
	case "":
		t.Path = PathECMP
	case PathECMP, PathSpread, PathSpray:
	default:
		return Errorf(path+".path", "%q is not a path mode; allowed ecmp, spread, spray", t.Path)
	}
	if t.Load == 0 && t.Rate == 0 {
		t.Load = 1
	}
	if t.Rate != 0 && t.Load != 0 {
		return Errorf(path, "load %v and rate %v both set; give one", t.Load, t.Rate)
	}
	if t.Rate < 0 {
		return Errorf(path+".rate", "%v must be positive", t.Rate)
	}
	if t.Rate == 0 && !(t.Load > 0 && t.Load <= 1) || math.IsNaN(t.Load) {
		return Errorf(path+".load", "%v is out of range; allowed 0 < load <= 1 (a fraction of the NIC port rate)", t.Load)
	}
	if t.PacketSize == 0 {
		t.PacketSize = DefaultPacketSize
	}
	if t.PacketSize < fabric.HeaderBytes || t.PacketSize > 65536 {
		return Errorf(path+".packet_size", "%v is out of range; allowed %dB..64KiB", t.PacketSize, fabric.HeaderBytes)
	}
	if t.Stop == 0 {
		t.Stop = duration
	}
	if t.Start >= duration {
		return Errorf(path+".start", "%v is not before run.duration (%v); traffic must start inside the run", t.Start, duration)
	}
	if t.Stop > duration {
		return Errorf(path+".stop", "%v is after run.duration (%v); traffic is offered within the run only", t.Stop, duration)
	}
	if t.Stop <= t.Start {
		return Errorf(path+".stop", "%v is not after start %v", t.Stop, t.Start)
	}
	for j, f := range t.Flows {
		if f.Start != 0 && (f.Start < t.Start || f.Start >= t.Stop) {
			return Errorf(fmt.Sprintf("%s.flows[%d].start", path, j), "%v is outside the group's [start %v, stop %v)", f.Start, t.Start, t.Stop)
		}
	}
	return t.checkHosts(path, hosts)
}

// resolveTransfers checks a traffic group carried by a transport: each flow is one transfer of
// Bytes posted at Start; pacing fields belong to raw traffic and are errors here.
func (t *Traffic) resolveTransfers(path string, tr Transport, hosts int, duration sim.Time) error {
	rawOnly := func(field string, set bool) error {
		if set {
			return Errorf(path+"."+field, "applies to transport raw only; under %s each flow is a transfer of bytes", tr.Kind)
		}
		return nil
	}
	for _, c := range []struct {
		f   string
		set bool
	}{{"load", t.Load != 0}, {"rate", t.Rate != 0}, {"path", t.Path != ""}, {"packet_size", t.PacketSize != 0},
		{"stop", t.Stop != 0}, {"process", t.Process != ""}} {
		if err := rawOnly(c.f, c.set); err != nil {
			return err
		}
	}
	// ecn and trimmable say how a raw flow's packets are flagged; a transport flags its own
	// (MRC data: ECN-capable and trimmable; RoCE data: ECN-capable), so even false is unused.
	what, never := fmt.Sprintf("transport %s flags its own data packets", tr.Kind), false
	if p, ok := transport.Lookup(tr.Kind); ok {
		if p.DataMarks != "" {
			what = p.DataMarks
		}
		never = p.NeverTrimmed
	}
	for _, c := range []struct {
		f, switchOff string
		set          bool
		v            bool
	}{{"ecn", "fabric.switch_queue.ecn: {enabled: false}", t.ECN || t.given.ecn, t.ECN}, {"trimmable", "fabric.switch_queue.trim: {enabled: false}", t.Trimmable || t.given.trimmable, t.Trimmable}} {
		if c.set {
			if never && c.f == "trimmable" {
				return Errorf(path+"."+c.f, "%v applies to transport raw only; %s", c.v, what)
			}
			return Errorf(path+"."+c.f, "%v applies to transport raw only; %s (to change what switches do, set %s and likewise last_hop_queue)", c.v, what, c.switchOff)
		}
	}
	if t.Start < 0 || t.Start >= duration {
		return Errorf(path+".start", "%v is not before run.duration (%v); transfers must start inside the run", t.Start, duration)
	}
	if t.Bytes < 0 {
		return Errorf(path+".bytes", "%v must be positive", t.Bytes)
	}
	if t.Bytes == 0 && t.given.bytes {
		return Errorf(path+".bytes", "%v is not a transfer size; want a positive size such as 4MiB", t.Bytes)
	}
	if err := checkBytes(path+".bytes", t.Bytes, EnginePacket); err != nil {
		return err
	}
	if t.Bytes == 0 && !t.explicit() {
		return Errorf(path+".bytes", "missing; give the transfer size of each flow, e.g. 16MiB")
	}
	flows := t.FlowList()
	for j := range flows {
		f, fp := &flows[j], t.flowPath(path, j)
		if f.Rate != 0 {
			return Errorf(fp+".rate", "applies to transport raw only; give bytes")
		}
		if f.Bytes < 0 {
			return Errorf(fp+".bytes", "%v must be positive", f.Bytes)
		}
		if err := checkBytes(fp+".bytes", f.Bytes, EnginePacket); err != nil {
			return err
		}
		if f.Bytes == 0 && f.bytesGiven {
			return Errorf(fp+".bytes", "%v is not a transfer size; want a positive size such as 4MiB (or leave it out for the group's bytes)", f.Bytes)
		}
		if f.Bytes == 0 {
			if t.Bytes == 0 {
				return Errorf(fp+".bytes", "missing; set it here or bytes for the group")
			}
			f.Bytes = t.Bytes
		}
		if f.Start != 0 && (f.Start < t.Start || f.Start >= duration) {
			return Errorf(fp+".start", "%v is outside [the group's start %v, run.duration %v); transfers start inside the run", f.Start, t.Start, duration)
		}
	}
	return t.checkHosts(path, hosts)
}

// checkHosts validates the host indices of the group's pattern.
func (t *Traffic) checkHosts(path string, hosts int) error {
	host := func(p string, h int) error {
		if h < 0 || h >= hosts {
			return Errorf(p, "host %d does not exist; allowed 0..%d", h, hosts-1)
		}
		return nil
	}
	switch t.Pattern {
	case PatternPermutation:
		if hosts < 2 {
			return Errorf(path+".pattern", "permutation needs at least 2 hosts; the topology has %d", hosts)
		}
		if len(t.Senders) > 0 || len(t.Flows) > 0 || t.Receiver != nil {
			return Errorf(path, "senders, receiver and flows are not used by pattern permutation")
		}
	case PatternIncast:
		if len(t.Senders) == 0 {
			return Errorf(path+".senders", "missing; incast needs at least one sender host")
		}
		if t.Receiver == nil {
			return Errorf(path+".receiver", "missing; incast needs the receiving host")
		}
		if err := host(path+".receiver", *t.Receiver); err != nil {
			return err
		}
		seen := map[int]bool{}
		for j, s := range t.Senders {
			p := fmt.Sprintf("%s.senders[%d]", path, j)
			if err := host(p, s); err != nil {
				return err
			}
			if s == *t.Receiver {
				return Errorf(p, "host %d is also the receiver", s)
			}
			if seen[s] {
				return Errorf(p, "host %d is listed twice", s)
			}
			seen[s] = true
		}
	default: // explicit: pattern flows or a generated pattern
		if len(t.FlowList()) == 0 {
			return Errorf(path+".flows", "missing; pattern flows needs at least one {src, dst}")
		}
		for j, f := range t.FlowList() {
			p := t.flowPath(path, j)
			if f.Src == nil {
				return Errorf(p+".src", "missing; give the sending host")
			}
			if f.Dst == nil {
				return Errorf(p+".dst", "missing; give the receiving host")
			}
			if err := host(p+".src", *f.Src); err != nil {
				return err
			}
			if err := host(p+".dst", *f.Dst); err != nil {
				return err
			}
			if *f.Src == *f.Dst {
				return Errorf(p, "src and dst are both host %d", *f.Src)
			}
			if f.Rate < 0 {
				return Errorf(p+".rate", "%v must be positive", f.Rate)
			}
		}
	}
	return nil
}

// transferBound is the time the busiest host NIC needs for its transfers at line rate nic (the
// larger of the bytes it sends and receives, from its groups' start): a lower bound on the
// transfers' completion. 0 when the transport carries no transfers (raw, ideal).
func transferBound(groups []Traffic, tr Transport, hosts int, nic sim.Rate) sim.Time {
	if tr.payloadBytes() <= 0 || nic <= 0 {
		return 0
	}
	out := make([]float64, hosts)
	in := make([]float64, hosts)
	var start sim.Time
	add := func(src, dst *int, b sim.Size) {
		if src != nil && dst != nil && *src >= 0 && *src < hosts && *dst >= 0 && *dst < hosts {
			out[*src] += float64(b)
			in[*dst] += float64(b)
		}
	}
	for i := range groups {
		t := &groups[i]
		start = max(start, t.Start)
		for _, f := range t.FlowList() {
			start = max(start, f.Start)
		}
		switch t.Pattern {
		case PatternPermutation:
			for h := range hosts {
				out[h] += float64(t.Bytes)
				in[h] += float64(t.Bytes)
			}
		case PatternIncast:
			for _, s := range t.Senders {
				add(&s, t.Receiver, t.Bytes)
			}
		default:
			for _, f := range t.FlowList() {
				add(f.Src, f.Dst, f.Bytes)
			}
		}
	}
	var most float64
	for h := range hosts {
		most = max(most, out[h], in[h])
	}
	return satAdd(start, nic.TxTime(int64(min(most, 1<<62))))
}

// estimatePackets is the number of packets the group offers: flows x rate x time / size (raw),
// or total bytes / payload per packet (transports), each transfer's bytes capped at what its
// sender's NIC can send at line rate (all planes) before duration ends.
func (t *Traffic) estimatePackets(tr Transport, hosts, planes int, hostLink sim.Rate, duration sim.Time) float64 {
	if pay := tr.payloadBytes(); pay > 0 {
		sendable := func(b sim.Size, start sim.Time) float64 {
			line := float64(hostLink) * float64(planes) / 8 * max(0, (duration-max(start, t.Start)).Seconds())
			return min(float64(b), line)
		}
		var bytes float64
		switch t.Pattern {
		case PatternPermutation:
			bytes = float64(hosts) * sendable(t.Bytes, t.Start)
		case PatternIncast:
			bytes = float64(len(t.Senders)) * sendable(t.Bytes, t.Start)
		default:
			for _, f := range t.FlowList() {
				bytes += sendable(f.Bytes, f.Start)
			}
		}
		return bytes / pay
	}
	secs := (t.Stop - t.Start).Seconds()
	perFlow := t.Load * float64(hostLink) * float64(planes) // bits/s across planes
	if t.Rate > 0 {
		perFlow = float64(t.Rate)
	}
	var bps float64
	switch t.Pattern {
	case PatternPermutation:
		bps = float64(hosts) * perFlow
	case PatternIncast:
		bps = float64(len(t.Senders)) * perFlow
	case PatternFlows:
		for _, f := range t.Flows {
			if f.Rate > 0 {
				bps += float64(f.Rate)
			} else {
				bps += perFlow
			}
		}
	}
	return bps * secs / (8 * float64(t.PacketSize))
}
