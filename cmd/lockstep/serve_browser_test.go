package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/lockstepsim/lockstep/internal/browsertest"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/spf13/pflag"
)

// serveShotEnv names a PNG file to write a screenshot of the explorer to (docs/serve.png);
// the results tab goes beside it, as NAME-results.png.
const serveShotEnv = "LOCKSTEP_SERVE_SCREENSHOT"

// newServeBrowser starts headless Chromium (browsertest.Start), for at most limit, or skips
// the test naming the package to install.
func newServeBrowser(t *testing.T, limit time.Duration) context.Context {
	t.Helper()
	return browsertest.Start(t, limit, 1500, 1100)
}

// cliRows is what the topo command's code computes for an /api/topo query: its sizing rows.
func cliRows(t *testing.T, query string) [][2]string {
	t.Helper()
	q, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	var o topoOpts
	fs := pflag.NewFlagSet("topo", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addTopoFlags(fs, &o)
	var argv []string
	for k, vs := range q {
		for _, v := range vs {
			argv = append(argv, "--"+k+"="+v)
		}
	}
	if err := fs.Parse(argv); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	spec, err := o.spec(fs)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	f, err := sizeSpec(spec)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return sizingRows(f.topo.Sizing(), f.topo.Params())
}

// pageDesign is what the page shows of one design.
type pageDesign struct {
	Query string      `json:"query"`
	Rows  [][2]string `json:"rows"`
	Picks int         `json:"picks"` // clickable elements in the drawing
	Count string      `json:"count"` // the drawing's first row count ("16 of 2,048")
	Label string      `json:"label"`
}

const readDesign = `((i) => {
	const col = document.querySelector('.design[data-design="' + i + '"]');
	return {query: col.dataset.query,
		rows: [...col.querySelectorAll("table.sizing tr[data-label]")].filter(tr => tr.dataset.label !== "note").map(tr => [tr.dataset.label, tr.querySelector("td").textContent]),
		picks: col.querySelectorAll("svg.topo .pick").length,
		count: (col.querySelector("svg.topo .row-count") || {}).textContent || "",
		label: col.querySelector(".label").textContent};
})(%d)`

// setDesign sets design i's kind and parameters as a user would (the controls' values and
// their change events) and waits for the page to show the answer.
func setDesign(t *testing.T, ctx context.Context, i int, kind string, params map[string]string) pageDesign {
	t.Helper()
	js := fmt.Sprintf(`((i, kind, params) => {
		const col = document.querySelector('.design[data-design="' + i + '"]');
		const sel = col.querySelector("select.kind");
		if (sel.value !== kind) { sel.value = kind; sel.dispatchEvent(new Event("change", {bubbles: true})); }
		for (const [k, v] of Object.entries(params)) {
			const inp = col.querySelector('.params [name="' + k + '"]');
			if (!inp) throw new Error("no control " + k + " for " + kind);
			if (inp.type === "checkbox") inp.checked = v === "true"; else inp.value = v;
		}
		col.querySelector(".params").dispatchEvent(new Event("change", {bubbles: true}));
		return true;
	})(%d, %q, %s)`, i, kind, jsonString(params))
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil {
		t.Fatalf("setting design %d to %s %v: %v", i, kind, params, err)
	}
	return waitDesign(t, ctx, i)
}

func waitDesign(t *testing.T, ctx context.Context, i int) pageDesign {
	t.Helper()
	state, err := chromedp.Run(ctx, chromedp.Poll[string](fmt.Sprintf(`(() => { const s = document.querySelector('.design[data-design="%d"]').dataset.state; return s === "loading" ? false : s; })()`, i),
		chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		t.Fatalf("design %d never finished loading: %v", i, err)
	}
	if state != "ready" {
		msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector('.design[data-design="%d"] .error').textContent`, i)))
		t.Fatalf("design %d: %s: %s", i, state, msg)
	}
	d, err := chromedp.Run(ctx, chromedp.Evaluate[pageDesign](fmt.Sprintf(readDesign, i)))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func jsonString(m map[string]string) string {
	var b strings.Builder
	b.WriteString("{")
	first := true
	for k, v := range m {
		if !first {
			b.WriteString(",")
		}
		first = false
		fmt.Fprintf(&b, "%q:%q", k, v)
	}
	b.WriteString("}")
	return b.String()
}

// TestServeInChromium drives the page in headless Chromium: the explorer shows, for every
// kind, the sizing the topo command's code computes (read from the page), a changed parameter
// changes numbers and drawing, a click names an element as faults: does, three designs stand
// side by side, the results list shows a run, a validation error is shown at its field, an
// uploaded file is loaded, a run started from the page streams its events to a report whose
// plots are present, a run's links.csv plots with hover, toggles and zoom, and two runs
// compare; no
// console error, no request leaves the loopback server.
func TestServeInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser and runs a simulation")
	}
	ctx := newServeBrowser(t, 120*time.Second)
	results := t.TempDir()
	ts, token := newTestServe(t, results, 2)

	sub, stop := context.WithCancel(ctx)
	msgs := chromedp.Console(sub)
	reqs := chromedp.Events(sub, network.RequestWillBeSent)
	var mu sync.Mutex
	var console, requests []string
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for m, err := range msgs {
			if err != nil {
				return
			}
			switch m.Type {
			case chromedp.ConsoleError, chromedp.ConsoleException, chromedp.ConsoleWarning, "assert":
				mu.Lock()
				console = append(console, m.String())
				mu.Unlock()
			}
		}
	}()
	go func() {
		defer wg.Done()
		for ev, err := range reqs {
			if err != nil {
				return
			}
			mu.Lock()
			requests = append(requests, ev.Request.URL)
			mu.Unlock()
		}
	}()

	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/?token="+token)); err != nil {
		t.Fatal(err)
	}
	first := waitDesign(t, ctx, 0)
	checkRows(t, "default clos", first, cliRows(t, first.Query))

	// Every kind, with parameters set on the page, shows the topo code's numbers.
	for _, c := range []struct {
		kind   string
		params map[string]string
	}{
		{"clos", map[string]string{"tiers": "3", "radix": "16", "planes": "2", "oversub": "3,1"}},
		{"torus", map[string]string{"dims": "4x4x8", "twisted": "true", "ocs": "true", "spare-cubes": "1"}},
		{"rail", map[string]string{"servers": "32", "gpus-per-server": "8", "radix": "64", "scale-up-gpus": "8", "scale-up-rate": "7.2T"}},
		{"fat_tree", map[string]string{"k": "8", "oversub": "3"}},
		{"mesh", map[string]string{"nodes": "12", "link": "200G"}},
	} {
		d := setDesign(t, ctx, 0, c.kind, c.params)
		for k, v := range c.params {
			if !strings.Contains(d.Query, url.QueryEscape(k)+"="+url.QueryEscape(v)) {
				t.Errorf("%s: the page asked for %q, without %s=%s", c.kind, d.Query, k, v)
			}
		}
		checkRows(t, c.kind, d, cliRows(t, d.Query))
		if d.Picks < 5 {
			t.Errorf("%s: %d clickable elements drawn", c.kind, d.Picks)
		}
	}

	// Changing one parameter changes the numbers and the drawing.
	a := setDesign(t, ctx, 0, "clos", map[string]string{"tiers": "2", "radix": "64", "planes": "1", "oversub": ""})
	b := setDesign(t, ctx, 0, "clos", map[string]string{"radix": "32"})
	checkRows(t, "clos radix 32", b, cliRows(t, b.Query))
	if row(a, "hosts") != "2,048" || row(b, "hosts") != "512" || a.Count == b.Count {
		t.Errorf("radix 64 -> 32: hosts %q -> %q, drawing %q -> %q; want 2,048 -> 512 and a new drawing", row(a, "hosts"), row(b, "hosts"), a.Count, b.Count)
	}

	// A click on a switch, and on a link, shows its scenario name.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.design[data-design="0"] svg.topo g.pick[data-name="p0.t1-0"]`))); err != nil {
		t.Fatalf("clicking p0.t1-0: %v", err)
	}
	if got := selected(t, ctx); got != "p0.t1-0" {
		t.Errorf("clicked switch p0.t1-0; selection shows %q", got)
	}
	link, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const g = [...document.querySelectorAll('.design[data-design="0"] svg.topo g.pick')].find(g => /\.up\d+$/.test(g.dataset.name)); g.dispatchEvent(new MouseEvent("click", {bubbles: true})); return g.dataset.name; })()`))
	if err != nil {
		t.Fatal(err)
	}
	if got := selected(t, ctx); got != link || !strings.HasPrefix(link, "p0.t0-") {
		t.Errorf("clicked link %q; selection shows %q", link, got)
	}

	// Three designs side by side.
	for i := 1; i <= 2; i++ {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("add-design"))); err != nil {
			t.Fatal(err)
		}
		d := waitDesign(t, ctx, i)
		checkRows(t, fmt.Sprintf("design %d", i), d, cliRows(t, d.Query))
	}
	tops, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`[...document.querySelectorAll(".design")].map(d => d.getBoundingClientRect().top)`))
	if err != nil || len(tops) != 3 || tops[0] != tops[1] || tops[1] != tops[2] {
		t.Errorf("three designs: tops %v (%v); want three side by side", tops, err)
	}
	if p := os.Getenv(serveShotEnv); p != "" {
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A scenario error is shown at its field and line.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("tab-run"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("validation").dataset.state === "valid"`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the sample scenario never validated: %v", err)
	}
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const ta = document.getElementById("scenario-text");
		ta.value = ta.value.replace("radix: 8", "radix: 7");
		ta.dispatchEvent(new Event("input", {bubbles: true}));
		return true;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	where, err := chromedp.Run(ctx, chromedp.Poll[string](`document.getElementById("validation").dataset.state === "invalid" && document.querySelector("#validation .field").textContent`, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil || where != "topology.clos.radix (line 2)" {
		t.Errorf("invalid scenario: shown at %q (%v); want topology.clos.radix (line 2)", where, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const ta = document.getElementById("scenario-text");
		ta.value = ta.value.replace("radix: 7", "radix: 8");
		ta.dispatchEvent(new Event("input", {bubbles: true}));
		return true;
	})()`)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("validation").dataset.state === "valid"`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the scenario put back never validated: %v", err)
	}

	// A scenario uploaded from a file replaces the text and is validated.
	up := filepath.Join(t.TempDir(), "uploaded.yaml")
	if err := os.WriteFile(up, []byte(strings.Replace(serveSmall, "name: small-perm", "name: uploaded", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.SetUploadFiles(chromedp.ID("upload"), []string{up})); err != nil {
		t.Fatalf("uploading %s: %v", up, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("scenario-text").value.startsWith("name: uploaded") && document.getElementById("validation").dataset.state === "valid"`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the uploaded scenario was not loaded and validated: %v", err)
	}

	// A run from the page streams its events and links its report.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("start-run"))); err != nil {
		t.Fatal(err)
	}
	st, err := chromedp.Run(ctx, chromedp.Poll[string](`(s => (s.dataset.state === "done" || s.dataset.state === "failed" || s.dataset.state === "refused") && s.dataset.state + " " + (s.dataset.progress || 0) + " " + s.textContent)(document.getElementById("run-status"))`,
		chromedp.WithPollingTimeout(60*time.Second)))
	if err != nil {
		t.Fatalf("the run never finished: %v", err)
	}
	var state string
	var progress int
	fmt.Sscan(st, &state, &progress)
	if state != "done" || progress < 1 {
		t.Errorf("run: %q; want done after at least one progress event", st)
	}
	report, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("report-link").getAttribute("href")`))
	if err != nil || !strings.HasPrefix(report, "/results/serve/uploaded-") {
		t.Fatalf("report link %q (%v)", report, err)
	}

	// The results tab lists it.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("tab-results"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll("#results-table tbody tr[data-dir]").length === 1`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Errorf("the results tab does not list the run: %v", err)
	}
	// With a second run (over the API), the two compared from the tab.
	code, body := post(t, ts.URL+"/api/run", token, serveSmall)
	if code != 202 {
		t.Fatalf("second run: %d %s", code, body)
	}
	var r2 struct{ Events string }
	_ = json.Unmarshal(body, &r2)
	sseEvents(t, ts.URL+r2.Events)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("refresh-results"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll("#results-table tbody .pick-run").length === 2`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the results tab does not list two runs: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { for (const c of document.querySelectorAll(".pick-run")) c.checked = true; document.getElementById("compare-results").click(); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	cmpPage, err := chromedp.Run(ctx, chromedp.Poll[string](`(l => l && l.getAttribute("href"))(document.getElementById("compare-link"))`, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil || !strings.HasSuffix(cmpPage, "/compare.html") {
		t.Errorf("compare link %q (%v)", cmpPage, err)
	}

	// A run's links.csv as an interactive plot: hover values, a series toggled from the
	// legend, a drag zooming on time.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#results-table tbody tr .plot-run`))); err != nil {
		t.Fatal(err)
	}
	nSeries, err := chromedp.Run(ctx, chromedp.Poll[int](`document.querySelectorAll("#chart-svg path.series").length`, chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil || nSeries < 2 {
		t.Fatalf("plot: %d series (%v)", nSeries, err)
	}
	type chartState struct {
		Series int     `json:"series"`
		Hover  string  `json:"hover"`
		Span   float64 `json:"span"`
	}
	const act = `((what) => {
		const svg = document.getElementById("chart-svg"), ov = svg.querySelector(".overlay"), r = ov.getBoundingClientRect();
		const at = f => ({clientX: r.left + f * r.width, clientY: r.top + r.height / 2, bubbles: true});
		if (what === "hover") ov.dispatchEvent(new MouseEvent("mousemove", at(0.5)));
		if (what === "toggle") svg.querySelector(".legend-item").dispatchEvent(new MouseEvent("click", {bubbles: true}));
		if (what === "zoom") {
			ov.dispatchEvent(new MouseEvent("mousedown", at(0.3)));
			ov.dispatchEvent(new MouseEvent("mousemove", at(0.6)));
			ov.dispatchEvent(new MouseEvent("mouseup", at(0.6)));
		}
		const s = document.getElementById("chart-svg");
		return {series: s.querySelectorAll("path.series").length, hover: document.getElementById("chart-hover").textContent,
			span: Number(s.dataset.x1) - Number(s.dataset.x0)};
	})(%q)`
	do := func(what string) chartState {
		st, err := chromedp.Run(ctx, chromedp.Evaluate[chartState](fmt.Sprintf(act, what)))
		if err != nil {
			t.Fatalf("plot %s: %v", what, err)
		}
		return st
	}
	before := do("")
	if h := do("hover"); !strings.Contains(h.Hover, "µs") || !strings.Contains(h.Hover, "NIC") || !strings.Contains(h.Hover, "%") {
		t.Errorf("hover shows %q; want the time and each series' value", h.Hover)
	}
	if tg := do("toggle"); tg.Series != before.Series-1 {
		t.Errorf("legend click: %d series drawn, want %d", tg.Series, before.Series-1)
	}
	if z := do("zoom"); !(z.Span > 0 && z.Span < 0.5*before.Span) {
		t.Errorf("drag from 30%% to 60%%: time span %g -> %g; want about 0.3 of it", before.Span, z.Span)
	}

	if p := os.Getenv(serveShotEnv); p != "" {
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(strings.TrimSuffix(p, ".png")+"-results.png", shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Its report has its plots.
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+report)); err != nil {
		t.Fatal(err)
	}
	plots, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg.plot").length`))
	if err != nil || plots < 3 {
		t.Errorf("report %s: %d plots (%v)", report, plots, err)
	}
	// And so has the comparison, whose links to the runs' reports resolve on the server.
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+cmpPage)); err != nil {
		t.Fatal(err)
	}
	links, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("a[href$='report.html']")].map(a => a.href)`))
	plots, err2 := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg.plot").length`))
	if err != nil || err2 != nil || plots < 1 || len(links) != 2 {
		t.Errorf("compare page %s: %d plots, links %q (%v, %v)", cmpPage, plots, links, err, err2)
	}
	for _, l := range links {
		resp, err := http.Get(l)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("compare page's link %s: %v %v", l, resp, err)
		} else {
			resp.Body.Close()
		}
	}

	stop()
	wg.Wait()
	for _, m := range console {
		t.Errorf("console: %s", m)
	}
	if len(requests) < 10 {
		t.Errorf("%d requests seen: the network events were not recorded", len(requests))
	}
	for _, u := range requests {
		if !strings.HasPrefix(u, ts.URL+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("request left the loopback server: %s", u)
		}
	}
}

// checkRows fails unless the page's sizing rows are the topo code's, row for row.
func checkRows(t *testing.T, what string, d pageDesign, want [][2]string) {
	t.Helper()
	if len(d.Rows) != len(want) {
		t.Errorf("%s (%s): page shows %d sizing rows, topo computes %d:\npage %q\ntopo %q", what, d.Query, len(d.Rows), len(want), d.Rows, want)
		return
	}
	for i := range want {
		if d.Rows[i] != want[i] {
			t.Errorf("%s (%s): row %q on the page is %q; topo computes %q", what, d.Query, want[i][0], d.Rows[i][1], want[i][1])
		}
	}
}

func row(d pageDesign, label string) string {
	for _, r := range d.Rows {
		if r[0] == label {
			return r[1]
		}
	}
	return ""
}

func selected(t *testing.T, ctx context.Context) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("selection").dataset.name || ""`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
