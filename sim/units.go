package sim

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Rate is a data rate in bits per second (int64). 800 Gb/s is 800e9. YAML and flags take
// "100Gbps", "800G", "1.6Tbps", "25Gb/s"; see ParseRate.
type Rate int64

// Common rates.
const (
	BitPerSec Rate = 1
	Kbps           = 1000 * BitPerSec
	Mbps           = 1000 * Kbps
	Gbps           = 1000 * Mbps
	Tbps           = 1000 * Gbps
	Pbps           = 1000 * Tbps
)

// TxTime returns the serialisation time of n bytes at rate r: n x 8 / r seconds, rounded up to
// a whole picosecond, computed without overflow for any n that fits in an int64. 4,096 B take
// 40.96 ns at 800 Gb/s and 327.68 ns at 100 Gb/s. r must be positive; n <= 0 gives 0.
func (r Rate) TxTime(n int64) Time {
	if n <= 0 || r <= 0 {
		return 0
	}
	// ps = n * 8e12 / r, with a 128-bit intermediate.
	hi, lo := bits.Mul64(uint64(n), 8*uint64(Second))
	if hi >= uint64(r) {
		return MaxTime
	}
	q, rem := bits.Div64(hi, lo, uint64(r))
	if rem != 0 {
		q++
	}
	if q > uint64(MaxTime) {
		return MaxTime
	}
	return Time(q)
}

// BytesIn returns how many whole bytes rate r carries in duration d (floor), without overflow.
func (r Rate) BytesIn(d Time) int64 {
	if d <= 0 || r <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(r), uint64(d))
	div := 8 * uint64(Second)
	if hi >= div {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, div)
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// Gbps returns r in gigabits per second as a float64.
func (r Rate) Gbps() float64 { return float64(r) / float64(Gbps) }

// String formats r with the largest unit that divides it into a readable number:
// "800Gbps", "1.6Tbps", "25Gbps", "1Mbps". The decimal is exact, so every positive rate parses
// back with ParseRate to the same value.
func (r Rate) String() string {
	neg := r < 0
	a := uint64(r)
	if neg {
		a = -a // also right for math.MinInt64
	}
	var s string
	switch {
	case a >= uint64(Pbps):
		s = fmtUnit(a, uint64(Pbps)) + "Pbps"
	case a >= uint64(Tbps):
		s = fmtUnit(a, uint64(Tbps)) + "Tbps"
	case a >= uint64(Gbps):
		s = fmtUnit(a, uint64(Gbps)) + "Gbps"
	case a >= uint64(Mbps):
		s = fmtUnit(a, uint64(Mbps)) + "Mbps"
	case a >= uint64(Kbps):
		s = fmtUnit(a, uint64(Kbps)) + "Kbps"
	default:
		s = strconv.FormatUint(a, 10) + "bps"
	}
	if neg {
		return "-" + s
	}
	return s
}

