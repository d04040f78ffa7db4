package fabric

import (
	"math"
	"math/big"
	"testing"
)

// TestLossProbability checks the fast loss probability (cached per size, combined with
// either) against the plain formula 1 - (1-loss)(1-ber)^(8 size)(1-filter), over sizes that
// alternate so the per-size cache is both hit and refreshed (docs/style.md §9).
func TestLossProbability(t *testing.T) {
	// The plain formula in 256-bit floats (1 - x cancels in float64 for tiny BERs), with the
	// integer power by repeated squaring.
	naive := func(loss, ber, ent float64, size int32) float64 {
		f := func(x float64) *big.Float { return new(big.Float).SetPrec(256).SetFloat64(x) }
		one := f(1)
		keep := f(1)
		base := new(big.Float).Sub(one, f(ber))
		for e := 8 * int64(size); e > 0; e >>= 1 {
			if e&1 != 0 {
				keep.Mul(keep, base)
			}
			base.Mul(base, base)
		}
		keep.Mul(keep, new(big.Float).Sub(one, f(loss)))
		keep.Mul(keep, new(big.Float).Sub(one, f(ent)))
		q, _ := new(big.Float).Sub(one, keep).Float64()
		return q
	}
	for _, tc := range []struct {
		loss, ber, ent float64
	}{
		{0, 0, 0},
		{0.1, 0, 0},
		{0, 1e-6, 0},
		{0, 1e-12, 0},
		{0, 0, 0.5},
		{0.05, 1e-7, 0.25},
		{0.3, 1e-5, 1},
		{0, 1, 0},
		{1, 0, 0},
	} {
		f := &linkFaults{loss: tc.loss, ber: tc.ber, lnKeep: math.Log1p(-tc.ber)}
		if tc.ent > 0 {
			f.ent[0] = entropyFilter{entropy: 9, prob: tc.ent}
			f.nEnt = 1
		}
		for _, size := range []int32{HeaderBytes, 4096, 4096, 1500, HeaderBytes, 9000} {
			for _, ev := range []uint32{9, 10} {
				ent := tc.ent
				if ev != 9 {
					ent = 0
				}
				got := f.prob(&Packet{Size: size, Entropy: ev})
				want := naive(tc.loss, tc.ber, ent, size)
				if d := math.Abs(got - want); d > 1e-12*want {
					t.Errorf("%+v, size %d, entropy %d: prob %.17g, want %.17g", tc, size, ev, got, want)
				}
			}
		}
	}
}
