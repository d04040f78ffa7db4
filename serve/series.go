package serve

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
)

// maxSeriesFile is the largest links.csv /api/series reads (64 MiB); a larger one is
// refused, naming report.html, whose plots the server drew from it already.
const maxSeriesFile = 64 << 20

// maxSeriesPoints bounds the points of one series: longer ones are averaged over buckets of
// consecutive intervals.
const maxSeriesPoints = 2000

// Series is what /api/series returns: one x axis (each interval's start, µs) and the mean
// utilisation, in percent, of each class of port over it.
type Series struct {
	Dir    string       `json:"dir"`
	X      []float64    `json:"x"`      // interval starts, µs
	Lines  []SeriesLine `json:"series"` // one per class of port
	YLabel string       `json:"y_label"`
}

// SeriesLine is one class of port ("NIC", "T0 up", "T0 down", ...) and its values at Series.X.
type SeriesLine struct {
	Name  string    `json:"name"`
	Ports int       `json:"ports"` // ports of the class seen in links.csv
	Y     []float64 `json:"y"`
}

// portClass names the class of a links.csv port: "NIC" for a host's port (tier -1), else
// "T<tier> up" or "T<tier> down" from the port name's last part (".up3", ".down5"), or
// "T<tier>" when it has neither (a torus router's ".x+").
func portClass(port, tier string) string {
	if tier == "-1" {
		return "NIC"
	}
	last := port[strings.LastIndexByte(port, '.')+1:]
	switch {
	case strings.HasPrefix(last, "up"):
		return "T" + tier + " up"
	case strings.HasPrefix(last, "down"):
		return "T" + tier + " down"
	}
	return "T" + tier
}

// series answers GET /api/series?dir=RUN: links.csv of the run folder as the mean
// utilisation per class of port over time (an interval without a row for a port counts as
// 0, as in report.html).
func (s *Server) series(w http.ResponseWriter, r *http.Request) {
	rel := strings.Trim(r.URL.Query().Get("dir"), "/")
	full, err := s.ResolveResult(rel + "/links.csv")
	if err != nil {
		writeError(w, err)
		return
	}
	f, err := os.Open(full)
	if err != nil {
		writeError(w, &Error{Status: http.StatusNotFound, Msg: fmt.Sprintf("%s/links.csv: %v", rel, err)})
		return
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() > maxSeriesFile {
		writeError(w, &Error{Status: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf("%s/links.csv is larger than the %d MiB the page plots; open its report.html", rel, maxSeriesFile>>20)})
		return
	}
	out, err := readSeries(f)
	if err != nil {
		writeError(w, &Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf("%s/links.csv: %v", rel, err)})
		return
	}
	out.Dir = rel
	writeJSON(w, http.StatusOK, out)
}

// readSeries reads links.csv (docs/outputs.md: start_us, port, tier, util_pct columns).
func readSeries(rd io.Reader) (*Series, error) {
	cr := csv.NewReader(rd)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("no header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, c := range []string{"start_us", "port", "tier", "util_pct"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("no %s column", c)
		}
	}
	sums := map[string]map[float64]float64{} // class -> interval start -> sum of util_pct
	ports := map[string]map[string]bool{}    // class -> ports
	xs := map[float64]bool{}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		x, err1 := strconv.ParseFloat(rec[col["start_us"]], 64)
		u, err2 := strconv.ParseFloat(rec[col["util_pct"]], 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("line %d: start_us %q, util_pct %q are not numbers", line, rec[col["start_us"]], rec[col["util_pct"]])
		}
		c := portClass(rec[col["port"]], rec[col["tier"]])
		if sums[c] == nil {
			sums[c], ports[c] = map[float64]float64{}, map[string]bool{}
		}
		sums[c][x] += u
		if p := rec[col["port"]]; !ports[c][p] {
			ports[c][strings.Clone(p)] = true
		}
		xs[x] = true
	}
	out := &Series{YLabel: "mean utilisation (%)", X: make([]float64, 0, len(xs))}
	for x := range xs {
		out.X = append(out.X, x)
	}
	slices.Sort(out.X)
	classes := make([]string, 0, len(sums))
	for c := range sums {
		classes = append(classes, c)
	}
	slices.SortFunc(classes, func(a, b string) int {
		if (a == "NIC") != (b == "NIC") {
			if a == "NIC" {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	// Buckets of consecutive intervals when there are too many.
	per := (len(out.X) + maxSeriesPoints - 1) / maxSeriesPoints
	if per < 1 {
		per = 1
	}
	var bx []float64
	for i := 0; i < len(out.X); i += per {
		bx = append(bx, out.X[i])
	}
	for _, c := range classes {
		n := float64(len(ports[c]))
		ys := make([]float64, len(bx))
		for i := range bx {
			sum, k := 0.0, 0
			for j := i * per; j < min((i+1)*per, len(out.X)); j++ {
				sum += sums[c][out.X[j]] / n
				k++
			}
			ys[i] = sum / float64(k)
		}
		out.Lines = append(out.Lines, SeriesLine{Name: c, Ports: len(ports[c]), Y: ys})
	}
	out.X = bx
	return out, nil
}
