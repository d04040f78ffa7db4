package runner

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/transport/roce"
)

// The RoCE defaults (issue 16) pinned at small sizes: the roce profile's ECN marks below the
// PFC pause point at every speed from 25G to 800G; on the 7 -> 1 incast plus victim (16 hosts,
// 4 racks, 4 spines) DCQCN, not PFC, controls the incast at 25G, 100G and 400G; a 5 -> 1
// star follows the max-min schedule; a 1,001-flow lossless incast finishes at the line rate
// with no drop and no QP error (NCCL's 4.3 s timeout).

// victimYAML is issue 16's roce-victim-100g scenario (incast 7 -> 1, hosts 4-10 -> host 0, plus
// a victim flow host 12 -> host 1, an idle host in the receiver's rack; 16 hosts, 4 racks, 4
// spines) at rate %s with transport %s.
const victimYAML = `
name: victim
topology:
  clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: %s}
transport: %s
traffic:
  - pattern: flows
    bytes: 8MiB
    flows:
      - {src: 4, dst: 0}
      - {src: 5, dst: 0}
      - {src: 6, dst: 0}
      - {src: 7, dst: 0}
      - {src: 8, dst: 0}
      - {src: 9, dst: 0}
      - {src: 10, dst: 0}
      - {src: 12, dst: 1, bytes: 16MiB}
`

// flowOfLine is traffic flow i's payload over its FCT as a fraction of the line rate (Gb/s).
func flowOfLine(res *Result, i int, bytes int64, gbps float64) float64 {
	return float64(bytes) * 8 / res.roceRun().FlowDone(i).Seconds() / (gbps * 1e9)
}

func TestRoCEECNBelowPFCAcrossSpeeds(t *testing.T) {
	for _, g := range []int{25, 100, 400, 800} {
		y := fmt.Sprintf(victimYAML, fmt.Sprintf("%dG", g), "{kind: roce}")
		res := mustRun(t, y)
		if w := res.Summary.roceT().Warnings; len(w) != 0 {
			t.Errorf("%dG defaults: pre-run warnings %q; want none", g, w)
		}
		if res.Summary.PFC == nil || res.Summary.roceT().CNPsSent == 0 {
			t.Errorf("%dG: PFC block %v, %d CNPs; want PFC on and DCQCN acting", g, res.Summary.PFC, res.Summary.roceT().CNPsSent)
		}
	}
	// The former profile (100/400 KB per 25G, static 128 KiB XOFF): named, both values.
	y := fmt.Sprintf(victimYAML, "100G", "{kind: roce}")
	y = strings.Replace(y, "transport:", "fabric: {pfc: {xoff: 128KiB}, switch_queue: {ecn: {kmin: 400KB, kmax: 1600KB}}}\ntransport:", 1)
	w := strings.Join(mustRun(t, y).Summary.roceT().Warnings, "\n")
	if !strings.Contains(w, "ECN kmin 400000B") || !strings.Contains(w, "PFC pause point 128KiB") {
		t.Errorf("ECN above XOFF: warnings %q; want kmin and the pause point named", w)
	}
}

func TestRoCEIncastVictimDefaults(t *testing.T) {
	for _, g := range []int{25, 100, 400} { // 800G is not pinned (see docs/protocols.md)
		rate := fmt.Sprintf("%dG", g)
		d := mustRun(t, fmt.Sprintf(victimYAML, rate, "{kind: roce}"))
		p := mustRun(t, fmt.Sprintf(victimYAML, rate, "{kind: roce, roce: {dcqcn: {disabled: true}}}"))
		vd, vp := flowOfLine(d, 7, 16<<20, float64(g)), flowOfLine(p, 7, 16<<20, float64(g))
		lo, hi := 2.0, 0.0
		for i := 0; i < 7; i++ {
			x := flowOfLine(d, i, 8<<20, float64(g))
			lo, hi = min(lo, x), max(hi, x)
		}
		s := d.Summary
		t.Logf("%s: victim PFC only %.3f (%d pauses), PFC + DCQCN %.3f (%d CNPs, %d pauses); incast %.4f..%.4f of line",
			rate, vp, p.Summary.PFC.Pauses, vd, s.roceT().CNPsSent, s.PFC.Pauses, lo, hi)
		if vd < 0.6 || s.roceT().CNPsSent == 0 || vd <= vp {
			t.Errorf("%s: victim %.3f with DCQCN (%.3f PFC only), %d CNPs; want >= 0.6 of line, above PFC only, CNPs > 0", rate, vd, vp, s.roceT().CNPsSent)
		}
		if hi > 1.2*lo {
			t.Errorf("%s: incast flows %.4f..%.4f of line; want within 20%% of each other", rate, lo, hi)
		}
		if s.DroppedPackets != 0 || s.roceT().QPErrors != 0 || s.Failed {
			t.Errorf("%s: %d drops, %d QP errors, failed %v; want a clean lossless run", rate, s.DroppedPackets, s.roceT().QPErrors, s.Failed)
		}
	}
}

