package runner

import (
	"sort"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
)

// applySwitchModel sets fabric.switch_model on the packet fabric (fabric.Network.SetSwitch),
// after the transport's checks, which turn credit flow control on: SetSwitch refuses credits
// (and PFC), naming the fields. Nothing when the key is left out or the run builds no fabric
// (scenario.Resolve refuses the input-buffered kinds there).
func applySwitchModel(sc *scenario.Scenario, net *fabric.Network) error {
	m := sc.Fabric.SwitchModel
	if m == nil || sc.Fluid() {
		return nil
	}
	if err := net.SetSwitch(*m); err != nil {
		return &InputError{Err: err}
	}
	return nil
}

// SwitchSummary is summary.json's "switch_model": the switch model fabric.switch_model set and,
// for the input-buffered kinds, what their ingress buffers dropped (each drop is also one of
// drops_packets' queue_full).
type SwitchSummary struct {
	// Kind is output, shared_ingress or voq.
	Kind string `json:"kind"`
	// The buffers in force (bytes; absent under output).
	IngressBufferBytes   int64 `json:"ingress_buffer_bytes,omitempty"`
	VOQBufferBytes       int64 `json:"voq_buffer_bytes,omitempty"`
	EgressThresholdBytes int64 `json:"egress_threshold_bytes,omitempty"`
	// IngressDrops counts the packets dropped at switch ingresses for want of buffer, over
	// IngressDropPorts ports; IngressDropsTop lists the ports that dropped most (at most
	// maxIngressDropPorts, most first, ties by port name).
	IngressDrops     int64       `json:"ingress_drops_packets"`
	IngressDropPorts int         `json:"ingress_drop_ports"`
	IngressDropsTop  []PortDrops `json:"ingress_drops_top,omitempty"`
	// IngressCEMarks counts the packets marked CE on admission to an ingress buffer, by the
	// egress's marking curve over its queue plus the bytes waiting for it in the ingresses
	// (not in ce_marks, which counts the egress queues' marks).
	IngressCEMarks int64 `json:"ingress_ce_marks"`
	// IngressTrims counts the packets trimmed on admission (the egress's trim threshold over
	// the same backlog); they are also in trimmed_packets.
	IngressTrims int64 `json:"ingress_trims_packets"`
	// HeldAtEnd is the packets still in ingress buffers when the run ended (0 after a drain).
	HeldAtEnd int64 `json:"ingress_held_packets_at_end"`
}

// PortDrops is one port's drop count.
type PortDrops struct {
	Port    string `json:"port"`
	Packets int64  `json:"packets"`
}

// maxIngressDropPorts bounds SwitchSummary.IngressDropsTop.
const maxIngressDropPorts = 5

// switchSummary is the summary's switch_model block: nil when the key is left out or no packet
// fabric ran.
func switchSummary(sc *scenario.Scenario, net *fabric.Network) *SwitchSummary {
	m := sc.Fabric.SwitchModel
	if m == nil || sc.Fluid() || net == nil {
		return nil
	}
	s := &SwitchSummary{Kind: net.SwitchModel()}
	if s.Kind == fabric.SwitchOutput {
		return s
	}
	c := m.WithDefaults()
	s.IngressBufferBytes, s.VOQBufferBytes, s.EgressThresholdBytes = int64(c.IngressBuffer), int64(c.VOQBuffer), int64(c.EgressThreshold)
	s.HeldAtEnd, _ = net.VOQHeld()
	s.IngressCEMarks = net.VOQMarks()
	s.IngressTrims = net.VOQTrims()
	var top []PortDrops
	for pid, d := range net.VOQIngressDrops() {
		if d == 0 {
			continue
		}
		s.IngressDrops += d
		s.IngressDropPorts++
		top = append(top, PortDrops{Port: net.Ports[pid].Name, Packets: d})
	}
	sort.Slice(top, func(i, j int) bool {
		if top[i].Packets != top[j].Packets {
			return top[i].Packets > top[j].Packets
		}
		return top[i].Port < top[j].Port
	})
	if len(top) > maxIngressDropPorts {
		top = top[:maxIngressDropPorts]
	}
	s.IngressDropsTop = top
	return s
}
