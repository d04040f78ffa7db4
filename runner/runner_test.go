package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/fabric"
	"github.com/lockstepsim/lockstep/scenario"
)

// closYAML is a small Clos scenario; fields are filled with Sprintf.
const closYAML = `
name: t
topology:
  clos: {tiers: %d, planes: %d, radix: %d, host_link: 100G, hop_latency: 500ns}
fabric:
  switch_queue: {limit: 256KiB}
traffic:
%s
run: {seed: %d, duration: %s}
`

func mustRun(t *testing.T, yaml string) *Result {
	t.Helper()
	sc, err := scenario.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, yaml)
	}
	res, err := Run(sc)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func permutation(tiers, planes, radix int, path string, load float64, seed int, dur string) string {
	tr := fmt.Sprintf("  - {pattern: permutation, path: %s, load: %v}", path, load)
	return fmt.Sprintf(closYAML, tiers, planes, radix, tr, seed, dur)
}

// A permutation at 100% load with one link-disjoint source route per flow (path: spread) on a
// non-blocking Clos delivers everything it offers, with no drops and no standing queue: the
// issue's acceptance case, in 2 and 3 tiers and with several planes.
func TestSpreadPermutationFullLoadNoDrops(t *testing.T) {
	for _, c := range []struct {
		name                 string
		tiers, planes, radix int
	}{
		{"2tier-1plane", 2, 1, 8},
		{"2tier-4plane", 2, 4, 8},
		{"3tier-1plane", 3, 1, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := mustRun(t, permutation(c.tiers, c.planes, c.radix, "spread", 1, 1, "200us"))
			s := res.Summary
			if s.DroppedPackets != 0 || s.DeliveredPackets != s.SentPackets {
				t.Fatalf("sent %d, delivered %d, dropped %d; want all delivered", s.SentPackets, s.DeliveredPackets, s.DroppedPackets)
			}
			if s.DeliveredFraction != 1 {
				t.Errorf("delivered fraction %v, want 1", s.DeliveredFraction)
			}
			for _, p := range s.PerPlane {
				if p.NICUtilMeanPct < 99 {
					t.Errorf("plane %d: NIC utilisation %.2f%%, want ~100%%", p.Plane, p.NICUtilMeanPct)
				}
				if p.UplinksOverloaded != 0 || p.DownlinksOverload != 0 {
					t.Errorf("plane %d: overloaded uplinks %d, downlinks %d; want none", p.Plane, p.UplinksOverloaded, p.DownlinksOverload)
				}
				// Packets meet their predecessor's tail at most: never more than one waits.
				if p.Queue.MaxBytes > 4160 {
					t.Errorf("plane %d: max queue %d B; want at most one packet", p.Plane, p.Queue.MaxBytes)
				}
			}
		})
	}
}

// The same permutation routed by ECMP hashing of single flows collides: on a non-blocking
// fabric some uplinks sit idle while others carry two or more flows and drop.
func TestECMPPermutationCollides(t *testing.T) {
	res := mustRun(t, permutation(2, 1, 16, "ecmp", 1, 1, "200us"))
	s := res.Summary
	if s.DroppedPackets == 0 {
		t.Fatalf("no drops under ECMP at 100%% load; want collisions")
	}
	p := s.PerPlane[0]
	if p.UplinksIdle == 0 || p.UplinksOverloaded == 0 {
		t.Errorf("uplinks idle %d, overloaded %d of %d; want both > 0", p.UplinksIdle, p.UplinksOverloaded, p.Uplinks)
	}
	if p.UplinkUtilMinPct != 0 || p.UplinkUtilMaxPct < 99 {
		t.Errorf("uplink utilisation min %.1f%% max %.1f%%; want an idle and a saturated uplink", p.UplinkUtilMinPct, p.UplinkUtilMaxPct)
	}
	if s.DeliveredFraction >= 1 {
		t.Errorf("delivered fraction %v; want < 1", s.DeliveredFraction)
	}
}

// ECMP collision count matches its closed form on average: with n flows hashed uniformly over
// n uplinks of a T0, the expected share of idle uplinks is (1-1/n)^n (balls into bins).
func TestECMPIdleUplinksClosedForm(t *testing.T) {
	const radix = 16 // 8 hosts and 8 uplinks per T0, 16 T0s: 128 hosts
	var idle, total int
	for seed := 1; seed <= 6; seed++ {
		res := mustRun(t, permutation(2, 1, radix, "ecmp", 0.5, seed, "20us"))
		p := res.Summary.PerPlane[0]
		idle += p.UplinksIdle
		total += p.Uplinks
	}
	n := float64(radix / 2)
	// Flows between hosts on the same T0 (probability ~7/127) never use an uplink; count the
	// expectation with the actual mean number of cross-T0 flows per T0, ~n x 120/127.
	m := n * 120 / 127
	want := math.Pow(1-1/n, m)
	got := float64(idle) / float64(total)
	if math.Abs(got-want) > 0.06 {
		t.Errorf("idle uplink share %.3f, closed form %.3f", got, want)
	}
}

