package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/lockstepsim/lockstep/internal/browsertest"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// browser is a headless Chromium driven over the DevTools protocol (chromedp).
type browser struct {
	ctx context.Context
}

// newBrowser starts headless Chromium for the test (browsertest.Start), for at most limit,
// or skips the test naming the package to install.
func newBrowser(t *testing.T, limit time.Duration) *browser {
	t.Helper()
	return &browser{ctx: browsertest.Start(t, limit, 1280, 1000)}
}

// plotInfo is what the page says about one expected plot element.
type plotInfo struct {
	ID       string   `json:"id"`
	Found    bool     `json:"found"`
	Tag      string   `json:"tag"`
	Class    string   `json:"cls"`
	Elements int      `json:"elements"` // descendants
	Width    float64  `json:"w"`        // CSS pixels on screen
	Height   float64  `json:"h"`
	Texts    int      `json:"texts"`   // <text> elements
	Clipped  []string `json:"clipped"` // the text of those reaching past the plot's edges
}

// visit is what loading a page gave: the console's messages, the URLs it requested, each
// expected plot's element and screenshot, and a screenshot of the whole page.
type visit struct {
	console  []string // "type: text" of errors, exceptions and warnings
	requests []string // every URL the page asked for
	plots    []plotInfo
	shots    map[string]image.Image // by plot id
	page     image.Image
	fontOK   bool // the plots' font is installed: text positions can be checked
}

// open loads the file at path, waits for it, and reads it. Console messages come from the
// DevTools Runtime.consoleAPICalled, Runtime.exceptionThrown and Log.entryAdded events (so a
// script error, a console.error and a refused load all count); requests from
// Network.requestWillBeSent.
func (b *browser) open(t *testing.T, path string, plotIDs []string) *visit {
	t.Helper()
	subCtx, stop := context.WithCancel(b.ctx)
	msgs := chromedp.Console(subCtx)
	reqs := chromedp.Events(subCtx, network.RequestWillBeSent)
	v := &visit{shots: map[string]image.Image{}, fontOK: plotFontInstalled()}
	var mu sync.Mutex
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
				v.console = append(v.console, m.String())
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
			v.requests = append(v.requests, ev.Request.URL)
			mu.Unlock()
		}
	}()

	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(b.ctx, chromedp.Navigate("file://"+abs)); err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	idsJSON, _ := json.Marshal(plotIDs)
	v.plots, err = chromedp.Run(b.ctx, chromedp.Evaluate[[]plotInfo](fmt.Sprintf(`(() => %s.map(id => {
		const el = document.getElementById(id);
		if (!el) return {id: id, found: false};
		const r = el.getBoundingClientRect();
		const texts = Array.from(el.querySelectorAll("text"));
		const clipped = texts.filter(tx => {
			const b = tx.getBoundingClientRect();
			// Across its lines, a text's box holds its font's whole ascent and descent, blank
			// space mostly: a few pixels past the edge there are not yet ink (the y axis
			// label, turned on its side, reaches past the left edge so).
			const across = 3, along = 0.5;
			const turned = b.height > b.width;
			return b.width > 0 && (
				b.left < r.left - (turned ? across : along) || b.right > r.right + (turned ? across : along) ||
				b.top < r.top - (turned ? along : across) || b.bottom > r.bottom + (turned ? along : across));
		}).map(tx => {
			const b = tx.getBoundingClientRect();
			return tx.textContent + " (px past the left, right, top, bottom edge: " +
				[r.left - b.left, b.right - r.right, r.top - b.top, b.bottom - r.bottom].map(x => x.toFixed(1)).join(", ") + ")";
		});
		return {id: id, found: true, tag: el.tagName.toLowerCase(), cls: el.getAttribute("class") || "",
			elements: el.querySelectorAll("*").length, w: r.width, h: r.height, texts: texts.length, clipped: clipped};
	}))()`, idsJSON)))
	if err != nil {
		t.Fatalf("inspecting %s: %v", path, err)
	}
	for _, p := range v.plots {
		if !p.Found || p.Width == 0 || p.Height == 0 {
			continue
		}
		shot, err := chromedp.Run(b.ctx, chromedp.Screenshot(chromedp.ID(p.ID)))
		if err != nil {
			t.Fatalf("screenshot of #%s: %v", p.ID, err)
		}
		v.shots[p.ID] = decodePNG(t, shot)
	}
	full, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot of %s: %v", path, err)
	}
	v.page = decodePNG(t, full)
	if dir := os.Getenv("REPORT_SCREENSHOTS"); dir != "" { // for a person to look at
		os.WriteFile(filepath.Join(dir, strings.TrimSuffix(filepath.Base(path), ".html")+".png"), full, 0o644)
	}
	// Every event of the load was sent before the screenshots came back; end the streams.
	stop()
	wg.Wait()
	return v
}

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	return img
}

