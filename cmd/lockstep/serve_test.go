package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockstepsim/lockstep/serve"
)

// serveSmall is a run of a fraction of a second with a report full of plots: a permutation
// on a 16-host 2-plane Clos with one NIC link failing.
const serveSmall = `name: small-perm
topology: {clos: {tiers: 2, planes: 2, radix: 8, hosts: 16, host_link: 100G, hop_latency: 500ns}}
transport: {kind: mrc}
traffic: [{pattern: permutation, bytes: 2MiB}]
faults: [{at: 20us, link: h0.p1, action: down}]
`

// topoCases are fabrics of every kind, as /api/topo queries, with the flags lockstep topo
// takes for the same fabric.
var topoCases = []struct{ name, query string }{
	{"clos 2-tier", "kind=clos&planes=8&radix=64&link=100G"},
	{"clos 3-tier oversubscribed", "kind=clos&tiers=3&radix=16&oversub=3,1&parallel=1,2"},
	{"clos NVL72", "kind=clos&radix=64&scale-up-gpus=72&scale-up-rate=7.2T"},
	{"fat_tree", "kind=fat_tree&k=16&link=400G&oversub=3"},
	{"rail", "kind=rail&servers=16&gpus-per-server=8&radix=64&scale-up-gpus=8&scale-up-rate=3.6T"},
	{"rail-only", "kind=rail&servers=32&gpus-per-server=8&radix=64&rail-only=true"},
	{"torus", "kind=torus&dims=4x4x8&link=400G"},
	{"torus twisted OCS", "kind=torus&dims=4x4x8&twisted=true&ocs=true&spare-cubes=1"},
	{"mesh", "kind=mesh&nodes=16&link=100G"},
}

// queryArgs turns an /api/topo query into lockstep topo's command line.
func queryArgs(t *testing.T, query string) []string {
	t.Helper()
	q, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"topo"}
	for k, vs := range q {
		for _, v := range vs {
			args = append(args, "--"+k+"="+v)
		}
	}
	return args
}

func newTestServe(t *testing.T, results string, jobs int) (*httptest.Server, string) {
	t.Helper()
	srv, token, err := newServeServer(results, false, jobs)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { ts.Close(); srv.Close() })
	return ts, token
}

// TestServeTopoIsTheCLIs: every sizing row /api/topo returns is a line `lockstep topo` prints
// for the same flags, and every blast radius row too; the drawing names real elements.
func TestServeTopoIsTheCLIs(t *testing.T) {
	ts, _ := newTestServe(t, t.TempDir(), 1)
	for _, c := range topoCases {
		t.Run(c.name, func(t *testing.T) {
			var cli bytes.Buffer
			if code := execute(queryArgs(t, c.query), &cli, io.Discard); code != 0 {
				t.Fatalf("lockstep topo: exit %d", code)
			}
			var a struct {
				Rows    [][2]string `json:"rows"`
				Blast   [][5]string `json:"blast"`
				Drawing drawing     `json:"drawing"`
			}
			getJSONInto(t, ts.URL+"/api/topo?"+c.query, 200, &a)
			if len(a.Rows) < 10 {
				t.Fatalf("%d sizing rows", len(a.Rows))
			}
			for _, r := range a.Rows {
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(r[0]) + ` +` + regexp.QuoteMeta(r[1]) + `$`).Match(cli.Bytes()) {
					t.Errorf("row %q = %q is not a line of lockstep topo's output:\n%s", r[0], r[1], cli.String())
				}
			}
			for _, b := range a.Blast {
				if !strings.Contains(cli.String(), b[0]) || !strings.Contains(cli.String(), b[3]) {
					t.Errorf("blast row %q not in lockstep topo's output", b)
				}
			}
			d := a.Drawing
			if len(d.Nodes) < 4 || len(d.Links) < 3 {
				t.Fatalf("drawing has %d nodes, %d links", len(d.Nodes), len(d.Links))
			}
			for _, l := range d.Links {
				if l.A < 0 || l.A >= len(d.Nodes) || l.B < 0 || l.B >= len(d.Nodes) || l.Name == "" || l.Count < 1 {
					t.Fatalf("bad drawn link %+v", l)
				}
			}
		})
	}
	// A bad flag value is the CLI's error, 400.
	var e struct{ Error string }
	getJSONInto(t, ts.URL+"/api/topo?kind=clos&radix=x", 400, &e)
	if !strings.Contains(e.Error, "--radix") {
		t.Errorf("radix=x: %q; want the flag named", e.Error)
	}
	getJSONInto(t, ts.URL+"/api/topo?kind=torus&radix=8", 400, &e)
	if !strings.Contains(e.Error, "--radix is a flag of --kind") {
		t.Errorf("torus with radix: %q", e.Error)
	}
}

