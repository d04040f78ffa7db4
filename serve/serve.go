package serve

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// MaxUploadBytes is the most a request body (a scenario upload) may hold: 1 MiB, far above
// any hand-written scenario (the presets are under 4 KiB) and small enough that 50 clients
// uploading at once cost 50 MiB at most.
const MaxUploadBytes = 1 << 20

// TokenHeader is the request header that carries the per-start token (the token query
// parameter works too).
const TokenHeader = "X-Lockstep-Token"

//go:embed assets
var assets embed.FS

// Backend computes what the API returns; cmd/lockstep implements it with the topo, validate
// and run commands' code. Errors of type *Error choose their status; others are 500.
type Backend interface {
	// Topo sizes the fabric the query describes (the topo command's flags without dashes,
	// e.g. kind=clos&planes=8&radix=512) and returns it as JSON-ready data.
	Topo(q url.Values) (any, error)
	// Validate resolves a scenario (YAML) as `lockstep validate` does and returns what the
	// page shows: the resolved scenario's name and estimate, warnings.
	Validate(yaml []byte) (any, error)
	// PrepareRun resolves a scenario (YAML) and returns a job that runs it into a new folder
	// under the results directory; errors before it runs (bad input) are returned here.
	PrepareRun(yaml []byte, resultsDir string) (*Job, error)
}

// Job is one prepared run.
type Job struct {
	// Name is the scenario's name; Dir the results folder it writes, relative to the results
	// directory (slash-separated).
	Name, Dir string
	// Exec runs the job. It calls progress from the run's goroutine (it must not block) and
	// stops early when ctx is cancelled; it returns what the final event carries.
	Exec func(ctx context.Context, progress func(Progress)) (Outcome, error)
}

// Progress is one progress report of a run, as the events stream sends it.
type Progress struct {
	Phase   string  `json:"phase"`           // "run", or "baseline" for a run's faultless twin
	NowUs   float64 `json:"now_us"`          // simulated time, µs
	Percent float64 `json:"percent"`         // 0..100 of the work (or of the target time); -1 unknown
	Events  uint64  `json:"events"`          // events dispatched so far in this phase
	WallS   float64 `json:"wall_s"`          // wall-clock seconds in this phase
	Unit    string  `json:"unit,omitempty"`  // what Percent measures
	Label   string  `json:"label,omitempty"` // the terminal's progress line
}

// Outcome is what a finished run's final event carries.
type Outcome struct {
	// Complete, Failed and FailureReason are summary.json's: the run reached its end (not
	// interrupted), and whether it failed (packet conservation, a drain, a QP error...) and why.
	Complete      bool   `json:"complete"`
	Failed        bool   `json:"failed"`
	FailureReason string `json:"failure_reason,omitempty"`
	// Headline is a few of summary.json's figures (name -> value).
	Headline map[string]any `json:"headline,omitempty"`
	// Warnings are the runner's warnings.
	Warnings []string `json:"warnings,omitempty"`
}

// Error is an API error: an HTTP status and a message, with the scenario field and line it
// is about when known. It is sent as JSON {"error", "path", "line"}.
type Error struct {
	Status int
	Msg    string
	Path   string // YAML path of the field ("topology.clos.radix"), or ""
	Line   int    // 1-based line of the YAML input, or 0
}

// Error returns the message.
func (e *Error) Error() string { return e.Msg }

// BadInput returns err as a 400 error.
func BadInput(err error) *Error { return &Error{Status: http.StatusBadRequest, Msg: err.Error()} }

// Config is what the server needs.
type Config struct {
	// Results is the results directory: the folders listed and served, and where runs write.
	Results string
	// AllowRemote lets requests with any Host header in (the listener may be non-loopback).
	AllowRemote bool
	// Token guards POSTs; NewToken makes one.
	Token string
	// MaxRuns is how many runs may execute at once (further ones wait); default 1.
	MaxRuns int
	// Backend computes the answers.
	Backend Backend
}

// Server is the HTTP handler of lockstep serve. Close stops its runs and event streams.
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	runs    *runs
	folders folderCache // /api/results' folders already read
	closing chan struct{}
	once    sync.Once
}

