package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteCompare(t *testing.T) {
	base := defaultSynth()
	slow := defaultSynth()
	slow.scale, slow.name = 2, "slow"
	a, b := synthDir(t, base), synthDir(t, slow)
	out := filepath.Join(t.TempDir(), "compare.html")
	if err := WriteCompare(out, []string{"base", "twice"}, []string{a, b}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	for _, want := range []string{
		"<title>lockstep comparison: base vs twice</title>",
		`<svg class="plot" id="fct-cdf"`, `<svg class="plot" id="throughput"`,
		"<th>base</th><th>twice</th><th>ratio</th>",
		// end_us doubles: 80 -> 160, ratio 2x; seed stays: ratio 1x.
		`<td>end_us</td><td class="num">80</td><td class="num">160</td><td class="num">2x</td>`,
		`<td>seed</td><td class="num">1</td><td class="num">1</td><td class="num">1x</td>`,
		// A string has no ratio.
		`<td>scenario</td><td>synth</td><td>slow</td><td></td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("compare page lacks %q", want)
		}
	}
	checkSelfContained(t, page)

	// Deterministic.
	out2 := filepath.Join(t.TempDir(), "again.html")
	if err := WriteCompare(out2, []string{"base", "twice"}, []string{a, b}); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(out2); string(again) != page {
		t.Error("two WriteCompare calls on the same inputs differ")
	}
}

// TestWriteCompareGaps: runs lacking files are named in the captions; names default to the
// scenario name, then the folder's name.
func TestWriteCompareGaps(t *testing.T) {
	a := synthDir(t, defaultSynth())
	b := t.TempDir() // nothing at all
	c := synthDir(t, defaultSynth())
	os.Remove(filepath.Join(c, fileFlows))
	out := filepath.Join(t.TempDir(), "c.html")
	if err := WriteCompare(out, nil, []string{a, b, c}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(out)
	page := string(raw)
	for _, want := range []string{
		"No curve: " + filepath.Base(b) + " (no flows.csv); synth (no flows.csv).",
		"Completed transfers only: synth p50 ",
		", 1 of 50 never finished.",
		"No links.csv: " + filepath.Base(b) + ".",
		"No summary.json: " + filepath.Base(b) + ".",
		`<td>end_us</td><td class="num">80</td><td>-</td><td></td><td class="num">80</td><td class="num">1x</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("compare page lacks %q", want)
		}
	}

	// No run with any data: notes, not errors.
	if err := WriteCompare(out, []string{"x"}, []string{t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(out)
	for _, id := range []string{"headline", idFCT, idThroughput} {
		if !strings.Contains(string(raw), `id="`+id+`-nodata"`) {
			t.Errorf("empty comparison lacks the note %s-nodata", id)
		}
	}
}

func TestWriteCompareErrors(t *testing.T) {
	dir := synthDir(t, defaultSynth())
	bad := synthDir(t, defaultSynth())
	writeFiles(t, bad, map[string]string{fileEV: "time_us,good\n1,2\n"})
	out := filepath.Join(t.TempDir(), "c.html")
	for _, tc := range []struct {
		name  string
		names []string
		dirs  []string
		want  string
	}{
		{"no folders", nil, nil, "no results folders"},
		{"names mismatch", []string{"a"}, []string{dir, dir}, "1 names for 2 results folders"},
		{"missing folder", nil, []string{dir, filepath.Join(dir, "nope")}, "nope"},
		{"malformed file", nil, []string{dir, bad}, `ev_states.csv line 1 (skip): header lacks column "skip"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteCompare(out, tc.names, tc.dirs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// svgOf returns the <svg> element with id from page.
func svgOf(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `<svg class="plot" id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no plot %s", id)
	}
	svg, _, _ := strings.Cut(page[i:], "</svg>")
	return svg
}

// TestWriteCompareManyRuns: every run is in the legends, however many there are (they move
// below the plot when they do not fit beside it), and each run links to its report.html.
func TestWriteCompareManyRuns(t *testing.T) {
	parent := t.TempDir()
	const n = 30
	var dirs []string
	for i := range n {
		s := defaultSynth()
		s.name, s.scale = fmt.Sprintf("run-%02d", i), 1+0.05*float64(i)
		dir := filepath.Join(parent, s.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFiles(t, dir, s.files())
		dirs = append(dirs, dir)
	}
	out := filepath.Join(parent, "compare.html")
	if err := WriteCompare(out, nil, dirs); err != nil {
		t.Fatal(err)
	}
	page := readFileString(t, out)
	for _, id := range []string{idFCT, idThroughput} {
		svg := svgOf(t, page, id)
		for i := range n {
			if name := fmt.Sprintf(">run-%02d</text>", i); !strings.Contains(svg, name) {
				t.Errorf("plot %s: the legend lacks run-%02d", id, i)
			}
		}
	}
	for i := range n {
		if want := fmt.Sprintf(`<li>run-%02d: %s (<a href="run-%02d/report.html">report.html</a>)</li>`, i, dirs[i], i); !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	checkSelfContained(t, page)

	// From another folder the links climb out of it; a relative dir works as well.
	sub := filepath.Join(parent, "pages", "cmp")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteCompare(filepath.Join(sub, "c.html"), nil, dirs[:2]); err != nil {
		t.Fatal(err)
	}
	if want := `<a href="../../run-01/report.html">`; !strings.Contains(readFileString(t, filepath.Join(sub, "c.html")), want) {
		t.Errorf("page lacks %s", want)
	}
	for _, tc := range []struct{ out, dir, want string }{
		{"/a/b/compare.html", "/a/b/run 1", "run%201/report.html"},
		{"/a/b/compare.html", "/a/c", "../c/report.html"},
		{"compare.html", "x:y", "./x:y/report.html"},
		{"cmp/compare.html", "runs/r1", "../runs/r1/report.html"},
	} {
		if got := reportHref(tc.out, tc.dir); got != tc.want {
			t.Errorf("reportHref(%q, %q) = %q, want %q", tc.out, tc.dir, got, tc.want)
		}
	}
}
