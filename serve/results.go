package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockstepsim/lockstep/report"
)

// maxListed bounds how many results folders /api/results lists (the newest first).
const maxListed = 500

// maxSummaryBytes bounds the summary.json read for a folder's headline.
const maxSummaryBytes = 4 << 20

// headlineKeys are the summary.json figures /api/results shows, when a run has them: the
// name shown, and its path in summary.json (docs/outputs.md).
var headlineKeys = [][2]string{
	{"hosts", "hosts"}, {"flows", "flows"}, {"end_us", "end_us"}, {"delivered_gbps", "delivered_gbps"},
	{"jct_us", "transport.jct_us"}, {"fct_p99_us", "transport.fct_p99_us"}, {"retx_packets", "transport.retx_packets"},
	{"fault_slowdown_us", "fault_slowdown_us"},
	{"step_time_us", "training.step_time_us"}, {"mfu", "training.mfu"}, {"chakra_step_time_us", "chakra.step_time_us"},
}

// ResultFolder is one results folder as /api/results lists it.
type ResultFolder struct {
	// Dir is the folder relative to the results directory, slash-separated.
	Dir           string         `json:"dir"`
	Scenario      string         `json:"scenario"`
	Complete      bool           `json:"complete"`
	Failed        bool           `json:"failed"`
	FailureReason string         `json:"failure_reason,omitempty"`
	Headline      map[string]any `json:"headline"`
	// Report is report.html's URL when the folder has one; Files the folder's other files.
	Report   string   `json:"report,omitempty"`
	Files    []string `json:"files"`
	Modified string   `json:"modified"` // summary.json's modification time, RFC 3339
	mod      int64
}

// Headline picks headlineKeys out of a decoded summary.json, and busbw_GBps, the largest
// bus bandwidth of its collectives rows.
func Headline(sum map[string]any) map[string]any {
	h := map[string]any{}
	for _, k := range headlineKeys {
		var v any = sum
		for _, part := range strings.Split(k[1], ".") {
			m, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = m[part]
		}
		if v != nil {
			h[k[0]] = v
		}
	}
	if rows, ok := sum["collectives"].([]any); ok {
		best := -1.0
		for _, r := range rows {
			if m, ok := r.(map[string]any); ok {
				if b, ok := m["busbw_GBps"].(float64); ok && b > best {
					best = b
				}
			}
		}
		if best >= 0 {
			h["busbw_GBps"] = best
		}
	}
	return h
}

// listResults answers GET /api/results: every folder holding a summary.json, at depth 1 or 2
// (a sweep's variants) under the results directory, newest first.
func (s *Server) listResults(w http.ResponseWriter, r *http.Request) {
	root, err := filepath.EvalSymlinks(s.cfg.Results)
	if errors.Is(err, fs.ErrNotExist) {
		writeJSON(w, http.StatusOK, map[string]any{"dir": s.cfg.Results, "folders": []ResultFolder{}})
		return
	}
	if err != nil {
		writeError(w, fmt.Errorf("results directory %s: %w", s.cfg.Results, err))
		return
	}
	var out []ResultFolder
	var walk func(dir, rel string, depth int)
	walk = func(dir, rel string, depth int) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || len(out) >= 4*maxListed {
				continue // symlinks are not followed: folders outside the root are not listed
			}
			sub, subRel := filepath.Join(dir, e.Name()), pathJoin(rel, e.Name())
			if f, ok := s.folders.readFolder(sub, subRel); ok {
				out = append(out, f)
			}
			if depth < 2 {
				walk(sub, subRel, depth+1)
			}
		}
	}
	walk(root, "", 1)
	slices.SortStableFunc(out, func(a, b ResultFolder) int {
		if a.mod != b.mod {
			if a.mod > b.mod {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Dir, b.Dir)
	})
	if len(out) > maxListed {
		out = out[:maxListed]
	}
	if out == nil {
		out = []ResultFolder{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"dir": s.cfg.Results, "folders": out})
}

func pathJoin(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// folderKey identifies what a listed folder was read from: a changed summary.json or a
// changed file list gives a new key.
type folderKey struct {
	sumSize, sumMod, dirMod int64
}

// folderCache holds the folders /api/results read, by folder, so a listing reads again only
// those whose summary.json or file list changed.
type folderCache struct {
	mu sync.Mutex
	m  map[string]cachedFolder
}

type cachedFolder struct {
	key folderKey
	f   ResultFolder
}

// readFolder reads dir's summary.json headline (through the cache); ok is false when it
// has none (or it is not JSON).
func (c *folderCache) readFolder(dir, rel string) (ResultFolder, bool) {
	st, err := os.Lstat(filepath.Join(dir, "summary.json"))
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxSummaryBytes {
		return ResultFolder{}, false
	}
	dst, err := os.Stat(dir)
	if err != nil {
		return ResultFolder{}, false
	}
	key := folderKey{st.Size(), st.ModTime().UnixNano(), dst.ModTime().UnixNano()}
	c.mu.Lock()
	if e, ok := c.m[rel]; ok && e.key == key {
		c.mu.Unlock()
		return e.f, true
	}
	c.mu.Unlock()
	f, ok := readFolder(dir, rel)
	if !ok {
		return f, false
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) > 4*maxListed {
		c.m = map[string]cachedFolder{} // forget folders deleted since
	}
	c.m[rel] = cachedFolder{key, f}
	c.mu.Unlock()
	return f, true
}

// readFolder reads dir's summary.json headline; ok is false when it has none (or it is not
// JSON).
func readFolder(dir, rel string) (ResultFolder, bool) {
	p := filepath.Join(dir, "summary.json")
	st, err := os.Lstat(p)
	if err != nil || !st.Mode().IsRegular() || st.Size() > maxSummaryBytes {
		return ResultFolder{}, false
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return ResultFolder{}, false
	}
	var sum map[string]any
	if json.Unmarshal(data, &sum) != nil {
		return ResultFolder{}, false
	}
	f := ResultFolder{Dir: rel, Headline: Headline(sum), mod: st.ModTime().UnixNano(), Modified: st.ModTime().UTC().Format("2006-01-02T15:04:05Z")}
	f.Scenario, _ = sum["scenario"].(string)
	f.Complete, _ = sum["complete"].(bool)
	f.Failed, _ = sum["failed"].(bool)
	f.FailureReason, _ = sum["failure_reason"].(string)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			f.Files = append(f.Files, e.Name())
			if e.Name() == "report.html" {
				f.Report = "/results/" + escapePath(rel) + "/report.html"
			}
		}
	}
	return f, true
}

