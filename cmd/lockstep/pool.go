package main

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
	"github.com/schollz/progressbar/v3"
)

// poolJob is one scenario of a pool: what runAndWrite returned for it, and the terminal
// output (stderr) it wrote while it ran, held until the jobs before it were printed.
type poolJob struct {
	res     *runner.Result
	js      []byte
	err     error
	skipped bool // never started: a signal came before a worker reached it
	stderr  bytes.Buffer
	done    chan struct{}
}

// pool runs n scenarios on a number of workers and hands their results back in index order,
// so what a command prints is the same whatever the number of workers. With one worker
// nothing runs ahead: job i runs when the caller asks for it, writing to stderr directly (a
// progress bar included), exactly as a serial loop would.
type pool struct {
	jobs    []*poolJob
	workers int
	run     func(i int, stderr io.Writer) (*runner.Result, []byte, error)
	stderr  io.Writer
	wg      sync.WaitGroup
	stop    atomic.Bool // wait was called: start no more jobs
	// running, finished and failed count the jobs for the sweep's progress line
	// (sweepLine): started and not finished, finished (failed included), and finished with
	// an error or a failed outcome.
	running, finished, failed atomic.Int64
}

// status is a snapshot of the pool's counts for the progress line.
func (p *pool) status() poolStatus {
	return poolStatus{total: len(p.jobs), running: int(p.running.Load()), done: int(p.finished.Load()), failed: int(p.failed.Load())}
}

// runJob runs job i, counting it in the status.
func (p *pool) runJob(i int, j *poolJob, stderr io.Writer) {
	p.running.Add(1)
	j.res, j.js, j.err = p.run(i, stderr)
	p.running.Add(-1)
	if j.err != nil || j.res != nil && j.res.Summary.Failed {
		p.failed.Add(1)
	}
	p.finished.Add(1)
}

// poolStatus counts a sweep's variants: total, running now, finished (failed included) and
// failed.
type poolStatus struct{ total, running, done, failed int }

// sweepLine is the sweep's progress line: variants done of all (failed among them), running
// and waiting, the wall time since the sweep began and an ETA from the mean wall time per
// variant done so far (over the workers).
func sweepLine(st poolStatus, elapsed time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "sweep: %d of %d variants done", st.done, st.total)
	if st.failed > 0 {
		fmt.Fprintf(&b, " (%d failed)", st.failed)
	}
	fmt.Fprintf(&b, ", %d running, %d waiting; %v elapsed", st.running, st.total-st.done-st.running, elapsed.Round(time.Second))
	if st.done > 0 && st.done < st.total {
		eta := time.Duration(float64(elapsed) / float64(st.done) * float64(st.total-st.done))
		fmt.Fprintf(&b, ", ETA %v", eta.Round(time.Second))
	}
	return b.String()
}

// showSweepProgress draws sweepLine on stderr every 200 ms while a sweep of several workers
// runs, on a terminal only, and returns a function that clears it (call before printing to
// the terminal) and one that stops it.
func showSweepProgress(p *pool, ro runOpts) (clear, stop func()) {
	if ro.quiet || p.workers <= 1 || !stdoutIsTerminal() {
		return func() {}, func() {}
	}
	var mu sync.Mutex
	start := time.Now()
	bar := progressbar.NewOptions(-1, progressbar.OptionSetWriter(ro.stderr), progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(false), progressbar.OptionClearOnFinish())
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				mu.Lock()
				bar.Describe(sweepLine(p.status(), time.Since(start)))
				_ = bar.Add(1)
				mu.Unlock()
			}
		}
	}()
	var once sync.Once
	return func() {
			mu.Lock()
			_ = bar.Clear()
			mu.Unlock()
		}, func() {
			once.Do(func() {
				close(done)
				mu.Lock()
				_ = bar.Finish()
				mu.Unlock()
			})
		}
}

// defaultJobs is -j's default: one worker per core.
func defaultJobs() int { return runtime.NumCPU() }

// checkJobs validates a -j value.
func checkJobs(j int) error {
	if j < 1 {
		return badInput(fmt.Errorf("-j: %d is not allowed; give the number of variants to run at once (>= 1, default the machine's %d cores)", j, defaultJobs()))
	}
	return nil
}

// startPool starts running n jobs on workers workers (at most n). A worker takes the next
// job not started; once intr has been requested it starts no more (they are marked
// skipped), and the jobs running stop at their next event as the shared Interrupt asks.
// The caller takes the jobs in order with next and must call wait before returning, so no
// worker is left writing a results folder.
func startPool(n, workers int, intr *runner.Interrupt, stderr io.Writer, run func(i int, stderr io.Writer) (*runner.Result, []byte, error)) *pool {
	p := &pool{workers: min(workers, n), run: run, stderr: stderr}
	for range n {
		p.jobs = append(p.jobs, &poolJob{done: make(chan struct{})})
	}
	if p.workers <= 1 {
		return p
	}
	var nextJob atomic.Int64
	for range p.workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for {
				i := int(nextJob.Add(1) - 1)
				if i >= n {
					return
				}
				j := p.jobs[i]
				if intr.Reason() != "" || p.stop.Load() {
					j.skipped = true
				} else {
					p.runJob(i, j, &j.stderr)
				}
				close(j.done)
			}
		}()
	}
	return p
}

// next waits for job i (runs it, with one worker), copies what it wrote to stderr, and
// returns it. Jobs must be taken in order.
func (p *pool) next(i int) *poolJob {
	j := p.jobs[i]
	if p.workers <= 1 {
		p.runJob(i, j, p.stderr)
		close(j.done)
		return j
	}
	<-j.done
	_, _ = p.stderr.Write(j.stderr.Bytes())
	j.stderr.Reset()
	return j
}

// wait starts no more jobs and blocks until every worker has finished the one it runs (to
// its end, or to its next event when interrupted). After the caller took every job it
// returns at once.
func (p *pool) wait() {
	p.stop.Store(true)
	p.wg.Wait()
}

// variantInfo is summary.json's "variant" for v.
func variantInfo(v scenario.Variant) *runner.VariantInfo {
	vi := &runner.VariantInfo{Name: v.Scenario.Name, Values: map[string]string{}}
	for _, pv := range v.Values {
		vi.Values[pv.Key] = pv.Value
	}
	return vi
}
