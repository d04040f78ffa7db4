package flow

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// sortDone orders like a comparison sort by id, for batches small and large, ids dense and
// spread over up to 2^62.
func TestSortDone(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tmp []doneRef
	for trial := 0; trial < 2000; trial++ {
		n := rng.IntN(3000)
		spread := max([]int64{1 << 10, 1 << 24, 1 << 40, 1 << 62}[trial%4], int64(2*n))
		base := rng.Int64N(1 << 40)
		seen := map[FlowID]bool{}
		buf := make([]doneRef, 0, n)
		for len(buf) < n {
			id := FlowID(base + rng.Int64N(spread))
			if seen[id] {
				continue
			}
			seen[id] = true
			buf = append(buf, doneRef{id: id, slot: int32(len(buf))})
		}
		want := slices.Clone(buf)
		slices.SortFunc(want, func(a, b doneRef) int { return cmpID(a.id, b.id) })
		var got []doneRef
		got, tmp = sortDone(buf, tmp)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d (%d entries, spread %d): sortDone differs from a comparison sort", trial, n, spread)
		}
		if len(got) > 0 && len(tmp) > 0 && &got[0] == &tmp[0] {
			t.Fatal("sorted and scratch share memory")
		}
	}
}

// BenchmarkSortDone sorts a batch of 2,000 completions (ids spread over 2^20): 0 allocs/op
// once the scratch has grown.
func BenchmarkSortDone(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]doneRef, 2000)
	for i := range src {
		src[i] = doneRef{id: FlowID(i * 500), slot: int32(i)}
	}
	rng.Shuffle(len(src), func(i, j int) { src[i], src[j] = src[j], src[i] })
	buf := make([]doneRef, len(src))
	var tmp []doneRef
	b.ReportAllocs()
	for b.Loop() {
		buf = append(buf[:0], src...)
		var got []doneRef
		got, tmp = sortDone(buf, tmp)
		buf = got
	}
}

// BenchmarkSortDoneCmp is the comparison sort sortDone replaces, for comparison.
func BenchmarkSortDoneCmp(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]doneRef, 2000)
	for i := range src {
		src[i] = doneRef{id: FlowID(i * 500), slot: int32(i)}
	}
	rng.Shuffle(len(src), func(i, j int) { src[i], src[j] = src[j], src[i] })
	buf := make([]doneRef, len(src))
	b.ReportAllocs()
	for b.Loop() {
		buf = append(buf[:0], src...)
		slices.SortFunc(buf, func(a, b doneRef) int { return cmpID(a.id, b.id) })
	}
}
