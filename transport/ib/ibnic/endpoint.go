package ibnic

import (
	"fmt"
	"io"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/ib"
	"github.com/lockstepsim/lockstep/transport/roce/rocenic"
)

// Endpoint is the InfiniBand NIC adapter (transport.Endpoint): RC QPs on the RC engine and
// NIC adapter it shares with RoCEv2 (rocenic.NewWire with fabric.ProtoIB), each QP on one
// static path (the fabric's ECMP with the QP's fixed entropy, as a destination-based LFT
// gives one path per destination), over links with credit flow control.
type Endpoint struct {
	*rocenic.Endpoint
	net     *fabric.Network
	cfg     ib.Config
	classes int        // the switch queues' classes: the fabric's VLs (fabric.switch_queue.classes)
	stopped []quiesced // the QPs with transfers unfinished when the engines stopped (Quiesce)
}

// newEndpoint builds the endpoint and turns credit flow control on in env.Net (unless
// transport.ib.credits.enabled is false). Errors: the block, or the fabric refusing the
// credits (PFC on).
func newEndpoint(cfg any, env transport.EndpointEnv) (transport.Endpoint, error) {
	c, err := config(cfg)
	if err != nil {
		return nil, err
	}
	if cr := c.Credits.Fabric(); cr.Enabled && !env.Net.CreditsOn() {
		if err := env.Net.SetCredits(cr); err != nil {
			return nil, fmt.Errorf("transport.ib.credits: %w", err)
		}
	}
	if c.OutOfOrder.Hold == 0 && env.Topology != nil {
		c.OutOfOrder.Hold, c.OutOfOrder.HoldPerFanIn, c.OutOfOrder.FanInMax = autoHold(c, env.Topology) // a block that was not resolved
	}
	r := rocenic.NewWire(env, c.Reorder(env.Net.AdaptiveOn()), rocenic.Wire{Proto: fabric.ProtoIB, Kinds: "ib"})
	e := &Endpoint{Endpoint: r, net: env.Net, cfg: c, classes: env.Queues.Switch.Classes}
	r.SetDataClass(uint8(c.VL(c.SL, e.classes)))
	return e, nil
}

// SetTrafficGroup implements transport.TrafficGrouper: the QPs of traffic group g's next
// transfer carry its service level (ib.Config.GroupSL), their data on that SL's VL
// (ib.Config.VL: sl_to_vl, or the default map).
func (e *Endpoint) SetTrafficGroup(g int) {
	e.Endpoint.SetDataClass(uint8(e.cfg.VL(e.cfg.GroupSL(g), e.classes)))
}

// Detail is InfiniBand's own figures in summary.json: the RC engine's (rocenic.Detail:
// QPs, NAKs, and under IB CC ce_packets = FECN-marked data packets, cnps_sent = BECNs, the
// injection rates at end) and, with credits on, the time ports spent blocked for credits
// (credits.csv has it per port): the sum over ports, how many ports were ever blocked, and
// the most blocked port with its time, microseconds. CreditsEnabled says whether credit flow
// control was on (transport.ib.credits.enabled), so a run with no port blocked is told from
// one without credits.
type Detail struct {
	*rocenic.Detail
	CreditsEnabled       bool    `json:"credits_enabled"`
	CreditBlockedUsTotal float64 `json:"credit_blocked_us_total"`
	CreditBlockedPorts   int     `json:"credit_blocked_ports"`
	CreditBlockedUsMax   float64 `json:"credit_blocked_us_max"`
	CreditBlockedMaxPort string  `json:"credit_blocked_max_port,omitempty"`
}

// Summary is the RC engine's summary under InfiniBand's name, Detail a *Detail.
func (e *Endpoint) Summary(end sim.Time, faults []sim.Time) *transport.Summary {
	s := e.Endpoint.Summary(end, faults)
	s.Kind, s.Name = Kind, "InfiniBand"
	rd, _ := s.Detail.(*rocenic.Detail)
	d := &Detail{Detail: rd}
	if e.net.CreditsOn() {
		d.CreditsEnabled = true
		var total, most sim.Time
		for i := range e.net.Ports {
			b := e.net.CreditStats(fabric.PortID(i), end).BlockedTime
			if b <= 0 {
				continue
			}
			total += b
			d.CreditBlockedPorts++
			if b > most {
				most, d.CreditBlockedMaxPort = b, e.net.Ports[i].Name
			}
		}
		d.CreditBlockedUsTotal = transport.Round3(transport.Us(total))
		d.CreditBlockedUsMax = transport.Round3(transport.Us(most))
	}
	s.Detail = d
	s.TimeoutWait = e.timeoutWait()
	return s
}

// quiesced is one QP's state when the engines stopped (Quiesce), for timeoutWait.
type quiesced struct {
	qp        int
	high      uint32   // one past the highest PSN sent (DataPackets - RetxPackets: PSNs start at 0)
	deadline  sim.Time // roce.Sender.Deadline: the local ACK timer with nothing left to pace
	received  int64    // data packets the responder had received
	naks      int64    // NAKs the requester had received
	stoppedAt sim.Time
}

