package rocenic

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/topo"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// Warnings main's runner printed (`lockstep run` at 28e473d) for an 8-host radix-8 Clos
// under the roce profile with PFC: dcqcnOff for ECN off on every queue, rto10us for
// transport.roce.rto 10us, ecnAbove for switch_queue.ecn kmin 3MB kmax 4MB, rto1ms for rto 1ms.
const (
	dcqcnOff = "transport.roce.dcqcn: on, but ECN marking is off on every switch queue (fabric.switch_queue.ecn and fabric.last_hop_queue.ecn), so no packet is marked, no CNP is sent and DCQCN can never act; turn ECN on (the roce profile's default) or set transport.roce.dcqcn.disabled: true to run PFC only"
	rto10us  = "transport.roce.rto: 10us is shorter than the 1.0159488ms the worst paused path may take to drain (338.6496us at last hop p0.t0-0.down0 + 2 x 338.6496us at p0.t0-0.up0); QPs whose packets only wait behind PFC pauses would time out, resend, and after retry_count (7) retries error; NCCL's default is 4.096us x 2^20 (about 4.3 s)"
	rto1ms   = "transport.roce.rto: 1ms is shorter than the 1.0159488ms the worst paused path may take to drain (338.6496us at last hop p0.t0-0.down0 + 2 x 338.6496us at p0.t0-0.up0); QPs whose packets only wait behind PFC pauses would time out, resend, and after retry_count (7) retries error; NCCL's default is 4.096us x 2^20 (about 4.3 s)"
	ecnAbove = "fabric.switch_queue.ecn: egress p0.t0-0.down0 (100Gbps): ECN kmin 3000000B is at or above the PFC pause point 2008320B of one congested ingress; PFC pauses before ECN marks, so DCQCN cannot act first"
)

