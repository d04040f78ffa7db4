package runner

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
)

// incastYAML is an N -> 1 incast of size bytes per sender on a 2-tier Clos of radix-64
// switches (2,048 hosts) with planes planes, run at engine.
func incastYAML(kind, engine string, n, planes int, size string) string {
	senders := make([]string, n)
	for i := range senders {
		senders[i] = fmt.Sprint(i + 1)
	}
	return fmt.Sprintf(`topology: {clos: {tiers: 2, planes: %d, radix: 64, host_link: 100G}}
transport: {kind: %s}
traffic: [{pattern: incast, senders: [%s], receiver: 0, bytes: %s}]
run: {engine: %s, duration: 1s}
`, planes, kind, strings.Join(senders, ","), size, engine)
}

// TestFlowTrafficIncastClosedForm: an N -> 1 incast at flow level ends at N x S / C plus one
// path latency and its ACK's return, C the receiver's payload rate over every plane (the
// host links at their payload share), for fan-in 2 to 1023, 1 to 8 planes, MRC and RoCE.
func TestFlowTrafficIncastClosedForm(t *testing.T) {
	for _, kind := range []string{"mrc", "roce"} {
		for _, c := range []struct{ n, planes int }{{2, 1}, {8, 4}, {64, 8}, {255, 1}, {1023, 2}} {
			res := mustRun(t, incastYAML(kind, "flow", c.n, c.planes, "1MiB"))
			tr := res.Summary.Transport
			if tr.FlowsCompleted != c.n || res.Summary.Failed {
				t.Fatalf("%s %d->1 over %d planes: %d of %d done, failed %v (%s)", kind, c.n, c.planes, tr.FlowsCompleted, c.n, res.Summary.Failed, res.Summary.FailureReason)
			}
			ft := res.Endpoint.(*flowTraffic)
			share := payloadShare(ft.model)
			c0 := 100e9 * float64(c.planes) * share
			want := float64(c.n) * (1 << 20) * 8 / c0 * 1e6 // us
			rtt := tr.BaseRTTUs
			if got := tr.JCTUs; got < want || got > want+rtt {
				t.Errorf("%s %d->1 over %d planes: JCT %.3f us; want N x S / C = %.3f us plus at most the base RTT %.3f us", kind, c.n, c.planes, got, want, rtt)
			}
		}
	}
}

// TestFlowTrafficPermutationLineRate: a 1,024-host permutation on a non-blocking 2-tier Clos
// under MRC runs every transfer at line rate at flow level (its FCT its ideal, to rounding);
// under RoCE, ECMP hashing collides some flows and the slowest is below line rate.
func TestFlowTrafficPermutationLineRate(t *testing.T) {
	const topo = "topology: {clos: {tiers: 2, planes: 4, radix: 64, hosts: 1024, host_link: 400G}}\n"
	for _, kind := range []string{"mrc", "roce"} {
		res := mustRun(t, topo+"transport: {kind: "+kind+"}\ntraffic: [{pattern: permutation, bytes: 8MiB}]\nrun: {engine: flow}\n")
		tr := res.Summary.Transport
		if tr.Flows != 1024 || tr.FlowsCompleted != 1024 {
			t.Fatalf("%s: %d of %d flows done", kind, tr.FlowsCompleted, tr.Flows)
		}
		switch kind {
		case "mrc":
			// Active throughput: payload placed by the first completion (every flow's last
			// byte sent, plus the shortest path's latency) over that time.
			if tr.FCTOverIdealMax > 1.001 || tr.ActiveThroughputMinOfLine < 0.9 || tr.ActiveThroughputMeanOfLine > 0.9684 {
				t.Errorf("mrc: FCT/ideal worst %.4f, active throughput min %.3f mean %.3f of line; want 1 and at most the payload share (0.968)", tr.FCTOverIdealMax, tr.ActiveThroughputMinOfLine, tr.ActiveThroughputMeanOfLine)
			}
		case "roce":
			if tr.FCTOverIdealMax < 1.5 {
				t.Errorf("roce: FCT/ideal worst %.3f; want ECMP collisions (>= 1.5: two QPs on one uplink)", tr.FCTOverIdealMax)
			}
		}
	}
}

