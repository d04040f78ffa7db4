package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/sim"
	"github.com/lockstepsim/lockstep/transport"
	"github.com/lockstepsim/lockstep/transport/roce/rocenic"
)

// A run whose QPs error fails: the headline names it, summary.json says failed with the
// reason, and the exit code is 1; run.allow_qp_errors: true (a failure study) exits 0 and the
// headline still shows the QP errors. A run whose transfers cannot finish fails the same way
// (the public roce-unfinished case: NCCL's 4.3 s timeout outlasts the run, so no QP errors).
func TestRunOutcome(t *testing.T) {
	file := filepath.Join("testdata", "outcome", "roce-qp-error.yaml")
	dir := t.TempDir()
	code, out, stderr := cli(t, "run", file, "--out", dir, "--quiet")
	if code != 1 || !strings.Contains(out, "RUN FAILED") || !strings.Contains(out, "QP(s) errored") || !strings.Contains(stderr, "failed") {
		t.Fatalf("QP errors: exit %d, stdout %q, stderr %q; want exit 1 and RUN FAILED naming the QP errors", code, out, stderr)
	}
	var s struct {
		Failed bool   `json:"failed"`
		Reason string `json:"failure_reason"`
	}
	js, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &s); err != nil || !s.Failed || !strings.Contains(s.Reason, "errored") {
		t.Errorf("summary.json failed %v reason %q (%v); want failed with the QP errors named", s.Failed, s.Reason, err)
	}

	y, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	allowed := filepath.Join(t.TempDir(), "allowed.yaml")
	if err := os.WriteFile(allowed, []byte(strings.Replace(string(y), "fault_baseline: none}", "fault_baseline: none, allow_qp_errors: true}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = cli(t, "run", allowed, "--out", t.TempDir(), "--quiet")
	if code != 0 || !strings.Contains(out, "QP ERRORS") || strings.Contains(out, "RUN FAILED") {
		t.Errorf("allow_qp_errors: exit %d, stdout %q; want exit 0 with the QP errors in the headline", code, out)
	}

	unfinished := filepath.Join(t.TempDir(), "unfinished.yaml")
	u := strings.Replace(string(y), "roce: {rto: 100us, retry_count: 2}", "roce: {}", 1)
	if err := os.WriteFile(unfinished, []byte(u), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = cli(t, "run", unfinished, "--out", t.TempDir(), "--quiet")
	if code != 1 || !strings.Contains(out, "not finished") {
		t.Errorf("unfinished transfers: exit %d, stdout %q; want exit 1 naming the unfinished transfers", code, out)
	}
	code, out, _ = cli(t, "compare", file, allowed, "--out", t.TempDir(), "--quiet")
	if code != 1 || !strings.Contains(out, "FAILED") || !strings.Contains(out, "QP errors allowed") {
		t.Errorf("compare: exit %d, stdout %q; want exit 1 with the failed run marked", code, out)
	}
}

// The note on unfinished transfers says the run stopped at the QP errors only when the runner
// says it did (stopped_early), not from the rounded end time: a run to a run.duration that is
// not a whole nanosecond (its end rounds below it) idled there and says to raise it.
func TestUnfinishedNoteStoppedEarly(t *testing.T) {
	for _, c := range []struct {
		name         string
		endUs        float64
		stoppedEarly bool
		want         string
	}{
		{"stopped at the errors", 221.4, true, "so the run stopped there"},
		{"ran to a fractional duration", 1000, false, "otherwise raise run.duration"},
		{"ran to the duration, drain after", 1010, false, "otherwise raise run.duration"},
	} {
		sc := &scenario.Scenario{Name: "note"}
		sc.Run.Duration = sim.Millisecond + 400*sim.Picosecond // 1000.0004 us
		res := &runner.Result{Summary: runner.Summary{
			EndUs: c.endUs, DurationUs: c.endUs, StoppedEarly: c.stoppedEarly,
			Transport: &transport.Summary{Kind: "roce", Name: "RoCE", Flows: 2, FlowsCompleted: 1, QPErrors: 1,
				Detail: &rocenic.Detail{QPs: 2, QPsPerPeer: 1}},
		}}
		var b strings.Builder
		printSummary(&b, sc, res)
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("%s: output %q; want the note to say %q", c.name, b.String(), c.want)
		}
	}
}

// TestComparisonNotesUnfinished checks compare's table says when a run's FCT figures cover
// only its finished transfers, and when a run was interrupted.
func TestComparisonNotesUnfinished(t *testing.T) {
	mk := func(done int, complete bool) *runner.Summary {
		return &runner.Summary{Complete: complete, Interrupted: map[bool]string{false: "SIGINT"}[complete], EndUs: 12.5,
			Transport: &transport.Summary{Kind: "roce", Name: "RoCE", Flows: 64, FlowsCompleted: done, FCTP99Us: 10}}
	}
	var b strings.Builder
	printComparison(&b, []string{"a", "b", "c"}, []string{"roce", "roce", "roce"}, []*runner.Summary{mk(64, true), mk(62, true), mk(64, false)})
	out := b.String()
	for _, want := range []string{"note: b: 2 of 64 transfers did not finish; its FCT figures cover the 62 that did", "note: c: interrupted (SIGINT) at 12.5 us"} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "note: a:") {
		t.Errorf("a finished everything, yet has a note:\n%s", out)
	}
}

// TestComparisonNotesAndWarnings: compare prints each run's engine notes (what run.engine
// flow leaves out) and its pre-run warnings under the table, named by run, so a flow/packet
// ratio is never read without them; a run with neither gets no line.
func TestComparisonNotesAndWarnings(t *testing.T) {
	pkt := &runner.Summary{Complete: true, Engine: "packet", Transport: &transport.Summary{Kind: "ib", Flows: 4, FlowsCompleted: 4}}
	flow := &runner.Summary{Complete: true, Engine: "flow", Notes: []string{"transport.ib.cc: not modelled at run.engine flow"},
		Transport: &transport.Summary{Kind: "ib", Flows: 4, FlowsCompleted: 4, Warnings: []string{"fabric.adaptive_routing: threshold 8KiB given with enabled false"}}}
	var b strings.Builder
	printComparison(&b, []string{"x-packet", "x-flow"}, []string{"ib", "ib"}, []*runner.Summary{pkt, flow})
	out := b.String()
	for _, want := range []string{"note: x-flow: transport.ib.cc: not modelled at run.engine flow", "warning: x-flow: fabric.adaptive_routing: threshold 8KiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "x-packet: ") {
		t.Errorf("the packet run has neither notes nor warnings, yet has a line:\n%s", out)
	}
}

// A collective that is not done when run.duration ends fails like unfinished transfers: the
// results folder is written (summary.json failed, with the waiting ranks in the reason; the
// rows of the sizes that finished kept), the headline says RUN FAILED, and the exit code is 1
// — at packet and at flow level. 64 KiB finishes in about 13 us at 100G, 4 MiB cannot in 40 us.
func TestCollectiveStallFails(t *testing.T) {
	for _, engine := range []string{"packet", "flow"} {
		t.Run(engine, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "stall.yaml")
			os.WriteFile(file, []byte(`name: stall
topology:
  clos: {tiers: 2, planes: 1, radix: 8, hosts: 8, host_link: 100G}
transport: {kind: mrc}
workload:
  collectives:
    - {op: all_reduce, bytes: 64KiB, max_bytes: 4MiB, factor: 64}
run: {duration: 40us, engine: `+engine+`}
`), 0o644)
			out := filepath.Join(dir, "res")
			code, stdout, stderr := cli(t, "run", file, "--out", out, "--quiet")
			if code != 1 || !strings.Contains(stdout, "RUN FAILED") || !strings.Contains(stderr, "not done at 40us") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 1, RUN FAILED, the collective not done", code, stdout, stderr)
			}
			var s struct {
				Failed      bool   `json:"failed"`
				Reason      string `json:"failure_reason"`
				Complete    bool   `json:"complete"`
				Collectives []struct {
					SizeBytes int64 `json:"size_bytes"`
				} `json:"collectives"`
			}
			js, err := os.ReadFile(filepath.Join(out, "summary.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(js, &s); err != nil || !s.Failed || !s.Complete || !strings.Contains(s.Reason, "collective(s) not done") {
				t.Errorf("summary.json failed %v complete %v reason %q (%v)", s.Failed, s.Complete, s.Reason, err)
			}
			if len(s.Collectives) != 1 || s.Collectives[0].SizeBytes != 64<<10 {
				t.Errorf("rows %+v; want the 64 KiB row that finished, alone", s.Collectives)
			}
		})
	}
}