// ParseRate parses a data rate: a number followed by a unit, which is required (a bare "100"
// is ambiguous) except for zero ("0" is 0 bit/s; fields that need a positive rate say so). Units (case-insensitive prefix, optional "bps", "b/s" or "bit/s"
// after it): "bps" = bit/s, K, M, G, T, P (decimal, 1000). Examples: "100Gbps", "800G",
// "1.6Tbps", "25Gb/s", "400e9bps". A byte unit ("GB/s", "GBps") is rejected rather than
// guessed at.
//
// Errors: empty input, malformed number, unknown unit, negative; a *RangeError between 0 and
// 1 bit/s or beyond int64 (about 9.2e18 bit/s).
func ParseRate(s string) (Rate, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("empty rate; want e.g. \"100Gbps\" or \"800G\"")
	}
	num, unit := splitNumber(in)
	if num == "" {
		return 0, fmt.Errorf("rate %q has no number; want e.g. \"100Gbps\" or \"800G\"", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	tooLarge := func() error {
		return &RangeError{Msg: fmt.Sprintf("rate %q is out of range; the largest rate is %s", s, maxRateText)}
	}
	if math.IsInf(v, 1) && err != nil {
		return 0, tooLarge()
	}
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("rate %q: %q is not a number", s, num)
	}
	u := strings.TrimSpace(unit)
	if u == "" && v == 0 {
		return 0, nil
	}
	if u == "" {
		// "100" could mean 100 Gb/s to a reader and 100 b/s to the parser: ask.
		return 0, fmt.Errorf("rate %q has no unit; want bps, Kbps, Mbps, Gbps, Tbps or Pbps (e.g. \"100Gbps\", \"800G\")", s)
	}
	if strings.HasSuffix(u, "Bps") || strings.HasSuffix(u, "B/s") {
		return 0, fmt.Errorf("rate %q is in bytes per second; lockstep rates are bits per second (e.g. \"800Gbps\")", s)
	}
	lu := strings.ToLower(u)
	for _, suf := range []string{"bps", "b/s", "bit/s", "bits/s"} {
		if strings.HasSuffix(lu, suf) {
			lu = strings.TrimSuffix(lu, suf)
			break
		}
	}
	var mult Rate
	switch lu {
	case "":
		mult = BitPerSec
	case "k":
		mult = Kbps
	case "m":
		mult = Mbps
	case "g":
		mult = Gbps
	case "t":
		mult = Tbps
	case "p":
		mult = Pbps
	default:
		return 0, fmt.Errorf("rate %q has unknown unit %q; want bps, Kbps, Mbps, Gbps, Tbps or Pbps (or K, M, G, T, P)", s, unit)
	}
	if v == 0 && !nonzeroMantissa(num) {
		return 0, nil
	}
	if v < 0 {
		return 0, fmt.Errorf("rate %q must not be negative", s)
	}
	b := v * float64(mult)
	if b < 1 {
		return 0, &RangeError{Msg: fmt.Sprintf("rate %q is below 1 bit per second", s), Below: true}
	}
	// Plain decimals are converted exactly; exponent forms ("400e9") go through float64.
	if n, _, ok := scaleDecimal(num, uint64(mult)); ok {
		if n > math.MaxInt64 {
			return 0, tooLarge()
		}
		return Rate(n), nil
	}
	if b >= math.MaxInt64 {
		return 0, tooLarge()
	}
	return Rate(math.Round(b)), nil
}

// maxRateText is math.MaxInt64 bit/s, for range errors.
const maxRateText = "about 9.2e18 bit/s (9223Pbps)"

// maxSizeText is math.MaxInt64 bytes, for range errors.
const maxSizeText = "about 9.2e18 bytes (8EiB)"

// ParseSize parses a byte count: a number followed by an optional unit. Binary units KiB, MiB,
// GiB, TiB, PiB are powers of 1024; decimal KB, MB, GB, TB, PB are powers of 1000; "B" or no unit is
// bytes. Units are case-insensitive except that the "i" marks binary. Examples: "4KiB" = 4096,
// "1GiB" = 1073741824, "64MB" = 64000000, "1500". Fractions are allowed when the result is a
// whole number of bytes ("1.5KiB" = 1536). Lower-case "b" (bits) is rejected.
//
// Errors: empty input, malformed number, unknown unit, negative, fractional bytes; a
// *RangeError beyond int64 (about 9.2e18 bytes).
func ParseSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("empty size; want e.g. \"4KiB\", \"1GiB\" or \"64MB\"")
	}
	num, unit := splitNumber(in)
	if num == "" {
		return 0, fmt.Errorf("size %q has no number; want e.g. \"4KiB\", \"1GiB\" or \"64MB\"", s)
	}
	u := strings.TrimSpace(unit)
	if strings.HasSuffix(u, "b") && !strings.HasSuffix(u, "B") {
		return 0, fmt.Errorf("size %q is in bits; sizes are bytes (e.g. \"4KiB\", \"64MB\")", s)
	}
	var mult int64
	switch strings.ToLower(u) {
	case "", "b":
		mult = 1
	case "kib", "ki":
		mult = 1 << 10
	case "mib", "mi":
		mult = 1 << 20
	case "gib", "gi":
		mult = 1 << 30
	case "tib", "ti":
		mult = 1 << 40
	case "pib", "pi":
		mult = 1 << 50
	case "kb", "k":
		mult = 1e3
	case "mb", "m":
		mult = 1e6
	case "gb", "g":
		mult = 1e9
	case "tb", "t":
		mult = 1e12
	case "pb", "p":
		mult = 1e15
	default:
		return 0, fmt.Errorf("size %q has unknown unit %q; want B, KiB, MiB, GiB, TiB, PiB, KB, MB, GB, TB or PB", s, unit)
	}
	// Plain decimals are converted exactly ("2.01KB" is 2010 bytes, though 2.01*1000 is not
	// in float64); exponent forms ("1e3") go through float64.
	if n, frac, ok := scaleDecimal(num, uint64(mult)); ok {
		if frac {
			return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
		}
		if n > math.MaxInt64 {
			return 0, &RangeError{Msg: fmt.Sprintf("size %q is out of range; the largest size is %s", s, maxSizeText)}
		}
		return int64(n), nil
	}
	v, err := strconv.ParseFloat(num, 64)
	if math.IsInf(v, 1) && err != nil {
		return 0, &RangeError{Msg: fmt.Sprintf("size %q is out of range; the largest size is %s", s, maxSizeText)}
	}
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("size %q: %q is not a number", s, num)
	}
	if v < 0 {
		return 0, fmt.Errorf("size %q is negative; want a value >= 0", s)
	}
	b := v * float64(mult)
	if b >= math.MaxInt64 {
		return 0, &RangeError{Msg: fmt.Sprintf("size %q is out of range; the largest size is %s", s, maxSizeText)}
	}
	if b != math.Trunc(b) || b == 0 && nonzeroMantissa(num) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return int64(b), nil
}

