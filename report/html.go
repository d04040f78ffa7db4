package report

import (
	"fmt"
	"html/template"
	"strings"
)

// page is what the HTML template renders: one run's report or a comparison of several.
type page struct {
	Title    string
	Subtitle string
	Runs     []runLink  // compare pages: each run and a link to its report
	Lead     []string   // a few sentences above the headline table (a training run's figures)
	Headline *htmlTable // nil when summary.json is absent (HeadlineNote says so)
	Note     string     // headline note
	Figures  []figure
	Tables   []*htmlTable // faults.csv, collectives.csv
	All      *htmlTable   // every leaf of summary.json, folded
	Sources  []source
}

// runLink is one run of a compare page: its name, its folder as given, and the relative URL
// of its report.html from the page ("" when there is none).
type runLink struct {
	Name, Dir, Href string
}

// source is one results folder's files, listed at the end of the page.
type source struct {
	Run   string
	Files []fileStatus
}

// htmlTable is a table of text cells.
type htmlTable struct {
	ID      string
	Title   string
	Caption string
	Head    []string
	Rows    [][]cell
	Note    string // under the table, e.g. rows left out
}

// cell is one table cell; numbers are right-aligned.
type cell struct {
	Text string
	Num  bool
}

// runPage builds the page of one run.
func runPage(r *runData) (*page, error) {
	tMax := r.tMax()
	pg := &page{
		Title:    "lockstep report: " + r.name,
		Subtitle: subtitle(r.summary),
		Sources:  []source{{Run: r.name, Files: r.files}},
	}
	if r.summary == nil {
		pg.Note = "no data: " + absent(fileSummary)
	} else {
		units := "_us microseconds, _bytes bytes, _gbps Gb/s, _GBps GB/s, _pct percent"
		if r.summary.isTraining() {
			units = "_us microseconds, _s seconds, _mw megawatts, _mj megajoules, _mwh megawatt-hours, _frac a fraction of 1 (mfu too), _bytes bytes"
		}
		var cells [][2]cell
		for _, p := range headline(r.summary) {
			f, _ := r.summary.get(p)
			if zeroBreakdown(p, f) {
				continue
			}
			cells = append(cells, [2]cell{{Text: p}, {Text: headlineValue(f), Num: f.num}})
		}
		pg.Headline = headlineTable(cells, "Units are in the names: "+units+" (docs/outputs.md).")
		all := &htmlTable{ID: "summary-table", Title: "Every figure of summary.json", Head: []string{"figure", "value"}}
		for i, f := range r.summary.figs {
			// A run with a random failure process lists thousands of events: the first and
			// last rows, the rest counted (summary.json has them all).
			if n := len(r.summary.figs); n > 2*maxTableRows && i >= maxTableRows && i < n-maxTableRows {
				if i == maxTableRows {
					all.Note = fmt.Sprintf("%d of %d figures shown (the first and the last %d); summary.json has them all.", 2*maxTableRows, n, maxTableRows)
				}
				continue
			}
			all.Rows = append(all.Rows, []cell{{Text: f.path}, {Text: f.value, Num: f.num}})
		}
		pg.All = all
	}
	var figs []func() (figure, error)
	if r.isTraining() {
		pg.Lead = trainingLead(r.summary)
		figs = append(figs,
			func() (figure, error) { return powerFigure(r.power, r.steps, r.summary) },
			func() (figure, error) { return stepsFigure(r.steps) },
			func() (figure, error) { return stepSeriesFigure(r.steps, r.summary) },
			func() (figure, error) { return ganttFigure(r.phases) })
		if r.links != nil || r.flows != nil && r.flows.rows > 0 {
			// A packet-level run: the network's plots as for any run.
			figs = append(figs, networkFigures(r, " (a training run lists its steps in steps.csv)")...)
		} else {
			// No packets (the flow-level engine, the closed forms): one note for the network's
			// plots rather than a "no data" note each.
			var missing []string
			for _, f := range []struct {
				file  string
				found bool
			}{{fileFlows, r.flows != nil}, {fileLinks, false}, {filePauses, r.pauses != nil}, {fileEV, r.ev != nil}} {
				if f.found {
					missing = append(missing, f.file+" has no rows")
				} else {
					missing = append(missing, f.file+" not written")
				}
			}
			engine := "this training run"
			if e, ok := r.summary.get("engine"); ok && e.value != "" {
				engine += " (engine " + e.value + ")"
			}
			figs = append(figs, func() (figure, error) {
				return noData(idNetwork, "Network", fmt.Sprintf("the plots of the network's packets (FCT, utilisation, queue depth, PFC pauses, EV states) come from the files a packet-level run writes, and %s sent no packets: %s. Its communication is summed up per step in steps.csv; run.engine packet simulates it packet by packet.",
					engine, strings.Join(missing, ", "))), nil
			})
			if r.faults != nil {
				figs = append(figs, func() (figure, error) { return faultFigure(r.faults, tMax) })
			}
		}
	} else {
		empty := ""
		if r.colls != nil {
			empty = " (a collective workload lists its transfers in collectives.csv)"
		}
		figs = networkFigures(r, empty)
	}
	for _, b := range figs {
		f, err := b()
		if err != nil {
			return nil, err
		}
		pg.Figures = append(pg.Figures, f)
	}
	// The topology picture and its hottest links (topology.go).
	td, st, err := loadTopology(r.dir)
	if err != nil {
		return nil, err
	}
	r.files = append(r.files, st)
	pg.Sources[0].Files = r.files
	topoFig, hot, err := topologyFigure(r, td)
	if err != nil {
		return nil, err
	}
	pg.Figures = append(pg.Figures, topoFig)
	if hot != nil {
		pg.Tables = append(pg.Tables, hot)
	}
	if t := stepsTable(r.steps); t != nil && r.isTraining() {
		pg.Tables = append(pg.Tables, t)
	}
	if r.faults != nil {
		pg.Tables = append(pg.Tables, textTable("faults-table", "What each failure cost (faults.csv)",
			"Times relative to the failure's start except at_us and end_us; empty cells could not be measured.", fileFaults, r.faults.table))
	}
	if r.colls != nil {
		pg.Tables = append(pg.Tables, textTable("collectives-table", "Collectives (collectives.csv)",
			"nccl-tests' columns: algbw = size / time, busbw = algbw x the bus factor; model_us is the closed form.", fileCollectives, r.colls))
	} else if !r.isTraining() {
		pg.Tables = append(pg.Tables, &htmlTable{ID: "collectives-table", Title: "Collectives (collectives.csv)", Note: "no data: " + absent(fileCollectives)})
	}
	return pg, nil
}

