// Package traffic generates load that needs no transport: paced "raw" constant-bit-rate flows
// with no reliability. They make the fabric testable before transports exist and let users load
// a fabric with background traffic.
//
// A raw flow sends PacketSize-byte packets from Src to Dst on one plane at Rate, from Start
// until Stop. Packet k leaves at Start + TxTime(k x PacketSize) at Rate, computed from k rather
// than accumulated, so pacing never drifts and a flow at line rate fills its NIC port exactly.
// Packets are not retransmitted; what the fabric drops is lost and counted.
package traffic

import (
	"fmt"

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
}

// FlowStats counts one flow's packets. Bytes are wire bytes.
type FlowStats struct {
	SentPackets, SentBytes int64
	RecvPackets, RecvBytes int64 // delivered whole
	RecvTrimmed            int64 // delivered as a trimmed header (payload lost)
	LastRecv               sim.Time
}

// Raw drives a set of raw flows on a network.
type Raw struct {
	net   *fabric.Network
	s     *sim.Sim
	Flows []Flow
	Stats []FlowStats
	sent  []int64 // packets sent per flow (k)
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
		}
	}
	r := &Raw{
		net:     net,
		s:       net.Sim(),
		Flows:   flows,
		Stats:   make([]FlowStats, len(flows)),
		sent:    make([]int64, len(flows)),
		Latency: hdrhistogram.New(1, LatencyMaxNs, 3),
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
	next := f.Start + f.Rate.TxTime(k*int64(f.PacketSize))
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
	d := int64((now - p.SentAt) / sim.Nanosecond)
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
		if s.LastRecv > t.LastRecv {
			t.LastRecv = s.LastRecv
		}
	}
	return t
}
