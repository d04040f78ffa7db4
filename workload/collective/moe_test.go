package collective

import (
	"testing"
)

// TestMoEDispatchBytes: P=64, T=2^20, top-2, H=4096, fp16 sends exactly 264,241,152 B per rank
// to other ranks: 16,384 tokens x 2 experts x 8 KiB x 63/64.
func TestMoEDispatchBytes(t *testing.T) {
	m := MoE{Ranks: 64, Tokens: 1 << 20, TopK: 2, Hidden: 4096, DTypeBytes: 2}
	got, err := m.DispatchBytesPerRank()
	if err != nil || got != 264241152 {
		t.Fatalf("DispatchBytesPerRank = %d, %v; want 264241152", got, err)
	}
	mat, err := m.Matrix()
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range mat {
		var off int64
		for j, v := range row {
			if j != i {
				off += v
			}
		}
		if off != got {
			t.Fatalf("rank %d sends %d B to others, want %d", i, off, got)
		}
	}
}

// TestMoEMatrixUneven: with remainders, each rank's row still holds all its token-expert
// assignments, spread within one token of evenly.
func TestMoEMatrixUneven(t *testing.T) {
	m := MoE{Ranks: 6, Tokens: 1001, TopK: 3, Hidden: 16, DTypeBytes: 2}
	mat, err := m.Matrix()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for i, row := range mat {
		lo, hi := row[0], row[0]
		for _, v := range row {
			total += v
			lo, hi = min(lo, v), max(hi, v)
		}
		if hi-lo > 32 {
			t.Errorf("rank %d row %v spreads by more than one token", i, row)
		}
	}
	if total != 1001*3*32 {
		t.Errorf("matrix holds %d B, want %d", total, 1001*3*32)
	}
	if _, err := (MoE{Ranks: 0, TopK: 1, Hidden: 1, DTypeBytes: 1}).Matrix(); err == nil {
		t.Errorf("0 ranks accepted")
	}
	if _, err := (MoE{Ranks: 4, TopK: 0, Hidden: 1, DTypeBytes: 1}).DispatchBytesPerRank(); err == nil {
		t.Errorf("top_k 0 accepted")
	}
}

// TestMoEDispatchRuns: the dispatch all-to-all of a small MoE runs to completion and its
// busiest rank needs at least its bytes over the NIC.
func TestMoEDispatchRuns(t *testing.T) {
	m := MoE{Ranks: 8, Tokens: 1 << 14, TopK: 2, Hidden: 1024, DTypeBytes: 2}
	sp, err := m.DispatchSpec()
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, sp, refModel)
	per, _ := m.DispatchBytesPerRank()
	floor := refModel.Rate.TxTime(per)
	t.Logf("dispatch of %d B per rank: %v (NIC floor %v)", per, r.Time(), floor)
	if r.Time() < floor || r.Time() > floor*11/10+10*refModel.Latency {
		t.Errorf("dispatch took %v; want between %v and 10%% + 10a above", r.Time(), floor)
	}
}
