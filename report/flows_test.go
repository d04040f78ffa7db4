package report

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

const flowsHead = "flow,transport,src,dst,plane,bytes,delivered_bytes,start_us,done_us,fct_us,ideal_us,fct_over_ideal,goodput_gbps,retx_packets\n"

// stuckFlows is flows.csv of n transfers of transport that all never finished.
func stuckFlows(transport string, n int) string {
	var b strings.Builder
	b.WriteString(flowsHead)
	for i := range n {
		fmt.Fprintf(&b, "%d,%s,%d,0,,1048576,4096,0,,,48.148,,,12\n", i, transport, i+1)
	}
	return b.String()
}

// TestWriteStuck: when no transfer finished, the FCT section says how many never did, not that
// raw traffic has no completion time; compare.html says it per run.
func TestWriteStuck(t *testing.T) {
	for _, tr := range []string{"mrc", "roce"} {
		dir := synthDir(t, defaultSynth())
		writeFiles(t, dir, map[string]string{fileFlows: stuckFlows(tr, 8)})
		if err := Write(dir); err != nil {
			t.Fatal(err)
		}
		page := readReport(t, dir)
		want := fmt.Sprintf(`<p class="nodata" id="fct-cdf-nodata">no data: none of the 8 transfers in flows.csv finished (%s): all 8 never finished (done_us and fct_us are empty`, tr)
		if !strings.Contains(page, want) {
			t.Errorf("%s: page lacks %q", tr, want)
		}
		if strings.Contains(page, "raw traffic") {
			t.Errorf("%s: page blames raw traffic", tr)
		}
	}

	stuck := synthDir(t, defaultSynth())
	writeFiles(t, stuck, map[string]string{fileFlows: stuckFlows("roce", 5)})
	fine := synthDir(t, defaultSynth())
	out := filepath.Join(t.TempDir(), "compare.html")
	if err := WriteCompare(out, []string{"fine", "stuck"}, []string{fine, stuck}); err != nil {
		t.Fatal(err)
	}
	page := readFileString(t, out)
	for _, want := range []string{
		"Completed transfers only: fine p50 58 us, p99 106 us, 1 of 50 never finished.",
		"No curve: stuck (none of its 5 transfers finished).",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("compare page lacks %q", want)
		}
	}
	// Nothing finished anywhere: the note says so run by run.
	if err := WriteCompare(out, []string{"a", "b"}, []string{stuck, stuck}); err != nil {
		t.Fatal(err)
	}
	if want := "no data: no run has a completed transfer in flows.csv: a (none of its 5 transfers finished); b (none of its 5 transfers finished)"; !strings.Contains(readFileString(t, out), want) {
		t.Errorf("compare page lacks %q", want)
	}
}

// TestWriteRawGoodput: raw traffic has no completion time; its flows' goodput is plotted as a
// CDF instead, and the latency percentiles of summary.json are in the headline and the caption.
func TestWriteRawGoodput(t *testing.T) {
	dir := synthDir(t, defaultSynth())
	var b strings.Builder
	b.WriteString(flowsHead)
	for i := range 20 {
		g := ""
		if i != 19 {
			g = fmt.Sprint(50 + i)
		}
		fmt.Fprintf(&b, "%d,raw,%d,%d,%d,565760,565760,0,,,,,%s,0\n", i, i%4, (i+1)%4, i%2, g)
	}
	sum := strings.Replace(defaultSynth().files()[fileSummary], `"fault_slowdown_us": 2.5,`,
		`"fault_slowdown_us": 2.5, "latency_p50_us": 3.331, "latency_p90_us": 9.5, "latency_p99_us": 12.175, "latency_max_us": 13.319,`, 1)
	writeFiles(t, dir, map[string]string{fileFlows: b.String(), fileSummary: sum})
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page := readReport(t, dir)
	for _, want := range []string{
		`<svg class="plot" id="goodput-cdf"`, "Per-flow goodput of raw traffic (CDF)", "per-flow goodput (Gb/s)",
		"so this is the goodput of each of its 19 flows", "min 50, p50 59, p99 68, max 68 Gb/s.",
		"1 raw flows give no goodput_gbps and are not in the curve.",
		"One-way packet latency (summary.json): p50 3.331 us, p90 9.5 us, p99 12.175 us, max 13.319 us.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	rows := " " + strings.Join(headlineRows(t, page), " ") + " "
	for _, want := range []string{"latency_p50_us", "latency_p90_us", "latency_p99_us", "latency_max_us"} {
		if !strings.Contains(rows, " "+want+" ") {
			t.Errorf("headline lacks %s", want)
		}
	}
	if strings.Contains(page, `id="fct-cdf`) {
		t.Error("a raw run has an FCT section")
	}

	// Raw flows beside transfers that finished: the FCT CDF, the raw ones counted.
	mixed := flowsHead + "0,raw,0,1,0,10,10,0,,,,,5,0\n1,mrc,0,1,,10,10,0,5,5,1,5,1,0\n"
	writeFiles(t, dir, map[string]string{fileFlows: mixed})
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	if want := "1 raw flows have no completion time and are not in the curve."; !strings.Contains(readReport(t, dir), want) {
		t.Errorf("mixed page lacks %q", want)
	}
}
