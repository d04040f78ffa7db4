// Package report turns a results folder into a self-contained HTML report and writes
// Chrome/Perfetto trace files.
//
// # The HTML report
//
// [Write] reads the files `lockstep run` leaves in a results folder (docs/outputs.md:
// summary.json, flows.csv, links.csv, pauses.csv, ev_states.csv, faults.csv, collectives.csv,
// power.csv, steps.csv) and writes report.html beside them: the headline figures, an FCT CDF
// (for raw traffic, which has no completion time, a CDF of per-flow goodput), busbw against
// message size for a collective workload, utilisation per tier and plane (a small plot per
// class of port, a line per plane) with the hottest links by name, a queue-depth heatmap over
// links x time, PFC pauses and MRC EV states over time, and a fault timeline whose spans also
// shade the time plots; the time plots end at the traffic's end, not the drain's. links.csv has no row for an interval
// where nothing happened: the plots show those intervals as zero. A training run's page leads
// with its figures (step time and where it went, MFU, power, goodput, OCS events), the cluster's
// power over time with the steps marked, each step's time by category, the step time per step
// with the barrier arrivals and the fault events marked, and a table of the slowest rank and
// link of the first and longest steps; the network's plots follow when the run was simulated
// packet by packet. [WriteCompare] writes one page for
// several runs: links to each run's report.html, their headline figures side by side with
// ratios to the first, busbw against size overlaid for collective runs, FCT CDFs overlaid
// (with, per run, the transfers that never finished; not when every run is a collective
// workload's) and throughput per run. A legend too long for the column beside its plot goes below it, so every
// run is named.
//
// A page is one file that works offline: CSS and the SVG plots are inline, there is no script,
// and a Content-Security-Policy forbids fetching anything (a compare page's links to the runs'
// reports are followed only when clicked). Plots are drawn on the server with
// gonum.org/v1/plot (docs/dependencies.md says why). The same inputs give a byte-identical page.
// A file a run did not write turns its plot into a note ("no data: pauses.csv not written by
// this run (runs with PFC write it)"); a malformed file is an error naming the file, the line
// and the column ([FileError]).
//
// # Traces
//
// [Trace] collects Chrome trace-event format events (the JSON Object Format of "Trace Event
// Format", Google, 2016: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMXGEd9d-rjeBPy1TTA):
// complete events ("X") for spans such as a rank's compute and collective phases or a
// transfer, instant events ("i") for failures, counter events ("C"), flow events ("s" and
// "f" with "bp":"e": an arrow from a send's span to its receive's) and the metadata events
// ("M") that name processes and threads. pids start at 1 (Perfetto treats pid 0 as the
// idle process; the writer refuses it). Times are given in simulator picoseconds and written
// in microseconds, the format's unit, with exact decimals.
//
// To look at a trace, open https://ui.perfetto.dev in a browser, choose "Open trace file" and
// pick the file (Perfetto reads it locally; nothing is uploaded). chrome://tracing (Load)
// reads the same file. Processes are listed by pid with the names given to [Trace.Process],
// their threads by tid with the names given to [Trace.Thread].
package report
