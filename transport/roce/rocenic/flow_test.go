package rocenic

import (
	"github.com/lockstepsim/lockstep/fabric"
	"testing"

	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// The model hashes qps_per_peer ECMP paths per peer per plane, go-back-N, no endpoint
// reroute, retries every rto and gives up after retry_count + 1 of them, and sizes a packet
// as the block does (an ACK as the headers), for every setting swept. The topology plays no
// part.
func TestFlowModelRoCE(t *testing.T) {
	l, err := topo.Clos{Tiers: 2, Planes: 4, Radix: 16, Hosts: 128, HostLink: 100e9}.Layout()
	if err != nil {
		t.Fatal(err)
	}
	for _, qps := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 16, roce.MaxQPsPerPeer} {
		for _, retry := range []int{0, 1, 2, 3, 4, 5, 6, roce.MaxRetryCount} {
			for _, rto := range []sim.Time{0, sim.Microsecond, 537 * sim.Microsecond, 8 * sim.Millisecond, roce.DefaultRTO} {
				for _, payload := range []int{0, 1024, 4096} {
					cfg := &roce.Config{QPsPerPeer: qps, RetryCount: retry, RTO: rto, PayloadBytes: payload}
					m, err := flowModel(cfg, l)
					if err != nil {
						t.Fatal(err)
					}
					c := cfg.WithDefaults()
					wantQPs, wantRetry, wantRTO := max(qps, 1), retry, rto
					if retry == 0 {
						wantRetry = roce.DefaultRetryCount
					}
					if rto == 0 {
						wantRTO = roce.DefaultRTO
					}
					want := transport.FlowModel{Paths: wantQPs, WireBytes: c.PayloadBytes + c.HeaderBytes, HeaderBytes: c.HeaderBytes,
						AckBytes: c.HeaderBytes, GoBackN: true, RTO: wantRTO, GiveUp: wantRTO * sim.Time(wantRetry+1),
						QPTuple: transport.QPTuple{Proto: fabric.ProtoRoCE, DstPort: roce.UDPPort, Ports: portRule{}},
						// Out-of-order placement left out follows adaptive routing (on under it), and
						// the runner reads AdaptiveSpray only under adaptive routing.
						AdaptiveSpray: true}
					if m != want {
						t.Errorf("qps %d retry %d rto %v payload %d: model %+v; want %+v", qps, retry, rto, payload, m, want)
					}
					if other, _ := flowModel(cfg, nil); other != m {
						t.Errorf("qps %d retry %d rto %v: the model depends on the topology", qps, retry, rto)
					}
				}
			}
		}
	}
}

// A left-out block (nil, or a nil *roce.Config) is the defaults; any other type is an error.
func TestFlowModelRoCEConfigs(t *testing.T) {
	def, err := flowModel(&roce.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if def.Paths != 1 || def.RTO != roce.DefaultRTO || def.GiveUp != roce.DefaultRTO*sim.Time(roce.DefaultRetryCount+1) {
		t.Errorf("defaults %+v", def)
	}
	for _, cfg := range []any{nil, (*roce.Config)(nil)} {
		if m, err := flowModel(cfg, nil); err != nil || m != def {
			t.Errorf("%T: %+v, %v; want the defaults %+v", cfg, m, err, def)
		}
	}
	for _, cfg := range []any{roce.Config{}, "roce", 3} {
		if _, err := flowModel(cfg, nil); err == nil {
			t.Errorf("%T: no error", cfg)
		}
	}
}