// TestFlowTrafficAgreesWithPacket: traffic at both levels on small fabrics, the flow level's
// JCT within the tolerance of the packet level's (10% MRC, 15% RoCE) where the fluid
// model holds: incasts (the receiver's link is the bottleneck at both levels) and MRC's
// permutation (spraying reaches line rate). docs/flow-agreement.md lists the rest.
func TestFlowTrafficAgreesWithPacket(t *testing.T) {
	const topo = "topology: {clos: {tiers: 2, planes: %d, radix: 16, hosts: 64, host_link: 100G}}\n"
	senders := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint(i + 1)
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		name, kind, traffic string
		planes              int
		tol                 float64
	}{
		{"mrc incast 8", "mrc", "[{pattern: incast, senders: [" + senders(8) + "], receiver: 0, bytes: 1MiB}]", 2, 0.10},
		{"mrc incast 32", "mrc", "[{pattern: incast, senders: [" + senders(32) + "], receiver: 0, bytes: 256KiB}]", 1, 0.10},
		{"mrc permutation", "mrc", "[{pattern: permutation, bytes: 2MiB}]", 2, 0.10},
		{"mrc permutation 4 planes", "mrc", "[{pattern: permutation, bytes: 2MiB}]", 4, 0.10},
		{"roce incast 8", "roce", "[{pattern: incast, senders: [" + senders(8) + "], receiver: 0, bytes: 1MiB}]", 2, 0.15},
		{"roce incast 32", "roce", "[{pattern: incast, senders: [" + senders(32) + "], receiver: 0, bytes: 256KiB}]", 1, 0.15},
	} {
		var jct [2]float64
		for i, engine := range []string{"packet", "flow"} {
			res := mustRun(t, fmt.Sprintf(topo, c.planes)+"transport: {kind: "+c.kind+"}\ntraffic: "+c.traffic+"\nrun: {engine: "+engine+"}\n")
			if res.Summary.Failed {
				t.Fatalf("%s at %s level failed: %s", c.name, engine, res.Summary.FailureReason)
			}
			jct[i] = res.Summary.Transport.JCTUs
		}
		t.Logf("%s: JCT packet %.1f us, flow %.1f us, flow/packet %.3f", c.name, jct[0], jct[1], jct[1]/jct[0])
		if r := jct[1] / jct[0]; math.Abs(r-1) > c.tol {
			t.Errorf("%s: JCT packet %.1f us, flow %.1f us: ratio %.3f; want within %.0f%%", c.name, jct[0], jct[1], r, 100*c.tol)
		}
	}
}

// TestFlowTrafficOutputs: a flow-level traffic run writes one flows.csv row per transfer
// with its FCT, a links.csv series, the topology's sizes in summary.json, and is
// byte-identical when run again.
func TestFlowTrafficOutputs(t *testing.T) {
	const y = "topology: {clos: {tiers: 2, planes: 2, radix: 16, hosts: 64, host_link: 100G}}\ntransport: {kind: roce}\n" +
		"traffic: [{pattern: permutation, bytes: 1MiB}, {pattern: incast, senders: [1, 2, 3], receiver: 5, bytes: 512KiB, start: 10us}]\nrun: {engine: flow, seed: 7}\n"
	var prev []byte
	for range 2 {
		res := mustRun(t, y)
		s := res.Summary
		if s.Hosts != 64 || s.Planes != 2 || s.Switches != 32 || s.Links != 256 || s.Engine != "flow" {
			t.Errorf("summary sizes: hosts %d planes %d switches %d links %d engine %q; want 64, 2, 32, 256, flow", s.Hosts, s.Planes, s.Switches, s.Links, s.Engine)
		}
		var b bytes.Buffer
		if err := WriteFlowsCSV(&b, res); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(bytes.NewReader(b.Bytes())).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1+67 {
			t.Fatalf("flows.csv: %d rows; want a header and 67", len(rows))
		}
		for _, r := range rows[1:] {
			if r[8] == "" || r[9] == "" || r[6] != r[5] {
				t.Errorf("flows.csv row %v: want done and fct set, delivered = bytes", r)
			}
		}
		if res.Links == nil || len(res.Links.starts) == 0 {
			t.Errorf("no links.csv series at flow level")
		}
		js, err := json.Marshal(res.Summary)
		if err != nil {
			t.Fatal(err)
		}
		js = append(js, b.Bytes()...)
		if prev != nil && !bytes.Equal(prev, js) {
			t.Errorf("two runs of one scenario differ")
		}
		prev = js
	}
}

