// Package cdf holds empirical flow-size distributions: a CDF given by tabulated points, linear
// in bytes between them, its parser (`size cdf` lines), inverse-transform sampling and its mean;
// and the two published workloads simulators use, WebSearch and Hadoop (websearch.cdf,
// hadoop.cdf, with their sources in their headers), embedded.
//
// A CDF of points (x0, p0) ... (xn, pn), sizes strictly increasing and probabilities
// non-decreasing up to pn = 1, puts probability p0 on x0 and spreads p(i) - p(i-1) uniformly
// over (x(i-1), x(i)], as the HPCC and pFabric traffic generators read their tables. Its mean
// is p0 x0 + sum (p(i) - p(i-1)) (x(i-1) + x(i)) / 2.
package cdf

import (
	"bufio"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Point is one tabulated point: P is the probability that a flow is at most Size bytes.
type Point struct {
	Size int64   // bytes
	P    float64 // in [0, 1]
}

// CDF is a flow-size distribution, immutable once made (New, Parse, Named).
type CDF struct {
	name   string
	points []Point
	mean   float64
}

// Limits on what a CDF may hold, so that a bad file fails cleanly rather than exhausting memory
// or overflowing a transfer size.
const (
	// MaxPoints is the most points a CDF may have.
	MaxPoints = 10000
	// MaxSize is the largest flow size a CDF may give: 1 TiB.
	MaxSize = int64(1) << 40
	// MaxLine is the longest line the parser reads, in bytes.
	MaxLine = 4096
	// MaxFile is the largest file the parser reads, in bytes.
	MaxFile = 1 << 20
)

// tolerance is how far the last probability may be from 1 (the published tables round to
// percent; files written by other tools may carry float noise).
const tolerance = 1e-9

// New checks points and makes a CDF named name (for errors and String). Errors name the point
// index: at least one point; at most MaxPoints; sizes in [0, MaxSize] and strictly increasing;
// probabilities in [0, 1], non-decreasing, the last 1; no probability on a size of 0.
func New(name string, points []Point) (*CDF, error) {
	if err := check(points); err != nil {
		if err.point >= 0 {
			return nil, fmt.Errorf("%s: point %d: %s", name, err.point, err.msg)
		}
		return nil, fmt.Errorf("%s: %s", name, err.msg)
	}
	return build(name, points), nil
}

func build(name string, points []Point) *CDF {
	ps := append([]Point(nil), points...)
	for i := range ps {
		ps[i].P = min(ps[i].P, 1) // within tolerance of 1
	}
	ps[len(ps)-1].P = 1
	return &CDF{name: name, points: ps, mean: mean(ps)}
}

// pointError is what check found: the point (-1: the whole table), the field (0 size, 1 cdf).
type pointError struct {
	point, field int
	msg          string
}

// check validates points.
func check(points []Point) *pointError {
	if len(points) == 0 {
		return &pointError{-1, 0, "no points; want lines `size cdf`, the last with cdf 1"}
	}
	if len(points) > MaxPoints {
		return &pointError{-1, 0, fmt.Sprintf("%d points, beyond the limit of %d", len(points), MaxPoints)}
	}
	for i, p := range points {
		if err := checkSize(p.Size); err != nil {
			return &pointError{i, 0, err.Error()}
		}
		if err := checkP(p.P); err != nil {
			return &pointError{i, 1, err.Error()}
		}
		if i > 0 && p.Size <= points[i-1].Size {
			return &pointError{i, 0, fmt.Sprintf("size %d is not above the previous %d; sizes must increase", p.Size, points[i-1].Size)}
		}
		if i > 0 && p.P < points[i-1].P {
			return &pointError{i, 1, fmt.Sprintf("cdf %v is below the previous %v; a CDF never decreases", p.P, points[i-1].P)}
		}
		if p.Size == 0 && p.P > 0 {
			return &pointError{i, 1, fmt.Sprintf("cdf %v at size 0; flows have at least one byte (give 0 0)", p.P)}
		}
	}
	if last := points[len(points)-1]; math.Abs(last.P-1) > tolerance {
		return &pointError{len(points) - 1, 1, fmt.Sprintf("the last cdf is %v; want 1 (every flow at most the largest size)", last.P)}
	}
	return nil
}

func checkSize(s int64) error {
	if s < 0 || s > MaxSize {
		return fmt.Errorf("size %d is out of range; allowed 0..%d bytes", s, MaxSize)
	}
	return nil
}

func checkP(p float64) error {
	if math.IsNaN(p) || p < 0 || p > 1+tolerance {
		hint := ""
		if p > 1 && p <= 100 {
			hint = " (probabilities are fractions; a table in percent, as HPCC's, divides by 100)"
		}
		return fmt.Errorf("cdf %v is out of range; allowed 0..1%s", p, hint)
	}
	return nil
}

// mean is the exact mean of the piecewise-linear CDF.
func mean(ps []Point) float64 {
	m := ps[0].P * float64(ps[0].Size)
	for i := 1; i < len(ps); i++ {
		m += (ps[i].P - ps[i-1].P) * (float64(ps[i-1].Size) + float64(ps[i].Size)) / 2
	}
	return m
}

// Name returns the name the CDF was made with ("websearch", a file name).
func (c *CDF) Name() string { return c.name }

// String returns the name and the mean.
func (c *CDF) String() string { return fmt.Sprintf("%s (mean %.0f B)", c.name, c.mean) }

// Mean returns the mean flow size in bytes (exact for the piecewise-linear CDF; samples are
// rounded to whole bytes, at least 1, which moves it by at most a byte).
func (c *CDF) Mean() float64 { return c.mean }

// Max returns the largest size, bytes.
func (c *CDF) Max() int64 { return c.points[len(c.points)-1].Size }

// Points returns a copy of the tabulated points.
func (c *CDF) Points() []Point { return append([]Point(nil), c.points...) }

// Quantile returns the size at probability u in [0, 1) by inverting the CDF (linear between
// points), rounded to whole bytes and at least 1. u outside [0, 1) is clamped.
func (c *CDF) Quantile(u float64) int64 {
	ps := c.points
	if !(u > 0) {
		u = 0
	}
	var x float64
	// i: the first point whose probability is above u (there is one: the last is 1 > u).
	i := sort.Search(len(ps), func(i int) bool { return ps[i].P > u })
	switch {
	case i >= len(ps):
		x = float64(ps[len(ps)-1].Size)
	case i == 0:
		x = float64(ps[0].Size)
	default:
		a, b := ps[i-1], ps[i]
		x = float64(a.Size) + (u-a.P)/(b.P-a.P)*float64(b.Size-a.Size)
	}
	s := int64(math.Round(x))
	if s < 1 {
		s = 1
	}
	return min(s, c.Max())
}

// Format writes the CDF as a file Parse reads back to the same points: a comment with the name
// and mean, then `size cdf` lines.
func (c *CDF) Format() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n# size_bytes cdf\n", c)
	for _, p := range c.points {
		fmt.Fprintf(&b, "%d %s\n", p.Size, strconv.FormatFloat(p.P, 'g', -1, 64))
	}
	return []byte(b.String())
}

