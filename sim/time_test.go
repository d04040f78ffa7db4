package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestTimeConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want Time
	}{
		{"Picosecond", Picosecond, 1},
		{"Nanosecond", Nanosecond, 1_000},
		{"Microsecond", Microsecond, 1_000_000},
		{"Millisecond", Millisecond, 1_000_000_000},
		{"Second", Second, 1_000_000_000_000},
		{"Minute", Minute, 60_000_000_000_000},
		{"Hour", Hour, 3_600_000_000_000_000},
		{"MaxTime", MaxTime, math.MaxInt64},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	// docs/architecture.md, Conventions: an int64 of picoseconds is enough for about 106 days.
	if days := MaxTime / (24 * Hour); days != 106 {
		t.Errorf("MaxTime = %d days, want 106", days)
	}
}

func TestTimeConversions(t *testing.T) {
	if got := (1500 * Millisecond).Seconds(); got != 1.5 {
		t.Errorf("Seconds() = %v, want 1.5", got)
	}
	if got := Time(40960).Micros(); got != 0.04096 {
		t.Errorf("Micros() = %v, want 0.04096", got)
	}
	for _, c := range []struct {
		s    float64
		want Time
	}{
		{0, 0},
		{1.5e-6, 1500 * Nanosecond},
		{40.96e-9, 40960},
		{0.4e-12, 0},
		{0.6e-12, 1},
		{30, 30 * Second},
		{-2e-6, -2 * Microsecond},
		{1e10, MaxTime},   // saturates
		{-1e10, -MaxTime}, // saturates
		{math.Inf(1), MaxTime},
		{math.Inf(-1), -MaxTime},
	} {
		if got := FromSeconds(c.s); got != c.want {
			t.Errorf("FromSeconds(%v) = %d, want %d", c.s, got, c.want)
		}
	}
}

func TestParseTime(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Time
	}{
		{"2us", 2 * Microsecond},
		{"1.5ms", 1500 * Microsecond},
		{"30s", 30 * Second},
		{"40.96ns", 40960},
		{"100ps", 100},
		{"0", 0},
		{"0s", 0},
		{"0.0us", 0},
		{"2min", 2 * Minute},
		{"2m", 2 * Minute},
		{"1.5min", 90 * Second},
		{"1h", Hour},
		{"2.5h", 150 * Minute},
		{"1e3us", Millisecond},
		{"2.5e-3s", 2500 * Microsecond},
		{" 5 us ", 5 * Microsecond},
		{"5µs", 5 * Microsecond},
		{"+3ns", 3 * Nanosecond},
		{".5us", 500 * Nanosecond},
		{"5.us", 5 * Microsecond},
		{"007ns", 7 * Nanosecond},
		{"1.4ps", 1},         // rounds to nearest
		{"1.5ps", 2},         // half rounds away from zero
		{"1.0004ns", 1000},   // sub-picosecond digits round
		{"1.0005ns", 1001},   //
		{"327.68ns", 327680}, // 4 KiB at 100 Gb/s
		// Exact beyond float64's 15-16 significant digits.
		{"1000.000000000001s", 1000*Second + 1},
		{"9007199254740993ps", 9007199254740993}, // 2^53 + 1
		{"9223372.036854775806s", MaxTime - 1},
		{"9223372036854775807ps", MaxTime},
		{"never", MaxTime},
		{" never ", MaxTime},
	} {
		got, err := ParseTime(c.in)
		if err != nil {
			t.Errorf("ParseTime(%q): unexpected error: %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseTime(%q) = %d ps, want %d ps", c.in, got, c.want)
		}
	}
}

func TestParseTimeErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"   ",
		"5",     // a number needs a unit
		"0.0",   // only a bare "0" may omit it
		"-1us",  // negative
		"-0.5s", //
		"1xs",   // unknown unit
		"5 m s", //
		"5sec",  //
		"NaN s", // not a number
		"NaNs",
		"Infs",
		"us", // no number
		"1.2.3us",
		"1e30s",                 // beyond ~106 days
		"1e400s",                // beyond float64
		"2562048h",              // just beyond MaxTime
		"9223372036854775808ps", // MaxTime + 1
		"9223372.036854775808s", // MaxTime + 1
		"--1us",
		"1e+us",
		"Never",
	} {
		got, err := ParseTime(in)
		if err == nil {
			t.Errorf("ParseTime(%q) = %d, want an error", in, got)
			continue
		}
		checkErrMentions(t, "ParseTime", in, err)
	}
}