// inked is the fraction of img's pixels that are not (nearly) white.
func inked(img image.Image) float64 {
	r := img.Bounds()
	if r.Empty() {
		return 0
	}
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if cr < 0xf000 || cg < 0xf000 || cb < 0xf000 {
				n++
			}
		}
	}
	return float64(n) / float64(r.Dx()*r.Dy())
}

// plotFontInstalled reports whether fontconfig resolves the plots' font, Liberation Sans, to
// itself: the SVG text is laid out with its metrics, so only then does the browser draw it
// exactly where the report measured it.
func plotFontInstalled() bool {
	out, err := exec.Command("fc-match", "Liberation Sans").Output()
	return err == nil && strings.Contains(string(out), "Liberation")
}

// check fails the test for console errors, fetches other than the page itself, missing or
// empty plots, text past a plot's edges (a clipped legend), and blank screenshots.
func (v *visit) check(t *testing.T, page string) {
	t.Helper()
	failed := t.Failed()
	defer func() {
		if !failed && t.Failed() {
			v.saveShots(t, page)
		}
	}()
	for _, m := range v.console {
		t.Errorf("%s: console: %s", page, m)
	}
	for _, u := range v.requests {
		if !strings.HasPrefix(u, "file://") {
			t.Errorf("%s: fetched %s: the page must be self-contained", page, u)
		}
	}
	for _, p := range v.plots {
		switch {
		case !p.Found:
			t.Errorf("%s: no element #%s", page, p.ID)
		case p.Tag != "svg" || p.Class != "plot":
			t.Errorf("%s: #%s is <%s class=%q>, want <svg class=\"plot\">", page, p.ID, p.Tag, p.Class)
		case p.Elements < 20:
			t.Errorf("%s: #%s has %d elements: empty plot", page, p.ID, p.Elements)
		case p.Width < 400 || p.Height < 100:
			t.Errorf("%s: #%s is %.0fx%.0f px on screen: not visible", page, p.ID, p.Width, p.Height)
		case p.Texts == 0:
			t.Errorf("%s: #%s has no text", page, p.ID)
		case len(p.Clipped) > 0 && v.fontOK:
			t.Errorf("%s: #%s: text past the plot's edges, clipped: %q", page, p.ID, p.Clipped)
		}
		if shot, ok := v.shots[p.ID]; ok {
			if f := inked(shot); f < 0.02 {
				t.Errorf("%s: screenshot of #%s is blank (%.2f%% of pixels inked)", page, p.ID, 100*f)
			}
		}
	}
	if f := inked(v.page); f < 0.02 {
		t.Errorf("%s: page screenshot is blank (%.2f%% of pixels inked)", page, 100*f)
	}
}

