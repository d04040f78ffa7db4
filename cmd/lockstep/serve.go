package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/lockstepsim/lockstep/serve"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	yaml "go.yaml.in/yaml/v3"
)

func newServeCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		addr, results string
		allowRemote   bool
		jobs          int
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Explore topologies, browse results and start runs in a local web page",
		Long: `Serve a local web application from this binary (no CDN, no fonts fetched: everything is
embedded): a topology explorer (every kind of lockstep topo, drawn, with the same sizing and
blast radius, up to three designs side by side; click an element for its scenario name), a
results browser over --results (each run's report.html and files, an interactive plot of its
links.csv, selected runs' headline figures side by side and their compare.html), and
runs started from the page (validated as lockstep validate does, run as lockstep run does,
progress streamed as server-sent events, the report linked when done).

The server listens on loopback (127.0.0.1:8080) by default; a non-loopback --addr is refused
unless --allow-remote is given (then a warning is printed: anyone who reaches the port can
read results and, with the token, start runs). Open the URL printed at the start: it carries
a random token, made anew at every start, that every state-changing request must carry.
Runs write into new folders under --results; -j of them run at once. Stop with Ctrl-C or
SIGTERM (exit 0): runs in progress stop at their next check and keep what they have, as run's
do.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkJobs(jobs); err != nil {
				return err
			}
			remote, err := serve.CheckAddr(addr, allowRemote)
			if err != nil {
				return badInput(err)
			}
			srv, token, err := newServeServer(results, allowRemote, jobs)
			if err != nil {
				return runFailed(err)
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return badInput(fmt.Errorf("--addr %s: %w", addr, err))
			}
			if remote {
				fmt.Fprintf(stderr, "warning: listening on %s, not loopback (--allow-remote): anyone who reaches it can read %s; runs need the token\n", ln.Addr(), results)
			}
			fmt.Fprintf(stdout, "lockstep serve: open %s\n", serveURL(ln.Addr(), token))
			fmt.Fprintf(stdout, "results directory %s; %d run(s) at once; Ctrl-C stops\n", results, jobs)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sigs)
			stopped := make(chan os.Signal, 1) // the signal that stopped the server, or nil
			go func() {
				select {
				case sig := <-sigs:
					name := "SIGINT"
					if sig == syscall.SIGTERM {
						name = "SIGTERM"
					}
					fmt.Fprintf(stdout, "lockstep serve: %s: stopping (runs in progress stop at their next check and keep what they wrote under %s)\n", name, results)
					stopped <- sig
					cancel()
				case <-ctx.Done():
					stopped <- nil
				}
			}()
			err = srv.Serve(ctx, ln)
			cancel()
			got := <-stopped
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				return runFailed(err)
			}
			if got != nil {
				fmt.Fprintln(stdout, "lockstep serve: stopped") // Serve waited for the runs (Server.Close)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "listen address host:port (loopback unless --allow-remote)")
	f.StringVar(&results, "results", "results", "results directory: the folders listed, and where runs from the page write")
	f.BoolVar(&allowRemote, "allow-remote", false, "allow a non-loopback --addr (prints a warning)")
	f.IntVarP(&jobs, "jobs", "j", max(1, defaultJobs()/2), "runs started from the page that execute at once (more wait)")
	return cmd
}

// serveURL is the URL to open: the listener's address with the token.
func serveURL(a net.Addr, token string) string {
	host := a.String()
	if ta, ok := a.(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		host = net.JoinHostPort("127.0.0.1", fmt.Sprint(ta.Port))
	}
	return "http://" + host + "/?token=" + token
}

// newServeServer returns the server with a fresh token and the CLI's backend.
func newServeServer(results string, allowRemote bool, jobs int) (*serve.Server, string, error) {
	token, err := serve.NewToken()
	if err != nil {
		return nil, "", err
	}
	srv, err := serve.New(serve.Config{Results: results, AllowRemote: allowRemote, Token: token, MaxRuns: jobs, Backend: &cliBackend{}})
	return srv, token, err
}

// cliBackend answers the page's API with the topo, validate and run commands' code.
type cliBackend struct {
	cacheMu sync.Mutex
	cache   map[string]any // /api/topo answers by canonical query (at most topoCacheSize)
	order   []string
}

// topoCacheSize is how many /api/topo answers the backend keeps: a large fabric takes
// a while to size, and the page asks for the same designs again.
const topoCacheSize = 64

// topoSem bounds the fabrics sized at once (a 3-tier Clos of 100k hosts takes ~0.1 s).
var topoSem = make(chan struct{}, max(1, defaultJobs()))

// topoAnswer is what /api/topo returns: topo --json's fabric, the table rows the terminal
// prints, and the drawing.
type topoAnswer struct {
	fabricJSON
	Rows    [][2]string `json:"rows"`  // sizingRows: label, value as `lockstep topo` prints them
	Notes   []string    `json:"notes"` // sizing notes
	Blast   [][5]string `json:"blast"` // element, loses, of, affected, note: the blast radius table
	Drawing *drawing    `json:"drawing"`
	Command string      `json:"command"` // the lockstep topo command line that prints the same
}

// Topo parses q as the topo command's flags (kind=clos&planes=8 is --kind clos --planes 8)
// and sizes the fabric with the command's own code (topoOpts.spec, sizeSpec, sizingRows).
func (b *cliBackend) Topo(q url.Values) (any, error) {
	keys := make([]string, 0, len(q))
	for k := range q {
		if k != "token" && k != "_" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var argv []string
	for _, k := range keys {
		for _, v := range q[k] {
			argv = append(argv, "--"+k+"="+v)
		}
	}
	canon := strings.Join(argv, " ")
	b.cacheMu.Lock()
	if v, ok := b.cache[canon]; ok {
		b.cacheMu.Unlock()
		return v, nil
	}
	b.cacheMu.Unlock()

	var o topoOpts
	fs := pflag.NewFlagSet("topo", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addTopoFlags(fs, &o)
	if err := fs.Parse(argv); err != nil {
		return nil, serve.BadInput(flagValueError(nil, err))
	}
	spec, err := o.spec(fs)
	if err != nil {
		return nil, serve.BadInput(err)
	}
	topoSem <- struct{}{}
	f, err := sizeSpec(spec)
	<-topoSem
	if err != nil {
		return nil, serve.BadInput(err)
	}
	s := f.topo.Sizing()
	a := topoAnswer{fabricJSON: fabricJSON{f.kind, f.label, f.config, s, f.topo.BlastRadius()},
		Rows: sizingRows(s, f.topo.Params()), Notes: s.Notes, Drawing: drawFabric(f, s),
		Command: "lockstep topo " + strings.Join(argv, " ")}
	if a.Notes == nil {
		a.Notes = []string{}
	}
	for _, bl := range a.BlastRadius {
		note := ""
		if bl.Note != "" {
			note = "(" + bl.Note + ")"
		}
		a.Blast = append(a.Blast, [5]string{bl.Element, percent(bl.Share), bl.Lost, commas(bl.Affected) + " " + bl.AffectedKind, note})
	}
	// The answer is marshalled once here so the cache holds bytes, not the topology.
	js, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	raw := json.RawMessage(js)
	b.cacheMu.Lock()
	if b.cache == nil {
		b.cache = map[string]any{}
	}
	if _, ok := b.cache[canon]; !ok {
		b.cache[canon] = raw
		b.order = append(b.order, canon)
		if len(b.order) > topoCacheSize {
			delete(b.cache, b.order[0])
			b.order = b.order[1:]
		}
	}
	b.cacheMu.Unlock()
	return raw, nil
}

// scenarioError turns a scenario error into the API's, with the field path and line of a
// *scenario.FieldError; when the error has no line (the resolver's checks), the line of the
// field in yaml, if it is there.
func scenarioError(err error, src []byte) error {
	e := &serve.Error{Status: http.StatusBadRequest, Msg: oneLine(err.Error())}
	var fe *scenario.FieldError
	if errors.As(err, &fe) {
		e.Path, e.Line = fe.Path, fe.Line
		if e.Line == 0 && e.Path != "" {
			e.Line = fieldLine(src, e.Path)
		}
	}
	return e
}

// pathPart matches one step of a scenario field path: a key, a quoted key, or an index.
var pathPart = regexp.MustCompile(`^(?:\.?([A-Za-z0-9_]+)|\["((?:[^"\\]|\\.)*)"\]|\[(\d+)\])`)