// Two equal senders overloading one egress split the drops evenly (45-55% each over >= 10,000
// drops): same-time arrivals are ordered by a seeded key, not by port order.
func TestIncastTwoSendersSplitDrops(t *testing.T) {
	tr := "  - {pattern: incast, senders: [0, 1], receiver: 2, load: 1}"
	res := mustRun(t, fmt.Sprintf(closYAML, 2, 1, 8, tr, 7, "4ms"))
	var drops [2]int64
	for i, st := range res.Raw.Stats {
		drops[res.Raw.Flows[i].Src] += st.SentPackets - st.RecvPackets
	}
	total := drops[0] + drops[1]
	if total < 10000 {
		t.Fatalf("only %d drops; the test needs >= 10,000", total)
	}
	share := float64(drops[0]) / float64(total)
	if share < 0.45 || share > 0.55 {
		t.Errorf("sender 0 took %.3f of %d drops; want 0.45-0.55", share, total)
	}
	if got := res.Summary.Drops[fabric.DropQueueFull.String()]; got != total {
		t.Errorf("queue_full drops %d, flows lost %d", got, total)
	}
}

// The same scenario and seed give byte-identical summary JSON; another seed does not.
func TestDeterministicSummary(t *testing.T) {
	y := permutation(2, 2, 8, "ecmp", 0.9, 3, "50us")
	a, _ := json.Marshal(mustRun(t, y).Summary)
	b, _ := json.Marshal(mustRun(t, y).Summary)
	if !bytes.Equal(a, b) {
		t.Fatalf("same seed, different summaries:\n%s\n%s", a, b)
	}
	c, _ := json.Marshal(mustRun(t, permutation(2, 2, 8, "ecmp", 0.9, 4, "50us")).Summary)
	if bytes.Equal(a, c) {
		t.Errorf("seeds 3 and 4 gave identical summaries")
	}
}

// Unloaded one-way latency is the closed form: per link, serialisation of the packet plus the
// hop latency, store-and-forward; 4 links between hosts on different T0s of a 2-tier Clos.
func TestUnloadedLatencyClosedForm(t *testing.T) {
	tr := "  - {pattern: flows, flows: [{src: 0, dst: 7, rate: 1G}]}"
	res := mustRun(t, fmt.Sprintf(closYAML, 2, 1, 8, tr, 1, "100us"))
	// 4160 B at 100 Gb/s = 332.8 ns; + 500 ns per link; 4 links.
	want := 4 * (332.8 + 500) / 1000
	s := res.Summary
	for _, got := range []float64{s.LatencyP50Us, s.LatencyMaxUs} {
		if math.Abs(got-want)/want > 0.002 {
			t.Errorf("latency %.4f us, want %.4f us", got, want)
		}
	}
}

// Results move with their inputs: doubling the offered interval doubles the bytes delivered,
// and doubling the load (below saturation, spread routes) doubles delivered throughput.
func TestDeliveredScalesWithInputs(t *testing.T) {
	short := mustRun(t, permutation(2, 1, 8, "spread", 0.4, 1, "50us")).Summary
	long := mustRun(t, permutation(2, 1, 8, "spread", 0.4, 1, "100us")).Summary
	if r := float64(long.DeliveredPackets) / float64(short.DeliveredPackets); r < 1.9 || r > 2.1 {
		t.Errorf("doubling duration: delivered ratio %.3f, want 1.9-2.1", r)
	}
	double := mustRun(t, permutation(2, 1, 8, "spread", 0.8, 1, "50us")).Summary
	if r := double.DeliveredGbps / short.DeliveredGbps; r < 1.9 || r > 2.1 {
		t.Errorf("doubling load: delivered Gb/s ratio %.3f, want 1.9-2.1", r)
	}
}

// Spraying every packet over all paths of the plane spreads a permutation's load over every
// uplink: none idle.
func TestSprayUsesEveryUplink(t *testing.T) {
	res := mustRun(t, permutation(2, 1, 8, "spray", 0.5, 1, "100us"))
	p := res.Summary.PerPlane[0]
	if p.UplinksIdle != 0 {
		t.Errorf("%d idle uplinks under spraying", p.UplinksIdle)
	}
	if p.UplinkUtilMinPct < 0.5*p.UplinkUtilMeanPct {
		t.Errorf("uplink utilisation min %.1f%% vs mean %.1f%%: spraying should balance", p.UplinkUtilMinPct, p.UplinkUtilMeanPct)
	}
}

