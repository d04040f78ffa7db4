package report

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// FileError is a malformed results file: which file, where in it, and what is wrong. Line and
// Column are 1-based (Column counts bytes, as encoding/csv does); Field names the CSV column or
// JSON key when one is known. Line 0 means the position is unknown (for example a file that
// could not be read at all).
type FileError struct {
	File   string // base name, e.g. "flows.csv"
	Line   int    // 1-based; 0 when unknown
	Column int    // 1-based byte column; 0 when unknown
	Field  string // the CSV column's header name, or "" when none applies
	Err    error
}

// Error formats the error as "flows.csv line 12, column 34 (fct_us): <cause>".
func (e *FileError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += fmt.Sprintf(" line %d", e.Line)
		if e.Column > 0 {
			s += fmt.Sprintf(", column %d", e.Column)
		}
	}
	if e.Field != "" {
		s += fmt.Sprintf(" (%s)", e.Field)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *FileError) Unwrap() error { return e.Err }

// csvTable reads one results CSV row by row: a header naming the columns, then records whose
// cells are looked up by column name and parsed with errors that name the file, the line, the
// column and the cell.
type csvTable struct {
	file string
	r    *csv.Reader
	head []string       // header, as written
	col  map[string]int // header name -> index
	rec  []string       // current record
}

// newCSVTable reads the header of file (name for errors) from r and checks that every column
// in required is present. Columns it does not know are ignored, so files may grow columns.
// A file with no header at all is an error.
func newCSVTable(file string, r io.Reader, required ...string) (*csvTable, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	t := &csvTable{file: file, r: cr, col: map[string]int{}}
	head, err := cr.Read()
	if err == io.EOF {
		return nil, &FileError{File: file, Line: 1, Err: errors.New("empty file: no header line")}
	}
	if err != nil {
		return nil, t.wrap(err)
	}
	t.head = append([]string(nil), head...)
	for i, h := range t.head {
		if _, dup := t.col[h]; dup {
			line, c := cr.FieldPos(i)
			return nil, &FileError{File: file, Line: line, Column: c, Field: h, Err: errors.New("column appears twice in the header")}
		}
		t.col[h] = i
	}
	for _, c := range required {
		if _, ok := t.col[c]; !ok {
			return nil, &FileError{File: file, Line: 1, Field: c, Err: fmt.Errorf("header lacks column %q (header: %v)", c, t.head)}
		}
	}
	return t, nil
}

// wrap turns an encoding/csv error into a FileError naming this file.
func (t *csvTable) wrap(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &FileError{File: t.file, Line: pe.Line, Column: pe.Column, Err: pe.Err}
	}
	return &FileError{File: t.file, Err: err}
}

// next reads the next record; it returns false at the end of the file.
func (t *csvTable) next() (bool, error) {
	rec, err := t.r.Read()
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, t.wrap(err)
	}
	t.rec = rec
	return true, nil
}

// str is the cell of column c in the current record ("" when the file lacks the column).
func (t *csvTable) str(c string) string {
	i, ok := t.col[c]
	if !ok {
		return ""
	}
	return t.rec[i]
}

// cellErr is an error about the cell of column c in the current record.
func (t *csvTable) cellErr(c string, err error) error {
	i := t.col[c]
	line, col := t.r.FieldPos(i)
	return &FileError{File: t.file, Line: line, Column: col, Field: c, Err: err}
}

// optFloat parses column c as a finite number; ok is false when the cell is empty or the file
// lacks the column.
func (t *csvTable) optFloat(c string) (v float64, ok bool, err error) {
	s := t.str(c)
	if s == "" {
		return 0, false, nil
	}
	v, err = strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false, t.cellErr(c, fmt.Errorf("%q is not a finite number", s))
	}
	return v, true, nil
}

// float parses column c as a finite number; an empty cell is an error.
func (t *csvTable) float(c string) (float64, error) {
	v, ok, err := t.optFloat(c)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, t.cellErr(c, errors.New("empty cell, a number is required"))
	}
	return v, nil
}

// nonNeg parses column c as a finite number >= 0; an empty cell is an error.
func (t *csvTable) nonNeg(c string) (float64, error) {
	v, err := t.float(c)
	if err == nil && v < 0 {
		err = t.cellErr(c, errNegative(t.str(c)))
	}
	return v, err
}

// int parses column c as an integer; an empty cell is an error.
func (t *csvTable) int(c string) (int, error) {
	s := t.str(c)
	if s == "" {
		return 0, t.cellErr(c, errors.New("empty cell, an integer is required"))
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, t.cellErr(c, fmt.Errorf("%q is not an integer", s))
	}
	return v, nil
}

// rawTable is a CSV file kept as text, for display as an HTML table.
type rawTable struct {
	Head []string
	Rows [][]string
	More int // rows left out past the display limit
}

// readRawTable reads file's header and up to limit rows as text (checking only the CSV syntax
// and the field count), counting the rows past the limit.
func readRawTable(file string, r io.Reader, limit int, required ...string) (*rawTable, error) {
	t, err := newCSVTable(file, r, required...)
	if err != nil {
		return nil, err
	}
	rt := &rawTable{Head: t.head}
	for {
		ok, err := t.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return rt, nil
		}
		if len(rt.Rows) >= limit {
			rt.More++
			continue
		}
		rt.Rows = append(rt.Rows, append([]string(nil), t.rec...))
	}
}

// errNegative is the cause for a negative cell where only values >= 0 make sense.
func errNegative(cell string) error { return fmt.Errorf("%s is negative", cell) }