// TestFlowTrafficFaults: faults act on flow-level traffic as the transport reacts. MRC
// moves off a dead T0-T1 link (every transfer finishes, later than without the fault); RoCE
// waits for routing to reconverge (fabric.reconvergence) and its stalled QPs resume at their
// next retransmission timer; with reconvergence beyond the QPs' retry budget they give up,
// the run fails naming them, and the fault table blames the failure.
func TestFlowTrafficFaults(t *testing.T) {
	const base = "topology: {clos: {tiers: 2, planes: 2, radix: 16, hosts: 64, host_link: 100G}}\n" +
		"traffic: [{pattern: permutation, bytes: 4MiB}]\nfaults: [{at: 20us, link: p0.t0-0.up0, action: down}]\n"
	mrc := mustRun(t, base+"transport: {kind: mrc}\nrun: {engine: flow, duration: 5ms}\n")
	if s := mrc.Summary; s.Failed || s.Transport.FlowsCompleted != 64 || s.FaultSlowdownUs <= 0 || len(s.Faults) != 1 {
		t.Errorf("mrc: failed %v (%s), %d of 64 done, slowdown %.1f us, %d fault rows; want all done, slower, one row", s.Failed, s.FailureReason, s.Transport.FlowsCompleted, s.FaultSlowdownUs, len(s.Faults))
	}
	// The stalled QPs resume at their first retransmission after reconvergence: 20 + 100 us.
	roce := mustRun(t, base+"transport: {kind: roce, roce: {rto: 100us}}\nfabric: {reconvergence: 50us}\nrun: {engine: flow, duration: 5ms}\n")
	if s := roce.Summary; s.Failed || s.Transport.FlowsCompleted != 64 || s.Transport.JCTUs < 120 {
		t.Errorf("roce, 50 us reconvergence, 100 us RTO: failed %v (%s), %d of 64 done, JCT %.1f us; want all done after 120 us", s.Failed, s.FailureReason, s.Transport.FlowsCompleted, s.Transport.JCTUs)
	}
	// The fault table's detect column is the modelled reaction: none for MRC's bundles (a
	// capacity loss at once), the first go-back-N resend for RoCE (a NAK once routing
	// reconverged, 50 us after the failure, for the QPs still sending), MRC's endpoint
	// reroute (RerouteAfter) off sampled paths on a torus.
	if f := mrc.Summary.Faults; len(f) == 1 && f[0].DetectUs != nil {
		t.Errorf("mrc on bundles: detect %.1f us; want none (no reaction modelled)", *f[0].DetectUs)
	}
	if f := roce.Summary.Faults; len(f) != 1 || f[0].DetectUs == nil || *f[0].DetectUs < 50 || *f[0].DetectUs > 100 || f[0].LastRetxUs == nil {
		t.Errorf("roce: fault rows %+v; want detect between the reconvergence (50 us) and the RTO (100 us), and a last retx", f)
	}
	torus := mustRun(t, "topology: {torus: {dims: 4x4x4, link_rate: 100G}}\ntraffic: [{pattern: permutation, bytes: 4MiB}]\n"+
		"faults: [{at: 20us, link: x0y0z0.p0, action: down, for: 100us}]\ntransport: {kind: mrc}\nrun: {engine: flow, duration: 5ms}\n")
	if f := torus.Summary.Faults; len(f) != 1 || f[0].DetectUs == nil || *f[0].DetectUs <= 0 || *f[0].DetectUs > 200 {
		t.Errorf("mrc on a torus: fault rows %+v; want detect at its endpoint reroute (0-200 us)", f)
	} else {
		t.Logf("mrc on a torus: detect %.1f us, last retx %v us; roce: detect %.1f us", *f[0].DetectUs, *f[0].LastRetxUs, *roce.Summary.Faults[0].DetectUs)
	}
	gaveUp := mustRun(t, base+"transport: {kind: roce, roce: {rto: 20us, retry_count: 2}}\nrun: {engine: flow, duration: 5ms}\n")
	s := gaveUp.Summary
	if !s.Failed || s.Transport.QPErrors == 0 || !strings.Contains(s.FailureReason, "QP") || len(s.Transport.QPErrorList) == 0 {
		t.Fatalf("roce, 1 s reconvergence, 60 us retry budget: failed %v (%q), %d QP errors; want a failed run naming its QP errors", s.Failed, s.FailureReason, s.Transport.QPErrors)
	}
	if e := s.Transport.QPErrorList[0]; !strings.Contains(e, "p0.t0-0") || !strings.Contains(e, "faults[0]") {
		t.Errorf("QP error %q: want the dead link and the fault named", e)
	}
	if !s.StoppedEarly || s.EndUs > 1000 {
		t.Errorf("stopped early %v at %.1f us: want the run to stop once only errored transfers are left", s.StoppedEarly, s.EndUs)
	}
}