// New returns a server for cfg. Errors: no Backend, no token, a results directory that
// cannot be made absolute.
func New(cfg Config) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("serve: no backend")
	}
	if len(cfg.Token) < 16 {
		return nil, errors.New("serve: the token must be at least 16 characters (NewToken)")
	}
	if cfg.MaxRuns < 1 {
		cfg.MaxRuns = 1
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), closing: make(chan struct{})}
	s.runs = newRuns(cfg.MaxRuns)
	s.routes()
	return s, nil
}

// NewToken returns 128 random bits from crypto/rand as 32 hex digits.
func NewToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("serve: reading random bytes for the token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// CheckAddr validates a listen address host:port. A host that is not loopback (127.0.0.0/8,
// ::1, "localhost"), including an empty host (every interface), is refused unless
// allowRemote; then remote reports true so the caller prints a warning.
func CheckAddr(addr string, allowRemote bool) (remote bool, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--addr: %q is not host:port (e.g. 127.0.0.1:8080): %v", addr, err)
	}
	if port == "" {
		return false, fmt.Errorf("--addr: %q has no port; give host:port, e.g. 127.0.0.1:8080", addr)
	}
	if isLoopbackHost(host) {
		return false, nil
	}
	shown := host
	if ip := net.ParseIP(strings.Trim(host, "[]")); host == "" || ip != nil && ip.IsUnspecified() {
		shown = "every interface"
	}
	if !allowRemote {
		return true, fmt.Errorf("--addr: %q listens on %s, not loopback: anyone who can reach it could start runs and read results; give --allow-remote to mean it, or use 127.0.0.1:%s", addr, shown, port)
	}
	return true, nil
}

// isLoopbackHost reports whether host (no port) is "localhost" or a loopback IP.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// ServeHTTP checks the request (Host, path, token, body size) and routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.AllowRemote {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if !isLoopbackHost(host) {
			writeError(w, &Error{Status: http.StatusForbidden, Msg: fmt.Sprintf("Host %q is not loopback: this server answers only 127.0.0.1, ::1 and localhost (start it with --allow-remote to serve others)", r.Host)})
			return
		}
	}
	if bad := traversal(r.URL); bad != "" {
		writeError(w, &Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf("path %q: %s refused", r.URL.EscapedPath(), bad)})
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		got := r.Header.Get(TokenHeader)
		if got == "" {
			got = r.URL.Query().Get("token")
		}
		if subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) != 1 {
			msg := "this request changes state and needs the token printed when the server started (header " + TokenHeader + " or ?token=)"
			if got != "" {
				msg = "wrong token: " + msg
			}
			writeError(w, &Error{Status: http.StatusForbidden, Msg: msg})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxUploadBytes)
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	s.mux.ServeHTTP(w, r)
}

