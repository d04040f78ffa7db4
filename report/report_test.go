package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// maxReportBytes is the size a report must stay under, whatever the inputs.
const maxReportBytes = 5 << 20

// checkSelfContained fails if page could fetch anything: every href is a fragment or a
// relative link to another run's report.html (compare pages; a link is followed only when
// clicked), and there is no script, stylesheet link, iframe, src attribute or CSS url().
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	for _, bad := range []string{"<script", "<link", "<iframe", " src=", "url(", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q: not self-contained", bad)
		}
	}
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		relReport := !strings.Contains(m[1], ":") && !strings.HasPrefix(m[1], "/") && strings.HasSuffix(m[1], "/"+ReportFile)
		if !strings.HasPrefix(m[1], "#") && !relReport {
			t.Errorf("page links to %q: not self-contained", m[1])
		}
	}
	if !strings.Contains(page, `Content-Security-Policy" content="default-src 'none'`) {
		t.Error("page lacks its Content-Security-Policy")
	}
}

func TestWriteSynthetic(t *testing.T) {
	dir := synthDir(t, defaultSynth())
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page := readReport(t, dir)
	for _, id := range allPlotIDs {
		if !strings.Contains(page, `<svg class="plot" id="`+id+`"`) {
			t.Errorf("plot %s missing", id)
		}
		if strings.Contains(page, `id="`+id+`-nodata"`) {
			t.Errorf("plot %s has a no-data note", id)
		}
	}
	for _, want := range []string{
		"<title>lockstep report: synth</title>",
		"transport.fct_p99_us", "pfc.most_paused_port", "p0.t0-0.down1", "collectives[0].busbw_GBps", // headline
		"49 flows completed", "1 of 50 never finished", // FCT caption: the last flow never finished
		`id="faults-table"`, `id="collectives-table"`, "flap", // tables
		"max over T0", "max over NIC ports", // heatmap rows
		`id="hottest-links"`, "h3.p0", "T0 down", // hottest links: by name, with their class
		"dp (all_reduce)", "halving_doubling 256 KiB, ring 512 KiB to 4 MiB", // busbw plot and caption
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	checkSelfContained(t, page)
}

// TestHeadlineTransports: the headline lists a transport block's figures that its patterns
// name and the block has, in pattern order, whichever transport wrote it: MRC's resends by
// cause and EV states, RoCE's CNPs; none of the others (data_packets, nacks_sent, ...). A
// comparison of the two lists the union.
func TestHeadlineTransports(t *testing.T) {
	common := []string{"transport.kind", "transport.flows", "transport.flows_completed", "transport.jct_us", "transport.fct_p50_us", "transport.fct_p99_us",
		"transport.fct_max_us", "transport.fct_over_ideal_mean", "transport.fct_over_ideal_max", "transport.retx_packets"}
	byCause := []string{"transport.retx_packets_by_cause.trim_nack", "transport.retx_packets_by_cause.sack_gap",
		"transport.retx_packets_by_cause.timeout", "transport.retx_packets_by_cause.out_of_window"}
	evs := []string{"transport.ev_good_at_end", "transport.ev_assumed_bad_at_end", "transport.ev_denied_at_end"}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	transportRows := func(rows []string) []string {
		var out []string
		for _, r := range rows {
			if strings.HasPrefix(r, "transport.") {
				out = append(out, r)
			}
		}
		return out
	}
	mrc, roce := defaultSynth(), defaultSynth()
	mrc.transport, mrc.name = synthMRCTransport, "mrc-like"
	roce.transport, roce.name = synthRoCETransport, "roce-like"
	dirs := map[string]string{}
	for _, tc := range []struct {
		run  synthRun
		want []string
	}{
		{mrc, cat(common, byCause, []string{"transport.timeouts", "transport.qp_errors"}, evs)},
		{roce, cat(common, []string{"transport.timeouts", "transport.cnps_sent", "transport.qp_errors"})},
	} {
		dir := synthDir(t, tc.run)
		dirs[tc.run.name] = dir
		if err := Write(dir); err != nil {
			t.Fatal(err)
		}
		page := readReport(t, dir)
		if got := transportRows(headlineRows(t, page)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: headline transport rows\n got %q\nwant %q", tc.run.name, got, tc.want)
		}
		if !strings.Contains(page, `<td>transport.retx_packets</td>`) {
			t.Errorf("%s: no retx_packets row", tc.run.name)
		}
	}
	out := filepath.Join(t.TempDir(), "compare.html")
	if err := WriteCompare(out, []string{"mrc", "roce"}, []string{dirs["mrc-like"], dirs["roce-like"]}); err != nil {
		t.Fatal(err)
	}
	want := cat(common, byCause, []string{"transport.timeouts", "transport.cnps_sent", "transport.qp_errors"}, evs)
	if got := transportRows(headlineRows(t, readFileString(t, out))); !slices.Equal(got, want) {
		t.Errorf("compare: headline transport rows\n got %q\nwant %q", got, want)
	}
}

// TestWriteMissingFiles removes one file at a time: its plots become notes naming the file and
// why the run may not have written it, and Write does not fail.
func TestWriteMissingFiles(t *testing.T) {
	for _, tc := range []struct {
		file  string
		notes []string // ids whose -nodata note must appear
	}{
		{fileSummary, []string{"headline"}},
		{fileFlows, []string{idFCT}},
		{fileLinks, []string{idUtil, idQueue}},
		{filePauses, []string{idPauses}},
		{fileEV, []string{idEV}},
		{fileFaults, []string{idFaults}},
		{fileCollectives, []string{"collectives-table"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := synthDir(t, defaultSynth())
			if err := os.Remove(filepath.Join(dir, tc.file)); err != nil {
				t.Fatal(err)
			}
			if err := Write(dir); err != nil {
				t.Fatalf("Write with %s absent: %v", tc.file, err)
			}
			page := readReport(t, dir)
			for _, id := range tc.notes {
				want := fmt.Sprintf(`<p class="nodata" id="%s-nodata">no data: %s not written by this run (%s)</p>`, id, tc.file, whyAbsent[tc.file])
				if !strings.Contains(page, want) {
					t.Errorf("page lacks %s", want)
				}
			}
			for _, id := range allPlotIDs {
				noted := strings.Contains(page, `id="`+id+`-nodata"`)
				plotted := strings.Contains(page, `<svg class="plot" id="`+id+`"`)
				if id == idBusbw && tc.file == fileCollectives {
					// Only a collective workload's page has the busbw plot: no note without it.
					if noted || plotted {
						t.Errorf("plot %s without collectives.csv: noted %v, plotted %v; want neither", id, noted, plotted)
					}
					continue
				}
				if noted == plotted {
					t.Errorf("plot %s: noted %v, plotted %v; want exactly one", id, noted, plotted)
				}
			}
		})
	}
	t.Run("empty folder", func(t *testing.T) {
		dir := t.TempDir()
		if err := Write(dir); err != nil {
			t.Fatal(err)
		}
		page := readReport(t, dir)
		if n := strings.Count(page, `class="nodata"`); n != len(allPlotIDs)+1 {
			t.Errorf("%d no-data notes, want %d (every plot but busbw, the headline and collectives)", n, len(allPlotIDs)+1)
		}
	})
}

// TestWriteEmptyFiles: files with a header and no rows (as a workload run writes flows.csv)
// give notes, not errors.
func TestWriteEmptyFiles(t *testing.T) {
	dir := synthDir(t, defaultSynth())
	files := defaultSynth().files()
	for name, body := range files {
		if strings.HasSuffix(name, ".csv") {
			head, _, _ := strings.Cut(body, "\n")
			writeFiles(t, dir, map[string]string{name: head + "\n"})
		}
	}
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page := readReport(t, dir)
	for _, want := range []string{
		"no data: flows.csv has no rows", "no data: links.csv has no rows", "no data: pauses.csv has no rows",
		"no data: ev_states.csv has no rows", "no data: faults.csv has no rows", "no data: collectives.csv has no rows",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestWriteMalformed: a malformed file is an error naming the file, the line, the column and
// what is wrong.
func TestWriteMalformed(t *testing.T) {
	good := defaultSynth().files()
	flowsHead := "flow,transport,src,dst,plane,bytes,delivered_bytes,start_us,done_us,fct_us,ideal_us,fct_over_ideal,goodput_gbps,retx_packets\n"
	for _, tc := range []struct {
		name, file, body string
		line, col        int
		field, want      string
	}{
		{"not a number", fileFlows, flowsHead + "0,mrc,0,1,,10,10,0,5,5,1,5,1,0\n1,mrc,0,1,,10,10,0,5,abc,1,5,1,0\n",
			3, 22, "fct_us", `"abc" is not a finite number`},
		{"negative fct", fileFlows, flowsHead + "0,mrc,0,1,,10,10,0,5,-5,1,5,1,0\n", 2, 22, "fct_us", "-5 is negative"},
		{"field count", fileFlows, flowsHead + "0,mrc,0,1\n", 2, 1, "", "wrong number of fields"},
		{"bare quote", fileFlows, flowsHead + "0,m\"rc,0,1,,10,10,0,5,5,1,5,1,0\n", 2, 4, "", `bare " in non-quoted-field`},
		{"missing column", fileFlows, "flow,transport\n0,mrc\n", 1, 0, "fct_us", `header lacks column "fct_us"`},
		{"empty file", fileFlows, "", 1, 0, "", "empty file"},
		{"duplicate column", fileFlows, "fct_us,fct_us\n1,2\n", 1, 8, "fct_us", "column appears twice"},
		{"interval backwards", fileLinks, "start_us,end_us,port,node,plane,tier,rate_gbps,util_pct,tx_bytes,queue_max_bytes,drops\n4,2,h0.p0,h0,0,-1,100,1,1,1,0\n",
			2, 3, "end_us", "ends at or before its start_us"},
		{"tier not an integer", fileLinks, "start_us,end_us,port,node,plane,tier,rate_gbps,util_pct,tx_bytes,queue_max_bytes,drops\n0,2,h0.p0,h0,0,x,100,1,1,1,0\n",
			2, 16, "tier", `"x" is not an integer`},
		{"negative paused_frac", filePauses, "time_us,port,node,paused_frac,pause_events\n0,h0.p0,h0,-0.5,1\n", 2, 12, "paused_frac", "-0.5 is negative"},
		{"ev inf", fileEV, "time_us,good,skip,assumed_bad,denied,placed_bytes\n2,Inf,0,0,0,0\n", 2, 3, "good", "not a finite number"},
		{"fault ends early", fileFaults, "entry,cycle,action,target,at_us,end_us\n0,0,down,h0.p1,30,20\n", 2, 19, "end_us", "ends before at_us"},
		{"summary syntax", fileSummary, "{\n  \"seed\": 1,\n  \"hosts\": x\n}\n", 3, 12, "", "invalid character 'x'"},
		{"summary not an object", fileSummary, "\n [1, 2]\n", 2, 2, "", "one JSON object"},
		{"summary trailing data", fileSummary, "{\"seed\": 1} {}\n", 1, 13, "", "after top-level value"},
		{"summary truncated", fileSummary, "{\"seed\": 1,\n", 2, 1, "", "unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, good)
			writeFiles(t, dir, map[string]string{tc.file: tc.body})
			err := Write(dir)
			if err == nil {
				t.Fatal("Write succeeded on a malformed file")
			}
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *FileError", err, err)
			}
			if fe.File != tc.file || fe.Line != tc.line || fe.Column != tc.col || fe.Field != tc.field {
				t.Errorf("error at %s line %d column %d field %q, want %s line %d column %d field %q (%v)",
					fe.File, fe.Line, fe.Column, fe.Field, tc.file, tc.line, tc.col, tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
				t.Errorf("error %q lacks %q or the file name", err, tc.want)
			}
			if _, statErr := os.Stat(filepath.Join(dir, ReportFile)); statErr == nil {
				t.Error("report.html written despite the error")
			}
		})
	}
}

// TestFileErrorMessage pins the message format.
func TestFileErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		e    FileError
		want string
	}{
		{FileError{File: "flows.csv", Line: 12, Column: 34, Field: "fct_us", Err: errors.New("bad")}, "flows.csv line 12, column 34 (fct_us): bad"},
		{FileError{File: "links.csv", Line: 1, Field: "port", Err: errors.New("missing")}, "links.csv line 1 (port): missing"},
		{FileError{File: "summary.json", Err: errors.New("unreadable")}, "summary.json: unreadable"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestWriteNotAFolder(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("Write on a missing folder succeeded")
	}
	f := filepath.Join(t.TempDir(), "file")
	writeFiles(t, filepath.Dir(f), map[string]string{"file": "x"})
	if err := Write(f); err == nil {
		t.Error("Write on a file succeeded")
	}
}

// TestWriteDeterministic: the same inputs give the same bytes, in the same folder and in a
// copy elsewhere.
func TestWriteDeterministic(t *testing.T) {
	a, b := synthDir(t, defaultSynth()), synthDir(t, defaultSynth())
	if err := Write(a); err != nil {
		t.Fatal(err)
	}
	first := readReport(t, a)
	for _, dir := range []string{a, b} {
		if err := Write(dir); err != nil {
			t.Fatal(err)
		}
		if again := readReport(t, dir); again != first {
			t.Fatalf("%s: report differs from the first (%d vs %d bytes)", dir, len(again), len(first))
		}
	}
}

// TestWriteLarge: thousands of ports x a hundred intervals and 10,000 flows stay well under the
// size limit, and every plot is drawn.
func TestWriteLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large input: skipped with -short")
	}
	s := synthRun{intervals: 120, flows: 10000, ports: 512, scale: 1, name: "large"}
	dir := synthDir(t, s)
	start := time.Now()
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page := readReport(t, dir)
	fi, _ := os.Stat(filepath.Join(dir, fileLinks))
	t.Logf("links.csv %d bytes -> report.html %d bytes in %v", fi.Size(), len(page), time.Since(start))
	if len(page) > maxReportBytes {
		t.Errorf("report.html is %d bytes, over %d", len(page), maxReportBytes)
	}
	for _, id := range allPlotIDs {
		if !strings.Contains(page, `<svg class="plot" id="`+id+`"`) {
			t.Errorf("plot %s missing", id)
		}
	}
	if got := strings.Count(page, "<text"); got > 2000 {
		t.Errorf("%d text elements: the heatmap or the legends are not bounded", got)
	}
}

