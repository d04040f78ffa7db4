package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstepsim/lockstep/serve"
)

// serveLoadEnv sets the load test's length in seconds; the default is a few seconds so that
// go test stays fast (LOCKSTEP_SERVE_LOAD=60 is the figure).
const serveLoadEnv = "LOCKSTEP_SERVE_LOAD"

// TestServeLoad: 50 clients browsing (the page, its assets, the results list, a report, a
// CSV, topologies) and 4 clients each starting a run and following its events to the end,
// against the loopback server: no request fails, and once the server is closed the
// goroutines are back to the count before it started. It logs the requests, runs and the
// peak heap.
func TestServeLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs simulations for seconds")
	}
	secs := 3.0
	if v := os.Getenv(serveLoadEnv); v != "" {
		var err error
		if secs, err = strconv.ParseFloat(v, 64); err != nil || secs <= 0 {
			t.Fatalf("%s=%q: want seconds > 0", serveLoadEnv, v)
		}
	}
	const browsers, runners = 50, 4
	tr := &http.Transport{MaxIdleConnsPerHost: browsers + runners}
	client := &http.Client{Transport: tr}
	base := runtime.NumGoroutine()

	results := t.TempDir()
	srv, token, err := newServeServer(results, false, runners)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)

	var requests, runs, progress atomic.Int64
	var errMu sync.Mutex
	var errs []string
	fail := func(format string, args ...any) {
		errMu.Lock()
		if len(errs) < 20 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
		errMu.Unlock()
	}
	// run starts one run and follows its events; it returns the report's URL.
	run := func() string {
		req, _ := http.NewRequest("POST", ts.URL+"/api/run", strings.NewReader(serveSmall))
		req.Header.Set(serve.TokenHeader, token)
		resp, err := client.Do(req)
		if err != nil {
			fail("POST /api/run: %v", err)
			return ""
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		requests.Add(1)
		if resp.StatusCode != http.StatusAccepted {
			fail("POST /api/run: %d %s", resp.StatusCode, body)
			return ""
		}
		events := strings.Split(strings.Split(string(body), `"events":"`)[1], `"`)[0]
		resp, err = client.Get(ts.URL + events)
		if err != nil {
			fail("GET %s: %v", events, err)
			return ""
		}
		defer resp.Body.Close()
		requests.Add(1)
		sc := bufio.NewScanner(resp.Body)
		last, report := "", ""
		for sc.Scan() {
			line := sc.Text()
			if n, ok := strings.CutPrefix(line, "event: "); ok {
				last = n
				if n == "progress" {
					progress.Add(1)
				}
			}
			if d, ok := strings.CutPrefix(line, "data: "); ok && last == "done" {
				report = strings.Split(strings.Split(d, `"report":"`)[1], `"`)[0]
			}
		}
		if last != "done" {
			fail("run events ended with %q", last)
			return ""
		}
		runs.Add(1)
		return report
	}
	report := run() // a report to browse
	if report == "" {
		t.Fatalf("the first run failed: %v", errs)
	}
	csv := strings.TrimSuffix(report, "report.html") + "flows.csv"
	pages := []string{"/", "/assets/app.js", "/assets/app.css", "/api/results", report, csv, "/api/runs"}
	for _, c := range topoCases {
		pages = append(pages, "/api/topo?"+c.query)
	}

	var peakHeap atomic.Uint64
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		for {
			p := peakHeap.Load()
			if ms.HeapInuse <= p || peakHeap.CompareAndSwap(p, ms.HeapInuse) {
				return
			}
		}
	}
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	var wg sync.WaitGroup
	for i := range browsers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := i; time.Now().Before(end); k++ {
				p := pages[k%len(pages)]
				resp, err := client.Get(ts.URL + p)
				if err != nil {
					fail("GET %s: %v", p, err)
					return
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				requests.Add(1)
				if resp.StatusCode != 200 || n == 0 {
					fail("GET %s: %d, %d bytes", p, resp.StatusCode, n)
				}
			}
		}()
	}
	for range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				if run() == "" {
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				sample()
			}
		}
	}()
	wg.Wait()
	close(done)
	sample()

	ts.Close()
	srv.Close()
	tr.CloseIdleConnections()
	after := runtime.NumGoroutine()
	for i := 0; i < 200 && after > base; i++ { // goroutines of closed connections take a moment to return
		time.Sleep(25 * time.Millisecond)
		after = runtime.NumGoroutine()
	}
	t.Logf("%.0f s: %d requests (%.0f/s), %d runs (%d progress events), peak heap in use %.1f MB; goroutines %d before, %d after",
		secs, requests.Load(), float64(requests.Load())/secs, runs.Load(), progress.Load(), float64(peakHeap.Load())/1e6, base, after)
	for _, e := range errs {
		t.Error(e)
	}
	if after > base {
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
		t.Errorf("goroutines: %d before the server, %d after it closed: leaked\n%s", base, after, b.String())
	}
	if runs.Load() < runners {
		t.Errorf("%d runs finished; want at least %d", runs.Load(), runners)
	}
}
