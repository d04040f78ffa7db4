package runner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/scenario"
)

// TestCollectiveFlowFaults: faults act on workload.collectives at flow level as on a
// training step's: MRC moves a ring off a host's dead NIC port onto its other planes (done,
// slower); RoCE waits for routing to reconverge and its RTO, then finishes; a RoCE QP whose
// retry budget runs out first stops the run as a failed one naming the collective, the QP,
// the dead link and the fault.
func TestCollectiveFlowFaults(t *testing.T) {
	const topo = "topology: {clos: {tiers: 2, planes: 2, radix: 16, hosts: 32, host_link: 100G}}\n" +
		"workload: {collectives: [{op: all_reduce, algorithm: ring, bytes: 16MiB}]}\n"
	collTime := func(res *Result) float64 {
		t.Helper()
		if res.Summary.Failed || len(res.Summary.Collectives) != 1 {
			t.Fatalf("failed %v (%s), %d rows", res.Summary.Failed, res.Summary.FailureReason, len(res.Summary.Collectives))
		}
		return res.Summary.Collectives[0].TimeUs
	}
	for _, c := range []struct{ name, transport, fault, fabric string }{
		{"mrc, a NIC port down", "{kind: mrc}", "{at: 100us, link: h3.p0, action: down}", ""},
		{"roce, a T0 uplink down, 50 us reconvergence, 100 us RTO", "{kind: roce, roce: {rto: 100us}}", "{at: 100us, link: p0.t0-0.up0, action: down}", "fabric: {reconvergence: 50us}\n"},
	} {
		base := topo + "transport: " + c.transport + "\n" + c.fabric + "run: {engine: flow}\n"
		clean := collTime(mustRun(t, base))
		hit := mustRun(t, base+"faults: ["+c.fault+"]\n")
		if got := collTime(hit); got <= clean {
			t.Errorf("%s: %.1f us with the fault, %.1f us without; want slower", c.name, got, clean)
		}
		if len(hit.Faults) != 1 {
			t.Errorf("%s: %d fault events recorded; want 1", c.name, len(hit.Faults))
		}
	}
	res := mustRun(t, topo+"transport: {kind: roce, roce: {rto: 50us, retry_count: 2}}\nrun: {engine: flow}\nfaults: [{at: 100us, link: p0.t0-0.up0, action: down}]\n")
	s := res.Summary
	for _, want := range []string{"cannot finish", "QP h", "p0.t0-0", "faults[0]"} {
		if !s.Failed || !strings.Contains(s.FailureReason, want) {
			t.Errorf("roce, 150 us retry budget, 1 s reconvergence: failed %v, reason %q; want it to contain %q", s.Failed, s.FailureReason, want)
		}
	}
}

// TestChakraFlowFaults: a Chakra trace at flow level feels its faults: a NIC port of one
// rank down under MRC slows the data-parallel step (its traffic moves to the other planes);
// under RoCE with a short retry budget the QPs bound to that port (an RC QP cannot move
// ports) give up and the run fails naming one. (A T0 uplink is no test of it: whether a QP
// hashes onto one uplink of 8 is the hash's choice.)
func TestChakraFlowFaults(t *testing.T) {
	trace := "workload:\n  chakra: {path: ../workload/chakra/testdata/dp16/dp, algorithm: ring}\n"
	step := func(tp, faults string) *Result {
		return mustRun(t, "name: dp16\n"+fmt.Sprintf(chakraFabric, tp)+trace+"run: {engine: flow}\n"+faults)
	}
	clean := step("{kind: mrc}", "")
	hit := step("{kind: mrc}", "faults: [{at: 10us, link: h3.p0, action: down}]\n")
	if hit.Summary.Failed || hit.Summary.Chakra.StepTimeUs <= clean.Summary.Chakra.StepTimeUs {
		t.Errorf("mrc: step %.1f us with h3.p0 down, %.1f us without (failed %v: %s); want slower", hit.Summary.Chakra.StepTimeUs, clean.Summary.Chakra.StepTimeUs, hit.Summary.Failed, hit.Summary.FailureReason)
	}
	// A trace that cannot finish is an error, as at packet level (runner/chakra.go settle).
	sc, err := scenario.Parse([]byte("name: dp16\n" + fmt.Sprintf(chakraFabric, "{kind: roce, roce: {rto: 20us, retry_count: 1}}") + trace +
		"run: {engine: flow}\nfaults: [{at: 10us, link: h3.p0, action: down}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(sc); err == nil || !strings.Contains(err.Error(), "gave up") || !strings.Contains(err.Error(), "faults[0]") {
		t.Errorf("roce with a 40 us retry budget: %v; want an error naming the QP that gave up and the fault", err)
	}
}
