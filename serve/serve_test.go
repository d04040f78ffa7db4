package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testToken = "0123456789abcdef0123456789abcdef"

// fakeBackend answers with fixed data; its jobs report progress twice and finish.
type fakeBackend struct{ block chan struct{} }

func (fakeBackend) Topo(q url.Values) (any, error) {
	return map[string]string{"kind": q.Get("kind")}, nil
}

func (fakeBackend) Validate(y []byte) (any, error) {
	if strings.Contains(string(y), "bad") {
		return nil, &Error{Status: http.StatusBadRequest, Msg: "topology.clos.radix (line 2): 7 is odd", Path: "topology.clos.radix", Line: 2}
	}
	return map[string]bool{"valid": true}, nil
}

func (b fakeBackend) PrepareRun(y []byte, dir string) (*Job, error) {
	return &Job{Name: "fake", Dir: "serve/fake", Exec: func(ctx context.Context, progress func(Progress)) (Outcome, error) {
		progress(Progress{Phase: "run", Percent: 50})
		if b.block != nil {
			select {
			case <-b.block:
			case <-ctx.Done():
				return Outcome{}, errors.New("stopped")
			}
		}
		return Outcome{Complete: true}, nil
	}}, nil
}

func newTestServer(t *testing.T, results string) *Server {
	t.Helper()
	s, err := New(Config{Results: results, Token: testToken, Backend: fakeBackend{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// do sends a request straight to the handler (no client-side path cleaning) and returns the
// status and body.
func do(s http.Handler, method, target, host string, hdr map[string]string, body io.Reader) (int, string) {
	req := httptest.NewRequest(method, target, body)
	if host == "" {
		host = "127.0.0.1:8080"
	}
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func TestCheckAddr(t *testing.T) {
	for _, c := range []struct {
		addr        string
		allow       bool
		remote      bool
		errContains string
	}{
		{"127.0.0.1:8080", false, false, ""},
		{"127.1.2.3:80", false, false, ""},
		{"localhost:8080", false, false, ""},
		{"[::1]:8080", false, false, ""},
		{"0.0.0.0:8080", false, true, "every interface"},
		{":8080", false, true, "every interface"},
		{"192.168.1.5:8080", false, true, "--allow-remote"},
		{"example.com:8080", false, true, "not loopback"},
		{"0.0.0.0:8080", true, true, ""},
		{"10.0.0.1:80", true, true, ""},
		{"8080", false, false, "not host:port"},
		{"127.0.0.1:", false, false, "no port"},
	} {
		remote, err := CheckAddr(c.addr, c.allow)
		switch {
		case c.errContains == "" && err != nil:
			t.Errorf("CheckAddr(%q, %v): %v", c.addr, c.allow, err)
		case c.errContains != "" && (err == nil || !strings.Contains(err.Error(), c.errContains)):
			t.Errorf("CheckAddr(%q, %v) = %v; want an error containing %q", c.addr, c.allow, err, c.errContains)
		case err == nil && remote != c.remote:
			t.Errorf("CheckAddr(%q, %v): remote %v, want %v", c.addr, c.allow, remote, c.remote)
		}
	}
}

// TestTraversal: ".." (plain, encoded, double-encoded), absolute paths and symlinks leading
// out of the results directory are refused, and the secret outside never appears.
func TestTraversal(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "results")
	run := filepath.Join(root, "run1")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	const secret = "SECRET-OUTSIDE"
	must(t, os.WriteFile(filepath.Join(base, "secret.txt"), []byte(secret), 0o644))
	must(t, os.WriteFile(filepath.Join(run, "summary.json"), []byte(`{"scenario": "x", "complete": true, "hosts": 16}`), 0o644))
	must(t, os.WriteFile(filepath.Join(run, "flows.csv"), []byte("a,b\n"), 0o644))
	must(t, os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(run, "leak.csv")))
	must(t, os.Symlink(base, filepath.Join(root, "outside")))
	must(t, os.Symlink("flows.csv", filepath.Join(run, "inside.csv"))) // stays inside: allowed
	s := newTestServer(t, root)

	for _, c := range []struct {
		target string
		status int
	}{
		{"/results/run1/summary.json", 200},
		{"/results/run1/inside.csv", 200},
		{"/results/../secret.txt", 400},
		{"/results/run1/../../secret.txt", 400},
		{"/results/%2e%2e/secret.txt", 400},
		{"/results/%2E%2E/secret.txt", 400},
		{"/results/run1/..%2f..%2fsecret.txt", 400},
		{"/results/%252e%252e/secret.txt", 400},
		{"/results/run1/leak.csv", 403},
		{"/results/outside/secret.txt", 403},
		{"/results//etc/passwd", 400},
		{"/results/run1/nothing.csv", 404},
		{"/results/run1", 404},
		{"/assets/..%2fserve.go", 400},
	} {
		code, body := do(s, "GET", c.target, "", nil, nil)
		if code != c.status {
			t.Errorf("GET %s: %d %s; want %d", c.target, code, strings.TrimSpace(body), c.status)
		}
		if strings.Contains(body, secret) {
			t.Errorf("GET %s: the file outside the results directory was served", c.target)
		}
	}
	// The listing sees run1 and does not follow the symlink out.
	code, body := do(s, "GET", "/api/results", "", nil, nil)
	if code != 200 || !strings.Contains(body, `"dir":"run1"`) || strings.Contains(body, "outside") {
		t.Errorf("GET /api/results: %d %s", code, body)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestHostAndToken: a non-loopback Host is refused while loopback-only; a POST without the
// token, or with a wrong one, gets 403; the header and the query parameter both work.
func TestHostAndToken(t *testing.T) {
	s := newTestServer(t, t.TempDir())
	for _, c := range []struct {
		method, target, host, token string
		status                      int
	}{
		{"GET", "/api/topo?kind=clos", "127.0.0.1:8080", "", 200},
		{"GET", "/api/topo?kind=clos", "localhost:8080", "", 200},
		{"GET", "/api/topo?kind=clos", "[::1]:8080", "", 200},
		{"GET", "/api/topo?kind=clos", "evil.example:8080", "", 403},
		{"GET", "/", "rebind.attacker.test", "", 403},
		{"POST", "/api/validate", "127.0.0.1:8080", "", 403},
		{"POST", "/api/validate", "127.0.0.1:8080", "wrong", 403},
		{"POST", "/api/validate", "127.0.0.1:8080", testToken, 200},
		{"POST", "/api/validate?token=" + testToken, "127.0.0.1:8080", "", 200},
		{"POST", "/api/run", "127.0.0.1:8080", "", 403},
		{"PUT", "/api/validate", "127.0.0.1:8080", "", 403},
		{"GET", "/api/validate", "127.0.0.1:8080", "", 405},
	} {
		hdr := map[string]string{}
		if c.token != "" {
			hdr[TokenHeader] = c.token
		}
		code, body := do(s, c.method, c.target, c.host, hdr, strings.NewReader("name: x\n"))
		if code != c.status {
			t.Errorf("%s %s (Host %s, token %q): %d %s; want %d", c.method, c.target, c.host, c.token, code, strings.TrimSpace(body), c.status)
		}
		if code == 403 && c.method == "POST" && !strings.Contains(body, "token") {
			t.Errorf("%s %s: 403 without naming the token: %s", c.method, c.target, body)
		}
	}
	// With AllowRemote any Host is served.
	open, err := New(Config{Results: t.TempDir(), Token: testToken, Backend: fakeBackend{}, AllowRemote: true})
	must(t, err)
	defer open.Close()
	if code, body := do(open, "GET", "/api/topo?kind=clos", "box.lan:8080", nil, nil); code != 200 {
		t.Errorf("AllowRemote: GET with Host box.lan: %d %s", code, body)
	}
}

// TestUploadLimit: a body over MaxUploadBytes is refused with 413 and a message naming the
// limit; one at the limit is read.
func TestUploadLimit(t *testing.T) {
	s := newTestServer(t, t.TempDir())
	hdr := map[string]string{TokenHeader: testToken}
	for _, path := range []string{"/api/validate", "/api/run"} {
		code, body := do(s, "POST", path, "", hdr, strings.NewReader(strings.Repeat("#", MaxUploadBytes+1)))
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "1 MiB") || !strings.Contains(body, "1048576") {
			t.Errorf("POST %s of %d bytes: %d %s; want 413 naming the 1 MiB limit", path, MaxUploadBytes+1, code, body)
		}
	}
	if code, body := do(s, "POST", "/api/validate", "", hdr, strings.NewReader(strings.Repeat("#", MaxUploadBytes))); code != 200 {
		t.Errorf("POST of exactly %d bytes: %d %s", MaxUploadBytes, code, body)
	}
	// A validation error carries its field and line.
	code, body := do(s, "POST", "/api/validate", "", hdr, strings.NewReader("bad"))
	if code != 200 || !strings.Contains(body, `"valid":false`) || !strings.Contains(body, `"path":"topology.clos.radix"`) || !strings.Contains(body, `"line":2`) {
		t.Errorf("POST /api/validate of a bad scenario: %d %s", code, body)
	}
}

// TestRunEvents: a run's events stream in order to its final event, and the stream ends.
func TestRunEvents(t *testing.T) {
	s := newTestServer(t, t.TempDir())
	ts := httptest.NewServer(s)
	defer ts.Close()
	req, _ := http.NewRequest("POST", ts.URL+"/api/run", strings.NewReader("name: x"))
	req.Header.Set(TokenHeader, testToken)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(b), `"events":"/api/run/`) {
		t.Fatalf("POST /api/run: %d %s", resp.StatusCode, b)
	}
	id := strings.Split(strings.Split(string(b), `"id":"`)[1], `"`)[0]
	names := readEvents(t, ts.URL+"/api/run/"+id+"/events")
	if got := strings.Join(names, ","); got != "queued,started,progress,done" {
		t.Errorf("events %s; want queued,started,progress,done", got)
	}
	if code, _ := do(s, "GET", "/api/run/nope/events", "", nil, nil); code != 404 {
		t.Errorf("events of an unknown run: %d, want 404", code)
	}
}

// readEvents reads a server-sent event stream to its end and returns the event names.
func readEvents(t *testing.T, u string) []string {
	t.Helper()
	resp, err := http.Get(u)
	must(t, err)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("events: Content-Type %q", ct)
	}
	var names []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			names = append(names, n)
		}
	}
	return names
}

