package ibnic

import (
	"fmt"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
)

// maxCreditProblems bounds the credit warnings (fabric.Network.CreditCheck).
const maxCreditProblems = 5

// check is the plugin's Check: on a packet fabric it turns credit flow control on (as
// newEndpoint would, which then leaves it as it is) so that fabric.Network.CreditCheck can say
// before the run why the credits cannot keep it lossless: a buffer per VL below the largest
// packet, or a switch egress whose queue limit (a scenario's switch_queue.limit, which
// overrides the ib profile's) is below what the switch's ingresses may hold, so drop-tail can
// still act. cfg is the resolved transport.ib block. Errors: the fabric refusing the credits
// (PFC on); a buffer per VL (switch or host) below the largest packet's credit blocks.
func check(cfg any, env transport.CheckEnv) ([]string, error) {
	c, err := config(cfg)
	if err != nil || env.Net == nil {
		return nil, err
	}
	cr := c.Credits.Fabric()
	if !cr.Enabled {
		return nil, nil
	}
	if !env.Net.CreditsOn() {
		if err := env.Net.SetCredits(cr); err != nil {
			return nil, fmt.Errorf("transport.ib.credits: %w", err)
		}
	}
	_, wire := c.DataPacketBytes()
	// A buffer that holds fewer blocks than the largest packet can never admit it: the run
	// would only stall, so it is refused.
	blk := int64(fabric.CreditBlockBytes)
	applied := env.Net.CreditConfig()
	for _, b := range []struct {
		name string
		v    sim.Size
	}{{"buffer_per_vl", applied.BufferPerVL}, {"host_buffer_per_vl", applied.HostBufferPerVL}} {
		if int64(b.v)/blk < (wire+blk-1)/blk {
			return nil, fmt.Errorf("transport.ib.credits.%s: %v holds %d credit blocks of %d B, fewer than the largest packet's %d (%d B at payload_bytes %d): it could never be sent; allowed at least %v",
				b.name, b.v, int64(b.v)/blk, blk, (wire+blk-1)/blk, wire, c.PayloadBytes, sim.Size((wire+blk-1)/blk*blk))
		}
	}
	var out []string
	for _, w := range env.Net.CreditCheck(wire, maxCreditProblems) {
		out = append(out, "transport.ib.credits: cannot be lossless: "+w)
	}
	return out, nil
}