// A run whose fabric cannot drain in the budget completes as failed, naming the ports that
// hold packets (port, packets, bytes queued) in summary.json's failure reason and
// not_drained, with its figures kept (the packets still inside in in_flight_packets_at_end);
// run.allow_not_drained accepts it (not failed, not_drained_allowed). A run that drains has
// none of it. Raw traffic, an MRC transport and RoCE collectives (finishTransport) alike.
func TestNotDrainedNamesPorts(t *testing.T) {
	raw := permutation(2, 1, 8, "ecmp", 1, 1, "20us")
	mrc := fmt.Sprintf(mrcYAML, 16, "  - {pattern: permutation, bytes: 1MiB}", "")
	coll := `name: nd-coll
topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 8, host_link: 100G}}
transport: {kind: roce}
workload: {collectives: [{name: ar, op: all_reduce, algorithm: ring, hosts: [0, 1, 2, 3, 4, 5, 6, 7], bytes: 4MiB}]}
run: {seed: 1}
`
	withRun := func(y, extra string) string {
		if strings.Contains(y, "run: {") {
			return strings.Replace(y, "run: {", "run: {"+extra+", ", 1)
		}
		return y + "run: {" + extra + "}\n"
	}
	for _, c := range []struct {
		name, yaml string
		undrained  bool
		allow      bool
	}{
		{"raw, 1ns drain", withRun(raw, "drain: 1ns"), true, false},
		{"raw, 1ns drain allowed", withRun(raw, "drain: 1ns, allow_not_drained: true"), true, true},
		{"raw, default drain", raw, false, false},
		{"mrc, 1ns drain", strings.Replace(mrc, "duration: 20ms", "duration: 5us, drain: 1ns", 1), true, false},
		{"roce collective, 1ns drain", withRun(coll, "drain: 1ns, duration: 100us"), true, false},
	} {
		sc, err := scenario.Parse([]byte(c.yaml))
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, c.yaml)
		}
		res, err := Run(sc)
		if err != nil {
			t.Fatalf("%s: Run: %v; want a completed run", c.name, err)
		}
		s := res.Summary
		nd := s.NotDrained
		if !c.undrained {
			if nd != nil || s.Failed {
				t.Errorf("%s: not_drained %+v, failed %v (%s); want a drained, successful run", c.name, nd, s.Failed, s.FailureReason)
			}
			continue
		}
		if nd == nil || nd.Packets <= 0 || len(nd.FullestPorts) == 0 || nd.FullestPorts[0].Packets <= 0 || s.InFlightAtEnd != nd.Packets {
			t.Fatalf("%s: not_drained %+v, in flight at end %d; want the packets left and the fullest ports", c.name, nd, s.InFlightAtEnd)
		}
		for i, p := range nd.FullestPorts {
			if i > 0 && p.Packets > nd.FullestPorts[i-1].Packets {
				t.Errorf("%s: fullest ports not in order: %+v", c.name, nd.FullestPorts)
			}
		}
		top := nd.FullestPorts[0]
		named := fmt.Sprintf("%s (%d packets, %d B queued)", top.Port, top.Packets, top.QueuedBytes)
		if !s.Complete || s.Failed == c.allow || s.NotDrainedAllowed != c.allow {
			t.Errorf("%s: complete %v, failed %v, not_drained_allowed %v; want complete, failed %v", c.name, s.Complete, s.Failed, s.NotDrainedAllowed, !c.allow)
		}
		if !c.allow && (!strings.HasPrefix(s.FailureReason, "fabric did not drain within run.drain (1ns)") || !strings.Contains(s.FailureReason, named)) {
			t.Errorf("%s: failure reason %q; want it to start with the drain and name %s", c.name, s.FailureReason, named)
		}
		if len(res.Files(sc)) == 0 {
			t.Errorf("%s: no result files", c.name)
		}
	}
}