// TestFlowTrafficTriggers: an htsim connection matrix with triggers runs at flow level, each
// triggered flow starting when its trigger fires (a flow's completion).
func TestFlowTrafficTriggers(t *testing.T) {
	dir := t.TempDir()
	cm := "Nodes 16\nConnections 2\nTriggers 1\n0->1 start 0 size 1000000 send_done_trigger 1\n2->3 trigger 1 size 1000000\ntrigger id 1 oneshot\n"
	path := filepath.Join(dir, "t.cm")
	if err := os.WriteFile(path, []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	res := mustRun(t, "topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G}}\ntransport: {kind: mrc}\n"+
		"traffic: [{pattern: file, file: "+path+", format: htsim}]\nrun: {engine: flow}\n")
	fl := res.Endpoint.Flows()
	if len(fl) != 2 || fl[1].Start != fl[0].Done || fl[1].Done <= fl[1].Start {
		t.Fatalf("flows %+v: want the second to start at the first's completion", fl)
	}
}

// TestFlowTrafficBadInput: what the flow level cannot carry is refused with the field named.
func TestFlowTrafficBadInput(t *testing.T) {
	_, err := scenario.Parse([]byte("topology: {clos: {tiers: 2, planes: 1, radix: 8, host_link: 100G}}\ntraffic: [{pattern: permutation, load: 0.5}]\nrun: {engine: flow}\n"))
	if err == nil || !strings.Contains(err.Error(), "run.engine") || !strings.Contains(err.Error(), "raw") {
		t.Errorf("raw traffic at flow level: %v; want a run.engine error naming raw traffic", err)
	}
}

// TestFlowTrafficIdleFCTIsIdeal: one transfer alone on an idle fabric takes its ideal FCT
// at flow level (nic.IdealTransfer: wire bytes at the NIC rate plus its largest packet's
// round trip), for sizes below one packet to many, on 1 and 4 planes, MRC and RoCE: the
// fluid rate's headers, the per-hop store and forward and the ACK's return add up.
func TestFlowTrafficIdleFCTIsIdeal(t *testing.T) {
	for _, kind := range []string{"mrc", "roce"} {
		for _, planes := range []int{1, 4} {
			for _, size := range []string{"1B", "1000B", "4095B", "100000B", "1MiB"} {
				res := mustRun(t, fmt.Sprintf("topology: {clos: {tiers: 2, planes: %d, radix: 16, hosts: 64, host_link: 100G}}\ntransport: {kind: %s}\n"+
					"traffic: [{pattern: flows, flows: [{src: 0, dst: 63, bytes: %s}]}]\nrun: {engine: flow}\n", planes, kind, size))
				if r := res.Summary.Transport.FCTOverIdealMax; r < 1 || r > 1.002 {
					t.Errorf("%s, %d planes, %s: FCT/ideal %.4f; want 1", kind, planes, size, r)
				}
			}
		}
	}
}

// TestFlowTrafficRoCEShortOutage: a RoCE QP whose NIC port goes down for 10 us while it still
// has megabytes to send resumes when the port returns (its new packets' PSN gap is NAKed:
// go-back-N without the 4.3 s timer), so the transfer ends about 10 us late; one whose
// transfer was all sent into the outage waits its RTO.
func TestFlowTrafficRoCEShortOutage(t *testing.T) {
	const y = "topology: {clos: {tiers: 2, planes: 1, radix: 16, hosts: 64, host_link: 100G}}\ntransport: {kind: roce, roce: {rto: 1ms}}\n" +
		"traffic: [{pattern: flows, flows: [{src: 0, dst: 63, bytes: %s}]}]\nrun: {engine: flow, duration: 10ms}\n"
	for _, c := range []struct {
		size, fault      string
		minLate, maxLate float64 // us beyond the clean run
	}{
		{"8MiB", "{at: 50us, link: h0.p0, action: down, for: 10us}", 9.9, 11},     // still sending when the port returns: NAK recovery
		{"256KiB", "{at: 10us, link: h0.p0, action: down, for: 30us}", 900, 1100}, // the rest (11 us) all sent into the outage: its RTO, 1 ms after its stall
	} {
		clean := mustRun(t, fmt.Sprintf(y, c.size)).Summary.Transport.JCTUs
		hit := mustRun(t, fmt.Sprintf(y, c.size)+"faults: ["+c.fault+"]\n").Summary
		if late := hit.Transport.JCTUs - clean; hit.Failed || late < c.minLate || late > c.maxLate {
			t.Errorf("%s: JCT %.1f us with a 10 us outage, %.1f us without (failed %v): %.1f us late; want %.0f to %.0f", c.size, hit.Transport.JCTUs, clean, hit.Failed, late, c.minLate, c.maxLate)
		}
	}
}