// Parse reads a CDF file: one point a line, `size cdf` separated by spaces or tabs, size in
// whole bytes, cdf a probability in [0, 1]; blank lines and lines starting with # are skipped.
// name is the file's name in errors and the CDF's name. Errors are "name:line:col: ..." naming
// the field, its value and what is allowed; a file over MaxFile bytes, a line over MaxLine or
// more than MaxPoints points is refused.
func Parse(name string, r io.Reader) (*CDF, error) {
	sc := bufio.NewScanner(io.LimitReader(r, MaxFile+1))
	sc.Buffer(make([]byte, 0, 256), MaxLine)
	var (
		points []Point
		where  [][3]int // line, size column, cdf column of each point
		read   int
		ln     int
	)
	for sc.Scan() {
		ln++
		line := sc.Text()
		read += len(line) + 1
		if read > MaxFile+1 {
			return nil, fmt.Errorf("%s:%d:1: the file is over %d bytes; a CDF needs a few dozen lines", name, ln, MaxFile)
		}
		fields, cols := split(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		at := func(k int) string { return fmt.Sprintf("%s:%d:%d", name, ln, cols[k]) }
		if len(fields) != 2 {
			k := min(len(fields)-1, 2)
			return nil, fmt.Errorf("%s: %d fields; want two, `size cdf` (size in bytes, cdf in 0..1)", at(k), len(fields))
		}
		if len(points) == MaxPoints {
			return nil, fmt.Errorf("%s: more than %d points", at(0), MaxPoints)
		}
		size, err := parseSize(fields[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", at(0), err)
		}
		p, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: cdf %q is not a number; want a probability in 0..1", at(1), fields[1])
		}
		if err := checkP(p); err != nil {
			return nil, fmt.Errorf("%s: %w", at(1), err)
		}
		points = append(points, Point{Size: size, P: p})
		where = append(where, [3]int{ln, cols[0], cols[1]})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d:1: a line is over %d bytes", name, ln+1, MaxLine)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(points) == 0 {
		return nil, fmt.Errorf("%s:1:1: no points; want lines `size cdf`, the last with cdf 1", name)
	}
	if err := check(points); err != nil {
		if err.point < 0 {
			return nil, fmt.Errorf("%s:1:1: %s", name, err.msg)
		}
		w := where[err.point]
		return nil, fmt.Errorf("%s:%d:%d: %s", name, w[0], w[1+err.field], err.msg)
	}
	return build(name, points), nil
}

// parseSize reads a size in whole bytes: digits, or a float with an integral value (1e6).
func parseSize(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if err := checkSize(n); err != nil {
			return 0, err
		}
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q is not a number; want whole bytes, e.g. 10000", s)
	}
	if math.IsNaN(f) || f < 0 || f > float64(MaxSize) {
		return 0, fmt.Errorf("size %s is out of range; allowed 0..%d bytes", s, MaxSize)
	}
	if f != math.Trunc(f) {
		return 0, fmt.Errorf("size %s is not a whole number of bytes", s)
	}
	return int64(f), nil
}

