package collective

import (
	"fmt"
	"math/big"
)

// MoE describes a mixture-of-experts token dispatch (expert parallelism): Ranks ranks each
// holding an equal share of Tokens tokens, each token routed to TopK experts spread uniformly
// over the ranks, each token carrying Hidden elements of DTypeBytes bytes. The combine step
// sends the same bytes back (the transpose).
type MoE struct {
	Ranks      int   // P >= 1
	Tokens     int64 // T >= 0, tokens in the whole batch
	TopK       int   // k >= 1, experts per token
	Hidden     int64 // H >= 1, elements per token
	DTypeBytes int64 // bytes per element, >= 1 (2 for fp16/bf16)
}

func (m MoE) check() error {
	switch {
	case m.Ranks < 1:
		return fieldError("moe.ranks", m.Ranks, "must be >= 1")
	case m.Tokens < 0:
		return fieldError("moe.tokens", m.Tokens, "must be >= 0")
	case m.TopK < 1:
		return fieldError("moe.top_k", m.TopK, "must be >= 1")
	case m.Hidden < 1:
		return fieldError("moe.hidden", m.Hidden, "must be >= 1")
	case m.DTypeBytes < 1:
		return fieldError("moe.dtype_bytes", m.DTypeBytes, "must be >= 1")
	}
	return nil
}

// DispatchBytesPerRank returns the bytes each rank sends to other ranks in the dispatch
// all-to-all under uniform routing: (T/P) k H d (P-1)/P, computed exactly and rounded down.
// P=64, T=2^20, top-2, H=4096, fp16 gives 264,241,152 B (16,384 tokens x 2 experts x 8 KiB x
// 63/64). Errors: a field out of range, or a result beyond int64.
func (m MoE) DispatchBytesPerRank() (int64, error) {
	if err := m.check(); err != nil {
		return 0, err
	}
	num := new(big.Int).SetInt64(m.Tokens)
	for _, f := range []int64{int64(m.TopK), m.Hidden, m.DTypeBytes, int64(m.Ranks - 1)} {
		num.Mul(num, big.NewInt(f))
	}
	p := big.NewInt(int64(m.Ranks))
	num.Quo(num, p.Mul(p, p))
	if !num.IsInt64() {
		return 0, fmt.Errorf("collective: moe dispatch bytes overflow int64")
	}
	return num.Int64(), nil
}

// Matrix returns the dispatch all-to-all's per-pair bytes, [P][P]: Matrix[i][j] is what rank
// i sends to rank j (the diagonal is its tokens for its own experts, a local copy). Rank i
// holds T/P tokens (the first T mod P ranks one more); its token-expert assignments are spread
// evenly over the P ranks, the remainder going one each to ranks i+1, i+2, ... (so no rank is
// favoured). With T k divisible by P^2 every off-diagonal row sums to DispatchBytesPerRank.
// Errors: a field out of range, or an entry beyond int64.
func (m MoE) Matrix() ([][]int64, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	if m.Ranks > 1<<15 {
		return nil, fieldError("moe.ranks", m.Ranks, "the per-pair matrix is built for at most 32768 ranks; use DispatchBytesPerRank")
	}
	P := int64(m.Ranks)
	per := m.Hidden * m.DTypeBytes
	if per/m.DTypeBytes != m.Hidden {
		return nil, fmt.Errorf("collective: moe token size overflows int64")
	}
	out := make([][]int64, P)
	for i := int64(0); i < P; i++ {
		tok := m.Tokens / P
		if i < m.Tokens%P {
			tok++
		}
		assign := tok * int64(m.TopK)
		if m.TopK != 0 && assign/int64(m.TopK) != tok {
			return nil, fmt.Errorf("collective: moe assignments overflow int64")
		}
		row := make([]int64, P)
		q, r := assign/P, assign%P
		for j := int64(0); j < P; j++ {
			c := q
			if (j-i-1+P)%P < r {
				c++
			}
			if c > 0 && c*per/per != c {
				return nil, fmt.Errorf("collective: moe matrix entry overflows int64")
			}
			row[j] = c * per
		}
		out[i] = row
	}
	return out, nil
}

// DispatchSpec returns the all-to-all Spec for the dispatch (Matrix set, Grouped as NCCL, default
// chunking). Errors: as Matrix.
func (m MoE) DispatchSpec() (Spec, error) {
	mat, err := m.Matrix()
	if err != nil {
		return Spec{}, err
	}
	sp := NewSpec(AllToAll, m.Ranks, 0)
	sp.Algo = Grouped
	sp.Matrix = mat
	return sp, nil
}
