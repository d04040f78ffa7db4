// Package traffic generates load that needs no transport: paced "raw" constant-bit-rate flows
// with no reliability. They make the fabric testable before transports exist and let users load
// a fabric with background traffic.
//
// A raw flow sends PacketSize-byte packets from Src to Dst on one plane at Rate, from Start
// until Stop. Packet k leaves at Start + TxTime(k x PacketSize) at Rate, computed from k rather
// than accumulated, so pacing never drifts and a flow at line rate fills its NIC port exactly.
// Packets are not retransmitted; what the fabric drops is lost and counted.
//
// A flow with Arrivals Poisson instead sends its packets at exponentially distributed
// intervals of mean TxTime(PacketSize) at Rate (a Poisson process of that mean rate), from a
// random stream of its own (sim.Stream of the kernel's seed and "traffic.raw.<index>"), so
// the same seed gives the same departures. Fixed-size packets arriving so at one link make the
// M/D/1 queue: mean waiting packets rho^2 / (2 (1 - rho)), mean wait rho / (2 mu (1 - rho))
// at load rho and service rate mu (md1_test.go).
package traffic

import (
	"fmt"
	"math/rand/v2"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// PathMode says how a raw flow's packets find their way.
type PathMode uint8

// Path modes.
const (
	// ECMP: no source route; switches hash the 5-tuple (SrcPort differs per flow), so each flow
	// follows one hashed path, as RoCEv2 QPs do.
	ECMP PathMode = iota
	// Fixed: every packet carries Routes[0].
	Fixed
	// Spray: packet k carries Routes[k mod len(Routes)], a different path per packet.
	Spray
)

// String returns the mode's scenario name: "ecmp", "fixed" or "spray".
func (m PathMode) String() string {
	switch m {
	case ECMP:
		return "ecmp"
	case Fixed:
		return "fixed"
	case Spray:
		return "spray"
	}
	return fmt.Sprintf("pathmode(%d)", m)
}

// Arrivals says how a raw flow's packets are spaced in time.
type Arrivals uint8

// Arrival processes.
const (
	// Paced: packet k leaves at Start + TxTime(k x PacketSize), a constant bit rate.
	Paced Arrivals = iota
	// Poisson: exponential gaps of mean TxTime(PacketSize), the mean rate Rate.
	Poisson
)

// String returns the process's scenario name: "paced" or "poisson".
func (a Arrivals) String() string {
	switch a {
	case Paced:
		return "paced"
	case Poisson:
		return "poisson"
	}
	return fmt.Sprintf("arrivals(%d)", a)
}

// Flow is one paced raw flow on one plane.
type Flow struct {
	Src, Dst   int32    // host indices
	Plane      int      // NIC port (plane) the flow leaves on
	Rate       sim.Rate // pacing rate, bits/s
	PacketSize int32    // wire bytes per packet, headers included
	Start      sim.Time // first packet leaves at Start
	Stop       sim.Time // no packet leaves at or after Stop
	Mode       PathMode
	SrcPort    uint16         // UDP source port: the ECMP entropy of this flow
	Routes     []fabric.Route // Fixed: one route; Spray: the rotation
	Class      uint8          // priority class
	Flags      fabric.Flags   // e.g. fabric.ECT to let queues mark CE
	Arrivals   Arrivals       // Paced (default) or Poisson
}

// FlowStats counts one flow's packets. Bytes are wire bytes.
type FlowStats struct {
	SentPackets, SentBytes int64
	RecvPackets, RecvBytes int64 // delivered whole
	RecvTrimmed            int64 // delivered as a trimmed header (payload lost)
	LastRecv               sim.Time
	// LatencySum is the sum of the one-way delays of the packets delivered whole (exact,
	// picoseconds; from the NIC's transmit timestamp, so host queueing is not in it):
	// LatencySum / RecvPackets is the mean latency.
	LatencySum sim.Time
	// HostWaitSum is the sum over the same packets of the time each waited in its source NIC's
	// queue, from the send to the start of its transmission (picoseconds).
	HostWaitSum sim.Time
}

// Raw drives a set of raw flows on a network.
type Raw struct {
	net   *fabric.Network
	s     *sim.Sim
	Flows []Flow
	Stats []FlowStats
	sent  []int64      // packets sent per flow (k)
	rng   []*rand.Rand // per flow; nil for paced flows
	kind  sim.Kind
	// Latency is the one-way delay of every packet delivered whole, in nanoseconds.
	Latency *hdrhistogram.Histogram
}

// LatencyMaxNs is the largest one-way delay the latency histogram records exactly (1 s);
// larger values are clamped to it.
const LatencyMaxNs = int64(sim.Second / sim.Nanosecond)

// NewRaw checks flows against net and registers their sender and receiver. Errors name the
// flow index and field: unknown host, src = dst, plane beyond the NIC's ports, non-positive
// rate or packet size, Stop before Start, missing routes for Fixed or Spray.
func NewRaw(net *fabric.Network, flows []Flow) (*Raw, error) {
	hosts := int32(net.NumHosts())
	for i, f := range flows {
		switch {
		case f.Src < 0 || f.Src >= hosts:
			return nil, fmt.Errorf("flow %d: src %d: no such host (have %d)", i, f.Src, hosts)
		case f.Dst < 0 || f.Dst >= hosts:
			return nil, fmt.Errorf("flow %d: dst %d: no such host (have %d)", i, f.Dst, hosts)
		case f.Src == f.Dst:
			return nil, fmt.Errorf("flow %d: src and dst are both host %d", i, f.Src)
		case f.Plane < 0 || f.Plane >= len(net.Nodes[f.Src].Ports):
			return nil, fmt.Errorf("flow %d: plane %d: host %d has %d NIC ports", i, f.Plane, f.Src, len(net.Nodes[f.Src].Ports))
		case f.Rate <= 0:
			return nil, fmt.Errorf("flow %d: rate %v must be positive", i, f.Rate)
		case f.PacketSize < fabric.HeaderBytes:
			return nil, fmt.Errorf("flow %d: packet size %d B is below the %d B header", i, f.PacketSize, fabric.HeaderBytes)
		case f.Stop < f.Start:
			return nil, fmt.Errorf("flow %d: stop %v is before start %v", i, f.Stop, f.Start)
		case f.Mode != ECMP && len(f.Routes) == 0:
			return nil, fmt.Errorf("flow %d: path mode %v needs at least one route", i, f.Mode)
		case f.Arrivals != Paced && f.Arrivals != Poisson:
			return nil, fmt.Errorf("flow %d: arrivals %v: allowed paced, poisson", i, f.Arrivals)
		}
	}
	r := &Raw{
		net:     net,
		s:       net.Sim(),
		Flows:   flows,
		Stats:   make([]FlowStats, len(flows)),
		sent:    make([]int64, len(flows)),
		rng:     make([]*rand.Rand, len(flows)),
		Latency: hdrhistogram.New(1, LatencyMaxNs, 3),
	}
	for i := range flows {
		if flows[i].Arrivals == Poisson {
			r.rng[i] = sim.Stream(r.s.Seed(), fmt.Sprintf("traffic.raw.%d", i))
		}
	}
	r.kind = r.s.Register("traffic.raw", r.onSend)
	net.SetReceiver(fabric.ProtoRaw, r.onRecv)
	return r, nil
}

// Start schedules every flow's first packet. Call once, before running the simulation.
func (r *Raw) Start() {
	for i := range r.Flows {
		f := &r.Flows[i]
		if f.Start < f.Stop {
			r.s.At(f.Start, r.kind, int32(i), 0)
		}
	}
}

// onSend sends flow obj's next packet and schedules the one after.
func (r *Raw) onSend(now sim.Time, obj int32, _ uint64) {
	f := &r.Flows[obj]
	k := r.sent[obj]
	p := r.net.NewPacket()
	p.Dst = f.Dst
	p.Size = f.PacketSize
	p.Flow = obj
	p.Proto = fabric.ProtoRaw
	p.Class = f.Class
	p.Flags = f.Flags
	p.SrcPort = f.SrcPort
	p.DstPort = 4791
	p.Aux = uint64(now) // raw owns the transport words: the send time, for the host wait
	switch f.Mode {
	case Fixed:
		p.UseRoute(&f.Routes[0])
	case Spray:
		p.UseRoute(&f.Routes[k%int64(len(f.Routes))])
		p.Entropy = uint32(k % int64(len(f.Routes)))
	}
	st := &r.Stats[obj]
	st.SentPackets++
	st.SentBytes += int64(f.PacketSize)
	if err := r.net.Send(now, f.Src, f.Plane, p); err != nil {
		r.s.Stop(err)
		return
	}
	k++
	r.sent[obj] = k
	var next sim.Time
	if g := r.rng[obj]; g != nil {
		// An exponential gap, at least 1 ps so time advances.
		mean := float64(f.PacketSize) * 8 * float64(sim.Second) / float64(f.Rate) // ps, unrounded
		next = now + max(1, sim.Time(g.ExpFloat64()*mean))
	} else {
		next = f.Start + f.Rate.TxTime(k*int64(f.PacketSize))
	}
	if next < f.Stop {
		r.s.At(next, r.kind, obj, 0)
	}
}

// onRecv counts a delivered packet and records its one-way delay.
func (r *Raw) onRecv(now sim.Time, p *fabric.Packet) {
	if p.Flow < 0 || int(p.Flow) >= len(r.Stats) {
		return
	}
	st := &r.Stats[p.Flow]
	st.LastRecv = now
	if p.Flags&fabric.Trimmed != 0 {
		st.RecvTrimmed++
		return
	}
	st.RecvPackets++
	st.RecvBytes += int64(p.Size)
	st.LatencySum += now - p.SentAt
	st.HostWaitSum += p.SentAt - sim.Time(p.Aux)
	// Nearest nanosecond (not truncated), so the percentiles and max agree with the exact
	// mean to the nanosecond the summary prints.
	d := int64((now - p.SentAt + sim.Nanosecond/2) / sim.Nanosecond)
	if d > LatencyMaxNs {
		d = LatencyMaxNs
	}
	_ = r.Latency.RecordValue(d)
}

// Totals sums the flows' statistics.
func (r *Raw) Totals() FlowStats {
	var t FlowStats
	for i := range r.Stats {
		s := &r.Stats[i]
		t.SentPackets += s.SentPackets
		t.SentBytes += s.SentBytes
		t.RecvPackets += s.RecvPackets
		t.RecvBytes += s.RecvBytes
		t.RecvTrimmed += s.RecvTrimmed
		t.LatencySum += s.LatencySum
		t.HostWaitSum += s.HostWaitSum
		if s.LastRecv > t.LastRecv {
			t.LastRecv = s.LastRecv
		}
	}
	return t
}
