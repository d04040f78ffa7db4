package cdf

import (
	"strings"
	"testing"
)

// FuzzParse: no input panics; a parsed CDF is a valid one (sizes increasing within bounds,
// probabilities non-decreasing to 1, a mean between the smallest and largest size, quantiles
// in range and monotone) and Format parses back to the same points (docs/style.md §11).
func FuzzParse(f *testing.F) {
	f.Add(websearchFile)
	f.Add(hadoopFile)
	f.Add("0 0\n100 0.5\n200 1\n")
	f.Add("100 1\n")
	f.Add("# c\n1e3\t0.3\r\n2e3 1\n")
	f.Add("0 0.1\n")
	f.Fuzz(func(t *testing.T, text string) {
		d, err := Parse("fuzz.cdf", strings.NewReader(text))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.cdf:") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		ps := d.Points()
		for i, p := range ps {
			if p.Size < 0 || p.Size > MaxSize || p.P < 0 || p.P > 1 || (i > 0 && (p.Size <= ps[i-1].Size || p.P < ps[i-1].P)) {
				t.Fatalf("point %d %+v out of order or range in %v", i, p, ps)
			}
		}
		if ps[len(ps)-1].P != 1 {
			t.Fatalf("last cdf %v", ps[len(ps)-1].P)
		}
		if m := d.Mean(); m < float64(ps[0].Size)-1e-6 || m > float64(d.Max())+1e-6 {
			t.Fatalf("mean %v outside [%d, %d]", m, ps[0].Size, d.Max())
		}
		prev := int64(0)
		for k := 0; k <= 16; k++ {
			q := d.Quantile(float64(k) / 16)
			if q < 1 || q > max(d.Max(), 1) || q < prev {
				t.Fatalf("Quantile(%d/16) = %d after %d, max %d", k, q, prev, d.Max())
			}
			prev = q
		}
		back, err := Parse("fuzz.cdf", strings.NewReader(string(d.Format())))
		if err != nil {
			t.Fatalf("Format does not parse back: %v\n%s", err, d.Format())
		}
		bp := back.Points()
		if len(bp) != len(ps) {
			t.Fatalf("round trip %v, want %v", bp, ps)
		}
		for i := range ps {
			if bp[i] != ps[i] {
				t.Fatalf("round trip %v, want %v", bp, ps)
			}
		}
	})
}