// networkFigures are the builders of the plots of a run's packets: busbw against size (a
// collective workload), FCT (or raw goodput), utilisation per tier and plane with the hottest
// links, queue depth, PFC pauses, InfiniBand credits (credits.csv written), EV states and the fault timeline. empty says why flows.csv
// may have no rows. The time plots end at the traffic's end (runData.tEnd); their captions say
// when the drain after it is cut.
func networkFigures(r *runData, empty string) []func() (figure, error) {
	tEnd, drain := r.tEnd()
	drain += trainingClockNote(r.summary)
	faults := r.faultSpans()
	timed := func(b func() (figure, error)) func() (figure, error) {
		return func() (figure, error) {
			f, err := b()
			if err == nil && f.Note == "" {
				f.Caption += drain
			}
			return f, err
		}
	}
	var figs []func() (figure, error)
	if r.sweep != nil {
		figs = append(figs, func() (figure, error) { return busbwFigure(r.sweep) })
	}
	figs = append(figs,
		func() (figure, error) { return fctFigure(r.flows, r.summary, empty) },
		timed(func() (figure, error) { return utilFigure(r.links, faults, tEnd) }),
		timed(func() (figure, error) { return queueFigure(r.links, faults, tEnd) }),
		timed(func() (figure, error) { return pausesFigure(r.pauses, faults, tEnd, r.interval()) }))
	if r.credits != nil { // only InfiniBand runs with credits on write credits.csv
		figs = append(figs, func() (figure, error) { return creditsFigure(r.credits) })
	}
	return append(figs,
		timed(func() (figure, error) { return evFigure(r.ev, faults, tEnd) }),
		timed(func() (figure, error) { return faultFigure(r.faults, tEnd) }),
	)
}