// split returns the blank-separated fields of line and the 1-based byte column of each.
func split(line string) ([]string, []int) {
	var fields []string
	var cols []int
	start := -1
	for i := 0; i <= len(line); i++ {
		blank := i == len(line) || line[i] == ' ' || line[i] == '\t' || line[i] == '\r'
		switch {
		case blank && start >= 0:
			fields = append(fields, line[start:i])
			cols = append(cols, start+1)
			start = -1
		case !blank && start < 0:
			start = i
		}
		if len(fields) > 3 {
			break
		}
	}
	return fields, cols
}

//go:embed websearch.cdf
var websearchFile string

//go:embed hadoop.cdf
var hadoopFile string

// Names lists the built-in distributions Named knows.
func Names() []string { return []string{"websearch", "hadoop"} }

// Named returns a built-in distribution: "websearch" (DCTCP's web search, Alizadeh et al.,
// SIGCOMM 2010; mean 1,711,250 B) or "hadoop" (Facebook's Hadoop, Roy et al., SIGCOMM 2015;
// mean 120,420.75 B), as tabulated by the HPCC simulator (websearch.cdf, hadoop.cdf). ok is
// false for another name.
func Named(name string) (c *CDF, ok bool) {
	var text string
	switch name {
	case "websearch":
		text = websearchFile
	case "hadoop":
		text = hadoopFile
	default:
		return nil, false
	}
	c, err := Parse(name, strings.NewReader(text))
	if err != nil {
		panic("cdf: embedded " + name + ": " + err.Error()) // the embedded files are tested
	}
	return c, true
}