// escapePath URL-escapes each segment of a slash-separated path.
func escapePath(rel string) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// resultsCSP is the policy results files are served with: no script, nothing fetched but
// the server's own images and styles (report.html inlines its CSS and SVG).
const resultsCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; font-src data:; script-src 'none'; frame-ancestors 'self'; base-uri 'none'; form-action 'none'"

// resultFile answers GET /results/{path...}: a regular file inside the results directory,
// after resolving symlinks. A path outside gets 403, a missing file or a folder 404.
func (s *Server) resultFile(w http.ResponseWriter, r *http.Request) {
	rel := r.PathValue("path")
	full, err := s.ResolveResult(rel)
	if err != nil {
		writeError(w, err)
		return
	}
	f, err := os.Open(full)
	if err != nil {
		writeError(w, &Error{Status: http.StatusNotFound, Msg: fmt.Sprintf("results file %q: cannot be opened", rel)})
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		writeError(w, &Error{Status: http.StatusNotFound, Msg: fmt.Sprintf("results file %q: not a regular file", rel)})
		return
	}
	w.Header().Set("Content-Security-Policy", resultsCSP)
	w.Header().Set("Content-Type", contentType(full))
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// ResolveResult returns the real path of rel (slash-separated, relative) inside the results
// directory. Errors (as *Error): a ".." segment or an absolute path (400), a path that
// resolves outside the results directory, through a symlink or otherwise (403), a missing
// file (404).
func (s *Server) ResolveResult(rel string) (string, error) {
	if rel == "" || strings.HasPrefix(rel, "/") || filepath.IsAbs(rel) {
		return "", &Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf("results path %q: give a path inside the results directory", rel)}
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == ".." {
			return "", &Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf("results path %q: path traversal (\"..\") refused", rel)}
		}
	}
	root, err := filepath.EvalSymlinks(s.cfg.Results)
	if err != nil {
		return "", &Error{Status: http.StatusNotFound, Msg: fmt.Sprintf("results directory %s does not exist", s.cfg.Results)}
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return "", err
	}
	full, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return "", &Error{Status: http.StatusNotFound, Msg: fmt.Sprintf("results file %q not found", rel)}
	}
	if full, err = filepath.Abs(full); err != nil {
		return "", err
	}
	if full != root && !strings.HasPrefix(full, root+string(filepath.Separator)) {
		return "", &Error{Status: http.StatusForbidden, Msg: fmt.Sprintf("results path %q resolves outside the results directory (a symlink?): refused", rel)}
	}
	return full, nil
}

// maxCompared bounds the runs one compare page holds.
const maxCompared = 8

// compareRuns answers POST /api/compare: the body is {"dirs": [...]}, two or more results
// folders relative to the results directory; report.WriteCompare writes their compare.html
// into a new folder serve/compare-<UTC time>-<random>, and the answer is its URL.
func (s *Server) compareRuns(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var req struct {
		Dirs []string `json:"dirs"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, &Error{Status: http.StatusBadRequest, Msg: `compare: want {"dirs": ["run1", "run2"]}: ` + err.Error()})
		return
	}
	if len(req.Dirs) < 2 || len(req.Dirs) > maxCompared {
		writeError(w, &Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf("compare: %d folders; give 2 to %d", len(req.Dirs), maxCompared)})
		return
	}
	var dirs []string
	for _, d := range req.Dirs {
		full, err := s.ResolveResult(d)
		if err != nil {
			writeError(w, err)
			return
		}
		if st, err := os.Stat(filepath.Join(full, "summary.json")); err != nil || !st.Mode().IsRegular() {
			writeError(w, &Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf("compare: %q is not a results folder (no summary.json)", d)})
			return
		}
		dirs = append(dirs, full)
	}
	suffix, err := NewToken()
	if err != nil {
		writeError(w, err)
		return
	}
	rel := "serve/compare-" + time.Now().UTC().Format("20060102-150405") + "-" + suffix[:6]
	out := filepath.Join(s.cfg.Results, filepath.FromSlash(rel))
	if err := os.MkdirAll(out, 0o755); err != nil {
		writeError(w, fmt.Errorf("compare: %w", err))
		return
	}
	if err := report.WriteCompare(filepath.Join(out, "compare.html"), nil, dirs); err != nil {
		os.RemoveAll(out)
		writeError(w, &Error{Status: http.StatusBadRequest, Msg: "compare: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"dir": rel, "page": "/results/" + escapePath(rel) + "/compare.html"})
}
