package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// maxKeptRuns bounds the finished runs the server remembers (their events); older ones are
// forgotten (their folders stay).
const maxKeptRuns = 200

// maxWaiting is how many runs may wait for a slot; a run started past it gets 429.
const maxWaiting = 32

// progressEvery is the least wall time between two progress events of one run.
const progressEvery = 100 * time.Millisecond

// event is one server-sent event of a run: its sequence number, name and JSON data.
type event struct {
	seq  int
	name string
	data []byte
}

// run is one run started from the page.
type run struct {
	id, name, dir string
	started       time.Time

	mu       sync.Mutex
	events   []event       // queued, started, the latest progress, then done or error
	changed  chan struct{} // closed and replaced at each new event
	finished bool
	seq      int
	lastProg time.Time
}

// publish appends an event (a progress event replaces a progress event just before it).
func (r *run) publish(name string, v any, final bool) {
	data, _ := json.Marshal(v)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	if name == "progress" {
		if now := time.Now(); now.Sub(r.lastProg) < progressEvery {
			return
		} else {
			r.lastProg = now
		}
	}
	r.seq++
	ev := event{r.seq, name, data}
	if n := len(r.events); name == "progress" && n > 0 && r.events[n-1].name == "progress" {
		r.events[n-1] = ev
	} else {
		r.events = append(r.events, ev)
	}
	r.finished = final
	close(r.changed)
	r.changed = make(chan struct{})
}

// since returns the events after seq, a channel closed at the next event, and whether the
// run has finished.
func (r *run) since(seq int) ([]event, chan struct{}, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.events {
		if e.seq > seq {
			out = append(out, e)
		}
	}
	return out, r.changed, r.finished
}

// runs is the server's run registry and the slots runs execute in.
type runs struct {
	mu    sync.Mutex
	byID  map[string]*run
	order []*run
	slots chan struct{}
	// unfinished counts the runs queued or running.
	unfinished int
	wg         sync.WaitGroup
	ctx        context.Context
	stop       context.CancelFunc
}

func newRuns(max int) *runs {
	ctx, stop := context.WithCancel(context.Background())
	return &runs{byID: map[string]*run{}, slots: make(chan struct{}, max), ctx: ctx, stop: stop}
}

// stopAll cancels every run and waits for them to return.
func (rs *runs) stopAll() {
	rs.stop()
	rs.wg.Wait()
}

// RunInfo is one run as /api/runs lists it.
type RunInfo struct {
	// ID is the run's id (its events are /api/run/ID/events), Name its scenario's name, Dir
	// its folder relative to the results directory, Started the UTC time it was posted (RFC
	// 3339), Finished whether its final event was sent.
	ID       string `json:"id"`
	Name     string `json:"name"`
	Dir      string `json:"dir"`
	Started  string `json:"started"`
	Finished bool   `json:"finished"`
}

func (rs *runs) list() []RunInfo {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := []RunInfo{}
	for _, r := range slices.Backward(rs.order) {
		r.mu.Lock()
		out = append(out, RunInfo{r.id, r.name, r.dir, r.started.UTC().Format(time.RFC3339), r.finished})
		r.mu.Unlock()
	}
	return out
}

// add registers a new run, forgetting the oldest finished ones past maxKeptRuns.
func (rs *runs) add(r *run) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.byID[r.id] = r
	rs.order = append(rs.order, r)
	for len(rs.order) > maxKeptRuns {
		old := rs.order[0]
		old.mu.Lock()
		done := old.finished
		old.mu.Unlock()
		if !done {
			break
		}
		delete(rs.byID, old.id)
		rs.order = rs.order[1:]
	}
}

func (rs *runs) get(id string) *run {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.byID[id]
}

// startRun answers POST /api/run: the body is a scenario; bad input is answered at once
// (400, with the field and line), else the run is queued for a slot and its id returned;
// with maxWaiting runs already waiting, 429.
func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	select {
	case <-s.closing:
		writeError(w, &Error{Status: http.StatusServiceUnavailable, Msg: "the server is stopping"})
		return
	default:
	}
	job, err := s.cfg.Backend.PrepareRun(body, s.cfg.Results)
	if err != nil {
		writeError(w, err)
		return
	}
	id, err := NewToken()
	if err != nil {
		writeError(w, err)
		return
	}
	id = id[:12]
	rs := s.runs
	rs.mu.Lock()
	if rs.unfinished >= cap(rs.slots)+maxWaiting {
		n := rs.unfinished
		rs.mu.Unlock()
		writeError(w, &Error{Status: http.StatusTooManyRequests, Msg: fmt.Sprintf("%d runs are running or waiting (at most %d run at once, %d wait): start this one when one has finished", n, cap(rs.slots), maxWaiting)})
		return
	}
	rs.unfinished++
	rs.mu.Unlock()

	rn := &run{id: id, name: job.Name, dir: job.Dir, started: time.Now(), changed: make(chan struct{})}
	s.runs.add(rn)
	rn.publish("queued", map[string]any{"id": id, "name": job.Name, "dir": job.Dir}, false)
	rs.wg.Add(1)
	go func() {
		defer rs.wg.Done()
		defer func() { rs.mu.Lock(); rs.unfinished--; rs.mu.Unlock() }()
		select {
		case rs.slots <- struct{}{}:
		case <-rs.ctx.Done():
			rn.publish("run_error", map[string]any{"error": "the server stopped before the run started"}, true)
			return
		}
		defer func() { <-rs.slots }()
		rn.publish("started", map[string]any{"id": id, "name": job.Name, "dir": job.Dir}, false)
		out, err := job.Exec(rs.ctx, func(p Progress) { rn.publish("progress", p, false) })
		if err != nil {
			rn.publish("run_error", map[string]any{"error": err.Error()}, true)
			return
		}
		type done struct {
			Outcome
			Dir    string `json:"dir"`
			Report string `json:"report"`
		}
		rn.publish("done", done{out, job.Dir, "/results/" + escapePath(job.Dir) + "/report.html"}, true)
	}()
	writeJSON(w, http.StatusAccepted, map[string]any{"id": id, "name": job.Name, "dir": job.Dir,
		"events": "/api/run/" + url.PathEscape(id) + "/events"})
}

// runEvents answers GET /api/run/{id}/events with server-sent events: every event of the run
// so far, then each new one, until the run's final event (done or error), the client going
// away, or the server closing.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	rn := s.runs.get(r.PathValue("id"))
	if rn == nil {
		writeError(w, &Error{Status: http.StatusNotFound, Msg: fmt.Sprintf("no run %q (the server forgets runs when it restarts)", r.PathValue("id"))})
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, fmt.Errorf("streaming is not supported by this connection"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	last := 0
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		fmt.Sscan(id, &last)
	}
	for {
		evs, changed, finished := rn.since(last)
		for _, e := range evs {
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.seq, e.name, e.data); err != nil {
				return
			}
			last = e.seq
		}
		fl.Flush()
		if finished {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
}