// TestServeDrawingNames: the drawing's names are the scenario's (faults: link, switch, nic).
func TestServeDrawingNames(t *testing.T) {
	ts, _ := newTestServe(t, t.TempDir(), 1)
	for _, c := range []struct {
		query string
		want  []string // names the drawing must hold
	}{
		{"kind=clos&radix=8&planes=2", []string{"p0.t0-1", "p0.t1-3", "h0.p0", "p0.t0-1.up3", "h4.p0"}},
		{"kind=clos&tiers=3&radix=8", []string{"p0.t2-0", "p0.t1-0.up0"}},
		{"kind=rail&servers=4&gpus-per-server=8&radix=16", []string{"p0.r3.t0-0", "p0.t1-0", "h17.p0"}},
		{"kind=torus&dims=4x4x4", []string{"x1y2z0", "x0y0z0.r.x+", "x3y0z0.r.x+"}},
		{"kind=mesh&nodes=6", []string{"h0", "h0.r.h5"}},
	} {
		var a struct {
			Drawing drawing `json:"drawing"`
		}
		getJSONInto(t, ts.URL+"/api/topo?"+c.query, 200, &a)
		names := map[string]bool{}
		for _, n := range a.Drawing.Nodes {
			names[n.Name], names[n.Port] = true, true
		}
		for _, l := range a.Drawing.Links {
			names[l.Name] = true
		}
		for _, w := range c.want {
			if !names[w] {
				t.Errorf("%s: no element named %q in the drawing", c.query, w)
			}
		}
	}
}

func getJSONInto(t *testing.T, u string, status int, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %d %s; want %d", u, resp.StatusCode, body, status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", u, err, body)
	}
}

