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
	classes int // the switch queues' classes: the fabric's VLs (fabric.switch_queue.classes)
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
	return s
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
