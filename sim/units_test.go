package sim

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func TestRateConstants(t *testing.T) {
	if Kbps != 1e3 || Mbps != 1e6 || Gbps != 1e9 || Tbps != 1e12 {
		t.Errorf("rate constants: Kbps=%d Mbps=%d Gbps=%d Tbps=%d", Kbps, Mbps, Gbps, Tbps)
	}
	if got := (800 * Gbps).Gbps(); got != 800 {
		t.Errorf("Gbps() = %v, want 800", got)
	}
}

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Rate
	}{
		{"100Gbps", 100e9},
		{"800G", 800e9},
		{"1.6Tbps", 1.6e12},
		{"25Gb/s", 25e9},
		{"400e9bps", 400e9},
		{"1Mbps", 1e6},
		{"1bps", 1},
		{"3bps", 3},
		{"1.5bps", 2}, // rounds to the nearest bit per second
		{"10Kbps", 10e3},
		{"10k", 10e3},
		{"100gbps", 100e9}, // prefixes are case-insensitive
		{"100Gbit/s", 100e9},
		{"100 Gbits/s", 100e9},
		{" 200 Gbps ", 200e9},
		{"1.2345678901234567Tbps", 1234567890123}, // sub-bit digits round
		{"9223372.036854775807Tbps", math.MaxInt64},
	} {
		got, err := ParseRate(c.in)
		if err != nil {
			t.Errorf("ParseRate(%q): unexpected error: %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseRate(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestParseRateZero: zero needs no unit ("0" is unambiguous) and may have one; fields that
// need a positive rate check that themselves.
func TestParseRateZero(t *testing.T) {
	for _, in := range []string{"0", "0bps", "0Gbps", "0.0G", " 0 "} {
		if r, err := ParseRate(in); err != nil || r != 0 {
			t.Errorf("ParseRate(%q) = %v, %v; want 0", in, r, err)
		}
	}
}

func TestParseRateErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"  ",
		"-1Gbps",  // negative
		"-100G",   //
		"100",     // no unit: ambiguous
		"0.4bps",  // below 1 bit/s
		"0Xbps",   // zero, but an unknown unit
		"100GB/s", // bytes per second are rejected, not guessed at
		"100GBps",
		"100MB/s",
		"100B/s",
		"100B",
		"10Xbps", // unknown unit
		"10 G bps",
		"Gbps", // no number
		"NaNGbps",
		"1..5G",
		"1e30Tbps",                 // beyond int64
		"9223372036854775808bps",   // MaxInt64 + 1
		"9223372.036854775808Tbps", //
	} {
		got, err := ParseRate(in)
		if err == nil {
			t.Errorf("ParseRate(%q) = %d, want an error", in, got)
			continue
		}
		checkErrMentions(t, "ParseRate", in, err)
	}
}

func TestRateString(t *testing.T) {
	for _, c := range []struct {
		in   Rate
		want string
	}{
		{0, "0bps"},
		{1, "1bps"},
		{999, "999bps"},
		{1500, "1.5Kbps"},
		{1e6, "1Mbps"},
		{25e9, "25Gbps"},
		{800e9, "800Gbps"},
		{1.6e12, "1.6Tbps"},
		{-100e9, "-100Gbps"},
		{1234567890123, "1.234567890123Tbps"},
		{math.MaxInt64, "9223.372036854775807Pbps"},
		{math.MinInt64, "-9223.372036854775808Pbps"},
	} {
		if got := c.in.String(); got != c.want {
			t.Errorf("Rate(%d).String() = %q, want %q", int64(c.in), got, c.want)
		}
	}
}

func TestRateStringRoundTrip(t *testing.T) {
	check := func(r Rate) {
		t.Helper()
		s := r.String()
		got, err := ParseRate(s)
		if err != nil {
			t.Errorf("ParseRate(Rate(%d).String() = %q): %v", int64(r), s, err)
			return
		}
		if got != r {
			t.Errorf("ParseRate(%q) = %d, want %d", s, got, r)
		}
	}
	for _, r := range []Rate{1, 999, 1000, 1001, 100 * Gbps, 800 * Gbps, 1600 * Gbps, 1<<53 + 1, math.MaxInt64} {
		check(r)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		if r := Rate(randTime(rng)); r > 0 {
			check(r)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"4KiB", 4096},
		{"1GiB", 1 << 30},
		{"64MB", 64e6},
		{"1500", 1500},
		{"1500B", 1500},
		{"1.5KiB", 1536},
		{"0", 0},
		{"0B", 0},
		{"0.5KiB", 512},
		{"4Ki", 4096},
		{"4K", 4000},
		{"4KIB", 4096}, // units are case-insensitive except b/B
		{"2MiB", 2 << 20},
		{"1TiB", 1 << 40},
		{"1.5GB", 1.5e9},
		{"2.01KB", 2010}, // 2.01*1000 is 2009.9999999999998 in float64
		{"4.03KB", 4030}, // and this one 4030.0000000000005
		{"1e3", 1000},
		{" 9 KiB ", 9 * 1024},
		{"8388607TiB", 8388607 << 40}, // the largest whole TiB count in an int64
		{"9223372036854775807", math.MaxInt64},
		{"9223372036854775807B", math.MaxInt64},
	} {
		got, err := ParseSize(c.in)
		if err != nil {
			t.Errorf("ParseSize(%q): unexpected error: %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("ParseSize(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestParseSizeErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"  ",
		"-1KiB", // negative
		"-1",
		"1.3B", // fractional bytes
		"0.1B",
		"1e-1KiB", // 102.4 bytes
		"4Kib",    // bits are rejected
		"4Kb",
		"1b",
		"4kib",
		"4XB", // unknown unit
		"4KiBs",
		"4 K B",
		"KiB", // no number
		"NaNKiB",
		"1..5KiB",
		"99999999TiB", // beyond int64
		"8388608TiB",
		"9223372036854775808",
		"1e30",
	} {
		got, err := ParseSize(in)
		if err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
			continue
		}
		checkErrMentions(t, "ParseSize", in, err)
	}
}

func TestFormatSize(t *testing.T) {
	for _, c := range []struct {
		in   int64
		want string
	}{
		{0, "0B"},
		{1, "1B"},
		{1500, "1500B"},
		{1536, "1536B"},
		{4096, "4KiB"},
		{1 << 20, "1MiB"},
		{3 << 30, "3GiB"},
		{1 << 40, "1TiB"},
		{1 << 50, "1024TiB"},
		{64e6, "62500KiB"}, // 64 MB happens to be a whole number of KiB
		{1e6, "1000000B"},
		{math.MaxInt64, "9223372036854775807B"},
	} {
		if got := FormatSize(c.in); got != c.want {
			t.Errorf("FormatSize(%d) = %q, want %q", c.in, got, c.want)
		}
		if got := Size(c.in).String(); got != c.want {
			t.Errorf("Size(%d).String() = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFormatSizeRoundTrip(t *testing.T) {
	check := func(n int64) {
		t.Helper()
		s := FormatSize(n)
		got, err := ParseSize(s)
		if err != nil {
			t.Errorf("ParseSize(FormatSize(%d) = %q): %v", n, s, err)
			return
		}
		if got != n {
			t.Errorf("ParseSize(%q) = %d, want %d", s, got, n)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		check(int64(randTime(rng)))
		// Multiples of the binary units.
		check(rng.Int64N(1<<20) << (10 * rng.UintN(5)))
	}
}

func TestTextRoundTrip(t *testing.T) {
	type cfg struct {
		Rate  Rate `json:"rate"`
		MTU   Size `json:"mtu"`
		Limit Size `json:"limit"`
		Delay Time `json:"delay"`
	}
	in := cfg{Rate: 800 * Gbps, MTU: 4096, Limit: 1500, Delay: 40960}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"rate":"800Gbps","mtu":"4KiB","limit":"1500B","delay":"40.96ns"}`; string(b) != want {
		t.Errorf("json = %s, want %s", b, want)
	}
	var out cfg
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Errorf("round trip = %+v, want %+v", out, in)
	}

	// Direct MarshalText/UnmarshalText pairs.
	for _, r := range []Rate{1, 25 * Gbps, 1600 * Gbps, 1234567} {
		b, _ := r.MarshalText()
		var got Rate
		if err := got.UnmarshalText(b); err != nil || got != r {
			t.Errorf("Rate %d: UnmarshalText(%q) = %d, %v", int64(r), b, got, err)
		}
	}
	for _, n := range []Size{0, 1, 1500, 4096, 1 << 40, math.MaxInt64} {
		b, _ := n.MarshalText()
		var got Size
		if err := got.UnmarshalText(b); err != nil || got != n {
			t.Errorf("Size %d: UnmarshalText(%q) = %d, %v", int64(n), b, got, err)
		}
	}

	// Bad input is an error and leaves the value alone.
	r, n := Rate(5), Size(5)
	if err := r.UnmarshalText([]byte("100GB/s")); err == nil || r != 5 {
		t.Errorf("Rate.UnmarshalText(100GB/s) = %v, value %d", err, r)
	}
	if err := n.UnmarshalText([]byte("4Kib")); err == nil || n != 5 {
		t.Errorf("Size.UnmarshalText(4Kib) = %v, value %d", err, n)
	}
	if err := json.Unmarshal([]byte(`{"rate":"fast"}`), &out); err == nil {
		t.Errorf("json with a bad rate: want error")
	}
}

func TestTxTime(t *testing.T) {
	for _, c := range []struct {
		n    int64
		r    Rate
		want Time
	}{
		{4096, 800 * Gbps, 40960},  // 40.96 ns, exact
		{4096, 100 * Gbps, 327680}, // 327.68 ns, exact
		{1, 800 * Gbps, 10},        // 1 byte: 10 ps at 800 Gb/s (docs/architecture.md, Conventions)
		{1, 400 * Gbps, 20},
		{1, 100 * Gbps, 80},
		{1500, 25 * Gbps, 480 * Nanosecond},
		{1, 1, 8 * Second},
		{1, 3 * Gbps, 2667},       // 2666.67 ps rounds up
		{3, 7, 3428571428572},     // 3428571428571.43 ps rounds up
		{4097, 800 * Gbps, 40970}, // exact
		{1, 799 * Gbps, 11},       // 10.0125 ps rounds up
		{0, 800 * Gbps, 0},
		{-1, 800 * Gbps, 0},
		{4096, 0, 0},
		{4096, -1, 0},
		{1 << 60, 1, MaxTime},                      // 2^60 B at 1 bit/s saturates
		{1 << 40, 800 * Gbps, 10995116277760},      // 1 TiB at 800G: 2^40 * 10 ps, no overflow
		{math.MaxInt64, math.MaxInt64, 8 * Second}, // no overflow in the product
		{math.MaxInt64, 1 * Tbps, MaxTime},
	} {
		if got := c.r.TxTime(c.n); got != c.want {
			t.Errorf("Rate(%d).TxTime(%d) = %d, want %d", int64(c.r), c.n, got, c.want)
		}
	}
}

// TestTxTimeBytesInMatchBigInt checks the 128-bit arithmetic against math/big.
func TestTxTimeBytesInMatchBigInt(t *testing.T) {
	psPerByte := big.NewInt(8 * int64(Second))
	maxT := big.NewInt(int64(MaxTime))
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		n := int64(randTime(rng))
		r := Rate(randTime(rng))
		d := randTime(rng)
		if r <= 0 {
			continue
		}
		// TxTime = min(ceil(n * 8e12 / r), MaxTime).
		want := new(big.Int).Mul(big.NewInt(n), psPerByte)
		want.Add(want, big.NewInt(int64(r)-1))
		want.Quo(want, big.NewInt(int64(r)))
		if want.Cmp(maxT) > 0 {
			want.Set(maxT)
		}
		if got := r.TxTime(n); n > 0 && got != Time(want.Int64()) {
			t.Errorf("Rate(%d).TxTime(%d) = %d, want %s", int64(r), n, got, want)
		}
		// BytesIn = min(floor(r * d / 8e12), MaxInt64).
		want.Mul(big.NewInt(int64(r)), big.NewInt(int64(d)))
		want.Quo(want, psPerByte)
		if want.Cmp(maxT) > 0 {
			want.Set(maxT)
		}
		if got := r.BytesIn(d); got != want.Int64() {
			t.Errorf("Rate(%d).BytesIn(%d) = %d, want %s", int64(r), d, got, want)
		}
	}
}

// TestBytesInInverse checks that TxTime and BytesIn are inverse in the rounding sense: n bytes fit
// in TxTime(n) but not in one picosecond less, and BytesIn(d) bytes take no longer than d.
func TestBytesInInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	rates := []Rate{1, 1 * Gbps, 25 * Gbps, 100 * Gbps, 400 * Gbps, 800 * Gbps, 1600 * Gbps, 3 * Gbps, 7}
	for i := range 50000 {
		r := rates[i%len(rates)]
		if i%2 == 1 {
			r = Rate(1 + rng.Int64N(int64(10*Tbps)))
		}
		n := 1 + rng.Int64N(1<<40)
		d := r.TxTime(n)
		if d == MaxTime {
			continue
		}
		if got := r.BytesIn(d); got < n {
			t.Fatalf("rate %v: BytesIn(TxTime(%d) = %d) = %d, want >= %d", r, n, d, got, n)
		}
		if got := r.BytesIn(d - 1); got >= n {
			t.Fatalf("rate %v: BytesIn(TxTime(%d)-1 = %d) = %d, want < %d", r, n, d-1, got, n)
		}
		dd := Time(rng.Int64N(int64(Second)))
		b := r.BytesIn(dd)
		if got := r.TxTime(b); got > dd {
			t.Fatalf("rate %v: TxTime(BytesIn(%d) = %d) = %d, want <= %d", r, dd, b, got, dd)
		}
	}
	if got := Rate(1).BytesIn(MaxTime); got != int64(MaxTime/(8*Second)) {
		t.Errorf("BytesIn(MaxTime) at 1 bps = %d", got)
	}
	if got := Rate(math.MaxInt64).BytesIn(MaxTime); got != math.MaxInt64 {
		t.Errorf("BytesIn saturation = %d, want MaxInt64", got)
	}
	if got := (800 * Gbps).BytesIn(0); got != 0 {
		t.Errorf("BytesIn(0) = %d", got)
	}
	if got := (800 * Gbps).BytesIn(-5); got != 0 {
		t.Errorf("BytesIn(-5) = %d", got)
	}
	if got := Rate(0).BytesIn(Second); got != 0 {
		t.Errorf("zero rate BytesIn = %d", got)
	}
}

// TestParseRangeErrors: a well-formed value beyond its type's range, or nonzero but below its
// resolution, is a *RangeError (Below for the second) naming the value and the limit, never
// "not a number" and never a silent 0 (which a field would take for "left out").
func TestParseRangeErrors(t *testing.T) {
	for _, c := range []struct {
		in, kind string
		below    bool
		want     string
	}{
		{"1000000h", "time", false, "about 106 days"},
		{"1e400s", "time", false, "about 106 days"},
		{"9223372036854775808ps", "time", false, "about 106 days"},
		{"1e-400s", "time", true, "below the 1 ps resolution"},
		{"0.0001ps", "time", true, "below the 1 ps resolution"},
		{"0.4ps", "time", true, "below the 1 ps resolution"},
		{"0.0000006ns", "time", true, "below the 1 ps resolution"},
		{"1e30bps", "rate", false, "9.2e18 bit/s"},
		{"1e400G", "rate", false, "9.2e18 bit/s"},
		{"10000Pbps", "rate", false, "9.2e18 bit/s"},
		{"1e-400G", "rate", true, "below 1 bit per second"},
		{"0.5bps", "rate", true, "below 1 bit per second"},
		{"9223372036854775808", "size", false, "9.2e18 bytes"},
		{"1e400B", "size", false, "9.2e18 bytes"},
		{"8192PiB", "size", false, "9.2e18 bytes"},
	} {
		var err error
		switch c.kind {
		case "time":
			_, err = ParseTime(c.in)
		case "rate":
			_, err = ParseRate(c.in)
		default:
			_, err = ParseSize(c.in)
		}
		var re *RangeError
		if !errors.As(err, &re) || re.Below != c.below || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), strconv.Quote(c.in)) {
			t.Errorf("Parse %s %q: error %v; want a *RangeError (below %v) quoting it and %q", c.kind, c.in, err, c.below, c.want)
		}
	}
}

// TestParseSizePetabytes: PiB and PB are 2^50 and 10^15 bytes (1 PiB is the largest transfer).
func TestParseSizePetabytes(t *testing.T) {
	for in, want := range map[string]int64{"1PiB": 1 << 50, "1.5PiB": 3 << 49, "2PB": 2e15, "1pi": 1 << 50, "8191PiB": 8191 << 50} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}