func post(t *testing.T, u, token, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(body))
	if token != "" {
		req.Header.Set(serve.TokenHeader, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestServeValidate: /api/validate answers as lockstep validate: a valid scenario's estimate,
// or the error at its field and line.
func TestServeValidate(t *testing.T) {
	ts, token := newTestServe(t, t.TempDir(), 1)
	code, body := post(t, ts.URL+"/api/validate", token, serveSmall)
	if code != 200 || !strings.Contains(string(body), `"valid":true`) || !strings.Contains(string(body), `"engine":"packet"`) {
		t.Errorf("valid scenario: %d %s", code, body)
	}
	for _, c := range []struct{ yaml, path, line, cli string }{
		{strings.Replace(serveSmall, "radix: 8", "radix: 7", 1), "topology.clos.radix", `"line":2`, "topology.clos.radix"},
		{strings.Replace(serveSmall, "kind: mrc", "kind: tcp", 1), "transport.kind", `"line":3`, "transport.kind"},
		{serveSmall + "bogus: 1\n", "bogus", `"line":6`, "bogus"},
	} {
		code, body := post(t, ts.URL+"/api/validate", token, c.yaml)
		if code != 200 || !strings.Contains(string(body), `"valid":false`) || !strings.Contains(string(body), `"path":"`+c.path+`"`) || !strings.Contains(string(body), c.line) {
			t.Errorf("want valid false at %s %s: %d %s", c.path, c.line, code, body)
		}
		// The message is lockstep validate's.
		f := filepath.Join(t.TempDir(), "s.yaml")
		if err := os.WriteFile(f, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		execute([]string{"validate", f}, io.Discard, &stderr)
		var e struct{ Error string }
		_ = json.Unmarshal(body, &e)
		if !strings.Contains(stderr.String(), e.Error) {
			t.Errorf("page error %q is not validate's %q", e.Error, stderr.String())
		}
	}
}

// TestServeRun: a run started over the API streams its events to done, writes its folder
// inside --results (whatever run.out says), and its report is served.
func TestServeRun(t *testing.T) {
	results := t.TempDir()
	ts, token := newTestServe(t, results, 2)
	code, body := post(t, ts.URL+"/api/run", token, serveSmall+"run: {out: /tmp/elsewhere}\n")
	if code != http.StatusAccepted {
		t.Fatalf("POST /api/run: %d %s", code, body)
	}
	var r struct{ ID, Dir, Events string }
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	evs := sseEvents(t, ts.URL+r.Events)
	last := evs[len(evs)-1]
	if last.name != "done" {
		t.Fatalf("last event %s %s; want done", last.name, last.data)
	}
	var done struct {
		Complete bool
		Failed   bool
		Report   string
		Headline map[string]any
	}
	if err := json.Unmarshal([]byte(last.data), &done); err != nil {
		t.Fatal(err)
	}
	if !done.Complete || done.Failed || done.Headline["hosts"] != 16.0 {
		t.Errorf("done: %+v", done)
	}
	if !strings.HasPrefix(r.Dir, "serve/small-perm-") {
		t.Errorf("run folder %q", r.Dir)
	}
	for _, f := range []string{"summary.json", "report.html", "flows.csv", "scenario.yaml"} {
		if _, err := os.Stat(filepath.Join(results, r.Dir, f)); err != nil {
			t.Errorf("run folder: %v", err)
		}
	}
	resp, err := http.Get(ts.URL + done.Report)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(page, []byte(`class="plot"`)) || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'none'") {
		t.Errorf("GET %s: %d, %d bytes, CSP %q", done.Report, resp.StatusCode, len(page), resp.Header.Get("Content-Security-Policy"))
	}
	var list struct{ Folders []serve.ResultFolder }
	getJSONInto(t, ts.URL+"/api/results", 200, &list)
	if len(list.Folders) != 1 || list.Folders[0].Dir != r.Dir || list.Folders[0].Scenario != "small-perm" || list.Folders[0].Report == "" {
		t.Errorf("results list: %+v", list.Folders)
	}
	// A second run, and the two compared: compare.html in a new folder, served.
	code, body = post(t, ts.URL+"/api/run", token, strings.Replace(serveSmall, "bytes: 2MiB", "bytes: 1MiB", 1))
	if code != http.StatusAccepted {
		t.Fatalf("second POST /api/run: %d %s", code, body)
	}
	var r2 struct{ Dir, Events string }
	_ = json.Unmarshal(body, &r2)
	if evs := sseEvents(t, ts.URL+r2.Events); evs[len(evs)-1].name != "done" {
		t.Fatalf("second run: %v", evs[len(evs)-1])
	}
	code, body = post(t, ts.URL+"/api/compare", token, `{"dirs": ["`+r.Dir+`", "`+r2.Dir+`"]}`)
	var cmp struct{ Page string }
	if err := json.Unmarshal(body, &cmp); code != 200 || err != nil || !strings.HasSuffix(cmp.Page, "/compare.html") {
		t.Fatalf("POST /api/compare: %d %s", code, body)
	}
	if resp, err := http.Get(ts.URL + cmp.Page); err != nil || resp.StatusCode != 200 {
		t.Errorf("GET %s: %v %v", cmp.Page, resp, err)
	} else {
		resp.Body.Close()
	}
	for _, bad := range []string{`{"dirs": ["` + r.Dir + `"]}`, `{"dirs": ["` + r.Dir + `", "../x"]}`, `{"dirs": ["` + r.Dir + `", "serve"]}`, `[1]`} {
		if code, body := post(t, ts.URL+"/api/compare", token, bad); code != 400 {
			t.Errorf("POST /api/compare %s: %d %s; want 400", bad, code, body)
		}
	}
	if code, _ := post(t, ts.URL+"/api/compare", "", `{"dirs": ["`+r.Dir+`", "`+r2.Dir+`"]}`); code != 403 {
		t.Errorf("POST /api/compare without the token: %d, want 403", code)
	}

	// A training job at flow level runs the same way; its headline has the step time.
	code, body = post(t, ts.URL+"/api/run", token, `name: train-flow
topology: {clos: {tiers: 2, planes: 1, radix: 8, hosts: 16, host_link: 400G, hop_latency: 500ns}}
transport: {kind: mrc}
workload: {training: {model: {name: tiny, layers: 4, hidden: 512, heads: 8, ffn: 2048, vocab: 8192, seq_len: 256, global_batch: 16, micro_batch: 1}, gpu: {preset: h100}, plan: {tp: 1, pp: 2}}}
`)
	var r3 struct{ Events string }
	if err := json.Unmarshal(body, &r3); code != http.StatusAccepted || err != nil {
		t.Fatalf("training run: %d %s", code, body)
	}
	if evs := sseEvents(t, ts.URL+r3.Events); evs[len(evs)-1].name != "done" || !strings.Contains(evs[len(evs)-1].data, `"step_time_us"`) {
		t.Errorf("training run: last event %v; want done with step_time_us", evs[len(evs)-1])
	}

	// A bad scenario is refused before it runs, with its field.
	code, body = post(t, ts.URL+"/api/run", token, strings.Replace(serveSmall, "radix: 8", "radix: 7", 1))
	if code != 400 || !strings.Contains(string(body), "topology.clos.radix") {
		t.Errorf("bad run: %d %s", code, body)
	}
}

type sseEvent struct{ name, data string }

// sseEvents reads a server-sent event stream to its end.
func sseEvents(t *testing.T, u string) []sseEvent {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[len("data: "):]
		case line == "" && cur.name != "":
			out = append(out, cur)
			cur = sseEvent{}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no events", u)
	}
	return out
}

// TestServeCommandRefusesRemote: lockstep serve on a non-loopback address without
// --allow-remote is bad input naming the flag.
func TestServeCommandRefusesRemote(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:8080"} {
		var stderr bytes.Buffer
		code := execute([]string{"serve", "--addr", addr}, io.Discard, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "--allow-remote") {
			t.Errorf("serve --addr %s: exit %d, %q; want 2 naming --allow-remote", addr, code, stderr.String())
		}
	}
	var stderr bytes.Buffer
	if code := execute([]string{"serve", "-j", "0"}, io.Discard, &stderr); code != 2 {
		t.Errorf("serve -j 0: exit %d %q", code, stderr.String())
	}
}