// TestWriteRealRuns reads results folders that `lockstep run` wrote (testdata/runs, made with
// the scenarios named in each folder's scenario.yaml) and checks which plots each one gets.
func TestWriteRealRuns(t *testing.T) {
	for _, tc := range []struct {
		run     string
		plots   []string
		noNotes []string // notes expected, by id
	}{
		{"mrc-incast-fail", []string{idFCT, idUtil, idQueue, idEV, idFaults}, []string{idPauses, "collectives-table"}},
		{"coll-mrc", []string{idUtil, idQueue}, []string{idBusbw, idFCT, idPauses, idEV, idFaults}},
		{"coll-sweep", []string{idBusbw, idUtil, idQueue}, []string{idFCT, idPauses, idFaults}},
		{"roce-incast-pfc", []string{idFCT, idUtil, idQueue, idPauses, idFaults}, []string{idEV, "collectives-table"}},
		{"permutation-ecmp", []string{idGoodput, idUtil, idQueue}, []string{idPauses, idEV, idFaults}},
		{"train-llama8b", []string{idPower, idSteps, idStepSeries, idGantt}, []string{idNetwork}},
	} {
		t.Run(tc.run, func(t *testing.T) {
			dir := copyDir(t, filepath.Join("testdata", "runs", tc.run))
			if err := Write(dir); err != nil {
				t.Fatal(err)
			}
			page := readReport(t, dir)
			for _, id := range tc.plots {
				if !strings.Contains(page, `<svg class="plot" id="`+id+`"`) {
					t.Errorf("plot %s missing", id)
				}
			}
			for _, id := range tc.noNotes {
				if !strings.Contains(page, `id="`+id+`-nodata"`) {
					t.Errorf("note %s-nodata missing", id)
				}
			}
			checkSelfContained(t, page)
		})
	}
}

// copyDir copies the files of src into a new temporary folder.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		writeFiles(t, dst, map[string]string{e.Name(): string(b)})
	}
	return dst
}

// TestWriteAfterCLIRun builds the lockstep command, runs a small scenario and reports on its
// results folder, so a change of the runner's file formats shows here. Not with -short: the
// build takes a while on a cold cache.
func TestWriteAfterCLIRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/lockstep: skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	bin := filepath.Join(t.TempDir(), "lockstep")
	build := exec.Command(goTool, "build", "-o", bin, "../cmd/lockstep")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := filepath.Join(t.TempDir(), "results")
	run := exec.Command(bin, "run", "../cmd/lockstep/testdata/mrc-incast-fail.yaml", "--out", out, "--quiet")
	var stderr bytes.Buffer
	run.Stderr = &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("lockstep run: %v\n%s", err, stderr.String())
	}
	if err := Write(out); err != nil {
		t.Fatal(err)
	}
	page := readReport(t, out)
	for _, id := range []string{idFCT, idUtil, idQueue, idEV, idFaults} {
		if !strings.Contains(page, `<svg class="plot" id="`+id+`"`) {
			t.Errorf("plot %s missing from the report of a fresh run", id)
		}
	}
}
