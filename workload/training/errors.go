package training

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FieldError is a configuration error about one field. Path names the field the way a user
// reads the YAML ("plan.tp", "model.kv_heads", "workload.training.plan.tp"); Msg names the bad
// value and what is allowed. Error renders "path: msg".
type FieldError struct {
	Path string // YAML path of the field ("plan.tp"); "" for the whole configuration
	Msg  string // what is wrong: the value, and what is allowed
}

// Error formats the error as "path: msg" (just msg when Path is empty).
func (e *FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// errorf returns a *FieldError for path.
func errorf(path, format string, args ...any) error {
	return &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// under prefixes the path of a *FieldError (or wraps any other error) with prefix, so that
// library errors ("plan.tp: ...") become scenario errors ("workload.training.plan.tp: ...").
func under(prefix string, err error) error {
	if err == nil || prefix == "" {
		return err
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		p := prefix
		if fe.Path != "" {
			p += "." + fe.Path
		}
		return &FieldError{Path: p, Msg: fe.Msg}
	}
	return &FieldError{Path: prefix, Msg: err.Error()}
}

// dtypeBytes returns the bytes per element of a dtype name, and the allowed names.
func dtypeBytes(s string) (int, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "bf16", "bfloat16":
		return 2, true
	case "fp16", "float16", "half":
		return 2, true
	case "fp8", "float8", "e4m3", "e5m2":
		return 1, true
	case "fp32", "float32", "float":
		return 4, true
	}
	return 0, false
}

// Seconds is a duration in seconds as a float64, for the long horizons of reliability inputs
// (per-GPU MTBFs of years exceed sim.Time's ~106 days). YAML takes a number with a unit: "600s",
// "10min", "1.5h", "2100d", "5.8y" (y = 365 days); a bare number is rejected, as for every
// lockstep duration (docs/architecture.md, Conventions, "Time").
type Seconds float64

// ParseSeconds parses a duration with a unit: s, min (or m), h, d, y. Errors: empty input, a
// missing or unknown unit, a malformed, negative, NaN or infinite number.
func ParseSeconds(s string) (Seconds, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("empty duration; want a number with a unit such as \"600s\", \"3h\", \"2100d\"")
	}
	if in == "0" {
		return 0, nil
	}
	i := 0
	for i < len(in) && (in[i] >= '0' && in[i] <= '9' || in[i] == '.' || in[i] == 'e' || in[i] == 'E' || in[i] == '+' || in[i] == '-') {
		// an 'e' followed by a non-digit starts no exponent ("1e" is a malformed number anyway)
		i++
	}
	num, unit := in[:i], strings.TrimSpace(in[i:])
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("duration %q: %q is not a number", s, num)
	}
	if v < 0 {
		return 0, fmt.Errorf("duration %q is negative; want a value >= 0", s)
	}
	var mult float64
	switch unit {
	case "s":
		mult = 1
	case "min", "m":
		mult = 60
	case "h":
		mult = 3600
	case "d":
		mult = 86400
	case "y":
		mult = 365 * 86400
	case "":
		return 0, fmt.Errorf("duration %q has no unit; want s, min, h, d or y (e.g. \"600s\")", s)
	default:
		return 0, fmt.Errorf("duration %q has unknown unit %q; want s, min, h, d or y", s, unit)
	}
	r := v * mult
	if math.IsInf(r, 0) {
		return 0, fmt.Errorf("duration %q is too long", s)
	}
	return Seconds(r), nil
}

// String formats d in seconds ("11135s"), which ParseSeconds reads back.
func (d Seconds) String() string { return strconv.FormatFloat(float64(d), 'g', -1, 64) + "s" }

// MarshalText implements encoding.TextMarshaler with String.
func (d Seconds) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseSeconds.
func (d *Seconds) UnmarshalText(b []byte) error {
	v, err := ParseSeconds(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
