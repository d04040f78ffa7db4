package cdf

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The embedded tables have the published means (the piecewise-linear integral, worked by hand
// in the files' headers) and sampling reproduces them.
func TestNamedMeans(t *testing.T) {
	for _, c := range []struct {
		name   string
		mean   float64
		points int
		max    int64
		median int64 // the quantile at 0.5, read off the table
	}{
		{"websearch", 1711250, 12, 30000000, 73077}, // 50000 + 0.1/0.13 x 30000, rounded
		{"hadoop", 120420.75, 20, 10000000, 700},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, ok := Named(c.name)
			if !ok {
				t.Fatalf("Named(%q) not found", c.name)
			}
			if math.Abs(d.Mean()-c.mean) > 1e-6 {
				t.Errorf("mean %.4f, want %.2f", d.Mean(), c.mean)
			}
			if len(d.Points()) != c.points || d.Max() != c.max {
				t.Errorf("%d points, max %d; want %d, %d", len(d.Points()), d.Max(), c.points, c.max)
			}
			if q := d.Quantile(0.5); q != c.median {
				t.Errorf("median %d, want %d", q, c.median)
			}
			// Sample mean within 4 standard errors of the exact mean (the sizes' spread from the
			// table's own second moment).
			r := rand.New(rand.NewPCG(1, 2))
			const n = 200000
			var sum, sq float64
			for range n {
				x := float64(d.Quantile(r.Float64()))
				sum += x
				sq += x * x
			}
			m := sum / n
			se := math.Sqrt((sq/n - m*m) / n)
			if math.Abs(m-c.mean) > 4*se {
				t.Errorf("sample mean %.0f, exact %.0f, standard error %.0f", m, c.mean, se)
			}
		})
	}
	if _, ok := Named("datamining"); ok {
		t.Error("Named(datamining) found")
	}
}

// Quantile inverts the CDF: linear between points, a point mass below the first probability,
// at least 1 byte, clamped at the ends.
func TestQuantile(t *testing.T) {
	d, err := New("t", []Point{{100, 0.2}, {200, 0.6}, {1000, 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		u    float64
		want int64
	}{
		{0, 100}, {0.1, 100}, {0.2, 100}, {0.4, 150}, {0.6, 200}, {0.8, 600}, {0.999999, 1000}, {1, 1000}, {-1, 100}, {math.NaN(), 100},
	} {
		if got := d.Quantile(c.u); got != c.want {
			t.Errorf("Quantile(%v) = %d, want %d", c.u, got, c.want)
		}
	}
	// mean = 0.2 x 100 + 0.4 x 150 + 0.4 x 600
	if want := 20.0 + 60 + 240; math.Abs(d.Mean()-want) > 1e-9 {
		t.Errorf("mean %v, want %v", d.Mean(), want)
	}
	small, _ := New("s", []Point{{0, 0}, {2, 1}})
	if q := small.Quantile(0.01); q != 1 {
		t.Errorf("a size near 0 is %d, want at least 1 byte", q)
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"empty", "# nothing\n\n", "f.cdf:1:1: no points"},
		{"one field", "100 0.5\n200\n", "f.cdf:2:1: 1 fields; want two"},
		{"three fields", "100 0.5 x\n", "f.cdf:1:9: 3 fields"},
		{"size word", "  abc 0.5\n", "f.cdf:1:3: size \"abc\" is not a number"},
		{"negative size", "-5 0.5\n", "f.cdf:1:1: size -5 is out of range; allowed 0..1099511627776 bytes"},
		{"huge size", "1e300 1\n", "f.cdf:1:1: size 1e300 is out of range"},
		{"fraction size", "10.5 1\n", "f.cdf:1:1: size 10.5 is not a whole number"},
		{"cdf word", "100 x\n", "f.cdf:1:5: cdf \"x\" is not a number"},
		{"percent", "0 0\n100 15\n", "f.cdf:2:5: cdf 15 is out of range; allowed 0..1 (probabilities are fractions; a table in percent"},
		{"nan", "100 NaN\n", "f.cdf:1:5: cdf NaN is out of range"},
		{"size order", "100 0.5\n100 1\n", "f.cdf:2:1: size 100 is not above the previous 100"},
		{"cdf order", "# c\n100 0.5\n200 0.4\n300 1\n", "f.cdf:3:5: cdf 0.4 is below the previous 0.5"},
		{"last", "100 0.5\n200 0.9\n", "f.cdf:2:5: the last cdf is 0.9; want 1"},
		{"mass at 0", "0 0.1\n200 1\n", "f.cdf:1:3: cdf 0.1 at size 0"},
		{"long line", strings.Repeat(" ", MaxLine+1) + "1 1\n", "f.cdf:1:1: a line is over 4096 bytes"},
		{"too many", strings.Repeat("1 0\n", MaxPoints+1), "f.cdf:10001:1: more than 10000 points"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("f.cdf", strings.NewReader(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want %q", err, c.want)
			}
		})
	}
	if _, err := New("n", nil); err == nil || !strings.Contains(err.Error(), "n: no points") {
		t.Errorf("New(nil) err = %v", err)
	}
	if _, err := New("n", []Point{{5, 1}, {4, 1}}); err == nil || !strings.Contains(err.Error(), "n: point 1: size 4 is not above") {
		t.Errorf("New(decreasing) err = %v", err)
	}
}

// Parse reads tabs, CRLF, comments and float sizes; Format parses back to the same points.
func TestParseFormatRoundTrip(t *testing.T) {
	d, err := Parse("x", strings.NewReader("# head\r\n0\t0\r\n1e3 0.25\n\n  5000   0.75 \n10000 1.0000000000001\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Point{{0, 0}, {1000, 0.25}, {5000, 0.75}, {10000, 1}}
	got := d.Points()
	if len(got) != len(want) {
		t.Fatalf("points %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("points %v, want %v", got, want)
		}
	}
	for _, n := range append(Names(), "x") {
		c := d
		if n != "x" {
			c, _ = Named(n)
		}
		back, err := Parse(n, strings.NewReader(string(c.Format())))
		if err != nil {
			t.Fatalf("%s: %v\n%s", n, err, c.Format())
		}
		if back.Mean() != c.Mean() || len(back.Points()) != len(c.Points()) {
			t.Errorf("%s: round trip mean %v points %d, want %v %d", n, back.Mean(), len(back.Points()), c.Mean(), len(c.Points()))
		}
	}
}