// MRC-style switch configuration [MRC §2.1]: ECN on fabric hops, none on the last hop, and
// trimming at the last hop. An incast congests only the last hop, so packets are trimmed (and
// the headers delivered) but never CE-marked; an ECMP permutation congests uplinks, where
// ECN-capable packets are marked.
func TestLastHopQueueConfig(t *testing.T) {
	const y = `
name: lasthop
topology:
  clos: {tiers: 2, planes: 1, radix: 8, host_link: 100G}
fabric:
  switch_queue: {limit: 256KiB, ecn: {enabled: true, kmin: 20KiB, kmax: 100KiB, pmax: 0.2}}
  last_hop_queue: {limit: 256KiB, trim: {enabled: true, threshold: 64KiB}}
traffic:
%s
run: {duration: 100us}
`
	incast := mustRun(t, fmt.Sprintf(y, "  - {pattern: incast, senders: [4, 8, 12, 16], receiver: 0, ecn: true, trimmable: true}")).Summary
	if incast.CEMarks != 0 {
		t.Errorf("incast: %d CE marks; the last hop must not mark", incast.CEMarks)
	}
	if incast.TrimmedPackets == 0 || incast.PerPlane[0].Trims != incast.TrimmedPackets {
		t.Errorf("incast: trims %d, trimmed headers delivered %d; want equal and > 0", incast.PerPlane[0].Trims, incast.TrimmedPackets)
	}
	if incast.DroppedPackets != 0 {
		t.Errorf("incast: %d drops; trimming should replace drops", incast.DroppedPackets)
	}
	perm := mustRun(t, fmt.Sprintf(y, "  - {pattern: permutation, path: ecmp, ecn: true}")).Summary
	if perm.CEMarks == 0 {
		t.Errorf("ECMP permutation: no CE marks on congested uplinks")
	}
}

// RunWith's progress reports change nothing in the run.
func TestRunWithProgress(t *testing.T) {
	sc, err := scenario.Parse([]byte(fmt.Sprintf(mrcYAML, 16, "  - {pattern: permutation, bytes: 1MiB}", "")))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Run(sc)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	b, err := RunWith(sc, Options{ProgressEvents: 1000, Progress: func(p Progress) {
		if p.Phase != "run" || p.Events == 0 || p.Bound != sc.Run.Duration {
			t.Errorf("progress %+v", p)
		}
		calls++
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || a.Summary.Events != b.Summary.Events || a.Summary.mrcT().FCTMaxUs != b.Summary.mrcT().FCTMaxUs {
		t.Errorf("%d reports; events %d vs %d, max FCT %v vs %v: progress must not change the run", calls, a.Summary.Events, b.Summary.Events, a.Summary.mrcT().FCTMaxUs, b.Summary.mrcT().FCTMaxUs)
	}
}

// ECMP polarisation: on a 3-tier fat-tree (k = 8), independent per-switch hash seeds spread a
// permutation's inter-pod flows over the T1 uplinks as independent hashing does; one shared
// seed makes every T1 pick the same group index its T0 picked, so each T1 sends everything up
// one uplink of its four.
func TestECMPPolarisation(t *testing.T) {
	const y = `
name: polar
topology:
  clos: {tiers: 3, planes: 1, radix: 8, host_link: 100G}
fabric: {ecmp_seed: %s}
traffic:
  - {pattern: permutation, load: 0.2, path: ecmp}
run: {duration: 200us, sample_interval: 5us}
`
	used := map[string]float64{}
	for _, seeding := range []string{"per_switch", "shared"} {
		res := mustRun(t, fmt.Sprintf(y, seeding))
		var up, busy int
		perT1 := map[fabric.NodeID]int{}
		for i := range res.Net.Ports {
			p := &res.Net.Ports[i]
			n := &res.Net.Nodes[p.Node]
			if n.Kind != fabric.Switch || n.Tier != 1 || !strings.Contains(p.Name, ".up") {
				continue
			}
			up++
			if p.Totals().TxBytes > 0 {
				busy++
				perT1[p.Node]++
			}
		}
		maxPerT1 := 0
		for _, k := range perT1 {
			maxPerT1 = max(maxPerT1, k)
		}
		used[seeding] = float64(busy) / float64(up)
		t.Logf("%s seeds: %d of %d T1 uplinks carry traffic; at most %d per T1", seeding, busy, up, maxPerT1)
		if seeding == "shared" && maxPerT1 != 1 {
			t.Errorf("shared seed: a T1 used %d uplinks; polarisation leaves one", maxPerT1)
		}
	}
	// About 3.5 inter-pod flows cross each T1; hashed independently over 4 uplinks they use
	// 1 - (3/4)^3.5 = 0.63 of them; a shared seed uses at most 1 in 4.
	if used["per_switch"] < 0.5 || used["shared"] > 0.25 {
		t.Errorf("uplinks used: per-switch seeds %.2f (want about 0.63), shared seed %.2f (want <= 0.25)", used["per_switch"], used["shared"])
	}
}
