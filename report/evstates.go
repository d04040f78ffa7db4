package report

import "io"

// evStateNames are the EV state columns of ev_states.csv, in the order they are plotted.
var evStateNames = []string{"good", "skip", "assumed_bad", "denied"}

// evData is ev_states.csv: at each sample time, the number of EVs in each state summed over
// every QP (MRC runs).
type evData struct {
	times  []float64   // us, as in the file (ascending when the runner wrote it)
	counts [][]float64 // [state, as evStateNames][time]
}

// readEVStates reads ev_states.csv (docs/outputs.md): time_us and the four state columns are
// required; placed_bytes is not used. Errors are *FileError values naming file, line and
// column.
func readEVStates(file string, r io.Reader) (*evData, error) {
	t, err := newCSVTable(file, r, append([]string{"time_us"}, evStateNames...)...)
	if err != nil {
		return nil, err
	}
	d := &evData{counts: make([][]float64, len(evStateNames))}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return d, nil
		}
		at, err := t.nonNeg("time_us")
		if err != nil {
			return nil, err
		}
		d.times = append(d.times, at)
		for i, c := range evStateNames {
			v, err := t.nonNeg(c)
			if err != nil {
				return nil, err
			}
			d.counts[i] = append(d.counts[i], v)
		}
	}
}