// 5 -> 1 at 100G, 200, 200, 150, 5, 5 MB: max-min finishes the small flows at 2.0 ms, the
// 150 MB at 36.8 ms and the 200 MB at 44.8 ms; the large ones within 10%, the 5 MB ones
// within 15% (measured 2.23 and 2.17 ms: the 10% is missed by the start transient,
// all five starting at line rate), with DCQCN (CNPs) doing the rate control.
func TestRoCEStarMaxMinSchedule(t *testing.T) {
	y := `
name: star
topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 8, host_link: 100G}}
transport: {kind: roce}
traffic:
  - pattern: flows
    flows: [{src: 1, dst: 0, bytes: 200MB}, {src: 2, dst: 0, bytes: 200MB}, {src: 3, dst: 0, bytes: 150MB}, {src: 4, dst: 0, bytes: 5MB}, {src: 5, dst: 0, bytes: 5MB}]
run: {sample_interval: 20us}
`
	res := mustRun(t, y)
	want := []float64{44.8, 44.8, 36.8, 2.0, 2.0} // ms
	for i, w := range want {
		got := res.roceRun().FlowDone(i).Seconds() * 1e3
		t.Logf("flow %d: %.2f ms (max-min %.1f ms)", i, got, w)
		tol := 0.1
		if w < 10 {
			tol = 0.15
		}
		if got < (1-tol)*w || got > (1+tol)*w {
			t.Errorf("flow %d done at %.2f ms; want within %.0f%% of %.1f ms", i, got, 100*tol, w)
		}
	}
	s := res.Summary
	if s.roceT().CNPsSent == 0 || s.DroppedPackets != 0 {
		t.Errorf("%d CNPs, %d drops; want DCQCN acting, lossless", s.roceT().CNPsSent, s.DroppedPackets)
	}
}

// 1,001 flows x 32 KiB into one 10G host (63 senders): lossless, no QP error under NCCL's
// timeout, done within 5% of N x S / C.
func TestRoCELosslessIncast1001(t *testing.T) {
	var fl []string
	for i := 0; i < 1001; i++ {
		fl = append(fl, fmt.Sprintf("{src: %d, dst: 0}", 1+i%63))
	}
	y := `
name: incast1001
topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 64, host_link: 10G}}
transport: {kind: roce}
traffic:
  - {pattern: flows, bytes: 32KiB, flows: [` + strings.Join(fl, ", ") + `]}
run: {sample_interval: 20us}
`
	s := mustRun(t, y).Summary
	ideal := 1001 * 32768 * 8 / 10e9 * 1e6 // us
	t.Logf("JCT %.1f us, N x S / C %.1f us (%.3fx); drops %d, QP errors %d, pauses %d, CNPs %d",
		s.roceT().JCTUs, ideal, s.roceT().JCTUs/ideal, s.DroppedPackets, s.roceT().QPErrors, s.PFC.Pauses, s.roceT().CNPsSent)
	if s.DroppedPackets != 0 || s.roceT().QPErrors != 0 || s.Failed || s.roceT().JCTUs > 1.05*ideal {
		t.Errorf("%d drops, %d QP errors, failed %v, JCT %.1f us; want lossless, no error, within 5%% of %.1f us",
			s.DroppedPackets, s.roceT().QPErrors, s.Failed, s.roceT().JCTUs, ideal)
	}
}