// checkErrMentions asserts that err has a message and that, for non-blank input, the message
// quotes the input so the user can find it.
func checkErrMentions(t *testing.T, fn, in string, err error) {
	t.Helper()
	msg := err.Error()
	if msg == "" {
		t.Errorf("%s(%q): empty error message", fn, in)
		return
	}
	if strings.TrimSpace(in) != "" && !strings.Contains(msg, fmt.Sprintf("%q", in)) {
		t.Errorf("%s(%q): error %q does not quote the input", fn, in, msg)
	}
}

func TestTimeString(t *testing.T) {
	for _, c := range []struct {
		in   Time
		want string
	}{
		{0, "0s"},
		{1, "1ps"},
		{100, "100ps"},
		{999, "999ps"},
		{Nanosecond, "1ns"},
		{40960, "40.96ns"},
		{327680, "327.68ns"},
		{2 * Microsecond, "2us"},
		{1500 * Microsecond, "1.5ms"},
		{30 * Second, "30s"},
		{90 * Second, "90s"},
		{Hour, "3600s"},
		{Second + 1, "1.000000000001s"},
		{-2 * Microsecond, "-2us"},
		{-1, "-1ps"},
		{MaxTime, "never"},
		{MaxTime - 1, "9223372.036854775806s"},
		{-MaxTime, "-9223372.036854775807s"},
		{math.MinInt64, "-9223372.036854775808s"},
	} {
		if got := c.in.String(); got != c.want {
			t.Errorf("Time(%d).String() = %q, want %q", int64(c.in), got, c.want)
		}
	}
}

// roundTripTimes are values whose String must parse back exactly.
var roundTripTimes = []Time{
	0, 1, 10, 999, Nanosecond, Nanosecond + 1, 40960, 327680, Microsecond - 1, Microsecond,
	1500 * Microsecond, Millisecond + 1, Second - 1, Second, Second + 1, 30 * Second, Minute,
	Hour, 1000*Second + 1, 106 * 24 * Hour, 1 << 53, 1<<53 + 1, MaxTime - 1, MaxTime,
}

func TestTimeStringRoundTrip(t *testing.T) {
	check := func(v Time) {
		t.Helper()
		s := v.String()
		got, err := ParseTime(s)
		if err != nil {
			t.Errorf("ParseTime(Time(%d).String() = %q): %v", int64(v), s, err)
			return
		}
		if got != v {
			t.Errorf("ParseTime(%q) = %d, want %d", s, got, v)
		}
	}
	for _, v := range roundTripTimes {
		check(v)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		check(randTime(rng))
	}
}

// randTime draws a non-negative Time spread over all magnitudes (uniform below 2^k for a random
// k < 64), so picoseconds, microseconds and days are all well represented.
func randTime(rng *rand.Rand) Time {
	bits := rng.UintN(64) // 0..63
	return Time(rng.Uint64() >> (64 - bits))
}

func TestTimeText(t *testing.T) {
	for _, v := range roundTripTimes {
		b, err := v.MarshalText()
		if err != nil {
			t.Fatalf("Time(%d).MarshalText: %v", int64(v), err)
		}
		var got Time
		if err := got.UnmarshalText(b); err != nil {
			t.Errorf("UnmarshalText(%q): %v", b, err)
			continue
		}
		if got != v {
			t.Errorf("UnmarshalText(%q) = %d, want %d", b, got, v)
		}
	}
	var v Time = 7
	if err := v.UnmarshalText([]byte("1xs")); err == nil {
		t.Errorf("UnmarshalText(1xs): want error")
	}
	if v != 7 {
		t.Errorf("failed UnmarshalText changed the value to %d", v)
	}

	// Through encoding/json, as resolved scenarios are written.
	type cfg struct {
		RTO  Time `json:"rto"`
		Fail Time `json:"fail"`
	}
	in := cfg{RTO: 40960, Fail: MaxTime}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"rto":"40.96ns","fail":"never"}`; string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
	var out cfg
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Errorf("json round trip = %+v, want %+v", out, in)
	}
}