// fieldLine returns the 1-based line of the field at path ("traffic[1].load",
// `labels["odd key"]`) in src, or of the deepest part of it found; 0 when none is.
func fieldLine(src []byte, path string) int {
	var doc yaml.Node
	if yaml.Unmarshal(src, &doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	n, line := doc.Content[0], 0
	for path != "" {
		m := pathPart.FindStringSubmatch(path)
		if m == nil {
			break
		}
		path = path[len(m[0]):]
		var next *yaml.Node
		switch {
		case m[3] != "":
			i, _ := strconv.Atoi(m[3])
			if n.Kind == yaml.SequenceNode && i < len(n.Content) {
				next = n.Content[i]
			}
		default:
			key := m[1]
			if m[2] != "" {
				key, _ = strconv.Unquote(`"` + m[2] + `"`)
			}
			if n.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(n.Content); i += 2 {
					if n.Content[i].Value == key {
						line, next = n.Content[i].Line, n.Content[i+1]
						break
					}
				}
			}
		}
		if next == nil {
			break
		}
		n = next
		if n.Line > 0 && line == 0 {
			line = n.Line
		}
	}
	return line
}

// validated is /api/validate's answer for a valid scenario.
type validated struct {
	Valid    bool              `json:"valid"`
	Name     string            `json:"name"`
	Describe string            `json:"describe"` // the line run prints before it starts
	Estimate scenario.Estimate `json:"estimate"`
	Warnings []string          `json:"warnings"`
}