// textTable shows a CSV file as read.
func textTable(id, title, caption, file string, rt *rawTable) *htmlTable {
	t := &htmlTable{ID: id, Title: title, Caption: caption, Head: rt.Head}
	for _, row := range rt.Rows {
		cs := make([]cell, len(row))
		for i, v := range row {
			cs[i] = cell{Text: v, Num: isNumber(v)}
		}
		t.Rows = append(t.Rows, cs)
	}
	switch {
	case len(rt.Rows) == 0:
		t.Note = "no data: " + file + " has no rows"
	case rt.More > 0:
		t.Note = fmt.Sprintf("%d more rows in %s are not shown.", rt.More, file)
	}
	return t
}

// isNumber reports whether s reads as a decimal number (for right alignment).
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c >= '0' && c <= '9' || c == '.' || (c == '-' && i == 0) || c == 'e' || c == 'E' || c == '+') {
			return false
		}
	}
	return true
}

// subtitle is one line naming the run from summary.json.
func subtitle(s *summaryData) string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, k := range []struct{ path, unit string }{
		{"seed", "seed "}, {"hosts", " hosts"}, {"planes", " planes"}, {"switches", " switches"},
		{"links", " links"}, {"flows", " flows"}, {"end_us", " us simulated"},
	} {
		f, ok := s.get(k.path)
		if !ok || k.path == "flows" && f.value == "0" && s.isTraining() {
			continue
		}
		if strings.HasSuffix(k.unit, " ") {
			parts = append(parts, k.unit+f.value)
		} else {
			parts = append(parts, f.value+k.unit)
		}
	}
	return strings.Join(parts, ", ")
}

