package report

import (
	"io"
	"slices"

	"gonum.org/v1/plot/plotter"
)

// flowsData is what the report takes from flows.csv: the completion times of the transfers
// that finished, how many did not, and the goodput of raw flows (raw traffic has no completion
// time).
type flowsData struct {
	rows       int       // data rows
	fct        []float64 // fct_us of the transfers that finished, ascending
	unfinished int       // transfers (not raw) with an empty fct_us: they never finished
	raw        int       // rows whose transport is raw
	goodput    []float64 // goodput_gbps of the raw rows that give one, ascending
	transports []string  // distinct values of the transport column, sorted
}

// transportRaw is flows.csv's transport of raw traffic: paced packets with no transport, so no
// completion time.
const transportRaw = "raw"

// readFlows reads flows.csv (docs/outputs.md): only fct_us is required; transport and
// goodput_gbps are used when present. Errors are *FileError values naming file, line and
// column.
func readFlows(file string, r io.Reader) (*flowsData, error) {
	t, err := newCSVTable(file, r, "fct_us")
	if err != nil {
		return nil, err
	}
	d := &flowsData{}
	seen := map[string]bool{}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		d.rows++
		tr := t.str("transport")
		if tr != "" && !seen[tr] {
			seen[tr] = true
			d.transports = append(d.transports, tr)
		}
		if tr == transportRaw {
			d.raw++
			g, ok, err := t.optFloat("goodput_gbps")
			if err != nil {
				return nil, err
			}
			if ok && g < 0 {
				return nil, t.cellErr("goodput_gbps", errNegative(t.str("goodput_gbps")))
			}
			if ok {
				d.goodput = append(d.goodput, g)
			}
			continue
		}
		v, ok, err := t.optFloat("fct_us")
		if err != nil {
			return nil, err
		}
		if !ok {
			d.unfinished++
			continue
		}
		if v < 0 {
			return nil, t.cellErr("fct_us", errNegative(t.str("fct_us")))
		}
		d.fct = append(d.fct, v)
	}
	slices.Sort(d.fct)
	slices.Sort(d.goodput)
	slices.Sort(d.transports)
	return d, nil
}

// cdfPoints is the empirical CDF of the ascending values xs as a line: F(x) = the fraction of
// values <= x. Up to maxPts values it is drawn exactly as steps; past that it passes through
// maxPts evenly spaced ranks (always including the first and the last value), so a plot of
// 100,000 flows costs as much as one of maxPts.
func cdfPoints(xs []float64, maxPts int) plotter.XYs {
	n := len(xs)
	if n == 0 {
		return nil
	}
	fn := float64(n)
	if n <= maxPts {
		pts := make(plotter.XYs, 0, 2*n)
		for i, x := range xs {
			pts = append(pts, plotter.XY{X: x, Y: float64(i) / fn}, plotter.XY{X: x, Y: float64(i+1) / fn})
		}
		return pts
	}
	pts := plotter.XYs{{X: xs[0], Y: 0}}
	for j := 0; j < maxPts; j++ {
		i := (j * (n - 1)) / (maxPts - 1) // 0 .. n-1
		pts = append(pts, plotter.XY{X: xs[i], Y: float64(i+1) / fn})
	}
	return pts
}
