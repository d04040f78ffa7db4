package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/report"
)

// creditsIncast is a 12 -> 1 incast of 512 KB each on a 2-tier fabric (16 hosts, 100G); %s is the transport kind.
const creditsIncast = `name: incast-%s
topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 100G, hop_latency: 500ns}}
transport: {kind: %s}
traffic: [{pattern: incast, receiver: 0, bytes: 512KB, senders: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}]
run: {seed: 1}`

// TestCreditsFigure: an InfiniBand incast's report has the credit-blocked plot, drawn, with
// the most blocked port in its table and credits.csv among the files read; a RoCE incast's
// report has neither the plot nor a "no data" note for it.
func TestCreditsFigure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs simulations")
	}
	for _, c := range []struct {
		kind string
		want bool
	}{{"ib", true}, {"roce", false}} {
		dir := runInto(t, c.kind, strings.ReplaceAll(creditsIncast, "%s", c.kind))
		page, err := os.ReadFile(filepath.Join(dir, report.ReportFile))
		if err != nil {
			t.Fatal(err)
		}
		html := string(page)
		_, statErr := os.Stat(filepath.Join(dir, "credits.csv"))
		hasPlot := strings.Contains(html, `<svg class="plot" id="`+report.IDCredits+`"`)
		hasAny := strings.Contains(html, `id="`+report.IDCredits)
		if c.want {
			if statErr != nil || !hasPlot || !strings.Contains(html, "Ports blocked for credits") || !strings.Contains(html, `id="`+report.IDCredits+`-table"`) {
				t.Fatalf("%s: credits.csv %v, plot %v; the report should draw the credits plot and its table", c.kind, statErr, hasPlot)
			}
			csv, _ := os.ReadFile(filepath.Join(dir, "credits.csv"))
			if !strings.Contains(html, ".up") || !strings.Contains(string(csv), ".up") {
				t.Fatalf("%s: no uplink among the blocked ports of a 12 -> 1 incast", c.kind)
			}
		} else if statErr == nil || hasAny {
			t.Fatalf("%s: credits.csv written (%v) or credits plot on the page (%v); neither should be", c.kind, statErr == nil, hasAny)
		}
	}
}