// TestCloseStopsRuns: Close cancels a run that waits, and its stream gets the final event.
func TestCloseStopsRuns(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	s, err := New(Config{Results: t.TempDir(), Token: testToken, Backend: fakeBackend{block: block}})
	must(t, err)
	ts := httptest.NewServer(s)
	defer ts.Close()
	code, body := do(s, "POST", "/api/run", "", map[string]string{TokenHeader: testToken}, strings.NewReader("x"))
	if code != http.StatusAccepted {
		t.Fatalf("POST /api/run: %d %s", code, body)
	}
	s.Close()
	id := strings.Split(strings.Split(body, `"id":"`)[1], `"`)[0]
	rn := s.runs.get(id)
	evs, _, finished := rn.since(0)
	if !finished || evs[len(evs)-1].name != "run_error" {
		t.Errorf("after Close: finished %v, last event %q; want the run_error event", finished, evs[len(evs)-1].name)
	}
}

// TestReadSeries: mean utilisation per class of port and interval, a missing row counting
// as 0; a file without the columns is refused.
func TestReadSeries(t *testing.T) {
	csv := "start_us,end_us,port,node,plane,tier,rate_gbps,util_pct\n" +
		"0,1,h0.p0,h0,0,-1,100,100\n" +
		"0,1,h1.p0,h1,0,-1,100,50\n" +
		"1,2,h0.p0,h0,0,-1,100,20\n" +
		"0,1,p0.t0-0.up0,p0.t0-0,0,0,100,40\n" +
		"1,2,p0.t0-0.down1,p0.t0-0,0,0,100,30\n" +
		"1,2,x0y0z0.r.x+,x0y0z0.r,0,0,100,10\n"
	s, err := readSeries(strings.NewReader(csv))
	must(t, err)
	want := map[string][]float64{"NIC": {75, 10}, "T0 up": {40, 0}, "T0 down": {0, 30}, "T0": {0, 10}}
	if len(s.X) != 2 || s.X[0] != 0 || s.X[1] != 1 || len(s.Lines) != len(want) || s.Lines[0].Name != "NIC" {
		t.Fatalf("series %+v", s)
	}
	for _, l := range s.Lines {
		w := want[l.Name]
		if len(l.Y) != 2 || l.Y[0] != w[0] || l.Y[1] != w[1] {
			t.Errorf("%s: %v, want %v", l.Name, l.Y, w)
		}
	}
	if _, err := readSeries(strings.NewReader("a,b\n1,2\n")); err == nil || !strings.Contains(err.Error(), "start_us") {
		t.Errorf("no columns: %v", err)
	}
	if _, err := readSeries(strings.NewReader("start_us,port,tier,util_pct\nx,h0.p0,-1,5\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad number: %v", err)
	}
}

