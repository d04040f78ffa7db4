package report

import (
	"errors"
	"io"
	"math"
)

// maxTableRows bounds the rows an HTML table shows; the rest are counted in a note.
const maxTableRows = 200

// faultSpan is one failure of faults.csv on the time axis (us, absolute).
type faultSpan struct {
	label   string  // "down h0.p3", with the cycle when there are several
	at      float64 // when the failure began
	end     float64 // when it ended; NaN when faults.csv leaves end_us empty
	detect  float64 // first loss-driven retransmission; NaN when none
	recover float64 // when the run stopped falling behind its twin; NaN when unmeasured
}

// faultsData is faults.csv: the failures to overlay on the time plots, and the file as text for
// its table.
type faultsData struct {
	spans []faultSpan
	table *rawTable
}

// readFaults reads faults.csv (docs/outputs.md). Required columns: action, target, at_us;
// end_us, detect_at_us, recover_at_us (absolute simulated times, as at_us) and cycle are
// used when present; a folder written before faults.csv's times were all absolute has
// detect_us and recover_us instead, relative to at_us, and is read as such. Errors are
// *FileError values naming file, line and column.
func readFaults(file string, r io.Reader) (*faultsData, error) {
	t, err := newCSVTable(file, r, "action", "target", "at_us")
	if err != nil {
		return nil, err
	}
	d := &faultsData{table: &rawTable{Head: t.head}}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return d, nil
		}
		if len(d.table.Rows) < maxTableRows {
			d.table.Rows = append(d.table.Rows, append([]string(nil), t.rec...))
		} else {
			d.table.More++
		}
		s := faultSpan{label: t.str("action") + " " + t.str("target"), end: math.NaN(), detect: math.NaN(), recover: math.NaN()}
		if c := t.str("cycle"); c != "" && c != "0" {
			s.label += " #" + c
		}
		if s.at, err = t.nonNeg("at_us"); err != nil {
			return nil, err
		}
		if v, ok, err := t.optFloat("end_us"); err != nil {
			return nil, err
		} else if ok {
			if v < s.at {
				return nil, t.cellErr("end_us", errors.New("the failure ends before at_us"))
			}
			s.end = v
		}
		for _, c := range []struct {
			abs, rel string // the column (absolute), the older one (relative to at_us)
			dst      *float64
		}{{"detect_at_us", "detect_us", &s.detect}, {"recover_at_us", "recover_us", &s.recover}} {
			if v, ok, err := t.optFloat(c.abs); err != nil {
				return nil, err
			} else if ok {
				if v < s.at {
					return nil, t.cellErr(c.abs, errors.New("before at_us"))
				}
				*c.dst = v
				continue
			}
			v, ok, err := t.optFloat(c.rel)
			if err != nil {
				return nil, err
			}
			if ok {
				if v < 0 {
					return nil, t.cellErr(c.rel, errNegative(t.str(c.rel)))
				}
				*c.dst = s.at + v
			}
		}
		d.spans = append(d.spans, s)
	}
}
