package roce

import (
	"math/rand/v2"
	"testing"
)

func TestStripeExamples(t *testing.T) {
	cases := []struct {
		bytes int64
		qps   int
		unit  int64
		want  []int64
	}{
		{8 * 4096, 4, 4096, []int64{8192, 8192, 8192, 8192}},
		{10 * 4096, 4, 4096, []int64{12288, 12288, 8192, 8192}},
		{10000, 2, 4096, []int64{5904, 4096}}, // 3 units: 2 + 1; the short unit is QP 0's
		{5000, 4, 4096, []int64{904, 4096, 0, 0}},
		{0, 3, 4096, []int64{0, 0, 0}},
		{10, 3, 0, []int64{4, 3, 3}}, // byte by byte
		{7, 1, 4096, []int64{7}},
	}
	for _, c := range cases {
		got, err := Stripe(c.bytes, c.qps, c.unit)
		if err != nil || !equalI64(got, c.want) {
			t.Errorf("Stripe(%d, %d, %d) = %v, %v; want %v", c.bytes, c.qps, c.unit, got, err, c.want)
		}
	}
	if _, err := Stripe(1, 0, 1); err == nil {
		t.Error("Stripe over 0 QPs succeeded")
	}
	if _, err := Stripe(-1, 2, 1); err == nil {
		t.Error("Stripe of -1 B succeeded")
	}
}

// TestStripeAgainstNaive deals the units one at a time round robin (the plain reference) and
// compares: same shares, sums to the transfer, shares within one unit of each other, and no
// more packets than one QP would send.
func TestStripeAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		qps := 1 + rng.IntN(16)
		unit := []int64{1, 256, 1024, 4096}[rng.IntN(4)]
		bytes := rng.Int64N(unit * 2000) // up to 2000 units: the naive deal is one unit per step
		if i%5 == 0 {
			bytes = rng.Int64N(unit * 20)
		}
		got, err := Stripe(bytes, qps, unit)
		if err != nil {
			t.Fatal(err)
		}
		naive := make([]int64, qps)
		for left, q := bytes, 0; left > 0; q = (q + 1) % qps {
			naive[q] += unit
			left -= unit
		}
		if over := (unit - bytes%unit) % unit; over != 0 {
			naive[0] -= over
		}
		if !equalI64(got, naive) {
			t.Fatalf("Stripe(%d, %d, %d) = %v; naive %v", bytes, qps, unit, got, naive)
		}
		var sum, pkts int64
		lo, hi := got[0], got[0]
		for _, s := range got {
			sum += s
			pkts += (s + unit - 1) / unit
			lo, hi = min(lo, s), max(hi, s)
		}
		if sum != bytes || hi-lo > unit || pkts != (bytes+unit-1)/unit {
			t.Fatalf("Stripe(%d, %d, %d) = %v: sum %d, spread %d, packets %d", bytes, qps, unit, got, sum, hi-lo, pkts)
		}
	}
}

func equalI64(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