// Unbounded htsim flows (size 0) send until run.duration and are stopped there: the run
// succeeds (exit 0), summary.json counts them, the bounded transfer finishes.
func TestUnboundedFlowsDoNotFail(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "u.cm"), []byte("Nodes 4\nConnections 2\n0->1 id 1 start 0 size 0\n2->3 id 2 start 0 size 65536\n"), 0o644)
	file := filepath.Join(dir, "u.yaml")
	os.WriteFile(file, []byte("name: unb\ntopology:\n  clos: {tiers: 2, planes: 1, radix: 4, hosts: 4, host_link: 100G}\ntransport: {kind: mrc}\ntraffic:\n  - {pattern: file, format: htsim, file: u.cm}\nrun: {duration: 50us}\n"), 0o644)
	out := filepath.Join(dir, "res")
	code, stdout, stderr := cli(t, "run", file, "--out", out, "--quiet")
	if code != 0 || !strings.Contains(stdout, "unbounded flows: 1") || strings.Contains(stdout, "RUN FAILED") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 0 naming the unbounded flow", code, stdout, stderr)
	}
	var s struct {
		Unbounded int  `json:"unbounded_flows"`
		Failed    bool `json:"failed"`
	}
	js, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil || json.Unmarshal(js, &s) != nil || s.Unbounded != 1 || s.Failed {
		t.Errorf("summary.json unbounded_flows %d failed %v (%v); want 1, false", s.Unbounded, s.Failed, err)
	}
}

