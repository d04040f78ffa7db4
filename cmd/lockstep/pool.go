package main

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/lockstepsim/lockstep/runner"
	"github.com/lockstepsim/lockstep/scenario"
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
					j.res, j.js, j.err = run(i, &j.stderr)
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
		j.res, j.js, j.err = p.run(i, p.stderr)
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