// TestCheckWarnings: the pre-run warnings on built fabrics (and at flow level, no fabric:
// only the DCQCN-without-ECN one), worded as the runner's.
func TestCheckWarnings(t *testing.T) {
	small := topo.Clos{Tiers: 2, Planes: 1, Radix: 8, Hosts: 8, HostLink: 100e9}
	for _, tc := range []struct {
		name  string
		spec  rigSpec
		fluid bool
		want  []string
	}{
		{"ecn off, rto 10us", rigSpec{clos: small, pfc: true, cfg: roce.Config{RTO: 10 * sim.Microsecond}}, false, []string{dcqcnOff, rto10us}},
		{"ecn above pause, rto 1ms", rigSpec{clos: small, pfc: true, kmin: 3e6, kmax: 4e6, cfg: roce.Config{RTO: sim.Millisecond}}, false, []string{ecnAbove, rto1ms}},
		{"ecn above pause, dcqcn off", rigSpec{clos: small, pfc: true, kmin: 3e6, kmax: 4e6, cfg: roce.Config{DCQCN: roce.DCQCNConfig{Disabled: true}}}, false, nil},
		{"ecn off, dcqcn off", rigSpec{clos: small, pfc: true, cfg: roce.Config{DCQCN: roce.DCQCNConfig{Disabled: true}}}, false, nil},
		{"profile defaults", rigSpec{clos: small, pfc: true, ecn: true}, false, nil},
		{"no pfc, rto 10us", rigSpec{clos: small, ecn: true, cfg: roce.Config{RTO: 10 * sim.Microsecond}}, false, nil},
		{"flow level, ecn off, rto 10us", rigSpec{clos: small, pfc: true, cfg: roce.Config{RTO: 10 * sim.Microsecond}}, true, []string{dcqcnOff}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, tc.spec)
			env := transport.CheckEnv{Topology: g.l, Net: g.net, Queues: g.queues, Profile: Kind}
			if tc.fluid {
				env.Net = nil
			}
			cfg := tc.spec.cfg
			got, err := check(&cfg, env)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("warnings\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestCheckKmin: under the roce profile an ECN kmin at or above the queue limit in force is
// an error naming the queue (the switch queue first); under profile none it is not checked.
func TestCheckKmin(t *testing.T) {
	q := func(kmin, limit sim.Size) fabric.QueueConfig {
		return fabric.QueueConfig{Limit: limit, ECN: fabric.ECNConfig{Enabled: true, Kmin: kmin, Kmax: 2 * kmin}}
	}
	ok := q(50e3, 1<<20)
	for _, tc := range []struct {
		name          string
		profile       string
		sw, last      fabric.QueueConfig
		wantErr       string
		disableSwitch bool
	}{
		{"fine", Kind, ok, ok, "", false},
		{"switch at limit", Kind, q(1<<20, 1<<20), ok, "fabric.switch_queue.ecn.kmin: 1MiB is at or above the queue limit in force 1MiB; nothing would ever be marked; want kmin below it", false},
		{"both above", Kind, q(2<<20, 1<<20), q(3<<20, 1<<20), "fabric.switch_queue.ecn.kmin: 2MiB is at or above the queue limit in force 1MiB; nothing would ever be marked; want kmin below it", false},
		{"last hop above", Kind, ok, q(128<<10, 64<<10), "fabric.last_hop_queue.ecn.kmin: 128KiB is at or above the queue limit in force 64KiB; nothing would ever be marked; want kmin below it", false},
		{"ecn off above", Kind, q(2<<20, 1<<20), ok, "", true},
		{"profile none", "none", q(2<<20, 1<<20), ok, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.disableSwitch {
				tc.sw.ECN.Enabled = false
			}
			l, err := (topo.Clos{Tiers: 2, Planes: 1, Radix: 8, Hosts: 8, HostLink: 100e9}).Topology()
			if err != nil {
				t.Fatal(err)
			}
			_, err = check(&roce.Config{}, transport.CheckEnv{Topology: l, Profile: tc.profile, Queues: transport.Queues{Switch: tc.sw, LastHop: tc.last, LastHopGiven: true}})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("error %q; want %q", got, tc.wantErr)
			}
		})
	}
	if _, err := check("roce", transport.CheckEnv{}); err == nil {
		t.Error("a block of the wrong type was accepted")
	}
}

// TestFlowRecoveryInert: dcqcn.flow_recovery warns where it does nothing (packet level,
// DCQCN disabled, adaptive routing with placement, faults) and not where it acts or is unset.
func TestFlowRecoveryInert(t *testing.T) {
	on := roce.Config{DCQCN: roce.DCQCNConfig{FlowRecovery: true}}
	off := roce.Config{DCQCN: roce.DCQCNConfig{FlowRecovery: true, Disabled: true}}
	inOrder := false
	placed := on
	placed.OutOfOrder = &roce.OutOfOrder{Enabled: &inOrder}
	const pre = "transport.roce.dcqcn.flow_recovery: true does nothing here: "
	for _, tc := range []struct {
		name string
		cfg  roce.Config
		env  transport.CheckEnv
		want string // the reason's first words; "" none
	}{
		{"flow level, acts", on, transport.CheckEnv{}, ""},
		{"unset", roce.Config{}, transport.CheckEnv{Net: &fabric.Network{}, Faults: true}, ""},
		{"packet level", on, transport.CheckEnv{Net: &fabric.Network{}}, "the packet level runs DCQCN itself"},
		{"dcqcn disabled", off, transport.CheckEnv{}, "dcqcn.disabled is true"},
		{"adaptive routing, placement", on, transport.CheckEnv{Adaptive: true}, "under fabric.adaptive_routing"},
		{"adaptive routing, in order", placed, transport.CheckEnv{Adaptive: true}, ""},
		{"faults", on, transport.CheckEnv{Faults: true}, "runs with faults keep max-min rates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := flowRecoveryInert(tc.cfg, tc.env)
			if tc.want == "" {
				if got != "" {
					t.Fatalf("warned %q, want none", got)
				}
				return
			}
			if !strings.HasPrefix(got, pre) || !strings.Contains(got, tc.want) {
				t.Fatalf("warned %q, want %q...%q", got, pre, tc.want)
			}
		})
	}
}