// TestFlowLevelNotesPrinted: an InfiniBand run with cc at run.engine flow prints the note
// that IB congestion control is not modelled there ("note: transport.ib.cc: ...") and keeps
// it in summary.json's notes; at packet level neither has it.
func TestFlowLevelNotesPrinted(t *testing.T) {
	for _, engine := range []string{"flow", "packet"} {
		file := filepath.Join(t.TempDir(), "ibcc.yaml")
		y := "name: ibcc\ntopology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 8, host_link: 100G}}\n" +
			"transport: {kind: ib, ib: {cc: {enabled: true}}}\ntraffic: [{pattern: permutation, bytes: 64KB}]\n" +
			"run: {seed: 1, engine: " + engine + "}\n"
		if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		code, out, stderr := cli(t, "run", file, "--out", dir, "--quiet")
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", engine, code, stderr)
		}
		var s struct {
			Notes []string `json:"notes"`
		}
		if err := json.Unmarshal(readFile(t, filepath.Join(dir, "summary.json")), &s); err != nil {
			t.Fatal(err)
		}
		want := engine == "flow"
		printed := strings.Contains(out, "note: transport.ib.cc: InfiniBand congestion control")
		inJSON := len(s.Notes) == 1 && strings.HasPrefix(s.Notes[0], "transport.ib.cc: ")
		if printed != want || inJSON != want {
			t.Errorf("%s: printed %v, summary.json notes %q; want the transport.ib.cc note in both: %v\n%s", engine, printed, s.Notes, want, out)
		}
	}
}