// FormatSize formats n bytes with a binary unit when it divides exactly ("4KiB", "1GiB") and in
// bytes otherwise ("1500B"). The result parses back with ParseSize to n.
func FormatSize(n int64) string {
	units := []struct {
		s string
		m int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if n != 0 && n%u.m == 0 {
			return strconv.FormatInt(n/u.m, 10) + u.s
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// splitNumber splits a leading number (digits, sign, '.', exponent) from its unit.
func splitNumber(s string) (num, unit string) {
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c == '.', c == '+', c == '-':
			i++
			continue
		case (c == 'e' || c == 'E') && i > 0 && i+1 < len(s) && (isDigit(s[i+1]) || s[i+1] == '-' || s[i+1] == '+'):
			i++
			continue
		}
		break
	}
	return s[:i], s[i:]
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scaleDecimal returns num x mult rounded to the nearest integer (halves up), computed exactly in
// integers. num must be a plain non-negative decimal: an optional '+', digits, and an optional
// '.' with more digits ("12", "1.5", ".25", "3."); ok is false for anything else (signs,
// exponents, more than 19 significant fraction digits), and the caller falls back to float64.
// frac reports that the exact product was not a whole number. A result beyond uint64 is
// reported as math.MaxUint64, so callers need only compare against their own limit.
func scaleDecimal(num string, mult uint64) (n uint64, frac, ok bool) {
	ip, fp, _ := strings.Cut(strings.TrimPrefix(num, "+"), ".")
	if ip == "" && fp == "" || !allDigits(ip) || !allDigits(fp) {
		return 0, false, false
	}
	fp = strings.TrimRight(fp, "0")
	if len(fp) > 19 { // 10^19 is the largest power of ten in a uint64
		return 0, false, false
	}
	if ip = strings.TrimLeft(ip, "0"); ip != "" {
		w, err := strconv.ParseUint(ip, 10, 64)
		if err != nil {
			return math.MaxUint64, false, true
		}
		hi, lo := bits.Mul64(w, mult)
		if hi != 0 {
			return math.MaxUint64, false, true
		}
		n = lo
	}
	if fp == "" {
		return n, false, true
	}
	f, _ := strconv.ParseUint(fp, 10, 64) // at most 19 digits: fits
	den := uint64(1)
	for range len(fp) {
		den *= 10
	}
	// f < den, so f*mult/den < mult fits in 64 bits and Div64 cannot overflow.
	hi, lo := bits.Mul64(f, mult)
	q, rem := bits.Div64(hi, lo, den)
	if rem != 0 {
		frac = true
		if rem >= den-rem {
			q++
		}
	}
	n, carry := bits.Add64(n, q, 0)
	if carry != 0 {
		return math.MaxUint64, frac, true
	}
	return n, frac, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// Size is a byte count used in configuration (queue limits, packet and transfer sizes). It is a
// plain int64 number of bytes; the type exists so YAML and flags can say "4KiB" or "64MB" (see
// ParseSize).
type Size int64

// String formats s as FormatSize does ("4KiB", "1500B").
func (s Size) String() string { return FormatSize(int64(s)) }

// MarshalText implements encoding.TextMarshaler with String.
func (s Size) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseSize.
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = Size(v)
	return nil
}

// MarshalText implements encoding.TextMarshaler with String.
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseRate.
func (r *Rate) UnmarshalText(b []byte) error {
	v, err := ParseRate(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}
