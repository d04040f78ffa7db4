package runner

import (
	"fmt"

	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport/nic"
)

// checkPFCBuffer rejects a PFC shared buffer (dynamic thresholds) that cannot hold one data
// packet per ingress of the switch with the most ports: every ingress would pause at once
// and the fabric could not move. Packet level only (flow level builds no buffers).
func checkPFCBuffer(sc *scenario.Scenario, l topo.Topology) error {
	cfg := sc.Fabric.PFC.Config().WithDefaults()
	if !cfg.Enabled || cfg.Alpha <= 0 || sc.Fluid() {
		return nil
	}
	pkt := sc.MaxPacketBytes()
	most, at := 0, -1
	for n, s := range nic.SwitchIngresses(l) {
		if len(s) > most {
			most, at = len(s), n
		}
	}
	if need := int64(most) * pkt; at >= 0 && int64(cfg.SharedBuffer) < need {
		return fmt.Errorf("fabric.pfc.shared_buffer: %v cannot hold one data packet (%dB) for each of the %d ingresses of switch %s; want at least %v (0: sized from the switch under the roce profile)",
			cfg.SharedBuffer, pkt, most, l.NodeName(at), sim.Size(need))
	}
	return nil
}
