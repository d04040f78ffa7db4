package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Time is a simulated instant or duration, counted in picoseconds as an int64.
//
// Its range is ±9.2e18 ps, about ±106 days, enough for any training run lockstep simulates. At
// 800 Gb/s one byte takes 10 ps, so picoseconds keep serialisation times exact for every
// common link rate (100G: 80 ps per byte, 400G: 20 ps). Convert with the constants:
// `t / sim.Microsecond` is whole microseconds, `t.Seconds()` is a float64.
type Time int64

// Units of Time.
const (
	Picosecond  Time = 1
	Nanosecond       = 1000 * Picosecond
	Microsecond      = 1000 * Nanosecond
	Millisecond      = 1000 * Microsecond
	Second           = 1000 * Millisecond
	Minute           = 60 * Second
	Hour             = 60 * Minute

	// MaxTime is the largest representable instant; "never" for deadlines.
	MaxTime Time = math.MaxInt64
)

// Seconds returns t as a floating-point number of seconds.
func (t Time) Seconds() float64 { return float64(t) / float64(Second) }

// Micros returns t as a floating-point number of microseconds.
func (t Time) Micros() float64 { return float64(t) / float64(Microsecond) }

// FromSeconds converts a float64 number of seconds to Time, rounding to the nearest picosecond.
// Values beyond the range of Time saturate at ±MaxTime.
func FromSeconds(s float64) Time {
	ps := s * float64(Second)
	if ps >= float64(MaxTime) {
		return MaxTime
	}
	if ps <= -float64(MaxTime) {
		return -MaxTime
	}
	return Time(math.Round(ps))
}

var timeUnits = []struct {
	suffix string
	unit   Time
}{
	// Longer suffixes first so "ms" is not read as "m" + "s".
	{"ps", Picosecond}, {"ns", Nanosecond}, {"us", Microsecond}, {"µs", Microsecond},
	{"ms", Millisecond}, {"s", Second}, {"min", Minute}, {"m", Minute}, {"h", Hour},
}

// String formats t with the largest unit that keeps it readable: "40.96ns", "1.5ms", "30s".
// The output parses back with ParseTime to the same value when t is a whole number of
// picoseconds with at most 12 significant digits per unit step.
func (t Time) String() string {
	if t == MaxTime {
		return "never"
	}
	neg := t < 0
	a := t
	if neg {
		a = -a
	}
	var s string
	switch {
	case a == 0:
		return "0s"
	case a < Nanosecond:
		s = strconv.FormatInt(int64(a), 10) + "ps"
	case a < Microsecond:
		s = fmtUnit(a, Nanosecond) + "ns"
	case a < Millisecond:
		s = fmtUnit(a, Microsecond) + "us"
	case a < Second:
		s = fmtUnit(a, Millisecond) + "ms"
	default:
		s = fmtUnit(a, Second) + "s"
	}
	if neg {
		return "-" + s
	}
	return s
}

// fmtUnit prints a/unit exactly, without floating point rounding surprises.
func fmtUnit(a, unit Time) string {
	whole := int64(a / unit)
	frac := int64(a % unit)
	if frac == 0 {
		return strconv.FormatInt(whole, 10)
	}
	digits := len(strconv.FormatInt(int64(unit), 10)) - 1
	fs := fmt.Sprintf("%0*d", digits, frac)
	fs = strings.TrimRight(fs, "0")
	return strconv.FormatInt(whole, 10) + "." + fs
}

// ParseTime parses a duration with a unit suffix: "2us", "1.5ms", "30s", "40.96ns", "100ps",
// "2min", "1h". Units: ps, ns, us (or µs), ms, s, m or min, h. A bare "0" is accepted; any other
// number needs a unit. The result is rounded to the nearest picosecond.
//
// Errors: empty input, a missing or unknown unit, a malformed number, a negative value, NaN or
// infinity, or a value beyond ~106 days.
func ParseTime(s string) (Time, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("empty duration; want a number with a unit such as \"2us\", \"1.5ms\", \"30s\"")
	}
	if in == "0" {
		return 0, nil
	}
	num, unit := splitNumber(in)
	unit = strings.TrimSpace(unit)
	if num == "" || unit == "" {
		return 0, fmt.Errorf("duration %q has no unit; want ps, ns, us, ms, s, min or h (e.g. \"2us\")", s)
	}
	var u Time
	for _, tu := range timeUnits {
		if unit == tu.suffix {
			u = tu.unit
			break
		}
	}
	if u == 0 {
		return 0, fmt.Errorf("duration %q has unknown unit %q; want ps, ns, us, ms, s, min or h", s, unit)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("duration %q: %q is not a number", s, num)
	}
	if v < 0 {
		return 0, fmt.Errorf("duration %q is negative; want a value >= 0", s)
	}
	ps := v * float64(u)
	if ps >= float64(MaxTime) {
		return 0, fmt.Errorf("duration %q is too long; the limit is about 106 days", s)
	}
	// Integers are converted exactly to avoid float rounding on large values.
	if iv, err := strconv.ParseInt(num, 10, 64); err == nil {
		return Time(iv) * u, nil
	}
	return Time(math.Round(ps)), nil
}

// MarshalText implements encoding.TextMarshaler with String, so resolved scenarios print
// durations with units.
func (t Time) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseTime.
func (t *Time) UnmarshalText(b []byte) error {
	v, err := ParseTime(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}