// 11 -> 1 at 25G (4 MiB each): DCQCN keeps the bottleneck (the receiver's last hop) >= 95%
// busy while the job runs with a standing queue (median of each interval's deepest sample)
// <= 3 BDP (base RTT x 25 Gb/s). Measured: 98.6% busy, 75.2 KB = 2.54 BDP.
func TestRoCEIncast11At25G(t *testing.T) {
	var senders []string
	for i := 1; i <= 11; i++ {
		senders = append(senders, fmt.Sprint(i))
	}
	y := `
name: in11
topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 16, host_link: 25G}}
transport: {kind: roce}
traffic:
  - {pattern: incast, receiver: 0, senders: [` + strings.Join(senders, ", ") + `], bytes: 4MiB}
run: {sample_interval: 2us}
`
	res := mustRun(t, y)
	ls := res.Links
	port := -1
	for i := range res.Net.Ports {
		if res.Net.Ports[i].Name == "p0.t0-0.down0" {
			port = i
		}
	}
	if port < 0 || ls.Intervals() == 0 {
		t.Fatal("no bottleneck port or no link series")
	}
	var tx int64
	var q []int64
	for k := range ls.starts {
		tx += ls.tx[k*ls.ports+port]
		q = append(q, ls.qmax[k*ls.ports+port])
	}
	slices.Sort(q)
	s := res.Summary
	end := s.roceT().JCTUs * 1e-6
	util := float64(tx) * 8 / (25e9 * end)
	bdp := s.roceT().BaseRTTUs * 1e-6 * 25e9 / 8
	med := float64(q[len(q)/2])
	t.Logf("bottleneck %.1f%% busy over %.1f us; standing queue %.0f B = %.2f BDP (BDP %.0f B); %d CNPs, %d pauses",
		100*util, s.roceT().JCTUs, med, med/bdp, bdp, s.roceT().CNPsSent, s.PFC.Pauses)
	if util < 0.95 || med > 3*bdp || s.Failed {
		t.Errorf("bottleneck %.1f%% busy, standing queue %.2f BDP, failed %v; want >= 95%% and <= 3 BDP", 100*util, med/bdp, s.Failed)
	}
}

// QP scaling on a permutation (128 hosts, 16 per T0, 16 T1s, 4 MiB): the packet level's
// throughput while all flows are active against the flow-level max-min answer over the same
// ECMP-hashed QP paths with the same stripes, to the same first completion
// (active_maxmin_mean_of_line, computed by the flow engine). Measured with the defaults:
// s = 1, 2, 4, 8 QPs per peer give 0.555 / 0.663 / 0.764 / 0.817 of line against
// 0.599 / 0.703 / 0.793 / 0.853: within 0.05 at every s [issue 16].
func TestRoCEQPScalingVsMaxMin(t *testing.T) {
	prevP, prevM := 0.0, 0.0
	for _, s := range []int{1, 2, 4, 8} {
		y := fmt.Sprintf(permYAML, fmt.Sprintf("transport: {kind: roce, roce: {qps_per_peer: %d}}", s), 1)
		r := mustRun(t, y).Summary.roceT()
		p, m := r.ActiveThroughputMeanOfLine, r.ActiveMaxMinMeanOfLine
		t.Logf("%d QP(s) per peer: packet level %.3f, flow-level max-min %.3f of line (gap %.3f)", s, p, m, m-p)
		if m == 0 || p > m+0.01 || p <= prevP || m <= prevM || m-p > 0.05 {
			t.Errorf("%d QPs: packet %.3f, max-min %.3f (previous %.3f, %.3f); want both rising with s, packet within 0.05 below max-min", s, p, m, prevP, prevM)
		}
		prevP, prevM = p, m
	}
}

// Rank placement: the same 16-rank RoCE ring all-reduce (4 racks of 4, 4 spines) with the
// default topology-aware placement runs near the model; shuffled across racks it is much
// slower (measured 2622.9 us vs 6235.1 us, model 2569.6 us).
func TestRoCERingPlacement(t *testing.T) {
	const y = `
name: ar
topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}
transport: {kind: roce}
workload:
  collectives:
    - {op: all_reduce, algorithm: ring, bytes: 16MiB, placement: %s}
`
	times := map[string]float64{}
	for _, p := range []string{"topology", "shuffled"} {
		res := mustRun(t, fmt.Sprintf(y, p))
		row := res.Summary.Collectives[0]
		times[p] = row.TimeUs
		t.Logf("placement %s: %.1f us (model %.1f us)", p, row.TimeUs, row.ModelUs)
		if p == "topology" && row.TimeUs > 1.1*row.ModelUs {
			t.Errorf("topology placement: %.1f us, model %.1f us; want within 10%%", row.TimeUs, row.ModelUs)
		}
	}
	if times["shuffled"] < 1.5*times["topology"] {
		t.Errorf("shuffled %.1f us vs topology %.1f us; want the shuffled ring clearly slower", times["shuffled"], times["topology"])
	}
}

