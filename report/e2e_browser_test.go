package report_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockstepsim/lockstep/report"
	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
)

// runInto runs the scenario yaml into a fresh results folder and returns it.
func runInto(t *testing.T, name, yaml string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if strings.Contains(yaml, "\nrun: {") {
		yaml = strings.Replace(yaml, "\nrun: {", fmt.Sprintf("\nrun: {out: %q, ", dir), 1)
	} else {
		yaml += fmt.Sprintf("\nrun: {out: %q}", dir)
	}
	sc, err := scenario.Parse([]byte(yaml + "\n"))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	res, err := runner.Run(sc)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	js, err := json.MarshalIndent(res.Summary, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.WriteResults(sc, js, res); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return dir
}

// Small real runs for the end-to-end browser test (issue 23): a collective sweep, a
// permutation with a failure, a training run at each engine (and creditsIncast over
// InfiniBand, credits_test.go).
const (
	e2eSweep = `name: sweep
topology: {clos: {tiers: 2, planes: 2, radix: 8, hosts: 16, host_link: 100G, hop_latency: 500ns}}
transport: {kind: mrc}
workload: {collectives: [{name: ar, op: all_reduce, ranks: 8, bytes: 64KiB, max_bytes: 4MiB}]}`
	e2ePerm = `name: perm-fail
topology: {clos: {tiers: 2, planes: 2, radix: 8, hosts: 16, host_link: 100G, hop_latency: 500ns}}
transport: {kind: mrc}
traffic: [{pattern: permutation, bytes: 2MiB}]
faults: [{at: 20us, link: h0.p1, action: down}]`
	e2eTrain = `name: train-%s
topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 400G, hop_latency: 500ns}}
transport: {kind: %s}
workload: {training: {model: {name: tiny, layers: 4, hidden: 512, heads: 8, ffn: 2048, vocab: 8192, seq_len: 256, global_batch: 16, micro_batch: 1}, gpu: {preset: h100}, plan: {tp: 1, pp: 2}}}`
)

// TestReportsOfRealRunsInChromium opens the reports of real runs in headless Chromium:
// every plot present and drawn, no console errors, no network requests; and a compare of
// four runs. Failures save screenshots (go test -artifacts keeps them).
func TestReportsOfRealRunsInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("runs simulations")
	}
	b := report.NewTestBrowser(t, 90*time.Second)
	sweep := runInto(t, "sweep", e2eSweep)
	report.OpenAndCheck(t, b, filepath.Join(sweep, report.ReportFile), []string{report.IDBusbw, report.IDUtil, report.IDQueue, report.IDTopology}, "collective sweep")
	perm := runInto(t, "perm", e2ePerm)
	report.OpenAndCheck(t, b, filepath.Join(perm, report.ReportFile), []string{report.IDFCT, report.IDUtil, report.IDQueue, report.IDEV, report.IDFaults, report.IDTopology}, "permutation with a failure")
	ibInc := runInto(t, "ib-incast", strings.ReplaceAll(creditsIncast, "%s", "ib"))
	report.OpenAndCheck(t, b, filepath.Join(ibInc, report.ReportFile), []string{report.IDFCT, report.IDUtil, report.IDCredits, report.IDTopology}, "InfiniBand incast")
	for _, c := range []struct{ engine, transport string }{{"analytic", "ideal"}, {"flow", "mrc"}, {"packet", "mrc"}} {
		y := fmt.Sprintf(e2eTrain, c.engine, c.transport)
		if c.engine == "packet" {
			y += "\nrun: {engine: packet}"
		}
		dir := runInto(t, "train-"+c.engine, y)
		ids := []string{report.IDPower, report.IDSteps, report.IDGantt, report.IDTopology}
		if c.engine != "analytic" {
			ids = append(ids, report.IDUtil)
		}
		report.OpenAndCheck(t, b, filepath.Join(dir, report.ReportFile), ids, "training at "+c.engine)
	}
	var dirs []string
	for i := range 4 {
		dirs = append(dirs, runInto(t, fmt.Sprintf("perm-%d", i), fmt.Sprintf("%s\nrun: {seed: %d}", e2ePerm[:len(e2ePerm)-len("faults: [{at: 20us, link: h0.p1, action: down}]")], i+1)))
	}
	cmp := filepath.Join(t.TempDir(), "compare.html")
	if err := report.WriteCompare(cmp, nil, dirs); err != nil {
		t.Fatal(err)
	}
	report.OpenAndCheck(t, b, cmp, []string{report.IDFCT, report.IDThroughput}, "compare of four runs")
}