// TestHeadline: top-level and nested figures, the best busbw of the collectives rows, and
// nothing for what a run lacks.
func TestHeadline(t *testing.T) {
	for _, c := range []struct {
		sum  string
		want string
	}{
		{`{"hosts": 16, "end_us": 210.1, "transport": {"jct_us": 161.5, "fct_p99_us": 160}}`, `{"end_us":210.1,"fct_p99_us":160,"hosts":16,"jct_us":161.5}`},
		{`{"hosts": 8, "collectives": [{"busbw_GBps": 10}, {"busbw_GBps": 40.5}, {"busbw_GBps": 30}]}`, `{"busbw_GBps":40.5,"hosts":8}`},
		{`{"training": {"step_time_us": 1200, "mfu": 0.41}}`, `{"mfu":0.41,"step_time_us":1200}`},
		{`{"transport": "mrc"}`, `{}`},
	} {
		var sum map[string]any
		must(t, json.Unmarshal([]byte(c.sum), &sum))
		got, _ := json.Marshal(Headline(sum))
		if string(got) != c.want {
			t.Errorf("Headline(%s) = %s; want %s", c.sum, got, c.want)
		}
	}
}

// TestRunQueueBound: past MaxRuns running and maxWaiting waiting, a run is refused with 429.
func TestRunQueueBound(t *testing.T) {
	block := make(chan struct{})
	s, err := New(Config{Results: t.TempDir(), Token: testToken, Backend: fakeBackend{block: block}})
	must(t, err)
	defer s.Close()
	defer close(block)
	hdr := map[string]string{TokenHeader: testToken}
	for i := range 1 + maxWaiting {
		if code, body := do(s, "POST", "/api/run", "", hdr, strings.NewReader("x")); code != http.StatusAccepted {
			t.Fatalf("run %d: %d %s", i, code, body)
		}
	}
	code, body := do(s, "POST", "/api/run", "", hdr, strings.NewReader("x"))
	if code != http.StatusTooManyRequests || !strings.Contains(body, "running or waiting") {
		t.Errorf("run %d: %d %s; want 429", 2+maxWaiting, code, body)
	}
}
