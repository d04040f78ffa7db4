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

// String formats t with the largest unit that keeps it readable: "40.96ns", "1.5ms", "30s";
// MaxTime is "never". The decimal is exact, so every t >= 0 parses back with ParseTime to the
// same value.
func (t Time) String() string {
	if t == MaxTime {
		return "never"
	}
	neg := t < 0
	a := uint64(t)
	if neg {
		a = -a // also right for math.MinInt64
	}
	var s string
	switch {
	case a == 0:
		return "0s"
	case a < uint64(Nanosecond):
		s = strconv.FormatUint(a, 10) + "ps"
	case a < uint64(Microsecond):
		s = fmtUnit(a, uint64(Nanosecond)) + "ns"
	case a < uint64(Millisecond):
		s = fmtUnit(a, uint64(Microsecond)) + "us"
	case a < uint64(Second):
		s = fmtUnit(a, uint64(Millisecond)) + "ms"
	default:
		s = fmtUnit(a, uint64(Second)) + "s"
	}
	if neg {
		return "-" + s
	}
	return s
}

// fmtUnit prints a/unit exactly as a decimal, without floating point rounding surprises. unit
// must be a power of ten.
func fmtUnit(a, unit uint64) string {
	whole := a / unit
	frac := a % unit
	if frac == 0 {
		return strconv.FormatUint(whole, 10)
	}
	digits := len(strconv.FormatUint(unit, 10)) - 1
	fs := fmt.Sprintf("%0*d", digits, frac)
	fs = strings.TrimRight(fs, "0")
	return strconv.FormatUint(whole, 10) + "." + fs
}

// ParseTime parses a duration with a unit suffix: "2us", "1.5ms", "30s", "40.96ns", "100ps",
// "2min", "1h". Units: ps, ns, us (or µs), ms, s, m or min, h. A bare "0" is accepted; any other
// number needs a unit. "never" is MaxTime, as String prints it. The result is rounded to the
// nearest picosecond; plain decimals ("1000.000000000001s") are converted exactly, beyond
// float64's 16 significant digits.
//
// Errors: empty input, a missing or unknown unit, a malformed number, a negative value, NaN or
// infinity; a *RangeError for a value beyond ~106 days (MaxTime) or nonzero but below 1 ps
// (which would otherwise become 0, "1e-400s", "0.0001ps").
func ParseTime(s string) (Time, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("empty duration; want a number with a unit such as \"2us\", \"1.5ms\", \"30s\"")
	}
	if in == "0" {
		return 0, nil
	}
	if in == "never" {
		return MaxTime, nil
	}
	num, unit := splitNumber(in)
	unit = strings.TrimSpace(unit)
	if num == "" {
		return 0, fmt.Errorf("duration %q has no number; want a number with a unit such as \"2us\"", s)
	}
	if unit == "" {
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
	tooLong := func() error {
		return &RangeError{Msg: fmt.Sprintf("duration %q is out of range; the largest duration is about 106 days", s)}
	}
	tooShort := func() error {
		return &RangeError{Msg: fmt.Sprintf("duration %q is below the 1 ps resolution; want 0 or at least 1ps", s), Below: true}
	}
	v, err := strconv.ParseFloat(num, 64)
	if math.IsInf(v, 1) && err != nil {
		return 0, tooLong() // "1e400s": beyond float64, so beyond Time
	}
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("duration %q: %q is not a number", s, num)
	}
	if v < 0 {
		return 0, fmt.Errorf("duration %q is negative; want a value >= 0", s)
	}
	// Plain decimals are converted exactly; exponent forms ("1e3us") go through float64.
	if ps, frac, ok := scaleDecimal(num, uint64(u)); ok {
		if ps > uint64(MaxTime) {
			return 0, tooLong()
		}
		if ps == 0 && frac || ps == 1 && frac && !exactlyAtLeast(num, u) {
			return 0, tooShort()
		}
		return Time(ps), nil
	}
	ps := v * float64(u)
	if ps >= float64(MaxTime) {
		return 0, tooLong()
	}
	if ps < 1 && nonzeroMantissa(num) {
		return 0, tooShort() // includes an underflow to 0 ("1e-400s")
	}
	return Time(math.Round(ps)), nil
}

// exactlyAtLeast reports whether the plain decimal num in unit u is at least one picosecond
// (scaleDecimal rounds 0.6ps up to 1).
func exactlyAtLeast(num string, u Time) bool {
	v, err := strconv.ParseFloat(num, 64)
	return err == nil && v*float64(u) >= 1
}

// nonzeroMantissa reports whether the number num (before any exponent) has a non-zero digit.
func nonzeroMantissa(num string) bool {
	for i := 0; i < len(num); i++ {
		switch c := num[i]; {
		case c == 'e' || c == 'E':
			return false
		case c >= '1' && c <= '9':
			return true
		}
	}
	return false
}

// RangeError is a parser's error for a well-formed value beyond what its type holds: a
// duration past MaxTime or below 1 ps, a rate or size past int64. Callers that know a
// field's own, smaller limit (scenario's decoder) replace the message with one naming it.
type RangeError struct {
	Msg   string // the message, naming the value and the type's limit
	Below bool   // the value is too small (nonzero but below the resolution), not too large
}

// Error returns the message.
func (e *RangeError) Error() string { return e.Msg }

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