// ECMPPath, which the max-min comparison traces QPs with, is the path packets take: for each
// of a few QPs alone on the fabric, the ports that carried anything are exactly its data
// path (src -> dst) and its ACK path (dst -> src, the same UDP ports).
func TestECMPPathMatchesForwarding(t *testing.T) {
	for _, pair := range [][2]int{{0, 9}, {3, 12}, {5, 6}, {15, 0}} {
		y := fmt.Sprintf(`
name: one
topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}
transport: {kind: roce}
traffic: [{pattern: flows, flows: [{src: %d, dst: %d, bytes: 64KiB}]}]
`, pair[0], pair[1])
		res := mustRun(t, y)
		run, net := res.roceRun(), res.Net
		_, _, src, dst, plane := run.QP(0)
		want := map[fabric.PortID]bool{}
		var path []fabric.PortID
		for _, dir := range [][2]int32{{int32(src), int32(dst)}, {int32(dst), int32(src)}} {
			pkt := fabric.Packet{Proto: fabric.ProtoRoCE, Src: dir[0], Dst: dir[1], SrcPort: run.SrcPort(0), DstPort: roce.UDPPort}
			var err error
			if path, err = net.ECMPPath(dir[0], plane, &pkt, path); err != nil {
				t.Fatal(err)
			}
			for _, p := range path {
				want[p] = true
			}
		}
		now := res.Sim.Now()
		for i := range net.Ports {
			used := net.Ports[i].SentBytes(now) > 0
			if used != want[fabric.PortID(i)] {
				t.Errorf("h%d -> h%d: port %s carried %v, ECMPPath says %v", pair[0], pair[1], net.Ports[i].Name, used, want[fabric.PortID(i)])
			}
		}
	}
}

// The roce profile's default fabric is lossless at every switch size: a 31 -> 1 incast, PFC
// only, on radix 8, 16 and 64 switches at 100, 400 and 800G drops nothing, pauses, finishes
// every transfer and warns of nothing before the run (the egress limits were 64 MiB, below
// the 40 us shared buffer of a 51.2 Tb/s switch: drop-tail acted before PFC).
func TestRoCEDefaultLosslessAcrossSwitchSizes(t *testing.T) {
	senders := make([]string, 31)
	for i := range senders {
		senders[i] = fmt.Sprint(i + 1)
	}
	for _, tc := range []struct {
		radix, hosts int
		rate, bytes  string // enough that the switch's buffer fills and PFC pauses
	}{
		{8, 32, "100G", "4MiB"}, {8, 32, "400G", "4MiB"}, {8, 32, "800G", "4MiB"},
		{16, 64, "100G", "4MiB"}, {16, 64, "400G", "4MiB"}, {16, 64, "800G", "4MiB"},
		{64, 64, "100G", "4MiB"}, {64, 64, "400G", "8MiB"}, {64, 64, "800G", "8MiB"},
	} {
		y := fmt.Sprintf(`
name: lossless
topology: {clos: {tiers: 2, planes: 1, radix: %d, hosts: %d, host_link: %s}}
transport: {kind: roce, roce: {dcqcn: {disabled: true}}}
traffic:
  - {pattern: incast, senders: [%s], receiver: 0, bytes: %s}
`, tc.radix, tc.hosts, tc.rate, strings.Join(senders, ","), tc.bytes)
		res := mustRun(t, y)
		s := res.Summary
		name := fmt.Sprintf("radix %d %s", tc.radix, tc.rate)
		var drops int64
		for _, d := range s.Drops {
			drops += d
		}
		if drops != 0 || s.PFC == nil || s.PFC.Pauses == 0 || len(s.PFC.ConfigProblems) != 0 || len(s.roceT().Warnings) != 0 || s.roceT().FlowsCompleted != s.roceT().Flows {
			t.Errorf("%s: drops %v, PFC %+v, warnings %q, %d of %d done; want no drop, pauses, no warning, every transfer done",
				name, s.Drops, s.PFC, s.roceT().Warnings, s.roceT().FlowsCompleted, s.roceT().Flows)
		}
	}
}
