package scenario

import (
	"bytes"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
)

// TestProfileResolvedFixedPoint: Resolve applies fabric.profile, so the encoded scenario is
// what runs: Parse (Resolve) -> Encode -> Parse -> Encode is a fixed point for the mrc and roce
// profiles (PFC on and off, two fabric sizes, the packet and flow engines), and the queues
// are those the runner's profile step gave before it moved into Resolve (values pinned from
// runner.applyMRCProfile / applyRoCEProfile as they were).
func TestProfileResolvedFixedPoint(t *testing.T) {
	const (
		clos2   = "topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 32, host_link: 100G, hop_latency: 500ns}}\n"
		clos2p8 = "topology: {clos: {tiers: 2, planes: 8, radix: 16, hosts: 16, host_link: 100G, hop_latency: 500ns}}\n"
		clos3   = "topology: {clos: {tiers: 3, planes: 1, radix: 8, hosts: 128, host_link: 400G, hop_latency: 500ns}}\n"
		incast  = "traffic: [{pattern: incast, receiver: 0, senders: [8, 9], bytes: 1MiB}]\n"
		coll    = "workload: {collectives: [{op: all_reduce, hosts: [0, 1, 2, 3], bytes: 1MiB}]}\n"
	)
	ecn := func(kmin, kmax sim.Size, pmax float64) fabric.ECNConfig {
		return fabric.ECNConfig{Enabled: true, Kmin: kmin, Kmax: kmax, Pmax: pmax}
	}
	trim := func(on bool, th sim.Size) fabric.TrimConfig {
		return fabric.TrimConfig{Enabled: on, Threshold: th, HeaderLimit: 1 << 20, HeaderShare: 0.5}
	}
	q := func(limit sim.Size, e fabric.ECNConfig, tr fabric.TrimConfig) fabric.QueueConfig {
		return fabric.QueueConfig{Classes: 2, Limit: limit, ECN: e, Trim: tr}
	}
	roce100 := ecn(50000, 200000, 0.2)
	roce400 := ecn(200000, 800000, 0.2)
	for _, tc := range []struct {
		name     string
		yaml     string
		sw, last fabric.QueueConfig
		shared   sim.Size // fabric.pfc.shared_buffer; -1: no pfc block
	}{
		{"roce-pfc", clos2 + "transport: {kind: roce}\n" + incast,
			q(64<<20, roce100, trim(false, 0)), q(64<<20, roce100, trim(false, 0)), 8000000},
		{"roce-nopfc", clos2 + "transport: {kind: roce}\nfabric: {pfc: {enabled: false}}\n" + incast,
			q(1<<20, roce100, trim(false, 0)), q(1<<20, roce100, trim(false, 0)), 0},
		{"roce-pfc-3tier", clos3 + "transport: {kind: roce}\n" + incast,
			q(64<<20, roce400, trim(false, 0)), q(64<<20, roce400, trim(false, 0)), 16000000},
		{"roce-pfc-flow", clos3 + "transport: {kind: roce}\nrun: {engine: flow}\n" + coll,
			q(64<<20, roce400, trim(false, 0)), q(64<<20, roce400, trim(false, 0)), 1 << 20},
		{"mrc", clos2p8 + "transport: {kind: mrc}\n" + incast,
			q(1<<20, ecn(13504, 54016, 1), trim(true, 67520)), q(1<<20, fabric.ECNConfig{}, trim(true, 101280)), -1},
		{"mrc-3tier", clos3 + "transport: {kind: mrc}\n" + incast,
			q(1<<20, ecn(65256, 261024, 1), trim(true, 326280)), q(1<<20, fabric.ECNConfig{}, trim(true, 489420)), -1},
		{"mrc-flow", clos3 + "transport: {kind: mrc}\nrun: {engine: flow}\n" + coll,
			q(1<<20, ecn(65256, 261024, 1), trim(true, 326280)), q(1<<20, fabric.ECNConfig{}, trim(true, 489420)), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if got := sc.Fabric.SwitchQueue; got != tc.sw {
				t.Errorf("switch_queue %+v, want %+v", got, tc.sw)
			}
			if got := *sc.Fabric.LastHopQueue; got != tc.last {
				t.Errorf("last_hop_queue %+v, want %+v", got, tc.last)
			}
			shared := sim.Size(-1)
			if sc.Fabric.PFC != nil {
				shared = sc.Fabric.PFC.SharedBuffer
			}
			if shared != tc.shared {
				t.Errorf("pfc.shared_buffer %v, want %v", shared, tc.shared)
			}
			once, err := Encode(sc)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(once)
			if err != nil {
				t.Fatalf("the resolved scenario does not parse: %v\n%s", err, once)
			}
			twice, err := Encode(back)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(once, twice) {
				t.Errorf("Resolve -> Encode -> Parse -> Encode is not a fixed point:\nfirst:\n%s\nagain:\n%s", once, twice)
			}
			if back.Fabric.SwitchQueue != sc.Fabric.SwitchQueue || *back.Fabric.LastHopQueue != *sc.Fabric.LastHopQueue {
				t.Errorf("re-parsed queues %+v / %+v, want %+v / %+v", back.Fabric.SwitchQueue, *back.Fabric.LastHopQueue, sc.Fabric.SwitchQueue, *sc.Fabric.LastHopQueue)
			}
		})
	}
}