// traversal says what is wrong with u's path ("" when nothing): a ".." segment after URL
// decoding, a NUL byte, a backslash or an empty segment ("//").
func traversal(u *url.URL) string {
	p := u.Path
	if strings.ContainsRune(p, 0) {
		return "a NUL byte"
	}
	if strings.Contains(p, `\`) {
		return "a backslash"
	}
	if strings.Contains(p, "//") {
		return "an empty path segment"
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "path traversal (a \"..\" segment)"
		}
	}
	// Encoded twice ("%252e%252e") decodes once to "%2e%2e": refuse that too.
	if dec, err := url.PathUnescape(p); err == nil && dec != p {
		for _, seg := range strings.Split(dec, "/") {
			if seg == ".." {
				return "path traversal (an encoded \"..\" segment)"
			}
		}
	}
	return ""
}

// Close stops the server's runs (each stops at its next interrupt check and writes what it
// has) and ends its event streams, then waits for the runs to return.
func (s *Server) Close() {
	s.once.Do(func() { close(s.closing) })
	s.runs.stopAll()
}

// Serve serves on ln until ctx is cancelled, then shuts down: event streams end,
// runs stop, and in-flight requests get up to 5 s.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	s.Close()
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(shut)
	<-errc
	return err
}

func (s *Server) routes() {
	sub, _ := fs.Sub(assets, "assets")
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		serveAsset(w, r, sub, "index.html")
	})
	s.mux.HandleFunc("GET /assets/{file}", func(w http.ResponseWriter, r *http.Request) {
		serveAsset(w, r, sub, r.PathValue("file"))
	})
	s.mux.HandleFunc("GET /api/topo", func(w http.ResponseWriter, r *http.Request) {
		v, err := s.cfg.Backend.Topo(r.URL.Query())
		reply(w, v, err)
	})
	s.mux.HandleFunc("GET /api/results", s.listResults)
	s.mux.HandleFunc("GET /api/series", s.series)
	s.mux.HandleFunc("GET /results/{path...}", s.resultFile)
	s.mux.HandleFunc("POST /api/validate", func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(r)
		if err != nil {
			writeError(w, err)
			return
		}
		v, err := s.cfg.Backend.Validate(body)
		var e *Error
		if errors.As(err, &e) && e.Status == http.StatusBadRequest {
			// An invalid scenario is an answer, not a failed request.
			writeJSON(w, http.StatusOK, map[string]any{"valid": false, "error": e.Msg, "path": e.Path, "line": e.Line})
			return
		}
		reply(w, v, err)
	})
	s.mux.HandleFunc("POST /api/run", s.startRun)
	s.mux.HandleFunc("POST /api/compare", s.compareRuns)
	s.mux.HandleFunc("GET /api/run/{id}/events", s.runEvents)
	s.mux.HandleFunc("GET /api/runs", func(w http.ResponseWriter, r *http.Request) {
		reply(w, s.runs.list(), nil)
	})
}

// contentSecurityPolicy is the page's policy: its own origin only.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

func serveAsset(w http.ResponseWriter, r *http.Request, sub fs.FS, name string) {
	data, err := fs.ReadFile(sub, name)
	if err != nil {
		writeError(w, &Error{Status: http.StatusNotFound, Msg: fmt.Sprintf("no asset %q", name)})
		return
	}
	w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
	w.Header().Set("Content-Type", contentType(name))
	http.ServeContent(w, r, name, time.Time{}, strings.NewReader(string(data)))
}

// readBody reads a request body within MaxUploadBytes, naming the limit when it is passed.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("upload too large: a scenario may be at most %d bytes (1 MiB); this one is larger", mbe.Limit)}
		}
		return nil, &Error{Status: http.StatusBadRequest, Msg: "reading the request body: " + err.Error()}
	}
	return body, nil
}

// reply writes v as JSON, or err.
func reply(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	js, err := json.Marshal(v)
	if err != nil {
		writeError(w, fmt.Errorf("encoding the answer: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(js, '\n'))
}

// writeError writes err as JSON {"error", "path", "line"} with its status (500 unless *Error).
func writeError(w http.ResponseWriter, err error) {
	e := &Error{Status: http.StatusInternalServerError, Msg: err.Error()}
	errors.As(err, &e)
	type body struct {
		Error string `json:"error"`
		Path  string `json:"path,omitempty"`
		Line  int    `json:"line,omitempty"`
	}
	js, _ := json.Marshal(body{e.Msg, e.Path, e.Line})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(e.Status)
	_, _ = w.Write(append(js, '\n'))
}

// contentType is the MIME type of a served file, by extension; unknown ones are plain text
// (nosniff keeps the browser from guessing).
func contentType(name string) string {
	ext := name[strings.LastIndexByte(name, '.')+1:]
	switch strings.ToLower(ext) {
	case "html":
		return "text/html; charset=utf-8"
	case "css":
		return "text/css; charset=utf-8"
	case "js":
		return "text/javascript; charset=utf-8"
	case "json":
		return "application/json; charset=utf-8"
	case "svg":
		return "image/svg+xml"
	case "png":
		return "image/png"
	case "csv":
		return "text/csv; charset=utf-8"
	case "yaml", "yml", "txt", "md":
		return "text/plain; charset=utf-8"
	default:
		return "application/octet-stream"
	}
}