// TestNotDrainedRun: a run whose fabric does not drain in run.drain (1 ns after a raw ECMP
// permutation at full load for 20 us) completes as failed: exit 1, the headline RUN FAILED naming the
// fullest port with its packets and bytes queued, summary.json failed with the same reason
// and not_drained, and every output file written; with run.allow_not_drained it exits 0 and
// the headline says NOT DRAINED, accepted.
func TestNotDrainedRun(t *testing.T) {
	const y = "name: nd\ntopology: {clos: {tiers: 2, planes: 1, radix: 8, host_link: 100G, hop_latency: 500ns}}\n" +
		"fabric: {switch_queue: {limit: 256KiB}}\ntraffic: [{pattern: permutation, path: ecmp, load: 1}]\nrun: {seed: 1, duration: 20us, drain: 1ns%s}\n"
	for _, allow := range []bool{false, true} {
		extra := ""
		if allow {
			extra = ", allow_not_drained: true"
		}
		file := filepath.Join(t.TempDir(), "nd.yaml")
		if err := os.WriteFile(file, []byte(strings.Replace(y, "%s", extra, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		code, out, stderr := cli(t, "run", file, "--out", dir, "--quiet")
		var s runner.Summary
		if err := json.Unmarshal(readFile(t, filepath.Join(dir, "summary.json")), &s); err != nil {
			t.Fatalf("allow %v: summary.json: %v (exit %d, stderr %q)", allow, err, code, stderr)
		}
		nd := s.NotDrained
		if nd == nil || len(nd.FullestPorts) == 0 || nd.Packets <= 0 {
			t.Fatalf("allow %v: not_drained %+v; want the packets left and the fullest ports", allow, nd)
		}
		top := nd.FullestPorts[0]
		named := fmt.Sprintf("%s (%d packets, %d B queued)", top.Port, top.Packets, top.QueuedBytes)
		if allow {
			if code != 0 || s.Failed || !s.NotDrainedAllowed || !strings.Contains(out, "NOT DRAINED: fabric did not drain") || !strings.Contains(out, named) {
				t.Errorf("allowed: exit %d, failed %v, allowed %v, stdout %q; want exit 0 and NOT DRAINED naming %s", code, s.Failed, s.NotDrainedAllowed, out, named)
			}
		} else {
			if code != 1 || !s.Failed || !strings.Contains(s.FailureReason, named) || !strings.Contains(out, "RUN FAILED: fabric did not drain within run.drain (1ns)") || !strings.Contains(out, named) {
				t.Errorf("exit %d, failed %v, reason %q, stdout %q; want exit 1 and RUN FAILED naming %s", code, s.Failed, s.FailureReason, out, named)
			}
		}
		for _, f := range []string{"scenario.yaml", "flows.csv", "links.csv", "topology.json", "report.html", "summary.json"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("allow %v: %s not written: %v", allow, f, err)
			}
		}
	}
}

// TestRunOutcomeIBTimeoutWait: an InfiniBand run that ends with QPs waiting for the local ACK
// timeout fails (exit 1) and says so where a user looks: the headline (RUN FAILED), the
// terminal note on the unfinished transfers and summary.json's failure_reason and
// transport.timeout_wait, each naming the QPs, the timeout with transport.ib.timeout and what
// to change, instead of only "raise run.duration".
func TestRunOutcomeIBTimeoutWait(t *testing.T) {
	file := filepath.Join("testdata", "outcome", "ib-tail-loss.yaml")
	dir := t.TempDir()
	code, out, _ := cli(t, "run", file, "--out", dir, "--quiet")
	const wait = "2 QP(s) lost a packet no NAK will recover (a lost tail, or a resend lost after its NAK) and were waiting for the transport's retransmission timeout, 1.073741824s (transport.ib.timeout 18: 4.096us x 2^18), when the run stopped (the first: qp 0 (h1->h0 plane 0), PSN "
	const fix = "raise run.duration past that, or lower transport.ib.timeout (each step down halves the timeout; 14 is 67.108864ms)"
	if code != 1 {
		t.Fatalf("exit %d; want 1 (a failed run)\n%s", code, out)
	}
	var head, note string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "RUN FAILED: "):
			head = l
		case strings.HasPrefix(l, "note: 2 transfers had not finished"):
			note = l
		}
	}
	for what, l := range map[string]string{"headline": head, "note": note} {
		if !strings.Contains(l, wait) || !strings.Contains(l, fix) {
			t.Errorf("%s %q; want it to name the wait (%q) and the fix (%q)", what, l, wait, fix)
		}
	}
	if strings.Contains(note, "; raise run.duration") {
		t.Errorf("note %q still ends with only \"raise run.duration\"", note)
	}
	var s struct {
		Reason    string `json:"failure_reason"`
		Transport struct {
			Wait *transport.TimeoutWait `json:"timeout_wait"`
		} `json:"transport"`
	}
	js, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &s); err != nil || !strings.Contains(s.Reason, wait) {
		t.Fatalf("summary.json failure_reason %q (%v); want the wait named", s.Reason, err)
	}
	if w := s.Transport.Wait; w == nil || w.QPs != 2 || w.TimeoutUs != 1073741.824 || w.Setting != "transport.ib.timeout 18: 4.096us x 2^18" {
		t.Errorf("summary.json transport.timeout_wait %+v; want 2 QPs, timeout_us 1073741.824, setting transport.ib.timeout 18", w)
	}
}