// Quiesce records, for every QP with transfers unfinished that has not errored and is not
// waiting for its NIC, what timeoutWait needs, then stops the engines
// (rocenic.Endpoint.Quiesce).
func (e *Endpoint) Quiesce() {
	e.stopped = e.stopped[:0]
	if run, _ := e.Endpoint.Run().(*rocenic.Run); run != nil {
		now := e.net.Sim().Now()
		for i := range run.QPs() {
			snd, rcv, _, _, _ := run.QP(i)
			if snd.Idle() || snd.Err() != nil || snd.Gated() {
				continue
			}
			e.stopped = append(e.stopped, quiesced{qp: i, high: uint32(snd.Stats.DataPackets - snd.Stats.RetxPackets),
				deadline: snd.Deadline(), received: rcv.Stats.DataPackets, naks: snd.Stats.NAKs, stoppedAt: now})
		}
	}
	e.Endpoint.Quiesce()
}

// timeoutWait finds the QPs that were waiting for the local ACK timeout when the engines
// stopped (Quiesce) and had lost a packet: its next deadline then was after the stop (the
// timer, with nothing left to pace), nothing of its data reached the responder and no NAK
// reached the requester during the drain (nothing of it was in flight), and after the drain
// the responder's expected PSN is still below one past the highest PSN sent: that packet
// never arrived. A lost tail draws no sequence-error NAK, nor does a resend lost after the
// one NAK per hole, so only the timeout recovers it [IBTA vol 1 §9.7.5.1.1, §9.7.6.1.3].
// nil when none.
func (e *Endpoint) timeoutWait() *transport.TimeoutWait {
	run, _ := e.Endpoint.Run().(*rocenic.Run)
	if run == nil {
		return nil
	}
	var w transport.TimeoutWait
	var resume sim.Time
	for _, st := range e.stopped {
		snd, rcv, src, dst, plane := run.QP(st.qp)
		if st.deadline <= st.stoppedAt || st.deadline == sim.MaxTime || rcv.ExpectedPSN() == st.high ||
			rcv.Stats.DataPackets != st.received || snd.Stats.NAKs != st.naks {
			continue
		}
		if w.QPs == 0 {
			w.First = fmt.Sprintf("qp %d (h%d->h%d plane %d), PSN %d lost", snd.QP(), src, dst, plane, rcv.ExpectedPSN())
		}
		w.QPs++
		resume = max(resume, st.deadline)
	}
	if w.QPs == 0 {
		return nil
	}
	t := *e.cfg.TimeoutExponent
	w.TimeoutUs, w.ResumeUs = transport.Us(e.cfg.RTO()), transport.Round3(resume.Micros())
	w.Setting = fmt.Sprintf("transport.ib.timeout %d: 4.096us x 2^%d", t, t)
	w.Fix = "lower transport.ib.timeout (each step down halves the timeout"
	if t > 1 {
		lower := max(1, t-4)
		w.Fix += fmt.Sprintf("; %d is %v", lower, ib.Config{TimeoutExponent: &lower}.RTO())
	}
	w.Fix += ")"
	return &w
}

// Files returns credits.csv when credits are on.
func (e *Endpoint) Files() []transport.File {
	if !e.net.CreditsOn() {
		return nil
	}
	return []transport.File{{Name: CreditsFile, Write: e.writeCredits}}
}

// writeCredits writes one row per port that sent anything under credits, in port order:
// its name, node, rate, the time its VLs were blocked waiting for credits (us and share of
// the run), the spells, as a receiver its buffer per VL and the most bytes it held for one
// VL, and the flow-control packets it sent.
func (e *Endpoint) writeCredits(w io.Writer) error {
	now := e.net.Sim().Now()
	if _, err := fmt.Fprintln(w, "port,node,rate_gbps,blocked_us,blocked_share,blocked_spells,tx_blocks,buffer_per_vl_bytes,peak_held_bytes,fc_packets"); err != nil {
		return err
	}
	for i := range e.net.Ports {
		p := &e.net.Ports[i]
		st := e.net.CreditStats(fabric.PortID(i), now)
		if st.TxBlocks == 0 && st.FCPacketsSent == 0 {
			continue
		}
		share := 0.0
		if now > 0 {
			share = float64(st.BlockedTime) / float64(now)
		}
		if _, err := fmt.Fprintf(w, "%s,%s,%g,%.3f,%.6f,%d,%d,%d,%d,%d\n", p.Name, e.net.Nodes[p.Node].Name, float64(p.Rate)/1e9,
			float64(st.BlockedTime)/float64(sim.Microsecond), share, st.BlockedSpells, st.TxBlocks, st.BufferBytes, st.PeakHeldBytes, st.FCPacketsSent); err != nil {
			return err
		}
	}
	return nil
}