// TestReportInChromium opens a report and a comparison in headless Chromium: no console
// errors, nothing fetched, every plot present and drawn, screenshots not blank. A negative
// control first shows that the checks catch a broken page.
func TestReportInChromium(t *testing.T) {
	start := time.Now()
	b := newBrowser(t, 60*time.Second)

	// Negative control: a script error, a console.error, a refused external image and a blank
	// body must all be seen.
	bad := filepath.Join(t.TempDir(), "bad.html")
	writeFiles(t, filepath.Dir(bad), map[string]string{"bad.html": `<!DOCTYPE html><html><head>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'">
</head><body><img src="http://127.0.0.1:9/x.png" alt="">
<script>console.error("logged error"); throw new Error("boom");</script></body></html>`})
	v := b.open(t, bad, []string{idFCT})
	all := strings.Join(v.console, "\n")
	for _, want := range []string{"logged error", "boom", "Content Security Policy"} {
		if !strings.Contains(all, want) {
			t.Errorf("negative control: console lacks %q; got:\n%s", want, all)
		}
	}
	if len(v.plots) != 1 || v.plots[0].Found {
		t.Errorf("negative control: #%s found on a page without it", idFCT)
	}
	if f := inked(v.page); f > 0.02 {
		t.Errorf("negative control: blank page has %.2f%% of pixels inked", 100*f)
	}

	dir := synthDir(t, defaultSynth())
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	b.open(t, filepath.Join(dir, ReportFile), allPlotIDs).check(t, ReportFile)

	// A training run: the power trace and the step breakdown.
	train := copyDir(t, filepath.Join("testdata", "runs", "train-llama8b"))
	if err := Write(train); err != nil {
		t.Fatal(err)
	}
	b.open(t, filepath.Join(train, ReportFile), []string{idPower, idSteps, idStepSeries, idGantt}).check(t, "training "+ReportFile)

	// A collective sweep: busbw against size first; a permutation-like incast with a failure.
	for _, run := range []struct {
		name string
		ids  []string
	}{
		{"coll-sweep", []string{idBusbw, idUtil, idQueue}},
		{"mrc-incast-fail", []string{idFCT, idUtil, idQueue, idEV, idFaults}},
	} {
		d := copyDir(t, filepath.Join("testdata", "runs", run.name))
		if err := Write(d); err != nil {
			t.Fatal(err)
		}
		b.open(t, filepath.Join(d, ReportFile), run.ids).check(t, run.name+" "+ReportFile)
	}
	// Collective runs compared: busbw against size of every run on one plot, no FCT.
	collCmp := filepath.Join(t.TempDir(), "compare.html")
	if err := WriteCompare(collCmp, []string{"sweep", "two sizes"}, []string{filepath.Join("testdata", "runs", "coll-sweep"), filepath.Join("testdata", "runs", "coll-mrc")}); err != nil {
		t.Fatal(err)
	}
	b.open(t, collCmp, []string{idBusbw, idThroughput}).check(t, "compare.html of collective runs")
	// A run with a failure: the topology picture with its failed link, from real files.
	fail := copyDir(t, filepath.Join("testdata", "runs", "roce-incast-pfc"))
	if err := Write(fail); err != nil {
		t.Fatal(err)
	}
	b.open(t, filepath.Join(fail, ReportFile), []string{idTopology, idFaults}).check(t, "roce-incast-pfc "+ReportFile)
	// A fabric drawn aggregated (2 planes of 24 T0s, 384 hosts): groups, bundles, counts.
	big := t.TempDir()
	writeFiles(t, big, map[string]string{fileTopology: synthClosTopology(2, 24, 16, 16), fileLinks: synthClosLinks(2, 24*16),
		fileSummary: `{"scenario": "big", "duration_us": 20}`})
	if err := Write(big); err != nil {
		t.Fatal(err)
	}
	b.open(t, filepath.Join(big, ReportFile), []string{idTopology}).check(t, "aggregated topology "+ReportFile)

	other := defaultSynth()
	other.scale, other.name = 1.5, "slower"
	cmp := filepath.Join(t.TempDir(), "compare.html")
	if err := WriteCompare(cmp, nil, []string{dir, synthDir(t, other)}); err != nil {
		t.Fatal(err)
	}
	b.open(t, cmp, []string{idFCT, idThroughput}).check(t, "compare.html")

	// Many runs with long names: the legends go below the plots, every entry on the page.
	var dirs []string
	for i := range 26 {
		s := defaultSynth()
		s.scale, s.name = 1+0.1*float64(i), fmt.Sprintf("incast-variant-with-a-long-name-%02d", i)
		dirs = append(dirs, synthDir(t, s))
	}
	many := filepath.Join(t.TempDir(), "many.html")
	if err := WriteCompare(many, nil, dirs); err != nil {
		t.Fatal(err)
	}
	b.open(t, many, []string{idFCT, idThroughput}).check(t, "compare.html of 26 runs")

	if d := time.Since(start); d > 40*time.Second { // nine pages; 7 s on an idle 2-core machine
		t.Errorf("browser test took %v, budget 40s", d)
	}
}

// saveShots writes the page's and each plot's screenshot as PNG files into the test's
// artifact directory (kept with go test -artifacts) and logs where, so a failing browser
// check comes with what the browser saw.
func (v *visit) saveShots(t *testing.T, page string) {
	t.Helper()
	dir := t.ArtifactDir()
	name := strings.NewReplacer("/", "_", " ", "_", ".", "_").Replace(page)
	write := func(file string, img image.Image) {
		if img == nil {
			return
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Logf("screenshot %s: %v", file, err)
			return
		}
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Logf("screenshot %s: %v", file, err)
			return
		}
		t.Logf("%s: screenshot %s", page, path)
	}
	write(name+".png", v.page)
	for id, img := range v.shots {
		write(name+"-"+id+".png", img)
	}
}