// pageTmpl renders a page. The Content-Security-Policy forbids every fetch and every script,
// so a page that tried to load anything from outside would show the browser's refusal (and the
// headless test, which fails on console errors, would catch it).
var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="lockstep report">
<title>{{.Title}}</title>
<style>
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; color: #222; background: #fff; margin: 0 auto; padding: 1em 1.5em 3em; max-width: 1040px; line-height: 1.4; }
h1 { font-size: 1.5em; margin: 0.2em 0; }
h3 { font-size: 1em; margin: 1.1em 0 0.3em; }
h2 { font-size: 1.15em; margin: 1.6em 0 0.4em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.sub { color: #555; margin: 0 0 1em; }
.lead { margin: 0.3em 0; }
nav { font-size: 0.9em; margin-bottom: 1em; }
nav a { margin-right: 0.9em; color: #2a5d9f; text-decoration: none; }
svg.plot { display: block; width: 100%; height: auto; max-width: 1000px; }
.caption { color: #444; font-size: 0.9em; margin: 0.3em 0 0; }
.nodata { color: #7a5b00; background: #fff8e1; border-left: 4px solid #f0b400; padding: 0.5em 0.8em; font-size: 0.95em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.4em 0; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f5f8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; font-family: "Liberation Mono", Menlo, Consolas, monospace; }
td.ratio { color: #555; }
.wide { overflow-x: auto; }
details { margin-top: 1.5em; }
summary { cursor: pointer; font-weight: bold; }
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
{{- if .Subtitle}}
<p class="sub">{{.Subtitle}}</p>
{{- end}}
<nav>{{if .Runs}}<a href="#runs">runs</a>{{end}}<a href="#headline">headline</a>{{range .Figures}}{{if not .Note}}<a href="#sec-{{.ID}}">{{.Title}}</a>{{end}}{{end}}{{range .Tables}}<a href="#sec-{{.ID}}">{{.Title}}</a>{{end}}</nav>
</header>
{{- if .Runs}}
<section id="runs">
<h2>Runs</h2>
<ol>
{{- range .Runs}}
<li>{{.Name}}: {{.Dir}}{{if .Href}} (<a href="{{.Href}}">report.html</a>){{end}}</li>
{{- end}}
</ol>
</section>
{{- end}}
<section id="headline">
<h2>Headline</h2>
{{- range .Lead}}
<p class="lead">{{.}}</p>
{{- end}}
{{- if .Headline}}{{template "table" .Headline}}{{else}}
<p class="nodata" id="headline-nodata">{{.Note}}</p>
{{- end}}
</section>
{{- range .Figures}}
<section class="figure" id="sec-{{.ID}}">
<h2>{{.Title}}</h2>
{{- if .Note}}
<p class="nodata" id="{{.ID}}-nodata">{{.Note}}</p>
{{- else}}
{{.SVG}}
<p class="caption">{{.Caption}}</p>
{{- with .Table}}
<h3 id="sec-{{.ID}}">{{.Title}}</h3>
{{- template "table" .}}
{{- end}}
{{- end}}
</section>
{{- end}}
{{- range .Tables}}
<section id="sec-{{.ID}}">
<h2>{{.Title}}</h2>
{{- if .Rows}}{{template "table" .}}{{else}}
<p class="nodata" id="{{.ID}}-nodata">{{.Note}}</p>
{{- end}}
</section>
{{- end}}
{{- if .All}}
<details id="summary-all">
<summary>{{.All.Title}}</summary>
{{template "table" .All}}
</details>
{{- end}}
<section id="sources">
<h2>Files read</h2>
<ul>
{{- range .Sources}}
<li>{{.Run}}: {{range $i, $f := .Files}}{{if $i}}, {{end}}{{$f.Name}} {{if $f.Found}}({{$f.Size}} bytes){{else}}(absent){{end}}{{end}}</li>
{{- end}}
</ul>
</section>
</body>
</html>
{{define "table"}}
{{- if .Caption}}
<p class="caption">{{.Caption}}</p>
{{- end}}
<div class="wide"><table id="{{.ID}}">
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td{{if .Num}} class="num"{{end}}>{{.Text}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table></div>
{{- if .Note}}
<p class="caption">{{.Note}}</p>
{{- end}}
{{- end}}
`))

// zeroBreakdown reports whether headline figure p is a zero entry of a breakdown by reason
// or cause (drops_packets.queue_full 0, transport.retx_packets_by_cause.timeout 0): the
// total beside it already says 0, so the headline leaves it out (the every-figure table
// keeps it).
func zeroBreakdown(p string, f leaf) bool {
	if !f.num || f.value != "0" {
		return false
	}
	for _, b := range breakdownPatterns {
		if matchHeadline(b, p) {
			return true
		}
	}
	return false
}

// headlineTable lays the headline's (figure, value) pairs out in up to three column pairs,
// filled column by column, so a run's headline reads on one screen at 1400 px: one pair up to
// 14 figures, two up to 28, three beyond.
func headlineTable(cells [][2]cell, caption string) *htmlTable {
	cols := 1
	switch n := len(cells); {
	case n > 28:
		cols = 3
	case n > 14:
		cols = 2
	}
	t := &htmlTable{ID: "headline-table", Caption: caption}
	for range cols {
		t.Head = append(t.Head, "figure", "value")
	}
	rows := (len(cells) + cols - 1) / cols
	for r := range rows {
		var row []cell
		for c := range cols {
			if i := c*rows + r; i < len(cells) {
				row = append(row, cells[i][0], cells[i][1])
			} else {
				row = append(row, cell{}, cell{})
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// trainingClockNote says, for a training run whose simulated network time is shorter than
// its reported steps (the engine simulates each step's distinct phases and repeats the rest,
// workload.training.exact false), that the network plots' clock is the simulated one, so a
// time there is not a time on the step series or the Gantt chart; "" otherwise.
func trainingClockNote(s *summaryData) string {
	step, ok1 := s.number("training.step_time_us")
	steps, ok2 := s.number("training.simulated_steps")
	end, ok3 := s.number("end_us")
	if !ok1 || !ok2 || !ok3 || !(end > 0) || end >= 0.95*step*steps {
		return ""
	}
	return fmt.Sprintf(" The network's clock here is the simulation's: %s us simulated for %s simulated step(s) of %s us each, as the engine simulates a step's distinct phases once and repeats the rest (workload.training.exact: true simulates all of them), so its times are not those of the step series and the Gantt chart.",
		fmtNum(end), fmtNum(steps), fmtNum(step))
}