// Validate resolves src (YAML) as lockstep validate does: scenario.Parse, the set-up check of the
// runner (setupCheck), then the estimate.
func (b *cliBackend) Validate(src []byte) (any, error) {
	sc, err := scenario.Parse(src)
	if err != nil {
		return nil, scenarioError(err, src)
	}
	var warn bytes.Buffer
	if err := setupCheck(sc, "", &warn); err != nil {
		return nil, scenarioError(err, src)
	}
	e, err := sc.Estimate()
	if err != nil {
		return nil, scenarioError(err, src)
	}
	v := validated{Valid: true, Name: sc.Name, Describe: describe(sc), Estimate: e, Warnings: []string{}}
	for _, l := range strings.Split(strings.TrimSpace(warn.String()), "\n") {
		if l != "" {
			v.Warnings = append(v.Warnings, strings.TrimPrefix(l, "warning: "))
		}
	}
	return v, nil
}

// folderName keeps a scenario name's safe characters for a results folder name.
var folderName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// PrepareRun resolves src (YAML) (scenario.Parse, as run does; its estimate limits applied by the
// resolver) and returns a job that runs it into results/serve/<name>-<time> through a
// one-job pool of pool.go, as run and sweep do.
func (b *cliBackend) PrepareRun(src []byte, results string) (*serve.Job, error) {
	sc, err := scenario.Parse(src)
	if err != nil {
		return nil, scenarioError(err, src)
	}
	name := strings.Trim(folderName.ReplaceAllString(sc.Name, "_"), "._")
	if name == "" {
		name = "run"
	}
	suffix, err := serve.NewToken()
	if err != nil {
		return nil, err
	}
	rel := "serve/" + name + "-" + time.Now().UTC().Format("20060102-150405") + "-" + suffix[:6]
	sc.Run.Out = filepath.Join(results, filepath.FromSlash(rel)) // run.out of the file is not used: runs stay inside --results
	return &serve.Job{Name: sc.Name, Dir: rel, Exec: func(ctx context.Context, progress func(serve.Progress)) (serve.Outcome, error) {
		return execServeRun(ctx, sc, progress)
	}}, nil
}

// execServeRun runs sc through a one-job pool (startPool, as run and sweep) with a progress
// callback, stopping it at its next interrupt check when ctx is cancelled.
func execServeRun(ctx context.Context, sc *scenario.Scenario, progress func(serve.Progress)) (serve.Outcome, error) {
	intr := &runner.Interrupt{}
	stopAfter := context.AfterFunc(ctx, func() { intr.Request("server stopped") })
	defer stopAfter()
	var warnings []string
	var stderr bytes.Buffer
	p := startPool(1, 1, intr, &stderr, func(int, io.Writer) (*runner.Result, []byte, error) {
		// Progress every 16,384 events at packet level (a few a second on a small run; the
		// terminal's 1<<20 would give none); at flow level the runner's default (256 events,
		// each a rate recompute).
		every := uint64(1 << 14)
		if sc.Fluid() {
			every = 0
		}
		start := time.Now()
		return runAndWrite(sc, "run.out", runOpts{intr: intr, quiet: true, stderr: io.Discard, progressEvents: every,
			warn: func(w string) { warnings = append(warnings, w) },
			progress: func(p runner.Progress) {
				pct := -1.0
				switch {
				case p.Total > 0:
					pct = 100 * p.Done / p.Total
				case p.Target > 0:
					pct = min(100, 100*float64(p.Now)/float64(p.Target))
				}
				progress(serve.Progress{Phase: p.Phase, NowUs: p.Now.Micros(), Percent: pct, Events: p.Events, WallS: p.Wall.Seconds(),
					Unit: p.Unit, Label: progressLine(p, time.Since(start))})
			}})
	})
	j := p.next(0)
	p.wait()
	if j.err != nil {
		return serve.Outcome{}, errors.New(oneLine(j.err.Error()))
	}
	s := &j.res.Summary
	var sum map[string]any
	_ = json.Unmarshal(j.js, &sum)
	return serve.Outcome{Complete: s.Complete, Failed: s.Failed, FailureReason: s.FailureReason, Headline: serve.Headline(sum), Warnings: warnings}, nil
}
