package sim

import (
	"math/rand/v2"
	"testing"
)

// Fuzz every parser (docs/style.md §11), seeded from round-tripped valid values. Properties: no
// panic on any input; a parsed value is in range; its formatted form parses back to the same value.

func FuzzParseTime(f *testing.F) {
	for _, v := range roundTripTimes {
		f.Add(v.String())
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for range 50 {
		f.Add(randTime(rng).String())
	}
	for _, s := range []string{"2us", "1.5ms", "40.96ns", "2min", "1h", "1e3us", " 5 us ", "5µs", "0",
		"", "5", "-1us", "1xs", "NaN s", "1e30s", "us", ".5us", "1e-400s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, err := ParseTime(in)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ParseTime(%q): empty error", in)
			}
			return
		}
		if v < 0 {
			t.Fatalf("ParseTime(%q) = %d, negative", in, v)
		}
		s := v.String()
		back, err := ParseTime(s)
		if err != nil {
			t.Fatalf("ParseTime(%q) = %d, whose String %q does not parse: %v", in, v, s, err)
		}
		if back != v {
			t.Fatalf("ParseTime(%q) = %d; String %q parses back to %d", in, v, s, back)
		}
	})
}

func FuzzParseRate(f *testing.F) {
	for _, r := range []Rate{1, 999, 1500, 100 * Gbps, 800 * Gbps, 1600 * Gbps, 25 * Gbps, 1 << 53, 1<<63 - 1} {
		f.Add(r.String())
	}
	rng := rand.New(rand.NewPCG(23, 24))
	for range 50 {
		f.Add(Rate(randTime(rng) + 1).String())
	}
	for _, s := range []string{"800G", "25Gb/s", "400e9", "100GB/s", "-1Gbps", "0", "", "1.5bps",
		"100 Gbit/s", "1e30Tbps"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r, err := ParseRate(in)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ParseRate(%q): empty error", in)
			}
			return
		}
		if r < 0 {
			t.Fatalf("ParseRate(%q) = %d, negative", in, r)
		}
		s := r.String()
		back, err := ParseRate(s)
		if err != nil {
			t.Fatalf("ParseRate(%q) = %d, whose String %q does not parse: %v", in, r, s, err)
		}
		if back != r {
			t.Fatalf("ParseRate(%q) = %d; String %q parses back to %d", in, r, s, back)
		}
	})
}

func FuzzParseSize(f *testing.F) {
	for _, n := range []int64{0, 1, 1500, 4096, 1536, 1 << 30, 64e6, 1 << 40, 1<<63 - 1} {
		f.Add(FormatSize(n))
	}
	rng := rand.New(rand.NewPCG(25, 26))
	for range 50 {
		f.Add(FormatSize(int64(randTime(rng))))
		f.Add(FormatSize(rng.Int64N(1<<20) << (10 * rng.UintN(5))))
	}
	for _, s := range []string{"4KiB", "1GiB", "64MB", "1500", "1.5KiB", "2.01KB", "-1KiB", "1.3B",
		"4Kib", "99999999TiB", "", "1e3", "KiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		n, err := ParseSize(in)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("ParseSize(%q): empty error", in)
			}
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d, negative", in, n)
		}
		s := FormatSize(n)
		back, err := ParseSize(s)
		if err != nil {
			t.Fatalf("ParseSize(%q) = %d, whose FormatSize %q does not parse: %v", in, n, s, err)
		}
		if back != n {
			t.Fatalf("ParseSize(%q) = %d; FormatSize %q parses back to %d", in, n, s, back)
		}
	})
}
